# The storage backends beside each other (docs/architecture.md, "Storage"): the
# includes of pkg/tsdb, pkg/clickhouse, pkg/storage and the stores' users checked
# by tests/support/storage_deps.sh: the tree passes, and a copy of pkg/tsdb and
# pkg/clickhouse given one include of the other is refused, naming the file.
add_test(NAME unit_storage_deps COMMAND sh -c [=[
set -e
script=$1 root=$2
"$script" "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in tsdb clickhouse storage api scrape ingest promql; do
	mkdir -p "$tmp/pkg/$p"
	cp -R "$root/pkg/$p/." "$tmp/pkg/$p/"
done
printf '#include "profd/clickhouse.h"\n' >> "$tmp/pkg/tsdb/db.c"
if out=$("$script" "$tmp"); then echo "an include of clickhouse.h in pkg/tsdb passed"; exit 1; fi
echo "$out" | grep -q 'pkg/tsdb/db.c:.*profd/clickhouse.h.*not allowed in pkg/tsdb' ||
	{ echo "unexpected report: $out"; exit 1; }
sed -i '$d' "$tmp/pkg/tsdb/db.c"
printf '#include "tsdb_int.h"\n' >> "$tmp/pkg/clickhouse/sink.c"
if out=$("$script" "$tmp"); then echo "an include of tsdb_int.h in pkg/clickhouse passed"; exit 1; fi
echo "$out" | grep -q 'pkg/clickhouse/sink.c:.*tsdb_int.h.*not allowed in pkg/clickhouse' ||
	{ echo "unexpected report: $out"; exit 1; }
echo "storage deps: ok"
]=] sh ${CMAKE_CURRENT_SOURCE_DIR}/support/storage_deps.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(unit_storage_deps PROPERTIES LABELS unit TIMEOUT 60
  PASS_REGULAR_EXPRESSION "storage deps: ok")
