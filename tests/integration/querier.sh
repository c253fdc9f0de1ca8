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
