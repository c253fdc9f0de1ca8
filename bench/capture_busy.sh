#!/usr/bin/env bash
# bench/capture_busy.sh: captures the profiles of a busy Go service into DIR, as
# bench/capture.sh does for the demo: Debian's Prometheus scraping 300 targets
# every second (its own /metrics under 300 instance labels, so 300 scrape loops
# and their goroutines, about 300,000 head series), evaluating recording rules
# every second and answering two loops of range queries, so that its heap holds
# scrape caches, head series, query buffers and compaction as a loaded server's
# does, with allocation sites coming and going between captures. It is not the
# program the store's benchmarks were tuned on (bench/capture.sh's demo), and
# bench/daemon.sh serves its heap profiles as a second workload.
#
# usage: bench/capture_busy.sh DIR
#
# Environment:
#   CAPTURE_N=N          captures per profile type (default 120), as bench/capture.sh
#   BUSY_TARGETS=N       scrape targets (default 300)
#   BUSY_WARMUP=S        seconds of load before the first capture (default 20)
#
# Needs prometheus (Debian package prometheus), curl and python3.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$1
targets=${BUSY_TARGETS:-300}
warmup=${BUSY_WARMUP:-20}

die() {
	echo "capture_busy: $*" >&2
	exit 1
}
[[ $targets =~ ^[1-9][0-9]*$ ]] || die "BUSY_TARGETS must be a positive integer, not '$targets'"
[[ $warmup =~ ^[0-9]+$ ]] || die "BUSY_WARMUP must be a number of seconds, not '$warmup'"
command -v prometheus >/dev/null || die "prometheus not found (Debian package prometheus)"
command -v curl >/dev/null || die "curl not found"
[ -e "$out" ] && die "$out exists; remove it to capture again"

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n'
	printf 'rule_files: ["%s/rules.yml"]\n' "$tmp"
	printf 'scrape_configs:\n  - job_name: busy\n    static_configs:\n'
	for ((i = 0; i < targets; i++)); do
		printf '      - targets: ["127.0.0.1:%s"]\n        labels: {replica: "r%d", zone: "z%d"}\n' "$port" "$i" $((i % 7))
	done
	# each target its own instance, so that Prometheus keeps one scrape loop a target
	printf '    relabel_configs:\n      - source_labels: [replica]\n        target_label: instance\n'
} >"$tmp/prometheus.yml"
cat >"$tmp/rules.yml" <<'EOF'
groups:
  - name: busy
    interval: 1s
    rules:
      - record: zone:scrape_duration:avg
        expr: avg by (zone) (scrape_duration_seconds)
      - record: zone:http_requests:rate10s
        expr: sum by (zone, handler) (rate(prometheus_http_requests_total[10s]))
      - record: zone:go_memstats:max
        expr: max by (zone, __name__) ({__name__=~"go_memstats_.*_bytes"})
EOF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address="127.0.0.1:$port" >"$tmp/log" 2>&1 &
pids+=($!)
deadline=$((SECONDS + 60))
until curl -fsS -o /dev/null "http://127.0.0.1:$port/-/ready" 2>/dev/null; do
	[ $SECONDS -lt $deadline ] || die "prometheus did not become ready: $(tail -5 "$tmp/log")"
	sleep 0.2
done

# two query loops: range queries over everything the targets expose
for q in 'sum by (zone) (rate(prometheus_tsdb_head_samples_appended_total[10s]))' \
	'topk(20, sum by (__name__, zone) ({replica=~"r1.*"}))'; do
	(
		while :; do
			now=$(date +%s)
			curl -fsS -o /dev/null "http://127.0.0.1:$port/api/v1/query_range" \
				--data-urlencode "query=$q" --data-urlencode "start=$((now - 120))" \
				--data-urlencode "end=$now" --data-urlencode step=1 2>/dev/null || sleep 0.2
		done
	) &
	pids+=($!)
done

# the load reaches its working size: every target scraped
deadline=$((SECONDS + warmup))
while [ $SECONDS -lt $deadline ]; do
	kill -0 "${pids[0]}" 2>/dev/null || die "prometheus exited: $(tail -5 "$tmp/log")"
	sleep 1
done
up=$(curl -fsS "http://127.0.0.1:$port/api/v1/query" --data-urlencode 'query=count(up == 1)' |
	python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
echo "capture_busy: prometheus on 127.0.0.1:$port, $up of $targets targets up" >&2
CAPTURE_ADDR=127.0.0.1:$port "$repo/bench/capture.sh" "$out" || die "capturing Prometheus failed"
