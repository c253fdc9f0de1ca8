/* v2_merge.c: merging a range of a columnar chunk's profiles by stack id. The
 * chunk's tables are decompressed once and each group once; each record's values
 * are added to one accumulator per (stack id, sample labels), and one profile is
 * built per run of records whose headers agree (sample types, period type,
 * comments, default type, frame filters): a chunk usually gives one profile, in
 * place of the hundred a merge of raw profiles would decode and merge one by one.
 * What pprof's merge does with that profile is what it would have done with the
 * records one by one: the same samples summed, durations added, the earliest
 * time, the largest period, every comment and mapping. */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

/* ---- accumulating ------------------------------------------------------------------ */

struct v2_merge {
	const struct v2_tables *t;
	int active;
	/* the run's header, from its first record */
	struct v2_view hdr;
	uint32_t *st;
	uint32_t *comment;
	int64_t time_nanos, duration_nanos, period;
	size_t first, count, bytes;
	/* mappings in order of first use */
	uint32_t *maps;
	size_t nmaps, maps_cap;
	uint8_t *map_seen; /* per mapping table entry */
	/* samples: key = stack id and labels */
	struct pd_buf keys;  /* per sample: stack (u64), nlabels (u64), labels (4 u64 each) */
	uint32_t *key_off;   /* start of sample i's key in keys, in u64 units */
	int64_t *values;     /* nst per sample */
	size_t nsamples, cap;
	uint32_t *slot;      /* open addressing: sample index + 1 */
	size_t slot_cap;
};

static uint64_t key_hash(const uint64_t *k, size_t n)
{
	uint64_t h = 0x6d;
	for (size_t i = 0; i < n; i++)
		h = pd_hash_u64(h, k[i]);
	return h;
}

static size_t key_len(const uint64_t *k) { return 2 + 4 * (size_t)k[1]; }

static const uint64_t *key_at(const struct v2_merge *a, size_t i)
{
	return (const uint64_t *)(const void *)a->keys.data + a->key_off[i];
}

static int acc_grow_slots(struct v2_merge *a)
{
	size_t cap = a->slot_cap ? a->slot_cap * 2 : 256;
	uint32_t *s = calloc(cap, sizeof(*s));
	if (!s)
		return -1;
	for (size_t i = 0; i < a->nsamples; i++) {
		const uint64_t *k = key_at(a, i);
		size_t j = key_hash(k, key_len(k)) & (cap - 1);
		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(a->slot);
	a->slot = s;
	a->slot_cap = cap;
	return 0;
}

/* Adds values (nst of them) under key k (klen u64s). */
static int acc_add(struct v2_merge *a, const uint64_t *k, size_t klen, const int64_t *values)
{
	size_t nst = a->hdr.nst;
	if ((a->nsamples + 1) * 2 > a->slot_cap && acc_grow_slots(a))
		return -1;
	size_t j = key_hash(k, klen) & (a->slot_cap - 1);
	for (uint32_t v; (v = a->slot[j]); j = (j + 1) & (a->slot_cap - 1)) {
		const uint64_t *o = key_at(a, v - 1);
		if (key_len(o) == klen && memcmp(o, k, klen * sizeof(*k)) == 0) {
			int64_t *dst = a->values + (size_t)(v - 1) * nst;
			for (size_t c = 0; c < nst; c++)
				dst[c] = (int64_t)((uint64_t)dst[c] + (uint64_t)values[c]);
			return 0;
		}
	}
	if (a->nsamples == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		uint32_t *ko = realloc(a->key_off, cap * sizeof(*ko));
		if (ko)
			a->key_off = ko;
		int64_t *vs = realloc(a->values, cap * (nst ? nst : 1) * sizeof(*vs));
		if (vs)
			a->values = vs;
		if (!ko || !vs)
			return -1;
		a->cap = cap;
	}
	if (a->keys.len / sizeof(uint64_t) > UINT32_MAX - klen)
		return -1;
	a->key_off[a->nsamples] = (uint32_t)(a->keys.len / sizeof(uint64_t));
	if (pd_buf_append(&a->keys, k, klen * sizeof(*k)))
		return -1;
	if (nst)
		memcpy(a->values + a->nsamples * nst, values, nst * sizeof(*values));
	a->slot[j] = (uint32_t)++a->nsamples;
	return 0;
}

static void acc_reset(struct v2_merge *a)
{
	a->active = 0;
	a->nsamples = 0;
	a->keys.len = 0;
	a->nmaps = 0;
	if (a->map_seen)
		memset(a->map_seen, 0, a->t->nmap + 1);
	if (a->slot)
		memset(a->slot, 0, a->slot_cap * sizeof(*a->slot));
	free(a->st);
	free(a->comment);
	a->st = NULL;
	a->comment = NULL;
}

static void acc_fini(struct v2_merge *a)
{
	acc_reset(a);
	pd_buf_fini(&a->keys);
	free(a->key_off);
	free(a->values);
	free(a->slot);
	free(a->maps);
	free(a->map_seen);
}

/* True when record v may join the run. */
static int same_header(const struct v2_merge *a, const struct v2_view *v)
{
	const struct v2_view *h = &a->hdr;
	return h->has_period_type == v->has_period_type &&
	       (!h->has_period_type || (h->period_type[0] == v->period_type[0] &&
					h->period_type[1] == v->period_type[1])) &&
	       h->nst == v->nst && memcmp(a->st, v->st, 2 * v->nst * sizeof(*v->st)) == 0 &&
	       h->ncomment == v->ncomment &&
	       (!v->ncomment || memcmp(a->comment, v->comment, v->ncomment * sizeof(*v->comment)) == 0) &&
	       memcmp(h->hdr, v->hdr, sizeof(h->hdr)) == 0;
}

/* ---- building the merged profile ------------------------------------------------------ */

struct build {
	const struct v2_tables *t;
	struct pd_arena *ar;
	uint32_t *lstr; /* chunk string -> local + 1 */
	const char **strs;
	size_t *slen;
	size_t nstrs;
};

static int64_t LS(struct build *b, uint64_t i)
{
	if (!b->lstr[i]) {
		b->strs[b->nstrs] = v2_str(b->t, (uint32_t)i);
		b->slen[b->nstrs] = v2_str_len(b->t, (uint32_t)i);
		b->lstr[i] = (uint32_t)++b->nstrs;
	}
	return (int64_t)b->lstr[i] - 1;
}

static int acc_emit(struct v2_merge *a, pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err)
{
	const struct v2_tables *t = a->t;
	struct pd_arena *ar = pd_arena_create(0);
	struct build b = {t, ar, NULL, NULL, NULL, 0};
	struct pd_pprof_parts pp = {0};
	int rc = 0;
	if (!ar)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	size_t nst = a->hdr.nst;
	b.lstr = pd_arena_calloc(ar, t->nstr + 1, sizeof(*b.lstr));
	b.strs = pd_arena_calloc(ar, t->nstr + 1, sizeof(*b.strs));
	b.slen = pd_arena_calloc(ar, t->nstr + 1, sizeof(*b.slen));
	uint64_t *map_id = pd_arena_calloc(ar, t->nmap + 1, sizeof(*map_id));
	uint64_t *loc_id = pd_arena_calloc(ar, t->nloc + 1, sizeof(*loc_id));
	uint64_t *fn_id = pd_arena_calloc(ar, t->nfn + 1, sizeof(*fn_id));
	uint32_t *locs = pd_arena_calloc(ar, t->nloc + 1, sizeof(*locs));
	uint32_t *fns = pd_arena_calloc(ar, t->nfn + 1, sizeof(*fns));
	pp.sample = pd_arena_calloc(ar, a->nsamples + 1, sizeof(*pp.sample));
	pp.sample_type = pd_arena_calloc(ar, nst + 1, sizeof(*pp.sample_type));
	pp.comment = pd_arena_calloc(ar, a->hdr.ncomment + 1, sizeof(*pp.comment));
	if (!b.lstr || !b.strs || !b.slen || !map_id || !loc_id || !fn_id || !locs || !fns ||
	    !pp.sample || !pp.sample_type || !pp.comment)
		goto nomem;
	LS(&b, 0);
	size_t nlocs = 0, nfns = 0, nmaps = a->nmaps;
	uint32_t *maps = pd_arena_calloc(ar, t->nmap + 1, sizeof(*maps));
	if (!maps)
		goto nomem;
	memcpy(maps, a->maps, nmaps * sizeof(*maps));
	for (size_t i = 0; i < nmaps; i++)
		map_id[maps[i]] = i + 1;
	/* samples; their locations get ids in order of first use */
	for (size_t i = 0; i < a->nsamples; i++) {
		const uint64_t *k = key_at(a, i);
		struct pd_pprof_psample *s = &pp.sample[i];
		size_t depth = 0;
		for (uint32_t nd = (uint32_t)k[0]; nd; nd = t->node[nd - 1].parent)
			depth++;
		s->location_id = pd_arena_calloc(ar, depth + 1, sizeof(*s->location_id));
		s->nlabel = (size_t)k[1];
		s->label = pd_arena_calloc(ar, s->nlabel + 1, sizeof(*s->label));
		if (!s->location_id || !s->label)
			goto nomem;
		for (uint32_t nd = (uint32_t)k[0]; nd; nd = t->node[nd - 1].parent) {
			uint32_t li = t->node[nd - 1].location;
			if (!loc_id[li]) {
				locs[nlocs++] = li;
				loc_id[li] = nlocs;
			}
			s->location_id[s->nlocation++] = loc_id[li];
		}
		s->value = a->values + i * nst;
		s->nvalue = nst;
		for (size_t l = 0; l < s->nlabel; l++) {
			const uint64_t *q = k + 2 + 4 * l;
			s->label[l] = (struct pd_pprof_plabel){LS(&b, q[0]), LS(&b, q[1]), (int64_t)q[2],
							       LS(&b, q[3])};
		}
	}
	pp.nsample = a->nsamples;
	/* locations, and their functions and mappings */
	size_t nlines = 0;
	for (size_t i = 0; i < nlocs; i++)
		nlines += t->loc[locs[i]].nline;
	pp.location = pd_arena_calloc(ar, nlocs + 1, sizeof(*pp.location));
	struct pd_pprof_pline *lines = pd_arena_calloc(ar, nlines + 1, sizeof(*lines));
	if (!pp.location || !lines)
		goto nomem;
	for (size_t i = 0; i < nlocs; i++) {
		const struct v2_location *l = &t->loc[locs[i]];
		struct pd_pprof_plocation *o = &pp.location[i];
		o->id = i + 1;
		o->address = l->address;
		o->is_folded = l->folded;
		if (l->mapping) {
			if (!map_id[l->mapping - 1]) {
				maps[nmaps++] = l->mapping - 1;
				map_id[l->mapping - 1] = nmaps;
			}
			o->mapping_id = map_id[l->mapping - 1];
		}
		o->line = lines;
		o->nline = l->nline;
		for (uint32_t k = 0; k < l->nline; k++) {
			const struct v2_line *ln = &t->line[l->line + k];
			if (!fn_id[ln->function]) {
				fns[nfns++] = ln->function;
				fn_id[ln->function] = nfns;
			}
			*lines++ = (struct pd_pprof_pline){fn_id[ln->function], ln->line, ln->column};
		}
	}
	pp.nlocation = nlocs;
	pp.function = pd_arena_calloc(ar, nfns + 1, sizeof(*pp.function));
	pp.mapping = pd_arena_calloc(ar, nmaps + 1, sizeof(*pp.mapping));
	if (!pp.function || !pp.mapping)
		goto nomem;
	for (size_t i = 0; i < nfns; i++) {
		const struct v2_function *f = &t->fn[fns[i]];
		pp.function[i] = (struct pd_pprof_pfunction){i + 1, LS(&b, f->name), LS(&b, f->system_name),
							     LS(&b, f->filename), f->start_line};
	}
	pp.nfunction = nfns;
	for (size_t i = 0; i < nmaps; i++) {
		const struct v2_mapping *m = &t->map[maps[i]];
		pp.mapping[i] = (struct pd_pprof_pmapping){
		    i + 1, m->start, m->limit, m->offset, LS(&b, m->filename), LS(&b, m->build_id),
		    m->flags & 1, (m->flags >> 1) & 1, (m->flags >> 2) & 1, (m->flags >> 3) & 1};
	}
	pp.nmapping = nmaps;
	/* header */
	pp.nsample_type = nst;
	for (size_t i = 0; i < nst; i++)
		pp.sample_type[i] = (struct pd_pprof_pvt){LS(&b, a->st[2 * i]), LS(&b, a->st[2 * i + 1])};
	pp.ncomment = a->hdr.ncomment;
	for (size_t i = 0; i < pp.ncomment; i++)
		pp.comment[i] = LS(&b, a->comment[i]);
	pp.has_period_type = a->hdr.has_period_type;
	if (pp.has_period_type)
		pp.period_type = (struct pd_pprof_pvt){LS(&b, a->hdr.period_type[0]),
						       LS(&b, a->hdr.period_type[1])};
	pp.period = a->period;
	pp.time_nanos = a->time_nanos;
	pp.duration_nanos = a->duration_nanos;
	pp.default_sample_type = LS(&b, a->hdr.hdr[0]);
	pp.drop_frames = LS(&b, a->hdr.hdr[1]);
	pp.keep_frames = LS(&b, a->hdr.hdr[2]);
	pp.doc_url = LS(&b, a->hdr.hdr[3]);
	pp.strings = b.strs;
	pp.string_len = b.slen;
	pp.nstrings = b.nstrs;
	struct pd_pprof_profile *prof;
	if ((rc = pd_pprof_parts_build(&pp, &prof, err)) == 0)
		rc = emit(ctx, prof, a->first, a->count, a->bytes);
	pd_arena_destroy(ar);
	acc_reset(a);
	return rc;
nomem:
	pd_arena_destroy(ar);
	acc_reset(a);
	return pd_err_set(err, PD_ENOMEM, "out of memory merging profiles");
}

/* Adds one decoded record (index i of the chunk, rlen bytes) to the run, emitting
 * the run first when its header differs. */
static int acc_record(struct v2_merge *a, const struct v2_view *v, size_t i, size_t rlen,
		      pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err)
{
	int rc;
	if (a->active && !same_header(a, v) && (rc = acc_emit(a, emit, ctx, err)))
		return rc;
	if (!a->active) {
		a->hdr = *v;
		a->st = malloc((2 * v->nst + 1) * sizeof(*a->st));
		a->comment = malloc((v->ncomment + 1) * sizeof(*a->comment));
		if (!a->st || !a->comment)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		memcpy(a->st, v->st, 2 * v->nst * sizeof(*v->st));
		if (v->ncomment)
			memcpy(a->comment, v->comment, v->ncomment * sizeof(*v->comment));
		a->active = 1;
		a->first = i;
		a->count = a->bytes = 0;
		a->time_nanos = a->duration_nanos = a->period = 0;
	}
	/* pprof's merge rules for the header */
	if (a->count == 0 || a->time_nanos == 0 || v->time_nanos < a->time_nanos)
		a->time_nanos = v->time_nanos;
	a->duration_nanos = (int64_t)((uint64_t)a->duration_nanos + (uint64_t)v->duration_nanos);
	if (a->count == 0 || a->period == 0 || v->period > a->period)
		a->period = v->period;
	a->count++;
	a->bytes += rlen;
	for (size_t m = 0; m < v->nmap; m++)
		if (!a->map_seen[v->map_idx[m]]) {
			a->map_seen[v->map_idx[m]] = 1;
			a->maps[a->nmaps++] = v->map_idx[m];
		}
	uint64_t kbuf[66];
	for (size_t s = 0; s < v->ns; s++) {
		size_t nl = v->label_off[s + 1] - v->label_off[s], klen = 2 + 4 * nl;
		uint64_t *k = klen <= 66 ? kbuf : malloc(klen * sizeof(*k));
		if (!k)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		k[0] = v->stacks[s];
		k[1] = nl;
		if (nl)
			memcpy(k + 2, v->labels + 4 * (size_t)v->label_off[s], 4 * nl * sizeof(*k));
		rc = acc_add(a, k, klen, v->values + s * v->nst);
		if (k != kbuf)
			free(k);
		if (rc)
			return pd_err_set(err, PD_ENOMEM, "out of memory merging profiles");
	}
	return 0;
}

/* ---- over records ------------------------------------------------------------------------ */

int v2_merge_begin(struct v2_merge **out, const struct v2_tables *t, struct pd_err *err)
{
	struct v2_merge *a = calloc(1, sizeof(*a));
	*out = NULL;
	if (!a)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	a->t = t;
	pd_buf_init(&a->keys, 0);
	a->maps = malloc((t->nmap + 1) * sizeof(*a->maps));
	a->map_seen = calloc(t->nmap + 1, 1);
	if (!a->maps || !a->map_seen) {
		acc_fini(a);
		free(a);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	*out = a;
	return 0;
}

/* Merges the records of one group (its profiles start at chunk index base) that
 * fall in [from, to). */
int v2_merge_group(struct v2_merge *a, const uint8_t *g, size_t glen, size_t base, size_t from,
		   size_t to, const int64_t *ts, int rel, const struct v2_sums *sums,
		   size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err)
{
	struct v2_prev prev = {0};
	struct v2_rd r = {g, glen, 0, 0};
	int rc = 0;
	if (rel && !ts)
		return pd_err_set(err, PD_EINVAL,
				  "value chunk: its profiles' times are relative to their timestamps, "
				  "and none were given");
	v2_prev_dense(&prev, a->t->nnode);
	prev.rel = rel;
	for (size_t i = base; i < to && (r.pos < r.len || prev.run_left) && !rc; i++) {
		struct v2_decoded d;
		size_t at = r.pos;
		int want = i >= from ? V2_WANT_VIEW : V2_WANT_STATE;
		if (rel)
			prev.base = i >= from ? (int64_t)((uint64_t)ts[i] * 1000000u) : 0;
		v2_prev_sums(&prev, sums, i);
		if ((rc = v2_record_decode(a->t, &prev, &r, want, &d, err)))
			break;
		if (i >= from) {
			if (d.opaque) {
				/* bytes that are not a profile: handed over as they decode */
				struct pd_pprof_profile *p;
				if (a->active && (rc = acc_emit(a, emit, ctx, err)))
					break;
				if (d.len > max_profile)
					rc = pd_err_set(err, PD_ETOOBIG,
							"profile of %zu bytes exceeds the limit of %zu",
							d.len, max_profile);
				else if ((rc = pd_pprof_decode(&p, d.bytes, d.len, NULL, err)) == 0)
					rc = emit(ctx, p, i, 1, d.len);
			} else {
				rc = acc_record(a, &d.view, i, r.pos - at, emit, ctx, err);
			}
		}
		v2_decoded_fini(&d);
	}
	v2_prev_fini(&prev);
	return rc;
}

int v2_merge_end(struct v2_merge *a, int emit_pending, pd_chunkenc_merge_fn emit, void *ctx,
		 struct pd_err *err)
{
	int rc = 0;
	if (!a)
		return 0;
	if (emit_pending && a->active)
		rc = acc_emit(a, emit, ctx, err);
	acc_fini(a);
	free(a);
	return rc;
}

int v2_merge_sealed(const uint8_t *chunk, size_t len, size_t from, size_t to, const int64_t *ts,
		    const struct v2_sums *sums, size_t max_profile, pd_chunkenc_merge_fn emit,
		    void *ctx, struct pd_err *err)
{
	struct v2_rd r = {chunk, len, 1, 0};
	if (len < 1 || !v2_columnar_byte(chunk[0]))
		return pd_err_set(err, PD_ECORRUPT, "value chunk is not a columnar chunk");
	int rel = chunk[0] != PD_CHUNKENC_VALUES_COLUMNAR;
	unsigned dict = chunk[0] >= PD_CHUNKENC_VALUES_COLUMNAR_DICT ? V2_DICT_GO : V2_DICT_NONE;
	if (chunk[0] == PD_CHUNKENC_VALUES_COLUMNAR_TOTALS && !sums)
		return pd_err_set(err, PD_EINVAL,
				  "value chunk: its values need the totals of its timestamp chunk, "
				  "and none were given");
	uint64_t count = v2_uv(&r), group = v2_uv(&r), tl = v2_uv(&r);
	if (r.bad || group == 0 || count > PD_CHUNKENC_MAX_SAMPLES)
		return pd_err_set(err, PD_ECORRUPT, "value chunk header is damaged");
	if (to > count)
		to = (size_t)count;
	if (from >= to)
		return 0;
	uint64_t ngroups = (count + group - 1) / group, total = tl;
	uint64_t *fl = calloc(ngroups + 1, sizeof(*fl));
	if (!fl)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (uint64_t k = 0; k < ngroups; k++)
		total += fl[k] = v2_uv(&r);
	if (r.bad || total != len - r.pos) {
		free(fl);
		return pd_err_set(err, PD_ECORRUPT, "value chunk frame table is damaged");
	}
	size_t at = r.pos;
	struct pd_buf traw;
	struct v2_tables t;
	struct v2_merge *a;
	v2_tables_init(&t);
	size_t tmax = max_profile > SIZE_MAX / 8 ? SIZE_MAX / 2 : max_profile * 8 + 4096;
	pd_buf_init(&traw, 0);
	int rc = v2_decompress_buf_dict(chunk + at, (size_t)tl, tmax, dict, &traw, "tables frame", err);
	if (!rc)
		rc = v2_tables_read(&t, traw.data, traw.len, err);
	pd_buf_fini(&traw);
	if (rc) {
		v2_tables_fini(&t);
		free(fl);
		return rc;
	}
	if ((rc = v2_merge_begin(&a, &t, err))) {
		v2_tables_fini(&t);
		free(fl);
		return rc;
	}
	uint64_t off = at + tl;
	struct pd_buf graw;
	pd_buf_init(&graw, 0);
	for (uint64_t k = 0; k < ngroups && !rc; off += fl[k], k++) {
		size_t base = (size_t)(k * group), end = base + (size_t)group;
		if (end <= from || base >= to)
			continue;
		size_t gmax = max_profile > (SIZE_MAX / 2) / group ? SIZE_MAX / 2
								    : max_profile * group + 4096;
		if ((rc = v2_group_bytes(chunk + off, (size_t)fl[k], gmax, dict != V2_DICT_NONE, &graw,
					 err)))
			break;
		rc = v2_merge_group(a, graw.data, graw.len, base, from, to, ts, rel, sums, max_profile,
				    emit, ctx, err);
	}
	pd_buf_fini(&graw);
	int r2 = v2_merge_end(a, !rc, emit, ctx, err);
	if (!rc)
		rc = r2;
	v2_tables_fini(&t);
	free(fl);
	return rc;
}
