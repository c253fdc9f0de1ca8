/* engine.c: the scrape engine: one thread drives every HTTP transfer on a libcurl
 * multi handle and fires each loop at its tick; finished bodies go through a queue
 * to worker threads that run the result callback (decode, store), so the event
 * loop never waits on CPU work or on storage.
 *
 * A loop fires at the instants t with t mod interval == offset (wall clock, ms),
 * offset derived from the target's hash as Prometheus does. A tick that comes while
 * the previous scrape of the loop is still running is skipped.
 *
 * What a scrape costs must not grow with the number of loops, since every loop
 * scrapes once per interval (a cost linear in the loops per scrape is quadratic per
 * interval):
 * - the loops wait in a min-heap on their next tick, so a wakeup touches only the
 *   loops that are due, and a loop is found by its id in O(1) (the id holds its
 *   slot);
 * - the thread waits on epoll and hands libcurl only the sockets that are ready
 *   (curl_multi_socket_action), where curl_multi_perform would step every
 *   transfer in flight on every event;
 * - easy handles (each with libcurl's 16 KB receive buffer) are pooled and lent to
 *   transfers, not kept per loop;
 * - kept-alive connections and DNS answers live in SHARES libcurl share objects,
 *   a loop's chosen by its target's hash, not in the multi handle's one cache:
 *   libcurl 7.88 walks a transfer's whole connection cache when the transfer is
 *   removed from the multi handle and its whole DNS cache when it ends, so with
 *   one cache per multi handle each scrape cost a walk over every target.
 *
 * One target must not be able to hold the event loop: libcurl's own content
 * decoding is off (it inflates inside the write path, where a 4 MB body can
 * become gigabytes before the loop gets control back), so the event loop only
 * copies raw bytes, at most a little over the body limit per transfer. A
 * Content-Encoding (gzip, deflate) is undone on a worker thread, in slices that
 * check the body limit, the scrape's deadline and a cancel flag set when the loop
 * is removed or the engine stops. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "profd/scrape.h"
#include "profd/util.h"

#ifndef PD_VERSION
#define PD_VERSION "dev"
#endif

/* idle easy handles kept for the next transfers; more are made when more scrapes
 * run at once, and freed when they finish beyond this */
#define POOL_KEEP 64
/* connection and DNS caches; with 10,000 targets, about 40 connections each */
#define SHARES 256
/* a body larger than this as received (a profile is rarely over 100 KB gzipped)
 * is decoded by one of HEAVY_WORKERS threads of its own, so that large or hostile
 * bodies never make small ones wait for a worker, take at most HEAVY_WORKERS
 * CPUs, and hold at most HEAVY_WORKERS decodings' memory at once */
#define HEAVY_BYTES ((size_t)256 << 10)
#define HEAVY_WORKERS 2

/* The response's Content-Encoding, as the header callback finds it. */
enum encoding { ENC_IDENTITY = 0, ENC_GZIP, ENC_DEFLATE, ENC_OTHER };

/* One transfer in flight: an easy handle lent by the pool, with what it fills. */
struct xfer {
	CURL *easy;
	struct loop *l;
	struct curl_slist *headers;
	struct pd_buf body;
	size_t body_limit; /* after decoding */
	size_t raw_limit;  /* as received: a little more when the body is encoded */
	int too_big;
	int encoding;      /* enum encoding, of the last response (after redirects) */
	char encoding_name[32];
	int64_t sched, start_ms, start_mono_us;
	char errbuf[CURL_ERROR_SIZE];
	CURLcode code;     /* how it ended */
	struct xfer *next; /* the pool's free list, or the transfers just finished */
};

struct loop {
	uint64_t id;
	size_t slot;       /* in e->slots */
	size_t heap_idx;   /* in e->heap; SIZE_MAX when not there */
	void *ctx;
	char *url;
	int64_t interval, timeout, offset;
	size_t body_limit;
	unsigned max_ratio;
	unsigned share;    /* index in e->shares */
	struct pd_http_client_config client; /* strings owned */
	int64_t next;      /* next tick, ms */
	int refs;          /* the engine's + the transfer's + a queued result's + remove's */
	int in_callback;   /* callbacks running now */
	int removed;
	struct xfer *xfer; /* the transfer in flight, or NULL */
	struct job *running; /* the job whose callback runs now, or NULL */
	int pending;       /* its result waits for or is in a worker: the next scrape of
			      the loop waits for it, so a loop never runs ahead of its
			      storage and the queue holds at most one result per loop */
	struct loop *dead_next; /* e->dead: removed with a transfer to abandon */
};

struct job {
	struct loop *l;
	struct pd_scrape_result r;
	uint8_t *body;
	int encoding; /* enum encoding: undone by the worker */
	char encoding_name[32];
	int cancel;   /* set (atomically) when the loop is removed or the engine stops */
	char message[PD_ERR_MSG_MAX + 320];
	struct job *next;
};

struct pd_scrape_engine {
	pthread_t thread;
	int thread_started;
	CURLM *multi;
	int epfd;              /* libcurl's sockets and wakefd */
	int wakefd;            /* an eventfd: loops added or removed, stop */
	int64_t curl_deadline; /* libcurl's timer, monotonic ms; -1: none */
	CURLSH *shares[SHARES]; /* made on first use by the engine thread */
	long share_maxconn;     /* kept connections per share */
	unsigned max_ratio;     /* of new loops (pd_scrape_engine_set_max_ratio) */
	pthread_mutex_t mu; /* everything below but the pool, and every loop's fields */
	pthread_cond_t cv;  /* a callback finished */
	/* loops by slot: id = generation << 24 | slot + 1 */
	struct loop **slots;
	uint32_t *gen;
	size_t nslots, slotcap;
	size_t *free_slots, nfree;
	/* loops by next tick */
	struct loop **heap;
	size_t nheap, heapcap;
	struct loop *dead; /* removed loops whose transfer the engine thread drops */
	int stop;
	/* easy handles: used by the engine thread only */
	struct xfer *pool;
	size_t npool;
	/* results */
	pthread_t *workers;    /* nworkers for small bodies, then HEAVY_WORKERS */
	unsigned nworkers, nstarted;
	struct queue {
		struct pd_scrape_engine *e;
		pthread_cond_t cv;
		struct job *head, *tail;
		int heavy;
	} q[2];                /* small bodies, large ones */
	int qstop;
	pd_scrape_result_fn fn;
	void *ctx;
};

#define SLOT_BITS 24
#define MAX_LOOPS (((size_t)1 << SLOT_BITS) - 1)

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

int64_t pd_scrape_mono_us(void)
{
	return mono_us();
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

/* ---- the heap of loops by next tick (e->mu held) ------------------------------ */

static void heap_set(struct pd_scrape_engine *e, size_t i, struct loop *l)
{
	e->heap[i] = l;
	l->heap_idx = i;
}

static void heap_up(struct pd_scrape_engine *e, size_t i)
{
	struct loop *l = e->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (e->heap[p]->next <= l->next)
			break;
		heap_set(e, i, e->heap[p]);
		i = p;
	}
	heap_set(e, i, l);
}

static void heap_down(struct pd_scrape_engine *e, size_t i)
{
	struct loop *l = e->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= e->nheap)
			break;
		if (c + 1 < e->nheap && e->heap[c + 1]->next < e->heap[c]->next)
			c++;
		if (l->next <= e->heap[c]->next)
			break;
		heap_set(e, i, e->heap[c]);
		i = c;
	}
	heap_set(e, i, l);
}

static int heap_push(struct pd_scrape_engine *e, struct loop *l)
{
	if (e->nheap == e->heapcap) {
		size_t c = e->heapcap ? e->heapcap * 2 : 64;
		struct loop **h = realloc(e->heap, c * sizeof(*h));
		if (!h)
			return -1;
		e->heap = h;
		e->heapcap = c;
	}
	heap_set(e, e->nheap++, l);
	heap_up(e, l->heap_idx);
	return 0;
}

static void heap_remove(struct pd_scrape_engine *e, struct loop *l)
{
	size_t i = l->heap_idx;
	if (i == SIZE_MAX)
		return;
	l->heap_idx = SIZE_MAX;
	struct loop *last = e->heap[--e->nheap];
	if (i == e->nheap)
		return;
	heap_set(e, i, last);
	heap_up(e, i);
	heap_down(e, last->heap_idx);
}

/* ---- loops and transfers --------------------------------------------------------- */

static void xfer_free(struct xfer *x)
{
	if (!x)
		return;
	if (x->easy)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	pd_buf_fini(&x->body);
	free(x);
}

/* Lends an easy handle with its state (engine thread). */
static struct xfer *xfer_get(struct pd_scrape_engine *e)
{
	struct xfer *x = e->pool;
	if (x) {
		e->pool = x->next;
		e->npool--;
		x->next = NULL;
		return x;
	}
	if (!(x = calloc(1, sizeof(*x))))
		return NULL;
	pd_buf_init(&x->body, 0);
	if (!(x->easy = curl_easy_init())) {
		free(x);
		return NULL;
	}
	return x;
}

/* Takes a handle back (engine thread); it is out of the multi handle. */
static void xfer_put(struct pd_scrape_engine *e, struct xfer *x)
{
	x->l = NULL;
	curl_slist_free_all(x->headers);
	x->headers = NULL;
	pd_buf_fini(&x->body);
	pd_buf_init(&x->body, 0);
	if (e->npool >= POOL_KEEP) {
		xfer_free(x);
		return;
	}
	x->next = e->pool;
	e->pool = x;
	e->npool++;
}

static void loop_free(struct loop *l)
{
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

/* Undoes the body's Content-Encoding (worker thread) under the body limit, the
 * scrape's deadline and the job's cancel flag; on failure the result carries the
 * error instead of the body. */
static void decode_body(struct job *j)
{
	struct pd_scrape_result *r = &j->r;
	struct pd_err err = {0};
	char dur[32];
	uint8_t *out;
	size_t out_len;
	if (j->encoding == ENC_OTHER) {
		r->error = PD_EINVAL;
		snprintf(j->message, sizeof(j->message),
			 "unsupported Content-Encoding \"%s\" (accepted: gzip, deflate)", j->encoding_name);
		goto fail;
	}
	struct pd_inflate_opts o = {.format = j->encoding == ENC_GZIP ? PD_INFLATE_GZIP : PD_INFLATE_DEFLATE,
				    .max = r->body_limit,
				    .deadline_us = r->deadline_us,
				    .cancel = &j->cancel,
				    .max_ratio = j->l->max_ratio};
	int rc = pd_inflate(j->body, r->len, &o, &out, &out_len, &err);
	if (rc == 0) {
		free(j->body);
		j->body = out;
		r->body = out;
		r->len = out_len;
		return;
	}
	r->error = rc;
	if (rc == PD_ETOOBIG && o.max_ratio && r->len <= r->body_limit / o.max_ratio) {
		snprintf(j->message, sizeof(j->message),
			 "decompression ratio limit exceeded: a body of %zu bytes with Content-Encoding "
			 "%s inflates to more than %u times its size (--storage.tsdb.max-profile-gzip-ratio)",
			 r->len, j->encoding_name, o.max_ratio);
		r->limit = PD_PPROF_LIMIT_RATIO;
	} else if (rc == PD_ETOOBIG) {
		snprintf(j->message, sizeof(j->message),
			 "body size limit exceeded (limit %zu bytes) after Content-Encoding %s: a body of %zu "
			 "bytes inflates further",
			 r->body_limit, j->encoding_name, r->len);
	} else if (__atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) {
		snprintf(j->message, sizeof(j->message), "scrape abandoned: the target was removed or profd is stopping");
	} else if (pd_scrape_mono_us() >= r->deadline_us) {
		pd_scrape_format_duration(r->timeout_ms, dur, sizeof(dur));
		snprintf(j->message, sizeof(j->message),
			 "scrape_timeout of %s exceeded while undoing Content-Encoding %s (%s)", dur,
			 j->encoding_name, err.msg);
	} else {
		snprintf(j->message, sizeof(j->message), "Content-Encoding %s: %s", j->encoding_name, err.msg);
	}
fail:
	free(j->body);
	j->body = NULL;
	r->body = NULL;
	r->len = 0;
}

static void *worker_main(void *arg)
{
	struct queue *q = arg;
	struct pd_scrape_engine *e = q->e;
	pthread_mutex_lock(&e->mu);
	for (;;) {
		while (!q->head && !e->qstop)
			pthread_cond_wait(&q->cv, &e->mu);
		struct job *j = q->head;
		if (!j)
			break; /* stopping and drained */
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
		struct loop *l = j->l;
		if (!l->removed) {
			l->in_callback++;
			l->running = j;
			if (e->qstop)
				__atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&e->mu);
			/* decoding has the scrape's timeout of its own, from now: time spent
			 * waiting for a worker (others' decoding) must not count against it */
			j->r.deadline_us = mono_us() + j->r.timeout_ms * 1000;
			if (j->encoding != ENC_IDENTITY && !j->r.error)
				decode_body(j);
			e->fn(e->ctx, l->ctx, &j->r);
			pthread_mutex_lock(&e->mu);
			l->running = NULL;
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

/* Copies received bytes, as they came: no decoding here (event loop). */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	size_t limit = x->encoding == ENC_IDENTITY ? x->body_limit : x->raw_limit;
	if (x->body.len + len > limit) {
		x->too_big = 1;
		return 0; /* aborts the transfer */
	}
	if (pd_buf_append(&x->body, p, len))
		return 0;
	return len;
}

/* Notes the Content-Encoding of the response; a new status line (a redirect's
 * next response) starts afresh. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	static const char ce[] = "content-encoding:";
	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		x->encoding = ENC_IDENTITY;
		x->encoding_name[0] = '\0';
	} else if (len > sizeof(ce) - 1 && strncasecmp(p, ce, sizeof(ce) - 1) == 0) {
		size_t i = sizeof(ce) - 1, k = 0;
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		while (i < len && p[i] != '\r' && p[i] != '\n' && k + 1 < sizeof(x->encoding_name))
			x->encoding_name[k++] = p[i++];
		while (k && (x->encoding_name[k - 1] == ' ' || x->encoding_name[k - 1] == '\t'))
			k--;
		x->encoding_name[k] = '\0';
		if (k == 0 || strcasecmp(x->encoding_name, "identity") == 0)
			x->encoding = ENC_IDENTITY;
		else if (strcasecmp(x->encoding_name, "gzip") == 0 || strcasecmp(x->encoding_name, "x-gzip") == 0)
			x->encoding = ENC_GZIP;
		else if (strcasecmp(x->encoding_name, "deflate") == 0)
			x->encoding = ENC_DEFLATE;
		else
			x->encoding = ENC_OTHER;
	}
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

/* Starts a scrape of l (engine thread, e->mu held). */
static int start_transfer(struct pd_scrape_engine *e, struct loop *l, int64_t sched)
{
	const struct pd_http_client_config *c = &l->client;
	CURLSH *sh = e->shares[l->share];
	if (!sh) {
		if (!(sh = curl_share_init()))
			return -1;
		curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
		curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
		e->shares[l->share] = sh;
	}
	struct xfer *x = xfer_get(e);
	if (!x)
		return -1;
	CURL *h = x->easy;
	curl_easy_reset(h);
	x->l = l;
	x->body_limit = l->body_limit;
	/* an encoded body may be a little larger than what it decodes to (stored
	 * deflate blocks, headers): give it that much room before its decoding, on a
	 * worker, holds it to the limit exactly */
	x->raw_limit = l->body_limit + l->body_limit / 64 + 4096;
	x->too_big = 0;
	x->encoding = ENC_IDENTITY;
	x->encoding_name[0] = '\0';
	x->errbuf[0] = '\0';
	x->sched = sched;
	x->start_ms = now_ms();
	x->start_mono_us = mono_us();
	curl_easy_setopt(h, CURLOPT_URL, l->url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)l->timeout);
	curl_easy_setopt(h, CURLOPT_SHARE, sh);
	/* the encodings pd_inflate undoes, on a worker: libcurl only passes them on */
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip, deflate");
	curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
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
				x->headers = curl_slist_append(x->headers, hdr);
				free(hdr);
			}
			free(cred);
		}
	}
	x->headers = curl_slist_append(x->headers, "Accept: application/octet-stream, */*;q=0.1");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->headers);
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
	if (curl_multi_add_handle(e->multi, h) != CURLM_OK) {
		xfer_put(e, x);
		return -1;
	}
	l->xfer = x;
	l->refs++; /* the transfer */
	return 0;
}

/* Drops the transfer of a loop and the transfer's reference, then the reference the
 * caller held (engine thread, e->mu held). */
static void abandon_and_unref(struct pd_scrape_engine *e, struct loop *l)
{
	struct xfer *x = l->xfer;
	if (x) {
		curl_multi_remove_handle(e->multi, x->easy);
		l->xfer = NULL;
		xfer_put(e, x);
		l->refs--; /* the transfer's; the caller's below */
	}
	loop_unref(l);
}

/* Turns a finished transfer into a queued result. e->mu held. */
static void finish_transfer(struct pd_scrape_engine *e, struct xfer *x, CURLcode code)
{
	struct loop *l = x->l;
	curl_multi_remove_handle(e->multi, x->easy);
	l->xfer = NULL;
	struct job *j = l->removed ? NULL : calloc(1, sizeof(*j));
	if (!j) {
		xfer_put(e, x);
		loop_unref(l);
		return;
	}
	long status = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	j->l = l; /* takes the transfer's reference */
	j->r.scheduled_ms = x->sched;
	j->r.start_ms = x->start_ms;
	j->r.duration_us = mono_us() - x->start_mono_us;
	j->r.http_status = status;
	j->r.message = j->message;
	j->r.timeout_ms = l->timeout;
	j->r.body_limit = x->body_limit;
	j->r.cancel = &j->cancel;
	j->encoding = x->encoding;
	memcpy(j->encoding_name, x->encoding_name, sizeof(j->encoding_name));
	if (x->too_big) {
		j->r.error = PD_ETOOBIG;
		if (x->encoding == ENC_IDENTITY)
			snprintf(j->message, sizeof(j->message), "body size limit exceeded (limit %zu bytes)",
				 x->body_limit);
		else
			snprintf(j->message, sizeof(j->message),
				 "body size limit exceeded (limit %zu bytes): over %zu bytes received with "
				 "Content-Encoding %s",
				 x->body_limit, x->raw_limit, x->encoding_name);
	} else if (code == CURLE_OPERATION_TIMEDOUT) {
		char dur[32];
		pd_scrape_format_duration(l->timeout, dur, sizeof(dur));
		j->r.error = PD_EIO;
		snprintf(j->message, sizeof(j->message), "scrape_timeout of %s exceeded: %s", dur,
			 x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
	} else if (code != CURLE_OK) {
		j->r.error = PD_EIO;
		snprintf(j->message, sizeof(j->message), "%s",
			 x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
	} else if (status != 200) {
		j->r.error = PD_EIO;
		snprintf(j->message, sizeof(j->message), "server returned HTTP status %ld", status);
	} else if (x->body.len == 0) {
		j->r.error = PD_EINVAL;
		snprintf(j->message, sizeof(j->message), "empty response body");
	} else {
		j->body = pd_buf_steal(&x->body, &j->r.len);
		j->r.body = j->body;
	}
	xfer_put(e, x);
	l->pending = 1;
	struct queue *q = &e->q[j->r.len > HEAVY_BYTES];
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	pthread_cond_signal(&q->cv);
}

static int64_t mono_ms(void)
{
	return mono_us() / 1000;
}

/* libcurl says which events a socket of a transfer waits for. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
	struct pd_scrape_engine *e = arg;
	(void)easy;
	(void)sockp;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(e->epfd, EPOLL_CTL_DEL, s, NULL); /* it may be closed already */
		return 0;
	}
	struct epoll_event ev = {0};
	ev.data.fd = s;
	if (what & CURL_POLL_IN)
		ev.events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev.events |= EPOLLOUT;
	if (epoll_ctl(e->epfd, EPOLL_CTL_MOD, s, &ev) && errno == ENOENT)
		epoll_ctl(e->epfd, EPOLL_CTL_ADD, s, &ev);
	return 0;
}

/* libcurl asks to be called back after timeout_ms (-1: no timer). */
static int on_timer(CURLM *multi, long timeout_ms, void *arg)
{
	struct pd_scrape_engine *e = arg;
	(void)multi;
	e->curl_deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	return 0;
}

static void wake(struct pd_scrape_engine *e)
{
	uint64_t one = 1;
	if (e->wakefd >= 0 && write(e->wakefd, &one, sizeof(one)) < 0) {
		/* the counter is full: a wakeup is pending anyway */
	}
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
		while (e->dead) {
			struct loop *l = e->dead;
			e->dead = l->dead_next;
			abandon_and_unref(e, l); /* the dead list's reference */
		}
		int64_t now = now_ms(), wait = 1000;
		while (e->nheap && e->heap[0]->next <= now) {
			struct loop *l = e->heap[0];
			int64_t sched = l->next;
			while (l->next <= now)
				l->next += l->interval;
			heap_down(e, 0);
			if (!l->xfer && !l->pending)
				start_transfer(e, l, sched);
		}
		if (e->nheap && e->heap[0]->next - now < wait)
			wait = e->heap[0]->next - now;
		pthread_mutex_unlock(&e->mu);
		int running;
		if (e->curl_deadline >= 0) {
			int64_t left = e->curl_deadline - mono_ms();
			if (left <= 0) {
				e->curl_deadline = -1;
				curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
				left = e->curl_deadline < 0 ? wait : e->curl_deadline - mono_ms();
				if (left < 0)
					left = 0;
			}
			if (left < wait)
				wait = left;
		}
		if (wait < 0)
			wait = 0;
		struct epoll_event evs[256];
		int n = epoll_wait(e->epfd, evs, 256, (int)wait);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == e->wakefd) {
				uint64_t v;
				if (read(e->wakefd, &v, sizeof(v)) < 0) {
					/* nonblocking: nothing to read is fine */
				}
				continue;
			}
			int mask = 0;
			if (evs[i].events & (EPOLLIN | EPOLLHUP))
				mask |= CURL_CSELECT_IN;
			if (evs[i].events & EPOLLOUT)
				mask |= CURL_CSELECT_OUT;
			if (evs[i].events & EPOLLERR)
				mask |= CURL_CSELECT_ERR;
			curl_multi_socket_action(e->multi, evs[i].data.fd, mask, &running);
		}
		/* every message is read before any handle is removed: removing a handle
		 * walks the messages still queued (libcurl 7.88), so removing each as
		 * it is read costs the square of the transfers finished at once */
		CURLMsg *msg;
		int left;
		struct xfer *done = NULL;
		while ((msg = curl_multi_info_read(e->multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct xfer *x = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			x->code = msg->data.result;
			x->next = done;
			done = x;
		}
		pthread_mutex_lock(&e->mu);
		while (done) {
			struct xfer *x = done;
			done = x->next;
			x->next = NULL;
			finish_transfer(e, x, x->code);
		}
		pthread_mutex_unlock(&e->mu);
	}
	/* stopping: abandon transfers in flight, drop the loops */
	pthread_mutex_lock(&e->mu);
	while (e->dead) {
		struct loop *l = e->dead;
		e->dead = l->dead_next;
		abandon_and_unref(e, l);
	}
	for (size_t i = 0; i < e->nslots; i++) {
		struct loop *l = e->slots[i];
		if (!l)
			continue;
		e->slots[i] = NULL;
		abandon_and_unref(e, l); /* the engine's reference */
	}
	e->nheap = 0;
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

unsigned pd_scrape_default_workers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	n *= 8;
	return (unsigned)(n < 8 ? 8 : n > 64 ? 64 : n);
}

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void pd_scrape_engine_set_max_ratio(struct pd_scrape_engine *e, unsigned ratio)
{
	__atomic_store_n(&e->max_ratio, ratio, __ATOMIC_RELAXED);
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
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	for (int k = 0; k < 2; k++) {
		e->q[k].e = e;
		e->q[k].heavy = k;
		pthread_cond_init(&e->q[k].cv, NULL);
	}
	e->wakefd = -1;
	e->curl_deadline = -1;
	if ((e->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (e->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		int en = errno;
		pd_scrape_engine_destroy(e);
		return pd_err_set(err, PD_EIO, "cannot create the scrape engine's epoll: %s", strerror(en));
	}
	struct epoll_event wev = {.events = EPOLLIN, .data.fd = e->wakefd};
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wakefd, &wev)) {
		int en = errno;
		pd_scrape_engine_destroy(e);
		return pd_err_set(err, PD_EIO, "cannot create the scrape engine's epoll: %s", strerror(en));
	}
	if (!(e->multi = curl_multi_init())) {
		pd_scrape_engine_destroy(e);
		return pd_err_set(err, PD_ENOMEM, "cannot create a libcurl multi handle");
	}
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	/* keep idle connections to targets for the next scrape (libcurl's default cache
	 * is 4 per handle in use, and a handle is in use only while it scrapes), about
	 * half the file descriptors the process may open in all; the limit applies to
	 * each share, whose loops are spread by hash, so it is half again the mean */
	struct rlimit rl;
	long maxconn = 512;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		maxconn = (long)(rl.rlim_cur / 2);
	if (maxconn > 10000)
		maxconn = 10000;
	e->share_maxconn = maxconn * 3 / 2 / SHARES;
	if (e->share_maxconn < 2)
		e->share_maxconn = 2;
	curl_multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, e->share_maxconn);
	e->nworkers = workers ? workers : pd_scrape_default_workers();
	e->workers = calloc(e->nworkers + HEAVY_WORKERS, sizeof(*e->workers));
	if (!e->workers) {
		pd_scrape_engine_destroy(e);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < e->nworkers + HEAVY_WORKERS; i++) {
		if (pthread_create(&e->workers[i], NULL, worker_main, &e->q[i >= e->nworkers])) {
			pd_scrape_engine_destroy(e);
			return pd_err_set(err, PD_ENOMEM, "cannot start scrape workers");
		}
		e->nstarted = i + 1;
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
	/* decoding in progress gives up; queued results are delivered cancelled */
	for (size_t i = 0; i < e->nslots; i++)
		if (e->slots[i] && e->slots[i]->running)
			__atomic_store_n(&e->slots[i]->running->cancel, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < 2; k++)
		for (struct job *j = e->q[k].head; j; j = j->next)
			__atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&e->mu);
	if (e->thread_started) {
		wake(e);
		pthread_join(e->thread, NULL);
	}
	/* deliver what is queued, then stop the workers */
	pthread_mutex_lock(&e->mu);
	e->qstop = 1;
	pthread_cond_broadcast(&e->q[0].cv);
	pthread_cond_broadcast(&e->q[1].cv);
	pthread_mutex_unlock(&e->mu);
	for (unsigned i = 0; i < e->nstarted; i++)
		pthread_join(e->workers[i], NULL);
	free(e->workers);
	/* without a thread (it failed to start) loops may remain; none has a
	 * transfer */
	while (e->dead) {
		struct loop *l = e->dead;
		e->dead = l->dead_next;
		loop_unref(l);
	}
	for (size_t i = 0; i < e->nslots; i++)
		if (e->slots[i])
			loop_unref(e->slots[i]);
	while (e->pool) {
		struct xfer *x = e->pool;
		e->pool = x->next;
		xfer_free(x);
	}
	if (e->multi)
		curl_multi_cleanup(e->multi);
	/* after every easy handle: a share in use cannot be cleaned up */
	for (size_t i = 0; i < SHARES; i++)
		if (e->shares[i])
			curl_share_cleanup(e->shares[i]);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->wakefd >= 0)
		close(e->wakefd);
	free(e->slots);
	free(e->gen);
	free(e->free_slots);
	free(e->heap);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	pthread_cond_destroy(&e->q[0].cv);
	pthread_cond_destroy(&e->q[1].cv);
	free(e);
}

/* A free slot for a new loop (e->mu held); SIZE_MAX when out of memory or ids. */
static size_t slot_take(struct pd_scrape_engine *e)
{
	if (e->nfree)
		return e->free_slots[--e->nfree];
	if (e->nslots == MAX_LOOPS)
		return SIZE_MAX;
	if (e->nslots == e->slotcap) {
		size_t c = e->slotcap ? e->slotcap * 2 : 64;
		struct loop **s = realloc(e->slots, c * sizeof(*s));
		if (!s)
			return SIZE_MAX;
		e->slots = s;
		uint32_t *g = realloc(e->gen, c * sizeof(*g));
		if (!g)
			return SIZE_MAX;
		e->gen = g;
		size_t *f = realloc(e->free_slots, c * sizeof(*f));
		if (!f)
			return SIZE_MAX;
		e->free_slots = f;
		e->slotcap = c;
	}
	e->gen[e->nslots] = 0;
	e->slots[e->nslots] = NULL;
	return e->nslots++;
}

int pd_scrape_loop_add(struct pd_scrape_engine *e, const struct pd_scrape_spec *spec,
		       void *loop_ctx, uint64_t *id, struct pd_err *err)
{
	if (!spec->url || spec->interval_ms <= 0 || spec->timeout_ms <= 0)
		return pd_err_set(err, PD_EINVAL, "a scrape loop needs a URL, an interval and a timeout");
	struct loop *l = calloc(1, sizeof(*l));
	if (!l)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	l->ctx = loop_ctx;
	l->url = strdup(spec->url);
	l->interval = spec->interval_ms;
	l->timeout = spec->timeout_ms;
	l->body_limit = spec->body_limit ? spec->body_limit : PD_SCRAPE_DEFAULT_BODY_LIMIT;
	l->max_ratio = __atomic_load_n(&e->max_ratio, __ATOMIC_RELAXED);
	l->offset = pd_scrape_offset(spec->offset_seed, spec->interval_ms);
	l->heap_idx = SIZE_MAX;
	l->share = (unsigned)((spec->offset_seed >> 32) % SHARES);
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
	size_t slot = slot_take(e);
	if (slot == SIZE_MAX) {
		pthread_mutex_unlock(&e->mu);
		loop_free(l);
		return pd_err_set(err, PD_ENOMEM, "out of memory for scrape loops (at most %zu)",
				  (size_t)MAX_LOOPS);
	}
	if (heap_push(e, l)) {
		e->free_slots[e->nfree++] = slot;
		pthread_mutex_unlock(&e->mu);
		loop_free(l);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	l->slot = slot;
	e->slots[slot] = l;
	l->id = ((uint64_t)e->gen[slot] << SLOT_BITS) | (uint64_t)(slot + 1);
	*id = l->id;
	pthread_mutex_unlock(&e->mu);
	wake(e);
	return 0;
}

/* Removes loop id, if it is there (e->mu held, which waiting for a callback
 * releases for a while). */
static void remove_locked(struct pd_scrape_engine *e, uint64_t id)
{
	size_t slot = (size_t)(id & (((uint64_t)1 << SLOT_BITS) - 1));
	struct loop *l = slot >= 1 && slot - 1 < e->nslots ? e->slots[slot - 1] : NULL;
	if (!l || l->id != id)
		return;
	l->removed = 1;
	e->slots[slot - 1] = NULL;
	e->gen[slot - 1]++;
	e->free_slots[e->nfree++] = slot - 1;
	heap_remove(e, l);
	/* the engine's reference moves to the dead list, where the engine thread
	 * drops the transfer in flight, if any (libcurl is not used across threads) */
	l->dead_next = e->dead;
	e->dead = l;
	l->refs++; /* keep it while we wait */
	if (l->running)
		__atomic_store_n(&l->running->cancel, 1, __ATOMIC_RELAXED);
	while (l->in_callback)
		pthread_cond_wait(&e->cv, &e->mu);
	loop_unref(l);
}

void pd_scrape_loop_remove(struct pd_scrape_engine *e, uint64_t id)
{
	pd_scrape_loops_remove(e, &id, 1);
}

void pd_scrape_loops_remove(struct pd_scrape_engine *e, const uint64_t *ids, size_t n)
{
	if (!n)
		return;
	/* in batches, so that scrapes due meanwhile wait a batch at most */
	for (size_t i = 0; i < n;) {
		pthread_mutex_lock(&e->mu);
		for (size_t end = i + 4096 < n ? i + 4096 : n; i < end; i++)
			if (ids[i])
				remove_locked(e, ids[i]);
		pthread_mutex_unlock(&e->mu);
	}
	wake(e);
}
