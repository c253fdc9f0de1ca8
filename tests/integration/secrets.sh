#!/usr/bin/env bash
# secrets.sh: a password in --storage.clickhouse.url and
# --storage.clickhouse.cluster-nodes never shows: not in /api/v1/status/flags,
# not in /debug/pprof/cmdline nor the process's own /proc/PID/cmdline, not in
# the error of a read that fails against ClickHouse (a closed port here), not
# in any log line; the log warns that the password belongs in
# --storage.clickhouse.credentials-file.
#
#   secrets.sh PROFD
set -euo pipefail

profd=$(realpath "$1")
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/profd.log
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$log" 2>/dev/null; exit 1; }
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}
# a loopback port nothing listens on (a refused connection says so)
closed_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	fail "no closed port found"
}
ch=$(closed_port)
printf 'global:\n  scrape_interval: 1s\n' >"$tmp/profd.yml"
timeout --foreground 120 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --log.level=debug \
	--storage.clickhouse.url="http://profd:hunter2@127.0.0.1:$ch/" \
	--storage.clickhouse.cluster=c1 \
	--storage.clickhouse.cluster-nodes="http://other:s3cret@127.0.0.1:$ch/" 2>"$log" &
profd_pid=$!
pids+=("$profd_pid")
listening() { port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1 || true); [ -n "$port" ]; }
wait_for 60 "profd did not start listening" listening
api=http://127.0.0.1:$port
no_secret() { ! grep -q -e hunter2 -e s3cret "$1"; }

# /api/v1/status/flags: the URLs with xxxxx
curl -fsS "$api/api/v1/status/flags" >"$tmp/flags.json" || fail "GET /api/v1/status/flags"
no_secret "$tmp/flags.json" || fail "a password in /api/v1/status/flags: $(cat "$tmp/flags.json")"
grep -q "\"storage.clickhouse.url\":\"http://profd:xxxxx@127.0.0.1:$ch/\"" "$tmp/flags.json" ||
	fail "no redacted storage.clickhouse.url in the flags: $(cat "$tmp/flags.json")"
grep -q "\"storage.clickhouse.cluster-nodes\":\"http://other:xxxxx@127.0.0.1:$ch/\"" "$tmp/flags.json" ||
	fail "no redacted storage.clickhouse.cluster-nodes in the flags"

# /debug/pprof/cmdline: the arguments, NUL-separated, with xxxxx
curl -fsS "$api/debug/pprof/cmdline" >"$tmp/cmdline" || fail "GET /debug/pprof/cmdline"
no_secret "$tmp/cmdline" || fail "a password in /debug/pprof/cmdline: $(tr '\0' ' ' <"$tmp/cmdline")"
tr '\0' '\n' <"$tmp/cmdline" | grep -qx -- "--storage.clickhouse.url=http://profd:xxxxx@127.0.0.1:$ch/" ||
	fail "no redacted --storage.clickhouse.url in /debug/pprof/cmdline: $(tr '\0' ' ' <"$tmp/cmdline")"
# the process list: profd's own arguments are overwritten (the wrapper's are not profd's)
pid=$(pgrep -P "$profd_pid" -x profd) || fail "no profd process under timeout $profd_pid"
no_secret "/proc/$pid/cmdline" || fail "a password in /proc/$pid/cmdline: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qx -- "--storage.clickhouse.url=http://profd:xxxxxxx@127.0.0.1:$ch/" ||
	fail "argv not overwritten: $(tr '\0' ' ' <"/proc/$pid/cmdline")"

# a read against the closed port fails, and its error names the URL without the password
code=$(curl -sS -o "$tmp/labels.json" -w '%{http_code}' "$api/api/v1/labels")
[ "$code" = 503 ] || fail "GET /api/v1/labels answered $code, want 503: $(cat "$tmp/labels.json")"
no_secret "$tmp/labels.json" || fail "a password in a read's error: $(cat "$tmp/labels.json")"
grep -q "clickhouse http://profd:xxxxx@127.0.0.1:$ch: " "$tmp/labels.json" ||
	fail "the read's error does not name the redacted URL: $(cat "$tmp/labels.json")"
code=$(curl -sS -o "$tmp/range.json" -w '%{http_code}' "$api/api/v1/query_range?query=heap&start=0&end=100")
no_secret "$tmp/range.json" || fail "a password in a query's error: $(cat "$tmp/range.json")"

# the log: the URLs shown with xxxxx, and the warning
grep -q 'level=warn component=clickhouse msg="a password in a ClickHouse URL can be read from the process list by every user of the machine; give it in --storage.clickhouse.credentials-file instead"' "$log" ||
	fail "no warning about the password in the URL"
grep -q "url=http://profd:xxxxx@127.0.0.1:$ch/" "$log" || fail "no redacted URL in the log"
kill "$profd_pid"
wait "$profd_pid" 2>/dev/null || true
no_secret "$log" || fail "a password in the log: $(grep -e hunter2 -e s3cret "$log" | head -3)"
echo PASS
