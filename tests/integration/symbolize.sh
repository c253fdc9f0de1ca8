#!/usr/bin/env bash
# symbolize.sh: a running profd symbolizes at query time. A C program is compiled
# here (gcc -g -O2, with inlined helpers) and its debug file put in the store's
# debuginfo/ directory (<storage.tsdb.path>/debuginfo/.build-id/xx/yyyy.debug);
# a profile of bare addresses in it (the binary absent) is pushed. Then:
#   - report=top names the program's functions, X-Profd-Symbolized: full, and
#     report=meta's symbolization says every location was resolved;
#   - report=proto carries the functions: go tool pprof -raw shows them;
#   - symbolize=false answers the stored addresses (binary+offset names);
#   - /api/v1/status/symbolizer and /metrics count what was done;
#   - a second program's build id is asked of a debuginfod that never answers:
#     the query is answered within --symbolizer.timeout (1s), partial, with
#     binary+offset names, and says so in its header, report=meta and warnings;
#   - after a restart with the debug file gone, the disk cache answers in full,
#     with --symbolizer.max-build-ids=1 (asking another build id evicts it).
#
#   symbolize.sh PROFD MAKE_PROFILE TESTS_SYMBOLIZE_DIR
set -euo pipefail
profd=$(realpath "$1")
make_profile=$(realpath "$2")
src=$(cd "$3" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail() {
	echo "FAIL: $*" >&2
	tail -20 "$tmp/profd.log" >&2 2>/dev/null || true
	exit 1
}
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}
ms() { date +%s%3N; }

# ---- two builds of the program, the first one's debug file in the store --------------
gcc -g -O2 -Wl,--build-id -o "$tmp/prog" "$src/prog.c"
gcc -g -O1 -Wl,--build-id -DOTHER -o "$tmp/other" "$src/prog.c"
bid=$(readelf -n "$tmp/prog" | awk '/Build ID/ {print $3}')
bid2=$(readelf -n "$tmp/other" | awk '/Build ID/ {print $3}')
[ "$bid" != "$bid2" ] || fail "the two builds have one build id"
mkdir -p "$tmp/data/debuginfo/.build-id/${bid:0:2}"
objcopy --only-keep-debug "$tmp/prog" "$tmp/data/debuginfo/.build-id/${bid:0:2}/${bid:2}.debug"
# the text segment as a process maps it, at a PIE base
read -r off va sz < <(readelf -lW "$tmp/prog" | awk '$1=="LOAD" && /R E/ {print $2, $3, $5}')
base=0x555555554000
start=$(printf %x $((base + va)))
limit=$(printf %x $((base + va + sz)))
addrs() { # the addresses of functions $2... of binary $1, in the process, +4
	local f=$1
	shift
	for fn in "$@"; do
		a=$(nm "$f" | awk -v n="$fn" '$3==n {print $1}')
		printf '%x ' $((base + 0x$a + 4))
	done
}
# shellcheck disable=SC2046
"$make_profile" "$tmp/p1.pb.gz" "$bid" /opt/app/bin/prog "$start" "$limit" "$off" \
	$(addrs "$tmp/prog" work other main)
read -r off2 va2 sz2 < <(readelf -lW "$tmp/other" | awk '$1=="LOAD" && /R E/ {print $2, $3, $5}')
# shellcheck disable=SC2046
"$make_profile" "$tmp/p2.pb.gz" "$bid2" /opt/app/bin/other "$(printf %x $((base + va2)))" \
	"$(printf %x $((base + va2 + sz2)))" "$off2" $(addrs "$tmp/other" work other)

# ---- a debuginfod that never answers ---------------------------------------------------
python3 "$src/hung_server.py" >"$tmp/hung.port" &
pids+=($!)
hung_port() { [ -s "$tmp/hung.port" ]; }
wait_for 20 "the hung server did not start" hung_port
hung="http://127.0.0.1:$(cat "$tmp/hung.port")"

# ---- profd -------------------------------------------------------------------------------
echo 'scrape_configs: []' >"$tmp/profd.yml"
DEBUGINFOD_CACHE_PATH=$tmp/client "$profd" run --config.file="$tmp/profd.yml" \
	--storage.tsdb.path="$tmp/data" --web.listen-address=127.0.0.1:0 \
	--symbolizer.debug-dirs=/nonexistent/debug --symbolizer.debuginfod-urls="$hung" \
	--symbolizer.timeout=1s >"$tmp/profd.log" 2>&1 &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start" listening
api="http://127.0.0.1:$port"
T=1700000000
curl -fsS -o /dev/null --data-binary "@$tmp/p1.pb.gz" \
	"$api/api/v1/profiles?labels=$(jq -rn '"profile{job=\"app\"}" | @uri')&time=$T" ||
	fail "pushing p1"
curl -fsS -o /dev/null --data-binary "@$tmp/p2.pb.gz" \
	"$api/api/v1/profiles?labels=$(jq -rn '"profile{job=\"other\"}" | @uri')&time=$T" ||
	fail "pushing p2"
q() { # q SELECTOR EXTRA: the query URL
	echo "$api/api/v1/query?query=$(jq -rn --arg v "$1" '$v | @uri')&time=$T$2"
}

# ---- symbolized from the store's debuginfo/ ---------------------------------------------
curl -fsS -D "$tmp/h1" -o "$tmp/top1.json" "$(q 'profile{job="app"}' '&report=top')" ||
	fail "report=top"
grep -qi '^X-Profd-Symbolized: full' "$tmp/h1" || fail "no X-Profd-Symbolized: full: $(cat "$tmp/h1")"
for fn in work other main; do
	jq -e --arg f "$fn" '[.data.rows[].name] | index($f) != null' "$tmp/top1.json" >/dev/null ||
		fail "report=top has no $fn: $(jq -c '[.data.rows[].name]' "$tmp/top1.json")"
done
curl -fsS -o "$tmp/meta1.json" "$(q 'profile{job="app"}' '&report=meta')" || fail "report=meta"
jq -e '.data.symbolization | .locations == 3 and .resolved == 3 and .partial == false' \
	"$tmp/meta1.json" >/dev/null || fail "report=meta: $(jq -c .data.symbolization "$tmp/meta1.json")"
# report=proto carries the functions and lines
curl -fsS -o "$tmp/p1.out.pb.gz" "$(q 'profile{job="app"}' '&report=proto')" || fail "report=proto"
go tool pprof -raw "$tmp/p1.out.pb.gz" >"$tmp/raw1.txt" 2>/dev/null || fail "go tool pprof -raw"
grep -q ' work /.*prog.c:' "$tmp/raw1.txt" || grep -q ' work .*prog.c' "$tmp/raw1.txt" ||
	fail "report=proto has no work with its file: $(cat "$tmp/raw1.txt")"
# Pyroscope's query API (for Grafana) symbolizes its merges the same way
qc() { # qc METHOD JSON: the answer of a querier.v1 call
	curl -fsS -D "$tmp/hq" -H 'Content-Type: application/json' --data-binary "$2" \
		"$api/querier.v1.QuerierService/$1"
}
ptype=$(qc ProfileTypes "{\"start\":\"$(((T - 60) * 1000))\",\"end\":\"$(((T + 60) * 1000))\"}" |
	jq -r '[.profileTypes[].ID | select(startswith("process_cpu:"))][0]')
[ -n "$ptype" ] && [ "$ptype" != null ] || fail "ProfileTypes has no process_cpu type"
qc SelectMergeStacktraces "$(jq -cn --arg t "$ptype" --arg s $(((T - 60) * 1000)) --arg e $(((T + 60) * 1000)) \
	'{profileTypeID: $t, labelSelector: "{job=\"app\"}", start: $s, end: $e, maxNodes: "1024"}')" >"$tmp/flame.json" ||
	fail "SelectMergeStacktraces"
for fn in work other main; do
	jq -e --arg f "$fn" '.flamegraph.names | index($f) != null' "$tmp/flame.json" >/dev/null ||
		fail "SelectMergeStacktraces has no $fn: $(jq -c .flamegraph.names "$tmp/flame.json")"
done
grep -qi '^X-Profd-Symbolized: full' "$tmp/hq" || fail "querier: no X-Profd-Symbolized: full: $(cat "$tmp/hq")"
# symbolize=false: what is stored
curl -fsS -D "$tmp/h0" -o "$tmp/top0.json" "$(q 'profile{job="app"}' '&report=top&symbolize=false')" ||
	fail "symbolize=false"
if grep -qi '^X-Profd-Symbolized' "$tmp/h0"; then fail "symbolize=false answered symbolized"; fi
jq -e '[.data.rows[].name] | index("work") == null' "$tmp/top0.json" >/dev/null ||
	fail "symbolize=false shows work"

# ---- a debuginfod that hangs: partial within the deadline ----------------------------------
t0=$(ms)
curl -fsS -D "$tmp/h2" -o "$tmp/top2.json" "$(q 'profile{job="other"}' '&report=top')" ||
	fail "report=top (hung debuginfod)"
took=$(($(ms) - t0))
[ "$took" -lt 1800 ] || fail "the query took $took ms with --symbolizer.timeout=1s"
[ "$took" -ge 900 ] || fail "the query took $took ms: it did not wait for the download"
grep -qi '^X-Profd-Symbolized: partial' "$tmp/h2" || fail "no X-Profd-Symbolized: partial: $(cat "$tmp/h2")"
w=$(printf 'other+0x%x' $((0x$(nm "$tmp/other" | awk '$3=="work" {print $1}') + 4 - va2 + off2)))
jq -e --arg f "$w" '[.data.rows[].name] | index($f) != null' "$tmp/top2.json" >/dev/null ||
	fail "report=top has no $w: $(jq -c '[.data.rows[].name]' "$tmp/top2.json")"
jq -e '.warnings | map(test("symbolization is partial")) | any' "$tmp/top2.json" >/dev/null ||
	fail "no warning: $(jq -c .warnings "$tmp/top2.json")"
curl -fsS -o "$tmp/meta2.json" "$(q 'profile{job="other"}' '&report=meta')" || fail "report=meta 2"
jq -e --arg b "$bid2" '.data.symbolization | .partial == true and .resolved == 0 and (.missing | contains($b))' \
	"$tmp/meta2.json" >/dev/null || fail "report=meta 2: $(jq -c .data.symbolization "$tmp/meta2.json")"

# ---- the status endpoint and the metrics ---------------------------------------------------
curl -fsS -o "$tmp/status.json" "$api/api/v1/status/symbolizer" || fail "status/symbolizer"
jq -e --arg d "$tmp/data/debuginfo" \
	'.data.enabled and .data.sources[0].path == $d and .data.sources[1].path == "/nonexistent/debug" and
	 (.data.sources | map(.type) | index("debuginfod") != null) and .data.misses == 3 and
	 .data.hits >= 3 and .data.inFlight == 1 and .data.fetches == 1 and .data.partial >= 1' \
	"$tmp/status.json" >/dev/null || fail "status/symbolizer: $(cat "$tmp/status.json")"
curl -fsS -o "$tmp/metrics" "$api/metrics" || fail "/metrics"
grep -q '^profd_symbolizer_cache_misses_total 3$' "$tmp/metrics" || fail "metrics: $(grep symbolizer "$tmp/metrics")"
grep -q '^profd_symbolizer_in_flight 1$' "$tmp/metrics" || fail "metrics: $(grep symbolizer "$tmp/metrics")"
grep -q '^profd_symbolizer_build_ids 2$' "$tmp/metrics" || fail "metrics: $(grep symbolizer "$tmp/metrics")"
grep -q '^profd_symbolizer_build_id_evictions_total 0$' "$tmp/metrics" ||
	fail "metrics: $(grep symbolizer "$tmp/metrics")"
# profd stops though a download hangs
kill -TERM "${pids[1]}"
stopped() { ! kill -0 "${pids[1]}" 2>/dev/null; }
wait_for 20 "profd did not stop with a download hanging" stopped

# ---- a restart without the debug file: the disk cache answers --------------------------------
rm -rf "$tmp/data/debuginfo"
: >"$tmp/profd.log"
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --symbolizer.debug-dirs=/nonexistent/debug \
	--symbolizer.debuginfod-urls= --symbolizer.timeout=0s --symbolizer.max-build-ids=1 \
	>"$tmp/profd.log" 2>&1 &
pids+=($!)
wait_for 60 "profd did not start again" listening
api="http://127.0.0.1:$port"
curl -fsS -D "$tmp/h3" -o "$tmp/top3.json" "$(q 'profile{job="app"}' '&report=top')" ||
	fail "report=top after the restart"
grep -qi '^X-Profd-Symbolized: full' "$tmp/h3" || fail "after the restart: $(cat "$tmp/h3")"
jq -e '[.data.rows[].name] | index("work") != null' "$tmp/top3.json" >/dev/null ||
	fail "after the restart report=top has no work: $(jq -c '[.data.rows[].name]' "$tmp/top3.json")"
curl -fsS -o "$tmp/status3.json" "$api/api/v1/status/symbolizer" || fail "status/symbolizer 3"
jq -e '.data.fetches == 0 and .data.hits == 3' "$tmp/status3.json" >/dev/null ||
	fail "after the restart: $(cat "$tmp/status3.json")"
# the other build id takes the only place: app's is evicted, and comes back
# from the disk cache
curl -fsS -o /dev/null "$(q 'profile{job="other"}' '&report=top')" || fail "report=top other 3"
other_failed() { # found nowhere now: no longer in use, so it can be evicted
	curl -fsS -o "$tmp/status4.json" "$api/api/v1/status/symbolizer" &&
		jq -e '.data.failures >= 1' "$tmp/status4.json" >/dev/null
}
wait_for 60 "the other build id was not given up on" other_failed
curl -fsS -D "$tmp/h4" -o "$tmp/top4.json" "$(q 'profile{job="app"}' '&report=top')" ||
	fail "report=top after the eviction"
grep -qi '^X-Profd-Symbolized: full' "$tmp/h4" || fail "after the eviction: $(cat "$tmp/h4")"
curl -fsS -o "$tmp/metrics4" "$api/metrics" || fail "/metrics 4"
grep -q '^profd_symbolizer_build_ids 1$' "$tmp/metrics4" || fail "metrics: $(grep symbolizer "$tmp/metrics4")"
grep -q '^profd_symbolizer_build_id_evictions_total 2$' "$tmp/metrics4" ||
	fail "metrics: $(grep symbolizer "$tmp/metrics4")"
echo "symbolize.sh: ok (hung debuginfod answered partial in $took ms)"
