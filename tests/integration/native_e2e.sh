#!/usr/bin/env bash
# native_e2e.sh: a real native CPU profile symbolized by a running profd, end to end.
# tests/native_e2e/hot.c (a hot loop with an inlined helper) is built with
# gcc -g -O2 -Wl,--build-id and gperftools' -lprofiler, and run with CPUPROFILE
# until its profile has at least 50 samples. The binary that runs is a copy made
# with strip --strip-all (its build-id note kept, no symbols or DWARF), so its own
# file cannot name anything; the unstripped build is the debug file. The profile,
# pushed as gperftools wrote it, is queried with report=top:
#   1. the debug file served by Debian's debuginfod (--symbolizer.debuginfod-urls);
#   2. the debug file uploaded (PUT /api/v1/debuginfo/<build-id>), no debuginfod;
#      and then in a local .build-id directory (--symbolizer.debug-dirs);
#   3. a debuginfod that never answers, then one whose port is closed: answered
#      within --symbolizer.timeout and a margin, X-Profd-Symbolized: partial, the
#      program's frames named hot+0x<offset>.
# In 1 and 2 the program's functions (the inlined helper a function of its own)
# have the flat and cum that google/pprof's driver gives them symbolizing with GNU
# addr2line against the unstripped binary: the reference is built here from the
# source Debian's golang-github-google-pprof-dev ships (go tool pprof would not do:
# it reads DWARF itself and leaves out inlined frames). Last, profd's own CPU profile
# (/debug/pprof/profile, pushed back to it) names libc functions that only
# libc6-dbg's debug file has (in neither libc's .dynsym nor the stored profile).
#
#   native_e2e.sh PROFD CC HOT_C
set -euo pipefail
profd=$(realpath "$1")
cc=$2
hot_c=$(realpath "$3")
hung_py=$(dirname "$hot_c")/../symbolize/hung_server.py
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
# shellcheck source=../support/ports.sh
. "$(dirname "$0")/../support/ports.sh"

# ---- the reference: google/pprof from Debian's source, with GNU addr2line only ---------
GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS="" GOCACHE=${GOCACHE:-$HOME/.cache/go-build} \
	go build -o "$tmp/pprof" github.com/google/pprof || fail "building google/pprof"
mkdir "$tmp/tools"
for t in addr2line nm objdump; do ln -s "$(command -v $t)" "$tmp/tools/$t"; done
# PPROF_TOOLS with no llvm-symbolizer in it: pprof uses addr2line -i
ref() { PPROF_TOOLS=$tmp/tools "$tmp/pprof" "$@"; }

# ---- the program, its stripped copy, and a profile of at least 50 samples ---------------
mkdir "$tmp/build" "$tmp/bin" "$tmp/served"
"$cc" -g -O2 -Wl,--build-id -o "$tmp/build/hot" "$hot_c" -Wl,--no-as-needed -lprofiler
strip --strip-all -o "$tmp/bin/hot" "$tmp/build/hot"
bid=$(readelf -n "$tmp/bin/hot" | awk '/Build ID/ {print $3}')
[ -n "$bid" ] || fail "the stripped binary has no build id"
[ "$bid" = "$(readelf -n "$tmp/build/hot" | awk '/Build ID/ {print $3}')" ] || fail "strip changed the build id"
if nm "$tmp/bin/hot" 2>/dev/null | grep -q hot_loop; then fail "the stripped binary has symbols"; fi
cp "$tmp/build/hot" "$tmp/served/hot"
run_ms=300 samples=0
deadline=$((SECONDS + 120))
while [ "$samples" -lt 50 ]; do
	[ "$SECONDS" -lt "$deadline" ] || fail "no 50 samples within 120 s (last: $samples)"
	rm -f "$tmp/hot.cpu"
	CPUPROFILE=$tmp/hot.cpu CPUPROFILE_FREQUENCY=500 "$tmp/bin/hot" "$run_ms" >/dev/null
	samples=$(ref -symbolize=none -sample_index=samples -top "$tmp/hot.cpu" 2>/dev/null |
		sed -n 's/.* of \([0-9]*\) total.*/\1/p')
	samples=${samples:-0}
	run_ms=$((run_ms * 2))
done
# the reference table: "flat cum name" (ns) of the program's functions
ref -top -unit=ns -nodecount=1000 "$tmp/build/hot" "$tmp/hot.cpu" 2>/dev/null |
	awk '$2 ~ /%$/ && $3 ~ /%$/ {sub(/ns$/, "", $1); sub(/ns$/, "", $4); print $1, $4, $6}' | grep -E ' (mix|hot_loop|cool_loop|main)$' | sort -k3 >"$tmp/want.txt"
grep -q ' mix$' "$tmp/want.txt" || fail "the reference has no inlined mix: $(cat "$tmp/want.txt")"
grep -q ' hot_loop$' "$tmp/want.txt" || fail "the reference has no hot_loop: $(cat "$tmp/want.txt")"

# ---- profd ------------------------------------------------------------------------------
echo 'scrape_configs: []' >"$tmp/profd.yml"
prof_pid=
start_profd() { # start_profd DATA_DIR FLAGS...: (re)starts profd; sets api
	local data=$1
	shift
	stop_profd
	: >"$tmp/profd.log"
	DEBUGINFOD_CACHE_PATH=$tmp/client-$RANDOM "$profd" run --config.file="$tmp/profd.yml" \
		--storage.tsdb.path="$data" --web.listen-address=127.0.0.1:0 "$@" >"$tmp/profd.log" 2>&1 &
	prof_pid=$!
	pids+=("$prof_pid")
	wait_for 60 "profd did not start" listening
	api="http://127.0.0.1:$port"
}
stop_profd() {
	[ -n "$prof_pid" ] || return 0
	kill -TERM "$prof_pid" 2>/dev/null || true
	wait_for 30 "profd did not stop" stopped
	prof_pid=
}
stopped() { ! kill -0 "$prof_pid" 2>/dev/null; }
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
T=$(date +%s)
push() {
	curl -fsS -o /dev/null --data-binary "@$tmp/hot.cpu" \
		"$api/api/v1/profiles?labels=$(jq -rn '"cpu{job=\"hot\"}" | @uri')&time=$T" ||
		fail "pushing the gperftools profile"
}
q() { # q EXTRA: the query URL
	echo "$api/api/v1/query?query=$(jq -rn '"cpu{job=\"hot\"}" | @uri')&time=$T$1"
}
# check_symbolized WHAT: report=top has the reference's flat and cum for the program
check_symbolized() {
	local what=$1
	curl -fsS -D "$tmp/h" -o "$tmp/top.json" "$(q '&report=top')" || fail "$what: report=top"
	jq -r '.data.rows[] | "\(.flat) \(.cum) \(.name)"' "$tmp/top.json" |
		grep -E ' (mix|hot_loop|cool_loop|main)$' | sort -k3 >"$tmp/got.txt" || true
	diff "$tmp/want.txt" "$tmp/got.txt" >"$tmp/diff.txt" ||
		fail "$what: report=top differs from pprof (< pprof, > profd): $(cat "$tmp/diff.txt")
all of profd's rows: $(jq -c '[.data.rows[] | [.name, .flat, .cum]]' "$tmp/top.json")"
	jq -e '[.data.rows[] | select(.name == "mix")][0].inline == "inline"' "$tmp/top.json" >/dev/null ||
		fail "$what: mix is not marked inline: $(jq -c '.data.rows[] | select(.name == "mix")' "$tmp/top.json")"
	jq -e --arg t "$(awk '{s += $1} END {print s}' "$tmp/want.txt")" \
		'.data.total >= ($t | tonumber)' "$tmp/top.json" >/dev/null || fail "$what: total too small"
	if jq -e '[.data.rows[].name] | map(test("^hot\\+0x")) | any' "$tmp/top.json" >/dev/null; then
		fail "$what: unsymbolized frames of hot: $(jq -c '[.data.rows[].name]' "$tmp/top.json")"
	fi
	grep -qi '^X-Profd-Symbolized:' "$tmp/h" || fail "$what: no X-Profd-Symbolized header"
}
# the first query may come before the debug file is there: wait for the answer in full
# as far as hot goes (libc's frames may stay partial when libc6-dbg is not searched)
wait_symbolized() {
	local what=$1 deadline=$((SECONDS + 60))
	until curl -fsS -o "$tmp/top.json" "$(q '&report=top')" &&
		jq -e '[.data.rows[].name] | index("hot_loop") != null' "$tmp/top.json" >/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what: hot_loop never named: $(jq -c '[.data.rows[].name]' "$tmp/top.json")"
		sleep 0.2
	done
	check_symbolized "$what"
}

# ---- 1. from Debian's debuginfod serving the unstripped build ----------------------------
dport=$(pd_free_port)
debuginfod -F "$tmp/served" -p "$dport" -d "$tmp/debuginfod.sqlite" -t 1 -g 0 >"$tmp/debuginfod.log" 2>&1 &
pids+=($!)
served() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$dport/buildid/$bid/debuginfo" || true)" = 200 ]
}
wait_for 60 "debuginfod did not serve $bid" served
start_profd "$tmp/data1" --symbolizer.debug-dirs=/nonexistent/debug \
	--symbolizer.debuginfod-urls="http://127.0.0.1:$dport" --symbolizer.timeout=5s
push
wait_symbolized "debuginfod"
echo "1. debuginfod: $(tr '\n' ';' <"$tmp/got.txt")"

# ---- 2. uploaded, then in a .build-id directory -------------------------------------------
start_profd "$tmp/data2" --symbolizer.debug-dirs=/nonexistent/debug --symbolizer.debuginfod-urls=
push
code=$(curl -sS -o "$tmp/put.out" -w '%{http_code}' -T "$tmp/build/hot" "$api/api/v1/debuginfo/$bid")
case $code in 200 | 201 | 204) ;; *) fail "PUT /api/v1/debuginfo/$bid: $code $(cat "$tmp/put.out")" ;; esac
wait_symbolized "uploaded"
mkdir -p "$tmp/dbg/.build-id/${bid:0:2}"
cp "$tmp/build/hot" "$tmp/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
start_profd "$tmp/data3" --symbolizer.debug-dirs="$tmp/dbg" --symbolizer.debuginfod-urls=
push
wait_symbolized "--symbolizer.debug-dirs"
echo "2. uploaded and .build-id dir: same as pprof"

# ---- 3. a debuginfod that hangs, then one that is gone --------------------------------------
python3 "$hung_py" >"$tmp/hung.port" &
pids+=($!)
wait_for 20 "the hung server did not start" test -s "$tmp/hung.port"
dead=$(pd_free_port) # nothing listens there
hot_off=$(printf 'hot+0x%x' "$(
	read -r off va < <(readelf -lW "$tmp/build/hot" | awk '$1=="LOAD" && /R E/ {print $2, $3}')
	echo $((0x$(nm "$tmp/build/hot" | awk '$3=="hot_loop" {print $1}') - va + off))
)")
n=0
for url in "http://127.0.0.1:$(cat "$tmp/hung.port")" "http://127.0.0.1:$dead"; do
	n=$((n + 1))
	start_profd "$tmp/data4-$n" --symbolizer.debug-dirs=/nonexistent/debug \
		--symbolizer.debuginfod-urls="$url" --symbolizer.timeout=1s
	push
	t0=$(ms)
	curl -fsS -D "$tmp/h" -o "$tmp/top.json" "$(q '&report=top')" || fail "$url: report=top"
	took=$(($(ms) - t0))
	[ "$took" -lt 2500 ] || fail "$url: the query took $took ms with --symbolizer.timeout=1s"
	grep -qi '^X-Profd-Symbolized: partial' "$tmp/h" || fail "$url: not partial: $(cat "$tmp/h")"
	jq -e '[.data.rows[].name] | index("hot_loop") == null and (map(test("^hot\\+0x[0-9a-f]+$")) | any)' \
		"$tmp/top.json" >/dev/null || fail "$url: $(jq -c '[.data.rows[].name]' "$tmp/top.json")"
	# the hot loop's frames are within hot_loop, at or after its start
	jq -r '.data.rows[].name' "$tmp/top.json" | grep -q '^hot+0x' || fail "$url: no hot+0x names"
	echo "3.$n $url: partial in $took ms ($(jq -c '[.data.rows[].name][:3]' "$tmp/top.json"); hot_loop at $hot_off)"
done

# ---- profd's own CPU profile: libc's functions named from libc6-dbg -------------------------
libc=$(ldd "$profd" | awk '$1 ~ /^libc\.so/ {print $3}')
libc_bid=$(readelf -n "$libc" | awk '/Build ID/ {print $3}')
libc_dbg=/usr/lib/debug/.build-id/${libc_bid:0:2}/${libc_bid:2}.debug
[ -f "$libc_dbg" ] || fail "no $libc_dbg for $libc: libc6-dbg is not installed"
# the names only the debug file has (not in libc's .dynsym)
nm "$libc_dbg" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >"$tmp/libc.dbg"
nm -D --defined-only "$libc" | awk '{sub(/@.*/, "", $3); print $3}' | sort -u >"$tmp/libc.dyn"
comm -23 "$tmp/libc.dbg" "$tmp/libc.dyn" >"$tmp/libc.only"
start_profd "$tmp/data5" --symbolizer.debug-dirs=/usr/lib/debug --symbolizer.debuginfod-urls=
busy() { while :; do curl -s -o /dev/null "$api/api/v1/labels" || true; done; }
libc_named() {
	busy &
	local b=$!
	curl -fsS -o "$tmp/self.pb.gz" "$api/debug/pprof/profile?seconds=1" || true
	kill "$b" 2>/dev/null || true
	wait "$b" 2>/dev/null || true
	T=$(date +%s)
	curl -fsS -o /dev/null --data-binary "@$tmp/self.pb.gz" \
		"$api/api/v1/profiles?labels=$(jq -rn '"cpu{job=\"hot\"}" | @uri')&time=$T" || return 1
	curl -fsS -o "$tmp/self.json" "$(q '&report=top')" || return 1
	jq -r '.data.rows[].name' "$tmp/self.json" | sort -u >"$tmp/self.names"
	comm -12 "$tmp/self.names" "$tmp/libc.only" >"$tmp/self.libc"
	[ -s "$tmp/self.libc" ]
}
wait_for 60 "profd's own profile names none of libc's functions from libc6-dbg: $(jq -c '[.data.rows[].name]' "$tmp/self.json" 2>/dev/null)" libc_named
echo "4. profd's own profile: libc functions from libc6-dbg: $(head -3 "$tmp/self.libc" | tr '\n' ' ')"
stop_profd
echo "native_e2e.sh: ok"
