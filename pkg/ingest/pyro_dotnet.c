/* pyro_dotnet.c: the two repairs Pyroscope makes to pprof profiles of old .NET
 * agents (dotnetspy) before storing them: functions that all have id 0, one per
 * location, get the id of their location (FixFunctionIDForBrokenDotnet), and '-'
 * in sample type names becomes '_' (fixSampleTypes). Done on the protobuf bytes,
 * before decoding, since the decoder refuses function id 0; hand-written because
 * only three fields are touched and everything else is copied as it is. A profile
 * these fields cannot be read in is left alone for the decoder to refuse. */
#include <stdlib.h>
#include <string.h>

#include "pyro.h"

/* Reads a varint at *p (< end); 0 when malformed. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (int s = 0; s < 64 && *p < end; s += 7) {
		uint8_t c = *(*p)++;
		x |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80)) {
			*v = x;
			return 1;
		}
	}
	return 0;
}

/* One field at *p: its number, wire type and, for length-delimited fields, the
 * bytes; *p moves past it. 0 when malformed. */
struct field {
	uint64_t num, wt, v;
	const uint8_t *start, *data; /* the field's key; a length-delimited value */
	size_t len;
};

static int next(const uint8_t **p, const uint8_t *end, struct field *f)
{
	uint64_t key;
	f->start = *p;
	if (!varint(p, end, &key))
		return 0;
	f->num = key >> 3;
	f->wt = key & 7;
	switch (f->wt) {
	case 0:
		return varint(p, end, &f->v);
	case 1:
	case 5: {
		size_t n = f->wt == 1 ? 8 : 4;
		if ((size_t)(end - *p) < n)
			return 0;
		*p += n;
		return 1;
	}
	case 2:
		if (!varint(p, end, &f->v) || f->v > (uint64_t)(end - *p))
			return 0;
		f->data = *p;
		f->len = (size_t)f->v;
		*p += f->len;
		return 1;
	default:
		return 0;
	}
}

/* The id (field 1) of a Function or Location message; 0 when absent. */
static int msg_id(const uint8_t *d, size_t n, uint64_t *id)
{
	const uint8_t *p = d, *end = d + n;
	struct field f;
	*id = 0;
	while (p < end) {
		if (!next(&p, end, &f))
			return 0;
		if (f.num == 1 && f.wt == 0)
			*id = f.v;
	}
	return 1;
}

static size_t put_varint(uint8_t *o, uint64_t v)
{
	size_t n = 0;
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		o[n++] = c | (v ? 0x80 : 0);
	} while (v);
	return n;
}

int pyro_dotnet_fix(uint8_t **raw, size_t *len)
{
	uint8_t *b = *raw;
	const uint8_t *p = b, *end = b + *len;
	struct field f;
	size_t nfn = 0, nloc = 0, nst = 0, any_fn_id = 0;
	/* pass 1: count, and check that the fields read */
	while (p < end) {
		uint64_t id;
		if (!next(&p, end, &f))
			return 0;
		if (f.wt != 2)
			continue;
		if (f.num == 5) {
			if (!msg_id(f.data, f.len, &id))
				return 0;
			any_fn_id |= id != 0;
			nfn++;
		} else if (f.num == 4) {
			nloc++;
		} else if (f.num == 1) {
			nst++;
		}
	}
	/* '-' in sample type names: the strings keep their length */
	uint64_t *types = calloc(nst ? nst : 1, sizeof(*types));
	uint64_t *locs = calloc(nloc ? nloc : 1, sizeof(*locs));
	if (!types || !locs) {
		free(types);
		free(locs);
		return PD_ENOMEM;
	}
	size_t it = 0, il = 0;
	for (p = b; p < end && next(&p, end, &f);) {
		if (f.wt == 2 && f.num == 1)
			msg_id(f.data, f.len, &types[it++]); /* ValueType.type is field 1 */
		else if (f.wt == 2 && f.num == 4)
			msg_id(f.data, f.len, &locs[il++]);
	}
	uint64_t si = 0;
	for (p = b; p < end && next(&p, end, &f);) {
		if (f.wt != 2 || f.num != 6)
			continue;
		for (size_t k = 0; k < nst; k++)
			if (types[k] == si)
				for (size_t j = 0; j < f.len; j++)
					if (f.data[j] == '-')
						b[(f.data - b) + j] = '_';
		si++;
	}
	free(types);
	if (nfn == 0 || any_fn_id || nfn != nloc) {
		free(locs);
		return 0;
	}
	/* functions without ids: function i takes the id of location i */
	uint8_t *o = malloc(*len + nfn * 24);
	if (!o) {
		free(locs);
		return PD_ENOMEM;
	}
	size_t on = 0, fi = 0;
	for (p = b; p < end && next(&p, end, &f);) {
		if (!(f.wt == 2 && f.num == 5)) {
			memcpy(o + on, f.start, (size_t)(p - f.start));
			on += (size_t)(p - f.start);
			continue;
		}
		/* the message without its id fields, after a new id */
		uint8_t idf[12];
		size_t idl = 0;
		idf[idl++] = 0x08;
		idl += put_varint(idf + idl, locs[fi++]);
		size_t body = idl;
		const uint8_t *q = f.data, *qe = f.data + f.len;
		struct field g;
		while (q < qe && next(&q, qe, &g))
			if (!(g.num == 1 && g.wt == 0))
				body += (size_t)(q - g.start);
		o[on++] = 0x2a; /* field 5, length-delimited */
		on += put_varint(o + on, body);
		memcpy(o + on, idf, idl);
		on += idl;
		for (q = f.data; q < qe && next(&q, qe, &g);)
			if (!(g.num == 1 && g.wt == 0)) {
				memcpy(o + on, g.start, (size_t)(q - g.start));
				on += (size_t)(q - g.start);
			}
	}
	free(locs);
	free(*raw);
	*raw = o;
	*len = on;
	return 0;
}
