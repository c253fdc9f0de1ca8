#!/usr/bin/env bash
# clickhouse_cluster.sh: pkg/clickhouse over a ClickHouse cluster of two shards
# (two Debian clickhouse-servers on loopback ports, one replica each, no
# ZooKeeper), through clickhouse_tool --cluster:
#   - a schema created through node A alone is refused, naming node B and its
#     shard, and so is `profd run` without --storage.clickhouse.cluster-nodes;
#     given both nodes' URLs it is created (twice: idempotent), with
#     <table>_local and Distributed tables on both nodes; a node at schema
#     version 1 is migrated (profiles_local and profiles gain totals)
#   - profiles written through node A and through node B are all listed (series,
#     times) and rebuilt (`go tool pprof -raw` equal to the files) from either node
#   - the rows are spread over both shards (counts of each node's _local tables),
#     each series' profiles and samples on one shard only
#   - a merge over a range read through the Distributed tables equals go tool
#     pprof's merge of the same files (-raw samples and -top)
#   - so does a merge of ten series spread over both shards, written twice (once
#     through each node) with the parts' merges stopped, so that every sample row
#     is there twice when the merge reads
#   - with shard B down, a write through A fails naming B (inserts are synchronous)
#     and succeeds once B is back
#   - retention drops the old days' partitions on both shards
#
#   clickhouse_cluster.sh CLICKHOUSE_TOOL TESTDATA PROFD
set -euo pipefail

tool=$(realpath "$1")
data=$(cd "$2" && pwd)
profd=$(realpath "$3")
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
. "$here/support/clickhouse.sh"
trap 'ch_stop; rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0

pprof_bin=$(go env GOTOOLDIR)/pprof
[ -x "$pprof_bin" ] || pprof_bin="go tool pprof"
gopprof() { (cd "$tmp" && $pprof_bin -symbolize=none "$@"); }
failed() { echo "FAIL: $*"; fail=1; }
check() { checked=$((checked + 1)); }

ch_start_cluster "$tmp/server" profd_test 1700
A=$CH_URL_A B=$CH_URL_B
sql() { curl -sS --fail-with-body "$1" --data-binary "$2"; }
# clickhouse_tool through node A or B, knowing the other node
cha() { "$tool" --cluster profd_test --nodes "$B" "$@"; }
chb() { "$tool" --cluster profd_test --nodes "$A" "$@"; }

# ---- schema ----------------------------------------------------------------------
check
if out=$("$tool" --cluster profd_test schema "$A" 2>&1); then
	failed "a schema through node A alone was accepted although node B is not given"
else
	echo "$out" | grep -qF "node $CH_TCP_B (shard 2)" ||
		failed "the refusal does not name node $CH_TCP_B and its shard: $out"
fi
check
if out=$("$tool" --cluster no_such_cluster --nodes "$B" schema "$A" 2>&1); then
	failed "an unknown cluster was accepted"
else
	echo "$out" | grep -q 'cluster no_such_cluster: the ClickHouse at .* does not know the cluster' ||
		failed "an unknown cluster's error: $out"
fi
# profd run refuses to start the same way, naming the node, before scraping
printf 'scrape_configs: []\n' >"$tmp/empty.yml"
check
if timeout --foreground 120 "$profd" run --config.file="$tmp/empty.yml" --storage.tsdb.path="$tmp/p" \
	--web.listen-address=127.0.0.1:0 --storage.clickhouse.url="$A" \
	--storage.clickhouse.cluster=profd_test >"$tmp/profd.log" 2>&1; then
	failed "profd started with node B not given"
elif ! grep -q "level=error .*node $CH_TCP_B (shard 2) is not among the ClickHouse URLs" "$tmp/profd.log"; then
	failed "profd's refusal does not name node $CH_TCP_B: $(tail -3 "$tmp/profd.log")"
fi
cha schema "$A"
chb schema "$B"
# a node whose tables are at schema version 1 (no profiles.totals) is migrated: the
# local table and the Distributed one over it
sql "$B" "ALTER TABLE profd.profiles DROP COLUMN totals" >/dev/null
sql "$B" "ALTER TABLE profd.profiles_local DROP COLUMN totals" >/dev/null
chb schema "$B"
for t in profiles profiles_local; do
	check
	[ "$(sql "$B" "SELECT count() FROM system.columns WHERE database = 'profd' AND table = '$t' AND name = 'totals'")" = 1 ] ||
		failed "$B: profd.$t has no totals column after the migration"
done
for u in "$A" "$B"; do
	for t in series strings functions mappings locations stacks profiles samples; do
		check
		[ "$(sql "$u" "SELECT engine FROM system.tables WHERE database = 'profd' AND name = '$t'")" = Distributed ] ||
			failed "$u: profd.$t is not a Distributed table"
		check
		[ "$(sql "$u" "SELECT engine FROM system.tables WHERE database = 'profd' AND name = '${t}_local'")" = ReplacingMergeTree ] ||
			failed "$u: profd.${t}_local is not a ReplacingMergeTree"
	done
	check
	[ "$(sql "$u" "SELECT count() FROM profd.schema_version FINAL")" = 1 ] ||
		failed "$u: schema_version should hold one row"
done

# ---- profiles through A and through B ------------------------------------------------
list=$tmp/list
: >"$list"
args_a=()
args_b=()
k=0
while IFS= read -r f; do
	rel=${f#"$data"/profiles/}
	grep -q "^profiles/$rel " "$here/golden/known-differences.txt" && continue
	gopprof -raw "$f" >/dev/null 2>&1 || continue
	sel="tp{file=\"$rel\"}"
	ts=$((1700000000000 + k * 1000))
	if ((k % 2)); then args_b+=("$sel" "$ts" "$f"); else args_a+=("$sel" "$ts" "$f"); fi
	echo "$sel|$ts|$f" >>"$list"
	k=$((k + 1))
done < <(find "$data/profiles" -type f \( -name '*.pb.gz' -o -name '*.pb' \) | LC_ALL=C sort)
# one series with several profiles, half through each node
h=$data/profiles/goapp
for i in 1 2 3 4; do
	f=$h/heap.pb.gz
	[ $i = 2 ] && f=$h/heap-2.pb.gz
	[ $i = 3 ] && f=$h/heap-3.pb.gz
	ts=$((1700000100000 + i * 1000))
	if ((i % 2)); then args_b+=('many{job="x"}' "$ts" "$f"); else args_a+=('many{job="x"}' "$ts" "$f"); fi
	echo "many{job=\"x\"}|$ts|$f" >>"$list"
done
cha write "$A" --batch 8 "${args_a[@]}" >/dev/null
chb write "$B" --batch 8 "${args_b[@]}" >/dev/null
nprof=$(wc -l <"$list")
echo "wrote $nprof profiles, ${#args_a[@]}/3 through A and ${#args_b[@]}/3 through B"

want_series=$(cut -d'|' -f1 "$list" | sort -u)
for u in "$A" "$B"; do
	check
	[ "$(cha series "$u" | sort)" = "$want_series" ] || failed "$u: series lists differ from those written"
	check
	[ "$(cha times "$u" 'many{job="x"}' 0 9223372036854775807 | tr '\n' ' ')" = \
		"1700000101000 1700000102000 1700000103000 1700000104000 " ] ||
		failed "$u: times of many{job=\"x\"}: $(cha times "$u" 'many{job="x"}' 0 9223372036854775807 | tr '\n' ' ')"
	# every profile rebuilt by one process per node, then compared one by one
	dargs=()
	n=0
	while IFS='|' read -r sel ts f; do
		dargs+=("$sel" "$ts" "$tmp/got-$n.pb.gz")
		n=$((n + 1))
	done <"$list"
	rm -f "$tmp"/got-*.pb.gz
	cha dump "$u" "${dargs[@]}"
	n=0
	while IFS='|' read -r sel ts f; do
		check
		gopprof -raw "$f" >"$tmp/want" 2>&1
		gopprof -raw "$tmp/got-$n.pb.gz" >"$tmp/got" 2>&1
		if ! cmp -s "$tmp/want" "$tmp/got"; then
			failed "$u: $f: the profile rebuilt from $sel at $ts differs under go tool pprof -raw"
			diff "$tmp/want" "$tmp/got" | head -10 || true
		fi
		n=$((n + 1))
	done <"$list"
done

# ---- spread over the shards ---------------------------------------------------------
for t in series strings functions mappings locations stacks profiles samples; do
	na=$(sql "$A" "SELECT count() FROM profd.${t}_local FINAL")
	nb=$(sql "$B" "SELECT count() FROM profd.${t}_local FINAL")
	nall=$(sql "$A" "SELECT count() FROM profd.$t FINAL")
	echo "$t: $na on A, $nb on B"
	check
	[ "$na" -gt 0 ] && [ "$nb" -gt 0 ] || failed "$t: rows are not on both shards ($na on A, $nb on B)"
	check
	[ $((na + nb)) = "$nall" ] || failed "$t: $na + $nb rows on the shards, $nall through the Distributed table"
done
check
[ "$(sql "$A" "SELECT count() FROM profd.profiles")" = "$nprof" ] ||
	failed "profiles: $(sql "$A" "SELECT count() FROM profd.profiles") rows through the Distributed table, want $nprof"
# a series lives on one shard: no series_id of profiles or samples on both nodes
for t in profiles samples; do
	sql "$A" "SELECT DISTINCT series_id FROM profd.${t}_local ORDER BY series_id" >"$tmp/sa"
	sql "$B" "SELECT DISTINCT series_id FROM profd.${t}_local ORDER BY series_id" >"$tmp/sb"
	check
	[ -z "$(LC_ALL=C comm -12 <(LC_ALL=C sort "$tmp/sa") <(LC_ALL=C sort "$tmp/sb"))" ] || failed "$t: a series has rows on both shards"
done
# content ids on one shard each
for t in strings stacks; do
	sql "$A" "SELECT DISTINCT id FROM profd.${t}_local ORDER BY id" >"$tmp/ia"
	sql "$B" "SELECT DISTINCT id FROM profd.${t}_local ORDER BY id" >"$tmp/ib"
	check
	[ -z "$(LC_ALL=C comm -12 <(LC_ALL=C sort "$tmp/ia") <(LC_ALL=C sort "$tmp/ib"))" ] || failed "$t: an id has rows on both shards"
done

# ---- merge over a range through the Distributed tables -------------------------------
files=("$h/heap.pb.gz" "$h/heap-2.pb.gz" "$h/heap-3.pb.gz" "$h/heap.pb.gz")
for u in "$A" "$B"; do
	cha merge "$u" 'many{job="x"}' 0 9223372036854775807 "$tmp/m.pb.gz"
	gopprof -proto "${files[@]}" >"$tmp/gm.pb.gz" 2>/dev/null
	check
	if ! diff <(gopprof -raw "$tmp/m.pb.gz" 2>&1 | sed '/^Locations/,$d') \
		<(gopprof -raw "$tmp/gm.pb.gz" 2>&1 | sed '/^Locations/,$d') >"$tmp/diff.out"; then
		failed "$u: merge: header or samples differ from go tool pprof's merge under -raw"
		head -20 "$tmp/diff.out"
	fi
	for i in 0 1 2 3; do
		check
		if ! diff <(gopprof -top -nodecount=100000 -sample_index=$i "$tmp/m.pb.gz" 2>&1 | sed -n '/^Showing/,$p') \
			<(gopprof -top -nodecount=100000 -sample_index=$i "${files[@]}" 2>&1 | sed -n '/^Showing/,$p') >"$tmp/diff.out"; then
			failed "$u: merge [$i]: -top differs from go tool pprof's"
			head -20 "$tmp/diff.out"
		fi
	done
done

# ---- a merge of series on both shards while every row is there twice ----------------
# The parts' merges are stopped on both nodes, and the profiles written once through
# each node: each shard holds two copies of its rows, not yet merged away, when the
# merge (FINAL and GROUP BY on every shard) reads them.
sql "$A" "SYSTEM STOP MERGES" >/dev/null
sql "$B" "SYSTEM STOP MERGES" >/dev/null
dargs=()
dsel=()
dfiles=()
hf=("$h/heap.pb.gz" "$h/heap-2.pb.gz" "$h/heap-3.pb.gz")
for i in 0 1 2 3 4 5 6 7 8 9; do
	dsel+=("dup{job=\"x\",n=\"$i\"}")
	dfiles+=("${hf[i % 3]}")
	dargs+=("dup{job=\"x\",n=\"$i\"}" $((1700000500000 + i * 1000)) "${hf[i % 3]}")
done
cha write "$A" "${dargs[@]}" >/dev/null
chb write "$B" "${dargs[@]}" >/dev/null
dup_rows() { sql "$1" "SELECT count(), uniqExact(series_id, ts, ordinal) FROM profd.samples_local WHERE ts >= 1700000500000 AND ts < 1700000600000"; }
for u in "$A" "$B"; do
	read -r all once < <(dup_rows "$u")
	echo "$u: $all sample rows of the dup series, $once distinct"
	check
	[ "$once" -gt 0 ] && [ "$all" = $((2 * once)) ] ||
		failed "$u: want every sample of the dup series twice on this shard, got $all rows of $once"
done
for u in "$A" "$B"; do
	if [ "$u" = "$A" ]; then cha merge-series "$u" 1700000500000 1700000599999 "$tmp/dm.pb.gz" "${dsel[@]}"
	else chb merge-series "$u" 1700000500000 1700000599999 "$tmp/dm.pb.gz" "${dsel[@]}"; fi
	gopprof -proto "${dfiles[@]}" >"$tmp/gdm.pb.gz" 2>/dev/null
	check
	if ! diff <(gopprof -raw "$tmp/dm.pb.gz" 2>&1 | sed '/^Locations/,$d') \
		<(gopprof -raw "$tmp/gdm.pb.gz" 2>&1 | sed '/^Locations/,$d') >"$tmp/diff.out"; then
		failed "$u: merge of 10 series on both shards, rows twice: header or samples differ from go tool pprof's under -raw"
		head -20 "$tmp/diff.out"
	fi
	for i in 0 1 2 3; do
		check
		if ! diff <(gopprof -top -nodecount=100000 -sample_index=$i "$tmp/dm.pb.gz" 2>&1 | sed -n '/^Showing/,$p') \
			<(gopprof -top -nodecount=100000 -sample_index=$i "${dfiles[@]}" 2>&1 | sed -n '/^Showing/,$p') >"$tmp/diff.out"; then
			failed "$u: merge of 10 series on both shards, rows twice [$i]: -top differs from go tool pprof's"
			head -20 "$tmp/diff.out"
		fi
	done
done
# still twice: the merge read the duplicates, not rows a merge of parts had cleaned
for u in "$A" "$B"; do
	read -r all once < <(dup_rows "$u")
	check
	[ "$all" = $((2 * once)) ] || failed "$u: the duplicates were merged away during the test ($all rows of $once)"
done
sql "$A" "SYSTEM START MERGES" >/dev/null
sql "$B" "SYSTEM START MERGES" >/dev/null

# ---- a shard down: the insert fails instead of being queued -------------------------
pid_b=${CH_PIDS#* }
kill "$pid_b"
wait "$pid_b" 2>/dev/null || true
CH_PIDS=${CH_PIDS%% *}
check
rargs=()
for i in $(seq 1 8); do rargs+=("down{i=\"$i\"}" $((1700000200000 + i)) "$h/heap.pb.gz"); done
if out=$(cha write "$A" "${rargs[@]}" 2>&1); then
	failed "a write through A with shard 2 down was acknowledged"
else
	echo "$out" | grep -qF "$CH_TCP_B" || failed "the failed write does not name node $CH_TCP_B: $out"
fi
ch_launch "$tmp/server/b" "$B" 1700 >"$tmp/server/b/pid"
CH_PIDS="$CH_PIDS $(cat "$tmp/server/b/pid")"
cha write "$A" "${rargs[@]}" >/dev/null
check
[ "$(chb series "$B" | grep -c '^down{')" = 8 ] || failed "the writes after shard 2 came back are not all listed"
nprof=$((nprof + 8))

# ---- retention on both shards -----------------------------------------------------------
day=86400000
rargs=()
for i in $(seq 1 12); do
	rargs+=("ret{age=\"old\",i=\"$i\"}" $((3 * day + i)) "$h/heap.pb.gz")
	rargs+=("ret{age=\"new\",i=\"$i\"}" $((5 * day + i)) "$h/heap.pb.gz")
done
cha write "$A" "${rargs[@]}" >/dev/null
old_parts() { sql "$1" "SELECT count() FROM system.parts WHERE database = 'profd' AND table IN ('samples_local', 'profiles_local') AND active AND partition = '19700104'"; }
check
[ "$(old_parts "$A")" -gt 0 ] && [ "$(old_parts "$B")" -gt 0 ] ||
	failed "the old day's profiles are not on both shards: $(old_parts "$A") parts on A, $(old_parts "$B") on B"
chb drop "$B" $((5 * day)) >"$tmp/dropped"
check
[ "$(old_parts "$A")" = 0 ] && [ "$(old_parts "$B")" = 0 ] ||
	failed "retention left old parts: $(old_parts "$A") on A, $(old_parts "$B") on B"
check
grep -q '^dropped 4 partitions' "$tmp/dropped" || failed "retention should drop 2 partitions on each of 2 nodes: $(cat "$tmp/dropped")"
for i in 1 7; do
	check
	[ -z "$(cha times "$A" "ret{age=\"old\",i=\"$i\"}" 0 $((10 * day)))" ] || failed "ret{age=\"old\",i=\"$i\"} survived retention"
	check
	[ "$(cha times "$B" "ret{age=\"new\",i=\"$i\"}" 0 $((10 * day)))" = $((5 * day + i)) ] ||
		failed "retention dropped ret{age=\"new\",i=\"$i\"}"
done
check
[ "$(sql "$A" "SELECT count() FROM profd.profiles WHERE ts >= 1700000000000 AND ts < 1700000500000")" = "$nprof" ] ||
	failed "retention dropped recent profiles"

echo "clickhouse_cluster: $checked checks"
exit $fail
