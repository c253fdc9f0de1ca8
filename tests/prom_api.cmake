# the Prometheus-compatible API under /prometheus: promtool against profd, checked
# against Debian's Prometheus reading the same totals (go tool pprof -raw sums)
# promql_eval (tests/promql.cmake) picks the free port Prometheus listens on
if(TARGET pd_api AND TARGET pd_promql)
  find_program(GO_BIN_FOR_PROM_API go REQUIRED)
  add_test(NAME integration_prom_api
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/prom_api.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:promql_eval> ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/examples
            ${PD_TESTDATA})
  set_tests_properties(integration_prom_api PROPERTIES LABELS integration TIMEOUT 900)
endif()
