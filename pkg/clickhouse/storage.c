/* storage.c: ClickHouse as a storage backend (storage.h): queries answered from
 * ClickHouse; appends and statistics handed to the spool, a local store given as
 * a storage, which forwards its WAL to ClickHouse through the sink (sink.c).
 * Series are selected as the local store selects them: the stored series list
 * (the series table, small) is read whole and every matcher is run over each
 * label set in C, so =, !=, =~ and !~ keep Prometheus's semantics (RE2 full
 * match, a missing label counting as ""). The matching series' ids then go into
 * the queries: timestamps, totals, a single profile rebuilt, and merges summed
 * by ClickHouse (GROUP BY stack), never by reading raw profiles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"
#include "profd/clickhouse.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/storage.h"

/* The backend's object: what queries read, and where appends go. */
struct chst {
	struct pd_storage st; /* handed out: {&ch_storage_ops, this} */
	struct pd_clickhouse *ch;
	struct pd_storage *spool;
	size_t max_profile;
};

static int unsupported(const char *what, struct pd_err *err)
{
	return pd_err_set(err, PD_EINCOMPAT,
	                  "%s is not available when profiles are stored in ClickHouse "
	                  "(--storage.clickhouse.url): use ClickHouse's own tools there",
	                  what);
}

static int oom(struct pd_err *err)
{
	return pd_err_set(err, PD_ENOMEM, "out of memory");
}

/* ---- the stored series that the matchers accept ------------------------------ */

struct chs {
	struct pd_labels **all; /* every stored series */
	size_t nall;
	size_t *idx;   /* into all: the matching ones, n of them */
	uint64_t *ids; /* their ids, parallel to idx */
	size_t n;
	int every;              /* every stored series matches */
	struct pd_u64map by_id; /* id -> index into idx + 1 */
	struct pd_storage_label *lp;    /* scratch: one series' labels */
	size_t lpcap;
};

static void chs_fini(struct chs *s)
{
	pd_clickhouse_series_free(s->all, s->nall);
	free(s->idx);
	free(s->ids);
	free(s->lp);
	pd_u64map_fini(&s->by_id);
}

/* The labels of all[i] as pairs in s->lp (borrowed from all[i]); its count. */
static size_t chs_pairs(struct chs *s, size_t i, int *nomem)
{
	size_t n = pd_labels_len(s->all[i]);
	if (n > s->lpcap) {
		struct pd_storage_label *np = realloc(s->lp, n * sizeof(*np));
		if (!np) {
			*nomem = 1;
			return 0;
		}
		s->lp = np;
		s->lpcap = n;
	}
	for (size_t k = 0; k < n; k++) {
		const struct pd_label *l = pd_labels_at(s->all[i], k);
		s->lp[k] = (struct pd_storage_label){l->name, l->value};
	}
	return n;
}

static int chs_load(struct chst *db, const struct pd_storage_matcher *m, size_t nm, struct chs *s,
                    struct pd_err *err)
{
	memset(s, 0, sizeof(*s));
	pd_u64map_init(&s->by_id);
	int rc = pd_clickhouse_series(db->ch, &s->all, &s->nall, err);
	if (rc)
		return rc;
	s->idx = malloc((s->nall + 1) * sizeof(*s->idx));
	s->ids = malloc((s->nall + 1) * sizeof(*s->ids));
	if (!s->idx || !s->ids)
		return oom(err);
	for (size_t i = 0; i < s->nall; i++) {
		int nomem = 0;
		size_t n = chs_pairs(s, i, &nomem);
		if (nomem)
			return oom(err);
		if (!pd_storage_labels_match(s->lp, n, m, nm))
			continue;
		s->idx[s->n] = i;
		s->ids[s->n] = pd_labels_hash(s->all[i]);
		if (pd_u64map_put(&s->by_id, s->ids[s->n], (uint32_t)s->n + 1))
			return oom(err);
		s->n++;
	}
	s->every = s->n == s->nall;
	return 0;
}

/* The position in s->idx of series id, or SIZE_MAX. */
static size_t chs_find(const struct chs *s, uint64_t id)
{
	uint32_t v;
	return pd_u64map_get(&s->by_id, id, &v) ? (size_t)v - 1 : SIZE_MAX;
}

/* The series id of a label set as ClickHouse keys it (pd_labels_hash). */
static int series_id(const struct pd_storage_label *labels, size_t n, uint64_t *id, struct pd_err *err)
{
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	struct pd_labels *ls = NULL;
	int rc = b ? 0 : oom(err);
	for (size_t i = 0; !rc && i < n; i++)
		if (pd_labels_builder_add(b, labels[i].name, labels[i].value))
			rc = oom(err);
	if (!rc)
		rc = pd_labels_builder_finish(b, &ls, err);
	if (!rc)
		*id = pd_labels_hash(ls);
	pd_labels_destroy(ls);
	pd_labels_builder_destroy(b);
	return rc;
}

/* ---- series and timestamps ------------------------------------------------------ */

static int series_cmp(const void *a, const void *b)
{
	const struct pd_storage_series *x = a, *y = b;
	return pd_storage_labels_cmp(x->labels, x->nlabels, y->labels, y->nlabels);
}

static int chq_select(struct chst *db, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
                   int64_t maxt, size_t limit, struct pd_storage_result **out, struct pd_err *err)
{
	*out = NULL;
	struct chs s;
	struct pd_clickhouse_point *pt = NULL;
	size_t np = 0;
	struct pd_storage_result *r = calloc(1, sizeof(*r));
	int rc = chs_load(db, m, nm, &s, err);
	if (!rc && !r)
		rc = oom(err);
	if (!rc && s.n)
		rc = pd_clickhouse_points(db->ch, s.every ? NULL : s.ids, s.n, mint, maxt,
		                          &pt, &np, err);
	if (!rc && !(r->series = calloc(s.n + 1, sizeof(*r->series))))
		rc = oom(err);
	for (size_t i = 0; !rc && i < np;) {
		size_t j = i + 1;
		while (j < np && pt[j].series_id == pt[i].series_id)
			j++;
		size_t k = chs_find(&s, pt[i].series_id);
		if (k != SIZE_MAX) {
			int nomem = 0;
			size_t nl = chs_pairs(&s, s.idx[k], &nomem);
			struct pd_storage_series *se = &r->series[r->nseries];
			se->labels = nomem ? NULL : pd_storage_labels_pack(s.lp, nl);
			se->nlabels = nl;
			se->ts = malloc((j - i) * sizeof(*se->ts));
			if (se->labels || se->ts)
				r->nseries++;
			if (!se->labels || !se->ts) {
				rc = oom(err);
				break;
			}
			for (size_t x = i; x < j; x++)
				se->ts[se->nts++] = pt[x].ts;
		}
		i = j;
	}
	free(pt);
	chs_fini(&s);
	if (rc) {
		pd_err_prefix(err, "clickhouse");
		pd_storage_result_destroy(r);
		return rc;
	}
	if (r->nseries > 1)
		qsort(r->series, r->nseries, sizeof(*r->series), series_cmp);
	while (limit && r->nseries > limit) {
		r->nseries--;
		free(r->series[r->nseries].labels);
		free(r->series[r->nseries].ts);
	}
	*out = r;
	return 0;
}

static int chq_labels(struct chst *db, const char *name, const struct pd_storage_matcher *m, size_t nm,
                   int64_t mint, int64_t maxt, char ***out, size_t *n, struct pd_err *err)
{
	*out = NULL;
	*n = 0;
	struct chs s;
	uint64_t *live = NULL;
	size_t nlive = 0;
	char **acc = NULL;
	size_t nacc = 0, cap = 0;
	int rc = chs_load(db, m, nm, &s, err);
	if (!rc)
		rc =
		    pd_clickhouse_series_in_range(db->ch, mint, maxt, &live, &nlive, err);
	for (size_t i = 0; !rc && i < nlive; i++) {
		size_t k = chs_find(&s, live[i]);
		if (k == SIZE_MAX)
			continue;
		const struct pd_labels *ls = s.all[s.idx[k]];
		for (size_t x = 0; !rc && x < pd_labels_len(ls); x++) {
			const struct pd_label *l = pd_labels_at(ls, x);
			const char *v =
			    name ? (strcmp(l->name, name) == 0 ? l->value : NULL) : l->name;
			if (!v)
				continue;
			if (nacc == cap) {
				size_t nc = cap ? cap * 2 : 32;
				char **na = realloc(acc, nc * sizeof(*na));
				if (!na) {
					rc = oom(err);
					break;
				}
				acc = na;
				cap = nc;
			}
			if (!(acc[nacc] = strdup(v)))
				rc = oom(err);
			else
				nacc++;
		}
	}
	free(live);
	chs_fini(&s);
	if (rc) {
		pd_err_prefix(err, "clickhouse");
		pd_storage_strings_free(acc, nacc);
		return rc;
	}
	pd_storage_strings_sort_unique(acc, &nacc);
	*out = acc;
	*n = nacc;
	return 0;
}

/* ---- one profile, merges ------------------------------------------------------ */

static int chq_read(struct chst *db, const struct pd_storage_label *labels, size_t n, int64_t t,
                 uint8_t **out, size_t *len, struct pd_err *err)
{
	*out = NULL;
	*len = 0;
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	struct pd_labels *ls = NULL;
	struct pd_pprof_profile *p = NULL;
	int rc = b ? 0 : oom(err);
	for (size_t i = 0; !rc && i < n; i++)
		if (pd_labels_builder_add(b, labels[i].name, labels[i].value))
			rc = oom(err);
	if (!rc)
		rc = pd_labels_builder_finish(b, &ls, err);
	if (!rc)
		rc = pd_clickhouse_profile(db->ch, ls, t, &p, err);
	if (rc == PD_ENOTFOUND)
		pd_err_set(err, PD_ENOTFOUND, "no profile at %lld for this series", (long long)t);
	if (!rc)
		rc = pd_pprof_encode(p, 0, out, len, err);
	if (!rc && *len > db->max_profile) {
		rc = pd_err_set(err, PD_ETOOBIG,
		                "the profile at %lld is %zu bytes, over the store's limit of %zu",
		                (long long)t, *len, db->max_profile);
		free(*out);
		*out = NULL;
		*len = 0;
	}
	pd_pprof_destroy(p);
	pd_labels_destroy(ls);
	pd_labels_builder_destroy(b);
	return rc;
}

static int chq_merge_ranges(struct chst *db, const struct pd_storage_merge_range *r, size_t n,
                         pd_storage_merge_fn emit, void *ctx, struct pd_err *err)
{
	struct pd_clickhouse_range rg[PD_CLICKHOUSE_MERGE_MAX_RANGES];
	int rc = 0;
	for (size_t i = 0; !rc && i < n;) {
		size_t k = 0;
		for (; !rc && i < n && k < PD_CLICKHOUSE_MERGE_MAX_RANGES; i++) {
			if (r[i].mint > r[i].maxt)
				continue;
			rg[k].from_ms = r[i].mint;
			rg[k].to_ms = r[i].maxt;
			rc = series_id(r[i].labels, r[i].nlabels, &rg[k].series_id, err);
			k++;
		}
		if (rc || !k)
			break;
		struct pd_pprof_profile *p = NULL;
		struct pd_clickhouse_merge_info info;
		rc = pd_clickhouse_merge_ranges(db->ch, rg, k, &p, &info, err);
		if (rc == PD_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		rc = emit(ctx, p, info.profiles, info.first_ms, info.last_ms, info.bytes);
	}
	return rc;
}

/* ---- totals --------------------------------------------------------------------- */

static int totals_cmp(const void *a, const void *b)
{
	const struct pd_storage_totals *x = a, *y = b;
	return pd_storage_labels_cmp(x->labels, x->nlabels, y->labels, y->nlabels);
}

int ch_totals_series(struct pd_storage_totals_result *r, const struct pd_storage_label *lp, size_t nl,
                          const struct pd_clickhouse_total *rows, size_t nrows,
                          struct pd_storage_totals *o)
{
	memset(o, 0, sizeof(*o));
	o->labels = pd_storage_totals_alloc(r, (nl + 1) * sizeof(*o->labels));
	if (!o->labels)
		return PD_ENOMEM;
	for (size_t i = 0; i < nl; i++) {
		o->labels[i].name = pd_storage_totals_strdup(r, lp[i].name);
		o->labels[i].value = pd_storage_totals_strdup(r, lp[i].value);
		if (!o->labels[i].name || !o->labels[i].value)
			return PD_ENOMEM;
	}
	o->nlabels = nl;
	/* the sample types in order of first appearance */
	size_t maxt = 0;
	for (size_t i = 0; i < nrows; i++)
		maxt += rows[i].ntypes;
	o->types = pd_storage_totals_alloc(r, (maxt + 1) * sizeof(*o->types));
	if (!o->types)
		return PD_ENOMEM;
	for (size_t i = 0; i < nrows; i++)
		for (size_t t = 0; t < rows[i].ntypes; t++) {
			size_t x = 0;
			while (x < o->ntypes && (strcmp(o->types[x].type, rows[i].types[t]) ||
			                         strcmp(o->types[x].unit, rows[i].units[t])))
				x++;
			if (x < o->ntypes)
				continue;
			/* borrowed from rows until copied below */
			o->types[o->ntypes].type = (char *)rows[i].types[t];
			o->types[o->ntypes++].unit = (char *)rows[i].units[t];
		}
	o->nts = nrows;
	o->ts = pd_storage_totals_alloc(r, (nrows + 1) * sizeof(int64_t));
	o->duration_nanos = pd_storage_totals_alloc(r, (nrows + 1) * sizeof(int64_t));
	o->values = pd_storage_totals_alloc(r, (o->ntypes * nrows + 1) * sizeof(int64_t));
	o->present = pd_storage_totals_alloc(r, o->ntypes * nrows + 1);
	if (!o->ts || !o->duration_nanos || !o->values || !o->present)
		return PD_ENOMEM;
	memset(o->values, 0, o->ntypes * nrows * sizeof(int64_t));
	memset(o->present, 0, o->ntypes * nrows);
	for (size_t i = 0; i < nrows; i++) {
		o->ts[i] = rows[i].ts;
		o->duration_nanos[i] = rows[i].duration_nanos;
		for (size_t t = 0; t < rows[i].ntypes; t++)
			for (size_t x = 0; x < o->ntypes; x++)
				if (!strcmp(o->types[x].type, rows[i].types[t]) &&
				    !strcmp(o->types[x].unit, rows[i].units[t])) {
					o->values[x * nrows + i] = rows[i].totals[t];
					o->present[x * nrows + i] = 1;
					break;
				}
	}
	for (size_t x = 0; x < o->ntypes; x++) {
		o->types[x].type = pd_storage_totals_strdup(r, o->types[x].type);
		o->types[x].unit = pd_storage_totals_strdup(r, o->types[x].unit);
		if (!o->types[x].type || !o->types[x].unit)
			return PD_ENOMEM;
	}
	return 0;
}

static int chq_select_totals(struct chst *db, const struct pd_storage_matcher *m, size_t nm,
                          int64_t mint, int64_t maxt, size_t limit,
                          struct pd_storage_totals_result **out, struct pd_err *err)
{
	*out = NULL;
	struct chs s;
	struct pd_clickhouse_totals *t = NULL;
	struct pd_storage_totals_result *r = calloc(1, sizeof(*r));
	int rc = chs_load(db, m, nm, &s, err);
	if (!rc && !r)
		rc = oom(err);
	if (!rc && s.n)
		rc = pd_clickhouse_totals_read(db->ch, s.every ? NULL : s.ids, s.n, mint,
		                               maxt, &t, err);
	if (!rc && !(r->series = calloc(s.n + 1, sizeof(*r->series))))
		rc = oom(err);
	for (size_t i = 0; !rc && t && i < t->n;) {
		size_t j = i + 1;
		while (j < t->n && t->rows[j].series_id == t->rows[i].series_id)
			j++;
		size_t k = chs_find(&s, t->rows[i].series_id);
		if (k != SIZE_MAX) {
			int nomem = 0;
			size_t nl = chs_pairs(&s, s.idx[k], &nomem);
			if (nomem || ch_totals_series(r, s.lp, nl, &t->rows[i], j - i,
			                                   &r->series[r->nseries]))
				rc = oom(err);
			else
				r->nseries++;
		}
		i = j;
	}
	pd_clickhouse_totals_destroy(t);
	chs_fini(&s);
	if (rc) {
		pd_err_prefix(err, "clickhouse");
		pd_storage_totals_result_destroy(r);
		return rc;
	}
	if (r->nseries > 1)
		qsort(r->series, r->nseries, sizeof(*r->series), totals_cmp);
	if (limit && r->nseries > limit)
		r->nseries = limit; /* the rest is in the arena, freed with r */
	*out = r;
	return 0;
}


/* ---- the storage interface ------------------------------------------------------ */

static int op_select(void *impl, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
                     int64_t maxt, size_t limit, struct pd_storage_result **out,
                     struct pd_err *err)
{
	return chq_select(impl, m, nm, mint, maxt, limit, out, err);
}

static int op_read(void *impl, const struct pd_storage_label *labels, size_t n, int64_t t,
                   uint8_t **out, size_t *len, struct pd_err *err)
{
	return chq_read(impl, labels, n, t, out, len, err);
}

static int op_select_totals(void *impl, const struct pd_storage_matcher *m, size_t nm,
                            int64_t mint, int64_t maxt, size_t limit,
                            struct pd_storage_totals_result **out, struct pd_err *err)
{
	return chq_select_totals(impl, m, nm, mint, maxt, limit, out, err);
}

static int op_merge_ranges(void *impl, const struct pd_storage_merge_range *r, size_t n,
                           pd_storage_merge_fn emit, void *ctx, struct pd_err *err)
{
	return chq_merge_ranges(impl, r, n, emit, ctx, err);
}

static int op_labels(void *impl, const char *name, const struct pd_storage_matcher *m,
                     size_t nm, int64_t mint, int64_t maxt, char ***out, size_t *n,
                     struct pd_err *err)
{
	return chq_labels(impl, name, m, nm, mint, maxt, out, n, err);
}

/* appends go to the spool, whose WAL is forwarded to ClickHouse */
static struct pd_storage_appender *op_appender(void *impl)
{
	struct chst *c = impl;
	return pd_storage_appender(c->spool);
}

static void copy_name(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

static void op_stats(void *impl, struct pd_storage_stats *st)
{
	struct chst *c = impl;
	pd_storage_stats(c->spool, st);
	st->remote = 1;
	copy_name(st->remote_database, sizeof(st->remote_database), pd_clickhouse_database(c->ch));
	copy_name(st->remote_cluster, sizeof(st->remote_cluster), pd_clickhouse_cluster(c->ch));
}

static int op_blocks(void *impl, struct pd_storage_block_info **out, size_t *n,
                     struct pd_err *err)
{
	(void)impl; /* no blocks: ClickHouse keeps the profiles */
	*n = 0;
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : oom(err);
}

static int op_delete(void *impl, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
                     int64_t maxt, struct pd_err *err)
{
	(void)impl, (void)m, (void)nm, (void)mint, (void)maxt;
	return unsupported("deleting series", err);
}

static int op_clean_tombstones(void *impl, struct pd_err *err)
{
	(void)impl;
	return unsupported("cleaning tombstones", err);
}

static int op_snapshot(void *impl, int skip_head, char name[PD_STORAGE_SNAPSHOT_NAME_MAX],
                       struct pd_err *err)
{
	(void)impl, (void)skip_head;
	name[0] = '\0';
	return unsupported("a snapshot", err);
}

static const struct pd_storage_ops ch_storage_ops = {
	.select = op_select,
	.read = op_read,
	.select_totals = op_select_totals,
	.merge_ranges = op_merge_ranges,
	.labels = op_labels,
	.appender = op_appender,
	.stats = op_stats,
	.blocks = op_blocks,
	.delete_series = op_delete,
	.clean_tombstones = op_clean_tombstones,
	.snapshot = op_snapshot,
	.merge_batch = PD_CLICKHOUSE_MERGE_MAX_RANGES,
	.kind = "clickhouse",
};

int pd_clickhouse_storage_create(struct pd_storage **out, struct pd_clickhouse *ch,
                                 struct pd_storage *spool, size_t max_profile,
                                 struct pd_err *err)
{
	struct chst *c = calloc(1, sizeof(*c));
	*out = NULL;
	if (!c)
		return oom(err);
	c->st = (struct pd_storage){&ch_storage_ops, c};
	c->ch = ch;
	c->spool = spool;
	c->max_profile = max_profile;
	*out = &c->st;
	return 0;
}

void pd_clickhouse_storage_destroy(struct pd_storage *st)
{
	if (st)
		free(st->impl);
}
