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

# Normalises a `data` object into sorted lines: metric<TAB>time<TAB>value.
norm='if .resultType == "scalar" or .resultType == "string" then
		"{}\t\(.result[0])\t\(.result[1])"
	elif .resultType == "vector" then
		.result[] | "\(.metric | to_entries | sort_by(.key) | from_entries | tojson)\t\(.value[0])\t\(.value[1])"
	else
		.result[] | (.metric | to_entries | sort_by(.key) | from_entries | tojson) as $m |
		.values[] | "\($m)\t\(.[0])\t\(.[1])"
	end'

# Compares two normalised files: same keys, values within 1e-9 relative.
compare() {
	awk -F'\t' '
	function special(v) { return v == "NaN" || v == "+Inf" || v == "-Inf" }
	NR == FNR { want[$1 "\t" $2] = $3; n++; next }
	{
		k = $1 "\t" $2; m++
		if (!(k in want)) { print "extra point " k " = " $3; bad = 1; next }
		w = want[k]; delete want[k]
		if (special(w) || special($3)) {
			if (w != $3) { print "at " k ": prometheus " w ", profd " $3; bad = 1 }
			next
		}
		d = w - $3; if (d < 0) d = -d
		s = w < 0 ? -w : w
		if (d > 1e-9 * s && d > 1e-300) { print "at " k ": prometheus " w ", profd " $3; bad = 1 }
	}
	END { for (k in want) { print "missing point " k; bad = 1 } exit bad }' "$1" "$2"
}

checked=0
failed=0
run_one() { # kind expr args...
	local kind=$1 expr=$2; shift 2
	local p
	if [ "$kind" = instant ]; then
		p=$(curl -sS "$base/api/v1/query" --data-urlencode "query=$expr" -d "time=$1")
		"$drv" instant data.om "$1" "$expr" >ours.json || true
	else
		p=$(curl -sS "$base/api/v1/query_range" --data-urlencode "query=$expr" \
			-d "start=$1" -d "end=$2" -d "step=$3")
		"$drv" range data.om "$1" "$2" "$3" "$expr" >ours.json || true
	fi
	if [ "$(echo "$p" | jq -r .status)" != success ]; then
		# an error in Prometheus must be an error of the same type in profd
		if [ "$(jq -r .errorType ours.json)" != "$(echo "$p" | jq -r .errorType)" ]; then
			echo "$kind $expr $*: prometheus: $p; profd: $(cat ours.json)"
			failed=$((failed + 1))
		fi
		checked=$((checked + 1))
		return
	fi
	echo "$p" | jq -r ".data | $norm" | sort >theirs.txt
	if ! jq -r "$norm" ours.json 2>/dev/null | sort >ours.txt; then
		echo "$kind $expr $*: profd failed: $(cat ours.json)"
		failed=$((failed + 1))
		return
	fi
	if ! out=$(compare theirs.txt ours.txt); then
		echo "$kind $expr $*:"
		echo "$out" | head -5
		failed=$((failed + 1))
	fi
	checked=$((checked + 1))
}

nonempty=0
while IFS= read -r expr; do
	case "$expr" in '' | '#'*) continue ;; esac
	for t in 1700000100 1700000400.5 1700001800 1700002345.678 1700003590 1700004000; do
		run_one instant "$expr" "$t"
	done
	run_one range "$expr" 1700000000 1700003700 97
	[ -s theirs.txt ] && nonempty=$((nonempty + 1))
done <"$queries"

echo "checked $checked queries, $nonempty expressions with data in the range query, $failed differ"
[ "$failed" = 0 ] || fail "$failed queries differ from Prometheus"
[ "$nonempty" -gt 50 ] || fail "too few expressions returned data: $nonempty"
