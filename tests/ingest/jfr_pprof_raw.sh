#!/usr/bin/env bash
# jfr_pprof_raw.sh: go tool pprof -raw, the reference reader of pprof, on profd's
# conversions of some of Pyroscope's JFR test recordings and on the profiles
# Pyroscope returns for them (testdata/pyroscope/jfr/): after ids are replaced
# by what they name (each sample's locations by function and line), equal
# stacks summed and the lines sorted, both print the same samples, sample type
# and period type. (Period, time, duration and the default sample type, [dflt],
# are not compared: Pyroscope's query path sets them in its answers, not its
# converter.) test_ingest_jfr writes the conversions when PD_JFR_DUMP names a
# folder.
#
# usage: jfr_pprof_raw.sh TEST_INGEST_JFR SOURCE_DIR
set -euo pipefail
bin=$1 src=$2
dir=$src/testdata/pyroscope/jfr
command -v go >/dev/null || { echo "jfr_pprof_raw: go not found (Debian golang-go)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PD_JFR_DUMP=$work "$bin" >"$work/test.log" 2>&1 || { cat "$work/test.log" >&2; exit 1; }

canon() {
	go tool pprof -raw "$@" 2>/dev/null | awk '
	/^PeriodType:/ { print "period " $2 " " $3; next }
	/^Samples:/ { sec = "s"; getline; sub(/\[dflt\]/, ""); print "types " $0; next }
	/^Locations/ { sec = "l"; next }
	/^Mappings/ { sec = "m"; next }
	sec == "s" && /^ *-?[0-9]+: / {
		n++; v = $1; sub(/:$/, "", v); val[n] = v; st[n] = ""
		for (i = 2; i <= NF; i++) st[n] = st[n] " " $i
		next
	}
	sec == "s" && n { lab[n] = lab[n] $0; next }
	sec == "l" && /^ *[0-9]+: / {
		id = $1; sub(/:$/, "", id); s = ""
		for (i = 2; i <= NF; i++) if ($i !~ /^0x/ && $i !~ /^M=/) s = s " " $i
		loc[id] = s; cur = id; next
	}
	sec == "l" { loc[cur] = loc[cur] " +" $0; next }
	END {
		for (i = 1; i <= n; i++) {
			k = ""; m = split(st[i], a, " ")
			for (j = 1; j <= m; j++) k = k ";" loc[a[j]]
			sum[k "|" lab[i]] += val[i]
		}
		for (k in sum) if (sum[k] != 0) print sum[k] " " k
	}' | LC_ALL=C sort
}

failed=0 checked=0
for jfr in cortex-dev-01__kafka-0__cpu__0 cortex-dev-01__kafka-0__cpu__1 \
	cortex-dev-01__kafka-0__cpu__2 cortex-dev-01__kafka-0__cpu__3 \
	cortex-dev-01__kafka-0__cpu_lock_alloc__0; do
	want=$dir/$jfr.jfr.gz.process_cpu_cpu_nanoseconds_cpu_nanoseconds.17241709254077376921.pb.gz
	got=("$work/$jfr.jfr.gz".*.profile.pb)
	[ -f "${got[0]}" ] || { echo "jfr_pprof_raw: $jfr: no converted cpu profile" >&2; failed=1; continue; }
	canon "$want" >"$work/want"
	canon "${got[@]}" >"$work/got"
	if [ "$(wc -l <"$work/want")" -lt 10 ]; then
		echo "jfr_pprof_raw: $jfr: go tool pprof -raw printed almost nothing" >&2
		failed=1
	elif ! diff -u "$work/want" "$work/got" >"$work/diff"; then
		echo "jfr_pprof_raw: $jfr: go tool pprof -raw differs:" >&2
		head -20 "$work/diff" >&2
		failed=1
	fi
	checked=$((checked + 1))
done
[ "$failed" = 0 ] && echo "jfr_pprof_raw: $checked conversions print as Pyroscope's profiles do"
exit $failed
