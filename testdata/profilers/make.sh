#!/usr/bin/env bash
# make.sh: remakes the profiles of this folder (README.md says what each is).
#
#   make.sh PPROF_CHECKOUT
#
# PPROF_CHECKOUT is a clone of google/pprof (the files are taken from its HEAD).
# Needs Go (1.19), g++ with Debian's libgoogle-perftools-dev, Node.js with npm
# (the registry reachable: @datadog/pprof is installed into a temporary folder,
# never into this repository) and go tool pprof for the protobuf conversions.
# Profiles of running programs differ from run to run; their shapes do not.
set -euo pipefail

pprof_repo=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PPROF_TMPDIR=$tmp

# google/pprof's own test profiles: a Go heap profile without mappings, a heapz
# file both readers refuse, and protobuf conversions of its legacy C++ and Java
# profiles (the legacy files themselves are in ../legacy)
mkdir -p "$here/google-pprof"
git -C "$pprof_repo" show HEAD:internal/driver/testdata/go.nomappings.crash >"$here/google-pprof/go.nomappings.crash"
git -C "$pprof_repo" show HEAD:fuzz/testdata/7e3c92482f6f39fc502b822ded792c589849cca8 >"$here/google-pprof/fuzz-heapz-zero.heap"
for f in cppbench.cpu cppbench.heap cppbench.contention java.cpu java.heap java.contention; do
	git -C "$pprof_repo" show "HEAD:profile/testdata/$f" >"$tmp/$f"
	(cd "$tmp" && go tool pprof -symbolize=none -proto "$tmp/$f" >"$here/google-pprof/$f.pb.gz")
done

# Go 1.19: generic functions and types, and cgo (built offline, no modules)
mkdir -p "$here/go"
(cd "$here/src/gogeneric" && GOFLAGS=-mod=mod GOPROXY=off CGO_ENABLED=1 go build -o "$tmp/gogeneric" .)
"$tmp/gogeneric" "$here/go"

# C++ under gperftools (Debian's libgoogle-perftools-dev): CPU and heap profiles
mkdir -p "$here/gperftools"
g++ -O1 -g -fno-omit-frame-pointer -o "$tmp/templates" "$here/src/gperftools/templates.cc" \
	-Wl,--no-as-needed -ltcmalloc_and_profiler
(cd "$tmp" && CPUPROFILE=$tmp/cpp.cpu CPUPROFILE_FREQUENCY=200 HEAPPROFILE=$tmp/cpp \
	HEAP_PROFILE_ALLOCATION_INTERVAL=4194304 ./templates)
cp "$tmp/cpp.cpu" "$here/gperftools/cpp.cpu"
cp "$tmp/cpp.0001.heap" "$here/gperftools/cpp.heap"

# Node.js with npm's @datadog/pprof: wall-time and heap profiles
mkdir -p "$here/nodejs" "$tmp/node"
(cd "$tmp/node" && npm install --no-audit --no-fund --silent @datadog/pprof@5.20.0 >/dev/null)
NODE_PATH=$tmp/node/node_modules node "$here/src/nodejs/profile.js" "$here/nodejs"
