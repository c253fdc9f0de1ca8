/* querier.c: label-matcher queries over the head and the blocks. For each
 * source, matchers that reject the empty value narrow the candidates through
 * postings (an equality matcher's own list, otherwise the union over the label
 * values they accept; intersected across matchers); every candidate is then
 * checked against all matchers, a missing label counting as "". Series are
 * merged across sources by label set. Listing reads timestamp chunks only. */
#include <stdlib.h>
#include <string.h>

#include "tsdb_int.h"

/* out = a ∪ b (both ascending, unique); a is freed. */
static int union_refs(uint64_t **a, size_t *na, const uint64_t *b, size_t nb)
{
	uint64_t *o = malloc((*na + nb + 1) * sizeof(*o));
	if (!o)
		return PD_ENOMEM;
	size_t i = 0, j = 0, k = 0;
	while (i < *na || j < nb) {
		if (j == nb || (i < *na && (*a)[i] < b[j]))
			o[k++] = (*a)[i++];
		else if (i == *na || b[j] < (*a)[i])
			o[k++] = b[j++];
		else {
			o[k++] = (*a)[i++];
			j++;
		}
	}
	free(*a);
	*a = o;
	*na = k;
	return 0;
}

/* a = a ∩ b, in place. */
static void intersect_refs(uint64_t *a, size_t *na, const uint64_t *b, size_t nb)
{
	size_t i = 0, j = 0, k = 0;
	while (i < *na && j < nb) {
		if (a[i] < b[j])
			i++;
		else if (b[j] < a[i])
			j++;
		else {
			a[k++] = a[i++];
			j++;
		}
	}
	*na = k;
}

int tsdb_candidates(const struct source *src, const struct pd_storage_matcher *m, size_t nm,
		      uint64_t **out, size_t *n, struct pd_err *err)
{
	uint64_t *cur = NULL;
	size_t ncur = 0;
	int have = 0, rc = 0;
	for (size_t k = 0; k < nm && !rc; k++) {
		if (m[k].matches(m[k].ctx, ""))
			continue;
		char **vals = NULL;
		size_t nv = 0;
		uint64_t *u = NULL;
		size_t nu = 0;
		const char *eq = pd_storage_matcher_equal(&m[k]);
		if (eq) {
			/* one value: its postings, without listing the label's values */
			if ((rc = src->ops->postings(src->r, m[k].name, eq, &u, &nu, err)))
				break;
		} else if ((rc = src->ops->label_values(src->r, m[k].name, &vals, &nv, err)))
			break;
		for (size_t v = 0; v < nv && !rc; v++) {
			if (!m[k].matches(m[k].ctx, vals[v]))
				continue;
			uint64_t *p;
			size_t np;
			if ((rc = src->ops->postings(src->r, m[k].name, vals[v], &p, &np, err)))
				break;
			if (union_refs(&u, &nu, p, np))
				rc = pd_err_set(err, PD_ENOMEM, "out of memory merging postings");
			free(p);
		}
		pd_storage_strings_free(vals, nv);
		if (rc) {
			free(u);
			break;
		}
		if (!have) {
			cur = u;
			ncur = nu;
			have = 1;
		} else {
			intersect_refs(cur, &ncur, u, nu);
			free(u);
		}
	}
	if (rc) {
		free(cur);
		return rc;
	}
	if (!have)
		return src->ops->all_series(src->r, out, n, err);
	*out = cur;
	*n = ncur;
	return 0;
}

int tsdb_labels_match(const struct pd_lpair *l, size_t n, const struct pd_storage_matcher *m,
			size_t nm)
{
	return pd_storage_labels_match((const struct pd_storage_label *)(const void *)l, n, m, nm);
}

int tsdb_matching_refs(const struct source *src, const struct pd_storage_matcher *m, size_t nm,
		       uint64_t **out, size_t *n, struct pd_err *err)
{
	uint64_t *refs;
	size_t nr, k = 0;
	int rc = tsdb_candidates(src, m, nm, &refs, &nr, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < nr && !rc; i++) {
		struct pd_lpair *l;
		struct rchunk *c;
		size_t nl, nc;
		int r2 = src->ops->series(src->r, refs[i], &l, &nl, &c, &nc, err);
		if (r2 == PD_ENOTFOUND)
			continue;
		if (r2) {
			rc = r2;
			break;
		}
		if (tsdb_labels_match(l, nl, m, nm))
			refs[k++] = refs[i];
		free(l);
		free(c);
	}
	if (rc) {
		free(refs);
		return rc;
	}
	*out = refs;
	*n = k;
	return 0;
}

/* ---- results --------------------------------------------------------------- */

struct rs {
	struct pd_storage_series *v;
	size_t n, cap;
	uint64_t *hashes;
	size_t *slots; /* index + 1 */
	size_t nslots;
	size_t *tcap; /* capacity of each series' ts */
};

/* Finds the result series with these labels, or adds it when may_add is set
 * (PD_ENOTFOUND otherwise). */
static int rs_find_or_add(struct rs *r, const struct pd_lpair *l, size_t nl, int may_add,
			  size_t *idx)
{
	uint64_t h = labels_hash(l, nl);
	if ((r->n + 1) * 2 > r->nslots) {
		size_t ns = r->nslots ? r->nslots * 2 : 64;
		size_t *sl = calloc(ns, sizeof(*sl));
		if (!sl)
			return PD_ENOMEM;
		for (size_t i = 0; i < r->n; i++) {
			size_t j = r->hashes[i] & (ns - 1);
			while (sl[j])
				j = (j + 1) & (ns - 1);
			sl[j] = i + 1;
		}
		free(r->slots);
		r->slots = sl;
		r->nslots = ns;
	}
	size_t j = h & (r->nslots - 1);
	while (r->slots[j]) {
		size_t i = r->slots[j] - 1;
		if (r->hashes[i] == h &&
		    labels_cmp((const struct pd_lpair *)(const void *)r->v[i].labels, r->v[i].nlabels, l,
			       nl) == 0) {
			*idx = i;
			return 0;
		}
		j = (j + 1) & (r->nslots - 1);
	}
	if (!may_add)
		return PD_ENOTFOUND;
	if (r->n == r->cap) {
		size_t c = r->cap ? r->cap * 2 : 64;
		struct pd_storage_series *nv = realloc(r->v, c * sizeof(*nv));
		if (!nv)
			return PD_ENOMEM;
		r->v = nv;
		uint64_t *nh = realloc(r->hashes, c * sizeof(*nh));
		if (!nh)
			return PD_ENOMEM;
		r->hashes = nh;
		size_t *nt = realloc(r->tcap, c * sizeof(*nt));
		if (!nt)
			return PD_ENOMEM;
		r->tcap = nt;
		r->cap = c;
	}
	struct pd_storage_label *lab = tsdb_labels_pack(l, nl);
	if (!lab)
		return PD_ENOMEM;
	r->v[r->n] = (struct pd_storage_series){lab, nl, NULL, 0};
	r->hashes[r->n] = h;
	r->tcap[r->n] = 0;
	r->slots[j] = r->n + 1;
	*idx = r->n++;
	return 0;
}

static int rs_push_ts(struct rs *r, size_t i, int64_t t)
{
	struct pd_storage_series *s = &r->v[i];
	if (s->nts == r->tcap[i]) {
		size_t c = r->tcap[i] ? r->tcap[i] * 2 : 16;
		int64_t *nt = realloc(s->ts, c * sizeof(*nt));
		if (!nt)
			return PD_ENOMEM;
		s->ts = nt;
		r->tcap[i] = c;
	}
	s->ts[s->nts++] = t;
	return 0;
}

static int series_cmp(const void *a, const void *b)
{
	const struct pd_storage_series *x = a, *y = b;
	return labels_cmp((const struct pd_lpair *)(const void *)x->labels, x->nlabels,
			  (const struct pd_lpair *)(const void *)y->labels, y->nlabels);
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Counts and logs a damaged chunk that a read met. */
void tsdb_chunk_damaged(struct pd_tsdb *db, const struct source *src, const char *what,
			  const struct pd_err *err)
{
	__atomic_fetch_add(&db->chunks_damaged, 1, __ATOMIC_RELAXED);
	pd_log_warn("tsdb", what, "source=%s err=%s",
	            src->ops == &block_reader_ops ? pd_block_dir(src->r) : "head",
	            err ? err->msg : "a chunk is damaged");
}

/* Adds the timestamps in [mint, maxt] of one series of one source. A damaged
 * timestamp chunk is left out (and counted): the series' other chunks and every
 * other series still answer. */
static int collect_series(struct pd_tsdb *db, const struct source *src, uint64_t ref,
			  const struct pd_storage_matcher *m, size_t nm, int64_t mint, int64_t maxt,
			  struct rs *res, size_t limit, struct pd_err *err)
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
	size_t ntomb = 0;
	if (!tsdb_labels_match(l, nl, m, nm))
		goto out;
	if ((rc = src->ops->tombstones(src->r, ref, &tomb, &ntomb, err)))
		goto out;
	size_t idx = SIZE_MAX;
	for (size_t k = 0; k < nc && !rc; k++) {
		if (c[k].maxt < mint || c[k].mint > maxt)
			continue;
		uint8_t *tb;
		size_t tl;
		if ((rc = src->ops->chunk_ts(src->r, ref, &c[k], &tb, &tl, err))) {
			if (rc != PD_ECORRUPT)
				break;
			tsdb_chunk_damaged(db, src, "listing timestamps: timestamp chunk left out", err);
			rc = 0;
			continue;
		}
		struct pd_chunkenc_ts_iter it;
		pd_chunkenc_ts_iter_init(&it, tb, tl);
		while (!rc && pd_chunkenc_ts_iter_next(&it)) {
			int64_t t = pd_chunkenc_ts_iter_at(&it);
			if (t < mint || t > maxt || (ntomb && tomb_covers(tomb, ntomb, t)))
				continue;
			if (idx == SIZE_MAX) {
				/* past the limit, series already in the result still get the
				 * timestamps of this source; new ones are left out */
				int r2 = rs_find_or_add(res, l, nl, !limit || res->n < limit, &idx);
				if (r2 == PD_ENOTFOUND)
					break;
				if (r2) {
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
					break;
				}
			}
			if (rs_push_ts(res, idx, t))
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		}
		if (!rc && pd_chunkenc_ts_iter_err(&it)) {
			struct pd_err e2;
			pd_err_set(&e2, PD_ECORRUPT, "series %llu: timestamp chunk of %lld..%lld does not decode",
				   (unsigned long long)ref, (long long)c[k].mint, (long long)c[k].maxt);
			tsdb_chunk_damaged(db, src, "listing timestamps: the rest of a timestamp chunk left out",
				      &e2);
		}
		free(tb);
	}
out:
	free(tomb);
	free(l);
	free(c);
	return rc;
}

int pd_tsdb_select(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
		   int64_t maxt, size_t limit, struct pd_storage_result **out, struct pd_err *err)
{
	struct rs res = {0};
	struct source *src = NULL;
	size_t nsrc = 0;
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
			rc = collect_series(db, &src[s], refs[i], m, nm, mint, maxt, &res, limit, err);
		free(refs);
	}
	pthread_rwlock_unlock(&db->blocks_mu);
	free(src);
	free(res.slots);
	free(res.hashes);
	free(res.tcap);
	struct pd_storage_result *r = calloc(1, sizeof(*r));
	if (!rc && !r)
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	if (rc) {
		for (size_t i = 0; i < res.n; i++) {
			free(res.v[i].labels);
			free(res.v[i].ts);
		}
		free(res.v);
		free(r);
		return rc;
	}
	for (size_t i = 0; i < res.n; i++) {
		/* sources are read oldest first, but a block and the head may interleave
		 * after a restart: keep timestamps sorted and unique */
		struct pd_storage_series *s = &res.v[i];
		int sorted = 1;
		for (size_t k = 1; k < s->nts && sorted; k++)
			sorted = s->ts[k - 1] < s->ts[k];
		if (!sorted) {
			qsort(s->ts, s->nts, sizeof(*s->ts), i64_cmp);
			size_t u = 0;
			for (size_t k = 0; k < s->nts; k++)
				if (!u || s->ts[u - 1] != s->ts[k])
					s->ts[u++] = s->ts[k];
			s->nts = u;
		}
	}
	if (res.n > 1)
		qsort(res.v, res.n, sizeof(*res.v), series_cmp);
	r->series = res.v;
	r->nseries = res.n;
	*out = r;
	return 0;
}

/* Finds the series with exactly these labels in one source. */
static int find_series(const struct source *src, const struct pd_lpair *l, size_t n, uint64_t *ref,
		       struct pd_err *err)
{
	uint64_t *cur = NULL;
	size_t ncur = 0;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t *p;
		size_t np;
		if ((rc = src->ops->postings(src->r, l[i].name, l[i].value, &p, &np, err)))
			break;
		if (i == 0) {
			cur = p;
			ncur = np;
			continue;
		}
		intersect_refs(cur, &ncur, p, np);
		free(p);
	}
	for (size_t i = 0; !rc && i < ncur; i++) {
		struct pd_lpair *sl;
		struct rchunk *c;
		size_t nl, nc;
		if (src->ops->series(src->r, cur[i], &sl, &nl, &c, &nc, err))
			continue;
		int same = labels_cmp(sl, nl, l, n) == 0;
		free(sl);
		free(c);
		if (same) {
			*ref = cur[i];
			free(cur);
			return 0;
		}
	}
	free(cur);
	return rc ? rc : PD_ENOTFOUND;
}

static int read_from(const struct source *src, uint64_t ref, int64_t t, size_t max_profile,
		     uint8_t **out, size_t *len, struct pd_err *err)
{
	struct pd_lpair *l;
	struct rchunk *c;
	size_t nl, nc;
	struct tomb_entry *tomb = NULL;
	size_t ntomb = 0;
	int rc = src->ops->series(src->r, ref, &l, &nl, &c, &nc, err);
	if (rc)
		return rc;
	if ((rc = src->ops->tombstones(src->r, ref, &tomb, &ntomb, err)))
		goto out;
	/* a deleted profile is not there */
	rc = tomb_covers(tomb, ntomb, t) ? PD_ENOTFOUND : 0;
	if (rc)
		goto out;
	rc = PD_ENOTFOUND;
	for (size_t k = 0; k < nc && rc == PD_ENOTFOUND; k++) {
		if (t < c[k].mint || t > c[k].maxt)
			continue;
		uint8_t *tb;
		size_t tl;
		int r2 = src->ops->chunk_ts(src->r, ref, &c[k], &tb, &tl, err);
		if (r2) {
			rc = r2;
			break;
		}
		struct pd_chunkenc_ts_iter it;
		pd_chunkenc_ts_iter_init(&it, tb, tl);
		size_t i = 0;
		while (pd_chunkenc_ts_iter_next(&it)) {
			if (pd_chunkenc_ts_iter_at(&it) == t) {
				rc = src->ops->chunk_value(src->r, ref, &c[k], i, t, tb, tl, max_profile,
							   out, len, err);
				break;
			}
			i++;
		}
		free(tb);
	}
out:
	free(tomb);
	free(l);
	free(c);
	return rc;
}

int pd_tsdb_read(struct pd_tsdb *db, const struct pd_storage_label *labels, size_t n, int64_t t,
		 uint8_t **out, size_t *len, struct pd_err *err)
{
	struct source *src = NULL;
	size_t nsrc = 0;
	const struct pd_lpair *l = (const struct pd_lpair *)(const void *)labels;
	*out = NULL;
	pthread_rwlock_rdlock(&db->blocks_mu);
	int rc = db_sources(db, t, t, &src, &nsrc, err);
	if (!rc)
		rc = PD_ENOTFOUND;
	for (size_t s = 0; s < nsrc && rc == PD_ENOTFOUND; s++) {
		uint64_t ref;
		int r2 = find_series(&src[s], l, n, &ref, err);
		if (r2 == PD_ENOTFOUND)
			continue;
		if (r2) {
			rc = r2;
			break;
		}
		rc = read_from(&src[s], ref, t, db->o.max_profile, out, len, err);
		if (rc == PD_ECORRUPT) {
			pd_err_prefix(err, "the profile at %lld is in a damaged chunk", (long long)t);
			tsdb_chunk_damaged(db, &src[s], "reading a profile", err);
		}
	}
	pthread_rwlock_unlock(&db->blocks_mu);
	free(src);
	if (rc == PD_ENOTFOUND)
		pd_err_set(err, PD_ENOTFOUND, "no profile at %lld for this series", (long long)t);
	return rc;
}

static int collect_strings(char ***acc, size_t *n, size_t *cap, char **add, size_t nadd)
{
	for (size_t i = 0; i < nadd; i++) {
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 32;
			char **nv = realloc(*acc, c * sizeof(*nv));
			if (!nv)
				return PD_ENOMEM;
			*acc = nv;
			*cap = c;
		}
		(*acc)[(*n)++] = add[i];
		add[i] = NULL;
	}
	return 0;
}

/* names (name == NULL) or values of name, from the matching series or all. */
static int labels_list(struct pd_tsdb *db, const char *name, const struct pd_storage_matcher *m,
		       size_t nm, int64_t mint, int64_t maxt, char ***out, size_t *n,
		       struct pd_err *err)
{
	char **acc = NULL;
	size_t nacc = 0, cap = 0;
	int rc = 0;
	*out = NULL;
	*n = 0;
	if (nm) {
		struct pd_storage_result *r;
		if ((rc = pd_tsdb_select(db, m, nm, mint, maxt, 0, &r, err)))
			return rc;
		for (size_t i = 0; i < r->nseries && !rc; i++)
			for (size_t k = 0; k < r->series[i].nlabels && !rc; k++) {
				const struct pd_storage_label *lb = &r->series[i].labels[k];
				const char *s = name ? (strcmp(lb->name, name) == 0 ? lb->value : NULL)
						     : lb->name;
				char *d;
				if (!s)
					continue;
				if (!(d = strdup(s)) || collect_strings(&acc, &nacc, &cap, &d, 1)) {
					free(d);
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				}
			}
		pd_storage_result_destroy(r);
	} else {
		struct source *src = NULL;
		size_t nsrc = 0;
		pthread_rwlock_rdlock(&db->blocks_mu);
		rc = db_sources(db, mint, maxt, &src, &nsrc, err);
		for (size_t s = 0; s < nsrc && !rc; s++) {
			char **v;
			size_t nv;
			rc = name ? src[s].ops->label_values(src[s].r, name, &v, &nv, err)
				  : src[s].ops->label_names(src[s].r, &v, &nv, err);
			if (rc)
				break;
			if (collect_strings(&acc, &nacc, &cap, v, nv))
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			pd_storage_strings_free(v, nv);
		}
		pthread_rwlock_unlock(&db->blocks_mu);
		free(src);
	}
	if (rc) {
		pd_storage_strings_free(acc, nacc);
		return rc;
	}
	pd_storage_strings_sort_unique(acc, &nacc);
	*out = acc;
	*n = nacc;
	return 0;
}

int pd_tsdb_label_names(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm,
			int64_t mint, int64_t maxt, char ***out, size_t *n, struct pd_err *err)
{
	return labels_list(db, NULL, m, nm, mint, maxt, out, n, err);
}

int pd_tsdb_label_values(struct pd_tsdb *db, const char *name, const struct pd_storage_matcher *m,
			 size_t nm, int64_t mint, int64_t maxt, char ***out, size_t *n,
			 struct pd_err *err)
{
	return labels_list(db, name, m, nm, mint, maxt, out, n, err);
}

/* ---- merging a series' profiles ------------------------------------------------------ */

struct merge_ctx {
	pd_storage_merge_fn emit;
	void *ctx;
	const int64_t *ts; /* the chunk's timestamps */
};

static int merge_emit(void *c, struct pd_pprof_profile *p, size_t first, size_t count,
		      size_t bytes)
{
	struct merge_ctx *m = c;
	return m->emit(m->ctx, p, count, m->ts[first], m->ts[first + count - 1], bytes);
}

/* Merges the profiles of series ref in src within [mint, maxt]. */
static int merge_from(const struct source *src, uint64_t ref, int64_t mint, int64_t maxt,
		      size_t max_profile, pd_storage_merge_fn emit, void *ctx, struct pd_err *err)
{
	struct pd_lpair *l;
	struct rchunk *c;
	size_t nl, nc;
	struct tomb_entry *tomb = NULL;
	size_t ntomb = 0;
	int rc = src->ops->series(src->r, ref, &l, &nl, &c, &nc, err);
	if (rc)
		return rc;
	rc = src->ops->tombstones(src->r, ref, &tomb, &ntomb, err);
	for (size_t k = 0; k < nc && !rc; k++) {
		if (c[k].maxt < mint || c[k].mint > maxt)
			continue;
		uint8_t *tb;
		size_t tl;
		if ((rc = src->ops->chunk_ts(src->r, ref, &c[k], &tb, &tl, err)))
			break;
		int64_t *ts = malloc((c[k].count + 1) * sizeof(*ts));
		size_t n = 0, from = SIZE_MAX, to = 0;
		struct pd_chunkenc_ts_iter it;
		pd_chunkenc_ts_iter_init(&it, tb, tl);
		while (ts && n <= c[k].count && pd_chunkenc_ts_iter_next(&it)) {
			int64_t t = pd_chunkenc_ts_iter_at(&it);
			if (n == c[k].count)
				break;
			ts[n] = t;
			if (t >= mint && t <= maxt) {
				if (from == SIZE_MAX)
					from = n;
				to = n + 1;
			}
			n++;
		}
		if (!ts)
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		else if (pd_chunkenc_ts_iter_err(&it))
			rc = pd_err_set(err, PD_ECORRUPT, "a timestamp chunk is damaged");
		else if (from != SIZE_MAX) {
			/* runs of profiles that no tombstone deletes, merged one run at a time */
			struct merge_ctx m = {emit, ctx, ts};
			for (size_t i = from; i < to && !rc;) {
				while (i < to && tomb_covers(tomb, ntomb, ts[i]))
					i++;
				size_t j = i;
				while (j < to && !tomb_covers(tomb, ntomb, ts[j]))
					j++;
				if (j > i)
					rc = src->ops->chunk_merge(src->r, ref, &c[k], i, j, ts, tb, tl,
								   max_profile, merge_emit, &m, err);
				i = j;
			}
		}
		free(tb);
		free(ts);
	}
	free(tomb);
	free(l);
	free(c);
	return rc;
}

int pd_tsdb_merge(struct pd_tsdb *db, const struct pd_storage_label *labels, size_t n, int64_t mint,
		  int64_t maxt, pd_storage_merge_fn emit, void *ctx, struct pd_err *err)
{
	struct source *src = NULL;
	size_t nsrc = 0;
	const struct pd_lpair *l = (const struct pd_lpair *)(const void *)labels;
	pthread_rwlock_rdlock(&db->blocks_mu);
	int rc = db_sources(db, mint, maxt, &src, &nsrc, err);
	/* oldest first, as db_sources gives them: blocks, then the head */
	for (size_t s = 0; s < nsrc && !rc; s++) {
		uint64_t ref;
		int64_t lo = mint > src[s].mint ? mint : src[s].mint;
		int64_t hi = maxt < src[s].maxt ? maxt : src[s].maxt;
		int r2 = find_series(&src[s], l, n, &ref, err);
		if (r2 == PD_ENOTFOUND)
			continue;
		if ((rc = r2))
			break;
		rc = merge_from(&src[s], ref, lo, hi, db->o.max_profile, emit, ctx, err);
		if (rc == PD_ECORRUPT) {
			pd_err_prefix(err, "a profile in %lld..%lld is in a damaged chunk", (long long)lo,
				      (long long)hi);
			tsdb_chunk_damaged(db, &src[s], "merging profiles", err);
		}
	}
	pthread_rwlock_unlock(&db->blocks_mu);
	free(src);
	return rc;
}

int pd_tsdb_merge_ranges(struct pd_tsdb *db, const struct pd_storage_merge_range *r, size_t n,
			 pd_storage_merge_fn emit, void *ctx, struct pd_err *err)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		if (r[i].mint <= r[i].maxt)
			rc = pd_tsdb_merge(db, r[i].labels, r[i].nlabels, r[i].mint, r[i].maxt,
					   emit, ctx, err);
	return rc;
}
