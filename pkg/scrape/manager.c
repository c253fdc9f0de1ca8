/* manager.c: targets and loops of every scrape pool. Discovered groups become
 * targets the way Prometheus derives them (defaults, relabeling, instance, "__"
 * labels dropped), one per (target, profile type); each target is a loop of the
 * engine; each result is gunzipped under a cap, decoded and validated, and
 * appended to the store at its scheduled tick. Reloads keep the loops of targets
 * whose URL, labels and scrape settings did not change. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "profd/relabel.h"
#include "profd/scrape.h"
#include "profd/storage.h"

struct target {
	struct pd_scrape_manager *m;
	uint64_t key;
	uint64_t seed;
	char *pool_name;
	char *type;
	struct pd_labels *discovered;
	struct pd_labels *labels; /* NULL when dropped */
	struct pd_storage_label *tl; /* view of labels for the store */
	size_t ntl;
	char *url;
	uint64_t loop_id; /* 0 when dropped */
	int64_t interval, timeout;
	pthread_mutex_t mu; /* the status below */
	int health;
	char *last_error;
	int64_t last_scrape, last_duration;
};

struct pool {
	char *name;
	struct pd_scrape_pool_settings s; /* strings and arrays owned, relabel borrowed */
	struct pd_http_client_config client;
	int has_client;
	uint64_t settings_hash;
	struct pd_target_group *groups;
	size_t ngroups;
	struct target **targets;
	size_t ntargets;
};

struct pd_scrape_manager {
	pthread_mutex_t mu; /* pools and their targets (not target status) */
	struct pool **pools;
	size_t npools;
	struct pd_scrape_engine *engine;
	struct pd_storage *db;
	struct pd_scrape_manager_opts o;
	uint64_t ok, failed, bytes, appended;
	uint64_t target_limit_exceeded; /* guarded by mu */
	uint64_t dur_buckets[PD_SCRAPE_DURATION_BUCKETS]; /* not cumulative */
	uint64_t dur_count, dur_sum_us;
	uint64_t refused[PD_PPROF_LIMIT_COUNT]; /* failed for a limit on the profile */
};

const double pd_scrape_duration_bounds[PD_SCRAPE_DURATION_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

/* ---- helpers ----------------------------------------------------------------- */

static char *sdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A duration as Prometheus prints model.Duration: "1m30s", "15s", "500ms". */
void pd_scrape_format_duration(int64_t ms, char *out, size_t size)
{
	static const struct {
		int64_t ms;
		const char *u;
	} units[] = {{365LL * 86400000, "y"}, {7LL * 86400000, "w"}, {86400000, "d"}, {3600000, "h"},
		     {60000, "m"},            {1000, "s"},          {1, "ms"}};
	size_t off = 0;
	if (ms == 0) {
		snprintf(out, size, "0s");
		return;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && off < size; i++) {
		if (ms >= units[i].ms) {
			off += (size_t)snprintf(out + off, size - off, "%lld%s", (long long)(ms / units[i].ms),
						units[i].u);
			ms %= units[i].ms;
		}
	}
}

static int url_escape(struct pd_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			 *p == '-' || *p == '_' || *p == '.' || *p == '~';
		char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
		if (ok ? pd_buf_append(b, p, 1) : pd_buf_append(b, enc, 3))
			return PD_ENOMEM;
	}
	return 0;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	return s ? pd_hash_bytes(s, strlen(s), h) : pd_hash_u64(h, 0x5a5a);
}

static void target_free(struct target *t)
{
	if (!t)
		return;
	pd_labels_destroy(t->discovered);
	pd_labels_destroy(t->labels);
	free(t->tl);
	free(t->url);
	free(t->type);
	free(t->pool_name);
	free(t->last_error);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static void settings_free(struct pool *p)
{
	struct pd_scrape_pool_settings *s = &p->s;
	free((char *)s->job_name);
	free((char *)s->scheme);
	free((char *)s->metrics_path);
	free((char *)s->tenant);
	for (size_t i = 0; i < s->nparams; i++) {
		free((char *)s->param_names[i]);
		free((char *)s->param_values[i]);
	}
	free((void *)s->param_names);
	free((void *)s->param_values);
	for (size_t i = 0; i < s->ntypes; i++) {
		free((char *)s->types[i].name);
		free((char *)s->types[i].path);
	}
	free((void *)s->types);
	if (p->has_client)
		pd_http_client_config_free(&p->client);
	memset(s, 0, sizeof(*s));
	p->has_client = 0;
}

static int settings_copy(struct pool *p, const struct pd_scrape_pool_settings *in)
{
	struct pd_scrape_pool_settings *s = &p->s;
	*s = *in;
	s->job_name = sdup(in->job_name);
	s->scheme = sdup(in->scheme ? in->scheme : "http");
	s->metrics_path = sdup(in->metrics_path ? in->metrics_path : "/metrics");
	s->tenant = in->tenant && *in->tenant ? sdup(in->tenant) : NULL;
	const char **pn = calloc(in->nparams + 1, sizeof(char *));
	const char **pv = calloc(in->nparams + 1, sizeof(char *));
	struct pd_scrape_profile_type *ty = calloc(in->ntypes + 1, sizeof(*ty));
	s->param_names = pn;
	s->param_values = pv;
	s->types = ty;
	s->nparams = s->ntypes = 0;
	if (!pn || !pv || !ty || !s->job_name || !s->scheme || !s->metrics_path ||
	    (in->tenant && *in->tenant && !s->tenant))
		return PD_ENOMEM;
	for (size_t i = 0; i < in->nparams; i++) {
		pn[i] = sdup(in->param_names[i]);
		pv[i] = sdup(in->param_values[i]);
		s->nparams++;
	}
	for (size_t i = 0; i < in->ntypes; i++) {
		ty[i].name = sdup(in->types[i].name);
		ty[i].path = sdup(in->types[i].path);
		ty[i].seconds = in->types[i].seconds;
		s->ntypes++;
	}
	if (in->client) {
		pd_http_client_config_copy(&p->client, in->client);
		p->has_client = 1;
	}
	s->client = p->has_client ? &p->client : NULL;
	/* everything that changes what or how a target is scraped */
	uint64_t h = hash_str(7, s->job_name);
	h = hash_str(h, s->scheme);
	h = hash_str(h, s->metrics_path);
	for (size_t i = 0; i < s->nparams; i++)
		h = hash_str(hash_str(h, pn[i]), pv[i]);
	for (size_t i = 0; i < s->ntypes; i++)
		h = pd_hash_u64(hash_str(hash_str(h, ty[i].name), ty[i].path), (uint64_t)ty[i].seconds);
	h = pd_hash_u64(h, (uint64_t)s->interval_ms);
	h = pd_hash_u64(h, (uint64_t)s->timeout_ms);
	h = pd_hash_u64(h, (uint64_t)s->body_size_limit);
	h = pd_hash_u64(h, pd_http_client_config_hash(s->client));
	/* relabel rules are not in the hash: what they change shows in the labels */
	p->settings_hash = h;
	return 0;
}

static void groups_free(struct pool *p)
{
	pd_target_group_free(p->groups, p->ngroups);
	p->groups = NULL;
	p->ngroups = 0;
}

static int groups_copy(struct pool *p, const struct pd_target_group *g, size_t n)
{
	groups_free(p);
	if (!n)
		return 0;
	p->groups = calloc(n, sizeof(*p->groups));
	if (!p->groups)
		return PD_ENOMEM;
	p->ngroups = n;
	for (size_t i = 0; i < n; i++) {
		struct pd_target_group *d = &p->groups[i];
		d->source = sdup(g[i].source ? g[i].source : "");
		d->labels = g[i].labels ? pd_labels_dup(g[i].labels) : NULL;
		d->targets = calloc(g[i].ntargets ? g[i].ntargets : 1, sizeof(*d->targets));
		if (!d->source || !d->targets)
			return PD_ENOMEM;
		for (size_t k = 0; k < g[i].ntargets; k++) {
			if (!(d->targets[k] = pd_labels_dup(g[i].targets[k])))
				return PD_ENOMEM;
			d->ntargets++;
		}
	}
	return 0;
}

/* ---- targets ------------------------------------------------------------------ */

/* Builds the target of one discovered label set and profile type. Returns NULL
 * on allocation failure; a dropped target has labels == NULL. */
static struct target *make_target(struct pd_scrape_manager *m, struct pool *p,
				  const struct pd_labels *tl, const struct pd_labels *gl,
				  const struct pd_scrape_profile_type *ty)
{
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	struct target *t = calloc(1, sizeof(*t));
	struct pd_labels *relabeled = NULL, *final = NULL;
	struct pd_buf url;
	struct pd_err err = {0};
	char dur[32], sec[32];
	pd_buf_init(&url, 0);
	if (!b || !t)
		goto fail;
	pthread_mutex_init(&t->mu, NULL);
	t->m = m;
	t->interval = p->s.interval_ms;
	t->timeout = p->s.timeout_ms;
	if (!(t->pool_name = sdup(p->name)) || !(t->type = sdup(ty->name)))
		goto fail;
	pd_labels_builder_reset(b, tl);
	for (size_t i = 0; gl && i < pd_labels_len(gl); i++) {
		const struct pd_label *l = pd_labels_at(gl, i);
		if (!pd_labels_builder_get(b, l->name))
			pd_labels_builder_set(b, l->name, l->value);
	}
	struct {
		const char *name, *value;
	} defaults[] = {{"job", p->s.job_name},
			{"__scheme__", p->s.scheme},
			{"__metrics_path__", ty->path ? ty->path : p->s.metrics_path}};
	for (size_t i = 0; i < 3; i++)
		if (!pd_labels_builder_get(b, defaults[i].name) || i == 2)
			pd_labels_builder_set(b, defaults[i].name, defaults[i].value);
	pd_scrape_format_duration(p->s.interval_ms, dur, sizeof(dur));
	if (!pd_labels_builder_get(b, "__scrape_interval__"))
		pd_labels_builder_set(b, "__scrape_interval__", dur);
	pd_scrape_format_duration(p->s.timeout_ms, dur, sizeof(dur));
	if (!pd_labels_builder_get(b, "__scrape_timeout__"))
		pd_labels_builder_set(b, "__scrape_timeout__", dur);
	for (size_t i = 0; i < p->s.nparams; i++) {
		char name[300];
		snprintf(name, sizeof(name), "__param_%s", p->s.param_names[i]);
		if (!pd_labels_builder_get(b, name))
			pd_labels_builder_set(b, name, p->s.param_values[i]);
	}
	if (ty->seconds > 0) {
		snprintf(sec, sizeof(sec), "%lld", (long long)ty->seconds);
		pd_labels_builder_set(b, "__param_seconds", sec);
	}
	pd_labels_builder_set(b, "__name__", ty->name);
	if (pd_labels_builder_finish(b, &t->discovered, &err))
		goto fail;
	if (p->s.relabel) {
		if (pd_relabel_process(p->s.relabel, t->discovered, &relabeled, &err))
			goto fail;
	} else {
		relabeled = pd_labels_dup(t->discovered);
		if (!relabeled)
			goto fail;
	}
	if (!relabeled || !pd_labels_get(relabeled, "__address__")) {
		pd_labels_destroy(relabeled);
		goto done; /* dropped */
	}
	/* the URL, then the public labels */
	const char *scheme = pd_labels_get(relabeled, "__scheme__");
	const char *path = pd_labels_get(relabeled, "__metrics_path__");
	if (pd_buf_printf(&url, "%s://%s%s%s", scheme ? scheme : "http",
			  pd_labels_get(relabeled, "__address__"), path && *path != '/' ? "/" : "",
			  path ? path : ""))
		goto fail;
	int first = 1;
	for (size_t i = 0; i < pd_labels_len(relabeled); i++) {
		const struct pd_label *l = pd_labels_at(relabeled, i);
		if (strncmp(l->name, "__param_", 8) != 0)
			continue;
		if (pd_buf_append(&url, first ? "?" : "&", 1) || url_escape(&url, l->name + 8) ||
		    pd_buf_append(&url, "=", 1) || url_escape(&url, l->value))
			goto fail;
		first = 0;
	}
	if (pd_buf_append(&url, "", 1))
		goto fail;
	pd_labels_builder_reset(b, relabeled);
	if (!pd_labels_builder_get(b, "instance"))
		pd_labels_builder_set(b, "instance", pd_labels_get(relabeled, "__address__"));
	for (size_t i = 0; i < pd_labels_len(relabeled); i++) {
		const struct pd_label *l = pd_labels_at(relabeled, i);
		if (strncmp(l->name, "__", 2) == 0 && strcmp(l->name, "__name__") != 0)
			pd_labels_builder_del(b, l->name);
	}
	/* after the __ labels went: relabeling can neither set nor drop the tenant */
	if (p->s.tenant)
		pd_labels_builder_set(b, PD_LABELS_TENANT, p->s.tenant);
	pd_labels_destroy(relabeled);
	if (pd_labels_builder_finish(b, &final, &err))
		goto fail;
	t->labels = final;
	t->url = (char *)pd_buf_steal(&url, NULL);
	t->ntl = pd_labels_len(final);
	t->tl = calloc(t->ntl ? t->ntl : 1, sizeof(*t->tl));
	if (!t->tl || !t->url)
		goto fail;
	for (size_t i = 0; i < t->ntl; i++) {
		t->tl[i].name = pd_labels_at(final, i)->name;
		t->tl[i].value = pd_labels_at(final, i)->value;
	}
	uint64_t h = pd_labels_hash(final);
	h = hash_str(h, t->url);
	t->seed = h; /* where in the interval it fires: stable across reloads */
	h = pd_hash_u64(h, p->settings_hash);
	t->key = h ? h : 1;
done:
	pd_labels_builder_destroy(b);
	pd_buf_fini(&url);
	return t;
fail:
	pd_labels_builder_destroy(b);
	pd_buf_fini(&url);
	target_free(t);
	return NULL;
}

static void on_result(void *ectx, void *lctx, const struct pd_scrape_result *r);

/* An open-addressing index of active targets by key (targets of one pool), so that a
 * reload matches n new targets against m old ones in O(n + m) rather than O(n·m). */
struct target_index {
	size_t *slot; /* 1 + position in the indexed array; 0: empty */
	size_t mask;
};

static int target_index_init(struct target_index *ix, size_t n)
{
	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	ix->slot = calloc(cap, sizeof(*ix->slot));
	ix->mask = cap - 1;
	return ix->slot ? 0 : PD_ENOMEM;
}

static int same_target(const struct target *a, const struct target *b)
{
	return a->key == b->key && pd_labels_equal(a->labels, b->labels) && !strcmp(a->url, b->url);
}

/* The position of an indexed target the same as t (same labels, URL and pool
 * settings), or SIZE_MAX; with add, t (at position pos) is indexed when none is. */
static size_t target_index_find(struct target_index *ix, struct target **arr, struct target *t,
				size_t pos, int add)
{
	for (size_t i = t->key & ix->mask;; i = (i + 1) & ix->mask) {
		if (!ix->slot[i]) {
			if (add)
				ix->slot[i] = pos + 1;
			return SIZE_MAX;
		}
		/* a NULL entry was an old target already carried over: probe on */
		const struct target *x = arr[ix->slot[i] - 1];
		if (x && same_target(x, t))
			return ix->slot[i] - 1;
	}
}

/* Ends the loops of targets (NULL entries skipped) at once: one engine lock
 * and wake-up for all of them. */
static void remove_loops(struct pd_scrape_manager *m, struct target **t, size_t n)
{
	size_t k = 0;
	uint64_t *ids = malloc((n ? n : 1) * sizeof(*ids));
	for (size_t i = 0; i < n; i++) {
		if (!t[i] || !t[i]->loop_id)
			continue;
		if (ids)
			ids[k++] = t[i]->loop_id;
		else /* out of memory: one by one */
			pd_scrape_loop_remove(m->engine, t[i]->loop_id);
	}
	if (ids)
		pd_scrape_loops_remove(m->engine, ids, k);
	free(ids);
}

/* Recomputes a pool's targets and reconciles loops. m->mu held. Targets that come
 * out the same (the same labels and URL, as when two discovered groups name one
 * address) are one target with one loop, as in Prometheus. */
static void pool_update(struct pd_scrape_manager *m, struct pool *p)
{
	size_t cap = 16, n = 0;
	struct target **nt = malloc(cap * sizeof(*nt));
	struct target_index seen = {0}, old = {0};
	if (!nt)
		return;
	for (size_t g = 0; g < p->ngroups; g++)
		for (size_t k = 0; k < p->groups[g].ntargets; k++)
			for (size_t ty = 0; ty < p->s.ntypes; ty++) {
				struct target *t = make_target(m, p, p->groups[g].targets[k], p->groups[g].labels,
							       &p->s.types[ty]);
				if (!t)
					continue;
				if (n == cap) {
					struct target **x = realloc(nt, cap * 2 * sizeof(*nt));
					if (!x) {
						target_free(t);
						continue;
					}
					nt = x;
					cap *= 2;
				}
				nt[n++] = t;
			}
	if (target_index_init(&seen, n) || target_index_init(&old, p->ntargets)) {
		/* out of memory: keep the pool as it is */
		for (size_t i = 0; i < n; i++)
			target_free(nt[i]);
		free(nt);
		free(seen.slot);
		free(old.slot);
		return;
	}
	for (size_t k = 0; k < p->ntargets; k++) {
		struct target *o = p->targets[k];
		if (o && o->labels && o->loop_id)
			target_index_find(&old, p->targets, o, k, 1);
	}
	/* drop repeats */
	size_t w = 0, active = 0;
	for (size_t i = 0; i < n; i++) {
		struct target *t = nt[i];
		if (t->labels && target_index_find(&seen, nt, t, w, 1) != SIZE_MAX) {
			target_free(t);
			continue;
		}
		nt[w++] = t;
		active += t->labels != NULL;
	}
	/* past target_limit no target of the pool is scraped, each shows why (as
	 * Prometheus fails every scrape of the pool) */
	int over = p->s.target_limit && active > p->s.target_limit;
	char over_msg[128];
	if (over) {
		snprintf(over_msg, sizeof(over_msg),
			 "target_limit exceeded (number of targets: %zu, limit: %llu)", active,
			 (unsigned long long)p->s.target_limit);
		m->target_limit_exceeded++;
	}
	/* keep the loops (and status) of unchanged targets */
	for (size_t i = 0; i < w; i++) {
		struct target *t = nt[i];
		if (!t->labels)
			continue;
		if (over) {
			t->health = PD_SCRAPE_DOWN;
			t->last_error = sdup(over_msg);
			continue;
		}
		size_t k = target_index_find(&old, p->targets, t, 0, 0);
		if (k != SIZE_MAX) {
			/* the loop and status stay; the discovered labels are the new
			 * ones (a change relabeling drops, as Prometheus's
			 * SetDiscoveredLabels) */
			struct target *o = p->targets[k];
			struct pd_labels *d = o->discovered;
			o->discovered = t->discovered;
			t->discovered = d;
			nt[i] = o;
			p->targets[k] = NULL;
			target_free(t);
			continue;
		}
		struct pd_scrape_spec spec = {t->url, p->s.interval_ms, p->s.timeout_ms,
					      p->s.body_size_limit, t->seed, p->s.client};
		struct pd_err err = {0};
		if (pd_scrape_loop_add(m->engine, &spec, t, &t->loop_id, &err)) {
			t->loop_id = 0;
			t->health = PD_SCRAPE_DOWN;
			t->last_error = sdup(err.msg);
		}
	}
	n = w;
	free(seen.slot);
	free(old.slot);
	/* old targets not carried over: their loops end */
	remove_loops(m, p->targets, p->ntargets);
	for (size_t k = 0; k < p->ntargets; k++)
		target_free(p->targets[k]);
	free(p->targets);
	p->targets = nt;
	p->ntargets = n;
}

static void pool_free(struct pd_scrape_manager *m, struct pool *p)
{
	remove_loops(m, p->targets, p->ntargets);
	for (size_t k = 0; k < p->ntargets; k++)
		target_free(p->targets[k]);
	free(p->targets);
	groups_free(p);
	settings_free(p);
	free(p->name);
	free(p);
}

/* ---- results -------------------------------------------------------------------- */

static void set_status(struct target *t, int health, const char *msg, const struct pd_scrape_result *r)
{
	pthread_mutex_lock(&t->mu);
	t->health = health;
	free(t->last_error);
	t->last_error = sdup(msg ? msg : "");
	t->last_scrape = r->scheduled_ms;
	t->last_duration = r->duration_us;
	pthread_mutex_unlock(&t->mu);
	/* as Prometheus, at debug level: every failure, with the target's fields */
	if (health == PD_SCRAPE_DOWN)
		pd_log_debug("scrape", "scrape failed",
		             "scrape_pool=%s target=%s profile=%s err=%s", t->pool_name, t->url,
		             t->type, msg ? msg : "");
}

/* The flag of a limit on the stored profile, for scrape errors. */
static const char *limit_flag(int limit)
{
	switch (limit) {
	case PD_PPROF_LIMIT_RATIO:
		return "--storage.tsdb.max-profile-gzip-ratio";
	case PD_PPROF_LIMIT_MEMORY:
		return "--storage.tsdb.max-profile-decoded-size";
	case PD_PPROF_LIMIT_SAMPLES:
		return "--storage.tsdb.max-profile-samples";
	case PD_PPROF_LIMIT_SAMPLE_LABELS:
		return "--storage.tsdb.max-profile-sample-labels";
	default:
		return "body_size_limit";
	}
}

static void on_result(void *ectx, void *lctx, const struct pd_scrape_result *r)
{
	struct pd_scrape_manager *m = ectx;
	struct target *t = lctx;
	struct pd_err err = {0};
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	const uint8_t *data = r->body;
	size_t len = r->len;
	char msg[PD_ERR_MSG_MAX + 160], dur[32];
	int hit = 0;
	/* the body limit holds for the profile inflated here too, within the decoder's cap */
	size_t max = m->o.max_decompressed ? m->o.max_decompressed : PD_PPROF_DEFAULT_MAX_DECOMPRESSED;
	if (r->body_limit && r->body_limit < max)
		max = r->body_limit;

	double secs = (double)r->duration_us / 1e6;
	for (size_t b = 0; b < PD_SCRAPE_DURATION_BUCKETS; b++)
		if (secs <= pd_scrape_duration_bounds[b]) {
			__atomic_add_fetch(&m->dur_buckets[b], 1, __ATOMIC_RELAXED);
			break;
		}
	__atomic_add_fetch(&m->dur_count, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->dur_sum_us, (uint64_t)(r->duration_us > 0 ? r->duration_us : 0),
			   __ATOMIC_RELAXED);

	if (r->error) {
		if (r->limit > 0 && r->limit < PD_PPROF_LIMIT_COUNT)
			__atomic_add_fetch(&m->refused[r->limit], 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&m->failed, 1, __ATOMIC_RELAXED);
		set_status(t, PD_SCRAPE_DOWN, r->message, r);
		return;
	}
	__atomic_add_fetch(&m->bytes, r->len, __ATOMIC_RELAXED);
	if (pd_gzip_is(data, len)) {
		struct pd_inflate_opts io = {.format = PD_INFLATE_GZIP,
					     .max = max,
					     .deadline_us = r->deadline_us,
					     .cancel = r->cancel,
					     .max_ratio = m->o.max_ratio};
		int rc = pd_inflate(data, len, &io, &raw, &rawlen, &err);
		if (rc == PD_EIO)
			goto gave_up;
		if (rc == PD_ETOOBIG && io.max_ratio && len <= max / io.max_ratio) {
			hit = PD_PPROF_LIMIT_RATIO;
			goto limit;
		}
		if (rc)
			goto bad;
		data = raw;
		len = rawlen;
	}
	/* the decoded profile may take as much memory as the body limit and the
	 * stored profile's limit allow, the lower; a decoded profile takes several
	 * times its protobuf size */
	size_t mem = m->o.max_memory < max ? m->o.max_memory : max;
	int legacy = 0;
	struct pd_pprof_decode_opts dopts = {.legacy = &legacy,
					     .max_decompressed = max,
					     .max_memory = mem,
					     .max_samples = m->o.max_samples,
					     .max_sample_labels = m->o.max_sample_labels,
					     .legacy_max_depth = m->o.legacy_max_depth,
					     .legacy_max_line = m->o.legacy_max_line,
					     .legacy_max_maps = m->o.legacy_max_maps,
					     .limit_hit = &hit};
	struct pd_pprof_profile *prof;
	/* the decoder cannot be interrupted, but its work is bounded by the size
	 * limit: a profile that took past the timeout is refused after it */
	int drc = pd_pprof_decode(&prof, data, len, &dopts, &err);
	if (hit == PD_PPROF_LIMIT_MEMORY) {
		snprintf(msg, sizeof(msg),
			 "profile too large to decode within the %s: %s",
			 mem == m->o.max_memory ? "decoded size limit (--storage.tsdb.max-profile-decoded-size)"
						: "body size limit",
			 err.msg);
		goto refused;
	}
	if (hit)
		goto limit;
	if (drc)
		goto bad;
	if (legacy) {
		/* a legacy format (pprof.md): stored as its conversion to profile.proto */
		uint8_t *enc;
		size_t enc_len;
		if (pd_pprof_encode(prof, 0, &enc, &enc_len, &err)) {
			pd_pprof_destroy(prof);
			goto store_failed;
		}
		free(raw);
		raw = enc;
		data = enc;
		len = enc_len;
	}
	if (r->deadline_us && pd_scrape_mono_us() >= r->deadline_us) {
		pd_pprof_destroy(prof);
		pd_scrape_format_duration(r->timeout_ms, dur, sizeof(dur));
		snprintf(msg, sizeof(msg),
			 "scrape_timeout of %s exceeded while decoding the profile (%zu bytes)", dur, len);
		goto fail;
	}
	struct pd_storage_appender *a = pd_storage_appender(m->db);
	if (!a) {
		pd_pprof_destroy(prof);
		pd_err_set(&err, PD_ENOMEM, "out of memory");
		goto store_failed;
	}
	/* no client waits for a scrape: its commit does not wait for the WAL's
	 * fsync, so the scrape rate is bound by the CPU, not by the disk */
	pd_storage_appender_lazy(a);
	/* the store takes the decoded profile too, so it does not decode it again */
	/* the WAL keeps the body as it came when it is gzip, as Go serves profiles */
	if (pd_storage_append_gzip(a, t->tl, t->ntl, r->scheduled_ms, data, len, prof,
				 raw && !legacy ? r->body : NULL, raw && !legacy ? r->len : 0, &err)) {
		pd_storage_rollback(a);
		goto store_failed;
	}
	if (pd_storage_commit(a, &err))
		goto store_failed;
	free(raw);
	__atomic_add_fetch(&m->ok, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->appended, 1, __ATOMIC_RELAXED);
	set_status(t, PD_SCRAPE_UP, NULL, r);
	return;
bad:
	snprintf(msg, sizeof(msg), "not a valid profile: %s", err.msg);
	goto fail;
limit:
	snprintf(msg, sizeof(msg), "profile refused for the %s limit (%s): %s",
		 pd_pprof_limit_name(hit), limit_flag(hit), err.msg);
refused:
	__atomic_add_fetch(&m->refused[hit], 1, __ATOMIC_RELAXED);
	goto fail;
gave_up:
	if (r->cancel && __atomic_load_n(r->cancel, __ATOMIC_RELAXED)) {
		snprintf(msg, sizeof(msg), "scrape abandoned: the target was removed or profd is stopping");
	} else {
		pd_scrape_format_duration(r->timeout_ms, dur, sizeof(dur));
		snprintf(msg, sizeof(msg), "scrape_timeout of %s exceeded while inflating the profile (%s)",
			 dur, err.msg);
	}
	goto fail;
store_failed:
	snprintf(msg, sizeof(msg), "storing the profile failed: %s", err.msg);
fail:
	free(raw);
	__atomic_add_fetch(&m->failed, 1, __ATOMIC_RELAXED);
	set_status(t, PD_SCRAPE_DOWN, msg, r);
}

/* ---- the public API ----------------------------------------------------------------- */

int pd_scrape_manager_create(struct pd_scrape_manager **out, struct pd_storage *db,
			     const struct pd_scrape_manager_opts *opts, struct pd_err *err)
{
	struct pd_scrape_manager *m = calloc(1, sizeof(*m));
	int rc;
	*out = NULL;
	if (!m)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (opts)
		m->o = *opts;
	if (!m->o.max_ratio)
		m->o.max_ratio = PD_PPROF_STORE_MAX_RATIO;
	if (!m->o.max_memory)
		m->o.max_memory = PD_PPROF_STORE_MAX_MEMORY;
	if (!m->o.max_samples)
		m->o.max_samples = PD_PPROF_STORE_MAX_SAMPLES;
	if (!m->o.max_sample_labels)
		m->o.max_sample_labels = PD_PPROF_STORE_MAX_SAMPLE_LABELS;
	m->db = db;
	pthread_mutex_init(&m->mu, NULL);
	if ((rc = pd_scrape_engine_create(&m->engine, m->o.workers, on_result, m, err))) {
		pthread_mutex_destroy(&m->mu);
		free(m);
		return rc;
	}
	pd_scrape_engine_set_max_ratio(m->engine, m->o.max_ratio);
	*out = m;
	return 0;
}

void pd_scrape_manager_destroy(struct pd_scrape_manager *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->npools; i++)
		pool_free(m, m->pools[i]);
	free(m->pools);
	m->pools = NULL;
	m->npools = 0;
	pthread_mutex_unlock(&m->mu);
	pd_scrape_engine_destroy(m->engine);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static struct pool *find_pool(struct pd_scrape_manager *m, const char *name)
{
	for (size_t i = 0; i < m->npools; i++)
		if (m->pools[i] && strcmp(m->pools[i]->name, name) == 0)
			return m->pools[i];
	return NULL;
}

int pd_scrape_manager_set_pools(struct pd_scrape_manager *m,
				const struct pd_scrape_pool_settings *pools, size_t n,
				struct pd_err *err)
{
	struct pool **np = calloc(n ? n : 1, sizeof(*np));
	if (!np)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < n; i++) {
		struct pool *old = find_pool(m, pools[i].job_name);
		struct pool *p = old;
		if (!p) {
			p = calloc(1, sizeof(*p));
			if (!p || !(p->name = sdup(pools[i].job_name))) {
				free(p);
				continue;
			}
		} else {
			/* taken over: remove it from the old list */
			for (size_t k = 0; k < m->npools; k++)
				if (m->pools[k] == old)
					m->pools[k] = NULL;
			settings_free(p);
		}
		if (settings_copy(p, &pools[i])) {
			settings_free(p);
			pool_free(m, p);
			continue;
		}
		np[i] = p;
		pool_update(m, p);
	}
	for (size_t k = 0; k < m->npools; k++)
		if (m->pools[k])
			pool_free(m, m->pools[k]);
	free(m->pools);
	/* squeeze out pools that failed to set up */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (np[i])
			np[k++] = np[i];
	m->pools = np;
	m->npools = k;
	pthread_mutex_unlock(&m->mu);
	return 0;
}

void pd_scrape_manager_sync(struct pd_scrape_manager *m, const char *pool,
			    const struct pd_target_group *groups, size_t n)
{
	pthread_mutex_lock(&m->mu);
	struct pool *p = find_pool(m, pool);
	if (p && groups_copy(p, groups, n) == 0)
		pool_update(m, p);
	pthread_mutex_unlock(&m->mu);
}

static int status_cmp(const void *a, const void *b)
{
	const struct pd_scrape_target_status *x = a, *y = b;
	int c = strcmp(x->pool, y->pool);
	if (c)
		return c;
	if (!x->labels || !y->labels)
		return (x->labels == NULL) - (y->labels == NULL);
	return pd_labels_compare(x->labels, y->labels);
}

int pd_scrape_manager_targets(struct pd_scrape_manager *m, int include_dropped,
			      struct pd_scrape_target_status **out, size_t *n, struct pd_err *err)
{
	size_t cap = 0, cnt = 0;
	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->npools; i++)
		cap += m->pools[i]->ntargets;
	struct pd_scrape_target_status *v = calloc(cap ? cap : 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&m->mu);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < m->npools; i++)
		for (size_t k = 0; k < m->pools[i]->ntargets; k++) {
			struct target *t = m->pools[i]->targets[k];
			if (!t || (!t->labels && !include_dropped))
				continue;
			struct pd_scrape_target_status *s = &v[cnt++];
			s->pool = sdup(t->pool_name);
			s->url = sdup(t->url ? t->url : "");
			s->profile_type = sdup(t->type);
			s->discovered = t->discovered ? pd_labels_dup(t->discovered) : NULL;
			s->labels = t->labels ? pd_labels_dup(t->labels) : NULL;
			s->interval_ms = t->interval;
			s->timeout_ms = t->timeout;
			pthread_mutex_lock(&t->mu);
			s->health = t->health;
			s->last_error = sdup(t->last_error ? t->last_error : "");
			s->last_scrape_ms = t->last_scrape;
			s->last_duration_us = t->last_duration;
			pthread_mutex_unlock(&t->mu);
		}
	pthread_mutex_unlock(&m->mu);
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), status_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

void pd_scrape_target_status_free(struct pd_scrape_target_status *s, size_t n)
{
	if (!s)
		return;
	for (size_t i = 0; i < n; i++) {
		free(s[i].pool);
		free(s[i].url);
		free(s[i].profile_type);
		pd_labels_destroy(s[i].discovered);
		pd_labels_destroy(s[i].labels);
		free(s[i].last_error);
	}
	free(s);
}

void pd_scrape_manager_stats(struct pd_scrape_manager *m, struct pd_scrape_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->scrapes_ok = __atomic_load_n(&m->ok, __ATOMIC_RELAXED);
	st->scrapes_failed = __atomic_load_n(&m->failed, __ATOMIC_RELAXED);
	st->bytes_scraped = __atomic_load_n(&m->bytes, __ATOMIC_RELAXED);
	st->profiles_appended = __atomic_load_n(&m->appended, __ATOMIC_RELAXED);
	uint64_t cum = 0;
	for (size_t b = 0; b < PD_SCRAPE_DURATION_BUCKETS; b++) {
		cum += __atomic_load_n(&m->dur_buckets[b], __ATOMIC_RELAXED);
		st->duration_buckets[b] = cum;
	}
	st->duration_count = __atomic_load_n(&m->dur_count, __ATOMIC_RELAXED);
	st->duration_sum_seconds = (double)__atomic_load_n(&m->dur_sum_us, __ATOMIC_RELAXED) / 1e6;
	for (int i = 0; i < PD_PPROF_LIMIT_COUNT; i++)
		st->refused[i] = __atomic_load_n(&m->refused[i], __ATOMIC_RELAXED);
	pthread_mutex_lock(&m->mu);
	st->target_limit_exceeded = m->target_limit_exceeded;
	for (size_t i = 0; i < m->npools; i++)
		for (size_t k = 0; k < m->pools[i]->ntargets; k++) {
			struct target *t = m->pools[i]->targets[k];
			if (t && t->labels)
				st->active_targets++;
			else if (t)
				st->dropped_targets++;
		}
	pthread_mutex_unlock(&m->mu);
}
