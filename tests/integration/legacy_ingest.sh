#!/usr/bin/env bash
# legacy_ingest.sh: legacy profile formats through a running profd. A target
# (tests/support/serve_profiles) serves a gperftools text heap profile and a Go
# goroutine count profile; pushes (POST /api/v1/profiles) send a gperftools binary
# CPU profile (gzip'd) and a Java CPU profile. Each stored profile, fetched with
# report=proto, is gzip'd profile.proto (not the text sent) and prints under go
# tool pprof -top as the original does; a push of bytes in no known format is a
# 400 naming the formats tried.
#
#   legacy_ingest.sh PROFD SERVE_PROFILES TESTDATA
set -euo pipefail

profd=$(realpath "$1")
serve=$(realpath "$2")
data=$(cd "$3" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail() { echo "FAIL: $*"; tail -20 "$tmp/profd.log" 2>/dev/null; echo "0 passed, 1 failed"; exit 1; }
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}

l=$data/legacy
"$serve" "$tmp/addr" "$tmp/served" "/debug/pprof/heap=$l/cppbench.heap" \
	"/debug/pprof/goroutine=$l/goroutine.txt.count" &
pids+=($!)
wait_for 60 "the profile server did not start" test -s "$tmp/addr"
addr=$(cat "$tmp/addr")
cat >"$tmp/profd.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: served
    static_configs:
      - targets: ['$addr']
    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}
EOC
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 2>"$tmp/profd.log" &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start" listening
api="http://127.0.0.1:$port"

top() { (cd "$tmp" && go tool pprof -top -nodefraction=0 -symbolize=none -sample_index="$1" "$2" 2>&1 | sed -n '/^Showing/,$p'); }
checks=0
# check SELECTOR ORIGINAL NTYPES: the stored profile is protobuf and reads as ORIGINAL
check() {
	local sel=$1 orig=$2 ntypes=$3 i
	# symbolize=false: the profile as stored (the symbolizer would name the frames
	# it cannot resolve binary+0x..., as docs/symbolization.md says)
	curl -fsS -G "$api/api/v1/query" --data-urlencode report=proto --data-urlencode "query=$sel" \
		--data-urlencode symbolize=false -o "$tmp/got.pb.gz" || fail "query $sel"
	gzip -dc "$tmp/got.pb.gz" >"$tmp/got.pb" || fail "$sel: report=proto is not gzip"
	"$profd" pprof validate "$tmp/got.pb" >/dev/null || fail "$sel: the stored profile does not validate"
	if head -c 64 "$tmp/got.pb" | grep -aq 'profile\|^---'; then
		fail "$sel: report=proto serves the legacy text, not profile.proto"
	fi
	for ((i = 0; i < ntypes; i++)); do
		diff <(top "$i" "$orig") <(top "$i" "$tmp/got.pb.gz") >"$tmp/diff" ||
			{ head -20 "$tmp/diff"; fail "$sel [$i]: go tool pprof -top differs from the original's"; }
		checks=$((checks + 1))
	done
}

stored() { curl -fsS -G "$api/api/v1/series" --data-urlencode "match[]=$1" 2>/dev/null | grep -q '"__name__"'; }
wait_for 60 "the legacy heap scrape was not stored" stored 'heap{job="served"}'
wait_for 60 "the goroutine count profile scrape was not stored" stored 'goroutine{job="served"}'
check 'heap{job="served"}' "$l/cppbench.heap" 2
check 'goroutine{job="served"}' "$l/goroutine.txt.count" 1

now=$(date +%s)
gzip -c "$l/cppbench.cpu" >"$tmp/cpu.gz"
code=$(curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$tmp/cpu.gz" \
	"$api/api/v1/profiles?labels=cpu%7Bjob%3D%22pushed%22%7D&time=$now")
[ "$code" = 200 ] || fail "push of a gzip'd gperftools CPU profile answered $code: $(cat "$tmp/push.json")"
check 'cpu{job="pushed"}' "$l/cppbench.cpu" 2
code=$(curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$l/java.cpu" \
	"$api/api/v1/profiles?labels=javacpu%7Bjob%3D%22pushed%22%7D&time=$now")
[ "$code" = 200 ] || fail "push of a Java CPU profile answered $code: $(cat "$tmp/push.json")"
check 'javacpu{job="pushed"}' "$l/java.cpu" 2

printf 'hello, this is no profile\n' >"$tmp/junk"
code=$(curl -s -o "$tmp/push.json" -w '%{http_code}' --data-binary "@$tmp/junk" \
	"$api/api/v1/profiles?labels=junk%7Bjob%3D%22pushed%22%7D&time=$now")
[ "$code" = 400 ] || fail "push of junk answered $code"
grep -q 'nor is it a legacy profile (tried gperftools CPU' "$tmp/push.json" ||
	fail "push of junk: the error does not name the formats tried: $(cat "$tmp/push.json")"
checks=$((checks + 1))
echo "legacy_ingest: $checks checks"
echo "1 passed, 0 failed"
