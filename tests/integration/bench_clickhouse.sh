#!/usr/bin/env bash
# bench_clickhouse.sh: bench/clickhouse.sh runs end to end on a small input and
# prints what bench/README.md reads (not the figures: they come from a Release
# build on a quiet machine):
#   - ingest: a positive rate for the ClickHouse writer and both local-store rows,
#     and the ratio line
#   - bytes: every table of the schema after OPTIMIZE FINAL, rows of samples equal
#     to the samples written, the local store's v2 bytes, the gzip reference
#   - merge: every store's result has the top tables of go tool pprof's merge; the
#     two forms of the sums statement answer the same on one server and on the
#     two-shard cluster, whose shards both hold some of the merge's series
#   - a bad flag is refused naming the flag, and the server is gone afterwards
#
#   bench_clickhouse.sh REPO BUILD_DIR
set -euo pipefail

repo=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PD_BENCH_DIR=$tmp ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
fail=0
failed() { echo "FAIL: $*"; fail=1; }

out=$tmp/out.txt
# the repository's slice of the corpus (6 profiles of each type), so that a clean
# checkout has what it needs; PD_CORPUS chooses another
export PD_CORPUS=${PD_CORPUS:-$repo/testdata/profiles/prometheus-series}
if ! "$repo/bench/clickhouse.sh" "$build" --series 7 --runs 1 --merge-n 60 --merge-runs 1 \
	--go-runs 1 >"$out" 2>"$tmp/err.txt"; then
	cat "$out" "$tmp/err.txt"
	echo "FAIL: bench/clickhouse.sh exited non-zero"
	exit 1
fi
cat "$out"

# ingest rows: name, seconds, profiles/s > 0
for row in "ClickHouse writer (batch 256)" "local store, fsync each commit" "local store, no fsync"; do
	rate=$(awk -v r="$row" 'index($0, r) == 1 { s = substr($0, length(r) + 1); split(s, f, " "); print f[2] }' "$out")
	awk -v x="${rate:-0}" 'BEGIN { exit !(x > 0) }' || failed "ingest row '$row' has no rate: '$rate'"
done
grep -q '^ratio ClickHouse / local store: [0-9.]*x (fsync each commit), [0-9.]*x (no fsync)$' "$out" ||
	failed "no ingest ratio line"

# bytes: every table, samples as many as the corpus profiles hold
for t in series strings functions mappings locations stacks profiles samples; do
	grep -Eq "^$t +[0-9]+ +[1-9][0-9]* +[1-9][0-9]* +[1-9][0-9]* +[1-9][0-9]* " "$out" ||
		failed "table $t missing or empty in the bytes table"
done
nfiles=$(find "$PD_CORPUS" -name '*.pb.gz' | wc -l)
want=$(sed -n "s/^== ingest and bytes: 7 series x [0-9]* profiles = $nfiles profiles .*, \([0-9]*\) samples)\$/\1/p" "$out")
[ -n "$want" ] || failed "not the corpus's $nfiles profiles, or no count of samples"
got=$(awk '$1 == "samples" && NF == 7 { print $3 }' "$out")
[ "$got" = "$want" ] || failed "samples rows after OPTIMIZE: $got, $want samples written"
grep -Eq '^local store v2 \(block files\) +[1-9][0-9.]* +1\.00x$' "$out" || failed "no local store bytes"
grep -Eq '^gzip files \(as served\) +[1-9]' "$out" || failed "no gzip reference"
grep -q 'after OPTIMIZE TABLE ... FINAL on every table' "$out" || failed "OPTIMIZE FINAL not stated"
grep -Eq '^ClickHouse, on disk before OPTIMIZE +[1-9][0-9.]* +[0-9.]+x +\([1-9][0-9]* parts\)$' "$out" ||
	failed "no bytes before the OPTIMIZE"

# merge: equal tops
n=$(grep -c 'against go tool pprof: equal' "$out" || true)
[ "$n" -ge 2 ] || failed "the merges' top tables are not all equal to go tool pprof's"
! grep -q 'DIFFER' "$out" || failed "a merge differs"
# the two forms of the sums statement, with rows twice and after OPTIMIZE, on the
# one server and on the two shards, each shard holding some of the series
grep -q '^answers, one server: both forms equal$' "$out" || failed "the sums' forms on one server are not equal"
grep -q "^answers, two-shard cluster: both forms equal, and equal to the one server's$" "$out" ||
	failed "the sums' forms on the cluster are not equal (or not run)"
for st in 'every row sent twice, parts not merged' 'after OPTIMIZE ... FINAL'; do
	grep -qF "the sums statement alone, $st" "$out" || failed "no sums statement timing ($st)"
done
n=$(grep -Ec '^(one server|two-shard cluster) +(LIMIT 1 BY subquery|FINAL, GROUP BY).* [0-9.]+ +[0-9.]+x ' "$out" || true)
[ "$n" = 8 ] || failed "want 8 timings of the sums' forms, got $n"
for sh in 1 2; do
	grep -Eq "^samples on shard $sh of the cluster: [1-9][0-9]* rows \([1-9][0-9]* once each\) of [1-9][0-9]* series$" "$out" ||
		failed "shard $sh holds none of the merge's samples"
done
grep -Eq '^ClickHouse, two-shard cluster +[0-9.]+ ' "$out" || failed "the merge over the cluster was not measured"

# a bad flag: refused, naming it
if "$build/bench/clickhouse_bench" --url http://127.0.0.1:1/ --corpus "$tmp" --dir "$tmp" \
	--runs 0 >"$tmp/bad.txt" 2>&1; then
	failed "--runs 0 accepted"
fi
grep -q -- '--runs: want a number from 1 to 64, not "0"' "$tmp/bad.txt" || failed "--runs 0: $(cat "$tmp/bad.txt")"

# the servers the script started are gone
! pgrep -f "$tmp/ch-bench" >/dev/null || failed "a clickhouse-server of the bench is still running"

[ $fail = 0 ] && echo "PASS"
exit $fail
