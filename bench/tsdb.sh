#!/usr/bin/env bash
# bench/tsdb.sh: runs tsdb_bench, the storage benchmark: bytes per profile of value
# encodings 1 and 2 against gzip files, conprof's zstd groups and the whole series
# as one zstd frame, on the Prometheus corpus and on one captured from the demo Go
# program (bench/capture.sh, generated into the build directory on first use),
# the value group size / zstd level sweep, values over time (totals) beside the
# timestamps-only listing,
# listing timestamps against reading profiles, append throughput and head memory,
# and commits/s of 1 to 16 threads committing at once (group commit),
# each beside its reference (bench/README.md explains every table).
#
# usage: bench/tsdb.sh PROFD_BUILD_DIR [tsdb_bench options, e.g. --section 2]
#        (`make bench` builds build/release; PD_BENCH=ON builds the program)
#
# Environment:
#   PD_CORPUS=DIR     the corpus (default: shared/corpus/prometheus beside the repo)
#   PD_CORPUS2=DIR    the second corpus (default: PROFD_BUILD_DIR/bench-corpus/goapp,
#                     captured there by bench/capture.sh when missing, which takes
#                     about 2.5 minutes and needs go; without go, the Prometheus
#                     corpus alone); PD_CORPUS2= (empty) skips it
#   PD_BENCH_DIR=DIR  where the temporary stores go (default: PROFD_BUILD_DIR, so
#                     that fsync hits a real disk, not a tmpfs /tmp); about 350 MB
#   PD_BENCH_READ_FACTOR, PD_BENCH_SEAL_FACTOR  the sweep's recommendation rule
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [tsdb_bench options]" >&2
	exit 2
fi
build=$(realpath "$1")
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/tsdb_bench
corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}

die() {
	echo "bench: $*" >&2
	exit 1
}

[ -x "$bin" ] || die "$bin not found: configure with -DPD_BENCH=ON and build (make build)"
[ -d "$corpus" ] || die "corpus $corpus not found (set PD_CORPUS to the folder of per-type profile folders)"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ "$type" != Release ]; then
	echo "bench: warning: $build is a '${type:-unknown}' build; measure a Release build" >&2
fi
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi

# the second corpus serves sections 1 and 2 only
section=0
prev=""
for a in "$@"; do
	[ "$prev" = --section ] && section=$a
	prev=$a
done
corpus2_args=()
if [ -n "${PD_CORPUS2-$build/bench-corpus/goapp}" ] && [[ $section =~ ^[012]$ ]]; then
	corpus2=${PD_CORPUS2:-$build/bench-corpus/goapp}
	if [ -d "$corpus2" ]; then
		corpus2_args=(--corpus2 "$corpus2")
	elif ! command -v go >/dev/null; then
		echo "bench: go not found: no second corpus ($corpus2 is missing and" \
			"bench/capture.sh needs go); the Prometheus corpus only" >&2
	else
		echo "bench: capturing the second corpus into $corpus2 (bench/capture.sh)" >&2
		mkdir -p "$(dirname "$corpus2")"
		"$repo/bench/capture.sh" "$corpus2" || die "bench/capture.sh failed"
		corpus2_args=(--corpus2 "$corpus2")
	fi
fi
unset PD_CORPUS2 # tsdb_bench's own default: the choice above is made

parent=${PD_BENCH_DIR:-$build}
work=$(mktemp -d "$parent/tsdb-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu}, ${mem:-?} RAM," \
	"$(uname -sr); build: $build (${type:-unknown})"
"$bin" --corpus "$corpus" "${corpus2_args[@]}" --dir "$work" "$@"
