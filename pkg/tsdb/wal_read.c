/* wal_read.c: reading the WAL back: segment files record by record (framing,
 * CRC32C, zstd, and a bounds-checked decoder for commit payloads, which are
 * outside input), and pd_wal_replay, which reads the newest checkpoint and then
 * the segments after it. Damage is skipped: reading resumes at the next intact
 * record, and only a torn tail (damage that runs to the end of the last segment)
 * is cut off, so that the WAL again ends in a whole commit. A record is checked whole before any
 * of its series or samples is handed out. Layouts: docs/format/wal.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "wal_int.h"

#define READ_WINDOW ((size_t)1 << 20)

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EIO; /* the file shrank under us */
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* ---- segment reader -------------------------------------------------------- */

/* Reads a segment file through a window of at least READ_WINDOW bytes. */
struct segr {
	int fd;
	uint64_t size;
	uint64_t wbase; /* file offset of win.data[0] */
	struct pd_buf win;
};

/* Points *out at the n bytes at off (off + n <= size), valid until the next call. */
static int segr_get(struct segr *r, uint64_t off, size_t n, const uint8_t **out)
{
	if (r->win.len && off >= r->wbase && n <= r->win.len && off - r->wbase <= r->win.len - n) {
		*out = r->win.data + (off - r->wbase);
		return 0;
	}
	size_t want = n > READ_WINDOW ? n : READ_WINDOW;
	if (want > r->size - off)
		want = (size_t)(r->size - off);
	r->win.len = 0;
	if (want > r->win.cap) {
		pd_buf_fini(&r->win);
		if (pd_buf_reserve(&r->win, want))
			return PD_ENOMEM;
	}
	if (want && pread_all(r->fd, r->win.data, want, off) != 0)
		return PD_EIO;
	r->wbase = off;
	r->win.len = want;
	*out = r->win.data + 0;
	return 0;
}

/* ---- commit payload decoder ------------------------------------------------ */

/* A cursor over payload bytes with a sticky error (the first problem found). */
struct dec {
	const uint8_t *p;
	size_t len, pos;
	const char *err;
};

static uint64_t dec_uvarint(struct dec *d)
{
	uint64_t r = 0;
	if (d->err)
		return 0;
	for (unsigned i = 0; i < 10; i++) {
		if (d->pos >= d->len) {
			d->err = "payload ends inside a varint";
			return 0;
		}
		uint8_t b = d->p[d->pos++];
		if (i == 9 && b > 1) {
			d->err = "varint overflows 64 bits";
			return 0;
		}
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return r;
	}
	return 0; /* not reached: the tenth byte has no continuation bit */
}

static const uint8_t *dec_bytes(struct dec *d, uint64_t n)
{
	if (d->err)
		return NULL;
	if (n > d->len - d->pos) {
		d->err = "length runs past the end of the payload";
		return NULL;
	}
	const uint8_t *r = d->p + d->pos;
	d->pos += (size_t)n;
	return r;
}

static size_t dec_left(const struct dec *d)
{
	return d->len - d->pos;
}

/* A label name or value: length-prefixed bytes without NUL. */
static const uint8_t *dec_string(struct dec *d, size_t *len)
{
	uint64_t n = dec_uvarint(d);
	const uint8_t *s = dec_bytes(d, n);
	*len = s ? (size_t)n : 0;
	if (s && n && memchr(s, 0, (size_t)n)) {
		d->err = "label contains a NUL byte";
		*len = 0;
		return NULL;
	}
	return s;
}

/* Storage for handing out one series' labels as C strings. */
struct scratch {
	struct pd_lpair *lp;
	size_t lp_cap;
	struct pd_buf str;
};

static void scratch_fini(struct scratch *s)
{
	free(s->lp);
	pd_buf_fini(&s->str);
}

#define DECODE_BAD 1   /* the payload is malformed */
#define DECODE_NOMEM 2 /* an allocation failed */

/* Decodes a commit payload. With cb NULL it only checks it; otherwise it hands
 * out every series and sample (so call it with cb only on a checked payload).
 * Returns 0, DECODE_BAD (*why says how), DECODE_NOMEM, or a callback's code. */
static int decode_commit(int type, const uint8_t *p, size_t len, const struct pd_wal_replay_cb *cb,
			 struct scratch *sc, struct pd_wal_replay_stats *stats, const char **why)
{
	struct dec d = {p, len, 0, NULL};
	int rc;

	uint64_t ns = dec_uvarint(&d);
	if (!d.err && ns > dec_left(&d) / 2) /* a series takes at least 2 bytes */
		d.err = "series count exceeds the payload";
	for (uint64_t i = 0; i < ns && !d.err; i++) {
		uint64_t ref = dec_uvarint(&d);
		uint64_t nl = dec_uvarint(&d);
		if (d.err)
			break;
		if (nl > PD_WAL_MAX_LABELS || nl > dec_left(&d) / 2) {
			d.err = "label count too large";
			break;
		}
		/* first pass: check the labels and their order, and size the strings */
		size_t start = d.pos, total = 0, pl = 0, nlen = 0, vlen = 0;
		const uint8_t *prev = NULL;
		for (uint64_t j = 0; j < nl && !d.err; j++) {
			const uint8_t *name = dec_string(&d, &nlen);
			dec_string(&d, &vlen);
			if (d.err)
				break;
			if (prev) {
				int c = memcmp(prev, name, pl < nlen ? pl : nlen);
				if (c > 0 || (c == 0 && pl >= nlen)) {
					d.err = "labels not sorted by name, or a name repeated";
					break;
				}
			}
			prev = name;
			pl = nlen;
			total += nlen + vlen + 2;
		}
		if (d.err)
			break;
		if (!cb)
			continue;
		if (cb->series) {
			/* second pass over checked bytes: copy them out NUL-terminated */
			if (nl > sc->lp_cap) {
				struct pd_lpair *lp = realloc(sc->lp, (size_t)nl * sizeof(*lp));
				if (!lp)
					return DECODE_NOMEM;
				sc->lp = lp;
				sc->lp_cap = (size_t)nl;
			}
			sc->str.len = 0;
			if (pd_buf_reserve(&sc->str, total ? total : 1))
				return DECODE_NOMEM;
			struct dec d2 = {p, len, start, NULL};
			char *out = (char *)sc->str.data;
			for (uint64_t j = 0; j < nl; j++) {
				const uint8_t *s = dec_string(&d2, &nlen);
				memcpy(out, s, nlen);
				out[nlen] = 0;
				sc->lp[j].name = out;
				out += nlen + 1;
				s = dec_string(&d2, &vlen);
				memcpy(out, s, vlen);
				out[vlen] = 0;
				sc->lp[j].value = out;
				out += vlen + 1;
			}
			if ((rc = cb->series(cb->ctx, ref, sc->lp, (size_t)nl)))
				return rc < 0 ? rc : PD_EINVAL;
		}
		if (stats)
			stats->series++;
	}

	uint64_t nm = dec_uvarint(&d);
	if (!d.err && nm > dec_left(&d) / 3) /* a sample or tombstone takes at least 3 bytes */
		d.err = type == PD_WAL_REC_TOMBSTONES ? "tombstone count exceeds the payload"
						      : "sample count exceeds the payload";
	for (uint64_t i = 0; i < nm && !d.err && type == PD_WAL_REC_TOMBSTONES; i++) {
		uint64_t ref = dec_uvarint(&d);
		uint64_t z1 = dec_uvarint(&d);
		uint64_t z2 = dec_uvarint(&d);
		if (d.err)
			break;
		int64_t mint = (int64_t)((z1 >> 1) ^ (0 - (z1 & 1)));
		int64_t maxt = (int64_t)((z2 >> 1) ^ (0 - (z2 & 1)));
		if (mint > maxt) {
			d.err = "a tombstone's mint is after its maxt";
			break;
		}
		if (!cb)
			continue;
		if (cb->tombstone && (rc = cb->tombstone(cb->ctx, ref, mint, maxt)))
			return rc < 0 ? rc : PD_EINVAL;
		if (stats)
			stats->tombstones++;
	}
	for (uint64_t i = 0; i < nm && !d.err && type == PD_WAL_REC_COMMIT; i++) {
		uint64_t ref = dec_uvarint(&d);
		uint64_t z = dec_uvarint(&d);
		uint64_t plen = dec_uvarint(&d);
		const uint8_t *prof = dec_bytes(&d, plen);
		if (d.err)
			break;
		if (!cb)
			continue;
		int64_t t = (int64_t)((z >> 1) ^ (0 - (z & 1)));
		if (cb->sample && (rc = cb->sample(cb->ctx, ref, t, prof, (size_t)plen)))
			return rc < 0 ? rc : PD_EINVAL;
		if (stats)
			stats->samples++;
	}
	if (!d.err && d.pos != len)
		d.err = type == PD_WAL_REC_TOMBSTONES ? "bytes left after the last tombstone"
						      : "bytes left after the last sample";
	if (d.err) {
		*why = d.err;
		return DECODE_BAD;
	}
	return 0;
}

/* ---- reading segments ------------------------------------------------------ */

struct reader {
	const struct pd_wal_replay_cb *cb;
	struct pd_wal_replay_stats *stats;
	struct pd_wal_damage *dmg;
	struct pd_err *err;
	void *dctx; /* ZSTD_DCtx */
	struct pd_buf dec;
	struct scratch sc;
	struct segr r;
};

/* Notes the start of a damaged stretch at off of segment seg: the first one
 * read is the one reported by name. */
__attribute__((format(printf, 4, 5))) static void damage(struct reader *rd, uint32_t seg,
							  uint64_t off, const char *fmt, ...)
{
	va_list ap;
	char why[sizeof(rd->dmg->reason)];
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!rd->dmg->regions) {
		rd->dmg->segment = seg;
		rd->dmg->offset = off;
		memcpy(rd->dmg->reason, why, sizeof(why));
	}
	memcpy(rd->dmg->tail_reason, why, sizeof(why));
}

/* Decompresses one zstd frame into rd->dec; 0, 1 when it is not a valid frame
 * (*why says why), PD_ENOMEM. */
static int unzstd(struct reader *rd, const uint8_t *p, size_t len, const char **why)
{
	unsigned long long cs = ZSTD_getFrameContentSize(p, len);
	if (cs == ZSTD_CONTENTSIZE_ERROR) {
		*why = "not a zstd frame";
		return 1;
	}
	if (cs == ZSTD_CONTENTSIZE_UNKNOWN) {
		*why = "zstd frame without its content size";
		return 1;
	}
	if (cs > PD_WAL_RECORD_LIMIT) {
		*why = "zstd content size exceeds the record limit";
		return 1;
	}
	size_t fl = ZSTD_findFrameCompressedSize(p, len);
	if (ZSTD_isError(fl) || fl != len) {
		*why = "payload is not exactly one zstd frame";
		return 1;
	}
	rd->dec.len = 0;
	if (rd->dec.cap > PD_WAL_KEEP_BUF && cs <= PD_WAL_KEEP_BUF)
		pd_buf_fini(&rd->dec);
	if (pd_buf_reserve(&rd->dec, cs ? (size_t)cs : 1))
		return PD_ENOMEM;
	size_t n = ZSTD_decompressDCtx(rd->dctx, rd->dec.data, (size_t)cs, p, len);
	if (ZSTD_isError(n) || n != cs) {
		*why = ZSTD_isError(n) ? ZSTD_getErrorName(n) : "zstd content size mismatch";
		return 1;
	}
	rd->dec.len = (size_t)cs;
	return 0;
}

/* Counts the records of a damaged stretch [from, to) of the segment, following
 * their length fields while they stay inside it; at least one. */
static uint64_t count_records(struct reader *rd, uint64_t from, uint64_t to)
{
	uint64_t n = 0, off = from < PD_WAL_SEG_HDR ? PD_WAL_SEG_HDR : from;
	const uint8_t *h;
	while (to - off >= PD_WAL_REC_HDR && segr_get(&rd->r, off, PD_WAL_REC_HDR, &h) == 0) {
		uint64_t next = off + PD_WAL_REC_HDR + get_be32(h + 2);
		if (next > to)
			break;
		n++;
		off = next;
	}
	return n + (off < to);
}

/* Closes the damaged stretch [from, to) of segment seg. */
static void skipped(struct reader *rd, uint32_t seg, uint64_t from, uint64_t to, int at_end)
{
	rd->dmg->regions++;
	rd->dmg->bytes += to - from;
	rd->dmg->records += count_records(rd, from, to);
	if (at_end) {
		rd->dmg->tail = 1;
		rd->dmg->tail_segment = seg;
		rd->dmg->tail_offset = from;
	}
}

#define REC_OK 0
#define REC_BAD 1

/* Checks the record at off of segment num and, when it is whole and valid, hands
 * its series and samples out and sets *next past it. Returns REC_OK, REC_BAD
 * (why[] says why), or a negative code (an error, or PD_EINCOMPAT for a record of
 * a newer format). scanning: looking for the next intact record after damage,
 * where only commit records with known flags count and nothing is an error of
 * format. */
static int read_record(struct reader *rd, const char *path, uint64_t off, int scanning,
		       uint64_t *next, char *why, size_t whylen)
{
	struct segr *r = &rd->r;
	const uint8_t *h, *rec;
	const char *w = NULL;
	int rc;
	uint64_t left = r->size - off;

	if (left < PD_WAL_REC_HDR) {
		snprintf(why, whylen, "record header truncated (%llu of %d bytes)",
			 (unsigned long long)left, PD_WAL_REC_HDR);
		return REC_BAD;
	}
	if ((rc = segr_get(r, off, PD_WAL_REC_HDR, &h)))
		goto io;
	uint8_t type = h[0], flags = h[1];
	uint32_t len = get_be32(h + 2), crc = get_be32(h + 6);
	int known = type == PD_WAL_REC_COMMIT || type == PD_WAL_REC_TOMBSTONES;
	if (scanning && (!known || (flags & ~PD_WAL_FLAGS_KNOWN)))
		return REC_BAD;
	if (len > left - PD_WAL_REC_HDR) {
		snprintf(why, whylen, "record truncated (%u payload bytes, %llu left in the segment)",
			 len, (unsigned long long)(left - PD_WAL_REC_HDR));
		return REC_BAD;
	}
	if (len > PD_WAL_RECORD_LIMIT) {
		snprintf(why, whylen, "record of %u bytes exceeds the limit of %zu", len,
			 PD_WAL_RECORD_LIMIT);
		return REC_BAD;
	}
	if ((rc = segr_get(r, off, PD_WAL_REC_HDR + (size_t)len, &rec)))
		goto io;
	uint32_t got = pd_crc32c(pd_crc32c(0, rec, 6), rec + PD_WAL_REC_HDR, len);
	if (got != crc) {
		snprintf(why, whylen, "record CRC mismatch (stored %08x, computed %08x)", crc, got);
		return REC_BAD;
	}
	if (type == 0) {
		snprintf(why, whylen, "record type 0 is invalid");
		return REC_BAD;
	}
	if (!known || (flags & ~PD_WAL_FLAGS_KNOWN))
		return pd_err_set(rd->err, PD_EINCOMPAT,
				  "%s offset %llu: unknown record type %u or flags 0x%02x "
				  "(written by a newer profd?)",
				  path, (unsigned long long)off, type, flags);
	const uint8_t *pl = rec + PD_WAL_REC_HDR;
	size_t plen = len;
	if (flags & PD_WAL_FLAG_ZSTD) {
		if ((rc = unzstd(rd, pl, plen, &w)) < 0)
			return pd_err_set(rd->err, PD_ENOMEM, "%s: out of memory", path);
		if (rc) {
			snprintf(why, whylen, "undecodable record payload: %s", w);
			return REC_BAD;
		}
		pl = rd->dec.data;
		plen = rd->dec.len;
	}
	if ((rc = decode_commit(type, pl, plen, NULL, &rd->sc, NULL, &w)) == DECODE_BAD) {
		snprintf(why, whylen, "undecodable record payload: %s", w);
		return REC_BAD;
	}
	if (rc == 0)
		rc = decode_commit(type, pl, plen, rd->cb, &rd->sc, rd->stats, &w);
	if (rc == DECODE_NOMEM)
		return pd_err_set(rd->err, PD_ENOMEM, "%s: out of memory", path);
	if (rc != 0)
		return pd_err_set(rd->err, rc, "%s offset %llu: replay stopped by its callback (%s)",
				  path, (unsigned long long)off, pd_strerror(rc));
	if (rd->stats)
		rd->stats->records++;
	*next = off + PD_WAL_REC_HDR + (uint64_t)len;
	return REC_OK;
io:
	if (rc == PD_ENOMEM)
		return pd_err_set(rd->err, PD_ENOMEM, "%s: out of memory", path);
	return pd_err_set(rd->err, PD_EIO, "%s: read: %s", path, strerror(errno));
}

/* Reads one segment file, skipping damage: after a bad record (or a bad header)
 * every later byte offset is tried until a record checks whole, and reading goes
 * on from there. 0 or a negative code; the damage is counted in rd->dmg. */
static int read_segment(struct reader *rd, const char *dir, uint32_t num)
{
	struct segr *r = &rd->r;
	const uint8_t *h;
	struct stat st;
	char why[sizeof(rd->dmg->reason)];
	int rc = 0;
	uint64_t bad = UINT64_MAX; /* start of the damaged stretch being skipped */
	char *path = pd_wal_seg_path(dir, num);

	if (!path)
		return pd_err_set(rd->err, PD_ENOMEM, "out of memory");
	rd->dmg->tail = 0;
	r->win.len = 0;
	if ((r->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(r->fd, &st) != 0) {
		rc = pd_err_set(rd->err, PD_EIO, "%s: %s", path, strerror(errno));
		goto done;
	}
	r->size = (uint64_t)st.st_size;
	if (r->size < PD_WAL_SEG_HDR) {
		damage(rd, num, 0, "segment header truncated (%llu bytes)", (unsigned long long)r->size);
		skipped(rd, num, 0, r->size, 1);
		goto done;
	}
	if ((rc = segr_get(r, 0, PD_WAL_SEG_HDR, &h))) {
		rc = rc == PD_ENOMEM ? pd_err_set(rd->err, PD_ENOMEM, "%s: out of memory", path)
				     : pd_err_set(rd->err, PD_EIO, "%s: read: %s", path, strerror(errno));
		goto done;
	}
	if (memcmp(h, PD_WAL_MAGIC, 4) != 0) {
		damage(rd, num, 0, "bad segment magic");
		bad = 0;
	} else if (h[4] != PD_WAL_VERSION) {
		rc = pd_err_set(rd->err, PD_EINCOMPAT,
				"%s: segment format version %u is not supported (written by a newer "
				"profd?)",
				path, h[4]);
		goto done;
	}

	uint64_t off = PD_WAL_SEG_HDR, next = 0;
	while (off < r->size) {
		rc = read_record(rd, path, off, bad != UINT64_MAX, &next, why, sizeof(why));
		if (rc < 0)
			goto done;
		if (rc == REC_OK) {
			if (bad != UINT64_MAX)
				skipped(rd, num, bad, off, 0);
			bad = UINT64_MAX;
			off = next;
			continue;
		}
		if (bad == UINT64_MAX) {
			damage(rd, num, off, "%s", why);
			bad = off;
		}
		off++;
	}
	if (bad != UINT64_MAX)
		skipped(rd, num, bad, r->size, 1);
	rc = 0;
done:
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->win.cap > 4 * READ_WINDOW)
		pd_buf_fini(&r->win);
	free(path);
	return rc;
}

int pd_wal_read_segments(const char *dir, const uint32_t *nums, size_t n, uint32_t first,
			 const struct pd_wal_replay_cb *cb, struct pd_wal_replay_stats *stats,
			 struct pd_wal_damage *dmg, struct pd_err *err)
{
	static const struct pd_wal_replay_cb none = {0};
	struct reader rd = {.cb = cb ? cb : &none, .stats = stats, .dmg = dmg, .err = err};
	int rc = 0;

	rd.r.fd = -1;
	pd_buf_init(&rd.dec, 0);
	pd_buf_init(&rd.sc.str, 0);
	pd_buf_init(&rd.r.win, 0);
	if (!(rd.dctx = ZSTD_createDCtx()))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint32_t want = i ? nums[i - 1] + 1 : first;
		if (want && nums[i] != want) {
			/* what the missing segments held is lost; the rest is read */
			if (nums[i] == want + 1)
				damage(&rd, nums[i], 0, "segment %08u is missing", want);
			else
				damage(&rd, nums[i], 0, "segments %08u to %08u are missing", want,
				       nums[i] - 1);
			dmg->regions++;
		}
		rc = read_segment(&rd, dir, nums[i]);
	}
	ZSTD_freeDCtx(rd.dctx);
	pd_buf_fini(&rd.dec);
	pd_buf_fini(&rd.r.win);
	scratch_fini(&rd.sc);
	return rc ? rc : dmg->regions ? 1 : 0;
}

int pd_wal_check_tail(const char *path, int fd, uint64_t size, struct pd_err *err)
{
	uint8_t h[PD_WAL_REC_HDR];
	uint64_t off = PD_WAL_SEG_HDR;

	if (size < PD_WAL_SEG_HDR || pread_all(fd, h, PD_WAL_SEG_HDR, 0) != 0)
		return pd_err_set(err, PD_EIO, "%s: cannot read the segment header", path);
	if (memcmp(h, PD_WAL_MAGIC, 4) != 0)
		return pd_err_set(err, PD_ECORRUPT,
				  "%s: bad segment magic; replay the WAL first (it cuts a damaged "
				  "tail off)",
				  path);
	if (h[4] != PD_WAL_VERSION)
		return pd_err_set(err, PD_EINCOMPAT,
				  "%s: segment format version %u is not supported (written by a newer "
				  "profd?)",
				  path, h[4]);
	while (size - off >= PD_WAL_REC_HDR) {
		if (pread_all(fd, h, PD_WAL_REC_HDR, off) != 0)
			return pd_err_set(err, PD_EIO, "%s: read: %s", path, strerror(errno));
		uint64_t next = off + PD_WAL_REC_HDR + get_be32(h + 2);
		if (next > size)
			break;
		off = next;
	}
	if (off != size)
		return pd_err_set(err, PD_ECORRUPT,
				  "%s: damaged record at offset %llu; replay the WAL first (it cuts "
				  "a damaged tail off)",
				  path, (unsigned long long)off);
	return 0;
}

/* ---- replay and repair ----------------------------------------------------- */

/* Cuts segment seg of dir at off (removing it when off is inside its header):
 * a torn tail. */
static int cut_tail(const char *dir, uint32_t seg, uint64_t off, struct pd_err *err)
{
	int rc = 0;
	char *path = pd_wal_seg_path(dir, seg);
	if (!path)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (off >= PD_WAL_SEG_HDR) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || ftruncate(fd, (off_t)off) != 0 || fsync(fd) != 0)
			rc = pd_err_set(err, PD_EIO, "%s: cutting at %llu: %s", path,
					(unsigned long long)off, strerror(errno));
		if (fd >= 0)
			close(fd);
	} else if (unlink(path) != 0 && errno != ENOENT) {
		rc = pd_err_set(err, PD_EIO, "%s: unlink: %s", path, strerror(errno));
	}
	free(path);
	if (rc == 0)
		rc = pd_wal_fsync_dir(dir, err);
	return rc;
}

/* Index of the first of nums greater than after. */
static size_t first_after(const uint32_t *nums, size_t n, uint32_t after)
{
	size_t i = 0;
	while (i < n && nums[i] <= after)
		i++;
	return i;
}

/* Adds the damage d (found in a checkpoint when cp) to stats. */
static void add_damage(struct pd_wal_replay_stats *stats, const struct pd_wal_damage *d,
		       uint32_t cp)
{
	if (!d->regions)
		return;
	if (!stats->damaged_regions) {
		stats->damage_segment = d->segment;
		stats->damage_offset = d->offset;
		if (cp)
			snprintf(stats->damage_reason, sizeof(stats->damage_reason),
				 "checkpoint.%08u: %s", cp, d->reason);
		else
			snprintf(stats->damage_reason, sizeof(stats->damage_reason), "%s", d->reason);
	}
	stats->damaged_regions += d->regions;
	stats->damaged_records += d->records;
	stats->damaged_bytes += d->bytes;
}

static int replay(const char *dir, const struct pd_wal_replay_cb *cb,
		  struct pd_wal_replay_stats *stats, int fix, struct pd_err *err)
{
	struct pd_wal_replay_stats local;
	struct pd_wal_listing l = {0}, c = {0};
	struct pd_wal_damage dmg = {0};
	char *cpdir = NULL;
	uint32_t cp = 0;
	size_t k;
	int rc;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	if ((rc = pd_wal_list(dir, &l, err)))
		return rc == PD_ENOTFOUND ? 0 : rc;

	/* the newest complete checkpoint; older ones and temporary ones are ignored.
	 * Its damage is skipped like a segment's: nothing appends to it. */
	if (l.ncps) {
		cp = l.cps[l.ncps - 1];
		if (!(cpdir = pd_wal_cp_path(dir, cp, 0))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto done;
		}
		if ((rc = pd_wal_list(cpdir, &c, err)))
			goto done;
		rc = pd_wal_read_segments(cpdir, c.segs, c.nsegs, 1, cb, stats, &dmg, err);
		if (rc < 0)
			goto done;
		add_damage(stats, &dmg, cp);
	}

	/* then the segments after it, in order; a gap is skipped and reported */
	memset(&dmg, 0, sizeof(dmg));
	k = first_after(l.segs, l.nsegs, cp);
	rc = pd_wal_read_segments(dir, l.segs + k, l.nsegs - k, cp ? cp + 1 : 0, cb, stats, &dmg,
				  err);
	if (rc < 0)
		goto done;
	rc = 0;
	add_damage(stats, &dmg, 0);
	if (dmg.tail) {
		/* the last segment ends in damage with no intact record after it: a
		 * torn write, cut off so that appending goes on after the last record */
		if (fix && (rc = cut_tail(dir, dmg.tail_segment, dmg.tail_offset, err)))
			goto done;
		stats->truncated = 1;
		stats->segment = dmg.tail_segment;
		stats->offset = dmg.tail_offset;
		snprintf(stats->reason, sizeof(stats->reason), "%s", dmg.tail_reason);
	}
done:
	if (rc)
		pd_err_prefix(err, "WAL replay");
	free(cpdir);
	pd_wal_listing_fini(&c);
	pd_wal_listing_fini(&l);
	return rc;
}

int pd_wal_replay(const char *dir, const struct pd_wal_replay_cb *cb,
		  struct pd_wal_replay_stats *stats, struct pd_err *err)
{
	return replay(dir, cb, stats, 1, err);
}

int pd_wal_replay_readonly(const char *dir, const struct pd_wal_replay_cb *cb,
			   struct pd_wal_replay_stats *stats, struct pd_err *err)
{
	return replay(dir, cb, stats, 0, err);
}

/* ---- following the WAL from a position ----------------------------------------- */

struct pd_wal_tail {
	char *dir;
	struct reader rd;
	struct pd_wal_damage dmg;
	uint32_t open_seg; /* segment open in rd.r.fd, when >= 0 */
	char *path;
};

int pd_wal_tail_create(struct pd_wal_tail **out, const char *dir, struct pd_err *err)
{
	struct pd_wal_tail *t = calloc(1, sizeof(*t));
	*out = NULL;
	if (!t || !(t->dir = strdup(dir)) || !(t->rd.dctx = ZSTD_createDCtx())) {
		if (t)
			free(t->dir);
		free(t);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	t->rd.r.fd = -1;
	t->rd.dmg = &t->dmg;
	pd_buf_init(&t->rd.dec, 0);
	pd_buf_init(&t->rd.sc.str, 0);
	pd_buf_init(&t->rd.r.win, 0);
	*out = t;
	return 0;
}

static void tail_close_seg(struct pd_wal_tail *t)
{
	if (t->rd.r.fd >= 0)
		close(t->rd.r.fd);
	t->rd.r.fd = -1;
	t->rd.r.win.len = 0;
	free(t->path);
	t->path = NULL;
}

void pd_wal_tail_destroy(struct pd_wal_tail *t)
{
	if (!t)
		return;
	tail_close_seg(t);
	ZSTD_freeDCtx(t->rd.dctx);
	pd_buf_fini(&t->rd.dec);
	pd_buf_fini(&t->rd.r.win);
	scratch_fini(&t->rd.sc);
	free(t->dir);
	free(t);
}

/* Opens segment num for reading, when it is not open already: 0, 1 when the file
 * does not exist, or a negative code. */
static int tail_open_seg(struct pd_wal_tail *t, uint32_t num, struct pd_err *err)
{
	if (t->rd.r.fd >= 0 && t->open_seg == num)
		return 0;
	tail_close_seg(t);
	if (!(t->path = pd_wal_seg_path(t->dir, num)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((t->rd.r.fd = open(t->path, O_RDONLY | O_CLOEXEC)) < 0) {
		int e = errno;
		free(t->path);
		t->path = NULL;
		if (e == ENOENT)
			return 1;
		return pd_err_set(err, PD_EIO, "%s/%08u: %s", t->dir, num, strerror(e));
	}
	t->open_seg = num;
	return 0;
}

int pd_wal_tail_next(struct pd_wal_tail *t, uint32_t *seg, uint64_t *off, uint32_t end_seg,
		     uint64_t end_off, const struct pd_wal_replay_cb *cb, uint64_t *moved,
		     struct pd_err *err)
{
	static const struct pd_wal_replay_cb none = {0};
	char why[200];
	t->rd.cb = cb ? cb : &none;
	t->rd.err = err;
	for (;;) {
		if (*seg > end_seg || (*seg == end_seg && *off >= end_off))
			return 0;
		if (*off < PD_WAL_SEG_HDR)
			*off = PD_WAL_SEG_HDR;
		int rc = tail_open_seg(t, *seg, err);
		if (rc < 0)
			return rc;
		uint64_t limit = end_off;
		if (rc == 0 && *seg != end_seg) {
			/* a complete segment: read to its end */
			struct stat st;
			if (fstat(t->rd.r.fd, &st) != 0)
				return pd_err_set(err, PD_EIO, "%s: %s", t->path, strerror(errno));
			limit = (uint64_t)st.st_size;
		}
		if (rc == 1 || *off >= limit) {
			/* this segment is done (or gone): on to the next one */
			if (*seg == end_seg)
				return 0;
			if (rc == 0 && moved && *off < limit)
				*moved += limit - *off;
			tail_close_seg(t);
			(*seg)++;
			*off = PD_WAL_SEG_HDR;
			continue;
		}
		t->rd.r.size = limit;
		uint64_t next = 0, at = *off;
		int scanning = 0;
		while (at < limit) {
			rc = read_record(&t->rd, t->path, at, scanning, &next, why, sizeof(why));
			if (rc < 0)
				return rc;
			if (rc == REC_OK)
				break;
			scanning = 1; /* damage: look for the next intact record */
			at++;
		}
		uint64_t to = at < limit ? next : limit;
		if (moved)
			*moved += to - *off;
		*off = to;
		if (at < limit)
			return 1;
	}
}
