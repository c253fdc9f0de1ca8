/* fuzz_inflate.c: libFuzzer target for pd_inflate's two ways through a gzip body
 * (pkg/util/gzip.c): every input is inflated by pd_inflate and by pd_inflate with
 * zlib_only, and the two must agree on the result code, the message and every
 * byte. The one allowed difference is the one gzip.c documents: the fast path
 * (libdeflate) answering a stream zlib refuses for a code RFC 1951 forbids. An
 * output longer than max aborts either way.
 *
 * First byte: low two bits the mode, the next three the limit (max, from 0 B to
 * 16 MiB), the next a ratio limit of 4 (max_ratio; the output must then be at
 * most 4 times the input, both ways). The rest:
 *   0  the body as it is;
 *   1  a raw deflate stream, wrapped in a gzip header and a trailer holding the
 *      CRC-32 and size of what zlib inflates from it (up to its first error), so
 *      that whole valid members are common;
 *   2  data, compressed by pd_gzip at the level of byte 2's low nibble, then
 *      followed by byte 2's high nibble's choice of nothing, a second member,
 *      a zero byte, or the data itself (garbage);
 *   3  a raw deflate stream wrapped as in 1, but with the CRC-32 and size of what
 *      libdeflate inflates from it: where libdeflate reads a stream zlib refuses,
 *      the fast path gets through, and zlib's message must name a forbidden code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#include <zlib.h>

#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAW_MAX ((size_t)1 << 20) /* what modes 1 and 3 inflate at most */

static const size_t maxes[8] = {0, 1, 100, 4096, 65536, 65537, (size_t)1 << 20, (size_t)16 << 20};

/* zlib's messages for the codes libdeflate 1.14 reads and zlib refuses */
static const char *const forbidden[] = {
    "invalid literal/length code",
    "invalid distance code",
    "too many length or distance symbols",
    "invalid bit length repeat",
    "invalid code lengths set",
};

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* What zlib inflates from the raw stream, up to RAW_MAX or its first error. */
static size_t zlib_raw(const uint8_t *in, size_t len, uint8_t *out)
{
	z_stream zs = {0};
	if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
		abort();
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)RAW_MAX;
	inflate(&zs, Z_FINISH);
	size_t n = RAW_MAX - zs.avail_out;
	inflateEnd(&zs);
	return n;
}

/* What libdeflate inflates from the raw stream; 0 when it refuses it. */
static size_t libdeflate_raw(const uint8_t *in, size_t len, uint8_t *out)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	if (!d)
		abort();
	size_t n = 0;
	if (libdeflate_deflate_decompress(d, in, len, out, RAW_MAX, &n) != LIBDEFLATE_SUCCESS)
		n = 0;
	libdeflate_free_decompressor(d);
	return n;
}

/* The stream in a gzip member whose trailer describes out[0..n). */
static uint8_t *wrap(const uint8_t *in, size_t len, const uint8_t *out, size_t n, size_t *gzlen)
{
	uint8_t *gz = malloc(len + 18);
	if (!gz)
		abort();
	static const uint8_t header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	memcpy(gz, header, 10);
	if (len)
		memcpy(gz + 10, in, len);
	put_le32(gz + 10 + len, (uint32_t)crc32(0, out, (uInt)n));
	put_le32(gz + 14 + len, (uint32_t)n);
	*gzlen = len + 18;
	return gz;
}

static unsigned ratio; /* the input's ratio limit (byte 0's bit 5), 0: none */

static void check(const uint8_t *buf, size_t len, size_t max)
{
	struct pd_inflate_opts fo = {.format = PD_INFLATE_GZIP, .max = max, .max_ratio = ratio};
	struct pd_inflate_opts zo = {
	    .format = PD_INFLATE_GZIP, .max = max, .zlib_only = 1, .max_ratio = ratio};
	struct pd_err fe = {0}, ze = {0};
	uint8_t *fout = NULL, *zout = NULL;
	size_t flen = 0, zlen = 0;
	uint64_t before = pd_inflate_fast_total();
	int frc = pd_inflate(buf, len, &fo, &fout, &flen, &fe);
	int fast = pd_inflate_fast_total() != before;
	int zrc = pd_inflate(buf, len, &zo, &zout, &zlen, &ze);
	if (pd_inflate_fast_total() != before + (uint64_t)fast)
		abort(); /* zlib_only went the fast way */
	if ((frc == 0 && flen > max) || (zrc == 0 && zlen > max))
		abort();
	if (ratio && ((frc == 0 && flen / ratio > len) || (zrc == 0 && zlen / ratio > len)))
		abort(); /* past the ratio limit */
	if (frc == 0 && zrc != 0 && fast) {
		int known = 0;
		for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++)
			known |= strstr(ze.msg, forbidden[i]) != NULL;
		if (!known) {
			fprintf(stderr, "fast path read a body zlib refuses: %s\n", ze.msg);
			abort();
		}
	} else if (frc != zrc || (frc && strcmp(fe.msg, ze.msg) != 0) ||
	           (frc == 0 && (flen != zlen || (flen && memcmp(fout, zout, flen) != 0)))) {
		fprintf(stderr,
		        "the two ways differ: %d \"%s\" (%zu bytes, %s) against zlib's %d \"%s\" "
		        "(%zu bytes)\n",
		        frc, frc ? fe.msg : "", flen, fast ? "fast" : "zlib", zrc,
		        zrc ? ze.msg : "", zlen);
		abort();
	}
	free(fout);
	free(zout);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int mode = data[0] & 3;
	size_t max = maxes[(data[0] >> 2) & 7];
	ratio = data[0] & 0x20 ? 4 : 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	if (mode == 0) {
		check(p, n, max);
		return 0;
	}
	if (mode == 1 || mode == 3) {
		uint8_t *out = malloc(RAW_MAX);
		if (!out)
			abort();
		size_t got = mode == 1 ? zlib_raw(p, n, out) : libdeflate_raw(p, n, out);
		size_t gzlen;
		uint8_t *gz = wrap(p, n, out, got, &gzlen);
		check(gz, gzlen, max);
		free(gz);
		free(out);
		return 0;
	}
	if (n < 1)
		return 0;
	int level = p[0] & 15, tail = p[0] >> 4 & 3;
	p++;
	n--;
	uint8_t *gz;
	size_t gzlen;
	if (pd_gzip(p, n, level > 9 ? 9 : level, &gz, &gzlen, NULL))
		return 0;
	size_t extra = tail == 1 ? gzlen : tail == 2 ? 1 : tail == 3 ? n : 0;
	uint8_t *all = malloc(gzlen + extra + 1);
	if (!all)
		abort();
	memcpy(all, gz, gzlen);
	if (tail == 1)
		memcpy(all + gzlen, gz, gzlen);
	else if (tail == 2)
		all[gzlen] = 0;
	else if (tail == 3 && n)
		memcpy(all + gzlen, p, n);
	check(all, gzlen + extra, max);
	free(all);
	free(gz);
	return 0;
}
