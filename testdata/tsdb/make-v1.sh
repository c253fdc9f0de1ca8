#!/usr/bin/env bash
# make-v1.sh: writes the golden store of on-disk format version 1,
# testdata/tsdb/v1/, with the current code: `test_store_golden --regenerate`
# (tests/unit/test_store_golden.c) appends a fixed schedule of real profiles from
# testdata/profiles/, flushes part of it into blocks and leaves the rest in the
# WAL, and writes EXPECTED. Then the test runs on the new files.
#
# A golden store is what an older profd wrote, so once committed it is not
# regenerated: a format change gets a new vN/ instead. --force replaces v1/ anyway
# (only while format version 1 is still the one the code writes).
#
# usage: testdata/tsdb/make-v1.sh [--force] [PATH/TO/test_store_golden]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
force=0
if [ "${1:-}" = "--force" ]; then
	force=1
	shift
fi
bin=${1:-}
if [ -z "$bin" ]; then
	for b in "$root"/build/*/tests/unit/test_store_golden; do
		if [ -x "$b" ]; then
			bin=$b
			break
		fi
	done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
	echo "make-v1.sh: no test_store_golden binary; build it first, e.g." >&2
	echo "  cmake -S . -B build/dev && cmake --build build/dev --target test_store_golden" >&2
	exit 1
fi
if [ -e "$here/v1" ] && [ $force -eq 0 ]; then
	echo "make-v1.sh: $here/v1 exists; golden stores are not regenerated (see the top" \
		"of this script), --force replaces it" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" --regenerate "$tmp/v1"
rm -rf "$here/v1"
cp -R "$tmp/v1" "$here/v1"
echo "make-v1.sh: wrote $here/v1 ($(du -sk "$here/v1" | cut -f1) KiB) with $bin"
"$bin"
