/* symbolize_int.h: what the files of pkg/symbolize share: resolved frames, the
 * debug-file reader (dwarf.c), ELF notes (elf.c), where debug files are found
 * (find.c) and the disk cache (cache_file.c). */
#ifndef PROFD_SYMBOLIZE_INT_H
#define PROFD_SYMBOLIZE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profd/symbolize.h"

/* One frame of an address: a function, where in it; strings malloc'd. */
struct sym_frame {
	char *name, *system_name, *file;
	int64_t line, start_line;
};

/* An address's frames, innermost first; n == 0: the debug information has
 * nothing for it. */
struct sym_result {
	struct sym_frame *f;
	size_t n;
};
void sym_result_fini(struct sym_result *r);
/* The bytes r holds, for the cache's bound. */
size_t sym_result_bytes(const struct sym_result *r);
/* Appends a frame (strings copied; NULL is ""); PD_ENOMEM. */
int sym_result_add(struct sym_result *r, const char *name, const char *system_name,
                   const char *file, int64_t line, int64_t start_line);

/* ---- elf.c ---- */
/* The GNU build id of the ELF file at path as lowercase hex into hex (cap >= 2 *
 * 64 + 1). 0, or PD_ENOTFOUND (no file, not ELF, no note). */
int sym_elf_build_id(const char *path, char *hex, size_t cap);
/* Whether the ELF file at path has DWARF (a .debug_info section with contents);
 * *has_funcs says whether its .symtab or .dynsym defines any function. */
int sym_elf_contents(const char *path, int *has_funcs);

/* ---- dwarf.c: one debug file, opened ---- */
struct sym_dbg;
/* Opens path (an ELF file with DWARF, symbol tables, or both); owned by the caller. */
int sym_dbg_open(struct sym_dbg **out, const char *path, struct pd_err *err);
void sym_dbg_close(struct sym_dbg *d);
/* Frames of addr, an address of a process in which the file was mapped at
 * [start, limit) from file offset `offset` (all 0: addr is the file's own
 * address). Not thread-safe: one caller at a time per sym_dbg. */
int sym_dbg_lookup(struct sym_dbg *d, uint64_t start, uint64_t limit, uint64_t offset,
                   uint64_t addr, struct sym_result *r);
/* The bytes the opened file takes, roughly (its size on disk). */
size_t sym_dbg_size(const struct sym_dbg *d);

/* ---- find.c: where the debug file of a build id is ---- */
struct sym_find_opts {
	char **dirs;
	size_t ndirs;
	int use_mapping_files;
	const char *debuginfod_urls; /* NULL: none */
	size_t max_download;
	int64_t timeout_ms;
	const char *download_dir; /* where debuginfod's files are kept; NULL: its own cache */
	const volatile int *cancel;
};
/* What was found: *path malloc'd; *source is "dir", "file" or "debuginfod".
 * PD_ENOTFOUND when no source has it (err says which were asked). */
int sym_find(const struct sym_find_opts *o, const char *build_id, const char *mapping_file,
             char **path, const char **source, struct pd_err *err);

/* ---- debuginfod_dl.c ---- */
/* Loads libdebuginfod.so.1 on the first call (the debuginfod_* functions find.c
 * calls are defined there and forward to it). NULL when it is loaded, else why it
 * could not be (dlerror's message; static storage). */
const char *sym_debuginfod_load(void);

/* ---- cache_file.c ---- */
/* Appends the record of addr to <dir>/<build_id>.symcache, creating the file
 * with its header when missing. */
int sym_cache_append(const char *dir, const char *build_id, uint64_t addr,
                     const struct sym_result *r, struct pd_err *err);
/* Reads <dir>/<build_id>.symcache (at most max bytes) and calls fn per record;
 * PD_ENOTFOUND when there is none. */
int sym_cache_load(const char *dir, const char *build_id, size_t max,
                   int (*fn)(void *ctx, uint64_t addr, const struct pd_symbolize_frame *frames,
                             size_t n),
                   void *ctx, struct pd_err *err);

#endif
