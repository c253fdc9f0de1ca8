#!/usr/bin/env bash
# Installs every package profd needs to build, test and benchmark, from Debian's
# archive, and only those that are missing, so that a second run returns at once.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang
  libcurl4-openssl-dev libyaml-dev libzstd-dev
  libprotobuf-c-dev protobuf-c-compiler
  libmicrohttpd-dev zlib1g-dev libpcre2-dev
  libcmocka-dev
  golang-go time curl
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
