#!/usr/bin/env bash
# legacy_golden.sh: checks profd's reading of the legacy profile formats (gperftools
# CPU, text heap/growth/contention/thread, Go's count profiles, Java's) against
# `go tool pprof -symbolize=none` on the same files.
#
#   legacy_golden.sh PROFD LEGACY_TESTDATA_DIR
#
# For every file and every sample type, profd's top (tsv) equals go tool pprof
# -top on every function's flat and cum, and profd's conversion, written as
# profile.proto, lists the same stacks, mappings and values under -raw.
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0

pprof_bin=$(go env GOTOOLDIR)/pprof
gopprof() {
	if [ -x "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" -symbolize=none "$@")
	else
		(cd "$tmp" && go tool pprof -symbolize=none "$@")
	fi
}

types_of() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/{getline; for (i = 1; i <= NF; i++) { sub(/\[dflt\]$/, "", $i); print $i }; exit}'
}

# go tool pprof -top in raw units, as "name<TAB>flat<TAB>cum", sorted
go_top() { # unit index file
	gopprof -top -nodefraction=0 -unit="$1" -sample_index="$2" "$3" 2>"$tmp/go.err" |
		perl -ne '
			$on = 1, next if /^\s+flat\s+flat%/;
			next unless $on;
			next unless /\A\s*(\S+)\s+\S+\s+\S+\s+(\S+)\s+\S+  (.*?)\n?\z/s;
			my ($f, $c, $n) = ($1, $2, $3);
			$n =~ s/ \((partial-)?inline\)$//;
			s/[A-Za-z]+$// for ($f, $c);
			print "$n\t$f\t$c\n";' | LC_ALL=C sort
}

profd_top() { # index file
	"$profd" pprof top --format=tsv --sample-index="$1" "$2" |
		perl -ne 'print "$1\t$2\t$3\n" if /^(.*?)\t(-?\d+)\t(-?\d+)$/' | LC_ALL=C sort
}

# go tool pprof -raw as one line per distinct stack: its frames (address, the
# mapping's range, offset and file, the function and line) and its labels, then
# the summed values; ids and order do not count.
canon_raw() {
	perl -ne '
		if (/^Samples:/) { $sec = "s"; <STDIN>; next }
		if (/^Locations/) { $sec = "l"; next }
		if (/^Mappings/) { $sec = "m"; next }
		chomp;
		if ($sec eq "s") {
			if (/^\s*(-?\d+(?:\s+-?\d+)*):\s*(.*?)\s*$/) {
				push @s, [[split " ", $1], [split " ", $2], ""];
			} elsif (@s && /\S/) { s/^\s+//; $s[-1][2] .= " $_" }
		} elsif ($sec eq "l" && /^\s*(\d+): (0x[0-9a-f]+) M=(\d+)\s*(.*?)\s*$/) {
			$loc{$1} = [$2, $3, $4];
		} elsif ($sec eq "m" && /^(\d+): (\S+)\s*(.*?)\s*$/) {
			$map{$1} = "$2 $3";
		}
		END {
			for my $s (@s) {
				my $k = join(";", map { my $l = $loc{$_}; "$l->[0]\@" . ($map{$l->[1]} // "none") . " $l->[2]" } @{$s->[1]}) . " |$s->[2]";
				my $v = $sum{$k} //= [(0) x @{$s->[0]}];
				$v->[$_] += $s->[0][$_] for 0 .. $#{$s->[0]};
			}
			print join(" ", @{$sum{$_}}), "\t$_\n" for sort keys %sum;
		}'
}

compare() { # label expected actual
	checked=$((checked + 1))
	if ! diff -u "$2" "$3" >"$tmp/diff.out"; then
		echo "FAIL: $1"
		head -n 40 "$tmp/diff.out" | cut -c 1-400
		fail=1
	fi
}

n=0
for f in "$data"/*; do
	case $f in *.md) continue ;; esac
	[ -f "$f" ] || continue
	n=$((n + 1))
	rel=${f#$data/}
	if ! gopprof -raw "$f" >"$tmp/raw" 2>"$tmp/go.err"; then
		# a file go tool pprof refuses: profd refuses it too
		checked=$((checked + 1))
		if "$profd" pprof validate "$f" >/dev/null 2>&1; then
			echo "FAIL: $rel: go tool pprof refuses it ($(head -c 200 "$tmp/go.err")), profd accepts it"
			fail=1
		fi
		continue
	fi
	i=0
	while read -r t; do
		[ -n "$t" ] || continue
		go_top "${t#*/}" "$i" "$f" >"$tmp/want"
		profd_top "$i" "$f" >"$tmp/got"
		if [ ! -s "$tmp/want" ]; then
			echo "FAIL: $rel [$t]: go tool pprof printed no rows"
			fail=1
		fi
		compare "top $rel [$t]" "$tmp/want" "$tmp/got"
		i=$((i + 1))
	done < <(types_of "$f")
	# profd's conversion, written as profile.proto, holds the same stacks (each
	# frame's address, mapping and function), labels and values under -raw
	"$profd" pprof merge -o "$tmp/re.pb.gz" "$f"
	canon_raw <"$tmp/raw" >"$tmp/want"
	gopprof -raw "$tmp/re.pb.gz" 2>/dev/null | canon_raw >"$tmp/got"
	[ -s "$tmp/want" ] || { echo "FAIL: $rel: no samples under go tool pprof -raw"; fail=1; }
	compare "raw $rel" "$tmp/want" "$tmp/got"
done
[ "$n" -ge "${LEGACY_MIN_FILES:-10}" ] || { echo "FAIL: only $n legacy test profiles in $data"; fail=1; }
echo "legacy_golden: $checked checks on $n files"
[ $fail = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
