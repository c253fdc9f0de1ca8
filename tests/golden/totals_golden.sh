#!/usr/bin/env bash
# totals_golden.sh: the totals the store keeps beside the timestamps equal what
# `go tool pprof -raw` adds up. Every profile of the corpus (one series per
# profile type, its scrapes in time order) and every profile under
# testdata/profiles (one series each) is imported with `profd tsdb import`; for
# each, the sum of each sample type's values over the samples `go tool pprof
# -raw` prints (64-bit, wrapping as Go's int64) must be what
# `profd tsdb query --totals` lists at the profile's time. A file go tool pprof
# cannot read is not a profile and is skipped; one that profd refuses but go
# reads fails the test unless known-differences.txt gives the reason.
#
#   totals_golden.sh PROFD TESTDATA [CORPUS]
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
corpus=${3:-${PD_CORPUS:-$data/../../shared/corpus/prometheus}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp STACKLESS=$tmp/stackless
fail=0
checked=0
skipped=0

# the pprof binary itself when it is there (the go command's start-up is a good
# part of the time of a small report, and the test runs a great many), else go tool pprof
pprof_bin=$(go env GOTOOLDIR)/pprof
gopprof() {
	if [ -x "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" -symbolize=none "$@")
	else
		(cd "$tmp" && go tool pprof -symbolize=none "$@")
	fi
}

# The sums per sample type of the samples with no locations, one a line, in
# type order, read from the protobuf itself: go tool pprof -raw (Go 1.19) prints
# no line for such a sample, though its -top total counts it, and so do the
# store's totals (known-differences.txt).
stackless_sums() {
	{ gzip -dc "$1" 2>/dev/null || cat "$1"; } | perl -e '
		use integer;
		local $/; my $b = <STDIN>;
		sub uv { my ($s, $i) = @_; my ($r, $sh) = (0, 0);
			while (1) { my $x = ord(substr($$s, $$i++, 1)); $r |= ($x & 0x7f) << $sh; $sh += 7; return $r if $x < 0x80 } }
		sub fields { my ($s) = @_; my $i = 0; my @f;
			while ($i < length $s) { my $k = uv(\$s, \$i); my ($f, $w) = ($k >> 3, $k & 7); my $v;
				if ($w == 0) { $v = uv(\$s, \$i) } elsif ($w == 2) { my $l = uv(\$s, \$i); $v = substr($s, $i, $l); $i += $l }
				elsif ($w == 1) { $i += 8 } elsif ($w == 5) { $i += 4 } else { die "wire type $w" }
				push @f, [$f, $w, $v] } @f }
		my @sum;
		for my $s (grep { $_->[0] == 2 } fields($b)) {
			my ($locs, @v) = (0);
			for my $g (fields($s->[2])) {
				if ($g->[0] == 1) { $locs++ }
				elsif ($g->[0] == 2 && $g->[1] == 2) { my $i = 0; push @v, uv(\$g->[2], \$i) while $i < length $g->[2] }
				elsif ($g->[0] == 2) { push @v, $g->[2] }
			}
			next if $locs;
			$sum[$_] += $v[$_] for 0 .. $#v;
		}
		print "$_\n" for @sum;'
}

# "<ms> type/unit=sum ..." of a profile: the time from go tool pprof -raw's Time:
# line (ms since the epoch), the sums over its sample lines (plus the samples it
# does not print, above).
raw_totals() {
	stackless_sums "$1" >"$tmp/stackless"
	gopprof -raw "$1" 2>/dev/null | perl -MTime::Local -ne '
		use integer;
		BEGIN { open(my $fh, "<", $ENV{STACKLESS}) or die; chomp(@extra = <$fh>) }
		if (/^Time: (\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+)(?:\.(\d+))? \+0000 UTC/) {
			my $f = substr(($7 // "") . "000", 0, 3);
			$ms = timegm($6, $5, $4, $3, $2 - 1, $1) * 1000 + $f;
			next;
		}
		if (/^Samples:/) { $hdr = 1; next }
		if ($hdr) { @types = map { s/\[dflt\]$//r } split; $hdr = 0; $on = 1; @sum = (0) x @types; next }
		if ($on && /^\S/) { $on = 0 }
		if ($on && /^\s+(-?\d+(?:\s+-?\d+)*):/) {
			my @v = split " ", $1;
			$sum[$_] += $v[$_] for 0 .. $#v;
		}
		END {
			$sum[$_] += ($extra[$_] // 0) for 0 .. $#types;
			# a type listed twice keeps its last column, as profd lists it once
			my (%last, @order);
			for my $i (0 .. $#types) { push @order, $types[$i] unless exists $last{$types[$i]}; $last{$types[$i]} = $i }
			print $ms, map({ " $_=" . $sum[$last{$_}] } sort @order), "\n";
		}'
}

# The same line from profd's listing at time ms of the series sel in store.
stored_totals() { # store sel ms
	"$profd" tsdb query "$1" "$2" --totals | awk -v ms="$3" '
		$1 == ms { out = $1; for (i = 3; i <= NF; i++) out = out " " $i; print out; found = 1 }
		END { if (!found) print ms " (not listed)" }' | {
		read -r t rest || true
		echo "$t $(echo "$rest" | tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ *$//')"
	}
}

known() { grep -q "^profiles/$1 " "$here/known-differences.txt"; }

check() { # what want got
	checked=$((checked + 1))
	local want got
	want=$(echo "$2" | { read -r t rest; echo "$t $(echo "$rest" | tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ *$//')"; })
	got=$3
	if [ "$want" != "$got" ]; then
		echo "FAIL: $1: stored totals differ from go tool pprof -raw"
		echo "  want: $want"
		echo "  got:  $got"
		fail=1
	fi
}

# ---- the corpus: one series per profile type, every scrape ----------------------
if [ -d "$corpus" ]; then
	for dir in "$corpus"/*/; do
		type=$(basename "$dir")
		store=$tmp/corpus-$type
		sel="$type{src=\"corpus\"}"
		"$profd" tsdb import --storage.tsdb.path="$store" --labels="$sel" "$dir"*.pb.gz >/dev/null
		"$profd" tsdb query "$store" "$sel" --totals >"$tmp/listing"
		for f in "$dir"*.pb.gz; do
			want=$(raw_totals "$f")
			ms=${want%% *}
			got=$(awk -v ms="$ms" '$1 == ms { out = $1; for (i = 3; i <= NF; i++) out = out " " $i; print out; f = 1 }
				END { if (!f) print ms " (not listed)" }' "$tmp/listing" |
				{ read -r t rest || true; echo "$t $(echo "$rest" | tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ *$//')"; })
			check "corpus/$type/$(basename "$f")" "$want" "$got"
		done
	done
else
	# a clone on its own has no shared corpus beside it: the testdata profiles
	# below still include one scrape of each of Prometheus's profile types
	echo "note: no corpus at $corpus (set PD_CORPUS); checking the testdata profiles only"
fi

# ---- every testdata profile, one series each ------------------------------------
# (files over profd's size limit left out: pprof_golden_validity checks them)
# shellcheck source=over_limit.sh
. "$here/over_limit.sh"
while IFS= read -r f; do
	rel=${f#"$data"/profiles/}
	if over_limit "$profd" "$f" || ! gopprof -raw "$f" >/dev/null 2>&1; then
		skipped=$((skipped + 1))
		continue
	fi
	store=$tmp/td-$(echo "$rel" | tr '/.' '__')
	sel="td{file=\"$rel\"}"
	if ! "$profd" tsdb import --storage.tsdb.path="$store" --labels="$sel" "$f" >/dev/null 2>"$tmp/err"; then
		if known "$rel"; then
			skipped=$((skipped + 1))
			continue
		fi
		echo "FAIL: $rel: go tool pprof reads it, profd tsdb import refused: $(cat "$tmp/err")"
		fail=1
		continue
	fi
	want=$(raw_totals "$f")
	got=$(stored_totals "$store" "$sel" "${want%% *}")
	check "$rel" "$want" "$got"
done < <(find "$data/profiles" -type f \( -name '*.pb' -o -name '*.pb.gz' \) | LC_ALL=C sort)

echo "totals golden: $checked profiles checked, $skipped files go tool pprof or profd do not read as profiles"
if [ "$checked" -lt 30 ]; then
	echo "FAIL: only $checked profiles checked; testdata/profiles alone has more than 30"
	fail=1
fi
exit $fail
