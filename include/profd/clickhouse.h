/* clickhouse.h: profiles in ClickHouse. A client of ClickHouse's HTTP interface
 * (libcurl), the schema profd keeps there (docs/format/clickhouse.md), a batched
 * writer of decoded profiles as RowBinary inserts, and a reader that lists series
 * and timestamps, rebuilds any stored profile losslessly and merges a time range
 * with the grouping done by ClickHouse.
 *
 * The SQL used is accepted by ClickHouse 18.16 (Debian's) and by current ClickHouse.
 * Timestamps are milliseconds since the epoch, as in the local store. Also: the
 * package as a storage backend (storage.h: pd_clickhouse_storage_create) and as
 * the sink a local store forwards its WAL to (pd_clickhouse_sink_create); it knows
 * the local store only through that interface. The package uses storage, util,
 * pprof and labels only. */
#ifndef PROFD_CLICKHOUSE_H
#define PROFD_CLICKHOUSE_H

#include <stddef.h>
#include <stdint.h>

#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/storage.h"
#include "profd/util.h"

/* ---- client --------------------------------------------------------------- */

#define PD_CLICKHOUSE_DEFAULT_DATABASE "profd"
/* Whole-request timeout (connect included). */
#define PD_CLICKHOUSE_DEFAULT_TIMEOUT_MS 30000
/* Largest response body read; larger ones fail with PD_ETOOBIG. */
#define PD_CLICKHOUSE_DEFAULT_MAX_RESPONSE ((size_t)256 << 20)
/* Request bodies at least this large are sent gzip-compressed. */
#define PD_CLICKHOUSE_COMPRESS_MIN 1024
/* Most nodes a cluster's list may name. */
#define PD_CLICKHOUSE_MAX_NODES 256

struct pd_clickhouse_opts {
	/* http://HOST:PORT/ of ClickHouse's HTTP interface (https works too). Required.
	 * A user and password in it (http://USER:PASSWORD@HOST:PORT/) are sent as
	 * Basic credentials; every message shows the password as xxxxx. */
	const char *url;
	/* Database of profd's tables; NULL means PD_CLICKHOUSE_DEFAULT_DATABASE. Must
	 * match [A-Za-z_][A-Za-z0-9_]*. */
	const char *database;
	/* File whose first line is the user and second line the password (trailing
	 * CR/LF dropped), read when the client is created; NULL: ClickHouse's default
	 * user without password. The way to give a password (one in url shows in the
	 * process list). */
	const char *credentials_file;
	long timeout_ms;     /* 0: PD_CLICKHOUSE_DEFAULT_TIMEOUT_MS */
	size_t max_response; /* 0: PD_CLICKHOUSE_DEFAULT_MAX_RESPONSE */
	int no_compress;     /* non-zero: send request bodies uncompressed */
	/* Name of a cluster in ClickHouse's remote_servers; NULL: one server. With it
	 * each table is created on every node as <table>_local, with a Distributed
	 * table of the plain name over them, without ON CLUSTER (which needs
	 * ZooKeeper): profd reaches every node through its HTTP interface, url and
	 * nodes (docs/scale-out.md). Inserts then return once the rows are on their
	 * shards (insert_distributed_sync=1). Must match [A-Za-z_][A-Za-z0-9_]*. */
	const char *cluster;
	/* With a cluster: the HTTP URLs of the cluster's other nodes, separated by
	 * commas (url is one node); NULL or "" when url is the only one. */
	const char *nodes;
};

struct pd_clickhouse;

/* Creates a client; nothing is sent until the first request. opts is copied. *out
 * is owned by the caller (pd_clickhouse_destroy). */
int pd_clickhouse_create(struct pd_clickhouse **out, const struct pd_clickhouse_opts *opts,
			 struct pd_err *err);
void pd_clickhouse_destroy(struct pd_clickhouse *c);
/* The database name (borrowed from c). */
const char *pd_clickhouse_database(const struct pd_clickhouse *c);
/* The cluster name (borrowed from c), or NULL for one server. */
const char *pd_clickhouse_cluster(const struct pd_clickhouse *c);

/* Runs one statement. With data (len bytes, only read), sql goes in the URL and
 * data is the body (an INSERT ... FORMAT X); otherwise sql is the body. The
 * response is appended to resp (may be NULL). A failure names the statement and
 * carries ClickHouse's own message ("Code: 60, e.displayText() = ..."): PD_EIO
 * when ClickHouse answered with an error, PD_EUNAVAIL when no answer came (no
 * connection, a timeout) or the answer was 502, 503 or 504, which is worth
 * retrying later. */
int pd_clickhouse_exec(struct pd_clickhouse *c, const char *sql, const void *data, size_t len,
		       struct pd_buf *resp, struct pd_err *err);

/* ---- schema and retention ------------------------------------------------- */

/* The schema version this build creates, kept in the schema_version table. */
#define PD_CLICKHOUSE_SCHEMA_VERSION 2

/* Creates the database and every table when missing (idempotent) and records the
 * schema version. PD_EINCOMPAT when the database holds a newer schema version.
 * With a cluster, on every node (url and nodes), each node keeping its own
 * schema_version; then every node of the cluster in system.clusters must be one
 * of those (PD_EINVAL naming the node and its shard otherwise). */
int pd_clickhouse_schema_create(struct pd_clickhouse *c, struct pd_err *err);

/* Number of nodes profd talks to: 1 without a cluster, 1 + the nodes option's
 * URLs with one. */
size_t pd_clickhouse_nnodes(const struct pd_clickhouse *c);
/* The HTTP URL of node i (0: url), borrowed from c, without a trailing '/', as
 * messages show it: a password in it as xxxxx (http://user:xxxxx@host:8123). */
const char *pd_clickhouse_node_url(const struct pd_clickhouse *c, size_t i);
/* pd_clickhouse_exec on node i instead of url. */
int pd_clickhouse_exec_at(struct pd_clickhouse *c, size_t i, const char *sql, const void *data,
                          size_t len, struct pd_buf *resp, struct pd_err *err);

/* Drops the daily partitions of samples and profiles whose whole day lies before
 * before_ms (UTC days); with a cluster, of samples_local and profiles_local on
 * every node. *dropped (may be NULL) receives how many partitions went.
 * Labels, stacks, locations, functions, mappings and strings are kept. */
int pd_clickhouse_drop_before(struct pd_clickhouse *c, int64_t before_ms, size_t *dropped,
			      struct pd_err *err);

/* ---- RowBinary ------------------------------------------------------------ */

/* ClickHouse's RowBinary: fixed-width integers little-endian, String as an
 * unsigned LEB128 length and the bytes, Array(T) as an LEB128 count and the
 * elements. Appenders return pd_buf's codes. */
int pd_clickhouse_rb_u8(struct pd_buf *b, uint8_t v);
int pd_clickhouse_rb_u32(struct pd_buf *b, uint32_t v);
int pd_clickhouse_rb_u64(struct pd_buf *b, uint64_t v);
int pd_clickhouse_rb_i64(struct pd_buf *b, int64_t v);
int pd_clickhouse_rb_varint(struct pd_buf *b, uint64_t v);
int pd_clickhouse_rb_string(struct pd_buf *b, const void *s, size_t len);

/* A RowBinary reader with a sticky error: read several fields, then check err. */
struct pd_clickhouse_rbr {
	const uint8_t *p;
	size_t len, off;
	int err; /* 0, or PD_ECORRUPT once a read ran past the end */
};
void pd_clickhouse_rbr_init(struct pd_clickhouse_rbr *r, const void *p, size_t len);
uint8_t pd_clickhouse_rbr_u8(struct pd_clickhouse_rbr *r);
uint32_t pd_clickhouse_rbr_u32(struct pd_clickhouse_rbr *r);
uint64_t pd_clickhouse_rbr_u64(struct pd_clickhouse_rbr *r);
int64_t pd_clickhouse_rbr_i64(struct pd_clickhouse_rbr *r);
uint64_t pd_clickhouse_rbr_varint(struct pd_clickhouse_rbr *r);
/* A String: *len bytes at the returned pointer, borrowed from the input (not
 * NUL-terminated). */
const uint8_t *pd_clickhouse_rbr_string(struct pd_clickhouse_rbr *r, size_t *len);
/* An Array's element count, checked against the bytes left (each element needs
 * at least min_elem bytes) so that a corrupt count cannot ask for huge memory. */
size_t pd_clickhouse_rbr_count(struct pd_clickhouse_rbr *r, size_t min_elem);

/* ---- content ids ---------------------------------------------------------- */

/* The id of a string: 0 for "", otherwise XXH64 (seed 0) of its bytes. */
uint64_t pd_clickhouse_string_id(const void *s, size_t len);

/* ---- writer --------------------------------------------------------------- */

/* Profiles appended before a batch is flushed by itself. */
#define PD_CLICKHOUSE_DEFAULT_BATCH_PROFILES 256
/* Encoded bytes (all tables) of a batch before it is flushed by itself. */
#define PD_CLICKHOUSE_DEFAULT_BATCH_BYTES ((size_t)32 << 20)
/* Ids (strings, functions, mappings, locations, stacks) remembered as written,
 * so that they are not sent again; when full the memory is emptied and starts
 * over (re-sent rows are deduplicated by ClickHouse). 8 bytes each, doubled by the
 * hash table's load: 1 Mi ids take about 16 MiB to 32 MiB. */
#define PD_CLICKHOUSE_DEFAULT_CACHE_IDS ((size_t)1 << 20)

struct pd_clickhouse_writer_opts {
	size_t batch_profiles; /* 0: PD_CLICKHOUSE_DEFAULT_BATCH_PROFILES */
	size_t batch_bytes;    /* 0: PD_CLICKHOUSE_DEFAULT_BATCH_BYTES */
	size_t cache_ids;      /* 0: PD_CLICKHOUSE_DEFAULT_CACHE_IDS */
};

struct pd_clickhouse_writer;

/* A writer borrows c, which must outlive it. opts may be NULL. *out is owned by
 * the caller (pd_clickhouse_writer_destroy). */
int pd_clickhouse_writer_create(struct pd_clickhouse_writer **out, struct pd_clickhouse *c,
				const struct pd_clickhouse_writer_opts *opts, struct pd_err *err);
/* Adds profile p of series ls at ts_ms to the batch, flushing first when the batch
 * is full. Both are only read. A profile whose (series, ts_ms) is already stored
 * replaces it once ClickHouse merges the parts. */
int pd_clickhouse_writer_append(struct pd_clickhouse_writer *w, const struct pd_labels *ls,
                                int64_t ts_ms, const struct pd_pprof_profile *p,
                                struct pd_err *err);
/* Sends the batch: one INSERT ... FORMAT RowBinary per table, gzip-compressed.
 * On failure the batch is kept, and a later flush sends it again. */
int pd_clickhouse_writer_flush(struct pd_clickhouse_writer *w, struct pd_err *err);
/* Profiles in the unsent batch. */
size_t pd_clickhouse_writer_pending(const struct pd_clickhouse_writer *w);
/* Drops an unsent batch and frees w; NULL does nothing. Flush first to keep it. */
void pd_clickhouse_writer_destroy(struct pd_clickhouse_writer *w);

/* ---- reader --------------------------------------------------------------- */

/* Every stored series' labels: *out is a malloc'd array of *n label sets, owned by
 * the caller (pd_clickhouse_series_free), in series id order. */
int pd_clickhouse_series(struct pd_clickhouse *c, struct pd_labels ***out, size_t *n,
			 struct pd_err *err);
void pd_clickhouse_series_free(struct pd_labels **ls, size_t n);

/* Timestamps (ms, ascending) of the profiles of series ls in [from_ms, to_ms]:
 * *out is malloc'd, owned by the caller. */
int pd_clickhouse_times(struct pd_clickhouse *c, const struct pd_labels *ls, int64_t from_ms,
			int64_t to_ms, int64_t **out, size_t *n, struct pd_err *err);

/* Rebuilds the profile of series ls at ts_ms: every field as written, ids
 * included. *out is owned by the caller. PD_ENOTFOUND when there is none. */
int pd_clickhouse_profile(struct pd_clickhouse *c, const struct pd_labels *ls, int64_t ts_ms,
			  struct pd_pprof_profile **out, struct pd_err *err);

/* Merges the profiles of series ls in [from_ms, to_ms] as pd_pprof_merge (and go
 * tool pprof) would, with the samples summed by ClickHouse (GROUP BY stack and
 * sample labels), so that only the merged rows travel. The profiles must share
 * their sample types (PD_EINCOMPAT otherwise). *out is owned by the caller;
 * PD_ENOTFOUND when the range holds no profile. */
int pd_clickhouse_merge(struct pd_clickhouse *c, const struct pd_labels *ls, int64_t from_ms,
			int64_t to_ms, struct pd_pprof_profile **out, struct pd_err *err);

/* One series' part of a merge: the profiles of series_id (pd_labels_hash of its
 * labels) in [from_ms, to_ms]. */
struct pd_clickhouse_range {
	uint64_t series_id;
	int64_t from_ms, to_ms;
};

/* What a merge took: how many profiles, the first and last of their times, and
 * the bytes of ClickHouse's answer of summed samples. */
struct pd_clickhouse_merge_info {
	size_t profiles;
	int64_t first_ms, last_ms;
	size_t bytes;
};

/* Ranges one merge takes at most (the statement names each). */
#define PD_CLICKHOUSE_MERGE_MAX_RANGES 256

/* As pd_clickhouse_merge, over the profiles of several series (1 to
 * PD_CLICKHOUSE_MERGE_MAX_RANGES ranges, only read) in one query: ClickHouse sums
 * them all, grouped by stack and sample labels. info (may be NULL) receives what
 * was merged. *out is owned by the caller; PD_ENOTFOUND when no range holds a
 * profile. */
int pd_clickhouse_merge_ranges(struct pd_clickhouse *c, const struct pd_clickhouse_range *rg,
			       size_t nrg, struct pd_pprof_profile **out,
			       struct pd_clickhouse_merge_info *info, struct pd_err *err);

/* ---- queries over many series (query.c) ------------------------------------ */

/* A profile's place: its series and time. */
struct pd_clickhouse_point {
	uint64_t series_id;
	int64_t ts;
};

/* Ids of series (at most PD_CLICKHOUSE_QUERY_MAX_IDS per statement; more are
 * asked for in several). */
#define PD_CLICKHOUSE_QUERY_MAX_IDS 1000

/* The distinct (series, time) of every profile in [from_ms, to_ms] of the series
 * ids (n of them, only read; ids NULL: every series), sorted by series then time.
 * *out is malloc'd, owned by the caller. */
int pd_clickhouse_points(struct pd_clickhouse *c, const uint64_t *ids, size_t n, int64_t from_ms,
			 int64_t to_ms, struct pd_clickhouse_point **out, size_t *nout,
			 struct pd_err *err);

/* Distinct ids of the series with a profile in [from_ms, to_ms], ascending. *out
 * is malloc'd, owned by the caller. */
int pd_clickhouse_series_in_range(struct pd_clickhouse *c, int64_t from_ms, int64_t to_ms,
				  uint64_t **out, size_t *n, struct pd_err *err);

/* A profile's totals: per sample type, the sum of its values over the profile's
 * samples (as pd_pprof_sum, wrapping as int64 does). Strings are NUL-terminated
 * and, with the arrays, owned by the pd_clickhouse_totals they came in. */
struct pd_clickhouse_total {
	uint64_t series_id;
	int64_t ts, duration_nanos;
	size_t ntypes;
	const char **types, **units;
	int64_t *totals;
};

struct pd_clickhouse_totals {
	struct pd_clickhouse_total *rows; /* sorted by series, then time */
	size_t n;
	struct pd_arena *arena;
};

/* The totals of every profile in [from_ms, to_ms] of the series ids (as
 * pd_clickhouse_points). They are read from profiles.totals; a row without them
 * (written by schema version 1) gets them summed from its samples by ClickHouse.
 * *out is owned by the caller (pd_clickhouse_totals_destroy). */
int pd_clickhouse_totals_read(struct pd_clickhouse *c, const uint64_t *ids, size_t n,
			      int64_t from_ms, int64_t to_ms, struct pd_clickhouse_totals **out,
			      struct pd_err *err);
void pd_clickhouse_totals_destroy(struct pd_clickhouse_totals *t);

/* ---- a storage backend (storage.c, sink.c) ------------------------------------- */

/* ClickHouse as a storage: queries (select, read, totals, merges, labels) read
 * ClickHouse through c; appends, statistics and the spool's state are spool's, a
 * local store opened with pd_clickhouse_sink's sink, which forwards what it
 * acknowledges to ClickHouse (docs/scale-out.md). A profile read back larger than
 * max_profile is refused. Deleting, cleaning tombstones and snapshots fail with
 * PD_EINCOMPAT; it lists no blocks; its merge_batch is
 * PD_CLICKHOUSE_MERGE_MAX_RANGES. c and spool are borrowed and must outlive it;
 * *out is owned by the caller (pd_clickhouse_storage_destroy). */
int pd_clickhouse_storage_create(struct pd_storage **out, struct pd_clickhouse *c,
				 struct pd_storage *spool, size_t max_profile,
				 struct pd_err *err);
/* Frees what pd_clickhouse_storage_create made; NULL does nothing. */
void pd_clickhouse_storage_destroy(struct pd_storage *st);

/* The sink (storage.h) that inserts a local store's spooled profiles into c
 * (borrowed; must outlive it): its prepare creates the schema, its batches are
 * writer batches, its drop_before is pd_clickhouse_drop_before. Its name is
 * "clickhouse" (the spool's file is clickhouse.sent). *out is owned by the
 * caller (pd_clickhouse_sink_destroy, after the store that uses it is closed). */
int pd_clickhouse_sink_create(struct pd_storage_sink **out, struct pd_clickhouse *c,
			      struct pd_err *err);
void pd_clickhouse_sink_destroy(struct pd_storage_sink *s);

#endif
