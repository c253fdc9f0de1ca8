# symcache: the symbolizer's disk cache files (pkg/symbolize/cache_file.c,
# docs/format/symbolizer-cache.md), which profd reads back at start
pd_fuzz_target(NAME symcache SECONDS ${PD_FUZZ_SECONDS_EACH}
  SOURCES ${PD_FUZZ_UTIL_SOURCES} ${_src}/pkg/symbolize/cache_file.c
  FLAGS ${_z_C} -I${_src}/include -I${_src}/pkg/symbolize ${_z_L} -lm -pthread -ldl
  SEEDS ${CMAKE_CURRENT_SOURCE_DIR}/corpus-symcache)
