/* v2_chunk.c: the columnar value chunk (encoding 2) as a whole: an appender that
 * decomposes each profile into the chunk's tables and a record, compressing
 * records group by group as groups fill (so that an open chunk in the head holds
 * its tables, compressed groups and one open group, never a queue of raw
 * profiles), and the reader of sealed chunks, which decompresses the tables and
 * one group to rebuild one profile.
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
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_forceAttachDict */
#include <zstd.h>

#include "v2_int.h"

struct v2_appender {
	unsigned group; /* records per sealed group; delta coding restarts at each */
	unsigned hgroup; /* records per frame while the chunk is open (divides group) */
	int level;
	size_t count;
	struct v2_tables t;
	struct v2_prev prev;
	struct pd_buf frames; /* compressed frames of hgroup records kept in memory, back to back */
	size_t *frame_len;
	/* where frame k is: FRAME_IN_MEMORY (in frames, after the frames before it
	 * that are in memory too) or its ref in fs */
	uint64_t *frame_ref;
	size_t nframes, frame_cap;
	/* where full frames go (NULL: memory). A busy Prometheus's heap series holds
	 * about 3 KB of compressed records a scrape: 52 KB of each series' heap after
	 * 17 scrapes, with the frames in memory (bench/daemon.sh, busy corpus) */
	const struct pd_chunkenc_frame_store *fs;
	struct pd_buf open; /* records of the open frame (fewer than hgroup), while an
			     * append codes them or when parking them failed */
	/* between appends, the open frame's records compressed as a frame of their own
	 * (against the group's anchor, as a full frame is): parked. Kept raw, the one
	 * open record of a busy program's heap profile (about 12 KB) was a tenth of
	 * what profd held per series (bench/daemon.sh, busy corpus) */
	uint8_t *parked;
	size_t parked_len;
	/* between appends, prev's packed values compressed (prev.packed NULL then):
	 * a busy Prometheus's heap series keeps about 8 KB of them, the largest part
	 * of its open chunk on the heap once its frames are in a frame store */
	uint8_t *prevz;
	size_t prevz_len;
	unsigned open_count;
	int broken; /* the delta state could not be rebuilt after a failure */
	int added;  /* the last record added to the shared tables (see encode_record) */
	int rel;    /* times relative to the samples' timestamps (set by the first append) */
	/* at least the repeats among each group's records (grep[g]; a group past
	 * ngrep has none): a group of fewer than two has no run to look for at the
	 * seal. grep_all: a count was lost (out of memory), look in every group */
	uint16_t *grep;
	size_t ngrep;
	int grep_all;
	struct v2_symbols *sym; /* shared tables, or NULL for the appender's own t */
};

#define FRAME_IN_MEMORY UINT64_MAX

/* Tables that many appenders share (a head's open chunks): appenders add to them
 * under the write lock and read them under the read lock. */
struct v2_symbols {
	struct v2_tables t;
	pthread_rwlock_t mu;
	unsigned refs;
};

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

/* ---- zstd ------------------------------------------------------------------------ */

/* The thread's scratch room for a frame being compressed: the frame is then
 * appended to its output, which grows by exactly its size. The output is
 * long-lived (an open chunk's frames); growing it by doubling and shrinking it back
 * after every frame left holes in the heap that the allocator kept. */
struct zscratch {
	uint8_t *p;
	size_t cap;
};

static pthread_key_t cctx_key, dctx_key, zs_key, rcache_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static int rcache_ok;

/* Past these, a read's buffers are freed rather than kept. */
#define RCACHE_MAX_BUF ((size_t)4 << 20)

static void cctx_free(void *p) { ZSTD_freeCCtx(p); }
static void dctx_free(void *p) { ZSTD_freeDCtx(p); }

static void zs_free(void *p)
{
	struct zscratch *z = p;
	if (z)
		free(z->p);
	free(z);
}

static void rcache_free(void *p)
{
	struct v2_rcache *c = p;
	if (!c)
		return;
	pd_buf_fini(&c->traw);
	pd_buf_fini(&c->graw);
	v2_prev_fini(&c->prev);
	free(c);
}

static void ctx_init(void)
{
	pthread_key_create(&cctx_key, cctx_free);
	pthread_key_create(&dctx_key, dctx_free);
	pthread_key_create(&zs_key, zs_free);
	rcache_ok = pthread_key_create(&rcache_key, rcache_free) == 0;
}

struct v2_rcache *v2_rcache_take(void)
{
	pthread_once(&ctx_once, ctx_init);
	struct v2_rcache *c = rcache_ok ? pthread_getspecific(rcache_key) : NULL;
	if (c) {
		pthread_setspecific(rcache_key, NULL);
		return c;
	}
	if ((c = calloc(1, sizeof(*c)))) {
		pd_buf_init(&c->traw, 0);
		pd_buf_init(&c->graw, 0);
	}
	return c;
}

void v2_rcache_done(struct v2_rcache *c)
{
	if (c->traw.cap > RCACHE_MAX_BUF) {
		pd_buf_fini(&c->traw);
		pd_buf_init(&c->traw, 0);
	}
	if (c->graw.cap > RCACHE_MAX_BUF) {
		pd_buf_fini(&c->graw);
		pd_buf_init(&c->graw, 0);
	}
	if (c->prev.drows * (c->prev.dcols ? c->prev.dcols : 1) > RCACHE_MAX_BUF / 8 ||
	    c->prev.sstack_cap > RCACHE_MAX_BUF / 4 || c->prev.svals_cap > RCACHE_MAX_BUF / 8) {
		v2_prev_fini(&c->prev);
	}
	if (!rcache_ok || pthread_setspecific(rcache_key, c))
		rcache_free(c);
}

/* The calling thread's zstd compression context (made on first use), or NULL when
 * out of memory. */
static ZSTD_CCtx *thread_cctx(void)
{
	pthread_once(&ctx_once, ctx_init);
	ZSTD_CCtx *c = pthread_getspecific(cctx_key);
	if (!c && (c = ZSTD_createCCtx()))
		pthread_setspecific(cctx_key, c);
	return c;
}

/* As v2_compress, with prefix (raw bytes, may be NULL) as the frame's dictionary:
 * the open chunk compresses each frame of records against the frame before it. */
static int compress_with(const uint8_t *raw, size_t len, int level, const uint8_t *prefix,
			 size_t plen, struct pd_buf *out, size_t *flen, struct pd_err *err)
{
	ZSTD_CCtx *c = thread_cctx();
	struct zscratch *z = pthread_getspecific(zs_key);
	if (!z && (z = calloc(1, sizeof(*z))))
		pthread_setspecific(zs_key, z);
	size_t bound = ZSTD_compressBound(len);
	if (!c || !z)
		return pd_err_set(err, PD_ENOMEM, "out of memory compressing a value chunk");
	if (bound > z->cap) {
		uint8_t *np = realloc(z->p, bound);
		if (!np)
			return pd_err_set(err, PD_ENOMEM, "out of memory compressing a value chunk");
		z->p = np;
		z->cap = bound;
	}
	size_t n = ZSTD_compress_usingDict(c, z->p, bound, raw, len, prefix, plen, level);
	if (ZSTD_isError(n))
		return pd_err_set(err, PD_EINVAL, "zstd: %s", ZSTD_getErrorName(n));
	if (out->len + n > out->cap) {
		uint8_t *d = realloc(out->data, out->len + n);
		if (!d)
			return pd_err_set(err, PD_ENOMEM, "out of memory compressing a value chunk");
		out->data = d;
		out->cap = out->len + n;
	}
	memcpy(out->data + out->len, z->p, n);
	out->len += n;
	*flen = n;
	/* a large scratch (a big profile) is not kept */
	if (z->cap > ((size_t)1 << 20)) {
		free(z->p);
		z->p = NULL;
		z->cap = 0;
	}
	return 0;
}

static int decompress_with(const uint8_t *f, size_t flen, size_t max, const uint8_t *prefix,
			   size_t plen, uint8_t **out, size_t *out_len, const char *what,
			   struct pd_err *err);

int v2_compress_cut(const uint8_t *raw, size_t len, int level, const size_t *cuts, size_t ncuts,
		    struct pd_buf *out, size_t *flen, struct pd_err *err)
{
	return v2_compress_cut_dict(raw, len, level, V2_DICT_NONE, cuts, ncuts, out, flen, err);
}

int v2_compress_cut_dict(const uint8_t *raw, size_t len, int level, unsigned dict,
			 const size_t *cuts, size_t ncuts, struct pd_buf *out, size_t *flen,
			 struct pd_err *err)
{
	ZSTD_CCtx *c = thread_cctx();
	const ZSTD_CDict *cd = dict != V2_DICT_NONE ? v2_dict_cdict(dict, level) : NULL;
	if (!c || (dict != V2_DICT_NONE && !cd))
		return pd_err_set(err, PD_ENOMEM, "out of memory compressing a value chunk");
	/* a block header for each part and room for a part left uncompressed */
	size_t bound = ZSTD_compressBound(len) + (ncuts + 1) * 16, at = 0;
	uint8_t *z = malloc(bound);
	if (!z)
		return pd_err_set(err, PD_ENOMEM, "out of memory compressing a value chunk");
	ZSTD_outBuffer ob = {z, bound, 0};
	size_t r = ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(r) && cd)
		r = ZSTD_CCtx_refCDict(c, cd);
	/* the dictionary's tables are searched where they are, never copied into
	 * the context: a copy of its 3.3 MB for each tables frame had doubled the
	 * time of a heap chunk's seal (7.1 ms instead of 3.1) */
	if (!ZSTD_isError(r) && cd)
		r = ZSTD_CCtx_setParameter(c, ZSTD_c_forceAttachDict, ZSTD_dictForceAttach);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setPledgedSrcSize(c, len);
	for (size_t k = 0; k <= ncuts && !ZSTD_isError(r); k++) {
		size_t end = k < ncuts && cuts[k] < len ? cuts[k] : len;
		if (end < at)
			end = at;
		ZSTD_inBuffer ib = {raw + at, end - at, 0};
		ZSTD_EndDirective d = k < ncuts ? ZSTD_e_flush : ZSTD_e_end;
		do
			r = ZSTD_compressStream2(c, &ob, &ib, d);
		while (!ZSTD_isError(r) && r != 0 && ob.pos < ob.size);
		if (!ZSTD_isError(r) && r != 0)
			r = (size_t)-1; /* out of room: cannot happen with the bound above */
		at = end;
	}
	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	if (ZSTD_isError(r)) {
		free(z);
		return pd_err_set(err, PD_EINVAL, "zstd: %s", ZSTD_getErrorName(r));
	}
	if (pd_buf_append(out, z, ob.pos)) {
		free(z);
		return pd_err_set(err, PD_ENOMEM, "out of memory compressing a value chunk");
	}
	free(z);
	*flen = ob.pos;
	return 0;
}

int v2_compress(const uint8_t *raw, size_t len, int level, struct pd_buf *out, size_t *flen,
		struct pd_err *err)
{
	return compress_with(raw, len, level, NULL, 0, out, flen, err);
}

int v2_decompress(const uint8_t *f, size_t flen, size_t max, uint8_t **out, size_t *out_len,
		  const char *what, struct pd_err *err)
{
	return decompress_with(f, flen, max, NULL, 0, out, out_len, what, err);
}

/* The content size of zstd frame f, checked against max. */
static int frame_size(const uint8_t *f, size_t flen, size_t max, const char *what,
		      unsigned long long *size, struct pd_err *err)
{
	*size = ZSTD_getFrameContentSize(f, flen);
	if (*size == ZSTD_CONTENTSIZE_ERROR || *size == ZSTD_CONTENTSIZE_UNKNOWN)
		return pd_err_set(err, PD_ECORRUPT, "value chunk: %s is not a valid zstd frame", what);
	if (*size > max)
		return pd_err_set(err, PD_ETOOBIG, "value chunk: %s of %llu bytes exceeds the limit of %zu",
				  what, *size, max);
	return 0;
}

/* The calling thread's decompression context (kept until the thread ends); NULL
 * without memory. */
static ZSTD_DCtx *thread_dctx(void)
{
	pthread_once(&ctx_once, ctx_init);
	ZSTD_DCtx *d = pthread_getspecific(dctx_key);
	if (!d && (d = ZSTD_createDCtx()))
		pthread_setspecific(dctx_key, d);
	return d;
}

int v2_decompress_buf(const uint8_t *f, size_t flen, size_t max, struct pd_buf *b,
		      const char *what, struct pd_err *err)
{
	return v2_decompress_buf_dict(f, flen, max, V2_DICT_NONE, b, what, err);
}

int v2_group_bytes(const uint8_t *f, size_t flen, size_t max, int raw_ok, struct pd_buf *b,
		   struct pd_err *err)
{
	if (raw_ok && !v2_is_zstd(f, flen)) {
		b->len = 0;
		if (flen > max)
			return pd_err_set(err, PD_ETOOBIG,
					  "value chunk: group of %zu bytes exceeds the limit of %zu", flen,
					  max);
		if (pd_buf_append(b, f, flen))
			return pd_err_set(err, PD_ENOMEM, "out of memory reading a value chunk");
		return 0;
	}
	return v2_decompress_buf(f, flen, max, b, "group frame", err);
}

int v2_decompress_buf_dict(const uint8_t *f, size_t flen, size_t max, unsigned dict,
			   struct pd_buf *b, const char *what, struct pd_err *err)
{
	b->len = 0;
	unsigned long long size;
	int rc = frame_size(f, flen, max, what, &size, err);
	if (rc)
		return rc;
	ZSTD_DCtx *d = thread_dctx();
	const ZSTD_DDict *dd = dict != V2_DICT_NONE ? v2_dict_ddict(dict) : NULL;
	if (!d || pd_buf_reserve(b, size ? (size_t)size : 1) || (dict != V2_DICT_NONE && !dd))
		return pd_err_set(err, PD_ENOMEM, "out of memory decompressing %llu bytes", size);
	size_t n = dd ? ZSTD_decompress_usingDDict(d, b->data, (size_t)size, f, flen, dd)
		      : ZSTD_decompressDCtx(d, b->data, (size_t)size, f, flen);
	if (ZSTD_isError(n) || n != size)
		return pd_err_set(err, PD_ECORRUPT, "value chunk: %s: %s", what,
				  ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short frame");
	b->len = n;
	return 0;
}

static int decompress_with(const uint8_t *f, size_t flen, size_t max, const uint8_t *prefix,
			   size_t plen, uint8_t **out, size_t *out_len, const char *what,
			   struct pd_err *err)
{
	unsigned long long size;
	*out = NULL;
	int rc = frame_size(f, flen, max, what, &size, err);
	if (rc)
		return rc;
	ZSTD_DCtx *d = thread_dctx();
	*out = malloc(size ? (size_t)size : 1);
	if (!d || !*out) {
		free(*out);
		*out = NULL;
		return pd_err_set(err, PD_ENOMEM, "out of memory decompressing %llu bytes", size);
	}
	size_t n = prefix && plen
		       ? ZSTD_decompress_usingDict(d, *out, (size_t)size, f, flen, prefix, plen)
		       : ZSTD_decompressDCtx(d, *out, (size_t)size, f, flen);
	if (ZSTD_isError(n) || n != size) {
		free(*out);
		*out = NULL;
		return pd_err_set(err, PD_ECORRUPT, "value chunk: %s: %s", what,
				  ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short frame");
	}
	*out_len = n;
	return 0;
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
static int appender_records(const struct v2_appender *a, size_t from, size_t to,
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
		rc = decompress_with(f, flen, SIZE_MAX / 2, first ? NULL : out->data + anchor_at,
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
	return appender_records(a, anchor, anchor + a->hgroup, prior, err);
}

/* Unparks the open frame into a->open (see struct v2_appender). */
static int open_unpark(struct v2_appender *a, const struct pd_buf *prior, struct pd_err *err)
{
	if (!a->parked_len)
		return 0;
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	int rc = decompress_with(a->parked, a->parked_len, SIZE_MAX / 2,
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
	if (compress_with(a->open.data, a->open.len, a->level, prior->len ? prior->data : NULL,
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
	int rc = appender_records(a, from, a->count, &recs, &err);
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
	int rc = decompress_with(a->prevz, a->prevz_len, SIZE_MAX / 2, NULL, 0, &raw, &rawlen,
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
	if (compress_with(a->prev.packed, a->prev.packed_len, 1, NULL, 0, &z, &zlen, &e) == 0 &&
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
		rc = compress_with(a->open.data, a->open.len, a->level,
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
		rc = compress_with(a->open.data, a->open.len, a->level,
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
static int group_record(const struct v2_tables *t, struct v2_prev *prev, int rel, int64_t ts,
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
	int rc = appender_records(a, from, i + 1, &recs, err);
	struct v2_rcache *c = rc ? NULL : v2_rcache_take();
	if (!rc && !c)
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	if (!rc) {
		rdlock(a);
		rc = group_record(tables_of(a), &c->prev, a->rel, ts, NULL, from, recs.data, recs.len,
				  i - from, SIZE_MAX, out, out_len, err);
		unlock(a);
	}
	if (c)
		v2_rcache_done(c);
	pd_buf_fini(&recs);
	return rc;
}

/* The records of every group of the appender, decompressed, back to back in
 * recs; group g from goff[g] to goff[g + 1]. */
static int appender_groups(const struct v2_appender *a, size_t ngroups, struct pd_buf *recs,
			   size_t *goff, struct pd_err *err)
{
	for (size_t g = 0; g < ngroups; g++) {
		size_t from = g * a->group, to = from + a->group < a->count ? from + a->group : a->count;
		goff[g] = recs->len;
		int rc = appender_records(a, from, to, recs, err);
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
	rc = group_record(&t, &c->prev, h.rel, ts, sums, (size_t)(g * h.group), c->graw.data,
			  c->graw.len, i % h.group, max_profile, out, out_len, err);
out:
	v2_rcache_done(c);
	v2_tables_fini(&t);
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
		if ((rc = appender_records(a, base, end, &recs, err)) == 0)
			rc = v2_merge_group(m, recs.data, recs.len, base, from, to, a->rel ? ts : NULL,
					    a->rel, NULL, max_profile, emit, ctx, err);
	}
	pd_buf_fini(&recs);
	int r2 = v2_merge_end(m, !rc, emit, ctx, err);
	unlock(a);
	return rc ? rc : r2;
}
