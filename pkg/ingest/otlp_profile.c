/* otlp_profile.c: OTLP profiles into one pprof profile, as Pyroscope's OTLP
 * ingest converts them: each profile's header (its sample type, period and time),
 * and the samples of a group of profiles of one time and period added to the
 * profile builder, a value column per profile, with their stacks and labels; the
 * dictionary's strings, functions, mappings, locations, attributes and links
 * become the builder's once per profile, each index checked against its table. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp_int.h"


#define BUILD_ID_ATTR "process.executable.build_id.gnu"

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
const char *otlp_any_string(const Dict *d, const AnyValue *v, char *buf, size_t size)
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
			return otlp_any_string(d, v->array_value->values[0], buf, size);
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
			return otlp_any_string(d, a->value, buf, size);
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
		} else if ((sv = otlp_any_string(d, a->value, hexbuf[0], sizeof hexbuf[0])) &&
		           *sv) {
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

int otlp_head_of(struct conv *c, const Profile *p, struct head *h)
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
void otlp_stored_type(const struct head *h, const char **type, const char **unit)
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
	/* room for the most attributes a sample has (not the limit's 1024: a block
	 * that large cleared per profile costs more than the samples of a small one) */
	size_t most = 0;
	for (size_t j = 0; j < m; j++)
		for (size_t i = 0; i < ps[j]->n_samples; i++)
			if (ps[j]->samples[i]->n_attribute_indices > most)
				most = ps[j]->samples[i]->n_attribute_indices;
	labels = malloc(((most < max_labels ? most : max_labels) + 2) * sizeof *labels);
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
int otlp_convert(struct conv *c, const Profile *const *ps, const struct head *hs, size_t n,
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
		otlp_stored_type(&hs[j], &type, &unit);
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
