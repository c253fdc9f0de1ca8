#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2016 # functions run under xargs; bash -c takes its script in single quotes
# parity.sh: the standing parity test. Every profile under testdata/ (profiles/,
# legacy/, pyroscope/pprof/, profilers/, the pprof crash inputs of fuzz/crashes/)
# and the profiles of the shared corpus (every third of each folder by default,
# PD_CORPUS_EVERY=1 for all) go through profd and go tool pprof:
#
#   valid   profd reads exactly the files go tool pprof reads
#   report  `profd pprof top` equals `go tool pprof -top`, the whole text report
#           (header, cut, units, marks) of the default sample type
#   top:I:T the table (from "Showing nodes") of the sample type of index I, T
#   tsv:I:T `profd pprof top --format=tsv` equals -top's flat and cum in raw units
#           (both for every sample type)
#   merge   `profd pprof merge` of the file and its partner (the next file of its
#           folder) prints what `go tool pprof -proto` of the two prints under -raw
#   diff    `profd pprof diff` of the partner and the file, against -proto -diff_base
#   store   `profd tsdb import` of the folder, then `tsdb dump-profile` of the file:
#           the file's protobuf byte for byte, or the same under -raw (a legacy
#           file: as profd pprof merge's conversion of it)
#
# A difference known today is listed in parity-expected.txt (file, check,
# reason); the test fails on a difference not listed, and on a listed one that
# is gone ("remove this entry"), so the list only ever shrinks.
#
#   parity.sh PROFD TESTDATA [CORPUS]   (CORPUS: $PD_CORPUS, else ../shared/corpus)
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
corpus=${3:-${PD_CORPUS:-$data/../../shared/corpus}}
here=$(cd "$(dirname "$0")" && pwd)
expected=$here/parity-expected.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp TZ=UTC
export profd data corpus tmp here
jobs=${PD_PARITY_JOBS:-2}

pprof_bin=$(go env GOTOOLDIR)/pprof
[ -x "$pprof_bin" ] || pprof_bin=
export pprof_bin
# Reports (-top, the interactive tables) are compared with pprof's default names:
# -symbolize=remote symbolizes no address of a file but demangles and simplifies
# its names, as profd's reports do. Profiles (-raw, -proto) keep their names as
# stored on both sides, so they are read with -symbolize=none.
gopprof() {
	local mode=remote a
	for a in "$@"; do
		case $a in -raw | -proto) mode=none ;; esac
	done
	if [ -n "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" -symbolize="$mode" "$@")
	else
		(cd "$tmp" && go tool pprof -symbolize="$mode" "$@")
	fi
}

# the name a file is known by in results and in parity-expected.txt
rel_of() {
	case "$1" in
	"$data"/*) echo "${1#"$data"/}" ;;
	*) echo "corpus/${1#"$corpus"/}" ;;
	esac
}

# a result: "REL<TAB>CHECK<TAB>same|differs<TAB>WHY-FILE" in the worker's folder $w
result() { # rel check same|differs [why-file]
	local why=
	if [ "$3" = differs ]; then
		why=$w/why.$RANDOM$RANDOM
		if [ -n "${4:-}" ]; then head -n 20 "$4" >"$why"; else : >"$why"; fi
	fi
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$why" >>"$w/results"
}

cmp_result() { # rel check want got
	if diff -u "$3" "$4" >"$3.diff" 2>&1; then
		result "$1" "$2" same
	else
		result "$1" "$2" differs "$3.diff"
	fi
}

# phase 1, one file: valid, report, top:I:T and tsv:I:T. go tool pprof's tables
# of every type come from one interactive session (the same tables as -top: one
# with pprof's cuts, then one in raw units with none, per type), the whole
# report with its header from -top of the default type; parity_cmp.pl compares.
check_file() {
	local f=$1 rel go_ok=0 pd_ok=0
	rel=$(rel_of "$f")
	w=$(mktemp -d "$tmp/w.XXXXXX")
	gopprof -raw "$f" >"$w/raw" 2>/dev/null && go_ok=1
	"$profd" pprof top --sample-index=all "$f" >"$w/text" 2>"$w/err" && pd_ok=1
	if [ "$go_ok" != "$pd_ok" ]; then
		{ echo "go tool pprof reads it: $go_ok, profd reads it: $pd_ok"; cat "$w/err"; } >"$w/why"
		result "$rel" valid differs "$w/why"
		return 0
	fi
	result "$rel" valid same
	[ "$go_ok" = 1 ] || return 0
	printf '%s\t%s\n' "$f" "$w" >"$w/valid"
	"$profd" pprof top --sample-index=all --format=tsv "$f" >"$w/tsv"
	local line cmds='' i=0 t
	line=$(sed -n '/^Samples:/{n;p;q}' "$w/raw" | tr -d '\000')
	for t in $line; do
		t=${t%\[dflt\]}
		cmds+="nodefraction=0.005"$'\n'"unit=minimum"$'\n'"nodecount=0"$'\n'"sample_index=$i"$'\n'"top"$'\n'
		cmds+="nodefraction=0"$'\n'"unit=${t#*/}"$'\n'"top"$'\n'
		i=$((i + 1))
	done
	printf '%s' "$cmds" | gopprof "$f" >"$w/inter" 2>/dev/null || true
	gopprof -top "$f" >"$w/report" 2>/dev/null || true
	perl "$here/parity_cmp.pl" "$rel" "$w"
	rm -f "$w/text" "$w/tsv" "$w/inter" "$w/report"
}

# head and samples of a -raw listing (locations and mappings are numbered by
# each tool in its own order)
raw_head() { sed '/^Locations/,$d' "$1"; }

# phase 2, one pair of files of a folder: merge and diff
check_pair() {
	local a=$1 b=$2 rel w prc grc
	rel=$(rel_of "$a")
	w=$(mktemp -d "$tmp/p.XXXXXX")
	for op in merge diff; do
		prc=0 grc=0
		if [ "$op" = merge ]; then
			"$profd" pprof merge -o "$w/p.pb.gz" "$a" "$b" 2>"$w/perr" || prc=1
			gopprof -proto "$a" "$b" >"$w/g.pb.gz" 2>"$w/gerr" || grc=1
		else
			"$profd" pprof diff -o "$w/p.pb.gz" "$b" "$a" 2>"$w/perr" || prc=1
			gopprof -proto -diff_base="$b" "$a" >"$w/g.pb.gz" 2>"$w/gerr" || grc=1
		fi
		if [ "$prc" != "$grc" ]; then
			{ echo "with $(rel_of "$b"): profd fails: $prc, go tool pprof fails: $grc"; cat "$w/perr" "$w/gerr"; } >"$w/why"
			result "$rel" "$op" differs "$w/why"
			continue
		fi
		if [ "$prc" = 1 ]; then
			result "$rel" "$op" same
			continue
		fi
		gopprof -raw "$w/g.pb.gz" >"$w/graw" 2>&1 || true
		gopprof -raw "$w/p.pb.gz" >"$w/praw" 2>&1 || true
		raw_head "$w/graw" >"$w/want"
		raw_head "$w/praw" >"$w/got"
		cmp_result "$rel" "$op" "$w/want" "$w/got"
	done
}

# phase 3, one stored file: dump it; it is the file's protobuf byte for byte, or
# else prints the same under -raw (a legacy file is stored as its conversion to
# profile.proto, which prints under -raw what profd's conversion prints)
check_store() {
	local f=$1 store=$2 t=$3 rel
	rel=$(rel_of "$f")
	w=$(mktemp -d "$tmp/s.XXXXXX")
	if ! "$profd" tsdb dump-profile "$store" 'parity{}' --time="$t" -o "$w/back.pb.gz" 2>"$w/why"; then
		result "$rel" store differs "$w/why"
		return 0
	fi
	gzip -dc "$w/back.pb.gz" >"$w/got"
	if [ "$(head -c 2 "$f" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
		gzip -dc "$f" >"$w/want"
	else
		cp "$f" "$w/want"
	fi
	if ! cmp -s "$w/want" "$w/got"; then
		# not the same bytes: the same under -raw, as the file (or its conversion)
		if gopprof -raw "$f" >/dev/null 2>&1 && ! gzip -t "$f" 2>/dev/null && [[ "$f" != *.pb ]] &&
			[[ "$f" != *.pprof ]]; then
			"$profd" pprof merge -o "$w/conv.pb.gz" "$f"
			gopprof -raw "$w/conv.pb.gz" >"$w/want" 2>&1 || true
		else
			gopprof -raw "$f" >"$w/want" 2>&1 || true
		fi
		gopprof -raw "$w/back.pb.gz" >"$w/got" 2>&1 || true
	fi
	cmp_result "$rel" store "$w/want" "$w/got"
}
export -f gopprof rel_of result cmp_result check_file raw_head check_pair check_store


# The corpus's folders hold many profiles of one program over time, of much the
# same shapes: every PD_CORPUS_EVERY-th file of each folder (default 3: the 1st,
# 4th, 7th, ... in name order, across the whole capture) is checked; 1 checks them all.
corpus_sample() {
	LC_ALL=C sort | awk -v k="${PD_CORPUS_EVERY:-3}" '{d = $0; sub(/\/[^\/]*$/, "", d); if (n[d]++ % k == 0) print}'
}

# every profile, by folder
{
	find "$data/profiles" "$data/legacy" "$data/pyroscope/pprof" "$data/profilers" -type f \
		! -name '*.md' ! -name '*.json' ! -name '*.sh' ! -path '*/src/*'
	find "$data/fuzz/crashes" -type f -name 'pprof_*'
	if [ -d "$corpus" ]; then find "$corpus" -type f -name '*.pb.gz' | corpus_sample; fi
} | LC_ALL=C sort >"$tmp/files"
[ -d "$corpus" ] || echo "note: no corpus at $corpus (set PD_CORPUS); checking the testdata profiles only"
echo "parity: $(wc -l <"$tmp/files") files"

tr '\n' '\0' <"$tmp/files" | xargs -0 -P "$jobs" -n 1 bash -c 'check_file "$1"' _ || true
cat "$tmp"/w.*/valid 2>/dev/null | LC_ALL=C sort >"$tmp/validw"
cut -f1 "$tmp/validw" >"$tmp/valid"

# pairs: the valid files of a folder two by two (1 with 2, 3 with 4, ...; an
# odd one out with the first), so that every file is merged and diffed once
awk '{d = $0; sub(/\/[^\/]*$/, "", d); n[d]++; f[d, n[d]] = $0}
	END {for (d in n) if (n[d] > 1) for (i = 1; i <= n[d]; i += 2) print f[d, i] "\t" f[d, i < n[d] ? i + 1 : 1]}' \
	"$tmp/valid" | LC_ALL=C sort >"$tmp/pairs"
tr '\t\n' '\0\0' <"$tmp/pairs" | xargs -0 -P "$jobs" -n 2 bash -c 'check_pair "$1" "$2"' _ || true

# the store: one import per folder, the i-th valid file at 1700000000 s + i ms
: >"$tmp/stored"
w=$tmp/import
mkdir -p "$w" "$tmp/store"
n=0
awk '{d = $0; sub(/\/[^\/]*$/, "", d); print d}' "$tmp/valid" | uniq | while read -r d; do
	n=$((n + 1))
	s=$tmp/store/$n
	mapfile -t fs < <(awk -v d="$d" '{x = $0; sub(/\/[^\/]*$/, "", x); if (x == d) print}' "$tmp/valid")
	if ! "$profd" tsdb import --storage.tsdb.path="$s" --labels='parity{}' --time=1700000000 "${fs[@]}" \
		>/dev/null 2>"$tmp/import.err"; then
		for f in "${fs[@]}"; do result "$(rel_of "$f")" store differs "$tmp/import.err"; done
		continue
	fi
	for i in "${!fs[@]}"; do
		printf '%s\t%s\t1700000000.%03d\n' "${fs[$i]}" "$s" "$i" >>"$tmp/stored"
	done
done
tr '\t\n' '\0\0' <"$tmp/stored" | xargs -0 -P "$jobs" -n 3 bash -c 'check_store "$1" "$2" "$3"' _ || true

# ---- the verdict ------------------------------------------------------------
cat "$tmp"/*/results | LC_ALL=C sort >"$tmp/results"
fail=0
{ grep -v '^#' "$expected" || true; } | awk -F'\t' 'NF >= 3 {print $1 "\t" $2}' | LC_ALL=C sort >"$tmp/expected"
while IFS=$'\t' read -r rel check verdict why; do
	known=0
	grep -qxF "$rel"$'\t'"$check" "$tmp/expected" && known=1
	if [ "$verdict" = differs ] && [ "$known" = 0 ]; then
		echo "FAIL: $rel $check: profd and go tool pprof differ"
		sed 's/^/    /' "$why" 2>/dev/null || true
		fail=1
	elif [ "$verdict" = same ] && [ "$known" = 1 ]; then
		echo "FAIL: $rel $check: now the same in both: remove this entry from parity-expected.txt"
		fail=1
	fi
done <"$tmp/results"
while IFS=$'\t' read -r rel check; do
	if ! grep -qF "$rel"$'\t'"$check"$'\t' "$tmp/results"; then
		echo "FAIL: parity-expected.txt: $rel $check was not checked (file or check gone): remove this entry"
		fail=1
	fi
done <"$tmp/expected"
n=$(wc -l <"$tmp/results")
d=$(grep -c $'\tdiffers\t' "$tmp/results" || true)
echo "parity: $n checks over $(wc -l <"$tmp/files") files, $d known differences"
[ "$n" -gt 0 ] || fail=1
exit $fail
