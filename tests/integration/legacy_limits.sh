#!/usr/bin/env bash
# legacy_limits.sh: profd run's --legacy-max-stack-depth and --legacy-max-line
# bound the legacy profiles it scrapes and is pushed, as they bound profd
# pprof's. With a depth of 5 and lines of 250 bytes: a scraped gperftools heap
# profile (stacks of 11 frames) fails its scrape naming the flag, while a Go
# goroutine count profile (3 frames) beside it is stored; pushes of a gperftools
# binary CPU profile (deep stacks) and of a Java contention profile (lines of
# 329 bytes) are refused with 413 naming the flag; a goroutine count profile
# pushed is stored.
#
#   legacy_limits.sh PROFD SERVE_PROFILES TESTDATA
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
fail() { echo "FAIL: $*"; tail -20 "$tmp/profd.log" 2>/dev/null; echo "0 passed, 1 failed"; exit 1; }
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}

l=$data/legacy
"$serve" "$tmp/addr" "$tmp/served" "/debug/pprof/heap=$l/cppbench.heap" \
	"/debug/pprof/goroutine=$l/goroutine.txt.count" &
pids+=($!)
wait_for 60 "the profile server did not start" test -s "$tmp/addr"
addr=$(cat "$tmp/addr")
cat >"$tmp/profd.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: served
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
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --legacy-max-stack-depth=5 --legacy-max-line=250 \
	2>"$tmp/profd.log" &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start" listening
api="http://127.0.0.1:$port"
checks=0

stored() { curl -fsS -G "$api/api/v1/series" --data-urlencode "match[]=$1" 2>/dev/null | grep -q '"__name__"'; }
heap_error() {
	curl -fsS "$api/api/v1/targets" -o "$tmp/targets.json" || return 1
	jq -r '.data.activeTargets[] | select(.scrapeUrl | endswith("/debug/pprof/heap")) | .lastError' \
		"$tmp/targets.json" >"$tmp/heap.err"
	grep -qF 'a stack of more than 5 frames (--legacy-max-stack-depth)' "$tmp/heap.err"
}
wait_for 60 "the goroutine count profile scrape was not stored" stored 'goroutine{job="served"}'
wait_for 60 "the heap scrape did not fail naming --legacy-max-stack-depth" heap_error
stored 'heap{job="served"}' && fail "the heap profile past --legacy-max-stack-depth was stored"
checks=$((checks + 2))

now=$(date +%s)
push() { # FILE TYPE: the status; the answer in $tmp/push.json
	curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$1" \
		"$api/api/v1/profiles?labels=$2%7Bjob%3D%22pushed%22%7D&time=$now"
}
gzip -c "$l/cppbench.cpu" >"$tmp/cpu.gz"
code=$(push "$tmp/cpu.gz" cpu)
[ "$code" = 413 ] || fail "a gperftools CPU profile with deep stacks answered $code: $(cat "$tmp/push.json")"
grep -qF 'more than the limit of 5 (--legacy-max-stack-depth)' "$tmp/push.json" ||
	fail "the refused CPU profile's answer does not name the flag: $(cat "$tmp/push.json")"
code=$(push "$l/java.contention" contention)
[ "$code" = 413 ] || fail "a Java contention profile with long lines answered $code: $(cat "$tmp/push.json")"
grep -qF 'longer than the limit of 250 bytes (--legacy-max-line)' "$tmp/push.json" ||
	fail "the refused Java profile's answer does not name the flag: $(cat "$tmp/push.json")"
code=$(push "$l/goroutine.txt.count" goroutine)
[ "$code" = 200 ] || fail "a goroutine count profile within the limits answered $code: $(cat "$tmp/push.json")"
stored 'goroutine{job="pushed"}' || fail "the pushed goroutine count profile was not stored"
checks=$((checks + 3))
echo "legacy_limits: $checks checks"
echo "1 passed, 0 failed"
