/* test_head_spill.c: the open chunks' frame files (dir/chunks_open/). Frames
 * read back as written, files are cut at their size and removed once no frame in
 * them is referenced (the folder with the last), an earlier run's files are removed
 * at open; an appender storing its frames there reads every profile back as the
 * sealed chunk does while holding a fraction of the heap; a failed write keeps the
 * frame in memory (counted), a file cut under a running store gives an error
 * naming it; and a store writes its open chunks' frames there and reads them. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
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

#include "head_spill.h"
#include "profd/chunkenc.h"
#include "profd/tsdb.h"

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_spill_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rm_rf(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static int exists(const char *dir, const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0;
}

static size_t count_files(const char *dir)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/" HS_DIR, dir);
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

static uint8_t *load(const char *rel, size_t *len)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", PD_TESTDATA, rel);
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* Frames read back as written; files are cut at their size, start with the
 * header, and go (the folder with the last) once nothing in them is referenced. */
static void test_files(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct hs_store *s;
	struct pd_err err = {0};
	assert_int_equal(hs_open(&s, dir, 100, &err), 0);
	assert_false(exists(dir, HS_DIR)); /* made with the first frame */
	const struct pd_chunkenc_frame_store *fs = hs_frame_store(s);
	enum { N = 12 };
	uint8_t frame[N][40];
	uint64_t ref[N];
	for (size_t i = 0; i < N; i++) {
		memset(frame[i], (int)('a' + i), sizeof(frame[i]));
		assert_int_equal(fs->put(fs->ctx, frame[i], sizeof(frame[i]), &ref[i]), 0);
	}
	/* 8 header bytes and at most 100 a file: two frames each */
	assert_int_equal(count_files(dir), N / 2);
	uint64_t files, bytes, live;
	hs_stats(s, &files, &bytes, &live);
	assert_int_equal(files, N / 2);
	assert_int_equal(bytes, N / 2 * 8 + N * 40);
	assert_int_equal(live, N * 40);
	for (size_t i = 0; i < N; i++) {
		uint8_t got[40];
		assert_int_equal(fs->get(fs->ctx, ref[i], got, sizeof(got), &err), 0);
		assert_memory_equal(got, frame[i], sizeof(got));
	}
	/* the header */
	char p[512];
	snprintf(p, sizeof(p), "%s/" HS_DIR "/000001", dir);
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	uint8_t h[8];
	assert_int_equal(fread(h, 1, 8, f), 8);
	fclose(f);
	static const uint8_t want[8] = {'P', 'D', 'H', 'O', 1, 0, 0, 0};
	assert_memory_equal(h, want, 8);
	/* one frame of a file dropped: it stays; both: it goes */
	fs->drop(fs->ctx, ref[0], 40);
	assert_true(exists(dir, HS_DIR "/000001"));
	fs->drop(fs->ctx, ref[1], 40);
	assert_false(exists(dir, HS_DIR "/000001"));
	/* a file in the middle */
	fs->drop(fs->ctx, ref[4], 40);
	fs->drop(fs->ctx, ref[5], 40);
	assert_false(exists(dir, HS_DIR "/000003"));
	assert_true(exists(dir, HS_DIR "/000002"));
	/* what is left still reads */
	for (size_t i = 2; i < N; i++) {
		if (i == 4 || i == 5)
			continue;
		uint8_t got[40];
		assert_int_equal(fs->get(fs->ctx, ref[i], got, sizeof(got), &err), 0);
		assert_memory_equal(got, frame[i], sizeof(got));
	}
	/* the newest file stays while it is written to, even empty */
	for (size_t i = 2; i < N; i++)
		if (i != 4 && i != 5)
			fs->drop(fs->ctx, ref[i], 40);
	assert_int_equal(count_files(dir), 1);
	hs_stats(s, &files, &bytes, &live);
	assert_int_equal(live, 0);
	/* numbers go on after the removed ones */
	uint64_t r;
	assert_int_equal(fs->put(fs->ctx, frame[0], 40, &r), 0);
	assert_int_equal(fs->put(fs->ctx, frame[1], 40, &r), 0);
	assert_int_equal(fs->put(fs->ctx, frame[2], 40, &r), 0);
	assert_true(exists(dir, HS_DIR "/000007"));
	assert_true(exists(dir, HS_DIR "/000008"));
	hs_close(s);
	assert_false(exists(dir, HS_DIR));
	rm_rf(dir);
	free(dir);
}

/* An earlier run's files are removed at open. */
static void test_open_clears(void **state)
{
	(void)state;
	char *dir = tmpdir();
	char p[512];
	snprintf(p, sizeof(p), "%s/" HS_DIR, dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/" HS_DIR "/000042", dir);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	fputs("left by a killed profd", f);
	fclose(f);
	struct hs_store *s;
	struct pd_err err = {0};
	assert_int_equal(hs_open(&s, dir, 0, &err), 0);
	assert_false(exists(dir, HS_DIR));
	hs_close(s);
	rm_rf(dir);
	free(dir);
}

struct profiles {
	uint8_t *raw[6];
	size_t len[6];
};

static void load_profiles(struct profiles *p)
{
	char rel[64];
	for (size_t i = 0; i < 6; i++) {
		snprintf(rel, sizeof(rel), "profiles/prometheus-series/heap/%zu.pb.gz", i + 1);
		p->raw[i] = load(rel, &p->len[i]);
	}
}

static void free_profiles(struct profiles *p)
{
	for (size_t i = 0; i < 6; i++)
		free(p->raw[i]);
}

/* n profiles appended to c at times 1000 * i */
static void fill(struct pd_chunkenc_values *c, const struct profiles *p, size_t n)
{
	struct pd_err err = {0};
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pd_chunkenc_values_append_at(c, 1000 * (int64_t)i, p->raw[i % 6],
		                                              p->len[i % 6], NULL, &err),
		                 0);
}

/* Every profile of c reads back as from its sealed chunk. */
static void expect_as_sealed(const struct pd_chunkenc_values *c, size_t n)
{
	struct pd_err err = {0};
	uint8_t *sealed = NULL;
	size_t slen = 0;
	assert_int_equal(pd_chunkenc_values_seal(c, &sealed, &slen, &err), 0);
	for (size_t i = 0; i < n; i++) {
		uint8_t *got = NULL, *want = NULL;
		size_t glen = 0, wlen = 0;
		assert_int_equal(pd_chunkenc_values_get_at(c, i, 1000 * (int64_t)i, &got, &glen, &err),
		                 0);
		assert_int_equal(pd_chunkenc_values_read_at(sealed, slen, i, 1000 * (int64_t)i,
		                                            1 << 26, &want, &wlen, &err),
		                 0);
		assert_int_equal(glen, wlen);
		assert_memory_equal(got, want, glen);
		free(got);
		free(want);
	}
	free(sealed);
}

/* An appender with its frames in the files reads back what one in memory does,
 * and holds a fraction of its heap; destroying it drops its frames. */
static void test_appender(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct profiles p;
	load_profiles(&p);
	struct hs_store *s;
	struct pd_err err = {0};
	assert_int_equal(hs_open(&s, dir, 0, &err), 0);
	struct pd_chunkenc_symbols *sym = pd_chunkenc_symbols_create();
	enum { N = 45 };
	struct pd_chunkenc_values *mem = pd_chunkenc_values_create_shared(sym, 0, 0);
	struct pd_chunkenc_values *st = pd_chunkenc_values_create_stored(sym, hs_frame_store(s), 0, 0);
	fill(mem, &p, N);
	fill(st, &p, N);
	size_t mm = pd_chunkenc_values_memory(mem), ms = pd_chunkenc_values_memory(st);
	uint64_t files, bytes, live;
	hs_stats(s, &files, &bytes, &live);
	print_message("45 heap profiles: frames in memory %zu bytes, in the files %zu bytes "
	              "(%llu bytes in %llu files)\n",
	              mm, ms, (unsigned long long)live, (unsigned long long)files);
	assert_true(live > 0);
	assert_true(ms * 3 < mm);
	/* the frames went to the files: what memory saved, the files hold */
	assert_true(live + ms >= mm / 2);
	expect_as_sealed(st, N);
	/* the same bytes, sealed, as the appender in memory makes */
	uint8_t *a = NULL, *b = NULL;
	size_t al = 0, bl = 0;
	assert_int_equal(pd_chunkenc_values_seal(mem, &a, &al, &err), 0);
	assert_int_equal(pd_chunkenc_values_seal(st, &b, &bl, &err), 0);
	assert_int_equal(al, bl);
	assert_memory_equal(a, b, al);
	free(a);
	free(b);
	pd_chunkenc_values_destroy(st);
	hs_stats(s, &files, &bytes, &live);
	assert_int_equal(live, 0);
	pd_chunkenc_values_destroy(mem);
	pd_chunkenc_symbols_unref(sym);
	hs_close(s);
	free_profiles(&p);
	rm_rf(dir);
	free(dir);
}

/* A frame whose write fails stays in memory (counted) and reads back; a file cut
 * under a running store makes reads fail naming it. */
static void test_failures(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct profiles p;
	load_profiles(&p);
	struct hs_store *s;
	struct pd_err err = {0};
	/* a file a frame: each frame needs a new file */
	assert_int_equal(hs_open(&s, dir, 1, &err), 0);
	struct pd_chunkenc_symbols *sym = pd_chunkenc_symbols_create();
	struct pd_chunkenc_values *c = pd_chunkenc_values_create_stored(sym, hs_frame_store(s), 0, 0);
	fill(c, &p, 6);
	assert_int_equal(hs_write_failures(s), 0);
	/* a directory where the next file's name goes: opening it for writing
	 * fails, so does every write that needs a new file */
	char path[512];
	snprintf(path, sizeof(path), "%s/" HS_DIR "/000004", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	struct pd_chunkenc_values *d = pd_chunkenc_values_create_stored(sym, hs_frame_store(s), 0, 0);
	fill(d, &p, 4);
	assert_true(hs_write_failures(s) >= 1);
	expect_as_sealed(d, 4);
	pd_chunkenc_values_destroy(d);
	rmdir(path);
	/* the first file cut short: its frame no longer reads */
	snprintf(path, sizeof(path), "%s/" HS_DIR "/000001", dir);
	assert_int_equal(truncate(path, 10), 0);
	uint8_t *got = NULL;
	size_t glen = 0;
	assert_int_not_equal(pd_chunkenc_values_get_at(c, 0, 0, &got, &glen, &err), 0);
	assert_non_null(strstr(err.msg, HS_DIR "/000001"));
	assert_non_null(strstr(err.msg, "shorter"));
	pd_chunkenc_values_destroy(c);
	pd_chunkenc_symbols_unref(sym);
	hs_close(s);
	free_profiles(&p);
	rm_rf(dir);
	free(dir);
}

/* A store puts its open chunks' frames in chunks_open/, reads them, counts them,
 * and removes the folder at close. */
static void test_store(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct profiles p;
	load_profiles(&p);
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.max_future_ms = -1;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	enum { NS = 5, N = 17 };
	for (size_t i = 0; i < N; i++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (size_t k = 0; k < NS; k++) {
			char inst[16];
			snprintf(inst, sizeof(inst), "i%zu", k);
			struct pd_storage_label l[2] = {{"__name__", "heap"}, {"instance", inst}};
			assert_int_equal(pd_tsdb_append(a, l, 2, 1000000 + 1000 * (int64_t)i,
			                                p.raw[(i + k) % 6], p.len[(i + k) % 6], &err),
			                 0);
		}
		assert_int_equal(pd_tsdb_commit(a, &err), 0);
	}
	/* every profile reads back through the store */
	for (size_t k = 0; k < NS; k++) {
		char inst[16];
		snprintf(inst, sizeof(inst), "i%zu", k);
		struct pd_storage_label l[2] = {{"__name__", "heap"}, {"instance", inst}};
		for (size_t i = 0; i < N; i++) {
			uint8_t *got = NULL;
			size_t gl = 0;
			assert_int_equal(pd_tsdb_read(db, l, 2, 1000000 + 1000 * (int64_t)i, &got, &gl, &err), 0);
			assert_true(gl > 0);
			free(got);
		}
	}
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(exists(dir, HS_DIR));
	assert_true(st.head_open_frame_files >= 1);
	assert_true(st.head_open_frame_live_bytes > 0);
	assert_true(st.head_open_frame_bytes >= st.head_open_frame_live_bytes);
	pd_tsdb_close(db);
	assert_false(exists(dir, HS_DIR));
	/* reopened: the WAL rebuilds the open chunks, their frames in new files */
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_true(st.head_open_frame_live_bytes > 0);
	pd_tsdb_close(db);
	free_profiles(&p);
	rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_files),    cmocka_unit_test(test_open_clears),
	    cmocka_unit_test(test_appender), cmocka_unit_test(test_failures),
	    cmocka_unit_test(test_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
