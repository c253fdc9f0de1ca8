/* v2_sealed.c: the sealed columnar value chunk (encoding 2): the seal, which
 * compresses an appender's records again as one frame a group, with holes and
 * runs for a chunk of the store and its tables against the built-in dictionary,
 * and on shared tables with tables of the chunk's own; and the reader of sealed
 * chunks, which decompresses the tables and one group to rebuild one profile.
 *
 * Sealed layout (varints as in docs/format/chunks.md):
 *
 *   encoding (1B = 2) | count | group | tables_len | frame_len × nframes |
 *   tables frame | group frames ...
 *
 * The tables frame is v2_tables_write's output, compressed; group frame k holds
 * the records of profiles k*group .. min(count, (k+1)*group)-1, compressed. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

/* ---- the seal ------------------------------------------------------------------------ */

/* The records of every group of the appender, decompressed, back to back in
 * recs; group g from goff[g] to goff[g + 1]. */
static int appender_groups(const struct v2_appender *a, size_t ngroups, struct pd_buf *recs,
			   size_t *goff, struct pd_err *err)
{
	for (size_t g = 0; g < ngroups; g++) {
		size_t from = g * a->group, to = from + a->group < a->count ? from + a->group : a->count;
		goff[g] = recs->len;
		int rc = v2_appender_records(a, from, to, recs, err);
		if (rc)
			return rc;
	}
	goff[ngroups] = recs->len;
	return 0;
}

/* The sealed chunk of the appender's records (recs, groups as goff says) with
 * tables t: each group compressed as one frame, and the tables. */
static int seal_write(const struct v2_appender *a, int holes, const struct v2_tables *t,
		      const uint8_t *recs, const size_t *goff, size_t ngroups, uint8_t **out,
		      size_t *out_len, struct pd_err *err)
{
	struct pd_buf b, tables, ctables, groups, runs, holed;
	struct v2_tables empty;
	size_t tlen = 0;
	int rc = 0;
	/* a chunk beside its totals whose records are few bytes in all is written
	 * with byte 5, its columns leaving values to the totals (holes), as one
	 * group: a read steps over at most V2_ONE_GROUP_MAX bytes of records, and no
	 * group but the first starts without the records before it. Larger records
	 * (heap profiles) keep byte 4 and their groups: holes would save them under
	 * 1% for as long again to seal. */
	holes = holes && a->rel && goff[ngroups] - goff[0] <= V2_ONE_GROUP_MAX;
	size_t group = a->group, one[2];
	if (holes && ngroups > 1) {
		one[0] = goff[0];
		one[1] = goff[ngroups];
		goff = one;
		ngroups = 1;
		group = a->count;
	}
	size_t *gl = calloc(ngroups ? ngroups : 1, sizeof(*gl));
	pd_buf_init(&b, 0);
	pd_buf_init(&runs, 0);
	pd_buf_init(&holed, 0);
	pd_buf_init(&tables, 0);
	pd_buf_init(&ctables, 0);
	pd_buf_init(&groups, 0);
	v2_tables_init(&empty);
	if (!gl)
		goto nomem;
	for (size_t g = 0; g < ngroups; g++) {
		const uint8_t *gr = recs + goff[g];
		size_t glen = goff[g + 1] - goff[g];
		/* a chunk of the store beside its totals leaves values to them (holes),
		 * which makes more records repeats */
		size_t nrep = a->grep_all ? 2 : g < a->ngrep ? a->grep[g] : 0;
		if (holes) {
			holed.len = 0;
			if ((rc = v2_holes_write(t, gr, glen, &holed, &nrep, err)))
				goto out;
			gr = holed.data;
			glen = holed.len;
		}
		/* a chunk of the store writes its stretches of repeats as runs */
		if (a->rel && nrep >= 2) {
			runs.len = 0;
			if ((rc = v2_runs_write(t, a->rel, gr, glen, &runs, err)))
				goto out;
			gr = runs.data;
			glen = runs.len;
		}
		size_t before = groups.len;
		if ((rc = v2_compress(gr, glen, a->level, &groups, &gl[g], err)))
			goto out;
		/* in a chunk of byte 4, a group that zstd does not make smaller is
		 * stored as it is (a record never starts like a zstd frame) */
		if (a->rel && gl[g] >= glen) {
			groups.len = before;
			if (pd_buf_append(&groups, gr, glen))
				goto nomem;
			gl[g] = glen;
		}
	}
	/* an empty chunk still has string 0 */
	if (t->nstr == 0) {
		if (v2_intern_str(&empty, "", 0) != 0)
			goto nomem;
		t = &empty;
	}
	size_t cuts[V2_TABLES_CUTS], ncut = 0;
	if (v2_tables_write(t, &tables, cuts, a->rel))
		goto nomem;
	/* a part under V2_CUT_MIN bytes costs more in block and table headers than
	 * tables of its own save: it stays with the part after it */
	for (size_t k = 0, last = 0; k < V2_TABLES_CUTS; k++)
		if (cuts[k] - last >= V2_CUT_MIN && tables.len - cuts[k] >= V2_CUT_MIN)
			last = cuts[ncut++] = cuts[k];
	/* a chunk of the store (relative times) is written with encoding byte 4:
	 * its tables against the built-in dictionary */
	int tlevel = a->rel ? V2_TABLES_LEVEL_DICT : V2_TABLES_LEVEL;
	if ((rc = v2_compress_cut_dict(tables.data, tables.len, a->level > tlevel ? a->level : tlevel,
				       a->rel ? V2_DICT_GO : V2_DICT_NONE, cuts, ncut, &ctables, &tlen,
				       err)))
		goto out;
	uint8_t enc = !a->rel ? PD_CHUNKENC_VALUES_COLUMNAR
		      : holes ? PD_CHUNKENC_VALUES_COLUMNAR_TOTALS
			      : PD_CHUNKENC_VALUES_COLUMNAR_DICT;
	int w = pd_buf_append(&b, &enc, 1) | v2_put_uv(&b, a->count) | v2_put_uv(&b, group) |
		v2_put_uv(&b, tlen);
	for (size_t g = 0; g < ngroups; g++)
		w |= v2_put_uv(&b, gl[g]);
	w |= pd_buf_append(&b, ctables.data, ctables.len);
	w |= pd_buf_append(&b, groups.data, groups.len);
	if (w)
		goto nomem;
	*out = pd_buf_steal(&b, out_len);
	if (*out_len) { /* exact: a sealed chunk stays in the head until its block is written */
		uint8_t *x = realloc(*out, *out_len);
		if (x)
			*out = x;
	}
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory sealing a value chunk");
out:
	free(gl);
	v2_tables_fini(&empty);
	pd_buf_fini(&b);
	pd_buf_fini(&tables);
	pd_buf_fini(&ctables);
	pd_buf_fini(&groups);
	pd_buf_fini(&runs);
	pd_buf_fini(&holed);
	return rc;
}

/* Seals an appender: its groups decompressed and compressed again as one frame
 * each, with its tables. On shared tables, the chunk gets tables of its own
 * holding only what its records use, and the records are rewritten to refer to
 * them (v2_remap); only that walk holds the shared tables' read lock. */
int v2_appender_seal(const struct v2_appender *a, int holes, uint8_t **out, size_t *out_len,
		     struct pd_err *err)
{
	size_t ngroups = (a->count + a->group - 1) / a->group;
	size_t *goff = calloc(2 * (ngroups + 1), sizeof(*goff));
	struct pd_buf recs, moved;
	struct v2_tables own;
	int rc;
	pd_buf_init(&recs, 0);
	pd_buf_init(&moved, 0);
	v2_tables_init(&own);
	if (!goff) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory sealing a value chunk");
		goto out;
	}
	if ((rc = appender_groups(a, ngroups, &recs, goff, err)))
		goto out;
	if (!a->sym) {
		rc = seal_write(a, holes, &a->t, recs.data, goff, ngroups, out, out_len, err);
		goto out;
	}
	size_t *mgoff = goff + ngroups + 1;
	pthread_rwlock_rdlock(&a->sym->mu);
	rc = v2_remap(&a->sym->t, recs.data, goff, ngroups, &own, &moved, mgoff, err);
	pthread_rwlock_unlock(&a->sym->mu);
	if (!rc)
		rc = seal_write(a, holes, &own, moved.data, mgoff, ngroups, out, out_len, err);
out:
	free(goff);
	pd_buf_fini(&recs);
	pd_buf_fini(&moved);
	v2_tables_fini(&own);
	return rc;
}

/* ---- sealed chunks ------------------------------------------------------------------ */

struct v2_header {
	int rel;       /* encoding bytes 3 and 4: times relative to the samples' timestamps */
	unsigned dict; /* the tables frame's dictionary (bytes 4 and 5: V2_DICT_GO) */
	int holes;     /* byte 5: value columns may take a value from the totals */
	uint64_t count, group, tables_len;
	size_t frames_at; /* offset of the frame length table */
	size_t data_at;   /* offset of the tables frame */
	uint64_t nframes;
};

static int parse_header(const uint8_t *p, size_t len, struct v2_header *h, struct pd_err *err)
{
	struct v2_rd r = {p, len, 1, 0};
	if (len < 1 || !v2_columnar_byte(p[0]))
		return pd_err_set(err, PD_ECORRUPT, "value chunk is not a columnar chunk");
	h->rel = p[0] != PD_CHUNKENC_VALUES_COLUMNAR;
	h->dict = p[0] >= PD_CHUNKENC_VALUES_COLUMNAR_DICT ? V2_DICT_GO : V2_DICT_NONE;
	h->holes = p[0] == PD_CHUNKENC_VALUES_COLUMNAR_TOTALS;
	h->count = v2_uv(&r);
	h->group = v2_uv(&r);
	h->tables_len = v2_uv(&r);
	if (r.bad)
		return pd_err_set(err, PD_ECORRUPT, "value chunk header is truncated");
	if (h->group == 0 || h->group > PD_CHUNKENC_MAX_SAMPLES || h->count > PD_CHUNKENC_MAX_SAMPLES)
		return pd_err_set(err, PD_ECORRUPT,
				  "value chunk header is inconsistent (count %llu, group %llu)",
				  (unsigned long long)h->count, (unsigned long long)h->group);
	h->nframes = (h->count + h->group - 1) / h->group;
	h->frames_at = r.pos;
	uint64_t total = h->tables_len;
	for (uint64_t k = 0; k < h->nframes; k++)
		total += v2_uv(&r);
	if (r.bad)
		return pd_err_set(err, PD_ECORRUPT, "value chunk frame table is truncated");
	h->data_at = r.pos;
	if (total != len - r.pos)
		return pd_err_set(err, PD_ECORRUPT,
				  "value chunk frames add up to %llu bytes, the chunk has %zu",
				  (unsigned long long)total, len - r.pos);
	return 0;
}

int64_t v2_read_count(const uint8_t *chunk, size_t len, struct pd_err *err)
{
	struct v2_header h = {0};
	int rc = parse_header(chunk, len, &h, err);
	return rc ? rc : (int64_t)h.count;
}

/* Largest decompressed tables accepted for a chunk of profiles of at most
 * max_profile bytes: a chunk's tables are the union of its profiles' symbols, so
 * a few profiles' worth, however many profiles it holds. */
static size_t tables_limit(size_t max_profile)
{
	return max_profile > SIZE_MAX / 8 ? SIZE_MAX / 2 : max_profile * 8 + 4096;
}

int v2_read(const uint8_t *chunk, size_t len, size_t i, int64_t ts, const struct v2_sums *sums,
	    size_t max_profile, uint8_t **out, size_t *out_len, struct pd_err *err)
{
	struct v2_header h = {0};
	int rc = parse_header(chunk, len, &h, err);
	if (rc)
		return rc;
	if (h.holes && !sums)
		return pd_err_set(err, PD_EINVAL,
				  "value chunk: its values need the totals of its timestamp chunk, "
				  "and none were given");
	if (i >= h.count)
		return pd_err_set(err, PD_ENOTFOUND, "profile %zu of a chunk of %llu", i,
				  (unsigned long long)h.count);
	uint64_t g = i / h.group, off = h.tables_len, flen = 0;
	struct v2_rd r = {chunk, len, h.frames_at, 0};
	for (uint64_t k = 0; k <= g; k++) {
		uint64_t l = v2_uv(&r);
		if (k < g)
			off += l;
		else
			flen = l;
	}
	struct v2_tables t;
	v2_tables_init(&t);
	uint64_t items = h.count - g * h.group < h.group ? h.count - g * h.group : h.group;
	size_t gmax = max_profile > (SIZE_MAX / 2) / items ? SIZE_MAX / 2 : max_profile * items + 4096;
	struct v2_rcache *c = v2_rcache_take();
	if (!c)
		return pd_err_set(err, PD_ENOMEM, "out of memory reading a value chunk");
	if ((rc = v2_decompress_buf_dict(chunk + h.data_at, h.tables_len, tables_limit(max_profile),
					 h.dict, &c->traw, "tables frame", err)) ||
	    (rc = v2_tables_read(&t, c->traw.data, c->traw.len, err)) ||
	    (rc = v2_group_bytes(chunk + h.data_at + off, flen, gmax, h.dict != V2_DICT_NONE, &c->graw,
				 err)))
		goto out;
	rc = v2_group_record(&t, &c->prev, h.rel, ts, sums, (size_t)(g * h.group), c->graw.data,
			     c->graw.len, i % h.group, max_profile, out, out_len, err);
out:
	v2_rcache_done(c);
	v2_tables_fini(&t);
	return rc;
}
