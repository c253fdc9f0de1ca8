#!/usr/bin/env bash
# selfprof.sh: profd profiles itself. The daemon under test (the sanitizer build
# in `make test`) serves /debug/pprof/profile while pushes and queries keep it
# busy; go tool pprof reads the profile and finds profd's own functions by name,
# without symbolizing anything itself. A second CPU profile at the same time is
# refused, bad `seconds` are 400s, the index, the redirect and cmdline answer;
# go tool pprof -raw reads profile and heap by URL from the running daemon,
# /debug/pprof/symbol names profd's own addresses.
# Then profd scrapes itself (a job whose target is its own address) and the
# series shows up in query_range. The heap profile is checked in whichever
# binary has it: the one under test, else the release binary given second (a
# sanitizer build answers 501, which is checked too).
#
#   selfprof.sh PROFD [RELEASE_PROFD]
set -euo pipefail

profd=$(realpath "$1")
release=${2:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
data=$here/testdata/profiles/goapp
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail() {
	echo "FAIL: $*"
	tail -20 "$tmp"/*.log 2>/dev/null || true
	exit 1
}
top() { (cd "$tmp" && go tool pprof -top -nodefraction=0 -symbolize=none "$@" 2>&1); }

# start NAME BINARY [FLAGS...]: starts a daemon on a free loopback port with an
# empty configuration; it stops by itself after three minutes. Sets $api.
start() {
	local name=$1 bin=$2 port=""
	shift 2
	printf 'global:\n  scrape_interval: 2s\n  scrape_timeout: 1500ms\n' >"$tmp/$name.yml"
	timeout --foreground 180 "$bin" run --config.file="$tmp/$name.yml" --storage.tsdb.path="$tmp/$name-data" \
		--web.listen-address=127.0.0.1:0 "$@" 2>"$tmp/$name.log" &
	pids+=($!)
	for _ in $(seq 100); do
		port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/$name.log" 2>/dev/null | head -1 || true)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || fail "$name did not start"
	api="http://127.0.0.1:$port"
}

# load API SECONDS: pushes and queries profiles for that long
load() {
	local api=$1 end=$((SECONDS + $2)) i=0
	while [ $SECONDS -lt $end ]; do
		i=$((i + 1))
		# dated now, which the queries below ask for (the file's own date
		# falls behind the retention time of a daemon that scrapes itself)
		curl -s -o /dev/null --data-binary "@$data/cpu-large.pb.gz" \
			"$api/api/v1/profiles?labels=profile%7Bjob%3D%22load%22%2Cinstance%3D%22i$i%22%7D&time=$(date +%s)" || true
		curl -s -o /dev/null -G "$api/api/v1/query" --data-urlencode "query=profile{job=\"load\",instance=\"i$i\"}" \
			--data-urlencode report=top --data-urlencode time="$(date +%s)" || true
	done
}

# status URL [OUT]: the HTTP status of a GET
status() { curl -s -o "${2:-/dev/null}" -w '%{http_code}' "$1"; }

# ---- the CPU profile of the binary under test ------------------------------
start main "$profd" --web.enable-lifecycle # its configuration is reloaded below
main_api=$api
load "$main_api" 6 &
loader=$!
pids+=($loader)
sleep 0.5
# a 3 s CPU profile, and a second one asked while it runs must be refused; the
# second is asked once curl has sent the first request (its trace says so); on a
# loaded machine the first may still start late (the second then runs first and
# may refuse it instead), so the pair is tried until the overlap is the intended one
for attempt in 1 2 3 4 5 6 7 8; do
	rm -f "$tmp/cpu.trace"
	curl -s --trace-ascii "$tmp/cpu.trace" -D "$tmp/cpu.h" -o "$tmp/cpu.pb.gz" \
		"$main_api/debug/pprof/profile?seconds=3" &
	first=$!
	code=
	sent_by=$((SECONDS + 20))
	until grep -q '^=> Send header' "$tmp/cpu.trace" 2>/dev/null || ! kill -0 "$first" 2>/dev/null; do
		[ $SECONDS -lt $sent_by ] || fail "curl did not send the CPU profile request within 20 s"
		sleep 0.02
	done
	while kill -0 "$first" 2>/dev/null; do
		code=$(status "$main_api/debug/pprof/profile?seconds=1" "$tmp/second.txt")
		[ "$code" = 500 ] && break
	done
	wait $first
	[ "$code" = 500 ] && grep -qi '^HTTP/1.1 200' "$tmp/cpu.h" && break
done
[ "$code" = 500 ] || fail "a second CPU profile at the same time answered $code"
grep -q "Could not enable CPU profiling: cpu profiling already in use" "$tmp/second.txt" ||
	fail "a second CPU profile: $(cat "$tmp/second.txt")"
grep -qi '^HTTP/1.1 200' "$tmp/cpu.h" || fail "CPU profile: $(head -1 "$tmp/cpu.h")"
grep -qi '^content-type: application/octet-stream' "$tmp/cpu.h" || fail "CPU profile content type"
[ "$(head -c2 "$tmp/cpu.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "CPU profile is not gzip"
top "$tmp/cpu.pb.gz" >"$tmp/cpu.top"
grep -q '^Type: cpu' "$tmp/cpu.top" || fail "go tool pprof: $(head -5 "$tmp/cpu.top")"
grep -q '^Duration: 3' "$tmp/cpu.top" || fail "duration: $(grep Duration "$tmp/cpu.top")"
# profd's own functions, named by profd (go tool pprof symbolized nothing)
grep -Eq ' (pd_|api_)[a-z_0-9]+$' "$tmp/cpu.top" || fail "no profd function in the CPU profile:
$(head -30 "$tmp/cpu.top")"
echo "CPU profile of $(basename "$profd"):"
sed -n '/^Duration/,$p' "$tmp/cpu.top" | sed -n 1,15p
kill $loader 2>/dev/null || true

# ---- go tool pprof by URL, and /debug/pprof/symbol ------------------------------
# go tool pprof fetches from the daemon itself and POSTs the addresses it cannot
# name to /debug/pprof/symbol (a 405 there made it fail); -raw must succeed
load "$main_api" 4 &
pids+=($!)
out=$(cd "$tmp" && go tool pprof -raw "$main_api/debug/pprof/profile?seconds=2" 2>&1) ||
	fail "go tool pprof -raw $main_api/debug/pprof/profile: $out"
grep -q '^PeriodType: cpu nanoseconds' <<<"$out" || fail "go tool pprof -raw by URL: $(head -5 <<<"$out")"
echo "go tool pprof -raw $main_api/debug/pprof/profile?seconds=2: $(grep -c ' M=' <<<"$out") locations"
# the endpoint as net/http/pprof serves it: GET alone, then addresses by POST and
# by GET, each named as profd names it in its own profile; junk is skipped
[ "$(curl -fsS "$main_api/debug/pprof/symbol")" = "num_symbols: 1" ] || fail "GET /debug/pprof/symbol"
read -r addr name < <(go tool pprof -raw -symbolize=none "$tmp/cpu.pb.gz" 2>/dev/null |
	sed -n '/^Locations/,/^Mappings/p' | awk '$2 ~ /^0x/ && $4 ~ /^(pd_|api_)/ {print $2, $4; exit}')
[ -n "${addr:-}" ] || fail "no profd function among the CPU profile's locations"
sym=$(curl -fsS --data-binary "$addr+junk+0x1+$addr" "$main_api/debug/pprof/symbol") || fail "POST /debug/pprof/symbol"
[ "$sym" = "num_symbols: 1
$addr $name
$addr $name" ] || fail "POST /debug/pprof/symbol $addr (want $name): $sym"
sym=$(curl -fsS "$main_api/debug/pprof/symbol?$addr") || fail "GET /debug/pprof/symbol?$addr"
[ "$sym" = "num_symbols: 1
$addr $name" ] || fail "GET /debug/pprof/symbol?$addr (want $name): $sym"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$main_api/debug/pprof/heap")" = 405 ] ||
	fail "POST /debug/pprof/heap is not 405"
echo "/debug/pprof/symbol names $addr $name"

# bad durations name the parameter
for s in 0 301 abc -5; do
	code=$(status "$main_api/debug/pprof/profile?seconds=$s" "$tmp/bad.txt")
	[ "$code" = 400 ] || fail "seconds=$s answered $code"
	grep -q 'invalid parameter "seconds"' "$tmp/bad.txt" || fail "seconds=$s: $(cat "$tmp/bad.txt")"
done

# index, redirect, cmdline, unknown profiles
[ "$(status "$main_api/debug/pprof/" "$tmp/index.html")" = 200 ] || fail "index"
grep -q 'href="profile"' "$tmp/index.html" && grep -q 'href="heap?debug=0"' "$tmp/index.html" ||
	fail "the index does not list profile and heap"
[ "$(status "$main_api/debug/pprof")" = 301 ] || fail "/debug/pprof does not redirect"
[ "$(status "$main_api/debug/pprof/cmdline" "$tmp/cmdline")" = 200 ] || fail "cmdline"
grep -q " run --config.file=" <<<"$(tr '\0' ' ' <"$tmp/cmdline")" || fail "cmdline: $(tr '\0' ' ' <"$tmp/cmdline")"
[ "$(status "$main_api/debug/pprof/goroutine")" = 404 ] || fail "an unknown profile is not 404"

# ---- the heap profile ------------------------------------------------------
# check_heap API: the heap and allocs profiles of a binary that has them
check_heap() {
	local api=$1
	load "$api" 2
	[ "$(status "$api/debug/pprof/heap" "$tmp/heap.pb.gz")" = 200 ] || fail "heap: $(cat "$tmp/heap.pb.gz")"
	top "$tmp/heap.pb.gz" >"$tmp/heap.top"
	local out
	out=$(cd "$tmp" && go tool pprof -raw "$api/debug/pprof/heap" 2>&1) ||
		fail "go tool pprof -raw $api/debug/pprof/heap: $out"
	grep -q '^PeriodType: space bytes' <<<"$out" || fail "go tool pprof -raw heap by URL: $(head -5 <<<"$out")"
	grep -q '^Type: inuse_space' "$tmp/heap.top" || fail "heap: $(head -5 "$tmp/heap.top")"
	top -sample_index=alloc_space "$tmp/heap.pb.gz" >"$tmp/heap-alloc.top"
	grep -Eq ' (pd_|api_|sp_)[a-z_0-9]+$' "$tmp/heap-alloc.top" ||
		fail "no profd function in the heap profile:
$(head -30 "$tmp/heap-alloc.top")"
	[ "$(status "$api/debug/pprof/allocs" "$tmp/allocs.pb.gz")" = 200 ] || fail "allocs"
	grep -q '^Type: alloc_space' <<<"$(top "$tmp/allocs.pb.gz")" || fail "allocs is not alloc_space first"
	echo "heap profile (alloc_space):"
	sed -n '/^Showing/,$p' "$tmp/heap-alloc.top" | sed -n 1,12p
}
code=$(status "$main_api/debug/pprof/heap" "$tmp/heap.txt")
if [ "$code" = 501 ]; then
	grep -q "heap profiling is not available in a sanitizer build" "$tmp/heap.txt" ||
		fail "heap in a sanitizer build: $(cat "$tmp/heap.txt")"
	if [ -n "$release" ] && [ -x "$release" ]; then
		start release "$release"
		code=$(status "$api/debug/pprof/heap" "$tmp/heap.txt")
		if [ "$code" = 404 ]; then
			echo "SKIP: $release has no /debug/pprof/heap (built before self-profiling?)"
		else
			check_heap "$api"
		fi
	else
		echo "SKIP: heap profile (sanitizer build, and no release binary at '$release')"
	fi
else
	[ "$code" = 200 ] || fail "heap answered $code: $(cat "$tmp/heap.txt")"
	check_heap "$main_api"
fi

# ---- profd scrapes itself --------------------------------------------------
cat >"$tmp/main.yml" <<EOC
global:
  scrape_interval: 2s
  scrape_timeout: 1500ms
scrape_configs:
  - job_name: self
    static_configs:
      - targets: ['${main_api#http://}']
    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        heap: {enabled: false}
        mutex: {enabled: false}
        threadcreate: {enabled: false}
        profile: {seconds: 1}
EOC
curl -fsS -X POST "$main_api/-/reload" >/dev/null || fail "reload"
n=0
for _ in $(seq 60); do
	curl -fsS -G "$main_api/api/v1/query_range" --data-urlencode 'query=profile{job="self"}' \
		--data-urlencode "start=$(($(date +%s) - 120))" >"$tmp/qr.json"
	n=$(grep -o '"timestamps":\[[0-9,]*' "$tmp/qr.json" | sed 's/.*\[//' | tr ',' '\n' | grep -c . || true)
	[ "$n" -ge 2 ] && break
	sleep 0.5
done
[ "$n" -ge 2 ] || fail "profd did not scrape itself: $(cat "$tmp/qr.json")"
grep -q "\"instance\":\"${main_api#http://}\"" "$tmp/qr.json" || fail "self-scrape labels: $(cat "$tmp/qr.json")"
curl -fsS -G "$main_api/api/v1/query" --data-urlencode 'query=profile{job="self"}' \
	--data-urlencode report=proto -o "$tmp/self.pb.gz" || fail "query the self-scraped profile"
grep -q '^Type: cpu' <<<"$(top "$tmp/self.pb.gz")" || fail "the self-scraped profile: $(top "$tmp/self.pb.gz" | head -5)"
echo "profd scraped itself: $n CPU profiles"
echo "PASS"
