/* rowbinary.c: ClickHouse's RowBinary format, both ways. Integers are fixed-width
 * little-endian; String is an unsigned LEB128 byte count and the bytes; Array(T)
 * an LEB128 element count and the elements one after the other. The reader keeps
 * a sticky error, as profd's other binary decoders do. */
#include <string.h>

#include "clickhouse_int.h"

static int put_le(struct pd_buf *b, uint64_t v, int n)
{
	uint8_t t[8];
	for (int i = 0; i < n; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	return pd_buf_append(b, t, (size_t)n);
}

int pd_clickhouse_rb_u8(struct pd_buf *b, uint8_t v)
{
	return pd_buf_append(b, &v, 1);
}

int pd_clickhouse_rb_u32(struct pd_buf *b, uint32_t v)
{
	return put_le(b, v, 4);
}

int pd_clickhouse_rb_u64(struct pd_buf *b, uint64_t v)
{
	return put_le(b, v, 8);
}

int pd_clickhouse_rb_i64(struct pd_buf *b, int64_t v)
{
	return put_le(b, (uint64_t)v, 8);
}

int pd_clickhouse_rb_varint(struct pd_buf *b, uint64_t v)
{
	uint8_t t[10];
	int n = 0;
	do {
		t[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	return pd_buf_append(b, t, (size_t)n);
}

int pd_clickhouse_rb_string(struct pd_buf *b, const void *s, size_t len)
{
	int rc = pd_clickhouse_rb_varint(b, len);
	return rc ? rc : pd_buf_append(b, s, len);
}

void pd_clickhouse_rbr_init(struct pd_clickhouse_rbr *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->err = 0;
}

static uint64_t get_le(struct pd_clickhouse_rbr *r, int n)
{
	if (r->err || r->len - r->off < (size_t)n) {
		r->err = PD_ECORRUPT;
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->off + (size_t)i] << (8 * i);
	r->off += (size_t)n;
	return v;
}

uint8_t pd_clickhouse_rbr_u8(struct pd_clickhouse_rbr *r)
{
	return (uint8_t)get_le(r, 1);
}

uint32_t pd_clickhouse_rbr_u32(struct pd_clickhouse_rbr *r)
{
	return (uint32_t)get_le(r, 4);
}

uint64_t pd_clickhouse_rbr_u64(struct pd_clickhouse_rbr *r)
{
	return get_le(r, 8);
}

int64_t pd_clickhouse_rbr_i64(struct pd_clickhouse_rbr *r)
{
	return (int64_t)get_le(r, 8);
}

uint64_t pd_clickhouse_rbr_varint(struct pd_clickhouse_rbr *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->err || r->off >= r->len) {
			r->err = PD_ECORRUPT;
			return 0;
		}
		uint8_t byte = r->p[r->off++];
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
	}
	r->err = PD_ECORRUPT; /* more than 10 bytes */
	return 0;
}

const uint8_t *pd_clickhouse_rbr_string(struct pd_clickhouse_rbr *r, size_t *len)
{
	uint64_t n = pd_clickhouse_rbr_varint(r);
	if (r->err || n > r->len - r->off) {
		r->err = PD_ECORRUPT;
		*len = 0;
		return (const uint8_t *)"";
	}
	const uint8_t *s = r->p + r->off;
	r->off += (size_t)n;
	*len = (size_t)n;
	return s;
}

size_t pd_clickhouse_rbr_count(struct pd_clickhouse_rbr *r, size_t min_elem)
{
	uint64_t n = pd_clickhouse_rbr_varint(r);
	if (r->err)
		return 0;
	if (min_elem && n > (r->len - r->off) / min_elem) {
		r->err = PD_ECORRUPT;
		return 0;
	}
	return (size_t)n;
}

uint64_t pd_clickhouse_string_id(const void *s, size_t len)
{
	return len ? pd_labels_xxh64(s, len, 0) : 0;
}
