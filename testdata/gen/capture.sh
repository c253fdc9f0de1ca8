#!/usr/bin/env bash
# capture.sh: builds the synthetic workload in goapp/, runs it on 127.0.0.1 and
# saves its /debug/pprof profiles, gzip bodies exactly as served, into
# testdata/profiles/goapp/. Then runs it again in -mode large for the big CPU
# profile cpu-large.pb.gz (skip with --no-large).
#
# Usage: testdata/gen/capture.sh [--no-large]
# Env:   LARGE_SECONDS (default 40) length of the large CPU profile.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$(cd "$HERE/.." && pwd)/profiles/goapp
LARGE=1
[[ ${1:-} == --no-large ]] && LARGE=0
LARGE_SECONDS=${LARGE_SECONDS:-40}

TMP=$(mktemp -d)
PID=""
stop_app() {
	if [[ -n $PID ]]; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
		PID=""
	fi
}
cleanup() { stop_app; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "capture.sh: $*" >&2; exit 1; }
log() { echo "capture.sh: $*" >&2; }

# Offline, standard library only.
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
(cd "$HERE/goapp" && go build -trimpath -o "$TMP/goapp" .)

# start_app ARGS...: runs goapp on 127.0.0.1 with a kernel-chosen free port;
# the app writes the bound address to a file once its workload is running.
start_app() {
	rm -f "$TMP/addr"
	"$TMP/goapp" -addr 127.0.0.1:0 -addr-file "$TMP/addr" -duration 5m "$@" >"$TMP/goapp.log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		[[ -s $TMP/addr ]] && break
		kill -0 "$PID" 2>/dev/null || { cat "$TMP/goapp.log" >&2; die "goapp exited early"; }
		sleep 0.1
	done
	[[ -s $TMP/addr ]] || die "goapp did not start"
	ADDR=$(cat "$TMP/addr")
	[[ $ADDR == 127.0.0.1:* ]] || die "unexpected address $ADDR"
	log "goapp $* on $ADDR"
}

# fetch NAME PATH [TIMEOUT]: GET http://$ADDR$PATH and keep the body as
# $OUT/NAME after checking it is gzip and that go tool pprof can read it.
fetch() {
	local name=$1 path=$2 maxt=${3:-30}
	curl -fsS --max-time "$maxt" -o "$TMP/$name" "http://$ADDR$path" || die "GET $path failed"
	gzip -t "$TMP/$name" 2>/dev/null || die "$path: body is not gzip"
	go tool pprof -raw -symbolize=none "$TMP/$name" >/dev/null 2>"$TMP/pprof.err" ||
		{ cat "$TMP/pprof.err" >&2; die "$path: go tool pprof rejects it"; }
	mv "$TMP/$name" "$OUT/$name"
	log "saved $name ($(stat -c %s "$OUT/$name") bytes)"
}

mkdir -p "$OUT"

start_app -mode normal
sleep 8 # let the leak grow and contention accumulate
fetch heap.pb.gz         /debug/pprof/heap
fetch allocs.pb.gz       /debug/pprof/allocs
fetch goroutine.pb.gz    /debug/pprof/goroutine
fetch mutex.pb.gz        /debug/pprof/mutex
fetch block.pb.gz        /debug/pprof/block
fetch threadcreate.pb.gz /debug/pprof/threadcreate
fetch cpu.pb.gz          '/debug/pprof/profile?seconds=3'
fetch delta-allocs.pb.gz '/debug/pprof/allocs?seconds=2'
sleep 5
fetch heap-2.pb.gz       /debug/pprof/heap
fetch cpu-2.pb.gz        '/debug/pprof/profile?seconds=3'
sleep 5
fetch heap-3.pb.gz       /debug/pprof/heap
fetch cpu-3.pb.gz        '/debug/pprof/profile?seconds=3'
stop_app

if [[ $LARGE == 1 ]]; then
	start_app -mode large
	sleep 2
	fetch cpu-large.pb.gz "/debug/pprof/profile?seconds=$LARGE_SECONDS" $((LARGE_SECONDS + 30))
	stop_app
fi
log "done: $OUT"
