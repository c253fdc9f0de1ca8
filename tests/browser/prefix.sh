#!/usr/bin/env bash
# prefix.sh: the web UI under a route prefix, through a reverse proxy, in a real
# browser. Starts serve_profiles (fixed profiles from testdata), a small reverse
# proxy (proxy.mjs) that passes /profd/ to profd with the path unchanged, and profd
# with --web.external-url=http://127.0.0.1:<proxy port>/profd/ only (so the route
# prefix comes from the URL's path), then drives Debian's Chromium through
# prefix.test.mjs. Screenshots go to OUT_DIR/browser-screenshots/prefix-*.png.
#
#   prefix.sh PROFD SERVE_PROFILES TESTDATA OUT_DIR
#
# Environment: CHROMIUM (default /usr/bin/chromium), PD_BROWSER_HEADED=1 to watch,
# PD_BROWSER_KEEP=1 to keep the temporary folder, PD_BROWSER_UI_DIR=DIR to serve the
# UI from DIR (--web.ui-dir) instead of the copy built into profd.
set -euo pipefail

if [ $# -ne 4 ]; then
	echo "usage: prefix.sh PROFD SERVE_PROFILES TESTDATA OUT_DIR" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
profd=$(realpath "$1")
serve=$(realpath "$2")
data=$(cd "$3" && pwd)
mkdir -p "$4"
out=$(cd "$4" && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}

[ -x "$chromium" ] || { echo "FAIL: no Chromium at $chromium (scripts/deps.sh installs Debian's chromium)"; exit 1; }
command -v node >/dev/null || { echo "FAIL: no node (scripts/deps.sh installs it)"; exit 1; }
[ -f "$here/node_modules/playwright-core/package.json" ] ||
	{ echo "FAIL: no $here/node_modules/playwright-core (run scripts/deps.sh, or npm ci in tests/browser)"; exit 1; }

# every process started here ends by itself after this long (ctest's TIMEOUT is 300 s)
limit=${PD_BROWSER_LIMIT:-280}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/profd-prefix.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ "$rc" -ne 0 ] && [ -s "$tmp/profd.log" ]; then
		echo "--- last lines of profd's log"
		tail -20 "$tmp/profd.log"
	fi
	if [ "${PD_BROWSER_KEEP:-}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export HOME=${HOME:-$tmp}
fail() { echo "FAIL: $*"; exit 1; }
# waits up to 60 s for a file to be non-empty
wait_file() {
	local deadline=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$deadline" ]; do [ -s "$1" ] && return 0; sleep 0.1; done
	return 1
}

g=$data/profiles/goapp
timeout --foreground -k 10 "$limit" "$serve" "$tmp/addr" "$tmp/served" \
	"/debug/pprof/heap=$g/heap.pb.gz,$g/heap-2.pb.gz,$g/heap-3.pb.gz" &
pids+=($!)
wait_file "$tmp/addr" || fail "serve_profiles did not start"
addr=$(cat "$tmp/addr")

timeout -k 10 "$limit" node "$here/proxy.mjs" "$tmp/proxy-port" "$tmp/upstream" "$tmp/outside.log" /profd "$limit" &
pids+=($!)
wait_file "$tmp/proxy-port" || fail "the proxy did not start"
proxy="http://127.0.0.1:$(cat "$tmp/proxy-port")"

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
        goroutine: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}
EOC
uidir=()
[ -n "${PD_BROWSER_UI_DIR:-}" ] && uidir=(--web.ui-dir="$PD_BROWSER_UI_DIR")
timeout --foreground -k 10 "$limit" "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --web.external-url="$proxy/profd/" "${uidir[@]}" 2>"$tmp/profd.log" &
pids+=($!)
port=
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ] && break
	kill -0 "${pids[2]}" 2>/dev/null || break
	sleep 0.1
done
[ -n "$port" ] || fail "profd did not start"
echo "127.0.0.1:$port" >"$tmp/upstream"

# a few scrapes, so that the timeline has marks to click
n=0
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
	n=$(grep -c '^/debug/pprof/heap ' "$tmp/served" || true)
	[ "$n" -ge 3 ] && break
	sleep 0.1
done
[ "$n" -ge 3 ] || fail "only $n heap scrapes after 60 s"

PD_PROXY=$proxy PD_DIRECT="http://127.0.0.1:$port" PD_OUTSIDE_LOG=$tmp/outside.log CHROMIUM=$chromium \
	PD_SCREENSHOTS=$out/browser-screenshots \
	timeout -k 10 "$limit" node --test-reporter=spec "$here/prefix.test.mjs"
