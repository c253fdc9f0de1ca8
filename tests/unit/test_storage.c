/* test_storage.c: the storage interface's own code (pkg/storage): its calls reach
 * the backend's functions with the backend's object and their arguments as given
 * (a fake backend records them); the merge batch is clamped to 1 ..
 * PD_STORAGE_MERGE_MAX_RANGES; matchers run over a label set as the stores run them
 * (a missing label is ""), selectors' equality matchers are told apart; label sets
 * order name by name; string lists are sorted with their duplicates freed; a packed
 * copy of labels owns its strings; a totals result's memory is aligned, survives
 * many allocations and is freed at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/labels.h"
#include "profd/storage.h"

/* ---- a fake backend: records each call ------------------------------------------ */

struct fake {
	const char *last;   /* the last function called */
	const void *impl;   /* the object it was given */
	size_t nm, n;       /* its counts */
	int64_t mint, maxt; /* its range */
	const uint8_t *gz;  /* append's gzip stream */
	size_t commits, rollbacks, lazies;
	struct pd_storage_appender app;
};

static struct fake *F;

static int f_select(void *impl, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
                    int64_t maxt, size_t limit, struct pd_storage_result **out,
                    struct pd_err *err)
{
	(void)m, (void)limit, (void)err;
	F->last = "select", F->impl = impl, F->nm = nm, F->mint = mint, F->maxt = maxt;
	*out = calloc(1, sizeof(**out));
	return 0;
}

static int f_read(void *impl, const struct pd_storage_label *l, size_t n, int64_t t,
                  uint8_t **out, size_t *len, struct pd_err *err)
{
	(void)l, (void)out, (void)len;
	F->last = "read", F->impl = impl, F->n = n, F->mint = t;
	return pd_err_set(err, PD_ENOTFOUND, "no profile at %lld", (long long)t);
}

static int f_totals(void *impl, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
                    int64_t maxt, size_t limit, struct pd_storage_totals_result **out,
                    struct pd_err *err)
{
	(void)m, (void)limit, (void)err;
	F->last = "totals", F->impl = impl, F->nm = nm, F->mint = mint, F->maxt = maxt;
	*out = NULL;
	return 0;
}

static int f_merge(void *impl, const struct pd_storage_merge_range *r, size_t n,
                   pd_storage_merge_fn emit, void *ctx, struct pd_err *err)
{
	(void)r, (void)err;
	F->last = "merge", F->impl = impl, F->n = n;
	return emit(ctx, NULL, 3, 10, 20, 99);
}

static int f_labels(void *impl, const char *name, const struct pd_storage_matcher *m, size_t nm,
                    int64_t mint, int64_t maxt, char ***out, size_t *n, struct pd_err *err)
{
	(void)m, (void)err;
	F->last = name ? "values" : "names", F->impl = impl, F->nm = nm;
	F->mint = mint, F->maxt = maxt;
	*out = calloc(1, sizeof(char *));
	(*out)[0] = strdup(name ? name : "__name__");
	*n = 1;
	return 0;
}

static void a_lazy(struct pd_storage_appender *a)
{
	(void)a;
	F->lazies++;
}

static int a_append(struct pd_storage_appender *a, const struct pd_storage_label *l, size_t n,
                    int64_t t, const uint8_t *p, size_t len, struct pd_pprof_profile *decoded,
                    const uint8_t *gz, size_t gzlen, struct pd_err *err)
{
	(void)a, (void)l, (void)p, (void)len, (void)decoded, (void)gzlen, (void)err;
	F->last = "append", F->n = n, F->mint = t, F->gz = gz;
	return 0;
}

static int a_commit(struct pd_storage_appender *a, struct pd_err *err)
{
	(void)a, (void)err;
	F->commits++;
	return 0;
}

static void a_rollback(struct pd_storage_appender *a)
{
	(void)a;
	F->rollbacks++;
}

static const struct pd_storage_appender_ops app_ops = {a_lazy, a_append, a_commit, a_rollback};

static struct pd_storage_appender *f_appender(void *impl)
{
	F->last = "appender", F->impl = impl;
	F->app.ops = &app_ops;
	return &F->app;
}

static void f_stats(void *impl, struct pd_storage_stats *st)
{
	F->last = "stats", F->impl = impl;
	st->head_series = 7;
}

static int f_blocks(void *impl, struct pd_storage_block_info **out, size_t *n,
                    struct pd_err *err)
{
	(void)err;
	F->last = "blocks", F->impl = impl;
	*out = NULL;
	*n = 0;
	return 0;
}

static int f_delete(void *impl, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
                    int64_t maxt, struct pd_err *err)
{
	(void)m;
	F->last = "delete", F->impl = impl, F->nm = nm, F->mint = mint, F->maxt = maxt;
	return pd_err_set(err, PD_EINCOMPAT, "deleting series is not available here");
}

static int f_clean(void *impl, struct pd_err *err)
{
	(void)err;
	F->last = "clean", F->impl = impl;
	return 0;
}

static int f_snapshot(void *impl, int skip_head, char name[PD_STORAGE_SNAPSHOT_NAME_MAX],
                      struct pd_err *err)
{
	(void)err;
	F->last = "snapshot", F->impl = impl, F->n = (size_t)skip_head;
	strcpy(name, "snap");
	return 0;
}

static int emitted(void *ctx, struct pd_pprof_profile *p, size_t count, int64_t first_t,
                   int64_t last_t, size_t bytes)
{
	(void)p;
	size_t *got = ctx;
	*got = count * 1000000 + (size_t)first_t * 10000 + (size_t)last_t * 100 + bytes % 100;
	return 0;
}

static void test_dispatch(void **state)
{
	(void)state;
	struct fake f = {0};
	F = &f;
	struct pd_storage_ops ops = {f_select, f_read,   f_totals, f_merge,  f_labels, f_appender,
	                             f_stats,  f_blocks, f_delete, f_clean,  f_snapshot, 4, "fake"};
	int obj;
	struct pd_storage st = {&ops, &obj};
	struct pd_err err = {0};
	struct pd_storage_matcher m[2] = {{"a", pd_storage_match_equal, "x"},
	                                  {"b", pd_storage_match_equal, "y"}};

	struct pd_storage_result *r = NULL;
	assert_int_equal(pd_storage_select(&st, m, 2, 5, 9, 0, &r, &err), 0);
	assert_string_equal(f.last, "select");
	assert_ptr_equal(f.impl, &obj);
	assert_int_equal(f.nm, 2);
	assert_int_equal(f.mint, 5);
	assert_int_equal(f.maxt, 9);
	pd_storage_result_destroy(r);

	uint8_t *out;
	size_t len;
	struct pd_storage_label l[1] = {{"a", "x"}};
	assert_int_equal(pd_storage_read(&st, l, 1, 42, &out, &len, &err), PD_ENOTFOUND);
	assert_string_equal(err.msg, "no profile at 42");
	assert_int_equal(f.mint, 42);

	struct pd_storage_totals_result *tr = (void *)1;
	assert_int_equal(pd_storage_select_totals(&st, m, 1, 1, 2, 0, &tr, &err), 0);
	assert_string_equal(f.last, "totals");
	assert_null(tr);

	size_t got = 0;
	struct pd_storage_merge_range rg[3] = {{l, 1, 0, 10}, {l, 1, 0, 10}, {l, 1, 0, 10}};
	assert_int_equal(pd_storage_merge_ranges(&st, rg, 3, emitted, &got, &err), 0);
	assert_string_equal(f.last, "merge");
	assert_int_equal(f.n, 3);
	assert_int_equal(got, 3 * 1000000 + 10 * 10000 + 20 * 100 + 99);

	char **v;
	size_t nv;
	assert_int_equal(pd_storage_label_names(&st, m, 1, 3, 4, &v, &nv, &err), 0);
	assert_string_equal(f.last, "names");
	assert_string_equal(v[0], "__name__");
	pd_storage_strings_free(v, nv);
	assert_int_equal(pd_storage_label_values(&st, "job", NULL, 0, 3, 4, &v, &nv, &err), 0);
	assert_string_equal(f.last, "values");
	assert_string_equal(v[0], "job");
	pd_storage_strings_free(v, nv);

	struct pd_storage_appender *a = pd_storage_appender(&st);
	assert_ptr_equal(a, &f.app);
	pd_storage_appender_lazy(a);
	assert_int_equal(f.lazies, 1);
	static const uint8_t gz[] = {0x1f, 0x8b};
	assert_int_equal(pd_storage_append(a, l, 1, 7, gz, 2, &err), 0);
	assert_null(f.gz);
	assert_int_equal(pd_storage_append_decoded(a, l, 1, 8, gz, 2, NULL, &err), 0);
	assert_null(f.gz);
	assert_int_equal(f.mint, 8);
	assert_int_equal(pd_storage_append_gzip(a, l, 1, 9, gz, 2, NULL, gz, 2, &err), 0);
	assert_ptr_equal(f.gz, gz);
	assert_int_equal(pd_storage_commit(a, &err), 0);
	assert_int_equal(f.commits, 1);
	pd_storage_rollback(NULL);
	pd_storage_rollback(pd_storage_appender(&st));
	assert_int_equal(f.rollbacks, 1);

	struct pd_storage_stats sst;
	memset(&sst, 0xff, sizeof(sst));
	pd_storage_stats(&st, &sst);
	assert_int_equal(sst.head_series, 7);
	assert_int_equal(sst.blocks, 0); /* zeroed before the backend fills it */
	assert_int_equal(sst.remote, 0);

	struct pd_storage_block_info *bi;
	size_t nb;
	assert_int_equal(pd_storage_blocks(&st, &bi, &nb, &err), 0);
	assert_string_equal(f.last, "blocks");
	assert_int_equal(pd_storage_delete(&st, m, 2, -5, 5, &err), PD_EINCOMPAT);
	assert_string_equal(f.last, "delete");
	assert_int_equal(f.mint, -5);
	assert_int_equal(pd_storage_clean_tombstones(&st, &err), 0);
	assert_string_equal(f.last, "clean");
	char name[PD_STORAGE_SNAPSHOT_NAME_MAX];
	assert_int_equal(pd_storage_snapshot(&st, 1, name, &err), 0);
	assert_string_equal(name, "snap");
	assert_int_equal(f.n, 1);

	assert_string_equal(pd_storage_kind(&st), "fake");
	assert_int_equal(pd_storage_merge_batch(&st), 4);
	ops.merge_batch = 0;
	assert_int_equal(pd_storage_merge_batch(&st), 1);
	ops.merge_batch = 100000;
	assert_int_equal(pd_storage_merge_batch(&st), PD_STORAGE_MERGE_MAX_RANGES);
	ops.kind = NULL;
	assert_string_equal(pd_storage_kind(&st), "");
}

/* ---- labels and matchers ------------------------------------------------------------ */

static int starts_with_a(const void *ctx, const char *v)
{
	(void)ctx;
	return v[0] == 'a';
}

static int is_empty(const void *ctx, const char *v)
{
	(void)ctx;
	return v[0] == '\0';
}

static void test_labels_match(void **state)
{
	(void)state;
	struct pd_storage_label l[2] = {{"job", "api"}, {"zone", "b"}};
	struct pd_storage_matcher eq = {"job", pd_storage_match_equal, "api"};
	struct pd_storage_matcher ne = {"job", pd_storage_match_equal, "web"};
	struct pd_storage_matcher re = {"job", starts_with_a, NULL};
	struct pd_storage_matcher missing = {"pod", is_empty, NULL};
	struct pd_storage_matcher missing_a = {"pod", starts_with_a, NULL};
	assert_true(pd_storage_labels_match(l, 2, &eq, 1));
	assert_false(pd_storage_labels_match(l, 2, &ne, 1));
	assert_true(pd_storage_labels_match(l, 2, (struct pd_storage_matcher[]){eq, re}, 2));
	assert_false(pd_storage_labels_match(l, 2, (struct pd_storage_matcher[]){eq, ne}, 2));
	/* a label the set does not have matches as "" */
	assert_true(pd_storage_labels_match(l, 2, &missing, 1));
	assert_false(pd_storage_labels_match(l, 2, &missing_a, 1));
	assert_true(pd_storage_labels_match(l, 2, NULL, 0));

	assert_string_equal(pd_storage_matcher_equal(&eq), "api");
	assert_null(pd_storage_matcher_equal(&re));

	/* a selector's matchers: = told apart, =~ not */
	struct pd_labels_selector *sel = NULL;
	struct pd_err err = {0};
	const char *q = "heap{job=\"api\",zone=~\"a|b\"}";
	assert_int_equal(pd_labels_selector_parse(&sel, q, strlen(q), NULL, &err), 0);
	struct pd_storage_matcher *sm;
	size_t ns;
	assert_int_equal(pd_storage_matchers_from_selector(sel, &sm, &ns, &err), 0);
	assert_int_equal(ns, 3);
	size_t equal = 0;
	for (size_t i = 0; i < ns; i++) {
		const char *v = pd_storage_matcher_equal(&sm[i]);
		if (v) {
			equal++;
			assert_true(strcmp(v, "heap") == 0 || strcmp(v, "api") == 0);
		}
	}
	assert_int_equal(equal, 2);
	struct pd_storage_label hl[3] = {{"__name__", "heap"}, {"job", "api"}, {"zone", "b"}};
	assert_true(pd_storage_labels_match(hl, 3, sm, ns));
	hl[2].value = "c";
	assert_false(pd_storage_labels_match(hl, 3, sm, ns));
	free(sm);
	pd_labels_selector_destroy(sel);
}

static void test_labels_order_and_copies(void **state)
{
	(void)state;
	struct pd_storage_label a[2] = {{"job", "api"}, {"zone", "a"}};
	struct pd_storage_label b[2] = {{"job", "api"}, {"zone", "b"}};
	struct pd_storage_label c[1] = {{"job", "api"}};
	struct pd_storage_label d[1] = {{"instance", "x"}};
	assert_true(pd_storage_labels_cmp(a, 2, b, 2) < 0);
	assert_true(pd_storage_labels_cmp(b, 2, a, 2) > 0);
	assert_int_equal(pd_storage_labels_cmp(a, 2, a, 2), 0);
	assert_true(pd_storage_labels_cmp(c, 1, a, 2) < 0); /* a prefix first */
	assert_true(pd_storage_labels_cmp(d, 1, c, 1) < 0); /* by name first */

	char name[] = "job", value[] = "api";
	struct pd_storage_label src[1] = {{name, value}};
	struct pd_storage_label *p = pd_storage_labels_pack(src, 1);
	assert_non_null(p);
	name[0] = 'X';
	value[0] = 'X';
	assert_string_equal(p[0].name, "job");
	assert_string_equal(p[0].value, "api");
	free(p); /* one allocation */
	free(pd_storage_labels_pack(NULL, 0));

	char **v = malloc(5 * sizeof(*v));
	const char *in[] = {"b", "a", "c", "a", "b"};
	for (int i = 0; i < 5; i++)
		v[i] = strdup(in[i]);
	size_t n = 5;
	pd_storage_strings_sort_unique(v, &n);
	assert_int_equal(n, 3);
	assert_string_equal(v[0], "a");
	assert_string_equal(v[1], "b");
	assert_string_equal(v[2], "c");
	pd_storage_strings_free(v, n); /* the duplicates were freed: no leak */
	pd_storage_strings_free(NULL, 0);
}

/* ---- a totals result's memory --------------------------------------------------------- */

static void test_totals_memory(void **state)
{
	(void)state;
	struct pd_storage_totals_result *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->series = calloc(1, sizeof(*r->series));
	/* many small pieces and a few large ones: each aligned, each its own */
	uint8_t *prev = NULL;
	for (int i = 0; i < 20000; i++) {
		size_t sz = (size_t)(i % 97) + 1 + (i % 5000 == 0 ? (size_t)3 << 20 : 0);
		uint8_t *p = pd_storage_totals_alloc(r, sz);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		memset(p, i & 0xff, sz);
		if (prev)
			assert_int_equal(prev[0], (uint8_t)((i - 1) & 0xff));
		prev = p;
	}
	char *s = pd_storage_totals_strdup(r, "inuse_space");
	assert_string_equal(s, "inuse_space");
	pd_storage_totals_result_destroy(r);
	pd_storage_totals_result_destroy(NULL);
	pd_storage_result_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dispatch),
	    cmocka_unit_test(test_labels_match),
	    cmocka_unit_test(test_labels_order_and_copies),
	    cmocka_unit_test(test_totals_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
