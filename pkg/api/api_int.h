/* api_int.h: what the files of the HTTP API share: the server, one request and
 * its response, the routes' handler ids for metrics, and the helpers that write
 * JSON with a sticky error, parse parameters and report errors in Prometheus's
 * envelope. */
#ifndef PROFD_API_INT_H
#define PROFD_API_INT_H

#include <pthread.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "profd/api.h"
#include "profd/config.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/storage.h"
#include "profd/util.h"

struct MHD_Daemon;
struct MHD_Connection;

/* Handlers as /metrics names them (Prometheus's `handler` label). */
enum api_handler {
	H_QUERY_RANGE,
	H_QUERY,
	H_SERIES,
	H_LABELS,
	H_LABEL_VALUES,
	H_TARGETS,
	H_STATUS_CONFIG,
	H_STATUS_FLAGS,
	H_STATUS_TSDB,
	H_STATUS_BUILDINFO,
	H_PROFILES,
	H_ADMIN_DELETE_SERIES,
	H_ADMIN_CLEAN_TOMBSTONES,
	H_ADMIN_SNAPSHOT,
	H_HEALTHY,
	H_READY,
	H_RELOAD,
	H_QUIT,
	H_METRICS,
	H_DEBUG_PPROF,
	H_PROM_QUERY_RANGE,
	H_PROM_QUERY,
	H_PROM_SERIES,
	H_PROM_LABELS,
	H_PROM_LABEL_VALUES,
	H_PROM_METADATA,
	H_PROM_BUILDINFO,
	H_INGEST,
	H_PUSH_V1,
	H_OTLP,
	H_DEBUGINFO,
	H_STATUS_SYMBOLIZER,
	H_QUERIER,
	H_UI,
	H_OTHER,
	API_NHANDLERS
};

extern const char *const api_handler_names[API_NHANDLERS];

/* Status codes counted per handler; others count as "other". */
#define API_NCODES 16
extern const unsigned api_codes[API_NCODES];
/* Request duration histogram buckets (seconds). */
#define API_NBUCKETS 13
extern const double api_buckets[API_NBUCKETS];

/* Why a push was refused for a limit (profd_push_refused_total's reason): the
 * pprof decoder's limits (enum pd_pprof_limit, by the same number), then the
 * server's own. */
enum api_push_refusal {
	API_PUSH_CONCURRENCY = PD_PPROF_LIMIT_COUNT,
	API_PUSH_BODY_SIZE,
	API_PUSH_REFUSALS
};
/* The reason label of an enum api_push_refusal. */
const char *api_push_refusal_name(int why);
/* Counts a push refused for why. */
void api_push_refused(struct pd_api_server *s, int why);

/* The push endpoints of other profilers (ingest.c) and why a push to one was
 * refused (profd_ingest_refused_total's reason): the server's reasons, then
 * API_INGEST_LIMIT0 + an enum pd_ingest_limit. */
enum { API_INGEST_EP_INGEST, API_INGEST_EP_PUSH, API_INGEST_EP_OTLP, API_INGEST_NENDPOINTS };
#define API_INGEST_NFORMATS 10
enum api_ingest_reason {
	API_INGEST_MALFORMED = 1,
	API_INGEST_UNSUPPORTED,
	API_INGEST_BODY_SIZE,
	API_INGEST_CONCURRENCY,
	API_INGEST_STORE,
	API_INGEST_DISABLED,
	API_INGEST_PARTIAL,
	API_INGEST_LIMIT0,
	API_INGEST_NREASONS = API_INGEST_LIMIT0 + 16
};

struct api_counters {
	uint64_t requests[API_NHANDLERS][API_NCODES + 1];
	uint64_t dur_bucket[API_NHANDLERS][API_NBUCKETS];
	uint64_t dur_count[API_NHANDLERS];
	double dur_sum[API_NHANDLERS];
	uint64_t queries[3];          /* by mode: single, merge, diff */
	uint64_t profiles_read;       /* profiles opened by queries */
	uint64_t profile_bytes_read;  /* their stored bytes */
	uint64_t merges_truncated;    /* merges cut by max_profiles or max bytes */
	uint64_t pushed, push_failed; /* POST /api/v1/profiles */
	uint64_t pushed_bytes;
	/* pushes refused for a limit, by enum api_push_refusal */
	uint64_t push_refused[API_PUSH_REFUSALS];
	/* ingest.c's endpoints, by API_INGEST_EP_* and format */
	uint64_t ingest_profiles[API_INGEST_NENDPOINTS][API_INGEST_NFORMATS];
	uint64_t ingest_bytes[API_INGEST_NENDPOINTS][API_INGEST_NFORMATS];
	uint64_t ingest_refused[API_INGEST_NENDPOINTS][API_INGEST_NFORMATS][API_INGEST_NREASONS];
	uint64_t reloads, reload_failures;
	uint64_t conn_reserve;   /* connections accepted into the reserve */
	uint64_t conn_closed[4]; /* by enum api_close_reason */
	uint64_t tls_handshake_errors; /* tls.c */
	uint64_t bcrypt_checks;        /* webcfg.c: cache misses */
	uint64_t web_config_failures;  /* webcfg.c: the file could not be applied */
	int last_reload_ok;
	int64_t last_reload_ms;
};

struct api_metrics {
	pthread_mutex_t mu;
	struct api_counters c;
};

/* The longest request path served (after decoding); longer ones are a 400. */
#define PD_API_MAX_PATH 4096

/* Why the server closed a connection itself (profd_http_connections_closed_total). */
enum api_close_reason { CLOSE_HEADER_TIMEOUT, CLOSE_READ_TIMEOUT, CLOSE_EVICTED, CLOSE_REFUSED };

/* Where a connection is: the deadline that applies to it follows. */
enum api_conn_phase { PHASE_HEADERS, PHASE_BODY, PHASE_HANDLING };

/* One accepted connection, from accept to MHD's close notification. dupfd is
 * profd's own descriptor of the socket: shutting it down cuts the connection off
 * without racing MHD's close of fd (the socket lives until both are closed). */
struct api_conn {
	int in_use;
	int reserve; /* served by the reserve daemon */
	int fd, dupfd;
	int bound; /* MHD has started it (api_on_connection) */
	int killed;
	enum api_conn_phase phase;
	int64_t phase_start_ns;
	int64_t deadline_ns; /* 0: none */
	uint64_t seq;        /* accept order, for evicting the oldest */
	struct sockaddr_storage addr;
	unsigned addrlen;
};

/* ---- the web configuration (webcfg.c) and TLS (tls.c) --------------------- */

struct api_web;      /* --web.config.file, re-read for every request and connection */
struct api_web_snap; /* one reading of it, refcounted */
struct pd_web_config;
struct ssl_ctx_st;

/* Reads and checks the file (and, with TLS, the files it names) as at start-up;
 * errors name the file and field. *out is the caller's (api_web_close). */
int api_web_open(const char *path, struct api_metrics *m, struct api_web **out,
                 struct pd_err *err);
void api_web_close(struct api_web *w);
/* 1 when TLS was on at start: then every connection is TLS. */
int api_web_tls(const struct api_web *w);
/* The configuration now, read again; for_connection also reads the TLS files and
 * builds the TLS context. A reference the caller drops with api_web_snap_put;
 * NULL when the file cannot be read or applied (logged once per error). */
struct api_web_snap *api_web_get(struct api_web *w, int for_connection);
void api_web_snap_put(struct api_web_snap *s); /* NULL does nothing */
const struct pd_web_config *api_web_snap_config(const struct api_web_snap *s);
struct ssl_ctx_st *api_web_snap_ctx(const struct api_web_snap *s);
/* 1 when the rate limit lets one more request through (always without one). */
int api_web_rate_ok(struct api_web *w);
/* 1 when the Authorization header value holds a user and password of s (or s
 * has no users); bcrypt checks are cached. */
int api_web_authorized(struct api_web *w, const struct api_web_snap *s, const char *authorization);
/* The user of s that the Authorization header value names (borrowed from s), or
 * NULL; call only once api_web_authorized said yes. */
const struct pd_web_user *api_web_user(const struct api_web_snap *s, const char *authorization);

/* Reads "Basic base64(user:password)" (basic_auth.c) into buf (cap bytes, which
 * holds both, NUL-terminated); *user and *pass point into it. -1 when the header is
 * missing, of another scheme or malformed (as Go's Request.BasicAuth refuses it),
 * or holds a NUL. */
int api_basic_auth_parse(const char *header, char *buf, size_t cap, const char **user,
                         const char **pass);

/* The threads that carry TLS connections (one each), waited for at stop. */
struct api_tls_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned running;
	struct api_metrics *m; /* counts handshake errors */
};
void api_tls_pool_init(struct api_tls_pool *pool, struct api_metrics *m);
/* Waits until every TLS thread ended (their plain ends must be closed first). */
void api_tls_pool_wait(struct api_tls_pool *pool);
/* Takes cfd, the accepted client socket: a thread makes the TLS handshake with the
 * configuration read now (deadline: CLOCK_MONOTONIC ns), then carries bytes between
 * it and *plain_fd, the socket libmicrohttpd is to serve. -1 (cfd untouched) if
 * none could be set up. */
int api_tls_start(struct api_tls_pool *pool, struct api_web *web, int cfd,
                  const struct sockaddr_storage *addr, int64_t deadline_ns, int *plain_fd);

struct pd_api_server {
	struct MHD_Daemon *mhd;
	struct MHD_Daemon *mhd_reserve; /* /-/healthy, /-/ready, /metrics only */
	int listen_fd;
	int wake_fd;        /* eventfd: wakes the accept thread to stop */
	pthread_t acceptor; /* accepts, picks the pool, enforces the timeouts */
	int acceptor_started;
	pthread_mutex_t cmu; /* guards conns */
	struct api_conn *conns;
	size_t nconns; /* max_connections + PD_API_RESERVE_CONNECTIONS */
	uint64_t conn_seq;
	struct pd_api_opts o; /* limits resolved; strings below are copies */
	char *listen_address;
	char *version;
	char *cg_exe;      /* callgraph_layout_exe */
	char *prefix;      /* the route prefix without its trailing slash; "" for none */
	size_t prefix_len; /* 0: no prefix */
	char **flag_names, **flag_values;
	size_t nflags;
	unsigned port;
	int ready; /* read and written with __atomic builtins */
	int quitting; /* /-/quit was called (atomic): later calls only say so */
	int stopping; /* set (atomically) by pd_api_stop: long requests end early */
	int64_t started_ms;

	/* the query gate: at most max_concurrent_queries at once */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	unsigned qrunning;
	/* pushes in progress (body included), at most max_concurrent_pushes; under qmu */
	unsigned pushing;

	/* report=svg layouts (callgraph.c), atomics: running now, and finished by result */
	unsigned cg_running;
	uint64_t cg_results[6];

	struct api_metrics m;

	/* responses' bytes held for clients (max_response_memory), and how many
	 * were refused for it (atomic) */
	struct pd_buf_budget resp_budget;
	uint64_t resp_refused;

	struct api_web *web; /* --web.config.file; NULL: none */
	struct api_tls_pool tls;

	char *debuginfo_dir; /* copy of o.debuginfo_dir; NULL: none */
	/* debug file uploads by result (enum api_dbg_result) and bytes stored (atomics) */
	uint64_t dbg_uploads[7]; /* by enum api_dbg_result */
	uint64_t dbg_bytes;
};

struct api_param {
	char *name;
	char *value;
};

/* Where a request's path lies against the route prefix P. */
enum api_outside {
	OUT_INSIDE = 0, /* under P (or no prefix): routed */
	OUT_ROOT,       /* "/": redirected to P */
	OUT_PREFIX,     /* P itself: redirected to P/ */
	OUT_ELSEWHERE,  /* 404 */
};

/* One request, from its headers to the end of its response. */
struct api_req {
	struct pd_api_server *srv;
	struct api_conn *cn; /* the connection's slot (NULL if unknown) */
	int raw_nul;         /* the raw request target held %00 or a NUL byte */
	const char *raw_uri; /* MHD's, seen by api_on_uri: compared, read only before decoding ends */
	size_t raw_len;
	struct MHD_Connection *conn;
	const char *method; /* borrowed from MHD */
	char *path;         /* without the route prefix */
	char *raw_query;    /* the raw query string (after '?'), copied by api_on_uri; may be NULL */
	int outside;        /* enum api_outside: where the path lies against the route prefix */
	int route;   /* index into the route table, -1: none */
	int handler; /* enum api_handler */
	int is_post, is_head;
	size_t body_max; /* 0: a body is read and dropped */
	struct pd_buf body;
	int body_too_big;
	int push_slot; /* holds one of the max_concurrent_pushes slots until completed */
	int quit_after; /* call opts.quit once the response is sent (/-/quit) */
	struct api_dbg_upload *dbg; /* PUT /api/v1/debuginfo/: the upload being written */
	struct api_param *params;
	size_t nparams, cparams;
	int64_t t0_ns;
	int64_t now_ms;
	struct api_web_snap *web;       /* the web configuration for this request; NULL: none */
	const struct pd_web_user *user; /* its basic-auth user (in web); NULL: none */
	/* tenant.c: scoped with --auth.multitenancy-enabled on a tenant's endpoint;
	 * tenant_value is the __tenant__ label's value ("" for the default tenant) */
	int scoped;
	const char *tenant_value;
	char tenant[PD_TENANT_MAX_LEN + 1];
};

/* A response being built. JSON responses hold the success envelope's opening
 * `{"status":"success","data":` in body; the server closes or replaces it. */
struct api_resp {
	unsigned status;
	int json;
	const char *content_type;
	struct pd_buf body;
	int berr; /* sticky: the first failed append (PD_ETOOBIG, PD_ENOMEM) */
	int error_set;
	const char *error_type;
	char error[PD_ERR_MSG_MAX + 256];
	char **warnings;
	size_t nwarnings;
	char *disposition; /* Content-Disposition, malloc'd */
	const char *allow; /* for 405 */
	const char *accept_post; /* Accept-Post, for 415 */
	const char *location;     /* a path inside the server (the route prefix goes in front) */
	const char *location_abs; /* a Location sent as it is (wins over location) */
	char *location_owned;     /* malloc'd storage of location_abs, freed with the response */
	const char *cache_control;
	const char *csp; /* Content-Security-Policy, sent with X-Content-Type-Options: nosniff */
	int no_gzip;    /* the body is already compressed */
	int close_conn; /* Connection: close (reserve connections, early rejects) */
	int retry_after; /* seconds for a Retry-After header (429, 503); 0: none */
	/* a borrowed body instead of body (UI assets) */
	const uint8_t *raw;
	size_t raw_len;
	int raw_free;
	const char *symbolized; /* X-Profd-Symbolized: "full", "partial"; NULL: none */
	const char *aggregation; /* X-Profd-Aggregation: "sum", "avg", "mixed"; NULL: none */
};

/* ---- JSON output (json.c): every writer is a no-op once w->berr is set ---- */

void jput(struct api_resp *w, const char *s);
void jputn(struct api_resp *w, const char *s, size_t n);
void jprintf(struct api_resp *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string literal via pd_buf_json_string; bytes that are not UTF-8 become
 * U+FFFD first, as Go's encoding/json does. */
void jstr(struct api_resp *w, const char *s);
/* The same for len bytes that may hold NULs (a profile's strings). */
void jstrn(struct api_resp *w, const char *s, size_t len);
void ji64(struct api_resp *w, int64_t v);
void ju64(struct api_resp *w, uint64_t v);
/* A finite double (NaN and infinities as 0), shortest of %.6g. */
void jdbl(struct api_resp *w, double v);
/* Label sets as JSON objects: {"__name__":"heap","job":"api"}. */
void jlabels_tsdb(struct api_resp *w, const struct pd_storage_label *ls, size_t n);
void jlabels(struct api_resp *w, const struct pd_labels *ls);

/* ---- errors and warnings (json.c) ------------------------------------------ */

/* Sets the response to an error (the first one wins). */
void api_error(struct api_resp *w, unsigned status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 400 bad_data: `invalid parameter "name": ...`, as Prometheus words it. */
void api_bad_param(struct api_resp *w, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 500 internal: logs err's message (which may hold paths) and answers only
 * `what: <error class>`; for a read of ClickHouse, ClickHouse's reason, with 503
 * unavailable when it did not answer (docs/api.md). */
void api_internal(struct api_resp *w, const char *what, int rc, const struct pd_err *err);
/* ClickHouse's reason in err: a pointer into err->msg (borrowed) past pkg/tsdb's
 * prefix, *len its length up to the statement; NULL when err is not ClickHouse's. */
const char *api_ch_reason(const struct pd_err *err, int *len);

/* ---- tenants (tenant.c) ------------------------------------------------------ */

/* Reads an X-Scope-OrgID value as dskit's tenant.TenantID: ids split at '|',
 * each without its ':' metadata, checked (pd_config_tenant_check), all the same
 * one, copied into out (PD_TENANT_MAX_LEN + 1 bytes). 0, or PD_EINVAL with
 * dskit's message ("no org id", "multiple org IDs present", ...). */
int api_tenant_parse(const char *org_id, char *out, struct pd_err *err);
/* Sets r's tenant from org_id (the header, may be NULL) and r->user's binding;
 * nothing without multitenancy or on the server's own endpoints. 0, or the
 * status to refuse r with (401 no or bad id, 403 a tenant the user is not
 * bound to), msg saying why. */
unsigned api_tenant_begin(struct api_req *r, const char *org_id, char *msg, size_t msgsize);
/* The matcher of r's tenant in *out (borrowing r): 1, or 0 when r is not scoped. */
int api_tenant_matcher(const struct api_req *r, struct pd_storage_matcher *out);
/* m[0..nm) and r's tenant matcher in a malloc'd *out (the caller frees it). */
int api_tenant_scope(const struct api_req *r, const struct pd_storage_matcher *m, size_t nm,
                     struct pd_storage_matcher **out, size_t *nout);
struct api_sel;
/* Appends r's tenant matcher to s (after api_sel_parse). 0 or PD_ENOMEM. */
int api_sel_scope(const struct api_req *r, struct api_sel *s);
/* Adds r's __tenant__ label to the n sorted labels of tl (which has room for one
 * more), in order; returns the new count. */
size_t api_tenant_label_add(const struct api_req *r, struct pd_storage_label *tl, size_t n);
/* 1 for the reserved tenant label: never shown, never matched by clients. */
int api_tenant_hidden(const char *name);
/* A tenant refusal in Pyroscope's form, {"code":"unauthenticated","message":…}. */
void api_tenant_error(struct api_resp *w, unsigned status, const char *msg);

/* ---- file reports (export.c) ---------------------------------------------- */

/* Answers p's folded stacks (speedscope 0) of sample type idx, or p as a
 * speedscope file (every sample type, idx the active one), as a download named
 * filename. Errors go to the envelope: a profile speedscope cannot show (negative
 * values) is a 400 naming `report`, the response limit a 422. p is only read. */
void api_report_export(struct api_resp *w, int speedscope, const struct pd_pprof_profile *p,
                       int idx, const char *filename);
void api_warn(struct api_resp *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- parameters (params.c) --------------------------------------------------- */

/* The first value of a query or form parameter, or NULL. */
const char *api_param(const struct api_req *r, const char *name);
/* Every value of a repeated parameter (match[]); *out is malloc'd (free it), the
 * strings are borrowed from r. */
int api_params(const struct api_req *r, const char *name, const char ***out, size_t *n);
/* Adds name=value (copied). */
int api_param_add(struct api_req *r, const char *name, size_t nlen, const char *value, size_t vlen);
/* Parses an application/x-www-form-urlencoded string into r's parameters:
 * PD_EINVAL when a name or value decodes to a NUL byte, PD_ENOMEM. */
int api_params_parse_form(struct api_req *r, const char *s, size_t len);

/* Parameter parsers: 0 on success, -1 after setting a 400 naming the parameter.
 * A missing or empty parameter gives def. */
int api_time_param(const struct api_req *r, struct api_resp *w, const char *name, int64_t def,
                   int64_t *out);
/* Durations as Prometheus's API takes them: float seconds or `5m`, `1h30m`. */
int api_duration_param(const struct api_req *r, struct api_resp *w, const char *name, int64_t def,
                       int64_t *out);
int api_uint_param(const struct api_req *r, struct api_resp *w, const char *name, uint64_t def,
                   uint64_t *out);
int api_int_param(const struct api_req *r, struct api_resp *w, const char *name, int64_t def,
                  int64_t *out);
int api_double_param(const struct api_req *r, struct api_resp *w, const char *name, double def,
                     double lo, double hi, double *out);

/* A parsed selector with its tsdb matchers. */
struct api_sel {
	struct pd_labels_selector *sel;
	struct pd_storage_matcher *m;
	size_t nm;
};
/* Parses text as a series selector for parameter name. */
int api_sel_parse(struct api_resp *w, const char *name, const char *text, struct api_sel *s);
void api_sel_fini(struct api_sel *s);

/* group_by of /api/v1/query (groupby.c): the series labels a merge is split by. */
#define API_GROUP_BY_MAX_LABELS 16
struct api_group_by {
	const char *names[API_GROUP_BY_MAX_LABELS]; /* pointing into buf */
	size_t n;                                   /* 0: no grouping */
	char *buf;
};
/* Reads every value of parameter param (each a comma-separated list of label
 * names, spaces around names allowed) into gb (empty values give no names);
 * -1 after a 400 naming param for an invalid, empty or repeated name or more
 * than API_GROUP_BY_MAX_LABELS. gb owns its strings: api_group_by_fini. */
int api_group_by_parse(const struct api_req *r, struct api_resp *w, const char *param,
                       struct api_group_by *gb);
void api_group_by_fini(struct api_group_by *gb);
/* The value of label name of s, "" when s has none; borrowed from s. */
const char *api_series_label(const struct pd_storage_series *s, const char *name);
/* Compares a and b by their values of gb's names in order: 0 for one group. */
int api_group_cmp(const struct api_group_by *gb, const struct pd_storage_series *a,
                  const struct pd_storage_series *b);
/* Fills order[0..res->nseries) with the series indexes sorted by api_group_cmp,
 * label order within a group. 0 or PD_ENOMEM. */
int api_group_sort(const struct api_group_by *gb, const struct pd_storage_result *res, size_t *order);

/* start/end with query_range's defaults (end: now, start: end - 1h) and checks:
 * end not before start, end - start within max_range_ms. prefix is "" or "a.". */
int api_range_params(const struct api_req *r, struct api_resp *w, const char *prefix,
                     int64_t *start, int64_t *end);

/* Splits a multipart/form-data body (r->body) with Content-Type ct: *file (into
 * r->body) is the first part with a filename or named file or profile; parts
 * named labels and time are added to r's parameters. 0, or -1 when the body is
 * not such a form or has no profile (multipart.c). */
int api_multipart(struct api_req *r, const char *ct, const uint8_t **file, size_t *flen);

/* ---- handlers ------------------------------------------------------------------ */

void api_query_range(struct api_req *r, struct api_resp *w);
void api_query(struct api_req *r, struct api_resp *w);
void api_series(struct api_req *r, struct api_resp *w);
void api_labels(struct api_req *r, struct api_resp *w);
void api_label_values(struct api_req *r, struct api_resp *w);
void api_targets(struct api_req *r, struct api_resp *w);
void api_status_config(struct api_req *r, struct api_resp *w);
void api_status_flags(struct api_req *r, struct api_resp *w);
void api_status_tsdb(struct api_req *r, struct api_resp *w);
/* ---- symbolization (symbolizer.c) ---- */
struct pd_pprof_profile;
struct pd_symbolize_result;
/* GET /api/v1/status/symbolizer: the sources and the counters. */
void api_status_symbolizer(struct api_req *r, struct api_resp *w);
/* profd_symbolizer_* for /metrics (nothing without a symbolizer). */
void api_symbolizer_metrics(struct pd_api_server *s, struct api_resp *w);
/* The symbolize parameter's report names (pprof's -symbolize words: true, false
 * or none, demangle=default|templates|full|none); 0, or -1 after an error
 * response naming the word. */
int api_report_names(struct api_req *r, struct api_resp *w, enum pd_pprof_names *out);
/* Symbolizes p for a query, unless the server has no symbolizer or the request
 * says symbolize=false (or none): *out is the new profile (the caller's) or NULL, res what
 * was done; sets X-Profd-Symbolized and a warning when partial. *deadline_us (0:
 * set by the first call from --symbolizer.timeout) bounds every call of one
 * request together. 0, or -1 after an error response. */
int api_symbolize(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                  struct pd_pprof_profile **out, struct pd_symbolize_result *res,
                  int64_t *deadline_us);
/* The same for an answer that is not the query API's JSON (Pyroscope's query API):
 * no symbolize parameter is read and a failure is logged, not answered (-1, *out
 * NULL); X-Profd-Symbolized is set as above. */
int api_symbolize_merge(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                        struct pd_pprof_profile **out, struct pd_symbolize_result *res,
                        int64_t *deadline_us);
void api_status_buildinfo(struct api_req *r, struct api_resp *w);
void api_push(struct api_req *r, struct api_resp *w);
/* ingest.c: Pyroscope's /ingest, push.v1.PusherService/Push (Connect) and OTLP
 * profiles over HTTP. */
void api_ingest(struct api_req *r, struct api_resp *w);
void api_push_v1(struct api_req *r, struct api_resp *w);
void api_otlp(struct api_req *r, struct api_resp *w);
/* Pyroscope's query API, querier.v1.QuerierService (querier.c). */
void api_querier(struct api_req *r, struct api_resp *w);
/* Its HTTP render API, /pyroscope/render and /pyroscope/render-diff (querier_render.c). */
void api_render(struct api_req *r, struct api_resp *w);
/* A time of the render API (from=, until=; attime.c): Unix seconds, ms, us or ns
 * by the number of digits, YYYYMMDD, now, now-<offset>. 0 with *out_ms; -1 with
 * a message in msg. */
int api_attime_parse(const char *s, int64_t now_ms, int64_t *out_ms, char *msg, size_t msz);
/* The API_INGEST_EP_* of a handler, or -1 for the others. */
int api_ingest_endpoint(int handler);
/* An answer to a push refused before its handler ran (body size, busy, disabled),
 * in the endpoint's own error form. */
void api_ingest_reject(struct api_req *r, struct api_resp *w, unsigned status, const char *msg);
/* Counts such a refusal: why is API_PUSH_CONCURRENCY, API_PUSH_BODY_SIZE or 0
 * (disabled). */
void api_ingest_refused(struct pd_api_server *s, int handler, int why);
/* The profd_ingest_* metric families. */
void api_ingest_metrics(struct pd_api_server *s, struct api_resp *w);

/* ---- debug file uploads (debuginfo.c) ---- */

/* What became of an upload, as profd_debuginfo_uploads_total{result} counts it. */
enum api_dbg_result {
	API_DBG_STORED,     /* a new file */
	API_DBG_REPLACED,   /* a file for the same build id replaced */
	API_DBG_INVALID,    /* not ELF, no build id, another build id, bad gzip */
	API_DBG_TOO_LARGE,  /* over --web.max-debuginfo-size */
	API_DBG_REFUSED,    /* uploads disabled, too many at once */
	API_DBG_FAILED,     /* writing it failed */
	API_DBG_OVER_QUOTA, /* the stored files would pass --web.max-debuginfo-total-size */
	API_DBG_NRESULTS
};
struct api_dbg_upload;
/* The path after /api/v1/debuginfo/ as a build id; 1 when path is below it. */
int api_debuginfo_path(const char *path);
/* Before the body of a PUT: checks the build id in the path and opens the temp
 * file the body is written into (r->dbg). 0, or the HTTP status to refuse the
 * request with, and msg says why. */
unsigned api_debuginfo_begin(struct api_req *r, char *msg, size_t msgsize);
/* Writes n bytes of the body (gunzipped if it is gzip); past the limit sets
 * r->body_too_big and drops the rest. */
void api_debuginfo_write(struct api_req *r, const char *data, size_t n);
/* Drops r->dbg (the temp file is removed unless it was stored). */
void api_debuginfo_free(struct api_req *r);
void api_debuginfo_count(struct pd_api_server *s, int result, uint64_t bytes);
void api_debuginfo(struct api_req *r, struct api_resp *w);
void api_debuginfo_metrics(struct pd_api_server *s, struct api_resp *w);
/* /api/v1/admin/tsdb/{delete_series,clean_tombstones,snapshot} (admin.c). */
void api_admin_delete_series(struct api_req *r, struct api_resp *w);
void api_admin_clean_tombstones(struct api_req *r, struct api_resp *w);
void api_admin_snapshot(struct api_req *r, struct api_resp *w);
void api_metrics(struct api_req *r, struct api_resp *w);
/* /debug/pprof and everything under it (debug.c). */
void api_debug_pprof(struct api_req *r, struct api_resp *w);

/* The Prometheus-compatible API under /prometheus (prometheus.c): PromQL over
 * the totals of stored profiles (promsource.c). */
void api_prom_query(struct api_req *r, struct api_resp *w);
void api_prom_query_range(struct api_req *r, struct api_resp *w);
void api_prom_series(struct api_req *r, struct api_resp *w);
void api_prom_labels(struct api_req *r, struct api_resp *w);
void api_prom_label_values(struct api_req *r, struct api_resp *w);
void api_prom_metadata(struct api_req *r, struct api_resp *w);
void api_prom_buildinfo(struct api_req *r, struct api_resp *w);
struct pd_promql_source;
/* The store as PromQL's source for r: only r's tenant's series (promsource.c). */
void api_prom_source(const struct api_req *r, struct pd_promql_source *src);

/* Records a finished request in the metrics. */
void api_metrics_observe(struct pd_api_server *s, int handler, unsigned status, double seconds);

/* ---- misc ------------------------------------------------------------------------ */

int64_t api_now_ms(void);
/* The compiler that built it, e.g. "gcc 12.2.0". */
#if defined(__clang__)
#define API_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define API_COMPILER "gcc " __VERSION__
#else
#define API_COMPILER "cc"
#endif

/* ---- call graphs (callgraph.c) ----------------------------------------------- */

/* report=dot (DOT text) and report=svg (laid out by Graphviz) of p for the request's
 * sample_index, nodecount, nodefraction and edgefraction; percentages relative to
 * whole's total (the profile before tag filters). */
void api_report_callgraph(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                          const struct pd_pprof_profile *whole, int svg);
struct pd_pprof_graph_opts;
/* Parses nodecount, nodefraction and edgefraction into *o; -1 (with a 400 set)
 * when one is bad. */
int api_callgraph_params(const struct api_req *r, struct api_resp *w, struct pd_pprof_graph_opts *o);
/* The results of a layout, as profd_callgraph_layouts_total's result label names
 * them (api_callgraph_results, in this order). */
enum { API_CG_OK, API_CG_TIMEOUT, API_CG_MEMORY, API_CG_TOO_BIG, API_CG_FAILED, API_CG_BUSY };
extern const char *const api_callgraph_results[6];
/* Lays dot (NUL-terminated DOT text) out as SVG, appended to svg (at most 64 MiB),
 * in a child process that runs o's callgraph_layout_exe (NULL: /proc/self/exe) as
 * `__callgraph-layout`, under o's callgraph_timeout_ms (wall clock and, rounded up
 * to seconds, CPU time) and callgraph_max_memory (address space beyond the
 * child's own at its start); the child is killed when over and leaves no state
 * behind. msgs
 * (msize bytes) gets what Graphviz printed, NUL-terminated and cut; how (hsize)
 * says what went wrong. Returns an API_CG_ result. Thread-safe. */
int api_callgraph_layout(const struct pd_api_opts *o, const char *dot, struct pd_buf *svg,
                         char *msgs, size_t msize, char *how, size_t hsize);
/* Logs a layout's result and what Graphviz printed (msgs, trailing newlines cut
 * in place) through pd_log, which escapes it: nothing Graphviz says can make a
 * log line of its own. Nothing is logged for an ok layout that printed nothing. */
void api_callgraph_log(int result, const char *how, int64_t ms, char *msgs);

#endif
