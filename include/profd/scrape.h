/* scrape.h: pulling profiles. The engine runs every scrape loop — one per
 * (target, profile type) — on a single libcurl multi event loop thread: each loop
 * fires at its own offset within its interval (derived from a hash of the target,
 * so that load spreads evenly), fetches one URL with its timeout, body limit and
 * client settings, and hands the body to a pool of worker threads, where the
 * caller's callback decodes and stores it. A slow or failing target never delays
 * another. */
#ifndef PROFD_SCRAPE_H
#define PROFD_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

#include "profd/discovery.h"
#include "profd/util.h"

/* What one loop fetches and how often. Strings are copied by pd_scrape_loop_add. */
struct pd_scrape_spec {
	const char *url;
	int64_t interval_ms;
	int64_t timeout_ms;
	size_t body_limit;  /* bytes after content decoding; 0: no limit */
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
	const char *message;  /* why it failed, for the target's last error */
};

struct pd_scrape_engine;

/* Called on a worker thread for every finished scrape. loop_ctx is the pointer
 * given to pd_scrape_loop_add. Must not call back into the engine's add/remove for
 * the same loop. */
typedef void (*pd_scrape_result_fn)(void *engine_ctx, void *loop_ctx,
				    const struct pd_scrape_result *r);

/* Starts the engine thread and workers (0: 2). *out is owned by the caller. */
int pd_scrape_engine_create(struct pd_scrape_engine **out, unsigned workers,
			    pd_scrape_result_fn fn, void *ctx, struct pd_err *err);
/* Stops the loops, waits for in-flight results to be delivered, and frees. */
void pd_scrape_engine_destroy(struct pd_scrape_engine *e);

/* Adds a loop; it fires first at its offset within the next interval. Returns its
 * id (> 0) in *id. */
int pd_scrape_loop_add(struct pd_scrape_engine *e, const struct pd_scrape_spec *spec,
		       void *loop_ctx, uint64_t *id, struct pd_err *err);
/* Removes a loop; after return no new scrape of it starts, and no callback for it
 * runs any more (an in-flight result is dropped). */
void pd_scrape_loop_remove(struct pd_scrape_engine *e, uint64_t id);

/* The time within [0, interval) at which a loop with this seed fires, as
 * Prometheus spreads targets (exposed for tests). */
int64_t pd_scrape_offset(uint64_t seed, int64_t interval_ms);

#endif
