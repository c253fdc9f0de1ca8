/* symbolize.h: names, files and lines for the bare addresses of native profiles.
 *
 * Profiles of C, C++ and Rust programs and of eBPF agents often carry locations
 * with an address and a mapping (with a build id) but no lines. A symbolizer
 * finds each mapping's debug information by build id (local .build-id
 * directories, the mapped file itself, debuginfod servers), reads it with
 * elfutils (DWARF through libdw, else the ELF symbol tables), demangles C++ and
 * Rust names (pd_pprof_demangle), and returns a new profile whose locations have
 * functions and lines (inlined frames innermost first, as profile.proto says).
 *
 * Debug files are found and opened on background worker threads; a caller waits
 * for them at most until its own deadline and gets, past it, a profile in which
 * the missing build ids' locations are named "<binary>+0x<address>" and a result
 * that says the answer is partial. Resolved addresses are kept in memory (an LRU
 * bounded in bytes) and on disk (docs/format/symbolizer-cache.md), so a restart
 * does not fetch again; a build id found nowhere is retried with exponential
 * backoff, not on every call. A symbolizer is safe to use from many threads. */
#ifndef PROFD_SYMBOLIZE_H
#define PROFD_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "profd/pprof.h"
#include "profd/util.h"

#define PD_SYMBOLIZE_DEFAULT_DEBUG_DIR "/usr/lib/debug"
#define PD_SYMBOLIZE_DEFAULT_CACHE_BYTES (64u << 20)
#define PD_SYMBOLIZE_DEFAULT_MAX_DOWNLOAD (1024ull << 20)
#define PD_SYMBOLIZE_DEFAULT_DOWNLOAD_TIMEOUT_MS 60000
#define PD_SYMBOLIZE_DEFAULT_WORKERS 2
#define PD_SYMBOLIZE_DEFAULT_RETRY_MS 30000
#define PD_SYMBOLIZE_DEFAULT_RETRY_MAX_MS 3600000
#define PD_SYMBOLIZE_DEFAULT_MAX_OPEN_FILES 64
#define PD_SYMBOLIZE_DEFAULT_MAX_BUILD_IDS 4096

struct pd_symbolize_opts {
	/* Directories laid out as <dir>/.build-id/xx/yyyy.debug, searched in order.
	 * Copied. */
	const char *const *debug_dirs;
	size_t ndebug_dirs;
	/* 1: a mapping's own file, when it exists here and its build id matches (or
	 * the mapping has none: then its build id is read from the file). */
	int use_mapping_files;
	/* debuginfod servers, space-separated as DEBUGINFOD_URLS; NULL or "": none.
	 * Copied. */
	const char *debuginfod_urls;
	size_t max_download;         /* bytes of one debug file from debuginfod */
	int64_t download_timeout_ms; /* one download, end to end */
	/* Where resolved addresses are kept across restarts; NULL: memory only.
	 * Created when missing. Copied. */
	const char *cache_dir;
	size_t cache_bytes;   /* the in-memory cache of resolved addresses */
	unsigned workers;     /* background threads that find and open debug files */
	int64_t retry_ms;     /* first wait before a build id found nowhere is tried again */
	int64_t retry_max_ms; /* the backoff doubles up to this */
	/* Debug files kept open (each a descriptor, its mapping and what libdw
	 * read of it); past it the least recently used is closed, and opened
	 * again when next needed. A lookup in progress keeps its file open, so
	 * there may be one more for each running at that moment. 0: the default. */
	unsigned max_open_files;
	/* Build ids (or file names) kept in memory, with their state and cached
	 * addresses; past it the least recently used one not in use is dropped
	 * (its disk cache stays). When all are in use, a new one is not kept and
	 * its addresses stay unresolved ("too many build ids in use"). 0: the
	 * default. */
	unsigned max_build_ids;
};

/* Fills o with the defaults above (no directories, no debuginfod, mapping files on). */
void pd_symbolize_opts_init(struct pd_symbolize_opts *o);

struct pd_symbolizer;

/* Starts a symbolizer and its worker threads; *out is owned by the caller
 * (pd_symbolizer_destroy). Fails when the cache directory cannot be created. */
int pd_symbolizer_create(struct pd_symbolizer **out, const struct pd_symbolize_opts *o,
                         struct pd_err *err);
/* Stops the workers (a download in flight is abandoned) and frees; NULL does nothing. */
void pd_symbolizer_destroy(struct pd_symbolizer *s);

/* What one call did. missing lists the build ids (or file names) whose
 * locations stayed unresolved, comma-separated, at most about 1 KiB. */
struct pd_symbolize_result {
	size_t locations;  /* locations that needed symbols */
	size_t resolved;   /* of those, given functions and lines */
	size_t unresolved; /* named <binary>+0x<address> */
	int partial;       /* 1: some debug information was still being fetched at the deadline */
	char missing[1024];
};

/* Symbolizes in: every location with an address and a mapping but no lines.
 * Waits for debug files at most until deadline_us (CLOCK_MONOTONIC microseconds;
 * 0: do not wait). *out is a new profile owned by the caller, or NULL when no
 * location needed symbols (then in is the answer). in is only read. */
int pd_symbolizer_run(struct pd_symbolizer *s, const struct pd_pprof_profile *in,
                      int64_t deadline_us, struct pd_pprof_profile **out,
                      struct pd_symbolize_result *res, struct pd_err *err);

/* Counters since start, for /api/v1/status/symbolizer and /metrics. */
struct pd_symbolizer_stats {
	uint64_t hits;        /* addresses answered from the memory or disk cache */
	uint64_t misses;      /* addresses that had to be looked up in debug information */
	uint64_t failures;    /* build ids looked for and found nowhere (each attempt) */
	uint64_t fetches;     /* debug files found (any source) and opened */
	uint64_t downloads;   /* of those, downloaded from debuginfod */
	uint64_t partial;     /* calls answered before their debug files were there */
	uint64_t in_flight;   /* build ids being looked for now */
	uint64_t cache_bytes; /* the memory cache's size now */
	uint64_t cache_entries;
	uint64_t build_ids;          /* build ids known (found, failed or pending) */
	uint64_t open_files;         /* debug files open now */
	uint64_t evictions;          /* debug files closed to stay within max_open_files */
	uint64_t reopens;            /* of those, opened again for a later lookup */
	uint64_t build_id_evictions; /* build ids dropped to stay within max_build_ids */
};
void pd_symbolizer_get_stats(struct pd_symbolizer *s, struct pd_symbolizer_stats *st);

/* The sources in the order they are tried, as JSON array items
 * ({"type":"dir","path":...}), appended to b. */
int pd_symbolizer_sources_json(struct pd_symbolizer *s, struct pd_buf *b);

/* The disk cache file of one build id, parsed: calls fn for each valid record
 * (address, frames as name/system name/file/line, innermost first). Stops at a
 * torn or corrupt tail, which is not an error; a bad header is (PD_ECORRUPT). */
struct pd_symbolize_frame {
	const char *name, *system_name, *file;
	size_t name_len, system_name_len, file_len;
	int64_t line, start_line;
};
int pd_symbolize_cache_parse(const uint8_t *buf, size_t len,
                             int (*fn)(void *ctx, uint64_t addr,
                                       const struct pd_symbolize_frame *frames, size_t n),
                             void *ctx, struct pd_err *err);

#endif
