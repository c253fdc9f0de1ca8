/* tsdb.h: profd's storage engine: samples are (series labels, timestamp in ms,
 * profile bytes). New samples go to the WAL and the in-memory head; the head is
 * persisted as immutable blocks, which are compacted into larger ones and deleted
 * by retention. Queries select series by label matchers over the head and all
 * blocks alike, and either list timestamps (never touching a profile) or read
 * single profiles.
 *
 * Thread safety: any number of appenders and readers may run at once. */
#ifndef PROFD_TSDB_H
#define PROFD_TSDB_H

#include <stddef.h>
#include <stdint.h>

#include "profd/storage.h"
#include "profd/util.h"

struct pd_tsdb;

#define PD_TSDB_DEFAULT_RETENTION_MS (15LL * 24 * 3600 * 1000)
#define PD_TSDB_DEFAULT_BLOCK_RANGE_MS (2LL * 3600 * 1000)
#define PD_TSDB_DEFAULT_CHUNK_SAMPLES 120
#define PD_TSDB_DEFAULT_CHUNK_STAGGER 30
#define PD_TSDB_DEFAULT_MAX_PROFILE PD_STORAGE_DEFAULT_MAX_PROFILE
#define PD_TSDB_DEFAULT_MAX_FUTURE_MS (10LL * 60 * 1000)
#define PD_TSDB_DEFAULT_HEAD_IDLE_MS (5LL * 60 * 1000)

struct pd_tsdb_opts {
	int64_t retention_ms;       /* delete blocks older than this; 0: 15d; <0: never */
	uint64_t retention_bytes;   /* delete oldest blocks past this size; 0: no limit */
	int64_t block_range_ms;     /* span of a head block; 0: 2h */
	unsigned chunk_samples;     /* cut a chunk after this many samples; 0: 120 */
	/* a series' first chunk in each block range is cut up to this many samples
	 * before chunk_samples (how many: by the series' label hash), so that series
	 * scraped together do not all seal their chunks on one scrape (a seal
	 * compresses the chunk); used only when below half of chunk_samples;
	 * pd_tsdb_opts_init: 30 */
	unsigned chunk_stagger;
	int value_encoding;         /* encoding of new value chunks (enum
				     * pd_chunkenc_value_encoding); 0: v2, columnar */
	unsigned value_group;       /* profiles per zstd frame; 0: the encoding's default */
	int zstd_level;             /* 0: the chunkenc default */
	size_t max_profile;         /* largest profile accepted; 0: 64 MiB */
	/* appends dated more than this after the system clock are refused, and no
	 * bound (retention, block cuts, compaction) is measured from a later time;
	 * 0: 10m; <0: no limit (one sample far ahead then moves every bound) */
	int64_t max_future_ms;
	int wal_disabled;           /* no WAL: for bulk import that writes blocks */
	int read_only;              /* for tools: the directory must exist, the WAL is
				     * replayed but not opened for writing, appends fail */
	int wal_sync;               /* 0: fsync every commit; 1: never */
	size_t wal_segment_size;    /* 0: 128 MiB */
	/* Borrowed (must outlive the store); NULL: none. With a sink the store
	 * keeps no blocks: its WAL is the point of acknowledgement and the spool of
	 * what the remote store (ClickHouse: docs/scale-out.md) has not taken yet,
	 * and a thread of the store forwards the WAL to the sink. Its queries then
	 * answer only from the head (series and their latest times, no profiles):
	 * the remote backend answers queries. */
	const struct pd_storage_sink *sink;
	/* With a sink: the most bytes of WAL records it has not taken yet (the
	 * spool); a commit that would go over is refused with PD_EFULL and nothing
	 * acknowledged is dropped. 0: PD_TSDB_DEFAULT_SPOOL_MAX. */
	uint64_t spool_max;
	/* With a sink: it is not ready yet (ClickHouse did not answer at start); the
	 * forwarder calls its prepare before the first append. */
	int sink_pending;
	/* Series the head holds at most (series stay in the head until a restart
	 * replays only those still alive): a commit that would create another is
	 * refused with PD_ELIMIT, naming the series, and samples of existing series
	 * still append. WAL replay is not limited, so a restart with a lower limit
	 * keeps every acknowledged series. 0: no limit; pd_tsdb_opts_init sets
	 * PD_TSDB_DEFAULT_MAX_SERIES. */
	uint64_t max_series;
	/* A series with no sample for this long behind the head's newest (and for
	 * three of its own sample intervals) is written, at the next flush, to a block
	 * of idle series over its block range and taken out of the head, so that
	 * replaced pods do not stay in memory until the range is persisted. 0: never
	 * (series stay until head truncation); pd_tsdb_opts_init sets
	 * PD_TSDB_DEFAULT_HEAD_IDLE_MS. Not with a sink. */
	int64_t head_idle_ms;
	/* Head chunk files (dir/chunks_head/, docs/format/head_chunks.md) are cut
	 * before a chunk that would take one past this size; 0: 128 MiB. */
	size_t head_chunks_file_size;
};

/* The default series limit: at the ~3 KB a series costs in the head before its
 * samples, 1,000,000 series are ~3 GB, far past a profiling deployment (a series
 * per target and profile type) and below what would exhaust a server's memory. */
#define PD_TSDB_DEFAULT_MAX_SERIES ((uint64_t)1000000)

/* The spool's default limit: 1 GB (Prometheus's size units are
 * powers of 2: 1 GiB). */
#define PD_TSDB_DEFAULT_SPOOL_MAX ((uint64_t)1 << 30)
/* The WAL segment size with a sink, when wal_segment_size is 0: segments
 * wholly sent are deleted, so smaller ones give the disk back sooner. */
#define PD_TSDB_SINK_SEGMENT ((size_t)16 << 20)
/* The spool's "sent up to" file in the store's directory is named by the sink:
 * <sink name>.sent, "clickhouse.sent" (docs/format/clickhouse-spool.md). */
#define PD_TSDB_SENT_SUFFIX ".sent"
/* The forwarder flushes the sink's batch after this many profiles, this many WAL bytes
 * of them, or this long after the batch's first profile, whichever comes first. */
#define PD_TSDB_SHIP_BATCH_PROFILES 256
#define PD_TSDB_SHIP_BATCH_BYTES ((size_t)8 << 20)
#define PD_TSDB_SHIP_INTERVAL_MS 1000
/* Retries after a failed flush wait 1 s, doubling up to 30 s. */
#define PD_TSDB_SHIP_BACKOFF_MIN_MS 1000
#define PD_TSDB_SHIP_BACKOFF_MAX_MS 30000
/* With a retention time, the forwarder drops the remote store's partitions (UTC days) that
 * lie wholly before now - retention this often, and right after a flush that sent
 * a profile already past it. */
#define PD_TSDB_SHIP_RETENTION_INTERVAL_MS (10 * 60 * 1000)

/* Fills o with the defaults. */
void pd_tsdb_opts_init(struct pd_tsdb_opts *o);

/* Where blocks that do not open are moved, under the store's directory. */
#define PD_TSDB_DAMAGED_DIR "damaged"

/* Opens (creating) the store in dir: loads blocks, replays the WAL into the head,
 * and persists the head's complete block ranges (as pd_tsdb_flush(db, 0) does),
 * so a process that never lives to its first flush still checkpoints. Damage
 * costs only itself: a block that does not open (its meta.json, index or chunk
 * files damaged or missing) is moved to dir/damaged/ (read-only: left out), WAL
 * replay skips damaged records and resumes at the next intact one, and a torn
 * WAL tail is cut off; each is logged (component=tsdb) and counted in the stats.
 * Only a failure to read the directory or to allocate fails the open. *out is
 * owned by the caller (pd_tsdb_close). opts may be NULL. */
int pd_tsdb_open(struct pd_tsdb **out, const char *dir, const struct pd_tsdb_opts *opts,
		 struct pd_err *err);
/* Closes the store; samples in the head stay in the WAL for the next open. */
void pd_tsdb_close(struct pd_tsdb *db);

/* ---- appending ------------------------------------------------------------ */

struct pd_tsdb_appender;

/* A new appender. It must end in pd_tsdb_commit or pd_tsdb_rollback, which free it. */
struct pd_tsdb_appender *pd_tsdb_appender(struct pd_tsdb *db);
/* Makes a's commit lazy: with wal_sync 0 it returns once its WAL record is
 * written, without waiting for an fsync, and a background sync makes it durable
 * within 100 ms (docs/storage.md, "Durability"). For samples no client waits
 * for, such as scrapes: a commit that shares its write with a non-lazy one
 * still waits for that write's fsync. */
void pd_tsdb_appender_lazy(struct pd_tsdb_appender *a);
/* Adds a sample to the appender: labels (sorted, validated by the caller) and
 * profile bytes are copied. Out-of-order or duplicate timestamps of a series, and
 * profiles above max_profile, are refused here with a message naming the series.
 * With the WAL and local blocks, a sample older than the store accepts (before
 * the end of the newest block, or past the retention time behind the newest
 * sample: docs/storage.md, "How far back") is refused with PD_EINVAL saying its
 * time, the earliest accepted and why, here or at the commit (exactly: nothing
 * a commit acknowledged is ever before the newest block's end). With the WAL,
 * a sample dated more than max_future_ms after the system clock is refused
 * likewise ("How far ahead"). */
int pd_tsdb_append(struct pd_tsdb_appender *a, const struct pd_storage_label *labels, size_t n,
		   int64_t t, const uint8_t *profile, size_t len, struct pd_err *err);
/* As pd_tsdb_append, for a profile the caller has decoded (and validated) already:
 * decoded (owned by the appender from now on, whatever the outcome; NULL: as
 * pd_tsdb_append) saves the store decoding profile again. */
struct pd_pprof_profile;
int pd_tsdb_append_decoded(struct pd_tsdb_appender *a, const struct pd_storage_label *labels,
			   size_t n, int64_t t, const uint8_t *profile, size_t len,
			   struct pd_pprof_profile *decoded, struct pd_err *err);
/* The same, with the profile also as the gzip stream (RFC 1952) it came in, gz
 * (borrowed; its content must be profile's bytes): the WAL stores those bytes
 * instead of compressing the profile again, which saves a scrape most of the cost
 * of its WAL record. PD_EINVAL when gz does not start as a gzip stream. On error
 * decoded is freed here too. */
int pd_tsdb_append_gzip(struct pd_tsdb_appender *a, const struct pd_storage_label *labels, size_t n,
			int64_t t, const uint8_t *profile, size_t len,
			struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
			struct pd_err *err);
/* Writes the appender's samples to the WAL and then the head, all or nothing, and
 * frees the appender. Returns once the WAL record is written (with wal_sync 0,
 * fsynced): commits from many threads at once share one write and one fsync. The
 * samples of a series enter the head in the order their commits were accepted;
 * commits to different series append to the head in parallel. */
int pd_tsdb_commit(struct pd_tsdb_appender *a, struct pd_err *err);
/* Drops the appender's samples and frees it; NULL does nothing. */
void pd_tsdb_rollback(struct pd_tsdb_appender *a);

/* ---- maintenance ---------------------------------------------------------- */

/* Persists every complete block range of the head (or, with all, the whole head)
 * as blocks, truncates the head and checkpoints the WAL, compacts blocks and
 * applies retention. Called periodically by the daemon; import calls it with all. */
int pd_tsdb_flush(struct pd_tsdb *db, int all, struct pd_err *err);

/* ---- deleting and snapshots ---------------------------------------------------- */

/* Deletes the samples in [mint, maxt] (ms, both inclusive, as Prometheus) of every
 * series all matchers accept (nm >= 1), in the head and in every block, at once
 * for every query: blocks get tombstones (their `tombstones` file, written before
 * this returns), the head gets them through one WAL record (durable before this
 * returns, honoured by replay). Only samples there now are deleted: samples
 * appended later are not, whatever maxt says. Compaction and
 * pd_tsdb_clean_tombstones leave deleted samples out of the blocks they write; a
 * block left with nothing disappears. Series whose samples are all deleted no
 * longer answer pd_tsdb_select (so series and labels queries with matchers);
 * pd_tsdb_label_names and _values without matchers read the index and may still
 * name them until the blocks are cleaned and the head persisted, as Prometheus
 * does. The matchers are borrowed for the call. */
struct pd_storage_matcher;
int pd_tsdb_delete(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
		   int64_t maxt, struct pd_err *err);

/* Rewrites every block that has tombstones without the deleted samples (one
 * level up, with the same sources: a crash leaves the old block or the new one,
 * never both) and removes the old one with its tombstones file; a block left
 * empty goes. The head's deleted samples go when the head is persisted. */
int pd_tsdb_clean_tombstones(struct pd_tsdb *db, struct pd_err *err);

/* Where snapshots go, under the store's directory; retention and compaction
 * never look inside. */
#define PD_TSDB_SNAPSHOTS_DIR "snapshots"
#define PD_TSDB_SNAPSHOT_NAME_MAX PD_STORAGE_SNAPSHOT_NAME_MAX

/* Writes a consistent copy of the store to <dir>/snapshots/<name>, name being
 * YYYYMMDDTHHMMSSZ-<16 hex digits> (UTC, 8 random bytes) as Prometheus names
 * them, and returns the name. Blocks are hard-linked (copied across file
 * systems) with their tombstones; unless skip_head, the head's samples up to now
 * (less deleted ones) are written as one more block. The directory opens as a
 * store (pd_tsdb_open). Written under <name>.tmp and renamed when complete. */
int pd_tsdb_snapshot(struct pd_tsdb *db, int skip_head, char name[PD_TSDB_SNAPSHOT_NAME_MAX],
		     struct pd_err *err);

/* ---- querying ------------------------------------------------------------- */



/* Series matching every matcher with at least one sample in [mint, maxt], with
 * their timestamps, over head and blocks; reads timestamp chunks only. *out is
 * owned by the caller (pd_storage_result_destroy). limit > 0 caps the series. */
int pd_tsdb_select(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
		   int64_t maxt, size_t limit, struct pd_storage_result **out, struct pd_err *err);

/* The profile of the series with exactly these labels at time t (exact match).
 * *out is malloc'd, owned by the caller. PD_ENOTFOUND when there is none. */
int pd_tsdb_read(struct pd_tsdb *db, const struct pd_storage_label *labels, size_t n, int64_t t,
		 uint8_t **out, size_t *len, struct pd_err *err);

/* ---- totals: profile values over time ---------------------------------------- */



/* As pd_tsdb_select, with every profile's totals. A stored record that is not a
 * profile (kept opaque) has no types: present is 0 for it everywhere. *out is owned
 * by the caller (pd_storage_totals_result_destroy). limit > 0 caps the series. */
int pd_tsdb_select_totals(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm,
			  int64_t mint, int64_t maxt, size_t limit,
			  struct pd_storage_totals_result **out, struct pd_err *err);

/* Merges the profiles of the series with exactly these labels in [mint, maxt],
 * oldest first, chunk by chunk: a columnar chunk is decoded once and its profiles
 * added up by stack id, so emit gets one profile per chunk (per run of profiles
 * whose headers agree), which pd_pprof_merge turns into what merging every
 * profile would give. A series that is not there emits nothing. */
int pd_tsdb_merge(struct pd_tsdb *db, const struct pd_storage_label *labels, size_t n, int64_t mint,
		  int64_t maxt, pd_storage_merge_fn emit, void *ctx, struct pd_err *err);

/* Merges the profiles of every range (n of them, borrowed for the call), emitting
 * as pd_tsdb_merge does, range after range (pd_tsdb_merge each). A range
 * with mint > maxt is left out. Non-zero from emit stops the merge and is
 * returned. */
int pd_tsdb_merge_ranges(struct pd_tsdb *db, const struct pd_storage_merge_range *r, size_t n,
			 pd_storage_merge_fn emit, void *ctx, struct pd_err *err);

/* The store as a storage (storage.h), for the API, the scrape manager and
 * ingest: borrowed, valid until pd_tsdb_close. Its kind is "local"; its appender
 * is pd_tsdb_appender's. With a sink its delete, clean_tombstones and snapshot
 * fail with PD_EINCOMPAT and it lists no blocks. */
struct pd_storage *pd_tsdb_storage(struct pd_tsdb *db);

/* Sorted distinct label names, or values of one name, of series matching the
 * matchers (none: all series) in [mint, maxt]. *out and its strings are malloc'd;
 * free with pd_storage_strings_free. */
int pd_tsdb_label_names(struct pd_tsdb *db, const struct pd_storage_matcher *m, size_t nm,
			int64_t mint, int64_t maxt, char ***out, size_t *n, struct pd_err *err);
int pd_tsdb_label_values(struct pd_tsdb *db, const char *name, const struct pd_storage_matcher *m,
			 size_t nm, int64_t mint, int64_t maxt, char ***out, size_t *n,
			 struct pd_err *err);

/* ---- statistics ----------------------------------------------------------- */

void pd_tsdb_stats(struct pd_tsdb *db, struct pd_storage_stats *st);

/* ---- checking ---------------------------------------------------------------- */

/* One damage pd_tsdb_check found. */
struct pd_tsdb_damage {
	char block[27];  /* the block's ULID; "" for the WAL */
	char file[128];  /* relative to the store: "<ULID>/index", "<ULID>/chunks/000001",
			  * "wal/00000003", or the block directory when no file is named */
	int64_t offset;  /* byte offset in file; -1 when the file as a whole is bad */
	char what[PD_ERR_MSG_MAX + 400]; /* what is wrong */
};

typedef void (*pd_tsdb_damage_fn)(void *ctx, const struct pd_tsdb_damage *d);

/* Checks the store in dir without changing any file, even with a daemon running
 * on it: every block opens (meta.json, the index and its CRCs, chunk segment
 * headers), every chunk of every series has its CRC, its timestamps decode and
 * both hold as many samples as the index says; the WAL replays (damage counted,
 * a torn tail reported, nothing cut). Each damage goes to fn (borrowed for the
 * call); *found counts them. Returns 0 however much damage was found, or an
 * error that stopped the check (PD_ENOTFOUND: no such directory, PD_ENOMEM). */
int pd_tsdb_check(const char *dir, pd_tsdb_damage_fn fn, void *ctx, uint64_t *found,
		  struct pd_err *err);

/* Describes every block, oldest first. *out is malloc'd (free it). */
int pd_tsdb_blocks(struct pd_tsdb *db, struct pd_storage_block_info **out, size_t *n,
		   struct pd_err *err);

#endif
