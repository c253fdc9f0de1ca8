/* test_util.c: unit tests of pkg/util: errors, arena limits, bounded buffers,
 * gzip with its size cap, file reading, hashing and the integer map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/util.h"

static void test_err(void **state)
{
	struct pd_err err = {0};
	assert_int_equal(pd_err_set(&err, PD_EINVAL, "bad %s at %d", "thing", 7), PD_EINVAL);
	assert_string_equal(err.msg, "bad thing at 7");
	pd_err_prefix(&err, "file.pb");
	assert_string_equal(err.msg, "file.pb: bad thing at 7");
	assert_int_equal(pd_err_set(NULL, PD_EIO, "ignored"), PD_EIO);
	assert_string_equal(pd_strerror(PD_ETOOBIG), "size limit exceeded");
	/* a long prefix is cut, never overflows */
	char longp[1000];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	pd_err_prefix(&err, "%s", longp);
	assert_true(strlen(err.msg) < PD_ERR_MSG_MAX);
}

static void test_arena(void **state)
{
	struct pd_arena *a = pd_arena_create(1000);
	assert_non_null(a);
	void *p = pd_arena_alloc(a, 100);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % 16, 0);
	assert_false(pd_arena_exhausted(a));
	assert_null(pd_arena_alloc(a, 2000)); /* over the limit */
	assert_true(pd_arena_exhausted(a));
	assert_non_null(pd_arena_alloc(a, 500));
	assert_null(pd_arena_alloc(a, 500)); /* 112 + 512 + 512 > 1000 */
	assert_true(pd_arena_used(a) <= 1000);
	char *s = pd_arena_strndup(a, "hello world", 5);
	assert_string_equal(s, "hello");
	assert_null(pd_arena_calloc(a, SIZE_MAX / 2, 4)); /* overflow */
	pd_arena_destroy(a);
	pd_arena_destroy(NULL);

	/* unlimited: many blocks, big and small */
	a = pd_arena_create(0);
	for (int i = 0; i < 1000; i++)
		memset(pd_arena_alloc(a, (size_t)(i * 37 % 5000) + 1), 0xab, (size_t)(i * 37 % 5000) + 1);
	pd_arena_destroy(a);
}

static void test_buf(void **state)
{
	struct pd_buf b;
	pd_buf_init(&b, 10);
	assert_int_equal(pd_buf_append(&b, "12345", 5), 0);
	assert_int_equal(pd_buf_append(&b, "67890", 5), 0);
	assert_int_equal(pd_buf_append(&b, "x", 1), PD_ETOOBIG);
	assert_int_equal(b.len, 10);
	pd_buf_fini(&b);

	pd_buf_init(&b, 0);
	assert_int_equal(pd_buf_printf(&b, "%d-%s", 42, "x"), 0);
	char big[1000];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(pd_buf_printf(&b, "%s", big), 0);
	assert_int_equal(b.len, 4 + 999);
	size_t len;
	uint8_t *d = pd_buf_steal(&b, &len);
	assert_int_equal(len, 1003);
	assert_memory_equal(d, "42-xy", 5);
	free(d);
	assert_null(b.data);
	pd_buf_fini(&b);
}

static void test_json_string(void **state)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_buf_json_string(&b, "a\"b\\c\n\t\x01 é"), 0);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	assert_string_equal((char *)b.data, "\"a\\\"b\\\\c\\n\\t\\u0001 é\"");
	pd_buf_fini(&b);
}

static void test_gzip_roundtrip(void **state)
{
	size_t n = 1 << 20;
	uint8_t *in = malloc(n);
	for (size_t i = 0; i < n; i++)
		in[i] = (uint8_t)(i * 7 / 13);
	uint8_t *gz, *out;
	size_t gzlen, outlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(in, n, 6, &gz, &gzlen, &err), 0);
	assert_true(pd_gzip_is(gz, gzlen));
	assert_int_equal(pd_gunzip(gz, gzlen, n, &out, &outlen, &err), 0);
	assert_int_equal(outlen, n);
	assert_memory_equal(in, out, n);
	free(out);

	/* one byte under the size: refused, with the limit in the message */
	assert_int_equal(pd_gunzip(gz, gzlen, n - 1, &out, &outlen, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "limit"));
	assert_null(out);

	/* truncated */
	assert_int_equal(pd_gunzip(gz, gzlen / 2, n, &out, &outlen, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "truncated"));

	/* corrupt body */
	uint8_t *bad = malloc(gzlen);
	memcpy(bad, gz, gzlen);
	for (size_t i = 20; i < 60 && i < gzlen; i++)
		bad[i] ^= 0x5a;
	assert_int_not_equal(pd_gunzip(bad, gzlen, n, &out, &outlen, &err), 0);
	free(bad);

	/* two members read as one stream; trailing junk refused */
	uint8_t *two = malloc(2 * gzlen + 3);
	memcpy(two, gz, gzlen);
	memcpy(two + gzlen, gz, gzlen);
	assert_int_equal(pd_gunzip(two, 2 * gzlen, 2 * n, &out, &outlen, &err), 0);
	assert_int_equal(outlen, 2 * n);
	free(out);
	memcpy(two + gzlen, "xyz", 3);
	assert_int_equal(pd_gunzip(two, gzlen + 3, 2 * n, &out, &outlen, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "trailing"));
	free(two);
	free(gz);
	free(in);
}

static void test_gzip_bomb(void **state)
{
	/* 64 MiB of zeros compress to ~64 KiB: a 1 MiB cap stops it early */
	size_t n = 64u << 20;
	uint8_t *zeros = calloc(1, n);
	uint8_t *gz, *out;
	size_t gzlen, outlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(zeros, n, 9, &gz, &gzlen, &err), 0);
	free(zeros);
	assert_true(gzlen < n / 100);
	assert_int_equal(pd_gunzip(gz, gzlen, 1u << 20, &out, &outlen, &err), PD_ETOOBIG);
	free(gz);
}

static void test_file(void **state)
{
	char path[] = "/tmp/pd_test_util_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	struct pd_err err = {0};
	assert_int_equal(pd_file_write(path, "hello", 5, &err), 0);
	uint8_t *d;
	size_t len;
	assert_int_equal(pd_file_read(path, 5, &d, &len, &err), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(d, "hello", 5);
	free(d);
	assert_int_equal(pd_file_read(path, 4, &d, &len, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, path));
	unlink(path);
	assert_int_equal(pd_file_read(path, 100, &d, &len, &err), PD_EIO);
	assert_non_null(strstr(err.msg, "No such file"));
}

static void test_u64map(void **state)
{
	struct pd_u64map m;
	pd_u64map_init(&m);
	uint32_t v;
	assert_int_equal(pd_u64map_get(&m, 5, &v), 0);
	for (uint64_t k = 1; k <= 100000; k++)
		assert_int_equal(pd_u64map_put(&m, k * 0x9e3779b97f4a7c15ULL, (uint32_t)k), 0);
	for (uint64_t k = 1; k <= 100000; k++) {
		assert_int_equal(pd_u64map_get(&m, k * 0x9e3779b97f4a7c15ULL, &v), 1);
		assert_int_equal(v, k);
	}
	assert_int_equal(pd_u64map_put(&m, 0x9e3779b97f4a7c15ULL, 7), 0);
	assert_int_equal(m.len, 100000);
	assert_int_equal(pd_u64map_get(&m, 0x9e3779b97f4a7c15ULL, &v), 1);
	assert_int_equal(v, 7);
	assert_int_equal(pd_u64map_get(&m, 3, &v), 0);
	pd_u64map_fini(&m);
}

static void test_hash(void **state)
{
	assert_int_equal(pd_hash_bytes("abc", 3, 0), pd_hash_bytes("abc", 3, 0));
	assert_int_not_equal(pd_hash_bytes("abc", 3, 0), pd_hash_bytes("abd", 3, 0));
	assert_int_not_equal(pd_hash_bytes("abc", 3, 0), pd_hash_bytes("abc", 3, 1));
	assert_int_not_equal(pd_hash_bytes("", 0, 0), pd_hash_bytes("\0", 1, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_err),        cmocka_unit_test(test_arena),
		cmocka_unit_test(test_buf),        cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_gzip_roundtrip), cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_file),       cmocka_unit_test(test_u64map),
		cmocka_unit_test(test_hash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
