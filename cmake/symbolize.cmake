# symbolize: names, files and lines for the bare addresses of native profiles
# (pkg/symbolize, docs/symbolization.md): debug files found by build id in local
# directories, the mapped files and debuginfod servers, read with elfutils
# (Debian's libdw-dev, libelf-dev, libdebuginfod-dev), C++ and Rust names
# demangled by pkg/pprof (pd_pprof_demangle). pd_api links it.
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
pkg_check_modules(LIBDEBUGINFOD REQUIRED IMPORTED_TARGET libdebuginfod)
file(GLOB PD_SYMBOLIZE_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/pkg/symbolize/*.c)
add_library(pd_symbolize STATIC ${PD_SYMBOLIZE_SOURCES})
target_include_directories(pd_symbolize PRIVATE ${PROJECT_SOURCE_DIR}/pkg/symbolize)
target_link_libraries(pd_symbolize PUBLIC pd_pprof pd_util
  PRIVATE PkgConfig::LIBDW PkgConfig::LIBELF PkgConfig::ZLIB pthread ${CMAKE_DL_LIBS})
# libdebuginfod's headers only: pkg/symbolize/debuginfod_dl.c loads the library
target_include_directories(pd_symbolize PRIVATE ${LIBDEBUGINFOD_INCLUDE_DIRS})
target_link_libraries(pd_api PUBLIC pd_symbolize)

if(PD_TESTS)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
  find_program(PD_EU_ADDR2LINE eu-addr2line REQUIRED)
  find_program(PD_DEBUGINFOD debuginfod REQUIRED)
  find_program(PD_OBJCOPY objcopy REQUIRED)
  find_program(PD_PYTHON3 python3 REQUIRED)
  add_executable(test_symbolize tests/unit/test_symbolize.c)
  target_include_directories(test_symbolize PRIVATE ${PROJECT_SOURCE_DIR}/pkg/symbolize)
  target_link_libraries(test_symbolize PRIVATE pd_symbolize PkgConfig::CMOCKA)
  target_compile_definitions(test_symbolize PRIVATE
    PD_SYMBOLIZE_TESTS="${PROJECT_SOURCE_DIR}/tests/symbolize")
  add_test(NAME unit_symbolize COMMAND test_symbolize)
  set_tests_properties(unit_symbolize PROPERTIES LABELS unit TIMEOUT 300)
endif()

# profd run's --symbolizer.* flags
target_sources(profd PRIVATE ${PROJECT_SOURCE_DIR}/cmd/profd/run_symbolizer.c)
target_link_libraries(profd PRIVATE pd_symbolize)

# the query API symbolizing a pushed profile in a running profd: from the store's
# debuginfo/ directory, the report=meta and header that say so, the status
# endpoint and metrics, and a debuginfod that hangs (tests/integration/symbolize.sh)
if(PD_TESTS)
  add_executable(symbolize_make_profile tests/symbolize/make_profile.c)
  target_link_libraries(symbolize_make_profile PRIVATE pd_pprof pd_util)
  find_program(PD_JQ jq REQUIRED)
  find_program(PD_CURL curl REQUIRED)
  add_test(NAME integration_symbolize
    COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/symbolize.sh $<TARGET_FILE:profd>
            $<TARGET_FILE:symbolize_make_profile> ${PROJECT_SOURCE_DIR}/tests/symbolize)
  set_tests_properties(integration_symbolize PROPERTIES LABELS integration TIMEOUT 300)
endif()

# a real gperftools CPU profile of a stripped program symbolized end to end, from
# debuginfod, an uploaded debug file and a .build-id directory, against google/pprof
# built from Debian's source (tests/integration/native_e2e.sh)
if(PD_TESTS)
  find_program(PD_ADDR2LINE addr2line REQUIRED)
  find_program(PD_STRIP strip REQUIRED)
  find_program(PD_GO go REQUIRED)
  find_file(PD_GOOGLE_PPROF_SRC pprof.go PATHS /usr/share/gocode/src/github.com/google/pprof
            NO_DEFAULT_PATH REQUIRED)
  find_library(PD_LIBPROFILER profiler REQUIRED)
  add_test(NAME integration_native_e2e
    COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/native_e2e.sh $<TARGET_FILE:profd>
            ${CMAKE_C_COMPILER} ${PROJECT_SOURCE_DIR}/tests/native_e2e/hot.c)
  set_tests_properties(integration_native_e2e PROPERTIES LABELS integration TIMEOUT 300)
endif()

# at most --symbolizer.max-open-files debug files open (tests/unit/test_symbolize_open.c)
if(PD_TESTS)
  add_executable(test_symbolize_open tests/unit/test_symbolize_open.c)
  target_link_libraries(test_symbolize_open PRIVATE pd_symbolize PkgConfig::CMOCKA)
  add_test(NAME unit_symbolize_open COMMAND test_symbolize_open)
  set_tests_properties(unit_symbolize_open PROPERTIES LABELS unit TIMEOUT 300)
endif()
