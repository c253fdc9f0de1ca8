#!/usr/bin/env bash
# bench/capture.sh: captures a benchmark corpus from a busy Go program: builds the
# demo program of examples/demo-go (as `make demo` does), runs it on a free
# 127.0.0.1 port and scrapes every Go profile type N times into
# DIR/<type>/<n>.pb.gz (n = 1..N, gzip bodies as served), the layout of
# shared/corpus/prometheus. bench/tsdb.sh runs it to make its second corpus.
#
# usage: bench/capture.sh DIR
#
# Environment:
#   CAPTURE_N=N         scrapes per type (default 120: one full chunk of a series)
#   CAPTURE_INTERVAL=S  seconds between scrape rounds of the non-cpu types
#                       (default 0.5); cpu is /debug/pprof/profile?seconds=1
#                       back to back, in parallel, so a capture takes about N s
#   CAPTURE_ADDR=H:P    scrape the Go program already listening there instead
#                       of the demo (bench/querier.sh captures Prometheus so)
#
# DIR is written only when the capture is complete (it is filled under DIR.part
# and renamed), so an existing DIR is a whole corpus. Needs go and curl.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$1
n=${CAPTURE_N:-120}
interval=${CAPTURE_INTERVAL:-0.5}
types=(allocs block goroutine heap mutex threadcreate)

die() {
	echo "capture: $*" >&2
	exit 1
}
log() { echo "capture: $*" >&2; }

[[ $n =~ ^[1-9][0-9]*$ ]] || die "CAPTURE_N must be a positive integer, not '$n'"
command -v go >/dev/null || die "go not found (Debian: golang-go)"
command -v curl >/dev/null || die "curl not found"
[ -e "$out" ] && die "$out exists; remove it to capture again"

part=$out.part
rm -rf "$part"
mkdir -p "$part"
tmp=$(mktemp -d)
pid=""
cpu_pid=""
stop() {
	[ -n "$cpu_pid" ] && kill "$cpu_pid" 2>/dev/null || true
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp" "$part"
}
trap stop EXIT
trap 'exit 130' INT TERM

if [ -n "${CAPTURE_ADDR:-}" ]; then
	echo "$CAPTURE_ADDR" >"$tmp/addr"
	sleep infinity &
	pid=$!
else
	# built offline from the standard library, as `make demo` builds it
	(cd "$repo/examples/demo-go" && GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local \
		go build -o "$tmp/demo-go" .) || die "building examples/demo-go failed"

	# port 0: the kernel picks a free port; the demo writes the bound address to
	# the file once it listens
	"$tmp/demo-go" -addr 127.0.0.1:0 -addr-file "$tmp/addr" >"$tmp/demo.log" 2>&1 &
	pid=$!
fi
deadline=$((SECONDS + 20))
addr=""
while [ $SECONDS -lt $deadline ]; do
	kill -0 "$pid" 2>/dev/null || {
		cat "$tmp/demo.log" >&2
		die "the demo exited early"
	}
	if [ -s "$tmp/addr" ]; then
		addr=$(cat "$tmp/addr")
		curl -fsS --max-time 2 -o /dev/null "http://$addr/debug/pprof/" 2>/dev/null && break
	fi
	sleep 0.05
done
[ -n "$addr" ] && curl -fsS --max-time 2 -o /dev/null "http://$addr/debug/pprof/" ||
	die "the demo did not answer on /debug/pprof/ within 20 s"
log "$([ -n "${CAPTURE_ADDR:-}" ] && echo "the Go program" || echo demo-go) on $addr; $n scrapes of ${types[*]} every ${interval}s, and of cpu (1 s each)"

# get PATH FILE: the body of http://$addr/PATH, which must be gzip
get() {
	curl -fsS --max-time 30 -o "$2" "http://$addr$1" || die "GET $1 failed"
	gzip -t "$2" 2>/dev/null || die "GET $1: the body is not gzip"
}

for t in "${types[@]}" cpu; do
	mkdir -p "$part/$t"
done
# cpu profiles take a second each: scraped back to back beside the others
(
	for ((i = 1; i <= n; i++)); do
		get '/debug/pprof/profile?seconds=1' "$part/cpu/$i.pb.gz"
	done
) &
cpu_pid=$!
for ((i = 1; i <= n; i++)); do
	for t in "${types[@]}"; do
		get "/debug/pprof/$t" "$part/$t/$i.pb.gz"
	done
	sleep "$interval"
done
wait "$cpu_pid" || die "scraping cpu profiles failed"
cpu_pid=""
mv "$part" "$out"
log "$((n * (${#types[@]} + 1))) profiles in $out ($(du -sh "$out" | cut -f1))"
