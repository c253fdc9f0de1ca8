#!/usr/bin/env bash
# debuginfo.sh: debug file uploads to `profd run` end to end. A C program built
# here with gcc -g -Wl,--build-id gives a debug file (objcopy --only-keep-debug)
# and an unstripped binary; both upload to PUT /api/v1/debuginfo/<build-id>
# (identity and gzip) and land byte for byte at
# <storage.tsdb.path>/debuginfo/.build-id/xx/yyyy.debug, which GET reports.
# Refused, with their status and message and nothing written: another build id,
# a body that is not ELF, an ELF file without a build id, a bad build id in the
# path, bodies over --web.max-debuginfo-size (sent whole, chunked and as a gzip
# bomb), an upload while --web.max-concurrent-pushes are taken, uploads with
# --no-web.enable-push, and without the credentials of --web.config.file. A file acknowledged with 201 survives a kill -9; DELETE
# needs --web.enable-admin-api.
#
#   debuginfo.sh PROFD
set -euo pipefail

profd=$(realpath "$1")
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$tmp/profd.log" 2>/dev/null; exit 1; }
# Runs CMD every 0.1 s until it succeeds; fails with WHAT after TIMEOUT seconds.
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.1
	done
}

# ---- the program, its debug file and build id
cat >"$tmp/prog.c" <<'EOC'
#include <stdio.h>
static int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }
int main(int argc, char **argv) { printf("%d\n", work(argc * 1000)); return 0; }
EOC
gcc -g -O1 -Wl,--build-id -o "$tmp/prog" "$tmp/prog.c"
objcopy --only-keep-debug "$tmp/prog" "$tmp/prog.debug"
gcc -g -Wl,--build-id=none -o "$tmp/noid" "$tmp/prog.c"
gcc -g -Wl,--build-id -DOTHER=1 -o "$tmp/other" -x c - <<<'int main(void) { return 7; }'
build_id() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -1; }
id=$(build_id "$tmp/prog")
other_id=$(build_id "$tmp/other")
[ -n "$id" ] && [ -n "$other_id" ] && [ "$id" != "$other_id" ] || fail "no build ids: '$id' '$other_id'"
[ "$(build_id "$tmp/prog.debug")" = "$id" ] || fail "the debug file has another build id"
stored_at() { echo "$data/debuginfo/.build-id/${1:0:2}/${1:2}.debug"; }
ID_UPPER=$(tr a-f A-F <<<"$id")

printf 'global:\n  scrape_interval: 15s\nscrape_configs: []\n' >"$tmp/profd.yml"
data=$tmp/data
start() { # extra flags
	: >"$tmp/profd.log.cur"
	"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$data" \
		--web.listen-address=127.0.0.1:0 --web.max-debuginfo-size=1MB "$@" \
		2> >(tee -a "$tmp/profd.log" >"$tmp/profd.log.cur") &
	profd_pid=$!
	pids+=($profd_pid)
	wait_for 60 "profd did not start listening" listening
	api="http://127.0.0.1:$port"
	wait_for 60 "profd did not become ready" curl -fsS -o /dev/null "$api/-/ready"
}
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log.cur" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
stop() { # signal
	kill -"$1" "$profd_pid"
	wait "$profd_pid" 2>/dev/null || true
}
# put FILE ID [curl args...]: the status; the answer goes to $tmp/body
put() {
	local file=$1 bid=$2
	shift 2
	curl -s -o "$tmp/body" -w '%{http_code}' -X PUT --data-binary @"$file" \
		-H 'Content-Type: application/octet-stream' "$api/api/v1/debuginfo/$bid" "$@"
}
# expect CODE TEXT WHAT: the last answer had status CODE and holds TEXT
expect() {
	[ "$code" = "$1" ] || fail "$3: status $code, not $1: $(cat "$tmp/body")"
	grep -qF -- "$2" "$tmp/body" || fail "$3: the answer does not say '$2': $(cat "$tmp/body")"
}
# nothing but the files named stored so far, and no temp file
files() { find "$data/debuginfo" -type f 2>/dev/null | sort; }
nothing_new() { [ "$(files)" = "$1" ] || fail "$2 left files: $(files)"; }

# ---- uploads
start --web.enable-push
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$api/api/v1/debuginfo/$id")
expect 404 "no debug file for build id $id" "GET before the upload"
code=$(put "$tmp/prog.debug" "$id")
expect 201 "\"buildId\":\"$id\"" "the upload of the debug file"
grep -qF '"replaced":false' "$tmp/body" || fail "a first upload says replaced: $(cat "$tmp/body")"
cmp "$tmp/prog.debug" "$(stored_at "$id")" || fail "the stored debug file differs from the upload"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$api/api/v1/debuginfo/$id")
expect 200 "\"size\":$(stat -c %s "$tmp/prog.debug")" "GET after the upload"

# the unstripped binary, to the build id in capitals, gzip'd: replaces it
gzip -c "$tmp/prog" >"$tmp/prog.gz"
code=$(put "$tmp/prog.gz" "$ID_UPPER" -H 'Content-Encoding: gzip')
expect 200 '"replaced":true' "the gzip'd binary"
cmp "$tmp/prog" "$(stored_at "$id")" || fail "the stored binary differs from the gunzipped upload"
before=$(files)
[ "$before" = "$(stored_at "$id")" ] || fail "files besides the one stored: $before"

# ---- refusals: status, message, nothing written
code=$(put "$tmp/other" "$id")
expect 400 "the file's build id $other_id differs from the build id $id in the path" "another build id"
cmp "$tmp/prog" "$(stored_at "$id")" || fail "a refused upload changed the stored file"
code=$(put "$tmp/prog.c" "$other_id")
expect 400 "not an ELF file" "a C source"
code=$(put "$tmp/noid" "$other_id")
expect 400 "no build-id note" "a binary without a build id"
code=$(put "$tmp/prog" "abc")
expect 400 "build id in the path" "an odd build id"
code=$(put "$tmp/prog" "zz$id")
expect 400 "build id in the path" "a build id that is not hex"
printf 'not gzip at all' >"$tmp/notgz"
code=$(put "$tmp/notgz" "$other_id" -H 'Content-Encoding: gzip')
expect 400 "gzip body is corrupt" "a body that is not gzip"
code=$(put "$tmp/prog" "$other_id" -H 'Content-Encoding: br')
expect 415 "Content-Encoding must be gzip" "a brotli body"
# over 1MB: with a Content-Length, chunked (no length), and gunzipped
head -c 1500000 /dev/urandom | cat "$tmp/prog" - >"$tmp/big"
code=$(put "$tmp/big" "$id")
expect 413 "the debug file is larger than the limit of 1048576 bytes (--web.max-debuginfo-size)" "an oversize body"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X PUT -H 'Transfer-Encoding: chunked' \
	-T - "$api/api/v1/debuginfo/$id" <"$tmp/big")
expect 413 "the debug file is larger than the limit of 1048576 bytes (--web.max-debuginfo-size)" "an oversize chunked body"
head -c 5000000 /dev/zero | cat "$tmp/prog" - | gzip >"$tmp/bomb.gz"
code=$(put "$tmp/bomb.gz" "$id" -H 'Content-Encoding: gzip')
expect 413 "--web.max-debuginfo-size" "a gzip body that inflates past the limit"
nothing_new "$before" "the refused uploads"
cmp "$tmp/prog" "$(stored_at "$id")" || fail "refused uploads changed the stored file"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X DELETE "$api/api/v1/debuginfo/$id")
expect 503 "admin APIs disabled" "DELETE without --web.enable-admin-api"
curl -fsS -o "$tmp/metrics" "$api/metrics"
grep -q '^profd_debuginfo_uploads_total{result="stored"} 1$' "$tmp/metrics" &&
	grep -q '^profd_debuginfo_uploads_total{result="replaced"} 1$' "$tmp/metrics" &&
	grep -q '^profd_debuginfo_uploads_total{result="too_large"} 3$' "$tmp/metrics" &&
	grep -q '^profd_debuginfo_uploads_total{result="invalid"} [1-9]' "$tmp/metrics" ||
	fail "profd_debuginfo_uploads_total: $(grep debuginfo "$tmp/metrics")"

# ---- durable: a kill -9 right after the 201
code=$(put "$tmp/other" "$other_id")
expect 201 "\"buildId\":\"$other_id\"" "the second program"
stop 9
cmp "$tmp/other" "$(stored_at "$other_id")" || fail "the file acknowledged with 201 is gone after kill -9"
before=$(files)

# ---- one slot (--web.max-concurrent-pushes=1): a slow upload holds it, the next is 429
start --web.max-concurrent-pushes=1
head -c 900000 /dev/urandom | cat "$tmp/other" - >"$tmp/mid" # under the limit, sent slowly
curl -s -o /dev/null --limit-rate 50k -X PUT --data-binary @"$tmp/mid" \
	"$api/api/v1/debuginfo/$other_id" &
slow=$!
pids+=($slow)
in_progress() { curl -fsS "$api/metrics" | grep -q '^profd_pushes_in_progress 1$'; }
wait_for 60 "the slow upload did not take the push slot" in_progress
code=$(put "$tmp/prog.debug" "$id")
expect 429 "--web.max-concurrent-pushes" "an upload while the slot is taken"
kill "$slow" 2>/dev/null || true
wait "$slow" 2>/dev/null || true
cmp "$tmp/prog" "$(stored_at "$id")" || fail "the refused upload changed the stored file"
free_slot() { curl -fsS "$api/metrics" | grep -q '^profd_pushes_in_progress 0$'; }
wait_for 60 "the cut upload kept the push slot" free_slot
nothing_new "$before" "the cut and refused uploads"
stop TERM

# ---- pushes disabled: 404, nothing written
start --no-web.enable-push
code=$(put "$tmp/prog.debug" "$id")
expect 404 "--web.enable-push" "an upload with --no-web.enable-push"
cmp "$tmp/prog" "$(stored_at "$id")" || fail "a refused upload changed the stored file"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$api/api/v1/debuginfo/$other_id")
expect 200 "\"buildId\":\"$other_id\"" "GET after the restart"
stop TERM

# ---- basic auth of --web.config.file; DELETE with the admin API
# bcrypt (cost 4) of the password s3cret-Alice-pw, as tls.sh has it
printf 'basic_auth_users:\n  alice: %s\n' '$2b$04$lTbj2cbV50JV28eWZcVK/e2YMM6bUxf/0.GRX2tBbI1jrwi21w2iK' >"$tmp/web.yml"
: >"$tmp/profd.log.cur"
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$data" \
	--web.listen-address=127.0.0.1:0 --web.config.file="$tmp/web.yml" --web.enable-admin-api \
	2> >(tee -a "$tmp/profd.log" >"$tmp/profd.log.cur") &
profd_pid=$!
pids+=($profd_pid)
wait_for 60 "profd did not start listening" listening
api="http://127.0.0.1:$port"
wait_for 60 "profd did not become ready" curl -fsS -o /dev/null -u alice:s3cret-Alice-pw "$api/-/ready"
code=$(put "$tmp/prog.debug" "$id")
expect 401 "Unauthorized" "an upload without credentials"
code=$(put "$tmp/prog.debug" "$id" -u alice:wrong)
expect 401 "Unauthorized" "an upload with a wrong password"
cmp "$tmp/prog" "$(stored_at "$id")" || fail "an unauthorized upload changed the stored file"
nothing_new "$before" "the unauthorized uploads"
code=$(put "$tmp/prog.debug" "$id" -u alice:s3cret-Alice-pw)
expect 200 '"replaced":true' "an upload with credentials"
cmp "$tmp/prog.debug" "$(stored_at "$id")" || fail "the authorized upload was not stored"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -u alice:s3cret-Alice-pw -X DELETE "$api/api/v1/debuginfo/$other_id")
[ "$code" = 204 ] || fail "DELETE with --web.enable-admin-api: $code $(cat "$tmp/body")"
[ ! -e "$(stored_at "$other_id")" ] || fail "DELETE left the file"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -u alice:s3cret-Alice-pw "$api/api/v1/debuginfo/$other_id")
expect 404 "no debug file" "GET after DELETE"
[ -z "$(find "$data/debuginfo" -name '.tmp-*')" ] || fail "temp files left: $(find "$data/debuginfo" -name '.tmp-*')"
stop TERM
echo "ok"
