#!/usr/bin/env bash
# clickhouse_api.sh: the API answers the same from ClickHouse as from the local
# store. The profiles of every type of testdata/profiles/prometheus-series, in two series per
# type, are imported into a local store (profd tsdb import) and written to a
# ClickHouse started here (clickhouse_tool write, the writer profd uses); two
# profd servers without scrape configs serve them, one local, one with
# --storage.clickhouse.url, and every answer is compared:
#   - /api/v1/query_range timestamps, /api/v1/series, labels, label values
#   - a single profile (report=proto) under go tool pprof -raw, against the file too
#   - a merge over a range, a diff of two merges, group_by, tag_focus/tag_ignore and
#     group_by_sample_label (report=top JSON equal; merges also equal to
#     go tool pprof -top over the same files)
#   - a merge of 300 series (more than one ClickHouse query takes), pushed to the
#     local server, equal from both and to go tool pprof -top
#   - /prometheus/api/v1/query_range of every profile total (values over time)
#   - admin operations answer 501 naming the ClickHouse mode
# Then a schema of version 1 (the statements as profd created them before version
# 2, holding the same rows without totals) is migrated by a third profd at start
# and answers the same, totals summed from samples.
#
#   clickhouse_api.sh PROFD CLICKHOUSE_TOOL TESTDATA [CORPUS]
set -euo pipefail

profd=$(realpath "$1")
tool=$(realpath "$2")
data=$(cd "$3" && pwd)
corpus=${4:-${PD_CORPUS:-$data/profiles/prometheus-series}}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pids=()
. "$here/support/clickhouse.sh"
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait "${pids[@]}" 2>/dev/null || true
	ch_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0
failed() { echo "FAIL: $*"; fail=1; }
die() { echo "FAIL: $*"; for f in "$tmp"/*.log; do [ -f "$f" ] && tail -5 "$f"; done; exit 1; }
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || die "$what (waited ${timeout} s)"
		sleep 0.2
	done
}
[ -d "$corpus" ] || die "no corpus at $corpus (testdata/profiles/prometheus-series, or PD_CORPUS: a directory of <type>/<n>.pb.gz)"

pprof_bin=$(go env GOTOOLDIR)/pprof
[ -x "$pprof_bin" ] || pprof_bin="go tool pprof"
raw() { (cd "$tmp" && $pprof_bin -raw -symbolize=none "$@" 2>&1); }
top() { (cd "$tmp" && $pprof_bin -top -nodefraction=0 -symbolize=none "$@" 2>&1 | sed -n '/^Showing/,$p'); }

# ---- the profiles: per type, the first 6 files, alternately in instance a and b ----
per_type=${PD_CH_API_PER_TYPE:-6}
types=()
wargs=()
for dir in "$corpus"/*/; do
	type=$(basename "$dir")
	mapfile -t fs < <(ls "$dir" | grep '\.pb\.gz$' | sort -n | head -"$per_type")
	[ "${#fs[@]}" -ge 2 ] || continue
	types+=("$type")
	for inst in a b; do
		files=()
		for ((i = 0; i < ${#fs[@]}; i++)); do
			if { [ "$inst" = a ] && ((i % 2 == 0)); } || { [ "$inst" = b ] && ((i % 2 == 1)); }; then
				files+=("$dir${fs[i]}")
				wargs+=("$type{job=\"corpus\",instance=\"$inst\"}" auto "$dir${fs[i]}")
			fi
		done
		printf '%s\n' "${files[@]}" >"$tmp/files-$type-$inst"
		"$profd" tsdb import --storage.tsdb.path="$tmp/local" \
			--labels="$type{job=\"corpus\",instance=\"$inst\"}" "${files[@]}" 2>>"$tmp/import.log" ||
			die "profd tsdb import of $type/$inst failed"
	done
done
[ "${#types[@]}" -ge 3 ] || die "the corpus has fewer than 3 profile types"

ch_start "$tmp/server" 1700
url=$CH_URL
sql() { curl -sS --fail-with-body "$url" --data-binary "$1"; }
"$tool" schema "$url"
"$tool" write "$url" "${wargs[@]}" >/dev/null

# times of every written profile, for the ranges below
mapfile -t all_ms < <(for ((i = 2; i < ${#wargs[@]}; i += 3)); do echo "${wargs[i]}"; done |
	tr '\n' '\0' | xargs -0 "$tool" filetime - | sort -n)
lo_ms=${all_ms[0]}
hi_ms=${all_ms[${#all_ms[@]} - 1]}
sec() { echo "$(($1 / 1000)).$(printf %03d $(($1 % 1000)))"; }
start=$(sec "$lo_ms")
end=$(sec "$hi_ms")

# ---- two servers ---------------------------------------------------------------------
printf 'global:\n  scrape_interval: 1m\n' >"$tmp/empty.yml"
# no retention: the corpus has the dates it was taken on, and a retention time
# measured from the clock (ClickHouse's days) would drop it once it is older
serve() { # name, storage directory, extra flags...
	local name=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	timeout --foreground 1500 "$profd" run --config.file="$tmp/empty.yml" --storage.tsdb.path="$dir" \
		--web.listen-address=127.0.0.1:0 --web.enable-admin-api --storage.tsdb.retention.time=0 \
		"$@" 2>"$tmp/$name.log" &
	pids+=($!)
	listening() { sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/$name.log" 2>/dev/null | grep -q .; }
	wait_for 60 "profd $name did not start" listening
	sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/$name.log" | head -1 >"$tmp/$name.port"
}
serve local_srv "$tmp/local"
serve ch_srv "$tmp/ch" --storage.clickhouse.url="$url"
A=http://127.0.0.1:$(cat "$tmp/local_srv.port")
B=http://127.0.0.1:$(cat "$tmp/ch_srv.port")

# compare PATH [curl args...]: the same JSON from both servers
compare() {
	local what=$1
	shift
	checked=$((checked + 1))
	curl -sS -G "$A$what" "$@" >"$tmp/a.json" || true
	curl -sS -G "$B$what" "$@" >"$tmp/b.json" || true
	if ! grep -q '"status":"success"' "$tmp/a.json"; then
		failed "the local server failed $what $*: $(head -c 300 "$tmp/a.json")"
	elif ! cmp -s "$tmp/a.json" "$tmp/b.json"; then
		failed "$what $* differs (local, then ClickHouse):"; diff <(tr , "\n" <"$tmp/a.json") <(tr , "\n" <"$tmp/b.json") | head -8 || true
	fi
}
# proto ARGS...: report=proto from both servers into a.pb.gz and b.pb.gz
proto() {
	curl -fsS -G "$A/api/v1/query" --data-urlencode report=proto "$@" -o "$tmp/a.pb.gz" || die "local: query $*"
	curl -fsS -G "$B/api/v1/query" --data-urlencode report=proto "$@" -o "$tmp/b.pb.gz" || die "clickhouse: query $*"
}
R=(--data-urlencode "start=$start" --data-urlencode "end=$end")

# ---- listings ----------------------------------------------------------------------------
compare /api/v1/query_range --data-urlencode 'query={job="corpus"}' "${R[@]}"
compare /api/v1/query_range --data-urlencode 'query={instance=~"a|z",__name__!~"heap|cpu"}' "${R[@]}"
compare /api/v1/query_range --data-urlencode "query=${types[0]}{instance!=\"a\"}" "${R[@]}"
compare /api/v1/query_range --data-urlencode 'query={job="corpus"}' \
	--data-urlencode "start=$start" --data-urlencode "end=$(sec $(((lo_ms + hi_ms) / 2)))"
compare /api/v1/series --data-urlencode 'match[]={job="corpus"}' "${R[@]}"
compare /api/v1/series --data-urlencode 'match[]={__name__=~"h.*"}' --data-urlencode 'match[]={instance="b"}'
compare /api/v1/labels
compare /api/v1/labels --data-urlencode 'match[]={instance="b"}'
compare /api/v1/label/__name__/values
compare /api/v1/label/instance/values --data-urlencode "match[]=${types[1]}"
# the listing is a real one: every type's two series
curl -sS -G "$B/api/v1/series" --data-urlencode 'match[]={job="corpus"}' "${R[@]}" >"$tmp/s.json"
checked=$((checked + 1))
[ "$(grep -o '"__name__"' "$tmp/s.json" | wc -l)" = $((2 * ${#types[@]})) ] ||
	failed "series from ClickHouse: want $((2 * ${#types[@]})), got $(cat "$tmp/s.json")"

# ---- single profiles -----------------------------------------------------------------
for type in "${types[@]}"; do
	for inst in a b; do
		f=$(head -1 "$tmp/files-$type-$inst")
		t=$("$tool" filetime - "$f")
		proto --data-urlencode "query=$type{instance=\"$inst\"}" --data-urlencode "time=$(sec "$t")"
		checked=$((checked + 1))
		raw "$f" >"$tmp/want"
		raw "$tmp/b.pb.gz" >"$tmp/got"
		raw "$tmp/a.pb.gz" >"$tmp/got_local"
		cmp -s "$tmp/want" "$tmp/got" || failed "$type/$inst at $t: ClickHouse's profile differs from $f under -raw"
		cmp -s "$tmp/got_local" "$tmp/got" || failed "$type/$inst at $t: ClickHouse's profile differs from the local store's"
	done
done

# ---- merges --------------------------------------------------------------------------
for type in "${types[@]}"; do
	proto --data-urlencode "query=$type{job=\"corpus\"}" --data-urlencode mode=merge --data-urlencode aggregation=sum "${R[@]}"
	mapfile -t files < <(cat "$tmp/files-$type-a" "$tmp/files-$type-b")
	for ((idx = 0; idx < 4; idx++)); do
		top -sample_index=$idx "${files[0]}" | grep -q . || break
		checked=$((checked + 1))
		top -sample_index=$idx "${files[@]}" >"$tmp/want"
		top -sample_index=$idx "$tmp/b.pb.gz" >"$tmp/got"
		top -sample_index=$idx "$tmp/a.pb.gz" >"$tmp/got_local"
		cmp -s "$tmp/want" "$tmp/got" ||
			{ diff "$tmp/want" "$tmp/got" | head -5; failed "merge of $type [$idx] from ClickHouse differs from go tool pprof -top"; }
		cmp -s "$tmp/got_local" "$tmp/got" || failed "merge of $type [$idx]: ClickHouse and the local store differ"
	done
	compare /api/v1/query --data-urlencode "query=$type{job=\"corpus\"}" --data-urlencode mode=merge \
		--data-urlencode report=top "${R[@]}"
	compare /api/v1/query --data-urlencode "query=$type{job=\"corpus\"}" --data-urlencode mode=merge \
		--data-urlencode report=meta "${R[@]}"
	compare /api/v1/query --data-urlencode "query=$type{job=\"corpus\"}" --data-urlencode mode=merge \
		--data-urlencode report=top --data-urlencode group_by=instance "${R[@]}"
	# a merge limited by max_profiles
	compare /api/v1/query --data-urlencode "query=$type{job=\"corpus\"}" --data-urlencode mode=merge \
		--data-urlencode report=meta --data-urlencode max_profiles=3 "${R[@]}"
done
# merging types that do not merge: the same refusal
checked=$((checked + 1))
code=$(curl -sS -G -o "$tmp/bad.json" -w '%{http_code}' "$B/api/v1/query" --data-urlencode 'query={job="corpus"}' \
	--data-urlencode mode=merge --data-urlencode report=top "${R[@]}")
[ "$code" = 400 ] && grep -q 'cannot be merged' "$tmp/bad.json" ||
	failed "a merge of every type from ClickHouse: want 400 'cannot be merged', got $code $(cat "$tmp/bad.json")"
# a diff of two merges
proto --data-urlencode mode=diff --data-urlencode aggregation=sum --data-urlencode "a.query=heap{instance=\"a\"}" --data-urlencode "b.query=heap{instance=\"b\"}" \
	--data-urlencode "a.start=$start" --data-urlencode "a.end=$end" --data-urlencode "b.start=$start" --data-urlencode "b.end=$end"
mapfile -t fa <"$tmp/files-heap-a"
mapfile -t fb <"$tmp/files-heap-b"
(cd "$tmp" && $pprof_bin -proto -symbolize=none -output="$tmp/ma.pb.gz" "${fa[@]}" >/dev/null 2>&1)
for idx in 1 3; do
	checked=$((checked + 1))
	top -sample_index=$idx -diff_base="$tmp/ma.pb.gz" "${fb[@]}" >"$tmp/want"
	top -sample_index=$idx "$tmp/b.pb.gz" >"$tmp/got"
	top -sample_index=$idx "$tmp/a.pb.gz" >"$tmp/got_local"
	cmp -s "$tmp/want" "$tmp/got" || { diff "$tmp/want" "$tmp/got" | head -5; failed "diff of heap merges [$idx] from ClickHouse differs from go tool pprof -diff_base"; }
	cmp -s "$tmp/got_local" "$tmp/got" || failed "diff of heap merges [$idx]: ClickHouse and the local store differ"
done
compare /api/v1/query --data-urlencode mode=diff --data-urlencode report=top \
	--data-urlencode "a.query=heap{instance=\"a\"}" --data-urlencode "b.query=heap{instance=\"b\"}" \
	--data-urlencode "a.start=$start" --data-urlencode "a.end=$end" --data-urlencode "b.start=$start" --data-urlencode "b.end=$end"
# labels on samples: tag filters and groups by a sample label (heap's "bytes")
compare /api/v1/query --data-urlencode 'query=heap{job="corpus"}' --data-urlencode mode=merge \
	--data-urlencode report=top --data-urlencode 'tag_focus=bytes=1kb:' "${R[@]}"
compare /api/v1/query --data-urlencode 'query=heap{job="corpus"}' --data-urlencode mode=merge \
	--data-urlencode report=top --data-urlencode 'tag_ignore=bytes=:512' "${R[@]}"
compare /api/v1/query --data-urlencode 'query=heap{job="corpus"}' --data-urlencode mode=merge \
	--data-urlencode report=top --data-urlencode group_by_sample_label=bytes --data-urlencode limit=3 "${R[@]}"
compare /api/v1/query --data-urlencode 'query=heap{job="corpus"}' --data-urlencode mode=merge \
	--data-urlencode report=tags "${R[@]}"

# ---- a merge of more series than one ClickHouse query takes (256) ----------------------
# 300 series of one goroutine profile each, pushed to the local server and written to
# ClickHouse: the API merges them in two queries there, series by series locally. They
# are dated at the end of the corpus' 2 h block range: the local store takes no push
# before the end of its newest block (the imported corpus'), so the files' own times
# would be refused as out of bounds
many=300
many_ms=$(((hi_ms / 7200000 + 1) * 7200000))
mapfile -t gfs < <(ls "$corpus/goroutine" | grep '\.pb\.gz$' | sort -n | head -6)
margs=()
mfiles=()
for ((i = 0; i < many; i++)); do
	f=$corpus/goroutine/${gfs[i % ${#gfs[@]}]}
	mfiles+=("$f")
	margs+=("goroutine{job=\"many\",instance=\"i$i\"}" "$many_ms" "$f")
	curl -fsS --data-binary @"$f" \
		"$A/api/v1/profiles?labels=goroutine%7Bjob%3D%22many%22%2Cinstance%3D%22i$i%22%7D&time=$(sec "$many_ms")" >/dev/null ||
		die "pushing series $i to the local server failed"
done
"$tool" write "$url" "${margs[@]}" >/dev/null
MR=(--data-urlencode 'query=goroutine{job="many"}' --data-urlencode mode=merge --data-urlencode aggregation=sum
	--data-urlencode "start=$(sec $((many_ms - 1000)))" --data-urlencode "end=$(sec $((many_ms + 1000)))")
compare /api/v1/query "${MR[@]}" --data-urlencode report=meta
checked=$((checked + 1))
grep -q "\"profileCount\":$many,\"seriesCount\":$many," "$tmp/b.json" ||
	failed "the merge of $many series from ClickHouse: $(head -c 300 "$tmp/b.json")"
compare /api/v1/query "${MR[@]}" --data-urlencode report=top
proto "${MR[@]}"
checked=$((checked + 1))
top "${mfiles[@]}" >"$tmp/want"
top "$tmp/b.pb.gz" >"$tmp/got"
cmp -s "$tmp/want" "$tmp/got" || { diff "$tmp/want" "$tmp/got" | head -5; failed "the merge of $many series from ClickHouse differs from go tool pprof -top"; }

# ---- values over time ------------------------------------------------------------------
prom_values() { # server
	curl -sS "$1/prometheus/api/v1/label/__name__/values" | grep -o '"[a-z_]*"' | tr -d '"' | grep -v '^data$\|^status$\|^success$'
}
mapfile -t metrics < <(prom_values "$A")
checked=$((checked + 1))
[ "${#metrics[@]}" -gt "${#types[@]}" ] || failed "the local server lists only ${#metrics[@]} metric names"
[ "$(prom_values "$A")" = "$(prom_values "$B")" ] || failed "metric names differ: $(prom_values "$B" | tr '\n' ' ')"
PR=(--data-urlencode "start=$start" --data-urlencode "end=$(sec $((hi_ms + 1000)))" --data-urlencode step=1)
for m in "${metrics[@]}"; do
	compare /prometheus/api/v1/query_range --data-urlencode "query=$m" "${PR[@]}"
done
compare /prometheus/api/v1/query_range --data-urlencode 'query=sum by (instance) (heap_inuse_space_bytes)' "${PR[@]}"
# and they are real values
checked=$((checked + 1))
grep -q '"values":\[\[' "$tmp/b.json" || failed "no values over time from ClickHouse: $(head -c 300 "$tmp/b.json")"

# ---- what ClickHouse mode does not do ---------------------------------------------------
for op in "snapshot" "clean_tombstones" "delete_series?match[]=heap"; do
	checked=$((checked + 1))
	code=$(curl -sS -o "$tmp/adm.json" -w '%{http_code}' -X POST "$B/api/v1/admin/tsdb/$op")
	[ "$code" = 501 ] && grep -q 'ClickHouse' "$tmp/adm.json" ||
		failed "admin $op in ClickHouse mode: want 501 naming ClickHouse, got $code $(cat "$tmp/adm.json")"
done
checked=$((checked + 1))
curl -sS "$B/api/v1/status/tsdb" >"$tmp/st.json"
grep -q '"status":"success"' "$tmp/st.json" && grep -q '"blocks":\[\]' "$tmp/st.json" &&
	grep -q '"storage":"clickhouse","clickhouse":{"database":"profd","cluster":""' "$tmp/st.json" ||
	failed "status/tsdb in ClickHouse mode: want success naming ClickHouse's database, with no blocks, got $(head -c 300 "$tmp/st.json")"
checked=$((checked + 1))
curl -sS -G "$B/api/v1/query_range" --data-urlencode 'query={job="corpus"}' "${R[@]}" >"$tmp/after.json"
curl -sS -G "$A/api/v1/query_range" --data-urlencode 'query={job="corpus"}' "${R[@]}" >"$tmp/want.json"
cmp -s "$tmp/after.json" "$tmp/want.json" || failed "the refused deletion changed what ClickHouse answers"

# ---- a version 1 schema, migrated ---------------------------------------------------------
# version 1's statements (profiles without totals), as profd created them
P='PARTITION BY toYYYYMMDD(toDateTime(intDiv(ts, 1000)))'
sql "CREATE DATABASE v1" >/dev/null
for t in schema_version series strings functions mappings locations stacks samples; do
	sql "CREATE TABLE v1.$t AS profd.$t" >/dev/null
done
sql "CREATE TABLE v1.profiles (series_id UInt64, ts Int64, time_nanos Int64, duration_nanos Int64, period Int64, has_period_type UInt8, period_type UInt64, period_unit UInt64, sample_types Array(UInt64), sample_units Array(UInt64), default_sample_type UInt64, drop_frames UInt64, keep_frames UInt64, doc_url UInt64, comments Array(UInt64), mapping_ids Array(UInt64), mapping_hashes Array(UInt64), location_ids Array(UInt64), location_hashes Array(UInt64), function_ids Array(UInt64), function_hashes Array(UInt64), string_ids Array(UInt64)) ENGINE = ReplacingMergeTree $P ORDER BY (series_id, ts)" >/dev/null
sql "INSERT INTO v1.schema_version VALUES (1, now())" >/dev/null
for t in series strings functions mappings locations stacks samples; do
	sql "INSERT INTO v1.$t SELECT * FROM profd.$t" >/dev/null
done
sql "INSERT INTO v1.profiles SELECT series_id, ts, time_nanos, duration_nanos, period, has_period_type, period_type, period_unit, sample_types, sample_units, default_sample_type, drop_frames, keep_frames, doc_url, comments, mapping_ids, mapping_hashes, location_ids, location_hashes, function_ids, function_hashes, string_ids FROM profd.profiles" >/dev/null
serve v1_srv "$tmp/v1" --storage.clickhouse.url="$url" --storage.clickhouse.database=v1
checked=$((checked + 1))
[ "$(sql "SELECT max(version) FROM v1.schema_version")" = 2 ] || failed "the version 1 schema was not recorded as migrated to 2"
[ "$(sql "SELECT count() FROM system.columns WHERE database = 'v1' AND table = 'profiles' AND name = 'totals'")" = 1 ] ||
	failed "the version 1 profiles table did not gain totals"
[ "$(sql "SELECT countIf(length(totals) = 0) FROM v1.profiles")" -gt 0 ] || failed "the migrated rows should have no totals"
B=http://127.0.0.1:$(cat "$tmp/v1_srv.port")
compare /api/v1/query_range --data-urlencode 'query={job="corpus"}' "${R[@]}"
compare /api/v1/series --data-urlencode 'match[]={job="corpus"}' "${R[@]}"
for m in "${metrics[@]}"; do
	compare /prometheus/api/v1/query_range --data-urlencode "query=$m" "${PR[@]}"
done
compare /api/v1/query --data-urlencode 'query=heap{job="corpus"}' --data-urlencode mode=merge \
	--data-urlencode report=top "${R[@]}"

echo "clickhouse_api: ${#types[@]} types, ${#all_ms[@]} profiles, $checked checks"
[ "$fail" = 0 ] || exit 1
echo PASS
