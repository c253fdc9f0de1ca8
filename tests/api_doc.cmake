# Every curl example of docs/api.md, taken from the page, against profd running
# make run's jobs (examples/profd.yml): each succeeds, with data.
if(TARGET serve_profiles)
  add_test(NAME integration_api_doc
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/api_doc.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> ${PD_TESTDATA} ${PROJECT_SOURCE_DIR}/docs/api.md)
  set_tests_properties(integration_api_doc PROPERTIES LABELS integration TIMEOUT 300)
endif()
