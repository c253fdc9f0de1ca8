/* selfprof_int.h: what the files of pkg/selfprof share: the process's executable
 * mappings with their ELF symbols (symbols.c, elf.c), the profile.proto builder
 * that symbolizes raw stacks (build.c, wire.c), and the heap sampler's state
 * that the malloc replacement (malloc.c) updates (heap.c). */
#ifndef PROFD_SELFPROF_INT_H
#define PROFD_SELFPROF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profd/selfprof.h"
#include "profd/util.h"

/* ---- ELF symbols (elf.c) ---------------------------------------------------- */

struct sp_sym {
	uint64_t value; /* link-time address */
	uint64_t size;
	const char *name; /* borrowed from the ELF image */
};

/* One ELF image (a file mapped read-only, or the vDSO in memory), its function
 * symbols sorted by address and how file offsets map to link-time addresses. */
struct sp_elf {
	const uint8_t *img;
	size_t len;
	int mapped; /* img is our mmap of the file: munmap on fini */
	struct sp_sym *syms;
	size_t nsyms;
	struct {
		uint64_t offset, vaddr, filesz;
	} load[16]; /* PT_LOAD segments */
	size_t nload;
	char build_id[65]; /* hex, "" when the image has none */
};

/* Opens path (or, when path is NULL, the image at mem of len bytes) and reads
 * its symbol tables (.symtab and .dynsym, functions only). A file that is not a
 * 64-bit ELF of this machine gives PD_ECORRUPT. */
int sp_elf_open(struct sp_elf *e, const char *path, const void *mem, size_t len,
                struct pd_err *err);
void sp_elf_fini(struct sp_elf *e);
/* The link-time address of file offset off; 0 when no PT_LOAD holds it. */
uint64_t sp_elf_vaddr(const struct sp_elf *e, uint64_t off);
/* The symbol covering link-time address v, or NULL. */
const struct sp_sym *sp_elf_lookup(const struct sp_elf *e, uint64_t v);

/* ---- the process's mappings (symbols.c) ------------------------------------- */

struct sp_map {
	uintptr_t start, limit;
	uint64_t offset;
	char *path;               /* file name, or "[vdso]" */
	const struct sp_elf *elf; /* NULL when the file could not be read */
	int is_exe;
	uint64_t inode; /* as /proc/self/maps gives it */
	int deleted;    /* the file was deleted or replaced since it was mapped */
};

struct sp_maps {
	struct sp_map *m; /* by address */
	size_t n;
};

/* Reads the executable mappings of /proc/self/maps and the ELF files behind
 * them (each file once per process: the images are cached and never freed).
 * Files that cannot be read are kept without symbols. */
int sp_maps_load(struct sp_maps *ms, struct pd_err *err);
void sp_maps_fini(struct sp_maps *ms);
/* The mapping holding pc, or NULL. */
const struct sp_map *sp_maps_find(const struct sp_maps *ms, uintptr_t pc);
/* The symbol name covering pc in mapping m, or NULL. */
const char *sp_maps_symbol(const struct sp_map *m, uintptr_t pc);

/* ---- protobuf wire format (wire.c) ------------------------------------------- */

/* Appenders with a sticky error: once b->berr is set they do nothing. */
struct sp_wire {
	struct pd_buf b;
	int berr;
};

void sp_wire_varint(struct sp_wire *w, uint64_t v);
/* A varint field (wire type 0); zero values are left out, as proto3 does. */
void sp_wire_uint(struct sp_wire *w, unsigned field, uint64_t v);
void sp_wire_int(struct sp_wire *w, unsigned field, int64_t v);
/* A length-delimited field (wire type 2). */
void sp_wire_bytes(struct sp_wire *w, unsigned field, const void *p, size_t n);
/* A packed repeated varint field. */
void sp_wire_packed_u64(struct sp_wire *w, unsigned field, const uint64_t *v, size_t n);
void sp_wire_packed_i64(struct sp_wire *w, unsigned field, const int64_t *v, size_t n);

/* ---- building a profile (build.c) -------------------------------------------- */

struct sp_value_type {
	const char *type, *unit;
};

struct sp_profile_desc {
	const struct sp_value_type *types;
	size_t ntypes;
	struct sp_value_type period_type;
	int64_t period;
	int64_t time_nanos, duration_nanos;
	const char *default_sample_type; /* NULL: none */
	const char *comment;             /* NULL: none */
	/* 1: pcs[0] of every stack is where the thread was interrupted (a CPU sample);
	 * 0: every pc is a return address (an allocation's callers). */
	int leaf_exact;
};

/* One sample: a stack, innermost first, and ntypes values. depth 0 with a name
 * gives a stack of one made-up function (lost samples). */
struct sp_sample {
	const uintptr_t *pcs;
	size_t depth;
	const int64_t *values;
	const char *name;
};

/* Symbolizes the stacks with ms and writes the profile, gzip-compressed, into *out
 * (malloc'd, owned by the caller). */
int sp_build_profile(const struct sp_profile_desc *d, const struct sp_sample *s, size_t n,
                     const struct sp_maps *ms, uint8_t **out, size_t *out_len, struct pd_err *err);

/* ---- the heap sampler (heap.c, fed by malloc.c) -------------------------------- */

/* Bytes the thread may still allocate before the next sample; the fast path of
 * every allocation subtracts from it and calls the slow path at or below 0. */
extern _Thread_local int64_t sp_heap_countdown;
/* Per address-hash bucket, how many sampled blocks are live: free() looks here
 * (one 16-bit load) before taking the lock. */
#define SP_HEAP_FILTER_BITS 16
extern uint16_t sp_heap_filter[1u << SP_HEAP_FILTER_BITS];

static inline unsigned sp_heap_filter_slot(const void *p)
{
	return (unsigned)((((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull) >>
	                  (64 - SP_HEAP_FILTER_BITS));
}

static inline int sp_heap_maybe_sampled(const void *p)
{
	return __atomic_load_n(&sp_heap_filter[sp_heap_filter_slot(p)], __ATOMIC_RELAXED) != 0;
}

/* The slow path of an allocation of n bytes at p whose countdown ran out: draws
 * the next countdown and, when this allocation is sampled, records it with the
 * stack of its caller (skip: frames to drop, the malloc wrapper's own). */
void sp_heap_on_alloc(void *p, size_t n, int skip);
/* p is being freed or moved by realloc: if it was sampled, forget it and count
 * it as freed. */
void sp_heap_on_free(void *p);
/* Called once by malloc.c, from a constructor: marks the sampler as fed, warms up
 * the unwinder and registers the fork handlers. */
void sp_heap_install(void);

/* Go's scaleHeapSample: estimates the number and bytes of all allocations from
 * sampled ones, given the sampling rate. */
void sp_heap_scale(int64_t count, int64_t size, int64_t rate, int64_t *out_count,
                   int64_t *out_size);

/* The heap profile from what has been sampled so far (pd_selfprof_heap_profile
 * without the availability check). */
int sp_heap_build(int allocs, uint8_t **out, size_t *out_len, struct pd_err *err);

/* Test hooks: records an allocation of n bytes at p with the given stack as if it
 * had been sampled, and clears everything. */
int sp_heap_record(void *p, size_t n, const uintptr_t *pcs, size_t depth);
void sp_heap_reset(void);

#endif
