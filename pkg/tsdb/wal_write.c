/* wal_write.c: the bytes the WAL writes: the commit payload encoder, the framing
 * of a payload as a record (type, flags, length, CRC32C; zstd when that saves
 * space), and the segment writer that appends records (one, or a group with one
 * pwritev and one fdatasync) to the current segment file, cuts new segments, and
 * cuts off the tail of a failed write. Layouts: wal_int.h and docs/format/wal.md. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#include "wal_int.h"

/* ---- varints --------------------------------------------------------------- */

static size_t uvarint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *uvarint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static uint64_t zigzag(int64_t v)
{
	uint64_t u = (uint64_t)v;
	return (u << 1) ^ (0 - (u >> 63));
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* ---- encoder --------------------------------------------------------------- */

void pd_wal_enc_init(struct pd_wal_enc *e, size_t max)
{
	pd_buf_init(&e->series, 0);
	pd_buf_init(&e->samples, 0);
	e->nseries = e->nsamples = 0;
	e->packed = 0;
	e->max = max;
	e->tombs = 0;
}

void pd_wal_enc_fini(struct pd_wal_enc *e)
{
	pd_buf_fini(&e->series);
	pd_buf_fini(&e->samples);
	e->nseries = e->nsamples = 0;
}

void pd_wal_enc_reset(struct pd_wal_enc *e)
{
	if (e->series.cap > PD_WAL_KEEP_BUF)
		pd_buf_fini(&e->series);
	if (e->samples.cap > PD_WAL_KEEP_BUF)
		pd_buf_fini(&e->samples);
	e->series.len = e->samples.len = 0;
	e->nseries = e->nsamples = 0;
	e->packed = 0;
	e->tombs = 0;
}

size_t pd_wal_enc_len(const struct pd_wal_enc *e)
{
	return uvarint_len(e->nseries) + e->series.len + uvarint_len(e->nsamples) +
	       e->samples.len;
}

/* Checks that a record grown by `add` bytes of series and `adds` of samples (one
 * more entry of that kind) stays within the limit. */
static int enc_fits(const struct pd_wal_enc *e, size_t add, int series, struct pd_err *err)
{
	size_t cur = e->series.len + e->samples.len;
	size_t counts = uvarint_len(e->nseries + (series ? 1 : 0)) +
			uvarint_len(e->nsamples + (series ? 0 : 1));
	if (add > e->max || cur > e->max - add || counts > e->max - add - cur)
		return pd_err_set(err, PD_ETOOBIG,
				  "WAL record would exceed the limit of %zu bytes; commit fewer "
				  "series and samples at once",
				  e->max);
	return 0;
}

int pd_wal_enc_series(struct pd_wal_enc *e, uint64_t ref, const struct pd_lpair *labels,
		      size_t n, struct pd_err *err)
{
	size_t need;
	int rc;

	if (n > PD_WAL_MAX_LABELS)
		return pd_err_set(err, PD_EINVAL, "series %llu has %zu labels, more than %d",
				  (unsigned long long)ref, n, PD_WAL_MAX_LABELS);
	if (n && !labels)
		return pd_err_set(err, PD_EINVAL, "series %llu: labels missing",
				  (unsigned long long)ref);
	need = uvarint_len(ref) + uvarint_len(n);
	for (size_t i = 0; i < n; i++) {
		if (!labels[i].name || !labels[i].value)
			return pd_err_set(err, PD_EINVAL, "series %llu: label %zu has no %s",
					  (unsigned long long)ref, i, labels[i].name ? "value" : "name");
		if (i > 0 && strcmp(labels[i - 1].name, labels[i].name) >= 0)
			return pd_err_set(err, PD_EINVAL,
					  "series %llu: labels not sorted by name or name \"%s\" repeated",
					  (unsigned long long)ref, labels[i].name);
		size_t nl = strlen(labels[i].name), vl = strlen(labels[i].value);
		size_t add = uvarint_len(nl) + nl + uvarint_len(vl) + vl;
		if (add > SIZE_MAX - need)
			return pd_err_set(err, PD_ETOOBIG, "series %llu: labels too large",
					  (unsigned long long)ref);
		need += add;
	}
	if ((rc = enc_fits(e, need, 1, err)))
		return rc;
	if ((rc = pd_buf_reserve(&e->series, need)))
		return pd_err_set(err, rc, "WAL record: cannot allocate %zu bytes", need);
	uint8_t *p = e->series.data + e->series.len;
	p = uvarint_put(p, ref);
	p = uvarint_put(p, n);
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(labels[i].name), vl = strlen(labels[i].value);
		p = uvarint_put(p, nl);
		memcpy(p, labels[i].name, nl);
		p += nl;
		p = uvarint_put(p, vl);
		memcpy(p, labels[i].value, vl);
		p += vl;
	}
	e->series.len += need;
	e->nseries++;
	return 0;
}

int pd_wal_enc_sample(struct pd_wal_enc *e, uint64_t ref, int64_t t, const uint8_t *p,
		      size_t len, struct pd_err *err)
{
	size_t need;
	int rc;

	if (len && !p)
		return pd_err_set(err, PD_EINVAL, "sample of series %llu: no bytes",
				  (unsigned long long)ref);
	if (e->tombs)
		return pd_err_set(err, PD_EINVAL, "a WAL record holds samples or tombstones, not both");
	need = uvarint_len(ref) + uvarint_len(zigzag(t)) + uvarint_len(len);
	if (len > SIZE_MAX - need)
		return pd_err_set(err, PD_ETOOBIG, "sample too large");
	need += len;
	if ((rc = enc_fits(e, need, 0, err)))
		return rc;
	if ((rc = pd_buf_reserve(&e->samples, need)))
		return pd_err_set(err, rc, "WAL record: cannot allocate %zu bytes", need);
	uint8_t *q = e->samples.data + e->samples.len;
	q = uvarint_put(q, ref);
	q = uvarint_put(q, zigzag(t));
	q = uvarint_put(q, len);
	if (len)
		memcpy(q, p, len);
	e->samples.len += need;
	e->nsamples++;
	if (len >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		e->packed += len;
	return 0;
}

int pd_wal_enc_tombstone(struct pd_wal_enc *e, uint64_t ref, int64_t mint, int64_t maxt,
			 struct pd_err *err)
{
	size_t need;
	int rc;

	if (e->nsamples && !e->tombs)
		return pd_err_set(err, PD_EINVAL, "a WAL record holds samples or tombstones, not both");
	if (mint > maxt)
		return pd_err_set(err, PD_EINVAL, "tombstone of series %llu: mint %lld after maxt %lld",
				  (unsigned long long)ref, (long long)mint, (long long)maxt);
	need = uvarint_len(ref) + uvarint_len(zigzag(mint)) + uvarint_len(zigzag(maxt));
	if ((rc = enc_fits(e, need, 0, err)))
		return rc;
	if ((rc = pd_buf_reserve(&e->samples, need)))
		return pd_err_set(err, rc, "WAL record: cannot allocate %zu bytes", need);
	uint8_t *q = e->samples.data + e->samples.len;
	q = uvarint_put(q, ref);
	q = uvarint_put(q, zigzag(mint));
	q = uvarint_put(q, zigzag(maxt));
	e->samples.len += need;
	e->nsamples++;
	e->tombs = 1;
	return 0;
}

/* ---- segment writer -------------------------------------------------------- */

const uint8_t pd_wal_seg_header[PD_WAL_SEG_HDR] = {'P', 'D', 'W', 'L', PD_WAL_VERSION, 0, 0, 0};

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int pd_wal_segw_init(struct pd_wal_segw *s, const char *dir, size_t segment_size, int sync,
		     struct pd_err *err)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->segment_size = segment_size ? segment_size : PD_WAL_DEFAULT_SEGMENT;
	s->sync = sync;
	s->sync_on_finish = sync == PD_WAL_SYNC_COMMIT;
	pd_buf_init(&s->rec, 0);
	pd_buf_init(&s->zbuf, 0);
	if (!(s->dir = strdup(dir)) || !(s->cctx = ZSTD_createCCtx())) {
		pd_wal_segw_fini(s);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	return 0;
}

int pd_wal_segw_finish(struct pd_wal_segw *s, int sync, struct pd_err *err)
{
	int rc = 0;
	if (s->fd < 0)
		return 0;
	if (sync && fdatasync(s->fd) != 0)
		rc = pd_err_set(err, PD_EIO, "%s/%08u: fsync: %s", s->dir, s->num, strerror(errno));
	close(s->fd);
	s->fd = -1;
	return rc;
}

void pd_wal_segw_fini(struct pd_wal_segw *s)
{
	pd_wal_segw_finish(s, s->sync_on_finish, NULL);
	ZSTD_freeCCtx(s->cctx);
	s->cctx = NULL;
	free(s->dir);
	s->dir = NULL;
	pd_buf_fini(&s->rec);
	pd_buf_fini(&s->zbuf);
}

int pd_wal_segw_create(struct pd_wal_segw *s, uint32_t num, struct pd_err *err)
{
	char *path = NULL;
	int fd = -1, rc;

	if (num == 0)
		return pd_err_set(err, PD_EINVAL, "%s: segment numbers are exhausted", s->dir);
	/* everything before the new segment is complete first */
	if (s->fd >= 0 && s->sync_on_finish && fdatasync(s->fd) != 0)
		return pd_err_set(err, PD_EIO, "%s/%08u: fsync: %s", s->dir, s->num,
				  strerror(errno));
	if (!(path = pd_wal_seg_path(s->dir, num)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = pd_err_set(err, PD_EIO, "%s: create: %s", path, strerror(errno));
		free(path);
		return rc;
	}
	if (pwrite_all(fd, pd_wal_seg_header, PD_WAL_SEG_HDR, 0) != 0 || fsync(fd) != 0) {
		rc = pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if ((rc = pd_wal_fsync_dir(s->dir, err)))
		goto fail;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = fd;
	s->num = num;
	s->off = PD_WAL_SEG_HDR;
	s->dirty = 0;
	s->added += PD_WAL_SEG_HDR;
	free(path);
	return 0;
fail:
	close(fd);
	unlink(path);
	free(path);
	return rc;
}

int pd_wal_segw_resume(struct pd_wal_segw *s, uint32_t num, int fd, uint64_t size)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = fd;
	s->num = num;
	s->off = size;
	s->dirty = 0;
	return 0;
}

/* Cuts off whatever a failed write left past the last complete record. */
static void cut_back(struct pd_wal_segw *s)
{
	if (ftruncate(s->fd, (off_t)s->off) != 0)
		s->dirty = 1;
}

/* One zstd compression context per thread, reused: committers frame their records
 * on their own threads, and setting a context up costs more than a small record. */
static pthread_key_t cctx_key;
static pthread_once_t cctx_once = PTHREAD_ONCE_INIT;

static void cctx_free(void *p)
{
	ZSTD_freeCCtx(p);
}

static void cctx_init(void)
{
	pthread_key_create(&cctx_key, cctx_free);
}

void *pd_wal_thread_cctx(void)
{
	pthread_once(&cctx_once, cctx_init);
	ZSTD_CCtx *c = pthread_getspecific(cctx_key);
	if (!c && (c = ZSTD_createCCtx()) && pthread_setspecific(cctx_key, c) != 0) {
		ZSTD_freeCCtx(c);
		c = NULL;
	}
	return c;
}

int pd_wal_frame(const struct pd_wal_enc *e, void *cctx, struct pd_buf *out, struct pd_buf *scratch,
		 struct pd_err *err)
{
	size_t raw = pd_wal_enc_len(e), stored;
	uint8_t flags = 0, *rec, *p;
	int rc;

	if (raw > PD_WAL_RECORD_LIMIT)
		return pd_err_set(err, PD_ETOOBIG, "WAL record of %zu bytes exceeds the limit of %zu",
				  raw, PD_WAL_RECORD_LIMIT);
	out->len = 0;
	if ((rc = pd_buf_reserve(out, PD_WAL_REC_HDR + raw)))
		return pd_err_set(err, rc, "WAL record: cannot allocate %zu bytes", raw);
	rec = out->data;
	p = rec + PD_WAL_REC_HDR;
	p = uvarint_put(p, e->nseries);
	if (e->series.len)
		memcpy(p, e->series.data, e->series.len);
	p += e->series.len;
	p = uvarint_put(p, e->nsamples);
	if (e->samples.len)
		memcpy(p, e->samples.data, e->samples.len);
	stored = raw;

	/* a payload made mostly of gzip streams would not shrink: not tried */
	if (raw >= PD_WAL_COMPRESS_MIN && cctx && e->packed <= raw / 2) {
		size_t bound = ZSTD_compressBound(raw);
		scratch->len = 0;
		/* without the memory, the record is stored uncompressed */
		if (pd_buf_reserve(scratch, bound) == 0) {
			int level = e->samples.len >= raw / 2 ? PD_WAL_ZSTD_LEVEL_SAMPLES
							      : PD_WAL_ZSTD_LEVEL;
			size_t c = ZSTD_compressCCtx(cctx, scratch->data, bound, rec + PD_WAL_REC_HDR,
						     raw, level);
			if (!ZSTD_isError(c) && c < raw) {
				memcpy(rec + PD_WAL_REC_HDR, scratch->data, c);
				stored = c;
				flags |= PD_WAL_FLAG_ZSTD;
			}
		}
	}
	rec[0] = e->tombs ? PD_WAL_REC_TOMBSTONES : PD_WAL_REC_COMMIT;
	rec[1] = flags;
	put_be32(rec + 2, (uint32_t)stored);
	uint32_t crc = pd_crc32c(0, rec, 6);
	crc = pd_crc32c(crc, rec + PD_WAL_REC_HDR, stored);
	put_be32(rec + 6, crc);
	out->len = PD_WAL_REC_HDR + stored;
	return 0;
}

/* pwritev until every byte of iov is written; iov is consumed (changed). */
static int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwritev(fd, iov, n > PD_WAL_GROUP_MAX ? PD_WAL_GROUP_MAX : n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		off += (uint64_t)w;
		size_t left = (size_t)w;
		while (n > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0 && left) {
			iov->iov_base = (uint8_t *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return 0;
}

int pd_wal_segw_put(struct pd_wal_segw *s, struct iovec *iov, int n, struct pd_err *err)
{
	if (s->fd < 0)
		return pd_err_set(err, PD_EIO, "%s: no segment open", s->dir);
	if (s->dirty) {
		if (ftruncate(s->fd, (off_t)s->off) != 0)
			return pd_err_set(err, PD_EIO, "%s/%08u: cannot cut off a failed write: %s",
					  s->dir, s->num, strerror(errno));
		s->dirty = 0;
	}
	if (pwritev_all(s->fd, iov, n, s->off) != 0) {
		int rc = pd_err_set(err, PD_EIO, "%s/%08u: write: %s", s->dir, s->num,
				    strerror(errno));
		cut_back(s);
		return rc;
	}
	return 0;
}

int pd_wal_segw_settle(struct pd_wal_segw *s, size_t total, int nosync, int *synced,
			struct pd_err *err)
{
	*synced = 0;
	if (s->sync == PD_WAL_SYNC_COMMIT && !nosync) {
		*synced = 1;
		if (fdatasync(s->fd) != 0) {
			int rc = pd_err_set(err, PD_EIO, "%s/%08u: fsync: %s", s->dir, s->num,
					    strerror(errno));
			cut_back(s);
			return rc;
		}
	}
	s->off += total;
	s->added += total;
	return 0;
}

int pd_wal_segw_write(struct pd_wal_segw *s, const struct pd_wal_enc *e, struct pd_err *err)
{
	struct iovec iov;
	int rc, synced;

	if (s->fd < 0)
		return pd_err_set(err, PD_EIO, "%s: no segment open", s->dir);
	if ((rc = pd_wal_frame(e, s->cctx, &s->rec, &s->zbuf, err)))
		goto done;
	if (s->off > PD_WAL_SEG_HDR && s->off + s->rec.len > s->segment_size &&
	    (rc = pd_wal_segw_create(s, s->num + 1, err)))
		goto done;
	iov.iov_base = s->rec.data;
	iov.iov_len = s->rec.len;
	if ((rc = pd_wal_segw_put(s, &iov, 1, err)) == 0)
		rc = pd_wal_segw_settle(s, s->rec.len, 0, &synced, err);
done:
	if (s->rec.cap > PD_WAL_KEEP_BUF)
		pd_buf_fini(&s->rec);
	if (s->zbuf.cap > PD_WAL_KEEP_BUF)
		pd_buf_fini(&s->zbuf);
	return rc;
}
