/* test_pprof_export.c: unit tests of pkg/pprof's exports (export.c): folded
 * stacks and speedscope JSON of a hand-built profile whose every line is known
 * (inlined frames, identical stacks, zero and negative values, names with ';'
 * and line breaks), and the limits and refusals. Agreement with go tool pprof on
 * real profiles is checked by tests/golden/export_golden.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/pprof.h"

/* strings of the profile */
static const char *const strs[] = {"",       "samples", "count", "space",       "bytes", "main",
                                   "handle", "hash",    "a;b",   "line\nbreak", "leaf"};
enum { S_SAMPLES = 1, S_COUNT, S_SPACE, S_BYTES, S_MAIN, S_HANDLE, S_HASH, S_SEMI, S_NL, S_LEAF };

/* Functions 1..6: main, handle, hash, a;b, line\nbreak, leaf. Location 1 is
 * hash inlined into handle (innermost first); 2 main; 3 a;b; 4 line\nbreak;
 * 5 leaf. */
static struct pd_pprof_profile *build(int negative)
{
	static size_t lens[sizeof(strs) / sizeof(*strs)];
	for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_pvt types[2] = {{S_SAMPLES, S_COUNT}, {S_SPACE, S_BYTES}};
	struct pd_pprof_pfunction fn[6] = {{1, S_MAIN, S_MAIN, 0, 0}, {2, S_HANDLE, S_HANDLE, 0, 0},
	                                   {3, S_HASH, S_HASH, 0, 0}, {4, S_SEMI, S_SEMI, 0, 0},
	                                   {5, S_NL, S_NL, 0, 0},     {6, S_LEAF, S_LEAF, 0, 0}};
	struct pd_pprof_pline l1[2] = {{3, 0, 0}, {2, 0, 0}}, l2 = {1, 0, 0}, l3 = {4, 0, 0},
	                      l4 = {5, 0, 0}, l5 = {6, 0, 0};
	struct pd_pprof_plocation loc[5] = {{1, 0, 0x10, l1, 2, 0},
	                                    {2, 0, 0x20, &l2, 1, 0},
	                                    {3, 0, 0x30, &l3, 1, 0},
	                                    {4, 0, 0x40, &l4, 1, 0},
	                                    {5, 0, 0x50, &l5, 1, 0}};
	/* leaf first */
	static uint64_t st_a[] = {1, 2}, st_b[] = {5, 3, 2}, st_c[] = {4, 2};
	static int64_t v[6][2];
	int64_t init[6][2] = {{3, 300}, {2, 200}, {4, 0}, {0, 0}, {1, 100}, {5, 500}};
	memcpy(v, init, sizeof(v));
	if (negative)
		v[4][1] = -100;
	struct pd_pprof_psample s[6] = {
	    {st_a, 2, v[0], 2, NULL, 0}, {st_a, 2, v[1], 2, NULL, 0}, /* summed: 5, 500 */
	    {st_b, 3, v[2], 2, NULL, 0},                              /* zero space */
	    {st_c, 2, v[3], 2, NULL, 0},                              /* zero in both */
	    {st_c, 2, v[4], 2, NULL, 0}, {NULL, 0, v[5], 2, NULL, 0}, /* no locations */
	};
	struct pd_pprof_parts parts = {0};
	parts.strings = strs;
	parts.string_len = lens;
	parts.nstrings = sizeof(strs) / sizeof(*strs);
	parts.sample_type = types;
	parts.nsample_type = 2;
	parts.sample = s;
	parts.nsample = 6;
	parts.location = loc;
	parts.nlocation = 5;
	parts.function = fn;
	parts.nfunction = 6;
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	if (pd_pprof_parts_build(&parts, &p, &err))
		fail_msg("building the profile: %s", err.msg);
	return p;
}

static char *folded(const struct pd_pprof_profile *p, int idx)
{
	struct pd_buf b;
	struct pd_err err = {0};
	pd_buf_init(&b, 0);
	if (pd_pprof_folded(p, idx, &b, &err))
		fail_msg("folded: %s", err.msg);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	size_t n;
	return (char *)pd_buf_steal(&b, &n);
}

static void test_folded(void **state)
{
	(void)state;
	struct pd_pprof_profile *p = build(0);
	char *got = folded(p, 0);
	/* ordered as the flame graph: by |total| descending, then name; hash inlined
	 * into handle gives two frames; ';' and '\n' made safe */
	assert_string_equal(got, "main;handle;hash 5\n"
	                         "main;a:b;leaf 4\n"
	                         "main;line break 1\n");
	free(got);
	got = folded(p, 1);
	assert_string_equal(got, "main;handle;hash 500\n"
	                         "main;line break 100\n");
	free(got);
	pd_pprof_destroy(p);

	p = build(1);
	got = folded(p, 1);
	assert_string_equal(got, "main;handle;hash 500\n"
	                         "main;line break -100\n");
	free(got);
	pd_pprof_destroy(p);
}

static void test_folded_limits(void **state)
{
	(void)state;
	struct pd_pprof_profile *p = build(0);
	struct pd_buf b;
	struct pd_err err = {0};
	pd_buf_init(&b, 20);
	assert_int_equal(pd_pprof_folded(p, 0, &b, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "limit"));
	pd_buf_fini(&b);
	pd_buf_init(&b, 0);
	err.msg[0] = '\0';
	assert_int_equal(pd_pprof_folded(p, 2, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "sample index 2 out of range"));
	pd_buf_fini(&b);
	pd_pprof_destroy(p);
}

static char *speedscope(const struct pd_pprof_profile *p, int idx, int all, int want_rc,
                        const char *want_err)
{
	struct pd_buf b;
	struct pd_err err = {0};
	pd_buf_init(&b, 0);
	int rc = pd_pprof_speedscope(p, idx, all, "x\"y.pb.gz", &b, &err);
	assert_int_equal(rc, want_rc);
	if (rc) {
		assert_non_null(strstr(err.msg, want_err));
		pd_buf_fini(&b);
		return NULL;
	}
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	size_t n;
	return (char *)pd_buf_steal(&b, &n);
}

static void test_speedscope(void **state)
{
	(void)state;
	struct pd_pprof_profile *p = build(0);
	char *got = speedscope(p, 1, 1, 0, NULL);
	assert_string_equal(
	    got,
	    "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	    "\"shared\":{\"frames\":[{\"name\":\"main\"},{\"name\":\"handle\"},{\"name\":\"hash\"},"
	    "{\"name\":\"a;b\"},{\"name\":\"leaf\"},{\"name\":\"line\\nbreak\"}]},"
	    "\"profiles\":["
	    "{\"type\":\"sampled\",\"name\":\"samples\",\"unit\":\"none\",\"startValue\":0,"
	    "\"endValue\":10,\"samples\":[[0,1,2],[0,3,4],[0,5]],\"weights\":[5,4,1]},"
	    "{\"type\":\"sampled\",\"name\":\"space\",\"unit\":\"bytes\",\"startValue\":0,"
	    "\"endValue\":600,\"samples\":[[0,1,2],[0,5]],\"weights\":[500,100]}],"
	    "\"activeProfileIndex\":1,\"name\":\"x\\\"y.pb.gz\",\"exporter\":\"profd\"}");
	free(got);
	got = speedscope(p, 0, 0, 0, NULL);
	assert_non_null(strstr(got, "\"profiles\":[{\"type\":\"sampled\",\"name\":\"samples\""));
	assert_null(strstr(got, "\"space\""));
	assert_non_null(strstr(got, "\"activeProfileIndex\":0,"));
	free(got);
	speedscope(p, 5, 1, PD_EINVAL, "sample index 5 out of range");
	{
		/* a name that is not UTF-8 is written with U+FFFD for its bad bytes: the
		 * file stays UTF-8, as JSON must be */
		struct pd_buf b;
		struct pd_err err = {0};
		pd_buf_init(&b, 0);
		assert_int_equal(pd_pprof_speedscope(p, 0, 0, "\xff\xc3(.pb.gz", &b, &err), 0);
		assert_int_equal(pd_buf_append(&b, "", 1), 0);
		assert_non_null(strstr((char *)b.data, "\"name\":\"\xef\xbf\xbd\xef\xbf\xbd(.pb.gz\""));
		pd_buf_fini(&b);
	}
	pd_pprof_destroy(p);

	p = build(1);
	speedscope(p, 1, 1, PD_EINVAL, "sample 4 has a negative space value (-100)");
	/* the other type alone has none */
	free(speedscope(p, 0, 0, 0, NULL));
	pd_pprof_destroy(p);
}

static void test_speedscope_units(void **state)
{
	(void)state;
	assert_string_equal(pd_pprof_speedscope_unit("bytes"), "bytes");
	assert_string_equal(pd_pprof_speedscope_unit("nanoseconds"), "nanoseconds");
	assert_string_equal(pd_pprof_speedscope_unit("ns"), "nanoseconds");
	assert_string_equal(pd_pprof_speedscope_unit("microseconds"), "microseconds");
	assert_string_equal(pd_pprof_speedscope_unit("milliseconds"), "milliseconds");
	assert_string_equal(pd_pprof_speedscope_unit("seconds"), "seconds");
	assert_string_equal(pd_pprof_speedscope_unit("count"), "none");
	assert_string_equal(pd_pprof_speedscope_unit("kilobytes"), "none");
	assert_string_equal(pd_pprof_speedscope_unit(""), "none");
}

static void test_speedscope_limit(void **state)
{
	(void)state;
	struct pd_pprof_profile *p = build(0);
	for (size_t max = 1; max < 600; max += 37) {
		struct pd_buf b;
		struct pd_err err = {0};
		pd_buf_init(&b, max);
		int rc = pd_pprof_speedscope(p, 1, 1, NULL, &b, &err);
		if (rc) {
			assert_int_equal(rc, PD_ETOOBIG);
			assert_non_null(strstr(err.msg, "limit"));
		}
		assert_true(b.len <= max);
		pd_buf_fini(&b);
	}
	pd_pprof_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_folded),           cmocka_unit_test(test_folded_limits),
	    cmocka_unit_test(test_speedscope),       cmocka_unit_test(test_speedscope_units),
	    cmocka_unit_test(test_speedscope_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
