/* jfr_parse_int.h: what the files of the JFR reader share: the classes and
 * fields a chunk's metadata declares, the constant pools, the reader's state, the
 * primitive reads (compressed integers, defined here so that the loops of every
 * file inline them) and the reads of strings and values. jfr_parse.c reads the
 * chunks and their events, jfr_meta.c the metadata, jfr_pool.c the constant pools
 * and jfr_value.c the strings and values. */
#ifndef PD_INGEST_JFR_PARSE_INT_H
#define PD_INGEST_JFR_PARSE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jfr_int.h"

#define HEADER_SIZE 68
#define MAX_DEPTH 32
#define FRAME_MAX_FIELDS 16
#define FLAT_MAX 64

enum prim {
	P_STRUCT = 0,
	P_BOOLEAN,
	P_BYTE,
	P_CHAR,
	P_SHORT,
	P_INT,
	P_LONG,
	P_FLOAT,
	P_DOUBLE,
	P_STRING
};

enum role {
	R_NONE = 0,
	R_STACK_TRACE,
	R_STATE,
	R_CONTEXT_ID,
	R_SPAN_ID,
	R_SPAN_NAME,
	R_SAMPLES,
	R_TLAB_SIZE,
	R_ALLOCATION_SIZE,
	R_WEIGHT,
	R_DURATION,
	R_SIZE,
	R_NAME,
	R_VALUE,
	/* pools */
	R_STRING,
	R_CLASS_NAME,
	R_METHOD_TYPE,
	R_METHOD_NAME,
	R_FRAMES,
	R_FRAME_METHOD,
	R_FRAME_LINE,
};

struct field {
	const char *name;
	uint32_t name_len;
	uint64_t type;
	int cls; /* index of the class of type, -1 when unknown */
	uint8_t cp, array;
	uint8_t role;
	uint8_t fast; /* 1: a pool id or a long, 2: an int (set once the metadata is read) */
	uint8_t op;   /* enum op: how jfr_read_flat reads it; 0 when it cannot */
};

/* How a field of a flat class is read (jfr_read_flat): the compressed integers of
 * jfr_read_field's fast path, and the other primitives but strings. */
enum op { OP_NONE = 0, OP_LONG, OP_INT, OP_BYTE, OP_SHORT, OP_FLOAT, OP_DOUBLE };

struct cls {
	uint64_t id;
	const char *name;
	uint32_t name_len;
	int prim;
	uint32_t first, nf; /* fields[first .. first + nf) */
	uint8_t flat;       /* 1: a struct of at most FLAT_MAX fields, each with an op */
	uint8_t ints;       /* 1: flat, and each field a compressed integer (OP_LONG, OP_INT) */
};

struct method {
	uint64_t cls, name;
};

/* A slot of a pool's table of ids: the entry of index idx - 1 (0: empty). */
struct pool_slot {
	uint64_t id;
	uint32_t idx;
};

/* A pool's entries by id: small ids (writers number them from 1 up) in a table
 * indexed by id, at most DENSE_FACTOR times the pool's entries (plus
 * DENSE_MIN) long; others in an open-addressing table (ids, at most half
 * full), sized by the counts the checkpoints declare. */
struct pool {
	uint32_t *dense; /* dense[id]: index + 1, 0 when not there */
	size_t ndense;   /* ids below ndense are in dense, others in ids */
	struct pool_slot *ids;
	size_t ids_cap, ids_len; /* ids_cap: a power of two, or 0 */
	void *v;
	size_t n, cap, size;
};

#define DENSE_MIN 256
#define DENSE_FACTOR 8

/* the pools kept */
enum { POOL_SYMBOL, POOL_CLASS, POOL_METHOD, POOL_STACK, POOL_STATE, POOL_STRING, NPOOL };

struct rd {
	const uint8_t *b;
	size_t pos, end;
};

struct jfr_parser {
	const uint8_t *buf;
	size_t len;
	struct jfr_limits lim;
	uint64_t work;
	size_t mem;
	struct pd_err *err;
	int rc;
	struct pd_arena *arena; /* this chunk's strings and frames */
	/* this chunk's metadata */
	struct jfr_str *strs;
	uint32_t nstrs;
	struct cls *cls;
	size_t ncls, cap_cls;
	struct field *fields;
	size_t nfields, cap_fields;
	struct pd_u64map cls_ids; /* id + 1 -> class index */
	int ev_cls[JFR_EV_COUNT];
	int pool_cls[NPOOL];
	int stack_frame_cls;
	/* the stack frame class's fields when each is a compressed integer: their
	 * kind (struct field's fast) and role, for jfr_read_frames' loop; frame_nf 0
	 * when the class is read field by field */
	uint8_t frame_fast[FRAME_MAX_FIELDS], frame_role[FRAME_MAX_FIELDS];
	uint32_t frame_nf;
	struct pool pools[NPOOL];
	/* this chunk's distinct frames (struct jfr_stack's frame keys index them),
	 * and an open-addressing table of them: key + 1, 0 when empty */
	struct jfr_frame *fkeys;
	size_t nfkeys, cap_fkeys;
	uint32_t *fk_tab;
	size_t fk_cap;
};

/* ---- errors and limits (jfr_value.c) --------------------------------------- */

/* Fails the reading (the first failure wins) with rc and a message naming byte
 * off; returns the reading's code. */
int jfr_fail(struct jfr_parser *p, size_t off, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fails the reading with PD_ETOOBIG: it needs more of what than lim allows. */
int jfr_too_big(struct jfr_parser *p, size_t off, const char *what);
/* Grows *v (*cap elements of sz bytes) to hold n + 1, counting the memory. */
int jfr_grow(struct jfr_parser *p, void **v, size_t *cap, size_t n, size_t sz, size_t off);
/* n bytes of the chunk's arena; NULL (and the reading failed) past the memory. */
void *jfr_arena_alloc(struct jfr_parser *p, size_t n, size_t off);

/* ---- the work and the primitive reads, inlined in each file's loops -------- */

/* Adds n to the work done, failing past lim.max_work. */
static inline int jfr_work(struct jfr_parser *p, struct rd *r, uint64_t n)
{
	p->work += n;
	return p->work > p->lim.max_work ? jfr_too_big(p, r->pos, "work") : 0;
}

static inline int jfr_need(struct jfr_parser *p, struct rd *r, size_t n)
{
	if (r->end - r->pos >= n)
		return 0;
	return jfr_fail(p, r->pos, PD_EINVAL, "%zu bytes needed, %zu left in the %s", n,
	                r->end - r->pos, r->end == p->len ? "recording" : "event");
}

static inline int jfr_u8(struct jfr_parser *p, struct rd *r, uint8_t *v)
{
	if (jfr_need(p, r, 1))
		return p->rc;
	*v = r->b[r->pos++];
	return 0;
}

/* A compressed integer of at most bits bits (16, 32: at most 3 or 5 bytes). */
static inline int jfr_varint(struct jfr_parser *p, struct rd *r, unsigned bits, uint32_t *v)
{
	size_t start = r->pos;
	uint32_t x = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (shift >= bits)
			return jfr_fail(p, start, PD_EINVAL, "a %u-bit integer runs past its size",
			                bits);
		if (r->pos >= r->end)
			return jfr_fail(p, r->pos, PD_EINVAL, "an integer is cut off");
		uint8_t c = r->b[r->pos++];
		x |= (uint32_t)(c & 0x7f) << shift;
		if (c < 0x80)
			break;
	}
	*v = x;
	return 0;
}

static inline int jfr_varlong(struct jfr_parser *p, struct rd *r, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (r->pos >= r->end)
			return jfr_fail(p, r->pos, PD_EINVAL, "an integer is cut off");
		uint8_t c = r->b[r->pos++];
		if (shift == 56) {
			x |= (uint64_t)c << 56;
			break;
		}
		x |= (uint64_t)(c & 0x7f) << shift;
		if (c < 0x80)
			break;
	}
	*v = x;
	return 0;
}

/* A count of things each at least one byte long. */
static inline int jfr_count(struct jfr_parser *p, struct rd *r, const char *what, uint32_t *n)
{
	size_t at = r->pos;
	if (jfr_varint(p, r, 32, n))
		return p->rc;
	if (*n > r->end - r->pos)
		return jfr_fail(p, at, PD_EINVAL, "%s count %u exceeds the %zu bytes left", what,
		                *n, r->end - r->pos);
	return 0;
}

/* A compressed integer at b, with at least 9 bytes readable: its length (at most
 * 9: the ninth byte is whole). */
static inline size_t jfr_uvar(const uint8_t *b, uint64_t *v)
{
	uint64_t x = b[0] & 0x7f;
	size_t i = 1;
	if (b[0] >= 0x80) {
		for (unsigned shift = 7;; shift += 7) {
			uint8_t c = b[i++];
			if (shift == 56) {
				x |= (uint64_t)c << 56;
				break;
			}
			x |= (uint64_t)(c & 0x7f) << shift;
			if (c < 0x80)
				break;
		}
	}
	*v = x;
	return i;
}

/* The length of the compressed integer at b, with at least 9 bytes readable,
 * found without decoding it: the first byte below 0x80 ends it (9 when none of
 * the first 8 does). */
static inline size_t jfr_ulen(const uint8_t *b)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w;
	memcpy(&w, b, 8);
	uint64_t last = ~w & 0x8080808080808080ull; /* the bytes that end it */
	return last ? ((size_t)__builtin_ctzll(last) >> 3) + 1 : 9;
#else
	size_t i = 0;
	while (i < 8 && b[i] >= 0x80)
		i++;
	return i + 1;
#endif
}

/* The slot of frame (method, line) in a table of cap slots (a power of two). */
static inline size_t jfr_frame_slot(uint64_t method, uint32_t line, size_t cap)
{
	uint64_t h = method * 0x9e3779b97f4a7c15ull ^ (uint64_t)line * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (size_t)h & (cap - 1);
}

/* ---- strings and values (jfr_value.c) -------------------------------------- */

/* A string at r; refs allowed unless in the metadata (pool_ok 0). */
int jfr_string(struct jfr_parser *p, struct rd *r, int pool_ok, struct jfr_str *s);

/* Values by their declared class: one value of class ci (a pool id when cp), a
 * field's value (or array), the fields of a flat class, a stack's frames. */
int jfr_read_one(struct jfr_parser *p, struct rd *r, int ci, int cp, int depth, uint64_t *u,
                 struct jfr_str *s, const struct field *f);
int jfr_read_field(struct jfr_parser *p, struct rd *r, const struct field *f, int depth,
                   uint64_t *u, struct jfr_str *s);
int jfr_read_flat(struct jfr_parser *p, struct rd *r, const struct cls *c, uint64_t *v);
int jfr_read_frames(struct jfr_parser *p, struct rd *r, const struct field *f,
                    struct jfr_stack *st);

/* ---- the metadata (jfr_meta.c) --------------------------------------------- */

/* Reads the metadata event at chunk + off into p's classes and fields, and binds
 * the fields the converter reads. */
int jfr_read_metadata(struct jfr_parser *p, size_t chunk, size_t chunk_end, size_t off);
/* The index of the class of id, or -1. */
int jfr_class_by_id(const struct jfr_parser *p, uint64_t id);

/* ---- the constant pools (jfr_pool.c) --------------------------------------- */

/* Reads the checkpoints from the one at chunk + off backwards, keeping the
 * entries of the pools the converter uses. */
int jfr_read_pools(struct jfr_parser *p, size_t chunk, size_t chunk_end, size_t off);

#endif
