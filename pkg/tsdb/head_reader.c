/* head_reader.c: the head seen through the reader interface that blocks also
 * implement, so that queries and compaction have one code path. Chunks are named
 * by sequence number, which stays valid while older chunks are truncated and
 * while the open chunk is sealed. */
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "tsdb_int.h"

const struct postings_list *head_postings_locked(const struct head *h, const char *name,
						 const char *value);

static int strs_push(char ***v, size_t *n, size_t *cap, const char *s, size_t len)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		char **nv = realloc(*v, c * sizeof(*nv));
		if (!nv)
			return PD_ENOMEM;
		*v = nv;
		*cap = c;
	}
	char *d = malloc(len + 1);
	if (!d)
		return PD_ENOMEM;
	memcpy(d, s, len);
	d[len] = '\0';
	(*v)[(*n)++] = d;
	return 0;
}

static int hr_label_names(void *r, char ***out, size_t *n, struct pd_err *err)
{
	struct head *h = r;
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&h->mu);
	for (size_t i = 0; i < h->postings_cap; i++) {
		const struct postings_list *pl = &h->postings[i];
		if (!pl->key || pl->klen == 1)
			continue;
		const char *sep = memchr(pl->key, '\xff', pl->klen);
		if (strs_push(out, n, &cap, pl->key, (size_t)(sep - pl->key))) {
			pthread_rwlock_unlock(&h->mu);
			pd_storage_strings_free(*out, *n);
			return pd_err_set(err, PD_ENOMEM, "out of memory listing label names");
		}
	}
	pthread_rwlock_unlock(&h->mu);
	pd_storage_strings_sort_unique(*out, n);
	return 0;
}

static int hr_label_values(void *r, const char *name, char ***out, size_t *n, struct pd_err *err)
{
	struct head *h = r;
	size_t cap = 0, nl = strlen(name);
	*out = NULL;
	*n = 0;
	if (!nl)
		return 0;
	pthread_rwlock_rdlock(&h->mu);
	for (size_t i = 0; i < h->postings_cap; i++) {
		const struct postings_list *pl = &h->postings[i];
		if (!pl->key || pl->klen <= nl || memcmp(pl->key, name, nl) != 0 ||
		    pl->key[nl] != '\xff')
			continue;
		if (strs_push(out, n, &cap, pl->key + nl + 1, pl->klen - nl - 1)) {
			pthread_rwlock_unlock(&h->mu);
			pd_storage_strings_free(*out, *n);
			return pd_err_set(err, PD_ENOMEM, "out of memory listing label values");
		}
	}
	pthread_rwlock_unlock(&h->mu);
	pd_storage_strings_sort_unique(*out, n);
	return 0;
}

static int hr_postings(void *r, const char *name, const char *value, uint64_t **out, size_t *n,
		       struct pd_err *err)
{
	struct head *h = r;
	*out = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&h->mu);
	const struct postings_list *pl = head_postings_locked(h, name, value);
	if (pl && pl->n) {
		*out = malloc(pl->n * sizeof(uint64_t));
		if (!*out) {
			pthread_rwlock_unlock(&h->mu);
			return pd_err_set(err, PD_ENOMEM, "out of memory reading postings");
		}
		memcpy(*out, pl->refs, pl->n * sizeof(uint64_t));
		*n = pl->n;
	}
	pthread_rwlock_unlock(&h->mu);
	return 0;
}

static int hr_all_series(void *r, uint64_t **out, size_t *n, struct pd_err *err)
{
	return hr_postings(r, "", "", out, n, err);
}

static int hr_series(void *r, uint64_t ref, struct pd_lpair **labels, size_t *nl, struct rchunk **c,
		     size_t *nc, struct pd_err *err)
{
	struct head_series *s = head_by_ref(r, ref);
	*labels = NULL;
	*c = NULL;
	*nl = *nc = 0;
	if (!s)
		return pd_err_set(err, PD_ENOTFOUND, "no series %llu in the head", (unsigned long long)ref);
	*labels = malloc((s->nlabels ? s->nlabels : 1) * sizeof(**labels));
	if (!*labels)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	memcpy(*labels, s->labels, s->nlabels * sizeof(**labels));
	*nl = s->nlabels;
	pthread_mutex_lock(&s->mu);
	size_t n = s->nchunks + (s->open_ts.count ? 1 : 0);
	*c = malloc((n ? n : 1) * sizeof(**c));
	if (!*c) {
		pthread_mutex_unlock(&s->mu);
		free(*labels);
		*labels = NULL;
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nchunks; i++)
		(*c)[i] = (struct rchunk){s->chunks[i].mint, s->chunks[i].maxt, s->chunks[i].count,
					  s->dropped + i, s->dropped + i};
	if (s->open_ts.count)
		(*c)[s->nchunks] = (struct rchunk){s->open_mint, s->open_ts.t, s->open_ts.count,
						   s->dropped + s->nchunks, s->dropped + s->nchunks};
	*nc = n;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static int hr_chunk_ts(void *r, uint64_t series_ref, const struct rchunk *c, uint8_t **out,
		       size_t *len, struct pd_err *err)
{
	struct head_series *s = head_by_ref(r, series_ref);
	int rc = 0;
	*out = NULL;
	if (!s)
		return pd_err_set(err, PD_ENOTFOUND, "no series %llu in the head",
				  (unsigned long long)series_ref);
	pthread_mutex_lock(&s->mu);
	if (c->ts_ref < s->dropped) {
		rc = pd_err_set(err, PD_ENOTFOUND, "chunk was truncated from the head");
	} else if (c->ts_ref - s->dropped < s->nchunks) {
		const struct head_chunk *hc = &s->chunks[c->ts_ref - s->dropped];
		*out = malloc(hc->ts_len ? hc->ts_len : 1);
		if (*out) {
			memcpy(*out, hc->ts, hc->ts_len);
			*len = hc->ts_len;
		} else {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		}
	} else if (c->ts_ref - s->dropped == s->nchunks && s->open_ts.count) {
		/* the timestamps and the totals section as sealing would write them */
		rc = head_open_ts(s, out, len, err);
	} else {
		rc = pd_err_set(err, PD_ENOTFOUND, "no such head chunk");
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static int hr_chunk_value(void *r, uint64_t series_ref, const struct rchunk *c, size_t i,
			  int64_t t, const uint8_t *tsc, size_t tsl, size_t max_profile,
			  uint8_t **out, size_t *len, struct pd_err *err)
{
	struct head_series *s = head_by_ref(r, series_ref);
	int rc;
	*out = NULL;
	if (!s)
		return pd_err_set(err, PD_ENOTFOUND, "no series %llu in the head",
				  (unsigned long long)series_ref);
	pthread_mutex_lock(&s->mu);
	if (c->vals_ref < s->dropped) {
		rc = pd_err_set(err, PD_ENOTFOUND, "chunk was truncated from the head");
	} else if (c->vals_ref - s->dropped < s->nchunks) {
		const struct head_chunk *hc = &s->chunks[c->vals_ref - s->dropped];
		rc = pd_chunkenc_values_read_tc(hc->vals, hc->vals_len, tsc, tsl, i, max_profile, out,
						len, err);
	} else if (c->vals_ref - s->dropped == s->nchunks && s->open_vals) {
		rc = pd_chunkenc_values_get_at(s->open_vals, i, t, out, len, err);
	} else {
		rc = pd_err_set(err, PD_ENOTFOUND, "no such head chunk");
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* Merged profiles kept while the series is locked, handed on after. */
struct held {
	struct pd_pprof_profile **p;
	size_t *first, *count, *bytes;
	size_t n, cap;
};

static int hold(void *ctx, struct pd_pprof_profile *p, size_t first, size_t count, size_t bytes)
{
	struct held *h = ctx;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 4;
		struct pd_pprof_profile **np = realloc(h->p, cap * sizeof(*np));
		if (np)
			h->p = np;
		size_t *a = realloc(h->first, cap * sizeof(*a));
		if (a)
			h->first = a;
		size_t *b = realloc(h->count, cap * sizeof(*b));
		if (b)
			h->count = b;
		size_t *c = realloc(h->bytes, cap * sizeof(*c));
		if (c)
			h->bytes = c;
		if (!np || !a || !b || !c) {
			pd_pprof_destroy(p);
			return PD_ENOMEM;
		}
		h->cap = cap;
	}
	h->p[h->n] = p;
	h->first[h->n] = first;
	h->count[h->n] = count;
	h->bytes[h->n++] = bytes;
	return 0;
}

static int hr_chunk_merge(void *r, uint64_t series_ref, const struct rchunk *c, size_t from,
			  size_t to, const int64_t *ts, const uint8_t *tsc, size_t tsl,
			  size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx,
			  struct pd_err *err)
{
	struct head_series *s = head_by_ref(r, series_ref);
	uint8_t *copy = NULL;
	size_t len = 0;
	struct held h = {0};
	int rc = 0;
	if (!s)
		return pd_err_set(err, PD_ENOTFOUND, "no series %llu in the head",
				  (unsigned long long)series_ref);
	/* a closed chunk is copied and merged after; the open one is merged in
	 * place (records and shared symbols are read, nothing is sealed), and the
	 * merged profiles handed on once the series is unlocked */
	pthread_mutex_lock(&s->mu);
	if (c->vals_ref < s->dropped) {
		rc = pd_err_set(err, PD_ENOTFOUND, "chunk was truncated from the head");
	} else if (c->vals_ref - s->dropped < s->nchunks) {
		const struct head_chunk *hc = &s->chunks[c->vals_ref - s->dropped];
		if ((copy = malloc(hc->vals_len ? hc->vals_len : 1))) {
			memcpy(copy, hc->vals, hc->vals_len);
			len = hc->vals_len;
		} else {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		}
	} else if (c->vals_ref - s->dropped == s->nchunks && s->open_vals) {
		rc = pd_chunkenc_values_merge_open_at(s->open_vals, from, to, ts, max_profile, hold, &h,
						      err);
	} else {
		rc = pd_err_set(err, PD_ENOTFOUND, "no such head chunk");
	}
	pthread_mutex_unlock(&s->mu);
	if (!rc && copy)
		rc = pd_chunkenc_values_merge_tc(copy, len, tsc, tsl, from, to, max_profile, emit, ctx,
						 err);
	for (size_t i = 0; i < h.n; i++) {
		if (!rc)
			rc = emit(ctx, h.p[i], h.first[i], h.count[i], h.bytes[i]);
		else
			pd_pprof_destroy(h.p[i]);
	}
	free(copy);
	free(h.p);
	free(h.first);
	free(h.count);
	free(h.bytes);
	return rc;
}

static int hr_tombstones(void *r, uint64_t ref, struct tomb_entry **out, size_t *n,
			 struct pd_err *err)
{
	struct head_series *s = head_by_ref(r, ref);
	*out = NULL;
	*n = 0;
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	if (s->tomb.n && (*out = malloc(s->tomb.n * sizeof(**out)))) {
		memcpy(*out, s->tomb.v, s->tomb.n * sizeof(**out));
		*n = s->tomb.n;
	}
	int nomem = s->tomb.n && !*out;
	pthread_mutex_unlock(&s->mu);
	return nomem ? pd_err_set(err, PD_ENOMEM, "out of memory") : 0;
}

const struct reader_ops head_reader_ops = {
	hr_label_names, hr_label_values, hr_postings,    hr_all_series, hr_series,
	hr_chunk_ts,    hr_chunk_value,  hr_chunk_merge, hr_tombstones,
};
