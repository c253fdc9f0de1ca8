# pkg/selfprof: profd profiling itself. The unit test sees the package's private
# header; the integration test runs the real daemon (and, when it has been built,
# the release binary for the heap profile, which a sanitizer build does not have).
# pd_selfprof is defined later (cmake/selfprof.cmake, after tests/), so this
# checks for its sources rather than for the target; the name resolves when the
# build is generated.
if(EXISTS ${PROJECT_SOURCE_DIR}/pkg/selfprof/cpu.c)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
  add_executable(test_selfprof ${CMAKE_CURRENT_LIST_DIR}/unit/test_selfprof.c)
  target_include_directories(test_selfprof PRIVATE ${PROJECT_SOURCE_DIR}/pkg/selfprof)
  target_link_libraries(test_selfprof PRIVATE pd_selfprof pd_pprof PkgConfig::CMOCKA m pthread)
  add_test(NAME unit_selfprof COMMAND test_selfprof)
  set_tests_properties(unit_selfprof PROPERTIES LABELS unit TIMEOUT 600)

  add_test(NAME integration_selfprof
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/integration/selfprof.sh $<TARGET_FILE:profd>
            ${PROJECT_SOURCE_DIR}/build/release/profd)
  set_tests_properties(integration_selfprof PROPERTIES LABELS integration TIMEOUT 180)
endif()
