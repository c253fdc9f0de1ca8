# The HTTP API answers connections whose descriptors are past 1024 (a profd
# with thousands of targets holds that many).
add_test(NAME integration_api_fds
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/api_fds.sh $<TARGET_FILE:profd>)
set_tests_properties(integration_api_fds PROPERTIES LABELS integration TIMEOUT 180)
