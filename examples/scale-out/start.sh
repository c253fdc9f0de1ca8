#!/usr/bin/env bash
# start.sh: the scale-out example on one machine (docs/scale-out.md): two
# clickhouse-servers as the two shards of the cluster profd_cluster, two profd
# scrapers splitting the targets with hashmod, each writing through its own node,
# and a query profd with no scrape configs, all on loopback ports:
#
#   shard 1   ClickHouse HTTP 127.0.0.1:18123, TCP 19000
#   shard 2   ClickHouse HTTP 127.0.0.1:18124, TCP 19001
#   scraper 0 profd 127.0.0.1:10914, scraper-0.yml, writes through shard 1's node
#   scraper 1 profd 127.0.0.1:10911, scraper-1.yml, writes through shard 2's node
#   query     profd 127.0.0.1:10913, query.yml: open http://127.0.0.1:10913/
#
# Everything is stopped by Ctrl-C (or when one of them exits). Data and logs go to
# DIR (default ./scale-out-data), kept between runs.
#
#   start.sh [DIR]          PROFD=path/to/profd to choose the binary
set -euo pipefail

ex=$(cd "$(dirname "$0")" && pwd)
dir=$(mkdir -p "${1:-scale-out-data}" && cd "${1:-scale-out-data}" && pwd)
profd=${PROFD:-$(command -v profd || echo "$ex/../../build/release/profd")}
[ -x "$profd" ] || { echo "start.sh: no profd at $profd: set PROFD" >&2; exit 1; }
chbin=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)
[ -x "$chbin" ] || { echo "start.sh: clickhouse-server is not installed" >&2; exit 1; }

pids=()
stop() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 0' INT TERM

for n in 1 2; do
	d=$dir/shard-$n
	mkdir -p "$d/data" "$d/tmp" "$d/log" "$d/user_files" "$d/format_schemas"
	"$chbin" --config-file="$ex/clickhouse/shard-$n.xml" -- --path="$d/data/" \
		--tmp_path="$d/tmp/" --user_files_path="$d/user_files/" \
		--format_schema_path="$d/format_schemas/" --logger.log="$d/log/server.log" \
		--logger.errorlog="$d/log/error.log" >"$d/log/stdout.log" 2>&1 &
	pids+=($!)
done
for n in 1 2; do
	url=http://127.0.0.1:1812$((n + 2))/
	deadline=$((SECONDS + 60))
	until [ "$(curl -s --max-time 2 "${url}ping" 2>/dev/null)" = "Ok." ]; do
		if [ $SECONDS -ge $deadline ] || ! kill -0 "${pids[$((n - 1))]}" 2>/dev/null; then
			echo "start.sh: shard $n does not answer at $url; its log:" >&2
			tail -n 20 "$dir/shard-$n/log/stdout.log" "$dir/shard-$n/log/error.log" >&2 2>/dev/null
			exit 1
		fi
		sleep 0.2
	done
done
echo "ClickHouse: shard 1 at http://127.0.0.1:18123/, shard 2 at http://127.0.0.1:18124/"

# every profd is given both nodes: its own first, the other in cluster-nodes
run_profd() { # NAME LISTEN CONFIG OWN_NODE OTHER_NODE
	mkdir -p "$dir/$1"
	"$profd" run --config.file="$ex/$3" --web.listen-address="$2" \
		--storage.tsdb.path="$dir/$1/" --storage.clickhouse.url="$4" \
		--storage.clickhouse.cluster=profd_cluster --storage.clickhouse.cluster-nodes="$5" \
		>"$dir/$1/profd.log" 2>&1 &
	pids+=($!)
	echo "profd $1 at http://$2/ (log $dir/$1/profd.log)"
}
run_profd scraper-0 127.0.0.1:10914 scraper-0.yml http://127.0.0.1:18123/ http://127.0.0.1:18124/
run_profd scraper-1 127.0.0.1:10911 scraper-1.yml http://127.0.0.1:18124/ http://127.0.0.1:18123/
run_profd query 127.0.0.1:10913 query.yml http://127.0.0.1:18123/ http://127.0.0.1:18124/
echo "Ctrl-C stops them all."
wait -n
echo "start.sh: a process exited; stopping the others (logs in $dir)" >&2
