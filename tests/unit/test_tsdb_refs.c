/* test_tsdb_refs.c: series refs across restarts. A store goes through reopens,
 * head cuts whose checkpoints drop inactive series, series created after them and
 * series coming back; after every step each series' profiles (labels ->
 * timestamps -> bytes) must be exactly what was appended. Also a WAL as earlier
 * versions wrote it, with one ref naming different series over its life, written
 * record by record with the WAL writer, and refs far apart. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
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
#include "wal.h"

#define MAX_SAMPLES 64

/* What the store must hold: per series (by name), its timestamps in order. */
struct model_series {
	char name[8];
	int64_t ts[MAX_SAMPLES];
	size_t n;
	uint64_t ref; /* its ref in the head when last seen there; 0: not yet */
};

struct model {
	struct model_series s[16];
	size_t n;
	uint64_t maxref; /* the largest ref seen */
};

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_tsdb_refs_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

static int any_value(const void *ctx, const char *v)
{
	(void)ctx;
	(void)v;
	return 1;
}

/* The bytes stored for series name at t: they name both, so a profile filed
 * under another series or time is seen. */
static size_t payload(const char *name, int64_t t, char *out, size_t cap)
{
	return (size_t)snprintf(out, cap, "profile of series %s at %lld", name, (long long)t);
}

static void labels_of(const char *name, struct pd_storage_label l[2])
{
	l[0] = (struct pd_storage_label){"job", "refs"};
	l[1] = (struct pd_storage_label){"series", name};
}

static struct model_series *model_get(struct model *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->s[i].name, name) == 0)
			return &m->s[i];
	assert_true(m->n < sizeof(m->s) / sizeof(m->s[0]));
	struct model_series *s = &m->s[m->n++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

static void model_add(struct model *m, const char *name, int64_t t)
{
	struct model_series *s = model_get(m, name);
	assert_true(s->n < MAX_SAMPLES);
	s->ts[s->n++] = t;
}

/* Appends one profile of series name at t, as one commit. */
static void put(struct pd_tsdb *db, struct model *m, const char *name, int64_t t)
{
	struct pd_err err = {0};
	struct pd_storage_label l[2];
	char p[64];
	size_t len = payload(name, t, p, sizeof(p));
	labels_of(name, l);
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_non_null(a);
	if (pd_tsdb_append(a, l, 2, t, (const uint8_t *)p, len, &err))
		fail_msg("append %s at %lld: %s", name, (long long)t, err.msg);
	if (pd_tsdb_commit(a, &err))
		fail_msg("commit %s at %lld: %s", name, (long long)t, err.msg);
	model_add(m, name, t);
}

/* The store holds exactly the model: the same series, each with the same
 * timestamps, and each profile's bytes those appended for it. */
static void check(struct pd_tsdb *db, const struct model *m, const char *when)
{
	struct pd_err err = {0};
	struct pd_storage_matcher any = {"job", any_value, NULL};
	struct pd_storage_result *r;
	if (pd_tsdb_select(db, &any, 1, INT64_MIN, INT64_MAX, 0, &r, &err))
		fail_msg("%s: select: %s", when, err.msg);
	size_t want = 0;
	for (size_t i = 0; i < m->n; i++)
		want += m->s[i].n > 0;
	for (size_t i = 0; i < r->nseries; i++) {
		const struct pd_storage_series *se = &r->series[i];
		const char *name = NULL;
		for (size_t k = 0; k < se->nlabels; k++)
			if (strcmp(se->labels[k].name, "series") == 0)
				name = se->labels[k].value;
		assert_non_null(name);
		const struct model_series *ms = NULL;
		for (size_t k = 0; k < m->n && !ms; k++)
			if (strcmp(m->s[k].name, name) == 0)
				ms = &m->s[k];
		if (!ms || ms->n == 0)
			fail_msg("%s: series %s is in the store but was never appended", when,
			         name);
		char got[512] = "", exp[512] = "";
		for (size_t k = 0; k < se->nts; k++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), " %lld",
			         (long long)se->ts[k]);
		for (size_t k = 0; k < ms->n; k++)
			snprintf(exp + strlen(exp), sizeof(exp) - strlen(exp), " %lld",
			         (long long)ms->ts[k]);
		if (strcmp(got, exp) != 0)
			fail_msg("%s: series %s has timestamps [%s ], appended [%s ]", when, name,
			         got, exp);
	}
	if (r->nseries != want)
		fail_msg("%s: the store has %zu series, %zu were appended", when, r->nseries, want);
	pd_storage_result_destroy(r);
	for (size_t i = 0; i < m->n; i++) {
		struct pd_storage_label l[2];
		labels_of(m->s[i].name, l);
		for (size_t k = 0; k < m->s[i].n; k++) {
			uint8_t *got;
			size_t glen;
			char exp[64];
			size_t elen = payload(m->s[i].name, m->s[i].ts[k], exp, sizeof(exp));
			if (pd_tsdb_read(db, l, 2, m->s[i].ts[k], &got, &glen, &err))
				fail_msg("%s: reading series %s at %lld: %s", when, m->s[i].name,
				         (long long)m->s[i].ts[k], err.msg);
			if (glen != elen || memcmp(got, exp, elen) != 0)
				fail_msg("%s: series %s at %lld reads \"%.*s\"", when, m->s[i].name,
				         (long long)m->s[i].ts[k], (int)glen, (const char *)got);
			free(got);
		}
	}
}

/* A series in the head keeps its ref across restarts; a series new to the head
 * (never seen, or back after a checkpoint dropped it) gets a ref never used
 * before. */
static void check_refs(struct pd_tsdb *db, struct model *m, const char *when)
{
	uint64_t before = m->maxref;
	for (size_t i = 0; i < m->n; i++) {
		struct model_series *ms = &m->s[i];
		struct pd_lpair l[2] = {{"job", "refs"}, {"series", ms->name}};
		struct head_series *s = head_get(&db->head, l, 2, labels_hash(l, 2));
		if (!s) {
			ms->ref = 0; /* dropped: if it comes back, with a new ref */
			continue;
		}
		if (ms->ref && s->ref != ms->ref)
			fail_msg("%s: series %s has ref %llu, had %llu", when, ms->name,
			         (unsigned long long)s->ref, (unsigned long long)ms->ref);
		if (!ms->ref && s->ref <= before)
			fail_msg("%s: series %s is new to the head with ref %llu, used before "
			         "(refs up to %llu seen)",
			         when, ms->name, (unsigned long long)s->ref,
			         (unsigned long long)before);
		ms->ref = s->ref;
		if (s->ref > m->maxref)
			m->maxref = s->ref;
	}
}

static struct pd_tsdb *open_db(const char *dir)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = 1000;
	o.retention_ms = 1000000000;
	o.wal_sync = PD_WAL_SYNC_NONE;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return db;
}

static struct pd_tsdb *reopen(struct pd_tsdb *db, const char *dir, struct model *m,
                              const char *when)
{
	check_refs(db, m, when);
	pd_tsdb_close(db);
	db = open_db(dir);
	check(db, m, when);
	check_refs(db, m, when);
	return db;
}

static void flush(struct pd_tsdb *db, int all)
{
	struct pd_err err = {0};
	if (pd_tsdb_flush(db, all, &err))
		fail_msg("flush: %s", err.msg);
}

/* The WAL has a checkpoint.N directory: a flush that cut the head made one. */
static int has_checkpoint(const char *dir)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/wal", dir);
	DIR *d = opendir(p);
	struct dirent *e;
	int found = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		found |= strncmp(e->d_name, "checkpoint.", 11) == 0;
	closedir(d);
	return found;
}

/* Series A, B, C; A goes inactive and a head cut's checkpoint drops it; after a
 * restart, C and B are appended to and D is new; after the next restart each
 * series must hold its own profiles. Then C goes inactive and is dropped, E is
 * new, and later C comes back and F is new; each reopen checks everything. */
static void test_refs_across_restarts(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct model m = {0};
	struct pd_tsdb *db = open_db(dir);

	/* run 1 */
	put(db, &m, "A", 100);
	put(db, &m, "B", 100);
	put(db, &m, "C", 100);
	put(db, &m, "B", 1100);
	put(db, &m, "C", 1100);
	put(db, &m, "B", 2100);
	put(db, &m, "C", 2100);
	put(db, &m, "B", 2600);
	flush(db, 0); /* blocks up to 2000; the checkpoint keeps B and C, not A */
	assert_true(has_checkpoint(dir));
	check(db, &m, "run 1 after the head cut");
	db = reopen(db, dir, &m, "run 2 opened");

	/* run 2: C, B, then a new series D */
	put(db, &m, "C", 2700);
	put(db, &m, "B", 2800);
	put(db, &m, "D", 2900);
	check(db, &m, "run 2 after appends");
	db = reopen(db, dir, &m, "run 3 opened");

	/* run 3: C goes inactive; E is new; a head cut drops C from the WAL */
	put(db, &m, "B", 3100);
	put(db, &m, "D", 3100);
	put(db, &m, "E", 3200);
	put(db, &m, "B", 4100);
	put(db, &m, "D", 4100);
	put(db, &m, "E", 4100);
	put(db, &m, "B", 5100);
	put(db, &m, "D", 5100);
	put(db, &m, "E", 5200);
	flush(db, 0); /* blocks up to 4000: C's newest is 2700, so C is dropped */
	check(db, &m, "run 3 after the head cut");
	db = reopen(db, dir, &m, "run 4 opened");

	/* run 4: F is new, C comes back, B and E go on; D goes inactive */
	put(db, &m, "F", 5300);
	put(db, &m, "C", 5400);
	put(db, &m, "B", 5500);
	put(db, &m, "E", 5600);
	check(db, &m, "run 4 after appends");
	db = reopen(db, dir, &m, "run 5 opened");

	/* run 5: a head cut keeps everything newer than 6000 only */
	put(db, &m, "G", 6100);
	put(db, &m, "C", 6200);
	put(db, &m, "F", 7100);
	put(db, &m, "G", 7200);
	flush(db, 0);
	check(db, &m, "run 5 after the head cut");
	db = reopen(db, dir, &m, "run 6 opened");
	put(db, &m, "D", 7300);
	put(db, &m, "A", 7400);
	db = reopen(db, dir, &m, "run 7 opened");
	flush(db, 1);
	check(db, &m, "run 7 after persisting everything");
	db = reopen(db, dir, &m, "run 8 opened");
	pd_tsdb_close(db);
	rmdir_all(dir);
}

static void wal_series(struct pd_wal *w, uint64_t ref, const char *name)
{
	struct pd_err err = {0};
	struct pd_lpair l[2] = {{"job", "refs"}, {"series", name}};
	if (pd_wal_add_series(w, ref, l, 2, &err))
		fail_msg("WAL series %llu: %s", (unsigned long long)ref, err.msg);
}

static void wal_sample(struct pd_wal *w, struct model *m, uint64_t ref, const char *name, int64_t t)
{
	struct pd_err err = {0};
	char p[64];
	size_t len = payload(name, t, p, sizeof(p));
	if (pd_wal_add_sample(w, ref, t, (const uint8_t *)p, len, &err))
		fail_msg("WAL sample %llu: %s", (unsigned long long)ref, err.msg);
	model_add(m, name, t);
}

static void wal_commit(struct pd_wal *w)
{
	struct pd_err err = {0};
	if (pd_wal_commit(w, &err))
		fail_msg("WAL commit: %s", err.msg);
}

/* The records earlier versions wrote after a checkpoint dropped series 1: the
 * checkpoint's series(2,B) and series(3,C), then, after a restart that numbered B
 * 1 and C 2, series(2,C) with C's samples, series(1,B) with B's, and series(3,D)
 * for a new D. A later entry for a ref names the series of the samples after it. */
static void test_wal_of_earlier_versions(void **state)
{
	(void)state;
	char *dir = tmpdir();
	char wdir[512];
	struct model m = {0};
	struct pd_err err = {0};
	struct pd_wal *w;
	struct pd_wal_opts wo = {.sync = PD_WAL_SYNC_NONE};
	snprintf(wdir, sizeof(wdir), "%s/wal", dir);
	assert_int_equal(mkdir(wdir, 0755), 0);
	if (pd_wal_open(&w, wdir, &wo, &err))
		fail_msg("WAL open: %s", err.msg);
	wal_series(w, 2, "B");
	wal_series(w, 3, "C");
	wal_sample(w, &m, 2, "B", 2100);
	wal_sample(w, &m, 3, "C", 2100);
	wal_commit(w);
	wal_series(w, 2, "C");
	wal_sample(w, &m, 2, "C", 2700);
	wal_commit(w);
	wal_series(w, 1, "B");
	wal_sample(w, &m, 1, "B", 2800);
	wal_commit(w);
	wal_series(w, 3, "D");
	wal_sample(w, &m, 3, "D", 2900);
	wal_commit(w);
	/* and the same series twice under one ref, as a re-logged series is */
	wal_series(w, 1, "B");
	wal_sample(w, &m, 1, "B", 3000);
	wal_sample(w, &m, 2, "C", 3000);
	wal_sample(w, &m, 3, "D", 3000);
	wal_commit(w);
	pd_wal_close(w);

	struct pd_tsdb *db = open_db(dir);
	check(db, &m, "a WAL of earlier versions replayed");
	/* new series and appends to the old ones, then restarts and head cuts */
	put(db, &m, "E", 3100);
	put(db, &m, "C", 3200);
	put(db, &m, "B", 3300);
	put(db, &m, "D", 3400);
	db = reopen(db, dir, &m, "reopened after appends");
	put(db, &m, "B", 4100);
	put(db, &m, "E", 4200);
	put(db, &m, "B", 5100);
	put(db, &m, "E", 5200);
	flush(db, 0); /* blocks up to 4000: C and D are dropped */
	check(db, &m, "after the head cut");
	db = reopen(db, dir, &m, "reopened after the head cut");
	put(db, &m, "F", 5300);
	put(db, &m, "D", 5400);
	put(db, &m, "C", 5500);
	db = reopen(db, dir, &m, "reopened with C and D back");
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* A ref may be any number below 2^62: the head takes it as it is (its tables do
 * not grow with it) and gives new series refs past it; an entry at 2^62 or more
 * is damage, skipped with its samples. */
static void test_large_refs(void **state)
{
	(void)state;
	char *dir = tmpdir();
	char wdir[512];
	struct model m = {0};
	struct pd_err err = {0};
	struct pd_wal *w;
	struct pd_wal_opts wo = {.sync = PD_WAL_SYNC_NONE};
	const uint64_t big = (uint64_t)1 << 40, bad = (uint64_t)1 << 62;
	snprintf(wdir, sizeof(wdir), "%s/wal", dir);
	assert_int_equal(mkdir(wdir, 0755), 0);
	if (pd_wal_open(&w, wdir, &wo, &err))
		fail_msg("WAL open: %s", err.msg);
	wal_series(w, big, "H");
	wal_sample(w, &m, big, "H", 1000);
	wal_commit(w);
	wal_series(w, bad, "X");
	assert_int_equal(pd_wal_add_sample(w, bad, 1000, (const uint8_t *)"x", 1, &err), 0);
	wal_commit(w);
	pd_wal_close(w);

	struct pd_tsdb *db = open_db(dir);
	check(db, &m, "a WAL with a large ref replayed");
	put(db, &m, "N", 1100);
	struct pd_lpair h[2] = {{"job", "refs"}, {"series", "H"}};
	struct pd_lpair n[2] = {{"job", "refs"}, {"series", "N"}};
	struct head_series *sh = head_get(&db->head, h, 2, labels_hash(h, 2));
	struct head_series *sn = head_get(&db->head, n, 2, labels_hash(n, 2));
	assert_non_null(sh);
	assert_non_null(sn);
	assert_int_equal(sh->ref, big);
	assert_int_equal(sn->ref, big + 1);
	db = reopen(db, dir, &m, "reopened");
	pd_tsdb_close(db);
	rmdir_all(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refs_across_restarts),
	    cmocka_unit_test(test_wal_of_earlier_versions),
	    cmocka_unit_test(test_large_refs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
