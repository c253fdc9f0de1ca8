/* values.c: the value chunk: profiles in groups, each group one zstd frame, so
 * that neighbouring profiles of a series (which share most of their strings,
 * functions and locations) compress together, and reading one profile
 * decompresses one group only.
 *
 * Sealed layout (all integers unsigned LEB128 varints unless noted):
 *
 *   ┌──────────────┬───────┬───────┬─────────┬──────────────────────┬──────────────┐
 *   │ encoding (1B)│ count │ group │ nframes │ frame_len × nframes  │ frames ...   │
 *   └──────────────┴───────┴───────┴─────────┴──────────────────────┴──────────────┘
 *
 * Frame k holds profiles k*group .. min(count, (k+1)*group)-1; decompressed it is
 * the sequence (len varint, len bytes) per profile. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "v2_int.h"

struct pd_chunkenc_values {
	unsigned group;
	int level;
	size_t count;
	struct pd_buf frames;  /* sealed group frames, back to back */
	size_t *frame_len;
	size_t nframes, frame_cap;
	struct pd_buf open;    /* the group being filled, uncompressed */
	unsigned open_count;
	struct v2_appender *v2; /* set for encoding 2: every call goes there */
};

static int put_uvarint(struct pd_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	return pd_buf_append(b, tmp, n);
}

/* Reads a varint at *pos < len; -1 when truncated or longer than 10 bytes. */
static int get_uvarint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (*pos >= len)
			return -1;
		uint8_t b = p[(*pos)++];
		if (i == 9 && b > 1)
			return -1;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

struct pd_chunkenc_values *pd_chunkenc_values_create(unsigned group, int level)
{
	struct pd_chunkenc_values *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->group = group ? group : PD_CHUNKENC_DEFAULT_GROUP;
	c->level = level ? level : PD_CHUNKENC_DEFAULT_ZSTD_LEVEL;
	pd_buf_init(&c->frames, 0);
	pd_buf_init(&c->open, 0);
	return c;
}

struct pd_chunkenc_values *pd_chunkenc_values_create_enc(int encoding, unsigned group, int level)
{
	if (encoding == 0)
		encoding = PD_CHUNKENC_DEFAULT_ENCODING;
	if (encoding == PD_CHUNKENC_VALUES_ZSTD_GROUPS)
		return pd_chunkenc_values_create(group, level);
	if (encoding != PD_CHUNKENC_VALUES_COLUMNAR)
		return NULL;
	struct pd_chunkenc_values *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (!(c->v2 = v2_appender_create(group, level))) {
		free(c);
		return NULL;
	}
	return c;
}

/* The public name of the shared tables is an alias of v2_symbols. */
struct pd_chunkenc_symbols *pd_chunkenc_symbols_create(void)
{
	return (struct pd_chunkenc_symbols *)v2_symbols_create();
}

void pd_chunkenc_symbols_unref(struct pd_chunkenc_symbols *s)
{
	v2_symbols_unref((struct v2_symbols *)s);
}

size_t pd_chunkenc_symbols_memory(struct pd_chunkenc_symbols *s)
{
	return v2_symbols_memory((struct v2_symbols *)s);
}

struct pd_chunkenc_values *pd_chunkenc_values_create_shared(struct pd_chunkenc_symbols *s,
							    unsigned group, int level)
{
	return pd_chunkenc_values_create_stored(s, NULL, group, level);
}

struct pd_chunkenc_values *pd_chunkenc_values_create_stored(struct pd_chunkenc_symbols *s,
							    const struct pd_chunkenc_frame_store *fs,
							    unsigned group, int level)
{
	struct pd_chunkenc_values *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (!(c->v2 = v2_appender_create_shared((struct v2_symbols *)s, group, level))) {
		free(c);
		return NULL;
	}
	v2_appender_set_store(c->v2, fs);
	return c;
}

size_t pd_chunkenc_values_memory(const struct pd_chunkenc_values *c)
{
	if (c->v2)
		return sizeof(*c) + v2_appender_memory(c->v2);
	return sizeof(*c) + c->frames.cap + c->open.cap + c->frame_cap * sizeof(size_t);
}

int pd_chunkenc_values_encoding(const uint8_t *chunk, size_t len)
{
	if (len && v2_columnar_byte(chunk[0]))
		return PD_CHUNKENC_VALUES_COLUMNAR;
	return len ? chunk[0] : 0;
}

void pd_chunkenc_values_destroy(struct pd_chunkenc_values *c)
{
	if (!c)
		return;
	v2_appender_destroy(c->v2);
	pd_buf_fini(&c->frames);
	pd_buf_fini(&c->open);
	free(c->frame_len);
	free(c);
}

size_t pd_chunkenc_values_count(const struct pd_chunkenc_values *c)
{
	if (c->v2)
		return v2_appender_count(c->v2);
	return c->count;
}

/* Compresses raw into one frame appended to out (no spare capacity kept: a head
 * holds one of these per series); *flen gets its size. */
static int compress_group(const struct pd_buf *raw, int level, struct pd_buf *out, size_t *flen,
			  struct pd_err *err)
{
	return v2_compress(raw->data, raw->len, level, out, flen, err);
}

int pd_chunkenc_values_append(struct pd_chunkenc_values *c, const uint8_t *p, size_t len,
			      struct pd_err *err)
{
	return pd_chunkenc_values_append_at(c, PD_CHUNKENC_NO_TS, p, len, NULL, err);
}

int pd_chunkenc_values_append_decoded(struct pd_chunkenc_values *c, const uint8_t *p, size_t len,
				      const struct pd_pprof_profile *decoded, struct pd_err *err)
{
	return pd_chunkenc_values_append_at(c, PD_CHUNKENC_NO_TS, p, len, decoded, err);
}

int pd_chunkenc_values_append_at(struct pd_chunkenc_values *c, int64_t ts, const uint8_t *p,
				 size_t len, const struct pd_pprof_profile *decoded,
				 struct pd_err *err)
{
	if (c->v2)
		return v2_appender_append(c->v2, ts, p, len, decoded, err);
	if (c->count >= PD_CHUNKENC_MAX_SAMPLES)
		return pd_err_set(err, PD_ETOOBIG, "value chunk is full (%d profiles)",
				  PD_CHUNKENC_MAX_SAMPLES);
	size_t mark = c->open.len;
	if (put_uvarint(&c->open, len) || pd_buf_append(&c->open, p, len)) {
		c->open.len = mark;
		return pd_err_set(err, PD_ENOMEM, "out of memory appending a profile of %zu bytes", len);
	}
	c->open_count++;
	c->count++;
	if (c->open_count < c->group)
		return 0;
	if (c->nframes == c->frame_cap) {
		size_t cap = c->frame_cap ? c->frame_cap * 2 : 8;
		size_t *fl = realloc(c->frame_len, cap * sizeof(*fl));
		if (!fl)
			goto nomem;
		c->frame_len = fl;
		c->frame_cap = cap;
	}
	int rc = compress_group(&c->open, c->level, &c->frames, &c->frame_len[c->nframes], err);
	if (rc)
		goto undo;
	c->nframes++;
	/* the next group starts small again: most series never fill their chunk */
	pd_buf_fini(&c->open);
	pd_buf_init(&c->open, 0);
	c->open_count = 0;
	return 0;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory appending a profile");
undo:
	/* leave the chunk as it was before this append */
	c->open.len = mark;
	c->open_count--;
	c->count--;
	return rc;
}

/* Finds item k of a decompressed group. */
static int group_item(const uint8_t *g, size_t glen, size_t k, const uint8_t **item, size_t *ilen)
{
	size_t pos = 0;
	for (size_t j = 0;; j++) {
		uint64_t l;
		if (get_uvarint(g, glen, &pos, &l) || l > glen - pos)
			return -1;
		if (j == k) {
			*item = g + pos;
			*ilen = (size_t)l;
			return 0;
		}
		pos += (size_t)l;
	}
}

static int copy_out(const uint8_t *item, size_t ilen, uint8_t **out, size_t *out_len,
		    struct pd_err *err)
{
	*out = malloc(ilen ? ilen : 1);
	if (!*out)
		return pd_err_set(err, PD_ENOMEM, "out of memory reading a profile of %zu bytes", ilen);
	if (ilen)
		memcpy(*out, item, ilen);
	*out_len = ilen;
	return 0;
}

/* Decompresses one frame into the thread's read buffer g, refusing more than
 * max bytes. */
static int decompress_frame(const uint8_t *f, size_t flen, size_t max, struct pd_buf *g,
			    struct pd_err *err)
{
	unsigned long long size = ZSTD_getFrameContentSize(f, flen);
	if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
		return pd_err_set(err, PD_ECORRUPT, "value chunk: group frame is not a valid zstd frame");
	if (size > max)
		return pd_err_set(err, PD_ETOOBIG, "value chunk: group of %llu bytes exceeds the limit of %zu",
				  size, max);
	struct pd_err derr = {0};
	int rc = v2_decompress_buf(f, flen, max, g, "group frame", &derr);
	if (rc == PD_ECORRUPT)
		return pd_err_set(err, rc, "value chunk: %s",
				  strncmp(derr.msg, "value chunk: group frame: ", 26) == 0 ? derr.msg + 26
											: derr.msg);
	return rc ? pd_err_set(err, rc, "%s", derr.msg) : 0;
}

int pd_chunkenc_values_get(const struct pd_chunkenc_values *c, size_t i, uint8_t **out,
			   size_t *out_len, struct pd_err *err)
{
	return pd_chunkenc_values_get_at(c, i, PD_CHUNKENC_NO_TS, out, out_len, err);
}

int pd_chunkenc_values_get_at(const struct pd_chunkenc_values *c, size_t i, int64_t ts,
			      uint8_t **out, size_t *out_len, struct pd_err *err)
{
	const uint8_t *item;
	size_t ilen;
	if (c->v2)
		return v2_appender_get(c->v2, i, ts, out, out_len, err);
	if (i >= c->count)
		return pd_err_set(err, PD_ENOTFOUND, "profile %zu of a chunk of %zu", i, c->count);
	size_t g = i / c->group;
	if (g >= c->nframes) {
		if (group_item(c->open.data, c->open.len, i % c->group, &item, &ilen))
			return pd_err_set(err, PD_ECORRUPT, "value chunk: open group is damaged");
		return copy_out(item, ilen, out, out_len, err);
	}
	size_t off = 0;
	for (size_t k = 0; k < g; k++)
		off += c->frame_len[k];
	struct v2_rcache *rb = v2_rcache_take();
	if (!rb)
		return pd_err_set(err, PD_ENOMEM, "out of memory reading a value chunk");
	int rc = decompress_frame(c->frames.data + off, c->frame_len[g], SIZE_MAX / 2, &rb->graw, err);
	if (!rc && group_item(rb->graw.data, rb->graw.len, i % c->group, &item, &ilen))
		rc = pd_err_set(err, PD_ECORRUPT, "value chunk: group %zu is damaged", g);
	else if (!rc)
		rc = copy_out(item, ilen, out, out_len, err);
	v2_rcache_done(rb);
	return rc;
}

int pd_chunkenc_values_seal(const struct pd_chunkenc_values *c, uint8_t **out, size_t *out_len,
			    struct pd_err *err)
{
	if (c->v2)
		return v2_appender_seal(c->v2, 0, out, out_len, err);
	struct pd_buf b, last;
	size_t last_len = 0;
	int rc = 0;
	pd_buf_init(&b, 0);
	pd_buf_init(&last, 0);
	if (c->open_count && (rc = compress_group(&c->open, c->level, &last, &last_len, err)))
		goto out;
	size_t nframes = c->nframes + (c->open_count ? 1 : 0);
	uint8_t enc = PD_CHUNKENC_VALUES_ZSTD_GROUPS;
	if (pd_buf_append(&b, &enc, 1) || put_uvarint(&b, c->count) || put_uvarint(&b, c->group) ||
	    put_uvarint(&b, nframes))
		goto nomem;
	for (size_t k = 0; k < c->nframes; k++)
		if (put_uvarint(&b, c->frame_len[k]))
			goto nomem;
	if (c->open_count && put_uvarint(&b, last_len))
		goto nomem;
	if (pd_buf_append(&b, c->frames.data, c->frames.len) || pd_buf_append(&b, last.data, last.len))
		goto nomem;
	*out = pd_buf_steal(&b, out_len);
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory sealing a value chunk");
out:
	pd_buf_fini(&b);
	pd_buf_fini(&last);
	return rc;
}

int pd_chunkenc_values_seal_totals(const struct pd_chunkenc_values *c, uint8_t **out,
				   size_t *out_len, struct pd_err *err)
{
	if (c->v2)
		return v2_appender_seal(c->v2, 1, out, out_len, err);
	return pd_chunkenc_values_seal(c, out, out_len, err);
}

struct header {
	uint64_t count, group, nframes;
	size_t table; /* offset of the frame length table */
};

static int parse_header(const uint8_t *p, size_t len, struct header *h, struct pd_err *err)
{
	size_t pos = 1;
	if (len < 1)
		return pd_err_set(err, PD_ECORRUPT, "value chunk is empty");
	if (p[0] != PD_CHUNKENC_VALUES_ZSTD_GROUPS)
		return pd_err_set(err, PD_ECORRUPT, "value chunk has unknown encoding %u", p[0]);
	if (get_uvarint(p, len, &pos, &h->count) || get_uvarint(p, len, &pos, &h->group) ||
	    get_uvarint(p, len, &pos, &h->nframes))
		return pd_err_set(err, PD_ECORRUPT, "value chunk header is truncated");
	if (h->group == 0 || h->group > PD_CHUNKENC_MAX_SAMPLES || h->count > PD_CHUNKENC_MAX_SAMPLES ||
	    h->nframes != (h->count + h->group - 1) / h->group)
		return pd_err_set(err, PD_ECORRUPT,
				  "value chunk header is inconsistent (count %llu, group %llu, frames %llu)",
				  (unsigned long long)h->count, (unsigned long long)h->group,
				  (unsigned long long)h->nframes);
	h->table = pos;
	return 0;
}

/* encoding 2, any of its chunk bytes */
static int columnar(const uint8_t *chunk, size_t len)
{
	return len && v2_columnar_byte(chunk[0]);
}

int64_t pd_chunkenc_values_read_count(const uint8_t *chunk, size_t len, struct pd_err *err)
{
	if (columnar(chunk, len))
		return v2_read_count(chunk, len, err);
	struct header h;
	int rc = parse_header(chunk, len, &h, err);
	return rc ? rc : (int64_t)h.count;
}

int pd_chunkenc_values_read(const uint8_t *chunk, size_t len, size_t i, size_t max_profile,
			    uint8_t **out, size_t *out_len, struct pd_err *err)
{
	return pd_chunkenc_values_read_at(chunk, len, i, PD_CHUNKENC_NO_TS, max_profile, out,
					  out_len, err);
}

int pd_chunkenc_values_read_at(const uint8_t *chunk, size_t len, size_t i, int64_t ts,
			       size_t max_profile, uint8_t **out, size_t *out_len,
			       struct pd_err *err)
{
	if (columnar(chunk, len))
		return v2_read(chunk, len, i, ts, NULL, max_profile, out, out_len, err);
	struct header h;
	int rc = parse_header(chunk, len, &h, err);
	if (rc)
		return rc;
	if (i >= h.count)
		return pd_err_set(err, PD_ENOTFOUND, "profile %zu of a chunk of %llu", i,
				  (unsigned long long)h.count);
	uint64_t g = i / h.group, off = 0, flen = 0;
	size_t pos = h.table;
	for (uint64_t k = 0; k < h.nframes; k++) {
		uint64_t l;
		if (get_uvarint(chunk, len, &pos, &l))
			return pd_err_set(err, PD_ECORRUPT, "value chunk frame table is truncated");
		if (k < g)
			off += l;
		else if (k == g)
			flen = l;
	}
	if (off > len - pos || flen > len - pos - off)
		return pd_err_set(err, PD_ECORRUPT, "value chunk frame %llu lies past the end of the chunk",
				  (unsigned long long)g);
	/* the frame holds at most this many profiles, each at most max_profile bytes
	 * plus its length varint */
	uint64_t items = h.count - g * h.group < h.group ? h.count - g * h.group : h.group;
	size_t max = max_profile > (SIZE_MAX - 16) / items ? SIZE_MAX : (max_profile + 16) * items;
	struct v2_rcache *c = v2_rcache_take();
	if (!c)
		return pd_err_set(err, PD_ENOMEM, "out of memory reading a value chunk");
	if ((rc = decompress_frame(chunk + pos + off, flen, max, &c->graw, err)))
		goto out;
	const uint8_t *item;
	size_t ilen;
	if (group_item(c->graw.data, c->graw.len, i % h.group, &item, &ilen))
		rc = pd_err_set(err, PD_ECORRUPT, "value chunk: group %llu is damaged", (unsigned long long)g);
	else if (ilen > max_profile)
		rc = pd_err_set(err, PD_ETOOBIG, "profile of %zu bytes exceeds the limit of %zu", ilen,
				max_profile);
	else
		rc = copy_out(item, ilen, out, out_len, err);
out:
	v2_rcache_done(c);
	return rc;
}

/* ---- merging ------------------------------------------------------------------------ */

/* v1: each profile on its own. */
static int merge_each(const uint8_t *chunk, size_t len, const struct pd_chunkenc_values *c,
		      size_t from, size_t to, size_t max_profile, pd_chunkenc_merge_fn emit,
		      void *ctx, struct pd_err *err)
{
	for (size_t i = from; i < to; i++) {
		uint8_t *p;
		size_t n;
		int rc = c ? pd_chunkenc_values_get(c, i, &p, &n, err)
			   : pd_chunkenc_values_read(chunk, len, i, max_profile, &p, &n, err);
		if (rc == PD_ENOTFOUND)
			return 0;
		if (rc)
			return rc;
		struct pd_pprof_profile *prof;
		rc = pd_pprof_decode(&prof, p, n, NULL, err);
		free(p);
		if (rc || (rc = emit(ctx, prof, i, 1, n)))
			return rc;
	}
	return 0;
}

int pd_chunkenc_values_merge(const uint8_t *chunk, size_t len, size_t from, size_t to,
			     size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx,
			     struct pd_err *err)
{
	return pd_chunkenc_values_merge_at(chunk, len, from, to, NULL, max_profile, emit, ctx, err);
}

int pd_chunkenc_values_merge_at(const uint8_t *chunk, size_t len, size_t from, size_t to,
				const int64_t *ts, size_t max_profile, pd_chunkenc_merge_fn emit,
				void *ctx, struct pd_err *err)
{
	if (columnar(chunk, len))
		return v2_merge_sealed(chunk, len, from, to, ts, NULL, max_profile, emit, ctx, err);
	return merge_each(chunk, len, NULL, from, to, max_profile, emit, ctx, err);
}

int pd_chunkenc_values_merge_open(const struct pd_chunkenc_values *c, size_t from, size_t to,
				  size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx,
				  struct pd_err *err)
{
	return pd_chunkenc_values_merge_open_at(c, from, to, NULL, max_profile, emit, ctx, err);
}

int pd_chunkenc_values_merge_open_at(const struct pd_chunkenc_values *c, size_t from, size_t to,
				     const int64_t *ts, size_t max_profile,
				     pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err)
{
	if (c->v2)
		return v2_appender_merge(c->v2, from, to, ts, max_profile, emit, ctx, err);
	if (to > c->count)
		to = c->count;
	return merge_each(NULL, 0, c, from, to, max_profile, emit, ctx, err);
}
