/* db_int.h: what the database's files (db.c: opening and closing; db_append.c:
 * appends and commits; db_flush.c: persisting the head; db_compact.c: compaction
 * and retention; db_admin.c: statistics, deletion, snapshots) share. */
#ifndef PD_TSDB_DB_INT_H
#define PD_TSDB_DB_INT_H

#include <stdint.h>

#include "block_int.h"
#include "tsdb_int.h"

/* The latest time any bound (the earliest time accepted, retention, which block
 * ranges are complete) is measured from: the system clock (INT64_MAX without a
 * future window) (db.c). */
int64_t db_bound_cap(const struct pd_tsdb_opts *o);

/* The latest time a sample is accepted at: the clock plus the future window
 * (INT64_MAX without one). */
int64_t db_future_cap(const struct pd_tsdb_opts *o);

/* t, but no later than cap. */
int64_t db_capped(int64_t t, int64_t cap);

/* Removes path and everything below it; 0 or -1 (errno). */
int db_rm_rf(const char *path);

/* "a/b", malloc'd (the caller frees it); NULL when out of memory. */
char *db_path_join(const char *a, const char *b);

/* Adds b to db->blocks in time order: the database owns it then; on failure
 * (out of memory) it is still the caller's. */
int db_add_block(struct pd_tsdb *db, struct pd_block *b, struct pd_err *err);

/* The earliest timestamp an append may have now (INT64_MIN: any), and why
 * (a static string) (db_append.c). */
int64_t db_accept_from(struct pd_tsdb *db, const char **why);

/* qsort comparator of head series pointers by their labels (db_flush.c). */
int db_series_ptr_cmp(const void *a, const void *b);

/* Chunk c without the samples the intervals iv delete. *kept: 0 when nothing is
 * left; else *out is the chunk to write: c itself when nothing was deleted, or a
 * new chunk whose bytes *ts_owned and *vals_owned receive (malloc'd, the caller
 * frees them). */
int db_filter_chunk(struct pd_tsdb *db, const struct pd_block_chunk *c,
		    const struct tomb_entry *iv, size_t niv, struct pd_block_chunk *out,
		    uint8_t **ts_owned, uint8_t **vals_owned, int *kept, struct pd_err *err);

/* db_flush.c: adds series s's chunks inside [lo, hi) to w, less what its deleted
 * intervals delete (s->mu taken here); *added is 1 when it had some. */
struct pd_block_writer;
int db_add_head_series(struct pd_tsdb *db, struct pd_block_writer *w, struct head_series *s,
		       int64_t lo, int64_t hi, int *added, struct pd_err *err);
/* db_idle.c: writes the series idle at newest (o.head_idle_ms) to blocks of
 * idle series and takes them out of the head. Called by flush with append_mu
 * held and no commit in flight. A failure leaves the head as it was. */
int db_write_idle(struct pd_tsdb *db, int64_t newest, struct pd_err *err);
/* The latest end of a block that is not a block of idle series; of any block when
 * all are; INT64_MIN when there is none. */
int64_t db_newest_block_end(const struct pd_tsdb *db);

/* The start of the block range of width r (> 0) holding t, into *out; 0. */
int db_window_floor(int64_t t, int64_t r, int64_t *out);

/* Merges blocks (sorted by mint) into one new block; ulid receives its name, or
 * "" when nothing was left to write (db_compact.c). */
int db_merge_blocks(struct pd_tsdb *db, struct pd_block **bs, size_t n, char ulid[27],
		    struct pd_err *err);

/* Replaces blocks [from, from+n) of db->blocks by the block in dir ulid (none
 * when ulid is ""). */
int db_swap_blocks(struct pd_tsdb *db, size_t from, size_t n, const char *ulid,
		   struct pd_err *err);

/* Merges blocks that overlap, then blocks into aligned ranges. */
int db_compact(struct pd_tsdb *db, struct pd_err *err);

/* Deletes the oldest blocks past the retention time or, with by_size, while the
 * blocks and the WAL exceed the retention size. */
int db_apply_retention(struct pd_tsdb *db, int by_size, struct pd_err *err);

#endif
