#!/usr/bin/env bash
# tenants.sh: profd run with --auth.multitenancy-enabled and a web configuration
# that binds users to tenants. Tenants team-a, team-b and the default tenant
# (anonymous) push heap profiles under the same series labels; team-b also
# ingests a folded profile (/ingest), and a scrape job of tenant team-b scrapes
# a target (tests/support/serve_profiles.c; with a relabel rule that tries to set
# __tenant__). Each tenant
# must see only its own series through /api/v1 (series, labels, label values,
# query_range, a merge), /prometheus (query, series, labels) and the query API
# (tests/querier/tenants_client.py over querier_client.py), the calls the UI
# makes; a missing header is 401 "no org id" in each endpoint's error form, a
# bad or doubled one 401 with dskit's message, another tenant than the user's
# binding 403, a selector naming __tenant__ 400. With CLICKHOUSE set to "1" the
# store is Debian's clickhouse-server (tests/support/clickhouse.sh), which must
# keep the tenants apart the same way. Bad tenant ids in the configuration and
# the web configuration stop start-up, naming the line.
#   tenants.sh PROFD SERVE_PROFILES SOURCE_DIR TESTDATA [clickhouse]
set -euo pipefail

profd=$(realpath "$1")
serve=$(realpath "$2")
src=$(realpath "$3")
testdata=$(realpath "$4")
mode=${5:-local}
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do [ -z "$p" ] || kill "$p" 2>/dev/null || true; done
	if [ "$mode" = clickhouse ]; then ch_stop || true; fi
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
# shellcheck source=../support/ports.sh
. "$src/tests/support/ports.sh"

chflags=()
if [ "$mode" = clickhouse ]; then
	# shellcheck source=../support/clickhouse.sh
	. "$src/tests/support/clickhouse.sh"
	ch_start "$tmp/ch" 600
	chflags=(--storage.clickhouse.url="$CH_URL")
fi

# bcrypt (cost 4) of pw, as tests/integration/tls.sh has it
pw=s3cret-Alice-pw
hash='$2b$04$lTbj2cbV50JV28eWZcVK/e2YMM6bUxf/0.GRX2tBbI1jrwi21w2iK'
cat >"$tmp/web.yml" <<EOF
basic_auth_users:
  alice: $hash
  bob: $hash
  carol: $hash
tenants:
  alice: [team-a]
  bob: [team-b, team-a, team-b]
EOF
g=$testdata/profiles/goapp
"$serve" "$tmp/target.addr" "$tmp/target.log" "/debug/pprof/heap=$g/heap.pb.gz" &
pids+=($!)
wait_for 30 "serve_profiles did not start" test -s "$tmp/target.addr"
port=$(pd_free_port)
cat >"$tmp/profd.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: self
    tenant: team-b
    static_configs:
      - targets: ['$(cat "$tmp/target.addr")']
    relabel_configs:
      - target_label: __tenant__
        replacement: team-a
    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}
EOF

# bad tenant ids stop start-up, naming the file and line
bad() { # WHAT EXPECTED-REGEX ARGS...
	local what=$1 want=$2 rc=0
	shift 2
	timeout 60 "$profd" run --storage.tsdb.path="$tmp/data-bad" --web.listen-address=127.0.0.1:0 \
		"$@" >"$tmp/bad.log" 2>&1 || rc=$?
	[ "$rc" = 1 ] && grep -Eq "$want" "$tmp/bad.log" || fail "$what: exit $rc: $(cat "$tmp/bad.log")"
}
printf 'scrape_configs:\n  - job_name: x\n    tenant: "a/b"\n' >"$tmp/bad.yml"
bad "a scrape job's bad tenant" "bad.yml:3:.*tenant: tenant ID 'a/b' contains unsupported character '/'" \
	--config.file="$tmp/bad.yml"
printf 'basic_auth_users:\n  alice: %s\ntenants:\n  dave: [x]\n' "$hash" >"$tmp/bad-web.yml"
bad "tenants of an unknown user" "bad-web.yml:4:.*tenants: user .*dave.* is not one of basic_auth_users" \
	--config.file="$tmp/profd.yml" --web.config.file="$tmp/bad-web.yml"
printf 'basic_auth_users:\n  alice: %s\ntenants:\n  alice: [".."]\n' "$hash" >"$tmp/bad-web.yml"
bad "a bound tenant '..'" "bad-web.yml:4:.*tenant ID is '.' or '..'" \
	--config.file="$tmp/profd.yml" --web.config.file="$tmp/bad-web.yml"

# (a retention of ten years: the pushed fixtures keep their own times, which a
# default 15 days behind the scrapes' would refuse once the fixtures are that old)
timeout --foreground 400 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--storage.tsdb.retention.time=3650d \
	--web.listen-address="127.0.0.1:$port" --web.config.file="$tmp/web.yml" --web.enable-lifecycle \
	--auth.multitenancy-enabled "${chflags[@]}" 2>"$log" &
pid=$!
pids+=("$pid")
api=http://127.0.0.1:$port
ready() { curl -fsS -o /dev/null -u "carol:$pw" "$api/-/ready"; }
wait_for 60 "profd did not become ready" ready

# req USER TENANT CURL-ARGS...: the body to $tmp/out, the status on stdout; TENANT
# "-" sends no X-Scope-OrgID
req() {
	local user=$1 tenant=$2
	shift 2
	local h=()
	[ "$tenant" = - ] || h=(-H "X-Scope-OrgID: $tenant")
	curl -sS -o "$tmp/out" -w '%{http_code}' -u "$user:$pw" "${h[@]}" "$@"
}
get() { # get USER TENANT PATH [--data-urlencode ...]: 200 and the body to $tmp/out
	local user=$1 tenant=$2 path=$3 code
	shift 3
	code=$(req "$user" "$tenant" -G "$api$path" "$@")
	[ "$code" = 200 ] || fail "GET $path as $user, tenant $tenant: $code $(head -c 300 "$tmp/out")"
}

now=$(date +%s)
t0=$(( (now - 600) / 60 * 60 + 10 ))
declare -A at=([team-a]=$t0 [team-b]=$((t0 + 60)) [anonymous]=$((t0 + 120)))
declare -A file=([team-a]=heap.pb.gz [team-b]=heap-2.pb.gz [anonymous]=heap-3.pb.gz)
labels=$(jq -rn '"{__name__=\"heap\",service_name=\"shop\"}" | @uri')
for t in team-a team-b anonymous; do
	code=$(req carol "$t" --data-binary "@$g/${file[$t]}" "$api/api/v1/profiles?labels=$labels&time=${at[$t]}")
	[ "$code" = 200 ] || fail "push of tenant $t: $code $(cat "$tmp/out")"
done
printf 'main;work;spin 7\nmain;idle 3\n' >"$tmp/folded.txt"
code=$(req carol team-b --data-binary "@$tmp/folded.txt" \
	"$api/ingest?name=billing.cpu&from=$((t0 + 30))&until=$((t0 + 40))&sampleRate=100")
[ "$code" = 200 ] || fail "/ingest of team-b: $code $(cat "$tmp/out")"

# each tenant's own inuse_space total, read by Go's standard library
(cd "$tmp" && go run "$src/tests/support/pprof_totals.go" "$g/heap.pb.gz" "$g/heap-2.pb.gz" "$g/heap-3.pb.gz") \
	>"$tmp/totals" || fail "pprof_totals.go"
declare -A total
for t in team-a team-b anonymous; do
	total[$t]=$(awk -F'\t' -v f="${file[$t]}" '$2 == "inuse_space" && $1 ~ f"$" { print $4 }' "$tmp/totals")
	[ -n "${total[$t]}" ] || fail "no inuse_space total of ${file[$t]}: $(cat "$tmp/totals")"
done
[ "${total[team-a]}" != "${total[team-b]}" ] || fail "the test files have equal totals"

# the scraped series reach team-b (in ClickHouse mode the pushes must arrive too)
scraped() {
	req carol team-b -G "$api/api/v1/series" --data-urlencode 'match[]=heap{job="self"}' >/dev/null &&
		[ "$(jq '.data | length' "$tmp/out")" -ge 1 ]
}
wait_for 90 "team-b has no scraped series" scraped
arrived() {
	local t
	for t in team-a team-b anonymous; do
		req carol "$t" -G "$api/api/v1/query_range" --data-urlencode 'query=heap{service_name="shop"}' \
			--data-urlencode "start=$((t0 - 60))" --data-urlencode "end=$((now + 60))" >/dev/null || return 1
		[ "$(jq -c '[.data[].timestamps[]]' "$tmp/out")" = "[$((at[$t] * 1000))]" ] || return 1
	done
}
wait_for 90 "every tenant's push is not listed as its own alone" arrived
start=$(( (t0 - 60) * 1000 ))
end=$(( (now + 60) * 1000 ))

for t in team-a team-b anonymous; do
	# /api/v1: series, labels, label values, a merge
	get carol "$t" /api/v1/series --data-urlencode 'match[]=heap{service_name="shop"}'
	[ "$(jq -c .data "$tmp/out")" = '[{"__name__":"heap","service_name":"shop"}]' ] ||
		fail "$t: /api/v1/series $(cat "$tmp/out")"
	get carol "$t" /api/v1/labels
	names=$(jq -c .data "$tmp/out")
	if [ "$t" = team-b ]; then want='["__name__","instance","job","service_name"]'; else want='["__name__","service_name"]'; fi
	[ "$names" = "$want" ] || fail "$t: /api/v1/labels $names, want $want"
	get carol "$t" /api/v1/label/service_name/values
	if [ "$t" = team-b ]; then want='["billing","shop"]'; else want='["shop"]'; fi
	[ "$(jq -c .data "$tmp/out")" = "$want" ] || fail "$t: service_name values $(cat "$tmp/out")"
	get carol "$t" /api/v1/label/__tenant__/values
	[ "$(jq -c .data "$tmp/out")" = '[]' ] || fail "$t: __tenant__ values $(cat "$tmp/out")"
	get carol "$t" /api/v1/query --data-urlencode 'query=heap{service_name="shop"}' --data-urlencode mode=merge \
		--data-urlencode "start=$((t0 - 60))" --data-urlencode "end=$((now + 60))" \
		--data-urlencode sample_index=inuse_space --data-urlencode report=top
	got=$(jq -r '.data.total' "$tmp/out")
	[ "$got" = "${total[$t]}" ] || fail "$t: the merge's total is $got, want ${total[$t]}: $(head -c 300 "$tmp/out")"
	# /prometheus: a query, series, labels
	get carol "$t" /prometheus/api/v1/query --data-urlencode 'query=sum_over_time(heap_inuse_space_bytes{service_name="shop"}[1h])' \
		--data-urlencode "time=$((now + 60))"
	got=$(jq -r '[.data.result[].value[1]] | join(",")' "$tmp/out")
	[ "$got" = "${total[$t]}" ] || fail "$t: /prometheus query gives $got, want ${total[$t]}"
	get carol "$t" /prometheus/api/v1/series --data-urlencode 'match[]={service_name="shop"}'
	n=$(jq '[.data[] | select(.__name__ == "heap_inuse_space_bytes")] | length' "$tmp/out")
	[ "$n" = 1 ] && ! grep -q __tenant__ "$tmp/out" || fail "$t: /prometheus series $(head -c 400 "$tmp/out")"
	get carol "$t" /prometheus/api/v1/labels
	! grep -q __tenant__ "$tmp/out" && jq -e '.data | index("service_name")' "$tmp/out" >/dev/null ||
		fail "$t: /prometheus labels $(cat "$tmp/out")"
	# the query API
	if [ "$t" = team-b ]; then want=billing,self,shop; else want=shop; fi
	PROFD_BASIC_AUTH="carol:$pw" /usr/bin/python3 "$src/tests/querier/tenants_client.py" "$tmp/gen" "$src" "$api" \
		"$t" $start $end "$want" "${total[$t]}" || fail "the query API as tenant $t"
done
# the scraped series are team-b's only, and relabeling did not move them
for t in team-a anonymous; do
	get carol "$t" /api/v1/series --data-urlencode 'match[]={job="self"}'
	[ "$(jq -c .data "$tmp/out")" = '[]' ] || fail "$t sees the scraped series: $(cat "$tmp/out")"
done

# a user bound to one tenant needs no header; another tenant is refused
get alice - /api/v1/label/service_name/values
[ "$(jq -c .data "$tmp/out")" = '["shop"]' ] || fail "alice without a header: $(cat "$tmp/out")"
get alice - /api/v1/query_range --data-urlencode 'query=heap{service_name="shop"}' \
	--data-urlencode "start=$((t0 - 60))" --data-urlencode "end=$((now + 60))"
[ "$(jq -c '[.data[].timestamps[]]' "$tmp/out")" = "[$((at[team-a] * 1000))]" ] || fail "alice: $(cat "$tmp/out")"
PROFD_BASIC_AUTH="alice:$pw" /usr/bin/python3 "$src/tests/querier/tenants_client.py" "$tmp/gen" "$src" "$api" \
	- $start $end shop "${total[team-a]}" || fail "the query API as alice without a header"
code=$(req alice team-b -G "$api/api/v1/labels")
[ "$code" = 403 ] && jq -e '.errorType == "forbidden" and .error == "user alice may not use tenant team-b"' "$tmp/out" >/dev/null ||
	fail "alice asking for team-b: $code $(cat "$tmp/out")"
code=$(req alice team-b -H 'Content-Type: application/json' -d '{}' "$api/querier.v1.QuerierService/LabelNames")
[ "$code" = 403 ] && jq -e '.code == "permission_denied"' "$tmp/out" >/dev/null ||
	fail "alice asking the query API for team-b: $code $(cat "$tmp/out")"
# bound to two tenants: the header chooses, none is refused
get bob team-b /api/v1/label/service_name/values
[ "$(jq -c .data "$tmp/out")" = '["billing","shop"]' ] || fail "bob as team-b: $(cat "$tmp/out")"
code=$(req bob - -G "$api/api/v1/labels")
[ "$code" = 401 ] && jq -e '.error == "no org id"' "$tmp/out" >/dev/null || fail "bob without a header: $code $(cat "$tmp/out")"

# a missing header: 401 "no org id" in each endpoint's error form
for path in /api/v1/series?match%5B%5D=heap /api/v1/labels /api/v1/query_range?query=heap /prometheus/api/v1/labels \
	"/prometheus/api/v1/query?query=heap_inuse_space_bytes"; do
	code=$(req carol - "$api$path")
	[ "$code" = 401 ] && jq -e '.status == "error" and .errorType == "unauthorized" and .error == "no org id"' "$tmp/out" >/dev/null ||
		fail "GET $path without X-Scope-OrgID: $code $(cat "$tmp/out")"
done
code=$(req carol - -H 'Content-Type: application/json' -d '{}' "$api/querier.v1.QuerierService/ProfileTypes")
[ "$code" = 401 ] && jq -e '.code == "unauthenticated" and .message == "no org id"' "$tmp/out" >/dev/null ||
	fail "the query API without X-Scope-OrgID: $code $(cat "$tmp/out")"
code=$(req carol - --data-binary "@$g/heap.pb.gz" "$api/api/v1/profiles?labels=$labels&time=$((t0 + 200))")
[ "$code" = 401 ] && jq -e '.error == "no org id"' "$tmp/out" >/dev/null || fail "a push without X-Scope-OrgID: $code $(cat "$tmp/out")"
code=$(req carol - --data-binary "@$tmp/folded.txt" "$api/ingest?name=billing.cpu&from=$((t0 + 200))&until=$((t0 + 210))")
[ "$code" = 401 ] && jq -e '.code == "unauthenticated" and .message == "no org id"' "$tmp/out" >/dev/null ||
	fail "/ingest without X-Scope-OrgID: $code $(cat "$tmp/out")"
# bad ids: dskit's messages
long=$(printf 'x%.0s' $(seq 151))
while IFS='|' read -r id want; do
	code=$(req carol "$id" -G "$api/api/v1/labels")
	[ "$code" = 401 ] && [ "$(jq -r .error "$tmp/out")" = "$want" ] ||
		fail "X-Scope-OrgID '$id': $code $(cat "$tmp/out"), want 401 $want"
done <<EOF
a/b|tenant ID 'a/b' contains unsupported character '/'
..|tenant ID is '.' or '..'
$long|tenant ID is too long: max 150 characters
EOF
code=$(req carol 'team-a|team-b' -G "$api/api/v1/labels")
[ "$code" = 401 ] && [ "$(jq -r .error "$tmp/out")" = "multiple org IDs present" ] || fail "two tenants: $code $(cat "$tmp/out")"
# the same one twice, and metadata after ':', are that one tenant
get carol 'team-a|team-a:product=x' /api/v1/label/service_name/values
[ "$(jq -c .data "$tmp/out")" = '["shop"]' ] || fail "team-a twice: $(cat "$tmp/out")"
# __tenant__ is neither matchable nor settable
code=$(req carol team-a -G "$api/api/v1/series" --data-urlencode 'match[]={__tenant__="team-b"}')
[ "$code" = 400 ] && grep -q 'reserved' "$tmp/out" || fail "a __tenant__ matcher: $code $(cat "$tmp/out")"
code=$(req carol team-a -G "$api/prometheus/api/v1/series" --data-urlencode 'match[]={__tenant__="team-b"}')
[ "$code" = 400 ] && grep -q 'reserved' "$tmp/out" || fail "a /prometheus __tenant__ matcher: $code $(cat "$tmp/out")"
l2=$(jq -rn '"{__name__=\"heap\",__tenant__=\"team-b\"}" | @uri')
code=$(req carol team-a --data-binary "@$g/heap.pb.gz" "$api/api/v1/profiles?labels=$l2&time=$((t0 + 200))")
[ "$code" = 400 ] || fail "a push setting __tenant__: $code $(cat "$tmp/out")"
# Pyroscope's pushes drop private (__) labels: the header's tenant holds them
code=$(req carol team-a --data-binary "@$tmp/folded.txt" "$api/ingest?name=x.cpu%7B__tenant__%3Dteam-b%7D&from=$((t0 + 200))&until=$((t0 + 210))")
[ "$code" = 200 ] || fail "/ingest naming __tenant__: $code $(cat "$tmp/out")"
printf '{"series":[{"labels":[{"name":"__name__","value":"memory"},{"name":"service_name","value":"y"},{"name":"__tenant__","value":"team-b"}],"samples":[{"rawProfile":"%s"}]}]}' \
	"$(base64 -w0 "$g/heap.pb.gz")" >"$tmp/push.json"
code=$(req carol team-a -H 'Content-Type: application/json' --data-binary "@$tmp/push.json" "$api/push.v1.PusherService/Push")
[ "$code" = 200 ] || fail "push.v1 naming __tenant__: $code $(cat "$tmp/out")"
pushed_a() { req carol team-a -G "$api/api/v1/label/service_name/values" >/dev/null && [ "$(jq -c .data "$tmp/out")" = '["shop","x","y"]' ]; }
wait_for 60 "team-a does not hold the pushes naming __tenant__: $(cat "$tmp/out")" pushed_a
get carol team-b /api/v1/label/service_name/values
[ "$(jq -c .data "$tmp/out")" = '["billing","shop"]' ] || fail "team-b after pushes naming it: $(cat "$tmp/out")"

# the server's own endpoints and the UI's pages need no tenant
for path in /-/ready /metrics /api/v1/targets /api/v1/status/tsdb /; do
	code=$(req carol - "$api$path")
	[ "$code" = 200 ] || fail "GET $path without X-Scope-OrgID: $code"
done

code=$(req carol - -X POST "$api/-/quit")
[ "$code" = 200 ] || fail "/-/quit: $code"
rc=0
wait "$pid" || rc=$?
pids=("${pids[@]/$pid/}")
[ "$rc" = 0 ] || fail "profd exited $rc"
echo "ok: tenants ($mode store)"
