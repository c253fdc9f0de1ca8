/* test_inflate.c: unit tests of pd_inflate's two ways through a gzip body:
 * libdeflate's fast path for one whole member and zlib's streaming inflater. Each
 * case runs both (the second with zlib_only) and checks that they give the same
 * result code, message and bytes, and, from pd_inflate_fast_total, whether
 * libdeflate answered: the testdata profiles and plain members must go the fast
 * way, and lying trailers, several members, trailing bytes, truncation, bodies
 * over the limit, header CRCs, deadlines and cancels the zlib way. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <zlib.h>

#include "profd/util.h"

/* The outcome of one pd_inflate call. */
struct result {
	int rc;
	uint8_t *out;
	size_t len;
	char msg[PD_ERR_MSG_MAX];
	int fast; /* libdeflate answered */
};

static void run(const uint8_t *buf, size_t len, const struct pd_inflate_opts *o, struct result *r)
{
	struct pd_err err = {0};
	uint64_t before = pd_inflate_fast_total();
	r->rc = pd_inflate(buf, len, o, &r->out, &r->len, &err);
	r->fast = pd_inflate_fast_total() != before;
	snprintf(r->msg, sizeof(r->msg), "%s", r->rc ? err.msg : "");
}

/* Inflates buf both ways with max and checks that they agree; returns the
 * default way's result (r->out is the caller's) after freeing zlib's. */
static void both(const uint8_t *buf, size_t len, size_t max, struct result *r)
{
	struct pd_inflate_opts fo = {.format = PD_INFLATE_GZIP, .max = max};
	struct pd_inflate_opts zo = {.format = PD_INFLATE_GZIP, .max = max, .zlib_only = 1};
	struct result z;
	run(buf, len, &fo, r);
	run(buf, len, &zo, &z);
	assert_false(z.fast);
	assert_int_equal(r->rc, z.rc);
	assert_string_equal(r->msg, z.msg);
	if (r->rc == 0) {
		assert_non_null(r->out);
		assert_non_null(z.out);
		assert_int_equal(r->len, z.len);
		if (z.len)
			assert_memory_equal(r->out, z.out, z.len);
	} else {
		assert_null(r->out);
		assert_null(z.out);
	}
	free(z.out);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* n bytes that compress about 3:1, as profiles do */
static uint8_t *sample(size_t n)
{
	uint8_t *b = malloc(n ? n : 1);
	assert_non_null(b);
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] =
		    i % 64 < 40 ? (uint8_t) "profd_go_runtime_malloc"[i % 23] : (uint8_t)(x >> 16);
	}
	return b;
}

static int files_seen;

static int each_profile(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t n = strlen(path);
	if (type != FTW_F || n < 6 || strcmp(path + n - 6, ".pb.gz") != 0)
		return 0;
	uint8_t *gz;
	size_t len;
	struct pd_err err = {0};
	if (pd_file_read(path, 64u << 20, &gz, &len, &err))
		fail_msg("%s: %s", path, err.msg);
	if (!pd_gzip_is(gz, len)) {
		/* named .pb.gz but raw protobuf (Pyroscope's test data has such files):
		 * nothing to inflate */
		free(gz);
		return 0;
	}
	size_t isize = (size_t)gz[len - 4] | (size_t)gz[len - 3] << 8 | (size_t)gz[len - 2] << 16 |
	               (size_t)gz[len - 1] << 24;
	struct result r;
	both(gz, len, 64u << 20, &r);
	if (isize > (16u << 20)) {
		/* edge/gzip-bomb.pb.gz: past the fast path's bound and past max */
		if (r.rc != PD_ETOOBIG || r.fast)
			fail_msg("%s: rc %d (%s), fast path %s", path, r.rc, r.msg,
			         r.fast ? "taken" : "not taken");
		free(gz);
		return 0;
	}
	if (r.rc || !r.fast)
		fail_msg("%s: rc %d (%s), fast path %s", path, r.rc, r.msg,
		         r.fast ? "taken" : "not taken");
	/* the output is exactly ISIZE bytes */
	assert_int_equal(r.len, isize);
	/* one byte less than the size: the limit's error either way */
	free(r.out);
	if (r.len) {
		both(gz, len, r.len - 1, &r);
		assert_int_equal(r.rc, PD_ETOOBIG);
		assert_false(r.fast);
	}
	free(gz);
	files_seen++;
	return 0;
}

/* Every gzip'd profile of testdata/ inflates the fast way to zlib's bytes, but for
 * the bomb, which zlib refuses. */
static void test_testdata_profiles(void **state)
{
	files_seen = 0;
	assert_int_equal(nftw(PD_TESTDATA, each_profile, 16, FTW_PHYS), 0);
	assert_true(files_seen >= 20);
}

/* A plain member, an empty one, and the limits at the output's size. */
static void test_plain_members(void **state)
{
	static const size_t sizes[] = {0, 1, 100, 65536, 65537, 300000, (size_t)3 << 20};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *raw = sample(n), *gz;
		size_t gzlen;
		struct pd_err err = {0};
		assert_int_equal(pd_gzip(raw, n, 6, &gz, &gzlen, &err), 0);
		struct result r;
		both(gz, gzlen, n, &r);
		assert_int_equal(r.rc, 0);
		assert_true(r.fast);
		assert_int_equal(r.len, n);
		if (n)
			assert_memory_equal(r.out, raw, n);
		free(r.out);
		if (n) {
			both(gz, gzlen, n - 1, &r);
			assert_int_equal(r.rc, PD_ETOOBIG);
			assert_non_null(strstr(r.msg, "decompressed size exceeds the limit"));
			assert_false(r.fast);
		}
		free(gz);
		free(raw);
	}
}

/* A trailer whose ISIZE lies: too small, too large, over max, and a body whose
 * real size is over max while ISIZE says it is small. None go the fast way, and
 * zlib's errors are what the caller sees. */
static void test_lying_isize(void **state)
{
	size_t n = 200000;
	uint8_t *raw = sample(n), *gz;
	size_t gzlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(raw, n, 6, &gz, &gzlen, &err), 0);
	uint8_t *t = gz + gzlen - 4;
	struct result r;
	static const uint32_t lies[] = {0, 1, 199999, 200001, 1u << 20, 300000, UINT32_MAX};
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		put_le32(t, lies[i]);
		both(gz, gzlen, 1u << 20, &r);
		assert_int_equal(r.rc, PD_ECORRUPT);
		assert_non_null(strstr(r.msg, "incorrect length check"));
		assert_false(r.fast);
		/* over max (ISIZE says it fits or not): the limit, as before */
		both(gz, gzlen, n - 1, &r);
		assert_int_equal(r.rc, PD_ETOOBIG);
		assert_false(r.fast);
	}
	/* the real size again, with max just at it: fast */
	put_le32(t, (uint32_t)n);
	both(gz, gzlen, n, &r);
	assert_int_equal(r.rc, 0);
	assert_true(r.fast);
	free(r.out);
	free(gz);
	free(raw);
}

/* Two members read as one stream; trailing garbage, a truncated member, a corrupt
 * one and empty input refused with zlib's messages. */
static void test_members_and_damage(void **state)
{
	size_t n = 100000;
	uint8_t *raw = sample(n), *gz;
	size_t gzlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(raw, n, 6, &gz, &gzlen, &err), 0);
	uint8_t *two = malloc(2 * gzlen + 16);
	memcpy(two, gz, gzlen);
	memcpy(two + gzlen, gz, gzlen);
	struct result r;

	/* two members: the concatenation; the second's ISIZE equals the first's output,
	 * so only the bytes after the first member can tell */
	both(two, 2 * gzlen, 2 * n, &r);
	assert_int_equal(r.rc, 0);
	assert_false(r.fast);
	assert_int_equal(r.len, 2 * n);
	assert_memory_equal(r.out, raw, n);
	assert_memory_equal(r.out + n, raw, n);
	free(r.out);
	both(two, 2 * gzlen, 2 * n - 1, &r);
	assert_int_equal(r.rc, PD_ETOOBIG);

	/* trailing garbage, ending in what reads as a fitting ISIZE */
	memcpy(two + gzlen, "garbage!", 8);
	put_le32(two + gzlen + 8, (uint32_t)n);
	both(two, gzlen + 12, 2 * n, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_non_null(strstr(r.msg, "trailing data"));
	assert_false(r.fast);
	/* a zero byte after the member */
	two[gzlen] = 0;
	both(two, gzlen + 1, 2 * n, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_non_null(strstr(r.msg, "trailing data"));

	/* truncated: inside the stream, inside the trailer */
	static const size_t cuts[] = {1, 2, 10, 19, 100, 0, 1, 4, 7};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t len = i < 5 ? cuts[i] : gzlen - 8 + cuts[i];
		if (i == 4)
			len = gzlen / 2;
		both(gz, len, 2 * n, &r);
		assert_int_not_equal(r.rc, 0);
		assert_false(r.fast);
	}
	both(gz, gzlen - 1, 2 * n, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_non_null(strstr(r.msg, "truncated"));

	/* a corrupt stream and a wrong CRC */
	memcpy(two, gz, gzlen);
	for (size_t i = 30; i < 40; i++)
		two[i] ^= 0x5a;
	both(two, gzlen, 2 * n, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_false(r.fast);
	memcpy(two, gz, gzlen);
	two[gzlen - 8] ^= 1;
	both(two, gzlen, 2 * n, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_non_null(strstr(r.msg, "incorrect data check"));
	assert_false(r.fast);

	/* empty input, and a lone header */
	both(gz, 0, 2 * n, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_false(r.fast);
	both(gz, 10, 2 * n, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	free(two);
	free(gz);
	free(raw);
}

/* A header with FHCRC: libdeflate would skip its CRC-16 unchecked, so zlib reads
 * it, accepting the right one and refusing a wrong one. */
static void test_header_crc(void **state)
{
	size_t n = 5000;
	uint8_t *raw = sample(n), *gz;
	size_t gzlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(raw, n, 6, &gz, &gzlen, &err), 0);
	uint8_t *h = malloc(gzlen + 2);
	memcpy(h, gz, 10);
	h[3] |= 0x02;
	uint32_t crc = (uint32_t)crc32(0, h, 10);
	h[10] = (uint8_t)crc;
	h[11] = (uint8_t)(crc >> 8);
	memcpy(h + 12, gz + 10, gzlen - 10);
	struct result r;
	both(h, gzlen + 2, n, &r);
	assert_int_equal(r.rc, 0);
	assert_false(r.fast);
	assert_memory_equal(r.out, raw, n);
	free(r.out);
	h[10] ^= 0xff;
	both(h, gzlen + 2, n, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_non_null(strstr(r.msg, "header crc mismatch"));
	free(h);
	free(gz);
	free(raw);
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A deadline already past or a cancel already set: zlib's first slice (64 KiB)
 * completes a small body, and a larger one gives up after it, as before. */
static void test_deadline_and_cancel(void **state)
{
	size_t n = 1u << 20;
	uint8_t *raw = sample(n), *gz, *out;
	size_t gzlen, len;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(raw, n, 6, &gz, &gzlen, &err), 0);
	int cancel = 1;
	struct pd_inflate_opts past = {
	    .format = PD_INFLATE_GZIP, .max = n, .deadline_us = now_us() - 1};
	struct pd_inflate_opts cancelled = {.format = PD_INFLATE_GZIP, .max = n, .cancel = &cancel};
	uint64_t before = pd_inflate_fast_total();
	assert_int_equal(pd_inflate(gz, gzlen, &past, &out, &len, &err), PD_EIO);
	assert_non_null(strstr(err.msg, "gave up at the deadline"));
	assert_int_equal(pd_inflate(gz, gzlen, &cancelled, &out, &len, &err), PD_EIO);
	assert_non_null(strstr(err.msg, "cancelled"));
	free(gz);
	assert_int_equal(pd_gzip(raw, 1000, 6, &gz, &gzlen, &err), 0);
	assert_int_equal(pd_inflate(gz, gzlen, &past, &out, &len, &err), 0);
	assert_int_equal(len, 1000);
	free(out);
	assert_int_equal(pd_inflate(gz, gzlen, &cancelled, &out, &len, &err), 0);
	free(out);
	assert_int_equal(pd_inflate_fast_total(), before);
	/* a deadline in the future and a cancel not set: fast */
	cancel = 0;
	past.deadline_us = now_us() + 3600ll * 1000000;
	assert_int_equal(pd_inflate(gz, gzlen, &past, &out, &len, &err), 0);
	free(out);
	assert_int_equal(pd_inflate(gz, gzlen, &cancelled, &out, &len, &err), 0);
	free(out);
	assert_int_equal(pd_inflate_fast_total(), before + 2);
	free(gz);
	free(raw);
}

/* Past FAST_MAX (16 MiB) zlib inflates, however much max allows; "deflate" bodies
 * always go to zlib. */
static void test_fast_bound_and_deflate(void **state)
{
	size_t n = (16u << 20) + 1;
	uint8_t *raw = sample(n), *gz;
	size_t gzlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(raw, n, 1, &gz, &gzlen, &err), 0);
	struct result r;
	both(gz, gzlen, 64u << 20, &r);
	assert_int_equal(r.rc, 0);
	assert_false(r.fast);
	free(r.out);
	free(gz);
	assert_int_equal(pd_gzip(raw, n - 1, 1, &gz, &gzlen, &err), 0);
	both(gz, gzlen, 64u << 20, &r);
	assert_int_equal(r.rc, 0);
	assert_true(r.fast);
	free(r.out);
	/* the raw deflate stream inside the member, as HTTP's "deflate" */
	struct pd_inflate_opts o = {.format = PD_INFLATE_DEFLATE, .max = n};
	uint64_t before = pd_inflate_fast_total();
	uint8_t *out;
	size_t len;
	assert_int_equal(pd_inflate(gz + 10, gzlen - 18, &o, &out, &len, &err), 0);
	assert_int_equal(len, n - 1);
	assert_memory_equal(out, raw, n - 1);
	assert_int_equal(pd_inflate_fast_total(), before);
	free(out);
	free(gz);
	free(raw);
}

/* Appends the low n bits of v to a DEFLATE bit stream, first bit first. */
struct bits {
	uint8_t b[64];
	size_t nbits;
};

static void put_bits(struct bits *s, uint32_t v, int n)
{
	for (int i = 0; i < n; i++, s->nbits++)
		if (v >> i & 1)
			s->b[s->nbits / 8] |= (uint8_t)(1u << (s->nbits % 8));
}

/* A Huffman code, written most significant bit first. */
static void put_code(struct bits *s, uint32_t code, int n)
{
	for (int i = n - 1; i >= 0; i--)
		put_bits(s, code >> i & 1, 1);
}

/* Known difference, pinned here so that a change of it is noticed: libdeflate
 * reads the fixed code's reserved length symbol 286 (as length 258), which RFC
 * 1951 forbids and zlib refuses. A stream needs a trailer whose CRC-32 and ISIZE
 * match libdeflate's reading to get through, so only a deliberately made body
 * does; it still cannot inflate past max. */
static void test_reserved_symbol(void **state)
{
	struct bits s = {{0}, 0};
	put_bits(&s, 1, 1);          /* BFINAL */
	put_bits(&s, 1, 2);          /* BTYPE 01: fixed codes */
	put_code(&s, 0x30 + 'a', 8); /* literal 'a' */
	put_code(&s, 0xc0 + 6, 8);   /* length symbol 286 */
	put_code(&s, 0, 5);          /* distance code 0: 1 */
	put_code(&s, 0, 7);          /* end of block */
	size_t dlen = (s.nbits + 7) / 8;
	uint8_t gz[128] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	memcpy(gz + 10, s.b, dlen);
	uint8_t want[259];
	memset(want, 'a', sizeof(want));
	put_le32(gz + 10 + dlen, (uint32_t)crc32(0, want, sizeof(want)));
	put_le32(gz + 14 + dlen, sizeof(want));
	size_t len = 18 + dlen;
	struct pd_inflate_opts fo = {.format = PD_INFLATE_GZIP, .max = 1000};
	struct pd_inflate_opts zo = {.format = PD_INFLATE_GZIP, .max = 1000, .zlib_only = 1};
	struct result r;
	run(gz, len, &zo, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_non_null(strstr(r.msg, "invalid literal/length code"));
	run(gz, len, &fo, &r);
	assert_int_equal(r.rc, 0);
	assert_true(r.fast);
	assert_int_equal(r.len, sizeof(want));
	assert_memory_equal(r.out, want, sizeof(want));
	free(r.out);
	/* with max under its size, refused as before */
	fo.max = 258;
	run(gz, len, &fo, &r);
	assert_int_equal(r.rc, PD_ECORRUPT);
	assert_false(r.fast);
}

struct thread_arg {
	const uint8_t *gz;
	size_t gzlen;
	const uint8_t *raw;
	size_t n;
	int ok;
};

static void *inflate_thread(void *p)
{
	struct thread_arg *a = p;
	struct pd_inflate_opts o = {.format = PD_INFLATE_GZIP, .max = a->n};
	a->ok = 1;
	for (int i = 0; i < 50; i++) {
		uint8_t *out;
		size_t len;
		struct pd_err err = {0};
		if (pd_inflate(a->gz, a->gzlen, &o, &out, &len, &err) || len != a->n ||
		    memcmp(out, a->raw, a->n) != 0)
			a->ok = 0;
		free(out);
	}
	return NULL;
}

/* Several threads inflating at once, each with its decompressors (LeakSanitizer
 * reports one left unfreed). */
static void test_threads(void **state)
{
	size_t n = 150000;
	uint8_t *raw = sample(n), *gz;
	size_t gzlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(raw, n, 6, &gz, &gzlen, &err), 0);
	uint64_t before = pd_inflate_fast_total();
	pthread_t t[4];
	struct thread_arg a[4];
	for (int i = 0; i < 4; i++) {
		a[i] = (struct thread_arg){gz, gzlen, raw, n, 0};
		assert_int_equal(pthread_create(&t[i], NULL, inflate_thread, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_true(a[i].ok);
	}
	assert_int_equal(pd_inflate_fast_total(), before + 200);
	free(gz);
	free(raw);
}

/* Inflates buf both ways with max and a ratio limit; they must agree. */
static void both_ratio(const uint8_t *buf, size_t len, size_t max, unsigned ratio, struct result *r)
{
	struct pd_inflate_opts fo = {.format = PD_INFLATE_GZIP, .max = max, .max_ratio = ratio};
	struct pd_inflate_opts zo = {
	    .format = PD_INFLATE_GZIP, .max = max, .zlib_only = 1, .max_ratio = ratio};
	struct result z;
	run(buf, len, &fo, r);
	run(buf, len, &zo, &z);
	assert_int_equal(r->rc, z.rc);
	assert_string_equal(r->msg, z.msg);
	if (r->rc == 0) {
		assert_int_equal(r->len, z.len);
		assert_memory_equal(r->out, z.out, z.len);
	}
	free(z.out);
}

/* The ratio limit: 1 MiB of zeros (a ratio of about 1000) is refused at ratio 100
 * naming the ratio, both ways, and taken at a ratio it fits; real profiles
 * (ratios 2 to 3) pass a ratio of 4; the tighter of max and the ratio holds. */
static void test_ratio(void **state)
{
	(void)state;
	size_t n = (size_t)1 << 20;
	uint8_t *zeros = calloc(1, n), *gz;
	size_t gzlen;
	struct pd_err err = {0};
	assert_int_equal(pd_gzip(zeros, n, 9, &gz, &gzlen, &err), 0);
	unsigned fits = (unsigned)((n + gzlen - 1) / gzlen);
	struct result r;
	both_ratio(gz, gzlen, (size_t)64 << 20, 100, &r);
	assert_int_equal(r.rc, PD_ETOOBIG);
	assert_false(r.fast);
	char want[160];
	snprintf(want, sizeof(want),
	         "gzip: decompressed size exceeds 100 times the compressed size of %zu bytes (the "
	         "decompression ratio limit)",
	         gzlen);
	assert_string_equal(r.msg, want);
	both_ratio(gz, gzlen, (size_t)64 << 20, fits, &r);
	assert_int_equal(r.rc, 0);
	assert_true(r.fast);
	assert_int_equal(r.len, n);
	free(r.out);
	both_ratio(gz, gzlen, (size_t)64 << 20, fits - 1, &r);
	assert_int_equal(r.rc, PD_ETOOBIG);
	assert_non_null(strstr(r.msg, "decompression ratio limit"));
	/* max tighter than the ratio: max's message */
	both_ratio(gz, gzlen, 1000, 100, &r);
	assert_int_equal(r.rc, PD_ETOOBIG);
	assert_non_null(strstr(r.msg, "exceeds the limit of 1000 bytes"));
	free(gz);
	free(zeros);
	static const char *const real[] = {
	    "/profiles/goapp/heap.pb.gz", "/profiles/goapp/cpu.pb.gz",
	    "/profiles/prometheus/heap.pb.gz", "/profiles/labels/cpu.pb.gz"};
	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s%s", PD_TESTDATA, real[i]);
		uint8_t *b;
		size_t blen;
		assert_int_equal(pd_file_read(path, (size_t)64 << 20, &b, &blen, &err), 0);
		both_ratio(b, blen, (size_t)64 << 20, 4, &r);
		if (r.rc)
			fail_msg("%s: %s", real[i], r.msg);
		free(r.out);
		free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_testdata_profiles),
	    cmocka_unit_test(test_plain_members),
	    cmocka_unit_test(test_lying_isize),
	    cmocka_unit_test(test_members_and_damage),
	    cmocka_unit_test(test_header_crc),
	    cmocka_unit_test(test_deadline_and_cancel),
	    cmocka_unit_test(test_fast_bound_and_deflate),
	    cmocka_unit_test(test_reserved_symbol),
	    cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_ratio),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
