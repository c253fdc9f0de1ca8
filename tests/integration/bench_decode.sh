#!/usr/bin/env bash
# bench_decode.sh: bench/decode.sh runs end to end on the repository's slice of the
# corpus (testdata/profiles/prometheus-series, six profiles of each type) and prints
# what bench/README.md reads (not the figures: they come from a Release build):
#   - one row per profile type with positive times both ways and every profile on
#     the fast path, and the `all` row
#   - a corpus that does not exist and an unknown flag are refused, naming them
#
#   bench_decode.sh REPO BUILD_DIR
set -euo pipefail

repo=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
fail=0
failed() { echo "FAIL: $*"; fail=1; }

corpus=$repo/testdata/profiles/prometheus-series
out=$tmp/out.txt
if ! "$repo/bench/decode.sh" "$build" --corpus "$corpus" --passes 2 --pass-seconds 0.001 \
	>"$out" 2>"$tmp/err.txt"; then
	cat "$tmp/err.txt"
	failed "bench/decode.sh exited with an error"
fi
cat "$out"
for t in allocs block cpu goroutine heap mutex threadcreate; do
	row=$(grep -E "^prometheus-series/$t " "$out" || true)
	[ -n "$row" ] || { failed "no row for $t"; continue; }
	# fields: name files KB | fast pbc fastMB pbcMB ratio | uf up ratio | n/n
	echo "$row" | awk '{
		ok = $2 > 0 && $5 > 0 && $6 > 0 && $12 > 0 && $13 > 0
		split($NF, f, "/"); ok = ok && f[1] == f[2] && f[1] == $2
		exit ok ? 0 : 1 }' || failed "row for $t: $row"
done
grep -qE '^all ' "$out" || failed "no all row"

if "$repo/bench/decode.sh" "$build" --corpus "$tmp/none" >"$tmp/o2" 2>&1; then
	failed "a missing corpus was accepted"
fi
grep -q "corpus $tmp/none not found" "$tmp/o2" || failed "the missing corpus is not named: $(cat "$tmp/o2")"
if "$repo/bench/decode.sh" "$build" --frobnicate 1 >"$tmp/o3" 2>&1; then
	failed "an unknown flag was accepted"
fi
grep -q -- "--frobnicate" "$tmp/o3" || failed "the unknown flag is not named: $(cat "$tmp/o3")"

[ $fail -eq 0 ] && echo "bench_decode: OK"
exit $fail
