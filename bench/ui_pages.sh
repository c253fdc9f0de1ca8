#!/usr/bin/env bash
# bench/ui_pages.sh: the UI pages benchmark: how fast /compare is ready, how long
# hovering a merged flame graph takes a frame, and how much each page's layout
# shifts (bench/ui/pages.mjs says exactly what each figure is). Two profds hold the
# same profiles, one serving web/ as it is, one the web/ of a reference commit
# (--web.ui-dir), and Chromium measures both in the same run.
#
# Two workloads, both of real programs:
#   gc    CPU profiles of Go's compiler compiling standard packages (a large
#         program: their merge has over 1,000 functions), captured here with
#         -gcflags=PKG=-cpuprofile into PROFD_BUILD_DIR/bench-corpus/gc/ once
#   prom  the allocation profiles of the shared corpus (a Prometheus server, ../shared/corpus)
#
# usage: bench/ui_pages.sh PROFD_BUILD_DIR
#
# Environment:
#   BENCH_UI_REF=REV   the reference web/ (default 5687339, the UI before its
#                      speed work; any git revision)
#   BENCH_RUNS=N       repetitions per figure (default 5)
#   PD_CORPUS=DIR      the shared corpus (default ../shared/corpus)
#   CHROMIUM, PLAYWRIGHT_CORE as for bench/ui.sh
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR" >&2
	exit 2
fi
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
profd=$build/profd
ref=${BENCH_UI_REF:-5687339}
corpus=${PD_CORPUS:-$repo/../shared/corpus}
chromium=${CHROMIUM:-/usr/bin/chromium}
pw=${PLAYWRIGHT_CORE:-$repo/tests/browser/node_modules/playwright-core}

die() {
	echo "bench: $*" >&2
	exit 1
}
[ -x "$profd" ] || die "$profd not found: build profd first (make build)"
[ -x "$chromium" ] || die "no Chromium at $chromium (scripts/deps.sh --test installs it)"
[ -f "$pw/index.mjs" ] || die "no $pw (scripts/deps.sh --test installs it)"
command -v go >/dev/null || die "go not found (scripts/deps.sh installs it)"
[ -d "$corpus/prometheus/allocs" ] || die "no $corpus/prometheus/allocs (set PD_CORPUS)"
git -C "$repo" cat-file -e "$ref^{commit}" 2>/dev/null || die "BENCH_UI_REF=$ref is not a commit of $repo"

work=$(mktemp -d "${TMPDIR:-/tmp}/profd-uipages.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# the compiler's CPU profiles: a package each, compiled from a cold build cache so
# that the compiler runs
gc=$build/bench-corpus/gc
if [ ! -d "$gc" ]; then
	echo "bench: capturing the Go compiler's CPU profiles into $gc" >&2
	mkdir -p "$gc.part"
	for pkg in net/http go/types encoding/json crypto/tls text/template/parse debug/dwarf; do
		GOCACHE=$work/gocache GOFLAGS= go build -gcflags="$pkg=-cpuprofile=$gc.part/${pkg//\//_}.pprof" "$pkg" ||
			die "compiling $pkg with -cpuprofile failed"
	done
	mv "$gc.part" "$gc"
fi

git -C "$repo" archive "$ref" web | tar -x -C "$work" -f - && mv "$work/web" "$work/ref-web" ||
	die "extracting web/ of $ref failed"
printf 'global:\n  scrape_interval: 1m\nscrape_configs: []\n' >"$work/profd.yml"

start() { # name ui-dir: its URL in $work/name.url
	local log=$work/$1.log port='' deadline
	"$profd" run --config.file="$work/profd.yml" --storage.tsdb.path="$work/$1-data" \
		--web.listen-address=127.0.0.1:0 --web.ui-dir="$2" >/dev/null 2>"$log" &
	pids+=($!)
	deadline=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$deadline" ] && [ -z "$port" ]; do
		port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" | head -1)
		[ -n "$port" ] || sleep 0.1
	done
	[ -n "$port" ] || die "profd ($1) did not start: $(tail -3 "$log")"
	echo "http://127.0.0.1:$port" >"$work/$1.url"
}
start cur "$repo/web"
start ref "$work/ref-web"
cur=$(cat "$work/cur.url")
refu=$(cat "$work/ref.url")

# the same profiles into both, a minute apart, ending an hour ago
now=$(($(date +%s) - 3600))
push() { # labels file t(s)
	for u in "$cur" "$refu"; do
		curl -fsS -o /dev/null --data-binary @"$2" "$u/api/v1/profiles?labels=$(printf %s "$1" | jq -sRr @uri)&time=$3" ||
			die "pushing $2 to $u failed"
	done
}
command -v jq >/dev/null || die "jq not found (scripts/deps.sh --test installs it)"
workloads='['
add() { # name selector files...
	local name=$1 sel=$2 i=0 n t0 f
	shift 2
	n=$#
	t0=$((now - n * 60))
	for f in "$@"; do
		push "$sel" "$f" $((t0 + i * 60))
		i=$((i + 1))
	done
	[ "$workloads" = '[' ] || workloads+=','
	workloads+="{\"name\":\"$name\",\"query\":$(printf %s "$sel" | jq -Rs .),\"start\":$((t0 * 1000)),\"end\":$(((t0 + (n - 1) * 60) * 1000)),\"split\":$(((t0 + (n / 2 - 1) * 60) * 1000 + 30000))}"
}
add gc 'profile{job="gc"}' "$gc"/*.pprof
add prom 'allocs{job="prometheus"}' "$corpus"/prometheus/allocs/*.pb.gz
workloads+=']'

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu};" \
	"$("$chromium" --version 2>/dev/null | head -1); reference: web/ of $(git -C "$repo" log -1 --format='%h %cs' "$ref");" \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
PLAYWRIGHT_CORE=$pw CHROMIUM=$chromium node "$repo/bench/ui/pages.mjs" "$cur" "$refu" "$workloads"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
