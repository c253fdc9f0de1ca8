# querier_request: the query API's request bodies (pkg/api/querier.c) read as the
# server reads them (pkg/ingest's pbwire walk and protobuf-c, or pbjson.c), and the
# JSON writer (pbjson_write.c) round-tripping what was read
pd_fuzz_target(NAME querier_request SECONDS ${PD_FUZZ_SECONDS_EACH}
  SOURCES ${PD_FUZZ_UTIL_SOURCES} ${PD_FUZZ_PPROF_SOURCES} ${PD_FUZZ_GEN_SOURCE}
          ${PD_FUZZ_LABELS_SOURCES} ${PD_FUZZ_INGEST_SOURCES} ${PD_INGEST_GEN_SOURCES}
  FLAGS ${_pbc_C} ${_z_C} ${_re2_C} ${_jsonc_C} -I${_src}/include -I${_src}/pkg/pprof
        -I${_src}/pkg/ingest -I${PD_PROTO_OUT} -I${PD_INGEST_GEN}
        ${_pbc_L} ${_re2_L} ${_z_L} ${_jsonc_L} -lm
  SEEDS ${CMAKE_CURRENT_SOURCE_DIR}/corpus-querier
  DEPENDS pd_ingest)
