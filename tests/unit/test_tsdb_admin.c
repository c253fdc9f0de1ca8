/* test_tsdb_admin.c: deleting series and snapshots. Tombstones in the head
 * (every query path: timestamps, single profiles, merges, series listings), kept
 * by WAL replay and by WAL checkpoints, in blocks (the tombstones file, reopened),
 * left out by persisting the head, by compaction and by clean_tombstones (a block
 * with nothing left goes), the tombstones file's parser; and snapshots that open
 * as a store holding every profile, with and without the head. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "block.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "tsdb_int.h"
#include "wal.h"

#define NSERIES 3
static const char *jobs[NSERIES] = {"a", "b", "c"};

static int eq_match(const void *ctx, const char *v)
{
	return strcmp(ctx, v) == 0;
}

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_tsdb_admin_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

/* A small real profile whose value depends on (series, t). Raw protobuf, malloc'd. */
static uint8_t *payload(int series, int64_t t, size_t *len)
{
	static const char *strs[] = {"",        "inuse_space", "bytes", "main.main",
	                             "main.go", "main.work",   "space"};
	size_t lens[7];
	for (int i = 0; i < 7; i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_pvt st = {1, 2}, pt = {6, 2};
	struct pd_pprof_pfunction fns[2] = {{1, 3, 3, 4, 10}, {2, 5, 5, 4, 20}};
	struct pd_pprof_pline ln[2] = {{1, 12, 0}, {2, 22 + series, 0}};
	struct pd_pprof_plocation locs[2] = {{1, 0, 0x401000, &ln[0], 1, 0},
	                                     {2, 0, 0x402000, &ln[1], 1, 0}};
	uint64_t s1[] = {2, 1};
	int64_t v = 1000 * t + series;
	struct pd_pprof_psample sample = {s1, 2, &v, 1, NULL, 0};
	struct pd_pprof_parts p = {0};
	p.strings = strs;
	p.string_len = lens;
	p.nstrings = 7;
	p.sample_type = &st;
	p.nsample_type = 1;
	p.sample = &sample;
	p.nsample = 1;
	p.location = locs;
	p.nlocation = 2;
	p.function = fns;
	p.nfunction = 2;
	p.has_period_type = 1;
	p.period_type = pt;
	p.period = 1;
	p.time_nanos = t * 1000000;
	uint8_t *out;
	struct pd_err err = {0};
	if (pd_pprof_parts_encode(&p, &out, len, &err))
		fail_msg("payload: %s", err.msg);
	return out;
}

static void labels_of(int series, struct pd_storage_label l[2])
{
	l[0] = (struct pd_storage_label){"__name__", "heap"};
	l[1] = (struct pd_storage_label){"job", jobs[series]};
}

static void append_range(struct pd_tsdb *db, int64_t from, int64_t to, int64_t step)
{
	struct pd_err err = {0};
	for (int64_t t = from; t < to; t += step) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int s = 0; s < NSERIES; s++) {
			struct pd_storage_label l[2];
			labels_of(s, l);
			size_t len;
			uint8_t *p = payload(s, t, &len);
			if (pd_tsdb_append(a, l, 2, t, p, len, &err))
				fail_msg("append: %s", err.msg);
			free(p);
		}
		if (pd_tsdb_commit(a, &err))
			fail_msg("commit: %s", err.msg);
	}
}

static struct pd_tsdb *open_db(const char *dir, int64_t block_range, int read_only)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = block_range;
	o.retention_ms = -1;
	o.wal_sync = 1;
	o.chunk_samples = 8;
	o.read_only = read_only;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return db;
}

/* Deletes [mint, maxt] of the series with job=job (every series for NULL: a
 * matcher that any value passes is not enough, so __name__="heap"). */
static void delete_job(struct pd_tsdb *db, const char *job, int64_t mint, int64_t maxt)
{
	struct pd_err err = {0};
	struct pd_storage_matcher m = job ? (struct pd_storage_matcher){"job", eq_match, job}
	                               : (struct pd_storage_matcher){"__name__", eq_match, "heap"};
	if (pd_tsdb_delete(db, &m, 1, mint, maxt, &err))
		fail_msg("delete: %s", err.msg);
}

/* What the store must hold: series s has t in [from, to) by step unless
 * deleted(s, t). */
struct expect {
	int64_t from, to, step;
	int64_t del_lo[NSERIES], del_hi[NSERIES]; /* deleted: [lo, hi]; lo > hi: none */
};

static int deleted(const struct expect *e, int s, int64_t t)
{
	return t >= e->del_lo[s] && t <= e->del_hi[s];
}

static int merge_count(void *ctx, struct pd_pprof_profile *p, size_t count, int64_t first_t,
                       int64_t last_t, size_t bytes)
{
	(void)first_t;
	(void)last_t;
	(void)bytes;
	*(size_t *)ctx += count;
	pd_pprof_destroy(p);
	return 0;
}

/* Checks every query path against e: timestamps of each series (a series with
 * none left is not listed), every profile read (deleted ones are not found), the
 * number of profiles a merge over everything adds up. */
static void check(struct pd_tsdb *db, const struct expect *e)
{
	struct pd_err err = {0};
	struct pd_storage_matcher heap = {"__name__", eq_match, "heap"};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(db, &heap, 1, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
	size_t listed = 0;
	for (int s = 0; s < NSERIES; s++) {
		size_t want = 0;
		for (int64_t t = e->from; t < e->to; t += e->step)
			want += !deleted(e, s, t);
		const struct pd_storage_series *got = NULL;
		for (size_t i = 0; i < r->nseries; i++)
			if (strcmp(r->series[i].labels[1].value, jobs[s]) == 0)
				got = &r->series[i];
		if (!want) {
			if (got)
				fail_msg("series %s listed with %zu timestamps, all were deleted",
				         jobs[s], got->nts);
			continue;
		}
		listed++;
		if (!got)
			fail_msg("series %s not listed", jobs[s]);
		if (got->nts != want)
			fail_msg("series %s: %zu timestamps, want %zu", jobs[s], got->nts, want);
		size_t k = 0;
		for (int64_t t = e->from; t < e->to; t += e->step)
			if (!deleted(e, s, t))
				assert_int_equal(got->ts[k++], t);

		struct pd_storage_label l[2];
		labels_of(s, l);
		for (int64_t t = e->from; t < e->to; t += e->step) {
			uint8_t *p;
			size_t len;
			int rc = pd_tsdb_read(db, l, 2, t, &p, &len, &err);
			if (deleted(e, s, t)) {
				if (rc != PD_ENOTFOUND)
					fail_msg("series %s at %lld: deleted, read gave %d",
					         jobs[s], (long long)t, rc);
				continue;
			}
			if (rc)
				fail_msg("series %s at %lld: %s", jobs[s], (long long)t, err.msg);
			size_t wl;
			uint8_t *w = payload(s, t, &wl);
			struct pd_pprof_profile *a, *b;
			char why[256];
			assert_int_equal(pd_pprof_decode(&a, w, wl, NULL, &err), 0);
			assert_int_equal(pd_pprof_decode(&b, p, len, NULL, &err), 0);
			if (pd_pprof_compare(a, b, why, sizeof(why)))
				fail_msg("series %s at %lld: %s", jobs[s], (long long)t, why);
			pd_pprof_destroy(a);
			pd_pprof_destroy(b);
			free(w);
			free(p);
		}
		size_t merged = 0;
		assert_int_equal(
		    pd_tsdb_merge(db, l, 2, INT64_MIN, INT64_MAX, merge_count, &merged, &err), 0);
		if (merged != want)
			fail_msg("series %s: a merge added %zu profiles, want %zu", jobs[s], merged,
			         want);
	}
	assert_int_equal(r->nseries, listed);
	pd_storage_result_destroy(r);
}

static struct expect expect_all(int64_t from, int64_t to, int64_t step)
{
	struct expect e = {from, to, step, {0}, {0}};
	for (int s = 0; s < NSERIES; s++) {
		e.del_lo[s] = 1;
		e.del_hi[s] = 0;
	}
	return e;
}

static uint64_t block_samples(struct pd_tsdb *db, size_t *nblocks)
{
	struct pd_storage_block_info *b;
	struct pd_err err = {0};
	uint64_t n = 0;
	assert_int_equal(pd_tsdb_blocks(db, &b, nblocks, &err), 0);
	for (size_t i = 0; i < *nblocks; i++)
		n += b[i].samples;
	free(b);
	return n;
}

static int exists(const char *dir, const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return access(p, F_OK) == 0;
}

static void test_delete_head_and_replay(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 3600000, 0);
	append_range(db, 1000, 21000, 1000);
	struct expect e = expect_all(1000, 21000, 1000);
	check(db, &e);

	delete_job(db, "a", 5000, 9000);
	e.del_lo[0] = 5000;
	e.del_hi[0] = 9000;
	delete_job(db, "b", INT64_MIN, INT64_MAX);
	e.del_lo[1] = INT64_MIN;
	e.del_hi[1] = INT64_MAX;
	check(db, &e);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_tombstones, 2);
	assert_int_equal(st.deletions, 2);

	/* a deletion does not reach samples appended after it */
	append_range(db, 21000, 23000, 1000);
	e.to = 23000;
	e.del_hi[1] = 20000;
	check(db, &e);

	/* a restart replays the deletion record after the samples it deletes */
	pd_tsdb_close(db);
	db = open_db(dir, 3600000, 0);
	check(db, &e);

	/* persisting the head leaves deleted samples out of the block */
	struct pd_err err = {0};
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	size_t nb;
	assert_int_equal(block_samples(db, &nb), 3 * 22 - 5 - 20);
	assert_int_equal(nb, 1);
	check(db, &e);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A deletion in the head survives a WAL checkpoint: the head is persisted up to
 * a block boundary and the rest, with the deletion, stays in the WAL. */
static void test_delete_survives_checkpoint(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 10000, 0);
	append_range(db, 0, 40000, 1000);
	struct expect e = expect_all(0, 40000, 1000);
	delete_job(db, "c", 31000, 33000);
	e.del_lo[2] = 31000;
	e.del_hi[2] = 33000;
	struct pd_err err = {0};
	/* persists [0, 30000) and keeps the newest 1.5 ranges in the head */
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.blocks >= 1);
	assert_int_equal(st.head_tombstones, 1);
	check(db, &e);
	pd_tsdb_close(db);
	db = open_db(dir, 10000, 0);
	check(db, &e);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_tombstones, 1);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

static void test_delete_blocks_clean(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_db(dir, 3600000, 0);
	append_range(db, 1000, 21000, 1000);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	struct pd_storage_block_info *bi;
	size_t nb;
	assert_int_equal(pd_tsdb_blocks(db, &bi, &nb, &err), 0);
	assert_int_equal(nb, 1);
	char ulid[27], tf[64];
	memcpy(ulid, bi[0].ulid, 27);
	free(bi);
	snprintf(tf, sizeof(tf), "%s/tombstones", ulid);
	assert_false(exists(dir, tf));

	struct expect e = expect_all(1000, 21000, 1000);
	delete_job(db, "a", 2000, 2999);
	delete_job(db, "a", 3000, 4000); /* adjacent intervals join: 2000..4000 */
	e.del_lo[0] = 2000;
	e.del_hi[0] = 4000;
	check(db, &e);
	assert_true(exists(dir, tf));
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.tombstones, 1);

	/* the tombstones file is read back at open */
	pd_tsdb_close(db);
	db = open_db(dir, 3600000, 0);
	check(db, &e);
	/* and by a read-only reader */
	struct pd_tsdb *ro = open_db(dir, 3600000, 1);
	check(ro, &e);
	pd_tsdb_close(ro);

	/* clean_tombstones rewrites the block without the deleted samples */
	assert_int_equal(pd_tsdb_clean_tombstones(db, &err), 0);
	assert_false(exists(dir, ulid));
	assert_int_equal(block_samples(db, &nb), 3 * 20 - 3);
	assert_int_equal(nb, 1);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.tombstones, 0);
	check(db, &e);
	pd_tsdb_close(db);
	db = open_db(dir, 3600000, 0);
	check(db, &e);

	/* a block with every sample deleted disappears when cleaned */
	delete_job(db, NULL, INT64_MIN, INT64_MAX);
	for (int s = 0; s < NSERIES; s++) {
		e.del_lo[s] = INT64_MIN;
		e.del_hi[s] = INT64_MAX;
	}
	check(db, &e);
	assert_int_equal(pd_tsdb_clean_tombstones(db, &err), 0);
	block_samples(db, &nb);
	assert_int_equal(nb, 0);
	check(db, &e);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

static void test_compaction_drops_deleted(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_db(dir, 10000, 0);
	/* two blocks of the compaction window [0, 30000), which is not complete yet */
	append_range(db, 0, 20000, 1000);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	size_t nb;
	block_samples(db, &nb);
	assert_int_equal(nb, 2);
	struct expect e = expect_all(0, 40000, 1000);
	delete_job(db, "a", 5000, 15000);
	e.del_lo[0] = 5000;
	e.del_hi[0] = 15000;
	delete_job(db, "b", INT64_MIN, INT64_MAX);
	e.del_lo[1] = INT64_MIN;
	e.del_hi[1] = 19000;
	append_range(db, 20000, 40000, 1000);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.compactions >= 1);
	/* the compacted block holds neither the deleted samples nor their tombstones */
	assert_int_equal(block_samples(db, &nb), 3 * 40 - 11 - 20);
	assert_int_equal(st.tombstones, 0);
	check(db, &e);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

static void test_tombstones_file(void **state)
{
	(void)state;
	struct tombstones t, back;
	struct pd_buf b;
	struct pd_err err = {0};
	tomb_init(&t);
	assert_int_equal(tomb_add(&t, 7, 10, 20), 0);
	assert_int_equal(tomb_add(&t, 3, INT64_MIN, -5), 0);
	assert_int_equal(tomb_add(&t, 7, 21, 30), 0); /* adjacent: joins */
	assert_int_equal(tomb_add(&t, 7, 40, INT64_MAX), 0);
	tomb_normalize(&t);
	assert_int_equal(t.n, 3);
	pd_buf_init(&b, 0);
	assert_int_equal(tomb_encode(&t, &b), 0);
	/* magic, version, reserved */
	assert_memory_equal(b.data, "PDTB\x01\x00\x00\x00", 8);
	assert_int_equal(tomb_decode(b.data, b.len, &back, "t", &err), 0);
	assert_int_equal(back.n, 3);
	assert_memory_equal(back.v, t.v, 3 * sizeof(*t.v));
	size_t n;
	const struct tomb_entry *iv = tomb_find(&back, 7, &n);
	assert_int_equal(n, 2);
	assert_true(tomb_covers(iv, n, 25));
	assert_false(tomb_covers(iv, n, 35));
	assert_null(tomb_find(&back, 5, &n));
	tomb_fini(&back);

	/* every single flipped bit is refused, naming the file */
	for (size_t i = 0; i < b.len * 8; i++) {
		b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
		int rc = tomb_decode(b.data, b.len, &back, "blk/tombstones", &err);
		if (rc == 0)
			fail_msg("bit %zu flipped was accepted", i);
		assert_non_null(strstr(err.msg, "blk/tombstones"));
		b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	/* every truncation too */
	for (size_t l = 0; l < b.len; l++)
		assert_int_not_equal(tomb_decode(b.data, l, &back, "t", &err), 0);
	/* another version */
	b.data[4] = 2;
	assert_int_equal(tomb_decode(b.data, b.len, &back, "t", &err), PD_EINCOMPAT);
	pd_buf_fini(&b);
	tomb_fini(&t);
}

static void test_snapshot(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_db(dir, 10000, 0);
	append_range(db, 0, 20000, 1000);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0); /* blocks [0, 10000), [10000, 20000) */
	append_range(db, 20000, 26000, 1000);            /* the head */
	struct expect e = expect_all(0, 26000, 1000);
	delete_job(db, "a", 8000, 22000); /* in both blocks and the head */
	e.del_lo[0] = 8000;
	e.del_hi[0] = 22000;

	char name[PD_TSDB_SNAPSHOT_NAME_MAX];
	assert_int_equal(pd_tsdb_snapshot(db, 0, name, &err), 0);
	/* YYYYMMDDTHHMMSSZ-<16 hex> */
	assert_int_equal(strlen(name), 16 + 1 + 16);
	assert_int_equal(name[8], 'T');
	assert_int_equal(name[15], 'Z');
	assert_int_equal(name[16], '-');
	for (int i = 17; i < 33; i++)
		assert_non_null(strchr("0123456789abcdef", name[i]));
	char snap[512];
	snprintf(snap, sizeof(snap), "%s/snapshots/%s", dir, name);

	/* the store's blocks are hard links in the snapshot */
	struct pd_storage_block_info *bi;
	size_t nb;
	assert_int_equal(pd_tsdb_blocks(db, &bi, &nb, &err), 0);
	assert_true(nb >= 1);
	char p[640];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s/index", snap, bi[0].ulid);
	assert_int_equal(stat(p, &st), 0);
	assert_true(st.st_nlink >= 2);
	free(bi);

	/* samples appended after the snapshot are not in it */
	append_range(db, 26000, 28000, 1000);
	/* flushing and compacting the store leaves the snapshot alone */
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);

	struct pd_tsdb *s = open_db(snap, 10000, 1);
	check(s, &e);
	pd_tsdb_close(s);

	/* skip_head: only what blocks held */
	assert_int_equal(pd_tsdb_snapshot(db, 1, name, &err), 0);
	snprintf(snap, sizeof(snap), "%s/snapshots/%s", dir, name);
	s = open_db(snap, 10000, 1);
	struct expect blocks = e;
	blocks.to = 28000; /* everything was flushed into blocks before */
	check(s, &blocks);
	pd_tsdb_close(s);

	/* the store itself never sees the snapshots as blocks */
	pd_tsdb_close(db);
	db = open_db(dir, 10000, 0);
	check(db, &blocks);
	struct pd_storage_stats sst;
	pd_tsdb_stats(db, &sst);
	assert_int_equal(sst.blocks_damaged, 0);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

struct wal_seen {
	int series, samples;
	struct tomb_entry t[8];
	int nt;
};

static int seen_series(void *c, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	(void)ref;
	(void)l;
	(void)n;
	((struct wal_seen *)c)->series++;
	return 0;
}

static int seen_sample(void *c, uint64_t ref, int64_t t, const uint8_t *p, size_t len)
{
	(void)ref;
	(void)t;
	(void)p;
	(void)len;
	((struct wal_seen *)c)->samples++;
	return 0;
}

static int seen_tombstone(void *c, uint64_t ref, int64_t mint, int64_t maxt)
{
	struct wal_seen *w = c;
	if (w->nt < 8)
		w->t[w->nt++] = (struct tomb_entry){ref, mint, maxt};
	return 0;
}

static void wal_write(struct pd_wal *w, struct pd_wal_rec *r)
{
	struct pd_err err = {0};
	assert_int_equal(pd_wal_rec_seal(r, &err), 0);
	pd_wal_enqueue(w, r);
	assert_int_equal(pd_wal_wait(w, r, &err), 0);
	pd_wal_rec_reset(r);
}

/* The deletion record (type 2) on its own: its bytes, replay, the rule that a
 * record holds samples or tombstones, and checkpoints keeping only tombstones
 * that end at or after the checkpoint's time. */
static void test_wal_deletion_record(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_wal *w;
	struct pd_wal_opts o = {0, PD_WAL_SYNC_NONE, 0};
	struct pd_lpair l[1] = {{"job", "a"}};
	assert_int_equal(pd_wal_open(&w, dir, &o, &err), 0);
	struct pd_wal_rec *r = pd_wal_rec_create();
	assert_int_equal(pd_wal_rec_series(r, 1, l, 1, &err), 0);
	assert_int_equal(pd_wal_rec_sample(r, 1, 100, (const uint8_t *)"x", 1, &err), 0);
	assert_int_equal(pd_wal_rec_tombstone(r, 1, 0, 10, &err), PD_EINVAL);
	wal_write(w, r);
	assert_int_equal(pd_wal_rec_tombstone(r, 1, INT64_MIN, 50, &err), 0);
	assert_int_equal(pd_wal_rec_tombstone(r, 1, 90, 200, &err), 0);
	assert_int_equal(pd_wal_rec_sample(r, 1, 300, (const uint8_t *)"y", 1, &err), PD_EINVAL);
	assert_int_equal(pd_wal_rec_tombstone(r, 1, 5, 4, &err), PD_EINVAL);
	wal_write(w, r);

	/* the second record of segment 1 has type 2 */
	char seg[512];
	snprintf(seg, sizeof(seg), "%s/00000001", dir);
	uint8_t *b;
	size_t len;
	assert_int_equal(pd_file_read(seg, 1 << 20, &b, &len, &err), 0);
	assert_true(len > 8 + 10);
	assert_int_equal(b[8], 1);
	size_t second =
	    8 + 10 + ((size_t)b[10] << 24 | (size_t)b[11] << 16 | (size_t)b[12] << 8 | b[13]);
	assert_true(second < len);
	assert_int_equal(b[second], 2);
	free(b);

	struct wal_seen seen = {0};
	struct pd_wal_replay_cb cb = {seen_series, seen_sample, &seen, seen_tombstone};
	struct pd_wal_replay_stats st;
	assert_int_equal(pd_wal_replay_readonly(dir, &cb, &st, &err), 0);
	assert_int_equal(seen.series, 1);
	assert_int_equal(seen.samples, 1);
	assert_int_equal(seen.nt, 2);
	assert_int_equal(seen.t[0].mint, INT64_MIN);
	assert_int_equal(seen.t[0].maxt, 50);
	assert_int_equal(seen.t[1].mint, 90);
	assert_int_equal(seen.t[1].maxt, 200);
	assert_int_equal(st.tombstones, 2);

	/* a checkpoint at 60 drops the tombstone that ends before it */
	assert_int_equal(pd_wal_cut(w, &err), 0);
	assert_int_equal(pd_wal_checkpoint(w, 60, NULL, NULL, &err), 0);
	pd_wal_rec_destroy(r);
	pd_wal_close(w);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(pd_wal_replay_readonly(dir, &cb, &st, &err), 0);
	assert_int_equal(seen.series, 1);
	assert_int_equal(seen.samples, 1);
	assert_int_equal(seen.nt, 1);
	assert_int_equal(seen.t[0].mint, 90);
	rmdir_all(dir);
}

static void test_delete_refusals(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_db(dir, 3600000, 0);
	struct pd_storage_matcher m = {"job", eq_match, "a"};
	assert_int_equal(pd_tsdb_delete(db, &m, 0, 0, 1, &err), PD_EINVAL);
	assert_int_equal(pd_tsdb_delete(db, &m, 1, 10, 1, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "after its end"));
	/* nothing to delete is no error */
	assert_int_equal(pd_tsdb_delete(db, &m, 1, 0, 1, &err), 0);
	pd_tsdb_close(db);
	db = open_db(dir, 3600000, 1);
	assert_int_equal(pd_tsdb_delete(db, &m, 1, 0, 1, &err), PD_EINVAL);
	assert_int_equal(pd_tsdb_clean_tombstones(db, &err), PD_EINVAL);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tombstones_file),
	    cmocka_unit_test(test_wal_deletion_record),
	    cmocka_unit_test(test_delete_head_and_replay),
	    cmocka_unit_test(test_delete_survives_checkpoint),
	    cmocka_unit_test(test_delete_blocks_clean),
	    cmocka_unit_test(test_compaction_drops_deleted),
	    cmocka_unit_test(test_snapshot),
	    cmocka_unit_test(test_delete_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
