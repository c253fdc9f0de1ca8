# pkg/clickhouse: RowBinary and the client's checks (unit), and the schema, writer
# and reader against Debian's clickhouse-server started on loopback ports
# (integration; scripts/deps.sh --test installs it). These tests, like the other
# ClickHouse ones, wait on the server more than they compute (a core at most,
# measured), so they share the machine with the other tests: no PROCESSORS.
if(TARGET pd_clickhouse)
  pkg_check_modules(CMOCKA_FOR_CH REQUIRED IMPORTED_TARGET cmocka)
  add_executable(test_clickhouse unit/test_clickhouse.c)
  target_link_libraries(test_clickhouse PRIVATE pd_clickhouse PkgConfig::CMOCKA_FOR_CH)
  add_test(NAME unit_clickhouse COMMAND test_clickhouse)
  set_tests_properties(unit_clickhouse PROPERTIES LABELS unit TIMEOUT 120)

  add_executable(clickhouse_tool support/clickhouse_tool.c)
  target_link_libraries(clickhouse_tool PRIVATE pd_clickhouse pd_pprof pd_labels pd_util)

  find_program(CLICKHOUSE_SERVER_BIN clickhouse-server PATHS /usr/sbin /usr/bin REQUIRED)
  find_program(GO_BIN_FOR_CH go REQUIRED)
  add_test(NAME integration_clickhouse
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/clickhouse.sh $<TARGET_FILE:clickhouse_tool>
            ${PD_TESTDATA})
  set_tests_properties(integration_clickhouse PROPERTIES LABELS integration TIMEOUT 1800
    ENVIRONMENT "PATH=/usr/sbin:$ENV{PATH}")

  # the API and the UI's queries answered from ClickHouse, compared with the local store
  add_test(NAME integration_clickhouse_api
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/clickhouse_api.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:clickhouse_tool> ${PD_TESTDATA})
  set_tests_properties(integration_clickhouse_api PROPERTIES LABELS integration TIMEOUT 1800
    ENVIRONMENT "PATH=/usr/sbin:$ENV{PATH}")

  # two clickhouse-servers as the two shards of one cluster
  add_test(NAME integration_clickhouse_cluster
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/clickhouse_cluster.sh
            $<TARGET_FILE:clickhouse_tool> ${PD_TESTDATA} $<TARGET_FILE:profd>)
  set_tests_properties(integration_clickhouse_cluster PROPERTIES LABELS integration
    TIMEOUT 1800 ENVIRONMENT "PATH=/usr/sbin:$ENV{PATH}")

  # the scale-out topology end to end, with examples/scale-out's configurations: two
  # hashmod scrapers writing to the two shards, a third profd answering for both.
  if(TARGET serve_profiles)
  find_program(JQ_BIN_FOR_CH jq REQUIRED)
  add_test(NAME integration_clickhouse_scaleout
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/clickhouse_scaleout.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> $<TARGET_FILE:clickhouse_tool> ${PD_TESTDATA}
            ${PROJECT_SOURCE_DIR}/examples)
  set_tests_properties(integration_clickhouse_scaleout PROPERTIES LABELS integration
    TIMEOUT 1800 ENVIRONMENT "PATH=/usr/sbin:$ENV{PATH}")
  endif()
endif()
