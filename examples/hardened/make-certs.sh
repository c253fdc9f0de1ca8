#!/usr/bin/env bash
# make-certs.sh: a private CA, a server certificate for profd and a client
# certificate (for Prometheus, or a person's browser or curl), in ./tls, to try the
# hardened example. In production use certificates from your own CA instead.
#   make-certs.sh [HOSTNAME...]   (default: localhost; 127.0.0.1 is always named)
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p tls
cd tls
umask 077
san="IP:127.0.0.1"
for h in "${@:-localhost}"; do san="$san,DNS:$h"; done
openssl req -x509 -newkey rsa:3072 -nodes -keyout ca.key -out ca.crt -days 365 \
	-subj "/CN=profd example CA" 2>/dev/null
issue() { # NAME SAN
	openssl req -newkey rsa:3072 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" 2>/dev/null
	printf 'subjectAltName=%s\n' "$2" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" \
		-days 90 -extfile "$1.ext" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}
issue profd "$san"
issue client "DNS:prometheus.client"
echo "made tls/ca.crt, tls/profd.{crt,key}, tls/client.{crt,key} (server names: $san)"
