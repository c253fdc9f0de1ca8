#!/usr/bin/env bash
# bench/soak.sh: the daemon soaked: `profd run` scraping thousands of loopback
# targets (bench/daemon_targets.c serving the heap and goroutine profiles of a real
# Go program, bench/capture.sh's corpus) while C concurrent clients
# (bench/soak_clients.c, one process on libcurl's multi interface) query the API
# without pause for S seconds, every answer checked. Beside it, in the same run,
# the reference: the same scrape load for a shorter window with no clients.
# Prints, per query kind, count, errors and latency percentiles; the scrape
# lateness (the time from each scheduled tick to the request reaching its target,
# matched to the stored timestamps) and the gaps between consecutive scrapes;
# stored scrapes/s against the scheduled rate; profd's RSS and CPU every 30 s
# with the slope of RSS over the second half; and the aims (zero errors, flat RSS,
# no missed ticks) as yes/no. bench/README.md explains every table. With the
# defaults about 15 minutes (reference 150 s, soak 600 s, warm-ups).
#
# usage: bench/soak.sh PROFD_BUILD_DIR
#        (a Release build: PROFD_BUILD_DIR/profd; the target server and the clients
#        are compiled here with cc, the clients against libcurl and zlib)
#
# Environment:
#   SOAK_TARGETS=2000      targets; each is scraped for heap and goroutine, so
#                          2 series per target
#   SOAK_INTERVAL=10s      scrape_interval (and scrape_timeout), N[ms|s|m]
#   SOAK_CLIENTS=50        concurrent API clients during the soak
#   SOAK_SECONDS=600       length of the soak (clients querying)
#   SOAK_REF_SECONDS=S     length of the reference without clients (default a
#                          quarter of SOAK_SECONDS, at least 60 s, at most
#                          SOAK_SECONDS)
#   SOAK_THINK_MS=1000     each client waits a random 0 to 2x this between requests
#                          (0: back to back)
#   SOAK_RSS_TOL=2         flat RSS: the soak's RSS slope over its second half
#                          exceeds the reference's (over its whole window: the
#                          cost of the growing store) by at most this many MB/min
#   DAEMON_CORPUS=DIR      the captured corpus (default PROFD_BUILD_DIR/
#                          bench-corpus/goapp, captured there by bench/capture.sh
#                          when missing: about 2.5 minutes, needs go); its heap/ and
#                          goroutine/*.pb.gz are served
#   PD_BENCH_DIR=DIR       where the work directory goes (default PROFD_BUILD_DIR);
#                          the stores, about 1.1 GB with the defaults, are removed
#                          after each phase, the work directory at the end
#   SOAK_KEEP=1            keep the work directory (polls, timestamps, arrivals,
#                          logs) and the stores
#
# Every server listens on 127.0.0.1 on a port the kernel picks; everything started
# here stops when the script ends (and the target server after 1 hour regardless).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR" >&2
	exit 2
fi
build=$(realpath "$1")
shown_build=$1 # as given, for the output
repo=$(cd "$(dirname "$0")/.." && pwd)
profd=$build/profd

die() {
	echo "soak: $*" >&2
	exit 1
}

n=${SOAK_TARGETS:-2000}
iv=${SOAK_INTERVAL:-10s}
nclients=${SOAK_CLIENTS:-50}
secs=${SOAK_SECONDS:-600}
think=${SOAK_THINK_MS:-1000}
tol=${SOAK_RSS_TOL:-2}
[[ $n =~ ^[1-9][0-9]*$ ]] || die "SOAK_TARGETS: '$n' is not a positive integer"
[[ $nclients =~ ^[1-9][0-9]*$ ]] || die "SOAK_CLIENTS: '$nclients' is not a positive integer"
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "SOAK_SECONDS: '$secs' is not a positive integer"
[[ $think =~ ^[0-9]+$ ]] || die "SOAK_THINK_MS: '$think' is not a whole number of milliseconds"
[[ $tol =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SOAK_RSS_TOL: '$tol' is not a number of MB/min"
[[ $iv =~ ^[1-9][0-9]*(ms|s|m)$ ]] || die "SOAK_INTERVAL: '$iv': use N[ms|s|m]"
case $iv in
*ms) ivms=${iv%ms} ;;
*s) ivms=$((${iv%s} * 1000)) ;;
*m) ivms=$((${iv%m} * 60000)) ;;
esac
ref_secs=${SOAK_REF_SECONDS:-$((secs / 4))}
[[ $ref_secs =~ ^[0-9]+$ ]] || die "SOAK_REF_SECONDS: '$ref_secs' is not a whole number of seconds"
[ -n "${SOAK_REF_SECONDS:-}" ] || { [ "$ref_secs" -ge 60 ] || ref_secs=60; }
[ "$ref_secs" -le "$secs" ] || ref_secs=$secs
[ "$ref_secs" -ge 1 ] || die "SOAK_REF_SECONDS must be at least 1"
types=(heap goroutine)
nseries=$((n * ${#types[@]}))

[ -x "$profd" ] || die "$profd not found (make build)"
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
[ "$btype" = Release ] || echo "soak: warning: $build is a '${btype:-unknown}' build; measure a Release build" >&2
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "soak: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi
command -v curl >/dev/null || die "curl not found"

corpus=${DAEMON_CORPUS:-$build/bench-corpus/goapp}
if [ ! -d "$corpus" ]; then
	[ -z "${DAEMON_CORPUS:-}" ] || die "DAEMON_CORPUS=$corpus not found"
	command -v go >/dev/null || die "$corpus is missing and bench/capture.sh needs go (Debian: golang-go)"
	echo "soak: capturing the corpus into $corpus (bench/capture.sh, about 2.5 minutes)" >&2
	mkdir -p "$(dirname "$corpus")"
	"$repo/bench/capture.sh" "$corpus" || die "bench/capture.sh failed"
fi
for t in "${types[@]}"; do
	[ "$(find "$corpus/$t" -maxdepth 1 -name '*.pb.gz' 2>/dev/null | wc -l)" -gt 0 ] ||
		die "no $t profiles in $corpus/$t"
done

# the target server and the clients, compiled when missing or older than their source
mkdir -p "$build/bench"
targets_bin=$build/bench/daemon_targets
clients_bin=$build/bench/soak_clients
if [ ! -x "$targets_bin" ] || [ "$repo/bench/daemon_targets.c" -nt "$targets_bin" ]; then
	${CC:-cc} -O2 -Wall -o "$targets_bin" "$repo/bench/daemon_targets.c" || die "compiling bench/daemon_targets.c failed"
fi
if [ ! -x "$clients_bin" ] || [ "$repo/bench/soak_clients.c" -nt "$clients_bin" ]; then
	${CC:-cc} -O2 -Wall -o "$clients_bin" "$repo/bench/soak_clients.c" -lcurl -lz ||
		die "compiling bench/soak_clients.c failed (needs libcurl and zlib headers: scripts/deps.sh)"
fi

parent=${PD_BENCH_DIR:-$build}
work=$(mktemp -d "$parent/soak-bench.XXXXXX")
profd_pid=""
targets_pid=""
clients_pid=""
stop_pid() { # pid, seconds to wait before SIGKILL
	local p=$1 end=$((SECONDS + $2))
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null || return 0
	while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}
cleanup() {
	stop_pid "$clients_pid" 10
	stop_pid "$profd_pid" 30
	stop_pid "$targets_pid" 10
	[ -n "${SOAK_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

clk_tck=$(getconf CLK_TCK)
now() { echo "${EPOCHREALTIME/,/.}"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
cpu_ticks() { # user + system clock ticks of the processes
	local t=0 p f
	local -a a
	for p in "$@"; do
		f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		f=${f##*) }
		read -r -a a <<<"$f"
		t=$((t + a[11] + a[12]))
	done
	echo "$t"
}
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# metrics: "ok failed appended"
metrics() {
	curl -fsS --max-time 10 "$api/metrics" | awk '
		/^profd_scrapes_total\{result="success"\}/ { ok = $2 }
		/^profd_scrapes_total\{result="failure"\}/ { fail = $2 }
		/^profd_profiles_appended_total\{source="scrape"\}/ { app = $2 }
		END { printf "%d %d %d\n", ok, fail, app }'
}

# start_targets TAG: sets targets_pid, targets_file; arrivals go to $work/TAG.arr/
start_targets() {
	targets_file=$work/$1.targets
	rm -f "$targets_file"
	mkdir -p "$work/$1.arr"
	"$targets_bin" --files "$corpus/heap" --path /debug/pprof/heap \
		--also "/debug/pprof/goroutine=$corpus/goroutine" --arrivals "$work/$1.arr" \
		--targets "$n" --addr-file "$targets_file" --lifetime 3600 2>"$work/$1.targets.log" &
	targets_pid=$!
	local end=$((SECONDS + 60))
	until [ -s "$targets_file" ]; do
		kill -0 "$targets_pid" 2>/dev/null || die "daemon_targets exited: $(cat "$work/$1.targets.log")"
		[ $SECONDS -lt $end ] || die "daemon_targets did not start within 60 s"
		sleep 0.05
	done
	[ "$(wc -l <"$targets_file")" -eq "$n" ] || die "daemon_targets wrote $(wc -l <"$targets_file") addresses, not $n"
}

write_config() {
	{
		printf 'global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n' "$iv" "$iv"
		printf '  - job_name: soak\n    static_configs:\n      - targets:\n'
		sed 's/^/          - /' "$targets_file"
		printf '    profiling_config:\n      pprof_config:\n'
		printf '        %s: {enabled: false}\n' allocs block mutex profile threadcreate
		printf '        %s: {}\n' "${types[@]}"
	} >"$1"
}

# start_profd TAG: sets profd_pid, api; the store is $work/TAG.data
start_profd() {
	local log=$work/$1.profd.log port=""
	write_config "$work/$1.yml"
	: >"$log"
	"$profd" run --config.file="$work/$1.yml" --storage.tsdb.path="$work/$1.data" \
		--web.listen-address=127.0.0.1:0 --log.level=info 2>"$log" &
	profd_pid=$!
	local end=$((SECONDS + 60))
	while [ -z "$port" ]; do
		kill -0 "$profd_pid" 2>/dev/null || die "profd exited: $(tail -5 "$log")"
		[ $SECONDS -lt $end ] || die "profd did not start listening within 60 s"
		port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" | head -1)
		[ -n "$port" ] || sleep 0.05
	done
	api=http://127.0.0.1:$port
	end=$((SECONDS + 60))
	until curl -fsS --max-time 5 -o /dev/null "$api/-/ready" 2>/dev/null; do
		[ $SECONDS -lt $end ] || die "profd not ready within 60 s"
		sleep 0.1
	done
}

# run_phase TAG SECONDS CLIENTS: fresh targets, profd and store; waits until every
# series has 2 profiles (warm-up), then runs SECONDS (with CLIENTS clients, or
# none), polling every 5 s. Leaves $work/TAG.{poll,win,ts,clients,disk,log counts}.
run_phase() {
	local tag=$1 dur=$2 cl=$3
	start_targets "$tag"
	local t_start
	t_start=$(now)
	start_profd "$tag"
	local kids m ok fail app
	kids=$(pgrep -P "$targets_pid" | tr '\n' ' ')
	# warm-up: 2 profiles per series, within 4 intervals + 60 s
	local end=$((SECONDS + 4 * ivms / 1000 + 60))
	while :; do
		kill -0 "$profd_pid" 2>/dev/null || die "$tag: profd exited during the warm-up: $(tail -5 "$work/$tag.profd.log")"
		m=$(metrics) || die "$tag: GET /metrics failed"
		read -r ok fail app <<<"$m"
		[ "$app" -ge $((2 * nseries)) ] && break
		[ $SECONDS -lt $end ] || die "$tag: warm-up: $app profiles stored in $((4 * ivms / 1000 + 60)) s, not the $((2 * nseries)) of 2 per series"
		sleep 0.5
	done
	local t0 t1
	t0=$(now)
	if [ "$cl" -gt 0 ]; then
		"$clients_bin" --api "$api" --addr-file "$targets_file" --job soak --types "$(
			IFS=,
			echo "${types[*]}"
		)" \
			--clients "$cl" --seconds "$dur" --since "$t_start" --think-ms "$think" \
			--progress "$work/$tag.progress" >"$work/$tag.clients" 2>"$work/$tag.clients.err" &
		clients_pid=$!
	fi
	# polls: "elapsed_s rss_kb profd_ticks targets_ticks clients_ticks machine_ticks ok fail app requests qerrors"
	: >"$work/$tag.poll"
	local next=0 el r c tc cc mt req qerr
	while :; do
		el=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
		if awk -v e="$el" -v x="$next" 'BEGIN { exit !(e >= x) }'; then
			kill -0 "$profd_pid" 2>/dev/null || die "$tag: profd exited after ${el} s: $(tail -5 "$work/$tag.profd.log")"
			m=$(metrics) || die "$tag: GET /metrics failed after ${el} s"
			read -r ok fail app <<<"$m"
			r=$(rss_kb "$profd_pid")
			c=$(cpu_ticks "$profd_pid")
			# shellcheck disable=SC2086
			tc=$(cpu_ticks $kids)
			cc=0
			[ -z "$clients_pid" ] || cc=$(cpu_ticks "$clients_pid")
			mt=$(machine_ticks)
			req=0 qerr=0
			[ ! -s "$work/$tag.progress" ] || read -r _ req qerr <"$work/$tag.progress"
			echo "$el $r $c $tc $cc $mt $ok $fail $app $req $qerr" >>"$work/$tag.poll"
			next=$((next + 5))
			[ "$next" -le $((dur + 4)) ] || break
		fi
		sleep 0.2
	done
	t1=$(awk -v a="$t0" -v d="$dur" 'BEGIN { printf "%.3f", a + d }')
	if [ -n "$clients_pid" ]; then
		wait "$clients_pid" || die "$tag: soak_clients failed: $(cat "$work/$tag.clients.err")"
		clients_pid=""
	fi
	echo "$t_start $t0 $t1" >"$work/$tag.win"
	# every series' stored timestamps: "type instance ts,ts,..."
	curl -fsS --max-time 300 -G "$api/api/v1/query_range" --data-urlencode 'query={job="soak"}' \
		--data-urlencode "start=$(awk -v a="$t_start" 'BEGIN { printf "%.3f", a - 60 }')" \
		--data-urlencode "end=$(now)" >"$work/$tag.range.json" || die "$tag: query_range failed"
	sed 's/{"labels":/\n/g' "$work/$tag.range.json" | awk '
		match($0, /"__name__":"[^"]*"/) { name = substr($0, RSTART + 12, RLENGTH - 13)
			match($0, /"instance":"[^"]*"/); inst = substr($0, RSTART + 12, RLENGTH - 13)
			match($0, /"timestamps":\[[0-9,]*\]/); ts = substr($0, RSTART + 14, RLENGTH - 15)
			print name, inst, ts }' >"$work/$tag.ts"
	grep -c 'level=error' "$work/$tag.profd.log" >"$work/$tag.logerrors" || true
	grep -c 'level=warn' "$work/$tag.profd.log" >"$work/$tag.logwarns" || true
	stop_pid "$profd_pid" 60
	profd_pid=""
	du -sk "$work/$tag.data" | cut -f1 >"$work/$tag.disk"
	[ -n "${SOAK_KEEP:-}" ] || rm -rf "$work/$tag.data"
	stop_pid "$targets_pid" 10 # its processes write the arrivals as they stop
	targets_pid=""
	cat "$work/$tag.arr"/arrivals.* >"$work/$tag.arrivals" 2>/dev/null || : >"$work/$tag.arrivals"
}

# pcts FILE: "p50 p90 p99 max n" of the numbers in FILE (one a line)
pcts() {
	sort -g "$1" | awk '{ v[NR] = $1 } END {
		if (!NR) { print "- - - - 0"; exit }
		printf "%.1f %.1f %.1f %.1f %d\n", v[int(0.5 * (NR - 1) + 1.5)], v[int(0.9 * (NR - 1) + 1.5)],
			v[int(0.99 * (NR - 1) + 1.5)], v[NR], NR }'
}

# scrape_stats TAG: from the stored timestamps and the arrivals in the window
# [t0, t1]: writes TAG.late (lateness ms), TAG.gap (arrival gap - interval, ms),
# TAG.sgap (stored gap - interval, ms) and TAG.sum ("stored due missed behind
# unmatched series_found")
scrape_stats() {
	local tag=$1 t_start t0 t1
	read -r t_start t0 t1 <"$work/$tag.win"
	awk -v ivms="$ivms" -v t0="$t0" -v t1="$t1" -v ntypes="${#types[@]}" \
		-v late="$work/$tag.late" -v gap="$work/$tag.gap" -v sgap="$work/$tag.sgap" -v sum="$work/$tag.sum" \
		-v tnames="${types[*]}" '
		BEGIN { split(tnames, tn, " "); for (i in tn) tidx[tn[i]] = i - 1
			lo = t0 * 1000; hi = t1 * 1000 }
		FILENAME ~ /targets$/ { inst[$1] = FNR - 1; next }
		FILENAME ~ /arrivals$/ { k = $1 " " $2; ms = $3 / 1000; na[k]++; arr[k, na[k]] = ms
			if (ms >= lo && ms <= hi && na[k] > 1) print ms - arr[k, na[k] - 1] - ivms > gap
			next }
		{ # the stored timestamps of one series
			found++
			k = inst[$2] " " tidx[$1]; m = split($3, ts, ","); j = 1; last = -1
			for (i = 1; i <= m; i++) {
				t = ts[i] + 0
				if (t < lo || t > hi) continue
				stored++
				if (last >= 0) {
					g = t - last; print g - ivms > sgap
					if (g > 1.5 * ivms) missed += int(g / ivms + 0.5) - 1
				}
				last = t
				# the first request at the target at or after the tick
				while (j <= na[k] && arr[k, j] < t - 5) j++
				if (j <= na[k] && arr[k, j] < t + ivms) print arr[k, j] - t > late
				else unmatched++
			}
			# ticks due after the newest stored one, up to an interval before the end
			if (last >= 0 && last < hi - 2 * ivms) { missed += int((hi - ivms - last) / ivms); behind++ }
			if (last < 0) { empty++ }
		}
		END { printf "%d %d %d %d %d %d\n", stored, stored + missed, missed, behind, unmatched + 0, found > sum
			close(late); close(gap); close(sgap) }
	' "$work/$tag.targets" "$work/$tag.arrivals" "$work/$tag.ts"
	touch "$work/$tag.late" "$work/$tag.gap" "$work/$tag.sgap"
}

# slope TAG FROM: "slope_MB_per_min mean_MB" of RSS (least squares) over the polls
# from FROM seconds on
slope() {
	awk -v from="$2" '$1 >= from { n++; x = $1 / 60; y = $2 / 1024; sx += x; sy += y; sxx += x * x; sxy += x * y }
		END { if (n < 2) { print "0 0"; exit }
			printf "%.2f %.1f\n", (n * sxy - sx * sy) / (n * sxx - sx * sx), sy / n }' "$work/$1.poll"
}

# ---- the run ----------------------------------------------------------------------

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
sched=$(awk -v s="$nseries" -v i="$ivms" 'BEGIN { printf "%.1f", s * 1000 / i }')
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu}, ${mem:-?} RAM," \
	"$(uname -sr); libcurl $(curl-config --version 2>/dev/null | cut -d' ' -f2 || echo '?');" \
	"build: $shown_build (${btype:-unknown}); load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo "profd soak: \`profd run\` scraping $n loopback targets (bench/daemon_targets.c) for ${types[*]}"
echo "($nseries series, scrape_interval $iv: $sched scrapes/s scheduled) from ${corpus#"$PWD"/};"
echo "reference: ${ref_secs} s with no clients; soak: ${secs} s with $nclients clients (think time 0-$((2 * think)) ms)."
echo "Each phase: fresh targets, profd and store; its clock starts once every series has 2 profiles."
start=$SECONDS
run_phase ref "$ref_secs" 0
run_phase soak "$secs" "$nclients"
scrape_stats ref
scrape_stats soak

echo
echo "-- queries (soak; every answer checked; latency from request to last byte, ms)"
cat "$work/soak.clients"

echo
echo "-- scrapes in the window (stored timestamps are the scheduled ticks; lateness = the request"
echo "   reaching its target minus that tick; gap = time between consecutive requests to one"
echo "   target's profile minus the interval; missed = ticks with no stored profile)"
printf '%-5s %8s %9s %8s %7s %7s %6s | %-26s | %-26s\n' phase "stored/s" "of sched" failed missed behind "unmat" \
	"lateness ms p50/p99/max" "gap-iv ms p50/p99/max"
for tag in ref soak; do
	read -r stored _ missed behind unmatched found <"$work/$tag.sum"
	read -r _ t0 t1 <"$work/$tag.win"
	read -r l50 _ l99 lmax _ <<<"$(pcts "$work/$tag.late")"
	read -r g50 _ g99 gmax _ <<<"$(pcts "$work/$tag.gap")"
	f0=$(head -1 "$work/$tag.poll" | cut -d' ' -f8)
	f1=$(tail -1 "$work/$tag.poll" | cut -d' ' -f8)
	awk -v s="$stored" -v d="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v sch="$sched" \
		-v tag="$tag" -v f=$((f1 - f0)) -v m="$missed" -v b="$behind" -v u="$unmatched" \
		-v l="$l50/$l99/$lmax" -v g="$g50/$g99/$gmax" 'BEGIN {
		printf "%-5s %8.1f %8.1f%% %8d %7d %7d %6d | %-26s | %-26s\n", tag, s / d, 100 * s / d / sch, f, m, b, u, l, g }'
	[ "$found" -eq "$nseries" ] || echo "   $tag: query_range found $found series, not $nseries"
done
awk '{ print $1 }' "$work/soak.sgap" | sort -g | uniq -c | sort -k2 -g | head -5 |
	awk 'BEGIN { printf "   soak stored gaps minus the interval (ms: count):" } { printf " %s: %s", $2, $1 } END { print "" }'

echo
echo "-- profd every 30 s (RSS = VmRSS; CPU = profd's user + system over the 30 s, % of one core;"
echo "   q/s = soak queries per second; others = the cores used by everything but profd, targets"
echo "   and clients; soak-ref = the soak's RSS minus the reference's at the same time: the query load's)"
printf '%6s | %8s %7s %8s | %8s %7s %6s %7s %7s | %8s\n' "t s" "ref MB" "ref CPU" "ref scr/s" "soak MB" "soak CPU" \
	"q/s" "q errs" "others" "soak-ref"
awk -v tck="$clk_tck" -v iv=30 '
	FNR == 1 { ph++ }
	{ r = int($1 / 5 + 0.5) * 5; if (r % iv) next
	  k = ph " " r; rss[k] = $2; cpu[k] = $3; tc[k] = $4; cc[k] = $5; mt[k] = $6; sc[k] = $7 + $8; rq[k] = $10; qe[k] = $11
	  if (r > maxr) maxr = r }
	END {
		for (r = 0; r <= maxr; r += iv) {
			p = r - iv
			a = "1 " r; b = "2 " r; pa = "1 " p; pb = "2 " p
			printf "%6d | ", r
			if (a in rss) {
				if (pa in rss) printf "%8.1f %6.0f%% %8.0f | ", rss[a] / 1024, (cpu[a] - cpu[pa]) / tck / iv * 100, (sc[a] - sc[pa]) / iv
				else printf "%8.1f %7s %8s | ", rss[a] / 1024, "-", "-"
			} else printf "%8s %7s %8s | ", "", "", ""
			if (b in rss) {
				if (pb in rss) printf "%8.1f %6.0f%% %6.1f %7d %6.2fc", rss[b] / 1024, (cpu[b] - cpu[pb]) / tck / iv * 100,
					(rq[b] - rq[pb]) / iv, qe[b], (mt[b] - mt[pb] - (cpu[b] - cpu[pb]) - (tc[b] - tc[pb]) - (cc[b] - cc[pb])) / tck / iv
				else printf "%8.1f %7s %6s %7d %7s", rss[b] / 1024, "-", "-", qe[b], "-"
				if (a in rss) printf " | %+8.1f", (rss[b] - rss[a]) / 1024
			}
			printf "\n"
		}
	}' "$work/ref.poll" "$work/soak.poll"
read -r rslope rmean <<<"$(slope ref 0)"
read -r sslope smean <<<"$(slope soak $((secs / 2)))"
echo "   RSS slope (least squares over the 5 s polls): soak over its second half $sslope MB/min (mean $smean MB);"
echo "   reference over its whole window $rslope MB/min (mean $rmean MB): what the growing store costs"
echo "   disk: reference store $(awk -v k="$(cat "$work/ref.disk")" 'BEGIN { printf "%.0f", k / 1024 }') MB," \
	"soak store $(awk -v k="$(cat "$work/soak.disk")" 'BEGIN { printf "%.0f", k / 1024 }') MB at the end (under ${work#"$PWD"/}$([ -n "${SOAK_KEEP:-}" ] && echo ', kept' || echo ', removed'))"
echo "   profd log lines: reference $(cat "$work/ref.logerrors") level=error, $(cat "$work/ref.logwarns") level=warn;" \
	"soak $(cat "$work/soak.logerrors") level=error, $(cat "$work/soak.logwarns") level=warn"

echo
qerr=$(awk '$1 == "all" { print $3 }' "$work/soak.clients")
sfail=$(($(tail -1 "$work/soak.poll" | cut -d' ' -f8) - $(head -1 "$work/soak.poll" | cut -d' ' -f8)))
read -r _ _ smissed _ _ _ <"$work/soak.sum"
read -r _ _ rmissed _ _ _ <"$work/ref.sum"
yn() { [ "$1" = 1 ] && echo yes || echo NO; }
echo "aim: zero errors: $(yn "$([ "$qerr" -eq 0 ] && [ "$sfail" -eq 0 ] && echo 1)") ($qerr query errors, $sfail failed scrapes in the soak window)"
echo "aim: flat RSS (soak slope over its second half <= reference slope + $tol MB/min): $(yn "$(awk -v s="$sslope" -v r="$rslope" -v t="$tol" 'BEGIN { print (s <= r + t) ? 1 : 0 }')") ($sslope vs $rslope MB/min)"
echo "aim: no missed ticks: $(yn "$([ "$smissed" -eq 0 ] && echo 1)") (soak $smissed, reference $rmissed)"
echo "total $((SECONDS - start)) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
