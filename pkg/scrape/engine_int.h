/* engine_int.h: what the scrape engine's files share (engine.c: the loops, the
 * event loop and the engine's life; engine_xfer.c: transfers, from their easy
 * handles to their results; engine_worker.c: the workers that decode results and
 * run the callback), engine_-prefixed. */
#ifndef PD_SCRAPE_ENGINE_INT_H
#define PD_SCRAPE_ENGINE_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "profd/scrape.h"
#include "profd/util.h"

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

/* The clocks: wall clock in ms, monotonic in us (engine.c). */
int64_t engine_now_ms(void);
int64_t engine_mono_us(void);

/* Drops one reference to a loop, freeing it with the last; the caller holds e->mu. */
void engine_loop_unref(struct loop *l);

/* Frees an easy handle with its state (engine_xfer.c). */
void engine_xfer_free(struct xfer *x);
/* Starts a scrape of l (engine thread, e->mu held); -1 when it cannot. */
int engine_start_transfer(struct pd_scrape_engine *e, struct loop *l, int64_t sched);
/* Drops the transfer of a loop and the transfer's reference, then the reference the
 * caller held (engine thread, e->mu held). */
void engine_abandon_and_unref(struct pd_scrape_engine *e, struct loop *l);
/* Turns a finished transfer into a queued result (e->mu held). */
void engine_finish_transfer(struct pd_scrape_engine *e, struct xfer *x, CURLcode code);

/* A worker thread; arg is its queue (engine_worker.c). */
void *engine_worker_main(void *arg);

#endif
