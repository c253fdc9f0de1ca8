/* head.c: the in-memory head: series by label set, postings from label pairs to
 * series, and per series a list of closed chunks plus one open chunk that takes
 * new samples. Tables are guarded by a read-write lock, each series' chunks by
 * the series' own mutex, so appends to different series do not contend. */
#include <stdlib.h>
#include <string.h>

#include "head_chunks.h"
#include "head_spill.h"
#include "profd/pprof.h"
#include "tsdb_int.h"

uint64_t labels_hash(const struct pd_lpair *l, size_t n)
{
	uint64_t h = 0;
	for (size_t i = 0; i < n; i++) {
		h = pd_hash_bytes(l[i].name, strlen(l[i].name), h);
		h = pd_hash_bytes(l[i].value, strlen(l[i].value), h ^ 0xff);
	}
	return h;
}

int labels_cmp(const struct pd_lpair *a, size_t na, const struct pd_lpair *b, size_t nb)
{
	return pd_storage_labels_cmp((const struct pd_storage_label *)(const void *)a, na,
	                             (const struct pd_storage_label *)(const void *)b, nb);
}

struct pd_storage_label *tsdb_labels_pack(const struct pd_lpair *l, size_t nl)
{
	return pd_storage_labels_pack((const struct pd_storage_label *)(const void *)l, nl);
}

int head_init(struct head *h, const struct pd_tsdb_opts *o)
{
	memset(h, 0, sizeof(*h));
	if (pthread_rwlock_init(&h->mu, NULL))
		return PD_ENOMEM;
	h->mint = INT64_MAX;
	h->maxt = INT64_MIN;
	h->chunk_samples = o->chunk_samples;
	h->chunk_stagger = o->chunk_stagger;
	h->group = o->value_group;
	h->level = o->zstd_level;
	h->encoding = o->value_encoding;
	h->block_range = o->block_range_ms;
	h->next_ref = 1;
	pd_u64map_init(&h->refs);
	if (pthread_mutex_init(&h->sym_mu, NULL)) {
		pthread_rwlock_destroy(&h->mu);
		return PD_ENOMEM;
	}
	return 0;
}

/* A closed chunk's bytes: its head chunk file's reference, or its memory. */
static void chunk_free(struct head_chunk *c)
{
	if (c->file) {
		hcm_release(c->file);
	} else {
		free(c->ts);
		free(c->vals);
	}
}

static void free_series(struct head_series *s)
{
	for (size_t i = 0; i < s->nchunks; i++)
		chunk_free(&s->chunks[i]);
	free(s->chunks);
	pd_chunkenc_ts_fini(&s->open_ts);
	pd_chunkenc_values_destroy(s->open_vals);
	pd_chunkenc_totals_destroy(s->open_tot);
	tomb_fini(&s->tomb);
	pthread_mutex_destroy(&s->mu);
	free(s->labels);
	free(s);
}

void head_series_free(struct head_series *s)
{
	free_series(s);
}

void head_fini(struct head *h)
{
	for (size_t i = 0; i < h->nseries; i++)
		if (h->series[i])
			free_series(h->series[i]);
	free(h->series);
	pd_u64map_fini(&h->refs);
	free(h->buckets);
	for (size_t i = 0; i < h->postings_cap; i++) {
		free(h->postings[i].key);
		free(h->postings[i].refs);
	}
	free(h->postings);
	pd_chunkenc_symbols_unref(h->sym);
	pthread_mutex_destroy(&h->sym_mu);
	pthread_rwlock_destroy(&h->mu);
}

static struct head_series *find_locked(struct head *h, const struct pd_lpair *l, size_t n,
				       uint64_t hash)
{
	if (!h->nbuckets)
		return NULL;
	for (struct head_series *s = h->buckets[hash & (h->nbuckets - 1)]; s; s = s->next_in_bucket)
		if (s->hash == hash && labels_cmp(s->labels, s->nlabels, l, n) == 0)
			return s;
	return NULL;
}

struct head_series *head_get(struct head *h, const struct pd_lpair *l, size_t n, uint64_t hash)
{
	pthread_rwlock_rdlock(&h->mu);
	struct head_series *s = find_locked(h, l, n, hash);
	pthread_rwlock_unlock(&h->mu);
	return s;
}

static struct postings_list *postings_slot(struct head *h, const char *key, size_t klen)
{
	size_t j = pd_hash_bytes(key, klen, 7) & (h->postings_cap - 1);
	while (h->postings[j].key &&
	       (h->postings[j].klen != klen || memcmp(h->postings[j].key, key, klen) != 0))
		j = (j + 1) & (h->postings_cap - 1);
	return &h->postings[j];
}

static int postings_grow(struct head *h)
{
	size_t ncap = h->postings_cap ? h->postings_cap * 2 : 256;
	struct postings_list *old = h->postings;
	size_t ocap = h->postings_cap;
	h->postings = calloc(ncap, sizeof(*h->postings));
	if (!h->postings) {
		h->postings = old;
		return PD_ENOMEM;
	}
	h->postings_cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key)
			*postings_slot(h, old[i].key, old[i].klen) = old[i];
	free(old);
	return 0;
}

static int postings_add(struct head *h, const char *name, const char *value, uint64_t ref)
{
	size_t nl = strlen(name), vl = strlen(value);
	char *key = malloc(nl + vl + 2);
	if (!key)
		return PD_ENOMEM;
	memcpy(key, name, nl);
	key[nl] = '\xff';
	memcpy(key + nl + 1, value, vl + 1);
	size_t klen = nl + 1 + vl;
	if ((h->npostings + 1) * 2 > h->postings_cap && postings_grow(h)) {
		free(key);
		return PD_ENOMEM;
	}
	struct postings_list *pl = postings_slot(h, key, klen);
	if (!pl->key) {
		pl->key = key;
		pl->klen = klen;
		h->npostings++;
	} else {
		free(key);
	}
	if (pl->n == pl->cap) {
		size_t c = pl->cap ? pl->cap * 2 : 4;
		uint64_t *r = realloc(pl->refs, c * sizeof(*r));
		if (!r)
			return PD_ENOMEM;
		pl->refs = r;
		pl->cap = c;
	}
	/* new refs only grow, so the list stays sorted; replay, which creates series
	 * under the WAL's refs in WAL order, sorts the lists once it is done */
	pl->refs[pl->n++] = ref;
	return 0;
}

const struct postings_list *head_postings_locked(const struct head *h, const char *name,
						 const char *value);
const struct postings_list *head_postings_locked(const struct head *h, const char *name,
						 const char *value)
{
	if (!h->postings_cap)
		return NULL;
	size_t nl = strlen(name), vl = strlen(value);
	char stack[256];
	char *key = nl + vl + 2 <= sizeof(stack) ? stack : malloc(nl + vl + 2);
	if (!key)
		return NULL;
	memcpy(key, name, nl);
	key[nl] = '\xff';
	memcpy(key + nl + 1, value, vl + 1);
	const struct postings_list *pl = postings_slot((struct head *)h, key, nl + 1 + vl);
	if (key != stack)
		free(key);
	return pl->key ? pl : NULL;
}

struct head_series *head_by_ref_locked(const struct head *h, uint64_t ref)
{
	uint32_t i;
	if (!ref || !pd_u64map_get(&h->refs, ref, &i) || i >= h->nseries)
		return NULL;
	return h->series[i];
}

struct head_series *head_by_ref(struct head *h, uint64_t ref)
{
	pthread_rwlock_rdlock(&h->mu);
	struct head_series *s = head_by_ref_locked(h, ref);
	pthread_rwlock_unlock(&h->mu);
	return s;
}

void head_note_ref(struct head *h, uint64_t ref)
{
	if (ref < HEAD_MAX_REF && ref >= h->next_ref)
		h->next_ref = ref + 1;
}

int head_admit(struct head *h, const struct head_series *s, struct pd_err *err)
{
	uint64_t live = __atomic_load_n(&h->nlive, __ATOMIC_RELAXED);
	if (!h->max_series || __atomic_load_n(&s->live, __ATOMIC_RELAXED) || live < h->max_series)
		return 0;
	__atomic_add_fetch(&h->refused, 1, __ATOMIC_RELAXED);
	return pd_err_set(err, PD_ELIMIT,
			  "series limit reached: the head holds %llu series, its limit is "
			  "%llu; a new series is refused",
			  (unsigned long long)live, (unsigned long long)h->max_series);
}

static int get_or_create(struct head *h, const struct pd_lpair *l, size_t n, uint64_t ref,
			 struct head_series **out, int *created, int pin, struct pd_err *err)
{
	uint64_t hash = labels_hash(l, n);
	*created = 0;
	pthread_rwlock_wrlock(&h->mu);
	struct head_series *s = find_locked(h, l, n, hash);
	if (s) {
		if (pin)
			__atomic_add_fetch(&s->pins, 1, __ATOMIC_ACQ_REL);
		pthread_rwlock_unlock(&h->mu);
		*out = s;
		return 0;
	}
	if (!ref)
		ref = h->next_ref;
	uint32_t taken;
	if (ref >= HEAD_MAX_REF || pd_u64map_get(&h->refs, ref, &taken)) {
		pthread_rwlock_unlock(&h->mu);
		return pd_err_set(err, PD_ECORRUPT, "series ref %llu is %s", (unsigned long long)ref,
				  ref >= HEAD_MAX_REF ? "too large" : "already taken");
	}
	uint64_t live = __atomic_load_n(&h->nlive, __ATOMIC_RELAXED);
	if (h->max_series && (live >= h->max_series || h->nseries - live >= h->max_series)) {
		size_t held = live >= h->max_series ? live : h->nseries - live;
		int empty = live < h->max_series;
		__atomic_add_fetch(&h->refused, 1, __ATOMIC_RELAXED);
		pthread_rwlock_unlock(&h->mu);
		return pd_err_set(err, PD_ELIMIT,
				  "series limit reached: the head holds %zu series%s, its limit is "
				  "%llu; a new series is refused",
				  held, empty ? " without samples (of commits refused or in flight)" : "",
				  (unsigned long long)h->max_series);
	}
	if (h->nseries >= UINT32_MAX) {
		pthread_rwlock_unlock(&h->mu);
		return pd_err_set(err, PD_ENOMEM, "too many series");
	}
	/* one allocation for the pair array and the strings */
	s = calloc(1, sizeof(*s));
	struct pd_lpair *lp = (struct pd_lpair *)(void *)tsdb_labels_pack(l, n);
	if (!s || !lp)
		goto nomem;
	s->labels = lp;
	s->nlabels = n;
	s->hash = hash;
	s->ref = ref;
	s->maxt = INT64_MIN;
	pthread_mutex_init(&s->mu, NULL);
	pd_chunkenc_ts_init(&s->open_ts);
	lp = NULL;
	/* tables */
	if (h->nseries == h->cap) {
		size_t c = h->cap ? h->cap * 2 : 1024;
		struct head_series **ns = realloc(h->series, c * sizeof(*ns));
		if (!ns)
			goto nomem_s;
		memset(ns + h->cap, 0, (c - h->cap) * sizeof(*ns));
		h->series = ns;
		h->cap = c;
	}
	if ((h->nseries + 1) > h->nbuckets) {
		size_t nb = h->nbuckets ? h->nbuckets * 2 : 1024;
		struct head_series **b = calloc(nb, sizeof(*b));
		if (!b)
			goto nomem_s;
		for (size_t i = 0; i < h->nbuckets; i++)
			for (struct head_series *x = h->buckets[i], *nx; x; x = nx) {
				nx = x->next_in_bucket;
				x->next_in_bucket = b[x->hash & (nb - 1)];
				b[x->hash & (nb - 1)] = x;
			}
		free(h->buckets);
		h->buckets = b;
		h->nbuckets = nb;
	}
	for (size_t i = 0; i < n; i++)
		if (postings_add(h, s->labels[i].name, s->labels[i].value, ref) ||
		    postings_add(h, "", "", ref))
			goto nomem_s;
	if (pd_u64map_put(&h->refs, ref, (uint32_t)h->nseries))
		goto nomem_s;
	h->series[h->nseries++] = s;
	if (ref >= h->next_ref)
		h->next_ref = ref + 1;
	s->next_in_bucket = h->buckets[hash & (h->nbuckets - 1)];
	h->buckets[hash & (h->nbuckets - 1)] = s;
	if (pin)
		s->pins = 1;
	pthread_rwlock_unlock(&h->mu);
	*out = s;
	*created = 1;
	return 0;
nomem_s:
	/* postings may hold the ref already; a series that never made it into the
	 * table is skipped by readers, so only its memory needs freeing, and its ref
	 * is not given to another series */
	if (ref >= h->next_ref)
		h->next_ref = ref + 1;
	free_series(s);
	s = NULL;
nomem:
	free(s);
	free(lp);
	pthread_rwlock_unlock(&h->mu);
	return pd_err_set(err, PD_ENOMEM, "out of memory creating a series");
}

int head_get_or_create(struct head *h, const struct pd_lpair *l, size_t n, uint64_t ref,
		       struct head_series **out, int *created, struct pd_err *err)
{
	return get_or_create(h, l, n, ref, out, created, 0, err);
}

int head_get_or_create_pinned(struct head *h, const struct pd_lpair *l, size_t n,
			      struct head_series **out, int *created, struct pd_err *err)
{
	return get_or_create(h, l, n, 0, out, created, 1, err);
}

struct head_series *head_get_pinned(struct head *h, const struct pd_lpair *l, size_t n,
				    uint64_t hash)
{
	pthread_rwlock_rdlock(&h->mu);
	struct head_series *s = find_locked(h, l, n, hash);
	if (s)
		__atomic_add_fetch(&s->pins, 1, __ATOMIC_ACQ_REL);
	pthread_rwlock_unlock(&h->mu);
	return s;
}

void head_unpin(struct head_series *s)
{
	if (s)
		__atomic_sub_fetch(&s->pins, 1, __ATOMIC_ACQ_REL);
}

int64_t head_series_maxt(struct head *h, const struct pd_lpair *l, size_t n, uint64_t hash)
{
	int64_t t = INT64_MIN;
	pthread_rwlock_rdlock(&h->mu);
	struct head_series *s = find_locked(h, l, n, hash);
	if (s) {
		pthread_mutex_lock(&s->mu);
		t = s->maxt;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_rwlock_unlock(&h->mu);
	return t;
}

int head_open_ts(const struct head_series *s, uint8_t **out, size_t *len, struct pd_err *err)
{
	size_t tl, xl = 0;
	const uint8_t *tb = pd_chunkenc_ts_bytes(&s->open_ts, &tl);
	const uint8_t *xb = NULL;
	if (s->open_tot && pd_chunkenc_totals_count(s->open_tot) == s->open_ts.count)
		xb = pd_chunkenc_totals_bytes(s->open_tot, &xl);
	*out = malloc(tl + xl + 1);
	if (!*out)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (tl)
		memcpy(*out, tb, tl);
	if (xl)
		memcpy(*out + tl, xb, xl);
	*len = tl + xl;
	return 0;
}

int head_seal_values(const struct head_series *s, uint8_t **out, size_t *len, struct pd_err *err)
{
	/* beside a totals section (head_open_ts writes one when it has every
	 * sample's), its values may leave a value a column to it */
	if (s->open_tot && pd_chunkenc_totals_count(s->open_tot) == s->open_ts.count)
		return pd_chunkenc_values_seal_totals(s->open_vals, out, len, err);
	return pd_chunkenc_values_seal(s->open_vals, out, len, err);
}

/* Moves the open chunk to the closed list. Series lock held. */
static int seal_open(struct head *h, struct head_series *s, struct pd_err *err)
{
	if (s->open_ts.count == 0)
		return 0;
	if (s->nchunks == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 4;
		struct head_chunk *nc = realloc(s->chunks, c * sizeof(*nc));
		if (!nc)
			return pd_err_set(err, PD_ENOMEM, "out of memory sealing a chunk");
		s->chunks = nc;
		s->cap = c;
	}
	struct head_chunk *c = &s->chunks[s->nchunks];
	memset(c, 0, sizeof(*c));
	int rc = head_seal_values(s, &c->vals, &c->vals_len, err);
	if (rc)
		return rc;
	if ((rc = head_open_ts(s, &c->ts, &c->ts_len, err))) {
		free(c->vals);
		return rc;
	}
	c->mint = s->open_mint;
	c->maxt = s->open_ts.t;
	c->count = s->open_ts.count;
	if (h->hcm) {
		/* out of the heap into the head chunk files; a failed write (a full
		 * disk) leaves the chunk in memory, as it was */
		const uint8_t *tm, *vm;
		struct pd_err werr;
		if (hcm_write(h->hcm, s->ref, c->mint, c->maxt, c->count, c->ts, c->ts_len, c->vals,
			      c->vals_len, &c->file, &tm, &vm, &werr) == 0) {
			free(c->ts);
			free(c->vals);
			c->ts = (uint8_t *)tm;
			c->vals = (uint8_t *)vm;
		} else if (__atomic_fetch_add(&h->hc_write_failures, 1, __ATOMIC_RELAXED) == 0) {
			pd_log_error("tsdb",
				     "writing a sealed chunk to the head chunk files failed (it "
				     "stays in memory; logged once, counted)",
				     "err=%s", werr.msg);
		}
	}
	s->nchunks++;
	pd_chunkenc_ts_fini(&s->open_ts);
	pd_chunkenc_ts_init(&s->open_ts);
	pd_chunkenc_values_destroy(s->open_vals);
	s->open_vals = NULL;
	pd_chunkenc_totals_destroy(s->open_tot);
	s->open_tot = NULL;
	return 0;
}

int head_attach_chunk(struct head *h, struct head_series *s, const struct head_chunk *c,
		      struct pd_err *err)
{
	int rc = 0;
	pthread_mutex_lock(&s->mu);
	if (c->mint <= s->maxt) {
		rc = pd_err_set(err, PD_EINVAL, "chunk of %lld..%lld is not after %lld",
				(long long)c->mint, (long long)c->maxt, (long long)s->maxt);
		goto out;
	}
	if ((rc = seal_open(h, s, err)))
		goto out;
	if (s->nchunks == s->cap) {
		size_t n = s->cap ? s->cap * 2 : 4;
		struct head_chunk *nc = realloc(s->chunks, n * sizeof(*nc));
		if (!nc) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		s->chunks = nc;
		s->cap = n;
	}
	s->chunks[s->nchunks++] = *c;
	s->maxt = c->maxt;
	if (!s->live) {
		__atomic_store_n(&s->live, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&h->nlive, 1, __ATOMIC_RELAXED);
	}
	if (c->mint < h->mint)
		h->mint = c->mint;
	if (c->maxt > h->maxt)
		h->maxt = c->maxt;
	h->nsamples += c->count;
out:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static int64_t window_of(int64_t t, int64_t range)
{
	return t >= 0 ? t / range : -((-t - 1) / range) - 1;
}

/* A new value appender for a chunk starting at t: v2 chunks of one block range
 * share the head's symbols for that range, so that the series of one program hold
 * its strings, functions, locations and stacks once. */
static struct pd_chunkenc_values *open_values(struct head *h, int64_t t)
{
	if (h->encoding != PD_CHUNKENC_VALUES_COLUMNAR)
		return pd_chunkenc_values_create_enc(h->encoding, h->group, h->level);
	int64_t w = window_of(t, h->block_range);
	pthread_mutex_lock(&h->sym_mu);
	if (!h->sym || w > h->sym_window) {
		struct pd_chunkenc_symbols *n = pd_chunkenc_symbols_create();
		if (n) {
			/* the old set lives on while chunks opened on it are open */
			pd_chunkenc_symbols_unref(h->sym);
			h->sym = n;
			h->sym_window = w;
		}
	}
	struct pd_chunkenc_values *c =
	    h->sym ? pd_chunkenc_values_create_stored(h->sym, h->hs ? hs_frame_store(h->hs) : NULL,
						      h->group, h->level)
		   : NULL;
	pthread_mutex_unlock(&h->sym_mu);
	return c;
}

/* How many samples the chunk s opens at t holds before it is sealed: chunk_samples,
 * and for the series' first chunk in a block range up to chunk_stagger fewer, by
 * its label hash. Series scraped together then seal on different scrapes, and go
 * on doing so, as their later chunks of the range are full ones. (s->maxt: the
 * series' sample before t.) */
static unsigned chunk_limit(const struct head *h, const struct head_series *s, int64_t t)
{
	unsigned n = h->chunk_samples, k = h->chunk_stagger;
	if (!k || k >= n / 2)
		return n;
	if (s->maxt != INT64_MIN && window_of(s->maxt, h->block_range) == window_of(t, h->block_range))
		return n;
	return n - (unsigned)(s->hash % (k + 1));
}

int head_append(struct head *h, struct head_series *s, int64_t t, const uint8_t *p, size_t len,
		const struct pd_pprof_profile *decoded, struct pd_err *err)
{
	int rc = 0;
	struct pd_pprof_profile *own = NULL;
	if (!decoded) {
		/* the totals need the profile decoded; the value chunk then uses it too.
		 * Bytes that do not decode are kept opaque and have no totals. */
		struct pd_err derr;
		if (pd_pprof_decode(&own, p, len, NULL, &derr))
			own = NULL;
		decoded = own;
	}
	pthread_mutex_lock(&s->mu);
	if (t <= s->maxt) {
		rc = pd_err_set(err, PD_EINVAL, "out of order sample: %lld is not after %lld",
				(long long)t, (long long)s->maxt);
		goto out;
	}
	if (s->open_ts.count &&
	    (s->open_ts.count >= s->open_limit ||
	     window_of(t, h->block_range) != window_of(s->open_mint, h->block_range)) &&
	    (rc = seal_open(h, s, err)))
		goto out;
	if (!s->open_vals && !(s->open_vals = open_values(h, t))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory opening a chunk");
		goto out;
	}
	if ((rc = pd_chunkenc_values_append_at(s->open_vals, t, p, len, decoded, err)))
		goto out;
	if ((rc = pd_chunkenc_ts_append(&s->open_ts, t, err))) {
		/* cannot happen after the checks above, but keep the pair consistent */
		goto out;
	}
	if (s->open_ts.count == 1) {
		s->open_mint = t;
		s->open_limit = chunk_limit(h, s, t);
		pd_chunkenc_totals_destroy(s->open_tot);
		s->open_tot = pd_chunkenc_totals_create();
	}
	if (s->open_tot) {
		/* out of memory costs the chunk its section (its totals are then read
		 * from its profiles), not the sample */
		struct pd_err terr;
		if (pd_chunkenc_totals_append_profile(s->open_tot, decoded, &terr)) {
			pd_chunkenc_totals_destroy(s->open_tot);
			s->open_tot = NULL;
		}
	}
	s->maxt = t;
	if (!s->live) {
		__atomic_store_n(&s->live, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&h->nlive, 1, __ATOMIC_RELAXED);
	}
out:
	pthread_mutex_unlock(&s->mu);
	pd_pprof_destroy(own);
	if (rc == 0) {
		/* atomics, not the head's table lock: appends to different series
		 * run in parallel */
		int64_t m = __atomic_load_n(&h->mint, __ATOMIC_RELAXED);
		while (t < m && !__atomic_compare_exchange_n(&h->mint, &m, t, 0, __ATOMIC_RELAXED,
							     __ATOMIC_RELAXED))
			;
		m = __atomic_load_n(&h->maxt, __ATOMIC_RELAXED);
		while (t > m && !__atomic_compare_exchange_n(&h->maxt, &m, t, 0, __ATOMIC_RELAXED,
							     __ATOMIC_RELAXED))
			;
		__atomic_add_fetch(&h->nsamples, 1, __ATOMIC_RELAXED);
	}
	return rc;
}

int head_cut_before(struct head *h, int64_t t, struct pd_err *err)
{
	int rc = 0;
	pthread_rwlock_rdlock(&h->mu);
	for (size_t i = 0; i < h->nseries && !rc; i++) {
		struct head_series *s = h->series[i];
		if (!s)
			continue;
		pthread_mutex_lock(&s->mu);
		if (s->open_ts.count && s->open_ts.t < t)
			rc = seal_open(h, s, err);
		pthread_mutex_unlock(&s->mu);
	}
	pthread_rwlock_unlock(&h->mu);
	return rc;
}

size_t head_seal_idle(struct head *h, int64_t t)
{
	size_t n = 0;
	if (!h->hcm)
		return 0;
	/* each series is sealed outside the head's lock (a seal of a large chunk
	 * takes milliseconds, and new series wait for that lock): the series stays
	 * while flush runs, which alone drops series (head_gc) */
	for (size_t i = 0;; i++) {
		pthread_rwlock_rdlock(&h->mu);
		struct head_series *s = i < h->nseries ? h->series[i] : NULL;
		int more = i < h->nseries;
		pthread_rwlock_unlock(&h->mu);
		if (!more)
			break;
		if (!s)
			continue;
		pthread_mutex_lock(&s->mu);
		if (s->open_ts.count && s->maxt < t) {
			/* a failure (out of memory) leaves the chunk open, as it was */
			struct pd_err err;
			if (seal_open(h, s, &err) == 0)
				n++;
		}
		pthread_mutex_unlock(&s->mu);
	}
	return n;
}

void head_truncate(struct head *h, int64_t t)
{
	int64_t mint = INT64_MAX;
	pthread_rwlock_rdlock(&h->mu);
	for (size_t i = 0; i < h->nseries; i++) {
		struct head_series *s = h->series[i];
		if (!s)
			continue;
		pthread_mutex_lock(&s->mu);
		size_t k = 0;
		while (k < s->nchunks && s->chunks[k].maxt < t)
			chunk_free(&s->chunks[k++]);
		if (k) {
			memmove(s->chunks, s->chunks + k, (s->nchunks - k) * sizeof(*s->chunks));
			s->nchunks -= k;
			s->dropped += k;
		}
		/* deleted intervals of what is gone now mask nothing */
		size_t d = 0;
		while (d < s->tomb.n && s->tomb.v[d].maxt < t)
			d++;
		if (d) {
			memmove(s->tomb.v, s->tomb.v + d, (s->tomb.n - d) * sizeof(*s->tomb.v));
			s->tomb.n -= d;
		}
		if (s->nchunks && s->chunks[0].mint < mint)
			mint = s->chunks[0].mint;
		else if (!s->nchunks && s->open_ts.count && s->open_mint < mint)
			mint = s->open_mint;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_rwlock_unlock(&h->mu);
	pthread_rwlock_wrlock(&h->mu);
	h->mint = mint;
	if (mint == INT64_MAX)
		h->maxt = INT64_MIN;
	pthread_rwlock_unlock(&h->mu);
	/* head chunk files that hold no chunk of the head any more go */
	hcm_truncate(h->hcm);
}

int head_seal_series(struct head *h, struct head_series *s, struct pd_err *err)
{
	return s->open_ts.count ? seal_open(h, s, err) : 0;
}

void head_series_drop_chunks(struct head_series *s)
{
	for (size_t k = 0; k < s->nchunks; k++)
		chunk_free(&s->chunks[k]);
	s->dropped += s->nchunks;
	s->nchunks = 0;
}
