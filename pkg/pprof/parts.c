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
