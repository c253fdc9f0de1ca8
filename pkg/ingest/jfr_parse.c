/* jfr_parse.c: a reader of JFR recordings (JDK Flight Recorder, as the JDK and
 * async-profiler write them), hand-written because no C library reads the format
 * and the one reference implementation is Java's. It reads only what the
 * converter needs, generically from each chunk's metadata, so that unknown event
 * types, pool types and fields are skipped by their declared types. A class made
 * only of primitives other than strings (most events, stack frames, the method
 * and class pools) is read by one loop over its fields (read_flat), stepping
 * over the integers the converter has no use for without decoding them.
 *
 * Layout (all integers big-endian in the header; LEB128 "compressed" elsewhere):
 *
 *   recording := chunk+
 *   chunk     := header(68) event*          the metadata and the constant pools
 *                                           are events too, found by offset
 *   header    := "FLR\0" u16 major u16 minor u64 size u64 cp_offset
 *                u64 meta_offset u64 start_ns u64 duration_ns u64 start_ticks
 *                u64 ticks_per_second u32 features
 *   event     := varlong size, varlong type, fields...   (size counts itself)
 *   metadata  := size, type 0, start, duration, id, varint nstrings, string*,
 *                element (root)                   element := varint name,
 *                varint nattr, (varint key, varint value)*, varint nchild, element*
 *                (names and values are indices into the strings; root ->
 *                metadata -> class{id,name} -> field{name,class,constantPool,dimension})
 *   checkpoint:= size, type 1, start, duration, varlong delta (to the previous
 *                checkpoint, 0 for the first), u8 kind, varint npools,
 *                (varlong type, varint n, (varlong id, value)*)*
 *   value     := by its class: boolean/byte 1 byte; short, char, int varint;
 *                long varlong; float 4 bytes; double 8 bytes; java.lang.String a
 *                string; any other class its fields in order; a field with
 *                constantPool=true is a varlong id into that class's pool; with
 *                dimension=1 a varint count and that many values
 *   string    := u8 encoding: 0 null, 1 "", 2 varlong id into the String pool,
 *                3 varint n + n bytes UTF-8, 4 varint n + n varint UTF-16 units,
 *                5 varint n + n bytes Latin-1
 *
 * Bounds: a chunk lies within the recording, events and checkpoints within their
 * chunk and their declared size, checkpoints are followed backwards only and
 * never overlap, array counts never exceed the bytes left, metadata elements and
 * nested values are at most 32 levels deep, and every value decoded counts
 * against lim->max_work (pools' memory against lim->max_memory), so a hostile
 * recording costs at most a small multiple of its size. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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
	uint8_t op;   /* enum op: how read_flat reads it; 0 when it cannot */
};

/* How a field of a flat class is read (read_flat): the compressed integers of
 * read_field's fast path, and the other primitives but strings. */
enum op { OP_NONE = 0, OP_LONG, OP_INT, OP_BYTE, OP_SHORT, OP_FLOAT, OP_DOUBLE };

struct cls {
	uint64_t id;
	const char *name;
	uint32_t name_len;
	int prim;
	uint32_t first, nf; /* fields[first .. first + nf) */
	uint8_t flat;       /* 1: a struct of at most FLAT_MAX fields, each with an op */
};

struct method {
	uint64_t cls, name;
};

/* A pool's entries by id: small ids (writers number them from 1 up) in a table
 * indexed by id, at most DENSE_FACTOR times the pool's entries (plus
 * DENSE_MIN) long; others in a hash map. */
struct pool {
	uint32_t *dense;      /* dense[id]: index + 1, 0 when not there */
	size_t ndense;        /* ids below ndense are in dense, others in ids */
	struct pd_u64map ids; /* id + 1 -> index */
	void *v;
	size_t n, cap, size;
};

#define DENSE_MIN 256
#define DENSE_FACTOR 8

/* the pools kept */
enum { POOL_SYMBOL, POOL_CLASS, POOL_METHOD, POOL_STACK, POOL_STATE, POOL_STRING, NPOOL };
static const char *const pool_names[NPOOL] = {"jdk.types.Symbol",      "java.lang.Class",
                                              "jdk.types.Method",      "jdk.types.StackTrace",
                                              "jdk.types.ThreadState", "java.lang.String"};

static const char *const event_names[JFR_EV_COUNT] = {
    "jdk.ExecutionSample",
    "profiler.WallClockSample",
    "jdk.ObjectAllocationInNewTLAB",
    "jdk.ObjectAllocationOutsideTLAB",
    "jdk.ObjectAllocationSample",
    "profiler.LiveObject",
    "jdk.JavaMonitorEnter",
    "jdk.ThreadPark",
    "profiler.Malloc",
    "jdk.ActiveSetting",
};

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
	 * kind (struct field's fast) and role, for read_frames' loop; frame_nf 0
	 * when the class is read field by field */
	uint8_t frame_fast[FRAME_MAX_FIELDS], frame_role[FRAME_MAX_FIELDS];
	uint32_t frame_nf;
	struct pool pools[NPOOL];
};

static int fail(struct jfr_parser *p, size_t off, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct jfr_parser *p, size_t off, int rc, const char *fmt, ...)
{
	if (p->rc)
		return p->rc;
	char msg[PD_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->rc = pd_err_set(p->err, rc, "the JFR recording is malformed at byte %zu: %s", off, msg);
	return p->rc;
}

static int too_big(struct jfr_parser *p, size_t off, const char *what)
{
	if (p->rc)
		return p->rc;
	p->rc = pd_err_set(p->err, PD_ETOOBIG,
	                   "the JFR recording needs more %s than its size allows to be read "
	                   "(at byte %zu; %s)",
	                   what, off, pd_ingest_limit_flag(PD_INGEST_LIMIT_DECOMPRESSED));
	return p->rc;
}

int jfr_charge(struct jfr_parser *p, uint64_t n, struct pd_err *err)
{
	p->work += n;
	if (p->work <= p->lim.max_work)
		return 0;
	return pd_err_set(err, PD_ETOOBIG,
	                  "converting the JFR recording takes more work than its size allows "
	                  "(%s)",
	                  pd_ingest_limit_flag(PD_INGEST_LIMIT_DECOMPRESSED));
}

static int work(struct jfr_parser *p, struct rd *r, uint64_t n)
{
	p->work += n;
	return p->work > p->lim.max_work ? too_big(p, r->pos, "work") : 0;
}

/* Grows *v (cap elements of sz bytes) to hold n + 1, counting the memory. */
static int grow(struct jfr_parser *p, void **v, size_t *cap, size_t n, size_t sz, size_t off)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	size_t add = (nc - *cap) * sz;
	if (p->mem + add > p->lim.max_memory)
		return too_big(p, off, "memory");
	void *q = realloc(*v, nc * sz);
	if (!q)
		return fail(p, off, PD_ENOMEM, "out of memory");
	p->mem += add;
	*v = q;
	*cap = nc;
	return 0;
}

static void *arena_alloc(struct jfr_parser *p, size_t n, size_t off)
{
	void *q = pd_arena_alloc(p->arena, n ? n : 1);
	if (!q)
		too_big(p, off, "memory");
	return q;
}

/* ---- primitive reads ---------------------------------------------------------- */

static int need(struct jfr_parser *p, struct rd *r, size_t n)
{
	if (r->end - r->pos >= n)
		return 0;
	return fail(p, r->pos, PD_EINVAL, "%zu bytes needed, %zu left in the %s", n,
	            r->end - r->pos, r->end == p->len ? "recording" : "event");
}

static int u8(struct jfr_parser *p, struct rd *r, uint8_t *v)
{
	if (need(p, r, 1))
		return p->rc;
	*v = r->b[r->pos++];
	return 0;
}

/* A compressed integer of at most bits bits (16, 32: at most 3 or 5 bytes). */
static int varint(struct jfr_parser *p, struct rd *r, unsigned bits, uint32_t *v)
{
	size_t start = r->pos;
	uint32_t x = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (shift >= bits)
			return fail(p, start, PD_EINVAL, "a %u-bit integer runs past its size",
			            bits);
		if (r->pos >= r->end)
			return fail(p, r->pos, PD_EINVAL, "an integer is cut off");
		uint8_t c = r->b[r->pos++];
		x |= (uint32_t)(c & 0x7f) << shift;
		if (c < 0x80)
			break;
	}
	*v = x;
	return 0;
}

static int varlong(struct jfr_parser *p, struct rd *r, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0;; shift += 7) {
		if (r->pos >= r->end)
			return fail(p, r->pos, PD_EINVAL, "an integer is cut off");
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
static int count(struct jfr_parser *p, struct rd *r, const char *what, uint32_t *n)
{
	size_t at = r->pos;
	if (varint(p, r, 32, n))
		return p->rc;
	if (*n > r->end - r->pos)
		return fail(p, at, PD_EINVAL, "%s count %u exceeds the %zu bytes left", what, *n,
		            r->end - r->pos);
	return 0;
}

static size_t put_utf8(char *o, uint32_t c)
{
	if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		c = 0xfffd;
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* A string; refs allowed unless in the metadata (pool_ok 0). */
static int string(struct jfr_parser *p, struct rd *r, int pool_ok, struct jfr_str *s)
{
	size_t at = r->pos;
	uint8_t enc = 0;
	uint32_t n = 0;
	memset(s, 0, sizeof(*s));
	s->s = "";
	if (u8(p, r, &enc))
		return p->rc;
	switch (enc) {
	case 0:
	case 1:
		return 0;
	case 2:
		if (!pool_ok)
			return fail(p, at, PD_EINVAL,
			            "a metadata string refers to the string pool");
		s->is_ref = 1;
		return varlong(p, r, &s->ref);
	case 3:
		if (count(p, r, "UTF-8 string byte", &n))
			return p->rc;
		s->s = (const char *)r->b + r->pos;
		s->len = n;
		r->pos += n;
		return 0;
	case 5: {
		if (count(p, r, "Latin-1 string byte", &n) || work(p, r, n))
			return p->rc;
		char *o = arena_alloc(p, (size_t)n * 2, at);
		if (!o)
			return p->rc;
		size_t l = 0;
		for (uint32_t i = 0; i < n; i++)
			l += put_utf8(o + l, r->b[r->pos + i]);
		r->pos += n;
		s->s = o;
		s->len = (uint32_t)l;
		return 0;
	}
	case 4: {
		if (count(p, r, "UTF-16 string unit", &n) || work(p, r, n))
			return p->rc;
		char *o = arena_alloc(p, (size_t)n * 3, at);
		if (!o)
			return p->rc;
		size_t l = 0;
		uint32_t hi = 0; /* a high surrogate waiting for its pair */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t c = 0;
			if (varint(p, r, 32, &c))
				return p->rc;
			if (c > 0xffff) /* a Java char is 16 bits: 3 bytes of UTF-8 at most */
				c = 0xfffd;
			if (hi && c >= 0xdc00 && c <= 0xdfff) {
				l +=
				    put_utf8(o + l, 0x10000 + ((hi - 0xd800) << 10) + (c - 0xdc00));
				hi = 0;
				continue;
			}
			if (hi)
				l += put_utf8(o + l, 0xfffd);
			hi = 0;
			if (c >= 0xd800 && c <= 0xdbff)
				hi = c;
			else
				l += put_utf8(o + l, c);
		}
		if (hi)
			l += put_utf8(o + l, 0xfffd);
		s->s = o;
		s->len = (uint32_t)l;
		return 0;
	}
	default:
		return fail(p, at, PD_EINVAL, "unknown string encoding %u", enc);
	}
}

/* ---- values ------------------------------------------------------------------- */

static int read_field(struct jfr_parser *p, struct rd *r, const struct field *f, int depth,
                      uint64_t *u, struct jfr_str *s);

/* One value of class ci (or a pool id when cp). */
static int read_one(struct jfr_parser *p, struct rd *r, int ci, int cp, int depth, uint64_t *u,
                    struct jfr_str *s, const struct field *f)
{
	uint64_t tu;
	struct jfr_str ts;
	if (!u)
		u = &tu;
	if (!s)
		s = &ts;
	*u = 0;
	if (work(p, r, 1))
		return p->rc;
	if (cp)
		return varlong(p, r, u);
	if (ci < 0)
		return fail(p, r->pos, PD_EINVAL,
		            "field %.*s has type %llu, which the metadata "
		            "does not declare",
		            (int)f->name_len, f->name, (unsigned long long)f->type);
	const struct cls *c = &p->cls[ci];
	uint8_t b = 0;
	uint32_t v32 = 0;
	switch (c->prim) {
	case P_BOOLEAN:
	case P_BYTE:
		if (u8(p, r, &b))
			return p->rc;
		*u = b;
		return 0;
	case P_CHAR:
	case P_SHORT:
		if (varint(p, r, 16, &v32))
			return p->rc;
		*u = v32;
		return 0;
	case P_INT:
		if (varint(p, r, 32, &v32))
			return p->rc;
		*u = v32;
		return 0;
	case P_LONG:
		return varlong(p, r, u);
	case P_FLOAT:
		if (need(p, r, 4))
			return p->rc;
		r->pos += 4;
		return 0;
	case P_DOUBLE:
		if (need(p, r, 8))
			return p->rc;
		r->pos += 8;
		return 0;
	case P_STRING:
		return string(p, r, 1, s);
	default:
		if (depth >= MAX_DEPTH)
			return fail(p, r->pos, PD_EINVAL, "values of %.*s nest deeper than %d",
			            (int)c->name_len, c->name, MAX_DEPTH);
		for (uint32_t i = 0; i < c->nf; i++)
			if (read_field(p, r, &p->fields[c->first + i], depth + 1, NULL, NULL))
				return p->rc;
		return 0;
	}
}

static int read_field(struct jfr_parser *p, struct rd *r, const struct field *f, int depth,
                      uint64_t *u, struct jfr_str *s)
{
	if (!f->array && f->fast) { /* a pool id, an int or a long: a compressed integer */
		if (++p->work > p->lim.max_work)
			return too_big(p, r->pos, "work");
		if (r->end - r->pos >= 10) { /* no bound checks needed on the way */
			const uint8_t *b = r->b + r->pos;
			uint64_t x = 0;
			size_t i = 0;
			for (unsigned shift = 0;; shift += 7) {
				uint8_t c = b[i++];
				if (shift == 56) {
					x |= (uint64_t)c << 56;
					break;
				}
				x |= (uint64_t)(c & 0x7f) << shift;
				if (c < 0x80)
					break;
			}
			if (f->fast == 2) { /* an int: at most 5 bytes, as varint() reads it */
				if (i > 5)
					return fail(p, r->pos, PD_EINVAL,
					            "a 32-bit integer runs past its size");
				x = (uint32_t)x;
			}
			r->pos += i;
			if (u)
				*u = x;
			return 0;
		}
	}
	if (!f->array)
		return read_one(p, r, f->cls, f->cp, depth, u, s, f);
	uint32_t n = 0;
	if (count(p, r, "array element", &n))
		return p->rc;
	for (uint32_t i = 0; i < n; i++)
		if (read_one(p, r, f->cls, f->cp, depth, NULL, NULL, f))
			return p->rc;
	return 0;
}

/* ---- metadata ----------------------------------------------------------------- */

enum { E_TOP, E_ROOT, E_METADATA, E_CLASS, E_FIELD, E_OTHER };

static int str_is(const struct jfr_str *s, const char *lit)
{
	size_t n = strlen(lit);
	return s->len == n && memcmp(s->s, lit, n) == 0;
}

static int parse_num(const struct jfr_str *s, uint64_t *v)
{
	uint64_t x = 0;
	if (s->len == 0 || s->len > 19)
		return -1;
	for (uint32_t i = 0; i < s->len; i++) {
		if (s->s[i] < '0' || s->s[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(s->s[i] - '0');
	}
	*v = x;
	return 0;
}

static int element(struct jfr_parser *p, struct rd *r, int parent, int depth)
{
	size_t at = r->pos;
	uint32_t name = 0, nattr = 0, nchild = 0;
	if (depth >= MAX_DEPTH)
		return fail(p, at, PD_EINVAL, "metadata elements nest deeper than %d", MAX_DEPTH);
	if (work(p, r, 1) || varint(p, r, 32, &name))
		return p->rc;
	if (name >= p->nstrs)
		return fail(p, at, PD_EINVAL,
		            "metadata element name %u is not among the %u strings", name, p->nstrs);
	const struct jfr_str *nm = &p->strs[name];
	int kind = E_OTHER;
	if (parent == E_TOP) {
		if (!str_is(nm, "root"))
			return fail(p, at, PD_EINVAL, "the metadata does not start with its root");
		kind = E_ROOT;
	} else if (parent == E_ROOT && str_is(nm, "metadata")) {
		kind = E_METADATA;
	} else if (parent == E_METADATA && str_is(nm, "class")) {
		kind = E_CLASS;
	} else if (parent == E_CLASS && str_is(nm, "field")) {
		kind = E_FIELD;
	}
	const struct jfr_str *a_id = NULL, *a_name = NULL, *a_class = NULL, *a_cp = NULL,
	                     *a_dim = NULL;
	if (count(p, r, "metadata attribute", &nattr))
		return p->rc;
	for (uint32_t i = 0; i < nattr; i++) {
		uint32_t k = 0, v = 0;
		size_t kat = r->pos;
		if (work(p, r, 1) || varint(p, r, 32, &k) || varint(p, r, 32, &v))
			return p->rc;
		if (k >= p->nstrs || v >= p->nstrs)
			return fail(p, kat, PD_EINVAL,
			            "a metadata attribute refers to string %u of %u",
			            k >= p->nstrs ? k : v, p->nstrs);
		const struct jfr_str *ks = &p->strs[k], *vs = &p->strs[v];
		if (str_is(ks, "id"))
			a_id = vs;
		else if (str_is(ks, "name"))
			a_name = vs;
		else if (str_is(ks, "class"))
			a_class = vs;
		else if (str_is(ks, "constantPool"))
			a_cp = vs;
		else if (str_is(ks, "dimension"))
			a_dim = vs;
	}
	if (kind == E_CLASS) {
		uint64_t id = 0;
		if (!a_id || parse_num(a_id, &id))
			return fail(p, at, PD_EINVAL, "a metadata class has no numeric id");
		if (!a_name || !a_name->len)
			return fail(p, at, PD_EINVAL, "metadata class %llu has no name",
			            (unsigned long long)id);
		if (grow(p, (void **)&p->cls, &p->cap_cls, p->ncls, sizeof(*p->cls), at))
			return p->rc;
		p->cls[p->ncls++] = (struct cls){.id = id,
		                                 .name = a_name->s,
		                                 .name_len = a_name->len,
		                                 .first = (uint32_t)p->nfields};
	} else if (kind == E_FIELD) {
		uint64_t type = 0;
		if (!a_class || parse_num(a_class, &type))
			return fail(p, at, PD_EINVAL, "a metadata field has no numeric class");
		if (!a_name || !a_name->len)
			return fail(p, at, PD_EINVAL, "a metadata field has no name");
		if (a_dim && a_dim->len && !str_is(a_dim, "1"))
			return fail(p, at, PD_EINVAL,
			            "field %.*s has dimension %.*s (only 1 is known)",
			            (int)a_name->len, a_name->s, (int)a_dim->len, a_dim->s);
		if (grow(p, (void **)&p->fields, &p->cap_fields, p->nfields, sizeof(*p->fields),
		         at))
			return p->rc;
		p->fields[p->nfields++] = (struct field){
		    .name = a_name->s,
		    .name_len = a_name->len,
		    .type = type,
		    .cp = a_cp && str_is(a_cp, "true"),
		    .array = a_dim && a_dim->len,
		};
		p->cls[p->ncls - 1].nf++;
	}
	if (count(p, r, "metadata child", &nchild))
		return p->rc;
	for (uint32_t i = 0; i < nchild; i++)
		if (element(p, r, kind, depth + 1))
			return p->rc;
	return 0;
}

/* The index of the last class named name, or -1. */
static int class_named(const struct jfr_parser *p, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = p->ncls; i-- > 0;)
		if (p->cls[i].name_len == n && memcmp(p->cls[i].name, name, n) == 0)
			return (int)i;
	return -1;
}

static int class_by_id(const struct jfr_parser *p, uint64_t id)
{
	uint32_t v;
	if (id == UINT64_MAX || !pd_u64map_get(&p->cls_ids, id + 1, &v))
		return -1;
	return (int)v;
}

struct role_def {
	const char *field, *type;
	uint8_t cp, array, role;
};

static const struct role_def event_roles[] = {
    {"stackTrace", "jdk.types.StackTrace", 1, 0, R_STACK_TRACE},
    {"state", "jdk.types.ThreadState", 1, 0, R_STATE},
    {"contextId", "long", 0, 0, R_CONTEXT_ID},
    {"spanId", "long", 0, 0, R_SPAN_ID},
    {"spanName", "long", 0, 0, R_SPAN_NAME},
    {"samples", "int", 0, 0, R_SAMPLES},
    {"tlabSize", "long", 0, 0, R_TLAB_SIZE},
    {"allocationSize", "long", 0, 0, R_ALLOCATION_SIZE},
    {"weight", "long", 0, 0, R_WEIGHT},
    {"duration", "long", 0, 0, R_DURATION},
    {"size", "long", 0, 0, R_SIZE},
    {"name", "java.lang.String", 0, 0, R_NAME},
    {"value", "java.lang.String", 0, 0, R_VALUE},
};

static const struct role_def pool_roles[][2] = {
    [POOL_SYMBOL] = {{"string", "java.lang.String", 0, 0, R_STRING}, {0}},
    [POOL_CLASS] = {{"name", "jdk.types.Symbol", 1, 0, R_CLASS_NAME}, {0}},
    [POOL_METHOD] = {{"type", "java.lang.Class", 1, 0, R_METHOD_TYPE},
                     {"name", "jdk.types.Symbol", 1, 0, R_METHOD_NAME}},
    [POOL_STACK] = {{"frames", "jdk.types.StackFrame", 0, 1, R_FRAMES}, {0}},
    [POOL_STATE] = {{"name", "java.lang.String", 0, 0, R_NAME}, {0}},
    [POOL_STRING] = {{0}, {0}},
};

static const struct role_def frame_roles[] = {
    {"method", "jdk.types.Method", 1, 0, R_FRAME_METHOD},
    {"lineNumber", "int", 0, 0, R_FRAME_LINE},
};

/* Marks the fields of class ci that match one of defs (name, type, constant
 * pool and array all as expected). */
static void bind(struct jfr_parser *p, int ci, const struct role_def *defs, size_t n)
{
	if (ci < 0)
		return;
	const struct cls *c = &p->cls[ci];
	for (uint32_t i = 0; i < c->nf; i++) {
		struct field *f = &p->fields[c->first + i];
		for (size_t j = 0; j < n; j++) {
			const struct role_def *d = &defs[j];
			if (!d->field)
				continue;
			int t = class_named(p, d->type);
			if (f->name_len == strlen(d->field) &&
			    memcmp(f->name, d->field, f->name_len) == 0 && t >= 0 &&
			    f->type == p->cls[t].id && f->cp == d->cp && f->array == d->array)
				f->role = d->role;
		}
	}
}

static int read_metadata(struct jfr_parser *p, size_t chunk, size_t chunk_end, size_t off)
{
	struct rd r = {.b = p->buf, .pos = chunk + off, .end = chunk_end};
	size_t at = r.pos;
	uint32_t size = 0, type = 0;
	uint64_t skip = 0;
	if (varint(p, &r, 32, &size))
		return p->rc;
	if (size < 1 || size > chunk_end - at)
		return fail(p, at, PD_EINVAL,
		            "the metadata event of %u bytes does not fit its chunk", size);
	r.end = at + size;
	if (varint(p, &r, 32, &type) || varlong(p, &r, &skip) || varlong(p, &r, &skip) ||
	    varlong(p, &r, &skip))
		return p->rc;
	if (type != 0)
		return fail(p, at, PD_EINVAL, "the metadata offset points at an event of type %u",
		            type);
	if (count(p, &r, "metadata string", &p->nstrs))
		return p->rc;
	p->strs = arena_alloc(p, (size_t)p->nstrs * sizeof(*p->strs), at);
	if (!p->strs)
		return p->rc;
	for (uint32_t i = 0; i < p->nstrs; i++)
		if (work(p, &r, 1) || string(p, &r, 0, &p->strs[i]))
			return p->rc;
	if (element(p, &r, E_TOP, 0))
		return p->rc;
	/* resolve */
	for (size_t i = 0; i < p->ncls; i++) {
		static const struct {
			const char *n;
			int prim;
		} prims[] = {
		    {"boolean", P_BOOLEAN}, {"byte", P_BYTE},     {"char", P_CHAR},
		    {"short", P_SHORT},     {"int", P_INT},       {"long", P_LONG},
		    {"float", P_FLOAT},     {"double", P_DOUBLE}, {"java.lang.String", P_STRING}};
		struct cls *c = &p->cls[i];
		for (size_t j = 0; j < sizeof(prims) / sizeof(prims[0]); j++)
			if (c->name_len == strlen(prims[j].n) &&
			    memcmp(c->name, prims[j].n, c->name_len) == 0)
				c->prim = prims[j].prim;
		if (c->id != UINT64_MAX && pd_u64map_put(&p->cls_ids, c->id + 1, (uint32_t)i))
			return fail(p, at, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < p->nfields; i++) {
		struct field *f = &p->fields[i];
		f->cls = class_by_id(p, f->type);
		int prim = f->cls >= 0 ? p->cls[f->cls].prim : -1;
		f->fast = f->cp || prim == P_LONG ? 1 : prim == P_INT ? 2 : 0;
		static const uint8_t ops[] = {
		    [P_BOOLEAN] = OP_BYTE, [P_BYTE] = OP_BYTE,     [P_CHAR] = OP_SHORT,
		    [P_SHORT] = OP_SHORT,  [P_INT] = OP_INT,       [P_LONG] = OP_LONG,
		    [P_FLOAT] = OP_FLOAT,  [P_DOUBLE] = OP_DOUBLE, [P_STRING] = OP_NONE,
		    [P_STRUCT] = OP_NONE};
		f->op = f->array ? OP_NONE : f->cp ? OP_LONG : prim >= 0 ? ops[prim] : OP_NONE;
	}
	for (size_t i = 0; i < p->ncls; i++) {
		struct cls *c = &p->cls[i];
		c->flat = c->prim == P_STRUCT && c->nf <= FLAT_MAX;
		for (uint32_t j = 0; j < c->nf && c->flat; j++)
			c->flat = p->fields[c->first + j].op != OP_NONE;
	}
	for (int e = 0; e < JFR_EV_COUNT; e++) {
		p->ev_cls[e] = class_named(p, event_names[e]);
		bind(p, p->ev_cls[e], event_roles, sizeof(event_roles) / sizeof(event_roles[0]));
	}
	for (int k = 0; k < NPOOL; k++) {
		p->pool_cls[k] = class_named(p, pool_names[k]);
		bind(p, p->pool_cls[k], pool_roles[k], 2);
	}
	p->stack_frame_cls = class_named(p, "jdk.types.StackFrame");
	bind(p, p->stack_frame_cls, frame_roles, 2);
	p->frame_nf = 0;
	if (p->stack_frame_cls >= 0) {
		const struct cls *c = &p->cls[p->stack_frame_cls];
		uint32_t nf = c->nf <= FRAME_MAX_FIELDS ? c->nf : 0;
		for (uint32_t i = 0; i < nf; i++) {
			const struct field *f = &p->fields[c->first + i];
			if (f->array || !f->fast) {
				nf = 0;
				break;
			}
			p->frame_fast[i] = f->fast;
			p->frame_role[i] = f->role;
		}
		p->frame_nf = nf;
	}
	return 0;
}

/* ---- constant pools ----------------------------------------------------------- */

static void *pool_slot(struct jfr_parser *p, int k, uint64_t id, size_t at)
{
	struct pool *pl = &p->pools[k];
	if (grow(p, &pl->v, &pl->cap, pl->n, pl->size, at))
		return NULL;
	if (id >= pl->ndense && id < DENSE_FACTOR * (pl->n + DENSE_MIN)) {
		size_t nd = pl->ndense ? pl->ndense : DENSE_MIN;
		while (nd <= id)
			nd *= 2;
		size_t add = (nd - pl->ndense) * sizeof(*pl->dense);
		if (p->mem + add > p->lim.max_memory) {
			too_big(p, at, "memory");
			return NULL;
		}
		uint32_t *d = realloc(pl->dense, nd * sizeof(*d));
		if (!d) {
			fail(p, at, PD_ENOMEM, "out of memory");
			return NULL;
		}
		memset(d + pl->ndense, 0, add);
		p->mem += add;
		pl->dense = d;
		pl->ndense = nd;
	}
	if (id < pl->ndense) {
		pl->dense[id] = (uint32_t)pl->n + 1;
	} else if (id != UINT64_MAX && pd_u64map_put(&pl->ids, id + 1, (uint32_t)pl->n)) {
		fail(p, at, PD_ENOMEM, "out of memory");
		return NULL;
	}
	void *s = (char *)pl->v + pl->n * pl->size;
	memset(s, 0, pl->size);
	pl->n++;
	return s;
}

/* One compressed integer of a field of kind fast (1: a long or a pool id, 2: an
 * int), as read_field reads it. */
static inline int fast_int(struct jfr_parser *p, struct rd *r, uint8_t fast, uint64_t *u)
{
	if (r->end - r->pos < 10) { /* near the end: the checked reads */
		uint32_t v = 0;
		if (fast == 1)
			return varlong(p, r, u);
		if (varint(p, r, 32, &v))
			return p->rc;
		*u = v;
		return 0;
	}
	const uint8_t *b = r->b + r->pos;
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
		if (fast == 2) {
			if (i > 5)
				return fail(p, r->pos, PD_EINVAL,
				            "a 32-bit integer runs past its size");
			x = (uint32_t)x;
		}
	}
	r->pos += i;
	*u = x;
	return 0;
}

/* Steps over a compressed integer of kind fast (1: a long or a pool id, at
 * most 9 bytes; 2: an int, at most 5) without decoding it, failing where
 * fast_int fails. */
static inline int skip_int(struct jfr_parser *p, struct rd *r, uint8_t fast)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (r->end - r->pos >= 10) {
		uint64_t w;
		memcpy(&w, r->b + r->pos, 8);
		uint64_t last = ~w & 0x8080808080808080ull; /* the bytes that end it */
		size_t n = last ? ((size_t)__builtin_ctzll(last) >> 3) + 1 : 9;
		if (fast == 2 && n > 5)
			return fail(p, r->pos, PD_EINVAL, "a 32-bit integer runs past its size");
		r->pos += n;
		return 0;
	}
#endif
	uint64_t u;
	return fast_int(p, r, fast, &u);
}

/* The frames of a stack whose frame fields are all compressed integers
 * (p->frame_nf of them), counted as read_field counts them. */
static int read_frames_fast(struct jfr_parser *p, struct rd *r, struct jfr_stack *st)
{
	uint32_t nf = p->frame_nf;
	if (work(p, r, (uint64_t)st->n * (nf + 1)))
		return p->rc;
	for (uint32_t i = 0; i < st->n; i++) {
		struct jfr_frame *fr = &st->frames[i];
		fr->method = 0;
		fr->line = 0;
		for (uint32_t j = 0; j < nf; j++) {
			uint64_t u = 0;
			uint8_t role = p->frame_role[j];
			if (!role) {
				if (skip_int(p, r, p->frame_fast[j]))
					return p->rc;
				continue;
			}
			if (fast_int(p, r, p->frame_fast[j], &u))
				return p->rc;
			if (role == R_FRAME_METHOD)
				fr->method = u;
			else if (role == R_FRAME_LINE)
				fr->line = (uint32_t)u;
		}
	}
	return 0;
}

/* The fields of a flat class c (each with an op) into v[0 .. c->nf), counted
 * as read_field counts them; floats, doubles and integers of no role are
 * stepped over (0). */
static int read_flat(struct jfr_parser *p, struct rd *r, const struct cls *c, uint64_t *v)
{
	if (work(p, r, c->nf))
		return p->rc;
	if (!c->nf) /* a class of no fields (there may be no fields at all) */
		return 0;
	const struct field *f = &p->fields[c->first];
	for (uint32_t i = 0; i < c->nf; i++) {
		uint32_t v32 = 0;
		v[i] = 0;
		switch (f[i].op) {
		case OP_LONG:
		case OP_INT:
			if (f[i].role ? fast_int(p, r, f[i].op == OP_LONG ? 1 : 2, &v[i])
			              : skip_int(p, r, f[i].op == OP_LONG ? 1 : 2))
				return p->rc;
			break;
		case OP_BYTE:
			if (need(p, r, 1))
				return p->rc;
			v[i] = r->b[r->pos++];
			break;
		case OP_SHORT:
			if (varint(p, r, 16, &v32))
				return p->rc;
			v[i] = v32;
			break;
		case OP_FLOAT:
		case OP_DOUBLE: {
			size_t n = f[i].op == OP_FLOAT ? 4 : 8;
			if (need(p, r, n))
				return p->rc;
			r->pos += n;
			break;
		}
		default:
			return fail(p, r->pos, PD_EINVAL, "field %.*s cannot be read flat",
			            (int)f[i].name_len, f[i].name);
		}
	}
	return 0;
}

static int read_frames(struct jfr_parser *p, struct rd *r, const struct field *f,
                       struct jfr_stack *st)
{
	uint32_t n = 0;
	size_t at = r->pos;
	if (count(p, r, "stack frame", &n))
		return p->rc;
	st->frames = arena_alloc(p, (size_t)n * sizeof(*st->frames), at);
	if (!st->frames)
		return p->rc;
	st->n = n;
	const struct cls *c = &p->cls[f->cls];
	if (p->frame_nf && p->frame_nf == c->nf && f->cls == p->stack_frame_cls)
		return read_frames_fast(p, r, st);
	for (uint32_t i = 0; i < n; i++) {
		struct jfr_frame *fr = &st->frames[i];
		fr->method = 0;
		fr->line = 0;
		if (work(p, r, 1))
			return p->rc;
		for (uint32_t j = 0; j < c->nf; j++) {
			const struct field *ff = &p->fields[c->first + j];
			uint64_t u = 0;
			if (read_field(p, r, ff, 2, &u, NULL))
				return p->rc;
			if (ff->role == R_FRAME_METHOD)
				fr->method = u;
			else if (ff->role == R_FRAME_LINE)
				fr->line = (uint32_t)u;
		}
	}
	return 0;
}

/* One entry (id and value) of a pool of class ci, kept when it is pool k. */
static int read_entry(struct jfr_parser *p, struct rd *r, int ci, int k)
{
	size_t at = r->pos;
	uint64_t id = 0;
	const struct cls *c = &p->cls[ci];
	if (work(p, r, 1) || varlong(p, r, &id))
		return p->rc;
	if (k == POOL_STRING || (k < 0 && c->prim != P_STRUCT)) {
		struct jfr_str s;
		if (read_one(p, r, ci, 0, 1, NULL, &s, NULL))
			return p->rc;
		if (k == POOL_STRING) {
			struct jfr_str *slot = pool_slot(p, k, id, at);
			if (!slot)
				return p->rc;
			*slot = s;
			if (slot->is_ref) { /* a pool string naming another: taken as "" */
				slot->is_ref = 0;
				slot->s = "";
			}
		}
		return 0;
	}
	if (c->prim != P_STRUCT)
		return fail(p, at, PD_EINVAL, "pool %.*s has an unexpected type", (int)c->name_len,
		            c->name);
	void *slot = NULL;
	if (k >= 0 && !(slot = pool_slot(p, k, id, at)))
		return p->rc;
	if (c->flat) {
		uint64_t v[FLAT_MAX];
		if (read_flat(p, r, c, v))
			return p->rc;
		for (uint32_t i = 0; i < c->nf && k >= 0; i++) {
			uint8_t role = p->fields[c->first + i].role;
			if (k == POOL_CLASS && role == R_CLASS_NAME)
				*(uint64_t *)slot = v[i];
			else if (k == POOL_METHOD && role == R_METHOD_TYPE)
				((struct method *)slot)->cls = v[i];
			else if (k == POOL_METHOD && role == R_METHOD_NAME)
				((struct method *)slot)->name = v[i];
		}
		return 0;
	}
	for (uint32_t i = 0; i < c->nf; i++) {
		const struct field *f = &p->fields[c->first + i];
		uint64_t u = 0;
		struct jfr_str s = {.s = ""};
		if (k >= 0 && f->role == R_FRAMES && f->cls == p->stack_frame_cls) {
			if (read_frames(p, r, f, slot))
				return p->rc;
			continue;
		}
		if (read_field(p, r, f, 1, &u, &s))
			return p->rc;
		if (k < 0 || !f->role)
			continue;
		switch (k) {
		case POOL_SYMBOL:
			if (f->role == R_STRING)
				*(struct jfr_str *)slot = s;
			break;
		case POOL_STATE:
			if (f->role == R_NAME)
				*(struct jfr_str *)slot = s;
			break;
		case POOL_CLASS:
			if (f->role == R_CLASS_NAME)
				*(uint64_t *)slot = u;
			break;
		case POOL_METHOD:
			if (f->role == R_METHOD_TYPE)
				((struct method *)slot)->cls = u;
			else if (f->role == R_METHOD_NAME)
				((struct method *)slot)->name = u;
			break;
		}
	}
	return 0;
}

static int read_pools(struct jfr_parser *p, size_t chunk, size_t chunk_end, size_t off)
{
	size_t pos = chunk + off, limit = chunk_end;
	for (;;) {
		struct rd r = {.b = p->buf, .pos = pos, .end = limit};
		uint64_t size = 0, type = 0, skip = 0, delta = 0;
		uint8_t kind = 0;
		uint32_t npools = 0;
		if (varlong(p, &r, &size))
			return p->rc;
		if (size == 0 || size > limit - pos)
			return fail(p, pos, PD_EINVAL,
			            "a checkpoint of %llu bytes does not fit before byte %zu",
			            (unsigned long long)size, limit);
		r.end = pos + size;
		if (varlong(p, &r, &type) || varlong(p, &r, &skip) || varlong(p, &r, &skip) ||
		    varlong(p, &r, &delta) || u8(p, &r, &kind) || varint(p, &r, 32, &npools))
			return p->rc;
		if (type != 1)
			return fail(p, pos, PD_EINVAL,
			            "the constant pool offset points at an event "
			            "of type %llu",
			            (unsigned long long)type);
		for (uint32_t i = 0; i < npools; i++) {
			size_t at = r.pos;
			uint64_t tid = 0;
			uint32_t n = 0;
			if (work(p, &r, 1) || varlong(p, &r, &tid))
				return p->rc;
			int ci = class_by_id(p, tid);
			if (ci < 0)
				return fail(p, at, PD_EINVAL,
				            "a constant pool has type %llu, which the "
				            "metadata does not declare",
				            (unsigned long long)tid);
			int k = -1;
			for (int j = 0; j < NPOOL; j++)
				if (p->pool_cls[j] == ci)
					k = j;
			if (count(p, &r, "constant", &n))
				return p->rc;
			for (uint32_t j = 0; j < n; j++)
				if (read_entry(p, &r, ci, k))
					return p->rc;
		}
		int64_t d = (int64_t)delta;
		uint64_t back = 0 - delta; /* the distance back, for a negative delta */
		if (d == 0)
			return 0;
		if (d > 0 || back > pos - chunk - HEADER_SIZE)
			return fail(p, pos, PD_EINVAL,
			            "a checkpoint's link to the previous one (%lld) does not lead "
			            "backwards within the chunk",
			            (long long)d);
		limit = pos;
		pos -= (size_t)back;
	}
}

/* ---- lookups ------------------------------------------------------------------ */

static const void *lookup(const struct jfr_parser *p, int k, uint64_t id)
{
	uint32_t v;
	const struct pool *pl = &p->pools[k];
	if (id < pl->ndense && pl->dense[id])
		v = pl->dense[id] - 1;
	else if (id == UINT64_MAX || !pd_u64map_get(&pl->ids, id + 1, &v))
		return NULL;
	return (const char *)pl->v + (size_t)v * pl->size;
}

const struct jfr_stack *jfr_stack(const struct jfr_parser *p, uint64_t id)
{
	return lookup(p, POOL_STACK, id);
}

int jfr_method(const struct jfr_parser *p, uint64_t id, uint64_t *class_id, uint64_t *name_sym)
{
	const struct method *m = lookup(p, POOL_METHOD, id);
	if (!m)
		return 0;
	*class_id = m->cls;
	*name_sym = m->name;
	return 1;
}

int jfr_class(const struct jfr_parser *p, uint64_t id, uint64_t *name_sym)
{
	const uint64_t *c = lookup(p, POOL_CLASS, id);
	if (!c)
		return 0;
	*name_sym = *c;
	return 1;
}

struct jfr_str jfr_resolve(const struct jfr_parser *p, struct jfr_str s)
{
	if (!s.is_ref)
		return s;
	const struct jfr_str *t = lookup(p, POOL_STRING, s.ref);
	return t ? *t : (struct jfr_str){.s = ""};
}

struct jfr_str jfr_symbol(const struct jfr_parser *p, uint64_t id)
{
	const struct jfr_str *s = lookup(p, POOL_SYMBOL, id);
	return s ? jfr_resolve(p, *s) : (struct jfr_str){.s = ""};
}

int jfr_thread_state(const struct jfr_parser *p, uint64_t id, struct jfr_str *name)
{
	const struct jfr_str *s = lookup(p, POOL_STATE, id);
	if (!s)
		return 0;
	*name = jfr_resolve(p, *s);
	return 1;
}

/* ---- events and chunks -------------------------------------------------------- */

static int read_event(struct jfr_parser *p, struct rd *r, int e, struct jfr_event *ev)
{
	const struct cls *c = &p->cls[p->ev_cls[e]];
	memset(ev, 0, sizeof(*ev));
	ev->type = e;
	ev->name.s = ev->value.s = "";
	uint64_t v[FLAT_MAX];
	if (c->flat && read_flat(p, r, c, v))
		return p->rc;
	for (uint32_t i = 0; i < c->nf; i++) {
		const struct field *f = &p->fields[c->first + i];
		uint64_t u = 0;
		struct jfr_str s = {.s = ""};
		if (c->flat) {
			if (!f->role)
				continue;
			u = v[i];
		} else if (read_field(p, r, f, 1, &u, &s)) {
			return p->rc;
		}
		switch (f->role) {
		case R_STACK_TRACE:
			ev->stack_trace = u;
			break;
		case R_STATE:
			ev->state = u;
			break;
		case R_CONTEXT_ID:
			ev->context_id = u;
			break;
		case R_SPAN_ID:
			ev->span_id = u;
			break;
		case R_SPAN_NAME:
			ev->span_name = u;
			break;
		case R_SAMPLES:
			ev->samples = u;
			break;
		case R_TLAB_SIZE:
			ev->tlab_size = u;
			break;
		case R_ALLOCATION_SIZE:
			ev->allocation_size = u;
			break;
		case R_WEIGHT:
			ev->weight = u;
			break;
		case R_DURATION:
			ev->duration = u;
			break;
		case R_SIZE:
			ev->size = u;
			break;
		case R_NAME:
			ev->name = s;
			break;
		case R_VALUE:
			ev->value = s;
			break;
		}
	}
	return 0;
}

static void chunk_reset(struct jfr_parser *p)
{
	pd_arena_destroy(p->arena);
	p->arena = NULL;
	p->nstrs = 0;
	p->strs = NULL;
	p->ncls = 0;
	p->nfields = 0;
	pd_u64map_fini(&p->cls_ids);
	pd_u64map_init(&p->cls_ids);
	for (int k = 0; k < NPOOL; k++) {
		pd_u64map_fini(&p->pools[k].ids);
		pd_u64map_init(&p->pools[k].ids);
		p->pools[k].n = 0;
		if (p->pools[k].ndense)
			memset(p->pools[k].dense, 0, p->pools[k].ndense * sizeof(uint32_t));
	}
}

static int read_chunk(struct jfr_parser *p, size_t chunk, const struct jfr_callbacks *cb, void *ctx,
                      size_t *next)
{
	const uint8_t *h = p->buf + chunk;
	size_t left = p->len - chunk;
	if (left < HEADER_SIZE)
		return fail(p, chunk, PD_EINVAL, "a chunk header needs %d bytes, %zu are left",
		            HEADER_SIZE, left);
	if (memcmp(h, "FLR\0", 4) != 0)
		return fail(p, chunk, PD_EINVAL, "a chunk does not start with the magic FLR\\0");
	uint16_t major = (uint16_t)(h[4] << 8 | h[5]);
	uint64_t f[4];
	for (int i = 0; i < 4; i++) {
		f[i] = 0;
		for (int j = 0; j < 8; j++)
			f[i] = f[i] << 8 | h[8 + 8 * i + j];
	}
	uint64_t size = f[0], cp = f[1], meta = f[2];
	if (major != 2)
		return fail(p, chunk, PD_EINVAL, "chunk format version %u.%u is not 2.x", major,
		            (unsigned)(h[6] << 8 | h[7]));
	if (size < HEADER_SIZE || size > left)
		return fail(p, chunk, PD_EINVAL,
		            "the chunk declares %llu bytes, but %zu are left in the recording",
		            (unsigned long long)size, left);
	if (cp < HEADER_SIZE || cp >= size || meta < HEADER_SIZE || meta >= size)
		return fail(p, chunk, PD_EINVAL,
		            "the chunk's constant pool (%llu) or metadata (%llu) offset lies "
		            "outside its %llu bytes",
		            (unsigned long long)cp, (unsigned long long)meta,
		            (unsigned long long)size);
	chunk_reset(p);
	size_t room = p->lim.max_memory > p->mem ? p->lim.max_memory - p->mem : 0;
	if (!(p->arena = pd_arena_create(room)))
		return fail(p, chunk, PD_ENOMEM, "out of memory");
	size_t end = chunk + (size_t)size;
	if (read_metadata(p, chunk, end, (size_t)meta) || read_pools(p, chunk, end, (size_t)cp))
		return p->rc;
	uint64_t ids[JFR_EV_COUNT];
	for (int e = 0; e < JFR_EV_COUNT; e++)
		ids[e] = p->ev_cls[e] >= 0 ? p->cls[p->ev_cls[e]].id : UINT64_MAX;
	struct jfr_event ev;
	for (size_t pos = chunk + HEADER_SIZE; pos < end;) {
		struct rd r = {.b = p->buf, .pos = pos, .end = end};
		uint64_t esize = 0, type = 0;
		if (varlong(p, &r, &esize) || varlong(p, &r, &type))
			return p->rc;
		if (esize < r.pos - pos || esize > end - pos)
			return fail(p, pos, PD_EINVAL,
			            "an event of %llu bytes does not fit its chunk",
			            (unsigned long long)esize);
		r.end = pos + (size_t)esize;
		if (work(p, &r, 1))
			return p->rc;
		for (int e = 0; e < JFR_EV_COUNT; e++) {
			if (type != ids[e] || p->ev_cls[e] < 0)
				continue;
			if (read_event(p, &r, e, &ev))
				return p->rc;
			int rc = cb->event(ctx, p, &ev);
			if (rc)
				return p->rc = rc;
			break;
		}
		pos = r.end;
	}
	if (cb->chunk_end) {
		int rc = cb->chunk_end(ctx, p);
		if (rc)
			return p->rc = rc;
	}
	*next = end;
	return 0;
}

int jfr_parse(const uint8_t *buf, size_t len, const struct jfr_limits *lim,
              const struct jfr_callbacks *cb, void *ctx, struct pd_err *err)
{
	struct jfr_parser p = {.buf = buf, .len = len, .lim = *lim, .err = err};
	static const size_t sizes[NPOOL] = {
	    [POOL_SYMBOL] = sizeof(struct jfr_str), [POOL_CLASS] = sizeof(uint64_t),
	    [POOL_METHOD] = sizeof(struct method),  [POOL_STACK] = sizeof(struct jfr_stack),
	    [POOL_STATE] = sizeof(struct jfr_str),  [POOL_STRING] = sizeof(struct jfr_str)};
	pd_u64map_init(&p.cls_ids);
	for (int k = 0; k < NPOOL; k++) {
		pd_u64map_init(&p.pools[k].ids);
		p.pools[k].size = sizes[k];
	}
	if (len == 0)
		fail(&p, 0, PD_EINVAL, "the recording is empty");
	for (size_t pos = 0; !p.rc && pos < len;)
		read_chunk(&p, pos, cb, ctx, &pos);
	chunk_reset(&p);
	pd_u64map_fini(&p.cls_ids);
	for (int k = 0; k < NPOOL; k++) {
		pd_u64map_fini(&p.pools[k].ids);
		free(p.pools[k].v);
		free(p.pools[k].dense);
	}
	free(p.cls);
	free(p.fields);
	return p.rc;
}
