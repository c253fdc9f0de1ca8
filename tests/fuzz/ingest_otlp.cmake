# connect_push and otlp: pkg/ingest's push.v1 and OTLP profile converters, each
# input read both as protobuf and as JSON (the generic reader pbjson.c), with the
# generated protobuf-c code of pkg/ingest/proto and json-c
file(GLOB PD_FUZZ_INGEST_SOURCES CONFIGURE_DEPENDS ${_src}/pkg/ingest/*.c)
_pd_fuzz_flags(_jsonc JSONC_CFLAGS JSONC_LDFLAGS -ljson-c)
foreach(t connect_push otlp)
  pd_fuzz_target(NAME ${t} SECONDS ${PD_FUZZ_SECONDS_EACH}
    SOURCES ${PD_FUZZ_UTIL_SOURCES} ${PD_FUZZ_PPROF_SOURCES} ${PD_FUZZ_GEN_SOURCE}
            ${PD_FUZZ_LABELS_SOURCES} ${PD_FUZZ_INGEST_SOURCES} ${PD_INGEST_GEN_SOURCES}
    FLAGS ${_pbc_C} ${_z_C} ${_re2_C} ${_jsonc_C} -I${_src}/include -I${_src}/pkg/pprof
          -I${_src}/pkg/ingest -I${PD_PROTO_OUT} -I${PD_INGEST_GEN}
          ${_pbc_L} ${_re2_L} ${_z_L} ${_jsonc_L} -lm
    SEEDS ${CMAKE_CURRENT_SOURCE_DIR}/corpus-${t}
    DEPENDS pd_ingest)
endforeach()
