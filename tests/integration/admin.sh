#!/usr/bin/env bash
# admin.sh: the admin API of `profd run` end to end against a real Go target
# scraped by two jobs: without --web.enable-admin-api every admin endpoint is
# refused as Prometheus refuses it (503 unavailable); with it, bad parameters are
# a 400 naming them, delete_series of one series makes query_range, query and
# series stop returning it while the other stays, the deletion survives a kill -9
# right after its 204, a snapshot opens with `profd tsdb query` holding the
# profiles, and clean_tombstones answers 204.
#
#   admin.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} GOCACHE=$tmp/gocache GOFLAGS=-mod=mod GOPROXY=off
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$tmp/profd.log" 2>/dev/null; exit 1; }
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
# count SEL [END]: profiles of SEL the API lists from 10 minutes ago to END (now)
count() {
	local end=${2:-$(date +%s.%3N)}
	curl -fsS -G "$api/api/v1/query_range" --data-urlencode "query=$1" \
		--data-urlencode "start=$(($(date +%s) - 600))" --data-urlencode "end=$end" 2>/dev/null |
		grep -o '"timestamps":\[[0-9,]*' | sed 's/.*\[//' | tr ',' '\n' | grep -c '[0-9]' || true
}
stored() {
	local n
	n=$(count "$1")
	[ "${n:-0}" -ge "$2" ]
}

(cd "$data/gen/goapp" && go build -o "$tmp/goapp" .)
"$tmp/goapp" -addr 127.0.0.1:0 -addr-file "$tmp/addr" >"$tmp/goapp.log" 2>&1 &
pids+=($!)
wait_for 60 "the Go target did not start" test -s "$tmp/addr"
addr=$(cat "$tmp/addr")

job() {
	cat <<EOC
  - job_name: $1
    static_configs:
      - targets: ['$addr']
    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}
EOC
}
{
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n'
	job goapp
	job other
} >"$tmp/profd.yml"

start() { # extra flags
	: >"$tmp/profd.log.cur"
	"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
		--web.listen-address=127.0.0.1:0 "$@" 2> >(tee -a "$tmp/profd.log" >"$tmp/profd.log.cur") &
	profd_pid=$!
	pids+=($profd_pid)
	wait_for 60 "profd did not start listening" listening
	api="http://127.0.0.1:$port"
}
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log.cur" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
stop() { # signal
	kill -"$1" "$profd_pid"
	wait "$profd_pid" 2>/dev/null || true
}
# post PATH [curl args...]: the status code; the body goes to $tmp/body
post() {
	local path=$1
	shift
	curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$api$path" "$@"
}

# ---- without the flag: Prometheus's refusal, and nothing changes
start
wait_for 120 "no heap profiles of job goapp were stored" stored 'heap{job="goapp"}' 2
refusal='{"status":"error","errorType":"unavailable","error":"admin APIs disabled"}'
for p in delete_series clean_tombstones snapshot; do
	code=$(post "/api/v1/admin/tsdb/$p" --data-urlencode 'match[]=heap{job="goapp"}')
	[ "$code" = 503 ] || fail "$p without --web.enable-admin-api gave $code"
	[ "$(cat "$tmp/body")" = "$refusal" ] || fail "$p refusal: $(cat "$tmp/body")"
done
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT "$api/api/v1/admin/tsdb/snapshot")
[ "$code" = 503 ] || fail "PUT snapshot without the flag gave $code"
[ ! -e "$tmp/data/snapshots" ] || fail "a refused snapshot left $tmp/data/snapshots"
grep -q '"web.enable-admin-api":"false"' <<<"$(curl -fsS "$api/api/v1/status/flags")" ||
	fail "/api/v1/status/flags does not list web.enable-admin-api=false"
stop TERM

# ---- with the flag
start --web.enable-admin-api
grep -q '"web.enable-admin-api":"true"' <<<"$(curl -fsS "$api/api/v1/status/flags")" ||
	fail "/api/v1/status/flags does not list web.enable-admin-api=true"
wait_for 120 "fewer than 4 heap profiles of job goapp" stored 'heap{job="goapp"}' 4
wait_for 120 "fewer than 4 heap profiles of job other" stored 'heap{job="other"}' 4

# bad parameters: 400 bad_data naming the parameter
code=$(post /api/v1/admin/tsdb/delete_series)
[ "$code" = 400 ] && grep -q '"errorType":"bad_data".*match\[\]' "$tmp/body" ||
	fail "delete_series without match[]: $code $(cat "$tmp/body")"
code=$(post /api/v1/admin/tsdb/delete_series --data-urlencode 'match[]=heap{job=')
[ "$code" = 400 ] && grep -q 'match\[\]' "$tmp/body" || fail "a bad selector: $code $(cat "$tmp/body")"
code=$(post /api/v1/admin/tsdb/delete_series --data-urlencode 'match[]=heap' --data-urlencode 'start=yesterday')
[ "$code" = 400 ] && grep -q '\\"start\\"' "$tmp/body" || fail "a bad start: $code $(cat "$tmp/body")"
code=$(post '/api/v1/admin/tsdb/snapshot?skip_head=maybe')
[ "$code" = 400 ] && grep -q 'skip_head' "$tmp/body" || fail "a bad skip_head: $code $(cat "$tmp/body")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$api/api/v1/admin/tsdb/snapshot")
[ "$code" = 405 ] || fail "GET snapshot gave $code"

# a profile of job goapp that the deletion will take
curl -fsS -G "$api/api/v1/query_range" --data-urlencode 'query=heap{job="goapp"}' \
	--data-urlencode "start=$(($(date +%s) - 600))" >"$tmp/qr.json"
ts=$(grep -o '"timestamps":\[[0-9,]*' "$tmp/qr.json" | head -1 | sed 's/.*\[//; s/,.*//')
at="$((ts / 1000)).$(printf %03d $((ts % 1000)))"
meta() {
	curl -fsS -G "$api/api/v1/query" --data-urlencode 'query=heap{job="goapp"}' \
		--data-urlencode "time=$at" --data-urlencode lookback=1ms --data-urlencode report=meta
}
grep -q "$ts" <<<"$(meta)" || fail "query at $at does not find the profile at $ts: $(meta | head -c 300)"
others=$(count 'heap{job="other"}')

# delete every sample of job goapp there is now (no start, no end: all time)
before=$(date +%s.%3N)
code=$(post /api/v1/admin/tsdb/delete_series --data-urlencode 'match[]=heap{job="goapp"}')
[ "$code" = 204 ] && [ ! -s "$tmp/body" ] || fail "delete_series gave $code: $(cat "$tmp/body")"
# at once a kill -9: the deletion was acknowledged, so it must survive
stop KILL

check_deleted() {
	local n
	n=$(count 'heap{job="goapp"}' "$before")
	[ "${n:-0}" = 0 ] || fail "query_range still lists $n profiles of job goapp up to the deletion"
	n=$(count 'heap{job="other"}' "$before")
	[ "${n:-0}" -ge "$others" ] || fail "job other lost profiles: $n, had $others"
	curl -fsS -G "$api/api/v1/series" --data-urlencode 'match[]=heap{job="goapp"}' \
		--data-urlencode "start=$(($(date +%s) - 600))" --data-urlencode "end=$before" >"$tmp/series.json"
	grep -q '"data":\[\]' "$tmp/series.json" || fail "series still lists job goapp: $(cat "$tmp/series.json")"
	curl -fsS -G "$api/api/v1/series" --data-urlencode 'match[]=heap{job="other"}' \
		--data-urlencode "start=$(($(date +%s) - 600))" --data-urlencode "end=$before" >"$tmp/series.json"
	grep -q '"job":"other"' "$tmp/series.json" || fail "series lost job other: $(cat "$tmp/series.json")"
	if grep -q "$ts" <<<"$(meta)"; then fail "query still returns the deleted profile at $ts"; fi
}
start --web.enable-admin-api
check_deleted
# scraping goes on: new profiles of job goapp are not deleted
wait_for 120 "no new heap profiles of job goapp after the deletion" stored 'heap{job="goapp"}' 1

# a snapshot opens as a store with the profiles
code=$(post /api/v1/admin/tsdb/snapshot)
[ "$code" = 200 ] || fail "snapshot gave $code: $(cat "$tmp/body")"
name=$(sed -n 's/^{"status":"success","data":{"name":"\([0-9]\{8\}T[0-9]\{6\}Z-[0-9a-f]\{16\}\)"}}$/\1/p' "$tmp/body")
[ -n "$name" ] || fail "snapshot answered $(cat "$tmp/body")"
snap="$tmp/data/snapshots/$name"
[ -d "$snap" ] || fail "no snapshot directory $snap"
"$profd" tsdb query "$snap" 'heap{job="other"}' >"$tmp/snapq.txt" || fail "profd tsdb query of the snapshot"
n=$(sed -n 's/.* \([0-9]*\) samples .*/\1/p' "$tmp/snapq.txt" | head -1)
[ "${n:-0}" -ge "$others" ] || fail "the snapshot holds ${n:-0} profiles of job other, want at least $others"
"$profd" tsdb query "$snap" 'heap{job="goapp"}' --end="$before" >"$tmp/snapq.txt" || fail "snapshot query"
[ ! -s "$tmp/snapq.txt" ] || fail "the snapshot holds deleted profiles: $(cat "$tmp/snapq.txt")"
"$profd" tsdb dump-profile "$snap" 'heap{job="other"}' --time="$(date +%s)" -o "$tmp/snap.pb.gz" ||
	fail "dump-profile from the snapshot"
(cd "$tmp" && go tool pprof -top -symbolize=none snap.pb.gz >/dev/null 2>&1) ||
	fail "go tool pprof cannot read a profile of the snapshot"
code=$(post /api/v1/admin/tsdb/snapshot --data-urlencode skip_head=true)
[ "$code" = 200 ] || fail "snapshot skip_head=true gave $code: $(cat "$tmp/body")"

code=$(post /api/v1/admin/tsdb/clean_tombstones)
[ "$code" = 204 ] || fail "clean_tombstones gave $code: $(cat "$tmp/body")"
curl -fsS "$api/metrics" >"$tmp/metrics"
grep -q '^profd_tsdb_snapshots_total 2$' "$tmp/metrics" || fail "/metrics: profd_tsdb_snapshots_total is not 2"

# a clean shutdown and a restart keep the deletion too
stop TERM
start --web.enable-admin-api
check_deleted
stop TERM
echo "ok"
