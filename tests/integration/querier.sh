#!/usr/bin/env bash
# querier.sh: Pyroscope's query API (querier.v1.QuerierService over Connect)
# against a running profd. Go CPU and heap profiles are pushed with POST
# /api/v1/profiles, three of one service (service_name="shop") and two of a
# scraped-looking series (job="scraped", no service_name); then
# tests/querier/querier_client.py, a Python client of its own (Debian's
# python3-protobuf), makes the data source's calls in its order, protobuf and
# JSON, and the errors. Its answers are checked here against the references:
# SelectMergeStacktraces' total and per-function self values against `go tool
# pprof -top` of the same files merged, SelectMergeProfile's pprof against the
# same -top, and SelectSeries against /prometheus/api/v1/query_range's
# sum_over_time for the same selector and step. profd must still be ready after,
# and stop cleanly (no leak or bad access reported by the sanitizers).
#   querier.sh PROFD SOURCE_DIR TESTDATA
set -euo pipefail

profd=$(realpath "$1")
src=$(realpath "$2")
testdata=$(realpath "$3")
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/profd.log
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$log" 2>/dev/null; exit 1; }
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}
listening() { port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1 || true); [ -n "$port" ]; }
ready() { curl -fsS -o /dev/null "$api/-/ready"; }

printf 'global:\n  scrape_interval: 1m\n' >"$tmp/profd.yml"
timeout --foreground 300 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --web.enable-lifecycle --query.max-flamegraph-nodes=1000000 2>"$log" &
pid=$!
pids+=("$pid")
wait_for 60 "profd did not start listening" listening
api=http://127.0.0.1:$port
wait_for 60 "profd did not become ready" ready

now=$(date +%s)
g=$testdata/profiles/goapp
push() { # push FILE LABELS TIME
	local l
	l=$(jq -rn --arg x "$2" '$x | @uri')
	curl -fsS -o /dev/null --data-binary "@$1" "$api/api/v1/profiles?labels=$l&time=$3" ||
		fail "push of $1 $2"
}
# times 10 s past the minute, so that no profile lies on a step boundary below
t0=$(( (now - 600) / 60 * 60 + 10 ))
push "$g/cpu.pb.gz" '{__name__="profile",service_name="shop"}' $t0
push "$g/cpu-2.pb.gz" '{__name__="profile",service_name="shop"}' $((t0 + 60))
push "$g/cpu-3.pb.gz" '{__name__="profile",service_name="shop"}' $((t0 + 180))
push "$g/cpu-large.pb.gz" '{__name__="profile",job="scraped",instance="a:1"}' $((t0 + 120))
push "$g/heap.pb.gz" '{__name__="heap",job="scraped",instance="a:1"}' $((t0 + 120))
start=$(( (t0 - 30) * 1000 ))
end=$(( (t0 + 300) * 1000 ))

/usr/bin/python3 "$src/tests/querier/querier_client.py" "$tmp/gen" "$src" "$api" "$tmp" $start $end ||
	fail "the query API client's checks"

# `go tool pprof -top` of the merged files: flat per function, and the total
top() { # top FILES...: "total N" and "function flat" lines, sorted
	go tool pprof -top -nodefraction=0 -nodecount=1000000 -unit=ns -sample_index=cpu "$@" 2>/dev/null |
		awk '/Total samples|accounting for/ { for (i = 1; i <= NF; i++) if ($i ~ /ns$/ && $(i-1) == "of") t = $i }
		     /^ *[0-9]+ns / { f = $1; sub(/ns$/, "", f); if (f != 0) { n = $6; for (i = 7; i <= NF; i++) n = n " " $i; sub(/ \(inline\)$/, "", n); s[n] += f } }
		     END { sub(/ns$/, "", t); print "total " t; for (k in s) printf "%s %.0f\n", k, s[k] }' | LC_ALL=C sort
}
flame() { LC_ALL=C sort "$1"; }
top "$g/cpu.pb.gz" "$g/cpu-2.pb.gz" "$g/cpu-3.pb.gz" >"$tmp/want_shop"
diff <(flame "$tmp/flame_shop.txt") "$tmp/want_shop" >"$tmp/d" ||
	{ head -20 "$tmp/d"; fail "SelectMergeStacktraces of shop differs from go tool pprof -top"; }
grep -q '^total [1-9]' "$tmp/want_shop" || fail "no total in go tool pprof's report"
top "$g/cpu-large.pb.gz" >"$tmp/want_scraped"
diff <(flame "$tmp/flame_scraped.txt") "$tmp/want_scraped" >"$tmp/d" ||
	{ head -20 "$tmp/d"; fail "SelectMergeStacktraces of the scraped series differs from go tool pprof -top"; }
# SelectMergeProfile: the same report as the files merged
report() { go tool pprof -top -nodefraction=0 -nodecount=1000000 -sample_index=cpu "$@" 2>/dev/null | sed -n '/^ *flat/,$p'; }
diff <(report "$tmp/merged.pb") <(report "$g/cpu.pb.gz" "$g/cpu-2.pb.gz" "$g/cpu-3.pb.gz") >"$tmp/d" ||
	{ head -20 "$tmp/d"; fail "SelectMergeProfile differs from go tool pprof of the same files"; }

# SelectSeries against /prometheus: sum_over_time over each step
curl -fsS "$api/prometheus/api/v1/query_range" \
	--data-urlencode 'query=sum_over_time(profile_cpu_nanoseconds{service_name="shop"}[60s])' \
	--data-urlencode "start=$((start / 1000))" --data-urlencode "end=$((end / 1000))" \
	--data-urlencode step=60 >"$tmp/prom.json" || fail "/prometheus query_range"
jq -c '[.data.result[0].values[] | [(.[0] * 1000 | floor), (.[1] | tonumber)]]' "$tmp/prom.json" >"$tmp/prom_points"
jq -c '.[0].points | map([.[0], .[1]])' "$tmp/series.json" >"$tmp/our_points"
[ "$(jq length "$tmp/our_points")" -ge 3 ] || fail "SelectSeries has too few points: $(cat "$tmp/series.json")"
diff "$tmp/prom_points" "$tmp/our_points" >"$tmp/d" ||
	{ cat "$tmp/d"; fail "SelectSeries differs from /prometheus's sum_over_time"; }

# the render API (/pyroscope/render): Flamebearer JSON of the same merge
cpu=process_cpu:cpu:nanoseconds:cpu:nanoseconds
render() { # render OUT QUERY-STRING...: the status
	local out=$1
	shift
	curl -sS -o "$out" -w '%{http_code}' -G "$@" "$api/pyroscope/render"
}
fb_selfs() { # the "total N" and "function self" lines of a Flamebearer answer
	jq -r '.flamebearer as $f | "total \($f.numTicks)",
		([$f.levels[] | . as $l | range(0; length; 4) | {n: $f.names[$l[. + 3]], s: $l[. + 2]}] |
		 map(select(.n != "total")) | group_by(.n)[] | {n: .[0].n, s: (map(.s) | add)} |
		 select(.s != 0) | "\(.n) \(.s)")' "$1" | LC_ALL=C sort
}
code=$(render "$tmp/r.json" --data-urlencode "query=$cpu{service_name=\"shop\"}" \
	--data-urlencode "from=$((start / 1000))" --data-urlencode "until=$((end / 1000))")
[ "$code" = 200 ] || fail "render answered $code: $(head -c 300 "$tmp/r.json")"
diff <(fb_selfs "$tmp/r.json") "$tmp/want_shop" >"$tmp/d" ||
	{ head -20 "$tmp/d"; fail "render's flame graph differs from go tool pprof -top"; }
jq -e '.version == 1 and .metadata == {"format":"single","spyName":"","sampleRate":1000000000,"units":"samples","name":"cpu"}
	and .groups == null and .heatmap == null and .timeline.durationDelta == 15
	and (.timeline.samples | add) == .flamebearer.numTicks' "$tmp/r.json" >/dev/null ||
	fail "render's metadata or timeline: $(jq -c '.metadata, .timeline.durationDelta, (.timeline.samples | add)' "$tmp/r.json")"
# the same range in other forms: milliseconds, and now-<offset> (covering every profile)
code=$(render "$tmp/r2.json" --data-urlencode "query=$cpu{service_name=\"shop\"}" \
	--data-urlencode "from=$start" --data-urlencode "until=$end")
[ "$code" = 200 ] && jq -e --slurpfile a "$tmp/r.json" '.flamebearer == $a[0].flamebearer' "$tmp/r2.json" >/dev/null ||
	fail "render with times in ms differs from the same in seconds"
code=$(render "$tmp/r2.json" --data-urlencode "name=$cpu{service_name=\"shop\"}" --data-urlencode from=now-1h)
[ "$code" = 200 ] && jq -e --slurpfile a "$tmp/r.json" '.flamebearer.numTicks == $a[0].flamebearer.numTicks' "$tmp/r2.json" >/dev/null ||
	fail "render name= from=now-1h: $code $(head -c 300 "$tmp/r2.json")"
# max-nodes: at most that many nodes besides the root and "other", the total kept
code=$(render "$tmp/r3.json" --data-urlencode "query=$cpu{}" --data-urlencode from=now-1h --data-urlencode max-nodes=10)
[ "$code" = 200 ] && jq -e '.flamebearer as $f | ([$f.levels[1:][] | . as $l | range(0; length; 4) |
	select($f.names[$l[. + 3]] != "other")] | length) <= 10 and ($f.names | index("other")) != null' "$tmp/r3.json" >/dev/null ||
	fail "render max-nodes=10: $code $(head -c 300 "$tmp/r3.json")"
# groupBy: one timeline a group, each summing its service's profiles
code=$(render "$tmp/r4.json" --data-urlencode "query=$cpu{}" --data-urlencode from=now-1h \
	--data-urlencode groupBy=service_name --data-urlencode aggregation=sum)
shop_total=$(jq .flamebearer.numTicks "$tmp/r.json")
[ "$code" = 200 ] && jq -e --argjson shop "$shop_total" '(.groups | keys) == ["scraped","shop"] and
	(.groups.shop.samples | add) == $shop and (.groups.scraped.samples | add) > 0' "$tmp/r4.json" >/dev/null ||
	fail "render groupBy=service_name: $code $(jq -c '.groups | map_values(.samples | add)' "$tmp/r4.json" 2>&1 | head -c 300)"
# format=dot: Graphviz's dot lays it out
code=$(render "$tmp/r.dot" --data-urlencode "query=$cpu{}" --data-urlencode from=now-1h \
	--data-urlencode format=dot --data-urlencode max-nodes=8)
[ "$code" = 200 ] && head -1 "$tmp/r.dot" | grep -q '^digraph' || fail "render format=dot: $code $(head -c 300 "$tmp/r.dot")"
[ "$(grep -c '^N[0-9]* \[label' "$tmp/r.dot")" -le 8 ] || fail "render format=dot max-nodes=8 drew more nodes"
if command -v dot >/dev/null; then
	dot -Tsvg "$tmp/r.dot" >"$tmp/r.svg" 2>"$tmp/dot.err" || fail "dot -Tsvg refused the DOT: $(cat "$tmp/dot.err")"
	grep -q '<svg' "$tmp/r.svg" || fail "dot -Tsvg drew no SVG"
fi
# render-diff: shop against the scraped series, each side its own total
curl -sS -o "$tmp/d.json" -w '%{http_code}' -G "$api/pyroscope/render-diff" >"$tmp/code" \
	--data-urlencode "leftQuery=$cpu{service_name=\"shop\"}" --data-urlencode leftFrom=now-1h \
	--data-urlencode "rightQuery=$cpu{service_name=\"scraped\"}" --data-urlencode rightFrom=now-1h
scraped_total=$(awk '$1 == "total" { print $2 }' "$tmp/want_scraped")
[ "$(cat "$tmp/code")" = 200 ] && jq -e --argjson l "$shop_total" --argjson r "$scraped_total" \
	'.metadata.format == "double" and .leftTicks == $l and .rightTicks == $r and
	 .flamebearer.numTicks == $l + $r and (.flamebearer.levels[0] | length) == 7' "$tmp/d.json" >/dev/null ||
	fail "render-diff: $(cat "$tmp/code") $(head -c 300 "$tmp/d.json")"
# malformed parameters: 400 with Connect's error naming what was wrong
bad() { # bad WANT-IN-MESSAGE PARAMS...
	local want=$1
	shift
	code=$(render "$tmp/e.json" "$@")
	[ "$code" = 400 ] && jq -e --arg w "$want" '.code == "invalid_argument" and (.message | contains($w))' "$tmp/e.json" >/dev/null ||
		fail "render $*: want 400 naming $want, got $code $(head -c 300 "$tmp/e.json")"
}
bad '"query" is required' --data-urlencode from=now-1h
bad 'profile-type selection' --data-urlencode 'query={service_name="shop"}'
bad 'failed to parse "query"' --data-urlencode "query=$cpu{bad"
bad '"from"' --data-urlencode "query=$cpu" --data-urlencode from=now-1fortnight
bad '"until"' --data-urlencode "query=$cpu" --data-urlencode until=yesterday
bad '"max-nodes"' --data-urlencode "query=$cpu" --data-urlencode max-nodes=ten
bad '"aggregation"' --data-urlencode "query=$cpu" --data-urlencode aggregation=max
bad 'longer than the limit' --data-urlencode "query=$cpu" --data-urlencode from=now-1y
code=$(curl -sS -o "$tmp/e.json" -w '%{http_code}' -G "$api/pyroscope/render-diff" \
	--data-urlencode "leftQuery=$cpu" --data-urlencode "rightQuery=memory:inuse_space:bytes:space:bytes")
[ "$code" = 400 ] && jq -e '.message == "profile types must match"' "$tmp/e.json" >/dev/null ||
	fail "render-diff of two types: $code $(head -c 300 "$tmp/e.json")"

# under /pyroscope/ as well
code=$(curl -sS -o "$tmp/out" -w '%{http_code}' -H 'Content-Type: application/json' -d '{}' \
	"$api/pyroscope/querier.v1.QuerierService/ProfileTypes")
[ "$code" = 200 ] && jq -e '.profileTypes | length >= 4' "$tmp/out" >/dev/null ||
	fail "/pyroscope/querier.v1.QuerierService/ProfileTypes answered $code: $(head -c 300 "$tmp/out")"
# a gzip request body
printf '{"name":"service_name"}' | gzip >"$tmp/req.gz"
code=$(curl -sS -o "$tmp/out" -w '%{http_code}' -H 'Content-Type: application/json' -H 'Content-Encoding: gzip' \
	--data-binary "@$tmp/req.gz" "$api/querier.v1.QuerierService/LabelValues")
[ "$code" = 200 ] && jq -e '.names == ["scraped","shop"]' "$tmp/out" >/dev/null ||
	fail "a gzip LabelValues answered $code: $(head -c 300 "$tmp/out")"
# a body past the limit of POSTed forms (8 MiB): Connect's error, status 413
head -c $((9 << 20)) /dev/zero >"$tmp/big"
code=$(curl -sS -o "$tmp/out" -w '%{http_code}' -H 'Content-Type: application/proto' \
	--data-binary "@$tmp/big" "$api/querier.v1.QuerierService/LabelNames")
[ "$code" = 413 ] && jq -e '.code == "invalid_argument" and (.message | test("larger than"))' "$tmp/out" >/dev/null ||
	fail "a 9 MiB body answered $code: $(head -c 300 "$tmp/out")"
# GET is not a Connect unary call here
code=$(curl -sS -o /dev/null -w '%{http_code}' "$api/querier.v1.QuerierService/ProfileTypes")
[ "$code" = 405 ] || fail "GET answered $code, want 405"
ready || fail "profd is not ready after the calls"
# it stops cleanly: with the sanitizers, a leak or a bad access makes its exit non-zero
curl -fsS -o /dev/null -X POST "$api/-/quit" || fail "/-/quit"
st=0
wait "$pid" || st=$?
pids=()
[ "$st" = 0 ] || fail "profd exited with $st after the calls"
grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error' "$log" && fail "the sanitizers reported an error"
echo "querier.sh: all checks passed"
