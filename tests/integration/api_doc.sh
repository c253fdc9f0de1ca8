#!/usr/bin/env bash
# api_doc.sh: every curl example of docs/api.md works verbatim against the store
# of `make run`. The examples are taken from the page itself (each line of a ```sh
# block that starts with "curl", with its continuation lines), so a new or
# changed example is run too. profd runs with the jobs of examples/profd.yml:
# `profd` scraping profd itself and `demo` scraping a server of Go's profiles
# (the testdata ones, with the demo's `env` label), and with the admin and
# lifecycle APIs on. Each example must exit 0 with curl's --fail-with-body
# (HTTP 2xx), and a JSON answer must be a success with data: not empty, and a
# `result` or `timestamps` list not empty. /-/quit runs last.
#
#   api_doc.sh PROFD SERVE_PROFILES TESTDATA DOC
set -euo pipefail

profd=$(realpath "$1")
serve=$(realpath "$2")
data=$(cd "$3" && pwd)
doc=$(realpath "$4")
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -20 "$tmp/profd.log" 2>/dev/null; exit 1; }
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.5
	done
}

# ---- the examples, from the page ---------------------------------------------
awk '
	/^```sh$/ { insh = 1; next }
	/^```/ { insh = 0; cont = 0; next }
	!insh { next }
	cont { print; cont = /\\$/; if (!cont) print "\036"; next }
	/^curl / { print; cont = /\\$/; if (!cont) print "\036" }
' "$doc" >"$tmp/examples"
n=$(grep -c $'^\036$' "$tmp/examples" || true)
[ "$n" -ge 30 ] || fail "only $n curl examples found in $doc"

# ---- make run's jobs ---------------------------------------------------------
g=$data/profiles/goapp
"$serve" "$tmp/addr" "$tmp/served" \
	"/debug/pprof/heap=$g/heap.pb.gz,$g/heap-2.pb.gz,$g/heap-3.pb.gz" \
	"/debug/pprof/allocs=$g/allocs.pb.gz" "/debug/pprof/block=$g/block.pb.gz" \
	"/debug/pprof/goroutine=$g/goroutine.pb.gz" "/debug/pprof/mutex=$g/mutex.pb.gz" \
	"/debug/pprof/threadcreate=$g/threadcreate.pb.gz" \
	"/debug/pprof/profile=$g/cpu.pb.gz,$g/cpu-2.pb.gz,$g/cpu-3.pb.gz" &
pids+=($!)
wait_for 60 "the profile server did not start" test -s "$tmp/addr"
demo=$(cat "$tmp/addr")
printf 'global:\n  scrape_interval: 1s\n' >"$tmp/profd.yml"
timeout --foreground 300 "$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --web.enable-admin-api --web.enable-lifecycle \
	2>"$tmp/profd.log" &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start" listening
P=http://127.0.0.1:$port
# examples/profd.yml's two jobs, on these addresses and at a short interval
cat >"$tmp/profd.yml" <<EOC
global:
  scrape_interval: 2s
  scrape_timeout: 1900ms
scrape_configs:
  - job_name: profd
    static_configs:
      - targets: ['127.0.0.1:$port']
    profiling_config:
      pprof_config:
        profile: {seconds: 1}
        heap: {}
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        threadcreate: {enabled: false}
  - job_name: demo
    static_configs:
      - targets: ['$demo']
        labels:
          env: dev
EOC
curl -fsS -X POST "$P/-/reload" >/dev/null || fail "reload"
# the diffs reach 30 s back: wait until the demo's first heap profile is older
first_heap() {
	curl -fsS -G "$P/api/v1/query_range" --data-urlencode 'query=heap{job="demo"}' \
		--data-urlencode "start=$(($(date +%s) - 600))" |
		grep -o '"timestamps":\[[0-9]*' | grep -o '[0-9]*$'
}
old_enough() {
	local t
	t=$(first_heap) || return 1
	[ -n "$t" ] && [ $(($(date +%s) - t / 1000)) -ge 32 ]
}
wait_for 120 "no heap profile of the demo job 32 s old" old_enough
has() { curl -fsS -G "$P/api/v1/query_range" --data-urlencode "query=$1" | grep -q '"timestamps":\[[0-9]'; }
wait_for 60 "no CPU profile of the demo job" has 'profile{job="demo"}'
# (a sanitizer build has no heap profile of its own: its CPU profile it has)
wait_for 60 "no CPU profile of profd" has 'profile{job="profd"}'

# ---- run them ----------------------------------------------------------------
# the push examples send ./heap.pb.gz at its time_nanos: a heap profile of
# testdata dated now (a time_nanos field appended to the message, which a
# protobuf decoder takes over the first), as a profile just taken would be.
# With the file's own date the pushes would fall behind the retention time
# measured from the scrapes (now) once the file is 15 days old.
varint() {
	local v=$1 out=""
	while [ "$v" -ge 128 ]; do
		out+=$(printf '\\%03o' $(((v & 127) | 128)))
		v=$((v >> 7))
	done
	out+=$(printf '\\%03o' "$v")
	printf "$out"
}
{
	gunzip -c "$g/heap.pb.gz"
	printf '\110' # field 9 (time_nanos), varint
	varint "$(date +%s)000000000"
} | gzip >"$tmp/heap.pb.gz"
mkdir -p "$tmp/run"
# (an example piped into head stops reading early: curl's "failed writing body",
# exit 23, is then the reader's choice, not a failed request; the output is checked)
curl() {
	local rc=0
	command curl --fail-with-body -sS "$@" || rc=$?
	[ "$rc" = 23 ] && rc=0
	return "$rc"
}
export -f curl
export P
# JSON answers: a success whose data is not empty, nor a result or timestamps list
check_json() {
	jq -e '.status == "success" and .data != null and .data != [] and .data != {} and
		((.data | type) != "object" or ((.data.result // [1]) != [] ))' >/dev/null
}
last=""
i=0
while IFS= read -r -d $'\036' ex; do
	ex=${ex#$'\n'}
	[ -n "$ex" ] || continue
	if grep -q -- '/-/quit' <<<"$ex"; then
		last=$ex
		continue
	fi
	i=$((i + 1))
	out=$(cd "$tmp" && bash -o pipefail -c "$ex" 2>&1) || fail "example $i exits $?:
$ex
$out"
	if [ "${out:0:1}" = "{" ]; then
		check_json <<<"$out" || fail "example $i answers no data:
$ex
$(head -c 600 <<<"$out")"
	elif [ -z "$out" ] && ! grep -q -- '-X POST\|-OJ' <<<"$ex"; then
		fail "example $i printed nothing:
$ex"
	fi
	echo "ok $i: $(head -1 <<<"$ex" | cut -c1-110)"
done <"$tmp/examples"
ls "$tmp"/*.pb.gz | grep -qv '/heap.pb.gz$' || fail "the -OJ example saved no file"
[ -n "$last" ] || fail "no /-/quit example"
out=$(bash -c "$last" 2>&1) || fail "the /-/quit example: $out"
echo "ok: $last"
echo "PASS: $((i + 1)) examples"
