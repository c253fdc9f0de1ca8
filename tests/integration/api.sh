#!/usr/bin/env bash
# api.sh: what the API returns is what the target served. profd run scrapes a target
# that serves known files in turn (tests/support/serve_profiles); then, over HTTP:
# each profile fetched with report=proto prints under go tool pprof -raw exactly as
# the file served for that scrape, a merge over the range equals go tool pprof's
# merge of the same files, and a diff of two scrapes equals go tool pprof -diff_base.
#
#   api.sh PROFD SERVE_PROFILES TESTDATA
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
fail() { echo "FAIL: $*"; tail -20 "$tmp/profd.log" 2>/dev/null; exit 1; }
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

g=$data/profiles/goapp
"$serve" "$tmp/addr" "$tmp/served" "/debug/pprof/heap=$g/heap.pb.gz,$g/heap-2.pb.gz,$g/heap-3.pb.gz" \
	"/debug/pprof/goroutine=$g/goroutine.pb.gz" &
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
# four heap scrapes stored (one a second)
heap_samples() {
	curl -fsS -G "$api/api/v1/query_range" --data-urlencode 'query=heap{job="served"}' \
		--data-urlencode "start=$(($(date +%s) - 120))" 2>/dev/null |
		grep -o '"timestamps":\[[0-9,]*' | tr ',' '\n' | grep -c '[0-9]' | grep -q '^[4-9]\|^[1-9][0-9]'
}
wait_for 120 "fewer than 4 heap samples were stored" heap_samples

curl -fsS -G "$api/api/v1/query_range" --data-urlencode 'query=heap{job="served"}' \
	--data-urlencode "start=$(($(date +%s) - 120))" >"$tmp/qr.json"
mapfile -t ts < <(grep -o '"timestamps":\[[0-9,]*' "$tmp/qr.json" | sed 's/.*\[//' | tr ',' '\n')
mapfile -t files < <(awk '$1 == "/debug/pprof/heap" {print $2}' "$tmp/served")
n=${#ts[@]}
[ "$n" -ge 4 ] || fail "only $n heap samples"
[ "${#files[@]}" -ge "$n" ] || fail "$n samples but ${#files[@]} requests"
# timestamps advance at the interval
for ((i = 1; i < n; i++)); do
	[ $((ts[i] - ts[i - 1])) = 1000 ] || fail "samples $((i - 1)) and $i are $((ts[i] - ts[i - 1])) ms apart"
done
sec() { echo "$(($1 / 1000)).$(printf %03d $(($1 % 1000)))"; }
get() { # out, curl args...
	local out=$1
	shift
	curl -fsS -G "$api/api/v1/query" --data-urlencode report=proto "$@" -o "$tmp/$out" || fail "query $*"
}
raw() { (cd "$tmp" && go tool pprof -raw -symbolize=none "$@" 2>&1); }
top() { (cd "$tmp" && go tool pprof -top -nodefraction=0 -symbolize=none "$@" 2>&1 | sed -n '/^Showing/,$p'); }

checks=0
for ((i = 0; i < 3; i++)); do
	get one.pb.gz --data-urlencode 'query=heap{job="served"}' --data-urlencode "time=$(sec "${ts[i]}")"
	diff <(raw one.pb.gz) <(raw "${files[i]}") >/dev/null ||
		fail "sample $i: the API's profile differs from the served ${files[i]} under -raw"
	checks=$((checks + 1))
done

get merged.pb.gz --data-urlencode 'query=heap{job="served"}' --data-urlencode mode=merge --data-urlencode aggregation=sum \
	--data-urlencode "start=$(sec "${ts[0]}")" --data-urlencode "end=$(sec "${ts[n - 1]}")"
for idx in 0 1 2 3; do
	diff <(top -sample_index=$idx merged.pb.gz) <(top -sample_index=$idx "${files[@]:0:n}") >"$tmp/d" ||
		{ head "$tmp/d"; fail "merge of $n profiles [$idx] differs from go tool pprof's"; }
	checks=$((checks + 1))
done

get diff.pb.gz --data-urlencode mode=diff --data-urlencode 'a.query=heap{job="served"}' \
	--data-urlencode "a.time=$(sec "${ts[0]}")" --data-urlencode 'b.query=heap{job="served"}' \
	--data-urlencode "b.time=$(sec "${ts[1]}")"
for idx in 0 1 2 3; do
	diff <(top -sample_index=$idx diff.pb.gz) <(top -sample_index=$idx -diff_base="${files[0]}" "${files[1]}") >"$tmp/d" ||
		{ head "$tmp/d"; fail "diff [$idx] differs from go tool pprof -diff_base"; }
	checks=$((checks + 1))
done
echo "api: $n scrapes, $checks comparisons with what was served"
