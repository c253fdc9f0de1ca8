#!/usr/bin/env bash
# bench/scrape.sh: runs scrape_bench, the scrape benchmark: thousands of loopback
# targets (libmicrohttpd in a child process) scraped by the engine alone and by the
# manager with a store: scrapes per second sustained, CPU per scrape against the
# bare gunzip + decode of the same bodies, and scrape start lateness (p50, p99).
# bench/README.md explains every table. Takes about 90 s with the defaults.
#
# usage: bench/scrape.sh PROFD_BUILD_DIR [scrape_bench options, e.g. --intervals 2000]
#        (`make build` builds build/release; PD_BENCH=ON and libmicrohttpd build
#        the program)
#
# Environment:
#   PD_CORPUS=DIR     the corpus (default: shared/corpus/prometheus beside the repo);
#                     its heap, goroutine and cpu folders are served
#   PD_BENCH_DIR=DIR  where the manager runs' temporary stores go (default:
#                     PROFD_BUILD_DIR); a few hundred MB at most
# The program raises its open-file limit (RLIMIT_NOFILE) to the hard limit itself:
# each target can hold a socket on both sides.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [scrape_bench options]" >&2
	exit 2
fi
build=$(realpath "$1")
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/scrape_bench
corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}

die() {
	echo "bench: $*" >&2
	exit 1
}

[ -x "$bin" ] || die "$bin not found: configure with -DPD_BENCH=ON (libmicrohttpd installed) and build"
[ -d "$corpus" ] || die "corpus $corpus not found (set PD_CORPUS to the folder of per-type profile folders)"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ "$type" != Release ]; then
	echo "bench: warning: $build is a '${type:-unknown}' build; measure a Release build" >&2
fi
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi

parent=${PD_BENCH_DIR:-$build}
work=$(mktemp -d "$parent/scrape-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu}, ${mem:-?} RAM," \
	"$(uname -sr); libcurl $(curl-config --version 2>/dev/null | cut -d' ' -f2 || echo '?')," \
	"libmicrohttpd $(pkg-config --modversion libmicrohttpd 2>/dev/null || echo '?'); build: $build (${type:-unknown});" \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
start=$(date +%s)
"$bin" --corpus "$corpus" --dir "$work" "$@"
echo "total $(($(date +%s) - start)) s"
