/* v2_int.h: the columnar value chunk (encoding 2), private to chunkenc: the
 * chunk's deduplicated tables (strings, mappings, functions, locations, stack
 * tree) as the appender grows them and the reader parses them, the per-profile
 * record coder and the state it carries from record to record, the zstd frames,
 * the appender and the reader, and the varint helpers both sides use. Layout:
 * docs/format/chunks.md, "Value chunk, encoding 2". */
#ifndef PROFD_CHUNKENC_V2_INT_H
#define PROFD_CHUNKENC_V2_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "profd/util.h"

/* ---- varints ---------------------------------------------------------------- */

/* Append v as a varint (v2_put_sv: zigzag) to b; 0, or PD_ENOMEM/PD_ETOOBIG as
 * pd_buf_append. Inline: a record's encoder writes one per value, and a call to
 * pd_buf_append for each took 4% of the daemon's CPU (bench/daemon.sh). */
int v2_put_uv_slow(struct pd_buf *b, uint64_t v);
static inline int v2_put_uv(struct pd_buf *b, uint64_t v)
{
	if (b->cap - b->len < 10)
		return v2_put_uv_slow(b, v);
	uint8_t *d = b->data + b->len;
	size_t n = 0;
	while (v >= 0x80) {
		d[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	d[n++] = (uint8_t)v;
	b->len += n;
	return 0;
}
static inline int v2_put_sv(struct pd_buf *b, int64_t v)
{
	return v2_put_uv(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}
/* The bytes v2_put_uv and v2_put_sv write for v. */
static inline size_t v2_uv_len(uint64_t v)
{
	size_t n = 1;
	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}
static inline size_t v2_sv_len(int64_t v)
{
	return v2_uv_len(((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* A bounded reader over bytes; the first error sticks and later reads give 0. */
struct v2_rd {
	const uint8_t *p;
	size_t len, pos;
	int bad;
};

/* Any varint; v2_uv inlines the one-byte case, most of a record's varints. */
uint64_t v2_uv_slow(struct v2_rd *r);

static inline uint64_t v2_uv(struct v2_rd *r)
{
	if (!r->bad && r->pos < r->len && r->p[r->pos] < 0x80)
		return r->p[r->pos++];
	return v2_uv_slow(r);
}

static inline int64_t v2_sv(struct v2_rd *r)
{
	uint64_t u = v2_uv(r);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static inline uint8_t v2_byte(struct v2_rd *r)
{
	if (r->bad || r->pos >= r->len) {
		r->bad = 1;
		return 0;
	}
	return r->p[r->pos++];
}
/* A count of items that each take at least min_bytes more input: refuses counts
 * the remaining bytes cannot hold, so that no input allocates beyond its size. */
size_t v2_count(struct v2_rd *r, size_t min_bytes);

/* ---- tables ------------------------------------------------------------------- */

struct v2_mapping {
	uint64_t start, limit, offset;
	uint32_t filename, build_id; /* string indices */
	uint8_t flags;               /* has_functions 1, has_filenames 2, has_line_numbers 4,
				      * has_inline_frames 8 */
};

struct v2_function {
	uint32_t name, system_name, filename;
	int64_t start_line;
};

struct v2_line {
	uint32_t function;
	int64_t line, column;
};

struct v2_location {
	uint64_t address;
	uint32_t mapping; /* index + 1; 0: none */
	uint32_t line;    /* first line in the lines table */
	uint32_t nline;
	uint8_t folded;
};

struct v2_node {
	uint32_t parent; /* index + 1; 0: a root */
	uint32_t location;
};

/* An open-addressing index of table entries: slots hold index + 1. */
struct v2_index {
	uint32_t *slot;
	size_t cap; /* power of two or 0 */
};

struct v2_tables {
	/* strings: NUL-terminated, back to back in sbytes; soff[i] .. soff[i+1]-1 */
	struct pd_buf sbytes;
	uint32_t *soff;
	size_t nstr, str_cap;
	struct v2_mapping *map;
	size_t nmap, map_cap;
	struct v2_function *fn;
	size_t nfn, fn_cap;
	struct v2_location *loc;
	size_t nloc, loc_cap;
	struct v2_line *line;
	size_t nline, line_cap;
	struct v2_node *node;
	size_t nnode, node_cap;
	/* dedup indexes: only the appender builds them */
	struct v2_index istr, imap, ifn, iloc, inode;
	/* frozen: a read-only view of tables that others may read at the same time
	 * (v2_tables_view): interning finds entries but adds none, and sets missed
	 * when one is not there */
	int frozen, missed;
};

void v2_tables_init(struct v2_tables *t);
void v2_tables_fini(struct v2_tables *t);
/* Heap bytes the tables hold (arrays, indexes). */
size_t v2_tables_memory(const struct v2_tables *t);

static inline const char *v2_str(const struct v2_tables *t, uint32_t i)
{
	return (const char *)t->sbytes.data + t->soff[i];
}

static inline size_t v2_str_len(const struct v2_tables *t, uint32_t i)
{
	return t->soff[i + 1] - t->soff[i] - 1;
}

/* A frozen copy of t (sharing its arrays) for encoding under a read lock: it
 * stays valid while the lock is held, and nothing is written through it. */
static inline struct v2_tables v2_tables_view(const struct v2_tables *t)
{
	struct v2_tables v = *t;
	v.frozen = 1;
	v.missed = 0;
	return v;
}

/* Interning: each returns the index of an equal entry, adding one when there is
 * none. -1 when out of memory, or, in frozen tables, when there is none. Entries i with avoid[i] set (avoid may be NULL; it
 * covers every index the table can reach) are not reused: a profile that holds two equal entries under two ids gets
 * two entries, so that within a profile table index and id are one to one. */
int64_t v2_intern_str(struct v2_tables *t, const char *s, size_t len);
int64_t v2_intern_map(struct v2_tables *t, const struct v2_mapping *m,
		      const uint8_t *avoid);
int64_t v2_intern_fn(struct v2_tables *t, const struct v2_function *f,
		     const uint8_t *avoid);
/* lines are copied in */
int64_t v2_intern_loc(struct v2_tables *t, const struct v2_location *l,
		      const struct v2_line *lines, const uint8_t *avoid);
int64_t v2_intern_node(struct v2_tables *t, uint32_t parent, uint32_t location);

/* Appends the tables' serialised form to b; cuts (may be NULL) gets where its
 * tables end: after the strings, the mappings, the functions, the locations with
 * their lines (offsets from the start of what it wrote); the stack tree follows. */
#define V2_TABLES_CUTS 4
/* the least bytes of tables a cut sets apart (bench/tsdb.sh section 1) */
#define V2_CUT_MIN 1024
/* hex: strings that are long lowercase hex (V2_HEX_MIN digits or more) may be
 * written as the bytes they spell (a chunk of byte 4 only). */
#define V2_HEX_MIN 16
int v2_tables_write(const struct v2_tables *t, struct pd_buf *b, size_t cuts[V2_TABLES_CUTS],
		    int hex);
/* Parses serialised tables into t (initialised by the caller), checking every
 * reference. err names what is wrong. */
int v2_tables_read(struct v2_tables *t, const uint8_t *p, size_t len, struct pd_err *err);

/* ---- profile records ------------------------------------------------------------- */

/* Record layout constants (docs/format/chunks.md, "Records"): the profile
 * record's flags, the record kinds, and the value column modes. */
enum {
	F_PERIOD_TYPE = 1 << 0,
	F_MAP_SAME = 1 << 1,    /* mapping list and ids as the previous profile's */
	F_MAP_SEQ = 1 << 2,     /* mapping ids are 1..n in order */
	F_LOC_DERIVED = 1 << 3, /* locations in order of first use by the samples */
	F_LOC_SEQ = 1 << 4,
	F_FN_DERIVED = 1 << 5, /* functions in order of first use by the locations */
	F_FN_SEQ = 1 << 6,
	F_LABELS = 1 << 7,
	F_ALL = (1 << 8) - 1,
};

/* KIND_REPEAT: the previous profile record of the group again, with a new time
 * (docs/format/chunks.md, "Repeats"); KIND_RUN: n repeats in a row, their time
 * fields packed ("Runs") */
enum { KIND_PROFILE = 0, KIND_OPAQUE = 1, KIND_REPEAT = 2, KIND_RUN = 3 };

/* The longest record body (the record without its kind and time) a repeat may
 * stand for: repeats are for the small records of idle profiles, and this bounds
 * what each series' state keeps to say whether the next record repeats it. */
#define V2_REPEAT_MAX 128

/* The most bytes of records (uncompressed) of a chunk that the store seals with
 * byte 5 (holes), as one group rather than groups of the appender's size: the
 * block, mutex and threadcreate profiles of a program, whose records are small,
 * then pay for no group start after the first (raw values, no zstd history), and
 * a read of one steps over at most this much; a chunk of larger records (heap
 * profiles) is sealed with byte 4, as holes would save it under 1% for as much
 * time again as its seal takes (docs/format/chunks.md, "Why this layout") */
#define V2_ONE_GROUP_MAX 16384

/* zstd level of a sealed chunk's tables frame, at least: the tables are written
 * once a chunk and hold most of its bytes on profiles with changing stacks (cpu),
 * and level 15 makes them 7-8% smaller than level 3 for about 1 ms a 16 KB frame
 * (docs/format/chunks.md, bench/tsdb.sh section 1) */
#define V2_TABLES_LEVEL 15
/* the same against the tables dictionary (chunks of byte 4): with it, level 12 is
 * within 2% of 15's bytes in half its time, and smaller and faster than 15
 * without it (cpu tables 6,308 bytes in 1.3 ms against 6,184 in 3.8 ms, and 7,456
 * in 2.0 ms without; docs/format/chunks.md, "Tables dictionary") */
#define V2_TABLES_LEVEL_DICT 12
/* COL_PERIOD: each value is the sample's first value times the profile's period
 * (a cpu profile's nanoseconds column); nothing is written for the column.
 * COL_DELTA_HOLE, COL_RAW_HOLE (chunks of byte 5): COL_DELTA and COL_RAW but for
 * one sample, the hole, whose value is the column's total in the totals section
 * of the chunk's timestamp chunk minus the other samples' values
 * (docs/format/chunks.md, "Holes") */
enum { COL_RAW = 0, COL_DELTA = 1, COL_PERIOD = 2, COL_DELTA_HOLE = 3, COL_RAW_HOLE = 4 };

/* Each profile's totals, from the totals section of a chunk's timestamp chunk:
 * profile i's, one a value column, are val[off[i]] .. val[off[i + 1] - 1] (none
 * for a sample that is not a profile). What a chunk of byte 5 is read with. */
struct v2_sums {
	const int64_t *val;
	const uint32_t *off;
	size_t n;
};

/* What the record coder carries from one profile to the next within a group:
 * the values by stack for delta coding, the mapping list, the time. */
struct v2_prev {
	int valid;
	int64_t time_nanos;
	/* rel: the time field is time_nanos - base (a chunk of relative times, whose
	 * base for each record is its sample's timestamp in nanoseconds, set by the
	 * caller before the record is coded); otherwise the difference from the
	 * previous record's time. Neither is changed by v2_prev_reset. */
	int rel;
	int64_t base;
	/* the previous profile record's body for repeats: its flags (body_flen bytes)
	 * and its bytes after the time, when at most V2_REPEAT_MAX (has_body); and the
	 * time field it was written with (0 for a group's first record, unless rel) */
	uint8_t body[V2_REPEAT_MAX];
	size_t body_len, body_flen;
	int has_body;
	int64_t time_delta;
	/* the totals of the profile the next record stands for, one a value column
	 * (set by the caller before each record of a chunk of byte 5; NULL: none
	 * given, and a column with a hole is refused) */
	const int64_t *tot;
	size_t ntot;
	/* a walk over records that needs their extent and times, not their values
	 * (v2_runs_write): a hole without totals reads as if they were 0 */
	int holes_free;
	/* where the last profile record read (not a repeat) had its value columns:
	 * offsets in the reader's bytes, and its samples and columns */
	size_t col_at, col_end, col_ns, col_nv;
	/* a run being read: run_left repeats still to come, their time fields
	 * run_base plus run_width bits each from bit run_bit of run_p (the group's
	 * bytes, which the caller keeps until the run is read) */
	size_t run_left;
	const uint8_t *run_p;
	uint64_t run_bit;
	unsigned run_width;
	int64_t run_base;
	uint32_t *map_idx; /* mapping table indices and their ids, in profile order */
	uint64_t *map_id;
	size_t nmap;
	/* the previous profile's values by stack (its first sample of each stack),
	 * stacks ascending, packed as varints (stack difference, then the values)
	 * because an open chunk keeps this between appends */
	uint8_t *packed;
	size_t packed_len;
	size_t nby, nvalues;
	/* A reader's state (v2_prev_dense) keeps the values in a table indexed by
	 * stack id instead, nvalues to a row, so that stepping over a record costs
	 * no sort and no varint packing: row s holds the previous profile's values
	 * of stack s when mark[s] == gen. */
	int dense;
	uint32_t *mark;
	int64_t *dval;
	size_t drows, dcols; /* rows allocated; values per row allocated */
	uint32_t gen;
	/* scratch reused from record to record by a dense reader */
	uint32_t *sstack;
	int64_t *svals;
	size_t sstack_cap, svals_cap;
	uint8_t *sflag;
	size_t sflag_cap;
};

void v2_prev_fini(struct v2_prev *p);
void v2_prev_reset(struct v2_prev *p);
/* Makes p (zeroed or reset) a reader's state for tables of nnode stack nodes:
 * the records decoded with it are not packed for keeping (see struct v2_prev).
 * For tables too large for it (or without the memory) p stays packed, which
 * gives the same results. Freed by v2_prev_fini. */
void v2_prev_dense(struct v2_prev *p, size_t nnode);

/* ---- the delta state (v2_prev.c), which the record coders share ---------------- */

/* The time field of a record for time t (v2_time_field), and the time a field
 * stands for (v2_time_of), under p. */
int64_t v2_time_field(const struct v2_prev *p, int64_t t);
int64_t v2_time_of(const struct v2_prev *p, int64_t field);
/* Keeps a profile record's body (rec, len: from its flags on; flen bytes of
 * flags, then tlen of time) for a repeat, and the time field it was written with
 * (first: the group's first record). */
void v2_prev_body(struct v2_prev *p, const uint8_t *rec, size_t len, size_t flen, size_t tlen,
		  int64_t field, int first);
/* Grows the array *a (*cap entries of size bytes) to at least n entries; 0 or
 * PD_ENOMEM. */
int v2_scratch(void **a, size_t *cap, size_t n, size_t size);

/* The previous profile's values, unpacked for lookups while one record is coded. */
struct v2_prev_view {
	uint32_t *stack;
	int64_t *values;
	size_t n, nvalues;
};

void v2_prev_view_fini(struct v2_prev_view *v);
/* Unpacks a packed state's values into v; 0 or PD_ENOMEM. */
int v2_prev_view_of(const struct v2_prev *p, struct v2_prev_view *v);
/* The previous profile's values of a stack, or NULL. */
const int64_t *v2_prev_values(const struct v2_prev_view *v, uint32_t stack);

/* The dense state's values of a stack, or NULL. */
static inline const int64_t *v2_dense_values(const struct v2_prev *p, uint32_t stack)
{
	return stack < p->drows && p->mark[stack] == p->gen ? p->dval + (size_t)stack * p->nvalues
							    : NULL;
}

/* pvs[i]: the previous profile's values of stack stacks[i], or NULL; pview holds
 * what a packed state unpacks to (free with v2_prev_view_fini). p is valid. */
int v2_prev_lookup(const struct v2_prev *p, const uint32_t *stacks, size_t ns,
		   const int64_t **pvs, struct v2_prev_view *pview);
/* Makes prev describe a profile: time, mappings, and values by stack. 0 or
 * PD_ENOMEM. */
int v2_prev_set(struct v2_prev *p, int64_t time_nanos, const uint32_t *map_idx,
		const uint64_t *map_id, size_t nmap, const uint32_t *stacks,
		const int64_t *values, size_t nsample, size_t nvalues);

/* Adds profile bytes as one record to out: decomposed into the tables when they
 * decode as a profile, kept as opaque bytes otherwise. prev is the group's state
 * and is updated. */
int v2_record_encode(struct v2_tables *t, struct v2_prev *prev, const uint8_t *p, size_t len,
		     struct pd_buf *out, struct pd_err *err);
/* The same in two steps, so that decoding can happen outside a lock on the
 * tables: v2_profile_parts decodes (0; 1 when the bytes are not a profile; or an
 * error), and *prof and *parts are the caller's to free (pd_pprof_parts_fini,
 * pd_pprof_destroy); v2_record_encode_parts adds the record (p, len: the bytes, for
 * the opaque fallback, may be NULL); v2_record_opaque keeps bytes as they are. */
int v2_profile_parts(const uint8_t *p, size_t len, struct pd_pprof_profile **prof,
		     struct pd_pprof_parts *parts, struct pd_err *err);
int v2_record_encode_parts(struct v2_tables *t, struct v2_prev *prev,
			   const struct pd_pprof_parts *parts, const uint8_t *p, size_t len,
			   struct pd_buf *out, struct pd_err *err);
int v2_record_opaque(const uint8_t *p, size_t len, struct pd_buf *out, struct pd_err *err);
/* Appends the records of one group (rec, len; delta state from the group's
 * start) to out, with every stretch of repeats in a row that a run (KIND_RUN)
 * writes in fewer bytes written as that run. t: the tables the records refer to;
 * rel: the chunk's times are relative to its timestamps. (v2_runs.c) */
int v2_runs_write(const struct v2_tables *t, int rel, const uint8_t *rec, size_t len,
		  struct pd_buf *out, struct pd_err *err);
/* Appends the records of one group of a chunk of relative times (rec, len: no
 * holes, no runs) to out with holes (COL_*_HOLE) in every value column that one
 * makes shorter, and each record then equal to the profile record before it but
 * for its time written as a repeat. *nrep receives the repeats out holds. The
 * chunk's timestamp chunk must carry the totals section (v2_holes.c). */
int v2_holes_write(const struct v2_tables *t, const uint8_t *rec, size_t len, struct pd_buf *out,
		   size_t *nrep, struct pd_err *err);

/* A profile record in chunk terms (string, mapping and stack indices of the
 * chunk's tables), for merging records by stack id. Arrays live in the decoded
 * record's arena. */
struct v2_view {
	int has_period_type;
	uint32_t period_type[2]; /* type, unit */
	int64_t time_nanos, duration_nanos, period;
	uint32_t *st; /* sample types: type, unit, ... */
	size_t nst;
	uint32_t *comment;
	size_t ncomment;
	uint32_t hdr[4]; /* default_sample_type, drop_frames, keep_frames, doc_url */
	uint32_t *map_idx;
	size_t nmap;
	uint32_t *stacks; /* per sample: stack id (node index + 1, 0: empty) */
	int64_t *values;  /* per sample: nst values */
	size_t ns;
	uint32_t *label_off; /* sample i's labels: labels[4*label_off[i] .. 4*label_off[i+1]) */
	uint64_t *labels;    /* key, str, num, num_unit per label */
};

struct v2_decoded {
	int opaque;
	const uint8_t *bytes;
	size_t len;
	struct pd_pprof_parts parts;
	struct v2_view view;
	struct pd_arena *arena;
};

enum {
	V2_WANT_STATE = 0,   /* only the delta state advances */
	V2_WANT_PROFILE = 1, /* parts: the profile as it was appended */
	V2_WANT_VIEW = 2,    /* view: the record in chunk terms */
};

/* Decodes the record at r into *d (d->arena is created here; free with
 * v2_decoded_fini) and updates prev. want (V2_WANT_*) says what to build: nothing
 * (for the records before the one asked for: only the delta state is read, every
 * index still checked, and *d holds nothing), the parts, or the view. */
int v2_record_decode(const struct v2_tables *t, struct v2_prev *prev, struct v2_rd *r, int want,
		     struct v2_decoded *d, struct pd_err *err);
void v2_decoded_fini(struct v2_decoded *d);

/* ---- stepping over records (v2_record_step.c) ----------------------------------- */

/* Steps over the profile record at r (after its kind byte), only advancing the
 * delta state; every reference is still checked. v2_record_decode with
 * V2_WANT_STATE. */
int v2_record_step(const struct v2_tables *t, struct v2_prev *prev, struct v2_rd *r,
		   struct pd_err *err);
/* A record's mapping list after its count: nmap indices into t's mappings into
 * idx, then their ids into id. NULL, or what is wrong. */
const char *v2_read_map_list(const struct v2_tables *t, struct v2_rd *r, unsigned flags,
			     size_t nmap, uint32_t *idx, uint64_t *id);
/* After the mode byte of a column with a hole: reads the hole's index into
 * *hole; NULL, or what is wrong. */
const char *v2_col_hole(const struct v2_prev *prev, struct v2_rd *r, size_t ns, size_t nv,
			size_t *hole);
/* Sets the hole's value of column j from the profile's totals. */
void v2_fill_hole(const struct v2_prev *prev, int64_t *vals, size_t ns, size_t nv, size_t j,
		  size_t hole);

/* ---- frames (v2_frames.c) -------------------------------------------------------- */

/* Compresses raw into one zstd frame appended to out (exact size); *flen its size. */
int v2_compress(const uint8_t *raw, size_t len, int level, struct pd_buf *out, size_t *flen,
		struct pd_err *err);
/* The same, ending a zstd block at each of the ncuts offsets (ascending, within
 * len), so that each part gets entropy tables of its own: the tables frame's
 * strings and its columns of numbers compress better apart, while every part can
 * still refer back to the ones before it. Still one frame with its content size. */
int v2_compress_cut(const uint8_t *raw, size_t len, int level, const size_t *cuts, size_t ncuts,
		    struct pd_buf *out, size_t *flen, struct pd_err *err);
/* As v2_compress_cut, against dictionary dict (V2_DICT_NONE: none). */
int v2_compress_cut_dict(const uint8_t *raw, size_t len, int level, unsigned dict,
			 const size_t *cuts, size_t ncuts, struct pd_buf *out, size_t *flen,
			 struct pd_err *err);
/* As v2_compress, with prefix (raw bytes, may be NULL) as the frame's dictionary. */
int v2_compress_with(const uint8_t *raw, size_t len, int level, const uint8_t *prefix,
		     size_t plen, struct pd_buf *out, size_t *flen, struct pd_err *err);
/* Decompresses one frame, refusing more than max bytes. *out is malloc'd. */
int v2_decompress(const uint8_t *f, size_t flen, size_t max, uint8_t **out, size_t *out_len,
		  const char *what, struct pd_err *err);
/* As v2_decompress, against prefix (may be NULL), which the frame was compressed
 * with (v2_compress_with). */
int v2_decompress_with(const uint8_t *f, size_t flen, size_t max, const uint8_t *prefix,
		       size_t plen, uint8_t **out, size_t *out_len, const char *what,
		       struct pd_err *err);
/* As v2_decompress, into b (its contents replaced; empty on failure), with the
 * thread's zstd context. */
int v2_decompress_buf(const uint8_t *f, size_t flen, size_t max, struct pd_buf *b,
		      const char *what, struct pd_err *err);
/* Whether f starts like a zstd frame (its magic number). */
static inline int v2_is_zstd(const uint8_t *f, size_t flen)
{
	return flen >= 4 && f[0] == 0x28 && f[1] == 0xb5 && f[2] == 0x2f && f[3] == 0xfd;
}
/* A group's records into b (as v2_decompress_buf): when raw_ok (a chunk of byte
 * 4), a group that does not start like a zstd frame is its records as they are. */
int v2_group_bytes(const uint8_t *f, size_t flen, size_t max, int raw_ok, struct pd_buf *b,
		   struct pd_err *err);
/* As v2_decompress_buf, against dictionary dict (V2_DICT_NONE: none). */
int v2_decompress_buf_dict(const uint8_t *f, size_t flen, size_t max, unsigned dict,
			   struct pd_buf *b, const char *what, struct pd_err *err);

/* What a thread's reads of single profiles keep from one read to the next: the
 * decompressed tables and group, and the delta state. Reusing them spares each
 * read the page faults of fresh memory, which cost more than the decoding.
 * v2_rcache_take hands the thread's (NULL when out of memory) to the caller
 * until v2_rcache_done, which keeps it unless its buffers grew past 4 MiB. */
struct v2_rcache {
	struct pd_buf traw, graw;
	struct v2_prev prev;
};

struct v2_rcache *v2_rcache_take(void);
void v2_rcache_done(struct v2_rcache *c);

/* Whether b is a chunk byte of encoding 2 (2, 3, 4 or 5). */
static inline int v2_columnar_byte(uint8_t b)
{
	return b == PD_CHUNKENC_VALUES_COLUMNAR || b == PD_CHUNKENC_VALUES_COLUMNAR_REL ||
	       b == PD_CHUNKENC_VALUES_COLUMNAR_DICT || b == PD_CHUNKENC_VALUES_COLUMNAR_TOTALS;
}

/* ---- the tables dictionary (v2_dict.c) ------------------------------------------- */

/* Dictionary numbers: 0 none; 1 the built-in one that the tables frame of a chunk
 * of encoding byte 4 is compressed against (docs/format/chunks.md, "Tables
 * dictionary"). */
enum { V2_DICT_NONE = 0, V2_DICT_GO = 1 };
typedef struct ZSTD_DDict_s ZSTD_DDict;
typedef struct ZSTD_CDict_s ZSTD_CDict;
/* The dictionary's bytes (static), or NULL when id is unknown or it could not
 * be loaded (out of memory); *len their count. */
const uint8_t *v2_dict_bytes(unsigned id, size_t *len);
/* It prepared for decompression, and for compression at a level (both static,
 * made on first use and kept until the process ends); NULL as above. */
const ZSTD_DDict *v2_dict_ddict(unsigned id);
const ZSTD_CDict *v2_dict_cdict(unsigned id, int level);

/* ---- moving records to a chunk's own tables (v2_remap.c) ---------------------- */

/* Copies the entries of shared that the records use (recs: the records of
 * ngroups groups back to back, group g from goff[g] to goff[g + 1]) into own
 * (initialised by the caller, which frees it), in shared's order, and appends
 * the records to out with their references translated to own; out_goff (ngroups
 * + 1 entries) receives where each group starts and ends in out. The records
 * are not decoded: only their references change. */
int v2_remap(const struct v2_tables *shared, const uint8_t *recs, const size_t *goff,
	     size_t ngroups, struct v2_tables *own, struct pd_buf *out, size_t *out_goff,
	     struct pd_err *err);

/* ---- the appender (v2_chunk.c) and sealed chunks (v2_sealed.c) ------------------ */

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
	int added;  /* the last record added to the shared tables (see encode_record, v2_chunk.c) */
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

struct v2_symbols *v2_symbols_create(void);
void v2_symbols_ref(struct v2_symbols *s);
void v2_symbols_unref(struct v2_symbols *s);
size_t v2_symbols_memory(struct v2_symbols *s);

struct v2_appender *v2_appender_create(unsigned group, int level);
/* An appender whose records use shared tables (it takes a reference). */
struct v2_appender *v2_appender_create_shared(struct v2_symbols *sym, unsigned group, int level);
/* Keeps the appender's full frames in fs from now on (borrowed; NULL: memory). */
struct pd_chunkenc_frame_store;
void v2_appender_set_store(struct v2_appender *a, const struct pd_chunkenc_frame_store *fs);
void v2_appender_destroy(struct v2_appender *a);
/* decoded: p already decoded (and validated) by the caller, or NULL. ts: the
 * sample's timestamp (ms), or PD_CHUNKENC_NO_TS; the first append decides
 * whether the chunk's times are relative to timestamps, and every later one
 * must agree. */
int v2_appender_append(struct v2_appender *a, int64_t ts, const uint8_t *p, size_t len,
		       const struct pd_pprof_profile *decoded, struct pd_err *err);
size_t v2_appender_count(const struct v2_appender *a);
size_t v2_appender_memory(const struct v2_appender *a);
/* ts: profile i's timestamp (needed for a chunk of relative times) */
int v2_appender_get(const struct v2_appender *a, size_t i, int64_t ts, uint8_t **out,
		    size_t *out_len, struct pd_err *err);
/* The records [from, to) of the appender, uncompressed, appended to out; from
 * must start a group. */
int v2_appender_records(const struct v2_appender *a, size_t from, size_t to,
			struct pd_buf *out, struct pd_err *err);
/* Profile k (0-based) of the group of records in g (its first profile chunk index
 * base) into *out: records 0..k-1 are stepped over with prev (its contents
 * replaced) and record k decoded. rel: the chunk's times are relative to
 * timestamps, ts profile k's; sums: the chunk's totals (may be NULL). A profile
 * over max_profile bytes is refused. */
int v2_group_record(const struct v2_tables *t, struct v2_prev *prev, int rel, int64_t ts,
		    const struct v2_sums *sums, size_t base, const uint8_t *g, size_t glen,
		    size_t k, size_t max_profile, uint8_t **out, size_t *out_len,
		    struct pd_err *err);
/* holes: a chunk of relative times is written with encoding byte 5 (its value
 * columns may leave a value to the totals section, which its timestamp chunk
 * must then carry); otherwise byte 4 */
int v2_appender_seal(const struct v2_appender *a, int holes, uint8_t **out, size_t *out_len,
		     struct pd_err *err);

/* ts[i]: profile i's timestamp (needed for a chunk of relative times; may be
 * NULL otherwise) */
int v2_appender_merge(const struct v2_appender *a, size_t from, size_t to, const int64_t *ts,
		      size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err);

/* A sealed chunk's profile count, and its profile i (ts: its timestamp, needed for
 * a chunk of relative times; sums: the chunk's totals, needed for a chunk of byte
 * 5). */
int64_t v2_read_count(const uint8_t *chunk, size_t len, struct pd_err *err);
int v2_read(const uint8_t *chunk, size_t len, size_t i, int64_t ts, const struct v2_sums *sums,
	    size_t max_profile, uint8_t **out, size_t *out_len, struct pd_err *err);

/* ---- merging by stack id (v2_merge.c) --------------------------------------------- */

struct v2_merge;

/* A merge over chunk tables t (borrowed until end). */
int v2_merge_begin(struct v2_merge **out, const struct v2_tables *t, struct pd_err *err);
/* Adds the records of one group (decompressed; its first profile is chunk index
 * base) that fall in [from, to). rel: the chunk's times are relative to the
 * timestamps ts (indexed by chunk index; required then). */
int v2_merge_group(struct v2_merge *m, const uint8_t *g, size_t glen, size_t base, size_t from,
		   size_t to, const int64_t *ts, int rel, const struct v2_sums *sums,
		   size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err);
/* Emits the pending run (when emit_pending) and frees m; NULL ok. */
int v2_merge_end(struct v2_merge *m, int emit_pending, pd_chunkenc_merge_fn emit, void *ctx,
		 struct pd_err *err);
/* sums: the chunk's totals (required for a chunk of byte 5, ignored otherwise) */
int v2_merge_sealed(const uint8_t *chunk, size_t len, size_t from, size_t to, const int64_t *ts,
		    const struct v2_sums *sums, size_t max_profile, pd_chunkenc_merge_fn emit,
		    void *ctx, struct pd_err *err);

/* Sets prev's totals for chunk index i from sums (none when sums is NULL or
 * does not reach i). */
static inline void v2_prev_sums(struct v2_prev *p, const struct v2_sums *sums, size_t i)
{
	if (sums && i < sums->n) {
		p->tot = sums->val + sums->off[i];
		p->ntot = sums->off[i + 1] - sums->off[i];
	} else {
		p->tot = NULL;
		p->ntot = 0;
	}
}

#endif
