#!/usr/bin/env bash
# tsdb_series_golden.sh: whole series survive the store: profiles stored side by
# side in one chunk (where the value encoding codes each profile against the one
# before it) each read back the same under `go tool pprof -raw` as the original.
#
#   tsdb_series_golden.sh PROFD TESTDATA
#
# Series, each imported in one `profd tsdb import` (one chunk of one block):
#   delta:  goapp heap, heap-2, heap-3 repeated 12 times (each copy's time_nanos
#           moved on by 60 s, so 36 scrapes of one program: more than one group
#           of records), with the Prometheus heap and allocs profiles falling
#           in the middle by their own times: the program changes mid-chunk and
#           back.
#   mixed:  every goapp and Prometheus profile of testdata, all types, by time:
#           sample types, symbols and sizes change from one record to the next.
# Checks: the series lists exactly the imported timestamps, is one chunk, and
# every profile read back with `profd tsdb dump-profile` prints the same under
# `go tool pprof -raw` as the file imported.
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0
store=$tmp/store
copies=12

# the pprof binary itself when it is there (the go command's start-up is most of
# the time of a -raw of a small profile), else go tool pprof
pprof_bin=$(go env GOTOOLDIR)/pprof
gopprof() {
	if [ -x "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" -symbolize=none "$@")
	else
		(cd "$tmp" && go tool pprof -symbolize=none "$@")
	fi
}

# shift IN OUT NS: OUT is IN (gzip or raw profile.proto) with time_nanos moved on
# by NS nanoseconds, gzip-compressed; prints the new time_nanos. Walks the
# top-level fields of the Profile message and rewrites field 9.
shift_time() {
	gzip -dcf "$1" | perl -e '
		use strict; use warnings;
		my $shift = $ARGV[0];
		local $/; my $buf = <STDIN>; my ($i, $out, $t) = (0, "", undef);
		sub uvar { my $v = 0; my $s = 0; while (1) { my $c = ord(substr($buf, $i++, 1));
			$v |= ($c & 0x7f) << $s; $s += 7; return $v if $c < 0x80; die "varint\n" if $s > 63 } }
		sub put { my $v = shift; my $r = ""; while ($v >= 0x80) { $r .= chr(($v & 0x7f) | 0x80); $v >>= 7 }
			return $r . chr($v) }
		while ($i < length $buf) {
			my $s = $i; my $key = uvar(); my $wt = $key & 7;
			if ($key == (9 << 3)) { $t = uvar() + $shift; $out .= put($key) . put($t); next }
			if ($wt == 0) { uvar() } elsif ($wt == 2) { my $n = uvar(); $i += $n }
			elsif ($wt == 1) { $i += 8 } elsif ($wt == 5) { $i += 4 } else { die "wire type $wt\n" }
			die "truncated\n" if $i > length $buf;
			$out .= substr($buf, $s, $i - $s);
		}
		defined $t or die "no time_nanos\n";
		binmode STDOUT; print STDERR "$t\n"; print $out;
	' "$3" 2>"$tmp/shift.t" | gzip -c >"$2"
	cat "$tmp/shift.t"
}

# import SERIES FILE...: one import of the files as series mixed{job="SERIES"}
# (its name is the series' __name__), recording "time_ms file" in $tmp/SERIES.list
import_series() {
	local series=$1
	shift
	: >"$tmp/$series.list"
	for f in "$@"; do
		t=$(shift_time "$f" "$tmp/probe.pb.gz" 0)
		echo "$((t / 1000000)) $f" >>"$tmp/$series.list"
	done
	sort -n -o "$tmp/$series.list" "$tmp/$series.list"
	"$profd" tsdb import --storage.tsdb.path="$store" --labels="$series{job=\"golden\"}" "$@" >/dev/null
}

# check SERIES: timestamps listed as imported, every profile -raw identical
check_series() {
	local series=$1 sel="$1{job=\"golden\"}"
	"$profd" tsdb query "$store" "$sel" --timestamps | sed -n 's/^  //p' >"$tmp/listed"
	checked=$((checked + 1))
	if ! cut -d' ' -f1 "$tmp/$series.list" | diff -q - "$tmp/listed" >/dev/null; then
		echo "FAIL: $series: the series does not list the imported timestamps"
		cut -d' ' -f1 "$tmp/$series.list" | diff - "$tmp/listed" | head -10 || true
		fail=1
		return
	fi
	local n=0
	while read -r ms f; do
		n=$((n + 1))
		"$profd" tsdb dump-profile "$store" "$sel" --time="$((ms / 1000)).$(printf %03d $((ms % 1000)))" \
			-o "$tmp/out.pb.gz" 2>/dev/null
		gopprof -raw "$f" >"$tmp/want" 2>&1
		gopprof -raw "$tmp/out.pb.gz" >"$tmp/got" 2>&1
		checked=$((checked + 1))
		if ! diff -q "$tmp/want" "$tmp/got" >/dev/null; then
			echo "FAIL: $series: profile $n ($(basename "$f"), $ms ms) differs under go tool pprof -raw"
			diff "$tmp/want" "$tmp/got" | head -10 || true
			fail=1
		fi
	done <"$tmp/$series.list"
}

# delta: 12 copies of the goapp heap trio, 60 s apart, and two Prometheus profiles
files=()
for ((k = 0; k < copies; k++)); do
	for h in heap heap-2 heap-3; do
		shift_time "$data/profiles/goapp/$h.pb.gz" "$tmp/$h.$k.pb.gz" $((k * 60 * 1000000000)) >/dev/null
		files+=("$tmp/$h.$k.pb.gz")
	done
done
files+=("$data/profiles/prometheus/heap.pb.gz" "$data/profiles/prometheus/allocs.pb.gz")
import_series delta "${files[@]}"

# mixed: every goapp and Prometheus profile as it is
import_series mixed "$data"/profiles/goapp/*.pb.gz "$data"/profiles/prometheus/*.pb.gz

# one chunk per series: the records of a series share one chunk's tables
checked=$((checked + 1))
chunks=$("$profd" tsdb analyze "$store" | sed -n 's/.*series (summed over blocks) \([0-9]*\), samples [0-9]*, chunks \([0-9]*\).*/\1 \2/p')
if [ "$chunks" != "2 2" ]; then
	echo "FAIL: want 2 series in 2 chunks, profd tsdb analyze says (series chunks): '$chunks'"
	fail=1
fi

check_series delta
check_series mixed

echo "tsdb series golden: $checked checks"
exit $fail
