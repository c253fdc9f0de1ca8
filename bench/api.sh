#!/usr/bin/env bash
# bench/api.sh: runs api_bench, the HTTP API benchmark: two stores of the same
# 1,000 series x 1,000 real profiles, value encoding 2 (the default) and 1, each
# served by the real API server on loopback, measured with libcurl: query_range
# over everything (latency, bytes, plain and gzip), single profile fetches from the
# head and from blocks (p50, p99, max), and merges of 100 and 1,000 profiles
# against `go tool pprof -proto` on the same files, with a check that the merges
# agree, and the aims printed as yes/no. bench/README.md explains every table.
# About 5 minutes.
#
# usage: bench/api.sh PROFD_BUILD_DIR [api_bench options, e.g. --fetches 200,
#        --sections fetch]
#        (`make build` builds build/release; PD_BENCH=ON builds the program)
#
# Environment:
#   PD_CORPUS=DIR     the corpus (default: shared/corpus/prometheus beside the repo)
#   PD_CORPUS2=DIR    a second corpus whose heap profiles join the stores and the
#                     merges (default: PROFD_BUILD_DIR/bench-corpus/goapp, captured
#                     there by bench/capture.sh when missing, about 2.5 minutes, as
#                     bench/tsdb.sh does); PD_CORPUS2= (empty) skips it
#   PD_BENCH_DIR=DIR  where the temporary stores and files go (default:
#                     PROFD_BUILD_DIR, a real disk rather than a tmpfs /tmp); about 1.6 GB at peak
#   GO=go             the go command whose `go tool pprof` is the reference
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [api_bench options]" >&2
	exit 2
fi
build=$(realpath "$1")
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/api_bench
corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}
go=${GO:-go}

die() {
	echo "bench: $*" >&2
	exit 1
}

[ -x "$bin" ] || die "$bin not found: configure with -DPD_BENCH=ON (libmicrohttpd, libcurl installed) and build"
[ -d "$corpus" ] || die "corpus $corpus not found (set PD_CORPUS to the folder of per-type profile folders)"
command -v "$go" >/dev/null || die "'$go' not found: the reference is go tool pprof (Debian package golang-go)"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ "$type" != Release ]; then
	echo "bench: warning: $build is a '${type:-unknown}' build; measure a Release build" >&2
fi
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi

corpus2_args=()
if [ -n "${PD_CORPUS2-$build/bench-corpus/goapp}" ]; then
	corpus2=${PD_CORPUS2:-$build/bench-corpus/goapp}
	if [ ! -d "$corpus2" ]; then
		echo "bench: capturing the second corpus into $corpus2 (bench/capture.sh)" >&2
		mkdir -p "$(dirname "$corpus2")"
		"$repo/bench/capture.sh" "$corpus2" || die "bench/capture.sh failed"
	fi
	corpus2_args=(--corpus2 "$corpus2")
fi
unset PD_CORPUS2 # api_bench's own default: the choice above is made

parent=${PD_BENCH_DIR:-$build}
work=$(mktemp -d "$parent/api-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu}, ${mem:-?} RAM," \
	"$(uname -sr); libcurl $(curl-config --version 2>/dev/null | cut -d' ' -f2 || echo '?')," \
	"libmicrohttpd $(pkg-config --modversion libmicrohttpd 2>/dev/null || echo '?'), $("$go" version | cut -d' ' -f3);" \
	"build: $build (${type:-unknown}); load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
"$bin" --corpus "$corpus" "${corpus2_args[@]}" --dir "$work" --go "$go" "$@"
