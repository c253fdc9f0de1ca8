#!/usr/bin/env bash
# prom_api.sh: the Prometheus-compatible API under /prometheus, against Prometheus.
#
# Real profiles (testdata/profiles) are pushed into a running profd at fixed times.
# Independently of profd, every pushed file's totals and duration are read from its
# protobuf by tests/support/pprof_totals.go (checked against `go tool pprof -raw`'s
# column sums, which leave out samples without a stack); they are written as
# OpenMetrics samples with the metric names docs/api.md gives, which promtool turns
# into blocks that Debian's Prometheus serves. Then:
#   - every expression of prom_api_queries.txt is asked of profd with `promtool query
#     instant` (at several times) and `promtool query range`, and of Prometheus; the
#     answers must have the same series and timestamps, values within 1e-9 relative;
#   - a few values are checked against the files' totals directly;
#   - `promtool query series` and `promtool query labels`, /labels and /metadata;
#   - error shapes: status, errorType and a message naming the bad parameter;
#   - the Grafana dashboard of examples/grafana: every query evaluates on profd.
#
#   prom_api.sh PROFD PROMQL_EVAL TESTS_DIR EXAMPLES_DIR TESTDATA
set -euo pipefail
profd=$(realpath "$1")
freeport_drv=$(realpath "$2")
tests=$(cd "$3" && pwd)
examples=$(cd "$4" && pwd)
data=$(cd "$5" && pwd)
queries=$tests/integration/prom_api_queries.txt
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail() {
	echo "FAIL: $*" >&2
	tail -5 "$tmp/profd.log" >&2 2>/dev/null || true
	exit 1
}
# Runs CMD every 0.2 s until it succeeds; fails with WHAT after TIMEOUT seconds.
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}

# ---- profd, and the profiles pushed into it ------------------------------------------
echo 'scrape_configs: []' >"$tmp/profd.yml"
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--storage.tsdb.retention.time=0 --web.listen-address=127.0.0.1:0 \
	--query.max-samples=50000 >"$tmp/profd.log" 2>&1 &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start" listening
api="http://127.0.0.1:$port"
P="$api/prometheus"

g=$data/profiles/goapp p=$data/profiles/prometheus
T0=1700000000
# series (profile type and labels), first push's offset from T0, files pushed in turn,
# one every 15 s, 6 pushes per series
cat >"$tmp/plan" <<EOF
heap instance="a",job="app" 0 $g/heap.pb.gz $g/heap-2.pb.gz $g/heap-3.pb.gz
heap instance="b",job="app" 5 $p/heap.pb.gz $g/heap-3.pb.gz
profile instance="a",job="app" 0 $g/cpu.pb.gz $g/cpu-2.pb.gz $g/cpu-3.pb.gz
profile instance="b",job="app" 7 $p/cpu.pb.gz $g/cpu-2.pb.gz
goroutine instance="a",job="app" 3 $g/goroutine.pb.gz $p/goroutine.pb.gz
allocs instance="c",job="batch" 11 $g/delta-allocs.pb.gz $g/allocs.pb.gz $g/allocs.pb.gz
mutex instance="a",job="app" 2 $g/mutex.pb.gz $p/mutex.pb.gz
EOF
: >"$tmp/pushed" # type labels time file
while read -r type labels off files; do
	read -r -a fs <<<"$files"
	for ((i = 0; i < 6; i++)); do
		f=${fs[i % ${#fs[@]}]}
		t=$((T0 + off + 15 * i))
		lq=$(jq -rn --arg v "$type{$labels}" '$v | @uri')
		curl -fsS -o /dev/null --data-binary "@$f" "$api/api/v1/profiles?labels=$lq&time=$t" ||
			fail "pushing $f as $type{$labels} at $t"
		echo "$type $labels $t $f" >>"$tmp/pushed"
	done
done <"$tmp/plan"

# ---- the expected samples, without profd ---------------------------------------------
# tests/support/pprof_totals.go reads each pushed file's protobuf with Go's standard
# library: per sample type the sum over all samples, the sum over samples with a
# stack, and the duration. go tool pprof -raw lists only samples with a stack: its
# column sums must equal the second sum (so the reader agrees with pprof).
awk '{print $4}' "$tmp/pushed" | sort -u >"$tmp/files"
mapfile -t flist <"$tmp/files"
(cd "$tmp" && go run "$tests/support/pprof_totals.go" "${flist[@]}") >"$tmp/totals" ||
	fail "reading the totals of the pushed files"
: >"$tmp/rawsums"
for f in "${flist[@]}"; do
	(cd "$tmp" && go tool pprof -raw -symbolize=none "$f" 2>/dev/null) | awk -v f="$f" '
		/^Samples:/ { hdr = 1; next }
		hdr == 1 { gsub(/\[dflt\]/, ""); n = split($0, ty, " "); hdr = 2; next }
		hdr == 2 && /^[A-Z]/ { hdr = 3 }
		hdr == 2 && /^ *-?[0-9]+( +-?[0-9]+)*:/ {
			sub(/:.*/, ""); m = split($0, v, " ")
			for (k = 1; k <= m; k++) s[k] += v[k]
		}
		END {
			if (!n) { print "no Samples header in " f > "/dev/stderr"; exit 1 }
			for (k = 1; k <= n; k++) printf "%s\t%s\t%.17g\n", f, ty[k], s[k]
		}' >>"$tmp/rawsums" || fail "go tool pprof -raw $f"
done
diff <(awk -F'\t' '{printf "%s\t%s/%s\t%s\n", $1, $2, $3, $5}' "$tmp/totals") "$tmp/rawsums" >"$tmp/d" ||
	{ cat "$tmp/d"; fail "the sums of samples with a stack differ from go tool pprof -raw's"; }

# OpenMetrics: name = <type>_<sample type>_<unit>, bytes outside [a-zA-Z0-9_] as _,
# and <name>_per_second = total / (duration / 1e9) for files with a duration
awk -F'\t' '
	FILENAME ~ /totals$/ { nt[$1]++; k = nt[$1]; ty[$1, k] = $2 "_" $3; sum[$1, k] = $4; dur[$1] = $6; next }
	{
		split($0, a, " "); f = a[4]
		for (k = 1; k <= nt[f]; k++) {
			name = a[1] "_" ty[f, k]; gsub(/[^a-zA-Z0-9_]/, "_", name)
			printf "%s\t{%s}\t%d\t%.17g\n", name, a[2], a[3], sum[f, k]
			if (dur[f] > 0)
				printf "%s_per_second\t{%s}\t%d\t%.17g\n", name, a[2], a[3], sum[f, k] / (dur[f] / 1e9)
		}
	}' "$tmp/totals" "$tmp/pushed" | sort -t$'\t' -k1,1 -k2,2 -k3,3n >"$tmp/expected.tsv"
awk -F'\t' '
	$1 != last { printf "# TYPE %s gauge\n", $1; last = $1 }
	{ printf "%s%s %s %s\n", $1, $2, $4, $3 }
	END { print "# EOF" }' "$tmp/expected.tsv" >"$tmp/data.om"
nmetrics=$(cut -f1,2 "$tmp/expected.tsv" | sort -u | wc -l)
[ "$nmetrics" -ge 20 ] || fail "only $nmetrics metrics expected"

# ---- Prometheus on the same samples --------------------------------------------------
promtool tsdb create-blocks-from openmetrics "$tmp/data.om" "$tmp/promdata" >"$tmp/promtool.log" 2>&1 ||
	{ cat "$tmp/promtool.log"; fail "promtool could not create blocks"; }
echo 'global: {}' >"$tmp/prometheus.yml"
pport=$("$freeport_drv" freeport)
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/promdata" \
	--storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$pport" \
	>"$tmp/prometheus.log" 2>&1 &
pids+=($!)
prom="http://127.0.0.1:$pport"
wait_for 120 "prometheus did not become ready" curl -sf -o /dev/null "$prom/-/ready"
prom_series() {
	[ "$(curl -sf "$prom/api/v1/series" --data-urlencode 'match[]={__name__=~".+"}' \
		-d start=$((T0 - 60)) -d end=$((T0 + 600)) | jq '.data | length')" = "$nmetrics" ]
}
wait_for 120 "prometheus does not serve the $nmetrics series" prom_series

# ---- every query: promtool against profd, the HTTP API of Prometheus -----------------
# between pushes, and where the lookback (5m) has lost the series last pushed before T0+78
times="$((T0 + 80)).5 $((T0 + 378))"
rstart=$((T0 - 30)) rend=$((T0 + 420)) rstep=13
: >"$tmp/list.tsv"
while IFS= read -r expr; do
	case "$expr" in '' | '#'*) continue ;; esac
	for t in $times; do printf 'instant\t%s\t%s\n' "$t" "$expr" >>"$tmp/list.tsv"; done
	printf 'range\t-\t%s\n' "$expr" >>"$tmp/list.tsv"
done <"$queries"
# two workers, each over every other query; answers go back in list order
ask() { # worker number: answers the queries with line numbers of its parity
	local w=$1 kind t expr out k=0
	: >"$tmp/ours.$w"
	: >"$tmp/theirs.$w"
	while IFS=$'\t' read -r kind t expr; do
		k=$((k + 1))
		[ $((k % 2)) = "$w" ] || continue
		if [ "$kind" = instant ]; then
			out=$(promtool query instant -o json --time="$t" -- "$P" "$expr" 2>"$tmp/err.$w") ||
				{ echo "promtool query instant --time=$t '$expr': $(cat "$tmp/err.$w")" >"$tmp/failed.$w"; return 1; }
			curl -sS "$prom/api/v1/query" --data-urlencode "query=$expr" -d "time=$t" >>"$tmp/theirs.$w"
		else
			out=$(promtool query range -o json --start="$rstart" --end="$rend" --step="${rstep}s" \
				-- "$P" "$expr" 2>"$tmp/err.$w") ||
				{ echo "promtool query range '$expr': $(cat "$tmp/err.$w")" >"$tmp/failed.$w"; return 1; }
			curl -sS "$prom/api/v1/query_range" --data-urlencode "query=$expr" \
				-d "start=$rstart" -d "end=$rend" -d "step=$rstep" >>"$tmp/theirs.$w"
		fi
		printf '%s\n' "${out:-null}" | jq -c . >>"$tmp/ours.$w" ||
			{ echo "promtool printed something that is not JSON for '$expr': $out" >"$tmp/failed.$w"; return 1; }
		echo >>"$tmp/theirs.$w"
	done <"$tmp/list.tsv"
}
ask 0 &
w0=$!
ask 1 || true
wait "$w0" || true
for w in 0 1; do [ ! -s "$tmp/failed.$w" ] || fail "$(cat "$tmp/failed.$w")"; done
# interleave the workers' answers back into list order (worker 1 took lines 1, 3, ...)
paste -d '\n' "$tmp/ours.1" "$tmp/ours.0" | grep . >"$tmp/ours.jsonl"
paste -d '\n' "$tmp/theirs.1" "$tmp/theirs.0" | grep . >"$tmp/theirs.jsonl"
n=$(wc -l <"$tmp/list.tsv")
[ "$(wc -l <"$tmp/ours.jsonl")" = "$n" ] && [ "$(wc -l <"$tmp/theirs.jsonl")" = "$n" ] ||
	fail "not every query was answered"

# Both as lines `query number<TAB>metric<TAB>time<TAB>value`. promtool -o json prints
# the result value alone (a vector or matrix as a list of series, a scalar as
# [t,"v"]); Prometheus's API answers the envelope.
lines='def series: .metric // {} | to_entries | sort_by(.key) | from_entries | tojson;
	def pts: if type == "array" and length == 0 then empty
		elif type == "array" and (.[0] | type) != "array" and (.[0] | type) != "object" then
			"{}\t\(.[0])\t\(.[1])"
		elif type == "array" then .[] | series as $m |
			if .value then "\($m)\t\(.value[0])\t\(.value[1])"
			else .values[] | "\($m)\t\(.[0])\t\(.[1])" end
		elif type == "object" and .resultType then (.result | pts)
		elif type == "object" and .value then "{}\t\(.value[0])\t\(.value[1])"
		else empty end;'
jq -rn "$lines"' [inputs] | to_entries[] | .key as $i | .value | pts | "\($i)\t\(.)"' \
	"$tmp/ours.jsonl" >"$tmp/ours.txt" || fail "cannot read promtool's answers"
jq -rn "$lines"' [inputs] | to_entries[] | .key as $i | .value |
	if .status != "success" then "\($i)\tERROR\t\(.errorType)\t\(.error)" else .data | pts | "\($i)\t\(.)" end' \
	"$tmp/theirs.jsonl" >"$tmp/theirs.txt" || fail "cannot read Prometheus's answers"
if grep -q $'\tERROR\t' "$tmp/theirs.txt"; then
	grep $'\tERROR\t' "$tmp/theirs.txt" | head -3
	fail "Prometheus refused a query of the list"
fi
awk -F'\t' -v queries="$tmp/list.tsv" '
function special(v) { return v == "NaN" || v == "+Inf" || v == "-Inf" }
function report(i, msg) {
	if (!(i in shown) && nbad < 30) print "query " i " (" what[i] "): " msg
	if (!(i in shown)) { shown[i] = 1; nbad++ }
}
FILENAME == queries { what[FNR - 1] = $1 " " $2 " " $3; next }
FILENAME ~ /theirs/ { want[$1 "\t" $2 "\t" $3] = $4; data[$1] = 1; next }
{
	k = $1 "\t" $2 "\t" $3
	if (!(k in want)) { report($1, "extra point " $2 " " $3 " = " $4); next }
	w = want[k]; delete want[k]
	if (special(w) || special($4)) { if (w != $4) report($1, $2 " " $3 ": prometheus " w ", profd " $4); next }
	d = w - $4; if (d < 0) d = -d
	s = w < 0 ? -w : w
	if (d > 1e-9 * s && d > 1e-300) report($1, $2 " at " $3 ": prometheus " w ", profd " $4)
}
END {
	for (k in want) { split(k, p, "\t"); report(p[1], "missing point " p[2] " " p[3]) }
	n = 0; for (i in data) n++
	printf "prom_api: %d queries, %d with data, %d differ from Prometheus\n", length(what), n, nbad
	if (n < length(what) * 2 / 3) { print "too few queries returned data"; exit 1 }
	exit nbad > 0
}' "$tmp/list.tsv" "$tmp/theirs.txt" "$tmp/ours.txt" || fail "profd's /prometheus differs from Prometheus"

# ---- values straight from the files ---------------------------------------------------
# heap{instance="a"} at T0+45 was heap.pb.gz again (the 4th push: files in turn)
want=$(awk -F'\t' -v f="$g/heap.pb.gz" '$1 == f && $2 == "inuse_space" {print $4}' "$tmp/totals")
got=$(curl -fsS "$P/api/v1/query" --data-urlencode 'query=heap_inuse_space_bytes{instance="a"}' \
	-d time=$((T0 + 50)) | jq -r '.data.result[0].value[1]')
[ "$got" = "$want" ] || fail "heap_inuse_space_bytes{instance=\"a\"} at T0+50 is $got, the file's samples sum to $want"
want=$(awk -F'\t' -v f="$g/cpu-2.pb.gz" '$1 == f && $2 == "cpu" {print $4}' "$tmp/totals")
d=$(awk -F'\t' -v f="$g/cpu-2.pb.gz" '$1 == f && $2 == "cpu" {print $6}' "$tmp/totals")
got=$(curl -fsS "$P/api/v1/query" --data-urlencode 'query=profile_cpu_nanoseconds_per_second{instance="a"}' \
	-d time=$((T0 + 15)) | jq -r '.data.result[0].value[1]')
awk -v got="$got" -v s="$want" -v d="$d" 'BEGIN { w = s / (d / 1e9); x = got - w; if (x < 0) x = -x; exit !(x <= 1e-12 * w) }' ||
	fail "CPU per second at T0+15 is $got, expected $want ns over $d ns"

# ---- series, label values, label names, metadata ------------------------------------------
for m in '{__name__=~"profile_.*"}' 'heap_inuse_space_bytes' '{job="batch"}'; do
	promtool query series --match="$m" --start=$((T0 - 60)) --end=$((T0 + 600)) "$P" >"$tmp/s1" 2>&1 ||
		fail "promtool query series --match=$m: $(cat "$tmp/s1")"
	promtool query series --match="$m" --start=$((T0 - 60)) --end=$((T0 + 600)) "$prom" >"$tmp/s2" 2>&1
	diff <(sort "$tmp/s1") <(sort "$tmp/s2") >/dev/null ||
		fail "promtool query series --match=$m: profd $(cat "$tmp/s1") / Prometheus $(cat "$tmp/s2")"
	grep -q . "$tmp/s1" || fail "promtool query series --match=$m: nothing"
done
for l in __name__ instance job; do
	promtool query labels --start=$((T0 - 60)) --end=$((T0 + 600)) "$P" "$l" >"$tmp/l1" 2>&1 ||
		fail "promtool query labels $l: $(cat "$tmp/l1")"
	promtool query labels --start=$((T0 - 60)) --end=$((T0 + 600)) "$prom" "$l" >"$tmp/l2" 2>&1
	diff "$tmp/l1" "$tmp/l2" >/dev/null || fail "label values of $l: profd $(cat "$tmp/l1") / Prometheus $(cat "$tmp/l2")"
done
for q in '' 'match[]=heap_inuse_space_bytes' 'match[]={job="batch"}'; do
	a=$(curl -fsS -g "$P/api/v1/labels?$q" | jq -c .data)
	b=$(curl -fsS -g "$prom/api/v1/labels?$q" | jq -c .data)
	[ "$a" = "$b" ] || fail "/labels?$q: profd $a, Prometheus $b"
done
curl -fsS -g "$P/api/v1/label/__name__/values?match[]={instance=\"c\"}&limit=3" >"$tmp/lv.json"
[ "$(jq -c .data "$tmp/lv.json")" = '["allocs_alloc_objects_count","allocs_alloc_objects_count_per_second","allocs_alloc_space_bytes"]' ] &&
	[ "$(jq -c .warnings "$tmp/lv.json")" = '["results truncated due to limit"]' ] ||
	fail "label values with limit: $(cat "$tmp/lv.json")"
md=$(curl -fsS "$P/api/v1/metadata?metric=profile_cpu_nanoseconds_per_second")
[ "$(jq -c '.data | keys' <<<"$md")" = '["profile_cpu_nanoseconds_per_second"]' ] &&
	[ "$(jq -r '.data.profile_cpu_nanoseconds_per_second[0] | .type + " " + .unit' <<<"$md")" = "gauge nanoseconds_per_second" ] &&
	jq -e '.data.profile_cpu_nanoseconds_per_second[0].help | test("cpu.*profile")' <<<"$md" >/dev/null ||
	fail "metadata of profile_cpu_nanoseconds_per_second: $md"
nnames=$(cut -f1 "$tmp/expected.tsv" | sort -u | wc -l)
[ "$(curl -fsS "$P/api/v1/metadata" | jq '.data | length')" = "$nnames" ] ||
	fail "metadata does not list the $nnames metric names"
[ "$(curl -fsS "$P/api/v1/metadata?limit=2" | jq '.data | length')" = 2 ] || fail "metadata ignores limit"
[ "$(curl -fsS "$P/api/v1/status/buildinfo" | jq -r .data.version)" = 2.42.0 ] || fail "buildinfo"

# ---- the same over POST forms ---------------------------------------------------------
a=$(curl -fsS "$P/api/v1/query" -d 'query=sum(heap_inuse_space_bytes)' -d time=$((T0 + 100)) | jq -c .data)
b=$(curl -fsS -G "$P/api/v1/query" --data-urlencode 'query=sum(heap_inuse_space_bytes)' -d time=$((T0 + 100)) | jq -c .data)
[ "$a" = "$b" ] && [ "$(jq '.result | length' <<<"$a")" = 1 ] || fail "POST query: $a, GET: $b"
a=$(curl -fsS "$P/api/v1/query_range" -d 'query=goroutine_goroutine_count' -d start=2023-11-14T22:13:30Z \
	-d end=2023-11-14T22:15:00.000Z -d step=1m | jq -c .data)
[ "$(jq -c '[.result[0].values[][0]]' <<<"$a")" = "[$((T0 + 10)),$((T0 + 70))]" ] || fail "query_range with RFC 3339 times and step=1m: $a"

# ---- errors: status, errorType, and the parameter named --------------------------------
expect_error() { # status errorType message-substring curl-args...
	local st=$1 et=$2 msg=$3 code
	shift 3
	code=$(curl -sS -o "$tmp/e.json" -w '%{http_code}' "$@")
	[ "$code" = "$st" ] && [ "$(jq -r .status "$tmp/e.json")" = error ] &&
		[ "$(jq -r .errorType "$tmp/e.json")" = "$et" ] && jq -e --arg m "$msg" '.error | contains($m)' "$tmp/e.json" >/dev/null ||
		fail "$*: wanted $st $et \"$msg\", got $code $(cat "$tmp/e.json")"
}
expect_error 400 bad_data 'invalid parameter "query": 1:1: parse error: no expression found in input' "$P/api/v1/query"
expect_error 400 bad_data 'invalid parameter "query": 1:6: parse error: expected type range vector in call to function "rate", got instant vector' \
	-G "$P/api/v1/query" --data-urlencode 'query=rate(heap_inuse_space_bytes)'
expect_error 400 bad_data 'invalid parameter "query": 1:1: parse error: unknown function with name "histogram_quantile"' \
	-G "$P/api/v1/query" --data-urlencode 'query=histogram_quantile(0.9, heap_inuse_space_bytes)'
expect_error 400 bad_data 'not supported by profd' -G "$P/api/v1/query" \
	--data-urlencode 'query=max_over_time(heap_inuse_space_bytes[5m:1m])'
expect_error 400 bad_data "invalid parameter \"time\": Invalid time value for 'time': cannot parse \"soon\" to a valid timestamp" \
	"$P/api/v1/query?query=1&time=soon"
expect_error 400 bad_data 'invalid parameter "timeout": cannot parse "x" to a valid duration' "$P/api/v1/query?query=1&timeout=x"
expect_error 503 timeout 'query timed out' "$P/api/v1/query?query=heap_inuse_space_bytes&timeout=0"
expect_error 400 bad_data 'invalid parameter "start": cannot parse "" to a valid timestamp' "$P/api/v1/query_range?query=1"
expect_error 400 bad_data 'invalid parameter "end": end timestamp must not be before start time' \
	"$P/api/v1/query_range?query=1&start=10&end=1&step=1"
expect_error 400 bad_data 'invalid parameter "step": cannot parse "" to a valid duration' "$P/api/v1/query_range?query=1&start=1&end=10"
expect_error 400 bad_data 'invalid parameter "step": zero or negative query resolution step widths are not accepted' \
	"$P/api/v1/query_range?query=1&start=1&end=10&step=-5"
expect_error 400 bad_data 'exceeded maximum resolution of 11,000 points per timeseries' \
	"$P/api/v1/query_range?query=1&start=0&end=11001&step=1"
expect_error 400 bad_data 'invalid expression type "range vector" for range query, must be Scalar or instant Vector' \
	-G "$P/api/v1/query_range" --data-urlencode 'query=heap_inuse_space_bytes[1m]' -d start=1 -d end=2 -d step=1
# more points than --query.max-samples=50000: 11,000 steps of every metric
expect_error 422 execution 'query processing would load too many samples into memory' \
	-G "$P/api/v1/query_range" --data-urlencode 'query=last_over_time({__name__=~".+"}[1y])' \
	-d start=$T0 -d end=$((T0 + 10999)) -d step=1
expect_error 400 bad_data 'no match[] parameter provided' "$P/api/v1/series"
expect_error 400 bad_data 'invalid parameter "match[]": 1:12: parse error: unexpected end of input inside braces' \
	-G "$P/api/v1/series" --data-urlencode 'match[]=heap_inuse{'
expect_error 400 bad_data 'invalid parameter "match[]": 1:1: parse error: vector selector must contain at least one non-empty matcher' \
	-G "$P/api/v1/labels" --data-urlencode 'match[]={job=""}'
expect_error 400 bad_data "invalid parameter \"end\": Invalid time value for 'end': cannot parse \"y\" to a valid timestamp" \
	"$P/api/v1/label/job/values?end=y"
expect_error 400 bad_data 'invalid label name: "1x"' "$P/api/v1/label/1x/values"
expect_error 400 bad_data 'limit must be a number' "$P/api/v1/metadata?limit=x"
expect_error 400 bad_data 'invalid parameter "limit"' -g "$P/api/v1/series?match[]=up&limit=x"
expect_error 405 bad_data 'method DELETE not allowed' -X DELETE "$P/api/v1/query"
expect_error 404 not_found 'unknown API endpoint /prometheus/api/v1/query_exemplar' "$P/api/v1/query_exemplar"

# ---- nesting: a chain of operators counts as parentheses do ---------------------------
# 10,000 `+` (20 KB, under the 64 KiB query limit) once overflowed the evaluator's
# stack; now they, and every other shape nested deeper than 200 levels, are refused
# at the position where the limit is crossed, over GET and POST, and the daemon
# answers on
deep='query is nested more than 200 levels deep'
chain="1$(printf '+1%.0s' $(seq 10000))"
expect_error 400 bad_data "invalid parameter \"query\": 1:400: parse error: $deep" \
	-G "$P/api/v1/query" --data-urlencode "query=$chain"
expect_error 400 bad_data "invalid parameter \"query\": 1:400: parse error: $deep" \
	"$P/api/v1/query" --data-urlencode "query=$chain"
expect_error 400 bad_data "invalid parameter \"query\": 1:400: parse error: $deep" \
	"$P/api/v1/query_range" --data-urlencode "query=$chain" -d start=$T0 -d end=$((T0 + 60)) -d step=15
expect_error 400 bad_data "invalid parameter \"query\": 1:201: parse error: $deep" \
	"$P/api/v1/query" --data-urlencode "query=$(printf -- '-%.0s' $(seq 10000))heap_inuse_space_bytes"
expect_error 400 bad_data "invalid parameter \"query\": 1:801: parse error: $deep" \
	"$P/api/v1/query" --data-urlencode "query=1$(printf ' ^ 2%.0s' $(seq 10000))"
expect_error 400 bad_data "invalid parameter \"query\": 1:801: parse error: $deep" \
	-G "$P/api/v1/query" --data-urlencode "query=$(printf 'abs(%.0s' $(seq 10000))1"
expect_error 400 bad_data "invalid parameter \"query\": 1:201: parse error: $deep" \
	"$P/api/v1/query" --data-urlencode "query=$(printf '(%.0s' $(seq 10000))1$(printf ')%.0s' $(seq 10000))"
kill -0 "${pids[0]}" 2>/dev/null || fail "profd died on a deeply nested query"
r=$(curl -fsS "$P/api/v1/query" --data-urlencode "query=1$(printf '+1%.0s' $(seq 199))" -d time=$T0 | jq -c .data.result)
[ "$r" = "[$T0,\"200\"]" ] || fail "a chain of 199 operators: $r"

# ---- the Grafana dashboard's queries evaluate on profd --------------------------------
dash=$examples/grafana/dashboards/profd-demo.json
jq -e . "$dash" >/dev/null || fail "$dash is not JSON"
mapfile -t exprs < <(jq -r '.. | objects | select(has("expr")) | .expr' "$dash")
[ "${#exprs[@]}" -ge 4 ] || fail "the dashboard has only ${#exprs[@]} queries"
for e in "${exprs[@]}"; do
	e=${e//\$__rate_interval/1m}
	e=${e//\$instance/.+}
	r=$(curl -sS -G "$P/api/v1/query_range" --data-urlencode "query=$e" -d start=$T0 -d end=$((T0 + 300)) -d step=15)
	[ "$(jq -r .status <<<"$r")" = success ] || fail "dashboard query $e: $r"
done
echo "prom_api: $(wc -l <"$tmp/pushed") profiles pushed, $nmetrics metrics, ${#exprs[@]} dashboard queries"
