/* test_pprof_legacy.c: unit tests of pkg/pprof's legacy readers (legacy*.c) through
 * pd_pprof_decode: gperftools CPU profiles in the four word forms (32/64-bit, either
 * byte order) with their memory map, gzip'd text profiles, malformed inputs and
 * the errors that say where, and the limits. Agreement with go tool pprof on real
 * profiles is checked by tests/golden/legacy_golden.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/pprof.h"

static int decode_str(const char *s, size_t n, const struct pd_pprof_decode_opts *o,
                      struct pd_pprof_profile **p, struct pd_err *err)
{
	return pd_pprof_decode(p, (const uint8_t *)s, n, o, err);
}

#define MAPS                                                                                       \
	"00400000-00410000 r-xp 00000000 08:01 1 /usr/bin/app\n"                                   \
	"00610000-00611000 rw-p 00010000 08:01 1 /usr/bin/app\n"

/* A CPU profile: header, two samples, the end marker, then MAPS. */
static size_t cpu_profile(uint8_t *out, int w64, int big)
{
	uint64_t words[] = {0, 3, 0,        10000,    0, /* period 10 ms */
	                    5, 3, 0x401000, 0x402001, 0x403001, 2, 2, 0x401100, 0x404001, 0, 1, 0};
	size_t k = w64 ? 8 : 4, n = 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++) {
		for (size_t b = 0; b < k; b++)
			out[n + (big ? k - 1 - b : b)] = (uint8_t)(words[i] >> (8 * b));
		n += k;
	}
	memcpy(out + n, MAPS, strlen(MAPS));
	return n + strlen(MAPS);
}

static void test_cpu_word_forms(void **state)
{
	(void)state;
	for (int f = 0; f < 4; f++) {
		uint8_t buf[512];
		size_t n = cpu_profile(buf, f & 1, f >> 1);
		struct pd_pprof_profile *p;
		struct pd_err err = {0};
		int rc = pd_pprof_decode(&p, buf, n, NULL, &err);
		if (rc)
			fail_msg("form %d: %s", f, err.msg);
		assert_int_equal(pd_pprof_sample_count(p), 2);
		assert_int_equal(pd_pprof_period(p), 10000000);
		assert_string_equal(pd_pprof_period_type(p), "cpu");
		assert_int_equal(pd_pprof_sum(p, 0), 7);
		assert_int_equal(pd_pprof_sum(p, 1), 70000000);
		assert_string_equal(pd_pprof_main_binary(p), "/usr/bin/app");
		assert_int_equal(pd_pprof_mapping_count(p), 1);
		struct pd_pprof_parts parts;
		assert_int_equal(pd_pprof_parts_get(p, &parts, &err), 0);
		/* frames after the leaf moved back onto their call */
		int found = 0;
		for (size_t i = 0; i < parts.nlocation; i++) {
			uint64_t a = parts.location[i].address;
			assert_true(a == 0x401000 || a == 0x402000 || a == 0x403000 ||
			            a == 0x401100 || a == 0x404000);
			assert_int_equal(parts.location[i].mapping_id, 1);
			found += a == 0x402000;
		}
		assert_int_equal(found, 1);
		assert_int_equal(parts.mapping[0].memory_start, 0x400000);
		assert_int_equal(parts.mapping[0].memory_limit, 0x410000);
		pd_pprof_parts_fini(&parts);
		pd_pprof_destroy(p);
	}
}

static void test_cpu_truncated(void **state)
{
	(void)state;
	uint8_t buf[512];
	size_t n = cpu_profile(buf, 1, 0);
	/* the first sample claims 3 frames; cut inside them */
	struct pd_pprof_profile *p;
	struct pd_err err = {0};
	int rc = pd_pprof_decode(&p, buf, 8 * 8, NULL, &err);
	assert_int_equal(rc, PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "64-bit, little-endian"));
	assert_non_null(strstr(err.msg, "byte 40"));
	(void)n;
}

static void test_gzip_text(void **state)
{
	(void)state;
	const char *t = "goroutine profile: total 3\n2 @ 0x401001 0x402001\n1 @ 0x401001\n";
	uint8_t *gz;
	size_t gzn;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip((const uint8_t *)t, strlen(t), 6, &gz, &gzn, &err), 0);
	struct pd_pprof_profile *p;
	assert_int_equal(pd_pprof_decode(&p, gz, gzn, NULL, &err), 0);
	free(gz);
	assert_string_equal(pd_pprof_sample_type(p, 0), "goroutine");
	assert_int_equal(pd_pprof_sum(p, 0), 3);
	/* no memory map: one catch-all mapping */
	assert_int_equal(pd_pprof_mapping_count(p), 1);
	pd_pprof_destroy(p);
}

struct bad {
	const char *in, *want_in_msg;
	int code;
};

static void test_malformed(void **state)
{
	(void)state;
	static const struct bad cases[] = {
	    {"heap profile: 1: 2 [3: 4] @ heap_v2/10\n1: 2 [3: 4] @ 0x1\nnot a sample\n",
	     "heap profile: line 3: not a heap sample", PD_EINVAL},
	    {"heap profile: 1: 2 [3: 4] @ heap_v2/10\n0: 2 [3: 4] @ 0x1\n",
	     "line 2: inuse count was 0 but inuse bytes was 2", PD_EINVAL},
	    {"heap profile: 1: 2 [1: 2] @ heap_v2/10\n1: 2 [1: 2] @ 0x11112222333344445\n",
	     "line 2: address 0x11112222333344445 is past 64 bits", PD_EINVAL},
	    {"goroutine profile: total 1\n1 @ 0x1\nfoo\n",
	     "goroutine profile: line 3: not a sample", PD_EINVAL},
	    {"--- contentionz 1 ---\ncycles/second = 100\n10 2 @ 0x1\nxx\n",
	     "contention profile: line 4: not a contention sample", PD_EINVAL},
	    {"--- heapz 1 ---\nformat = java\nresolution = bytes\n 10 0 @ 0x1\n",
	     "Java heap profile: line 4: the sample's count", PD_EINVAL},
	    {"--- Thread 1 (name: a/1) stack: ---\n 0x1 0x2\n--- bogus\n",
	     "thread profile: line 3: not a thread header", PD_EINVAL},
	    {"just some text\n", "nor is it a legacy profile (tried gperftools CPU", PD_ECORRUPT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct pd_pprof_profile *p = NULL;
		struct pd_err err = {0};
		int rc = decode_str(cases[i].in, strlen(cases[i].in), NULL, &p, &err);
		if (rc != cases[i].code || !strstr(err.msg, cases[i].want_in_msg))
			fail_msg("case %zu: rc %d, message \"%s\"; want %d, \"%s\"", i, rc, err.msg,
			         cases[i].code, cases[i].want_in_msg);
		assert_null(p);
	}
}

static void test_limits(void **state)
{
	(void)state;
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	/* samples: the decode option */
	const char *t = "goroutine profile: total 3\n1 @ 0x1\n1 @ 0x2\n1 @ 0x3\n";
	int hit = 0;
	struct pd_pprof_decode_opts o = {.max_samples = 2, .limit_hit = &hit};
	assert_int_equal(decode_str(t, strlen(t), &o, &p, &err), PD_ETOOBIG);
	assert_int_equal(hit, PD_PPROF_LIMIT_SAMPLES);
	assert_non_null(strstr(err.msg, "limit of 2 samples"));
	/* stack depth */
	size_t cap = 64 + 5000 * 6;
	char *deep = malloc(cap);
	size_t n = (size_t)snprintf(deep, cap, "goroutine profile: total 1\n1 @");
	for (int i = 0; i < 5000; i++)
		n += (size_t)snprintf(deep + n, cap - n, " 0x%x", i % 16 + 1);
	deep[n++] = '\n';
	assert_int_equal(decode_str(deep, n, NULL, &p, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "line 2: a stack of more than 4096 frames"));
	free(deep);
	/* line length */
	size_t big = (2u << 20) + 64;
	char *longl = malloc(big);
	n = (size_t)snprintf(longl, big, "goroutine profile: total 1\n1 @");
	while (n + 5 < big - 1)
		memcpy(longl + n, " 0x1", 4), n += 4;
	longl[n++] = '\n';
	assert_int_equal(decode_str(longl, n, NULL, &p, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "line 2: longer than the limit"));
	/* and the options that set them */
	const char *l2 = "goroutine profile: total 1\n1 @ 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8\n";
	struct pd_pprof_decode_opts lo = {.legacy_max_line = 30};
	assert_int_equal(decode_str(l2, strlen(l2), &lo, &p, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "line 2: longer than the limit of 30 bytes"));
	struct pd_pprof_decode_opts ld = {.legacy_max_depth = 3};
	assert_int_equal(decode_str(l2, strlen(l2), &ld, &p, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "line 2: a stack of more than 3 frames"));
	free(longl);
}

static void test_maps_forms(void **state)
{
	(void)state;
	/* brief form, an attribute, glog prefixes, a non-executable entry skipped */
	const char *t = "heap profile: 1: 8 [1: 8] @ heapprofile\n"
	                "1: 8 [1: 8] @ 0x7f0000000101 0x401001\n"
	                "MAPPED_LIBRARIES:\n"
	                "I0101 00:00:00.000 x.cc:12] 0x400000-0x402000 /usr/bin/app\n"
	                "lib=/usr/lib\n"
	                "7f0000000000-7f0000001000 rw-p 00000000 08:01 2 $lib/libdata.so\n"
	                "7f0000000000-7f0000002000 r-xp 00000000 08:01 2 $lib/libx.so\n";
	struct pd_pprof_profile *p;
	struct pd_err err = {0};
	int rc = decode_str(t, strlen(t), NULL, &p, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(pd_pprof_mapping_count(p), 2);
	assert_string_equal(pd_pprof_main_binary(p), "/usr/bin/app");
	struct pd_pprof_parts parts;
	assert_int_equal(pd_pprof_parts_get(p, &parts, &err), 0);
	assert_string_equal(parts.strings[parts.mapping[1].filename], "/usr/lib/libx.so");
	pd_pprof_parts_fini(&parts);
	pd_pprof_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpu_word_forms), cmocka_unit_test(test_cpu_truncated),
	    cmocka_unit_test(test_gzip_text),      cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_limits),         cmocka_unit_test(test_maps_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
