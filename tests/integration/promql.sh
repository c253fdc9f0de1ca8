#!/bin/bash
# integration_promql: profd's PromQL engine (through tests/support/promql_eval)
# against Debian's Prometheus reading the same samples. The driver generates an hour
# of series as OpenMetrics text; promtool turns it into blocks that Prometheus
# serves; every expression of the queries file is evaluated by both as instant
# queries at several times and as a range query, and the results must match:
# the same series, the same timestamps, values within 1e-9 relative (NaN and
# infinities exactly). Usage: promql.sh PROMQL_EVAL QUERIES_FILE
set -euo pipefail
drv=$1 queries=$2
tmp=$(mktemp -d)
prom_pid=
cleanup() {
	[ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"

"$drv" gen data.om
promtool tsdb create-blocks-from openmetrics data.om promdata >promtool.log 2>&1 ||
	{ cat promtool.log; fail "promtool could not create blocks"; }
echo 'global: {}' >prometheus.yml
port=$("$drv" freeport)
prometheus --config.file=prometheus.yml --storage.tsdb.path=promdata \
	--storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" \
	--enable-feature=promql-negative-offset \
	>prometheus.log 2>&1 &
prom_pid=$!
base="http://127.0.0.1:$port"
deadline=$((SECONDS + 120))
until curl -sf "$base/-/ready" >/dev/null 2>&1; do
	kill -0 "$prom_pid" 2>/dev/null || { cat prometheus.log; fail "prometheus exited"; }
	[ $SECONDS -lt $deadline ] || { cat prometheus.log; fail "prometheus not ready in 120s"; }
	sleep 0.2
done
# the blocks are loaded once the series are visible
until [ "$(curl -sf "$base/api/v1/series" --data-urlencode 'match[]={__name__=~".+"}' \
	-d start=1700000000 -d end=1700003600 | jq '.data | length')" = 12 ]; do
	[ $SECONDS -lt $deadline ] || fail "prometheus does not serve the 12 generated series"
	sleep 0.2
done

# every (kind, times, expression), evaluated by profd's engine in one run
times="1700000100 1700000400.5 1700001800 1700002345.678 1700003590 1700004000"
: >list.tsv
while IFS= read -r expr; do
	case "$expr" in '' | '#'*) continue ;; esac
	for t in $times; do
		printf 'instant\t%s\t%s\n' "$t" "$expr" >>list.tsv
	done
	printf 'range\t1700000000\t1700003700\t97\t%s\n' "$expr" >>list.tsv
done <"$queries"
"$drv" batch data.om list.tsv >ours.jsonl
[ "$(wc -l <list.tsv)" = "$(wc -l <ours.jsonl)" ] || fail "the driver did not answer every query"

# Prometheus's answers, one a line, in the same order
while IFS=$'\t' read -r kind a b c d; do
	if [ "$kind" = instant ]; then
		curl -sS "$base/api/v1/query" --data-urlencode "query=$b" -d "time=$a"
	else
		curl -sS "$base/api/v1/query_range" --data-urlencode "query=$d" \
			-d "start=$a" -d "end=$b" -d "step=$c"
	fi
	echo
done <list.tsv >theirs.jsonl
[ "$(wc -l <list.tsv)" = "$(grep -c . theirs.jsonl)" ] || fail "prometheus did not answer every query"

# Both sides as lines `query number<TAB>metric<TAB>time<TAB>value`; an error as
# `n<TAB>ERROR<TAB>errorType<TAB>-`, so that an error must be an error of the same
# type on the other side.
norm='def lines: if .resultType == "scalar" or .resultType == "string" then
		"{}\t\(.result[0])\t\(.result[1])"
	elif .resultType == "vector" then
		.result[] | "\(.metric | to_entries | sort_by(.key) | from_entries | tojson)\t\(.value[0])\t\(.value[1])"
	else
		.result[] | (.metric | to_entries | sort_by(.key) | from_entries | tojson) as $m |
		.values[] | "\($m)\t\(.[0])\t\(.[1])"
	end;
	[inputs] | to_entries[] | .key as $i | .value |
	if .errorType then "\($i)\tERROR\t\(.errorType)\t-"
	elif .status then .data | lines | "\($i)\t\(.)"
	else lines | "\($i)\t\(.)" end'
jq -rn "$norm" theirs.jsonl >theirs.txt || fail "prometheus answered something that is not JSON"
jq -rn "$norm" ours.jsonl >ours.txt || fail "profd answered something that is not JSON"

# Same keys; values within 1e-9 relative, NaN and infinities exactly.
awk -F'\t' -v queries=list.tsv '
function special(v) { return v == "NaN" || v == "+Inf" || v == "-Inf" || v == "-" }
function report(i, msg) {
	if (!(i in shown) && nbad < 40)
		print "query " i ": " what[i] ": " msg
	if (!(i in shown)) { shown[i] = 1; nbad++ }
}
FILENAME == queries { what[FNR - 1] = $0; next }
FILENAME ~ /theirs/ { want[$1 "\t" $2 "\t" $3] = $4; if ($2 != "ERROR") data[$1] = 1; next }
{
	k = $1 "\t" $2 "\t" $3
	if (!(k in want)) { report($1, "extra point " $2 " " $3 " = " $4); next }
	w = want[k]; delete want[k]
	if (special(w) || special($4)) {
		if (w != $4) report($1, "at " $2 " " $3 ": prometheus " w ", profd " $4)
		next
	}
	d = w - $4; if (d < 0) d = -d
	s = w < 0 ? -w : w
	if (d > 1e-9 * s && d > 1e-300) report($1, "at " $2 " " $3 ": prometheus " w ", profd " $4)
}
END {
	for (k in want) { split(k, p, "\t"); report(p[1], "missing point " p[2] " " p[3]) }
	n = 0; for (i in data) n++
	printf "checked %d queries, %d with data, %d differ\n", length(what), n, nbad
	if (n < length(what) / 2) { print "too few queries returned data"; exit 1 }
	exit nbad > 0
}' list.tsv theirs.txt ours.txt || fail "profd differs from Prometheus"
