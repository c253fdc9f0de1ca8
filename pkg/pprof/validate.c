/* validate.c: the rules of the pprof format, checked once after decoding, with a
 * message naming the first broken one. Builds the id -> index tables that reports
 * use to follow references. The rules are those of pprof's own check: the string
 * table starts with "", string indices are in range, ids are non-zero and unique
 * per table, every referenced location, function and mapping exists, and every
 * sample has one value per sample type. */
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

static int check_str(const pb_profile *pb, int64_t idx, struct pd_err *err, const char *what,
		     unsigned long long id)
{
	if (idx < 0 || (uint64_t)idx >= pb->n_string_table)
		return pd_err_set(err, PD_ECORRUPT,
				  "%s %llu: string index %lld out of range (string table has %zu entries)",
				  what, id, (long long)idx, pb->n_string_table);
	return 0;
}

#define STR(idx, what, id)                                                         \
	do {                                                                       \
		if ((rc = check_str(pb, (idx), err, (what), (unsigned long long)(id)))) \
			return rc;                                                 \
	} while (0)

/* Builds an id table; ids must be non-zero and unique. */
static int build_idmap(struct pd_pprof_idmap *m, size_t n, uint64_t (*id_at)(const void *, size_t),
		       const void *tab, const char *what, struct pd_err *err)
{
	uint64_t max = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = id_at(tab, i);
		if (id == 0)
			return pd_err_set(err, PD_ECORRUPT, "%s at index %zu has the reserved id 0", what, i);
		if (id > max)
			max = id;
	}
	if (n > UINT32_MAX - 1)
		return pd_err_set(err, PD_ETOOBIG, "too many %ss: %zu", what, n);
	if (max <= 2 * (uint64_t)n + 1024) {
		m->dense_len = max + 1;
		m->dense = calloc(m->dense_len, sizeof(*m->dense));
		if (!m->dense)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++) {
			uint64_t id = id_at(tab, i);
			if (m->dense[id])
				return pd_err_set(err, PD_ECORRUPT, "duplicate %s id %llu", what,
						  (unsigned long long)id);
			m->dense[id] = (uint32_t)i + 1;
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t id = id_at(tab, i);
		uint32_t old;
		if (pd_u64map_get(&m->sparse, id, &old))
			return pd_err_set(err, PD_ECORRUPT, "duplicate %s id %llu", what,
					  (unsigned long long)id);
		if (pd_u64map_put(&m->sparse, id, (uint32_t)i))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	return 0;
}

static uint64_t mapping_id(const void *t, size_t i) { return ((pb_mapping *const *)t)[i]->id; }
static uint64_t location_id(const void *t, size_t i) { return ((pb_location *const *)t)[i]->id; }
static uint64_t function_id(const void *t, size_t i) { return ((pb_function *const *)t)[i]->id; }

int pd_pprof_validate(struct pd_pprof_profile *p, struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	int rc;

	if (pb->n_string_table == 0)
		return pd_err_set(err, PD_ECORRUPT, "string table is empty: string_table[0] must be \"\"");
	if (p->str_len[0] != 0)
		return pd_err_set(err, PD_ECORRUPT,
				  "string_table[0] must be \"\", found %zu bytes starting \"%.40s\"",
				  p->str_len[0], pb->string_table[0]);

	for (size_t i = 0; i < pb->n_sample_type; i++) {
		STR(pb->sample_type[i]->type, "sample_type", i);
		STR(pb->sample_type[i]->unit, "sample_type", i);
	}
	if (pb->period_type) {
		STR(pb->period_type->type, "period_type", 0);
		STR(pb->period_type->unit, "period_type", 0);
	}
	STR(pb->drop_frames, "drop_frames", 0);
	STR(pb->keep_frames, "keep_frames", 0);
	STR(pb->default_sample_type, "default_sample_type", 0);
	STR(pb->doc_url, "doc_url", 0);
	for (size_t i = 0; i < pb->n_comment; i++)
		STR(pb->comment[i], "comment", i);

	if ((rc = build_idmap(&p->mappings, pb->n_mapping, mapping_id, pb->mapping, "mapping", err)))
		return rc;
	if ((rc = build_idmap(&p->functions, pb->n_function, function_id, pb->function, "function",
			      err)))
		return rc;
	if ((rc = build_idmap(&p->locations, pb->n_location, location_id, pb->location, "location",
			      err)))
		return rc;

	for (size_t i = 0; i < pb->n_mapping; i++) {
		const pb_mapping *m = pb->mapping[i];
		STR(m->filename, "mapping", m->id);
		STR(m->build_id, "mapping", m->id);
	}
	for (size_t i = 0; i < pb->n_function; i++) {
		const pb_function *f = pb->function[i];
		STR(f->name, "function", f->id);
		STR(f->system_name, "function", f->id);
		STR(f->filename, "function", f->id);
	}
	for (size_t i = 0; i < pb->n_location; i++) {
		const pb_location *l = pb->location[i];
		if (l->mapping_id && pd_pprof_idmap_get(&p->mappings, l->mapping_id) < 0)
			return pd_err_set(err, PD_ECORRUPT, "location %llu refers to missing mapping %llu",
					  (unsigned long long)l->id, (unsigned long long)l->mapping_id);
		for (size_t j = 0; j < l->n_line; j++) {
			uint64_t fid = l->line[j]->function_id;
			if (fid == 0)
				return pd_err_set(err, PD_ECORRUPT,
						  "location %llu: line %zu has no function (function_id 0)",
						  (unsigned long long)l->id, j);
			if (pd_pprof_idmap_get(&p->functions, fid) < 0)
				return pd_err_set(err, PD_ECORRUPT,
						  "location %llu refers to missing function %llu",
						  (unsigned long long)l->id, (unsigned long long)fid);
		}
	}
	if (pb->n_sample && pb->n_sample_type == 0)
		return pd_err_set(err, PD_ECORRUPT, "profile has %zu samples but no sample types",
				  pb->n_sample);
	for (size_t i = 0; i < pb->n_sample; i++) {
		const pb_sample *s = pb->sample[i];
		if (s->n_value != pb->n_sample_type)
			return pd_err_set(err, PD_ECORRUPT,
					  "sample %zu has %zu values but the profile has %zu sample types", i,
					  s->n_value, pb->n_sample_type);
		for (size_t j = 0; j < s->n_location_id; j++)
			if (pd_pprof_idmap_get(&p->locations, s->location_id[j]) < 0)
				return pd_err_set(err, PD_ECORRUPT, "sample %zu refers to missing location %llu",
						  i, (unsigned long long)s->location_id[j]);
		for (size_t j = 0; j < s->n_label; j++) {
			STR(s->label[j]->key, "label of sample", i);
			STR(s->label[j]->str, "label of sample", i);
			STR(s->label[j]->num_unit, "label of sample", i);
		}
	}
	return 0;
}
