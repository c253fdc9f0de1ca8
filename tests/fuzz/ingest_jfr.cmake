# jfr: JFR recordings through the converter of pkg/ingest (ingest_jfr): the
# reader of the format, the context labels part (protobuf-c), the profile
# builder, series labels. Built over the ingest package's sources and the
# generated code of its .proto files (cmake/ingest.cmake), with pprof, labels and
# util beneath.
file(GLOB PD_FUZZ_INGEST_SOURCES CONFIGURE_DEPENDS ${_src}/pkg/ingest/*.c)
_pd_fuzz_flags(_jsonc JSONC_CFLAGS JSONC_LDFLAGS -ljson-c)
pd_fuzz_target(NAME jfr SECONDS ${PD_FUZZ_SECONDS_EACH}
  SOURCES ${PD_FUZZ_UTIL_SOURCES} ${PD_FUZZ_PPROF_SOURCES} ${PD_FUZZ_GEN_SOURCE}
          ${PD_FUZZ_LABELS_SOURCES} ${PD_FUZZ_INGEST_SOURCES} ${PD_INGEST_GEN_SOURCES}
  FLAGS ${_pbc_C} ${_z_C} ${_re2_C} ${_jsonc_C} -I${_src}/include -I${_src}/pkg/pprof
        -I${_src}/pkg/ingest -I${PD_PROTO_OUT} -I${PD_INGEST_GEN}
        ${_pbc_L} ${_re2_L} ${_jsonc_L} ${_z_L} -lm
  SEEDS ${CMAKE_CURRENT_SOURCE_DIR}/corpus-jfr
  DEPENDS pd_pprof pd_ingest)
