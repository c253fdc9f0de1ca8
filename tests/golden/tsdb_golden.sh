#!/usr/bin/env bash
# tsdb_golden.sh: profiles survive the store byte for byte in meaning: import real
# profiles with `profd tsdb import`, read each back with `profd tsdb dump-profile`,
# and `go tool pprof -raw` prints the same for the original and the stored one.
# Also checks that `profd tsdb query` lists exactly the imported timestamps, and
# that edge/nul-bytes.pb's strings with NUL bytes come back whole.
#
#   tsdb_golden.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0

gopprof() { (cd "$tmp" && go tool pprof -symbolize=none "$@"); }


store=$tmp/store
for src in goapp prometheus; do
	for f in "$data"/profiles/$src/*.pb.gz; do
		base=$(basename "$f" .pb.gz)
		type=${base%%-*}
		# one series per file: the file name keeps series apart
		"$profd" tsdb import --storage.tsdb.path="$store" \
			--labels="$type{job=\"$src\",file=\"$base\"}" "$f" >/dev/null
	done
done

for src in goapp prometheus; do
	for f in "$data"/profiles/$src/*.pb.gz; do
		base=$(basename "$f" .pb.gz)
		type=${base%%-*}
		sel="$type{job=\"$src\",file=\"$base\"}"
		t=$(gopprof -raw "$f" 2>/dev/null | awk '/^Time:/{print $2 "T" $3}' | sed 's/ +0000.*//')
		t=${t%% *}Z
		"$profd" tsdb dump-profile "$store" "$sel" --time="$t" -o "$tmp/out.pb.gz" 2>/dev/null
		gopprof -raw "$f" >"$tmp/want" 2>&1
		gopprof -raw "$tmp/out.pb.gz" >"$tmp/got" 2>&1
		checked=$((checked + 1))
		if ! diff -q "$tmp/want" "$tmp/got" >/dev/null; then
			echo "FAIL: $src/$base: stored profile differs under go tool pprof -raw"
			diff "$tmp/want" "$tmp/got" | head -10
			fail=1
		fi
		n=$("$profd" tsdb query "$store" "$sel" | awk '{print $(NF-4)}')
		checked=$((checked + 1))
		if [ "$n" != 1 ]; then
			echo "FAIL: $src/$base: query lists $n samples, want 1"
			fail=1
		fi
	done
done

# strings holding NUL bytes (a 256-byte name of every byte value, two names that
# differ only after a NUL) come back whole
f=$data/profiles/edge/nul-bytes.pb
"$profd" tsdb import --storage.tsdb.path="$store" --labels='cpu{job="edge",file="nul-bytes"}' "$f" >/dev/null
"$profd" tsdb dump-profile "$store" 'cpu{job="edge",file="nul-bytes"}' --time=2023-11-14T22:13:20Z \
	-o "$tmp/out.pb.gz" 2>/dev/null
gopprof -raw "$f" >"$tmp/want" 2>&1
gopprof -raw "$tmp/out.pb.gz" >"$tmp/got" 2>&1
checked=$((checked + 1))
if ! cmp -s "$tmp/want" "$tmp/got" || [ "$(grep -ac 'dup' "$tmp/want")" -lt 2 ]; then
	echo "FAIL: edge/nul-bytes: stored profile differs under go tool pprof -raw"
	fail=1
fi

# a series of many profiles: every timestamp listed, each profile read back
"$profd" tsdb import --storage.tsdb.path="$store" --labels='heap{job="multi"}' \
	"$data"/profiles/goapp/heap.pb.gz "$data"/profiles/goapp/heap-2.pb.gz "$data"/profiles/goapp/heap-3.pb.gz >/dev/null
checked=$((checked + 1))
if [ "$("$profd" tsdb query "$store" 'heap{job="multi"}' --timestamps | grep -c '^  ')" != 3 ]; then
	echo "FAIL: the three-profile series does not list three timestamps"
	fail=1
fi

echo "tsdb golden: $checked checks"
exit $fail
