/* engine.c: the scrape engine: one thread drives every HTTP transfer on a libcurl
 * multi handle and fires each loop at its tick; finished bodies go through a queue
 * to worker threads that run the result callback (decode, store), so the event
 * loop never waits on CPU work or on storage.
 *
 * A loop fires at the instants t with t mod interval == offset (wall clock, ms),
 * offset derived from the target's hash as Prometheus does. A tick that comes while
 * the previous scrape of the loop is still running is skipped. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "profd/scrape.h"

#ifndef PD_VERSION
#define PD_VERSION "dev"
#endif

struct loop {
	uint64_t id;
	void *ctx;
	char *url;
	int64_t interval, timeout, offset;
	size_t body_limit;
	struct pd_http_client_config client; /* strings owned */
	int64_t next;      /* next tick, ms */
	int refs;          /* engine's list + queued results */
	int in_callback;   /* callbacks running now */
	int removed;
	int busy;          /* a transfer is in flight */
	int pending;       /* its result waits for or is in a worker: the next scrape of
			      the loop waits for it, so a loop never runs ahead of its
			      storage and the queue holds at most one result per loop */
	/* the transfer in flight */
	CURL *easy;
	struct curl_slist *headers;
	struct pd_buf body;
	int too_big;
	int64_t sched, start_ms, start_mono_us;
	char errbuf[CURL_ERROR_SIZE];
};

struct job {
	struct loop *l;
	struct pd_scrape_result r;
	uint8_t *body;
	char message[300];
	struct job *next;
};

struct pd_scrape_engine {
	pthread_t thread;
	int thread_started;
	CURLM *multi;
	pthread_mutex_t mu; /* loops, stop, and every loop's refs/removed/in_callback */
	pthread_cond_t cv;  /* a callback finished */
	struct loop **loops;
	size_t nloops, cap;
	uint64_t next_id;
	int stop;
	/* results */
	pthread_t *workers;
	unsigned nworkers;
	pthread_cond_t qcv;
	struct job *qhead, *qtail;
	int qstop;
	pd_scrape_result_fn fn;
	void *ctx;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t pd_scrape_offset(uint64_t seed, int64_t interval_ms)
{
	return interval_ms > 0 ? (int64_t)(seed % (uint64_t)interval_ms) : 0;
}

/* The first tick after now. */
static int64_t first_tick(int64_t now, int64_t interval, int64_t offset)
{
	int64_t base = now - (now % interval) + offset;
	while (base <= now)
		base += interval;
	return base;
}

static void loop_free(struct loop *l)
{
	if (l->easy)
		curl_easy_cleanup(l->easy);
	curl_slist_free_all(l->headers);
	pd_buf_fini(&l->body);
	pd_http_client_config_free(&l->client);
	free(l->url);
	free(l);
}

/* Drops one reference; the caller holds e->mu. */
static void loop_unref(struct loop *l)
{
	if (--l->refs == 0)
		loop_free(l);
}

/* ---- workers ------------------------------------------------------------------ */

static void *worker_main(void *arg)
{
	struct pd_scrape_engine *e = arg;
	pthread_mutex_lock(&e->mu);
	for (;;) {
		while (!e->qhead && !e->qstop)
			pthread_cond_wait(&e->qcv, &e->mu);
		struct job *j = e->qhead;
		if (!j)
			break; /* stopping and drained */
		e->qhead = j->next;
		if (!e->qhead)
			e->qtail = NULL;
		struct loop *l = j->l;
		if (!l->removed) {
			l->in_callback++;
			pthread_mutex_unlock(&e->mu);
			e->fn(e->ctx, l->ctx, &j->r);
			pthread_mutex_lock(&e->mu);
			l->in_callback--;
			pthread_cond_broadcast(&e->cv);
		}
		l->pending = 0;
		loop_unref(l);
		free(j->body);
		free(j);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

/* ---- transfers ----------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct loop *l = arg;
	size_t len = size * n;
	if (l->body_limit && l->body.len + len > l->body_limit) {
		l->too_big = 1;
		return 0; /* aborts the transfer */
	}
	if (pd_buf_append(&l->body, p, len))
		return 0;
	return len;
}

/* Reads a small secret file (password, token), trailing newline dropped. */
static char *read_secret(const char *path)
{
	uint8_t *d;
	size_t n;
	if (pd_file_read(path, 64 * 1024, &d, &n, NULL))
		return NULL;
	while (n && (d[n - 1] == '\n' || d[n - 1] == '\r'))
		n--;
	d[n] = '\0';
	return (char *)d;
}

static int start_transfer(struct pd_scrape_engine *e, struct loop *l, int64_t sched)
{
	const struct pd_http_client_config *c = &l->client;
	if (!l->easy && !(l->easy = curl_easy_init()))
		return -1;
	CURL *h = l->easy;
	curl_easy_reset(h);
	curl_slist_free_all(l->headers);
	l->headers = NULL;
	l->body.len = 0;
	l->too_big = 0;
	l->errbuf[0] = '\0';
	l->sched = sched;
	l->start_ms = now_ms();
	l->start_mono_us = mono_us();
	curl_easy_setopt(h, CURLOPT_URL, l->url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, l);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, l);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, l->errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)l->timeout);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "profd/" PD_VERSION);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, c->follow_redirects ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	if (c->basic_auth_username) {
		char *pw = c->basic_auth_password_file ? read_secret(c->basic_auth_password_file) : NULL;
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->basic_auth_username);
		curl_easy_setopt(h, CURLOPT_PASSWORD,
				 pw ? pw : c->basic_auth_password ? c->basic_auth_password : "");
		free(pw);
	}
	if (c->authorization_credentials || c->authorization_credentials_file) {
		char *cred = c->authorization_credentials_file
				     ? read_secret(c->authorization_credentials_file)
				     : strdup(c->authorization_credentials);
		if (cred) {
			const char *type = c->authorization_type ? c->authorization_type : "Bearer";
			size_t n = strlen(type) + strlen(cred) + 32;
			char *hdr = malloc(n);
			if (hdr) {
				snprintf(hdr, n, "Authorization: %s %s", type, cred);
				l->headers = curl_slist_append(l->headers, hdr);
				free(hdr);
			}
			free(cred);
		}
	}
	l->headers = curl_slist_append(l->headers, "Accept: application/octet-stream, */*;q=0.1");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l->headers);
	if (c->tls_ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->tls_ca_file);
	if (c->tls_cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->tls_cert_file);
	if (c->tls_key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->tls_key_file);
	if (c->tls_insecure_skip_verify) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->proxy_url)
		curl_easy_setopt(h, CURLOPT_PROXY, c->proxy_url);
	if (curl_multi_add_handle(e->multi, h) != CURLM_OK)
		return -1;
	l->refs++; /* the transfer */
	return 0;
}

/* Turns a finished transfer into a queued result. e->mu held. */
static void finish_transfer(struct pd_scrape_engine *e, struct loop *l, CURLcode code)
{
	struct job *j = calloc(1, sizeof(*j));
	curl_multi_remove_handle(e->multi, l->easy);
	if (!j || l->removed) {
		free(j);
		loop_unref(l);
		return;
	}
	long status = 0;
	curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &status);
	j->l = l; /* takes the transfer's reference */
	j->r.scheduled_ms = l->sched;
	j->r.start_ms = l->start_ms;
	j->r.duration_us = mono_us() - l->start_mono_us;
	j->r.http_status = status;
	j->r.message = j->message;
	if (l->too_big) {
		j->r.error = PD_ETOOBIG;
		snprintf(j->message, sizeof(j->message), "body size limit exceeded (limit %zu bytes)",
			 l->body_limit);
	} else if (code != CURLE_OK) {
		j->r.error = PD_EIO;
		snprintf(j->message, sizeof(j->message), "%s",
			 l->errbuf[0] ? l->errbuf : curl_easy_strerror(code));
	} else if (status != 200) {
		j->r.error = PD_EIO;
		snprintf(j->message, sizeof(j->message), "server returned HTTP status %ld", status);
	} else if (l->body.len == 0) {
		j->r.error = PD_EINVAL;
		snprintf(j->message, sizeof(j->message), "empty response body");
	} else {
		j->body = pd_buf_steal(&l->body, &j->r.len);
		j->r.body = j->body;
	}
	l->pending = 1;
	if (e->qtail)
		e->qtail->next = j;
	else
		e->qhead = j;
	e->qtail = j;
	pthread_cond_signal(&e->qcv);
}

static void *engine_main(void *arg)
{
	struct pd_scrape_engine *e = arg;
	for (;;) {
		pthread_mutex_lock(&e->mu);
		if (e->stop) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		int64_t now = now_ms(), wait = 1000;
		for (size_t i = 0; i < e->nloops;) {
			struct loop *l = e->loops[i];
			if (l->removed) {
				e->loops[i] = e->loops[--e->nloops];
				if (l->busy) {
					/* abandon the transfer: its reference goes too */
					curl_multi_remove_handle(e->multi, l->easy);
					l->busy = 0;
					l->refs--;
				}
				loop_unref(l); /* the list's */
				continue;
			}
			if (now >= l->next) {
				int64_t sched = l->next;
				while (l->next <= now)
					l->next += l->interval;
				if (!l->busy && !l->pending && start_transfer(e, l, sched) == 0)
					l->busy = 1;
			}
			if (l->next - now < wait)
				wait = l->next - now;
			i++;
		}
		pthread_mutex_unlock(&e->mu);
		if (wait < 0)
			wait = 0;
		curl_multi_poll(e->multi, NULL, 0, (int)wait, NULL);
		int still;
		curl_multi_perform(e->multi, &still);
		CURLMsg *msg;
		int left;
		pthread_mutex_lock(&e->mu);
		while ((msg = curl_multi_info_read(e->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct loop *l = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&l);
			l->busy = 0;
			finish_transfer(e, l, msg->data.result);
		}
		pthread_mutex_unlock(&e->mu);
	}
	/* stopping: abandon transfers in flight */
	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->nloops; i++) {
		struct loop *l = e->loops[i];
		if (l->busy) {
			curl_multi_remove_handle(e->multi, l->easy);
			l->busy = 0;
			l->refs--; /* the transfer's; the list's goes below */
		}
		loop_unref(l);
	}
	e->nloops = 0;
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int pd_scrape_engine_create(struct pd_scrape_engine **out, unsigned workers,
			    pd_scrape_result_fn fn, void *ctx, struct pd_err *err)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct pd_scrape_engine *e = calloc(1, sizeof(*e));
	*out = NULL;
	if (!e)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pthread_once(&once, global_init);
	e->fn = fn;
	e->ctx = ctx;
	e->next_id = 1;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	pthread_cond_init(&e->qcv, NULL);
	if (!(e->multi = curl_multi_init())) {
		pd_scrape_engine_destroy(e);
		return pd_err_set(err, PD_ENOMEM, "cannot create a libcurl multi handle");
	}
	/* keep idle connections to targets for the next scrape (libcurl's default cache
	 * is 4 per handle in use, and a loop's handle is in use only while it scrapes),
	 * within half the file descriptors the process may open */
	struct rlimit rl;
	long maxconn = 512;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		maxconn = (long)(rl.rlim_cur / 2);
	if (maxconn > 10000)
		maxconn = 10000;
	curl_multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, maxconn);
	e->nworkers = workers ? workers : 2;
	e->workers = calloc(e->nworkers, sizeof(*e->workers));
	if (!e->workers) {
		pd_scrape_engine_destroy(e);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < e->nworkers; i++)
		if (pthread_create(&e->workers[i], NULL, worker_main, e)) {
			e->nworkers = i;
			pd_scrape_engine_destroy(e);
			return pd_err_set(err, PD_ENOMEM, "cannot start scrape workers");
		}
	if (pthread_create(&e->thread, NULL, engine_main, e)) {
		pd_scrape_engine_destroy(e);
		return pd_err_set(err, PD_ENOMEM, "cannot start the scrape thread");
	}
	e->thread_started = 1;
	*out = e;
	return 0;
}

void pd_scrape_engine_destroy(struct pd_scrape_engine *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	e->stop = 1;
	pthread_mutex_unlock(&e->mu);
	if (e->thread_started) {
		curl_multi_wakeup(e->multi);
		pthread_join(e->thread, NULL);
	}
	/* deliver what is queued, then stop the workers */
	pthread_mutex_lock(&e->mu);
	e->qstop = 1;
	pthread_cond_broadcast(&e->qcv);
	pthread_mutex_unlock(&e->mu);
	for (unsigned i = 0; i < e->nworkers; i++)
		pthread_join(e->workers[i], NULL);
	free(e->workers);
	if (e->multi)
		curl_multi_cleanup(e->multi);
	free(e->loops);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	pthread_cond_destroy(&e->qcv);
	free(e);
}

int pd_scrape_loop_add(struct pd_scrape_engine *e, const struct pd_scrape_spec *spec,
		       void *loop_ctx, uint64_t *id, struct pd_err *err)
{
	if (!spec->url || spec->interval_ms <= 0 || spec->timeout_ms <= 0)
		return pd_err_set(err, PD_EINVAL, "a scrape loop needs a URL, an interval and a timeout");
	struct loop *l = calloc(1, sizeof(*l));
	if (!l)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pd_buf_init(&l->body, 0);
	l->ctx = loop_ctx;
	l->url = strdup(spec->url);
	l->interval = spec->interval_ms;
	l->timeout = spec->timeout_ms;
	l->body_limit = spec->body_limit;
	l->offset = pd_scrape_offset(spec->offset_seed, spec->interval_ms);
	l->client.follow_redirects = 1;
	if (spec->client) {
		pd_http_client_config_copy(&l->client, spec->client);
	}
	if (!l->url) {
		loop_free(l);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	l->next = first_tick(now_ms(), l->interval, l->offset);
	l->refs = 1;
	pthread_mutex_lock(&e->mu);
	if (e->nloops == e->cap) {
		size_t c = e->cap ? e->cap * 2 : 64;
		struct loop **nl = realloc(e->loops, c * sizeof(*nl));
		if (!nl) {
			pthread_mutex_unlock(&e->mu);
			loop_free(l);
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		}
		e->loops = nl;
		e->cap = c;
	}
	l->id = e->next_id++;
	e->loops[e->nloops++] = l;
	*id = l->id;
	pthread_mutex_unlock(&e->mu);
	curl_multi_wakeup(e->multi);
	return 0;
}

void pd_scrape_loop_remove(struct pd_scrape_engine *e, uint64_t id)
{
	pthread_mutex_lock(&e->mu);
	struct loop *l = NULL;
	for (size_t i = 0; i < e->nloops; i++)
		if (e->loops[i]->id == id && !e->loops[i]->removed)
			l = e->loops[i];
	if (l) {
		l->removed = 1;
		l->refs++; /* keep it while we wait */
		while (l->in_callback)
			pthread_cond_wait(&e->cv, &e->mu);
		loop_unref(l);
	}
	pthread_mutex_unlock(&e->mu);
	curl_multi_wakeup(e->multi);
}
