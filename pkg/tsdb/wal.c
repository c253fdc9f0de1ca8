/* wal.c: the write-ahead log's public face for appending: opening a WAL directory
 * (cleaning up after an interrupted checkpoint and checking the tail of the last
 * segment), records built by committers and written by group commit (a queue in
 * commit order; a leader writes each group with one pwritev and one fdatasync
 * and hands every record of it the result), the single-threaded pending record,
 * cutting segments, and the directory helpers (names, listing, directory fsync)
 * the rest of the WAL shares. Reading is in wal_read.c, the record bytes in
 * wal_write.c, checkpoints in wal_checkpoint.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wal_int.h"

/* ---- names and directories ------------------------------------------------- */

char *pd_wal_seg_path(const char *dir, uint32_t num)
{
	size_t n = strlen(dir) + 16;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%08u", dir, num);
	return p;
}

char *pd_wal_cp_path(const char *dir, uint32_t num, int tmp)
{
	size_t n = strlen(dir) + 32;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/checkpoint.%08u%s", dir, num, tmp ? ".tmp" : "");
	return p;
}

/* Parses 8 to 10 decimal digits that fit in 32 bits, ending at end. */
static int parse_num(const char *s, const char *end, uint32_t *out)
{
	uint64_t v = 0;
	size_t n = (size_t)(end - s);
	if (n < 8 || n > 10)
		return -1;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int push_num(uint32_t **arr, size_t *n, uint32_t v)
{
	if ((*n & (*n - 1)) == 0) { /* the capacity is n rounded up to a power of two */
		size_t cap = *n ? *n * 2 : 1;
		uint32_t *a = realloc(*arr, cap * sizeof(**arr));
		if (!a)
			return PD_ENOMEM;
		*arr = a;
	}
	(*arr)[(*n)++] = v;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

void pd_wal_listing_fini(struct pd_wal_listing *l)
{
	free(l->segs);
	free(l->cps);
	free(l->tmps);
	memset(l, 0, sizeof(*l));
}

int pd_wal_list(const char *dir, struct pd_wal_listing *l, struct pd_err *err)
{
	static const char cp[] = "checkpoint.";
	struct dirent *de;
	uint32_t num;
	int rc = 0;

	memset(l, 0, sizeof(*l));
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return pd_err_set(err, PD_ENOTFOUND, "%s: no such directory", dir);
		return pd_err_set(err, PD_EIO, "%s: %s", dir, strerror(errno));
	}
	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name, *end = name + strlen(name);
		if (parse_num(name, end, &num) == 0) {
			rc = push_num(&l->segs, &l->nsegs, num);
		} else if (strncmp(name, cp, sizeof(cp) - 1) == 0) {
			const char *digits = name + sizeof(cp) - 1;
			if (end - digits > 4 && strcmp(end - 4, ".tmp") == 0) {
				if (parse_num(digits, end - 4, &num) == 0)
					rc = push_num(&l->tmps, &l->ntmps, num);
			} else if (parse_num(digits, end, &num) == 0) {
				rc = push_num(&l->cps, &l->ncps, num);
			}
		}
		if (rc) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
	}
	if (errno) {
		rc = pd_err_set(err, PD_EIO, "%s: %s", dir, strerror(errno));
		goto fail;
	}
	closedir(d);
	if (l->nsegs)
		qsort(l->segs, l->nsegs, sizeof(*l->segs), cmp_u32);
	if (l->ncps)
		qsort(l->cps, l->ncps, sizeof(*l->cps), cmp_u32);
	if (l->ntmps)
		qsort(l->tmps, l->ntmps, sizeof(*l->tmps), cmp_u32);
	return 0;
fail:
	closedir(d);
	pd_wal_listing_fini(l);
	return rc;
}

int pd_wal_fsync_dir(const char *dir, struct pd_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return pd_err_set(err, PD_EIO, "%s: %s", dir, strerror(errno));
	if (fsync(fd) != 0) {
		int e = errno;
		close(fd);
		return pd_err_set(err, PD_EIO, "%s: fsync: %s", dir, strerror(e));
	}
	close(fd);
	return 0;
}

int pd_wal_rmdir(const char *dir, struct pd_err *err)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return pd_err_set(err, PD_EIO, "%s: %s", dir, strerror(errno));
	}
	int dfd = dirfd(d);
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dfd, de->d_name, 0) != 0 && errno != ENOENT) {
			int e = errno;
			closedir(d);
			return pd_err_set(err, PD_EIO, "%s/%s: unlink: %s", dir, de->d_name,
					  strerror(e));
		}
	}
	closedir(d);
	if (rmdir(dir) != 0 && errno != ENOENT)
		return pd_err_set(err, PD_EIO, "%s: rmdir: %s", dir, strerror(errno));
	return 0;
}

static int add_file_size(const char *path, uint64_t *sum)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	*sum += (uint64_t)st.st_size;
	return 0;
}

int pd_wal_du(const char *dir, uint64_t *out, struct pd_err *err)
{
	struct pd_wal_listing l, c;
	uint64_t sum = 0;
	int rc;

	*out = 0;
	if ((rc = pd_wal_list(dir, &l, err)))
		return rc == PD_ENOTFOUND ? 0 : rc;
	for (size_t i = 0; i < l.nsegs && rc == 0; i++) {
		char *p = pd_wal_seg_path(dir, l.segs[i]);
		if (!p || add_file_size(p, &sum) != 0)
			rc = pd_err_set(err, p ? PD_EIO : PD_ENOMEM, "%s/%08u: %s", dir, l.segs[i],
					p ? strerror(errno) : "out of memory");
		free(p);
	}
	for (size_t i = 0; i < l.ncps && rc == 0; i++) {
		char *cdir = pd_wal_cp_path(dir, l.cps[i], 0);
		if (!cdir) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		if (pd_wal_list(cdir, &c, NULL) == 0) {
			for (size_t j = 0; j < c.nsegs && rc == 0; j++) {
				char *p = pd_wal_seg_path(cdir, c.segs[j]);
				if (!p || add_file_size(p, &sum) != 0)
					rc = pd_err_set(err, p ? PD_EIO : PD_ENOMEM, "%s: %s", cdir,
							p ? strerror(errno) : "out of memory");
				free(p);
			}
			pd_wal_listing_fini(&c);
		}
		free(cdir);
	}
	pd_wal_listing_fini(&l);
	if (rc == 0)
		*out = sum;
	return rc;
}

/* ---- open ------------------------------------------------------------------ */

/* Removes what an interrupted checkpoint left: temporary checkpoints, checkpoints
 * older than the newest, and segments the newest one covers. */
static int clean_dir(const char *dir, const struct pd_wal_listing *l, struct pd_err *err)
{
	uint32_t last_cp = l->ncps ? l->cps[l->ncps - 1] : 0;
	int removed = 0, rc = 0;

	for (size_t i = 0; i < l->ntmps && rc == 0; i++) {
		char *p = pd_wal_cp_path(dir, l->tmps[i], 1);
		rc = p ? pd_wal_rmdir(p, err) : pd_err_set(err, PD_ENOMEM, "out of memory");
		free(p);
		removed = 1;
	}
	for (size_t i = 0; i + 1 < l->ncps && rc == 0; i++) {
		char *p = pd_wal_cp_path(dir, l->cps[i], 0);
		rc = p ? pd_wal_rmdir(p, err) : pd_err_set(err, PD_ENOMEM, "out of memory");
		free(p);
		removed = 1;
	}
	for (size_t i = 0; i < l->nsegs && l->segs[i] <= last_cp && rc == 0; i++) {
		char *p = pd_wal_seg_path(dir, l->segs[i]);
		if (!p)
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		else if (unlink(p) != 0 && errno != ENOENT)
			rc = pd_err_set(err, PD_EIO, "%s: unlink: %s", p, strerror(errno));
		free(p);
		removed = 1;
	}
	if (rc == 0 && removed)
		rc = pd_wal_fsync_dir(dir, err);
	return rc;
}

/* Opens the last segment for appending at its end. A segment too short to hold
 * its header (a crash while it was created) is given one; a damaged tail is an
 * error, since pd_wal_replay should have cut it; damage with intact records
 * after it (which replay skips and keeps) starts a new segment. */
static int resume_last(struct pd_wal *w, uint32_t num, struct pd_err *err)
{
	struct stat st;
	int fd = -1, rc;
	char *path = pd_wal_seg_path(w->dir, num);

	if (!path)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0) {
		rc = pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if ((uint64_t)st.st_size < PD_WAL_SEG_HDR) {
		if (ftruncate(fd, 0) != 0 ||
		    pwrite(fd, pd_wal_seg_header, PD_WAL_SEG_HDR, 0) != PD_WAL_SEG_HDR ||
		    fsync(fd) != 0) {
			rc = pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
			goto fail;
		}
		st.st_size = PD_WAL_SEG_HDR;
	} else if ((rc = pd_wal_check_tail(path, fd, (uint64_t)st.st_size, err))) {
		/* lengths that do not add up are a torn tail (refused: replay cuts it)
		 * unless intact records follow the damage, which a replay skipped and
		 * kept: then appending goes to a new segment */
		struct pd_wal_damage dmg = {0};
		struct pd_err e2 = {0};
		if (rc != PD_ECORRUPT ||
		    pd_wal_read_segments(w->dir, &num, 1, 0, NULL, NULL, &dmg, &e2) != 1 ||
		    dmg.tail)
			goto fail;
		close(fd);
		free(path);
		return pd_wal_segw_create(&w->seg, num + 1, err);
	}
	pd_wal_segw_resume(&w->seg, num, fd, (uint64_t)st.st_size);
	free(path);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

/* The syncer (commit sync policy only): every PD_WAL_LAZY_SYNC_MS, when lazy
 * records were written without a sync since the last one, it becomes the
 * writer and fdatasyncs the current segment (records of earlier segments were
 * synced when the segment was cut). Writers queue meanwhile; the next leader
 * writes what queued up with one pwritev. A failed sync is counted as a failed
 * write and tried again next period: the lazy records were acknowledged when
 * written, so there is nothing to fail. */
static void *syncer_main(void *arg)
{
	struct pd_wal *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)PD_WAL_LAZY_SYNC_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		while (!w->stop && pthread_cond_timedwait(&w->sync_cv, &w->mu, &until) == 0)
			;
		if (w->stop || !w->unsynced)
			continue;
		pthread_mutex_unlock(&w->mu);
		pd_wal_writer_enter(w);
		int ok = w->seg.fd < 0 || fdatasync(w->seg.fd) == 0;
		pthread_mutex_lock(&w->mu);
		if (ok) {
			w->stats.fsyncs++;
			w->stats.lazy_syncs++;
			w->unsynced = 0;
		} else {
			w->stats.failed_writes++;
		}
		pthread_mutex_unlock(&w->mu);
		pd_wal_writer_leave(w);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int pd_wal_open(struct pd_wal **out, const char *dir, const struct pd_wal_opts *opts,
		struct pd_err *err)
{
	struct pd_wal_opts o = {0};
	struct pd_wal_listing l = {0};
	struct pd_wal *w = NULL;
	int rc;

	*out = NULL;
	if (opts)
		o = *opts;
	if (o.sync != PD_WAL_SYNC_COMMIT && o.sync != PD_WAL_SYNC_NONE)
		return pd_err_set(err, PD_EINVAL, "unknown WAL sync policy %d", o.sync);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return pd_err_set(err, PD_EIO, "%s: mkdir: %s", dir, strerror(errno));
	if (!(w = calloc(1, sizeof(*w))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->sync_cv, &ca);
	pthread_condattr_destroy(&ca);
	pd_wal_enc_init(&w->enc, PD_WAL_DEFAULT_MAX_RECORD);
	pd_wal_enc_init(&w->single.enc, 0);
	pthread_cond_init(&w->single.cv, NULL);
	pd_buf_init(&w->single.rec, 0);
	pd_buf_init(&w->single.scratch, 0);
	if (!(w->dir = strdup(dir))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = pd_wal_segw_init(&w->seg, dir, o.segment_size, o.sync, err)))
		goto fail;
	if ((rc = pd_wal_list(dir, &l, err)) || (rc = clean_dir(dir, &l, err)))
		goto fail;

	uint32_t last_cp = l.ncps ? l.cps[l.ncps - 1] : 0;
	uint32_t last_seg = l.nsegs ? l.segs[l.nsegs - 1] : 0;
	if (last_seg > last_cp && !o.new_segment)
		rc = resume_last(w, last_seg, err);
	else
		rc = pd_wal_segw_create(&w->seg, (last_seg > last_cp ? last_seg : last_cp) + 1, err);
	if (rc)
		goto fail;
	if ((rc = pd_wal_du(dir, &w->base_size, err)))
		goto fail;
	w->seg.added = 0;
	w->size = w->base_size;
	w->end_seg = w->seg.num;
	w->end_off = w->seg.off;
	pd_wal_listing_fini(&l);
	if (o.sync == PD_WAL_SYNC_COMMIT) {
		if ((errno = pthread_create(&w->syncer, NULL, syncer_main, w)) != 0) {
			rc = pd_err_set(err, PD_ENOMEM, "starting the WAL's sync thread: %s",
					strerror(errno));
			goto fail;
		}
		w->syncer_started = 1;
	}
	*out = w;
	return 0;
fail:
	pd_wal_listing_fini(&l);
	pd_err_prefix(err, "WAL %s", dir);
	pd_wal_close(w);
	return rc;
}

void pd_wal_close(struct pd_wal *w)
{
	if (!w)
		return;
	if (w->syncer_started) {
		pthread_mutex_lock(&w->mu);
		w->stop = 1;
		pthread_cond_signal(&w->sync_cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->syncer, NULL);
	}
	pd_wal_segw_fini(&w->seg); /* syncs what lazy records left unsynced */
	pthread_cond_destroy(&w->sync_cv);
	pd_wal_enc_fini(&w->enc);
	pd_wal_enc_fini(&w->single.enc);
	pd_buf_fini(&w->single.rec);
	pd_buf_fini(&w->single.scratch);
	pthread_cond_destroy(&w->single.cv);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->dir);
	free(w);
}

/* ---- records and group commit ------------------------------------------------ */

struct pd_wal_rec *pd_wal_rec_create(void)
{
	struct pd_wal_rec *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pd_wal_enc_init(&r->enc, PD_WAL_DEFAULT_MAX_RECORD);
	pd_buf_init(&r->rec, 0);
	pd_buf_init(&r->scratch, 0);
	pthread_cond_init(&r->cv, NULL);
	return r;
}

void pd_wal_rec_destroy(struct pd_wal_rec *r)
{
	if (!r)
		return;
	pd_wal_enc_fini(&r->enc);
	pd_buf_fini(&r->rec);
	pd_buf_fini(&r->scratch);
	pthread_cond_destroy(&r->cv);
	free(r);
}

/* Frees a buffer that grew large, else empties it. */
static void buf_shrink(struct pd_buf *b)
{
	if (b->cap > PD_WAL_KEEP_BUF)
		pd_buf_fini(b);
	b->len = 0;
}

void pd_wal_rec_reset(struct pd_wal_rec *r)
{
	pd_wal_enc_reset(&r->enc);
	buf_shrink(&r->rec);
	buf_shrink(&r->scratch);
	r->sealed = 0; /* lazy stays as its owner set it */
	r->next = NULL;
	r->done = 0;
	r->rc = 0;
}

int pd_wal_rec_series(struct pd_wal_rec *r, uint64_t ref, const struct pd_lpair *labels,
		      size_t n, struct pd_err *err)
{
	if (r->sealed)
		return pd_err_set(err, PD_EINVAL, "WAL record already sealed");
	return pd_wal_enc_series(&r->enc, ref, labels, n, err);
}

int pd_wal_rec_sample(struct pd_wal_rec *r, uint64_t ref, int64_t t, const uint8_t *p,
		      size_t len, struct pd_err *err)
{
	if (r->sealed)
		return pd_err_set(err, PD_EINVAL, "WAL record already sealed");
	return pd_wal_enc_sample(&r->enc, ref, t, p, len, err);
}

int pd_wal_rec_tombstone(struct pd_wal_rec *r, uint64_t ref, int64_t mint, int64_t maxt,
			 struct pd_err *err)
{
	if (r->sealed)
		return pd_err_set(err, PD_EINVAL, "WAL record already sealed");
	return pd_wal_enc_tombstone(&r->enc, ref, mint, maxt, err);
}

int pd_wal_rec_seal(struct pd_wal_rec *r, struct pd_err *err)
{
	int rc = pd_wal_frame(&r->enc, pd_wal_thread_cctx(), &r->rec, &r->scratch, err);
	if (rc == 0)
		r->sealed = 1;
	buf_shrink(&r->scratch);
	return rc;
}

void pd_wal_rec_set_lazy(struct pd_wal_rec *r, int lazy)
{
	r->lazy = lazy != 0;
}

size_t pd_wal_rec_size(const struct pd_wal_rec *r)
{
	return r->rec.len;
}

void pd_wal_enqueue(struct pd_wal *w, struct pd_wal_rec *r)
{
	r->next = NULL;
	r->done = 0;
	r->rc = 0;
	pthread_mutex_lock(&w->mu);
	if (w->tail)
		w->tail->next = r;
	else
		w->head = r;
	w->tail = r;
	w->stats.queued++;
	w->stats.enqueued++;
	pthread_mutex_unlock(&w->mu);
}

/* Takes from the queue the records of one write: the longest prefix that fits in
 * the current segment, at most PD_WAL_GROUP_MAX (a record larger than a segment
 * goes alone into a fresh one). *cut: a new segment comes first. Called with mu
 * held, by the thread about to become the writer. */
static struct pd_wal_rec *take_group(struct pd_wal *w, size_t *n, size_t *total, int *cut)
{
	struct pd_wal_rec *first = w->head, *last = first;
	uint64_t off = w->seg.off, max = w->seg.segment_size;

	*cut = off > PD_WAL_SEG_HDR && off + first->rec.len > max;
	if (*cut)
		off = PD_WAL_SEG_HDR;
	*n = 0;
	*total = 0;
	for (struct pd_wal_rec *r = first; r && *n < PD_WAL_GROUP_MAX; r = r->next) {
		if (*n && off + *total + r->rec.len > max)
			break;
		*total += r->rec.len;
		(*n)++;
		last = r;
	}
	w->head = last->next;
	if (!w->head)
		w->tail = NULL;
	last->next = NULL;
	w->stats.queued -= *n;
	return first;
}

/* Makes pd_wal_end say where the written records end, once no lazy record
 * there waits for its sync: what it reports is durable (the forwarder to a sink
 * sends nothing a power loss could take from the WAL). Called with mu held. */
static void publish_end(struct pd_wal *w)
{
	if (w->unsynced)
		return;
	w->end_seg = w->seg.num;
	w->end_off = w->seg.off;
}

/* Writes one group as the leader: entered and left with mu held, while no one
 * writes and the queue is not empty. mu is released during the I/O; the records
 * stay alive meanwhile because their owners wait for them to be done. Each
 * owner is woken on its own condition, so a group's end wakes only its own. */
static void lead(struct pd_wal *w)
{
	struct pd_err err = {0};
	size_t n, total, i = 0;
	int cut, synced = 0, rc = 0, lazy = 1;
	struct pd_wal_rec *g = take_group(w, &n, &total, &cut);

	/* a group of lazy records only is written without a sync: the syncer makes
	 * it durable within PD_WAL_LAZY_SYNC_MS. A group with any other record is
	 * synced as the policy says, lazy ones included, and they wait for it too,
	 * so that a failed sync (which cuts the group off) fails them all. */
	for (struct pd_wal_rec *r = g; r && lazy; r = r->next)
		lazy = r->lazy;

	w->writing = 1;
	pthread_mutex_unlock(&w->mu);
	for (struct pd_wal_rec *r = g; r; r = r->next, i++) {
		w->iov[i].iov_base = r->rec.data;
		w->iov[i].iov_len = r->rec.len;
	}
	if (cut)
		rc = pd_wal_segw_create(&w->seg, w->seg.num + 1, &err);
	if (!rc)
		rc = pd_wal_segw_put(&w->seg, w->iov, (int)n, &err);
	if (!rc && w->before_sync)
		w->before_sync(w->hook_ctx, n);
	if (!rc)
		rc = pd_wal_segw_settle(&w->seg, total, lazy, &synced, &err);
	pthread_mutex_lock(&w->mu);
	if (synced) {
		w->stats.fsyncs++;
		w->unsynced = 0; /* the sync covered earlier lazy writes too */
	} else if (!rc && lazy && w->seg.sync == PD_WAL_SYNC_COMMIT) {
		w->unsynced = 1;
		w->stats.lazy_records += n;
	}
	if (rc) {
		w->stats.failed_writes++;
		w->stats.failed_records += n;
	} else {
		w->stats.writes++;
		w->stats.records += n;
	}
	for (struct pd_wal_rec *r = g, *next; r; r = next) {
		next = r->next;
		r->next = NULL;
		r->rc = rc;
		if (rc)
			r->err = err;
		r->done = 1;
		pthread_cond_signal(&r->cv);
	}
	w->writing = 0;
	w->size = w->base_size + w->seg.added;
	publish_end(w);
}

/* Called with mu held by a thread that made writing 0 and writes no more: wakes
 * the owner of the first queued record to lead the next group (an owner that is
 * not waiting yet leads when it comes to wait), and threads waiting to be the
 * exclusive writer. */
static void hand_off(struct pd_wal *w)
{
	if (w->head)
		pthread_cond_signal(&w->head->cv);
	if (w->excl_waiting)
		pthread_cond_broadcast(&w->cv);
}

int pd_wal_wait(struct pd_wal *w, struct pd_wal_rec *r, struct pd_err *err)
{
	int led = 0;
	pthread_mutex_lock(&w->mu);
	while (!r->done) {
		if (!w->writing && w->head) {
			lead(w);
			led = 1;
		} else {
			pthread_cond_wait(&r->cv, &w->mu);
		}
	}
	/* a leader returns as soon as its own record is done, and what queued up
	 * meanwhile is written by one of its owners */
	if (led && !w->writing)
		hand_off(w);
	int rc = r->rc;
	if (rc && err)
		*err = r->err;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void pd_wal_writer_enter(struct pd_wal *w)
{
	pthread_mutex_lock(&w->mu);
	w->excl_waiting++;
	while (w->writing)
		pthread_cond_wait(&w->cv, &w->mu);
	w->excl_waiting--;
	w->writing = 1;
	pthread_mutex_unlock(&w->mu);
}

void pd_wal_writer_leave(struct pd_wal *w)
{
	pthread_mutex_lock(&w->mu);
	w->writing = 0;
	w->size = w->base_size + w->seg.added;
	publish_end(w);
	hand_off(w);
	pthread_mutex_unlock(&w->mu);
}

void pd_wal_stats(struct pd_wal *w, struct pd_wal_stats *st)
{
	pthread_mutex_lock(&w->mu);
	*st = w->stats;
	pthread_mutex_unlock(&w->mu);
}

/* ---- appending from one thread ---------------------------------------------- */

int pd_wal_add_series(struct pd_wal *w, uint64_t ref, const struct pd_lpair *labels, size_t n,
		      struct pd_err *err)
{
	return pd_wal_enc_series(&w->enc, ref, labels, n, err);
}

int pd_wal_add_sample(struct pd_wal *w, uint64_t ref, int64_t t, const uint8_t *p, size_t len,
		      struct pd_err *err)
{
	return pd_wal_enc_sample(&w->enc, ref, t, p, len, err);
}

int pd_wal_commit(struct pd_wal *w, struct pd_err *err)
{
	struct pd_wal_rec *r = &w->single;
	int rc = 0;
	if (pd_wal_enc_empty(&w->enc))
		goto out;
	rc = pd_wal_frame(&w->enc, pd_wal_thread_cctx(), &r->rec, &r->scratch, err);
	buf_shrink(&r->scratch);
	if (rc)
		goto out;
	pd_wal_enqueue(w, r);
	rc = pd_wal_wait(w, r, err);
out:
	buf_shrink(&r->rec);
	pd_wal_enc_reset(&w->enc);
	return rc;
}

void pd_wal_rollback(struct pd_wal *w)
{
	pd_wal_enc_reset(&w->enc);
}

uint64_t pd_wal_size(struct pd_wal *w)
{
	pthread_mutex_lock(&w->mu);
	uint64_t v = w->size;
	pthread_mutex_unlock(&w->mu);
	return v;
}

void pd_wal_end(struct pd_wal *w, uint32_t *seg, uint64_t *off)
{
	pthread_mutex_lock(&w->mu);
	*seg = w->end_seg;
	*off = w->end_off;
	pthread_mutex_unlock(&w->mu);
}

int pd_wal_cut(struct pd_wal *w, struct pd_err *err)
{
	pd_wal_writer_enter(w);
	int rc = pd_wal_segw_create(&w->seg, w->seg.num + 1, err);
	pd_wal_writer_leave(w);
	return rc;
}
