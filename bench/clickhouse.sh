#!/usr/bin/env bash
# bench/clickhouse.sh: profiles in ClickHouse against the local store, on the same
# corpus in the same run: bytes per profile (ClickHouse: bytes_on_disk of the active
# parts in system.parts after OPTIMIZE TABLE ... FINAL; the local store: the bytes of
# the blocks `profd tsdb import` writes, value encoding v2) and write rate (profiles/s
# of pkg/clickhouse's batched writer into a ClickHouse server started here, and of
# `profd tsdb import` into the local store; both as whole processes that read and
# decode the same files, and the writer's own rate after decoding).
#
# usage: bench/clickhouse.sh PROFD_BUILD_DIR
#        (a build with PD_TESTS=ON, which builds tests/clickhouse_tool; needs
#        clickhouse-server, from scripts/deps.sh --test)
# Environment:
#   PD_CORPUS=DIR   the corpus (default: shared/corpus/prometheus beside the repo),
#                   one folder of .pb.gz files per profile type
#   PD_BENCH_DIR=DIR  where the server's data and the store go (default: the build dir)
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 PROFD_BUILD_DIR" >&2; exit 2; }
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}
profd=$build/profd
tool=$build/tests/clickhouse_tool
die() { echo "bench: $*" >&2; exit 1; }
[ -x "$profd" ] || die "$profd not found: build first"
[ -x "$tool" ] || die "$tool not found: configure with PD_TESTS=ON and build"
[ -d "$corpus" ] || die "corpus $corpus not found (set PD_CORPUS)"
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi
work=$(mktemp -d "${PD_BENCH_DIR:-$build}/ch-bench.XXXXXX")
. "$repo/tests/support/clickhouse.sh"
trap 'ch_stop; rm -rf "$work"' EXIT
ch_start "$work/server" 3600
url=$CH_URL
sql() { curl -sS --fail-with-body "$url" --data-binary "$1"; }
now() { date +%s.%N; }

"$tool" schema "$url"
args=()
n=0
for dir in "$corpus"/*/; do
	type=$(basename "$dir")
	for f in "$dir"*.pb.gz; do
		args+=("$type{src=\"corpus\"}" auto "$f")
		n=$((n + 1))
	done
done
gz=$(cat "$corpus"/*/*.pb.gz | wc -c)

# ---- ClickHouse ----------------------------------------------------------------------
t0=$(now)
inproc=$("$tool" write "$url" --batch 256 "${args[@]}")
t1=$(now)
for t in strings functions mappings locations stacks series samples profiles; do
	sql "OPTIMIZE TABLE profd.$t FINAL" >/dev/null
done
ch_bytes=$(sql "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'profd' AND active")
ch_rows=$(sql "SELECT table, sum(rows), sum(bytes_on_disk) FROM system.parts WHERE database = 'profd' AND active GROUP BY table ORDER BY table FORMAT TSV")

# ---- the local store -------------------------------------------------------------------
store=$work/store
t2=$(now)
for dir in "$corpus"/*/; do
	type=$(basename "$dir")
	"$profd" tsdb import --storage.tsdb.path="$store" --labels="$type{src=\"corpus\"}" "$dir"*.pb.gz >/dev/null 2>&1
done
t3=$(now)
local_bytes=$(find "$store" -path '*/wal' -prune -o -type f -print0 | du -cb --files0-from=- | tail -1 | cut -f1)

awk -v n="$n" -v gz="$gz" -v chb="$ch_bytes" -v lb="$local_bytes" -v t0="$t0" -v t1="$t1" \
	-v t2="$t2" -v t3="$t3" -v inproc="$inproc" 'BEGIN {
	printf "corpus: %d profiles, %.0f bytes gzip files (%.0f bytes/profile)\n\n", n, gz, gz / n
	printf "%-34s %14s %14s\n", "", "bytes/profile", "profiles/s"
	printf "%-34s %14.0f %14.1f\n", "ClickHouse 18.16 (whole process)", chb / n, n / (t1 - t0)
	printf "%-34s %14.0f %14.1f\n", "local store v2 (profd tsdb import)", lb / n, n / (t3 - t2)
	printf "%-34s %14.0f %14s\n", "gzip files (reference)", gz / n, "-"
	printf "\nwriter alone (decoded profiles in memory): %s\n", inproc
}'
echo
echo "ClickHouse tables after OPTIMIZE FINAL (table, rows, bytes on disk):"
echo "$ch_rows"
