# the PromQL engine against Debian's Prometheus on the same samples
if(TARGET pd_promql)
  add_executable(promql_eval ${PROJECT_SOURCE_DIR}/tests/support/promql_eval.c)
  target_link_libraries(promql_eval PRIVATE pd_promql pd_labels pd_util m)
  find_program(PROMETHEUS_BIN prometheus REQUIRED)
  find_program(PROMTOOL_BIN promtool REQUIRED)
  add_test(NAME integration_promql
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/promql.sh $<TARGET_FILE:promql_eval>
            ${CMAKE_CURRENT_SOURCE_DIR}/integration/promql_queries.txt)
  set_tests_properties(integration_promql PROPERTIES LABELS integration TIMEOUT 600)
endif()
