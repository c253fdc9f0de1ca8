/* compare.c: semantic equality of two profiles: every field of profile.proto,
 * with strings compared by content rather than by their index, so that a
 * profile whose string table was rebuilt in another order is still the same
 * profile. Used to check that stores give back what they were given. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pprof_int.h"

static int differ(char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int differ(char *why, size_t size, const char *fmt, ...)
{
	if (why && size) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, size, fmt, ap);
		va_end(ap);
	}
	return 1;
}

static int str_eq(const struct pd_pprof_profile *a, int64_t i, const struct pd_pprof_profile *b,
		  int64_t j)
{
	return pd_pprof_str_eq(a, i, b, j);
}

#define S(field, ia, ib) \
	do { \
		if (!str_eq(a, (ia), b, (ib))) \
			return differ(why, size, "%s: \"%s\" vs \"%s\"", field, pd_pprof_str(a, ia), \
				      pd_pprof_str(b, ib)); \
	} while (0)
#define N(field, x, y) \
	do { \
		if ((x) != (y)) \
			return differ(why, size, "%s: %lld vs %lld", field, (long long)(x), \
				      (long long)(y)); \
	} while (0)

int pd_pprof_compare(const struct pd_pprof_profile *a, const struct pd_pprof_profile *b, char *why,
		     size_t size)
{
	const pb_profile *x = a->pb, *y = b->pb;
	char f[96];
	N("time_nanos", x->time_nanos, y->time_nanos);
	N("duration_nanos", x->duration_nanos, y->duration_nanos);
	N("period", x->period, y->period);
	N("period_type present", !!x->period_type, !!y->period_type);
	if (x->period_type) {
		S("period_type.type", x->period_type->type, y->period_type->type);
		S("period_type.unit", x->period_type->unit, y->period_type->unit);
	}
	S("default_sample_type", x->default_sample_type, y->default_sample_type);
	S("drop_frames", x->drop_frames, y->drop_frames);
	S("keep_frames", x->keep_frames, y->keep_frames);
	S("doc_url", x->doc_url, y->doc_url);
	N("comments", x->n_comment, y->n_comment);
	for (size_t i = 0; i < x->n_comment; i++)
		S("comment", x->comment[i], y->comment[i]);
	N("sample types", x->n_sample_type, y->n_sample_type);
	for (size_t i = 0; i < x->n_sample_type; i++) {
		S("sample_type.type", x->sample_type[i]->type, y->sample_type[i]->type);
		S("sample_type.unit", x->sample_type[i]->unit, y->sample_type[i]->unit);
	}
	N("samples", x->n_sample, y->n_sample);
	for (size_t i = 0; i < x->n_sample; i++) {
		const pb_sample *s = x->sample[i], *t = y->sample[i];
		snprintf(f, sizeof(f), "sample %zu", i);
		N(f, s->n_value, t->n_value);
		N(f, s->n_location_id, t->n_location_id);
		N(f, s->n_label, t->n_label);
		for (size_t k = 0; k < s->n_value; k++)
			N(f, s->value[k], t->value[k]);
		for (size_t k = 0; k < s->n_location_id; k++)
			N(f, s->location_id[k], t->location_id[k]);
		for (size_t k = 0; k < s->n_label; k++) {
			S(f, s->label[k]->key, t->label[k]->key);
			S(f, s->label[k]->str, t->label[k]->str);
			N(f, s->label[k]->num, t->label[k]->num);
			S(f, s->label[k]->num_unit, t->label[k]->num_unit);
		}
	}
	N("mappings", x->n_mapping, y->n_mapping);
	for (size_t i = 0; i < x->n_mapping; i++) {
		const pb_mapping *m = x->mapping[i], *n = y->mapping[i];
		snprintf(f, sizeof(f), "mapping %zu", i);
		N(f, m->id, n->id);
		N(f, m->memory_start, n->memory_start);
		N(f, m->memory_limit, n->memory_limit);
		N(f, m->file_offset, n->file_offset);
		S(f, m->filename, n->filename);
		S(f, m->build_id, n->build_id);
		N(f, !!m->has_functions, !!n->has_functions);
		N(f, !!m->has_filenames, !!n->has_filenames);
		N(f, !!m->has_line_numbers, !!n->has_line_numbers);
		N(f, !!m->has_inline_frames, !!n->has_inline_frames);
	}
	N("locations", x->n_location, y->n_location);
	for (size_t i = 0; i < x->n_location; i++) {
		const pb_location *l = x->location[i], *m = y->location[i];
		snprintf(f, sizeof(f), "location %zu", i);
		N(f, l->id, m->id);
		N(f, l->mapping_id, m->mapping_id);
		N(f, l->address, m->address);
		N(f, !!l->is_folded, !!m->is_folded);
		N(f, l->n_line, m->n_line);
		for (size_t k = 0; k < l->n_line; k++) {
			N(f, l->line[k]->function_id, m->line[k]->function_id);
			N(f, l->line[k]->line, m->line[k]->line);
			N(f, l->line[k]->column, m->line[k]->column);
		}
	}
	N("functions", x->n_function, y->n_function);
	for (size_t i = 0; i < x->n_function; i++) {
		const pb_function *g = x->function[i], *h = y->function[i];
		snprintf(f, sizeof(f), "function %zu", i);
		N(f, g->id, h->id);
		S(f, g->name, h->name);
		S(f, g->system_name, h->system_name);
		S(f, g->filename, h->filename);
		N(f, g->start_line, h->start_line);
	}
	return 0;
}
