# A password in a ClickHouse URL flag never shows: flags endpoint, cmdline
# endpoint and the process list, a failed read's error, the log.
add_test(NAME integration_secrets
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/secrets.sh $<TARGET_FILE:profd>)
set_tests_properties(integration_secrets PROPERTIES LABELS integration TIMEOUT 180)
