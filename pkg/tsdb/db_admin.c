/* db_admin.c: what the store reports and the operations an administrator asks
 * for: statistics, the block list, deleting series (tombstones in the head and
 * in blocks) and cleaning tombstones out, and snapshots. */
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

void pd_tsdb_stats(struct pd_tsdb *db, struct pd_storage_stats *st)
{
	memset(st, 0, sizeof(*st));
	struct head *h = &db->head;
	st->head_series_limit = h->max_series;
	st->head_series_limit_refused = __atomic_load_n(&h->refused, __ATOMIC_RELAXED);
	st->head_series_removed = __atomic_load_n(&h->removed, __ATOMIC_RELAXED);
	st->head_series_idle_written = __atomic_load_n(&db->idle_written, __ATOMIC_RELAXED);
	pthread_rwlock_rdlock(&h->mu);
	st->head_mint = h->mint;
	st->head_maxt = h->maxt;
	for (size_t i = 0; i < h->nseries; i++) {
		struct head_series *s = h->series[i];
		if (!s)
			continue;
		pthread_mutex_lock(&s->mu);
		if (s->nchunks || s->open_ts.count)
			st->head_series++;
		st->head_chunks += s->nchunks + (s->open_ts.count ? 1 : 0);
		for (size_t k = 0; k < s->nchunks; k++)
			st->head_samples += s->chunks[k].count;
		st->head_samples += s->open_ts.count;
		st->head_tombstones += s->tomb.n;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_rwlock_unlock(&h->mu);
	pthread_rwlock_rdlock(&db->blocks_mu);
	st->blocks = db->nblocks;
	for (size_t i = 0; i < db->nblocks; i++) {
		st->block_bytes += pd_block_size(db->blocks[i]);
		st->tombstones += pd_block_tombstones(db->blocks[i])->n;
	}
	pthread_rwlock_unlock(&db->blocks_mu);
	st->deletions = __atomic_load_n(&db->deletions, __ATOMIC_RELAXED);
	st->tombstones_cleaned = __atomic_load_n(&db->tombstones_cleaned, __ATOMIC_RELAXED);
	st->snapshots = __atomic_load_n(&db->snapshots, __ATOMIC_RELAXED);
	st->snapshot_failures = __atomic_load_n(&db->snapshot_failures, __ATOMIC_RELAXED);
	st->wal_bytes = db->wal ? pd_wal_size(db->wal) : db->wal_ro_bytes;
	st->compactions = db->compactions;
	st->retention_deletions = db->retention_deletions;
	st->wal_repaired = db->wal_repaired;
	memcpy(st->wal_repair, db->wal_repair, sizeof(st->wal_repair));
	st->wal_damaged_records = db->wal_damaged_records;
	st->wal_damaged_bytes = db->wal_damaged_bytes;
	st->blocks_damaged = db->blocks_damaged;
	memcpy(st->damage, db->damage_note, sizeof(st->damage));
	st->chunks_damaged = __atomic_load_n(&db->chunks_damaged, __ATOMIC_RELAXED);
	st->head_cut_failures = __atomic_load_n(&db->head_cut_failures, __ATOMIC_RELAXED);
	st->compaction_failures = __atomic_load_n(&db->compaction_failures, __ATOMIC_RELAXED);
	st->out_of_bounds = __atomic_load_n(&db->out_of_bounds, __ATOMIC_RELAXED);
	st->too_far_in_future = __atomic_load_n(&db->too_far_in_future, __ATOMIC_RELAXED);
	const char *why;
	st->accept_from = db_accept_from(db, &why);
	st->wal_replay_skipped = db->replay_skipped;
	st->vertical_compactions = __atomic_load_n(&db->vertical_compactions, __ATOMIC_RELAXED);
	hcm_stats(h->hcm, &st->head_chunk_files, &st->head_chunk_bytes, &st->head_chunks_mapped);
	hs_stats(h->hs, &st->head_open_frame_files, &st->head_open_frame_bytes,
		 &st->head_open_frame_live_bytes);
	st->head_open_frame_write_failures = hs_write_failures(h->hs);
	st->head_chunk_files_damaged = db->hc_damaged_files;
	st->head_chunk_write_failures = __atomic_load_n(&h->hc_write_failures, __ATOMIC_RELAXED);
	if (db->fwd)
		tsdb_fwd_stats(db->fwd, st);
	if (db->wal) {
		struct pd_wal_stats ws;
		pd_wal_stats(db->wal, &ws);
		st->wal_records = ws.records;
		st->wal_writes = ws.writes;
		st->wal_fsyncs = ws.fsyncs;
		st->wal_failed_writes = ws.failed_writes;
		st->wal_lazy_commits = ws.lazy_records;
		st->wal_lazy_syncs = ws.lazy_syncs;
	}
}

int pd_tsdb_blocks(struct pd_tsdb *db, struct pd_storage_block_info **out, size_t *n,
		   struct pd_err *err)
{
	if (db->o.sink) { /* no blocks: the remote store keeps the profiles */
		*n = 0;
		*out = calloc(1, sizeof(**out));
		return *out ? 0 : pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	pthread_rwlock_rdlock(&db->blocks_mu);
	*n = db->nblocks;
	*out = calloc(db->nblocks ? db->nblocks : 1, sizeof(**out));
	if (!*out) {
		pthread_rwlock_unlock(&db->blocks_mu);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < db->nblocks; i++) {
		const struct pd_block_meta *m = pd_block_meta(db->blocks[i]);
		struct pd_storage_block_info *b = &(*out)[i];
		memcpy(b->ulid, m->ulid, sizeof(b->ulid));
		b->mint = m->mint;
		b->maxt = m->maxt;
		b->level = m->level;
		b->idle = m->idle;
		b->series = m->num_series;
		b->chunks = m->num_chunks;
		b->samples = m->num_samples;
		b->ts_bytes = m->ts_bytes;
		b->value_bytes = m->value_bytes;
		b->size = pd_block_size(db->blocks[i]);
	}
	pthread_rwlock_unlock(&db->blocks_mu);
	return 0;
}

/* ---- deleting series ------------------------------------------------------------ */

/* The first and last timestamp of a head series (s->mu held); 0 when empty. */
static int head_series_range(const struct head_series *s, int64_t *mint, int64_t *maxt)
{
	if (s->nchunks)
		*mint = s->chunks[0].mint;
	else if (s->open_ts.count)
		*mint = s->open_mint;
	else
		return 0;
	*maxt = s->maxt;
	return 1;
}

/* Tombstones for the head: the matching series' intervals clamped to the samples
 * they hold, written to the WAL as one deletion record and then applied. */
static int delete_head(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
		       int64_t maxt, struct pd_err *err)
{
	struct head *h = &db->head;
	struct source src = {&head_reader_ops, h, h->mint, h->maxt};
	uint64_t *refs = NULL;
	size_t nr = 0, nd = 0;
	struct head_series **ser = NULL;
	struct tomb_entry *iv = NULL;
	unsigned char *entry = NULL;
	struct pd_wal_rec *rec = NULL;
	int rc = tsdb_matching_refs(&src, m, nm, &refs, &nr, err);
	if (rc)
		return rc;
	ser = calloc(nr ? nr : 1, sizeof(*ser));
	iv = calloc(nr ? nr : 1, sizeof(*iv));
	entry = calloc(nr ? nr : 1, 1);
	if (!ser || !iv || !entry) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	pthread_rwlock_rdlock(&h->mu);
	for (size_t i = 0; i < nr; i++) {
		struct head_series *s = head_by_ref_locked(h, refs[i]);
		int64_t lo, hi;
		if (!s)
			continue;
		pthread_mutex_lock(&s->mu);
		/* only samples there now are deleted: later ones are newer than maxt */
		if (head_series_range(s, &lo, &hi) && lo <= maxt && hi >= mint) {
			ser[nd] = s;
			iv[nd++] = (struct tomb_entry){s->ref, mint > lo ? mint : lo, maxt < hi ? maxt : hi};
		}
		pthread_mutex_unlock(&s->mu);
	}
	pthread_rwlock_unlock(&h->mu);
	if (!nd)
		goto out;
	if (db->wal) {
		if (!(rec = pd_wal_rec_create())) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < nd && !rc; i++) {
			entry[i] = !__atomic_load_n(&ser[i]->logged, __ATOMIC_ACQUIRE);
			if (entry[i])
				rc = pd_wal_rec_series(rec, ser[i]->ref, ser[i]->labels, ser[i]->nlabels, err);
		}
		for (size_t i = 0; i < nd && !rc; i++)
			rc = pd_wal_rec_tombstone(rec, iv[i].ref, iv[i].mint, iv[i].maxt, err);
		if (!rc)
			rc = pd_wal_rec_seal(rec, err);
		if (rc)
			goto out;
		/* queued as commits are, so the WAL order is the order of the head */
		pthread_mutex_lock(&db->append_mu);
		pd_wal_enqueue(db->wal, rec);
		pthread_mutex_unlock(&db->append_mu);
		if ((rc = pd_wal_wait(db->wal, rec, err))) {
			pd_err_prefix(err, "writing the deletion to the WAL");
			goto out;
		}
		for (size_t i = 0; i < nd; i++)
			if (entry[i])
				__atomic_store_n(&ser[i]->logged, 1, __ATOMIC_RELEASE);
	}
	for (size_t i = 0; i < nd && !rc; i++) {
		pthread_mutex_lock(&ser[i]->mu);
		if (tomb_add(&ser[i]->tomb, 0, iv[i].mint, iv[i].maxt))
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		tomb_normalize(&ser[i]->tomb);
		pthread_mutex_unlock(&ser[i]->mu);
	}
out:
	pd_wal_rec_destroy(rec);
	free(entry);
	free(iv);
	free(ser);
	free(refs);
	return rc;
}

/* Tombstones for one block: its matching series' intervals clamped to the block
 * and to the chunks each holds; the tombstones file is rewritten when any is new. */
static int delete_block(struct pd_tsdb *db, struct pd_block *b, const struct pd_storage_matcher *m,
			size_t nm, int64_t mint, int64_t maxt, struct pd_err *err)
{
	const struct pd_block_meta *bm = pd_block_meta(b);
	struct source src = {&block_reader_ops, b, bm->mint, bm->maxt - 1};
	struct tombstones t;
	uint64_t *refs = NULL, size;
	size_t nr = 0, added = 0;
	int rc;
	if (bm->maxt <= mint || bm->mint > maxt)
		return 0;
	if ((rc = tsdb_matching_refs(&src, m, nm, &refs, &nr, err)))
		return rc;
	if (tomb_copy(pd_block_tombstones(b), &t)) {
		free(refs);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nr && !rc; i++) {
		struct pd_lpair *l;
		struct rchunk *c;
		size_t nl, nc;
		if ((rc = block_reader_ops.series(b, refs[i], &l, &nl, &c, &nc, err)))
			break;
		if (nc && c[0].mint <= maxt && c[nc - 1].maxt >= mint) {
			int64_t lo = mint > c[0].mint ? mint : c[0].mint;
			int64_t hi = maxt < c[nc - 1].maxt ? maxt : c[nc - 1].maxt;
			if (tomb_add(&t, refs[i], lo, hi))
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			added++;
		}
		free(l);
		free(c);
	}
	if (!rc && added) {
		tomb_normalize(&t);
		if (!(rc = tomb_write_file(pd_block_dir(b), &t, &size, err))) {
			pthread_rwlock_wrlock(&db->blocks_mu);
			pd_block_swap_tombstones(b, &t, size);
			pthread_rwlock_unlock(&db->blocks_mu);
		}
	}
	tomb_fini(&t);
	free(refs);
	return rc;
}

int pd_tsdb_delete(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
		   int64_t maxt, struct pd_err *err)
{
	if (db->o.sink)
		return tsdb_sink_unsupported(db, "deleting series", err);
	int rc = 0;
	if (db->o.read_only)
		return pd_err_set(err, PD_EINVAL, "the store is open read-only");
	if (!nm)
		return pd_err_set(err, PD_EINVAL, "deleting series needs at least one matcher");
	if (mint > maxt)
		return pd_err_set(err, PD_EINVAL, "the start of the deletion (%lld) is after its end (%lld)",
				  (long long)mint, (long long)maxt);
	/* no flush, compaction or snapshot meanwhile: a block being written from the
	 * head, or blocks being merged, would miss the tombstones */
	pthread_mutex_lock(&db->maint_mu);
	for (size_t i = 0; i < db->nblocks && !rc; i++)
		rc = delete_block(db, db->blocks[i], m, nm, mint, maxt, err);
	if (!rc)
		rc = delete_head(db, m, nm, mint, maxt, err);
	if (!rc)
		__atomic_fetch_add(&db->deletions, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&db->maint_mu);
	if (rc)
		pd_err_prefix(err, "deleting series");
	return rc;
}

int pd_tsdb_clean_tombstones(struct pd_tsdb *db, struct pd_err *err)
{
	if (db->o.sink)
		return tsdb_sink_unsupported(db, "cleaning tombstones", err);
	int rc = 0;
	if (db->o.read_only)
		return pd_err_set(err, PD_EINVAL, "the store is open read-only");
	pthread_mutex_lock(&db->maint_mu);
	for (size_t i = 0; i < db->nblocks && !rc;) {
		char ulid[27];
		if (!pd_block_tombstones(db->blocks[i])->n) {
			i++;
			continue;
		}
		/* the block again without what is deleted, one level up with the same
		 * sources, so that a crash before the old one is gone drops the old one */
		if ((rc = db_merge_blocks(db, db->blocks + i, 1, ulid, err)) ||
		    (rc = db_swap_blocks(db, i, 1, ulid, err)))
			break;
		__atomic_fetch_add(&db->tombstones_cleaned, 1, __ATOMIC_RELAXED);
		if (ulid[0])
			i++;
	}
	pthread_mutex_unlock(&db->maint_mu);
	if (rc)
		pd_err_prefix(err, "cleaning tombstones");
	return rc;
}

/* ---- snapshots -------------------------------------------------------------------- */

/* Copies file from to to (for a snapshot on another file system than the store). */
static int copy_file(const char *from, const char *to, struct pd_err *err)
{
	uint8_t *buf = NULL;
	size_t len;
	int rc = pd_file_read(from, SIZE_MAX, &buf, &len, err);
	if (!rc)
		rc = pd_file_write(to, buf, len, err);
	free(buf);
	return rc;
}

/* Links (or copies) every file of directory from into the new directory to, and
 * the files of its subdirectories likewise, one level deep (a block's chunks/). */
static int link_dir(const char *from, const char *to, int depth, struct pd_err *err)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;
	if (mkdir(to, 0755) != 0)
		return pd_err_set(err, PD_EIO, "creating %s: %s", to, strerror(errno));
	if (!(d = opendir(from)))
		return pd_err_set(err, PD_EIO, "%s: %s", from, strerror(errno));
	while (!rc && (e = readdir(d))) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *f = db_path_join(from, e->d_name), *t = db_path_join(to, e->d_name);
		if (!f || !t)
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		else if (lstat(f, &st) != 0)
			rc = pd_err_set(err, PD_EIO, "%s: %s", f, strerror(errno));
		else if (S_ISDIR(st.st_mode) && depth > 0)
			rc = link_dir(f, t, depth - 1, err);
		else if (S_ISREG(st.st_mode) && link(f, t) != 0) {
			/* blocks are immutable, so a link is a copy; across file systems, copy */
			if (errno == EXDEV || errno == EPERM || errno == EMLINK)
				rc = copy_file(f, t, err);
			else
				rc = pd_err_set(err, PD_EIO, "linking %s to %s: %s", f, t, strerror(errno));
		}
		free(f);
		free(t);
	}
	closedir(d);
	if (!rc)
		rc = pd_fsync_dir(to, err);
	return rc;
}

/* Writes the head (less what its tombstones delete) as one block in dir. */
static int snapshot_head(struct pd_tsdb *db, const char *dir, struct pd_err *err)
{
	struct head *h = &db->head;
	struct head_series **all = NULL;
	struct pd_block_writer *w = NULL;
	size_t n = 0;
	uint64_t written = 0;
	int rc = 0;
	pthread_rwlock_rdlock(&h->mu);
	int64_t lo = h->mint, hi = h->maxt;
	all = malloc((h->nseries ? h->nseries : 1) * sizeof(*all));
	if (all)
		for (size_t i = 0; i < h->nseries; i++)
			if (h->series[i])
				all[n++] = h->series[i];
	pthread_rwlock_unlock(&h->mu);
	if (!all)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (lo == INT64_MAX || hi == INT64_MIN || lo > hi)
		goto out; /* an empty head */
	qsort(all, n, sizeof(*all), db_series_ptr_cmp);
	if ((rc = pd_block_writer_create(&w, dir, lo, hi + 1, 1, NULL, 0, err)))
		goto out;
	for (size_t i = 0; i < n && !rc; i++) {
		struct head_series *s = all[i];
		pthread_mutex_lock(&s->mu);
		size_t cap = s->nchunks + 1, nc = 0;
		struct pd_block_chunk *cs = malloc(cap * sizeof(*cs));
		uint8_t **owned = calloc(cap * 2 + 2, sizeof(*owned));
		struct tombstones t;
		/* what the tombstones delete, and what came before or after the head's
		 * range as it was read above (appended meanwhile) */
		rc = tomb_copy(&s->tomb, &t);
		if (!rc && lo > INT64_MIN)
			rc = tomb_add(&t, 0, INT64_MIN, lo - 1);
		if (!rc && hi < INT64_MAX)
			rc = tomb_add(&t, 0, hi + 1, INT64_MAX);
		tomb_normalize(&t);
		if (rc || !cs || !owned)
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		for (size_t k = 0; k <= s->nchunks && !rc; k++) {
			struct pd_block_chunk bc;
			if (k < s->nchunks) {
				const struct head_chunk *c = &s->chunks[k];
				bc = (struct pd_block_chunk){c->mint, c->maxt, c->count, c->ts, c->ts_len,
							     c->vals, c->vals_len};
			} else if (s->open_ts.count) {
				/* the open chunk, sealed into a copy: the head goes on appending to it */
				size_t tl, vl;
				uint8_t *vb, *tb;
				if ((rc = head_open_ts(s, &tb, &tl, err)))
					break;
				owned[2 * cap + 1] = tb;
				if ((rc = head_seal_values(s, &vb, &vl, err)))
					break;
				owned[2 * cap] = vb;
				bc = (struct pd_block_chunk){s->open_mint, s->maxt, s->open_ts.count, tb, tl,
							     vb, vl};
			} else {
				break;
			}
			int kept = 1;
			rc = db_filter_chunk(db, &bc, t.v, t.n, &bc, &owned[2 * nc], &owned[2 * nc + 1],
					  &kept, err);
			if (!rc && kept)
				cs[nc++] = bc;
		}
		if (!rc && nc) {
			rc = pd_block_writer_add_series(w, s->labels, s->nlabels, cs, nc, err);
			written++;
		}
		pthread_mutex_unlock(&s->mu);
		tomb_fini(&t);
		if (owned)
			for (size_t k = 0; k < 2 * cap + 2; k++)
				free(owned[k]);
		free(owned);
		free(cs);
	}
	if (rc || !written)
		pd_block_writer_abort(w);
	else {
		char ulid[27];
		rc = pd_block_writer_finish(w, ulid, err);
	}
out:
	free(all);
	return rc;
}

static int random_hex(char *out, size_t nbytes)
{
	uint8_t b[32];
	FILE *f = fopen("/dev/urandom", "rb");
	if (!f)
		return -1;
	size_t got = fread(b, 1, nbytes, f);
	fclose(f);
	if (got != nbytes)
		return -1;
	for (size_t i = 0; i < nbytes; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

int pd_tsdb_snapshot(struct pd_tsdb *db, int skip_head, char name[PD_TSDB_SNAPSHOT_NAME_MAX],
		     struct pd_err *err)
{
	if (db->o.sink) {
		name[0] = '\0';
		return tsdb_sink_unsupported(db, "a snapshot", err);
	}
	char *sdir = db_path_join(db->dir, PD_TSDB_SNAPSHOTS_DIR), *tmp = NULL, *final = NULL;
	int rc = 0;
	name[0] = '\0';
	if (!sdir)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	/* YYYYMMDDTHHMMSSZ-<16 hex digits>, as Prometheus names its snapshots */
	time_t now = time(NULL);
	struct tm tm;
	char hex[17];
	gmtime_r(&now, &tm);
	if (random_hex(hex, 8)) {
		free(sdir);
		return pd_err_set(err, PD_EIO, "reading /dev/urandom for the snapshot's name failed");
	}
	snprintf(name, PD_TSDB_SNAPSHOT_NAME_MAX, "%04d%02d%02dT%02d%02d%02dZ-%s", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, hex);
	final = db_path_join(sdir, name);
	size_t tl = final ? strlen(final) + 5 : 0;
	if (final && (tmp = malloc(tl)))
		snprintf(tmp, tl, "%s.tmp", final);
	if (!tmp) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	if (mkdir(sdir, 0755) != 0 && errno != EEXIST) {
		rc = pd_err_set(err, PD_EIO, "creating %s: %s", sdir, strerror(errno));
		goto out;
	}
	/* the block list stays as it is while the snapshot links it */
	pthread_mutex_lock(&db->maint_mu);
	if (mkdir(tmp, 0755) != 0)
		rc = pd_err_set(err, PD_EIO, "creating %s: %s", tmp, strerror(errno));
	for (size_t i = 0; i < db->nblocks && !rc; i++) {
		const struct pd_block_meta *m = pd_block_meta(db->blocks[i]);
		char *to = db_path_join(tmp, m->ulid);
		rc = to ? link_dir(pd_block_dir(db->blocks[i]), to, 1, err)
			: pd_err_set(err, PD_ENOMEM, "out of memory");
		free(to);
	}
	if (!rc && !skip_head)
		rc = snapshot_head(db, tmp, err);
	if (!rc)
		rc = pd_fsync_dir(tmp, err);
	if (!rc && rename(tmp, final) != 0)
		rc = pd_err_set(err, PD_EIO, "renaming %s: %s", tmp, strerror(errno));
	if (!rc)
		rc = pd_fsync_dir(sdir, err);
	if (rc) {
		db_rm_rf(tmp);
		__atomic_fetch_add(&db->snapshot_failures, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&db->snapshots, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&db->maint_mu);
out:
	if (rc) {
		name[0] = '\0';
		pd_err_prefix(err, "snapshot");
	}
	free(sdir);
	free(tmp);
	free(final);
	return rc;
}
