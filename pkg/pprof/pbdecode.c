/* pbdecode.c: a hand-written decoder of profile.proto into protobuf-c's generated
 * structs.
 *
 * Why by hand: perf of `profd run` scraping 10,000 targets of Go heap profiles
 * (bench/daemon.sh) put protobuf_c_message_unpack first among profd's functions,
 * 9.9% of its CPU, plus part of malloc's 5.5%. protobuf-c is generic: it scans each
 * message twice through its descriptors and allocates every sub-message, repeated
 * array and string on its own. This decoder knows the schema: a first pass over the
 * whole input checks and counts everything, then one allocation per kind of message
 * and of array takes the arena's memory, and a second pass fills it. bench/decode.sh
 * measures pd_pprof_decode (unpacking plus validation) at 1.8 times protobuf-c's
 * speed over the corpora's profiles, 1.7 to 2.0 times per profile type, and the
 * unpacking alone at 1.9 to 2.2 times (see bench/README.md). A
 * one-pass variant that grew scratch arrays and copied each into the arena at its
 * exact size was as fast or up to 1.35 times slower, and used about 10% more of
 * the arena, so the count pass stays.
 *
 * The contract is equality with protobuf-c: what this decoder accepts, protobuf-c
 * accepts as well, into structs that pack to the same bytes (tests/unit/
 * test_pbdecode.c and the fuzz target pbdecode check it). It handles only what real
 * profilers write: known fields with their proper wire types, packed or unpacked
 * repeated scalars, fields repeated in any order, minimal varints. Anything else
 * (unknown fields, which protobuf-c keeps in unknown_fields; groups and fixed-width
 * wire types; truncated, overlong or non-minimal varints and keys; lengths past the
 * end) answers "not handled", and decode.c then asks protobuf-c, so that odd input
 * is decoded or refused exactly as before. The one place the two can part is the
 * arena's cap: this decoder needs less memory for the same input (no per-field
 * bookkeeping, no rounding of each allocation), so near the cap it may decode what
 * protobuf-c would refuse for memory. It counts its whole need before it
 * allocates, and a need past the cap is past it for protobuf-c too, so decode.c
 * then refuses the profile without asking protobuf-c.
 *
 * Sub-message fields: protobuf-c merges a repeated occurrence of a non-repeated
 * message field into the earlier one, but for proto3 scalars (which have no has_
 * flag) its merge copies nothing (checked in protobuf-c 1.4.1 to 1.5.2), so the last
 * occurrence of period_type wins whole; this decoder does the same. */
#include <limits.h>
#include <string.h>

#include "pprof_int.h"

/* One decoding: the counts of pass 1, then the blocks pass 2 fills in order. */
struct pbd {
	struct pd_arena *arena;
	int fill; /* 0: pass 1 (check and count), 1: pass 2 (fill) */
	/* what pass 1 counts (Profile's repeated fields, and the totals of the
	 * sub-messages' repeated fields over all of them) */
	size_t n_sample_type, n_sample, n_mapping, n_location, n_function, n_string, n_comment,
	    str_bytes, n_location_id, n_value, n_label, n_line;
	int has_period_type;
	/* pass 2: the next free element of each block */
	pb_value_type *vt;
	pb_sample *sample;
	pb_mapping *mapping;
	pb_location *location;
	pb_function *function;
	pb_label *label, **label_ptr;
	pb_line *line, **line_ptr;
	uint64_t *location_id;
	int64_t *value;
	char *str;
};

static const pb_profile profile_init = PERFTOOLS__PROFILES__PROFILE__INIT;
static const pb_value_type value_type_init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
static const pb_sample sample_init = PERFTOOLS__PROFILES__SAMPLE__INIT;
static const pb_label label_init = PERFTOOLS__PROFILES__LABEL__INIT;
static const pb_mapping mapping_init = PERFTOOLS__PROFILES__MAPPING__INIT;
static const pb_location location_init = PERFTOOLS__PROFILES__LOCATION__INIT;
static const pb_line line_init = PERFTOOLS__PROFILES__LINE__INIT;
static const pb_function function_init = PERFTOOLS__PROFILES__FUNCTION__INIT;

enum { WT_VARINT = 0, WT_LEN = 2 };

/* Reads the varint at *pp (before end) into *v and moves *pp past it. Returns 0,
 * leaving *pp, when it is truncated, longer than 10 bytes, wider than 64 bits or not
 * minimal (a last byte of 0 after others): encodings writers do not produce. */
static inline int rd_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	size_t avail = (size_t)(end - p);
	if (avail >= 2) {
		/* one and two bytes: ids, indices, small values */
		if (p[0] < 0x80) {
			*v = p[0];
			*pp = p + 1;
			return 1;
		}
		if (p[1] < 0x80) {
			if (p[1] == 0)
				return 0;
			*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
			*pp = p + 2;
			return 1;
		}
	}
	uint64_t r = 0;
	for (unsigned i = 0; i < 10 && i < avail; i++) {
		uint8_t b = p[i];
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (b < 0x80) {
			if ((b == 0 && i > 0) || (i == 9 && b > 1))
				return 0;
			*v = r;
			*pp = p + i + 1;
			return 1;
		}
	}
	return 0;
}

/* Reads a length prefix and checks that the data it announces is within end:
 * [*q, *qend) is the data and *pp moves past it. */
static inline int rd_len(const uint8_t **pp, const uint8_t *end, const uint8_t **q,
                         const uint8_t **qend)
{
	uint64_t n;
	if (!rd_varint(pp, end, &n) || n > INT_MAX || n > (uint64_t)(end - *pp))
		return 0;
	*q = *pp;
	*qend = *pp + n;
	*pp = *qend;
	return 1;
}

/* Reads the key at *pp: only one-byte keys (fields 1 to 15, the schema's) are
 * handled, which is also how every writer encodes them. */
static inline int rd_key(const uint8_t **pp, unsigned *field, unsigned *wt)
{
	uint8_t k = **pp;
	if (k >= 0x80)
		return 0;
	(*pp)++;
	*field = k >> 3;
	*wt = k & 7;
	return 1;
}

/* A scalar field: varint wire type only (protobuf-c refuses the others). */
static inline int rd_scalar(const uint8_t **pp, const uint8_t *end, unsigned wt, uint64_t *v)
{
	return wt == WT_VARINT && rd_varint(pp, end, v);
}

/* A repeated 64-bit integer field, unpacked (one varint) or packed (a run of them):
 * counts its elements into *count in pass 1, appends them at *dst in pass 2. */
static int rd_repeated(struct pbd *d, const uint8_t **pp, const uint8_t *end, unsigned wt,
                       uint64_t **dst, size_t *count)
{
	uint64_t v = 0;
	if (wt == WT_VARINT) {
		if (!rd_varint(pp, end, &v))
			return 0;
		if (d->fill)
			*(*dst)++ = v;
		(*count)++;
		return 1;
	}
	const uint8_t *q = NULL, *qend = NULL;
	if (wt != WT_LEN || !rd_len(pp, end, &q, &qend))
		return 0;
	size_t n = 0;
	if (d->fill) {
		uint64_t *o = *dst;
		while (q < qend) {
			if (!rd_varint(&q, qend, &o[n]))
				return 0;
			n++;
		}
		if (n)
			*dst = o + n;
	} else {
		while (q < qend) {
			if (!rd_varint(&q, qend, &v))
				return 0;
			n++;
		}
	}
	*count += n;
	return 1;
}

/* The parsers of each message: in pass 1 out is NULL and they only check and
 * count; in pass 2 they fill out, initialised by the caller. */

static int rd_value_type(const uint8_t *p, const uint8_t *end, pb_value_type *out)
{
	unsigned f, wt;
	uint64_t v = 0;
	while (p < end) {
		if (!rd_key(&p, &f, &wt) || !rd_scalar(&p, end, wt, &v))
			return 0;
		switch (f) {
		case 1:
			if (out)
				out->type = (int64_t)v;
			break;
		case 2:
			if (out)
				out->unit = (int64_t)v;
			break;
		default:
			return 0;
		}
	}
	return 1;
}

static int rd_label(const uint8_t *p, const uint8_t *end, pb_label *out)
{
	unsigned f, wt;
	uint64_t v = 0;
	while (p < end) {
		if (!rd_key(&p, &f, &wt) || !rd_scalar(&p, end, wt, &v))
			return 0;
		switch (f) {
		case 1:
			if (out)
				out->key = (int64_t)v;
			break;
		case 2:
			if (out)
				out->str = (int64_t)v;
			break;
		case 3:
			if (out)
				out->num = (int64_t)v;
			break;
		case 4:
			if (out)
				out->num_unit = (int64_t)v;
			break;
		default:
			return 0;
		}
	}
	return 1;
}

static int rd_sample(struct pbd *d, const uint8_t *p, const uint8_t *end, pb_sample *out)
{
	unsigned f, wt;
	size_t n_loc = 0, n_val = 0, n_lab = 0;
	if (out) {
		out->location_id = d->location_id;
		out->value = d->value;
		out->label = d->label_ptr;
	}
	while (p < end) {
		if (!rd_key(&p, &f, &wt))
			return 0;
		switch (f) {
		case 1:
			if (!rd_repeated(d, &p, end, wt, &d->location_id, &n_loc))
				return 0;
			break;
		case 2:
			if (!rd_repeated(d, &p, end, wt, (uint64_t **)&d->value, &n_val))
				return 0;
			break;
		case 3: {
			const uint8_t *q = NULL, *qend = NULL;
			if (wt != WT_LEN || !rd_len(&p, end, &q, &qend))
				return 0;
			pb_label *l = NULL;
			if (out) {
				l = d->label++;
				*l = label_init;
				*d->label_ptr++ = l;
			}
			if (!rd_label(q, qend, l))
				return 0;
			n_lab++;
			break;
		}
		default:
			return 0;
		}
	}
	if (out) {
		out->n_location_id = n_loc;
		out->n_value = n_val;
		out->n_label = n_lab;
		/* protobuf-c leaves an empty repeated field NULL */
		if (!n_loc)
			out->location_id = NULL;
		if (!n_val)
			out->value = NULL;
		if (!n_lab)
			out->label = NULL;
	} else {
		d->n_location_id += n_loc;
		d->n_value += n_val;
		d->n_label += n_lab;
	}
	return 1;
}

static int rd_mapping(const uint8_t *p, const uint8_t *end, pb_mapping *out)
{
	unsigned f, wt;
	uint64_t v = 0;
	while (p < end) {
		if (!rd_key(&p, &f, &wt) || !rd_scalar(&p, end, wt, &v))
			return 0;
		if (!out) {
			if (f < 1 || f > 10)
				return 0;
			continue;
		}
		switch (f) {
		case 1:
			out->id = v;
			break;
		case 2:
			out->memory_start = v;
			break;
		case 3:
			out->memory_limit = v;
			break;
		case 4:
			out->file_offset = v;
			break;
		case 5:
			out->filename = (int64_t)v;
			break;
		case 6:
			out->build_id = (int64_t)v;
			break;
		case 7:
			out->has_functions = v != 0;
			break;
		case 8:
			out->has_filenames = v != 0;
			break;
		case 9:
			out->has_line_numbers = v != 0;
			break;
		case 10:
			out->has_inline_frames = v != 0;
			break;
		default:
			return 0;
		}
	}
	return 1;
}

static int rd_line(const uint8_t *p, const uint8_t *end, pb_line *out)
{
	unsigned f, wt;
	uint64_t v = 0;
	while (p < end) {
		if (!rd_key(&p, &f, &wt) || !rd_scalar(&p, end, wt, &v))
			return 0;
		switch (f) {
		case 1:
			if (out)
				out->function_id = v;
			break;
		case 2:
			if (out)
				out->line = (int64_t)v;
			break;
		case 3:
			if (out)
				out->column = (int64_t)v;
			break;
		default:
			return 0;
		}
	}
	return 1;
}

static int rd_location(struct pbd *d, const uint8_t *p, const uint8_t *end, pb_location *out)
{
	unsigned f, wt;
	uint64_t v = 0;
	size_t n_line = 0;
	if (out)
		out->line = d->line_ptr;
	while (p < end) {
		if (!rd_key(&p, &f, &wt))
			return 0;
		if (f == 4) {
			const uint8_t *q = NULL, *qend = NULL;
			if (wt != WT_LEN || !rd_len(&p, end, &q, &qend))
				return 0;
			pb_line *l = NULL;
			if (out) {
				l = d->line++;
				*l = line_init;
				*d->line_ptr++ = l;
			}
			if (!rd_line(q, qend, l))
				return 0;
			n_line++;
			continue;
		}
		if (!rd_scalar(&p, end, wt, &v))
			return 0;
		switch (f) {
		case 1:
			if (out)
				out->id = v;
			break;
		case 2:
			if (out)
				out->mapping_id = v;
			break;
		case 3:
			if (out)
				out->address = v;
			break;
		case 5:
			if (out)
				out->is_folded = v != 0;
			break;
		default:
			return 0;
		}
	}
	if (out) {
		out->n_line = n_line;
		if (!n_line)
			out->line = NULL;
	} else {
		d->n_line += n_line;
	}
	return 1;
}

static int rd_function(const uint8_t *p, const uint8_t *end, pb_function *out)
{
	unsigned f, wt;
	uint64_t v = 0;
	while (p < end) {
		if (!rd_key(&p, &f, &wt) || !rd_scalar(&p, end, wt, &v))
			return 0;
		switch (f) {
		case 1:
			if (out)
				out->id = v;
			break;
		case 2:
			if (out)
				out->name = (int64_t)v;
			break;
		case 3:
			if (out)
				out->system_name = (int64_t)v;
			break;
		case 4:
			if (out)
				out->filename = (int64_t)v;
			break;
		case 5:
			if (out)
				out->start_line = (int64_t)v;
			break;
		default:
			return 0;
		}
	}
	return 1;
}

/* One pass over a Profile message: pass 1 when out is NULL, pass 2 otherwise (with
 * every block allocated and out's arrays pointing at them). */
static int rd_profile(struct pbd *d, const uint8_t *p, const uint8_t *end, pb_profile *out)
{
	unsigned f, wt;
	uint64_t v = 0;
	const uint8_t *q = NULL, *qend = NULL;
	while (p < end) {
		if (!rd_key(&p, &f, &wt))
			return 0;
		switch (f) {
		case 1:
		case 2:
		case 3:
		case 4:
		case 5:
		case 6:
		case 11:
			if (wt != WT_LEN || !rd_len(&p, end, &q, &qend))
				return 0;
			break;
		case 13: {
			/* comment's block is out->comment itself, filled in order */
			uint64_t *dst = NULL;
			if (out && out->comment)
				dst = (uint64_t *)&out->comment[out->n_comment];
			if (!rd_repeated(d, &p, end, wt, &dst,
			                 out ? &out->n_comment : &d->n_comment))
				return 0;
			continue;
		}
		case 7:
		case 8:
		case 9:
		case 10:
		case 12:
		case 14:
		case 15:
			if (!rd_scalar(&p, end, wt, &v))
				return 0;
			break;
		default:
			return 0;
		}
		if (!out) {
			/* pass 1: check the sub-message, count what it makes */
			switch (f) {
			case 1:
				if (!rd_value_type(q, qend, NULL))
					return 0;
				d->n_sample_type++;
				break;
			case 2:
				if (!rd_sample(d, q, qend, NULL))
					return 0;
				d->n_sample++;
				break;
			case 3:
				if (!rd_mapping(q, qend, NULL))
					return 0;
				d->n_mapping++;
				break;
			case 4:
				if (!rd_location(d, q, qend, NULL))
					return 0;
				d->n_location++;
				break;
			case 5:
				if (!rd_function(q, qend, NULL))
					return 0;
				d->n_function++;
				break;
			case 6:
				d->n_string++;
				d->str_bytes += (size_t)(qend - q) + 1;
				break;
			case 11:
				if (!rd_value_type(q, qend, NULL))
					return 0;
				d->has_period_type = 1;
				break;
			default:
				break;
			}
			continue;
		}
		switch (f) {
		case 1: {
			pb_value_type *m = d->vt++;
			*m = value_type_init;
			out->sample_type[out->n_sample_type++] = m;
			if (!rd_value_type(q, qend, m))
				return 0;
			break;
		}
		case 2: {
			pb_sample *m = d->sample++;
			*m = sample_init;
			out->sample[out->n_sample++] = m;
			if (!rd_sample(d, q, qend, m))
				return 0;
			break;
		}
		case 3: {
			pb_mapping *m = d->mapping++;
			*m = mapping_init;
			out->mapping[out->n_mapping++] = m;
			if (!rd_mapping(q, qend, m))
				return 0;
			break;
		}
		case 4: {
			pb_location *m = d->location++;
			*m = location_init;
			out->location[out->n_location++] = m;
			if (!rd_location(d, q, qend, m))
				return 0;
			break;
		}
		case 5: {
			pb_function *m = d->function++;
			*m = function_init;
			out->function[out->n_function++] = m;
			if (!rd_function(q, qend, m))
				return 0;
			break;
		}
		case 6: {
			size_t n = (size_t)(qend - q);
			char *s = d->str;
			if (n)
				memcpy(s, q, n);
			s[n] = '\0';
			d->str += n + 1;
			out->string_table[out->n_string_table++] = s;
			break;
		}
		case 11:
			/* the last occurrence wins whole, as with protobuf-c (see above) */
			*out->period_type = value_type_init;
			if (!rd_value_type(q, qend, out->period_type))
				return 0;
			break;
		case 7:
			out->drop_frames = (int64_t)v;
			break;
		case 8:
			out->keep_frames = (int64_t)v;
			break;
		case 9:
			out->time_nanos = (int64_t)v;
			break;
		case 10:
			out->duration_nanos = (int64_t)v;
			break;
		case 12:
			out->period = (int64_t)v;
			break;
		case 14:
			out->default_sample_type = (int64_t)v;
			break;
		case 15:
			out->doc_url = (int64_t)v;
			break;
		default:
			return 0;
		}
	}
	return 1;
}

/* n elements of size bytes from the arena; NULL for none (as protobuf-c leaves an
 * empty repeated field) and sets *oom when the arena refuses. */
static void *pbd_alloc(struct pbd *d, size_t n, size_t size, int *oom)
{
	if (!n)
		return NULL;
	if (n > SIZE_MAX / size) {
		*oom = 1;
		return NULL;
	}
	void *p = pd_arena_alloc(d->arena, n * size);
	if (!p)
		*oom = 1;
	return p;
}

/* Adds to *need what pbd_alloc takes for n elements of size bytes: nothing for
 * none, else n * size rounded up to the arena's 16. Sets *oom on an overflow. */
static void need_add(size_t *need, size_t n, size_t size, int *oom)
{
	if (!n)
		return;
	if (n > (SIZE_MAX - *need - 16) / size) {
		*oom = 1;
		return;
	}
	*need += (n * size + 15) & ~(size_t)15;
}

pb_profile *pd_pprof_pb_decode(struct pd_arena *arena, const uint8_t *buf, size_t len)
{
	struct pbd d;
	memset(&d, 0, sizeof(d));
	d.arena = arena;
	if (!rd_profile(&d, buf, buf + len, NULL))
		return NULL;

	/* the whole need, exactly as the arena will count it, before any of it is
	 * taken: an input of many small messages (an empty sample is 2 bytes and
	 * needs 80) is refused without allocating a byte. protobuf-c would need at
	 * least as much (each message and string an allocation of its own). */
	size_t need = 0;
	int oom = 0;
	need_add(&need, 1, sizeof(pb_profile), &oom);
	need_add(&need, d.n_sample_type, sizeof(pb_value_type *), &oom);
	need_add(&need, d.n_sample, sizeof(pb_sample *), &oom);
	need_add(&need, d.n_mapping, sizeof(pb_mapping *), &oom);
	need_add(&need, d.n_location, sizeof(pb_location *), &oom);
	need_add(&need, d.n_function, sizeof(pb_function *), &oom);
	need_add(&need, d.n_string, sizeof(char *), &oom);
	need_add(&need, d.n_comment, sizeof(int64_t), &oom);
	need_add(&need, (size_t)d.has_period_type, sizeof(pb_value_type), &oom);
	need_add(&need, d.n_sample_type, sizeof(pb_value_type), &oom);
	need_add(&need, d.n_sample, sizeof(pb_sample), &oom);
	need_add(&need, d.n_mapping, sizeof(pb_mapping), &oom);
	need_add(&need, d.n_location, sizeof(pb_location), &oom);
	need_add(&need, d.n_function, sizeof(pb_function), &oom);
	need_add(&need, d.str_bytes, 1, &oom);
	need_add(&need, d.n_location_id, sizeof(uint64_t), &oom);
	need_add(&need, d.n_value, sizeof(int64_t), &oom);
	need_add(&need, d.n_label, sizeof(pb_label), &oom);
	need_add(&need, d.n_label, sizeof(pb_label *), &oom);
	need_add(&need, d.n_line, sizeof(pb_line), &oom);
	need_add(&need, d.n_line, sizeof(pb_line *), &oom);
	if (pd_arena_fits(arena, oom ? SIZE_MAX : need))
		return NULL;
	pb_profile *pb = pd_arena_alloc(arena, sizeof(*pb));
	if (!pb)
		return NULL;
	*pb = profile_init;
	pb->sample_type = pbd_alloc(&d, d.n_sample_type, sizeof(*pb->sample_type), &oom);
	pb->sample = pbd_alloc(&d, d.n_sample, sizeof(*pb->sample), &oom);
	pb->mapping = pbd_alloc(&d, d.n_mapping, sizeof(*pb->mapping), &oom);
	pb->location = pbd_alloc(&d, d.n_location, sizeof(*pb->location), &oom);
	pb->function = pbd_alloc(&d, d.n_function, sizeof(*pb->function), &oom);
	pb->string_table = pbd_alloc(&d, d.n_string, sizeof(*pb->string_table), &oom);
	pb->comment = pbd_alloc(&d, d.n_comment, sizeof(*pb->comment), &oom);
	if (d.has_period_type)
		pb->period_type = pbd_alloc(&d, 1, sizeof(*pb->period_type), &oom);
	d.vt = pbd_alloc(&d, d.n_sample_type, sizeof(*d.vt), &oom);
	d.sample = pbd_alloc(&d, d.n_sample, sizeof(*d.sample), &oom);
	d.mapping = pbd_alloc(&d, d.n_mapping, sizeof(*d.mapping), &oom);
	d.location = pbd_alloc(&d, d.n_location, sizeof(*d.location), &oom);
	d.function = pbd_alloc(&d, d.n_function, sizeof(*d.function), &oom);
	d.str = pbd_alloc(&d, d.str_bytes, 1, &oom);
	d.location_id = pbd_alloc(&d, d.n_location_id, sizeof(*d.location_id), &oom);
	d.value = pbd_alloc(&d, d.n_value, sizeof(*d.value), &oom);
	d.label = pbd_alloc(&d, d.n_label, sizeof(*d.label), &oom);
	d.label_ptr = pbd_alloc(&d, d.n_label, sizeof(*d.label_ptr), &oom);
	d.line = pbd_alloc(&d, d.n_line, sizeof(*d.line), &oom);
	d.line_ptr = pbd_alloc(&d, d.n_line, sizeof(*d.line_ptr), &oom);
	if (oom)
		return NULL;

	d.fill = 1;
	if (!rd_profile(&d, buf, buf + len, pb))
		return NULL;
	return pb;
}
