# selfprof: profd profiling itself (pkg/selfprof): the CPU profiler, the heap
# sampler and the ELF symbolizer behind /debug/pprof/ (docs/self-profiling.md).
# pd_api links it. The malloc replacement (pkg/selfprof/malloc.c) goes into the
# profd executable only, and only without sanitizers, which replace malloc
# themselves; the executable exports those functions so that libraries loaded
# with dlopen (libcurl, libmicrohttpd) use them too.
add_library(pd_selfprof STATIC
  pkg/selfprof/cpu.c pkg/selfprof/heap.c pkg/selfprof/build.c pkg/selfprof/wire.c
  pkg/selfprof/elf.c pkg/selfprof/symbols.c)
target_include_directories(pd_selfprof PRIVATE ${PROJECT_SOURCE_DIR}/pkg/selfprof)
target_link_libraries(pd_selfprof PUBLIC pd_util PRIVATE m pthread)
if(PD_SANITIZE)
  target_compile_definitions(pd_selfprof PRIVATE PD_SELFPROF_SANITIZE)
endif()
# Stacks are unwound with the .eh_frame tables (backtrace()): ask for them to be
# complete at every instruction, as a signal may land anywhere. (x86-64's default;
# said here for other machines.)
target_compile_options(pd_flags INTERFACE -fasynchronous-unwind-tables)

target_link_libraries(pd_api PUBLIC pd_selfprof)

if(NOT PD_SANITIZE)
  target_sources(profd PRIVATE ${PROJECT_SOURCE_DIR}/pkg/selfprof/malloc.c)
  set_source_files_properties(${PROJECT_SOURCE_DIR}/pkg/selfprof/malloc.c PROPERTIES
    INCLUDE_DIRECTORIES ${PROJECT_SOURCE_DIR}/pkg/selfprof)
  foreach(fn malloc free calloc realloc reallocarray memalign aligned_alloc posix_memalign
          valloc pvalloc)
    target_link_options(profd PRIVATE "LINKER:--export-dynamic-symbol=${fn}")
  endforeach()
endif()
