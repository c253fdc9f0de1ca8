/* merge.c: merging profiles, and diffs built on merging, with pprof's rules.
 *
 * Before merging, sample types are reduced to those every input has (in the first
 * input's order) and values in compatible units (ms and ns, kB and B) are converted
 * to the finest unit present. Then mappings, functions and locations are
 * deduplicated by content (a mapping by its size rounded up to 4 KiB, file offset
 * and build id or file name; a function by name, system name, file and start line;
 * a location by mapping, mapping-relative address, folding and lines), and
 * samples with the same locations and labels are added up. Samples whose values
 * are all zero are dropped, before and after adding. */
#define _GNU_SOURCE /* qsort_r */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"
#include "units.h"

/* ---- a map from byte strings to uint32 ------------------------------------ */

struct bmap {
	uint64_t *hash;
	uint32_t *val;
	const uint8_t **key;
	uint32_t *klen;
	size_t cap, len;
	struct pd_arena *keys;
};

static int bmap_grow(struct bmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	struct bmap n = {calloc(ncap, sizeof(uint64_t)), calloc(ncap, sizeof(uint32_t)),
			 calloc(ncap, sizeof(uint8_t *)),  calloc(ncap, sizeof(uint32_t)),
			 ncap,                             m->len,
			 m->keys};
	if (!n.hash || !n.val || !n.key || !n.klen) {
		free(n.hash);
		free(n.val);
		free(n.key);
		free(n.klen);
		return PD_ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->key[i])
			continue;
		size_t j = m->hash[i] & (ncap - 1);
		while (n.key[j])
			j = (j + 1) & (ncap - 1);
		n.hash[j] = m->hash[i];
		n.val[j] = m->val[i];
		n.key[j] = m->key[i];
		n.klen[j] = m->klen[i];
	}
	free(m->hash);
	free(m->val);
	free(m->key);
	free(m->klen);
	*m = n;
	return 0;
}

/* Looks key up; when absent, stores it with value val. *out is the stored value;
 * returns 1 when the key was already present, 0 when added, <0 on error. */
static int bmap_upsert(struct bmap *m, const void *key, size_t klen, uint32_t val, uint32_t *out)
{
	if ((m->len + 1) * 2 > m->cap && bmap_grow(m))
		return PD_ENOMEM;
	uint64_t h = pd_hash_bytes(key, klen, 0);
	size_t j = h & (m->cap - 1);
	while (m->key[j]) {
		if (m->hash[j] == h && m->klen[j] == klen && memcmp(m->key[j], key, klen) == 0) {
			*out = m->val[j];
			return 1;
		}
		j = (j + 1) & (m->cap - 1);
	}
	uint8_t *k = pd_arena_alloc(m->keys, klen);
	if (!k)
		return PD_ENOMEM;
	memcpy(k, key, klen);
	m->hash[j] = h;
	m->val[j] = val;
	m->key[j] = k;
	m->klen[j] = (uint32_t)klen;
	m->len++;
	*out = val;
	return 0;
}

static void bmap_fini(struct bmap *m)
{
	free(m->hash);
	free(m->val);
	free(m->key);
	free(m->klen);
}

/* ---- growable pointer vectors --------------------------------------------- */

struct vec {
	void **v;
	size_t len, cap;
};

static int vec_push(struct vec *v, void *p)
{
	if (v->len == v->cap) {
		size_t c = v->cap ? v->cap * 2 : 256;
		void **n = realloc(v->v, c * sizeof(*n));
		if (!n)
			return PD_ENOMEM;
		v->v = n;
		v->cap = c;
	}
	v->v[v->len++] = p;
	return 0;
}

/* ---- the merger ------------------------------------------------------------ */

struct src {
	const struct pd_pprof_profile *p;
	int negate_and_label; /* the base side of a diff */
	size_t *col;          /* output column c reads this source's column col[c] */
	double *ratio;        /* unit conversion per output column */
	int scaled;           /* some ratio != 1 */
};

struct merger {
	struct pd_arena *arena; /* the output's */
	struct pd_arena *tmp;   /* keys */
	size_t ncols;
	struct vec strs, samples, locations, functions, mappings;
	size_t *str_len; /* length of each of strs (strings may hold NULs) */
	size_t str_len_cap;
	struct bmap strmap, samplemap, locmap, fnmap, mapmap;
	struct pd_buf key;
	/* per source */
	uint32_t *map_of;  /* dst mapping index + 1 */
	int64_t *map_off;  /* address offset into the dst mapping */
	uint32_t *fn_of;   /* dst function index + 1 */
	uint32_t *loc_of;  /* dst location index + 1 */
	int64_t base_key, base_true; /* string indices, when a diff's base is merged */
};

/* Interns the len bytes at s (NULs included) as a string of the output. */
static int intern(struct merger *m, const char *s, size_t len, int64_t *idx)
{
	uint32_t v;
	if (m->strs.len == m->str_len_cap) {
		size_t c = m->str_len_cap ? m->str_len_cap * 2 : 256;
		size_t *n = realloc(m->str_len, c * sizeof(*n));
		if (!n)
			return PD_ENOMEM;
		m->str_len = n;
		m->str_len_cap = c;
	}
	int r = bmap_upsert(&m->strmap, s, len, (uint32_t)m->strs.len, &v);
	if (r < 0)
		return r;
	if (r == 0) {
		char *c = pd_arena_strndup(m->arena, s, len); /* copies NULs too */
		if (!c)
			return PD_ENOMEM;
		m->str_len[m->strs.len] = len;
		if (vec_push(&m->strs, c))
			return PD_ENOMEM;
	}
	*idx = v;
	return 0;
}

/* Interns string i of profile p. */
static int intern_of(struct merger *m, const struct pd_pprof_profile *p, int64_t i, int64_t *idx)
{
	return intern(m, pd_pprof_str(p, i), pd_pprof_str_len(p, i), idx);
}

/* A copy of a profile's string with its length. */
struct lstr {
	char *s; /* NUL-terminated after its len bytes */
	size_t len;
};

static int lstr_set(struct lstr *d, const char *s, size_t len)
{
	char *c = malloc(len + 1);
	if (!c)
		return PD_ENOMEM;
	if (len)
		memcpy(c, s, len);
	c[len] = '\0';
	free(d->s);
	d->s = c;
	d->len = len;
	return 0;
}

static int lstr_eq(const struct lstr *a, const char *s, size_t len)
{
	return a->len == len && (len == 0 || memcmp(a->s, s, len) == 0);
}

static int lstr_of(struct lstr *d, const struct pd_pprof_profile *p, int64_t i)
{
	return lstr_set(d, pd_pprof_str(p, i), pd_pprof_str_len(p, i));
}

static int intern_lstr(struct merger *m, const struct lstr *s, int64_t *idx)
{
	return intern(m, s->s, s->len, idx);
}

#define KEY_PUT(m, x)                                                     \
	do {                                                              \
		__typeof__(x) _v = (x);                                   \
		if (pd_buf_append(&(m)->key, &_v, sizeof(_v)))            \
			return PD_ENOMEM;                                 \
	} while (0)

static int map_mapping(struct merger *m, const struct pd_pprof_profile *sp, size_t si)
{
	if (m->map_of[si])
		return 0;
	const pb_mapping *s = sp->pb->mapping[si];
	uint64_t size = s->memory_limit - s->memory_start;
	size = size + 0xfff;
	size -= size % 0x1000;
	int64_t ident = pd_pprof_str_len(sp, s->build_id) ? s->build_id : s->filename;
	int64_t ident_idx;
	if (intern_of(m, sp, ident, &ident_idx))
		return PD_ENOMEM;
	m->key.len = 0;
	KEY_PUT(m, size);
	KEY_PUT(m, s->file_offset);
	KEY_PUT(m, ident_idx);
	uint32_t v;
	int r = bmap_upsert(&m->mapmap, m->key.data, m->key.len, (uint32_t)m->mappings.len, &v);
	if (r < 0)
		return r;
	if (r == 1) {
		const pb_mapping *d = m->mappings.v[v];
		m->map_of[si] = v + 1;
		m->map_off[si] = (int64_t)(d->memory_start - s->memory_start);
		return 0;
	}
	pb_mapping *d = pd_arena_alloc(m->arena, sizeof(*d));
	if (!d)
		return PD_ENOMEM;
	perftools__profiles__mapping__init(d);
	d->id = m->mappings.len + 1;
	d->memory_start = s->memory_start;
	d->memory_limit = s->memory_limit;
	d->file_offset = s->file_offset;
	d->has_functions = s->has_functions;
	d->has_filenames = s->has_filenames;
	d->has_line_numbers = s->has_line_numbers;
	d->has_inline_frames = s->has_inline_frames;
	if (intern_of(m, sp, s->filename, &d->filename) ||
	    intern_of(m, sp, s->build_id, &d->build_id) || vec_push(&m->mappings, d))
		return PD_ENOMEM;
	m->map_of[si] = v + 1;
	m->map_off[si] = 0;
	return 0;
}

static int map_function(struct merger *m, const struct pd_pprof_profile *sp, size_t si)
{
	if (m->fn_of[si])
		return 0;
	const pb_function *s = sp->pb->function[si];
	int64_t name, sys, file;
	if (intern_of(m, sp, s->name, &name) ||
	    intern_of(m, sp, s->system_name, &sys) ||
	    intern_of(m, sp, s->filename, &file))
		return PD_ENOMEM;
	m->key.len = 0;
	KEY_PUT(m, s->start_line);
	KEY_PUT(m, name);
	KEY_PUT(m, sys);
	KEY_PUT(m, file);
	uint32_t v;
	int r = bmap_upsert(&m->fnmap, m->key.data, m->key.len, (uint32_t)m->functions.len, &v);
	if (r < 0)
		return r;
	if (r == 0) {
		pb_function *d = pd_arena_alloc(m->arena, sizeof(*d));
		if (!d)
			return PD_ENOMEM;
		perftools__profiles__function__init(d);
		d->id = m->functions.len + 1;
		d->name = name;
		d->system_name = sys;
		d->filename = file;
		d->start_line = s->start_line;
		if (vec_push(&m->functions, d))
			return PD_ENOMEM;
	}
	m->fn_of[si] = v + 1;
	return 0;
}

static int map_location(struct merger *m, const struct pd_pprof_profile *sp, size_t si,
			uint64_t *dst_id)
{
	if (m->loc_of[si]) {
		*dst_id = m->loc_of[si];
		return 0;
	}
	const pb_location *s = sp->pb->location[si];
	const pb_mapping *dm = NULL;
	uint64_t addr = s->address;
	uint64_t mapping_id = 0;
	if (s->mapping_id) {
		size_t mi = (size_t)pd_pprof_idmap_get(&sp->mappings, s->mapping_id);
		if (map_mapping(m, sp, mi))
			return PD_ENOMEM;
		dm = m->mappings.v[m->map_of[mi] - 1];
		addr = (uint64_t)((int64_t)addr + m->map_off[mi]);
		mapping_id = dm->id;
	}
	for (size_t j = 0; j < s->n_line; j++) {
		size_t fi = (size_t)pd_pprof_idmap_get(&sp->functions, s->line[j]->function_id);
		if (map_function(m, sp, fi))
			return PD_ENOMEM;
	}
	m->key.len = 0;
	KEY_PUT(m, mapping_id);
	KEY_PUT(m, addr - (dm ? dm->memory_start : 0));
	KEY_PUT(m, (uint8_t)s->is_folded);
	for (size_t j = 0; j < s->n_line; j++) {
		size_t fi = (size_t)pd_pprof_idmap_get(&sp->functions, s->line[j]->function_id);
		KEY_PUT(m, (uint64_t)m->fn_of[fi]);
		KEY_PUT(m, s->line[j]->line);
		KEY_PUT(m, s->line[j]->column);
	}
	uint32_t v;
	int r = bmap_upsert(&m->locmap, m->key.data, m->key.len, (uint32_t)m->locations.len, &v);
	if (r < 0)
		return r;
	if (r == 0) {
		pb_location *d = pd_arena_alloc(m->arena, sizeof(*d));
		if (!d)
			return PD_ENOMEM;
		perftools__profiles__location__init(d);
		d->id = m->locations.len + 1;
		d->mapping_id = mapping_id;
		d->address = addr;
		d->is_folded = s->is_folded;
		d->n_line = s->n_line;
		if (s->n_line) {
			d->line = pd_arena_alloc(m->arena, s->n_line * sizeof(*d->line));
			pb_line *lines = pd_arena_alloc(m->arena, s->n_line * sizeof(*lines));
			if (!d->line || !lines)
				return PD_ENOMEM;
			for (size_t j = 0; j < s->n_line; j++) {
				size_t fi = (size_t)pd_pprof_idmap_get(&sp->functions,
								       s->line[j]->function_id);
				perftools__profiles__line__init(&lines[j]);
				lines[j].function_id = m->fn_of[fi];
				lines[j].line = s->line[j]->line;
				lines[j].column = s->line[j]->column;
				d->line[j] = &lines[j];
			}
		}
		if (vec_push(&m->locations, d))
			return PD_ENOMEM;
	}
	m->loc_of[si] = v + 1;
	*dst_id = v + 1;
	return 0;
}

/* A label in the output's string space, in the canonical order of a sample key. */
struct olabel {
	int64_t key, str, num, unit;
	int is_num;
	size_t pos;
};

static int olabel_cmp(const void *a, const void *b)
{
	const struct olabel *l = a, *r = b;
	if (l->is_num != r->is_num)
		return l->is_num - r->is_num;
	if (l->key != r->key)
		return l->key < r->key ? -1 : 1;
	return l->pos < r->pos ? -1 : l->pos > r->pos;
}

static int map_sample(struct merger *m, struct src *src, const pb_sample *s, int64_t *vals,
		      uint64_t **locs, size_t *locs_cap, struct olabel **labs, size_t *labs_cap)
{
	const struct pd_pprof_profile *sp = src->p;
	int nonzero = 0;
	for (size_t c = 0; c < m->ncols; c++) {
		if (src->col[c] == SIZE_MAX) {
			vals[c] = 0; /* a column this source lacks: it will not be kept */
			continue;
		}
		int64_t v = s->value[src->col[c]];
		if (src->ratio[c] != 1) {
			double d = round((double)v * src->ratio[c]);
			v = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
		}
		if (src->negate_and_label)
			v = pd_neg64(v);
		vals[c] = v;
		nonzero |= v != 0;
	}
	if (!nonzero)
		return 0;
	if (s->n_location_id > *locs_cap) {
		uint64_t *n = realloc(*locs, s->n_location_id * sizeof(*n));
		if (!n)
			return PD_ENOMEM;
		*locs = n;
		*locs_cap = s->n_location_id;
	}
	for (size_t k = 0; k < s->n_location_id; k++) {
		size_t li = (size_t)pd_pprof_idmap_get(&sp->locations, s->location_id[k]);
		if (map_location(m, sp, li, &(*locs)[k]))
			return PD_ENOMEM;
	}
	size_t nl = s->n_label + 1;
	if (nl > *labs_cap) {
		struct olabel *n = realloc(*labs, nl * sizeof(*n));
		if (!n)
			return PD_ENOMEM;
		*labs = n;
		*labs_cap = nl;
	}
	size_t n = 0;
	for (size_t k = 0; k < s->n_label; k++) {
		const pb_label *l = s->label[k];
		struct olabel *o = &(*labs)[n];
		memset(o, 0, sizeof(*o));
		if (intern_of(m, sp, l->key, &o->key))
			return PD_ENOMEM;
		if (src->negate_and_label && l->str && o->key == m->base_key)
			continue; /* replaced by pprof::base=true below */
		o->is_num = l->str == 0;
		o->num = l->num;
		o->pos = k;
		if (intern_of(m, sp, l->str, &o->str) ||
		    intern_of(m, sp, l->num_unit, &o->unit))
			return PD_ENOMEM;
		n++;
	}
	if (src->negate_and_label) {
		struct olabel *o = &(*labs)[n++];
		memset(o, 0, sizeof(*o));
		o->key = m->base_key;
		o->str = m->base_true;
		o->pos = SIZE_MAX;
	}
	qsort(*labs, n, sizeof(**labs), olabel_cmp);

	m->key.len = 0;
	if (pd_buf_append(&m->key, *locs, s->n_location_id * sizeof(uint64_t)))
		return PD_ENOMEM;
	KEY_PUT(m, (uint64_t)0);
	for (size_t k = 0; k < n; k++) {
		struct olabel *o = &(*labs)[k];
		KEY_PUT(m, (uint8_t)o->is_num);
		KEY_PUT(m, o->key);
		KEY_PUT(m, o->str);
		KEY_PUT(m, o->num);
		KEY_PUT(m, o->unit);
	}
	uint32_t v;
	int r = bmap_upsert(&m->samplemap, m->key.data, m->key.len, (uint32_t)m->samples.len, &v);
	if (r < 0)
		return r;
	if (r == 1) {
		pb_sample *d = m->samples.v[v];
		for (size_t c = 0; c < m->ncols; c++)
			d->value[c] = pd_add64(d->value[c], vals[c]);
		return 0;
	}
	pb_sample *d = pd_arena_alloc(m->arena, sizeof(*d));
	if (!d)
		return PD_ENOMEM;
	perftools__profiles__sample__init(d);
	d->n_location_id = s->n_location_id;
	d->location_id = pd_arena_alloc(m->arena, (s->n_location_id + 1) * sizeof(uint64_t));
	d->n_value = m->ncols;
	d->value = pd_arena_alloc(m->arena, (m->ncols + 1) * sizeof(int64_t));
	if (!d->location_id || !d->value)
		return PD_ENOMEM;
	if (s->n_location_id)
		memcpy(d->location_id, *locs, s->n_location_id * sizeof(uint64_t));
	memcpy(d->value, vals, m->ncols * sizeof(int64_t));
	if (n) {
		d->n_label = n;
		d->label = pd_arena_alloc(m->arena, n * sizeof(*d->label));
		pb_label *ls = pd_arena_alloc(m->arena, n * sizeof(*ls));
		if (!d->label || !ls)
			return PD_ENOMEM;
		for (size_t k = 0; k < n; k++) {
			perftools__profiles__label__init(&ls[k]);
			ls[k].key = (*labs)[k].key;
			ls[k].str = (*labs)[k].str;
			ls[k].num = (*labs)[k].num;
			ls[k].num_unit = (*labs)[k].unit;
			d->label[k] = &ls[k];
		}
	}
	return vec_push(&m->samples, d);
}

/* Copies a vector of pointers into the arena as the message's repeated field. */
static void *vec_to_arena(struct merger *m, struct vec *v, size_t *n)
{
	*n = v->len;
	void **a = pd_arena_alloc(m->arena, (v->len ? v->len : 1) * sizeof(void *));
	if (a && v->len)
		memcpy(a, v->v, v->len * sizeof(void *));
	return a;
}

/* Whether two different spellings of a unit convert into each other (pprof only
 * compares units for a type that matched already). A unit holding a NUL byte is
 * no unit pprof knows. */
static int units_compatible(const char *u1, size_t l1, const char *u2, size_t l2)
{
	if (l1 == l2 && (l1 == 0 || memcmp(u1, u2, l1) == 0))
		return 1;
	if (memchr(u1, 0, l1) || memchr(u2, 0, l2))
		return 0;
	double f;
	int k1 = pd_pprof_unit_kind(u1, &f), k2 = pd_pprof_unit_kind(u2, &f);
	return k1 == k2 && k1 != PD_UNIT_OTHER;
}

/* ---- the incremental merger --------------------------------------------------- */

struct pd_pprof_merger {
	struct merger m;
	size_t nsources;
	/* output columns, from the first profile; later ones can only drop them */
	struct lstr *type, *unit;
	uint8_t *alive, *incompatible;
	/* header */
	pb_profile *pb;
	struct lstr period_type, period_unit;
	struct vec comments;
	struct bmap seen_comments;
	int have_base;
	int has_period_type;
	/* scratch for map_sample */
	int64_t *vals;
	uint64_t *locs;
	size_t locs_cap, labs_cap;
	struct olabel *labs;
};

void pd_pprof_merger_destroy(struct pd_pprof_merger *pm)
{
	if (!pm)
		return;
	struct merger *m = &pm->m;
	for (size_t c = 0; c < m->ncols; c++) {
		free(pm->type[c].s);
		free(pm->unit[c].s);
	}
	free(pm->type);
	free(pm->unit);
	free(pm->alive);
	free(pm->incompatible);
	free(pm->period_type.s);
	free(pm->period_unit.s);
	free(pm->comments.v);
	bmap_fini(&pm->seen_comments);
	free(pm->vals);
	free(pm->locs);
	free(pm->labs);
	free(m->map_of);
	free(m->map_off);
	free(m->fn_of);
	free(m->loc_of);
	free(m->strs.v);
	free(m->str_len);
	free(m->samples.v);
	free(m->locations.v);
	free(m->functions.v);
	free(m->mappings.v);
	bmap_fini(&m->strmap);
	bmap_fini(&m->samplemap);
	bmap_fini(&m->locmap);
	bmap_fini(&m->fnmap);
	bmap_fini(&m->mapmap);
	pd_buf_fini(&m->key);
	pd_arena_destroy(m->arena);
	pd_arena_destroy(m->tmp);
	free(pm);
}

int pd_pprof_merger_create(struct pd_pprof_merger **out, struct pd_err *err)
{
	struct pd_pprof_merger *pm = calloc(1, sizeof(*pm));
	int64_t idx;
	*out = NULL;
	if (!pm)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	struct merger *m = &pm->m;
	pd_buf_init(&m->key, 0);
	m->arena = pd_arena_create(0);
	m->tmp = pd_arena_create(0);
	if (!m->arena || !m->tmp)
		goto nomem;
	m->strmap.keys = m->samplemap.keys = m->locmap.keys = m->fnmap.keys = m->mapmap.keys = m->tmp;
	pm->seen_comments.keys = m->tmp;
	if (intern(m, "", 0, &idx))
		goto nomem;
	pm->pb = pd_arena_alloc(m->arena, sizeof(*pm->pb));
	if (!pm->pb)
		goto nomem;
	perftools__profiles__profile__init(pm->pb);
	*out = pm;
	return 0;
nomem:
	pd_pprof_merger_destroy(pm);
	return pd_err_set(err, PD_ENOMEM, "out of memory");
}

/* Takes the first profile's columns and header. */
static int first_source(struct pd_pprof_merger *pm, const struct pd_pprof_profile *p,
			struct pd_err *err)
{
	struct merger *m = &pm->m;
	size_t nt = p->pb->n_sample_type;
	pm->type = calloc(nt ? nt : 1, sizeof(*pm->type));
	pm->unit = calloc(nt ? nt : 1, sizeof(*pm->unit));
	pm->alive = calloc(nt ? nt : 1, 1);
	pm->incompatible = calloc(nt ? nt : 1, 1);
	pm->vals = calloc(nt ? nt : 1, sizeof(int64_t));
	if (!pm->type || !pm->unit || !pm->alive || !pm->incompatible || !pm->vals)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	m->ncols = nt;
	for (size_t c = 0; c < nt; c++) {
		const pb_value_type *vt = p->pb->sample_type[c];
		if (lstr_of(&pm->type[c], p, vt->type) || lstr_of(&pm->unit[c], p, vt->unit))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		/* a type listed twice: only its first column can be matched */
		pm->alive[c] = 1;
		for (size_t k = 0; k < c; k++)
			if (lstr_eq(&pm->type[k], pm->type[c].s, pm->type[c].len))
				pm->alive[c] = 0;
	}
	const pb_value_type *pvt = p->pb->period_type;
	if (lstr_of(&pm->period_type, p, pvt ? pvt->type : 0) ||
	    lstr_of(&pm->period_unit, p, pvt ? pvt->unit : 0))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pb_profile *pb = pm->pb;
	if (intern_of(m, p, p->pb->drop_frames, &pb->drop_frames) ||
	    intern_of(m, p, p->pb->keep_frames, &pb->keep_frames))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pm->has_period_type = p->pb->period_type != NULL;
	return 0;
}

/* Multiplies column c of every merged sample by r (a unit moved to a finer one). */
static void rescale_column(struct merger *m, size_t c, double r)
{
	for (size_t k = 0; k < m->samples.len; k++) {
		pb_sample *s = m->samples.v[k];
		double d = round((double)s->value[c] * r);
		s->value[c] = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
	}
}

static int add_source(struct pd_pprof_merger *pm, const struct pd_pprof_profile *p, int base,
		      struct pd_err *err)
{
	struct merger *m = &pm->m;
	struct src src = {.p = p, .negate_and_label = base};
	int rc = 0;
	int64_t idx;
	if (pm->nsources == 0 && (rc = first_source(pm, p, err)))
		return rc;
	const pb_value_type *pvt = p->pb->period_type;
	const char *pt = pd_pprof_str(p, pvt ? pvt->type : 0), *pu = pd_pprof_str(p, pvt ? pvt->unit : 0);
	size_t ptl = pd_pprof_str_len(p, pvt ? pvt->type : 0), pul = pd_pprof_str_len(p, pvt ? pvt->unit : 0);
	src.col = calloc(m->ncols ? m->ncols : 1, sizeof(size_t));
	src.ratio = calloc(m->ncols ? m->ncols : 1, sizeof(double));
	if (!src.col || !src.ratio) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t c = 0; c < m->ncols; c++) {
		src.col[c] = SIZE_MAX;
		src.ratio[c] = 1;
		if (!pm->alive[c])
			continue;
		size_t j;
		for (j = 0; j < p->pb->n_sample_type; j++) {
			int64_t t = p->pb->sample_type[j]->type;
			if (lstr_eq(&pm->type[c], pd_pprof_str(p, t), pd_pprof_str_len(p, t)))
				break;
		}
		if (j == p->pb->n_sample_type) {
			pm->alive[c] = 0; /* not common to all profiles */
			continue;
		}
		src.col[c] = j;
		int64_t ui = p->pb->sample_type[j]->unit;
		const char *u = pd_pprof_str(p, ui);
		size_t ul = pd_pprof_str_len(p, ui);
		if (lstr_eq(&pm->unit[c], u, ul))
			continue;
		if (!units_compatible(pm->unit[c].s, pm->unit[c].len, u, ul)) {
			pm->incompatible[c] = 1;
			continue;
		}
		if (pd_pprof_unit_ratio(u, pm->unit[c].s) < 1) {
			/* the new unit is finer: convert what is merged so far */
			double r = pd_pprof_unit_ratio(pm->unit[c].s, u);
			if (lstr_set(&pm->unit[c], u, ul)) {
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				goto out;
			}
			rescale_column(m, c, r);
		} else {
			src.ratio[c] = pd_pprof_unit_ratio(u, pm->unit[c].s);
		}
	}
	size_t alive = 0;
	for (size_t c = 0; c < m->ncols; c++)
		alive += pm->alive[c];
	if (!alive) {
		rc = pd_err_set(err, PD_EINCOMPAT, "profiles have no sample type in common");
		goto out;
	}
	/* period types must agree, up to a unit conversion */
	if (!lstr_eq(&pm->period_type, pt, ptl) ||
	    !units_compatible(pu, pul, pm->period_unit.s, pm->period_unit.len)) {
		rc = pd_err_set(err, PD_EINCOMPAT, "incompatible period types %s/%s and %s/%s",
				pm->period_type.s, pm->period_unit.s, pt, pu);
		goto out;
	}
	/* header */
	pb_profile *pb = pm->pb;
	const pb_profile *s = p->pb;
	if (pb->time_nanos == 0 || s->time_nanos < pb->time_nanos)
		pb->time_nanos = s->time_nanos;
	pb->duration_nanos = pd_add64(pb->duration_nanos, s->duration_nanos);
	{
		/* periods in the finest period unit seen, the largest kept */
		if (!lstr_eq(&pm->period_unit, pu, pul) &&
		    pd_pprof_unit_ratio(pu, pm->period_unit.s) < 1) {
			double d = (double)pb->period * pd_pprof_unit_ratio(pm->period_unit.s, pu);
			if (lstr_set(&pm->period_unit, pu, pul)) {
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				goto out;
			}
			pb->period = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
		}
		double d = (double)s->period * pd_pprof_unit_ratio(pu, pm->period_unit.s);
		int64_t period = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
		if (pb->period == 0 || pb->period < period)
			pb->period = period;
	}
	for (size_t c = 0; c < s->n_comment; c++) {
		const char *txt = pd_pprof_str(p, s->comment[c]);
		uint32_t v;
		int r = bmap_upsert(&pm->seen_comments, txt, pd_pprof_str_len(p, s->comment[c]), 0, &v);
		if (r < 0 || (r == 0 && (intern_of(m, p, s->comment[c], &idx) ||
					 vec_push(&pm->comments, (void *)(intptr_t)idx)))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((!pb->default_sample_type && s->default_sample_type &&
	     intern_of(m, p, s->default_sample_type, &pb->default_sample_type)) ||
	    (!pb->doc_url && s->doc_url && intern_of(m, p, s->doc_url, &pb->doc_url))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	if (base && !pm->have_base) {
		if (intern(m, "pprof::base", 11, &m->base_key) || intern(m, "true", 4, &m->base_true)) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		pm->have_base = 1;
	}
	/* samples */
	size_t nm = s->n_mapping, nf = s->n_function, nl = s->n_location;
	m->map_of = calloc(nm + 1, sizeof(*m->map_of));
	m->map_off = calloc(nm + 1, sizeof(*m->map_off));
	m->fn_of = calloc(nf + 1, sizeof(*m->fn_of));
	m->loc_of = calloc(nl + 1, sizeof(*m->loc_of));
	if (!m->map_of || !m->map_off || !m->fn_of || !m->loc_of)
		goto nomem;
	/* the first mapping seen is the main binary: keep it first */
	if (m->mappings.len == 0 && nm && map_mapping(m, p, 0))
		goto nomem;
	for (size_t k = 0; k < s->n_sample; k++)
		if (map_sample(m, &src, s->sample[k], pm->vals, &pm->locs, &pm->locs_cap, &pm->labs,
			       &pm->labs_cap))
			goto nomem;
	pm->nsources++;
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory merging profiles");
out:
	free(m->map_of);
	free(m->map_off);
	free(m->fn_of);
	free(m->loc_of);
	m->map_of = NULL;
	m->map_off = NULL;
	m->fn_of = NULL;
	m->loc_of = NULL;
	free(src.col);
	free(src.ratio);
	return rc;
}

int pd_pprof_merger_add(struct pd_pprof_merger *pm, const struct pd_pprof_profile *p,
			struct pd_err *err)
{
	return add_source(pm, p, 0, err);
}

int pd_pprof_merger_add_base(struct pd_pprof_merger *pm, const struct pd_pprof_profile *p,
			     struct pd_err *err)
{
	return add_source(pm, p, 1, err);
}

int pd_pprof_merger_finish(struct pd_pprof_merger *pm, struct pd_pprof_profile **out,
			   struct pd_err *err)
{
	struct merger *m = &pm->m;
	pb_profile *pb = pm->pb;
	int rc = 0;
	*out = NULL;
	if (pm->nsources == 0) {
		rc = pd_err_set(err, PD_EINVAL, "no profiles to merge");
		goto out;
	}
	size_t keep = 0;
	for (size_t c = 0; c < m->ncols; c++) {
		if (!pm->alive[c])
			continue;
		if (pm->incompatible[c]) {
			rc = pd_err_set(err, PD_EINCOMPAT, "incompatible sample types: %s has units that do not convert",
					pm->type[c].s);
			goto out;
		}
		keep++;
	}
	if (!keep) {
		rc = pd_err_set(err, PD_EINCOMPAT, "profiles have no sample type in common");
		goto out;
	}
	/* columns */
	pb->n_sample_type = keep;
	pb->sample_type = pd_arena_alloc(m->arena, keep * sizeof(*pb->sample_type));
	pb_value_type *vts = pd_arena_alloc(m->arena, keep * sizeof(*vts));
	if (!pb->sample_type || !vts)
		goto nomem;
	size_t k = 0;
	for (size_t c = 0; c < m->ncols; c++) {
		if (!pm->alive[c])
			continue;
		perftools__profiles__value_type__init(&vts[k]);
		if (intern_lstr(m, &pm->type[c], &vts[k].type) || intern_lstr(m, &pm->unit[c], &vts[k].unit))
			goto nomem;
		pb->sample_type[k] = &vts[k];
		k++;
	}
	if (pm->has_period_type) {
		pb->period_type = pd_arena_alloc(m->arena, sizeof(*pb->period_type));
		if (!pb->period_type)
			goto nomem;
		perftools__profiles__value_type__init(pb->period_type);
		if (intern_lstr(m, &pm->period_type, &pb->period_type->type) ||
		    intern_lstr(m, &pm->period_unit, &pb->period_type->unit))
			goto nomem;
	}
	/* samples keep their alive columns; some may now be all zero */
	int zero_sums = 0;
	for (size_t i = 0; i < m->samples.len; i++) {
		pb_sample *s = m->samples.v[i];
		size_t j = 0;
		int nz = 0;
		for (size_t c = 0; c < m->ncols; c++)
			if (pm->alive[c]) {
				s->value[j++] = s->value[c];
				nz |= s->value[c] != 0;
			}
		s->n_value = keep;
		zero_sums |= !nz;
	}
	if (pm->comments.len) {
		pb->n_comment = pm->comments.len;
		pb->comment = pd_arena_alloc(m->arena, pm->comments.len * sizeof(int64_t));
		if (!pb->comment)
			goto nomem;
		for (size_t c = 0; c < pm->comments.len; c++)
			pb->comment[c] = (int64_t)(intptr_t)pm->comments.v[c];
	}
	pb->sample = vec_to_arena(m, &m->samples, &pb->n_sample);
	pb->location = vec_to_arena(m, &m->locations, &pb->n_location);
	pb->function = vec_to_arena(m, &m->functions, &pb->n_function);
	pb->mapping = vec_to_arena(m, &m->mappings, &pb->n_mapping);
	pb->string_table = vec_to_arena(m, &m->strs, &pb->n_string_table);
	if (!pb->sample || !pb->location || !pb->function || !pb->mapping || !pb->string_table)
		goto nomem;
	struct pd_arena *arena = m->arena;
	size_t *str_len = m->str_len;
	m->arena = NULL;
	m->str_len = NULL;
	rc = pd_pprof_adopt(out, arena, pb, str_len, err);
	if (rc == 0 && zero_sums) {
		/* samples that cancelled out: merge once more to drop them and what only
		 * they referenced */
		struct pd_pprof_profile *again;
		const struct pd_pprof_profile *one = *out;
		rc = pd_pprof_merge(&one, 1, &again, err);
		pd_pprof_destroy(*out);
		*out = rc ? NULL : again;
	}
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory merging profiles");
out:
	pd_pprof_merger_destroy(pm);
	return rc;
}

int pd_pprof_merge(const struct pd_pprof_profile *const *ps, size_t n,
		   struct pd_pprof_profile **out, struct pd_err *err)
{
	struct pd_pprof_merger *pm;
	int rc;
	*out = NULL;
	if (n == 0)
		return pd_err_set(err, PD_EINVAL, "no profiles to merge");
	if ((rc = pd_pprof_merger_create(&pm, err)))
		return rc;
	for (size_t i = 0; i < n; i++)
		if ((rc = pd_pprof_merger_add(pm, ps[i], err))) {
			pd_pprof_merger_destroy(pm);
			return rc;
		}
	return pd_pprof_merger_finish(pm, out, err);
}

int pd_pprof_diff(const struct pd_pprof_profile *base, const struct pd_pprof_profile *p,
		  struct pd_pprof_profile **out, struct pd_err *err)
{
	struct pd_pprof_merger *pm;
	int rc;
	*out = NULL;
	if ((rc = pd_pprof_merger_create(&pm, err)))
		return rc;
	if ((rc = pd_pprof_merger_add(pm, p, err)) || (rc = pd_pprof_merger_add_base(pm, base, err))) {
		pd_pprof_merger_destroy(pm);
		return rc;
	}
	if ((rc = pd_pprof_merger_finish(pm, out, err)))
		return rc;
	(*out)->names = p->names; /* its reports name functions as p's do */
	(*out)->granularity = p->granularity;
	return 0;
}
