/* manager.c: the discovery manager, after Prometheus's discovery.Manager. It owns
 * the providers of every scrape pool (a provider per static_configs list, per
 * file_sd_config and per http_sd_config; identical configurations share one), runs
 * them all on one thread and hands each pool's full set of groups to a callback.
 * dns_sd providers run their lookups on c-ares channels whose sockets join the
 * same wait.
 *
 * The thread's loop: under the lock, free providers a reload stopped, start new
 * ones, read inotify events and re-read files whose directory changed or whose
 * refresh_interval has passed, start due http_sd requests and collect finished ones
 * (libcurl multi, so requests run concurrently and never block the loop), and mark
 * the pools whose providers' groups changed; then, without the lock, call the
 * callback for pools that are due; then wait in curl_multi_poll on curl's sockets
 * and the inotify descriptors until the next timer. Other threads wake it with
 * curl_multi_wakeup.
 *
 * One lock, `mu`, guards all state; the callback runs without it, so that it may
 * call back into the manager and take locks of its own (a lock held around a
 * callback and also taken by set_pools would deadlock a caller that reloads while
 * holding a lock its callback takes). Providers are freed only by the thread
 * (set_pools moves stopped ones to a graveyard), so the groups a callback sees stay
 * valid during the call even if a reload stops their provider meanwhile. */
#include "discovery_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

/* How long a new or changed pool waits for its providers' first refresh before it is
 * handed over with what there is (Prometheus 2.0's TargetSet waited as long). */
#define INITIAL_WAIT_MS 5000
#define MAX_POLL_MS 60000

struct pool {
	char *name;
	struct pd_sd_provider **provs;
	size_t nprovs;
	int dirty;             /* a provider's groups changed since the last call */
	int initial;           /* waiting for the first call since (re)configuration */
	int64_t initial_since; /* monotonic ms */
	int64_t last_sent;     /* monotonic ms of the last call */
};

struct pd_discovery_manager {
	pthread_mutex_t mu;
	pthread_t thread;
	CURLM *multi;
	pd_discovery_cb cb;
	void *ctx;
	int64_t update_interval_ms;
	int use_inotify;
	char *dns_server; /* "IP:PORT" for c-ares, or NULL: /etc/resolv.conf */
	char *k8s_sa_dir; /* kubernetes_sd's service account directory, or NULL */
	size_t k8s_max_bytes; /* kubernetes_sd's bound of watched objects (0: default) */
	int stop;
	struct pd_sd_provider *providers; /* running */
	struct pd_sd_provider *graveyard; /* stopped, for the thread to free */
	struct pool *pools;
	size_t npools;
	uint64_t next_id; /* for provider names */
	uint64_t started, stopped, updates_sent;
	struct pd_sd_counters counters;
	struct curl_waitfd *wfds;
	size_t wfcap;
};

/* ---- small helpers -------------------------------------------------------------- */

int64_t pd_sd_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t pd_sd_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pd_sd_key_str(struct pd_buf *b, const char *s)
{
	uint64_t n = s ? strlen(s) + 1 : 0; /* 0: NULL, else length + 1 */
	int rc = pd_buf_append(b, &n, sizeof(n));
	if (!rc && s)
		rc = pd_buf_append(b, s, n - 1);
	return rc;
}

int pd_sd_key_i64(struct pd_buf *b, int64_t v)
{
	return pd_buf_append(b, &v, sizeof(v));
}

/* ---- providers ------------------------------------------------------------------ */

void pd_sd_provider_set_groups(struct pd_sd_provider *p, struct pd_target_group *g, size_t n)
{
	if (!pd_sd_groups_equal(p->groups, p->ngroups, g, n))
		p->changed = 1;
	pd_target_group_free(p->groups, p->ngroups);
	p->groups = g;
	p->ngroups = n;
}

void pd_sd_provider_set_result(struct pd_sd_provider *p, const char *msg)
{
	int64_t now = pd_sd_now_ms();
	free(p->last_error);
	p->last_error = msg ? strdup(msg) : NULL;
	p->last_refresh_ms = now;
	if (!msg)
		p->last_success_ms = now;
	p->refreshed = 1;
}

void pd_sd_provider_free(struct pd_sd_provider *p, CURLM *multi)
{
	if (!p)
		return;
	char *strs[] = {p->url,       p->basic_user, p->basic_pass,     p->basic_pass_file,
	                p->auth_type, p->auth_cred,  p->auth_cred_file, p->ca_file,
	                p->cert_file, p->key_file,   p->proxy};
	if (p->easy) {
		if (multi)
			curl_multi_remove_handle(multi, p->easy);
		curl_easy_cleanup(p->easy);
	}
	curl_slist_free_all(p->hdrs);
	pd_buf_fini(&p->body);
	if (p->ifd >= 0)
		close(p->ifd);
	for (size_t i = 0; i < p->nfs; i++) {
		free(p->fs[i].path);
		pd_target_group_free(p->fs[i].groups, p->fs[i].ngroups);
		free(p->fs[i].error);
	}
	free(p->fs);
	pd_sd_dns_free(p);
	if (p->kind == PD_SD_K8S)
		pd_sd_k8s_free(p, multi);
	if (p->kind == PD_SD_FILE || p->kind == PD_SD_DNS || p->kind == PD_SD_K8S)
		free(p->groups); /* a view of the files' or names' groups */
	else
		pd_target_group_free(p->groups, p->ngroups);
	for (size_t i = 0; i < p->nfiles; i++) {
		free(p->files ? p->files[i] : NULL);
		free(p->dirs ? p->dirs[i] : NULL);
		free(p->bases ? p->bases[i] : NULL);
	}
	free(p->files);
	free(p->dirs);
	free(p->bases);
	free(p->wds);
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		free(strs[i]);
	free(p->key);
	free(p->detail);
	free(p->last_error);
	free(p);
}

static void pools_free(struct pool *pools, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(pools[i].name);
		free(pools[i].provs);
	}
	free(pools);
}

/* ---- the thread ----------------------------------------------------------------- */

static int pool_ready(const struct pool *pl)
{
	for (size_t i = 0; i < pl->nprovs; i++)
		if (!pl->provs[i]->refreshed)
			return 0;
	return 1;
}

/* When pool is next due for a call (monotonic ms), or INT64_MAX for "not now". */
static int64_t pool_due(const struct pd_discovery_manager *m, const struct pool *pl)
{
	if (pl->initial)
		return pool_ready(pl) ? 0 : pl->initial_since + INITIAL_WAIT_MS;
	if (pl->dirty)
		return pl->last_sent + m->update_interval_ms;
	return INT64_MAX;
}

/* Calls the callback for one due pool; returns 1 when it did. */
static int deliver_one(struct pd_discovery_manager *m)
{
	struct pd_target_group *view = NULL;
	size_t nview = 0, cap = 0;
	char *name = NULL;
	struct pool *pl = NULL;
	int64_t now;

	pthread_mutex_lock(&m->mu);
	now = pd_sd_mono_ms();
	for (size_t i = 0; i < m->npools && !pl && !m->stop; i++)
		if (pool_due(m, &m->pools[i]) <= now)
			pl = &m->pools[i];
	if (!pl)
		goto none;
	for (size_t i = 0; i < pl->nprovs; i++)
		cap += pl->provs[i]->ngroups;
	if (!(name = strdup(pl->name)) || (cap && !(view = malloc(cap * sizeof(*view)))))
		goto none; /* out of memory: try again on the next round */
	for (size_t i = 0; i < pl->nprovs; i++) {
		const struct pd_sd_provider *p = pl->provs[i];
		for (size_t j = 0; j < p->ngroups; j++)
			if (p->groups[j].ntargets) /* as Prometheus drops empty groups */
				view[nview++] = p->groups[j];
	}
	pl->dirty = 0;
	pl->initial = 0;
	pl->last_sent = now;
	m->updates_sent++;
	pthread_mutex_unlock(&m->mu);
	/* the groups belong to providers, which only this thread frees */
	m->cb(m->ctx, name, view, nview);
	free(view);
	free(name);
	return 1;
none:
	pthread_mutex_unlock(&m->mu);
	free(view);
	free(name);
	return 0;
}

static void start_provider(struct pd_discovery_manager *m, struct pd_sd_provider *p, int64_t now)
{
	p->started = 1;
	switch (p->kind) {
	case PD_SD_STATIC:
		p->changed = 1;
		m->counters.refreshes++;
		pd_sd_provider_set_result(p, NULL);
		break;
	case PD_SD_FILE:
		pd_sd_file_start(p, m->use_inotify);
		p->next_refresh = now + p->interval_ms;
		break;
	case PD_SD_HTTP:
	case PD_SD_DNS:
	case PD_SD_K8S:
		p->next_refresh = now;
		break;
	}
}

/* One round of work under the lock; returns how long the loop may then wait. */
static int64_t work(struct pd_discovery_manager *m, size_t *nwfds)
{
	int64_t now = pd_sd_mono_ms(), next = now + MAX_POLL_MS;
	struct pd_sd_provider *p;
	CURLMsg *msg;
	long curl_ms = -1;
	int running, left;

	while ((p = m->graveyard)) {
		m->graveyard = p->next;
		pd_sd_provider_free(p, m->multi);
	}
	for (p = m->providers; p; p = p->next) {
		if (!p->started)
			start_provider(m, p, now);
		if (p->kind == PD_SD_FILE) {
			if (pd_sd_file_drain(p))
				p->refresh_now = 1;
			if (p->refresh_now || now >= p->next_refresh) {
				if (now >= p->next_refresh)
					p->next_refresh = now + p->interval_ms;
				p->refresh_now = 0;
				m->counters.refreshes++;
				pd_sd_file_refresh(p, &m->counters);
			}
		} else if (p->kind == PD_SD_HTTP && !p->easy && now >= p->next_refresh) {
			p->next_refresh = now + p->interval_ms;
			pd_sd_http_start(p, m->multi, &m->counters);
		} else if (p->kind == PD_SD_DNS) {
			pd_sd_dns_step(p, now, &m->counters);
			if (!p->channel && now >= p->next_refresh) {
				p->next_refresh = now + p->interval_ms;
				pd_sd_dns_start(p, m->dns_server, now, &m->counters);
			}
		} else if (p->kind == PD_SD_K8S) {
			p->next_refresh = pd_sd_k8s_step(p, m->multi, now, &m->counters);
		}
	}
	curl_multi_perform(m->multi, &running);
	while ((msg = curl_multi_info_read(m->multi, &left))) {
		char *priv = NULL;
		CURLcode rc;
		if (msg->msg != CURLMSG_DONE)
			continue;
		rc = msg->data.result; /* msg dies with the handle */
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
		p = (struct pd_sd_provider *)(void *)priv;
		if (p->kind == PD_SD_K8S)
			pd_sd_k8s_done(p, m->multi, msg->easy_handle, rc, &m->counters);
		else
			pd_sd_http_done(p, m->multi, rc, &m->counters);
	}
	/* watch streams' events arrived during curl_multi_perform */
	for (p = m->providers; p; p = p->next)
		if (p->kind == PD_SD_K8S && p->started)
			pd_sd_k8s_flush(p, &m->counters);

	/* tell the pools, then the timers and descriptors to wait for */
	for (size_t i = 0; i < m->npools; i++)
		for (size_t j = 0; j < m->pools[i].nprovs; j++)
			if (m->pools[i].provs[j]->changed)
				m->pools[i].dirty = 1;
	*nwfds = 0;
	for (p = m->providers; p; p = p->next) {
		p->changed = 0;
		if (p->kind == PD_SD_FILE || (p->kind == PD_SD_HTTP && !p->easy) ||
		    (p->kind == PD_SD_DNS && !p->channel) || p->kind == PD_SD_K8S)
			if (p->next_refresh < next)
				next = p->next_refresh;
		if (p->kind == PD_SD_DNS && p->channel) {
			if (*nwfds + ARES_GETSOCK_MAXNUM > m->wfcap) {
				size_t ncap = 2 * (m->wfcap + ARES_GETSOCK_MAXNUM);
				struct curl_waitfd *w = realloc(m->wfds, ncap * sizeof(*w));
				if (!w) { /* poll again soon rather than miss an answer */
					if (now + 10 < next)
						next = now + 10;
					continue;
				}
				m->wfds = w;
				m->wfcap = ncap;
			}
			*nwfds += pd_sd_dns_wait(p, m->wfds + *nwfds, now, &next);
		}
		if (p->kind == PD_SD_FILE && p->ifd >= 0) {
			if (*nwfds == m->wfcap) {
				size_t ncap = m->wfcap ? 2 * m->wfcap : 16;
				struct curl_waitfd *w = realloc(m->wfds, ncap * sizeof(*w));
				if (!w)
					continue; /* that provider falls back to its timer */
				m->wfds = w;
				m->wfcap = ncap;
			}
			m->wfds[*nwfds].fd = p->ifd;
			m->wfds[*nwfds].events = CURL_WAIT_POLLIN;
			m->wfds[*nwfds].revents = 0;
			(*nwfds)++;
		}
	}
	for (size_t i = 0; i < m->npools; i++) {
		int64_t due = pool_due(m, &m->pools[i]);
		if (due < next)
			next = due;
	}
	if (curl_multi_timeout(m->multi, &curl_ms) == CURLM_OK && curl_ms >= 0 &&
	    now + curl_ms < next)
		next = now + curl_ms;
	return next > now ? next - now : 0;
}

static void *run(void *arg)
{
	struct pd_discovery_manager *m = arg;
	for (;;) {
		size_t nwfds;
		int64_t wait;
		int delivered = 0;

		pthread_mutex_lock(&m->mu);
		if (m->stop) {
			pthread_mutex_unlock(&m->mu);
			break;
		}
		wait = work(m, &nwfds);
		pthread_mutex_unlock(&m->mu);
		while (deliver_one(m))
			delivered = 1;
		if (delivered)
			continue; /* time has passed: look again before sleeping */
		/* the descriptors in wfds are closed only by this thread */
		curl_multi_poll(m->multi, m->wfds, (unsigned)nwfds, (int)wait, NULL);
	}
	return NULL;
}

/* ---- public API ----------------------------------------------------------------- */

int pd_discovery_manager_create(struct pd_discovery_manager **out, pd_discovery_cb cb, void *ctx,
                                const struct pd_discovery_options *opts, struct pd_err *err)
{
	struct pd_discovery_manager *m;
	int rc;

	*out = NULL;
	if (!cb)
		return pd_err_set(err, PD_EINVAL, "discovery manager: no callback");
	if (!(m = calloc(1, sizeof(*m))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	m->cb = cb;
	m->ctx = ctx;
	m->update_interval_ms = opts && opts->update_interval_ms > 0
	                            ? opts->update_interval_ms
	                            : PD_DISCOVERY_UPDATE_INTERVAL_DEFAULT_MS;
	m->use_inotify = !(opts && opts->disable_inotify);
	m->k8s_max_bytes = opts ? opts->k8s_max_object_bytes : 0;
	if (opts && opts->k8s_serviceaccount_dir && *opts->k8s_serviceaccount_dir &&
	    !(m->k8s_sa_dir = strdup(opts->k8s_serviceaccount_dir))) {
		free(m);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (opts && opts->dns_server && *opts->dns_server) {
		char srv[INET6_ADDRSTRLEN + 16];
		if ((rc = pd_sd_dns_server_norm(opts->dns_server, srv, sizeof(srv), err))) {
			free(m);
			return rc;
		}
		if (!(m->dns_server = strdup(srv))) {
			free(m);
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		}
	}
	if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS) {
		free(m->dns_server);
		free(m);
		return pd_err_set(err, PD_ENOMEM, "discovery manager: cannot initialise c-ares");
	}
	pthread_mutex_init(&m->mu, NULL);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rc = pd_err_set(err, PD_ENOMEM, "discovery manager: cannot initialise libcurl");
		goto fail;
	}
	if (!(m->multi = curl_multi_init())) {
		curl_global_cleanup();
		rc = pd_err_set(err, PD_ENOMEM, "discovery manager: cannot initialise libcurl");
		goto fail;
	}
	if ((rc = pthread_create(&m->thread, NULL, run, m))) {
		curl_multi_cleanup(m->multi);
		curl_global_cleanup();
		rc = pd_err_set(err, PD_ENOMEM, "discovery manager: cannot start thread: %s",
		                strerror(rc));
		goto fail;
	}
	*out = m;
	return 0;
fail:
	pthread_mutex_destroy(&m->mu);
	ares_library_cleanup();
	free(m->k8s_sa_dir);
	free(m->dns_server);
	free(m);
	return rc;
}

void pd_discovery_manager_destroy(struct pd_discovery_manager *m)
{
	struct pd_sd_provider *p;
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stop = 1;
	pthread_mutex_unlock(&m->mu);
	curl_multi_wakeup(m->multi);
	pthread_join(m->thread, NULL);
	while ((p = m->graveyard)) {
		m->graveyard = p->next;
		pd_sd_provider_free(p, m->multi);
	}
	while ((p = m->providers)) {
		m->providers = p->next;
		pd_sd_provider_free(p, m->multi);
	}
	pools_free(m->pools, m->npools);
	free(m->wfds);
	curl_multi_cleanup(m->multi);
	curl_global_cleanup();
	ares_library_cleanup();
	pthread_mutex_destroy(&m->mu);
	free(m->k8s_sa_dir);
	free(m->dns_server);
	free(m);
}

/* One provider a new configuration asks for. */
struct want {
	size_t pool;
	enum pd_sd_provider_kind kind;
	const void *cfg;
	size_t ncfg;
	struct pd_buf key;
};

static int validate(const struct pd_discovery_pool_config *pools, size_t n, struct pd_err *err)
{
	int rc;
	for (size_t i = 0; i < n; i++) {
		const struct pd_discovery_pool_config *pc = &pools[i];
		if (!pc->name || !*pc->name)
			return pd_err_set(err, PD_EINVAL, "discovery: pool %zu has no name", i);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(pools[j].name, pc->name))
				return pd_err_set(
				    err, PD_EINVAL,
				    "found multiple scrape configs with job name \"%s\"", pc->name);
		for (size_t j = 0; j < pc->nstatic; j++)
			for (size_t k = 0; k < pc->static_configs[j].ntargets; k++)
				if (!pc->static_configs[j].targets[k])
					return pd_err_set(err, PD_EINVAL,
					                  "job \"%s\": static_configs[%zu]: "
					                  "target %zu is missing",
					                  pc->name, j, k);
		for (size_t j = 0; j < pc->nfile; j++) {
			if ((rc = pd_sd_file_validate(&pc->file_configs[j], err))) {
				pd_err_prefix(err, "job \"%s\": file_sd_configs[%zu]", pc->name, j);
				return rc;
			}
		}
		for (size_t j = 0; j < pc->nhttp; j++) {
			if ((rc = pd_sd_http_validate(&pc->http_configs[j], err))) {
				pd_err_prefix(err, "job \"%s\": http_sd_configs[%zu]", pc->name, j);
				return rc;
			}
		}
		for (size_t j = 0; j < pc->ndns; j++) {
			if ((rc = pd_discovery_dns_validate(&pc->dns_configs[j], err))) {
				pd_err_prefix(err, "job \"%s\": dns_sd_configs[%zu]", pc->name, j);
				return rc;
			}
		}
		for (size_t j = 0; j < pc->nkubernetes; j++) {
			if ((rc = pd_discovery_kubernetes_validate(&pc->kubernetes_configs[j],
			                                           err))) {
				pd_err_prefix(err, "job \"%s\": kubernetes_sd_configs[%zu]",
				              pc->name, j);
				return rc;
			}
		}
	}
	return 0;
}

static int make_key(struct want *w)
{
	pd_buf_init(&w->key, 0);
	switch (w->kind) {
	case PD_SD_STATIC:
		return pd_sd_static_key(&w->key, w->cfg, w->ncfg);
	case PD_SD_FILE:
		return pd_sd_file_key(&w->key, w->cfg);
	case PD_SD_HTTP:
		return pd_sd_http_key(&w->key, w->cfg);
	case PD_SD_DNS:
		return pd_sd_dns_key(&w->key, w->cfg);
	case PD_SD_K8S:
		return pd_sd_k8s_key(&w->key, w->cfg);
	}
	return PD_EINVAL;
}

static struct pd_sd_provider *find_key(struct pd_sd_provider *list, const struct pd_buf *key)
{
	for (struct pd_sd_provider *p = list; p; p = p->next)
		if (p->keylen == key->len && !memcmp(p->key, key->data, key->len))
			return p;
	return NULL;
}

static int new_provider(struct pd_discovery_manager *m, const struct want *w,
                        struct pd_sd_provider **out, struct pd_err *err)
{
	static const char *const kinds[] = {"static", "file", "http", "dns", "kubernetes"};
	struct pd_sd_provider *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	p->ifd = -1;
	pd_buf_init(&p->body, 0);
	switch (w->kind) {
	case PD_SD_STATIC:
		rc = pd_sd_static_init(p, w->cfg, w->ncfg, err);
		break;
	case PD_SD_FILE:
		rc = pd_sd_file_init(p, w->cfg);
		break;
	case PD_SD_HTTP:
		rc = pd_sd_http_init(p, w->cfg);
		break;
	case PD_SD_K8S:
		rc = pd_sd_k8s_init(p, w->cfg, m->k8s_sa_dir, m->k8s_max_bytes);
		break;
	default:
		rc = pd_sd_dns_init(p, w->cfg);
		break;
	}
	if (!rc && !(p->key = malloc(w->key.len ? w->key.len : 1)))
		rc = PD_ENOMEM;
	if (rc) {
		if (rc == PD_ENOMEM)
			pd_err_set(err, rc, "out of memory");
		pd_sd_provider_free(p, NULL);
		return rc;
	}
	memcpy(p->key, w->key.data, w->key.len);
	p->keylen = w->key.len;
	snprintf(p->name, sizeof(p->name), "%s/%llu", kinds[w->kind],
	         (unsigned long long)m->next_id++);
	*out = p;
	return 0;
}

int pd_discovery_manager_set_pools(struct pd_discovery_manager *m,
                                   const struct pd_discovery_pool_config *pools, size_t n,
                                   struct pd_err *err)
{
	struct want *wants = NULL;
	size_t nwants = 0, cap = 0;
	struct pool *np = NULL;
	struct pd_sd_provider *created = NULL, *p, **pp;
	int rc = 0, locked = 0;
	int64_t now = pd_sd_mono_ms();

	if ((rc = validate(pools, n, err)))
		return rc;
	for (size_t i = 0; i < n; i++)
		cap += (pools[i].nstatic ? 1 : 0) + pools[i].nfile + pools[i].nhttp +
		       pools[i].ndns + pools[i].nkubernetes;
	if ((cap && !(wants = calloc(cap, sizeof(*wants)))) ||
	    (n && !(np = calloc(n, sizeof(*np))))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct pd_discovery_pool_config *pc = &pools[i];
		size_t k =
		    (pc->nstatic ? 1 : 0) + pc->nfile + pc->nhttp + pc->ndns + pc->nkubernetes;
		if (!(np[i].name = strdup(pc->name)) ||
		    (k && !(np[i].provs = calloc(k, sizeof(*np[i].provs))))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		if (pc->nstatic)
			wants[nwants++] = (struct want){.pool = i,
			                                .kind = PD_SD_STATIC,
			                                .cfg = pc->static_configs,
			                                .ncfg = pc->nstatic};
		for (size_t j = 0; j < pc->nfile; j++)
			wants[nwants++] = (struct want){
			    .pool = i, .kind = PD_SD_FILE, .cfg = &pc->file_configs[j], .ncfg = 1};
		for (size_t j = 0; j < pc->nhttp; j++)
			wants[nwants++] = (struct want){
			    .pool = i, .kind = PD_SD_HTTP, .cfg = &pc->http_configs[j], .ncfg = 1};
		for (size_t j = 0; j < pc->ndns; j++)
			wants[nwants++] = (struct want){
			    .pool = i, .kind = PD_SD_DNS, .cfg = &pc->dns_configs[j], .ncfg = 1};
		for (size_t j = 0; j < pc->nkubernetes; j++)
			wants[nwants++] = (struct want){.pool = i,
			                                .kind = PD_SD_K8S,
			                                .cfg = &pc->kubernetes_configs[j],
			                                .ncfg = 1};
	}
	for (size_t i = 0; i < nwants; i++) {
		if (make_key(&wants[i])) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
	}

	pthread_mutex_lock(&m->mu);
	locked = 1;
	for (p = m->providers; p; p = p->next)
		p->refs = 0;
	/* find or make every provider; nothing running is touched until all exist */
	for (size_t i = 0; i < nwants; i++) {
		struct pool *pl = &np[wants[i].pool];
		int dup = 0;
		if (!(p = find_key(m->providers, &wants[i].key)) &&
		    !(p = find_key(created, &wants[i].key))) {
			if ((rc = new_provider(m, &wants[i], &p, err)))
				goto out;
			p->next = created;
			created = p;
		}
		for (size_t j = 0; j < pl->nprovs && !dup; j++)
			dup = pl->provs[j] == p; /* the same config twice counts once */
		if (!dup) {
			pl->provs[pl->nprovs++] = p;
			p->refs++;
		}
	}
	/* commit */
	while ((p = created)) {
		created = p->next;
		p->next = m->providers;
		m->providers = p;
		m->started++;
	}
	/* every pool hears again, as Prometheus's ApplyConfig triggers a send: the scrape
	 * manager wants the full state after a reload (its relabeling may have changed);
	 * a pool whose providers all kept running is ready at once */
	for (size_t i = 0; i < n; i++) {
		struct pool *old = NULL, *pl = &np[i];
		for (size_t j = 0; j < m->npools && !old; j++)
			if (!strcmp(m->pools[j].name, pl->name))
				old = &m->pools[j];
		pl->initial = 1;
		pl->initial_since = now;
		pl->last_sent = old ? old->last_sent : 0;
	}
	for (pp = &m->providers; (p = *pp);) {
		if (p->refs) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->next = m->graveyard;
		m->graveyard = p;
		m->stopped++;
	}
	pools_free(m->pools, m->npools);
	m->pools = np;
	m->npools = n;
	np = NULL;
out:
	while ((p = created)) {
		created = p->next;
		pd_sd_provider_free(p, NULL);
	}
	if (locked) {
		pthread_mutex_unlock(&m->mu);
		curl_multi_wakeup(m->multi);
	}
	pools_free(np, np ? n : 0);
	for (size_t i = 0; i < nwants; i++)
		pd_buf_fini(&wants[i].key);
	free(wants);
	return rc;
}

int pd_discovery_manager_status(struct pd_discovery_manager *m, const char *pool,
                                struct pd_discovery_provider_status **out, size_t *n,
                                struct pd_err *err)
{
	struct pd_discovery_provider_status *s = NULL;
	const struct pool *pl = NULL;
	int rc = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->npools && !pl; i++)
		if (!strcmp(m->pools[i].name, pool))
			pl = &m->pools[i];
	if (!pl) {
		rc = pd_err_set(err, PD_ENOTFOUND, "no scrape pool \"%s\"", pool);
		goto out;
	}
	if (pl->nprovs && !(s = calloc(pl->nprovs, sizeof(*s)))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < pl->nprovs; i++) {
		const struct pd_sd_provider *p = pl->provs[i];
		memcpy(s[i].name, p->name, sizeof(s[i].name));
		s[i].last_refresh_ms = p->last_refresh_ms;
		s[i].last_success_ms = p->last_success_ms;
		s[i].ngroups = p->ngroups;
		for (size_t j = 0; j < p->ngroups; j++)
			s[i].ntargets += p->groups[j].ntargets;
		if (!(s[i].detail = strdup(p->detail ? p->detail : "")) ||
		    (p->last_error && !(s[i].last_error = strdup(p->last_error)))) {
			pd_discovery_provider_status_free(s, i + 1);
			s = NULL;
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
	}
	*out = s;
	*n = pl->nprovs;
out:
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void pd_discovery_provider_status_free(struct pd_discovery_provider_status *s, size_t n)
{
	if (!s)
		return;
	for (size_t i = 0; i < n; i++) {
		free(s[i].detail);
		free(s[i].last_error);
	}
	free(s);
}

void pd_discovery_manager_stats(struct pd_discovery_manager *m, struct pd_discovery_stats *out)
{
	uint64_t running = 0;
	pthread_mutex_lock(&m->mu);
	for (const struct pd_sd_provider *p = m->providers; p; p = p->next)
		running++;
	out->providers_started = m->started;
	out->providers_stopped = m->stopped;
	out->providers = running;
	out->updates_sent = m->updates_sent;
	out->file_read_errors = m->counters.file_read_errors;
	out->http_failures = m->counters.http_failures;
	out->refreshes = m->counters.refreshes;
	out->dns_lookups = m->counters.dns_lookups;
	out->dns_lookup_failures = m->counters.dns_lookup_failures;
	memcpy(out->k8s_events, m->counters.k8s_events, sizeof(out->k8s_events));
	out->k8s_failures = m->counters.k8s_failures;
	pthread_mutex_unlock(&m->mu);
}
