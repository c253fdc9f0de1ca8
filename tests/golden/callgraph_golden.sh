#!/usr/bin/env bash
# callgraph_golden.sh: profd's call graph (`profd pprof dot`, the code behind
# /api/v1/query?report=dot) against `go tool pprof -dot` on the same input with
# the same cuts. Both DOT files are reduced by dot_graph.pl to their nodes (name,
# flat, cum, as printed) and edges (caller, callee, weight, inline, dotted), which
# must be equal. Checked: every testdata profile at every sample type with
# pprof's default cuts, and at its default sample type with other nodecount,
# nodefraction and edgefraction values; merges and diffs (-diff_base) of related
# profiles; and the profiles of the shared corpus when it is beside the
# repository (its default sample type, default cuts): every PD_CORPUS_EVERY-th
# file of each folder (default 3; its folders hold one program's profiles over
# time, much the same shapes), 1 for all.
#
#   callgraph_golden.sh PROFD TESTDATA [CORPUS]
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
corpus=${3:-${PD_CORPUS:-$data/../../shared/corpus/prometheus}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0

# the pprof binary itself when it is there: go tool pprof starts the go command first
pprof_bin=$(go env GOTOOLDIR)/pprof
gopprof() {
	if [ -x "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" -symbolize=none "$@")
	else
		(cd "$tmp" && go tool pprof -symbolize=none "$@")
	fi
}

# Sample types of a profile as go tool pprof lists them, one a line.
types_of() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/{getline; for (i = 1; i <= NF; i++) print $i; exit}'
}

# check LABEL "CUTS" [--diff-base=BASE] FILE...: CUTS are flags both tools take
# (-nodecount=N ...); profd spells them with two dashes.
check() {
	local label=$1 cuts=$2
	shift 2
	local gcuts=() pcuts=() gin=() pin=()
	for c in $cuts; do
		gcuts+=("$c")
		pcuts+=("-$c")
	done
	for a in "$@"; do
		case "$a" in
		--diff-base=*) gin+=("-diff_base=${a#--diff-base=}"); pin+=("$a") ;;
		*) gin+=("$a"); pin+=("$a") ;;
		esac
	done
	checked=$((checked + 1))
	if ! gopprof -dot "${gcuts[@]}" "${gin[@]}" >"$tmp/go.dot" 2>"$tmp/go.err"; then
		echo "FAIL: $label: go tool pprof failed: $(head -3 "$tmp/go.err")"
		fail=1
		return
	fi
	if ! "$profd" pprof dot "${pcuts[@]}" "${pin[@]}" >"$tmp/pd.dot" 2>"$tmp/pd.err"; then
		echo "FAIL: $label: profd pprof dot failed: $(head -3 "$tmp/pd.err")"
		fail=1
		return
	fi
	perl "$here/dot_graph.pl" "$tmp/go.dot" | LC_ALL=C sort >"$tmp/want"
	perl "$here/dot_graph.pl" "$tmp/pd.dot" | LC_ALL=C sort >"$tmp/got"
	if [ "$(grep -c '^N[0-9]* \[' "$tmp/go.dot")" != "$(grep -c '^node' "$tmp/want")" ]; then
		echo "FAIL: $label: dot_graph.pl did not read every node of go tool pprof's graph"
		fail=1
	fi
	if ! diff -u "$tmp/want" "$tmp/got" >"$tmp/diff.out"; then
		echo "FAIL: $label"
		head -n 30 "$tmp/diff.out"
		fail=1
	fi
}

# shellcheck source=over_limit.sh
. "$here/over_limit.sh"
# files over profd's size limit are left out (pprof_golden_validity checks them)
valid_profiles() {
	find "$data/profiles" -type f \( -name '*.pb.gz' -o -name '*.pb' \) | LC_ALL=C sort | while read -r f; do
		grep -q "^${f#$data/} " "$here/known-differences.txt" && continue
		over_limit "$profd" "$f" && continue
		if gopprof -raw "$f" >/dev/null 2>&1; then echo "$f"; fi
	done
}

# ---- testdata: every sample type at the defaults, other cuts at the default type
while read -r f; do
	rel=${f#$data/}
	# edge/nul-bytes.pb's names hold NULs and every other byte value: pprof
	# writes those bytes into the DOT raw, profd writes control bytes and bytes
	# that are not UTF-8 as U+FFFD (tests/unit/test_callgraph.c checks its graph)
	[ "$rel" = profiles/edge/nul-bytes.pb ] && continue
	i=0
	while read -r t; do
		[ -n "$t" ] || continue
		check "$rel [$t]" "-sample_index=$i" "$f"
		i=$((i + 1))
	done < <(types_of "$f")
	for cuts in "-nodecount=8" "-nodecount=0 -nodefraction=0 -edgefraction=0" \
		"-nodefraction=0.05 -edgefraction=0.02" "-nodecount=25 -nodefraction=0.001 -edgefraction=0"; do
		check "$rel ($cuts)" "$cuts" "$f"
	done
done < <(valid_profiles)

# ---- merges and diffs of related profiles
p=$data/profiles
for cuts in "" "-nodecount=12 -edgefraction=0.01"; do
	check "merge goapp heaps ($cuts)" "$cuts" "$p/goapp/heap.pb.gz" "$p/goapp/heap-2.pb.gz" "$p/goapp/heap-3.pb.gz"
	check "merge goapp cpus ($cuts)" "$cuts" "$p/goapp/cpu.pb.gz" "$p/goapp/cpu-2.pb.gz" "$p/goapp/cpu-3.pb.gz"
	check "diff goapp heap-2 - heap ($cuts)" "$cuts" "--diff-base=$p/goapp/heap.pb.gz" "$p/goapp/heap-2.pb.gz"
	check "diff goapp cpu-3 - cpu ($cuts)" "$cuts" "--diff-base=$p/goapp/cpu.pb.gz" "$p/goapp/cpu-3.pb.gz"
	check "diff labels cpu-2 - cpu ($cuts)" "$cuts" "--diff-base=$p/labels/cpu.pb.gz" "$p/labels/cpu-2.pb.gz"
done

# ---- the corpus, when it is beside the repository
if [ -d "$corpus" ]; then
	while read -r f; do
		gopprof -raw "$f" >/dev/null 2>&1 || continue
		check "corpus ${f#$corpus/}" "" "$f"
	done < <(find "$corpus" -type f -name '*.pb.gz' | LC_ALL=C sort |
		awk -v k="${PD_CORPUS_EVERY:-3}" '{d = $0; sub(/\/[^\/]*$/, "", d); if (n[d]++ % k == 0) print}')
else
	echo "note: no corpus at $corpus (set PD_CORPUS); checking the testdata profiles only"
fi

echo "callgraph_golden: $checked graphs compared"
[ "$checked" -gt 0 ] || { echo "FAIL: nothing compared"; exit 1; }
exit $fail
