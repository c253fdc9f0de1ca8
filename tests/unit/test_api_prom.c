/* test_api_prom.c: profile totals as Prometheus metrics. The metric names
 * (pd_api_prom_metric_name), and the store as a PromQL source
 * (pd_api_prom_source) over a real store holding profiles built here with known
 * values: which metrics each kind of __name__ matcher selects, their labels, their
 * samples (totals, and per second for profiles with a duration), time bounds, and
 * PromQL evaluated over them with values worked out by hand. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <math.h>
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

#include "profd/api.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/promql.h"
#include "profd/tsdb.h"

/* ---- metric names ------------------------------------------------------------- */

static void assert_name(const char *ptype, const char *stype, const char *unit, int ps,
                        const char *want)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_api_prom_metric_name(&b, ptype, stype, unit, ps), 0);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.data, want, b.len);
	assert_int_equal(b.data[b.len], '\0'); /* usable as a C string */
	pd_buf_fini(&b);
}

static void test_metric_names(void **state)
{
	(void)state;
	assert_name("heap", "inuse_space", "bytes", 0, "heap_inuse_space_bytes");
	assert_name("profile", "cpu", "nanoseconds", 0, "profile_cpu_nanoseconds");
	assert_name("profile", "cpu", "nanoseconds", 1, "profile_cpu_nanoseconds_per_second");
	assert_name("goroutine", "goroutine", "count", 0, "goroutine_goroutine_count");
	/* every byte outside [a-zA-Z0-9_] is one '_' (µ is two bytes in UTF-8) */
	assert_name("my.type", "wall-time", "\xc2\xb5s", 0, "my_type_wall_time___s");
	assert_name("fgprof:v2", "Samples", "count", 1, "fgprof_v2_Samples_count_per_second");
	/* empty parts are left out, not joined */
	assert_name("heap", "space", "", 0, "heap_space");
	assert_name("heap", "", "bytes", 0, "heap_bytes");
	/* a bounded buffer that cannot hold the name */
	struct pd_buf b;
	pd_buf_init(&b, 8);
	assert_int_not_equal(pd_api_prom_metric_name(&b, "heap", "inuse_space", "bytes", 0), 0);
	pd_buf_fini(&b);
}

/* ---- the store as a source ------------------------------------------------------ */

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

/* A profile with two samples and the given sample types (type, unit pairs):
 * sample values a[k] and b[k] for type k, so type k's total is a[k] + b[k]. */
static uint8_t *profile(const char *const *types, size_t ntypes, const int64_t *a, const int64_t *b,
                        int64_t duration_nanos, size_t *len)
{
	const char *strs[16] = {"", "main.main", "main.go"};
	size_t lens[16];
	size_t ns = 3;
	struct pd_pprof_pvt st[4];
	for (size_t k = 0; k < ntypes; k++) {
		strs[ns] = types[2 * k];
		strs[ns + 1] = types[2 * k + 1];
		st[k] = (struct pd_pprof_pvt){(int64_t)ns, (int64_t)ns + 1};
		ns += 2;
	}
	for (size_t i = 0; i < ns; i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_pfunction fn = {1, 1, 1, 2, 10};
	struct pd_pprof_pline ln = {1, 12, 0};
	struct pd_pprof_plocation loc = {1, 0, 0x1000, &ln, 1, 0};
	uint64_t stack[] = {1};
	int64_t va[4], vb[4];
	memcpy(va, a, ntypes * sizeof(*a));
	memcpy(vb, b, ntypes * sizeof(*b));
	struct pd_pprof_psample samples[2] = {{stack, 1, va, ntypes, NULL, 0},
	                                      {stack, 1, vb, ntypes, NULL, 0}};
	struct pd_pprof_parts p = {0};
	p.strings = strs;
	p.string_len = lens;
	p.nstrings = ns;
	p.sample_type = st;
	p.nsample_type = ntypes;
	p.sample = samples;
	p.nsample = 2;
	p.location = &loc;
	p.nlocation = 1;
	p.function = &fn;
	p.nfunction = 1;
	p.duration_nanos = duration_nanos;
	uint8_t *out;
	struct pd_err err = {0};
	if (pd_pprof_parts_encode(&p, &out, len, &err))
		fail_msg("encoding a profile: %s", err.msg);
	return out;
}

struct fixture {
	char dir[64];
	struct pd_tsdb *db;
	struct pd_promql_source src;
};

static void append(struct pd_tsdb *db, const struct pd_storage_label *ls, size_t nl, int64_t t,
                   uint8_t *prof, size_t len)
{
	struct pd_err err = {0};
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_non_null(a);
	if (pd_tsdb_append(a, ls, nl, t, prof, len, &err) || pd_tsdb_commit(a, &err))
		fail_msg("appending: %s", err.msg);
	free(prof);
}

static const char *heap_types[] = {"alloc_space", "bytes", "inuse_space", "bytes"};
static const char *cpu_types[] = {"samples", "count", "cpu", "nanoseconds"};
static const char *odd_types[] = {"wall-time", "ms"};

/* The store of every test:
 *   heap{instance="i1",job="a"}     at 1000, 2000, 3000 ms: alloc_space 10t/1000 + 5,
 *                                   inuse_space 100 + 1 (t = 1000), 200 + 2, 300 + 3
 *   profile{instance="i2",job="a"}  at 1000, 2000 ms, 2 s long: samples 3 + 1,
 *                                   cpu 3e9 + 1e9 (t = 1000), then 6 + 2, 6e9 + 2e9
 *   my.type{job="b"}                at 2000 ms: wall-time 7 + 8 ms, no duration */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct pd_err err = {0};
	snprintf(f->dir, sizeof(f->dir), "/tmp/pd_test_api_prom_XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	if (pd_tsdb_open(&f->db, f->dir, NULL, &err))
		fail_msg("open: %s", err.msg);
	struct pd_storage_label heap[] = {{"__name__", "heap"}, {"instance", "i1"}, {"job", "a"}};
	struct pd_storage_label cpu[] = {{"__name__", "profile"}, {"instance", "i2"}, {"job", "a"}};
	struct pd_storage_label odd[] = {{"__name__", "my.type"}, {"job", "b"}};
	size_t len;
	for (int64_t i = 1; i <= 3; i++) {
		int64_t a[] = {10 * i, 100 * i}, b[] = {5, i};
		uint8_t *prof = profile(heap_types, 2, a, b, 0, &len);
		append(f->db, heap, 3, 1000 * i, prof, len);
	}
	for (int64_t i = 1; i <= 2; i++) {
		int64_t a[] = {3 * i, 3000000000LL * i}, b[] = {i, 1000000000LL * i};
		uint8_t *prof = profile(cpu_types, 2, a, b, 2000000000LL, &len);
		append(f->db, cpu, 3, 1000 * i, prof, len);
	}
	int64_t a[] = {7}, b[] = {8};
	uint8_t *prof = profile(odd_types, 1, a, b, 0, &len);
	append(f->db, odd, 2, 2000, prof, len);
	pd_api_prom_source(pd_tsdb_storage(f->db), &f->src);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	pd_tsdb_close(f->db);
	nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* What a select gave: each series as its label string and its samples. */
struct got {
	size_t n;
	char *labels[32];
	int64_t t[32][8];
	double v[32][8];
	size_t nt[32];
};

static int collect(void *arg, const struct pd_labels *ls, const int64_t *t, const double *v,
                   size_t n)
{
	struct got *g = arg;
	assert_true(g->n < 32 && n <= 8);
	g->labels[g->n] = pd_labels_string(ls);
	memcpy(g->t[g->n], t, n * sizeof(*t));
	memcpy(g->v[g->n], v, n * sizeof(*v));
	g->nt[g->n] = n;
	g->n++;
	return 0;
}

static void got_fini(struct got *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->labels[i]);
}

/* Selects with the matchers of selector sel in [mint, maxt]. */
static void select_sel(struct fixture *f, const char *sel, int64_t mint, int64_t maxt,
                       struct got *g)
{
	struct pd_labels_selector *s;
	struct pd_err err = {0};
	memset(g, 0, sizeof(*g));
	if (pd_labels_selector_parse(&s, sel, strlen(sel), NULL, &err))
		fail_msg("%s: %s", sel, err.msg);
	if (f->src.select(f->src.ctx, s->matchers, s->nmatchers, mint, maxt, collect, g, &err))
		fail_msg("select %s: %s", sel, err.msg);
	pd_labels_selector_destroy(s);
}

/* The index of the series printed as want, or fails. */
static size_t find(const struct got *g, const char *want)
{
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->labels[i], want) == 0)
			return i;
	for (size_t i = 0; i < g->n; i++)
		print_message("  got %s\n", g->labels[i]);
	fail_msg("no series %s", want);
	return 0;
}

static void test_source_names_and_values(void **state)
{
	struct fixture *f = *state;
	struct got g;
	select_sel(f, "heap_inuse_space_bytes", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 1);
	size_t i = find(&g, "heap_inuse_space_bytes{instance=\"i1\", job=\"a\"}");
	assert_int_equal(g.nt[i], 3);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(g.t[i][k], 1000 * (k + 1));
		assert_true(g.v[i][k] == 101.0 * (k + 1));
	}
	got_fini(&g);

	/* the CPU-like series: totals and, with the 2 s duration, per second */
	select_sel(f, "{__name__=~\"profile_.*\"}", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 4);
	i = find(&g, "profile_cpu_nanoseconds{instance=\"i2\", job=\"a\"}");
	assert_int_equal(g.nt[i], 2);
	assert_true(g.v[i][0] == 4e9 && g.v[i][1] == 8e9);
	i = find(&g, "profile_cpu_nanoseconds_per_second{instance=\"i2\", job=\"a\"}");
	assert_true(g.v[i][0] == 2e9 && g.v[i][1] == 4e9);
	i = find(&g, "profile_samples_count{instance=\"i2\", job=\"a\"}");
	assert_true(g.v[i][0] == 4 && g.v[i][1] == 8);
	i = find(&g, "profile_samples_count_per_second{instance=\"i2\", job=\"a\"}");
	assert_true(g.v[i][0] == 2 && g.v[i][1] == 4);
	got_fini(&g);

	/* a profile type with characters outside [a-zA-Z0-9_]; no duration, no _per_second */
	select_sel(f, "{job=\"b\"}", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 1);
	i = find(&g, "my_type_wall_time_ms{job=\"b\"}");
	assert_true(g.v[i][0] == 15 && g.t[i][0] == 2000);
	got_fini(&g);
	select_sel(f, "my_type_wall_time_ms", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 1);
	got_fini(&g);
}

static void test_source_matchers(void **state)
{
	struct fixture *f = *state;
	struct got g;
	/* every metric: 2 heap + 4 profile + 1 my.type */
	select_sel(f, "{__name__=~\".+\"}", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 7);
	got_fini(&g);
	/* != and !~ on the metric name, with a matcher the store applies */
	select_sel(f, "{job=\"a\", __name__!=\"heap_alloc_space_bytes\"}", INT64_MIN, INT64_MAX,
	           &g);
	assert_int_equal(g.n, 5);
	got_fini(&g);
	select_sel(f, "{job=~\"a|b\", __name__!~\".*_per_second\"}", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 5);
	find(&g, "my_type_wall_time_ms{job=\"b\"}");
	got_fini(&g);
	/* the profile type's name is not a metric name; nor is a prefix of one */
	select_sel(f, "heap", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 0);
	got_fini(&g);
	select_sel(f, "heap_inuse", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 0);
	got_fini(&g);
	/* the stored series' own labels select, __name__ of the store is not a label */
	select_sel(f, "{instance=\"i2\", __name__=~\"profile_cpu.*\"}", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 2);
	got_fini(&g);
	select_sel(f, "{instance=\"i9\"}", INT64_MIN, INT64_MAX, &g);
	assert_int_equal(g.n, 0);
	got_fini(&g);
}

static void test_source_time_bounds(void **state)
{
	struct fixture *f = *state;
	struct got g;
	/* both ends inclusive */
	select_sel(f, "heap_alloc_space_bytes", 2000, 3000, &g);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.nt[0], 2);
	assert_int_equal(g.t[0][0], 2000);
	assert_true(g.v[0][0] == 25 && g.v[0][1] == 35);
	got_fini(&g);
	select_sel(f, "{job=\"a\"}", 1500, 1999, &g);
	assert_int_equal(g.n, 0);
	got_fini(&g);
	select_sel(f, "{job=\"a\"}", 3000, 3000, &g);
	assert_int_equal(g.n, 2); /* only heap has a profile at 3000 */
	got_fini(&g);
}

/* Runs query at t (ms) and returns the single value of the single series (or scalar). */
static double instant1(struct fixture *f, const char *q, int64_t t, const char *want_labels)
{
	struct pd_promql_result *r = NULL;
	struct pd_promql_err err = {0};
	if (pd_promql_query_instant(&r, &f->src, q, strlen(q), t, NULL, &err))
		fail_msg("%s: %s", q, err.err.msg);
	double v;
	if (pd_promql_result_type(r) == PD_PROMQL_SCALAR) {
		v = pd_promql_result_scalar(r);
	} else {
		assert_int_equal(pd_promql_result_len(r), 1);
		const double *vs;
		size_t n;
		const struct pd_labels *ls = pd_promql_result_series(r, 0, NULL, &vs, &n);
		char *s = pd_labels_string(ls);
		assert_string_equal(s, want_labels);
		free(s);
		assert_int_equal(n, 1);
		v = vs[0];
	}
	pd_promql_result_destroy(r);
	return v;
}

static void test_promql_over_store(void **state)
{
	struct fixture *f = *state;
	/* sum of the latest inuse_space and cpu totals per job */
	assert_true(instant1(f,
	                     "sum by (job) ({__name__=~\"heap_inuse_space_bytes|profile_cpu_"
	                     "nanoseconds\"})",
	                     2500, "{job=\"a\"}") == 202 + 8e9);
	/* increase of alloc_space over [0, 3 s]: samples 15, 25, 35 at 1, 2, 3 s; the
	 * sampled 20 is extrapolated by 1 s towards 0 (not past the zero point at
	 * -0.5 s, under 1.1 average steps) and not at the end: 20 * 3 / 2 = 30 */
	assert_true(fabs(instant1(f, "increase(heap_alloc_space_bytes[3s])", 3000,
	                          "{instance=\"i1\", job=\"a\"}") -
	                 30) < 1e-9);
	/* cores: 8e9 ns of CPU over 2 s is 4e9 ns per second */
	assert_true(instant1(f, "max(profile_cpu_nanoseconds_per_second) / 1e9", 2000, "{}") == 4);
	/* lookback: 5 minutes after the last profile it is still seen, not after */
	assert_true(instant1(f, "count(my_type_wall_time_ms)", 2000 + 300000, "{}") == 1);
	struct pd_promql_result *r = NULL;
	struct pd_promql_err err = {0};
	const char *q = "my_type_wall_time_ms";
	assert_int_equal(
	    pd_promql_query_instant(&r, &f->src, q, strlen(q), 2001 + 300000, NULL, &err), 0);
	assert_int_equal(pd_promql_result_len(r), 0);
	pd_promql_result_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_metric_names),
	    cmocka_unit_test_setup_teardown(test_source_names_and_values, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_source_matchers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_source_time_bounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_promql_over_store, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
