/* wal_checkpoint.c: WAL checkpoints. Everything before the current segment (the
 * previous checkpoint and segments up to N) is read back, filtered (series that
 * keep() wants, their samples at or after mint and tombstones ending there or
 * later; a sample or tombstone goes with the latest series entry of its ref
 * before it, so a ref that named another series earlier is judged right), and
 * written as segment files of
 * the usual format into checkpoint.N.tmp, which is synced and renamed to
 * checkpoint.N; only then are segments up to N and older checkpoints deleted. A
 * crash at any point leaves either the old state or the new one: replay reads the
 * newest complete checkpoint and ignores segments it covers and *.tmp, and
 * pd_wal_open removes those leftovers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wal_int.h"

struct cp_writer {
	struct pd_wal_enc enc;
	struct pd_wal_segw segw;
	int64_t mint;
	pd_wal_keep_fn keep;
	void *kctx;
	struct pd_u64map kept; /* ref -> 1 when its latest series entry was kept */
	struct pd_err err; /* why a callback stopped the read */
	/* the largest ref read, whether an entry of it is in the checkpoint, and
	 * else the labels of its latest entry (top_labels: n pairs, their strings
	 * after them, one allocation), written at the end so the ref stays named */
	uint64_t top_ref;
	int top_written;
	struct pd_lpair *top_labels;
	size_t top_n;
};

/* Keeps a copy of the labels of the largest ref's entry; 0 or PD_ENOMEM. */
static int cp_save_top(struct cp_writer *c, const struct pd_lpair *labels, size_t n)
{
	size_t bytes = n * sizeof(*labels);
	for (size_t i = 0; i < n; i++)
		bytes += strlen(labels[i].name) + strlen(labels[i].value) + 2;
	struct pd_lpair *l = malloc(bytes ? bytes : 1);
	if (!l)
		return pd_err_set(&c->err, PD_ENOMEM, "out of memory");
	char *p = (char *)(l + n);
	for (size_t i = 0; i < n; i++) {
		size_t ln = strlen(labels[i].name) + 1, lv = strlen(labels[i].value) + 1;
		l[i].name = memcpy(p, labels[i].name, ln);
		l[i].value = memcpy(p + ln, labels[i].value, lv);
		p += ln + lv;
	}
	free(c->top_labels);
	c->top_labels = l;
	c->top_n = n;
	return 0;
}

/* Notes the entry of ref (kept or not) for the largest ref read. */
static int cp_note_top(struct cp_writer *c, uint64_t ref, const struct pd_lpair *labels, size_t n,
		       int kept)
{
	if (ref < c->top_ref)
		return 0;
	if (ref > c->top_ref) {
		c->top_ref = ref;
		c->top_written = 0;
	}
	if (kept) {
		c->top_written = 1;
		free(c->top_labels);
		c->top_labels = NULL;
		return 0;
	}
	return c->top_written ? 0 : cp_save_top(c, labels, n);
}

static int cp_flush(struct cp_writer *c)
{
	int rc = 0;
	if (!pd_wal_enc_empty(&c->enc))
		rc = pd_wal_segw_write(&c->segw, &c->enc, &c->err);
	pd_wal_enc_reset(&c->enc);
	return rc;
}

static int cp_write_series(struct cp_writer *c, uint64_t ref, const struct pd_lpair *labels,
			   size_t n)
{
	int rc;
	if (pd_wal_enc_len(&c->enc) >= PD_WAL_CHECKPOINT_BATCH && (rc = cp_flush(c)))
		return rc;
	rc = pd_wal_enc_series(&c->enc, ref, labels, n, &c->err);
	if (rc == PD_ETOOBIG && (rc = cp_flush(c)) == 0)
		rc = pd_wal_enc_series(&c->enc, ref, labels, n, &c->err);
	return rc;
}

static int cp_series(void *ctx, uint64_t ref, const struct pd_lpair *labels, size_t n)
{
	struct cp_writer *c = ctx;
	int rc;

	if (c->keep) {
		int keep = c->keep(c->kctx, ref, labels, n);
		if (ref && pd_u64map_put(&c->kept, ref, keep ? 1 : 0))
			return pd_err_set(&c->err, PD_ENOMEM, "out of memory");
		if ((rc = cp_note_top(c, ref, labels, n, keep)))
			return rc;
		if (!keep)
			return 0;
	}
	return cp_write_series(c, ref, labels, n);
}

/* Whether the series ref names now (its latest entry) was kept. */
static int cp_kept(const struct cp_writer *c, uint64_t ref)
{
	uint32_t v;
	return !c->keep || (ref && pd_u64map_get(&c->kept, ref, &v) && v);
}

static int cp_sample(void *ctx, uint64_t ref, int64_t t, const uint8_t *p, size_t len)
{
	struct cp_writer *c = ctx;
	int rc;

	if (t < c->mint || !cp_kept(c, ref))
		return 0;
	if ((c->enc.tombs || pd_wal_enc_len(&c->enc) >= PD_WAL_CHECKPOINT_BATCH) &&
	    (rc = cp_flush(c)))
		return rc;
	rc = pd_wal_enc_sample(&c->enc, ref, t, p, len, &c->err);
	if (rc == PD_ETOOBIG && (rc = cp_flush(c)) == 0)
		rc = pd_wal_enc_sample(&c->enc, ref, t, p, len, &c->err);
	return rc;
}

/* A tombstone stays while it may still mask samples of the head: its series is
 * kept and it ends at or after mint. */
static int cp_tombstone(void *ctx, uint64_t ref, int64_t mint, int64_t maxt)
{
	struct cp_writer *c = ctx;
	int rc;

	if (maxt < c->mint || !cp_kept(c, ref))
		return 0;
	if (((c->enc.nsamples && !c->enc.tombs) ||
	     pd_wal_enc_len(&c->enc) >= PD_WAL_CHECKPOINT_BATCH) &&
	    (rc = cp_flush(c)))
		return rc;
	rc = pd_wal_enc_tombstone(&c->enc, ref, mint, maxt, &c->err);
	if (rc == PD_ETOOBIG && (rc = cp_flush(c)) == 0)
		rc = pd_wal_enc_tombstone(&c->enc, ref, mint, maxt, &c->err);
	return rc;
}

/* Reads segments nums[0..n) of dir into the checkpoint writer. Damage is skipped
 * as replay skips it (what it held was lost at replay already), so a damaged
 * record does not keep the WAL from being checkpointed and shrinking. */
static int cp_read(struct cp_writer *c, const char *dir, const uint32_t *nums, size_t n,
		   uint32_t first, struct pd_err *err)
{
	const struct pd_wal_replay_cb cb = {cp_series, cp_sample, c, cp_tombstone};
	struct pd_wal_damage dmg = {0};

	c->err.code = 0;
	int rc = pd_wal_read_segments(dir, nums, n, first, &cb, NULL, &dmg, err);
	if (rc == 1)
		rc = 0;
	if (rc < 0 && c->err.code) {
		if (err)
			*err = c->err;
	}
	return rc;
}

/* The checkpoint itself, with the caller holding the WAL's writer role. */
static int checkpoint(struct pd_wal *w, uint32_t last, int64_t mint, pd_wal_keep_fn keep,
		      void *ctx, struct pd_err *err)
{
	struct pd_wal_listing l = {0}, old = {0};
	struct cp_writer c = {.mint = mint, .keep = keep, .kctx = ctx};
	char *tmp = NULL, *final = NULL, *olddir = NULL;
	uint32_t cp;
	size_t k, n;
	int rc, committed = 0;

	pd_wal_enc_init(&c.enc, PD_WAL_RECORD_LIMIT);
	pd_u64map_init(&c.kept);
	c.segw.fd = -1;
	if ((rc = pd_wal_list(w->dir, &l, err)))
		goto done;
	cp = l.ncps ? l.cps[l.ncps - 1] : 0;
	for (k = 0; k < l.nsegs && l.segs[k] <= cp; k++)
		;
	for (n = k; n < l.nsegs && l.segs[n] <= last; n++)
		;
	if (last == 0 || last <= cp || n == k)
		goto done; /* nothing before the current segment that is not checkpointed */

	if (!(tmp = pd_wal_cp_path(w->dir, last, 1)) || !(final = pd_wal_cp_path(w->dir, last, 0))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = pd_wal_rmdir(tmp, err)))
		goto done;
	if (mkdir(tmp, 0755) != 0) {
		rc = pd_err_set(err, PD_EIO, "%s: mkdir: %s", tmp, strerror(errno));
		goto done;
	}
	if ((rc = pd_wal_segw_init(&c.segw, tmp, w->seg.segment_size, PD_WAL_SYNC_NONE, err)))
		goto done;
	c.segw.sync_on_finish = 1;
	if ((rc = pd_wal_segw_create(&c.segw, 1, err)))
		goto done;
	if (cp) {
		if (!(olddir = pd_wal_cp_path(w->dir, cp, 0))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto done;
		}
		if ((rc = pd_wal_list(olddir, &old, err)) ||
		    (rc = cp_read(&c, olddir, old.segs, old.nsegs, 1, err)))
			goto done;
	}
	if ((rc = cp_read(&c, w->dir, l.segs + k, n - k, cp ? cp + 1 : 0, err)))
		goto done;
	/* the largest ref read stays named even when its series is dropped, so
	 * that a replay never hands it to another series (docs/format/wal.md) */
	if (c.top_ref && !c.top_written && c.top_labels &&
	    (rc = cp_write_series(&c, c.top_ref, c.top_labels, c.top_n))) {
		if (err)
			*err = c.err;
		goto done;
	}
	if ((rc = cp_flush(&c))) {
		if (err)
			*err = c.err;
		goto done;
	}
	if ((rc = pd_wal_segw_finish(&c.segw, 1, err)) || (rc = pd_wal_fsync_dir(tmp, err)))
		goto done;
	if (rename(tmp, final) != 0) {
		rc = pd_err_set(err, PD_EIO, "rename %s: %s", tmp, strerror(errno));
		goto done;
	}
	committed = 1;
	if ((rc = pd_wal_fsync_dir(w->dir, err)))
		goto done;

	/* the checkpoint is in place: what it replaces can go */
	for (size_t i = 0; i < l.nsegs && l.segs[i] <= last && rc == 0; i++) {
		char *p = pd_wal_seg_path(w->dir, l.segs[i]);
		if (!p)
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		else if (unlink(p) != 0 && errno != ENOENT)
			rc = pd_err_set(err, PD_EIO, "%s: unlink: %s", p, strerror(errno));
		free(p);
	}
	for (size_t i = 0; i < l.ncps && rc == 0; i++) {
		char *p = pd_wal_cp_path(w->dir, l.cps[i], 0);
		rc = p ? pd_wal_rmdir(p, err) : pd_err_set(err, PD_ENOMEM, "out of memory");
		free(p);
	}
	if (rc == 0)
		rc = pd_wal_fsync_dir(w->dir, err);
done:
	pd_wal_segw_fini(&c.segw);
	pd_wal_enc_fini(&c.enc);
	pd_u64map_fini(&c.kept);
	free(c.top_labels);
	if (rc && !committed && tmp)
		pd_wal_rmdir(tmp, NULL);
	if (committed) {
		/* sizes changed whether or not the clean-up finished */
		uint64_t size;
		if (pd_wal_du(w->dir, &size, NULL) == 0) {
			w->base_size = size;
			w->seg.added = 0;
		}
	}
	if (rc)
		pd_err_prefix(err, "WAL checkpoint");
	pd_wal_listing_fini(&l);
	pd_wal_listing_fini(&old);
	free(tmp);
	free(final);
	free(olddir);
	return rc;
}

int pd_wal_checkpoint(struct pd_wal *w, int64_t mint, pd_wal_keep_fn keep, void *ctx,
		      struct pd_err *err)
{
	pd_wal_writer_enter(w);
	int rc = checkpoint(w, w->seg.num - 1, mint, keep, ctx, err);
	pd_wal_writer_leave(w);
	return rc;
}

int pd_wal_checkpoint_upto(struct pd_wal *w, uint32_t last, int64_t mint, pd_wal_keep_fn keep,
			   void *ctx, struct pd_err *err)
{
	pd_wal_writer_enter(w);
	int rc = last < w->seg.num ? checkpoint(w, last, mint, keep, ctx, err)
				   : pd_err_set(err, PD_EINVAL, "WAL checkpoint up to segment %u: "
								"segment %u is being written",
						last, w->seg.num);
	pd_wal_writer_leave(w);
	return rc;
}
