/* chunkenc.h: the two halves of a profd chunk. A timestamp chunk holds sample
 * times in Prometheus's double-delta bit-packed encoding; a value chunk holds the
 * profiles of the same samples, in groups that are each one zstd frame. The two
 * are appended and cut together but read independently, so listing timestamps
 * never touches a profile. Byte layouts: docs/format/chunks.md.
 *
 * Knows nothing of files: chunks are byte strings. */
#ifndef PROFD_CHUNKENC_H
#define PROFD_CHUNKENC_H

#include <stddef.h>
#include <stdint.h>

#include "profd/util.h"

/* Most samples a chunk holds (the count is stored in 16 bits). */
#define PD_CHUNKENC_MAX_SAMPLES 65535

/* ---- timestamp chunk ------------------------------------------------------ */

/* An appendable timestamp chunk. Embedded: pd_chunkenc_ts_init / _fini. */
struct pd_chunkenc_ts {
	struct pd_buf b;
	uint16_t count;
	uint8_t bit; /* bits used in the last byte of b, 0 when it is full */
	int64_t t;   /* last timestamp */
	int64_t delta;
};

void pd_chunkenc_ts_init(struct pd_chunkenc_ts *c);
void pd_chunkenc_ts_fini(struct pd_chunkenc_ts *c);
/* Appends t, which must be greater than the last timestamp (PD_EINVAL otherwise,
 * PD_ETOOBIG when the chunk is full). */
int pd_chunkenc_ts_append(struct pd_chunkenc_ts *c, int64_t t, struct pd_err *err);
/* The encoded chunk, borrowed until the next append or fini. */
const uint8_t *pd_chunkenc_ts_bytes(const struct pd_chunkenc_ts *c, size_t *len);

/* Iterates over an encoded timestamp chunk; the bytes are borrowed and must
 * outlive the iterator. Embedded; no fini needed. Use: while (next(it)) at(it);
 * then err(it) tells a corrupt chunk from the end. */
struct pd_chunkenc_ts_iter {
	const uint8_t *p;
	size_t len;
	size_t bitpos; /* position in bits from p */
	uint16_t count, read;
	int64_t t, delta;
	int err;
};

void pd_chunkenc_ts_iter_init(struct pd_chunkenc_ts_iter *it, const uint8_t *p, size_t len);
/* Advances; 1 when a timestamp is available, 0 at the end or on error. */
int pd_chunkenc_ts_iter_next(struct pd_chunkenc_ts_iter *it);
static inline int64_t pd_chunkenc_ts_iter_at(const struct pd_chunkenc_ts_iter *it)
{
	return it->t;
}
/* 0, or PD_ECORRUPT when the chunk ended early or held bad data. */
static inline int pd_chunkenc_ts_iter_err(const struct pd_chunkenc_ts_iter *it)
{
	return it->err;
}
/* Number of samples in an encoded chunk (0 for a malformed one). */
uint16_t pd_chunkenc_ts_count(const uint8_t *p, size_t len);
/* After the iterator has read every timestamp (next returned 0 without an
 * error): the offset of the first byte after the bit stream, where a totals
 * section starts when the chunk has one (below). */
static inline size_t pd_chunkenc_ts_iter_end(const struct pd_chunkenc_ts_iter *it)
{
	return (it->bitpos + 7) / 8;
}
/* The totals section of an encoded timestamp chunk: *sec points into p (borrowed)
 * and *sec_len is 0 when the chunk has none. Decodes every timestamp to find
 * it: PD_ECORRUPT when they do not decode. */
int pd_chunkenc_ts_totals(const uint8_t *p, size_t len, const uint8_t **sec, size_t *sec_len);

/* ---- totals section --------------------------------------------------------- */

/* A timestamp chunk may carry, after its bit stream, a totals section: for each
 * of its samples, whether it is a profile and if so its duration_nanos and the
 * sum of each sample type's values (pd_pprof_sum), so that values over time are
 * read beside the timestamps without opening a profile. Types (type, unit) and
 * the sets of types profiles have are written once a chunk; sums and durations
 * as differences from the previous profile's. Readers of timestamps ignore it;
 * a chunk written before it existed has none. Layout: docs/format/chunks.md. */
#define PD_CHUNKENC_TOTALS_VERSION 4 /* written; 1 to 3 are read too */

/* The place of (type, unit) in the list of well-known sample types that version 3
 * names by number (the types Go's runtime writes), or -1. An iterator's type and
 * unit of a well-known type point to static strings, not into the section. */
long pd_chunkenc_totals_well_known(const char *type, const char *unit);

/* An appendable totals section: one record per sample, in the order of the
 * timestamp chunk's samples. Heap object. */
struct pd_chunkenc_totals;

/* NULL when out of memory. */
struct pd_chunkenc_totals *pd_chunkenc_totals_create(void);
void pd_chunkenc_totals_destroy(struct pd_chunkenc_totals *c);
/* Heap bytes the section holds. */
size_t pd_chunkenc_totals_memory(const struct pd_chunkenc_totals *c);
/* Appends a profile with n sample types (types[i], units[i]: borrowed for the
 * call) whose values sum to sums[i], and its duration. On error (PD_ENOMEM,
 * PD_ETOOBIG past 65535 records) nothing was appended. */
int pd_chunkenc_totals_append(struct pd_chunkenc_totals *c, size_t n, const char *const *types,
			      const char *const *units, const int64_t *sums, int64_t duration,
			      struct pd_err *err);
/* Appends a sample that is not a profile (no types, no duration). */
int pd_chunkenc_totals_append_opaque(struct pd_chunkenc_totals *c, struct pd_err *err);
struct pd_pprof_profile;
/* Appends p's totals (p is only read; NULL: not a profile). */
int pd_chunkenc_totals_append_profile(struct pd_chunkenc_totals *c,
				      const struct pd_pprof_profile *p, struct pd_err *err);
uint32_t pd_chunkenc_totals_count(const struct pd_chunkenc_totals *c);
/* The section's bytes, borrowed until the next append or destroy; they go right
 * after the timestamp chunk's bytes. */
const uint8_t *pd_chunkenc_totals_bytes(const struct pd_chunkenc_totals *c, size_t *len);

/* A sample type as the section names it: the strings are borrowed from the
 * section's bytes and are not NUL-terminated. */
struct pd_chunkenc_totals_type {
	const char *type;
	size_t type_len;
	const char *unit;
	size_t unit_len;
};

/* Iterates over a totals section (bytes borrowed, outliving the iterator).
 * Embedded: _init, then while (next(it)) read the fields below, then
 * err(it), then _fini. After next returned 1: profile (0: the sample is not a
 * profile); duration; n totals vals[i] of types[type_idx[i]]. types grows as the
 * section defines them (ntypes), in order of definition. */
struct pd_chunkenc_totals_iter {
	const uint8_t *p;
	size_t len, pos;
	uint32_t left;
	int err;
	int profile;
	int64_t duration;
	size_t n;
	const uint32_t *type_idx;
	int64_t *vals;
	struct pd_chunkenc_totals_type *types;
	size_t ntypes;
	/* private */
	size_t types_cap, prev_cap, vals_cap;
	int64_t *prev, prev_duration;
	int64_t *pdelta; /* version 4: each type's last change */
	size_t pdelta_cap;
	uint32_t *set_types;
	size_t nset_types, set_types_cap;
	size_t *set_off, *set_len;
	size_t nsets, sets_cap, sets_len_cap;
	int version;     /* of the section: 1 to 4 */
	uint64_t rep;    /* version 2: records of the current repeat still to come */
	size_t last_set; /* the set of the last profile record, SIZE_MAX for none */
};

/* Starts reading a section of count records (the timestamp chunk's count).
 * PD_ENOTFOUND when there is no section (len 0) or it has a version this
 * reader does not know (answered as if absent); the iterator needs _fini
 * either way. */
int pd_chunkenc_totals_iter_init(struct pd_chunkenc_totals_iter *it, const uint8_t *p, size_t len,
				 uint32_t count);
/* As _init, on an iterator initialised before (not yet finished): its buffers
 * are kept, so reading many sections costs no allocation each. */
int pd_chunkenc_totals_iter_reuse(struct pd_chunkenc_totals_iter *it, const uint8_t *p,
				  size_t len, uint32_t count);
/* 1 when a record is available; 0 at the end or on error. */
int pd_chunkenc_totals_iter_next(struct pd_chunkenc_totals_iter *it);
/* 0, PD_ECORRUPT when the section is malformed (a record or set out of range,
 * fewer records than count, bytes left after the last), PD_ENOMEM. */
static inline int pd_chunkenc_totals_iter_err(const struct pd_chunkenc_totals_iter *it)
{
	return it->err;
}
void pd_chunkenc_totals_iter_fini(struct pd_chunkenc_totals_iter *it);

/* ---- value chunk ---------------------------------------------------------- */

/* Encoding byte that starts every value chunk. New encodings get new numbers. */
enum pd_chunkenc_value_encoding {
	/* v1: raw profiles, `group` to a zstd frame */
	PD_CHUNKENC_VALUES_ZSTD_GROUPS = 1,
	/* v2: profiles decomposed into the chunk's deduplicated tables (strings,
	 * mappings, functions, locations, a stack tree) and per-profile records of
	 * stack ids and value columns, records `group` to a zstd frame */
	PD_CHUNKENC_VALUES_COLUMNAR = 2,
	/* the chunk byte of encoding 2 whose profiles' times are written relative to
	 * their samples' timestamps (appended with pd_chunkenc_values_append_at):
	 * reading one back needs its timestamp */
	PD_CHUNKENC_VALUES_COLUMNAR_REL = 3,
	/* the chunk byte that sealed chunks of relative times are written with: as
	 * 3, and the tables frame is compressed against the built-in dictionary */
	PD_CHUNKENC_VALUES_COLUMNAR_DICT = 4,
	/* the chunk byte of the store's sealed chunks of small records (at most 16
	 * KiB in all) whose timestamp chunk carries the totals section: as 4, one
	 * group, and a value column may leave one sample's value to the profile's
	 * total there; reading it needs that timestamp chunk (the _tc readers below) */
	PD_CHUNKENC_VALUES_COLUMNAR_TOTALS = 5,
};

/* "no timestamp" for the _at functions below: the chunk's times are then
 * written on their own (and a chunk of relative times cannot be read) */
#define PD_CHUNKENC_NO_TS INT64_MIN

#define PD_CHUNKENC_DEFAULT_ENCODING PD_CHUNKENC_VALUES_COLUMNAR
#define PD_CHUNKENC_DEFAULT_GROUP 16
#define PD_CHUNKENC_V2_DEFAULT_GROUP 32
#define PD_CHUNKENC_DEFAULT_ZSTD_LEVEL 3

/* An appendable value chunk: profiles (any bytes) in groups of `group`, each full
 * group compressed as one zstd frame at once, the last group kept raw until the
 * chunk is sealed. Heap object. */
struct pd_chunkenc_values;

/* Returns a new v1 appender, or NULL when out of memory. group and level of 0
 * take the defaults. */
struct pd_chunkenc_values *pd_chunkenc_values_create(unsigned group, int level);
/* Returns a new appender of the given encoding (0: the default, v2), or NULL when
 * out of memory or the encoding is unknown. A v2 appender decomposes each profile
 * it is given (raw profile.proto); bytes that are not a profile are kept as they
 * are. */
struct pd_chunkenc_values *pd_chunkenc_values_create_enc(int encoding, unsigned group, int level);
/* Heap bytes the appender holds (not counting shared symbols). */
size_t pd_chunkenc_values_memory(const struct pd_chunkenc_values *c);

/* Symbol tables that v2 appenders can share, so that many series of one program
 * (a head's open chunks) hold its strings, functions, locations and stacks once.
 * Thread safe; reference counted: create gives one reference, each appender
 * created on it takes its own, unref drops one. A sealed chunk still carries its
 * own tables: sealing an appender on shared symbols writes only what its profiles
 * use. */
struct pd_chunkenc_symbols;
struct pd_chunkenc_symbols *pd_chunkenc_symbols_create(void);
void pd_chunkenc_symbols_unref(struct pd_chunkenc_symbols *s);
/* Heap bytes of the tables. */
size_t pd_chunkenc_symbols_memory(struct pd_chunkenc_symbols *s);
/* A v2 appender on shared symbols (NULL: its own); NULL when out of memory. */
struct pd_chunkenc_values *pd_chunkenc_values_create_shared(struct pd_chunkenc_symbols *s,
							    unsigned group, int level);
/* Where a v2 appender keeps its full frames of compressed records (a frame is
 * full when it holds its two records; the frame being filled stays in memory),
 * so that an open chunk in a head holds on the heap only what the next append
 * needs: the owner of the store (a head) puts them in files. Each function is
 * called with ctx; all may be called from many threads at once.
 *   put:  stores len bytes (borrowed) and sets *ref; nonzero when it could not,
 *         and the appender then keeps them in memory
 *   get:  copies the len bytes stored as ref into out; nonzero with err set when
 *         it cannot (an I/O error)
 *   drop: the bytes of ref are no longer needed (the appender is destroyed) */
struct pd_chunkenc_frame_store {
	int (*put)(void *ctx, const uint8_t *p, size_t len, uint64_t *ref);
	int (*get)(void *ctx, uint64_t ref, uint8_t *out, size_t len, struct pd_err *err);
	void (*drop)(void *ctx, uint64_t ref, size_t len);
	void *ctx;
};
/* As pd_chunkenc_values_create_shared, with its full frames in fs (borrowed:
 * it must outlive the appender; NULL: in memory). */
struct pd_chunkenc_values *pd_chunkenc_values_create_stored(struct pd_chunkenc_symbols *s,
							    const struct pd_chunkenc_frame_store *fs,
							    unsigned group, int level);
/* The encoding of a sealed value chunk (its first byte; 2 for any byte of
 * encoding 2), or 0 when it is empty. */
int pd_chunkenc_values_encoding(const uint8_t *chunk, size_t len);
void pd_chunkenc_values_destroy(struct pd_chunkenc_values *c);
/* Copies len bytes of one profile into the chunk. */
int pd_chunkenc_values_append(struct pd_chunkenc_values *c, const uint8_t *p, size_t len,
			      struct pd_err *err);
struct pd_pprof_profile;
/* The same when the caller has decoded p already (decoded is only read; NULL:
 * decode here): a v2 chunk then decomposes it without decoding it again. */
int pd_chunkenc_values_append_decoded(struct pd_chunkenc_values *c, const uint8_t *p, size_t len,
				      const struct pd_pprof_profile *decoded, struct pd_err *err);
/* The same for the sample at ts (ms since the epoch): a v2 chunk appended to
 * this way writes each profile's time_nanos as its difference from ts, which
 * the timestamp chunk holds already, and needs ts again to read it (the _at
 * readers below). The first append decides: a chunk takes timestamps on every
 * append (PD_EINVAL otherwise) or on none (PD_CHUNKENC_NO_TS). */
int pd_chunkenc_values_append_at(struct pd_chunkenc_values *c, int64_t ts, const uint8_t *p,
				 size_t len, const struct pd_pprof_profile *decoded,
				 struct pd_err *err);
size_t pd_chunkenc_values_count(const struct pd_chunkenc_values *c);
/* Copies profile i into *out (malloc'd, caller frees) without sealing the chunk. */
int pd_chunkenc_values_get(const struct pd_chunkenc_values *c, size_t i, uint8_t **out,
			   size_t *out_len, struct pd_err *err);
/* The same given profile i's timestamp (required for a chunk of relative times:
 * PD_EINVAL without it; ignored otherwise). */
int pd_chunkenc_values_get_at(const struct pd_chunkenc_values *c, size_t i, int64_t ts,
			      uint8_t **out, size_t *out_len, struct pd_err *err);
/* Encodes the chunk as immutable bytes (compressing the open group) into *out,
 * malloc'd and owned by the caller. The appender stays usable. */
int pd_chunkenc_values_seal(const struct pd_chunkenc_values *c, uint8_t **out, size_t *out_len,
			    struct pd_err *err);
/* The same for a chunk whose timestamp chunk will carry the totals section of
 * exactly these profiles (pd_chunkenc_totals_append_profile of each, in order):
 * a chunk of relative times whose records are small (at most 16 KiB in all) is
 * then written with encoding byte 5, as one group, whose value columns leave one
 * value each to those totals where that is shorter, so that it reads only beside
 * that timestamp chunk (the _tc readers). Other chunks are sealed as
 * pd_chunkenc_values_seal seals them. */
int pd_chunkenc_values_seal_totals(const struct pd_chunkenc_values *c, uint8_t **out,
				   size_t *out_len, struct pd_err *err);

/* Reads profile i of a sealed value chunk into *out (malloc'd, caller frees),
 * decompressing only its group. At most max_profile bytes are accepted. */
int pd_chunkenc_values_read(const uint8_t *chunk, size_t len, size_t i, size_t max_profile,
			    uint8_t **out, size_t *out_len, struct pd_err *err);
/* The same given profile i's timestamp (as pd_chunkenc_values_get_at). */
int pd_chunkenc_values_read_at(const uint8_t *chunk, size_t len, size_t i, int64_t ts,
			       size_t max_profile, uint8_t **out, size_t *out_len,
			       struct pd_err *err);
/* The same given the timestamp chunk cut with the value chunk (tsc, tsl:
 * borrowed; its timestamps and its totals section): reads a chunk of any
 * encoding, byte 5 included, which the readers above refuse. PD_ECORRUPT when
 * the timestamp chunk does not decode, has fewer timestamps than the value
 * chunk has profiles, or (byte 5) has no totals section. */
int pd_chunkenc_values_read_tc(const uint8_t *chunk, size_t len, const uint8_t *tsc, size_t tsl,
			       size_t i, size_t max_profile, uint8_t **out, size_t *out_len,
			       struct pd_err *err);
/* Receives merged profiles: p (owned by the callee from now on) sums the `count`
 * profiles of the chunk from index `first`, whose records took `bytes` bytes
 * decoded. A non-zero return stops the merge and is returned by it. */
struct pd_pprof_profile;
typedef int (*pd_chunkenc_merge_fn)(void *ctx, struct pd_pprof_profile *p, size_t first,
				    size_t count, size_t bytes);

/* Merges profiles [from, to) of a sealed value chunk, calling emit in index
 * order. A v2 chunk is merged by stack id: its tables and groups are
 * decompressed once, and each run of profiles whose headers agree becomes one
 * profile (merging the emitted profiles with pd_pprof_merge gives what merging
 * the profiles one by one gives). A v1 chunk gives each profile on its own. */
int pd_chunkenc_values_merge(const uint8_t *chunk, size_t len, size_t from, size_t to,
			     size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx,
			     struct pd_err *err);
/* The same over an appender's profiles, without sealing it. */
int pd_chunkenc_values_merge_open(const struct pd_chunkenc_values *c, size_t from, size_t to,
				  size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx,
				  struct pd_err *err);
/* Both given the chunk's timestamps: ts[i] is profile i's (borrowed; required
 * for a chunk of relative times, PD_EINVAL without; may be NULL otherwise). */
int pd_chunkenc_values_merge_at(const uint8_t *chunk, size_t len, size_t from, size_t to,
				const int64_t *ts, size_t max_profile, pd_chunkenc_merge_fn emit,
				void *ctx, struct pd_err *err);
int pd_chunkenc_values_merge_open_at(const struct pd_chunkenc_values *c, size_t from, size_t to,
				     const int64_t *ts, size_t max_profile,
				     pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err);
/* Merges a sealed chunk given its timestamp chunk (as pd_chunkenc_values_read_tc):
 * every encoding, byte 5 included. */
int pd_chunkenc_values_merge_tc(const uint8_t *chunk, size_t len, const uint8_t *tsc, size_t tsl,
				size_t from, size_t to, size_t max_profile,
				pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err);

/* Number of profiles in a sealed value chunk, or a negative PD_E... code. */
int64_t pd_chunkenc_values_read_count(const uint8_t *chunk, size_t len, struct pd_err *err);

#endif
