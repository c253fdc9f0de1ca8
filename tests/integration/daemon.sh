#!/usr/bin/env bash
# daemon.sh: `profd run` end to end: a real Go program with net/http/pprof as the
# target, profiles stored at every tick, the HTTP API (query_range, a profile as
# proto that go tool pprof reads identically to the stored one, a merge, a 400 for
# a bad selector, /-/ready, /metrics), a POST /-/reload that adds a job without a
# gap in the running one, a bad config refused on SIGHUP while scraping goes on, a
# clean SIGTERM shutdown, and the data still there after a restart.
#
#   daemon.sh PROFD TESTDATA
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
export HOME=${HOME:-$tmp} GOCACHE=$tmp/gocache GOFLAGS=-mod=mod GOPROXY=off PPROF_TMPDIR=$tmp
fail() { echo "FAIL: $*"; echo "--- profd log"; cat "$tmp/profd.log" 2>/dev/null | tail -30; exit 1; }
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
# At least N profiles of SELECTOR stored in the last 10 minutes, through the API.
# count SEL: how many profiles of SEL the API lists over the last 10 minutes
count() {
	curl -fsS -G "$api/api/v1/query_range" --data-urlencode "query=$1" \
		--data-urlencode "start=$(($(date +%s) - 600))" 2>/dev/null |
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
[ -n "$addr" ] || fail "the Go target did not start"

job() { # name, extra yaml lines
	cat <<EOC
  - job_name: $1
    static_configs:
      - targets: ['$addr']
    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}
EOC
}
header() {
	cat <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
EOC
}
{ header; job goapp; } >"$tmp/profd.yml"

start() {
	: >"$tmp/profd.log.cur"
	"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
		--web.listen-address=127.0.0.1:0 --log.level=debug --web.enable-lifecycle 2> >(tee -a "$tmp/profd.log" >"$tmp/profd.log.cur") &
	profd_pid=$!
	pids+=($profd_pid)
	wait_for 60 "profd did not start listening" listening
	api="http://127.0.0.1:$port"
}
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log.cur" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
start
wait_for 120 "no heap profiles of the Go target were stored" stored 'heap{job="goapp"}' 4

# the API while it runs
curl -fsS "$api/-/ready" >/dev/null || fail "/-/ready"
curl -fsS -G "$api/api/v1/query_range" --data-urlencode 'query=heap{job="goapp"}' \
	--data-urlencode "start=$(($(date +%s) - 60))" >"$tmp/qr.json" || fail "query_range"
grep -q '"status":"success"' "$tmp/qr.json" && grep -q '"timestamps":\[' "$tmp/qr.json" ||
	fail "query_range: $(head -c 300 "$tmp/qr.json")"
code=$(curl -s -o "$tmp/bad.json" -w '%{http_code}' -G "$api/api/v1/query_range" --data-urlencode 'query=heap{job=')
[ "$code" = 400 ] && grep -q '"errorType":"bad_data"' "$tmp/bad.json" || fail "a bad selector gave $code: $(cat "$tmp/bad.json")"
curl -fsS "$api/metrics" >"$tmp/metrics"
grep -q '^profd_scrapes_total{result="success"} [1-9]' "$tmp/metrics" || fail "/metrics: no successful scrapes counted"
grep -q '^profd_scrape_duration_seconds_count [1-9]' "$tmp/metrics" || fail "/metrics: no scrape duration histogram"
# scrapes commit lazily (no client waits for them): counted, at most one per
# stored scrape, and synced in the background
lazy=$(awk '/^profd_tsdb_wal_lazy_commits_total / {print $2}' "$tmp/metrics")
scraped=$(awk '/^profd_profiles_appended_total\{source="scrape"\} / {print $2}' "$tmp/metrics")
[ -n "$lazy" ] && [ "$lazy" -ge 1 ] && [ "$lazy" -le "${scraped:-0}" ] ||
	fail "/metrics: lazy WAL commits ${lazy:-missing}, scraped profiles ${scraped:-missing}"
# a profile through the API reads in go tool pprof exactly as the stored one
ts=$(grep -o '"timestamps":\[[0-9,]*' "$tmp/qr.json" | head -1 | sed 's/.*\[//; s/,.*//')
curl -fsS -G "$api/api/v1/query" --data-urlencode 'query=heap{job="goapp"}' \
	--data-urlencode "time=$((ts / 1000)).$(printf %03d $((ts % 1000)))" --data-urlencode report=proto \
	-o "$tmp/api.pb.gz" || fail "query report=proto"
"$profd" tsdb dump-profile "$tmp/data" 'heap{job="goapp"}' --time="$((ts / 1000)).$(printf %03d $((ts % 1000)))" \
	-o "$tmp/dump.pb.gz" 2>/dev/null || fail "dump-profile"
diff <(cd "$tmp" && go tool pprof -raw -symbolize=none api.pb.gz 2>&1) \
	<(cd "$tmp" && go tool pprof -raw -symbolize=none dump.pb.gz 2>&1) >/dev/null ||
	fail "the API's profile and the stored one differ under go tool pprof -raw"
curl -fsS -G "$api/api/v1/query" --data-urlencode 'query=goroutine{job="goapp"}' --data-urlencode mode=merge \
	--data-urlencode "start=$(($(date +%s) - 60))" --data-urlencode "end=$(date +%s)" --data-urlencode report=proto \
	-o "$tmp/merged.pb.gz" || fail "merge"
(cd "$tmp" && go tool pprof -top -symbolize=none merged.pb.gz >/dev/null 2>&1) || fail "go tool pprof cannot read the merge"

# reload over HTTP: a second job appears; the first keeps its loops. A third
# job's file_sd file is broken: the failure is logged with the file and line.
printf -- '- targets: [127.0.0.1:1\n' >"$tmp/broken_sd.yml"
{ header; job goapp; job second; cat <<EOC
  - job_name: broken_sd
    file_sd_configs:
      - files: ['$tmp/broken_sd.yml']
    profiling_config:
      pprof_config:
        profile: {enabled: false}
EOC
} >"$tmp/profd.yml"
reload1=$(date +%s%3N)
curl -fsS -X POST "$api/-/reload" >/dev/null || fail "POST /-/reload"
reload1_end=$(date +%s%3N)
# the reload kept the goapp loops: their status (last scrape, health) is still
# there. A loop made anew would be "unknown" until its first scrape ended, which
# is a tick away or more, and longer still on a loaded machine.
curl -fsS "$api/api/v1/targets" -o "$tmp/targets.json" || fail "GET /api/v1/targets"
kept=$(jq -r '[.data.activeTargets[] | select(.scrapePool == "goapp") | select(.health == "unknown" or (.lastScrape | startswith("0001-")))] | length' "$tmp/targets.json")
[ "$kept" = 0 ] || fail "after the reload, $kept loops of the goapp job start anew: $(jq -c '.data.activeTargets[] | select(.scrapePool == "goapp") | [.profileType, .health, .lastScrape]' "$tmp/targets.json")"
wait_for 120 "the reloaded job stored fewer than 2 goroutine profiles" stored 'goroutine{job="second"}' 2
broken_sd_logged() {
	grep -q "component=discovery msg=\"refreshing targets failed.*job=broken_sd" "$tmp/profd.log"
}
wait_for 60 "the broken file_sd file was not logged" broken_sd_logged
grep -q 'configuration reloaded' "$tmp/profd.log" || fail "no reload in the log"
grep -q "component=discovery msg=\"refreshing targets failed.*job=broken_sd provider=file/[0-9]* err=\"$tmp/broken_sd.yml:2:" "$tmp/profd.log" ||
	fail "the broken file_sd file was not logged"
curl -fsS "$api/metrics" >"$tmp/metrics2" || fail "/metrics"
grep -q '^prometheus_sd_file_read_errors_total [1-9]' "$tmp/metrics2" ||
	fail "/metrics: the file_sd read error is not counted: $(grep prometheus_sd_ "$tmp/metrics2")"
grep -q '^prometheus_sd_discovered_providers [1-9]' "$tmp/metrics2" || fail "/metrics: no discovery providers"

# a bad config is refused and scraping goes on
{ header; job goapp; job goapp; } >"$tmp/profd.yml"
reload2=$(date +%s%3N)
kill -HUP "$profd_pid"
wait_for 60 "the bad config was not refused" grep -q 'reload refused' "$tmp/profd.log"
reload2_end=$(date +%s%3N)
grep -q 'reload refused.*found multiple scrape configs with job name' "$tmp/profd.log" ||
	fail "the bad config was not refused with its reason"
# scraping goes on after both reloads: wait for two more heap profiles than
# were stored when the bad config was refused, and for at least 9 in all
after_refusal=$(count 'heap{job="goapp"}')
want=$((after_refusal + 2))
[ "$want" -ge 9 ] || want=9
wait_for 120 "scraping did not go on after the refused reload" stored 'heap{job="goapp"}' "$want"

kill -TERM "$profd_pid"
rc=0
wait "$profd_pid" || rc=$?
[ "$rc" = 0 ] || fail "profd exited with $rc on SIGTERM"
grep -q 'level=info component=main msg="stopped"' "$tmp/profd.log" || fail "no clean stop"

q() { "$profd" tsdb query "$tmp/data" "$1" --timestamps; }
q 'heap{job="goapp"}' >"$tmp/goapp.ts"
n=$(grep -c '^  ' "$tmp/goapp.ts" || true)
[ "$n" -ge 9 ] || fail "heap{job=\"goapp\"} has $n samples, want >= 9"
# one sample per 1 s tick, across both reloads: every step a whole number of
# ticks (no duplicate, the phase kept), and no tick missing at a reload (from 1 s
# before it to 3 s after it returned) while the daemon reports its scrapes of the
# target as fine. On a loaded machine scrapes time out (900 ms) and a tick that
# comes while the previous scrape of its loop still runs, or is still being
# stored, is skipped: anywhere in the series, such ticks are only counted. profd
# logs each failed scrape at debug level ("scrape failed"), a skipped tick not;
# a missing tick at a reload is a failure unless a scrape of this target (heap
# or goroutine: one event loop serves both) failed from 3 s before it to 5 s
# after it. On a quiet machine nothing fails and no tick goes missing at all.
{ grep -o '^ts=[^ ]* level=debug component=scrape msg="scrape failed" scrape_pool=goapp ' \
	"$tmp/profd.log" || true; } | sed 's/^ts=\([^ ]*\) .*/\1/' | while read -r t; do date -d "$t" +%s%3N; done >"$tmp/failed.ms"
grep '^  ' "$tmp/goapp.ts" | awk '{print $1}' >"$tmp/goapp.ms"
bad=$(awk -v r1="$reload1" -v e1="$reload1_end" -v r2="$reload2" -v e2="$reload2_end" '
	FILENAME == ARGV[1] {f[++nf] = $1; next}
	FNR > 1 {
		step = $1 - prev
		if (step <= 0 || step % 1000) { printf "a step of %.0f ms after %.0f; ", step, prev }
		for (t = prev + 1000; step > 1000 && t < $1; t += 1000) {
			if (!(t >= r1 - 1000 && t <= e1 + 3000) && !(t >= r2 - 1000 && t <= e2 + 3000))
				continue
			ok = 0
			for (i = 1; i <= nf; i++) if (f[i] >= t - 3000 && f[i] <= t + 5000) ok = 1
			if (!ok) printf "the tick at %.0f is missing, at a reload, with no scrape failing; ", t
		}
	}
	{prev = $1}' "$tmp/failed.ms" "$tmp/goapp.ms")
[ -z "$bad" ] || fail "the goapp series: $bad(reloads at $reload1-$reload1_end and $reload2-$reload2_end; failed scrapes of the target logged at: $(tr '\n' ' ' <"$tmp/failed.ms"))"
missing=$(awk 'NR > 1 && $1 - prev > 1000 {m += ($1 - prev) / 1000 - 1} {prev = $1} END {print m + 0}' "$tmp/goapp.ms")
grep -q 'instance="'"$addr"'", job="goapp"' "$tmp/goapp.ts" || fail "labels: $(head -1 "$tmp/goapp.ts")"
m=$(q 'goroutine{job="second"}' | grep -c '^  ' || true)
[ "$m" -ge 2 ] || fail "the reloaded job stored $m goroutine profiles"

# a stored profile opens in go tool pprof
last=$(grep '^  ' "$tmp/goapp.ts" | tail -1 | tr -d ' ')
"$profd" tsdb dump-profile "$tmp/data" 'heap{job="goapp"}' --time="$((last / 1000)).$(printf %03d $((last % 1000)))" \
	-o "$tmp/heap.pb.gz" 2>/dev/null
(cd "$tmp" && go tool pprof -top -symbolize=none heap.pb.gz >/dev/null 2>&1) || fail "go tool pprof cannot read a stored profile"

# a restart keeps everything and goes on appending
{ header; job goapp; } >"$tmp/profd.yml"
start
wait_for 120 "no new heap profile after the restart" stored 'heap{job="goapp"}' $((n + 1))
kill -TERM "$profd_pid"
wait "$profd_pid" || fail "profd exited with an error after the restart"
n2=$(q 'heap{job="goapp"}' | grep -c '^  ' || true)
[ "$n2" -gt "$n" ] || fail "after a restart the series has $n2 samples, before $n"
echo "daemon: $n samples before restart, $n2 after; reloads kept the series on its ticks ($missing missing beside $(wc -l <"$tmp/failed.ms") failed scrapes)"
