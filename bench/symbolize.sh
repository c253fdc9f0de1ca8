#!/usr/bin/env bash
# bench/symbolize.sh: what query-time symbolization (pkg/symbolize) costs.
# 1. A merge of 1,000 native profiles (addresses and a mapping with a build id,
#    no names) symbolized with a warm cache, beside the same merge of the same
#    profiles stored symbolized with no symbolizer (the aim: at most 1.5x), on two
#    workloads: a generated C program of many functions built with gcc -O2 -g
#    (its own DWARF), and glibc's libc.so.6 with its detached debug file from
#    /usr/lib/debug/.build-id (Debian libc6-dbg).
# 2. The first symbolization of a big debug file: wall time and peak RSS of
#    profd's symbolizer beside eu-addr2line -i -f on the same addresses.
#
# usage: bench/symbolize.sh PROFD_BUILD_DIR [BIG_DEBUG_FILE | --cxx]
#        (a Release build: it holds bench/symbolize_bench; BIG_DEBUG_FILE defaults
#        to the debug build of libstdc++ of Debian libstdc++6-12-dbg; --cxx builds
#        bench/symbolize_gen_cxx.sh's program with g++ -O1 -g, some minutes, and
#        measures that)
# env:   BENCH_PROFILES (1000), BENCH_FUNCS (2000), BENCH_PASSES (5)
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [BIG_DEBUG_FILE | --cxx]" >&2
	exit 2
fi
build=$(realpath "$1")
big=${2:-/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6.0.30}
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/symbolize_bench
[ -x "$bin" ] || { echo "bench: $bin not found: configure with -DPD_BENCH=ON and build" >&2; exit 1; }
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$build/CMakeCache.txt" 2>/dev/null ||
	echo "bench: warning: $build is not a Release build; the figures mean little" >&2
for t in gcc nm readelf eu-addr2line /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "bench: $t not found (Debian gcc, binutils, elfutils, time)" >&2; exit 1; }
done
libc=$(realpath /lib/x86_64-linux-gnu/libc.so.6)
[ "$big" = --cxx ] || [ -f "$big" ] || { echo "bench: $big not found (apt-get install libstdc++6-12-dbg, or pass a file)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
profiles=${BENCH_PROFILES:-1000}
passes=${BENCH_PASSES:-5}

build_id() { readelf -n "$1" | awk '/Build ID/ {print $3; exit}'; }
# the executable PT_LOAD's address and file offset, page-aligned, in hex
seg() {
	readelf -lW "$1" | python3 -c '
import sys
for l in sys.stdin:
    f = l.split()
    if f and f[0] == "LOAD" and " R E " in l:
        print("%x %x" % (int(f[2], 16) & ~0xfff, int(f[1], 16) & ~0xfff)); break'
}
# text symbols as "VADDR SIZE", from the file that has the symbol table
syms() { nm -S --defined-only "$1" | awk '$3 ~ /^[tTwW]$/ {print $1, $2}' | sort -u; }

echo "== 1. merge of $profiles native profiles, warm cache, against the same profiles stored symbolized"
echo "-- workload A: generated C program, ${BENCH_FUNCS:-2000} functions, gcc -O2 -g"
"$repo/bench/symbolize_gen.sh" "${BENCH_FUNCS:-2000}" > "$tmp/prog.c"
gcc -O2 -g -o "$tmp/prog" "$tmp/prog.c"
syms "$tmp/prog" > "$tmp/prog.syms"
read -r tv to < <(seg "$tmp/prog")
"$bin" merge "$tmp/prog" "$(build_id "$tmp/prog")" "$tmp/prog.syms" "$tv" "$to" \
	--profiles "$profiles" --passes "$passes" 2> "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }

echo "-- workload B: $libc, its debug file in /usr/lib/debug/.build-id (libc6-dbg)"
bid=$(build_id "$libc")
dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
[ -f "$dbg" ] || { echo "bench: $dbg not found: apt-get install libc6-dbg" >&2; exit 1; }
syms "$dbg" > "$tmp/libc.syms"
read -r tv to < <(seg "$libc")
"$bin" merge "$libc" "$bid" "$tmp/libc.syms" "$tv" "$to" --debug-dir /usr/lib/debug \
	--profiles "$profiles" --passes "$passes" --samples 100 --depth 24 2> "$tmp/log" ||
	{ cat "$tmp/log" >&2; exit 1; }

if [ "$big" = --cxx ]; then
	command -v g++ >/dev/null || { echo "bench: g++ not found (Debian g++)" >&2; exit 1; }
	"$repo/bench/symbolize_gen_cxx.sh" "$tmp/cxx"
	(cd "$tmp/cxx" && printf '%s\n' *.cc | xargs -P2 -I{} g++ -O1 -g -c {} -o {}.o &&
		g++ -o ../big ./*.o)
	big=$tmp/big
fi
echo
echo "== 2. first symbolization of $big ($(( $(stat -c %s "$big") / 1000000 )) MB)"
syms "$big" > "$tmp/big.syms"
read -r tv to < <(seg "$big")
"$bin" first "$big" "$(build_id "$big")" "$tmp/big.syms" "$tv" "$to" \
	--write-addresses "$tmp/big.addrs" 2> "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
n=$(wc -l < "$tmp/big.addrs")
# eu-addr2line exits 1 when some address has no name; that is counted, not fatal
/usr/bin/time -f '%e %M' -o "$tmp/t" eu-addr2line -i -f -e "$big" < "$tmp/big.addrs" > "$tmp/a2l.out" || true
read -r secs kib < <(tail -1 "$tmp/t")
unknown=$(grep -c '^??$' "$tmp/a2l.out" || true)
awk -v n="$n" -v s="$secs" -v k="$kib" -v u="$unknown" 'BEGIN {
	printf "eu-addr2line -i -f:  %d addresses, %d unnamed, %.1f ms, peak RSS %d KiB\n", n, u, s * 1000, k }'
