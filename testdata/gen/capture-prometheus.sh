#!/usr/bin/env bash
# capture-prometheus.sh: runs Debian's prometheus binary by hand (not as a
# service) on 127.0.0.1 with a throwaway storage dir and a minimal config that
# scrapes itself every second, puts a light PromQL query load on it, and saves
# its /debug/pprof profiles (gzip bodies exactly as served) into
# testdata/profiles/prometheus/.
#
# Needs: apt-get install prometheus curl (the script does not install them).
# Usage: testdata/gen/capture-prometheus.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$(cd "$HERE/.." && pwd)/profiles/prometheus
PROM=${PROMETHEUS:-/usr/bin/prometheus}

die() { echo "capture-prometheus.sh: $*" >&2; exit 1; }
log() { echo "capture-prometheus.sh: $*" >&2; }

[[ -x $PROM ]] || die "$PROM not found: apt-get install prometheus"
command -v curl >/dev/null || die "curl not found"

TMP=$(mktemp -d)
PID=""
LOADPIDS=()
cleanup() {
	local p
	for p in "${LOADPIDS[@]}"; do
		pkill -P "$p" 2>/dev/null || true # its curl, if one is running
		kill "$p" 2>/dev/null || true
	done
	if [[ -n $PID ]]; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# port_in_use PORT: true if something listens on 127.0.0.1:PORT.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_prometheus: picks a random free port and starts prometheus on it,
# retrying with another port if it fails to come up (e.g. lost a port race).
start_prometheus() {
	local try port
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		port_in_use "$port" && continue
		cat >"$TMP/prometheus.yml" <<YAML
# Minimal config: scrape this prometheus itself every second.
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ['127.0.0.1:$port']
YAML
		rm -rf "$TMP/data"
		"$PROM" --config.file="$TMP/prometheus.yml" \
			--storage.tsdb.path="$TMP/data" \
			--web.listen-address="127.0.0.1:$port" \
			--log.level=warn >"$TMP/prometheus.log" 2>&1 &
		PID=$!
		for _ in $(seq 100); do
			if curl -fsS --max-time 1 "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; then
				ADDR=127.0.0.1:$port
				log "prometheus $("$PROM" --version 2>&1 | head -1 | awk '{print $3}') on $ADDR"
				return 0
			fi
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.2
		done
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
		PID=""
		log "prometheus did not come up on port $port (try $try):"
		tail -5 "$TMP/prometheus.log" >&2 || true
	done
	die "could not start prometheus"
}

# urlencode STRING: percent-encodes STRING for a query parameter.
urlencode() {
	local s=$1 i c out=""
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[a-zA-Z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf '%s' "$out"
}

# query_load SECONDS: a bounded loop of PromQL instant and range queries. Each
# round is one curl process reusing its connection for a batch of requests.
query_load() {
	local until=$((SECONDS + $1)) rounds=0 q e now cfg=$TMP/load.$BASHPID.curlrc
	local queries=(
		'rate(prometheus_http_requests_total[10s])'
		'sum by (handler) (rate(prometheus_http_request_duration_seconds_count[30s]))'
		'histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[30s])))'
		'topk(10, count by (__name__) ({__name__=~".+"}))'
		'sum(rate(go_gc_duration_seconds_count[30s])) + sum(go_goroutines)'
		'avg_over_time(go_memstats_heap_inuse_bytes[1m])'
		'max by (__name__) ({__name__=~"go_.*|process_.*"})'
		'quantile_over_time(0.5, go_goroutines[30s])'
	)
	local encoded=()
	for q in "${queries[@]}"; do encoded+=("$(urlencode "$q")"); done
	while ((SECONDS < until && rounds < 1000)); do
		now=$(date +%s)
		: >"$cfg"
		for e in "${encoded[@]}"; do
			printf 'url = "http://%s/api/v1/query?query=%s"\noutput = "/dev/null"\n' "$ADDR" "$e" >>"$cfg"
			printf 'url = "http://%s/api/v1/query_range?query=%s&start=%d&end=%d&step=1"\noutput = "/dev/null"\n' \
				"$ADDR" "$e" $((now - 60)) "$now" >>"$cfg"
		done
		curl -sS --max-time 10 -K "$cfg" || true
		rounds=$((rounds + 1))
	done
}

# fetch NAME PATH [TIMEOUT]: GET http://$ADDR$PATH and keep the body as
# $OUT/NAME after checking it is gzip and that go tool pprof can read it.
fetch() {
	local name=$1 path=$2 maxt=${3:-30}
	curl -fsS --max-time "$maxt" -o "$TMP/$name" "http://$ADDR$path" || die "GET $path failed"
	gzip -t "$TMP/$name" 2>/dev/null || die "$path: body is not gzip"
	if command -v go >/dev/null; then
		go tool pprof -raw -symbolize=none "$TMP/$name" >/dev/null 2>"$TMP/pprof.err" ||
			{ cat "$TMP/pprof.err" >&2; die "$path: go tool pprof rejects it"; }
	fi
	mv "$TMP/$name" "$OUT/$name"
	log "saved $name ($(stat -c %s "$OUT/$name") bytes)"
}

mkdir -p "$OUT"
start_prometheus
sleep 10 # let it scrape itself a few times and fill its head block

query_load 12 &
LOADPIDS+=($!)
query_load 12 &
LOADPIDS+=($!)
sleep 1
fetch cpu.pb.gz '/debug/pprof/profile?seconds=3'
fetch heap.pb.gz         /debug/pprof/heap
fetch allocs.pb.gz       /debug/pprof/allocs
fetch goroutine.pb.gz    /debug/pprof/goroutine
fetch mutex.pb.gz        /debug/pprof/mutex
fetch block.pb.gz        /debug/pprof/block
fetch threadcreate.pb.gz /debug/pprof/threadcreate
for p in "${LOADPIDS[@]}"; do wait "$p" || true; done
LOADPIDS=()
log "done: $OUT"
