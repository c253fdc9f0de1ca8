# profd run's --legacy-max-stack-depth and --legacy-max-line on scraped and
# pushed legacy profiles: past them refused naming the flag, within them stored.
if(TARGET serve_profiles)
  find_program(PD_JQ jq REQUIRED)
  add_test(NAME integration_legacy_limits
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/legacy_limits.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> ${PD_TESTDATA})
  set_tests_properties(integration_legacy_limits PROPERTIES LABELS integration TIMEOUT 300)
endif()
