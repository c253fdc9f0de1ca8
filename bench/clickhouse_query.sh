#!/usr/bin/env bash
# bench/clickhouse_query.sh: a merge of 1,000 profiles through the query API, from
# ClickHouse against the local store, and go tool pprof over the same files, in the
# same run. The heap profiles of the corpus are spread over series (each series the
# corpus's heap files in turn) until there are PD_BENCH_PROFILES of them; they are
# imported into a local store (`profd tsdb import`) and written to a ClickHouse
# server started here (tests/clickhouse_tool, the writer profd uses); two profd
# servers answer `mode=merge&report=top` over them, each timed as the median of
# PD_BENCH_RUNS requests; go tool pprof -top over the same files is timed once.
# Printed: each time, and the ratios to the local store.
#
# usage: bench/clickhouse_query.sh PROFD_BUILD_DIR
#        (a build with PD_TESTS=ON, which builds tests/clickhouse_tool; Release for
#        figures worth quoting; needs clickhouse-server and go)
# Environment:
#   PD_CORPUS=DIR        the corpus (default: shared/corpus/prometheus beside the repo)
#   PD_BENCH_PROFILES=N  profiles merged (default 1000)
#   PD_BENCH_RUNS=N      requests per server (default 5)
#   PD_BENCH_DIR=DIR     where the server's data and the store go (default: the build dir)
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 PROFD_BUILD_DIR" >&2; exit 2; }
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}
total=${PD_BENCH_PROFILES:-1000}
runs=${PD_BENCH_RUNS:-5}
profd=$build/profd
tool=$build/tests/clickhouse_tool
die() { echo "bench: $*" >&2; exit 1; }
[ -x "$profd" ] || die "$profd not found: build first"
[ -x "$tool" ] || die "$tool not found: configure with PD_TESTS=ON and build"
[ -d "$corpus/heap" ] || die "corpus $corpus/heap not found (set PD_CORPUS)"
if grep -q '^PD_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	echo "bench: warning: $build has sanitizers on: this measures the sanitizer" >&2
fi
work=$(mktemp -d "${PD_BENCH_DIR:-$build}/ch-query-bench.XXXXXX")
pids=()
. "$repo/tests/support/clickhouse.sh"
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ "${#pids[@]}" = 0 ] || wait "${pids[@]}" 2>/dev/null || true
	ch_stop
	rm -rf "$work"
}
trap cleanup EXIT
export HOME=${HOME:-$work} PPROF_TMPDIR=$work
now() { date +%s.%N; }

mapfile -t heaps < <(ls "$corpus/heap" | grep '\.pb\.gz$' | sort -n)
nh=${#heaps[@]}
nseries=$(((total + nh - 1) / nh))
files=()
wargs=()
left=$total
for ((s = 0; s < nseries; s++)); do
	sfiles=()
	for ((i = 0; i < nh && left > 0; i++, left--)); do
		sfiles+=("$corpus/heap/${heaps[i]}")
		wargs+=("heap{job=\"bench\",instance=\"s$s\"}" auto "$corpus/heap/${heaps[i]}")
	done
	files+=("${sfiles[@]}")
	"$profd" tsdb import --storage.tsdb.path="$work/local" \
		--labels="heap{job=\"bench\",instance=\"s$s\"}" "${sfiles[@]}" >/dev/null 2>&1 ||
		die "profd tsdb import failed"
done
ch_start "$work/server" 3600
"$tool" schema "$CH_URL"
"$tool" write "$CH_URL" "${wargs[@]}" >/dev/null

printf 'global:\n  scrape_interval: 1m\n' >"$work/empty.yml"
# no retention: the corpus has the dates it was taken on, and a retention time
# measured from the clock (ClickHouse's days) would drop it once it is older
serve() { # name, storage directory, flags...: sets api to its URL
	local name=$1 dir=$2 deadline=$((SECONDS + 60))
	shift 2
	timeout 3600 "$profd" run --config.file="$work/empty.yml" --storage.tsdb.path="$dir" \
		--web.listen-address=127.0.0.1:0 --storage.tsdb.retention.time=0 "$@" >/dev/null \
		2>"$work/$name.log" &
	pids+=($!)
	until sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$work/$name.log" 2>/dev/null | grep -q .; do
		[ "$SECONDS" -lt "$deadline" ] || die "profd $name did not start"
		sleep 0.2
	done
	api="http://127.0.0.1:$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)"
}
serve local "$work/local"
local_api=$api
serve ch "$work/ch" --storage.clickhouse.url="$CH_URL"
ch_api=$api

# the range: every profile's time
mapfile -t ms < <(printf '%s\0' "${heaps[@]/#/$corpus/heap/}" | xargs -0 "$tool" filetime - | sort -n)
start=$((ms[0] / 1000))
end=$((ms[${#ms[@]} - 1] / 1000 + 1))
merge() { # api: seconds of one request
	local t0 t1
	t0=$(now)
	curl -fsS -G "$1/api/v1/query" --data-urlencode 'query=heap{job="bench"}' \
		--data-urlencode mode=merge --data-urlencode report=top --data-urlencode limit=20 \
		--data-urlencode "start=$start" --data-urlencode "end=$end" \
		--data-urlencode "max_profiles=$total" -o "$work/out.json"
	t1=$(now)
	grep -q '"status":"success"' "$work/out.json" || die "merge failed: $(head -c 300 "$work/out.json")"
	echo "$t1 - $t0" | bc -l
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
merge "$local_api" >/dev/null # warm both once
merge "$ch_api" >/dev/null
t_local=$(for ((r = 0; r < runs; r++)); do merge "$local_api"; done | median)
t_ch=$(for ((r = 0; r < runs; r++)); do merge "$ch_api"; done | median)
pprof_bin=$(go env GOTOOLDIR)/pprof
t0=$(now)
(cd "$work" && "$pprof_bin" -top -symbolize=none "${files[@]}" >/dev/null 2>&1)
t_pprof=$(echo "$(now) - $t0" | bc -l)

printf 'merge of %d heap profiles (%d series), report=top, median of %d requests:\n' \
	"$total" "$nseries" "$runs"
printf '  local store        %8.3f s\n' "$t_local"
printf '  ClickHouse         %8.3f s   %.2fx the local store\n' "$t_ch" "$(echo "$t_ch / $t_local" | bc -l)"
printf '  go tool pprof -top %8.3f s   %.2fx the local store (one run, files on disk)\n' \
	"$t_pprof" "$(echo "$t_pprof / $t_local" | bc -l)"
