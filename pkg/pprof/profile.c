/* profile.c: what a decoded profile holds (sample types, counts, header fields),
 * pprof's sample-type selection rules, and encoding back to bytes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

size_t pd_pprof_sample_type_count(const struct pd_pprof_profile *p) { return p->pb->n_sample_type; }

const char *pd_pprof_sample_type(const struct pd_pprof_profile *p, size_t i)
{
	return i < p->pb->n_sample_type ? pd_pprof_str(p, p->pb->sample_type[i]->type) : "";
}

const char *pd_pprof_sample_unit(const struct pd_pprof_profile *p, size_t i)
{
	return i < p->pb->n_sample_type ? pd_pprof_str(p, p->pb->sample_type[i]->unit) : "";
}

const char *pd_pprof_sample_type_n(const struct pd_pprof_profile *p, size_t i, size_t *len)
{
	int64_t k = i < p->pb->n_sample_type ? p->pb->sample_type[i]->type : 0;
	*len = pd_pprof_str_len(p, k);
	return pd_pprof_str(p, k);
}

const char *pd_pprof_sample_unit_n(const struct pd_pprof_profile *p, size_t i, size_t *len)
{
	int64_t k = i < p->pb->n_sample_type ? p->pb->sample_type[i]->unit : 0;
	*len = pd_pprof_str_len(p, k);
	return pd_pprof_str(p, k);
}

size_t pd_pprof_sample_count(const struct pd_pprof_profile *p) { return p->pb->n_sample; }
size_t pd_pprof_location_count(const struct pd_pprof_profile *p) { return p->pb->n_location; }
size_t pd_pprof_function_count(const struct pd_pprof_profile *p) { return p->pb->n_function; }
size_t pd_pprof_mapping_count(const struct pd_pprof_profile *p) { return p->pb->n_mapping; }
int64_t pd_pprof_time_nanos(const struct pd_pprof_profile *p) { return p->pb->time_nanos; }
int64_t pd_pprof_duration_nanos(const struct pd_pprof_profile *p) { return p->pb->duration_nanos; }
int64_t pd_pprof_period(const struct pd_pprof_profile *p) { return p->pb->period; }

const char *pd_pprof_period_type(const struct pd_pprof_profile *p)
{
	return p->pb->period_type ? pd_pprof_str(p, p->pb->period_type->type) : "";
}

const char *pd_pprof_period_unit(const struct pd_pprof_profile *p)
{
	return p->pb->period_type ? pd_pprof_str(p, p->pb->period_type->unit) : "";
}

const char *pd_pprof_main_binary(const struct pd_pprof_profile *p)
{
	return p->pb->n_mapping ? pd_pprof_str(p, p->pb->mapping[0]->filename) : "";
}

int pd_pprof_default_sample_index(const struct pd_pprof_profile *p)
{
	const pb_profile *pb = p->pb;
	if (pb->n_sample_type == 0)
		return -1;
	if (pb->default_sample_type) {
		for (size_t i = 0; i < pb->n_sample_type; i++)
			if (pd_pprof_str_eq(p, pb->sample_type[i]->type, p, pb->default_sample_type))
				return (int)i;
	}
	return (int)pb->n_sample_type - 1;
}

int pd_pprof_sample_index(const struct pd_pprof_profile *p, const char *spec, int *index,
			  struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	if (pb->n_sample_type == 0)
		return pd_err_set(err, PD_EINVAL, "profile has no sample types");
	if (!spec || !*spec) {
		*index = pd_pprof_default_sample_index(p);
		return 0;
	}
	char *end;
	errno = 0;
	long v = strtol(spec, &end, 10);
	if (*end == '\0' && errno == 0) {
		if (v < 0 || (size_t)v >= pb->n_sample_type)
			return pd_err_set(err, PD_EINVAL, "sample_index %s is outside the range [0..%zu]",
					  spec, pb->n_sample_type - 1);
		*index = (int)v;
		return 0;
	}
	const char *no_inuse = strncmp(spec, "inuse_", 6) == 0 ? spec + 6 : spec;
	for (size_t i = 0; i < pb->n_sample_type; i++) {
		int64_t t = pb->sample_type[i]->type;
		if (pd_pprof_str_is(p, t, spec) || pd_pprof_str_is(p, t, no_inuse)) {
			*index = (int)i;
			return 0;
		}
	}
	char types[256] = "";
	size_t off = 0;
	for (size_t i = 0; i < pb->n_sample_type && off < sizeof(types); i++) {
		int n = snprintf(types + off, sizeof(types) - off, "%s%s", i ? " " : "",
				 pd_pprof_str(p, pb->sample_type[i]->type));
		if (n > 0)
			off += (size_t)n;
	}
	return pd_err_set(err, PD_EINVAL, "sample_index \"%s\" must be one of: [%s]", spec, types);
}

int pd_pprof_is_diff_base(const struct pd_pprof_profile *p, const pb_sample *s)
{
	for (size_t i = 0; i < s->n_label; i++) {
		const pb_label *l = s->label[i];
		if (l->str && pd_pprof_str_is(p, l->key, "pprof::base"))
			return pd_pprof_str_is(p, l->str, "true");
	}
	return 0;
}

void pd_pprof_diff_sums(const struct pd_pprof_profile *p, int idx, int64_t *base, int64_t *cur)
{
	const pb_profile *pb = p->pb;
	uint64_t b = 0, c = 0; /* wrapping as Go's int64 sums wrap */
	if (idx >= 0 && (size_t)idx < pb->n_sample_type)
		for (size_t i = 0; i < pb->n_sample; i++) {
			const pb_sample *s = pb->sample[i];
			if ((size_t)idx >= s->n_value)
				continue;
			if (pd_pprof_is_diff_base(p, s))
				b += (uint64_t)s->value[idx];
			else
				c += (uint64_t)s->value[idx];
		}
	*base = (int64_t)b;
	*cur = (int64_t)c;
}

int64_t pd_pprof_total(const struct pd_pprof_profile *p, int idx)
{
	const pb_profile *pb = p->pb;
	int64_t total = 0, diff_total = 0;
	if (idx < 0 || (size_t)idx >= pb->n_sample_type)
		return 0;
	for (size_t i = 0; i < pb->n_sample; i++) {
		int64_t v = (int64_t)pd_uabs64(pb->sample[i]->value[idx]);
		total = pd_add64(total, v);
		if (pd_pprof_is_diff_base(p, pb->sample[i]))
			diff_total = pd_add64(diff_total, v);
	}
	return diff_total > 0 ? diff_total : total;
}

int64_t pd_pprof_sum(const struct pd_pprof_profile *p, int idx)
{
	const pb_profile *pb = p->pb;
	int64_t sum = 0;
	if (idx < 0 || (size_t)idx >= pb->n_sample_type)
		return 0;
	for (size_t i = 0; i < pb->n_sample; i++)
		if ((size_t)idx < pb->sample[i]->n_value)
			sum = pd_add64(sum, pb->sample[i]->value[idx]);
	return sum;
}

static size_t uvar_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *put_uvar(uint8_t *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

int pd_pprof_pack(const pb_profile *pb, const size_t *str_len, uint8_t **out, size_t *out_len,
		  struct pd_err *err)
{
	/* protobuf-c writes fields in number order and unknown fields last, and takes
	 * a string's length from strlen: the fields before string_table (1-5) and
	 * those after it (7-15, unknown ones) are packed by it, the strings here */
	pb_profile head = *pb, tail = *pb;
	head.base.n_unknown_fields = 0;
	head.base.unknown_fields = NULL;
	head.n_string_table = 0;
	head.drop_frames = head.keep_frames = head.time_nanos = head.duration_nanos = 0;
	head.period_type = NULL;
	head.period = 0;
	head.n_comment = 0;
	head.default_sample_type = head.doc_url = 0;
	tail.n_sample_type = tail.n_sample = tail.n_mapping = tail.n_location = 0;
	tail.n_function = tail.n_string_table = 0;

	size_t nh = perftools__profiles__profile__get_packed_size(&head);
	size_t nt = perftools__profiles__profile__get_packed_size(&tail);
	size_t ns = 0;
	for (size_t i = 0; i < pb->n_string_table; i++)
		ns += 1 + uvar_len(str_len[i]) + str_len[i];
	size_t n = nh + ns + nt;
	uint8_t *raw = malloc(n ? n : 1);
	if (!raw)
		return pd_err_set(err, PD_ENOMEM, "out of memory encoding a profile of %zu bytes", n);
	uint8_t *o = raw + perftools__profiles__profile__pack(&head, raw);
	for (size_t i = 0; i < pb->n_string_table; i++) {
		*o++ = 6 << 3 | 2; /* field 6, length-delimited */
		o = put_uvar(o, str_len[i]);
		if (str_len[i])
			memcpy(o, pb->string_table[i], str_len[i]);
		o += str_len[i];
	}
	perftools__profiles__profile__pack(&tail, o);
	*out = raw;
	*out_len = n;
	return 0;
}

int pd_pprof_encode(const struct pd_pprof_profile *p, int gzip, uint8_t **out, size_t *out_len,
		    struct pd_err *err)
{
	uint8_t *raw;
	size_t n;
	int rc = pd_pprof_pack(p->pb, p->str_len, &raw, &n, err);
	if (rc)
		return rc;
	if (!gzip) {
		*out = raw;
		*out_len = n;
		return 0;
	}
	rc = pd_gzip(raw, n, 6, out, out_len, err);
	free(raw);
	return rc;
}
