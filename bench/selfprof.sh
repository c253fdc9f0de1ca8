#!/usr/bin/env bash
# bench/selfprof.sh: what profd's self-profiling costs (bench/README.md explains
# every table): 1. the allocation path through the heap sampler's malloc
# replacement (pkg/selfprof/malloc.c) against glibc's malloc alone, 2. the CPU
# profiler's cost on the same work with and without a profile running, and the
# time to write the profile, 3. the heap profile's alloc_space / inuse_space
# against known allocations. About 80 s on a busy 2-core machine.
#
# usage: bench/selfprof.sh PROFD_BUILD_DIR [--section 1|2|3]
#        (`make bench` builds build/release; PD_BENCH=ON builds the programs:
#        selfprof_bench links malloc.c as profd does, selfprof_bench_glibc is
#        the same program without it)
#
# Environment:
#   BENCH_PROCS=N    section 1: processes of each program, alternated (default 3)
#   BENCH_ROUNDS=N   section 1: timed rounds per process (default 5); section 2:
#                    repetitions with and without a profile (default 5); section
#                    3: rounds of allocations (default 3)
set -euo pipefail

section=0
if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [--section 1|2|3]" >&2
	exit 2
fi
build=$(realpath "$1")
shift
if [ $# -ge 2 ] && [ "$1" = --section ]; then
	section=$2
	shift 2
fi
[ $# -eq 0 ] || {
	echo "usage: $0 PROFD_BUILD_DIR [--section 1|2|3]" >&2
	exit 2
}
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/selfprof_bench
twin=$build/bench/selfprof_bench_glibc
procs=${BENCH_PROCS:-3}
rounds=${BENCH_ROUNDS:-5}

die() {
	echo "bench: $*" >&2
	exit 1
}

[ -x "$bin" ] || die "$bin not found: configure with -DPD_BENCH=ON and without PD_SANITIZE, and build"
[ -x "$twin" ] || die "$twin not found: configure with -DPD_BENCH=ON and build"
[ -f "$repo/testdata/profiles/goapp/cpu-large.pb.gz" ] || die "testdata/profiles/goapp/cpu-large.pb.gz not found"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ "$type" != Release ]; then
	echo "bench: warning: $build is a '${type:-unknown}' build; measure a Release build" >&2
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || echo 'glibc ?')
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu}, ${mem:-?} RAM," \
	"$(uname -sr), $glibc; build: $build (${type:-unknown});" \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo

if [ "$section" = 0 ] || [ "$section" = 1 ]; then
	raw=$(mktemp)
	trap 'rm -f "$raw"' EXIT
	# the two programs in turn, so that a burst of load falls on both alike
	for ((p = 0; p < procs; p++)); do
		"$bin" --section 1 --rounds "$rounds" | sed 's/^alloc\t/S\t/' >>"$raw"
		"$twin" --section 1 --rounds "$rounds" | sed 's/^alloc\t/G\t/' >>"$raw"
	done
	cat <<EOT
1. Allocation path: CPU ns per op (thread CPU time; with 2 threads, both
   threads' CPU summed over both threads' ops), the median of $((procs * rounds))
   timed runs per cell: $procs processes of each program, alternated, $rounds
   rounds each. sampler = malloc/free in selfprof_bench, which links
   pkg/selfprof/malloc.c as profd does; glibc = malloc/free in
   selfprof_bench_glibc, the same program without it (the reference);
   in-proc = __libc_malloc/__libc_free called directly inside selfprof_bench
   (glibc's allocator, same process and heap). One op: a malloc + free pair;
   ring: free the block allocated 4096 ops earlier, then malloc; realloc: malloc
   16 B, 12 reallocs doubling to 64 KiB, free (14 calls).

case              threads  sampler ns    glibc ns  sampler/glibc  in-proc ns  sampler/in-proc
-----------------------------------------------------------------------------------------------
EOT
	awk -F'\t' '
		function med(key,   n, i, j, t, a) {
			n = split(vals[key], a, " ")
			for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		function add(key, v) { vals[key] = (key in vals) ? vals[key] " " v : v }
		$1 == "S" || $1 == "G" {
			k = $2 SUBSEP $3
			if (!(k in seen)) { seen[k] = 1; order[++n] = k }
			add($1 SUBSEP k, $5)
			if ($1 == "S") add("L" SUBSEP k, $6)
		}
		END {
			for (i = 1; i <= n; i++) {
				split(order[i], f, SUBSEP)
				s = med("S" SUBSEP order[i]); g = med("G" SUBSEP order[i]); l = med("L" SUBSEP order[i])
				printf "%-17s %7d %11.1f %11.1f %13.2fx %11.1f %15.2fx\n", f[1], f[2], s, g, s / g, l, s / l
			}
		}' "$raw"
	echo "-----------------------------------------------------------------------------------------------"
	grep -m1 '^# ops' "$raw" | sed 's/^# /(/; s/$/)/'
	echo
fi

if [ "$section" = 0 ] || [ "$section" = 2 ]; then
	"$bin" --section 2 --rounds "$rounds" --testdata "$repo/testdata"
fi

if [ "$section" = 0 ] || [ "$section" = 3 ]; then
	"$bin" --section 3 --rounds "${BENCH_ROUNDS:-3}"
	echo
fi
