/* v2_frames.c: the zstd frames of columnar value chunks: compression and
 * decompression with the calling thread's contexts and scratch room, against a
 * prefix (an open chunk's frames against their group's anchor), a dictionary
 * (the tables frame) or nothing, with zstd blocks ended at given cuts; and the
 * thread's read cache, which keeps a read's buffers and delta state for the
 * next. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_forceAttachDict */
#include <zstd.h>

#include "v2_int.h"

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
int v2_compress_with(const uint8_t *raw, size_t len, int level, const uint8_t *prefix,
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
	return v2_compress_with(raw, len, level, NULL, 0, out, flen, err);
}

int v2_decompress(const uint8_t *f, size_t flen, size_t max, uint8_t **out, size_t *out_len,
		  const char *what, struct pd_err *err)
{
	return v2_decompress_with(f, flen, max, NULL, 0, out, out_len, what, err);
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

int v2_decompress_with(const uint8_t *f, size_t flen, size_t max, const uint8_t *prefix,
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
