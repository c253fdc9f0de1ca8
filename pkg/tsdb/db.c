/* db.c: the database's options, opening (blocks, the head chunk files, WAL
 * replay into the head) and closing. Its appender is in db_append.c, persisting
 * the head in db_flush.c, compaction and retention in db_compact.c, statistics,
 * deletion and snapshots in db_admin.c. */
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
#include "hc_replay.h"
#include "replay_idle.h"
#include "head_chunks.h"
#include "head_spill.h"
#include "db_int.h"
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
	o->head_idle_ms = PD_TSDB_DEFAULT_HEAD_IDLE_MS;
}

/* The latest time any bound is measured from: the system clock (INT64_MAX
 * without a future window). A sample dated after it, within the window or
 * stored before the window existed, moves no bound past the present: neither
 * the earliest time accepted, nor retention, nor which block ranges are
 * complete. */
int64_t db_bound_cap(const struct pd_tsdb_opts *o)
{
	if (o->max_future_ms < 0)
		return INT64_MAX;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The latest time a sample is accepted at: the clock plus the future window
 * (INT64_MAX without one). */
int64_t db_future_cap(const struct pd_tsdb_opts *o)
{
	int64_t now = db_bound_cap(o);
	if (now == INT64_MAX)
		return INT64_MAX;
	return now > INT64_MAX - o->max_future_ms ? INT64_MAX : now + o->max_future_ms;
}

/* t, but no later than cap. */
int64_t db_capped(int64_t t, int64_t cap)
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

int db_rm_rf(const char *path)
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

char *db_path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

int db_add_block(struct pd_tsdb *db, struct pd_block *b, struct pd_err *err)
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
				db_rm_rf(dir);
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
	char *dd = db_path_join(db->dir, PD_TSDB_DAMAGED_DIR);
	char *from = db_path_join(db->dir, name);
	char *to = dd ? db_path_join(dd, name) : NULL;
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
		char *p = db_path_join(db->dir, e->d_name);
		if (!p) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		if ((l > 4 && strcmp(e->d_name + l - 4, ".tmp") == 0) ||
		    (l > 8 && strcmp(e->d_name + l - 8, ".deleted") == 0)) {
			/* a block write or delete that a crash interrupted, or one that a
			 * running daemon is doing now: only a writer removes it */
			if (!db->o.read_only)
				db_rm_rf(p);
		} else if (is_ulid(e->d_name)) {
			struct pd_block *b;
			struct pd_err berr = {0};
			int r2 = pd_block_open(&b, p, &berr);
			if (r2 == PD_ENOMEM)
				rc = pd_err_set(err, PD_ENOMEM, "%s", berr.msg);
			else if (r2)
				set_aside(db, e->d_name, &berr);
			else if ((rc = db_add_block(db, b, err)))
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
	/* the samples blocks of idle series hold (NULL: none), and for each head
	 * series (by index) its entry there or NULL */
	struct idle_index *idle;
	const struct idle_entry **idle_of;
	size_t idle_cap;
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
	if (rc->idle) {
		if (ix >= rc->idle_cap) {
			size_t cap = rc->idle_cap ? rc->idle_cap : 256;
			while (cap <= ix)
				cap *= 2;
			void *q = realloc(rc->idle_of, cap * sizeof(*rc->idle_of));
			if (!q)
				return PD_ENOMEM;
			rc->idle_of = q;
			memset(rc->idle_of + rc->idle_cap, 0, (cap - rc->idle_cap) * sizeof(*rc->idle_of));
			rc->idle_cap = cap;
		}
		rc->idle_of[ix] = idle_index_find(rc->idle, l, n);
	}
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
	uint32_t ix;
	if (rc->idle && pd_u64map_get(&rc->refs, ref, &ix) && ix - 1 < rc->idle_cap &&
	    rc->idle_of[ix - 1] && idle_index_holds(rc->idle, rc->idle_of[ix - 1], t)) {
		return 0; /* a block of idle series holds it: stored, not left out */
	}
	if (rc->db->o.sink) {
		/* the profiles are the sink's: the head keeps the newest time only */
		tsdb_note_time(s, t);
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
	tsdb_storage_init(db);
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
	int64_t cap = db_future_cap(&db->o), now = db_bound_cap(&db->o);
	for (size_t i = 0; i < db->nblocks; i++) {
		int64_t e = db_capped(pd_block_meta(db->blocks[i])->maxt, now);
		/* a block of idle series is written before its range is complete:
		 * the range still takes samples */
		if (pd_block_meta(db->blocks[i])->idle)
			continue;
		if (pd_block_meta(db->blocks[i])->maxt <= cap && e > db->min_valid_t)
			db->min_valid_t = e;
	}
	if (db->o.sink && db->o.wal_disabled && !db->o.read_only) {
		rc = pd_err_set(err, PD_EINVAL, "forwarding to %s needs the WAL, its spool",
				db->o.sink->title);
		goto fail;
	}
	if (!db->o.wal_disabled) {
		char *wdir = db_path_join(dir, "wal");
		struct replay_ctx ctx = {db, 0, 0, {0}, NULL, NULL, NULL, 0};
		pd_u64map_init(&ctx.refs);
		if (!db->o.sink && (rc = idle_index_build(db, &ctx.idle, err))) {
			pd_u64map_fini(&ctx.refs);
			goto fail;
		}
		if (!db->o.read_only && !db->o.sink &&
		    (rc = open_head_chunks(db, &ctx.hc, err))) {
			pd_u64map_fini(&ctx.refs);
			free(wdir);
			goto fail;
		}
		struct pd_wal_replay_cb cb = {replay_series, replay_sample, &ctx, replay_tombstone};
		struct pd_wal_replay_stats st;
		struct pd_wal_opts wo = {.segment_size = db->o.wal_segment_size, .sync = db->o.wal_sync};
		if (db->o.sink && !wo.segment_size)
			wo.segment_size = PD_TSDB_SINK_SEGMENT;
		if (!wdir) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		memset(&st, 0, sizeof(st));
		rc = db->o.read_only ? pd_wal_replay_readonly(wdir, &cb, &st, err)
				     : pd_wal_replay(wdir, &cb, &st, err);
		replay_mark_logged(&ctx);
		pd_u64map_fini(&ctx.refs);
		idle_index_free(ctx.idle);
		free(ctx.idle_of);
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
		if (!rc && !db->o.sink)
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
		/* with a sink, the WAL is the spool its forwarder sends from */
		if (!rc && !db->o.read_only && db->o.sink)
			rc = tsdb_fwd_start(db, err);
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
		/* blocks of idle series that overlap are merged now, whatever their
		 * range: replay may have put idle series back, written out again */
		db->compact_idle = 1;
		int frc = pd_tsdb_flush(db, 0, &ferr);
		db->compact_idle = 0;
		if (frc)
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
	tsdb_fwd_stop(db->fwd);
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
