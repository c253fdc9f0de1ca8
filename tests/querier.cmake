# Pyroscope's query API (querier.v1.QuerierService) against a running profd:
# tests/querier/querier_client.py (Debian's python3-protobuf and protoc) makes the
# Grafana data source's calls; go tool pprof and /prometheus are the references
if(TARGET profd)
  find_program(GO_BIN_FOR_QUERIER go REQUIRED)
  find_program(PROTOC_FOR_QUERIER protoc REQUIRED)
  find_program(JQ_FOR_QUERIER jq REQUIRED)
  add_test(NAME integration_querier
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/querier.sh $<TARGET_FILE:profd>
            ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/testdata)
  set_tests_properties(integration_querier PROPERTIES LABELS integration TIMEOUT 600)
endif()
