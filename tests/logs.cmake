# The daemon's log lines keep their values in key=value fields (logfmt and JSON):
# a reload and a scrape failure of profd against itself.
add_test(NAME integration_logs
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/logs.sh $<TARGET_FILE:profd>)
set_tests_properties(integration_logs PROPERTIES LABELS integration TIMEOUT 180)
