/* v2_record_decode.c: decoding a record of a columnar value chunk: a profile
 * record rebuilt as the profile that was appended (its strings, mappings,
 * locations and functions from the chunk's tables, with the ids it went in with)
 * or as a view in chunk terms for merging by stack id; a repeat, or a run of
 * them, as the profile record it stands for with its own time; opaque bytes as
 * they were kept. Layout: docs/format/chunks.md, "Records", "Repeats" and
 * "Runs". */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

void v2_decoded_fini(struct v2_decoded *d)
{
	pd_arena_destroy(d->arena);
	memset(d, 0, sizeof(*d));
}

struct dec {
	const struct v2_tables *t;
	struct pd_arena *a;
	uint32_t *lstr; /* chunk string -> local index + 1 */
	const char **strs;
	size_t *slen;
	uint32_t *rev; /* local index -> chunk string */
	size_t nstrs;
	int oom;
};

/* The local index of chunk string i; -1 when i is out of range. */
static int64_t L(struct dec *d, uint64_t i)
{
	if (i >= d->t->nstr)
		return -1;
	if (!d->lstr[i]) {
		d->strs[d->nstrs] = v2_str(d->t, (uint32_t)i);
		d->slen[d->nstrs] = v2_str_len(d->t, (uint32_t)i);
		d->rev[d->nstrs] = (uint32_t)i;
		d->lstr[i] = (uint32_t)++d->nstrs;
	}
	return (int64_t)d->lstr[i] - 1;
}

#define DCORRUPT(msg) \
	do { \
		rc = pd_err_set(err, PD_ECORRUPT, "value chunk record: %s", msg); \
		goto out; \
	} while (0)

/* Decodes the profile record at r (after its kind byte), as v2_record_decode. */
static int decode_profile(const struct v2_tables *t, struct v2_prev *prev, struct v2_rd *r,
			  int want, struct v2_decoded *out, struct pd_err *err)
{
	int rc = 0;
	if (want == V2_WANT_STATE)
		return v2_record_step(t, prev, r, err);
	struct pd_arena *a = out->arena = pd_arena_create(0);
	if (!a)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	struct dec d = {.t = t, .a = a};
	struct pd_pprof_parts *pp = &out->parts;
	d.lstr = pd_arena_calloc(a, t->nstr + 1, sizeof(*d.lstr));
	d.strs = pd_arena_calloc(a, t->nstr + 1, sizeof(*d.strs));
	d.slen = pd_arena_calloc(a, t->nstr + 1, sizeof(*d.slen));
	d.rev = pd_arena_calloc(a, t->nstr + 1, sizeof(*d.rev));
	uint64_t *map_id_of = pd_arena_calloc(a, t->nmap + 1, sizeof(uint64_t)); /* 0: not in profile */
	uint64_t *fn_id_of = pd_arena_calloc(a, t->nfn + 1, sizeof(uint64_t));
	uint64_t *loc_id_of = pd_arena_calloc(a, t->nloc + 1, sizeof(uint64_t));
	uint32_t *loc_pos = pd_arena_calloc(a, t->nloc + 1, sizeof(uint32_t)); /* position + 1 */
	uint32_t *fn_pos = pd_arena_calloc(a, t->nfn + 1, sizeof(uint32_t));
	if (!d.lstr || !d.strs || !d.slen || !d.rev || !map_id_of || !fn_id_of || !loc_id_of || !loc_pos ||
	    !fn_pos)
		goto nomem;
	if (t->nstr == 0)
		DCORRUPT("the chunk has no strings");
	L(&d, 0);

	unsigned flags = (unsigned)v2_uv(r);
	if (flags & ~(unsigned)F_ALL)
		DCORRUPT("unknown flags");
	pp->time_nanos = v2_time_of(prev, v2_sv(r));
	pp->duration_nanos = v2_sv(r);
	pp->period = v2_sv(r);
	if (flags & F_PERIOD_TYPE) {
		pp->has_period_type = 1;
		pp->period_type.type = L(&d, v2_uv(r));
		pp->period_type.unit = L(&d, v2_uv(r));
		if (pp->period_type.type < 0 || pp->period_type.unit < 0)
			DCORRUPT("period type refers to a missing string");
	}
	pp->nsample_type = v2_count(r, 2);
	if (!(pp->sample_type = pd_arena_calloc(a, pp->nsample_type + 1, sizeof(*pp->sample_type))))
		goto nomem;
	for (size_t i = 0; i < pp->nsample_type; i++) {
		pp->sample_type[i].type = L(&d, v2_uv(r));
		pp->sample_type[i].unit = L(&d, v2_uv(r));
		if (pp->sample_type[i].type < 0 || pp->sample_type[i].unit < 0)
			DCORRUPT("a sample type refers to a missing string");
	}
	int64_t hs[4];
	for (int i = 0; i < 4; i++)
		if ((hs[i] = L(&d, v2_uv(r))) < 0)
			DCORRUPT("a header field refers to a missing string");
	pp->default_sample_type = hs[0];
	pp->drop_frames = hs[1];
	pp->keep_frames = hs[2];
	pp->doc_url = hs[3];
	pp->ncomment = v2_count(r, 1);
	if (!(pp->comment = pd_arena_calloc(a, pp->ncomment + 1, sizeof(*pp->comment))))
		goto nomem;
	for (size_t i = 0; i < pp->ncomment; i++)
		if ((pp->comment[i] = L(&d, v2_uv(r))) < 0)
			DCORRUPT("a comment refers to a missing string");

	/* mappings */
	uint32_t *map_idx;
	uint64_t *map_id;
	size_t nmap;
	if (flags & F_MAP_SAME) {
		if (!prev->valid)
			DCORRUPT("mappings refer to a previous profile that is not there");
		nmap = prev->nmap;
		map_idx = pd_arena_calloc(a, nmap + 1, sizeof(*map_idx));
		map_id = pd_arena_calloc(a, nmap + 1, sizeof(*map_id));
		if (!map_idx || !map_id)
			goto nomem;
		memcpy(map_idx, prev->map_idx, nmap * sizeof(*map_idx));
		memcpy(map_id, prev->map_id, nmap * sizeof(*map_id));
	} else {
		nmap = v2_count(r, 1);
		map_idx = pd_arena_calloc(a, nmap + 1, sizeof(*map_idx));
		map_id = pd_arena_calloc(a, nmap + 1, sizeof(*map_id));
		if (!map_idx || !map_id)
			goto nomem;
		const char *why = v2_read_map_list(t, r, flags, nmap, map_idx, map_id);
		if (why)
			DCORRUPT(why);
	}
	pp->nmapping = nmap;
	if (!(pp->mapping = pd_arena_calloc(a, nmap + 1, sizeof(*pp->mapping))))
		goto nomem;
	for (size_t i = 0; i < nmap; i++) {
		if (map_id_of[map_idx[i]] || map_id[i] == 0)
			DCORRUPT("a mapping is listed twice or has id 0");
		map_id_of[map_idx[i]] = map_id[i];
		const struct v2_mapping *m = &t->map[map_idx[i]];
		struct pd_pprof_pmapping *o = &pp->mapping[i];
		o->id = map_id[i];
		o->memory_start = m->start;
		o->memory_limit = m->limit;
		o->file_offset = m->offset;
		o->filename = L(&d, m->filename);
		o->build_id = L(&d, m->build_id);
		o->has_functions = m->flags & 1;
		o->has_filenames = (m->flags >> 1) & 1;
		o->has_line_numbers = (m->flags >> 2) & 1;
		o->has_inline_frames = (m->flags >> 3) & 1;
	}

	/* samples */
	size_t ns = v2_count(r, 1), nv = pp->nsample_type;
	uint32_t *stacks = pd_arena_calloc(a, ns + 1, sizeof(*stacks));
	int64_t *vals = pd_arena_calloc(a, ns * nv + 1, sizeof(*vals));
	pp->nsample = ns;
	pp->sample = pd_arena_calloc(a, ns + 1, sizeof(*pp->sample));
	if (!stacks || !vals || !pp->sample)
		goto nomem;
	size_t nlocs_total = 0;
	for (size_t i = 0; i < ns; i++) {
		uint64_t s = v2_uv(r);
		if (s > t->nnode)
			DCORRUPT("a stack id is out of range");
		stacks[i] = (uint32_t)s;
		if (want != V2_WANT_PROFILE)
			continue; /* a view or the state keeps stack ids: no stack is walked */
		size_t depth = 0;
		for (uint32_t nd = (uint32_t)s; nd; nd = t->node[nd - 1].parent)
			depth++;
		nlocs_total += depth;
		pp->sample[i].nlocation = depth;
	}
	if (r->bad)
		DCORRUPT("truncated samples");
	struct v2_prev_view pview = {0};
	const int64_t **pvs = NULL;
	prev->col_at = r->pos;
	prev->col_ns = ns;
	prev->col_nv = nv;
	for (size_t j = 0; j < nv; j++) {
		uint8_t mode = v2_byte(r);
		size_t hole = SIZE_MAX;
		if (mode > COL_RAW_HOLE ||
		    ((mode == COL_DELTA || mode == COL_DELTA_HOLE) &&
		     !(prev->valid && prev->nvalues == nv)) ||
		    (mode == COL_PERIOD && j == 0)) {
			free(pvs);
			v2_prev_view_fini(&pview);
			DCORRUPT("bad value column mode");
		}
		if (mode >= COL_DELTA_HOLE) {
			const char *why = v2_col_hole(prev, r, ns, nv, &hole);
			if (why) {
				free(pvs);
				v2_prev_view_fini(&pview);
				DCORRUPT(why);
			}
			mode = mode == COL_DELTA_HOLE ? COL_DELTA : COL_RAW;
		}
		if (mode == COL_DELTA && !pvs) {
			if (!(pvs = malloc((ns + 1) * sizeof(*pvs))) ||
			    v2_prev_lookup(prev, stacks, ns, pvs, &pview)) {
				free(pvs);
				pvs = NULL;
				goto nomem;
			}
		}
		if (mode == COL_PERIOD) {
			for (size_t i = 0; i < ns; i++)
				vals[i * nv + j] =
				    (int64_t)((uint64_t)vals[i * nv] * (uint64_t)pp->period);
			continue;
		}
		for (size_t i = 0; i < ns; i++) {
			if (i == hole)
				continue;
			int64_t v = v2_sv(r);
			if (mode == COL_DELTA)
				v = (int64_t)((uint64_t)v + (uint64_t)(pvs[i] ? pvs[i][j] : 0));
			vals[i * nv + j] = v;
		}
		if (hole != SIZE_MAX)
			v2_fill_hole(prev, vals, ns, nv, j, hole);
	}
	prev->col_end = r->pos;
	free(pvs);
	v2_prev_view_fini(&pview);
	if (want != V2_WANT_PROFILE) {
		/* the delta state, and for a view the record in chunk terms: step over
		 * the rest of the record */
		struct v2_view *v = &out->view;
		if (want == V2_WANT_VIEW) {
			v->label_off = pd_arena_calloc(a, ns + 1, sizeof(*v->label_off));
			if (!v->label_off)
				goto nomem;
		}
		if (flags & F_LABELS) {
			struct pd_buf lb;
			pd_buf_init(&lb, 0);
			for (size_t i = 0; i < ns; i++) {
				for (size_t k = v2_count(r, 4); k > 0; k--) {
					uint64_t key = v2_uv(r), str = v2_uv(r);
					int64_t num = v2_sv(r);
					uint64_t unit = v2_uv(r);
					if (key >= t->nstr || str >= t->nstr || unit >= t->nstr) {
						pd_buf_fini(&lb);
						DCORRUPT("a sample label refers to a missing string");
					}
					if (want == V2_WANT_VIEW) {
						uint64_t q[4] = {key, str, (uint64_t)num, unit};
						if (pd_buf_append(&lb, q, sizeof(q))) {
							pd_buf_fini(&lb);
							goto nomem;
						}
					}
				}
				if (want == V2_WANT_VIEW)
					v->label_off[i + 1] = (uint32_t)(lb.len / (4 * sizeof(uint64_t)));
			}
			if (want == V2_WANT_VIEW && lb.len) {
				v->labels = pd_arena_alloc(a, lb.len);
				if (!v->labels) {
					pd_buf_fini(&lb);
					goto nomem;
				}
				memcpy(v->labels, lb.data, lb.len);
			}
			pd_buf_fini(&lb);
		}
		int need_locs = !(flags & F_LOC_SEQ) || ((flags & F_FN_DERIVED) && !(flags & F_FN_SEQ));
		uint32_t *lo = NULL;
		size_t nl = 0, nf = 0;
		if (!(flags & F_LOC_DERIVED)) {
			nl = v2_count(r, 1);
			if (!(lo = pd_arena_calloc(a, nl + 1, sizeof(*lo))))
				goto nomem;
			for (size_t k = 0; k < nl; k++)
				if ((lo[k] = (uint32_t)v2_uv(r)) >= t->nloc)
					DCORRUPT("a location index is out of range");
		} else if (need_locs) {
			uint8_t *seen = pd_arena_calloc(a, t->nloc + 1, 1);
			if (!seen || !(lo = pd_arena_calloc(a, t->nloc + 1, sizeof(*lo))))
				goto nomem;
			for (size_t i = 0; i < ns; i++)
				for (uint32_t nd = stacks[i]; nd; nd = t->node[nd - 1].parent) {
					uint32_t li = t->node[nd - 1].location;
					if (!seen[li]++)
						lo[nl++] = li;
				}
		}
		if (!(flags & F_LOC_SEQ))
			for (size_t k = nl; k > 0; k--)
				v2_uv(r);
		if (!(flags & F_FN_DERIVED)) {
			nf = v2_count(r, 1);
			for (size_t k = nf; k > 0; k--)
				v2_uv(r);
		} else if (!(flags & F_FN_SEQ)) {
			uint8_t *seen = pd_arena_calloc(a, t->nfn + 1, 1);
			if (!seen)
				goto nomem;
			for (size_t i = 0; i < nl; i++) {
				const struct v2_location *l = &t->loc[lo[i]];
				for (uint32_t k = 0; k < l->nline; k++)
					if (!seen[t->line[l->line + k].function]++)
						nf++;
			}
		}
		if (!(flags & F_FN_SEQ))
			for (size_t k = nf; k > 0; k--)
				v2_uv(r);
		if (r->bad)
			DCORRUPT("truncated");
		if (v2_prev_set(prev, pp->time_nanos, map_idx, map_id, nmap, stacks, vals, ns, nv))
			goto nomem;
		if (want != V2_WANT_VIEW) {
			v2_decoded_fini(out);
			return 0;
		}
		v->has_period_type = pp->has_period_type;
		v->period_type[0] = pp->has_period_type ? d.rev[pp->period_type.type] : 0;
		v->period_type[1] = pp->has_period_type ? d.rev[pp->period_type.unit] : 0;
		v->time_nanos = pp->time_nanos;
		v->duration_nanos = pp->duration_nanos;
		v->period = pp->period;
		v->nst = pp->nsample_type;
		v->st = pd_arena_calloc(a, 2 * v->nst + 1, sizeof(*v->st));
		v->ncomment = pp->ncomment;
		v->comment = pd_arena_calloc(a, v->ncomment + 1, sizeof(*v->comment));
		if (!v->st || !v->comment)
			goto nomem;
		for (size_t i = 0; i < v->nst; i++) {
			v->st[2 * i] = d.rev[pp->sample_type[i].type];
			v->st[2 * i + 1] = d.rev[pp->sample_type[i].unit];
		}
		for (size_t i = 0; i < v->ncomment; i++)
			v->comment[i] = d.rev[pp->comment[i]];
		v->hdr[0] = d.rev[pp->default_sample_type];
		v->hdr[1] = d.rev[pp->drop_frames];
		v->hdr[2] = d.rev[pp->keep_frames];
		v->hdr[3] = d.rev[pp->doc_url];
		v->map_idx = map_idx;
		v->nmap = nmap;
		v->stacks = stacks;
		v->values = vals;
		v->ns = ns;
		memset(pp, 0, sizeof(*pp));
		return 0;
	}
	uint64_t *locids = pd_arena_calloc(a, nlocs_total + 1, sizeof(*locids));
	uint32_t *locidx = pd_arena_calloc(a, nlocs_total + 1, sizeof(*locidx));
	if (!locids || !locidx)
		goto nomem;
	/* the samples' stacks as location table indices, leaf first; the locations
	 * in order of first use */
	size_t off = 0, nfirst = 0;
	uint32_t *first = pd_arena_calloc(a, t->nloc + 1, sizeof(*first));
	if (!first)
		goto nomem;
	for (size_t i = 0; i < ns; i++) {
		struct pd_pprof_psample *s = &pp->sample[i];
		s->location_id = locids + off;
		size_t k = 0;
		for (uint32_t nd = stacks[i]; nd; nd = t->node[nd - 1].parent) {
			uint32_t li = t->node[nd - 1].location;
			locidx[off + k++] = li;
			if (!loc_pos[li]) {
				first[nfirst++] = li;
				loc_pos[li] = (uint32_t)nfirst;
			}
		}
		off += k;
		s->value = vals + i * nv;
		s->nvalue = nv;
	}
	if (flags & F_LABELS)
		for (size_t i = 0; i < ns; i++) {
			struct pd_pprof_psample *s = &pp->sample[i];
			s->nlabel = v2_count(r, 4);
			if (s->nlabel &&
			    !(s->label = pd_arena_calloc(a, s->nlabel, sizeof(*s->label))))
				goto nomem;
			for (size_t k = 0; k < s->nlabel; k++) {
				s->label[k].key = L(&d, v2_uv(r));
				s->label[k].str = L(&d, v2_uv(r));
				s->label[k].num = v2_sv(r);
				s->label[k].num_unit = L(&d, v2_uv(r));
				if (s->label[k].key < 0 || s->label[k].str < 0 || s->label[k].num_unit < 0)
					DCORRUPT("a sample label refers to a missing string");
			}
		}

	/* locations */
	uint32_t *lorder;
	size_t nloc;
	if (flags & F_LOC_DERIVED) {
		lorder = first;
		nloc = nfirst;
	} else {
		nloc = v2_count(r, 1);
		if (!(lorder = pd_arena_calloc(a, nloc + 1, sizeof(*lorder))))
			goto nomem;
		memset(loc_pos, 0, (t->nloc + 1) * sizeof(*loc_pos));
		for (size_t i = 0; i < nloc; i++) {
			uint64_t v = v2_uv(r);
			if (v >= t->nloc || loc_pos[v])
				DCORRUPT("a location index is out of range or listed twice");
			lorder[i] = (uint32_t)v;
			loc_pos[v] = (uint32_t)i + 1;
		}
	}
	pp->nlocation = nloc;
	if (!(pp->location = pd_arena_calloc(a, nloc + 1, sizeof(*pp->location))))
		goto nomem;
	size_t nlines = 0;
	for (size_t i = 0; i < nloc; i++) {
		uint64_t id = flags & F_LOC_SEQ ? i + 1 : v2_uv(r);
		if (id == 0)
			DCORRUPT("a location has id 0");
		loc_id_of[lorder[i]] = id;
		pp->location[i].id = id;
		nlines += t->loc[lorder[i]].nline;
	}
	for (size_t i = 0; i < off; i++) {
		if (!loc_id_of[locidx[i]])
			DCORRUPT("a sample uses a location the profile does not list");
		locids[i] = loc_id_of[locidx[i]];
	}
	/* functions */
	uint32_t *forder;
	size_t nfn = 0;
	if (flags & F_FN_DERIVED) {
		if (!(forder = pd_arena_calloc(a, t->nfn + 1, sizeof(*forder))))
			goto nomem;
		for (size_t i = 0; i < nloc; i++) {
			const struct v2_location *l = &t->loc[lorder[i]];
			for (uint32_t k = 0; k < l->nline; k++) {
				uint32_t f = t->line[l->line + k].function;
				if (!fn_pos[f]) {
					forder[nfn++] = f;
					fn_pos[f] = (uint32_t)nfn;
				}
			}
		}
	} else {
		nfn = v2_count(r, 1);
		if (!(forder = pd_arena_calloc(a, nfn + 1, sizeof(*forder))))
			goto nomem;
		for (size_t i = 0; i < nfn; i++) {
			uint64_t v = v2_uv(r);
			if (v >= t->nfn || fn_pos[v])
				DCORRUPT("a function index is out of range or listed twice");
			forder[i] = (uint32_t)v;
			fn_pos[v] = (uint32_t)i + 1;
		}
	}
	pp->nfunction = nfn;
	if (!(pp->function = pd_arena_calloc(a, nfn + 1, sizeof(*pp->function))))
		goto nomem;
	for (size_t i = 0; i < nfn; i++) {
		uint64_t id = flags & F_FN_SEQ ? i + 1 : v2_uv(r);
		if (id == 0)
			DCORRUPT("a function has id 0");
		fn_id_of[forder[i]] = id;
		const struct v2_function *f = &t->fn[forder[i]];
		pp->function[i] = (struct pd_pprof_pfunction){id, L(&d, f->name), L(&d, f->system_name),
							      L(&d, f->filename), f->start_line};
	}
	if (r->bad)
		DCORRUPT("truncated");
	struct pd_pprof_pline *lines = pd_arena_calloc(a, nlines + 1, sizeof(*lines));
	if (!lines)
		goto nomem;
	for (size_t i = 0; i < nloc; i++) {
		const struct v2_location *l = &t->loc[lorder[i]];
		struct pd_pprof_plocation *o = &pp->location[i];
		o->address = l->address;
		o->is_folded = l->folded;
		if (l->mapping) {
			if (!(o->mapping_id = map_id_of[l->mapping - 1]))
				DCORRUPT("a location uses a mapping the profile does not list");
		}
		o->line = lines;
		o->nline = l->nline;
		for (uint32_t k = 0; k < l->nline; k++) {
			const struct v2_line *ln = &t->line[l->line + k];
			if (!(lines->function_id = fn_id_of[ln->function]))
				DCORRUPT("a location uses a function the profile does not list");
			lines->line = ln->line;
			lines->column = ln->column;
			lines++;
		}
	}
	pp->strings = d.strs;
	pp->string_len = d.slen;
	pp->nstrings = d.nstrs;
	if (v2_prev_set(prev, pp->time_nanos, map_idx, map_id, nmap, stacks, vals, ns, nv))
		goto nomem;
	return 0;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory decoding a profile");
out:
	v2_decoded_fini(out);
	return rc;
}

/* The time field of the next repeat of the run being read. */
static int64_t run_next(struct v2_prev *p)
{
	uint64_t v = 0;
	for (unsigned k = 0; k < p->run_width; k++, p->run_bit++)
		v |= (uint64_t)(p->run_p[p->run_bit / 8] >> (p->run_bit % 8) & 1) << k;
	p->run_left--;
	return (int64_t)((uint64_t)p->run_base + v);
}

/* Decodes a repeat (of a run or on its own) with time field `field`, as the
 * profile record it stands for: the previous body with the field spliced in
 * after the flags. */
static int repeat_decode(const struct v2_tables *t, struct v2_prev *prev, int64_t field, int want,
			 struct v2_decoded *out, struct pd_err *err)
{
	uint8_t rec[V2_REPEAT_MAX + 10];
	if (!prev->valid || !prev->has_body)
		return pd_err_set(err, PD_ECORRUPT,
				  "value chunk record: a repeat with no profile record before "
				  "it to repeat");
	size_t n = prev->body_flen;
	memcpy(rec, prev->body, n);
	/* the time field: a zigzag varint, as v2_put_sv writes it */
	uint64_t z = ((uint64_t)field << 1) ^ (uint64_t)(field >> 63);
	for (; z >= 0x80; z >>= 7)
		rec[n++] = (uint8_t)(z | 0x80);
	rec[n++] = (uint8_t)z;
	memcpy(rec + n, prev->body + prev->body_flen, prev->body_len - prev->body_flen);
	n += prev->body_len - prev->body_flen;
	struct v2_rd sr = {.p = rec, .len = n};
	int rc = decode_profile(t, prev, &sr, want, out, err);
	if (rc)
		return rc;
	if (sr.pos != sr.len) /* cannot happen: the body was a whole record */
		return pd_err_set(err, PD_ECORRUPT, "value chunk record: bad repeat");
	prev->time_delta = field; /* the body stays */
	return 0;
}

int v2_record_decode(const struct v2_tables *t, struct v2_prev *prev, struct v2_rd *r, int want,
		     struct v2_decoded *out, struct pd_err *err)
{
	memset(out, 0, sizeof(*out));
	if (prev->run_left)
		return repeat_decode(t, prev, run_next(prev), want, out, err);
	uint8_t kind = v2_byte(r);
	if (r->bad)
		return pd_err_set(err, PD_ECORRUPT, "value chunk record: truncated");
	if (kind == KIND_OPAQUE) {
		size_t n = v2_count(r, 1);
		if (r->bad || n > r->len - r->pos)
			return pd_err_set(err, PD_ECORRUPT, "value chunk record: opaque bytes truncated");
		out->opaque = 1;
		out->bytes = r->p + r->pos;
		out->len = n;
		r->pos += n;
		return 0;
	}
	if (kind == KIND_REPEAT) {
		int64_t dod = v2_sv(r);
		if (r->bad)
			return pd_err_set(err, PD_ECORRUPT, "value chunk record: repeat truncated");
		return repeat_decode(t, prev, (int64_t)((uint64_t)prev->time_delta + (uint64_t)dod),
				     want, out, err);
	}
	if (kind == KIND_RUN) {
		uint64_t n = v2_uv(r);
		int64_t base = v2_sv(r);
		unsigned w = v2_byte(r);
		if (r->bad)
			return pd_err_set(err, PD_ECORRUPT, "value chunk record: run truncated");
		if (n == 0 || n > PD_CHUNKENC_MAX_SAMPLES || w > 64)
			return pd_err_set(err, PD_ECORRUPT,
					  "value chunk record: a run of %llu repeats of %u bits",
					  (unsigned long long)n, w);
		uint64_t bits = n * w, bytes = (bits + 7) / 8;
		if (bytes > r->len - r->pos)
			return pd_err_set(err, PD_ECORRUPT, "value chunk record: run truncated");
		if (bits % 8 && r->p[r->pos + bytes - 1] >> (bits % 8))
			return pd_err_set(err, PD_ECORRUPT,
					  "value chunk record: a run's padding bits are not zero");
		prev->run_p = r->p + r->pos;
		prev->run_bit = 0;
		prev->run_width = w;
		prev->run_base = base;
		prev->run_left = (size_t)n;
		r->pos += (size_t)bytes;
		return repeat_decode(t, prev, run_next(prev), want, out, err);
	}
	if (kind != KIND_PROFILE)
		return pd_err_set(err, PD_ECORRUPT, "value chunk record: unknown kind %u", kind);
	/* where the flags and the time end, for the body a repeat may stand for */
	struct v2_rd h = *r;
	int first = !prev->valid;
	v2_uv(&h);
	size_t fend = h.pos;
	int64_t field = v2_sv(&h);
	size_t tend = h.pos, start = r->pos;
	int rc = decode_profile(t, prev, r, want, out, err);
	if (rc)
		return rc;
	v2_prev_body(prev, r->p + start, r->pos - start, fend - start, tend - fend, field, first);
	return 0;
}
