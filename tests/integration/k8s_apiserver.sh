#!/usr/bin/env bash
# k8s_apiserver.sh: the Kubernetes API test server (tests/support/k8s_apiserver.go)
# checked on its own with curl, before profd's kubernetes_sd_configs relies on it:
# the bearer token, discovery documents, LIST of every resource (a <Kind>List with a
# resourceVersion, items without kind), namespaces in the path, label and field
# selectors (what it cannot evaluate is a 400), limit/continue; WATCH as a chunked
# stream of ADDED/MODIFIED/DELETED/BOOKMARK events, selectors turning a MODIFIED
# into a DELETED, replay from a resourceVersion, timeoutSeconds; 410 Gone as an
# HTTP 410 and as an ERROR event (compaction, expire, the gone control); a dropped
# connection; a stream written one byte a chunk; request counts; TLS with a
# certificate made here. Every wait has a deadline.
#
#   k8s_apiserver.sh K8S_APISERVER TESTDATA
set -euo pipefail

server=$(realpath "$1")
fixtures=$(cd "$2/k8s/apiserver" && pwd)
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
	tail -5 "$tmp/server.log" 2>/dev/null
	exit 1
}
# Runs CMD every 0.1 s until it succeeds; fails with WHAT after TIMEOUT seconds, or
# at once when a process this script started has exited.
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "$what (process $p exited)"; done
		sleep 0.1
	done
}

tok=s3cret
"$server" -url-file "$tmp/url" -fixtures "$fixtures" -token "$tok" -lifetime 10m >"$tmp/server.log" 2>&1 &
pids+=($!)
wait_for 60 "the API server did not start" test -s "$tmp/url"
url=$(cat "$tmp/url")
case $url in http://127.0.0.1:*) ;; *) fail "URL $url is not http on 127.0.0.1" ;; esac

api() { curl -sS -H "Authorization: Bearer $tok" "$url$1"; }
code() { curl -sS -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $tok" "$url$1"; }
ctl() { curl -fsS -X POST "$url/_control/$1" "${@:2}"; }
expect() { # what, actual, expected
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# ---- the token -----------------------------------------------------------------------
expect "without a token" "$(curl -sS -o "$tmp/body" -w '%{http_code}' "$url/api/v1/pods")" 401
expect "the 401's Status" "$(jq -r '.kind + " " + .reason' "$tmp/body")" "Status Unauthorized"
expect "a wrong token" "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' "$url/api/v1/pods")" 401
expect "the right token" "$(code /api/v1/pods)" 200

# ---- discovery documents ---------------------------------------------------------------
expect "/version" "$(api /version | jq -r .gitVersion)" v1.28.3
expect "/api" "$(api /api | jq -c .versions)" '["v1"]'
expect "/apis" "$(api /apis | jq -c '[.groups[].preferredVersion.groupVersion]')" '["discovery.k8s.io/v1","networking.k8s.io/v1"]'
expect "/api/v1" "$(api /api/v1 | jq -c '[.resources[].name]')" '["pods","services","endpoints","nodes","namespaces"]'
expect "/apis/discovery.k8s.io/v1" "$(api /apis/discovery.k8s.io/v1 | jq -r '.resources[0].kind')" EndpointSlice
expect "an unknown path" "$(code /api/v1/secrets)" 404
expect "an unknown path's Status" "$(jq -r .reason "$tmp/body")" NotFound

# ---- LIST ---------------------------------------------------------------------------
list() { # path kind count
	api "$1" >"$tmp/list"
	expect "$1 kind" "$(jq -r .kind "$tmp/list")" "$2"
	expect "$1 items" "$(jq '.items | length' "$tmp/list")" "$3"
	jq -e '.metadata.resourceVersion | test("^[0-9]+$")' "$tmp/list" >/dev/null || fail "$1: no resourceVersion"
	jq -e '[.items[] | has("kind") or has("apiVersion")] | any | not' "$tmp/list" >/dev/null ||
		fail "$1: items carry kind or apiVersion (a real API server leaves them out)"
}
list /api/v1/pods PodList 4
list /api/v1/namespaces/shop/pods PodList 3
list /api/v1/namespaces/default/pods PodList 1
list /api/v1/services ServiceList 4
list /api/v1/namespaces/shop/endpoints EndpointsList 1
list /api/v1/nodes NodeList 2
list /api/v1/namespaces NamespaceList 2
list /apis/discovery.k8s.io/v1/endpointslices EndpointSliceList 1
list /apis/discovery.k8s.io/v1/namespaces/shop/endpointslices EndpointSliceList 1
list /apis/networking.k8s.io/v1/ingresses IngressList 1
list /apis/networking.k8s.io/v1/namespaces/default/ingresses IngressList 0
expect "the list's apiVersion" "$(api /apis/networking.k8s.io/v1/ingresses | jq -r .apiVersion)" networking.k8s.io/v1
expect "a pod by name" "$(api /api/v1/namespaces/shop/pods/report-29543040-7xk2p | jq -r '.kind + " " + .status.podIP')" "Pod 10.244.1.9"
expect "a namespace by name" "$(api /api/v1/namespaces/shop | jq -r .metadata.labels.team)" shop
expect "a missing pod" "$(code /api/v1/namespaces/shop/pods/nope)" 404
rv0=$(api /api/v1/pods | jq -r .metadata.resourceVersion)

# ---- selectors ----------------------------------------------------------------------
names() { api "$1" | jq -r '[.items[].metadata.name] | join(" ")'; }
sel() { jq -rn --arg s "$1" '$s | @uri'; }
expect "app=checkout" "$(names "/api/v1/pods?labelSelector=$(sel app=checkout)")" "checkout-7d9f8b6c5-q8w7e checkout-7d9f8b6c5-x2x4z"
expect "app==queued" "$(names "/api/v1/pods?labelSelector=$(sel app==queued)")" "queued"
expect "app!=checkout" "$(names "/api/v1/pods?labelSelector=$(sel app!=checkout)")" "queued report-29543040-7xk2p"
expect "app in (queued,x)" "$(names "/api/v1/pods?labelSelector=$(sel 'app in (queued, x)')")" "queued"
expect "app notin (checkout),job-name" "$(names "/api/v1/pods?labelSelector=$(sel 'app notin (checkout),job-name')")" "report-29543040-7xk2p"
expect "!app" "$(names "/api/v1/pods?labelSelector=$(sel '!app')")" "report-29543040-7xk2p"
expect "status.phase=Running" "$(names "/api/v1/pods?fieldSelector=$(sel status.phase=Running)")" "checkout-7d9f8b6c5-x2x4z report-29543040-7xk2p"
expect "spec.nodeName=node-b" "$(names "/api/v1/pods?fieldSelector=$(sel spec.nodeName=node-b)")" "checkout-7d9f8b6c5-q8w7e"
expect "spec.nodeName=" "$(names "/api/v1/pods?fieldSelector=$(sel spec.nodeName=)")" "queued"
expect "both selectors" "$(names "/api/v1/pods?labelSelector=app&fieldSelector=$(sel 'metadata.namespace!=shop')")" "queued"
expect "metadata.name on nodes" "$(names "/api/v1/nodes?fieldSelector=$(sel metadata.name=node-b)")" "node-b"
expect "an unsupported field" "$(code "/api/v1/pods?fieldSelector=$(sel spec.hostname=x)")" 400
grep -q 'field label not supported: spec.hostname' "$tmp/body" || fail "the 400 does not name the field: $(cat "$tmp/body")"
expect "a set-based field selector" "$(code "/api/v1/pods?fieldSelector=$(sel 'status.phase in (Running)')")" 400
expect "a label selector it cannot read" "$(code "/api/v1/pods?labelSelector=$(sel 'app>1')")" 400
expect "a bad label value" "$(code "/api/v1/pods?labelSelector=$(sel 'app=a b')")" 400
expect "metadata.namespace on nodes" "$(code "/api/v1/nodes?fieldSelector=$(sel metadata.namespace=x)")" 400

# ---- limit and continue ----------------------------------------------------------------
api "/api/v1/pods?limit=3" >"$tmp/p1"
expect "limit=3" "$(jq '.items | length' "$tmp/p1")" 3
expect "remainingItemCount" "$(jq .metadata.remainingItemCount "$tmp/p1")" 1
cont=$(jq -r .metadata.continue "$tmp/p1")
[ -n "$cont" ] && [ "$cont" != null ] || fail "limit=3 of 4: no continue"
api "/api/v1/pods?limit=3&continue=$cont" >"$tmp/p2"
expect "the second page" "$(jq -r '[.items[].metadata.name] | join(" ")' "$tmp/p2")" "report-29543040-7xk2p"
expect "the last page's continue" "$(jq -r '.metadata.continue // "none"' "$tmp/p2")" none
expect "the pages' versions" "$(jq -r .metadata.resourceVersion "$tmp/p2")" "$(jq -r .metadata.resourceVersion "$tmp/p1")"
expect "a bad continue" "$(code "/api/v1/pods?continue=zzz")" 400
expect "a bad limit" "$(code "/api/v1/pods?limit=x")" 400

# ---- WATCH --------------------------------------------------------------------------
watches() { curl -fsS "$url/_control/watches" | jq -r .open; }
# watch_start NAME QUERY [PATH]: a watch in the background, its events in $tmp/NAME
watch_start() {
	curl -sS -N -D "$tmp/$1.headers" -H "Authorization: Bearer $tok" \
		"$url${3:-/api/v1/pods}?$2" >"$tmp/$1" 2>"$tmp/$1.err" &
	eval "wpid_$1=$!"
}
events() { jq -r '.type + " " + (.object.metadata.name // .object.reason // "") ' "$tmp/$1" 2>/dev/null | paste -sd, -; }
has_events() { [ "$(events "$1")" = "$2" ]; }
wait_events() { wait_for 30 "watch $1: events $(events "$1"), want $2" has_events "$1" "$2"; }
open_watches() { [ "$(watches)" = "$1" ]; }

pod() { # name labels-json [namespace]: a running pod
	jq -n --arg n "$1" --argjson l "$2" --arg ns "${3:-shop}" '{apiVersion: "v1", kind: "Pod",
		metadata: {name: $n, namespace: $ns, labels: $l},
		spec: {containers: [{name: "app", image: "app:1", ports: [{containerPort: 6060, name: "pprof", protocol: "TCP"}]}], nodeName: "node-a"},
		status: {phase: "Running", podIP: "10.244.1.20", hostIP: "10.0.0.11"}}'
}
watch_start w1 "watch=1&resourceVersion=$rv0&allowWatchBookmarks=true"
watch_start w2 "watch=true&resourceVersion=$rv0&labelSelector=app%3Dnew"
watch_start w3 "watch=1&resourceVersion=$rv0" /api/v1/namespaces/default/pods
wait_for 30 "three watches open" open_watches 3
grep -qi '^transfer-encoding: chunked' "$tmp/w1.headers" || fail "a watch is not chunked: $(cat "$tmp/w1.headers")"
pod new '{"app":"new"}' | ctl apply --data-binary @- >/dev/null
wait_events w1 "ADDED new"
pod new '{"app":"new","v":"2"}' | ctl apply --data-binary @- >/dev/null
wait_events w1 "ADDED new,MODIFIED new"
pod new '{"app":"old"}' | ctl apply --data-binary @- >/dev/null
wait_events w1 "ADDED new,MODIFIED new,MODIFIED new"
# the selector's watch: in, changed, out of the selection
wait_events w2 "ADDED new,MODIFIED new,DELETED new"
jq -n '{kind: "Pod", apiVersion: "v1", metadata: {name: "new", namespace: "shop"}}' | ctl delete --data-binary @- >/dev/null
wait_events w1 "ADDED new,MODIFIED new,MODIFIED new,DELETED new"
pod other '{}' default | ctl apply --data-binary @- >/dev/null
ctl bookmark >/dev/null
wait_events w1 "ADDED new,MODIFIED new,MODIFIED new,DELETED new,ADDED other,BOOKMARK "
rv=$(curl -fsS "$url/_control/state" | jq -r .resourceVersion)
expect "the bookmark's version" "$(tail -1 "$tmp/w1" | jq -r '.object.kind + " " + .object.metadata.resourceVersion')" "Pod $rv"
expect "event objects' kind" "$(head -1 "$tmp/w1" | jq -r '.object.kind + " " + .object.apiVersion')" "Pod v1"
expect "versions rise" "$(jq -s '[.[].object.metadata.resourceVersion | tonumber] | . == sort' "$tmp/w1")" true
wait_events w2 "ADDED new,MODIFIED new,DELETED new"
wait_events w3 "ADDED other"
kill "$wpid_w1" "$wpid_w2" "$wpid_w3"
wait_for 30 "watches stay open after their clients left" open_watches 0

# replay: from the first list's version, and from 0 (every current object)
watch_start r1 "watch=1&resourceVersion=$rv0&timeoutSeconds=1"
wait_for 30 "timeoutSeconds=1 did not end the watch" eval '! kill -0 $wpid_r1 2>/dev/null'
wait "$wpid_r1" || fail "a watch ended by timeoutSeconds is an error: $(cat "$tmp/r1.err")"
expect "the replay" "$(events r1)" "ADDED new,MODIFIED new,MODIFIED new,DELETED new,ADDED other"
watch_start r0 "watch=1&resourceVersion=0&timeoutSeconds=1" /api/v1/namespaces/default/pods
wait "$wpid_r0" || true
expect "a watch from 0" "$(events r0)" "ADDED other,ADDED queued"
# a watch on endpointslices sees only endpointslices
watch_start es "watch=1&timeoutSeconds=1" /apis/discovery.k8s.io/v1/endpointslices
wait "$wpid_es" || true
expect "endpointslices" "$(jq -r .object.kind "$tmp/es")" EndpointSlice

# ---- 410 Gone -----------------------------------------------------------------------
ctl 'gone?mode=http' >/dev/null
expect "the next watch, gone as HTTP" "$(code "/api/v1/pods?watch=1&resourceVersion=$rv")" 410
expect "the 410's Status" "$(jq -r '.reason + " " + (.code | tostring)' "$tmp/body")" "Expired 410"
ctl 'gone?mode=event' >/dev/null
expect "the next watch, gone as an event" "$(code "/api/v1/pods?watch=1&resourceVersion=$rv")" 200
expect "the ERROR event" "$(jq -r '.type + " " + .object.reason + " " + (.object.code | tostring)' "$tmp/body")" "ERROR Expired 410"
# compaction: versions before it are gone, later ones still watch
ctl compact >/dev/null
watch_start c1 "watch=1&resourceVersion=$rv0"
wait "$wpid_c1" || true
expect "a watch from before the compaction" "$(jq -r '.type + " " + (.object.code | tostring)' "$tmp/c1")" "ERROR 410"
expect "a list's continue from before it" "$(code "/api/v1/pods?limit=3&continue=$cont")" 410
# expire: open watches get the ERROR event and end
watch_start e1 "watch=1&resourceVersion=$rv"
wait_for 30 "the watch did not open" open_watches 1
ctl expire >/dev/null
wait_for 30 "expire did not end the watch" eval '! kill -0 $wpid_e1 2>/dev/null'
expect "the expired watch" "$(events e1)" "ERROR Expired"

# ---- a dropped connection ----------------------------------------------------------------
wait_for 30 "the expired watch still counted as open" open_watches 0
watch_start d1 "watch=1&resourceVersion=$rv"
wait_for 30 "the watch did not open" open_watches 1
ctl drop >/dev/null
wait_for 30 "drop did not end the watch" eval '! kill -0 $wpid_d1 2>/dev/null'
if wait "$wpid_d1"; then fail "curl saw a dropped watch end cleanly"; fi

# ---- a lost event (silent=1): no watch hears of it, resuming from before it is 410 --
wait_for 30 "the dropped watch still counted as open" open_watches 0
rv=$(curl -fsS "$url/_control/state" | jq -r .resourceVersion)
watch_start q1 "watch=1&resourceVersion=$rv"
wait_for 30 "the watch did not open" open_watches 1
jq -n '{kind: "Pod", apiVersion: "v1", metadata: {name: "other", namespace: "default"}}' |
	ctl 'delete?silent=1' --data-binary @- >/dev/null
pod heard '{}' default | ctl apply --data-binary @- >/dev/null
wait_events q1 "ADDED heard"
kill "$wpid_q1"
watch_start q2 "watch=1&resourceVersion=$rv&timeoutSeconds=5"
wait "$wpid_q2" || true
expect "a watch from before the lost event" "$(jq -r '.type + " " + (.object.code | tostring)' "$tmp/q2")" "ERROR 410"
expect "the list after the lost event" "$(names /api/v1/namespaces/default/pods)" "heard queued"
wait_for 30 "the silent watch still counted as open" open_watches 0

# ---- a slow stream: one byte a chunk ----------------------------------------------------
ctl 'slow?delay=0' >/dev/null
curl -sS --raw -H "Authorization: Bearer $tok" "$url/api/v1/namespaces/default/pods" >"$tmp/raw"
head -c 6 "$tmp/raw" | od -c | head -1 | grep -q '1  \\r  \\n   {  \\r  \\n' || fail "a slow list is not one byte a chunk: $(head -c 20 "$tmp/raw" | od -c | head -2)"
rv=$(curl -fsS "$url/_control/state" | jq -r .resourceVersion)
watch_start s1 "watch=1&resourceVersion=$rv"
wait_for 30 "the slow watch did not open" open_watches 1
pod slow '{}' | ctl apply --data-binary @- >/dev/null
wait_events s1 "ADDED slow"
kill "$wpid_s1"
ctl 'slow?delay=off' >/dev/null
curl -sS --raw -H "Authorization: Bearer $tok" "$url/api/v1/namespaces/default/pods" >"$tmp/raw"
head -c 1 "$tmp/raw" | grep -q '{' || fail "slow?delay=off: the response is still chunked byte by byte"

# ---- request counts ------------------------------------------------------------------
ctl reset >/dev/null
api /api/v1/nodes >/dev/null
api /api/v1/nodes >/dev/null
code "/api/v1/nodes?watch=1&timeoutSeconds=1" >/dev/null
curl -sS -o /dev/null "$url/api/v1/nodes"
curl -fsS "$url/_control/requests" >"$tmp/req"
expect "LIST count" "$(jq '.counts["LIST /api/v1/nodes"]' "$tmp/req")" 3
expect "WATCH count" "$(jq '.counts["WATCH /api/v1/nodes"]' "$tmp/req")" 1
expect "unauthorized requests logged" "$(jq '[.requests[] | select(.authorized | not)] | length' "$tmp/req")" 1
jq -e '[.requests[].time] | . == sort and length == 4' "$tmp/req" >/dev/null || fail "request times: $(jq -c '[.requests[].time]' "$tmp/req")"

# ---- changing the token ------------------------------------------------------------------
ctl 'token?value=rotated' >/dev/null
expect "the old token" "$(code /api/v1/nodes)" 401
expect "the new token" "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer rotated' "$url/api/v1/nodes")" 200

# ---- TLS ------------------------------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/tls.key" -out "$tmp/tls.crt" -days 2 \
	-subj "/CN=k8s-apiserver-test" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null || fail "openssl"
"$server" -url-file "$tmp/tls-url" -fixtures "$fixtures" -tls-cert "$tmp/tls.crt" -tls-key "$tmp/tls.key" \
	-lifetime 10m >"$tmp/tls.log" 2>&1 &
pids+=($!)
wait_for 60 "the TLS API server did not start" test -s "$tmp/tls-url"
turl=$(cat "$tmp/tls-url")
case $turl in https://127.0.0.1:*) ;; *) fail "URL $turl is not https" ;; esac
expect "TLS with the CA" "$(curl -sS --cacert "$tmp/tls.crt" "$turl/api/v1/nodes" | jq -r .kind)" NodeList
if curl -sS -o /dev/null "$turl/api/v1/nodes" 2>/dev/null; then fail "TLS without the CA was accepted"; fi
curl -sS -N --cacert "$tmp/tls.crt" "$turl/api/v1/nodes?watch=1" >"$tmp/tw" 2>/dev/null &
twpid=$!
tls_watch_open() { [ "$(curl -fsS --cacert "$tmp/tls.crt" "$turl/_control/watches" | jq .open)" = 1 ]; }
wait_for 30 "the TLS watch did not open" tls_watch_open
curl -fsS --cacert "$tmp/tls.crt" -X POST "$turl/_control/drop" >/dev/null
wait_for 30 "drop did not end the TLS watch" eval '! kill -0 $twpid 2>/dev/null'
expect "the TLS watch's events" "$(jq -r .type "$tmp/tw" | paste -sd, -)" "ADDED,ADDED"
echo "k8s_apiserver: list, selectors, pages, watch, bookmarks, 410, drop, slow, counts, token and TLS checked"
