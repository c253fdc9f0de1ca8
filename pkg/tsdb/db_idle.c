/* db_idle.c: series that went idle (a pod replaced, a job gone) written out of
 * the head before their block range is complete. At a flush, every series with
 * no sample for the store's head_idle_ms behind the head's newest, and for three
 * of its own sample intervals, goes to a block of idle series over each block
 * range it has chunks in (meta.json's compaction hint "from-idle-series"), and
 * then leaves the head with its postings and labels. Prometheus keeps such series
 * until the head truncation after their range, so a fleet whose pods are
 * replaced every few minutes held every replaced pod's series for up to three
 * hours. Compaction merges these blocks with their range's block once the range
 * is persisted (db_compact.c). */
#include <stdlib.h>
#include <string.h>

#include "block_int.h"
#include "head_chunks.h"
#include "db_int.h"
#include "tsdb_int.h"

#define IDLE_MAX_INTERVAL_MS (24LL * 3600 * 1000) /* clamp of a series' own interval */

/* The series' sample interval, from its open chunk or else its last closed
 * one; 0 when it has fewer than two samples in either. s->mu held. */
static int64_t series_interval(const struct head_series *s)
{
	int64_t iv = 0;
	if (s->open_ts.count >= 2)
		iv = (s->maxt - s->open_mint) / (int64_t)(s->open_ts.count - 1);
	else if (s->nchunks && s->chunks[s->nchunks - 1].count >= 2) {
		const struct head_chunk *c = &s->chunks[s->nchunks - 1];
		iv = (c->maxt - c->mint) / (int64_t)(c->count - 1);
	}
	return iv < 0 ? 0 : iv > IDLE_MAX_INTERVAL_MS ? IDLE_MAX_INTERVAL_MS : iv;
}

/* Whether s is idle at newest (s->mu held): it has samples, none for idle ms
 * and three of its intervals, and no commit holds it. */
static int series_idle(const struct head_series *s, int64_t newest, int64_t idle)
{
	if (s->maxt == INT64_MIN || (!s->nchunks && !s->open_ts.count))
		return 0;
	if (s->commit_seq != s->commit_done || __atomic_load_n(&s->pins, __ATOMIC_ACQUIRE))
		return 0;
	int64_t wait = 3 * series_interval(s);
	if (wait < idle)
		wait = idle;
	return s->maxt < newest - wait;
}

/* The idle series of the head, their open chunks sealed, into *out (malloc'd,
 * sorted by labels). */
static int idle_series(struct head *h, int64_t newest, int64_t idle, struct head_series ***out,
		       size_t *n, struct pd_err *err)
{
	struct head_series **v = NULL;
	size_t nv = 0, cap = 0;
	int rc = 0;
	pthread_rwlock_rdlock(&h->mu);
	for (size_t i = 0; i < h->nseries && !rc; i++) {
		struct head_series *s = h->series[i];
		if (!s)
			continue;
		pthread_mutex_lock(&s->mu);
		struct pd_err serr;
		/* a seal that fails (out of memory) keeps the series in the head */
		if (series_idle(s, newest, idle) && head_seal_series(h, s, &serr) == 0) {
			if (nv == cap) {
				size_t nc = cap ? cap * 2 : 64;
				void *q = realloc(v, nc * sizeof(*v));
				if (!q)
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				else {
					v = q;
					cap = nc;
				}
			}
			if (!rc)
				v[nv++] = s;
		}
		pthread_mutex_unlock(&s->mu);
	}
	pthread_rwlock_unlock(&h->mu);
	if (rc) {
		free(v);
		return rc;
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), db_series_ptr_cmp);
	*out = v;
	*n = nv;
	return 0;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The block ranges (starts, ascending, unique) the series' chunks are in. */
static int idle_ranges(struct head_series **v, size_t n, int64_t br, int64_t **out, size_t *nout)
{
	size_t total = 0, k = 0;
	for (size_t i = 0; i < n; i++)
		total += v[i]->nchunks;
	int64_t *r = malloc((total ? total : 1) * sizeof(*r));
	if (!r)
		return PD_ENOMEM;
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < v[i]->nchunks; c++)
			db_window_floor(v[i]->chunks[c].mint, br, &r[k++]);
	qsort(r, k, sizeof(*r), i64_cmp);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || r[u - 1] != r[i])
			r[u++] = r[i];
	*out = r;
	*nout = u;
	return 0;
}

/* Writes the chunks of v[0..n) in [lo, lo + br) as a block of idle series and
 * opens it (*out NULL when no chunk was left to write). */
static int write_range(struct pd_tsdb *db, struct head_series **v, size_t n, int64_t lo,
		       struct pd_block **out, struct pd_err *err)
{
	int64_t hi = lo + db->o.block_range_ms;
	struct pd_block_writer *w = NULL;
	uint64_t written = 0;
	int rc;
	*out = NULL;
	if ((rc = pd_block_writer_create(&w, db->dir, lo, hi, 1, NULL, 0, err)))
		return rc;
	pd_block_writer_set_idle(w);
	for (size_t i = 0; i < n && !rc; i++) {
		int added = 0;
		rc = db_add_head_series(db, w, v[i], lo, hi, &added, err);
		written += (uint64_t)added;
	}
	if (rc || !written) {
		pd_block_writer_abort(w);
		return rc;
	}
	char ulid[27];
	if ((rc = pd_block_writer_finish(w, ulid, err)))
		return rc;
	char *p = db_path_join(db->dir, ulid);
	if (!p)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	rc = pd_block_open(out, p, err);
	if (rc)
		db_rm_rf(p);
	free(p);
	return rc;
}

/* Closes and deletes blocks that were written but are not the store's. */
static void discard(struct pd_block **bs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *dir = strdup(pd_block_dir(bs[i]));
		pd_block_close(bs[i]);
		if (dir)
			db_rm_rf(dir);
		free(dir);
	}
}

/* Takes block b out of db->blocks (blocks_mu held for writing). */
static void unlist(struct pd_tsdb *db, struct pd_block *b)
{
	for (size_t i = 0; i < db->nblocks; i++)
		if (db->blocks[i] == b) {
			memmove(db->blocks + i, db->blocks + i + 1,
				(db->nblocks - i - 1) * sizeof(*db->blocks));
			db->nblocks--;
			return;
		}
}

int db_write_idle(struct pd_tsdb *db, int64_t newest, struct pd_err *err)
{
	struct head *h = &db->head;
	int64_t idle = db->o.head_idle_ms;
	if (idle <= 0 || db->o.sink || newest == INT64_MIN || newest < INT64_MIN / 2)
		return 0;
	struct head_series **v = NULL;
	size_t n = 0, nr = 0, nb = 0;
	int64_t *ranges = NULL;
	struct pd_block **bs = NULL;
	int rc = idle_series(h, newest, idle, &v, &n, err);
	if (rc || !n)
		goto out;
	if (idle_ranges(v, n, db->o.block_range_ms, &ranges, &nr) ||
	    !(bs = calloc(nr ? nr : 1, sizeof(*bs)))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	/* the series do not change meanwhile: flush holds commits back */
	for (size_t i = 0; i < nr && !rc; i++) {
		struct pd_block *b = NULL;
		if (!(rc = write_range(db, v, n, ranges[i], &b, err)) && b)
			bs[nb++] = b;
	}
	if (rc) {
		discard(bs, nb); /* the series stay in the head, as they were */
		goto out;
	}
	/* the blocks come and the series go in one step for queries, which hold
	 * blocks_mu while they read the head's series */
	pthread_rwlock_wrlock(&db->blocks_mu);
	for (size_t i = 0; i < nb && !rc; i++)
		if ((rc = db_add_block(db, bs[i], err)))
			for (size_t k = 0; k < i; k++)
				unlist(db, bs[k]);
	if (rc) {
		pthread_rwlock_unlock(&db->blocks_mu);
		discard(bs, nb);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&v[i]->mu);
		head_series_drop_chunks(v[i]);
		pthread_mutex_unlock(&v[i]->mu);
	}
	struct head_series **dead = NULL;
	size_t ndead = 0;
	if (head_gc(h, INT64_MAX, &dead, &ndead) == 0)
		head_gc_free(dead, ndead);
	pthread_rwlock_unlock(&db->blocks_mu);
	/* head chunk files that hold no chunk of the head any more go */
	hcm_truncate(h->hcm);
	__atomic_add_fetch(&db->idle_written, n, __ATOMIC_RELAXED);
	pd_log_info("tsdb", "idle series written to blocks and taken out of the head",
	            "series=%zu blocks=%zu", n, nb);
out:
	free(v);
	free(ranges);
	free(bs);
	return rc;
}
