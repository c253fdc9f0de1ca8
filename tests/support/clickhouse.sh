#!/usr/bin/env bash
# clickhouse.sh: starts Debian's clickhouse-server for a test, on loopback ports
# chosen free, with its data, tmp and logs in a directory of the test's, and
# stopping by itself after a time limit. Source it, then:
#   ch_start DIR [LIMIT_SECONDS]   # sets CH_URL (http://127.0.0.1:PORT/) and CH_PID
#   ch_stop                        # also run by the caller's EXIT trap
# ch_start waits for /ping to answer "Ok." with a deadline (60 s) and fails with
# the server's log when it does not.
#
# Two servers as the two shards of one cluster (one replica each):
#   ch_start_cluster DIR CLUSTER [LIMIT_SECONDS]
# sets CH_URL_A and CH_URL_B (their HTTP interfaces), CH_TCP_A and CH_TCP_B
# (127.0.0.1:PORT as system.clusters names them) and CH_PIDS; both servers'
# remote_servers name the cluster CLUSTER with shard 1 on A and shard 2 on B.
# ch_stop stops them too. No ZooKeeper is configured (as profd needs none).

# shellcheck source=ports.sh
. "$(dirname "${BASH_SOURCE[0]}")/ports.sh"
ch_free_port() { pd_free_port; }

# ch_config DIR HTTP TCP INTER [REMOTE_SERVERS_XML]: writes DIR/config.xml and
# DIR/users.xml for a server on those loopback ports.
ch_config() {
	local dir=$1 http=$2 tcp=$3 inter=$4 remote=${5:-}
	mkdir -p "$dir/data" "$dir/tmp" "$dir/log" "$dir/user_files" "$dir/format_schemas"
	cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger>
    <level>information</level>
    <log>$dir/log/server.log</log>
    <errorlog>$dir/log/error.log</errorlog>
    <console>0</console>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$http</http_port>
  <tcp_port>$tcp</tcp_port>
  <interserver_http_port>$inter</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <format_schema_path>$dir/format_schemas/</format_schema_path>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
$remote
</yandex>
XML
	cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
    <profd>
      <password>${CH_TEST_PASSWORD:-profd-test-secret}</password>
      <networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </profd>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
XML
}

# ch_launch DIR URL LIMIT: starts the server of DIR/config.xml under a time limit and
# waits for URL/ping; prints its PID on success. Returns 2 when the server stopped
# because one of its ports was taken in the meantime (the caller picks new ones).
ch_launch() {
	local dir=$1 url=$2 limit=$3 bin pid
	bin=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)
	[ -x "$bin" ] || { echo "clickhouse-server not found: run scripts/deps.sh --test" >&2; return 1; }
	timeout -k 5 "$limit" "$bin" --config-file="$dir/config.xml" >"$dir/log/stdout.log" 2>&1 &
	pid=$!
	local deadline=$((SECONDS + 60))
	while [ $SECONDS -lt $deadline ]; do
		if [ "$(curl -s --max-time 2 "${url}ping" 2>/dev/null)" = "Ok." ]; then
			echo "$pid"
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then break; fi
		sleep 0.2
	done
	if ! kill -0 "$pid" 2>/dev/null && grep -qs 'Address already in use' "$dir/log/error.log"; then
		wait "$pid" 2>/dev/null || true
		echo "clickhouse-server: a port was taken before it bound it; trying other ports" >&2
		return 2
	fi
	echo "clickhouse-server did not answer ${url}ping within 60 s; its log:" >&2
	tail -n 30 "$dir/log/stdout.log" "$dir/log/error.log" >&2 2>/dev/null
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	return 1
}

ch_start() {
	local dir=$1 limit=${2:-900}
	local http tcp inter rc
	for _ in 1 2 3; do
		http=$(ch_free_port); tcp=$(ch_free_port); inter=$(ch_free_port)
		rm -rf "$dir/log"
		ch_config "$dir" "$http" "$tcp" "$inter"
		CH_URL="http://127.0.0.1:$http/"
		# the PID is read from a file: $(...) would run ch_launch in a subshell whose
		# background child could not be waited for by this shell
		rc=0
		ch_launch "$dir" "$CH_URL" "$limit" >"$dir/pid" || rc=$?
		[ "$rc" = 2 ] || break
	done
	[ "$rc" = 0 ] || return 1
	CH_PID=$(cat "$dir/pid")
}

ch_start_cluster() {
	local rc
	for _ in 1 2 3; do
		rc=0
		ch_try_cluster "$@" || rc=$?
		[ "$rc" = 2 ] || break
	done
	[ "$rc" = 0 ] || return 1
}

# ch_try_cluster DIR CLUSTER [LIMIT]: one attempt of ch_start_cluster; 2 when a port
# was taken before a server bound it
ch_try_cluster() {
	local dir=$1 cluster=$2 limit=${3:-900}
	local ha ta ia hb tb ib rc
	rm -rf "$dir/a/log" "$dir/b/log"
	ha=$(ch_free_port); ta=$(ch_free_port); ia=$(ch_free_port)
	hb=$(ch_free_port); tb=$(ch_free_port); ib=$(ch_free_port)
	local remote="  <remote_servers><$cluster>
    <shard><replica><host>127.0.0.1</host><port>$ta</port></replica></shard>
    <shard><replica><host>127.0.0.1</host><port>$tb</port></replica></shard>
  </$cluster></remote_servers>"
	ch_config "$dir/a" "$ha" "$ta" "$ia" "$remote"
	ch_config "$dir/b" "$hb" "$tb" "$ib" "$remote"
	CH_URL_A="http://127.0.0.1:$ha/" CH_URL_B="http://127.0.0.1:$hb/"
	CH_TCP_A="127.0.0.1:$ta" CH_TCP_B="127.0.0.1:$tb"
	CH_PIDS=
	# started one after the other: two at once on a loaded machine may miss the deadline
	rc=0
	ch_launch "$dir/a" "$CH_URL_A" "$limit" >"$dir/a/pid" || rc=$?
	[ "$rc" = 0 ] || return "$rc"
	CH_PIDS=$(cat "$dir/a/pid")
	ch_launch "$dir/b" "$CH_URL_B" "$limit" >"$dir/b/pid" || rc=$?
	[ "$rc" = 0 ] || { ch_stop; return "$rc"; }
	CH_PIDS="$CH_PIDS $(cat "$dir/b/pid")"
}

ch_stop() {
	local pid
	for pid in ${CH_PID:-} ${CH_PIDS:-}; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	CH_PID= CH_PIDS=
}
