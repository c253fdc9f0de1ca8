/* wire.c: explains a rejected protobuf. protobuf-c only says "no"; this walks the
 * wire format of profile.proto message by message and reports the first problem
 * (truncated field, over-long varint, wrong wire type, bad length) with its byte
 * offset and the path of fields leading to it. */
#include <stdio.h>
#include <string.h>

#include "pprof_int.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* Expected wire type of each field, and the message type of nested fields. */
enum msg { M_PROFILE, M_VALUETYPE, M_SAMPLE, M_LABEL, M_MAPPING, M_LOCATION, M_LINE, M_FUNCTION,
	   M_NONE };

struct field {
	int num;
	const char *name;
	int packable; /* repeated scalar: varint or packed LEN both fine */
	enum msg sub; /* M_NONE for scalars and strings */
	int is_string;
};

static const struct field f_profile[] = {
	{1, "sample_type", 0, M_VALUETYPE, 0}, {2, "sample", 0, M_SAMPLE, 0},
	{3, "mapping", 0, M_MAPPING, 0},       {4, "location", 0, M_LOCATION, 0},
	{5, "function", 0, M_FUNCTION, 0},     {6, "string_table", 0, M_NONE, 1},
	{7, "drop_frames", 0, M_NONE, 0},      {8, "keep_frames", 0, M_NONE, 0},
	{9, "time_nanos", 0, M_NONE, 0},       {10, "duration_nanos", 0, M_NONE, 0},
	{11, "period_type", 0, M_VALUETYPE, 0}, {12, "period", 0, M_NONE, 0},
	{13, "comment", 1, M_NONE, 0},         {14, "default_sample_type", 0, M_NONE, 0},
	{15, "doc_url", 0, M_NONE, 0},         {0, NULL, 0, M_NONE, 0}};
static const struct field f_valuetype[] = {{1, "type", 0, M_NONE, 0}, {2, "unit", 0, M_NONE, 0},
					   {0, NULL, 0, M_NONE, 0}};
static const struct field f_sample[] = {{1, "location_id", 1, M_NONE, 0},
					{2, "value", 1, M_NONE, 0},
					{3, "label", 0, M_LABEL, 0},
					{0, NULL, 0, M_NONE, 0}};
static const struct field f_label[] = {{1, "key", 0, M_NONE, 0}, {2, "str", 0, M_NONE, 0},
				       {3, "num", 0, M_NONE, 0}, {4, "num_unit", 0, M_NONE, 0},
				       {0, NULL, 0, M_NONE, 0}};
static const struct field f_mapping[] = {
	{1, "id", 0, M_NONE, 0},           {2, "memory_start", 0, M_NONE, 0},
	{3, "memory_limit", 0, M_NONE, 0}, {4, "file_offset", 0, M_NONE, 0},
	{5, "filename", 0, M_NONE, 0},     {6, "build_id", 0, M_NONE, 0},
	{7, "has_functions", 0, M_NONE, 0}, {8, "has_filenames", 0, M_NONE, 0},
	{9, "has_line_numbers", 0, M_NONE, 0}, {10, "has_inline_frames", 0, M_NONE, 0},
	{0, NULL, 0, M_NONE, 0}};
static const struct field f_location[] = {{1, "id", 0, M_NONE, 0},      {2, "mapping_id", 0, M_NONE, 0},
					  {3, "address", 0, M_NONE, 0}, {4, "line", 0, M_LINE, 0},
					  {5, "is_folded", 0, M_NONE, 0}, {0, NULL, 0, M_NONE, 0}};
static const struct field f_line[] = {{1, "function_id", 0, M_NONE, 0}, {2, "line", 0, M_NONE, 0},
				      {3, "column", 0, M_NONE, 0}, {0, NULL, 0, M_NONE, 0}};
static const struct field f_function[] = {
	{1, "id", 0, M_NONE, 0},       {2, "name", 0, M_NONE, 0},       {3, "system_name", 0, M_NONE, 0},
	{4, "filename", 0, M_NONE, 0}, {5, "start_line", 0, M_NONE, 0}, {0, NULL, 0, M_NONE, 0}};

static const struct field *const fields_of[] = {f_profile, f_valuetype, f_sample,  f_label,
						 f_mapping, f_location,  f_line,    f_function};
static const char *const msg_name[] = {"Profile", "ValueType", "Sample", "Label",
				       "Mapping", "Location",  "Line",   "Function"};

/* Reads a varint at *pos; 0 on success, -1 truncated, -2 longer than 10 bytes. */
static int varint(const uint8_t *b, size_t end, size_t *pos, uint64_t *v)
{
	uint64_t r = 0;
	for (int i = 0; i < 10; i++) {
		if (*pos >= end)
			return -1;
		uint8_t c = b[(*pos)++];
		r |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -2;
}

static int fail(struct pd_err *err, const char *path, size_t off, const char *what)
{
	return pd_err_set(err, PD_ECORRUPT, "malformed protobuf at byte %zu (%s): %s", off, path, what);
}

static int scan(const uint8_t *b, size_t start, size_t end, enum msg m, const char *path,
		int depth, struct pd_err *err)
{
	size_t pos = start;
	while (pos < end) {
		size_t at = pos;
		uint64_t key, v;
		int r = varint(b, end, &pos, &key);
		if (r == -1)
			return fail(err, path, at, "field key is truncated");
		if (r == -2)
			return fail(err, path, at, "field key varint is longer than 10 bytes");
		uint64_t num = key >> 3;
		int wt = (int)(key & 7);
		if (num == 0 || num > 536870911)
			return fail(err, path, at, "field number 0 or out of range");
		const struct field *f = NULL;
		for (const struct field *c = fields_of[m]; c->name; c++)
			if ((uint64_t)c->num == num)
				f = c;
		char sub[256];
		if (f)
			snprintf(sub, sizeof(sub), "%s.%s", path, f->name);
		else
			snprintf(sub, sizeof(sub), "%s.<field %llu>", path, (unsigned long long)num);
		switch (wt) {
		case WT_VARINT:
			if (f && (f->sub != M_NONE || f->is_string)) {
				char what[128];
				snprintf(what, sizeof(what),
					 "field %s has wire type varint, expected length-delimited",
					 f->name);
				return fail(err, sub, at, what);
			}
			r = varint(b, end, &pos, &v);
			if (r == -1)
				return fail(err, sub, at, "varint is truncated");
			if (r == -2)
				return fail(err, sub, at, "varint is longer than 10 bytes");
			break;
		case WT_I64:
		case WT_I32: {
			size_t n = wt == WT_I64 ? 8 : 4;
			if (f) {
				char what[128];
				snprintf(what, sizeof(what), "field %s has fixed-width wire type %d", f->name, wt);
				return fail(err, sub, at, what);
			}
			if (end - pos < n)
				return fail(err, sub, at, "fixed-width value is truncated");
			pos += n;
			break;
		}
		case WT_LEN:
			r = varint(b, end, &pos, &v);
			if (r == -1)
				return fail(err, sub, at, "length is truncated");
			if (r == -2)
				return fail(err, sub, at, "length varint is longer than 10 bytes");
			if (v > end - pos) {
				char what[128];
				snprintf(what, sizeof(what),
					 "length %llu runs past the end of the enclosing message (%zu bytes left)",
					 (unsigned long long)v, end - pos);
				return fail(err, sub, at, what);
			}
			if (f && f->sub != M_NONE) {
				if (depth > 8)
					return fail(err, sub, at, "messages nested too deeply");
				int rc = scan(b, pos, pos + v, f->sub, sub, depth + 1, err);
				if (rc)
					return rc;
			} else if (f && f->packable) {
				size_t p2 = pos;
				while (p2 < pos + v) {
					size_t at2 = p2;
					r = varint(b, pos + v, &p2, &key);
					if (r == -1)
						return fail(err, sub, at2, "packed varint is truncated");
					if (r == -2)
						return fail(err, sub, at2, "packed varint is longer than 10 bytes");
				}
			} else if (f && !f->is_string) {
				char what[128];
				snprintf(what, sizeof(what),
					 "field %s has wire type length-delimited, expected varint", f->name);
				return fail(err, sub, at, what);
			}
			pos += v;
			break;
		default: {
			char what[64];
			snprintf(what, sizeof(what), "invalid wire type %d", wt);
			return fail(err, sub, at, what);
		}
		}
	}
	return 0;
}

int pd_pprof_wire_diagnose(const uint8_t *buf, size_t len, struct pd_err *err)
{
	int rc = scan(buf, 0, len, M_PROFILE, msg_name[M_PROFILE], 0, err);
	if (rc == 0)
		pd_err_set(err, PD_ECORRUPT,
			   "malformed protobuf: not a valid profile.proto message (%zu bytes)", len);
	return PD_ECORRUPT;
}

int pd_pprof_wire_string_lengths(const uint8_t *buf, size_t len, size_t *lens, size_t n,
				 struct pd_err *err)
{
	size_t pos = 0, k = 0;
	while (pos < len) {
		size_t start = pos;
		uint64_t key, v;
		if (varint(buf, len, &pos, &key))
			return fail(err, "Profile", start, "bad field key");
		switch (key & 7) {
		case WT_VARINT:
			if (varint(buf, len, &pos, &v))
				return fail(err, "Profile", start, "bad varint");
			break;
		case WT_I64:
		case WT_I32: {
			size_t w = (key & 7) == WT_I64 ? 8 : 4;
			if (len - pos < w)
				return fail(err, "Profile", start, "truncated fixed-width field");
			pos += w;
			break;
		}
		case WT_LEN:
			if (varint(buf, len, &pos, &v) || v > len - pos)
				return fail(err, "Profile", start, "bad length");
			if (key >> 3 == 6) {
				if (k == n)
					return fail(err, "Profile.string_table", start,
						    "more strings than were decoded");
				lens[k++] = (size_t)v;
			}
			pos += (size_t)v;
			break;
		default:
			return fail(err, "Profile", start, "unsupported wire type");
		}
	}
	if (k != n)
		return pd_err_set(err, PD_ECORRUPT,
				  "string table: %zu strings on the wire but %zu decoded", k, n);
	return 0;
}
