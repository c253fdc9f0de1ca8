# --web.config.file: TLS with client certificates, basic auth, headers, rotation,
# go tool pprof and Debian's Prometheus against the secured server
find_program(PROMETHEUS_BIN prometheus REQUIRED)
find_program(OPENSSL_BIN openssl REQUIRED)
add_test(NAME integration_tls
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/tls.sh $<TARGET_FILE:profd> ${PD_TESTDATA}
          ${PROJECT_SOURCE_DIR}/docs/api.md ${PROJECT_SOURCE_DIR}/examples)
set_tests_properties(integration_tls PROPERTIES LABELS integration TIMEOUT 300)
