# --web.max-response-memory: a size as --storage.tsdb.retention.size takes it,
# more than 0 (the budget itself is tested in tests/unit/test_api_conn.c).
add_test(NAME cli_run_max_response_memory_bad COMMAND profd run --web.max-response-memory=12XB)
set_tests_properties(cli_run_max_response_memory_bad PROPERTIES LABELS unit TIMEOUT 30
  PASS_REGULAR_EXPRESSION "--web.max-response-memory: .*unknown unit XB")
add_test(NAME cli_run_max_response_memory_zero COMMAND profd run --web.max-response-memory=0)
set_tests_properties(cli_run_max_response_memory_zero PROPERTIES LABELS unit TIMEOUT 30
  PASS_REGULAR_EXPRESSION "--web.max-response-memory: must be more than 0")
