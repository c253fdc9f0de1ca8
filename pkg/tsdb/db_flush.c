/* db_flush.c: persisting the head: the block ranges it holds that are complete
 * written as blocks (deleted samples left out of their chunks), the head and WAL
 * cut after them, idle open chunks sealed, then compaction and retention: what
 * pd_tsdb_flush runs. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profd/pprof.h"
#include "block_int.h"
#include "hc_replay.h"
#include "head_chunks.h"
#include "head_spill.h"
#include "db_int.h"
#include "tsdb_int.h"
#include "wal.h"

/* ---- persisting the head ----------------------------------------------------- */

int db_series_ptr_cmp(const void *a, const void *b)
{
	const struct head_series *x = *(struct head_series *const *)a;
	const struct head_series *y = *(struct head_series *const *)b;
	return labels_cmp(x->labels, x->nlabels, y->labels, y->nlabels);
}

/* ---- deleted samples out of chunks ------------------------------------------ */

/* Chunk c without the samples the intervals iv delete. *kept: 0 when nothing is
 * left; else *out is the chunk to write: c itself when nothing was deleted, or a
 * new chunk (timestamps and values in the store's encoding) whose bytes
 * *ts_owned and *vals_owned receive (malloc'd, the caller frees them). */
int db_filter_chunk(struct pd_tsdb *db, const struct pd_block_chunk *c,
			const struct tomb_entry *iv, size_t niv, struct pd_block_chunk *out,
			uint8_t **ts_owned, uint8_t **vals_owned, int *kept, struct pd_err *err)
{
	int overlaps = 0, rc = 0;
	*ts_owned = *vals_owned = NULL;
	*kept = 1;
	*out = *c;
	for (size_t i = 0; i < niv && !overlaps; i++)
		overlaps = iv[i].mint <= c->maxt && iv[i].maxt >= c->mint;
	if (!overlaps)
		return 0;
	struct pd_chunkenc_ts_iter it;
	struct pd_chunkenc_ts ts;
	struct pd_chunkenc_values *vals =
	    pd_chunkenc_values_create_enc(db->o.value_encoding, db->o.value_group, db->o.zstd_level);
	struct pd_chunkenc_totals *tot = pd_chunkenc_totals_create();
	uint32_t n = 0, all = 0;
	int64_t first = 0, last = 0;
	pd_chunkenc_ts_init(&ts);
	if (!vals || !tot) {
		pd_chunkenc_ts_fini(&ts);
		pd_chunkenc_values_destroy(vals);
		pd_chunkenc_totals_destroy(tot);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	pd_chunkenc_ts_iter_init(&it, c->ts, c->ts_len);
	for (size_t i = 0; !rc && pd_chunkenc_ts_iter_next(&it); i++) {
		int64_t t = pd_chunkenc_ts_iter_at(&it);
		all++;
		if (tomb_covers(iv, niv, t))
			continue;
		uint8_t *p;
		size_t pl;
		struct pd_pprof_profile *prof = NULL;
		struct pd_err derr;
		if ((rc = pd_chunkenc_values_read_tc(c->vals, c->vals_len, c->ts, c->ts_len, i,
						     db->o.max_profile, &p,
						     &pl, err)))
			break;
		if (pd_pprof_decode(&prof, p, pl, NULL, &derr))
			prof = NULL; /* kept opaque */
		rc = pd_chunkenc_values_append_at(vals, t, p, pl, prof, err);
		free(p);
		if (!rc)
			rc = pd_chunkenc_ts_append(&ts, t, err);
		if (!rc)
			rc = pd_chunkenc_totals_append_profile(tot, prof, err);
		pd_pprof_destroy(prof);
		if (!n)
			first = t;
		last = t;
		n++;
	}
	if (!rc && pd_chunkenc_ts_iter_err(&it))
		rc = pd_err_set(err, PD_ECORRUPT, "timestamp chunk of %lld..%lld does not decode",
				(long long)c->mint, (long long)c->maxt);
	if (!rc && n && n < all) {
		/* the timestamps with the totals section of the samples kept */
		size_t tl, xl;
		const uint8_t *tb = pd_chunkenc_ts_bytes(&ts, &tl);
		const uint8_t *xb = pd_chunkenc_totals_bytes(tot, &xl);
		uint8_t *vb;
		size_t vl;
		if (!(*ts_owned = malloc(tl + xl)))
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		else if (!(rc = pd_chunkenc_values_seal_totals(vals, &vb, &vl, err))) {
			memcpy(*ts_owned, tb, tl);
			memcpy(*ts_owned + tl, xb, xl);
			*vals_owned = vb;
			*out = (struct pd_block_chunk){first, last, n, *ts_owned, tl + xl, vb, vl};
		}
		if (rc) {
			free(*ts_owned);
			*ts_owned = NULL;
		}
	}
	if (!rc && !n)
		*kept = 0;
	pd_chunkenc_ts_fini(&ts);
	pd_chunkenc_values_destroy(vals);
	pd_chunkenc_totals_destroy(tot);
	return rc;
}

int db_add_head_series(struct pd_tsdb *db, struct pd_block_writer *w, struct head_series *s,
		       int64_t lo, int64_t hi, int *added, struct pd_err *err)
{
	int rc = 0;
	*added = 0;
	pthread_mutex_lock(&s->mu);
	size_t cap = s->nchunks ? s->nchunks : 1, nc = 0;
	struct pd_block_chunk *cs = malloc(cap * sizeof(*cs));
	uint8_t **owned = calloc(cap * 2, sizeof(*owned));
	if (!cs || !owned)
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t k = 0; k < s->nchunks && !rc; k++) {
		const struct head_chunk *c = &s->chunks[k];
		if (c->mint < lo || c->maxt >= hi)
			continue;
		struct pd_block_chunk bc = {c->mint, c->maxt, c->count, c->ts, c->ts_len,
					    c->vals, c->vals_len};
		int kept = 1;
		/* deleted samples do not reach the block */
		if (s->tomb.n)
			rc = db_filter_chunk(db, &bc, s->tomb.v, s->tomb.n, &bc, &owned[2 * nc],
					     &owned[2 * nc + 1], &kept, err);
		if (!rc && kept)
			cs[nc++] = bc;
	}
	if (!rc && nc) {
		rc = pd_block_writer_add_series(w, s->labels, s->nlabels, cs, nc, err);
		*added = !rc;
	}
	pthread_mutex_unlock(&s->mu);
	for (size_t k = 0; owned && k < 2 * cap; k++)
		free(owned[k]);
	free(owned);
	free(cs);
	return rc;
}

/* Writes the head's chunks inside [lo, hi) as one block and opens it. */
static int persist_range(struct pd_tsdb *db, int64_t lo, int64_t hi, struct pd_err *err)
{
	struct head *h = &db->head;
	struct pd_block_writer *w = NULL;
	struct head_series **all = NULL;
	size_t n = 0;
	int rc;
	if ((rc = head_cut_before(h, hi, err)))
		return rc;
	pthread_rwlock_rdlock(&h->mu);
	all = malloc((h->nseries ? h->nseries : 1) * sizeof(*all));
	if (all)
		for (size_t i = 0; i < h->nseries; i++)
			if (h->series[i])
				all[n++] = h->series[i];
	pthread_rwlock_unlock(&h->mu);
	if (!all)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	qsort(all, n, sizeof(*all), db_series_ptr_cmp);
	uint64_t written = 0;
	if ((rc = pd_block_writer_create(&w, db->dir, lo, hi, 1, NULL, 0, err)))
		goto out;
	for (size_t i = 0; i < n && !rc; i++) {
		int added = 0;
		rc = db_add_head_series(db, w, all[i], lo, hi, &added, err);
		written += (uint64_t)added;
	}
	if (rc) {
		pd_block_writer_abort(w);
		goto out;
	}
	if (!written) {
		pd_block_writer_abort(w);
		goto out;
	}
	char ulid[27];
	if ((rc = pd_block_writer_finish(w, ulid, err)))
		goto out;
	char *p = db_path_join(db->dir, ulid);
	struct pd_block *b;
	if (!p) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	rc = pd_block_open(&b, p, err);
	free(p);
	if (rc)
		goto out;
	pthread_rwlock_wrlock(&db->blocks_mu);
	rc = db_add_block(db, b, err);
	pthread_rwlock_unlock(&db->blocks_mu);
	if (rc)
		pd_block_close(b);
	else
		pd_log_info("tsdb", "block written", "ulid=%s mint=%lld maxt=%lld series=%llu",
		            ulid, (long long)lo, (long long)hi, (unsigned long long)written);
out:
	free(all);
	return rc;
}

struct keep_ctx {
	struct head *h;
	int64_t mint;
};

/* A checkpoint keeps a series entry, and the samples after it, when the series
 * it names (by its labels: in a WAL of earlier versions the ref may be another
 * series' now) has samples at or after mint. */
static int keep_series(void *c, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	struct keep_ctx *k = c;
	struct head_series *s = head_get(k->h, l, n, labels_hash(l, n));
	(void)ref;
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	int keep = s->maxt >= k->mint;
	if (!keep) /* its record is gone: log it again if it comes back */
		__atomic_store_n(&s->logged, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->mu);
	return keep;
}

int db_window_floor(int64_t t, int64_t r, int64_t *out)
{
	*out = t >= 0 ? t / r * r : -((-t - 1) / r + 1) * r;
	return 0;
}

static int flush(struct pd_tsdb *db, int all, struct pd_err *err);

int pd_tsdb_flush(struct pd_tsdb *db, int all, struct pd_err *err)
{
	if (db->o.read_only)
		return pd_err_set(err, PD_EINVAL, "the store is open read-only");
	pthread_mutex_lock(&db->maint_mu);
	int rc = flush(db, all, err);
	pthread_mutex_unlock(&db->maint_mu);
	return rc;
}

static int flush(struct pd_tsdb *db, int all, struct pd_err *err)
{
	struct head *h = &db->head;
	int rc = 0;
	int64_t br = db->o.block_range_ms, persisted_to = INT64_MIN;
	int64_t cap = db_bound_cap(&db->o);
	/* series quiet for a while (pods gone) give their open chunks up to the head
	 * chunk files, beside the appends, before the gate closes */
	int64_t newest = db_capped(__atomic_load_n(&h->maxt, __ATOMIC_RELAXED), cap);
	if (!db->o.sink && newest > INT64_MIN + HEAD_IDLE_SEAL_MS)
		head_seal_idle(h, newest - HEAD_IDLE_SEAL_MS);
	pthread_mutex_lock(&db->append_mu);
	/* close the gate to new commits and let those in flight reach the head, so
	 * that what is persisted and checkpointed is everything reserved */
	while (db->flushing)
		pthread_cond_wait(&db->commit_cv, &db->append_mu);
	db->flushing = 1;
	while (db->inflight)
		pthread_cond_wait(&db->commit_cv, &db->append_mu);
	while (!rc && h->mint != INT64_MAX && h->maxt != INT64_MIN) {
		int64_t lo;
		db_window_floor(h->mint, br, &lo);
		int64_t hi = lo + br;
		/* keep the newest half range in the head, as Prometheus does, unless all */
		if (!all && hi > db_capped(h->maxt, cap) - br / 2)
			break;
		if ((rc = persist_range(db, lo, hi, err)))
			break;
		head_truncate(h, hi);
		persisted_to = hi;
		/* a range persisted before it was complete (all: import, tests)
		 * still takes samples, which the next flush persists as a block
		 * over it and compaction merges with it */
		if (!all && hi > db->min_valid_t)
			__atomic_store_n(&db->min_valid_t, hi, __ATOMIC_RELEASE);
	}
	/* series idle for a while (pods replaced) go to blocks of their own */
	if (!rc && !all && !db->o.sink) {
		struct pd_err ierr = {0};
		if (db_write_idle(db, newest, &ierr))
			pd_log_error("tsdb",
			             "writing idle series to a block failed (they stay in the head; "
			             "retried at the next flush)",
			             "err=%s", ierr.msg);
	}
	/* series with no sample left go, before the checkpoint drops their
	 * entries too; they are freed once no query can hold them */
	struct head_series **dead = NULL;
	size_t ndead = 0;
	if (persisted_to != INT64_MIN && !db->o.sink &&
	    head_gc(h, persisted_to, &dead, &ndead) == 0 && ndead)
		pd_log_info("tsdb", "series without samples dropped from the head", "series=%zu",
		            ndead);
	if (!rc && persisted_to != INT64_MIN && db->wal) {
		struct keep_ctx k = {h, persisted_to};
		/* the chunks written so far are on disk before the WAL lets go of
		 * anything */
		rc = hcm_sync(h->hcm, err);
		if (!rc)
			rc = pd_wal_cut(db->wal, err);
		if (!rc)
			rc = pd_wal_checkpoint(db->wal, persisted_to, keep_series, &k, err);
	}
	pthread_mutex_unlock(&db->append_mu);
	if (ndead) {
		/* queries hold blocks_mu for reading while they use the head's series */
		pthread_rwlock_wrlock(&db->blocks_mu);
		head_gc_free(dead, ndead);
		pthread_rwlock_unlock(&db->blocks_mu);
	}
	int cut_failed = rc != 0;
	if (rc) {
		/* the head keeps what did not reach a block, the WAL what was not
		 * checkpointed: nothing is lost, and the next flush tries again */
		__atomic_fetch_add(&db->head_cut_failures, 1, __ATOMIC_RELAXED);
		pd_log_error("tsdb",
		             "persisting the head as a block failed (the head and the WAL keep "
		             "its samples; retried at the next flush)",
		             "err=%s", err ? err->msg : "");
	}
	if (!rc && (rc = db_compact(db, err))) {
		/* the blocks being merged stay as they are */
		__atomic_fetch_add(&db->compaction_failures, 1, __ATOMIC_RELAXED);
		pd_log_error("tsdb",
		             "compaction failed (the blocks it would merge stay as they are; "
		             "retried at the next flush)",
		             "err=%s", err ? err->msg : "");
	}
	/* retention runs whatever failed before it: a compaction that keeps
	 * failing must not keep the store from giving old blocks up. After a
	 * failed head cut only by time: the WAL, counted in the size, grows while
	 * cuts fail (a full disk) and would take every block with it */
	struct pd_err rerr = {0};
	int r2 = db_apply_retention(db, !cut_failed, &rerr);
	if (r2 && !rc) {
		rc = r2;
		if (err)
			*err = rerr;
	}
	pthread_mutex_lock(&db->append_mu);
	db->flushing = 0;
	pthread_cond_broadcast(&db->commit_cv);
	pthread_mutex_unlock(&db->append_mu);
	return rc;
}
