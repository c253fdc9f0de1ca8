#!/usr/bin/env bash
# bench/names.sh: what report names (pkg/pprof/names.c: demangling and pprof's
# simplification, made once per function) cost in a top table. A generated CPU
# profile of BENCH_FUNCS C++ functions (mangled system names, templates, as a
# symbolizer or perf writes them) in BENCH_SAMPLES samples of depth 16 is reported
# by `profd pprof top --format=tsv` with the default names and with
# --symbolize=none (names as stored, nothing demangled), and by go tool pprof -top
# (-symbolize=remote, which demangles likewise) as the reference. Best of
# BENCH_PASSES wall times.
#
# usage: bench/names.sh PROFD   (a Release build)
# env:   BENCH_FUNCS (20000), BENCH_SAMPLES (50000), BENCH_PASSES (5)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 PROFD" >&2; exit 2; }
profd=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
funcs=${BENCH_FUNCS:-20000}
samples=${BENCH_SAMPLES:-50000}
passes=${BENCH_PASSES:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp

python3 - "$repo/testdata/names" "$tmp/cxx.pb.gz" "$funcs" "$samples" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
from gen import Profile
out, nf, ns = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(1)
def ident(i):
    s = "fn%d" % i
    return "%d%s" % (len(s), s)
names = []
for i in range(nf):
    # ns::Box<int>::fnN<long>(...) const, and std::vector<...>-style arguments
    sym = "_ZNK2ns3BoxIiE%sIlEET_RKSt6vectorIiSaIiEE" % ident(i)
    names.append(("", sym) if i % 2 else (sym, sym))
p = Profile("samples", "count")
for _ in range(ns):
    p.sample([[names[rnd.randrange(nf)]] for _ in range(16)], rnd.randrange(1, 1000))
p.write(out)
PY

best() { # best wall time in ms of PASSES runs of the command
	local b=
	for _ in $(seq "$passes"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		local ms=$(((t1 - t0) / 1000000))
		if [ -z "$b" ] || [ "$ms" -lt "$b" ]; then b=$ms; fi
	done
	echo "$b"
}
pprof_bin=$(go env GOTOOLDIR)/pprof
[ -x "$pprof_bin" ] || pprof_bin="go tool pprof"
d=$(best "$profd" pprof top --format=tsv "$tmp/cxx.pb.gz")
r=$(best "$profd" pprof top --format=tsv --symbolize=none "$tmp/cxx.pb.gz")
# shellcheck disable=SC2086
g=$(best $pprof_bin -symbolize=remote -top -nodecount=100000 "$tmp/cxx.pb.gz")
echo "names: $funcs C++ functions, $samples samples of depth 16 ($(stat -c %s "$tmp/cxx.pb.gz") bytes gzipped)"
echo "names: profd pprof top, default names        ${d} ms"
echo "names: profd pprof top, --symbolize=none      ${r} ms   (default/none: $(awk -v a="$d" -v b="$r" 'BEGIN {printf "%.2f", b ? a / b : 0}')x)"
echo "names: go tool pprof -top (demangles too)     ${g} ms   (profd/pprof: $(awk -v a="$d" -v b="$g" 'BEGIN {printf "%.2f", b ? a / b : 0}')x)"
