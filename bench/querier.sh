#!/usr/bin/env bash
# bench/querier.sh: Pyroscope's query API against profd's own merge API and
# `go tool pprof`, on the same profiles: N heap and N CPU profiles (default
# 1,000 each) of one series each, pushed into a fresh Release profd; then, per
# type, SelectMergeStacktraces (protobuf, as Grafana calls it; a flame graph of
# every profile) beside /api/v1/query?mode=merge with report=flamegraph and
# report=proto over the same range, and `go tool pprof -proto` merging the same
# files. Times are wall-clock (curl's time_total; the median of BENCH_RUNS,
# default 5, after a warm-up) and profd's CPU time a call (/proc/PID/stat, over
# as many calls as make 100 clock ticks); the ratios are SelectMergeStacktraces against each
# reference, with the aims: within 1.2x of the merge API, 10x faster than go
# tool pprof. Before timing, the flame graph's total is checked against the
# merge API's pprof (a warning when they differ). Two workloads: the demo program
# (examples/demo-go, a busy Go program) and Debian's Prometheus scraping itself
# under a stream of queries, each captured once with bench/capture.sh into
# BUILD/bench-corpus/ (N seconds each: about 17 minutes for 1,000).
#
# usage: bench/querier.sh PROFD_BUILD_DIR
#
# Environment:
#   BENCH_N=N        profiles per type (default 1000)
#   BENCH_RUNS=R     timed runs of each call (default 5)
#   PD_QCORPORA="A B"  corpus folders (<type>/<n>.pb.gz) instead of the two captured
#   GO=go            the go command whose `go tool pprof` is the reference
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR" >&2
	exit 2
fi
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
profd=$build/profd
n=${BENCH_N:-1000}
runs=${BENCH_RUNS:-5}
go=${GO:-go}

die() {
	echo "bench: $*" >&2
	exit 1
}
[ -x "$profd" ] || die "$profd not found: build the profd target"
command -v "$go" >/dev/null || die "'$go' not found: the reference is go tool pprof (Debian golang-go)"
command -v python3 >/dev/null || die "python3 is needed to write the protobuf request"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
[ "$type" = Release ] || echo "bench: warning: $build is a '${type:-unknown}' build; measure a Release build" >&2

tmp=$(mktemp -d "$build/querier-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Prometheus scraping itself every second, its own API queried in a loop: a
# second busy Go program, captured like the demo
capture_prometheus() { # capture_prometheus DIR
	command -v prometheus >/dev/null || die "prometheus not found (Debian package prometheus)"
	local d=$tmp/prom port
	mkdir -p "$d"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: self\n    static_configs:\n      - targets: ["127.0.0.1:%s"]\n' \
		"$port" >"$d/prometheus.yml"
	prometheus --config.file="$d/prometheus.yml" --storage.tsdb.path="$d/data" \
		--web.listen-address="127.0.0.1:$port" >"$d/log" 2>&1 &
	pids+=($!)
	local deadline=$((SECONDS + 30))
	until curl -fsS -o /dev/null "http://127.0.0.1:$port/-/ready" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || die "prometheus did not become ready: $(tail -5 "$d/log")"
		sleep 0.2
	done
	(
		while :; do
			curl -fsS -o /dev/null "http://127.0.0.1:$port/api/v1/query_range" \
				--data-urlencode 'query=sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[10s]))' \
				--data-urlencode "start=$(($(date +%s) - 300))" --data-urlencode "end=$(date +%s)" \
				--data-urlencode step=1 2>/dev/null || true
		done
	) &
	pids+=($!)
	CAPTURE_N=$n CAPTURE_ADDR=127.0.0.1:$port "$repo/bench/capture.sh" "$1" || die "capturing Prometheus failed"
}

corpora=()
if [ -n "${PD_QCORPORA:-}" ]; then
	read -r -a corpora <<<"$PD_QCORPORA"
else
	mkdir -p "$build/bench-corpus"
	c1=$build/bench-corpus/goapp$n
	c2=$build/bench-corpus/prometheus$n
	[ -d "$c1" ] || CAPTURE_N=$n "$repo/bench/capture.sh" "$c1" || die "capturing the demo failed"
	[ -d "$c2" ] || capture_prometheus "$c2"
	corpora=("$c1" "$c2")
fi

log=$tmp/profd.log
"$profd" run --config.file=/dev/null --storage.tsdb.path="$tmp/data" --web.listen-address=127.0.0.1:0 \
	--web.enable-lifecycle 2>"$log" &
profd_pid=$!
pids+=($!)
api=
deadline=$((SECONDS + 60))
while [ -z "$api" ]; do
	[ $SECONDS -lt $deadline ] || die "profd did not start: $(tail -5 "$log")"
	p=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" | head -1 || true)
	[ -n "$p" ] && curl -fsS -o /dev/null "http://127.0.0.1:$p/-/ready" 2>/dev/null && api=http://127.0.0.1:$p
	sleep 0.2
done

tck=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$profd_pid/stat"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
timed() { # timed CURL-ARGS...: "wall cpu": the median time_total and profd's mean CPU time a call, in ms
	curl -fsS -o /dev/null "$@" || die "curl $* failed"
	local c0 c1 wall
	c0=$(cpu_ticks)
	wall=$(for ((r = 0; r < runs; r++)); do
		curl -fsS -o /dev/null -w '%{time_total}\n' "$@"
	done | median | awk '{ printf "%.1f", $1 * 1000 }')
	c1=$(cpu_ticks)
	# more calls until the CPU time is at least 100 clock ticks (or 300 calls)
	local k=$runs
	while [ $((c1 - c0)) -lt 100 ] && [ "$k" -lt 300 ]; do
		curl -fsS -o /dev/null "$@"
		k=$((k + 1))
		c1=$(cpu_ticks)
	done
	echo "$wall $(awk -v a="$c0" -v b="$c1" -v t="$tck" -v r="$k" 'BEGIN { printf "%.2f", (b - a) * 1000 / t / r }')"
}

fmt='%-26s %-4s %10s %10s %7s %10s %7s %10s %7s\n'
printf "$fmt" case "" "query API" "merge API" ratio "merge API" ratio "go tool" ratio
printf "$fmt" "" "" "" "proto" "" "flamegraph" "" "pprof" ""
w=0
for c in "${corpora[@]}"; do
	w=$((w + 1))
	for t in heap cpu; do
		name=$([ "$t" = cpu ] && echo profile || echo heap)
		id=$([ "$t" = cpu ] && echo process_cpu:cpu:nanoseconds:cpu:nanoseconds ||
			echo memory:inuse_space:bytes:space:bytes)
		svc=w$w$t
		files=()
		for ((i = 1; i <= n; i++)); do files+=("$c/$t/$i.pb.gz"); done
		[ -f "${files[$((n - 1))]}" ] || die "$c/$t has fewer than $n profiles"
		# one curl pushes them all, a second apart, ending a minute ago
		t0=$(($(date +%s) - n - 60))
		: >"$tmp/push.cfg"
		for ((i = 0; i < n; i++)); do
			[ "$i" -gt 0 ] && echo next >>"$tmp/push.cfg"
			printf 'url = "%s/api/v1/profiles?labels=%%7B__name__%%3D%%22%s%%22%%2Cservice_name%%3D%%22%s%%22%%7D&time=%d"\ndata-binary = "@%s"\noutput = "/dev/null"\nfail\nsilent\nshow-error\n' \
				"$api" "$name" "$svc" $((t0 + i)) "${files[$i]}" >>"$tmp/push.cfg"
		done
		curl -K "$tmp/push.cfg" || die "pushing $c/$t failed"
		start=$(((t0 - 1) * 1000))
		end=$(((t0 + n) * 1000))
		python3 - "$id" "{service_name=\"$svc\"}" "$start" "$end" >"$tmp/req.pb" <<'EOF'
import sys
def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7f) | 0x80]); v >>= 7
    return out + bytes([v])
def field(k, wt, payload):
    return varint(k << 3 | wt) + payload
id_, sel, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
msg = field(1, 2, varint(len(id_)) + id_.encode()) + field(2, 2, varint(len(sel)) + sel.encode())
msg += field(3, 0, varint(start)) + field(4, 0, varint(end))
sys.stdout.buffer.write(msg)
EOF
		q=(-H 'Content-Type: application/proto' --data-binary "@$tmp/req.pb" "$api/querier.v1.QuerierService/SelectMergeStacktraces")
		m=(-G "$api/api/v1/query" --data-urlencode "query=$name{service_name=\"$svc\"}" --data-urlencode mode=merge
			--data-urlencode "start=$((start / 1000))" --data-urlencode "end=$((end / 1000))" --data-urlencode "max_profiles=$n")
		# the same merge: the flame graph's total is the pprof merge's
		curl -fsS -o "$tmp/fg.json" -H 'Content-Type: application/json' \
			--data "{\"profileTypeID\":\"$id\",\"labelSelector\":\"{service_name=\\\"$svc\\\"}\",\"start\":\"$start\",\"end\":\"$end\"}" \
			"$api/querier.v1.QuerierService/SelectMergeStacktraces" || die "SelectMergeStacktraces failed"
		curl -fsS -o "$tmp/m.pb" "${m[@]}" --data-urlencode report=proto || die "the merge API failed"
		st=$([ "$t" = cpu ] && echo cpu || echo inuse_space)
		got=$(jq -r '.flamegraph.total // "0"' "$tmp/fg.json")
		unit=$([ "$t" = cpu ] && echo ns || echo B)
		want=$("$go" tool pprof -top -nodecount=1 -sample_index="$st" -unit="$unit" "$tmp/m.pb" 2>/dev/null |
			sed -n "s/.* of \([0-9]*\)$unit total.*/\1/p" | head -1)
		[ "$got" = "$want" ] || echo "bench: warning: $t of $c: the flame graph's total $got is not the merge's $want" >&2
		read -r tq cq < <(timed "${q[@]}")
		read -r tm cm < <(timed "${m[@]}" --data-urlencode report=proto)
		read -r tf cf < <(timed "${m[@]}" --data-urlencode report=flamegraph)
		# go tool pprof merging the same files (one timed run after a warm-up: it is slow)
		"$go" tool pprof -proto "${files[@]}" >"$tmp/go.pb" 2>/dev/null || die "go tool pprof -proto failed"
		TIMEFORMAT='%R %U %S'
		read -r gr gu gs < <({ time "$go" tool pprof -proto "${files[@]}" >"$tmp/go.pb" 2>/dev/null; } 2>&1)
		tg=$(awk -v a="$gr" 'BEGIN { printf "%.1f", a * 1000 }')
		cg=$(awk -v a="$gu" -v b="$gs" 'BEGIN { printf "%.1f", (a + b) * 1000 }')
		ratio() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { printf f, a / b }'; }
		label="$t x$n $(basename "$c")"
		printf "$fmt" "$label" wall "$tq" "$tm" "$(ratio "$tq" "$tm" %.2fx)" "$tf" "$(ratio "$tq" "$tf" %.2fx)" \
			"$tg" "$(ratio "$tg" "$tq" %.1fx)"
		printf "$fmt" "" cpu "$cq" "$cm" "$(ratio "$cq" "$cm" %.2fx)" "$cf" "$(ratio "$cq" "$cf" %.2fx)" \
			"$cg" "$(ratio "$cg" "$cq" %.1fx)"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$tq" "$tm" "$tf" "$tg" "$cq" "$cm" "$cf" "$cg" >>"$tmp/figures"
	done
done
echo
echo "ms: wall-clock (median of $runs calls) and profd's CPU time (mean of the same calls; go tool"
echo "pprof's user + system time); ratios: query API / merge API (the aim: at most 1.2x) and"
echo "go tool pprof / query API (the aim: at least 10x); the aims are judged on CPU time, which"
echo "other work on the machine disturbs less than wall-clock time"
awk -F '\t' '{ a1 = ($6 <= 1.2 * $7 && $6 <= 1.2 * $8) ? "yes" : "no"; a2 = ($9 >= 10 * $6) ? "yes" : "no";
	printf "aim %-26s (cpu) within 1.2x of the merge API, proto and flamegraph: %s; 10x faster than go tool pprof: %s\n", $1, a1, a2 }' "$tmp/figures"
