/* test_chunkenc.c: unit tests of pkg/tsdb/chunkenc: the double-delta timestamp
 * chunk (exact round trips, bucket boundaries, sizes, corruption) and the zstd
 * grouped value chunk (round trips through the appender and sealed bytes, group
 * boundaries, damaged chunks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/chunkenc.h"

static void roundtrip(const int64_t *ts, size_t n)
{
	struct pd_chunkenc_ts c;
	struct pd_err err = {0};
	pd_chunkenc_ts_init(&c);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pd_chunkenc_ts_append(&c, ts[i], &err), 0);
	size_t len;
	const uint8_t *b = pd_chunkenc_ts_bytes(&c, &len);
	assert_int_equal(pd_chunkenc_ts_count(b, len), n);
	struct pd_chunkenc_ts_iter it;
	pd_chunkenc_ts_iter_init(&it, b, len);
	size_t i = 0;
	while (pd_chunkenc_ts_iter_next(&it)) {
		assert_true(i < n);
		assert_int_equal(pd_chunkenc_ts_iter_at(&it), ts[i]);
		i++;
	}
	assert_int_equal(pd_chunkenc_ts_iter_err(&it), 0);
	assert_int_equal(i, n);
	pd_chunkenc_ts_fini(&c);
}

static size_t encoded_size(const int64_t *ts, size_t n)
{
	struct pd_chunkenc_ts c;
	pd_chunkenc_ts_init(&c);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pd_chunkenc_ts_append(&c, ts[i], NULL), 0);
	size_t len;
	pd_chunkenc_ts_bytes(&c, &len);
	pd_chunkenc_ts_fini(&c);
	return len;
}

static void test_ts_regular(void **state)
{
	static int64_t ts[1000];
	for (size_t i = 0; i < 1000; i++)
		ts[i] = 1700000000000 + (int64_t)i * 15000;
	roundtrip(ts, 1000);
	/* a steady interval costs one bit per sample after the first two */
	size_t len = encoded_size(ts, 1000);
	assert_true(len <= 2 + 7 + 3 + (998 + 7) / 8);
}

static void test_ts_buckets(void **state)
{
	static const int64_t dods[] = {0,      1,       -1,      8191,    8192,     -8191,
				       8193,   -8192,   65536,   -65535,  65537,    -65536,
				       524288, -524287, 524289,  -524288, 1ll << 40, -(1ll << 40)};
	int64_t ts[64];
	size_t n = 0;
	int64_t t = -5000, d = 1000000000;
	ts[n++] = t;
	t += d;
	ts[n++] = t;
	for (size_t i = 0; i < sizeof(dods) / sizeof(*dods); i++) {
		d += dods[i];
		t += d;
		ts[n++] = t;
	}
	roundtrip(ts, n);
	/* negative values first and huge timestamps */
	int64_t edge[] = {INT64_MIN / 2, -1, 0, 1, INT64_MAX / 2};
	roundtrip(edge, 5);
}

/* A dod of -x costs the same as +x in every bucket. */
static void test_ts_symmetric(void **state)
{
	static const int64_t mags[] = {1, 100, 8191, 9000, 65535, 70000, 524287, 600000, 1ll << 33};
	for (size_t i = 0; i < sizeof(mags) / sizeof(*mags); i++) {
		int64_t base = 10000000000;
		int64_t up[4] = {0, base, 2 * base + mags[i], 3 * base + 2 * mags[i]};
		int64_t down[4] = {0, base, 2 * base - mags[i], 3 * base - 2 * mags[i]};
		assert_int_equal(encoded_size(up, 4), encoded_size(down, 4));
	}
}

static void test_ts_random(void **state)
{
	static int64_t ts[PD_CHUNKENC_MAX_SAMPLES];
	srand(42);
	int64_t t = 1700000000000;
	for (size_t i = 0; i < PD_CHUNKENC_MAX_SAMPLES; i++) {
		int r = rand() % 100;
		t += r < 80 ? 10000 : r < 95 ? 10000 + rand() % 50 - 25 : 1 + rand() % 100000000;
		ts[i] = t;
	}
	roundtrip(ts, PD_CHUNKENC_MAX_SAMPLES);
	/* the chunk is full */
	struct pd_chunkenc_ts c;
	struct pd_err err = {0};
	pd_chunkenc_ts_init(&c);
	for (size_t i = 0; i < PD_CHUNKENC_MAX_SAMPLES; i++)
		assert_int_equal(pd_chunkenc_ts_append(&c, ts[i], NULL), 0);
	assert_int_equal(pd_chunkenc_ts_append(&c, t + 1, &err), PD_ETOOBIG);
	pd_chunkenc_ts_fini(&c);
}

static void test_ts_order_and_corruption(void **state)
{
	struct pd_chunkenc_ts c;
	struct pd_err err = {0};
	pd_chunkenc_ts_init(&c);
	assert_int_equal(pd_chunkenc_ts_append(&c, 1000, &err), 0);
	assert_int_equal(pd_chunkenc_ts_append(&c, 1000, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "not after"));
	assert_int_equal(pd_chunkenc_ts_append(&c, 999, &err), PD_EINVAL);
	for (int64_t t = 2000; t < 200000; t += 997)
		assert_int_equal(pd_chunkenc_ts_append(&c, t, &err), 0);
	size_t len;
	const uint8_t *b = pd_chunkenc_ts_bytes(&c, &len);
	/* every truncation ends in an error, never a read past the end */
	for (size_t cut = 0; cut < len; cut++) {
		struct pd_chunkenc_ts_iter it;
		pd_chunkenc_ts_iter_init(&it, b, cut);
		size_t n = 0;
		while (pd_chunkenc_ts_iter_next(&it))
			n++;
		if (cut >= 2)
			assert_true(n < pd_chunkenc_ts_count(b, len) || pd_chunkenc_ts_iter_err(&it) == 0);
		if (cut >= 2 && n < pd_chunkenc_ts_count(b, len))
			assert_int_equal(pd_chunkenc_ts_iter_err(&it), PD_ECORRUPT);
	}
	pd_chunkenc_ts_fini(&c);
}

static uint8_t *profile_bytes(size_t i, size_t *len)
{
	/* similar, not identical, like successive profiles of one process */
	*len = 2000 + (i * 131) % 3000;
	uint8_t *p = malloc(*len);
	for (size_t k = 0; k < *len; k++)
		p[k] = (uint8_t)((k * 7 + (k % 97 == 0 ? i : 0)) & 0xff);
	return p;
}

static void test_values_roundtrip(void **state)
{
	const unsigned groups[] = {1, 4, 16};
	for (size_t g = 0; g < 3; g++) {
		struct pd_chunkenc_values *c = pd_chunkenc_values_create(groups[g], 0);
		struct pd_err err = {0};
		const size_t n = 50;
		size_t total = 0;
		for (size_t i = 0; i < n; i++) {
			size_t len;
			uint8_t *p = profile_bytes(i, &len);
			total += len;
			assert_int_equal(pd_chunkenc_values_append(c, p, len, &err), 0);
			free(p);
		}
		assert_int_equal(pd_chunkenc_values_count(c), n);
		uint8_t *sealed;
		size_t slen;
		assert_int_equal(pd_chunkenc_values_seal(c, &sealed, &slen, &err), 0);
		assert_true(slen < total / 4);
		assert_int_equal(pd_chunkenc_values_read_count(sealed, slen, &err), n);
		for (size_t i = 0; i < n; i++) {
			size_t len, glen, rlen;
			uint8_t *want = profile_bytes(i, &len), *got, *read;
			assert_int_equal(pd_chunkenc_values_get(c, i, &got, &glen, &err), 0);
			assert_int_equal(pd_chunkenc_values_read(sealed, slen, i, 1 << 20, &read, &rlen, &err), 0);
			assert_int_equal(glen, len);
			assert_int_equal(rlen, len);
			assert_memory_equal(got, want, len);
			assert_memory_equal(read, want, len);
			free(want);
			free(got);
			free(read);
		}
		uint8_t *x;
		size_t xl;
		assert_int_equal(pd_chunkenc_values_read(sealed, slen, n, 1 << 20, &x, &xl, &err), PD_ENOTFOUND);
		assert_int_equal(pd_chunkenc_values_read(sealed, slen, 0, 100, &x, &xl, &err), PD_ETOOBIG);
		free(sealed);
		pd_chunkenc_values_destroy(c);
	}
}

static void test_values_damaged(void **state)
{
	struct pd_chunkenc_values *c = pd_chunkenc_values_create(4, 0);
	struct pd_err err = {0};
	for (size_t i = 0; i < 10; i++) {
		size_t len;
		uint8_t *p = profile_bytes(i, &len);
		assert_int_equal(pd_chunkenc_values_append(c, p, len, &err), 0);
		free(p);
	}
	uint8_t *sealed;
	size_t slen;
	assert_int_equal(pd_chunkenc_values_seal(c, &sealed, &slen, &err), 0);
	uint8_t *x;
	size_t xl;
	/* unknown encoding byte */
	sealed[0] = 9;
	assert_int_equal(pd_chunkenc_values_read(sealed, slen, 0, 1 << 20, &x, &xl, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "unknown encoding 9"));
	sealed[0] = PD_CHUNKENC_VALUES_ZSTD_GROUPS;
	/* truncations and flipped bytes never crash */
	for (size_t cut = 0; cut < slen; cut += 5)
		for (size_t i = 0; i < 10; i += 3)
			if (pd_chunkenc_values_read(sealed, cut, i, 1 << 20, &x, &xl, &err) == 0)
				free(x);
	uint8_t *copy = malloc(slen);
	for (size_t k = 0; k < slen; k += 7) {
		memcpy(copy, sealed, slen);
		copy[k] ^= 0xa5;
		for (size_t i = 0; i < 10; i += 4)
			if (pd_chunkenc_values_read(copy, slen, i, 1 << 20, &x, &xl, &err) == 0)
				free(x);
	}
	free(copy);
	free(sealed);
	pd_chunkenc_values_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ts_regular),   cmocka_unit_test(test_ts_buckets),
		cmocka_unit_test(test_ts_symmetric), cmocka_unit_test(test_ts_random),
		cmocka_unit_test(test_ts_order_and_corruption),
		cmocka_unit_test(test_values_roundtrip), cmocka_unit_test(test_values_damaged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
