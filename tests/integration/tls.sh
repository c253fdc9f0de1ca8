#!/usr/bin/env bash
# tls.sh: --web.config.file end to end, against a test CA, server and client
# certificates made here with openssl: curl with and without a client certificate
# (and with one from another CA), TLS versions refused, plain HTTP refused on the
# TLS port, basic auth right, wrong and missing, the configured response headers,
# every endpoint of docs/api.md asking for credentials, a rotated certificate and a
# changed password picked up without a restart, a bad file refused at start,
# go tool pprof reading profiles through TLS and basic auth, Debian's Prometheus
# scraping /metrics over TLS with basic auth and a client certificate, and no
# secret in the log or the status endpoints.
#
# Last, the hardened example (examples/hardened) as its README runs it.
#
#   tls.sh PROFD TESTDATA API_MD EXAMPLES_DIR
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
api_md=$(realpath "$3")
examples=$(realpath "$4")
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} GOCACHE=$tmp/gocache PPROF_TMPDIR=$tmp
fail() { echo "FAIL: $*"; echo "--- profd log"; tail -30 "$tmp/profd.log" 2>/dev/null; exit 1; }
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
cd "$tmp"

# ---- certificates ----
# ca NAME: a self-signed CA; cert NAME CA SAN: a key and a certificate CA signs
ca() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.crt" -days 2 \
		-subj "/CN=$1" 2>/dev/null
}
cert() {
	openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" 2>/dev/null
	printf 'subjectAltName=%s\n' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -out "$1.crt" \
		-days 2 -extfile "$1.ext" 2>/dev/null
}
ca testca
ca otherca
cert server testca "DNS:localhost,IP:127.0.0.1"
cert client testca "DNS:client.example"
cert intruder otherca "DNS:client.example"
cert server2 testca "DNS:localhost,IP:127.0.0.1"

# bcrypt (cost 4) of the two passwords, made once with Python's crypt module
pw1=s3cret-Alice-pw pw2=n3w-Alice-pw
secret_hash='$2b$04$lTbj2cbV50JV28eWZcVK/e2YMM6bUxf/0.GRX2tBbI1jrwi21w2iK'
changed_hash='$2b$04$I5QoecpKOrhESBOpAhdwM.6Uj3M/3LzdOS6mWQG0SEJCKvvRWNYta'
webcfg() { # HASH [CLIENT_AUTH_TYPE [ALLOWED_SAN]]
	cat <<EOF
tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key
  client_ca_file: tls/testca.crt
  client_auth_type: ${2:-RequireAndVerifyClientCert}
  min_version: TLS12
${3:+  client_allowed_sans: [$3]}
http_server_config:
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  alice: $1
EOF
}
mkdir tls
cp server.crt server.key testca.crt tls/
webcfg "$secret_hash" >web.yml
printf 'global:\n  scrape_interval: 1m\nscrape_configs: []\n' >profd.yml

# a bad web configuration is a start-up error naming the file and field
printf 'tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/nope.key\n' >bad-web.yml
rc=0
"$profd" run --config.file=profd.yml --storage.tsdb.path=data-bad --web.listen-address=127.0.0.1:0 \
	--web.config.file=bad-web.yml >bad.log 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a web configuration naming a missing key file: exit $rc, want 1"
grep -q 'msg="--web.config.file is not usable" err="failed to read key_file (.*tls/nope.key)' bad.log ||
	fail "the start-up error does not name the field and file: $(cat bad.log)"
printf 'basic_auth_users:\n  alice: nothash\n' >bad-web.yml
rc=0
"$profd" run --config.file=profd.yml --storage.tsdb.path=data-bad --web.listen-address=127.0.0.1:0 \
	--web.config.file=bad-web.yml >bad.log 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q 'bad-web.yml:2:' bad.log || fail "a bad hash: exit $rc: $(cat bad.log)"

"$profd" run --config.file=profd.yml --storage.tsdb.path=data --web.listen-address=127.0.0.1:0 \
	--web.config.file=web.yml --log.level=debug 2>profd.log &
profd_pid=$!
pids+=($profd_pid)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\) tls=on.*/\1/p' profd.log 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start listening with TLS" listening
base="https://127.0.0.1:$port"
ok=(--cacert testca.crt --cert client.crt --key client.key)

# ---- TLS ----
code() { curl -sS -o /dev/null -w '%{http_code}' "$@" 2>/dev/null || true; }
[ "$(code "${ok[@]}" -u alice:$pw1 "$base/-/healthy")" = 200 ] ||
	fail "a client certificate and the right password: $(curl -sS "${ok[@]}" -u alice:$pw1 "$base/-/healthy" 2>&1)"
rc=0
curl -sS -o /dev/null --cacert testca.crt -u alice:$pw1 "$base/-/healthy" 2>err.txt || rc=$?
[ "$rc" != 0 ] || fail "a client without a certificate got through RequireAndVerifyClientCert"
rc=0
curl -sS -o /dev/null --cacert testca.crt --cert intruder.crt --key intruder.key -u alice:$pw1 \
	"$base/-/healthy" 2>err.txt || rc=$?
[ "$rc" != 0 ] || fail "a client certificate from another CA got through"
rc=0
curl -sS -o /dev/null "${ok[@]}" --tls-max 1.1 -u alice:$pw1 "$base/-/healthy" 2>err.txt || rc=$?
[ "$rc" = 35 ] || fail "TLS 1.1 below min_version TLS12: curl exit $rc, want 35 (handshake refused): $(cat err.txt)"
curl -sS -o /dev/null "${ok[@]}" --tlsv1.3 -u alice:$pw1 "$base/-/healthy" || fail "TLS 1.3"
curl -sS -o /dev/null "${ok[@]}" --tlsv1.2 --tls-max 1.2 -u alice:$pw1 "$base/-/healthy" || fail "TLS 1.2"
plain=$(curl -sS -i "http://127.0.0.1:$port/-/healthy" 2>&1 || true)
grep -q '^HTTP/1.0 400' <<<"$plain" && grep -q 'Client sent an HTTP request to an HTTPS server.' <<<"$plain" ||
	fail "plain HTTP on the TLS port: $plain"
echo "TLS: client certificates, versions and plain HTTP as configured"

# ---- basic auth ----
curl -sS -i "${ok[@]}" "$base/api/v1/labels" >noauth.txt || fail "no credentials: curl failed"
grep -q '^HTTP/1.1 401' noauth.txt || fail "no credentials: $(head -1 noauth.txt)"
grep -qi '^WWW-Authenticate: Basic' noauth.txt || fail "no Basic challenge: $(cat noauth.txt)"
grep -qi '^X-Frame-Options: deny' noauth.txt || fail "configured headers missing on a 401"
[ "$(tail -1 noauth.txt)" = Unauthorized ] || fail "401 body: $(tail -1 noauth.txt)"
[ "$(code "${ok[@]}" -u alice:wrong "$base/api/v1/labels")" = 401 ] || fail "a wrong password got through"
[ "$(code "${ok[@]}" -u mallory:secret "$base/api/v1/labels")" = 401 ] || fail "an unknown user got through"
curl -sS -i "${ok[@]}" -u alice:$pw1 "$base/api/v1/labels" >auth.txt
grep -q '^HTTP/1.1 200' auth.txt || fail "right password: $(head -1 auth.txt)"
grep -qi '^Strict-Transport-Security: max-age=31536000' auth.txt || fail "configured header missing"

# every endpoint docs/api.md lists asks for credentials, and answers with them
mapfile -t endpoints < <(grep '^### `' "$api_md" | grep -o '`\(GET\|POST\|PUT\) /[^`]*`' | tr -d '`' |
	sed 's/<name>/job/; s/\.\.\.$/heap/' | sort -u)
[ ${#endpoints[@]} -ge 12 ] || fail "found only ${#endpoints[@]} endpoints in docs/api.md"
for e in "${endpoints[@]}"; do
	m=${e%% *} p=${e#* }
	c=$(code "${ok[@]}" -X "$m" "$base$p")
	[ "$c" = 401 ] || fail "$m $p without credentials answered $c, want 401"
	c=$(code "${ok[@]}" -X "$m" -u alice:wrong "$base$p")
	[ "$c" = 401 ] || fail "$m $p with a wrong password answered $c, want 401"
	c=$(code "${ok[@]}" -X "$m" -u alice:$pw1 --max-time 60 "$base$p?seconds=1")
	[ "$c" != 401 ] && [ "$c" != 000 ] || fail "$m $p with the right password answered $c"
done
# the UI too
[ "$(code "${ok[@]}" "$base/")" = 401 ] || fail "the UI without credentials"
echo "basic auth: ${#endpoints[@]} endpoints of docs/api.md checked"

# ---- go tool pprof through TLS and basic auth ----
# go tool pprof cannot present a client certificate (its -tls_* flags are not
# wired to its fetcher): the next connections may come without one, and still
# not with one from another CA. Go takes the CA from SSL_CERT_FILE.
webcfg "$secret_hash" VerifyClientCertIfGiven >web.yml.new && mv web.yml.new web.yml
[ "$(code --cacert testca.crt -u "alice:$pw1" "$base/-/healthy")" = 200 ] ||
	fail "without a client certificate under VerifyClientCertIfGiven"
rc=0
curl -sS -o /dev/null --cacert testca.crt --cert intruder.crt --key intruder.key -u "alice:$pw1" \
	"$base/-/healthy" 2>err.txt || rc=$?
[ "$rc" != 0 ] || fail "a client certificate from another CA got through VerifyClientCertIfGiven"
export SSL_CERT_FILE=$tmp/testca.crt
pushed=$(curl -sS "${ok[@]}" -u alice:$pw1 --data-binary "@$data/profiles/prometheus/heap.pb.gz" \
	"$base/api/v1/profiles?labels=heap%7Bjob%3D%22pushed%22%7D") || fail "push over TLS"
ts=$(jq -r .data.timestamp <<<"$pushed")
url="https://alice:$pw1@127.0.0.1:$port/api/v1/query?report=proto&query=heap%7Bjob%3D%22pushed%22%7D&time=$((ts / 1000)).$(printf %03d $((ts % 1000)))"
go tool pprof -raw -symbolize=none "$url" >via-api.txt 2>pprof.err ||
	fail "go tool pprof through TLS: $(cat pprof.err)"
go tool pprof -raw -symbolize=none "$data/profiles/prometheus/heap.pb.gz" >direct.txt 2>/dev/null
diff <(grep -v '^PeriodType\|^Period\|^Time\|^Duration' via-api.txt) \
	<(grep -v '^PeriodType\|^Period\|^Time\|^Duration' direct.txt) >/dev/null ||
	fail "the profile read through TLS differs from the pushed one"
go tool pprof -top -symbolize=none "https://alice:$pw1@127.0.0.1:$port/debug/pprof/profile?seconds=1" \
	>self.txt 2>pprof.err || fail "go tool pprof of profd's own CPU through TLS: $(cat pprof.err)"
rc=0
go tool pprof -top -symbolize=none "https://alice:wrong@127.0.0.1:$port/debug/pprof/profile?seconds=1" \
	>/dev/null 2>pprof.err || rc=$?
[ "$rc" != 0 ] && grep -q 401 pprof.err || fail "go tool pprof with a wrong password: rc $rc: $(cat pprof.err)"
echo "go tool pprof: reads profiles through TLS with basic auth"

# ---- Prometheus scrapes /metrics over TLS with basic auth ----
prom_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >prometheus.yml <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: profd
    scheme: https
    tls_config:
      ca_file: $tmp/testca.crt
      cert_file: $tmp/client.crt
      key_file: $tmp/client.key
    basic_auth:
      username: alice
      password: $pw1
    static_configs:
      - targets: ['127.0.0.1:$port']
  - job_name: profd-wrong-password
    scheme: https
    tls_config:
      ca_file: $tmp/testca.crt
      cert_file: $tmp/client.crt
      key_file: $tmp/client.key
    basic_auth:
      username: alice
      password: wrong
    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
prometheus --config.file=prometheus.yml --storage.tsdb.path=promdata \
	--web.listen-address="127.0.0.1:$prom_port" >prometheus.log 2>&1 &
pids+=($!)
prom_value() { # QUERY: the first value of an instant query, "" when none
	curl -sS -G "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
		jq -r '.data.result[0].value[1] // empty' 2>/dev/null
}
scraped() { [ "$(prom_value 'up{job="profd"}')" = 1 ] && [ -n "$(prom_value 'profd_build_info{job="profd"}')" ]; }
wait_for 120 "Prometheus did not scrape profd's /metrics over TLS with basic auth" scraped
refused() { [ "$(prom_value 'up{job="profd-wrong-password"}')" = 0 ]; }
wait_for 60 "Prometheus with a wrong password was not refused" refused
echo "Prometheus: scrapes /metrics over TLS with basic auth and a client certificate"

# ---- changes without a restart ----
# a rotated certificate: the next connection gets it
serial() {
	openssl s_client -connect "127.0.0.1:$port" -CAfile testca.crt -cert client.crt -key client.key \
		</dev/null 2>/dev/null | openssl x509 -noout -serial
}
want=$(openssl x509 -in server2.crt -noout -serial)
[ "$(serial)" != "$want" ] || fail "the second certificate served before the rotation"
cp server2.key tls/server.key.new && cp server2.crt tls/server.crt.new
mv tls/server.key.new tls/server.key && mv tls/server.crt.new tls/server.crt
rotated() { [ "$(serial)" = "$want" ]; }
wait_for 30 "the rotated certificate was not served" rotated
[ "$(code "${ok[@]}" -u alice:$pw1 "$base/-/healthy")" = 200 ] || fail "after the rotation"
# a changed password: the old one stops working at the next request
webcfg "$changed_hash" >web.yml.new && mv web.yml.new web.yml
[ "$(code "${ok[@]}" -u alice:$pw1 "$base/-/healthy")" = 401 ] || fail "the old password still works"
[ "$(code "${ok[@]}" -u alice:$pw2 "$base/-/healthy")" = 200 ] || fail "the new password does not work"
echo "rotation: certificate and password changes apply without a restart"

# client_allowed_sans: the client certificate must name one of them
webcfg "$changed_hash" RequireAndVerifyClientCert other.example >web.yml.new && mv web.yml.new web.yml
rc=0
curl -sS -o /dev/null "${ok[@]}" -u "alice:$pw2" "$base/-/healthy" 2>err.txt || rc=$?
[ "$rc" != 0 ] || fail "a client certificate without an allowed SAN got through"
webcfg "$changed_hash" RequireAndVerifyClientCert client.example >web.yml.new && mv web.yml.new web.yml
[ "$(code "${ok[@]}" -u "alice:$pw2" "$base/-/healthy")" = 200 ] || fail "the allowed SAN was refused"
# a broken file: new connections fail (logged, counted); fixed, they work again
printf 'tls_server_config: [\n' >web.yml.new && mv web.yml.new web.yml
rc=0
curl -sS -o /dev/null "${ok[@]}" -u "alice:$pw2" "$base/-/healthy" 2>err.txt || rc=$?
[ "$rc" != 0 ] || fail "a connection was served with a broken web configuration"
grep -q 'level=error component=api msg="unable to apply the web configuration" err=".*web.yml:' profd.log ||
	fail "the broken web configuration was not logged with its position"
webcfg "$changed_hash" >web.yml.new && mv web.yml.new web.yml
[ "$(code "${ok[@]}" -u "alice:$pw2" "$base/-/healthy")" = 200 ] || fail "after the file was fixed"
curl -sS "${ok[@]}" -u "alice:$pw2" "$base/metrics" >metrics.txt
grep -q '^profd_http_tls_handshake_errors_total [1-9]' metrics.txt || fail "handshake errors not counted"
grep -q '^profd_web_config_failures_total [1-9]' metrics.txt || fail "web configuration failures not counted"
echo "client_allowed_sans and a broken file: refused, logged, counted, recovered"

# ---- no secret in the log or the status endpoints ----
curl -sS "${ok[@]}" -u alice:$pw2 "$base/api/v1/status/flags" >flags.json
curl -sS "${ok[@]}" -u alice:$pw2 "$base/api/v1/status/config" >config.json
curl -sS "${ok[@]}" -u alice:$pw2 "$base/metrics" >metrics.txt
grep -q 'web.config.file' flags.json || fail "status/flags does not show the flag"
key_line=$(sed -n 2p tls/server.key)
for f in profd.log flags.json config.json metrics.txt; do
	for s in "$pw1" "$pw2" "$secret_hash" "$changed_hash" "$key_line" 'BEGIN PRIVATE KEY'; do
		! grep -qF -- "$s" "$f" || fail "$f shows a secret: $s"
	done
done
echo "secrets: none in the log, status/flags, status/config or /metrics"

# ---- the hardened example, as its README runs it ----
cp -r "$examples/hardened" hardened
cp "$examples/profd.yml" hardened-profd.yml
(cd hardened && ./make-certs.sh localhost >/dev/null) || fail "examples/hardened/make-certs.sh"
"$profd" check web-config hardened/web.yml 2>check.txt || fail "the example's web.yml: $(cat check.txt)"
grep -q 'hardened/web.yml SUCCESS' check.txt || fail "check web-config: $(cat check.txt)"
(cd hardened && exec "$profd" run --config.file=../hardened-profd.yml --web.config.file=web.yml \
	--no-web.enable-push --storage.tsdb.path=../hardened-data --web.listen-address=127.0.0.1:0 \
	2>../hardened.log) &
pids+=($!)
hport() { hport=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\) tls=on.*/\1/p' hardened.log 2>/dev/null | head -1 || true); [ -n "$hport" ]; }
wait_for 60 "the hardened example did not start with TLS" hport
h=(--cacert hardened/tls/ca.crt --cert hardened/tls/client.crt --key hardened/tls/client.key)
[ "$(code "${h[@]}" -u prometheus:change-me-now "https://localhost:$hport/api/v1/targets")" = 200 ] ||
	fail "the hardened example's README command"
[ "$(code --cacert hardened/tls/ca.crt -u prometheus:change-me-now "https://localhost:$hport/-/healthy")" = 000 ] ||
	fail "the hardened example let a client without a certificate in"
[ "$(code "${h[@]}" "https://localhost:$hport/-/healthy")" = 401 ] || fail "the hardened example without a password"
[ "$(code "${h[@]}" -u prometheus:change-me-now -X POST "https://localhost:$hport/-/reload")" = 403 ] ||
	fail "the hardened example has the lifecycle API on"
[ "$(code "${h[@]}" -u prometheus:change-me-now --data-binary "@$data/profiles/prometheus/heap.pb.gz" \
	"https://localhost:$hport/api/v1/profiles?labels=heap%7Bjob%3D%22x%22%7D")" = 404 ] ||
	fail "the hardened example takes pushes"
echo "examples/hardened: starts as its README says; certificate, password, no lifecycle, no pushes"

# a clean stop with TLS connections open: every TLS thread ends, nothing leaks
# (the sanitizers' leak check makes the exit status non-zero otherwise)
exec 3< <(openssl s_client -connect "127.0.0.1:$port" -CAfile testca.crt -cert client.crt \
	-key client.key -quiet 2>/dev/null; echo)
kill -TERM "$profd_pid"
rc=0
wait "$profd_pid" || rc=$?
[ "$rc" = 0 ] || fail "profd exited with $rc on SIGTERM"
grep -q 'level=info component=main msg="stopped"' profd.log || fail "no clean stop"
echo "stop: clean, with a TLS connection open"
