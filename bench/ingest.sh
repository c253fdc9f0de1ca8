#!/usr/bin/env bash
# bench/ingest.sh: the push endpoints of other profilers (Pyroscope's /ingest as
# pprof and as folded stacks, its Connect push.v1 Push, OTLP profiles) against
# profd's own POST /api/v1/profiles, on the same profiles in the same run: a
# Release profd started here on a loopback port, one per workload, and
# ingest_bench (bench/ingest_bench.c) pushing every profile with a few libcurl
# connections in parallel, each case in turn. Prints profiles per second of each
# case beside the reference's, the ratio and the aim. Two workloads: the
# Prometheus corpus and profiles of the busy demo Go program captured by
# bench/capture.sh.
#
# usage: bench/ingest.sh PROFD_BUILD_DIR
#        (a Release build with ingest_bench: cmake --build DIR --target profd ingest_bench)
#
# Environment:
#   PD_CORPUS=DIR        the Prometheus corpus (default: shared/corpus/prometheus
#                        beside the repository)
#   PD_CORPUS2=DIR       the second corpus (default: PROFD_BUILD_DIR/bench-corpus/goapp,
#                        captured there by bench/capture.sh when missing; needs go);
#                        empty: the Prometheus corpus alone
#   INGEST_CONNS=N       connections in parallel (default 4)
#   INGEST_PASSES=N      timed passes per case (default 5), after one warm-up pass
#   INGEST_PER_TYPE=N    profiles per type of each corpus (default 0: all)
#   INGEST_CASES=LIST    cases beside the reference (default pprof,folded,connect,otlp)
#   PD_BENCH_DIR=DIR     where the stores go (default: PROFD_BUILD_DIR)
set -euo pipefail

[ $# -eq 1 ] || {
	echo "usage: $0 PROFD_BUILD_DIR" >&2
	exit 2
}
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
profd=$build/profd
bench=$build/bench/ingest_bench
die() {
	echo "bench: $*" >&2
	exit 1
}
[ -x "$profd" ] || die "$profd not found: build first (cmake --build $1 --target profd ingest_bench)"
[ -x "$bench" ] || die "$bench not found: cmake --build $1 --target ingest_bench"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
[ "$type" = Release ] || echo "bench: warning: $build is a '${type:-unknown}' build; measure a Release build" >&2
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi

corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}
[ -d "$corpus" ] || die "corpus $corpus not found (set PD_CORPUS to the folder of per-type profile folders)"
if [ -z "${PD_CORPUS2+set}" ]; then
	corpus2=$build/bench-corpus/goapp
	if [ ! -d "$corpus2" ]; then
		if command -v go >/dev/null; then
			echo "bench: capturing the second corpus into $corpus2 (bench/capture.sh, about 2.5 minutes)" >&2
			mkdir -p "$(dirname "$corpus2")"
			"$repo/bench/capture.sh" "$corpus2" || die "bench/capture.sh failed"
		else
			echo "bench: go not found: the Prometheus corpus alone (bench/capture.sh needs go)" >&2
			corpus2=
		fi
	fi
else
	corpus2=$PD_CORPUS2
	[ -z "$corpus2" ] || [ -d "$corpus2" ] || die "PD_CORPUS2=$corpus2 not found"
fi

work=$(mktemp -d "${PD_BENCH_DIR:-$build}/ingest-bench.XXXXXX")
pid=
stop() {
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}
cleanup() {
	stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
printf 'global:\n  scrape_interval: 15s\nscrape_configs: []\n' >"$work/profd.yml"

# start NAME: a fresh profd with its own store; sets $api
start() {
	local log=$work/$1.log port= deadline=$((SECONDS + 60))
	: >"$log"
	"$profd" run --config.file="$work/profd.yml" --storage.tsdb.path="$work/$1" \
		--web.listen-address=127.0.0.1:0 --log.level=info 2>"$log" &
	pid=$!
	until port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" | head -1) && [ -n "$port" ]; do
		kill -0 "$pid" 2>/dev/null || die "profd exited: $(tail -5 "$log")"
		[ $SECONDS -lt $deadline ] || die "profd did not start: $(tail -5 "$log")"
		sleep 0.1
	done
	api=http://127.0.0.1:$port
	until curl -fsS -o /dev/null "$api/-/ready" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || die "profd not ready within 60 s"
		sleep 0.1
	done
}

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu};" \
	"libcurl $(curl-config --version 2>/dev/null | cut -d' ' -f2 || echo '?'); build: $build (${type:-unknown});" \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "profiles pushed per second through each endpoint, beside POST /api/v1/profiles on the same"
echo "profiles in the same run (ratio: the median over the passes of case / reference in the same pass; bench/README.md, \"Pushes from other profilers\")"
# the profd log's warnings (the store's refusals among them) are shown on failure
log_lines=$work/log.lines
: >"$log_lines"
n=0
for c in "$corpus" ${corpus2:+"$corpus2"}; do
	n=$((n + 1))
	name=$(basename "$c")
	start "w$n"
	echo
	"$bench" --url "$api" --corpus "$c" --name "$name" --conns "${INGEST_CONNS:-4}" \
		--passes "${INGEST_PASSES:-5}" --per-type "${INGEST_PER_TYPE:-0}" \
		--cases "${INGEST_CASES:-pprof,folded,connect,otlp}" || die "ingest_bench failed on $c"
	if grep -q 'level=\(warn\|error\)' "$work/w$n.log"; then
		echo "profd's warnings ($(grep -c 'level=\(warn\|error\)' "$work/w$n.log"), the first 3):"
		grep 'level=\(warn\|error\)' "$work/w$n.log" | head -3 | cut -c1-300
	fi
	stop
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
