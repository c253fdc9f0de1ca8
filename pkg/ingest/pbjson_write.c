/* pbjson_write.c: any protobuf-c message written in its proto3 JSON form, the
 * reverse of pbjson.c, by walking the message's ProtobufCMessageDescriptor:
 * field names in lowerCamelCase (the .proto name without underscores, each
 * letter after one upper-cased, as protoc derives json_name), 64-bit integers as
 * strings, bytes as standard base64, enums by name (their number when the
 * descriptor does not know it), NaN and infinities as strings, fields at their
 * default value (0, "", false, empty repeated, no message) left out, as Go's
 * protojson writes them. Output goes to a pd_buf, whose maximum bounds it; the
 * recursion follows the descriptor, at most WRITE_DEPTH messages deep. Also the
 * two entry points other packages use to read and write such messages. */
#include <math.h>
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <string.h>

#include "ingest_int.h"
#include "profd/ingest.h"

#define WRITE_DEPTH 64
#define MEMBER(T, m, off) (*(const T *)((const uint8_t *)(m) + (off)))

struct wr {
	struct pd_buf *b;
	int rc; /* sticky: the first failed append */
};

static void put(struct wr *w, const char *s, size_t n)
{
	if (!w->rc)
		w->rc = pd_buf_append(w->b, s, n);
}

static void puts_(struct wr *w, const char *s)
{
	put(w, s, strlen(s));
}

/* The field's JSON name, quoted, with its colon. */
static void put_name(struct wr *w, const char *name)
{
	char tmp[256];
	size_t n = 0;
	int up = 0;
	tmp[n++] = '"';
	for (const char *p = name; *p && n < sizeof(tmp) - 3; p++) {
		if (*p == '_') {
			up = 1;
			continue;
		}
		char c = *p;
		if (up && c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		up = 0;
		tmp[n++] = c;
	}
	tmp[n++] = '"';
	tmp[n++] = ':';
	put(w, tmp, n);
}

static void put_i64(struct wr *w, int64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "\"%lld\"", (long long)v);
	put(w, tmp, (size_t)n);
}

static void put_u64(struct wr *w, uint64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "\"%llu\"", (unsigned long long)v);
	put(w, tmp, (size_t)n);
}

static void put_double(struct wr *w, double v)
{
	char tmp[40];
	if (isnan(v)) {
		puts_(w, "\"NaN\"");
		return;
	}
	if (isinf(v)) {
		puts_(w, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
		return;
	}
	if (v == 0 && signbit(v)) {
		puts_(w, "-0.0"); /* read back as -0, not as the integer 0 */
		return;
	}
	/* 17 significant digits read back as the same double */
	int n = snprintf(tmp, sizeof tmp, "%.17g", v);
	put(w, tmp, (size_t)n);
}

static void put_bytes(struct wr *w, const ProtobufCBinaryData *bd)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	put(w, "\"", 1);
	for (size_t i = 0; i < bd->len; i += 3) {
		uint32_t v = (uint32_t)bd->data[i] << 16;
		size_t k = bd->len - i;
		if (k > 1)
			v |= (uint32_t)bd->data[i + 1] << 8;
		if (k > 2)
			v |= bd->data[i + 2];
		char q[4] = {tab[(v >> 18) & 63], tab[(v >> 12) & 63], k > 1 ? tab[(v >> 6) & 63] : '=',
			     k > 2 ? tab[v & 63] : '='};
		put(w, q, 4);
	}
	put(w, "\"", 1);
}

static void put_message(struct wr *w, const ProtobufCMessage *m, int depth);

/* One value of field f at p (an element of a repeated field, or the field). */
static void put_value(struct wr *w, const ProtobufCFieldDescriptor *f, const void *p, int depth)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32: {
		char tmp[16];
		int n = snprintf(tmp, sizeof tmp, "%d", (int)*(const int32_t *)p);
		put(w, tmp, (size_t)n);
		break;
	}
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32: {
		char tmp[16];
		int n = snprintf(tmp, sizeof tmp, "%u", (unsigned)*(const uint32_t *)p);
		put(w, tmp, (size_t)n);
		break;
	}
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		put_i64(w, *(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		put_u64(w, *(const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		put_double(w, *(const float *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		put_double(w, *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		puts_(w, *(const protobuf_c_boolean *)p ? "true" : "false");
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		int v = *(const int *)p;
		const ProtobufCEnumValue *ev =
		    protobuf_c_enum_descriptor_get_value((const ProtobufCEnumDescriptor *)f->descriptor, v);
		if (ev) {
			if (!w->rc)
				w->rc = pd_buf_json_string(w->b, ev->name);
		} else {
			char tmp[16];
			int n = snprintf(tmp, sizeof tmp, "%d", v);
			put(w, tmp, (size_t)n);
		}
		break;
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		if (!w->rc)
			w->rc = pd_buf_json_string(w->b, s ? s : "");
		break;
	}
	case PROTOBUF_C_TYPE_BYTES:
		put_bytes(w, (const ProtobufCBinaryData *)p);
		break;
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
		if (sub)
			put_message(w, sub, depth + 1);
		else
			puts_(w, "{}");
		break;
	}
	}
}

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_ENUM:
		return sizeof(int);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	default:
		return 4;
	}
}

/* 1 when a singular field holds its default value (proto3: left out). */
static int is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		return !s || !*s;
	}
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)p)->len == 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(ProtobufCMessage *const *)p == NULL;
	case PROTOBUF_C_TYPE_DOUBLE:
		return *(const double *)p == 0 && !signbit(*(const double *)p);
	case PROTOBUF_C_TYPE_FLOAT:
		return *(const float *)p == 0 && !signbit(*(const float *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return !*(const protobuf_c_boolean *)p;
	case PROTOBUF_C_TYPE_ENUM:
		return *(const int *)p == 0;
	default: {
		size_t sz = elem_size(f->type);
		return sz == 8 ? *(const uint64_t *)p == 0 : *(const uint32_t *)p == 0;
	}
	}
}

static void put_message(struct wr *w, const ProtobufCMessage *m, int depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	if (depth > WRITE_DEPTH) {
		if (!w->rc)
			w->rc = PD_ETOOBIG;
		return;
	}
	int first = 1;
	put(w, "{", 1);
	for (unsigned i = 0; i < d->n_fields && !w->rc; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *p = (const uint8_t *)m + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = MEMBER(size_t, m, f->quantifier_offset);
			if (!n)
				continue;
			const uint8_t *arr = *(const uint8_t *const *)p;
			if (!first)
				put(w, ",", 1);
			first = 0;
			put_name(w, f->name);
			put(w, "[", 1);
			size_t sz = elem_size(f->type);
			for (size_t k = 0; k < n && !w->rc; k++) {
				if (k)
					put(w, ",", 1);
				put_value(w, f, arr + k * sz, depth);
			}
			put(w, "]", 1);
			continue;
		}
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (MEMBER(uint32_t, m, f->quantifier_offset) != f->id)
				continue;
		} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
			   f->quantifier_offset && f->type != PROTOBUF_C_TYPE_MESSAGE &&
			   f->type != PROTOBUF_C_TYPE_STRING) {
			if (!MEMBER(protobuf_c_boolean, m, f->quantifier_offset))
				continue;
		} else if (is_default(f, p)) {
			continue;
		}
		if (!first)
			put(w, ",", 1);
		first = 0;
		put_name(w, f->name);
		put_value(w, f, p, depth);
	}
	put(w, "}", 1);
}

int pd_ingest_pb_json(const struct ProtobufCMessage *m, struct pd_buf *b)
{
	struct wr w = {.b = b};
	put_message(&w, m, 0);
	return w.rc;
}

int pd_ingest_pb_read(const struct ProtobufCMessageDescriptor *d, const uint8_t *body, size_t len,
		      int json, const struct pd_ingest_limits *lim, struct ProtobufCMessage **out,
		      struct pd_err *err)
{
	struct pd_ingest_limits l = pd_ingest_limits_resolve(lim);
	int limit = 0;
	if (json)
		return ingest_pbjson_parse(d, body, len, &l, out, &limit, err);
	return ingest_pb_unpack_plain(d, body, len, l.max_decoded_memory, out, err);
}
