# Tenants (--auth.multitenancy-enabled): tenant ids, the X-Scope-OrgID header, the
# web configuration's tenants and a scrape job's tenant (unit); two tenants and
# the default one pushing the same series, each seeing only its own through
# /api/v1, /prometheus and the query API, in the local store and in ClickHouse
# (tests/integration/tenants.sh)
if(TARGET pd_api)
  pkg_check_modules(CMOCKA_FOR_TENANT REQUIRED IMPORTED_TARGET cmocka)
  add_executable(test_tenant unit/test_tenant.c)
  target_include_directories(test_tenant PRIVATE ${PROJECT_SOURCE_DIR}/pkg/api)
  target_link_libraries(test_tenant PRIVATE pd_api PkgConfig::CMOCKA_FOR_TENANT)
  add_test(NAME unit_tenant COMMAND test_tenant)
  set_tests_properties(unit_tenant PROPERTIES LABELS unit TIMEOUT 60)
endif()
if(TARGET profd AND TARGET serve_profiles)
  find_program(GO_BIN_FOR_TENANTS go REQUIRED)
  find_program(PROTOC_FOR_TENANTS protoc REQUIRED)
  add_test(NAME integration_tenants
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/tenants.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> ${PROJECT_SOURCE_DIR} ${PD_TESTDATA})
  set_tests_properties(integration_tenants PROPERTIES LABELS integration TIMEOUT 600)
  add_test(NAME integration_tenants_clickhouse
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/tenants.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:serve_profiles> ${PROJECT_SOURCE_DIR} ${PD_TESTDATA} clickhouse)
  set_tests_properties(integration_tenants_clickhouse PROPERTIES LABELS integration TIMEOUT 900
    ENVIRONMENT "PATH=/usr/sbin:$ENV{PATH}")
endif()
