/* build.c: turns raw stacks into profile.proto. Each code address is looked up in
 * the process's mappings and ELF symbols; locations are deduplicated by address,
 * functions by name, strings interned; the main executable's mappings come first,
 * as pprof expects. Return addresses are symbolized at pc - 1 (the call
 * instruction), so a call at the very end of a function names the caller. The
 * result is gzip-compressed with pd_gzip, as Go's net/http/pprof serves it. */
#include <stdlib.h>
#include <string.h>

#include "selfprof_int.h"

#define MAX_PROFILE_BYTES ((size_t)256 << 20)

struct strtab {
	const char **s;
	size_t n, cap;
	uint32_t *slots; /* index + 1, 0: empty */
	size_t nslots;
};

struct func {
	int64_t name;
};

struct loc {
	uint64_t addr;
	uint64_t mapping; /* pprof id, 0: none */
	uint64_t func;    /* pprof id, 0: unsymbolized */
};

struct builder {
	const struct sp_maps *ms;
	struct strtab st;
	struct func *funcs;
	size_t nfuncs, cfuncs;
	struct pd_u64map func_by_name; /* string index -> func index */
	struct loc *locs;
	size_t nlocs, clocs;
	struct pd_u64map loc_by_addr;
	uint64_t *map_id;  /* ms index -> pprof mapping id */
	size_t *map_order; /* pprof id - 1 -> ms index */
	int *map_unsymbolized;
	int rc;
};

static int64_t intern(struct builder *b, const char *s)
{
	struct strtab *t = &b->st;
	if (b->rc)
		return 0;
	if (t->n * 2 >= t->nslots) {
		size_t ns = t->nslots ? t->nslots * 2 : 1024;
		uint32_t *slots = calloc(ns, sizeof(*slots));
		if (!slots) {
			b->rc = PD_ENOMEM;
			return 0;
		}
		for (size_t i = 0; i < t->n; i++) {
			size_t h = pd_hash_bytes(t->s[i], strlen(t->s[i]), 0) & (ns - 1);
			while (slots[h])
				h = (h + 1) & (ns - 1);
			slots[h] = (uint32_t)i + 1;
		}
		free(t->slots);
		t->slots = slots;
		t->nslots = ns;
	}
	size_t h = pd_hash_bytes(s, strlen(s), 0) & (t->nslots - 1);
	while (t->slots[h]) {
		if (strcmp(t->s[t->slots[h] - 1], s) == 0)
			return t->slots[h] - 1;
		h = (h + 1) & (t->nslots - 1);
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 512;
		const char **n = realloc(t->s, nc * sizeof(*n));
		if (!n) {
			b->rc = PD_ENOMEM;
			return 0;
		}
		t->s = n;
		t->cap = nc;
	}
	t->s[t->n] = s;
	t->slots[h] = (uint32_t)t->n + 1;
	return (int64_t)t->n++;
}

static uint64_t function_id(struct builder *b, const char *name)
{
	int64_t ni = intern(b, name);
	uint32_t idx;
	if (b->rc)
		return 0;
	if (pd_u64map_get(&b->func_by_name, (uint64_t)ni, &idx))
		return idx + 1;
	if (b->nfuncs == b->cfuncs) {
		size_t nc = b->cfuncs ? b->cfuncs * 2 : 256;
		struct func *n = realloc(b->funcs, nc * sizeof(*n));
		if (!n) {
			b->rc = PD_ENOMEM;
			return 0;
		}
		b->funcs = n;
		b->cfuncs = nc;
	}
	b->funcs[b->nfuncs].name = ni;
	if (pd_u64map_put(&b->func_by_name, (uint64_t)ni, (uint32_t)b->nfuncs)) {
		b->rc = PD_ENOMEM;
		return 0;
	}
	return ++b->nfuncs;
}

static uint64_t add_loc(struct builder *b, uint64_t addr, uint64_t mapping, uint64_t func)
{
	if (b->nlocs == b->clocs) {
		size_t nc = b->clocs ? b->clocs * 2 : 1024;
		struct loc *n = realloc(b->locs, nc * sizeof(*n));
		if (!n) {
			b->rc = PD_ENOMEM;
			return 0;
		}
		b->locs = n;
		b->clocs = nc;
	}
	b->locs[b->nlocs] = (struct loc){addr, mapping, func};
	return ++b->nlocs;
}

/* The location id of a code address; exact: pc is where the thread stood, else a
 * return address. */
static uint64_t location_id(struct builder *b, uintptr_t pc, int exact)
{
	uint64_t addr = exact || pc == 0 ? pc : pc - 1;
	uint32_t idx;
	if (b->rc)
		return 0;
	if (addr && pd_u64map_get(&b->loc_by_addr, addr, &idx))
		return idx + 1;
	const struct sp_map *m = sp_maps_find(b->ms, (uintptr_t)addr);
	uint64_t mid = 0, fid = 0;
	if (m) {
		size_t mi = (size_t)(m - b->ms->m);
		mid = b->map_id[mi];
		const char *name = sp_maps_symbol(m, (uintptr_t)addr);
		if (name)
			fid = function_id(b, name);
		else
			b->map_unsymbolized[mi] = 1;
	}
	uint64_t id = add_loc(b, addr, mid, fid);
	if (id && addr && pd_u64map_put(&b->loc_by_addr, addr, (uint32_t)(id - 1)))
		b->rc = PD_ENOMEM;
	return id;
}

/* A location of a made-up function (lost samples); not deduplicated by address. */
static uint64_t named_location_id(struct builder *b, const char *name)
{
	uint64_t fid = function_id(b, name);
	for (size_t i = 0; i < b->nlocs; i++)
		if (b->locs[i].addr == 0 && b->locs[i].func == fid)
			return i + 1;
	return b->rc ? 0 : add_loc(b, 0, 0, fid);
}

static void value_type(struct builder *b, struct sp_wire *w, unsigned field,
                       const struct sp_value_type *vt)
{
	struct sp_wire t = {0};
	pd_buf_init(&t.b, 0);
	sp_wire_int(&t, 1, intern(b, vt->type));
	sp_wire_int(&t, 2, intern(b, vt->unit));
	if (t.berr)
		w->berr = t.berr;
	else
		sp_wire_bytes(w, field, t.b.data, t.b.len);
	pd_buf_fini(&t.b);
}

static void write_sample(struct builder *b, struct sp_wire *w, const struct sp_profile_desc *d,
                         const struct sp_sample *s, uint64_t *ids, struct sp_wire *t)
{
	size_t n = 0;
	if (s->depth == 0) {
		if (s->name)
			ids[n++] = named_location_id(b, s->name);
	} else {
		for (size_t i = 0; i < s->depth; i++)
			ids[n++] = location_id(b, s->pcs[i], d->leaf_exact && i == 0);
	}
	t->b.len = 0;
	sp_wire_packed_u64(t, 1, ids, n);
	sp_wire_packed_i64(t, 2, s->values, d->ntypes);
	if (t->berr)
		w->berr = t->berr;
	else
		sp_wire_bytes(w, 2, t->b.data, t->b.len);
}

static void write_tables(struct builder *b, struct sp_wire *w, struct sp_wire *t)
{
	for (size_t k = 0; k < b->ms->n; k++) {
		size_t i = b->map_order[k];
		const struct sp_map *m = &b->ms->m[i];
		t->b.len = 0;
		sp_wire_uint(t, 1, k + 1);
		sp_wire_uint(t, 2, m->start);
		sp_wire_uint(t, 3, m->limit);
		sp_wire_uint(t, 4, m->offset);
		sp_wire_int(t, 5, intern(b, m->path));
		sp_wire_int(t, 6, m->elf && m->elf->build_id[0] ? intern(b, m->elf->build_id) : 0);
		sp_wire_uint(t, 7, m->elf && !b->map_unsymbolized[i]);
		if (!t->berr)
			sp_wire_bytes(w, 3, t->b.data, t->b.len);
	}
	for (size_t i = 0; i < b->nlocs; i++) {
		const struct loc *l = &b->locs[i];
		t->b.len = 0;
		sp_wire_uint(t, 1, i + 1);
		sp_wire_uint(t, 2, l->mapping);
		sp_wire_uint(t, 3, l->addr);
		if (l->func) {
			struct sp_wire lw = {0};
			pd_buf_init(&lw.b, 0);
			sp_wire_uint(&lw, 1, l->func);
			if (!lw.berr)
				sp_wire_bytes(t, 4, lw.b.data, lw.b.len);
			pd_buf_fini(&lw.b);
		}
		if (!t->berr)
			sp_wire_bytes(w, 4, t->b.data, t->b.len);
	}
	for (size_t i = 0; i < b->nfuncs; i++) {
		t->b.len = 0;
		sp_wire_uint(t, 1, i + 1);
		sp_wire_int(t, 2, b->funcs[i].name);
		sp_wire_int(t, 3, b->funcs[i].name); /* system_name: C names are not mangled */
		if (!t->berr)
			sp_wire_bytes(w, 5, t->b.data, t->b.len);
	}
	if (t->berr)
		w->berr = t->berr;
}

/* The main executable's mappings first, then the rest by address. */
static int order_mappings(struct builder *b)
{
	size_t n = b->ms->n, k = 0;
	b->map_id = calloc(n + 1, sizeof(*b->map_id));
	b->map_order = calloc(n + 1, sizeof(*b->map_order));
	b->map_unsymbolized = calloc(n + 1, sizeof(*b->map_unsymbolized));
	if (!b->map_id || !b->map_order || !b->map_unsymbolized)
		return PD_ENOMEM;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			if (b->ms->m[i].is_exe == (pass == 0)) {
				b->map_order[k] = i;
				b->map_id[i] = ++k;
			}
	return 0;
}

int sp_build_profile(const struct sp_profile_desc *d, const struct sp_sample *s, size_t n,
                     const struct sp_maps *ms, uint8_t **out, size_t *out_len, struct pd_err *err)
{
	struct builder b = {0};
	struct sp_wire w = {0}, t = {0};
	uint64_t *ids = NULL;
	size_t maxdepth = 1;
	b.ms = ms;
	pd_u64map_init(&b.func_by_name);
	pd_u64map_init(&b.loc_by_addr);
	pd_buf_init(&w.b, MAX_PROFILE_BYTES);
	pd_buf_init(&t.b, MAX_PROFILE_BYTES);
	*out = NULL;
	*out_len = 0;
	intern(&b, ""); /* string_table[0] */
	int rc = order_mappings(&b);
	for (size_t i = 0; i < n; i++)
		if (s[i].depth > maxdepth)
			maxdepth = s[i].depth;
	if (!rc && !(ids = malloc(maxdepth * sizeof(*ids))))
		rc = PD_ENOMEM;
	if (rc)
		goto fail;
	for (size_t i = 0; i < d->ntypes; i++)
		value_type(&b, &w, 1, &d->types[i]);
	for (size_t i = 0; i < n; i++)
		write_sample(&b, &w, d, &s[i], ids, &t);
	write_tables(&b, &w, &t);
	sp_wire_int(&w, 9, d->time_nanos);
	sp_wire_int(&w, 10, d->duration_nanos);
	value_type(&b, &w, 11, &d->period_type);
	sp_wire_int(&w, 12, d->period);
	if (d->comment) {
		int64_t c = intern(&b, d->comment);
		sp_wire_varint(&w, 13 << 3);
		sp_wire_varint(&w, (uint64_t)c);
	}
	if (d->default_sample_type)
		sp_wire_int(&w, 14, intern(&b, d->default_sample_type));
	/* the strings last: everything above has interned its own */
	for (size_t i = 0; i < b.st.n; i++)
		sp_wire_bytes(&w, 6, b.st.s[i], strlen(b.st.s[i]));
	rc = b.rc ? b.rc : w.berr;
	if (rc) {
		pd_err_set(err, rc, "encoding the profile: %s", pd_strerror(rc));
		goto fail;
	}
	rc = pd_gzip(w.b.data, w.b.len, 6, out, out_len, err);
fail:
	if (rc && err && !err->msg[0])
		pd_err_set(err, rc, "encoding the profile: %s", pd_strerror(rc));
	free(ids);
	free(b.st.s);
	free(b.st.slots);
	free(b.funcs);
	free(b.locs);
	free(b.map_id);
	free(b.map_order);
	free(b.map_unsymbolized);
	pd_u64map_fini(&b.func_by_name);
	pd_u64map_fini(&b.loc_by_addr);
	pd_buf_fini(&w.b);
	pd_buf_fini(&t.b);
	return rc;
}
