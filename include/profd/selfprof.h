/* selfprof.h: profd profiling itself, as Go's runtime/pprof profiles a Go program,
 * so that profd can serve /debug/pprof/profile and /debug/pprof/heap and scrape
 * itself.
 *
 * The CPU profiler samples the stack of whichever thread is running when the
 * process's profiling timer (setitimer ITIMER_PROF, 100 Hz of process CPU time)
 * fires; the SIGPROF handler records stacks into a preallocated lock-free table.
 * The heap profiler samples allocations, on average one per 512 KiB allocated,
 * in the profd executable of a build without sanitizers, where pkg/selfprof's
 * malloc.c replaces malloc and friends. Both are symbolized from the ELF symbol
 * tables of the executable and the shared libraries in /proc/self/maps and come
 * out as gzip-compressed profile.proto. docs/self-profiling.md has the details.
 *
 * Nothing here prints; errors come back as PD_E... codes with a message in a
 * struct pd_err. */
#ifndef PROFD_SELFPROF_H
#define PROFD_SELFPROF_H

#include <stddef.h>
#include <stdint.h>

#include "profd/util.h"

/* ---- CPU ------------------------------------------------------------------- */

#define PD_SELFPROF_CPU_HZ 100             /* samples per second of CPU time */
#define PD_SELFPROF_CPU_DEFAULT_SECONDS 30 /* as Go's /debug/pprof/profile */
#define PD_SELFPROF_CPU_MAX_SECONDS 300

/* A CPU profile being recorded. */
struct pd_selfprof_cpu;

/* Starts sampling every thread's CPU time at PD_SELFPROF_CPU_HZ. Only one CPU
 * profile runs at a time in a process: while one runs, this fails with PD_EINVAL
 * and "cpu profiling already in use". *out is owned by the caller until
 * pd_selfprof_cpu_stop, which must follow. */
int pd_selfprof_cpu_start(struct pd_selfprof_cpu **out, struct pd_err *err);

/* Stops sampling, frees c whatever the outcome, and writes the profile recorded
 * since start as gzip-compressed profile.proto into *out (malloc'd, owned by the
 * caller): sample types samples/count and cpu/nanoseconds. */
int pd_selfprof_cpu_stop(struct pd_selfprof_cpu *c, uint8_t **out, size_t *out_len,
                         struct pd_err *err);

/* ---- heap ------------------------------------------------------------------ */

#define PD_SELFPROF_HEAP_RATE 524288 /* mean bytes between samples, Go's MemProfileRate */

/* 1 when this binary samples its allocations; otherwise 0, with the reason in
 * why (may be NULL), e.g. "heap profiling is not available in a sanitizer build". */
int pd_selfprof_heap_available(struct pd_err *why);

/* The heap profile as Go's /debug/pprof/heap shapes it (alloc_objects,
 * alloc_space, inuse_objects, inuse_space; period space/bytes 524288; values
 * scaled up to estimate every allocation), gzip-compressed into *out (malloc'd,
 * owned by the caller). default_sample_type is alloc_space when allocs is
 * non-zero (/debug/pprof/allocs), else inuse_space. PD_ENOTFOUND when the heap
 * profiler is not available (see pd_selfprof_heap_available). */
int pd_selfprof_heap_profile(int allocs, uint8_t **out, size_t *out_len, struct pd_err *err);

/* ---- symbols ---------------------------------------------------------------- */

/* The name of the function containing the code address pc in this process, from
 * the ELF symbol tables of the file mapped there, copied into name (at most size
 * bytes with the NUL). Returns 0, or PD_ENOTFOUND when no symbol covers pc. Slow:
 * it reads /proc/self/maps and the ELF file each time; for tests and tools. */
int pd_selfprof_symbolize(uintptr_t pc, char *name, size_t size, struct pd_err *err);

/* The names of n code addresses of this process at once, as Go's
 * /debug/pprof/symbol gives them: names[i] is the function containing pcs[i], or
 * NULL when no symbol covers it. Reads /proc/self/maps once for all of them. The
 * names are borrowed and stay valid for the life of the process. */
int pd_selfprof_symbolize_many(const uintptr_t *pcs, size_t n, const char **names,
                               struct pd_err *err);

#endif
