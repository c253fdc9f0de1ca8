#!/usr/bin/env bash
# bench/churn.sh: series churn in the store (bench/churn.c): 1,000 series (pods)
# replaced every 5 minutes for 2 hours of simulated time, RSS after the first 5
# minutes against RSS at the end, beside the same run with no churn; once with the
# default block range (2 h) and once with 30 min (so that the head is cut within
# the simulated time, as it is every 2 h in a day of churn). The profiles are the
# heap profiles of bench/capture.sh's corpus (CHURN_CORPORA=".../busy" with
# CHURN_SERIES=200 runs bench/capture_busy.sh's loaded Prometheus, whose profiles
# cost ten times the CPU each). bench/README.md reads the output.
#
# usage: bench/churn.sh PROFD_BUILD_DIR
#        (PROFD_BUILD_DIR/bench/churn_bench: cmake --build DIR --target churn_bench)
#
# Environment:
#   CHURN_SERIES=1000  CHURN_REPLACE=5 (min)  CHURN_INTERVAL=15 (s)  CHURN_HOURS=2
#   CHURN_RANGES="120 30"   block ranges (min), one run each
#   CHURN_CORPORA=DIRS      corpus folders (default: PROFD_BUILD_DIR/bench-corpus/
#                           goapp, captured when missing)
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR" >&2
	exit 2
fi
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bench/churn_bench
die() {
	echo "bench: $*" >&2
	exit 1
}
[ -x "$bin" ] || die "$bin not found (cmake --build $build --target churn_bench)"

read -r -a ranges <<<"${CHURN_RANGES:-120 30}"
corpora=()
if [ -n "${CHURN_CORPORA:-}" ]; then
	read -r -a corpora <<<"$CHURN_CORPORA"
else
	c=$build/bench-corpus/goapp
	if [ ! -d "$c" ]; then
		mkdir -p "$build/bench-corpus"
		"$repo/bench/capture.sh" "$c" || die "bench/capture.sh failed"
	fi
	corpora=("$c")
fi

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for c in "${corpora[@]}"; do
	for r in "${ranges[@]}"; do
		echo
		"$bin" --corpus "$c" --dir "${PD_BENCH_DIR:-$build}" --series "${CHURN_SERIES:-1000}" \
			--replace "${CHURN_REPLACE:-5}" --interval "${CHURN_INTERVAL:-15}" \
			--hours "${CHURN_HOURS:-2}" --block-range "$r" 2>/dev/null || die "churn_bench failed on $c"
	done
done
