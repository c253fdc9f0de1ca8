/* jfr_pool.c: the JFR reader's constant pools: a chunk's checkpoint events,
 * followed backwards from the one the header names, whose entries are kept by id
 * for the pools the converter uses (symbols, classes, methods, stack traces,
 * thread states and strings) and stepped over for the others; and the lookups in
 * them that the converter's callbacks make. */
#include <stdlib.h>
#include <string.h>

#include "jfr_parse_int.h"

/* The slot of id in pl's table of ids: its entry's, or the empty one where it
 * goes. */
static inline struct pool_slot *ids_find(const struct pool *pl, uint64_t id)
{
	uint64_t h = (id ^ (id >> 31)) * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	size_t mask = pl->ids_cap - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		struct pool_slot *s = &pl->ids[i];
		if (!s->idx || s->id == id)
			return s;
	}
}

static int ids_grow(struct jfr_parser *p, struct pool *pl, size_t at)
{
	size_t nc = pl->ids_cap ? pl->ids_cap * 2 : 256;
	struct pool_slot *t = calloc(nc, sizeof(*t)), *old = pl->ids;
	if (!t)
		return jfr_fail(p, at, PD_ENOMEM, "out of memory");
	size_t oc = pl->ids_cap;
	pl->ids = t;
	pl->ids_cap = nc;
	for (size_t i = 0; i < oc; i++)
		if (old[i].idx)
			*ids_find(pl, old[i].id) = old[i];
	free(old);
	return 0;
}

/* Room in pl for n more entries, when the memory allows it (else they are
 * taken as they come, as jfr_grow takes them): the count a checkpoint
 * declares for the pool. */
static void pool_reserve(struct jfr_parser *p, struct pool *pl, size_t n)
{
	size_t want = pl->n + n, nc = pl->cap ? pl->cap : 64;
	if (want <= pl->cap)
		return;
	while (nc < want)
		nc *= 2;
	size_t add = (nc - pl->cap) * pl->size;
	if (p->mem + add > p->lim.max_memory)
		return;
	void *q = realloc(pl->v, nc * pl->size);
	if (!q)
		return;
	p->mem += add;
	pl->v = q;
	pl->cap = nc;
}

static void *pool_slot(struct jfr_parser *p, int k, uint64_t id, size_t at)
{
	struct pool *pl = &p->pools[k];
	if (pl->n >= pl->cap && jfr_grow(p, &pl->v, &pl->cap, pl->n, pl->size, at))
		return NULL;
	if (id >= pl->ndense && id < DENSE_FACTOR * (pl->n + DENSE_MIN)) {
		size_t nd = pl->ndense ? pl->ndense : DENSE_MIN;
		while (nd <= id)
			nd *= 2;
		size_t add = (nd - pl->ndense) * sizeof(*pl->dense);
		if (p->mem + add > p->lim.max_memory) {
			jfr_too_big(p, at, "memory");
			return NULL;
		}
		uint32_t *d = realloc(pl->dense, nd * sizeof(*d));
		if (!d) {
			jfr_fail(p, at, PD_ENOMEM, "out of memory");
			return NULL;
		}
		memset(d + pl->ndense, 0, add);
		p->mem += add;
		pl->dense = d;
		pl->ndense = nd;
	}
	if (id < pl->ndense) {
		pl->dense[id] = (uint32_t)pl->n + 1;
	} else if (id != UINT64_MAX) {
		if ((pl->ids_len + 1) * 2 > pl->ids_cap && ids_grow(p, pl, at))
			return NULL;
		struct pool_slot *sl = ids_find(pl, id);
		if (!sl->idx)
			pl->ids_len++;
		*sl = (struct pool_slot){.id = id, .idx = (uint32_t)pl->n + 1};
	}
	void *s = (char *)pl->v + pl->n * pl->size;
	/* the sizes of jfr_parse's pools, each zeroed without a call */
	switch (pl->size) {
	case 8:
		memset(s, 0, 8);
		break;
	case 16:
		memset(s, 0, 16);
		break;
	case 24:
		memset(s, 0, 24);
		break;
	default:
		memset(s, 0, pl->size);
	}
	pl->n++;
	return s;
}

/* One entry (id and value) of a pool of class ci, kept when it is pool k. */
static int read_entry(struct jfr_parser *p, struct rd *r, int ci, int k)
{
	size_t at = r->pos;
	uint64_t id = 0;
	const struct cls *c = &p->cls[ci];
	if (jfr_work(p, r, 1) || jfr_varlong(p, r, &id))
		return p->rc;
	if (k == POOL_STRING || (k < 0 && c->prim != P_STRUCT)) {
		struct jfr_str s;
		if (jfr_read_one(p, r, ci, 0, 1, NULL, &s, NULL))
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
		return jfr_fail(p, at, PD_EINVAL, "pool %.*s has an unexpected type",
		                (int)c->name_len, c->name);
	void *slot = NULL;
	if (k >= 0 && !(slot = pool_slot(p, k, id, at)))
		return p->rc;
	if (c->flat) {
		uint64_t v[FLAT_MAX];
		if (jfr_read_flat(p, r, c, v))
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
			if (jfr_read_frames(p, r, f, slot))
				return p->rc;
			continue;
		}
		if (jfr_read_field(p, r, f, 1, &u, &s))
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

int jfr_read_pools(struct jfr_parser *p, size_t chunk, size_t chunk_end, size_t off)
{
	size_t pos = chunk + off, limit = chunk_end;
	for (;;) {
		struct rd r = {.b = p->buf, .pos = pos, .end = limit};
		uint64_t size = 0, type = 0, skip = 0, delta = 0;
		uint8_t kind = 0;
		uint32_t npools = 0;
		if (jfr_varlong(p, &r, &size))
			return p->rc;
		if (size == 0 || size > limit - pos)
			return jfr_fail(p, pos, PD_EINVAL,
			                "a checkpoint of %llu bytes does not fit before byte %zu",
			                (unsigned long long)size, limit);
		r.end = pos + size;
		if (jfr_varlong(p, &r, &type) || jfr_varlong(p, &r, &skip) ||
		    jfr_varlong(p, &r, &skip) || jfr_varlong(p, &r, &delta) ||
		    jfr_u8(p, &r, &kind) || jfr_varint(p, &r, 32, &npools))
			return p->rc;
		if (type != 1)
			return jfr_fail(p, pos, PD_EINVAL,
			                "the constant pool offset points at an event "
			                "of type %llu",
			                (unsigned long long)type);
		for (uint32_t i = 0; i < npools; i++) {
			size_t at = r.pos;
			uint64_t tid = 0;
			uint32_t n = 0;
			if (jfr_work(p, &r, 1) || jfr_varlong(p, &r, &tid))
				return p->rc;
			int ci = jfr_class_by_id(p, tid);
			if (ci < 0)
				return jfr_fail(p, at, PD_EINVAL,
				                "a constant pool has type %llu, which the "
				                "metadata does not declare",
				                (unsigned long long)tid);
			int k = -1;
			for (int j = 0; j < NPOOL; j++)
				if (p->pool_cls[j] == ci)
					k = j;
			if (jfr_count(p, &r, "constant", &n))
				return p->rc;
			if (k >= 0)
				pool_reserve(p, &p->pools[k], n);
			for (uint32_t j = 0; j < n; j++)
				if (read_entry(p, &r, ci, k))
					return p->rc;
		}
		int64_t d = (int64_t)delta;
		uint64_t back = 0 - delta; /* the distance back, for a negative delta */
		if (d == 0)
			return 0;
		if (d > 0 || back > pos - chunk - HEADER_SIZE)
			return jfr_fail(
			    p, pos, PD_EINVAL,
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
	if (id < pl->ndense && pl->dense[id]) {
		v = pl->dense[id];
	} else {
		if (!pl->ids_cap || id == UINT64_MAX)
			return NULL;
		v = ids_find(pl, id)->idx;
		if (!v)
			return NULL;
	}
	return (const char *)pl->v + (size_t)(v - 1) * pl->size;
}

const struct jfr_stack *jfr_stack(const struct jfr_parser *p, uint64_t id)
{
	return lookup(p, POOL_STACK, id);
}

size_t jfr_stack_count(const struct jfr_parser *p)
{
	return p->pools[POOL_STACK].n;
}

long jfr_stack_index(const struct jfr_parser *p, uint64_t id)
{
	const struct pool *pl = &p->pools[POOL_STACK];
	const struct jfr_stack *st = lookup(p, POOL_STACK, id);
	return st ? (long)(st - (const struct jfr_stack *)pl->v) : -1;
}

const struct jfr_frame *jfr_frames(const struct jfr_parser *p, size_t *n)
{
	*n = p->nfkeys;
	return p->fkeys;
}

size_t jfr_method_count(const struct jfr_parser *p)
{
	return p->pools[POOL_METHOD].n;
}

long jfr_method_index(const struct jfr_parser *p, uint64_t id)
{
	const struct pool *pl = &p->pools[POOL_METHOD];
	const struct method *m = lookup(p, POOL_METHOD, id);
	return m ? (long)(m - (const struct method *)pl->v) : -1;
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
