#!/usr/bin/env bash
# clickhouse_daemon.sh: `profd run --storage.clickhouse.url` against Debian's
# clickhouse-server started here on loopback ports, scraping a target that serves
# real profiles and receiving pushes:
#   1. a refusal by ClickHouse (a wrong password) stops start-up with its message;
#   2. ClickHouse up: every acknowledged profile (push 200s and successful
#      scrapes) arrives, counted as distinct (series_id, ts) in `profiles`, and
#      the spool drains to 0;
#   3. ClickHouse killed mid-scrape: pushes are still acknowledged, the spool
#      metrics rise, flushes fail and the outage is logged once; profd is then
#      killed with SIGKILL;
#   4. profd started again on the same store while ClickHouse is still down (it
#      starts, counts the spool, and the schema waits), then ClickHouse on the
#      same ports and data: the schema is created by the shipper, everything
#      acknowledged arrives (none lost), the spool drains to 0, and a pushed
#      profile rebuilt from ClickHouse gives the same `go tool pprof -raw` as the
#      file pushed;
#   6. (run before 5) with --storage.tsdb.retention.time=2d, a profile pushed 5
#      days back is dropped with its day's partition soon after it is sent, and
#      counted; one pushed now stays;
#   5. ClickHouse unreachable from the start and a small
#      --storage.clickhouse.spool.max-size: profd starts, then pushes answer 503
#      with the spool-full message, scrapes show it as the target's error, the
#      refusals metric counts them and the spool keeps what it acknowledged.
#
#   clickhouse_daemon.sh PROFD SERVE_PROFILES CLICKHOUSE_TOOL TESTDATA
set -euo pipefail

profd=$(realpath "$1")
serve=$(realpath "$2")
tool=$(realpath "$3")
data=$(cd "$4" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
. "$here/support/clickhouse.sh"
pids=()
cleanup() {
	ch_stop
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
log=$tmp/none.log
fail() {
	echo "FAIL: $*"
	echo "--- profd log"
	tail -40 "$log" 2>/dev/null
	exit 1
}
# Runs CMD every 0.2 s until it succeeds; fails with WHAT after TIMEOUT seconds.
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" | head -1)
	[ -n "$port" ]
}
# start NAME STORE URL [FLAGS...]: profd on a free port, logging to NAME.log
start() {
	log=$tmp/$1.log
	local store=$2 url=$3
	shift 3
	timeout --foreground -k 5 600 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$store" \
		--web.listen-address=127.0.0.1:0 --storage.clickhouse.url="$url" "$@" 2>"$log" &
	profd_pid=$!
	pids+=("$profd_pid")
	wait_for 60 "profd did not start listening" listening
	api="http://127.0.0.1:$port"
}
metric() { # NAME: its value on /metrics (0 when absent)
	local v
	v=$(curl -fsS "$api/metrics" | awk -v m="$1" '$1 == m { print $2 }')
	echo "${v:-0}"
}
# a metric compared with a number (integers; gauges may print as floats)
metric_ge() { [ "$(metric "$1" | cut -d. -f1)" -ge "$2" ]; }
metric_eq() { [ "$(metric "$1" | cut -d. -f1)" -eq "$2" ]; }
sql() { curl -sS --fail-with-body "$CH_URL" --data-binary "$1"; }
stored() { sql 'SELECT count() FROM (SELECT DISTINCT series_id, ts FROM profd.profiles)'; }
stored_is() { [ "$(stored 2>/dev/null)" = "$1" ]; }
pushed=0
last_push=
# push INSTANCE SECONDS FILE: POST /api/v1/profiles; sets $code, counts 200s
push() {
	code=$(curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$3" \
		"$api/api/v1/profiles?labels=heap%7Bjob%3D%22push%22%2Cinstance%3D%22$1%22%7D&time=$2") ||
		fail "push $1: curl failed"
	if [ "$code" = 200 ]; then
		pushed=$((pushed + 1))
		last_push="$1 $2 $3"
	fi
}
scrapes_ok() { metric 'profd_scrapes_total{result="success"}'; }

g=$data/profiles/goapp
heaps=$g/heap.pb.gz,$g/heap-2.pb.gz,$g/heap-3.pb.gz
"$serve" "$tmp/addr" "$tmp/served" "/debug/pprof/heap=$heaps" &
serve_pid=$!
pids+=("$serve_pid")
wait_for 60 "the profile server did not start" test -s "$tmp/addr"
cat >"$tmp/profd.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: demo
    static_configs:
      - targets: ['$(cat "$tmp/addr")']
    profiling_config:
      pprof_config:
        heap: {}
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        threadcreate: {enabled: false}
        profile: {enabled: false}
EOC

ch_start "$tmp/ch" 900
ch_url=$CH_URL

# ---- 1. a refusal stops start-up ---------------------------------------------------
printf 'profd\nnot-the-password\n' >"$tmp/wrong"
log=$tmp/refused.log
if timeout --foreground 60 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/refused" \
	--web.listen-address=127.0.0.1:0 --storage.clickhouse.url="$ch_url" \
	--storage.clickhouse.credentials-file="$tmp/wrong" 2>"$log"; then
	fail "profd started with a password ClickHouse refuses"
fi
grep -q 'msg="ClickHouse is not usable".*Code: [0-9]*' "$log" ||
	fail "the refusal's log line lacks ClickHouse's message"

# ---- 2. ClickHouse up: everything arrives --------------------------------------------
start up "$tmp/store" "$ch_url"
base=$(($(date +%s) - 3600))
for i in 1 2 3 4 5; do
	push a $((base + i)) "$g/heap.pb.gz"
	[ "$code" = 200 ] || fail "push $i answered $code: $(cat "$tmp/push.json")"
done
wait_for 120 "fewer than 3 scrapes succeeded" metric_ge 'profd_scrapes_total{result="success"}' 3
wait_for 120 "ClickHouse did not take the pushes and scrapes" metric_ge profd_clickhouse_sent_profiles_total $((pushed + 3))
metric_ge profd_clickhouse_flushes_total 1 || fail "no flush counted"
metric_ge profd_clickhouse_last_flush_timestamp_seconds $(($(date +%s) - 600)) ||
	fail "profd_clickhouse_last_flush_timestamp_seconds is not recent"
n=$(stored)
[ "$n" -ge $((pushed + 3)) ] || fail "ClickHouse holds $n profiles, want at least $((pushed + 3))"
[ -f "$tmp/store/clickhouse.sent" ] || fail "no sent-position file in the store"
[ -z "$(find "$tmp/store" -maxdepth 1 -name '01*' -type d)" ] || fail "local blocks were written"

# ---- 3. ClickHouse killed mid-scrape, then profd killed with SIGKILL ------------------------
kill "$CH_PID"
wait "$CH_PID" 2>/dev/null || true
CH_PID=
before_fail=$(metric profd_clickhouse_flush_failures_total)
for i in 6 7 8 9 10; do
	push b $((base + i)) "$g/heap-2.pb.gz"
	[ "$code" = 200 ] || fail "push $i with ClickHouse down answered $code: $(cat "$tmp/push.json")"
done
wait_for 120 "the spool did not hold the pushes made while ClickHouse was down" metric_ge profd_clickhouse_spool_profiles 5
metric_ge profd_clickhouse_spool_bytes 1 || fail "profd_clickhouse_spool_bytes stayed 0"
wait_for 120 "flushes did not fail twice with ClickHouse down" metric_ge profd_clickhouse_flush_failures_total $((before_fail + 2))
outages=$(grep -c 'msg="ClickHouse did not take the profiles' "$log" || true)
[ "$outages" = 1 ] || fail "the outage was logged $outages times, want once"
# the scrapes go on and are acknowledged into the spool
s0=$(scrapes_ok)
wait_for 60 "no scrape was acknowledged with ClickHouse down" metric_ge 'profd_scrapes_total{result="success"}' $((s0 + 2))
# stop the target so that no scrape is in flight, then count what was acknowledged
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true
f0=$(metric 'profd_scrapes_total{result="failure"}')
wait_for 60 "the scrape of the stopped target did not fail" metric_ge 'profd_scrapes_total{result="failure"}' $((f0 + 1))
acked=$((pushed + $(scrapes_ok)))
# profd itself, not the timeout(1) that runs it
real=$(pgrep -P "$profd_pid" -x profd) || fail "profd's process not found under timeout $profd_pid"
kill -KILL "$real"
wait "$profd_pid" 2>/dev/null || true
! kill -0 "$real" 2>/dev/null || fail "profd survived SIGKILL"
grep -q 'msg="stopped"' "$log" && fail "profd stopped cleanly: it was to be killed"

# ---- 4. both again: everything acknowledged arrives --------------------------------
# profd first, while ClickHouse is still down: it starts, and the schema waits
start again "$tmp/store" "$ch_url"
grep -q 'msg="ClickHouse does not answer; profiles are spooled' "$log" ||
	fail "no warning that ClickHouse does not answer at start"
metric_ge profd_clickhouse_spool_profiles 5 || fail "the spool was not counted again at start"
timeout -k 5 900 "$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)" \
	--config-file="$tmp/ch/config.xml" >>"$tmp/ch/log/stdout.log" 2>&1 &
CH_PID=$!
ch_up() { [ "$(curl -s --max-time 2 "${ch_url}ping" 2>/dev/null)" = "Ok." ]; }
wait_for 60 "clickhouse-server did not start again" ch_up
wait_for 120 "the shipper did not create the schema once ClickHouse answered" grep -q 'msg="schema created"' "$log"
wait_for 120 "the spool did not drain" metric_eq profd_clickhouse_spool_profiles 0
metric_eq profd_clickhouse_spool_bytes 0 || fail "spool bytes $(metric profd_clickhouse_spool_bytes) after draining"
wait_for 60 "ClickHouse does not hold the $acked acknowledged profiles" stored_is "$acked"
[ "$(stored)" = "$acked" ] || fail "ClickHouse holds $(stored) profiles, want $acked"
# the last push, rebuilt from ClickHouse, as go tool pprof prints it
read -r inst secs file <<<"$last_push"
"$tool" dump "$ch_url" "heap{instance=\"$inst\",job=\"push\"}" "$((secs * 1000))" "$tmp/rebuilt.pb.gz" ||
	fail "the pushed profile does not rebuild from ClickHouse"
pprof_bin=$(go env GOTOOLDIR)/pprof
[ -x "$pprof_bin" ] || pprof_bin="go tool pprof"
(cd "$tmp" && $pprof_bin -symbolize=none -raw "$file") >"$tmp/want.raw" 2>/dev/null
(cd "$tmp" && $pprof_bin -symbolize=none -raw "$tmp/rebuilt.pb.gz") >"$tmp/got.raw" 2>/dev/null
[ -s "$tmp/want.raw" ] && cmp -s "$tmp/want.raw" "$tmp/got.raw" ||
	fail "go tool pprof -raw differs for the profile rebuilt from ClickHouse: $(diff "$tmp/want.raw" "$tmp/got.raw" | head -5)"
kill "$profd_pid"
rc=0
wait "$profd_pid" || rc=$?
[ "$rc" = 0 ] || fail "profd exited with $rc after SIGTERM"
grep -q 'msg="stopped"' "$log" || fail "profd did not stop cleanly"
! grep -q 'Sanitizer' "$log" || fail "a sanitizer reported at exit"

# ---- 6. retention: days past it are dropped from ClickHouse ---------------------------------
start retention "$tmp/store-ret" "$ch_url" --storage.clickhouse.database=ret \
	--storage.tsdb.retention.time=2d
now=$(date +%s)
push old $((now - 5 * 86400)) "$g/heap.pb.gz"
[ "$code" = 200 ] || fail "the push of a profile 5 days back answered $code: $(cat "$tmp/push.json")"
push new "$now" "$g/heap-2.pb.gz"
[ "$code" = 200 ] || fail "the push of a profile now answered $code: $(cat "$tmp/push.json")"
wait_for 120 "no partition past retention was dropped" \
	metric_ge profd_clickhouse_retention_partitions_dropped_total 1
ret_count() { sql "SELECT count() FROM ret.profiles WHERE ts $1 $(((now - 2 * 86400) * 1000))"; }
[ "$(ret_count '<')" = 0 ] || fail "$(ret_count '<') profiles past retention are still in ClickHouse"
new_arrived() { [ "$(ret_count '>=' 2>/dev/null)" = 1 ]; }
wait_for 60 "the profile pushed now did not arrive" new_arrived
metric_eq profd_clickhouse_retention_failures_total 0 || fail "retention runs failed: $(grep 'retention' "$log" | head -3)"
kill "$profd_pid"
wait "$profd_pid" || fail "profd exited with $? after SIGTERM (retention)"

# ---- 5. unreachable from the start, and a small spool --------------------------------------
"$serve" "$tmp/addr2" "$tmp/served2" "/debug/pprof/heap=$heaps" &
pids+=($!)
wait_for 60 "the profile server did not start again" test -s "$tmp/addr2"
sed -i "s/targets: \['.*'\]/targets: ['$(cat "$tmp/addr2")']/" "$tmp/profd.yml"
dead=http://127.0.0.1:$(ch_free_port)/
start full "$tmp/store2" "$dead" --storage.clickhouse.spool.max-size=64KB
grep -q 'msg="ClickHouse does not answer; profiles are spooled' "$log" ||
	fail "no warning that ClickHouse does not answer at start"
pushed=0
for i in $(seq 1 200); do
	push c $((base + 100 + i)) "$g/heap-3.pb.gz"
	[ "$code" = 200 ] || break
done
[ "$code" = 503 ] || fail "pushes into a full spool answered $code, want 503"
grep -q 'the ClickHouse spool is full' "$tmp/push.json" || fail "the 503 does not say the spool is full: $(cat "$tmp/push.json")"
[ "$pushed" -ge 1 ] || fail "no push was accepted before the spool filled"
target_full() {
	curl -fsS "$api/api/v1/targets" | grep -q 'the ClickHouse spool is full'
}
wait_for 60 "the scrape target does not show the spool-full error" target_full
metric_ge profd_clickhouse_spool_full_refusals_total 2 || fail "the refusals were not counted"
metric_ge profd_clickhouse_spool_max_bytes 65536 || fail "the spool's limit is not on /metrics"
sp=$(metric profd_clickhouse_spool_profiles)
[ "$sp" -ge "$pushed" ] || fail "the spool holds $sp profiles, but $pushed pushes were acknowledged"
[ "$(metric profd_clickhouse_spool_bytes)" -le 65536 ] || fail "the spool went over its limit"
kill "$profd_pid"
rc=0
wait "$profd_pid" || rc=$?
[ "$rc" = 0 ] || fail "profd with a full spool exited with $rc after SIGTERM"
! grep -q 'Sanitizer' "$log" || fail "a sanitizer reported at exit"
echo "ok: $acked profiles acknowledged across a ClickHouse outage and a SIGKILL all arrived"
