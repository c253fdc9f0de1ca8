# The command line: flags are checked before their values, and a flag is never
# taken as another flag's value.
add_test(NAME cli_tsdb_unknown_flag COMMAND profd tsdb query --bogus)
set_tests_properties(cli_tsdb_unknown_flag PROPERTIES PASS_REGULAR_EXPRESSION "unknown flag --bogus")
add_test(NAME cli_tsdb_flag_as_value COMMAND profd tsdb dump-profile /nonexistent x --time --output=-)
set_tests_properties(cli_tsdb_flag_as_value PROPERTIES PASS_REGULAR_EXPRESSION "flag --time needs a value")
add_test(NAME cli_run_flag_as_value COMMAND profd run --config.file --log.level=debug)
set_tests_properties(cli_run_flag_as_value PROPERTIES PASS_REGULAR_EXPRESSION "--config.file: needs a value")
add_test(NAME cli_run_unknown_flag COMMAND profd run --web.no-such-flag=x)
set_tests_properties(cli_run_unknown_flag PROPERTIES PASS_REGULAR_EXPRESSION "unknown flag --web.no-such-flag")
set_tests_properties(cli_tsdb_unknown_flag cli_tsdb_flag_as_value cli_run_flag_as_value
  cli_run_unknown_flag PROPERTIES LABELS unit TIMEOUT 30)

# --web.external-url and --web.route-prefix: bad values are refused before anything
# starts, with the flag named (the full checks are in test_api's test_prefix_flags).
add_test(NAME cli_run_external_url_scheme COMMAND profd run --web.external-url=ftp://proxy/profd/)
set_tests_properties(cli_run_external_url_scheme PROPERTIES PASS_REGULAR_EXPRESSION
  "--web.external-url: parse external URL ftp://proxy/profd/: scheme \"ftp\" is not supported; use http or https")
add_test(NAME cli_run_route_prefix_dots COMMAND profd run --web.route-prefix=/a/../b)
set_tests_properties(cli_run_route_prefix_dots PROPERTIES PASS_REGULAR_EXPRESSION
  "--web.route-prefix: /a/../b: the path holds a \"\\.\" or \"\\.\\.\" segment")
set_tests_properties(cli_run_external_url_scheme cli_run_route_prefix_dots PROPERTIES
  LABELS unit TIMEOUT 30)
# the report=svg layout limits refuse values that bound nothing
add_test(NAME cli_run_callgraph_timeout COMMAND profd run --callgraph.timeout=0s)
set_tests_properties(cli_run_callgraph_timeout PROPERTIES PASS_REGULAR_EXPRESSION
  "--callgraph.timeout: 0s must be longer than 0")
add_test(NAME cli_run_callgraph_memory COMMAND profd run --callgraph.max-memory=512KiB)
set_tests_properties(cli_run_callgraph_memory PROPERTIES PASS_REGULAR_EXPRESSION
  "--callgraph.max-memory: must be at least 1MB")
add_test(NAME cli_run_callgraph_concurrency COMMAND profd run --callgraph.max-concurrency=0)
set_tests_properties(cli_run_callgraph_concurrency PROPERTIES PASS_REGULAR_EXPRESSION
  "--callgraph.max-concurrency: 0 is not a whole number from 1 to 1000")
set_tests_properties(cli_run_callgraph_timeout cli_run_callgraph_memory
  cli_run_callgraph_concurrency PROPERTIES LABELS unit TIMEOUT 30)

# profd tsdb import: --help after the subcommand; a profile at a time its series
# already holds (repeated in the input, or in the store from an earlier import)
# is skipped and counted, not fatal and not stored twice; progress only on a
# terminal (script(1) gives it one); the blocks it writes are logged with their
# values as fields.
add_test(NAME cli_tsdb_import_help COMMAND profd tsdb import --help)
set_tests_properties(cli_tsdb_import_help PROPERTIES PASS_REGULAR_EXPRESSION
  "import --storage.tsdb.path=DIR")
add_test(NAME cli_tsdb_import_duplicates COMMAND sh -c [=[
set -eu
profd=$1 g=$2/profiles/goapp
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$profd" tsdb import --storage.tsdb.path="$tmp/d" --labels='heap{job="x"}' \
  "$g/heap.pb.gz" "$g/heap-2.pb.gz" "$g/heap.pb.gz" >"$tmp/out" 2>"$tmp/err" || fail "import: $(cat "$tmp/err")"
cat "$tmp/out"
grep -q '^imported 2 profiles into' "$tmp/out" || fail "first import: $(cat "$tmp/out")"
grep -q '^skipped 1 duplicate .*1 repeated in the input, 0 already in the store; the first: .*heap.pb.gz$' "$tmp/out" ||
  fail "first import: $(cat "$tmp/out")"
! grep -q "$(printf '\r')" "$tmp/err" || fail "progress written to a file"
grep -Eq 'level=info component=tsdb msg="block written" ulid=[0-9A-Z]{26} mint=[0-9]+ maxt=[0-9]+ series=1$' "$tmp/err" ||
  fail "no block written line with fields: $(cat "$tmp/err")"
"$profd" tsdb import --storage.tsdb.path="$tmp/d" --labels='heap{job="x"}' \
  "$g/heap.pb.gz" "$g/heap-2.pb.gz" "$g/heap-3.pb.gz" >"$tmp/out" 2>"$tmp/err" || fail "re-import: $(cat "$tmp/err")"
cat "$tmp/out"
grep -q '^imported 1 profile into' "$tmp/out" || fail "re-import: $(cat "$tmp/out")"
grep -q '^skipped 2 duplicates .*0 repeated in the input, 2 already in the store' "$tmp/out" ||
  fail "re-import: $(cat "$tmp/out")"
# another series (more labels) at the same times is not a duplicate
"$profd" tsdb import --storage.tsdb.path="$tmp/d" --labels='heap{job="x",instance="b"}' \
  "$g/heap.pb.gz" >"$tmp/out" 2>"$tmp/err" || fail "another series: $(cat "$tmp/err")"
grep -q '^imported 1 profile into' "$tmp/out" && ! grep -q skipped "$tmp/out" || fail "another series: $(cat "$tmp/out")"
"$profd" tsdb query "$tmp/d" 'heap{job="x",instance=""}' >"$tmp/q"
grep -q '^heap{job="x"} 3 samples' "$tmp/q" || fail "stored: $(cat "$tmp/q")"
script -qec "'$profd' tsdb import --storage.tsdb.path='$tmp/d2' --labels='heap{job=\"x\"}' '$g/heap.pb.gz' '$g/heap-2.pb.gz'" /dev/null >"$tmp/tty"
grep -q "$(printf '\r')profd tsdb import: appending 2/2 files" "$tmp/tty" || fail "no progress on a terminal: $(cat -v "$tmp/tty")"
echo PASS]=] sh $<TARGET_FILE:profd> ${PD_TESTDATA})
set_tests_properties(cli_tsdb_import_help cli_tsdb_import_duplicates PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME cli_run_max_series_not_a_number COMMAND profd run --storage.tsdb.max-series=lots)
set_tests_properties(cli_run_max_series_not_a_number PROPERTIES LABELS unit TIMEOUT 30 PASS_REGULAR_EXPRESSION "--storage.tsdb.max-series: lots is not a whole number \\(0: no limit\\)")

# the limits of pushes, queries and stored profiles: bad values are refused before
# anything starts, naming the flag
add_test(NAME cli_run_max_pushes_zero COMMAND profd run --web.max-concurrent-pushes=0)
set_tests_properties(cli_run_max_pushes_zero PROPERTIES PASS_REGULAR_EXPRESSION
  "--web.max-concurrent-pushes: 0 is not a whole number from 1 to 100000")
add_test(NAME cli_run_query_concurrency_bad COMMAND profd run --query.max-concurrency=many)
set_tests_properties(cli_run_query_concurrency_bad PROPERTIES PASS_REGULAR_EXPRESSION
  "--query.max-concurrency: many is not a whole number")
add_test(NAME cli_run_gzip_ratio_bad COMMAND profd run --storage.tsdb.max-profile-gzip-ratio=-5)
set_tests_properties(cli_run_gzip_ratio_bad PROPERTIES PASS_REGULAR_EXPRESSION
  "--storage.tsdb.max-profile-gzip-ratio: -5 is not a whole number from 1 to 1000000")
add_test(NAME cli_run_decoded_size_zero COMMAND profd run --storage.tsdb.max-profile-decoded-size=0)
set_tests_properties(cli_run_decoded_size_zero PROPERTIES PASS_REGULAR_EXPRESSION
  "--storage.tsdb.max-profile-decoded-size: must be more than 0")
set_tests_properties(cli_run_max_pushes_zero cli_run_query_concurrency_bad cli_run_gzip_ratio_bad
  cli_run_decoded_size_zero PROPERTIES LABELS unit TIMEOUT 30)

# profd __callgraph-layout, the program a report=svg layout runs as: DOT on stdin,
# SVG on stdout; arguments that set no memory limit are refused
add_test(NAME cli_callgraph_layout_svg COMMAND sh -c
  "printf 'digraph \"g\" { cli -> svg }' | \"$1\" __callgraph-layout 1073741824" sh $<TARGET_FILE:profd>)
set_tests_properties(cli_callgraph_layout_svg PROPERTIES PASS_REGULAR_EXPRESSION ">cli</text>")
add_test(NAME cli_callgraph_layout_usage COMMAND profd __callgraph-layout 0)
set_tests_properties(cli_callgraph_layout_usage PROPERTIES PASS_REGULAR_EXPRESSION
  "usage: profd __callgraph-layout MAX_MEMORY_BYTES < graph.dot")
set_tests_properties(cli_callgraph_layout_svg cli_callgraph_layout_usage PROPERTIES
  LABELS unit TIMEOUT 30)

# --storage.tsdb.max-future-time takes a duration
add_test(NAME cli_run_max_future_time COMMAND profd run --storage.tsdb.max-future-time=10x)
set_tests_properties(cli_run_max_future_time PROPERTIES PASS_REGULAR_EXPRESSION
  "--storage.tsdb.max-future-time: unknown unit \"x\" in duration \"10x\"" LABELS unit TIMEOUT 30)
