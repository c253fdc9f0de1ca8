#!/usr/bin/env bash
# bench/clickhouse.sh: profiles in ClickHouse against the local store, on the same
# real profiles in the same run (bench/clickhouse_bench.c): ingest rate of one
# writer, bytes per profile after OPTIMIZE TABLE ... FINAL (system.parts, per
# table), and the merge of 1,000 profiles against pd_tsdb_merge and go tool pprof.
# Starts Debian's clickhouse-server on loopback ports with its data in a temporary
# directory, and stops it on exit (and by itself after an hour at most).
#
# usage: bench/clickhouse.sh PROFD_BUILD_DIR [clickhouse_bench options, e.g.
#        --series 7 --runs 1 --sections merge]
#        (a build with PD_BENCH=ON, the default; needs clickhouse-server and go, from
#        scripts/deps.sh --test)
# Environment:
#   PD_CORPUS=DIR     the corpus (default: shared/corpus/prometheus beside the repo),
#                     one folder of <n>.pb.gz files per profile type
#   PD_BENCH_DIR=DIR  where the server's data and the local stores go (default: the
#                     build directory, a real disk rather than a tmpfs /tmp)
#   GO=go             the go command whose `go tool pprof` is the reference
#   PD_BENCH_CH_CLUSTER=NAME PD_BENCH_CH_CLUSTER_URL=URL [PD_BENCH_CH_CLUSTER_NODES=URL,...]
#                     an existing ClickHouse cluster (NAME in its remote_servers, URL
#                     of one node, the other nodes) on which the merge is also
#                     measured; without it, when tests/support/clickhouse.sh can
#                     start two shards (ch_start_cluster), the script starts them
#                     here as the cluster `bench`; PD_BENCH_CH_CLUSTER=none: no cluster
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 PROFD_BUILD_DIR [clickhouse_bench options]" >&2; exit 2; }
build=$(realpath "$1")
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}
bin=$build/bench/clickhouse_bench
go=${GO:-go}
die() { echo "bench: $*" >&2; exit 1; }
[ -x "$bin" ] || die "$bin not found: configure with -DPD_BENCH=ON and build"
[ -d "$corpus" ] || die "corpus $corpus not found (set PD_CORPUS)"
command -v "$go" >/dev/null || die "'$go' not found: the reference is go tool pprof (Debian golang-go)"
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ "$type" != Release ]; then
	echo "bench: warning: $build is a '${type:-unknown}' build; measure a Release build" >&2
fi
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi
export PATH=/usr/sbin:$PATH # Debian puts clickhouse-server there

work=$(mktemp -d "${PD_BENCH_DIR:-$build}/ch-bench.XXXXXX")
. "$repo/tests/support/clickhouse.sh"
trap 'ch_stop; rm -rf "$work"' EXIT
ch_start "$work/server" 3600
# CH_PID is the `timeout` that runs the server; the server is its child, whose CPU
# time the bench reads from /proc
server=$(cat "/proc/$CH_PID/task/$CH_PID/children" 2>/dev/null | awk '{print $1}')

cluster_args=()
if [ "${PD_BENCH_CH_CLUSTER:-}" = none ]; then
	:
elif [ -n "${PD_BENCH_CH_CLUSTER:-}" ]; then
	cluster_args=(--cluster "$PD_BENCH_CH_CLUSTER"
		--cluster-url "${PD_BENCH_CH_CLUSTER_URL:?set with PD_BENCH_CH_CLUSTER}")
	[ -z "${PD_BENCH_CH_CLUSTER_NODES:-}" ] || cluster_args+=(--cluster-nodes "$PD_BENCH_CH_CLUSTER_NODES")
elif declare -F ch_start_cluster >/dev/null; then
	# two more servers, the two shards of the cluster `bench` (ch_stop stops them)
	ch_start_cluster "$work/cluster" bench 3600
	cluster_args=(--cluster bench --cluster-url "$CH_URL_A" --cluster-nodes "$CH_URL_B")
else
	echo "bench: the merge over a two-shard cluster is not measured: tests/support/clickhouse.sh" \
		"cannot start two shards (no ch_start_cluster); PD_BENCH_CH_CLUSTER names an existing cluster" >&2
fi

mkdir -p "$work/bench"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
chv=$(curl -s "$CH_URL" --data-binary 'SELECT version()' || echo '?')
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, ${cpu:-unknown cpu}, ${mem:-?} RAM," \
	"$(uname -sr); ClickHouse $chv; $("$go" version | cut -d' ' -f3); build: $build (${type:-unknown});" \
	"load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
"$bin" --url "$CH_URL" --corpus "$corpus" --dir "$work/bench" --go "$go" \
	${server:+--server-pid "$server"} "${cluster_args[@]}" "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
