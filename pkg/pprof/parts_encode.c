/* parts_encode.c: struct pd_pprof_parts written straight to profile.proto wire
 * bytes, without building protobuf-c messages first. The bytes are those
 * protobuf-c's pack writes for the same profile (fields in number order, proto3:
 * zero scalars left out, repeated scalars packed, every message of a repeated
 * field written even when empty), so a profile encodes the same either way. */
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

static size_t vlen(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *put(uint8_t *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

/* A varint field of number f (< 16) when v is not 0. */
static size_t fvlen(uint64_t v)
{
	return v ? 1 + vlen(v) : 0;
}

static uint8_t *fput(uint8_t *o, unsigned f, uint64_t v)
{
	if (!v)
		return o;
	*o++ = (uint8_t)(f << 3);
	return put(o, v);
}

/* A length-delimited field of number f (< 16) holding n bytes. */
static size_t flen(size_t n)
{
	return 1 + vlen(n) + n;
}

static uint8_t *fhead(uint8_t *o, unsigned f, size_t n)
{
	*o++ = (uint8_t)(f << 3 | 2);
	return put(o, n);
}

static size_t packed_len(const uint64_t *v, size_t n)
{
	size_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += vlen(v[i]);
	return s;
}

static uint8_t *packed(uint8_t *o, unsigned f, const uint64_t *v, size_t n, size_t bytes)
{
	if (!n)
		return o;
	o = fhead(o, f, bytes);
	for (size_t i = 0; i < n; i++)
		o = put(o, v[i]);
	return o;
}

static size_t vt_len(const struct pd_pprof_pvt *t)
{
	return fvlen((uint64_t)t->type) + fvlen((uint64_t)t->unit);
}

static uint8_t *vt_put(uint8_t *o, unsigned f, const struct pd_pprof_pvt *t)
{
	o = fhead(o, f, vt_len(t));
	o = fput(o, 1, (uint64_t)t->type);
	return fput(o, 2, (uint64_t)t->unit);
}

static size_t label_len(const struct pd_pprof_plabel *l)
{
	return fvlen((uint64_t)l->key) + fvlen((uint64_t)l->str) + fvlen((uint64_t)l->num) +
	       fvlen((uint64_t)l->num_unit);
}

/* The sample's bytes; *locb and *valb get its packed fields' lengths. */
static size_t sample_len(const struct pd_pprof_psample *s, size_t *locb, size_t *valb)
{
	*locb = packed_len(s->location_id, s->nlocation);
	*valb = packed_len((const uint64_t *)s->value, s->nvalue);
	size_t n = (s->nlocation ? flen(*locb) : 0) + (s->nvalue ? flen(*valb) : 0);
	for (size_t i = 0; i < s->nlabel; i++)
		n += flen(label_len(&s->label[i]));
	return n;
}

static uint8_t *sample_put(uint8_t *o, const struct pd_pprof_psample *s)
{
	size_t locb, valb;
	o = fhead(o, 2, sample_len(s, &locb, &valb));
	o = packed(o, 1, s->location_id, s->nlocation, locb);
	o = packed(o, 2, (const uint64_t *)s->value, s->nvalue, valb);
	for (size_t i = 0; i < s->nlabel; i++) {
		const struct pd_pprof_plabel *l = &s->label[i];
		o = fhead(o, 3, label_len(l));
		o = fput(o, 1, (uint64_t)l->key);
		o = fput(o, 2, (uint64_t)l->str);
		o = fput(o, 3, (uint64_t)l->num);
		o = fput(o, 4, (uint64_t)l->num_unit);
	}
	return o;
}

static size_t mapping_len(const struct pd_pprof_pmapping *m)
{
	return fvlen(m->id) + fvlen(m->memory_start) + fvlen(m->memory_limit) +
	       fvlen(m->file_offset) + fvlen((uint64_t)m->filename) +
	       fvlen((uint64_t)m->build_id) + fvlen(m->has_functions != 0) +
	       fvlen(m->has_filenames != 0) + fvlen(m->has_line_numbers != 0) +
	       fvlen(m->has_inline_frames != 0);
}

static uint8_t *mapping_put(uint8_t *o, const struct pd_pprof_pmapping *m)
{
	o = fhead(o, 3, mapping_len(m));
	o = fput(o, 1, m->id);
	o = fput(o, 2, m->memory_start);
	o = fput(o, 3, m->memory_limit);
	o = fput(o, 4, m->file_offset);
	o = fput(o, 5, (uint64_t)m->filename);
	o = fput(o, 6, (uint64_t)m->build_id);
	o = fput(o, 7, m->has_functions != 0);
	o = fput(o, 8, m->has_filenames != 0);
	o = fput(o, 9, m->has_line_numbers != 0);
	return fput(o, 10, m->has_inline_frames != 0);
}

static size_t line_len(const struct pd_pprof_pline *l)
{
	return fvlen(l->function_id) + fvlen((uint64_t)l->line) + fvlen((uint64_t)l->column);
}

static size_t location_len(const struct pd_pprof_plocation *l)
{
	size_t n = fvlen(l->id) + fvlen(l->mapping_id) + fvlen(l->address) +
		   fvlen(l->is_folded != 0);
	for (size_t i = 0; i < l->nline; i++)
		n += flen(line_len(&l->line[i]));
	return n;
}

static uint8_t *location_put(uint8_t *o, const struct pd_pprof_plocation *l)
{
	o = fhead(o, 4, location_len(l));
	o = fput(o, 1, l->id);
	o = fput(o, 2, l->mapping_id);
	o = fput(o, 3, l->address);
	for (size_t i = 0; i < l->nline; i++) {
		const struct pd_pprof_pline *ln = &l->line[i];
		o = fhead(o, 4, line_len(ln));
		o = fput(o, 1, ln->function_id);
		o = fput(o, 2, (uint64_t)ln->line);
		o = fput(o, 3, (uint64_t)ln->column);
	}
	return fput(o, 5, l->is_folded != 0);
}

static size_t function_len(const struct pd_pprof_pfunction *f)
{
	return fvlen(f->id) + fvlen((uint64_t)f->name) + fvlen((uint64_t)f->system_name) +
	       fvlen((uint64_t)f->filename) + fvlen((uint64_t)f->start_line);
}

static uint8_t *function_put(uint8_t *o, const struct pd_pprof_pfunction *f)
{
	o = fhead(o, 5, function_len(f));
	o = fput(o, 1, f->id);
	o = fput(o, 2, (uint64_t)f->name);
	o = fput(o, 3, (uint64_t)f->system_name);
	o = fput(o, 4, (uint64_t)f->filename);
	return fput(o, 5, (uint64_t)f->start_line);
}

int pd_pprof_parts_encode(const struct pd_pprof_parts *p, uint8_t **out, size_t *out_len,
			  struct pd_err *err)
{
	size_t n = 0, locb, valb;
	for (size_t i = 0; i < p->nsample_type; i++)
		n += flen(vt_len(&p->sample_type[i]));
	for (size_t i = 0; i < p->nsample; i++)
		n += flen(sample_len(&p->sample[i], &locb, &valb));
	for (size_t i = 0; i < p->nmapping; i++)
		n += flen(mapping_len(&p->mapping[i]));
	for (size_t i = 0; i < p->nlocation; i++)
		n += flen(location_len(&p->location[i]));
	for (size_t i = 0; i < p->nfunction; i++)
		n += flen(function_len(&p->function[i]));
	for (size_t i = 0; i < p->nstrings; i++)
		n += flen(p->string_len[i]);
	n += fvlen((uint64_t)p->drop_frames) + fvlen((uint64_t)p->keep_frames) +
	     fvlen((uint64_t)p->time_nanos) + fvlen((uint64_t)p->duration_nanos);
	if (p->has_period_type)
		n += flen(vt_len(&p->period_type));
	n += fvlen((uint64_t)p->period);
	size_t comb = packed_len((const uint64_t *)p->comment, p->ncomment);
	if (p->ncomment)
		n += flen(comb);
	n += fvlen((uint64_t)p->default_sample_type) + fvlen((uint64_t)p->doc_url);

	uint8_t *raw = malloc(n ? n : 1);
	*out = NULL;
	if (!raw)
		return pd_err_set(err, PD_ENOMEM, "out of memory encoding a profile of %zu bytes", n);
	uint8_t *o = raw;
	for (size_t i = 0; i < p->nsample_type; i++)
		o = vt_put(o, 1, &p->sample_type[i]);
	for (size_t i = 0; i < p->nsample; i++)
		o = sample_put(o, &p->sample[i]);
	for (size_t i = 0; i < p->nmapping; i++)
		o = mapping_put(o, &p->mapping[i]);
	for (size_t i = 0; i < p->nlocation; i++)
		o = location_put(o, &p->location[i]);
	for (size_t i = 0; i < p->nfunction; i++)
		o = function_put(o, &p->function[i]);
	for (size_t i = 0; i < p->nstrings; i++) {
		o = fhead(o, 6, p->string_len[i]);
		if (p->string_len[i])
			memcpy(o, p->strings[i], p->string_len[i]);
		o += p->string_len[i];
	}
	o = fput(o, 7, (uint64_t)p->drop_frames);
	o = fput(o, 8, (uint64_t)p->keep_frames);
	o = fput(o, 9, (uint64_t)p->time_nanos);
	o = fput(o, 10, (uint64_t)p->duration_nanos);
	if (p->has_period_type)
		o = vt_put(o, 11, &p->period_type);
	o = fput(o, 12, (uint64_t)p->period);
	o = packed(o, 13, (const uint64_t *)p->comment, p->ncomment, comb);
	o = fput(o, 14, (uint64_t)p->default_sample_type);
	o = fput(o, 15, (uint64_t)p->doc_url);
	size_t wrote = (size_t)(o - raw);
	if (wrote != n) { /* a size above disagrees with what was written */
		free(raw);
		return pd_err_set(err, PD_EINVAL, "encoding a profile: %zu bytes written of %zu",
				  wrote, n);
	}
	*out = raw;
	*out_len = n;
	return 0;
}
