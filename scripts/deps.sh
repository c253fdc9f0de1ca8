#!/usr/bin/env bash
# Installs every package profd needs to build, run and benchmark, from Debian's
# archive, and only those that are missing, so that a second run returns at once.
# With --test (what `make test` and `make bench` run) also the servers the tests and
# benchmarks start (Prometheus, dnsmasq, ClickHouse) and what the browser tests need: Debian's
# Chromium, Node.js and npm when the machine has none, and the npm packages of
# tests/browser when they are missing or older than their lock file.
#   scripts/deps.sh [--test]
set -euo pipefail
tests=0
case "${1:-}" in
  --test) tests=1 ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--test]" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
browser=$here/tests/browser

PKGS=(
  build-essential cmake pkg-config clang
  libcurl4-openssl-dev libssl-dev libyaml-dev libzstd-dev libcrypt-dev openssl
  libprotobuf-c-dev protobuf-c-compiler
  libjson-c-dev # pkg/ingest: speedscope, Connect and OTLP JSON bodies
  libmicrohttpd-dev zlib1g-dev libre2-dev
  libdeflate-dev # gzip bodies inflated in one call (pkg/util/gzip.c); zlib stays for the rest
  libcmocka-dev
  libc-ares-dev # dns_sd_configs: DNS lookups
  libgraphviz-dev # report=svg: call graphs laid out by Graphviz's C library (libgvc)
  golang-go time curl jq
  python3-yaml # examples/check.sh: reads the Kubernetes manifests
  libpcre2-dev # bench/regex.sh only: its reference, the PCRE2 matchers before RE2
)
# the browser tests: Debian's Chromium, and Node.js and npm unless the machine has them
if [ $tests = 1 ] && [ -f "$browser/package.json" ]; then
  PKGS+=(chromium)
  command -v node >/dev/null 2>&1 || PKGS+=(nodejs)
  command -v npm >/dev/null 2>&1 || PKGS+=(npm)
fi

# tests/integration/tls.sh: Debian's Prometheus scrapes profd over TLS
[ $tests = 1 ] && PKGS+=(prometheus)
# tests/integration/dns_sd.sh: Debian's dnsmasq (the binary alone, no service) serves
# the records that dns_sd_configs look up
[ $tests = 1 ] && PKGS+=(dnsmasq-base)
# tests/clickhouse and bench/clickhouse.sh (make bench): Debian's ClickHouse server
# (started on loopback ports by tests/support/clickhouse.sh)
[ $tests = 1 ] && PKGS+=(clickhouse-server)
# tests/api_doc.cmake: Debian's faketime runs the docs' examples 60 days on
[ $tests = 1 ] && PKGS+=(faketime)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# npm writes node_modules/.package-lock.json at every install: older than the lock
# file means the lock file changed since
# tests/browser: playwright-core; tests/ingest/nodejs: Pyroscope's Node.js SDK, whose
# pushes tests/integration/ingest_nodejs.sh receives
for dir in "$browser" "$here/tests/ingest/nodejs"; do
  if [ $tests = 1 ] && [ -f "$dir/package-lock.json" ] && { [ ! -f "$dir/node_modules/.package-lock.json" ] ||
    [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; }; then
    echo "deps: npm ci in ${dir#"$here"/}" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
  fi
done
