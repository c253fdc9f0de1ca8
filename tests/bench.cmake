# bench/clickhouse.sh end to end on a small input (integration): the ClickHouse
# benchmark runs, prints every table bench/README.md reads, its merges agree with
# go tool pprof, and it stops its server (needs clickhouse-server and go, as
# integration_clickhouse does). clickhouse_bench is defined in bench/, added after
# tests/, so it is named by its target file.
if(PD_BENCH AND TARGET pd_clickhouse AND TARGET pd_tsdb)
  find_program(CLICKHOUSE_SERVER_BIN_FOR_BENCH clickhouse-server PATHS /usr/sbin /usr/bin REQUIRED)
  find_program(GO_BIN_FOR_BENCH go REQUIRED)
  add_test(NAME integration_bench_clickhouse
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/bench_clickhouse.sh ${PROJECT_SOURCE_DIR}
            ${PROJECT_BINARY_DIR})
  # one ctest slot (as integration_first_run: one asking for two waits for the end)
  set_tests_properties(integration_bench_clickhouse PROPERTIES LABELS integration TIMEOUT 900
    ENVIRONMENT "PATH=/usr/sbin:$ENV{PATH}")
endif()

# bench/decode.sh end to end on the repository's slice of the corpus: every
# profile type gets a row, every profile takes the hand-written decoder, and bad
# arguments are refused by name. decode_bench is defined in bench/, added after
# tests/, so it is named by its target file.
if(PD_BENCH AND TARGET pd_pprof)
  add_test(NAME integration_bench_decode
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/bench_decode.sh ${PROJECT_SOURCE_DIR}
            ${PROJECT_BINARY_DIR})
  set_tests_properties(integration_bench_decode PROPERTIES LABELS integration TIMEOUT 300)
endif()
