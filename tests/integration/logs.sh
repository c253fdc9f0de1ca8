#!/usr/bin/env bash
# logs.sh: profd's log lines keep their values in key=value fields, not in msg,
# in logfmt and in JSON (--log.format=json): a configuration reload
# (scrape_configs=N), and a scrape failure at debug level (scrape_pool, target,
# profile, err), against profd itself with a path that answers 404. The line of
# a block written is checked by cli_tsdb_import_duplicates.
#
#   logs.sh PROFD
set -euo pipefail

profd=$(realpath "$1")
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/none.log
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$log" 2>/dev/null; exit 1; }
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
# start FORMAT: profd on a free loopback port, debug logs in FORMAT to FORMAT.log;
# sets $api, $addr, $log and $profd_pid
start() {
	log=$tmp/$1.log
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n' >"$tmp/profd.yml"
	timeout --foreground 120 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data-$1" \
		--web.listen-address=127.0.0.1:0 --log.level=debug --log.format="$1" \
		--web.enable-lifecycle 2>"$log" &
	profd_pid=$!
	pids+=("$profd_pid")
	if [ "$1" = json ]; then
		listening() { port=$(sed -n 's/.*"msg":"listening".*"port":"\([0-9]*\)".*/\1/p' "$log" 2>/dev/null | head -1 || true); [ -n "$port" ]; }
	else
		listening() { port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1 || true); [ -n "$port" ]; }
	fi
	wait_for 60 "profd did not start listening" listening
	addr=127.0.0.1:$port
	api=http://$addr
}
# scrape_self: a job scraping profd's own /debug/pprof/nope (404), then a reload
scrape_self() {
	cat >"$tmp/profd.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: self
    static_configs:
      - targets: ['$addr']
    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        threadcreate: {enabled: false}
        profile: {enabled: false}
        heap: {path: /debug/pprof/nope}
EOC
	curl -fsS -X POST "$api/-/reload" >/dev/null || fail "POST /-/reload"
}

# ---- logfmt ------------------------------------------------------------------
start logfmt
scrape_self
reloaded() { grep -q 'level=info component=config msg="configuration reloaded" scrape_configs=1$' "$log"; }
wait_for 30 "no reload line with scrape_configs=1" reloaded
failed() { grep -q "level=debug component=scrape msg=\"scrape failed\" scrape_pool=self target=http://$addr/debug/pprof/nope profile=heap err=\"[^\"]*404" "$log"; }
wait_for 60 "no scrape failure line with its fields" failed
grep -q 'msg="[^"]*[0-9]' "$log" && fail "a value inside msg: $(grep 'msg="[^"]*[0-9]' "$log" | head -3)"
grep -m1 'msg="scrape failed"' "$log"
grep -m1 'msg="configuration reloaded"' "$log"
kill "$profd_pid"
wait "$profd_pid" 2>/dev/null || true

# ---- JSON --------------------------------------------------------------------
start json
scrape_self
reloaded() { grep -q '"level":"info","component":"config","msg":"configuration reloaded","scrape_configs":"1"}$' "$log"; }
wait_for 30 "no JSON reload line with scrape_configs" reloaded
failed() { grep -q "\"level\":\"debug\",\"component\":\"scrape\",\"msg\":\"scrape failed\",\"scrape_pool\":\"self\",\"target\":\"http://$addr/debug/pprof/nope\",\"profile\":\"heap\",\"err\":\"[^\"]*404" "$log"; }
wait_for 60 "no JSON scrape failure line with its fields" failed
grep -q '"msg":"listening","address":"127.0.0.1:0","port":"[0-9]*","tls":"off"}$' "$log" ||
	fail "the JSON listening line: $(grep -m1 listening "$log")"
grep -m1 '"msg":"scrape failed"' "$log"
echo PASS
