#!/usr/bin/env bash
# filter_golden.sh: profd's stack filters (--focus, --ignore, --hide, --show,
# --show-from, --prune-from, alone and combined) against go tool pprof's -focus ...
# -prune_from on the same files: the whole -top text report (header, "Active
# filters:", totals, cuts, rows) and, for a subset, the call graph's nodes and
# edges (-dot through dot_graph.pl) must be equal, as must pprof's warnings for a
# filter that matched nothing. The goapp and prometheus testdata profiles, at every
# sample type (or the default one), with regexes that match Go programs' frames, file names and mapping
# files; -normalize on diffs; each at pprof's -lines, -files and -addresses granularities (profd's
# --granularity); and a regex that does not compile is refused naming the option.
#
#   filter_golden.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp TZ=UTC
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
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/{getline; for (i = 1; i <= NF; i++) { sub(/\[dflt\]$/, "", $i); sub(/\/.*/, "", $i); print $i }; exit}'
}

# each case: pprof flags separated by spaces (profd spells them --x with - for _)
cases=(
	"-focus=runtime"
	"-focus=net/http|scrape"
	"-ignore=runtime\\.(gopark|mallocgc)"
	"-hide=runtime\\."
	"-show=main\\.|net/http|prometheus"
	"-show_from=net/http|main\\."
	"-prune_from=runtime\\.(gopark|mallocgc|selectgo)"
	"-focus=\\.go$"
	"-focus=prometheus -ignore=runtime\\.gopark"
	"-hide=runtime\\.(goexit|main) -show=runtime|main"
	"-focus=http -show_from=net/http -prune_from=runtime\\.mallocgc"
	"-focus=xyzzy_matches_nothing"
	"-show=xyzzy_matches_nothing -hide=xyzzy_either"
)

to_profd() {
	local out=() f k v
	for f in "$@"; do
		case $f in
		-lines | -files | -addresses | -functions) out+=("--granularity=${f#-}"); continue ;;
		esac
		k=${f%%=*}
		v=${f#*=}
		k=${k#-}
		out+=("--${k//_/-}=$v")
	done
	printf '%s\n' "${out[@]}"
}

check_top() { # label file type flags...
	local label=$1 file=$2 type=$3
	shift 3
	local pflags=()
	mapfile -t pflags < <(to_profd "$@")
	checked=$((checked + 1))
	gopprof -top -sample_index="$type" "$@" "$file" >"$tmp/go.txt" 2>"$tmp/go.err" || true
	"$profd" pprof top --symbolize=none --sample-index="$type" "${pflags[@]}" "$file" \
		>"$tmp/pd.txt" 2>"$tmp/pd.err" || {
		echo "FAIL: $label: profd failed: $(head -3 "$tmp/pd.err")"
		fail=1
		return
	}
	if ! diff -u "$tmp/go.txt" "$tmp/pd.txt" >"$tmp/diff.out"; then
		echo "FAIL: $label: top differs"
		head -n 30 "$tmp/diff.out"
		fail=1
	fi
	grep 'matched no samples' "$tmp/go.err" >"$tmp/go.warn" || true
	grep 'matched no samples' "$tmp/pd.err" >"$tmp/pd.warn" || true
	if ! diff -u "$tmp/go.warn" "$tmp/pd.warn" >"$tmp/diff.out"; then
		echo "FAIL: $label: warnings differ"
		cat "$tmp/diff.out"
		fail=1
	fi
}

check_dot() { # label file flags...
	local label=$1 file=$2
	shift 2
	local pflags=()
	mapfile -t pflags < <(to_profd "$@")
	checked=$((checked + 1))
	gopprof -dot "$@" "$file" >"$tmp/go.dot" 2>/dev/null || true
	"$profd" pprof dot "${pflags[@]}" "$file" >"$tmp/pd.dot" 2>"$tmp/pd.err" || {
		echo "FAIL: $label: profd pprof dot failed: $(head -3 "$tmp/pd.err")"
		fail=1
		return
	}
	perl "$here/dot_graph.pl" "$tmp/go.dot" | LC_ALL=C sort >"$tmp/want"
	perl "$here/dot_graph.pl" "$tmp/pd.dot" | LC_ALL=C sort >"$tmp/got"
	if ! diff -u "$tmp/want" "$tmp/got" >"$tmp/diff.out"; then
		echo "FAIL: $label: call graph differs"
		head -n 30 "$tmp/diff.out"
		fail=1
	fi
}

# (goapp's cpu-2/-3 and heap-2/-3 are more of the same shapes: left out; so is
# cpu-large, goapp's CPU profile at 709 KB, whose size proves nothing about the
# filters and whose 29 go tool pprof runs took more than half the test's time)
for f in $(find "$data/profiles/goapp" "$data/profiles/prometheus" -maxdepth 1 -name '*.pb.gz' ! -name '*-[23].pb.gz' \
	! -name cpu-large.pb.gz | LC_ALL=C sort); do
	name=${f#$data/}
	mapfile -t types < <(types_of "$f")
	[ ${#types[@]} -gt 0 ] || { echo "FAIL: $name: go tool pprof lists no sample type"; fail=1; continue; }
	# every sample type under the first cases, the last type (pprof's default
	# for these files) under the rest
	i=0
	for c in "${cases[@]}"; do
		read -r -a flags <<<"$c"
		if [ $i -lt 4 ]; then ts=("${types[@]}"); else ts=("${types[-1]}"); fi
		for t in "${ts[@]}"; do
			check_top "$name $t $c" "$f" "$t" "${flags[@]}"
		done
		i=$((i + 1))
	done
	# granularity: pprof's -lines, -files and -addresses, alone and with a filter
	for g in lines files addresses; do
		check_top "$name ${types[-1]} -$g" "$f" "${types[-1]}" "-$g"
		check_top "$name ${types[-1]} -$g -hide=runtime" "$f" "${types[-1]}" "-$g" "-hide=runtime"
	done
	check_dot "$name dot -lines" "$f" "-lines"
	for c in "${cases[@]:3:4}"; do
		read -r -a flags <<<"$c"
		check_dot "$name dot $c" "$f" "${flags[@]}"
	done
done

# normalize on diffs: pprof's -normalize -diff_base, every sample type
for pair in "goapp/heap goapp/heap-2" "goapp/cpu goapp/cpu-2" "labels/cpu labels/cpu-2" "goapp/allocs goapp/delta-allocs"; do
	read -r a b <<<"$pair"
	mapfile -t types < <(types_of "$data/profiles/$a.pb.gz")
	for t in "${types[@]}"; do
		checked=$((checked + 1))
		gopprof -top -sample_index="$t" -normalize -diff_base="$data/profiles/$a.pb.gz" "$data/profiles/$b.pb.gz" >"$tmp/go.txt" 2>/dev/null || true
		"$profd" pprof top --symbolize=none --sample-index="$t" --normalize --diff-base="$data/profiles/$a.pb.gz" "$data/profiles/$b.pb.gz" >"$tmp/pd.txt" 2>"$tmp/pd.err" || true
		if ! diff -u "$tmp/go.txt" "$tmp/pd.txt" >"$tmp/diff.out"; then
			echo "FAIL: $b - $a [$t] -normalize"
			head -n 20 "$tmp/diff.out"
			fail=1
		fi
	done
done

# a regex that does not compile is refused, naming the option
one=$(find "$data/profiles/goapp" -name '*.pb.gz' | LC_ALL=C sort | head -1)
for opt in focus ignore hide show show-from prune-from; do
	checked=$((checked + 1))
	if "$profd" pprof top --$opt='(a' "$one" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL: --$opt='(a' was accepted"
		fail=1
	elif ! grep -q "parsing ${opt//-/_} regexp: .*missing closing )" "$tmp/err"; then
		echo "FAIL: --$opt='(a': unexpected message: $(cat "$tmp/err")"
		fail=1
	fi
done

echo "filter_golden: $checked reports compared"
[ "$checked" -gt 100 ] || { echo "FAIL: too few reports compared"; fail=1; }
exit $fail
