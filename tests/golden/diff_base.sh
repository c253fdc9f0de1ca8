#!/usr/bin/env bash
# diff_base.sh: `profd pprof top|flame|folded|dot|merge --diff-base=BASE FILE...`
# against `go tool pprof -diff_base=BASE`: the text and tsv top tables equal
# go tool pprof -top's (several bases, several files too), the merged profile
# prints the same under -raw, flame and folded equal their reports of the diff
# profile `profd pprof diff` writes, and the reports that cannot show a
# difference refuse the flag rather than ignore it.
#
#   diff_base.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)/profiles
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

check() { # label expected-file actual-file
	checked=$((checked + 1))
	if ! diff -u "$2" "$3" >"$tmp/diff.out"; then
		echo "FAIL: $1"
		head -n 30 "$tmp/diff.out"
		fail=1
	fi
}

# go tool pprof -top in raw units as name<TAB>flat<TAB>cum, sorted
go_tsv() { # unit index args...
	local unit=$1 idx=$2
	shift 2
	gopprof -top -nodefraction=0 -unit="$unit" -sample_index="$idx" "$@" 2>/dev/null |
		awk '/^ +flat +flat%/{on = 1; next}
		     on {f = $1; c = $4; sub(/[A-Za-z]+$/, "", f); sub(/[A-Za-z]+$/, "", c)
		         n = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+  /, "", n)
		         sub(/ \((partial-)?inline\)$/, "", n); print n "\t" f "\t" c}' | LC_ALL=C sort
}

types_of() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/{getline; for (i = 1; i <= NF; i++) { sub(/\[dflt\]$/, "", $i); print $i }; exit}'
}

# base(s) | file(s): pairs of one program and of two programs, a profile against
# itself (every value cancels), two bases, two files
cases=(
	"goapp/heap.pb.gz|goapp/heap-3.pb.gz"
	"goapp/cpu.pb.gz|goapp/cpu-2.pb.gz"
	"prometheus/block.pb.gz|goapp/block.pb.gz"
	"prometheus/mutex.pb.gz|goapp/mutex.pb.gz"
	"goapp/allocs.pb.gz|goapp/delta-allocs.pb.gz"
	"goapp/heap.pb.gz|goapp/heap.pb.gz"
	"goapp/heap.pb.gz goapp/heap-2.pb.gz|goapp/heap-3.pb.gz"
	"goapp/cpu.pb.gz|goapp/cpu-2.pb.gz goapp/cpu-3.pb.gz"
)
for c in "${cases[@]}"; do
	pflags=() gflags=() files=() bases=()
	for b in ${c%%|*}; do
		pflags+=("--diff-base=$data/$b")
		bases+=("$data/$b")
	done
	# several bases are added up, as google/pprof's driver does (go tool pprof's
	# flag keeps only the last): its reference is the diff against their merge
	if [ "${#bases[@]}" -gt 1 ]; then
		gopprof -proto "${bases[@]}" >"$tmp/bases.pb.gz" 2>/dev/null
		gflags=("-diff_base=$tmp/bases.pb.gz")
	else
		gflags=("-diff_base=${bases[0]}")
	fi
	for f in ${c#*|}; do files+=("$data/$f"); done
	i=0
	while read -r t; do
		[ -n "$t" ] || continue
		# the whole text report, and with a row limit
		for nc in "" 5; do
			gopprof -top ${nc:+-nodecount=$nc} -sample_index="$i" "${gflags[@]}" "${files[@]}" >"$tmp/want" 2>/dev/null
			"$profd" pprof top ${nc:+--nodecount=$nc} --sample-index="$i" "${pflags[@]}" "${files[@]}" >"$tmp/got"
			check "top --diff-base {$c} [$t] ${nc:+--nodecount=$nc}" "$tmp/want" "$tmp/got"
		done
		go_tsv "${t#*/}" "$i" "${gflags[@]}" "${files[@]}" >"$tmp/want"
		"$profd" pprof top --format=tsv --sample-index="$i" "${pflags[@]}" "${files[@]}" | LC_ALL=C sort >"$tmp/got"
		check "top --format=tsv --diff-base {$c} [$t]" "$tmp/want" "$tmp/got"
		i=$((i + 1))
	done < <(types_of "${files[0]}")
	# merge --diff-base writes what go tool pprof -proto -diff_base writes
	"$profd" pprof merge -o "$tmp/m.pb.gz" "${pflags[@]}" "${files[@]}"
	gopprof -proto "${gflags[@]}" "${files[@]}" >"$tmp/g.pb.gz" 2>/dev/null
	gopprof -raw "$tmp/g.pb.gz" 2>&1 | sed '/^Locations/,$d' >"$tmp/want"
	gopprof -raw "$tmp/m.pb.gz" 2>&1 | sed '/^Locations/,$d' >"$tmp/got"
	check "merge --diff-base {$c} under -raw" "$tmp/want" "$tmp/got"
	# flame, folded and dot of --diff-base are those of the diff profile itself
	for sub in flame folded dot; do
		"$profd" pprof "$sub" "$tmp/m.pb.gz" >"$tmp/want"
		"$profd" pprof "$sub" "${pflags[@]}" "${files[@]}" >"$tmp/got"
		check "$sub --diff-base {$c}" "$tmp/want" "$tmp/got"
	done
done

# a diff changes the flame graph: heap-3 minus heap is not heap-3
"$profd" pprof flame "$data/goapp/heap-3.pb.gz" >"$tmp/a"
"$profd" pprof flame --diff-base="$data/goapp/heap.pb.gz" "$data/goapp/heap-3.pb.gz" >"$tmp/b"
checked=$((checked + 1))
if cmp -s "$tmp/a" "$tmp/b"; then
	echo "FAIL: flame --diff-base printed the flame graph of the file alone"
	fail=1
fi

# the reports that cannot show a difference refuse the flag (exit status 2)
for sub in speedscope validate "diff -o $tmp/x.pb.gz $data/goapp/heap.pb.gz"; do
	checked=$((checked + 1))
	set +e
	# shellcheck disable=SC2086 # the subcommand and its arguments are words
	"$profd" pprof $sub --diff-base="$data/goapp/heap.pb.gz" "$data/goapp/heap-3.pb.gz" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	if [ "$rc" != 2 ] || ! grep -q -- '--diff-base is not supported' "$tmp/err"; then
		echo "FAIL: pprof ${sub%% *} --diff-base: exit $rc, want 2 and a refusal: $(cat "$tmp/err")"
		fail=1
	fi
done

echo "diff_base: $checked comparisons"
[ "$checked" -gt 0 ] || fail=1
exit $fail
