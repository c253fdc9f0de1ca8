/* pbjson.c: any protobuf-c message filled from its proto3 JSON form, by walking the
 * message's ProtobufCMessageDescriptor over a json-c tree, so that Connect's JSON
 * (push.v1) and OTLP/JSON are read by the same code. What the proto3 JSON mapping
 * allows is taken: field names in lowerCamelCase or as in the .proto, 64-bit
 * integers as strings or numbers, bytes as base64 (standard or URL-safe, padding
 * optional), enums by name or number, null as the default, NaN and Infinity as
 * strings; fields the descriptor does not know are ignored. protobuf-c has no JSON
 * support of its own, hence this file. The message is built with malloc as
 * protobuf-c's default allocator does, so protobuf_c_message_free_unpacked(m, NULL)
 * frees it, and the recursion follows the JSON tree, whose depth json-c bounds. */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <protobuf-c/protobuf-c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_int.h"

struct ctx {
	char path[256]; /* where the walk is, "resourceProfiles[0].resource" */
	size_t plen;
	struct pd_err *err;
};

#define MEMBER(T, m, off) (*(T *)((uint8_t *)(m) + (off)))

static int fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ctx *c, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return pd_err_set(c->err, PD_EINVAL, "JSON field %s: %s", c->plen ? c->path : "(top)", msg);
}

/* Appends ".name" or "[i]" to the path; returns the length to restore. */
static size_t push_name(struct ctx *c, const char *name)
{
	size_t old = c->plen;
	int n =
	    snprintf(c->path + c->plen, sizeof c->path - c->plen, "%s%s", c->plen ? "." : "", name);
	if (n > 0)
		c->plen +=
		    (size_t)n < sizeof c->path - c->plen ? (size_t)n : sizeof c->path - c->plen - 1;
	return old;
}

static size_t push_index(struct ctx *c, size_t i)
{
	size_t old = c->plen;
	int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, "[%zu]", i);
	if (n > 0)
		c->plen +=
		    (size_t)n < sizeof c->path - c->plen ? (size_t)n : sizeof c->path - c->plen - 1;
	return old;
}

static void pop(struct ctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = 0;
}

/* 1: key names the field: its .proto name, or that name in lowerCamelCase. */
static int name_match(const char *field, const char *key)
{
	if (strcmp(field, key) == 0)
		return 1;
	const char *f = field, *k = key;
	while (*f && *k) {
		if (*f == '_' && f[1]) {
			f++;
			char up = (*f >= 'a' && *f <= 'z') ? (char)(*f - 'a' + 'A') : *f;
			if (*k != up)
				return 0;
		} else if (*f != *k) {
			return 0;
		}
		f++;
		k++;
	}
	return *f == 0 && *k == 0;
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d,
                                                  const char *key)
{
	for (unsigned i = 0; i < d->n_fields; i++)
		if (name_match(d->fields[i].name, key))
			return &d->fields[i];
	return NULL;
}

/* ---- scalars ------------------------------------------------------------------ */

/* The text of a JSON number or string holding an integer. */
static int int_text(struct ctx *c, json_object *j, const char **s)
{
	switch (json_object_get_type(j)) {
	case json_type_int:
	case json_type_string:
		*s = json_object_get_string(j);
		return 0;
	case json_type_double: {
		/* 1e3 or 5.0 are integers in proto3 JSON; the caller re-reads the text */
		*s = json_object_get_string(j);
		return 0;
	}
	default:
		return fail(c, "expected an integer (a number or a string), got %s",
		            json_type_to_name(json_object_get_type(j)));
	}
}

static int parse_i64(struct ctx *c, json_object *j, int64_t lo, int64_t hi, int64_t *out)
{
	const char *s = "";
	int rc = int_text(c, j, &s);
	if (rc)
		return rc;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end != s && *end == 0 && errno == 0) {
		if (v < lo || v > hi)
			return fail(c, "integer %s is out of range", s);
		*out = v;
		return 0;
	}
	/* an exponent or a fraction: integral doubles only */
	errno = 0;
	double dv = strtod(s, &end);
	if (end == s || *end || errno || dv != floor(dv) || dv < (double)lo || dv > (double)hi ||
	    dv >= 9223372036854775808.0)
		return fail(c, "\"%.40s\" is not an integer in range", s);
	*out = (int64_t)dv;
	return 0;
}

static int parse_u64(struct ctx *c, json_object *j, uint64_t hi, uint64_t *out)
{
	const char *s = "";
	int rc = int_text(c, j, &s);
	if (rc)
		return rc;
	char *end;
	errno = 0;
	if (*s == '-')
		return fail(c, "\"%.40s\" is negative for an unsigned field", s);
	unsigned long long v = strtoull(s, &end, 10);
	if (end != s && *end == 0 && errno == 0) {
		if (v > hi)
			return fail(c, "integer %s is out of range", s);
		*out = v;
		return 0;
	}
	errno = 0;
	double dv = strtod(s, &end);
	if (end == s || *end || errno || dv != floor(dv) || dv < 0 ||
	    dv >= 18446744073709551616.0 || dv > (double)hi)
		return fail(c, "\"%.40s\" is not an unsigned integer in range", s);
	*out = (uint64_t)dv;
	return 0;
}

static int parse_double(struct ctx *c, json_object *j, double *out)
{
	enum json_type t = json_object_get_type(j);
	if (t == json_type_int || t == json_type_double) {
		*out = json_object_get_double(j);
		return 0;
	}
	if (t == json_type_string) {
		const char *s = json_object_get_string(j);
		if (strcmp(s, "NaN") == 0) {
			*out = NAN;
			return 0;
		}
		if (strcmp(s, "Infinity") == 0) {
			*out = INFINITY;
			return 0;
		}
		if (strcmp(s, "-Infinity") == 0) {
			*out = -INFINITY;
			return 0;
		}
		char *end;
		errno = 0;
		*out = strtod(s, &end);
		if (end != s && *end == 0 && errno == 0)
			return 0;
		return fail(c, "\"%.40s\" is not a number", s);
	}
	return fail(c, "expected a number, got %s", json_type_to_name(t));
}

static int b64_val(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+' || ch == '-')
		return 62;
	if (ch == '/' || ch == '_')
		return 63;
	return -1;
}

/* Base64, standard or URL-safe, with or without padding. */
static int parse_bytes(struct ctx *c, json_object *j, ProtobufCBinaryData *out)
{
	if (json_object_get_type(j) != json_type_string)
		return fail(c, "expected base64 bytes in a string, got %s",
		            json_type_to_name(json_object_get_type(j)));
	const char *s = json_object_get_string(j);
	size_t n = (size_t)json_object_get_string_len(j);
	while (n > 0 && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return fail(c, "base64 of %zu characters is truncated", n);
	if ((size_t)json_object_get_string_len(j) - n > 2)
		return fail(c, "base64 has too much '=' padding");
	uint8_t *buf = malloc(n / 4 * 3 + 3);
	if (!buf)
		return pd_err_set(c->err, PD_ENOMEM, "out of memory");
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64_val((unsigned char)s[i]);
		if (v < 0) {
			free(buf);
			return fail(c, "base64 has an invalid character 0x%02x at offset %zu",
			            (unsigned char)s[i], i);
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (uint8_t)(acc >> bits);
		}
	}
	out->data = buf;
	out->len = o;
	return 0;
}

static int parse_enum(struct ctx *c, const ProtobufCEnumDescriptor *ed, json_object *j,
                      int32_t *out)
{
	if (json_object_get_type(j) == json_type_string) {
		const ProtobufCEnumValue *v =
		    protobuf_c_enum_descriptor_get_value_by_name(ed, json_object_get_string(j));
		if (!v)
			return fail(c, "\"%.60s\" is not a value of enum %s",
			            json_object_get_string(j), ed->name);
		*out = v->value;
		return 0;
	}
	int64_t v;
	int rc = parse_i64(c, j, INT32_MIN, INT32_MAX, &v);
	*out = (int32_t)v;
	return rc;
}

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	}
	return 0;
}

static int parse_message(struct ctx *c, const ProtobufCMessageDescriptor *d, json_object *j,
                         ProtobufCMessage **out);

/* One value of field f from j into dst (the field's storage or an array slot). */
static int parse_value(struct ctx *c, const ProtobufCFieldDescriptor *f, json_object *j, void *dst)
{
	int64_t i;
	uint64_t u;
	double dv;
	int rc = 0;
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if (!(rc = parse_i64(c, j, INT32_MIN, INT32_MAX, &i)))
			*(int32_t *)dst = (int32_t)i;
		return rc;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if (!(rc = parse_i64(c, j, INT64_MIN, INT64_MAX, &i)))
			*(int64_t *)dst = i;
		return rc;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if (!(rc = parse_u64(c, j, UINT32_MAX, &u)))
			*(uint32_t *)dst = (uint32_t)u;
		return rc;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (!(rc = parse_u64(c, j, UINT64_MAX, &u)))
			*(uint64_t *)dst = u;
		return rc;
	case PROTOBUF_C_TYPE_FLOAT:
		if (!(rc = parse_double(c, j, &dv)))
			*(float *)dst = (float)dv;
		return rc;
	case PROTOBUF_C_TYPE_DOUBLE:
		if (!(rc = parse_double(c, j, &dv)))
			*(double *)dst = dv;
		return rc;
	case PROTOBUF_C_TYPE_BOOL:
		if (json_object_get_type(j) != json_type_boolean)
			return fail(c, "expected true or false, got %s",
			            json_type_to_name(json_object_get_type(j)));
		*(protobuf_c_boolean *)dst = json_object_get_boolean(j) ? 1 : 0;
		return 0;
	case PROTOBUF_C_TYPE_ENUM: {
		int32_t e = 0;
		if (!(rc = parse_enum(c, f->descriptor, j, &e)))
			*(int32_t *)dst = e;
		return rc;
	}
	case PROTOBUF_C_TYPE_STRING: {
		if (json_object_get_type(j) != json_type_string)
			return fail(c, "expected a string, got %s",
			            json_type_to_name(json_object_get_type(j)));
		size_t n = (size_t)json_object_get_string_len(j);
		char *s = malloc(n + 1);
		if (!s)
			return pd_err_set(c->err, PD_ENOMEM, "out of memory");
		memcpy(s, json_object_get_string(j), n);
		s[n] = 0;
		*(char **)dst = s;
		return 0;
	}
	case PROTOBUF_C_TYPE_BYTES:
		return parse_bytes(c, j, (ProtobufCBinaryData *)dst);
	case PROTOBUF_C_TYPE_MESSAGE:
		return parse_message(c, f->descriptor, j, (ProtobufCMessage **)dst);
	}
	return fail(c, "field type %d is not supported", (int)f->type);
}

/* A repeated field: a JSON array (null: empty). */
static int parse_repeated(struct ctx *c, const ProtobufCFieldDescriptor *f, json_object *j,
                          void *msg)
{
	if (json_object_get_type(j) != json_type_array)
		return fail(c, "expected an array, got %s",
		            json_type_to_name(json_object_get_type(j)));
	size_t n = json_object_array_length(j), sz = elem_size(f->type);
	if (n == 0)
		return 0;
	uint8_t *arr = calloc(n, sz);
	if (!arr)
		return pd_err_set(c->err, PD_ENOMEM, "out of memory");
	/* the array is the message's from here, so a failure part way is freed with it */
	MEMBER(void *, msg, f->offset) = arr;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(j, i);
		size_t old = push_index(c, i);
		int rc;
		MEMBER(size_t, msg, f->quantifier_offset) = i + 1; /* freed with msg */
		if (!e)
			rc = fail(c, "null in a repeated field");
		else
			rc = parse_value(c, f, e, arr + i * sz);
		pop(c, old);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_message(struct ctx *c, const ProtobufCMessageDescriptor *d, json_object *j,
                         ProtobufCMessage **out)
{
	if (json_object_get_type(j) != json_type_object)
		return fail(c, "expected an object (message %s), got %s", d->name,
		            json_type_to_name(json_object_get_type(j)));
	ProtobufCMessage *m = malloc(d->sizeof_message);
	uint8_t *seen = calloc(d->n_fields ? d->n_fields : 1, 1);
	int rc = 0;
	if (!m || !seen) {
		free(m);
		free(seen);
		return pd_err_set(c->err, PD_ENOMEM, "out of memory");
	}
	protobuf_c_message_init(d, m);
	*out = m; /* the caller's, to free with the rest on failure */
	json_object_object_foreach(j, key, val)
	{
		const ProtobufCFieldDescriptor *f = find_field(d, key);
		if (!f || !val)
			continue; /* unknown fields and null are ignored */
		size_t fi = (size_t)(f - d->fields);
		size_t old = push_name(c, key);
		if (seen[fi]) {
			rc = fail(c, "given twice");
			pop(c, old);
			break;
		}
		seen[fi] = 1;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			rc = parse_repeated(c, f, val, m);
		} else if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			uint32_t *cs = &MEMBER(uint32_t, m, f->quantifier_offset);
			if (*cs != 0) {
				rc = fail(c, "a second member of a oneof");
			} else {
				/* the case first, so that storage a failure leaves is freed */
				*cs = f->id;
				rc = parse_value(c, f, val, (uint8_t *)m + f->offset);
			}
		} else {
			if (f->type == PROTOBUF_C_TYPE_STRING)
				MEMBER(char *, m, f->offset) = NULL;
			rc = parse_value(c, f, val, (uint8_t *)m + f->offset);
			if (f->type == PROTOBUF_C_TYPE_STRING && !MEMBER(char *, m, f->offset))
				MEMBER(const char *, m, f->offset) = f->default_value;
			if (!rc && f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
			    f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING)
				MEMBER(protobuf_c_boolean, m, f->quantifier_offset) = 1;
		}
		pop(c, old);
		if (rc)
			break;
	}
	free(seen);
	return rc;
}

int ingest_pbjson_parse(const struct ProtobufCMessageDescriptor *d, const uint8_t *body, size_t len,
                        const struct pd_ingest_limits *lim, struct ProtobufCMessage **out,
                        int *limit, struct pd_err *err)
{
	struct pd_ingest_limits l = pd_ingest_limits_resolve(lim);
	struct ctx c = {.err = err};
	*out = NULL;
	/* json-c refuses nesting that reaches its depth: one more lets max_json_depth
	 * levels through */
	if (len > INT32_MAX || l.max_json_depth >= INT32_MAX)
		return pd_err_set(err, PD_ETOOBIG, "a JSON body of %zu bytes is too large", len);
	if (memchr(body, 0, len))
		return pd_err_set(err, PD_EINVAL, "JSON body has a NUL byte at offset %zu",
		                  (size_t)((const uint8_t *)memchr(body, 0, len) - body));
	json_tokener *tok = json_tokener_new_ex((int)l.max_json_depth + 1);
	if (!tok)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	json_object *root = json_tokener_parse_ex(tok, (const char *)body, (int)len);
	enum json_tokener_error je = json_tokener_get_error(tok);
	size_t off = json_tokener_get_parse_end(tok);
	int rc = 0;
	if (je == json_tokener_continue) {
		/* json-c waits for more: a lone number, or an unfinished body */
		root = json_tokener_parse_ex(tok, "", 1);
		je = json_tokener_get_error(tok);
		if (je == json_tokener_success)
			off = len;
	}
	if (je == json_tokener_error_depth) {
		*limit = PD_INGEST_LIMIT_JSON_DEPTH;
		rc = pd_err_set(err, PD_ETOOBIG,
		                "JSON nests deeper than %u levels at offset %zu (%s)",
		                l.max_json_depth, off, pd_ingest_limit_flag(*limit));
		goto out;
	}
	if (je != json_tokener_success || !root) {
		rc =
		    pd_err_set(err, PD_EINVAL, "JSON body is not valid at offset %zu: %s", off,
		               json_tokener_error_desc(
		                   je == json_tokener_success ? json_tokener_error_parse_eof : je));
		goto out;
	}
	for (size_t i = off; i < len; i++)
		if (body[i] != ' ' && body[i] != '\t' && body[i] != '\n' && body[i] != '\r') {
			rc = pd_err_set(err, PD_EINVAL,
			                "JSON body has trailing bytes at offset %zu", i);
			goto out;
		}
	rc = parse_message(&c, d, root, out);
	if (rc) {
		protobuf_c_message_free_unpacked(*out, NULL);
		*out = NULL;
	}
out:
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}
