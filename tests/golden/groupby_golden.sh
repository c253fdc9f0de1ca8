#!/usr/bin/env bash
# groupby_golden.sh: group_by (a merge split by series labels) through the query
# API against go tool pprof. Imports CPU and heap profiles of testdata into
# series of several instances and versions (one series without a version),
# runs profd on the store, and checks, for group_by=instance, version,
# instance,version, job and __name__:
#   - the groups answered are exactly the groups of the series (a missing label
#     grouping under ""), in label order, each with its profile and series counts;
#   - each group's report=top equals go tool pprof -top over exactly that group's
#     files, for every sample type, and its total and every sample type's total
#     of report=meta the sums of go tool pprof -raw over those files;
#   - group_limit keeps the heaviest groups, max_profiles cuts all groups at the
#     first profiles by time, tag_focus and group_by_sample_label apply inside
#     each group (go tool pprof -tagfocus over the group's files);
#   - bad values are a 400 naming the parameter.
#
#   groupby_golden.sh PROFD TESTDATA
set -euo pipefail

profd=$(realpath "$1")
data=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
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
g=$data/profiles/goapp
l=$data/profiles/labels
p=$data/profiles/prometheus

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

check() { # label condition-result(0/1)
	checked=$((checked + 1))
	if [ "$2" != 0 ]; then echo "FAIL: $1"; fail=1; fi
}

# go tool pprof -top in raw units: "total<TAB>T" then "name<TAB>flat<TAB>cum", sorted
go_top() { # unit index (empty: the default) args...
	local unit=$1 idx=$2
	shift 2
	[ -z "$idx" ] || set -- -sample_index="$idx" "$@"
	gopprof -top -nodefraction=0 -unit="$unit" "$@" 2>/dev/null |
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

json_top() {
	jq -r '"total\t\(.total)", (.rows[] | "\(.name)\t\(.flat)\t\(.cum)")' | LC_ALL=C sort
}

# go tool pprof -raw of the merged files: "type/unit<TAB>sum of |value|" per sample type
go_raw_totals() {
	gopprof -raw "$@" 2>/dev/null | perl -ne '
		if (/^Samples:/) { $h = <STDIN> // ""; @t = split " ", $h; s/\[dflt\]$// for @t; $on = 1; next }
		if ($on && /^\s*(-?\d+(?:\s+-?\d+)*):/) { my @v = split " ", $1; $s[$_] += abs($v[$_]) for 0 .. $#v; next }
		$on = 0 if $on && /^\S/;
		END { print "$t[$_]\t", ($s[$_] // 0), "\n" for 0 .. $#t }'
}

types_of() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/{getline; for (i = 1; i <= NF; i++) { sub(/\[dflt\]$/, "", $i); print $i }; exit}'
}

# ---- the series: type, instance, version ("-": none), files in time order
series=(
	"profile a v1 $g/cpu.pb.gz $g/cpu-2.pb.gz"
	"profile a v2 $g/cpu-3.pb.gz"
	"profile b v2 $l/cpu.pb.gz $l/cpu-2.pb.gz"
	"profile c - $g/cpu-large.pb.gz $p/cpu.pb.gz"
	"heap a v1 $g/heap.pb.gz $g/heap-2.pb.gz"
	"heap b v2 $l/heap.pb.gz"
	"heap c - $g/heap-3.pb.gz $p/heap.pb.gz"
)
store=$tmp/store
for s in "${series[@]}"; do
	read -r type inst ver files <<<"$s"
	lbl="$type{job=\"gb\",instance=\"$inst\""
	[ "$ver" = - ] || lbl="$lbl,version=\"$ver\""
	# shellcheck disable=SC2086
	"$profd" tsdb import --storage.tsdb.path="$store" --labels="$lbl}" $files >/dev/null
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
range=(--data-urlencode start=2026-11-22T18:00:00Z --data-urlencode end=2026-11-24T22:00:00Z)

# query ARGS...: the whole response of a success in $tmp/resp.json, its data on stdout;
# merges are sums (aggregation=sum), as go tool pprof merges, unless ARGS say otherwise
query() {
	local agg=(--data-urlencode aggregation=sum) a
	for a in "$@"; do case $a in aggregation=*) agg=() ;; esac; done
	curl -fsS -G "$api" --data-urlencode mode=merge "${agg[@]}" "${range[@]}" "$@" >"$tmp/resp.json" ||
		{ echo "query failed: $*" >&2; return 1; }
	jq -e '.status == "success"' "$tmp/resp.json" >/dev/null || { cat "$tmp/resp.json" >&2; return 1; }
	jq '.data' "$tmp/resp.json"
}

# expected TYPES KEYS: the groups of the series of TYPES (a regex) by KEYS
# (comma-separated), one line each in label order: "v1<SOH>v2...<TAB>nseries<TAB>files"
expected() {
	local types=$1 keys=$2
	for s in "${series[@]}"; do
		read -r type inst ver files <<<"$s"
		[[ $type =~ ^($types)$ ]] || continue
		local key="" k v
		IFS=, read -ra ks <<<"$keys"
		for k in "${ks[@]}"; do
			case $k in
			instance) v=$inst ;; version) v=${ver/#-/} ;; job) v=gb ;; __name__) v=$type ;; *) v="" ;;
			esac
			key+="$v"$'\x01'
		done
		printf '%s\t%s\n' "$key" "$files"
	done | LC_ALL=C sort -t$'\t' -k1,1 -s | awk -F'\t' '
		$1 != k { if (NR > 1) print k "\t" n "\t" f; k = $1; n = 0; f = "" }
		{ n++; f = f (f == "" ? "" : " ") $2 }
		END { if (NR) print k "\t" n "\t" f }'
}

# the groups of a group_by answer on stdin, as expected() names them (without files)
json_groups() { # keys
	jq -r --arg keys "$1" '.groups[] | .labels as $l |
		([$keys | split(",")[] | $l[.] + "\u0001"] | join("")) + "\t\(.seriesCount)\t\(.profileCount)"'
}

nfiles() { wc -w <<<"$1"; }

# group_by KEYS over SELECTOR (type regex TYPES): every group against go tool pprof,
# for every sample type (only the default one when the groups are of several types)
check_grouping() { # types selector keys
	local types=$1 sel=$2 keys=$3
	expected "$types" "$keys" >"$tmp/expect"
	rm -f "$tmp"/top-*.json
	awk -F'\t' '{ n = split($3, a, " "); print $1 "\t" $2 "\t" n }' "$tmp/expect" >"$tmp/want"
	query --data-urlencode "query=$sel" --data-urlencode report=meta \
		--data-urlencode "group_by=$keys" >"$tmp/meta.json"
	json_groups "$keys" <"$tmp/meta.json" >"$tmp/got"
	compare "$sel by $keys: the groups, their series and profile counts" "$tmp/want" "$tmp/got"
	check "$sel by $keys: groupBy" "$(jq -e --arg k "$keys" '.groupBy == ($k | split(","))' "$tmp/meta.json" >/dev/null; echo $?)"
	local gi=0
	while IFS=$'\t' read -r key ns files; do
		local name="$sel by $keys group $(tr '\001' ' ' <<<"$key")"
		# shellcheck disable=SC2086
		go_raw_totals $files >"$tmp/want"
		jq -r ".groups[$gi].report.sampleTypes[] | \"\(.type)/\(.unit)\t\(.total)\"" "$tmp/meta.json" >"$tmp/got"
		compare "$name: meta totals against -raw" "$tmp/want" "$tmp/got"
		# shellcheck disable=SC2086
		local first=${files%% *} i=0
		while read -r t; do
			local si=(--data-urlencode "sample_index=$i") idx=$i unit=${t#*/}
			if [[ $types == *'|'* ]]; then
				si=() idx=""
				unit=$(jq -r ".groups[$gi].unit" "$tmp/meta.json")
				t=$(jq -r ".groups[$gi] | \"\(.sampleType)/\(.unit)\"" "$tmp/meta.json")
			fi
			# shellcheck disable=SC2086
			go_top "$unit" "$idx" $files >"$tmp/want"
			# one query per sample type serves every group
			[ -s "$tmp/top-$i.json" ] || query --data-urlencode "query=$sel" --data-urlencode report=top \
				--data-urlencode "group_by=$keys" "${si[@]}" >"$tmp/top-$i.json"
			cp "$tmp/top-$i.json" "$tmp/top.json"
			jq ".groups[$gi].report" "$tmp/top.json" | json_top >"$tmp/got"
			compare "$name [$t]: top" "$tmp/want" "$tmp/got"
			# the group's own total is the top's
			check "$name [$t]: total" "$(jq -e ".groups[$gi] | .total == .report.total and .sampleType == .report.sampleType" "$tmp/top.json" >/dev/null; echo $?)"
			i=$((i + 1))
			[[ $types != *'|'* ]] || break
		done < <(types_of "$first")
		gi=$((gi + 1))
	done <"$tmp/expect"
}

check_grouping profile 'profile{job="gb"}' instance
check_grouping profile 'profile{job="gb"}' version
check_grouping profile 'profile{job="gb"}' instance,version
check_grouping heap 'heap{job="gb"}' version,instance
check_grouping heap 'heap{job="gb"}' job
check_grouping 'heap|profile' '{job="gb"}' __name__
check_grouping profile 'profile{job="gb"}' nosuchlabel

# the groups add up to the merge without group_by
whole=$(query --data-urlencode 'query=profile{job="gb"}' --data-urlencode report=top | jq .total)
sum=$(query --data-urlencode 'query=profile{job="gb"}' --data-urlencode report=top \
	--data-urlencode group_by=version | jq '[.groups[].total] | add')
check "the groups' totals ($sum) add up to the merge's ($whole)" "$([ "$whole" = "$sum" ]; echo $?)"

# group_limit: the heaviest groups stay, in label order; a warning says how many went
expected profile instance >"$tmp/expect"
while IFS=$'\t' read -r key ns files; do
	# shellcheck disable=SC2086
	printf '%s\t%s\n' "$(go_top nanoseconds 1 $files | awk -F'\t' '$1 == "total" {print $2}')" "${key%$'\x01'}"
done <"$tmp/expect" | sort -k1,1nr | head -2 | cut -f2 | LC_ALL=C sort >"$tmp/want"
query --data-urlencode 'query=profile{job="gb"}' --data-urlencode report=top \
	--data-urlencode group_by=instance --data-urlencode group_limit=2 >"$tmp/lim.json"
jq -r '.groups[].labels.instance' "$tmp/lim.json" >"$tmp/got"
compare "group_limit=2: the two heaviest instances" "$tmp/want" "$tmp/got"
check "group_limit=2: droppedGroups" "$(jq -e '.droppedGroups == 1' "$tmp/lim.json" >/dev/null; echo $?)"
check "group_limit=2: warning" "$(jq -e '.warnings | any(test("1 groups left out, beyond the 2 largest \\(group_limit\\)"))' "$tmp/resp.json" >/dev/null; echo $?)"

# max_profiles: the first 4 profiles by time are goapp's cpu, cpu-2, cpu-3 (a) and
# cpu-large (c)
query --data-urlencode 'query=profile{job="gb"}' --data-urlencode report=top \
	--data-urlencode group_by=instance --data-urlencode max_profiles=4 >"$tmp/cut.json"
jq -r '.groups[] | "\(.labels.instance) \(.profileCount)"' "$tmp/cut.json" >"$tmp/got"
printf 'a 3\nc 1\n' >"$tmp/want"
compare "max_profiles=4: groups" "$tmp/want" "$tmp/got"
go_top nanoseconds 1 "$g/cpu-large.pb.gz" >"$tmp/want"
jq '.groups[1].report' "$tmp/cut.json" | json_top >"$tmp/got"
compare "max_profiles=4: group c is cpu-large alone" "$tmp/want" "$tmp/got"
check "max_profiles=4: warning" "$(jq -e '.warnings | any(startswith("merge cut at 4 of 7 profiles by max_profiles"))' "$tmp/resp.json" >/dev/null; echo $?)"

# tag_focus inside the groups (only instance b has pprof labels)
query --data-urlencode 'query=profile{job="gb"}' --data-urlencode report=top \
	--data-urlencode group_by=instance --data-urlencode 'tag_focus=endpoint=/api' >"$tmp/focus.json"
for inst in a b c; do
	files=$(expected profile instance | awk -F'\t' -v k="$inst"$'\x01' '$1 == k {print $3}')
	# shellcheck disable=SC2086
	go_top nanoseconds 1 -tagfocus='endpoint=/api' $files | grep -v '^total' >"$tmp/want" || true
	jq --arg i "$inst" '.groups[] | select(.labels.instance == $i) | .report' "$tmp/focus.json" |
		json_top | grep -v '^total' >"$tmp/got" || true
	compare "tag_focus=endpoint=/api, instance $inst" "$tmp/want" "$tmp/got"
	# shellcheck disable=SC2086
	want=$(go_top nanoseconds 1 -tagfocus='endpoint=/api' $files | awk -F'\t' '$1 != "total" {s += $2} END {print s + 0}')
	got=$(jq --arg i "$inst" '.groups[] | select(.labels.instance == $i) | .total' "$tmp/focus.json")
	check "tag_focus=endpoint=/api, instance $inst: total $got, pprof's flat sum $want" "$([ "$want" = "$got" ]; echo $?)"
done

# group_by_sample_label nested in group_by: each inner group is pprof's
# -tagfocus=endpoint=^value$ (or -tagignore=endpoint=) over the outer group's files
query --data-urlencode 'query=profile{job="gb"}' --data-urlencode report=top \
	--data-urlencode group_by=instance --data-urlencode group_by_sample_label=endpoint >"$tmp/nest.json"
while IFS=$'\t' read -r key ns files; do
	inst=${key%$'\x01'}
	n=$(jq --arg i "$inst" '.groups[] | select(.labels.instance == $i) | .report.groups | length' "$tmp/nest.json")
	check "nested: instance $inst has sample groups" "$([ "${n:-0}" -gt 0 ]; echo $?)"
	for ((k = 0; k < ${n:-0}; k++)); do
		v=$(jq -r --arg i "$inst" ".groups[] | select(.labels.instance == \$i) | .report.groups[$k].value // \"\"" "$tmp/nest.json")
		if [ -z "$v" ]; then
			# shellcheck disable=SC2086
			go_top nanoseconds 1 -tagignore='endpoint=' $files >"$tmp/want"
		else
			# shellcheck disable=SC2086
			go_top nanoseconds 1 -tagfocus="endpoint=^$(perl -e 'print quotemeta($ARGV[0])' "$v")\$" $files >"$tmp/want"
		fi
		jq --arg i "$inst" ".groups[] | select(.labels.instance == \$i) | .report.groups[$k].report" "$tmp/nest.json" |
			json_top >"$tmp/got"
		compare "nested: instance $inst endpoint ${v:-(none)}" "$tmp/want" "$tmp/got"
	done
done < <(expected profile instance)
check "nested: instance b splits by endpoint" "$(jq -e '.groups[] | select(.labels.instance == "b") | .report.groups | length > 1' "$tmp/nest.json" >/dev/null; echo $?)"

# nothing in the range: null
query --data-urlencode 'query=profile{job="none"}' --data-urlencode group_by=instance >"$tmp/none.json"
check "no profile: null" "$([ "$(cat "$tmp/none.json")" = null ]; echo $?)"

# ---- aggregation: a merge's snapshot types (inuse_*) averaged by default, the
# rest summed; avg averages every type, sum none. Sample for sample against go tool
# pprof's merge of the same files with the values divided by the number of profiles
# (raw_samples.py), and the meta's aggregation and totals.
samples() { "$here/raw_samples.py" "$@"; }
agg_case() { # selector files...
	local sel=$1 n idx types avg_types=() all=() hdr
	shift
	n=$#
	mapfile -t types < <(types_of "$1")
	for idx in "${!types[@]}"; do
		all+=("$idx")
		case ${types[$idx]} in inuse_*) avg_types+=("$idx") ;; esac
	done
	gopprof -raw "$@" 2>/dev/null | samples >"$tmp/want.sum"
	gopprof -raw "$@" 2>/dev/null | samples --div "$n" --types "$(IFS=,; echo "${avg_types[*]}")" >"$tmp/want.default"
	gopprof -raw "$@" 2>/dev/null | samples --div "$n" --types "$(IFS=,; echo "${all[*]}")" >"$tmp/want.avg"
	for a in default sum avg average; do
		local arg=() want=$a
		[ "$a" = default ] || arg=(--data-urlencode "aggregation=$a")
		[ "$a" = average ] && want=avg
		curl -fsS -G "$api" -D "$tmp/hdr" -o "$tmp/agg.pb.gz" --data-urlencode mode=merge "${range[@]}" \
			--data-urlencode "query=$sel" --data-urlencode report=proto "${arg[@]}" || die "aggregation $a of $sel"
		gopprof -raw "$tmp/agg.pb.gz" 2>/dev/null | samples >"$tmp/got"
		compare "aggregation=$a of $sel ($n profiles): samples against pprof's merge" "$tmp/want.$want" "$tmp/got"
		hdr=$(tr -d '\r' <"$tmp/hdr" | sed -n 's/^[Xx]-[Pp]rofd-[Aa]ggregation: //p')
		local expect_hdr=$want
		[ "$want" != default ] || expect_hdr=$([ ${#avg_types[@]} = 0 ] && echo sum || { [ ${#avg_types[@]} = ${#all[@]} ] && echo avg || echo mixed; })
		check "aggregation=$a of $sel: X-Profd-Aggregation $hdr, want $expect_hdr" "$([ "$hdr" = "$expect_hdr" ]; echo $?)"
	done
	# meta: each sample type's aggregation and its total, the sum of the expected samples
	query --data-urlencode "query=$sel" --data-urlencode aggregation= >"$tmp/meta.json"
	for idx in "${!types[@]}"; do
		local wa=sum wt
		case ${types[$idx]} in inuse_*) wa=avg ;; esac
		wt=$(perl -ne 'my @v = split " ", (split / \| /)[0]; $s += abs($v['"$idx"']); END { print $s + 0, "\n" }' "$tmp/want.default")
		check "aggregation of $sel: meta ${types[$idx]} $(jq -c ".sampleTypes[$idx] | [.aggregation, .total]" "$tmp/meta.json"), want [$wa, $wt]" \
			"$(jq -e --arg a "$wa" --argjson t "$wt" ".sampleTypes[$idx] | .aggregation == \$a and .total == \$t" "$tmp/meta.json" >/dev/null; echo $?)"
	done
}
agg_case 'heap{job="gb",instance="a"}' "$g/heap.pb.gz" "$g/heap-2.pb.gz"
agg_case 'heap{job="gb",instance="c"}' "$g/heap-3.pb.gz" "$p/heap.pb.gz"
agg_case 'heap{job="gb"}' "$g/heap.pb.gz" "$g/heap-2.pb.gz" "$l/heap.pb.gz" "$g/heap-3.pb.gz" "$p/heap.pb.gz"
agg_case 'profile{job="gb",instance="a"}' "$g/cpu.pb.gz" "$g/cpu-2.pb.gz" "$g/cpu-3.pb.gz"
# group_by: each group averaged over its own profiles
query --data-urlencode 'query=heap{job="gb"}' --data-urlencode aggregation= --data-urlencode group_by=instance >"$tmp/gmeta.json"
gopprof -raw "$g/heap.pb.gz" "$g/heap-2.pb.gz" 2>/dev/null | samples --div 2 --types 2,3 >"$tmp/want.ga"
wt=$(perl -ne 'my @v = split " ", (split / \| /)[0]; $s += abs($v[3]); END { print $s + 0, "\n" }' "$tmp/want.ga")
check "aggregation: group_by=instance group a's inuse_space total $(jq '.groups[] | select(.labels.instance == "a") | .report.sampleTypes[3].total' "$tmp/gmeta.json"), want $wt" \
	"$(jq -e --argjson t "$wt" '.groups[] | select(.labels.instance == "a") | .report.sampleTypes[3] | .total == $t and .aggregation == "avg"' "$tmp/gmeta.json" >/dev/null; echo $?)"

# ---- bad values: a 400 naming the parameter
bad() { # param args...
	local param=$1 code
	shift
	code=$(curl -sS -o "$tmp/bad.json" -w '%{http_code}' -G "$api" "${range[@]}" "$@")
	checked=$((checked + 1))
	if [ "$code" != 400 ] || ! jq -e --arg p "invalid parameter \"$param\": " '.error | startswith($p)' "$tmp/bad.json" >/dev/null; then
		echo "FAIL: $*: want a 400 naming $param, got $code $(cat "$tmp/bad.json")"
		fail=1
	fi
}
q='query=profile{job="gb"}'
bad group_by --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode group_by=in-stance
bad group_by --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode group_by=0instance
bad group_by --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode 'group_by=instance,'
bad group_by --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode 'group_by=instance, instance'
bad group_by --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode group_by=instance --data-urlencode group_by=instance
bad group_by --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode "group_by=$(seq -s, -f 'l%g' 17)"
bad group_by --data-urlencode "$q" --data-urlencode group_by=instance
bad group_by --data-urlencode "$q" --data-urlencode mode=diff --data-urlencode a.time=2026-11-22T18:59:20Z \
	--data-urlencode b.time=2026-11-22T18:59:30Z --data-urlencode group_by=instance
bad group_by --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode group_by=instance --data-urlencode report=proto
bad aggregation --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode aggregation=median
bad group_limit --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode group_by=instance --data-urlencode group_limit=0
bad group_limit --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode group_by=instance --data-urlencode group_limit=1001
bad sample_index --data-urlencode "$q" --data-urlencode mode=merge --data-urlencode group_by=instance --data-urlencode sample_index=nosuch
# groups of two profile types cannot be merged: the message points at __name__
bad query --data-urlencode 'query={job="gb"}' --data-urlencode mode=merge --data-urlencode group_by=instance
checked=$((checked + 1))
jq -e '.error | endswith("select one profile type or group by __name__")' "$tmp/bad.json" >/dev/null ||
	{ echo "FAIL: mixed types: $(cat "$tmp/bad.json")"; fail=1; }

echo "group_by golden: $checked comparisons"
[ "$checked" -gt 0 ] || exit 1
exit $fail
