/* test_ingest_otlp.c: unit tests of pkg/ingest/otlp.c (OTLP profiles) and of the
 * generic proto3 JSON reader pbjson.c. Requests are built here with the generated
 * protobuf-c code from the real pprof profiles of testdata/profiles (one OTLP
 * Profile per sample type, the dictionary holding the pprof's tables), sent as
 * protobuf and as JSON written by a small descriptor-driven writer below (in its
 * variants: proto or lowerCamelCase names, 64-bit integers as strings or numbers,
 * standard or URL-safe base64), and what comes back is compared with the source
 * profile sample by sample, by content (function names, files, lines, mappings,
 * labels, values), and by its `top`. Errors, limits and partial success are
 * checked on hand-made requests. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <protobuf-c/protobuf-c.h>

#include "ingest_int.h"
#include "otlp_profiles_service.pb-c.h"
#include "pbjson_test.pb-c.h"
#include "profd/labels.h"
#include "profd/pprof.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Req;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Prof;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Smp;
typedef Opentelemetry__Proto__Profiles__V1development__Location Loc;
typedef Opentelemetry__Proto__Profiles__V1development__Line Line;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Map;
typedef Opentelemetry__Proto__Profiles__V1development__Function Fn;
typedef Opentelemetry__Proto__Profiles__V1development__Stack Stack;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit Attr;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType VT;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles RP;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles SP;
typedef Opentelemetry__Proto__Common__V1__AnyValue Any;
typedef Opentelemetry__Proto__Common__V1__KeyValue KV;
typedef Opentelemetry__Proto__Resource__V1__Resource Res;
typedef Opentelemetry__Proto__Profiles__V1development__Link Link;

#define REQ_DESC                                                                                   \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor

static void *xcalloc(size_t n, size_t s)
{
	void *p = calloc(n ? n : 1, s);
	assert_non_null(p);
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);
	assert_non_null(d);
	return d;
}

static struct pd_pprof_profile *load(const char *rel)
{
	char path[512];
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	snprintf(path, sizeof path, "%s/profiles/%s", PD_TESTDATA, rel);
	if (pd_pprof_read_file(&p, path, NULL, &err))
		fail_msg("%s", err.msg);
	return p;
}

/* ---- a request from a pprof ------------------------------------------------- */

static size_t index_of(const uint64_t *ids, size_t n, uint64_t id)
{
	if (id >= 1 && id <= n && ids[id - 1] == id)
		return (size_t)id;
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return i + 1;
	fail_msg("id %" PRIu64 " not found", id);
	return 0;
}

static VT *vt(int64_t t, int64_t u)
{
	VT *v = xcalloc(1, sizeof *v);
	opentelemetry__proto__profiles__v1development__value_type__init(v);
	v->type_strindex = (int32_t)t;
	v->unit_strindex = (int32_t)u;
	return v;
}

static Any *any_str(const char *s)
{
	Any *a = xcalloc(1, sizeof *a);
	opentelemetry__proto__common__v1__any_value__init(a);
	a->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
	a->string_value = xstrdup(s);
	return a;
}

static KV *kv(const char *k, const char *v)
{
	KV *x = xcalloc(1, sizeof *x);
	opentelemetry__proto__common__v1__key_value__init(x);
	x->key = xstrdup(k);
	x->value = any_str(v);
	return x;
}

/* Adds string s to the dictionary's string table; its index. */
static int32_t add_str(Dict *d, const char *s)
{
	for (size_t i = 0; i < d->n_string_table; i++)
		if (strcmp(d->string_table[i], s) == 0)
			return (int32_t)i;
	d->string_table = realloc(d->string_table, (d->n_string_table + 1) * sizeof(char *));
	assert_non_null(d->string_table);
	d->string_table[d->n_string_table] = xstrdup(s);
	return (int32_t)d->n_string_table++;
}

static int32_t add_attr(Dict *d, Attr *a)
{
	d->attribute_table =
	    realloc(d->attribute_table, (d->n_attribute_table + 1) * sizeof(Attr *));
	assert_non_null(d->attribute_table);
	d->attribute_table[d->n_attribute_table] = a;
	return (int32_t)d->n_attribute_table++;
}

/* The dictionary of a pprof's tables: strings as they are, every table with the
 * zero entry at index 0, entry i+1 the pprof's i-th, and one stack per sample. */
static Dict *dict_of(const struct pd_pprof_parts *pp)
{
	Dict *d = xcalloc(1, sizeof *d);
	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
	d->n_string_table = pp->nstrings;
	d->string_table = xcalloc(pp->nstrings, sizeof(char *));
	for (size_t i = 0; i < pp->nstrings; i++) {
		d->string_table[i] = xcalloc(pp->string_len[i] + 1, 1);
		memcpy(d->string_table[i], pp->strings[i], pp->string_len[i]);
	}
	Attr *a0 = xcalloc(1, sizeof *a0);
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a0);
	add_attr(d, a0);
	uint64_t *fids = xcalloc(pp->nfunction, sizeof *fids);
	uint64_t *mids = xcalloc(pp->nmapping, sizeof *mids);
	uint64_t *lids = xcalloc(pp->nlocation, sizeof *lids);
	d->n_function_table = pp->nfunction + 1;
	d->function_table = xcalloc(d->n_function_table, sizeof(Fn *));
	for (size_t i = 0; i <= pp->nfunction; i++) {
		Fn *f = d->function_table[i] = xcalloc(1, sizeof(Fn));
		opentelemetry__proto__profiles__v1development__function__init(f);
		if (i == 0)
			continue;
		const struct pd_pprof_pfunction *g = &pp->function[i - 1];
		fids[i - 1] = g->id;
		f->name_strindex = (int32_t)g->name;
		f->system_name_strindex = (int32_t)g->system_name;
		f->filename_strindex = (int32_t)g->filename;
		f->start_line = g->start_line;
	}
	d->n_mapping_table = pp->nmapping + 1;
	d->mapping_table = xcalloc(d->n_mapping_table, sizeof(Map *));
	for (size_t i = 0; i <= pp->nmapping; i++) {
		Map *m = d->mapping_table[i] = xcalloc(1, sizeof(Map));
		opentelemetry__proto__profiles__v1development__mapping__init(m);
		if (i == 0)
			continue;
		const struct pd_pprof_pmapping *g = &pp->mapping[i - 1];
		mids[i - 1] = g->id;
		m->memory_start = g->memory_start;
		m->memory_limit = g->memory_limit;
		m->file_offset = g->file_offset;
		m->filename_strindex = (int32_t)g->filename;
		if (g->build_id) {
			Attr *a = xcalloc(1, sizeof *a);
			opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
			a->key_strindex = add_str(d, "process.executable.build_id.gnu");
			a->value = any_str(d->string_table[g->build_id]);
			m->n_attribute_indices = 1;
			m->attribute_indices = xcalloc(1, sizeof(int32_t));
			m->attribute_indices[0] = add_attr(d, a);
		}
	}
	d->n_location_table = pp->nlocation + 1;
	d->location_table = xcalloc(d->n_location_table, sizeof(Loc *));
	for (size_t i = 0; i <= pp->nlocation; i++) {
		Loc *l = d->location_table[i] = xcalloc(1, sizeof(Loc));
		opentelemetry__proto__profiles__v1development__location__init(l);
		if (i == 0)
			continue;
		const struct pd_pprof_plocation *g = &pp->location[i - 1];
		lids[i - 1] = g->id;
		l->address = g->address;
		l->mapping_index =
		    g->mapping_id ? (int32_t)index_of(mids, pp->nmapping, g->mapping_id) : 0;
		l->n_lines = g->nline;
		l->lines = xcalloc(g->nline, sizeof(Line *));
		for (size_t k = 0; k < g->nline; k++) {
			Line *x = l->lines[k] = xcalloc(1, sizeof(Line));
			opentelemetry__proto__profiles__v1development__line__init(x);
			x->function_index =
			    (int32_t)index_of(fids, pp->nfunction, g->line[k].function_id);
			x->line = g->line[k].line;
		}
	}
	d->n_stack_table = pp->nsample + 1;
	d->stack_table = xcalloc(d->n_stack_table, sizeof(Stack *));
	for (size_t i = 0; i <= pp->nsample; i++) {
		Stack *s = d->stack_table[i] = xcalloc(1, sizeof(Stack));
		opentelemetry__proto__profiles__v1development__stack__init(s);
		if (i == 0)
			continue;
		const struct pd_pprof_psample *g = &pp->sample[i - 1];
		s->n_location_indices = g->nlocation;
		s->location_indices = xcalloc(g->nlocation, sizeof(int32_t));
		for (size_t k = 0; k < g->nlocation; k++)
			s->location_indices[k] =
			    (int32_t)index_of(lids, pp->nlocation, g->location_id[k]);
	}
	free(fids);
	free(mids);
	free(lids);
	return d;
}

/* The OTLP Profile of sample type ti of pp, its samples' labels as attributes. */
static Prof *profile_of(const struct pd_pprof_parts *pp, Dict *d, size_t ti)
{
	Prof *p = xcalloc(1, sizeof *p);
	opentelemetry__proto__profiles__v1development__profile__init(p);
	p->sample_type = vt(pp->sample_type[ti].type, pp->sample_type[ti].unit);
	if (pp->has_period_type)
		p->period_type = vt(pp->period_type.type, pp->period_type.unit);
	p->period = pp->period;
	p->time_unix_nano = (uint64_t)pp->time_nanos;
	p->duration_nano = (uint64_t)pp->duration_nanos;
	p->n_samples = pp->nsample;
	p->samples = xcalloc(pp->nsample, sizeof(Smp *));
	for (size_t i = 0; i < pp->nsample; i++) {
		const struct pd_pprof_psample *g = &pp->sample[i];
		Smp *s = p->samples[i] = xcalloc(1, sizeof(Smp));
		opentelemetry__proto__profiles__v1development__sample__init(s);
		s->stack_index = (int32_t)(i + 1);
		s->n_values = 1;
		s->values = xcalloc(1, sizeof(int64_t));
		s->values[0] = g->value[ti];
		s->n_attribute_indices = g->nlabel;
		s->attribute_indices = xcalloc(g->nlabel, sizeof(int32_t));
		for (size_t k = 0; k < g->nlabel; k++) {
			Attr *a = xcalloc(1, sizeof *a);
			opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
			a->key_strindex = (int32_t)g->label[k].key;
			a->value = xcalloc(1, sizeof(Any));
			opentelemetry__proto__common__v1__any_value__init(a->value);
			if (g->label[k].str) {
				a->value->value_case =
				    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
				a->value->string_value_strindex = (int32_t)g->label[k].str;
			} else {
				a->value->value_case =
				    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
				a->value->int_value = g->label[k].num;
				a->unit_strindex = (int32_t)g->label[k].num_unit;
			}
			s->attribute_indices[k] = add_attr(d, a);
		}
	}
	return p;
}

/* A request of one resource (attributes kvs, n of them) with one scope holding
 * the given profiles. */
static Req *request(Dict *d, Prof **ps, size_t np, KV **kvs, size_t nkv)
{
	Req *q = xcalloc(1, sizeof *q);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
	    q);
	q->dictionary = d;
	q->n_resource_profiles = 1;
	q->resource_profiles = xcalloc(1, sizeof(RP *));
	RP *rp = q->resource_profiles[0] = xcalloc(1, sizeof(RP));
	opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
	rp->resource = xcalloc(1, sizeof(Res));
	opentelemetry__proto__resource__v1__resource__init(rp->resource);
	rp->resource->n_attributes = nkv;
	rp->resource->attributes = xcalloc(nkv, sizeof(KV *));
	memcpy(rp->resource->attributes, kvs, nkv * sizeof(KV *));
	rp->n_scope_profiles = 1;
	rp->scope_profiles = xcalloc(1, sizeof(SP *));
	SP *sp = rp->scope_profiles[0] = xcalloc(1, sizeof(SP));
	opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
	sp->n_profiles = np;
	sp->profiles = xcalloc(np, sizeof(Prof *));
	memcpy(sp->profiles, ps, np * sizeof(Prof *));
	return q;
}

/* Everything built above is malloc'd as protobuf-c's default allocator does. */
static void req_free(Req *q)
{
	protobuf_c_message_free_unpacked(&q->base, NULL);
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
	*len = protobuf_c_message_get_packed_size(m);
	uint8_t *b = xcalloc(*len, 1);
	assert_int_equal(protobuf_c_message_pack(m, b), *len);
	return b;
}

/* ---- a proto3 JSON writer, to send requests as JSON ---------------------------- */

struct jopts {
	int proto_names; /* names as in the .proto, not lowerCamelCase */
	int int64_numbers;
	int urlsafe;
};

struct jbuf {
	char *s;
	size_t n, cap;
};

static void jput(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		assert_true(k >= 0);
		if ((size_t)k < b->cap - b->n) {
			b->n += (size_t)k;
			return;
		}
		b->cap = b->cap * 2 + (size_t)k + 64;
		b->s = realloc(b->s, b->cap);
		assert_non_null(b->s);
	}
}

static void jstr(struct jbuf *b, const char *s)
{
	jput(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			jput(b, "\\%c", c);
		else if (c < 0x20)
			jput(b, "\\u%04x", c);
		else
			jput(b, "%c", c);
	}
	jput(b, "\"");
}

static void jname(struct jbuf *b, const char *name, const struct jopts *o)
{
	char buf[128];
	size_t n = 0;
	for (const char *p = name; *p && n + 1 < sizeof buf; p++) {
		if (!o->proto_names && *p == '_' && p[1]) {
			p++;
			buf[n++] = (*p >= 'a' && *p <= 'z') ? (char)(*p - 32) : *p;
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = 0;
	jstr(b, buf);
	jput(b, ":");
}

static void jmsg(struct jbuf *b, const ProtobufCMessage *m, const struct jopts *o);

static void jvalue(struct jbuf *b, const ProtobufCFieldDescriptor *f, const void *v,
                   const struct jopts *o)
{
	static const char *b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char *b64u =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		jput(b, "%" PRId32, *(const int32_t *)v);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		jput(b, "%" PRIu32, *(const uint32_t *)v);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		jput(b, o->int64_numbers ? "%" PRId64 : "\"%" PRId64 "\"", *(const int64_t *)v);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		jput(b, o->int64_numbers ? "%" PRIu64 : "\"%" PRIu64 "\"", *(const uint64_t *)v);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		jput(b, "%.9g", (double)*(const float *)v);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		jput(b, "%.17g", *(const double *)v);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		jput(b, *(const protobuf_c_boolean *)v ? "true" : "false");
		break;
	case PROTOBUF_C_TYPE_STRING:
		jstr(b, *(char *const *)v);
		break;
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *d = v;
		const char *t = o->urlsafe ? b64u : b64;
		jput(b, "\"");
		for (size_t i = 0; i < d->len; i += 3) {
			uint32_t x = (uint32_t)d->data[i] << 16;
			if (i + 1 < d->len)
				x |= (uint32_t)d->data[i + 1] << 8;
			if (i + 2 < d->len)
				x |= d->data[i + 2];
			jput(b, "%c%c", t[x >> 18], t[(x >> 12) & 63]);
			if (i + 1 < d->len)
				jput(b, "%c", t[(x >> 6) & 63]);
			else if (!o->urlsafe)
				jput(b, "=");
			if (i + 2 < d->len)
				jput(b, "%c", t[x & 63]);
			else if (!o->urlsafe)
				jput(b, "=");
		}
		jput(b, "\"");
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		jmsg(b, *(ProtobufCMessage *const *)v, o);
		break;
	}
}

static size_t esize(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 4;
	}
}

static void jmsg(struct jbuf *b, const ProtobufCMessage *m, const struct jopts *o)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const uint8_t *base = (const uint8_t *)m;
	int first = 1;
	jput(b, "{");
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *v = base + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			if (!n)
				continue;
			jput(b, first ? "" : ",");
			first = 0;
			jname(b, f->name, o);
			jput(b, "[");
			const uint8_t *arr = *(uint8_t *const *)v;
			for (size_t k = 0; k < n; k++) {
				jput(b, k ? "," : "");
				jvalue(b, f, arr + k * esize(f->type), o);
			}
			jput(b, "]");
			continue;
		}
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
				continue;
		} else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
			if (!*(void *const *)v)
				continue;
		} else if (f->type == PROTOBUF_C_TYPE_STRING) {
			if (!**(char *const *)v)
				continue;
		} else if (f->type == PROTOBUF_C_TYPE_BYTES) {
			if (!((const ProtobufCBinaryData *)v)->len)
				continue;
		} else {
			static const uint8_t zero[8];
			if (memcmp(v, zero, esize(f->type)) == 0)
				continue;
		}
		jput(b, first ? "" : ",");
		first = 0;
		jname(b, f->name, o);
		jvalue(b, f, v, o);
	}
	jput(b, "}");
}

static char *to_json(const ProtobufCMessage *m, const struct jopts *o, size_t *len)
{
	struct jbuf b = {0};
	jmsg(&b, m, o);
	*len = b.n;
	return b.s;
}

/* ---- comparing by content ------------------------------------------------------ */

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Each sample of p as one line naming its stack, labels and value ti (times mul),
 * sorted: two profiles with the same lines hold the same samples. */
static char **canon(const struct pd_pprof_profile *p, size_t ti, int64_t mul, size_t *n)
{
	struct pd_pprof_parts pp;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_get(p, &pp, &err), 0);
	char **out = xcalloc(pp.nsample, sizeof(char *));
	for (size_t i = 0; i < pp.nsample; i++) {
		const struct pd_pprof_psample *s = &pp.sample[i];
		struct jbuf b = {0};
		jput(&b, "%" PRId64 " |", s->value[ti] * mul);
		for (size_t k = 0; k < s->nlocation; k++) {
			const struct pd_pprof_plocation *l = NULL;
			for (size_t j = 0; j < pp.nlocation && !l; j++)
				if (pp.location[j].id == s->location_id[k])
					l = &pp.location[j];
			assert_non_null(l);
			jput(&b, " @%" PRIx64, l->address);
			for (size_t j = 0; j < pp.nmapping; j++) {
				const struct pd_pprof_pmapping *m = &pp.mapping[j];
				if (m->id == l->mapping_id)
					jput(&b, "[%s %" PRIx64 "-%" PRIx64 "+%" PRIx64 " %s]",
					     pp.strings[m->filename], m->memory_start,
					     m->memory_limit, m->file_offset,
					     pp.strings[m->build_id]);
			}
			for (size_t j = 0; j < l->nline; j++) {
				const struct pd_pprof_pfunction *f = NULL;
				for (size_t q = 0; q < pp.nfunction && !f; q++)
					if (pp.function[q].id == l->line[j].function_id)
						f = &pp.function[q];
				assert_non_null(f);
				jput(&b, " %s/%s/%s:%" PRId64 ":%" PRId64, pp.strings[f->name],
				     pp.strings[f->system_name], pp.strings[f->filename],
				     f->start_line, l->line[j].line);
			}
		}
		char **ls = xcalloc(s->nlabel, sizeof(char *));
		for (size_t k = 0; k < s->nlabel; k++) {
			struct jbuf lb = {0};
			const struct pd_pprof_plabel *l = &s->label[k];
			if (l->str)
				jput(&lb, "%s=%s", pp.strings[l->key], pp.strings[l->str]);
			else
				jput(&lb, "%s=%" PRId64 "%s", pp.strings[l->key], l->num,
				     pp.strings[l->num_unit]);
			ls[k] = lb.s;
		}
		qsort(ls, s->nlabel, sizeof *ls, cmpstr);
		jput(&b, " |");
		for (size_t k = 0; k < s->nlabel; k++) {
			jput(&b, " %s", ls[k]);
			free(ls[k]);
		}
		free(ls);
		out[i] = b.s;
	}
	*n = pp.nsample;
	qsort(out, *n, sizeof *out, cmpstr);
	pd_pprof_parts_fini(&pp);
	return out;
}

static void canon_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* got (one sample type) holds what sample type ti of src holds, values times mul. */
static void assert_same_at(const struct pd_pprof_profile *src, size_t ti, int64_t mul,
                           const struct pd_pprof_profile *got, size_t gi)
{
	size_t na, nb;
	char **a = canon(src, ti, mul, &na), **b = canon(got, gi, 1, &nb);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			fail_msg("sample %zu differs:\n  want %s\n  got  %s", i, a[i], b[i]);
	canon_free(a, na);
	canon_free(b, nb);
	/* and the report a user sees */
	struct pd_pprof_top *ta, *tb;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_top(src, (int)ti, &ta, &err), 0);
	assert_int_equal(pd_pprof_top(got, (int)gi, &tb, &err), 0);
	assert_int_equal(ta->nrows, tb->nrows);
	assert_true(ta->total * mul == tb->total);
	for (size_t i = 0; i < ta->nrows; i++) {
		assert_string_equal(ta->rows[i].name, tb->rows[i].name);
		assert_true(ta->rows[i].flat * mul == tb->rows[i].flat);
		assert_true(ta->rows[i].cum * mul == tb->rows[i].cum);
	}
	pd_pprof_top_destroy(ta);
	pd_pprof_top_destroy(tb);
}

/* ---- helpers ------------------------------------------------------------------ */

/* A request of every sample type of the profile at rel, one Profile each. */
static Req *request_of(const struct pd_pprof_profile *src, KV **kvs, size_t nkv, size_t *np)
{
	struct pd_pprof_parts pp;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_get(src, &pp, &err), 0);
	Dict *d = dict_of(&pp);
	*np = pp.nsample_type;
	Prof **ps = xcalloc(*np, sizeof *ps);
	for (size_t i = 0; i < *np; i++)
		ps[i] = profile_of(&pp, d, i);
	Req *q = request(d, ps, *np, kvs, nkv);
	free(ps);
	pd_pprof_parts_fini(&pp);
	return q;
}

static int ingest(const Req *q, int json, const struct jopts *o, const struct pd_ingest_limits *lim,
                  struct pd_ingest_batch *b, struct pd_err *err)
{
	size_t len;
	uint8_t *body = json ? (uint8_t *)to_json(&q->base, o, &len) : pack(&q->base, &len);
	int rc = pd_ingest_otlp(body, len, json, lim, 1700000000000, b, err);
	free(body);
	return rc;
}

/* ---- tests -------------------------------------------------------------------- */

struct case_ {
	const char *file;
	const char *name; /* __name__ of the profile its sample types' profiles make */
};

/* Each profile is sent as OTLP exporters send a pprof profile, one Profile per
 * sample type, and comes back as one profile of all its sample types. */
static const struct case_ cases[] = {
    {"goapp/cpu.pb.gz", "profile"},
    {"prometheus/cpu.pb.gz", "profile"},
    {"goapp/heap.pb.gz", "heap"},
    {"goapp/goroutine.pb.gz", "goroutine"},
    /* a Go mutex profile has a block profile's types and period type: without a
     * name that says otherwise it is a block profile */
    {"goapp/mutex.pb.gz", "block"},
    {"goapp/block.pb.gz", "block"},
    {"labels/cpu.pb.gz", "profile"},
};

static void roundtrip(int json, const struct jopts *o)
{
	size_t done = 0;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		char path[512];
		snprintf(path, sizeof path, "%s/profiles/%s", PD_TESTDATA, cases[c].file);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue; /* not every tree has every profile */
		fclose(f);
		done++;
		struct pd_pprof_profile *src = load(cases[c].file);
		KV *kvs[] = {kv("service.name", "shop"), kv("k8s.pod.name", "shop-1"),
		             kv("host-name/x", "h1")};
		size_t np;
		Req *q = request_of(src, kvs, 3, &np);
		struct pd_ingest_batch b = {0};
		struct pd_err err = {0};
		if (ingest(q, json, o, NULL, &b, &err))
			fail_msg("%s: %s", cases[c].file, err.msg);
		assert_int_equal(b.rejected, 0);
		assert_int_equal(b.n, 1);
		const struct pd_ingest_profile *g = &b.v[0];
		assert_string_equal(pd_labels_get(g->labels, "__name__"), cases[c].name);
		assert_string_equal(pd_labels_get(g->labels, "service_name"), "shop");
		assert_string_equal(pd_labels_get(g->labels, "k8s_pod_name"), "shop-1");
		assert_string_equal(pd_labels_get(g->labels, "host_name_x"), "h1");
		assert_int_equal(pd_pprof_sample_type_count(g->decoded), np);
		assert_true(pd_pprof_period(g->decoded) == pd_pprof_period(src));
		assert_string_equal(pd_pprof_period_type(g->decoded), pd_pprof_period_type(src));
		if (pd_pprof_time_nanos(src))
			assert_true(g->t_ms == pd_pprof_time_nanos(src) / 1000000);
		for (size_t i = 0; i < np; i++) {
			/* samples:count stays a count beside the cpu:nanoseconds column */
			assert_string_equal(pd_pprof_sample_type(g->decoded, i),
			                    pd_pprof_sample_type(src, i));
			assert_string_equal(pd_pprof_sample_unit(g->decoded, i),
			                    pd_pprof_sample_unit(src, i));
			assert_same_at(src, i, 1, g->decoded, i);
		}
		/* the bytes are the profile decoded */
		struct pd_pprof_profile *again = NULL;
		assert_int_equal(pd_pprof_decode(&again, g->pprof, g->len, NULL, &err), 0);
		assert_int_equal(pd_pprof_compare(again, g->decoded, NULL, 0), 0);
		pd_pprof_destroy(again);
		pd_ingest_batch_fini(&b);
		req_free(q);
		pd_pprof_destroy(src);
	}
	assert_true(done >= 5);
}

static void test_roundtrip_binary(void **state)
{
	(void)state;
	roundtrip(0, NULL);
}

static void test_roundtrip_json(void **state)
{
	(void)state;
	struct jopts o[] = {{0, 0, 0}, {1, 1, 1}, {0, 1, 0}, {1, 0, 1}};
	for (size_t i = 0; i < sizeof o / sizeof o[0]; i++)
		roundtrip(1, &o[i]);
}

/* Profiles of one scope become one profile only when they are one profile split
 * by sample type: a second copy of a type, or another time, starts another. */
static void test_combine_groups(void **state)
{
	(void)state;
	struct pd_pprof_profile *src = load("goapp/heap.pb.gz");
	struct pd_pprof_parts pp;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_get(src, &pp, &err), 0);
	Dict *d = dict_of(&pp);
	size_t nt = pp.nsample_type;
	assert_int_equal(nt, 4);
	/* heap's four types twice, then two of them an hour later */
	Prof *ps[10];
	for (size_t i = 0; i < 10; i++) {
		ps[i] = profile_of(&pp, d, i < 8 ? i % nt : 2 + i % 2);
		if (i >= 8)
			ps[i]->time_unix_nano += 3600 * (uint64_t)1000000000;
	}
	KV *kvs[] = {kv("service.name", "shop")};
	Req *q = request(d, ps, 10, kvs, 1);
	struct pd_ingest_batch b = {0};
	assert_int_equal(ingest(q, 0, NULL, NULL, &b, &err), 0);
	assert_int_equal(b.rejected, 0);
	assert_int_equal(b.n, 3);
	assert_int_equal(pd_pprof_sample_type_count(b.v[0].decoded), 4);
	assert_int_equal(pd_pprof_sample_type_count(b.v[1].decoded), 4);
	assert_int_equal(pd_pprof_sample_type_count(b.v[2].decoded), 2);
	for (size_t i = 0; i < 4; i++) {
		assert_same_at(src, i, 1, b.v[0].decoded, i);
		assert_same_at(src, i, 1, b.v[1].decoded, i);
	}
	assert_same_at(src, 2, 1, b.v[2].decoded, 0);
	assert_same_at(src, 3, 1, b.v[2].decoded, 1);
	assert_true(b.v[2].t_ms == b.v[0].t_ms + 3600 * 1000);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(pd_labels_get(b.v[i].labels, "__name__"), "heap");
	pd_ingest_batch_fini(&b);
	req_free(q);

	/* a bad member refuses its group alone, naming the member */
	d = dict_of(&pp);
	kvs[0] = kv("service.name", "shop");
	for (size_t i = 0; i < 8; i++)
		ps[i] = profile_of(&pp, d, i % nt);
	ps[5]->samples[0]->stack_index = 1 << 30;
	q = request(d, ps, 8, kvs, 1);
	memset(&b, 0, sizeof b);
	assert_int_equal(ingest(q, 0, NULL, NULL, &b, &err), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.rejected, 4);
	assert_non_null(strstr(b.rejected_msg, "profiles[5]"));
	assert_non_null(strstr(b.rejected_msg, "stack index"));
	pd_ingest_batch_fini(&b);
	req_free(q);

	/* members whose samples come in another order are merged by stack and labels */
	d = dict_of(&pp);
	kvs[0] = kv("service.name", "shop");
	for (size_t i = 0; i < 4; i++)
		ps[i] = profile_of(&pp, d, i);
	for (size_t i = 0, j = ps[1]->n_samples - 1; i < j; i++, j--) {
		Smp *t = ps[1]->samples[i];
		ps[1]->samples[i] = ps[1]->samples[j];
		ps[1]->samples[j] = t;
	}
	q = request(d, ps, 4, kvs, 1);
	memset(&b, 0, sizeof b);
	assert_int_equal(ingest(q, 0, NULL, NULL, &b, &err), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.rejected, 0);
	for (size_t i = 0; i < 4; i++)
		assert_same_at(src, i, 1, b.v[0].decoded, i);
	pd_ingest_batch_fini(&b);
	req_free(q);
	pd_pprof_parts_fini(&pp);
	pd_pprof_destroy(src);
}

/* A small hand-made request: one function, stacks of depth n. */
static Req *small(size_t nprof, size_t depth, size_t nsamples)
{
	Dict *d = xcalloc(1, sizeof *d);
	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
	add_str(d, "");
	Attr *a0 = xcalloc(1, sizeof *a0);
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a0);
	add_attr(d, a0);
	d->n_function_table = 2;
	d->function_table = xcalloc(2, sizeof(Fn *));
	for (int i = 0; i < 2; i++) {
		d->function_table[i] = xcalloc(1, sizeof(Fn));
		opentelemetry__proto__profiles__v1development__function__init(d->function_table[i]);
	}
	d->function_table[1]->name_strindex = add_str(d, "main.work");
	d->function_table[1]->filename_strindex = add_str(d, "main.go");
	d->n_mapping_table = 2;
	d->mapping_table = xcalloc(2, sizeof(Map *));
	for (int i = 0; i < 2; i++) {
		d->mapping_table[i] = xcalloc(1, sizeof(Map));
		opentelemetry__proto__profiles__v1development__mapping__init(d->mapping_table[i]);
	}
	d->mapping_table[1]->memory_start = 0x400000;
	d->mapping_table[1]->memory_limit = 0x800000;
	d->mapping_table[1]->filename_strindex = add_str(d, "/bin/app");
	d->n_location_table = 2;
	d->location_table = xcalloc(2, sizeof(Loc *));
	for (int i = 0; i < 2; i++) {
		d->location_table[i] = xcalloc(1, sizeof(Loc));
		opentelemetry__proto__profiles__v1development__location__init(d->location_table[i]);
	}
	Loc *l = d->location_table[1];
	l->mapping_index = 1;
	l->address = 0x401000;
	l->n_lines = 1;
	l->lines = xcalloc(1, sizeof(Line *));
	l->lines[0] = xcalloc(1, sizeof(Line));
	opentelemetry__proto__profiles__v1development__line__init(l->lines[0]);
	l->lines[0]->function_index = 1;
	l->lines[0]->line = 42;
	d->n_stack_table = 2;
	d->stack_table = xcalloc(2, sizeof(Stack *));
	for (int i = 0; i < 2; i++) {
		d->stack_table[i] = xcalloc(1, sizeof(Stack));
		opentelemetry__proto__profiles__v1development__stack__init(d->stack_table[i]);
	}
	d->stack_table[1]->n_location_indices = depth;
	d->stack_table[1]->location_indices = xcalloc(depth, sizeof(int32_t));
	for (size_t i = 0; i < depth; i++)
		d->stack_table[1]->location_indices[i] = 1;
	Prof **ps = xcalloc(nprof, sizeof *ps);
	for (size_t k = 0; k < nprof; k++) {
		Prof *p = ps[k] = xcalloc(1, sizeof(Prof));
		opentelemetry__proto__profiles__v1development__profile__init(p);
		p->sample_type = vt(add_str(d, "samples"), add_str(d, "count"));
		p->period_type = vt(add_str(d, "cpu"), add_str(d, "nanoseconds"));
		p->period = 50000000;
		p->time_unix_nano = 1700000000123456789ull;
		p->n_samples = nsamples;
		p->samples = xcalloc(nsamples, sizeof(Smp *));
		for (size_t i = 0; i < nsamples; i++) {
			Smp *s = p->samples[i] = xcalloc(1, sizeof(Smp));
			opentelemetry__proto__profiles__v1development__sample__init(s);
			s->stack_index = 1;
			s->n_values = 1;
			s->values = xcalloc(1, sizeof(int64_t));
			s->values[0] = (int64_t)(i + 1);
		}
	}
	KV *kvs[] = {kv("process.executable.name", "app")};
	Req *q = request(d, ps, nprof, kvs, 1);
	free(ps);
	return q;
}

static void test_ebpf_cpu(void **state)
{
	(void)state;
	Req *q = small(1, 3, 2);
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	assert_int_equal(ingest(q, 0, NULL, NULL, &b, &err), 0);
	assert_int_equal(b.n, 1);
	const struct pd_pprof_profile *p = b.v[0].decoded;
	assert_string_equal(pd_labels_get(b.v[0].labels, "__name__"), "profile");
	assert_string_equal(pd_labels_get(b.v[0].labels, "service_name"), "unknown_service:app");
	assert_string_equal(pd_labels_get(b.v[0].labels, "process_executable_name"), "app");
	assert_string_equal(pd_pprof_sample_type(p, 0), "cpu");
	assert_string_equal(pd_pprof_sample_unit(p, 0), "nanoseconds");
	/* (1 + 2) samples of 50 ms */
	assert_true(pd_pprof_sum(p, 0) == 3 * 50000000);
	assert_true(b.v[0].t_ms == 1700000000123);
	assert_string_equal(pd_pprof_main_binary(p), "/bin/app");
	pd_ingest_batch_fini(&b);
	req_free(q);
}

static void test_sample_attributes_and_links(void **state)
{
	(void)state;
	Req *q = small(1, 1, 1);
	Dict *d = q->dictionary;
	Smp *s = q->resource_profiles[0]->scope_profiles[0]->profiles[0]->samples[0];
	Attr *a = xcalloc(1, sizeof *a), *n = xcalloc(1, sizeof *n), *svc = xcalloc(1, sizeof *svc);
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(n);
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(svc);
	a->key_strindex = add_str(d, "thread.name");
	a->value = any_str("worker-1");
	n->key_strindex = add_str(d, "bytes");
	n->unit_strindex = add_str(d, "bytes");
	n->value = xcalloc(1, sizeof(Any));
	opentelemetry__proto__common__v1__any_value__init(n->value);
	n->value->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
	n->value->int_value = 4096;
	svc->key_strindex = add_str(d, "service.name");
	svc->value = any_str("ignored-here");
	s->n_attribute_indices = 3;
	s->attribute_indices = xcalloc(3, sizeof(int32_t));
	s->attribute_indices[0] = add_attr(d, a);
	s->attribute_indices[1] = add_attr(d, n);
	s->attribute_indices[2] = add_attr(d, svc);
	d->n_link_table = 2;
	d->link_table = xcalloc(2, sizeof(Link *));
	for (int i = 0; i < 2; i++) {
		d->link_table[i] = xcalloc(1, sizeof(Link));
		opentelemetry__proto__profiles__v1development__link__init(d->link_table[i]);
	}
	Link *k = d->link_table[1];
	k->span_id.len = 8;
	k->span_id.data = xcalloc(8, 1);
	k->trace_id.len = 16;
	k->trace_id.data = xcalloc(16, 1);
	for (int i = 0; i < 16; i++)
		k->trace_id.data[i] = (uint8_t)(0xa0 + i);
	k->span_id.data[7] = 0x2a;
	s->link_index = 1;
	for (int json = 0; json < 2; json++) {
		struct pd_ingest_batch b = {0};
		struct pd_err err = {0};
		struct jopts o = {0};
		if (ingest(q, json, &o, NULL, &b, &err))
			fail_msg("%s", err.msg);
		size_t nc;
		char **c = canon(b.v[0].decoded, 0, 1, &nc);
		assert_int_equal(nc, 1);
		assert_non_null(strstr(c[0], "thread.name=worker-1"));
		assert_non_null(strstr(c[0], "bytes=4096bytes"));
		assert_non_null(strstr(c[0], "span_id=000000000000002a"));
		assert_non_null(strstr(c[0], "trace_id=a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"));
		assert_null(strstr(c[0], "service.name"));
		assert_non_null(strstr(c[0], "main.work//main.go:0:42"));
		canon_free(c, nc);
		pd_ingest_batch_fini(&b);
	}
	req_free(q);
}

static void test_partial_success(void **state)
{
	(void)state;
	Req *q = small(3, 2, 2);
	SP *sp = q->resource_profiles[0]->scope_profiles[0];
	sp->profiles[1]->samples[1]->stack_index = 7; /* past the stack table */
	for (int json = 0; json < 2; json++) {
		struct pd_ingest_batch b = {0};
		struct pd_err err = {0};
		struct jopts o = {0};
		assert_int_equal(ingest(q, json, &o, NULL, &b, &err), 0);
		assert_int_equal(b.n, 2);
		assert_int_equal(b.rejected, 1);
		assert_non_null(strstr(b.rejected_msg, "profiles[1]"));
		assert_non_null(strstr(b.rejected_msg, "stack index 7"));
		/* the answer says so, in both forms */
		uint8_t *out;
		size_t len;
		assert_int_equal(pd_ingest_otlp_response(&b, 0, &out, &len, &err), 0);
		Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse
		    *r =
		        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(
		            NULL, len, out);
		assert_non_null(r);
		assert_non_null(r->partial_success);
		assert_int_equal(r->partial_success->rejected_profiles, 1);
		assert_string_equal(r->partial_success->error_message, b.rejected_msg);
		protobuf_c_message_free_unpacked(&r->base, NULL);
		free(out);
		assert_int_equal(pd_ingest_otlp_response(&b, 1, &out, &len, &err), 0);
		ProtobufCMessage *m = NULL;
		int hit = 0;
		assert_int_equal(
		    ingest_pbjson_parse(
		        &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__descriptor,
		        out, len, NULL, &m, &hit, &err),
		    0);
		r = (void *)m;
		assert_int_equal(r->partial_success->rejected_profiles, 1);
		assert_string_equal(r->partial_success->error_message, b.rejected_msg);
		protobuf_c_message_free_unpacked(m, NULL);
		free(out);
		pd_ingest_batch_fini(&b);
	}
	/* a time past what nanoseconds in an int64 hold */
	req_free(q);
	q = small(2, 1, 1);
	q->resource_profiles[0]->scope_profiles[0]->profiles[0]->time_unix_nano = UINT64_MAX;
	struct pd_ingest_batch t = {0};
	struct pd_err terr = {0};
	assert_int_equal(ingest(q, 0, NULL, NULL, &t, &terr), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.rejected, 1);
	assert_non_null(strstr(t.rejected_msg, "profiles[0]: time_unix_nano"));
	pd_ingest_batch_fini(&t);
	/* nothing rejected: an empty response */
	struct pd_ingest_batch e = {0};
	uint8_t *out;
	size_t len;
	struct pd_err err = {0};
	assert_int_equal(pd_ingest_otlp_response(&e, 0, &out, &len, &err), 0);
	assert_int_equal(len, 0);
	free(out);
	assert_int_equal(pd_ingest_otlp_response(&e, 1, &out, &len, &err), 0);
	assert_memory_equal(out, "{}", 2);
	free(out);
	req_free(q);
}

static void test_limits(void **state)
{
	(void)state;
	struct pd_err err = {0};
	/* stack depth and samples: the profile is rejected, the request stands */
	struct {
		size_t depth, samples;
		struct pd_ingest_limits lim;
		const char *flag;
	} per[] = {
	    {5, 1, {.max_stack_depth = 4}, "--ingest.max-stack-depth"},
	    {1, 5, {.max_samples = 4}, "--storage.tsdb.max-profile-samples"},
	};
	for (size_t i = 0; i < sizeof per / sizeof per[0]; i++) {
		Req *q = small(1, per[i].depth, per[i].samples);
		struct pd_ingest_batch b = {0};
		assert_int_equal(ingest(q, 0, NULL, &per[i].lim, &b, &err), 0);
		assert_int_equal(b.n, 0);
		assert_int_equal(b.rejected, 1);
		assert_non_null(strstr(b.rejected_msg, per[i].flag));
		pd_ingest_batch_fini(&b);
		/* one less is fine */
		struct pd_ingest_limits ok = per[i].lim;
		if (ok.max_stack_depth)
			ok.max_stack_depth++;
		else
			ok.max_samples++;
		assert_int_equal(ingest(q, 0, NULL, &ok, &b, &err), 0);
		assert_int_equal(b.n, 1);
		pd_ingest_batch_fini(&b);
		req_free(q);
	}
	/* symbols */
	Req *q = small(1, 1, 1);
	struct pd_ingest_batch b = {0};
	struct pd_ingest_limits lim = {.max_symbol_len = 5};
	assert_int_equal(ingest(q, 0, NULL, &lim, &b, &err), 0);
	assert_int_equal(b.rejected, 1);
	assert_non_null(strstr(b.rejected_msg, "--ingest.max-symbol-length"));
	pd_ingest_batch_fini(&b);
	/* series labels */
	lim = (struct pd_ingest_limits){.max_labels = 2};
	assert_int_equal(ingest(q, 0, NULL, &lim, &b, &err), 0);
	assert_int_equal(b.rejected, 1);
	assert_non_null(strstr(b.rejected_msg, "--ingest.max-labels-per-series"));
	pd_ingest_batch_fini(&b);
	lim = (struct pd_ingest_limits){.max_label_value_len = 2};
	assert_int_equal(ingest(q, 0, NULL, &lim, &b, &err), 0);
	assert_int_equal(b.rejected, 1);
	assert_non_null(strstr(b.rejected_msg, "--ingest.max-label-value-length"));
	pd_ingest_batch_fini(&b);
	req_free(q);
	/* profiles per request: the whole request */
	q = small(3, 1, 1);
	lim = (struct pd_ingest_limits){.max_profiles = 2};
	assert_int_equal(ingest(q, 0, NULL, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_PROFILES);
	assert_int_equal(b.n, 0);
	pd_ingest_batch_fini(&b);
	lim.max_profiles = 3;
	assert_int_equal(ingest(q, 0, NULL, &lim, &b, &err), 0);
	assert_int_equal(b.n, 3);
	pd_ingest_batch_fini(&b);
	/* JSON depth */
	struct jopts o = {0};
	lim = (struct pd_ingest_limits){.max_json_depth = 4};
	assert_int_equal(ingest(q, 1, &o, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_JSON_DEPTH);
	assert_non_null(strstr(err.msg, "--ingest.max-json-depth"));
	pd_ingest_batch_fini(&b);
	lim.max_json_depth = 12;
	assert_int_equal(ingest(q, 1, &o, &lim, &b, &err), 0);
	pd_ingest_batch_fini(&b);
	req_free(q);
}

static void expect_einval(const char *body, int json, const char *want)
{
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	int rc = pd_ingest_otlp((const uint8_t *)body, strlen(body), json, NULL, 0, &b, &err);
	if (rc != PD_EINVAL || !strstr(err.msg, want))
		fail_msg("%s: rc %d, \"%s\", wanted \"%s\"", body, rc, err.msg, want);
	assert_int_equal(b.n, 0);
	pd_ingest_batch_fini(&b);
}

static void test_malformed(void **state)
{
	(void)state;
	Req *q = small(1, 2, 2);
	size_t len;
	uint8_t *body = pack(&q->base, &len);
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	/* cut anywhere: an error or (at a field boundary) a smaller request, never a crash */
	size_t errors = 0;
	for (size_t cut = 1; cut < len; cut++) {
		int rc = pd_ingest_otlp(body, cut, 0, NULL, 0, &b, &err);
		if (rc) {
			assert_int_equal(rc, PD_EINVAL);
			/* or a cut before the dictionary */
			if (!strstr(err.msg, "byte") && !strstr(err.msg, "no dictionary"))
				fail_msg("cut at %zu: %s", cut, err.msg);
			errors++;
		}
		pd_ingest_batch_fini(&b);
	}
	assert_true(errors > len / 2);
	/* a truncated length names its field and offset */
	uint8_t bad[] = {0x0a, 0x03, 0x0a, 0x10, 0x01};
	assert_int_equal(pd_ingest_otlp(bad, sizeof bad, 0, NULL, 0, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "byte 2"));
	assert_non_null(strstr(err.msg, "resource_profiles.resource"));
	/* a wire type the field cannot have */
	uint8_t wt[] = {0x08, 0x01};
	assert_int_equal(pd_ingest_otlp(wt, sizeof wt, 0, NULL, 0, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "resource_profiles"));
	assert_non_null(strstr(err.msg, "wire type 0"));
	free(body);
	req_free(q);

	expect_einval("{", 1, "offset");
	expect_einval("[]", 1, "expected an object");
	expect_einval("{} x", 1, "trailing");
	expect_einval("{\"resourceProfiles\":{}}", 1, "resourceProfiles: expected an array");
	expect_einval("{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"profileId\":"
	              "\"ab$d\"}]}]}]}",
	              1, "resourceProfiles[0].scopeProfiles[0].profiles[0].profileId: base64");
	expect_einval("{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"profileId\":"
	              "\"abcde\"}]}]}]}",
	              1, "truncated");
	expect_einval("{\"dictionary\":{\"stringTable\":[1]}}", 1,
	              "dictionary.stringTable[0]: expected a string");
	expect_einval("{\"dictionary\":{\"stackTable\":[{\"locationIndices\":[\"x\"]}]}}", 1,
	              "locationIndices[0]");
	expect_einval("{\"dictionary\":{\"stackTable\":[{\"locationIndices\":[2147483648]}]}}", 1,
	              "out of range");
	expect_einval("{\"dictionary\":{\"mappingTable\":[{\"memoryStart\":-1}]}}", 1, "negative");
	expect_einval("{\"resource_profiles\":[{\"resource\":{\"attributes\":[{\"key\":\"a\","
	              "\"value\":{\"stringValue\":\"x\",\"intValue\":3}}]}}]}",
	              1, "oneof");
	expect_einval("{\"resourceProfiles\":[],\"resource_profiles\":[]}", 1, "twice");
	expect_einval("{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{}]}]}]}", 1,
	              "no dictionary");
}

/* Wraps buf[0, *n) in field tag's length-delimited header (buf has room). */
static void wrap(uint8_t *buf, size_t *n, uint8_t tag)
{
	uint8_t hdr[12];
	size_t h = 0;
	hdr[h++] = tag;
	for (size_t v = *n;; v >>= 7) {
		hdr[h++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		if (v < 0x80)
			break;
	}
	memmove(buf + h, buf, *n);
	memcpy(buf, hdr, h);
	*n += h;
}

static void test_deep_protobuf(void **state)
{
	(void)state;
	/* an attribute value of arrays in arrays, 20 and 5000 deep: protobuf-c would
	 * recurse as deep, so the walk before it refuses the second */
	for (int deep = 0; deep < 2; deep++) {
		size_t levels = deep ? 5000 : 20, n = 0;
		uint8_t *buf = xcalloc(levels * 16 + 64, 1);
		for (size_t i = 0; i < levels; i++) {
			wrap(buf, &n, 0x0a); /* ArrayValue.values */
			wrap(buf, &n, 0x2a); /* AnyValue.array_value */
		}
		wrap(buf, &n, 0x12); /* KeyValue.value */
		wrap(buf, &n, 0x0a); /* Resource.attributes */
		wrap(buf, &n, 0x0a); /* ResourceProfiles.resource */
		wrap(buf, &n, 0x0a); /* Request.resource_profiles */
		struct pd_ingest_batch b = {0};
		struct pd_err err = {0};
		int rc = pd_ingest_otlp(buf, n, 0, NULL, 0, &b, &err);
		if (deep) {
			assert_int_equal(rc, PD_EINVAL);
			assert_non_null(strstr(err.msg, "nest too deep"));
		} else if (rc) {
			fail_msg("%s", err.msg);
		}
		pd_ingest_batch_fini(&b);
		free(buf);
	}
}

static void test_json_forms(void **state)
{
	(void)state;
	/* numbers in all forms, unknown fields, null, url-safe base64 without padding */
	const char *body =
	    "{\"unknownField\":{\"deep\":[1,2,{\"x\":null}]},"
	    "\"dictionary\":{\"string_table\":[\"\",\"samples\",\"count\",\"f\"],"
	    "\"functionTable\":[{},{\"nameStrindex\":3}],"
	    "\"locationTable\":[{},{\"lines\":[{\"functionIndex\":\"1\",\"line\":1e1}],"
	    "\"address\":\"18446744073709551615\"}],"
	    "\"stackTable\":[{},{\"locationIndices\":[1,1.0]}],"
	    "\"attributeTable\":[{}]},"
	    "\"resourceProfiles\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
	    "\"value\":{\"stringValue\":\"svc\"}},{\"key\":\"n\",\"value\":{\"intValue\":\"-7\"}},"
	    "{\"key\":\"d\",\"value\":{\"doubleValue\":\"NaN\"}},{\"key\":\"b\",\"value\":{"
	    "\"boolValue\":true}}]},"
	    "\"scopeProfiles\":[{\"scope\":null,\"profiles\":[{\"sampleType\":{\"typeStrindex\":1,"
	    "\"unitStrindex\":2},\"profileId\":\"-_8\",\"timeUnixNano\":1700000000000000000,"
	    "\"samples\":[{\"stackIndex\":1,\"values\":[\"5\"]}]}]}]}]}";
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	if (pd_ingest_otlp((const uint8_t *)body, strlen(body), 1, NULL, 0, &b, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.rejected, 0);
	assert_string_equal(pd_labels_get(b.v[0].labels, "service_name"), "svc");
	assert_string_equal(pd_labels_get(b.v[0].labels, "n"), "-7");
	assert_null(pd_labels_get(b.v[0].labels, "d"));
	assert_true(b.v[0].t_ms == 1700000000000);
	size_t nc;
	char **c = canon(b.v[0].decoded, 0, 1, &nc);
	assert_int_equal(nc, 1);
	assert_string_equal(c[0], "5 | @ffffffffffffffff f//:0:10 @ffffffffffffffff f//:0:10 |");
	canon_free(c, nc);
	pd_ingest_batch_fini(&b);

	/* the bytes themselves: standard and URL-safe, padded or not */
	const char *forms[] = {"\"+/8=\"", "\"-_8\"", "\"+/8\"", "\"-_8=\""};
	for (size_t i = 0; i < 4; i++) {
		char j[128];
		snprintf(j, sizeof j, "{\"traceId\":%s,\"spanId\":\"AA==\"}", forms[i]);
		ProtobufCMessage *m = NULL;
		int hit = 0;
		if (ingest_pbjson_parse(
		        &opentelemetry__proto__profiles__v1development__link__descriptor,
		        (const uint8_t *)j, strlen(j), NULL, &m, &hit, &err))
			fail_msg("%s: %s", j, err.msg);
		Link *k = (Link *)m;
		assert_int_equal(k->trace_id.len, 2);
		assert_int_equal(k->trace_id.data[0], 0xfb);
		assert_int_equal(k->trace_id.data[1], 0xff);
		assert_int_equal(k->span_id.len, 1);
		assert_int_equal(k->span_id.data[0], 0);
		protobuf_c_message_free_unpacked(m, NULL);
	}
}

/* ---- the JSON reader on every kind of field -------------------------------------- */

static Pdtest__AllTypes *all_types(const char *json, int *rc, struct pd_err *err)
{
	ProtobufCMessage *m = NULL;
	int hit = 0;
	*rc = ingest_pbjson_parse(&pdtest__all_types__descriptor, (const uint8_t *)json,
	                          strlen(json), NULL, &m, &hit, err);
	if (*rc)
		assert_null(m);
	return (Pdtest__AllTypes *)m;
}

static void test_pbjson_kinds(void **state)
{
	(void)state;
	struct pd_err err = {0};
	int rc;
	Pdtest__AllTypes *m = all_types(
	    "{\"color\":\"RED\",\"colors\":[\"GREEN\",1,0],\"b\":true,\"d\":\"NaN\","
	    "\"f\":2.5,\"oi\":\"-12\",\"u32\":4294967295,\"s64\":\"-9223372036854775808\","
	    "\"f32\":\"7\",\"sf64\":-5,\"names\":[\"a\",\"\\u00e9\\n\"],\"data\":\"AQID\","
	    "\"child\":{\"d\":\"-Infinity\",\"child\":{\"oi\":3}},"
	    "\"children\":[{},{\"color\":2}],\"pm\":{\"ps\":\"inner\"},\"ds\":[1e300,\"Infinity\",-"
	    "0.5]}",
	    &rc, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(m->color, PDTEST__ALL_TYPES__COLOR__RED);
	assert_int_equal(m->n_colors, 3);
	assert_int_equal(m->colors[0], PDTEST__ALL_TYPES__COLOR__GREEN);
	assert_int_equal(m->colors[1], PDTEST__ALL_TYPES__COLOR__RED);
	assert_true(m->b);
	assert_true(m->d != m->d); /* NaN */
	assert_true(m->f == 2.5f);
	assert_int_equal(m->oi, -12);
	assert_true(m->u32 == UINT32_MAX);
	assert_true(m->s64 == INT64_MIN);
	assert_int_equal(m->f32, 7);
	assert_true(m->sf64 == -5);
	assert_int_equal(m->n_names, 2);
	assert_string_equal(m->names[1], "\xc3\xa9\n");
	assert_int_equal(m->data.len, 3);
	assert_memory_equal(m->data.data, "\1\2\3", 3);
	assert_true(m->child->d < -1e308);
	assert_int_equal(m->child->child->oi, 3);
	assert_int_equal(m->n_children, 2);
	assert_int_equal(m->children[1]->color, PDTEST__ALL_TYPES__COLOR__GREEN);
	assert_int_equal(m->pick_case, PDTEST__ALL_TYPES__PICK_PM);
	assert_int_equal(m->pm->pick_case, PDTEST__ALL_TYPES__PICK_PS);
	assert_string_equal(m->pm->ps, "inner");
	assert_int_equal(m->n_ds, 3);
	assert_true(m->ds[0] == 1e300 && m->ds[1] > 1e308 && m->ds[2] == -0.5);
	/* what protobuf-c packs of it unpacks to the same */
	size_t len = pdtest__all_types__get_packed_size(m);
	uint8_t *buf = xcalloc(len, 1);
	pdtest__all_types__pack(m, buf);
	Pdtest__AllTypes *u = pdtest__all_types__unpack(NULL, len, buf);
	assert_non_null(u);
	assert_string_equal(u->pm->ps, "inner");
	assert_int_equal(u->children[1]->color, PDTEST__ALL_TYPES__COLOR__GREEN);
	pdtest__all_types__free_unpacked(u, NULL);
	free(buf);
	pdtest__all_types__free_unpacked(m, NULL);

	/* refusals, each part way through a message that is freed (ASan checks) */
	static const struct {
		const char *json, *want;
	} bad[] = {
	    {"{\"color\":\"BLUE\"}", "color: \"BLUE\" is not a value of enum"},
	    {"{\"colors\":[\"RED\",true]}", "colors[1]: expected an integer"},
	    {"{\"b\":\"true\"}", "b: expected true or false"},
	    {"{\"d\":\"fast\"}", "d: \"fast\" is not a number"},
	    {"{\"oi\":2147483648}", "oi: integer 2147483648 is out of range"},
	    {"{\"oi\":1.5}", "oi: \"1.5\" is not an integer"},
	    {"{\"u32\":4294967296}", "u32: integer 4294967296 is out of range"},
	    {"{\"u32\":-1}", "negative"},
	    {"{\"s64\":\"9223372036854775808\"}", "s64"},
	    {"{\"names\":[\"a\",3]}", "names[1]: expected a string"},
	    {"{\"data\":\"AQ?D\"}", "data: base64 has an invalid character 0x3f at offset 2"},
	    {"{\"data\":\"A\"}", "truncated"},
	    {"{\"child\":{\"child\":{\"names\":[\"x\",{}]}}}", "child.child.names[1]"},
	    {"{\"children\":[{\"names\":[\"x\"]},{\"pm\":{\"data\":\"*\"}}]}",
	     "children[1].pm.data"},
	    {"{\"pm\":{\"names\":[\"x\"]},\"ps\":\"y\"}", "a second member of a oneof"},
	    {"{\"ps\":\"y\",\"pm\":{}}", "a second member of a oneof"},
	    {"{\"child\":[]}", "child: expected an object"},
	    {"{\"colors\":{}}", "colors: expected an array"},
	    {"{\"oi\":1,\"oi\":2}", ""}, /* json-c keeps the last: not refused */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		m = all_types(bad[i].json, &rc, &err);
		if (!*bad[i].want) {
			assert_int_equal(rc, 0);
			assert_int_equal(m->oi, 2);
			pdtest__all_types__free_unpacked(m, NULL);
			continue;
		}
		if (rc != PD_EINVAL || !strstr(err.msg, bad[i].want))
			fail_msg("%s: rc %d \"%s\", wanted \"%s\"", bad[i].json, rc, err.msg,
			         bad[i].want);
	}
}

static void test_empty(void **state)
{
	(void)state;
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	assert_int_equal(pd_ingest_otlp((const uint8_t *)"", 0, 0, NULL, 0, &b, &err), 0);
	assert_int_equal(b.n, 0);
	assert_int_equal(pd_ingest_otlp((const uint8_t *)"{}", 2, 1, NULL, 0, &b, &err), 0);
	assert_int_equal(b.n, 0);
	assert_string_equal(b.format, "otlp_json");
	/* a profile without samples is no profile, and not refused either */
	Req *q = small(2, 1, 1);
	Prof *p = q->resource_profiles[0]->scope_profiles[0]->profiles[1];
	protobuf_c_message_free_unpacked(&p->samples[0]->base, NULL);
	p->n_samples = 0;
	protobuf_c_message_free_unpacked(&p->sample_type->base, NULL);
	p->sample_type = NULL; /* would be refused, were it read */
	assert_int_equal(ingest(q, 0, NULL, NULL, &b, &err), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.rejected, 0);
	pd_ingest_batch_fini(&b);
	req_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_binary),
	    cmocka_unit_test(test_roundtrip_json),
	    cmocka_unit_test(test_combine_groups),
	    cmocka_unit_test(test_ebpf_cpu),
	    cmocka_unit_test(test_sample_attributes_and_links),
	    cmocka_unit_test(test_partial_success),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_json_forms),
	    cmocka_unit_test(test_deep_protobuf),
	    cmocka_unit_test(test_pbjson_kinds),
	    cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
