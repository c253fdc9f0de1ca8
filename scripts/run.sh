#!/usr/bin/env bash
# What `make run` starts. The daemon (`profd run`) is not part of profd yet; until it
# is, this shows what the binary does today: the pprof tools on a bundled profile.
set -euo pipefail
profd=${1:-build/release/profd}
here=$(cd "$(dirname "$0")/.." && pwd)
"$profd" --version
echo
echo "\$ profd pprof top --nodecount=15 testdata/profiles/prometheus/heap.pb.gz"
"$profd" pprof top --nodecount=15 "$here/testdata/profiles/prometheus/heap.pb.gz"
echo
echo "Try: $profd pprof --help"
