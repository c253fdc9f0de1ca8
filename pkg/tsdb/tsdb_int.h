/* tsdb_int.h: private structures of pkg/tsdb shared by the head, the querier and
 * the database: the in-memory head and the reader interface through which
 * queries and compaction see the head and persisted blocks alike. */
#ifndef PROFD_TSDB_INT_H
#define PROFD_TSDB_INT_H

#include <pthread.h>

#include "block.h"
#include "lpair.h"
#include "profd/chunkenc.h"
#include "profd/tsdb.h"

/* ---- head ------------------------------------------------------------------ */

struct hc_file;
struct hc_mapper;
struct hs_store;

struct head_chunk {
	int64_t mint, maxt;
	uint32_t count;
	uint8_t *ts;   /* encoded timestamp chunk, with its totals section */
	size_t ts_len;
	uint8_t *vals; /* sealed value chunk */
	size_t vals_len;
	/* the head chunk file whose read-only mapping ts and vals point into
	 * (head_chunks.h), or NULL when they are malloc'd */
	struct hc_file *file;
};

struct head_series {
	uint64_t ref;
	uint64_t hash;
	struct pd_lpair *labels;
	size_t nlabels;
	struct head_series *next_in_bucket;
	pthread_mutex_t mu; /* guards everything below */
	struct head_chunk *chunks; /* closed chunks, in time order */
	size_t nchunks, cap;
	uint64_t dropped; /* chunks truncated so far: chunk seq = dropped + index */
	struct pd_chunkenc_ts open_ts; /* the open chunk; count 0 when empty */
	struct pd_chunkenc_values *open_vals;
	/* the open chunk's totals section, one record per sample of open_ts; NULL
	 * when it could not be kept (out of memory): the chunk is sealed without */
	struct pd_chunkenc_totals *open_tot;
	int64_t open_mint;
	unsigned open_limit; /* the open chunk is sealed at this many samples (chunk_limit) */
	int64_t maxt; /* last timestamp appended, INT64_MIN when none */
	struct tombstones tomb; /* deleted intervals (ref 0), normalised */
	int live;     /* it has had a sample: counted in the head's nlive (under mu) */
	int logged;   /* the WAL holds this series' record (written under append_mu with
		       * __atomic stores; committers read it with __atomic loads) */
	/* commits in flight (db_append.c): samples reserved in WAL order, not yet in the head */
	int64_t commit_t;     /* newest timestamp reserved (append_mu); valid while
			       * commit_seq != commit_done */
	uint64_t commit_seq;  /* samples of this series reserved so far (append_mu) */
	uint64_t commit_done; /* reserved samples whose turn at head_append is over
			       * (guarded by the db's order stripe of this series) */
	uint32_t pins; /* commits holding this series (atomic): head_gc keeps it */
	int gone;      /* head_gc: taken out of the tables (h->mu held for writing) */
};

struct postings_list {
	char *key; /* name \xff value */
	size_t klen;
	uint64_t *refs; /* ascending */
	size_t n, cap;
};

struct head {
	pthread_rwlock_t mu; /* guards the tables below, not the series' chunks */
	/* series in order of creation; a series' ref is its name in the WAL, kept
	 * across restarts (docs/format/wal.md), so refs have gaps where checkpoints
	 * dropped series: refs finds a series' slot */
	struct head_series **series;
	size_t nseries, cap;
	struct pd_u64map refs; /* ref -> index in series */
	uint64_t next_ref;     /* a new series' ref: past every ref the WAL has named */
	struct head_series **buckets; /* by hash of the label set */
	size_t nbuckets;
	struct postings_list *postings; /* open addressing by key hash */
	size_t npostings, postings_cap;
	int64_t mint, maxt; /* INT64_MAX / INT64_MIN when empty */
	uint64_t nsamples;
	unsigned chunk_samples, group;
	unsigned chunk_stagger; /* pd_tsdb_opts' */
	int level, encoding;
	int64_t block_range;
	/* symbols the open chunks of one block range share (v2): a new set for each
	 * range, freed when the last chunk opened on it is sealed */
	pthread_mutex_t sym_mu;
	struct pd_chunkenc_symbols *sym;
	int64_t sym_window;
	/* new series past max_series (0: none) are refused; set after WAL replay,
	 * which is not limited. refused counts them (atomic). Only series that
	 * have had a sample count (nlive, atomic): a commit refused after creating
	 * its series leaves them empty, and at most max_series empty series are
	 * held besides */
	uint64_t max_series, refused, nlive;
	uint64_t removed; /* series head_gc dropped since open (atomic) */
	/* where sealed chunks go (NULL: they stay on the heap), and seals whose
	 * write failed, kept on the heap instead (atomic) */
	struct hc_mapper *hcm;
	struct hs_store *hs; /* the open chunks' frame files (head_spill.h), or NULL */
	uint64_t hc_write_failures;
};

int head_init(struct head *h, const struct pd_tsdb_opts *o);
void head_fini(struct head *h);
/* Finds the series with these labels, or NULL. Takes the read lock. */
struct head_series *head_get(struct head *h, const struct pd_lpair *l, size_t n, uint64_t hash);
/* 0 when series s may take a sample: it has had one, or the series limit has
 * room for one more (an empty series, of a refused commit, counts only from
 * its first sample; concurrent commits may each take the last slot); PD_ELIMIT,
 * counted, otherwise. */
int head_admit(struct head *h, const struct head_series *s, struct pd_err *err);
/* Finds or creates a series; a new one gets ref (0: next_ref), which must be
 * free (PD_ECORRUPT) and below HEAD_MAX_REF. *created says which. Takes the write
 * lock. */
int head_get_or_create(struct head *h, const struct pd_lpair *l, size_t n, uint64_t ref,
		       struct head_series **out, int *created, struct pd_err *err);
/* The series of ref, or NULL; the caller holds h->mu (or is alone, as replay is). */
struct head_series *head_by_ref_locked(const struct head *h, uint64_t ref);
/* The series of ref, or NULL. Takes the read lock. */
struct head_series *head_by_ref(struct head *h, uint64_t ref);
/* Makes new refs go past ref (a ref the WAL named). Caller alone, as replay is. */
void head_note_ref(struct head *h, uint64_t ref);
/* Refs at or above this in a WAL are damage: next_ref can never wrap. */
#define HEAD_MAX_REF ((uint64_t)1 << 62)
/* Appends a sample to a series (its lock must not be held). decoded: p as the
 * caller decoded it, or NULL. */
int head_append(struct head *h, struct head_series *s, int64_t t, const uint8_t *p, size_t len,
		const struct pd_pprof_profile *decoded, struct pd_err *err);
/* The open chunk's timestamp bytes followed by its totals section (when it has
 * one) into *out, malloc'd. Series lock held. */
int head_open_ts(const struct head_series *s, uint8_t **out, size_t *len, struct pd_err *err);
/* The open chunk's value chunk, sealed into *out (malloc'd): with encoding byte 5
 * when head_open_ts writes its totals section, to be read beside it. Series
 * lock held. */
int head_seal_values(const struct head_series *s, uint8_t **out, size_t *len, struct pd_err *err);
/* Adds chunk c (its bytes owned by the series from now on) after the series'
 * chunks, sealing its open chunk first: WAL replay's chunks of the head chunk
 * files. c must start after the series' last sample (PD_EINVAL). */
int head_attach_chunk(struct head *h, struct head_series *s, const struct head_chunk *c,
		      struct pd_err *err);
/* Seals the open chunk of every series whose open chunk ends before t. */
int head_cut_before(struct head *h, int64_t t, struct pd_err *err);
/* Drops chunks that end before t, and the deleted intervals that do. */
void head_truncate(struct head *h, int64_t t);
/* Seals the open chunk of every series whose newest sample is before t, into the
 * head chunk files (nothing without them): a series that stopped taking samples
 * (a pod replaced) then holds no open chunk on the heap until head truncation
 * drops it. Returns the chunks sealed. Takes the head's lock and each series' in
 * turn; called by flush only (the series it visits are not dropped meanwhile). */
size_t head_seal_idle(struct head *h, int64_t t);
/* Seals the open chunk of s, if it has one (s->mu held). */
int head_seal_series(struct head *h, struct head_series *s, struct pd_err *err);
/* Frees every closed chunk of s (s->mu held; its open chunk must be empty):
 * what a series written to a block of idle series gives up before head_gc
 * takes it out. */
void head_series_drop_chunks(struct head_series *s);
/* How long a series takes no sample before its open chunk is sealed (at a flush) */
#define HEAD_IDLE_SEAL_MS (15 * 60 * 1000)
/* Like head_get and head_get_or_create, but the series is pinned (head_unpin
 * releases it): head_gc does not drop a pinned series, so a commit may keep
 * the pointer while it has no sample in the head yet. */
struct head_series *head_get_pinned(struct head *h, const struct pd_lpair *l, size_t n,
				    uint64_t hash);
int head_get_or_create_pinned(struct head *h, const struct pd_lpair *l, size_t n,
			      struct head_series **out, int *created, struct pd_err *err);
void head_unpin(struct head_series *s);
/* The newest timestamp of the series with these labels (INT64_MIN: none or no
 * sample). Takes the read lock. */
int64_t head_series_maxt(struct head *h, const struct pd_lpair *l, size_t n, uint64_t hash);
/* Takes out of the head's tables (series, refs, hash buckets, postings) every
 * series that holds no sample (no closed chunk, an empty open chunk), has no
 * commit in flight or pinned, and whose newest sample is before t; they go
 * into *dead, malloc'd (*ndead of them; NULL when none), for head_gc_free once
 * no reader can hold them any more. Readers that look them up by ref from now
 * on find nothing. The caller holds the db's append_mu with no commit in
 * flight. Out of memory drops nothing. */
int head_gc(struct head *h, int64_t t, struct head_series ***dead, size_t *ndead);
void head_gc_free(struct head_series **dead, size_t n);
/* Frees a series taken out of the head (or never put in). */
void head_series_free(struct head_series *s);
uint64_t labels_hash(const struct pd_lpair *l, size_t n);
int labels_cmp(const struct pd_lpair *a, size_t na, const struct pd_lpair *b, size_t nb);
/* A copy of nl labels as the public label type, names and values in the same
 * allocation (one free releases all); NULL when out of memory. */
struct pd_storage_label *tsdb_labels_pack(const struct pd_lpair *l, size_t nl);

/* ---- readers: head and blocks through one interface ------------------------- */

/* A chunk as a reader hands it out: timestamps are always available; values are
 * fetched on demand by index within the chunk. */
struct rchunk {
	int64_t mint, maxt;
	uint32_t count;
	uint64_t ts_ref, vals_ref; /* block refs; for the head, the chunk's sequence number
				    * (the open chunk has the next number) */
};

struct reader_ops {
	int (*label_names)(void *r, char ***out, size_t *n, struct pd_err *err);
	int (*label_values)(void *r, const char *name, char ***out, size_t *n, struct pd_err *err);
	int (*postings)(void *r, const char *name, const char *value, uint64_t **out, size_t *n,
			struct pd_err *err);
	int (*all_series)(void *r, uint64_t **out, size_t *n, struct pd_err *err);
	/* labels: malloc'd array, strings borrowed while the reader is open (head: a
	 * series' labels never change); chunks: malloc'd. */
	int (*series)(void *r, uint64_t ref, struct pd_lpair **labels, size_t *nl, struct rchunk **c,
		      size_t *nc, struct pd_err *err);
	/* timestamp chunk bytes into *out (malloc'd copy). */
	int (*chunk_ts)(void *r, uint64_t series_ref, const struct rchunk *c, uint8_t **out,
			size_t *len, struct pd_err *err);
	/* profile i of a chunk, at timestamp t, into *out (malloc'd); tsc, tsl: the
	 * chunk's timestamp chunk as chunk_ts gave it (borrowed), which a sealed value
	 * chunk is read beside (pd_chunkenc_values_read_tc). */
	int (*chunk_value)(void *r, uint64_t series_ref, const struct rchunk *c, size_t i,
			   int64_t t, const uint8_t *tsc, size_t tsl, size_t max_profile,
			   uint8_t **out, size_t *len, struct pd_err *err);
	/* merges profiles [from, to) of a chunk (pd_chunkenc_values_merge_tc; ts[i]:
	 * profile i's timestamp, tsc and tsl the timestamp chunk, all borrowed); emit
	 * is called with no lock of the reader held. */
	int (*chunk_merge)(void *r, uint64_t series_ref, const struct rchunk *c, size_t from,
			   size_t to, const int64_t *ts, const uint8_t *tsc, size_t tsl,
			   size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx,
			   struct pd_err *err);
	/* the deleted intervals of a series (tombstones), ascending and disjoint:
	 * *out malloc'd, NULL with *n = 0 when there are none. */
	int (*tombstones)(void *r, uint64_t series_ref, struct tomb_entry **out, size_t *n,
			  struct pd_err *err);
};

extern const struct reader_ops head_reader_ops;
extern const struct reader_ops block_reader_ops;

/* ---- totals (totals.c) -------------------------------------------------------- */

/* When chunk c's timestamps have no totals section, computes one from its
 * profiles (each decoded) and points c->ts at a new timestamp chunk with it,
 * which *owned also receives (malloc'd, the caller frees it); a chunk that has a
 * section is left alone and *owned stays NULL. */
int tsdb_chunk_add_totals(struct pd_block_chunk *c, size_t max_profile, uint8_t **owned,
			  struct pd_err *err);

/* ---- the database ---------------------------------------------------------- */

struct pd_wal;

#define DB_ORDER_STRIPES 64

/* A lock and condition shared by the series whose ref falls on it: a commit waits
 * here for its turn to append a sample to the head (commit_done == its ticket). */
struct db_order_stripe {
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

struct pd_tsdb {
	char *dir;
	struct pd_tsdb_opts o;
	struct head head;
	struct pd_wal *wal;          /* NULL when disabled */
	pthread_mutex_t append_mu;   /* serialises commits' reservations (order checks,
				      * tickets, WAL queue order), flushes, compaction */
	pthread_cond_t commit_cv;    /* inflight fell to 0, or a flush ended (append_mu) */
	uint64_t inflight;           /* commits reserved and not yet returned (append_mu) */
	int flushing;                /* a flush holds new reservations back (append_mu) */
	struct db_order_stripe order[DB_ORDER_STRIPES];
	pthread_rwlock_t blocks_mu;  /* guards blocks: readers hold it for a query */
	struct pd_block **blocks;    /* sorted by mint */
	size_t nblocks;
	uint64_t compactions, retention_deletions;
	int wal_repaired;
	uint64_t wal_ro_bytes; /* read-only: the WAL's size on disk when opened */
	char wal_repair[300];
	uint64_t wal_damaged_records, wal_damaged_bytes; /* skipped at replay */
	uint64_t blocks_damaged;     /* set aside at open */
	char damage_note[400];       /* the first damage found at open */
	/* failures, counted with __atomic builtins */
	uint64_t chunks_damaged;     /* chunk reads that found damage */
	uint64_t head_cut_failures, compaction_failures;
	/* the end of the newest block the head was persisted into (or the newest
	 * block's end at open): samples before it are refused (__atomic) */
	int64_t min_valid_t;
	uint64_t out_of_bounds;  /* samples refused as out of bounds (__atomic) */
	uint64_t too_far_in_future; /* of them, dated past the future window */
	uint64_t replay_skipped; /* samples WAL replay left out (set at open) */
	uint64_t vertical_compactions; /* merges of overlapping blocks */
	/* maint_mu: held by whatever changes blocks or deletes (flush, compaction,
	 * retention, deletion, clean_tombstones) and by snapshots; taken before
	 * append_mu and blocks_mu */
	pthread_mutex_t maint_mu;
	uint64_t deletions, snapshots, snapshot_failures, tombstones_cleaned; /* __atomic */
	struct pd_storage storage; /* the store as a storage (storage.c) */
	struct tsdb_fwd *fwd; /* with o.sink: forwards the WAL to the sink (forward.c) */
	uint64_t hc_damaged_files; /* head chunk files found damaged or missing at open */
	/* flush at open: blocks of idle series that overlap are merged whatever
	 * their range (db_compact) */
	int compact_idle;
	uint64_t idle_written; /* series written to blocks of idle series (__atomic) */
};

/* ---- a sink: the WAL as the spool of what a remote store has not taken ---------- */

/* forward_sent.c: the "sent up to" WAL position in dir/<stem>.sent. Reading:
 * PD_ENOTFOUND when there is none, PD_ECORRUPT (the message says what) when it
 * is damaged; *seg and *off are 0 then. Writing is atomic and durable. */
int tsdb_sent_read(const char *dir, const char *stem, uint32_t *seg, uint64_t *off,
                   struct pd_err *err);
int tsdb_sent_write(const char *dir, const char *stem, uint32_t seg, uint64_t off,
                    struct pd_err *err);

/* db_append.c: the appender's functions in the storage interface, and an
 * appender as the interface's (NULL for NULL). */
extern const struct pd_storage_appender_ops tsdb_appender_ops;
struct pd_storage_appender *tsdb_appender_base(struct pd_tsdb_appender *a);

struct tsdb_fwd;
/* Starts the forwarder of db (its WAL open for writing, o.sink set): reads the
 * sent position and the series the WAL names, counts the spool, and starts the
 * thread that hands every record after the position to the sink. */
int tsdb_fwd_start(struct pd_tsdb *db, struct pd_err *err);
/* Stops the thread (one last flush when the sink takes it) and frees; NULL ok. */
void tsdb_fwd_stop(struct tsdb_fwd *f);
/* A commit of a WAL record of bytes: reserves its room in the spool, or refuses
 * with PD_EFULL when the spool would go over its limit. */
int tsdb_fwd_admit(struct tsdb_fwd *f, size_t bytes, struct pd_err *err);
/* After the WAL write of an admitted record: ok, it holds profiles samples (the
 * forwarder is woken); not ok, its room is given back. */
void tsdb_fwd_written(struct tsdb_fwd *f, size_t bytes, size_t profiles, int ok);
void tsdb_fwd_stats(struct tsdb_fwd *f, struct pd_storage_stats *st);
/* With a sink the head keeps no profiles: a series' newest time only, for the
 * order and duplicate checks of later appends. */
void tsdb_note_time(struct head_series *s, int64_t t);
/* storage.c: sets db->storage (at open). */
void tsdb_storage_init(struct pd_tsdb *db);
/* PD_EINCOMPAT: what cannot be done when the store forwards to a sink. */
int tsdb_sink_unsupported(const struct pd_tsdb *db, const char *what, struct pd_err *err);

/* A place queries read from: the head or one block. */
struct source {
	const struct reader_ops *ops;
	void *r;
	int64_t mint, maxt; /* inclusive */
};

/* The refs (ascending, malloc'd) of the series of src that every matcher
 * accepts. */
int tsdb_matching_refs(const struct source *src, const struct pd_storage_matcher *m, size_t nm,
		       uint64_t **out, size_t *n, struct pd_err *err);

/* querier.c: the refs (ascending, malloc'd) of the series of src that the
 * matchers may accept, through postings (check each with tsdb_labels_match);
 * whether labels pass every matcher; counting and logging a damaged chunk that
 * a read met (what: what was being done; err: the damage, may be NULL). */
int tsdb_candidates(const struct source *src, const struct pd_storage_matcher *m, size_t nm,
		    uint64_t **out, size_t *n, struct pd_err *err);
int tsdb_labels_match(const struct pd_lpair *l, size_t n, const struct pd_storage_matcher *m,
		      size_t nm);
void tsdb_chunk_damaged(struct pd_tsdb *db, const struct source *src, const char *what,
			const struct pd_err *err);

/* The head and the blocks overlapping [mint, maxt], oldest first. The caller holds
 * blocks_mu for reading while it uses them. *out is malloc'd. */
int db_sources(struct pd_tsdb *db, int64_t mint, int64_t maxt, struct source **out, size_t *n,
	       struct pd_err *err);

#endif
