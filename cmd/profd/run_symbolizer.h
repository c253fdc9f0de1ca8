/* run_symbolizer.h: profd run's --symbolizer.* flags and the symbolizer they
 * start (run_symbolizer.c). */
#ifndef PROFD_RUN_SYMBOLIZER_H
#define PROFD_RUN_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profd/symbolize.h"

#define RUN_SYM_MAX_DIRS 32

struct run_sym_flags {
	int enabled;                        /* --[no-]symbolizer.enabled; on by default */
	const char *debuginfod_urls;        /* NULL: $DEBUGINFOD_URLS */
	const char *dirs[RUN_SYM_MAX_DIRS]; /* --symbolizer.debug-dirs, each a comma list */
	size_t ndirs;
	const char *timeout;          /* a query's wait */
	const char *cache_size;       /* the memory cache */
	const char *download_timeout; /* one debuginfod download */
	const char *max_download;     /* bytes of one */
	const char *workers;
	const char *max_open_files; /* debug files kept open */
	const char *max_build_ids;  /* build ids kept in memory */
	int mapping_files;          /* --[no-]symbolizer.mapping-files */
	char dirs_joined[4096];     /* for /api/v1/status/flags */
};

void run_sym_flags_init(struct run_sym_flags *f);
/* A value flag of a (its name nl bytes long) with value v: 1 taken, 0 not ours,
 * -1 after printing why it is bad. */
int run_sym_flag(struct run_sym_flags *f, const char *a, size_t nl, const char *v);
void run_sym_usage(FILE *out);
/* Starts the symbolizer the flags ask for (NULL when disabled) with
 * <storage_path>/debuginfo first among the directories and its cache in
 * <storage_path>/symbolizer; *timeout_ms the query wait. 0, or -1 after
 * printing why. */
int run_sym_start(struct run_sym_flags *f, const char *storage_path, struct pd_symbolizer **out,
                  int64_t *timeout_ms);

#endif
