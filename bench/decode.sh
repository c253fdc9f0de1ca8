#!/usr/bin/env bash
# bench/decode.sh: µs per profile and MB/s of pprof decoding with the hand-written
# decoder of pkg/pprof/pbdecode.c (profd's default) beside protobuf-c alone, the
# reference, per profile type of the corpora, gunzipped beforehand. Two measures:
# pd_pprof_decode both ways (its internal switch protobuf_c_only: unpacking plus
# validation, what a scrape pays), and the two unpackers alone. Best of several
# passes, the ways interleaved in each pass over the same bytes.
#
# usage: bench/decode.sh PROFD_BUILD_DIR [--corpus DIR]... [--passes N] [--pass-seconds S]
#        (a Release build: it holds bench/decode_bench)
#   --corpus DIR   a folder of per-type folders of .pb.gz profiles; default PD_CORPUS
#                  or shared/corpus/prometheus beside the repository, plus
#                  PROFD_BUILD_DIR/bench-corpus/goapp when present (bench/capture.sh)
#   --passes N     passes, the best of which is kept (default 7)
#   --pass-seconds S  how long each way runs in a pass (default 0.05)
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [--corpus DIR]... [--passes N] [--pass-seconds S]" >&2
	exit 2
fi
build=$(realpath "$1")
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/decode_bench

die() {
	echo "bench: $*" >&2
	exit 1
}

corpora=()
opts=()
while [ $# -gt 0 ]; do
	case "$1" in
	--corpus)
		[ $# -ge 2 ] || die "--corpus needs a folder"
		corpora+=("$2")
		shift 2
		;;
	--passes | --pass-seconds)
		[ $# -ge 2 ] || die "$1 needs a value"
		opts+=("$1" "$2")
		shift 2
		;;
	*) die "unknown argument $1 (--corpus DIR, --passes N, --pass-seconds S)" ;;
	esac
done
if [ ${#corpora[@]} -eq 0 ]; then
	corpora=("${PD_CORPUS:-$repo/../shared/corpus/prometheus}")
	[ -d "$build/bench-corpus/goapp" ] && corpora+=("$build/bench-corpus/goapp")
fi
for c in "${corpora[@]}"; do
	[ -d "$c" ] || die "corpus $c not found (set PD_CORPUS or --corpus to a folder of per-type profile folders)"
done
[ -x "$bin" ] || die "$bin not found: configure with -DPD_BENCH=ON and build (make build)"
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$build/CMakeCache.txt" 2>/dev/null ||
	echo "bench: warning: $build is not a Release build; the figures mean little" >&2

echo "pprof decoding: the hand-written decoder (fast) against protobuf-c alone (pbc), gunzipped profiles"
echo "decode: pd_pprof_decode (unpack + validation); unpack: the unpackers alone into an arena"
echo
"$bin" "${opts[@]}" "${corpora[@]}"
echo
echo "ratio: pbc time / fast time (above 1: the fast path is faster); fast path: profiles it took"
