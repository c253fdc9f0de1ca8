/* replay_idle.h: the samples that blocks of idle series hold, for WAL replay to
 * leave out (replay_idle.c). */
#ifndef PD_TSDB_REPLAY_IDLE_H
#define PD_TSDB_REPLAY_IDLE_H

#include <stddef.h>
#include <stdint.h>

#include "lpair.h"
#include "profd/util.h"

struct pd_tsdb;
struct idle_index;
struct idle_entry;

/* The series and timestamps of db's blocks of idle series into *out (NULL when
 * there is none; idle_index_free). Borrows the blocks' strings: free it before
 * the blocks close. */
int idle_index_build(struct pd_tsdb *db, struct idle_index **out, struct pd_err *err);
/* The entry of the series with these labels, or NULL (x may be NULL). */
const struct idle_entry *idle_index_find(const struct idle_index *x, const struct pd_lpair *l,
					 size_t n);
/* Whether a block of idle series holds a sample of e's series at t. */
int idle_index_holds(const struct idle_index *x, const struct idle_entry *e, int64_t t);
void idle_index_free(struct idle_index *x);

#endif
