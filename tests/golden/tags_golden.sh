#!/usr/bin/env bash
# tags_golden.sh: labels on samples through the query API against go tool pprof.
# Imports the profiles of testdata/profiles/labels (captured from a Go program
# using pprof.Do; heap and allocs carry Go's numeric "bytes" label) into a store,
# runs profd on it, and compares, for every file and sample type:
#   - report=top with tag_focus / tag_ignore (string regexes, bare values, comma
#     lists, numeric ranges with units) with go tool pprof -top -tagfocus/-tagignore
#     (every function's flat and cum, and the total);
#   - report=tags with go tool pprof -tags (keys, values, totals, order);
#   - group_by_sample_label on a merge and on a single profile with
#     go tool pprof -tagfocus=key=^value$ per value (and -tagignore=key= for the
#     samples without the key);
#   - two tag_focus values with go tool pprof run again on its own filtered output;
#   - normalize on a diff with go tool pprof -normalize -diff_base;
#   - granularity=lines|files|addresses|functions with pprof's -lines ...;
#   - the stack filters focus, ignore, hide, show, show_from and prune_from on
#     report=top and report=proto with go tool pprof's -focus ... -prune_from;
#   - bad values: 400 naming the parameter.
#
#   tags_golden.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
tmp=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=${HOME:-$tmp} PPROF_TMPDIR=$tmp
fail=0
checked=0
lab=$data/profiles/labels

# the pprof binary itself when it is there (the go command's start-up is a good
# part of the time of a small report, and the test runs a great many), else go tool pprof
pprof_bin=$(go env GOTOOLDIR)/pprof
gopprof() {
	if [ -x "$pprof_bin" ]; then
		(cd "$tmp" && "$pprof_bin" -symbolize=none "$@")
	else
		(cd "$tmp" && go tool pprof -symbolize=none "$@")
	fi
}

die() { echo "FAIL: $*"; tail -20 "$tmp/profd.log" 2>/dev/null; exit 1; }

compare() { # label expected actual
	checked=$((checked + 1))
	if ! diff -u "$2" "$3" >"$tmp/diff.out"; then
		echo "FAIL: $1"
		head -n 30 "$tmp/diff.out"
		fail=1
	fi
}

types_of() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/{getline; for (i = 1; i <= NF; i++) { sub(/\[dflt\]$/, "", $i); print $i }; exit}'
}

# go tool pprof -top in raw units: "total<TAB>T" then "name<TAB>flat<TAB>cum" sorted.
go_top() { # unit index args...
	local unit=$1 idx=$2
	shift 2
	gopprof -top -nodefraction=0 -unit="$unit" -sample_index="$idx" "$@" 2>/dev/null |
		perl -ne '
			if (/^Showing nodes accounting for \S+, \S+ of (\S+) total/) { my $t = $1; $t =~ s/[A-Za-z]+$//; print "total\t$t\n"; next }
			if (/^\s+flat\s+flat%/) { $on = 1; next }
			next unless $on;
			chomp;
			next unless /^\s*(\S+)\s+\S+\s+\S+\s+(\S+)\s+\S+  (.*)$/;
			my ($f, $c, $n) = ($1, $2, $3);
			$n =~ s/ \((partial-)?inline\)$//;
			s/[A-Za-z]+$// for ($f, $c);
			print "$n\t$f\t$c\n";' | LC_ALL=C sort
}

# the same from a report=top JSON object on stdin
json_top() {
	jq -r '"total\t\(.total)", (.rows[] | "\(.name)\t\(.flat)\t\(.cum)")' | LC_ALL=C sort
}

# go tool pprof -tags in raw units: "key<TAB>total" and "key<TAB>value<TAB>total", in order
go_tags() { # unit index args...
	local unit=$1 idx=$2
	shift 2
	gopprof -tags -unit="$unit" -sample_index="$idx" "$@" 2>/dev/null |
		perl -ne '
			chomp;
			next if /^\s*$/;
			if (/^\s*(\S.*?): Total ([-0-9.]+)[A-Za-z]*$/) { $k = $1; my $t = $2; $t =~ s/\.0$//; print "$k\t$t\n"; next }
			if (/^\s+([-0-9.]+)[A-Za-z]*(?: \(\s*[^)]*%\))?:\s(.*)$/) { my ($t, $v) = ($1, $2); $t =~ s/\.0$//; $v =~ s/^\s+//; print "$k\t$v\t$t\n" }'
}

json_tags() {
	jq -r '.keys[] | .key as $k | "\($k)\t\(.total)", (.values[] | "\($k)\t\(.value)\t\(.total)")'
}

# ---- the store and the server

store=$tmp/store
for f in "$lab"/*.pb.gz; do
	base=$(basename "$f" .pb.gz)
	type=${base%%-*}
	[ "$type" = cpu ] && type=profile
	"$profd" tsdb import --storage.tsdb.path="$store" \
		--labels="$type{job=\"labels\",file=\"$base\"}" "$f" >/dev/null
done
printf 'global:\n  scrape_interval: 1m\nscrape_configs: []\n' >"$tmp/profd.yml"
"$profd" run --config.file="$tmp/profd.yml" --storage.tsdb.path="$store" \
	--storage.tsdb.retention.time=100y --web.listen-address=127.0.0.1:0 2>"$tmp/profd.log" &
pid=$!
deadline=$((SECONDS + 60))
port=""
until [ -n "$port" ]; do
	port=$(sed -n 's/.*msg="listening" .* port=\([0-9]*\).*/\1/p' "$tmp/profd.log" 2>/dev/null | head -1 || true)
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || die "profd exited"
	[ "$SECONDS" -lt "$deadline" ] || die "profd did not start (waited 60 s)"
	sleep 0.2
done
api="http://127.0.0.1:$port/api/v1/query"

# the time of a file's profile, in seconds, just after it
time_of() {
	local t
	t=$(gopprof -raw "$1" 2>/dev/null | sed -n 's/^Time: \(.*\) +0000 UTC$/\1 UTC/p' | head -1)
	echo $(($(date -u -d "$t" +%s) + 1))
}

# query ARGS...: GET /api/v1/query, the data of a success on stdout
query() {
	curl -fsS -G "$api" "$@" >"$tmp/resp.json" || { echo "query failed: $*" >&2; return 1; }
	jq -e '.status == "success"' "$tmp/resp.json" >/dev/null || { cat "$tmp/resp.json" >&2; return 1; }
	jq '.data' "$tmp/resp.json"
}

single() { # file args...
	local f=$1 base type
	shift
	base=$(basename "$f" .pb.gz)
	type=${base%%-*}
	[ "$type" = cpu ] && type=profile
	query --data-urlencode "query=$type{file=\"$base\"}" --data-urlencode "time=$(time_of "$f")" "$@"
}

str_focus=('endpoint=/api' 'endpoint=/api,/health' 'endpoint=^/a' '/health' 'endpoint:/api,shard:2'
	'shard=1:2' 'tenant=' 'shard=[13]' '(?i)ADMIN' 'endpoint=^/api$' '=health')
str_ignore=('endpoint=/health' 'shard=3' 'tenant=' '/api')
num_focus=('bytes=1kb:' 'bytes=:4kb' 'bytes=72kb' 'bytes=4kb:1mb' '1mb' 'bytes=96' 'bytes=4096:73728'
	'bytes=1kb:2' 'bytes=.*')
num_ignore=('bytes=:1kb' 'bytes=72kb')

for f in "$lab"/*.pb.gz; do
	base=$(basename "$f" .pb.gz)
	case $base in
	heap* | allocs*) focus=("${num_focus[@]}") ignore=("${num_ignore[@]}") ;;
	*) focus=("${str_focus[@]}") ignore=("${str_ignore[@]}") ;;
	esac
	i=0
	while read -r t; do
		unit=${t#*/}
		for x in "${focus[@]}"; do
			go_top "$unit" "$i" -tagfocus="$x" "$f" >"$tmp/want"
			single "$f" --data-urlencode report=top --data-urlencode "sample_index=$i" \
				--data-urlencode "tag_focus=$x" | json_top >"$tmp/got"
			compare "top $base [$t] tag_focus=$x" "$tmp/want" "$tmp/got"
		done
		for x in "${ignore[@]}"; do
			go_top "$unit" "$i" -tagignore="$x" "$f" >"$tmp/want"
			single "$f" --data-urlencode report=top --data-urlencode "sample_index=$i" \
				--data-urlencode "tag_ignore=$x" | json_top >"$tmp/got"
			compare "top $base [$t] tag_ignore=$x" "$tmp/want" "$tmp/got"
		done
		# focus and ignore together
		go_top "$unit" "$i" -tagfocus="${focus[0]}" -tagignore="${ignore[0]}" "$f" >"$tmp/want"
		single "$f" --data-urlencode report=top --data-urlencode "sample_index=$i" \
			--data-urlencode "tag_focus=${focus[0]}" --data-urlencode "tag_ignore=${ignore[0]}" |
			json_top >"$tmp/got"
		compare "top $base [$t] tag_focus=${focus[0]} tag_ignore=${ignore[0]}" "$tmp/want" "$tmp/got"
		# tags, in the sample unit (numeric values then print unscaled) and as pprof
		# names them by default
		go_tags "$unit" "$i" "$f" >"$tmp/want"
		single "$f" --data-urlencode report=tags --data-urlencode "sample_index=$i" \
			--data-urlencode "unit=$unit" | json_tags >"$tmp/got"
		compare "tags $base [$t]" "$tmp/want" "$tmp/got"
		gopprof -tags -sample_index="$i" "$f" 2>/dev/null | sed -n 's/^.*%)\?: *//p' >"$tmp/want"
		single "$f" --data-urlencode report=tags --data-urlencode "sample_index=$i" |
			jq -r '.keys[].values[].value' >"$tmp/got"
		compare "tags $base [$t] value names" "$tmp/want" "$tmp/got"
		go_tags "$unit" "$i" -tagfocus="${focus[0]}" "$f" >"$tmp/want"
		single "$f" --data-urlencode report=tags --data-urlencode "sample_index=$i" \
			--data-urlencode "unit=$unit" --data-urlencode "tag_focus=${focus[0]}" | json_tags >"$tmp/got"
		compare "tags $base [$t] tag_focus=${focus[0]}" "$tmp/want" "$tmp/got"
		i=$((i + 1))
	done < <(types_of "$f")
done

# ---- two tag_focus values: pprof run again on its own filtered output
gopprof -proto -tagfocus='endpoint=/api' "$lab/cpu.pb.gz" >"$tmp/f1.pb.gz" 2>/dev/null
go_top nanoseconds 1 -tagfocus='shard=^2$' "$tmp/f1.pb.gz" | { grep -v '^total' || true; } >"$tmp/want"
single "$lab/cpu.pb.gz" --data-urlencode report=top --data-urlencode sample_index=1 \
	--data-urlencode 'tag_focus=endpoint=/api' --data-urlencode 'tag_focus=shard=^2$' |
	json_top | { grep -v '^total' || true; } >"$tmp/got"
checked=$((checked + 1))
[ -s "$tmp/want" ] || { echo "FAIL: two tag_focus values: pprof kept nothing"; fail=1; }
compare "top cpu tag_focus=endpoint=/api tag_focus=shard=^2$" "$tmp/want" "$tmp/got"

# ---- group_by_sample_label: each group is pprof's -tagfocus=key=^value$
group_check() { # label unit index key json-file go-files...
	local label=$1 unit=$2 idx=$3 key=$4 json=$5
	shift 5
	local n
	n=$(jq '.groups | length' "$json")
	checked=$((checked + 1))
	[ "$n" -gt 1 ] || { echo "FAIL: $label: $n groups"; fail=1; }
	for ((g = 0; g < n; g++)); do
		v=$(jq -r ".groups[$g].value // \"\"" "$json")
		if [ "$(jq ".groups[$g].value == null" "$json")" = true ]; then
			go_top "$unit" "$idx" -tagignore="$key=" "$@" >"$tmp/want"
		else
			go_top "$unit" "$idx" -tagfocus="$key=^$(perl -e 'print quotemeta($ARGV[0])' "$v")\$" "$@" >"$tmp/want"
		fi
		jq ".groups[$g].report" "$json" | json_top >"$tmp/got"
		compare "$label group ${v:-(none)}" "$tmp/want" "$tmp/got"
	done
	# one value of the key per sample: the groups' totals add up to the whole
	checked=$((checked + 1))
	local whole sum
	whole=$(go_top "$unit" "$idx" "$@" | awk -F'\t' '$1 == "total" {print $2}')
	sum=$(jq '[.groups[].total] | add' "$json")
	if [ "$whole" != "$sum" ]; then
		echo "FAIL: $label: the groups' totals add up to $sum, not the whole profile's $whole"
		fail=1
	fi
}

s1=$(time_of "$lab/cpu.pb.gz")
s2=$(time_of "$lab/cpu-2.pb.gz")
lo=$(( (s1 < s2 ? s1 : s2) - 60 ))
hi=$(( (s1 > s2 ? s1 : s2) + 60 ))
for key in endpoint shard tenant; do
	query --data-urlencode 'query=profile{job="labels"}' --data-urlencode mode=merge \
		--data-urlencode "start=$lo" --data-urlencode "end=$hi" --data-urlencode report=top \
		--data-urlencode sample_index=1 --data-urlencode "group_by_sample_label=$key" >"$tmp/groups.json"
	group_check "merge cpu+cpu-2 by $key" nanoseconds 1 "$key" "$tmp/groups.json" "$lab/cpu.pb.gz" "$lab/cpu-2.pb.gz"
done
single "$lab/goroutine.pb.gz" --data-urlencode report=top --data-urlencode group_by_sample_label=endpoint >"$tmp/groups.json"
group_check "goroutine by endpoint" count 0 endpoint "$tmp/groups.json" "$lab/goroutine.pb.gz"

# ---- stack filters (focus ... prune_from) through the API, alone and beside
# tag_focus: report=top against go tool pprof -top with the same flags, and
# report=proto (the filtered profile itself) read back by go tool pprof
stack_cases=("focus=runtime" "ignore=runtime\\.gopark" "hide=runtime\\." "show=main\\."
	"show_from=main\\." "prune_from=runtime\\.(mallocgc|gopark)")
for f in "$lab"/*.pb.gz; do
	base=$(basename "$f" .pb.gz)
	for c in "${stack_cases[@]}"; do
		k=${c%%=*}
		v=${c#*=}
		go_top "" 0 "-$k=$v" "$f" | sed 's/^total\t.*//' >"$tmp/want0"
		go_top "" 0 "-$k=$v" "$f" >"$tmp/want"
		single "$f" --data-urlencode report=top --data-urlencode sample_index=0 \
			--data-urlencode "$k=$v" | json_top >"$tmp/got"
		compare "top $base $c" "$tmp/want" "$tmp/got"
		curl -fsS -G "$api" --data-urlencode "query=$( [ "${base%%-*}" = cpu ] && echo profile || echo "${base%%-*}"){file=\"$base\"}" \
			--data-urlencode "time=$(time_of "$f")" --data-urlencode report=proto \
			--data-urlencode "$k=$v" -o "$tmp/filtered.pb.gz"
		go_top "" 0 "$tmp/filtered.pb.gz" | sed 's/^total\t.*//' >"$tmp/got"
		compare "proto $base $c" "$tmp/want0" "$tmp/got"
	done
done
# granularity: pprof's -lines, -files, -addresses, alone and with a stack filter
for g in lines files addresses functions; do
	go_top nanoseconds 1 "-$g" "$lab/cpu.pb.gz" >"$tmp/want"
	single "$lab/cpu.pb.gz" --data-urlencode report=top --data-urlencode sample_index=1 \
		--data-urlencode "granularity=$g" | json_top >"$tmp/got"
	compare "top cpu granularity=$g" "$tmp/want" "$tmp/got"
	go_top nanoseconds 1 "-$g" -hide=runtime "$lab/cpu.pb.gz" >"$tmp/want"
	single "$lab/cpu.pb.gz" --data-urlencode report=top --data-urlencode sample_index=1 \
		--data-urlencode "granularity=$g" --data-urlencode hide=runtime | json_top >"$tmp/got"
	compare "top cpu granularity=$g hide=runtime" "$tmp/want" "$tmp/got"
done
# normalize on a diff: b scaled to a's totals first, as pprof's -normalize, and
# without it the plain difference; the two must differ for the check to mean much
for nz in true false; do
	for si in 0 1; do
		if [ $nz = true ]; then nf=-normalize; else nf=; fi
		go_top "$( [ $si = 1 ] && echo nanoseconds || echo count)" $si $nf -diff_base="$lab/cpu.pb.gz" "$lab/cpu-2.pb.gz" >"$tmp/want"
		query --data-urlencode mode=diff --data-urlencode report=top --data-urlencode sample_index=$si \
			--data-urlencode 'a.query=profile{file="cpu"}' --data-urlencode "a.time=$(time_of "$lab/cpu.pb.gz")" \
			--data-urlencode 'b.query=profile{file="cpu-2"}' --data-urlencode "b.time=$(time_of "$lab/cpu-2.pb.gz")" \
			--data-urlencode "normalize=$nz" | json_top >"$tmp/got"
		compare "diff cpu-2 - cpu [$si] normalize=$nz" "$tmp/want" "$tmp/got"
		cp "$tmp/got" "$tmp/diff-$nz-$si"
	done
done
checked=$((checked + 1))
cmp -s "$tmp/diff-true-1" "$tmp/diff-false-1" && { echo "FAIL: normalize changed nothing"; fail=1; }
# a diff's top rows carry each side's values: baseFlat/baseCum are go tool pprof -top's
# of side a alone, newFlat/newCum side b's (0 for a function a side does not have), and
# baseTotal/newTotal the sides' totals; with a stack filter too
side_cols() { # want-a want-b json: "name<TAB>aflat<TAB>acum<TAB>bflat<TAB>bcum" per diff row, sorted
	perl -e '
		my ($fa, $fb, $fj) = @ARGV;
		for my $p ([$fa, \%a], [$fb, \%b]) { open my $h, "<", $p->[0] or die; while (<$h>) { chomp; my ($n, $f, $c) = split /\t/; next if $n eq "total"; $p->[1]{$n} = [$f, $c] } }
		open my $j, "<", $fj or die;
		while (<$j>) { chomp; my ($n) = split /\t/; my $x = $a{$n} // [0, 0]; my $y = $b{$n} // [0, 0]; print join("\t", $n, @$x, @$y), "\n" }' "$@" | LC_ALL=C sort
}
for filt in "" "focus=main"; do
	for si in 0 1; do
		unit=$([ $si = 1 ] && echo nanoseconds || echo count)
		go_top "$unit" $si ${filt:+-$filt} "$lab/cpu.pb.gz" >"$tmp/want-a"
		go_top "$unit" $si ${filt:+-$filt} "$lab/cpu-2.pb.gz" >"$tmp/want-b"
		query --data-urlencode mode=diff --data-urlencode report=top --data-urlencode sample_index=$si \
			--data-urlencode 'a.query=profile{file="cpu"}' --data-urlencode "a.time=$(time_of "$lab/cpu.pb.gz")" \
			--data-urlencode 'b.query=profile{file="cpu-2"}' --data-urlencode "b.time=$(time_of "$lab/cpu-2.pb.gz")" \
			${filt:+--data-urlencode "$filt"} >"$tmp/dcols.json"
		jq -r '.rows[] | .name' "$tmp/dcols.json" >"$tmp/dnames"
		side_cols "$tmp/want-a" "$tmp/want-b" "$tmp/dnames" >"$tmp/want"
		jq -r '.rows[] | "\(.name)\t\(.baseFlat)\t\(.baseCum)\t\(.newFlat)\t\(.newCum)"' "$tmp/dcols.json" | LC_ALL=C sort >"$tmp/got"
		compare "diff cpu-2 - cpu [$si] ${filt:-unfiltered}: each side's flat and cum" "$tmp/want" "$tmp/got"
		checked=$((checked + 1))
		ta=$(sed -n 's/^total\t//p' "$tmp/want-a")
		tb=$(sed -n 's/^total\t//p' "$tmp/want-b")
		[ -n "$filt" ] || jq -e --argjson a "$ta" --argjson b "$tb" '.baseTotal == $a and .newTotal == $b' "$tmp/dcols.json" >/dev/null ||
			{ echo "FAIL: diff [$si]: baseTotal/newTotal $(jq -c '[.baseTotal, .newTotal]' "$tmp/dcols.json"), want [$ta, $tb]"; fail=1; }
	done
done
go_top nanoseconds 1 -focus=main -tagfocus='endpoint=/api' "$lab/cpu.pb.gz" >"$tmp/want"
single "$lab/cpu.pb.gz" --data-urlencode report=top --data-urlencode sample_index=1 \
	--data-urlencode focus=main --data-urlencode 'tag_focus=endpoint=/api' | json_top >"$tmp/got"
compare "top cpu focus=main tag_focus=endpoint=/api" "$tmp/want" "$tmp/got"
single "$lab/cpu.pb.gz" --data-urlencode report=top --data-urlencode focus=xyzzy_nothing >/dev/null
checked=$((checked + 1))
jq -e '.warnings | any(test("stack filters .* left no sample"))' "$tmp/resp.json" >/dev/null ||
	{ echo "FAIL: focus matching nothing: no warning in $(cat "$tmp/resp.json")"; fail=1; }

# ---- bad values
bad() { # param value
	local code
	code=$(curl -sS -o "$tmp/bad.json" -w '%{http_code}' -G "$api" --data-urlencode 'query=profile{file="cpu"}' \
		--data-urlencode "time=$s1" --data-urlencode report=top --data-urlencode "$1=$2")
	checked=$((checked + 1))
	if [ "$code" != 400 ] || ! jq -e --arg p "invalid parameter \"$1\": " '.error | startswith($p)' "$tmp/bad.json" >/dev/null; then
		echo "FAIL: $1=$2: want a 400 naming the parameter, got $code $(cat "$tmp/bad.json")"
		fail=1
	fi
}
bad tag_focus 'endpoint=('
bad tag_ignore 'a**'
bad tag_focus 'bytes=99999999999999999999'
bad tag_focus "k=$(printf 'a,%.0s' $(seq 40))"
bad sample_group_limit 0
for p in focus ignore hide show show_from prune_from; do bad $p '(a'; done
bad granularity statements
checked=$((checked + 1))
code=$(curl -sS -o "$tmp/bad.json" -w '%{http_code}' -G "$api" --data-urlencode mode=diff \
	--data-urlencode 'query=profile{file="cpu"}' --data-urlencode "a.time=$s1" --data-urlencode "b.time=$s1" \
	--data-urlencode report=top --data-urlencode normalize=maybe)
[ "$code" = 400 ] && jq -e '.error | startswith("invalid parameter \"normalize\": ")' "$tmp/bad.json" >/dev/null ||
	{ echo "FAIL: normalize=maybe: want a 400 naming normalize, got $code $(cat "$tmp/bad.json")"; fail=1; }

echo "tags golden: $checked comparisons"
[ "$checked" -gt 0 ] || exit 1
exit $fail
