#!/usr/bin/env bash
# bench/tls.sh: what --web.config.file costs a client of the HTTP API. One profd
# per setting (plain HTTP, TLS, TLS with basic auth at bcrypt cost 10), each asked
# GET /-/healthy and GET /api/v1/labels by curl: many requests on one kept-alive
# connection, then a new connection for every request (a TLS handshake each), and
# with basic auth, requests whose credentials are not in the cache (a bcrypt check
# each) against ones that are. Plain HTTP on the same machine in the same run is the
# reference; the table prints each case's time per request and its ratio to it.
#
# usage: bench/tls.sh PROFD_BINARY     (`make build` builds build/release/profd)
#
# Environment:
#   BENCH_N=N     requests per kept-alive case (default 2000; a tenth of it for the
#                 new-connection cases, 50 for the uncached bcrypt case)
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 PROFD_BINARY" >&2
	exit 2
fi
profd=$(realpath "$1")
n=${BENCH_N:-2000}
nconn=$((n / 10))
nmiss=50
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
die() {
	echo "bench: $*" >&2
	exit 1
}
command -v openssl >/dev/null || die "openssl not found (scripts/deps.sh installs it)"
cd "$tmp"

openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext
openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt -days 2 \
	-extfile srv.ext 2>/dev/null
# bcrypt, cost 10, of "bench-password"
hash='$2b$10$rEfOyXUr0hFXmZFe67ModuLUDugvpFLXnLS2FsVZNZJoAm4IXR6Du'
printf 'tls_server_config:\n  cert_file: srv.crt\n  key_file: srv.key\n' >tls.yml
{ cat tls.yml; printf 'basic_auth_users:\n  bench: %s\n' "$hash"; } >auth.yml
printf 'global: {}\nscrape_configs: []\n' >profd.yml

start() { # NAME [WEB_CONFIG]: sets port
	local log=$tmp/$1.log
	"$profd" run --config.file=profd.yml --storage.tsdb.path="$tmp/data-$1" \
		--web.listen-address=127.0.0.1:0 ${2:+--web.config.file=$2} 2>"$log" &
	pids+=($!)
	local deadline=$((SECONDS + 60))
	port=
	while [ -z "$port" ]; do
		[ "$SECONDS" -lt "$deadline" ] || die "profd ($1) did not start: $(cat "$log")"
		sleep 0.1
		port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$log" | head -1)
	done
}

# urls FILE URL COUNT [USER_PREFIX]: COUNT requests of URL, each printing its own
# time (curl's time_total: from the start of the transfer, a new connection's
# handshake included, to its end; not curl's start-up). With USER_PREFIX each has
# its own user name and so its own credentials.
urls() {
	: >"$1"
	for ((i = 0; i < $3; i++)); do
		# a config file's options hold for all its URLs unless `next` starts a
		# new set; with its own user each request needs its own set
		[ -z "${4:-}" ] || [ "$i" = 0 ] || echo next >>"$1"
		printf 'url = "%s"\noutput = "/dev/null"\nwrite-out = "%%{time_total}\\n"\n' "$2" >>"$1"
		[ -z "${4:-}" ] || printf 'user = "%s%d:x"\ncacert = "%s"\n' "$4" "$i" "$tmp/ca.crt" >>"$1"
	done
}
# median FILE: the median of the times in FILE, in microseconds
median() {
	sort -g "$1" | awk '{v[NR] = $1} END {printf "%d\n", v[int((NR + 1) / 2)] * 1e6}'
}
# run URL COUNT CLOSE [CURL ARGS...]: the median microseconds of COUNT requests (one
# connection kept alive, or a new one each when CLOSE=1)
run() {
	local url=$1 count=$2 close=$3
	shift 3
	local hdr=()
	[ "$close" = 1 ] && hdr=(-H 'Connection: close')
	urls "$tmp/u" "$url" "$count"
	curl -sS --fail "${hdr[@]}" "$@" -K "$tmp/u" >"$tmp/t" || die "curl failed on $url"
	median "$tmp/t"
}

start plain
plain=http://127.0.0.1:$port
start tls tls.yml
tls=https://127.0.0.1:$port
start auth auth.yml
auth=https://127.0.0.1:$port
ca=(--cacert ca.crt)
cred=(-u bench:bench-password)

printf '%-48s %9s %14s %9s\n' case requests "median µs" "vs ref"
row() { # NAME COUNT MICROSECONDS REFERENCE
	printf '%-48s %9d %14d %8.2fx\n' "$1" "$2" "$3" "$(awk -v a="$3" -v b="$4" 'BEGIN {print a / (b ? b : 1)}')"
}
for path in /-/healthy /api/v1/labels; do
	ref=$(run "$plain$path" "$n" 0)
	row "plain HTTP, kept alive, GET $path (ref)" "$n" "$ref" "$ref"
	row "TLS, kept alive" "$n" "$(run "$tls$path" "$n" 0 "${ca[@]}")" "$ref"
	row "TLS + basic auth (cached), kept alive" "$n" "$(run "$auth$path" "$n" 0 "${ca[@]}" "${cred[@]}")" "$ref"
	ref=$(run "$plain$path" "$nconn" 1)
	row "plain HTTP, a new connection each (ref)" "$nconn" "$ref" "$ref"
	row "TLS, a new connection (handshake) each" "$nconn" "$(run "$tls$path" "$nconn" 1 "${ca[@]}")" "$ref"
	row "TLS + basic auth (cached), new connection each" "$nconn" \
		"$(run "$auth$path" "$nconn" 1 "${ca[@]}" "${cred[@]}")" "$ref"
done
# uncached: every request brings credentials the cache has not seen (users that do
# not exist, each answered 401 after one bcrypt check, which closes the connection),
# against cached right ones on a new connection each
hit=$(run "$auth/-/healthy" "$nmiss" 1 "${ca[@]}" "${cred[@]}")
urls "$tmp/m" "$auth/-/healthy" "$nmiss" miss-
curl -sS "${ca[@]}" -K "$tmp/m" >"$tmp/t"
row "TLS + basic auth, cached, new connection (ref)" "$nmiss" "$hit" "$hit"
row "TLS + basic auth, uncached (one bcrypt, cost 10)" "$nmiss" "$(median "$tmp/t")" "$hit"
