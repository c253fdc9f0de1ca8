# Pyroscope's /ingest (pkg/ingest): folded bodies, speedscope files, and the
# query parameters with multipart pprof bodies, each through pd_ingest_pyroscope,
# built over the ingest package and the packages it uses (json-c for JSON)
file(GLOB _ingest_sources CONFIGURE_DEPENDS ${_src}/pkg/ingest/*.c)
pkg_check_modules(_fz_jsonc json-c)
_pd_fuzz_flags(_jsonc _fz_jsonc_CFLAGS _fz_jsonc_LDFLAGS -ljson-c)
set(_ingest_fuzz_sources ${PD_FUZZ_UTIL_SOURCES} ${PD_FUZZ_PPROF_SOURCES} ${PD_FUZZ_GEN_SOURCE}
  ${PD_FUZZ_LABELS_SOURCES} ${_ingest_sources} ${PD_INGEST_GEN_SOURCES})
set(_ingest_fuzz_flags ${_pbc_C} ${_z_C} ${_re2_C} ${_jsonc_C} -I${_src}/include
  -I${_src}/pkg/ingest -I${_src}/pkg/pprof -I${PD_PROTO_OUT} -I${PD_INGEST_GEN}
  ${_pbc_L} ${_re2_L} ${_z_L} ${_jsonc_L} -lm)
# Pyroscope's own speedscope test files seed the speedscope target too
set(_seeds_speedscope ${_src}/testdata/pyroscope/speedscope)
foreach(t folded speedscope ingest_params)
  string(REPLACE "_" "-" _dir ${t})
  pd_fuzz_target(NAME ${t} SECONDS ${PD_FUZZ_SECONDS_EACH}
    SOURCES ${_ingest_fuzz_sources} FLAGS ${_ingest_fuzz_flags}
    SEEDS ${CMAKE_CURRENT_SOURCE_DIR}/corpus-${_dir} ${_seeds_${t}}
    DEPENDS pd_pprof pd_ingest)
endforeach()
