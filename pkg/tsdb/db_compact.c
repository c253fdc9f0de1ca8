/* db_compact.c: compaction, merging blocks that overlap (a series' chunks from
 * both merged sample by sample) and then blocks into aligned larger ranges, and
 * retention by time and by size. */
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

/* ---- compaction ---------------------------------------------------------------- */

struct cursor {
	struct pd_block *b;
	uint64_t *refs;
	size_t n, i;
	struct pd_lpair *labels;
	size_t nl;
	struct pd_block_chunk_meta *chunks;
	size_t nc;
};

static int cursor_load(struct cursor *c, struct pd_err *err)
{
	free(c->labels);
	free(c->chunks);
	c->labels = NULL;
	c->chunks = NULL;
	if (c->i >= c->n)
		return 0;
	return pd_block_series(c->b, c->refs[c->i], &c->labels, &c->nl, &c->chunks, &c->nc, err);
}

/* Rewrites a value chunk of an older encoding in the store's encoding, so that
 * compaction turns v1 blocks into v2 ones. *vals (borrowed) is replaced by a new
 * chunk that *owned also receives (malloc'd, the caller frees it); a chunk already
 * in the store's encoding is left alone and *owned is NULL. ts, ts_len: the
 * chunk's timestamp chunk. */
static int reencode_values(struct pd_tsdb *db, const uint8_t *ts, size_t ts_len,
			   const uint8_t **vals, size_t *len, uint8_t **owned, struct pd_err *err)
{
	*owned = NULL;
	if (pd_chunkenc_values_encoding(*vals, *len) == db->o.value_encoding)
		return 0;
	int64_t n = pd_chunkenc_values_read_count(*vals, *len, err);
	if (n < 0)
		return (int)n;
	struct pd_chunkenc_values *c =
	    pd_chunkenc_values_create_enc(db->o.value_encoding, db->o.value_group, db->o.zstd_level);
	if (!c)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int rc = 0;
	struct pd_chunkenc_ts_iter it;
	pd_chunkenc_ts_iter_init(&it, ts, ts_len);
	for (int64_t i = 0; i < n && !rc; i++) {
		uint8_t *p;
		size_t pl;
		if (!pd_chunkenc_ts_iter_next(&it)) {
			rc = pd_err_set(err, PD_ECORRUPT,
					"a value chunk of %lld profiles has fewer timestamps", (long long)n);
			break;
		}
		int64_t t = pd_chunkenc_ts_iter_at(&it);
		if ((rc = pd_chunkenc_values_read_tc(*vals, *len, ts, ts_len, (size_t)i, db->o.max_profile, &p,
						     &pl, err)))
			break;
		rc = pd_chunkenc_values_append_at(c, t, p, pl, NULL, err);
		free(p);
	}
	uint8_t *out;
	size_t olen;
	if (!rc && !(rc = pd_chunkenc_values_seal(c, &out, &olen, err))) {
		*vals = *owned = out;
		*len = olen;
	}
	pd_chunkenc_values_destroy(c);
	return rc;
}

/* ---- overlapping chunks ------------------------------------------------------ */

struct vsample {
	int64_t t;
	uint32_t chunk; /* position in the run, oldest block's chunks first */
	uint32_t i;     /* sample in that chunk */
};

static int vsample_cmp(const void *a, const void *b)
{
	const struct vsample *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->chunk != y->chunk)
		return x->chunk < y->chunk ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

struct chunk_pos {
	int64_t mint;
	size_t i;
};

static int chunk_pos_cmp(const void *a, const void *b)
{
	const struct chunk_pos *x = a, *y = b;
	if (x->mint != y->mint)
		return x->mint < y->mint ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Keeps buffer p (malloc'd) in *keep until the series is written. */
static int keep_buf(uint8_t ***keep, size_t *nkeep, size_t *cap, uint8_t *p)
{
	if (*nkeep == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		uint8_t **nk = realloc(*keep, c * sizeof(*nk));
		if (!nk)
			return -1;
		*keep = nk;
		*cap = c;
	}
	(*keep)[(*nkeep)++] = p;
	return 0;
}

/* One series' chunks from blocks that overlap, cs[0..*n) (the oldest block's
 * first), made a sorted run of chunks that do not overlap: chunks that overlap
 * none are kept as they are, each run of overlapping ones is read sample by
 * sample and written again as new chunks of up to chunk_samples samples, a
 * timestamp present more than once (the same range persisted twice) once, from
 * the oldest block. *out (malloc'd, the caller frees it) receives the chunks;
 * the bytes of new chunks go to *keep. */
static int resolve_overlaps(struct pd_tsdb *db, const struct pd_block_chunk *cs, size_t n,
			    struct pd_block_chunk **out, size_t *nout, uint8_t ***keep,
			    size_t *nkeep, size_t *keep_cap, struct pd_err *err)
{
	struct chunk_pos *pos = malloc((n ? n : 1) * sizeof(*pos));
	struct pd_block_chunk *o = malloc((n ? n : 1) * sizeof(*o));
	size_t no = 0, ocap = n ? n : 1;
	struct vsample *vs = NULL;
	struct pd_chunkenc_values *vals = NULL;
	int rc = 0;
	if (!pos || !o) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		pos[i] = (struct chunk_pos){cs[i].mint, i};
	qsort(pos, n, sizeof(*pos), chunk_pos_cmp);
	unsigned per = db->o.chunk_samples ? db->o.chunk_samples : PD_TSDB_DEFAULT_CHUNK_SAMPLES;
	if (per > PD_CHUNKENC_MAX_SAMPLES)
		per = PD_CHUNKENC_MAX_SAMPLES;
	for (size_t k = 0; k < n && !rc;) {
		int64_t end = cs[pos[k].i].maxt;
		size_t m = k + 1;
		size_t total = cs[pos[k].i].count;
		while (m < n && cs[pos[m].i].mint <= end) {
			if (cs[pos[m].i].maxt > end)
				end = cs[pos[m].i].maxt;
			total += cs[pos[m].i].count;
			m++;
		}
		if (m - k == 1) {
			if (no == ocap) {
				struct pd_block_chunk *g = realloc(o, ocap * 2 * sizeof(*o));
				if (!g) {
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
					break;
				}
				o = g;
				ocap *= 2;
			}
			o[no++] = cs[pos[k].i];
			k = m;
			continue;
		}
		/* the run's samples, by time; the oldest block's copy of a duplicate */
		free(vs);
		if (!(vs = malloc(total * sizeof(*vs)))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		size_t nv = 0;
		for (size_t r = k; r < m && !rc; r++) {
			const struct pd_block_chunk *c = &cs[pos[r].i];
			struct pd_chunkenc_ts_iter it;
			pd_chunkenc_ts_iter_init(&it, c->ts, c->ts_len);
			for (uint32_t i = 0; i < c->count && nv < total; i++) {
				if (!pd_chunkenc_ts_iter_next(&it)) {
					rc = pd_err_set(err, PD_ECORRUPT,
							"a chunk of %u samples at [%lld, %lld] has fewer timestamps",
							(unsigned)c->count, (long long)c->mint, (long long)c->maxt);
					break;
				}
				/* chunk: its index in cs, where the oldest block's chunks
				 * come first, so a duplicate keeps the oldest block's copy */
				vs[nv++] = (struct vsample){pd_chunkenc_ts_iter_at(&it), (uint32_t)pos[r].i, i};
			}
		}
		if (rc)
			break;
		qsort(vs, nv, sizeof(*vs), vsample_cmp);
		size_t w = 0;
		for (size_t i = 0; i < nv; i++)
			if (!w || vs[i].t != vs[w - 1].t)
				vs[w++] = vs[i];
		nv = w;
		for (size_t i = 0; i < nv && !rc;) {
			size_t e = i + per < nv ? i + per : nv;
			struct pd_chunkenc_ts ts;
			pd_chunkenc_ts_init(&ts);
			vals = pd_chunkenc_values_create_enc(db->o.value_encoding, db->o.value_group,
							     db->o.zstd_level);
			if (!vals)
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			for (size_t x = i; x < e && !rc; x++) {
				const struct pd_block_chunk *c = &cs[vs[x].chunk];
				uint8_t *p;
				size_t pl;
				rc = pd_chunkenc_values_read_tc(c->vals, c->vals_len, c->ts, c->ts_len,
								vs[x].i, db->o.max_profile, &p, &pl, err);
				if (rc)
					break;
				rc = pd_chunkenc_ts_append(&ts, vs[x].t, err);
				if (!rc)
					rc = pd_chunkenc_values_append_at(vals, vs[x].t, p, pl, NULL, err);
				free(p);
			}
			struct pd_block_chunk nc = {vs[i].t, vs[e - 1].t, (uint32_t)(e - i), NULL, 0, NULL, 0};
			uint8_t *vb = NULL, *tb = NULL, *tot = NULL;
			if (!rc)
				rc = pd_chunkenc_values_seal(vals, &vb, &nc.vals_len, err);
			if (!rc) {
				const uint8_t *t = pd_chunkenc_ts_bytes(&ts, &nc.ts_len);
				if ((tb = malloc(nc.ts_len)))
					memcpy(tb, t, nc.ts_len);
				else
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			}
			pd_chunkenc_ts_fini(&ts);
			pd_chunkenc_values_destroy(vals);
			vals = NULL;
			nc.ts = tb;
			nc.vals = vb;
			/* a buffer kept is freed with *keep, one not kept here */
			if (vb && keep_buf(keep, nkeep, keep_cap, vb)) {
				free(vb);
				free(tb);
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			} else if (tb && keep_buf(keep, nkeep, keep_cap, tb)) {
				free(tb);
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			}
			if (!rc)
				rc = tsdb_chunk_add_totals(&nc, db->o.max_profile, &tot, err);
			if (tot && keep_buf(keep, nkeep, keep_cap, tot)) {
				free(tot);
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			}
			if (!rc && no == ocap) {
				struct pd_block_chunk *g = realloc(o, ocap * 2 * sizeof(*o));
				if (g) {
					o = g;
					ocap *= 2;
				} else {
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				}
			}
			if (!rc)
				o[no++] = nc;
			i = e;
		}
		k = m;
	}
out:
	free(vs);
	free(pos);
	if (rc) {
		free(o);
		return rc;
	}
	*out = o;
	*nout = no;
	return 0;
}

/* Merges blocks (sorted by mint) into one new block spanning them all, leaving
 * out what their tombstones delete; a series' chunks from blocks that overlap
 * are merged sample by sample (resolve_overlaps). ulid receives its name, or ""
 * when nothing was left to write. */
int db_merge_blocks(struct pd_tsdb *db, struct pd_block **bs, size_t n, char ulid[27],
			struct pd_err *err)
{
	uint64_t written = 0;
	struct cursor *cur = calloc(n, sizeof(*cur));
	char(*sources)[27] = NULL;
	size_t nsrc = 0;
	struct pd_block_writer *w = NULL;
	struct pd_block_chunk *cs = NULL;
	uint8_t **owned = NULL; /* value chunks rewritten in the store's encoding */
	size_t cs_cap = 0;
	uint8_t **keep = NULL; /* chunks written again where blocks overlap */
	size_t nkeep = 0, keep_cap = 0;
	int rc = 0, level = 0, overlap = 0;
	int64_t maxt = INT64_MIN;
	if (!cur)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct pd_block_meta *m = pd_block_meta(bs[i]);
		nsrc += m->nsources ? m->nsources : 1;
		if (m->level > level)
			level = m->level;
		if (m->mint < maxt)
			overlap = 1;
		if (m->maxt > maxt)
			maxt = m->maxt;
	}
	sources = calloc(nsrc, sizeof(*sources));
	if (!sources) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	nsrc = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pd_block_meta *m = pd_block_meta(bs[i]);
		if (!m->nsources)
			memcpy(sources[nsrc++], m->ulid, 27);
		for (size_t k = 0; k < m->nsources; k++)
			memcpy(sources[nsrc++], m->sources[k], 27);
	}
	rc = pd_block_writer_create(&w, db->dir, pd_block_meta(bs[0])->mint, maxt, level + 1,
				    (const char(*)[27])sources, nsrc, err);
	int all_idle = 1;
	for (size_t i = 0; i < n; i++)
		all_idle &= pd_block_meta(bs[i])->idle;
	if (!rc && all_idle) /* still only idle series of ranges not persisted */
		pd_block_writer_set_idle(w);
	for (size_t i = 0; i < n && !rc; i++) {
		cur[i].b = bs[i];
		if (!(rc = pd_block_all_series(bs[i], &cur[i].refs, &cur[i].n, err)))
			rc = cursor_load(&cur[i], err);
	}
	while (!rc) {
		/* the smallest label set among the cursors */
		struct cursor *min = NULL;
		for (size_t i = 0; i < n; i++)
			if (cur[i].i < cur[i].n &&
			    (!min || labels_cmp(cur[i].labels, cur[i].nl, min->labels, min->nl) < 0))
				min = &cur[i];
		if (!min)
			break;
		struct pd_lpair *lab = min->labels;
		size_t nlab = min->nl, ncs = 0;
		/* every block with this series contributes its chunks, oldest block first */
		for (size_t i = 0; i < n && !rc; i++) {
			if (cur[i].i >= cur[i].n || labels_cmp(cur[i].labels, cur[i].nl, lab, nlab) != 0)
				continue;
			if (ncs + cur[i].nc > cs_cap) {
				size_t c = (ncs + cur[i].nc) * 2;
				struct pd_block_chunk *nc = realloc(cs, c * sizeof(*nc));
				if (nc)
					cs = nc;
				uint8_t **no = realloc(owned, 2 * c * sizeof(*no));
				if (no)
					owned = no;
				if (!nc || !no) {
					rc = pd_err_set(err, PD_ENOMEM, "out of memory");
					break;
				}
				cs_cap = c;
			}
			/* deleted samples are left out of the new block */
			size_t ntv;
			const struct tomb_entry *tv =
			    tomb_find(pd_block_tombstones(bs[i]), cur[i].refs[cur[i].i], &ntv);
			for (size_t k = 0; k < cur[i].nc && !rc; k++) {
				const struct pd_block_chunk_meta *m = &cur[i].chunks[k];
				owned[2 * ncs] = owned[2 * ncs + 1] = NULL;
				struct pd_block_chunk *c = &cs[ncs++];
				c->mint = m->mint;
				c->maxt = m->maxt;
				c->count = m->count;
				rc = pd_block_chunk_bytes(bs[i], m->ts_ref, &c->ts, &c->ts_len, err);
				if (!rc)
					rc = pd_block_chunk_bytes(bs[i], m->vals_ref, &c->vals, &c->vals_len, err);
				if (!rc && ntv) {
					int kept;
					uint8_t **o = &owned[2 * (ncs - 1)];
					rc = db_filter_chunk(db, c, tv, ntv, c, &o[1], &o[0], &kept, err);
					if (!rc && !kept) {
						ncs--;
						continue;
					}
					if (!rc && o[0])
						continue; /* rewritten in the store's encoding */
				}
				if (!rc)
					rc = reencode_values(db, c->ts, c->ts_len, &c->vals, &c->vals_len,
							     &owned[2 * (ncs - 1)], err);
				/* a chunk written before totals sections existed gets one */
				if (!rc)
					rc = tsdb_chunk_add_totals(c, db->o.max_profile, &owned[2 * (ncs - 1) + 1],
								   err);
			}
		}
		if (!rc && ncs && overlap) {
			struct pd_block_chunk *rs;
			size_t nrs;
			rc = resolve_overlaps(db, cs, ncs, &rs, &nrs, &keep, &nkeep, &keep_cap, err);
			if (!rc) {
				rc = pd_block_writer_add_series(w, lab, nlab, rs, nrs, err);
				written++;
				free(rs);
			}
		} else if (!rc && ncs) {
			rc = pd_block_writer_add_series(w, lab, nlab, cs, ncs, err);
			written++;
		}
		for (size_t k = 0; k < 2 * ncs; k++) {
			free(owned[k]);
			owned[k] = NULL;
		}
		for (size_t k = 0; k < nkeep; k++)
			free(keep[k]);
		nkeep = 0;
		/* advance every cursor that held this series (lab points into min's
		 * labels, so compare before any reload) */
		struct cursor *adv[64] = {NULL};
		size_t nadv = 0;
		for (size_t i = 0; i < n && !rc; i++)
			if (cur[i].i < cur[i].n && labels_cmp(cur[i].labels, cur[i].nl, lab, nlab) == 0 &&
			    nadv < 64)
				adv[nadv++] = &cur[i];
		for (size_t i = 0; i < nadv && !rc; i++) {
			adv[i]->i++;
			rc = cursor_load(adv[i], err);
		}
	}
	ulid[0] = '\0';
	if (rc || !written)
		pd_block_writer_abort(w); /* nothing left: the blocks go, no block comes */
	else
		rc = pd_block_writer_finish(w, ulid, err);
	if (!rc && ulid[0])
		pd_log_info("tsdb", "blocks compacted",
		            "ulid=%s sources=%zu mint=%lld maxt=%lld overlapping=%d", ulid, n,
		            (long long)pd_block_meta(bs[0])->mint, (long long)maxt, overlap);
out:
	for (size_t i = 0; i < n; i++) {
		free(cur[i].refs);
		free(cur[i].labels);
		free(cur[i].chunks);
	}
	free(cur);
	free(cs);
	free(owned);
	for (size_t k = 0; k < nkeep; k++)
		free(keep[k]);
	free(keep);
	free(sources);
	return rc;
}

/* Replaces blocks [from, from+n) of db->blocks by the block in dir ulid (none
 * when ulid is ""). */
int db_swap_blocks(struct pd_tsdb *db, size_t from, size_t n, const char *ulid,
		       struct pd_err *err)
{
	struct pd_block *nb = NULL;
	int rc;
	if (ulid[0]) {
		char *p = db_path_join(db->dir, ulid);
		if (!p)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		rc = pd_block_open(&nb, p, err);
		free(p);
		if (rc)
			return rc;
	}
	struct pd_block **old = malloc(n * sizeof(*old));
	if (!old) {
		pd_block_close(nb);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	size_t add = nb ? 1 : 0;
	pthread_rwlock_wrlock(&db->blocks_mu);
	memcpy(old, db->blocks + from, n * sizeof(*old));
	if (nb)
		db->blocks[from] = nb;
	memmove(db->blocks + from + add, db->blocks + from + n,
		(db->nblocks - from - n) * sizeof(*db->blocks));
	db->nblocks -= n - add;
	pthread_rwlock_unlock(&db->blocks_mu);
	for (size_t i = 0; i < n; i++) {
		char *dir = strdup(pd_block_dir(old[i]));
		pd_block_close(old[i]);
		if (dir) {
			size_t l = strlen(dir);
			char *del = malloc(l + 9);
			if (del) {
				snprintf(del, l + 9, "%s.deleted", dir);
				if (rename(dir, del) == 0)
					db_rm_rf(del);
				free(del);
			}
			free(dir);
		}
	}
	free(old);
	return 0;
}

/* A merge of bs[0..n) that failed on damage (PD_ECORRUPT, in why): logged with
 * the blocks and counted as a failed compaction; the blocks stay as they are
 * and the rest of the compaction goes on without them. */
static void skip_damaged(struct pd_tsdb *db, struct pd_block **bs, size_t n,
			 const struct pd_err *why)
{
	__atomic_fetch_add(&db->compaction_failures, 1, __ATOMIC_RELAXED);
	pd_log_error("tsdb",
	             "compaction of damaged blocks failed (they stay as they are; the other "
	             "blocks are compacted, these retried at the next flush)",
	             "blocks=%zu first=%s last=%s mint=%lld maxt=%lld err=%s", n,
	             pd_block_meta(bs[0])->ulid, pd_block_meta(bs[n - 1])->ulid,
	             (long long)pd_block_meta(bs[0])->mint,
	             (long long)pd_block_meta(bs[n - 1])->maxt, why->msg);
}

/* Blocks of idle series of a range the head still holds wait for the range's
 * block, which they are merged with once; only past IDLE_WAIT_MAX of them are
 * they merged among themselves meanwhile, so that a range of steady churn is
 * not rewritten at every flush. At open (compact_idle) they are merged at once:
 * replay may have put idle series back, written out again since. */
#define IDLE_WAIT_MAX 8

int64_t db_newest_block_end(const struct pd_tsdb *db)
{
	int64_t e = INT64_MIN, any = INT64_MIN;
	for (size_t i = 0; i < db->nblocks; i++) {
		const struct pd_block_meta *m = pd_block_meta(db->blocks[i]);
		if (!m->idle && m->maxt > e)
			e = m->maxt;
		if (m->maxt > any)
			any = m->maxt;
	}
	return e != INT64_MIN ? e : any;
}

static int idle_waits(const struct pd_tsdb *db, struct pd_block **bs, size_t n, int64_t end)
{
	if (db->compact_idle || n > IDLE_WAIT_MAX || db->head.maxt == INT64_MIN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!pd_block_meta(bs[i])->idle)
			return 0;
	int64_t newest = db_capped(db->head.maxt, db_bound_cap(&db->o));
	/* the head persists a range once it is half a range behind the newest sample */
	return end > newest - db->o.block_range_ms / 2;
}

/* Merges blocks that overlap, then blocks into aligned ranges. A merge that
 * fails on damage is skipped (skip_damaged); any other failure ends it. */
int db_compact(struct pd_tsdb *db, struct pd_err *err)
{
	int64_t br = db->o.block_range_ms;
	int64_t max_range = db->o.retention_ms > 0 ? db->o.retention_ms / 10 : 31LL * 86400000;
	int rc = 0;
	struct pd_err merr = {0};
	/* only this thread changes the block list; readers may run meanwhile */
	pthread_mutex_lock(&db->append_mu);
	/* blocks that overlap first, whatever their ranges (Prometheus's vertical
	 * compaction): the same range persisted twice, by a crash between writing
	 * a block and checkpointing the WAL, or by a store that took samples
	 * before the newest block's end */
	for (size_t i = 0; i + 1 < db->nblocks && !rc;) {
		int64_t end = pd_block_meta(db->blocks[i])->maxt;
		size_t j = i + 1;
		/* at most 64 at once (merge_blocks' cursors): the block merged from
		 * them overlaps the rest, which the next round takes */
		for (; j < db->nblocks && j - i < 64 && pd_block_meta(db->blocks[j])->mint < end; j++)
			if (pd_block_meta(db->blocks[j])->maxt > end)
				end = pd_block_meta(db->blocks[j])->maxt;
		if (j - i < 2) {
			i++;
			continue;
		}
		if (idle_waits(db, db->blocks + i, j - i, end)) {
			i = j;
			continue;
		}
		char ulid[27];
		rc = db_merge_blocks(db, db->blocks + i, j - i, ulid, &merr);
		if (rc == PD_ECORRUPT) {
			skip_damaged(db, db->blocks + i, j - i, &merr);
			rc = 0;
			i = j;
			continue;
		}
		if (rc || (rc = db_swap_blocks(db, i, j - i, ulid, &merr)))
			break;
		db->compactions++;
		__atomic_fetch_add(&db->vertical_compactions, 1, __ATOMIC_RELAXED);
		/* the merged block (if any) is at i: look again from it */
	}
	for (int64_t r = br * 3; r <= max_range && !rc; r *= 3) {
		/* blocks of idle series end where their range does, not where the
		 * samples are */
		int64_t newest = db_newest_block_end(db);
		if (newest == INT64_MIN)
			newest = 0;
		if (db->head.maxt != INT64_MIN && db->head.maxt > newest)
			newest = db->head.maxt;
		newest = db_capped(newest, db_bound_cap(&db->o));
		/* one pass: a merge leaves the blocks before it as they were, and
		 * its own block alone in its window */
		for (size_t i = 0; i < db->nblocks && !rc;) {
			int64_t lo;
			db_window_floor(pd_block_meta(db->blocks[i])->mint, r, &lo);
			int64_t hi = lo + r;
			if (hi > newest)
				break; /* the window is still filling */
			size_t j = i;
			while (j < db->nblocks && pd_block_meta(db->blocks[j])->maxt <= hi &&
			       pd_block_meta(db->blocks[j])->mint >= lo)
				j++;
			if (j - i < 2) {
				i++;
				continue;
			}
			char ulid[27];
			rc = db_merge_blocks(db, db->blocks + i, j - i, ulid, &merr);
			if (rc == PD_ECORRUPT) {
				skip_damaged(db, db->blocks + i, j - i, &merr);
				rc = 0;
				i = j;
				continue;
			}
			if (rc || (rc = db_swap_blocks(db, i, j - i, ulid, &merr)))
				break;
			db->compactions++;
			i++;
		}
	}
	pthread_mutex_unlock(&db->append_mu);
	if (rc && err)
		*err = merr;
	return rc;
}

/* Deletes the oldest blocks while they are past the retention time or, with
 * by_size, while the blocks and the WAL exceed the retention size. */
int db_apply_retention(struct pd_tsdb *db, int by_size, struct pd_err *err)
{
	(void)err;
	pthread_mutex_lock(&db->append_mu);
	for (;;) {
		if (!db->nblocks)
			break;
		int64_t newest = db_newest_block_end(db);
		if (db->head.maxt != INT64_MIN && db->head.maxt > newest)
			newest = db->head.maxt;
		newest = db_capped(newest, db_bound_cap(&db->o));
		const struct pd_block_meta *oldest = pd_block_meta(db->blocks[0]);
		int drop = db->o.retention_ms > 0 && oldest->maxt <= newest - db->o.retention_ms;
		if (!drop && by_size && db->o.retention_bytes) {
			uint64_t total = db->wal ? pd_wal_size(db->wal) : 0;
			for (size_t i = 0; i < db->nblocks; i++)
				total += pd_block_size(db->blocks[i]);
			drop = total > db->o.retention_bytes;
		}
		if (!drop)
			break;
		struct pd_block *b = db->blocks[0];
		pthread_rwlock_wrlock(&db->blocks_mu);
		memmove(db->blocks, db->blocks + 1, (db->nblocks - 1) * sizeof(*db->blocks));
		db->nblocks--;
		pthread_rwlock_unlock(&db->blocks_mu);
		char *dir = strdup(pd_block_dir(b));
		pd_block_close(b);
		if (dir) {
			/* a read-only reader (profd tsdb) only hides it: the daemon may own
			 * the directory and is the one to clean up */
			if (!db->o.read_only)
				db_rm_rf(dir);
			free(dir);
		}
		db->retention_deletions++;
	}
	pthread_mutex_unlock(&db->append_mu);
	return 0;
}
