/* storage.h: the one interface through which the API, the scrape manager, ingest and
 * PromQL reach stored profiles, whichever store keeps them (docs/architecture.md,
 * "Storage"). Two backends implement it and know nothing of each other: the local
 * store (tsdb.h: WAL, head and blocks; pd_tsdb_storage) and ClickHouse
 * (clickhouse.h: pd_clickhouse_storage_create, which reads ClickHouse and takes
 * appends through a local store used as its spool). This header also holds the
 * types both speak: labels, matchers, query results, totals, merges, statistics;
 * and a sink (struct pd_storage_sink): what a remote backend gives the local store
 * so that the store can forward its WAL to it.
 *
 * Thread safety: any number of appenders and readers may run at once on one
 * storage, as each backend allows. */
#ifndef PROFD_STORAGE_H
#define PROFD_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "profd/util.h"

struct pd_pprof_profile;
struct pd_labels;
struct pd_labels_selector;

/* The largest profile a store takes unless told otherwise: 64 MiB. */
#define PD_STORAGE_DEFAULT_MAX_PROFILE ((size_t)64 << 20)

/* ---- labels and matchers ---------------------------------------------------- */

/* A label; label sets are arrays sorted by name, names unique. */
struct pd_storage_label {
	const char *name;
	const char *value;
};

/* A matcher as the stores see it: a label name and a predicate over values (the
 * value of a missing label is ""). The labels package builds these from PromQL
 * selectors. */
struct pd_storage_matcher {
	const char *name;
	int (*matches)(const void *ctx, const char *value);
	const void *ctx;
};

/* A predicate for struct pd_storage_matcher: value equals ctx (a C string). A store
 * reads an equality matcher's postings directly, without running the predicate over
 * every value of the label: this one, and the `=` matchers of
 * pd_storage_matchers_from_selector. */
int pd_storage_match_equal(const void *ctx, const char *value);

/* The one value m accepts when it is an equality matcher (borrowed from m), or NULL. */
const char *pd_storage_matcher_equal(const struct pd_storage_matcher *m);

/* Matchers for a parsed PromQL selector (labels.h). *out is malloc'd (free it) and
 * borrows the selector's matchers: keep the selector while using them. */
int pd_storage_matchers_from_selector(const struct pd_labels_selector *sel,
                                      struct pd_storage_matcher **out, size_t *n,
                                      struct pd_err *err);

/* 1 when the label set l (n labels, sorted) passes every matcher (nm of them). */
int pd_storage_labels_match(const struct pd_storage_label *l, size_t n,
                            const struct pd_storage_matcher *m, size_t nm);

/* Orders label sets as the query results are sorted: name by name, then value. */
int pd_storage_labels_cmp(const struct pd_storage_label *a, size_t na,
                          const struct pd_storage_label *b, size_t nb);

/* A copy of nl labels, names and values in the same allocation (one free releases
 * all); NULL when out of memory. */
struct pd_storage_label *pd_storage_labels_pack(const struct pd_storage_label *l, size_t nl);

/* Sorts v (n strings, malloc'd) and frees duplicates; *n becomes the count left. */
void pd_storage_strings_sort_unique(char **v, size_t *n);

/* Frees n malloc'd strings and the array; NULL does nothing. */
void pd_storage_strings_free(char **s, size_t n);

/* ---- query results ---------------------------------------------------------- */

struct pd_storage_series {
	struct pd_storage_label *labels; /* sorted */
	size_t nlabels;
	int64_t *ts; /* ascending timestamps in [mint, maxt] */
	size_t nts;
};

/* A selection: every series' labels and timestamps are malloc'd apart (a backend
 * fills them so), freed by pd_storage_result_destroy. */
struct pd_storage_result {
	struct pd_storage_series *series; /* sorted by labels */
	size_t nseries;
	void *priv;
};

void pd_storage_result_destroy(struct pd_storage_result *r);

/* A sample type (pprof's ValueType) of a series' profiles. */
struct pd_storage_sample_type {
	char *type; /* "inuse_space" */
	char *unit; /* "bytes" */
};

/* One series' profiles as numbers: for each profile in [mint, maxt] and each of the
 * series' sample types, the sum of that type's values over the profile's samples
 * (pd_pprof_sum), and the profile's duration_nanos. */
struct pd_storage_totals {
	struct pd_storage_label *labels; /* sorted */
	size_t nlabels;
	int64_t *ts; /* ascending timestamps in [mint, maxt] */
	size_t nts;
	int64_t *duration_nanos; /* per profile; 0 when the profile has none */
	/* The sample types the series' profiles have in [mint, maxt], in order of first
	 * appearance (a series whose profiles change types lists each type once). */
	struct pd_storage_sample_type *types;
	size_t ntypes;
	int64_t *values;  /* values[k * nts + i]: total of types[k] in profile i */
	uint8_t *present; /* present[k * nts + i]: 1 when profile i has types[k] */
};

/* Totals of many series: the series array is malloc'd, and everything each series
 * points at comes from the result's own memory (pd_storage_totals_alloc), freed at
 * once by pd_storage_totals_result_destroy. */
struct pd_storage_totals_result {
	struct pd_storage_totals *series; /* sorted by labels */
	size_t nseries;
	void *priv; /* the memory: large mappings handed out in pieces */
};

/* bytes (rounded up to 16) that r owns, for the arrays and strings of its series;
 * NULL when out of memory. */
void *pd_storage_totals_alloc(struct pd_storage_totals_result *r, size_t bytes);
/* A copy of s in r's memory; NULL when out of memory. */
char *pd_storage_totals_strdup(struct pd_storage_totals_result *r, const char *s);
void pd_storage_totals_result_destroy(struct pd_storage_totals_result *r);

/* ---- merges ------------------------------------------------------------------- */

/* Receives a series' merged profiles from a merge: p (owned by the callee from now
 * on) sums `count` stored profiles, the first at first_t and the last at last_t,
 * whose records took `bytes` bytes decoded. Non-zero stops the merge. */
typedef int (*pd_storage_merge_fn)(void *ctx, struct pd_pprof_profile *p, size_t count,
                                   int64_t first_t, int64_t last_t, size_t bytes);

/* Part of a merge of many series: the profiles of the series with exactly these
 * labels (borrowed) in [mint, maxt]. */
struct pd_storage_merge_range {
	const struct pd_storage_label *labels;
	size_t nlabels;
	int64_t mint, maxt;
};

/* The most ranges any backend sums in one pass of merge_ranges (its merge_batch). */
#define PD_STORAGE_MERGE_MAX_RANGES 256

/* ---- statistics and blocks ------------------------------------------------------ */

struct pd_storage_stats {
	uint64_t head_series, head_samples, head_chunks;
	int64_t head_mint, head_maxt;
	/* wal_bytes: the WAL's segments and checkpoint on disk (when opened read_only,
	 * as they were at open) */
	uint64_t blocks, block_bytes, wal_bytes;
	uint64_t compactions, retention_deletions;
	/* the WAL's damaged tail cut off at open, if any */
	int wal_repaired;
	char wal_repair[300];
	/* damage found at open: WAL records skipped by the replay (a torn tail's
	 * included), blocks set aside, and the first of it in words ("" if none) */
	uint64_t wal_damaged_records, wal_damaged_bytes;
	uint64_t blocks_damaged;
	char damage[400];
	/* since open: chunk reads that found a chunk damaged (the read of that
	 * series failed or left the chunk out), and storage writes that failed:
	 * persisting the head as a block, compacting blocks */
	uint64_t chunks_damaged;
	uint64_t head_cut_failures, compaction_failures;
	/* appends refused as out of bounds since open (older than accept_from, or
	 * dated past the future window: pushes and scrapes alike), the earliest timestamp accepted now
	 * (INT64_MIN: any), samples WAL replay left out at open (a series the WAL
	 * does not name, a damaged profile, a duplicate), and merges of blocks
	 * that overlapped since open */
	uint64_t out_of_bounds;
	int64_t accept_from;
	/* of out_of_bounds, those dated more than max_future_ms after the clock */
	uint64_t too_far_in_future;
	uint64_t wal_replay_skipped;
	uint64_t vertical_compactions;
	/* WAL writes since open. Concurrent commits share writes (group commit):
	 * wal_records / wal_fsyncs is the number of commits per fsync. */
	uint64_t wal_records;       /* commits written to the WAL */
	uint64_t wal_writes;        /* group writes (one pwritev each) */
	uint64_t wal_fsyncs;        /* fdatasync calls making groups durable (wal_sync 0) */
	uint64_t wal_failed_writes; /* group writes or syncs that failed */
	uint64_t wal_lazy_commits;  /* commits acknowledged once written, before a sync
				     * (lazy appenders: scrapes) */
	uint64_t wal_lazy_syncs;    /* background fsyncs made for them */
	/* deletions: intervals in the blocks' tombstones and the head's now, and
	 * since open: deletions done, blocks rewritten by clean_tombstones,
	 * snapshots written and failed */
	uint64_t tombstones, head_tombstones;
	uint64_t deletions, tombstones_cleaned, snapshots, snapshot_failures;
	/* with a remote store (remote is 1: the local store forwards its WAL to a
	 * sink): the spool (WAL records after the "sent up to" position) in bytes
	 * and profiles, its limit; since open: profiles the remote store accepted,
	 * flushes and failed flushes, commits refused because the spool was full,
	 * spooled profiles that could not be sent (not decodable; skipped), and the
	 * time of the last successful flush (ms since the epoch, 0: none yet) */
	int remote;
	uint64_t remote_spool_bytes, remote_spool_profiles, remote_spool_max;
	uint64_t remote_sent_profiles, remote_flushes, remote_flush_failures;
	uint64_t remote_spool_full_refusals, remote_skipped_profiles;
	int64_t remote_last_flush_ms;
	/* retention in the remote store since open: partitions (days) dropped, and
	 * runs that failed (tried again at the next interval) */
	uint64_t remote_partitions_dropped, remote_retention_failures;
	/* the remote store's database and cluster ("": none), filled by its backend */
	char remote_database[128], remote_cluster[128];
	/* the head's series limit (0: none), and new series it refused since open */
	uint64_t head_series_limit, head_series_limit_refused;
	/* series dropped from the head since open, having no sample left in it (at
	 * head truncations, or written to blocks of idle series); of them, those
	 * written to blocks of idle series */
	uint64_t head_series_removed, head_series_idle_written;
	/* the head chunk files (sealed chunks out of the heap): files, their bytes
	 * and the chunks of the head in them; files found damaged or missing at
	 * open; seals whose write failed since open (kept in memory instead) */
	uint64_t head_chunk_files, head_chunk_bytes, head_chunks_mapped;
	uint64_t head_chunk_files_damaged, head_chunk_write_failures;
	/* the open chunks' frame files (chunks_open/): files, their bytes, the bytes
	 * of frames still referenced, frames kept in memory for a failed write */
	uint64_t head_open_frame_files, head_open_frame_bytes, head_open_frame_live_bytes;
	uint64_t head_open_frame_write_failures;
};

struct pd_storage_block_info {
	char ulid[27];
	int64_t mint, maxt; /* maxt exclusive */
	int level;
	int idle; /* a block of idle series (written before its range was complete) */
	uint64_t series, chunks, samples;
	uint64_t ts_bytes, value_bytes; /* chunk payload bytes of each kind */
	uint64_t size;                  /* bytes of all the block's files */
};

#define PD_STORAGE_SNAPSHOT_NAME_MAX 64

/* ---- the interface ---------------------------------------------------------------- */

struct pd_storage_appender;

/* An appender's functions (a backend's). */
struct pd_storage_appender_ops {
	void (*lazy)(struct pd_storage_appender *a);
	/* decoded: owned by the appender from now on whatever the outcome (NULL: the
	 * backend decodes profile); gz (borrowed, NULL: none): profile as the gzip
	 * stream it came in */
	int (*append)(struct pd_storage_appender *a, const struct pd_storage_label *labels,
	              size_t n, int64_t t, const uint8_t *profile, size_t len,
	              struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
	              struct pd_err *err);
	int (*commit)(struct pd_storage_appender *a, struct pd_err *err);
	void (*rollback)(struct pd_storage_appender *a);
};

/* The head of every backend's appender struct. */
struct pd_storage_appender {
	const struct pd_storage_appender_ops *ops;
};

/* A backend's functions: each takes the backend's own object (impl). What each
 * does is said at the pd_storage_* function that calls it below. */
struct pd_storage_ops {
	int (*select)(void *impl, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
	              int64_t maxt, size_t limit, struct pd_storage_result **out,
	              struct pd_err *err);
	int (*read)(void *impl, const struct pd_storage_label *labels, size_t n, int64_t t,
	            uint8_t **out, size_t *len, struct pd_err *err);
	int (*select_totals)(void *impl, const struct pd_storage_matcher *m, size_t nm,
	                     int64_t mint, int64_t maxt, size_t limit,
	                     struct pd_storage_totals_result **out, struct pd_err *err);
	int (*merge_ranges)(void *impl, const struct pd_storage_merge_range *r, size_t n,
	                    pd_storage_merge_fn emit, void *ctx, struct pd_err *err);
	/* names (name NULL) or the values of name */
	int (*labels)(void *impl, const char *name, const struct pd_storage_matcher *m,
	              size_t nm, int64_t mint, int64_t maxt, char ***out, size_t *n,
	              struct pd_err *err);
	struct pd_storage_appender *(*appender)(void *impl);
	void (*stats)(void *impl, struct pd_storage_stats *st);
	int (*blocks)(void *impl, struct pd_storage_block_info **out, size_t *n,
	              struct pd_err *err);
	int (*delete_series)(void *impl, const struct pd_storage_matcher *m, size_t nm,
	                     int64_t mint, int64_t maxt, struct pd_err *err);
	int (*clean_tombstones)(void *impl, struct pd_err *err);
	int (*snapshot)(void *impl, int skip_head, char name[PD_STORAGE_SNAPSHOT_NAME_MAX],
	                struct pd_err *err);
	/* ranges merge_ranges sums in one pass (1: range by range), at most
	 * PD_STORAGE_MERGE_MAX_RANGES */
	size_t merge_batch;
	/* how the store is named in messages and metrics: "local", "clickhouse" */
	const char *kind;
};

/* A storage: a backend's functions and its object. Backends hand these out
 * (pd_tsdb_storage, pd_clickhouse_storage_create); users only pass them to the
 * functions below. */
struct pd_storage {
	const struct pd_storage_ops *ops;
	void *impl;
};

/* Series matching every matcher with at least one sample in [mint, maxt], with
 * their timestamps; reads no profile. *out is owned by the caller
 * (pd_storage_result_destroy). limit > 0 caps the series. */
int pd_storage_select(struct pd_storage *st, const struct pd_storage_matcher *m, size_t nm,
                      int64_t mint, int64_t maxt, size_t limit, struct pd_storage_result **out,
                      struct pd_err *err);

/* The profile of the series with exactly these labels at time t (exact match).
 * *out is malloc'd, owned by the caller. PD_ENOTFOUND when there is none. */
int pd_storage_read(struct pd_storage *st, const struct pd_storage_label *labels, size_t n,
                    int64_t t, uint8_t **out, size_t *len, struct pd_err *err);

/* As pd_storage_select, with every profile's totals. A stored record that is not a
 * profile (kept opaque) has no types: present is 0 for it everywhere. *out is owned
 * by the caller (pd_storage_totals_result_destroy). limit > 0 caps the series. */
int pd_storage_select_totals(struct pd_storage *st, const struct pd_storage_matcher *m,
                             size_t nm, int64_t mint, int64_t maxt, size_t limit,
                             struct pd_storage_totals_result **out, struct pd_err *err);

/* Merges the profiles of every range (n of them, borrowed for the call), oldest
 * first in each, emitting summed profiles: the local store one per chunk (per run of
 * profiles whose headers agree) range after range; ClickHouse one per query of up to
 * merge_batch ranges, summed by stack. pd_pprof_merge of what emit gets is what
 * merging every profile would give. A range with mint > maxt, or whose series is not
 * there, emits nothing. Non-zero from emit stops the merge and is returned. */
int pd_storage_merge_ranges(struct pd_storage *st, const struct pd_storage_merge_range *r,
                            size_t n, pd_storage_merge_fn emit, void *ctx, struct pd_err *err);
/* The ranges the store sums in one pass of pd_storage_merge_ranges (1 or more, at
 * most PD_STORAGE_MERGE_MAX_RANGES): a caller that marks which ranges gave
 * profiles passes this many at a time. */
size_t pd_storage_merge_batch(const struct pd_storage *st);

/* Sorted distinct label names, or values of one name, of series matching the
 * matchers (none: all series) in [mint, maxt]. *out and its strings are malloc'd;
 * free with pd_storage_strings_free. */
int pd_storage_label_names(struct pd_storage *st, const struct pd_storage_matcher *m, size_t nm,
                           int64_t mint, int64_t maxt, char ***out, size_t *n,
                           struct pd_err *err);
int pd_storage_label_values(struct pd_storage *st, const char *name,
                            const struct pd_storage_matcher *m, size_t nm, int64_t mint,
                            int64_t maxt, char ***out, size_t *n, struct pd_err *err);

/* A new appender. It must end in pd_storage_commit or pd_storage_rollback, which
 * free it. NULL when out of memory. */
struct pd_storage_appender *pd_storage_appender(struct pd_storage *st);
/* Makes a's commit lazy: it returns once the samples are written, before they are
 * synced to disk, and a background sync makes them durable soon after (the local
 * store: within 100 ms, docs/storage.md, "Durability"). For samples no client waits
 * for, such as scrapes. */
void pd_storage_appender_lazy(struct pd_storage_appender *a);
/* Adds a sample: labels (sorted, validated by the caller) and profile bytes are
 * copied. Out-of-order or duplicate timestamps of a series, too large profiles and
 * samples out of the store's time bounds are refused with a message naming the
 * series (here or at the commit). */
int pd_storage_append(struct pd_storage_appender *a, const struct pd_storage_label *labels,
                      size_t n, int64_t t, const uint8_t *profile, size_t len,
                      struct pd_err *err);
/* As pd_storage_append, for a profile the caller has decoded and validated already:
 * decoded (owned by the appender from now on, whatever the outcome; NULL: as
 * pd_storage_append) saves the store decoding it again. */
int pd_storage_append_decoded(struct pd_storage_appender *a,
                              const struct pd_storage_label *labels, size_t n, int64_t t,
                              const uint8_t *profile, size_t len,
                              struct pd_pprof_profile *decoded, struct pd_err *err);
/* The same, with the profile also as the gzip stream (RFC 1952) it came in, gz
 * (borrowed; its content must be profile's bytes; NULL: as
 * pd_storage_append_decoded), which a store may keep instead of compressing the
 * profile again. PD_EINVAL when gz does not start as a gzip stream; on error
 * decoded is freed too. */
int pd_storage_append_gzip(struct pd_storage_appender *a, const struct pd_storage_label *labels,
                           size_t n, int64_t t, const uint8_t *profile, size_t len,
                           struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
                           struct pd_err *err);
/* Stores the appender's samples durably (unless lazy), all or nothing, and frees
 * the appender. */
int pd_storage_commit(struct pd_storage_appender *a, struct pd_err *err);
/* Drops the appender's samples and frees it; NULL does nothing. */
void pd_storage_rollback(struct pd_storage_appender *a);

/* The store's statistics (a snapshot of counters), zeroed first. */
void pd_storage_stats(struct pd_storage *st, struct pd_storage_stats *out);

/* Describes every block, oldest first (a store without blocks lists none). *out
 * is malloc'd (free it). */
int pd_storage_blocks(struct pd_storage *st, struct pd_storage_block_info **out, size_t *n,
                      struct pd_err *err);

/* Deletes the samples in [mint, maxt] (ms, inclusive) of every series all matchers
 * accept (nm >= 1), as Prometheus's delete_series; clean_tombstones rewrites what
 * deletions left; a snapshot is a consistent copy of the store, whose name is
 * returned in name. A store that cannot (ClickHouse) returns PD_EINCOMPAT saying
 * so. */
int pd_storage_delete(struct pd_storage *st, const struct pd_storage_matcher *m, size_t nm,
                      int64_t mint, int64_t maxt, struct pd_err *err);
int pd_storage_clean_tombstones(struct pd_storage *st, struct pd_err *err);
int pd_storage_snapshot(struct pd_storage *st, int skip_head,
                        char name[PD_STORAGE_SNAPSHOT_NAME_MAX], struct pd_err *err);

/* The backend's kind ("local", "clickhouse"): for messages. */
const char *pd_storage_kind(const struct pd_storage *st);

/* ---- a sink: a remote store the local store forwards its WAL to ------------------ */

/* What a remote backend gives the local store (pd_tsdb_opts.sink) so that the
 * store's WAL is its spool: commits are acknowledged once in the WAL, and the
 * store's forwarder hands every spooled profile to append, calls flush when a
 * batch is full or a second old, and moves its "sent up to" position past the
 * batch only when flush succeeded (docs/scale-out.md). All functions run on the
 * forwarder's thread and return 0 or an error. */
struct pd_storage_sink {
	void *ctx;
	const char *name;       /* log component and the spool's file stem: "clickhouse" */
	const char *title;      /* in messages: "ClickHouse" */
	const char *spool_flag; /* the flag setting the spool's limit, for messages */
	/* makes the remote store ready to take profiles (its schema); called before the
	 * first append when the sink was given as pending (pd_tsdb_opts.sink_pending),
	 * again after each failure */
	int (*prepare)(void *ctx, struct pd_err *err);
	/* forgets the batch not yet flushed (after a failure left it unknown) */
	int (*reset)(void *ctx, struct pd_err *err);
	/* adds a profile (borrowed for the call) of the series ls (borrowed) to the
	 * batch: PD_ENOMEM keeps the batch as it was; another error means this profile
	 * can never be taken (it is skipped) */
	int (*append)(void *ctx, const struct pd_labels *ls, int64_t t,
	              const struct pd_pprof_profile *p, struct pd_err *err);
	/* sends the batch; on success the batch is empty */
	int (*flush)(void *ctx, struct pd_err *err);
	/* drops the remote store's partitions wholly before t (ms); *dropped counts them */
	int (*drop_before)(void *ctx, int64_t t, size_t *dropped, struct pd_err *err);
};

#endif
