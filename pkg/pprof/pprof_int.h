/* pprof_int.h: the private shape of a decoded profile, shared by the files of
 * pkg/pprof. A profile is the protobuf-c message tree, allocated in one arena, plus
 * id -> index tables built while validating, so that references resolve in O(1). */
#ifndef PROFD_PPROF_INT_H
#define PROFD_PPROF_INT_H

#include <protobuf-c/protobuf-c.h>

#include "profd/pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__ValueType pb_value_type;

/* Maps an id of one table to its index: a direct array when ids are small,
 * otherwise a hash map. */
struct pd_pprof_idmap {
	uint32_t *dense; /* dense[id] = index + 1, 0 when absent; NULL when sparse */
	uint64_t dense_len;
	struct pd_u64map sparse;
};

struct pd_pprof_profile {
	struct pd_arena *arena;
	pb_profile *pb;
	size_t *str_len; /* length of each string_table entry */
	struct pd_pprof_idmap mappings, locations, functions;
};

/* Returns the index of id in the table, or -1 when absent. */
static inline int64_t pd_pprof_idmap_get(const struct pd_pprof_idmap *m, uint64_t id)
{
	if (m->dense)
		return id < m->dense_len ? (int64_t)m->dense[id] - 1 : -1;
	uint32_t v;
	return id && pd_u64map_get(&m->sparse, id, &v) ? (int64_t)v : -1;
}

/* The string at index i, which validation has checked to be in range. */
static inline const char *pd_pprof_str(const struct pd_pprof_profile *p, int64_t i)
{
	return p->pb->string_table[i];
}

/* Sample values add and negate with wrap-around, as Go's int64 does, so that any
 * input is defined behaviour. */
static inline int64_t pd_add64(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static inline int64_t pd_neg64(int64_t a)
{
	return (int64_t)(0 - (uint64_t)a);
}

/* |a| as an unsigned number, defined for INT64_MIN. */
static inline uint64_t pd_uabs64(int64_t a)
{
	return a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
}

/* The protobuf-c allocator that allocates from an arena and never frees. */
void pd_pprof_arena_allocator(ProtobufCAllocator *alloc, struct pd_arena *arena);

/* Checks every pprof rule and builds the id tables. err names the first problem. */
int pd_pprof_validate(struct pd_pprof_profile *p, struct pd_err *err);

/* Decodes the raw protobuf buf (len bytes, only read) with the hand-written decoder
 * of pbdecode.c into a message tree allocated from arena (owned by it), equal to
 * what protobuf-c's unpack would make. Returns NULL when buf uses something that
 * decoder leaves to protobuf-c (unknown fields, odd encodings, truncation) or when
 * the arena's limit is hit; the arena may then hold some of its allocations. The
 * limit is checked against the whole need, counted first, before anything is
 * allocated: past it the arena is left exhausted (pd_arena_exhausted) and
 * empty. */
pb_profile *pd_pprof_pb_decode(struct pd_arena *arena, const uint8_t *buf, size_t len);

/* Explains why protobuf-c rejected buf: the first wire-format problem found, with
 * its byte offset and field. Always sets err; returns PD_ECORRUPT. */
int pd_pprof_wire_diagnose(const uint8_t *buf, size_t len, struct pd_err *err);

/* Wraps an arena-allocated message tree as a profile (taking ownership of both)
 * and validates it. Used by merge and diff to hand out their results. */
int pd_pprof_adopt(struct pd_pprof_profile **out, struct pd_arena *arena, pb_profile *pb,
		   struct pd_err *err);

/* True when a sample carries the label pprof::base=true (a diff's base side). */
int pd_pprof_is_diff_base(const struct pd_pprof_profile *p, const pb_sample *s);

/* Interned function-granularity node names, as pprof's reports key functions. */
struct pd_pprof_nodes {
	size_t count;
	char **names;           /* printable name per node, malloc'd */
	uint32_t *loc_off;      /* frames of location i: loc_node[loc_off[i] .. loc_off[i+1]) */
	uint32_t *loc_node;     /* innermost (inlined callee) first, as Location.line */
};

/* Assigns a node to every (location, line) of p. Fills n; free with _fini. */
int pd_pprof_nodes_build(const struct pd_pprof_profile *p, struct pd_pprof_nodes *n,
			 struct pd_err *err);
void pd_pprof_nodes_fini(struct pd_pprof_nodes *n);

#endif
