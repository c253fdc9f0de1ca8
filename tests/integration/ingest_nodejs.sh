#!/usr/bin/env bash
# ingest_nodejs.sh: Pyroscope's own Node.js SDK (@pyroscope/nodejs, from npm, in
# tests/ingest/nodejs) profiles a small program and pushes to a running profd's
# /ingest, unchanged but for its server address: its wall and heap profiles arrive
# as series with its service_name, its tags (names with dots sanitized) and
# pyroscope_spy="nodespy", and report=top of each names the program's hot function.
#
#   ingest_nodejs.sh PROFD NODE_DIR
set -euo pipefail

profd=$(realpath "$1")
node_dir=$(realpath "$2")
[ -d "$node_dir/node_modules/@pyroscope/nodejs" ] ||
	{ echo "FAIL: $node_dir/node_modules has no @pyroscope/nodejs: run scripts/deps.sh --test"; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/profd.log
fail() {
	echo "FAIL: $*"
	echo "--- profd log"; tail -30 "$log" 2>/dev/null
	echo "--- node log"; tail -30 "$tmp/node.log" 2>/dev/null
	exit 1
}
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.5
	done
}
printf 'global:\n  scrape_interval: 1m\n' >"$tmp/profd.yml"
timeout --foreground 300 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --log.level=debug 2>"$log" &
pids+=("$!")
listening() { port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1 || true); [ -n "$port" ]; }
wait_for 60 "profd did not start listening" listening
api=http://127.0.0.1:$port

# the program runs until the test has what it needs (at most 240 s)
DEBUG=pyroscope timeout 250 node "$node_dir/app.js" "$api" 240 >"$tmp/node.log" 2>&1 &
pids+=("$!")

series_of() { # NAME -> the series of checkout-node with that __name__, in $tmp/NAME.json
	curl -fsS "$api/api/v1/series" --data-urlencode "match[]=$1{service_name=\"checkout-node\"}" >"$tmp/$1.json" &&
		jq -e '.data | length > 0' "$tmp/$1.json" >/dev/null
}
wait_for 200 "no wall series of checkout-node arrived" series_of wall
wait_for 200 "no heap series of checkout-node arrived" series_of heap
jq -e '.data[0] | .pyroscope_spy == "nodespy" and .region == "eu-west" and
	.deployment_environment == "test" and .process_runtime_name == "nodejs"' "$tmp/wall.json" >/dev/null ||
	fail "the wall series' labels: $(cat "$tmp/wall.json")"
grep -q "Server rejected" "$tmp/node.log" && fail "profd rejected a push of the SDK"

# report=top over the last minute names the hot function, for wall and heap
hot() { # NAME
	local end
	end=$(date +%s)
	curl -fsS -G "$api/api/v1/query" --data-urlencode "query=$1{service_name=\"checkout-node\"}" \
		--data-urlencode "start=$((end - 300))" --data-urlencode "end=$end" --data-urlencode mode=merge \
		--data-urlencode report=top >"$tmp/top-$1.json" && grep -q profdHotLoop "$tmp/top-$1.json"
}
wait_for 120 "report=top of wall does not name profdHotLoop: $(head -c 800 "$tmp/top-wall.json" 2>/dev/null)" hot wall
wait_for 120 "report=top of heap does not name profdHotLoop: $(head -c 800 "$tmp/top-heap.json" 2>/dev/null)" hot heap
curl -fsS "$api/metrics" >"$tmp/metrics" || fail "GET /metrics"
grep -q '^profd_ingest_profiles_total{endpoint="ingest",format="pprof"} [1-9]' "$tmp/metrics" ||
	fail "no pprof pushes counted: $(grep profd_ingest "$tmp/metrics")"
echo "ok: $(jq -c "[.data[0] | {__name__, service_name, region}]" "$tmp/wall.json")"
