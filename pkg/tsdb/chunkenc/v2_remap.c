/* v2_remap.c: moving records of a columnar value chunk from one set of tables to
 * another without decoding them. An open chunk in the head encodes its records
 * against tables that all the head's series share; its sealed form carries only
 * its own symbols. Rather than decoding every profile and encoding it again, the
 * seal walks the records twice: once to collect the table entries they use (and
 * the entries those refer to: a stack's parents and locations, a location's
 * mapping and functions, their strings), then, with those entries copied into
 * tables of the chunk's own in the order the shared tables hold them, again to
 * write each record with its string, mapping, location, function and stack
 * references translated. Everything else (times, value columns, ids) is copied
 * as it is: delta-coded value columns refer to the previous record's values by
 * stack, which a one-to-one translation of stacks keeps, and so do the flags
 * that say what follows from the samples.
 *
 * Records are walked as docs/format/chunks.md ("Records") lays them out; the
 * walk checks every reference against the shared tables. */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

/* The entries of one shared table that the chunk uses: while collecting, the
 * map takes shared index + 1 to a position in list; once numbered, to the
 * entry's index in the chunk's own table (list ascending). */
struct idset {
	struct pd_u64map map;
	uint32_t *list;
	size_t n, cap;
};

struct remap {
	const struct v2_tables *t; /* shared */
	struct idset str, map, fn, loc, node;
	int oom;
};

static void idset_fini(struct idset *s)
{
	pd_u64map_fini(&s->map);
	free(s->list);
}

/* Adds shared index i; 1 when it was not there yet, 0 when it was, -1 when out of
 * memory. */
static int idset_add(struct idset *s, uint32_t i)
{
	uint32_t v;
	if (pd_u64map_get(&s->map, (uint64_t)i + 1, &v))
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint32_t *l = realloc(s->list, cap * sizeof(*l));
		if (!l)
			return -1;
		s->list = l;
		s->cap = cap;
	}
	if (pd_u64map_put(&s->map, (uint64_t)i + 1, (uint32_t)s->n))
		return -1;
	s->list[s->n++] = i;
	return 1;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Numbers the entries in the order of the shared table. */
static int idset_number(struct idset *s)
{
	if (s->n > 1)
		qsort(s->list, s->n, sizeof(*s->list), u32_cmp);
	for (size_t k = 0; k < s->n; k++)
		if (pd_u64map_put(&s->map, (uint64_t)s->list[k] + 1, (uint32_t)k))
			return -1;
	return 0;
}

/* The chunk's index of shared index i (collected before). */
static uint32_t idset_of(const struct idset *s, uint32_t i)
{
	uint32_t v = 0;
	pd_u64map_get(&s->map, (uint64_t)i + 1, &v);
	return v;
}

/* ---- collecting: an entry and what it refers to ----------------------------------- */

static void add_str(struct remap *m, uint32_t i)
{
	if (idset_add(&m->str, i) < 0)
		m->oom = 1;
}

static void add_map(struct remap *m, uint32_t i)
{
	int r = idset_add(&m->map, i);
	if (r < 0)
		m->oom = 1;
	if (r > 0) {
		add_str(m, m->t->map[i].filename);
		add_str(m, m->t->map[i].build_id);
	}
}

static void add_fn(struct remap *m, uint32_t i)
{
	int r = idset_add(&m->fn, i);
	if (r < 0)
		m->oom = 1;
	if (r > 0) {
		add_str(m, m->t->fn[i].name);
		add_str(m, m->t->fn[i].system_name);
		add_str(m, m->t->fn[i].filename);
	}
}

static void add_loc(struct remap *m, uint32_t i)
{
	int r = idset_add(&m->loc, i);
	if (r < 0)
		m->oom = 1;
	if (r > 0) {
		const struct v2_location *l = &m->t->loc[i];
		if (l->mapping)
			add_map(m, l->mapping - 1);
		for (uint32_t k = 0; k < l->nline; k++)
			add_fn(m, m->t->line[l->line + k].function);
	}
}

/* A stack: its node and the node's parents up to the first one already in. */
static void add_stack(struct remap *m, uint32_t nd)
{
	for (; nd; nd = m->t->node[nd - 1].parent) {
		int r = idset_add(&m->node, nd - 1);
		if (r < 0)
			m->oom = 1;
		if (r <= 0)
			return;
		add_loc(m, m->t->node[nd - 1].location);
	}
}

/* ---- the walk over one record --------------------------------------------------------- */

/* Reference v of table s: collected (out NULL), or written to out translated. */
static void put_ref(struct remap *m, struct idset *s, uint32_t v, struct pd_buf *out)
{
	if (!out) {
		if (s == &m->str)
			add_str(m, v);
		else if (s == &m->map)
			add_map(m, v);
		else if (s == &m->loc)
			add_loc(m, v);
		else
			add_fn(m, v);
	} else if (v2_put_uv(out, idset_of(s, v))) {
		m->oom = 1;
	}
}

/* One reference at r to an entry of table s, which has n entries. */
static void ref(struct remap *m, struct idset *s, size_t n, struct v2_rd *r, struct pd_buf *out)
{
	uint64_t v = v2_uv(r);
	if (r->bad)
		return;
	if (v >= n) {
		r->bad = 1;
		return;
	}
	put_ref(m, s, (uint32_t)v, out);
}

#define STR(r, out) ref(m, &m->str, m->t->nstr, (r), (out))

/* A varint at r copied to out (when not NULL) as it is; its value. */
static uint64_t copy_uv(struct remap *m, struct v2_rd *r, struct pd_buf *out)
{
	size_t at = r->pos;
	uint64_t v = v2_uv(r);
	if (out && !r->bad && pd_buf_append(out, r->p + at, r->pos - at))
		m->oom = 1;
	return v;
}

/* n varints at r copied to out (when not NULL) as they are. */
static void copy_uvs(struct remap *m, struct v2_rd *r, size_t n, struct pd_buf *out)
{
	size_t at = r->pos;
	for (size_t k = 0; k < n && !r->bad; k++)
		v2_uv(r);
	if (out && !r->bad && pd_buf_append(out, r->p + at, r->pos - at))
		m->oom = 1;
}

/* A count at r (each item at least min_bytes), copied. */
static size_t copy_count(struct remap *m, struct v2_rd *r, size_t min_bytes, struct pd_buf *out)
{
	size_t at = r->pos;
	size_t n = v2_count(r, min_bytes);
	if (out && !r->bad && pd_buf_append(out, r->p + at, r->pos - at))
		m->oom = 1;
	return n;
}

/* Distinct entries of a list, for the lists that a record leaves out but whose
 * ids it holds: a per-record set. */
struct seen {
	struct pd_u64map map;
};

static int seen_first(struct seen *s, uint32_t i, int *oom)
{
	uint32_t v;
	if (pd_u64map_get(&s->map, (uint64_t)i + 1, &v))
		return 0;
	if (pd_u64map_put(&s->map, (uint64_t)i + 1, 1))
		*oom = 1;
	return 1;
}

/* Walks the record at r: collects what it refers to (out NULL) or appends it to
 * out translated. 0, or PD_ECORRUPT / PD_ENOMEM with err set. */
static int walk_record(struct remap *m, struct v2_rd *r, struct pd_buf *out, struct pd_err *err)
{
	const struct v2_tables *t = m->t;
	uint32_t *stacks = NULL, *lo = NULL;
	struct seen seen;
	pd_u64map_init(&seen.map);
	int rc = 0;
	uint8_t kind = v2_byte(r);
	if (out && !r->bad && pd_buf_append(out, &kind, 1))
		m->oom = 1;
	if (r->bad)
		goto corrupt;
	if (kind == KIND_OPAQUE) {
		size_t n = copy_count(m, r, 1, out);
		if (r->bad || n > r->len - r->pos)
			goto corrupt;
		if (out && pd_buf_append(out, r->p + r->pos, n))
			m->oom = 1;
		r->pos += n;
		goto done;
	}
	if (kind == KIND_REPEAT) {
		/* the previous record again: its references are translated there, and
		 * its body can only shrink (own indices are never above shared ones),
		 * so it stays one a repeat may stand for */
		copy_uvs(m, r, 1, out); /* time */
		if (r->bad)
			goto corrupt;
		goto done;
	}
	if (kind != KIND_PROFILE)
		goto corrupt;
	unsigned flags = (unsigned)copy_uv(m, r, out);
	if (flags & ~(unsigned)F_ALL)
		goto corrupt;
	copy_uvs(m, r, 3, out); /* time, duration, period */
	if (flags & F_PERIOD_TYPE) {
		STR(r, out);
		STR(r, out);
	}
	size_t nst = copy_count(m, r, 2, out);
	for (size_t i = 0; i < 2 * nst && !r->bad; i++)
		STR(r, out);
	for (int i = 0; i < 4; i++)
		STR(r, out);
	size_t nc = copy_count(m, r, 1, out);
	for (size_t i = 0; i < nc && !r->bad; i++)
		STR(r, out);
	if (!(flags & F_MAP_SAME)) {
		size_t nmap = copy_count(m, r, 1, out);
		for (size_t i = 0; i < nmap && !r->bad; i++)
			ref(m, &m->map, t->nmap, r, out);
		if (!(flags & F_MAP_SEQ))
			copy_uvs(m, r, nmap, out);
	}
	/* samples: the stack column, then the value columns as they are */
	size_t ns = copy_count(m, r, 1, out);
	if (r->bad || !(stacks = malloc((ns + 1) * sizeof(*stacks))))
		goto fail;
	for (size_t i = 0; i < ns; i++) {
		uint64_t s = v2_uv(r);
		if (r->bad || s > t->nnode)
			goto corrupt;
		stacks[i] = (uint32_t)s;
		if (!out)
			add_stack(m, (uint32_t)s);
		else if (v2_put_uv(out, s ? (uint64_t)idset_of(&m->node, (uint32_t)s - 1) + 1 : 0))
			m->oom = 1;
	}
	for (size_t j = 0; j < nst && !r->bad; j++) {
		uint8_t mode = v2_byte(r);
		if (mode > COL_PERIOD || (mode == COL_PERIOD && j == 0))
			goto corrupt;
		if (out && pd_buf_append(out, &mode, 1))
			m->oom = 1;
		if (mode != COL_PERIOD)
			copy_uvs(m, r, ns, out);
	}
	if (flags & F_LABELS)
		for (size_t i = 0; i < ns && !r->bad; i++)
			for (size_t k = copy_count(m, r, 4, out); k > 0 && !r->bad; k--) {
				STR(r, out);       /* key */
				STR(r, out);       /* str */
				copy_uv(m, r, out); /* num */
				STR(r, out);       /* num_unit */
			}
	/* the location and function lists and their ids; a list the record leaves
	 * out is counted as the decoder counts it, for its ids */
	size_t nl = 0, nf = 0;
	int need_locs = !(flags & F_LOC_SEQ) || ((flags & F_FN_DERIVED) && !(flags & F_FN_SEQ));
	if (!(flags & F_LOC_DERIVED)) {
		nl = copy_count(m, r, 1, out);
		if (r->bad || !(lo = malloc((nl + 1) * sizeof(*lo))))
			goto fail;
		for (size_t k = 0; k < nl; k++) {
			uint64_t v = v2_uv(r);
			if (r->bad || v >= t->nloc)
				goto corrupt;
			lo[k] = (uint32_t)v;
			put_ref(m, &m->loc, (uint32_t)v, out);
		}
	} else if (need_locs) {
		size_t cap = 64;
		if (!(lo = malloc(cap * sizeof(*lo))))
			goto fail;
		for (size_t i = 0; i < ns; i++)
			for (uint32_t nd = stacks[i]; nd; nd = t->node[nd - 1].parent) {
				uint32_t li = t->node[nd - 1].location;
				if (!seen_first(&seen, li, &m->oom))
					continue;
				if (nl == cap) {
					uint32_t *n2 = realloc(lo, 2 * cap * sizeof(*lo));
					if (!n2)
						goto fail;
					lo = n2;
					cap *= 2;
				}
				lo[nl++] = li;
			}
	}
	if (!(flags & F_LOC_SEQ))
		copy_uvs(m, r, nl, out);
	if (!(flags & F_FN_DERIVED)) {
		nf = copy_count(m, r, 1, out);
		for (size_t k = 0; k < nf && !r->bad; k++)
			ref(m, &m->fn, t->nfn, r, out);
	} else if (!(flags & F_FN_SEQ)) {
		pd_u64map_fini(&seen.map);
		pd_u64map_init(&seen.map);
		for (size_t i = 0; i < nl; i++) {
			const struct v2_location *l = &t->loc[lo[i]];
			for (uint32_t k = 0; k < l->nline; k++)
				nf += (size_t)seen_first(&seen, t->line[l->line + k].function, &m->oom);
		}
	}
	if (!(flags & F_FN_SEQ))
		copy_uvs(m, r, nf, out);
	if (r->bad)
		goto corrupt;
	goto done;
corrupt:
	rc = pd_err_set(err, PD_ECORRUPT, "value chunk record: corrupt, or refers to a missing entry");
	goto done;
fail:
	if (r->bad)
		goto corrupt;
	m->oom = 1;
done:
	if (!rc && m->oom)
		rc = pd_err_set(err, PD_ENOMEM, "out of memory sealing a value chunk");
	free(stacks);
	free(lo);
	pd_u64map_fini(&seen.map);
	return rc;
}

/* ---- the chunk's own tables ---------------------------------------------------------- */

static int build_tables(struct remap *m, struct v2_tables *o)
{
	const struct v2_tables *t = m->t;
	size_t bytes = 0, nlines = 0;
	for (size_t k = 0; k < m->str.n; k++)
		bytes += v2_str_len(t, m->str.list[k]) + 1;
	for (size_t k = 0; k < m->loc.n; k++)
		nlines += t->loc[m->loc.list[k]].nline;
	o->soff = malloc((m->str.n + 1) * sizeof(*o->soff));
	o->map = malloc((m->map.n + 1) * sizeof(*o->map));
	o->fn = malloc((m->fn.n + 1) * sizeof(*o->fn));
	o->loc = malloc((m->loc.n + 1) * sizeof(*o->loc));
	o->line = malloc((nlines + 1) * sizeof(*o->line));
	o->node = malloc((m->node.n + 1) * sizeof(*o->node));
	if (!o->soff || !o->map || !o->fn || !o->loc || !o->line || !o->node ||
	    pd_buf_reserve(&o->sbytes, bytes + 1))
		return PD_ENOMEM;
	o->str_cap = m->str.n + 1;
	o->map_cap = m->map.n + 1;
	o->fn_cap = m->fn.n + 1;
	o->loc_cap = m->loc.n + 1;
	o->line_cap = nlines + 1;
	o->node_cap = m->node.n + 1;
	o->soff[0] = 0;
	for (size_t k = 0; k < m->str.n; k++) {
		uint32_t i = m->str.list[k];
		pd_buf_append(&o->sbytes, v2_str(t, i), v2_str_len(t, i) + 1); /* reserved */
		o->soff[k + 1] = (uint32_t)o->sbytes.len;
	}
	o->nstr = m->str.n;
	for (size_t k = 0; k < m->map.n; k++) {
		struct v2_mapping x = t->map[m->map.list[k]];
		x.filename = idset_of(&m->str, x.filename);
		x.build_id = idset_of(&m->str, x.build_id);
		o->map[k] = x;
	}
	o->nmap = m->map.n;
	for (size_t k = 0; k < m->fn.n; k++) {
		struct v2_function x = t->fn[m->fn.list[k]];
		x.name = idset_of(&m->str, x.name);
		x.system_name = idset_of(&m->str, x.system_name);
		x.filename = idset_of(&m->str, x.filename);
		o->fn[k] = x;
	}
	o->nfn = m->fn.n;
	for (size_t k = 0; k < m->loc.n; k++) {
		struct v2_location x = t->loc[m->loc.list[k]];
		if (x.mapping)
			x.mapping = idset_of(&m->map, x.mapping - 1) + 1;
		for (uint32_t j = 0; j < x.nline; j++) {
			struct v2_line ln = t->line[x.line + j];
			ln.function = idset_of(&m->fn, ln.function);
			o->line[o->nline + j] = ln;
		}
		x.line = (uint32_t)o->nline;
		o->nline += x.nline;
		o->loc[k] = x;
	}
	o->nloc = m->loc.n;
	/* a node's parent comes before it in the shared table, and so in this one */
	for (size_t k = 0; k < m->node.n; k++) {
		struct v2_node x = t->node[m->node.list[k]];
		if (x.parent)
			x.parent = idset_of(&m->node, x.parent - 1) + 1;
		x.location = idset_of(&m->loc, x.location);
		o->node[k] = x;
	}
	o->nnode = m->node.n;
	return 0;
}

int v2_remap(const struct v2_tables *shared, const uint8_t *recs, const size_t *goff,
	     size_t ngroups, struct v2_tables *own, struct pd_buf *out, size_t *out_goff,
	     struct pd_err *err)
{
	struct remap m = {.t = shared};
	struct v2_rd r = {recs, goff[ngroups], 0, 0};
	int rc = 0;
	pd_u64map_init(&m.str.map);
	pd_u64map_init(&m.map.map);
	pd_u64map_init(&m.fn.map);
	pd_u64map_init(&m.loc.map);
	pd_u64map_init(&m.node.map);
	if (shared->nstr)
		add_str(&m, 0); /* string 0 is "" in every set of tables */
	while (!rc && r.pos < r.len)
		rc = walk_record(&m, &r, NULL, err);
	if (rc)
		goto out;
	if (m.oom || idset_number(&m.str) || idset_number(&m.map) || idset_number(&m.fn) ||
	    idset_number(&m.loc) || idset_number(&m.node) || build_tables(&m, own))
		goto nomem;
	out_goff[0] = out->len;
	for (size_t g = 0; g < ngroups && !rc; g++) {
		struct v2_rd gr = {recs, goff[g + 1], goff[g], 0};
		while (!rc && gr.pos < gr.len)
			rc = walk_record(&m, &gr, out, err);
		out_goff[g + 1] = out->len;
	}
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory sealing a value chunk");
out:
	idset_fini(&m.str);
	idset_fini(&m.map);
	idset_fini(&m.fn);
	idset_fini(&m.loc);
	idset_fini(&m.node);
	return rc;
}
