/* block_write.c: writing a block. Chunks go to segment files as series arrive;
 * labels and chunk references are kept by the index writer until the end, when
 * the index and meta.json are written, everything is fsynced, and the
 * `<ULID>.tmp` directory is renamed to `<ULID>`.
 *
 * Segment file (chunks/NNNNNN, docs/format/chunk-segments.md):
 *
 *   ┌──────────────┬──────────────┬────────────────┐
 *   │ magic <4B BE>│ version <1B> │ reserved <3B>  │  then entries:
 *   └──────────────┴──────────────┴────────────────┘
 *   ┌──────────────┬───────────┬────────────┬─────────────────────────────────┐
 *   │ len <uvarint>│ kind <1B> │ data <len> │ CRC32C(kind, data) <4B BE>      │
 *   └──────────────┴───────────┴────────────┴─────────────────────────────────┘
 *
 * A chunk reference is segment number << 32 | offset of the entry's len field. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "block_int.h"
#include "profd/chunkenc.h"
#include "wal.h"

#define BFILE_BUF (256 * 1024)

/* ---- buffered files ------------------------------------------------------- */

int pd_bfile_create(struct pd_bfile **out, const char *path, struct pd_err *err)
{
	struct pd_bfile *f = calloc(1, sizeof(*f));
	*out = NULL;
	if (!f || !(f->path = strdup(path)) || !(f->buf = malloc(BFILE_BUF))) {
		if (f) {
			free(f->path);
			free(f);
		}
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (f->fd < 0) {
		int rc = pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
		free(f->buf);
		free(f->path);
		free(f);
		return rc;
	}
	*out = f;
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int bfile_flush(struct pd_bfile *f, struct pd_err *err)
{
	if (f->n && write_all(f->fd, f->buf, f->n))
		return pd_err_set(err, PD_EIO, "%s: %s", f->path, strerror(errno));
	f->n = 0;
	return 0;
}

int pd_bfile_write(struct pd_bfile *f, const void *p, size_t n, struct pd_err *err)
{
	if (f->crc_on)
		f->crc = pd_crc32c(f->crc, p, n);
	f->off += n;
	if (n <= BFILE_BUF - f->n) {
		memcpy(f->buf + f->n, p, n);
		f->n += n;
		return 0;
	}
	int rc = bfile_flush(f, err);
	if (rc)
		return rc;
	if (n < BFILE_BUF) {
		memcpy(f->buf, p, n);
		f->n = n;
		return 0;
	}
	if (write_all(f->fd, p, n))
		return pd_err_set(err, PD_EIO, "%s: %s", f->path, strerror(errno));
	return 0;
}

int pd_bfile_patch(struct pd_bfile *f, uint64_t off, const void *p, size_t n, struct pd_err *err)
{
	int rc = bfile_flush(f, err);
	if (rc)
		return rc;
	const uint8_t *b = p;
	while (n) {
		ssize_t w = pwrite(f->fd, b, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return pd_err_set(err, PD_EIO, "%s: %s", f->path, strerror(errno));
		}
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int pd_bfile_close(struct pd_bfile *f, struct pd_err *err)
{
	int rc = bfile_flush(f, err);
	if (!rc && fsync(f->fd))
		rc = pd_err_set(err, PD_EIO, "%s: fsync: %s", f->path, strerror(errno));
	if (close(f->fd) && !rc)
		rc = pd_err_set(err, PD_EIO, "%s: close: %s", f->path, strerror(errno));
	f->fd = -1;
	pd_bfile_discard(f);
	return rc;
}

void pd_bfile_discard(struct pd_bfile *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f->buf);
	free(f->path);
	free(f);
}

int pd_fsync_dir(const char *path, struct pd_err *err)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
	int rc = 0;
	if (fsync(fd))
		rc = pd_err_set(err, PD_EIO, "%s: fsync: %s", path, strerror(errno));
	close(fd);
	return rc;
}

/* ---- the writer ----------------------------------------------------------- */

struct pd_block_writer {
	char *parent, *tmpdir, *chunkdir;
	struct pd_block_meta meta;
	struct pd_index_writer *iw;
	struct pd_bfile *seg; /* open segment, or NULL */
	uint32_t segno;       /* number of the open (or last) segment */
	uint64_t seg_max;
	int failed; /* an I/O error happened: only abort remains */
};

char *pd_path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);
	if (p) {
		memcpy(p, a, la);
		p[la] = '/';
		memcpy(p + la + 1, b, lb + 1);
	}
	return p;
}

/* Removes dir and the files in it and in its subdirectories (the depth of a block). */
static void remove_tree(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char *p = pd_path_join(dir, e->d_name);
			if (!p)
				continue;
			struct stat st;
			if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
				if (depth > 0)
					remove_tree(p, depth - 1);
			} else {
				unlink(p);
			}
			free(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void writer_free(struct pd_block_writer *w)
{
	pd_bfile_discard(w->seg);
	pd_index_writer_destroy(w->iw);
	free(w->meta.sources);
	free(w->parent);
	free(w->tmpdir);
	free(w->chunkdir);
	free(w);
}

int pd_block_writer_create(struct pd_block_writer **out, const char *parent_dir, int64_t mint,
			   int64_t maxt, int level, const char (*sources)[27], size_t nsources,
			   struct pd_err *err)
{
	struct pd_block_writer *w;
	int rc;

	*out = NULL;
	if (mint >= maxt)
		return pd_err_set(err, PD_EINVAL, "block time range [%lld, %lld) is empty",
				  (long long)mint, (long long)maxt);
	if (level < 1 || level > 1000000)
		return pd_err_set(err, PD_EINVAL, "block compaction level %d is not in 1..1000000",
				  level);
	for (size_t i = 0; i < nsources; i++)
		if (!memchr(sources[i], 0, 27) || !pd_ulid_valid(sources[i]))
			return pd_err_set(err, PD_EINVAL, "source %zu is not a ULID", i);
	if (!(w = calloc(1, sizeof(*w))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	w->meta.mint = mint;
	w->meta.maxt = maxt;
	w->meta.level = level;
	w->seg_max = PD_SEGMENT_MAX_SIZE;
	pd_ulid_new(w->meta.ulid, now_ms());
	char tmpname[32];
	snprintf(tmpname, sizeof(tmpname), "%s.tmp", w->meta.ulid);
	/* a level-1 block is its own source, as in Prometheus */
	size_t ns = nsources ? nsources : 1;
	if (!(w->meta.sources = calloc(ns, sizeof(*w->meta.sources))) ||
	    !(w->parent = strdup(parent_dir)) || !(w->tmpdir = pd_path_join(parent_dir, tmpname)) ||
	    !(w->chunkdir = pd_path_join(w->tmpdir, "chunks")) || !(w->iw = pd_index_writer_create())) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	if (nsources)
		memcpy(w->meta.sources, sources, nsources * sizeof(*sources));
	else
		memcpy(w->meta.sources[0], w->meta.ulid, 27);
	w->meta.nsources = ns;
	if (mkdir(w->tmpdir, 0755)) {
		rc = pd_err_set(err, PD_EIO, "%s: %s", w->tmpdir, strerror(errno));
		goto fail;
	}
	if (mkdir(w->chunkdir, 0755)) {
		rc = pd_err_set(err, PD_EIO, "%s: %s", w->chunkdir, strerror(errno));
		remove_tree(w->tmpdir, 1);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	writer_free(w);
	return rc;
}

void pd_block_writer_set_segment_size(struct pd_block_writer *w, uint64_t size)
{
	w->seg_max = size;
}

static int segment_close(struct pd_block_writer *w, struct pd_err *err)
{
	struct pd_bfile *f = w->seg;
	w->seg = NULL;
	return f ? pd_bfile_close(f, err) : 0;
}

static int segment_open(struct pd_block_writer *w, struct pd_err *err)
{
	char name[16];
	if (w->segno >= PD_SEGMENT_MAX_NUM)
		return pd_err_set(err, PD_ETOOBIG, "block has more than %u chunk segments",
				  PD_SEGMENT_MAX_NUM);
	snprintf(name, sizeof(name), "%06u", (unsigned)w->segno + 1);
	char *path = pd_path_join(w->chunkdir, name);
	if (!path)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int rc = pd_bfile_create(&w->seg, path, err);
	free(path);
	if (rc)
		return rc;
	w->segno++;
	uint8_t hdr[PD_SEGMENT_HEADER_SIZE] = {0};
	pd_put_be32(hdr, PD_SEGMENT_MAGIC);
	hdr[4] = PD_SEGMENT_VERSION;
	return pd_bfile_write(w->seg, hdr, sizeof(hdr), err);
}

/* Writes one chunk entry and returns its reference. */
static int write_entry(struct pd_block_writer *w, uint8_t kind, const uint8_t *data, size_t len,
		       uint64_t *ref, struct pd_err *err)
{
	uint8_t hdr[11];
	size_t hl = pd_put_uvarint(hdr, len);
	hdr[hl++] = kind;
	uint64_t size = hl + (uint64_t)len + 4;
	int rc;

	if (w->seg && w->seg->off > PD_SEGMENT_HEADER_SIZE &&
	    (w->seg->off >= w->seg_max || size > w->seg_max - w->seg->off)) {
		if ((rc = segment_close(w, err)))
			return rc;
	}
	if (!w->seg && (rc = segment_open(w, err)))
		return rc;
	if (w->seg->off > UINT32_MAX)
		return pd_err_set(err, PD_ETOOBIG, "chunk segment %06u: offset past 4 GiB",
				  (unsigned)w->segno);
	*ref = (uint64_t)w->segno << 32 | w->seg->off;
	uint8_t crc[4];
	pd_put_be32(crc, pd_crc32c(pd_crc32c(0, &kind, 1), data, len));
	if ((rc = pd_bfile_write(w->seg, hdr, hl, err)) ||
	    (rc = pd_bfile_write(w->seg, data, len, err)) ||
	    (rc = pd_bfile_write(w->seg, crc, 4, err)))
		return rc;
	return 0;
}

static int check_chunks(const struct pd_block_writer *w, const struct pd_block_chunk *c, size_t n,
			struct pd_err *err)
{
	for (size_t i = 0; i < n; i++) {
		if (c[i].count < 1 || c[i].count > PD_CHUNKENC_MAX_SAMPLES)
			return pd_err_set(err, PD_EINVAL, "chunk %zu: %u samples (1 to %u allowed)", i,
					  (unsigned)c[i].count, PD_CHUNKENC_MAX_SAMPLES);
		if (c[i].mint > c[i].maxt)
			return pd_err_set(err, PD_EINVAL, "chunk %zu: mint %lld after maxt %lld", i,
					  (long long)c[i].mint, (long long)c[i].maxt);
		if (c[i].mint < w->meta.mint || c[i].maxt >= w->meta.maxt)
			return pd_err_set(err, PD_EINVAL,
					  "chunk %zu: [%lld, %lld] lies outside the block's [%lld, %lld)", i,
					  (long long)c[i].mint, (long long)c[i].maxt,
					  (long long)w->meta.mint, (long long)w->meta.maxt);
		if (i > 0 && c[i].mint <= c[i - 1].maxt)
			return pd_err_set(err, PD_EINVAL,
					  "chunk %zu starts at %lld, not after chunk %zu's end %lld", i,
					  (long long)c[i].mint, i - 1, (long long)c[i - 1].maxt);
		if (!c[i].ts || !c[i].ts_len || !c[i].vals || !c[i].vals_len)
			return pd_err_set(err, PD_EINVAL, "chunk %zu: empty timestamp or value chunk", i);
		if (c[i].ts_len > UINT32_MAX || c[i].vals_len > UINT32_MAX)
			return pd_err_set(err, PD_ETOOBIG, "chunk %zu: larger than 4 GiB", i);
		uint16_t tc = pd_chunkenc_ts_count(c[i].ts, c[i].ts_len);
		if (tc != c[i].count)
			return pd_err_set(err, PD_EINVAL,
					  "chunk %zu: count is %u but the timestamp chunk holds %u", i,
					  (unsigned)c[i].count, (unsigned)tc);
		int64_t vc = pd_chunkenc_values_read_count(c[i].vals, c[i].vals_len, NULL);
		if (vc != (int64_t)c[i].count)
			return pd_err_set(err, PD_EINVAL,
					  "chunk %zu: count is %u but the value chunk %s %lld", i,
					  (unsigned)c[i].count, vc < 0 ? "is malformed:" : "holds",
					  (long long)vc);
	}
	return 0;
}

int pd_block_writer_add_series(struct pd_block_writer *w, const struct pd_lpair *labels, size_t n,
			       const struct pd_block_chunk *chunks, size_t nchunks,
			       struct pd_err *err)
{
	struct pd_block_chunk_meta *metas = NULL;
	int rc;

	if (w->failed)
		return pd_err_set(err, PD_EINVAL, "block writer failed earlier; abort it");
	if ((rc = pd_index_writer_check(w->iw, labels, n, err)) ||
	    (rc = check_chunks(w, chunks, nchunks, err)))
		return rc;
	if (nchunks && !(metas = calloc(nchunks, sizeof(*metas))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < nchunks; i++) {
		metas[i].mint = chunks[i].mint;
		metas[i].maxt = chunks[i].maxt;
		metas[i].count = chunks[i].count;
		if ((rc = write_entry(w, PD_CHUNK_KIND_TS, chunks[i].ts, chunks[i].ts_len,
				      &metas[i].ts_ref, err)) ||
		    (rc = write_entry(w, PD_CHUNK_KIND_VALUES, chunks[i].vals, chunks[i].vals_len,
				      &metas[i].vals_ref, err))) {
			w->failed = 1;
			goto out;
		}
	}
	if ((rc = pd_index_writer_add(w->iw, labels, n, metas, nchunks, err))) {
		w->failed = 1; /* the chunks are written but unreferenced */
		goto out;
	}
	w->meta.num_series++;
	w->meta.num_chunks += nchunks;
	for (size_t i = 0; i < nchunks; i++) {
		w->meta.num_samples += chunks[i].count;
		w->meta.ts_bytes += chunks[i].ts_len;
		w->meta.value_bytes += chunks[i].vals_len;
	}
out:
	free(metas);
	return rc;
}

static int write_meta(struct pd_block_writer *w, struct pd_err *err)
{
	struct pd_buf b;
	struct pd_bfile *f = NULL;
	int rc;

	pd_buf_init(&b, PD_META_MAX_SIZE);
	char *path = pd_path_join(w->tmpdir, "meta.json");
	if (!path) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = pd_block_meta_format(&w->meta, &b))) {
		rc = pd_err_set(err, rc, "%s: %s", path, pd_strerror(rc));
		goto out;
	}
	if ((rc = pd_bfile_create(&f, path, err)))
		goto out;
	rc = pd_bfile_write(f, b.data, b.len, err);
	if (rc)
		pd_bfile_discard(f);
	else
		rc = pd_bfile_close(f, err);
out:
	free(path);
	pd_buf_fini(&b);
	return rc;
}

void pd_block_writer_set_idle(struct pd_block_writer *w)
{
	w->meta.idle = 1;
}

int pd_block_writer_finish(struct pd_block_writer *w, char ulid[27], struct pd_err *err)
{
	char *index = NULL, *final = NULL;
	int rc;

	if (w->failed) {
		rc = pd_err_set(err, PD_EINVAL, "block writer failed earlier; nothing was written");
		goto fail;
	}
	if (!(index = pd_path_join(w->tmpdir, "index")) || !(final = pd_path_join(w->parent, w->meta.ulid))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = segment_close(w, err)) || (rc = pd_fsync_dir(w->chunkdir, err)) ||
	    (rc = pd_index_writer_write(w->iw, index, err)) || (rc = write_meta(w, err)) ||
	    (rc = pd_fsync_dir(w->tmpdir, err)))
		goto fail;
	if (rename(w->tmpdir, final)) {
		rc = pd_err_set(err, PD_EIO, "rename %s to %s: %s", w->tmpdir, final, strerror(errno));
		goto fail;
	}
	/* The block is in place from here on; a failing fsync of the parent only
	 * means that it may not survive a crash. */
	rc = pd_fsync_dir(w->parent, err);
	if (ulid)
		memcpy(ulid, w->meta.ulid, 27);
	free(index);
	free(final);
	writer_free(w);
	return rc;
fail:
	free(index);
	free(final);
	pd_block_writer_abort(w);
	return rc;
}

void pd_block_writer_abort(struct pd_block_writer *w)
{
	if (!w)
		return;
	pd_bfile_discard(w->seg);
	w->seg = NULL;
	remove_tree(w->tmpdir, 1);
	writer_free(w);
}
