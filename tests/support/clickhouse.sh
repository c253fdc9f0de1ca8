#!/usr/bin/env bash
# clickhouse.sh: starts Debian's clickhouse-server for a test, on loopback ports
# chosen free, with its data, tmp and logs in a directory of the test's, and
# stopping by itself after a time limit. Source it, then:
#   ch_start DIR [LIMIT_SECONDS]   # sets CH_URL (http://127.0.0.1:PORT/) and CH_PID
#   ch_stop                        # also run by the caller's EXIT trap
# ch_start waits for /ping to answer "Ok." with a deadline (60 s) and fails with
# the server's log when it does not.

ch_free_port() {
	python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

ch_start() {
	local dir=$1 limit=${2:-900}
	local bin
	bin=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)
	[ -x "$bin" ] || { echo "clickhouse-server not found: run scripts/deps.sh --test" >&2; return 1; }
	mkdir -p "$dir/data" "$dir/tmp" "$dir/log" "$dir/user_files" "$dir/format_schemas"
	local http tcp inter
	http=$(ch_free_port); tcp=$(ch_free_port); inter=$(ch_free_port)
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
	timeout -k 5 "$limit" "$bin" --config-file="$dir/config.xml" >"$dir/log/stdout.log" 2>&1 &
	CH_PID=$!
	CH_URL="http://127.0.0.1:$http/"
	local deadline=$((SECONDS + 60))
	while [ $SECONDS -lt $deadline ]; do
		if [ "$(curl -s --max-time 2 "${CH_URL}ping" 2>/dev/null)" = "Ok." ]; then
			return 0
		fi
		if ! kill -0 "$CH_PID" 2>/dev/null; then break; fi
		sleep 0.2
	done
	echo "clickhouse-server did not answer ${CH_URL}ping within 60 s; its log:" >&2
	tail -n 30 "$dir/log/stdout.log" "$dir/log/error.log" >&2 2>/dev/null
	ch_stop
	return 1
}

ch_stop() {
	if [ -n "${CH_PID:-}" ]; then
		kill "$CH_PID" 2>/dev/null || true
		wait "$CH_PID" 2>/dev/null || true
		CH_PID=
	fi
}
