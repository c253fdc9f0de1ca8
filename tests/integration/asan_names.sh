#!/usr/bin/env bash
# asan_names.sh: AddressSanitizer's frames (libasan is C++: its symbols are mangled)
# named as go tool pprof names them, on every path a name takes in profd.
#   1. tests/names/asan_busy.c, built with -fsanitize=address and gperftools'
#      -lprofiler, is profiled for real (CPUPROFILE) until libasan has at least 10
#      samples. The profile (addresses only) is pushed to a running profd, whose
#      symbolizer names libasan's frames from the mapped file (its ELF symbol tables:
#      Debian ships no debug file for it). report=top has demangled, simplified
#      names (no row is a mangled _Z... symbol; libasan's C++ functions are there),
#      and its rows equal go tool pprof -top's on the same symbolized profile
#      (report=proto). symbolize=demangle=full gives the parameters; symbolize=false
#      the frames as stored.
#   2. When profd itself runs under AddressSanitizer (a PD_SANITIZE build), its own
#      CPU profile (/debug/pprof/profile, named by its own ELF reader with the
#      symbols as linked) has mangled libasan names, which profd pprof top shows as
#      go tool pprof -top does.
#
#   asan_names.sh PROFD CC ASAN_BUSY_C
set -euo pipefail
profd=$(realpath "$1")
cc=$2
src=$(realpath "$3")
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail() {
	echo "FAIL: $*" >&2
	tail -20 "$tmp/profd.log" >&2 2>/dev/null || true
	exit 1
}
wait_for() {
	local timeout=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what (waited ${timeout} s)"
		sleep 0.2
	done
}
pprof_bin=$(go env GOTOOLDIR)/pprof
gopprof() {
	if [ -x "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" "$@")
	else
		(cd "$tmp" && go tool pprof "$@")
	fi
}
# go tool pprof -top as "name<TAB>flat<TAB>cum" in raw units, marks left out, sorted
go_rows() { # FLAGS... FILE
	gopprof -top -nodecount=100000 -nodefraction=0 "$@" 2>/dev/null |
		perl -ne '
			$on = 1, next if /^\s+flat\s+flat%/;
			next unless $on;
			next unless /\A\s*(\S+)\s+\S+\s+\S+\s+(\S+)\s+\S+  (.*?)\n?\z/s;
			my ($f, $c, $n) = ($1, $2, $3);
			$n =~ s/ \((partial-)?inline\)$//;
			s/[A-Za-z]+$// for ($f, $c);
			print "$n\t$f\t$c\n";' | LC_ALL=C sort
}

# ---- 1. a sanitized program's profile through the symbolizer ----------------------------
"$cc" -g -O1 -fsanitize=address -o "$tmp/busy" "$src" -Wl,--no-as-needed -lprofiler
asan_samples() {
	"$profd" pprof top --format=tsv --sample-index=samples "$tmp/busy.cpu" |
		awk -F '\t' '$1 == "[libasan.so.8.0.0]" || $1 ~ /^\[libasan/ {print $3}' | sort -n | tail -1
}
run_ms=300
deadline=$((SECONDS + 120))
while :; do
	rm -f "$tmp/busy.cpu"
	CPUPROFILE=$tmp/busy.cpu CPUPROFILE_FREQUENCY=1000 ASAN_OPTIONS=detect_leaks=0 \
		"$tmp/busy" "$run_ms" >/dev/null 2>&1
	n=$(asan_samples)
	[ "${n:-0}" -ge 10 ] && break
	[ "$SECONDS" -lt "$deadline" ] || fail "libasan never had 10 samples within 120 s (last: ${n:-0})"
	run_ms=$((run_ms * 2))
done

echo 'scrape_configs: []' >"$tmp/profd.yml"
: >"$tmp/profd.log"
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address=127.0.0.1:0 --symbolizer.debuginfod-urls= \
	--symbolizer.timeout=10s >"$tmp/profd.log" 2>&1 &
pids+=($!)
listening() {
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ]
}
wait_for 60 "profd did not start" listening
api="http://127.0.0.1:$port"
T=$(date +%s)
curl -fsS -o /dev/null --data-binary "@$tmp/busy.cpu" \
	"$api/api/v1/profiles?labels=$(jq -rn '"cpu{job=\"asan\"}" | @uri')&time=$T" ||
	fail "pushing the gperftools profile"
q() { echo "$api/api/v1/query?query=$(jq -rn '"cpu{job=\"asan\"}" | @uri')&time=$T&sample_index=samples$1"; }
named() {
	curl -fsS -o "$tmp/top.json" "$(q '&report=top')" &&
		jq -e '[.data.rows[].name] | map(test("^__asan::")) | any' "$tmp/top.json" >/dev/null
}
wait_for 60 "libasan's frames never named: $(jq -c '[.data.rows[].name]' "$tmp/top.json" 2>/dev/null)" named
jq -r '.data.rows[] | "\(.name)\t\(.flat)\t\(.cum)"' "$tmp/top.json" | LC_ALL=C sort >"$tmp/got"
if grep -q '^_Z' "$tmp/got"; then
	fail "report=top shows mangled names: $(grep '^_Z' "$tmp/got" | head -5 | tr '\n' ' ')"
fi
grep -qE '^__(asan|sanitizer)::[A-Za-z_:]+'$'\t' "$tmp/got" ||
	fail "no demangled libasan C++ function: $(cut -f1 "$tmp/got" | tr '\n' ' ')"
# the same symbolized profile under go tool pprof
curl -fsS -o "$tmp/sym.pb.gz" "$(q '&report=proto')" || fail "report=proto"
go_rows -symbolize=remote -sample_index=samples "$tmp/sym.pb.gz" >"$tmp/want"
[ -s "$tmp/want" ] || fail "go tool pprof printed no rows for the symbolized profile"
diff -u "$tmp/want" "$tmp/got" >"$tmp/diff" ||
	fail "report=top differs from go tool pprof -top on report=proto: $(head -40 "$tmp/diff")"
echo "1. $(grep -c '' "$tmp/got") rows as go tool pprof's, e.g. $(grep -m1 '^__asan::' "$tmp/got" | cut -f1)"
# pprof's full demangling, and the frames as stored
curl -fsS -o "$tmp/full.json" "$(q '&report=top&symbolize=demangle=full')" || fail "demangle=full"
jq -e '[.data.rows[].name] | map(test("^__asan::.*\\(.*\\)")) | any' "$tmp/full.json" >/dev/null ||
	fail "symbolize=demangle=full: no libasan name with parameters: $(jq -c '[.data.rows[].name]' "$tmp/full.json")"
curl -fsS -o "$tmp/raw.json" "$(q '&report=top&symbolize=false')" || fail "symbolize=false"
jq -e '[.data.rows[].name] | index("[libasan.so.8.0.0]") != null' "$tmp/raw.json" >/dev/null ||
	fail "symbolize=false: libasan's frames are not as stored: $(jq -c '[.data.rows[].name]' "$tmp/raw.json")"
code=$(curl -sS -o "$tmp/bad.json" -w '%{http_code}' "$(q '&report=top&symbolize=demangle=yes')")
if [ "$code" != 400 ] || ! jq -e '.error | test("demangle=yes")' "$tmp/bad.json" >/dev/null; then
	fail "symbolize=demangle=yes: $code $(cat "$tmp/bad.json")"
fi

# ---- 2. profd's own profile, when profd runs under AddressSanitizer -----------------------
if ldd "$profd" | grep -q libasan; then
	load() { while :; do curl -s -o /dev/null "$(q '&report=top')" || true; done; }
	load &
	pids+=($!)
	deadline=$((SECONDS + 90))
	while :; do
		curl -fsS -o "$tmp/self.pb.gz" "$api/debug/pprof/profile?seconds=2" || fail "/debug/pprof/profile"
		"$profd" pprof top --format=tsv --symbolize=none "$tmp/self.pb.gz" | grep -q '^_Z' && break
		[ "$SECONDS" -lt "$deadline" ] || fail "profd's own profile never had a mangled name in 90 s"
	done
	go_rows -symbolize=remote -unit=ns "$tmp/self.pb.gz" >"$tmp/want"
	"$profd" pprof top --format=tsv "$tmp/self.pb.gz" |
		perl -ne 'print "$1\t$2\t$3\n" if /^(.*?)\t(-?\d+)\t(-?\d+)$/' | LC_ALL=C sort >"$tmp/got"
	if grep -q '^_Z' "$tmp/got"; then fail "profd pprof top shows mangled names"; fi
	diff -u "$tmp/want" "$tmp/got" >"$tmp/diff" ||
		fail "profd pprof top of profd's own profile differs from go tool pprof -top: $(head -40 "$tmp/diff")"
	echo "2. profd's own profile: $(grep -c '' "$tmp/got") rows as go tool pprof's"
else
	echo "2. profd does not run under AddressSanitizer: its own profile has no libasan frame"
fi
echo "1 passed, 0 failed"
