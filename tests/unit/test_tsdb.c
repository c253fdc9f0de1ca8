/* test_tsdb.c: the storage engine end to end: appends and commits, out-of-order
 * refusal, queries by matchers over the head (equality matchers by their
 * postings), WAL replay after a restart,
 * persisting the head as blocks, compaction, retention, label listings,
 * concurrent appenders and readers, and group commit: many threads committing at
 * once (fewer fsyncs than commits, everything acknowledged replayed), commits to
 * one series racing, a failed group write, and commits during flushes. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "tsdb_int.h"
#include "wal_int.h"

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
	char *d = strdup("/tmp/pd_test_tsdb_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

/* A real profile that differs a little per (series, t), as scrapes of one process
 * do: the same symbols, values that grow with t, and every seventh one with a
 * stack of its own. Every fourth series' payloads are not profiles at all (the
 * store keeps any bytes). Raw protobuf, malloc'd. */
static uint8_t *payload(int series, int64_t t, size_t *len)
{
	if (series % 4 == 3) {
		*len = 3000 + (size_t)(t % 500);
		uint8_t *p = malloc(*len);
		for (size_t i = 0; i < *len; i++)
			p[i] = (uint8_t)(i * 31 + (i % 200 == 0 ? (uint64_t)t + (uint64_t)series : 0));
		return p;
	}
	static const char *strs[] = {"", "alloc_space", "bytes", "main.main", "main.go",
				     "runtime.malg", "proc.go", "main.leak", "/bin/app", "space"};
	size_t lens[10];
	for (int i = 0; i < 10; i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_pvt st = {1, 2}, pt = {9, 2};
	struct pd_pprof_pmapping map = {1, 0x400000, 0x800000, 0, 8, 0, 1, 1, 1, 0};
	struct pd_pprof_pfunction fns[3] = {{1, 3, 3, 4, 10}, {2, 5, 5, 6, 400}, {3, 7, 7, 4, 20}};
	struct pd_pprof_pline ln[3] = {{1, 12, 0}, {2, 410, 0}, {3, 22 + series, 0}};
	struct pd_pprof_plocation locs[3] = {{1, 1, 0x401000, &ln[0], 1, 0},
					     {2, 1, 0x402000, &ln[1], 1, 0},
					     {3, 1, 0x403000 + (uint64_t)series * 16, &ln[2], 1, 0}};
	uint64_t s1[] = {2, 1}, s2[] = {3, 1}, s3[] = {3};
	int64_t v[3] = {1000 * t + series, 512 * t, 7};
	struct pd_pprof_plabel lb = {9, 0, 512 + series, 2};
	struct pd_pprof_psample samples[3] = {{s1, 2, &v[0], 1, NULL, 0},
					      {s2, 2, &v[1], 1, &lb, 1},
					      {s3, 1, &v[2], 1, NULL, 0}};
	struct pd_pprof_parts p = {0};
	p.strings = strs;
	p.string_len = lens;
	p.nstrings = 10;
	p.sample_type = &st;
	p.nsample_type = 1;
	p.sample = samples;
	p.nsample = t % 7 == 0 ? 3 : 2;
	p.mapping = &map;
	p.nmapping = 1;
	p.location = locs;
	p.nlocation = 3;
	p.function = fns;
	p.nfunction = 3;
	p.has_period_type = 1;
	p.period_type = pt;
	p.period = 524288;
	p.time_nanos = t * 1000000;
	uint8_t *out;
	struct pd_err err = {0};
	if (pd_pprof_parts_encode(&p, &out, len, &err))
		fail_msg("payload: %s", err.msg);
	return out;
}

/* Fails unless got is what payload(series, t) gave: the same bytes, or (for a
 * profile) the same profile field for field. */
static void assert_payload(const uint8_t *got, size_t glen, int series, int64_t t)
{
	size_t wlen;
	uint8_t *want = payload(series, t, &wlen);
	if (glen != wlen || memcmp(got, want, wlen) != 0) {
		struct pd_pprof_profile *a, *b;
		struct pd_err err = {0};
		char why[256];
		if (pd_pprof_decode(&a, want, wlen, NULL, &err))
			fail_msg("series %d at %lld: %zu bytes read back, %zu stored", series,
				 (long long)t, glen, wlen);
		if (pd_pprof_decode(&b, got, glen, NULL, &err))
			fail_msg("series %d at %lld: stored profile does not decode: %s", series,
				 (long long)t, err.msg);
		if (pd_pprof_compare(a, b, why, sizeof(why)))
			fail_msg("series %d at %lld: %s", series, (long long)t, why);
		pd_pprof_destroy(a);
		pd_pprof_destroy(b);
	}
	free(want);
}

static void labels_for(int series, char *job, struct pd_storage_label l[3])
{
	snprintf(job, 32, "job%d", series % 3);
	l[0] = (struct pd_storage_label){"__name__", series % 2 ? "heap" : "cpu"};
	l[1] = (struct pd_storage_label){"instance", series < 5 ? "a:1" : "b:2"};
	l[2] = (struct pd_storage_label){"job", job};
}

static void append_range(struct pd_tsdb *db, int nseries, int64_t from, int64_t to, int64_t step)
{
	struct pd_err err = {0};
	for (int64_t t = from; t < to; t += step) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int s = 0; s < nseries; s++) {
			char job[32];
			struct pd_storage_label l[3];
			labels_for(s, job, l);
			size_t len;
			uint8_t *p = payload(s, t, &len);
			if (pd_tsdb_append(a, l, 3, t, p, len, &err))
				fail_msg("append: %s", err.msg);
			free(p);
		}
		if (pd_tsdb_commit(a, &err))
			fail_msg("commit: %s", err.msg);
	}
}

/* Every series has every timestamp of [from, to) by step, and each profile reads back. */
static void check_all(struct pd_tsdb *db, int nseries, int64_t from, int64_t to, int64_t step)
{
	struct pd_err err = {0};
	struct pd_storage_matcher any = {"instance", eq_match, "a:1"};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(db, &any, 1, from, to, 0, &r, &err), 0);
	assert_int_equal(r->nseries, nseries < 5 ? nseries : 5);
	size_t want = (size_t)((to - from + step - 1) / step);
	for (size_t i = 0; i < r->nseries; i++) {
		assert_int_equal(r->series[i].nts, want);
		for (size_t k = 0; k < r->series[i].nts; k++)
			assert_int_equal(r->series[i].ts[k], from + (int64_t)k * step);
	}
	pd_storage_result_destroy(r);
	for (int s = 0; s < nseries; s++) {
		char job[32];
		struct pd_storage_label l[3];
		labels_for(s, job, l);
		for (int64_t t = from; t < to; t += step * 7) {
			uint8_t *got;
			size_t glen;
			if (pd_tsdb_read(db, l, 3, t, &got, &glen, &err))
				fail_msg("read series %d at %lld: %s", s, (long long)t, err.msg);
			assert_payload(got, glen, s, t);
			free(got);
		}
	}
}

static struct pd_tsdb *open_db(const char *dir, int64_t block_range, int64_t retention)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = block_range;
	o.retention_ms = retention;
	o.wal_sync = 1;
	o.chunk_samples = 40;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	return db;
}

static void test_append_select_read(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 3600000, 0);
	append_range(db, 8, 1000000, 1000000 + 100 * 15000, 15000);
	check_all(db, 8, 1000000, 1000000 + 100 * 15000, 15000);

	/* matchers: name and a negative matcher */
	struct pd_err err = {0};
	struct pd_storage_matcher m[2] = {{"__name__", eq_match, "heap"}, {"job", eq_match, "job1"}};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(db, m, 2, 0, INT64_MAX, 0, &r, &err), 0);
	/* heap = odd series 1,3,5,7; job1 = series%3==1: 1,7 */
	assert_int_equal(r->nseries, 2);
	assert_string_equal(r->series[0].labels[0].value, "heap");
	pd_storage_result_destroy(r);
	/* a range that holds nothing */
	assert_int_equal(pd_tsdb_select(db, m, 2, 0, 999999, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 0);
	pd_storage_result_destroy(r);

	/* out of order and duplicate samples are refused with the series named */
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	char job[32];
	struct pd_storage_label l[3];
	labels_for(1, job, l);
	assert_int_equal(pd_tsdb_append(a, l, 3, 1000000, (const uint8_t *)"x", 1, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "out of order"));
	assert_non_null(strstr(err.msg, "heap{"));
	assert_int_equal(pd_tsdb_append(a, l, 3, 1000000 + 99 * 15000, (const uint8_t *)"x", 1, &err),
			 PD_EINVAL);
	assert_non_null(strstr(err.msg, "duplicate"));
	pd_tsdb_rollback(a);

	/* label listings */
	char **v;
	size_t n;
	assert_int_equal(pd_tsdb_label_names(db, NULL, 0, 0, INT64_MAX, &v, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0], "__name__");
	assert_string_equal(v[2], "job");
	pd_storage_strings_free(v, n);
	assert_int_equal(pd_tsdb_label_values(db, "job", NULL, 0, 0, INT64_MAX, &v, &n, &err), 0);
	assert_int_equal(n, 3);
	pd_storage_strings_free(v, n);
	assert_int_equal(pd_tsdb_label_values(db, "job", m, 1, 0, INT64_MAX, &v, &n, &err), 0);
	assert_int_equal(n, 3); /* heap series are in every job */
	pd_storage_strings_free(v, n);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* pd_tsdb_select of a selector through each form of its matchers: parsed
 * (pd_storage_matchers_from_selector, whose `=` matchers read their postings
 * directly), and hand-made with pd_storage_match_equal or with a predicate the
 * querier cannot see into (run over every value of the label). */
static void select_three_ways(struct pd_tsdb *db, const char *sel)
{
	struct pd_err err = {0};
	struct pd_labels_selector *ps;
	struct pd_storage_matcher *pm;
	size_t npm;
	if (pd_labels_selector_parse(&ps, sel, strlen(sel), NULL, &err) ||
	    pd_storage_matchers_from_selector(ps, &pm, &npm, &err))
		fail_msg("%s: %s", sel, err.msg);
	struct pd_storage_result *r[3];
	assert_int_equal(pd_tsdb_select(db, pm, npm, 0, INT64_MAX, 0, &r[0], &err), 0);
	/* the same, when every matcher of the selector is an equality */
	struct pd_storage_matcher eq[8], pred[8];
	int all_eq = 1;
	for (size_t i = 0; i < npm && i < 8; i++) {
		const struct pd_labels_matcher *lm = ps->matchers[i];
		all_eq &= pd_labels_matcher_type(lm) == PD_LABELS_MATCH_EQUAL;
		eq[i] = (struct pd_storage_matcher){pd_labels_matcher_name(lm), pd_storage_match_equal,
						 pd_labels_matcher_value(lm)};
		pred[i] = (struct pd_storage_matcher){pd_labels_matcher_name(lm), eq_match,
						   pd_labels_matcher_value(lm)};
	}
	if (all_eq) {
		assert_int_equal(pd_tsdb_select(db, eq, npm, 0, INT64_MAX, 0, &r[1], &err), 0);
		assert_int_equal(pd_tsdb_select(db, pred, npm, 0, INT64_MAX, 0, &r[2], &err), 0);
		for (int k = 1; k < 3; k++) {
			assert_int_equal(r[k]->nseries, r[0]->nseries);
			for (size_t i = 0; i < r[0]->nseries; i++) {
				const struct pd_storage_series *a = &r[0]->series[i], *b = &r[k]->series[i];
				assert_int_equal(a->nlabels, b->nlabels);
				for (size_t j = 0; j < a->nlabels; j++)
					assert_string_equal(a->labels[j].value, b->labels[j].value);
				assert_int_equal(a->nts, b->nts);
				assert_memory_equal(a->ts, b->ts, a->nts * sizeof(*a->ts));
			}
			pd_storage_result_destroy(r[k]);
		}
	}
	print_message("%s: %zu series\n", sel, r[0]->nseries);
	pd_storage_result_destroy(r[0]);
	free(pm);
	pd_labels_selector_destroy(ps);
}

/* Selection by equality matchers reads each value's postings list directly,
 * and selects what running the matcher over every value does: in the head,
 * in blocks, and across both. */
static void test_select_equality(void **state)
{
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = open_db(dir, 100000, -1);
	append_range(db, 8, 0, 1000000, 5000);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0); /* blocks, and the newest in the head */
	static const char *const sels[] = {
	    "heap{job=\"job1\"}",       "{instance=\"a:1\"}", "cpu{instance=\"b:2\",job=\"job0\"}",
	    "{job=\"nope\"}",           "heap{nope=\"\"}",     "{__name__=\"heap\",job=~\"job1|job2\"}",
	    "{instance!=\"a:1\",job=\"job2\"}",
	};
	for (size_t i = 0; i < sizeof(sels) / sizeof(sels[0]); i++)
		select_three_ways(db, sels[i]);
	/* counts: heap = odd series; job1 = 1, 4, 7; a:1 = series 0..4 */
	struct pd_storage_matcher m[2] = {{"__name__", pd_storage_match_equal, "heap"},
				       {"job", pd_storage_match_equal, "job1"}};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(db, m, 2, 0, INT64_MAX, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 2);
	assert_int_equal(r->series[0].nts, 200);
	pd_storage_result_destroy(r);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

static void test_restart_replays_wal(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 3600000, 0);
	append_range(db, 6, 0, 50 * 10000, 10000);
	pd_tsdb_close(db);
	db = open_db(dir, 3600000, 0);
	check_all(db, 6, 0, 50 * 10000, 10000);
	/* and appending goes on where it stopped */
	append_range(db, 6, 50 * 10000, 60 * 10000, 10000);
	pd_tsdb_close(db);
	db = open_db(dir, 3600000, 0);
	check_all(db, 6, 0, 60 * 10000, 10000);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* Read-only opens (the tsdb tools, beside a running daemon) never change the WAL,
 * even when its tail is torn; a read-write open repairs it. */
static void test_read_only_leaves_wal(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 3600000, 0);
	append_range(db, 2, 0, 10 * 1000, 1000);
	pd_tsdb_close(db);
	char seg[512];
	snprintf(seg, sizeof(seg), "%s/wal/00000001", dir);
	struct stat st;
	assert_int_equal(stat(seg, &st), 0);
	off_t torn = st.st_size - 10;
	assert_int_equal(truncate(seg, torn), 0);

	struct pd_tsdb_opts o;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.read_only = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_storage_stats ts;
	pd_tsdb_stats(db, &ts);
	assert_int_equal(ts.head_samples, 2 * 9); /* the last commit was torn */
	assert_int_equal(ts.wal_repaired, 1);
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_int_equal(pd_tsdb_commit(a, &err), PD_EINVAL);
	pd_tsdb_close(db);
	assert_int_equal(stat(seg, &st), 0);
	assert_int_equal(st.st_size, torn);

	db = open_db(dir, 3600000, 0); /* read-write: cut at the last whole record */
	pd_tsdb_close(db);
	assert_int_equal(stat(seg, &st), 0);
	assert_true(st.st_size < torn);

	/* a block the daemon is writing (<ulid>.tmp) or deleting (.deleted) is left
	 * alone by a read-only open; a read-write open clears what a crash left */
	char tmpb[512], delb[512];
	snprintf(tmpb, sizeof(tmpb), "%s/01JAAAAAAAAAAAAAAAAAAAAAAA.tmp", dir);
	snprintf(delb, sizeof(delb), "%s/01JBBBBBBBBBBBBBBBBBBBBBBB.deleted", dir);
	assert_int_equal(mkdir(tmpb, 0755), 0);
	assert_int_equal(mkdir(delb, 0755), 0);
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	pd_tsdb_close(db);
	assert_int_equal(stat(tmpb, &st), 0);
	assert_int_equal(stat(delb, &st), 0);
	db = open_db(dir, 3600000, 0);
	pd_tsdb_close(db);
	assert_int_not_equal(stat(tmpb, &st), 0);
	assert_int_not_equal(stat(delb, &st), 0);
	rmdir_all(dir);
}

/* A reader beside a live daemon (tsdb analyze) reports the WAL's real size: the
 * segments on disk, as the writer counts them, not 0. */
static void test_read_only_wal_size(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 3600000, 0);
	append_range(db, 3, 0, 20 * 1000, 1000);
	struct pd_storage_stats live, ro;
	pd_tsdb_stats(db, &live);
	assert_true(live.wal_bytes > 0);

	struct pd_tsdb_opts o;
	struct pd_err err = {0};
	struct pd_tsdb *rdb;
	pd_tsdb_opts_init(&o);
	o.read_only = 1;
	assert_int_equal(pd_tsdb_open(&rdb, dir, &o, &err), 0);
	pd_tsdb_stats(rdb, &ro);
	assert_int_equal(ro.head_samples, 3 * 20);
	assert_int_equal(ro.wal_bytes, live.wal_bytes);
	/* what is on disk: the segment files under wal/ */
	char seg[512];
	struct stat st;
	uint64_t sum = 0;
	for (int i = 0; i < 16; i++) {
		snprintf(seg, sizeof(seg), "%s/wal/%08d", dir, i);
		if (stat(seg, &st) == 0)
			sum += (uint64_t)st.st_size;
	}
	assert_int_equal(ro.wal_bytes, sum);
	pd_tsdb_close(rdb);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

static void test_flush_compact_retention(void **state)
{
	char *dir = tmpdir();
	struct pd_err err = {0};
	/* blocks of 100 s; 30 windows of data */
	struct pd_tsdb *db = open_db(dir, 100000, -1);
	append_range(db, 6, 0, 3000000, 5000);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.blocks >= 1);
	assert_true(st.compactions >= 1); /* 3-window and 9-window ranges were filled */
	assert_true(st.head_samples > 0); /* the newest half range stays in the head */
	check_all(db, 6, 0, 3000000, 5000);
	/* a limit caps the series, not the timestamps of a series in blocks and head */
	struct pd_storage_matcher inst = {"instance", eq_match, "a:1"};
	struct pd_storage_result *lr;
	assert_int_equal(pd_tsdb_select(db, &inst, 1, 0, 3000000, 1, &lr, &err), 0);
	assert_int_equal(lr->nseries, 1);
	assert_int_equal(lr->series[0].nts, 600);
	pd_storage_result_destroy(lr);
	/* everything out of the head, then a restart: all from blocks */
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_samples, 0);
	pd_tsdb_close(db);
	db = open_db(dir, 100000, -1);
	check_all(db, 6, 0, 3000000, 5000);
	pd_tsdb_close(db);

	/* retention: blocks that end 300 s or more before the newest sample go; the
	 * compacted block [0 s, 2700 s) is one of them */
	db = open_db(dir, 100000, 300000);
	append_range(db, 6, 3000000, 3100000, 5000);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_true(st.retention_deletions >= 1);
	struct pd_storage_matcher any = {"instance", eq_match, "a:1"};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(db, &any, 1, 0, INT64_MAX, 0, &r, &err), 0);
	assert_true(r->nseries > 0);
	assert_true(r->series[0].ts[0] >= 2700000);
	assert_int_equal(r->series[0].ts[r->series[0].nts - 1], 3095000);
	pd_storage_result_destroy(r);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

struct thr {
	struct pd_tsdb *db;
	int id;
	int errors;
};

static void *writer(void *arg)
{
	struct thr *t = arg;
	struct pd_err err = {0};
	char inst[32];
	snprintf(inst, sizeof(inst), "w%d", t->id);
	for (int64_t ts = 1; ts <= 200; ts++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(t->db);
		struct pd_storage_label l[2] = {{"__name__", "heap"}, {"instance", inst}};
		uint8_t p[64];
		memset(p, (int)ts, sizeof(p));
		if (pd_tsdb_append(a, l, 2, ts * 1000, p, sizeof(p), &err) || pd_tsdb_commit(a, &err))
			t->errors++;
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct thr *t = arg;
	struct pd_err err = {0};
	struct pd_storage_matcher m = {"__name__", eq_match, "heap"};
	for (int i = 0; i < 200; i++) {
		struct pd_storage_result *r;
		if (pd_tsdb_select(t->db, &m, 1, 0, INT64_MAX, 0, &r, &err)) {
			t->errors++;
			continue;
		}
		for (size_t s = 0; s < r->nseries; s++)
			for (size_t k = 1; k < r->series[s].nts; k++)
				if (r->series[s].ts[k] <= r->series[s].ts[k - 1])
					t->errors++;
		pd_storage_result_destroy(r);
	}
	return NULL;
}

static void test_concurrency(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_db(dir, 3600000, 0);
	pthread_t th[6];
	struct thr a[6];
	for (int i = 0; i < 6; i++) {
		a[i] = (struct thr){db, i, 0};
		pthread_create(&th[i], NULL, i < 4 ? writer : reader, &a[i]);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(a[i].errors, 0);
	}
	struct pd_err err = {0};
	struct pd_storage_matcher m = {"__name__", eq_match, "heap"};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(db, &m, 1, 0, INT64_MAX, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 4);
	for (size_t s = 0; s < 4; s++)
		assert_int_equal(r->series[s].nts, 200);
	pd_storage_result_destroy(r);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* The child: appends commit after commit (three series, t = i seconds), flushing
 * now and then so that blocks, checkpoints and WAL truncation also get killed
 * midway, and reports each acknowledged commit on the pipe. */
static void crash_child(const char *dir, int fd)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = 20000;
	o.retention_ms = -1;
	o.chunk_samples = 16;
	if (pd_tsdb_open(&db, dir, &o, &err)) {
		fprintf(stderr, "child: open: %s\n", err.msg);
		_exit(3);
	}
	struct pd_storage_matcher m = {"__name__", eq_match, "heap"};
	struct pd_storage_result *r;
	int64_t next = 1;
	if (pd_tsdb_select(db, &m, 1, INT64_MIN, INT64_MAX, 0, &r, &err))
		_exit(4);
	for (size_t i = 0; i < r->nseries; i++)
		if (r->series[i].nts && r->series[i].ts[r->series[i].nts - 1] / 1000 + 1 > next)
			next = r->series[i].ts[r->series[i].nts - 1] / 1000 + 1;
	pd_storage_result_destroy(r);
	for (int64_t i = next;; i++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int s = 0; s < 3; s++) {
			char inst[16];
			snprintf(inst, sizeof(inst), "i%d", s);
			struct pd_storage_label l[2] = {{"__name__", "heap"}, {"instance", inst}};
			size_t len;
			uint8_t *p = payload(s, i, &len);
			if (pd_tsdb_append(a, l, 2, i * 1000, p, len, &err))
				_exit(5);
			free(p);
		}
		if (pd_tsdb_commit(a, &err)) {
			fprintf(stderr, "child: commit: %s\n", err.msg);
			_exit(6);
		}
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			_exit(7);
		if (i % 13 == 0 && pd_tsdb_flush(db, 0, &err)) {
			fprintf(stderr, "child: flush: %s\n", err.msg);
			_exit(8);
		}
	}
}

static void test_crash_safety(void **state)
{
	char *dir = tmpdir();
	int64_t acked = 0;
	unsigned seed = (unsigned)time(NULL);
	srand(seed);
	int rounds = 25;
	for (int round = 0; round < rounds; round++) {
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			crash_child(dir, fds[1]);
			_exit(0);
		}
		close(fds[1]);
		struct timespec ts = {0, (long)(20 + rand() % 300) * 1000000L};
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		if (WIFEXITED(status))
			fail_msg("round %d: child exited with %d before the kill", round,
				 WEXITSTATUS(status));
		int64_t i;
		while (read(fds[0], &i, sizeof(i)) == sizeof(i))
			acked = i;
		close(fds[0]);

		/* everything acknowledged is there, whole, and nothing else is broken */
		struct pd_tsdb *db = open_db(dir, 20000, -1);
		struct pd_err err = {0};
		struct pd_storage_matcher m = {"__name__", eq_match, "heap"};
		struct pd_storage_result *r;
		assert_int_equal(pd_tsdb_select(db, &m, 1, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
		if (acked)
			assert_int_equal(r->nseries, 3);
		for (size_t s = 0; s < r->nseries; s++) {
			const struct pd_storage_series *se = &r->series[s];
			/* 1..n with no gap, n >= acked (a commit may land and die before its ack) */
			if ((int64_t)se->nts < acked)
				fail_msg("round %d (seed %u): series %zu has %zu samples, %lld acknowledged",
					 round, seed, s, se->nts, (long long)acked);
			for (size_t k = 0; k < se->nts; k++)
				assert_int_equal(se->ts[k], (int64_t)(k + 1) * 1000);
			/* the newest profiles and a few old ones read back intact */
			for (size_t k = se->nts; k-- > 0 && k + 4 >= se->nts;) {
				uint8_t *got;
				size_t glen;
				int sidx = se->labels[1].value[1] - '0';
				if (pd_tsdb_read(db, se->labels, se->nlabels, se->ts[k], &got, &glen, &err))
					fail_msg("round %d: read: %s", round, err.msg);
				assert_payload(got, glen, sidx, se->ts[k] / 1000);
				free(got);
			}
		}
		pd_storage_result_destroy(r);
		pd_tsdb_close(db);
	}
	print_message("crash safety: %d kills, %lld commits acknowledged, none lost\n", rounds,
		      (long long)acked);
	rmdir_all(dir);
}

/* ---- group commit ------------------------------------------------------------ */

#define GC_DEADLINE_MS 60000 /* waits for other threads fail the test after this */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct pd_tsdb *open_sync(const char *dir, int wal_sync, int64_t block_range)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = block_range;
	o.retention_ms = -1;
	o.wal_sync = wal_sync;
	o.chunk_samples = 16;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	return db;
}

static struct pd_wal_stats wal_stats(struct pd_tsdb *db)
{
	struct pd_wal_stats st;
	pd_wal_stats(db->wal, &st);
	return st;
}

/* The WAL leader's hook: on its first call it says so, waits (up to a deadline)
 * until `want` records are queued behind its group, and, with fsize_extra set,
 * limits the file size to what is written so far plus that many bytes, so that
 * the next group's write fails part way. */
struct gc_hook {
	struct pd_tsdb *db;
	uint64_t want;
	rlim_t fsize_extra;
	int calls, entered, reached;
	pthread_mutex_t mu;
};

static void gc_before_sync(void *ctx, size_t nrecords)
{
	struct gc_hook *h = ctx;
	(void)nrecords;
	pthread_mutex_lock(&h->mu);
	int first = h->calls++ == 0;
	h->entered = 1;
	pthread_mutex_unlock(&h->mu);
	if (!first)
		return;
	int64_t deadline = mono_ms() + GC_DEADLINE_MS;
	while (wal_stats(h->db).queued < h->want && mono_ms() < deadline)
		poll(NULL, 0, 1);
	int reached = wal_stats(h->db).queued >= h->want;
	if (h->fsize_extra) {
		struct stat st;
		struct rlimit lim;
		char path[600];
		const struct pd_wal_segw *seg = &h->db->wal->seg;
		snprintf(path, sizeof(path), "%s/%08u", seg->dir, seg->num);
		if (stat(path, &st) == 0 && getrlimit(RLIMIT_FSIZE, &lim) == 0) {
			lim.rlim_cur = (rlim_t)st.st_size + h->fsize_extra;
			reached = reached && setrlimit(RLIMIT_FSIZE, &lim) == 0;
		} else {
			reached = 0;
		}
	}
	pthread_mutex_lock(&h->mu);
	h->reached = reached;
	pthread_mutex_unlock(&h->mu);
}

static void gc_wait_entered(struct gc_hook *h)
{
	int64_t deadline = mono_ms() + GC_DEADLINE_MS;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		int e = h->entered;
		pthread_mutex_unlock(&h->mu);
		if (e)
			return;
		if (mono_ms() >= deadline)
			fail_msg("no group write reached the hook in %d ms", GC_DEADLINE_MS);
		poll(NULL, 0, 1);
	}
}

/* A committing thread: series {__name__="heap", instance="g<id>"}, commits at
 * t = (first + k) * 1000 for k < count, one sample each, results kept. */
struct gc_writer {
	pthread_t th;
	struct pd_tsdb *db;
	int id;
	int64_t first;
	int count;
	int failed;
	int rc[64];
	struct pd_err err;
	pthread_barrier_t *round; /* when set, every thread's commit k ends round k */
};

static void gc_labels(int id, char *inst, struct pd_storage_label l[2])
{
	snprintf(inst, 16, "g%d", id);
	l[0] = (struct pd_storage_label){"__name__", "heap"};
	l[1] = (struct pd_storage_label){"instance", inst};
}

static int commit_one(struct pd_tsdb *db, int id, int64_t t, struct pd_err *err)
{
	char inst[16];
	struct pd_storage_label l[2];
	size_t len;
	gc_labels(id, inst, l);
	uint8_t *p = payload(id, t, &len);
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	int rc = a ? pd_tsdb_append(a, l, 2, t, p, len, err) : PD_ENOMEM;
	if (rc)
		pd_tsdb_rollback(a);
	else
		rc = pd_tsdb_commit(a, err);
	free(p);
	return rc;
}

static void *gc_write(void *arg)
{
	struct gc_writer *g = arg;
	for (int k = 0; k < g->count; k++) {
		struct pd_err err = {0};
		g->rc[k] = commit_one(g->db, g->id, (g->first + k) * 1000, &err);
		if (g->rc[k] && !g->failed++)
			g->err = err;
		if (g->round)
			pthread_barrier_wait(g->round);
	}
	return NULL;
}

static void gc_start(struct gc_writer *g, struct pd_tsdb *db, int id, int64_t first, int count,
		     pthread_barrier_t *round)
{
	memset(g, 0, sizeof(*g));
	g->round = round;
	g->db = db;
	g->id = id;
	g->first = first;
	g->count = count;
	assert_true(count <= 64);
	assert_int_equal(pthread_create(&g->th, NULL, gc_write, g), 0);
}

/* Series g<id> holds exactly the samples at (first + k) * 1000, k < count, and
 * each reads back as committed. */
static void expect_series(struct pd_tsdb *db, int id, int64_t first, int count)
{
	char inst[16];
	struct pd_storage_label l[2];
	struct pd_err err = {0};
	struct pd_storage_result *r;
	gc_labels(id, inst, l);
	struct pd_storage_matcher m = {"instance", eq_match, inst};
	assert_int_equal(pd_tsdb_select(db, &m, 1, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 1);
	if (r->series[0].nts != (size_t)count)
		fail_msg("series %s has %zu samples, %d were acknowledged", inst, r->series[0].nts,
			 count);
	for (int k = 0; k < count; k++) {
		int64_t t = (first + k) * 1000;
		assert_int_equal(r->series[0].ts[k], t);
		uint8_t *got;
		size_t glen;
		if (pd_tsdb_read(db, l, 2, t, &got, &glen, &err))
			fail_msg("read %s at %lld: %s", inst, (long long)t, err.msg);
		assert_payload(got, glen, id, t);
		free(got);
	}
	pd_storage_result_destroy(r);
}

#define GC_THREADS 8
#define GC_COMMITS 25

/* Threads committing at once with an fsync per commit promised (wal_sync 0):
 * every acknowledged commit is replayed after a reopen, and groups share fsyncs,
 * so there are fewer fsyncs than commits. The first thread starts alone and, as
 * leader of the first group, waits in its hook until every other thread has
 * queued a commit, so that a shared fsync is certain on any machine. */
static void test_group_commit(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_sync(dir, 0, 3600000);
	struct gc_hook h = {.db = db, .want = GC_THREADS - 1};
	struct gc_writer g[GC_THREADS];
	pthread_mutex_init(&h.mu, NULL);
	db->wal->before_sync = gc_before_sync;
	db->wal->hook_ctx = &h;
	gc_start(&g[0], db, 0, 1, GC_COMMITS, NULL);
	gc_wait_entered(&h);
	for (int i = 1; i < GC_THREADS; i++)
		gc_start(&g[i], db, i, 1, GC_COMMITS, NULL);
	for (int i = 0; i < GC_THREADS; i++) {
		pthread_join(g[i].th, NULL);
		if (g[i].failed)
			fail_msg("thread %d: %d commits failed: %s", i, g[i].failed, g[i].err.msg);
	}
	assert_true(h.reached);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	print_message("group commit: %" PRIu64 " commits, %" PRIu64 " writes, %" PRIu64
		      " fsyncs\n",
		      st.wal_records, st.wal_writes, st.wal_fsyncs);
	assert_int_equal(st.wal_records, GC_THREADS * GC_COMMITS);
	assert_int_equal(st.head_samples, GC_THREADS * GC_COMMITS);
	assert_true(st.wal_fsyncs > 0);
	assert_true(st.wal_fsyncs < st.wal_records);
	assert_int_equal(st.wal_fsyncs, st.wal_writes);
	assert_int_equal(st.wal_failed_writes, 0);
	db->wal->before_sync = NULL;
	pd_tsdb_close(db);

	db = open_sync(dir, 1, 3600000);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_samples, GC_THREADS * GC_COMMITS);
	for (int i = 0; i < GC_THREADS; i++)
		expect_series(db, i, 1, GC_COMMITS);
	pd_tsdb_close(db);
	pthread_mutex_destroy(&h.mu);
	rmdir_all(dir);
}

#define SS_THREADS 8
#define SS_COMMITS 30

/* Threads committing to one series: timestamps are drawn in turn, and a thread
 * draws the next only once the commit of the previous draw has its place in the
 * WAL queue, so every commit is in order when it is checked, while the commits
 * themselves (the fsync, the head append) overlap. None may be refused, and the
 * series must hold every timestamp, in order, before and after a reopen. Each
 * commit also appends to the thread's own series, so commits span two series
 * in different combinations. */
struct ss_shared {
	struct pd_tsdb *db;
	pthread_mutex_t mu;
	int64_t drawn;      /* timestamps handed out (1, 2, ...) */
	uint64_t refused;   /* commits that failed */
	uint64_t base;      /* records queued before the test */
	int timeout;
};

struct ss_thread {
	pthread_t th;
	struct ss_shared *sh;
	int id;
	int64_t mine[SS_COMMITS]; /* the timestamps this thread committed */
	int failed;
	struct pd_err err;
};

static void *ss_run(void *arg)
{
	struct ss_thread *t = arg;
	struct ss_shared *sh = t->sh;
	for (int k = 0; k < SS_COMMITS; k++) {
		pthread_mutex_lock(&sh->mu);
		/* the commit of the previous draw is queued (or failed) */
		int64_t deadline = mono_ms() + GC_DEADLINE_MS;
		while (wal_stats(sh->db).enqueued - sh->base + __atomic_load_n(&sh->refused, __ATOMIC_SEQ_CST) <
			       (uint64_t)sh->drawn &&
		       mono_ms() < deadline)
			poll(NULL, 0, 0);
		if (mono_ms() >= deadline)
			sh->timeout = 1;
		int64_t ts = ++sh->drawn;
		pthread_mutex_unlock(&sh->mu);

		struct pd_err err = {0};
		char inst[16];
		struct pd_storage_label ls[2] = {{"__name__", "heap"}, {"instance", "shared"}};
		struct pd_storage_label lo[2];
		gc_labels(t->id, inst, lo);
		size_t n1, n2;
		uint8_t *p1 = payload(100, ts * 1000, &n1), *p2 = payload(t->id, ts * 1000, &n2);
		struct pd_tsdb_appender *a = pd_tsdb_appender(sh->db);
		int rc = !a ? PD_ENOMEM : 0;
		/* half the commits name the shared series first, half their own */
		if (!rc && k % 2)
			rc = pd_tsdb_append(a, ls, 2, ts * 1000, p1, n1, &err);
		if (!rc)
			rc = pd_tsdb_append(a, lo, 2, ts * 1000, p2, n2, &err);
		if (!rc && !(k % 2))
			rc = pd_tsdb_append(a, ls, 2, ts * 1000, p1, n1, &err);
		if (rc)
			pd_tsdb_rollback(a);
		else
			rc = pd_tsdb_commit(a, &err);
		free(p1);
		free(p2);
		t->mine[k] = ts;
		if (rc) {
			__atomic_add_fetch(&sh->refused, 1, __ATOMIC_SEQ_CST);
			if (!t->failed++)
				t->err = err;
		}
	}
	return NULL;
}

static void check_shared(struct pd_tsdb *db, struct ss_thread *th)
{
	struct pd_err err = {0};
	struct pd_storage_result *r;
	struct pd_storage_matcher m = {"instance", eq_match, "shared"};
	struct pd_storage_label ls[2] = {{"__name__", "heap"}, {"instance", "shared"}};
	assert_int_equal(pd_tsdb_select(db, &m, 1, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 1);
	assert_int_equal(r->series[0].nts, SS_THREADS * SS_COMMITS);
	for (size_t k = 0; k < r->series[0].nts; k++)
		assert_int_equal(r->series[0].ts[k], (int64_t)(k + 1) * 1000);
	for (size_t k = 0; k < r->series[0].nts; k += 7) {
		uint8_t *got;
		size_t glen;
		assert_int_equal(pd_tsdb_read(db, ls, 2, r->series[0].ts[k], &got, &glen, &err), 0);
		assert_payload(got, glen, 100, r->series[0].ts[k]);
		free(got);
	}
	pd_storage_result_destroy(r);
	/* each thread's own series holds its draws, in order */
	for (int i = 0; i < SS_THREADS; i++) {
		char inst[16];
		struct pd_storage_label lo[2];
		gc_labels(i, inst, lo);
		struct pd_storage_matcher mo = {"instance", eq_match, inst};
		assert_int_equal(pd_tsdb_select(db, &mo, 1, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
		assert_int_equal(r->nseries, 1);
		assert_int_equal(r->series[0].nts, SS_COMMITS);
		for (int k = 0; k < SS_COMMITS; k++)
			assert_int_equal(r->series[0].ts[k], th[i].mine[k] * 1000);
		pd_storage_result_destroy(r);
	}
}

static void test_same_series_concurrent(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_sync(dir, 0, 3600000);
	struct ss_shared sh = {.db = db};
	struct ss_thread th[SS_THREADS];
	pthread_mutex_init(&sh.mu, NULL);
	sh.base = wal_stats(db).enqueued;
	for (int i = 0; i < SS_THREADS; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].sh = &sh;
		th[i].id = i;
		assert_int_equal(pthread_create(&th[i].th, NULL, ss_run, &th[i]), 0);
	}
	for (int i = 0; i < SS_THREADS; i++)
		pthread_join(th[i].th, NULL);
	assert_false(sh.timeout);
	for (int i = 0; i < SS_THREADS; i++)
		if (th[i].failed)
			fail_msg("thread %d: %d commits refused: %s", i, th[i].failed, th[i].err.msg);
	check_shared(db, th);
	pd_tsdb_close(db);
	db = open_sync(dir, 1, 3600000);
	check_shared(db, th);
	pd_tsdb_close(db);
	pthread_mutex_destroy(&sh.mu);
	rmdir_all(dir);
}

#define GF_THREADS 5

/* A WAL write that fails fails every commit of its group and nothing else; the
 * failed samples are not in the head, the same samples can be committed again
 * (their timestamps were not kept reserved), and everything acknowledged is
 * replayed. The group is made deterministic: the first thread leads a group of
 * its own commit and, in its hook, waits until the others are queued, then
 * limits the file size so that their write, as one group, fails after a byte. */
static void test_group_commit_failure(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_sync(dir, 0, 3600000);
	struct gc_hook h = {.db = db, .want = GF_THREADS - 1, .fsize_extra = 1};
	struct gc_writer g[GF_THREADS];
	struct rlimit old;
	struct pd_err err = {0};
	pthread_mutex_init(&h.mu, NULL);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
	db->wal->before_sync = gc_before_sync;
	db->wal->hook_ctx = &h;
	gc_start(&g[0], db, 0, 1, 1, NULL);
	gc_wait_entered(&h);
	for (int i = 1; i < GF_THREADS; i++)
		gc_start(&g[i], db, i, 1, 1, NULL);
	for (int i = 0; i < GF_THREADS; i++)
		pthread_join(g[i].th, NULL);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, prev);
	db->wal->before_sync = NULL;
	assert_true(h.reached);

	assert_int_equal(g[0].rc[0], 0);
	for (int i = 1; i < GF_THREADS; i++) {
		assert_int_equal(g[i].rc[0], PD_EIO);
		assert_non_null(strstr(g[i].err.msg, "write"));
	}
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.wal_failed_writes, 1);
	assert_int_equal(st.wal_records, 1);
	assert_int_equal(st.head_samples, 1);

	/* the same samples again, and more: all accepted */
	for (int i = 1; i < GF_THREADS; i++)
		if (commit_one(db, i, 1000, &err))
			fail_msg("retry of series %d: %s", i, err.msg);
	for (int i = 0; i < GF_THREADS; i++)
		if (commit_one(db, i, 2000, &err))
			fail_msg("series %d after the failure: %s", i, err.msg);
	for (int i = 0; i < GF_THREADS; i++)
		expect_series(db, i, 1, 2);
	pd_tsdb_close(db);
	db = open_sync(dir, 1, 3600000);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_samples, 2 * GF_THREADS);
	for (int i = 0; i < GF_THREADS; i++)
		expect_series(db, i, 1, 2);
	pd_tsdb_close(db);
	pthread_mutex_destroy(&h.mu);
	rmdir_all(dir);
}


/* The head's series limit: a commit that would create a series past it is
 * refused (PD_ELIMIT, naming the series) and counted, samples of existing series
 * still append, and a restart with a lower limit replays every series the WAL
 * acknowledged. */
static struct pd_tsdb *open_limited(const char *dir, uint64_t max_series)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.wal_sync = 1;
	o.max_series = max_series;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	return db;
}

static int limit_commit(struct pd_tsdb *db, const char *job, int64_t t, struct pd_err *err)
{
	struct pd_storage_label l[] = {{"__name__", "heap"}, {"job", job}};
	static const uint8_t body[] = "not a profile, kept as bytes";
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_non_null(a);
	int rc = pd_tsdb_append(a, l, 2, t, body, sizeof(body), err);
	if (rc) {
		pd_tsdb_rollback(a);
		return rc;
	}
	return pd_tsdb_commit(a, err);
}

static void test_series_limit(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_storage_stats st;
	struct pd_tsdb *db = open_limited(dir, 3);
	assert_int_equal(limit_commit(db, "a", 1000, &err), 0);
	assert_int_equal(limit_commit(db, "b", 1000, &err), 0);
	assert_int_equal(limit_commit(db, "c", 1000, &err), 0);
	memset(&err, 0, sizeof(err));
	assert_int_equal(limit_commit(db, "d", 1000, &err), PD_ELIMIT);
	assert_non_null(strstr(err.msg, "heap{job=\"d\"}"));
	assert_non_null(strstr(err.msg, "series limit reached"));
	assert_non_null(strstr(err.msg, "limit is 3"));
	assert_int_equal(limit_commit(db, "e", 1000, &err), PD_ELIMIT);
	/* existing series go on */
	assert_int_equal(limit_commit(db, "a", 2000, &err), 0);
	assert_int_equal(limit_commit(db, "c", 2000, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_series, 3);
	assert_int_equal(st.head_samples, 5);
	assert_int_equal(st.head_series_limit, 3);
	assert_int_equal(st.head_series_limit_refused, 2);
	pd_tsdb_close(db);

	/* a lower limit at restart: replay keeps all three, new series are refused,
	 * the old ones still append */
	db = open_limited(dir, 1);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_series, 3);
	assert_int_equal(st.head_samples, 5);
	assert_int_equal(st.head_series_limit_refused, 0);
	assert_int_equal(limit_commit(db, "b", 3000, &err), 0);
	assert_int_equal(limit_commit(db, "d", 3000, &err), PD_ELIMIT);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_series_limit_refused, 1);
	pd_tsdb_close(db);

	/* 0: no limit */
	db = open_limited(dir, 0);
	assert_int_equal(limit_commit(db, "d", 3000, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_series, 4);
	assert_int_equal(st.head_samples, 7);
	assert_int_equal(st.head_series_limit, 0);
	pd_tsdb_close(db);

	/* the default */
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	assert_int_equal(o.max_series, PD_TSDB_DEFAULT_MAX_SERIES);
	rmdir_all(dir);
}

/* Commits from several threads while another thread flushes again and again
 * (blocks of 20 s, a sample a second per series): the flush waits for commits in
 * flight, so blocks, checkpoints and the head together hold every sample, once,
 * before and after a reopen. The series advance together, a round (one commit
 * each, in parallel) at a time, as scrapes of many targets do: a series that
 * lagged behind the persisted range would have its late samples refused from
 * that range only once out-of-bounds samples are refused (not yet). */
struct flusher {
	pthread_t th;
	struct pd_tsdb *db;
	int stop;
	int flushes, failed;
	struct pd_err err;
};

static void *flush_loop(void *arg)
{
	struct flusher *f = arg;
	while (!__atomic_load_n(&f->stop, __ATOMIC_SEQ_CST)) {
		struct pd_err err = {0};
		if (pd_tsdb_flush(f->db, 0, &err) && !f->failed++)
			f->err = err;
		f->flushes++;
	}
	return NULL;
}

static void test_commit_during_flush(void **state)
{
	char *dir = tmpdir();
	struct pd_tsdb *db = open_sync(dir, 1, 20000);
	struct gc_writer g[4];
	struct flusher f = {.db = db};
	pthread_barrier_t round;
	assert_int_equal(pthread_barrier_init(&round, NULL, 4), 0);
	assert_int_equal(pthread_create(&f.th, NULL, flush_loop, &f), 0);
	for (int i = 0; i < 4; i++)
		gc_start(&g[i], db, i, 1, 64, &round);
	for (int i = 0; i < 4; i++) {
		pthread_join(g[i].th, NULL);
		if (g[i].failed)
			fail_msg("thread %d: %d commits failed: %s", i, g[i].failed, g[i].err.msg);
	}
	__atomic_store_n(&f.stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(f.th, NULL);
	pthread_barrier_destroy(&round);
	if (f.failed)
		fail_msg("%d flushes failed: %s", f.failed, f.err.msg);
	for (int i = 0; i < 4; i++)
		expect_series(db, i, 1, 64);
	pd_tsdb_close(db);
	db = open_sync(dir, 1, 20000);
	for (int i = 0; i < 4; i++)
		expect_series(db, i, 1, 64);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	print_message("commits during flushes: %d flushes, %" PRIu64 " blocks\n", f.flushes,
		      st.blocks);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* ---- strings holding NUL bytes --------------------------------------------------- */

/* Fails unless got (glen bytes) is the profile want: every string whole, the
 * function named by the 256 byte values 0..255 included. */
static void assert_nul_profile(const struct pd_pprof_profile *want, const uint8_t *got,
			       size_t glen, const char *where)
{
	struct pd_pprof_profile *b;
	struct pd_pprof_parts parts;
	struct pd_err err = {0};
	char why[256], all[256];
	if (pd_pprof_decode(&b, got, glen, NULL, &err))
		fail_msg("%s: the profile read back does not decode: %s", where, err.msg);
	if (pd_pprof_compare(want, b, why, sizeof(why)))
		fail_msg("%s: %s", where, why);
	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	assert_int_equal(pd_pprof_parts_get(b, &parts, &err), 0);
	int found = 0, dup_a = 0, dup_b = 0;
	for (size_t i = 0; i < parts.nstrings; i++) {
		size_t n = parts.string_len[i];
		found |= n == 256 && memcmp(parts.strings[i], all, 256) == 0;
		dup_a |= n == 5 && memcmp(parts.strings[i], "dup\0a", 5) == 0;
		dup_b |= n == 5 && memcmp(parts.strings[i], "dup\0b", 5) == 0;
	}
	if (!found || !dup_a || !dup_b)
		fail_msg("%s: a string with NUL bytes was cut", where);
	pd_pprof_parts_fini(&parts);
	pd_pprof_destroy(b);
}

/* edge/nul-bytes.pb keeps its strings through the store: read back from the
 * head's open and sealed chunks, from blocks after compaction, and after a
 * restart. */
static void test_nul_strings(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	uint8_t *raw;
	size_t len;
	if (pd_file_read(PD_TESTDATA "/profiles/edge/nul-bytes.pb", 1 << 20, &raw, &len, &err))
		fail_msg("%s", err.msg);
	struct pd_pprof_profile *want;
	assert_int_equal(pd_pprof_decode(&want, raw, len, NULL, &err), 0);
	struct pd_storage_label l[2] = {{"__name__", "cpu"}, {"instance", "nul:1"}};
	struct pd_tsdb *db = open_db(dir, 100000, -1);
	const int64_t step = 5000, end = 3000000;
	for (int64_t t = 0; t < end; t += step) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		if (pd_tsdb_append(a, l, 2, t, raw, len, &err) || pd_tsdb_commit(a, &err))
			fail_msg("append at %lld: %s", (long long)t, err.msg);
		if (t == 45 * step) {
			/* 40 samples a chunk: t 0 is in a sealed chunk, t now in the open one */
			static const int64_t at[] = {0, 39 * step, 40 * step, 45 * step};
			for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
				uint8_t *got;
				size_t glen;
				if (pd_tsdb_read(db, l, 2, at[i], &got, &glen, &err))
					fail_msg("read at %lld: %s", (long long)at[i], err.msg);
				assert_nul_profile(want, got, glen, "head");
				free(got);
			}
		}
	}
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.blocks >= 1);
	assert_true(st.compactions >= 1);
	for (int round = 0; round < 2; round++) {
		for (int64_t t = 0; t < end; t += 97 * step) {
			uint8_t *got;
			size_t glen;
			if (pd_tsdb_read(db, l, 2, t, &got, &glen, &err))
				fail_msg("read at %lld: %s", (long long)t, err.msg);
			assert_nul_profile(want, got, glen, round ? "after a restart" : "blocks");
			free(got);
		}
		assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
		pd_tsdb_close(db);
		db = open_db(dir, 100000, -1);
	}
	pd_tsdb_close(db);
	pd_pprof_destroy(want);
	free(raw);
	rmdir_all(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_append_select_read),
	    cmocka_unit_test(test_select_equality),
	    cmocka_unit_test(test_restart_replays_wal),
	    cmocka_unit_test(test_read_only_leaves_wal),
	    cmocka_unit_test(test_read_only_wal_size),
	    cmocka_unit_test(test_flush_compact_retention),
	    cmocka_unit_test(test_concurrency),
	    cmocka_unit_test(test_crash_safety),
	    cmocka_unit_test(test_group_commit),
	    cmocka_unit_test(test_same_series_concurrent),
	    cmocka_unit_test(test_group_commit_failure),
	    cmocka_unit_test(test_commit_during_flush),
	    cmocka_unit_test(test_series_limit),
	    cmocka_unit_test(test_nul_strings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
