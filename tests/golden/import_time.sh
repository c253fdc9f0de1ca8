#!/usr/bin/env bash
# import_time.sh: `profd tsdb import` of profiles without time_nanos (a protobuf
# profile, and the legacy formats: gperftools CPU and heap, Java heap, Go's
# pre-1.8 goroutine text) stores each at the time docs/storage.md gives
# ("Times of imported profiles"): its file's modification time, kept after the
# previous such file named; with --time=T the i-th file at T + i ms; a time the
# series holds already is skipped as a duplicate. Each stored profile is read
# back with `profd tsdb dump-profile` and prints under `go tool pprof -raw` what
# the file (or, for a legacy file, its conversion) prints.
#
#   import_time.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp TZ=UTC
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
ms() { echo $(($(date -u -d "$1" +%s%N) / 1000000)); }
expect() { # label want got
	checked=$((checked + 1))
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1: want $2, got $3"
		fail=1
	fi
}

# the files, each with a modification time set to the millisecond
mkdir "$tmp/in"
cp "$data/legacy/cppbench.cpu" "$tmp/in/a.cpu"
cp "$data/legacy/gobench.heap" "$tmp/in/b.heap"
# a protobuf profile without time_nanos: goapp's heap with field 9 left out
python3 - "$data/profiles/goapp/heap-2.pb.gz" "$tmp/in/c.pb.gz" <<'PY'
import gzip, sys
b = gzip.open(sys.argv[1]).read()
out, i = bytearray(), 0
def varint(i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7F) << s; s += 7
        if c < 0x80: return v, i
while i < len(b):
    start = i
    key, i = varint(i)
    if key & 7 == 0: _, i = varint(i)
    elif key & 7 == 2: n, i = varint(i); i += n
    elif key & 7 == 1: i += 8
    elif key & 7 == 5: i += 4
    if key >> 3 != 9: out += b[start:i]
gzip.open(sys.argv[2], "wb").write(bytes(out))
PY
cp "$data/legacy/java.heap" "$tmp/in/d.heap"
cp "$data/legacy/goroutine.txt.count" "$tmp/in/e.count"
cp "$data/profiles/goapp/heap.pb.gz" "$tmp/in/f.pb.gz"
touch -d 2026-01-02T03:04:05.678Z "$tmp/in/a.cpu"
touch -d 2026-01-02T03:00:00.000Z "$tmp/in/b.heap" # older than a, named after it
touch -d 2026-01-02T03:04:05.678Z "$tmp/in/c.pb.gz" # the same time as a
touch -d 2026-01-02T03:05:00.250Z "$tmp/in/d.heap"
touch -d 2026-01-02T03:05:00.250Z "$tmp/in/e.count"
ta=$(ms 2026-01-02T03:04:05.678Z)
td=$(ms 2026-01-02T03:05:00.250Z)
tf=$(($(gopprof -raw "$tmp/in/f.pb.gz" | awk '/^Time:/{print $2 "T" $3 "Z"}' | xargs -I{} date -u -d {} +%s%N) / 1000000))
# f carries time_nanos: it keeps it
want="$ta $((ta + 1)) $((ta + 2)) $td $((td + 1)) $tf"
order="a.cpu b.heap c.pb.gz d.heap e.count f.pb.gz"

store=$tmp/store
files=()
for f in $order; do files+=("$tmp/in/$f"); done
"$profd" tsdb import --storage.tsdb.path="$store" --labels='mixed{job="mtime"}' "${files[@]}" >"$tmp/out"
got=$("$profd" tsdb query "$store" 'mixed{job="mtime"}' --timestamps | awk '/^  /{print $1}' | xargs)
expect "modification times, kept in the order named" "$(echo "$want" | tr ' ' '\n' | sort -n | xargs)" "$got"
expect "a line for each file without time_nanos" 5 "$(grep -c ': no time_nanos: at ' "$tmp/out")"
checked=$((checked + 1))
grep -q "^$tmp/in/b.heap: no time_nanos: at 2026-01-02T03:04:05.679Z (the file's modification time)$" "$tmp/out" ||
	{ echo "FAIL: the note for b.heap: $(cat "$tmp/out")"; fail=1; }

# each one read back: the stored profile is the file's protobuf, or the
# conversion of a legacy file (as profd pprof merge writes it)
check_back() { # selector file time-ms
	"$profd" tsdb dump-profile "$store" "$1" --time="$(awk -v t="$3" 'BEGIN{printf "%.3f", t / 1000}')" -o "$tmp/back.pb.gz" 2>/dev/null
	"$profd" pprof merge -o "$tmp/conv.pb.gz" "$2"
	gopprof -raw "$tmp/conv.pb.gz" >"$tmp/want" 2>&1
	gopprof -raw "$tmp/back.pb.gz" >"$tmp/got" 2>&1
	checked=$((checked + 1))
	if ! cmp -s "$tmp/want" "$tmp/got" || ! grep -q '^Samples:' "$tmp/got"; then
		echo "FAIL: $2 at $3: the stored profile differs under -raw"
		diff "$tmp/want" "$tmp/got" | head -10
		fail=1
	fi
}
# shellcheck disable=SC2086 # the times are words
set -- $want
for f in $order; do
	check_back 'mixed{job="mtime"}' "$tmp/in/$f" "$1"
	shift
done
# the protobuf file without a time is stored as its bytes: -raw of the file itself
gopprof -raw "$tmp/in/c.pb.gz" >"$tmp/want" 2>&1
"$profd" tsdb dump-profile "$store" 'mixed{job="mtime"}' --time="$(awk -v t="$((ta + 2))" 'BEGIN{printf "%.3f", t / 1000}')" -o "$tmp/back.pb.gz" 2>/dev/null
gopprof -raw "$tmp/back.pb.gz" >"$tmp/got" 2>&1
checked=$((checked + 1))
cmp -s "$tmp/want" "$tmp/got" || { echo "FAIL: c.pb.gz stored differs from the file under -raw"; fail=1; }

# importing the same files again: every time is there already, all skipped
"$profd" tsdb import --storage.tsdb.path="$store" --labels='mixed{job="mtime"}' "${files[@]}" >"$tmp/out"
checked=$((checked + 1))
if ! grep -q '^imported 0 profiles' "$tmp/out" ||
	! grep -q 'skipped 6 duplicates .*: 0 repeated in the input, 6 already in the store' "$tmp/out"; then
	echo "FAIL: a second import should skip all six: $(cat "$tmp/out")"
	fail=1
fi

# --time: the i-th file named at T + i ms, time_nanos or not
"$profd" tsdb import --storage.tsdb.path="$store" --labels='mixed{job="flag"}' --time=2026-02-01T00:00:00Z \
	"$tmp/in/f.pb.gz" "$tmp/in/a.cpu" "$tmp/in/e.count" >/dev/null
t0=$(ms 2026-02-01T00:00:00Z)
got=$("$profd" tsdb query "$store" 'mixed{job="flag"}' --timestamps | awk '/^  /{print $1}' | xargs)
expect "--time" "$t0 $((t0 + 1)) $((t0 + 2))" "$got"
check_back 'mixed{job="flag"}' "$tmp/in/a.cpu" $((t0 + 1))
"$profd" tsdb import --storage.tsdb.path="$store" --labels='mixed{job="unix"}' --time=1767225600.5 "$tmp/in/e.count" >/dev/null
got=$("$profd" tsdb query "$store" 'mixed{job="unix"}' --timestamps | awk '/^  /{print $1}' | xargs)
expect "--time in Unix seconds" 1767225600500 "$got"

# a bad --time is refused, naming the flag
checked=$((checked + 1))
if "$profd" tsdb import --storage.tsdb.path="$store" --labels='mixed{job="bad"}' --time=yesterday "$tmp/in/a.cpu" >/dev/null 2>"$tmp/err" ||
	! grep -q -- '--time' "$tmp/err"; then
	echo "FAIL: --time=yesterday should be refused naming --time: $(cat "$tmp/err")"
	fail=1
fi

echo "import_time: $checked checks"
exit $fail
