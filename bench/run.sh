#!/usr/bin/env bash
# bench/run.sh: profd's pprof tool against `go tool pprof`, side by side on the same
# files, as whole processes (start-up, reading, decoding, reporting, writing), so
# that the speed claims of the issues are measured rather than assumed.
#
# usage: bench/run.sh PROFD_BINARY          (`make bench` passes build/release/profd)
#
# Cases (bench/README.md says what each measures):
#   top <type>   `profd pprof top F` vs `go tool pprof -top F`, for files of every
#                profile type of the Prometheus corpus; time per file
#   top cpu-large  the same on testdata/profiles/goapp/cpu-large.pb.gz (>= 1 MB raw)
#   merge 100    `profd pprof merge -o X F...` vs `go tool pprof -proto F... > X`
#                over 100 files of the heap sample types (heap 1-48, allocs 1-48,
#                heap 1-4 again)
#
# Environment:
#   BENCH_RUNS=N      timed runs per case, the median is reported (default 7)
#   BENCH_PER_TYPE=N  corpus files per type in the top cases (default 8; 0 = all)
#   PD_CORPUS=DIR     the corpus (default: shared/corpus/prometheus beside the repo)
#   GO=go             the go command whose `go tool pprof` is the reference
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 PROFD_BINARY" >&2
	exit 2
fi
profd=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
runs=${BENCH_RUNS:-7}
per_type=${BENCH_PER_TYPE:-8}
corpus=${PD_CORPUS:-$repo/../shared/corpus/prometheus}
large=$repo/testdata/profiles/goapp/cpu-large.pb.gz
go=${GO:-go}

die() {
	echo "bench: $*" >&2
	exit 1
}

[ -x "$profd" ] || die "$1 is not an executable; build it first (make build)"
command -v "$go" >/dev/null || die "'$go' not found: the reference is go tool pprof (Debian package golang-go)"
[ -d "$corpus" ] || die "corpus $corpus not found (set PD_CORPUS to the folder of per-type profile folders)"
[ -f "$large" ] || die "$large is missing: the large-CPU case needs a real CPU profile of >= 1 MB" \
	"(raw); testdata/gen/goapp makes it. It is not replaced by a merge of small ones."
gotool=$("$go" env GOTOOLDIR)/pprof
[ -x "$gotool" ] || die "$gotool not found: go tool pprof is not installed"
timebin=
if [ -x /usr/bin/time ]; then
	timebin=/usr/bin/time
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# go tool pprof must not try to fetch symbols or binaries; it reads the files only
export PPROF_BINARY_PATH=$tmp/none PPROF_TMPDIR=$tmp

# The clock is bash's EPOCHREALTIME (bash >= 5), read straight into variables:
# `date` or a $(...) would start a process and be timed with the command.
[ -n "${EPOCHREALTIME:-}" ] || die "bash 5 or later is needed (EPOCHREALTIME)"

# median of the numbers on stdin
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# run_loop CMDFILE: runs every line of CMDFILE (one command each) once, in order;
# fails when any command fails.
run_loop() {
	local line
	while IFS= read -r line; do
		eval "$line" >/dev/null 2>"$tmp/err" || {
			cat "$tmp/err" >&2
			die "command failed: $line"
		}
	done <"$1"
}

# time_pass CMDFILE: wall time of one pass over the commands of CMDFILE, in ns.
time_pass() {
	local t0 t1
	t0=${EPOCHREALTIME/[.,]/}
	run_loop "$1"
	t1=${EPOCHREALTIME/[.,]/}
	echo $(((10#$t1 - 10#$t0) * 1000))
}

# time_cases CMDFILE...: one warm-up pass over each file, then BENCH_RUNS rounds
# that time one pass of each file in turn (so that a burst of load elsewhere on
# the machine falls on all of them alike); prints the median pass time of each
# file in ns, one a line.
time_cases() {
	local f i k
	for f in "$@"; do run_loop "$f"; done
	for ((i = 0; i < runs; i++)); do
		k=0
		for f in "$@"; do
			time_pass "$f" >>"$tmp/times.$k"
			k=$((k + 1))
		done
	done
	k=0
	for f in "$@"; do
		median <"$tmp/times.$k"
		rm -f "$tmp/times.$k"
		k=$((k + 1))
	done
}

# peak_kb CMDFILE: the largest maximum resident set of any command in CMDFILE, in
# KiB ("-" without /usr/bin/time).
peak_kb() {
	if [ -z "$timebin" ]; then
		echo "-"
		return
	fi
	local line kb max=0
	while IFS= read -r line; do
		eval "$timebin -f %M -o $tmp/rss $line" >/dev/null 2>&1 || die "command failed: $line"
		kb=$(tail -1 "$tmp/rss")
		((kb > max)) && max=$kb
	done <"$1"
	echo "$max"
}

ms() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.1f", n / d / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
mib() { [ "$1" = "-" ] && echo "-" || awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

rows=()
# bench NAME COUNT PROFD_CMDS GOTOOL_CMDS PPROF_CMDS: times the three command
# files (COUNT commands each) and records a row of per-command figures.
bench() {
	local name=$1 count=$2
	local tp tg td mp mg
	echo "bench: $name ..." >&2
	{ read -r tp; read -r tg; read -r td; } < <(time_cases "$3" "$4" "$5")
	mp=$(peak_kb "$3")
	mg=$(peak_kb "$5")
	rows+=("$(printf '%-28s %10s %14s %8s %12s %8s %10s %10s' "$name" \
		"$(ms "$tp" "$count")" "$(ms "$tg" "$count")" "$(ratio "$tg" "$tp")" \
		"$(ms "$td" "$count")" "$(ratio "$td" "$tp")" "$(mib "$mp")" "$(mib "$mg")")")
	last_ratio=$(awk -v a="$tg" -v b="$tp" 'BEGIN { printf "%.1f", a / b }')
	last_ratio_direct=$(awk -v a="$td" -v b="$tp" 'BEGIN { printf "%.1f", a / b }')
}

q() { printf '%q' "$1"; }

# ---- (a) top, per profile type ------------------------------------------------
checks=()
for dir in "$corpus"/*/; do
	type=$(basename "$dir")
	mapfile -t files < <(find "$dir" -maxdepth 1 -type f -name '*.pb.gz' | sort -V)
	[ ${#files[@]} -gt 0 ] || continue
	if [ "$per_type" -gt 0 ] && [ ${#files[@]} -gt "$per_type" ]; then
		# spread the chosen files over the whole scrape sequence
		mapfile -t files < <(printf '%s\n' "${files[@]}" |
			awk -v n="$per_type" -v t=${#files[@]} '{ a[NR] = $0 } END { for (i = 0; i < n; i++) print a[int(i * t / n) + 1] }')
	fi
	: >"$tmp/p" && : >"$tmp/g" && : >"$tmp/d"
	for f in "${files[@]}"; do
		echo "$(q "$profd") pprof top $(q "$f")" >>"$tmp/p"
		echo "$(q "$go") tool pprof -top $(q "$f")" >>"$tmp/g"
		echo "$(q "$gotool") -top $(q "$f")" >>"$tmp/d"
	done
	bench "top $type (${#files[@]} files)" ${#files[@]} "$tmp/p" "$tmp/g" "$tmp/d"
	checks+=("top $type $last_ratio $last_ratio_direct 10")
done

# ---- (b) top of a large CPU profile --------------------------------------------
raw_kb=$(($(gzip -dc "$large" | wc -c) / 1024))
echo "$(q "$profd") pprof top $(q "$large")" >"$tmp/p"
echo "$(q "$go") tool pprof -top $(q "$large")" >"$tmp/g"
echo "$(q "$gotool") -top $(q "$large")" >"$tmp/d"
bench "top cpu-large (${raw_kb} KiB)" 1 "$tmp/p" "$tmp/g" "$tmp/d"
checks+=("top cpu-large $last_ratio $last_ratio_direct 10")

# ---- (c) merge of 100 profiles --------------------------------------------------
mapfile -t heap < <(find "$corpus/heap" -maxdepth 1 -type f -name '*.pb.gz' | sort -V)
mapfile -t allocs < <(find "$corpus/allocs" -maxdepth 1 -type f -name '*.pb.gz' | sort -V)
merge_files=("${heap[@]}" "${allocs[@]}")
for ((i = 0; ${#merge_files[@]} < 100; i++)); do
	merge_files+=("${heap[i % ${#heap[@]}]}")
done
merge_files=("${merge_files[@]:0:100}")
args=""
for f in "${merge_files[@]}"; do args+=" $(q "$f")"; done
echo "$(q "$profd") pprof merge -o $(q "$tmp/merged-profd.pb.gz")$args" >"$tmp/p"
echo "$(q "$go") tool pprof -proto$args > $(q "$tmp/merged-go.pb.gz")" >"$tmp/g"
echo "$(q "$gotool") -proto$args > $(q "$tmp/merged-go.pb.gz")" >"$tmp/d"
bench "merge 100 heap-type" 1 "$tmp/p" "$tmp/g" "$tmp/d"
checks+=("merge 100 $last_ratio $last_ratio_direct 5")

# the merged profiles must agree: same top table (raw values) from both tools
"$gotool" -raw "$tmp/merged-profd.pb.gz" >/dev/null 2>&1 ||
	die "go tool pprof cannot read profd's merged profile"
top10() { "$gotool" -top -nodecount=10 -sample_index=alloc_space "$1" 2>/dev/null | sed -n '/flat%/,$p'; }
if ! diff <(top10 "$tmp/merged-profd.pb.gz") <(top10 "$tmp/merged-go.pb.gz") >/dev/null; then
	echo "bench: warning: profd's and go tool pprof's merges give different top tables" >&2
fi

# the cost of starting any process here, which bounds every whole-process ratio
echo "/bin/true" >"$tmp/t"
for ((i = 0; i < 19; i++)); do echo "/bin/true" >>"$tmp/t"; done
floor=$(time_cases "$tmp/t")

# ---- report ---------------------------------------------------------------------
echo
echo "profd pprof vs go tool pprof, whole processes; median of $runs runs after a warm-up;"
echo "times in ms per file (per command); ratio = reference time / profd time;"
echo "RSS = largest maximum resident set of one command, MiB"
echo "merge input: 100 files = heap 1-48, allocs 1-48, heap 1-4 again (heap and allocs"
echo "share their sample types: alloc_objects, alloc_space, inuse_objects, inuse_space)"
echo "corpus: $corpus"
echo "process start floor on this machine: $(ms "$floor" 20) ms (/bin/true, same loop)"
echo
printf '%-28s %10s %14s %8s %12s %8s %10s %10s\n' case "profd ms" "go tool ms" ratio \
	"pprof ms" ratio "profd RSS" "pprof RSS"
printf '%-28s %10s %14s %8s %12s %8s %10s %10s\n' "" "" "(go tool pprof)" "" "(direct)" "" "" ""
for r in "${rows[@]}"; do echo "$r"; done
echo
echo "'go tool' runs the go command, which starts the pprof binary; 'direct' starts"
echo "$gotool itself, without the go command's start-up."
echo
echo "aims (against go tool pprof): top >= 10x, merge >= 5x"
for c in "${checks[@]}"; do
	read -r kind name r rd aim <<<"$c"
	verdict=$(awk -v r="$r" -v a="$aim" 'BEGIN { print (r >= a) ? "met" : "NOT met" }')
	printf '  %-5s %-14s %6sx (aim %sx): %-7s  against the pprof binary direct: %sx\n' \
		"$kind" "$name" "$r" "$aim" "$verdict" "$rd"
done
