#!/usr/bin/env bash
# dns_sd.sh: dns_sd_configs against a real DNS server. Debian's dnsmasq, started here
# on a free 127.0.0.1 port with records of its own (SRV, A, AAAA, a CNAME, MX, NS;
# everything else in profd.test is NXDOMAIN), answers profd run
# --discovery.dns.server. Checked over HTTP: the discovered labels of every type on
# /api/v1/targets, as Prometheus sets them; real scrapes of the discovered targets (a
# profile server on 127.0.0.1 that every record points at); a change of records
# (dnsmasq restarted with new ones) picked up at the next refresh; a server that
# stops answering (SIGSTOP): the last good targets stay and
# prometheus_sd_dns_lookup_failures_total rises. Every wait has a deadline.
#
#   dns_sd.sh PROFD SERVE_PROFILES TESTDATA
set -euo pipefail

profd=$(realpath "$1")
serve=$(realpath "$2")
data=$(cd "$3" && pwd)
dnsmasq=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
[ -x "$dnsmasq" ] || { echo "FAIL: dnsmasq is not installed (scripts/deps.sh --test)"; exit 1; }
tmp=$(mktemp -d)
pids=()
dns_pid=
cleanup() {
	if [ -n "$dns_pid" ]; then
		kill -CONT "$dns_pid" 2>/dev/null || true
		kill "$dns_pid" 2>/dev/null || true
	fi
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	tail -20 "$tmp/profd.log" 2>/dev/null
	tail -5 "$tmp/dnsmasq.log" 2>/dev/null
	exit 1
}
# Runs CMD every 0.2 s until it succeeds; fails with WHAT after TIMEOUT seconds.
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}

# ---- the scrape target ------------------------------------------------------------
g=$data/profiles/goapp
"$serve" "$tmp/addr" "$tmp/served" "/debug/pprof/heap=$g/heap.pb.gz" &
pids+=($!)
wait_for 60 "the profile server did not start" test -s "$tmp/addr"
sport=$(sed 's/.*://' "$tmp/addr")

# ---- the DNS server ---------------------------------------------------------------
# NS record data: the name "localhost." in wire format
ns_localhost=096c6f63616c686f737400
records() { # $1: 1 or 2, the first or the changed set of records
	cat <<EOC
local=/profd.test/
srv-host=_pprof._tcp.profd.test,localhost,$sport
host-record=a.profd.test,127.0.0.1,::1
cname=alias.profd.test,a.profd.test
mx-host=mx.profd.test,localhost,10
dns-rr=ns.profd.test,2,$ns_localhost
EOC
	if [ "$1" = 2 ]; then
		echo "srv-host=_pprof._tcp.profd.test,t2.profd.test,7,20"
		echo "host-record=alias2.profd.test,127.0.0.3"
	fi
}
# dnsmasq_start N PORT: starts dnsmasq with record set N on PORT; 0 once it
# answers, 1 when it could not bind the port
dnsmasq_start() {
	records "$1" >"$tmp/dnsmasq.conf"
	: >"$tmp/dnsmasq.log"
	"$dnsmasq" --keep-in-foreground --port="$2" --listen-address=127.0.0.1 --bind-interfaces \
		--no-resolv --no-hosts --conf-file="$tmp/dnsmasq.conf" --pid-file="$tmp/dnsmasq.pid" \
		--user="$(id -un)" --log-facility="$tmp/dnsmasq.log" 2>>"$tmp/dnsmasq.err" &
	dns_pid=$!
	local deadline=$((SECONDS + 30))
	until grep -q 'started, version' "$tmp/dnsmasq.log" 2>/dev/null; do
		if ! kill -0 "$dns_pid" 2>/dev/null; then
			wait "$dns_pid" 2>/dev/null || true
			dns_pid=
			return 1
		fi
		[ "$SECONDS" -lt "$deadline" ] || fail "dnsmasq did not start"
		sleep 0.1
	done
}
dnsmasq_stop() {
	kill "$dns_pid"
	wait "$dns_pid" 2>/dev/null || true
	dns_pid=
}
dport=
for _ in $(seq 1 20); do
	p=$((20000 + RANDOM % 40000))
	if dnsmasq_start 1 "$p"; then
		dport=$p
		break
	fi
done
[ -n "$dport" ] || fail "dnsmasq found no free port: $(tail -2 "$tmp/dnsmasq.err")"

# ---- profd --------------------------------------------------------------------------
only_heap='    profiling_config:
      pprof_config:
        allocs: {enabled: false}
        block: {enabled: false}
        goroutine: {enabled: false}
        mutex: {enabled: false}
        profile: {enabled: false}
        threadcreate: {enabled: false}'
cat >"$tmp/profd.yml" <<EOC
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: srv
    dns_sd_configs:
      - names: ['_pprof._tcp.profd.test.', 'gone.profd.test.']
        refresh_interval: 1s
$only_heap
  - job_name: a
    dns_sd_configs:
      - names: ['alias.profd.test.', 'alias2.profd.test.']
        type: A
        port: $sport
        refresh_interval: 1s
$only_heap
  - job_name: aaaa
    dns_sd_configs:
      - names: ['a.profd.test.']
        type: AAAA
        port: $sport
        refresh_interval: 1s
$only_heap
  - job_name: mx
    dns_sd_configs:
      - names: ['mx.profd.test.']
        type: mx
        port: $sport
        refresh_interval: 1s
$only_heap
  - job_name: ns
    dns_sd_configs:
      - names: ['ns.profd.test.']
        type: NS
        port: $sport
        refresh_interval: 1s
$only_heap
EOC
"$profd" check config "$tmp/profd.yml" >/dev/null || fail "profd check config refused the configuration"
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --discovery.dns.server="127.0.0.1:$dport" 2>"$tmp/profd.log" &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start" listening
api="http://127.0.0.1:$port"

# discovered JOB: the address and __meta_* labels of the job's targets, sorted
discovered() {
	curl -fsS "$api/api/v1/targets" >"$tmp/targets.json" 2>/dev/null || return 1
	jq -cS --arg j "$1" '[.data.activeTargets[] | select(.scrapePool == $j) | .discoveredLabels
		| with_entries(select(.key == "__address__" or (.key | startswith("__meta_"))))]
		| unique' "$tmp/targets.json"
}
discovered_is() { # JOB JSON
	local got
	got=$(discovered "$1") || return 1
	[ "$got" = "$2" ]
}
expect() { # JOB JSON WHAT
	if ! wait_for_quiet 30 discovered_is "$1" "$2"; then
		fail "$3: job $1 discovered $(discovered "$1"), want $2"
	fi
}
wait_for_quiet() {
	local timeout=$1 deadline
	shift
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

srv1='[{"__address__":"localhost:'$sport'","__meta_dns_name":"_pprof._tcp.profd.test.","__meta_dns_srv_record_port":"'$sport'","__meta_dns_srv_record_target":"localhost."}]'
expect srv "$srv1" "SRV"
expect a '[{"__address__":"127.0.0.1:'$sport'","__meta_dns_name":"alias.profd.test."}]' "A through a CNAME"
expect aaaa '[{"__address__":"[::1]:'$sport'","__meta_dns_name":"a.profd.test."}]' "AAAA"
expect mx '[{"__address__":"localhost:'$sport'","__meta_dns_mx_record_target":"localhost.","__meta_dns_name":"mx.profd.test."}]' "MX"
expect ns '[{"__address__":"localhost:'$sport'","__meta_dns_name":"ns.profd.test.","__meta_dns_ns_record_target":"localhost."}]' "NS"
echo "dns_sd: SRV, A (through a CNAME), AAAA, MX and NS targets discovered with Prometheus's labels"

# the targets are scraped: every job but aaaa (the profile server has no IPv6 socket)
all_up() {
	curl -fsS "$api/api/v1/targets" >"$tmp/targets.json" 2>/dev/null || return 1
	for j in srv a mx ns; do
		[ "$(jq -r --arg j "$j" '[.data.activeTargets[] | select(.scrapePool == $j) | .health] | unique | join(",")' "$tmp/targets.json")" = up ] || return 1
	done
}
wait_for 60 "the discovered targets were not all scraped successfully" all_up
stored() {
	curl -fsS -G "$api/api/v1/query_range" --data-urlencode 'query=heap{job="srv"}' \
		--data-urlencode "start=$(($(date +%s) - 300))" >"$tmp/qr.json" 2>/dev/null &&
		grep -q '"timestamps":\[[0-9]' "$tmp/qr.json"
}
wait_for 60 "no heap profile of the SRV target was stored" stored
echo "dns_sd: the discovered targets are scraped and their profiles stored"

# ---- records change: dnsmasq restarted on the same port with new ones --------------
lookups() { curl -fsS "$api/metrics" | sed -n "s/^prometheus_sd_dns_$1 //p"; }
failures0=$(lookups lookup_failures_total)
dnsmasq_stop
dnsmasq_start 2 "$dport" || fail "dnsmasq could not bind port $dport again: $(tail -2 "$tmp/dnsmasq.err")"
srv2='[{"__address__":"localhost:'$sport'","__meta_dns_name":"_pprof._tcp.profd.test.","__meta_dns_srv_record_port":"'$sport'","__meta_dns_srv_record_target":"localhost."},{"__address__":"t2.profd.test:7","__meta_dns_name":"_pprof._tcp.profd.test.","__meta_dns_srv_record_port":"7","__meta_dns_srv_record_target":"t2.profd.test."}]'
a2='[{"__address__":"127.0.0.1:'$sport'","__meta_dns_name":"alias.profd.test."},{"__address__":"127.0.0.3:'$sport'","__meta_dns_name":"alias2.profd.test."}]'
expect srv "$srv2" "a new SRV record"
expect a "$a2" "a new A record"
echo "dns_sd: changed records picked up at the next refresh"

# ---- the server stops answering -----------------------------------------------------
failures1=$(lookups lookup_failures_total)
kill -STOP "$dns_pid"
failed_more() { [ "$(lookups lookup_failures_total)" -ge $((failures1 + 5)) ]; }
wait_for 60 "prometheus_sd_dns_lookup_failures_total did not rise (was $failures1)" failed_more
# the daemon logs failed refreshes when it next polls the providers' status, a moment
# after the counter rises
failure_logged() { grep -q 'could not resolve \\"_pprof._tcp.profd.test.\\"' "$tmp/profd.log"; }
wait_for 30 "the failed lookups were not logged" failure_logged
for j in srv a; do
	want=$srv2
	[ $j = a ] && want=$a2
	discovered_is $j "$want" || fail "job $j lost its last good targets: $(discovered $j)"
done
total=$(lookups lookups_total)
[ "$total" -gt "$(lookups lookup_failures_total)" ] || fail "lookups_total $total is not above the failures"
echo "dns_sd: a server that stops answering: failures counted ($failures0 -> $(lookups lookup_failures_total)), last good targets kept"
kill -CONT "$dns_pid"
echo "PASS"
