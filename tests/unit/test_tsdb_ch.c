/* test_tsdb_ch.c: the store's ClickHouse mode without a ClickHouse: one series'
 * totals built from ClickHouse's rows (types in order of first appearance, values
 * and presence per profile), the operations refused in that mode (naming it, the
 * store untouched), a ClickHouse that does not answer failing queries with its
 * reason, and pd_tsdb_merge_ranges over the local store; all through the storage
 * interface (pd_clickhouse_storage_create over a local store with its sink). Answers from a real
 * ClickHouse are compared with the local store's by
 * tests/integration/clickhouse_api.sh. */
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

#include "clickhouse_int.h"
#include "profd/clickhouse.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_tsdb_ch_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

/* ---- totals from rows ------------------------------------------------------------ */

static void test_totals_series(void **state)
{
	(void)state;
	const char *t0[] = {"alloc_objects", "inuse_space"}, *u0[] = {"count", "bytes"};
	const char *t1[] = {"inuse_space"}, *u1[] = {"bytes"};
	/* the same type name in another unit is another type */
	const char *t2[] = {"cpu", "inuse_space", "inuse_space"},
	           *u2[] = {"nanoseconds", "bytes", "count"};
	int64_t v0[] = {1, 2}, v1[] = {5}, v2[] = {7, 9, -3};
	struct pd_clickhouse_total rows[4] = {
	    {42, 1000, 10, 2, t0, u0, v0},
	    {42, 2000, 0, 1, t1, u1, v1},
	    {42, 3000, 30, 3, t2, u2, v2},
	    {42, 4000, 0, 0, NULL, NULL, NULL}, /* a profile without sample types */
	};
	char name[] = "__name__", val[] = "heap", jn[] = "job", jv[] = "api";
	struct pd_storage_label lp[2] = {{name, val}, {jn, jv}};
	struct pd_storage_totals_result *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->series = calloc(1, sizeof(*r->series));
	assert_non_null(r->series);
	struct pd_storage_totals *o = &r->series[0];
	assert_int_equal(ch_totals_series(r, lp, 2, rows, 4, o), 0);
	r->nseries = 1;
	/* labels are copies */
	val[0] = 'X';
	assert_int_equal(o->nlabels, 2);
	assert_string_equal(o->labels[0].name, "__name__");
	assert_string_equal(o->labels[0].value, "heap");
	assert_string_equal(o->labels[1].value, "api");
	assert_int_equal(o->nts, 4);
	int64_t ts[] = {1000, 2000, 3000, 4000}, dur[] = {10, 0, 30, 0};
	assert_memory_equal(o->ts, ts, sizeof(ts));
	assert_memory_equal(o->duration_nanos, dur, sizeof(dur));
	assert_int_equal(o->ntypes, 4);
	const char *wt[] = {"alloc_objects", "inuse_space", "cpu", "inuse_space"};
	const char *wu[] = {"count", "bytes", "nanoseconds", "count"};
	for (size_t k = 0; k < 4; k++) {
		assert_string_equal(o->types[k].type, wt[k]);
		assert_string_equal(o->types[k].unit, wu[k]);
	}
	/* values[k * nts + i], present likewise */
	int64_t want[4][4] = {{1, 0, 0, 0}, {2, 5, 9, 0}, {0, 0, 7, 0}, {0, 0, -3, 0}};
	uint8_t pres[4][4] = {{1, 0, 0, 0}, {1, 1, 1, 0}, {0, 0, 1, 0}, {0, 0, 1, 0}};
	for (size_t k = 0; k < 4; k++)
		for (size_t i = 0; i < 4; i++) {
			assert_int_equal(o->present[k * 4 + i], pres[k][i]);
			assert_int_equal(o->values[k * 4 + i], want[k][i]);
		}
	pd_storage_totals_result_destroy(r);
}

/* ---- ClickHouse mode without a ClickHouse --------------------------------------- */

static int eq(const void *ctx, const char *v)
{
	return strcmp(ctx, v) == 0;
}

static void test_refused_and_unreachable(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_clickhouse *c = NULL;
	/* port 1 on loopback: nothing listens, so a request fails at once */
	struct pd_clickhouse_opts co = {.url = "http://127.0.0.1:1/", .timeout_ms = 5000};
	assert_int_equal(pd_clickhouse_create(&c, &co, &err), 0);
	struct pd_storage_sink *sink = NULL;
	assert_int_equal(pd_clickhouse_sink_create(&sink, c, &err), 0);
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.sink = sink;
	struct pd_tsdb *db = NULL;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_storage *cs = NULL;
	assert_int_equal(pd_clickhouse_storage_create(&cs, c, pd_tsdb_storage(db), 1 << 20, &err), 0);
	assert_string_equal(pd_storage_kind(cs), "clickhouse");
	assert_int_equal(pd_storage_merge_batch(cs), PD_CLICKHOUSE_MERGE_MAX_RANGES);

	struct pd_storage_matcher m = {"__name__", eq, "heap"};
	/* the spool refuses on its own too, naming where its profiles go */
	memset(&err, 0, sizeof(err));
	assert_int_equal(pd_tsdb_delete(db, &m, 1, 0, 100, &err), PD_EINCOMPAT);
	assert_non_null(strstr(err.msg, "ClickHouse"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(pd_storage_delete(cs, &m, 1, 0, 100, &err), PD_EINCOMPAT);
	assert_non_null(strstr(err.msg, "deleting series"));
	assert_non_null(strstr(err.msg, "ClickHouse"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(pd_storage_clean_tombstones(cs, &err), PD_EINCOMPAT);
	assert_non_null(strstr(err.msg, "ClickHouse"));
	char name[PD_STORAGE_SNAPSHOT_NAME_MAX] = "x";
	memset(&err, 0, sizeof(err));
	assert_int_equal(pd_storage_snapshot(cs, 0, name, &err), PD_EINCOMPAT);
	assert_string_equal(name, "");
	assert_non_null(strstr(err.msg, "snapshot"));
	struct stat st;
	assert_int_not_equal(stat(dir, &st), -1);
	char snaps[512];
	snprintf(snaps, sizeof(snaps), "%s/%s", dir, PD_TSDB_SNAPSHOTS_DIR);
	assert_int_equal(stat(snaps, &st), -1); /* nothing written */

	struct pd_storage_block_info *bi = (void *)1;
	size_t nb = 99;
	assert_int_equal(pd_storage_blocks(cs, &bi, &nb, &err), 0);
	assert_int_equal(nb, 0);
	free(bi);

	/* reads go to ClickHouse, which does not answer: an error naming it */
	struct pd_storage_result *res = (void *)1;
	memset(&err, 0, sizeof(err));
	assert_int_not_equal(pd_storage_select(cs, &m, 1, 0, 100, 0, &res, &err), 0);
	assert_null(res);
	assert_non_null(strstr(err.msg, "clickhouse"));
	struct pd_storage_totals_result *tr = (void *)1;
	memset(&err, 0, sizeof(err));
	assert_int_not_equal(pd_storage_select_totals(cs, &m, 1, 0, 100, 0, &tr, &err), 0);
	assert_null(tr);
	char **names = (void *)1;
	size_t nn = 7;
	assert_int_not_equal(pd_storage_label_names(cs, NULL, 0, 0, 100, &names, &nn, &err), 0);
	assert_null(names);
	assert_int_equal(nn, 0);
	uint8_t *raw = (void *)1;
	size_t rl = 0;
	struct pd_storage_label ls[] = {{"__name__", "heap"}};
	assert_int_not_equal(pd_storage_read(cs, ls, 1, 50, &raw, &rl, &err), 0);
	assert_null(raw);
	pd_clickhouse_storage_destroy(cs);
	pd_tsdb_close(db);
	pd_clickhouse_sink_destroy(sink);
	pd_clickhouse_destroy(c);
	rmdir_all(dir);
}

/* ---- pd_tsdb_merge_ranges over the local store ----------------------------------- */

/* A one-sample profile of value v, raw protobuf, malloc'd. */
static uint8_t *payload(int64_t v, size_t *len)
{
	static const char *strs[] = {"", "inuse_space", "bytes", "main.main", "main.go"};
	size_t lens[5];
	for (int i = 0; i < 5; i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_pfunction fn = {1, 3, 3, 4, 10};
	struct pd_pprof_pline ln = {1, 12, 0};
	struct pd_pprof_plocation loc = {1, 0, 0x401000, &ln, 1, 0};
	uint64_t s1[] = {1};
	struct pd_pprof_psample sample = {s1, 1, &v, 1, NULL, 0};
	struct pd_pprof_parts p = {0};
	p.strings = strs;
	p.string_len = lens;
	p.nstrings = 5;
	p.sample_type = &st;
	p.nsample_type = 1;
	p.sample = &sample;
	p.nsample = 1;
	p.location = &loc;
	p.nlocation = 1;
	p.function = &fn;
	p.nfunction = 1;
	uint8_t *out = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_encode(&p, &out, len, &err), 0);
	return out;
}

struct sum {
	int64_t total;
	size_t count, calls;
};

static int add(void *ctx, struct pd_pprof_profile *p, size_t count, int64_t first_t, int64_t last_t,
               size_t bytes)
{
	struct sum *s = ctx;
	(void)first_t;
	(void)last_t;
	(void)bytes;
	s->total += pd_pprof_sum(p, 0);
	s->count += count;
	s->calls++;
	pd_pprof_destroy(p);
	return 0;
}

static void test_merge_ranges_local(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_err err = {0};
	struct pd_tsdb *db = NULL;
	assert_int_equal(pd_tsdb_open(&db, dir, NULL, &err), 0);
	assert_string_equal(pd_storage_kind(pd_tsdb_storage(db)), "local");
	assert_int_equal(pd_storage_merge_batch(pd_tsdb_storage(db)), 1);
	struct pd_storage_label a[] = {{"__name__", "heap"}, {"job", "a"}};
	struct pd_storage_label b[] = {{"__name__", "heap"}, {"job", "b"}};
	struct pd_tsdb_appender *app = pd_tsdb_appender(db);
	for (int64_t t = 1; t <= 4; t++) {
		size_t len;
		uint8_t *p = payload(t, &len);
		assert_int_equal(pd_tsdb_append(app, a, 2, t * 1000, p, len, &err), 0);
		free(p);
		p = payload(100 * t, &len);
		assert_int_equal(pd_tsdb_append(app, b, 2, t * 1000, p, len, &err), 0);
		free(p);
	}
	assert_int_equal(pd_tsdb_commit(app, &err), 0);
	/* a up to 2 s (1 + 2), b from 2 s to 4 s (200 + 300 + 400), and a range left out */
	struct pd_storage_merge_range rg[] = {{a, 2, 0, 2000}, {b, 2, 2000, 4000}, {a, 2, 3000, 2000}};
	struct sum s = {0};
	assert_int_equal(pd_tsdb_merge_ranges(db, rg, 3, add, &s, &err), 0);
	assert_int_equal(s.total, 903);
	assert_int_equal(s.count, 5);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_totals_series),
	    cmocka_unit_test(test_refused_and_unreachable),
	    cmocka_unit_test(test_merge_ranges_local),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
