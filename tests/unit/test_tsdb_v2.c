/* test_tsdb_v2.c: the store with columnar value chunks: series of real profiles
 * (including a target restart mid-chunk) read back field for field from the
 * head, from blocks and after a restart; a store written with v1 chunks opens,
 * serves them, and compaction rewrites them as v2 without changing a profile; a
 * profile appended with its gzip stream is logged as that stream and replays
 * the same. */
#define _GNU_SOURCE /* nftw, memmem */
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

#include "block.h"
#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "tsdb_int.h"

static const char *const files[] = {
    "goapp/heap.pb.gz", "goapp/heap-2.pb.gz", "goapp/heap-3.pb.gz", "goapp/heap-2.pb.gz",
    "goapp/heap.pb.gz", "prometheus/heap.pb.gz", /* a restart: another program */
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static uint8_t *raw[NFILES], *gzd[NFILES];
static size_t rawlen[NFILES], gzlen[NFILES];

static int setup(void **state)
{
	(void)state;
	struct pd_err err = {0};
	for (size_t i = 0; i < NFILES; i++) {
		char path[1024];
		uint8_t *gz;
		size_t n;
		snprintf(path, sizeof(path), "%s/profiles/%s", PD_TESTDATA, files[i]);
		if (pd_file_read(path, (size_t)64 << 20, &gz, &n, &err) ||
		    pd_gunzip(gz, n, (size_t)64 << 20, &raw[i], &rawlen[i], &err))
			fail_msg("%s: %s", path, err.msg);
		gzd[i] = gz;
		gzlen[i] = n;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < NFILES; i++) {
		free(raw[i]);
		free(gzd[i]);
	}
	return 0;
}

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

/* Sample k of series s: which file, at what time (ms). */
static size_t file_of(int s, size_t k) { return (k + (size_t)s) % NFILES; }
static int64_t time_of(size_t k) { return 10000 + (int64_t)k * 10000; }

static struct pd_tsdb *open_store(const char *dir, int encoding)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = 100000;
	o.retention_ms = -1;
	o.wal_sync = 1;
	o.chunk_samples = 7;
	o.value_group = 3;
	o.value_encoding = encoding;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	return db;
}

/* Samples [from, to) of 3 series, one commit each. With gzip, each profile goes
 * with its gzip stream (pd_tsdb_append_gzip), and series 1's decoded as well. */
static void append_how(struct pd_tsdb *db, size_t from, size_t to, int gzip)
{
	struct pd_err err = {0};
	for (size_t k = from; k < to; k++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int s = 0; s < 3; s++) {
			char inst[16];
			snprintf(inst, sizeof(inst), "i%d", s);
			struct pd_storage_label l[2] = {{"__name__", "heap"}, {"instance", inst}};
			size_t f = file_of(s, k);
			struct pd_pprof_profile *dec = NULL;
			if (gzip && s == 1 && pd_pprof_decode(&dec, raw[f], rawlen[f], NULL, &err))
				fail_msg("decode: %s", err.msg);
			if (gzip ? pd_tsdb_append_gzip(a, l, 2, time_of(k), raw[f], rawlen[f], dec, gzd[f],
						       gzlen[f], &err)
				 : pd_tsdb_append(a, l, 2, time_of(k), raw[f], rawlen[f], &err))
				fail_msg("append: %s", err.msg);
		}
		if (pd_tsdb_commit(a, &err))
			fail_msg("commit: %s", err.msg);
	}
}

static void append(struct pd_tsdb *db, size_t from, size_t to)
{
	append_how(db, from, to, 0);
}

/* Every sample of [0, n) reads back as the same profile. */
static void check(struct pd_tsdb *db, size_t n)
{
	struct pd_err err = {0};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(db, NULL, 0, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 3);
	for (int s = 0; s < 3; s++) {
		const struct pd_storage_series *se = &r->series[s];
		assert_int_equal(se->nts, n);
		for (size_t k = 0; k < n; k++) {
			assert_int_equal(se->ts[k], time_of(k));
			uint8_t *got;
			size_t glen;
			if (pd_tsdb_read(db, se->labels, se->nlabels, se->ts[k], &got, &glen, &err))
				fail_msg("read %d/%zu: %s", s, k, err.msg);
			struct pd_pprof_profile *a, *b;
			char why[256];
			size_t f = file_of(s, k);
			assert_int_equal(pd_pprof_decode(&a, raw[f], rawlen[f], NULL, &err), 0);
			if (pd_pprof_decode(&b, got, glen, NULL, &err))
				fail_msg("series %d sample %zu: %s", s, k, err.msg);
			if (pd_pprof_compare(a, b, why, sizeof(why)))
				fail_msg("series %d sample %zu (%s): %s", s, k, files[f], why);
			pd_pprof_destroy(a);
			pd_pprof_destroy(b);
			free(got);
		}
	}
	pd_storage_result_destroy(r);
}

/* Counts the value chunks of each encoding in the store's blocks; *maxlevel gets
 * the highest block level. */
static void count_encodings(struct pd_tsdb *db, size_t *v1, size_t *v2, int *maxlevel)
{
	struct pd_err err = {0};
	*v1 = *v2 = 0;
	*maxlevel = 0;
	for (size_t i = 0; i < db->nblocks; i++) {
		struct pd_block *b = db->blocks[i];
		if (pd_block_meta(b)->level > *maxlevel)
			*maxlevel = pd_block_meta(b)->level;
		uint64_t *refs;
		size_t n;
		assert_int_equal(pd_block_all_series(b, &refs, &n, &err), 0);
		for (size_t k = 0; k < n; k++) {
			struct pd_lpair *l;
			struct pd_block_chunk_meta *c;
			size_t nl, nc;
			assert_int_equal(pd_block_series(b, refs[k], &l, &nl, &c, &nc, &err), 0);
			for (size_t j = 0; j < nc; j++) {
				const uint8_t *p;
				size_t len;
				assert_int_equal(pd_block_chunk_bytes(b, c[j].vals_ref, &p, &len, &err), 0);
				int e = pd_chunkenc_values_encoding(p, len);
				*v1 += e == PD_CHUNKENC_VALUES_ZSTD_GROUPS;
				*v2 += e == PD_CHUNKENC_VALUES_COLUMNAR;
			}
			free(l);
			free(c);
		}
		free(refs);
	}
}

/* Real profiles through head, WAL, blocks and a restart, all v2. */
static void test_v2_store(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_test_tsdb_v2_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, 0);
	append(db, 0, 40);
	check(db, 40); /* head: open and closed chunks */
	pd_tsdb_close(db);
	db = open_store(dir, 0); /* WAL replay */
	check(db, 40);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	check(db, 40); /* blocks */
	size_t v1, v2;
	int level;
	count_encodings(db, &v1, &v2, &level);
	assert_int_equal(v1, 0);
	assert_true(v2 > 0);
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A store written with v1 chunks opens and serves them; compaction turns them
 * into v2 chunks holding the same profiles. */
static void test_v1_compacts_to_v2(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_test_tsdb_v2_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, PD_CHUNKENC_VALUES_ZSTD_GROUPS);
	append(db, 0, 20); /* [10 s, 200 s]: two block ranges */
	/* the complete range [0, 100 s) only: the later samples stay in the head,
	 * so the appends after 200 s go on in the open range */
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	size_t v1, v2;
	int level;
	count_encodings(db, &v1, &v2, &level);
	assert_true(v1 > 0);
	assert_int_equal(v2, 0);
	pd_tsdb_close(db);

	db = open_store(dir, 0);
	check(db, 20); /* v1 blocks serve as they are */
	append(db, 20, 70); /* fills the first compaction window [0, 300 s) and more */
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.compactions >= 1);
	count_encodings(db, &v1, &v2, &level);
	print_message("after compaction: %zu v1 chunks, %zu v2 chunks, top level %d\n", v1, v2,
		      level);
	assert_int_equal(v1, 0);
	assert_true(level >= 2);
	check(db, 70);
	pd_tsdb_close(db);
	db = open_store(dir, 0);
	check(db, 70);
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* How many of the corpus's gzip streams appear, byte for byte, in the WAL's files. */
static size_t gzip_streams_in_wal(const char *dir)
{
	size_t found = 0;
	for (unsigned seg = 1; seg < 100; seg++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/wal/%08u", dir, seg);
		uint8_t *d;
		size_t n;
		struct pd_err err = {0};
		if (pd_file_read(path, (size_t)256 << 20, &d, &n, &err))
			continue;
		for (size_t i = 0; i < NFILES; i++)
			if (memmem(d, n, gzd[i], gzlen[i]))
				found++;
		free(d);
	}
	return found;
}

/* pd_tsdb_append_gzip: the WAL holds the stream as it came (not compressed again),
 * a restart replays it into the same profiles, and a stream that is not gzip is
 * refused. */
static void test_gzip_in_wal(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_test_tsdb_v2_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct pd_err err = {0};
	struct pd_tsdb *db = open_store(dir, 0);
	append_how(db, 0, 12, 1);
	check(db, 12);
	pd_tsdb_close(db);
	/* every distinct stream of the corpus is in the WAL verbatim */
	assert_int_equal(gzip_streams_in_wal(dir), NFILES);
	db = open_store(dir, 0); /* WAL replay */
	check(db, 12);
	/* not gzip: refused, nothing changes */
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	struct pd_storage_label l[2] = {{"__name__", "heap"}, {"instance", "i0"}};
	assert_int_equal(pd_tsdb_append_gzip(a, l, 2, time_of(12), raw[0], rawlen[0], NULL, raw[0],
					     rawlen[0], &err),
			 PD_EINVAL);
	assert_non_null(strstr(err.msg, "gzip"));
	pd_tsdb_rollback(a);
	check(db, 12);
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v2_store),
	    cmocka_unit_test(test_v1_compacts_to_v2),
	    cmocka_unit_test(test_gzip_in_wal),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
