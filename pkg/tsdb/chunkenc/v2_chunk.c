/* v2_chunk.c: the open columnar value chunk (encoding 2): an appender that
 * decomposes each profile into the chunk's tables (its own, or tables that the
 * head's open chunks share) and a record, compressing records frame by frame as
 * frames fill, so that an open chunk in the head holds its tables, compressed
 * frames (in memory or in a frame store) and one open frame, parked compressed
 * between appends, never a queue of raw profiles; and the reads of an open chunk
 * (one profile, or a range merged by stack id), with the read of one record of a
 * group that reads of sealed chunks share. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

struct v2_symbols *v2_symbols_create(void)
{
	struct v2_symbols *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	v2_tables_init(&s->t);
	if (pthread_rwlock_init(&s->mu, NULL)) {
		free(s);
		return NULL;
	}
	s->refs = 1;
	return s;
}

void v2_symbols_ref(struct v2_symbols *s) { __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED); }

void v2_symbols_unref(struct v2_symbols *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	v2_tables_fini(&s->t);
	pthread_rwlock_destroy(&s->mu);
	free(s);
}

size_t v2_symbols_memory(struct v2_symbols *s)
{
	pthread_rwlock_rdlock(&s->mu);
	size_t n = sizeof(*s) + v2_tables_memory(&s->t);
	pthread_rwlock_unlock(&s->mu);
	return n;
}

/* The tables an appender encodes against; with shared ones, the caller holds
 * their lock. */
static struct v2_tables *tables_of(const struct v2_appender *a)
{
	return a->sym ? &a->sym->t : (struct v2_tables *)&a->t;
}

static void rdlock(const struct v2_appender *a)
{
	if (a->sym)
		pthread_rwlock_rdlock(&a->sym->mu);
}

static void unlock(const struct v2_appender *a)
{
	if (a->sym)
		pthread_rwlock_unlock(&a->sym->mu);
}

/* ---- the appender -------------------------------------------------------------------- */

struct v2_appender *v2_appender_create(unsigned group, int level)
{
	struct v2_appender *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->group = group ? group : PD_CHUNKENC_V2_DEFAULT_GROUP;
	/* an open chunk keeps at most hgroup - 1 records in its open frame (parked,
	 * compressed, between appends): a head holds one open chunk per series. Two
	 * (not four): with 10,000 heap series the
	 * uncompressed records were a fifth of profd's heap (bench/daemon.sh: 267 ->
	 * 230 MB RSS after 17 scrapes, 0.24 -> 0.26-0.28 ms of CPU a scrape) */
	a->hgroup = a->group % 2 == 0 ? 2 : 1;
	a->level = level ? level : PD_CHUNKENC_DEFAULT_ZSTD_LEVEL;
	v2_tables_init(&a->t);
	pd_buf_init(&a->frames, 0);
	pd_buf_init(&a->open, 0);
	return a;
}

void v2_appender_set_store(struct v2_appender *a, const struct pd_chunkenc_frame_store *fs)
{
	a->fs = fs;
}

struct v2_appender *v2_appender_create_shared(struct v2_symbols *sym, unsigned group, int level)
{
	struct v2_appender *a = v2_appender_create(group, level);
	if (a && sym) {
		v2_symbols_ref(sym);
		a->sym = sym;
	}
	return a;
}

void v2_appender_destroy(struct v2_appender *a)
{
	if (!a)
		return;
	v2_symbols_unref(a->sym);
	v2_tables_fini(&a->t);
	v2_prev_fini(&a->prev);
	for (size_t k = 0; k < a->nframes; k++)
		if (a->frame_ref[k] != FRAME_IN_MEMORY)
			a->fs->drop(a->fs->ctx, a->frame_ref[k], a->frame_len[k]);
	pd_buf_fini(&a->frames);
	pd_buf_fini(&a->open);
	free(a->parked);
	free(a->prevz);
	free(a->frame_len);
	free(a->frame_ref);
	free(a->grep);
	free(a);
}

size_t v2_appender_count(const struct v2_appender *a) { return a->count; }

size_t v2_appender_memory(const struct v2_appender *a)
{
	const struct v2_prev *p = &a->prev;
	return sizeof(*a) + v2_tables_memory(&a->t) + a->frames.cap + a->open.cap + a->parked_len +
	       a->frame_cap * (sizeof(size_t) + sizeof(uint64_t)) + a->ngrep * sizeof(*a->grep) +
	       (p->nmap * (sizeof(uint32_t) + sizeof(uint64_t))) + p->packed_len + a->prevz_len;
}

/* The records [from, to) of the appender, uncompressed, appended to out. from
 * must start a group: a frame that is not the first of its group is compressed
 * against the first (its anchor), so a group's frames are decompressed from
 * there. The anchor, not the frame before: an append then decompresses one frame,
 * not every frame of its group so far (bench/daemon.sh: the chain took 4.6% of
 * profd's CPU at 10,000 heap series). */
int v2_appender_records(const struct v2_appender *a, size_t from, size_t to,
			struct pd_buf *out, struct pd_err *err)
{
	size_t off = 0, k, anchor_at = SIZE_MAX, anchor_len = 0;
	for (k = 0; k < from / a->hgroup; k++)
		if (a->frame_ref[k] == FRAME_IN_MEMORY)
			off += a->frame_len[k];
	for (size_t i = from; i < to; i += a->hgroup, k++) {
		int first = i % a->group == 0;
		if (k >= a->nframes && !a->parked_len)
			return pd_buf_append(out, a->open.data, a->open.len)
				   ? pd_err_set(err, PD_ENOMEM, "out of memory")
				   : 0;
		const uint8_t *f = k < a->nframes ? a->frames.data + off : a->parked;
		size_t flen = k < a->nframes ? a->frame_len[k] : a->parked_len;
		uint8_t *stored = NULL, *raw = NULL;
		size_t rawlen = 0;
		int rc = 0;
		if (k < a->nframes && a->frame_ref[k] != FRAME_IN_MEMORY) {
			if (!(stored = malloc(flen ? flen : 1)))
				return pd_err_set(err, PD_ENOMEM, "out of memory reading a frame");
			if ((rc = a->fs->get(a->fs->ctx, a->frame_ref[k], stored, flen, err))) {
				free(stored);
				return rc;
			}
			f = stored;
		}
		rc = v2_decompress_with(f, flen, SIZE_MAX / 2, first ? NULL : out->data + anchor_at,
					first ? 0 : anchor_len, &raw, &rawlen, "frame", err);
		free(stored);
		if (rc)
			return rc;
		if (first) {
			anchor_at = out->len;
			anchor_len = rawlen;
		}
		rc = pd_buf_append(out, raw, rawlen);
		free(raw);
		if (rc)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		if (k < a->nframes && a->frame_ref[k] == FRAME_IN_MEMORY)
			off += a->frame_len[k];
	}
	return 0;
}

/* The raw records of the group's anchor frame, which the open frame is compressed
 * against (left empty when the open frame is the anchor). */
static int open_prior(const struct v2_appender *a, struct pd_buf *prior, struct pd_err *err)
{
	size_t first = a->nframes * a->hgroup, anchor = first - first % a->group;
	if (first == anchor)
		return 0;
	return v2_appender_records(a, anchor, anchor + a->hgroup, prior, err);
}

/* Unparks the open frame into a->open (see struct v2_appender). */
static int open_unpark(struct v2_appender *a, const struct pd_buf *prior, struct pd_err *err)
{
	if (!a->parked_len)
		return 0;
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	int rc = v2_decompress_with(a->parked, a->parked_len, SIZE_MAX / 2,
				    prior->len ? prior->data : NULL, prior->len, &raw, &rawlen, "frame",
				    err);
	if (rc)
		return rc;
	pd_buf_fini(&a->open);
	pd_buf_init(&a->open, 0);
	a->open.data = raw;
	a->open.len = a->open.cap = rawlen;
	free(a->parked);
	a->parked = NULL;
	a->parked_len = 0;
	return 0;
}

/* Parks the open frame's records; on failure they stay raw, trimmed to their size,
 * which the readers take as well. */
static void open_park(struct v2_appender *a, const struct pd_buf *prior)
{
	struct pd_buf z;
	size_t zlen = 0;
	struct pd_err e = {0};
	if (!a->open.len) {
		/* nothing open (a failed first record): no buffer kept, and no
		 * realloc to 0 bytes, which frees */
		pd_buf_fini(&a->open);
		pd_buf_init(&a->open, 0);
		return;
	}
	pd_buf_init(&z, 0);
	if (v2_compress_with(a->open.data, a->open.len, a->level, prior->len ? prior->data : NULL,
			     prior->len, &z, &zlen, &e) == 0) {
		a->parked = z.data;
		a->parked_len = zlen;
		pd_buf_fini(&a->open);
		pd_buf_init(&a->open, 0);
		return;
	}
	pd_buf_fini(&z);
	if (a->open.cap > a->open.len + a->open.len / 8) {
		/* kept between appends: no spare room */
		uint8_t *d = realloc(a->open.data, a->open.len);
		if (d) {
			a->open.data = d;
			a->open.cap = a->open.len;
		}
	}
}

/* Decodes the open frame again to make prev what it was after its last record:
 * from the start of the group when the open frame is not its first. */
static int rebuild_prev(struct v2_appender *a)
{
	struct pd_buf recs;
	struct pd_err err = {0};
	pd_buf_init(&recs, 0);
	size_t from = a->count - a->count % a->group;
	int rc = v2_appender_records(a, from, a->count, &recs, &err);
	struct v2_rd r = {recs.data, recs.len, 0, 0};
	/* the times decoded here are not kept: relative times need no base */
	v2_prev_reset(&a->prev);
	rdlock(a);
	while (!rc && r.pos < r.len) {
		struct v2_decoded d;
		if ((rc = v2_record_decode(tables_of(a), &a->prev, &r, 0, &d, &err)) == 0)
			v2_decoded_fini(&d);
	}
	unlock(a);
	pd_buf_fini(&recs);
	return rc;
}

/* Encodes a profile's record into the open frame. On shared tables, once they
 * hold a program's symbols a record needs nothing new from them: it is encoded
 * under the read lock against a frozen view, so that series of the head encode
 * side by side, and only a profile that brings new symbols takes the write lock
 * (and is encoded again under it). An appender whose last record added symbols
 * (a program that has just started, or whose stacks keep changing) goes to the
 * write lock first. */
static int encode_record(struct v2_appender *a, const struct pd_pprof_parts *pp, const uint8_t *p,
			 size_t len, struct pd_err *err)
{
	if (!a->sym)
		return v2_record_encode_parts(&a->t, &a->prev, pp, p, len, &a->open, err);
	int rc;
	if (!a->added) {
		struct pd_err e2 = {0};
		pthread_rwlock_rdlock(&a->sym->mu);
		struct v2_tables view = v2_tables_view(&a->sym->t);
		rc = v2_record_encode_parts(&view, &a->prev, pp, p, len, &a->open, &e2);
		pthread_rwlock_unlock(&a->sym->mu);
		if (!rc || !view.missed) {
			if (rc && err)
				*err = e2;
			return rc;
		}
	}
	pthread_rwlock_wrlock(&a->sym->mu);
	const struct v2_tables *t = &a->sym->t;
	size_t before = t->nstr + t->nmap + t->nfn + t->nloc + t->nnode;
	rc = v2_record_encode_parts(&a->sym->t, &a->prev, pp, p, len, &a->open, err);
	a->added = t->nstr + t->nmap + t->nfn + t->nloc + t->nnode != before;
	pthread_rwlock_unlock(&a->sym->mu);
	return rc;
}

/* Counts a repeat in group g (see struct v2_appender). */
static void count_repeat(struct v2_appender *a, size_t g)
{
	if (g >= a->ngrep) {
		uint16_t *x = realloc(a->grep, (g + 1) * sizeof(*x));
		if (!x) {
			a->grep_all = 1;
			return;
		}
		memset(x + a->ngrep, 0, (g + 1 - a->ngrep) * sizeof(*x));
		a->grep = x;
		a->ngrep = g + 1;
	}
	if (a->grep[g] < UINT16_MAX)
		a->grep[g]++;
}

/* Packed values under this are kept as they are (see struct v2_appender). */
#define PREV_PARK_MIN 256

static int prev_unpark(struct v2_appender *a, struct pd_err *err)
{
	if (!a->prevz)
		return 0;
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	int rc = v2_decompress_with(a->prevz, a->prevz_len, SIZE_MAX / 2, NULL, 0, &raw, &rawlen,
				    "previous values", err);
	if (rc)
		return rc;
	free(a->prev.packed);
	a->prev.packed = raw;
	a->prev.packed_len = rawlen;
	free(a->prevz);
	a->prevz = NULL;
	a->prevz_len = 0;
	return 0;
}

static void prev_park(struct v2_appender *a)
{
	if (a->prevz || a->prev.packed_len < PREV_PARK_MIN)
		return;
	struct pd_buf z;
	size_t zlen = 0;
	struct pd_err e = {0};
	pd_buf_init(&z, 0);
	/* level 1: this is undone at the next append */
	if (v2_compress_with(a->prev.packed, a->prev.packed_len, 1, NULL, 0, &z, &zlen, &e) == 0 &&
	    zlen < a->prev.packed_len) {
		free(a->prev.packed);
		a->prev.packed = NULL;
		a->prev.packed_len = 0;
		a->prevz = z.data;
		a->prevz_len = zlen;
		return;
	}
	pd_buf_fini(&z);
}

static int append_one(struct v2_appender *a, int64_t ts, const uint8_t *p, size_t len,
		      const struct pd_pprof_profile *decoded, struct pd_err *err);

int v2_appender_append(struct v2_appender *a, int64_t ts, const uint8_t *p, size_t len,
		       const struct pd_pprof_profile *decoded, struct pd_err *err)
{
	int rc = prev_unpark(a, err);
	if (rc)
		return rc;
	rc = append_one(a, ts, p, len, decoded, err);
	prev_park(a);
	return rc;
}

static int append_one(struct v2_appender *a, int64_t ts, const uint8_t *p, size_t len,
		      const struct pd_pprof_profile *decoded, struct pd_err *err)
{
	int rel = ts != PD_CHUNKENC_NO_TS;
	if (a->count == 0)
		a->rel = a->prev.rel = rel;
	else if (rel != a->rel)
		return pd_err_set(err, PD_EINVAL,
				  rel ? "value chunk: a timestamp given for a chunk appended to without them"
				      : "value chunk: no timestamp given for a chunk of relative times");
	if (rel)
		a->prev.base = (int64_t)((uint64_t)ts * 1000000u);
	if (a->broken)
		return pd_err_set(err, PD_ENOMEM, "value chunk: an earlier append ran out of memory");
	if (a->count >= PD_CHUNKENC_MAX_SAMPLES)
		return pd_err_set(err, PD_ETOOBIG, "value chunk is full (%d profiles)",
				  PD_CHUNKENC_MAX_SAMPLES);
	if (a->count % a->group == 0)
		v2_prev_reset(&a->prev);
	/* the anchor's records, which the open frame is (or will be) compressed against */
	struct pd_buf prior;
	pd_buf_init(&prior, 0);
	int rc = open_prior(a, &prior, err);
	if (!rc)
		rc = open_unpark(a, &prior, err);
	if (rc) {
		pd_buf_fini(&prior);
		return rc;
	}
	size_t mark = a->open.len;
	/* decoded (unless the caller did) before the shared tables are locked: only
	 * interning and the record are written under the lock */
	struct pd_pprof_profile *prof = NULL;
	struct pd_pprof_parts pp;
	rc = decoded ? pd_pprof_parts_get(decoded, &pp, err)
		     : v2_profile_parts(p, len, &prof, &pp, err);
	if (rc == 1) {
		rc = v2_record_opaque(p, len, &a->open, err);
	} else if (rc == 0) {
		rc = encode_record(a, &pp, p, len, err);
		pd_pprof_parts_fini(&pp);
		pd_pprof_destroy(prof);
	}
	if (rc) {
		a->open.len = mark;
		open_park(a, &prior);
		pd_buf_fini(&prior);
		return rc;
	}
	if (a->open.len > mark && a->open.data[mark] == KIND_REPEAT)
		count_repeat(a, a->count / a->group);
	if (a->open_count + 1 < a->hgroup) {
		a->open_count++;
		a->count++;
		open_park(a, &prior);
		pd_buf_fini(&prior);
		return 0;
	}
	if (a->nframes == a->frame_cap) {
		size_t cap = a->frame_cap ? a->frame_cap * 2 : 8;
		size_t *fl = realloc(a->frame_len, cap * sizeof(*fl));
		if (!fl)
			goto undo;
		a->frame_len = fl;
		uint64_t *fr = realloc(a->frame_ref, cap * sizeof(*fr));
		if (!fr)
			goto undo;
		a->frame_ref = fr;
		a->frame_cap = cap;
	}
	/* against its group's first frame, when it is not that one */
	a->frame_ref[a->nframes] = FRAME_IN_MEMORY;
	if (a->fs) {
		struct pd_buf z;
		pd_buf_init(&z, 0);
		rc = v2_compress_with(a->open.data, a->open.len, a->level,
				      prior.len ? prior.data : NULL, prior.len, &z,
				      &a->frame_len[a->nframes], err);
		if (!rc && a->fs->put(a->fs->ctx, z.data, z.len, &a->frame_ref[a->nframes])) {
			/* not stored (a full disk): kept in memory */
			a->frame_ref[a->nframes] = FRAME_IN_MEMORY;
			rc = pd_buf_append(&a->frames, z.data, z.len)
				 ? pd_err_set(err, PD_ENOMEM, "out of memory compressing a value group")
				 : 0;
			if (!rc && a->frames.cap > a->frames.len + a->frames.len / 8) {
				uint8_t *d = realloc(a->frames.data, a->frames.len);
				if (d) {
					a->frames.data = d;
					a->frames.cap = a->frames.len;
				}
			}
		}
		pd_buf_fini(&z);
	} else {
		rc = v2_compress_with(a->open.data, a->open.len, a->level,
				      prior.len ? prior.data : NULL, prior.len, &a->frames,
				      &a->frame_len[a->nframes], err);
	}
	if (rc)
		goto undo_rc;
	pd_buf_fini(&prior);
	a->nframes++;
	a->count++;
	pd_buf_fini(&a->open);
	pd_buf_init(&a->open, 0);
	a->open_count = 0;
	return 0;
undo:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory compressing a value group");
undo_rc:
	/* the record goes; the tables may keep what it added (unreferenced entries
	 * are harmless), and the delta state goes back to the record before */
	a->open.len = mark;
	if (rebuild_prev(a))
		a->broken = 1;
	open_park(a, &prior);
	pd_buf_fini(&prior);
	return rc;
}

/* Record k (0-based) of the group in g: steps over records 0..k-1 and decodes
 * record k. prev: a state to use (its contents are replaced). */
int v2_group_record(const struct v2_tables *t, struct v2_prev *prev, int rel, int64_t ts,
		    const struct v2_sums *sums, size_t base, const uint8_t *g, size_t glen,
		    size_t k, size_t max_profile, uint8_t **out, size_t *out_len,
		    struct pd_err *err)
{
	struct v2_rd r = {g, glen, 0, 0};
	int rc = 0;
	if (rel && ts == PD_CHUNKENC_NO_TS)
		return pd_err_set(err, PD_EINVAL,
				  "value chunk: its profiles' times are relative to their timestamps, "
				  "and none was given");
	v2_prev_reset(prev);
	/* the records before k are only stepped over: their times are not needed */
	prev->rel = rel;
	prev->base = (int64_t)((uint64_t)ts * 1000000u);
	v2_prev_dense(prev, t->nnode);
	for (size_t j = 0; j <= k && !rc; j++) {
		struct v2_decoded d;
		v2_prev_sums(prev, sums, base + j);
		if ((rc = v2_record_decode(t, prev, &r, j == k ? V2_WANT_PROFILE : V2_WANT_STATE, &d,
					   err)))
			break;
		if (j == k) {
			if (d.opaque) {
				if (d.len > max_profile)
					rc = pd_err_set(err, PD_ETOOBIG,
							"profile of %zu bytes exceeds the limit of %zu",
							d.len, max_profile);
				else if (!(*out = malloc(d.len ? d.len : 1)))
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				else {
					if (d.len)
						memcpy(*out, d.bytes, d.len);
					*out_len = d.len;
				}
			} else {
				rc = pd_pprof_parts_encode(&d.parts, out, out_len, err);
				if (!rc && *out_len > max_profile) {
					free(*out);
					*out = NULL;
					rc = pd_err_set(err, PD_ETOOBIG,
							"profile of %zu bytes exceeds the limit of %zu",
							*out_len, max_profile);
				}
			}
		}
		v2_decoded_fini(&d);
	}
	return rc;
}

int v2_appender_get(const struct v2_appender *a, size_t i, int64_t ts, uint8_t **out,
		    size_t *out_len, struct pd_err *err)
{
	if (i >= a->count)
		return pd_err_set(err, PD_ENOTFOUND, "profile %zu of a chunk of %zu", i, a->count);
	struct pd_buf recs;
	pd_buf_init(&recs, 0);
	size_t from = i - i % a->group;
	int rc = v2_appender_records(a, from, i + 1, &recs, err);
	struct v2_rcache *c = rc ? NULL : v2_rcache_take();
	if (!rc && !c)
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	if (!rc) {
		rdlock(a);
		rc = v2_group_record(tables_of(a), &c->prev, a->rel, ts, NULL, from, recs.data, recs.len,
				     i - from, SIZE_MAX, out, out_len, err);
		unlock(a);
	}
	if (c)
		v2_rcache_done(c);
	pd_buf_fini(&recs);
	return rc;
}

int v2_appender_merge(const struct v2_appender *a, size_t from, size_t to, const int64_t *ts,
		      size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err)
{
	if (to > a->count)
		to = a->count;
	if (from >= to)
		return 0;
	struct v2_merge *m;
	struct pd_buf recs;
	rdlock(a);
	int rc = v2_merge_begin(&m, tables_of(a), err);
	if (rc) {
		unlock(a);
		return rc;
	}
	pd_buf_init(&recs, 0);
	for (size_t base = from - from % a->group; base < to && !rc; base += a->group) {
		size_t end = base + a->group < a->count ? base + a->group : a->count;
		recs.len = 0;
		if ((rc = v2_appender_records(a, base, end, &recs, err)) == 0)
			rc = v2_merge_group(m, recs.data, recs.len, base, from, to, a->rel ? ts : NULL,
					    a->rel, NULL, max_profile, emit, ctx, err);
	}
	pd_buf_fini(&recs);
	int r2 = v2_merge_end(m, !rc, emit, ctx, err);
	unlock(a);
	return rc ? rc : r2;
}
