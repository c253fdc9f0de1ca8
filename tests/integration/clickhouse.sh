#!/usr/bin/env bash
# clickhouse.sh: pkg/clickhouse against Debian's clickhouse-server (18.16), started
# here on loopback ports with its data in a temporary directory:
#   - the schema is created twice without error (idempotent), as a user whose
#     credentials come from a file; a wrong password fails with ClickHouse's message
#   - every testdata profile and the shared corpus (when beside the repository)
#     are written through the batched writer, read back, and `go tool pprof -raw`
#     prints the same for the rebuilt profile as for the original
#   - writing everything again adds no stack, location, function, mapping, string
#     or sample once the tables are merged (OPTIMIZE TABLE ... FINAL)
#   - a merge over a range, summed by ClickHouse, equals go tool pprof's merge of
#     the same files (-raw header and samples, and -top of every sample type)
#   - so does a merge of six series written twice with the parts' merges stopped
#     (every sample row there twice when the merge reads)
#   - retention drops the partitions of old days only
#
#   clickhouse.sh CLICKHOUSE_TOOL TESTDATA [CORPUS]
set -euo pipefail

tool=$(realpath "$1")
data=$(cd "$2" && pwd)
corpus=${3:-${PD_CORPUS:-$data/../../shared/corpus/prometheus}}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
. "$here/support/clickhouse.sh"
trap 'ch_stop; rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0

# the pprof binary of go's tool directory, run directly (the go command's own
# start-up would cost more than the comparison across hundreds of profiles)
pprof_bin=$(go env GOTOOLDIR)/pprof
[ -x "$pprof_bin" ] || pprof_bin="go tool pprof"
gopprof() { (cd "$tmp" && $pprof_bin -symbolize=none "$@"); }
failed() { echo "FAIL: $*"; fail=1; }

CH_TEST_PASSWORD=pw-$RANDOM$RANDOM
ch_start "$tmp/server" 1700
url=$CH_URL
printf 'profd\n%s\n' "$CH_TEST_PASSWORD" >"$tmp/credentials"
printf 'profd\nnot-the-password\n' >"$tmp/wrong"
ch() { "$tool" --credentials "$tmp/credentials" "$@"; }
sql() { curl -sS --fail-with-body -u "profd:$CH_TEST_PASSWORD" "$url" --data-binary "$1"; }

# ---- schema ----------------------------------------------------------------------
ch schema "$url"
ch schema "$url"
checked=$((checked + 1))
[ "$(sql 'SELECT count() FROM profd.schema_version FINAL')" = 1 ] ||
	failed "schema_version should hold one row after two schema creations"
checked=$((checked + 1))
if out=$("$tool" --credentials "$tmp/wrong" schema "$url" 2>&1); then
	failed "a wrong password was accepted"
elif ! echo "$out" | grep -q 'Code: [0-9]*, e.displayText() = .*(statement "CREATE DATABASE'; then
	failed "a wrong password's error lacks ClickHouse's message or the statement: $out"
fi

# ---- every profile written, read back ----------------------------------------------
known=$here/golden/known-differences.txt
args=()
list=$tmp/list
: >"$list"
while IFS= read -r f; do
	rel=${f#"$data"/profiles/}
	grep -q "^profiles/$rel " "$known" && continue
	gopprof -raw "$f" >/dev/null 2>&1 || continue
	sel="tp{file=\"$rel\"}"
	# the profile's own time, so that profiles fall in their days' partitions
	args+=("$sel" auto "$f")
	echo "$sel|$f" >>"$list"
done < <(find "$data/profiles" -type f \( -name '*.pb.gz' -o -name '*.pb' \) | LC_ALL=C sort)
if [ -d "$corpus" ]; then
	for dir in "$corpus"/*/; do
		type=$(basename "$dir")
		for f in "$dir"*.pb.gz; do
			sel="$type{src=\"corpus\"}"
			args+=("$sel" auto "$f")
			echo "$sel|$f" >>"$list"
		done
	done
else
	echo "note: no corpus at $corpus (set PD_CORPUS); checking the testdata profiles only"
fi
ch write "$url" --batch 64 "${args[@]}"

# each file's time in ms, as the writer took it ("auto")
cut -d'|' -f2 "$list" | tr '\n' '\0' | xargs -0 "$tool" filetime - >"$tmp/times"
paste -d'|' "$list" "$tmp/times" >"$tmp/list2"
# every profile rebuilt by one process, then compared one by one
dargs=()
n=0
while IFS='|' read -r sel f ts; do
	dargs+=("$sel" "$ts" "$tmp/got-$n.pb.gz")
	n=$((n + 1))
done <"$tmp/list2"
ch dump "$url" "${dargs[@]}"
n=0
while IFS='|' read -r sel f ts; do
	checked=$((checked + 1))
	gopprof -raw "$f" >"$tmp/want" 2>&1
	gopprof -raw "$tmp/got-$n.pb.gz" >"$tmp/got" 2>&1
	if ! cmp -s "$tmp/want" "$tmp/got"; then
		failed "$f: the profile rebuilt from $sel at $ts differs under go tool pprof -raw"
		diff "$tmp/want" "$tmp/got" | head -10 || true
	fi
	n=$((n + 1))
done <"$tmp/list2"
# the timestamps of a series are those written
checked=$((checked + 1))
want_ts=$(grep -F 'tp{file="goapp/heap.pb.gz"}|' "$tmp/list2" | cut -d'|' -f3)
[ "$(ch times "$url" 'tp{file="goapp/heap.pb.gz"}' -9223372036854775807 9223372036854775807)" = "$want_ts" ] ||
	failed "times of tp{file=\"goapp/heap.pb.gz\"} should be $want_ts"
echo "round trip: $n profiles"

checked=$((checked + 1))
nseries=$(ch series "$url" | wc -l)
want_series=$(cut -d'|' -f1 "$list" | sort -u | wc -l)
[ "$nseries" = "$want_series" ] || failed "series lists $nseries label sets, want $want_series"

# ---- deduplication ---------------------------------------------------------------
tables="strings functions mappings locations stacks series samples profiles"
counts() {
	for t in $tables; do
		sql "OPTIMIZE TABLE profd.$t FINAL" >/dev/null
		printf '%s=%s ' "$t" "$(sql "SELECT count() FROM profd.$t")"
	done
}
before=$(counts)
ch write "$url" --batch 64 "${args[@]}" >/dev/null
after=$(counts)
checked=$((checked + 1))
[ "$before" = "$after" ] || failed "writing the same profiles twice changed row counts: $before -> $after"
echo "rows: $after"
# and the rows are real: a stack for every distinct stack of the goapp heap
checked=$((checked + 1))
[ "$(sql "SELECT count() FROM profd.stacks")" -gt 100 ] || failed "suspiciously few stacks"

# ---- merge over a range, summed by ClickHouse --------------------------------------
for set in "goapp/heap.pb.gz goapp/heap-2.pb.gz goapp/heap-3.pb.gz" \
	"goapp/cpu.pb.gz goapp/cpu-2.pb.gz goapp/cpu-3.pb.gz" \
	"labels/cpu.pb.gz labels/cpu-2.pb.gz"; do
	files=()
	margs=()
	ts=1000
	name=m$RANDOM
	for s in $set; do
		files+=("$data/profiles/$s")
		margs+=("$name{set=\"x\"}" "$ts" "$data/profiles/$s")
		ts=$((ts + 1000))
	done
	ch write "$url" "${margs[@]}" >/dev/null
	ch merge "$url" "$name{set=\"x\"}" 0 100000 "$tmp/m.pb.gz"
	gopprof -proto "${files[@]}" >"$tmp/gm.pb.gz" 2>/dev/null
	checked=$((checked + 1))
	if ! diff <(gopprof -raw "$tmp/m.pb.gz" 2>&1 | sed '/^Locations/,$d') \
		<(gopprof -raw "$tmp/gm.pb.gz" 2>&1 | sed '/^Locations/,$d') >"$tmp/diff.out"; then
		failed "merge {$set}: header or samples differ from go tool pprof's merge under -raw"
		head -20 "$tmp/diff.out"
	fi
	ntypes=$(gopprof -raw "$tmp/gm.pb.gz" 2>/dev/null | sed -n '2p' | wc -w)
	for ((i = 0; i < ntypes; i++)); do
		checked=$((checked + 1))
		if ! diff <(gopprof -top -nodecount=100000 -sample_index=$i "$tmp/m.pb.gz" 2>&1 | sed -n '/^Showing/,$p') \
			<(gopprof -top -nodecount=100000 -sample_index=$i "${files[@]}" 2>&1 | sed -n '/^Showing/,$p') >"$tmp/diff.out"; then
			failed "merge {$set} [$i]: -top differs from go tool pprof's"
			head -20 "$tmp/diff.out"
		fi
	done
	# a part of the range: the first profile alone
	checked=$((checked + 1))
	ch merge "$url" "$name{set=\"x\"}" 0 1500 "$tmp/m1.pb.gz"
	gopprof -proto "${files[0]}" >"$tmp/g1.pb.gz" 2>/dev/null
	diff <(gopprof -raw "$tmp/m1.pb.gz" 2>&1 | sed '/^Locations/,$d') \
		<(gopprof -raw "$tmp/g1.pb.gz" 2>&1 | sed '/^Locations/,$d') >/dev/null ||
		failed "merge {$set} of [0, 1500] is not the first profile alone"
done

# ---- a merge of several series while every row is there twice ------------------------
# The parts' merges are stopped and the profiles written twice (two writers): the
# merge (FROM samples FINAL) reads each row once although nothing merged them away.
sql "SYSTEM STOP MERGES" >/dev/null
dargs=()
dsel=()
dfiles=()
hf=("$data/profiles/goapp/heap.pb.gz" "$data/profiles/goapp/heap-2.pb.gz" "$data/profiles/goapp/heap-3.pb.gz")
for i in 0 1 2 3 4 5; do
	dsel+=("dup{n=\"$i\"}")
	dfiles+=("${hf[i % 3]}")
	dargs+=("dup{n=\"$i\"}" $((200000 + i * 1000)) "${hf[i % 3]}")
done
ch write "$url" "${dargs[@]}" >/dev/null
ch write "$url" "${dargs[@]}" >/dev/null
dup_rows() { sql "SELECT count(), uniqExact(series_id, ts, ordinal) FROM profd.samples WHERE ts >= 200000 AND ts < 300000"; }
read -r all once < <(dup_rows)
echo "dup series: $all sample rows, $once distinct"
checked=$((checked + 1))
[ "$once" -gt 0 ] && [ "$all" = $((2 * once)) ] || failed "want every sample of the dup series twice, got $all rows of $once"
ch merge-series "$url" 200000 299999 "$tmp/dm.pb.gz" "${dsel[@]}"
gopprof -proto "${dfiles[@]}" >"$tmp/gdm.pb.gz" 2>/dev/null
checked=$((checked + 1))
if ! diff <(gopprof -raw "$tmp/dm.pb.gz" 2>&1 | sed '/^Locations/,$d') \
	<(gopprof -raw "$tmp/gdm.pb.gz" 2>&1 | sed '/^Locations/,$d') >"$tmp/diff.out"; then
	failed "merge of 6 series, rows twice: header or samples differ from go tool pprof's merge under -raw"
	head -20 "$tmp/diff.out"
fi
for i in 0 1 2 3; do
	checked=$((checked + 1))
	if ! diff <(gopprof -top -nodecount=100000 -sample_index=$i "$tmp/dm.pb.gz" 2>&1 | sed -n '/^Showing/,$p') \
		<(gopprof -top -nodecount=100000 -sample_index=$i "${dfiles[@]}" 2>&1 | sed -n '/^Showing/,$p') >"$tmp/diff.out"; then
		failed "merge of 6 series, rows twice [$i]: -top differs from go tool pprof's"
		head -20 "$tmp/diff.out"
	fi
done
read -r all once < <(dup_rows)
checked=$((checked + 1))
[ "$all" = $((2 * once)) ] || failed "the duplicates were merged away during the test ($all rows of $once)"
sql "SYSTEM START MERGES" >/dev/null
# profiles of different sample types in one range are refused, naming the reason
ch write "$url" 'mixed{}' 1000 "$data/profiles/goapp/heap.pb.gz" 'mixed{}' 2000 "$data/profiles/goapp/cpu.pb.gz" >/dev/null
checked=$((checked + 1))
if out=$(ch merge "$url" 'mixed{}' 0 3000 "$tmp/x.pb.gz" 2>&1); then
	failed "a merge of a heap and a CPU profile was accepted"
else
	echo "$out" | grep -q 'different sample types' || failed "mixed merge error: $out"
fi

# ---- retention ----------------------------------------------------------------------
day=86400000
ch write "$url" 'ret{age="old"}' $((3 * day + 5)) "$data/profiles/goapp/heap.pb.gz" \
	'ret{age="new"}' $((5 * day + 5)) "$data/profiles/goapp/heap.pb.gz" >/dev/null
ch drop "$url" $((5 * day)) >"$tmp/dropped"
checked=$((checked + 1))
[ -z "$(ch times "$url" 'ret{age="old"}' 0 $((10 * day)))" ] || failed "the old day's profile survived retention"
checked=$((checked + 1))
[ "$(ch times "$url" 'ret{age="new"}' 0 $((10 * day)))" = $((5 * day + 5)) ] ||
	failed "retention dropped the profile of the cut-off day"
checked=$((checked + 1))
ch dump "$url" 'ret{age="new"}' $((5 * day + 5)) "$tmp/r.pb.gz" ||
	failed "the profile kept by retention cannot be rebuilt"
# the testdata profiles of recent days are untouched
checked=$((checked + 1))
[ -n "$(ch times "$url" 'tp{file="goapp/heap.pb.gz"}' $((10 * day)) 9223372036854775807)" ] ||
	failed "retention dropped a recent profile"
grep -q '^dropped [1-9]' "$tmp/dropped" || failed "retention reports no dropped partition: $(cat "$tmp/dropped")"

echo "clickhouse: $checked checks"
exit $fail
