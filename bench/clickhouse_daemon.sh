#!/usr/bin/env bash
# bench/clickhouse_daemon.sh: the daemon's write path with ClickHouse against the local
# store, on the same pushes in the same run. Every profile of the corpus is pushed
# (POST /api/v1/profiles, one curl each, one series per profile type) to a profd on a
# local store and to a profd with --storage.clickhouse.url (a clickhouse-server started
# here); the figures are the acknowledged pushes per second of each, and, for
# ClickHouse, the time from the first push until the spool is empty
# (profd_clickhouse_spool_profiles 0 and every profile sent).
#
# usage: bench/clickhouse_daemon.sh PROFD_BUILD_DIR
# Environment:
#   PD_CORPUS=DIR      the corpus (default: shared/corpus/prometheus beside the repo)
#   PD_BENCH_DIR=DIR   where the server's data and the stores go (default: the build dir)
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 PROFD_BUILD_DIR" >&2; exit 2; }
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}
profd=$build/profd
die() { echo "bench: $*" >&2; exit 1; }
[ -x "$profd" ] || die "$profd not found: build first"
[ -d "$corpus" ] || die "corpus $corpus not found (set PD_CORPUS)"
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi
work=$(mktemp -d "${PD_BENCH_DIR:-$build}/ch-daemon-bench.XXXXXX")
. "$repo/tests/support/clickhouse.sh"
pids=()
cleanup() {
	ch_stop
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
ch_start "$work/server" 3600
printf 'global:\n  scrape_interval: 15s\nscrape_configs: []\n' >"$work/profd.yml"

# start NAME [FLAGS...]: sets $api
start() {
	local log=$work/$1.log port deadline=$((SECONDS + 60))
	shift
	timeout -k 5 3600 "$profd" run --config.file="$work/profd.yml" --storage.tsdb.path="$work/$1" \
		--web.listen-address=127.0.0.1:0 "${@:2}" 2>"$log" &
	pids+=($!)
	until port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" 2>/dev/null | head -1) &&
		[ -n "$port" ]; do
		[ $SECONDS -lt $deadline ] || die "profd did not start: $(tail -5 "$log")"
		sleep 0.1
	done
	api=http://127.0.0.1:$port
}
metric() { curl -fsS "$api/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
files=()
for dir in "$corpus"/*/; do
	for f in "$dir"*.pb.gz; do files+=("$f"); done
done
n=${#files[@]}
[ "$n" -gt 0 ] || die "no profiles in $corpus"
base=$(($(date +%s) - 86400))
# push_all: every file once, each type its own series, times ascending; prints seconds
push_all() {
	local t0=$EPOCHREALTIME i=0 type
	for f in "${files[@]}"; do
		type=$(basename "$(dirname "$f")")
		i=$((i + 1))
		code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "@$f" \
			"$api/api/v1/profiles?labels=$type%7Bjob%3D%22bench%22%7D&time=$((base + i))")
		[ "$code" = 200 ] || die "push of $f answered $code"
	done
	echo "$t0 $EPOCHREALTIME" | awk '{ printf "%.3f", $2 - $1 }'
}

start local local
local_s=$(push_all)
start ch ch --storage.clickhouse.url="$CH_URL"
t0=$EPOCHREALTIME
ch_s=$(push_all)
deadline=$((SECONDS + 600))
until [ "$(metric profd_clickhouse_spool_profiles)" = 0 ] &&
	[ "$(metric profd_clickhouse_sent_profiles_total)" -ge "$n" ]; do
	[ $SECONDS -lt $deadline ] || die "the spool did not drain in 600 s"
	sleep 0.05
done
drain_s=$(echo "$t0 $EPOCHREALTIME" | awk '{ printf "%.3f", $2 - $1 }')
stored=$(curl -sS "$CH_URL" --data-binary 'SELECT count() FROM profd.profiles')
[ "$stored" -ge "$n" ] || die "ClickHouse holds $stored profiles, want $n"

printf '%-44s %10s %10s %8s\n' "case ($n corpus profiles, one curl each)" "local" "clickhouse" "ratio"
awk -v n="$n" -v l="$local_s" -v c="$ch_s" 'BEGIN {
	printf "%-44s %10.1f %10.1f %8.2f\n", "pushes acknowledged per second", n / l, n / c, (n / c) / (n / l) }'
awk -v n="$n" -v l="$local_s" -v d="$drain_s" 'BEGIN {
	printf "%-44s %10.1f %10.1f %8.2f\n", "profiles per second, in ClickHouse (drained)", n / l, n / d, (n / d) / (n / l) }'
