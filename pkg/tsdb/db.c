/* db.c: the database: opening (blocks, WAL replay into the head), the appender
 * with all-or-nothing commits (WAL first, with group commit, then the head, in
 * parallel across series and in order within one), persisting head ranges as
 * blocks, compaction of blocks into larger ranges, and retention by time and by
 * size. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profd/pprof.h"
#include "block_int.h"
#include "ch_query.h"
#include "hc_replay.h"
#include "head_chunks.h"
#include "head_spill.h"
#include "tsdb_int.h"
#include "wal.h"

void pd_tsdb_opts_init(struct pd_tsdb_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->retention_ms = PD_TSDB_DEFAULT_RETENTION_MS;
	o->block_range_ms = PD_TSDB_DEFAULT_BLOCK_RANGE_MS;
	o->chunk_samples = PD_TSDB_DEFAULT_CHUNK_SAMPLES;
	o->chunk_stagger = PD_TSDB_DEFAULT_CHUNK_STAGGER;
	o->value_encoding = PD_CHUNKENC_DEFAULT_ENCODING;
	o->value_group = 0; /* the encoding's own default */
	o->zstd_level = PD_CHUNKENC_DEFAULT_ZSTD_LEVEL;
	o->max_profile = PD_TSDB_DEFAULT_MAX_PROFILE;
	o->max_series = PD_TSDB_DEFAULT_MAX_SERIES;
	o->max_future_ms = PD_TSDB_DEFAULT_MAX_FUTURE_MS;
}

/* The latest time any bound is measured from: the system clock (INT64_MAX
 * without a future window). A sample dated after it, within the window or
 * stored before the window existed, moves no bound past the present: neither
 * the earliest time accepted, nor retention, nor which block ranges are
 * complete. */
static int64_t bound_cap(const struct pd_tsdb_opts *o)
{
	if (o->max_future_ms < 0)
		return INT64_MAX;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The latest time a sample is accepted at: the clock plus the future window
 * (INT64_MAX without one). */
static int64_t future_cap(const struct pd_tsdb_opts *o)
{
	int64_t now = bound_cap(o);
	if (now == INT64_MAX)
		return INT64_MAX;
	return now > INT64_MAX - o->max_future_ms ? INT64_MAX : now + o->max_future_ms;
}

/* t, but no later than cap. */
static int64_t capped(int64_t t, int64_t cap)
{
	return t < cap ? t : cap;
}

static void fill_defaults(struct pd_tsdb_opts *o)
{
	struct pd_tsdb_opts d;
	pd_tsdb_opts_init(&d);
	if (!o->retention_ms)
		o->retention_ms = d.retention_ms;
	if (o->block_range_ms <= 0)
		o->block_range_ms = d.block_range_ms;
	if (!o->chunk_samples || o->chunk_samples > PD_CHUNKENC_MAX_SAMPLES)
		o->chunk_samples = d.chunk_samples;
	if (o->value_encoding != PD_CHUNKENC_VALUES_ZSTD_GROUPS &&
	    o->value_encoding != PD_CHUNKENC_VALUES_COLUMNAR)
		o->value_encoding = d.value_encoding;
	if (!o->zstd_level)
		o->zstd_level = d.zstd_level;
	if (!o->max_profile)
		o->max_profile = d.max_profile;
	if (!o->max_future_ms)
		o->max_future_ms = PD_TSDB_DEFAULT_MAX_FUTURE_MS;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int rm_rf(const char *path)
{
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int is_ulid(const char *s)
{
	if (strlen(s) != 26)
		return 0;
	for (const char *c = s; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'A' && *c <= 'Z')))
			return 0;
	return 1;
}

static int block_cmp(const void *a, const void *b)
{
	const struct pd_block_meta *x = pd_block_meta(*(struct pd_block *const *)a);
	const struct pd_block_meta *y = pd_block_meta(*(struct pd_block *const *)b);
	return x->mint < y->mint ? -1 : x->mint > y->mint;
}

static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

static int add_block(struct pd_tsdb *db, struct pd_block *b, struct pd_err *err)
{
	struct pd_block **nb = realloc(db->blocks, (db->nblocks + 1) * sizeof(*nb));
	if (!nb)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	db->blocks = nb;
	db->blocks[db->nblocks++] = b;
	qsort(db->blocks, db->nblocks, sizeof(*db->blocks), block_cmp);
	return 0;
}

/* True when every source of a is among the sources of b. */
static int sources_within(const struct pd_block_meta *a, const struct pd_block_meta *b)
{
	for (size_t i = 0; i < a->nsources; i++) {
		size_t k = 0;
		while (k < b->nsources && strcmp(a->sources[i], b->sources[k]) != 0)
			k++;
		if (k == b->nsources)
			return 0;
	}
	return a->nsources > 0;
}

/* A compaction that a crash interrupted after writing its block but before
 * deleting the blocks it replaced leaves both: drop the replaced ones. */
static void drop_superseded(struct pd_tsdb *db)
{
	for (size_t i = 0; i < db->nblocks;) {
		const struct pd_block_meta *a = pd_block_meta(db->blocks[i]);
		int superseded = 0;
		for (size_t k = 0; k < db->nblocks && !superseded; k++)
			superseded = k != i && pd_block_meta(db->blocks[k])->level > a->level &&
				     sources_within(a, pd_block_meta(db->blocks[k]));
		if (!superseded) {
			i++;
			continue;
		}
		char *dir = strdup(pd_block_dir(db->blocks[i]));
		pd_block_close(db->blocks[i]);
		memmove(db->blocks + i, db->blocks + i + 1, (db->nblocks - i - 1) * sizeof(*db->blocks));
		db->nblocks--;
		if (dir) {
			/* a read-only reader (profd tsdb) only hides it: the daemon may own
			 * the directory and is the one to clean up */
			if (!db->o.read_only)
				rm_rf(dir);
			free(dir);
		}
	}
}

/* Notes damage found at open (or, for a read-only store, hidden blocks). */
static void note_damage(struct pd_tsdb *db, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note_damage(struct pd_tsdb *db, const char *fmt, ...)
{
	va_list ap;
	char msg[PD_ERR_MSG_MAX + 128];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pd_log_warn("tsdb", "damage set aside", "err=%s", msg);
	if (!db->damage_note[0]) {
		size_t n = strlen(msg);
		if (n >= sizeof(db->damage_note))
			n = sizeof(db->damage_note) - 1;
		memcpy(db->damage_note, msg, n);
		db->damage_note[n] = '\0';
	}
}

/* Moves the block directory name (in db->dir), which did not open, into
 * damaged/ under the data directory, out of the store's way; a read-only reader
 * only leaves it out. */
static void set_aside(struct pd_tsdb *db, const char *name, const struct pd_err *why)
{
	db->blocks_damaged++;
	if (db->o.read_only) {
		note_damage(db, "block %s left out, damaged: %s", name, why->msg);
		return;
	}
	char *dd = path_join(db->dir, PD_TSDB_DAMAGED_DIR);
	char *from = path_join(db->dir, name);
	char *to = dd ? path_join(dd, name) : NULL;
	int ok = dd && from && to && (mkdir(dd, 0755) == 0 || errno == EEXIST);
	for (int i = 1; ok && i < 100 && access(to, F_OK) == 0; i++) {
		/* set aside before under the same name: keep both */
		free(to);
		size_t n = strlen(dd) + strlen(name) + 8;
		if ((to = malloc(n)))
			snprintf(to, n, "%s/%s.%d", dd, name, i);
		ok = to != NULL;
	}
	if (ok && rename(from, to) == 0) {
		pd_fsync_dir(db->dir, NULL);
		note_damage(db, "block %s moved to %s, damaged: %s", name, to, why->msg);
	} else {
		note_damage(db, "block %s left out, damaged (moving it to %s/ failed: %s): %s", name,
			    PD_TSDB_DAMAGED_DIR, strerror(errno), why->msg);
	}
	free(dd);
	free(from);
	free(to);
}

/* Only allocation failures stop the store from opening; a block that does not
 * open for any other reason is damaged and set aside. */
static int load_blocks(struct pd_tsdb *db, struct pd_err *err)
{
	DIR *d = opendir(db->dir);
	struct dirent *e;
	int rc = 0;
	if (!d)
		return pd_err_set(err, PD_EIO, "%s: %s", db->dir, strerror(errno));
	while ((e = readdir(d)) && !rc) {
		size_t l = strlen(e->d_name);
		char *p = path_join(db->dir, e->d_name);
		if (!p) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		if ((l > 4 && strcmp(e->d_name + l - 4, ".tmp") == 0) ||
		    (l > 8 && strcmp(e->d_name + l - 8, ".deleted") == 0)) {
			/* a block write or delete that a crash interrupted, or one that a
			 * running daemon is doing now: only a writer removes it */
			if (!db->o.read_only)
				rm_rf(p);
		} else if (is_ulid(e->d_name)) {
			struct pd_block *b;
			struct pd_err berr = {0};
			int r2 = pd_block_open(&b, p, &berr);
			if (r2 == PD_ENOMEM)
				rc = pd_err_set(err, PD_ENOMEM, "%s", berr.msg);
			else if (r2)
				set_aside(db, e->d_name, &berr);
			else if ((rc = add_block(db, b, err)))
				pd_block_close(b);
		}
		free(p);
	}
	closedir(d);
	if (!rc)
		drop_superseded(db);
	return rc;
}

/* ---- WAL replay ------------------------------------------------------------ */

/* Replay creates each series under the ref the WAL names, so that the head's refs
 * and the WAL's agree across restarts, and new series get refs past every ref the
 * WAL has named (docs/format/wal.md). A ref resolves to the series of its latest
 * series entry before the sample: earlier versions gave series new refs at each
 * restart, so in their WALs one ref may name several series over time. Such a
 * series, whose ref is taken in the head already, gets a new ref and is logged
 * again under it. refs maps the WAL's ref to the series' index in the head. */
struct replay_ctx {
	struct pd_tsdb *db;
	uint64_t skipped;
	uint64_t bad_series; /* series entries with ref 0, or too large */
	struct pd_u64map refs; /* WAL ref -> index in head.series + 1; 0: unknown */
	struct hc_replay *hc;  /* the chunks of the head chunk files, or NULL */
};

/* Drops the series replay created without a sample (none is in use yet); they
 * are not counted as removed by a truncation. */
static void drop_empty_series(struct head *h)
{
	struct head_series **dead = NULL;
	size_t ndead = 0;
	if (head_gc(h, INT64_MIN + 1, &dead, &ndead) == 0 && ndead) {
		__atomic_sub_fetch(&h->removed, ndead, __ATOMIC_RELAXED);
		head_gc_free(dead, ndead);
	}
}

static int replay_series(void *c, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	struct replay_ctx *rc = c;
	struct head *h = &rc->db->head;
	struct head_series *s;
	int created;
	struct pd_err err;
	if (ref == 0 || ref >= HEAD_MAX_REF) {
		rc->bad_series++;
		return 0;
	}
	head_note_ref(h, ref);
	if (!(s = head_get(h, l, n, labels_hash(l, n)))) {
		int r2 = head_get_or_create(h, l, n, head_by_ref_locked(h, ref) ? 0 : ref, &s,
					    &created, &err);
		if (r2 == PD_ENOMEM)
			return r2;
		if (r2) {
			rc->bad_series++;
			return 0;
		}
	}
	uint32_t ix; /* the series' index in the head */
	if (!pd_u64map_get(&h->refs, s->ref, &ix) || pd_u64map_put(&rc->refs, ref, ix + 1))
		return PD_ENOMEM;
	return 0;
}

/* The head series a WAL ref names now, or NULL. */
static struct head_series *replay_lookup(struct replay_ctx *rc, uint64_t ref)
{
	struct head *h = &rc->db->head;
	uint32_t ix;
	if (ref == 0 || !pd_u64map_get(&rc->refs, ref, &ix) || ix == 0 || ix > h->nseries)
		return NULL;
	return h->series[ix - 1];
}

/* After replay: a series is logged when the WAL's latest entry of its ref names
 * it; any other (its ref taken by another series in the WAL, or created under a
 * new ref) is logged again by its next commit. */
static void replay_mark_logged(struct replay_ctx *rc)
{
	struct head *h = &rc->db->head;
	for (size_t i = 0; i < h->nseries; i++)
		if (h->series[i])
			h->series[i]->logged = replay_lookup(rc, h->series[i]->ref) == h->series[i];
}

static int replay_sample(void *c, uint64_t ref, int64_t t, const uint8_t *p, size_t len)
{
	struct replay_ctx *rc = c;
	struct head *h = &rc->db->head;
	struct pd_err err;
	struct head_series *s = replay_lookup(rc, ref);
	head_note_ref(h, ref);
	/* every sample goes back into the head, those before the newest block's
	 * end included: a crash between writing a block and checkpointing the WAL
	 * leaves them in both, which the next flush persists again and compaction
	 * merges (duplicates once), and a store that took them before appends were
	 * bounded has them nowhere else */
	if (!s) {
		rc->skipped++;
		return 0;
	}
	if (rc->db->o.clickhouse) {
		/* the profiles are ClickHouse's: the head keeps the newest time only */
		tsdb_ch_note_time(s, t);
		return 0;
	}
	/* a sample a head chunk file holds is not encoded again */
	if (hc_replay_sample(rc->hc, h, s, ref, t))
		return 0;
	uint8_t *raw = NULL;
	size_t rawlen;
	if (pd_gzip_is(p, len)) {
		/* stored as it was scraped; a stream that does not inflate within the
		 * profile size limit is damaged, and skipped */
		if (pd_gunzip(p, len, rc->db->o.max_profile, &raw, &rawlen, &err)) {
			rc->skipped++;
			return 0;
		}
		p = raw;
		len = rawlen;
	}
	if (head_append(h, s, t, p, len, NULL, &err))
		rc->skipped++; /* a duplicate of an already replayed sample */
	free(raw);
	return 0;
}

/* A deletion's interval: masks the series' samples in the head from now on. */
static int replay_tombstone(void *c, uint64_t ref, int64_t mint, int64_t maxt)
{
	struct replay_ctx *rc = c;
	struct head_series *s = replay_lookup(rc, ref);
	head_note_ref(&rc->db->head, ref);
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	int r2 = tomb_add(&s->tomb, 0, mint, maxt);
	tomb_normalize(&s->tomb);
	pthread_mutex_unlock(&s->mu);
	return r2 ? PD_ENOMEM : 0;
}

static int ref_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Replay creates series in WAL order, which need not be ref order: concurrent
 * commits reach the WAL in the order they were accepted, not in the order their
 * series were created, and a series logged again after a failed commit or a
 * checkpoint comes late. Readers intersect postings as sorted lists, so the
 * lists are sorted once the replay is done. */
static void sort_postings(struct head *h)
{
	for (size_t i = 0; i < h->postings_cap; i++) {
		struct postings_list *pl = &h->postings[i];
		size_t k = 1;
		while (pl->key && k < pl->n && pl->refs[k - 1] <= pl->refs[k])
			k++;
		if (pl->key && k < pl->n)
			qsort(pl->refs, pl->n, sizeof(*pl->refs), ref_cmp);
	}
}

/* The head chunk files before WAL replay: sealed chunks go there from now on,
 * and those already there wait in *out for the WAL to take them. Damage costs
 * the chunks it touches (the WAL re-builds them) and is noted. */
static int open_head_chunks(struct pd_tsdb *db, struct hc_replay **out, struct pd_err *err)
{
	struct hc_loaded *c = NULL;
	size_t n = 0;
	struct hc_damage d;
	int rc = hcm_open(&db->head.hcm, db->dir, db->o.head_chunks_file_size, err);
	if (!rc)
		rc = hs_open(&db->head.hs, db->dir, 0, err);
	if (!rc)
		rc = hcm_load(db->head.hcm, 0, &c, &n, &d, err);
	if (!rc && (rc = hc_replay_start(out, c, n, err))) {
		for (size_t i = 0; i < n; i++)
			hcm_release(c[i].file);
		free(c);
	}
	if (rc)
		return rc;
	if (d.cut)
		pd_log_warn("tsdb", "head chunk file's torn tail cut off", "cut=%s", d.cut_note);
	if (d.files) {
		db->hc_damaged_files = d.files;
		note_damage(db,
			    "head chunk files: %llu damaged or missing, %llu bytes lost (their "
			    "chunks are re-built from the WAL); the first: %s",
			    (unsigned long long)d.files, (unsigned long long)d.bytes, d.first);
	}
	return 0;
}

/* After WAL replay: chunks the WAL did not take are released, and files left
 * without chunks removed. */
static void end_head_chunks(struct pd_tsdb *db, struct hc_replay *r)
{
	uint64_t chunks = 0, samples = 0;
	if (!db->head.hcm)
		return;
	hc_replay_end(r, &chunks, &samples);
	hcm_truncate(db->head.hcm);
	if (chunks)
		pd_log_info("tsdb", "head chunks mapped from the head chunk files",
		            "chunks=%llu samples=%llu", (unsigned long long)chunks,
		            (unsigned long long)samples);
}

int pd_tsdb_open(struct pd_tsdb **out, const char *dir, const struct pd_tsdb_opts *opts,
		 struct pd_err *err)
{
	struct pd_tsdb *db = calloc(1, sizeof(*db));
	int rc;
	*out = NULL;
	if (!db)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (opts)
		db->o = *opts;
	else
		pd_tsdb_opts_init(&db->o);
	fill_defaults(&db->o);
	pthread_mutex_init(&db->append_mu, NULL);
	pthread_cond_init(&db->commit_cv, NULL);
	for (size_t i = 0; i < DB_ORDER_STRIPES; i++) {
		pthread_mutex_init(&db->order[i].mu, NULL);
		pthread_cond_init(&db->order[i].cv, NULL);
	}
	pthread_rwlock_init(&db->blocks_mu, NULL);
	pthread_mutex_init(&db->maint_mu, NULL);
	if (!(db->dir = strdup(dir))) {
		free(db);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (head_init(&db->head, &db->o)) {
		free(db->dir);
		free(db);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (db->o.read_only) {
		struct stat st;
		if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
			rc = pd_err_set(err, PD_ENOTFOUND, "%s: no such storage directory", dir);
			goto fail;
		}
	} else if (mkdir(dir, 0755) && errno != EEXIST) {
		rc = pd_err_set(err, PD_EIO, "creating %s: %s", dir, strerror(errno));
		goto fail;
	}
	if ((rc = load_blocks(db, err)))
		goto fail;
	/* the newest end of a block that is not past the future window, capped
	 * at the clock: a block past the window (a sample far ahead, stored
	 * before the window existed) would otherwise refuse every present sample
	 * for as long as its date is ahead, and one ending after the clock (a
	 * range persisted whole by import or a flush of all) for the rest of its
	 * range; samples in its range go to a block over it that compaction
	 * merges */
	db->min_valid_t = INT64_MIN;
	int64_t cap = future_cap(&db->o), now = bound_cap(&db->o);
	for (size_t i = 0; i < db->nblocks; i++) {
		int64_t e = capped(pd_block_meta(db->blocks[i])->maxt, now);
		if (pd_block_meta(db->blocks[i])->maxt <= cap && e > db->min_valid_t)
			db->min_valid_t = e;
	}
	if (db->o.clickhouse && db->o.wal_disabled && !db->o.read_only) {
		rc = pd_err_set(err, PD_EINVAL, "storing in ClickHouse needs the WAL, its spool");
		goto fail;
	}
	if (!db->o.wal_disabled) {
		char *wdir = path_join(dir, "wal");
		struct replay_ctx ctx = {db, 0, 0, {0}, NULL};
		pd_u64map_init(&ctx.refs);
		if (!db->o.read_only && !db->o.clickhouse &&
		    (rc = open_head_chunks(db, &ctx.hc, err))) {
			pd_u64map_fini(&ctx.refs);
			free(wdir);
			goto fail;
		}
		struct pd_wal_replay_cb cb = {replay_series, replay_sample, &ctx, replay_tombstone};
		struct pd_wal_replay_stats st;
		struct pd_wal_opts wo = {.segment_size = db->o.wal_segment_size, .sync = db->o.wal_sync};
		if (db->o.clickhouse && !wo.segment_size)
			wo.segment_size = PD_TSDB_CLICKHOUSE_SEGMENT;
		if (!wdir) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		memset(&st, 0, sizeof(st));
		rc = db->o.read_only ? pd_wal_replay_readonly(wdir, &cb, &st, err)
				     : pd_wal_replay(wdir, &cb, &st, err);
		replay_mark_logged(&ctx);
		pd_u64map_fini(&ctx.refs);
		end_head_chunks(db, ctx.hc);
		db->replay_skipped = ctx.skipped;
		if (ctx.skipped)
			pd_log_warn("tsdb",
			            "WAL replay left samples out (of a series the WAL does not name, "
			            "damaged, or duplicates)",
			            "samples=%llu", (unsigned long long)ctx.skipped);
		sort_postings(&db->head);
		/* a series the WAL names without a sample (the entry a checkpoint
		 * keeps of the largest ref, so that no later series gets it) is not
		 * kept in the head */
		if (!rc && !db->o.clickhouse)
			drop_empty_series(&db->head);
		if (!rc && st.truncated) {
			db->wal_repaired = 1;
			snprintf(db->wal_repair, sizeof(db->wal_repair),
				 "WAL segment %u cut at byte %llu: %s", st.segment,
				 (unsigned long long)st.offset, st.reason);
		}
		if (!rc && st.damaged_regions) {
			db->wal_damaged_records = st.damaged_records;
			db->wal_damaged_bytes = st.damaged_bytes;
			note_damage(db,
				    "WAL replay skipped %llu damaged records (%llu bytes) in %llu "
				    "places and kept %llu records; the first in segment %u at byte "
				    "%llu: %s",
				    (unsigned long long)st.damaged_records,
				    (unsigned long long)st.damaged_bytes,
				    (unsigned long long)st.damaged_regions,
				    (unsigned long long)st.records, st.damage_segment,
				    (unsigned long long)st.damage_offset, st.damage_reason);
			/* the last segment's framing may be broken inside: append to a
			 * new one */
			wo.new_segment = 1;
		}
		if (!rc && !db->o.read_only)
			rc = pd_wal_open(&db->wal, wdir, &wo, err);
		/* with ClickHouse, the WAL is the spool its shipper sends from */
		if (!rc && !db->o.read_only && db->o.clickhouse)
			rc = ch_ship_start(db, err);
		/* a reader of a live store (tsdb analyze) reports what the WAL holds */
		if (!rc && db->o.read_only)
			rc = pd_wal_du(wdir, &db->wal_ro_bytes, err);
		free(wdir);
		if (rc)
			goto fail;
	}
	/* the series limit holds from here: replay keeps every series the WAL
	 * acknowledged, however many */
	db->head.max_series = db->o.max_series;
	if (!db->o.read_only && !db->o.wal_disabled) {
		/* a daemon killed before its first periodic flush, again and again,
		 * would otherwise grow its WAL and its start-up time without end */
		struct pd_err ferr = {0};
		if (pd_tsdb_flush(db, 0, &ferr))
			pd_log_error(
			    "tsdb",
			    "flushing the head at open failed (the store opens all the same)",
			    "err=%s", ferr.msg);
	}
	*out = db;
	return 0;
fail:
	pd_tsdb_close(db);
	return rc;
}

void pd_tsdb_close(struct pd_tsdb *db)
{
	if (!db)
		return;
	ch_ship_stop(db->ship);
	pd_wal_close(db->wal);
	for (size_t i = 0; i < db->nblocks; i++)
		pd_block_close(db->blocks[i]);
	free(db->blocks);
	struct hc_mapper *hcm = db->head.hcm;
	struct hs_store *hs = db->head.hs;
	head_fini(&db->head);
	hcm_close(hcm);
	hs_close(hs);
	pthread_mutex_destroy(&db->append_mu);
	pthread_cond_destroy(&db->commit_cv);
	for (size_t i = 0; i < DB_ORDER_STRIPES; i++) {
		pthread_mutex_destroy(&db->order[i].mu);
		pthread_cond_destroy(&db->order[i].cv);
	}
	pthread_rwlock_destroy(&db->blocks_mu);
	pthread_mutex_destroy(&db->maint_mu);
	free(db->dir);
	free(db);
}

int db_sources(struct pd_tsdb *db, int64_t mint, int64_t maxt, struct source **out, size_t *n,
	       struct pd_err *err)
{
	*out = malloc((db->nblocks + 1) * sizeof(**out));
	*n = 0;
	if (!*out)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < db->nblocks; i++) {
		const struct pd_block_meta *m = pd_block_meta(db->blocks[i]);
		if (m->maxt <= mint || m->mint > maxt)
			continue;
		(*out)[(*n)++] = (struct source){&block_reader_ops, db->blocks[i], m->mint, m->maxt - 1};
	}
	(*out)[(*n)++] = (struct source){&head_reader_ops, &db->head, db->head.mint, db->head.maxt};
	return 0;
}

/* ---- appending ------------------------------------------------------------- */

struct app_sample {
	struct pd_lpair *labels; /* with the strings after the array */
	size_t n;
	uint64_t hash;
	int64_t t;
	uint8_t *p;
	size_t len;
	struct pd_pprof_profile *prof; /* p decoded by the caller, or NULL */
	uint8_t *gz;   /* p as the gzip stream it came in, for the WAL; or NULL */
	size_t gzlen;
};

struct pd_tsdb_appender {
	struct pd_tsdb *db;
	struct app_sample *v;
	size_t n, cap;
	int lazy; /* pd_tsdb_appender_lazy */
};

struct pd_tsdb_appender *pd_tsdb_appender(struct pd_tsdb *db)
{
	struct pd_tsdb_appender *a = calloc(1, sizeof(*a));
	if (a)
		a->db = db;
	return a;
}

void pd_tsdb_appender_lazy(struct pd_tsdb_appender *a)
{
	a->lazy = 1;
}

static void app_free(struct pd_tsdb_appender *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].labels);
		free(a->v[i].p);
		free(a->v[i].gz);
		pd_pprof_destroy(a->v[i].prof);
	}
	free(a->v);
	free(a);
}

void pd_tsdb_rollback(struct pd_tsdb_appender *a)
{
	if (a)
		app_free(a);
}

static void series_name(const struct pd_lpair *l, size_t n, char *out, size_t size)
{
	size_t off = 0;
	const char *name = "";
	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i].name, "__name__") == 0)
			name = l[i].value;
	off += (size_t)snprintf(out, size, "%s{", name);
	for (size_t i = 0; i < n && off < size; i++) {
		if (strcmp(l[i].name, "__name__") == 0)
			continue;
		off += (size_t)snprintf(out + off, size - off, "%s%s=\"%s\"",
					off > strlen(name) + 1 ? ", " : "", l[i].name, l[i].value);
	}
	if (off < size)
		snprintf(out + off, size - off, "}");
}

/* The newest timestamp of a label set, in the head or earlier in this appender. */
static int64_t last_time(struct pd_tsdb_appender *a, const struct pd_lpair *l, size_t n,
			 uint64_t hash)
{
	for (size_t i = a->n; i-- > 0;)
		if (a->v[i].hash == hash && labels_cmp(a->v[i].labels, a->v[i].n, l, n) == 0)
			return a->v[i].t;
	return head_series_maxt(&a->db->head, l, n, hash);
}

static int append_sample(struct pd_tsdb_appender *a, const struct pd_tsdb_label *labels, size_t n,
			 int64_t t, const uint8_t *profile, size_t len,
			 struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
			 struct pd_err *err);

/* ---- how far back appends go -------------------------------------------------
 *
 * The head takes no sample before min_valid_t, the end of the newest block at
 * open or of the newest complete range a flush persisted since (Prometheus's
 * "out of bounds"): such a sample would make the next flush write a block over
 * a range written already, which compaction then has to merge sample by sample,
 * the whole of its compacted block, at every flush a client likes. Nor one past the retention time behind the
 * newest sample, which retention would delete with its block at once. A flush
 * raises min_valid_t under append_mu, and commits check against it under
 * append_mu, so a commit acknowledged before the rise is in the head the flush
 * persists, and one after it is checked against the new end. Without the WAL
 * (bulk import writes blocks) or with ClickHouse there is no bound.
 *
 * Nor, with the WAL, one dated more than max_future_ms after the system clock
 * (Mimir's creation grace period): the newest sample moves the retention bound
 * and decides which ranges are complete, so one sample far ahead would refuse
 * every present one. Every bound is measured from the newest sample capped at
 * the clock (bound_cap), so neither a sample within the window nor one stored
 * before the window existed moves a bound past the present. */
static int bounded(const struct pd_tsdb *db)
{
	return !db->o.wal_disabled && !db->o.clickhouse && !db->o.read_only;
}

/* The earliest timestamp an append may have now (INT64_MIN: any), and why. */
static int64_t accept_from(struct pd_tsdb *db, const char **why)
{
	int64_t from = __atomic_load_n(&db->min_valid_t, __ATOMIC_ACQUIRE);
	*why = "the newest block ends there and blocks take no new samples";
	if (!bounded(db))
		return INT64_MIN;
	if (db->o.retention_ms > 0) {
		int64_t newest = capped(__atomic_load_n(&db->head.maxt, __ATOMIC_RELAXED),
					bound_cap(&db->o));
		if (from > newest)
			newest = from;
		if (newest > INT64_MIN + db->o.retention_ms && newest - db->o.retention_ms > from) {
			from = newest - db->o.retention_ms;
			*why = "the retention time lies behind the newest sample";
		}
	}
	return from;
}

/* ms as a duration in its largest whole unit ("10m", "90s"). */
static void format_window(int64_t ms, char *out, size_t size)
{
	static const struct {
		int64_t ms;
		const char *unit;
	} u[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
	size_t i = 0;
	while (ms && ms % u[i].ms)
		i++;
	snprintf(out, size, "%lld%s", (long long)(ms / u[i].ms), u[i].unit);
}

/* PD_EINVAL when t is before what the store accepts or past the future window,
 * counted; 0 otherwise. */
static int check_bounds(struct pd_tsdb *db, const struct pd_lpair *l, size_t n, int64_t t,
			struct pd_err *err)
{
	const char *why;
	int64_t from = accept_from(db, &why);
	char name[200], ts[40], fs[40];
	int64_t until = db->o.wal_disabled || db->o.read_only ? INT64_MAX : future_cap(&db->o);
	if (t > until) {
		__atomic_fetch_add(&db->out_of_bounds, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&db->too_far_in_future, 1, __ATOMIC_RELAXED);
		series_name(l, n, name, sizeof(name));
		pd_time_format(t, ts, sizeof(ts));
		pd_time_format(until, fs, sizeof(fs));
		char win[32];
		format_window(db->o.max_future_ms, win, sizeof(win));
		return pd_err_set(err, PD_EINVAL,
				  "%s: sample at %lld (%s) is out of bounds: the store accepts samples "
				  "up to %lld (%s), as it takes none dated more than %s after its "
				  "clock (a wrong clock, or a time in the wrong unit?)",
				  name, (long long)t, ts, (long long)until, fs, win);
	}
	if (t >= from)
		return 0;
	__atomic_fetch_add(&db->out_of_bounds, 1, __ATOMIC_RELAXED);
	series_name(l, n, name, sizeof(name));
	pd_time_format(t, ts, sizeof(ts));
	pd_time_format(from, fs, sizeof(fs));
	return pd_err_set(err, PD_EINVAL,
			  "%s: sample at %lld (%s) is out of bounds: the store accepts samples "
			  "from %lld (%s) on, as %s",
			  name, (long long)t, ts, (long long)from, fs, why);
}

int pd_tsdb_append(struct pd_tsdb_appender *a, const struct pd_tsdb_label *labels, size_t n,
		   int64_t t, const uint8_t *profile, size_t len, struct pd_err *err)
{
	return pd_tsdb_append_decoded(a, labels, n, t, profile, len, NULL, err);
}

int pd_tsdb_append_decoded(struct pd_tsdb_appender *a, const struct pd_tsdb_label *labels,
			   size_t n, int64_t t, const uint8_t *profile, size_t len,
			   struct pd_pprof_profile *decoded, struct pd_err *err)
{
	return pd_tsdb_append_gzip(a, labels, n, t, profile, len, decoded, NULL, 0, err);
}

int pd_tsdb_append_gzip(struct pd_tsdb_appender *a, const struct pd_tsdb_label *labels, size_t n,
			int64_t t, const uint8_t *profile, size_t len,
			struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
			struct pd_err *err)
{
	if (gz && !pd_gzip_is(gz, gzlen)) {
		pd_pprof_destroy(decoded);
		return pd_err_set(err, PD_EINVAL, "the profile's gzip stream does not start as one");
	}
	if (a->db->o.clickhouse && !decoded && len <= a->db->o.max_profile) {
		/* ClickHouse keeps profiles decoded: what does not decode is refused
		 * now rather than acknowledged and then not sent */
		struct pd_pprof_decode_opts o = {.max_decompressed = a->db->o.max_profile};
		struct pd_err derr;
		if (pd_pprof_decode(&decoded, profile, len, &o, &derr)) {
			char name[256];
			series_name((const struct pd_lpair *)(const void *)labels, n, name, sizeof(name));
			return pd_err_set(err, PD_EINVAL, "%s: not a pprof profile (%s)", name, derr.msg);
		}
	}
	int rc = append_sample(a, labels, n, t, profile, len, decoded, gz, gzlen, err);
	if (rc)
		pd_pprof_destroy(decoded);
	return rc;
}

static int append_sample(struct pd_tsdb_appender *a, const struct pd_tsdb_label *labels, size_t n,
			 int64_t t, const uint8_t *profile, size_t len,
			 struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
			 struct pd_err *err)
{
	const struct pd_lpair *l = (const struct pd_lpair *)(const void *)labels;
	char name[256];
	if (len > a->db->o.max_profile) {
		series_name(l, n, name, sizeof(name));
		return pd_err_set(err, PD_ETOOBIG, "%s: profile of %zu bytes exceeds the limit of %zu",
				  name, len, a->db->o.max_profile);
	}
	for (size_t i = 1; i < n; i++)
		if (strcmp(l[i - 1].name, l[i].name) >= 0)
			return pd_err_set(err, PD_EINVAL, "labels must be sorted by name and unique (\"%s\", \"%s\")",
					  l[i - 1].name, l[i].name);
	int rc = check_bounds(a->db, l, n, t, err);
	if (rc)
		return rc;
	uint64_t hash = labels_hash(l, n);
	int64_t last = last_time(a, l, n, hash);
	if (t <= last) {
		series_name(l, n, name, sizeof(name));
		return pd_err_set(err, PD_EINVAL, "%s: %s sample at %lld, the series already has %lld",
				  name, t == last ? "duplicate" : "out of order", (long long)t,
				  (long long)last);
	}
	if (a->n == a->cap) {
		size_t c = a->cap ? a->cap * 2 : 16;
		struct app_sample *nv = realloc(a->v, c * sizeof(*nv));
		if (!nv)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		a->v = nv;
		a->cap = c;
	}
	size_t bytes = n * sizeof(struct pd_lpair);
	for (size_t i = 0; i < n; i++)
		bytes += strlen(l[i].name) + strlen(l[i].value) + 2;
	struct pd_lpair *lp = malloc(bytes ? bytes : 1);
	uint8_t *p = malloc(len ? len : 1);
	uint8_t *g = gz ? malloc(gzlen) : NULL;
	if (!lp || !p || (gz && !g)) {
		free(lp);
		free(p);
		free(g);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (g)
		memcpy(g, gz, gzlen);
	char *s = (char *)(lp + n);
	for (size_t i = 0; i < n; i++) {
		size_t x = strlen(l[i].name) + 1, y = strlen(l[i].value) + 1;
		memcpy(s, l[i].name, x);
		lp[i].name = s;
		s += x;
		memcpy(s, l[i].value, y);
		lp[i].value = s;
		s += y;
	}
	if (len)
		memcpy(p, profile, len);
	a->v[a->n++] = (struct app_sample){lp, n, hash, t, p, len, decoded, g, g ? gzlen : 0};
	return 0;
}

/* ---- committing ----------------------------------------------------------------
 *
 * A commit goes through four steps, and only the second holds append_mu:
 *   1. find or create its series, encode its WAL record (the series a durable
 *      record does not hold yet, then the samples) and frame it (zstd, CRC);
 *   2. under append_mu: check each sample against the newest timestamp of its
 *      series, in the head or reserved by a commit in flight; take a ticket per
 *      sample (the series' commit_seq) and queue the record in the WAL, so the
 *      WAL order, the order checks and the tickets all agree;
 *   3. wait until the record is written and synced (group commit: pd_wal_wait);
 *   4. append each sample to the head when its ticket comes up, so the samples of
 *      one series enter the head in the order their commits were accepted, while
 *      commits to different series append in parallel.
 * A flush closes the gate to step 2 and waits for commits in flight to end, so a
 * block or a checkpoint never misses a sample that is reserved but not yet in the
 * head. */

static struct db_order_stripe *stripe_of(struct pd_tsdb *db, const struct head_series *s)
{
	return &db->order[s->ref % DB_ORDER_STRIPES];
}

/* The newest timestamp of s, in the head or reserved by a commit in flight.
 * append_mu held. */
static int64_t reserved_last(struct pd_tsdb *db, struct head_series *s)
{
	struct db_order_stripe *o = stripe_of(db, s);
	pthread_mutex_lock(&o->mu);
	int pending = s->commit_seq != s->commit_done;
	pthread_mutex_unlock(&o->mu);
	/* after the check above: with nothing pending, maxt holds every sample */
	pthread_mutex_lock(&s->mu);
	int64_t t = s->maxt;
	pthread_mutex_unlock(&s->mu);
	if (pending && s->commit_t > t)
		t = s->commit_t;
	return t;
}

/* Waits for ticket's turn on s, appends the sample to the head when append is
 * set (a commit whose WAL write failed only passes its turn on), and hands the
 * turn to the next ticket. */
static int apply_sample(struct pd_tsdb *db, struct head_series *s, uint64_t ticket, int append,
			const struct app_sample *v, struct pd_err *err)
{
	struct db_order_stripe *o = stripe_of(db, s);
	int rc = 0;
	pthread_mutex_lock(&o->mu);
	while (s->commit_done != ticket)
		pthread_cond_wait(&o->cv, &o->mu);
	pthread_mutex_unlock(&o->mu);
	if (append && db->o.clickhouse)
		tsdb_ch_note_time(s, v->t); /* the profile goes to ClickHouse */
	else if (append)
		rc = head_append(&db->head, s, v->t, v->p, v->len, v->prof, err);
	pthread_mutex_lock(&o->mu);
	s->commit_done++;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	return rc;
}

/* The series of sample v, created in the head if new; pinned (the commit
 * unpins it when done), so that no head truncation drops it meanwhile. */
static int find_series(struct pd_tsdb *db, const struct app_sample *v, struct head_series **out,
		       struct pd_err *err)
{
	int created;
	*out = head_get_pinned(&db->head, v->labels, v->n, v->hash);
	int rc = *out ? head_admit(&db->head, *out, err)
		      : head_get_or_create_pinned(&db->head, v->labels, v->n, out, &created, err);
	if (rc == PD_ELIMIT) {
		char name[256];
		series_name(v->labels, v->n, name, sizeof(name));
		pd_err_prefix(err, "%s", name);
	}
	return rc;
}

/* Builds and seals the commit's WAL record into rec (reset first): a series entry
 * for each series no durable record holds yet (entry[i] marks the first sample of
 * such a series), then every sample. */
static int build_record(struct pd_tsdb_appender *a, struct head_series **ser, unsigned char *entry,
			struct pd_wal_rec *rec, struct pd_err *err)
{
	int rc = 0;
	pd_wal_rec_reset(rec);
	for (size_t i = 0; i < a->n && !rc; i++) {
		int first = 1;
		for (size_t k = 0; k < i && first; k++)
			first = ser[k] != ser[i];
		entry[i] = first && !__atomic_load_n(&ser[i]->logged, __ATOMIC_ACQUIRE);
		if (entry[i])
			rc = pd_wal_rec_series(rec, ser[i]->ref, ser[i]->labels, ser[i]->nlabels, err);
	}
	for (size_t i = 0; i < a->n && !rc; i++)
		rc = a->v[i].gz ? pd_wal_rec_sample(rec, ser[i]->ref, a->v[i].t, a->v[i].gz,
						     a->v[i].gzlen, err)
				: pd_wal_rec_sample(rec, ser[i]->ref, a->v[i].t, a->v[i].p, a->v[i].len, err);
	if (!rc)
		rc = pd_wal_rec_seal(rec, err);
	return rc;
}

/* True when every series the record left out is still in a durable record (a
 * checkpoint since the record was built may have dropped one). append_mu held. */
static int entries_current(struct pd_tsdb_appender *a, struct head_series **ser,
			   const unsigned char *entry)
{
	for (size_t i = 0; i < a->n; i++) {
		int covered = entry[i];
		for (size_t k = 0; k < i && !covered; k++)
			covered = ser[k] == ser[i] && entry[k];
		if (!covered && !__atomic_load_n(&ser[i]->logged, __ATOMIC_ACQUIRE))
			return 0;
	}
	return 1;
}

/* Checks every sample against its series' newest timestamp (head, commits in
 * flight, earlier samples of this commit), which goes into prev[i]. append_mu held. */
static int check_order(struct pd_tsdb *db, struct pd_tsdb_appender *a, struct head_series **ser,
		       int64_t *prev, struct pd_err *err)
{
	for (size_t i = 0; i < a->n; i++) {
		int64_t last = INT64_MIN;
		int seen = 0;
		for (size_t k = i; k-- > 0 && !seen;)
			if (ser[k] == ser[i]) {
				last = a->v[k].t;
				seen = 1;
			}
		if (!seen)
			last = reserved_last(db, ser[i]);
		prev[i] = last;
		/* again under append_mu: a flush may have persisted the range since the
		 * append */
		int rc = check_bounds(db, a->v[i].labels, a->v[i].n, a->v[i].t, err);
		if (rc)
			return rc;
		if (a->v[i].t <= last) {
			char name[256];
			series_name(a->v[i].labels, a->v[i].n, name, sizeof(name));
			return pd_err_set(err, PD_EINVAL, "%s: %s sample at %lld, the series already has %lld",
					  name, a->v[i].t == last ? "duplicate" : "out of order",
					  (long long)a->v[i].t, (long long)last);
		}
	}
	return 0;
}

/* After a failed WAL write: gives back the timestamps the commit reserved, for
 * each series no later commit has reserved since, so that the same samples can
 * be committed again. append_mu held. */
static void unreserve(struct pd_tsdb_appender *a, struct head_series **ser, const uint64_t *ticket,
		      const int64_t *prev)
{
	for (size_t i = 0; i < a->n; i++) {
		int first = 1;
		for (size_t k = 0; k < i && first; k++)
			first = ser[k] != ser[i];
		if (!first)
			continue;
		size_t last = i;
		for (size_t k = i + 1; k < a->n; k++)
			if (ser[k] == ser[i])
				last = k;
		if (ser[i]->commit_seq == ticket[last] + 1)
			ser[i]->commit_t = prev[i];
	}
}

int pd_tsdb_commit(struct pd_tsdb_appender *a, struct pd_err *err)
{
	struct pd_tsdb *db = a->db;
	struct head_series **ser = NULL;
	uint64_t *ticket = NULL;
	int64_t *prev = NULL;
	unsigned char *entry = NULL;
	struct pd_wal_rec *rec = NULL;
	size_t spooled = 0; /* bytes reserved in the ClickHouse spool */
	int rc = 0;

	if (db->o.read_only) {
		app_free(a);
		return pd_err_set(err, PD_EINVAL, "the store is open read-only");
	}
	if (!a->n) {
		app_free(a);
		return 0;
	}
	ser = calloc(a->n, sizeof(*ser));
	ticket = calloc(a->n, sizeof(*ticket));
	prev = calloc(a->n, sizeof(*prev));
	entry = calloc(a->n, 1);
	if (db->wal && (rec = pd_wal_rec_create()))
		pd_wal_rec_set_lazy(rec, a->lazy);
	if (!ser || !ticket || !prev || !entry || (db->wal && !rec)) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}

	/* 1. series and record, in parallel with other commits */
	for (size_t i = 0; i < a->n && !rc; i++)
		rc = find_series(db, &a->v[i], &ser[i], err);
	if (!rc && rec)
		rc = build_record(a, ser, entry, rec, err);
	if (rc)
		goto out;

	/* 2. reservation: order checks, tickets and the WAL order, together */
	pthread_mutex_lock(&db->append_mu);
	while (db->flushing)
		pthread_cond_wait(&db->commit_cv, &db->append_mu);
	rc = check_order(db, a, ser, prev, err);
	if (!rc && rec && !entries_current(a, ser, entry))
		rc = build_record(a, ser, entry, rec, err);
	if (!rc && rec && db->ship) {
		spooled = pd_wal_rec_size(rec);
		rc = ch_ship_admit(db->ship, spooled, err);
		if (rc)
			spooled = 0;
	}
	if (!rc) {
		for (size_t i = 0; i < a->n; i++) {
			ticket[i] = ser[i]->commit_seq++;
			ser[i]->commit_t = a->v[i].t;
		}
		db->inflight++;
		if (rec)
			pd_wal_enqueue(db->wal, rec);
	}
	pthread_mutex_unlock(&db->append_mu);
	if (rc)
		goto out;

	/* 3. durable: the record is written and synced, alone or with others */
	if (rec)
		rc = pd_wal_wait(db->wal, rec, err);
	if (spooled)
		ch_ship_written(db->ship, spooled, a->n, rc == 0);

	/* 4. the head, in each series' reservation order */
	int logged = rc == 0;
	for (size_t i = 0; i < a->n; i++) {
		int r2 = apply_sample(db, ser[i], ticket[i], logged, &a->v[i], err);
		if (r2 && !rc)
			rc = r2; /* only memory can fail here; the WAL has the sample */
	}

	pthread_mutex_lock(&db->append_mu);
	for (size_t i = 0; i < a->n && logged && rec; i++)
		if (entry[i])
			__atomic_store_n(&ser[i]->logged, 1, __ATOMIC_RELEASE);
	if (!logged)
		unreserve(a, ser, ticket, prev);
	if (--db->inflight == 0)
		pthread_cond_broadcast(&db->commit_cv);
	pthread_mutex_unlock(&db->append_mu);
out:
	for (size_t i = 0; ser && i < a->n; i++)
		head_unpin(ser[i]);
	pd_wal_rec_destroy(rec);
	free(entry);
	free(prev);
	free(ticket);
	free(ser);
	app_free(a);
	return rc;
}

/* ---- persisting the head ----------------------------------------------------- */

static int series_ptr_cmp(const void *a, const void *b)
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
static int filter_chunk(struct pd_tsdb *db, const struct pd_block_chunk *c,
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
	qsort(all, n, sizeof(*all), series_ptr_cmp);
	uint64_t written = 0;
	if ((rc = pd_block_writer_create(&w, db->dir, lo, hi, 1, NULL, 0, err)))
		goto out;
	for (size_t i = 0; i < n && !rc; i++) {
		struct head_series *s = all[i];
		pthread_mutex_lock(&s->mu);
		size_t cap = s->nchunks ? s->nchunks : 1;
		struct pd_block_chunk *cs = malloc(cap * sizeof(*cs));
		uint8_t **owned = calloc(cap * 2, sizeof(*owned));
		size_t nc = 0;
		if (!cs || !owned) {
			pthread_mutex_unlock(&s->mu);
			free(cs);
			free(owned);
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		for (size_t k = 0; k < s->nchunks && !rc; k++) {
			const struct head_chunk *c = &s->chunks[k];
			if (c->mint < lo || c->maxt >= hi)
				continue;
			struct pd_block_chunk bc = {c->mint, c->maxt, c->count, c->ts, c->ts_len,
						    c->vals, c->vals_len};
			int kept = 1;
			/* deleted samples do not reach the block */
			if (s->tomb.n)
				rc = filter_chunk(db, &bc, s->tomb.v, s->tomb.n, &bc, &owned[2 * nc],
						  &owned[2 * nc + 1], &kept, err);
			if (!rc && kept)
				cs[nc++] = bc;
		}
		if (nc && !rc) {
			rc = pd_block_writer_add_series(w, s->labels, s->nlabels, cs, nc, err);
			written++;
		}
		pthread_mutex_unlock(&s->mu);
		for (size_t k = 0; k < 2 * cap; k++)
			free(owned[k]);
		free(owned);
		free(cs);
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
	char *p = path_join(db->dir, ulid);
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
	rc = add_block(db, b, err);
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

static int window_floor(int64_t t, int64_t r, int64_t *out)
{
	*out = t >= 0 ? t / r * r : -((-t - 1) / r + 1) * r;
	return 0;
}

static int compact(struct pd_tsdb *db, struct pd_err *err);
static int apply_retention(struct pd_tsdb *db, int by_size, struct pd_err *err);

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
	int64_t cap = bound_cap(&db->o);
	/* series quiet for a while (pods gone) give their open chunks up to the head
	 * chunk files, beside the appends, before the gate closes */
	int64_t newest = capped(__atomic_load_n(&h->maxt, __ATOMIC_RELAXED), cap);
	if (!db->o.clickhouse && newest > INT64_MIN + HEAD_IDLE_SEAL_MS)
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
		window_floor(h->mint, br, &lo);
		int64_t hi = lo + br;
		/* keep the newest half range in the head, as Prometheus does, unless all */
		if (!all && hi > capped(h->maxt, cap) - br / 2)
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
	/* series with no sample left go, before the checkpoint drops their
	 * entries too; they are freed once no query can hold them */
	struct head_series **dead = NULL;
	size_t ndead = 0;
	if (persisted_to != INT64_MIN && !db->o.clickhouse &&
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
	if (!rc && (rc = compact(db, err))) {
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
	int r2 = apply_retention(db, !cut_failed, &rerr);
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

/* ---- compaction ---------------------------------------------------------------- */

struct cursor {
	struct pd_block *b;
	uint64_t *refs;
	size_t n, i;
	struct pd_lpair *labels;
	size_t nl;
	struct pd_block_chunk_meta *chunks;
	size_t nc;
};

static int cursor_load(struct cursor *c, struct pd_err *err)
{
	free(c->labels);
	free(c->chunks);
	c->labels = NULL;
	c->chunks = NULL;
	if (c->i >= c->n)
		return 0;
	return pd_block_series(c->b, c->refs[c->i], &c->labels, &c->nl, &c->chunks, &c->nc, err);
}

/* Rewrites a value chunk of an older encoding in the store's encoding, so that
 * compaction turns v1 blocks into v2 ones. *vals (borrowed) is replaced by a new
 * chunk that *owned also receives (malloc'd, the caller frees it); a chunk already
 * in the store's encoding is left alone and *owned is NULL. ts, ts_len: the
 * chunk's timestamp chunk. */
static int reencode_values(struct pd_tsdb *db, const uint8_t *ts, size_t ts_len,
			   const uint8_t **vals, size_t *len, uint8_t **owned, struct pd_err *err)
{
	*owned = NULL;
	if (pd_chunkenc_values_encoding(*vals, *len) == db->o.value_encoding)
		return 0;
	int64_t n = pd_chunkenc_values_read_count(*vals, *len, err);
	if (n < 0)
		return (int)n;
	struct pd_chunkenc_values *c =
	    pd_chunkenc_values_create_enc(db->o.value_encoding, db->o.value_group, db->o.zstd_level);
	if (!c)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int rc = 0;
	struct pd_chunkenc_ts_iter it;
	pd_chunkenc_ts_iter_init(&it, ts, ts_len);
	for (int64_t i = 0; i < n && !rc; i++) {
		uint8_t *p;
		size_t pl;
		if (!pd_chunkenc_ts_iter_next(&it)) {
			rc = pd_err_set(err, PD_ECORRUPT,
					"a value chunk of %lld profiles has fewer timestamps", (long long)n);
			break;
		}
		int64_t t = pd_chunkenc_ts_iter_at(&it);
		if ((rc = pd_chunkenc_values_read_tc(*vals, *len, ts, ts_len, (size_t)i, db->o.max_profile, &p,
						     &pl, err)))
			break;
		rc = pd_chunkenc_values_append_at(c, t, p, pl, NULL, err);
		free(p);
	}
	uint8_t *out;
	size_t olen;
	if (!rc && !(rc = pd_chunkenc_values_seal(c, &out, &olen, err))) {
		*vals = *owned = out;
		*len = olen;
	}
	pd_chunkenc_values_destroy(c);
	return rc;
}

/* ---- overlapping chunks ------------------------------------------------------ */

struct vsample {
	int64_t t;
	uint32_t chunk; /* position in the run, oldest block's chunks first */
	uint32_t i;     /* sample in that chunk */
};

static int vsample_cmp(const void *a, const void *b)
{
	const struct vsample *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->chunk != y->chunk)
		return x->chunk < y->chunk ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

struct chunk_pos {
	int64_t mint;
	size_t i;
};

static int chunk_pos_cmp(const void *a, const void *b)
{
	const struct chunk_pos *x = a, *y = b;
	if (x->mint != y->mint)
		return x->mint < y->mint ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Keeps buffer p (malloc'd) in *keep until the series is written. */
static int keep_buf(uint8_t ***keep, size_t *nkeep, size_t *cap, uint8_t *p)
{
	if (*nkeep == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		uint8_t **nk = realloc(*keep, c * sizeof(*nk));
		if (!nk)
			return -1;
		*keep = nk;
		*cap = c;
	}
	(*keep)[(*nkeep)++] = p;
	return 0;
}

/* One series' chunks from blocks that overlap, cs[0..*n) (the oldest block's
 * first), made a sorted run of chunks that do not overlap: chunks that overlap
 * none are kept as they are, each run of overlapping ones is read sample by
 * sample and written again as new chunks of up to chunk_samples samples, a
 * timestamp present more than once (the same range persisted twice) once, from
 * the oldest block. *out (malloc'd, the caller frees it) receives the chunks;
 * the bytes of new chunks go to *keep. */
static int resolve_overlaps(struct pd_tsdb *db, const struct pd_block_chunk *cs, size_t n,
			    struct pd_block_chunk **out, size_t *nout, uint8_t ***keep,
			    size_t *nkeep, size_t *keep_cap, struct pd_err *err)
{
	struct chunk_pos *pos = malloc((n ? n : 1) * sizeof(*pos));
	struct pd_block_chunk *o = malloc((n ? n : 1) * sizeof(*o));
	size_t no = 0, ocap = n ? n : 1;
	struct vsample *vs = NULL;
	struct pd_chunkenc_values *vals = NULL;
	int rc = 0;
	if (!pos || !o) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		pos[i] = (struct chunk_pos){cs[i].mint, i};
	qsort(pos, n, sizeof(*pos), chunk_pos_cmp);
	unsigned per = db->o.chunk_samples ? db->o.chunk_samples : PD_TSDB_DEFAULT_CHUNK_SAMPLES;
	if (per > PD_CHUNKENC_MAX_SAMPLES)
		per = PD_CHUNKENC_MAX_SAMPLES;
	for (size_t k = 0; k < n && !rc;) {
		int64_t end = cs[pos[k].i].maxt;
		size_t m = k + 1;
		size_t total = cs[pos[k].i].count;
		while (m < n && cs[pos[m].i].mint <= end) {
			if (cs[pos[m].i].maxt > end)
				end = cs[pos[m].i].maxt;
			total += cs[pos[m].i].count;
			m++;
		}
		if (m - k == 1) {
			if (no == ocap) {
				struct pd_block_chunk *g = realloc(o, ocap * 2 * sizeof(*o));
				if (!g) {
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
					break;
				}
				o = g;
				ocap *= 2;
			}
			o[no++] = cs[pos[k].i];
			k = m;
			continue;
		}
		/* the run's samples, by time; the oldest block's copy of a duplicate */
		free(vs);
		if (!(vs = malloc(total * sizeof(*vs)))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		size_t nv = 0;
		for (size_t r = k; r < m && !rc; r++) {
			const struct pd_block_chunk *c = &cs[pos[r].i];
			struct pd_chunkenc_ts_iter it;
			pd_chunkenc_ts_iter_init(&it, c->ts, c->ts_len);
			for (uint32_t i = 0; i < c->count && nv < total; i++) {
				if (!pd_chunkenc_ts_iter_next(&it)) {
					rc = pd_err_set(err, PD_ECORRUPT,
							"a chunk of %u samples at [%lld, %lld] has fewer timestamps",
							(unsigned)c->count, (long long)c->mint, (long long)c->maxt);
					break;
				}
				/* chunk: its index in cs, where the oldest block's chunks
				 * come first, so a duplicate keeps the oldest block's copy */
				vs[nv++] = (struct vsample){pd_chunkenc_ts_iter_at(&it), (uint32_t)pos[r].i, i};
			}
		}
		if (rc)
			break;
		qsort(vs, nv, sizeof(*vs), vsample_cmp);
		size_t w = 0;
		for (size_t i = 0; i < nv; i++)
			if (!w || vs[i].t != vs[w - 1].t)
				vs[w++] = vs[i];
		nv = w;
		for (size_t i = 0; i < nv && !rc;) {
			size_t e = i + per < nv ? i + per : nv;
			struct pd_chunkenc_ts ts;
			pd_chunkenc_ts_init(&ts);
			vals = pd_chunkenc_values_create_enc(db->o.value_encoding, db->o.value_group,
							     db->o.zstd_level);
			if (!vals)
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			for (size_t x = i; x < e && !rc; x++) {
				const struct pd_block_chunk *c = &cs[vs[x].chunk];
				uint8_t *p;
				size_t pl;
				rc = pd_chunkenc_values_read_tc(c->vals, c->vals_len, c->ts, c->ts_len,
								vs[x].i, db->o.max_profile, &p, &pl, err);
				if (rc)
					break;
				rc = pd_chunkenc_ts_append(&ts, vs[x].t, err);
				if (!rc)
					rc = pd_chunkenc_values_append_at(vals, vs[x].t, p, pl, NULL, err);
				free(p);
			}
			struct pd_block_chunk nc = {vs[i].t, vs[e - 1].t, (uint32_t)(e - i), NULL, 0, NULL, 0};
			uint8_t *vb = NULL, *tb = NULL, *tot = NULL;
			if (!rc)
				rc = pd_chunkenc_values_seal(vals, &vb, &nc.vals_len, err);
			if (!rc) {
				const uint8_t *t = pd_chunkenc_ts_bytes(&ts, &nc.ts_len);
				if ((tb = malloc(nc.ts_len)))
					memcpy(tb, t, nc.ts_len);
				else
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			}
			pd_chunkenc_ts_fini(&ts);
			pd_chunkenc_values_destroy(vals);
			vals = NULL;
			nc.ts = tb;
			nc.vals = vb;
			/* a buffer kept is freed with *keep, one not kept here */
			if (vb && keep_buf(keep, nkeep, keep_cap, vb)) {
				free(vb);
				free(tb);
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			} else if (tb && keep_buf(keep, nkeep, keep_cap, tb)) {
				free(tb);
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			}
			if (!rc)
				rc = tsdb_chunk_add_totals(&nc, db->o.max_profile, &tot, err);
			if (tot && keep_buf(keep, nkeep, keep_cap, tot)) {
				free(tot);
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			}
			if (!rc && no == ocap) {
				struct pd_block_chunk *g = realloc(o, ocap * 2 * sizeof(*o));
				if (g) {
					o = g;
					ocap *= 2;
				} else {
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				}
			}
			if (!rc)
				o[no++] = nc;
			i = e;
		}
		k = m;
	}
out:
	free(vs);
	free(pos);
	if (rc) {
		free(o);
		return rc;
	}
	*out = o;
	*nout = no;
	return 0;
}

/* Merges blocks (sorted by mint) into one new block spanning them all, leaving
 * out what their tombstones delete; a series' chunks from blocks that overlap
 * are merged sample by sample (resolve_overlaps). ulid receives its name, or ""
 * when nothing was left to write. */
static int merge_blocks(struct pd_tsdb *db, struct pd_block **bs, size_t n, char ulid[27],
			struct pd_err *err)
{
	uint64_t written = 0;
	struct cursor *cur = calloc(n, sizeof(*cur));
	char(*sources)[27] = NULL;
	size_t nsrc = 0;
	struct pd_block_writer *w = NULL;
	struct pd_block_chunk *cs = NULL;
	uint8_t **owned = NULL; /* value chunks rewritten in the store's encoding */
	size_t cs_cap = 0;
	uint8_t **keep = NULL; /* chunks written again where blocks overlap */
	size_t nkeep = 0, keep_cap = 0;
	int rc = 0, level = 0, overlap = 0;
	int64_t maxt = INT64_MIN;
	if (!cur)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct pd_block_meta *m = pd_block_meta(bs[i]);
		nsrc += m->nsources ? m->nsources : 1;
		if (m->level > level)
			level = m->level;
		if (m->mint < maxt)
			overlap = 1;
		if (m->maxt > maxt)
			maxt = m->maxt;
	}
	sources = calloc(nsrc, sizeof(*sources));
	if (!sources) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	nsrc = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pd_block_meta *m = pd_block_meta(bs[i]);
		if (!m->nsources)
			memcpy(sources[nsrc++], m->ulid, 27);
		for (size_t k = 0; k < m->nsources; k++)
			memcpy(sources[nsrc++], m->sources[k], 27);
	}
	rc = pd_block_writer_create(&w, db->dir, pd_block_meta(bs[0])->mint, maxt, level + 1,
				    (const char(*)[27])sources, nsrc, err);
	for (size_t i = 0; i < n && !rc; i++) {
		cur[i].b = bs[i];
		if (!(rc = pd_block_all_series(bs[i], &cur[i].refs, &cur[i].n, err)))
			rc = cursor_load(&cur[i], err);
	}
	while (!rc) {
		/* the smallest label set among the cursors */
		struct cursor *min = NULL;
		for (size_t i = 0; i < n; i++)
			if (cur[i].i < cur[i].n &&
			    (!min || labels_cmp(cur[i].labels, cur[i].nl, min->labels, min->nl) < 0))
				min = &cur[i];
		if (!min)
			break;
		struct pd_lpair *lab = min->labels;
		size_t nlab = min->nl, ncs = 0;
		/* every block with this series contributes its chunks, oldest block first */
		for (size_t i = 0; i < n && !rc; i++) {
			if (cur[i].i >= cur[i].n || labels_cmp(cur[i].labels, cur[i].nl, lab, nlab) != 0)
				continue;
			if (ncs + cur[i].nc > cs_cap) {
				size_t c = (ncs + cur[i].nc) * 2;
				struct pd_block_chunk *nc = realloc(cs, c * sizeof(*nc));
				if (nc)
					cs = nc;
				uint8_t **no = realloc(owned, 2 * c * sizeof(*no));
				if (no)
					owned = no;
				if (!nc || !no) {
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
					break;
				}
				cs_cap = c;
			}
			/* deleted samples are left out of the new block */
			size_t ntv;
			const struct tomb_entry *tv =
			    tomb_find(pd_block_tombstones(bs[i]), cur[i].refs[cur[i].i], &ntv);
			for (size_t k = 0; k < cur[i].nc && !rc; k++) {
				const struct pd_block_chunk_meta *m = &cur[i].chunks[k];
				owned[2 * ncs] = owned[2 * ncs + 1] = NULL;
				struct pd_block_chunk *c = &cs[ncs++];
				c->mint = m->mint;
				c->maxt = m->maxt;
				c->count = m->count;
				rc = pd_block_chunk_bytes(bs[i], m->ts_ref, &c->ts, &c->ts_len, err);
				if (!rc)
					rc = pd_block_chunk_bytes(bs[i], m->vals_ref, &c->vals, &c->vals_len, err);
				if (!rc && ntv) {
					int kept;
					uint8_t **o = &owned[2 * (ncs - 1)];
					rc = filter_chunk(db, c, tv, ntv, c, &o[1], &o[0], &kept, err);
					if (!rc && !kept) {
						ncs--;
						continue;
					}
					if (!rc && o[0])
						continue; /* rewritten in the store's encoding */
				}
				if (!rc)
					rc = reencode_values(db, c->ts, c->ts_len, &c->vals, &c->vals_len,
							     &owned[2 * (ncs - 1)], err);
				/* a chunk written before totals sections existed gets one */
				if (!rc)
					rc = tsdb_chunk_add_totals(c, db->o.max_profile, &owned[2 * (ncs - 1) + 1],
								   err);
			}
		}
		if (!rc && ncs && overlap) {
			struct pd_block_chunk *rs;
			size_t nrs;
			rc = resolve_overlaps(db, cs, ncs, &rs, &nrs, &keep, &nkeep, &keep_cap, err);
			if (!rc) {
				rc = pd_block_writer_add_series(w, lab, nlab, rs, nrs, err);
				written++;
				free(rs);
			}
		} else if (!rc && ncs) {
			rc = pd_block_writer_add_series(w, lab, nlab, cs, ncs, err);
			written++;
		}
		for (size_t k = 0; k < 2 * ncs; k++) {
			free(owned[k]);
			owned[k] = NULL;
		}
		for (size_t k = 0; k < nkeep; k++)
			free(keep[k]);
		nkeep = 0;
		/* advance every cursor that held this series (lab points into min's
		 * labels, so compare before any reload) */
		struct cursor *adv[64] = {NULL};
		size_t nadv = 0;
		for (size_t i = 0; i < n && !rc; i++)
			if (cur[i].i < cur[i].n && labels_cmp(cur[i].labels, cur[i].nl, lab, nlab) == 0 &&
			    nadv < 64)
				adv[nadv++] = &cur[i];
		for (size_t i = 0; i < nadv && !rc; i++) {
			adv[i]->i++;
			rc = cursor_load(adv[i], err);
		}
	}
	ulid[0] = '\0';
	if (rc || !written)
		pd_block_writer_abort(w); /* nothing left: the blocks go, no block comes */
	else
		rc = pd_block_writer_finish(w, ulid, err);
	if (!rc && ulid[0])
		pd_log_info("tsdb", "blocks compacted",
		            "ulid=%s sources=%zu mint=%lld maxt=%lld overlapping=%d", ulid, n,
		            (long long)pd_block_meta(bs[0])->mint, (long long)maxt, overlap);
out:
	for (size_t i = 0; i < n; i++) {
		free(cur[i].refs);
		free(cur[i].labels);
		free(cur[i].chunks);
	}
	free(cur);
	free(cs);
	free(owned);
	for (size_t k = 0; k < nkeep; k++)
		free(keep[k]);
	free(keep);
	free(sources);
	return rc;
}

/* Replaces blocks [from, from+n) of db->blocks by the block in dir ulid (none
 * when ulid is ""). */
static int swap_blocks(struct pd_tsdb *db, size_t from, size_t n, const char *ulid,
		       struct pd_err *err)
{
	struct pd_block *nb = NULL;
	int rc;
	if (ulid[0]) {
		char *p = path_join(db->dir, ulid);
		if (!p)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		rc = pd_block_open(&nb, p, err);
		free(p);
		if (rc)
			return rc;
	}
	struct pd_block **old = malloc(n * sizeof(*old));
	if (!old) {
		pd_block_close(nb);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	size_t add = nb ? 1 : 0;
	pthread_rwlock_wrlock(&db->blocks_mu);
	memcpy(old, db->blocks + from, n * sizeof(*old));
	if (nb)
		db->blocks[from] = nb;
	memmove(db->blocks + from + add, db->blocks + from + n,
		(db->nblocks - from - n) * sizeof(*db->blocks));
	db->nblocks -= n - add;
	pthread_rwlock_unlock(&db->blocks_mu);
	for (size_t i = 0; i < n; i++) {
		char *dir = strdup(pd_block_dir(old[i]));
		pd_block_close(old[i]);
		if (dir) {
			size_t l = strlen(dir);
			char *del = malloc(l + 9);
			if (del) {
				snprintf(del, l + 9, "%s.deleted", dir);
				if (rename(dir, del) == 0)
					rm_rf(del);
				free(del);
			}
			free(dir);
		}
	}
	free(old);
	return 0;
}

/* A merge of bs[0..n) that failed on damage (PD_ECORRUPT, in why): logged with
 * the blocks and counted as a failed compaction; the blocks stay as they are
 * and the rest of the compaction goes on without them. */
static void skip_damaged(struct pd_tsdb *db, struct pd_block **bs, size_t n,
			 const struct pd_err *why)
{
	__atomic_fetch_add(&db->compaction_failures, 1, __ATOMIC_RELAXED);
	pd_log_error("tsdb",
	             "compaction of damaged blocks failed (they stay as they are; the other "
	             "blocks are compacted, these retried at the next flush)",
	             "blocks=%zu first=%s last=%s mint=%lld maxt=%lld err=%s", n,
	             pd_block_meta(bs[0])->ulid, pd_block_meta(bs[n - 1])->ulid,
	             (long long)pd_block_meta(bs[0])->mint,
	             (long long)pd_block_meta(bs[n - 1])->maxt, why->msg);
}

/* Merges blocks that overlap, then blocks into aligned ranges. A merge that
 * fails on damage is skipped (skip_damaged); any other failure ends it. */
static int compact(struct pd_tsdb *db, struct pd_err *err)
{
	int64_t br = db->o.block_range_ms;
	int64_t max_range = db->o.retention_ms > 0 ? db->o.retention_ms / 10 : 31LL * 86400000;
	int rc = 0;
	struct pd_err merr = {0};
	/* only this thread changes the block list; readers may run meanwhile */
	pthread_mutex_lock(&db->append_mu);
	/* blocks that overlap first, whatever their ranges (Prometheus's vertical
	 * compaction): the same range persisted twice, by a crash between writing
	 * a block and checkpointing the WAL, or by a store that took samples
	 * before the newest block's end */
	for (size_t i = 0; i + 1 < db->nblocks && !rc;) {
		int64_t end = pd_block_meta(db->blocks[i])->maxt;
		size_t j = i + 1;
		/* at most 64 at once (merge_blocks' cursors): the block merged from
		 * them overlaps the rest, which the next round takes */
		for (; j < db->nblocks && j - i < 64 && pd_block_meta(db->blocks[j])->mint < end; j++)
			if (pd_block_meta(db->blocks[j])->maxt > end)
				end = pd_block_meta(db->blocks[j])->maxt;
		if (j - i < 2) {
			i++;
			continue;
		}
		char ulid[27];
		rc = merge_blocks(db, db->blocks + i, j - i, ulid, &merr);
		if (rc == PD_ECORRUPT) {
			skip_damaged(db, db->blocks + i, j - i, &merr);
			rc = 0;
			i = j;
			continue;
		}
		if (rc || (rc = swap_blocks(db, i, j - i, ulid, &merr)))
			break;
		db->compactions++;
		__atomic_fetch_add(&db->vertical_compactions, 1, __ATOMIC_RELAXED);
		/* the merged block (if any) is at i: look again from it */
	}
	for (int64_t r = br * 3; r <= max_range && !rc; r *= 3) {
		int64_t newest = db->nblocks ? pd_block_meta(db->blocks[db->nblocks - 1])->maxt : 0;
		if (db->head.maxt != INT64_MIN && db->head.maxt > newest)
			newest = db->head.maxt;
		newest = capped(newest, bound_cap(&db->o));
		/* one pass: a merge leaves the blocks before it as they were, and
		 * its own block alone in its window */
		for (size_t i = 0; i < db->nblocks && !rc;) {
			int64_t lo;
			window_floor(pd_block_meta(db->blocks[i])->mint, r, &lo);
			int64_t hi = lo + r;
			if (hi > newest)
				break; /* the window is still filling */
			size_t j = i;
			while (j < db->nblocks && pd_block_meta(db->blocks[j])->maxt <= hi &&
			       pd_block_meta(db->blocks[j])->mint >= lo)
				j++;
			if (j - i < 2) {
				i++;
				continue;
			}
			char ulid[27];
			rc = merge_blocks(db, db->blocks + i, j - i, ulid, &merr);
			if (rc == PD_ECORRUPT) {
				skip_damaged(db, db->blocks + i, j - i, &merr);
				rc = 0;
				i = j;
				continue;
			}
			if (rc || (rc = swap_blocks(db, i, j - i, ulid, &merr)))
				break;
			db->compactions++;
			i++;
		}
	}
	pthread_mutex_unlock(&db->append_mu);
	if (rc && err)
		*err = merr;
	return rc;
}

/* Deletes the oldest blocks while they are past the retention time or, with
 * by_size, while the blocks and the WAL exceed the retention size. */
static int apply_retention(struct pd_tsdb *db, int by_size, struct pd_err *err)
{
	(void)err;
	pthread_mutex_lock(&db->append_mu);
	for (;;) {
		if (!db->nblocks)
			break;
		int64_t newest = pd_block_meta(db->blocks[db->nblocks - 1])->maxt;
		if (db->head.maxt != INT64_MIN && db->head.maxt > newest)
			newest = db->head.maxt;
		newest = capped(newest, bound_cap(&db->o));
		const struct pd_block_meta *oldest = pd_block_meta(db->blocks[0]);
		int drop = db->o.retention_ms > 0 && oldest->maxt <= newest - db->o.retention_ms;
		if (!drop && by_size && db->o.retention_bytes) {
			uint64_t total = db->wal ? pd_wal_size(db->wal) : 0;
			for (size_t i = 0; i < db->nblocks; i++)
				total += pd_block_size(db->blocks[i]);
			drop = total > db->o.retention_bytes;
		}
		if (!drop)
			break;
		struct pd_block *b = db->blocks[0];
		pthread_rwlock_wrlock(&db->blocks_mu);
		memmove(db->blocks, db->blocks + 1, (db->nblocks - 1) * sizeof(*db->blocks));
		db->nblocks--;
		pthread_rwlock_unlock(&db->blocks_mu);
		char *dir = strdup(pd_block_dir(b));
		pd_block_close(b);
		if (dir) {
			/* a read-only reader (profd tsdb) only hides it: the daemon may own
			 * the directory and is the one to clean up */
			if (!db->o.read_only)
				rm_rf(dir);
			free(dir);
		}
		db->retention_deletions++;
	}
	pthread_mutex_unlock(&db->append_mu);
	return 0;
}

void pd_tsdb_stats(struct pd_tsdb *db, struct pd_tsdb_stats *st)
{
	memset(st, 0, sizeof(*st));
	struct head *h = &db->head;
	st->head_series_limit = h->max_series;
	st->head_series_limit_refused = __atomic_load_n(&h->refused, __ATOMIC_RELAXED);
	st->head_series_removed = __atomic_load_n(&h->removed, __ATOMIC_RELAXED);
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
	st->accept_from = accept_from(db, &why);
	st->wal_replay_skipped = db->replay_skipped;
	st->vertical_compactions = __atomic_load_n(&db->vertical_compactions, __ATOMIC_RELAXED);
	hcm_stats(h->hcm, &st->head_chunk_files, &st->head_chunk_bytes, &st->head_chunks_mapped);
	hs_stats(h->hs, &st->head_open_frame_files, &st->head_open_frame_bytes,
		 &st->head_open_frame_live_bytes);
	st->head_open_frame_write_failures = hs_write_failures(h->hs);
	st->head_chunk_files_damaged = db->hc_damaged_files;
	st->head_chunk_write_failures = __atomic_load_n(&h->hc_write_failures, __ATOMIC_RELAXED);
	if (db->ship)
		ch_ship_stats(db->ship, st);
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

int pd_tsdb_blocks(struct pd_tsdb *db, struct pd_tsdb_block_info **out, size_t *n,
		   struct pd_err *err)
{
	if (db->o.clickhouse) { /* no blocks: ClickHouse keeps the profiles */
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
		struct pd_tsdb_block_info *b = &(*out)[i];
		memcpy(b->ulid, m->ulid, sizeof(b->ulid));
		b->mint = m->mint;
		b->maxt = m->maxt;
		b->level = m->level;
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
static int delete_head(struct pd_tsdb *db, const struct pd_tsdb_matcher *m, size_t nm, int64_t mint,
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
static int delete_block(struct pd_tsdb *db, struct pd_block *b, const struct pd_tsdb_matcher *m,
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

int pd_tsdb_delete(struct pd_tsdb *db, const struct pd_tsdb_matcher *m, size_t nm, int64_t mint,
		   int64_t maxt, struct pd_err *err)
{
	if (db->o.clickhouse)
		return tsdb_ch_unsupported("deleting series", err);
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
	if (db->o.clickhouse)
		return tsdb_ch_unsupported("cleaning tombstones", err);
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
		if ((rc = merge_blocks(db, db->blocks + i, 1, ulid, err)) ||
		    (rc = swap_blocks(db, i, 1, ulid, err)))
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
		char *f = path_join(from, e->d_name), *t = path_join(to, e->d_name);
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
	qsort(all, n, sizeof(*all), series_ptr_cmp);
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
			rc = filter_chunk(db, &bc, t.v, t.n, &bc, &owned[2 * nc], &owned[2 * nc + 1],
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
	if (db->o.clickhouse) {
		name[0] = '\0';
		return tsdb_ch_unsupported("a snapshot", err);
	}
	char *sdir = path_join(db->dir, PD_TSDB_SNAPSHOTS_DIR), *tmp = NULL, *final = NULL;
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
	final = path_join(sdir, name);
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
		char *to = path_join(tmp, m->ulid);
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
		rm_rf(tmp);
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
