/* md5.c: MD5 as RFC 1321 defines it, for the hashmod action, which Prometheus
 * defines as the last 8 bytes of MD5(value), big-endian, modulo the modulus. MD5 is
 * used here as a stable spreading function, not for security. One-shot only: the
 * input is one joined label value.
 *
 * The message is padded with 0x80, zeros to 56 mod 64 bytes, and its bit length
 * as a 64-bit little-endian integer; each 64-byte block goes through four rounds
 * of 16 steps; the digest is the state A B C D, each little-endian. */
#include "relabel_int.h"

#include <string.h>

/* per-step left-rotation amounts, round by round */
/* clang-format off */
static const uint8_t S[64] = {
	7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
	5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
	4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
	6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};
/* clang-format on */

/* T[i] = floor(2^32 * |sin(i + 1)|), RFC 1321 section 3.4 */
static const uint32_t T[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static uint32_t rotl(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

static void block(uint32_t st[4], const uint8_t *p)
{
	uint32_t X[16];
	uint32_t a = st[0], b = st[1], c = st[2], d = st[3];

	for (int i = 0; i < 16; i++)
		X[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
		       (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
	for (int i = 0; i < 64; i++) {
		uint32_t f;
		int k;
		switch (i / 16) {
		case 0: /* F(b,c,d) = (b & c) | (~b & d) */
			f = (b & c) | (~b & d);
			k = i;
			break;
		case 1: /* G(b,c,d) = (b & d) | (c & ~d) */
			f = (b & d) | (c & ~d);
			k = (5 * i + 1) % 16;
			break;
		case 2: /* H(b,c,d) = b ^ c ^ d */
			f = b ^ c ^ d;
			k = (3 * i + 5) % 16;
			break;
		default: /* I(b,c,d) = c ^ (b | ~d) */
			f = c ^ (b | ~d);
			k = (7 * i) % 16;
			break;
		}
		uint32_t t = d;
		d = c;
		c = b;
		b = b + rotl(a + f + T[i] + X[k], S[i]);
		a = t;
	}
	st[0] += a;
	st[1] += b;
	st[2] += c;
	st[3] += d;
}

void pd_relabel_md5(const void *data, size_t len, uint8_t digest[16])
{
	const uint8_t *p = data;
	uint32_t st[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
	uint8_t tail[128];
	size_t full = len / 64 * 64, rest = len - full, tlen;
	uint64_t bits = (uint64_t)len * 8;

	for (size_t off = 0; off < full; off += 64)
		block(st, p + off);
	memset(tail, 0, sizeof(tail));
	if (rest)
		memcpy(tail, p + full, rest);
	tail[rest] = 0x80;
	tlen = rest < 56 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tlen - 8 + i] = (uint8_t)(bits >> (8 * i));
	block(st, tail);
	if (tlen == 128)
		block(st, tail + 64);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			digest[4 * i + j] = (uint8_t)(st[i] >> (8 * j));
}
