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
