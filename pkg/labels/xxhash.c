/* xxhash.c: XXH64, written from the xxHash specification (doc/xxhash_spec.md), and
 * the label-set hash built on it. The label-set hash is persisted, so this file must
 * never change its output: tests/unit/test_labels.c pins known values.
 *
 * XXH64 in brief: 32-byte stripes feed four 64-bit accumulators (lanes read
 * little-endian); inputs shorter than 32 bytes start from seed + PRIME5 instead; the
 * total length is added, the remaining 8-, 4- and 1-byte pieces are mixed in, and an
 * avalanche step finishes. The streaming state below gives the same result as one
 * call over the concatenated input. */
#include "labels_int.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t rd64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t round64(uint64_t acc, uint64_t lane)
{
	acc += lane * P2;
	acc = rotl(acc, 31);
	return acc * P1;
}

static inline uint64_t merge64(uint64_t acc, uint64_t v)
{
	acc ^= round64(0, v);
	return acc * P1 + P4;
}

struct xxh64 {
	uint64_t v[4];
	uint64_t seed;
	uint64_t total;
	unsigned char buf[32];
	size_t buflen;
};

static void xxh64_init(struct xxh64 *s, uint64_t seed)
{
	s->seed = seed;
	s->v[0] = seed + P1 + P2;
	s->v[1] = seed + P2;
	s->v[2] = seed;
	s->v[3] = seed - P1;
	s->total = 0;
	s->buflen = 0;
}

static void stripe(uint64_t v[4], const unsigned char *p)
{
	v[0] = round64(v[0], rd64(p));
	v[1] = round64(v[1], rd64(p + 8));
	v[2] = round64(v[2], rd64(p + 16));
	v[3] = round64(v[3], rd64(p + 24));
}

static void xxh64_update(struct xxh64 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->total += len;
	if (s->buflen + len < 32) {
		memcpy(s->buf + s->buflen, p, len);
		s->buflen += len;
		return;
	}
	if (s->buflen) {
		size_t take = 32 - s->buflen;
		memcpy(s->buf + s->buflen, p, take);
		stripe(s->v, s->buf);
		p += take;
		len -= take;
		s->buflen = 0;
	}
	while (len >= 32) {
		stripe(s->v, p);
		p += 32;
		len -= 32;
	}
	memcpy(s->buf, p, len);
	s->buflen = len;
}

static uint64_t xxh64_digest(const struct xxh64 *s)
{
	const unsigned char *p = s->buf;
	size_t len = s->buflen;
	uint64_t h;

	if (s->total >= 32) {
		h = rotl(s->v[0], 1) + rotl(s->v[1], 7) + rotl(s->v[2], 12) + rotl(s->v[3], 18);
		for (int i = 0; i < 4; i++)
			h = merge64(h, s->v[i]);
	} else {
		h = s->seed + P5;
	}
	h += s->total;
	while (len >= 8) {
		h ^= round64(0, rd64(p));
		h = rotl(h, 27) * P1 + P4;
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		h ^= (uint64_t)rd32(p) * P1;
		h = rotl(h, 23) * P2 + P3;
		p += 4;
		len -= 4;
	}
	while (len > 0) {
		h ^= (uint64_t)*p * P5;
		h = rotl(h, 11) * P1;
		p++;
		len--;
	}
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

uint64_t pd_labels_xxh64(const void *p, size_t len, uint64_t seed)
{
	struct xxh64 s;
	xxh64_init(&s, seed);
	xxh64_update(&s, p, len);
	return xxh64_digest(&s);
}

uint64_t pd_labels_hash(const struct pd_labels *ls)
{
	static const unsigned char sep = 0xff;
	struct xxh64 s;

	xxh64_init(&s, 0);
	for (size_t i = 0; i < ls->n; i++) {
		xxh64_update(&s, ls->l[i].name, ls->l[i].name_len);
		xxh64_update(&s, &sep, 1);
		xxh64_update(&s, ls->l[i].value, ls->l[i].value_len);
		xxh64_update(&s, &sep, 1);
	}
	return xxh64_digest(&s);
}
