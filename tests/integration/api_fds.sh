#!/usr/bin/env bash
# api_fds.sh: the HTTP API answers when its connections get descriptors of 1024
# and more, as they do in a profd that keeps a connection open to each of
# thousands of targets. profd is started with 1,100 descriptors already open
# (inherited from this script), so every connection it accepts is past 1024,
# where select() cannot watch it.
#
#   api_fds.sh PROFD
set -euo pipefail

profd=$(realpath "$1")
tmp=$(mktemp -d)
profd_pid=""
cleanup() {
	[ -z "$profd_pid" ] || kill "$profd_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/profd.log
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$log" 2>/dev/null; exit 1; }

want=1100
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge $((want + 200)) ] ||
	fail "the hard limit on open files ($(ulimit -Hn)) is below $((want + 200)); this test needs it"
ulimit -n $((want + 200))
printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n' >"$tmp/profd.yml"
# descriptors 3.. up to past 1024, left open for profd to inherit
for _ in $(seq $want); do exec {fd}</dev/null; done
timeout --foreground 120 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 2>"$log" &
profd_pid=$!
port=""
deadline=$((SECONDS + 60))
until [ -n "$port" ]; do
	kill -0 "$profd_pid" 2>/dev/null || fail "profd exited"
	[ $SECONDS -lt $deadline ] || fail "profd did not start listening within 60 s"
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1 || true)
	[ -n "$port" ] || sleep 0.1
done
api=http://127.0.0.1:$port
open=$(ls "/proc/$profd_pid/fd" | wc -l)
[ "$open" -gt 1024 ] || fail "profd holds only $open descriptors; the test needs more than 1024"

# each request on a connection of its own: the accepted descriptor is past 1024
for path in /-/ready /metrics '/api/v1/labels' '/api/v1/query_range?query=%7Bjob%3D%22x%22%7D&start=0&end=1'; do
	code=$(curl -sS --max-time 30 -o "$tmp/body" -w '%{http_code}' "$api$path") ||
		fail "GET $path: no answer"
	[ "$code" = 200 ] || fail "GET $path: HTTP $code: $(head -c 300 "$tmp/body")"
done
curl -sS --max-time 30 -o "$tmp/metrics" "$api/metrics" || fail "GET /metrics: no answer"
grep -q '^profd_' "$tmp/metrics" || fail "/metrics has no profd_ metric"
! grep -q 'FD_SETSIZE' "$log" || fail "the API refused a connection: $(grep -m1 FD_SETSIZE "$log")"
echo "ok: the API answers on descriptors past 1024 (profd holds $open)"
