#!/usr/bin/env bash
# debuginfo_quota.sh: --web.max-debuginfo-total-size, the bound on the bytes
# all uploaded debug files take together. Two small debug files fit; a third,
# larger file is refused with 413 and a message naming the flag, whether its
# Content-Length says so up front, it is sent chunked (stopped once past the
# room left) or gzip'd; the stored files stay byte for byte, no temp file is
# left, and profd_debuginfo_uploads_total{result="over_quota"} and
# profd_debuginfo_stored_bytes say so. A replacement counts only its own size
# against the others; after a DELETE the third file fits.
#
#   debuginfo_quota.sh PROFD
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
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$tmp/profd.log" 2>/dev/null; echo "0 passed, 1 failed"; exit 1; }
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.1
	done
}
build_id() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -1; }

# ---- three programs: two small debug files, one large binary
for i in 1 2; do
	printf 'int f%d(int x) { return x + %d; }\nint main(int c, char **v) { return f%d(c); }\n' \
		"$i" "$i" "$i" >"$tmp/p$i.c"
	gcc -g -O1 -Wl,--build-id -o "$tmp/p$i" "$tmp/p$i.c"
	objcopy --only-keep-debug "$tmp/p$i" "$tmp/p$i.debug"
done
printf 'const char big[300000] = {1};\nint main(int c, char **v) { return big[c]; }\n' >"$tmp/p3.c"
gcc -g -O1 -Wl,--build-id -o "$tmp/p3.debug" "$tmp/p3.c"
id1=$(build_id "$tmp/p1.debug")
id2=$(build_id "$tmp/p2.debug")
id3=$(build_id "$tmp/p3.debug")
if [ -z "$id1" ] || [ -z "$id2" ] || [ -z "$id3" ]; then fail "no build ids"; fi
s1=$(stat -c %s "$tmp/p1.debug")
s2=$(stat -c %s "$tmp/p2.debug")
s3=$(stat -c %s "$tmp/p3.debug")
# room for the two small ones and all but one byte of the large one
quota=$((s1 + s2 + s3 - 1))

data=$tmp/data
stored_at() { echo "$data/debuginfo/.build-id/${1:0:2}/${1:2}.debug"; }
printf 'global:\n  scrape_interval: 15s\nscrape_configs: []\n' >"$tmp/profd.yml"
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$data" \
	--web.listen-address=127.0.0.1:0 --web.max-debuginfo-total-size="${quota}B" \
	--web.enable-admin-api 2>"$tmp/profd.log" &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start listening" listening
api="http://127.0.0.1:$port"
wait_for 60 "profd did not become ready" curl -fsS -o /dev/null "$api/-/ready"

put() { # FILE ID [curl args...]: the status; the answer in $tmp/body
	local file=$1 bid=$2
	shift 2
	curl -s -o "$tmp/body" -w '%{http_code}' -X PUT --data-binary @"$file" \
		"$api/api/v1/debuginfo/$bid" "$@"
}
expect() { # CODE TEXT WHAT
	[ "$code" = "$1" ] || fail "$3: status $code, not $1: $(cat "$tmp/body")"
	grep -qF -- "$2" "$tmp/body" || fail "$3: the answer does not say '$2': $(cat "$tmp/body")"
}
intact() { # WHAT: the two small files as uploaded, nothing else
	cmp -s "$tmp/p1.debug" "$(stored_at "$id1")" || fail "$1: the first stored file changed"
	cmp -s "$tmp/p2.debug" "$(stored_at "$id2")" || fail "$1: the second stored file changed"
	local n
	n=$(find "$data/debuginfo" -type f | wc -l)
	[ "$n" = 2 ] || fail "$1: $n files stored (temp files left?): $(find "$data/debuginfo" -type f)"
}
metric() { # NAME: its value on /metrics
	curl -fsS "$api/metrics" >"$tmp/metrics"
	awk -v n="$1" '$1 == n {print $2}' "$tmp/metrics"
}
checks=0

code=$(put "$tmp/p1.debug" "$id1")
expect 201 "\"buildId\":\"$id1\"" "the first upload"
code=$(put "$tmp/p2.debug" "$id2")
expect 201 "\"buildId\":\"$id2\"" "the second upload"
checks=$((checks + 2))
[ "$(metric profd_debuginfo_stored_bytes)" = $((s1 + s2)) ] ||
	fail "profd_debuginfo_stored_bytes is $(metric profd_debuginfo_stored_bytes), not $((s1 + s2))"
[ "$(metric profd_debuginfo_quota_bytes)" = "$quota" ] || fail "profd_debuginfo_quota_bytes"
checks=$((checks + 1))

full="the debug file store is full: the stored files take $((s1 + s2)) of $quota bytes"
code=$(put "$tmp/p3.debug" "$id3")
expect 413 "$full and this one needs $s3 (--web.max-debuginfo-total-size)" "a file past the quota"
intact "a file past the quota"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X PUT -H 'Transfer-Encoding: chunked' \
	-T - "$api/api/v1/debuginfo/$id3" <"$tmp/p3.debug")
expect 413 "$full and this one needs more than" "a chunked file past the quota"
intact "a chunked file past the quota"
gzip -c "$tmp/p3.debug" >"$tmp/p3.gz"
code=$(put "$tmp/p3.gz" "$id3" -H 'Content-Encoding: gzip')
expect 413 "--web.max-debuginfo-total-size" "a gzip'd file past the quota"
intact "a gzip'd file past the quota"
[ "$(metric 'profd_debuginfo_uploads_total{result="over_quota"}')" = 3 ] ||
	fail "over_quota uploads counted $(metric 'profd_debuginfo_uploads_total{result="over_quota"}'), not 3"
checks=$((checks + 4))

# a replacement counts its own size, not the file it replaces as well
code=$(put "$tmp/p1.debug" "$id1")
expect 200 '"replaced":true' "replacing the first file"
intact "the replacement"
checks=$((checks + 1))

# room made by a DELETE: now it fits
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X DELETE "$api/api/v1/debuginfo/$id2")
[ "$code" = 204 ] || fail "DELETE answered $code"
code=$(put "$tmp/p3.debug" "$id3")
expect 201 "\"buildId\":\"$id3\"" "the large file after a DELETE"
cmp -s "$tmp/p3.debug" "$(stored_at "$id3")" || fail "the large file stored differs"
cmp -s "$tmp/p1.debug" "$(stored_at "$id1")" || fail "the first file changed"
checks=$((checks + 1))
echo "debuginfo_quota: $checks checks"
echo "1 passed, 0 failed"
