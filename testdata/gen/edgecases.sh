#!/usr/bin/env bash
# edgecases.sh: regenerates the hand-encoded edge-case profiles in
# testdata/profiles/edge/ (see edgecases/main.go) and checks them against
# go tool pprof: valid ones must be accepted by `-raw` and
# `-top -symbolize=none`, invalid ones must be rejected by `-raw` with the
# message recorded in edgecases/main.go and profiles/edge/README.md.
#
# Usage: testdata/gen/edgecases.sh [--no-check]
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$(cd "$HERE/.." && pwd)/profiles/edge
CHECK=1
[[ ${1:-} == --no-check ]] && CHECK=0

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
mkdir -p "$OUT"
(cd "$HERE/edgecases" && go build -o "$TMP/edgecases" .)
"$TMP/edgecases" -out "$OUT"

[[ $CHECK == 1 ]] || exit 0

valid=(empty-samples no-mappings sparse-ids unpacked multi-types default-type
	no-functions zero-and-negative cpu-millis cpu-extra-type bad-mapping-ref nul-bytes)
# name:substring expected in go tool pprof's error (Go 1.19). Errors of the
# proto decoder itself are masked by pprof's fallback to legacy text formats,
# which ends in "unrecognized profile format".
invalid=(
	"bad-string0:parsing profile: unrecognized profile format"
	"bad-string-index:parsing profile: unrecognized profile format"
	"bad-location-ref:malformed profile: sample has nil location"
	"bad-function-ref:malformed profile: location id: 3 has a line with nil function"
	"bad-dup-location:malformed profile: multiple locations with same id: 2"
	"bad-zero-id:malformed profile: found function with reserved ID=0"
	"bad-value-count:malformed profile: mismatch: sample has 1 values vs. 2 types"
	"truncated:parsing profile: unrecognized profile format"
	"huge-varint:parsing profile: unrecognized profile format"
	"wrong-wiretype:parsing profile: unrecognized profile format"
)

fail=0
for n in "${valid[@]}"; do
	f=$OUT/$n.pb
	if go tool pprof -raw "$f" >/dev/null 2>"$TMP/err" &&
		go tool pprof -top -symbolize=none "$f" >/dev/null 2>>"$TMP/err"; then
		echo "ok   valid    $n.pb"
	else
		echo "FAIL valid    $n.pb rejected: $(grep -v 'failed to fetch' "$TMP/err" | head -1)"
		fail=1
	fi
done
for entry in "${invalid[@]}"; do
	n=${entry%%:*} want=${entry#*:}
	f=$OUT/$n.pb
	if go tool pprof -raw "$f" >/dev/null 2>"$TMP/err"; then
		echo "FAIL invalid  $n.pb accepted"
		fail=1
	elif grep -qF "$want" "$TMP/err"; then
		echo "ok   invalid  $n.pb: $want"
	else
		# Another pprof version may word it differently; still rejected.
		echo "warn invalid  $n.pb rejected, but with: $(head -1 "$TMP/err")"
	fi
done
size=$(stat -c %s "$OUT/gzip-bomb.pb.gz")
unz=$(gzip -dc "$OUT/gzip-bomb.pb.gz" | wc -c)
if ((size < 400 * 1024 && unz > 300 * 1024 * 1024)); then
	echo "ok   bomb     gzip-bomb.pb.gz: $size bytes -> $unz bytes"
else
	echo "FAIL bomb     gzip-bomb.pb.gz: $size bytes -> $unz bytes"
	fail=1
fi
exit $fail
