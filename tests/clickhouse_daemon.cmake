# profd run with --storage.clickhouse.url against Debian's clickhouse-server on
# loopback ports: scraped and pushed profiles reach ClickHouse, the WAL spools them
# across a ClickHouse outage and a SIGKILL of profd, and a full spool refuses new
# ones with 503 (tests/integration/clickhouse_daemon.sh)
if(TARGET clickhouse_tool AND TARGET serve_profiles)
  add_test(NAME integration_clickhouse_daemon
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/clickhouse_daemon.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> $<TARGET_FILE:clickhouse_tool> ${PD_TESTDATA})
  set_tests_properties(integration_clickhouse_daemon PROPERTIES LABELS integration TIMEOUT 900
    ENVIRONMENT "PATH=/usr/sbin:$ENV{PATH}")
endif()

# the spool's sent-position file, and a store whose ClickHouse does not answer
if(TARGET pd_tsdb)
  pkg_check_modules(CMOCKA_FOR_SPOOL REQUIRED IMPORTED_TARGET cmocka)
  add_executable(test_ch_spool unit/test_ch_spool.c)
  target_include_directories(test_ch_spool PRIVATE ${PROJECT_SOURCE_DIR}/pkg/tsdb)
  target_link_libraries(test_ch_spool PRIVATE pd_tsdb pd_clickhouse PkgConfig::CMOCKA_FOR_SPOOL)
  target_compile_definitions(test_ch_spool PRIVATE PD_TESTDATA="${PD_TESTDATA}")
  add_test(NAME unit_ch_spool COMMAND test_ch_spool)
  set_tests_properties(unit_ch_spool PROPERTIES LABELS unit TIMEOUT 300)
endif()

# --storage.clickhouse.spool.max-size: a bad size names the flag
add_test(NAME cli_run_spool_max_size_bad COMMAND profd run --storage.clickhouse.spool.max-size=12XB)
set_tests_properties(cli_run_spool_max_size_bad PROPERTIES LABELS unit TIMEOUT 30
  PASS_REGULAR_EXPRESSION "--storage.clickhouse.spool.max-size: .*unknown unit XB")
add_test(NAME cli_run_spool_max_size_zero COMMAND profd run --storage.clickhouse.spool.max-size=0)
set_tests_properties(cli_run_spool_max_size_zero PROPERTIES LABELS unit TIMEOUT 30
  PASS_REGULAR_EXPRESSION "--storage.clickhouse.spool.max-size: must be more than 0")
