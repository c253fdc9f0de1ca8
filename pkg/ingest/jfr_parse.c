/* jfr_parse.c: a reader of JFR recordings (JDK Flight Recorder, as the JDK and
 * async-profiler write them), hand-written because no C library reads the format
 * and the one reference implementation is Java's. It reads only what the
 * converter needs, generically from each chunk's metadata, so that unknown event
 * types, pool types and fields are skipped by their declared types. This file
 * reads the chunks: each chunk's header, then its metadata (jfr_meta.c) and
 * constant pools (jfr_pool.c), found by offset, then its events, whose fields of
 * interest it hands to the converter's callbacks. The values are decoded by
 * jfr_value.c; jfr_parse_int.h holds what the four files share.
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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "jfr_parse_int.h"

/* ---- events and chunks -------------------------------------------------------- */

/* Where an event's integer of each role goes. */
static const uint16_t role_off[R_SIZE + 1] = {
    [R_STACK_TRACE] = offsetof(struct jfr_event, stack_trace),
    [R_STATE] = offsetof(struct jfr_event, state),
    [R_CONTEXT_ID] = offsetof(struct jfr_event, context_id),
    [R_SPAN_ID] = offsetof(struct jfr_event, span_id),
    [R_SPAN_NAME] = offsetof(struct jfr_event, span_name),
    [R_SAMPLES] = offsetof(struct jfr_event, samples),
    [R_TLAB_SIZE] = offsetof(struct jfr_event, tlab_size),
    [R_ALLOCATION_SIZE] = offsetof(struct jfr_event, allocation_size),
    [R_WEIGHT] = offsetof(struct jfr_event, weight),
    [R_DURATION] = offsetof(struct jfr_event, duration),
    [R_SIZE] = offsetof(struct jfr_event, size),
};

static int read_event(struct jfr_parser *p, struct rd *r, int e, struct jfr_event *ev)
{
	const struct cls *c = &p->cls[p->ev_cls[e]];
	memset(ev, 0, sizeof(*ev));
	ev->type = e;
	ev->name.s = ev->value.s = "";
	/* an event of compressed integers, the recording holding room for their
	 * longest encodings: read in one loop without bound checks, then checked
	 * to lie within the event; one that does not, or that holds an int of more
	 * than 5 bytes, is read again by jfr_read_flat, which tells what is wrong */
	if (c->ints && p->len - r->pos >= 10 * (size_t)c->nf &&
	    p->work + c->nf <= p->lim.max_work) {
		const struct field *f = &p->fields[c->first];
		const uint8_t *b = r->b + r->pos;
		size_t k = 0;
		int bad = 0;
		for (uint32_t i = 0; i < c->nf; i++) {
			size_t l;
			uint64_t u;
			if (f[i].role && f[i].role <= R_SIZE) {
				l = jfr_uvar(b + k, &u);
				if (f[i].op == OP_INT)
					u = (uint32_t)u;
				*(uint64_t *)(void *)((char *)ev + role_off[f[i].role]) = u;
			} else {
				l = jfr_ulen(b + k);
			}
			bad |= l > 5 && f[i].op == OP_INT;
			k += l;
		}
		if (!bad && k <= r->end - r->pos) {
			r->pos += k;
			p->work += c->nf;
			return 0;
		}
		memset(ev, 0, sizeof(*ev));
		ev->type = e;
		ev->name.s = ev->value.s = "";
	}
	uint64_t v[FLAT_MAX];
	if (c->flat && jfr_read_flat(p, r, c, v))
		return p->rc;
	for (uint32_t i = 0; i < c->nf; i++) {
		const struct field *f = &p->fields[c->first + i];
		uint64_t u = 0;
		struct jfr_str s = {.s = ""};
		if (c->flat) {
			if (!f->role)
				continue;
			u = v[i];
		} else if (jfr_read_field(p, r, f, 1, &u, &s)) {
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
	/* the frame table: emptied at the cost of what the chunk put in it, or
	 * dropped when far larger than that (a large chunk before small ones) */
	if (p->fk_cap > 4 * p->nfkeys + 1024) {
		free(p->fk_tab);
		p->fk_tab = NULL;
		p->mem -= p->fk_cap * sizeof(*p->fk_tab);
		p->fk_cap = 0;
	} else if (p->fk_cap) {
		memset(p->fk_tab, 0, p->fk_cap * sizeof(*p->fk_tab));
	}
	p->nfkeys = 0;
	for (int k = 0; k < NPOOL; k++) {
		struct pool *pl = &p->pools[k];
		/* emptied as the frame table is */
		if (pl->ids_cap > 4 * pl->ids_len + 1024) {
			free(pl->ids);
			pl->ids = NULL;
			pl->ids_cap = 0;
		} else if (pl->ids_cap) {
			memset(pl->ids, 0, pl->ids_cap * sizeof(*pl->ids));
		}
		pl->ids_len = 0;
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
		return jfr_fail(p, chunk, PD_EINVAL, "a chunk header needs %d bytes, %zu are left",
		                HEADER_SIZE, left);
	if (memcmp(h, "FLR\0", 4) != 0)
		return jfr_fail(p, chunk, PD_EINVAL,
		                "a chunk does not start with the magic FLR\\0");
	uint16_t major = (uint16_t)(h[4] << 8 | h[5]);
	uint64_t f[4];
	for (int i = 0; i < 4; i++) {
		f[i] = 0;
		for (int j = 0; j < 8; j++)
			f[i] = f[i] << 8 | h[8 + 8 * i + j];
	}
	uint64_t size = f[0], cp = f[1], meta = f[2];
	if (major != 2)
		return jfr_fail(p, chunk, PD_EINVAL, "chunk format version %u.%u is not 2.x", major,
		                (unsigned)(h[6] << 8 | h[7]));
	if (size < HEADER_SIZE || size > left)
		return jfr_fail(p, chunk, PD_EINVAL,
		                "the chunk declares %llu bytes, but %zu are left in the recording",
		                (unsigned long long)size, left);
	if (cp < HEADER_SIZE || cp >= size || meta < HEADER_SIZE || meta >= size)
		return jfr_fail(p, chunk, PD_EINVAL,
		                "the chunk's constant pool (%llu) or metadata (%llu) offset lies "
		                "outside its %llu bytes",
		                (unsigned long long)cp, (unsigned long long)meta,
		                (unsigned long long)size);
	chunk_reset(p);
	size_t room = p->lim.max_memory > p->mem ? p->lim.max_memory - p->mem : 0;
	if (!(p->arena = pd_arena_create(room)))
		return jfr_fail(p, chunk, PD_ENOMEM, "out of memory");
	size_t end = chunk + (size_t)size;
	if (jfr_read_metadata(p, chunk, end, (size_t)meta) ||
	    jfr_read_pools(p, chunk, end, (size_t)cp))
		return p->rc;
	uint64_t ids[JFR_EV_COUNT];
	for (int e = 0; e < JFR_EV_COUNT; e++)
		ids[e] = p->ev_cls[e] >= 0 ? p->cls[p->ev_cls[e]].id : UINT64_MAX;
	struct jfr_event ev;
	for (size_t pos = chunk + HEADER_SIZE; pos < end;) {
		struct rd r = {.b = p->buf, .pos = pos, .end = end};
		uint64_t esize = 0, type = 0;
		if (jfr_varlong(p, &r, &esize) || jfr_varlong(p, &r, &type))
			return p->rc;
		if (esize < r.pos - pos || esize > end - pos)
			return jfr_fail(p, pos, PD_EINVAL,
			                "an event of %llu bytes does not fit its chunk",
			                (unsigned long long)esize);
		r.end = pos + (size_t)esize;
		if (jfr_work(p, &r, 1))
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
	for (int k = 0; k < NPOOL; k++)
		p.pools[k].size = sizes[k];
	if (len == 0)
		jfr_fail(&p, 0, PD_EINVAL, "the recording is empty");
	for (size_t pos = 0; !p.rc && pos < len;)
		read_chunk(&p, pos, cb, ctx, &pos);
	chunk_reset(&p);
	pd_u64map_fini(&p.cls_ids);
	for (int k = 0; k < NPOOL; k++) {
		free(p.pools[k].ids);
		free(p.pools[k].v);
		free(p.pools[k].dense);
	}
	free(p.cls);
	free(p.fields);
	free(p.fkeys);
	free(p.fk_tab);
	return p.rc;
}
