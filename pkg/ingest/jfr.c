/* jfr.c: JFR recordings as pyroscope-java (async-profiler) sends them to
 * /ingest?format=jfr, turned into pprof profiles the way Pyroscope's converter
 * turns them (its pkg/og/convert/jfr and grafana/jfr-parser's pprof package):
 *
 *   jdk.ExecutionSample            -> profile  cpu:nanoseconds (not when sleeping)
 *   profiler.WallClockSample       -> wall     wall:nanoseconds (and cpu when
 *                                     runnable in a wall recording)
 *   jdk.ObjectAllocationInNewTLAB  -> allocs   alloc_in_new_tlab_objects, _bytes
 *   jdk.ObjectAllocationOutsideTLAB-> allocs   alloc_outside_tlab_objects, _bytes
 *   jdk.ObjectAllocationSample     -> allocs   alloc_sample_objects, _bytes
 *   profiler.LiveObject            -> heap     live:count
 *   jdk.JavaMonitorEnter           -> mutex    contentions:count, delay:nanoseconds
 *   jdk.ThreadPark                 -> block    contentions:count, delay:nanoseconds
 *   profiler.Malloc                -> memory   malloc_objects, malloc_bytes
 *
 * Frames are named class.method from the symbol pool (JVM-generated numbers
 * replaced, jfr_symbols.c) at the frame's line. The contextId of an event
 * selects its labels in the `labels` part; each label set becomes its own
 * profile, whose series carries those labels (after the request's own, which
 * win), with profile_id kept on samples as span_id, as Pyroscope's distributor
 * stores them. Events are summed per profile, stack trace and span while a chunk
 * is read, and the sums become samples when the chunk ends, so each distinct
 * stack is resolved once per chunk and profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jfr_int.h"

enum kind { K_CPU, K_WALL, K_ALLOC, K_LIVE, K_MUTEX, K_BLOCK, K_MALLOC, NKIND };

#define MAXV 6

struct kind_def {
	const char *metric;
	size_t nst;
	const char *st[MAXV][2];
	const char *period_type, *period_unit;
	int timed; /* values scaled by the sampling period */
};

static const struct kind_def kinds[NKIND] = {
    [K_CPU] = {"profile", 1, {{"cpu", "nanoseconds"}}, "cpu", "nanoseconds", 1},
    [K_WALL] = {"wall", 1, {{"wall", "nanoseconds"}}, "wall", "nanoseconds", 1},
    [K_ALLOC] = {"allocs",
                 6,
                 {{"alloc_in_new_tlab_objects", "count"},
                  {"alloc_in_new_tlab_bytes", "bytes"},
                  {"alloc_outside_tlab_objects", "count"},
                  {"alloc_outside_tlab_bytes", "bytes"},
                  {"alloc_sample_objects", "count"},
                  {"alloc_sample_bytes", "bytes"}},
                 "space",
                 "bytes",
                 0},
    [K_LIVE] = {"heap", 1, {{"live", "count"}}, "objects", "count", 0},
    [K_MUTEX] =
        {"mutex", 2, {{"contentions", "count"}, {"delay", "nanoseconds"}}, "mutex", "count", 0},
    [K_BLOCK] =
        {"block", 2, {{"contentions", "count"}, {"delay", "nanoseconds"}}, "block", "count", 0},
    [K_MALLOC] =
        {"memory", 2, {{"malloc_objects", "count"}, {"malloc_bytes", "bytes"}}, NULL, NULL, 0},
};

/* A label set of contexts: sorted pairs, and their bytes as a key. */
struct group {
	struct ingest_label *l;
	size_t n;
	char *key;
	size_t key_len;
};

/* One event sum of a chunk. */
struct sum {
	uint32_t kind, group;
	uint64_t stack, span;
	uint64_t v[MAXV];
};

struct prof {
	uint32_t kind, group;
	struct ingest_pb *b;
	uint64_t mapping;
	unsigned mask;  /* the allocation kinds seen (K_ALLOC) */
	uint64_t chunk; /* the last chunk whose sums it takes (1-based), and its */
	uint32_t batch; /* batch of sums in that chunk */
};

/* What the chunk's frames make in the profile being built, for the sums of one
 * profile after another (gen numbers them within the chunk): a frame's location
 * (0: left out) by frame key, a method's function by its index in the pool, and
 * the method's name, made once a chunk (into names). */
struct frame_memo {
	uint32_t gen, loc;
};

enum { NAME_UNKNOWN = 0, NAME_OK, NAME_MISSING };

struct method_memo {
	uint32_t gen, fn;
	uint32_t name_state, name_len;
	size_t name_off;
	uint64_t name_hash; /* ingest_pb_str_hash of the name */
};

struct conv {
	const struct ingest_meta *m;
	struct pd_ingest_limits lim;
	const struct jfr_labels *labels;
	struct pd_err *err;
	int limit_hit;
	uint64_t period;
	uint64_t count; /* the last wall clock sample's count, which the reference
	                   converter goes on using as the count of later events */
	char *event;    /* the recording's "event" setting (cpu, itimer, wall) */
	int wall;       /* 1: event is "wall" */
	struct group *groups;
	size_t ngroups, cap_groups;
	struct jfr_map group_by_key, group_by_ctx;
	int last_ok; /* the last context looked up */
	uint64_t last_ctx, last_span_name;
	uint32_t last_group;
	struct sum *sums;
	size_t nsums, cap_sums;
	struct jfr_map sum_ids; /* sums but each stack's first (first) */
	uint32_t *first;        /* by stack pool index: its first sum + 1, 0: none */
	size_t cap_first;
	uint64_t first_chunk; /* the chunk (1-based) first is for */
	struct prof *profs;
	size_t nprofs, cap_profs;
	struct jfr_map prof_ids;
	uint64_t chunk; /* chunks read */
	/* this chunk's frames and methods (see struct frame_memo), and its sums in
	 * the order they are turned into samples: profile by profile */
	uint32_t gen;
	struct frame_memo *fmemo;
	size_t cap_fmemo;
	struct method_memo *mmemo;
	size_t cap_mmemo;
	char *names;
	size_t names_len, cap_names;
	uint32_t *order, *batch_start;
	size_t cap_order, cap_batch;
	uint64_t *scratch;
	size_t cap_scratch;
};

static int oom(struct conv *c)
{
	return pd_err_set(c->err, PD_ENOMEM, "out of memory");
}

static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc <= n)
		nc *= 2;
	void *q = realloc(*v, nc * sz);
	if (!q)
		return PD_ENOMEM;
	*v = q;
	*cap = nc;
	return 0;
}

static int str_eq(struct jfr_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.s, lit, n) == 0;
}

/* ---- label sets --------------------------------------------------------------- */

static int cmp_label(const void *a, const void *b)
{
	const struct ingest_label *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int r = memcmp(x->name, y->name, n);
	if (r)
		return r;
	return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

/* Adds name=value to g unless g has the name (dots read as underscores); empty
 * names and values are left out. */
static int group_add(struct group *g, size_t *cap, const char *name, size_t nl, const char *value,
                     size_t vl)
{
	if (!nl || !vl)
		return 0;
	char *n = malloc(nl + 1), *v = malloc(vl + 1);
	if (!n || !v) {
		free(n);
		free(v);
		return PD_ENOMEM;
	}
	memcpy(n, name, nl);
	n[nl] = 0;
	for (size_t i = 0; i < nl; i++)
		if (n[i] == '.')
			n[i] = '_';
	memcpy(v, value, vl);
	v[vl] = 0;
	for (size_t i = 0; i < g->n; i++) {
		if (g->l[i].name_len == nl && memcmp(g->l[i].name, n, nl) == 0) {
			free(n);
			free(v);
			return 0;
		}
	}
	if (grow((void **)&g->l, cap, g->n, sizeof(*g->l))) {
		free(n);
		free(v);
		return PD_ENOMEM;
	}
	g->l[g->n++] =
	    (struct ingest_label){.name = n, .name_len = nl, .value = v, .value_len = vl};
	return 0;
}

static void group_fini(struct group *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free((void *)g->l[i].name);
		free((void *)g->l[i].value);
	}
	free(g->l);
	free(g->key);
}

static int snapshot_string(const struct conv *c, int64_t id, const char **s, size_t *n)
{
	if (!c->labels || !jfr_labels_string(c->labels, id, s, n) || !*s) {
		*s = "";
		*n = 0;
	}
	return *n > 0;
}

/* The group of the labels of context ctx and span name span_name. */
static int group_of(struct conv *c, uint64_t ctx, uint64_t span_name, uint32_t *out)
{
	if (c->last_ok && c->last_ctx == ctx && c->last_span_name == span_name) {
		*out = c->last_group;
		return 0;
	}
	if (jfr_map_get(&c->group_by_ctx, ctx, span_name, 0, out)) {
		c->last_ok = 1;
		c->last_ctx = ctx;
		c->last_span_name = span_name;
		c->last_group = *out;
		return 0;
	}
	struct group g = {0};
	size_t cap = 0;
	const int64_t *keys, *values;
	size_t n = 0;
	int rc = 0;
	if (c->labels && jfr_labels_context(c->labels, ctx, &keys, &values, &n)) {
		if (n > c->lim.max_labels) { /* the series could not hold them */
			c->limit_hit = PD_INGEST_LIMIT_LABELS;
			return pd_err_set(
			    c->err, PD_ETOOBIG,
			    "context %llu of the labels part has %zu labels, more than "
			    "%zu (%s)",
			    (unsigned long long)ctx, n, c->lim.max_labels,
			    pd_ingest_limit_flag(PD_INGEST_LIMIT_LABELS));
		}
		for (size_t i = 0; i < n && !rc; i++) {
			const char *k, *v;
			size_t kl, vl;
			snapshot_string(c, keys[i], &k, &kl);
			snapshot_string(c, values[i], &v, &vl);
			rc = group_add(&g, &cap, k, kl, v, vl);
		}
	}
	if (!rc && span_name) {
		const char *v;
		size_t vl;
		if (snapshot_string(c, (int64_t)span_name, &v, &vl))
			rc = group_add(&g, &cap, "span_name", 9, v, vl);
	}
	if (rc)
		goto fail;
	if (g.n)
		qsort(g.l, g.n, sizeof(*g.l), cmp_label);
	size_t kl = 0;
	for (size_t i = 0; i < g.n; i++)
		kl += g.l[i].name_len + g.l[i].value_len + 2;
	if (!(g.key = malloc(kl + 1)))
		goto fail;
	for (size_t i = 0; i < g.n; i++) {
		memcpy(g.key + g.key_len, g.l[i].name, g.l[i].name_len + 1);
		g.key_len += g.l[i].name_len + 1;
		memcpy(g.key + g.key_len, g.l[i].value, g.l[i].value_len + 1);
		g.key_len += g.l[i].value_len + 1;
	}
	uint64_t h = pd_hash_bytes(g.key, g.key_len, 0);
	uint32_t gi;
	for (uint64_t probe = 0;; probe++) {
		if (!jfr_map_get(&c->group_by_key, h, g.key_len, probe, &gi)) {
			if (grow((void **)&c->groups, &c->cap_groups, c->ngroups,
			         sizeof(*c->groups)))
				goto fail;
			gi = (uint32_t)c->ngroups;
			if (jfr_map_put(&c->group_by_key, h, g.key_len, probe, gi))
				goto fail;
			c->groups[c->ngroups++] = g;
			break;
		}
		struct group *o = &c->groups[gi];
		if (o->key_len == g.key_len && memcmp(o->key, g.key, g.key_len) == 0) {
			group_fini(&g);
			break;
		}
	}
	if (jfr_map_put(&c->group_by_ctx, ctx, span_name, 0, gi))
		return oom(c);
	*out = gi;
	return 0;
fail:
	group_fini(&g);
	return oom(c);
}

/* ---- events ------------------------------------------------------------------- */

static int add(struct conv *c, struct jfr_parser *p, int kind, int sub, const struct jfr_event *ev,
               int correlated, uint64_t v0, uint64_t v1)
{
	uint32_t g;
	uint64_t span = correlated ? ev->span_id : 0;
	int rc = group_of(c, correlated ? ev->context_id : 0, correlated ? ev->span_name : 0, &g);
	if (rc)
		return rc;
	/* an event whose stack is not in the pool makes no sample (as the
	 * reference converter has it): it is dropped here, after its labels */
	long at = jfr_stack_index(p, ev->stack_trace);
	if (at < 0)
		return 0;
	if (c->first_chunk != c->chunk + 1) { /* the chunk's first event */
		size_t n = jfr_stack_count(p);
		if (grow((void **)&c->first, &c->cap_first, n, sizeof(*c->first)))
			return oom(c);
		memset(c->first, 0, n * sizeof(*c->first));
		c->first_chunk = c->chunk + 1;
	}
	/* the stack's first sum, else the map of the others */
	uint32_t si = c->first[at];
	struct sum *s = si ? &c->sums[si - 1] : NULL;
	if (s && s->kind == (uint32_t)kind && s->group == g && s->span == span) {
		si--;
	} else {
		uint64_t a = (uint64_t)kind << 32 | g;
		if (!si || !jfr_map_get(&c->sum_ids, a, ev->stack_trace, span, &si)) {
			if (grow((void **)&c->sums, &c->cap_sums, c->nsums, sizeof(*c->sums)))
				return oom(c);
			int in_map = si != 0;
			si = (uint32_t)c->nsums++;
			c->sums[si] = (struct sum){.kind = (uint32_t)kind,
			                           .group = g,
			                           .stack = ev->stack_trace,
			                           .span = span};
			if (!in_map)
				c->first[at] = si + 1;
			else if (jfr_map_put(&c->sum_ids, a, ev->stack_trace, span, si))
				return oom(c);
		}
		s = &c->sums[si];
	}
	if (kinds[kind].timed) {
		s->v[0] += v0 * c->period;
	} else {
		s->v[2 * sub] += v0;
		s->v[2 * sub + 1] += v1;
	}
	return 0;
}

static int on_event(void *ctx, struct jfr_parser *p, const struct jfr_event *ev)
{
	struct conv *c = ctx;
	struct jfr_str ts;
	int wall = c->wall;
	switch (ev->type) {
	case JFR_EV_EXECUTION_SAMPLE: {
		int rc = 0;
		if (jfr_thread_state(p, ev->state, &ts) && !str_eq(ts, "STATE_SLEEPING"))
			rc = add(c, p, K_CPU, 0, ev, 1, c->count, 0);
		if (!rc && wall)
			rc = add(c, p, K_WALL, 0, ev, 1, c->count, 0);
		return rc;
	}
	case JFR_EV_WALL_CLOCK: {
		int rc = 0;
		c->count = ev->samples;
		if (wall && jfr_thread_state(p, ev->state, &ts) && str_eq(ts, "STATE_RUNNABLE"))
			rc = add(c, p, K_CPU, 0, ev, 1, c->count, 0);
		return rc ? rc : add(c, p, K_WALL, 0, ev, 1, c->count, 0);
	}
	case JFR_EV_ALLOC_IN_NEW_TLAB:
		return add(c, p, K_ALLOC, 0, ev, 1, c->count, ev->tlab_size);
	case JFR_EV_ALLOC_OUTSIDE_TLAB:
		return add(c, p, K_ALLOC, 1, ev, 1, c->count, ev->allocation_size);
	case JFR_EV_ALLOC_SAMPLE:
		return add(c, p, K_ALLOC, 2, ev, 0, c->count, ev->weight);
	case JFR_EV_LIVE_OBJECT:
		return add(c, p, K_LIVE, 0, ev, 0, c->count, 0);
	case JFR_EV_MONITOR_ENTER:
		return add(c, p, K_MUTEX, 0, ev, 1, c->count, ev->duration);
	case JFR_EV_THREAD_PARK:
		return add(c, p, K_BLOCK, 0, ev, 0, c->count, ev->duration);
	case JFR_EV_MALLOC:
		return add(c, p, K_MALLOC, 0, ev, 0, c->count, ev->size);
	case JFR_EV_ACTIVE_SETTING: {
		struct jfr_str n = jfr_resolve(p, ev->name);
		if (!str_eq(n, "event"))
			return 0;
		struct jfr_str v = jfr_resolve(p, ev->value);
		char *e = malloc((size_t)v.len + 1);
		if (!e)
			return oom(c);
		memcpy(e, v.s, v.len);
		e[v.len] = 0;
		free(c->event);
		c->event = e;
		c->wall = strcmp(e, "wall") == 0;
		return 0;
	}
	}
	return 0;
}

/* ---- samples ------------------------------------------------------------------ */

static int pb_failed(struct conv *c, struct ingest_pb *b)
{
	int rc = ingest_pb_err(b, c->err, &c->limit_hit);
	return rc ? rc : oom(c);
}

static int profile_of(struct conv *c, uint32_t kind, uint32_t group, struct prof **out)
{
	uint32_t pi;
	if (jfr_map_get(&c->prof_ids, kind, group, 0, &pi)) {
		*out = &c->profs[pi];
		return 0;
	}
	if (c->nprofs >= c->lim.max_profiles) {
		c->limit_hit = PD_INGEST_LIMIT_PROFILES;
		return pd_err_set(
		    c->err, PD_ETOOBIG, "the request makes more than %zu profiles (%s)",
		    c->lim.max_profiles, pd_ingest_limit_flag(PD_INGEST_LIMIT_PROFILES));
	}
	if (grow((void **)&c->profs, &c->cap_profs, c->nprofs, sizeof(*c->profs)))
		return oom(c);
	const struct kind_def *k = &kinds[kind];
	struct ingest_pb *b = ingest_pb_create(&c->lim);
	if (!b)
		return oom(c);
	struct prof *pr = &c->profs[c->nprofs];
	*pr = (struct prof){.kind = kind, .group = group, .b = b};
	for (size_t i = 0; i < k->nst; i++)
		ingest_pb_sample_type(b, k->st[i][0], k->st[i][1]);
	if (k->period_type)
		ingest_pb_period(b, k->period_type, k->period_unit,
		                 k->timed ? (int64_t)c->period : 0);
	/* in unsigned arithmetic: times far off wrap rather than overflow */
	ingest_pb_time(b, (int64_t)((uint64_t)c->m->from_ms * 1000000u),
	               (int64_t)(((uint64_t)c->m->until_ms - (uint64_t)c->m->from_ms) * 1000000u));
	if (c->m->aggregation && *c->m->aggregation) {
		char cm[128];
		int n = snprintf(cm, sizeof(cm), "aggregation=%s", c->m->aggregation);
		ingest_pb_comment(b, cm, n < (int)sizeof(cm) ? (size_t)n : sizeof(cm) - 1);
	}
	pr->mapping = ingest_pb_mapping(b, 0, 0, 0, NULL, 0, NULL, 0, 1);
	if (ingest_pb_err(b, NULL, NULL)) {
		int rc = pb_failed(c, b);
		ingest_pb_destroy(b);
		return rc;
	}
	if (jfr_map_put(&c->prof_ids, kind, group, 0, (uint32_t)c->nprofs)) {
		ingest_pb_destroy(b);
		return oom(c);
	}
	c->nprofs++;
	*out = pr;
	return 0;
}

/* The method's name, class.method from the symbol pool with JVM-generated
 * numbers replaced, made once a chunk: NAME_OK with it in names, or
 * NAME_MISSING when the method or its class is not in the pools. */
static int method_name(struct conv *c, struct jfr_parser *p, struct method_memo *mm,
                       uint64_t method)
{
	uint64_t cls, name_sym, cls_sym;
	if (!jfr_method(p, method, &cls, &name_sym) || !jfr_class(p, cls, &cls_sym)) {
		mm->name_state = NAME_MISSING;
		return 0;
	}
	struct jfr_str cn = jfr_symbol(p, cls_sym), mn = jfr_symbol(p, name_sym);
	/* checked before the names are rewritten, which costs their length */
	if ((size_t)cn.len + mn.len + 1 > c->lim.max_symbol_len) {
		c->limit_hit = PD_INGEST_LIMIT_SYMBOL_LEN;
		return pd_err_set(c->err, PD_ETOOBIG,
				  "a method name of %zu bytes (class and method) is longer than %zu "
				  "(%s)",
				  (size_t)cn.len + mn.len + 1, c->lim.max_symbol_len,
				  pd_ingest_limit_flag(PD_INGEST_LIMIT_SYMBOL_LEN));
	}
	/* what the names take is charged as work, which bounds it by the recording */
	size_t need = (size_t)cn.len + mn.len + 8;
	int rc = jfr_charge(p, need, c->err);
	if (rc)
		return rc;
	if (c->names_len + need > c->cap_names) {
		size_t nc = c->cap_names ? c->cap_names : 4096;
		while (nc < c->names_len + need)
			nc *= 2;
		char *q = realloc(c->names, nc);
		if (!q)
			return oom(c);
		c->names = q;
		c->cap_names = nc;
	}
	char *o = c->names + c->names_len;
	size_t l = jfr_symbol_normalize(cn.s, cn.len, o);
	o[l++] = '.';
	l += jfr_symbol_normalize(mn.s, mn.len, o + l);
	mm->name_state = NAME_OK;
	mm->name_off = c->names_len;
	mm->name_len = (uint32_t)l;
	mm->name_hash = ingest_pb_str_hash(o, l);
	c->names_len += l;
	return 0;
}

/* The function of the method of pool index mi in profile pr (made once for the
 * profile's sums of the chunk); 0 when the method or its class is not in the
 * pools, so that the frame is left out, as the reference converter leaves it
 * out. */
static int function_of(struct conv *c, struct jfr_parser *p, struct prof *pr, long mi,
                       uint64_t method, uint64_t *fn)
{
	struct method_memo *mm = &c->mmemo[mi];
	*fn = 0;
	if (mm->gen == c->gen) {
		*fn = mm->fn;
		return 0;
	}
	int rc;
	if (mm->name_state == NAME_UNKNOWN && (rc = method_name(c, p, mm, method)))
		return rc;
	if (mm->name_state == NAME_OK) {
		/* no system name, as the reference converter has it; the name hashed
		 * once a chunk for all the profiles */
		int64_t name = ingest_pb_symbol_hashed(pr->b, c->names + mm->name_off,
		                                       mm->name_len, mm->name_hash);
		*fn = name < 0 ? 0 : ingest_pb_function_strs(pr->b, name, 0, 0, 0);
		if (!*fn)
			return pb_failed(c, pr->b);
		if (*fn > UINT32_MAX - 2)
			return oom(c);
	}
	mm->gen = c->gen;
	mm->fn = (uint32_t)*fn;
	return 0;
}

static int flush_sum(struct conv *c, struct jfr_parser *p, const struct sum *s, struct prof *pr,
                     const struct jfr_frame *frames)
{
	const struct jfr_stack *st = jfr_stack(p, s->stack);
	int rc;
	if ((rc = jfr_charge(p, (uint64_t)st->n + 1, c->err)))
		return rc;
	if (grow((void **)&c->scratch, &c->cap_scratch, st->n, sizeof(*c->scratch)))
		return oom(c);
	size_t n = 0;
	for (uint32_t i = 0; i < st->n; i++) {
		struct frame_memo *fm = &c->fmemo[st->frames[i]];
		if (fm->gen == c->gen) {
			if (fm->loc)
				c->scratch[n++] = fm->loc;
			continue;
		}
		const struct jfr_frame *f = &frames[st->frames[i]];
		long mi = jfr_method_index(p, f->method);
		uint64_t fn = 0, id = 0;
		if (mi >= 0 && (rc = function_of(c, p, pr, mi, f->method, &fn)))
			return rc;
		if (fn) {
			struct ingest_pb_line ln = {.function_id = fn, .line = (int64_t)f->line};
			if (!(id = ingest_pb_location(pr->b, pr->mapping, 0, &ln, 1)))
				return pb_failed(c, pr->b);
			if (id > UINT32_MAX - 2)
				return oom(c);
		}
		fm->gen = c->gen;
		fm->loc = (uint32_t)id;
		if (id)
			c->scratch[n++] = id;
	}
	const struct kind_def *k = &kinds[s->kind];
	int64_t v[MAXV];
	for (size_t i = 0; i < k->nst; i++)
		v[i] = (int64_t)s->v[i];
	if (s->kind == K_ALLOC)
		for (int sub = 0; sub < 3; sub++)
			if (s->v[2 * sub] || s->v[2 * sub + 1])
				pr->mask |= 1u << sub;
	char span[17];
	struct ingest_pb_label lbl = {.key = "span_id", .key_len = 7, .str = span, .str_len = 16};
	if (s->span)
		snprintf(span, sizeof(span), "%016llx", (unsigned long long)s->span);
	if (ingest_pb_sample(pr->b, c->scratch, n, v, k->nst, &lbl, s->span ? 1 : 0, 1))
		return pb_failed(c, pr->b);
	return 0;
}

/* Turns the chunk's sums into samples, the sums of one profile after another
 * (each profile's in the order they came, so that its ids come in the same
 * order as when the sums are taken in turn), with the memos of the chunk's
 * frames and methods sized by its pools. */
static int on_chunk_end(void *ctx, struct jfr_parser *p)
{
	struct conv *c = ctx;
	size_t nframes = 0, nmethods = jfr_method_count(p);
	const struct jfr_frame *frames = jfr_frames(p, &nframes);
	int rc = 0;
	c->chunk++;
	if ((nframes &&
	     grow((void **)&c->fmemo, &c->cap_fmemo, nframes - 1, sizeof(*c->fmemo))) ||
	    (nmethods &&
	     grow((void **)&c->mmemo, &c->cap_mmemo, nmethods - 1, sizeof(*c->mmemo))) ||
	    (c->nsums && grow((void **)&c->order, &c->cap_order, c->nsums, sizeof(*c->order))))
		return oom(c);
	if (nframes)
		memset(c->fmemo, 0, nframes * sizeof(*c->fmemo));
	if (nmethods)
		memset(c->mmemo, 0, nmethods * sizeof(*c->mmemo));
	c->names_len = 0;
	c->gen = 0;
	/* each sum's profile (made in the order of the sums) and its batch: the
	 * chunk's sums of one profile; order[i] is sum i's batch for now */
	size_t nb = 0;
	for (size_t i = 0; i < c->nsums; i++) {
		struct sum *s = &c->sums[i];
		struct prof *pr = NULL;
		c->order[i] = UINT32_MAX;
		if (!jfr_stack(p, s->stack))
			continue; /* as the reference converter: events without their stack
			             are left out */
		if ((rc = profile_of(c, s->kind, s->group, &pr)))
			return rc;
		if (pr->chunk != c->chunk) {
			if (grow((void **)&c->batch_start, &c->cap_batch, nb + 1,
			         sizeof(*c->batch_start)))
				return oom(c);
			pr->chunk = c->chunk;
			pr->batch = (uint32_t)nb;
			c->batch_start[nb++] = 0;
		}
		c->order[i] = pr->batch;
		c->batch_start[pr->batch]++;
	}
	/* counts to starts, then the sums placed batch by batch: order[nsums..) */
	uint32_t at = 0;
	if (grow((void **)&c->batch_start, &c->cap_batch, nb, sizeof(*c->batch_start)))
		return oom(c);
	for (size_t b = 0; b < nb; b++) {
		uint32_t k = c->batch_start[b];
		c->batch_start[b] = at;
		at += k;
	}
	c->batch_start[nb] = at;
	uint32_t *sorted = NULL;
	if (at && !(sorted = malloc(at * sizeof(*sorted))))
		return oom(c);
	for (size_t i = 0; i < c->nsums; i++)
		if (c->order[i] != UINT32_MAX)
			sorted[c->batch_start[c->order[i]]++] = (uint32_t)i;
	for (size_t b = 0, i = 0; b < nb && !rc; b++) {
		c->gen++;
		size_t end = c->batch_start[b];
		for (; i < end && !rc; i++) {
			const struct sum *s = &c->sums[sorted[i]];
			uint32_t pi;
			jfr_map_get(&c->prof_ids, s->kind, s->group, 0, &pi);
			rc = flush_sum(c, p, s, &c->profs[pi], frames);
		}
	}
	free(sorted);
	if (rc)
		return rc;
	c->nsums = 0;
	jfr_map_clear(&c->sum_ids);
	return 0;
}

/* ---- the profiles --------------------------------------------------------------- */

/* Keeps only the allocation sample types of the kinds seen (mask). */
static int keep_types(struct conv *c, struct prof *pr)
{
	size_t keep[MAXV], nk = 0;
	for (int sub = 0; sub < 3; sub++)
		if (pr->mask & (1u << sub)) {
			keep[nk++] = 2 * (size_t)sub;
			keep[nk++] = 2 * (size_t)sub + 1;
		}
	if (ingest_pb_select_types(pr->b, keep, nk))
		return pb_failed(c, pr->b);
	return 0;
}

static int emit(struct conv *c, struct prof *pr, struct pd_ingest_batch *out)
{
	uint8_t *pprof = NULL;
	size_t len = 0;
	struct pd_pprof_profile *decoded = NULL;
	struct pd_labels *labels = NULL;
	struct ingest_label *ls = NULL;
	int rc;
	if (pr->kind == K_ALLOC && pr->mask != 7 && pr->mask != 0 && (rc = keep_types(c, pr)))
		return rc;
	/* the bytes only: the store decodes them as it decodes any pushed pprof */
	rc = ingest_pb_finish(pr->b, &pprof, &len, NULL, c->err);
	if (rc) {
		ingest_pb_err(pr->b, NULL, &c->limit_hit);
		return rc;
	}
	/* the request's labels, pyroscope_spy, jfr_event, then the context's */
	const struct group *g = &c->groups[pr->group];
	size_t nreq = c->m->labels ? pd_labels_len(c->m->labels) : 0, n = 0;
	if (!(ls = calloc(nreq + g->n + 2, sizeof(*ls)))) {
		rc = oom(c);
		goto fail;
	}
	for (size_t i = 0; i < nreq; i++) {
		const struct pd_label *l = pd_labels_at(c->m->labels, i);
		ls[n++] = (struct ingest_label){.name = l->name,
		                                .name_len = l->name_len,
		                                .value = l->value,
		                                .value_len = l->value_len};
	}
	if (c->m->spy_name && *c->m->spy_name &&
	    !(c->m->labels && pd_labels_get(c->m->labels, "pyroscope_spy")))
		ls[n++] = (struct ingest_label){.name = "pyroscope_spy",
		                                .name_len = 13,
		                                .value = c->m->spy_name,
		                                .value_len = strlen(c->m->spy_name)};
	if (c->event && *c->event && !(c->m->labels && pd_labels_get(c->m->labels, "jfr_event")))
		ls[n++] = (struct ingest_label){.name = "jfr_event",
		                                .name_len = 9,
		                                .value = c->event,
		                                .value_len = strlen(c->event)};
	size_t fixed = n;
	for (size_t i = 0; i < g->n; i++) {
		int taken = 0;
		for (size_t j = 0; j < fixed && !taken; j++)
			taken = ls[j].name_len == g->l[i].name_len &&
			        memcmp(ls[j].name, g->l[i].name, g->l[i].name_len) == 0;
		if (!taken)
			ls[n++] = g->l[i];
	}
	if ((rc = ingest_series(ls, n, kinds[pr->kind].metric, c->m->app, &c->lim, &labels,
	                        &c->limit_hit, c->err)))
		goto fail;
	free(ls);
	rc = pd_ingest_batch_add(out, &c->lim, labels, pprof, len, decoded, c->m->from_ms, c->err);
	if (rc == PD_ETOOBIG)
		c->limit_hit = out->limit_hit ? out->limit_hit : PD_INGEST_LIMIT_PROFILES;
	return rc;
fail:
	free(ls);
	free(pprof);
	pd_pprof_destroy(decoded);
	return rc;
}

/* ---- the request ------------------------------------------------------------------ */

/* A part as it came, or gunzipped when it is gzip, within the limits. */
static int unpack_part(struct conv *c, const char *what, const uint8_t *data, size_t len,
                       uint8_t **owned, const uint8_t **out, size_t *out_len)
{
	*owned = NULL;
	if (!pd_gzip_is(data, len)) {
		if (len > c->lim.max_decompressed) {
			c->limit_hit = PD_INGEST_LIMIT_DECOMPRESSED;
			return pd_err_set(
			    c->err, PD_ETOOBIG, "the %s part of %zu bytes is larger than %zu (%s)",
			    what, len, c->lim.max_decompressed, pd_ingest_limit_flag(c->limit_hit));
		}
		*out = data;
		*out_len = len;
		return 0;
	}
	struct pd_inflate_opts o = {.format = PD_INFLATE_GZIP,
	                            .max = c->lim.max_decompressed,
	                            .max_ratio = c->lim.max_ratio};
	int rc = pd_inflate(data, len, &o, owned, out_len, c->err);
	if (rc == PD_ETOOBIG)
		c->limit_hit = o.max_ratio && len <= o.max / o.max_ratio
		                   ? PD_INGEST_LIMIT_RATIO
		                   : PD_INGEST_LIMIT_DECOMPRESSED;
	if (rc == PD_ECORRUPT) { /* a malformed body, as any other */
		rc = PD_EINVAL;
		if (c->err)
			c->err->code = rc;
	}
	if (rc) {
		pd_err_prefix(c->err, "the %s part", what);
		return rc;
	}
	*out = *owned;
	return 0;
}

/* 1 when s contains "multipart/form-data", in any case. */
static int is_multipart(const char *s)
{
	static const char want[] = "multipart/form-data";
	size_t n = sizeof(want) - 1;
	size_t l = s ? strlen(s) : 0;
	for (size_t i = 0; i + n <= l; i++)
		if (strncasecmp(s + i, want, n) == 0)
			return 1;
	return 0;
}

static void conv_fini(struct conv *c)
{
	for (size_t i = 0; i < c->ngroups; i++)
		group_fini(&c->groups[i]);
	free(c->groups);
	for (size_t i = 0; i < c->nprofs; i++)
		ingest_pb_destroy(c->profs[i].b);
	free(c->profs);
	free(c->sums);
	free(c->first);
	free(c->scratch);
	free(c->fmemo);
	free(c->mmemo);
	free(c->names);
	free(c->order);
	free(c->batch_start);
	free(c->event);
	jfr_map_fini(&c->group_by_key);
	jfr_map_fini(&c->group_by_ctx);
	jfr_map_fini(&c->sum_ids);
	jfr_map_fini(&c->prof_ids);
}

int ingest_jfr(const struct ingest_meta *m, const uint8_t *body, size_t len,
               const char *content_type, const struct pd_ingest_limits *lim,
               struct pd_ingest_batch *out, struct pd_err *err)
{
	struct conv c = {.m = m, .lim = pd_ingest_limits_resolve(lim), .err = err, .count = 1};
	const uint8_t *jfr = body, *lab = NULL;
	size_t jfr_len = len, lab_len = 0;
	uint8_t *jfr_owned = NULL, *lab_owned = NULL;
	struct jfr_labels *labels = NULL;
	size_t n0 = out->n;
	int rc = 0;
	out->format = "jfr";
	jfr_map_init(&c.group_by_key);
	jfr_map_init(&c.group_by_ctx);
	jfr_map_init(&c.sum_ids);
	jfr_map_init(&c.prof_ids);
	c.period = m->sample_rate ? 1000000000ull / m->sample_rate : 0;
	if (is_multipart(content_type)) {
		struct pd_ingest_part parts[16];
		size_t np;
		if ((rc = pd_ingest_multipart(body, len, content_type, parts, 16, &np, err)))
			goto out;
		const struct pd_ingest_part *pj = pd_ingest_part_get(parts, np, "jfr");
		const struct pd_ingest_part *pl = pd_ingest_part_get(parts, np, "labels");
		if (!pj) {
			rc = pd_err_set(err, PD_EINVAL, "the multipart body has no \"jfr\" part");
			goto out;
		}
		jfr = pj->data;
		jfr_len = pj->len;
		if (pl && pl->len) {
			lab = pl->data;
			lab_len = pl->len;
		}
	}
	if ((rc = unpack_part(&c, "jfr", jfr, jfr_len, &jfr_owned, &jfr, &jfr_len)))
		goto out;
	if (lab && (rc = unpack_part(&c, "labels", lab, lab_len, &lab_owned, &lab, &lab_len)))
		goto out;
	if ((rc = jfr_labels_decode(lab, lab_len, 32 * lab_len + (1u << 20), &labels, err))) {
		if (rc == PD_ETOOBIG)
			c.limit_hit = PD_INGEST_LIMIT_DECOMPRESSED;
		goto out;
	}
	c.labels = labels;
	struct jfr_limits jl = {
	    .max_work = 16 * (uint64_t)(jfr_len + lab_len) + (1u << 20),
	    .max_memory = 32 * jfr_len + (4u << 20),
	};
	static const struct jfr_callbacks cb = {.event = on_event, .chunk_end = on_chunk_end};
	if ((rc = jfr_parse(jfr, jfr_len, &jl, &cb, &c, err))) {
		if (rc == PD_ETOOBIG && !c.limit_hit)
			c.limit_hit = PD_INGEST_LIMIT_DECOMPRESSED;
		goto out;
	}
	for (size_t i = 0; i < c.nprofs && !rc; i++)
		if (ingest_pb_nsamples(c.profs[i].b) > 0)
			rc = emit(&c, &c.profs[i], out);
out:
	if (rc) {
		if (rc == PD_ETOOBIG && c.limit_hit)
			out->limit_hit = c.limit_hit;
		for (size_t i = n0; i < out->n; i++) {
			pd_labels_destroy(out->v[i].labels);
			free(out->v[i].pprof);
			pd_pprof_destroy(out->v[i].decoded);
		}
		out->n = n0;
	}
	jfr_labels_destroy(labels);
	free(jfr_owned);
	free(lab_owned);
	conv_fini(&c);
	return rc;
}
