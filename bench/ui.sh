#!/usr/bin/env bash
# bench/ui.sh: the web UI benchmark. Draws the timeline (web/js/timeline.js), the values
# chart (web/js/chart.js, beside the timeline of the same series) and the
# flame graph (web/js/flame.js) in Debian's headless Chromium at 1280x800, driven
# through bench/ui/harness.html, each beside the straightforward DOM drawing of the
# same input in the same page: one SVG <rect> per timeline mark, one absolutely
# positioned <div> per flame frame. bench/README.md ("Web UI") explains the tables.
# About 5 minutes (most of it the SVG reference of 600,000 marks).
#
# usage: bench/ui.sh PROFD_BUILD_DIR
#        (its profd writes the flame graph JSON of the real profile:
#        `profd pprof flame testdata/profiles/goapp/cpu-large.pb.gz`)
#
# Environment:
#   BENCH_RUNS=N          repetitions per figure (default 15; the slow references stop
#                         after 12 s of repetitions, but never under 3)
#   BENCH_SYNTH_NODES=N   nodes of the synthetic flame tree (default 100000)
#   BENCH_UI_CASES=LIST   timeline, chart, flame, comma-separated (default all three)
#   CHROMIUM=PATH         the browser (default /usr/bin/chromium)
#   PLAYWRIGHT_CORE=DIR   playwright-core (default tests/browser/node_modules/playwright-core)
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR" >&2
	exit 2
fi
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
profd=$build/profd
chromium=${CHROMIUM:-/usr/bin/chromium}
pw=${PLAYWRIGHT_CORE:-$repo/tests/browser/node_modules/playwright-core}
profile=$repo/testdata/profiles/goapp/cpu-large.pb.gz

die() {
	echo "bench: $*" >&2
	exit 1
}

[ -x "$profd" ] || die "$profd not found: build profd first (make build)"
[ -x "$chromium" ] || die "no Chromium at $chromium (Debian package chromium; scripts/deps.sh installs it)"
command -v node >/dev/null || die "no node (scripts/deps.sh installs it)"
[ -f "$pw/index.mjs" ] || die "no $pw (run scripts/deps.sh, or npm ci in tests/browser)"
[ -f "$profile" ] || die "$profile not found: the flame graph case needs this real profile"

work=$(mktemp -d "${TMPDIR:-/tmp}/profd-uibench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/data"
"$profd" pprof flame "$profile" >"$work/data/cpu-large.json"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu}, $(uname -sr);" \
	"$("$chromium" --version 2>/dev/null | head -1 || echo 'chromium ?'), node $(node --version);" \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
# the static server (web/ at /, bench/ui/ at /bench/, the JSON at /data/) runs inside
# run.mjs on a free 127.0.0.1 port and ends with it
PLAYWRIGHT_CORE=$pw CHROMIUM=$chromium node "$repo/bench/ui/run.mjs" "$repo/web" "$work/data"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
