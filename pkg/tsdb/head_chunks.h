/* head_chunks.h: the head chunk files of a store (dir/chunks_head/NNNNNN,
 * docs/format/head_chunks.md), where the head's sealed chunks live instead of
 * the heap. A mapper appends each sealed chunk to the newest file and hands back
 * pointers into a read-only mapping of it; a file stays mapped while any chunk in
 * it is referenced, and files are removed oldest first once nothing refers to
 * them. At open the files are read back, every chunk's CRC checked, for WAL
 * replay to take the chunks it would otherwise encode again. */
#ifndef PROFD_TSDB_HEAD_CHUNKS_H
#define PROFD_TSDB_HEAD_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include "profd/util.h"

#define HC_DIR "chunks_head"
#define HC_MAGIC 0x50444843u /* "PDHC" */
#define HC_VERSION 1
#define HC_FILE_HEADER 8
#define HC_CHUNK_HEADER 36 /* ref, mint, maxt, count, ts len, values len */
#define HC_CHUNK_OVERHEAD (HC_CHUNK_HEADER + 4)
/* A file is cut before a chunk that would take it past this size (unless it
 * holds no chunk yet); the default of pd_tsdb_opts.head_chunks_file_size. */
#define HC_DEFAULT_FILE_SIZE ((size_t)128 << 20)
#define HC_MAX_FILES 999999

struct hc_file;
struct hc_mapper;

/* Opens the mapper of dir/chunks_head (the folder is created with its first
 * file and removed with its last). Files already
 * there are not read: hcm_load does that. New chunks go to a new file after
 * the newest. file_size 0: HC_DEFAULT_FILE_SIZE. */
int hcm_open(struct hc_mapper **out, const char *dir, size_t file_size, struct pd_err *err);
/* Unmaps and closes every file; every chunk must have been released. NULL ok. */
void hcm_close(struct hc_mapper *m);

/* Appends a chunk of series ref to the newest file. On success *ts and *vals
 * point into the file's mapping (valid until hcm_release(*file)) and the caller
 * may free its own copies; on failure (the disk full, too many files) nothing
 * changed and the caller keeps its bytes. */
int hcm_write(struct hc_mapper *m, uint64_t ref, int64_t mint, int64_t maxt, uint32_t count,
              const uint8_t *ts, size_t ts_len, const uint8_t *vals, size_t vals_len,
              struct hc_file **file, const uint8_t **ts_out, const uint8_t **vals_out,
              struct pd_err *err);
/* One chunk of f is no longer referenced. Safe from any thread. */
void hcm_release(struct hc_file *f);
/* Removes the oldest files while no chunk in them is referenced (never the one
 * written to), so that the numbers of the files left run without a gap. */
void hcm_truncate(struct hc_mapper *m);
/* fsyncs the file being written, so that every chunk written so far is on disk. */
int hcm_sync(struct hc_mapper *m, struct pd_err *err);

/* A chunk read back at open. */
struct hc_loaded {
	uint64_t ref;
	int64_t mint, maxt;
	uint32_t count;
	const uint8_t *ts, *vals; /* in f's mapping */
	size_t ts_len, vals_len;
	struct hc_file *file; /* one reference: hcm_release it unless it is kept */
};

/* What hcm_load found wrong: files damaged (bad header, a chunk failing its CRC
 * or its bounds, a gap in the numbers), the bytes they lost, and the first in
 * words; a torn tail of the newest file (a chunk cut short at the end) is cut
 * off and counted apart, as the WAL's is. */
struct hc_damage {
	uint64_t files, bytes;
	char first[300];
	int cut;
	char cut_note[200];
};

/* Reads every file already in the folder (before any hcm_write): checks each
 * chunk's CRC and bounds; a damaged chunk loses it and the rest of its file.
 * *out (malloc'd) lists the intact chunks in file order, each holding a
 * reference to its file. read_only: the torn tail is left as it is. */
int hcm_load(struct hc_mapper *m, int read_only, struct hc_loaded **out, size_t *n,
             struct hc_damage *dmg, struct pd_err *err);

/* Files in the folder, their bytes, and chunks referenced in them. */
void hcm_stats(struct hc_mapper *m, uint64_t *files, uint64_t *bytes, uint64_t *chunks);

#endif
