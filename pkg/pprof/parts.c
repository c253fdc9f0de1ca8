/* parts.c: a profile as plain tables (struct pd_pprof_parts) and back: the
 * decomposition that stores work on, so that they need not know protobuf-c. */
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

#define ALLOC(a, n, T) ((T *)pd_arena_calloc((a), (n) ? (n) : 1, sizeof(T)))

int pd_pprof_parts_get(const struct pd_pprof_profile *p, struct pd_pprof_parts *out,
		       struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	memset(out, 0, sizeof(*out));
	struct pd_arena *a = pd_arena_create(0);
	if (!a)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	out->arena = a;
	out->strings = (const char *const *)pb->string_table;
	out->string_len = p->str_len;
	out->nstrings = pb->n_string_table;

	out->nsample_type = pb->n_sample_type;
	out->sample_type = ALLOC(a, pb->n_sample_type, struct pd_pprof_pvt);
	out->nsample = pb->n_sample;
	out->sample = ALLOC(a, pb->n_sample, struct pd_pprof_psample);
	out->nmapping = pb->n_mapping;
	out->mapping = ALLOC(a, pb->n_mapping, struct pd_pprof_pmapping);
	out->nlocation = pb->n_location;
	out->location = ALLOC(a, pb->n_location, struct pd_pprof_plocation);
	out->nfunction = pb->n_function;
	out->function = ALLOC(a, pb->n_function, struct pd_pprof_pfunction);
	out->ncomment = pb->n_comment;
	out->comment = ALLOC(a, pb->n_comment, int64_t);
	if (!out->sample_type || !out->sample || !out->mapping || !out->location ||
	    !out->function || !out->comment)
		goto nomem;

	for (size_t i = 0; i < pb->n_sample_type; i++)
		out->sample_type[i] = (struct pd_pprof_pvt){pb->sample_type[i]->type,
							    pb->sample_type[i]->unit};
	for (size_t i = 0; i < pb->n_sample; i++) {
		const pb_sample *s = pb->sample[i];
		struct pd_pprof_psample *d = &out->sample[i];
		/* protobuf-c's repeated scalars are plain arrays: borrow them */
		d->location_id = s->location_id;
		d->nlocation = s->n_location_id;
		d->value = s->value;
		d->nvalue = s->n_value;
		d->nlabel = s->n_label;
		if (s->n_label) {
			if (!(d->label = ALLOC(a, s->n_label, struct pd_pprof_plabel)))
				goto nomem;
			for (size_t k = 0; k < s->n_label; k++)
				d->label[k] = (struct pd_pprof_plabel){s->label[k]->key, s->label[k]->str,
								       s->label[k]->num,
								       s->label[k]->num_unit};
		}
	}
	for (size_t i = 0; i < pb->n_mapping; i++) {
		const pb_mapping *m = pb->mapping[i];
		out->mapping[i] = (struct pd_pprof_pmapping){
		    m->id,          m->memory_start,      m->memory_limit,        m->file_offset,
		    m->filename,    m->build_id,          (uint8_t)m->has_functions,
		    (uint8_t)m->has_filenames, (uint8_t)m->has_line_numbers,
		    (uint8_t)m->has_inline_frames};
	}
	size_t nlines = 0;
	for (size_t i = 0; i < pb->n_location; i++)
		nlines += pb->location[i]->n_line;
	struct pd_pprof_pline *lines = ALLOC(a, nlines, struct pd_pprof_pline);
	if (!lines)
		goto nomem;
	for (size_t i = 0; i < pb->n_location; i++) {
		const pb_location *l = pb->location[i];
		struct pd_pprof_plocation *d = &out->location[i];
		d->id = l->id;
		d->mapping_id = l->mapping_id;
		d->address = l->address;
		d->is_folded = (uint8_t)l->is_folded;
		d->line = lines;
		d->nline = l->n_line;
		for (size_t k = 0; k < l->n_line; k++)
			*lines++ = (struct pd_pprof_pline){l->line[k]->function_id, l->line[k]->line,
							   l->line[k]->column};
	}
	for (size_t i = 0; i < pb->n_function; i++) {
		const pb_function *f = pb->function[i];
		out->function[i] = (struct pd_pprof_pfunction){f->id, f->name, f->system_name,
							       f->filename, f->start_line};
	}
	if (pb->period_type) {
		out->has_period_type = 1;
		out->period_type = (struct pd_pprof_pvt){pb->period_type->type, pb->period_type->unit};
	}
	out->period = pb->period;
	out->time_nanos = pb->time_nanos;
	out->duration_nanos = pb->duration_nanos;
	out->drop_frames = pb->drop_frames;
	out->keep_frames = pb->keep_frames;
	out->default_sample_type = pb->default_sample_type;
	out->doc_url = pb->doc_url;
	for (size_t i = 0; i < pb->n_comment; i++)
		out->comment[i] = pb->comment[i];
	return 0;
nomem:
	pd_pprof_parts_fini(out);
	return pd_err_set(err, PD_ENOMEM, "out of memory");
}

void pd_pprof_parts_fini(struct pd_pprof_parts *parts)
{
	pd_arena_destroy(parts->arena);
	memset(parts, 0, sizeof(*parts));
}

/* pd_pprof_parts_encode is in parts_encode.c. */

/* n elements of size sz from p, copied into a; NULL when out of memory. */
static void *copy(struct pd_arena *a, const void *p, size_t n, size_t sz)
{
	void *q = pd_arena_calloc(a, n ? n : 1, sz);
	if (q && n)
		memcpy(q, p, n * sz);
	return q;
}

/* The message tree of parts with everything copied into a (the strings
 * NUL-terminated), as decoding parts' bytes makes it. NULL when out of memory. */
static pb_profile *to_pb(const struct pd_pprof_parts *in, struct pd_arena *a)
{
	pb_profile *pb = ALLOC(a, 1, pb_profile);
	if (!pb)
		return NULL;
	perftools__profiles__profile__init(pb);
	pb->n_string_table = in->nstrings;
	pb->string_table = ALLOC(a, in->nstrings, char *);
	if (!pb->string_table)
		return NULL;
	for (size_t i = 0; i < in->nstrings; i++)
		if (!(pb->string_table[i] = pd_arena_strndup(a, in->strings[i], in->string_len[i])))
			return NULL;

	pb->n_sample_type = in->nsample_type;
	pb->sample_type = ALLOC(a, in->nsample_type, pb_value_type *);
	pb_value_type *vts = ALLOC(a, in->nsample_type + 1, pb_value_type);
	pb->n_sample = in->nsample;
	pb->sample = ALLOC(a, in->nsample, pb_sample *);
	pb_sample *ss = ALLOC(a, in->nsample, pb_sample);
	pb->n_mapping = in->nmapping;
	pb->mapping = ALLOC(a, in->nmapping, pb_mapping *);
	pb_mapping *ms = ALLOC(a, in->nmapping, pb_mapping);
	pb->n_location = in->nlocation;
	pb->location = ALLOC(a, in->nlocation, pb_location *);
	pb_location *ls = ALLOC(a, in->nlocation, pb_location);
	pb->n_function = in->nfunction;
	pb->function = ALLOC(a, in->nfunction, pb_function *);
	pb_function *fs = ALLOC(a, in->nfunction, pb_function);
	if (!pb->sample_type || !vts || !pb->sample || !ss || !pb->mapping || !ms ||
	    !pb->location || !ls || !pb->function || !fs)
		return NULL;

	for (size_t i = 0; i < in->nsample_type; i++) {
		perftools__profiles__value_type__init(&vts[i]);
		vts[i].type = in->sample_type[i].type;
		vts[i].unit = in->sample_type[i].unit;
		pb->sample_type[i] = &vts[i];
	}
	size_t nlabels = 0, nlines = 0;
	for (size_t i = 0; i < in->nsample; i++)
		nlabels += in->sample[i].nlabel;
	for (size_t i = 0; i < in->nlocation; i++)
		nlines += in->location[i].nline;
	pb_label *lbs = ALLOC(a, nlabels, pb_label);
	pb_label **lbp = ALLOC(a, nlabels, pb_label *);
	pb_line *lns = ALLOC(a, nlines, pb_line);
	pb_line **lnp = ALLOC(a, nlines, pb_line *);
	if (!lbs || !lbp || !lns || !lnp)
		return NULL;
	for (size_t i = 0; i < in->nsample; i++) {
		const struct pd_pprof_psample *s = &in->sample[i];
		pb_sample *d = &ss[i];
		perftools__profiles__sample__init(d);
		d->n_location_id = s->nlocation;
		d->location_id = copy(a, s->location_id, s->nlocation, sizeof(*s->location_id));
		d->n_value = s->nvalue;
		d->value = copy(a, s->value, s->nvalue, sizeof(*s->value));
		if (!d->location_id || !d->value)
			return NULL;
		d->n_label = s->nlabel;
		d->label = lbp;
		for (size_t k = 0; k < s->nlabel; k++) {
			perftools__profiles__label__init(lbs);
			lbs->key = s->label[k].key;
			lbs->str = s->label[k].str;
			lbs->num = s->label[k].num;
			lbs->num_unit = s->label[k].num_unit;
			*lbp++ = lbs++;
		}
		pb->sample[i] = d;
	}
	for (size_t i = 0; i < in->nmapping; i++) {
		const struct pd_pprof_pmapping *m = &in->mapping[i];
		pb_mapping *d = &ms[i];
		perftools__profiles__mapping__init(d);
		d->id = m->id;
		d->memory_start = m->memory_start;
		d->memory_limit = m->memory_limit;
		d->file_offset = m->file_offset;
		d->filename = m->filename;
		d->build_id = m->build_id;
		d->has_functions = m->has_functions;
		d->has_filenames = m->has_filenames;
		d->has_line_numbers = m->has_line_numbers;
		d->has_inline_frames = m->has_inline_frames;
		pb->mapping[i] = d;
	}
	for (size_t i = 0; i < in->nlocation; i++) {
		const struct pd_pprof_plocation *l = &in->location[i];
		pb_location *d = &ls[i];
		perftools__profiles__location__init(d);
		d->id = l->id;
		d->mapping_id = l->mapping_id;
		d->address = l->address;
		d->is_folded = l->is_folded;
		d->n_line = l->nline;
		d->line = lnp;
		for (size_t k = 0; k < l->nline; k++) {
			perftools__profiles__line__init(lns);
			lns->function_id = l->line[k].function_id;
			lns->line = l->line[k].line;
			lns->column = l->line[k].column;
			*lnp++ = lns++;
		}
		pb->location[i] = d;
	}
	for (size_t i = 0; i < in->nfunction; i++) {
		const struct pd_pprof_pfunction *f = &in->function[i];
		pb_function *d = &fs[i];
		perftools__profiles__function__init(d);
		d->id = f->id;
		d->name = f->name;
		d->system_name = f->system_name;
		d->filename = f->filename;
		d->start_line = f->start_line;
		pb->function[i] = d;
	}
	if (in->has_period_type) {
		pb_value_type *pt = &vts[in->nsample_type];
		perftools__profiles__value_type__init(pt);
		pt->type = in->period_type.type;
		pt->unit = in->period_type.unit;
		pb->period_type = pt;
	}
	pb->period = in->period;
	pb->time_nanos = in->time_nanos;
	pb->duration_nanos = in->duration_nanos;
	pb->drop_frames = in->drop_frames;
	pb->keep_frames = in->keep_frames;
	pb->default_sample_type = in->default_sample_type;
	pb->doc_url = in->doc_url;
	pb->n_comment = in->ncomment;
	if (!(pb->comment = copy(a, in->comment, in->ncomment, sizeof(*in->comment))))
		return NULL;
	return pb;
}

int pd_pprof_parts_build(const struct pd_pprof_parts *parts, struct pd_pprof_profile **out,
			 struct pd_err *err)
{
	/* the profile owns its memory: copy the borrowed arrays into its arena by
	 * encoding and decoding, which also validates it as any input is */
	uint8_t *raw = NULL;
	size_t len = 0;
	int rc = pd_pprof_parts_encode(parts, &raw, &len, err);
	if (rc)
		return rc;
	rc = pd_pprof_decode(out, raw, len, NULL, err);
	free(raw);
	return rc;
}

int pd_pprof_parts_copy(const struct pd_pprof_parts *parts, struct pd_pprof_profile **out,
			struct pd_err *err)
{
	*out = NULL;
	struct pd_arena *a = pd_arena_create(0);
	pb_profile *pb = a ? to_pb(parts, a) : NULL;
	size_t *str_len = malloc((parts->nstrings ? parts->nstrings : 1) * sizeof(*str_len));
	if (!pb || !str_len) {
		free(str_len);
		pd_arena_destroy(a);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (parts->nstrings)
		memcpy(str_len, parts->string_len, parts->nstrings * sizeof(*str_len));
	return pd_pprof_adopt(out, a, pb, str_len, err); /* validated there */
}
