/* engine.c: the scrape engine: one thread drives every HTTP transfer on a libcurl
 * multi handle and fires each loop at its tick; finished bodies go through a queue
 * to worker threads that run the result callback (decode, store), so the event
 * loop never waits on CPU work or on storage. This file holds the loops, the event
 * loop and the engine's life; a transfer's setup and end are engine_xfer.c's, the
 * workers engine_worker.c's.
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
 *   one cache per multi handle each scrape cost a walk over every target. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "engine_int.h"

#define SLOT_BITS 24
#define MAX_LOOPS (((size_t)1 << SLOT_BITS) - 1)

int64_t engine_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t engine_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t pd_scrape_mono_us(void)
{
	return engine_mono_us();
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

/* ---- loops ---------------------------------------------------------------------- */

static void loop_free(struct loop *l)
{
	pd_http_client_config_free(&l->client);
	free(l->url);
	free(l);
}

/* Drops one reference; the caller holds e->mu. */
void engine_loop_unref(struct loop *l)
{
	if (--l->refs == 0)
		loop_free(l);
}

static int64_t mono_ms(void)
{
	return engine_mono_us() / 1000;
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
			engine_abandon_and_unref(e, l); /* the dead list's reference */
		}
		int64_t now = engine_now_ms(), wait = 1000;
		while (e->nheap && e->heap[0]->next <= now) {
			struct loop *l = e->heap[0];
			int64_t sched = l->next;
			while (l->next <= now)
				l->next += l->interval;
			heap_down(e, 0);
			if (!l->xfer && !l->pending)
				engine_start_transfer(e, l, sched);
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
			engine_finish_transfer(e, x, x->code);
		}
		pthread_mutex_unlock(&e->mu);
	}
	/* stopping: abandon transfers in flight, drop the loops */
	pthread_mutex_lock(&e->mu);
	while (e->dead) {
		struct loop *l = e->dead;
		e->dead = l->dead_next;
		engine_abandon_and_unref(e, l);
	}
	for (size_t i = 0; i < e->nslots; i++) {
		struct loop *l = e->slots[i];
		if (!l)
			continue;
		e->slots[i] = NULL;
		engine_abandon_and_unref(e, l); /* the engine's reference */
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
	 * is 4 per handle in use, and a handle is in use only while it scrapes), at most
	 * half the file descriptors the process may open in all (the limit applies to
	 * each share: with more loops than that every share fills up), so that the
	 * transfers in flight, the API's connections and the store's files keep the
	 * other half; 50,000 targets held 15,500 descriptors of 20,000 when the shares
	 * could keep three quarters */
	struct rlimit rl;
	long maxconn = 512;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		maxconn = (long)(rl.rlim_cur / 2);
	if (maxconn > 10000)
		maxconn = 10000;
	e->share_maxconn = maxconn / SHARES;
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
		if (pthread_create(&e->workers[i], NULL, engine_worker_main, &e->q[i >= e->nworkers])) {
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
		engine_loop_unref(l);
	}
	for (size_t i = 0; i < e->nslots; i++)
		if (e->slots[i])
			engine_loop_unref(e->slots[i]);
	while (e->pool) {
		struct xfer *x = e->pool;
		e->pool = x->next;
		engine_xfer_free(x);
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
	l->next = first_tick(engine_now_ms(), l->interval, l->offset);
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
	engine_loop_unref(l);
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
