/* block_int.h: what the block writer and reader share inside pkg/tsdb: magic
 * numbers and limits of the block files, a sticky-error decoder and varint and
 * big-endian coding, a buffered file writer with a running CRC32C, the index
 * writer the block writer feeds, the index reader a block embeds, and meta.json
 * formatting and parsing. Byte layouts: docs/format/index.md,
 * docs/format/chunk-segments.md, docs/format/meta.md. */
#ifndef PROFD_TSDB_BLOCK_INT_H
#define PROFD_TSDB_BLOCK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "profd/util.h"

/* ---- file constants ------------------------------------------------------- */

#define PD_INDEX_MAGIC 0x50444958u /* "PDIX" */
#define PD_INDEX_VERSION 1
#define PD_INDEX_HEADER_SIZE 8 /* magic, version, 3 reserved zero bytes */
#define PD_INDEX_TOC_SIZE 36   /* 4 section offsets of 8 bytes, CRC32C */
#define PD_INDEX_SERIES_ALIGN 16
#define PD_SECTION_OVERHEAD 12 /* 8-byte length before, CRC32C after */

#define PD_SEGMENT_MAGIC 0x50444353u /* "PDCS" */
#define PD_SEGMENT_VERSION 1
#define PD_SEGMENT_HEADER_SIZE 8 /* magic, version, 3 reserved zero bytes */
#define PD_SEGMENT_MAX_SIZE (512ull << 20)
#define PD_SEGMENT_MAX_NUM 999999u /* file names have six digits */

enum pd_chunk_kind {
	PD_CHUNK_KIND_TS = 1,
	PD_CHUNK_KIND_VALUES = 2,
};

#define PD_META_VERSION 1
#define PD_META_HINT_IDLE "from-idle-series" /* compaction.hints: idle series written early */
#define PD_META_MAX_SIZE (1u << 20)

/* ---- coding --------------------------------------------------------------- */

static inline void pd_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void pd_put_be64(uint8_t *p, uint64_t v)
{
	pd_put_be32(p, (uint32_t)(v >> 32));
	pd_put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t pd_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t pd_get_be64(const uint8_t *p)
{
	return (uint64_t)pd_get_be32(p) << 32 | pd_get_be32(p + 4);
}

/* Writes v as an unsigned LEB128 varint into p (room for 10 bytes); returns its length. */
static inline size_t pd_put_uvarint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline size_t pd_uvarint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A bounds-checked reader of bytes with a sticky error, after Prometheus's
 * Decbuf: read several fields, then check err once. Every read past the end, and
 * every varint longer than 10 bytes, sets err and yields 0. */
struct pd_dec {
	const uint8_t *p;
	size_t len, pos;
	int err;
};

static inline void pd_dec_init(struct pd_dec *d, const uint8_t *p, size_t len)
{
	d->p = p;
	d->len = len;
	d->pos = 0;
	d->err = 0;
}

static inline size_t pd_dec_left(const struct pd_dec *d)
{
	return d->err ? 0 : d->len - d->pos;
}

static inline uint64_t pd_dec_uvarint(struct pd_dec *d)
{
	uint64_t r = 0;
	if (d->err)
		return 0;
	for (unsigned i = 0; i < 10 && d->pos < d->len; i++) {
		uint8_t b = d->p[d->pos++];
		if (i == 9 && b > 1)
			break;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return r;
	}
	d->err = 1;
	return 0;
}

static inline int64_t pd_dec_varint(struct pd_dec *d)
{
	uint64_t u = pd_dec_uvarint(d);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static inline uint8_t pd_dec_byte(struct pd_dec *d)
{
	if (d->err || d->pos >= d->len) {
		d->err = 1;
		return 0;
	}
	return d->p[d->pos++];
}

static inline uint32_t pd_dec_be32(struct pd_dec *d)
{
	if (d->err || d->len - d->pos < 4) {
		d->err = 1;
		return 0;
	}
	d->pos += 4;
	return pd_get_be32(d->p + d->pos - 4);
}

/* Returns n bytes in place (NULL and err when fewer are left). */
static inline const uint8_t *pd_dec_bytes(struct pd_dec *d, uint64_t n)
{
	if (d->err || n > d->len - d->pos) {
		d->err = 1;
		return NULL;
	}
	d->pos += (size_t)n;
	return d->p + d->pos - n;
}

/* ---- buffered file writing ------------------------------------------------ */

/* A file written front to back through a buffer, with a CRC32C over what is
 * written while crc_on is set. Errors name the file. Heap object. */
struct pd_bfile {
	int fd;
	char *path;
	uint64_t off; /* bytes written so far, buffered ones included */
	uint8_t *buf;
	size_t n;
	uint32_t crc;
	int crc_on;
};

/* Creates path (which must not exist). */
int pd_bfile_create(struct pd_bfile **out, const char *path, struct pd_err *err);
int pd_bfile_write(struct pd_bfile *f, const void *p, size_t n, struct pd_err *err);
/* Overwrites n bytes at off, which must already have been written. */
int pd_bfile_patch(struct pd_bfile *f, uint64_t off, const void *p, size_t n, struct pd_err *err);
/* Flushes, fsyncs and closes the file, and frees f whatever the outcome. */
int pd_bfile_close(struct pd_bfile *f, struct pd_err *err);
/* Closes without flushing or syncing and frees f; NULL ok. */
void pd_bfile_discard(struct pd_bfile *f);
/* Returns a malloc'd "a/b", or NULL when out of memory. */
char *pd_path_join(const char *a, const char *b);
/* fsyncs a directory. */
int pd_fsync_dir(const char *path, struct pd_err *err);

/* ---- index writer (index_write.c) ----------------------------------------- */

/* Collects series in memory (labels interned, chunk metas) and writes the index
 * file at the end, when all symbols are known. Heap object. */
struct pd_index_writer;

struct pd_index_writer *pd_index_writer_create(void);
void pd_index_writer_destroy(struct pd_index_writer *iw);
/* Checks that labels are a valid label set that sorts after the last series
 * added: PD_EINVAL with a message otherwise. Changes nothing. */
int pd_index_writer_check(const struct pd_index_writer *iw, const struct pd_lpair *labels,
			  size_t n, struct pd_err *err);
/* Adds a checked series with its chunk metas (copied). */
int pd_index_writer_add(struct pd_index_writer *iw, const struct pd_lpair *labels, size_t n,
			const struct pd_block_chunk_meta *chunks, size_t nchunks, struct pd_err *err);
/* Writes, fsyncs and closes the index file at path (which must not exist). */
int pd_index_writer_write(struct pd_index_writer *iw, const char *path, struct pd_err *err);

/* ---- index reader (index_read.c) ------------------------------------------ */

struct pd_index_pot_entry {
	uint32_t name, value; /* symbol numbers */
	uint64_t off;         /* file offset of the postings list */
};

/* A mapped index whose sections have been checked. Embedded. */
struct pd_index {
	char *path;
	const uint8_t *map;
	size_t size;
	const char **sym; /* NUL-terminated strings in the mapping, sorted */
	uint32_t nsyms;
	struct pd_index_pot_entry *pot; /* sorted by (name, value) */
	size_t npot;
	uint64_t all_off;                   /* the all-series postings list */
	uint64_t series_begin, series_end;  /* content of the series section */
	uint64_t postings_begin, postings_end;
};

/* Maps path and checks header, TOC and every section's CRC. On failure nothing
 * is left to free. */
int pd_index_open(struct pd_index *ix, const char *path, struct pd_err *err);
void pd_index_close(struct pd_index *ix);

/* ---- meta.json (block_meta.c) --------------------------------------------- */

/* Appends m as meta.json text to out. */
int pd_block_meta_format(const struct pd_block_meta *m, struct pd_buf *out);
/* Parses meta.json text strictly into *m (m->sources malloc'd: free it, also on
 * failure it is left NULL). Errors name the field, e.g. `field "stats.numSeries"
 * is missing`. */
int pd_block_meta_parse(const char *s, size_t len, struct pd_block_meta *m, struct pd_err *err);

/* ---- ULIDs (ulid.c) ------------------------------------------------------- */

/* True when s is 26 upper-case Crockford base32 characters encoding 128 bits. */
int pd_ulid_valid(const char *s);

/* ---- block internals ------------------------------------------------------ */

struct pd_block_segment {
	const uint8_t *map;
	size_t size;
};

struct pd_block {
	char *dir;
	struct pd_block_meta meta;
	struct pd_index idx;
	struct pd_block_segment *segs; /* segs[i] is chunks/<i+1> */
	size_t nsegs;
	uint64_t size;
	struct tombstones tomb; /* deleted intervals by series ref */
	uint64_t tomb_size;     /* bytes of the tombstones file */
};

/* For tests: cut chunk segments past size bytes instead of 512 MiB. */
void pd_block_writer_set_segment_size(struct pd_block_writer *w, uint64_t size);

#endif
