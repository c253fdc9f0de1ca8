/* test_tsdb_totals.c: profile totals kept beside the timestamps. The totals
 * section's encoder and reader (round trips, malformed sections), and
 * pd_tsdb_select_totals over the head, blocks cut from it, compacted blocks, a
 * head rebuilt by WAL replay, blocks written before sections existed (the
 * golden v1 store) and what compaction makes of them, deleted samples, records
 * that are not profiles, a damaged section (at its first record, and at its end
 * after records with types of their own), and a block and the head holding one
 * series' profiles interleaved and at the same times, many series of different
 * type sets one after another: in every case the totals
 * equal pd_pprof_sum of each stored profile, decoded. */
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

#include "block.h"
#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "profd/util.h"

/* ---- helpers ----------------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_totals_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

/* The profiles the tests store, raw (gunzipped); the last payload is not a
 * profile. */
static const char *const files[] = {
    "prometheus/heap.pb.gz",     "prometheus/cpu.pb.gz",   "prometheus/goroutine.pb.gz",
    "prometheus/block.pb.gz",    "goapp/allocs.pb.gz",     "goapp/cpu.pb.gz",
    "goapp/heap-2.pb.gz",        "labels/cpu.pb.gz",       "edge/multi-types.pb",
    "edge/zero-and-negative.pb", "edge/cpu-extra-type.pb", "edge/empty-samples.pb",
    "edge/default-type.pb",
};
#define NFILES (sizeof(files) / sizeof(files[0]))
#define NPAYLOADS (NFILES + 1)

static uint8_t *payloads[NPAYLOADS];
static size_t payload_len[NPAYLOADS];

static int load(void **state)
{
	(void)state;
	struct pd_err err = {0};
	for (size_t i = 0; i < NFILES; i++) {
		char path[512];
		uint8_t *buf;
		size_t len;
		snprintf(path, sizeof(path), "%s/profiles/%s", PD_TESTDATA, files[i]);
		if (pd_file_read(path, 64 << 20, &buf, &len, &err))
			fail_msg("%s: %s", path, err.msg);
		if (pd_gzip_is(buf, len)) {
			if (pd_gunzip(buf, len, 64 << 20, &payloads[i], &payload_len[i], &err))
				fail_msg("%s: %s", path, err.msg);
			free(buf);
		} else {
			payloads[i] = buf;
			payload_len[i] = len;
		}
	}
	static const char opaque[] = "not a profile at all";
	payloads[NFILES] = (uint8_t *)strdup(opaque);
	payload_len[NFILES] = sizeof(opaque) - 1;
	return 0;
}

static int unload(void **state)
{
	(void)state;
	for (size_t i = 0; i < NPAYLOADS; i++)
		free(payloads[i]);
	return 0;
}

static struct pd_tsdb *open_db(const char *dir, int64_t block_range, int wal)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.block_range_ms = block_range;
	o.chunk_samples = 7; /* several chunks a series */
	o.wal_disabled = !wal;
	o.wal_sync = 1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return db;
}

#define NSERIES 4
#define NSAMPLES 40
#define T0 1700000000000ll
#define STEP 15000ll

/* Which payload series s has at sample k: a mix, profiles changing type sets
 * within a chunk, and now and then a record that is not a profile. */
static size_t payload_of(int s, int k)
{
	if (s == 3 && k % 5 == 2)
		return NFILES;
	return ((size_t)s * 3 + (size_t)k * (size_t)(s + 1)) % NFILES;
}

static void append_all(struct pd_tsdb *db, int from, int to)
{
	struct pd_err err = {0};
	for (int k = from; k < to; k++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int s = 0; s < NSERIES; s++) {
			char inst[16];
			snprintf(inst, sizeof(inst), "i%d", s);
			struct pd_storage_label l[2] = {{"__name__", "prof"}, {"instance", inst}};
			size_t p = payload_of(s, k);
			if (pd_tsdb_append(a, l, 2, T0 + k * STEP + s, payloads[p], payload_len[p],
			                   &err))
				fail_msg("append: %s", err.msg);
		}
		if (pd_tsdb_commit(a, &err))
			fail_msg("commit: %s", err.msg);
	}
}

static int match_any(const void *ctx, const char *v)
{
	(void)ctx;
	(void)v;
	return 1;
}

/* Checks every series' totals against its profiles, read and decoded one by
 * one, and its timestamps against pd_tsdb_select. Returns the profiles seen. */
static size_t check_totals(struct pd_tsdb *db, int64_t mint, int64_t maxt)
{
	struct pd_err err = {0};
	struct pd_storage_matcher m = {"__name__", match_any, NULL};
	struct pd_storage_result *sel;
	struct pd_storage_totals_result *tot;
	size_t seen = 0;
	if (pd_tsdb_select(db, &m, 1, mint, maxt, 0, &sel, &err))
		fail_msg("select: %s", err.msg);
	if (pd_tsdb_select_totals(db, &m, 1, mint, maxt, 0, &tot, &err))
		fail_msg("select_totals: %s", err.msg);
	assert_int_equal(tot->nseries, sel->nseries);
	for (size_t i = 0; i < tot->nseries; i++) {
		const struct pd_storage_totals *t = &tot->series[i];
		const struct pd_storage_series *s = &sel->series[i];
		assert_int_equal(t->nlabels, s->nlabels);
		for (size_t k = 0; k < t->nlabels; k++) {
			assert_string_equal(t->labels[k].name, s->labels[k].name);
			assert_string_equal(t->labels[k].value, s->labels[k].value);
		}
		assert_int_equal(t->nts, s->nts);
		for (size_t j = 0; j < t->nts; j++) {
			assert_int_equal(t->ts[j], s->ts[j]);
			uint8_t *buf;
			size_t len;
			if (pd_tsdb_read(db, t->labels, t->nlabels, t->ts[j], &buf, &len, &err))
				fail_msg("read %lld: %s", (long long)t->ts[j], err.msg);
			struct pd_pprof_profile *p = NULL;
			struct pd_err derr;
			if (pd_pprof_decode(&p, buf, len, NULL, &derr))
				p = NULL;
			free(buf);
			size_t have = 0;
			for (size_t k = 0; k < t->ntypes; k++)
				have += t->present[k * t->nts + j];
			if (!p) {
				assert_int_equal(have, 0);
				assert_int_equal(t->duration_nanos[j], 0);
				continue;
			}
			seen++;
			assert_int_equal(t->duration_nanos[j], pd_pprof_duration_nanos(p));
			size_t distinct = 0;
			for (size_t q = 0; q < pd_pprof_sample_type_count(p); q++) {
				const char *ty = pd_pprof_sample_type(p, q),
				           *un = pd_pprof_sample_unit(p, q);
				size_t k = 0;
				while (k < t->ntypes && (strcmp(t->types[k].type, ty) ||
				                         strcmp(t->types[k].unit, un)))
					k++;
				if (k == t->ntypes)
					fail_msg("series %zu, profile at %lld: type %s/%s missing",
					         i, (long long)t->ts[j], ty, un);
				assert_true(t->present[k * t->nts + j]);
				/* a type listed twice takes its last sum, as pprof -raw's last
				 * column */
				int last = (int)q;
				for (size_t r = q + 1; r < pd_pprof_sample_type_count(p); r++)
					if (!strcmp(pd_pprof_sample_type(p, r), ty) &&
					    !strcmp(pd_pprof_sample_unit(p, r), un))
						last = (int)r;
				assert_int_equal(t->values[k * t->nts + j], pd_pprof_sum(p, last));
				if (last == (int)q)
					distinct++;
			}
			assert_int_equal(have, distinct);
			pd_pprof_destroy(p);
		}
	}
	pd_storage_result_destroy(sel);
	pd_storage_totals_result_destroy(tot);
	return seen;
}

/* Every timestamp chunk of every block has a totals section. */
static void assert_blocks_have_sections(const char *dir, size_t *nblocks)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "ls -1 '%s' | grep -E '^[0-9A-Z]{26}$' > '%s/.blocks'", dir,
	         dir);
	assert_int_equal(system(cmd), 0);
	char path[600];
	snprintf(path, sizeof(path), "%s/.blocks", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char name[64];
	*nblocks = 0;
	while (fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = '\0';
		char bdir[700];
		snprintf(bdir, sizeof(bdir), "%s/%s", dir, name);
		struct pd_block *b;
		struct pd_err err = {0};
		if (pd_block_open(&b, bdir, &err))
			fail_msg("%s: %s", bdir, err.msg);
		uint64_t *refs;
		size_t n;
		assert_int_equal(pd_block_all_series(b, &refs, &n, &err), 0);
		for (size_t i = 0; i < n; i++) {
			struct pd_lpair *l;
			size_t nl, nc;
			struct pd_block_chunk_meta *c;
			assert_int_equal(pd_block_series(b, refs[i], &l, &nl, &c, &nc, &err), 0);
			for (size_t k = 0; k < nc; k++) {
				const uint8_t *p, *sec;
				size_t len, sl;
				assert_int_equal(
				    pd_block_chunk_bytes(b, c[k].ts_ref, &p, &len, &err), 0);
				assert_int_equal(pd_chunkenc_ts_totals(p, len, &sec, &sl), 0);
				if (!sl)
					fail_msg("%s: series %zu chunk %zu has no totals section",
					         name, i, k);
			}
			free(l);
			free(c);
		}
		free(refs);
		pd_block_close(b);
		(*nblocks)++;
	}
	fclose(f);
	remove(path);
}

/* ---- the section on its own --------------------------------------------------- */

static void test_section_roundtrip(void **state)
{
	(void)state;
	struct pd_err err = {0};
	struct pd_chunkenc_totals *c = pd_chunkenc_totals_create();
	assert_non_null(c);
	const char *t1[] = {"samples", "cpu"}, *u1[] = {"count", "nanoseconds"};
	const char *t2[] = {"cpu", "wall", "cpu"},
	           *u2[] = {"nanoseconds", "nanoseconds", "nanoseconds"};
	int64_t s1[] = {5, 50}, s2[] = {INT64_MAX, -7, INT64_MIN}, s3[] = {-3, INT64_MIN};
	assert_int_equal(pd_chunkenc_totals_append(c, 2, t1, u1, s1, 10, &err), 0);
	assert_int_equal(pd_chunkenc_totals_append_opaque(c, &err), 0);
	assert_int_equal(pd_chunkenc_totals_append(c, 3, t2, u2, s2, -1, &err), 0);
	assert_int_equal(pd_chunkenc_totals_append(c, 2, t1, u1, s3, INT64_MAX, &err), 0);
	assert_int_equal(pd_chunkenc_totals_append(c, 0, NULL, NULL, NULL, 0, &err), 0);
	assert_int_equal(pd_chunkenc_totals_count(c), 5);
	size_t len;
	const uint8_t *b = pd_chunkenc_totals_bytes(c, &len);
	assert_int_equal(b[0], PD_CHUNKENC_TOTALS_VERSION);

	struct pd_chunkenc_totals_iter it;
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, len, 5), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.profile, 1);
	assert_int_equal(it.duration, 10);
	assert_int_equal(it.n, 2);
	assert_int_equal(it.vals[0], 5);
	assert_int_equal(it.vals[1], 50);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.profile, 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.duration, -1);
	assert_int_equal(it.n, 3);
	/* cpu is one type, listed twice; wall is new */
	assert_int_equal(it.type_idx[0], it.type_idx[2]);
	assert_int_equal(it.types[it.type_idx[0]].type_len, 3);
	assert_memory_equal(it.types[it.type_idx[1]].type, "wall", 4);
	assert_true(it.vals[0] == INT64_MAX && it.vals[1] == -7 && it.vals[2] == INT64_MIN);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.duration, INT64_MAX);
	assert_true(it.vals[0] == -3 && it.vals[1] == INT64_MIN);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.profile, 1);
	assert_int_equal(it.n, 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), 0);
	assert_int_equal(it.ntypes, 3);
	pd_chunkenc_totals_iter_fini(&it);

	/* malformed: fewer records than timestamps, bytes left over, every cut */
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, len, 6), 0);
	while (pd_chunkenc_totals_iter_next(&it))
		;
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
	pd_chunkenc_totals_iter_fini(&it);
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, len, 4), 0);
	while (pd_chunkenc_totals_iter_next(&it))
		;
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
	pd_chunkenc_totals_iter_fini(&it);
	for (size_t cut = 1; cut < len; cut++) {
		assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, cut, 5), 0);
		while (pd_chunkenc_totals_iter_next(&it))
			;
		assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
		pd_chunkenc_totals_iter_fini(&it);
	}
	/* a set index out of range, a type index out of range */
	static const uint8_t bad_set[] = {1, 5, 0};
	static const uint8_t bad_type[] = {1, 1, 1, 2, 0, 0};
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, bad_set, sizeof(bad_set), 1), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
	pd_chunkenc_totals_iter_fini(&it);
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, bad_type, sizeof(bad_type), 1), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
	pd_chunkenc_totals_iter_fini(&it);
	/* no section, or a version this reader does not know: answered as absent */
	static const uint8_t v5[] = {5, 0};
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, 0, 5), PD_ENOTFOUND);
	pd_chunkenc_totals_iter_fini(&it);
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, v5, 2, 1), PD_ENOTFOUND);
	pd_chunkenc_totals_iter_fini(&it);
	pd_chunkenc_totals_destroy(c);
}

/* Version 2's repeats: a profile equal to the last profile record (set,
 * duration, totals) costs a repeat, and a run of them one record; an opaque
 * record ends a run but not what a repeat refers to. Version 1 sections, where
 * tag 2 is set 0, read as before; damaged repeats are refused. */
static void test_section_repeats(void **state)
{
	(void)state;
	struct pd_err err = {0};
	struct pd_chunkenc_totals *c = pd_chunkenc_totals_create();
	assert_non_null(c);
	const char *t[] = {"contentions", "delay"}, *u[] = {"count", "nanoseconds"};
	int64_t zero[] = {0, 0}, some[] = {3, 900};
	/* expected per record: 0 opaque, 1 zero, 2 some */
	int want[200];
	size_t n = 0;
	for (int i = 0; i < 100; i++, n++) {
		assert_int_equal(pd_chunkenc_totals_append(c, 2, t, u, zero, 0, &err), 0);
		want[n] = 1;
	}
	size_t len100;
	pd_chunkenc_totals_bytes(c, &len100);
	/* version (1), the first record (7: a set of two new types, both
	 * well-known, so named by number) and one repeat of 99 (2); each record on
	 * its own would take 4 */
	assert_int_equal(len100, 10);
	assert_int_equal(pd_chunkenc_totals_append_opaque(c, &err), 0);
	want[n++] = 0;
	for (int i = 0; i < 5; i++, n++) {
		assert_int_equal(pd_chunkenc_totals_append(c, 2, t, u, zero, 0, &err), 0);
		want[n] = 1;
	}
	for (int i = 0; i < 3; i++, n++) {
		assert_int_equal(pd_chunkenc_totals_append(c, 2, t, u, some, 0, &err), 0);
		want[n] = 2;
	}
	/* a different duration is not a repeat */
	assert_int_equal(pd_chunkenc_totals_append(c, 2, t, u, some, 7, &err), 0);
	want[n++] = 3;
	size_t len;
	const uint8_t *b = pd_chunkenc_totals_bytes(c, &len);
	assert_int_equal(b[0], PD_CHUNKENC_TOTALS_VERSION);
	struct pd_chunkenc_totals_iter it;
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, len, (uint32_t)n), 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
		if (want[i] == 0) {
			assert_int_equal(it.profile, 0);
			continue;
		}
		assert_int_equal(it.profile, 1);
		assert_int_equal(it.n, 2);
		assert_int_equal(it.duration, want[i] == 3 ? 7 : 0);
		assert_int_equal(it.vals[0], want[i] == 1 ? 0 : 3);
		assert_int_equal(it.vals[1], want[i] == 1 ? 0 : 900);
	}
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), 0);
	pd_chunkenc_totals_iter_fini(&it);
	/* a count that a repeat overshoots, every cut */
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, len, 50), 0);
	while (pd_chunkenc_totals_iter_next(&it))
		;
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
	pd_chunkenc_totals_iter_fini(&it);
	for (size_t cut = 1; cut < len; cut++) {
		assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, cut, (uint32_t)n), 0);
		while (pd_chunkenc_totals_iter_next(&it))
			;
		assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
		pd_chunkenc_totals_iter_fini(&it);
	}
	pd_chunkenc_totals_destroy(c);

	/* version 1: tag 2 is set 0 (here a profile with total 5, then +1) */
	static const uint8_t v1[] = {1, 1, 1, 0, 1, 'a', 1, 'b', 0, 10, 2, 0, 2};
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, v1, sizeof(v1), 2), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.vals[0], 5);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.profile, 1);
	assert_int_equal(it.vals[0], 6);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), 0);
	pd_chunkenc_totals_iter_fini(&it);
	/* damaged repeats: before any profile, of zero records, after an opaque only */
	static const uint8_t first[] = {2, 2, 1};
	static const uint8_t zero_n[] = {2, 1, 0, 0, 2, 0};
	static const uint8_t opaque_only[] = {2, 0, 2, 1};
	const uint8_t *bad[] = {first, zero_n, opaque_only};
	size_t blen[] = {sizeof(first), sizeof(zero_n), sizeof(opaque_only)};
	uint32_t bcount[] = {1, 2, 2};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(pd_chunkenc_totals_iter_init(&it, bad[i], blen[i], bcount[i]), 0);
		while (pd_chunkenc_totals_iter_next(&it))
			;
		assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
		pd_chunkenc_totals_iter_fini(&it);
	}
}

/* Version 3 names the sample types Go writes by number: a set of well-known and
 * other types reads back with every name, each type once; a type referred to
 * again takes a code past the well-known ones; version 2 sections, whose codes
 * from 1 refer to types already defined, read as before; a well-known code not
 * in the list is damage. */
static void test_section_well_known(void **state)
{
	(void)state;
	struct pd_err err = {0};
	struct pd_chunkenc_totals *c = pd_chunkenc_totals_create();
	assert_non_null(c);
	const char *t1[] = {"alloc_objects", "alloc_space", "wall", "inuse_space"},
	           *u1[] = {"count", "bytes", "nanoseconds", "bytes"};
	const char *t2[] = {"inuse_space", "wall", "samples"},
	           *u2[] = {"bytes", "nanoseconds", "count"};
	int64_t s1[] = {1, 2, 3, 4}, s2[] = {5, 6, 7};
	assert_int_equal(pd_chunkenc_totals_append(c, 4, t1, u1, s1, 0, &err), 0);
	assert_int_equal(pd_chunkenc_totals_append(c, 3, t2, u2, s2, 0, &err), 0);
	size_t len;
	const uint8_t *b = pd_chunkenc_totals_bytes(c, &len);
	/* version, tag 1, n 4, codes 3 and 4, wall spelled out (0, 4 "wall",
	 * 11 "nanoseconds"), code 6, duration, four totals; tag 1, n 3, inuse_space
	 * and wall as types 3 and 2 (codes 36, 35), samples as code 1, duration,
	 * three totals */
	static const uint8_t want[] = {
	    4,   1,   4,   3,   4, 0, 4, 'w', 'a', 'l', 'l', 11, 'n', 'a', 'n', 'o', 's', 'e', 'c',
	    'o', 'n', 'd', 's', 6, 0, 2, 4,   6,   8,   1,   3,  36,  35,  1,   0,   2,   6,   14};
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(b, want, len);
	assert_int_equal(pd_chunkenc_totals_well_known("delay", "nanoseconds"), 7);
	assert_int_equal(pd_chunkenc_totals_well_known("delay", "seconds"), -1);

	struct pd_chunkenc_totals_iter it;
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, len, 2), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.n, 4);
	for (size_t i = 0; i < 4; i++) {
		const struct pd_chunkenc_totals_type *t = &it.types[it.type_idx[i]];
		assert_int_equal(t->type_len, strlen(t1[i]));
		assert_memory_equal(t->type, t1[i], t->type_len);
		assert_int_equal(t->unit_len, strlen(u1[i]));
		assert_memory_equal(t->unit, u1[i], t->unit_len);
		assert_int_equal(it.vals[i], s1[i]);
	}
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.n, 3);
	for (size_t i = 0; i < 3; i++) {
		const struct pd_chunkenc_totals_type *t = &it.types[it.type_idx[i]];
		assert_memory_equal(t->type, t2[i], t->type_len);
		assert_memory_equal(t->unit, u2[i], t->unit_len);
		assert_int_equal(it.vals[i], s2[i]);
	}
	assert_int_equal(it.ntypes, 5);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), 0);
	pd_chunkenc_totals_iter_fini(&it);
	pd_chunkenc_totals_destroy(c);

	/* version 2: code 1 is the first type defined ("a"), not a well-known one */
	static const uint8_t v2[] = {2, 1, 1, 0, 1, 'a', 1, 'b', 0, 10, 1, 2, 1, 1, 0, 2, 4};
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, v2, sizeof(v2), 2), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.ntypes, 1);
	assert_int_equal(it.n, 2);
	assert_int_equal(it.type_idx[0], 0);
	assert_int_equal(it.type_idx[1], 0);
	assert_memory_equal(it.types[0].type, "a", 1);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), 0);
	pd_chunkenc_totals_iter_fini(&it);
	/* version 3: a well-known code past the list, a reference to no type */
	static const uint8_t past[] = {3, 1, 1, 32, 0, 0};
	static const uint8_t none[] = {3, 1, 1, 33, 0, 0};
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, past, sizeof(past), 1), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
	pd_chunkenc_totals_iter_fini(&it);
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, none, sizeof(none), 1), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
	pd_chunkenc_totals_iter_fini(&it);
}

/* Sample types that differ only after a NUL are two types in the section, each
 * spelled out whole (a profile's strings may hold NULs). */
static void test_section_nul_types(void **state)
{
	(void)state;
	struct pd_err err = {0};
	static const char *const strs[] = {"", "cpu\0a", "cpu\0b", "nanoseconds"};
	static const size_t lens[] = {0, 5, 5, 11};
	struct pd_pprof_pvt st[2] = {{1, 3}, {2, 3}};
	int64_t vals[2] = {7, 9};
	struct pd_pprof_psample smp = {.value = vals, .nvalue = 2};
	struct pd_pprof_parts parts = {.strings = strs, .string_len = lens, .nstrings = 4,
	                               .sample_type = st, .nsample_type = 2,
	                               .sample = &smp, .nsample = 1};
	struct pd_pprof_profile *p;
	assert_int_equal(pd_pprof_parts_build(&parts, &p, &err), 0);
	struct pd_chunkenc_totals *c = pd_chunkenc_totals_create();
	assert_non_null(c);
	assert_int_equal(pd_chunkenc_totals_append_profile(c, p, &err), 0);
	size_t len;
	const uint8_t *b = pd_chunkenc_totals_bytes(c, &len);
	struct pd_chunkenc_totals_iter it;
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, len, 1), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(it.n, 2);
	assert_int_equal(it.ntypes, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct pd_chunkenc_totals_type *t = &it.types[it.type_idx[i]];
		assert_int_equal(t->type_len, 5);
		assert_memory_equal(t->type, strs[1 + i], 5);
		assert_int_equal(t->unit_len, 11);
		assert_int_equal(it.vals[i], vals[i]);
	}
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), 0);
	pd_chunkenc_totals_iter_fini(&it);
	pd_chunkenc_totals_destroy(c);
	pd_pprof_destroy(p);
}

/* Timestamps read the same with a section after them, and the section is found. */
static void test_section_after_timestamps(void **state)
{
	(void)state;
	struct pd_err err = {0};
	for (int n = 1; n <= 9; n++) {
		struct pd_chunkenc_ts ts;
		struct pd_chunkenc_totals *c = pd_chunkenc_totals_create();
		pd_chunkenc_ts_init(&ts);
		for (int i = 0; i < n; i++) {
			assert_int_equal(
			    pd_chunkenc_ts_append(&ts, T0 + i * 15000 + (i * 7) % 5, &err), 0);
			assert_int_equal(pd_chunkenc_totals_append_opaque(c, &err), 0);
		}
		size_t tl, xl;
		const uint8_t *tb = pd_chunkenc_ts_bytes(&ts, &tl),
		              *xb = pd_chunkenc_totals_bytes(c, &xl);
		uint8_t *all = malloc(tl + xl);
		memcpy(all, tb, tl);
		memcpy(all + tl, xb, xl);
		struct pd_chunkenc_ts_iter it;
		pd_chunkenc_ts_iter_init(&it, all, tl + xl);
		int k = 0;
		while (pd_chunkenc_ts_iter_next(&it))
			assert_int_equal(pd_chunkenc_ts_iter_at(&it), T0 + k * 15000 + (k * 7) % 5),
			    k++;
		assert_int_equal(k, n);
		assert_int_equal(pd_chunkenc_ts_iter_err(&it), 0);
		const uint8_t *sec;
		size_t sl;
		assert_int_equal(pd_chunkenc_ts_totals(all, tl + xl, &sec, &sl), 0);
		assert_ptr_equal(sec, all + tl);
		assert_int_equal(sl, xl);
		assert_int_equal(pd_chunkenc_ts_totals(all, tl, &sec, &sl), 0);
		assert_int_equal(sl, 0);
		free(all);
		pd_chunkenc_ts_fini(&ts);
		pd_chunkenc_totals_destroy(c);
	}
}

/* ---- the store ------------------------------------------------------------------ */

/* Head, then blocks cut from it, then compacted blocks. */
static void test_head_blocks_compaction(void **state)
{
	(void)state;
	char *dir = tmpdir();
	/* 40 samples 15 s apart in ranges of 60 s: ten blocks, compacted by three */
	struct pd_tsdb *db = open_db(dir, 60000, 0);
	struct pd_err err = {0};
	append_all(db, 0, NSAMPLES);
	size_t seen = check_totals(db, INT64_MIN, INT64_MAX);
	assert_true(seen >= NSERIES * NSAMPLES - NSAMPLES / 5);
	/* a range inside a chunk */
	check_totals(db, T0 + 5 * STEP, T0 + 17 * STEP);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.compactions > 0);
	assert_int_equal(check_totals(db, INT64_MIN, INT64_MAX), seen);
	check_totals(db, T0 + 5 * STEP, T0 + 17 * STEP);
	pd_tsdb_close(db);
	size_t nblocks;
	assert_blocks_have_sections(dir, &nblocks);
	assert_true(nblocks >= 2);
	rmdir_all(dir);
}

/* A head rebuilt from the WAL has its sections too. */
static void test_wal_replay(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 2 * 3600 * 1000, 1);
	append_all(db, 0, 20);
	size_t seen = check_totals(db, INT64_MIN, INT64_MAX);
	pd_tsdb_close(db);
	db = open_db(dir, 2 * 3600 * 1000, 1);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_samples, NSERIES * 20);
	assert_int_equal(check_totals(db, INT64_MIN, INT64_MAX), seen);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Deleted samples are left out, in the head, in blocks, and after the blocks
 * are rewritten without them. */
static void test_tombstones(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 2 * 3600 * 1000, 0);
	struct pd_err err = {0};
	append_all(db, 0, 30);
	struct pd_storage_matcher m = {"instance", pd_storage_match_equal, "i1"};
	assert_int_equal(pd_tsdb_delete(db, &m, 1, T0 + 3 * STEP, T0 + 11 * STEP, &err), 0);
	size_t seen = check_totals(db, INT64_MIN, INT64_MAX);
	struct pd_storage_totals_result *tot;
	assert_int_equal(pd_tsdb_select_totals(db, &m, 1, INT64_MIN, INT64_MAX, 0, &tot, &err), 0);
	assert_int_equal(tot->nseries, 1);
	assert_int_equal(tot->series[0].nts, 30 - 8); /* k = 3..10 (i1 is 1 ms late) */
	pd_storage_totals_result_destroy(tot);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	assert_int_equal(check_totals(db, INT64_MIN, INT64_MAX), seen);
	/* and deleted in a block, then rewritten */
	assert_int_equal(pd_tsdb_delete(db, &m, 1, T0 + 20 * STEP, T0 + 21 * STEP, &err), 0);
	size_t seen2 = check_totals(db, INT64_MIN, INT64_MAX);
	assert_true(seen2 < seen);
	assert_int_equal(pd_tsdb_clean_tombstones(db, &err), 0);
	assert_int_equal(check_totals(db, INT64_MIN, INT64_MAX), seen2);
	assert_int_equal(pd_tsdb_select_totals(db, &m, 1, INT64_MIN, INT64_MAX, 0, &tot, &err), 0);
	assert_int_equal(tot->series[0].nts, 30 - 8 - 1);
	pd_storage_totals_result_destroy(tot);
	pd_tsdb_close(db);
	size_t nblocks;
	assert_blocks_have_sections(dir, &nblocks);
	rmdir_all(dir);
}

/* A record that is not a profile has no types, and a series of only such records
 * has none at all. */
static void test_opaque(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 2 * 3600 * 1000, 0);
	struct pd_err err = {0};
	struct pd_storage_label l[1] = {{"__name__", "raw"}};
	for (int k = 0; k < 10; k++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		assert_int_equal(
		    pd_tsdb_append(a, l, 1, T0 + k, payloads[NFILES], payload_len[NFILES], &err),
		    0);
		assert_int_equal(pd_tsdb_commit(a, &err), 0);
	}
	struct pd_storage_matcher m = {"__name__", pd_storage_match_equal, "raw"};
	for (int pass = 0; pass < 2; pass++) {
		struct pd_storage_totals_result *tot;
		assert_int_equal(
		    pd_tsdb_select_totals(db, &m, 1, INT64_MIN, INT64_MAX, 0, &tot, &err), 0);
		assert_int_equal(tot->nseries, 1);
		assert_int_equal(tot->series[0].nts, 10);
		assert_int_equal(tot->series[0].ntypes, 0);
		for (int k = 0; k < 10; k++)
			assert_int_equal(tot->series[0].duration_nanos[k], 0);
		pd_storage_totals_result_destroy(tot);
		assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	}
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Blocks written before totals sections existed (the golden v1 store) are
 * answered from their profiles, and compaction gives them sections. */
static void test_blocks_without_sections(void **state)
{
	(void)state;
	char *dir = tmpdir();
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "cp -R '%s/tsdb/v1/.' '%s/'", PD_TESTDATA, dir);
	assert_int_equal(system(cmd), 0);
	/* the golden store's blocks have no section: this test means something */
	char blk[800];
	snprintf(cmd, sizeof(cmd), "ls -1 '%s' | grep -E '^[0-9A-Z]{26}$' | head -1", dir);
	FILE *pf = popen(cmd, "r");
	assert_non_null(pf);
	char name[64] = "";
	assert_non_null(fgets(name, sizeof(name), pf));
	pclose(pf);
	name[strcspn(name, "\n")] = '\0';
	snprintf(blk, sizeof(blk), "%s/%s", dir, name);
	struct pd_block *b;
	struct pd_err err = {0};
	assert_int_equal(pd_block_open(&b, blk, &err), 0);
	uint64_t *refs;
	size_t n;
	assert_int_equal(pd_block_all_series(b, &refs, &n, &err), 0);
	struct pd_lpair *l;
	size_t nl, nc;
	struct pd_block_chunk_meta *c;
	assert_int_equal(pd_block_series(b, refs[0], &l, &nl, &c, &nc, &err), 0);
	const uint8_t *p, *sec;
	size_t len, sl;
	assert_int_equal(pd_block_chunk_bytes(b, c[0].ts_ref, &p, &len, &err), 0);
	assert_int_equal(pd_chunkenc_ts_totals(p, len, &sec, &sl), 0);
	assert_int_equal(sl, 0);
	free(l);
	free(c);
	free(refs);
	pd_block_close(b);

	/* ranges of 1 h: compaction's 9 h window then takes both old blocks (0..6 h,
	 * 6..8 h) with the head's first hour */
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.block_range_ms = 3600 * 1000;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	size_t seen = check_totals(db, INT64_MIN, INT64_MAX);
	assert_true(seen > 0);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.compactions > 0);
	assert_int_equal(check_totals(db, INT64_MIN, INT64_MAX), seen);
	pd_tsdb_close(db);
	size_t nblocks;
	assert_blocks_have_sections(dir, &nblocks);
	assert_true(nblocks >= 1);
	rmdir_all(dir);
}

static void on_damage(void *ctx, const struct pd_tsdb_damage *d)
{
	(void)ctx;
	assert_non_null(strstr(d->what, "totals section"));
}

/* A section that does not decode fails only that chunk's totals: counted as
 * damage, its timestamps still listed by pd_tsdb_select, other chunks answer. */
static void test_damaged_section(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_block_writer *w;
	assert_int_equal(pd_block_writer_create(&w, dir, T0, T0 + 3600000, 1, NULL, 0, &err), 0);
	struct pd_block_chunk cs[2];
	uint8_t *tsb[2], *vb[2];
	for (int k = 0; k < 2; k++) {
		struct pd_chunkenc_ts ts;
		struct pd_chunkenc_values *v = pd_chunkenc_values_create_enc(0, 0, 0);
		struct pd_chunkenc_totals *tot = pd_chunkenc_totals_create();
		pd_chunkenc_ts_init(&ts);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(
			    pd_chunkenc_ts_append(&ts, T0 + k * 100000 + i * 1000, &err), 0);
			assert_int_equal(
			    pd_chunkenc_values_append(v, payloads[1], payload_len[1], &err), 0);
			struct pd_pprof_profile *p;
			assert_int_equal(
			    pd_pprof_decode(&p, payloads[1], payload_len[1], NULL, &err), 0);
			assert_int_equal(pd_chunkenc_totals_append_profile(tot, p, &err), 0);
			pd_pprof_destroy(p);
		}
		size_t tl, xl, vl;
		const uint8_t *tb = pd_chunkenc_ts_bytes(&ts, &tl),
		              *xb = pd_chunkenc_totals_bytes(tot, &xl);
		tsb[k] = malloc(tl + xl);
		memcpy(tsb[k], tb, tl);
		memcpy(tsb[k] + tl, xb, xl);
		if (k == 0)
			tsb[k][tl + 1] = 0x7f; /* the first record's tag: a set that is not there */
		assert_int_equal(pd_chunkenc_values_seal(v, &vb[k], &vl, &err), 0);
		cs[k] = (struct pd_block_chunk){
		    T0 + k * 100000, T0 + k * 100000 + 2000, 3, tsb[k], tl + xl, vb[k], vl};
		pd_chunkenc_ts_fini(&ts);
		pd_chunkenc_values_destroy(v);
		pd_chunkenc_totals_destroy(tot);
	}
	struct pd_lpair l[1] = {{"__name__", "cpu"}};
	assert_int_equal(pd_block_writer_add_series(w, l, 1, cs, 2, &err), 0);
	char ulid[27];
	assert_int_equal(pd_block_writer_finish(w, ulid, &err), 0);
	for (int k = 0; k < 2; k++) {
		free(tsb[k]);
		free(vb[k]);
	}
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.read_only = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_storage_matcher m = {"__name__", pd_storage_match_equal, "cpu"};
	struct pd_storage_result *sel;
	assert_int_equal(pd_tsdb_select(db, &m, 1, INT64_MIN, INT64_MAX, 0, &sel, &err), 0);
	assert_int_equal(sel->series[0].nts, 6);
	pd_storage_result_destroy(sel);
	struct pd_storage_totals_result *tot;
	assert_int_equal(pd_tsdb_select_totals(db, &m, 1, INT64_MIN, INT64_MAX, 0, &tot, &err), 0);
	assert_int_equal(tot->nseries, 1);
	assert_int_equal(tot->series[0].nts, 3);
	assert_int_equal(tot->series[0].ts[0], T0 + 100000);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.chunks_damaged, 1);
	pd_storage_totals_result_destroy(tot);
	pd_tsdb_close(db);
	/* and tsdb check reports it */
	uint64_t found = 0;
	assert_int_equal(pd_tsdb_check(dir, on_damage, NULL, &found, &err), 0);
	assert_int_equal(found, 1);
	rmdir_all(dir);
}

/* The index of (type, unit) in t's types, or t->ntypes. */
static size_t type_index(const struct pd_storage_totals *t, const char *type, const char *unit)
{
	size_t k = 0;
	while (k < t->ntypes && (strcmp(t->types[k].type, type) || strcmp(t->types[k].unit, unit)))
		k++;
	return k;
}

/* Asserts that profile j of t has exactly payload p's totals. */
static void assert_profile_is(const struct pd_storage_totals *t, size_t j, size_t p)
{
	struct pd_pprof_profile *prof;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_decode(&prof, payloads[p], payload_len[p], NULL, &err), 0);
	assert_int_equal(t->duration_nanos[j], pd_pprof_duration_nanos(prof));
	size_t have = 0;
	for (size_t k = 0; k < t->ntypes; k++)
		have += t->present[k * t->nts + j];
	assert_int_equal(have, pd_pprof_sample_type_count(prof));
	for (size_t q = 0; q < pd_pprof_sample_type_count(prof); q++) {
		size_t k =
		    type_index(t, pd_pprof_sample_type(prof, q), pd_pprof_sample_unit(prof, q));
		assert_true(k < t->ntypes);
		assert_true(t->present[k * t->nts + j]);
		assert_int_equal(t->values[k * t->nts + j], pd_pprof_sum(prof, (int)q));
	}
	pd_pprof_destroy(prof);
}

/* A block and the head holding one series' profiles interleaved in time, and at
 * some times both (a restart, then older profiles appended): the totals come in
 * time order, one per time, the block's (read first) winning; a sample type seen
 * only in a profile that lost is not listed; types come in order of first
 * appearance in time. */
static void test_block_head_interleaved(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_storage_label l[1] = {{"__name__", "mix"}};
	/* cpu (payload 1) at even steps, 0..38, into a block */
	struct pd_tsdb *db = open_db(dir, 2 * 3600 * 1000, 0);
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	for (int k = 0; k < NSAMPLES; k += 2)
		assert_int_equal(
		    pd_tsdb_append(a, l, 1, T0 + k * STEP, payloads[1], payload_len[1], &err), 0);
	assert_int_equal(pd_tsdb_commit(a, &err), 0);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_close(db);
	/* after a restart, into the head: goroutine (2) at odd steps, and at every
	 * 4th step, the time of a cpu profile of the block, a heap profile (0) */
	db = open_db(dir, 2 * 3600 * 1000, 0);
	a = pd_tsdb_appender(db);
	for (int k = 0; k < NSAMPLES; k++)
		if (k % 2 || k % 4 == 0)
			assert_int_equal(pd_tsdb_append(a, l, 1, T0 + k * STEP,
			                                payloads[k % 2 ? 2 : 0],
			                                payload_len[k % 2 ? 2 : 0], &err),
			                 0);
	assert_int_equal(pd_tsdb_commit(a, &err), 0);
	struct pd_storage_matcher m = {"__name__", pd_storage_match_equal, "mix"};
	struct pd_storage_totals_result *tot;
	assert_int_equal(pd_tsdb_select_totals(db, &m, 1, INT64_MIN, INT64_MAX, 0, &tot, &err), 0);
	assert_int_equal(tot->nseries, 1);
	const struct pd_storage_totals *t = &tot->series[0];
	assert_int_equal(t->nts, NSAMPLES);
	for (size_t j = 0; j < NSAMPLES; j++) {
		assert_int_equal(t->ts[j], T0 + (int64_t)j * STEP);
		assert_profile_is(t, j, j % 2 ? 2 : 1);
	}
	/* cpu's two types (the profile at T0), then goroutine's one; no heap type */
	assert_int_equal(t->ntypes, 3);
	assert_string_equal(t->types[0].type, "samples");
	assert_string_equal(t->types[1].type, "cpu");
	assert_string_equal(t->types[2].type, "goroutine");
	pd_storage_totals_result_destroy(tot);
	/* a range that starts in the head's odd steps */
	assert_int_equal(
	    pd_tsdb_select_totals(db, &m, 1, T0 + 3 * STEP, T0 + 9 * STEP, 0, &tot, &err), 0);
	t = &tot->series[0];
	assert_int_equal(t->nts, 7);
	assert_string_equal(t->types[0].type, "goroutine");
	for (size_t j = 0; j < 7; j++)
		assert_profile_is(t, j, (j + 3) % 2 ? 2 : 1);
	pd_storage_totals_result_destroy(tot);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Many series of different type sets read one after another, from blocks and
 * the head, and one series longer than the first piece of memory a result takes:
 * each series' totals are its own (nothing left over from the series read
 * before it), however the result's memory is laid out. */
static void test_many_series(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_db(dir, 60000, 0);
	enum { MANY = 150, ROUNDS = 12, LONG = 1500 };
	for (int k = 0; k < ROUNDS; k++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int s = 0; s < MANY; s++) {
			char inst[16];
			snprintf(inst, sizeof(inst), "m%03d", s);
			struct pd_storage_label l[2] = {{"__name__", "prof"}, {"instance", inst}};
			/* series s keeps to one payload for a while, then moves on */
			size_t p = ((size_t)s + (size_t)(k / 5)) % NPAYLOADS;
			assert_int_equal(pd_tsdb_append(a, l, 2, T0 + k * STEP + s, payloads[p],
			                                payload_len[p], &err),
			                 0);
		}
		assert_int_equal(pd_tsdb_commit(a, &err), 0);
		if (k == ROUNDS / 2)
			assert_int_equal(pd_tsdb_flush(db, 1, &err), 0); /* half into blocks */
	}
	/* the long series: 1,500 profiles of four types, about 100 KB of totals */
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	struct pd_storage_label l[2] = {{"__name__", "prof"}, {"instance", "zlong"}};
	for (int k = 0; k < LONG; k++)
		assert_int_equal(pd_tsdb_append(a, l, 2, T0 + ROUNDS * STEP + k, payloads[0],
		                                payload_len[0], &err),
		                 0);
	assert_int_equal(pd_tsdb_commit(a, &err), 0);
	assert_true(check_totals(db, INT64_MIN, INT64_MAX) >= LONG);
	struct pd_storage_matcher m = {"instance", pd_storage_match_equal, "zlong"};
	struct pd_storage_totals_result *tot;
	assert_int_equal(pd_tsdb_select_totals(db, &m, 1, INT64_MIN, INT64_MAX, 0, &tot, &err), 0);
	assert_int_equal(tot->nseries, 1);
	assert_int_equal(tot->series[0].nts, LONG);
	assert_int_equal(tot->series[0].ntypes, 4);
	pd_storage_totals_result_destroy(tot);
	pd_tsdb_close(db);
	rmdir_all(dir);
}
/* A section damaged at its end, after records with sample types of their own: the
 * chunk's records and those types are taken back, the chunk before it stays. */
static void test_section_damaged_at_end(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_block_writer *w;
	assert_int_equal(pd_block_writer_create(&w, dir, T0, T0 + 3600000, 1, NULL, 0, &err), 0);
	struct pd_block_chunk cs[2];
	uint8_t *tsb[2], *vb[2];
	for (int k = 0; k < 2; k++) {
		struct pd_chunkenc_ts ts;
		struct pd_chunkenc_values *v = pd_chunkenc_values_create_enc(0, 0, 0);
		struct pd_chunkenc_totals *tot = pd_chunkenc_totals_create();
		pd_chunkenc_ts_init(&ts);
		for (int i = 0; i < 3; i++) {
			/* chunk 1: multi-types (payload 8) twice, then cpu */
			size_t p = k == 1 && i < 2 ? 8 : 1;
			assert_int_equal(
			    pd_chunkenc_ts_append(&ts, T0 + k * 100000 + i * 1000, &err), 0);
			assert_int_equal(
			    pd_chunkenc_values_append(v, payloads[p], payload_len[p], &err), 0);
			struct pd_pprof_profile *prof;
			assert_int_equal(
			    pd_pprof_decode(&prof, payloads[p], payload_len[p], NULL, &err), 0);
			assert_int_equal(pd_chunkenc_totals_append_profile(tot, prof, &err), 0);
			pd_pprof_destroy(prof);
		}
		size_t tl, xl, vl;
		const uint8_t *tb = pd_chunkenc_ts_bytes(&ts, &tl),
		              *xb = pd_chunkenc_totals_bytes(tot, &xl);
		if (k == 1)
			xl--; /* the last record's last value cut short */
		tsb[k] = malloc(tl + xl);
		memcpy(tsb[k], tb, tl);
		memcpy(tsb[k] + tl, xb, xl);
		assert_int_equal(pd_chunkenc_values_seal(v, &vb[k], &vl, &err), 0);
		cs[k] = (struct pd_block_chunk){
		    T0 + k * 100000, T0 + k * 100000 + 2000, 3, tsb[k], tl + xl, vb[k], vl};
		pd_chunkenc_ts_fini(&ts);
		pd_chunkenc_values_destroy(v);
		pd_chunkenc_totals_destroy(tot);
	}
	struct pd_lpair l[1] = {{"__name__", "cpu"}};
	assert_int_equal(pd_block_writer_add_series(w, l, 1, cs, 2, &err), 0);
	char ulid[27];
	assert_int_equal(pd_block_writer_finish(w, ulid, &err), 0);
	for (int k = 0; k < 2; k++) {
		free(tsb[k]);
		free(vb[k]);
	}
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.read_only = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_storage_matcher m = {"__name__", pd_storage_match_equal, "cpu"};
	struct pd_storage_totals_result *tot;
	assert_int_equal(pd_tsdb_select_totals(db, &m, 1, INT64_MIN, INT64_MAX, 0, &tot, &err), 0);
	assert_int_equal(tot->nseries, 1);
	const struct pd_storage_totals *t = &tot->series[0];
	assert_int_equal(t->nts, 3);
	assert_int_equal(t->ntypes, 2);
	for (size_t j = 0; j < 3; j++) {
		assert_int_equal(t->ts[j], T0 + (int64_t)j * 1000);
		assert_profile_is(t, j, 1);
	}
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.chunks_damaged, 1);
	pd_storage_totals_result_destroy(tot);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Version 4: a profile of a set defined before leaves out a duration equal to the
 * last profile's, and writes its totals as second differences (the change less the
 * type's last change) when that is shorter, as for a counter growing steadily. */
static void test_section_second_differences(void **state)
{
	(void)state;
	struct pd_err err = {0};
	struct pd_chunkenc_totals *c = pd_chunkenc_totals_create();
	const char *t[] = {"contentions", "delay"}, *u[] = {"count", "nanoseconds"};
	int64_t s[][2] = {{100, 5000}, {200, 10000}, {310, 15100}, {300, 15100}, {400, 20000}};
	int64_t dur[] = {0, 0, 0, 7, 7};
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(pd_chunkenc_totals_append(c, 2, t, u, s[i], dur[i], &err), 0);
	size_t len;
	const uint8_t *b = pd_chunkenc_totals_bytes(c, &len);
	/* version; tag 1, n 2, codes 7 and 8, duration 0, totals 100 (200 zigzagged:
	 * 200 = c8 01) and 5000 (10000 = 90 4e); then tag 3 + 1 (same duration) + 2
	 * (second differences), 0 and 0; then 6, 10 (20) and 100 (200 = c8 01); then
	 * a new duration (7, 14) and first differences (-10 is shorter than -120, and
	 * 0 than -5100): tag 3, 14, 19, 0; then tag 4 (the same duration, first
	 * differences: 100 against 110, 4900 against 4900): 200 = c8 01, 9800 = c8 4c */
	static const uint8_t want[] = {4, 1,  2,    7, 8, 0,  0xc8, 1, 0x90, 0x4e, 6, 0,    0,
	                               6, 20, 0xc8, 1, 3, 14, 19,   0, 4,    0xc8, 1, 0xc8, 0x4c};
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(b, want, len);
	struct pd_chunkenc_totals_iter it;
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, b, len, 5), 0);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
		assert_int_equal(it.profile, 1);
		assert_int_equal(it.duration, dur[i]);
		assert_int_equal(it.n, 2);
		assert_int_equal(it.vals[0], s[i][0]);
		assert_int_equal(it.vals[1], s[i][1]);
	}
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), 0);
	pd_chunkenc_totals_iter_fini(&it);
	/* a tag naming a set not defined, with either flag */
	static const uint8_t bad[] = {4, 1, 1, 7, 0, 2, 3 + 4 + 2, 0};
	assert_int_equal(pd_chunkenc_totals_iter_init(&it, bad, sizeof(bad), 2), 0);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 1);
	assert_int_equal(pd_chunkenc_totals_iter_next(&it), 0);
	assert_int_equal(pd_chunkenc_totals_iter_err(&it), PD_ECORRUPT);
	pd_chunkenc_totals_iter_fini(&it);
	pd_chunkenc_totals_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_section_roundtrip),
	    cmocka_unit_test(test_section_repeats),
	    cmocka_unit_test(test_section_well_known),
	    cmocka_unit_test(test_section_nul_types),
	    cmocka_unit_test(test_section_second_differences),
	    cmocka_unit_test(test_section_after_timestamps),
	    cmocka_unit_test(test_head_blocks_compaction),
	    cmocka_unit_test(test_wal_replay),
	    cmocka_unit_test(test_tombstones),
	    cmocka_unit_test(test_opaque),
	    cmocka_unit_test(test_blocks_without_sections),
	    cmocka_unit_test(test_damaged_section),
	    cmocka_unit_test(test_block_head_interleaved),
	    cmocka_unit_test(test_section_damaged_at_end),
	    cmocka_unit_test(test_many_series),
	};
	return cmocka_run_group_tests(tests, load, unload);
}
