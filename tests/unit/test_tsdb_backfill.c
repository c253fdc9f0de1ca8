/* test_tsdb_backfill.c: samples dated before what the store has persisted.
 * Appends before the newest block's end, or past the retention time, are
 * refused with an error saying how far back the store goes, at the append or,
 * when a flush persisted the range in between, at the commit; a range persisted
 * before it was complete still takes samples; samples a WAL
 * holds before the newest block's end (a crash between writing a block and
 * checkpointing, or a store that took them before appends were bounded) come
 * back at open; blocks that overlap are merged, a timestamp in both once; and
 * a compaction that fails does not keep retention from running. Samples dated
 * more than the future window after the clock are refused, and a sample stored
 * that far ahead before (window off), or one within a wide window, moves no
 * bound past the clock. A failed head cut leaves size retention alone, a
 * restart after importing the present takes present samples, a merge out of
 * memory or on a damaged chunk leaves the blocks and the rest of compaction
 * alone, and a refused commit's new series take no series-limit slot. */
#define _GNU_SOURCE /* nftw */
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/tsdb.h"
#include "block.h"
#include "tsdb_int.h"

/* Linked with --wrap=realloc: while fail_grow is set, the first realloc of
 * an array of 16 pointers to 32 (the store's list of buffers to free, at
 * its second growth) fails, and clears it. */
void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
static int fail_grow;
void *__wrap_realloc(void *p, size_t size)
{
	if (fail_grow && p && size == 32 * sizeof(void *) &&
	    malloc_usable_size(p) == 16 * sizeof(void *)) {
		fail_grow = 0;
		return NULL;
	}
	return __real_realloc(p, size);
}

#define H (3600LL * 1000)
#define STEP (5LL * 60 * 1000)

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_backfill_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

/* The stored bytes of series s at t: any bytes do, the store keeps them. */
static uint8_t *value(int s, int64_t t, size_t *len)
{
	*len = 200;
	uint8_t *p = malloc(*len);
	for (size_t i = 0; i < *len; i++)
		p[i] = (uint8_t)(i * 7 + (uint64_t)s * 13 + (uint64_t)(t / STEP) * (i % 5));
	p[0] = 0x0a; /* not a gzip stream */
	return p;
}

static char job[8][8];
static void labels(int s, struct pd_storage_label l[2])
{
	snprintf(job[s], sizeof(job[s]), "j%d", s);
	l[0] = (struct pd_storage_label){"__name__", "heap"};
	l[1] = (struct pd_storage_label){"job", job[s]};
}

/* A store of 1 h blocks, future window future (0: the default; <0: none). */
static struct pd_tsdb *open_future(const char *dir, int64_t retention, int64_t future)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = H;
	o.retention_ms = retention;
	o.wal_sync = 1;
	if (future)
		o.max_future_ms = future;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return db;
}

/* A store of 1 h blocks; wal 0: without a WAL, as bulk import writes blocks. */
static struct pd_tsdb *open_store(const char *dir, int64_t retention, int wal)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = H;
	o.retention_ms = retention;
	o.wal_sync = 1;
	o.wal_disabled = !wal;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return db;
}

/* Appends series s at t; returns the code of the append or the commit. */
static int put(struct pd_tsdb *db, int s, int64_t t, struct pd_err *err)
{
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	struct pd_storage_label l[2];
	size_t len;
	labels(s, l);
	uint8_t *p = value(s, t, &len);
	int rc = pd_tsdb_append(a, l, 2, t, p, len, err);
	free(p);
	if (rc) {
		pd_tsdb_rollback(a);
		return rc;
	}
	return pd_tsdb_commit(a, err);
}

static void put_range(struct pd_tsdb *db, int s, int64_t from, int64_t to)
{
	struct pd_err err = {0};
	for (int64_t t = from; t < to; t += STEP)
		if (put(db, s, t, &err))
			fail_msg("series %d at %lld: %s", s, (long long)t, err.msg);
}

/* Timestamps of series s in [from, to]; -1 when it is not there. */
static long count_ts(struct pd_tsdb *db, int s, int64_t from, int64_t to)
{
	struct pd_err err = {0};
	struct pd_storage_matcher m = {"job", pd_storage_match_equal, job[s]};
	struct pd_storage_result *r;
	struct pd_storage_label l[2];
	labels(s, l);
	if (pd_tsdb_select(db, &m, 1, from, to, 0, &r, &err))
		fail_msg("select: %s", err.msg);
	long n = r->nseries ? (long)r->series[0].nts : -1;
	if (r->nseries)
		for (size_t i = 1; i < r->series[0].nts; i++)
			assert_true(r->series[0].ts[i - 1] < r->series[0].ts[i]);
	pd_storage_result_destroy(r);
	return n;
}

/* Series s has exactly the samples of [from, to), and each reads back. */
static void expect_series(struct pd_tsdb *db, int s, int64_t from, int64_t to)
{
	struct pd_err err = {0};
	assert_int_equal(count_ts(db, s, from, to - 1), (to - from) / STEP);
	for (int64_t t = from; t < to; t += STEP) {
		struct pd_storage_label l[2];
		uint8_t *got;
		size_t glen, wlen;
		labels(s, l);
		if (pd_tsdb_read(db, l, 2, t, &got, &glen, &err))
			fail_msg("read series %d at %lld: %s", s, (long long)t, err.msg);
		uint8_t *want = value(s, t, &wlen);
		assert_int_equal(glen, wlen);
		assert_memory_equal(got, want, wlen);
		free(got);
		free(want);
	}
}

/* Moves every block of store from into store to (both closed). */
static void move_blocks(const char *from, const char *to)
{
	DIR *d = opendir(from);
	struct dirent *e;
	assert_non_null(d);
	while ((e = readdir(d))) {
		if (strlen(e->d_name) != 26)
			continue;
		char a[512], b[512];
		snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
		snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
		assert_int_equal(rename(a, b), 0);
	}
	closedir(d);
}

/* A sample before the newest block's end is refused, with its time, the
 * earliest accepted and why, and counted; one after it is kept across a
 * reopen. The old store took it, and the next start's replay dropped it. */
static void test_before_newest_block_refused(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, -1, 1);
	put_range(db, 0, 0, 5 * H);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.blocks >= 1);
	int64_t end = pd_block_meta(db->blocks[db->nblocks - 1])->maxt;
	assert_int_equal(st.accept_from, end);

	/* a new series into the persisted range */
	assert_int_equal(put(db, 1, H, &err), PD_EINVAL);
	assert_non_null(
	    strstr(err.msg,
	           "heap{job=\"j1\"}: sample at 3600000 (1970-01-01T01:00:00Z) is out of bounds"));
	assert_non_null(strstr(err.msg, "accepts samples from"));
	assert_non_null(strstr(err.msg, "newest block ends there"));
	assert_int_equal(put(db, 1, end - 1, &err), PD_EINVAL);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.out_of_bounds, 2);
	/* at the bound it is taken */
	assert_int_equal(put(db, 1, end, &err), 0);
	pd_tsdb_close(db);

	db = open_store(dir, -1, 1);
	assert_int_equal(count_ts(db, 1, 0, 100 * H), 1);
	expect_series(db, 0, 0, 5 * H);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.wal_replay_skipped, 0);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* An append that passed its check before a flush persisted its range is
 * refused at the commit: nothing acknowledged lies before the new bound. */
static void test_flush_between_append_and_commit(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, -1, 1);
	put_range(db, 0, 0, 3 * H);
	/* no block yet: any time is accepted */
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.accept_from == INT64_MIN);
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	struct pd_storage_label l[2];
	size_t len;
	labels(1, l);
	uint8_t *p = value(1, 90 * 60 * 1000, &len);
	assert_int_equal(pd_tsdb_append(a, l, 2, 90 * 60 * 1000, p, len, &err), 0);
	free(p);
	/* [0, 1 h) and [1 h, 2 h) go to blocks: the bound moves to 2 h */
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.accept_from, 2 * H);
	assert_int_equal(pd_tsdb_commit(a, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "out of bounds"));
	pd_tsdb_close(db);
	db = open_store(dir, -1, 1);
	assert_int_equal(count_ts(db, 1, 0, 100 * H), -1);
	expect_series(db, 0, 0, 3 * H);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A range persisted before it was complete (pd_tsdb_flush with all) still takes
 * samples: they survive a reopen, and the block written of them over the range
 * is merged with the first. */
static void test_incomplete_range_takes_samples(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, -1, 1);
	put_range(db, 0, 0, 90 * 60 * 1000);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	assert_int_equal(db->nblocks, 2); /* [0, 1 h), [1 h, 2 h) */
	put_range(db, 1, H, 2 * H);
	put_range(db, 0, 90 * 60 * 1000, 2 * H);
	pd_tsdb_close(db);
	db = open_store(dir, -1, 1);
	expect_series(db, 0, 0, 2 * H);
	expect_series(db, 1, H, 2 * H);
	pd_tsdb_close(db);
	db = open_store(dir, -1, 1);
	put_range(db, 0, 2 * H, 4 * H);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compaction_failures, 0);
	for (size_t i = 1; i < db->nblocks; i++)
		assert_true(pd_block_meta(db->blocks[i])->mint >=
		            pd_block_meta(db->blocks[i - 1])->maxt);
	expect_series(db, 0, 0, 4 * H);
	expect_series(db, 1, H, 2 * H);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A sample past the retention time behind the newest one is refused:
 * retention would delete it with its block as soon as it got there. */
static void test_past_retention_refused(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, 10 * H, 1);
	put_range(db, 0, 100 * H, 100 * H + STEP);
	assert_int_equal(put(db, 1, 89 * H, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "retention time"));
	assert_non_null(strstr(err.msg, "from 324000000 (1970-01-04T18:00:00Z)"));
	assert_int_equal(put(db, 1, 91 * H, &err), 0);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A WAL with samples before the newest block's end that no block holds (a
 * store that took them before appends were bounded, or whose block of them
 * was lost) keeps them at open: they are persisted as a block of their own
 * and merged with the block they overlap. The old replay dropped them. */
static void test_replay_keeps_old_samples(void **state)
{
	(void)state;
	char *dir = tmpdir(), *other = tmpdir();
	struct pd_err err = {0};
	/* series 0 in the WAL only: 0 to 40 min, the head's first range */
	struct pd_tsdb *db = open_store(dir, -1, 1);
	put_range(db, 0, 0, 40 * 60 * 1000);
	pd_tsdb_close(db);
	/* a block of series 1 over [0, 2 h) beside it */
	db = open_store(other, -1, 0);
	put_range(db, 1, 0, 2 * H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_close(db);
	move_blocks(other, dir);

	db = open_store(dir, -1, 1);
	expect_series(db, 0, 0, 40 * 60 * 1000);
	expect_series(db, 1, 0, 2 * H);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.wal_replay_skipped, 0);
	assert_int_equal(st.compaction_failures, 0);
	pd_tsdb_close(db);
	/* and after another start, with the WAL checkpointed */
	db = open_store(dir, -1, 1);
	expect_series(db, 0, 0, 40 * 60 * 1000);
	expect_series(db, 1, 0, 2 * H);
	pd_tsdb_close(db);
	rmdir_all(dir);
	rmdir_all(other);
}

/* Blocks that overlap (a store written before appends were bounded: a range
 * persisted again with a new series, and a series in both) are merged into one,
 * each timestamp once, and later compactions succeed. Before, the compaction
 * failed ("lies outside the block's ...") at every flush from then on. */
static void test_compaction_overlapping_blocks(void **state)
{
	(void)state;
	char *dir = tmpdir(), *other = tmpdir();
	struct pd_err err = {0};
	/* series 0 over [0, 6 h): compacted to one block of [0, 3 h) and more */
	struct pd_tsdb *db = open_store(dir, -1, 0);
	put_range(db, 0, 0, 6 * H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_close(db);
	/* a backfill of [1 h, 2 h): series 0 again and a new series 1 */
	db = open_store(other, -1, 0);
	put_range(db, 0, H, 2 * H);
	put_range(db, 1, H, 2 * H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_close(db);
	move_blocks(other, dir);

	db = open_store(dir, -1, 1);
	/* the open's flush merged them */
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compaction_failures, 0);
	assert_true(st.vertical_compactions >= 1);
	for (size_t i = 1; i < db->nblocks; i++)
		assert_true(pd_block_meta(db->blocks[i])->mint >=
		            pd_block_meta(db->blocks[i - 1])->maxt);
	expect_series(db, 0, 0, 6 * H);
	expect_series(db, 1, H, 2 * H);
	/* later data compacts on */
	put_range(db, 0, 6 * H, 30 * H);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compaction_failures, 0);
	expect_series(db, 0, 0, 30 * H);
	expect_series(db, 1, H, 2 * H);
	pd_tsdb_close(db);
	db = open_store(dir, -1, 1);
	expect_series(db, 0, 0, 30 * H);
	expect_series(db, 1, H, 2 * H);
	pd_tsdb_close(db);
	rmdir_all(dir);
	rmdir_all(other);
}

/* 70 blocks over one range (more than one merge takes at once) become one:
 * series 0 has a sample of its own in each, series 1 the same one in all. */
static void test_many_overlapping_blocks(void **state)
{
	(void)state;
	char *dir = tmpdir(), *other = tmpdir();
	struct pd_err err = {0};
	for (int k = 0; k < 70; k++) {
		struct pd_tsdb *db = open_store(other, -1, 0);
		if (put(db, 0, (int64_t)k * STEP / 10, &err) || put(db, 1, 0, &err))
			fail_msg("block %d: %s", k, err.msg);
		assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
		pd_tsdb_close(db);
		move_blocks(other, dir);
	}
	struct pd_tsdb *db = open_store(dir, -1, 1);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compaction_failures, 0);
	assert_int_equal(st.blocks, 1);
	assert_true(st.vertical_compactions >= 2);
	assert_int_equal(count_ts(db, 0, 0, H), 70);
	assert_int_equal(count_ts(db, 1, 0, H), 1);
	pd_tsdb_close(db);
	rmdir_all(dir);
	rmdir_all(other);
}

static void flip(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	uint8_t b;
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

/* Retention runs after a compaction that failed (here on a damaged chunk):
 * the old flush skipped it, so a compaction that kept failing kept every
 * block for ever. */
static void test_retention_after_failed_compaction(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	/* three blocks of [0, 3 h) that a retention of 20 h does not compact */
	struct pd_tsdb *db = open_store(dir, 20 * H, 1);
	put_range(db, 0, 0, 4 * H);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	assert_int_equal(db->nblocks, 3);
	/* damage the first block's value chunk */
	uint64_t *refs;
	size_t n, nl, nc;
	struct pd_lpair *l;
	struct pd_block_chunk_meta *c;
	struct pd_block *b = db->blocks[0];
	assert_int_equal(pd_block_postings(b, "job", job[0], &refs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(pd_block_series(b, refs[0], &l, &nl, &c, &nc, &err), 0);
	char seg[512];
	snprintf(seg, sizeof(seg), "%s/chunks/000001", pd_block_dir(b));
	flip(seg, (off_t)(c[0].vals_ref & 0xffffffffu) + 5);
	free(refs);
	free(l);
	free(c);
	pd_tsdb_close(db);

	/* with 60 h the blocks are due for compaction, which fails on the chunk */
	db = open_store(dir, 60 * H, 1);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compaction_failures, 1);
	assert_int_equal(st.retention_deletions, 0);
	/* 100 h on: every block is past the retention time (the damaged merge is
	 * skipped and counted; the flush succeeds) */
	put_range(db, 0, 100 * H, 100 * H + STEP);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compaction_failures, 2);
	assert_true(st.retention_deletions >= 3);
	assert_int_equal(st.blocks, 0);
	assert_int_equal(count_ts(db, 0, 0, 50 * H), -1);
	assert_int_equal(count_ts(db, 0, 0, 200 * H), 1);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 2100-01-01T00:00:00Z */
#define Y2100 4102444800000LL

/* A sample dated more than the window (10 m by default) after the clock is
 * refused with its time, the latest accepted and why, and counted; present
 * samples are still taken after it, and the earliest accepted time did not
 * move. Before, a push dated 2100 was taken, and the retention bound behind
 * it then refused every present sample. */
static void test_future_refused(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_future(dir, 0, 0);
	int64_t now = wall_ms();
	assert_int_equal(put(db, 0, now - H, &err), 0);
	assert_int_equal(put(db, 0, Y2100, &err), PD_EINVAL);
	assert_non_null(
	    strstr(err.msg, "heap{job=\"j0\"}: sample at 4102444800000 (2100-01-01T00:00:00Z) is "
	                    "out of bounds: the store accepts samples up to "));
	assert_non_null(strstr(err.msg, "as it takes none dated more than 10m after its clock"));
	/* nanoseconds for milliseconds, and an hour ahead */
	assert_int_equal(put(db, 1, now * 1000000, &err), PD_EINVAL);
	assert_int_equal(put(db, 1, now + H, &err), PD_EINVAL);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.out_of_bounds, 3);
	assert_int_equal(st.too_far_in_future, 3);
	assert_true(st.accept_from <= now - H);
	/* within the window, and the present, are taken */
	assert_int_equal(put(db, 0, now + 5 * 60 * 1000, &err), 0);
	assert_int_equal(put(db, 1, now, &err), 0);
	assert_int_equal(put(db, 2, now - 2 * H, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.out_of_bounds, 3);
	pd_tsdb_close(db);

	/* a window of 2 h takes the hour ahead; none at all takes 2100 */
	db = open_future(dir, 0, 2 * H);
	assert_int_equal(put(db, 1, now + H, &err), 0);
	assert_int_equal(put(db, 1, now + 3 * H, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "more than 2h after its clock"));
	pd_tsdb_close(db);
	db = open_future(dir, 0, -1);
	assert_int_equal(put(db, 1, Y2100, &err), 0);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A store that took a sample dated 2100 before the window existed (here with
 * the window off, and no retention, which would measure from 2100): reopened with the window, the
 * sample is kept, and present samples are still taken, as the bounds are measured from the clock
 * plus the window rather than from it: retention keeps the present blocks, and a flush persists
 * only ranges complete by the clock. */
static void test_future_sample_in_head(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	int64_t now = wall_ms(), start = now - now % H - 5 * H;
	struct pd_tsdb *db = open_future(dir, -1, -1);
	put_range(db, 0, start, now - 3 * H);
	assert_int_equal(put(db, 1, Y2100, &err), 0);
	pd_tsdb_close(db);

	db = open_future(dir, 0, 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.accept_from <= now - H);
	assert_int_equal(put(db, 0, now, &err), 0);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	/* the current range is not persisted: it still takes samples */
	pd_tsdb_stats(db, &st);
	assert_true(st.accept_from <= now);
	assert_int_equal(put(db, 0, now + 1000, &err), 0);
	assert_int_equal(put(db, 2, now, &err), 0);
	/* retention (15 d) measured from 2100 would have deleted every block */
	assert_int_equal(st.retention_deletions, 0);
	assert_int_equal(count_ts(db, 0, start, now + 1000),
	                 (now - 3 * H - start + STEP - 1) / STEP + 2);
	assert_int_equal(count_ts(db, 1, Y2100, Y2100), 1);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* As above, with the sample dated 2100 persisted into a block (a flush of the
 * whole head): at open the earliest accepted time is the end of the newest
 * block that is not past the window, not that block's. */
static void test_future_sample_in_block(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	int64_t now = wall_ms(), start = now - now % H - 5 * H;
	struct pd_tsdb *db = open_future(dir, -1, -1);
	put_range(db, 0, start, start + 2 * H);
	assert_int_equal(put(db, 1, Y2100, &err), 0);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	assert_int_equal(pd_block_meta(db->blocks[db->nblocks - 1])->maxt, Y2100 + H);
	pd_tsdb_close(db);

	db = open_future(dir, 0, 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.accept_from, start + 2 * H);
	assert_int_equal(put(db, 0, now, &err), 0);
	assert_int_equal(put(db, 2, start + 2 * H, &err), 0);
	assert_int_equal(put(db, 3, start + 2 * H - 1, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "newest block ends there"));
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_close(db);
	db = open_future(dir, 0, 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.retention_deletions, 0);
	assert_int_equal(count_ts(db, 0, start, now), 2 * H / STEP + 1);
	assert_int_equal(count_ts(db, 2, start, now), 1);
	assert_int_equal(count_ts(db, 1, Y2100, Y2100), 1);
	assert_int_equal(put(db, 0, now + 1000, &err), 0);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* With a window of 6 h, a push dated 5 h ahead is taken and present samples
 * still are after a flush: ranges are complete by the clock, not by the newest
 * sample capped at the clock plus the window, which persisted the ranges up to
 * 4.5 h ahead and refused every present sample until the clock got there. */
static void test_wide_window_push_ahead(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	int64_t now = wall_ms();
	struct pd_tsdb *db = open_future(dir, 0, 6 * H);
	assert_int_equal(put(db, 0, now - 2 * H, &err), 0);
	assert_int_equal(put(db, 0, now - 60000, &err), 0);
	assert_int_equal(put(db, 1, now + 5 * H, &err), 0);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.accept_from <= now);
	now = wall_ms();
	if (put(db, 0, now, &err))
		fail_msg("a present sample after a push 5 h ahead: %s", err.msg);
	assert_int_equal(count_ts(db, 1, now + 4 * H, now + 6 * H), 1);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A head cut whose checkpoint fails (here on a name the checkpoint cannot
 * take) leaves the blocks it wrote to time retention only: the size counts the
 * WAL, which keeps growing while cuts fail, and with the WAL alone past the
 * retention size the old flush deleted every block, the head's samples that
 * had just moved there with them. */
static void test_failed_head_cut_keeps_blocks(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	pd_tsdb_opts_init(&o);
	o.block_range_ms = H;
	o.retention_ms = -1;
	o.retention_bytes = 1;
	o.wal_sync = 1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	put_range(db, 0, 0, 4 * H);
	char p[512];
	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "%s/wal/checkpoint.%08d.tmp", dir, i);
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_not_equal(pd_tsdb_flush(db, 0, &err), 0);
	assert_non_null(strstr(err.msg, "checkpoint"));
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_cut_failures, 1);
	assert_int_equal(st.retention_deletions, 0);
	assert_int_equal(st.blocks, 3);
	expect_series(db, 0, 0, 4 * H);
	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "%s/wal/checkpoint.%08d.tmp", dir, i);
		unlink(p);
	}
	/* the cut goes through: size retention runs again */
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_true(st.retention_deletions >= 1);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A store that imported the present (blocks written without the WAL, the whole
 * head persisted) takes present samples when it is next opened with the WAL:
 * the earliest accepted time is the end of the newest block capped at the
 * clock. Before, it was the end of the imported block's range, after the clock,
 * and every scrape was refused until the clock got there. */
static void test_import_of_present_then_open(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	int64_t now = wall_ms(), t0 = now - 2 * H;
	struct pd_tsdb *db = open_store(dir, 0, 0);
	/* the last sample at now itself, so that the newest block's range holds now
	 * whatever the time of day (one at now - STEP lay in the hour before during
	 * each hour's first minutes) */
	put_range(db, 0, t0 + STEP, now + 1);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	assert_true(pd_block_meta(db->blocks[db->nblocks - 1])->maxt > now);
	pd_tsdb_close(db);
	/* a window of 2 h: the block's end, at most 1 h on, is within it */
	db = open_future(dir, 0, 2 * H);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	now = wall_ms();
	assert_true(st.accept_from <= now);
	if (put(db, 1, now, &err))
		fail_msg("a present sample after the import: %s", err.msg);
	assert_int_equal(count_ts(db, 1, now, now), 1);
	assert_int_equal(count_ts(db, 0, t0, now), 2 * H / STEP);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Out of memory while a merge of overlapping blocks keeps its new chunks'
 * bytes (here when keeping the sixth chunk's timestamps) fails the compaction
 * and leaves the blocks as they are; the next flush merges them. Before, the
 * value bytes already kept were freed as well, and again with the rest. */
static void test_merge_out_of_memory(void **state)
{
	(void)state;
	char *dir = tmpdir(), *other = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, -1, 0);
	put_range(db, 0, 0, H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_close(db);
	db = open_store(other, -1, 0);
	put_range(db, 0, 0, H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_close(db);
	move_blocks(other, dir);

	/* one sample a chunk: the merge writes 12 chunks */
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.block_range_ms = H;
	o.retention_ms = -1;
	o.wal_sync = 1;
	o.chunk_samples = 1;
	fail_grow = 1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	assert_int_equal(fail_grow, 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compaction_failures, 1);
	assert_int_equal(st.blocks, 2);
	expect_series(db, 0, 0, H);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.vertical_compactions, 1);
	expect_series(db, 0, 0, H);
	pd_tsdb_close(db);
	rmdir_all(dir);
	rmdir_all(other);
}

/* A commit refused after it created its new series (here by a flush that
 * persisted the sample's range between the append and the commit) leaves
 * them empty, and they do not count toward the series limit: before, each
 * such series took a slot until the next start. */
static void test_refused_commit_keeps_series_slots(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	pd_tsdb_opts_init(&o);
	o.block_range_ms = H;
	o.retention_ms = -1;
	o.wal_sync = 1;
	o.max_series = 2;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	put_range(db, 0, 0, 3 * H);
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	struct pd_storage_label l[2];
	size_t len;
	labels(1, l);
	uint8_t *p = value(1, 90 * 60 * 1000, &len);
	assert_int_equal(pd_tsdb_append(a, l, 2, 90 * 60 * 1000, p, len, &err), 0);
	free(p);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	assert_int_equal(pd_tsdb_commit(a, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "out of bounds"));
	/* series 2 takes the second slot */
	if (put(db, 2, 3 * H, &err))
		fail_msg("a new series after the refused commit: %s", err.msg);
	assert_int_equal(put(db, 3, 3 * H, &err), PD_ELIMIT);
	assert_non_null(strstr(err.msg, "the head holds 2 series, its limit is 2"));
	/* the empty series takes its slot once it has a sample */
	assert_int_equal(put(db, 1, 3 * H, &err), PD_ELIMIT);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Damages the first value chunk of series s in the newest block of db. */
static void damage_newest(struct pd_tsdb *db, int s)
{
	struct pd_err err = {0};
	uint64_t *refs;
	size_t n, nl, nc;
	struct pd_lpair *l;
	struct pd_block_chunk_meta *c;
	struct pd_block *b = db->blocks[db->nblocks - 1];
	assert_int_equal(pd_block_postings(b, "job", job[s], &refs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(pd_block_series(b, refs[0], &l, &nl, &c, &nc, &err), 0);
	char seg[512];
	snprintf(seg, sizeof(seg), "%s/chunks/000001", pd_block_dir(b));
	flip(seg, (off_t)(c[0].vals_ref & 0xffffffffu) + 5);
	free(refs);
	free(l);
	free(c);
}

/* Two blocks of [0, 1 h) that overlap, one with a damaged chunk, do not stop
 * compaction: their merge fails, is counted, and is skipped; another pair that
 * overlaps is merged, and level compaction goes on; flushes succeed. Before,
 * the damaged merge failed every flush and no other block was compacted. */
static void test_damaged_overlap_skipped(void **state)
{
	(void)state;
	char *dir = tmpdir(), *other = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, -1, 0);
	put_range(db, 0, 0, H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_close(db);
	/* [6 h, 10 h) an hour a block, each written alone: not compacted yet */
	for (int64_t t = 6 * H; t < 10 * H; t += H) {
		db = open_store(other, -1, 0);
		put_range(db, 0, t, t + H);
		assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
		pd_tsdb_close(db);
		move_blocks(other, dir);
	}
	db = open_store(other, -1, 0);
	put_range(db, 0, 0, H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	damage_newest(db, 0);
	pd_tsdb_close(db);
	move_blocks(other, dir);
	for (int s = 1; s <= 2; s++) {
		db = open_store(other, -1, 0);
		put_range(db, s, 3 * H, 4 * H);
		assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
		pd_tsdb_close(db);
		move_blocks(other, dir);
	}

	db = open_store(dir, -1, 1);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	/* [0, 1 h) twice stays; [3 h, 4 h) is one block, [6 h, 9 h) one */
	assert_int_equal(st.vertical_compactions, 1);
	assert_true(st.compaction_failures >= 1);
	assert_int_equal(st.blocks, 5);
	assert_int_equal(pd_block_meta(db->blocks[2])->mint, 3 * H);
	assert_int_equal(pd_block_meta(db->blocks[3])->mint, 6 * H);
	assert_int_equal(pd_block_meta(db->blocks[3])->maxt, 9 * H);
	expect_series(db, 1, 3 * H, 4 * H);
	expect_series(db, 2, 3 * H, 4 * H);
	expect_series(db, 0, 6 * H, 10 * H);
	uint64_t failed = st.compaction_failures;
	if (pd_tsdb_flush(db, 0, &err))
		fail_msg("a flush with a damaged block: %s", err.msg);
	pd_tsdb_stats(db, &st);
	assert_true(st.compaction_failures > failed);
	pd_tsdb_close(db);
	rmdir_all(dir);
	rmdir_all(other);
}

/* Size retention deleting every block leaves the earliest accepted time where
 * it was while the store is open; a restart measures it from the blocks on
 * disk, none here, and takes any time again (docs/storage.md). */
static void test_bound_after_retention_deleted_all(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	pd_tsdb_opts_init(&o);
	o.block_range_ms = H;
	o.retention_ms = -1;
	o.retention_bytes = 1;
	o.wal_sync = 1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	put_range(db, 0, 0, 4 * H);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.blocks, 0);
	assert_true(st.retention_deletions >= 1);
	assert_int_equal(st.accept_from, 3 * H);
	assert_int_equal(put(db, 1, 0, &err), PD_EINVAL);
	pd_tsdb_close(db);
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	pd_tsdb_stats(db, &st);
	assert_true(st.accept_from == INT64_MIN);
	assert_int_equal(put(db, 1, 0, &err), 0);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_before_newest_block_refused),
	    cmocka_unit_test(test_flush_between_append_and_commit),
	    cmocka_unit_test(test_incomplete_range_takes_samples),
	    cmocka_unit_test(test_past_retention_refused),
	    cmocka_unit_test(test_replay_keeps_old_samples),
	    cmocka_unit_test(test_compaction_overlapping_blocks),
	    cmocka_unit_test(test_many_overlapping_blocks),
	    cmocka_unit_test(test_retention_after_failed_compaction),
	    cmocka_unit_test(test_future_refused),
	    cmocka_unit_test(test_future_sample_in_head),
	    cmocka_unit_test(test_future_sample_in_block),
	    cmocka_unit_test(test_wide_window_push_ahead),
	    cmocka_unit_test(test_failed_head_cut_keeps_blocks),
	    cmocka_unit_test(test_import_of_present_then_open),
	    cmocka_unit_test(test_merge_out_of_memory),
	    cmocka_unit_test(test_refused_commit_keeps_series_slots),
	    cmocka_unit_test(test_damaged_overlap_skipped),
	    cmocka_unit_test(test_bound_after_retention_deleted_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
