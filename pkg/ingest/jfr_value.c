/* jfr_value.c: the JFR reader's decoding of values: its errors and limits (every
 * value decoded counts against the work allowed, every table and transcoded
 * string against the memory), strings in their five encodings transcoded to
 * UTF-8, and values by their declared class, field by field. A class made only of
 * primitives other than strings (most events, stack frames, the method and class
 * pools) is read by one loop over its fields (jfr_read_flat), stepping over the
 * integers the converter has no use for without decoding them, and so are the
 * frames of a stack whose frame fields are all compressed integers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jfr_parse_int.h"

int jfr_fail(struct jfr_parser *p, size_t off, int rc, const char *fmt, ...)
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

int jfr_too_big(struct jfr_parser *p, size_t off, const char *what)
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

/* Grows *v (cap elements of sz bytes) to hold n + 1, counting the memory. */
int jfr_grow(struct jfr_parser *p, void **v, size_t *cap, size_t n, size_t sz, size_t off)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	size_t add = (nc - *cap) * sz;
	if (p->mem + add > p->lim.max_memory)
		return jfr_too_big(p, off, "memory");
	void *q = realloc(*v, nc * sz);
	if (!q)
		return jfr_fail(p, off, PD_ENOMEM, "out of memory");
	p->mem += add;
	*v = q;
	*cap = nc;
	return 0;
}

void *jfr_arena_alloc(struct jfr_parser *p, size_t n, size_t off)
{
	void *q = pd_arena_alloc(p->arena, n ? n : 1);
	if (!q)
		jfr_too_big(p, off, "memory");
	return q;
}

/* ---- strings ------------------------------------------------------------------ */

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
int jfr_string(struct jfr_parser *p, struct rd *r, int pool_ok, struct jfr_str *s)
{
	size_t at = r->pos;
	uint8_t enc = 0;
	uint32_t n = 0;
	memset(s, 0, sizeof(*s));
	s->s = "";
	if (jfr_u8(p, r, &enc))
		return p->rc;
	switch (enc) {
	case 0:
	case 1:
		return 0;
	case 2:
		if (!pool_ok)
			return jfr_fail(p, at, PD_EINVAL,
			                "a metadata string refers to the string pool");
		s->is_ref = 1;
		return jfr_varlong(p, r, &s->ref);
	case 3:
		if (jfr_count(p, r, "UTF-8 string byte", &n))
			return p->rc;
		s->s = (const char *)r->b + r->pos;
		s->len = n;
		r->pos += n;
		return 0;
	case 5: {
		if (jfr_count(p, r, "Latin-1 string byte", &n) || jfr_work(p, r, n))
			return p->rc;
		char *o = jfr_arena_alloc(p, (size_t)n * 2, at);
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
		if (jfr_count(p, r, "UTF-16 string unit", &n) || jfr_work(p, r, n))
			return p->rc;
		char *o = jfr_arena_alloc(p, (size_t)n * 3, at);
		if (!o)
			return p->rc;
		size_t l = 0;
		uint32_t hi = 0; /* a high surrogate waiting for its pair */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t c = 0;
			if (jfr_varint(p, r, 32, &c))
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
		return jfr_fail(p, at, PD_EINVAL, "unknown string encoding %u", enc);
	}
}

/* ---- values ------------------------------------------------------------------- */

/* One value of class ci (or a pool id when cp). */
int jfr_read_one(struct jfr_parser *p, struct rd *r, int ci, int cp, int depth, uint64_t *u,
                 struct jfr_str *s, const struct field *f)
{
	uint64_t tu;
	struct jfr_str ts;
	if (!u)
		u = &tu;
	if (!s)
		s = &ts;
	*u = 0;
	if (jfr_work(p, r, 1))
		return p->rc;
	if (cp)
		return jfr_varlong(p, r, u);
	if (ci < 0)
		return jfr_fail(p, r->pos, PD_EINVAL,
		                "field %.*s has type %llu, which the metadata "
		                "does not declare",
		                (int)f->name_len, f->name, (unsigned long long)f->type);
	const struct cls *c = &p->cls[ci];
	uint8_t b = 0;
	uint32_t v32 = 0;
	switch (c->prim) {
	case P_BOOLEAN:
	case P_BYTE:
		if (jfr_u8(p, r, &b))
			return p->rc;
		*u = b;
		return 0;
	case P_CHAR:
	case P_SHORT:
		if (jfr_varint(p, r, 16, &v32))
			return p->rc;
		*u = v32;
		return 0;
	case P_INT:
		if (jfr_varint(p, r, 32, &v32))
			return p->rc;
		*u = v32;
		return 0;
	case P_LONG:
		return jfr_varlong(p, r, u);
	case P_FLOAT:
		if (jfr_need(p, r, 4))
			return p->rc;
		r->pos += 4;
		return 0;
	case P_DOUBLE:
		if (jfr_need(p, r, 8))
			return p->rc;
		r->pos += 8;
		return 0;
	case P_STRING:
		return jfr_string(p, r, 1, s);
	default:
		if (depth >= MAX_DEPTH)
			return jfr_fail(p, r->pos, PD_EINVAL, "values of %.*s nest deeper than %d",
			                (int)c->name_len, c->name, MAX_DEPTH);
		for (uint32_t i = 0; i < c->nf; i++)
			if (jfr_read_field(p, r, &p->fields[c->first + i], depth + 1, NULL, NULL))
				return p->rc;
		return 0;
	}
}

/* One compressed integer of a field of kind fast (1: a long or a pool id, 2: an
 * int), as jfr_read_field reads it (an int: at most 5 bytes, as
 * jfr_varint() reads it). */
static inline int fast_int(struct jfr_parser *p, struct rd *r, uint8_t fast, uint64_t *u)
{
	if (r->end - r->pos < 10) { /* near the end: the checked reads */
		uint32_t v = 0;
		if (fast == 1)
			return jfr_varlong(p, r, u);
		if (jfr_varint(p, r, 32, &v))
			return p->rc;
		*u = v;
		return 0;
	}
	uint64_t x;
	size_t i = jfr_uvar(r->b + r->pos, &x);
	if (fast == 2) {
		if (i > 5)
			return jfr_fail(p, r->pos, PD_EINVAL, "a 32-bit integer runs past its size");
		x = (uint32_t)x;
	}
	r->pos += i;
	*u = x;
	return 0;
}

int jfr_read_field(struct jfr_parser *p, struct rd *r, const struct field *f, int depth,
                   uint64_t *u, struct jfr_str *s)
{
	if (!f->array && f->fast) { /* a pool id, an int or a long: a compressed integer */
		if (++p->work > p->lim.max_work)
			return jfr_too_big(p, r->pos, "work");
		if (r->end - r->pos >= 10) { /* no bound checks needed on the way */
			uint64_t x;
			return fast_int(p, r, f->fast, u ? u : &x);
		}
	}
	if (!f->array)
		return jfr_read_one(p, r, f->cls, f->cp, depth, u, s, f);
	uint32_t n = 0;
	if (jfr_count(p, r, "array element", &n))
		return p->rc;
	for (uint32_t i = 0; i < n; i++)
		if (jfr_read_one(p, r, f->cls, f->cp, depth, NULL, NULL, f))
			return p->rc;
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
			return jfr_fail(p, r->pos, PD_EINVAL,
			                "a 32-bit integer runs past its size");
		r->pos += n;
		return 0;
	}
#endif
	uint64_t u;
	return fast_int(p, r, fast, &u);
}

/* ---- stack frames ----------------------------------------------------------- */

static int fk_grow(struct jfr_parser *p, size_t at)
{
	size_t nc = p->fk_cap ? p->fk_cap * 2 : 1024;
	size_t add = (nc - p->fk_cap) * sizeof(*p->fk_tab);
	if (nc > UINT32_MAX || p->mem + add > p->lim.max_memory)
		return jfr_too_big(p, at, "memory");
	uint32_t *t = calloc(nc, sizeof(*t));
	if (!t)
		return jfr_fail(p, at, PD_ENOMEM, "out of memory");
	p->mem += add;
	for (size_t k = 0; k < p->nfkeys; k++) {
		const struct jfr_frame *f = &p->fkeys[k];
		size_t i = jfr_frame_slot(f->method, f->line, nc);
		while (t[i])
			i = (i + 1) & (nc - 1);
		t[i] = (uint32_t)k + 1;
	}
	free(p->fk_tab);
	p->fk_tab = t;
	p->fk_cap = nc;
	return 0;
}

/* The frame key of (method, line): its index among the chunk's distinct frames,
 * added when new. */
static inline int frame_key(struct jfr_parser *p, uint64_t method, uint32_t line, size_t at,
                            uint32_t *key)
{
	if ((p->nfkeys + 1) * 2 > p->fk_cap && fk_grow(p, at))
		return p->rc;
	size_t mask = p->fk_cap - 1;
	for (size_t i = jfr_frame_slot(method, line, p->fk_cap);; i = (i + 1) & mask) {
		uint32_t v = p->fk_tab[i];
		if (!v) {
			if (jfr_grow(p, (void **)&p->fkeys, &p->cap_fkeys, p->nfkeys,
			             sizeof(*p->fkeys), at))
				return p->rc;
			p->fkeys[p->nfkeys] = (struct jfr_frame){.method = method, .line = line};
			p->fk_tab[i] = (uint32_t)++p->nfkeys;
			*key = v = (uint32_t)p->nfkeys - 1;
			return 0;
		}
		const struct jfr_frame *f = &p->fkeys[v - 1];
		if (f->method == method && f->line == line) {
			*key = v - 1;
			return 0;
		}
	}
}

/* The frames of a stack whose frame fields are all compressed integers
 * (p->frame_nf of them), counted as jfr_read_field counts them, as frame keys.
 * Where the event has room for a frame's longest encoding its fields are read
 * without bound checks; near the end, by the checked reads. */
static int read_frames_fast(struct jfr_parser *p, struct rd *r, uint32_t n, uint32_t *keys)
{
	uint32_t nf = p->frame_nf;
	if (jfr_work(p, r, (uint64_t)n * (nf + 1)))
		return p->rc;
	const uint8_t *fast = p->frame_fast, *role = p->frame_role;
	uint32_t i = 0;
	/* the JDK's and async-profiler's frame: method (a pool id), lineNumber and
	 * bytecodeIndex (ints), type (a pool id), read in one step while the stack
	 * has room for the longest frame */
	if (nf == 4 && role[0] == R_FRAME_METHOD && role[1] == R_FRAME_LINE && !role[2] &&
	    !role[3] && fast[0] == 1 && fast[1] == 2 && fast[2] == 2 && fast[3] == 1) {
		for (; i < n && r->end - r->pos >= 40; i++) {
			const uint8_t *b = r->b + r->pos;
			uint64_t method, line;
			size_t k = jfr_uvar(b, &method), l = jfr_uvar(b + k, &line);
			if (l > 5)
				return jfr_fail(p, r->pos + k, PD_EINVAL,
				                "a 32-bit integer runs past its size");
			k += l;
			l = jfr_ulen(b + k); /* bytecodeIndex: stepped over */
			if (l > 5)
				return jfr_fail(p, r->pos + k, PD_EINVAL,
				                "a 32-bit integer runs past its size");
			k += l;
			k += jfr_ulen(b + k); /* type: stepped over */
			size_t at = r->pos;
			r->pos += k;
			if (frame_key(p, method, (uint32_t)line, at, &keys[i]))
				return p->rc;
		}
	}
	for (; i < n; i++) {
		uint64_t method = 0;
		uint32_t line = 0;
		size_t at = r->pos;
		if (r->end - r->pos >= 10 * (size_t)nf) {
			const uint8_t *b = r->b + r->pos;
			size_t k = 0;
			for (uint32_t j = 0; j < nf; j++) {
				uint64_t u;
				size_t l = jfr_uvar(b + k, &u);
				if (fast[j] == 2 && l > 5)
					return jfr_fail(p, r->pos + k, PD_EINVAL,
					                "a 32-bit integer runs past its size");
				if (fast[j] == 2)
					u = (uint32_t)u;
				k += l;
				if (role[j] == R_FRAME_METHOD)
					method = u;
				else if (role[j] == R_FRAME_LINE)
					line = (uint32_t)u;
			}
			r->pos += k;
		} else {
			for (uint32_t j = 0; j < nf; j++) {
				uint64_t u = 0;
				if (fast_int(p, r, fast[j], &u))
					return p->rc;
				if (role[j] == R_FRAME_METHOD)
					method = u;
				else if (role[j] == R_FRAME_LINE)
					line = (uint32_t)u;
			}
		}
		if (frame_key(p, method, line, at, &keys[i]))
			return p->rc;
	}
	return 0;
}

/* The fields of a flat class c (each with an op) into v[0 .. c->nf), counted
 * as jfr_read_field counts them; floats, doubles and integers of no role are
 * stepped over (0). */
int jfr_read_flat(struct jfr_parser *p, struct rd *r, const struct cls *c, uint64_t *v)
{
	if (jfr_work(p, r, c->nf))
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
			if (jfr_need(p, r, 1))
				return p->rc;
			v[i] = r->b[r->pos++];
			break;
		case OP_SHORT:
			if (jfr_varint(p, r, 16, &v32))
				return p->rc;
			v[i] = v32;
			break;
		case OP_FLOAT:
		case OP_DOUBLE: {
			size_t n = f[i].op == OP_FLOAT ? 4 : 8;
			if (jfr_need(p, r, n))
				return p->rc;
			r->pos += n;
			break;
		}
		default:
			return jfr_fail(p, r->pos, PD_EINVAL, "field %.*s cannot be read flat",
			                (int)f[i].name_len, f[i].name);
		}
	}
	return 0;
}

int jfr_read_frames(struct jfr_parser *p, struct rd *r, const struct field *f, struct jfr_stack *st)
{
	uint32_t n = 0;
	size_t at = r->pos;
	if (jfr_count(p, r, "stack frame", &n))
		return p->rc;
	uint32_t *keys = jfr_arena_alloc(p, (size_t)n * sizeof(*keys), at);
	if (!keys)
		return p->rc;
	st->frames = keys;
	st->n = n;
	const struct cls *c = &p->cls[f->cls];
	if (p->frame_nf && p->frame_nf == c->nf && f->cls == p->stack_frame_cls)
		return read_frames_fast(p, r, n, keys);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t method = 0;
		uint32_t line = 0;
		size_t fat = r->pos;
		if (jfr_work(p, r, 1))
			return p->rc;
		for (uint32_t j = 0; j < c->nf; j++) {
			const struct field *ff = &p->fields[c->first + j];
			uint64_t u = 0;
			if (jfr_read_field(p, r, ff, 2, &u, NULL))
				return p->rc;
			if (ff->role == R_FRAME_METHOD)
				method = u;
			else if (ff->role == R_FRAME_LINE)
				line = (uint32_t)u;
		}
		if (frame_key(p, method, line, fat, &keys[i]))
			return p->rc;
	}
	return 0;
}
