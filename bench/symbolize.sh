#!/usr/bin/env bash
# bench/symbolize.sh: what query-time symbolization (pkg/symbolize) costs.
# 1. A merge of 1,000 native profiles (addresses and a mapping with a build id,
#    no names) symbolized with a warm cache, beside the same merge of the same
#    profiles stored symbolized with no symbolizer (the aim: at most 1.5x), on two
#    workloads: a generated C program of many functions built with gcc -O2 -g
#    (its own DWARF), and glibc's libc.so.6 with its detached debug file from
#    /usr/lib/debug/.build-id (Debian libc6-dbg).
# 2. The first symbolization of a big debug file: wall time, CPU time and peak
#    RSS of profd's symbolizer (a process that symbolizes one profile of the
#    addresses) beside eu-addr2line -i -f on the same addresses, and the ratios.
#    The default file is a real 55 MB one: the detached debug information of
#    Ceph's ceph-mgr (C++, compressed DWARF) from Debian's ceph-mgr-dbg,
#    fetched with `apt-get download` (the package is unpacked here, not
#    installed) into BENCH_CACHE.
#
# usage: bench/symbolize.sh PROFD_BUILD_DIR [BIG_DEBUG_FILE | --cxx]
#        (a Release build: it holds bench/symbolize_bench; BIG_DEBUG_FILE
#        defaults to ceph-mgr-dbg's debug file, as above; --cxx builds
#        bench/symbolize_gen_cxx.sh's program with g++ -O1 -g, some minutes, and
#        measures that)
# env:   BENCH_PROFILES (1000), BENCH_FUNCS (2000), BENCH_PASSES (5),
#        BENCH_ADDRESSES (1000: eu-addr2line takes about a minute of CPU for
#        them on the default file), BENCH_CACHE (PROFD_BUILD_DIR/bench-cache)
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [BIG_DEBUG_FILE | --cxx]" >&2
	exit 2
fi
build=$(realpath "$1")
big=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/symbolize_bench
[ -x "$bin" ] || { echo "bench: $bin not found: configure with -DPD_BENCH=ON and build" >&2; exit 1; }
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$build/CMakeCache.txt" 2>/dev/null ||
	echo "bench: warning: $build is not a Release build; the figures mean little" >&2
for t in gcc nm readelf eu-addr2line /usr/bin/time dpkg-deb apt-get; do
	command -v "$t" >/dev/null || { echo "bench: $t not found (Debian gcc, binutils, elfutils, time)" >&2; exit 1; }
done
libc=$(realpath /lib/x86_64-linux-gnu/libc.so.6)
if [ -z "$big" ]; then
	# ceph-mgr-dbg, unpacked once into the cache
	cache=${BENCH_CACHE:-$build/bench-cache}
	mkdir -p "$cache/ceph-mgr-dbg"
	big=$(find "$cache/ceph-mgr-dbg" -name '*.debug' -size +40M 2>/dev/null | head -1)
	if [ -z "$big" ]; then
		echo "bench: fetching Debian's ceph-mgr-dbg (53 MB) into $cache" >&2
		(cd "$cache" && apt-get download ceph-mgr-dbg >&2) ||
			{ echo "bench: apt-get download ceph-mgr-dbg failed (apt-get update first?)" >&2; exit 1; }
		deb=$(find "$cache" -maxdepth 1 -name 'ceph-mgr-dbg_*.deb' | sort | tail -1)
		dpkg-deb -x "$deb" "$cache/ceph-mgr-dbg"
		big=$(find "$cache/ceph-mgr-dbg" -name '*.debug' -size +40M | head -1)
	fi
	[ -n "$big" ] || { echo "bench: no debug file in ceph-mgr-dbg" >&2; exit 1; }
fi
[ "$big" = --cxx ] || [ -f "$big" ] || { echo "bench: $big not found" >&2; exit 1; }
[ "$big" = --cxx ] || big=$(realpath "$big")

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
# the whole process timed, as eu-addr2line's is: wall, user + system CPU, peak RSS
/usr/bin/time -f '%e %U %S %M' -o "$tmp/tp" "$bin" first "$big" "$(build_id "$big")" \
	"$tmp/big.syms" "$tv" "$to" --addresses "${BENCH_ADDRESSES:-1000}" \
	--write-addresses "$tmp/big.addrs" > "$tmp/first.out" 2> "$tmp/log" ||
	{ cat "$tmp/log" >&2; exit 1; }
cat "$tmp/first.out"
resolved=$(sed -n 's/.* addresses, \([0-9]*\) resolved.*/\1/p' "$tmp/first.out")
n=$(wc -l < "$tmp/big.addrs")
# eu-addr2line exits 1 when some address has no name; that is counted, not fatal
/usr/bin/time -f '%e %U %S %M' -o "$tmp/ta" eu-addr2line -i -f -e "$big" < "$tmp/big.addrs" > "$tmp/a2l.out" || true
unknown=$(grep -c '^??$' "$tmp/a2l.out" || true)
read -r pw pu ps pk < <(tail -1 "$tmp/tp")
read -r aw au as ak < <(tail -1 "$tmp/ta")
awk -v n="$n" -v r="$resolved" -v u="$unknown" -v pw="$pw" -v pu="$pu" -v ps="$ps" \
	-v pk="$pk" -v aw="$aw" -v au="$au" -v as="$as" -v ak="$ak" 'BEGIN {
	pc = pu + ps; ac = au + as
	printf "profd symbolizer:    %d addresses, %d resolved, %.0f ms wall, %.0f ms CPU, peak RSS %d KiB\n", n, r, pw * 1000, pc * 1000, pk
	printf "eu-addr2line -i -f:  %d addresses, %d unnamed, %.0f ms wall, %.0f ms CPU, peak RSS %d KiB\n", n, u, aw * 1000, ac * 1000, ak
	printf "profd / eu-addr2line: wall %.3fx, CPU %.3fx, peak RSS %.2fx\n", pw / (aw > 0 ? aw : 0.001), pc / (ac > 0 ? ac : 0.001), pk / ak }'
