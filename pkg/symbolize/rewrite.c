/* rewrite.c: one call of the symbolizer on one profile: which locations need
 * symbols (an address, a mapping, no lines), what the cache already knows, the
 * wait for the debug files of the rest (until the caller's deadline), and the
 * new profile: locations with lines (inlined frames innermost first), new
 * functions and strings appended to the old ones, the mappings' has_* flags
 * set, and "<binary>+0x<offset>" functions for what stays unresolved. */
#include "symbolize_int.h"
#include "symbolizer_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The string table, growing, with an index from content to the first copy. */
struct strtab {
	const char **s;
	size_t *len;
	size_t n, cap;
	struct pd_u64map idx;
	struct pd_arena *a;
};

static uint64_t str_key(const char *s, size_t len)
{
	uint64_t h = pd_hash_bytes(s, len, 0);
	return h ? h : 1;
}

static int64_t str_add(struct strtab *t, const char *s, size_t len)
{
	uint64_t k = str_key(s, len);
	uint32_t v;
	int known = pd_u64map_get(&t->idx, k, &v);
	if (known && t->len[v] == len && memcmp(t->s[v], s, len) == 0)
		return v;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		const char **ns = realloc(t->s, cap * sizeof(*ns));
		if (!ns)
			return -1;
		t->s = ns;
		size_t *nl = realloc(t->len, cap * sizeof(*nl));
		if (!nl)
			return -1;
		t->len = nl;
		t->cap = cap;
	}
	t->s[t->n] = s;
	t->len[t->n] = len;
	if (!known && pd_u64map_put(&t->idx, k, (uint32_t)t->n) != 0)
		return -1;
	return (int64_t)t->n++;
}

/* A string of ours, copied into the arena first. */
static int64_t str_new(struct strtab *t, const char *s)
{
	size_t len = strlen(s);
	uint64_t k = str_key(s, len);
	uint32_t v;
	if (pd_u64map_get(&t->idx, k, &v) && t->len[v] == len && memcmp(t->s[v], s, len) == 0)
		return v;
	char *c = pd_arena_strndup(t->a, s, len);
	return c ? str_add(t, c, len) : -1;
}

struct functab {
	struct pd_pprof_pfunction *f;
	size_t n, cap;
	uint64_t next_id;
	struct pd_u64map idx;
};

static uint64_t fn_key(int64_t name, int64_t sys, int64_t file, int64_t start)
{
	uint64_t h = pd_hash_u64(
	    pd_hash_u64(pd_hash_u64(pd_hash_u64(7, (uint64_t)name), (uint64_t)sys), (uint64_t)file),
	    (uint64_t)start);
	return h ? h : 1;
}

/* The id of the function with these strings, added when new; 0 on failure. */
static uint64_t fn_add(struct functab *t, int64_t name, int64_t sys, int64_t file, int64_t start)
{
	uint64_t k = fn_key(name, sys, file, start);
	uint32_t v;
	int known = pd_u64map_get(&t->idx, k, &v);
	if (known) {
		struct pd_pprof_pfunction *f = &t->f[v];
		if (f->name == name && f->system_name == sys && f->filename == file &&
		    f->start_line == start)
			return f->id;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct pd_pprof_pfunction *nf = realloc(t->f, cap * sizeof(*nf));
		if (!nf)
			return 0;
		t->f = nf;
		t->cap = cap;
	}
	t->f[t->n] = (struct pd_pprof_pfunction){.id = t->next_id++,
	                                         .name = name,
	                                         .system_name = sys,
	                                         .filename = file,
	                                         .start_line = start};
	if (!known && pd_u64map_put(&t->idx, k, (uint32_t)t->n) != 0)
		return 0;
	return t->f[t->n++].id;
}

static int result_copy(struct sym_result *dst, const struct sym_result *src)
{
	for (size_t i = 0; i < src->n; i++) {
		const struct sym_frame *f = &src->f[i];
		if (sym_result_add(dst, f->name, f->system_name, f->file, f->line, f->start_line))
			return PD_ENOMEM;
	}
	return 0;
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

/* The build id as a lowercase string (profiles carry it as hex text). */
static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'F')
			*s = (char)(*s - 'A' + 'a');
}

static void missing_add(struct pd_symbolize_result *res, const char *key, const char *why)
{
	size_t used = strlen(res->missing);
	if (used + strlen(key) + strlen(why) + 4 >= sizeof(res->missing))
		return;
	snprintf(res->missing + used, sizeof(res->missing) - used, "%s%s (%s)", used ? ", " : "",
	         key, why);
}

struct run {
	struct pd_symbolizer *s;
	struct pd_pprof_parts pp;
	struct pd_u64map mapidx; /* mapping id -> index + 1 */
	struct sym_obj **mobj;   /* per mapping, pinned */
	char *mfull;             /* per mapping: 1 no room for its build id */
	int full;                /* no room found once: no new build ids this call */
	const char **mbid;       /* per mapping: build id, lowercase */
	int *need;               /* per location: mapping index + 1, 0: nothing to do */
	int *got;                /* per location: 1 resolved from cache or debug file */
	int *deferred;           /* per location: 1 left to a worker past the deadline */
	struct sym_result *r;    /* per location */
	struct pd_arena *a;
};

static void run_fini(struct run *x)
{
	if (x->mobj) {
		pthread_mutex_lock(&x->s->mu);
		for (size_t m = 0; m < x->pp.nmapping; m++)
			sym_obj_unpin(x->s, x->mobj[m]);
		pthread_mutex_unlock(&x->s->mu);
	}
	free(x->mfull);
	for (size_t i = 0; x->r && i < x->pp.nlocation; i++)
		sym_result_fini(&x->r[i]);
	free(x->r);
	free(x->got);
	free(x->deferred);
	free(x->need);
	free(x->mobj);
	free(x->mbid);
	pd_u64map_fini(&x->mapidx);
	pd_pprof_parts_fini(&x->pp);
	pd_arena_destroy(x->a);
}

/* Marks the locations that need symbols; returns how many. */
static size_t run_plan(struct run *x)
{
	struct pd_pprof_parts *pp = &x->pp;
	size_t n = 0;
	for (size_t m = 0; m < pp->nmapping; m++) {
		if (pp->mapping[m].id)
			pd_u64map_put(&x->mapidx, pp->mapping[m].id, (uint32_t)m + 1);
		int64_t b = pp->mapping[m].build_id;
		const char *bid = "";
		if (b > 0 && (size_t)b < pp->nstrings) {
			char *c = pd_arena_strndup(x->a, pp->strings[b], pp->string_len[b]);
			if (c) {
				lower(c);
				bid = c;
			}
		}
		x->mbid[m] = bid;
	}
	for (size_t i = 0; i < pp->nlocation; i++) {
		const struct pd_pprof_plocation *l = &pp->location[i];
		uint32_t m;
		if (!l->address || !l->mapping_id || l->nline ||
		    !pd_u64map_get(&x->mapidx, l->mapping_id, &m))
			continue;
		x->need[i] = (int)m;
		n++;
	}
	return n;
}

static const char *mapping_file(const struct run *x, size_t m)
{
	int64_t f = x->pp.mapping[m].filename;
	return f > 0 && (size_t)f < x->pp.nstrings ? x->pp.strings[f] : "";
}

/* Cache lookups and the wait for the debug files of the rest, under mu. */
static void run_lookup(struct run *x, int64_t deadline_us)
{
	struct pd_symbolizer *s = x->s;
	struct pd_pprof_parts *pp = &x->pp;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < pp->nlocation; i++) {
		if (!x->need[i])
			continue;
		size_t m = (size_t)x->need[i] - 1;
		if (!x->mobj[m] && !x->mfull[m]) {
			x->mobj[m] = sym_obj_get(s, x->mbid[m], mapping_file(x, m), &x->full);
			x->mfull[m] = (char)(!x->mobj[m] && x->full &&
			                     (x->mbid[m][0] || mapping_file(x, m)[0]));
			if (x->mobj[m])
				x->mobj[m]->pins++;
		}
		struct sym_obj *o = x->mobj[m];
		if (!o)
			continue;
		struct sym_entry *e = sym_cache_get(s, o, pp->location[i].address);
		if (e && result_copy(&x->r[i], &e->r) == 0) {
			x->got[i] = 1;
			s->st.hits++;
		} else {
			sym_result_fini(&x->r[i]);
			sym_obj_want(s, o, sym_now_us());
		}
	}
	if (deadline_us > sym_now_us() + 86400LL * 1000000)
		deadline_us = sym_now_us() + 86400LL * 1000000;
	struct timespec dl = {.tv_sec = deadline_us / 1000000,
	                      .tv_nsec = (deadline_us % 1000000) * 1000};
	for (;;) {
		int pending = 0;
		for (size_t i = 0; i < pp->nlocation && !pending; i++) {
			if (!x->need[i] || x->got[i] || !x->mobj[x->need[i] - 1])
				continue;
			int st = x->mobj[x->need[i] - 1]->state;
			pending = st == OBJ_QUEUED || st == OBJ_BUSY;
		}
		if (!pending || sym_now_us() >= deadline_us)
			break;
		if (pthread_cond_timedwait(&s->done_cv, &s->mu, &dl) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&s->mu);
}

/* The locations whose debug file is open now, resolved and cached until the
 * deadline; what is left past it goes to a worker, one job per mapping, for
 * the next query (x->deferred counts those locations). */
static void run_resolve(struct run *x, int64_t deadline_us)
{
	struct pd_symbolizer *s = x->s;
	struct pd_pprof_parts *pp = &x->pp;
	struct sym_job **jobs = calloc(pp->nmapping + 1, sizeof(*jobs));
	for (size_t i = 0; i < pp->nlocation; i++) {
		if (!x->need[i] || x->got[i])
			continue;
		size_t m = (size_t)x->need[i] - 1;
		struct sym_obj *o = x->mobj[m];
		pthread_mutex_lock(&s->mu);
		int ready = o && o->state == OBJ_READY;
		pthread_mutex_unlock(&s->mu);
		if (!ready)
			continue;
		const struct pd_pprof_pmapping *mp = &pp->mapping[m];
		uint64_t addr = pp->location[i].address;
		if (sym_now_us() >= deadline_us) {
			struct sym_job *j = jobs ? jobs[m] : NULL;
			if (jobs && !j && (j = calloc(1, sizeof(*j))) != NULL) {
				*j = (struct sym_job){.o = o,
				                      .start = mp->memory_start,
				                      .limit = mp->memory_limit,
				                      .offset = mp->file_offset};
				jobs[m] = j;
			}
			uint64_t *na = j ? realloc(j->addrs, (j->n + 1) * sizeof(*na)) : NULL;
			if (na) {
				j->addrs = na;
				j->addrs[j->n++] = addr;
			}
			x->deferred[i] = 1;
			continue;
		}
		if (sym_resolve(s, o, mp->memory_start, mp->memory_limit, mp->file_offset, addr,
		                &x->r[i]) == 0)
			x->got[i] = 1;
	}
	pthread_mutex_lock(&s->mu);
	for (size_t m = 0; jobs && m < pp->nmapping; m++)
		if (jobs[m])
			sym_job_queue(s, jobs[m]);
	pthread_mutex_unlock(&s->mu);
	free(jobs);
}

/* Why the locations of mapping m stayed unresolved. */
static void run_missing(struct run *x, struct pd_symbolize_result *res)
{
	struct pd_symbolizer *s = x->s;
	struct pd_pprof_parts *pp = &x->pp;
	char *seen = calloc(pp->nmapping + 1, 1);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < pp->nlocation; i++) {
		if (!x->need[i] || (x->got[i] && x->r[i].n))
			continue;
		size_t m = (size_t)x->need[i] - 1;
		struct sym_obj *o = x->mobj[m];
		const char *why = !o && x->mfull[m]        ? "too many build ids in use"
		                  : !o                     ? "no build id and no file"
		                  : x->deferred[i]         ? "still being resolved"
		                  : o->state == OBJ_FAILED ? "not found"
		                  : o->state == OBJ_READY  ? "not in its debug information"
		                                           : "still being fetched";
		/* a debuginfod that could not be reached may answer later: partial too */
		if (!o && x->mfull[m])
			res->partial = 1; /* a later query may find room */
		if (o && (o->state == OBJ_QUEUED || o->state == OBJ_BUSY || x->deferred[i] ||
		          (o->state == OBJ_FAILED && o->err_code == PD_EUNAVAIL)))
			res->partial = 1;
		if (seen && !seen[m]) {
			seen[m] = 1;
			missing_add(res, o ? o->key : mapping_file(x, m), why);
		}
	}
	if (res->partial)
		s->st.partial++;
	pthread_mutex_unlock(&s->mu);
	free(seen);
}

/* The new tables: strings and functions appended, lines set, flags set. */
static int run_build(struct run *x, struct pd_symbolize_result *res, struct pd_pprof_profile **out,
                     struct pd_err *err)
{
	struct pd_pprof_parts *pp = &x->pp;
	struct strtab st = {.a = x->a};
	struct functab ft = {0};
	pd_u64map_init(&st.idx);
	pd_u64map_init(&ft.idx);
	int rc = PD_ENOMEM;
	for (size_t i = 0; i < pp->nstrings; i++)
		if (str_add(&st, pp->strings[i], pp->string_len[i]) < 0)
			goto out;
	for (size_t i = 0; i < pp->nfunction; i++) {
		if (ft.n == ft.cap) {
			size_t cap = ft.cap ? ft.cap * 2 : 64;
			struct pd_pprof_pfunction *nf = realloc(ft.f, cap * sizeof(*nf));
			if (!nf)
				goto out;
			ft.f = nf;
			ft.cap = cap;
		}
		ft.f[ft.n++] = pp->function[i];
		if (pp->function[i].id >= ft.next_id)
			ft.next_id = pp->function[i].id + 1;
	}
	if (ft.next_id == 0)
		ft.next_id = 1;
	for (size_t i = 0; i < pp->nlocation; i++) {
		if (!x->need[i])
			continue;
		size_t m = (size_t)x->need[i] - 1;
		struct pd_pprof_pmapping *mp = &pp->mapping[m];
		struct pd_pprof_plocation *l = &pp->location[i];
		res->locations++;
		if (x->got[i] && x->r[i].n) {
			struct sym_result *r = &x->r[i];
			l->line = pd_arena_calloc(x->a, r->n, sizeof(*l->line));
			if (!l->line)
				goto out;
			for (size_t k = 0; k < r->n; k++) {
				int64_t name = str_new(&st, r->f[k].name);
				int64_t sys = str_new(&st, r->f[k].system_name);
				int64_t file = str_new(&st, r->f[k].file);
				if (name < 0 || sys < 0 || file < 0)
					goto out;
				uint64_t id = fn_add(&ft, name, sys, file, r->f[k].start_line);
				if (!id)
					goto out;
				l->line[k] = (struct pd_pprof_pline){.function_id = id,
				                                     .line = r->f[k].line};
				if (r->f[k].file[0])
					mp->has_filenames = 1;
				if (r->f[k].line > 0)
					mp->has_line_numbers = 1;
			}
			l->nline = r->n;
			mp->has_functions = 1;
			if (r->n > 1)
				mp->has_inline_frames = 1;
			res->resolved++;
			continue;
		}
		/* <binary>+0x<offset in the file> */
		const char *file = mapping_file(x, m);
		const char *base = file[0]         ? base_name(file)
		                   : x->mbid[m][0] ? x->mbid[m]
		                                   : "unknown";
		uint64_t off = l->address;
		if (mp->memory_start && l->address >= mp->memory_start)
			off = l->address - mp->memory_start + mp->file_offset;
		char buf[320];
		snprintf(buf, sizeof(buf), "%.256s+0x%llx", base, (unsigned long long)off);
		int64_t name = str_new(&st, buf);
		uint64_t id = name < 0 ? 0 : fn_add(&ft, name, name, 0, 0);
		if (!id || !(l->line = pd_arena_calloc(x->a, 1, sizeof(*l->line))))
			goto out;
		l->line[0].function_id = id;
		l->nline = 1;
		res->unresolved++;
	}
	pp->strings = st.s;
	pp->string_len = st.len;
	pp->nstrings = st.n;
	pp->function = ft.f;
	pp->nfunction = ft.n;
	rc = pd_pprof_parts_build(pp, out, err);
	pp->strings = NULL;
	pp->string_len = NULL;
	pp->function = NULL;
	pp->nstrings = pp->nfunction = 0;
	if (rc)
		pd_err_prefix(err, "the symbolized profile");
out:
	if (rc == PD_ENOMEM)
		pd_err_set(err, rc, "out of memory symbolizing the profile");
	free(st.s);
	free(st.len);
	pd_u64map_fini(&st.idx);
	free(ft.f);
	pd_u64map_fini(&ft.idx);
	return rc;
}

int pd_symbolizer_run(struct pd_symbolizer *s, const struct pd_pprof_profile *in,
                      int64_t deadline_us, struct pd_pprof_profile **out,
                      struct pd_symbolize_result *res, struct pd_err *err)
{
	*out = NULL;
	memset(res, 0, sizeof(*res));
	struct run x = {.s = s};
	pd_u64map_init(&x.mapidx);
	int rc = pd_pprof_parts_get(in, &x.pp, err);
	if (rc) {
		pd_u64map_fini(&x.mapidx);
		return rc;
	}
	size_t nl = x.pp.nlocation, nm = x.pp.nmapping;
	x.a = pd_arena_create(0);
	x.mobj = calloc(nm + 1, sizeof(*x.mobj));
	x.mbid = calloc(nm + 1, sizeof(*x.mbid));
	x.mfull = calloc(nm + 1, 1);
	x.need = calloc(nl + 1, sizeof(*x.need));
	x.got = calloc(nl + 1, sizeof(*x.got));
	x.deferred = calloc(nl + 1, sizeof(*x.deferred));
	x.r = calloc(nl + 1, sizeof(*x.r));
	if (!x.a || !x.mobj || !x.mfull || !x.mbid || !x.need || !x.got || !x.deferred || !x.r) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory symbolizing the profile");
		goto out;
	}
	if (run_plan(&x) == 0)
		goto out;
	run_lookup(&x, deadline_us);
	run_resolve(&x, deadline_us);
	run_missing(&x, res);
	rc = run_build(&x, res, out, err);
out:
	run_fini(&x);
	return rc;
}
