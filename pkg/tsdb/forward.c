/* forward.c: the forwarder of a store with a sink (pd_tsdb_opts.sink: a remote
 * store such as ClickHouse, which the store knows only through storage.h's sink
 * functions). Commits are acknowledged once their record is in the WAL, as
 * always; this thread follows the WAL from the "sent up to" position
 * (forward_sent.c), decodes each profile, hands it to the sink's batch, and
 * flushes the batch when it is full and at least once a second. Only after the
 * sink accepted a flush does the position move past the records of the batch;
 * the WAL segments wholly before it are then checkpointed away (the checkpoint
 * keeps the series entries, so later records still find their labels). A failed
 * flush is retried with a backoff of 1 s doubling to 30 s, and logged once per
 * outage. The spool is everything after the
 * position: its bytes are bounded (PD_EFULL for commits beyond the limit), and
 * nothing in it is ever dropped. With a retention time the thread also drops the
 * days of profiles that are past it (retention()). docs/scale-out.md explains the
 * whole. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profd/labels.h"
#include "profd/pprof.h"
#include "tsdb_int.h"
#include "wal_int.h"

struct tsdb_fwd {
	struct pd_tsdb *db;
	const struct pd_storage_sink *sink;
	const char *c; /* log component: the sink's name */
	char *waldir;
	pthread_t th;
	int started;
	pthread_mutex_t mu; /* guards stop and wake */
	pthread_cond_t cv;
	int stop;
	uint64_t wake;
	/* counters, __atomic */
	uint64_t max, spool_bytes, spool_profiles, sent, flushes, failures, refusals, skipped;
	uint64_t dropped, retention_failures;
	int64_t last_flush_ms;
	/* the thread's own */
	int batch_ok; /* the sink's batch is known (reset since the last failure) */
	struct pd_wal_tail *tail;
	uint32_t pos_seg, cur_seg; /* sent up to; read up to */
	uint64_t pos_off, cur_off;
	uint32_t first_seg;      /* the oldest segment not checkpointed away */
	uint64_t batch_bytes;    /* WAL bytes read since pos */
	uint64_t batch_samples;  /* profiles read since pos (skipped ones too) */
	uint64_t batch_appended; /* of which in the writer's batch */
	int64_t batch_start_ms;
	int64_t batch_min_t;       /* the oldest profile in the writer's batch */
	int64_t retention_next_ms; /* monotonic time of the next retention run */
	int schema_pending;
	int outage; /* logged as down, until a flush succeeds */
	/* the series of the WAL: its ref -> labels (latest entry wins) */
	struct pd_u64map refs;
	struct pd_labels **labels;
	size_t nlabels, cap;
	struct pd_labels_builder *lb;
	/* what the record callbacks do */
	struct pd_wal_replay_cb cb;
	int counting; /* only count samples (start-up) */
	int cb_rc;
	struct pd_err cb_err;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the WAL's records ----------------------------------------------------------- */

static int on_series(void *ctx, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	struct tsdb_fwd *s = ctx;
	struct pd_labels *ls = NULL;
	struct pd_err err;
	uint32_t ix;
	if (!ref)
		return 0;
	pd_labels_builder_reset(s->lb, NULL);
	for (size_t i = 0; i < n; i++)
		pd_labels_builder_add(s->lb, l[i].name, l[i].value);
	int rc = pd_labels_builder_finish(s->lb, &ls, &err);
	if (rc == PD_ENOMEM)
		return rc;
	if (rc) {
		/* its samples are skipped as those of an unknown series */
		pd_log_warn(s->c, "a series of the WAL has labels the remote store cannot take",
		            "ref=%llu err=%s", (unsigned long long)ref, err.msg);
		return 0;
	}
	if (pd_u64map_get(&s->refs, ref, &ix)) {
		pd_labels_destroy(s->labels[ix]);
		s->labels[ix] = ls;
		return 0;
	}
	if (s->nlabels == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 64;
		struct pd_labels **nl = realloc(s->labels, c * sizeof(*nl));
		if (!nl) {
			pd_labels_destroy(ls);
			return PD_ENOMEM;
		}
		s->labels = nl;
		s->cap = c;
	}
	if (s->nlabels >= UINT32_MAX || pd_u64map_put(&s->refs, ref, (uint32_t)s->nlabels)) {
		pd_labels_destroy(ls);
		return PD_ENOMEM;
	}
	s->labels[s->nlabels++] = ls;
	return 0;
}

static int on_sample(void *ctx, uint64_t ref, int64_t t, const uint8_t *p, size_t len)
{
	struct tsdb_fwd *s = ctx;
	struct pd_pprof_profile *prof = NULL;
	struct pd_pprof_decode_opts o = {.max_decompressed = s->db->o.max_profile};
	struct pd_err err;
	uint32_t ix;
	s->batch_samples++;
	if (s->counting)
		return 0;
	if (!ref || !pd_u64map_get(&s->refs, ref, &ix)) {
		__atomic_fetch_add(&s->skipped, 1, __ATOMIC_RELAXED);
		pd_log_warn(s->c, "a spooled profile names no known series: skipped",
		            "ref=%llu t=%lld", (unsigned long long)ref, (long long)t);
		return 0;
	}
	int rc = pd_pprof_decode(&prof, p, len, &o, &err);
	if (rc == PD_ENOMEM) {
		s->cb_rc = rc;
		s->cb_err = err;
		return rc;
	}
	if (rc) {
		__atomic_fetch_add(&s->skipped, 1, __ATOMIC_RELAXED);
		pd_log_warn(s->c, "a spooled profile does not decode: skipped",
		            "t=%lld err=%s", (long long)t, err.msg);
		return 0;
	}
	rc = s->sink->append(s->sink->ctx, s->labels[ix], t, prof, &err);
	pd_pprof_destroy(prof);
	if (rc == PD_ENOMEM) {
		/* the batch is as it was: read again from the sent position later */
		s->cb_rc = rc;
		s->cb_err = err;
		return rc;
	}
	if (rc) {
		/* the writer cannot take this profile, now or ever: skipped, so that it
		 * does not hold the spool up */
		__atomic_fetch_add(&s->skipped, 1, __ATOMIC_RELAXED);
		pd_log_warn(s->c, "a spooled profile cannot be written to the remote store: skipped",
		            "t=%lld err=%s", (long long)t, err.msg);
		return 0;
	}
	if (!s->batch_appended || t < s->batch_min_t)
		s->batch_min_t = t;
	s->batch_appended++;
	return 0;
}

/* ---- waiting ---------------------------------------------------------------------- */

/* Waits up to ms or until woken or stopped; returns stop. */
static int wait_ms(struct tsdb_fwd *s, int64_t ms, uint64_t seen)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->stop && s->wake == seen)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
			break;
	int stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	return stop;
}

/* Waits out a backoff (woken only by stop); returns stop. */
static int backoff_wait(struct tsdb_fwd *s, int64_t ms)
{
	int64_t until = mono_ms() + ms;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		int stop = s->stop;
		uint64_t seen = s->wake;
		pthread_mutex_unlock(&s->mu);
		int64_t left = until - mono_ms();
		if (stop || left <= 0)
			return stop;
		if (wait_ms(s, left, seen))
			return 1;
	}
}

/* ---- sending ------------------------------------------------------------------------ */

/* *v -= d, stopping at 0: damage skipped in the WAL is passed over as read, and
 * may not have been counted in. */
static void sat_sub(uint64_t *v, uint64_t d)
{
	uint64_t old = __atomic_load_n(v, __ATOMIC_RELAXED), nv;
	do
		nv = old > d ? old - d : 0;
	while (!__atomic_compare_exchange_n(v, &old, nv, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* The batch is in the remote store (or held nothing): the position moves to the read
 * cursor, durably, and segments wholly before it go. */
static void advance(struct tsdb_fwd *s)
{
	struct pd_err err = {0};
	s->pos_seg = s->cur_seg;
	s->pos_off = s->cur_off;
	if (tsdb_sent_write(s->db->dir, s->sink->name, s->pos_seg, s->pos_off, &err))
		/* the records are resent after a restart: harmless */
		pd_log_error(s->c, "writing the sent position failed", "err=%s", err.msg);
	sat_sub(&s->spool_bytes, s->batch_bytes);
	sat_sub(&s->spool_profiles, s->batch_samples);
	s->batch_bytes = s->batch_samples = s->batch_appended = 0;
	if (s->pos_seg > s->first_seg) {
		/* series entries stay (a later record may name them), samples go */
		if (pd_wal_checkpoint_upto(s->db->wal, s->pos_seg - 1, INT64_MAX, NULL, NULL, &err))
			pd_log_error(s->c,
			             "deleting sent WAL segments failed (retried later)", "err=%s",
			             err.msg);
		else
			s->first_seg = s->pos_seg;
	}
}

/* A flush (or the schema) failed: counted, logged once per outage, and waited
 * out; returns stop. */
static int failed(struct tsdb_fwd *s, int64_t *backoff, const char *what, const struct pd_err *err)
{
	__atomic_fetch_add(&s->failures, 1, __ATOMIC_RELAXED);
	if (!s->outage) {
		char msg[200];
		snprintf(msg, sizeof(msg),
		         "%s did not take the profiles; they stay in the WAL and are "
		         "sent when it does (retried with a backoff up to 30s, logged again "
		         "when it answers)",
		         s->sink->title);
		pd_log_error(s->c, msg, "what=%s err=%s", what, err->msg);
		s->outage = 1;
	}
	*backoff = *backoff ? *backoff * 2 : PD_TSDB_SHIP_BACKOFF_MIN_MS;
	if (*backoff > PD_TSDB_SHIP_BACKOFF_MAX_MS)
		*backoff = PD_TSDB_SHIP_BACKOFF_MAX_MS;
	return backoff_wait(s, *backoff);
}

static int flush(struct tsdb_fwd *s, struct pd_err *err)
{
	int rc = s->sink->flush(s->sink->ctx, err);
	if (rc)
		return rc;
	__atomic_fetch_add(&s->sent, s->batch_appended, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->flushes, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->last_flush_ms, wall_ms(), __ATOMIC_RELAXED);
	if (s->db->o.retention_ms > 0 && s->batch_min_t < wall_ms() - s->db->o.retention_ms)
		s->retention_next_ms = 0; /* sent a profile already past retention */
	if (s->outage) {
		char msg[100];
		snprintf(msg, sizeof(msg), "%s takes profiles again", s->sink->title);
		pd_log_info(
		    s->c, msg, "spooled_profiles=%llu",
		    (unsigned long long)__atomic_load_n(&s->spool_profiles, __ATOMIC_RELAXED));
		s->outage = 0;
	}
	advance(s);
	return 0;
}

/* Drops the partitions (UTC days) of the remote store that lie wholly before now -
 * retention, when a run is due. A failure is logged and counted, and tried again
 * at the next interval: retention never holds the sending of profiles back. */
static void retention(struct tsdb_fwd *s)
{
	int64_t keep = s->db->o.retention_ms;
	if (keep <= 0 || s->outage || s->schema_pending || mono_ms() < s->retention_next_ms)
		return;
	s->retention_next_ms = mono_ms() + PD_TSDB_SHIP_RETENTION_INTERVAL_MS;
	struct pd_err err = {0};
	size_t dropped = 0;
	int64_t before = wall_ms() - keep;
	if (s->sink->drop_before(s->sink->ctx, before, &dropped, &err)) {
		__atomic_fetch_add(&s->retention_failures, 1, __ATOMIC_RELAXED);
		pd_log_warn(s->c, "dropping the days past retention failed; tried again later",
		            "err=%s", err.msg);
		return;
	}
	if (dropped) {
		__atomic_fetch_add(&s->dropped, dropped, __ATOMIC_RELAXED);
		pd_log_info(s->c, "dropped the days past retention", "partitions=%zu before_ms=%lld",
		            dropped, (long long)before);
	}
}

/* Back to the sent position with an empty batch, after a failure that left the
 * batch in an unknown state. */
static int restart_batch(struct tsdb_fwd *s, struct pd_err *err)
{
	s->batch_ok = 0;
	s->cur_seg = s->pos_seg;
	s->cur_off = s->pos_off;
	s->batch_bytes = s->batch_samples = s->batch_appended = 0;
	int rc = s->sink->reset(s->sink->ctx, err);
	s->batch_ok = rc == 0;
	return rc;
}

static void *ship_main(void *arg)
{
	struct tsdb_fwd *s = arg;
	struct pd_err err = {0};
	int64_t backoff = 0;
	int sealed = 0; /* a flush of the batch was tried: no more reading until it goes */
	for (;;) {
		pthread_mutex_lock(&s->mu);
		int stop = s->stop;
		uint64_t seen = s->wake;
		pthread_mutex_unlock(&s->mu);
		if (stop) {
			/* a last flush, unless the remote store is known to be down */
			if (s->batch_appended && !s->outage && !s->schema_pending &&
			    flush(s, &err) == 0)
				pd_log_info(s->c, "spool flushed at stop", "pending=%llu",
				            (unsigned long long)__atomic_load_n(&s->spool_profiles,
				                                                __ATOMIC_RELAXED));
			break;
		}
		if (s->schema_pending) {
			if (s->sink->prepare(s->sink->ctx, &err)) {
				if (failed(s, &backoff, "creating the schema", &err))
					break;
				continue;
			}
			pd_log_info(s->c, "schema created", "sink=%s", s->sink->name);
			s->schema_pending = 0;
		}
		retention(s);
		int eof = 0;
		while (!sealed && s->batch_samples < PD_TSDB_SHIP_BATCH_PROFILES &&
		       s->batch_bytes < PD_TSDB_SHIP_BATCH_BYTES) {
			uint32_t es, seg = s->cur_seg;
			uint64_t eo, off = s->cur_off, moved = 0;
			pd_wal_end(s->db->wal, &es, &eo);
			s->cb_rc = 0;
			int rc = pd_wal_tail_next(s->tail, &s->cur_seg, &s->cur_off, es, eo, &s->cb,
			                          &moved, &err);
			if (rc == 0) {
				eof = 1;
				break;
			}
			if (rc < 0) {
				if (s->cb_rc)
					err = s->cb_err;
				pd_log_error(s->c, "reading the WAL for the remote store failed",
				             "segment=%u offset=%llu err=%s", seg,
				             (unsigned long long)off, err.msg);
				if (restart_batch(s, &err) ||
				    backoff_wait(s, PD_TSDB_SHIP_BACKOFF_MAX_MS))
					goto out;
				break;
			}
			if (!s->batch_bytes)
				s->batch_start_ms = mono_ms();
			s->batch_bytes += moved;
		}
		if (!s->batch_ok)
			break;
		int full = s->batch_samples >= PD_TSDB_SHIP_BATCH_PROFILES ||
		           s->batch_bytes >= PD_TSDB_SHIP_BATCH_BYTES;
		int due =
		    s->batch_bytes && mono_ms() - s->batch_start_ms >= PD_TSDB_SHIP_INTERVAL_MS;
		if (s->batch_bytes && !s->batch_appended && (full || due || eof)) {
			advance(s); /* nothing to send in what was read */
			continue;
		}
		if (s->batch_appended && (full || due || sealed)) {
			sealed = 1;
			if (flush(s, &err)) {
				if (failed(s, &backoff, "inserting profiles", &err))
					break;
				continue;
			}
			sealed = 0;
			backoff = 0;
			continue;
		}
		if (eof) {
			int64_t wait = PD_TSDB_SHIP_INTERVAL_MS;
			if (s->batch_bytes)
				wait = s->batch_start_ms + PD_TSDB_SHIP_INTERVAL_MS - mono_ms();
			if (wait > 0 && wait_ms(s, wait, seen))
				continue; /* stop: handled at the top */
		}
	}
out:
	return NULL;
}

/* ---- start and stop ---------------------------------------------------------------------- */

static void ship_free(struct tsdb_fwd *s)
{
	/* a batch not flushed stays in the sink until its next reset: the next
	 * forwarder of this sink starts with one */
	pd_wal_tail_destroy(s->tail);
	for (size_t i = 0; i < s->nlabels; i++)
		pd_labels_destroy(s->labels[i]);
	free(s->labels);
	pd_u64map_fini(&s->refs);
	pd_labels_builder_destroy(s->lb);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->waldir);
	free(s);
}

/* Reads [from, to) of the WAL with the callbacks; seg and off end where it stopped. */
static int read_span(struct tsdb_fwd *s, uint32_t *seg, uint64_t *off, uint32_t to_seg,
                     uint64_t to_off, uint64_t *bytes, struct pd_err *err)
{
	int rc;
	while ((rc = pd_wal_tail_next(s->tail, seg, off, to_seg, to_off, &s->cb, bytes, err)) > 0)
		;
	return rc;
}

int tsdb_fwd_start(struct pd_tsdb *db, struct pd_err *err)
{
	struct tsdb_fwd *s = calloc(1, sizeof(*s));
	struct pd_wal_listing l = {0};
	struct pd_err perr = {0};
	int rc;
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pd_u64map_init(&s->refs);
	s->db = db;
	s->cb = (struct pd_wal_replay_cb){on_series, on_sample, s, NULL};
	s->sink = db->o.sink;
	s->c = s->sink->name;
	s->max = db->o.spool_max ? db->o.spool_max : PD_TSDB_DEFAULT_SPOOL_MAX;
	s->schema_pending = db->o.sink_pending;
	size_t n = strlen(db->dir) + 5;
	if (!(s->waldir = malloc(n)) || !(s->lb = pd_labels_builder_create(NULL))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	snprintf(s->waldir, n, "%s/wal", db->dir);
	if ((rc = pd_wal_tail_create(&s->tail, s->waldir, err)) || (rc = restart_batch(s, err)))
		goto fail;

	/* where sending resumes: a missing or damaged position is the WAL's start */
	uint32_t ps;
	uint64_t po;
	rc = tsdb_sent_read(db->dir, s->sink->name, &ps, &po, &perr);
	if (rc == PD_ECORRUPT)
		pd_log_warn(s->c,
		            "the sent position is damaged: the whole WAL is sent again (the remote "
		            "store keeps one copy of each profile)",
		            "err=%s", perr.msg);
	else if (rc && rc != PD_ENOTFOUND) {
		*err = perr;
		goto fail;
	}

	/* the series the WAL names: the checkpoint's, then the segments' up to the
	 * position; the records after it are counted as the spool */
	if ((rc = pd_wal_list(s->waldir, &l, err)))
		goto fail;
	uint32_t cp = l.ncps ? l.cps[l.ncps - 1] : 0;
	if (cp) {
		char *cpdir = pd_wal_cp_path(s->waldir, cp, 0);
		struct pd_wal_listing c = {0};
		struct pd_wal_damage dmg = {0};
		rc = cpdir ? pd_wal_list(cpdir, &c, err)
		           : pd_err_set(err, PD_ENOMEM, "out of memory");
		if (!rc) {
			s->counting = 1;
			rc = pd_wal_read_segments(cpdir, c.segs, c.nsegs, 1, &s->cb, NULL, &dmg,
			                          err);
			if (rc == 1)
				rc = 0;
		}
		pd_wal_listing_fini(&c);
		free(cpdir);
		if (rc)
			goto fail;
	}
	uint32_t es, seg = 0;
	uint64_t eo, off = 0, bytes = 0;
	pd_wal_end(db->wal, &es, &eo);
	for (size_t i = 0; i < l.nsegs && !seg; i++)
		if (l.segs[i] > cp)
			seg = l.segs[i];
	if (!seg)
		seg = es;
	s->first_seg = seg;
	s->counting = 1;
	if (ps > es || (ps == es && po > eo)) {
		/* past the WAL's end (a WAL removed by hand): everything there is new */
		ps = es;
		po = eo;
	}
	if (ps > seg || (ps == seg && po > off))
		rc = read_span(s, &seg, &off, ps, po, NULL, err);
	s->batch_samples = 0;
	s->cur_seg = s->pos_seg = seg;
	s->cur_off = s->pos_off = off;
	/* the spool: counted, not yet sent (the series entries after the position
	 * are applied as the shipper reads them) */
	if (!rc) {
		struct pd_wal_replay_cb count = {NULL, on_sample, s, NULL};
		while ((rc = pd_wal_tail_next(s->tail, &seg, &off, es, eo, &count, &bytes, err)) >
		       0)
			;
	}
	if (rc)
		goto fail;
	s->spool_bytes = bytes;
	s->spool_profiles = s->batch_samples;
	s->batch_samples = 0;
	s->counting = 0;
	pd_wal_listing_fini(&l);
	if (s->spool_profiles)
		pd_log_info(s->c, "spooled profiles are sent to the remote store",
		            "profiles=%llu bytes=%llu from_segment=%u from_offset=%llu",
		            (unsigned long long)s->spool_profiles,
		            (unsigned long long)s->spool_bytes, s->pos_seg,
		            (unsigned long long)s->pos_off);
	if ((rc = pthread_create(&s->th, NULL, ship_main, s))) {
		rc =
		    pd_err_set(err, PD_ENOMEM, "starting the forwarder to %s: %s", s->sink->title,
		               strerror(rc));
		goto fail;
	}
	s->started = 1;
	db->fwd = s;
	return 0;
fail:
	pd_wal_listing_fini(&l);
	pd_err_prefix(err, "%s spool", s->sink->title);
	ship_free(s);
	return rc;
}

void tsdb_fwd_stop(struct tsdb_fwd *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->th, NULL);
	ship_free(s);
}

int tsdb_fwd_admit(struct tsdb_fwd *s, size_t bytes, struct pd_err *err)
{
	uint64_t now = __atomic_add_fetch(&s->spool_bytes, bytes, __ATOMIC_RELAXED);
	if (now <= s->max || now == bytes)
		return 0; /* one record alone always fits: it could not go otherwise */
	__atomic_fetch_sub(&s->spool_bytes, bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->refusals, 1, __ATOMIC_RELAXED);
	return pd_err_set(
	    err, PD_EFULL,
	    "the %s spool is full: %llu bytes of profiles wait for %s, "
	    "the limit is %llu (%s); nothing is "
	    "stored until %s takes them",
	    s->sink->title, (unsigned long long)(now - bytes), s->sink->title,
	    (unsigned long long)s->max, s->sink->spool_flag, s->sink->title);
}

void tsdb_fwd_written(struct tsdb_fwd *s, size_t bytes, size_t profiles, int ok)
{
	if (!ok) {
		__atomic_fetch_sub(&s->spool_bytes, bytes, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_add(&s->spool_profiles, profiles, __ATOMIC_RELAXED);
	pthread_mutex_lock(&s->mu);
	s->wake++;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void tsdb_fwd_stats(struct tsdb_fwd *s, struct pd_storage_stats *st)
{
	st->remote = 1;
	st->remote_spool_max = s->max;
	st->remote_spool_bytes = __atomic_load_n(&s->spool_bytes, __ATOMIC_RELAXED);
	st->remote_spool_profiles = __atomic_load_n(&s->spool_profiles, __ATOMIC_RELAXED);
	st->remote_sent_profiles = __atomic_load_n(&s->sent, __ATOMIC_RELAXED);
	st->remote_flushes = __atomic_load_n(&s->flushes, __ATOMIC_RELAXED);
	st->remote_flush_failures = __atomic_load_n(&s->failures, __ATOMIC_RELAXED);
	st->remote_spool_full_refusals = __atomic_load_n(&s->refusals, __ATOMIC_RELAXED);
	st->remote_skipped_profiles = __atomic_load_n(&s->skipped, __ATOMIC_RELAXED);
	st->remote_last_flush_ms = __atomic_load_n(&s->last_flush_ms, __ATOMIC_RELAXED);
	st->remote_partitions_dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
	st->remote_retention_failures = __atomic_load_n(&s->retention_failures, __ATOMIC_RELAXED);
}

void tsdb_note_time(struct head_series *s, int64_t t)
{
	pthread_mutex_lock(&s->mu);
	if (t > s->maxt)
		s->maxt = t;
	pthread_mutex_unlock(&s->mu);
}
