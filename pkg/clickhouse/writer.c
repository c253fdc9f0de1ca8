/* writer.c: the batched writer. A decoded profile is taken apart into the rows of
 * the content-addressed tables (strings, functions, mappings, locations, stacks:
 * ids are hashes of their content), one profiles row with the rest of its fields
 * and one samples row per sample, encoded as RowBinary into one buffer per table.
 * A flush sends each table's buffer as one gzip-compressed INSERT. Ids already
 * sent are remembered (a bounded set) and not sent again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"

enum { T_SERIES, T_STRINGS, T_FUNCTIONS, T_MAPPINGS, T_LOCATIONS, T_STACKS, T_PROFILES,
       T_SAMPLES, NTABLES };

static const char *const table_name[NTABLES] = {"series",    "strings", "functions",
						 "mappings",  "locations", "stacks",
						 "profiles", "samples"};

/* seeds keep the ids of different kinds apart */
enum { SEED_FUNCTION = 1, SEED_MAPPING = 2, SEED_LOCATION = 3, SEED_STACK = 4 };
#define SERIES_KEY_MIX 0x9e3779b97f4a7c15ull

struct pd_clickhouse_writer {
	struct pd_clickhouse *c;
	size_t batch_profiles, batch_bytes, cache_ids;
	struct pd_buf rows[NTABLES];
	size_t nrows[NTABLES];
	size_t profiles;
	struct pd_u64map cache;   /* ids known to be in ClickHouse */
	struct pd_u64map pending; /* ids in the unsent batch */
};

int pd_clickhouse_writer_create(struct pd_clickhouse_writer **out, struct pd_clickhouse *c,
				const struct pd_clickhouse_writer_opts *o, struct pd_err *err)
{
	struct pd_clickhouse_writer *w = calloc(1, sizeof(*w));
	*out = NULL;
	if (!w)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	w->c = c;
	w->batch_profiles = o && o->batch_profiles ? o->batch_profiles
						   : PD_CLICKHOUSE_DEFAULT_BATCH_PROFILES;
	w->batch_bytes = o && o->batch_bytes ? o->batch_bytes : PD_CLICKHOUSE_DEFAULT_BATCH_BYTES;
	w->cache_ids = o && o->cache_ids ? o->cache_ids : PD_CLICKHOUSE_DEFAULT_CACHE_IDS;
	for (int t = 0; t < NTABLES; t++)
		pd_buf_init(&w->rows[t], 0);
	pd_u64map_init(&w->cache);
	pd_u64map_init(&w->pending);
	*out = w;
	return 0;
}

void pd_clickhouse_writer_destroy(struct pd_clickhouse_writer *w)
{
	if (!w)
		return;
	for (int t = 0; t < NTABLES; t++)
		pd_buf_fini(&w->rows[t]);
	pd_u64map_fini(&w->cache);
	pd_u64map_fini(&w->pending);
	free(w);
}

size_t pd_clickhouse_writer_pending(const struct pd_clickhouse_writer *w)
{
	return w->profiles;
}

/* A hash over a sequence of 64-bit values, little-endian. */
struct hasher {
	uint8_t buf[512];
	size_t n;
	uint64_t h;
	uint64_t seed;
};

static void h_init(struct hasher *h, uint64_t seed)
{
	h->n = 0;
	h->h = 0;
	h->seed = seed;
}

static void h_flush(struct hasher *h)
{
	/* chain blocks: each block's hash seeds the next */
	h->seed = pd_labels_xxh64(h->buf, h->n, h->seed);
	h->n = 0;
}

static void h_u64(struct hasher *h, uint64_t v)
{
	if (h->n + 8 > sizeof(h->buf))
		h_flush(h);
	for (int i = 0; i < 8; i++)
		h->buf[h->n++] = (uint8_t)(v >> (8 * i));
}

static uint64_t h_done(struct hasher *h)
{
	h_flush(h);
	return h->seed;
}

/* Per-append state: the profile's tables by original id, and the content ids. */
struct take {
	struct pd_pprof_parts parts;
	uint64_t *str;  /* string index -> id */
	uint64_t *fn;   /* function index -> id */
	uint64_t *map;  /* mapping index -> id */
	uint64_t *loc;  /* location index -> id */
	struct pd_u64map fn_ix, map_ix, loc_ix; /* original id -> index + 1 */
	struct pd_u64map seen;                  /* ids added by this append */
};

static int is_new(struct pd_clickhouse_writer *w, struct take *t, uint64_t key, int *rc)
{
	uint32_t v;
	if (!key || pd_u64map_get(&w->cache, key, &v) || pd_u64map_get(&w->pending, key, &v) ||
	    pd_u64map_get(&t->seen, key, &v))
		return 0;
	if (pd_u64map_put(&t->seen, key, 1))
		*rc = PD_ENOMEM;
	return 1;
}

static uint64_t id_of(const struct pd_u64map *ix, const uint64_t *ids, uint64_t orig)
{
	uint32_t v;
	return orig && pd_u64map_get(ix, orig, &v) ? ids[v - 1] : 0;
}

static int enc_u64s(struct pd_buf *b, const uint64_t *v, size_t n)
{
	int rc = pd_clickhouse_rb_varint(b, n);
	for (size_t i = 0; !rc && i < n; i++)
		rc = pd_clickhouse_rb_u64(b, v[i]);
	return rc;
}

static uint64_t sid(const struct take *t, int64_t ix)
{
	return ix > 0 && (size_t)ix < t->parts.nstrings ? t->str[ix] : 0;
}

static int add_rows(struct pd_clickhouse_writer *w, struct take *t, const struct pd_labels *ls,
		    int64_t ts, uint64_t series)
{
	struct pd_pprof_parts *pp = &t->parts;
	struct pd_buf *B = w->rows;
	int rc = 0;

	/* series */
	if (is_new(w, t, series ^ SERIES_KEY_MIX, &rc)) {
		size_t n = pd_labels_len(ls);
		rc |= pd_clickhouse_rb_u64(&B[T_SERIES], series);
		rc |= pd_clickhouse_rb_varint(&B[T_SERIES], n);
		for (size_t i = 0; i < n; i++) {
			const struct pd_label *l = pd_labels_at(ls, i);
			rc |= pd_clickhouse_rb_string(&B[T_SERIES], l->name, l->name_len);
		}
		rc |= pd_clickhouse_rb_varint(&B[T_SERIES], n);
		for (size_t i = 0; i < n; i++) {
			const struct pd_label *l = pd_labels_at(ls, i);
			rc |= pd_clickhouse_rb_string(&B[T_SERIES], l->value, l->value_len);
		}
		w->nrows[T_SERIES]++;
	}
	/* strings */
	for (size_t i = 1; i < pp->nstrings; i++)
		if (is_new(w, t, t->str[i], &rc)) {
			rc |= pd_clickhouse_rb_u64(&B[T_STRINGS], t->str[i]);
			rc |= pd_clickhouse_rb_string(&B[T_STRINGS], pp->strings[i], pp->string_len[i]);
			w->nrows[T_STRINGS]++;
		}
	/* functions */
	for (size_t i = 0; i < pp->nfunction; i++) {
		const struct pd_pprof_pfunction *f = &pp->function[i];
		if (!is_new(w, t, t->fn[i], &rc))
			continue;
		struct pd_buf *b = &B[T_FUNCTIONS];
		rc |= pd_clickhouse_rb_u64(b, t->fn[i]);
		rc |= pd_clickhouse_rb_u64(b, sid(t, f->name));
		rc |= pd_clickhouse_rb_u64(b, sid(t, f->system_name));
		rc |= pd_clickhouse_rb_u64(b, sid(t, f->filename));
		rc |= pd_clickhouse_rb_i64(b, f->start_line);
		w->nrows[T_FUNCTIONS]++;
	}
	/* mappings */
	for (size_t i = 0; i < pp->nmapping; i++) {
		const struct pd_pprof_pmapping *m = &pp->mapping[i];
		if (!is_new(w, t, t->map[i], &rc))
			continue;
		struct pd_buf *b = &B[T_MAPPINGS];
		rc |= pd_clickhouse_rb_u64(b, t->map[i]);
		rc |= pd_clickhouse_rb_u64(b, m->memory_start);
		rc |= pd_clickhouse_rb_u64(b, m->memory_limit);
		rc |= pd_clickhouse_rb_u64(b, m->file_offset);
		rc |= pd_clickhouse_rb_u64(b, sid(t, m->filename));
		rc |= pd_clickhouse_rb_u64(b, sid(t, m->build_id));
		rc |= pd_clickhouse_rb_u8(b, m->has_functions);
		rc |= pd_clickhouse_rb_u8(b, m->has_filenames);
		rc |= pd_clickhouse_rb_u8(b, m->has_line_numbers);
		rc |= pd_clickhouse_rb_u8(b, m->has_inline_frames);
		w->nrows[T_MAPPINGS]++;
	}
	/* locations */
	for (size_t i = 0; i < pp->nlocation; i++) {
		const struct pd_pprof_plocation *l = &pp->location[i];
		if (!is_new(w, t, t->loc[i], &rc))
			continue;
		struct pd_buf *b = &B[T_LOCATIONS];
		rc |= pd_clickhouse_rb_u64(b, t->loc[i]);
		rc |= pd_clickhouse_rb_u64(b, id_of(&t->map_ix, t->map, l->mapping_id));
		rc |= pd_clickhouse_rb_u64(b, l->address);
		rc |= pd_clickhouse_rb_u8(b, l->is_folded);
		rc |= pd_clickhouse_rb_varint(b, l->nline);
		for (size_t k = 0; k < l->nline; k++)
			rc |= pd_clickhouse_rb_u64(b, id_of(&t->fn_ix, t->fn, l->line[k].function_id));
		rc |= pd_clickhouse_rb_varint(b, l->nline);
		for (size_t k = 0; k < l->nline; k++)
			rc |= pd_clickhouse_rb_i64(b, l->line[k].line);
		rc |= pd_clickhouse_rb_varint(b, l->nline);
		for (size_t k = 0; k < l->nline; k++)
			rc |= pd_clickhouse_rb_i64(b, l->line[k].column);
		w->nrows[T_LOCATIONS]++;
	}
	/* samples and their stacks */
	for (size_t i = 0; i < pp->nsample; i++) {
		const struct pd_pprof_psample *s = &pp->sample[i];
		struct hasher h;
		h_init(&h, SEED_STACK);
		for (size_t k = 0; k < s->nlocation; k++)
			h_u64(&h, id_of(&t->loc_ix, t->loc, s->location_id[k]));
		uint64_t stack = h_done(&h);
		if (is_new(w, t, stack, &rc)) {
			struct pd_buf *b = &B[T_STACKS];
			rc |= pd_clickhouse_rb_u64(b, stack);
			rc |= pd_clickhouse_rb_varint(b, s->nlocation);
			for (size_t k = 0; k < s->nlocation; k++)
				rc |= pd_clickhouse_rb_u64(b,
							   id_of(&t->loc_ix, t->loc, s->location_id[k]));
			w->nrows[T_STACKS]++;
		}
		struct pd_buf *b = &B[T_SAMPLES];
		rc |= pd_clickhouse_rb_u64(b, series);
		rc |= pd_clickhouse_rb_i64(b, ts);
		rc |= pd_clickhouse_rb_u32(b, (uint32_t)i);
		rc |= pd_clickhouse_rb_u64(b, stack);
		rc |= pd_clickhouse_rb_varint(b, s->nvalue);
		for (size_t k = 0; k < s->nvalue; k++)
			rc |= pd_clickhouse_rb_i64(b, s->value[k]);
		rc |= pd_clickhouse_rb_varint(b, s->nlabel);
		for (size_t k = 0; k < s->nlabel; k++)
			rc |= pd_clickhouse_rb_u64(b, sid(t, s->label[k].key));
		rc |= pd_clickhouse_rb_varint(b, s->nlabel);
		for (size_t k = 0; k < s->nlabel; k++)
			rc |= pd_clickhouse_rb_u64(b, sid(t, s->label[k].str));
		rc |= pd_clickhouse_rb_varint(b, s->nlabel);
		for (size_t k = 0; k < s->nlabel; k++)
			rc |= pd_clickhouse_rb_i64(b, s->label[k].num);
		rc |= pd_clickhouse_rb_varint(b, s->nlabel);
		for (size_t k = 0; k < s->nlabel; k++)
			rc |= pd_clickhouse_rb_u64(b, sid(t, s->label[k].num_unit));
		w->nrows[T_SAMPLES]++;
	}
	/* the profile's own row */
	struct pd_buf *b = &B[T_PROFILES];
	rc |= pd_clickhouse_rb_u64(b, series);
	rc |= pd_clickhouse_rb_i64(b, ts);
	rc |= pd_clickhouse_rb_i64(b, pp->time_nanos);
	rc |= pd_clickhouse_rb_i64(b, pp->duration_nanos);
	rc |= pd_clickhouse_rb_i64(b, pp->period);
	rc |= pd_clickhouse_rb_u8(b, pp->has_period_type ? 1 : 0);
	rc |= pd_clickhouse_rb_u64(b, sid(t, pp->period_type.type));
	rc |= pd_clickhouse_rb_u64(b, sid(t, pp->period_type.unit));
	rc |= pd_clickhouse_rb_varint(b, pp->nsample_type);
	for (size_t k = 0; k < pp->nsample_type; k++)
		rc |= pd_clickhouse_rb_u64(b, sid(t, pp->sample_type[k].type));
	rc |= pd_clickhouse_rb_varint(b, pp->nsample_type);
	for (size_t k = 0; k < pp->nsample_type; k++)
		rc |= pd_clickhouse_rb_u64(b, sid(t, pp->sample_type[k].unit));
	rc |= pd_clickhouse_rb_u64(b, sid(t, pp->default_sample_type));
	rc |= pd_clickhouse_rb_u64(b, sid(t, pp->drop_frames));
	rc |= pd_clickhouse_rb_u64(b, sid(t, pp->keep_frames));
	rc |= pd_clickhouse_rb_u64(b, sid(t, pp->doc_url));
	rc |= pd_clickhouse_rb_varint(b, pp->ncomment);
	for (size_t k = 0; k < pp->ncomment; k++)
		rc |= pd_clickhouse_rb_u64(b, sid(t, pp->comment[k]));
	rc |= pd_clickhouse_rb_varint(b, pp->nmapping);
	for (size_t k = 0; k < pp->nmapping; k++)
		rc |= pd_clickhouse_rb_u64(b, pp->mapping[k].id);
	rc |= enc_u64s(b, t->map, pp->nmapping);
	rc |= pd_clickhouse_rb_varint(b, pp->nlocation);
	for (size_t k = 0; k < pp->nlocation; k++)
		rc |= pd_clickhouse_rb_u64(b, pp->location[k].id);
	rc |= enc_u64s(b, t->loc, pp->nlocation);
	rc |= pd_clickhouse_rb_varint(b, pp->nfunction);
	for (size_t k = 0; k < pp->nfunction; k++)
		rc |= pd_clickhouse_rb_u64(b, pp->function[k].id);
	rc |= enc_u64s(b, t->fn, pp->nfunction);
	/* the profile's distinct non-empty strings */
	struct pd_u64map once;
	pd_u64map_init(&once);
	size_t nstr = 0;
	uint32_t v;
	for (size_t i = 1; i < pp->nstrings; i++)
		if (t->str[i] && !pd_u64map_get(&once, t->str[i], &v)) {
			if (pd_u64map_put(&once, t->str[i], 1))
				rc |= PD_ENOMEM;
			t->str[nstr == i ? i : nstr] = t->str[i];
			nstr++;
		}
	pd_u64map_fini(&once);
	rc |= enc_u64s(b, t->str, nstr);
	/* totals (schema version 2): per sample type, the sum over every sample,
	 * wrapping as int64 does (pd_pprof_sum) */
	rc |= pd_clickhouse_rb_varint(b, pp->nsample_type);
	for (size_t k = 0; k < pp->nsample_type; k++) {
		uint64_t sum = 0;
		for (size_t i = 0; i < pp->nsample; i++)
			if (k < pp->sample[i].nvalue)
				sum += (uint64_t)pp->sample[i].value[k];
		rc |= pd_clickhouse_rb_i64(b, (int64_t)sum);
	}
	w->nrows[T_PROFILES]++;
	return rc ? PD_ENOMEM : 0;
}

int pd_clickhouse_writer_append(struct pd_clickhouse_writer *w, const struct pd_labels *ls,
				int64_t ts_ms, const struct pd_pprof_profile *p, struct pd_err *err)
{
	struct take t;
	memset(&t, 0, sizeof(t));
	size_t mark[NTABLES], nmark[NTABLES];
	for (int i = 0; i < NTABLES; i++) {
		mark[i] = w->rows[i].len;
		nmark[i] = w->nrows[i];
	}
	pd_u64map_init(&t.fn_ix);
	pd_u64map_init(&t.map_ix);
	pd_u64map_init(&t.loc_ix);
	pd_u64map_init(&t.seen);
	int rc = pd_pprof_parts_get(p, &t.parts, err);
	if (rc)
		goto out;
	struct pd_pprof_parts *pp = &t.parts;
	rc = PD_ENOMEM;
	t.str = calloc(pp->nstrings + 1, sizeof(uint64_t));
	t.fn = calloc(pp->nfunction + 1, sizeof(uint64_t));
	t.map = calloc(pp->nmapping + 1, sizeof(uint64_t));
	t.loc = calloc(pp->nlocation + 1, sizeof(uint64_t));
	if (!t.str || !t.fn || !t.map || !t.loc)
		goto nomem;
	for (size_t i = 1; i < pp->nstrings; i++)
		t.str[i] = pd_clickhouse_string_id(pp->strings[i], pp->string_len[i]);
	struct hasher h;
	for (size_t i = 0; i < pp->nfunction; i++) {
		const struct pd_pprof_pfunction *f = &pp->function[i];
		h_init(&h, SEED_FUNCTION);
		h_u64(&h, sid(&t, f->name));
		h_u64(&h, sid(&t, f->system_name));
		h_u64(&h, sid(&t, f->filename));
		h_u64(&h, (uint64_t)f->start_line);
		t.fn[i] = h_done(&h);
		if (pd_u64map_put(&t.fn_ix, f->id, (uint32_t)i + 1))
			goto nomem;
	}
	for (size_t i = 0; i < pp->nmapping; i++) {
		const struct pd_pprof_pmapping *m = &pp->mapping[i];
		h_init(&h, SEED_MAPPING);
		h_u64(&h, m->memory_start);
		h_u64(&h, m->memory_limit);
		h_u64(&h, m->file_offset);
		h_u64(&h, sid(&t, m->filename));
		h_u64(&h, sid(&t, m->build_id));
		h_u64(&h, (uint64_t)m->has_functions | (uint64_t)m->has_filenames << 8 |
				  (uint64_t)m->has_line_numbers << 16 |
				  (uint64_t)m->has_inline_frames << 24);
		t.map[i] = h_done(&h);
		if (pd_u64map_put(&t.map_ix, m->id, (uint32_t)i + 1))
			goto nomem;
	}
	for (size_t i = 0; i < pp->nlocation; i++) {
		const struct pd_pprof_plocation *l = &pp->location[i];
		h_init(&h, SEED_LOCATION);
		h_u64(&h, id_of(&t.map_ix, t.map, l->mapping_id));
		h_u64(&h, l->address);
		h_u64(&h, l->is_folded);
		for (size_t k = 0; k < l->nline; k++) {
			h_u64(&h, id_of(&t.fn_ix, t.fn, l->line[k].function_id));
			h_u64(&h, (uint64_t)l->line[k].line);
			h_u64(&h, (uint64_t)l->line[k].column);
		}
		t.loc[i] = h_done(&h);
		if (pd_u64map_put(&t.loc_ix, l->id, (uint32_t)i + 1))
			goto nomem;
	}
	if ((rc = add_rows(w, &t, ls, ts_ms, pd_labels_hash(ls))))
		goto nomem;
	/* the ids of this profile's rows are now part of the batch */
	for (size_t i = 0; i < t.seen.cap; i++)
		if (t.seen.keys[i] && pd_u64map_put(&w->pending, t.seen.keys[i], 1))
			goto nomem;
	w->profiles++;
	rc = 0;
	size_t bytes = 0;
	for (int i = 0; i < NTABLES; i++)
		bytes += w->rows[i].len;
	if (w->profiles >= w->batch_profiles || bytes >= w->batch_bytes)
		rc = pd_clickhouse_writer_flush(w, err);
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "clickhouse writer: out of memory adding a profile");
	for (int i = 0; i < NTABLES; i++) {
		w->rows[i].len = mark[i];
		w->nrows[i] = nmark[i];
	}
out:
	free(t.str);
	free(t.fn);
	free(t.map);
	free(t.loc);
	pd_u64map_fini(&t.fn_ix);
	pd_u64map_fini(&t.map_ix);
	pd_u64map_fini(&t.loc_ix);
	pd_u64map_fini(&t.seen);
	pd_pprof_parts_fini(&t.parts);
	return rc;
}

int pd_clickhouse_writer_flush(struct pd_clickhouse_writer *w, struct pd_err *err)
{
	/* the tables that others refer to first, samples last: a reader that sees a
	 * sample finds what it needs */
	for (int t = 0; t < NTABLES; t++) {
		if (!w->nrows[t])
			continue;
		char sql[128];
		snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", w->c->database,
			 table_name[t]);
		int rc = pd_clickhouse_exec(w->c, sql, w->rows[t].data, w->rows[t].len, NULL, err);
		if (rc)
			return rc;
		/* sent: not sent again should a later table fail */
		w->rows[t].len = 0;
		w->nrows[t] = 0;
	}
	if (w->cache.len + w->pending.len > w->cache_ids) {
		pd_u64map_fini(&w->cache);
		pd_u64map_init(&w->cache);
	}
	for (size_t i = 0; i < w->pending.cap; i++)
		if (w->pending.keys[i] && w->cache.len < w->cache_ids &&
		    pd_u64map_put(&w->cache, w->pending.keys[i], 1))
			break; /* out of memory: those ids are sent again later, harmlessly */
	pd_u64map_fini(&w->pending);
	pd_u64map_init(&w->pending);
	w->profiles = 0;
	return 0;
}
