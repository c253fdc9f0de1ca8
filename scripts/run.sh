#!/usr/bin/env bash
# What `make run` starts: profd with examples/profd.yml, storing into ./data, and
# scraping itself (job "profd") and the demo Go program examples/demo-go (job "demo"),
# which this script builds and starts in the background when the Go toolchain is
# there (scripts/deps.sh installs it). Ctrl-C stops both.
#
#   scripts/run.sh [PROFD_BINARY]        (default build/release/profd)
#
# Settings, from the environment or as make variables (`make run PROFD_LISTEN=...`):
#   PROFD_LISTEN     profd's HTTP address, as --web.listen-address (default :10902)
#   PROFD_DATA       the storage directory (default data/ in the project)
#   PROFD_CONFIG     the configuration file (default examples/profd.yml)
#   PROFD_DEMO_ADDR  the demo program's address (default 127.0.0.1:6060)
#   PROFD_DEMO       0: do not start the demo program
#   PROFD_ARGS       more flags for `profd run`, e.g. --log.level=debug
# profd runs with the defaults of `profd run` otherwise: it listens on every
# interface, so POST /-/reload and /-/quit stay off (anyone on the network could
# send them); reload with Ctrl-C and `make run` again, `kill -HUP`, or turn them
# on with PROFD_ARGS=--web.enable-lifecycle. Pushes (POST /api/v1/profiles) are on.
# With the default configuration, the two targets in it follow PROFD_LISTEN and
# PROFD_DEMO_ADDR: profd then runs with a copy of examples/profd.yml with those
# addresses rewritten (build/run-profd.yml). A configuration of your own is used as
# it is.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
profd=$(realpath "${1:-$here/build/release/profd}")
listen=${PROFD_LISTEN:-:10902}
data=${PROFD_DATA:-$here/data}
config=${PROFD_CONFIG:-$here/examples/profd.yml}
demo_addr=${PROFD_DEMO_ADDR:-127.0.0.1:6060}
read -r -a extra <<<"${PROFD_ARGS:-}"

die() { echo "run.sh: $*" >&2; exit 2; }
[ -x "$profd" ] || die "no profd binary at $profd (make build makes it)"
[ -f "$config" ] || die "no configuration at $config"

# the address profd's own target and the curl examples use: the listen address,
# with a loopback host when it listens on every interface
port=${listen##*:}
host=${listen%:*}
case "$port" in '' | *[!0-9]* | 0) die "PROFD_LISTEN=$listen: needs host:port (or :port) with a fixed port" ;; esac
case "$host" in
'' | 0.0.0.0) host=127.0.0.1 ;;
'[::]') host='[::1]' ;;
esac
self="$host:$port"
browse=$self
[ "$host" = 127.0.0.1 ] && browse="localhost:$port"

mkdir -p "$here/build"
if [ "$config" = "$here/examples/profd.yml" ] && { [ "$self" != 127.0.0.1:10902 ] || [ "$demo_addr" != 127.0.0.1:6060 ]; }; then
	sed -e "s/'127\.0\.0\.1:10902'/'$self'/; s/'127\.0\.0\.1:6060'/'$demo_addr'/" "$config" >"$here/build/run-profd.yml"
	config=$here/build/run-profd.yml
fi

demo_pid=
stop_demo() {
	if [ -n "$demo_pid" ]; then
		kill "$demo_pid" 2>/dev/null || true
		wait "$demo_pid" 2>/dev/null || true
	fi
}
trap stop_demo EXIT

demo_note="the demo program (job=\"demo\") at $demo_addr"
if [ "${PROFD_DEMO:-1}" = 0 ]; then
	demo_note="$demo_addr (job=\"demo\"; not started: PROFD_DEMO=0)"
elif curl -fs --max-time 2 -o /dev/null "http://$demo_addr/debug/pprof/cmdline" 2>/dev/null; then
	demo_note="the program already serving $demo_addr (job=\"demo\")"
elif ! command -v go >/dev/null; then
	demo_note="$demo_addr (job=\"demo\"; down: Go is not installed, so the demo program was not built)"
else
	echo "building the demo program (examples/demo-go)..."
	if (cd "$here/examples/demo-go" && GOFLAGS=-mod=mod GOPROXY=off go build -o "$here/build/demo-go" .); then
		"$here/build/demo-go" -addr "$demo_addr" >"$here/build/demo-go.log" 2>&1 &
		demo_pid=$!
	else
		demo_note="$demo_addr (job=\"demo\"; down: building the demo program failed)"
	fi
fi

# a link straight to a timeline of CPU profiles (percent-encoded, so terminals linkify
# all of it): the demo's when it runs, else profd's own
first_job=demo
case "$demo_note" in *'not started'* | *down:*) first_job=profd ;; esac
first_link="http://$browse/?query=profile%7Bjob%3D%22$first_job%22%7D&range=15m"

"$profd" --version
cat <<MSG

profd is starting, with its API and UI on http://$browse/
It profiles itself (job="profd": CPU and heap) and scrapes $demo_note,
every 15 s, storing into $data. The first profiles appear within a minute. Try:
  the UI:       http://$browse/  (pick a profile type, then click a mark on the timeline)
  CPU profiles: $first_link
  the targets:  curl -s $browse/api/v1/targets
  a top table:  curl -G $browse/api/v1/query --data-urlencode 'query=profile{job="demo"}' --data-urlencode report=top
  in pprof:     go tool pprof 'http://$browse/api/v1/query?query=heap{job="demo"}&report=proto'
Configuration: ${config#"$here/"}. Ctrl-C stops profd and the demo program.

MSG
rc=0
"$profd" run --config.file="$config" --storage.tsdb.path="$data" --web.listen-address="$listen" \
	${extra[@]+"${extra[@]}"} || rc=$?
exit $rc
