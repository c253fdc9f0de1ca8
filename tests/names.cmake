# Report names (pkg/pprof/names.c) and drop_frames/keep_frames pruning (nodes.c):
# the unit test, and every profile of testdata/names against go tool pprof -top
# under each -symbolize mode (tests/golden/names_golden.sh).
if(PD_TESTS)
  add_executable(test_pprof_names unit/test_pprof_names.c)
  target_link_libraries(test_pprof_names PRIVATE pd_pprof PkgConfig::CMOCKA)
  target_compile_definitions(test_pprof_names PRIVATE PD_TESTDATA="${PD_TESTDATA}")
  add_test(NAME unit_pprof_names COMMAND test_pprof_names)
  set_tests_properties(unit_pprof_names PROPERTIES LABELS unit TIMEOUT 120)
  add_test(NAME names_golden
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/golden/names_golden.sh $<TARGET_FILE:profd>
            ${PD_TESTDATA}/names)
  set_tests_properties(names_golden PROPERTIES LABELS golden TIMEOUT 300
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1")
endif()

# AddressSanitizer's frames (C++, mangled) through the symbolizer and profd's own
# profile, against go tool pprof (tests/integration/asan_names.sh)
if(PD_TESTS)
  find_library(PD_NAMES_LIBPROFILER profiler REQUIRED)
  add_test(NAME integration_asan_names
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/asan_names.sh $<TARGET_FILE:profd>
            ${CMAKE_C_COMPILER} ${CMAKE_CURRENT_SOURCE_DIR}/names/asan_busy.c)
  set_tests_properties(integration_asan_names PROPERTIES LABELS integration TIMEOUT 400)
endif()
