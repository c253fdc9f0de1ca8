/* v2_record.c: encoding one profile of a columnar value chunk as a record: its
 * header fields, its mappings, and its samples as stack ids plus value columns
 * (each column raw or as the difference from the previous profile's value of the
 * same stack, whichever is smaller), its sample labels, and its location and
 * function lists (left out when they follow from the samples, as in every profile
 * Go writes). Ids are kept, so a profile comes back with the ids it went in with.
 * A record equal to the one before it but for its time is written as a repeat.
 * Bytes that do not decode as a profile are kept as they are. Layout:
 * docs/format/chunks.md. */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

/* Profile id -> index: nothing when the ids are 1..n and the index is the
 * position (as Go writes them), an array when the ids are small, otherwise a hash
 * map. */
struct idmap {
	uint32_t *dense; /* index + 1, 0: absent */
	uint64_t n;
	int ident; /* id i is index i - 1, for i in 1..n */
	struct pd_u64map sparse;
};

/* ident: the ids are 1..count and the caller puts each at its position. */
static int idmap_init(struct idmap *m, uint64_t max_id, size_t count, int ident)
{
	memset(m, 0, sizeof(*m));
	pd_u64map_init(&m->sparse);
	if (ident) {
		m->ident = 1;
		m->n = count;
		return 0;
	}
	if (max_id <= 4 * (uint64_t)count + 64) {
		m->n = max_id + 1;
		return (m->dense = calloc(m->n, sizeof(*m->dense))) ? 0 : -1;
	}
	return 0;
}

static void idmap_fini(struct idmap *m)
{
	free(m->dense);
	pd_u64map_fini(&m->sparse);
}

static int idmap_put(struct idmap *m, uint64_t id, uint32_t v)
{
	if (m->ident)
		return 0;
	if (m->dense) {
		m->dense[id] = v + 1; /* ids are below n: checked by the caller's max */
		return 0;
	}
	return pd_u64map_put(&m->sparse, id, v);
}

static int idmap_get(const struct idmap *m, uint64_t id, uint32_t *v)
{
	if (m->ident) {
		if (id - 1 >= m->n) /* id 0 wraps */
			return 0;
		*v = (uint32_t)(id - 1);
		return 1;
	}
	if (m->dense) {
		if (id >= m->n || !m->dense[id])
			return 0;
		*v = m->dense[id] - 1;
		return 1;
	}
	return pd_u64map_get(&m->sparse, id, v);
}

struct enc {
	struct v2_tables *t;
	const struct pd_pprof_parts *pp;
	int64_t *str; /* profile string index -> chunk string index, -1 until interned */
	struct idmap map_of; /* profile mapping id -> table index */
	struct idmap fn_of, loc_of; /* profile id -> position in the profile's list */
	uint8_t *map_used, *fn_used, *loc_used; /* per table entry: used by this profile */
};

/* The chunk index of profile string i (checked by validation to be in range). */
static int64_t S(struct enc *e, int64_t i)
{
	if (e->str[i] < 0)
		e->str[i] = v2_intern_str(e->t, e->pp->strings[i], e->pp->string_len[i]);
	return e->str[i];
}

/* Marks table entry idx as used by this profile; idx, or -1 on failure. */
static int64_t mark_used(uint8_t *used, int64_t idx)
{
	if (idx < 0)
		return -1;
	used[idx] = 1;
	return idx;
}

static int write_opaque(struct pd_buf *out, const uint8_t *p, size_t len)
{
	uint8_t k = KIND_OPAQUE;
	if (pd_buf_append(out, &k, 1) || v2_put_uv(out, len) || pd_buf_append(out, p, len))
		return PD_ENOMEM;
	return 0;
}

int v2_record_encode_parts(struct v2_tables *t, struct v2_prev *prev,
			   const struct pd_pprof_parts *parts, const uint8_t *p, size_t len,
			   struct pd_buf *out, struct pd_err *err)
{
	struct pd_pprof_parts pp = *parts;
	size_t mark = out->len;
	if (t->nstr == 0 && v2_intern_str(t, "", 0) != 0)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	struct enc e = {.t = t, .pp = &pp};
	uint32_t *map_idx = NULL, *fn_idx = NULL, *loc_idx = NULL, *stacks = NULL;
	uint64_t *map_id = NULL;
	int64_t *vals = NULL;
	int rc = PD_ENOMEM;
	uint64_t mx[3] = {0, 0, 0};
	for (size_t i = 0; i < pp.nmapping; i++)
		mx[0] = pp.mapping[i].id > mx[0] ? pp.mapping[i].id : mx[0];
	for (size_t i = 0; i < pp.nfunction; i++)
		mx[1] = pp.function[i].id > mx[1] ? pp.function[i].id : mx[1];
	for (size_t i = 0; i < pp.nlocation; i++)
		mx[2] = pp.location[i].id > mx[2] ? pp.location[i].id : mx[2];
	int map_seq = 1, loc_seq = 1, fn_seq = 1;
	for (size_t i = 0; i < pp.nmapping && map_seq; i++)
		map_seq = pp.mapping[i].id == i + 1;
	for (size_t i = 0; i < pp.nlocation && loc_seq; i++)
		loc_seq = pp.location[i].id == i + 1;
	for (size_t i = 0; i < pp.nfunction && fn_seq; i++)
		fn_seq = pp.function[i].id == i + 1;
	/* map_of holds table indices, the other two positions */
	int ie = idmap_init(&e.map_of, mx[0], pp.nmapping, 0);
	ie |= idmap_init(&e.fn_of, mx[1], pp.nfunction, fn_seq);
	ie |= idmap_init(&e.loc_of, mx[2], pp.nlocation, loc_seq);
	/* the tables grow by at most the profile's entries */
	e.map_used = calloc(t->nmap + pp.nmapping + 1, 1);
	e.fn_used = calloc(t->nfn + pp.nfunction + 1, 1);
	e.loc_used = calloc(t->nloc + pp.nlocation + 1, 1);
	e.str = malloc((pp.nstrings ? pp.nstrings : 1) * sizeof(*e.str));
	map_idx = malloc((pp.nmapping + 1) * sizeof(*map_idx));
	map_id = malloc((pp.nmapping + 1) * sizeof(*map_id));
	fn_idx = malloc((pp.nfunction + 1) * sizeof(*fn_idx));
	loc_idx = malloc((pp.nlocation + 1) * sizeof(*loc_idx));
	stacks = malloc((pp.nsample + 1) * sizeof(*stacks));
	vals = malloc((pp.nsample * pp.nsample_type + 1) * sizeof(*vals));
	if (ie || !e.str || !map_idx || !map_id || !fn_idx || !loc_idx || !stacks || !vals ||
	    !e.map_used || !e.fn_used || !e.loc_used)
		goto out;
	for (size_t i = 0; i < pp.nstrings; i++)
		e.str[i] = -1;
	e.str[0] = 0;

	/* tables */
	for (size_t i = 0; i < pp.nmapping; i++) {
		const struct pd_pprof_pmapping *m = &pp.mapping[i];
		int64_t fnm = S(&e, m->filename), bid = S(&e, m->build_id);
		if (fnm < 0 || bid < 0)
			goto out;
		struct v2_mapping vm = {m->memory_start, m->memory_limit, m->file_offset,
					(uint32_t)fnm, (uint32_t)bid,
					(uint8_t)((m->has_functions ? 1 : 0) | (m->has_filenames ? 2 : 0) |
						  (m->has_line_numbers ? 4 : 0) |
						  (m->has_inline_frames ? 8 : 0))};
		int64_t ix = mark_used(e.map_used, v2_intern_map(t, &vm, e.map_used));
		if (ix < 0 || idmap_put(&e.map_of, m->id, (uint32_t)ix))
			goto out;
		map_idx[i] = (uint32_t)ix;
		map_id[i] = m->id;
	}
	for (size_t i = 0; i < pp.nfunction; i++) {
		const struct pd_pprof_pfunction *f = &pp.function[i];
		int64_t a = S(&e, f->name), b = S(&e, f->system_name), c = S(&e, f->filename);
		if (a < 0 || b < 0 || c < 0)
			goto out;
		struct v2_function vf = {(uint32_t)a, (uint32_t)b, (uint32_t)c, f->start_line};
		int64_t ix = mark_used(e.fn_used, v2_intern_fn(t, &vf, e.fn_used));
		if (ix < 0 || idmap_put(&e.fn_of, f->id, (uint32_t)i))
			goto out;
		fn_idx[i] = (uint32_t)ix;
	}
	struct v2_line lines_stack[16], *lines = lines_stack;
	size_t lines_cap = 16;
	for (size_t i = 0; i < pp.nlocation; i++) {
		const struct pd_pprof_plocation *l = &pp.location[i];
		uint32_t mi = 0, v;
		if (l->mapping_id) {
			if (!idmap_get(&e.map_of, l->mapping_id, &v))
				goto bad_ref;
			mi = v + 1;
		}
		if (l->nline > lines_cap) {
			struct v2_line *nl = malloc(l->nline * sizeof(*nl));
			if (!nl)
				goto out_lines;
			if (lines != lines_stack)
				free(lines);
			lines = nl;
			lines_cap = l->nline;
		}
		for (size_t k = 0; k < l->nline; k++) {
			if (!idmap_get(&e.fn_of, l->line[k].function_id, &v))
				goto bad_ref;
			lines[k] = (struct v2_line){fn_idx[v], l->line[k].line, l->line[k].column};
		}
		struct v2_location vl = {l->address, mi, 0, (uint32_t)l->nline, l->is_folded ? 1 : 0};
		int64_t ix = mark_used(e.loc_used, v2_intern_loc(t, &vl, lines, e.loc_used));
		if (ix < 0 || idmap_put(&e.loc_of, l->id, (uint32_t)i))
			goto out_lines;
		loc_idx[i] = (uint32_t)ix;
	}
	if (lines != lines_stack)
		free(lines);
	lines = NULL;

	/* samples: stacks through the tree, root first */
	int has_labels = 0;
	for (size_t i = 0; i < pp.nsample; i++) {
		const struct pd_pprof_psample *s = &pp.sample[i];
		uint32_t parent = 0, v;
		for (size_t k = s->nlocation; k-- > 0;) {
			if (!idmap_get(&e.loc_of, s->location_id[k], &v))
				goto bad_ref;
			int64_t nd = v2_intern_node(t, parent, loc_idx[v]);
			if (nd < 0)
				goto out;
			parent = (uint32_t)nd + 1;
		}
		stacks[i] = parent;
		for (size_t j = 0; j < pp.nsample_type; j++)
			vals[i * pp.nsample_type + j] = j < s->nvalue ? s->value[j] : 0;
		if (s->nlabel)
			has_labels = 1;
	}

	/* can the location and function lists and the ids be left out? */
	unsigned flags = pp.has_period_type ? F_PERIOD_TYPE : 0;
	if (has_labels)
		flags |= F_LABELS;
	/* The lists follow from the samples when their first uses, in order, are
	 * positions 0, 1, 2, ... of the lists: a position below the count so far has
	 * been seen, since the ones before were exactly 0 .. count - 1 */
	size_t n = 0;
	int ok = 1;
	for (size_t i = 0; i < pp.nsample && ok; i++)
		for (size_t k = 0; k < pp.sample[i].nlocation && ok; k++) {
			uint32_t v = 0;
			idmap_get(&e.loc_of, pp.sample[i].location_id[k], &v);
			if (v < n)
				continue;
			ok = v == n;
			n++;
		}
	if (ok && n == pp.nlocation)
		flags |= F_LOC_DERIVED;
	n = 0;
	ok = 1;
	for (size_t i = 0; i < pp.nlocation && ok; i++)
		for (size_t k = 0; k < pp.location[i].nline && ok; k++) {
			uint32_t v = 0;
			idmap_get(&e.fn_of, pp.location[i].line[k].function_id, &v);
			if (v < n)
				continue;
			ok = v == n;
			n++;
		}
	if (ok && n == pp.nfunction)
		flags |= F_FN_DERIVED;
	if (map_seq)
		flags |= F_MAP_SEQ;
	if (loc_seq)
		flags |= F_LOC_SEQ;
	if (fn_seq)
		flags |= F_FN_SEQ;
	/* the mappings as the previous profile's, unless the record a repeat would
	 * stand for lists them: a profile equal to its group's first (which always
	 * lists them) then repeats it rather than start the repeats one record later.
	 * Small records then go on listing their mappings, a few bytes that zstd
	 * matches against the record before (bench/tsdb.sh section 1 measured no type
	 * larger for it) */
	int prev_listed = prev->has_body && !((unsigned)prev->body[0] & F_MAP_SAME);
	if (prev->valid && !prev_listed && prev->nmap == pp.nmapping &&
	    (!pp.nmapping || (memcmp(prev->map_idx, map_idx, pp.nmapping * sizeof(*map_idx)) == 0 &&
			      memcmp(prev->map_id, map_id, pp.nmapping * sizeof(*map_id)) == 0)))
		flags |= F_MAP_SAME;

	/* header */
	uint8_t kind = KIND_PROFILE;
	int w = pd_buf_append(out, &kind, 1);
	w |= v2_put_uv(out, flags);
	w |= v2_put_sv(out, v2_time_field(prev, pp.time_nanos));
	w |= v2_put_sv(out, pp.duration_nanos);
	w |= v2_put_sv(out, pp.period);
	if (pp.has_period_type) {
		int64_t a = S(&e, pp.period_type.type), b = S(&e, pp.period_type.unit);
		if (a < 0 || b < 0)
			goto out;
		w |= v2_put_uv(out, (uint64_t)a) | v2_put_uv(out, (uint64_t)b);
	}
	w |= v2_put_uv(out, pp.nsample_type);
	for (size_t i = 0; i < pp.nsample_type; i++) {
		int64_t a = S(&e, pp.sample_type[i].type), b = S(&e, pp.sample_type[i].unit);
		if (a < 0 || b < 0)
			goto out;
		w |= v2_put_uv(out, (uint64_t)a) | v2_put_uv(out, (uint64_t)b);
	}
	int64_t hs[4] = {S(&e, pp.default_sample_type), S(&e, pp.drop_frames), S(&e, pp.keep_frames),
			 S(&e, pp.doc_url)};
	for (int i = 0; i < 4; i++) {
		if (hs[i] < 0)
			goto out;
		w |= v2_put_uv(out, (uint64_t)hs[i]);
	}
	w |= v2_put_uv(out, pp.ncomment);
	for (size_t i = 0; i < pp.ncomment; i++) {
		int64_t a = S(&e, pp.comment[i]);
		if (a < 0)
			goto out;
		w |= v2_put_uv(out, (uint64_t)a);
	}
	if (!(flags & F_MAP_SAME)) {
		w |= v2_put_uv(out, pp.nmapping);
		for (size_t i = 0; i < pp.nmapping; i++)
			w |= v2_put_uv(out, map_idx[i]);
		if (!(flags & F_MAP_SEQ))
			for (size_t i = 0; i < pp.nmapping; i++)
				w |= v2_put_uv(out, map_id[i]);
	}

	/* samples */
	w |= v2_put_uv(out, pp.nsample);
	for (size_t i = 0; i < pp.nsample; i++)
		w |= v2_put_uv(out, stacks[i]);
	int delta_ok = prev->valid && prev->nvalues == pp.nsample_type;
	struct v2_prev_view pview = {0};
	const int64_t **pvs = delta_ok ? malloc((pp.nsample + 1) * sizeof(*pvs)) : NULL;
	if (delta_ok && (!pvs || v2_prev_lookup(prev, stacks, pp.nsample, pvs, &pview))) {
		free(pvs);
		goto out;
	}
	for (size_t j = 0; j < pp.nsample_type; j++) {
		size_t raw = 0, del = 0;
		int by_period = j > 0 && pp.nsample > 0 && pp.period != 0;
		for (size_t i = 0; i < pp.nsample; i++) {
			int64_t v = vals[i * pp.nsample_type + j];
			raw += v2_sv_len(v);
			if (delta_ok)
				del += v2_sv_len((int64_t)((uint64_t)v - (uint64_t)(pvs[i] ? pvs[i][j] : 0)));
			if (by_period)
				by_period = (uint64_t)v == (uint64_t)vals[i * pp.nsample_type] *
							      (uint64_t)pp.period;
		}
		uint8_t mode = delta_ok && del < raw ? COL_DELTA : COL_RAW;
		if (by_period) {
			mode = COL_PERIOD;
			w |= pd_buf_append(out, &mode, 1);
			continue;
		}
		w |= pd_buf_append(out, &mode, 1);
		for (size_t i = 0; i < pp.nsample; i++) {
			int64_t v = vals[i * pp.nsample_type + j];
			if (mode == COL_DELTA)
				v = (int64_t)((uint64_t)v - (uint64_t)(pvs[i] ? pvs[i][j] : 0));
			w |= v2_put_sv(out, v);
		}
	}
	free(pvs);
	v2_prev_view_fini(&pview);
	if (flags & F_LABELS)
		for (size_t i = 0; i < pp.nsample; i++) {
			const struct pd_pprof_psample *s = &pp.sample[i];
			w |= v2_put_uv(out, s->nlabel);
			for (size_t k = 0; k < s->nlabel; k++) {
				int64_t a = S(&e, s->label[k].key), b = S(&e, s->label[k].str),
					c = S(&e, s->label[k].num_unit);
				if (a < 0 || b < 0 || c < 0)
					goto out;
				w |= v2_put_uv(out, (uint64_t)a) | v2_put_uv(out, (uint64_t)b);
				w |= v2_put_sv(out, s->label[k].num) | v2_put_uv(out, (uint64_t)c);
			}
		}

	/* the location and function lists, when they do not follow from the samples */
	if (!(flags & F_LOC_DERIVED)) {
		w |= v2_put_uv(out, pp.nlocation);
		for (size_t i = 0; i < pp.nlocation; i++)
			w |= v2_put_uv(out, loc_idx[i]);
	}
	if (!(flags & F_LOC_SEQ))
		for (size_t i = 0; i < pp.nlocation; i++)
			w |= v2_put_uv(out, pp.location[i].id);
	if (!(flags & F_FN_DERIVED)) {
		w |= v2_put_uv(out, pp.nfunction);
		for (size_t i = 0; i < pp.nfunction; i++)
			w |= v2_put_uv(out, fn_idx[i]);
	}
	if (!(flags & F_FN_SEQ))
		for (size_t i = 0; i < pp.nfunction; i++)
			w |= v2_put_uv(out, pp.function[i].id);
	if (w)
		goto out;
	{
		int first = !prev->valid;
		int64_t field = v2_time_field(prev, pp.time_nanos);
		size_t flen = v2_uv_len(flags), tlen = v2_sv_len(field);
		const uint8_t *rec = out->data + mark + 1;
		size_t rlen = out->len - mark - 1;
		int repeat = !first && prev->has_body && rlen - tlen == prev->body_len &&
			     flen == prev->body_flen && memcmp(prev->body, rec, flen) == 0 &&
			     memcmp(prev->body + flen, rec + flen + tlen, rlen - flen - tlen) == 0;
		if (v2_prev_set(prev, pp.time_nanos, map_idx, map_id, pp.nmapping, stacks, vals,
				pp.nsample, pp.nsample_type))
			goto out;
		if (repeat) {
			/* the same body again: the kind and the time's difference from the
			 * previous record's time difference */
			int64_t dod = (int64_t)((uint64_t)field - (uint64_t)prev->time_delta);
			kind = KIND_REPEAT;
			out->len = mark;
			if (pd_buf_append(out, &kind, 1) || v2_put_sv(out, dod))
				goto out; /* cannot fail: the buffer held more */
			prev->time_delta = field;
		} else {
			v2_prev_body(prev, rec, rlen, flen, tlen, field, first);
		}
	}
	rc = 0;
	goto done;
bad_ref:
	/* validation makes this unreachable; keep the bytes rather than fail */
	out->len = mark;
	if (p)
		rc = write_opaque(out, p, len) ? PD_ENOMEM : 0;
	else
		rc = pd_err_set(err, PD_EINVAL, "a profile refers to a missing id");
	goto done;
out_lines:
	if (lines && lines != lines_stack)
		free(lines);
out:
	out->len = mark;
	rc = pd_err_set(err, PD_ENOMEM, "out of memory encoding a profile");
done:
	free(e.str);
	free(map_idx);
	free(map_id);
	free(fn_idx);
	free(loc_idx);
	free(stacks);
	free(vals);
	idmap_fini(&e.map_of);
	idmap_fini(&e.fn_of);
	idmap_fini(&e.loc_of);
	free(e.map_used);
	free(e.fn_used);
	free(e.loc_used);
	return rc;
}

int v2_profile_parts(const uint8_t *p, size_t len, struct pd_pprof_profile **prof,
		     struct pd_pprof_parts *parts, struct pd_err *err)
{
	struct pd_err derr = {0};
	*prof = NULL;
	if (pd_pprof_decode(prof, p, len, NULL, &derr) != 0)
		return 1; /* not a profile */
	if (pd_pprof_parts_get(*prof, parts, err)) {
		pd_pprof_destroy(*prof);
		*prof = NULL;
		return PD_ENOMEM;
	}
	return 0;
}

int v2_record_encode(struct v2_tables *t, struct v2_prev *prev, const uint8_t *p, size_t len,
		     struct pd_buf *out, struct pd_err *err)
{
	struct pd_pprof_profile *prof;
	struct pd_pprof_parts pp;
	int rc = v2_profile_parts(p, len, &prof, &pp, err);
	if (rc == 1) /* not a profile: kept as it is */
		return write_opaque(out, p, len) ? pd_err_set(err, PD_ENOMEM, "out of memory") : 0;
	if (rc)
		return rc;
	rc = v2_record_encode_parts(t, prev, &pp, p, len, out, err);
	pd_pprof_parts_fini(&pp);
	pd_pprof_destroy(prof);
	return rc;
}

int v2_record_opaque(const uint8_t *p, size_t len, struct pd_buf *out, struct pd_err *err)
{
	return write_opaque(out, p, len) ? pd_err_set(err, PD_ENOMEM, "out of memory") : 0;
}
