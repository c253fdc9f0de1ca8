/* totals.c: profile values over time (pd_tsdb_select_totals): for each profile of
 * the selected series, the sum of each sample type's values and its duration.
 * They are read from the totals section that follows each timestamp chunk's bit
 * stream (written at append time, docs/format/chunks.md), so no profile is
 * opened; a chunk written before sections existed, or whose section was lost to
 * an allocation failure, is answered by decoding its profiles instead. Series
 * and timestamps are those pd_tsdb_select lists, deleted samples left out. Also
 * here: giving a chunk without a section one (compaction). */
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "tsdb_int.h"

/* ---- one series, while it is read ---------------------------------------------- */

struct tser {
	struct pd_tsdb_label *labels; /* one allocation with the strings */
	size_t nlabels;
	uint64_t hash;
	/* records in the order read: time, duration, is a profile, and the range
	 * [off[i], off[i + 1]) of (type, value) pairs */
	int64_t *ts, *dur;
	uint8_t *prof;
	size_t *off; /* n + 1 entries */
	size_t n, cap;
	uint32_t *ptype; /* index into types */
	int64_t *pval;
	size_t np, pcap;
	struct pd_tsdb_sample_type *types; /* in order of first reading */
	size_t ntypes, tcap;
};

struct tacc {
	struct tser *v;
	size_t n, cap;
	int64_t *ts; /* scratch: a chunk's timestamps */
	size_t ts_cap;
	struct pd_chunkenc_totals_iter it; /* reused from chunk to chunk */
	size_t *slots;                     /* index + 1, open addressing by hash */
	size_t nslots;
};

static void tser_free(struct tser *s)
{
	free(s->labels);
	free(s->ts);
	free(s->dur);
	free(s->prof);
	free(s->off);
	free(s->ptype);
	free(s->pval);
	for (size_t k = 0; k < s->ntypes; k++) {
		free(s->types[k].type);
		free(s->types[k].unit);
	}
	free(s->types);
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
	size_t bytes = nl * sizeof(struct pd_tsdb_label);
	for (size_t i = 0; i < nl; i++)
		bytes += strlen(l[i].name) + strlen(l[i].value) + 2;
	struct pd_tsdb_label *lab = malloc(bytes ? bytes : 1);
	size_t *off = malloc(sizeof(*off));
	if (!lab || !off) {
		free(lab);
		free(off);
		return PD_ENOMEM;
	}
	char *s = (char *)(lab + nl);
	for (size_t i = 0; i < nl; i++) {
		size_t x = strlen(l[i].name) + 1, y = strlen(l[i].value) + 1;
		memcpy(s, l[i].name, x);
		lab[i].name = s;
		s += x;
		memcpy(s, l[i].value, y);
		lab[i].value = s;
		s += y;
	}
	struct tser *t = &a->v[a->n];
	memset(t, 0, sizeof(*t));
	t->labels = lab;
	t->nlabels = nl;
	t->hash = h;
	t->off = off;
	t->off[0] = 0;
	t->cap = 0;
	a->slots[j] = a->n + 1;
	*idx = a->n++;
	return 0;
}

/* Starts a record of s at t; its pairs follow with tser_pair. */
static int tser_record(struct tser *s, int64_t t, int profile, int64_t duration)
{
	if (s->n + 1 > s->cap) {
		size_t c = s->cap ? s->cap * 2 : 64;
		int64_t *ts = realloc(s->ts, c * sizeof(*ts));
		if (ts)
			s->ts = ts;
		int64_t *du = realloc(s->dur, c * sizeof(*du));
		if (du)
			s->dur = du;
		uint8_t *pr = realloc(s->prof, c);
		if (pr)
			s->prof = pr;
		size_t *of = realloc(s->off, (c + 1) * sizeof(*of));
		if (of)
			s->off = of;
		if (!ts || !du || !pr || !of)
			return PD_ENOMEM;
		s->cap = c;
	}
	s->ts[s->n] = t;
	s->dur[s->n] = duration;
	s->prof[s->n] = (uint8_t)profile;
	s->n++;
	s->off[s->n] = s->np;
	return 0;
}

/* Adds a (type, value) pair to the last record. */
static int tser_pair(struct tser *s, uint32_t type, int64_t v)
{
	if (s->np + 1 > s->pcap) {
		size_t c = s->pcap ? s->pcap * 2 : 256;
		uint32_t *pt = realloc(s->ptype, c * sizeof(*pt));
		if (pt)
			s->ptype = pt;
		int64_t *pv = realloc(s->pval, c * sizeof(*pv));
		if (pv)
			s->pval = pv;
		if (!pt || !pv)
			return PD_ENOMEM;
		s->pcap = c;
	}
	s->ptype[s->np] = type;
	s->pval[s->np++] = v;
	s->off[s->n] = s->np;
	return 0;
}

/* The index of (type, unit) among s's types (lengths given), added when new;
 * -1 when out of memory. */
static long tser_type(struct tser *s, const char *type, size_t tl, const char *unit, size_t ul)
{
	for (size_t k = 0; k < s->ntypes; k++)
		if (strlen(s->types[k].type) == tl && strlen(s->types[k].unit) == ul &&
		    !memcmp(s->types[k].type, type, tl) && !memcmp(s->types[k].unit, unit, ul))
			return (long)k;
	if (grow((void **)&s->types, &s->tcap, s->ntypes + 1, sizeof(*s->types)))
		return -1;
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
	s->types[s->ntypes].type = a;
	s->types[s->ntypes].unit = b;
	return (long)s->ntypes++;
}

/* Adds a decoded profile (NULL: not a profile) as a record of s at t. */
static int tser_add_profile(struct tser *s, int64_t t, const struct pd_pprof_profile *p)
{
	if (tser_record(s, t, p != NULL, p ? pd_pprof_duration_nanos(p) : 0))
		return PD_ENOMEM;
	for (size_t j = 0; p && j < pd_pprof_sample_type_count(p); j++) {
		const char *ty = pd_pprof_sample_type(p, j), *un = pd_pprof_sample_unit(p, j);
		long k = tser_type(s, ty, strlen(ty), un, strlen(un));
		if (k < 0 || tser_pair(s, (uint32_t)k, pd_pprof_sum(p, (int)j)))
			return PD_ENOMEM;
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
	int rc = 0;
	for (size_t i = 0; i < nts && !rc; i++) {
		if (!in_range(r, ts[i]))
			continue;
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
		struct tser *s = series_of(r, &rc);
		if (s && tser_add_profile(s, ts[i], p))
			rc = PD_ENOMEM;
		pd_pprof_destroy(p);
		if (!s && !rc)
			break; /* past the limit */
	}
	if (rc == PD_ENOMEM)
		pd_err_set(err, PD_ENOMEM, "out of memory");
	return rc;
}

/* A chunk with a section: records read beside the timestamps. A damaged
 * section takes back what it added and returns PD_ECORRUPT. */
static int chunk_from_section(struct chunk_read *r, const int64_t *ts, size_t nts,
                              struct pd_chunkenc_totals_iter *it, struct pd_err *err)
{
	uint32_t *map = NULL; /* section type -> series type + 1 (0: not mapped yet) */
	size_t nmap = 0, mapcap = 0;
	struct tser *s = NULL;
	size_t n0 = 0, np0 = 0;
	int rc = 0;
	if (*r->idx != SIZE_MAX) {
		s = &r->acc->v[*r->idx];
		n0 = s->n;
		np0 = s->np;
	}
	for (size_t i = 0; pd_chunkenc_totals_iter_next(it); i++) {
		if (i >= nts || !in_range(r, ts[i]))
			continue;
		if (!s) {
			if (!(s = series_of(r, &rc)))
				break;
			n0 = s->n;
			np0 = s->np;
		}
		if (tser_record(s, ts[i], it->profile, it->duration)) {
			rc = PD_ENOMEM;
			break;
		}
		if (it->ntypes > nmap) {
			if (grow((void **)&map, &mapcap, it->ntypes, sizeof(*map))) {
				rc = PD_ENOMEM;
				break;
			}
			for (; nmap < it->ntypes; nmap++) {
				const struct pd_chunkenc_totals_type *t = &it->types[nmap];
				long k = tser_type(s, t->type, t->type_len, t->unit, t->unit_len);
				if (k < 0) {
					rc = PD_ENOMEM;
					break;
				}
				map[nmap] = (uint32_t)k;
			}
			if (rc)
				break;
		}
		for (size_t j = 0; j < it->n && !rc; j++)
			if (tser_pair(s, map[it->type_idx[j]], it->vals[j]))
				rc = PD_ENOMEM;
		if (rc)
			break;
	}
	if (!rc && pd_chunkenc_totals_iter_err(it))
		rc = pd_chunkenc_totals_iter_err(it);
	free(map);
	if (rc == PD_ENOMEM)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (rc == PD_ECORRUPT) {
		if (s) {
			s->n = n0;
			s->np = np0;
		}
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
	for (size_t k = 0; k < nc && !rc; k++) {
		if (c[k].maxt < mint || c[k].mint > maxt)
			continue;
		struct chunk_read r = {db,   src,  ref,   &c[k], l,     nl,  mint,
		                       maxt, tomb, ntomb, acc,   limit, &idx};
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

/* s's records in time order, one per time, as a result series (s's labels are
 * moved into t). */
static int finish_series(struct tser *s, struct pd_tsdb_totals *t)
{
	size_t *ord = malloc((s->n ? s->n : 1) * sizeof(*ord));
	uint32_t *remap = malloc((s->ntypes ? s->ntypes : 1) * sizeof(*remap));
	if (!ord || !remap)
		goto nomem;
	int sorted = 1;
	for (size_t i = 0; i < s->n; i++) {
		ord[i] = i;
		if (i && s->ts[i - 1] >= s->ts[i])
			sorted = 0;
	}
	size_t n = s->n;
	if (!sorted) {
		/* sources are read oldest first, but a block and the head may
		 * interleave after a restart: sort, and keep one record per time */
		struct tord *o = malloc(n * sizeof(*o));
		if (!o)
			goto nomem;
		for (size_t i = 0; i < n; i++)
			o[i] = (struct tord){s->ts[i], i};
		qsort(o, n, sizeof(*o), tord_cmp);
		for (size_t i = 0; i < n; i++)
			ord[i] = o[i].i;
		free(o);
		size_t u = 0;
		for (size_t i = 0; i < n; i++)
			if (!u || s->ts[ord[u - 1]] != s->ts[ord[i]])
				ord[u++] = ord[i];
		n = u;
	}
	t->labels = s->labels;
	t->nlabels = s->nlabels;
	s->labels = NULL;
	t->nts = n;
	t->ts = malloc((n ? n : 1) * sizeof(*t->ts));
	t->duration_nanos = malloc((n ? n : 1) * sizeof(*t->duration_nanos));
	if (!t->ts || !t->duration_nanos)
		goto nomem;
	/* types in order of first appearance in time */
	for (size_t k = 0; k < s->ntypes; k++)
		remap[k] = UINT32_MAX;
	size_t ntypes = 0;
	for (size_t i = 0; i < n; i++) {
		size_t r = ord[i];
		t->ts[i] = s->ts[r];
		t->duration_nanos[i] = s->dur[r];
		for (size_t q = s->off[r]; q < s->off[r + 1]; q++)
			if (remap[s->ptype[q]] == UINT32_MAX)
				remap[s->ptype[q]] = (uint32_t)ntypes++;
	}
	t->types = calloc(ntypes ? ntypes : 1, sizeof(*t->types));
	t->values = calloc(ntypes * n + 1, sizeof(*t->values));
	t->present = calloc(ntypes * n + 1, 1);
	if (!t->types || !t->values || !t->present)
		goto nomem;
	for (size_t k = 0; k < s->ntypes; k++)
		if (remap[k] != UINT32_MAX) {
			t->types[remap[k]] = s->types[k];
			s->types[k].type = s->types[k].unit = NULL;
		}
	t->ntypes = ntypes;
	for (size_t i = 0; i < n; i++) {
		size_t r = ord[i];
		for (size_t q = s->off[r]; q < s->off[r + 1]; q++) {
			size_t k = remap[s->ptype[q]];
			t->values[k * n + i] = s->pval[q];
			t->present[k * n + i] = 1;
		}
	}
	free(ord);
	free(remap);
	return 0;
nomem:
	free(ord);
	free(remap);
	return PD_ENOMEM;
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
