#!/usr/bin/env bash
# lifecycle.sh: the write endpoints of `profd run` and the flags that gate them.
#   1. Defaults: POST and PUT /-/reload and /-/quit answer 403 "Lifecycle API is
#      not enabled." and profd keeps running; SIGHUP still reloads; a push is
#      accepted and stored.
#   2. --web.enable-lifecycle: /-/reload reloads, GET /-/quit is a 405, and POST
#      /-/quit answers "Requesting termination... Goodbye!" and profd stops as on
#      SIGTERM: exit 0 and a clean stop in the log.
#   3. --no-web.enable-push, after a restart: the profiles pushed before the quit
#      are all there, and a push is refused with 404 and stores nothing.
#
#   lifecycle.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/none.log
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$log" 2>/dev/null; exit 1; }
# Runs CMD every 0.2 s until it succeeds; fails with WHAT after TIMEOUT seconds.
# Conditions are waited for, never slept on: the machine may be loaded.
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
gone() { ! kill -0 "$profd_pid" 2>/dev/null; }
# start NAME [FLAGS...]: profd on a free loopback port, logging to NAME.log;
# sets $api, $log and $profd_pid
start() {
	log=$tmp/$1.log
	shift
	"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
		--web.listen-address=127.0.0.1:0 "$@" 2>"$log" &
	profd_pid=$!
	pids+=("$profd_pid")
	wait_for 60 "profd did not start listening" listening
	api="http://127.0.0.1:$port"
}
# stopped HOW: waits for profd to exit and checks that it stopped cleanly
stopped() {
	wait_for 60 "profd did not exit after $1" gone
	local rc=0
	wait "$profd_pid" || rc=$?
	[ "$rc" = 0 ] || fail "profd exited with $rc after $1"
	grep -q 'level=info component=main msg="stopped"' "$log" || fail "no clean stop after $1"
}
# call METHOD PATH: sets $code and $body (the body byte for byte, in $tmp/body)
call() {
	code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$1" "$api$2") || fail "$1 $2: curl failed"
	body=$(cat "$tmp/body"; echo .)
	body=${body%.}
}
# expect METHOD PATH CODE BODY: the answer, exactly
expect() {
	call "$1" "$2"
	[ "$code" = "$3" ] && [ "$body" = "$4" ] ||
		fail "$1 $2 answered $code '$body', want $3 '$4'"
}
# push INSTANCE: pushes a heap profile as heap{job="push",instance=INSTANCE} at
# the current time; sets $code
push() {
	code=$(curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$data/profiles/goapp/heap.pb.gz" \
		"$api/api/v1/profiles?labels=heap%7Bjob%3D%22push%22%2Cinstance%3D%22$1%22%7D&time=$(date +%s)") ||
		fail "push $1: curl failed"
}
# series SELECTOR: the series the API lists for it
series() {
	curl -fsS -G "$api/api/v1/series" --data-urlencode "match[]=$1" || fail "series $1"
}

config() { # the scrape interval, to tell one configuration from another
	printf 'global:\n  scrape_interval: %s\nscrape_configs: []\n' "$1" >"$tmp/profd.yml"
}
config 15s

# 1. the defaults: lifecycle off, pushes on
start defaults
for m in POST PUT; do
	expect "$m" /-/reload 403 'Lifecycle API is not enabled.'
	expect "$m" /-/quit 403 'Lifecycle API is not enabled.'
done
kill -0 "$profd_pid" 2>/dev/null || fail "profd stopped after a refused /-/quit"
expect GET /-/healthy 200 $'profd is Healthy.\n'
grep -q 'configuration reloaded' "$log" && fail "a refused /-/reload reloaded"
curl -fsS "$api/api/v1/status/flags" >"$tmp/flags.json" || fail "status/flags"
grep -q '"web.enable-lifecycle":"false"' "$tmp/flags.json" && grep -q '"web.enable-push":"true"' "$tmp/flags.json" ||
	fail "status/flags: $(cat "$tmp/flags.json")"
config 20s
kill -HUP "$profd_pid"
wait_for 60 "SIGHUP did not reload without --web.enable-lifecycle" grep -q 'configuration reloaded' "$log"
grep -q 'scrape_interval: 20s' <<<"$(curl -fsS "$api/api/v1/status/config")" || fail "SIGHUP: the new configuration is not in use"
push a
[ "$code" = 200 ] || fail "a push with the defaults answered $code: $(cat "$tmp/push.json")"
kill -TERM "$profd_pid"
stopped SIGTERM

# 2. --web.enable-lifecycle: reload and quit
start lifecycle --web.enable-lifecycle
push b
[ "$code" = 200 ] || fail "a push answered $code: $(cat "$tmp/push.json")"
config 25s
expect POST /-/reload 200 ''
grep -q 'configuration reloaded' "$log" || fail "no reload in the log after POST /-/reload"
grep -q 'scrape_interval: 25s' <<<"$(curl -fsS "$api/api/v1/status/config")" || fail "/-/reload: the new configuration is not in use"
config 30s
expect PUT /-/reload 200 ''
grep -q 'scrape_interval: 30s' <<<"$(curl -fsS "$api/api/v1/status/config")" || fail "PUT /-/reload: the new configuration is not in use"
call GET /-/quit
[ "$code" = 405 ] || fail "GET /-/quit answered $code"
kill -0 "$profd_pid" 2>/dev/null || fail "profd stopped after GET /-/quit"
expect POST /-/quit 200 'Requesting termination... Goodbye!'
stopped "POST /-/quit"
grep -q 'msg="received a termination request via /-/quit, shutting down"' "$log" ||
	fail "the log does not say why profd stopped"

# 3. --no-web.enable-push: what was pushed before the quit is there; pushes are refused
start nopush --no-web.enable-push
for i in a b; do
	grep -q "\"instance\":\"$i\"" <<<"$(series "heap{job=\"push\",instance=\"$i\"}")" ||
		fail "the profile pushed as instance $i is gone after the restart"
done
push c
[ "$code" = 404 ] || fail "a push with --no-web.enable-push answered $code: $(cat "$tmp/push.json")"
grep -qxF '{"status":"error","errorType":"not_found","error":"push receiver needs to be enabled with --web.enable-push"}' \
	"$tmp/push.json" || fail "the refused push: $(cat "$tmp/push.json")"
grep -qF '"data":[]' <<<"$(series 'heap{instance="c"}')" || fail "the refused push was stored"
grep -q '^profd_profiles_appended_total{source="push"} 0$' <<<"$(curl -fsS "$api/metrics")" ||
	fail "/metrics counts a refused push as appended"
expect POST /-/quit 403 'Lifecycle API is not enabled.'
kill -TERM "$profd_pid"
stopped SIGTERM

# and in the store itself
"$profd" tsdb query "$tmp/data" 'heap{job="push"}' >"$tmp/stored.txt" || fail "profd tsdb query"
for i in a b; do
	grep -q "instance=\"$i\"" "$tmp/stored.txt" || fail "instance $i is not in the store: $(cat "$tmp/stored.txt")"
done
grep -q 'instance="c"' "$tmp/stored.txt" && fail "the refused push is in the store"
echo "lifecycle: gates refused by default; reload and quit with --web.enable-lifecycle; pushes refused with --no-web.enable-push"
