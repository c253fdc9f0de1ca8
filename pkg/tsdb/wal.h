/* wal.h: the write-ahead log, private to pkg/tsdb. The WAL deals in records of
 * series and samples; the head gives them meaning. Format: docs/format/wal.md.
 *
 * A WAL is a directory of numbered segment files (00000001, 00000002, ...) and at
 * most one checkpoint directory (checkpoint.NNNNNNNN) holding the records still
 * needed from segments up to NNNNNNNN. Each commit becomes exactly one record,
 * with a CRC32C, so a commit is replayed whole or not at all. */
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
};

struct pd_wal;

/* Opens (creating it if needed) the WAL in dir for appending after its last
 * record. Call pd_wal_replay first: open assumes a repaired tail. *out is owned by
 * the caller (pd_wal_close). opts may be NULL. */
int pd_wal_open(struct pd_wal **out, const char *dir, const struct pd_wal_opts *opts,
		struct pd_err *err);
/* Flushes nothing pending (pending records are dropped) and closes; NULL ok. */
void pd_wal_close(struct pd_wal *w);

/* Adds a series to the pending record. labels are copied. */
int pd_wal_add_series(struct pd_wal *w, uint64_t ref, const struct pd_lpair *labels, size_t n,
		      struct pd_err *err);
/* Adds a sample (timestamp in ms, profile bytes, copied) to the pending record. */
int pd_wal_add_sample(struct pd_wal *w, uint64_t ref, int64_t t, const uint8_t *p, size_t len,
		      struct pd_err *err);
/* Writes the pending series and samples as one record and syncs as the policy
 * says. After an error the pending record is dropped and the WAL is still usable
 * for later commits (a partial write is cut off before the next one). */
int pd_wal_commit(struct pd_wal *w, struct pd_err *err);
/* Drops the pending series and samples. */
void pd_wal_rollback(struct pd_wal *w);

/* Bytes on disk (segments and checkpoint). */
uint64_t pd_wal_size(const struct pd_wal *w);

struct pd_wal_replay_cb {
	/* Each callback returns 0 to go on or a negative code to stop the replay.
	 * Pointers are borrowed for the call only. */
	int (*series)(void *ctx, uint64_t ref, const struct pd_lpair *labels, size_t n);
	int (*sample)(void *ctx, uint64_t ref, int64_t t, const uint8_t *p, size_t len);
	void *ctx;
};

struct pd_wal_replay_stats {
	uint64_t records, series, samples;
	/* a damaged tail that was cut off: */
	int truncated;         /* 1 when bytes were cut */
	uint32_t segment;      /* in which segment */
	uint64_t offset;       /* at which byte */
	char reason[256];      /* why, e.g. "record CRC mismatch" */
};

/* Replays the checkpoint and then every segment in order, calling cb for each
 * series and sample. A torn or corrupt record ends the replay: the segment is cut
 * at the last good record, later segments are removed, and stats says where and
 * why; records before it are all delivered. A missing dir is an empty WAL. */
int pd_wal_replay(const char *dir, const struct pd_wal_replay_cb *cb,
		  struct pd_wal_replay_stats *stats, struct pd_err *err);

/* As pd_wal_replay, but changes no file: a damaged tail (or one a live writer is
 * still writing) ends the replay and is reported in stats, and stays on disk. */
int pd_wal_replay_readonly(const char *dir, const struct pd_wal_replay_cb *cb,
			   struct pd_wal_replay_stats *stats, struct pd_err *err);

/* Starts a new segment, so that every earlier one is complete. */
int pd_wal_cut(struct pd_wal *w, struct pd_err *err);

/* Rewrites everything before the current segment as a checkpoint that keeps only
 * series for which keep(ctx, ref) is true and samples at or after mint, then
 * deletes those segments and the previous checkpoint. Crash-safe: a checkpoint is
 * written to a temporary directory and renamed. */
int pd_wal_checkpoint(struct pd_wal *w, int64_t mint, int (*keep)(void *ctx, uint64_t ref),
		      void *ctx, struct pd_err *err);

/* CRC32C (Castagnoli) of len bytes, continuing from crc (start with 0). */
uint32_t pd_crc32c(uint32_t crc, const void *p, size_t len);

#endif
