# Legacy profile formats where profiles enter a running profd: a scraped target
# serving gperftools/Go text profiles and pushes of binary CPU and Java profiles
# are stored as their conversion to profile.proto (report=proto serves protobuf
# that go tool pprof reads as it reads the original); bytes that are neither are
# refused with the formats tried.
if(TARGET serve_profiles)
  add_test(NAME integration_legacy_ingest
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/legacy_ingest.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> ${PD_TESTDATA})
  set_tests_properties(integration_legacy_ingest PROPERTIES LABELS integration TIMEOUT 300)
endif()
