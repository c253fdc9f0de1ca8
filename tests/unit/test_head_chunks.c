/* test_head_chunks.c: the head chunk files (dir/chunks_head/). Sealed chunks are
 * written there and read through the mapping; a restart takes them back without
 * encoding their samples again; head truncation removes files left without
 * chunks; a flipped byte, a cut file and a missing file lose only the chunks in
 * them, which the WAL re-builds; and a small file's bytes equal the golden file
 * testdata/tsdb/head_chunks/000001 (`test_head_chunks --regenerate FILE`
 * writes it). */
#define _GNU_SOURCE /* nftw */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "head_chunks.h"
#include "profd/tsdb.h"
#include "tsdb_int.h"

#define H (3600LL * 1000)
#define STEP (10LL * 1000)
#define NSERIES 3
#define GOLDEN PD_TESTDATA "/tsdb/head_chunks/000001"

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_hchunks_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

static char *hc_file(const char *dir, unsigned n)
{
	char *p = malloc(strlen(dir) + 32);
	sprintf(p, "%s/chunks_head/%06u", dir, n);
	return p;
}

static size_t nfiles(const char *dir)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/chunks_head", dir);
	DIR *d = opendir(p);
	size_t n = 0;
	struct dirent *e;
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Any bytes do: the store keeps them as they are. */
static uint8_t *value(int s, int64_t t, size_t *len)
{
	*len = 2000;
	uint8_t *p = malloc(*len);
	for (size_t i = 0; i < *len; i++)
		p[i] = (uint8_t)(i * 7 + (uint64_t)s * 13 + (uint64_t)(t / STEP) * (i % 5));
	p[0] = 0x0a;
	return p;
}

static char job[NSERIES][16];
static void labels(int s, struct pd_storage_label l[2])
{
	snprintf(job[s], sizeof(job[s]), "j%d", s);
	l[0] = (struct pd_storage_label){"__name__", "heap"};
	l[1] = (struct pd_storage_label){"job", job[s]};
}

static struct pd_tsdb *open_store(const char *dir, size_t file_size)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = 2 * H;
	o.chunk_samples = 10;
	o.wal_sync = 1;
	o.max_future_ms = -1;
	o.head_chunks_file_size = file_size;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return db;
}

static void append(struct pd_tsdb *db, int64_t from, int64_t to)
{
	struct pd_err err = {0};
	for (int64_t t = from; t < to; t += STEP) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int s = 0; s < NSERIES; s++) {
			struct pd_storage_label l[2];
			size_t len;
			labels(s, l);
			uint8_t *p = value(s, t, &len);
			if (pd_tsdb_append(a, l, 2, t, p, len, &err))
				fail_msg("append: %s", err.msg);
			free(p);
		}
		if (pd_tsdb_commit(a, &err))
			fail_msg("commit at %lld: %s", (long long)t, err.msg);
	}
}

/* Every series has every sample of [from, to), each reads back. */
static void expect_all(struct pd_tsdb *db, int64_t from, int64_t to)
{
	struct pd_err err = {0};
	for (int s = 0; s < NSERIES; s++) {
		struct pd_storage_matcher m = {"job", pd_storage_match_equal, job[s]};
		struct pd_storage_result *r;
		struct pd_storage_label l[2];
		labels(s, l);
		if (pd_tsdb_select(db, &m, 1, from, to - 1, 0, &r, &err))
			fail_msg("select: %s", err.msg);
		assert_int_equal(r->nseries, 1);
		assert_int_equal(r->series[0].nts, (to - from) / STEP);
		pd_storage_result_destroy(r);
		for (int64_t t = from; t < to; t += STEP) {
			uint8_t *got, *want;
			size_t gl, wl;
			if (pd_tsdb_read(db, l, 2, t, &got, &gl, &err))
				fail_msg("read %d at %lld: %s", s, (long long)t, err.msg);
			want = value(s, t, &wl);
			assert_int_equal(gl, wl);
			assert_memory_equal(got, want, wl);
			free(got);
			free(want);
		}
	}
}

static struct pd_storage_stats stats(struct pd_tsdb *db)
{
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	return st;
}

/* 25 samples a series in chunks of 10: two sealed chunks each in the files
 * (mapped, not on the heap), the third open; all read back. */
static void test_write_and_map(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_store(dir, 0);
	append(db, 0, 25 * STEP);
	struct pd_storage_stats st = stats(db);
	assert_int_equal(st.head_chunks_mapped, 2 * NSERIES);
	assert_int_equal(st.head_chunk_files, 1);
	assert_true(st.head_chunk_bytes > 2 * NSERIES * 10 * 100);
	assert_int_equal(st.head_chunk_write_failures, 0);
	/* every closed chunk points into a file's mapping */
	struct head *h = &db->head;
	for (size_t i = 0; i < h->nseries; i++) {
		assert_int_equal(h->series[i]->nchunks, 2);
		for (size_t k = 0; k < 2; k++)
			assert_non_null(h->series[i]->chunks[k].file);
	}
	expect_all(db, 0, 25 * STEP);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A restart takes the sealed chunks from the files (the same chunks, mapped)
 * and re-builds only the open ones from the WAL; nothing is skipped. */
static void test_replay(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_store(dir, 0);
	append(db, 0, 25 * STEP);
	pd_tsdb_close(db);
	db = open_store(dir, 0);
	struct pd_storage_stats st = stats(db);
	assert_int_equal(st.head_chunks_mapped, 2 * NSERIES);
	assert_int_equal(st.head_chunk_files_damaged, 0);
	assert_int_equal(st.wal_replay_skipped, 0);
	assert_int_equal(st.head_samples, 25 * NSERIES);
	/* the chunks came back as they were: files 1 (before) and no new chunk
	 * written by the replay */
	assert_int_equal(st.head_chunk_files, 1);
	expect_all(db, 0, 25 * STEP);
	/* appends go on after the mapped chunks */
	append(db, 25 * STEP, 40 * STEP);
	expect_all(db, 0, 40 * STEP);
	pd_tsdb_close(db);
	db = open_store(dir, 0);
	expect_all(db, 0, 40 * STEP);
	assert_int_equal(stats(db).head_chunks_mapped, 3 * NSERIES);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Small files: one chunk each. Persisting the head as a block drops its chunks
 * and the files that held only them; a restart after it does not take them
 * back (the WAL was checkpointed) and the blocks serve them. */
static void test_truncate(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_store(dir, 1);
	struct pd_err err = {0};
	append(db, 0, 20 * STEP);
	append(db, 4 * H, 4 * H + 20 * STEP);
	size_t before = nfiles(dir);
	assert_int_equal(before, stats(db).head_chunk_files);
	assert_true(before >= 3 * NSERIES);
	/* everything goes to blocks: the chunks and their files go */
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	struct pd_storage_stats st = stats(db);
	assert_int_equal(st.head_chunks_mapped, 0);
	assert_true(st.head_chunk_files <= 1);
	assert_int_equal(nfiles(dir), st.head_chunk_files);
	expect_all(db, 0, 20 * STEP);
	pd_tsdb_close(db);
	db = open_store(dir, 1);
	st = stats(db);
	assert_int_equal(st.head_chunks_mapped, 0);
	assert_int_equal(st.head_samples, 0);
	expect_all(db, 0, 20 * STEP);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Damage in the files: a flipped byte, a cut file, a missing file. Each is
 * found at open, noted, and costs only its chunks, which the WAL re-builds:
 * every sample reads back. */
static void damage_case(int how)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_store(dir, 1); /* one chunk a file */
	append(db, 0, 35 * STEP);
	size_t files = stats(db).head_chunk_files;
	assert_int_equal(files, 3 * NSERIES);
	pd_tsdb_close(db);
	char *p = hc_file(dir, 2);
	if (how == 0) {
		int fd = open(p, O_RDWR);
		uint8_t b;
		assert_int_equal(pread(fd, &b, 1, 200), 1);
		b ^= 0x10;
		assert_int_equal(pwrite(fd, &b, 1, 200), 1);
		close(fd);
	} else if (how == 1) {
		assert_int_equal(truncate(p, 100), 0);
	} else {
		assert_int_equal(unlink(p), 0);
	}
	free(p);
	db = open_store(dir, 1);
	struct pd_storage_stats st = stats(db);
	assert_int_equal(st.head_chunk_files_damaged, 1);
	assert_non_null(strstr(st.damage, "head chunk files"));
	assert_non_null(strstr(st.damage, "000002"));
	/* one chunk was lost to the damage and re-built from the WAL */
	assert_int_equal(st.head_chunks_mapped, 3 * NSERIES - 1 + 1);
	assert_int_equal(st.head_samples, 35 * NSERIES);
	assert_int_equal(st.wal_replay_skipped, 0);
	expect_all(db, 0, 35 * STEP);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

static void test_damage_flipped_byte(void **state)
{
	(void)state;
	damage_case(0);
}

static void test_damage_cut_file(void **state)
{
	(void)state;
	damage_case(1);
}

static void test_damage_missing_file(void **state)
{
	(void)state;
	damage_case(2);
}

/* kill -9 of a process that is writing chunks (one a file, so files are cut
 * all the time) loses no acknowledged commit: the child reports each commit once
 * pd_tsdb_commit returned, the parent kills it after 60 and checks that the
 * reopened store has every reported sample. */
static void test_kill9(void **state)
{
	(void)state;
	char *dir = tmpdir();
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		struct pd_tsdb *db = open_store(dir, 1);
		for (int64_t k = 0;; k++) {
			append(db, k * STEP, (k + 1) * STEP);
			if (write(fds[1], &k, sizeof(k)) != (ssize_t)sizeof(k))
				_exit(1);
		}
	}
	close(fds[1]);
	int64_t k, acked = -1;
	while (read(fds[0], &k, sizeof(k)) == (ssize_t)sizeof(k)) {
		acked = k;
		if (k == 60)
			kill(pid, SIGKILL);
	}
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_true(acked >= 60);
	struct pd_tsdb *db = open_store(dir, 1);
	assert_true(stats(db).head_chunks_mapped >= 5 * NSERIES);
	/* every acknowledged commit is there; one in flight may be too */
	struct pd_storage_stats st = stats(db);
	assert_true(st.head_samples >= (uint64_t)(acked + 1) * NSERIES);
	expect_all(db, 0, (acked + 1) * STEP);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* The golden file: two chunks of two series with fixed bytes. */
static void write_golden(const char *dir)
{
	struct hc_mapper *m;
	struct pd_err err = {0};
	struct hc_file *f;
	const uint8_t *t, *v;
	static const uint8_t ts1[] = {0x00, 0x02, 0x80, 0xa0, 0x1f, 0x05};
	static const uint8_t vals1[] = {0x04, 'p', 'r', 'o', 'f', 'i', 'l', 'e'};
	static const uint8_t ts2[] = {0x00, 0x01, 0x90, 0x4e};
	static const uint8_t vals2[] = {0x05, 0x00, 0x01};
	assert_int_equal(hcm_open(&m, dir, 0, &err), 0);
	assert_int_equal(hcm_write(m, 1, 1700000000000, 1700000010000, 2, ts1, sizeof(ts1), vals1,
	                           sizeof(vals1), &f, &t, &v, &err),
	                 0);
	assert_memory_equal(t, ts1, sizeof(ts1));
	assert_memory_equal(v, vals1, sizeof(vals1));
	assert_int_equal(hcm_write(m, 7, -20000, -20000, 1, ts2, sizeof(ts2), vals2, sizeof(vals2),
	                           &f, &t, &v, &err),
	                 0);
	assert_int_equal(hcm_sync(m, &err), 0);
	hcm_release(f);
	hcm_release(f);
	hcm_close(m);
}

static uint8_t *slurp(const char *p, size_t *n)
{
	FILE *f = fopen(p, "rb");
	if (!f)
		fail_msg("%s: cannot open", p);
	uint8_t *b = malloc(1 << 16);
	*n = fread(b, 1, 1 << 16, f);
	fclose(f);
	return b;
}

static void test_golden(void **state)
{
	(void)state;
	char *dir = tmpdir();
	write_golden(dir);
	char *p = hc_file(dir, 1);
	size_t gl, wl;
	uint8_t *got = slurp(p, &wl), *want = slurp(GOLDEN, &gl);
	assert_int_equal(wl, gl);
	assert_memory_equal(got, want, gl);
	free(got);
	free(want);
	free(p);
	/* and the golden file reads back */
	struct hc_mapper *m;
	struct hc_loaded *c;
	size_t n;
	struct hc_damage d;
	struct pd_err err = {0};
	assert_int_equal(hcm_open(&m, dir, 0, &err), 0);
	assert_int_equal(hcm_load(m, 1, &c, &n, &d, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(d.files, 0);
	assert_int_equal(c[0].ref, 1);
	assert_int_equal(c[0].mint, 1700000000000);
	assert_int_equal(c[0].maxt, 1700000010000);
	assert_int_equal(c[0].count, 2);
	assert_int_equal(c[1].ref, 7);
	assert_int_equal(c[1].mint, -20000);
	assert_int_equal(c[1].vals_len, 3);
	for (size_t i = 0; i < n; i++)
		hcm_release(c[i].file);
	free(c);
	hcm_close(m);
	rmdir_all(dir);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--regenerate") == 0) {
		char *dir = tmpdir();
		write_golden(dir);
		char *p = hc_file(dir, 1);
		size_t n;
		uint8_t *b = slurp(p, &n);
		FILE *f = fopen(argv[2], "wb");
		if (!f || fwrite(b, 1, n, f) != n || fclose(f))
			return 1;
		free(b);
		free(p);
		rmdir_all(dir);
		return 0;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_and_map),   cmocka_unit_test(test_replay),
	    cmocka_unit_test(test_truncate),        cmocka_unit_test(test_damage_flipped_byte),
	    cmocka_unit_test(test_damage_cut_file), cmocka_unit_test(test_damage_missing_file),
	    cmocka_unit_test(test_golden),          cmocka_unit_test(test_kill9),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
