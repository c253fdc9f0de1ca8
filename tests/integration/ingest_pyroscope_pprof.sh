#!/bin/sh
# ingest_pyroscope_pprof.sh: the profiles Pyroscope's /ingest converters make
# (folded stacks, a speedscope file, a repaired .NET pprof) read by an independent reader, go tool
# pprof -raw: each sample as "value: frame frame ..." (leaf first), with the
# sample type, period and comment, against what the inputs say by hand.
# Usage: ingest_pyroscope_pprof.sh path/to/test_ingest_pyroscope
set -eu
bin=$1
command -v go >/dev/null 2>&1 || { echo "FAIL: go is not installed (scripts/deps.sh installs golang-go)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" --write "$dir"

# go tool pprof -raw, samples resolved to function names, sorted
samples() {
	go tool pprof -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { s = 1; next }
		/^Locations/ { s = 0; l = 1; next }
		/^Mappings/ { l = 0 }
		s && /:/ { n++; split($0, a, ":"); v[n] = a[1] + 0; ids[n] = a[2] }
		s && !/:/ && NF { types = $0 }
		l && /^ *[0-9]+:/ { id = $1; sub(":", "", id); name[id] = $4 }
		END {
			print "types " types
			for (i = 1; i <= n; i++) {
				k = split(ids[i], x, " "); line = v[i] ":"
				for (j = 1; j <= k; j++) line = line " " name[x[j]]
				print line
			}
		}' | sort
}

fail=0
check() { # file, expected (sorted lines)
	got=$(samples "$dir/$1")
	if [ "$got" != "$2" ]; then
		echo "$1: go tool pprof -raw reads"; echo "$got"; echo "want"; echo "$2"
		fail=1
	fi
}
meta() { # file, a line go tool pprof -raw must print
	go tool pprof -raw "$dir/$1" 2>/dev/null | grep -qx "$2" || {
		echo "$1: no line \"$2\" in go tool pprof -raw"; fail=1; }
}

# main;work;spin 12 / main;work 3 / main;idle 1 at 100 Hz: 10 ms a count
check folded-cpu.pb "10000000: idle main
120000000: spin work main
30000000: work main
types cpu/nanoseconds"
meta folded-cpu.pb "PeriodType: cpu nanoseconds"
meta folded-cpu.pb "Period: 10000000"
meta folded-cpu.pb "Comment: aggregation=sum"
meta folded-cpu.pb "Time: 2020-01-01 00:00:00 +0000 UTC"
# bytes are kept as sent
check folded-alloc.pb "4096: grow main
512: copy grow main
types alloc_space/bytes"
# Pyroscope's simple.speedscope.json: a;b;c 2+3, a;b;d 4, a;b 5 (unit none:
# 10 ms samples)
check speedscope-simple.pb "40000000: d b a
50000000: b a
50000000: c b a
types cpu/nanoseconds"
# a .NET profile whose functions all had id 0, repaired as Pyroscope repairs it:
# go tool pprof refuses the original ("found function with reserved ID=0")
go tool pprof -raw "$dir/dotnet-repaired.pb" >"$dir/dotnet.raw" 2>&1 &&
	grep -q '^Samples:' "$dir/dotnet.raw" &&
	! grep -q 'reserved ID' "$dir/dotnet.raw" || {
	echo "dotnet-repaired.pb: go tool pprof -raw does not read it:"; head -5 "$dir/dotnet.raw"
	fail=1; }
exit $fail
