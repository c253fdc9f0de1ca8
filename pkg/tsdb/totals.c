/* totals.c: profile values over time (pd_tsdb_select_totals): for each profile of
 * the selected series, the sum of each sample type's values and its duration.
 * They are read from the totals section that follows each timestamp chunk's bit
 * stream (written at append time, docs/format/chunks.md), so no profile is
 * opened; a chunk written before sections existed, or whose section was lost to
 * an allocation failure, is answered by decoding its profiles instead. Series
 * and timestamps are those pd_tsdb_select lists, deleted samples left out. Each
 * record is written once, straight into the arrays the result hands out. Also
 * here: giving a chunk without a section one (compaction). */
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "tsdb_int.h"

/* ---- one series, while it is read ---------------------------------------------- */

/* A series' result, built in place: each record goes straight into the arrays
 * the result hands out, values and present holding one row per sample type, cap
 * entries apart until finish_series packs the rows n apart. Room for a chunk's
 * records is made before it is read, so a series usually costs one allocation of
 * each array. */
struct tser {
	struct pd_tsdb_label *labels; /* one allocation with the strings */
	size_t nlabels;
	uint64_t hash;
	int64_t *ts, *dur; /* n records in the order read, room for cap */
	size_t n, cap;
	int64_t *values;  /* values[k * cap + i]: 0 where not present */
	uint8_t *present; /* present[k * cap + i] */
	struct pd_tsdb_sample_type *types; /* in order of first reading, ntypes rows */
	size_t *type_len, *unit_len;
	size_t ntypes, tcap, lcap, ucap;
	int unsorted; /* a record was read at or before the time of the one before */
};

struct tacc {
	struct tser *v;
	size_t n, cap;
	int64_t *ts; /* scratch: a chunk's timestamps */
	size_t ts_cap;
	uint32_t *map; /* scratch: a section's type -> the series' type, UINT32_MAX: none yet */
	size_t map_cap;
	struct pd_chunkenc_totals_iter it; /* reused from chunk to chunk */
	size_t *slots;                     /* index + 1, open addressing by hash */
	size_t nslots;
};

static void tser_free(struct tser *s)
{
	free(s->labels);
	free(s->ts);
	free(s->dur);
	free(s->values);
	free(s->present);
	for (size_t k = 0; k < s->ntypes; k++) {
		free(s->types[k].type);
		free(s->types[k].unit);
	}
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

/* The series with these labels, or a new one when may_add (PD_ENOTFOUND
 * otherwise). */
static int tacc_find_or_add(struct tacc *a, const struct pd_lpair *l, size_t nl, int may_add,
                            size_t *idx)
{
	uint64_t h = labels_hash(l, nl);
	if ((a->n + 1) * 2 > a->nslots) {
		size_t ns = a->nslots ? a->nslots * 2 : 64;
		size_t *sl = calloc(ns, sizeof(*sl));
		if (!sl)
			return PD_ENOMEM;
		for (size_t i = 0; i < a->n; i++) {
			size_t j = a->v[i].hash & (ns - 1);
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
		if (a->v[i].hash == h &&
		    labels_cmp((const struct pd_lpair *)(const void *)a->v[i].labels,
		               a->v[i].nlabels, l, nl) == 0) {
			*idx = i;
			return 0;
		}
		j = (j + 1) & (a->nslots - 1);
	}
	if (!may_add)
		return PD_ENOTFOUND;
	size_t c = a->cap;
	if (grow((void **)&a->v, &c, a->n + 1, sizeof(*a->v)))
		return PD_ENOMEM;
	a->cap = c;
	struct pd_tsdb_label *lab = tsdb_labels_pack(l, nl);
	if (!lab)
		return PD_ENOMEM;
	struct tser *t = &a->v[a->n];
	memset(t, 0, sizeof(*t));
	t->labels = lab;
	t->nlabels = nl;
	t->hash = h;
	a->slots[j] = a->n + 1;
	*idx = a->n++;
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
	if (s->ntypes) {
		int64_t *v = realloc(s->values, s->ntypes * c * sizeof(*v));
		if (!v)
			return PD_ENOMEM;
		s->values = v;
		uint8_t *p = realloc(s->present, s->ntypes * c);
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
	int64_t *v = realloc(s->values, nt * s->cap * sizeof(*v));
	if (!v)
		return -1;
	s->values = v;
	uint8_t *p = realloc(s->present, nt * s->cap);
	if (!p)
		return -1;
	s->present = p;
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
	memset(v + s->ntypes * s->cap, 0, s->cap * sizeof(*v));
	memset(p + s->ntypes * s->cap, 0, s->cap);
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
	const struct pd_lpair *l;
	size_t nl;
	int64_t mint, maxt;
	const struct tomb_entry *tomb;
	size_t ntomb;
	struct tacc *acc;
	size_t limit;
	size_t *idx; /* the series' index in acc, SIZE_MAX before its first record */
	size_t after; /* records in the source's chunks in range after this one */
};

static int in_range(const struct chunk_read *r, int64_t t)
{
	return t >= r->mint && t <= r->maxt && !(r->ntomb && tomb_covers(r->tomb, r->ntomb, t));
}

/* The series' accumulator, created at its first record (within the limit, as
 * pd_tsdb_select adds series). NULL with *rc 0 when it is left out. */
static struct tser *series_of(struct chunk_read *r, int *rc)
{
	*rc = 0;
	if (*r->idx == SIZE_MAX) {
		struct tacc *a = r->acc;
		int r2 = tacc_find_or_add(a, r->l, r->nl, !r->limit || a->n < r->limit, r->idx);
		if (r2 == PD_ENOTFOUND)
			return NULL;
		if (r2) {
			*rc = PD_ENOMEM;
			return NULL;
		}
	}
	return &r->acc->v[*r->idx];
}

/* A chunk without a section: its profiles decoded, one by one. */
static int chunk_from_profiles(struct chunk_read *r, const int64_t *ts, size_t nts,
                               struct pd_err *err)
{
	struct tser *s = NULL;
	int rc = 0;
	for (size_t i = 0; i < nts && !rc; i++) {
		if (!in_range(r, ts[i]))
			continue;
		if (!s) {
			if (!(s = series_of(r, &rc)))
				break; /* past the limit, or out of memory */
			/* room for the rest of the series in this source, at once */
			if (tser_reserve(s, nts - i + r->after)) {
				rc = PD_ENOMEM;
				break;
			}
		}
		uint8_t *buf = NULL;
		size_t len = 0;
		if ((rc = r->src->ops->chunk_value(r->src->r, r->ref, r->c, i, r->db->o.max_profile,
		                                   &buf, &len, err)))
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
	struct tser *s = NULL;
	size_t n0 = 0, nt0 = 0, nmap = 0;
	int rc = 0;
	for (size_t i = 0; pd_chunkenc_totals_iter_next(it); i++) {
		if (i >= nts || !in_range(r, ts[i]))
			continue;
		if (!s) {
			if (!(s = series_of(r, &rc)))
				break;
			/* room for the rest of the series in this source, at once */
			if (tser_reserve(s, nts - i + r->after)) {
				rc = PD_ENOMEM;
				break;
			}
			n0 = s->n;
			nt0 = s->ntypes;
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
		if (s)
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
		rc = chunk_from_profiles(r, ts, nts, err);
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

static int read_series(struct pd_tsdb *db, const struct source *src, uint64_t ref,
                       const struct pd_tsdb_matcher *m, size_t nm, int64_t mint, int64_t maxt,
                       struct tacc *acc, size_t limit, struct pd_err *err)
{
	struct pd_lpair *l;
	struct rchunk *c;
	size_t nl, nc;
	int rc = src->ops->series(src->r, ref, &l, &nl, &c, &nc, err);
	if (rc == PD_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	struct tomb_entry *tomb = NULL;
	size_t ntomb = 0, idx = SIZE_MAX;
	if (!tsdb_labels_match(l, nl, m, nm))
		goto out;
	if ((rc = src->ops->tombstones(src->r, ref, &tomb, &ntomb, err)))
		goto out;
	/* a series already in the result (an earlier source) keeps its place */
	if (tacc_find_or_add(acc, l, nl, 0, &idx) != 0)
		idx = SIZE_MAX;
	/* the index's counts, trusted only so far: past RESERVE_AHEAD, arrays grow */
	size_t after = 0;
	for (size_t k = 0; k < nc && after < RESERVE_AHEAD; k++)
		if (c[k].maxt >= mint && c[k].mint <= maxt)
			after += c[k].count;
	if (after > RESERVE_AHEAD)
		after = RESERVE_AHEAD;
	for (size_t k = 0; k < nc && !rc; k++) {
		if (c[k].maxt < mint || c[k].mint > maxt)
			continue;
		after -= c[k].count < after ? c[k].count : after;
		struct chunk_read r = {db,   src,  ref,   &c[k], l,   nl,    mint,
		                       maxt, tomb, ntomb, acc,   limit, &idx, after};
		rc = read_chunk(&r, err);
	}
out:
	free(tomb);
	free(l);
	free(c);
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

/* Puts s's records in time order, one per time (the first read wins), with its
 * types in order of first appearance in time: new arrays replace s's. Sources
 * are read oldest first, but a block and the head may interleave after a
 * restart. */
static int tser_sort(struct tser *s)
{
	size_t n = s->n, nt = 0, cap = s->cap;
	struct tord *o = malloc(n * sizeof(*o));
	uint32_t *remap = malloc((s->ntypes ? s->ntypes : 1) * sizeof(*remap));
	int64_t *ts = NULL, *dur = NULL, *v = NULL;
	uint8_t *p = NULL;
	struct pd_tsdb_sample_type *types = NULL;
	size_t *tl = NULL, *ul = NULL;
	if (!o || !remap)
		goto nomem;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct tord){s->ts[i], i};
	qsort(o, n, sizeof(*o), tord_cmp);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || o[u - 1].t != o[i].t)
			o[u++] = o[i];
	for (size_t k = 0; k < s->ntypes; k++)
		remap[k] = UINT32_MAX;
	for (size_t i = 0; i < u; i++)
		for (size_t k = 0; k < s->ntypes; k++)
			if (remap[k] == UINT32_MAX && s->present[k * cap + o[i].i])
				remap[k] = (uint32_t)nt++;
	ts = malloc(u * sizeof(*ts));
	dur = malloc(u * sizeof(*dur));
	v = calloc(nt * u + 1, sizeof(*v));
	p = calloc(nt * u + 1, 1);
	types = calloc(nt + 1, sizeof(*types));
	tl = malloc((nt + 1) * sizeof(*tl));
	ul = malloc((nt + 1) * sizeof(*ul));
	if (!ts || !dur || !v || !p || !types || !tl || !ul)
		goto nomem;
	for (size_t i = 0; i < u; i++) {
		size_t r = o[i].i;
		ts[i] = s->ts[r];
		dur[i] = s->dur[r];
		for (size_t k = 0; k < s->ntypes; k++)
			if (s->present[k * cap + r]) {
				v[remap[k] * u + i] = s->values[k * cap + r];
				p[remap[k] * u + i] = 1;
			}
	}
	for (size_t k = 0; k < s->ntypes; k++) {
		if (remap[k] == UINT32_MAX) {
			/* only in records of a time read before */
			free(s->types[k].type);
			free(s->types[k].unit);
			continue;
		}
		types[remap[k]] = s->types[k];
		tl[remap[k]] = s->type_len[k];
		ul[remap[k]] = s->unit_len[k];
	}
	free(s->ts);
	free(s->dur);
	free(s->values);
	free(s->present);
	free(s->types);
	free(s->type_len);
	free(s->unit_len);
	s->ts = ts;
	s->dur = dur;
	s->values = v;
	s->present = p;
	s->types = types;
	s->type_len = tl;
	s->unit_len = ul;
	s->n = s->cap = u;
	s->ntypes = s->tcap = s->lcap = s->ucap = nt;
	s->unsorted = 0;
	free(o);
	free(remap);
	return 0;
nomem:
	free(o);
	free(remap);
	free(ts);
	free(dur);
	free(v);
	free(p);
	free(types);
	free(tl);
	free(ul);
	return PD_ENOMEM;
}

/* s as a result series: its arrays are moved into t, the rows packed n apart. */
static int finish_series(struct tser *s, struct pd_tsdb_totals *t)
{
	if (s->unsorted && tser_sort(s))
		return PD_ENOMEM;
	size_t n = s->n, cap = s->cap, nt = s->ntypes;
	if (!nt) {
		/* no profile among the records: present stays readable */
		free(s->values);
		free(s->present);
		s->values = calloc(1, sizeof(*s->values));
		s->present = calloc(1, 1);
		if (!s->values || !s->present)
			return PD_ENOMEM;
	}
	if (!s->types && !(s->types = calloc(1, sizeof(*s->types))))
		return PD_ENOMEM;
	for (size_t k = 1; k < nt && cap != n; k++) {
		memmove(s->values + k * n, s->values + k * cap, n * sizeof(*s->values));
		memmove(s->present + k * n, s->present + k * cap, n);
	}
	if (cap > n + n / 4 + 16) {
		/* room made for records out of range: given back (a failure keeps it) */
		int64_t *x;
		uint8_t *y;
		if ((x = realloc(s->ts, n * sizeof(*x))))
			s->ts = x;
		if ((x = realloc(s->dur, n * sizeof(*x))))
			s->dur = x;
		if (nt && (x = realloc(s->values, nt * n * sizeof(*x))))
			s->values = x;
		if (nt && (y = realloc(s->present, nt * n)))
			s->present = y;
	}
	t->labels = s->labels;
	t->nlabels = s->nlabels;
	t->nts = n;
	t->ts = s->ts;
	t->duration_nanos = s->dur;
	t->types = s->types;
	t->ntypes = nt;
	t->values = s->values;
	t->present = s->present;
	s->labels = NULL;
	s->ts = s->dur = s->values = NULL;
	s->present = NULL;
	s->types = NULL;
	s->ntypes = 0;
	return 0;
}

void pd_tsdb_totals_result_destroy(struct pd_tsdb_totals_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nseries; i++) {
		struct pd_tsdb_totals *t = &r->series[i];
		free(t->labels);
		free(t->ts);
		free(t->duration_nanos);
		for (size_t k = 0; k < t->ntypes; k++) {
			free(t->types[k].type);
			free(t->types[k].unit);
		}
		free(t->types);
		free(t->values);
		free(t->present);
	}
	free(r->series);
	free(r);
}

static int totals_cmp(const void *a, const void *b)
{
	const struct pd_tsdb_totals *x = a, *y = b;
	return labels_cmp((const struct pd_lpair *)(const void *)x->labels, x->nlabels,
	                  (const struct pd_lpair *)(const void *)y->labels, y->nlabels);
}

int pd_tsdb_select_totals(struct pd_tsdb *db, const struct pd_tsdb_matcher *m, size_t nm,
                          int64_t mint, int64_t maxt, size_t limit,
                          struct pd_tsdb_totals_result **out, struct pd_err *err)
{
	struct tacc acc = {0};
	struct source *src = NULL;
	pd_chunkenc_totals_iter_init(&acc.it, NULL, 0, 0);
	size_t nsrc = 0;
	struct pd_tsdb_totals_result *r = NULL;
	int rc;
	*out = NULL;
	pthread_rwlock_rdlock(&db->blocks_mu);
	rc = db_sources(db, mint, maxt, &src, &nsrc, err);
	for (size_t s = 0; s < nsrc && !rc; s++) {
		uint64_t *refs;
		size_t n;
		if ((rc = tsdb_candidates(&src[s], m, nm, &refs, &n, err)))
			break;
		for (size_t i = 0; i < n && !rc; i++)
			rc = read_series(db, &src[s], refs[i], m, nm, mint, maxt, &acc, limit, err);
		free(refs);
	}
	pthread_rwlock_unlock(&db->blocks_mu);
	free(src);
	if (!rc) {
		r = calloc(1, sizeof(*r));
		if (r)
			r->series = calloc(acc.n + 1, sizeof(*r->series));
		if (!r || !r->series)
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < acc.n && !rc; i++) {
		if (!acc.v[i].n)
			continue; /* every record it had was in a damaged chunk */
		if (finish_series(&acc.v[i], &r->series[r->nseries++]))
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < acc.n; i++)
		tser_free(&acc.v[i]);
	free(acc.v);
	free(acc.slots);
	free(acc.ts);
	free(acc.map);
	pd_chunkenc_totals_iter_fini(&acc.it);
	if (rc) {
		pd_tsdb_totals_result_destroy(r);
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
	for (uint32_t i = 0; i < count && !rc; i++) {
		uint8_t *p;
		size_t pl;
		if ((rc = pd_chunkenc_values_read(c->vals, c->vals_len, i, max_profile, &p, &pl,
		                                  err)))
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
