/* engine_worker.c: the scrape engine's worker threads. Each takes finished scrapes
 * from its queue (small bodies, or large ones, which HEAVY_WORKERS threads of their
 * own decode), undoes a body's Content-Encoding (gzip, deflate) in slices that check
 * the body limit, the scrape's deadline and a cancel flag set when the loop is
 * removed or the engine stops, and runs the result callback. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine_int.h"

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

void *engine_worker_main(void *arg)
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
			j->r.deadline_us = engine_mono_us() + j->r.timeout_ms * 1000;
			if (j->encoding != ENC_IDENTITY && !j->r.error)
				decode_body(j);
			e->fn(e->ctx, l->ctx, &j->r);
			pthread_mutex_lock(&e->mu);
			l->running = NULL;
			l->in_callback--;
			pthread_cond_broadcast(&e->cv);
		}
		l->pending = 0;
		engine_loop_unref(l);
		free(j->body);
		free(j);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}
