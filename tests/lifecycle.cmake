# The gated write endpoints of the daemon: /-/reload and /-/quit refused without
# --web.enable-lifecycle and working with it (a quit stops profd cleanly and loses
# nothing), pushes refused with --no-web.enable-push.
add_test(NAME integration_lifecycle
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/lifecycle.sh $<TARGET_FILE:profd> ${PD_TESTDATA})
set_tests_properties(integration_lifecycle PROPERTIES LABELS integration TIMEOUT 240)

# boolean flags of profd run: --flag, --no-flag, --flag=true|false, nothing else
add_test(NAME cli_run_bool_flag_bad_value COMMAND profd run --web.enable-lifecycle=yes)
set_tests_properties(cli_run_bool_flag_bad_value PROPERTIES
  PASS_REGULAR_EXPRESSION "--web.enable-lifecycle: yes is not true or false")
add_test(NAME cli_run_bool_flag_negated_value COMMAND profd run --no-web.enable-push=false)
set_tests_properties(cli_run_bool_flag_negated_value PROPERTIES
  PASS_REGULAR_EXPRESSION "--no-web.enable-push takes no value")
add_test(NAME cli_run_bool_flag_separate_value COMMAND profd run --web.enable-lifecycle false)
set_tests_properties(cli_run_bool_flag_separate_value PROPERTIES
  PASS_REGULAR_EXPRESSION "false: unexpected argument \\(a boolean flag takes its value after =")
set_tests_properties(cli_run_bool_flag_bad_value cli_run_bool_flag_negated_value
  cli_run_bool_flag_separate_value PROPERTIES
  LABELS unit TIMEOUT 30)
