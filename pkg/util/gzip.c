/* gzip.c: gzip compression and bounded decompression. Decompression stops
 * with an error as soon as the output passes the caller's limit, so a small
 * "gzip bomb" costs at most that limit in memory, and (pd_inflate) works in slices
 * that check a deadline and a cancel flag, so it never runs long past either. It
 * also reads HTTP's "deflate" (zlib or raw). Concatenated gzip members are
 * read as one stream, as Go's gzip reader does; anything else after a member is an
 * error. A thread keeps its compressor between calls: zlib's state is about
 * 270 KB, and setting it up afresh for every API response cost more than
 * compressing a 40 KB profile.
 *
 * Why two inflaters. A gzip body that is one whole member, whose trailer's ISIZE
 * says it inflates to at most the caller's max and FAST_MAX, is inflated by
 * libdeflate in one call into a buffer of exactly ISIZE bytes: on the corpus's Go
 * profiles that is 2.3-2.9 times as fast as zlib (bench/scrape.sh, section 1), and
 * every scraped profile, WAL replay and stored body read goes through here. zlib's
 * streaming inflater stays for everything the fast path cannot be sure of, and
 * answers exactly as before: ISIZE comes from the input and may lie either way, so
 * an ISIZE past the limits, an output that does not fit ISIZE, bytes after the
 * member (more members or garbage), a header CRC (libdeflate skips it unchecked),
 * bad data of any kind, a deadline already past or a cancel already set, and
 * "deflate" bodies (no size in their trailer) all go to zlib, whose errors are
 * the ones users see. libdeflate cannot be interrupted; FAST_MAX bounds how long
 * it runs past a deadline. One difference remains: libdeflate (1.14) reads some
 * streams RFC 1951 forbids where zlib refuses them (length symbols 286-287 and
 * distances 30-31, more than 286/30 code lengths, code-length repeats running
 * past them, the unused codeword of a one-symbol code); such a body still needs a
 * CRC-32 and ISIZE matching libdeflate's reading, so only one made on purpose
 * gets through, and never past max.
 *
 * A ratio limit (max_ratio) bounds the output by a multiple of the input's size,
 * so that what a body may cost in memory follows from its real size rather than
 * from the size it claims: Go's profiles inflate 2 to 3 times. */
#include "profd/util.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <zlib.h>

int pd_gzip_is(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
}

/* Output is produced in slices of this size at most, with the limits checked
 * after each: inflating a MiB takes about a millisecond. */
#define SLICE ((size_t)1 << 20)

static int64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The largest ISIZE the fast path takes. libdeflate inflates a whole buffer in
 * one call that checks no deadline or cancel flag: at the rate it inflates the
 * corpus's heap profiles (about 0.8 GB/s, bench/scrape.sh section 1) 16 MiB take
 * about 20 ms, a few times that on data made to be slow, so a call runs at most
 * tens of milliseconds past its deadline or a cancel, where zlib's 1 MiB slices
 * stop within about a millisecond. Go's profiles inflate to tens or hundreds of
 * KB. */
#define FAST_MAX ((size_t)16 << 20)

/* gzip's header flag FHCRC: a CRC-16 of the header follows it */
#define GZIP_FHCRC 0x02

static uint64_t fast_total;

uint64_t pd_inflate_fast_total(void)
{
	return __atomic_load_n(&fast_total, __ATOMIC_RELAXED);
}

/* Inflates buf with libdeflate when it is one gzip member whose ISIZE is within
 * max and FAST_MAX and whose output is exactly ISIZE bytes: 1 with *out (malloc'd,
 * the caller's) and *out_len set; 0 when the caller must go the zlib way, having
 * left nothing allocated. */
static int inflate_fast(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *out_len)
{
	/* 10 bytes of header, at least 2 of deflate stream, 8 of trailer */
	if (len < 20 || !pd_gzip_is(buf, len) || (buf[3] & GZIP_FHCRC))
		return 0;
	const uint8_t *t = buf + len - 4;
	size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
	if (isize > max || isize > FAST_MAX)
		return 0;
	/* a decompressor (about 12 KB) per call: one kept per thread measured no
	 * faster (bench/scrape.sh, section 1, "ld kept dec") */
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	uint8_t *o = d ? malloc(isize ? isize : 1) : NULL;
	if (!o) {
		libdeflate_free_decompressor(d);
		return 0;
	}
	size_t in_used = 0, n = 0;
	enum libdeflate_result r =
	    libdeflate_gzip_decompress_ex(d, buf, len, o, isize, &in_used, &n);
	libdeflate_free_decompressor(d);
	if (r != LIBDEFLATE_SUCCESS || in_used != len || n != isize) {
		free(o);
		return 0;
	}
	*out = o;
	*out_len = n;
	__atomic_add_fetch(&fast_total, 1, __ATOMIC_RELAXED);
	return 1;
}

/* zlib's window bits for o->format and the input's first bytes. */
static int window_bits(int format, const uint8_t *buf, size_t len)
{
	if (format == PD_INFLATE_GZIP)
		return 16 + MAX_WBITS;
	/* a zlib header: method 8, a window of at most 32 KiB, and a check value */
	if (len >= 2 && (buf[0] & 0x0f) == 8 && (buf[0] >> 4) <= 7 && ((buf[0] << 8) | buf[1]) % 31 == 0)
		return MAX_WBITS;
	return -MAX_WBITS;
}

int pd_inflate(const uint8_t *buf, size_t len, const struct pd_inflate_opts *o, uint8_t **out,
	       size_t *out_len, struct pd_err *err)
{
	z_stream zs = {0};
	struct pd_buf b;
	int rc = 0;
	size_t max = o->max;
	/* the ratio limit, when it is the tighter one: a body can then inflate to
	 * no more than a fixed multiple of what was sent */
	int by_ratio = 0;
	if (o->max_ratio && len <= max / o->max_ratio) {
		max = len * o->max_ratio;
		by_ratio = 1;
	}
	/* room for one byte past max, so that reaching it proves the stream is too big */
	size_t limit = max == SIZE_MAX ? max : max + 1;
	const char *what = o->format == PD_INFLATE_GZIP ? "gzip" : "deflate";

	*out = NULL;
	*out_len = 0;
	/* a cancel or deadline already past goes to zlib, which gives up after its
	 * first slice, as it always has */
	if (o->format == PD_INFLATE_GZIP && !o->zlib_only &&
	    !(o->cancel && __atomic_load_n(o->cancel, __ATOMIC_RELAXED)) &&
	    !(o->deadline_us && mono_us() >= o->deadline_us) && inflate_fast(buf, len, max, out, out_len))
		return 0;
	pd_buf_init(&b, limit);
	if (inflateInit2(&zs, window_bits(o->format, buf, len)) != Z_OK)
		return pd_err_set(err, PD_ENOMEM, "%s: cannot initialise zlib", what);
	const uint8_t *in = buf;
	size_t in_left = len;
	for (;;) {
		if (zs.avail_in == 0 && in_left) {
			uInt chunk = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
			zs.next_in = (Bytef *)in;
			zs.avail_in = chunk;
			in += chunk;
			in_left -= chunk;
		}
		if (b.len == b.cap) {
			size_t want = b.len < 64 * 1024 ? 64 * 1024 : b.len;
			if (want > limit - b.len)
				want = limit - b.len;
			if ((rc = pd_buf_reserve(&b, want))) {
				rc = pd_err_set(err, rc, "%s: cannot allocate %zu bytes", what, b.len + want);
				goto out;
			}
		}
		size_t room = b.cap - b.len;
		if (room > SLICE)
			room = SLICE;
		zs.next_out = b.data + b.len;
		zs.avail_out = (uInt)room;
		int z = inflate(&zs, Z_NO_FLUSH);
		b.len += room - zs.avail_out;
		if (b.len > max && by_ratio) {
			rc = pd_err_set(err, PD_ETOOBIG,
					"%s: decompressed size exceeds %u times the compressed size of %zu "
					"bytes (the decompression ratio limit)",
					what, o->max_ratio, len);
			goto out;
		}
		if (b.len > max) {
			rc = pd_err_set(err, PD_ETOOBIG, "%s: decompressed size exceeds the limit of %zu bytes",
					what, max);
			goto out;
		}
		if (z == Z_STREAM_END) {
			if (zs.avail_in == 0 && in_left == 0)
				break;
			const uint8_t *rest = zs.next_in;
			size_t rest_len = zs.avail_in + in_left;
			if (o->format != PD_INFLATE_GZIP || !pd_gzip_is(rest, rest_len)) {
				rc = pd_err_set(err, PD_ECORRUPT, "%s: %zu bytes of trailing data after the stream",
						what, rest_len);
				goto out;
			}
			inflateReset(&zs);
			continue;
		}
		if (z == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) {
			rc = pd_err_set(err, PD_ECORRUPT, "%s: stream is truncated (unexpected end of input)",
					what);
			goto out;
		}
		if (z != Z_OK && z != Z_BUF_ERROR) {
			rc = pd_err_set(err, PD_ECORRUPT, "%s: corrupt stream: %s", what,
					zs.msg ? zs.msg : "invalid data");
			goto out;
		}
		/* not done yet: a stream that ends within its first slice always
		 * completes, so small bodies are never given up on */
		if (o->cancel && __atomic_load_n(o->cancel, __ATOMIC_RELAXED)) {
			rc = pd_err_set(err, PD_EIO, "%s: cancelled after %zu bytes", what, b.len);
			goto out;
		}
		if (o->deadline_us && mono_us() >= o->deadline_us) {
			rc = pd_err_set(err, PD_EIO, "%s: gave up at the deadline after %zu bytes", what, b.len);
			goto out;
		}
	}
	inflateEnd(&zs);
	*out_len = b.len;
	*out = pd_buf_steal(&b, NULL);
	if (!*out && !(*out = malloc(1)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	return 0;
out:
	inflateEnd(&zs);
	pd_buf_fini(&b);
	return rc;
}

int pd_gunzip(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *out_len,
	      struct pd_err *err)
{
	struct pd_inflate_opts o = {.format = PD_INFLATE_GZIP, .max = max};
	return pd_inflate(buf, len, &o, out, out_len, err);
}

/* The thread's compressor, initialised at some level. */
struct deflater {
	z_stream zs;
	int level;
};

static pthread_key_t deflater_key;
static pthread_once_t deflater_once = PTHREAD_ONCE_INIT;
static int deflater_ok;

static void deflater_free(void *p)
{
	struct deflater *d = p;
	deflateEnd(&d->zs);
	free(d);
}

static void deflater_init(void)
{
	deflater_ok = pthread_key_create(&deflater_key, deflater_free) == 0;
}

/* The thread's compressor set up for level, reset; NULL when out of memory. It
 * is the caller's until deflater_done. */
static struct deflater *deflater_take(int level)
{
	pthread_once(&deflater_once, deflater_init);
	struct deflater *d = deflater_ok ? pthread_getspecific(deflater_key) : NULL;
	if (d) {
		pthread_setspecific(deflater_key, NULL);
		if (d->level == level && deflateReset(&d->zs) == Z_OK)
			return d;
		deflater_free(d);
	}
	if (!(d = calloc(1, sizeof(*d))))
		return NULL;
	if (deflateInit2(&d->zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(d);
		return NULL;
	}
	d->level = level;
	return d;
}

/* Keeps d for the thread's next call. */
static void deflater_done(struct deflater *d)
{
	if (!deflater_ok || pthread_setspecific(deflater_key, d))
		deflater_free(d);
}

int pd_gzip(const uint8_t *buf, size_t len, int level, uint8_t **out, size_t *out_len,
	    struct pd_err *err)
{
	if (len > UINT32_MAX)
		return pd_err_set(err, PD_ETOOBIG, "gzip: input of %zu bytes is too large", len);
	struct deflater *d = deflater_take(level);
	if (!d)
		return pd_err_set(err, PD_ENOMEM, "gzip: cannot initialise zlib");
	z_stream *zs = &d->zs;
	uLong bound = deflateBound(zs, (uLong)len);
	uint8_t *o = malloc(bound);
	if (!o) {
		deflater_done(d);
		return pd_err_set(err, PD_ENOMEM, "gzip: cannot allocate %lu bytes", bound);
	}
	zs->next_in = (Bytef *)buf;
	zs->avail_in = (uInt)len;
	zs->next_out = o;
	zs->avail_out = (uInt)bound;
	int z = deflate(zs, Z_FINISH);
	if (z != Z_STREAM_END) {
		deflater_free(d);
		free(o);
		return pd_err_set(err, PD_EINVAL, "gzip: compression failed");
	}
	*out_len = zs->total_out;
	*out = o;
	zs->next_in = NULL;
	zs->next_out = NULL;
	deflater_done(d);
	return 0;
}
