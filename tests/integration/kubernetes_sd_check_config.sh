#!/usr/bin/env bash
# kubernetes_sd_check_config.sh: `profd check config` as promtool's on
# kubernetes_sd_configs: every configuration in testdata/config/kubernetes_sd/good
# (Prometheus's reference fields, its Kubernetes example configuration, the files
# its configuration tests load) passes --syntax-only; every file in .../bad fails,
# naming itself and the message of its first line (`# expect: MESSAGE`, Prometheus's
# words), with a file:line:column position; and, without --syntax-only, the client
# certificate files of a kubernetes_sd_config are checked as promtool checks them.
#
#   kubernetes_sd_check_config.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
dir=$(cd "$2/config/kubernetes_sd" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

n=0
for f in "$dir"/good/*.yml; do
	n=$((n + 1))
	if ! "$profd" check config --syntax-only "$f" >"$tmp/out" 2>&1; then
		bad "$(basename "$f") was refused: $(cat "$tmp/out")"
	elif ! grep -q "SUCCESS" "$tmp/out"; then
		bad "$(basename "$f"): no SUCCESS: $(cat "$tmp/out")"
	fi
done
[ "$n" -ge 3 ] || bad "only $n good files"

n=0
for f in "$dir"/bad/*.yml; do
	n=$((n + 1))
	want=$(head -1 "$f" | sed -n 's/^# expect: //p')
	[ -n "$want" ] || { bad "$(basename "$f"): the first line must be '# expect: MESSAGE'"; continue; }
	rc=0
	"$profd" check config --syntax-only "$f" >"$tmp/out" 2>&1 || rc=$?
	if [ "$rc" != 1 ]; then
		bad "$(basename "$f"): exit status $rc, want 1: $(cat "$tmp/out")"
	elif ! grep -qF -- "$want" "$tmp/out"; then
		bad "$(basename "$f"): want \"$want\", got: $(cat "$tmp/out")"
	elif ! grep -qE "$(basename "$f"):[0-9]+:[0-9]+: " "$tmp/out"; then
		bad "$(basename "$f"): no file:line:column position: $(cat "$tmp/out")"
	fi
done
[ "$n" -ge 15 ] || bad "only $n bad files"

# a kubernetes_sd_config's TLS files: a certificate without its key is refused when
# the file is read (Prometheus's TLS settings check), files that do not exist only
# without --syntax-only (promtool's check of them)
cat >"$tmp/cert-only.yml" <<EOC
scrape_configs:
  - job_name: app
    kubernetes_sd_configs:
      - role: pod
        api_server: https://10.0.0.1:6443
        tls_config:
          cert_file: $tmp/client.crt
EOC
rc=0
"$profd" check config --syntax-only "$tmp/cert-only.yml" >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -qF "exactly one of key or key_file must be configured when a client certificate is configured" "$tmp/out" ||
	bad "a cert_file without key_file: exit $rc: $(cat "$tmp/out")"
cat >"$tmp/missing.yml" <<EOC
scrape_configs:
  - job_name: app
    kubernetes_sd_configs:
      - role: pod
        api_server: https://10.0.0.1:6443
        tls_config:
          cert_file: $tmp/client.crt
          key_file: $tmp/client.key
EOC
"$profd" check config --syntax-only "$tmp/missing.yml" >"$tmp/out" 2>&1 ||
	bad "--syntax-only looked for the client certificate: $(cat "$tmp/out")"
rc=0
"$profd" check config "$tmp/missing.yml" >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -qF "error checking client cert file \"$tmp/client.crt\"" "$tmp/out" ||
	bad "a missing client certificate: exit $rc: $(cat "$tmp/out")"
: >"$tmp/client.crt"
: >"$tmp/client.key"
"$profd" check config "$tmp/missing.yml" >"$tmp/out" 2>&1 ||
	bad "existing client certificate files: $(cat "$tmp/out")"

[ "$failures" = 0 ] || exit 1
echo "kubernetes_sd check config: good and bad files as Prometheus has them"
