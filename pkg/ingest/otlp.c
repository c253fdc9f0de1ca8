/* otlp.c: OTLP profiles over HTTP (opentelemetry-proto v1.11.0,
 * profiles/v1development, with the request-wide ProfilesDictionary), protobuf or
 * OTLP/JSON. Each Profile becomes one pprof profile (the profiles of one scope that
 * are one profile split by sample type, of the same time and period, become one
 * profile of several sample types), built through the dictionary
 * (strings, functions, locations, mappings, stacks, attributes, links) as
 * Pyroscope's OTLP ingest converts one, and stored as one series whose labels are
 * its resource's (and scope's) attributes. A profile that cannot be converted is
 * left out and counted in the batch's rejected profiles, with the first reason
 * (ExportProfilesPartialSuccess); the rest are kept. docs/ingest-otlp.md says
 * what is read. */
#include <inttypes.h>
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_int.h"
#include "otlp_profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit Attr;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    Request;

#define BUILD_ID_ATTR "process.executable.build_id.gnu"

/* The builder's id of a dictionary entry, valid in the profile whose conversion
 * has generation gen (so that a request of many profiles over a large dictionary
 * never clears the tables between profiles). */
struct memo {
	uint64_t id;
	uint32_t gen;
};

/* What one profile's conversion keeps: the builder's ids of the dictionary's
 * entries it met. */
struct conv {
	const Dict *d;
	struct ingest_pb *pb;
	struct memo *loc_id, *fn_id, *map_id;
	struct memo *sym_id; /* a string's index as a function or file name, plus 1 */
	uint32_t gen;
	const uint8_t *map_has_fn; /* per mapping: every location of it has functions */
	struct pd_err *err;
};

static int str_at(struct conv *c, int32_t i, const char **s, const char *what)
{
	if (i < 0 || (size_t)i >= c->d->n_string_table)
		return pd_err_set(c->err, PD_EINVAL,
		                  "%s: string index %" PRId32
		                  " is out of the string_table (%zu strings)",
		                  what, i, c->d->n_string_table);
	*s = c->d->string_table[i];
	return 0;
}

/* The string form of an attribute value, as Pyroscope takes it: a string, an
 * integer in decimal, or the one element of an array of those; NULL otherwise. */
static const char *any_string(const Dict *d, const AnyValue *v, char *buf, size_t size)
{
	if (!v)
		return NULL;
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		return v->string_value;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
		if (!d || v->string_value_strindex < 0 ||
		    (size_t)v->string_value_strindex >= d->n_string_table)
			return NULL;
		return d->string_table[v->string_value_strindex];
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		snprintf(buf, size, "%" PRId64, v->int_value);
		return buf;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE:
		if (v->array_value && v->array_value->n_values == 1 &&
		    v->array_value->values[0]->value_case !=
		        OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE)
			return any_string(d, v->array_value->values[0], buf, size);
		return NULL;
	default:
		return NULL;
	}
}

/* The value of attribute key among attribute_indices, NULL when absent. */
static const char *attr_value(const Dict *d, const int32_t *idx, size_t n, const char *key,
                              char *buf, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		if (idx[i] < 0 || (size_t)idx[i] >= d->n_attribute_table)
			continue;
		const Attr *a = d->attribute_table[idx[i]];
		if (a->key_strindex >= 0 && (size_t)a->key_strindex < d->n_string_table &&
		    strcmp(d->string_table[a->key_strindex], key) == 0)
			return any_string(d, a->value, buf, size);
	}
	return NULL;
}

/* The builder's index of string i as a function or file name; -1 on error. */
static int64_t symbol_id(struct conv *c, int32_t i, const char *what)
{
	const char *s = "";
	if (str_at(c, i, &s, what))
		return -1;
	if (c->sym_id[i].gen == c->gen && c->sym_id[i].id)
		return (int64_t)c->sym_id[i].id - 1;
	int64_t id = ingest_pb_symbol(c->pb, s, strlen(s));
	if (id < 0) {
		ingest_pb_err(c->pb, c->err, NULL);
		return -1;
	}
	c->sym_id[i] = (struct memo){(uint64_t)id + 1, c->gen};
	return id;
}

static uint64_t function_id(struct conv *c, int32_t fi)
{
	if (fi < 0 || (size_t)fi >= c->d->n_function_table) {
		pd_err_set(c->err, PD_EINVAL,
		           "function index %" PRId32 " is out of the function_table (%zu)", fi,
		           c->d->n_function_table);
		return 0;
	}
	if (c->fn_id[fi].gen == c->gen && c->fn_id[fi].id)
		return c->fn_id[fi].id;
	const Function *f = c->d->function_table[fi];
	const char *s = "";
	int64_t name, sys, file;
	/* every index checked before any name is taken, as the names' errors come
	 * after the indices' */
	if (str_at(c, f->name_strindex, &s, "function name") ||
	    str_at(c, f->system_name_strindex, &s, "function system name") ||
	    str_at(c, f->filename_strindex, &s, "function file name"))
		return 0;
	if ((name = symbol_id(c, f->name_strindex, "function name")) < 0 ||
	    (sys = symbol_id(c, f->system_name_strindex, "function system name")) < 0 ||
	    (file = symbol_id(c, f->filename_strindex, "function file name")) < 0)
		return 0;
	uint64_t id = ingest_pb_function_strs(c->pb, name, sys, file, f->start_line);
	if (!id)
		ingest_pb_err(c->pb, c->err, NULL);
	c->fn_id[fi] = (struct memo){id, c->gen};
	return id;
}

static uint64_t mapping_id(struct conv *c, int32_t mi)
{
	/* index 0 is the dictionary's zero entry: no mapping */
	if (mi == 0)
		return 0;
	if (mi < 0 || (size_t)mi >= c->d->n_mapping_table) {
		pd_err_set(c->err, PD_EINVAL,
		           "mapping index %" PRId32 " is out of the mapping_table (%zu)", mi,
		           c->d->n_mapping_table);
		return UINT64_MAX;
	}
	if (c->map_id[mi].gen == c->gen && c->map_id[mi].id)
		return c->map_id[mi].id;
	const Mapping *m = c->d->mapping_table[mi];
	const char *file = "";
	char buf[32];
	if (str_at(c, m->filename_strindex, &file, "mapping file name"))
		return UINT64_MAX;
	const char *bid = attr_value(c->d, m->attribute_indices, m->n_attribute_indices,
	                             BUILD_ID_ATTR, buf, sizeof buf);
	uint64_t id =
	    ingest_pb_mapping(c->pb, m->memory_start, m->memory_limit, m->file_offset, file,
	                      strlen(file), bid, bid ? strlen(bid) : 0, c->map_has_fn[mi]);
	if (!id) {
		ingest_pb_err(c->pb, c->err, NULL);
		return UINT64_MAX;
	}
	c->map_id[mi] = (struct memo){id, c->gen};
	return id;
}

static uint64_t location_id(struct conv *c, int32_t li)
{
	if (li < 0 || (size_t)li >= c->d->n_location_table) {
		pd_err_set(c->err, PD_EINVAL,
		           "location index %" PRId32 " is out of the location_table (%zu)", li,
		           c->d->n_location_table);
		return 0;
	}
	if (c->loc_id[li].gen == c->gen && c->loc_id[li].id)
		return c->loc_id[li].id;
	const Location *l = c->d->location_table[li];
	uint64_t mid = mapping_id(c, l->mapping_index);
	if (mid == UINT64_MAX)
		return 0;
	struct ingest_pb_line few[16]; /* most locations have a line or a few */
	struct ingest_pb_line *lines =
	    l->n_lines <= 16 ? few : calloc(l->n_lines, sizeof *lines);
	if (!lines) {
		pd_err_set(c->err, PD_ENOMEM, "out of memory");
		return 0;
	}
	for (size_t i = 0; i < l->n_lines; i++) {
		lines[i].function_id = function_id(c, l->lines[i]->function_index);
		lines[i].line = l->lines[i]->line;
		if (!lines[i].function_id) {
			if (lines != few)
				free(lines);
			return 0;
		}
	}
	uint64_t id = ingest_pb_location(c->pb, mid, l->address, lines, l->n_lines);
	if (lines != few)
		free(lines);
	if (!id)
		ingest_pb_err(c->pb, c->err, NULL);
	c->loc_id[li] = (struct memo){id, c->gen};
	return id;
}

static void hex(char *out, const uint8_t *p, size_t n)
{
	static const char x[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = x[p[i] >> 4];
		out[2 * i + 1] = x[p[i] & 15];
	}
	out[2 * n] = 0;
}

/* The sample's attributes (service.name left out) and link as pprof labels. */
static int sample_labels(struct conv *c, const Sample *s, struct ingest_pb_label *out, size_t *n,
                         char (*hexbuf)[33], size_t max)
{
	const Dict *d = c->d;
	*n = 0;
	for (size_t i = 0; i < s->n_attribute_indices; i++) {
		int32_t ai = s->attribute_indices[i];
		if (ai < 0 || (size_t)ai >= d->n_attribute_table)
			return pd_err_set(c->err, PD_EINVAL,
			                  "attribute index %" PRId32
			                  " is out of the attribute_table (%zu)",
			                  ai, d->n_attribute_table);
		const Attr *a = d->attribute_table[ai];
		const char *key = "", *unit = "";
		if (str_at(c, a->key_strindex, &key, "attribute key") ||
		    str_at(c, a->unit_strindex, &unit, "attribute unit"))
			return c->err->code;
		if (strcmp(key, "service.name") == 0 || !a->value)
			continue;
		if (*n + 2 >= max)
			return pd_err_set(c->err, PD_ETOOBIG,
			                  "a sample has more than %zu attributes", max - 2);
		struct ingest_pb_label *l = &out[*n];
		*l = (struct ingest_pb_label){.key = key, .key_len = strlen(key)};
		const char *sv = NULL;
		if (a->value->value_case ==
		    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE) {
			l->num = a->value->int_value;
			l->num_unit = *unit ? unit : NULL;
		} else if ((sv = any_string(d, a->value, hexbuf[0], sizeof hexbuf[0])) && *sv) {
			if (sv == hexbuf[0])
				continue; /* an integer in an array: not kept */
			l->str = sv;
			l->str_len = strlen(sv);
		} else {
			continue;
		}
		(*n)++;
	}
	if (s->link_index != 0) {
		int32_t li = s->link_index;
		if (li < 0 || (size_t)li >= d->n_link_table)
			return pd_err_set(c->err, PD_EINVAL,
			                  "link index %" PRId32 " is out of the link_table (%zu)",
			                  li, d->n_link_table);
		const Opentelemetry__Proto__Profiles__V1development__Link *k = d->link_table[li];
		if (k->span_id.len == 8) {
			hex(hexbuf[1], k->span_id.data, 8);
			out[(*n)++] = (struct ingest_pb_label){
			    .key = "span_id", .key_len = 7, .str = hexbuf[1], .str_len = 16};
		}
		if (k->trace_id.len == 16) {
			hex(hexbuf[2], k->trace_id.data, 16);
			out[(*n)++] = (struct ingest_pb_label){
			    .key = "trace_id", .key_len = 8, .str = hexbuf[2], .str_len = 32};
		}
	}
	return 0;
}

/* Converts p into a pprof: *raw, *decoded and the name Pyroscope would give it
 * (NULL: by its sample types). */
/* What a profile's header says: its sample type, its period type, and whether
 * its sample counts become CPU nanoseconds (the eBPF profiler's samples:count with a
 * cpu:nanoseconds period, unless a cpu:nanoseconds profile of the same group has
 * them already, as a Go CPU profile sent as OTLP has). */
struct head {
	const char *type, *unit, *ptype, *punit;
	int to_nanos;
};

static int head_of(struct conv *c, const Profile *p, struct head *h)
{
	int rc;
	*h = (struct head){"", "", "", "", 0};
	if (!p->sample_type)
		return pd_err_set(c->err, PD_EINVAL, "the profile has no sample_type");
	if ((rc = str_at(c, p->sample_type->type_strindex, &h->type, "sample type")) ||
	    (rc = str_at(c, p->sample_type->unit_strindex, &h->unit, "sample unit")))
		return rc;
	if (p->period_type &&
	    ((rc = str_at(c, p->period_type->type_strindex, &h->ptype, "period type")) ||
	     (rc = str_at(c, p->period_type->unit_strindex, &h->punit, "period unit"))))
		return rc;
	if (p->time_unix_nano > INT64_MAX || p->duration_nano > INT64_MAX)
		return pd_err_set(c->err, PD_EINVAL,
		                  "time_unix_nano %" PRIu64 " or duration_nano %" PRIu64
		                  " is past 2262",
		                  p->time_unix_nano, p->duration_nano);
	h->to_nanos = strcmp(h->type, "samples") == 0 && strcmp(h->unit, "count") == 0 &&
	              p->period != 0 && strcmp(h->ptype, "cpu") == 0 &&
	              strcmp(h->punit, "nanoseconds") == 0;
	return 0;
}

/* The sample type a profile is stored under. */
static void stored_type(const struct head *h, const char **type, const char **unit)
{
	*type = h->to_nanos ? "cpu" : h->type;
	*unit = h->to_nanos ? "nanoseconds" : h->unit;
}

/* Pyroscope's name for what a profile measures, for a series whose sample types
 * do not say. */
static const char *metric_of(const struct head *h, const Profile *p)
{
	if (h->to_nanos)
		return "process_cpu";
	if (strcmp(h->type, "off_cpu") == 0 && strcmp(h->unit, "nanoseconds") == 0 && !*h->ptype)
		return "off_cpu";
	if (*h->ptype && p->period != 0)
		return h->ptype;
	return NULL;
}

/* Sample i's value in profile p (a count of timestamps where it has no value). */
static int sample_value(struct conv *c, const Profile *p, const struct head *h, size_t i,
                        int64_t *v)
{
	const Sample *s = p->samples[i];
	if (s->n_values == 0 && s->n_timestamps_unix_nano > 0)
		*v = (int64_t)s->n_timestamps_unix_nano;
	else if (s->n_values == 1)
		*v = s->values[0];
	else
		return pd_err_set(c->err, PD_EINVAL,
		                  "samples[%zu] has %zu values where the profile has one "
		                  "sample type",
		                  i, s->n_values);
	if (h->to_nanos && __builtin_mul_overflow(*v, p->period, v))
		return pd_err_set(c->err, PD_EINVAL,
		                  "samples[%zu]: %" PRId64 " samples of %" PRId64 " ns overflow", i,
		                  s->values[0], p->period);
	return 0;
}

/* Whether attributes a and b of the dictionary say the same (an exporter may
 * write one attribute twice). */
static int attr_equal(const Dict *d, int32_t a, int32_t b)
{
	if (a == b)
		return 1;
	if (a < 0 || b < 0 || (size_t)a >= d->n_attribute_table ||
	    (size_t)b >= d->n_attribute_table)
		return 0;
	const Attr *x = d->attribute_table[a], *y = d->attribute_table[b];
	if (x->key_strindex != y->key_strindex || x->unit_strindex != y->unit_strindex)
		return 0;
	const AnyValue *u = x->value, *v = y->value;
	if (!u || !v)
		return u == v;
	if (u->value_case != v->value_case)
		return 0;
	switch (u->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
		return u->string_value_strindex == v->string_value_strindex;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		return strcmp(u->string_value, v->string_value) == 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		return u->int_value == v->int_value;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		return u->bool_value == v->bool_value;
	default:
		return 0; /* not worth comparing: the samples are merged by their labels */
	}
}

/* Whether the m profiles ps have the same samples in the same order (the same
 * stacks, attributes and links), as an exporter that splits one pprof profile by
 * sample type writes them: then sample i of each is one sample. */
static int zippable(const Dict *d, const Profile *const *ps, size_t m)
{
	for (size_t j = 1; j < m; j++) {
		if (ps[j]->n_samples != ps[0]->n_samples)
			return 0;
		for (size_t i = 0; i < ps[0]->n_samples; i++) {
			const Sample *a = ps[0]->samples[i], *b = ps[j]->samples[i];
			if (a->stack_index != b->stack_index || a->link_index != b->link_index ||
			    a->n_attribute_indices != b->n_attribute_indices)
				return 0;
			for (size_t k = 0; k < a->n_attribute_indices; k++)
				if (!attr_equal(d, a->attribute_indices[k], b->attribute_indices[k]))
					return 0;
		}
	}
	return 1;
}

/* Adds the samples of the m profiles ps to c->pb, a value column each. When they
 * are zippable, sample i of every member is one sample (member 0's stack and
 * labels); otherwise each member's samples are added in turn, the other columns 0,
 * and merged with any sample of the same stack and labels (merged only when m > 1,
 * so that a lone profile keeps its samples as they are). *bad is the member that
 * failed. */
static int add_samples(struct conv *c, const Profile *const *ps, const struct head *hs,
                       size_t m, const struct pd_ingest_limits *lim, size_t *bad, int *limit)
{
	struct ingest_pb_label *labels = NULL;
	uint64_t *locs = NULL;
	int64_t *vals = NULL;
	char hexbuf[3][33];
	int rc = 0;
	int zip = zippable(c->d, ps, m);
	size_t max_labels =
	    lim->max_sample_labels ? lim->max_sample_labels : PD_PPROF_STORE_MAX_SAMPLE_LABELS;
	size_t cap_locs = 0;
	labels = calloc(max_labels + 2, sizeof *labels);
	vals = calloc(m, sizeof *vals);
	if (!labels || !vals) {
		rc = pd_err_set(c->err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t j = 0; j < (zip ? 1 : m); j++) {
		const Profile *p = ps[j];
		*bad = j;
		for (size_t i = 0; i < p->n_samples; i++) {
			const Sample *s = p->samples[i];
			if (zip) {
				for (size_t k = 0; k < m; k++) {
					*bad = k;
					if ((rc = sample_value(c, ps[k], &hs[k], i, &vals[k])))
						goto out;
				}
				*bad = 0;
			} else if ((rc = sample_value(c, p, &hs[j], i, &vals[j]))) {
				goto out;
			}
			if (s->stack_index < 0 || (size_t)s->stack_index >= c->d->n_stack_table) {
				rc = pd_err_set(c->err, PD_EINVAL,
				                "samples[%zu]: stack index %" PRId32
				                " is out of the stack_table (%zu)",
				                i, s->stack_index, c->d->n_stack_table);
				goto out;
			}
			const Opentelemetry__Proto__Profiles__V1development__Stack *st =
			    c->d->stack_table[s->stack_index];
			size_t depth = st->n_location_indices;
			if (depth > lim->max_stack_depth) {
				*limit = PD_INGEST_LIMIT_STACK_DEPTH;
				rc = pd_err_set(c->err, PD_ETOOBIG,
				                "samples[%zu] has %zu frames, more than %zu (%s)", i,
				                depth, lim->max_stack_depth,
				                pd_ingest_limit_flag(*limit));
				goto out;
			}
			if (depth > cap_locs) {
				free(locs);
				cap_locs = depth;
				if (!(locs = calloc(cap_locs, sizeof *locs))) {
					rc = pd_err_set(c->err, PD_ENOMEM, "out of memory");
					goto out;
				}
			}
			for (size_t k = 0; k < depth; k++)
				if (!(locs[k] = location_id(c, st->location_indices[k]))) {
					rc = c->err->code ? c->err->code : PD_EINVAL;
					pd_err_prefix(c->err, "samples[%zu]", i);
					goto out;
				}
			size_t nl;
			if ((rc = sample_labels(c, s, labels, &nl, hexbuf, max_labels + 2))) {
				pd_err_prefix(c->err, "samples[%zu]", i);
				goto out;
			}
			if ((rc = ingest_pb_sample(c->pb, locs, depth, vals, m, labels, nl,
			                           !zip && m > 1))) {
				ingest_pb_err(c->pb, c->err, limit);
				goto out;
			}
		}
		vals[j] = 0;
	}
out:
	free(labels);
	free(locs);
	free(vals);
	return rc;
}

/* Converts the n profiles ps (of one resource and scope, with the same time,
 * duration and period, each of another sample type: group_profiles made them so)
 * into one pprof profile with a sample type per profile, whose samples of the
 * same stack and labels are one sample. *bad is the member that failed. */
static int convert(struct conv *c, const Profile *const *ps, const struct head *hs, size_t n,
                   const struct pd_ingest_limits *lim, int64_t now_ms, uint8_t **raw,
                   size_t *rlen, struct pd_pprof_profile **decoded, const char **metric,
                   size_t *bad, int *limit)
{
	const Profile *p = ps[0];
	int rc = 0;
	*metric = NULL;
	*bad = 0;
	if (!(c->pb = ingest_pb_create(lim)))
		return pd_err_set(c->err, PD_ENOMEM, "out of memory");
	for (size_t j = 0; j < n; j++) {
		const char *type, *unit;
		stored_type(&hs[j], &type, &unit);
		ingest_pb_sample_type(c->pb, type, unit);
		if (!*metric)
			*metric = metric_of(&hs[j], ps[j]);
	}
	if (p->period_type)
		ingest_pb_period(c->pb, hs[0].ptype, hs[0].punit, p->period);
	int64_t tn = p->time_unix_nano ? (int64_t)p->time_unix_nano : now_ms * 1000000;
	int64_t dn = p->duration_nano ? (int64_t)p->duration_nano : 10 * (int64_t)1000000000;
	ingest_pb_time(c->pb, tn, dn);
	rc = add_samples(c, ps, hs, n, lim, bad, limit);
	if (!rc && !(rc = ingest_pb_err(c->pb, c->err, limit)))
		rc = ingest_pb_finish(c->pb, raw, rlen, decoded, c->err);
	ingest_pb_destroy(c->pb);
	c->pb = NULL;
	return rc;
}

/* Whether profiles j and k have the same time, duration, period type and period. */
static int same_frame(const Profile *const *ps, const struct head *hs, size_t j, size_t k)
{
	return ps[j]->time_unix_nano == ps[k]->time_unix_nano &&
	       ps[j]->duration_nano == ps[k]->duration_nano && ps[j]->period == ps[k]->period &&
	       strcmp(hs[j].ptype, hs[k].ptype) == 0 && strcmp(hs[j].punit, hs[k].punit) == 0;
}

/* Groups the profiles of one scope that are one pprof profile split by sample type
 * (as an OTLP exporter sends a Go heap profile: four profiles of one time and
 * period), so that each group is stored as one profile and not as duplicates of one
 * series and time. Profiles join the first group with the same time, duration,
 * period type and period that lacks their sample type. grp[k] is profile k's group
 * (SIZE_MAX: left out, empty or with a bad header in hs[k]'s error, herr[k]). */
static size_t group_profiles(struct conv *c, const Profile *const *ps, size_t n,
                             struct head *hs, int *hrc, struct pd_err *herr, size_t *grp)
{
	size_t ngroups = 0;
	for (size_t k = 0; k < n; k++) {
		grp[k] = SIZE_MAX;
		struct pd_err *saved = c->err;
		c->err = &herr[k];
		hrc[k] = head_of(c, ps[k], &hs[k]);
		c->err = saved;
		if (!ps[k]->n_samples)
			continue;
		if (hrc[k])
			grp[k] = ngroups++;
	}
	/* samples:count beside a cpu:nanoseconds profile of the same time stays a count */
	for (size_t k = 0; k < n; k++) {
		if (!hs[k].to_nanos || hrc[k])
			continue;
		for (size_t j = 0; j < n && hs[k].to_nanos; j++)
			if (j != k && !hrc[j] && ps[j]->n_samples && same_frame(ps, hs, j, k) &&
			    strcmp(hs[j].type, "cpu") == 0 && strcmp(hs[j].unit, "nanoseconds") == 0)
				hs[k].to_nanos = 0;
	}
	for (size_t k = 0; k < n; k++) {
		if (!ps[k]->n_samples || hrc[k])
			continue;
		const char *type, *unit;
		stored_type(&hs[k], &type, &unit);
		for (size_t j = 0; j < k && grp[k] == SIZE_MAX; j++) {
			if (grp[j] == SIZE_MAX || hrc[j] || !same_frame(ps, hs, j, k))
				continue;
			int taken = 0;
			for (size_t i = 0; i < k && !taken; i++) {
				const char *t2, *u2;
				if (grp[i] != grp[j] || hrc[i])
					continue;
				stored_type(&hs[i], &t2, &u2);
				taken = strcmp(t2, type) == 0 && strcmp(u2, unit) == 0;
			}
			if (!taken)
				grp[k] = grp[j];
		}
		if (grp[k] == SIZE_MAX)
			grp[k] = ngroups++;
	}
	return ngroups;
}

/* A label name made legal: bytes outside [a-zA-Z0-9_.] become '_' (ingest_series
 * turns dots into underscores), and a leading digit gets a '_' before it. */
static char *sanitize(const char *s)
{
	size_t n = strlen(s);
	char *o = malloc(n + 2), *q = o;
	if (!o)
		return NULL;
	if (*s >= '0' && *s <= '9')
		*q++ = '_';
	for (; *s; s++) {
		char ch = *s;
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		         (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
		*q++ = ok ? ch : '_';
	}
	*q = 0;
	return o;
}

/* The series labels one resource and scope give (first one of a name wins). */
struct rlabels {
	struct ingest_label *v;
	char **names;
	char (*vals)[32];
	size_t n, cap;
	char service[512];
};

static void rlabels_fini(struct rlabels *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->names[i]);
	free(r->names);
	free(r->v);
	free(r->vals);
	memset(r, 0, sizeof *r);
}

static int rlabels_add(struct rlabels *r, KeyValue *const *kv, size_t n, int *limit,
                       const struct pd_ingest_limits *lim, struct pd_err *err)
{
	for (size_t i = 0; i < n; i++) {
		if (!kv[i]->key || !*kv[i]->key || strcmp(kv[i]->key, "service.name") == 0)
			continue;
		if (r->n == r->cap) {
			*limit = PD_INGEST_LIMIT_LABELS;
			return pd_err_set(
			    err, PD_ETOOBIG,
			    "the resource has more than %zu attributes to be labels (%s)",
			    lim->max_labels, pd_ingest_limit_flag(*limit));
		}
		const char *v = any_string(NULL, kv[i]->value, r->vals[r->n], sizeof r->vals[r->n]);
		if (!v || !*v)
			continue;
		char *name = sanitize(kv[i]->key);
		if (!name)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		int dup = 0;
		for (size_t k = 0; k < r->n && !dup; k++)
			dup = strcmp(r->names[k], name) == 0;
		if (dup) {
			free(name);
			continue;
		}
		r->names[r->n] = name;
		r->v[r->n] = (struct ingest_label){name, strlen(name), v, strlen(v)};
		r->n++;
	}
	return 0;
}

/* service.name, else unknown_service[:process.executable.name], as Pyroscope. */
static void service_of(struct rlabels *r, KeyValue *const *kv, size_t n)
{
	char buf[32], svc[sizeof r->service] = "", exe[sizeof r->service] = "";
	for (size_t i = 0; i < n; i++) {
		const char *v = any_string(NULL, kv[i]->value, buf, sizeof buf);
		if (!kv[i]->key || !v || !*v)
			continue;
		if (!*svc && strcmp(kv[i]->key, "service.name") == 0)
			snprintf(svc, sizeof svc, "%s", v);
		if (!*exe && strcmp(kv[i]->key, "process.executable.name") == 0)
			snprintf(exe, sizeof exe, "%s", v);
	}
	if (*svc)
		snprintf(r->service, sizeof r->service, "%s", svc);
	else if (*exe)
		snprintf(r->service, sizeof r->service, "unknown_service:%.400s", exe);
	else
		snprintf(r->service, sizeof r->service, "unknown_service");
}

static void reject(struct pd_ingest_batch *b, size_t n, const char *where, const char *why)
{
	if (!b->rejected)
		snprintf(b->rejected_msg, sizeof b->rejected_msg, "%.100s: %.150s", where, why);
	b->rejected += n;
}

/* Per mapping of the dictionary: 1 when every location of it has lines that all
 * name a function. */
static uint8_t *mapping_functions(const Dict *d)
{
	uint8_t *has = malloc(d->n_mapping_table ? d->n_mapping_table : 1);
	if (!has)
		return NULL;
	memset(has, 1, d->n_mapping_table ? d->n_mapping_table : 1);
	for (size_t i = 0; i < d->n_location_table; i++) {
		const Location *l = d->location_table[i];
		int32_t mi = l->mapping_index;
		if (mi <= 0 || (size_t)mi >= d->n_mapping_table)
			continue;
		int ok = l->n_lines > 0;
		for (size_t k = 0; k < l->n_lines && ok; k++)
			ok = l->lines[k]->function_index > 0;
		if (!ok)
			has[mi] = 0;
	}
	return has;
}

/* Converts the profiles of one scope (series labels rl) into b, a profile per
 * group of group_profiles; a group that cannot be converted is counted rejected.
 * Only running out of memory fails the request. */
static int convert_scope(struct conv *c,
                         const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp,
                         const char *where, const struct rlabels *rl,
                         const struct pd_ingest_limits *lim, int64_t now_ms,
                         struct pd_ingest_batch *b, struct pd_err *err)
{
	size_t n = sp->n_profiles;
	const Profile *const *ps = (const Profile *const *)sp->profiles;
	struct head *hs = calloc(n ? n : 1, sizeof *hs);
	struct head *ghs = calloc(n ? n : 1, sizeof *ghs);
	const Profile **gps = calloc(n ? n : 1, sizeof *gps);
	int *hrc = calloc(n ? n : 1, sizeof *hrc);
	struct pd_err *herr = calloc(n ? n : 1, sizeof *herr);
	size_t *grp = calloc(n ? n : 1, sizeof *grp), *gidx = calloc(n ? n : 1, sizeof *gidx);
	int rc = 0;
	if (!hs || !ghs || !gps || !hrc || !herr || !grp || !gidx) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	size_t ngroups = group_profiles(c, ps, n, hs, hrc, herr, grp);
	for (size_t g = 0; g < ngroups && !rc; g++) {
		size_t m = 0;
		for (size_t k = 0; k < n; k++)
			if (grp[k] == g) {
				gidx[m] = k;
				gps[m] = ps[k];
				ghs[m++] = hs[k];
			}
		char pwhere[128];
		snprintf(pwhere, sizeof pwhere, "%s.profiles[%zu]", where, gidx[0]);
		if (hrc[gidx[0]]) {
			reject(b, 1, pwhere, herr[gidx[0]].msg);
			continue;
		}
		uint8_t *raw = NULL;
		size_t rlen = 0, bad = 0;
		struct pd_pprof_profile *dec = NULL;
		struct pd_labels *labels = NULL;
		const char *metric;
		char nbuf[128];
		struct pd_err perr = {0};
		int phit = 0;
		c->gen++; /* every memo of the group before is stale */
		c->err = &perr;
		int prc = convert(c, gps, ghs, m, lim, now_ms, &raw, &rlen, &dec, &metric, &bad,
		                  &phit);
		if (prc && m > 1)
			snprintf(pwhere, sizeof pwhere, "%s.profiles[%zu]", where, gidx[bad]);
		if (!prc) {
			/* what the sample types say, else Pyroscope's name */
			const char *name = ingest_profile_name(dec, NULL, nbuf, sizeof nbuf);
			if (!name)
				name = ingest_profile_name(dec, metric ? metric : "process_cpu", nbuf,
				                           sizeof nbuf);
			prc = ingest_series(rl->v, rl->n, name, rl->service, lim, &labels, &phit,
			                    &perr);
		}
		if (prc == PD_ENOMEM) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		} else if (prc) {
			reject(b, m, pwhere, perr.msg);
		} else {
			int64_t t_ms = pd_pprof_time_nanos(dec) / 1000000;
			rc = pd_ingest_batch_add(b, lim, labels, raw, rlen, dec, t_ms, err);
			raw = NULL;
			dec = NULL;
		}
		free(raw);
		pd_pprof_destroy(dec);
	}
out:
	free(hs);
	free(ghs);
	free(gps);
	free(hrc);
	free(herr);
	free(grp);
	free(gidx);
	return rc;
}

static size_t count_profiles(const Request *q, size_t r)
{
	size_t n = 0;
	for (size_t s = 0; s < q->resource_profiles[r]->n_scope_profiles; s++)
		n += q->resource_profiles[r]->scope_profiles[s]->n_profiles;
	return n;
}

int pd_ingest_otlp(const uint8_t *body, size_t len, int json, const struct pd_ingest_limits *lim_in,
                   int64_t now_ms, struct pd_ingest_batch *b, struct pd_err *err)
{
	struct pd_ingest_limits lim = pd_ingest_limits_resolve(lim_in);
	ProtobufCMessage *m = NULL;
	struct pd_arena *ma = NULL; /* m's memory, when unpacked from protobuf */
	struct conv c = {.err = err};
	struct rlabels rl = {0};
	int rc;
	b->format = json ? "otlp_json" : "otlp";
	if (json)
		rc = ingest_pbjson_parse(
		    &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
		    body, len, &lim, &m, &b->limit_hit, err);
	else
		rc = ingest_pb_unpack(
		    &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
		    body, len, lim.max_request_memory, &m, &ma, err);
	if (rc == PD_ETOOBIG && !b->limit_hit)
		b->limit_hit = json ? PD_INGEST_LIMIT_JSON_SIZE : PD_INGEST_LIMIT_REQUEST_MEMORY;
	if (rc) {
		pd_err_prefix(err, "ExportProfilesServiceRequest");
		return rc;
	}
	const Request *q = (const Request *)m;
	size_t total = 0;
	for (size_t r = 0; r < q->n_resource_profiles; r++)
		total += count_profiles(q, r);
	if (total && !q->dictionary) {
		rc = pd_err_set(err, PD_EINVAL,
		                "ExportProfilesServiceRequest: the request has profiles but no "
		                "dictionary");
		goto out;
	}
	if (total > lim.max_profiles) {
		b->limit_hit = PD_INGEST_LIMIT_PROFILES;
		rc = pd_err_set(err, PD_ETOOBIG, "the request has %zu profiles, more than %zu (%s)",
		                total, lim.max_profiles, pd_ingest_limit_flag(b->limit_hit));
		goto out;
	}
	if (!total)
		goto out;
	c.d = q->dictionary;
	uint8_t *has_fn = mapping_functions(c.d);
	c.map_has_fn = has_fn;
	c.loc_id = calloc(c.d->n_location_table + 1, sizeof *c.loc_id);
	c.fn_id = calloc(c.d->n_function_table + 1, sizeof *c.fn_id);
	c.map_id = calloc(c.d->n_mapping_table + 1, sizeof *c.map_id);
	c.sym_id = calloc(c.d->n_string_table + 1, sizeof *c.sym_id);
	rl.cap = lim.max_labels;
	rl.v = calloc(rl.cap + 1, sizeof *rl.v);
	rl.names = calloc(rl.cap + 1, sizeof *rl.names);
	rl.vals = calloc(rl.cap + 1, sizeof *rl.vals);
	if (!has_fn || !c.loc_id || !c.fn_id || !c.map_id || !c.sym_id || !rl.v || !rl.names ||
	    !rl.vals) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t r = 0; r < q->n_resource_profiles && !rc; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
		    q->resource_profiles[r];
		KeyValue *const *rkv = rp->resource ? rp->resource->attributes : NULL;
		size_t nrkv = rp->resource ? rp->resource->n_attributes : 0;
		char where[96];
		for (size_t i = 0; i < rl.n; i++)
			free(rl.names[i]);
		rl.n = 0;
		service_of(&rl, rkv, nrkv);
		int lhit = 0;
		struct pd_err lerr = {0};
		if (rlabels_add(&rl, rkv, nrkv, &lhit, &lim, &lerr)) {
			snprintf(where, sizeof where, "resourceProfiles[%zu]", r);
			reject(b, count_profiles(q, r), where, lerr.msg);
			continue;
		}
		size_t nres = rl.n;
		for (size_t s = 0; s < rp->n_scope_profiles && !rc; s++) {
			const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
			    rp->scope_profiles[s];
			for (size_t i = nres; i < rl.n; i++)
				free(rl.names[i]);
			rl.n = nres;
			snprintf(where, sizeof where, "resourceProfiles[%zu].scopeProfiles[%zu]", r,
			         s);
			if (sp->scope && rlabels_add(&rl, sp->scope->attributes,
			                             sp->scope->n_attributes, &lhit, &lim, &lerr)) {
				reject(b, sp->n_profiles, where, lerr.msg);
				continue;
			}
			rc = convert_scope(&c, sp, where, &rl, &lim, now_ms, b, err);
		}
	}
done:
	free(has_fn);
	free(c.loc_id);
	free(c.fn_id);
	free(c.map_id);
	free(c.sym_id);
	rlabels_fini(&rl);
out:
	if (ma)
		pd_arena_destroy(ma);
	else
		protobuf_c_message_free_unpacked(m, NULL);
	if (rc) {
		int hit = b->limit_hit;
		pd_ingest_batch_fini(b);
		b->limit_hit = hit;
		b->format = json ? "otlp_json" : "otlp";
	}
	return rc;
}

/* ---- the response ------------------------------------------------------------ */

int pd_ingest_otlp_response(const struct pd_ingest_batch *b, int json, uint8_t **out,
                            size_t *out_len, struct pd_err *err)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse r =
	    OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess ps =
	    OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
	*out = NULL;
	*out_len = 0;
	/* a proto3 string must be UTF-8, and the reason may quote what the client
	 * sent cut anywhere: bytes outside printable ASCII become '?' */
	char msg[sizeof b->rejected_msg];
	size_t ml = strnlen(b->rejected_msg, sizeof msg - 1);
	for (size_t i = 0; i < ml; i++) {
		unsigned char c = (unsigned char)b->rejected_msg[i];
		msg[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	msg[ml] = 0;
	if (b->rejected) {
		ps.rejected_profiles = (int64_t)b->rejected;
		ps.error_message = msg;
		r.partial_success = &ps;
	}
	if (!json) {
		size_t n =
		    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__get_packed_size(
		        &r);
		*out = malloc(n ? n : 1);
		if (!*out)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		*out_len =
		    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__pack(
		        &r, *out);
		return 0;
	}
	/* {"partialSuccess":{"rejectedProfiles":"N","errorMessage":"..."}}, the
	 * message escaped; 6 bytes per byte at most */
	size_t cap = 96 + 6 * sizeof b->rejected_msg;
	char *s = malloc(cap);
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	size_t n = 0;
	if (!b->rejected) {
		n = (size_t)snprintf(s, cap, "{}");
	} else {
		n = (size_t)snprintf(s, cap,
		                     "{\"partialSuccess\":{\"rejectedProfiles\":\"%zu\","
		                     "\"errorMessage\":\"",
		                     b->rejected);
		for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
			if (*p == '"' || *p == '\\')
				n += (size_t)snprintf(s + n, cap - n, "\\%c", *p);
			else if (*p < 0x20)
				n += (size_t)snprintf(s + n, cap - n, "\\u%04x", *p);
			else
				s[n++] = (char)*p;
		}
		n += (size_t)snprintf(s + n, cap - n, "\"}}");
	}
	*out = (uint8_t *)s;
	*out_len = n;
	return 0;
}
