#!/usr/bin/env bash
# ingest.sh: the push endpoints of other profilers, against a running profd with
# curl: Pyroscope's /ingest (pprof, folded, refused formats, bad names), the
# Connect Push call (binary and JSON, gzip, Content-Type refused, Connect's error
# JSON), OTLP's content types and Status body, the limits (--web.max-push-body,
# --ingest.max-stack-depth, --ingest.max-labels-per-series) with their 4xx naming
# the flag, nothing stored by a failed request, the profd_ingest_* metrics, kill -9
# losing nothing acknowledged, then --no-web.enable-push and basic auth.
#
#   ingest.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
testdata=$(realpath "$2")
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
printf 'global:\n  scrape_interval: 1m\n' >"$tmp/profd.yml"
start() {
	: >"$log"
	# (a retention of ten years: the pushed fixtures keep their own times, which a
	# default 15 days behind the scrapes' would refuse once the fixtures are that old)
	timeout --foreground 300 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
		--storage.tsdb.retention.time=3650d \
		--web.listen-address=127.0.0.1:0 --log.level=debug --web.max-push-body=2MB \
		--ingest.max-stack-depth=64 --ingest.max-labels-per-series=12 "$@" 2>"$log" &
	pids+=("$!")
	wait_for 60 "profd did not start listening" listening
	api=http://127.0.0.1:$port
}
listening() { port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1 || true); [ -n "$port" ]; }
# POST BODYFILE URL [curl args...]: the status, the body in $tmp/out
post() {
	local body=$1 url=$2
	shift 2
	curl -sS -o "$tmp/out" -w '%{http_code}' --data-binary "@$body" "$@" "$url"
}
nseries() { curl -fsS "$api/api/v1/series" --data-urlencode 'match[]={service_name=~".+"}' | jq '.data | length'; }
now=$(date +%s)

start
# ---- /ingest, format=pprof: a gzip Go CPU profile, labels with dots in the name
cp "$testdata/profiles/goapp/cpu.pb.gz" "$tmp/cpu.pb.gz"
code=$(post "$tmp/cpu.pb.gz" "$api/ingest?format=pprof&name=shop%7Benv%3Dstaging%2Cprocess.runtime.name%3Dgo%7D&from=$((now - 10))&until=$now&spyName=gospy" \
	-H 'Content-Type: application/octet-stream')
[ "$code" = 200 ] || fail "/ingest pprof answered $code: $(cat "$tmp/out")"
curl -fsS "$api/api/v1/series" --data-urlencode 'match[]={service_name="shop"}' >"$tmp/series.json"
jq -e '.data | length == 1' "$tmp/series.json" >/dev/null || fail "want one series of shop: $(cat "$tmp/series.json")"
jq -e '.data[0] | .__name__ == "profile" and .env == "staging" and .process_runtime_name == "go" and .pyroscope_spy == "gospy"' \
	"$tmp/series.json" >/dev/null || fail "the series' labels: $(cat "$tmp/series.json")"
# the stored profile is the one sent: the same top as profd pprof top on the file
curl -fsS "$api/api/v1/query" --data-urlencode 'query=profile{service_name="shop"}' \
	--data-urlencode "time=$now" --data-urlencode report=top >"$tmp/top.json" || fail "report=top"
"$profd" pprof top "$tmp/cpu.pb.gz" >"$tmp/top-file.txt"
first=$(sed -n '/flat%/{n;p;q}' "$tmp/top-file.txt" | awk '{print $NF}')
jq -e --arg f "$first" '[.data.rows[]?.name // .data[]?.name] | index($f) != null' "$tmp/top.json" >/dev/null ||
	grep -q -- "$first" "$tmp/top.json" || fail "report=top does not name $first: $(head -c 600 "$tmp/top.json")"
# the same profile through /pyroscope/ingest, a second later: a second sample of the series
code=$(post "$tmp/cpu.pb.gz" "$api/pyroscope/ingest?format=pprof&name=shop%7Benv%3Dstaging%2Cprocess.runtime.name%3Dgo%7D&from=$((now - 9))&until=$now&spyName=gospy")
[ "$code" = 200 ] || fail "/pyroscope/ingest answered $code: $(cat "$tmp/out")"

# ---- folded stacks, CPU samples at 100 Hz -> nanoseconds
printf 'main;work;spin 30\nmain;idle 10\n' >"$tmp/folded.txt"
code=$(post "$tmp/folded.txt" "$api/ingest?name=foldapp.cpu%7Bregion%3Deu%7D&from=$((now - 10))&until=$now&sampleRate=100&spyName=pyspy")
[ "$code" = 200 ] || fail "/ingest folded answered $code: $(cat "$tmp/out")"
curl -fsS "$api/api/v1/query" --data-urlencode 'query=profile{service_name="foldapp"}' \
	--data-urlencode "time=$now" --data-urlencode report=top >"$tmp/ftop.json" || fail "folded report=top"
grep -q '"spin"' "$tmp/ftop.json" || fail "the folded profile has no spin: $(head -c 600 "$tmp/ftop.json")"
total=$(curl -fsS "$api/prometheus/api/v1/query" --data-urlencode 'query=profile_cpu_nanoseconds{service_name="foldapp"}' \
	--data-urlencode "time=$now" | jq -r '.data.result[0].value[1]')
[ "$total" = 400000000 ] || fail "folded total $total, want 40 samples at 100 Hz = 400000000 ns"

# ---- JFR: pyroscope-java's multipart form (jfr + labels), each event type its series
jfrdir=$testdata/pyroscope/jfr
code=$(curl -sS -o "$tmp/out" -w '%{http_code}' -F "jfr=@$jfrdir/dump2.jfr.gz;filename=jfr" \
	-F "labels=@$jfrdir/dump2.labels.pb.gz;filename=labels" \
	"$api/ingest?format=jfr&name=javaapp%7Benv%3Dprod%7D&from=$((now - 10))&until=$now&sampleRate=100&spyName=javaspy")
[ "$code" = 200 ] || fail "/ingest jfr answered $code: $(cat "$tmp/out")"
curl -fsS "$api/api/v1/series" --data-urlencode 'match[]={service_name="javaapp"}' >"$tmp/js.json"
for n in profile wall allocs; do
	jq -e --arg n "$n" '[.data[] | select(.__name__ == $n and .env == "prod")] | length > 0' "$tmp/js.json" >/dev/null ||
		fail "no $n series of the JFR: $(jq -c '[.data[].__name__] | unique' "$tmp/js.json")"
done
# ---- speedscope JSON
code=$(post "$testdata/pyroscope/speedscope/simple.speedscope.json" \
	"$api/ingest?format=speedscope&name=scopeapp&from=$((now - 10))&until=$now")
[ "$code" = 200 ] || fail "/ingest speedscope answered $code: $(cat "$tmp/out")"
curl -fsS "$api/api/v1/series" --data-urlencode 'match[]={service_name="scopeapp"}' | jq -e '.data | length == 1' >/dev/null ||
	fail "no speedscope series"

before=$(nseries)
# ---- refused, each with its status and message, storing nothing
printf 'x' >"$tmp/one"
code=$(post "$tmp/one" "$api/ingest?format=trie&name=a.cpu&from=$now")
[ "$code" = 415 ] || fail "format=trie answered $code"
grep -q trie "$tmp/out" || fail "the 415 does not name trie: $(cat "$tmp/out")"
jq -e '.code and .message' "$tmp/out" >/dev/null || fail "not Pyroscope's error JSON: $(cat "$tmp/out")"
code=$(post "$tmp/folded.txt" "$api/ingest?name=bad%7Benv%3D&from=$now")
[ "$code" = 400 ] || fail "a bad name answered $code"
grep -qi name "$tmp/out" || fail "the 400 does not name the parameter: $(cat "$tmp/out")"
printf 'not a profile at all' >"$tmp/junk"
code=$(post "$tmp/junk" "$api/ingest?format=pprof&name=junk.cpu&from=$now")
[ "$code" = 400 ] || fail "a malformed pprof answered $code: $(cat "$tmp/out")"
# a stack deeper than --ingest.max-stack-depth=64
deep=$(seq 1 70 | sed 's/^/f/' | paste -sd';')
printf '%s 1\n' "$deep" >"$tmp/deep.txt"
code=$(post "$tmp/deep.txt" "$api/ingest?name=deep.cpu&from=$now")
[ "$code" = 413 ] || fail "a deep stack answered $code: $(cat "$tmp/out")"
grep -q -- --ingest.max-stack-depth "$tmp/out" || fail "the 413 does not name the flag: $(cat "$tmp/out")"
# more labels than --ingest.max-labels-per-series=12
many=$(seq 1 14 | sed 's/.*/l&=v/' | paste -sd,)
code=$(post "$tmp/folded.txt" "$api/ingest?name=many.cpu%7B$many%7D&from=$now")
[ "$code" = 413 ] || fail "too many labels answered $code: $(cat "$tmp/out")"
grep -q -- --ingest.max-labels-per-series "$tmp/out" || fail "the 413 does not name the flag: $(cat "$tmp/out")"
# a body over --web.max-push-body=2MB
head -c 3000000 /dev/urandom >"$tmp/big"
code=$(post "$tmp/big" "$api/ingest?format=pprof&name=big.cpu&from=$now")
[ "$code" = 413 ] || fail "a 3 MB body answered $code"
grep -q -- --web.max-push-body "$tmp/out" || fail "the 413 does not name the flag: $(cat "$tmp/out")"
# a sample rate past 1 GHz (a sample worth less than a nanosecond), a time past
# what nanoseconds in an int64 hold: 400, and the daemon still answers
code=$(post "$tmp/folded.txt" "$api/ingest?name=rate.cpu&from=$now&sampleRate=4000000000")
[ "$code" = 400 ] && grep -q sampleRate "$tmp/out" || fail "sampleRate=4e9 answered $code: $(cat "$tmp/out")"
code=$(post "$tmp/folded.txt" "$api/ingest?name=late.cpu&from=999999999999")
[ "$code" = 400 ] && grep -q from "$tmp/out" || fail "from=999999999999 answered $code: $(cat "$tmp/out")"
[ "$(nseries)" = "$before" ] || fail "a refused push stored a series: $(nseries) after, $before before"
# a label name that dots would make private (._x -> __x) is left out
code=$(post "$tmp/folded.txt" "$api/ingest?name=dotapp.cpu%7B._foo%3Dx%2Cok%3Dy%7D&from=$now")
[ "$code" = 200 ] || fail "._foo answered $code: $(cat "$tmp/out")"
curl -fsS "$api/api/v1/series" --data-urlencode 'match[]={service_name="dotapp"}' >"$tmp/dot.json"
jq -e '.data[0] | has("__foo") | not' "$tmp/dot.json" >/dev/null && jq -e '.data[0].ok == "y"' "$tmp/dot.json" >/dev/null ||
	fail "._foo became a private label: $(cat "$tmp/dot.json")"
before=$(nseries)

# ---- push.v1.PusherService/Push, Connect unary: JSON, with the profile in base64
b64=$(base64 -w0 "$tmp/cpu.pb.gz")
cat >"$tmp/push.json" <<EOF
{"series":[{"labels":[{"name":"__name__","value":"process_cpu"},{"name":"service_name","value":"alloyapp"},
{"name":"k8s.namespace","value":"prod"}],"samples":[{"rawProfile":"$b64","ID":"a1"}]}]}
EOF
code=$(post "$tmp/push.json" "$api/push.v1.PusherService/Push" -H 'Content-Type: application/json' -H 'Connect-Protocol-Version: 1')
[ "$code" = 200 ] || fail "Connect Push (JSON) answered $code: $(cat "$tmp/out")"
[ "$(cat "$tmp/out")" = "{}" ] || fail "Connect Push (JSON) answered $(cat "$tmp/out"), want {}"
curl -fsS "$api/api/v1/series" --data-urlencode 'match[]={service_name="alloyapp"}' >"$tmp/s2.json"
jq -e '.data[0] | .__name__ == "profile" and .k8s_namespace == "prod"' "$tmp/s2.json" >/dev/null ||
	fail "the pushed series: $(cat "$tmp/s2.json")"
# gzip Content-Encoding
gzip -c "$tmp/push.json" | sed 's/alloyapp/alloyapq/' >/dev/null
sed 's/alloyapp/alloygz/' "$tmp/push.json" | gzip -c >"$tmp/push.json.gz"
code=$(post "$tmp/push.json.gz" "$api/push.v1.PusherService/Push" -H 'Content-Type: application/json' -H 'Content-Encoding: gzip')
[ "$code" = 200 ] || fail "Connect Push (gzip) answered $code: $(cat "$tmp/out")"
# errors: Connect's JSON with its codes
code=$(post "$tmp/push.json" "$api/push.v1.PusherService/Push" -H 'Content-Type: application/grpc')
[ "$code" = 415 ] || fail "gRPC content type answered $code"
jq -e '.code == "unimplemented"' "$tmp/out" >/dev/null || fail "not a Connect error: $(cat "$tmp/out")"
printf '{"series":[{"labels":[],"samples":[{"rawProfile":"!!!"}]}]}' >"$tmp/badpush.json"
code=$(post "$tmp/badpush.json" "$api/push.v1.PusherService/Push" -H 'Content-Type: application/json')
[ "$code" = 400 ] || fail "bad base64 answered $code: $(cat "$tmp/out")"
jq -e '.code == "invalid_argument" and (.message | length > 0)' "$tmp/out" >/dev/null || fail "not invalid_argument: $(cat "$tmp/out")"
printf '\xff\xff\xff' >"$tmp/badpb"
code=$(post "$tmp/badpb" "$api/push.v1.PusherService/Push" -H 'Content-Type: application/proto')
[ "$code" = 400 ] || fail "a malformed protobuf answered $code: $(cat "$tmp/out")"

# ---- OTLP: content types, and the google.rpc.Status body of an error
code=$(post "$tmp/one" "$api/v1development/profiles" -H 'Content-Type: text/plain')
[ "$code" = 415 ] || fail "OTLP text/plain answered $code"
printf '{"resourceProfiles":' >"$tmp/badotlp.json"
code=$(post "$tmp/badotlp.json" "$api/v1development/profiles" -H 'Content-Type: application/json')
[ "$code" = 400 ] || fail "truncated OTLP JSON answered $code: $(cat "$tmp/out")"
jq -e '(.code | type) == "number" and (.message | length > 0)' "$tmp/out" >/dev/null || fail "not a Status: $(cat "$tmp/out")"
printf '{}' >"$tmp/empty.json"
code=$(post "$tmp/empty.json" "$api/v1development/profiles" -H 'Content-Type: application/json')
[ "$code" = 200 ] || fail "an empty OTLP request answered $code: $(cat "$tmp/out")"

# a Go CPU profile as an OTLP exporter sends it, a Profile per sample type of one
# time: stored as one profile of both types (not refused as a duplicate)
ot=$(( (now - 5) * 1000000000 ))
cat >"$tmp/otlp2.json" <<JSON
{"resourceProfiles":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"otlpapp"}}]},
 "scopeProfiles":[{"profiles":[
  {"sampleType":{"typeStrindex":1,"unitStrindex":2},"periodType":{"typeStrindex":3,"unitStrindex":4},
   "period":"10000000","timeUnixNano":"$ot","samples":[{"stackIndex":1,"values":["3"]},{"stackIndex":2,"values":["1"]}]},
  {"sampleType":{"typeStrindex":3,"unitStrindex":4},"periodType":{"typeStrindex":3,"unitStrindex":4},
   "period":"10000000","timeUnixNano":"$ot","samples":[{"stackIndex":1,"values":["30000000"]},{"stackIndex":2,"values":["10000000"]}]}]}]}],
 "dictionary":{"stringTable":["","samples","count","cpu","nanoseconds","main","spin"],
  "functionTable":[{},{"nameStrindex":5},{"nameStrindex":6}],
  "locationTable":[{},{"lines":[{"functionIndex":1}]},{"lines":[{"functionIndex":2}]}],
  "stackTable":[{},{"locationIndices":[2,1]},{"locationIndices":[1]}]}}
JSON
code=$(post "$tmp/otlp2.json" "$api/v1development/profiles" -H 'Content-Type: application/json')
[ "$code" = 200 ] || fail "a split OTLP profile answered $code: $(cat "$tmp/out")"
jq -e '(.partialSuccess.rejectedProfiles // "0" | tostring) == "0"' "$tmp/out" >/dev/null ||
	fail "a split OTLP profile was partly refused: $(cat "$tmp/out")"
curl -fsS "$api/api/v1/query" --data-urlencode 'query=profile{service_name="otlpapp"}' \
	--data-urlencode "time=$((now - 5))" --data-urlencode report=meta >"$tmp/ometa.json" || fail "OTLP report=meta"
jq -e '[.data.sampleTypes[] | "\(.type)/\(.unit)=\(.total)"] == ["samples/count=4", "cpu/nanoseconds=40000000"]' \
	"$tmp/ometa.json" >/dev/null || fail "the split OTLP profile as stored: $(head -c 800 "$tmp/ometa.json")"

# ---- metrics per endpoint and format
curl -fsS "$api/metrics" >"$tmp/metrics"
grep -q '^profd_ingest_profiles_total{endpoint="ingest",format="pprof"} 2$' "$tmp/metrics" ||
	fail "ingest pprof count: $(grep profd_ingest_profiles "$tmp/metrics")"
grep -q '^profd_ingest_profiles_total{endpoint="ingest",format="folded"} 2$' "$tmp/metrics" ||
	fail "ingest folded count: $(grep profd_ingest_profiles "$tmp/metrics")"
grep -q '^profd_ingest_profiles_total{endpoint="push",format="json"} 2$' "$tmp/metrics" ||
	fail "push json count: $(grep profd_ingest_profiles "$tmp/metrics")"
grep -q '^profd_ingest_refused_total{endpoint="ingest",format="[a-z]*",reason="stack_depth"} 1$' "$tmp/metrics" ||
	fail "no stack_depth refusal: $(grep profd_ingest_refused "$tmp/metrics")"
grep -q '^profd_ingest_refused_total{endpoint="ingest",format="unknown",reason="body_size"} 1$' "$tmp/metrics" ||
	fail "no body_size refusal: $(grep profd_ingest_refused "$tmp/metrics")"
grep -q '^profd_ingest_received_bytes_total{endpoint="ingest",format="pprof"} [1-9]' "$tmp/metrics" ||
	fail "no bytes: $(grep profd_ingest_received "$tmp/metrics")"

# ---- acknowledged means durable: kill -9, start again, every series is there
stored=$(nseries)
child=$(pgrep -P "${pids[-1]}" -x profd) || fail "no profd under timeout ${pids[-1]}"
kill -9 "$child"
wait "${pids[-1]}" 2>/dev/null || true
start
[ "$(nseries)" = "$stored" ] || fail "after kill -9: $(nseries) series, $stored acknowledged"
kill "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null || true

# ---- --no-web.enable-push: 404 in the protocol's form, before the body is read
start --no-web.enable-push
code=$(post "$tmp/folded.txt" "$api/ingest?name=x.cpu&from=$now")
[ "$code" = 404 ] || fail "/ingest with pushes disabled answered $code"
code=$(post "$tmp/push.json" "$api/push.v1.PusherService/Push" -H 'Content-Type: application/json')
[ "$code" = 404 ] || fail "Push with pushes disabled answered $code"
jq -e '.code == "unimplemented"' "$tmp/out" >/dev/null || fail "not a Connect error: $(cat "$tmp/out")"
kill "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null || true

# ---- basic auth from --web.config.file covers the push endpoints
# bcrypt (cost 4) of the password s3cret-Alice-pw, as tls.sh has it
printf 'basic_auth_users:\n  alice: %s\n' '$2b$04$lTbj2cbV50JV28eWZcVK/e2YMM6bUxf/0.GRX2tBbI1jrwi21w2iK' >"$tmp/web.yml"
start --web.config.file="$tmp/web.yml"
code=$(post "$tmp/folded.txt" "$api/ingest?name=authapp.cpu&from=$now")
[ "$code" = 401 ] || fail "/ingest without credentials answered $code"
code=$(post "$tmp/folded.txt" "$api/ingest?name=authapp.cpu&from=$now" -u alice:s3cret-Alice-pw)
[ "$code" = 200 ] || fail "/ingest with credentials answered $code: $(cat "$tmp/out")"
echo "ok"
