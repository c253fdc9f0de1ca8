#!/usr/bin/env bash
# What `make run` starts: a demo Go program that serves net/http/pprof on
# 127.0.0.1:6060 (built from testdata/gen/goapp with the Go toolchain that
# scripts/deps.sh installs), and profd scraping it with examples/profd.yml into
# ./data. Ctrl-C stops both.
set -euo pipefail
profd=$(realpath "${1:-build/release/profd}")
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$here/build"
echo "building the demo target..."
(cd "$here/testdata/gen/goapp" && GOFLAGS=-mod=mod GOPROXY=off go build -o "$here/build/demo-goapp" .)
"$here/build/demo-goapp" -addr 127.0.0.1:6060 >"$here/build/demo-goapp.log" 2>&1 &
demo=$!
trap 'kill $demo 2>/dev/null || true' EXIT
"$profd" --version
cat <<MSG

profd is scraping the demo program at 127.0.0.1:6060 every 15 s into ./data,
with its API on http://localhost:10902/. In another terminal:
  curl -G localhost:10902/api/v1/query_range --data-urlencode 'query={job="demo"}'
  curl -G localhost:10902/api/v1/query --data-urlencode 'query=heap{job="demo"}' --data-urlencode report=top
  go tool pprof 'http://localhost:10902/api/v1/query?query=heap{job="demo"}&report=proto'
Ctrl-C stops profd and the demo program.

MSG
"$profd" run --config.file="$here/examples/profd.yml" --storage.tsdb.path="$here/data" || true
