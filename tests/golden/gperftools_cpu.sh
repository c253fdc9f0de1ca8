#!/usr/bin/env bash
# gperftools_cpu.sh: a real gperftools CPU profile, captured here, read by profd
# as go tool pprof reads it.
#
#   gperftools_cpu.sh PROFD CC
#
# Builds tests/golden/gperftools/busy.c with -g and -lprofiler, runs it with
# CPUPROFILE set, and checks that profd's top and -raw of the profile equal go
# tool pprof's (legacy_golden.sh on that one file: per-function flat and cum, and
# every stack's addresses, mappings and values), and that the totals and sample
# counts are those of go tool pprof -raw. Addresses only: -symbolize=none.
set -euo pipefail

profd=$(realpath "$1")
cc=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp

"$cc" -g -O1 -o "$tmp/busy" "$here/gperftools/busy.c" -Wl,--no-as-needed -lprofiler
mkdir "$tmp/prof"
CPUPROFILE=$tmp/prof/busy.cpu CPUPROFILE_FREQUENCY=500 "$tmp/busy" 600 >/dev/null
[ -s "$tmp/prof/busy.cpu" ] || { echo "FAIL: the program wrote no profile"; echo "0 passed, 1 failed"; exit 1; }

pprof_bin=$(go env GOTOOLDIR)/pprof
gopprof() {
	if [ -x "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" -symbolize=none "$@")
	else
		(cd "$tmp" && go tool pprof -symbolize=none "$@")
	fi
}

fail=0
# samples and totals: go tool pprof -raw of the capture and of profd's conversion
"$profd" pprof merge -o "$tmp/conv.pb.gz" "$tmp/prof/busy.cpu"
sums() { # raw output -> "nsamples count_sum cpu_sum"
	awk '/^Samples:/{s=1; getline; next} /^Locations/{s=0}
		s && /^ *[0-9]+ +[0-9]+:/{n++; c += $1; v += $2} END{print n+0, c+0, v+0}'
}
want=$(gopprof -raw "$tmp/prof/busy.cpu" 2>/dev/null | sums)
got=$(gopprof -raw "$tmp/conv.pb.gz" 2>/dev/null | sums)
echo "go tool pprof: $want (stacks, samples, cpu ns); profd: $got"
if [ "$want" != "$got" ]; then
	echo "FAIL: the totals differ"
	fail=1
fi
read -r stacks count _ <<<"$want"
if [ "$count" -lt 50 ]; then
	echo "FAIL: only $count samples in 600 ms of CPU at 500 Hz"
	fail=1
fi
# profd's own total
total=$("$profd" pprof top --sample-index=0 "$tmp/prof/busy.cpu" | sed -n 's/.* of \([0-9]*\) total.*/\1/p')
if [ "$total" != "$count" ]; then
	echo "FAIL: profd pprof top's total is $total, go tool pprof -raw's $count"
	fail=1
fi
# the main binary's mapping, with the addresses of the samples in it
if ! "$profd" pprof top "$tmp/prof/busy.cpu" | grep -q "^File: .*busy"; then
	echo "FAIL: profd's main mapping is not the program"
	fail=1
fi
LEGACY_MIN_FILES=1 "$here/legacy_golden.sh" "$profd" "$tmp/prof" | grep -v "passed, .* failed" || fail=1
[ $fail = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
