/* hc_replay.h: WAL replay taking the chunks of the head chunk files back into
 * the head instead of encoding their samples again (hc_replay.c). */
#ifndef PROFD_TSDB_HC_REPLAY_H
#define PROFD_TSDB_HC_REPLAY_H

#include "tsdb_int.h"

struct hc_loaded;
struct hc_replay;

/* Takes ownership of c (n chunks from hcm_load, malloc'd), on success only. */
int hc_replay_start(struct hc_replay **out, struct hc_loaded *c, size_t n, struct pd_err *err);
/* For the WAL's sample at t of series s (WAL ref ref): 1 when a chunk of the
 * files holds it, now in the head (the sample is not replayed); 0 when the WAL
 * replays it. r NULL: 0. */
int hc_replay_sample(struct hc_replay *r, struct head *h, struct head_series *s, uint64_t ref,
                     int64_t t);
/* Releases the chunks the WAL did not take and frees r; the chunks and samples
 * taken into *chunks and *samples (may be NULL). NULL ok. */
void hc_replay_end(struct hc_replay *r, uint64_t *chunks, uint64_t *samples);

#endif
