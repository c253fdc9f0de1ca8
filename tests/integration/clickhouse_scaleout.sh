#!/usr/bin/env bash
# clickhouse_scaleout.sh: the scale-out topology of docs/scale-out.md, run with the
# configurations of examples/scale-out/ (their targets, listen addresses and
# intervals replaced for the test):
#   - two ClickHouse servers as the two shards of one cluster (no ZooKeeper)
#   - profd scrapers 0 and 1 with the example's hashmod relabeling, each writing
#     through its own node, and a third profd with no scrape configs
#   - targets are serve_profiles servers, which log every profile they answer
# Checked: each scraper scrapes exactly the targets whose address hashes to its
# number; once the targets stop, every profile the scrapers stored (their
# profd_profiles_appended_total) is listed by the third profd (/api/v1/series, and
# /api/v1/query_range: a timestamp per answer of the targets, but for a scrape under
# way when they stopped);
# the stored profiles, rebuilt through the other node, print the same under
# `go tool pprof -raw` as the files served; the rows are on both shards.
#
#   clickhouse_scaleout.sh PROFD SERVE_PROFILES CLICKHOUSE_TOOL TESTDATA EXAMPLES
set -euo pipefail

profd=$(realpath "$1")
serve=$(realpath "$2")
tool=$(realpath "$3")
data=$(cd "$4" && pwd)
ex=$(cd "$5/scale-out" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
. "$here/support/clickhouse.sh"
pids=()
target_pids=()
cleanup() {
	for p in "${pids[@]}" "${target_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}" "${target_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	ch_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
pprof_bin=$(go env GOTOOLDIR)/pprof
[ -x "$pprof_bin" ] || pprof_bin="go tool pprof"
gopprof() { (cd "$tmp" && $pprof_bin -symbolize=none "$@"); }
fail=0
checked=0
check() { checked=$((checked + 1)); }
failed() { echo "FAIL: $*"; fail=1; }
die() {
	echo "FAIL: $*"
	for f in "$tmp"/profd-*.log; do echo "--- $f"; tail -15 "$f"; done
	exit 1
}
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || die "$what (waited ${timeout} s)"
		sleep 0.5
	done
}

ch_start_cluster "$tmp/ch" profd_cluster 1700
A=$CH_URL_A B=$CH_URL_B

# ---- targets: until both scrapers have one ------------------------------------------
g=$data/profiles/goapp
shard_of() { # ADDR: the scraper that keeps it, as hashmod computes it
	python3 -c 'import hashlib, struct, sys
print(struct.unpack(">Q", hashlib.md5(sys.argv[1].encode()).digest()[8:])[0] % 2)' "$1"
}
targets=()
declare -A owner
n=0
while :; do
	"$serve" "$tmp/addr-$n" "$tmp/served-$n" \
		"/debug/pprof/heap=$g/heap.pb.gz,$g/heap-2.pb.gz,$g/heap-3.pb.gz" \
		"/debug/pprof/profile=$g/cpu.pb.gz,$g/cpu-2.pb.gz" &
	target_pids+=($!)
	wait_for 60 "serve_profiles $n did not start" test -s "$tmp/addr-$n"
	addr=$(cat "$tmp/addr-$n")
	targets+=("$addr")
	owner[$addr]=$(shard_of "$addr")
	n=$((n + 1))
	if [ $n -ge 4 ] && printf '%s\n' "${owner[@]}" | grep -qx 0 && printf '%s\n' "${owner[@]}" | grep -qx 1; then
		break
	fi
	[ $n -lt 16 ] || die "16 targets all hash to one scraper"
done
echo "targets: $(for t in "${targets[@]}"; do printf '%s->%s ' "$t" "${owner[$t]}"; done)"

# ---- the example's configurations on these addresses ----------------------------------
tlist=$(printf "'%s', " "${targets[@]}")
tlist="[${tlist%, }]"
for s in 0 1; do
	sed -e "s|- targets: \[.*\]|- targets: $tlist|" -e 's|scrape_interval: 15s|scrape_interval: 2s|' \
		-e 's|scrape_timeout: 12s|scrape_timeout: 1900ms|' -e 's|seconds: 10|seconds: 1|' \
		"$ex/scraper-$s.yml" >"$tmp/scraper-$s.yml"
	grep -qF "$tlist" "$tmp/scraper-$s.yml" || die "scraper-$s.yml: the targets line was not replaced"
	"$profd" check config "$tmp/scraper-$s.yml" >/dev/null || die "scraper-$s.yml does not check"
done
cp "$ex/query.yml" "$tmp/query.yml"

start_profd() { # NAME CONFIG OWN_NODE OTHER_NODE
	timeout --foreground 600 "$profd" run --config.file="$tmp/$2" --web.listen-address=127.0.0.1:0 \
		--storage.tsdb.path="$tmp/data-$1" --storage.clickhouse.url="$3" \
		--storage.clickhouse.cluster=profd_cluster --storage.clickhouse.cluster-nodes="$4" \
		2>"$tmp/profd-$1.log" &
	pids+=($!)
}
port_of() { sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd-$1.log" 2>/dev/null | head -1; }
start_profd s0 scraper-0.yml "$A" "$B"
start_profd s1 scraper-1.yml "$B" "$A"
start_profd q query.yml "$A" "$B"
started() { [ -n "$(port_of "$1")" ]; }
for p in s0 s1 q; do
	wait_for 90 "profd $p did not start" started $p
done
S0=http://127.0.0.1:$(port_of s0) S1=http://127.0.0.1:$(port_of s1) Q=http://127.0.0.1:$(port_of q)

# ---- each scraper has its targets ---------------------------------------------------
for s in 0 1; do
	url=$S0
	[ $s = 1 ] && url=$S1
	want=$(for t in "${targets[@]}"; do if [ "${owner[$t]}" = $s ]; then echo "$t"; fi; done | sort)
	check
	got=$(curl -sS "$url/api/v1/targets" | jq -r '.data.activeTargets[].labels.instance' | sort -u)
	[ "$got" = "$want" ] || failed "scraper $s scrapes [$(echo $got)], want [$(echo $want)]"
done

# ---- scrapes, then the targets stop ---------------------------------------------------
scraped_enough() {
	local i
	for ((i = 0; i < n; i++)); do
		[ "$(grep -c '^/debug/pprof/heap ' "$tmp/served-$i" || true)" -ge 3 ] || return 1
		[ "$(grep -c '^/debug/pprof/profile ' "$tmp/served-$i" || true)" -ge 2 ] || return 1
	done
}
wait_for 180 "not every target was scraped 3 times" scraped_enough
for p in "${target_pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
target_pids=()
# a scrape under way when its target stopped may or may not have been stored; once
# every target's last scrape failed, nothing more comes
all_down() {
	[ "$(curl -sS "$S0/api/v1/targets" "$S1/api/v1/targets" |
		jq -s '[.[].data.activeTargets[] | select(.health != "down")] | length')" = 0 ]
}
wait_for 60 "the scrapers still reach a stopped target" all_down
appended() {
	curl -sS "$S0/metrics" "$S1/metrics" |
		sed -n 's/^profd_profiles_appended_total{source="scrape"} \([0-9]*\).*/\1/p' |
		awk '{ s += $1 } END { print s + 0 }'
}
stored=$(appended)
served=$(cat "$tmp"/served-* | wc -l)
echo "the targets answered $served scrapes, the scrapers stored $stored profiles"
check
[ "$stored" -gt 0 ] && [ "$stored" -le "$served" ] && [ "$stored" -ge $((served - 2 * n)) ] ||
	failed "the scrapers stored $stored of $served answers"

# ---- the query profd lists every profile ------------------------------------------------
cht() { "$tool" --cluster profd_cluster "$@"; }
# query_range of the query profd over the last hour (the test's whole life); an
# answer that is not a success ends the test with it
query_range() { # SELECTOR
	curl -sS -G "$Q/api/v1/query_range" --data-urlencode "query=$1" \
		--data-urlencode start=$(($(date +%s) - 3600)) --data-urlencode end=$(($(date +%s) + 60)) \
		>"$tmp/qr.json"
	jq -e '.status == "success"' "$tmp/qr.json" >/dev/null || die "query_range $1: $(head -c 400 "$tmp/qr.json")"
	cat "$tmp/qr.json"
}
# each series' timestamps as the query profd lists them
listed() {
	query_range '{job="profd"}' |
		jq -r '.data[]? | "\(.labels.instance) \(.labels.__name__) \(.timestamps | length)"' | sort
}
all_listed() { [ "$(listed | awk '{ s += $3 } END { print s + 0 }')" = "$stored" ]; }
check
deadline=$((SECONDS + 120))
until all_listed; do
	if [ $SECONDS -ge $deadline ]; then
		failed "the query profd lists $(listed | awk '{ s += $3 } END { print s + 0 }') profiles, the scrapers stored $stored"
		break
	fi
	sleep 1
done
listed >"$tmp/listed"
cat "$tmp/listed"
check
series=$(curl -sS -g "$Q/api/v1/series?match[]={job=\"profd\"}&start=0" | jq -r '.data[] | "\(.instance) \(.__name__)"' | sort)
want=$(for t in "${targets[@]}"; do echo "$t heap"; echo "$t profile"; done | sort)
[ "$series" = "$want" ] || failed "the query profd's series: $(echo $series), want $(echo $want)"

# ---- the stored profiles are those served, read through the other node ------------------
for ((i = 0; i < n; i++)); do
	t=${targets[$i]}
	node=$A
	[ "${owner[$t]}" = 0 ] && node=$B
	for typ in heap profile; do
		sel="$typ{instance=\"$t\",job=\"profd\"}"
		query_range "$sel" >"$tmp/qr-one.json"
		mapfile -t ts < <(jq -r '.data[0].timestamps[]?' "$tmp/qr-one.json")
		mapfile -t files < <(sed -n "s|^/debug/pprof/$typ ||p" "$tmp/served-$i")
		check
		# all answers stored, but for one under way when the target stopped
		[ ${#ts[@]} -le ${#files[@]} ] && [ ${#ts[@]} -ge $((${#files[@]} - 1)) ] ||
			{ failed "$sel: ${#ts[@]} timestamps, ${#files[@]} answers"; continue; }
		for ((k = 0; k < ${#ts[@]}; k++)); do
			check
			"$tool" --cluster profd_cluster dump "$node" "$sel" "${ts[$k]}" "$tmp/got.pb.gz" ||
				{ failed "$sel at ${ts[$k]} cannot be rebuilt through $node"; continue; }
			cmp -s <(gopprof -raw "${files[$k]}" 2>&1) <(gopprof -raw "$tmp/got.pb.gz" 2>&1) ||
				failed "$sel at ${ts[$k]}: not the file served (${files[$k]}) under go tool pprof -raw"
		done
	done
done

# ---- on both shards -----------------------------------------------------------------------
check
[ "$(curl -sS "$A" --data-binary 'SELECT count() FROM profd.profiles')" = "$stored" ] ||
	failed "profd.profiles holds $(curl -sS "$A" --data-binary 'SELECT count() FROM profd.profiles') rows, want $stored"
for t in stacks samples; do
	na=$(curl -sS "$A" --data-binary "SELECT count() FROM profd.${t}_local")
	nb=$(curl -sS "$B" --data-binary "SELECT count() FROM profd.${t}_local")
	echo "$t: $na on A, $nb on B"
done
check
[ "$(curl -sS "$A" --data-binary 'SELECT count() FROM profd.stacks_local')" -gt 0 ] &&
	[ "$(curl -sS "$B" --data-binary 'SELECT count() FROM profd.stacks_local')" -gt 0 ] ||
	failed "stacks are not on both shards"

echo "clickhouse_scaleout: $checked checks"
exit $fail
