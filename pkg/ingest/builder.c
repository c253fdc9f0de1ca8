/* builder.c: a pprof profile built frame by frame, for the converters of formats
 * that are not pprof (folded stacks, JFR, speedscope, OTLP). Strings, functions,
 * mappings and locations are interned, and samples with the same stack and labels
 * merged, through one open-addressing table of (hash, kind, id): a slot names the
 * entry it stands for, and a key is compared with that entry itself, so keys are
 * neither built nor copied (XXH3 of libxxhash hashes them, inlined from its
 * header). Everything lives in one arena whose cap follows the limits, so no input
 * can make the builder grow without bound. The result goes through
 * pd_pprof_parts_encode and pd_pprof_parts_copy, so it is validated as a pushed
 * profile is. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ingest_int.h"

enum { K_STR = 1, K_FUNC, K_MAP, K_LOC, K_SAMPLE };

/* A slot of the table: the entry of kind (K_*) at index id - 1 of its table,
 * with the low 32 bits of its key's hash; kid 0 marks an empty slot. 8 bytes,
 * so that the table (touched at random) takes as few cache lines as it can. */
struct slot {
	uint32_t hash;
	uint32_t kid; /* kind << KIND_SHIFT | id */
};

#define KIND_SHIFT 29
#define ID_MAX ((1u << KIND_SHIFT) - 1)
#define SLOT_KIND(s) ((s)->kid >> KIND_SHIFT)
#define SLOT_ID(s) ((s)->kid & ID_MAX)

struct ingest_pb {
	struct pd_ingest_limits lim;
	struct pd_arena *arena;
	struct slot *tab;
	size_t tab_cap, tab_used;
	/* strings */
	const char **str;
	size_t *str_len;
	size_t nstr, cap_str, cap_str_len;
	/* tables */
	struct pd_pprof_pfunction *fn;
	size_t nfn, cap_fn;
	struct pd_pprof_pmapping *map;
	size_t nmap, cap_map;
	struct pd_pprof_plocation *loc;
	size_t nloc, cap_loc;
	struct pd_pprof_psample *smp;
	size_t nsmp, cap_smp;
	struct pd_pprof_pvt st[16];
	size_t nst;
	int64_t *comments;
	size_t ncomments, cap_comments;
	int has_period;
	struct pd_pprof_pvt period_type;
	int64_t period, time_nanos, duration_nanos;
	/* sticky error */
	int rc, limit;
	struct pd_err err;
};

static int fail(struct ingest_pb *b, int rc, int limit, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(struct ingest_pb *b, int rc, int limit, const char *fmt, ...)
{
	if (b->rc)
		return b->rc;
	b->rc = rc;
	b->limit = limit;
	b->err.code = rc;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->err.msg, sizeof(b->err.msg), fmt, ap);
	va_end(ap);
	return rc;
}

static int oom(struct ingest_pb *b)
{
	if (pd_arena_exhausted(b->arena))
		return fail(b, PD_ETOOBIG, PD_INGEST_LIMIT_DECOMPRESSED,
			    "the converted profile takes more than %zu bytes of memory (%s)",
			    b->lim.max_decompressed * 4,
			    pd_ingest_limit_flag(PD_INGEST_LIMIT_DECOMPRESSED));
	return fail(b, PD_ENOMEM, 0, "out of memory");
}

struct ingest_pb *ingest_pb_create(const struct pd_ingest_limits *lim)
{
	struct ingest_pb *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->lim = pd_ingest_limits_resolve(lim);
	b->arena = pd_arena_create(b->lim.max_decompressed * 4);
	if (!b->arena) {
		free(b);
		return NULL;
	}
	if (ingest_pb_str(b, "", 0) != 0) {
		ingest_pb_destroy(b);
		return NULL;
	}
	return b;
}

void ingest_pb_destroy(struct ingest_pb *b)
{
	if (!b)
		return;
	free(b->tab);
	free(b->str);
	free(b->str_len);
	free(b->fn);
	free(b->map);
	free(b->loc);
	free(b->smp);
	free(b->comments);
	pd_arena_destroy(b->arena);
	free(b);
}

/* Grows *v (of *cap elements of size sz) to hold n + 1. */
static int grow(struct ingest_pb *b, void **v, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	if (pd_arena_fits(b->arena, nc * sz)) /* sized against the arena's budget */
		return oom(b);
	void *p = realloc(*v, nc * sz);
	if (!p)
		return oom(b);
	*v = p;
	*cap = nc;
	return 0;
}

static int tab_grow(struct ingest_pb *b)
{
	size_t nc = b->tab_cap ? b->tab_cap * 2 : 256;
	if (nc > UINT32_MAX)
		return oom(b);
	struct slot *t = calloc(nc, sizeof(*t));
	if (!t)
		return oom(b);
	for (size_t i = 0; i < b->tab_cap; i++) {
		if (!b->tab[i].kid)
			continue;
		size_t j = b->tab[i].hash & (nc - 1);
		while (t[j].kid)
			j = (j + 1) & (nc - 1);
		t[j] = b->tab[i];
	}
	free(b->tab);
	b->tab = t;
	b->tab_cap = nc;
	return 0;
}

/* The hash of a key of kind: XXH3 of its bytes, seeded with the kind. */
static inline uint64_t key_hash(int kind, const void *p, size_t n)
{
	return XXH3_64bits_withSeed(p, n, (XXH64_hash_t)kind);
}

/* Whether the entry of slot s (of kind) is the key k; each kind's own key. */
struct key {
	const void *p; /* K_STR: the bytes; K_LOC: lines; K_SAMPLE: location ids */
	size_t n;      /* K_STR: length; K_LOC: lines; K_SAMPLE: locations */
	const int64_t *w; /* K_FUNC, K_MAP, K_LOC: the words of the key */
	const struct pd_pprof_plabel *lab; /* K_SAMPLE */
	size_t nlab;
};

static int key_eq(const struct ingest_pb *b, const struct slot *s, const struct key *k)
{
	size_t i = SLOT_ID(s) - 1;
	switch (SLOT_KIND(s)) {
	case K_STR:
		return b->str_len[i] == k->n && (!k->n || memcmp(b->str[i], k->p, k->n) == 0);
	case K_FUNC: {
		const struct pd_pprof_pfunction *f = &b->fn[i];
		return f->name == k->w[0] && f->system_name == k->w[1] && f->filename == k->w[2] &&
		       f->start_line == k->w[3];
	}
	case K_MAP: {
		const struct pd_pprof_pmapping *m = &b->map[i];
		return m->memory_start == (uint64_t)k->w[0] &&
		       m->memory_limit == (uint64_t)k->w[1] &&
		       m->file_offset == (uint64_t)k->w[2] && m->filename == k->w[3] &&
		       m->build_id == k->w[4] && m->has_functions == (uint8_t)k->w[5];
	}
	case K_LOC: {
		const struct pd_pprof_plocation *l = &b->loc[i];
		const struct ingest_pb_line *ln = k->p;
		if (l->mapping_id != (uint64_t)k->w[0] || l->address != (uint64_t)k->w[1] ||
		    l->nline != k->n)
			return 0;
		for (size_t j = 0; j < k->n; j++)
			if (l->line[j].function_id != ln[j].function_id ||
			    l->line[j].line != ln[j].line)
				return 0;
		return 1;
	}
	case K_SAMPLE: {
		const struct pd_pprof_psample *sm = &b->smp[i];
		if (sm->nlocation != k->n || sm->nlabel != k->nlab ||
		    (k->n && memcmp(sm->location_id, k->p, k->n * sizeof(uint64_t)) != 0))
			return 0;
		for (size_t j = 0; j < k->nlab; j++)
			if (sm->label[j].key != k->lab[j].key ||
			    sm->label[j].str != k->lab[j].str ||
			    sm->label[j].num != k->lab[j].num ||
			    sm->label[j].num_unit != k->lab[j].num_unit)
				return 0;
		return 1;
	}
	}
	return 0;
}

/* The slot of key k of kind and hash h: its entry's (id set), or the empty one
 * where it goes (kid 0, hash set; claim() gives it its kind and id). NULL on
 * error. */
static struct slot *lookup(struct ingest_pb *b, int kind, uint64_t h, const struct key *k)
{
	if ((b->tab_used + 1) * 4 >= b->tab_cap * 3 && tab_grow(b))
		return NULL;
	size_t j = h & (b->tab_cap - 1);
	uint32_t h32 = (uint32_t)h;
	while (b->tab[j].kid) {
		if (b->tab[j].hash == h32 && SLOT_KIND(&b->tab[j]) == (uint32_t)kind &&
		    key_eq(b, &b->tab[j], k))
			return &b->tab[j];
		j = (j + 1) & (b->tab_cap - 1);
	}
	b->tab[j].hash = h32;
	return &b->tab[j];
}

/* Gives the empty slot s the entry of kind at index id - 1. */
static int claim(struct ingest_pb *b, struct slot *s, int kind, uint64_t id)
{
	if (id > ID_MAX)
		return oom(b);
	s->kid = (uint32_t)kind << KIND_SHIFT | (uint32_t)id;
	b->tab_used++;
	return 0;
}

uint64_t ingest_pb_str_hash(const char *s, size_t len)
{
	return key_hash(K_STR, s, len);
}

/* ingest_pb_str with the string's hash (ingest_pb_str_hash) at hand. */
static int64_t str_hashed(struct ingest_pb *b, const char *s, size_t len, uint64_t h)
{
	if (b->rc)
		return -1;
	if (len == 0 && b->nstr > 0)
		return 0;
	struct key k = {.p = s, .n = len};
	struct slot *sl = lookup(b, K_STR, h, &k);
	if (!sl)
		return -1;
	if (sl->kid)
		return (int64_t)SLOT_ID(sl) - 1;
	if (grow(b, (void **)&b->str, &b->cap_str, b->nstr, sizeof(*b->str)) ||
	    grow(b, (void **)&b->str_len, &b->cap_str_len, b->nstr, sizeof(*b->str_len)))
		return -1;
	char *c = pd_arena_alloc(b->arena, len ? len : 1);
	if (!c) {
		oom(b);
		return -1;
	}
	if (len)
		memcpy(c, s, len);
	if (claim(b, sl, K_STR, b->nstr + 1))
		return -1;
	b->str[b->nstr] = c;
	b->str_len[b->nstr] = len;
	return (int64_t)b->nstr++;
}

int64_t ingest_pb_str(struct ingest_pb *b, const char *s, size_t len)
{
	if (b->rc)
		return -1;
	if (len == 0 && b->nstr > 0)
		return 0;
	return str_hashed(b, s, len, key_hash(K_STR, s, len));
}

int ingest_pb_sample_type(struct ingest_pb *b, const char *type, const char *unit)
{
	if (b->rc)
		return b->rc;
	if (b->nst == sizeof(b->st) / sizeof(b->st[0]))
		return fail(b, PD_EINVAL, 0, "more than %zu sample types",
			    sizeof(b->st) / sizeof(b->st[0]));
	int64_t t = ingest_pb_str(b, type, strlen(type));
	int64_t u = ingest_pb_str(b, unit, strlen(unit));
	if (t < 0 || u < 0)
		return b->rc;
	b->st[b->nst++] = (struct pd_pprof_pvt){.type = t, .unit = u};
	return 0;
}

int ingest_pb_period(struct ingest_pb *b, const char *type, const char *unit, int64_t period)
{
	int64_t t = ingest_pb_str(b, type, strlen(type));
	int64_t u = ingest_pb_str(b, unit, strlen(unit));
	if (t < 0 || u < 0)
		return b->rc;
	b->has_period = 1;
	b->period_type = (struct pd_pprof_pvt){.type = t, .unit = u};
	b->period = period;
	return 0;
}

void ingest_pb_time(struct ingest_pb *b, int64_t time_nanos, int64_t duration_nanos)
{
	b->time_nanos = time_nanos;
	b->duration_nanos = duration_nanos;
}

int ingest_pb_comment(struct ingest_pb *b, const char *s, size_t len)
{
	int64_t i = ingest_pb_str(b, s, len);
	if (i < 0 || grow(b, (void **)&b->comments, &b->cap_comments, b->ncomments,
			  sizeof(*b->comments)))
		return b->rc;
	b->comments[b->ncomments++] = i;
	return 0;
}

static int symbol(struct ingest_pb *b, const char *s, size_t len, int64_t *out)
{
	if (len > b->lim.max_symbol_len)
		return fail(b, PD_ETOOBIG, PD_INGEST_LIMIT_SYMBOL_LEN,
			    "a symbol of %zu bytes is longer than %zu (%s)", len,
			    b->lim.max_symbol_len, pd_ingest_limit_flag(PD_INGEST_LIMIT_SYMBOL_LEN));
	*out = s ? ingest_pb_str(b, s, len) : 0;
	return *out < 0 ? b->rc : 0;
}

int64_t ingest_pb_symbol(struct ingest_pb *b, const char *s, size_t len)
{
	int64_t i = -1;
	return symbol(b, s, len, &i) ? -1 : i;
}

int64_t ingest_pb_symbol_hashed(struct ingest_pb *b, const char *s, size_t len, uint64_t hash)
{
	if (len > b->lim.max_symbol_len) {
		fail(b, PD_ETOOBIG, PD_INGEST_LIMIT_SYMBOL_LEN,
		     "a symbol of %zu bytes is longer than %zu (%s)", len, b->lim.max_symbol_len,
		     pd_ingest_limit_flag(PD_INGEST_LIMIT_SYMBOL_LEN));
		return -1;
	}
	return str_hashed(b, s, len, hash);
}

uint64_t ingest_pb_function(struct ingest_pb *b, const char *name, size_t name_len,
			    const char *system_name, size_t system_name_len, const char *file,
			    size_t file_len, int64_t start_line)
{
	if (!system_name) {
		system_name = name;
		system_name_len = name_len;
	}
	int64_t f[3] = {0, 0, 0};
	if (symbol(b, name, name_len, &f[0]) || symbol(b, system_name, system_name_len, &f[1]) ||
	    symbol(b, file, file_len, &f[2]))
		return 0;
	return ingest_pb_function_strs(b, f[0], f[1], f[2], start_line);
}

uint64_t ingest_pb_function_strs(struct ingest_pb *b, int64_t name, int64_t system_name,
				 int64_t file, int64_t start_line)
{
	if (b->rc)
		return 0;
	int64_t f[4] = {name, system_name, file, start_line};
	struct key k = {.w = f};
	struct slot *sl = lookup(b, K_FUNC, key_hash(K_FUNC, f, sizeof(f)), &k);
	if (!sl)
		return 0;
	if (sl->kid)
		return SLOT_ID(sl);
	if (grow(b, (void **)&b->fn, &b->cap_fn, b->nfn, sizeof(*b->fn)) ||
	    claim(b, sl, K_FUNC, b->nfn + 1))
		return 0;
	b->fn[b->nfn] = (struct pd_pprof_pfunction){
	    .id = b->nfn + 1, .name = f[0], .system_name = f[1], .filename = f[2],
	    .start_line = start_line};
	return ++b->nfn;
}

uint64_t ingest_pb_mapping(struct ingest_pb *b, uint64_t start, uint64_t limit, uint64_t offset,
			   const char *filename, size_t filename_len, const char *build_id,
			   size_t build_id_len, int has_functions)
{
	int64_t fname = 0, bid = 0;
	if (symbol(b, filename, filename_len, &fname) || symbol(b, build_id, build_id_len, &bid))
		return 0;
	int64_t w[6] = {(int64_t)start, (int64_t)limit, (int64_t)offset, fname, bid,
			has_functions != 0};
	struct key k = {.w = w};
	struct slot *sl = lookup(b, K_MAP, key_hash(K_MAP, w, sizeof(w)), &k);
	if (!sl)
		return 0;
	if (sl->kid)
		return SLOT_ID(sl);
	if (grow(b, (void **)&b->map, &b->cap_map, b->nmap, sizeof(*b->map)) ||
	    claim(b, sl, K_MAP, b->nmap + 1))
		return 0;
	b->map[b->nmap] = (struct pd_pprof_pmapping){.id = b->nmap + 1,
						     .memory_start = start,
						     .memory_limit = limit,
						     .file_offset = offset,
						     .filename = fname,
						     .build_id = bid,
						     .has_functions = has_functions != 0};
	return ++b->nmap;
}

uint64_t ingest_pb_location(struct ingest_pb *b, uint64_t mapping_id, uint64_t address,
			    const struct ingest_pb_line *lines, size_t nlines)
{
	if (b->rc)
		return 0;
	int64_t w[2] = {(int64_t)mapping_id, (int64_t)address};
	/* the mapping and the address, then the lines (two words each, no padding) */
	_Static_assert(sizeof(struct ingest_pb_line) == 2 * sizeof(int64_t), "a line is 2 words");
	uint64_t h;
	if (nlines == 1) {
		int64_t one[4] = {w[0], w[1], (int64_t)lines[0].function_id, lines[0].line};
		h = key_hash(K_LOC, one, sizeof(one));
	} else {
		h = XXH3_64bits_withSeed(lines, nlines * sizeof(*lines),
					 key_hash(K_LOC, w, sizeof(w)));
	}
	struct key k = {.w = w, .p = lines, .n = nlines};
	struct slot *sl = lookup(b, K_LOC, h, &k);
	if (!sl)
		return 0;
	if (sl->kid)
		return SLOT_ID(sl);
	struct pd_pprof_pline *pl = NULL;
	if (nlines && !(pl = pd_arena_calloc(b->arena, nlines, sizeof(*pl)))) {
		oom(b);
		return 0;
	}
	for (size_t i = 0; i < nlines; i++)
		pl[i] = (struct pd_pprof_pline){.function_id = lines[i].function_id,
						.line = lines[i].line};
	if (grow(b, (void **)&b->loc, &b->cap_loc, b->nloc, sizeof(*b->loc)) ||
	    claim(b, sl, K_LOC, b->nloc + 1))
		return 0;
	b->loc[b->nloc] = (struct pd_pprof_plocation){.id = b->nloc + 1,
						      .mapping_id = mapping_id,
						      .address = address,
						      .line = pl,
						      .nline = nlines};
	return ++b->nloc;
}

uint64_t ingest_pb_frame(struct ingest_pb *b, uint64_t function_id, int64_t line)
{
	struct ingest_pb_line l = {.function_id = function_id, .line = line};
	return function_id ? ingest_pb_location(b, 0, 0, &l, 1) : 0;
}

int ingest_pb_sample(struct ingest_pb *b, const uint64_t *locs, size_t nlocs,
		     const int64_t *values, size_t nvalues, const struct ingest_pb_label *labels,
		     size_t nlabels, int merge)
{
	if (b->rc)
		return b->rc;
	if (nvalues != b->nst)
		return fail(b, PD_EINVAL, 0, "a sample has %zu values for %zu sample types",
			    nvalues, b->nst);
	if (nlocs > b->lim.max_stack_depth)
		return fail(b, PD_ETOOBIG, PD_INGEST_LIMIT_STACK_DEPTH,
			    "a stack of %zu frames is deeper than %zu (%s)", nlocs,
			    b->lim.max_stack_depth,
			    pd_ingest_limit_flag(PD_INGEST_LIMIT_STACK_DEPTH));
	struct pd_pprof_plabel *pl = NULL;
	if (nlabels && !(pl = pd_arena_calloc(b->arena, nlabels, sizeof(*pl))))
		return oom(b);
	for (size_t i = 0; i < nlabels; i++) {
		int64_t k = ingest_pb_str(b, labels[i].key, labels[i].key_len);
		int64_t v = labels[i].str ? ingest_pb_str(b, labels[i].str, labels[i].str_len) : 0;
		int64_t u = labels[i].num_unit
				? ingest_pb_str(b, labels[i].num_unit, strlen(labels[i].num_unit))
				: 0;
		if (k < 0 || v < 0 || u < 0)
			return b->rc;
		pl[i] = (struct pd_pprof_plabel){
		    .key = k, .str = v, .num = labels[i].str ? 0 : labels[i].num, .num_unit = u};
	}
	struct slot *sl = NULL;
	if (merge) {
		uint64_t h = key_hash(K_SAMPLE, locs, nlocs * sizeof(*locs));
		if (nlabels)
			h = XXH3_64bits_withSeed(pl, nlabels * sizeof(*pl), h);
		struct key k = {.p = locs, .n = nlocs, .lab = pl, .nlab = nlabels};
		if (!(sl = lookup(b, K_SAMPLE, h, &k)))
			return b->rc;
		if (sl->kid) {
			struct pd_pprof_psample *s = &b->smp[SLOT_ID(sl) - 1];
			for (size_t i = 0; i < nvalues; i++)
				if (__builtin_add_overflow(s->value[i], values[i], &s->value[i]))
					return fail(b, PD_EINVAL, 0,
						    "the values of one stack sum past 2^63");
			return 0;
		}
	}
	if (b->nsmp >= b->lim.max_samples)
		return fail(b, PD_ETOOBIG, PD_INGEST_LIMIT_SAMPLES,
			    "the profile has more than %zu samples (%s)", b->lim.max_samples,
			    pd_ingest_limit_flag(PD_INGEST_LIMIT_SAMPLES));
	uint64_t *l = nlocs ? pd_arena_alloc(b->arena, nlocs * sizeof(*l)) : NULL;
	int64_t *v = pd_arena_alloc(b->arena, (nvalues ? nvalues : 1) * sizeof(*v));
	if ((nlocs && !l) || !v)
		return oom(b);
	if (nlocs)
		memcpy(l, locs, nlocs * sizeof(*l));
	if (nvalues)
		memcpy(v, values, nvalues * sizeof(*v));
	if (grow(b, (void **)&b->smp, &b->cap_smp, b->nsmp, sizeof(*b->smp)))
		return b->rc;
	if (sl && claim(b, sl, K_SAMPLE, b->nsmp + 1))
		return b->rc;
	b->smp[b->nsmp++] = (struct pd_pprof_psample){.location_id = l,
						      .nlocation = nlocs,
						      .value = v,
						      .nvalue = nvalues,
						      .label = pl,
						      .nlabel = nlabels};
	return 0;
}

size_t ingest_pb_nsamples(const struct ingest_pb *b)
{
	return b->nsmp;
}

int ingest_pb_err(const struct ingest_pb *b, struct pd_err *err, int *limit)
{
	if (!b->rc)
		return 0;
	if (err)
		*err = b->err;
	if (limit)
		*limit = b->limit;
	return b->rc;
}

int ingest_pb_finish(struct ingest_pb *b, uint8_t **out, size_t *out_len,
		     struct pd_pprof_profile **decoded, struct pd_err *err)
{
	if (b->rc) {
		if (err)
			*err = b->err;
		return b->rc;
	}
	struct pd_pprof_parts parts = {
	    .strings = b->str,
	    .string_len = b->str_len,
	    .nstrings = b->nstr,
	    .sample_type = b->st,
	    .nsample_type = b->nst,
	    .sample = b->smp,
	    .nsample = b->nsmp,
	    .mapping = b->map,
	    .nmapping = b->nmap,
	    .location = b->loc,
	    .nlocation = b->nloc,
	    .function = b->fn,
	    .nfunction = b->nfn,
	    .has_period_type = b->has_period,
	    .period_type = b->period_type,
	    .period = b->period,
	    .time_nanos = b->time_nanos,
	    .duration_nanos = b->duration_nanos,
	    .comment = b->comments,
	    .ncomment = b->ncomments,
	};
	int rc = pd_pprof_parts_encode(&parts, out, out_len, err);
	if (rc)
		return rc;
	/* built from the same parts, validated as any pushed profile; a profile
	 * past what decoding takes is decoded from its bytes, to be refused as such */
	if (decoded && (rc = *out_len <= PD_PPROF_DEFAULT_MAX_DECOMPRESSED
				 ? pd_pprof_parts_copy(&parts, decoded, err)
				 : pd_pprof_decode(decoded, *out, *out_len, NULL, err))) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

int ingest_pb_select_types(struct ingest_pb *b, const size_t *keep, size_t nk)
{
	if (b->rc)
		return b->rc;
	for (size_t i = 0; i < nk; i++)
		if (keep[i] >= b->nst || (i > 0 && keep[i] <= keep[i - 1]))
			return fail(b, PD_EINVAL, 0, "sample type %zu kept out of order", keep[i]);
	for (size_t i = 0; i < nk; i++)
		b->st[i] = b->st[keep[i]];
	b->nst = nk;
	for (size_t i = 0; i < b->nsmp; i++) {
		struct pd_pprof_psample *sm = &b->smp[i];
		for (size_t j = 0; j < nk; j++)
			sm->value[j] = sm->value[keep[j]];
		sm->nvalue = nk;
	}
	return 0;
}
