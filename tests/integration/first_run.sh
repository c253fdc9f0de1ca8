#!/usr/bin/env bash
# first_run.sh: what a new user sees. On a fresh clone of the project (nothing built),
# `make run` builds profd and the demo program and starts both with
# examples/profd.yml; within 90 s of profd listening, profd's own CPU and heap
# profiles (job="profd") and the demo's heap profile (job="demo", when Go is
# installed) must be stored and answered by /api/v1/query_range, and `/` must be
# served. Then profd gets SIGTERM, as from systemd or `docker stop`: it must exit 0,
# `make run` with it, the demo program must be stopped, and the profiles must be on
# disk for `profd tsdb query`.
#
#   first_run.sh PROJECT_ROOT
#
# The clone is of what is committed in PROJECT_ROOT (git clone). To try uncommitted
# changes, FIRST_RUN_SOURCE=worktree copies the working tree instead (without build/,
# data/, .git/ and node_modules/), as is done when PROJECT_ROOT is not a git
# repository or git is not installed. make run listens on free loopback ports here
# (PROFD_LISTEN, PROFD_DEMO_ADDR; see scripts/run.sh) and builds with JOBS=2
# (FIRST_RUN_JOBS).
set -euo pipefail

src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
clone=$tmp/profd
run_pid=
cleanup() {
	if [ -n "$run_pid" ] && kill -0 "$run_pid" 2>/dev/null; then
		# make run and everything it started are in their own process group
		kill -TERM -- "-$run_pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$run_pid" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp}
fail() {
	echo "FAIL: $*"
	echo "--- make run output (last 40 lines)"
	tail -40 "$tmp/run.log" 2>/dev/null || true
	exit 1
}

# the project, fresh
if [ "${FIRST_RUN_SOURCE:-}" = worktree ] || [ ! -e "$src/.git" ] || ! command -v git >/dev/null; then
	mkdir -p "$clone"
	tar -C "$src" --exclude=./build --exclude=./data --exclude=./.git --exclude=node_modules -cf - . |
		tar -C "$clone" -xf -
else
	git clone -q "$src" "$clone"
fi
[ ! -e "$clone/build" ] || fail "the fresh copy already has a build/ directory"

# two free loopback ports: profd's and the demo program's
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 12000)) # below the kernel's ephemeral ports (32768-)
		# a refused connection means nothing listens there
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	fail "no free port found"
}
port=$(free_port)
demo_port=$(free_port)
[ "$port" != "$demo_port" ] || demo_port=$((port + 1))
api=http://127.0.0.1:$port

# `make run`, as the README says, in its own session so that everything it starts
# can be found and stopped; `timeout` is the last resort
start=$(date +%s)
# shellcheck source=../support/ccache.sh
. "$(dirname "$0")/../support/ccache.sh"
pd_ccache "$clone"
(cd "$clone" && exec setsid timeout 840 make run JOBS="${FIRST_RUN_JOBS:-2}" \
	PROFD_LISTEN="127.0.0.1:$port" PROFD_DEMO_ADDR="127.0.0.1:$demo_port") >"$tmp/run.log" 2>&1 &
run_pid=$!

# the build: until profd listens (or make run gives up)
for _ in $(seq 1500); do
	grep -q 'msg="listening"' "$tmp/run.log" 2>/dev/null && break
	kill -0 "$run_pid" 2>/dev/null || fail "make run ended before profd listened"
	sleep 0.5
done
grep -q 'msg="listening"' "$tmp/run.log" || fail "profd did not start listening within 750 s"
echo "first_run: profd listening on $api after $(($(date +%s) - start)) s (build included)"
grep -q "http://localhost:$port/" "$tmp/run.log" || fail "make run did not say where to look"

# the processes make run started: found by their binaries in the clone
pid_of() {
	local p
	for p in /proc/[0-9]*; do
		if [ "$(readlink "$p/exe" 2>/dev/null)" = "$1" ]; then
			echo "${p#/proc/}"
			return
		fi
	done
}
profd_pid=$(pid_of "$clone/build/release/profd")
[ -n "$profd_pid" ] || fail "no profd process from the clone"
want_demo=0
command -v go >/dev/null && want_demo=1
demo_pid=
if [ "$want_demo" = 1 ]; then
	for _ in $(seq 20); do
		demo_pid=$(pid_of "$clone/build/demo-go")
		[ -n "$demo_pid" ] && break
		sleep 0.5
	done
	[ -n "$demo_pid" ] || fail "Go is installed but make run did not start the demo program"
fi

has_profiles() { # selector: true when query_range lists a timestamp for it
	curl -fsS -G "$api/api/v1/query_range" --data-urlencode "query=$1" \
		--data-urlencode "start=$((start - 60))" 2>/dev/null | grep -q '"timestamps":\[[0-9]'
}
wanted=('heap{job="profd"}' 'profile{job="profd"}')
[ "$want_demo" = 1 ] && wanted+=('heap{job="demo"}')
listening=$(date +%s)
missing=("${wanted[@]}")
page=0
while [ $(($(date +%s) - listening)) -lt 90 ]; do
	left=()
	for sel in "${missing[@]}"; do has_profiles "$sel" || left+=("$sel"); done
	missing=(${left[@]+"${left[@]}"})
	if [ "$page" = 0 ] && curl -fsS "$api/" -o "$tmp/index.html" 2>/dev/null &&
		grep -qi '<html\|<!doctype' "$tmp/index.html"; then
		page=1
	fi
	[ ${#missing[@]} = 0 ] && [ "$page" = 1 ] && break
	kill -0 "$profd_pid" 2>/dev/null || fail "profd exited while running"
	sleep 2
done
if [ ${#missing[@]} != 0 ]; then
	echo "--- targets of job profd"
	curl -fsS "$api/api/v1/targets" | grep -o '"scrapeUrl":"[^"]*"\|"lastError":"[^"]*"\|"health":"[^"]*"' | paste - - - |
		grep "$port" || true
	fail "no profiles for ${missing[*]} within 90 s of profd listening"
fi
[ "$page" = 1 ] || fail "/ did not serve an HTML page"
echo "first_run: ${wanted[*]} stored, / served, $(($(date +%s) - listening)) s after profd listened"

# a report on profd's own CPU profile
curl -fsS -G "$api/api/v1/query" --data-urlencode 'query=profile{job="profd"}' \
	--data-urlencode report=top --data-urlencode limit=5 >"$tmp/top.json" || fail "top of profile{job=\"profd\"}"
grep -q '"status":"success"' "$tmp/top.json" || fail "top of profile{job=\"profd\"}: $(head -c 300 "$tmp/top.json")"

# SIGTERM to profd: it stops cleanly, make run ends with it, and the demo is stopped
kill -TERM "$profd_pid"
rc=0
wait "$run_pid" || rc=$?
run_pid=
[ "$rc" = 0 ] || fail "make run exited with $rc after SIGTERM to profd"
grep -q 'msg="stopped"' "$tmp/run.log" || fail "profd did not log a clean stop"
if [ -n "$demo_pid" ] && kill -0 "$demo_pid" 2>/dev/null; then
	fail "the demo program still runs after make run ended"
fi
[ -d "$clone/data/wal" ] || fail "no data/wal in the clone"
"$clone/build/release/profd" tsdb query "$clone/data" '{job="profd"}' >"$tmp/stored.txt" 2>&1 ||
	fail "profd tsdb query: $(cat "$tmp/stored.txt")"
grep -q '^heap{' "$tmp/stored.txt" && grep -q '^profile{' "$tmp/stored.txt" ||
	fail "the stored data lacks profd's profiles: $(cat "$tmp/stored.txt")"
echo "first_run: clean stop; stored: $(tr '\n' ' ' <"$tmp/stored.txt" | head -c 300)"
