/* test_util.c: unit tests of pkg/util: errors, arena limits, arenas reusing the
 * blocks of destroyed ones, bounded buffers, gzip with its size cap (and its
 * compressor kept between calls), file reading, hashing and the integer map. */
#include <pthread.h>
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

/* One round of arenas as a request makes them: small and large allocations,
 * each filled with a pattern of its own, checked, then the arena destroyed. A
 * zeroed allocation is zero whatever the block held before. */
static void arena_round(unsigned seed)
{
	struct pd_arena *a = pd_arena_create(0);
	assert_non_null(a);
	enum { N = 200 };
	uint8_t *p[N];
	size_t n[N];
	for (size_t i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		n[i] = i % 50 == 0 ? 20000 + seed % 300000 : 1 + seed % 3000;
		p[i] = i % 2 ? pd_arena_calloc(a, n[i], 1) : pd_arena_alloc(a, n[i]);
		assert_non_null(p[i]);
		assert_int_equal((uintptr_t)p[i] % 16, 0);
		if (i % 2)
			for (size_t k = 0; k < n[i]; k++)
				assert_int_equal(p[i][k], 0);
		memset(p[i], (int)(i & 0xff), n[i]);
	}
	for (size_t i = 0; i < N; i++)
		for (size_t k = 0; k < n[i]; k += 97)
			assert_int_equal(p[i][k], (uint8_t)(i & 0xff));
	pd_arena_destroy(a);
}

static void *arena_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int r = 0; r < 20; r++)
		arena_round(seed + (unsigned)r);
	return NULL;
}

/* A thread keeps the blocks of the arenas it destroys for its next ones: the
 * memory comes back zeroed where asked, never shared between live arenas, the
 * limit still holds, and threads that end free what they kept (the sanitizer
 * build would report a leak). */
static void test_arena_reuse(void **state)
{
	for (unsigned r = 0; r < 20; r++)
		arena_round(r);
	/* a limited arena after large ones were kept */
	struct pd_arena *a = pd_arena_create(1000);
	assert_non_null(pd_arena_alloc(a, 900));
	assert_null(pd_arena_alloc(a, 200));
	pd_arena_destroy(a);
	/* two live arenas at once never share a block */
	struct pd_arena *x = pd_arena_create(0), *y = pd_arena_create(0);
	uint8_t *px = pd_arena_alloc(x, 100000), *py = pd_arena_alloc(y, 100000);
	memset(px, 1, 100000);
	memset(py, 2, 100000);
	assert_int_equal(px[99999], 1);
	pd_arena_destroy(x);
	pd_arena_destroy(y);
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, arena_thread, (void *)(i * 1000)), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
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

/* Bytes that start no UTF-8 sequence become U+FFFD, one each, as Go's
 * encoding/json writes them; valid sequences of every length pass as they are. */
static void test_json_string_utf8(void **state)
{
	(void)state;
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"\xff", "\"\xef\xbf\xbd\""},
	    {"a\xc3", "\"a\xef\xbf\xbd\""},                   /* cut short at the end */
	    {"\xe2\x82", "\"\xef\xbf\xbd\xef\xbf\xbd\""},       /* cut short, 3 bytes */
	    {"\xc0\x80x", "\"\xef\xbf\xbd\xef\xbf\xbdx\""},     /* overlong NUL */
	    {"\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* a surrogate */
	    {"\xf4\x90\x80\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* > U+10FFFF */
	    {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd\""},
	    {"\x80\"\xbf\n", "\"\xef\xbf\xbd\\\"\xef\xbf\xbd\\n\""}, /* stray continuations among escapes */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct pd_buf b;
		pd_buf_init(&b, 0);
		assert_int_equal(pd_buf_json_string(&b, cases[i].in), 0);
		assert_int_equal(pd_buf_append(&b, "", 1), 0);
		assert_string_equal((char *)b.data, cases[i].want);
		pd_buf_fini(&b);
	}
}

/* pd_buf_json_stringn writes every one of its bytes: a NUL as \u0000, what
 * follows it too, and a UTF-8 sequence cut by the length (not by a NUL) as U+FFFD. */
static void test_json_stringn(void **state)
{
	(void)state;
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_buf_json_stringn(&b, "dup\0a\0\xc3\xa9", 8), 0);
	static const char want[] = "\"dup\\u0000a\\u0000\xc3\xa9\"";
	assert_int_equal(b.len, sizeof(want) - 1);
	assert_memory_equal(b.data, want, b.len);
	b.len = 0;
	assert_int_equal(pd_buf_json_stringn(&b, "x\xc3\xa9", 2), 0); /* é cut after its first byte */
	static const char cut[] = "\"x\xef\xbf\xbd\"";
	assert_int_equal(b.len, sizeof(cut) - 1);
	assert_memory_equal(b.data, cut, b.len);
	b.len = 0;
	assert_int_equal(pd_buf_json_stringn(&b, NULL, 0), 0);
	assert_int_equal(b.len, 2);
	assert_memory_equal(b.data, "\"\"", 2);
	pd_buf_fini(&b);
}

/* Both forms of pd_base64_decode: strict (Go's StdEncoding.Strict(), Basic
 * credentials) and lenient (kubeconfig: wrapped, unpadded). */
static void test_base64(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		unsigned flags;
		int rc;
		const char *want;
	} cases[] = {
	    {"", PD_BASE64_STRICT, 0, ""},
	    {"QQ==", PD_BASE64_STRICT, 0, "A"},
	    {"QUI=", PD_BASE64_STRICT, 0, "AB"},
	    {"QUJD", PD_BASE64_STRICT, 0, "ABC"},
	    {"dXNlcjpwYXNz", PD_BASE64_STRICT, 0, "user:pass"},
	    {"+/+/", PD_BASE64_STRICT, 0, "\xfb\xff\xbf"},
	    {"QQ", PD_BASE64_STRICT, PD_EINVAL, NULL},       /* padding missing */
	    {"QQ=", PD_BASE64_STRICT, PD_EINVAL, NULL},      /* half the padding */
	    {"QUI==", PD_BASE64_STRICT, PD_EINVAL, NULL},    /* too much padding */
	    {"QR==", PD_BASE64_STRICT, PD_EINVAL, NULL},     /* dropped bits not zero */
	    {"QUJ=", PD_BASE64_STRICT, PD_EINVAL, NULL},     /* dropped bits not zero */
	    {"QQ==QQ==", PD_BASE64_STRICT, PD_EINVAL, NULL}, /* data after padding */
	    {"QU JD", PD_BASE64_STRICT, PD_EINVAL, NULL},    /* white space */
	    {"QUJ*", PD_BASE64_STRICT, PD_EINVAL, NULL},     /* not the alphabet */
	    {"Q===", PD_BASE64_STRICT, PD_EINVAL, NULL},
	    {"QQ", 0, 0, "A"},
	    {"QUI", 0, 0, "AB"},
	    {"QU\nJD\r\n QQ==\n", 0, 0, "ABCA"},
	    {"QR==", 0, 0, "A"}, /* the dropped bits are not looked at */
	    {"Q", 0, PD_EINVAL, NULL},
	    {"QUJDQ", 0, PD_EINVAL, NULL},
	    {"QQ===", 0, PD_EINVAL, NULL},
	    {"QQ=A", 0, PD_EINVAL, NULL},
	    {"QU-D", 0, PD_EINVAL, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		uint8_t out[16];
		size_t n = 99;
		const char *in = cases[i].in;
		int rc = pd_base64_decode(in, strlen(in), cases[i].flags, out, sizeof(out), &n);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0) {
			assert_int_equal(n, strlen(cases[i].want));
			assert_memory_equal(out, cases[i].want, n);
		}
	}
	/* the room the caller gives is kept to */
	uint8_t small[2];
	size_t n;
	assert_int_equal(pd_base64_decode("QUJD", 4, PD_BASE64_STRICT, small, 2, &n), PD_ETOOBIG);
	assert_int_equal(pd_base64_decode("QUI=", 4, PD_BASE64_STRICT, small, 2, &n), 0);
	assert_int_equal(n, 2);
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

/* Compresses buf at level and checks that it comes back. */
static void gzip_check(const uint8_t *buf, size_t n, int level)
{
	uint8_t *gz, *out;
	size_t gzlen, outlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(buf, n, level, &gz, &gzlen, &err), 0);
	assert_true(pd_gzip_is(gz, gzlen));
	assert_int_equal(pd_gunzip(gz, gzlen, n, &out, &outlen, &err), 0);
	assert_int_equal(outlen, n);
	if (n)
		assert_memory_equal(buf, out, n);
	free(gz);
	free(out);
}

static void *gzip_thread(void *arg)
{
	const uint8_t *in = arg;
	for (int r = 0; r < 10; r++)
		gzip_check(in + r, 200000 - (size_t)r * 1000, r % 3 == 0 ? 6 : 1);
	return NULL;
}

/* The compressor a thread keeps between calls gives whole, independent streams
 * whatever the sizes and levels before, in one thread and in several. */
static void test_gzip_reuse(void **state)
{
	size_t n = 300000;
	uint8_t *in = malloc(n);
	for (size_t i = 0; i < n; i++)
		in[i] = (uint8_t)((i * 2654435761u) >> 13 & (i % 7 ? 0x0f : 0xff));
	static const size_t sizes[] = {0, 1, 100, 40000, 300000, 17, 250000};
	static const int levels[] = {1, 1, 6, 1, 9, 1, 0};
	for (size_t r = 0; r < 3; r++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			gzip_check(in, sizes[i], levels[(i + r) % 7]);
	/* an invalid level fails, and the next call still works */
	uint8_t *gz;
	size_t gzlen;
	struct pd_err err = {0};
	assert_int_not_equal(pd_gzip(in, 100, 42, &gz, &gzlen, &err), 0);
	gzip_check(in, 1000, 1);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, gzip_thread, in), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
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

/* Runs one log call with stderr sent to a file and returns what it wrote
 * (static storage). */
static const char *logged(int json, void (*call)(void))
{
	static char out[4096];
	struct pd_err err = {0};
	char path[] = "/tmp/pd_log_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(pd_log_setup("debug", json ? "json" : "logfmt", &err), 0);
	fflush(stderr);
	int saved = dup(2);
	assert_true(dup2(fd, 2) >= 0);
	call();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	ssize_t n = read(fd, out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	assert_int_equal(pd_log_setup("info", "logfmt", &err), 0);
	return out;
}

static void log_scrape_failed(void)
{
	pd_log_debug("scrape", "scrape failed", "scrape_pool=%s target=%s err=%s took=%.3fs n=%zu",
	             "api", "http://10.0.0.7:8080/debug/pprof/heap",
	             "Get \"http://10.0.0.7:8080\": connection refused", 1.5, (size_t)42);
}

static void log_plain(void)
{
	pd_log_info("main", "stopped");
}

static void log_kinds(void)
{
	pd_log_warn("tsdb", "block written",
	            "ulid=%.*s mint=%lld maxt=%llu id=%#x pct=%d%% empty=%s", 3, "01JXYZ", -5LL,
	            7ULL, 255u, 9, "");
}

static void log_hostile(void)
{
	pd_log_warn("api", "call graph layout warned", "graphviz=%s plain=%s",
	            "x\nts=2026-01-01T00:00:00Z level=error msg=\"forged\"\r\x7f\xff\xe2\x80\xa8y",
	            "caf\xc3\xa9\xe2\x80\xa9");
}

/* A value that holds a forged log line, a carriage return, DEL, a byte that is
 * not UTF-8 or a Unicode line separator stays inside its field of one line. */
static void test_log_hostile(void **state)
{
	(void)state;
	const char *s = logged(0, log_hostile);
	assert_non_null(strstr(s, " graphviz=\"x\\nts=2026-01-01T00:00:00Z level=error "
	                          "msg=\\\"forged\\\"\\u000d\\u007f\xef\xbf\xbd\\u2028y\" "
	                          "plain=\"caf\xc3\xa9\\u2029\"\n"));
	assert_int_equal(strchr(s, '\n') - s + 1, (long)strlen(s));
	s = logged(1, log_hostile);
	assert_non_null(strstr(s, "\"graphviz\":\"x\\nts=2026-01-01T00:00:00Z level=error "
	                          "msg=\\\"forged\\\"\\u000d\\u007f\xef\xbf\xbd\\u2028y\""));
	assert_int_equal(strchr(s, '\n') - s + 1, (long)strlen(s));
}

/* Values go into key=value fields, never into msg; logfmt quotes a value only
 * when it needs it, JSON gives every field as a string. */
static void test_log_fields(void **state)
{
	const char *s = logged(0, log_scrape_failed);
	assert_non_null(strstr(s, " level=debug component=scrape msg=\"scrape failed\" "
	                          "scrape_pool=api target=http://10.0.0.7:8080/debug/pprof/heap "
	                          "err=\"Get \\\"http://10.0.0.7:8080\\\": connection refused\" "
	                          "took=1.500s n=42\n"));
	assert_true(strncmp(s, "ts=", 3) == 0);
	s = logged(1, log_scrape_failed);
	assert_non_null(strstr(s,
	                       "\"level\":\"debug\",\"component\":\"scrape\","
	                       "\"msg\":\"scrape failed\",\"scrape_pool\":\"api\","
	                       "\"target\":\"http://10.0.0.7:8080/debug/pprof/heap\","
	                       "\"err\":\"Get \\\"http://10.0.0.7:8080\\\": connection refused\","
	                       "\"took\":\"1.500s\",\"n\":\"42\"}\n"));
	assert_true(strncmp(s, "{\"ts\":", 6) == 0);
	s = logged(0, log_plain);
	assert_non_null(strstr(s, " level=info component=main msg=\"stopped\"\n"));
	s = logged(1, log_plain);
	assert_non_null(strstr(s, "\"component\":\"main\",\"msg\":\"stopped\"}\n"));
	s = logged(0, log_kinds);
	assert_non_null(strstr(s, "msg=\"block written\" ulid=01J mint=-5 maxt=7 id=0xff pct=9% "
	                          "empty=\"\"\n"));
}


static void log_secret_url(void)
{
	pd_log_error("clickhouse", "ClickHouse is not usable", "url=%s err=%s",
	             "http://profd:hunter2@127.0.0.1:8123/",
	             "clickhouse http://profd:hunter2@127.0.0.1:8123: Couldn't connect to server");
}

/* A URL's password never reaches the log, in either format. */
static void test_log_redacts_url_password(void **state)
{
	for (int json = 0; json < 2; json++) {
		const char *s = logged(json, log_secret_url);
		assert_null(strstr(s, "hunter2"));
		assert_non_null(strstr(s, json ? "\"url\":\"http://profd:xxxxx@127.0.0.1:8123/\""
		                                : " url=http://profd:xxxxx@127.0.0.1:8123/ "));
		assert_non_null(strstr(s, "clickhouse http://profd:xxxxx@127.0.0.1:8123: Couldn't"));
	}
}

/* Passwords in URLs become xxxxx wherever the URLs stand in the text; users,
 * hosts, paths and URLs without a password stay as they were. */
static void test_redact_urls(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"http://user:password@host/", "http://user:xxxxx@host/"},
	    {"https://u:p@h:8123", "https://u:xxxxx@h:8123"},
	    {"http://user@host/", "http://user@host/"},
	    {"http://host:8123/", "http://host:8123/"},
	    {"http://host/path?x=a:b@c", "http://host/path?x=a:b@c"},
	    {"--storage.clickhouse.url=http://a:b:c@d@h/x", "--storage.clickhouse.url=http://a:xxxxx@h/x"},
	    {"http://a:s1@h1,http://h2,https://b:s2@h3/", "http://a:xxxxx@h1,http://h2,https://b:xxxxx@h3/"},
	    {"err=Get \"http://u:p%40ss@h\": refused", "err=Get \"http://u:xxxxx@h\": refused"},
	    {"no url: a:b@c", "no url: a:b@c"},
	    {"://:@", "://:xxxxx@"},
	    {"", ""},
	};
	char out[128];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = pd_redact_urls(out, sizeof(out), cases[i].in);
		assert_string_equal(out, cases[i].want);
		assert_int_equal(n, strlen(cases[i].want));
		char *d = pd_redact_urls_dup(cases[i].in);
		assert_non_null(d);
		assert_string_equal(d, cases[i].want);
		free(d);
		assert_int_equal(pd_url_has_password(cases[i].in),
		                 strcmp(cases[i].in, cases[i].want) != 0);
	}
	/* a short buffer cuts the copy, NUL-terminated, and never shows the password */
	assert_int_equal(pd_redact_urls(out, 12, "http://u:longpassword@h/"), 11);
	assert_string_equal(out, "http://u:xx");
	assert_int_equal(pd_redact_urls(out, 1, "http://u:p@h"), 0);
	assert_string_equal(out, "");
	assert_int_equal(pd_url_has_password(NULL), 0);
	char arg[] = "--storage.clickhouse.cluster-nodes=http://a:pw@h1/,http://h2,http://b:c:d@h3";
	pd_url_passwords_blank(arg);
	assert_string_equal(arg, "--storage.clickhouse.cluster-nodes=http://a:xx@h1/,http://h2,"
	                         "http://b:xxx@h3");
	pd_url_passwords_blank(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_err),
	    cmocka_unit_test(test_arena),
	    cmocka_unit_test(test_buf),
	    cmocka_unit_test(test_json_string),
	    cmocka_unit_test(test_json_string_utf8),
	    cmocka_unit_test(test_json_stringn),
	    cmocka_unit_test(test_base64),
	    cmocka_unit_test(test_gzip_roundtrip),
	    cmocka_unit_test(test_gzip_bomb),
	    cmocka_unit_test(test_file),
	    cmocka_unit_test(test_u64map),
	    cmocka_unit_test(test_hash),
	    cmocka_unit_test(test_arena_reuse),
	    cmocka_unit_test(test_gzip_reuse),
	    cmocka_unit_test(test_log_fields),
	    cmocka_unit_test(test_log_hostile),
	    cmocka_unit_test(test_log_redacts_url_password),
	    cmocka_unit_test(test_redact_urls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
