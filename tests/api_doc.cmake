# Every curl example of docs/api.md, taken from the page, against profd running
# make run's jobs (examples/profd.yml): each succeeds, with data.
if(TARGET serve_profiles)
  add_test(NAME integration_api_doc
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/api_doc.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> ${PD_TESTDATA} ${PROJECT_SOURCE_DIR}/docs/api.md)
  set_tests_properties(integration_api_doc PROPERTIES LABELS integration TIMEOUT 300)
endif()

# The same 60 days on (faketime, every process of the test): the examples hold no
# date that the store's bounds leave behind as the calendar moves, such as a pushed
# file's own time_nanos behind the retention time measured from the scrapes.
# (ASan must come first among the preloaded libraries unless told otherwise.)
find_program(PD_FAKETIME faketime)
if(TARGET serve_profiles AND PD_FAKETIME)
  add_test(NAME integration_api_doc_aged
    COMMAND ${PD_FAKETIME} -f +60d ${CMAKE_CURRENT_LIST_DIR}/integration/api_doc.sh
            $<TARGET_FILE:profd> $<TARGET_FILE:serve_profiles> ${PD_TESTDATA}
            ${PROJECT_SOURCE_DIR}/docs/api.md)
  set_tests_properties(integration_api_doc_aged PROPERTIES LABELS integration TIMEOUT 300
    ENVIRONMENT "ASAN_OPTIONS=verify_asan_link_order=0")
endif()
