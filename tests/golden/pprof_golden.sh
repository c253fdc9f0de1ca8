#!/usr/bin/env bash
# pprof_golden.sh: checks `profd pprof` against `go tool pprof` on the same files.
#
#   pprof_golden.sh PROFD TESTDATA MODE
#
# MODE is one of:
#   top       every valid testdata profile, every sample type: profd's top (tsv)
#             equals go tool pprof -top on every function's flat and cum
#   text      the same, for the whole text report (header, units, percentages,
#             order, the nodes dropped by -nodefraction, inline marks), also with
#             -nodecount and on diffs
#   validity  profd accepts exactly the files go tool pprof accepts, except those
#             listed with a reason in known-differences.txt
#   raw       profd's re-encoding of each profile prints the same under -raw
#   merge     profd pprof merge output equals go tool pprof's merge of the same files
#   diff      profd pprof diff output equals go tool pprof -diff_base
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
mode=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0

# the pprof binary itself when it is there (the go command's start-up is a good
# part of the time of a small report, and the test runs a great many), else go tool pprof.
# -symbolize=remote: on a file no address is symbolized, but names are demangled and
# simplified, as by default (and by profd)
pprof_bin=$(go env GOTOOLDIR)/pprof
gopprof() {
	if [ -x "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" -symbolize=remote "$@")
	else
		(cd "$tmp" && go tool pprof -symbolize=remote "$@")
	fi
}

# Sample types of a profile as go tool pprof lists them, one "type/unit" a line.
types_of() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/{getline; for (i = 1; i <= NF; i++) { sub(/\[dflt\]$/, "", $i); print $i }; exit}'
}

# go tool pprof -top in raw units, as "name<TAB>flat<TAB>cum", sorted. A row
# starts with its five figures, so a line break inside a name does not end it;
# in both tools' rows a name's backslash, tab and line break are written \\, \t
# and \n, so that a row stays one line (names may hold any byte, as in
# edge/nul-bytes.pb).
go_top() { # unit index files...
	local unit=$1 idx=$2
	shift 2
	gopprof -top -nodefraction=0 -unit="$unit" -sample_index="$idx" "$@" 2>"$tmp/go.err" |
		perl -0777 -ne '
			s/\A.*?^\s+flat\s+flat%[^\n]*\n//ms or exit;
			for (split /\n(?=[ ]*[^\s]+[ ]+[^\s]+%[ ]+[^\s]+%[ ]+[^\s]+[ ]+[^\s]+%  )/) {
				next unless /\A\s*(\S+)\s+\S+\s+\S+\s+(\S+)\s+\S+  (.*?)\n?\z/s;
				my ($f, $c, $n) = ($1, $2, $3);
				$n =~ s/ \((partial-)?inline\)$//;
				s/[A-Za-z]+$// for ($f, $c);
				$n =~ s/\\/\\\\/g; $n =~ s/\t/\\t/g; $n =~ s/\n/\\n/g;
				print "$n\t$f\t$c\n";
			}' | LC_ALL=C sort
}

profd_top() { # index files...
	local idx=$1
	shift
	"$profd" pprof top --format=tsv --sample-index="$idx" "$@" |
		perl -0777 -ne 'while (/\G(.*?)\t(-?\d+)\t(-?\d+)\n/gs) {
			my ($n, $f, $c) = ($1, $2, $3);
			$n =~ s/\\/\\\\/g; $n =~ s/\t/\\t/g; $n =~ s/\n/\\n/g;
			print "$n\t$f\t$c\n";
		}' | LC_ALL=C sort
}

compare() { # label expected actual
	checked=$((checked + 1))
	if ! diff -u "$2" "$3" >"$tmp/diff.out"; then
		echo "FAIL: $1"
		head -n 40 "$tmp/diff.out"
		fail=1
	fi
}

# shellcheck source=over_limit.sh
. "$here/over_limit.sh"
# Profiles both tools accept (known differences and files over profd's size limit
# left out: the validity mode checks those).
valid_profiles() {
	find "$data/profiles" -type f \( -name '*.pb.gz' -o -name '*.pb' \) | LC_ALL=C sort | while read -r f; do
		grep -q "^${f#$data/} " "$here/known-differences.txt" && continue
		over_limit "$profd" "$f" && continue
		if gopprof -raw "$f" >/dev/null 2>&1; then echo "$f"; fi
	done
}

# Compares the top of every sample type of one profile (or a merged set).
check_top_all() { # label profd-input... -- go-input...
	local label=$1
	shift
	local pin=() gin=()
	while [ "$1" != "--" ]; do pin+=("$1"); shift; done
	shift
	gin=("$@")
	local i=0
	while read -r t; do
		[ -n "$t" ] || continue
		go_top "${t#*/}" "$i" "${gin[@]}" >"$tmp/want"
		profd_top "$i" "${pin[@]}" >"$tmp/got"
		if [ ! -s "$tmp/want" ] && [ -s "$tmp/go.err" ] && ! grep -q . "$tmp/got"; then :; fi
		compare "$label [$t]" "$tmp/want" "$tmp/got"
		i=$((i + 1))
	done < <(types_of "${TYPES_FROM:-${gin[0]}}")
}

case "$mode" in
top)
	while read -r f; do
		check_top_all "top ${f#$data/}" "$f" -- "$f"
	done < <(valid_profiles)
	;;
text)
	# the whole report, header lines included (the time in one zone for both);
	# with a row limit too, since pprof marks "(inline)" from the rows it keeps;
	# and of diffs, where the cut against the signed flat sum and the absolute
	# total differ
	export TZ=UTC
	text_cmp() { # label file index [nodecount]
		local nc=()
		[ -n "${4:-}" ] && nc=(-nodecount="$4")
		gopprof -top "${nc[@]}" -sample_index="$3" "$2" >"$tmp/want" 2>/dev/null
		"$profd" pprof top ${4:+--nodecount="$4"} --sample-index="$3" "$2" >"$tmp/got"
		compare "$1" "$tmp/want" "$tmp/got"
	}
	while read -r f; do
		i=0
		while read -r t; do
			[ -n "$t" ] || continue
			text_cmp "text top ${f#$data/} [$t]" "$f" "$i"
			text_cmp "text top -nodecount=7 ${f#$data/} [$t]" "$f" "$i" 7
			i=$((i + 1))
		done < <(types_of "$f")
	done < <(valid_profiles)
	for pair in "goapp/cpu-3.pb.gz goapp/cpu-2.pb.gz" "goapp/cpu.pb.gz goapp/cpu-2.pb.gz" \
		"prometheus/block.pb.gz goapp/block.pb.gz" "goapp/heap.pb.gz goapp/heap-3.pb.gz" \
		"goapp/allocs.pb.gz goapp/delta-allocs.pb.gz" "prometheus/mutex.pb.gz goapp/mutex.pb.gz"; do
		set -- $pair
		gopprof -proto -diff_base="$data/profiles/$1" "$data/profiles/$2" >"$tmp/d.pb.gz" 2>/dev/null
		i=0
		while read -r t; do
			[ -n "$t" ] || continue
			for nc in "" 5 20; do
				text_cmp "text top of diff $pair [$t] ${nc:+-nodecount=$nc}" "$tmp/d.pb.gz" "$i" "$nc"
			done
			i=$((i + 1))
		done < <(types_of "$tmp/d.pb.gz")
	done
	;;
validity)
	known="$here/known-differences.txt"
	while read -r f; do
		rel=${f#$data/}
		go_ok=0
		gopprof -raw "$f" >/dev/null 2>&1 && go_ok=1
		pd_ok=0
		"$profd" pprof validate "$f" >"$tmp/val" 2>&1 && pd_ok=1
		checked=$((checked + 1))
		if [ "$go_ok" != "$pd_ok" ]; then
			if grep -q "^$rel " "$known"; then
				continue
			fi
			echo "FAIL: $rel: go tool pprof accepts=$go_ok, profd accepts=$pd_ok: $(cat "$tmp/val")"
			fail=1
		fi
	done < <(find "$data/profiles" -type f \( -name '*.pb.gz' -o -name '*.pb' \) | LC_ALL=C sort)
	;;
raw)
	while read -r f; do
		"$profd" pprof merge -o "$tmp/re.pb.gz" "$f"
		gopprof -raw "$f" >"$tmp/want" 2>/dev/null
		gopprof -raw "$tmp/re.pb.gz" >"$tmp/got" 2>/dev/null
		compare "raw round trip ${f#$data/}" "$tmp/want" "$tmp/got"
	done < <(valid_profiles)
	;;
merge)
	# related profiles of one program: several heaps, several CPU profiles, and a
	# heap merged with allocs (same sample types)
	for set in "goapp/heap.pb.gz goapp/heap-2.pb.gz goapp/heap-3.pb.gz" \
		"goapp/cpu.pb.gz goapp/cpu-2.pb.gz goapp/cpu-3.pb.gz" \
		"prometheus/heap.pb.gz prometheus/allocs.pb.gz" \
		"goapp/heap.pb.gz goapp/allocs.pb.gz goapp/delta-allocs.pb.gz" \
		"edge/multi-types.pb edge/multi-types.pb" \
		"edge/unpacked.pb edge/no-mappings.pb edge/sparse-ids.pb edge/zero-and-negative.pb edge/no-functions.pb" \
		"edge/unpacked.pb edge/cpu-millis.pb" "edge/cpu-millis.pb edge/unpacked.pb edge/cpu-millis.pb" \
		; do
		files=()
		for s in $set; do
			[ -f "$data/profiles/$s" ] || { echo "FAIL: missing testdata profiles/$s"; fail=1; continue 2; }
			files+=("$data/profiles/$s")
		done
		"$profd" pprof merge -o "$tmp/m.pb.gz" "${files[@]}"
		gopprof -proto "${files[@]}" >"$tmp/gm.pb.gz" 2>/dev/null
		# profd's merged file, read by go tool pprof, and profd's own top of the set,
		# both equal go tool pprof's merge
		# units as in the merged profile: inputs may differ (ms and ns)
		TYPES_FROM=$tmp/gm.pb.gz check_top_all "merge {$set} (profd output read by go)" "$tmp/m.pb.gz" -- "${files[@]}"
		TYPES_FROM=$tmp/gm.pb.gz check_top_all "merge {$set} (profd top of the files)" "${files[@]}" -- "$tmp/gm.pb.gz"
		# and the merged profiles print the same under -raw
		checked=$((checked + 1))
		if ! diff <(gopprof -raw "$tmp/m.pb.gz" 2>&1 | sed '/^Locations/,$d') \
			<(gopprof -raw "$tmp/gm.pb.gz" 2>&1 | sed '/^Locations/,$d') >"$tmp/diff.out"; then
			echo "FAIL: merge {$set}: header or samples differ under -raw"
			head -20 "$tmp/diff.out"
			fail=1
		fi
	done
	# profiles whose sample types differ in number: current pprof keeps the types
	# all share; the Go 1.19 pprof here refuses ("inconsistent samples type count").
	# Check profd against the sum of go tool pprof's tops of each file instead.
	for set in "edge/cpu-extra-type.pb edge/unpacked.pb" "edge/unpacked.pb edge/cpu-extra-type.pb" \
		"edge/cpu-extra-type.pb edge/no-mappings.pb edge/cpu-extra-type.pb"; do
		files=()
		for s in $set; do files+=("$data/profiles/$s"); done
		for i in 0 1; do
			unit=$(types_of "${files[0]}" | sed -n "$((i + 1))p")
			unit=${unit#*/}
			for f in "${files[@]}"; do go_top "$unit" "$i" "$f"; done |
				awk -F'\t' '{f[$1] += $2; c[$1] += $3} END {for (n in f) if (f[n] || c[n]) print n "\t" f[n] "\t" c[n]}' |
				LC_ALL=C sort >"$tmp/want"
			profd_top "$i" "${files[@]}" >"$tmp/got"
			compare "merge {$set} [$i] (sum of each file's top)" "$tmp/want" "$tmp/got"
		done
		checked=$((checked + 1))
		if ! "$profd" pprof merge -o "$tmp/m.pb.gz" "${files[@]}" ||
			[ "$(gopprof -raw "$tmp/m.pb.gz" | awk '/^Samples:/{getline; print NF}')" != 2 ]; then
			echo "FAIL: merge {$set} should keep the 2 common sample types"
			fail=1
		fi
	done
	# profiles without a common sample type: both refuse
	checked=$((checked + 1))
	if "$profd" pprof merge -o "$tmp/x.pb.gz" "$data/profiles/goapp/heap.pb.gz" "$data/profiles/goapp/cpu.pb.gz" 2>/dev/null ||
		gopprof -proto "$data/profiles/goapp/heap.pb.gz" "$data/profiles/goapp/cpu.pb.gz" >/dev/null 2>&1; then
		echo "FAIL: merging heap and cpu should fail in both tools"
		fail=1
	fi
	;;
diff)
	for pair in "goapp/heap.pb.gz goapp/heap-3.pb.gz" "goapp/cpu.pb.gz goapp/cpu-2.pb.gz" \
		"prometheus/heap.pb.gz goapp/heap.pb.gz" "goapp/heap.pb.gz goapp/heap.pb.gz"; do
		set -- $pair
		base=$data/profiles/$1
		new=$data/profiles/$2
		"$profd" pprof diff -o "$tmp/d.pb.gz" "$base" "$new"
		i=0
		while read -r t; do
			go_top "${t#*/}" "$i" -diff_base="$base" "$new" >"$tmp/want"
			go_top "${t#*/}" "$i" "$tmp/d.pb.gz" >"$tmp/got"
			compare "diff $pair [$t] (profd output read by go)" "$tmp/want" "$tmp/got"
			profd_top "$i" "$tmp/d.pb.gz" >"$tmp/got2"
			compare "diff $pair [$t] (profd top of profd diff)" "$tmp/want" "$tmp/got2"
			i=$((i + 1))
		done < <(types_of "$new")
	done
	;;
*)
	echo "unknown mode $mode" >&2
	exit 2
	;;
esac

echo "$mode: $checked comparisons"
if [ "$checked" -eq 0 ]; then
	echo "FAIL: nothing was compared"
	exit 1
fi
exit $fail
