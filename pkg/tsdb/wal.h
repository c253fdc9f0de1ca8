/* wal.h: the write-ahead log, private to pkg/tsdb. The WAL deals in records of
 * series and samples; the head gives them meaning. Format: docs/format/wal.md.
 *
 * A WAL is a directory of numbered segment files (00000001, 00000002, ...) and at
 * most one checkpoint directory (checkpoint.NNNNNNNN) holding the records still
 * needed from segments up to NNNNNNNN. Each commit becomes exactly one record,
 * with a CRC32C, so a commit is replayed whole or not at all.
 *
 * Group commit: any number of threads may commit at once. Each builds and frames
 * its record on its own thread (pd_wal_rec_*), queues it (pd_wal_enqueue: the
 * order of queueing is the order on disk) and waits (pd_wal_wait). One waiting
 * thread at a time, the leader, writes every queued record with one pwritev and,
 * with the commit sync policy, one fdatasync, then wakes the others; a commit
 * returns only once a sync covering its record has succeeded. */
#ifndef PROFD_TSDB_WAL_H
#define PROFD_TSDB_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "lpair.h"
#include "profd/util.h"

enum pd_wal_sync {
	PD_WAL_SYNC_COMMIT = 0, /* fsync after every commit (default) */
	PD_WAL_SYNC_NONE = 1,   /* leave it to the OS (tests, benchmarks) */
};

/* Largest commit (uncompressed record payload) pd_wal_commit accepts: bigger ones
 * fail with PD_ETOOBIG when a series or sample is added. No reader accepts a
 * record above PD_WAL_RECORD_LIMIT, the hard limit of the format. */
#define PD_WAL_DEFAULT_MAX_RECORD ((size_t)256 << 20)
#define PD_WAL_RECORD_LIMIT ((size_t)1 << 30)

struct pd_wal_opts {
	size_t segment_size; /* cut a new segment past this size; 0: 128 MiB */
	int sync;            /* enum pd_wal_sync */
	int new_segment;     /* start a new segment rather than append to the last one:
			      * after a replay that skipped damage inside it, whose
			      * record framing no longer adds up */
};

struct pd_wal;

/* Opens (creating it if needed) the WAL in dir for appending after its last
 * record. Call pd_wal_replay first: open assumes a repaired tail. *out is owned by
 * the caller (pd_wal_close). opts may be NULL. */
int pd_wal_open(struct pd_wal **out, const char *dir, const struct pd_wal_opts *opts,
		struct pd_err *err);
/* Flushes nothing pending (pending records are dropped) and closes; NULL ok. No
 * commit may be under way. */
void pd_wal_close(struct pd_wal *w);

/* ---- committing from many threads ------------------------------------------- */

/* One commit's record, built by one thread. */
struct pd_wal_rec;

/* A new empty record; owned by the caller (pd_wal_rec_destroy). NULL without memory. */
struct pd_wal_rec *pd_wal_rec_create(void);
/* Frees r; NULL ok. r must not be queued, or its pd_wal_wait must have returned. */
void pd_wal_rec_destroy(struct pd_wal_rec *r);
/* Empties r for reuse (not while queued). */
void pd_wal_rec_reset(struct pd_wal_rec *r);
/* Add a series (labels copied) or a sample (bytes copied) to an unsealed r; on
 * error (PD_EINVAL, PD_ETOOBIG, PD_ENOMEM) r is unchanged. */
int pd_wal_rec_series(struct pd_wal_rec *r, uint64_t ref, const struct pd_lpair *labels,
		      size_t n, struct pd_err *err);
int pd_wal_rec_sample(struct pd_wal_rec *r, uint64_t ref, int64_t t, const uint8_t *p,
		      size_t len, struct pd_err *err);
/* Adds a deleted interval [mint, maxt] of series ref: a record holds samples or
 * tombstones (a deletion, record type 2), never both (PD_EINVAL). */
int pd_wal_rec_tombstone(struct pd_wal_rec *r, uint64_t ref, int64_t mint, int64_t maxt,
			 struct pd_err *err);
/* Frames r (CRC32C, zstd when that saves space) on the calling thread; after it,
 * r takes no more entries until pd_wal_rec_reset. */
int pd_wal_rec_seal(struct pd_wal_rec *r, struct pd_err *err);
/* Bytes of the sealed r as it goes to disk (header and payload). */
size_t pd_wal_rec_size(const struct pd_wal_rec *r);
/* lazy 1: with the commit sync policy, pd_wal_wait returns once the record is
 * written (to the page cache), without waiting for an fdatasync, when its group
 * holds lazy records only; a background sync makes it durable within
 * PD_WAL_LAZY_SYNC_MS. It survives a crash of the process, not necessarily a
 * power loss in that time. In a group with other records it waits for their
 * sync. Set before pd_wal_enqueue. */
void pd_wal_rec_set_lazy(struct pd_wal_rec *r, int lazy);
/* Queues a sealed, non-empty r behind every record queued before it: records
 * reach the file in the order of pd_wal_enqueue calls. Does not wait for I/O.
 * pd_wal_wait(w, r) must follow, and r (borrowed) must live until it returns. */
void pd_wal_enqueue(struct pd_wal *w, struct pd_wal_rec *r);
/* Waits until r is written and synced as the policy says, leading the write of
 * the group of queued records when no other thread is writing. Returns r's
 * group's result: after a failed write or sync every record of the group fails
 * with the same error, is cut off, and later records are written as usual. */
int pd_wal_wait(struct pd_wal *w, struct pd_wal_rec *r, struct pd_err *err);

struct pd_wal_stats {
	uint64_t records; /* records written (commits, each acknowledged) */
	uint64_t writes;  /* group writes that succeeded (one pwritev each) */
	uint64_t fsyncs;  /* fdatasync calls that made groups durable */
	uint64_t failed_writes; /* group writes or syncs that failed */
	uint64_t failed_records; /* records in them */
	uint64_t enqueued; /* records queued since open */
	uint64_t queued;  /* records queued now, not yet taken by a leader */
	uint64_t lazy_records; /* records acknowledged once written, before a sync */
	uint64_t lazy_syncs;   /* syncs the background syncer made for them */
};

void pd_wal_stats(struct pd_wal *w, struct pd_wal_stats *st);

/* ---- committing from one thread ----------------------------------------------- */

/* Adds a series to the pending record. labels are copied. */
int pd_wal_add_series(struct pd_wal *w, uint64_t ref, const struct pd_lpair *labels, size_t n,
		      struct pd_err *err);
/* Adds a sample (timestamp in ms, profile bytes, copied) to the pending record. */
int pd_wal_add_sample(struct pd_wal *w, uint64_t ref, int64_t t, const uint8_t *p, size_t len,
		      struct pd_err *err);
/* Writes the pending series and samples as one record and syncs as the policy
 * says (through the group commit queue, so it may share a write with records of
 * other threads). After an error the pending record is dropped and the WAL is
 * still usable for later commits (a partial write is cut off before the next
 * one). The pending record belongs to one thread at a time. */
int pd_wal_commit(struct pd_wal *w, struct pd_err *err);
/* Drops the pending series and samples. */
void pd_wal_rollback(struct pd_wal *w);

/* Bytes on disk (segments and checkpoint) after the last finished write. */
uint64_t pd_wal_size(struct pd_wal *w);

struct pd_wal_replay_cb {
	/* Each callback returns 0 to go on or a negative code to stop the replay.
	 * Pointers are borrowed for the call only. */
	int (*series)(void *ctx, uint64_t ref, const struct pd_lpair *labels, size_t n);
	int (*sample)(void *ctx, uint64_t ref, int64_t t, const uint8_t *p, size_t len);
	void *ctx;
	/* a deleted interval [mint, maxt] of series ref (NULL: skipped) */
	int (*tombstone)(void *ctx, uint64_t ref, int64_t mint, int64_t maxt);
};

struct pd_wal_replay_stats {
	uint64_t records, series, samples, tombstones;
	/* a damaged tail that was cut off: */
	int truncated;         /* 1 when bytes were cut */
	uint32_t segment;      /* in which segment */
	uint64_t offset;       /* at which byte */
	char reason[256];      /* why, e.g. "record CRC mismatch" */
	/* every damage skipped (the tail too), in the checkpoint and the segments: */
	uint64_t damaged_regions; /* stretches of damage, and missing segments */
	uint64_t damaged_records; /* records lost in them (as their lengths tell) */
	uint64_t damaged_bytes;   /* bytes skipped */
	uint32_t damage_segment;  /* the first: segment, byte, why ("checkpoint.N: " */
	uint64_t damage_offset;   /* before the reason when it is in the checkpoint) */
	char damage_reason[256];
};

/* Replays the checkpoint and then every segment in order, calling cb for each
 * series and sample. Damage is skipped: a bad record (or stretch of bytes) is
 * passed over up to the next record that checks whole, a missing segment is
 * passed over, and stats counts what was lost; every intact record is
 * delivered. Damage that runs to the end of the last segment is a torn tail: the
 * segment is cut there (stats->truncated says where and why). A missing dir is
 * an empty WAL. */
int pd_wal_replay(const char *dir, const struct pd_wal_replay_cb *cb,
		  struct pd_wal_replay_stats *stats, struct pd_err *err);

/* As pd_wal_replay, but changes no file: a damaged tail (or one a live writer is
 * still writing) is reported in stats, and stays on disk. */
int pd_wal_replay_readonly(const char *dir, const struct pd_wal_replay_cb *cb,
			   struct pd_wal_replay_stats *stats, struct pd_err *err);

/* Bytes on disk of the WAL directory dir without opening it (a read-only reader
 * beside the writer): the segments and the checkpoint; 0 when dir is missing. */
int pd_wal_du(const char *dir, uint64_t *out, struct pd_err *err);

/* Starts a new segment, so that every earlier one is complete. Waits for a group
 * write under way; records queued meanwhile go to the new segment. */
int pd_wal_cut(struct pd_wal *w, struct pd_err *err);

/* Decides whether a checkpoint keeps the series of a series entry (ref, labels):
 * 1 keeps the entry and the samples and tombstones of ref after it, up to the
 * next series entry of ref, which is asked again (a later entry of a ref names
 * the series of the samples after it, docs/format/wal.md). */
typedef int (*pd_wal_keep_fn)(void *ctx, uint64_t ref, const struct pd_lpair *labels, size_t n);

/* Rewrites everything before the current segment as a checkpoint that keeps only
 * series for which keep is true (NULL: all) and their samples at or after mint
 * and tombstones ending at or after mint, then
 * deletes those segments and the previous checkpoint. Crash-safe: a checkpoint is
 * written to a temporary directory and renamed. Holds the writer role: records
 * queued meanwhile are written after it. */
int pd_wal_checkpoint(struct pd_wal *w, int64_t mint, pd_wal_keep_fn keep, void *ctx,
		      struct pd_err *err);

/* Where the last record written and synced ends: segment *seg, byte *off.
 * Everything before it is durable and whole; readers beside the writer stop
 * there (pd_wal_tail_next). */
void pd_wal_end(struct pd_wal *w, uint32_t *seg, uint64_t *off);

/* As pd_wal_checkpoint, for segments up to last (which must be before the
 * current one) rather than all before the current one. */
int pd_wal_checkpoint_upto(struct pd_wal *w, uint32_t last, int64_t mint, pd_wal_keep_fn keep,
			   void *ctx, struct pd_err *err);

/* ---- following the WAL from a position (a reader beside the writer) ---------- */

struct pd_wal_tail;

/* A reader of the WAL in dir; owned by the caller (pd_wal_tail_destroy). */
int pd_wal_tail_create(struct pd_wal_tail **out, const char *dir, struct pd_err *err);
void pd_wal_tail_destroy(struct pd_wal_tail *t);
/* Reads the record at segment *seg, byte *off (a position before the first
 * record means the first record), hands its series and samples to cb and moves
 * the position past it; a finished or missing segment moves it to the next one.
 * Reads nothing at or past (end_seg, end_off) (pd_wal_end). Damage is skipped to
 * the next intact record. *moved (may be NULL) grows by the bytes passed over
 * inside segments (records, damage; not segment headers). Returns 1 when a
 * record was read, 0 at the end, or a negative code (a callback's, PD_EIO,
 * PD_ENOMEM, PD_EINCOMPAT). */
int pd_wal_tail_next(struct pd_wal_tail *t, uint32_t *seg, uint64_t *off, uint32_t end_seg,
		     uint64_t end_off, const struct pd_wal_replay_cb *cb, uint64_t *moved,
		     struct pd_err *err);

/* CRC32C (Castagnoli) of len bytes, continuing from crc (start with 0). */
uint32_t pd_crc32c(uint32_t crc, const void *p, size_t len);

#endif
