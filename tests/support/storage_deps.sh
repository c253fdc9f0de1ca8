#!/bin/sh
# storage_deps.sh ROOT: checks that the two storage backends know each other only
# through the storage interface (include/profd/storage.h): pkg/tsdb includes
# nothing of ClickHouse, pkg/clickhouse nothing of the local store (its public
# header or its private ones), pkg/storage neither, and the packages that use a
# store (api, scrape, ingest, promql) only the interface. Prints each offending
# include and exits 1; 0 when there is none.
root=${1:?usage: storage_deps.sh ROOT}
bad=0
# $1: the package's folder; the rest: extended regexes of forbidden includes
check() {
	dir=$root/$1
	shift
	[ -d "$dir" ] || { echo "storage_deps: no $dir"; exit 2; }
	for pat in "$@"; do
		hits=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]($pat)[\">]" \
			"$dir" --include='*.c' --include='*.h' --include='*.cc' || true)
		if [ -n "$hits" ]; then
			echo "$hits" | sed "s|^$root/||; s|\$|: not allowed in ${dir#$root/}|"
			bad=1
		fi
	done
}
tsdb_private='tsdb_int\.h|db_int\.h|wal\.h|wal_int\.h|block\.h|block_int\.h|lpair\.h|head_chunks\.h|head_spill\.h|hc_replay\.h'
check pkg/tsdb 'profd/clickhouse\.h' 'clickhouse_int\.h'
check pkg/clickhouse 'profd/tsdb\.h' "$tsdb_private" 'profd/chunkenc\.h'
check pkg/storage 'profd/tsdb\.h' 'profd/clickhouse\.h' "$tsdb_private" 'clickhouse_int\.h'
for p in api scrape ingest promql; do
	check pkg/$p 'profd/tsdb\.h' 'profd/clickhouse\.h' "$tsdb_private" 'clickhouse_int\.h'
done
exit $bad
