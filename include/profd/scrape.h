/* scrape.h: pulling profiles. The engine runs every scrape loop — one per
 * (target, profile type) — on a single libcurl multi event loop thread: each loop
 * fires at its own offset within its interval (derived from a hash of the target,
 * so that load spreads evenly), fetches one URL with its timeout, body limit and
 * client settings, and hands the body to a pool of worker threads, where the
 * caller's callback decodes and stores it. A slow or failing target never delays
 * another: the event loop only copies bytes (libcurl's content decoding is off;
 * a Content-Encoding is undone on a worker, under the body limit and the scrape's
 * timeout), and every body is bounded by its limit. */
#ifndef PROFD_SCRAPE_H
#define PROFD_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

#include "profd/discovery.h"
#include "profd/pprof.h"
#include "profd/util.h"

/* The body limit of a scrape whose configuration sets none (body_size_limit 0):
 * 64 MiB, after content decoding. It also caps the inflated size of a gzip
 * profile (with the pprof decoder's own 256 MiB cap). */
#define PD_SCRAPE_DEFAULT_BODY_LIMIT ((size_t)64 << 20)

/* What one loop fetches and how often. Strings are copied by pd_scrape_loop_add. */
struct pd_scrape_spec {
	const char *url;
	int64_t interval_ms;
	int64_t timeout_ms;
	size_t body_limit;  /* bytes after content decoding; 0: PD_SCRAPE_DEFAULT_BODY_LIMIT */
	uint64_t offset_seed; /* hash of the target: where in the interval it fires */
	const struct pd_http_client_config *client; /* may be NULL; copied */
};

/* The outcome of one scrape, handed to the result callback. */
struct pd_scrape_result {
	int64_t scheduled_ms; /* the tick this scrape belongs to: the sample's timestamp */
	int64_t start_ms, duration_us;
	long http_status;     /* 0 when no response */
	const uint8_t *body;  /* borrowed for the call; NULL on error */
	size_t len;
	int error;            /* 0 or a PD_E... code */
	int limit;            /* with error: the limit on the profile it hit (enum
			       * pd_pprof_limit), or 0 */
	const char *message;  /* why it failed, for the target's last error */
	/* for the callback's own decoding: the loop's limits, the instant (CLOCK_MONOTONIC
	 * microseconds) by which decoding must end (the timeout bounds the transfer, then
	 * again the decoding, counted from when a worker takes the result up, so that
	 * waiting behind other targets' work never counts), and a flag that becomes
	 * non-zero when the loop is removed or the engine stops (give up then) */
	int64_t timeout_ms;
	size_t body_limit;
	int64_t deadline_us;
	const int *cancel;
};

struct pd_scrape_engine;

/* Called on a worker thread for every finished scrape. loop_ctx is the pointer
 * given to pd_scrape_loop_add. Must not call back into the engine's add/remove for
 * the same loop. */
typedef void (*pd_scrape_result_fn)(void *engine_ctx, void *loop_ctx,
				    const struct pd_scrape_result *r);

/* Starts the engine thread and workers (0: pd_scrape_default_workers()). *out is owned
 * by the caller. */
/* The worker threads used when none are asked for: 8 per online CPU, at least 8 and
 * at most 64. A scrape's append does not wait for the WAL's fsync (its commit is
 * lazy), but it may share a group write with a push that does, and a worker may wait
 * on the store's locks; more workers than CPUs keep the CPUs busy meanwhile. */
unsigned pd_scrape_default_workers(void);

int pd_scrape_engine_create(struct pd_scrape_engine **out, unsigned workers,
			    pd_scrape_result_fn fn, void *ctx, struct pd_err *err);
/* Stops the loops, waits for in-flight results to be delivered, and frees. */
void pd_scrape_engine_destroy(struct pd_scrape_engine *e);
/* A body with a Content-Encoding may inflate to at most ratio times its size (and
 * the body limit), for the loops added after the call; 0 (the start): no ratio
 * limit. Past it the scrape fails with PD_ETOOBIG and limit PD_PPROF_LIMIT_RATIO. */
void pd_scrape_engine_set_max_ratio(struct pd_scrape_engine *e, unsigned ratio);

/* Adds a loop; it fires first at its offset within the next interval. Returns its
 * id (> 0) in *id. */
int pd_scrape_loop_add(struct pd_scrape_engine *e, const struct pd_scrape_spec *spec,
		       void *loop_ctx, uint64_t *id, struct pd_err *err);
/* Removes a loop; after return no new scrape of it starts, and no callback for it
 * runs any more (an in-flight result is dropped). */
void pd_scrape_loop_remove(struct pd_scrape_engine *e, uint64_t id);
/* Removes n loops as pd_scrape_loop_remove does, under one lock and with one
 * wake-up of the engine, so that a reload dropping many targets costs O(n log
 * loops) and not a context switch per loop. ids is borrowed; 0s are skipped. */
void pd_scrape_loops_remove(struct pd_scrape_engine *e, const uint64_t *ids, size_t n);

/* The time within [0, interval) at which a loop with this seed fires, as
 * Prometheus spreads targets (exposed for tests). */
int64_t pd_scrape_offset(uint64_t seed, int64_t interval_ms);

/* A duration as Prometheus prints it ("1m30s", "15s", "500ms") into out. */
void pd_scrape_format_duration(int64_t ms, char *out, size_t size);

/* The current CLOCK_MONOTONIC time in microseconds, the clock of deadline_us. */
int64_t pd_scrape_mono_us(void);

/* ---- the scrape manager ------------------------------------------------------- */

/* The manager turns discovered target groups into scrape loops, one per (target,
 * profile type), as Prometheus derives targets: the target's and its group's
 * labels, then defaults (job, __scheme__, __metrics_path__, __param_<name>,
 * __scrape_interval__, __scrape_timeout__), plus __name__ = the profile type with
 * __metrics_path__ = the type's path, so that relabel_configs see and may change
 * both; then the relabel rules; then instance = __address__ when unset, and every
 * label starting with "__" but __name__ dropped. What remains names the series.
 * Each finished scrape is decoded and validated off the event loop and appended to
 * the store at its scheduled tick; a failure stores nothing and marks the target
 * down with the reason. */

struct pd_storage;
struct pd_relabel_rules;

struct pd_scrape_profile_type {
	const char *name;  /* the series' __name__: "heap", "profile", "fgprof" */
	const char *path;  /* e.g. "/debug/pprof/heap" */
	int64_t seconds;   /* > 0: add ?seconds=N (CPU profiles, deltas) */
};

/* One scrape_config, resolved. Strings and arrays are copied by
 * pd_scrape_manager_set_pools; relabel is borrowed and must stay valid until the
 * next set_pools call returns (the daemon keeps its config until then). */
struct pd_scrape_pool_settings {
	const char *job_name;
	const char *scheme;       /* "http" or "https" */
	const char *metrics_path; /* the __metrics_path__ default for types without a path */
	const char *const *param_names;  /* URL parameters, first value each */
	const char *const *param_values;
	size_t nparams;
	int64_t interval_ms, timeout_ms;
	size_t body_size_limit; /* 0: none */
	/* More targets than this after relabeling (0: no limit) and no target of
	 * the pool is scraped: each is down with "target_limit exceeded (number of
	 * targets: N, limit: L)", as in Prometheus. */
	uint64_t target_limit;
	int honor_labels;
	const struct pd_http_client_config *client; /* may be NULL; copied */
	const struct pd_relabel_rules *relabel;     /* may be NULL; borrowed */
	const struct pd_scrape_profile_type *types;
	size_t ntypes;
	/* the value of every target's __tenant__ label (labels.h's PD_LABELS_TENANT),
	 * set after relabeling, which cannot change it; NULL or "": none (the default
	 * tenant). Copied. */
	const char *tenant;
};

struct pd_scrape_manager_opts {
	unsigned workers;        /* decode threads; 0: pd_scrape_default_workers() */
	size_t max_decompressed; /* largest profile after gunzip, whatever the body
				    limit; 0: the pprof default (256 MiB) */
	/* what a scraped profile may be to be stored: gzip ratio (of the body and of
	 * a gzip profile), decoded memory, samples, labels per sample (pprof.h's
	 * PD_PPROF_STORE_* when 0); a scrape over one fails naming it */
	unsigned max_ratio;
	size_t max_memory;
	size_t max_samples;
	size_t max_sample_labels;
	/* the legacy readers' limits on a scraped legacy profile (frames of a
	 * sample, bytes of a text line, map entries; 0: PD_PPROF_LEGACY_*) */
	size_t legacy_max_depth, legacy_max_line, legacy_max_maps;
};

struct pd_scrape_manager;

/* Starts a manager that appends to db (borrowed; must outlive the manager). opts
 * may be NULL. *out is owned by the caller. */
int pd_scrape_manager_create(struct pd_scrape_manager **out, struct pd_storage *db,
			     const struct pd_scrape_manager_opts *opts, struct pd_err *err);
/* Stops every loop and frees the manager; NULL does nothing. */
void pd_scrape_manager_destroy(struct pd_scrape_manager *m);

/* Sets the scrape pools. Pools not in the list stop; pools whose settings changed
 * recompute their targets from their last groups; loops whose URL, labels and
 * scrape settings did not change keep running untouched. */
int pd_scrape_manager_set_pools(struct pd_scrape_manager *m,
				const struct pd_scrape_pool_settings *pools, size_t n,
				struct pd_err *err);
/* The discovery callback: the full current groups of a pool. Groups are copied. */
void pd_scrape_manager_sync(struct pd_scrape_manager *m, const char *pool,
			    const struct pd_target_group *groups, size_t n);

enum pd_scrape_health { PD_SCRAPE_UNKNOWN = 0, PD_SCRAPE_UP = 1, PD_SCRAPE_DOWN = 2 };

/* A snapshot of one target, for the targets API. Strings are owned by the
 * snapshot; labels is NULL for a dropped target. */
struct pd_scrape_target_status {
	char *pool;
	char *url;
	char *profile_type;
	struct pd_labels *discovered; /* before relabeling */
	struct pd_labels *labels;     /* the series' labels; NULL when dropped */
	int health;                   /* enum pd_scrape_health */
	char *last_error;             /* "" when the last scrape succeeded */
	int64_t last_scrape_ms;       /* scheduled time of the last scrape, 0: none */
	int64_t last_duration_us;
	int64_t interval_ms, timeout_ms;
};

/* Every target (with include_dropped, also those relabeling dropped), sorted by
 * pool, then labels. Free with pd_scrape_target_status_free. */
int pd_scrape_manager_targets(struct pd_scrape_manager *m, int include_dropped,
			      struct pd_scrape_target_status **out, size_t *n, struct pd_err *err);
void pd_scrape_target_status_free(struct pd_scrape_target_status *s, size_t n);

#define PD_SCRAPE_DURATION_BUCKETS 11

/* Upper bounds (seconds) of the scrape duration histogram: Prometheus's defaults. */
extern const double pd_scrape_duration_bounds[PD_SCRAPE_DURATION_BUCKETS];

struct pd_scrape_stats {
	uint64_t scrapes_ok, scrapes_failed, bytes_scraped, profiles_appended;
	uint64_t active_targets, dropped_targets;
	/* pool updates that found more targets than the pool's target_limit */
	uint64_t target_limit_exceeded;
	/* scrape durations (request to response, successful or not): cumulative
	 * counts per bucket of pd_scrape_duration_bounds, the count and the sum */
	uint64_t duration_buckets[PD_SCRAPE_DURATION_BUCKETS];
	uint64_t duration_count;
	double duration_sum_seconds;
	/* scrapes failed for a limit on the profile, by enum pd_pprof_limit */
	uint64_t refused[PD_PPROF_LIMIT_COUNT];
};

void pd_scrape_manager_stats(struct pd_scrape_manager *m, struct pd_scrape_stats *st);

#endif
