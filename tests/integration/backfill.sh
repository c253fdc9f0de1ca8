#!/usr/bin/env bash
# backfill.sh: every push profd acknowledged survives kill -9 and restarts while
# it scrapes, persists blocks and compacts. In each of 5 rounds profd starts on
# the store of the last (its open persists the head's complete ranges, which
# pushes dated hours and days back fill, and compacts them), scrapes a target,
# and takes pushes dated now, 30 minutes, 3 hours and about 3 days back, each its own
# series; a push gets 200 or a 400 saying it is out of bounds, nothing else.
# Midway through the pushes profd is killed with SIGKILL. After every start,
# every push that got 200 must be listed by /api/v1/series, no compaction may
# have failed, and the scrapes go on. Then, on a store of its own, pushes dated
# 2100 and 5 hours ahead are refused (more than --storage.tsdb.max-future-time,
# 10m, after the clock) and counted, and scrapes and present pushes go on. Last,
# with a window of 6 h, a push dated 5 hours ahead is taken, and after a restart
# (whose open persists the ranges complete by the clock) scrapes go on and
# none is refused.
#
#   backfill.sh PROFD SERVE_PROFILES TESTDATA
set -euo pipefail

profd=$(realpath "$1")
serve=$(realpath "$2")
data=$(cd "$3" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/profd.log
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -40 "$log" 2>/dev/null; exit 1; }
# Runs CMD every 0.2 s until it succeeds; fails with WHAT after TIMEOUT seconds.
# Conditions are waited for, never slept on: the machine may be loaded.
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}

g=$data/profiles/goapp
"$serve" "$tmp/addr" "$tmp/served" "/debug/pprof/heap=$g/heap.pb.gz,$g/heap-2.pb.gz,$g/heap-3.pb.gz" &
pids+=($!)
wait_for 60 "the profile server did not start" test -s "$tmp/addr"
cat >"$tmp/profd.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: served
    static_configs:
      - targets: ['$(cat "$tmp/addr")']
    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}
EOC

listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/cur.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
found_pid() {
	profd_pid=$(pgrep -P "$timeout_pid" -x profd || true)
	[ -n "$profd_pid" ]
}
start() {
	: >"$tmp/cur.log"
	timeout --foreground 300 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$store" \
		--web.listen-address=127.0.0.1:0 "$@" 2> >(tee -a "$log" >"$tmp/cur.log") &
	timeout_pid=$!
	pids+=($timeout_pid)
	wait_for 60 "profd did not start listening" listening
	wait_for 10 "no profd process under timeout" found_pid
	api="http://127.0.0.1:$port"
}

# every acknowledged push is a series of its own, listed over all time
check_all() {
	local now listed missing
	now=$(date +%s)
	curl -fsS -G "$api/api/v1/series" --data-urlencode 'match[]=heap{job="push"}' \
		--data-urlencode "start=$((now - 30 * 86400))" --data-urlencode "end=$((now + 3600))" \
		>"$tmp/series.json" || fail "series: curl failed"
	grep -o '"instance":"[^"]*"' "$tmp/series.json" | sed 's/.*:"//; s/"$//' | sort -u >"$tmp/listed" || true
	sort -u "$tmp/acked" >"$tmp/acked.sorted"
	missing=$(comm -23 "$tmp/acked.sorted" "$tmp/listed" | head -5 | tr '\n' ' ')
	[ -z "$missing" ] || fail "round $round: acknowledged pushes not listed: $missing"
	listed=$(comm -13 "$tmp/acked.sorted" "$tmp/listed" | head -5 | tr '\n' ' ')
	# a push whose answer was cut by the kill may be there: only those
	for i in $listed; do
		grep -qx "$i" "$tmp/tried" || fail "round $round: series $i was never pushed"
	done
}
metric() {
	curl -fsS "$api/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
# scrapes of the target stored since the test began (a fixed start: a window
# sliding with the clock would stop the count growing on a slow run)
t0=$(($(date +%s) - 60))
scrapes() {
	curl -fsS -G "$api/api/v1/query_range" --data-urlencode 'query=heap{job="served"}' \
		--data-urlencode "start=$t0" --data-urlencode "end=$(($(date +%s) + 60))" 2>/dev/null |
		grep -o '"timestamps":\[[0-9,]*' | sed 's/.*\[//' | tr ',' '\n' | grep -c '[0-9]' || true
}
scraped() {
	local n
	n=$(scrapes)
	[ "${n:-0}" -gt "$1" ]
}

# push_all ROUND: 40 pushes, each its own series; appends acknowledged ones
# to acked and every one tried to tried
push_all() {
	local r=$1 k t w code inst
	for k in $(seq 0 39); do
		now=$(date +%s)
		case $((k % 4)) in
		0) t=$now ;;
		1) t=$((now - 1800 - k)) ;;
		2) t=$((now - 3 * 3600 - k * 60)) ;;
		# 3 days back, in two block ranges of one 6 h compaction window
		# (whatever the time of day), which the next start compacts
		3) w=$(((now - 3 * 86400) / 21600 * 21600))
		   if [ $((k % 8)) = 3 ]; then t=$((w + 1800 + k)); else t=$((w + 12600 + k)); fi ;;
		esac
		inst="r$r-$k-$t"
		echo "$inst" >>"$tmp/tried"
		code=$(curl -s --max-time 30 -o "$tmp/push.$r.json" -w '%{http_code}' \
			--data-binary "@$g/heap.pb.gz" \
			"$api/api/v1/profiles?labels=heap%7Bjob%3D%22push%22%2Cinstance%3D%22$inst%22%7D&time=$t") || true
		case $code in
		200) echo "$inst" >>"$tmp/acked" ;;
		400) grep -q 'is out of bounds: the store accepts samples from' "$tmp/push.$r.json" ||
			{ echo "push $inst: 400 $(cat "$tmp/push.$r.json")" >>"$tmp/bad"; return; }
			echo "$inst" >>"$tmp/refused" ;;
		000) ;; # profd was killed: no answer, nothing acknowledged
		*) echo "push $inst: $code $(cat "$tmp/push.$r.json")" >>"$tmp/bad"; return ;;
		esac
	done
}
acked_in() { [ "$(grep -c "^r$1-" "$tmp/acked" 2>/dev/null || true)" -ge "$2" ]; }

store=$tmp/data
: >"$tmp/acked"
: >"$tmp/tried"
: >"$tmp/refused"
for round in 1 2 3 4 5; do
	start
	check_all
	[ "$(metric profd_tsdb_compactions_failed_total)" = 0 ] || fail "round $round: a compaction failed"
	push_all "$round" &
	pusher=$!
	# kill -9 midway, with pushes in flight
	wait_for 120 "round $round: fewer than 12 pushes acknowledged" acked_in "$round" 12
	wait_for 120 "round $round: no scrape stored" scraped 0
	kill -9 "$profd_pid"
	wait "$timeout_pid" 2>/dev/null || true
	wait "$pusher" || true
	[ ! -s "$tmp/bad" ] || fail "round $round: $(head -3 "$tmp/bad")"
done

# the last start: every acknowledged push is there, refusals were counted,
# blocks were written and compacted, scrapes go on, and a SIGTERM stops cleanly
round=final
start
check_all
[ "$(metric profd_tsdb_compactions_failed_total)" = 0 ] || fail "a compaction failed"
[ "$(metric profd_tsdb_wal_replay_skipped_samples_total)" = 0 ] || fail "the replay skipped samples"
blocks=$(metric profd_tsdb_blocks_loaded)
[ "${blocks:-0}" -ge 1 ] || fail "no blocks were written"
grep -q 'msg="blocks compacted"' "$log" || fail "no compaction ran"
[ -s "$tmp/refused" ] || fail "no push dated into a persisted range was refused"
n=$(scrapes)
wait_for 120 "scrapes did not go on after the restart" scraped "$n"
kill "$timeout_pid"
wait "$timeout_pid" || fail "profd did not stop cleanly on SIGTERM"

# pushes dated too far ahead are refused and counted; scrapes and present pushes
# go on being stored
store=$tmp/future
start
wait_for 60 "no scrape stored on the new store" scraped 0
for t in 4102444800 $(($(date +%s) + 5 * 3600)); do
	code=$(curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$g/heap.pb.gz" \
		"$api/api/v1/profiles?labels=heap%7Bjob%3D%22push%22%7D&time=$t")
	[ "$code" = 400 ] || fail "a push dated $t: $code $(cat "$tmp/push.json")"
	grep -q 'heap{job=\\"push\\"}: sample at [0-9]* ([^)]*) is out of bounds: the store accepts samples up to [0-9]* ([^)]*), as it takes none dated more than 10m after its clock' "$tmp/push.json" ||
		fail "a push dated $t: $(cat "$tmp/push.json")"
done
[ "$(metric profd_tsdb_too_far_in_future_samples_total)" = 2 ] || fail "the pushes ahead were not counted"
[ "$(metric profd_tsdb_out_of_bound_samples_total)" = 2 ] || fail "the pushes ahead were not counted as out of bounds"
code=$(curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$g/heap.pb.gz" \
	"$api/api/v1/profiles?labels=heap%7Bjob%3D%22push%22%7D&time=$(date +%s)")
[ "$code" = 200 ] || fail "a present push after the refused ones: $code $(cat "$tmp/push.json")"
n=$(scrapes)
wait_for 60 "scrapes were not stored after the refused pushes" scraped "$n"
kill "$timeout_pid"
wait "$timeout_pid" || fail "profd did not stop cleanly on SIGTERM"

# a push dated within a wide window moves no bound past the present
store=$tmp/ahead
start --storage.tsdb.max-future-time=6h
wait_for 60 "no scrape stored on the new store" scraped 0
t=$(($(date +%s) + 5 * 3600))
code=$(curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$g/heap.pb.gz" \
	"$api/api/v1/profiles?labels=heap%7Bjob%3D%22push%22%7D&time=$t")
[ "$code" = 200 ] || fail "a push 5 hours ahead: $code $(cat "$tmp/push.json")"
kill "$timeout_pid"
wait "$timeout_pid" || fail "profd did not stop cleanly on SIGTERM"
start --storage.tsdb.max-future-time=6h
n=$(scrapes)
wait_for 60 "scrapes were not stored after the push ahead" scraped "$n"
if curl -fsS "$api/api/v1/targets" | grep -q '"lastError":"storing the profile failed'; then
	fail "a scrape was refused after the push ahead: $(curl -fsS "$api/api/v1/targets")"
fi
[ "$(metric profd_tsdb_out_of_bound_samples_total)" = 0 ] || fail "samples were refused after the push ahead"
kill "$timeout_pid"
wait "$timeout_pid" || fail "profd did not stop cleanly on SIGTERM"
echo "backfill: $(wc -l <"$tmp/acked") pushes acknowledged, $(wc -l <"$tmp/refused") refused as out of bounds, all listed after 5 kill -9s"
