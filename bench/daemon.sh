#!/usr/bin/env bash
# bench/daemon.sh: the whole daemon under load: `profd run` scraping N loopback
# targets that serve the heap profiles of a real Go program (the demo program's
# capture of bench/capture.sh, each target cycling through its 120 heap profiles),
# run once with value encoding 2 and once with encoding 1 (or a reference build of
# profd, DAEMON_REF) on the same input.
# Prints, side by side, profd's RSS (VmRSS) as scrapes accumulate, per series;
# the scrapes per second sustained over two windows after warm-up against the
# scheduled rate; profd's CPU per scrape; and what the RSS is made of (baselines
# without a store, /proc's anonymous and file memory, profd's own heap profile).
# bench/README.md explains every table. 5 to 10 minutes with the defaults, plus
# about 2.5 minutes the first time for the capture.
#
# usage: bench/daemon.sh PROFD_BUILD_DIR
#        (`make build` builds build/release: PROFD_BUILD_DIR/profd; the target
#        server bench/daemon_targets.c is compiled here with cc)
#
# Environment (each of the first three is a list: one case per word):
#   DAEMON_SERIES="10000 1000"   targets (= heap series) per case
#   DAEMON_SCRAPES="17 121"      scrapes per series each case runs to
#   DAEMON_INTERVAL="2s 1s"      scrape_interval per case (and scrape_timeout)
#   DAEMON_AIM_MB="256 128"      RSS aim per case after its last scrape
#   DAEMON_AIM_RATE=5000         scrapes/s aim of the first case
#   DAEMON_BASELINES=1           0 skips the runs without a store
#   DAEMON_CORPUS=DIR            the captured corpus (default: PROFD_BUILD_DIR/
#                                bench-corpus/goapp, captured there by
#                                bench/capture.sh when missing; needs go); its
#                                heap/*.pb.gz are served. DAEMON_CORPUS=busy:
#                                PROFD_BUILD_DIR/bench-corpus/busy, the loaded
#                                Prometheus of bench/capture_busy.sh (captured
#                                when missing; needs prometheus)
#   DAEMON_TYPE=heap             the profile type served and stored: heap, allocs,
#                                goroutine, mutex, block, threadcreate or profile
#                                (CPU; the corpus's cpu/ folder, served at once;
#                                intervals of 2s or more)
#   DAEMON_REF=FILE              a reference profd binary (another build), run
#                                with encoding 2 in place of encoding 1: the
#                                tables' second column ("ref") is that build
#   PD_BENCH_DIR=DIR             where the stores go (default: PROFD_BUILD_DIR);
#                                about 1 GB at most with the defaults
#   DAEMON_KEEP=1                keep the work directory (polls, timestamps, logs,
#                                profd's heap profiles; not the stores)
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR" >&2
	exit 2
fi
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
profd=$build/profd

die() {
	echo "bench: $*" >&2
	exit 1
}

read -r -a series_list <<<"${DAEMON_SERIES:-10000 1000}"
read -r -a scrapes_list <<<"${DAEMON_SCRAPES:-17 121}"
read -r -a interval_list <<<"${DAEMON_INTERVAL:-2s 1s}"
read -r -a aim_mb_list <<<"${DAEMON_AIM_MB:-256 128}"
aim_rate=${DAEMON_AIM_RATE:-5000}
baselines=${DAEMON_BASELINES:-1}
ncases=${#series_list[@]}
if [ "$ncases" -lt 1 ] || [ ${#scrapes_list[@]} -ne "$ncases" ] || [ ${#interval_list[@]} -ne "$ncases" ]; then
	die "DAEMON_SERIES, DAEMON_SCRAPES and DAEMON_INTERVAL must have one word per case"
fi

# duration_ms 2s|500ms|1m
duration_ms() {
	case $1 in
	*ms) echo "${1%ms}" ;;
	*s) echo $((${1%s} * 1000)) ;;
	*m) echo $((${1%m} * 60000)) ;;
	*) die "interval '$1': use N[ms|s|m]" ;;
	esac
}
for i in "${!series_list[@]}"; do
	[[ ${series_list[i]} =~ ^[1-9][0-9]*$ ]] || die "DAEMON_SERIES: '${series_list[i]}' is not a positive integer"
	[[ ${scrapes_list[i]} =~ ^[1-9][0-9]*$ ]] || die "DAEMON_SCRAPES: '${scrapes_list[i]}' is not a positive integer"
	[[ ${interval_list[i]} =~ ^[1-9][0-9]*(ms|s|m)$ ]] || die "DAEMON_INTERVAL: '${interval_list[i]}': use N[ms|s|m]"
done

[ -x "$profd" ] || die "$profd not found (make build)"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ "$type" != Release ]; then
	echo "bench: warning: $build is a '${type:-unknown}' build; measure a Release build" >&2
fi
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi
command -v curl >/dev/null || die "curl not found"

corpus=${DAEMON_CORPUS:-$build/bench-corpus/goapp}
if [ "$corpus" = busy ]; then
	corpus=$build/bench-corpus/busy
	if [ ! -d "$corpus" ]; then
		echo "bench: capturing the busy corpus into $corpus (bench/capture_busy.sh, about 3 minutes)" >&2
		mkdir -p "$(dirname "$corpus")"
		"$repo/bench/capture_busy.sh" "$corpus" || die "bench/capture_busy.sh failed"
	fi
fi
if [ ! -d "$corpus" ]; then
	[ -z "${DAEMON_CORPUS:-}" ] || die "DAEMON_CORPUS=$corpus not found"
	command -v go >/dev/null || die "$corpus is missing and bench/capture.sh needs go (Debian: golang-go)"
	echo "bench: capturing the corpus into $corpus (bench/capture.sh, about 2.5 minutes)" >&2
	mkdir -p "$(dirname "$corpus")"
	"$repo/bench/capture.sh" "$corpus" || die "bench/capture.sh failed"
fi
ptype=${DAEMON_TYPE:-heap}
case $ptype in
heap | allocs | goroutine | mutex | block | threadcreate) pdir=$ptype ;;
profile) pdir=cpu ;;
*) die "DAEMON_TYPE '$ptype': use heap, allocs, goroutine, mutex, block, threadcreate or profile" ;;
esac
if [ "$ptype" = profile ]; then
	# profd records a CPU profile for scrape_timeout - 1 s (the targets answer at once)
	for iv in "${interval_list[@]}"; do
		[ "$(duration_ms "$iv")" -ge 2000 ] || die "DAEMON_TYPE=profile needs DAEMON_INTERVAL of 2s or more, not $iv"
	done
fi
nheap=$(find "$corpus/$pdir" -maxdepth 1 -name '*.pb.gz' 2>/dev/null | wc -l)
[ "$nheap" -gt 0 ] || die "no $ptype profiles in $corpus/$pdir"

# the target server, compiled when missing or older than its source
targets_bin=$build/bench/daemon_targets
if [ ! -x "$targets_bin" ] || [ "$repo/bench/daemon_targets.c" -nt "$targets_bin" ]; then
	mkdir -p "$build/bench"
	${CC:-cc} -O2 -Wall -o "$targets_bin" "$repo/bench/daemon_targets.c" || die "compiling bench/daemon_targets.c failed"
fi

parent=${PD_BENCH_DIR:-$build}
work=$(mktemp -d "$parent/daemon-bench.XXXXXX")
profd_pid=""
targets_pid=""
stop_pid() { # pid, seconds to wait before SIGKILL
	local p=$1 end=$((SECONDS + $2))
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null || return 0
	while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}
cleanup() {
	stop_pid "$profd_pid" 30
	stop_pid "$targets_pid" 10
	[ -n "${DAEMON_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

clk_tck=$(getconf CLK_TCK)

# ---- helpers ------------------------------------------------------------------------

now() { echo "${EPOCHREALTIME/,/.}"; }

# cpu_ticks PID...: user + system clock ticks of the processes
cpu_ticks() {
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

# machine_ticks: busy clock ticks of all CPUs (user, nice, system, irq, softirq, steal)
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# metrics: "ok failed appended head_samples duration_sum duration_count active_targets"
# (a minute at most: a run's longest answer is a figure of its own, see run_store)
metrics() {
	curl -fsS --max-time 60 "$api/metrics" | awk '
		/^profd_scrapes_total\{result="success"\}/ { ok = $2 }
		/^profd_scrapes_total\{result="failure"\}/ { fail = $2 }
		/^profd_profiles_appended_total\{source="scrape"\}/ { app = $2 }
		/^profd_tsdb_head_samples / { hs = $2 }
		/^profd_scrape_duration_seconds_sum / { ds = $2 }
		/^profd_scrape_duration_seconds_count / { dc = $2 }
		/^profd_scrape_targets\{state="active"\}/ { act = $2 }
		END { printf "%d %d %d %d %s %d %d\n", ok, fail, app, hs, ds + 0, dc, act }'
}

# start_targets N PATH: the target server; sets targets_pid, targets_file
start_targets() {
	targets_file=$work/targets.$1
	rm -f "$targets_file"
	"$targets_bin" --files "$corpus/$pdir" --targets "$1" --addr-file "$targets_file" \
		--path "$2" --lifetime 1800 2>"$work/targets.log" &
	targets_pid=$!
	local end=$((SECONDS + 300)) # binding 50,000 listeners takes about 30 s
	until [ -s "$targets_file" ]; do
		kill -0 "$targets_pid" 2>/dev/null || die "daemon_targets exited: $(cat "$work/targets.log")"
		[ $SECONDS -lt $end ] || die "daemon_targets did not start within 300 s"
		sleep 0.05
	done
	[ "$(wc -l <"$targets_file")" -eq "$1" ] || die "daemon_targets wrote $(wc -l <"$targets_file") addresses, not $1"
}

# write_config FILE INTERVAL MODE: one job over the targets of $targets_file;
# MODE store: heap only; fail: heap from a path the targets answer 404 (loops and
# connections, nothing stored); idle: every type off (targets discovered, no loops)
write_config() {
	local heap
	case $3 in
	store) heap='{}' ;;
	fail) heap='{path: /no-such-profile}' ;;
	idle) heap='{enabled: false}' ;;
	esac
	{
		printf 'global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n' "$2" "$2"
		printf '  - job_name: goapp\n    static_configs:\n      - targets:\n'
		sed 's/^/          - /' "$targets_file"
		printf '    profiling_config:\n      pprof_config:\n'
		local t
		for t in allocs block goroutine heap mutex profile threadcreate; do
			[ "$t" = "$ptype" ] || printf '        %s: {enabled: false}\n' "$t"
		done
		printf '        %s: %s\n' "$ptype" "$heap"
	} >"$1"
}

# start_profd CONFIG ENCODING: sets profd_pid, api
# the second run of each case: encoding 1 of this build, or the reference build
ref=${DAEMON_REF:-}
if [ -n "$ref" ]; then
	[ -x "$ref" ] || die "DAEMON_REF=$ref is not an executable"
	ref=$(realpath "$ref")
fi
# name_of ENC: what the runs of encoding ENC (2, or 1 for the second run) are called
name_of() {
	if [ "$1" = 2 ]; then
		echo "encoding 2"
	elif [ -n "$ref" ]; then
		echo "reference"
	else
		echo "encoding 1"
	fi
}

start_profd() {
	local data=$work/data log=$work/profd.log port="" bin=$profd enc=$2
	if [ "$enc" = 1 ] && [ -n "$ref" ]; then
		bin=$ref
		enc=2
	fi
	rm -rf "$data"
	: >"$log"
	"$bin" run --config.file="$1" --storage.tsdb.path="$data" --storage.tsdb.value-encoding="$enc" \
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

stop_profd() {
	stop_pid "$profd_pid" 60
	profd_pid=""
	rm -rf "$work/data"
}

# memory_detail: "RssAnon RssFile Threads" (kB, kB, count) of profd now
memory_detail() {
	awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } /^Threads:/ { t = $2 }
		END { print a, f, t }' "/proc/$profd_pid/status"
}

# rows_of S: the scrape counts per series at which a table row is printed
rows_of() {
	local s=$1 k
	if [ "$s" -le 20 ]; then
		seq 1 "$s"
		return
	fi
	for k in 1 2 5 $(seq 10 10 $((s - 2))) $((s - 1)) "$s"; do
		[ "$k" -le "$s" ] && echo "$k"
	done | sort -n -u
}

# ---- one run ----------------------------------------------------------------------

# run_store TAG N S INTERVAL ENCODING: scrapes until every series has S profiles
# (profiles appended >= S*N); writes $work/TAG.rows ("k scrapes/series rss_kb") and
# $work/TAG.poll ("t ok fail app rss_kb cpu_ticks targets_cpu_ticks dsum dcount")
# and $work/TAG.detail ("rss_kb anon_kb file_kb threads head_samples scrapes/series"
# at the end)
run_store() {
	local tag=$1 n=$2 s=$3 iv=$4 enc=$5
	local ivms
	ivms=$(duration_ms "$iv")
	start_targets "$n" "/debug/pprof/$ptype"
	write_config "$work/profd.yml" "$iv" store
	start_profd "$work/profd.yml" "$enc"
	local kids
	kids=$(pgrep -P "$targets_pid" | tr '\n' ' ')
	local -a rows
	mapfile -t rows < <(rows_of "$s")
	# deadline: 1.5 times the scheduled time, plus 20 s
	local ri=0 goal=$((s * n)) end=$((SECONDS + 3 * s * ivms / 2000 + 20))
	rm -f "$work/$tag.note"
	: >"$work/$tag.rows"
	: >"$work/$tag.poll"
	local m ok fail app hs ds dc r c tc t mt
	echo 0 >"$work/$tag.stall"
	while :; do
		kill -0 "$profd_pid" 2>/dev/null || die "profd exited during the run: $(tail -5 "$work/profd.log")"
		t=$(now)
		m=$(metrics) || die "GET /metrics failed (no answer within 60 s)"
		# the longest answer: how long the daemon held its monitoring back
		awk -v a="$t" -v b="$(now)" -v f="$work/$tag.stall" 'BEGIN { getline m < f; close(f)
			if (b - a > m) print b - a > f }'
		read -r ok fail app hs ds dc _ <<<"$m"
		r=$(rss_kb "$profd_pid")
		# shellcheck disable=SC2086
		c=$(cpu_ticks "$profd_pid")
		# shellcheck disable=SC2086
		tc=$(cpu_ticks $kids)
		mt=$(machine_ticks)
		echo "$t $ok $fail $app $r $c $tc $ds $dc $mt" >>"$work/$tag.poll"
		while [ $ri -lt ${#rows[@]} ] && [ "$app" -ge $((rows[ri] * n)) ]; do
			echo "${rows[ri]} $(awk -v a="$app" -v n="$n" 'BEGIN { printf "%.2f", a / n }') $r" >>"$work/$tag.rows"
			ri=$((ri + 1))
		done
		[ "$app" -ge "$goal" ] && break
		if [ $SECONDS -ge $end ]; then
			awk -v a="$app" -v n="$n" -v f="$fail" 'BEGIN {
				printf "deadline reached at %.2f scrapes per series (%d failed scrapes)\n", a / n, f }' >"$work/$tag.note"
			break
		fi
		sleep 0.2
	done
	echo "$(rss_kb "$profd_pid") $(memory_detail) $hs $(awk -v a="$app" -v n="$n" 'BEGIN { printf "%.2f", a / n }')" \
		>"$work/$tag.detail"
	# every series' stored timestamps (query_range reads no profile)
	local first
	first=$(head -1 "$work/$tag.poll" | cut -d' ' -f1)
	now >"$work/$tag.tq"
	curl -fsS --max-time 120 -G "$api/api/v1/query_range" --data-urlencode "query=$ptype{job=\"goapp\"}" \
		--data-urlencode "start=$(awk -v f="$first" 'BEGIN { printf "%.3f", f - 60 }')" \
		--data-urlencode "end=$(awk -v f="$(cat "$work/$tag.tq")" 'BEGIN { printf "%.3f", f + 1 }')" |
		grep -o '"timestamps":\[[0-9,]*\]' | sed 's/.*\[//; s/\]//' >"$work/$tag.ts" ||
		die "$tag: query_range failed"
	[ "$(wc -l <"$work/$tag.ts")" -eq "$n" ] || echo "bench: warning: $tag: query_range gave $(wc -l <"$work/$tag.ts") series, not $n" >&2
	# profd's own heap profile (sampled allocations still in use), top functions
	if curl -fsS --max-time 30 -o "$work/$tag.heap.pb.gz" "$api/debug/pprof/heap" 2>/dev/null; then
		"$profd" pprof top --sample-index=inuse_space --nodecount=12 "$work/$tag.heap.pb.gz" \
			>"$work/$tag.heaptop" 2>&1 || true
	fi
	stop_profd
	stop_pid "$targets_pid" 10
	targets_pid=""
}

# run_baseline TAG N INTERVAL MODE ROUNDS: RSS of profd with the targets and no
# profile stored: MODE fail (the scrapes run and get 404) until ROUNDS failures per
# target (or a deadline), or idle (no loops) once RSS is steady. Writes "rss_kb
# anon_kb file_kb threads scrapes/target scrapes/s cpu_ms/scrape" to $work/TAG.base
run_baseline() {
	local tag=$1 n=$2 iv=$3 mode=$4 rounds=$5
	local ivms
	ivms=$(duration_ms "$iv")
	start_targets "$n" "/debug/pprof/$ptype"
	write_config "$work/profd.yml" "$iv" "$mode"
	start_profd "$work/profd.yml" 2
	local end=$((SECONDS + 2 * (rounds + 1) * ivms / 1000 + 20)) m ok fail app hs ds dc prev=0 r
	local t0 c0 f0=-1
	t0=$(now)
	c0=$(cpu_ticks "$profd_pid")
	while :; do
		kill -0 "$profd_pid" 2>/dev/null || die "profd exited: $(tail -5 "$work/profd.log")"
		m=$(metrics) || die "GET /metrics failed"
		read -r ok fail app hs ds dc _ <<<"$m"
		r=$(rss_kb "$profd_pid")
		[ "$f0" -ge 0 ] || f0=$fail
		if [ "$mode" = fail ]; then
			[ "$ok" -eq 0 ] || die "$tag: $ok scrapes succeeded, none should"
			[ "$fail" -ge $((rounds * n)) ] && break
		else
			# steady: within 1% of the reading 0.5 s before
			[ "$prev" -gt 0 ] && [ $((r * 100)) -le $((prev * 101)) ] && [ $((r * 101)) -ge $((prev * 100)) ] && break
			prev=$r
		fi
		[ $SECONDS -lt $end ] || break
		sleep 0.5
	done
	echo "$r $(memory_detail) $(awk -v f="$fail" -v f0="$f0" -v n="$n" -v t0="$t0" -v t1="$(now)" -v c0="$c0" \
		-v c1="$(cpu_ticks "$profd_pid")" -v tck="$clk_tck" 'BEGIN {
		printf "%.2f %.0f %.3f", f / n, (f - f0) / (t1 - t0), (f > f0 ? (c1 - c0) / tck * 1000 / (f - f0) : 0) }')" \
		>"$work/$tag.base"
	if [ "$mode" = fail ] &&
		curl -fsS --max-time 30 -o "$work/$tag.heap.pb.gz" "$api/debug/pprof/heap" 2>/dev/null; then
		"$profd" pprof top --sample-index=inuse_space --nodecount=8 "$work/$tag.heap.pb.gz" \
			>"$work/$tag.heaptop" 2>&1 || true
	fi
	stop_profd
	stop_pid "$targets_pid" 10
	targets_pid=""
}

# rate_table TAGPATH N INTERVAL_MS SCHEDULED ENC: the two windows' rows of the rate
# table from TAGPATH.poll and TAGPATH.ts; appends "backlog ENC none|growing|behind
# ..." to the .rate.backlog file beside it
rate_table() {
	local tp=$1 n=$2 ivms=$3 sched=$4 enc=$5
	awk -v n="$n" -v sched="$sched" -v tck="$clk_tck" -v enc="$enc" -v warm=$((2 * n)) -v ivms="$ivms" \
		-v tq="$(cat "$tp.tq")" -v blfile="${tp%-v*}.rate.backlog" '
		function closest(x,   i, b) {
			b = 1
			for (i = 1; i <= np; i++) if ((t[i] - x) ^ 2 < (t[b] - x) ^ 2) b = i
			return b
		}
		FNR == NR { np++; t[np] = $1; sc[np] = $2 + $3; fl[np] = $3; app[np] = $4; cpu[np] = $6; tc[np] = $7
			ds[np] = $8; dc[np] = $9; mt[np] = $10; next }
		FNR == 1 { setup() }
		# the stored timestamps of one series (ms), comma-separated
		{ ns++; k = split($0, ts, ",")
		  for (i = 1; i <= k; i++) {
			for (w = 1; w <= 2; w++) if (ts[i] >= lo_ms[w] && ts[i] < hi_ms[w]) stored[w]++
			if (i > 1) for (x = ts[i - 1] + ivms; x < ts[i]; x += ivms)
				for (w = 1; w <= 2; w++) if (x >= lo_ms[w] && x < hi_ms[w]) skipped[w]++
		  }
		  # behind: the newest stored tick is more than two intervals old at the query
		  if (k && ts[k] < tq * 1000 - 2 * ivms) behind++
		}
		function setup(   i, iv, span, wl) {
			for (i = 1; i <= np && app[i] < warm; i++) ;
			a = i
			# a run that never got 2 scrapes per series in its first two thirds:
			# its windows start a third of the way in
			if (t[a] > t[1] + (t[np] - t[1]) * 2 / 3 || a > np) {
				for (i = 1; i < np && t[i] < t[1] + (t[np] - t[1]) / 3; i++) ;
				a = i
				nowarm = 1
			}
			# the windows end an interval before the last poll: scrapes due until
			# then are finished (the timeout is one interval)
			iv = ivms / 1000
			span = t[np] - iv - t[a]
			wl = int(span / 2 / iv) * iv
			if (wl <= 0) wl = span / 2
			ok = a < np && wl > 0
			m = closest(t[a] + wl); z = closest(t[a] + 2 * wl)
			lo_ms[1] = int(t[a] * 1000); hi_ms[1] = lo_ms[1] + wl * 1000
			lo_ms[2] = hi_ms[1]; hi_ms[2] = hi_ms[1] + wl * 1000
			win = wl
		}
		END {
			if (!ok || m <= a || z <= m) {
				printf "%-3d (too few scrapes for two windows)\n", enc
				printf "backlog %d unknown (too few scrapes)\n", enc >> blfile
				exit
			}
			for (w = 1; w <= 2; w++) {
				lo = w == 1 ? a : m; hi = w == 1 ? m : z
				dt = t[hi] - t[lo]; dn = sc[hi] - sc[lo]
				cpums = dn ? (cpu[hi] - cpu[lo]) / tck * 1000 / dn : 0
				mean = dc[hi] - dc[lo] ? (ds[hi] - ds[lo]) / (dc[hi] - dc[lo]) * 1000 : 0
				due = stored[w] + skipped[w]
				sk[w] = due ? skipped[w] / due : 0
				printf "%-3d %-3d %6.1f %8.0f %8.0f %7.1f%% %7d %6d %7.1f %8.3f %6.2fc %6.2fc %6.2fc\n", enc, w, win,
					dn / dt, stored[w] / win, 100 * stored[w] / win / sched, skipped[w],
					fl[hi] - fl[lo], mean, cpums, (cpu[hi] - cpu[lo]) / tck / dt, (tc[hi] - tc[lo]) / tck / dt,
					(mt[hi] - mt[lo] - (cpu[hi] - cpu[lo]) - (tc[hi] - tc[lo])) / tck / dt
			}
			bl = sk[2] > sk[1] + 0.005 || behind > 0.01 * n ? "growing" : (sk[2] > 0.01 ? "behind" : "none")
			if (nowarm)
				printf "    (never 2 scrapes per series: the windows start a third of the way into the run)\n"
			printf "backlog %d %s (ticks skipped: window 1 %.2f%%, window 2 %.2f%%; series whose newest profile is older than two intervals at the end: %d of %d)\n",
				enc, bl, 100 * sk[1], 100 * sk[2], behind, ns >> blfile
		}' "$tp.poll" "$tp.ts"
}

# ---- output ----------------------------------------------------------------------

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu}, ${mem:-?} RAM," \
	"$(uname -sr); libcurl $(curl-config --version 2>/dev/null | cut -d' ' -f2 || echo '?');" \
	"build: $build (${type:-unknown}); load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo "profd daemon bench: \`profd run\` scraping loopback targets (bench/daemon_targets.c, one loopback host:port"
echo "each) that serve the $nheap $ptype profiles of $corpus/$pdir in turn; only $ptype enabled;"
if [ -n "$ref" ]; then
	echo "this build (v2) beside the reference build $ref (v1 columns: ref), both value encoding 2, on the same input."
else
	echo "value encoding 2 beside 1 on the same input. RSS = VmRSS of the profd process."
fi
start=$SECONDS
rate_ok=1
mem_ok=1

for ci in "${!series_list[@]}"; do
	n=${series_list[ci]}
	s=${scrapes_list[ci]}
	iv=${interval_list[ci]}
	ivms=$(duration_ms "$iv")
	aim_mb=${aim_mb_list[ci]:-}
	sched=$(awk -v n="$n" -v i="$ivms" 'BEGIN { printf "%.0f", n * 1000 / i }')
	echo
	echo "== case $((ci + 1)): $n series (targets), scrape_interval $iv ($sched scrapes/s scheduled), $s scrapes per series"

	if [ "$baselines" = 1 ]; then
		run_baseline "c$ci-idle" "$n" "$iv" idle 0
		run_baseline "c$ci-fail" "$n" "$iv" fail 2
	fi
	run_store "c$ci-v2" "$n" "$s" "$iv" 2
	run_store "c$ci-v1" "$n" "$s" "$iv" 1

	echo
	echo "-- RSS as scrapes accumulate (scrapes/series = profiles appended / series, read when it"
	echo "   reaches k; KB/series = RSS / series)"
	printf '%6s | %10s %9s %10s | %10s %9s %10s | %8s\n' k "v2 scr/ser" "v2 RSS MB" "v2 KB/ser" \
		"v1 scr/ser" "v1 RSS MB" "v1 KB/ser" "v1/v2"
	awk -v n="$n" 'NR == FNR { s[$1] = $2; r[$1] = $3; next }
		$1 in r { printf "%6d | %10.2f %9.1f %10.2f | %10.2f %9.1f %10.2f | %7.2fx\n",
			$1, s[$1], r[$1] / 1024, r[$1] / n, $2, $3 / 1024, $3 / n, $3 / r[$1] }' \
		"$work/c$ci-v2.rows" "$work/c$ci-v1.rows"
	for enc in 2 1; do
		[ ! -s "$work/c$ci-v$enc.note" ] || echo "   $(name_of "$enc"): $(cat "$work/c$ci-v$enc.note")"
	done

	echo
	echo "-- what the RSS is made of (MB; anon = RssAnon, file = RssFile of /proc/PID/status)"
	printf '%-56s %8s %8s %8s %7s %9s\n' run "RSS" anon file threads "KB/series"
	if [ "$baselines" = 1 ]; then
		read -r r a f th _ <"$work/c$ci-idle.base"
		awk -v r="$r" -v a="$a" -v f="$f" -v t="$th" -v n="$n" 'BEGIN {
			printf "%-56s %8.1f %8.1f %8.1f %7d %9.2f\n", "targets discovered, every type off (no loops)",
				r / 1024, a / 1024, f / 1024, t, r / n }'
		read -r r a f th fr frate fcpu <"$work/c$ci-fail.base"
		awk -v r="$r" -v a="$a" -v f="$f" -v t="$th" -v n="$n" -v fr="$fr" 'BEGIN {
			printf "%-56s %8.1f %8.1f %8.1f %7d %9.2f\n", sprintf("heap loops getting 404s (%.1f each), no store", fr),
				r / 1024, a / 1024, f / 1024, t, r / n }'
	fi
	for enc in 2 1; do
		read -r r a f th hs sps <"$work/c$ci-v$enc.detail"
		awk -v r="$r" -v a="$a" -v f="$f" -v t="$th" -v n="$n" -v e="$(name_of "$enc")" -v sps="$sps" -v hs="$hs" 'BEGIN {
			printf "%-56s %8.1f %8.1f %8.1f %7d %9.2f\n",
				sprintf("%s at the end: %.2f scrapes/series, %d in head", e, sps, hs),
				r / 1024, a / 1024, f / 1024, t, r / n }'
	done
	if [ "$baselines" = 1 ]; then
		printf '   404 loops: %s scrapes/s (%d scheduled), profd CPU %s ms per scrape\n' "$frate" "$sched" "$fcpu"
	fi
	for run in fail v2 v1; do
		if [ -s "$work/c$ci-$run.heaptop" ]; then
			echo
			case $run in
			fail) echo "   profd's own heap profile, 404 loops (inuse_space, top 8 by flat):" ;;
			*) echo "   profd's own heap profile at the end, $(name_of "${run#v}") (inuse_space, top 12 by flat):" ;;
			esac
			sed 's/^/   /' "$work/c$ci-$run.heaptop"
		fi
	done

	echo
	echo "-- scrape rate after warm-up (from 2 scrapes per series on): two consecutive windows of"
	echo "   whole intervals; scr/s from the /metrics counters (successes + failures), stored/s and"
	echo "   skipped from the stored timestamps (each scrape is stored at its scheduled tick)"
	printf '%-3s %-3s %6s %8s %8s %8s %7s %6s %7s %8s %7s %7s %7s\n' enc win seconds "scr/s" "stored/s" "of sched" \
		skipped failed "mean ms" "CPU ms" profd targets others
	rm -f "$work/c$ci.rate.backlog"
	for enc in 2 1; do
		rate_table "$work/c$ci-v$enc" "$n" "$ivms" "$sched" "$enc"
	done | tee "$work/c$ci.rate"
	for enc in 2 1; do
		awk -v enc="$enc" -v name="$(name_of "$enc")" '$1 == "backlog" && $2 == enc { $1 = ""; $2 = ""; sub(/^  /, ""); print name ": " $0 }' \
			"$work/c$ci.rate.backlog"
	done
	for enc in 2 1; do
		printf '%s: the longest GET /metrics during the run: %.2f s\n' "$(name_of "$enc")" "$(cat "$work/c$ci-v$enc.stall")"
	done

	# aims
	echo
	if [ -n "$aim_mb" ]; then
		for enc in 2 1; do
			if [ "$(tail -1 "$work/c$ci-v$enc.rows" | cut -d' ' -f1)" = "$s" ]; then
				r=$(tail -1 "$work/c$ci-v$enc.rows" | cut -d' ' -f3)
				verdict=$(awk -v r="$r" -v aim="$aim_mb" 'BEGIN { print (r / 1024 <= aim ? "met" : "NOT met") }')
			else
				read -r r _ _ _ _ sps <"$work/c$ci-v$enc.detail"
				verdict="not measured: $s scrapes per series not reached (RSS at the end, $sps scrapes per series)"
			fi
			if [ "$enc" = 2 ] && [ "$verdict" != met ]; then
				mem_ok=0
			fi
			printf 'aim: %d series after %d scrapes <= %d MB RSS: %s %.1f MB, %s\n' "$n" "$s" "$aim_mb" \
				"$(name_of "$enc")" "$(awk -v r="$r" 'BEGIN { print r / 1024 }')" "$verdict"
		done
	fi
	if [ "$ci" = 0 ]; then
		for enc in 2 1; do
			if ! awk -v aim="$aim_rate" -v enc="$enc" -v name="$(name_of "$enc")" '
				$1 == enc && $2 ~ /^[12]$/ { rate[$2] = $5 }
				$1 == "backlog" && $2 == enc { bl = $3 }
				END {
					lo = rate[1] < rate[2] ? rate[1] : rate[2]
					ok = lo >= 0.99 * aim && bl == "none"
					printf "aim: >= %d scrapes/s stored (at most 1%% of ticks skipped), no growing backlog: %s %d and %d/s, backlog %s: %s\n",
						aim, name, rate[1], rate[2], bl, ok ? "met" : "NOT met"
					exit !ok
				}' "$work/c$ci.rate" "$work/c$ci.rate.backlog"; then
				[ "$enc" != 2 ] || rate_ok=0
			fi
		done
	fi
	cpu2=$(awk '$1 == 2 && $2 == 2 { print $10 }' "$work/c$ci.rate")
	cpu1=$(awk '$1 == 1 && $2 == 2 { print $10 }' "$work/c$ci.rate")
	[ -z "$cpu2" ] || [ -z "$cpu1" ] || awk -v a="$cpu2" -v b="$cpu1" -v name="$(name_of 1)" 'BEGIN {
		printf "profd CPU per scrape (window 2): encoding 2 %.3f ms, %s %.3f ms (v1/v2 %.2fx)\n", a, name, b, (a > 0 ? b / a : 0) }' || true
done

echo
echo "aims (encoding 2): memory $([ $mem_ok = 1 ] && echo met || echo 'NOT met'), scrape rate $([ $rate_ok = 1 ] && echo met || echo 'NOT met')"
echo "total $((SECONDS - start)) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
