#!/usr/bin/env bash
# bench/jfr.sh: CPU time to convert JFR recordings (profd's ingest_jfr, what a
# push to /ingest?format=jfr costs) beside the time to decode the pprof
# profiles that result (pd_pprof_decode), the reference, and their ratio (the
# aim: at most 3). Two workloads: pyroscope-java's recordings of a Kafka broker
# (CPU; CPU, allocation and lock; and a wall-clock one with context labels,
# testdata/pyroscope/jfr/), and the JDK's own recording of a small busy program
# (testdata/jfr/jdk17-busy.jfr.gz: execution, allocation sample, monitor and
# park events).
#
# usage: bench/jfr.sh PROFD_BUILD_DIR [--passes N] [--pass-seconds S] [FILE.jfr[.gz]...]
#        (a Release build: it holds bench/jfr_bench)
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [--passes N] [--pass-seconds S] [FILE...]" >&2
	exit 2
fi
build=$(realpath "$1")
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/jfr_bench
[ -x "$bin" ] || { echo "bench: $bin not found: configure with -DPD_BENCH=ON and build" >&2; exit 1; }
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$build/CMakeCache.txt" 2>/dev/null ||
	echo "bench: warning: $build is not a Release build; the figures mean little" >&2

opts=()
files=()
while [ $# -gt 0 ]; do
	case "$1" in
	--passes | --pass-seconds)
		[ $# -ge 2 ] || { echo "bench: $1 needs a value" >&2; exit 2; }
		opts+=("$1" "$2")
		shift 2
		;;
	*) files+=("$1"); shift ;;
	esac
done
if [ ${#files[@]} -eq 0 ]; then
	py=$repo/testdata/pyroscope/jfr
	files=("$py/cortex-dev-01__kafka-0__cpu__0.jfr.gz"
		"$py/cortex-dev-01__kafka-0__cpu_lock_alloc__0.jfr.gz"
		"$py/cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"
		"$py/dump2.jfr.gz"
		"$repo/testdata/jfr/jdk17-busy.jfr.gz")
fi

echo "JFR conversion (ingest_jfr) against decoding its pprof output (pd_pprof_decode), CPU time"
echo
"$bin" "${opts[@]}" "${files[@]}"
