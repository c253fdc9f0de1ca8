/* db_append.c: the appender: samples checked against the store's bounds (how far
 * back and ahead appends go, the series limit), then committed all or nothing:
 * the WAL first (one record a commit, with group commit), then the head, in
 * parallel across series and in order within one. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profd/pprof.h"
#include "block_int.h"
#include "hc_replay.h"
#include "head_chunks.h"
#include "head_spill.h"
#include "db_int.h"
#include "tsdb_int.h"
#include "wal.h"

/* ---- appending ------------------------------------------------------------- */

struct app_sample {
	struct pd_lpair *labels; /* with the strings after the array */
	size_t n;
	uint64_t hash;
	int64_t t;
	uint8_t *p;
	size_t len;
	struct pd_pprof_profile *prof; /* p decoded by the caller, or NULL */
	uint8_t *gz;   /* p as the gzip stream it came in, for the WAL; or NULL */
	size_t gzlen;
};

struct pd_tsdb_appender {
	struct pd_storage_appender base; /* first: the storage interface's appender */
	struct pd_tsdb *db;
	struct app_sample *v;
	size_t n, cap;
	int lazy; /* pd_tsdb_appender_lazy */
};

struct pd_tsdb_appender *pd_tsdb_appender(struct pd_tsdb *db)
{
	struct pd_tsdb_appender *a = calloc(1, sizeof(*a));
	if (a) {
		a->base.ops = &tsdb_appender_ops;
		a->db = db;
	}
	return a;
}

struct pd_storage_appender *tsdb_appender_base(struct pd_tsdb_appender *a)
{
	return a ? &a->base : NULL;
}

void pd_tsdb_appender_lazy(struct pd_tsdb_appender *a)
{
	a->lazy = 1;
}

static void app_free(struct pd_tsdb_appender *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].labels);
		free(a->v[i].p);
		free(a->v[i].gz);
		pd_pprof_destroy(a->v[i].prof);
	}
	free(a->v);
	free(a);
}

void pd_tsdb_rollback(struct pd_tsdb_appender *a)
{
	if (a)
		app_free(a);
}

static void series_name(const struct pd_lpair *l, size_t n, char *out, size_t size)
{
	size_t off = 0;
	const char *name = "";
	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i].name, "__name__") == 0)
			name = l[i].value;
	off += (size_t)snprintf(out, size, "%s{", name);
	for (size_t i = 0; i < n && off < size; i++) {
		if (strcmp(l[i].name, "__name__") == 0)
			continue;
		off += (size_t)snprintf(out + off, size - off, "%s%s=\"%s\"",
					off > strlen(name) + 1 ? ", " : "", l[i].name, l[i].value);
	}
	if (off < size)
		snprintf(out + off, size - off, "}");
}

/* The newest timestamp of a label set, in the head or earlier in this appender. */
static int64_t last_time(struct pd_tsdb_appender *a, const struct pd_lpair *l, size_t n,
			 uint64_t hash)
{
	for (size_t i = a->n; i-- > 0;)
		if (a->v[i].hash == hash && labels_cmp(a->v[i].labels, a->v[i].n, l, n) == 0)
			return a->v[i].t;
	return head_series_maxt(&a->db->head, l, n, hash);
}

static int append_sample(struct pd_tsdb_appender *a, const struct pd_storage_label *labels, size_t n,
			 int64_t t, const uint8_t *profile, size_t len,
			 struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
			 struct pd_err *err);

/* ---- how far back appends go -------------------------------------------------
 *
 * The head takes no sample before min_valid_t, the end of the newest block at
 * open or of the newest complete range a flush persisted since (Prometheus's
 * "out of bounds"): such a sample would make the next flush write a block over
 * a range written already, which compaction then has to merge sample by sample,
 * the whole of its compacted block, at every flush a client likes. Nor one past the retention time behind the
 * newest sample, which retention would delete with its block at once. A flush
 * raises min_valid_t under append_mu, and commits check against it under
 * append_mu, so a commit acknowledged before the rise is in the head the flush
 * persists, and one after it is checked against the new end. Without the WAL
 * (bulk import writes blocks) or with a sink there is no bound.
 *
 * Nor, with the WAL, one dated more than max_future_ms after the system clock
 * (Mimir's creation grace period): the newest sample moves the retention bound
 * and decides which ranges are complete, so one sample far ahead would refuse
 * every present one. Every bound is measured from the newest sample capped at
 * the clock (bound_cap), so neither a sample within the window nor one stored
 * before the window existed moves a bound past the present. */
static int bounded(const struct pd_tsdb *db)
{
	return !db->o.wal_disabled && !db->o.sink && !db->o.read_only;
}

/* The earliest timestamp an append may have now (INT64_MIN: any), and why. */
int64_t db_accept_from(struct pd_tsdb *db, const char **why)
{
	int64_t from = __atomic_load_n(&db->min_valid_t, __ATOMIC_ACQUIRE);
	*why = "the newest block ends there and blocks take no new samples";
	if (!bounded(db))
		return INT64_MIN;
	if (db->o.retention_ms > 0) {
		int64_t newest = db_capped(__atomic_load_n(&db->head.maxt, __ATOMIC_RELAXED),
					db_bound_cap(&db->o));
		if (from > newest)
			newest = from;
		if (newest > INT64_MIN + db->o.retention_ms && newest - db->o.retention_ms > from) {
			from = newest - db->o.retention_ms;
			*why = "the retention time lies behind the newest sample";
		}
	}
	return from;
}

/* ms as a duration in its largest whole unit ("10m", "90s"). */
static void format_window(int64_t ms, char *out, size_t size)
{
	static const struct {
		int64_t ms;
		const char *unit;
	} u[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
	size_t i = 0;
	while (ms && ms % u[i].ms)
		i++;
	snprintf(out, size, "%lld%s", (long long)(ms / u[i].ms), u[i].unit);
}

/* PD_EINVAL when t is before what the store accepts or past the future window,
 * counted; 0 otherwise. */
static int check_bounds(struct pd_tsdb *db, const struct pd_lpair *l, size_t n, int64_t t,
			struct pd_err *err)
{
	const char *why;
	int64_t from = db_accept_from(db, &why);
	char name[200], ts[40], fs[40];
	int64_t until = db->o.wal_disabled || db->o.read_only ? INT64_MAX : db_future_cap(&db->o);
	if (t > until) {
		__atomic_fetch_add(&db->out_of_bounds, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&db->too_far_in_future, 1, __ATOMIC_RELAXED);
		series_name(l, n, name, sizeof(name));
		pd_time_format(t, ts, sizeof(ts));
		pd_time_format(until, fs, sizeof(fs));
		char win[32];
		format_window(db->o.max_future_ms, win, sizeof(win));
		return pd_err_set(err, PD_EINVAL,
				  "%s: sample at %lld (%s) is out of bounds: the store accepts samples "
				  "up to %lld (%s), as it takes none dated more than %s after its "
				  "clock (a wrong clock, or a time in the wrong unit?)",
				  name, (long long)t, ts, (long long)until, fs, win);
	}
	if (t >= from)
		return 0;
	__atomic_fetch_add(&db->out_of_bounds, 1, __ATOMIC_RELAXED);
	series_name(l, n, name, sizeof(name));
	pd_time_format(t, ts, sizeof(ts));
	pd_time_format(from, fs, sizeof(fs));
	return pd_err_set(err, PD_EINVAL,
			  "%s: sample at %lld (%s) is out of bounds: the store accepts samples "
			  "from %lld (%s) on, as %s",
			  name, (long long)t, ts, (long long)from, fs, why);
}

int pd_tsdb_append(struct pd_tsdb_appender *a, const struct pd_storage_label *labels, size_t n,
		   int64_t t, const uint8_t *profile, size_t len, struct pd_err *err)
{
	return pd_tsdb_append_decoded(a, labels, n, t, profile, len, NULL, err);
}

int pd_tsdb_append_decoded(struct pd_tsdb_appender *a, const struct pd_storage_label *labels,
			   size_t n, int64_t t, const uint8_t *profile, size_t len,
			   struct pd_pprof_profile *decoded, struct pd_err *err)
{
	return pd_tsdb_append_gzip(a, labels, n, t, profile, len, decoded, NULL, 0, err);
}

int pd_tsdb_append_gzip(struct pd_tsdb_appender *a, const struct pd_storage_label *labels, size_t n,
			int64_t t, const uint8_t *profile, size_t len,
			struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
			struct pd_err *err)
{
	if (gz && !pd_gzip_is(gz, gzlen)) {
		pd_pprof_destroy(decoded);
		return pd_err_set(err, PD_EINVAL, "the profile's gzip stream does not start as one");
	}
	if (a->db->o.sink && !decoded && len <= a->db->o.max_profile) {
		/* a remote store keeps profiles decoded: what does not decode is refused
		 * now rather than acknowledged and then not sent */
		struct pd_pprof_decode_opts o = {.max_decompressed = a->db->o.max_profile};
		struct pd_err derr;
		if (pd_pprof_decode(&decoded, profile, len, &o, &derr)) {
			char name[256];
			series_name((const struct pd_lpair *)(const void *)labels, n, name, sizeof(name));
			return pd_err_set(err, PD_EINVAL, "%s: not a pprof profile (%s)", name, derr.msg);
		}
	}
	int rc = append_sample(a, labels, n, t, profile, len, decoded, gz, gzlen, err);
	if (rc)
		pd_pprof_destroy(decoded);
	return rc;
}

static int append_sample(struct pd_tsdb_appender *a, const struct pd_storage_label *labels, size_t n,
			 int64_t t, const uint8_t *profile, size_t len,
			 struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
			 struct pd_err *err)
{
	const struct pd_lpair *l = (const struct pd_lpair *)(const void *)labels;
	char name[256];
	if (len > a->db->o.max_profile) {
		series_name(l, n, name, sizeof(name));
		return pd_err_set(err, PD_ETOOBIG, "%s: profile of %zu bytes exceeds the limit of %zu",
				  name, len, a->db->o.max_profile);
	}
	for (size_t i = 1; i < n; i++)
		if (strcmp(l[i - 1].name, l[i].name) >= 0)
			return pd_err_set(err, PD_EINVAL, "labels must be sorted by name and unique (\"%s\", \"%s\")",
					  l[i - 1].name, l[i].name);
	int rc = check_bounds(a->db, l, n, t, err);
	if (rc)
		return rc;
	uint64_t hash = labels_hash(l, n);
	int64_t last = last_time(a, l, n, hash);
	if (t <= last) {
		series_name(l, n, name, sizeof(name));
		return pd_err_set(err, PD_EINVAL, "%s: %s sample at %lld, the series already has %lld",
				  name, t == last ? "duplicate" : "out of order", (long long)t,
				  (long long)last);
	}
	if (a->n == a->cap) {
		size_t c = a->cap ? a->cap * 2 : 16;
		struct app_sample *nv = realloc(a->v, c * sizeof(*nv));
		if (!nv)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		a->v = nv;
		a->cap = c;
	}
	struct pd_lpair *lp = (struct pd_lpair *)(void *)tsdb_labels_pack(l, n);
	uint8_t *p = malloc(len ? len : 1);
	uint8_t *g = gz ? malloc(gzlen) : NULL;
	if (!lp || !p || (gz && !g)) {
		free(lp);
		free(p);
		free(g);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if (g)
		memcpy(g, gz, gzlen);
	if (len)
		memcpy(p, profile, len);
	a->v[a->n++] = (struct app_sample){lp, n, hash, t, p, len, decoded, g, g ? gzlen : 0};
	return 0;
}

/* ---- committing ----------------------------------------------------------------
 *
 * A commit goes through four steps, and only the second holds append_mu:
 *   1. find or create its series, encode its WAL record (the series a durable
 *      record does not hold yet, then the samples) and frame it (zstd, CRC);
 *   2. under append_mu: check each sample against the newest timestamp of its
 *      series, in the head or reserved by a commit in flight; take a ticket per
 *      sample (the series' commit_seq) and queue the record in the WAL, so the
 *      WAL order, the order checks and the tickets all agree;
 *   3. wait until the record is written and synced (group commit: pd_wal_wait);
 *   4. append each sample to the head when its ticket comes up, so the samples of
 *      one series enter the head in the order their commits were accepted, while
 *      commits to different series append in parallel.
 * A flush closes the gate to step 2 and waits for commits in flight to end, so a
 * block or a checkpoint never misses a sample that is reserved but not yet in the
 * head. */

static struct db_order_stripe *stripe_of(struct pd_tsdb *db, const struct head_series *s)
{
	return &db->order[s->ref % DB_ORDER_STRIPES];
}

/* The newest timestamp of s, in the head or reserved by a commit in flight.
 * append_mu held. */
static int64_t reserved_last(struct pd_tsdb *db, struct head_series *s)
{
	struct db_order_stripe *o = stripe_of(db, s);
	pthread_mutex_lock(&o->mu);
	int pending = s->commit_seq != s->commit_done;
	pthread_mutex_unlock(&o->mu);
	/* after the check above: with nothing pending, maxt holds every sample */
	pthread_mutex_lock(&s->mu);
	int64_t t = s->maxt;
	pthread_mutex_unlock(&s->mu);
	if (pending && s->commit_t > t)
		t = s->commit_t;
	return t;
}

/* Waits for ticket's turn on s, appends the sample to the head when append is
 * set (a commit whose WAL write failed only passes its turn on), and hands the
 * turn to the next ticket. */
static int apply_sample(struct pd_tsdb *db, struct head_series *s, uint64_t ticket, int append,
			const struct app_sample *v, struct pd_err *err)
{
	struct db_order_stripe *o = stripe_of(db, s);
	int rc = 0;
	pthread_mutex_lock(&o->mu);
	while (s->commit_done != ticket)
		pthread_cond_wait(&o->cv, &o->mu);
	pthread_mutex_unlock(&o->mu);
	if (append && db->o.sink)
		tsdb_note_time(s, v->t); /* the profile goes to the sink */
	else if (append)
		rc = head_append(&db->head, s, v->t, v->p, v->len, v->prof, err);
	pthread_mutex_lock(&o->mu);
	s->commit_done++;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	return rc;
}

/* The series of sample v, created in the head if new; pinned (the commit
 * unpins it when done), so that no head truncation drops it meanwhile. */
static int find_series(struct pd_tsdb *db, const struct app_sample *v, struct head_series **out,
		       struct pd_err *err)
{
	int created;
	*out = head_get_pinned(&db->head, v->labels, v->n, v->hash);
	int rc = *out ? head_admit(&db->head, *out, err)
		      : head_get_or_create_pinned(&db->head, v->labels, v->n, out, &created, err);
	if (rc == PD_ELIMIT) {
		char name[256];
		series_name(v->labels, v->n, name, sizeof(name));
		pd_err_prefix(err, "%s", name);
	}
	return rc;
}

/* Builds and seals the commit's WAL record into rec (reset first): a series entry
 * for each series no durable record holds yet (entry[i] marks the first sample of
 * such a series), then every sample. */
static int build_record(struct pd_tsdb_appender *a, struct head_series **ser, unsigned char *entry,
			struct pd_wal_rec *rec, struct pd_err *err)
{
	int rc = 0;
	pd_wal_rec_reset(rec);
	for (size_t i = 0; i < a->n && !rc; i++) {
		int first = 1;
		for (size_t k = 0; k < i && first; k++)
			first = ser[k] != ser[i];
		entry[i] = first && !__atomic_load_n(&ser[i]->logged, __ATOMIC_ACQUIRE);
		if (entry[i])
			rc = pd_wal_rec_series(rec, ser[i]->ref, ser[i]->labels, ser[i]->nlabels, err);
	}
	for (size_t i = 0; i < a->n && !rc; i++)
		rc = a->v[i].gz ? pd_wal_rec_sample(rec, ser[i]->ref, a->v[i].t, a->v[i].gz,
						     a->v[i].gzlen, err)
				: pd_wal_rec_sample(rec, ser[i]->ref, a->v[i].t, a->v[i].p, a->v[i].len, err);
	if (!rc)
		rc = pd_wal_rec_seal(rec, err);
	return rc;
}

/* True when every series the record left out is still in a durable record (a
 * checkpoint since the record was built may have dropped one). append_mu held. */
static int entries_current(struct pd_tsdb_appender *a, struct head_series **ser,
			   const unsigned char *entry)
{
	for (size_t i = 0; i < a->n; i++) {
		int covered = entry[i];
		for (size_t k = 0; k < i && !covered; k++)
			covered = ser[k] == ser[i] && entry[k];
		if (!covered && !__atomic_load_n(&ser[i]->logged, __ATOMIC_ACQUIRE))
			return 0;
	}
	return 1;
}

/* Checks every sample against its series' newest timestamp (head, commits in
 * flight, earlier samples of this commit), which goes into prev[i]. append_mu held. */
static int check_order(struct pd_tsdb *db, struct pd_tsdb_appender *a, struct head_series **ser,
		       int64_t *prev, struct pd_err *err)
{
	for (size_t i = 0; i < a->n; i++) {
		int64_t last = INT64_MIN;
		int seen = 0;
		for (size_t k = i; k-- > 0 && !seen;)
			if (ser[k] == ser[i]) {
				last = a->v[k].t;
				seen = 1;
			}
		if (!seen)
			last = reserved_last(db, ser[i]);
		prev[i] = last;
		/* again under append_mu: a flush may have persisted the range since the
		 * append */
		int rc = check_bounds(db, a->v[i].labels, a->v[i].n, a->v[i].t, err);
		if (rc)
			return rc;
		if (a->v[i].t <= last) {
			char name[256];
			series_name(a->v[i].labels, a->v[i].n, name, sizeof(name));
			return pd_err_set(err, PD_EINVAL, "%s: %s sample at %lld, the series already has %lld",
					  name, a->v[i].t == last ? "duplicate" : "out of order",
					  (long long)a->v[i].t, (long long)last);
		}
	}
	return 0;
}

/* After a failed WAL write: gives back the timestamps the commit reserved, for
 * each series no later commit has reserved since, so that the same samples can
 * be committed again. append_mu held. */
static void unreserve(struct pd_tsdb_appender *a, struct head_series **ser, const uint64_t *ticket,
		      const int64_t *prev)
{
	for (size_t i = 0; i < a->n; i++) {
		int first = 1;
		for (size_t k = 0; k < i && first; k++)
			first = ser[k] != ser[i];
		if (!first)
			continue;
		size_t last = i;
		for (size_t k = i + 1; k < a->n; k++)
			if (ser[k] == ser[i])
				last = k;
		if (ser[i]->commit_seq == ticket[last] + 1)
			ser[i]->commit_t = prev[i];
	}
}

int pd_tsdb_commit(struct pd_tsdb_appender *a, struct pd_err *err)
{
	struct pd_tsdb *db = a->db;
	struct head_series **ser = NULL;
	uint64_t *ticket = NULL;
	int64_t *prev = NULL;
	unsigned char *entry = NULL;
	struct pd_wal_rec *rec = NULL;
	size_t spooled = 0; /* bytes reserved in the sink's spool */
	int rc = 0;

	if (db->o.read_only) {
		app_free(a);
		return pd_err_set(err, PD_EINVAL, "the store is open read-only");
	}
	if (!a->n) {
		app_free(a);
		return 0;
	}
	ser = calloc(a->n, sizeof(*ser));
	ticket = calloc(a->n, sizeof(*ticket));
	prev = calloc(a->n, sizeof(*prev));
	entry = calloc(a->n, 1);
	if (db->wal && (rec = pd_wal_rec_create()))
		pd_wal_rec_set_lazy(rec, a->lazy);
	if (!ser || !ticket || !prev || !entry || (db->wal && !rec)) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}

	/* 1. series and record, in parallel with other commits */
	for (size_t i = 0; i < a->n && !rc; i++)
		rc = find_series(db, &a->v[i], &ser[i], err);
	if (!rc && rec)
		rc = build_record(a, ser, entry, rec, err);
	if (rc)
		goto out;

	/* 2. reservation: order checks, tickets and the WAL order, together */
	pthread_mutex_lock(&db->append_mu);
	while (db->flushing)
		pthread_cond_wait(&db->commit_cv, &db->append_mu);
	rc = check_order(db, a, ser, prev, err);
	if (!rc && rec && !entries_current(a, ser, entry))
		rc = build_record(a, ser, entry, rec, err);
	if (!rc && rec && db->fwd) {
		spooled = pd_wal_rec_size(rec);
		rc = tsdb_fwd_admit(db->fwd, spooled, err);
		if (rc)
			spooled = 0;
	}
	if (!rc) {
		for (size_t i = 0; i < a->n; i++) {
			ticket[i] = ser[i]->commit_seq++;
			ser[i]->commit_t = a->v[i].t;
		}
		db->inflight++;
		if (rec)
			pd_wal_enqueue(db->wal, rec);
	}
	pthread_mutex_unlock(&db->append_mu);
	if (rc)
		goto out;

	/* 3. durable: the record is written and synced, alone or with others */
	if (rec)
		rc = pd_wal_wait(db->wal, rec, err);
	if (spooled)
		tsdb_fwd_written(db->fwd, spooled, a->n, rc == 0);

	/* 4. the head, in each series' reservation order */
	int logged = rc == 0;
	for (size_t i = 0; i < a->n; i++) {
		int r2 = apply_sample(db, ser[i], ticket[i], logged, &a->v[i], err);
		if (r2 && !rc)
			rc = r2; /* only memory can fail here; the WAL has the sample */
	}

	pthread_mutex_lock(&db->append_mu);
	for (size_t i = 0; i < a->n && logged && rec; i++)
		if (entry[i])
			__atomic_store_n(&ser[i]->logged, 1, __ATOMIC_RELEASE);
	if (!logged)
		unreserve(a, ser, ticket, prev);
	if (--db->inflight == 0)
		pthread_cond_broadcast(&db->commit_cv);
	pthread_mutex_unlock(&db->append_mu);
out:
	for (size_t i = 0; ser && i < a->n; i++)
		head_unpin(ser[i]);
	pd_wal_rec_destroy(rec);
	free(entry);
	free(prev);
	free(ticket);
	free(ser);
	app_free(a);
	return rc;
}

/* ---- the appender through the storage interface (storage.h) ------------------------ */

static struct pd_tsdb_appender *app_of(struct pd_storage_appender *b)
{
	return (struct pd_tsdb_appender *)(void *)b; /* base is the first member */
}

static void op_lazy(struct pd_storage_appender *b)
{
	pd_tsdb_appender_lazy(app_of(b));
}

static int op_append(struct pd_storage_appender *b, const struct pd_storage_label *labels,
		     size_t n, int64_t t, const uint8_t *profile, size_t len,
		     struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
		     struct pd_err *err)
{
	if (gz)
		return pd_tsdb_append_gzip(app_of(b), labels, n, t, profile, len, decoded, gz,
					   gzlen, err);
	return pd_tsdb_append_decoded(app_of(b), labels, n, t, profile, len, decoded, err);
}

static int op_commit(struct pd_storage_appender *b, struct pd_err *err)
{
	return pd_tsdb_commit(app_of(b), err);
}

static void op_rollback(struct pd_storage_appender *b)
{
	pd_tsdb_rollback(app_of(b));
}

const struct pd_storage_appender_ops tsdb_appender_ops = {op_lazy, op_append, op_commit,
							  op_rollback};
