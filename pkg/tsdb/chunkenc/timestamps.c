/* timestamps.c: the timestamp chunk, Prometheus's double-delta encoding.
 *
 *   ┌────────────────┬──────────────┬──────────────────┬─────────────────────────┐
 *   │ count (2 B, BE)│ t0 (varint)  │ t1-t0 (uvarint)  │ delta-of-delta bits ... │
 *   └────────────────┴──────────────┴──────────────────┴─────────────────────────┘
 *
 * Each later timestamp is stored as dod = (t_n - t_n-1) - (t_n-1 - t_n-2), MSB first:
 *   dod == 0                  '0'
 *   -8191 <= dod <= 8192      '10'   + 14 bits
 *   -65535 <= dod <= 65536    '110'  + 17 bits
 *   -524287 <= dod <= 524288  '1110' + 20 bits
 *   otherwise                 '1111' + 64 bits
 * so a series scraped at a steady interval costs one bit per sample. Negative and
 * positive dods of the same size cost the same. */
#include <string.h>

#include "profd/chunkenc.h"

void pd_chunkenc_ts_init(struct pd_chunkenc_ts *c)
{
	memset(c, 0, sizeof(*c));
	pd_buf_init(&c->b, 0);
}

void pd_chunkenc_ts_fini(struct pd_chunkenc_ts *c)
{
	pd_buf_fini(&c->b);
}

static int put_bits(struct pd_chunkenc_ts *c, uint64_t v, unsigned n)
{
	while (n) {
		if (c->bit == 0) {
			uint8_t z = 0;
			if (pd_buf_append(&c->b, &z, 1))
				return PD_ENOMEM;
		}
		unsigned room = 8 - c->bit;
		unsigned take = n < room ? n : room;
		uint8_t chunk = (uint8_t)((v >> (n - take)) & ((1u << take) - 1));
		c->b.data[c->b.len - 1] |= (uint8_t)(chunk << (room - take));
		c->bit = (uint8_t)((c->bit + take) & 7);
		n -= take;
	}
	return 0;
}

static int put_uvarint(struct pd_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	return pd_buf_append(b, tmp, n);
}

int pd_chunkenc_ts_append(struct pd_chunkenc_ts *c, int64_t t, struct pd_err *err)
{
	int rc = 0;
	if (c->count == PD_CHUNKENC_MAX_SAMPLES)
		return pd_err_set(err, PD_ETOOBIG, "timestamp chunk is full (%d samples)",
				  PD_CHUNKENC_MAX_SAMPLES);
	if (c->count && t <= c->t)
		return pd_err_set(err, PD_EINVAL,
				  "timestamp %lld is not after the last one in the chunk (%lld)",
				  (long long)t, (long long)c->t);
	if (c->count == 0) {
		uint8_t hdr[2] = {0, 0};
		rc = pd_buf_append(&c->b, hdr, 2);
		if (!rc)
			rc = put_uvarint(&c->b, ((uint64_t)t << 1) ^ (uint64_t)(t >> 63));
	} else if ((uint64_t)t - (uint64_t)c->t > (uint64_t)INT64_MAX) {
		return pd_err_set(err, PD_EINVAL, "timestamp %lld is too far after %lld", (long long)t,
				  (long long)c->t);
	} else if (c->count == 1) {
		uint64_t d = (uint64_t)t - (uint64_t)c->t;
		rc = put_uvarint(&c->b, d);
		c->delta = (int64_t)d;
	} else {
		int64_t d = (int64_t)((uint64_t)t - (uint64_t)c->t);
		int64_t dod = (int64_t)((uint64_t)d - (uint64_t)c->delta);
		if (dod == 0)
			rc = put_bits(c, 0, 1);
		else if (dod >= -8191 && dod <= 8192)
			rc = put_bits(c, 2, 2) || put_bits(c, (uint64_t)dod, 14);
		else if (dod >= -65535 && dod <= 65536)
			rc = put_bits(c, 6, 3) || put_bits(c, (uint64_t)dod, 17);
		else if (dod >= -524287 && dod <= 524288)
			rc = put_bits(c, 14, 4) || put_bits(c, (uint64_t)dod, 20);
		else
			rc = put_bits(c, 15, 4) || put_bits(c, (uint64_t)dod, 64);
		c->delta = d;
	}
	if (rc)
		return pd_err_set(err, PD_ENOMEM, "out of memory appending a timestamp");
	c->t = t;
	c->count++;
	c->b.data[0] = (uint8_t)(c->count >> 8);
	c->b.data[1] = (uint8_t)c->count;
	return 0;
}

const uint8_t *pd_chunkenc_ts_bytes(const struct pd_chunkenc_ts *c, size_t *len)
{
	*len = c->b.len;
	return c->b.data;
}

uint16_t pd_chunkenc_ts_count(const uint8_t *p, size_t len)
{
	return len >= 2 ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}

void pd_chunkenc_ts_iter_init(struct pd_chunkenc_ts_iter *it, const uint8_t *p, size_t len)
{
	memset(it, 0, sizeof(*it));
	it->p = p;
	it->len = len;
	if (len < 2) {
		it->err = len ? PD_ECORRUPT : 0;
		return;
	}
	it->count = pd_chunkenc_ts_count(p, len);
	it->bitpos = 16;
}

static int get_uvarint(struct pd_chunkenc_ts_iter *it, uint64_t *v)
{
	size_t pos = it->bitpos / 8;
	uint64_t r = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (pos >= it->len)
			return -1;
		uint8_t b = it->p[pos++];
		if (i == 9 && b > 1)
			return -1;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			it->bitpos = pos * 8;
			*v = r;
			return 0;
		}
	}
	return -1;
}

static int get_bits(struct pd_chunkenc_ts_iter *it, unsigned n, uint64_t *v)
{
	if (n > it->len * 8 - it->bitpos)
		return -1;
	uint64_t r = 0;
	while (n) {
		size_t byte = it->bitpos / 8;
		unsigned off = it->bitpos % 8;
		unsigned room = 8 - off;
		unsigned take = n < room ? n : room;
		uint8_t bits = (uint8_t)((it->p[byte] >> (room - take)) & ((1u << take) - 1));
		r = (r << take) | bits;
		it->bitpos += take;
		n -= take;
	}
	*v = r;
	return 0;
}

int pd_chunkenc_ts_iter_next(struct pd_chunkenc_ts_iter *it)
{
	uint64_t v;
	if (it->err || it->read >= it->count)
		return 0;
	if (it->read == 0) {
		if (get_uvarint(it, &v))
			goto corrupt;
		it->t = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	} else if (it->read == 1) {
		/* timestamps strictly increase: a delta is positive and never wraps */
		if (get_uvarint(it, &v) || v == 0 || v > (uint64_t)INT64_MAX ||
		    it->t > INT64_MAX - (int64_t)v)
			goto corrupt;
		it->delta = (int64_t)v;
		it->t += (int64_t)v;
	} else {
		unsigned ones = 0;
		for (; ones < 4; ones++) {
			if (get_bits(it, 1, &v))
				goto corrupt;
			if (!v)
				break;
		}
		static const unsigned sizes[] = {0, 14, 17, 20, 64};
		unsigned sz = sizes[ones];
		int64_t dod = 0;
		if (sz) {
			if (get_bits(it, sz, &v))
				goto corrupt;
			if (sz != 64 && v > (1ull << (sz - 1)))
				v -= 1ull << sz; /* sign-extend */
			dod = (int64_t)v;
		}
		it->delta = (int64_t)((uint64_t)it->delta + (uint64_t)dod);
		if (it->delta <= 0 || it->t > INT64_MAX - it->delta)
			goto corrupt;
		it->t += it->delta;
	}
	it->read++;
	return 1;
corrupt:
	it->err = PD_ECORRUPT;
	return 0;
}

int pd_chunkenc_ts_totals(const uint8_t *p, size_t len, const uint8_t **sec, size_t *sec_len)
{
	struct pd_chunkenc_ts_iter it;
	pd_chunkenc_ts_iter_init(&it, p, len);
	while (pd_chunkenc_ts_iter_next(&it))
		;
	*sec = NULL;
	*sec_len = 0;
	if (pd_chunkenc_ts_iter_err(&it))
		return PD_ECORRUPT;
	size_t end = pd_chunkenc_ts_iter_end(&it);
	if (end < len) {
		*sec = p + end;
		*sec_len = len - end;
	}
	return 0;
}
