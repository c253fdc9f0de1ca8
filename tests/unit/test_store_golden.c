/* test_store_golden.c: the golden store of on-disk format version 1. A store
 * written by an earlier profd is kept in testdata/tsdb/v1/ (two blocks, one of
 * them compacted, and a WAL with a checkpoint and segments); this test copies it
 * to a temporary directory, opens it read-only and read-write, and checks that
 * it still reads back exactly: the blocks, every series with its labels, every
 * timestamp, and every profile against the size and XXH64 recorded in
 * testdata/tsdb/v1/EXPECTED. So a change of the code that can no longer open an
 * old store fails here. The schedule below is the golden data; it must not
 * change without a new testdata/tsdb/vN/.
 *
 * `test_store_golden --regenerate DIR` writes such a store into DIR (with the
 * current code), plus its EXPECTED; testdata/tsdb/make-v1.sh runs it. */
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

#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "profd/util.h"

#define GOLDEN_DIR PD_TESTDATA "/tsdb/v1"

/* ---- the golden data --------------------------------------------------------- */

/* 2023-11-22T00:00:00Z, a multiple of every compaction window (6h .. 486h), so
 * that the block layout below does not depend on where windows fall. */
#define T0 1700611200000ll
#define MIN (60 * 1000ll)
#define HOUR (60 * MIN)
/* Samples before T0 + 9h30m are appended and then the head is flushed (blocks
 * for [T0, T0+8h), the first three compacted); later ones stay in the WAL. */
#define PHASE_B (T0 + 9 * HOUR + 30 * MIN)

struct gseries {
	const char *labels[11];   /* name, value, ..., NULL; sorted by name */
	const char *profiles[2];  /* under testdata/profiles/, used in turn */
	int64_t start, step, end; /* samples at T0 + start + k*step + jitter, before T0 + end */
};

static const struct gseries golden[] = {
    {{"__name__", "block", "instance", "localhost:9090", "job", "prometheus", "path",
      "/api/v1/query?q=\"up\"", "zone", "eu-w\xc3\xa9st\\1", NULL},
     {"prometheus/block.pb.gz", NULL},
     2 * HOUR + 17 * MIN,
     4 * HOUR,
     10 * HOUR},
    {{"__name__", "goroutine", "instance", "goapp:6060", "job", "goapp", NULL},
     {"goapp/goroutine.pb.gz", NULL},
     1 * MIN,
     30 * MIN,
     10 * HOUR},
    {{"__name__", "goroutine", "instance", "localhost:9090", "job", "prometheus", NULL},
     {"prometheus/goroutine.pb.gz", NULL},
     9 * HOUR + 35 * MIN,
     10 * MIN,
     10 * HOUR},
    {{"__name__", "heap", "instance", "goapp:6060", "job", "goapp", NULL},
     {"goapp/heap.pb.gz", "goapp/heap-2.pb.gz"},
     5 * MIN,
     2 * HOUR,
     10 * HOUR},
    {{"__name__", "mutex", "instance", "goapp:6060", "job", "goapp", NULL},
     {"goapp/mutex.pb.gz", NULL},
     3 * MIN,
     45 * MIN,
     6 * HOUR},
    {{"__name__", "threadcreate", "instance", "localhost:9090", "job", "prometheus", NULL},
     {"prometheus/threadcreate.pb.gz", NULL},
     0,
     20 * MIN,
     10 * HOUR},
};
#define NSERIES (sizeof(golden) / sizeof(golden[0]))

/* The totals the schedule gives; checked so that an edit of it is noticed. */
#define N_SAMPLES 68
#define N_WAL_SAMPLES 14    /* at or after T0 + 8h: in the head after opening */
#define N_BLOCK1_SAMPLES 42 /* [T0, T0+6h), level 2 */
#define N_BLOCK2_SAMPLES 12 /* [T0+6h, T0+8h), level 1 */

static int64_t sample_time(const struct gseries *s, size_t k)
{
	/* a few ms of jitter, as scrapes have, so that timestamps use the dod encoding */
	return T0 + s->start + (int64_t)k * s->step + (int64_t)((k * 7919) % 13);
}

static size_t sample_count(const struct gseries *s)
{
	size_t n = 0;
	while (sample_time(s, n) < T0 + s->end)
		n++;
	return n;
}

static size_t nlabels(const struct gseries *s)
{
	size_t n = 0;
	while (s->labels[2 * n])
		n++;
	return n;
}

static void tsdb_labels(const struct gseries *s, struct pd_storage_label *out)
{
	for (size_t i = 0; i < nlabels(s); i++)
		out[i] = (struct pd_storage_label){s->labels[2 * i], s->labels[2 * i + 1]};
}

/* ---- helpers --------------------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static void rm_rf(const char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Copies the tree at from to the new path to (cp -R: the tree is small). */
static int copy_tree(const char *from, const char *to)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "cp -R '%s' '%s'", from, to);
	return system(cmd) == 0 ? 0 : -1;
}

static char *tmp_copy(void)
{
	char *d = strdup("/tmp/pd_test_store_golden_XXXXXX");
	assert_non_null(mkdtemp(d));
	size_t n = strlen(d) + 8;
	char *store = malloc(n);
	snprintf(store, n, "%s/store", d);
	if (copy_tree(GOLDEN_DIR, store))
		fail_msg("cannot copy %s to %s", GOLDEN_DIR, store);
	free(d);
	return store;
}

static void rm_copy(char *store)
{
	char *parent = strdup(store);
	*strrchr(parent, '/') = '\0';
	rm_rf(parent);
	free(parent);
	free(store);
}

struct expected {
	unsigned series;
	int64_t t;
	size_t size;
	uint64_t hash;
	int seen;
};

/* EXPECTED: "sample <series> <t> <size> <xxh64 hex>" lines; others are comments. */
static struct expected *read_expected(size_t *n)
{
	FILE *f = fopen(GOLDEN_DIR "/EXPECTED", "r");
	char line[1024];
	struct expected *e = calloc(N_SAMPLES + 1, sizeof(*e));
	*n = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned s;
		long long t;
		size_t size;
		unsigned long long h;
		if (strncmp(line, "sample ", 7) != 0)
			continue;
		if (sscanf(line, "sample %u %lld %zu %llx", &s, &t, &size, &h) != 4)
			fail_msg("EXPECTED: bad line: %s", line);
		if (*n == N_SAMPLES)
			fail_msg("EXPECTED has more than the %d samples of the schedule",
			         N_SAMPLES);
		e[(*n)++] = (struct expected){s, t, size, h, 0};
	}
	fclose(f);
	return e;
}

static struct expected *find_expected(struct expected *e, size_t n, unsigned s, int64_t t)
{
	for (size_t i = 0; i < n; i++)
		if (e[i].series == s && e[i].t == t)
			return &e[i];
	return NULL;
}

/* True when p is, field for field, the profile the schedule stored at sample k. */
static int same_as_source(const struct gseries *g, size_t k, const uint8_t *p, size_t len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/profiles/%s", PD_TESTDATA,
		 g->profiles[g->profiles[1] ? k % 2 : 0]);
	struct pd_pprof_profile *want, *got;
	struct pd_err err = {0};
	char why[256];
	if (pd_pprof_read_file(&want, path, NULL, &err))
		fail_msg("%s", err.msg);
	if (pd_pprof_decode(&got, p, len, NULL, &err)) {
		pd_pprof_destroy(want);
		return 0;
	}
	int same = pd_pprof_compare(want, got, why, sizeof(why)) == 0;
	if (!same)
		print_error("stored profile differs from %s: %s\n", path, why);
	pd_pprof_destroy(want);
	pd_pprof_destroy(got);
	return same;
}

/* ---- checks ------------------------------------------------------------------ */

/* The schedule's totals, so that an edit of the table is noticed. */
static void test_schedule(void **state)
{
	(void)state;
	size_t all = 0, wal = 0, b1 = 0, b2 = 0;
	for (size_t i = 0; i < NSERIES; i++)
		for (size_t k = 0; k < sample_count(&golden[i]); k++) {
			int64_t t = sample_time(&golden[i], k);
			all++;
			wal += t >= T0 + 8 * HOUR;
			b1 += t < T0 + 6 * HOUR;
			b2 += t >= T0 + 6 * HOUR && t < T0 + 8 * HOUR;
		}
	assert_int_equal(all, N_SAMPLES);
	assert_int_equal(wal, N_WAL_SAMPLES);
	assert_int_equal(b1, N_BLOCK1_SAMPLES);
	assert_int_equal(b2, N_BLOCK2_SAMPLES);
	size_t n;
	struct expected *e = read_expected(&n);
	assert_int_equal(n, N_SAMPLES);
	free(e);
}

/* Everything the golden store holds reads back: the series (labels, in order),
 * their exact timestamps, and each profile's size and hash. */
static void check_contents(struct pd_tsdb *db, int with_extra)
{
	struct pd_storage_result *r = NULL;
	struct pd_err err = {0};
	size_t ne;
	struct expected *e = read_expected(&ne);

	if (pd_tsdb_select(db, NULL, 0, INT64_MIN, INT64_MAX, 0, &r, &err))
		fail_msg("select: %s", err.msg);
	assert_int_equal(r->nseries, NSERIES);
	size_t reads = 0;
	for (size_t i = 0; i < NSERIES; i++) {
		const struct gseries *g = &golden[i];
		const struct pd_storage_series *s = &r->series[i];
		assert_int_equal(s->nlabels, nlabels(g));
		for (size_t l = 0; l < s->nlabels; l++) {
			assert_string_equal(s->labels[l].name, g->labels[2 * l]);
			assert_string_equal(s->labels[l].value, g->labels[2 * l + 1]);
		}
		size_t want = sample_count(g) + (with_extra && i == 0 ? 1 : 0);
		if (s->nts != want)
			fail_msg("series %zu has %zu samples, want %zu", i, s->nts, want);
		for (size_t k = 0; k < sample_count(g); k++) {
			int64_t t = sample_time(g, k);
			if (s->ts[k] != t)
				fail_msg("series %zu sample %zu at %lld, want %lld", i, k,
				         (long long)s->ts[k], (long long)t);
			struct expected *x = find_expected(e, ne, (unsigned)i, t);
			if (!x)
				fail_msg("EXPECTED has no sample %zu at %lld", i, (long long)t);
			uint8_t *p = NULL;
			size_t len = 0;
			struct pd_storage_label tl[5];
			tsdb_labels(g, tl);
			if (pd_tsdb_read(db, tl, nlabels(g), t, &p, &len, &err))
				fail_msg("read series %zu at %lld: %s", i, (long long)t, err.msg);
			/* the blocks give back their v1 chunks byte for byte; the WAL's
			 * samples are replayed into a head that keeps them in the columnar
			 * encoding (and compaction may rewrite blocks in it), which gives
			 * back the same profile with its string table rebuilt */
			if ((len != x->size || pd_labels_xxh64(p, len, 0) != x->hash) &&
			    !same_as_source(g, k, p, len))
				fail_msg("series %zu at %lld: profile of %zu bytes, hash %016llx; "
				         "EXPECTED "
				         "%zu bytes, %016llx",
				         i, (long long)t, len,
				         (unsigned long long)pd_labels_xxh64(p, len, 0), x->size,
				         (unsigned long long)x->hash);
			free(p);
			x->seen = 1;
			reads++;
		}
	}
	assert_int_equal(reads, N_SAMPLES);
	for (size_t i = 0; i < ne; i++)
		if (!e[i].seen)
			fail_msg("EXPECTED sample %u at %lld was not read", e[i].series,
			         (long long)e[i].t);
	pd_storage_result_destroy(r);
	free(e);

	/* a selector over blocks and head alike */
	struct pd_labels_selector *sel = NULL;
	struct pd_storage_matcher *m = NULL;
	size_t nm;
	const char *q = "{job=\"prometheus\", zone=~\"eu-.*\"}";
	if (pd_labels_selector_parse(&sel, q, strlen(q), NULL, &err) ||
	    pd_storage_matchers_from_selector(sel, &m, &nm, &err) ||
	    pd_tsdb_select(db, m, nm, T0, T0 + 6 * HOUR, 0, &r, &err))
		fail_msg("%s: %s", q, err.msg);
	assert_int_equal(r->nseries, 1);
	assert_string_equal(r->series[0].labels[0].value, "block");
	assert_int_equal(r->series[0].nts, 1); /* 2h17m; 6h17m is outside */
	pd_storage_result_destroy(r);
	free(m);
	pd_labels_selector_destroy(sel);

	/* label names and values */
	char **s = NULL;
	size_t n;
	static const char *names[] = {"__name__", "instance", "job", "path", "zone"};
	if (pd_tsdb_label_names(db, NULL, 0, INT64_MIN, INT64_MAX, &s, &n, &err))
		fail_msg("label names: %s", err.msg);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(s[i], names[i]);
	pd_storage_strings_free(s, n);
	static const char *types[] = {"block", "goroutine", "heap", "mutex", "threadcreate"};
	if (pd_tsdb_label_values(db, "__name__", NULL, 0, INT64_MIN, INT64_MAX, &s, &n, &err))
		fail_msg("label values: %s", err.msg);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(s[i], types[i]);
	pd_storage_strings_free(s, n);
}

/* The blocks as the generator left them: [T0, T0+6h) compacted from three
 * level-1 blocks, and [T0+6h, T0+8h); a store opened for writing may have
 * written the head's idle series to blocks of their own since, after them. */
static void check_blocks(struct pd_tsdb *db)
{
	struct pd_storage_block_info *b = NULL;
	struct pd_err err = {0};
	size_t n;
	if (pd_tsdb_blocks(db, &b, &n, &err))
		fail_msg("blocks: %s", err.msg);
	while (n > 2 && b[n - 1].idle && b[n - 1].mint >= T0 + 8 * HOUR)
		n--;
	assert_int_equal(n, 2);
	assert_int_equal(b[0].mint, T0);
	assert_int_equal(b[0].maxt, T0 + 6 * HOUR);
	assert_int_equal(b[0].level, 2);
	assert_int_equal(b[0].series, 5);
	assert_int_equal(b[0].samples, N_BLOCK1_SAMPLES);
	assert_int_equal(b[1].mint, T0 + 6 * HOUR);
	assert_int_equal(b[1].maxt, T0 + 8 * HOUR);
	assert_int_equal(b[1].level, 1);
	assert_int_equal(b[1].series, 4);
	assert_int_equal(b[1].samples, N_BLOCK2_SAMPLES);
	free(b);
}

/* Every file of the golden store is byte for byte in copy (read-only opening
 * must not change the store). */
static const char *cmp_copy_dir;
static int cmp_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)w;
	if (f != FTW_F)
		return 0;
	const char *rel = p + strlen(GOLDEN_DIR);
	char other[1024];
	uint8_t *a = NULL, *b = NULL;
	size_t na, nb;
	snprintf(other, sizeof(other), "%s%s", cmp_copy_dir, rel);
	if (pd_file_read(p, (size_t)1 << 30, &a, &na, NULL) ||
	    pd_file_read(other, (size_t)1 << 30, &b, &nb, NULL) || na != nb || memcmp(a, b, na))
		fail_msg("%s changed (or is gone) after a read-only open", other);
	free(a);
	free(b);
	return 0;
}

static void test_open_read_only(void **state)
{
	(void)state;
	char *dir = tmp_copy();
	struct pd_tsdb *db = NULL;
	struct pd_tsdb_opts o;
	struct pd_storage_stats st;
	struct pd_err err = {0};

	pd_tsdb_opts_init(&o);
	o.read_only = 1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("opening the golden store read-only: %s", err.msg);
	pd_tsdb_stats(db, &st);
	if (st.wal_repaired)
		fail_msg("the golden WAL needed repair: %s", st.wal_repair);
	assert_int_equal(st.blocks, 2);
	assert_int_equal(st.head_samples, N_WAL_SAMPLES);
	check_blocks(db);
	check_contents(db, 0);
	pd_tsdb_close(db);

	cmp_copy_dir = dir;
	assert_int_equal(nftw(GOLDEN_DIR, cmp_entry, 16, FTW_PHYS), 0);
	rm_copy(dir);
}

/* Opened for writing (with the default options), the old store takes a new
 * sample; flushing everything moves its old WAL into new blocks, and all of it
 * reads back after a restart. */
static void test_open_read_write(void **state)
{
	(void)state;
	char *dir = tmp_copy();
	struct pd_tsdb *db = NULL;
	struct pd_storage_stats st;
	struct pd_err err = {0};
	const struct gseries *g = &golden[0];
	struct pd_storage_label tl[5];
	static const uint8_t prof[] = "not a real profile, but bytes are bytes";

	if (pd_tsdb_open(&db, dir, NULL, &err))
		fail_msg("opening the golden store: %s", err.msg);
	pd_tsdb_stats(db, &st);
	assert_false(st.wal_repaired);
	check_blocks(db);
	check_contents(db, 0);

	tsdb_labels(g, tl);
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	if (pd_tsdb_append(a, tl, nlabels(g), T0 + 10 * HOUR + 1, prof, sizeof(prof), &err) ||
	    pd_tsdb_commit(a, &err))
		fail_msg("append to the golden store: %s", err.msg);
	check_contents(db, 1);
	pd_tsdb_close(db);

	/* again after a restart (the new sample comes from the old WAL's tail) */
	if (pd_tsdb_open(&db, dir, NULL, &err))
		fail_msg("reopening: %s", err.msg);
	check_contents(db, 1);
	if (pd_tsdb_flush(db, 1, &err))
		fail_msg("flush: %s", err.msg);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_samples, 0);
	check_contents(db, 1);
	pd_tsdb_close(db);

	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.read_only = 1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("reopening read-only: %s", err.msg);
	check_contents(db, 1);
	uint8_t *p = NULL;
	size_t len;
	if (pd_tsdb_read(db, tl, nlabels(g), T0 + 10 * HOUR + 1, &p, &len, &err))
		fail_msg("reading the new sample: %s", err.msg);
	assert_int_equal(len, sizeof(prof));
	assert_memory_equal(p, prof, len);
	free(p);
	pd_tsdb_close(db);
	rm_copy(dir);
}

/* ---- --regenerate ------------------------------------------------------------ */

struct gen_sample {
	unsigned series;
	size_t k;
	int64_t t;
};

static int gen_cmp(const void *a, const void *b)
{
	const struct gen_sample *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->series > y->series) - (x->series < y->series);
}

static int regen_fail(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "test_store_golden --regenerate: %s%s%s\n", what, err ? ": " : "",
	        err ? err->msg : "");
	return 1;
}

/* Appends the schedule with the current code: the samples before PHASE_B one
 * commit each, a flush (blocks, compaction, WAL checkpoint), then the rest; the
 * head is left in the WAL. Writes EXPECTED beside the store. */
static int regenerate(const char *dir)
{
	struct gen_sample all[N_SAMPLES];
	uint8_t *prof[NSERIES][2] = {{NULL}};
	size_t plen[NSERIES][2] = {{0}};
	struct pd_tsdb *db = NULL;
	struct pd_tsdb_opts o;
	struct pd_err err = {0};
	size_t n = 0;
	char path[1024];

	for (unsigned i = 0; i < NSERIES; i++) {
		for (int v = 0; v < 2 && golden[i].profiles[v]; v++) {
			uint8_t *gz;
			size_t gzlen;
			snprintf(path, sizeof(path), "%s/profiles/%s", PD_TESTDATA,
			         golden[i].profiles[v]);
			if (pd_file_read(path, (size_t)64 << 20, &gz, &gzlen, &err) ||
			    pd_gunzip(gz, gzlen, (size_t)64 << 20, &prof[i][v], &plen[i][v], &err))
				return regen_fail(path, &err);
			free(gz);
		}
		for (size_t k = 0; k < sample_count(&golden[i]); k++) {
			if (n == N_SAMPLES)
				return regen_fail("the schedule has more than N_SAMPLES samples",
				                  NULL);
			all[n++] = (struct gen_sample){i, k, sample_time(&golden[i], k)};
		}
	}
	if (n != N_SAMPLES)
		return regen_fail("the schedule does not have N_SAMPLES samples", NULL);
	qsort(all, n, sizeof(all[0]), gen_cmp);

	if (access(dir, F_OK) == 0)
		return regen_fail("the directory exists; remove it first", NULL);
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.chunk_samples = 4;       /* several chunks per series and block */
	o.value_group = 2;         /* several zstd frames per value chunk */
	o.wal_segment_size = 8192; /* several WAL segments */
	o.wal_sync = 1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		return regen_fail("open", &err);
	int flushed = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gseries *g = &golden[all[i].series];
		struct pd_storage_label tl[5];
		int v = g->profiles[1] ? (int)(all[i].k % 2) : 0;
		if (!flushed && all[i].t >= PHASE_B) {
			if (pd_tsdb_flush(db, 0, &err))
				return regen_fail("flush", &err);
			flushed = 1;
		}
		tsdb_labels(g, tl);
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		if (pd_tsdb_append(a, tl, nlabels(g), all[i].t, prof[all[i].series][v],
		                   plen[all[i].series][v], &err) ||
		    pd_tsdb_commit(a, &err))
			return regen_fail("append", &err);
	}
	pd_tsdb_close(db);

	snprintf(path, sizeof(path), "%s/EXPECTED", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return regen_fail(path, NULL);
	fprintf(f, "# EXPECTED: what the golden store holds, written by `test_store_golden\n"
	           "# --regenerate` (tests/unit/test_store_golden.c) with the store.\n"
	           "# sample <series> <t ms> <profile bytes> <XXH64 of the profile, seed 0>\n"
	           "# series:\n");
	for (unsigned i = 0; i < NSERIES; i++) {
		fprintf(f, "#   %u:", i);
		for (size_t l = 0; l < nlabels(&golden[i]); l++)
			fprintf(f, " %s=%s", golden[i].labels[2 * l], golden[i].labels[2 * l + 1]);
		fprintf(f, " (%s%s%s)\n", golden[i].profiles[0], golden[i].profiles[1] ? ", " : "",
		        golden[i].profiles[1] ? golden[i].profiles[1] : "");
	}
	for (unsigned i = 0; i < NSERIES; i++)
		for (size_t k = 0; k < sample_count(&golden[i]); k++) {
			int v = golden[i].profiles[1] ? (int)(k % 2) : 0;
			fprintf(f, "sample %u %lld %zu %016llx\n", i,
			        (long long)sample_time(&golden[i], k), plen[i][v],
			        (unsigned long long)pd_labels_xxh64(prof[i][v], plen[i][v], 0));
		}
	if (fclose(f))
		return regen_fail(path, NULL);
	for (unsigned i = 0; i < NSERIES; i++) {
		free(prof[i][0]);
		free(prof[i][1]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--regenerate") == 0)
		return regenerate(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--regenerate DIR]\n", argv[0]);
		return 2;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_schedule),
	    cmocka_unit_test(test_open_read_only),
	    cmocka_unit_test(test_open_read_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
