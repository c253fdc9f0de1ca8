#!/usr/bin/env bash
# bench/fuzz.sh: executions per second of every libFuzzer target, one after the
# other (so that each has the machine to itself), each for SECONDS from a fresh
# copy of its seed corpora through tests/fuzz/run_fuzz.sh, which first replays
# its regression inputs. Prints per target: exec/s and peak RSS from libFuzzer's
# final stats, the seeds it started from and the corpus it ended with. As
# reference, the same figures for fuzz_pprof_decode, the target every profile
# passes through, lead the table. About 13 × SECONDS.
#
# usage: bench/fuzz.sh BUILD_DIR [SECONDS]
#        BUILD_DIR is a build with -DPD_FUZZ=ON (`make test` makes build/dev)
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 BUILD_DIR [SECONDS]" >&2
	exit 2
fi
build=$(realpath "$1")
seconds=${2:-60}
repo=$(cd "$(dirname "$0")/.." && pwd)
fz=$build/tests/fuzz
[ -x "$fz/fuzz_pprof_decode" ] || { echo "bench: no fuzz binaries in $fz (configure with -DPD_FUZZ=ON)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pd-fuzz-bench.XXXXXX")
# the block and wal targets write files for every input: tmpfs when there is one
tmpdir=${TMPDIR:-/tmp}
[ -d /dev/shm ] && tmpdir=/dev/shm
trap 'rm -rf "$work"' EXIT

# the seed folders of each target, as tests/fuzz/CMakeLists.txt registers them
seeds_of() {
	local t=$1 f=$repo/tests/fuzz
	case $t in
	pprof_decode) echo "$f/corpus $repo/testdata/profiles/edge" ;;
	chunk_v2) echo "$f/corpus-chunk-v2 $repo/testdata/profiles/edge" ;;
	pbdecode) echo "$f/corpus-pbdecode $repo/testdata/profiles/edge" ;;
	config) echo "$f/corpus-config $repo/testdata/config/good $repo/testdata/config/bad" ;;
	*) echo "$f/corpus-${t//_/-}" ;;
	esac
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "profd fuzz bench: every target for ${seconds} s, one at a time, from its seeds ($fz)"
echo
printf '%-16s %10s %9s %7s %9s\n' target exec/s "rss MB" seeds "corpus"
printf '%s\n' "----------------------------------------------------------"
targets=(pprof_decode)
for b in "$fz"/fuzz_*; do
	[ -x "$b" ] && [ -f "$b" ] || continue
	t=${b##*/fuzz_}
	[ "$t" = pprof_decode ] || targets+=("$t")
done
for t in "${targets[@]}"; do
	log=$work/$t.log
	# shellcheck disable=SC2046
	if ! TMPDIR=$tmpdir "$repo/tests/fuzz/run_fuzz.sh" "$fz/fuzz_$t" "$seconds" \
		"$work/$t" "$repo/testdata/fuzz/crashes" $(seeds_of "$t") >"$log" 2>&1; then
		printf '%-16s FAILED (see below)\n' "$t"
		tail -20 "$log" | sed 's/^/    /'
		continue
	fi
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
	nseeds=$(sed -n 's/.*fuzzing for .* from \([0-9]*\) seed.*/\1/p' "$log")
	ncorp=$(find "$work/$t/corpus" -type f | wc -l)
	printf '%-16s %10s %9s %7s %9s\n' "$t" "${eps:-?}" "${rss:-?}" "${nseeds:-?}" "$ncorp"
	rm -rf "$work/$t"
done
