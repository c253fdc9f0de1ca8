/* api.h: profd's HTTP server: the Prometheus-style query API under /api/v1 (the
 * `{status, data, errorType, error, warnings}` envelope), the push endpoint for
 * short-lived jobs, /metrics in the Prometheus text format, and the lifecycle
 * endpoints /-/healthy, /-/ready, /-/reload and /-/quit. It runs on libmicrohttpd with one
 * thread per connection; handlers only read the store (and append for a push),
 * so it needs no lock of its own around the store or the scrape manager.
 *
 * Every endpoint, parameter and response is described in docs/api.md.
 *
 * What the daemon must guarantee:
 *   - db (and scrape, when given) outlive the server: call pd_api_stop first.
 *   - config_yaml, reload and quit are called from HTTP threads, concurrently with each
 *     other and with the daemon's own SIGHUP handling. The daemon serialises them
 *     with its own lock: config_yaml renders the current configuration while
 *     holding the lock that a reload takes to swap configurations, so a
 *     configuration is never freed while it is rendered. */
#ifndef PROFD_API_H
#define PROFD_API_H

#include <stddef.h>
#include <stdint.h>

#include "profd/ingest.h"
#include "profd/util.h"

struct pd_storage;
struct pd_scrape_manager;
struct pd_discovery_manager;
struct pd_symbolizer;

/* ---- defaults ------------------------------------------------------------- */

#define PD_API_DEFAULT_LISTEN_ADDRESS ":10902"
#define PD_API_DEFAULT_LOOKBACK_MS (5LL * 60 * 1000)          /* query: nearest before */
#define PD_API_DEFAULT_MAX_RANGE_MS (31LL * 24 * 3600 * 1000) /* query_range, merges */
#define PD_API_DEFAULT_MAX_MERGE_PROFILES 1000
#define PD_API_DEFAULT_MAX_MERGE_BYTES ((uint64_t)512 << 20) /* stored bytes read */
#define PD_API_DEFAULT_MAX_PUSH_BODY ((size_t)64 << 20)
/* the folder of uploaded debug files under --storage.tsdb.path (profd run gives
 * <storage.tsdb.path>/debuginfo as debuginfo_dir; symbolization looks there first) */
#define PD_API_DEBUGINFO_SUBDIR "debuginfo"
/* an uploaded debug file, after gunzip (it is written to disk as it arrives) */
#define PD_API_DEFAULT_MAX_DEBUGINFO_SIZE ((size_t)512 << 20)
#define PD_API_DEFAULT_MAX_DEBUGINFO_TOTAL ((uint64_t)10 << 30)
#define PD_API_DEFAULT_MAX_FORM_BODY ((size_t)8 << 20) /* POSTed query parameters */
#define PD_API_DEFAULT_MAX_RESPONSE ((size_t)512 << 20)
/* --web.max-response-memory: the bytes of responses the server holds at once,
 * all connections together, while it builds them and until their clients have
 * read them. The first PD_API_RESPONSE_FREE_EACH bytes of each are not counted,
 * so small answers (/-/healthy, errors, short lists) never wait on big ones. */
#define PD_API_DEFAULT_MAX_RESPONSE_MEMORY ((size_t)1 << 30)
#define PD_API_RESPONSE_FREE_EACH ((size_t)64 << 10)
#define PD_API_DEFAULT_MAX_CONNECTIONS 256
#define PD_API_DEFAULT_MAX_CONNECTIONS_PER_CLIENT 64 /* from one IP address */
#define PD_API_DEFAULT_READ_HEADER_TIMEOUT_MS (10LL * 1000) /* all of a request's headers */
#define PD_API_DEFAULT_READ_TIMEOUT_MS (60LL * 1000)        /* headers and body together */
/* Connections beyond the limits above go to a reserve of this many that serves
 * only /-/healthy, /-/ready and /metrics (docs/api.md, "Connections"). */
#define PD_API_RESERVE_CONNECTIONS 8
#define PD_API_DEFAULT_MAX_CONCURRENT_QUERIES 20 /* as Prometheus's query.max-concurrency */
#define PD_API_DEFAULT_MAX_CONCURRENT_PUSHES 8 /* POST /api/v1/profiles, body included */
/* PromQL under /prometheus, as Prometheus's --query.* flags */
#define PD_API_DEFAULT_QUERY_TIMEOUT_MS (2LL * 60 * 1000)  /* --query.timeout */
#define PD_API_DEFAULT_QUERY_MAX_SAMPLES 50000000          /* --query.max-samples */
#define PD_API_DEFAULT_QUERY_LOOKBACK_MS (5LL * 60 * 1000) /* --query.lookback-delta */
/* report=svg's Graphviz layouts, each in a child process (docs/api.md, "report=dot and
 * report=svg") */
#define PD_API_DEFAULT_CALLGRAPH_TIMEOUT_MS (10LL * 1000)       /* --callgraph.timeout */
#define PD_API_DEFAULT_CALLGRAPH_MAX_MEMORY ((uint64_t)1 << 30) /* --callgraph.max-memory */
#define PD_API_DEFAULT_CALLGRAPH_MAX_CONCURRENCY 2              /* --callgraph.max-concurrency */
#define PD_API_DEFAULT_CALLGRAPH_LAYOUT_EXE "/proc/self/exe"       /* the running profd */

/* ---- the UI hook ------------------------------------------------------------ */

/* What a UI handler answers for one request. */
struct pd_api_ui_response {
	unsigned status;          /* 0: 200 */
	const char *content_type; /* NULL: application/octet-stream */
	const uint8_t *data;      /* the body */
	size_t len;
	int must_free;             /* 1: data was malloc'd and the server frees it */
	const char *cache_control; /* NULL: no Cache-Control header */
	const char *location;      /* for redirects; NULL: none */
};

/* Serves a path the API does not own (anything outside /api/, /-/ and /metrics),
 * e.g. the embedded web UI. method is "GET" or "HEAD"; path is the decoded URL
 * path without the query. Returns 0 after filling *r (which starts zeroed), or
 * PD_ENOTFOUND to let the server answer (an index page for "/", else 404). Called
 * from HTTP threads concurrently. Compressible bodies are gzip-encoded by the
 * server when the client accepts it. */
typedef int (*pd_api_ui_fn)(void *ctx, const char *method, const char *path,
                            struct pd_api_ui_response *r);

/* ---- the server --------------------------------------------------------------- */

struct pd_api_opts {
	/* "host:port", ":port" (every interface, IPv6 and IPv4), "[::1]:port";
	 * port 0 picks a free one (see pd_api_port). NULL: ":10902". */
	const char *listen_address;
	struct pd_storage *db;               /* required; borrowed */
	struct pd_scrape_manager *scrape; /* may be NULL (no targets); borrowed */
	/* may be NULL; borrowed: /metrics shows its counters as prometheus_sd_* */
	struct pd_discovery_manager *discovery;

	/* POST /-/reload calls this; 0 on success, else err says why. NULL: the
	 * endpoint answers 403 "Lifecycle API is not enabled." as Prometheus does
	 * without --web.enable-lifecycle. */
	int (*reload)(void *ctx, struct pd_err *err);
	void *reload_ctx;
	/* POST /-/quit calls this once, after its answer "Requesting termination...
	 * Goodbye!" has been sent; the daemon then shuts down as on SIGTERM (it must
	 * not call pd_api_stop from inside the callback, which runs on an HTTP
	 * thread). Later requests get "Termination already in progress.". NULL: 403
	 * "Lifecycle API is not enabled.", as for reload. */
	void (*quit)(void *ctx);
	void *quit_ctx;
	/* 1: POST /api/v1/profiles answers 404 and stores nothing, before reading
	 * the body (--no-web.enable-push). 0 (the default): pushes are accepted. */
	int push_disabled;
	/* 1 (--auth.multitenancy-enabled): every push and query names its tenant in
	 * X-Scope-OrgID (or the web configuration binds the user to one) and sees
	 * only that tenant's series; without one it is refused with 401 "no org id".
	 * 0: one tenant, PD_TENANT_DEFAULT (docs/security.md#tenants). */
	int multitenancy;
	/* /api/v1/status/config calls this for the rendered configuration
	 * (pd_config_render), a malloc'd NUL-terminated string the server frees;
	 * NULL on failure. The callback itself may be NULL (empty YAML). */
	char *(*config_yaml)(void *ctx);
	void *config_ctx;
	/* /api/v1/status/flags: flag names (without "--") and values; copied. */
	const char *const *flag_names;
	const char *const *flag_values;
	size_t nflags;
	/* 1: the endpoints under /api/v1/admin/tsdb/ delete series, clean tombstones and write
	 * snapshots (--web.enable-admin-api); 0: they answer 503 "admin APIs
	 * disabled" as Prometheus does. */
	int enable_admin_api;
	/* profd_build_info's version label; NULL: the version profd was built as. */
	const char *version;
	/* Paths outside the API; NULL: an index page at "/" and 404 elsewhere. */
	pd_api_ui_fn ui;
	void *ui_ctx;
	/* --web.route-prefix as pd_api_route_prefix returns it ("/profd"); NULL or "/":
	 * none. With a prefix P every route is served under P (P/api/v1/…, P/-/healthy,
	 * P/metrics, the UI at P/), handlers and the UI hook see the path without P,
	 * GET / answers 302 to P, P answers 302 to P/, and paths outside P are 404.
	 * Redirects that handlers and the UI hook give as absolute paths get P in
	 * front. Copied. */
	const char *route_prefix;

	/* Limits; 0 means the default above. */
	int64_t lookback_ms;       /* query at a time: how far back the nearest sample may be */
	int64_t max_range_ms;      /* longest start..end of query_range and merges */
	size_t max_merge_profiles; /* a merge stops there with a warning */
	/* flame graph nodes of a query API response (querier.v1, docs/grafana.md) at
	 * most; a request asking for none or more gets this many. 0: 16384 */
	size_t querier_max_nodes;
	uint64_t max_merge_bytes;  /* stored bytes a merge reads before it stops (warning) */
	size_t max_push_body;      /* bytes of a pushed request body */
	size_t max_decompressed;   /* a pushed profile after gunzip; 0: the store's largest
				    * profile, PD_STORAGE_DEFAULT_MAX_PROFILE (64 MiB) */
	size_t max_form_body;      /* bytes of a POSTed form of query parameters */
	size_t max_response;       /* bytes of one response before compression */
	/* bytes of responses held at once (built, or sent but not yet read by slow
	 * clients), all connections: past it a response is refused with 503 and
	 * Retry-After; given back as each is read, or its connection closes or times out */
	size_t max_response_memory;
	unsigned max_connections;            /* open at once, all clients */
	unsigned max_connections_per_client; /* open at once from one IP address */
	int64_t read_header_timeout_ms; /* accept (or the previous response) to end of headers */
	int64_t read_timeout_ms;        /* accept (or the previous response) to end of body */
	unsigned max_concurrent_queries; /* query and query_range (both APIs) running at once */
	/* pushes at once, from their first byte to their answer; more get 429 with
	 * Retry-After */
	unsigned max_concurrent_pushes;
	/* what a pushed profile may be to be stored: gzip ratio, decoded memory,
	 * samples, labels per sample (pprof.h's PD_PPROF_STORE_* when 0) */
	unsigned push_max_ratio;
	size_t push_max_memory;
	size_t push_max_samples;
	size_t push_max_sample_labels;
	/* what a push to /ingest, push.v1.PusherService/Push or /v1development/profiles
	 * may turn into (stack depth, labels, name lengths, profiles, JSON depth; zero
	 * fields: pd_ingest's defaults). Its decompressed size, gzip ratio, samples and
	 * decode limits come from the fields above. */
	struct pd_ingest_limits ingest;
	/* PromQL under /prometheus: the longest a query may run (a request's `timeout`
	 * can only shorten it), the samples it may hold, and how far back an instant
	 * selector looks for a sample. */
	int64_t query_timeout_ms;
	size_t query_max_samples;
	int64_t query_lookback_ms;
	/* report=svg: each Graphviz layout runs in a child process that is killed after
	 * callgraph_timeout_ms of wall-clock time (its CPU time is limited to as many
	 * seconds, rounded up) and may map callgraph_max_memory bytes more than it had
	 * when it started; at most callgraph_max_concurrency run at once, more answer
	 * 503. The child is callgraph_layout_exe (a profd binary, run as `profd
	 * __callgraph-layout`; copied by pd_api_start) executed afresh. */
	int64_t callgraph_timeout_ms;
	uint64_t callgraph_max_memory;
	unsigned callgraph_max_concurrency;
	const char *callgraph_layout_exe;

	/* --web.config.file (exporter-toolkit's format): TLS, basic auth, response
	 * headers, a rate limit; read again for every connection and request. NULL or
	 * "": none. A file that does not apply is a start error naming the field. */
	const char *web_config_file;

	/* PUT /api/v1/debuginfo/<build-id> stores uploaded debug files here, as
	 * <debuginfo_dir>/.build-id/<xx>/<rest>.debug (docs/format/debuginfo.md); GET
	 * tells whether one is there, DELETE removes it (with enable_admin_api).
	 * Uploads are refused like pushes when push_disabled, and count against
	 * max_concurrent_pushes. NULL: the endpoint answers 404. Copied. */
	const char *debuginfo_dir;
	/* the largest debug file, after gunzip; 0: PD_API_DEFAULT_MAX_DEBUGINFO_SIZE */
	size_t max_debuginfo_size;
	/* the bytes all stored debug files may take together; an upload that would
	 * pass it is refused (413) and nothing stored is removed. 0:
	 * PD_API_DEFAULT_MAX_DEBUGINFO_TOTAL */
	uint64_t max_debuginfo_total;
	/* Queries symbolize their result (pkg/symbolize, docs/symbolization.md) with
	 * this symbolizer, borrowed; NULL: never. A query waits for debug files at
	 * most symbolize_timeout_ms (0: the default, 2 s; negative: not at all) and
	 * then answers, unsymbolized for the rest, with X-Profd-Symbolized: partial. */
	struct pd_symbolizer *symbolizer;
	int64_t symbolize_timeout_ms;
};

/* ---- profile totals as Prometheus metrics (docs/api.md, "/prometheus") ---------- */

/* Appends the metric name under which /prometheus serves the totals of one sample
 * type of a profile type: `<profile_type>_<sample_type>_<unit>`, parts that are
 * empty left out, every byte outside [a-zA-Z0-9_] replaced by `_`, and
 * `_per_second` after it when per_second (the total divided by the profile's
 * duration in seconds): ("heap", "inuse_space", "bytes") gives
 * heap_inuse_space_bytes, ("profile", "cpu", "nanoseconds", 1)
 * profile_cpu_nanoseconds_per_second. PD_ETOOBIG or PD_ENOMEM when b cannot
 * grow. */
int pd_api_prom_metric_name(struct pd_buf *b, const char *profile_type, const char *sample_type,
                            const char *unit, int per_second);

/* The store seen as PromQL series: fills *src with a source (promql.h) whose
 * select gives, for every stored series (with a __name__) and each of its sample
 * types, one series named as pd_api_prom_metric_name says with the stored
 * series' other labels, whose samples are the totals of its profiles at their
 * timestamps; for profiles with a duration, also the `_per_second` series.
 * Matchers on __name__ choose among these names; the others go to the store.
 * db is borrowed and must outlive the source. */
struct pd_promql_source;
void pd_api_prom_source(struct pd_storage *db, struct pd_promql_source *src);

/* ---- running under a path (docs/configuration.md, docs/operating.md) ---------- */

/* --web.external-url: value, or when NULL or "" http://<hostname>:<port>/ with
 * the port of listen_address (NULL: the default address), checked (http or https,
 * a host, no user information, query or fragment, a path profd can serve) and
 * without trailing slashes, as Prometheus keeps it ("http://host/profd"). *out is
 * malloc'd, the caller's. Errors name the flag and the value. */
int pd_api_external_url(const char *value, const char *listen_address, char **out,
                        struct pd_err *err);

/* --web.route-prefix: value, or when NULL or "" the path of external_url (as
 * pd_api_external_url returns it), normalised as Prometheus does: one leading
 * slash, no trailing one, "/" when empty ("profd/" gives "/profd"). Refuses "."
 * and ".." segments and characters that would need escaping. *out is malloc'd,
 * the caller's. Errors name the flag the prefix came from. */
int pd_api_route_prefix(const char *value, const char *external_url, char **out,
                        struct pd_err *err);

/* `profd __callgraph-layout MAX_MEMORY`, the program a report=svg layout runs as
 * (argv[0] is the command): sets its address-space limit to its own size plus
 * MAX_MEMORY bytes and writes its peak resident set in bytes (getrusage's, which
 * counts what it was exec'd from), as decimal text, to fd 3
 * when that is open; then reads DOT text (at most 8 MiB) from stdin, lays it out
 * with Graphviz and writes the SVG to stdout, Graphviz's messages to stderr. Ends
 * the process (_exit): 0 drawn, 2 not (the messages say why), 3 an I/O error. */
void pd_api_callgraph_layout_main(int argc, char **argv);

/* Fills o with zeros and the defaults (the daemon then sets db and the rest). */
void pd_api_opts_init(struct pd_api_opts *o);

struct pd_api_server;

/* Binds the listen address and starts serving. Copies what it needs of opts
 * (strings and flags); db, scrape and the callbacks' contexts are borrowed.
 * *out is owned by the caller (pd_api_stop). Errors name the address, e.g.
 * `listen tcp :10902: bind: Address already in use`. */
int pd_api_start(struct pd_api_server **out, const struct pd_api_opts *opts, struct pd_err *err);

/* The TCP port the server listens on (the chosen one when the address said 0). */
unsigned pd_api_port(const struct pd_api_server *s);

/* Sets what /-/ready answers: 1 (default) 200 "profd is Ready.", 0 503 "Service
 * Unavailable". The daemon may clear it while shutting down. */
void pd_api_set_ready(struct pd_api_server *s, int ready);

/* Records the outcome of a configuration reload the daemon did on its own
 * (SIGHUP) for profd_config_last_reload_successful and friends; reloads through
 * /-/reload are recorded by the server. NULL does nothing. */
void pd_api_record_reload(struct pd_api_server *s, int ok);

/* Stops accepting, waits for requests in flight to finish, and frees the server;
 * NULL does nothing. */
void pd_api_stop(struct pd_api_server *s);

#endif
