#!/usr/bin/env bash
# run.sh: the web UI in a real browser. Starts a scrape target that serves fixed
# profiles from testdata (tests/support/serve_profiles) and profd scraping it every
# second with the UI built into the binary (PD_BROWSER_UI_DIR=1 serves WEB_DIR
# from disk instead, for working on web/ without rebuilding), then drives Debian's Chromium through
# ui.test.mjs (playwright-core): query, timeline, profile view, diff, download,
# targets and status pages, dark theme, empty and error states. Each step leaves a
# screenshot in OUT_DIR/browser-screenshots/NN-step.png.
#
#   run.sh PROFD SERVE_PROFILES TESTDATA WEB_DIR OUT_DIR [TEST.mjs]
#
# TEST.mjs (default ui.test.mjs) is the file of steps to run against that profd: other
# views have files of their own, each a ctest of its own (tests/browser.cmake), whose
# screenshots go to OUT_DIR/browser-screenshots-NAME/ (NAME: the file without .test.mjs).
#
# Environment: CHROMIUM (default /usr/bin/chromium), PD_BROWSER_HEADED=1 to watch,
# PD_BROWSER_KEEP=1 to keep the temporary folder (logs, data, downloads).
# PD_BROWSER_CLICKHOUSE=1 (set only by browser_clickhouse) also starts Debian's
# clickhouse-server (tests/support/clickhouse.sh) and runs profd with
# --storage.clickhouse.url pointing at it, stopped on exit; the steps get its URL
# as PD_CLICKHOUSE_URL and its process as PD_CLICKHOUSE_PID (the last step stops it).
set -euo pipefail

if [ $# -ne 5 ] && [ $# -ne 6 ]; then
	echo "usage: run.sh PROFD SERVE_PROFILES TESTDATA WEB_DIR OUT_DIR [TEST.mjs]" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
profd=$(realpath "$1")
serve=$(realpath "$2")
data=$(cd "$3" && pwd)
web=$(cd "$4" && pwd)
mkdir -p "$5"
out=$(cd "$5" && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
steps=${6:-ui.test.mjs}
[ -f "$here/$steps" ] || { echo "FAIL: no $here/$steps"; exit 1; }
shots=$out/browser-screenshots
[ "$steps" = ui.test.mjs ] || shots=$out/browser-screenshots-${steps%.test.mjs}

# what the test needs, installed by scripts/deps.sh
[ -x "$chromium" ] || { echo "FAIL: no Chromium at $chromium (scripts/deps.sh installs Debian's chromium)"; exit 1; }
command -v node >/dev/null || { echo "FAIL: no node (scripts/deps.sh installs it)"; exit 1; }
[ -f "$here/node_modules/playwright-core/package.json" ] ||
	{ echo "FAIL: no $here/node_modules/playwright-core (run scripts/deps.sh, or npm ci in tests/browser)"; exit 1; }
[ -f "$web/index.html" ] || { echo "FAIL: no $web/index.html"; exit 1; }

# every process started here ends by itself after this long (SIGKILL 10 s after
# SIGTERM), even if this script is killed without a chance to clean up (ctest's
# TIMEOUT is 600 s: the steps take 2.5 min alone, about 5 on a loaded 2-core machine)
limit=${PD_BROWSER_LIMIT:-560}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/profd-browser.XXXXXX")
pids=()
clickhouse=${PD_BROWSER_CLICKHOUSE:-0}
if [ "$clickhouse" = 1 ]; then
	# shellcheck source=tests/support/clickhouse.sh
	. "$here/../support/clickhouse.sh"
fi
cleanup() {
	local rc=$?
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ "$clickhouse" = 1 ] && ch_stop
	if [ "$rc" -ne 0 ] && [ -s "$tmp/profd.log" ]; then
		echo "--- last lines of profd's log"
		tail -20 "$tmp/profd.log"
	fi
	if [ "${PD_BROWSER_KEEP:-}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail() { echo "FAIL: $*"; exit 1; }

# the target: heap rotates through three captures of a growing leak (so two marks
# differ and a diff shows the growth), goroutine is one fixed file
g=$data/profiles/goapp
timeout --foreground -k 10 "$limit" "$serve" "$tmp/addr" "$tmp/served" "/debug/pprof/heap=$g/heap.pb.gz,$g/heap-2.pb.gz,$g/heap-3.pb.gz" \
	"/debug/pprof/goroutine=$g/goroutine.pb.gz" &
pids+=($!)
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do [ -s "$tmp/addr" ] && break; sleep 0.1; done
[ -s "$tmp/addr" ] || fail "serve_profiles did not start"
addr=$(cat "$tmp/addr")

# a second pool whose target refuses connections, for the targets page's health
only='    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}'
cat >"$tmp/profd.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: served
    static_configs:
      - targets: ['$addr']
$only
  - job_name: unreachable
    static_configs:
      - targets: ['127.0.0.1:9']
$only
EOC
uidir=()
[ "${PD_BROWSER_UI_DIR:-0}" = 1 ] && uidir=(--web.ui-dir="$web")
storage=()
CH_URL=
if [ "$clickhouse" = 1 ]; then
	ch_start "$tmp/ch" "$limit" || fail "clickhouse-server did not start"
	storage=(--storage.clickhouse.url="$CH_URL")
fi
timeout --foreground -k 10 "$limit" "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 "${uidir[@]}" "${storage[@]}" 2>"$tmp/profd.log" &
pids+=($!)
port=
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ] && break
	kill -0 "${pids[1]}" 2>/dev/null || break
	sleep 0.1
done
[ -n "$port" ] || fail "profd did not start"
url="http://127.0.0.1:$port"

# a few scrapes, so that the timeline has marks to click
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
	n=$(grep -c '^/debug/pprof/heap ' "$tmp/served" || true)
	[ "$n" -ge 5 ] && break
	sleep 0.1
done
[ "$n" -ge 5 ] || fail "only $n heap scrapes after 60 s"
sleep 0.5

PD_URL=$url PD_CLICKHOUSE_URL=$CH_URL PD_CLICKHOUSE_PID=${CH_PID:-} PD_SERVED_LOG=$tmp/served PD_TMP=$tmp PD_PROFD=$profd CHROMIUM=$chromium \
	PD_SCREENSHOTS=$shots \
	timeout -k 10 "$limit" node --test-reporter=spec "$here/$steps"
