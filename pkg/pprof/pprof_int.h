/* pprof_int.h: the private shape of a decoded profile, shared by the files of
 * pkg/pprof. A profile is the protobuf-c message tree, allocated in one arena, plus
 * id -> index tables built while validating, so that references resolve in O(1). */
#ifndef PROFD_PPROF_INT_H
#define PROFD_PPROF_INT_H

#include <protobuf-c/protobuf-c.h>
#include <string.h>

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
	/* Length of each string_table entry, from the wire: an entry may hold NUL
	 * bytes, so strlen of string_table[i] (always NUL-terminated) is not it. */
	size_t *str_len;
	struct pd_pprof_idmap mappings, locations, functions;
	uint8_t names; /* enum pd_pprof_names: how reports name functions (names.c) */
	uint8_t granularity; /* enum pd_pprof_granularity: what a report node is (nodes.c) */
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

/* Its length in bytes (the string may hold NULs; it is NUL-terminated after them). */
static inline size_t pd_pprof_str_len(const struct pd_pprof_profile *p, int64_t i)
{
	return p->str_len[i];
}

/* True when string i of p is exactly the C string s (a string with a NUL in it
 * is never equal to one without). */
static inline int pd_pprof_str_is(const struct pd_pprof_profile *p, int64_t i, const char *s)
{
	size_t n = strlen(s);
	return p->str_len[i] == n && memcmp(p->pb->string_table[i], s, n) == 0;
}

/* True when strings i of p and j of q hold the same bytes. */
static inline int pd_pprof_str_eq(const struct pd_pprof_profile *p, int64_t i,
				  const struct pd_pprof_profile *q, int64_t j)
{
	return p->str_len[i] == q->str_len[j] &&
	       memcmp(p->pb->string_table[i], q->pb->string_table[j], p->str_len[i]) == 0;
}

/* Orders two byte strings as Go orders strings: by their bytes, a prefix first. */
static inline int pd_pprof_bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : al < bl ? -1 : al > bl;
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

/* Reads the lengths of the n string_table entries of the raw protobuf buf from
 * the wire into lens (n of them), as protobuf-c's char * strings lose them at a
 * NUL. PD_ECORRUPT when the wire does not hold exactly n entries. */
int pd_pprof_wire_string_lengths(const uint8_t *buf, size_t len, size_t *lens, size_t n,
				 struct pd_err *err);

/* Serialises pb as protobuf-c would, but writes each string_table entry i with
 * str_len[i] bytes, NULs included. *out is malloc'd and owned by the caller. */
int pd_pprof_pack(const pb_profile *pb, const size_t *str_len, uint8_t **out, size_t *out_len,
		  struct pd_err *err);

/* Wraps an arena-allocated message tree as a profile (taking ownership of both,
 * and of str_len, the malloc'd lengths of pb's string_table entries) and
 * validates it. Used by decode, merge and diff to hand out their results. */
int pd_pprof_adopt(struct pd_pprof_profile **out, struct pd_arena *arena, pb_profile *pb,
		   size_t *str_len, struct pd_err *err);

/* True when a sample carries the label pprof::base=true (a diff's base side). */
int pd_pprof_is_diff_base(const struct pd_pprof_profile *p, const pb_sample *s);

/* Interned function-granularity node names, as pprof's reports key functions. */
struct pd_pprof_nodes {
	size_t count;
	char **names;           /* printable name per node, malloc'd, NUL-terminated */
	size_t *name_len;       /* its length: a name may hold NUL bytes */
	uint32_t *loc_off;      /* frames of location i: loc_node[loc_off[i] .. loc_off[i+1]) */
	uint32_t *loc_node;     /* innermost (inlined callee) first, as Location.line */
	/* per location, when the profile's drop_frames applies (else NULL): 0 kept,
	 * 1 a frame of it dropped (loc_off has only the frames its caller side kept),
	 * 2 its outermost frame dropped (all its frames are in loc_off) */
	uint8_t *loc_prune;
};

/* How pd_pprof_scale_core scales sample types 0..n-1 (scale.c): by divisor[j]
 * (exact integer division, rounded half away from zero; <= 1 leaves the type)
 * when divisor is set, else by ratio[j] (1.0 leaves it). A sample is dropped when
 * its values are all zero after scaling: only the scaled ones counted, as pprof's
 * ScaleN, unless keep_any (then any value keeps it); never when nothing is
 * scaled. merge_first adds up samples of one stack and labels first. */
struct pd_pprof_scaling {
	const double *ratio;
	const int64_t *divisor;
	size_t n;
	int keep_any, merge_first;
};

/* *out is new and owned by the caller, p only read. */
int pd_pprof_scale_core(const struct pd_pprof_profile *p, const struct pd_pprof_scaling *sc,
                        struct pd_pprof_profile **out, struct pd_err *err);

struct pd_labels_regex;
/* Compiles re (len bytes, Go's syntax) to match anywhere in a string, as Go's
 * MatchString does; errors name offsets in re as written (tags.c). */
int pd_pprof_compile_unanchored(struct pd_labels_regex **out, const char *re, size_t len,
                                struct pd_err *err);

/* 1 when the report name of a function (pd_pprof_report_name) is its name as it
 * is, so that no copy need be made. */
int pd_pprof_name_as_is(const char *name, size_t nlen, const char *system_name, size_t slen,
                        enum pd_pprof_names mode);

/* Assigns a node to every (location, line) of p. Fills n; free with _fini. */
int pd_pprof_nodes_build(const struct pd_pprof_profile *p, struct pd_pprof_nodes *n,
			 struct pd_err *err);
void pd_pprof_nodes_fini(struct pd_pprof_nodes *n);
/* The sample's stack as reports see it, after drop_frames (loc_prune of the
 * nodes, may be NULL): location_id[lo .. n_location_id) (leaf first), lo
 * returned; 0 when nothing is pruned. */
size_t pd_pprof_stack_lo(const uint8_t *loc_prune, const struct pd_pprof_profile *p,
                         const pb_sample *s);

#endif
