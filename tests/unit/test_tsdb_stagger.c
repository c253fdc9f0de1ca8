/* test_tsdb_stagger.c: series scraped together seal their chunks on different
 * scrapes. A series' first chunk in a block range holds chunk_samples minus up to
 * chunk_stagger samples (by its label hash), its later chunks of the range
 * chunk_samples; the same cuts come back after a restart (WAL replay), every
 * sample reads back, and a stagger of half the chunk or more is not used. */
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

#include <cmocka.h>

#include "profd/tsdb.h"
#include "tsdb_int.h"

#define NSERIES 40
#define STEP 1000 /* ms between samples */

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static const uint8_t body[] = "not a profile, kept as bytes";

static struct pd_tsdb *open_db(const char *dir, unsigned stagger)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	assert_int_equal(o.chunk_samples, 120);
	assert_int_equal(o.chunk_stagger, 30);
	if (stagger != 30)
		o.chunk_stagger = stagger;
	o.block_range_ms = 1000LL * STEP; /* 1,000 samples a range */
	o.retention_ms = -1;
	o.max_future_ms = 0;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	return db;
}

static void pod_name(char *buf, size_t n, int i)
{
	snprintf(buf, n, "pod-%02d", i);
}

/* Every series gets a sample at each t0 + k * STEP, k in [from, to). */
static void scrape(struct pd_tsdb *db, int64_t t0, int from, int to)
{
	struct pd_err err = {0};
	for (int k = from; k < to; k++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		assert_non_null(a);
		for (int i = 0; i < NSERIES; i++) {
			char pod[16];
			pod_name(pod, sizeof(pod), i);
			struct pd_storage_label l[] = {{"__name__", "heap"}, {"pod", pod}};
			if (pd_tsdb_append(a, l, 2, t0 + (int64_t)k * STEP, body, sizeof(body), &err))
				fail_msg("append: %s", err.msg);
		}
		if (pd_tsdb_commit(a, &err))
			fail_msg("commit: %s", err.msg);
	}
}

static struct head_series *series(struct pd_tsdb *db, int i)
{
	char pod[16];
	pod_name(pod, sizeof(pod), i);
	struct pd_lpair l[] = {{"__name__", "heap"}, {"pod", pod}};
	struct head_series *s = head_get(&db->head, l, 2, labels_hash(l, 2));
	assert_non_null(s);
	return s;
}

/* The samples of each of s's chunks, sealed then open, into n[] (at most max). */
static size_t chunk_sizes(struct head_series *s, uint64_t *n, size_t max)
{
	size_t k = 0;
	for (size_t c = 0; c < s->nchunks && k < max; c++)
		n[k++] = s->chunks[c].count;
	if (s->open_ts.count && k < max)
		n[k++] = s->open_ts.count;
	return k;
}

static void test_first_chunks_staggered(void **state)
{
	(void)state;
	char *dir = strdup("/tmp/pd_test_tsdb_stagger_XXXXXX");
	assert_non_null(mkdtemp(dir));
	struct pd_tsdb *db = open_db(dir, 30);
	const int64_t t0 = 1000LL * STEP * 5; /* a block range's start */
	/* 300 scrapes: in each series a first chunk of 90-120 samples, then full ones */
	scrape(db, t0, 0, 300);
	uint64_t first[NSERIES];
	int distinct = 0;
	for (int i = 0; i < NSERIES; i++) {
		struct head_series *s = series(db, i);
		uint64_t n[8];
		size_t k = chunk_sizes(s, n, 8);
		assert_int_equal(k, 3);
		first[i] = n[0];
		assert_true(n[0] >= 90 && n[0] <= 120);
		assert_int_equal(n[0], 120 - s->hash % 31);
		assert_int_equal(n[1], 120);
		assert_int_equal(n[0] + n[1] + n[2], 300);
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= first[j] == first[i];
		distinct += !seen;
	}
	/* forty series do not seal on one scrape: their first chunks end apart */
	assert_true(distinct >= 15);
	/* the next block range: each series' first chunk there is staggered the same way */
	scrape(db, t0, 1000, 1130);
	for (int i = 0; i < NSERIES; i++) {
		struct head_series *s = series(db, i);
		uint64_t n[16];
		size_t k = chunk_sizes(s, n, 16);
		assert_true(k >= 2);
		uint64_t want = 120 - s->hash % 31;
		assert_int_equal(n[k - 1], 130 > want ? 130 - want : 130);
		assert_int_equal(n[k - 2], want);
	}
	/* a restart replays the WAL into the same chunks of the head's range (the
	 * range before may have gone to a block), and every sample reads back */
	uint64_t before[NSERIES][2];
	for (int i = 0; i < NSERIES; i++) {
		uint64_t n[16];
		size_t k = chunk_sizes(series(db, i), n, 16);
		before[i][0] = n[k - 2];
		before[i][1] = n[k - 1];
	}
	pd_tsdb_close(db);
	db = open_db(dir, 30);
	struct pd_err err = {0};
	for (int i = 0; i < NSERIES; i++) {
		uint64_t n[16];
		size_t k = chunk_sizes(series(db, i), n, 16);
		assert_true(k >= 2);
		assert_int_equal(n[k - 2], before[i][0]);
		assert_int_equal(n[k - 1], before[i][1]);
		char pod[16];
		pod_name(pod, sizeof(pod), i);
		struct pd_storage_label l[] = {{"__name__", "heap"}, {"pod", pod}};
		for (int j = 0; j < 1130; j += 7) {
			if (j >= 300 && j < 1000)
				continue;
			uint8_t *got = NULL;
			size_t len = 0;
			if (pd_tsdb_read(db, l, 2, t0 + (int64_t)j * STEP, &got, &len, &err))
				fail_msg("read %s at %d: %s", pod, j, err.msg);
			assert_int_equal(len, sizeof(body));
			free(got);
		}
	}
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static void test_large_stagger_unused(void **state)
{
	(void)state;
	char *dir = strdup("/tmp/pd_test_tsdb_stagger_XXXXXX");
	assert_non_null(mkdtemp(dir));
	/* 60 is half of 120: every chunk is a full one; 0 turns it off */
	for (unsigned stagger = 0; stagger <= 60; stagger += 60) {
		struct pd_tsdb *db = open_db(dir, stagger);
		const int64_t t0 = 1000LL * STEP * (stagger ? 9 : 7);
		scrape(db, t0, 0, 240);
		for (int i = 0; i < NSERIES; i++) {
			uint64_t n[4];
			size_t k = chunk_sizes(series(db, i), n, 4);
			assert_int_equal(k, 2);
			assert_int_equal(n[0], 120);
			assert_int_equal(n[1], 120);
		}
		pd_tsdb_close(db);
		nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
		assert_int_equal(mkdir(dir, 0700), 0);
	}
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_chunks_staggered),
	    cmocka_unit_test(test_large_stagger_unused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
