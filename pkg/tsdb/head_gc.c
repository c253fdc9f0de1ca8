/* head_gc.c: dropping series that have no sample left in the head (Prometheus's
 * head garbage collection). At each head truncation the series whose chunks are
 * all gone are taken out of the series table, the refs map, the hash buckets and
 * the postings, and freed once no reader can hold them: readers look series up
 * by ref and find nothing after the drop, and the store frees the series only
 * when no query is in flight (db_flush.c takes its blocks lock for writing). */
#include <stdlib.h>
#include <string.h>

#include "tsdb_int.h"

#define POSTINGS_MIN_CAP 256

static size_t slot_of(const struct postings_list *t, size_t cap, const char *key, size_t klen)
{
	size_t j = pd_hash_bytes(key, klen, 7) & (cap - 1);
	while (t[j].key && (t[j].klen != klen || memcmp(t[j].key, key, klen) != 0))
		j = (j + 1) & (cap - 1);
	return j;
}

static int kept_ref(const struct pd_u64map *live, uint64_t ref)
{
	uint32_t ix;
	return pd_u64map_get(live, ref, &ix);
}

/* Whether s holds no sample and nothing holds s. Series lock not held. */
static int droppable(struct head_series *s, int64_t t)
{
	pthread_mutex_lock(&s->mu);
	int dead = !s->nchunks && !s->open_ts.count && s->maxt < t &&
	           s->commit_seq == s->commit_done && !__atomic_load_n(&s->pins, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&s->mu);
	return dead;
}

int head_gc(struct head *h, int64_t t, struct head_series ***dead, size_t *ndead)
{
	struct pd_u64map live;
	struct postings_list *np = NULL;
	struct head_series **d = NULL;
	size_t nd = 0, kept = 0, npost = 0, ncap = 0;
	int rc = 0;
	*dead = NULL;
	*ndead = 0;
	pd_u64map_init(&live);
	pthread_rwlock_wrlock(&h->mu);
	for (size_t i = 0; i < h->nseries; i++) {
		struct head_series *s = h->series[i];
		if (s && (s->gone = droppable(s, t)))
			nd++;
	}
	if (!nd)
		goto out;
	/* everything that can fail first: the refs map of the series kept, the
	 * list of the dropped, and the postings table without empty lists */
	if (!(d = malloc(nd * sizeof(*d)))) {
		rc = PD_ENOMEM;
		goto undo;
	}
	for (size_t i = 0; i < h->nseries; i++) {
		struct head_series *s = h->series[i];
		if (s && !s->gone && pd_u64map_put(&live, s->ref, (uint32_t)kept++)) {
			rc = PD_ENOMEM;
			goto undo;
		}
	}
	for (size_t i = 0; i < h->postings_cap; i++) {
		const struct postings_list *pl = &h->postings[i];
		int any = 0;
		for (size_t k = 0; pl->key && k < pl->n && !any; k++)
			any = kept_ref(&live, pl->refs[k]);
		npost += any;
	}
	ncap = h->postings_cap;
	while (ncap > POSTINGS_MIN_CAP && (npost + 1) * 8 <= ncap)
		ncap /= 2;
	if (ncap && !(np = calloc(ncap, sizeof(*np)))) {
		rc = PD_ENOMEM;
		goto undo;
	}

	/* the series table in creation order, the refs map, the buckets */
	size_t j = 0, k = 0;
	for (size_t i = 0; i < h->nseries; i++) {
		struct head_series *s = h->series[i];
		if (!s)
			continue;
		if (s->gone)
			d[k++] = s;
		else
			h->series[j++] = s;
	}
	memset(h->series + j, 0, (h->nseries - j) * sizeof(*h->series));
	h->nseries = j;
	pd_u64map_fini(&h->refs);
	h->refs = live;
	pd_u64map_init(&live);
	for (size_t b = 0; b < h->nbuckets; b++) {
		struct head_series **pp = &h->buckets[b];
		while (*pp) {
			if ((*pp)->gone)
				*pp = (*pp)->next_in_bucket;
			else
				pp = &(*pp)->next_in_bucket;
		}
	}
	size_t scap = h->cap;
	while (scap > 1024 && h->nseries * 4 < scap)
		scap /= 2;
	if (scap < h->cap) {
		struct head_series **ns = realloc(h->series, scap * sizeof(*ns));
		if (ns) {
			h->series = ns;
			h->cap = scap;
		}
	}

	/* postings: the refs of series kept; lists left empty go with their key */
	for (size_t i = 0; i < h->postings_cap; i++) {
		struct postings_list *pl = &h->postings[i];
		if (!pl->key)
			continue;
		size_t w = 0;
		for (size_t r = 0; r < pl->n; r++)
			if (kept_ref(&h->refs, pl->refs[r]))
				pl->refs[w++] = pl->refs[r];
		pl->n = w;
		if (!w) {
			free(pl->key);
			free(pl->refs);
			continue;
		}
		if (pl->cap > 2 * w + 4) {
			uint64_t *nr = realloc(pl->refs, w * sizeof(*nr));
			if (nr) {
				pl->refs = nr;
				pl->cap = w;
			}
		}
		np[slot_of(np, ncap, pl->key, pl->klen)] = *pl;
	}
	free(h->postings);
	h->postings = np;
	h->postings_cap = ncap;
	h->npostings = npost;
	np = NULL;

	for (size_t i = 0; i < nd; i++)
		if (d[i]->live)
			__atomic_sub_fetch(&h->nlive, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->removed, nd, __ATOMIC_RELAXED);
	*dead = d;
	*ndead = nd;
	d = NULL;
	goto out;
undo:
	for (size_t i = 0; i < h->nseries; i++)
		if (h->series[i])
			h->series[i]->gone = 0;
out:
	pthread_rwlock_unlock(&h->mu);
	pd_u64map_fini(&live);
	free(np);
	free(d);
	return rc;
}

void head_gc_free(struct head_series **dead, size_t n)
{
	for (size_t i = 0; i < n; i++)
		head_series_free(dead[i]);
	free(dead);
}
