/* head_spill.h: the head's open-chunk frame files (dir/chunks_open/NNNNNN,
 * docs/format/chunks_open.md): where each open chunk's full frames of compressed
 * records go (pd_chunkenc_frame_store), so that the heap holds of an open chunk
 * only what its next append needs. The files are a cache of what the WAL holds:
 * never fsynced, never read at open (they are removed then and at close), each
 * removed once no frame in it is referenced. Frames are read back with pread, so
 * a file removed by hand under a running profd still reads. */
#ifndef PROFD_TSDB_HEAD_SPILL_H
#define PROFD_TSDB_HEAD_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "profd/chunkenc.h"
#include "profd/util.h"

#define HS_DIR "chunks_open"
#define HS_MAGIC 0x5044484Fu /* "PDHO" */
#define HS_VERSION 1
#define HS_FILE_HEADER 8
/* A file is cut before a frame that would take it past this size (unless it
 * holds none yet). */
#define HS_DEFAULT_FILE_SIZE ((size_t)64 << 20)

struct hs_store;

/* Opens the frame files of dir/chunks_open, removing whatever files the folder
 * holds (an earlier run's). file_size 0: HS_DEFAULT_FILE_SIZE (at most 4 GiB).
 * *out is freed with hs_close. */
int hs_open(struct hs_store **out, const char *dir, size_t file_size, struct pd_err *err);
/* Closes and removes every file and the folder; every frame must have been
 * dropped. NULL ok. */
void hs_close(struct hs_store *s);
/* The store as appenders take it: borrowed, valid until hs_close. */
const struct pd_chunkenc_frame_store *hs_frame_store(struct hs_store *s);
/* Files open, their bytes, and the bytes of the frames still referenced. */
void hs_stats(struct hs_store *s, uint64_t *files, uint64_t *bytes, uint64_t *live_bytes);
/* Frames that could not be written (a full disk) and stayed in memory. */
uint64_t hs_write_failures(struct hs_store *s);

#endif
