#!/usr/bin/env bash
# bench/regex.sh: ns per match of regex label matchers with RE2 (this tree) beside
# the reference, PCRE2 with its match limit of 1,000,000 steps (the labels package
# of the commit before RE2, PD_REGEX_REF), on the same regexes and label values:
# typical selector regexes over realistic values, and pathological ones over
# 40-byte hostile values. The last column says whether the reference gave the
# answers Go's regexp gives (RE2 does, which the unit tests check).
#
# usage: bench/regex.sh PROFD_BUILD_DIR [seconds per case, default 0.3]
#        (a Release build with PD_BENCH=ON: it holds bench/regex_bench and
#        libpd_util.a; the reference is compiled here, with cc -O3, into a
#        temporary directory)
#
# Needs: git (the reference's sources come from the repository's history), cc,
# pkg-config and libpcre2-dev (scripts/deps.sh installs them).
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 PROFD_BUILD_DIR [seconds per case]" >&2
	exit 2
fi
build=$(realpath "$1")
secs=${2:-0.3}
repo=$(cd "$(dirname "$0")/.." && pwd)
ref=${PD_REGEX_REF:-1dafb0ce1c9560ff3465777f1852a94ea61c2449}
bin=$build/bench/regex_bench

die() {
	echo "bench: $*" >&2
	exit 1
}

[ -x "$bin" ] || die "$bin not found: configure with -DPD_BENCH=ON and build (make build)"
[ -f "$build/libpd_util.a" ] || die "$build/libpd_util.a not found: build the whole tree"
pcre=$(pkg-config --cflags --libs libpcre2-8) ||
	die "libpcre2-8 not found: the reference needs libpcre2-dev (scripts/deps.sh)"
git -C "$repo" cat-file -e "$ref^{commit}" 2>/dev/null ||
	die "commit $ref (the PCRE2 reference) is not in $repo's history"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$repo" archive "$ref" pkg/labels include/profd/labels.h | tar -x -C "$tmp"
grep -q pcre2 "$tmp/pkg/labels/matcher.c" || die "commit $ref's matchers do not use PCRE2"
# the reference's labels.h before this tree's (util.h comes from this tree)
# shellcheck disable=SC2086
cc -std=c11 -O3 -DNDEBUG -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -w \
	-I"$tmp/include" -I"$repo/include" \
	"$repo/bench/regex_bench.c" "$tmp"/pkg/labels/*.c "$build/libpd_util.a" \
	$pcre -lz -lm -lpthread -ldl -o "$tmp/regex_bench_pcre2"

"$bin" "$secs" >"$tmp/re2.tsv"
"$tmp/regex_bench_pcre2" "$secs" >"$tmp/pcre2.tsv"

echo "regex label matchers: ns per match, RE2 (profd) against PCRE2 (reference, commit ${ref:0:12})"
echo "1000 values per case; typical: jobs, instances, pods, nodes, paths; hostile: 40 bytes of a or x"
echo
paste "$tmp/re2.tsv" "$tmp/pcre2.tsv" | awk -F'\t' '
BEGIN {
	printf "%-26s %-42s %-8s %12s %12s %8s  %s\n", "case", "regex", "values", "RE2 ns",
	       "PCRE2 ns", "ratio", "PCRE2 answers"
}
{
	if ($1 != $6) { print "bench: the two runs list different cases" > "/dev/stderr"; exit 1 }
	same = ($5 == $10) ? "same" : sprintf("differ (%s of 1000 match, Go: %s)", $10, $5)
	printf "%-26s %-42s %-8s %12.1f %12.1f %7.2fx  %s\n", $1, $2, $3, $4, $9, $9 / $4, same
}'
echo
echo "ratio: PCRE2 ns / RE2 ns (above 1: RE2 is faster)"
