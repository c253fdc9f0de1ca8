#!/usr/bin/env bash
# check.sh: every example in this folder is valid, with the tools at hand.
#
#   - profd.yml, prometheus/profd.yml (with its targets.json) and
#     prometheus/prometheus.yml: `profd check config`; prometheus.yml and
#     prometheus/profd-alerts.yml also with promtool when it is installed;
#   - kubernetes/profd.yaml: read with python3-yaml, the kinds of its documents (each
#     with apiVersion and metadata.name), a ClusterRole that lets profd get, list and
#     watch what kubernetes_sd_configs reads (and nothing more), bound to the
#     ServiceAccount the Deployment runs as; the profd.yml of its ConfigMap with
#     `profd check config`, a kubernetes_sd_configs of role pod reading the
#     annotations its header documents;
#   - grafana/: the data source is a Prometheus one at profd's /prometheus; the
#     dashboard is JSON whose every query parses as PromQL (with promtool, as rules,
#     when it is installed) and reads metrics of the demo's job;
#   - scale-out/: its profd configurations with `profd check config`; its
#     ClickHouse configurations well-formed and naming the same cluster; its
#     scrapers' hashmod rules splitting the targets between them;
#   - systemd/profd.service: `systemd-analyze verify` when systemd-analyze is
#     installed (with ExecStart pointed at the profd under test);
#   - demo-go: go vet, go build, and the program serves every Go profile type (each
#     validated by `profd pprof validate`) and /metrics, when Go is installed.
#
#   check.sh PROFD
set -euo pipefail

profd=$(realpath "$1")
ex=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
demo_pid=
cleanup() {
	[ -z "$demo_pid" ] || kill "$demo_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "check: skipped: $*"; }
check() { # files...
	"$profd" check config "$@" >"$tmp/check.out" 2>&1 || { cat "$tmp/check.out"; fail "profd check config $*"; }
	if grep -q WARNING "$tmp/check.out"; then cat "$tmp/check.out"; fail "warnings from profd check config $*"; fi
}

check "$ex/profd.yml"
check "$ex/prometheus/profd.yml"
# profd reads Prometheus's file too, warning only that it ignores rule_files
"$profd" check config "$ex/prometheus/prometheus.yml" >"$tmp/check.out" 2>&1 ||
	{ cat "$tmp/check.out"; fail "profd check config prometheus/prometheus.yml"; }
if grep WARNING "$tmp/check.out" | grep -vq 'field rule_files is accepted'; then
	cat "$tmp/check.out"
	fail "unexpected warnings for prometheus/prometheus.yml"
fi
grep -q "targets.json" "$ex/prometheus/profd.yml" && grep -q "targets.json" "$ex/prometheus/prometheus.yml" ||
	fail "prometheus/: the two configurations do not share targets.json"
if command -v promtool >/dev/null; then
	promtool check config "$ex/prometheus/prometheus.yml" >"$tmp/promtool.out" 2>&1 ||
		{ cat "$tmp/promtool.out"; fail "promtool check config prometheus/prometheus.yml"; }
	promtool check rules "$ex/prometheus/profd-alerts.yml" >"$tmp/promtool.out" 2>&1 ||
		{ cat "$tmp/promtool.out"; fail "promtool check rules prometheus/profd-alerts.yml"; }
else
	skip "promtool is not installed"
fi
echo "check: configurations valid"

# scale-out/: the profd configurations; the ClickHouse configurations well-formed,
# with the same cluster on both nodes and each node in it by its tcp_port; the two
# scrapers' hashmod rules give each target to exactly one of them (as Prometheus
# computes it: MD5 of the address, its last 8 bytes big-endian, modulo)
so=$ex/scale-out
check "$so/scraper-0.yml" "$so/scraper-1.yml" "$so/query.yml"
bash -n "$so/start.sh" || fail "scale-out/start.sh does not parse"
python3 - "$so" <<'PY' || fail "scale-out/: see above"
import hashlib, struct, sys, xml.dom.minidom as md, yaml
so = sys.argv[1]
def text(doc, tag):
    return doc.getElementsByTagName(tag)[0].firstChild.data.strip()
clusters = []
for n in (1, 2):
    doc = md.parse(f"{so}/clickhouse/shard-{n}.xml")
    rs = doc.getElementsByTagName("remote_servers")[0]
    ports = [text(r, "port") for r in rs.getElementsByTagName("replica")]
    clusters.append(rs.toxml())
    assert text(doc, "tcp_port") == ports[n - 1], f"shard-{n}.xml: tcp_port is not shard {n}'s"
assert clusters[0] == clusters[1], "shard-1.xml and shard-2.xml differ in remote_servers"
md.parse(f"{so}/clickhouse/users.xml")
owner = {}
for s in (0, 1):
    job = yaml.safe_load(open(f"{so}/scraper-{s}.yml"))["scrape_configs"][0]
    rules = job["relabel_configs"]
    assert rules[0]["action"] == "hashmod" and rules[0]["modulus"] == 2
    assert rules[1]["action"] == "keep" and rules[1]["regex"] == str(s)
    for t in job["static_configs"][0]["targets"]:
        h = struct.unpack(">Q", hashlib.md5(t.encode()).digest()[8:])[0] % 2
        if h == s:
            owner.setdefault(t, []).append(s)
targets = yaml.safe_load(open(f"{so}/scraper-0.yml"))["scrape_configs"][0]["static_configs"][0]["targets"]
assert sorted(owner) == sorted(targets), f"targets scraped by no scraper: {set(targets) - set(owner)}"
assert all(len(v) == 1 for v in owner.values())
assert {v[0] for v in owner.values()} == {0, 1}, "one scraper gets every target"
PY
echo "check: scale-out example valid"

# kubernetes/profd.yaml: its documents read with a YAML parser (python3-yaml; kubectl
# is not at hand), their kinds, the RBAC that kubernetes_sd_configs needs, and the
# ConfigMap's profd.yml with `profd check config`
k8s=$ex/kubernetes/profd.yaml
command -v python3 >/dev/null && python3 -c 'import yaml' 2>/dev/null ||
	fail "python3 with yaml (python3-yaml) is needed to read kubernetes/profd.yaml"
python3 -c 'import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))' \
	"$k8s" >"$tmp/k8s.json" 2>"$tmp/k8s.err" || fail "kubernetes/profd.yaml does not parse: $(cat "$tmp/k8s.err")"
command -v jq >/dev/null || fail "jq is needed to read kubernetes/profd.yaml"
kinds=$(jq -r '[.[].kind] | join(" ")' "$tmp/k8s.json")
[ "$kinds" = "ServiceAccount ClusterRole ClusterRoleBinding ConfigMap PersistentVolumeClaim Deployment Service" ] ||
	fail "kubernetes/profd.yaml: kinds $kinds"
jq -e 'all(.[]; (.apiVersion | type == "string") and (.metadata.name | type == "string"))' "$tmp/k8s.json" >/dev/null ||
	fail "kubernetes/profd.yaml: a document without apiVersion or metadata.name"
# every resource kubernetes_sd_configs reads: get, list and watch in its API group,
# and no verb that writes
for gr in /pods /services /endpoints /nodes /namespaces discovery.k8s.io/endpointslices networking.k8s.io/ingresses; do
	jq -e --arg g "${gr%/*}" --arg r "${gr#*/}" '.[] | select(.kind == "ClusterRole") | [.rules[] |
		select((.apiGroups | index($g)) and (.resources | index($r))) | .verbs] | add // [] |
		(index("get") and index("list") and index("watch"))' "$tmp/k8s.json" >/dev/null ||
		fail "kubernetes/profd.yaml: the ClusterRole does not let profd get, list and watch ${gr#*/}"
done
jq -e '[.[] | select(.kind == "ClusterRole") | .rules[].verbs[]] | all(. == "get" or . == "list" or . == "watch")' \
	"$tmp/k8s.json" >/dev/null || fail "kubernetes/profd.yaml: the ClusterRole grants more than get, list and watch"
jq -e '(.[] | select(.kind == "ClusterRoleBinding")) as $b | (.[] | select(.kind == "Deployment")) as $d |
	(.[] | select(.kind == "ClusterRole")) as $r | (.[] | select(.kind == "ServiceAccount")) as $sa |
	$b.roleRef.kind == "ClusterRole" and $b.roleRef.name == $r.metadata.name and
	($b.subjects | any(.kind == "ServiceAccount" and .name == $sa.metadata.name)) and
	$d.spec.template.spec.serviceAccountName == $sa.metadata.name' "$tmp/k8s.json" >/dev/null ||
	fail "kubernetes/profd.yaml: the Deployment does not run as the ServiceAccount bound to the ClusterRole"
mkdir -p "$tmp/k8s"
jq -r '.[] | select(.kind == "ConfigMap") | .data["profd.yml"] // empty' "$tmp/k8s.json" >"$tmp/k8s/profd.yml"
[ -s "$tmp/k8s/profd.yml" ] || fail "kubernetes/profd.yaml: no profd.yml in the ConfigMap"
check "$tmp/k8s/profd.yml"
python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$tmp/k8s/profd.yml" >"$tmp/k8s/profd.json"
jq -e '[.scrape_configs[] | .kubernetes_sd_configs // [] | .[] | .role] | index("pod")' "$tmp/k8s/profd.json" >/dev/null ||
	fail "kubernetes/profd.yaml: no kubernetes_sd_configs with role pod"
# the annotations the header tells users to set are the ones the rules read
for a in prometheus.io/scrape prometheus.io/port; do
	grep -q "^#       $a: " "$k8s" || fail "kubernetes/profd.yaml: the header does not show the annotation $a"
	grep -q "__meta_kubernetes_pod_annotation_$(echo "$a" | tr './' '__')]" "$tmp/k8s/profd.yml" ||
		fail "kubernetes/profd.yaml: no rule reads the annotation $a"
done
for p in /-/ready /-/healthy; do grep -q "path: $p" "$k8s" || fail "kubernetes/profd.yaml: no probe on $p"; done
echo "check: kubernetes/profd.yaml: $(jq length "$tmp/k8s.json") documents, its RBAC and configuration valid"

# grafana/: provisioning files and the dashboard
grep -q '^    type: prometheus$' "$ex/grafana/datasource.yml" &&
	grep -q '^    url: http://profd:10902/prometheus$' "$ex/grafana/datasource.yml" ||
	fail "grafana/datasource.yml: not a Prometheus data source at http://profd:10902/prometheus"
grep -q '^    type: file$' "$ex/grafana/dashboards.yml" || fail "grafana/dashboards.yml: no file provider"
dash=$ex/grafana/dashboards/profd-demo.json
command -v jq >/dev/null || fail "jq is needed to read grafana/dashboards/profd-demo.json"
jq -e '.title and .uid and (.panels | length > 0)' "$dash" >/dev/null || fail "$dash: not a dashboard"
# each query, with Grafana's variables given values, as a recording rule
jq -r '.. | objects | select(has("expr")) | .expr' "$dash" |
	sed -e 's/\$__rate_interval/1m/g' -e 's/\$instance/.+/g' >"$tmp/exprs"
[ "$(wc -l <"$tmp/exprs")" -ge 4 ] || fail "$dash: fewer than 4 queries"
grep -v 'job="demo"' "$tmp/exprs" && fail "$dash: a query not about the demo's job"
if command -v promtool >/dev/null; then
	{
		echo 'groups:'
		echo '  - name: dashboard'
		echo '    rules:'
		i=0
		while IFS= read -r e; do
			i=$((i + 1))
			printf '      - record: dashboard_query_%d\n        expr: %s\n' "$i" "$(jq -Rn --arg e "$e" '$e')"
		done <"$tmp/exprs"
	} >"$tmp/dashboard-rules.yml"
	promtool check rules "$tmp/dashboard-rules.yml" >"$tmp/promtool.out" 2>&1 ||
		{ cat "$tmp/promtool.out"; fail "grafana/dashboards/profd-demo.json: a query promtool does not parse"; }
fi
echo "check: grafana/: $(wc -l <"$tmp/exprs") dashboard queries"
# the flame graph dashboard: its panels read the Pyroscope data source of
# datasource-pyroscope.yml, each query a profile type id of the demo's service
fdash=$ex/grafana/dashboards/profd-demo-flamegraph.json
uid=$(sed -n 's/^    uid: //p' "$ex/grafana/datasource-pyroscope.yml")
jq -e --arg uid "$uid" '[.panels[] | select(.type == "flamegraph")] | length > 0' "$fdash" >/dev/null ||
	fail "$fdash: no flame graph panel"
jq -e --arg uid "$uid" '[.panels[].targets[]] | length > 0 and all(.datasource.uid == $uid and
	(.profileTypeId | test("^[^:]+:[^:]+:[^:]+:[^:]+:[^:]+$")) and .labelSelector == "{service_name=\"demo\"}")' \
	"$fdash" >/dev/null || fail "$fdash: a query not of the demo's service, of a profile type id, on data source $uid"

if command -v systemd-analyze >/dev/null; then
	sed "s#/usr/local/bin/profd#$profd#g" "$ex/systemd/profd.service" >"$tmp/profd.service"
	systemd-analyze verify --man=no "$tmp/profd.service" >"$tmp/verify.out" 2>&1 ||
		{ cat "$tmp/verify.out"; fail "systemd-analyze verify systemd/profd.service"; }
	echo "check: systemd/profd.service verified"
else
	skip "systemd-analyze is not installed"
fi

if ! command -v go >/dev/null; then
	skip "Go is not installed: demo-go not built"
	exit 0
fi
export HOME=${HOME:-$tmp} GOFLAGS=-mod=mod GOPROXY=off
(cd "$ex/demo-go" && go vet . && go build -o "$tmp/demo-go" .) || fail "demo-go does not build"
[ -z "$(gofmt -l "$ex/demo-go")" ] || fail "demo-go is not gofmt'ed: $(gofmt -l "$ex/demo-go")"
"$tmp/demo-go" -addr 127.0.0.1:0 -addr-file "$tmp/addr" -leak-max-mb 4 >"$tmp/demo.log" 2>&1 &
demo_pid=$!
for _ in $(seq 100); do [ -s "$tmp/addr" ] && break; sleep 0.1; done
addr=$(cat "$tmp/addr" 2>/dev/null) || true
[ -n "$addr" ] || fail "demo-go did not start: $(cat "$tmp/demo.log")"
for t in allocs block goroutine heap mutex threadcreate 'profile?seconds=1'; do
	curl -fsS -o "$tmp/p.pb.gz" "http://$addr/debug/pprof/$t" || fail "demo-go: /debug/pprof/$t"
	"$profd" pprof validate "$tmp/p.pb.gz" >/dev/null || fail "demo-go: /debug/pprof/$t is not a valid profile"
done
# Waits until the demo's TYPE profile shows a function matching PATTERN, for at most
# 60 s: a loaded machine may give the demo little CPU, so its leak, hot spot and
# contention take their time to show (the heap profile, for one, changes only at a
# garbage collection).
wait_profile() {
	local type=$1 pattern=$2 what=$3 deadline=$((SECONDS + 60))
	while :; do
		if curl -fsS -o "$tmp/w.pb.gz" "http://$addr/debug/pprof/$type" &&
			"$profd" pprof top "$tmp/w.pb.gz" >"$tmp/w.txt" 2>&1 &&
			grep -q "$pattern" "$tmp/w.txt"; then
			return 0
		fi
		[ "$SECONDS" -lt "$deadline" ] || fail "demo-go: $what within 60 s: $(head -12 "$tmp/w.txt")"
		sleep 0.5
	done
}
wait_profile 'profile?seconds=1' 'main\.checksumBlocks\|main\.mixBlock' "no hot spot in its CPU profile"
wait_profile heap 'main\.newSession' "no leak in its heap profile"
wait_profile mutex 'main\.transferFunds' "no contention in its mutex profile"
grep -q '^go_goroutines [0-9]' <<<"$(curl -fsS "http://$addr/metrics")" || fail "demo-go: /metrics has no go_goroutines"
kill -INT "$demo_pid"
rc=0
wait "$demo_pid" || rc=$?
demo_pid=
[ "$rc" = 0 ] || fail "demo-go exited with $rc on SIGINT"
echo "check: demo-go serves every profile type and /metrics, and stops on SIGINT"
