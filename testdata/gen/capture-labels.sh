#!/usr/bin/env bash
# capture-labels.sh: builds labelapp/, runs it on 127.0.0.1 and saves its
# /debug/pprof profiles (CPU, goroutine, heap, allocs), gzip bodies exactly as
# served, into testdata/profiles/labels/. Their samples carry pprof.Do labels
# (CPU, goroutine) and Go's numeric "bytes" label (heap, allocs).
#
# Usage: testdata/gen/capture-labels.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$(cd "$HERE/.." && pwd)/profiles/labels
TMP=$(mktemp -d)
PID=""
cleanup() {
	if [[ -n $PID ]]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "capture-labels.sh: $*" >&2; exit 1; }

export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
(cd "$HERE/labelapp" && go build -trimpath -o "$TMP/labelapp" .)
"$TMP/labelapp" -addr 127.0.0.1:0 -addr-file "$TMP/addr" -duration 2m >"$TMP/app.log" 2>&1 &
PID=$!
for _ in $(seq 100); do
	[[ -s $TMP/addr ]] && break
	kill -0 "$PID" 2>/dev/null || { cat "$TMP/app.log" >&2; die "labelapp exited early"; }
	sleep 0.1
done
[[ -s $TMP/addr ]] || die "labelapp did not start"
ADDR=$(cat "$TMP/addr")
[[ $ADDR == 127.0.0.1:* ]] || die "unexpected address $ADDR"

fetch() { # NAME PATH
	curl -fsS --max-time 30 -o "$TMP/$1" "http://$ADDR$2" || die "GET $2 failed"
	gzip -t "$TMP/$1" 2>/dev/null || die "$2: body is not gzip"
	go tool pprof -raw -symbolize=none "$TMP/$1" >/dev/null 2>&1 || die "$2: go tool pprof rejects it"
	mkdir -p "$OUT"
	mv "$TMP/$1" "$OUT/$1"
	echo "capture-labels.sh: saved $1 ($(stat -c %s "$OUT/$1") bytes)" >&2
}

sleep 2
fetch cpu.pb.gz '/debug/pprof/profile?seconds=3'
fetch cpu-2.pb.gz '/debug/pprof/profile?seconds=2'
fetch goroutine.pb.gz /debug/pprof/goroutine
fetch heap.pb.gz /debug/pprof/heap
fetch allocs.pb.gz /debug/pprof/allocs
