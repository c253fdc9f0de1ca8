# kubernetes_sd_configs without a cluster: the Kubernetes API test server
# (tests/support/k8s_apiserver.go, built here with Go's standard library only) on
# its own, then profd discovering through it
find_program(GO_BIN_FOR_K8S go REQUIRED)
find_program(JQ_BIN_FOR_K8S jq REQUIRED)
find_program(OPENSSL_BIN_FOR_K8S openssl REQUIRED)
set(PD_K8S_APISERVER ${CMAKE_CURRENT_BINARY_DIR}/k8s_apiserver)
add_custom_command(OUTPUT ${PD_K8S_APISERVER}
  COMMAND ${CMAKE_COMMAND} -E env GOCACHE=${CMAKE_CURRENT_BINARY_DIR}/gocache
          GOPATH=${CMAKE_CURRENT_BINARY_DIR}/gopath GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on
          ${GO_BIN_FOR_K8S} build -o ${PD_K8S_APISERVER} support/k8s_apiserver.go
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/support/k8s_apiserver.go
  COMMENT "go build k8s_apiserver")
add_custom_target(k8s_apiserver ALL DEPENDS ${PD_K8S_APISERVER})

add_test(NAME k8s_apiserver
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/k8s_apiserver.sh ${PD_K8S_APISERVER} ${PD_TESTDATA})
set_tests_properties(k8s_apiserver PROPERTIES LABELS integration TIMEOUT 300)

# profd check config on kubernetes_sd_configs: Prometheus's examples pass, its bad
# configurations fail with its messages
add_test(NAME check_config_kubernetes_sd
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/kubernetes_sd_check_config.sh $<TARGET_FILE:profd>
          ${PD_TESTDATA})
set_tests_properties(check_config_kubernetes_sd PROPERTIES LABELS unit TIMEOUT 120)

# profd against the API test server: every role's labels, the example's job, and
# changes, bookmarks, 410s, dropped and slow streams, back-off while it watches
add_test(NAME integration_kubernetes_sd
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/kubernetes_sd.sh $<TARGET_FILE:profd>
          ${PD_K8S_APISERVER} ${PD_TESTDATA} ${PROJECT_SOURCE_DIR}/examples)
set_tests_properties(integration_kubernetes_sd PROPERTIES LABELS integration TIMEOUT 600)
