/* symbolizer_int.h: the symbolizer's own state, shared by symbolizer.c (build
 * ids, workers, the cache) and rewrite.c (one call on one profile). */
#ifndef PROFD_SYMBOLIZER_INT_H
#define PROFD_SYMBOLIZER_INT_H

#include <pthread.h>

#include "symbolize_int.h"

#define DEBUGINFOD_URLS_ENV "DEBUGINFOD_URLS"

enum { OBJ_IDLE, OBJ_QUEUED, OBJ_BUSY, OBJ_READY, OBJ_FAILED };

/* A build id (or, without one, a mapped file's name) and its debug file. */
struct sym_obj {
	char *key;      /* build_id, else file */
	char *build_id; /* lowercase hex, "" when unknown */
	char *file;     /* the mapping's file name */
	int state;      /* OBJ_*, under the symbolizer's mu */
	/* OBJ_READY: the open debug file, used and set under dbg_mu; NULL when it
	 * was closed to keep the open files within max_open_files (then opened
	 * again from path by the next lookup) */
	struct sym_dbg *dbg;
	pthread_mutex_t dbg_mu;
	char *path;                    /* OBJ_READY: the debug file found, malloc'd */
	const char *source;            /* where it was found (static string) */
	struct sym_obj *oprev, *onext; /* the list of open ones, under mu */
	int listed;                    /* in that list */
	int64_t retry_at_us, backoff_ms;
	char err[256]; /* why it was not found */
	int err_code;  /* and its code: PD_EUNAVAIL when a debuginfod could not be reached */
	int disk_loaded;
	struct sym_obj *qnext;
	/* the table of build ids, under mu: its hash chain, its place among all
	 * of them (most recently used first), the running calls and queued jobs
	 * that hold it (it is not evicted while any do), and its cached addresses */
	struct sym_obj *hnext, *lprev, *lnext;
	unsigned pins;
	struct sym_entry *entries;
};

/* One resolved address, in the LRU. */
struct sym_entry {
	struct sym_obj *obj;
	uint64_t addr;
	struct sym_result r;
	size_t bytes;
	struct sym_entry *hnext, *prev, *next;
	struct sym_entry *eprev, *enext; /* the entries of obj */
};

/* Addresses of one build id left for a worker to resolve, past a query's deadline. */
struct sym_job {
	struct sym_obj *o;
	uint64_t start, limit, offset; /* the mapping */
	uint64_t *addrs;
	size_t n;
	struct sym_job *next;
};

struct pd_symbolizer {
	struct pd_symbolize_opts o; /* the numbers; strings below */
	struct sym_find_opts fo;
	char *urls, *cache_dir;
	pthread_mutex_t mu;
	pthread_cond_t done_cv; /* a worker finished a build id (CLOCK_MONOTONIC) */
	pthread_cond_t work_cv; /* a build id was queued */
	/* the build ids known, at most o.max_build_ids: a hash table (seeded
	 * at random) and a list, most recently used first */
	struct sym_obj **obuckets;
	size_t nobuckets;
	uint64_t oseed;
	struct sym_obj *lhead, *ltail;
	size_t nobjs;
	struct sym_obj *qhead, *qtail;
	struct sym_job *jhead, *jtail; /* addresses to resolve */
	struct sym_entry **buckets;
	size_t nbuckets;
	struct sym_entry lru; /* sentinel: next is the most recent */
	size_t bytes, entries;
	/* the build ids whose debug file is open, most recently used first */
	struct sym_obj *ohead, *otail;
	size_t nopen;
	struct pd_symbolizer_stats st;
	pthread_t *threads;
	unsigned nthreads;
	volatile int stop;
};

int64_t sym_now_us(void);
/* Resolves addr of o (READY) and caches it, in memory and on disk; r gets a
 * copy when not NULL. Takes o->dbg_mu and mu in turn; call with neither held. */
int sym_resolve(struct pd_symbolizer *s, struct sym_obj *o, uint64_t start, uint64_t limit,
                uint64_t offset, uint64_t addr, struct sym_result *r);
/* Queues a job (taking ownership of it, and pinning its object) for a
 * worker. Under mu. */
void sym_job_queue(struct pd_symbolizer *s, struct sym_job *j);
/* The object of a build id (else of a file), made when new; NULL when neither
 * is given, out of memory, or (*full set to 1) max_build_ids are known and
 * none can be evicted (all pinned, queued or being looked for). Past the
 * bound the least recently used evictable one is dropped, with its cached
 * addresses and its open debug file. With *full already 1 (no room found
 * before, in the same call) only a known one is returned: no new search.
 * The caller pins what it keeps (pins++) and unpins it (sym_obj_unpin) when
 * done. Under mu. */
struct sym_obj *sym_obj_get(struct pd_symbolizer *s, const char *build_id, const char *file,
                            int *full);
void sym_obj_unpin(struct pd_symbolizer *s, struct sym_obj *o);
void sym_obj_want(struct pd_symbolizer *s, struct sym_obj *o, int64_t now_us);
/* Puts o (its debug file open) first in the list of open ones and closes the
 * least recently used others past max_open_files, skipping those in use (a
 * lookup holds their dbg_mu). Under mu: the debug files to close after it is
 * released go into out (at most max, the number returned). */
size_t sym_open_touch(struct pd_symbolizer *s, struct sym_obj *o, struct sym_dbg **out, size_t max);
struct sym_entry *sym_cache_get(struct pd_symbolizer *s, struct sym_obj *o, uint64_t addr);
void sym_cache_put(struct pd_symbolizer *s, struct sym_obj *o, uint64_t addr, struct sym_result *r);

#endif
