/* reader.c: reading profiles back from ClickHouse. Lists series and timestamps,
 * rebuilds one stored profile with its own ids (the profiles row maps them to
 * content ids), and merges a time range: ClickHouse sums the samples grouped by
 * stack and sample labels, and only the groups, with the stacks, locations,
 * functions, mappings and strings they use, are read and built into a profile. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"

/* ---- content rows by id ---------------------------------------------------- */

struct frow { /* function */
	uint64_t id, name, system_name, filename;
	int64_t start_line;
};
struct mrow { /* mapping */
	uint64_t id, memory_start, memory_limit, file_offset, filename, build_id;
	uint8_t flags[4];
};
struct lrow { /* location */
	uint64_t id, mapping, address;
	uint8_t is_folded;
	size_t nline;
	uint64_t *fn;
	int64_t *line, *column;
};
struct srow { /* stack */
	uint64_t id;
	size_t n;
	uint64_t *loc;
};

/* One header (profiles row). */
struct prow {
	int64_t ts, time_nanos, duration_nanos, period;
	uint8_t has_period_type;
	uint64_t period_type, period_unit, default_sample_type, drop_frames, keep_frames, doc_url;
	size_t ntypes, ncomments, nmap, nloc, nfn;
	uint64_t *types, *units, *comments;
	uint64_t *map_ids, *map_h, *loc_ids, *loc_h, *fn_ids, *fn_h;
};

struct rd {
	struct pd_clickhouse *c;
	struct pd_arena *a;
	struct pd_buf resp;
	/* strings: the rebuilt string table; str_ix maps id -> index */
	struct pd_u64map str_ix;
	const char **strs;
	size_t *slen, nstr, capstr;
	struct frow *fns;
	size_t nfns;
	struct pd_u64map fn_ix; /* id -> index + 1 */
	struct mrow *maps;
	size_t nmaps;
	struct pd_u64map map_ix;
	struct lrow *locs;
	size_t nlocs;
	struct pd_u64map loc_ix;
	struct srow *stacks;
	size_t nstacks;
	struct pd_u64map stack_ix;
};

static int rd_init(struct rd *r, struct pd_clickhouse *c, struct pd_err *err)
{
	memset(r, 0, sizeof(*r));
	r->c = c;
	pd_buf_init(&r->resp, 0);
	pd_u64map_init(&r->str_ix);
	pd_u64map_init(&r->fn_ix);
	pd_u64map_init(&r->map_ix);
	pd_u64map_init(&r->loc_ix);
	pd_u64map_init(&r->stack_ix);
	if (!(r->a = pd_arena_create(0)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	return 0;
}

static void rd_fini(struct rd *r)
{
	pd_buf_fini(&r->resp);
	pd_u64map_fini(&r->str_ix);
	pd_u64map_fini(&r->fn_ix);
	pd_u64map_fini(&r->map_ix);
	pd_u64map_fini(&r->loc_ix);
	pd_u64map_fini(&r->stack_ix);
	free(r->strs);
	free(r->slen);
	free(r->fns);
	free(r->maps);
	free(r->locs);
	free(r->stacks);
	pd_arena_destroy(r->a);
}

static int corrupt(struct pd_err *err, const char *what)
{
	return pd_err_set(err, PD_ECORRUPT, "clickhouse: malformed answer reading %s", what);
}

/* Runs a query whose answer replaces r->resp, and starts a reader over it. */
static int query(struct rd *r, struct pd_clickhouse_rbr *rb, struct pd_err *err, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));
static int query(struct rd *r, struct pd_clickhouse_rbr *rb, struct pd_err *err, const char *fmt,
		 ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *sql = n < 0 ? NULL : malloc((size_t)n + 1);
	if (!sql)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	va_start(ap, fmt);
	vsnprintf(sql, (size_t)n + 1, fmt, ap);
	va_end(ap);
	r->resp.len = 0;
	int rc = ch_select(r->c, sql, &r->resp, err);
	free(sql);
	pd_clickhouse_rbr_init(rb, r->resp.data, r->resp.len);
	return rc;
}

static uint64_t *rd_u64s(struct rd *r, struct pd_clickhouse_rbr *b, size_t *n)
{
	*n = pd_clickhouse_rbr_count(b, 8);
	uint64_t *v = pd_arena_alloc(r->a, (*n ? *n : 1) * sizeof(uint64_t));
	if (!v) {
		b->err = PD_ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < *n; i++)
		v[i] = pd_clickhouse_rbr_u64(b);
	return v;
}

static int64_t *rd_i64s(struct rd *r, struct pd_clickhouse_rbr *b, size_t *n)
{
	return (int64_t *)rd_u64s(r, b, n);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	void *q = realloc(*p, nc * size);
	if (!q)
		return PD_ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

/* The columns of a profiles row, in the order read_prow reads them. */
#define PROW_COLS                                                                              \
	"ts, time_nanos, duration_nanos, period, has_period_type, period_type, period_unit, "  \
	"sample_types, sample_units, default_sample_type, drop_frames, keep_frames, doc_url, " \
	"comments, mapping_ids, mapping_hashes, location_ids, location_hashes, function_ids, " \
	"function_hashes"

static void read_prow(struct rd *r, struct pd_clickhouse_rbr *b, struct prow *p)
{
	size_t n2;
	p->ts = pd_clickhouse_rbr_i64(b);
	p->time_nanos = pd_clickhouse_rbr_i64(b);
	p->duration_nanos = pd_clickhouse_rbr_i64(b);
	p->period = pd_clickhouse_rbr_i64(b);
	p->has_period_type = pd_clickhouse_rbr_u8(b);
	p->period_type = pd_clickhouse_rbr_u64(b);
	p->period_unit = pd_clickhouse_rbr_u64(b);
	p->types = rd_u64s(r, b, &p->ntypes);
	p->units = rd_u64s(r, b, &n2);
	if (n2 != p->ntypes)
		b->err = PD_ECORRUPT;
	p->default_sample_type = pd_clickhouse_rbr_u64(b);
	p->drop_frames = pd_clickhouse_rbr_u64(b);
	p->keep_frames = pd_clickhouse_rbr_u64(b);
	p->doc_url = pd_clickhouse_rbr_u64(b);
	p->comments = rd_u64s(r, b, &p->ncomments);
	p->map_ids = rd_u64s(r, b, &p->nmap);
	p->map_h = rd_u64s(r, b, &n2);
	if (n2 != p->nmap)
		b->err = PD_ECORRUPT;
	p->loc_ids = rd_u64s(r, b, &p->nloc);
	p->loc_h = rd_u64s(r, b, &n2);
	if (n2 != p->nloc)
		b->err = PD_ECORRUPT;
	p->fn_ids = rd_u64s(r, b, &p->nfn);
	p->fn_h = rd_u64s(r, b, &n2);
	if (n2 != p->nfn)
		b->err = PD_ECORRUPT;
}

/* Reads the content rows whose ids the subquery `ids` (a SELECT of UInt64) gives. */
static int load_content(struct rd *r, const char *ids_profiles, const char *ids_stacks,
			struct pd_err *err)
{
	const char *db = r->c->database;
	struct pd_clickhouse_rbr b;
	int rc;
	/* strings */
	if ((rc = query(r, &b, err,
			"SELECT id, any(s) FROM %s.strings WHERE id IN (SELECT arrayJoin(string_ids) AS h "
			"FROM %s.profiles WHERE %s GROUP BY h) GROUP BY id FORMAT RowBinary",
			db, db, ids_profiles)))
		return rc;
	if (grow((void **)&r->strs, &r->capstr, 1, sizeof(char *)) ||
	    !(r->slen = realloc(r->slen, r->capstr * sizeof(size_t))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	r->strs[0] = "";
	r->slen[0] = 0;
	r->nstr = 1;
	while (!b.err && b.off < b.len) {
		uint64_t id = pd_clickhouse_rbr_u64(&b);
		size_t len;
		const uint8_t *s = pd_clickhouse_rbr_string(&b, &len);
		if (b.err)
			break;
		size_t cap = r->capstr;
		if (grow((void **)&r->strs, &r->capstr, r->nstr + 1, sizeof(char *)) ||
		    (cap != r->capstr && !(r->slen = realloc(r->slen, r->capstr * sizeof(size_t)))))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		char *copy = pd_arena_strndup(r->a, (const char *)s, len);
		if (!copy || pd_u64map_put(&r->str_ix, id, (uint32_t)r->nstr))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		r->strs[r->nstr] = copy;
		r->slen[r->nstr++] = len;
	}
	if (b.err)
		return corrupt(err, "strings");
	/* functions */
	if ((rc = query(r, &b, err,
			"SELECT id, any(name), any(system_name), any(filename), any(start_line) FROM "
			"%s.functions WHERE id IN (SELECT arrayJoin(function_hashes) AS h FROM %s.profiles "
			"WHERE %s GROUP BY h) GROUP BY id FORMAT RowBinary",
			db, db, ids_profiles)))
		return rc;
	size_t cap = 0;
	while (!b.err && b.off < b.len) {
		if (grow((void **)&r->fns, &cap, r->nfns + 1, sizeof(struct frow)))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		struct frow *f = &r->fns[r->nfns];
		f->id = pd_clickhouse_rbr_u64(&b);
		f->name = pd_clickhouse_rbr_u64(&b);
		f->system_name = pd_clickhouse_rbr_u64(&b);
		f->filename = pd_clickhouse_rbr_u64(&b);
		f->start_line = pd_clickhouse_rbr_i64(&b);
		if (!b.err && pd_u64map_put(&r->fn_ix, f->id, (uint32_t)++r->nfns))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (b.err)
		return corrupt(err, "functions");
	/* mappings */
	if ((rc = query(r, &b, err,
			"SELECT id, any(memory_start), any(memory_limit), any(file_offset), "
			"any(filename), any(build_id), any(has_functions), any(has_filenames), "
			"any(has_line_numbers), any(has_inline_frames) FROM %s.mappings WHERE id IN "
			"(SELECT arrayJoin(mapping_hashes) AS h FROM %s.profiles WHERE %s GROUP BY h) GROUP BY id "
			"FORMAT RowBinary",
			db, db, ids_profiles)))
		return rc;
	cap = 0;
	while (!b.err && b.off < b.len) {
		if (grow((void **)&r->maps, &cap, r->nmaps + 1, sizeof(struct mrow)))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		struct mrow *m = &r->maps[r->nmaps];
		m->id = pd_clickhouse_rbr_u64(&b);
		m->memory_start = pd_clickhouse_rbr_u64(&b);
		m->memory_limit = pd_clickhouse_rbr_u64(&b);
		m->file_offset = pd_clickhouse_rbr_u64(&b);
		m->filename = pd_clickhouse_rbr_u64(&b);
		m->build_id = pd_clickhouse_rbr_u64(&b);
		for (int k = 0; k < 4; k++)
			m->flags[k] = pd_clickhouse_rbr_u8(&b);
		if (!b.err && pd_u64map_put(&r->map_ix, m->id, (uint32_t)++r->nmaps))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (b.err)
		return corrupt(err, "mappings");
	/* locations */
	if ((rc = query(r, &b, err,
			"SELECT id, any(mapping_id), any(address), any(is_folded), any(line_function), "
			"any(line_line), any(line_column) FROM %s.locations WHERE id IN (SELECT "
			"arrayJoin(location_hashes) AS h FROM %s.profiles WHERE %s GROUP BY h) GROUP BY id "
			"FORMAT RowBinary",
			db, db, ids_profiles)))
		return rc;
	cap = 0;
	while (!b.err && b.off < b.len) {
		if (grow((void **)&r->locs, &cap, r->nlocs + 1, sizeof(struct lrow)))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		struct lrow *l = &r->locs[r->nlocs];
		size_t n2, n3;
		l->id = pd_clickhouse_rbr_u64(&b);
		l->mapping = pd_clickhouse_rbr_u64(&b);
		l->address = pd_clickhouse_rbr_u64(&b);
		l->is_folded = pd_clickhouse_rbr_u8(&b);
		l->fn = rd_u64s(r, &b, &l->nline);
		l->line = rd_i64s(r, &b, &n2);
		l->column = rd_i64s(r, &b, &n3);
		if (n2 != l->nline || n3 != l->nline)
			b.err = PD_ECORRUPT;
		if (!b.err && pd_u64map_put(&r->loc_ix, l->id, (uint32_t)++r->nlocs))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (b.err)
		return corrupt(err, "locations");
	/* stacks */
	if ((rc = query(r, &b, err,
			"SELECT id, any(location_ids) FROM %s.stacks WHERE id IN (SELECT stack_id "
			"FROM %s.samples WHERE %s GROUP BY stack_id) GROUP BY id FORMAT RowBinary",
			db, db, ids_stacks)))
		return rc;
	cap = 0;
	while (!b.err && b.off < b.len) {
		if (grow((void **)&r->stacks, &cap, r->nstacks + 1, sizeof(struct srow)))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		struct srow *s = &r->stacks[r->nstacks];
		s->id = pd_clickhouse_rbr_u64(&b);
		s->loc = rd_u64s(r, &b, &s->n);
		if (!b.err && pd_u64map_put(&r->stack_ix, s->id, (uint32_t)++r->nstacks))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (b.err)
		return corrupt(err, "stacks");
	return 0;
}

/* The string table index of string id h; -1 when it was not read. */
static int64_t six(const struct rd *r, uint64_t h)
{
	uint32_t v;
	if (!h)
		return 0;
	return pd_u64map_get(&r->str_ix, h, &v) ? (int64_t)v : -1;
}

/* Fills the header fields of parts from p; PD_ECORRUPT names a missing string. */
static int fill_header(struct rd *r, const struct prow *p, struct pd_pprof_parts *pp,
		       struct pd_err *err)
{
	int64_t bad = 0;
#define S(h) ((bad |= six(r, h) < 0), six(r, h) < 0 ? 0 : six(r, h))
	pp->strings = r->strs;
	pp->string_len = r->slen;
	pp->nstrings = r->nstr;
	pp->nsample_type = p->ntypes;
	pp->sample_type = pd_arena_calloc(r->a, p->ntypes + 1, sizeof(struct pd_pprof_pvt));
	pp->comment = pd_arena_calloc(r->a, p->ncomments + 1, sizeof(int64_t));
	if (!pp->sample_type || !pp->comment)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < p->ntypes; i++) {
		pp->sample_type[i].type = S(p->types[i]);
		pp->sample_type[i].unit = S(p->units[i]);
	}
	pp->ncomment = p->ncomments;
	for (size_t i = 0; i < p->ncomments; i++)
		pp->comment[i] = S(p->comments[i]);
	pp->has_period_type = p->has_period_type;
	pp->period_type.type = S(p->period_type);
	pp->period_type.unit = S(p->period_unit);
	pp->period = p->period;
	pp->time_nanos = p->time_nanos;
	pp->duration_nanos = p->duration_nanos;
	pp->drop_frames = S(p->drop_frames);
	pp->keep_frames = S(p->keep_frames);
	pp->default_sample_type = S(p->default_sample_type);
	pp->doc_url = S(p->doc_url);
#undef S
	if (bad)
		return pd_err_set(err, PD_ECORRUPT,
				  "clickhouse: a string of the profile at %" PRId64
				  " is missing from the strings table",
				  p->ts);
	return 0;
}

/* Fills functions, mappings and locations of parts: entry i gets id ids[i] and the
 * content of hash h[i]; references go through the maps from hash to id (the first
 * id of that content wins). */
struct idmaps {
	struct pd_u64map fn, map, loc; /* content id -> own id */
};

static int fill_tables(struct rd *r, const uint64_t *fn_ids, const uint64_t *fn_h, size_t nfn,
		       const uint64_t *map_ids, const uint64_t *map_h, size_t nmap,
		       const uint64_t *loc_ids, const uint64_t *loc_h, size_t nloc,
		       struct pd_pprof_parts *pp, struct idmaps *im, struct pd_err *err)
{
	uint32_t v;
	pp->function = pd_arena_calloc(r->a, nfn + 1, sizeof(*pp->function));
	pp->mapping = pd_arena_calloc(r->a, nmap + 1, sizeof(*pp->mapping));
	pp->location = pd_arena_calloc(r->a, nloc + 1, sizeof(*pp->location));
	if (!pp->function || !pp->mapping || !pp->location)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int bad = 0;
#define S(h) ((bad |= six(r, h) < 0), six(r, h) < 0 ? 0 : six(r, h))
	for (size_t i = 0; i < nfn; i++) {
		if (!pd_u64map_get(&r->fn_ix, fn_h[i], &v))
			return pd_err_set(err, PD_ECORRUPT,
					  "clickhouse: function %016" PRIx64 " is missing", fn_h[i]);
		const struct frow *f = &r->fns[v - 1];
		struct pd_pprof_pfunction *o = &pp->function[i];
		o->id = fn_ids[i];
		o->name = S(f->name);
		o->system_name = S(f->system_name);
		o->filename = S(f->filename);
		o->start_line = f->start_line;
		if (!pd_u64map_get(&im->fn, fn_h[i], &v) &&
		    pd_u64map_put(&im->fn, fn_h[i], (uint32_t)i + 1))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	pp->nfunction = nfn;
	for (size_t i = 0; i < nmap; i++) {
		if (!pd_u64map_get(&r->map_ix, map_h[i], &v))
			return pd_err_set(err, PD_ECORRUPT,
					  "clickhouse: mapping %016" PRIx64 " is missing", map_h[i]);
		const struct mrow *m = &r->maps[v - 1];
		struct pd_pprof_pmapping *o = &pp->mapping[i];
		o->id = map_ids[i];
		o->memory_start = m->memory_start;
		o->memory_limit = m->memory_limit;
		o->file_offset = m->file_offset;
		o->filename = S(m->filename);
		o->build_id = S(m->build_id);
		o->has_functions = m->flags[0];
		o->has_filenames = m->flags[1];
		o->has_line_numbers = m->flags[2];
		o->has_inline_frames = m->flags[3];
		if (!pd_u64map_get(&im->map, map_h[i], &v) &&
		    pd_u64map_put(&im->map, map_h[i], (uint32_t)i + 1))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	pp->nmapping = nmap;
	for (size_t i = 0; i < nloc; i++) {
		if (!pd_u64map_get(&r->loc_ix, loc_h[i], &v))
			return pd_err_set(err, PD_ECORRUPT,
					  "clickhouse: location %016" PRIx64 " is missing", loc_h[i]);
		const struct lrow *l = &r->locs[v - 1];
		struct pd_pprof_plocation *o = &pp->location[i];
		o->id = loc_ids[i];
		o->address = l->address;
		o->is_folded = l->is_folded;
		o->mapping_id = 0;
		if (l->mapping) {
			if (!pd_u64map_get(&im->map, l->mapping, &v))
				return pd_err_set(err, PD_ECORRUPT,
						  "clickhouse: location %016" PRIx64
						  " refers to a mapping the profile lacks",
						  loc_h[i]);
			o->mapping_id = map_ids[v - 1];
		}
		o->nline = l->nline;
		o->line = pd_arena_calloc(r->a, l->nline + 1, sizeof(*o->line));
		if (!o->line)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		for (size_t k = 0; k < l->nline; k++) {
			o->line[k].function_id = 0;
			if (l->fn[k]) {
				if (!pd_u64map_get(&im->fn, l->fn[k], &v))
					return pd_err_set(err, PD_ECORRUPT,
							  "clickhouse: location %016" PRIx64
							  " refers to a function the profile lacks",
							  loc_h[i]);
				o->line[k].function_id = fn_ids[v - 1];
			}
			o->line[k].line = l->line[k];
			o->line[k].column = l->column[k];
		}
		if (!pd_u64map_get(&im->loc, loc_h[i], &v) &&
		    pd_u64map_put(&im->loc, loc_h[i], (uint32_t)i + 1))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	pp->nlocation = nloc;
#undef S
	if (bad)
		return pd_err_set(err, PD_ECORRUPT,
				  "clickhouse: a string of a function or mapping is missing");
	return 0;
}

/* Reads one sample's columns after its stack id into s. */
static int read_sample(struct rd *r, struct pd_clickhouse_rbr *b, uint64_t stack,
		       const struct idmaps *im, const uint64_t *loc_ids,
		       struct pd_pprof_psample *s, struct pd_err *err)
{
	uint32_t v;
	size_t nk, ns, nn, nu;
	s->value = rd_i64s(r, b, &s->nvalue);
	uint64_t *key = rd_u64s(r, b, &nk), *str = rd_u64s(r, b, &ns);
	int64_t *num = rd_i64s(r, b, &nn);
	uint64_t *unit = rd_u64s(r, b, &nu);
	if (b->err || ns != nk || nn != nk || nu != nk)
		return corrupt(err, "samples");
	s->nlabel = nk;
	s->label = pd_arena_calloc(r->a, nk + 1, sizeof(*s->label));
	if (!s->label)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t k = 0; k < nk; k++) {
		int64_t a = six(r, key[k]), c = six(r, str[k]), d = six(r, unit[k]);
		if (a < 0 || c < 0 || d < 0)
			return pd_err_set(err, PD_ECORRUPT,
					  "clickhouse: a sample label's string is missing");
		s->label[k] = (struct pd_pprof_plabel){a, c, num[k], d};
	}
	if (!pd_u64map_get(&r->stack_ix, stack, &v))
		return pd_err_set(err, PD_ECORRUPT, "clickhouse: stack %016" PRIx64 " is missing",
				  stack);
	const struct srow *st = &r->stacks[v - 1];
	s->nlocation = st->n;
	s->location_id = pd_arena_calloc(r->a, st->n + 1, sizeof(uint64_t));
	if (!s->location_id)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t k = 0; k < st->n; k++) {
		if (!pd_u64map_get(&im->loc, st->loc[k], &v))
			return pd_err_set(err, PD_ECORRUPT,
					  "clickhouse: stack %016" PRIx64
					  " refers to a location the profile lacks",
					  stack);
		s->location_id[k] = loc_ids[v - 1];
	}
	return 0;
}

/* ---- series and timestamps ------------------------------------------------- */

void pd_clickhouse_series_free(struct pd_labels **ls, size_t n)
{
	if (!ls)
		return;
	for (size_t i = 0; i < n; i++)
		pd_labels_destroy(ls[i]);
	free(ls);
}

int pd_clickhouse_series(struct pd_clickhouse *c, struct pd_labels ***out, size_t *n,
			 struct pd_err *err)
{
	*out = NULL;
	*n = 0;
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	struct pd_labels **v = NULL;
	size_t nv = 0, cap = 0;
	struct pd_labels_builder *lb = pd_labels_builder_create(NULL);
	char sql[256];
	snprintf(sql, sizeof(sql),
		 "SELECT series_id, any(names), any(values) FROM %s.series GROUP BY series_id "
		 "ORDER BY series_id FORMAT RowBinary",
		 c->database);
	int rc = lb ? ch_select(c, sql, &resp, err) : pd_err_set(err, PD_ENOMEM, "out of memory");
	struct pd_clickhouse_rbr b;
	pd_clickhouse_rbr_init(&b, resp.data, resp.len);
	while (!rc && b.off < b.len) {
		pd_clickhouse_rbr_u64(&b);
		size_t nn = pd_clickhouse_rbr_count(&b, 1);
		size_t start = b.off;
		for (size_t i = 0; i < nn; i++)
			pd_clickhouse_rbr_string(&b, &(size_t){0});
		size_t nvals = pd_clickhouse_rbr_count(&b, 1);
		if (b.err || nvals != nn) {
			rc = corrupt(err, "series");
			break;
		}
		struct pd_clickhouse_rbr names;
		pd_clickhouse_rbr_init(&names, b.p, b.len);
		names.off = start;
		pd_labels_builder_reset(lb, NULL);
		for (size_t i = 0; i < nn; i++) {
			size_t l1, l2;
			const uint8_t *k = pd_clickhouse_rbr_string(&names, &l1);
			const uint8_t *val = pd_clickhouse_rbr_string(&b, &l2);
			char *ks = strndup((const char *)k, l1), *vs = strndup((const char *)val, l2);
			if (!ks || !vs)
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			else
				pd_labels_builder_add(lb, ks, vs);
			free(ks);
			free(vs);
		}
		struct pd_labels *ls = NULL;
		if (!rc && grow((void **)&v, &cap, nv + 1, sizeof(*v)))
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		if (!rc && (rc = pd_labels_builder_finish(lb, &ls, err)))
			pd_err_prefix(err, "clickhouse: stored series");
		if (!rc)
			v[nv++] = ls;
	}
	pd_labels_builder_destroy(lb);
	pd_buf_fini(&resp);
	if (rc) {
		pd_clickhouse_series_free(v, nv);
		return rc;
	}
	*out = v;
	*n = nv;
	return 0;
}

int pd_clickhouse_times(struct pd_clickhouse *c, const struct pd_labels *ls, int64_t from_ms,
			int64_t to_ms, int64_t **out, size_t *n, struct pd_err *err)
{
	*out = NULL;
	*n = 0;
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "SELECT DISTINCT ts FROM %s.profiles WHERE series_id = %" PRIu64
		 " AND ts >= %" PRId64 " AND ts <= %" PRId64 " ORDER BY ts FORMAT RowBinary",
		 c->database, pd_labels_hash(ls), from_ms, to_ms);
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = ch_select(c, sql, &resp, err);
	if (!rc && resp.len % 8)
		rc = corrupt(err, "timestamps");
	if (!rc && resp.len) {
		struct pd_clickhouse_rbr b;
		pd_clickhouse_rbr_init(&b, resp.data, resp.len);
		size_t k = resp.len / 8;
		int64_t *v = malloc(k * sizeof(int64_t));
		if (!v)
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		for (size_t i = 0; v && i < k; i++)
			v[i] = pd_clickhouse_rbr_i64(&b);
		*out = v;
		*n = v ? k : 0;
	}
	pd_buf_fini(&resp);
	return rc;
}

/* ---- one profile ----------------------------------------------------------- */

int pd_clickhouse_profile(struct pd_clickhouse *c, const struct pd_labels *ls, int64_t ts_ms,
			  struct pd_pprof_profile **out, struct pd_err *err)
{
	*out = NULL;
	const char *db = c->database;
	uint64_t series = pd_labels_hash(ls);
	char where[160];
	snprintf(where, sizeof(where), "series_id = %" PRIu64 " AND ts = %" PRId64, series, ts_ms);
	struct rd r;
	struct idmaps im;
	pd_u64map_init(&im.fn);
	pd_u64map_init(&im.map);
	pd_u64map_init(&im.loc);
	struct pd_pprof_parts pp;
	memset(&pp, 0, sizeof(pp));
	struct prow p;
	struct pd_clickhouse_rbr b;
	int rc = rd_init(&r, c, err);
	if (rc)
		goto out;
	if ((rc = query(&r, &b, err, "SELECT " PROW_COLS " FROM %s.profiles WHERE %s LIMIT 1 "
				     "FORMAT RowBinary", db, where)))
		goto out;
	if (!b.len) {
		rc = pd_err_set(err, PD_ENOTFOUND, "clickhouse: no profile at %" PRId64
				" in that series", ts_ms);
		goto out;
	}
	read_prow(&r, &b, &p);
	if (b.err) {
		rc = corrupt(err, "profiles");
		goto out;
	}
	/* the row's arrays live in the arena; the response buffer is reused below */
	if ((rc = load_content(&r, where, where, err)) || (rc = fill_header(&r, &p, &pp, err)) ||
	    (rc = fill_tables(&r, p.fn_ids, p.fn_h, p.nfn, p.map_ids, p.map_h, p.nmap, p.loc_ids,
			      p.loc_h, p.nloc, &pp, &im, err)))
		goto out;
	if ((rc = query(&r, &b, err,
			"SELECT stack_id, values, label_key, label_str, label_num, label_unit FROM "
			"%s.samples WHERE %s ORDER BY ordinal LIMIT 1 BY ordinal FORMAT RowBinary",
			db, where)))
		goto out;
	size_t cap = 0;
	while (!rc && b.off < b.len) {
		if (grow((void **)&pp.sample, &cap, pp.nsample + 1, sizeof(*pp.sample))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		uint64_t stack = pd_clickhouse_rbr_u64(&b);
		rc = read_sample(&r, &b, stack, &im, p.loc_ids, &pp.sample[pp.nsample++], err);
	}
	if (!rc && (rc = pd_pprof_parts_build(&pp, out, err)))
		pd_err_prefix(err, "clickhouse: rebuilding the profile at %" PRId64, ts_ms);
out:
	free(pp.sample);
	pd_u64map_fini(&im.fn);
	pd_u64map_fini(&im.map);
	pd_u64map_fini(&im.loc);
	rd_fini(&r);
	return rc;
}

/* ---- merge over a range ---------------------------------------------------- */

/* The WHERE clause of a merge over ranges into w (NUL-terminated). */
static int ranges_where(struct pd_buf *w, const struct pd_clickhouse_range *rg, size_t n)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		rc = pd_buf_printf(w,
				   "%s(series_id = %" PRIu64 " AND ts >= %" PRId64 " AND ts <= %" PRId64
				   ")",
				   i ? " OR " : "", rg[i].series_id, rg[i].from_ms, rg[i].to_ms);
	if (!rc)
		rc = pd_buf_append(w, "", 1);
	return rc;
}

int pd_clickhouse_merge(struct pd_clickhouse *c, const struct pd_labels *ls, int64_t from_ms,
			int64_t to_ms, struct pd_pprof_profile **out, struct pd_err *err)
{
	struct pd_clickhouse_range rg = {pd_labels_hash(ls), from_ms, to_ms};
	return pd_clickhouse_merge_ranges(c, &rg, 1, out, NULL, err);
}

int pd_clickhouse_merge_ranges(struct pd_clickhouse *c, const struct pd_clickhouse_range *rg,
			       size_t nrg, struct pd_pprof_profile **out,
			       struct pd_clickhouse_merge_info *info, struct pd_err *err)
{
	*out = NULL;
	if (info)
		memset(info, 0, sizeof(*info));
	const char *db = c->database;
	struct pd_buf wb;
	pd_buf_init(&wb, 0);
	if (!nrg || nrg > PD_CLICKHOUSE_MERGE_MAX_RANGES) {
		pd_buf_fini(&wb);
		return pd_err_set(err, PD_EINVAL, "clickhouse merge: %zu ranges (1 to %d)", nrg,
				  PD_CLICKHOUSE_MERGE_MAX_RANGES);
	}
	if (ranges_where(&wb, rg, nrg)) {
		pd_buf_fini(&wb);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	const char *where = (const char *)wb.data;
	struct rd r;
	struct idmaps im;
	pd_u64map_init(&im.fn);
	pd_u64map_init(&im.map);
	pd_u64map_init(&im.loc);
	struct pd_pprof_parts pp;
	memset(&pp, 0, sizeof(pp));
	struct prow *hdr = NULL;
	size_t nhdr = 0, caphdr = 0;
	struct pd_pprof_merger *mg = NULL;
	struct pd_pprof_profile *part = NULL;
	struct pd_buf sql;
	pd_buf_init(&sql, 0);
	uint64_t *ids = NULL, *hs = NULL;
	struct pd_clickhouse_rbr b;
	int rc = rd_init(&r, c, err);
	if (rc)
		goto out;
	/* the headers, in time order */
	if ((rc = query(&r, &b, err,
			"SELECT " PROW_COLS " FROM %s.profiles WHERE %s ORDER BY ts, series_id "
			"LIMIT 1 BY series_id, ts FORMAT RowBinary",
			db, where)))
		goto out;
	while (!b.err && b.off < b.len) {
		if (grow((void **)&hdr, &caphdr, nhdr + 1, sizeof(*hdr))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		read_prow(&r, &b, &hdr[nhdr++]);
	}
	if (b.err) {
		rc = corrupt(err, "profiles");
		goto out;
	}
	if (!nhdr) {
		rc = pd_err_set(err, PD_ENOTFOUND, "clickhouse: no profile in that range");
		goto out;
	}
	for (size_t i = 1; i < nhdr; i++)
		if (hdr[i].ntypes != hdr[0].ntypes ||
		    memcmp(hdr[i].types, hdr[0].types, hdr[0].ntypes * 8) ||
		    memcmp(hdr[i].units, hdr[0].units, hdr[0].ntypes * 8)) {
			rc = pd_err_set(err, PD_EINCOMPAT,
					"clickhouse: the profiles at %" PRId64 " and %" PRId64
					" have different sample types; merge them one by one",
					hdr[0].ts, hdr[i].ts);
			goto out;
		}
	if ((rc = load_content(&r, where, where, err)))
		goto out;
	/* every location, function and mapping that the range uses, numbered 1.. */
	size_t nl = r.nlocs, nf = r.nfns, nm = r.nmaps;
	size_t total = nl + nf + nm;
	ids = malloc((total + 1) * sizeof(uint64_t));
	hs = malloc((total + 1) * sizeof(uint64_t));
	if (!ids || !hs) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		ids[i] = i + 1;
		hs[i] = r.fns[i].id;
	}
	/* mappings in the first profile's order, then the others: pprof's merge takes
	 * the first mapping for the main binary */
	{
		struct pd_u64map placed;
		pd_u64map_init(&placed);
		size_t k = 0;
		uint32_t v;
		for (size_t pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < (pass ? nm : hdr[0].nmap) && !rc; i++) {
				uint64_t h = pass ? r.maps[i].id : hdr[0].map_h[i];
				if (pd_u64map_get(&placed, h, &v) || !pd_u64map_get(&r.map_ix, h, &v))
					continue;
				if (pd_u64map_put(&placed, h, 1))
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				ids[nf + k] = k + 1;
				hs[nf + k++] = h;
			}
		pd_u64map_fini(&placed);
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < nl; i++) {
		ids[nf + nm + i] = i + 1;
		hs[nf + nm + i] = r.locs[i].id;
	}
	if ((rc = fill_header(&r, &hdr[0], &pp, err)) ||
	    (rc = fill_tables(&r, ids, hs, nf, ids + nf, hs + nf, nm, ids + nf + nm, hs + nf + nm,
			      nl, &pp, &im, err)))
		goto out;
	/* the sums, in the order in which go tool pprof meets the samples: by the
	 * profile's place in the range, then by the sample's place in its profile */
	rc = pd_buf_printf(&sql,
			   "SELECT stack_id, sumForEach(values), label_key, label_str, label_num, "
			   "label_unit, min(indexOf([");
	for (size_t i = 0; !rc && i < nhdr; i++)
		if (!i || hdr[i].ts != hdr[i - 1].ts)
			rc = pd_buf_printf(&sql, "%s%" PRId64, i ? "," : "", hdr[i].ts);
	/* FINAL reads each (series_id, ts, ordinal) once, however many times it was
	 * sent, and with a cluster each shard does it on its own rows (a series is on
	 * one shard); the GROUP BY then runs in two stages, partial sums on every
	 * shard, so only the sums travel (docs/format/clickhouse.md, "What is read") */
	if (!rc)
		rc = pd_buf_printf(&sql,
				   "], ts) * 4294967296 + ordinal) AS first FROM %s.samples FINAL "
				   "WHERE %s GROUP BY stack_id, label_key, label_str, label_num, "
				   "label_unit ORDER BY first FORMAT RowBinary",
				   db, where);
	if (!rc)
		rc = pd_buf_append(&sql, "", 1);
	if (rc) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	r.resp.len = 0;
	if ((rc = ch_select(c, (const char *)sql.data, &r.resp, err)))
		goto out;
	pd_clickhouse_rbr_init(&b, r.resp.data, r.resp.len);
	size_t cap = 0;
	while (!rc && b.off < b.len) {
		if (grow((void **)&pp.sample, &cap, pp.nsample + 1, sizeof(*pp.sample))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		uint64_t stack = pd_clickhouse_rbr_u64(&b);
		/* sumForEach's array comes before the labels: read_sample reads values first */
		rc = read_sample(&r, &b, stack, &im, ids + nf + nm, &pp.sample[pp.nsample++], err);
		pd_clickhouse_rbr_u64(&b); /* first */
		if (!rc && b.err)
			rc = corrupt(err, "merged samples");
	}
	if (rc)
		goto out;
	/* pprof's merge of the headers (times, durations, comments) and its numbering:
	 * the summed profile first, then each other profile's header alone */
	if ((rc = pd_pprof_parts_build(&pp, &part, err)) ||
	    (rc = pd_pprof_merger_create(&mg, err)) || (rc = pd_pprof_merger_add(mg, part, err)))
		goto out;
	for (size_t i = 1; i < nhdr; i++) {
		struct pd_pprof_parts hp;
		memset(&hp, 0, sizeof(hp));
		struct pd_pprof_profile *h = NULL;
		if ((rc = fill_header(&r, &hdr[i], &hp, err)) ||
		    (rc = pd_pprof_parts_build(&hp, &h, err)) || (rc = pd_pprof_merger_add(mg, h, err))) {
			pd_pprof_destroy(h);
			goto out;
		}
		pd_pprof_destroy(h);
	}
	rc = pd_pprof_merger_finish(mg, out, err);
	mg = NULL;
	if (!rc && info) {
		info->profiles = nhdr;
		info->first_ms = hdr[0].ts;
		info->last_ms = hdr[nhdr - 1].ts;
		info->bytes = r.resp.len;
	}
out:
	if (rc)
		pd_err_prefix(err, "clickhouse merge");
	pd_pprof_merger_destroy(mg);
	pd_pprof_destroy(part);
	pd_buf_fini(&sql);
	pd_buf_fini(&wb);
	free(ids);
	free(hs);
	free(hdr);
	free(pp.sample);
	pd_u64map_fini(&im.fn);
	pd_u64map_fini(&im.map);
	pd_u64map_fini(&im.loc);
	rd_fini(&r);
	return rc;
}
