# ingest: the formats other profilers push (pkg/ingest): Pyroscope's /ingest
# (pprof, folded, JFR, speedscope), its push.v1 Connect API and OTLP profiles,
# each turned into pprof profiles. The .proto files of pkg/ingest/proto/ are
# compiled by protoc-c at build time; JSON bodies are read with json-c (Debian's
# libjson-c-dev). pd_api links it.
pkg_check_modules(JSONC REQUIRED IMPORTED_TARGET json-c)
file(GLOB PD_INGEST_PROTOS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/pkg/ingest/proto/*.proto)
set(PD_INGEST_GEN ${CMAKE_CURRENT_BINARY_DIR}/gen/ingest)
set(PD_INGEST_GEN_SOURCES)
foreach(proto ${PD_INGEST_PROTOS})
  get_filename_component(base ${proto} NAME_WE)
  add_custom_command(
    OUTPUT ${PD_INGEST_GEN}/${base}.pb-c.c ${PD_INGEST_GEN}/${base}.pb-c.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PD_INGEST_GEN}
    COMMAND ${PROTOC_C} --c_out=${PD_INGEST_GEN} -I${PROJECT_SOURCE_DIR}/pkg/ingest/proto ${proto}
    DEPENDS ${PD_INGEST_PROTOS}
    COMMENT "protoc-c ${base}.proto")
  list(APPEND PD_INGEST_GEN_SOURCES ${PD_INGEST_GEN}/${base}.pb-c.c)
  # generated code is not ours to warn about
  set_source_files_properties(${PD_INGEST_GEN}/${base}.pb-c.c PROPERTIES COMPILE_OPTIONS "-Wno-error")
endforeach()
file(GLOB PD_INGEST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/pkg/ingest/*.c)
add_library(pd_ingest STATIC ${PD_INGEST_SOURCES} ${PD_INGEST_GEN_SOURCES})
target_include_directories(pd_ingest PRIVATE ${PROJECT_SOURCE_DIR}/pkg/ingest ${PD_INGEST_GEN}
  ${LIBXXHASH_INCLUDE_DIRS})
target_link_libraries(pd_ingest PUBLIC pd_pprof pd_labels pd_util
  PRIVATE PkgConfig::JSONC PkgConfig::PROTOBUFC m)
target_link_libraries(pd_api PUBLIC pd_ingest)
# the query API (pkg/api/querier*.c) reads and writes messages of pkg/ingest/proto/
target_include_directories(pd_api PRIVATE ${PD_INGEST_GEN})
target_link_libraries(pd_api PRIVATE PkgConfig::PROTOBUFC)
add_dependencies(pd_api pd_ingest)

# unit tests, one per converter, each when its file is there; they see the
# package's private header and generated code
if(PD_TESTS)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
  foreach(t ingest ingest_pyroscope ingest_jfr ingest_connect ingest_otlp)
    if(EXISTS ${PROJECT_SOURCE_DIR}/tests/unit/test_${t}.c)
      add_executable(test_${t} tests/unit/test_${t}.c)
      target_include_directories(test_${t} PRIVATE ${PROJECT_SOURCE_DIR}/pkg/ingest ${PD_INGEST_GEN})
      target_link_libraries(test_${t} PRIVATE pd_ingest PkgConfig::CMOCKA PkgConfig::PROTOBUFC
        PkgConfig::JSONC PkgConfig::ZLIB)
      target_compile_definitions(test_${t} PRIVATE PD_TESTDATA="${PROJECT_SOURCE_DIR}/testdata"
        PD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
      add_test(NAME unit_${t} COMMAND test_${t})
      set_tests_properties(unit_${t} PROPERTIES LABELS unit TIMEOUT 300)
    endif()
  endforeach()
  # go tool pprof -raw, the reference, on JFR conversions and Pyroscope's profiles
  find_program(PD_GO_BIN go REQUIRED)
  if(TARGET test_ingest_jfr)
    add_test(NAME unit_ingest_jfr_pprof_raw COMMAND ${PROJECT_SOURCE_DIR}/tests/ingest/jfr_pprof_raw.sh
      $<TARGET_FILE:test_ingest_jfr> ${PROJECT_SOURCE_DIR})
    set_tests_properties(unit_ingest_jfr_pprof_raw PROPERTIES LABELS unit TIMEOUT 300)
  endif()
endif()

# the HTTP layer with curl against a running profd (tests/integration/ingest.sh), and
# Pyroscope's own Node.js SDK pushing to it (ingest_nodejs.sh, tests/ingest/nodejs)
if(PD_TESTS)
  add_test(NAME integration_ingest
    COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/ingest.sh $<TARGET_FILE:profd>
            ${PROJECT_SOURCE_DIR}/testdata)
  set_tests_properties(integration_ingest PROPERTIES LABELS integration TIMEOUT 300)
  add_test(NAME integration_ingest_nodejs
    COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/ingest_nodejs.sh $<TARGET_FILE:profd>
            ${PROJECT_SOURCE_DIR}/tests/ingest/nodejs)
  set_tests_properties(integration_ingest_nodejs PROPERTIES LABELS integration TIMEOUT 400)
endif()

# Pyroscope's /ingest converters' output read by go tool pprof -raw
if(PD_TESTS AND TARGET test_ingest_pyroscope)
  add_test(NAME ingest_pyroscope_pprof
    COMMAND sh ${PROJECT_SOURCE_DIR}/tests/integration/ingest_pyroscope_pprof.sh
      $<TARGET_FILE:test_ingest_pyroscope>)
  set_tests_properties(ingest_pyroscope_pprof PROPERTIES LABELS integration TIMEOUT 300)
endif()

# tests/ingest/otlp_test.sh: the converters against an independent Python client
# (Debian's python3-protobuf and protoc), checked with go tool pprof
if(PD_TESTS)
  add_executable(ingest_tool tests/ingest/ingest_tool.c)
  target_link_libraries(ingest_tool PRIVATE pd_ingest)
  find_program(GO_BIN_FOR_INGEST go REQUIRED)
  add_test(NAME integration_ingest_otlp
    COMMAND ${PROJECT_SOURCE_DIR}/tests/ingest/otlp_test.sh $<TARGET_FILE:ingest_tool>
            ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/testdata)
  set_tests_properties(integration_ingest_otlp PROPERTIES LABELS integration TIMEOUT 600)
endif()

# test_ingest_otlp also fills a message with a field of every kind from JSON
# (tests/unit/pbjson_test.proto, compiled for it alone)
if(TARGET test_ingest_otlp)
  set(_pbjson_gen ${CMAKE_CURRENT_BINARY_DIR}/gen/ingest-test)
  add_custom_command(
    OUTPUT ${_pbjson_gen}/pbjson_test.pb-c.c ${_pbjson_gen}/pbjson_test.pb-c.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_pbjson_gen}
    COMMAND ${PROTOC_C} --c_out=${_pbjson_gen} -I${PROJECT_SOURCE_DIR}/tests/unit
            ${PROJECT_SOURCE_DIR}/tests/unit/pbjson_test.proto
    DEPENDS ${PROJECT_SOURCE_DIR}/tests/unit/pbjson_test.proto
    COMMENT "protoc-c pbjson_test.proto")
  set_source_files_properties(${_pbjson_gen}/pbjson_test.pb-c.c PROPERTIES COMPILE_OPTIONS "-Wno-error")
  target_sources(test_ingest_otlp PRIVATE ${_pbjson_gen}/pbjson_test.pb-c.c)
  target_include_directories(test_ingest_otlp PRIVATE ${_pbjson_gen})
endif()
