/* replay_idle.c: the samples that blocks of idle series hold, for WAL replay. A
 * series written to such a block (db_idle.c) leaves its samples in the WAL until
 * the next checkpoint; replay leaves out a sample such a block holds already
 * (the same series at the same time, the block's copy kept, as compaction keeps
 * the older block's), so that a series that came back after it was written out
 * does not hold its old samples in the head and in the block at once. */
#include <stdlib.h>
#include <string.h>

#include "profd/chunkenc.h"
#include "db_int.h"
#include "replay_idle.h"
#include "tsdb_int.h"

struct idle_entry {
	uint64_t hash;
	struct pd_lpair *labels; /* strings borrowed from the block */
	size_t nl;
	int64_t *ts; /* ascending */
	size_t nts;
};

struct idle_index {
	struct idle_entry *v;
	size_t n, cap;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct idle_entry *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return labels_cmp(x->labels, x->nl, y->labels, y->nl);
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The timestamps of one series' chunks into e->ts (sorted). A chunk that does
 * not decode is left out: its samples are replayed. */
static int entry_times(const struct pd_block *b, const struct pd_block_chunk_meta *c, size_t nc,
		       struct idle_entry *e)
{
	size_t total = 0;
	for (size_t k = 0; k < nc; k++)
		total += c[k].count;
	if (!(e->ts = malloc((total ? total : 1) * sizeof(*e->ts))))
		return PD_ENOMEM;
	for (size_t k = 0; k < nc; k++) {
		const uint8_t *p;
		size_t len, got = 0;
		struct pd_err err;
		if (pd_block_chunk_bytes(b, c[k].ts_ref, &p, &len, &err))
			continue;
		struct pd_chunkenc_ts_iter it;
		pd_chunkenc_ts_iter_init(&it, p, len);
		size_t at = e->nts;
		while (got < c[k].count && pd_chunkenc_ts_iter_next(&it))
			e->ts[at + got++] = pd_chunkenc_ts_iter_at(&it);
		if (!pd_chunkenc_ts_iter_err(&it))
			e->nts += got;
	}
	qsort(e->ts, e->nts, sizeof(*e->ts), i64_cmp);
	return 0;
}

static int add_block(struct idle_index *x, const struct pd_block *b, struct pd_err *err)
{
	uint64_t *refs = NULL;
	size_t nrefs = 0;
	int rc = pd_block_all_series(b, &refs, &nrefs, err);
	for (size_t i = 0; i < nrefs && !rc; i++) {
		struct pd_lpair *l = NULL;
		struct pd_block_chunk_meta *c = NULL;
		size_t nl = 0, nc = 0;
		if (pd_block_series(b, refs[i], &l, &nl, &c, &nc, err)) {
			rc = 0; /* a series that does not read is replayed whole */
			continue;
		}
		if (x->n == x->cap) {
			size_t cap = x->cap ? x->cap * 2 : 64;
			void *q = realloc(x->v, cap * sizeof(*x->v));
			if (!q) {
				free(l);
				free(c);
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				break;
			}
			x->v = q;
			x->cap = cap;
		}
		struct idle_entry *e = &x->v[x->n];
		*e = (struct idle_entry){labels_hash(l, nl), l, nl, NULL, 0};
		if (entry_times(b, c, nc, e)) {
			free(l);
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		} else {
			x->n++;
		}
		free(c);
	}
	free(refs);
	return rc;
}

int idle_index_build(struct pd_tsdb *db, struct idle_index **out, struct pd_err *err)
{
	*out = NULL;
	struct idle_index *x = NULL;
	int rc = 0;
	for (size_t i = 0; i < db->nblocks && !rc; i++) {
		if (!pd_block_meta(db->blocks[i])->idle)
			continue;
		if (!x && !(x = calloc(1, sizeof(*x))))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		rc = add_block(x, db->blocks[i], err);
	}
	if (rc) {
		idle_index_free(x);
		return rc;
	}
	if (x && x->n > 1)
		qsort(x->v, x->n, sizeof(*x->v), entry_cmp);
	*out = x;
	return 0;
}

const struct idle_entry *idle_index_find(const struct idle_index *x, const struct pd_lpair *l,
					 size_t n)
{
	if (!x || !x->n)
		return NULL;
	struct idle_entry key = {labels_hash(l, n), (struct pd_lpair *)l, n, NULL, 0};
	size_t lo = 0, hi = x->n;
	while (lo < hi) { /* the first entry not below key */
		size_t mid = lo + (hi - lo) / 2;
		if (entry_cmp(&x->v[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->n && !entry_cmp(&x->v[lo], &key) ? &x->v[lo] : NULL;
}

int idle_index_holds(const struct idle_index *x, const struct idle_entry *e, int64_t t)
{
	/* the entries of one series (one per block holding it) are adjacent */
	for (const struct idle_entry *end = x->v + x->n, *f = e;
	     f < end && f->hash == e->hash && !labels_cmp(f->labels, f->nl, e->labels, e->nl); f++)
		if (bsearch(&t, f->ts, f->nts, sizeof(*f->ts), i64_cmp))
			return 1;
	return 0;
}

void idle_index_free(struct idle_index *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++) {
		free(x->v[i].labels);
		free(x->v[i].ts);
	}
	free(x->v);
	free(x);
}
