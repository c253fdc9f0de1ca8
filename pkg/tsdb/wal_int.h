/* wal_int.h: the WAL's private pieces, shared by wal.c (appending), wal_read.c
 * (reading segments and replay with repair) and wal_checkpoint.c. Byte layouts
 * are in docs/format/wal.md; in short:
 *
 *   segment   = header record*
 *   header    = magic "PDWL" (4B) | version 1 (1B) | reserved, zero (3B)
 *   record    = type (1B) | flags (1B) | length (4B BE) | CRC32C (4B BE) | payload
 *               the CRC covers type, flags, length and the stored payload
 *   commit    = nseries uvarint, series*, nsamples uvarint, sample*   (type 1)
 *   deletion  = nseries uvarint, series*, ntombs uvarint, tombstone*  (type 2)
 *   tombstone = ref uvarint, mint signed varint, maxt signed varint
 *   series    = ref uvarint, nlabels uvarint, (len uvarint, name, len uvarint, value)*
 *   sample    = ref uvarint, t signed varint (zigzag), len uvarint, profile bytes
 *
 * The encoder and the segment writer are used by one thread at a time. A pd_wal
 * is shared by committers: each frames its own record (struct pd_wal_rec), queues
 * it under the WAL's mutex, and one of the waiting committers, the leader, writes
 * every queued record with one pwritev and one fdatasync (group commit). */
#ifndef PROFD_TSDB_WAL_INT_H
#define PROFD_TSDB_WAL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "wal.h"

#define PD_WAL_MAGIC "PDWL"
#define PD_WAL_VERSION 1
#define PD_WAL_SEG_HDR 8  /* segment header bytes */
#define PD_WAL_REC_HDR 10 /* record header bytes */

enum pd_wal_rec_type {
	PD_WAL_REC_COMMIT = 1,     /* series and samples of one commit */
	PD_WAL_REC_TOMBSTONES = 2, /* series and deleted intervals of one deletion */
};

#define PD_WAL_FLAG_ZSTD 0x01 /* payload is one zstd frame */
#define PD_WAL_FLAGS_KNOWN PD_WAL_FLAG_ZSTD

#define PD_WAL_DEFAULT_SEGMENT ((size_t)128 << 20)
/* zstd levels: a payload mostly of profile samples (raw pprof bytes: a converted
 * push, a profile the WAL must compress) at a fast level, twice as fast as level 1
 * on pprof bytes for about 30% more of them; the rest (series, checkpoints) at 1 */
#define PD_WAL_ZSTD_LEVEL 1
#define PD_WAL_ZSTD_LEVEL_SAMPLES (-5)
#define PD_WAL_COMPRESS_MIN 64 /* smaller payloads are stored as they are */
#define PD_WAL_CHECKPOINT_BATCH ((size_t)4 << 20) /* checkpoint record size target */
#define PD_WAL_KEEP_BUF ((size_t)8 << 20) /* larger scratch buffers are freed after use */
#define PD_WAL_MAX_LABELS 65535 /* labels of one series, for writers and readers */
#define PD_WAL_GROUP_MAX 1024   /* records in one group write (at most IOV_MAX) */
#define PD_WAL_LAZY_SYNC_MS 100 /* a lazy record is synced at most this long after
				 * its write (the background sync's period) */

/* ---- commit payload encoder ------------------------------------------------ */

/* Series and samples of one pending record; the payload is assembled from the
 * two at commit. Embedded: pd_wal_enc_init / _fini. */
struct pd_wal_enc {
	struct pd_buf series, samples;
	uint64_t nseries, nsamples;
	size_t packed; /* bytes of samples that are gzip streams already */
	size_t max; /* largest payload */
	int tombs;  /* samples holds tombstones (a deletion record, type 2) */
};

void pd_wal_enc_init(struct pd_wal_enc *e, size_t max);
void pd_wal_enc_fini(struct pd_wal_enc *e);
/* Empties the record (and frees buffers that grew large). */
void pd_wal_enc_reset(struct pd_wal_enc *e);
/* Appends one entry; the record is unchanged on error (PD_EINVAL, PD_ETOOBIG). */
int pd_wal_enc_series(struct pd_wal_enc *e, uint64_t ref, const struct pd_lpair *labels,
		      size_t n, struct pd_err *err);
int pd_wal_enc_sample(struct pd_wal_enc *e, uint64_t ref, int64_t t, const uint8_t *p,
		      size_t len, struct pd_err *err);
/* A deleted interval; a record holds samples or tombstones, never both
 * (PD_EINVAL). */
int pd_wal_enc_tombstone(struct pd_wal_enc *e, uint64_t ref, int64_t mint, int64_t maxt,
			 struct pd_err *err);
/* Uncompressed payload size. */
size_t pd_wal_enc_len(const struct pd_wal_enc *e);
static inline int pd_wal_enc_empty(const struct pd_wal_enc *e)
{
	return e->nseries == 0 && e->nsamples == 0;
}

/* Frames e as one record into out (replacing its bytes): header, CRC32C, and the
 * payload compressed with cctx (a ZSTD_CCtx; NULL: stored as it is) when that
 * saves space. scratch is working space. Both buffers stay owned by the caller. */
int pd_wal_frame(const struct pd_wal_enc *e, void *cctx, struct pd_buf *out, struct pd_buf *scratch,
		 struct pd_err *err);
/* The calling thread's zstd compression context (freed when the thread ends);
 * NULL without memory. */
void *pd_wal_thread_cctx(void);

/* ---- segment writer -------------------------------------------------------- */

/* The header every segment file starts with. */
extern const uint8_t pd_wal_seg_header[PD_WAL_SEG_HDR];

/* Appends records to the numbered segment files of one directory (the WAL, or a
 * checkpoint being written). Embedded: pd_wal_segw_init / _fini. */
struct pd_wal_segw {
	char *dir;
	uint32_t num;       /* current segment, when fd >= 0 */
	int fd;             /* -1: no segment open */
	uint64_t off;       /* end of the last complete record */
	int dirty;          /* bytes past off may exist: cut them before the next write */
	size_t segment_size;
	int sync;           /* enum pd_wal_sync, applied per record */
	int sync_on_finish; /* fdatasync a segment before leaving it */
	uint64_t added;     /* bytes added to the directory since init */
	void *cctx;         /* ZSTD_CCtx */
	struct pd_buf rec;  /* record being written */
	struct pd_buf zbuf; /* compressed payload */
};

int pd_wal_segw_init(struct pd_wal_segw *s, const char *dir, size_t segment_size, int sync,
		     struct pd_err *err);
/* Syncs and closes the current segment (sync: fdatasync first). */
int pd_wal_segw_finish(struct pd_wal_segw *s, int sync, struct pd_err *err);
void pd_wal_segw_fini(struct pd_wal_segw *s);
/* Creates segment num (header written, file and directory synced) and makes it
 * current; the previous one is synced and closed. On error the previous stays. */
int pd_wal_segw_create(struct pd_wal_segw *s, uint32_t num, struct pd_err *err);
/* Continues segment num (open for writing as fd, taken over), of size bytes,
 * whose records the caller has checked. */
int pd_wal_segw_resume(struct pd_wal_segw *s, uint32_t num, int fd, uint64_t size);
/* Writes e as one record, cutting a new segment first when the current one would
 * grow past segment_size. A failed write is cut off again. */
int pd_wal_segw_write(struct pd_wal_segw *s, const struct pd_wal_enc *e, struct pd_err *err);
/* Writes n framed records (iov, consumed) with pwritev at the end of the last
 * complete record, after cutting off what an earlier failed write left. They
 * count only after pd_wal_segw_settle; a failed write is cut off again. The
 * caller cuts segments. */
int pd_wal_segw_put(struct pd_wal_segw *s, struct iovec *iov, int n, struct pd_err *err);
/* Syncs the total bytes pd_wal_segw_put wrote as the policy says, unless nosync
 * (*synced: 1 when fdatasync ran) and makes them count; a failed sync cuts them
 * off. */
int pd_wal_segw_settle(struct pd_wal_segw *s, size_t total, int nosync, int *synced,
		       struct pd_err *err);

/* ---- records on their way (group commit) ------------------------------------ */

struct pd_wal_rec {
	struct pd_wal_enc enc;  /* the payload, until sealed */
	struct pd_buf rec;      /* the framed record, once sealed */
	struct pd_buf scratch;  /* compression output */
	int sealed;
	int lazy;          /* done once written; a later sync makes it durable */
	pthread_cond_t cv; /* its owner waits here, with the WAL's mu */
	/* once queued, guarded by the WAL's mu: */
	struct pd_wal_rec *next;
	int done; /* written and synced, or failed with rc and err */
	int rc;
	struct pd_err err;
};

/* ---- the WAL ---------------------------------------------------------------- */

struct pd_wal {
	char *dir;
	/* the writer's, while it holds `writing`: */
	struct pd_wal_segw seg;   /* the current segment */
	uint64_t base_size;       /* bytes on disk when seg.added was last zero */
	struct iovec iov[PD_WAL_GROUP_MAX];
	/* the single-threaded pd_wal_add_* / pd_wal_commit path: */
	struct pd_wal_enc enc;    /* the pending record */
	struct pd_wal_rec single; /* its framed bytes on their way */
	/* guarded by mu: */
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* the writer left: for pd_wal_writer_enter */
	struct pd_wal_rec *head, *tail; /* queued, not yet taken by a leader */
	int writing;              /* a leader or an exclusive section owns seg */
	int excl_waiting;         /* threads in pd_wal_writer_enter */
	uint64_t size;            /* base_size + seg.added when the writer last left */
	uint32_t end_seg;         /* the end of the last record written and synced: */
	uint64_t end_off;         /* segment and byte (pd_wal_end) */
	struct pd_wal_stats stats;
	int unsynced;             /* lazy records were written since the last sync */
	int stop;                 /* pd_wal_close: the syncer is to end */
	pthread_cond_t sync_cv;   /* the syncer waits here for its period or stop */
	pthread_t syncer;         /* with the commit sync policy: syncs lazy records */
	int syncer_started;
	/* tests only: called by a leader (without mu) after its group's write and
	 * before its sync, with the number of records in the group */
	void (*before_sync)(void *ctx, size_t nrecords);
	void *hook_ctx;
};

/* Waits until no one writes and makes the caller the writer (for cuts and
 * checkpoints); pd_wal_writer_leave ends it and publishes the size. */
void pd_wal_writer_enter(struct pd_wal *w);
void pd_wal_writer_leave(struct pd_wal *w);

/* ---- directory ------------------------------------------------------------- */

/* What a WAL directory holds, numbers ascending. */
struct pd_wal_listing {
	uint32_t *segs;
	size_t nsegs;
	uint32_t *cps; /* complete checkpoints */
	size_t ncps;
	uint32_t *tmps; /* checkpoint.N.tmp leftovers */
	size_t ntmps;
};

/* Lists dir; PD_ENOTFOUND when it does not exist. */
int pd_wal_list(const char *dir, struct pd_wal_listing *l, struct pd_err *err);
void pd_wal_listing_fini(struct pd_wal_listing *l);
/* "dir/00000012", "dir/checkpoint.00000012", "dir/checkpoint.00000012.tmp" (malloc'd). */
char *pd_wal_seg_path(const char *dir, uint32_t num);
char *pd_wal_cp_path(const char *dir, uint32_t num, int tmp);
int pd_wal_fsync_dir(const char *dir, struct pd_err *err);
/* Removes a directory of plain files; a missing one is fine. */
int pd_wal_rmdir(const char *dir, struct pd_err *err);

/* ---- reading --------------------------------------------------------------- */

/* The damage a read of segments skipped. */
struct pd_wal_damage {
	uint32_t segment; /* the first damage: where, and why */
	uint64_t offset;
	char reason[200];
	uint64_t regions; /* damaged stretches skipped (a missing segment is one) */
	uint64_t records; /* records in them, as far as their lengths tell; >= 1 each */
	uint64_t bytes;   /* bytes in them */
	int tail;         /* the last segment read ends in damage: */
	uint32_t tail_segment;
	uint64_t tail_offset; /* where that damage starts */
	char tail_reason[200];
};

/* Reads segments nums[0..n) of dir in order and hands every record's series and
 * samples to cb (a record is checked whole before any of it is delivered).
 * Damage is skipped: the reader looks for the next intact record (a header whose
 * CRC32C and payload check) byte by byte and goes on from there; a missing
 * segment is skipped likewise. first: the number the first segment must have (0:
 * any). Returns 0 when all was read, 1 when damage was skipped (*dmg says where
 * and how much; the segments were not touched), or a negative code: a
 * callback's, PD_EIO, PD_ENOMEM, or PD_EINCOMPAT for data of a newer format. */
int pd_wal_read_segments(const char *dir, const uint32_t *nums, size_t n, uint32_t first,
			 const struct pd_wal_replay_cb *cb, struct pd_wal_replay_stats *stats,
			 struct pd_wal_damage *dmg, struct pd_err *err);
/* Checks the record framing of one segment without decoding payloads: 0 when its
 * records end exactly at its end, else PD_ECORRUPT. */
int pd_wal_check_tail(const char *path, int fd, uint64_t size, struct pd_err *err);

#endif
