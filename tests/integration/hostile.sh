#!/usr/bin/env bash
# hostile.sh: one hostile target must not stop all scraping. profd run scrapes, every
# second, a well-behaved target serving a real heap profile beside seven hostile
# ones (tests/support/hostile_targets): a Content-Encoding gzip bomb (4 MiB inflating
# to 4 GiB), a gzip profile inflating to 1 GiB, an endless body, a body trickling at
# one byte a second, garbage, a profile of 1,000,000 locations, a redirect loop, 60 KB
# of gzip inflating to 60 MiB of empty samples (refused for the decompression ratio)
# and 8 MiB of empty samples uncompressed (refused for the decoded size).
# Asserts, each with a deadline:
# - every hostile target is down with its own reason (/api/v1/targets lastError);
# - the normal target keeps its schedule while the hostile scrapes go on,
#   measured against a reference: a second profd, scraping only the normal target
#   on the same schedule (same job, same URL, so the same ticks) at the same time,
#   on the same machine. Over the time the reference takes to store 15 profiles
#   (15 s on a quiet machine, longer on a loaded one, where either may skip ticks
#   or time out), the hostile daemon stores at least 8, and no two of its samples
#   in a row are further apart than 4 s or twice the reference's widest step. A
#   target that holds the event loop (as a bomb inflated inside libcurl did, for
#   ~90 s) stops every scrape, and the test fails by far;
# - the daemon's peak RSS (VmHWM) stays under the bound docs/scraping.md states:
#   three times the body limit per scrape in flight, plus 256 MiB for the rest of
#   the daemon (generous for a sanitizer build; its quarantine is kept small);
#   the default body limit itself is tested in tests/unit/test_scrape.c;
# - SIGTERM with hostile transfers in flight ends the process within 10 s.
#
#   hostile.sh PROFD HOSTILE_TARGETS TESTDATA
set -euo pipefail

profd=$(realpath "$1")
hostile=$(realpath "$2")
data=$(cd "$3" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	[ -s "$tmp/targets.json" ] && jq -c '.data.activeTargets[] | [.scrapePool, .health, .lastError]' "$tmp/targets.json"
	tail -20 "$tmp/profd.log" 2>/dev/null
	exit 1
}
now_ms() { date +%s%3N; }

# a sanitizer's quarantine keeps freed memory resident; the bound is about profd's own
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"

# the normal target in a process of its own; the hostile ones, which would run on
# other machines, at a lower CPU priority, so that what they spend serving their
# bodies is not taken from the normal target's server
"$hostile" "$tmp/addr_ok" "$data/profiles/goapp/heap.pb.gz" 2>"$tmp/normal.log" &
pids+=($!)
nice -n 10 "$hostile" "$tmp/addr" "$data/profiles/goapp/heap.pb.gz" 2>"$tmp/hostile.log" &
pids+=($!)
for _ in $(seq 600); do [ -s "$tmp/addr" ] && [ -s "$tmp/addr_ok" ] && break; sleep 0.1; done
[ -s "$tmp/addr" ] && [ -s "$tmp/addr_ok" ] || fail "the targets did not start: $(cat "$tmp/hostile.log")"
addr=$(cat "$tmp/addr")
addr_ok=$(cat "$tmp/addr_ok")

# the normal target every second; the hostile ones every 4 s with a body limit of
# 16 MiB, but for those whose error must come from something else than the timeout
# and that a loaded machine may take long to get there: the encoded bomb, with the
# default limit (64 MiB) and 10 s (a gzip bomb of zeros inflates far slower than
# ordinary data: zlib copies its matches of distance 1 byte by byte); the redirect
# loop, 10 s, on the normal target's server (11 requests, which a server at a
# lower priority beside a CPU hog did not all answer within 10 s, while serving
# them costs nothing that the normal target would miss); the endless body, 30 s
# and a limit of 4 MiB (that server may send a few hundred KiB a second when the
# machine is loaded many times over); the many locations, 30 s (its body waits
# for one of the two workers of large bodies, which the bombs may hold up to their
# timeouts)
limit=$((16 << 20))
endless_limit=$((4 << 20))
default_limit=$((64 << 20))
job() { # name address path [interval timeout [body_size_limit]]
	cat <<EOJ
  - job_name: $1
    static_configs:
      - targets: ['$2']
${4:+    scrape_interval: $4
    scrape_timeout: $5
}${6:+    body_size_limit: $6
}    profiling_config:
      pprof_config:
        heap: {path: $3}
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}
EOJ
}
{
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n'
	job normal "$addr_ok" /ok
	job encoded-bomb "$addr" /encoded-bomb 10s 10s
	job gzip-bomb "$addr" /gzip-bomb 4s 4s 16MiB
	job endless "$addr" /endless 30s 30s 4MiB
	job trickle "$addr" /trickle 4s 2s 16MiB
	job garbage "$addr" /garbage 4s 4s 16MiB
	job many-locations "$addr" /many-locations 30s 30s 16MiB
	job redirect-loop "$addr_ok" /redirect-loop 10s 10s 16MiB
	job empty-samples "$addr" /empty-samples 4s 4s
	job raw-empty-samples "$addr" /raw-empty-samples 4s 4s
} >"$tmp/profd.yml"
# the reference: the normal target alone
{
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n'
	job normal "$addr_ok" /ok
} >"$tmp/ref.yml"
"$profd" run --config.file="$tmp/ref.yml" --storage.tsdb.path="$tmp/ref" \
	--web.listen-address=127.0.0.1:0 2>"$tmp/ref.log" &
pids+=($!)
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 2>"$tmp/profd.log" &
profd_pid=$!
pids+=($profd_pid)
port=
for _ in $(seq 300); do
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || fail "profd did not start"
api="http://127.0.0.1:$port"
ref_port=
for _ in $(seq 300); do
	ref_port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/ref.log" 2>/dev/null | head -1 || true)
	[ -n "$ref_port" ] && break
	sleep 0.1
done
[ -n "$ref_port" ] || fail "the reference profd did not start: $(tail -5 "$tmp/ref.log")"
ref_api="http://127.0.0.1:$ref_port"

# every hostile target down with its own reason (extended regular expressions),
# each seen at least once within 180 s: a later scrape of the same target may end
# otherwise on a loaded machine (a timeout). A bomb stops at the body limit or, on
# a machine too busy to inflate that much within the timeout, at the timeout:
# either names what it was doing.
declare -A want=(
	[encoded-bomb]="^(body size limit exceeded \(limit $default_limit bytes\)|scrape_timeout of 10s exceeded while undoing) .*Content-Encoding gzip"
	[gzip-bomb]="^(not a valid profile: gzip: decompressed size exceeds the limit of $limit bytes|scrape_timeout of 4s exceeded while inflating the profile)"
	[endless]="^body size limit exceeded \(limit $endless_limit bytes\)$"
	[trickle]="^scrape_timeout of 2s exceeded: Operation timed out"
	[garbage]="^not a valid profile: malformed protobuf"
	[many-locations]="^profile too large to decode within the body size limit: decoding needs more than the memory limit of $limit bytes"
	[redirect-loop]="^Maximum \(10\) redirects followed"
	[empty-samples]="^profile refused for the decompression_ratio limit \(--storage.tsdb.max-profile-gzip-ratio\): gzip: decompressed size exceeds 100 times the compressed size"
	[raw-empty-samples]="^profile too large to decode within the decoded size limit \(--storage.tsdb.max-profile-decoded-size\): decoding needs more than the memory limit of $default_limit bytes"
)
declare -A seen=()
deadline=$(($(now_ms) + 180000))
while :; do
	curl -fsS --max-time 10 "$api/api/v1/targets" -o "$tmp/targets.json" || fail "GET /api/v1/targets"
	missing=()
	for j in "${!want[@]}"; do
		[ -n "${seen[$j]:-}" ] && continue
		err=$(jq -r --arg j "$j" '.data.activeTargets[] | select(.scrapePool == $j and .health == "down") | .lastError' "$tmp/targets.json")
		if [[ "$err" =~ ${want[$j]} ]]; then seen[$j]=1; else missing+=("$j: ${err:-no error yet}"); fi
	done
	[ ${#missing[@]} = 0 ] && break
	[ "$(now_ms)" -lt "$deadline" ] || fail "after 180 s, no expected error yet for: $(printf '[%s] ' "${missing[@]}")"
	sleep 0.2
done
echo "every hostile target is down with its own reason"

# the normal target keeps its schedule: its samples from t0 until the reference
# has stored 15 (read once a later tick's sample landed, or 15 s after that)
samples() { # API START OUT: the normal target's timestamps from START on, one a line
	curl -fsS --max-time 10 -G "$1/api/v1/query_range" --data-urlencode 'query=heap{job="normal"}' \
		--data-urlencode "start=$(($2 / 1000))" --data-urlencode "end=$(($(now_ms) / 1000 + 1))" \
		-o "$tmp/qr.json" &&
		jq -r --argjson t "$2" '.data[0].timestamps[]? | select(. >= $t)' "$tmp/qr.json" >"$3"
}
widest() { # the widest step between the timestamps given as arguments
	local w=0 a=("$@") i
	for ((i = 1; i < ${#a[@]}; i++)); do [ $((a[i] - a[i - 1])) -gt "$w" ] && w=$((a[i] - a[i - 1])); done
	echo "$w"
}
t0=$((($(now_ms) + 999) / 1000 * 1000))
deadline=$((t0 + 180000))
while :; do
	samples "$ref_api" "$t0" "$tmp/ref.ts" || fail "query_range (reference)"
	mapfile -t ref <"$tmp/ref.ts"
	[ ${#ref[@]} -ge 15 ] && break
	[ "$(now_ms)" -lt "$deadline" ] || fail "the reference stored ${#ref[@]} profiles in 180 s, want 15: ${ref[*]}"
	sleep 0.2
done
t1=${ref[14]}
deadline=$(($(now_ms) + 15000))
while :; do
	samples "$api" "$t0" "$tmp/all.ts" || fail "query_range"
	mapfile -t all <"$tmp/all.ts"
	[ ${#all[@]} -gt 0 ] && [ "${all[-1]}" -gt "$t1" ] && break # so did every earlier one that will
	[ "$(now_ms)" -lt "$deadline" ] || break
	sleep 0.2
done
ts=()
for t in "${all[@]}"; do [ "$t" -le "$t1" ] && ts+=("$t"); done
ref_widest=$(widest "${ref[@]:0:15}")
max_step=$((2 * ref_widest > 4000 ? 2 * ref_widest : 4000))
ticks=$(((t1 - t0) / 1000 + 1))
echo "the reference stored 15 profiles in $ticks ticks (widest step $ref_widest ms): ${ref[*]:0:15}"
[ ${#ts[@]} -ge 8 ] ||
	fail "the normal target stored ${#ts[@]} profiles while the reference stored 15 (in $ticks ticks of 1 s), want at least 8: ${ts[*]}"
for ((i = 1; i < ${#ts[@]}; i++)); do
	[ $((ts[i] - ts[i - 1])) -le "$max_step" ] ||
		fail "the normal target's samples $((i - 1)) and $i are $((ts[i] - ts[i - 1])) ms apart, want at most $max_step (the reference's widest step: $ref_widest ms)"
done
# and its status says so (at its next successful scrape: one may time out on a
# loaded machine)
deadline=$(($(now_ms) + 60000))
while :; do
	curl -fsS --max-time 10 "$api/api/v1/targets" -o "$tmp/targets.json" || fail "GET /api/v1/targets"
	health=$(jq -r '.data.activeTargets[] | select(.scrapePool == "normal") | .health' "$tmp/targets.json")
	[ "$health" = up ] && break
	[ "$(now_ms)" -lt "$deadline" ] || fail "the normal target is $health (waited 60 s)"
	sleep 0.2
done
echo "the normal target kept its 1 s schedule: ${#ts[@]} profiles in $ticks ticks: ${ts[*]}"

# memory (docs/scraping.md): three body limits for each of the two decodings of
# large bodies that may run at once, one body limit for each other loop (a body
# received or waiting), plus 256 MiB for the rest of the daemon
bound=$(((2 * 3 * default_limit + 6 * limit) / 1024 + 256 * 1024))
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$profd_pid/status")
echo "peak RSS ${hwm} kB, bound ${bound} kB"
[ "$hwm" -lt "$bound" ] || fail "peak RSS ${hwm} kB is over the bound of ${bound} kB"

# SIGTERM with hostile scrapes in flight: the process ends within 10 s
kill -TERM "$profd_pid"
t=$(now_ms)
for _ in $(seq 100); do kill -0 "$profd_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$profd_pid" 2>/dev/null && fail "profd still runs 10 s after SIGTERM"
rc=0
wait "$profd_pid" || rc=$?
[ "$rc" = 0 ] || fail "profd exited with status $rc after SIGTERM"
echo "SIGTERM: stopped in $(($(now_ms) - t)) ms"
echo PASS
