/* totals.c: profile values over time (pd_tsdb_select_totals): for each profile of
 * the selected series, the sum of each sample type's values and its duration.
 * They are read from the totals section that follows each timestamp chunk's bit
 * stream (written at append time, docs/format/chunks.md), so no profile is
 * opened; a chunk written before sections existed, or whose section was lost to
 * an allocation failure, is answered by decoding its profiles instead. Series
 * and timestamps are those pd_tsdb_select lists, deleted samples left out.
 *
 * A query first lists the matching series of every source (blocks, then the
 * head) and groups them by label set; then it reads one series at a time, from
 * all its sources, into scratch arrays that every series reuses, and copies the
 * finished series once into the result's own memory (pd_storage_totals_alloc: a
 * few large mappings freed at once). Also here: giving a chunk without a section
 * one (compaction). */
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "tsdb_int.h"

/* ---- one series, while it is read ---------------------------------------------- */

/* The series being read, in scratch arrays that the next series reuses: values
 * and present hold one row per sample type, cap entries apart, with room for
 * rcap rows. Room for a chunk's records is made before it is read. */
struct tser {
	int64_t *ts, *dur; /* n records in the order read, room for cap */
	size_t n, cap;
	int64_t *values;                   /* values[k * cap + i]: 0 where not present */
	uint8_t *present;                  /* present[k * cap + i] */
	size_t rcap;                       /* rows values and present have room for */
	struct pd_storage_sample_type *types; /* in order of first reading, ntypes rows */
	size_t *type_len, *unit_len;
	size_t ntypes, tcap, lcap, ucap;
	int unsorted; /* a record was read at or before the time of the one before */
};

/* A series of one source that the matchers accept. */
struct tentry {
	const struct source *src;
	uint64_t ref;
	struct pd_lpair *labels; /* from the source's series(): malloc'd array */
	size_t nlabels;
	struct rchunk *c; /* malloc'd */
	size_t nc;
	size_t next; /* the same label set's entry in the next source, SIZE_MAX: none */
};

/* A label set: its entries, oldest source first. */
struct tgroup {
	uint64_t hash;
	size_t first, last;
};

struct tacc {
	struct tentry *e;
	size_t ne, ecap;
	struct tgroup *g;
	size_t ng, gcap;
	size_t *slots; /* group index + 1, open addressing by hash */
	size_t nslots;
	struct tser s; /* the series being read */
	int64_t *ts;   /* scratch: a chunk's timestamps */
	size_t ts_cap;
	uint32_t *map; /* scratch: a section's type -> the series' type, UINT32_MAX: none yet */
	size_t map_cap;
	struct pd_chunkenc_totals_iter it; /* reused from chunk to chunk */
};

static void tser_clear_types(struct tser *s)
{
	for (size_t k = 0; k < s->ntypes; k++) {
		free(s->types[k].type);
		free(s->types[k].unit);
	}
	s->ntypes = 0;
}

static void tser_free(struct tser *s)
{
	tser_clear_types(s);
	free(s->ts);
	free(s->dur);
	free(s->values);
	free(s->present);
	free(s->types);
	free(s->type_len);
	free(s->unit_len);
}

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	void *n = realloc(*v, c * size);
	if (!n)
		return PD_ENOMEM;
	*v = n;
	*cap = c;
	return 0;
}

/* The group of the label set l, added when new. */
static int tacc_group(struct tacc *a, const struct pd_lpair *l, size_t nl, size_t *idx)
{
	uint64_t h = labels_hash(l, nl);
	if ((a->ng + 1) * 2 > a->nslots) {
		size_t ns = a->nslots ? a->nslots * 2 : 64;
		size_t *sl = calloc(ns, sizeof(*sl));
		if (!sl)
			return PD_ENOMEM;
		for (size_t i = 0; i < a->ng; i++) {
			size_t j = a->g[i].hash & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = i + 1;
		}
		free(a->slots);
		a->slots = sl;
		a->nslots = ns;
	}
	size_t j = h & (a->nslots - 1);
	while (a->slots[j]) {
		size_t i = a->slots[j] - 1;
		const struct tentry *e = &a->e[a->g[i].first];
		if (a->g[i].hash == h && labels_cmp(e->labels, e->nlabels, l, nl) == 0) {
			*idx = i;
			return 0;
		}
		j = (j + 1) & (a->nslots - 1);
	}
	if (grow((void **)&a->g, &a->gcap, a->ng + 1, sizeof(*a->g)))
		return PD_ENOMEM;
	a->g[a->ng] = (struct tgroup){h, SIZE_MAX, SIZE_MAX};
	a->slots[j] = a->ng + 1;
	*idx = a->ng++;
	return 0;
}

/* Makes room for `more` records after the n there are: the rows move apart. */
static int tser_reserve(struct tser *s, size_t more)
{
	size_t need = s->n + more;
	if (need <= s->cap)
		return 0;
	size_t c = s->cap + s->cap / 2;
	if (c < need)
		c = need;
	int64_t *ts = realloc(s->ts, c * sizeof(*ts));
	if (!ts)
		return PD_ENOMEM;
	s->ts = ts;
	int64_t *du = realloc(s->dur, c * sizeof(*du));
	if (!du)
		return PD_ENOMEM;
	s->dur = du;
	if (s->rcap) {
		int64_t *v = realloc(s->values, s->rcap * c * sizeof(*v));
		if (!v)
			return PD_ENOMEM;
		s->values = v;
		uint8_t *p = realloc(s->present, s->rcap * c);
		if (!p)
			return PD_ENOMEM;
		s->present = p;
		/* the last row first, so that none is overwritten before it moves */
		for (size_t k = s->ntypes; k-- > 0;) {
			memmove(v + k * c, v + k * s->cap, s->n * sizeof(*v));
			memset(v + k * c + s->n, 0, (c - s->n) * sizeof(*v));
			memmove(p + k * c, p + k * s->cap, s->n);
			memset(p + k * c + s->n, 0, c - s->n);
		}
	}
	s->cap = c;
	return 0;
}

/* Starts a record of s at t (room made by tser_reserve); returns its index. Its
 * values follow with tser_set. */
static size_t tser_record(struct tser *s, int64_t t, int64_t duration)
{
	size_t i = s->n++;
	if (i && s->ts[i - 1] >= t)
		s->unsorted = 1;
	s->ts[i] = t;
	s->dur[i] = duration;
	return i;
}

static void tser_set(struct tser *s, size_t i, size_t k, int64_t v)
{
	s->values[k * s->cap + i] = v;
	s->present[k * s->cap + i] = 1;
}

/* The index of (type, unit) among s's types (lengths given), added with an empty
 * row when new (s has room for a record); -1 when out of memory. */
static long tser_type(struct tser *s, const char *type, size_t tl, const char *unit, size_t ul)
{
	for (size_t k = 0; k < s->ntypes; k++)
		if (s->type_len[k] == tl && s->unit_len[k] == ul &&
		    !memcmp(s->types[k].type, type, tl) && !memcmp(s->types[k].unit, unit, ul))
			return (long)k;
	size_t nt = s->ntypes + 1;
	if (grow((void **)&s->types, &s->tcap, nt, sizeof(*s->types)) ||
	    grow((void **)&s->type_len, &s->lcap, nt, sizeof(*s->type_len)) ||
	    grow((void **)&s->unit_len, &s->ucap, nt, sizeof(*s->unit_len)))
		return -1;
	if (nt > s->rcap) {
		size_t rc = s->rcap ? s->rcap * 2 : 4;
		int64_t *v = realloc(s->values, rc * s->cap * sizeof(*v));
		if (!v)
			return -1;
		s->values = v;
		uint8_t *p = realloc(s->present, rc * s->cap);
		if (!p)
			return -1;
		s->present = p;
		s->rcap = rc;
	}
	char *a = malloc(tl + 1), *b = malloc(ul + 1);
	if (!a || !b) {
		free(a);
		free(b);
		return -1;
	}
	memcpy(a, type, tl);
	a[tl] = '\0';
	memcpy(b, unit, ul);
	b[ul] = '\0';
	memset(s->values + s->ntypes * s->cap, 0, s->cap * sizeof(*s->values));
	memset(s->present + s->ntypes * s->cap, 0, s->cap);
	s->types[s->ntypes].type = a;
	s->types[s->ntypes].unit = b;
	s->type_len[s->ntypes] = tl;
	s->unit_len[s->ntypes] = ul;
	return (long)s->ntypes++;
}

/* Takes back the records from n0 on and the types from nt0 on. */
static void tser_rollback(struct tser *s, size_t n0, size_t nt0)
{
	for (size_t k = nt0; k < s->ntypes; k++) {
		free(s->types[k].type);
		free(s->types[k].unit);
	}
	s->ntypes = nt0;
	for (size_t k = 0; k < nt0; k++) {
		memset(s->values + k * s->cap + n0, 0, (s->n - n0) * sizeof(*s->values));
		memset(s->present + k * s->cap + n0, 0, s->n - n0);
	}
	s->n = n0;
}

/* Adds a decoded profile (NULL: not a profile) as a record of s at t (room made). */
static int tser_add_profile(struct tser *s, int64_t t, const struct pd_pprof_profile *p)
{
	size_t i = tser_record(s, t, p ? pd_pprof_duration_nanos(p) : 0);
	for (size_t j = 0; p && j < pd_pprof_sample_type_count(p); j++) {
		const char *ty = pd_pprof_sample_type(p, j), *un = pd_pprof_sample_unit(p, j);
		long k = tser_type(s, ty, strlen(ty), un, strlen(un));
		if (k < 0)
			return PD_ENOMEM;
		tser_set(s, i, (size_t)k, pd_pprof_sum(p, (int)j));
	}
	return 0;
}

/* ---- reading one chunk -------------------------------------------------------------- */

struct chunk_read {
	struct pd_tsdb *db;
	const struct source *src;
	uint64_t ref;
	const struct rchunk *c;
	int64_t mint, maxt;
	const struct tomb_entry *tomb;
	size_t ntomb;
	struct tacc *acc;
	size_t after; /* records in the source's chunks in range after this one */
};

static int in_range(const struct chunk_read *r, int64_t t)
{
	return t >= r->mint && t <= r->maxt && !(r->ntomb && tomb_covers(r->tomb, r->ntomb, t));
}

/* A chunk without a section: its profiles decoded, one by one. */
static int chunk_from_profiles(struct chunk_read *r, const int64_t *ts, size_t nts,
                               const uint8_t *tsc, size_t tsl, struct pd_err *err)
{
	struct tser *s = &r->acc->s;
	int rc = 0, reserved = 0;
	for (size_t i = 0; i < nts && !rc; i++) {
		if (!in_range(r, ts[i]))
			continue;
		/* room for the rest of the series in this source, at once */
		if (!reserved++ && tser_reserve(s, nts - i + r->after)) {
			rc = PD_ENOMEM;
			break;
		}
		uint8_t *buf = NULL;
		size_t len = 0;
		if ((rc = r->src->ops->chunk_value(r->src->r, r->ref, r->c, i, ts[i], tsc, tsl,
		                                   r->db->o.max_profile, &buf, &len, err)))
			break;
		struct pd_pprof_profile *p = NULL;
		struct pd_err derr;
		if (pd_pprof_decode(&p, buf, len, NULL, &derr))
			p = NULL; /* kept opaque: not a profile, no types */
		free(buf);
		if (tser_add_profile(s, ts[i], p))
			rc = PD_ENOMEM;
		pd_pprof_destroy(p);
	}
	if (rc == PD_ENOMEM)
		pd_err_set(err, PD_ENOMEM, "out of memory");
	return rc;
}

/* A chunk with a section: records read beside the timestamps, straight into the
 * series' arrays. A damaged section takes back what it added and returns
 * PD_ECORRUPT. */
static int chunk_from_section(struct chunk_read *r, const int64_t *ts, size_t nts,
                              struct pd_chunkenc_totals_iter *it, struct pd_err *err)
{
	struct tacc *a = r->acc;
	struct tser *s = &a->s;
	size_t n0 = s->n, nt0 = s->ntypes, nmap = 0;
	int rc = 0, reserved = 0;
	for (size_t i = 0; pd_chunkenc_totals_iter_next(it); i++) {
		if (i >= nts || !in_range(r, ts[i]))
			continue;
		/* room for the rest of the series in this source, at once */
		if (!reserved++ && tser_reserve(s, nts - i + r->after)) {
			rc = PD_ENOMEM;
			break;
		}
		size_t row = tser_record(s, ts[i], it->duration);
		if (it->ntypes > nmap) {
			if (grow((void **)&a->map, &a->map_cap, it->ntypes, sizeof(*a->map))) {
				rc = PD_ENOMEM;
				break;
			}
			for (; nmap < it->ntypes; nmap++)
				a->map[nmap] = UINT32_MAX;
		}
		const uint32_t *map = a->map, *idx = it->type_idx;
		const int64_t *iv = it->vals;
		int64_t *vals = s->values + row;
		uint8_t *pres = s->present + row;
		size_t cap = s->cap;
		for (size_t j = 0; j < it->n; j++) {
			uint32_t k = map[idx[j]];
			if (k == UINT32_MAX) {
				/* the series' type, looked up once a chunk */
				const struct pd_chunkenc_totals_type *t = &it->types[idx[j]];
				long kk = tser_type(s, t->type, t->type_len, t->unit, t->unit_len);
				if (kk < 0) {
					rc = PD_ENOMEM;
					break;
				}
				a->map[idx[j]] = k = (uint32_t)kk;
				vals = s->values + row; /* moved by the new row */
				pres = s->present + row;
			}
			vals[k * cap] = iv[j];
			pres[k * cap] = 1;
		}
		if (rc)
			break;
	}
	if (!rc && pd_chunkenc_totals_iter_err(it))
		rc = pd_chunkenc_totals_iter_err(it);
	if (rc == PD_ENOMEM)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (rc == PD_ECORRUPT) {
		tser_rollback(s, n0, nt0);
		return pd_err_set(
		    err, PD_ECORRUPT,
		    "series %llu: the totals section of the timestamp chunk of %lld..%lld "
		    "does not decode",
		    (unsigned long long)r->ref, (long long)r->c->mint, (long long)r->c->maxt);
	}
	return rc;
}

static int read_chunk(struct chunk_read *r, struct pd_err *err)
{
	uint8_t *tb = NULL;
	size_t tl = 0;
	int64_t *ts = NULL;
	size_t nts = 0;
	int rc = r->src->ops->chunk_ts(r->src->r, r->ref, r->c, &tb, &tl, err);
	if (rc == PD_ECORRUPT) {
		tsdb_chunk_damaged(r->db, r->src, "reading totals: timestamp chunk left out", err);
		return 0;
	}
	if (rc)
		return rc;
	struct pd_chunkenc_ts_iter it;
	pd_chunkenc_ts_iter_init(&it, tb, tl);
	if (grow((void **)&r->acc->ts, &r->acc->ts_cap, (size_t)it.count + 1, sizeof(*ts))) {
		free(tb);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	ts = r->acc->ts;
	int any = 0;
	while (pd_chunkenc_ts_iter_next(&it)) {
		ts[nts] = pd_chunkenc_ts_iter_at(&it);
		any |= in_range(r, ts[nts]);
		nts++;
	}
	if (pd_chunkenc_ts_iter_err(&it)) {
		struct pd_err e2;
		pd_err_set(
		    &e2, PD_ECORRUPT, "series %llu: timestamp chunk of %lld..%lld does not decode",
		    (unsigned long long)r->ref, (long long)r->c->mint, (long long)r->c->maxt);
		tsdb_chunk_damaged(r->db, r->src, "reading totals: timestamp chunk left out", &e2);
		goto out;
	}
	if (!any)
		goto out;
	size_t end = pd_chunkenc_ts_iter_end(&it);
	struct pd_chunkenc_totals_iter *tit = &r->acc->it;
	if (pd_chunkenc_totals_iter_reuse(tit, tb + end, tl > end ? tl - end : 0, (uint32_t)nts) ==
	    PD_ENOTFOUND) {
		rc = chunk_from_profiles(r, ts, nts, tb, tl, err);
		if (rc == PD_ECORRUPT) {
			tsdb_chunk_damaged(r->db, r->src, "reading totals from profiles", err);
			rc = 0;
		}
		goto out;
	}
	rc = chunk_from_section(r, ts, nts, tit, err);
	if (rc == PD_ECORRUPT) {
		tsdb_chunk_damaged(r->db, r->src, "reading totals: chunk left out", err);
		rc = 0;
	}
out:
	free(tb);
	return rc;
}

/* The most records a series' arrays make room for ahead of reading them. */
#define RESERVE_AHEAD 4096

/* Lists a series of a source as an entry of its label set's group, when the
 * matchers accept it. */
static int list_series(const struct source *src, uint64_t ref, const struct pd_storage_matcher *m,
                       size_t nm, struct tacc *acc, struct pd_err *err)
{
	struct pd_lpair *l;
	struct rchunk *c;
	size_t nl, nc, g;
	int rc = src->ops->series(src->r, ref, &l, &nl, &c, &nc, err);
	if (rc == PD_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (!tsdb_labels_match(l, nl, m, nm) || !nc)
		goto out;
	if (grow((void **)&acc->e, &acc->ecap, acc->ne + 1, sizeof(*acc->e)) ||
	    tacc_group(acc, l, nl, &g)) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	acc->e[acc->ne] = (struct tentry){src, ref, l, nl, c, nc, SIZE_MAX};
	if (acc->g[g].last == SIZE_MAX)
		acc->g[g].first = acc->ne;
	else
		acc->e[acc->g[g].last].next = acc->ne;
	acc->g[g].last = acc->ne++;
	return 0;
out:
	free(l);
	free(c);
	return rc;
}

/* Reads one entry's chunks in [mint, maxt] into the series being read. The
 * head's chunks are listed afresh first: since the series were listed, the head
 * may have sealed, cut or truncated some (a block is immutable). */
static int read_entry(struct pd_tsdb *db, struct tentry *e, int64_t mint, int64_t maxt,
                      struct tacc *acc, struct pd_err *err)
{
	struct tomb_entry *tomb = NULL;
	size_t ntomb = 0;
	int rc;
	if (e->src->ops == &head_reader_ops) {
		struct pd_lpair *l;
		struct rchunk *c;
		size_t nl, nc;
		rc = e->src->ops->series(e->src->r, e->ref, &l, &nl, &c, &nc, err);
		if (rc == PD_ENOTFOUND)
			return 0;
		if (rc)
			return rc;
		free(l);
		free(e->c);
		e->c = c;
		e->nc = nc;
	}
	if ((rc = e->src->ops->tombstones(e->src->r, e->ref, &tomb, &ntomb, err)))
		return rc;
	/* the index's counts, trusted only so far: past RESERVE_AHEAD, arrays grow */
	size_t after = 0;
	for (size_t k = 0; k < e->nc && after < RESERVE_AHEAD; k++)
		if (e->c[k].maxt >= mint && e->c[k].mint <= maxt)
			after += e->c[k].count;
	if (after > RESERVE_AHEAD)
		after = RESERVE_AHEAD;
	for (size_t k = 0; k < e->nc && !rc; k++) {
		if (e->c[k].maxt < mint || e->c[k].mint > maxt)
			continue;
		after -= e->c[k].count < after ? e->c[k].count : after;
		struct chunk_read r = {db,   e->src, e->ref, &e->c[k], mint,
		                       maxt, tomb,   ntomb,  acc,      after};
		rc = read_chunk(&r, err);
	}
	free(tomb);
	return rc;
}

/* ---- the result -------------------------------------------------------------------- */

struct tord {
	int64_t t;
	size_t i;
};

static int tord_cmp(const void *a, const void *b)
{
	const struct tord *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i; /* the first read of a time wins */
}

/* s as a result series, copied into ar's memory: records in time order, one per
 * time (the first read wins; sources are read oldest first, but a block and the
 * head may interleave after a restart), types in order of first appearance in
 * time, rows packed n apart. */
static int finish_series(const struct tser *s, const struct tentry *e,
                         struct pd_storage_totals_result *ar, struct pd_storage_totals *t)
{
	size_t n = s->n, cap = s->cap, nt = 0, u = n;
	struct tord *o = NULL;
	uint32_t *remap = malloc((s->ntypes ? s->ntypes : 1) * sizeof(*remap));
	int rc = PD_ENOMEM;
	if (!remap)
		goto out;
	if (s->unsorted) {
		if (!(o = malloc(n * sizeof(*o))))
			goto out;
		for (size_t i = 0; i < n; i++)
			o[i] = (struct tord){s->ts[i], i};
		qsort(o, n, sizeof(*o), tord_cmp);
		u = 0;
		for (size_t i = 0; i < n; i++)
			if (!u || o[u - 1].t != o[i].t)
				o[u++] = o[i];
		for (size_t k = 0; k < s->ntypes; k++)
			remap[k] = UINT32_MAX;
		for (size_t i = 0; i < u; i++)
			for (size_t k = 0; k < s->ntypes; k++)
				if (remap[k] == UINT32_MAX && s->present[k * cap + o[i].i])
					remap[k] = (uint32_t)nt++;
	} else {
		/* every type has a record: it was added for one */
		for (size_t k = 0; k < s->ntypes; k++)
			remap[k] = (uint32_t)nt++;
	}
	/* one piece of the arena: labels and their strings, times, durations, values,
	 * presence, types and their strings */
	size_t lb = e->nlabels * sizeof(*t->labels), tb = (nt ? nt : 1) * sizeof(*t->types);
	for (size_t i = 0; i < e->nlabels; i++)
		lb += strlen(e->labels[i].name) + strlen(e->labels[i].value) + 2;
	for (size_t k = 0; k < s->ntypes; k++)
		if (remap[k] != UINT32_MAX)
			tb += s->type_len[k] + s->unit_len[k] + 2;
	lb = (lb + 7) & ~(size_t)7;
	tb = (tb + 7) & ~(size_t)7;
	size_t nv = nt * u > 0 ? nt * u : 1; /* values and flags, at least one */
	char *p = pd_storage_totals_alloc(ar, lb + 2 * u * sizeof(int64_t) + nv * sizeof(int64_t) + tb + nv);
	if (!p)
		goto out;
	t->labels = (struct pd_storage_label *)(void *)p;
	t->nlabels = e->nlabels;
	char *str = p + e->nlabels * sizeof(*t->labels);
	for (size_t i = 0; i < e->nlabels; i++) {
		size_t x = strlen(e->labels[i].name) + 1, y = strlen(e->labels[i].value) + 1;
		memcpy(str, e->labels[i].name, x);
		t->labels[i].name = str;
		str += x;
		memcpy(str, e->labels[i].value, y);
		t->labels[i].value = str;
		str += y;
	}
	p += lb;
	t->ts = (int64_t *)(void *)p;
	t->duration_nanos = t->ts + u;
	t->values = t->duration_nanos + u;
	t->types = (struct pd_storage_sample_type *)(void *)(t->values + nv);
	t->present = (uint8_t *)t->types + tb;
	t->nts = u;
	t->ntypes = nt;
	if (!nt) {
		/* no profile among the records: present stays readable */
		t->values[0] = 0;
		t->present[0] = 0;
		memset(t->types, 0, sizeof(*t->types));
	}
	str = (char *)(t->types + (nt ? nt : 1));
	for (size_t k = 0; k < s->ntypes; k++) {
		if (remap[k] == UINT32_MAX)
			continue; /* only in records of a time read before */
		struct pd_storage_sample_type *ty = &t->types[remap[k]];
		ty->type = str;
		memcpy(str, s->types[k].type, s->type_len[k] + 1);
		str += s->type_len[k] + 1;
		ty->unit = str;
		memcpy(str, s->types[k].unit, s->unit_len[k] + 1);
		str += s->unit_len[k] + 1;
	}
	if (!o) {
		memcpy(t->ts, s->ts, n * sizeof(*t->ts));
		memcpy(t->duration_nanos, s->dur, n * sizeof(*t->ts));
		for (size_t k = 0; k < nt; k++) {
			memcpy(t->values + k * n, s->values + k * cap, n * sizeof(*t->values));
			memcpy(t->present + k * n, s->present + k * cap, n);
		}
	} else {
		memset(t->values, 0, nt * u * sizeof(*t->values));
		memset(t->present, 0, nt * u);
		for (size_t i = 0; i < u; i++) {
			size_t r = o[i].i;
			t->ts[i] = s->ts[r];
			t->duration_nanos[i] = s->dur[r];
			for (size_t k = 0; k < s->ntypes; k++)
				if (s->present[k * cap + r]) {
					t->values[remap[k] * u + i] = s->values[k * cap + r];
					t->present[remap[k] * u + i] = 1;
				}
		}
	}
	rc = 0;
out:
	free(o);
	free(remap);
	return rc;
}

static int totals_cmp(const void *a, const void *b)
{
	const struct pd_storage_totals *x = a, *y = b;
	return labels_cmp((const struct pd_lpair *)(const void *)x->labels, x->nlabels,
	                  (const struct pd_lpair *)(const void *)y->labels, y->nlabels);
}

int pd_tsdb_select_totals(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm,
                          int64_t mint, int64_t maxt, size_t limit,
                          struct pd_storage_totals_result **out, struct pd_err *err)
{
	struct tacc acc = {0};
	struct source *src = NULL;
	pd_chunkenc_totals_iter_init(&acc.it, NULL, 0, 0);
	size_t nsrc = 0;
	struct pd_storage_totals_result *r = NULL;
	int rc;
	*out = NULL;
	pthread_rwlock_rdlock(&db->blocks_mu);
	rc = db_sources(db, mint, maxt, &src, &nsrc, err);
	/* the matching series of every source, grouped by label set */
	for (size_t s = 0; s < nsrc && !rc; s++) {
		uint64_t *refs;
		size_t n;
		if ((rc = tsdb_candidates(&src[s], m, nm, &refs, &n, err)))
			break;
		for (size_t i = 0; i < n && !rc; i++)
			rc = list_series(&src[s], refs[i], m, nm, &acc, err);
		free(refs);
	}
	if (!rc) {
		r = calloc(1, sizeof(*r));
		if (r)
			r->series = calloc(acc.ng + 1, sizeof(*r->series));
		if (!r || !r->series)
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	/* then one series at a time, from all its sources, oldest first; a series
	 * every record of which was out of range, deleted or in a damaged chunk is
	 * left out, and past the limit, so is every series after */
	for (size_t g = 0; g < acc.ng && !rc && (!limit || r->nseries < limit); g++) {
		struct tser *s = &acc.s;
		tser_clear_types(s);
		s->n = 0;
		s->unsorted = 0;
		for (size_t i = acc.g[g].first; i != SIZE_MAX && !rc; i = acc.e[i].next)
			rc = read_entry(db, &acc.e[i], mint, maxt, &acc, err);
		if (!rc && s->n &&
		    finish_series(s, &acc.e[acc.g[g].first], r, &r->series[r->nseries++]))
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	pthread_rwlock_unlock(&db->blocks_mu);
	free(src);
	for (size_t i = 0; i < acc.ne; i++) {
		free(acc.e[i].labels);
		free(acc.e[i].c);
	}
	free(acc.e);
	free(acc.g);
	free(acc.slots);
	tser_free(&acc.s);
	free(acc.ts);
	free(acc.map);
	pd_chunkenc_totals_iter_fini(&acc.it);
	if (rc) {
		pd_storage_totals_result_destroy(r);
		return rc;
	}
	if (r->nseries > 1)
		qsort(r->series, r->nseries, sizeof(*r->series), totals_cmp);
	*out = r;
	return 0;
}

/* ---- a section for a chunk without one ------------------------------------------------ */

int tsdb_chunk_add_totals(struct pd_block_chunk *c, size_t max_profile, uint8_t **owned,
                          struct pd_err *err)
{
	const uint8_t *sec;
	size_t sec_len;
	*owned = NULL;
	if (pd_chunkenc_ts_totals(c->ts, c->ts_len, &sec, &sec_len))
		return pd_err_set(err, PD_ECORRUPT, "timestamp chunk of %lld..%lld does not decode",
		                  (long long)c->mint, (long long)c->maxt);
	if (sec_len)
		return 0;
	struct pd_chunkenc_totals *tot = pd_chunkenc_totals_create();
	if (!tot)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int rc = 0;
	uint16_t count = pd_chunkenc_ts_count(c->ts, c->ts_len);
	struct pd_chunkenc_ts_iter it;
	pd_chunkenc_ts_iter_init(&it, c->ts, c->ts_len);
	for (uint32_t i = 0; i < count && !rc; i++) {
		uint8_t *p;
		size_t pl;
		if (!pd_chunkenc_ts_iter_next(&it)) {
			rc = pd_err_set(err, PD_ECORRUPT, "timestamp chunk of %lld..%lld is damaged",
			                (long long)c->mint, (long long)c->maxt);
			break;
		}
		if ((rc = pd_chunkenc_values_read_tc(c->vals, c->vals_len, c->ts, c->ts_len, i,
		                                     max_profile, &p, &pl, err)))
			break;
		struct pd_pprof_profile *prof = NULL;
		struct pd_err derr;
		if (pd_pprof_decode(&prof, p, pl, NULL, &derr))
			prof = NULL;
		free(p);
		rc = pd_chunkenc_totals_append_profile(tot, prof, err);
		pd_pprof_destroy(prof);
	}
	size_t xl;
	const uint8_t *xb = pd_chunkenc_totals_bytes(tot, &xl);
	if (!rc && !(*owned = malloc(c->ts_len + xl)))
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	if (!rc) {
		memcpy(*owned, c->ts, c->ts_len);
		memcpy(*owned + c->ts_len, xb, xl);
		c->ts = *owned;
		c->ts_len += xl;
	}
	pd_chunkenc_totals_destroy(tot);
	return rc;
}
