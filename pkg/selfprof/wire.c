/* wire.c: the few pieces of the protobuf wire format that writing profile.proto
 * needs: varints, varint fields, length-delimited fields and packed repeated
 * varints, appended to a bounded buffer with a sticky error. */
#include <string.h>

#include "selfprof_int.h"

static void put(struct sp_wire *w, const void *p, size_t n)
{
	if (!w->berr)
		w->berr = pd_buf_append(&w->b, p, n);
}

void sp_wire_varint(struct sp_wire *w, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		tmp[n++] = (uint8_t)(c | (v ? 0x80 : 0));
	} while (v);
	put(w, tmp, n);
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void sp_wire_uint(struct sp_wire *w, unsigned field, uint64_t v)
{
	if (!v)
		return;
	sp_wire_varint(w, (uint64_t)field << 3);
	sp_wire_varint(w, v);
}

void sp_wire_int(struct sp_wire *w, unsigned field, int64_t v)
{
	sp_wire_uint(w, field, (uint64_t)v); /* int64: two's complement, 10 bytes if < 0 */
}

void sp_wire_bytes(struct sp_wire *w, unsigned field, const void *p, size_t n)
{
	sp_wire_varint(w, (uint64_t)field << 3 | 2);
	sp_wire_varint(w, n);
	put(w, p, n);
}

void sp_wire_packed_u64(struct sp_wire *w, unsigned field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += varint_len(v[i]);
	sp_wire_varint(w, (uint64_t)field << 3 | 2);
	sp_wire_varint(w, len);
	for (size_t i = 0; i < n; i++)
		sp_wire_varint(w, v[i]);
}

void sp_wire_packed_i64(struct sp_wire *w, unsigned field, const int64_t *v, size_t n)
{
	if (!n)
		return;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += varint_len((uint64_t)v[i]);
	sp_wire_varint(w, (uint64_t)field << 3 | 2);
	sp_wire_varint(w, len);
	for (size_t i = 0; i < n; i++)
		sp_wire_varint(w, (uint64_t)v[i]);
}
