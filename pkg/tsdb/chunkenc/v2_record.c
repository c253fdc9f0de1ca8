/* v2_record.c: one profile of a columnar value chunk as a record: its header
 * fields, its mappings, and its samples as stack ids plus value columns (each
 * column raw or as the difference from the previous profile's value of the same
 * stack, whichever is smaller), its sample labels, and its location and function
 * lists (left out when they follow from the samples, as in every profile Go
 * writes). Ids are kept, so a profile comes back with the ids it went in with.
 * Bytes that do not decode as a profile are kept as they are. Layout:
 * docs/format/chunks.md. */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

void v2_prev_reset(struct v2_prev *p)
{
	p->valid = 0;
	p->nmap = p->nby = p->nvalues = 0;
	p->time_nanos = 0;
	p->has_body = 0;
	p->body_len = p->body_flen = 0;
	p->time_delta = 0;
	p->run_left = 0;
}

/* The time field of a record for time t, and the time a field stands for: the
 * difference from the base (the sample's timestamp) in a chunk of relative
 * times, else from the previous record's time (from 0 for a group's first). */
static int64_t time_field(const struct v2_prev *p, int64_t t)
{
	uint64_t from = p->rel ? (uint64_t)p->base : p->valid ? (uint64_t)p->time_nanos : 0;
	return (int64_t)((uint64_t)t - from);
}

static int64_t time_of(const struct v2_prev *p, int64_t field)
{
	uint64_t from = p->rel ? (uint64_t)p->base : p->valid ? (uint64_t)p->time_nanos : 0;
	return (int64_t)((uint64_t)field + from);
}

/* After a profile record has been coded: keeps its body (rec, len: the record
 * from its flags on; flen bytes of flags, then tlen of time) for the next record
 * to repeat, and the time difference it was written with (field; 0 when the
 * record was its group's first). */
static void prev_body(struct v2_prev *p, const uint8_t *rec, size_t len, size_t flen, size_t tlen,
		      int64_t field, int first)
{
	p->time_delta = first && !p->rel ? 0 : field;
	p->has_body = 0;
	if (len - tlen > V2_REPEAT_MAX)
		return;
	memcpy(p->body, rec, flen);
	memcpy(p->body + flen, rec + flen + tlen, len - flen - tlen);
	p->body_flen = flen;
	p->body_len = len - tlen;
	p->has_body = 1;
}

void v2_prev_fini(struct v2_prev *p)
{
	free(p->map_idx);
	free(p->map_id);
	free(p->packed);
	free(p->mark);
	free(p->dval);
	free(p->sstack);
	free(p->svals);
	free(p->sflag);
	memset(p, 0, sizeof(*p));
}

/* Most values a dense state holds (rows × values per row); past it, a state
 * falls back to the packed form, which grows with the samples only. */
#define DENSE_MAX_VALUES ((size_t)1 << 21)

/* Makes the dense table at least rows rows of cols values (cols 0: whatever
 * it holds, none when it grows); 0, or -1 when it would pass DENSE_MAX_VALUES or
 * memory runs out. Rows are marked current only by the prev_set that follows,
 * which writes them, so values need not survive a change of layout. */
static int dense_grow(struct v2_prev *p, size_t rows, size_t cols)
{
	if (rows < p->drows)
		rows = p->drows;
	if (cols && rows > DENSE_MAX_VALUES / cols)
		return -1;
	if (rows > p->drows) {
		uint32_t *m = p->mark ? realloc(p->mark, rows * sizeof(*m)) : calloc(rows, sizeof(*m));
		if (!m)
			return -1;
		if (p->mark)
			memset(m + p->drows, 0, (rows - p->drows) * sizeof(*m));
		p->mark = m;
	}
	if (rows > p->drows || cols > p->dcols) {
		free(p->dval);
		p->dval = NULL;
		p->dcols = 0;
		p->drows = rows;
		if (cols && !(p->dval = malloc(rows * cols * sizeof(*p->dval))))
			return -1;
		p->dcols = cols;
	}
	return 0;
}

void v2_prev_dense(struct v2_prev *p, size_t nnode)
{
	/* a table too large, or no memory for it: the packed form, as appenders
	 * keep it */
	p->dense = nnode < DENSE_MAX_VALUES && dense_grow(p, nnode + 1, 0) == 0;
}

/* Scratch arrays of a dense reader, grown to at least n entries. */
static int scratch(void **a, size_t *cap, size_t n, size_t size)
{
	if (n <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < n)
		c = c > SIZE_MAX / 2 / size ? n : c * 2;
	void *x = realloc(*a, c * size);
	if (!x)
		return PD_ENOMEM;
	*a = x;
	*cap = c;
	return 0;
}

/* The previous profile's values, unpacked for lookups while one record is coded. */
struct prev_view {
	uint32_t *stack;
	int64_t *values;
	size_t n, nvalues;
};

static void view_fini(struct prev_view *v)
{
	free(v->stack);
	free(v->values);
	memset(v, 0, sizeof(*v));
}

static int view_of(const struct v2_prev *p, struct prev_view *v)
{
	memset(v, 0, sizeof(*v));
	v->stack = malloc((p->nby + 1) * sizeof(*v->stack));
	v->values = malloc((p->nby * p->nvalues + 1) * sizeof(*v->values));
	if (!v->stack || !v->values) {
		view_fini(v);
		return PD_ENOMEM;
	}
	struct v2_rd r = {p->packed, p->packed_len, 0, 0};
	uint32_t st = 0;
	for (size_t i = 0; i < p->nby; i++) {
		v->stack[i] = st = (uint32_t)(st + v2_uv(&r));
		for (size_t j = 0; j < p->nvalues; j++)
			v->values[i * p->nvalues + j] = v2_sv(&r);
	}
	v->n = p->nby;
	v->nvalues = p->nvalues;
	return 0;
}

/* The previous profile's values of a stack, or NULL. */
static const int64_t *prev_values(const struct prev_view *v, uint32_t stack)
{
	size_t lo = 0, hi = v->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->stack[mid] < stack)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->n && v->stack[lo] == stack ? v->values + lo * v->nvalues : NULL;
}

/* The dense state's values of a stack, or NULL. */
static inline const int64_t *dense_values(const struct v2_prev *p, uint32_t stack)
{
	return stack < p->drows && p->mark[stack] == p->gen ? p->dval + (size_t)stack * p->nvalues
							    : NULL;
}

/* pvs[i]: the previous profile's values of stack stacks[i], or NULL; pview holds
 * what a packed state unpacks to (free with view_fini). p is valid. */
static int prev_lookup(const struct v2_prev *p, const uint32_t *stacks, size_t ns,
		       const int64_t **pvs, struct prev_view *pview)
{
	memset(pview, 0, sizeof(*pview));
	if (p->dense) {
		for (size_t i = 0; i < ns; i++)
			pvs[i] = dense_values(p, stacks[i]);
		return 0;
	}
	if (view_of(p, pview))
		return PD_ENOMEM;
	for (size_t i = 0; i < ns; i++)
		pvs[i] = prev_values(pview, stacks[i]);
	return 0;
}

struct sidx {
	uint32_t stack, i;
};

static int sidx_cmp(const void *a, const void *b)
{
	const struct sidx *x = a, *y = b;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The mapping list of prev, as the profile's (which may be prev's own). */
static int prev_set_maps(struct v2_prev *p, const uint32_t *map_idx, const uint64_t *map_id,
			 size_t nmap)
{
	if (map_idx == p->map_idx && map_id == p->map_id && nmap == p->nmap)
		return 0;
	uint32_t *mi = realloc(p->map_idx, (nmap ? nmap : 1) * sizeof(*mi));
	if (mi)
		p->map_idx = mi;
	uint64_t *md = realloc(p->map_id, (nmap ? nmap : 1) * sizeof(*md));
	if (md)
		p->map_id = md;
	if (!mi || !md)
		return PD_ENOMEM;
	if (nmap) {
		memcpy(p->map_idx, map_idx, nmap * sizeof(*map_idx));
		memcpy(p->map_id, map_id, nmap * sizeof(*map_id));
	}
	p->nmap = nmap;
	return 0;
}

/* prev_set for a dense state: the rows of the profile's stacks (its first
 * sample of each) become current, every other row stale. 1 when the table
 * would be too large: the state is then to be packed. */
static int prev_set_dense(struct v2_prev *p, const uint32_t *stacks, const int64_t *values,
			  size_t nsample, size_t nvalues)
{
	uint32_t top = 0;
	for (size_t i = 0; i < nsample; i++)
		top = stacks[i] > top ? stacks[i] : top;
	if (dense_grow(p, (size_t)top + 1, nvalues))
		return 1;
	if (++p->gen == 0) {
		memset(p->mark, 0, p->drows * sizeof(*p->mark));
		p->gen = 1;
	}
	uint32_t g = p->gen;
	for (size_t i = 0; i < nsample; i++) {
		uint32_t st = stacks[i];
		if (p->mark[st] == g)
			continue;
		p->mark[st] = g;
		if (nvalues)
			memcpy(p->dval + (size_t)st * nvalues, values + i * nvalues,
			       nvalues * sizeof(*values));
	}
	return 0;
}

/* Makes prev describe a profile: time, mappings, and values by stack. */
static int prev_set(struct v2_prev *p, int64_t time_nanos, const uint32_t *map_idx,
		    const uint64_t *map_id, size_t nmap, const uint32_t *stacks,
		    const int64_t *values, size_t nsample, size_t nvalues)
{
	p->valid = 0;
	if (prev_set_maps(p, map_idx, map_id, nmap))
		return PD_ENOMEM;
	if (p->dense) {
		if (prev_set_dense(p, stacks, values, nsample, nvalues) == 0) {
			p->nby = 0;
			p->nvalues = nvalues;
			p->time_nanos = time_nanos;
			p->valid = 1;
			return 0;
		}
		p->dense = 0; /* too large a table: packed from here on */
	}
	struct sidx *s = malloc((nsample ? nsample : 1) * sizeof(*s));
	if (!s)
		return PD_ENOMEM;
	for (size_t i = 0; i < nsample; i++)
		s[i] = (struct sidx){stacks[i], (uint32_t)i};
	qsort(s, nsample, sizeof(*s), sidx_cmp);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	size_t n = 0;
	uint32_t last = 0;
	int e = 0;
	for (size_t i = 0; i < nsample; i++) {
		if (n && last == s[i].stack)
			continue;
		e |= v2_put_uv(&b, s[i].stack - last);
		last = s[i].stack;
		for (size_t j = 0; j < nvalues; j++)
			e |= v2_put_sv(&b, values[(size_t)s[i].i * nvalues + j]);
		n++;
	}
	free(s);
	if (e) {
		pd_buf_fini(&b);
		return PD_ENOMEM;
	}
	free(p->packed);
	p->packed = pd_buf_steal(&b, &p->packed_len);
	if (p->packed_len) {
		uint8_t *x = realloc(p->packed, p->packed_len); /* exact: kept between appends */
		if (x)
			p->packed = x;
	}
	p->nby = n;
	p->nvalues = nvalues;
	p->time_nanos = time_nanos;
	p->valid = 1;
	return 0;
}

/* ---- encoding ------------------------------------------------------------------- */

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
	w |= v2_put_sv(out, time_field(prev, pp.time_nanos));
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
	struct prev_view pview = {0};
	const int64_t **pvs = delta_ok ? malloc((pp.nsample + 1) * sizeof(*pvs)) : NULL;
	if (delta_ok && (!pvs || prev_lookup(prev, stacks, pp.nsample, pvs, &pview))) {
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
	view_fini(&pview);
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
		int64_t field = time_field(prev, pp.time_nanos);
		size_t flen = v2_uv_len(flags), tlen = v2_sv_len(field);
		const uint8_t *rec = out->data + mark + 1;
		size_t rlen = out->len - mark - 1;
		int repeat = !first && prev->has_body && rlen - tlen == prev->body_len &&
			     flen == prev->body_flen && memcmp(prev->body, rec, flen) == 0 &&
			     memcmp(prev->body + flen, rec + flen + tlen, rlen - flen - tlen) == 0;
		if (prev_set(prev, pp.time_nanos, map_idx, map_id, pp.nmapping, stacks, vals,
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
			prev_body(prev, rec, rlen, flen, tlen, field, first);
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

/* ---- decoding ------------------------------------------------------------------- */

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

/* A record's mapping list after its count: nmap indices into t's mappings into idx,
 * then their ids into id (1..nmap with F_MAP_SEQ). NULL, or what is wrong. */
static const char *read_map_list(const struct v2_tables *t, struct v2_rd *r, unsigned flags,
				 size_t nmap, uint32_t *idx, uint64_t *id)
{
	for (size_t i = 0; i < nmap; i++) {
		uint64_t v = v2_uv(r);
		if (v >= t->nmap)
			return "a mapping index is out of range";
		idx[i] = (uint32_t)v;
	}
	for (size_t i = 0; i < nmap; i++)
		id[i] = flags & F_MAP_SEQ ? i + 1 : v2_uv(r);
	return NULL;
}

/* After the mode byte of a column with a hole (COL_*_HOLE): reads the hole's
 * index into *hole; NULL, or what is wrong. The profile's totals (prev->tot)
 * must hold one total a column. */
static const char *col_hole(const struct v2_prev *prev, struct v2_rd *r, size_t ns, size_t nv,
			    size_t *hole)
{
	uint64_t h = v2_uv(r);
	if (r->bad || h >= ns)
		return "a value column's hole is not one of its samples";
	if ((!prev->tot || prev->ntot != nv) && !prev->holes_free)
		return "a value column takes a value from totals that the timestamp chunk does "
		       "not give for this profile";
	*hole = (size_t)h;
	return NULL;
}

/* Sets the hole's value of column j: the column's total less the other samples'
 * values (wrapping, as the totals are summed). */
static void fill_hole(const struct v2_prev *prev, int64_t *vals, size_t ns, size_t nv, size_t j,
		      size_t hole)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < ns; i++)
		if (i != hole)
			sum += (uint64_t)vals[i * nv + j];
	uint64_t tot = prev->tot && prev->ntot == nv ? (uint64_t)prev->tot[j] : 0;
	vals[hole * nv + j] = (int64_t)(tot - sum);
}

/* Steps over the profile record at r (after its kind byte), only advancing the
 * delta state: the time, the mapping list, and the values by stack. Nothing is
 * built for the profile, no string is looked up and no stack is walked (unless
 * the record's id lists need the counts). Every index the state depends on, and
 * every string and table index the record holds, is still range-checked and the
 * record's extent walked exactly, so a damaged record is an error; only checks
 * that concern the profile itself (ids, duplicates in its lists) are left to the
 * read of that profile. */
static int record_step(const struct v2_tables *t, struct v2_prev *prev, struct v2_rd *r,
		       struct pd_err *err)
{
	int rc = 0;
	struct prev_view pview = {0};
	int unpacked = 0;
	if (t->nstr == 0)
		DCORRUPT("the chunk has no strings");
	unsigned flags = (unsigned)v2_uv(r);
	if (flags & ~(unsigned)F_ALL)
		DCORRUPT("unknown flags");
	int64_t time_nanos = time_of(prev, v2_sv(r));
	v2_sv(r); /* duration_nanos */
	int64_t period = v2_sv(r);
	if (flags & F_PERIOD_TYPE) {
		uint64_t a = v2_uv(r), b = v2_uv(r);
		if (a >= t->nstr || b >= t->nstr)
			DCORRUPT("period type refers to a missing string");
	}
	size_t nv = v2_count(r, 2);
	for (size_t i = 0; i < nv; i++) {
		uint64_t a = v2_uv(r), b = v2_uv(r);
		if (a >= t->nstr || b >= t->nstr)
			DCORRUPT("a sample type refers to a missing string");
	}
	for (int i = 0; i < 4; i++)
		if (v2_uv(r) >= t->nstr)
			DCORRUPT("a header field refers to a missing string");
	for (size_t i = v2_count(r, 1); i > 0; i--)
		if (v2_uv(r) >= t->nstr)
			DCORRUPT("a comment refers to a missing string");

	/* mappings: kept in prev for a later record's flag 2 */
	if (flags & F_MAP_SAME) {
		if (!prev->valid)
			DCORRUPT("mappings refer to a previous profile that is not there");
	} else {
		size_t nmap = v2_count(r, 1);
		uint32_t *mi = realloc(prev->map_idx, (nmap ? nmap : 1) * sizeof(*mi));
		if (mi)
			prev->map_idx = mi;
		uint64_t *md = realloc(prev->map_id, (nmap ? nmap : 1) * sizeof(*md));
		if (md)
			prev->map_id = md;
		if (!mi || !md ||
		    scratch((void **)&prev->sflag, &prev->sflag_cap, t->nmap + 1, sizeof(uint8_t)))
			goto nomem;
		prev->nmap = nmap; /* on an error below the state is invalid anyway */
		const char *why = read_map_list(t, r, flags, nmap, mi, md);
		if (why)
			DCORRUPT(why);
		memset(prev->sflag, 0, t->nmap + 1);
		for (size_t i = 0; i < nmap; i++) {
			if (prev->sflag[mi[i]] || md[i] == 0)
				DCORRUPT("a mapping is listed twice or has id 0");
			prev->sflag[mi[i]] = 1;
		}
	}

	/* samples: stacks, then the value columns */
	size_t ns = v2_count(r, 1);
	if (scratch((void **)&prev->sstack, &prev->sstack_cap, ns + 1, sizeof(uint32_t)) ||
	    (nv && ns > SIZE_MAX / sizeof(int64_t) / nv) ||
	    scratch((void **)&prev->svals, &prev->svals_cap, ns * nv + 1, sizeof(int64_t)))
		goto nomem;
	uint32_t *stacks = prev->sstack;
	int64_t *vals = prev->svals;
	for (size_t i = 0; i < ns; i++) {
		uint64_t v = v2_uv(r);
		if (v > t->nnode)
			DCORRUPT("a stack id is out of range");
		stacks[i] = (uint32_t)v;
	}
	if (r->bad)
		DCORRUPT("truncated samples");
	int delta_ok = prev->valid && prev->nvalues == nv;
	prev->col_at = r->pos;
	prev->col_ns = ns;
	prev->col_nv = nv;
	for (size_t j = 0; j < nv; j++) {
		uint8_t mode = v2_byte(r);
		size_t hole = SIZE_MAX;
		if (mode > COL_RAW_HOLE || ((mode == COL_DELTA || mode == COL_DELTA_HOLE) && !delta_ok) ||
		    (mode == COL_PERIOD && j == 0))
			DCORRUPT("bad value column mode");
		if (mode >= COL_DELTA_HOLE) {
			const char *why = col_hole(prev, r, ns, nv, &hole);
			if (why)
				DCORRUPT(why);
			mode = mode == COL_DELTA_HOLE ? COL_DELTA : COL_RAW;
		}
		if (mode == COL_PERIOD) {
			for (size_t i = 0; i < ns; i++)
				vals[i * nv + j] =
				    (int64_t)((uint64_t)vals[i * nv] * (uint64_t)period);
		} else if (mode == COL_RAW) {
			for (size_t i = 0; i < ns; i++)
				if (i != hole)
					vals[i * nv + j] = v2_sv(r);
		} else if (prev->dense) {
			for (size_t i = 0; i < ns; i++) {
				if (i == hole)
					continue;
				const int64_t *pv = dense_values(prev, stacks[i]);
				vals[i * nv + j] =
				    (int64_t)((uint64_t)v2_sv(r) + (uint64_t)(pv ? pv[j] : 0));
			}
		} else {
			if (!unpacked && view_of(prev, &pview))
				goto nomem;
			unpacked = 1;
			for (size_t i = 0; i < ns; i++) {
				if (i == hole)
					continue;
				const int64_t *pv = prev_values(&pview, stacks[i]);
				vals[i * nv + j] =
				    (int64_t)((uint64_t)v2_sv(r) + (uint64_t)(pv ? pv[j] : 0));
			}
		}
		if (hole != SIZE_MAX)
			fill_hole(prev, vals, ns, nv, j, hole);
	}
	prev->col_end = r->pos;
	if (flags & F_LABELS)
		for (size_t i = 0; i < ns; i++)
			for (size_t k = v2_count(r, 4); k > 0; k--) {
				uint64_t key = v2_uv(r), str = v2_uv(r);
				v2_sv(r);
				uint64_t unit = v2_uv(r);
				if (key >= t->nstr || str >= t->nstr || unit >= t->nstr)
					DCORRUPT("a sample label refers to a missing string");
			}

	/* the location and function lists: their lengths, when the record leaves
	 * them out but lists ids, follow from the samples as in a full decode */
	int need_locs = !(flags & F_LOC_SEQ) || ((flags & F_FN_DERIVED) && !(flags & F_FN_SEQ));
	uint32_t *lo = NULL;
	uint8_t *seen = NULL;
	size_t nl = 0, nf = 0;
	if (!(flags & F_LOC_DERIVED)) {
		nl = v2_count(r, 1);
		if (!(lo = malloc((nl + 1) * sizeof(*lo))))
			goto nomem;
		for (size_t k = 0; k < nl; k++)
			if ((lo[k] = (uint32_t)v2_uv(r)) >= t->nloc) {
				free(lo);
				DCORRUPT("a location index is out of range");
			}
	} else if (need_locs) {
		seen = calloc(t->nloc + 1, 1);
		lo = malloc((t->nloc + 1) * sizeof(*lo));
		if (!seen || !lo) {
			free(seen);
			free(lo);
			goto nomem;
		}
		for (size_t i = 0; i < ns; i++)
			for (uint32_t nd = stacks[i]; nd; nd = t->node[nd - 1].parent) {
				uint32_t li = t->node[nd - 1].location;
				if (!seen[li]++)
					lo[nl++] = li;
			}
		free(seen);
	}
	if (!(flags & F_LOC_SEQ))
		for (size_t k = nl; k > 0; k--)
			v2_uv(r);
	if (!(flags & F_FN_DERIVED)) {
		nf = v2_count(r, 1);
		for (size_t k = nf; k > 0; k--)
			v2_uv(r);
	} else if (!(flags & F_FN_SEQ)) {
		if (!(seen = calloc(t->nfn + 1, 1))) {
			free(lo);
			goto nomem;
		}
		for (size_t i = 0; i < nl; i++) {
			const struct v2_location *l = &t->loc[lo[i]];
			for (uint32_t k = 0; k < l->nline; k++)
				if (!seen[t->line[l->line + k].function]++)
					nf++;
		}
		free(seen);
	}
	free(lo);
	if (!(flags & F_FN_SEQ))
		for (size_t k = nf; k > 0; k--)
			v2_uv(r);
	if (r->bad)
		DCORRUPT("truncated");
	if (prev_set(prev, time_nanos, prev->map_idx, prev->map_id, prev->nmap, stacks, vals, ns, nv))
		goto nomem;
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory decoding a profile");
out:
	view_fini(&pview);
	if (!prev->dense) {
		/* a packed state is kept between appends: no scratch with it */
		free(prev->sstack);
		free(prev->svals);
		free(prev->sflag);
		prev->sstack = NULL;
		prev->svals = NULL;
		prev->sflag = NULL;
		prev->sstack_cap = prev->svals_cap = prev->sflag_cap = 0;
	}
	if (rc)
		prev->valid = 0;
	return rc;
}

/* Decodes the profile record at r (after its kind byte), as v2_record_decode. */
static int decode_profile(const struct v2_tables *t, struct v2_prev *prev, struct v2_rd *r,
			  int want, struct v2_decoded *out, struct pd_err *err)
{
	int rc = 0;
	if (want == V2_WANT_STATE)
		return record_step(t, prev, r, err);
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
	pp->time_nanos = time_of(prev, v2_sv(r));
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
		const char *why = read_map_list(t, r, flags, nmap, map_idx, map_id);
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
	struct prev_view pview = {0};
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
			view_fini(&pview);
			DCORRUPT("bad value column mode");
		}
		if (mode >= COL_DELTA_HOLE) {
			const char *why = col_hole(prev, r, ns, nv, &hole);
			if (why) {
				free(pvs);
				view_fini(&pview);
				DCORRUPT(why);
			}
			mode = mode == COL_DELTA_HOLE ? COL_DELTA : COL_RAW;
		}
		if (mode == COL_DELTA && !pvs) {
			if (!(pvs = malloc((ns + 1) * sizeof(*pvs))) ||
			    prev_lookup(prev, stacks, ns, pvs, &pview)) {
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
			fill_hole(prev, vals, ns, nv, j, hole);
	}
	prev->col_end = r->pos;
	free(pvs);
	view_fini(&pview);
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
		if (prev_set(prev, pp->time_nanos, map_idx, map_id, nmap, stacks, vals, ns, nv))
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
	if (prev_set(prev, pp->time_nanos, map_idx, map_id, nmap, stacks, vals, ns, nv))
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
	prev_body(prev, r->p + start, r->pos - start, fend - start, tend - fend, field, first);
	return 0;
}
