#!/usr/bin/env bash
# kubernetes_sd.sh: kubernetes_sd_configs end to end, with no cluster: the Kubernetes
# API test server (tests/support/k8s_apiserver.go) serves the objects of
# testdata/k8s/apiserver, and profd discovers through it. Checked over profd's HTTP
# API (/api/v1/targets, discoveredLabels):
#   - every role (pod, service, endpoints, endpointslice, ingress through api_server
#     with a bearer token in a credentials_file; node through a kubeconfig_file to a
#     TLS server whose self-signed CA the kubeconfig names) gives exactly the label
#     sets of testdata/k8s/apiserver/expected/<role>.json, which state what
#     Prometheus's discovery gives for those objects;
#   - the example's kubernetes-pods job (examples/kubernetes/profd.yaml, pointed at
#     the server) keeps the one annotated, running pod's annotated port;
#   - while profd watches (a server of its own): an added, a modified and a deleted
#     pod within a deadline (the modified pod's target, whose labels relabeling
#     leaves unchanged, keeps its loop and shows the new discoveredLabels); a bookmark accepted without a relist; a dropped
#     connection resumed from its resourceVersion (no relist); a 410 Gone, as an ERROR
#     event and as an HTTP 410, after changes whose events were lost: a relist and a
#     correct target set after it; a stream written one byte a chunk; refused
#     requests retried with a growing delay, and recovery.
# Every wait has a deadline.
#
#   kubernetes_sd.sh PROFD K8S_APISERVER TESTDATA EXAMPLES
set -euo pipefail

profd=$(realpath "$1")
server=$(realpath "$2")
data=$(cd "$3" && pwd)
examples=$(cd "$4" && pwd)
fx=$data/k8s/apiserver
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	tail -20 "$tmp/profd.log" 2>/dev/null
	exit 1
}
# Runs CMD every 0.2 s until it succeeds; fails with WHAT after TIMEOUT seconds, or
# at once when a process this script started has exited.
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "$what (process $p exited)"; done
		sleep 0.2
	done
}

# ---- the API servers ------------------------------------------------------------------
# a: every role's objects; d: the pods that change while profd watches; b: TLS
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/tls.key" -out "$tmp/ca.crt" -days 2 \
	-subj "/CN=k8s-apiserver-test" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null || fail "openssl"
start_server() { # NAME ARGS...
	local name=$1
	shift
	"$server" -url-file "$tmp/$name.url" -fixtures "$fx" -lifetime 20m "$@" >"$tmp/$name.log" 2>&1 &
	pids+=($!)
}
start_server a -token tok-a
start_server d -token tok-d
start_server b -token tok-b -tls-cert "$tmp/ca.crt" -tls-key "$tmp/tls.key"
for s in a d b; do wait_for 60 "API server $s did not start" test -s "$tmp/$s.url"; done
aurl=$(cat "$tmp/a.url") durl=$(cat "$tmp/d.url") burl=$(cat "$tmp/b.url")
printf tok-a >"$tmp/token-a"
printf tok-d >"$tmp/token-d"
cat >"$tmp/kubeconfig" <<EOC
apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster:
      server: $burl
      certificate-authority: $tmp/ca.crt
users:
  - name: profd
    user:
      token: tok-b
contexts:
  - name: test
    context:
      cluster: test
      user: profd
current-context: test
EOC

# ---- profd --------------------------------------------------------------------------
only_heap='    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}'
# the role jobs drop every target after discovery: their discoveredLabels stay
# visible, and nothing tries to scrape the made-up pod addresses
drop_all='    relabel_configs:
      - source_labels: [__address__]
        regex: .*
        action: drop'
# the watch job keeps its targets, each scraping a closed loopback port under its
# pod's address as instance: a change relabeling drops (a pod label) leaves the
# target and its loop as they were, and must still show in its discoveredLabels
keep_on_loopback='    relabel_configs:
      - source_labels: [__address__]
        target_label: instance
      - target_label: __address__
        replacement: 127.0.0.1:1'
role_job() { # ROLE
	cat <<EOC
  - job_name: $1
    kubernetes_sd_configs:
      - role: $1
        api_server: $aurl
        authorization:
          credentials_file: $tmp/token-a
$drop_all
$only_heap
EOC
}
{
	cat <<EOC
global:
  scrape_interval: 1m
  scrape_timeout: 10s
scrape_configs:
EOC
	for r in pod service endpoints endpointslice ingress; do role_job "$r"; done
	cat <<EOC
  - job_name: node
    kubernetes_sd_configs:
      - role: node
        kubeconfig_file: $tmp/kubeconfig
$drop_all
$only_heap
  - job_name: watch
    kubernetes_sd_configs:
      - role: pod
        api_server: $durl
        authorization:
          credentials_file: $tmp/token-d
$keep_on_loopback
$only_heap
EOC
} >"$tmp/profd.yml"
# the example's kubernetes-pods job, in-cluster there, pointed at server a here
python3 - "$examples/kubernetes/profd.yaml" "$aurl" "$tmp/token-a" >>"$tmp/profd.yml" <<'EOP' ||
import json, sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
cfg = yaml.safe_load([d for d in docs if d["kind"] == "ConfigMap"][0]["data"]["profd.yml"])
job = [j for j in cfg["scrape_configs"] if j["job_name"] == "kubernetes-pods"][0]
job["job_name"] = "example"
for sd in job["kubernetes_sd_configs"]:
    sd["api_server"] = sys.argv[2]
    sd["authorization"] = {"credentials_file": sys.argv[3]}
job["profiling_config"] = {"pprof_config": {t: {"enabled": False} for t in
    ["allocs", "block", "goroutine", "mutex", "profile", "threadcreate"]}}
print("\n".join("  " + line for line in yaml.safe_dump([job], default_flow_style=False).splitlines()))
EOP
	fail "the example's kubernetes-pods job could not be taken out of examples/kubernetes/profd.yaml"
"$profd" check config "$tmp/profd.yml" >"$tmp/check.out" 2>&1 || fail "profd check config: $(cat "$tmp/check.out")"
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 2>"$tmp/profd.log" &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start" listening
api="http://127.0.0.1:$port"

# discovered POOL: the discovered labels of the pool's targets (active and dropped):
# __address__, instance and __meta_*, without empty values (the same as no label),
# one JSON object a line, sorted
discovered() {
	curl -fsS "$api/api/v1/targets?state=any" >"$tmp/targets.json" 2>/dev/null || return 1
	jq -c --arg p "$1" '[(.data.activeTargets + .data.droppedTargets)[] | select(.scrapePool == $p)
		| .discoveredLabels | with_entries(select((.key == "__address__" or .key == "instance" or
		(.key | startswith("__meta_"))) and .value != ""))] | unique | .[]' "$tmp/targets.json"
}
same_as() { # POOL FILE: the pool's discovered label sets are those of FILE
	discovered "$1" >"$tmp/got.$1" || return 1
	jq -c '.[]' "$2" | jq -cS . | sort >"$tmp/want.$1"
	jq -cS . "$tmp/got.$1" | sort >"$tmp/got.$1.sorted"
	cmp -s "$tmp/got.$1.sorted" "$tmp/want.$1"
}
expect_role() { # ROLE
	if ! wait_quiet 60 same_as "$1" "$fx/expected/$1.json"; then
		echo "role $1: discovered label sets differ from testdata/k8s/apiserver/expected/$1.json (< want, > got):"
		diff <(jq -S . "$tmp/want.$1") <(jq -S . "$tmp/got.$1.sorted") | head -60
		fail "role $1"
	fi
}
wait_quiet() {
	local timeout=$1 deadline
	shift
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# ---- every role's labels ------------------------------------------------------------------
for r in pod service endpoints endpointslice ingress node; do
	expect_role "$r"
	echo "kubernetes_sd: role $r: $(wc -l <"$tmp/want.$r") label sets as Prometheus gives them"
done
# the kubeconfig's token and the API servers' tokens were checked
curl -fsS "$burl/_control/requests" --cacert "$tmp/ca.crt" >"$tmp/b.req"
jq -e '[.requests[] | select(.path == "/api/v1/nodes")] | length > 0 and all(.authorized)' "$tmp/b.req" >/dev/null ||
	fail "the kubeconfig's token was not sent to the TLS server: $(jq -c '.requests[:5]' "$tmp/b.req")"
curl -fsS "$aurl/_control/requests" >"$tmp/a.req"
jq -e '.requests | length > 0 and all(.authorized)' "$tmp/a.req" >/dev/null ||
	fail "a request to server a without the credentials_file's token"

# ---- the example's job -------------------------------------------------------------------
example_is() {
	curl -fsS "$api/api/v1/targets?state=active&scrapePool=example" >"$tmp/example.json" 2>/dev/null || return 1
	[ "$(jq -c '[.data.activeTargets[].labels | del(.__name__)]' "$tmp/example.json")" = "$1" ]
}
want='[{"container":"app","instance":"10.244.1.5:6060","job":"example","namespace":"shop","pod":"checkout-7d9f8b6c5-x2x4z"}]'
wait_quiet 60 example_is "$want" ||
	fail "the example's job: $(jq -c '[.data.activeTargets[].labels]' "$tmp/example.json"), want $want"
echo "kubernetes_sd: the example's kubernetes-pods job keeps the annotated port of the running pod"

# ---- changes while profd watches (server d) ------------------------------------------
ctl() { curl -fsS -X POST "$durl/_control/$1" "${@:2}"; }
count() { # VERB: requests of that verb to /api/v1/pods so far
	curl -fsS "$durl/_control/requests" | jq --arg k "$1 /api/v1/pods" '.counts[$k] // 0'
}
watching() { [ "$(curl -fsS "$durl/_control/watches" | jq '.by_path["/api/v1/pods"] // 0')" -ge 1 ]; }
pod() { # NAME IP [APP]
	jq -n --arg n "$1" --arg ip "$2" --arg app "${3:-watched}" '{apiVersion: "v1", kind: "Pod",
		metadata: {name: $n, namespace: "shop", uid: ("uid-" + $n), labels: {app: $app}},
		spec: {containers: [{name: "app", image: "app:1", ports: [{containerPort: 6060, name: "pprof", protocol: "TCP"}]}], nodeName: "node-a"},
		status: {phase: "Running", podIP: $ip, hostIP: "10.0.0.11",
		         conditions: [{type: "Ready", status: "True"}]}}'
}
delete_pod() { jq -n --arg n "$1" '{apiVersion: "v1", kind: "Pod", metadata: {name: $n, namespace: "shop"}}'; }
# addresses: the sorted __address__ values of the watch job
addresses() { discovered watch | jq -r '.__address__' | sort | paste -sd' ' -; }
base=$(jq -r '.[].__address__' "$fx/expected/pod.json" | sort | paste -sd' ' -)
with() { printf '%s\n' $base "$@" | sort | paste -sd' ' -; }
has_addresses() { [ "$(addresses)" = "$1" ]; }
expect_addresses() { # WHAT ADDRESSES
	wait_quiet 60 has_addresses "$2" || fail "$1: the watch job has $(addresses), want $2"
}
label_of() { discovered watch | jq -r --arg a "$1" --arg l "$2" 'select(.__address__ == $a) | .[$l]'; }
label_is() { [ "$(label_of "$1" "$2")" = "$3" ]; }

expect_addresses "the first list" "$base"
wait_for 60 "profd opened no watch of pods" watching
lists=$(count LIST)
watches=$(count WATCH)

pod added 10.244.1.30 | ctl apply --data-binary @- >/dev/null
expect_addresses "an added pod" "$(with 10.244.1.30:6060)"
pod added 10.244.1.30 changed | ctl apply --data-binary @- >/dev/null
wait_quiet 60 label_is 10.244.1.30:6060 __meta_kubernetes_pod_label_app changed ||
	fail "a modified pod: label app is $(label_of 10.244.1.30:6060 __meta_kubernetes_pod_label_app), want changed"
# ... on the active target whose labels did not change (its loop kept)
jq -e '[.data.activeTargets[] | select(.scrapePool == "watch" and .labels.instance == "10.244.1.30:6060")
	| .discoveredLabels.__meta_kubernetes_pod_label_app] == ["changed"]' "$tmp/targets.json" >/dev/null ||
	fail "a modified pod: the active target's discoveredLabels: $(jq -c '[.data.activeTargets[] | select(.scrapePool == "watch") | .discoveredLabels]' "$tmp/targets.json")"
delete_pod added | ctl delete --data-binary @- >/dev/null
expect_addresses "a deleted pod" "$base"
echo "kubernetes_sd: added, modified and deleted pods seen"

# a bookmark: accepted, the watch goes on, nothing is listed again
sent=$(ctl bookmark | jq .sent)
[ "$sent" -ge 1 ] || fail "profd's watch of pods did not ask for bookmarks (allowWatchBookmarks=true)"
pod after-bookmark 10.244.1.31 | ctl apply --data-binary @- >/dev/null
expect_addresses "a pod after a bookmark" "$(with 10.244.1.31:6060)"
[ "$(count LIST)" = "$lists" ] || fail "a bookmark led to a relist"
[ "$(count WATCH)" = "$watches" ] || fail "a bookmark ended the watch"
echo "kubernetes_sd: a bookmark accepted"

# a dropped connection: the watch is resumed from its resourceVersion
ctl drop >/dev/null
wait_for 60 "the dropped watch was not resumed" eval '[ "$(count WATCH)" -gt "$watches" ]'
pod after-drop 10.244.1.32 | ctl apply --data-binary @- >/dev/null
expect_addresses "a pod after a dropped connection" "$(with 10.244.1.31:6060 10.244.1.32:6060)"
[ "$(count LIST)" = "$lists" ] || fail "a dropped connection led to a relist; the watch should resume from its version"
curl -fsS "$durl/_control/requests" |
	jq -e '[.requests[] | select(.verb == "WATCH")] | .[-1].query | test("resourceVersion=[1-9]")' >/dev/null ||
	fail "the resumed watch gave no resourceVersion"
echo "kubernetes_sd: a dropped connection resumed"

# 410 Gone: changes whose events are lost, then the watch ends with an ERROR 410
# event; only a relist shows them
relisted() { [ "$(count LIST)" -gt "$lists" ]; }
delete_pod after-bookmark | ctl 'delete?silent=1' --data-binary @- >/dev/null
pod lost 10.244.1.33 | ctl 'apply?silent=1' --data-binary @- >/dev/null
ctl expire >/dev/null
wait_for 60 "no relist after an ERROR event with 410" relisted
expect_addresses "after a 410 ERROR event" "$(with 10.244.1.32:6060 10.244.1.33:6060)"
lists=$(count LIST)
# ... and as an HTTP 410 to the next watch
wait_for 60 "profd did not watch again after the relist" watching
delete_pod lost | ctl 'delete?silent=1' --data-binary @- >/dev/null
ctl 'gone?mode=http' >/dev/null
ctl drop >/dev/null
wait_for 60 "no relist after an HTTP 410" relisted
expect_addresses "after an HTTP 410" "$(with 10.244.1.32:6060)"
lists=$(count LIST)
echo "kubernetes_sd: 410 Gone (event and HTTP) relisted, targets correct"

# a slow stream: every response one byte a chunk, a relist and a watch through it
wait_for 60 "profd did not watch again" watching
ctl 'slow?delay=0' >/dev/null
delete_pod after-drop | ctl 'delete?silent=1' --data-binary @- >/dev/null
ctl expire >/dev/null
wait_for 60 "no relist through a slow stream" relisted
expect_addresses "a slow relist" "$base"
wait_for 60 "profd did not watch again" watching
pod slow 10.244.1.34 | ctl apply --data-binary @- >/dev/null
expect_addresses "a slow watch" "$(with 10.244.1.34:6060)"
ctl 'slow?delay=off' >/dev/null
echo "kubernetes_sd: a stream one byte a chunk read"

# refused requests (a token the server no longer takes): retried with a growing
# delay, not in a loop; back to normal once the token is taken again
ctl 'token?value=rotated' >/dev/null
ctl reset >/dev/null
ctl drop >/dev/null
refused() { curl -fsS "$durl/_control/requests" | jq '[.requests[] | select(.path == "/api/v1/pods")] | length'; }
# (four attempts, three delays, show the growth; a fifth would wait 16 s more)
wait_for 120 "fewer than 4 attempts after the token was refused" eval '[ "$(refused)" -ge 4 ]'
curl -fsS "$durl/_control/requests" | jq '[.requests[] | select(.path == "/api/v1/pods") | .time]' >"$tmp/times"
gaps=$(jq -c '[range(1; length) as $i | (.[$i] - .[$i-1])]' "$tmp/times")
jq -e --argjson g "$gaps" '$g[2] > $g[1] and $g[1] > $g[0] and $g[2] >= 0.2' -n >/dev/null ||
	fail "retries after refused requests do not back off: gaps $gaps s"
ctl "token?value=tok-d" >/dev/null
pod recovered 10.244.1.35 | ctl apply --data-binary @- >/dev/null
expect_addresses "after the token was taken again" "$(with 10.244.1.34:6060 10.244.1.35:6060)"
echo "kubernetes_sd: refused requests retried with growing delays ($gaps s), then recovered"
