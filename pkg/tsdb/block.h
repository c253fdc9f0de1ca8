/* block.h: persisted blocks, private to pkg/tsdb. A block is an immutable
 * directory holding the series and chunks of one time range:
 *
 *   <ULID>/meta.json       what the block covers (docs/format/meta.md)
 *   <ULID>/index           symbols, series with their chunk references, postings
 *                          (docs/format/index.md)
 *   <ULID>/chunks/000001   chunk segment files (docs/format/chunk-segments.md)
 *   <ULID>/tombstones      deleted time ranges of series, when there are any
 *                          (docs/format/tombstones.md); the one file that changes
 *
 * Timestamp chunks and value chunks are separate entries of the segment files,
 * each with its own CRC32C, so that reading timestamps never reads a profile. */
#ifndef PROFD_TSDB_BLOCK_H
#define PROFD_TSDB_BLOCK_H

#include <stdint.h>

#include "lpair.h"
#include "profd/util.h"

/* One chunk of a series, as the writer takes it and the reader hands it out. */
struct pd_block_chunk {
	int64_t mint, maxt;  /* first and last timestamp, ms */
	uint32_t count;      /* samples */
	const uint8_t *ts;   /* encoded timestamp chunk (chunkenc.h) */
	size_t ts_len;
	const uint8_t *vals; /* sealed value chunk (chunkenc.h) */
	size_t vals_len;
};

/* Where a chunk lives in a block (reader side). */
struct pd_block_chunk_meta {
	int64_t mint, maxt;
	uint32_t count;
	uint64_t ts_ref;   /* segment number << 32 | offset */
	uint64_t vals_ref;
};

struct pd_block_meta {
	char ulid[27];
	int64_t mint, maxt; /* maxt exclusive, as Prometheus */
	uint64_t num_series, num_chunks, num_samples;
	uint64_t ts_bytes, value_bytes; /* chunk bytes of each kind */
	int level;                       /* 1 for a block cut from the head */
	char (*sources)[27];             /* ULIDs of the level-1 blocks it holds */
	size_t nsources;
	int idle; /* compaction hint "from-idle-series": idle series written early */
};

/* ---- tombstones (tombstones.c) -------------------------------------------- */

/* A deleted interval [mint, maxt] (both inclusive, ms) of series ref. */
struct tomb_entry {
	uint64_t ref;
	int64_t mint, maxt;
};

/* Deleted intervals by series: after tomb_normalize, ascending by (ref, mint),
 * the intervals of one ref disjoint and not adjacent. Embedded: tomb_init /
 * tomb_fini. */
struct tombstones {
	struct tomb_entry *v;
	size_t n, cap;
};

#define PD_TOMB_FILE "tombstones"
#define PD_TOMB_MAGIC 0x50445442u /* "PDTB" */
#define PD_TOMB_VERSION 1
#define PD_TOMB_HEADER_SIZE 8 /* magic, version, 3 reserved zero bytes */
#define PD_TOMB_MAX_SIZE ((size_t)256 << 20) /* largest file a reader accepts */

void tomb_init(struct tombstones *t);
void tomb_fini(struct tombstones *t);
/* Adds an interval (none when mint > maxt); call tomb_normalize before lookups. */
int tomb_add(struct tombstones *t, uint64_t ref, int64_t mint, int64_t maxt);
/* Sorts and joins overlapping and adjacent intervals of each series. */
void tomb_normalize(struct tombstones *t);
/* The intervals of ref (borrowed from t), or NULL with *n = 0. */
const struct tomb_entry *tomb_find(const struct tombstones *t, uint64_t ref, size_t *n);
/* True when one of the n intervals holds t. */
int tomb_covers(const struct tomb_entry *iv, size_t n, int64_t t);
/* to = a copy of from (to is initialised here). */
int tomb_copy(const struct tombstones *from, struct tombstones *to);
/* The tombstones file's bytes of a normalised t into out (emptied first). */
int tomb_encode(const struct tombstones *t, struct pd_buf *out);
/* Parses a tombstones file strictly into t (initialised here, left empty on
 * error); errors name what (the file) and the offset. */
int tomb_decode(const uint8_t *p, size_t len, struct tombstones *t, const char *what,
		struct pd_err *err);
/* Reads dir/tombstones into t; a missing file is an empty table. *size: its bytes. */
int tomb_read_file(const char *dir, struct tombstones *t, uint64_t *size, struct pd_err *err);
/* Writes t as dir/tombstones (temporary name, fsync, rename, fsync of dir); an
 * empty t removes the file. *size: the bytes written (0 for none). */
int tomb_write_file(const char *dir, const struct tombstones *t, uint64_t *size,
		    struct pd_err *err);

/* ---- writing -------------------------------------------------------------- */

struct pd_block_writer;

/* Starts a block for [mint, maxt) in parent_dir, written under a temporary name.
 * level and sources describe compaction (level 1, no sources, for a head block). */
int pd_block_writer_create(struct pd_block_writer **out, const char *parent_dir, int64_t mint,
			   int64_t maxt, int level, const char (*sources)[27], size_t nsources,
			   struct pd_err *err);
/* Marks the block as holding only series taken out of the head early, idle
 * (meta.json's compaction hint "from-idle-series"): it does not move the
 * store's earliest accepted time, and compaction leaves it until its range
 * is complete. */
void pd_block_writer_set_idle(struct pd_block_writer *w);
/* Adds one series with its chunks (in time order). Series must come in ascending
 * label order (compare name, then value, pair by pair; a prefix sorts first).
 * Everything is copied or written out before returning. */
int pd_block_writer_add_series(struct pd_block_writer *w, const struct pd_lpair *labels, size_t n,
			       const struct pd_block_chunk *chunks, size_t nchunks,
			       struct pd_err *err);
/* Writes index and meta.json, fsyncs, and renames the block into place. ulid
 * receives its name. Frees w whatever the outcome. */
int pd_block_writer_finish(struct pd_block_writer *w, char ulid[27], struct pd_err *err);
/* Throws the unfinished block away (removes its files) and frees w; NULL ok. */
void pd_block_writer_abort(struct pd_block_writer *w);

/* ---- reading -------------------------------------------------------------- */

struct pd_block;

/* Opens the block in dir: reads meta.json, maps index and chunk segments, checks
 * the index's CRCs. *out is owned by the caller (pd_block_close). */
int pd_block_open(struct pd_block **out, const char *dir, struct pd_err *err);
void pd_block_close(struct pd_block *b);
/* Borrowed until close. */
const struct pd_block_meta *pd_block_meta(const struct pd_block *b);
const char *pd_block_dir(const struct pd_block *b);
/* Total bytes of the block's files. */
uint64_t pd_block_size(const struct pd_block *b);

/* Sorted label names / values of a name. The strings are borrowed until close;
 * *out is malloc'd (free it). */
int pd_block_label_names(const struct pd_block *b, const char ***out, size_t *n, struct pd_err *err);
int pd_block_label_values(const struct pd_block *b, const char *name, const char ***out, size_t *n,
			  struct pd_err *err);
/* Ascending series refs having name=value (none: *n = 0). *out is malloc'd. */
int pd_block_postings(const struct pd_block *b, const char *name, const char *value,
		      uint64_t **out, size_t *n, struct pd_err *err);
/* Every series ref, ascending. */
int pd_block_all_series(const struct pd_block *b, uint64_t **out, size_t *n, struct pd_err *err);
/* A series' labels (sorted) and chunk metas. Both arrays are malloc'd (free them);
 * label strings are borrowed until close. */
int pd_block_series(const struct pd_block *b, uint64_t ref, struct pd_lpair **labels, size_t *nl,
		    struct pd_block_chunk_meta **chunks, size_t *nc, struct pd_err *err);
/* The bytes of a chunk entry (timestamp or value chunk), after checking its CRC.
 * Borrowed from the mapping until close. */
int pd_block_chunk_bytes(const struct pd_block *b, uint64_t ref, const uint8_t **p, size_t *len,
			 struct pd_err *err);

/* The block's tombstones, borrowed: they change only through
 * pd_block_swap_tombstones, which the caller must keep from running meanwhile. */
const struct tombstones *pd_block_tombstones(const struct pd_block *b);
/* Replaces the block's tombstones by *t (taken over; *t is left with the old
 * ones, which the caller frees). The file must have been written already
 * (tomb_write_file). No reader may use the block meanwhile. */
void pd_block_swap_tombstones(struct pd_block *b, struct tombstones *t, uint64_t file_size);

/* Writes a new ULID for time ms (Crockford base32, 26 characters + NUL). */
void pd_ulid_new(char out[27], int64_t ms);

#endif
