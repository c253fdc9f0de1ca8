/* server.c: the HTTP server on libmicrohttpd: binds the listen address, routes
 * requests to the API handlers, reads bounded request bodies, wraps handler
 * output in Prometheus's `{status, data, errorType, error, warnings}` envelope,
 * compresses responses for clients that accept gzip, limits how many queries
 * run at once, and serves the lifecycle endpoints (/-/healthy, /-/ready,
 * /-/reload, /-/quit), the UI hook and a small index page. Under a route prefix
 * (--web.route-prefix) every route lies below it and the handlers see the path
 * without it.
 *
 * profd accepts connections itself (one thread, the acceptor) and hands each to
 * one of two libmicrohttpd daemons: the main one, while the connection fits
 * max_connections and max_connections_per_client, else a reserve of
 * PD_API_RESERVE_CONNECTIONS that answers only /-/healthy, /-/ready and
 * /metrics, so probes and monitoring get through while idle or slow clients
 * hold the main pool. The acceptor also cuts off connections that do not
 * deliver their headers within read_header_timeout, or their body within
 * read_timeout. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api_int.h"
#include "profd/config.h"

#ifndef PD_VERSION
#define PD_VERSION "unknown"
#endif

const char *const api_handler_names[API_NHANDLERS] = {
    "/api/v1/query_range",
    "/api/v1/query",
    "/api/v1/series",
    "/api/v1/labels",
    "/api/v1/label/:name/values",
    "/api/v1/targets",
    "/api/v1/status/config",
    "/api/v1/status/flags",
    "/api/v1/status/tsdb",
    "/api/v1/status/buildinfo",
    "/api/v1/profiles",
    "/api/v1/admin/tsdb/delete_series",
    "/api/v1/admin/tsdb/clean_tombstones",
    "/api/v1/admin/tsdb/snapshot",
    "/-/healthy",
    "/-/ready",
    "/-/reload",
    "/-/quit",
    "/metrics",
    "/debug/pprof/",
    "/prometheus/api/v1/query_range",
    "/prometheus/api/v1/query",
    "/prometheus/api/v1/series",
    "/prometheus/api/v1/labels",
    "/prometheus/api/v1/label/:name/values",
    "/prometheus/api/v1/metadata",
    "/prometheus/api/v1/status/buildinfo",
    "/ingest",
    "/push.v1.PusherService/Push",
    "/v1development/profiles",
    "/api/v1/debuginfo/:build_id",
    "/api/v1/status/symbolizer",
    "/querier.v1.QuerierService/",
    "/",
    "other",
};

int64_t api_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- routes --------------------------------------------------------------- */

enum { M_GET = 1, M_HEAD = 2, M_POST = 4, M_PUT = 8, M_DELETE = 16 };
/* RAW: read, as it is, up to max_form_body; FILE: a PUT's body goes to a temp file
 * (debuginfo.c), up to max_debuginfo_size */
enum { BODY_NONE, BODY_FORM, BODY_PUSH, BODY_RAW, BODY_FILE };

static void h_healthy(struct api_req *r, struct api_resp *w);
static void h_ready(struct api_req *r, struct api_resp *w);
static void h_reload(struct api_req *r, struct api_resp *w);
static void h_quit(struct api_req *r, struct api_resp *w);

struct route {
	const char *path;
	unsigned methods;
	int handler;
	void (*fn)(struct api_req *, struct api_resp *);
	int body;
	int json;
	const char *allow;
};

static const struct route routes[] = {
    {"/api/v1/query_range", M_GET | M_HEAD | M_POST, H_QUERY_RANGE, api_query_range, BODY_FORM, 1,
     "GET, HEAD, POST"},
    {"/api/v1/query", M_GET | M_HEAD | M_POST, H_QUERY, api_query, BODY_FORM, 1, "GET, HEAD, POST"},
    {"/api/v1/series", M_GET | M_HEAD | M_POST, H_SERIES, api_series, BODY_FORM, 1,
     "GET, HEAD, POST"},
    {"/api/v1/labels", M_GET | M_HEAD | M_POST, H_LABELS, api_labels, BODY_FORM, 1,
     "GET, HEAD, POST"},
    {"/api/v1/label/", M_GET | M_HEAD, H_LABEL_VALUES, api_label_values, BODY_NONE, 1, "GET, HEAD"},
    {"/api/v1/targets", M_GET | M_HEAD, H_TARGETS, api_targets, BODY_NONE, 1, "GET, HEAD"},
    {"/api/v1/status/config", M_GET | M_HEAD, H_STATUS_CONFIG, api_status_config, BODY_NONE, 1,
     "GET, HEAD"},
    {"/api/v1/status/flags", M_GET | M_HEAD, H_STATUS_FLAGS, api_status_flags, BODY_NONE, 1,
     "GET, HEAD"},
    {"/api/v1/status/tsdb", M_GET | M_HEAD, H_STATUS_TSDB, api_status_tsdb, BODY_NONE, 1,
     "GET, HEAD"},
    {"/api/v1/status/buildinfo", M_GET | M_HEAD, H_STATUS_BUILDINFO, api_status_buildinfo,
     BODY_NONE, 1, "GET, HEAD"},
    {"/api/v1/status/symbolizer", M_GET | M_HEAD, H_STATUS_SYMBOLIZER, api_status_symbolizer,
     BODY_NONE, 1, "GET, HEAD"},
    {"/api/v1/profiles", M_POST, H_PROFILES, api_push, BODY_PUSH, 1, "POST"},
    /* other profilers' pushes (ingest.c), answered in their own protocols */
    {"/ingest", M_POST, H_INGEST, api_ingest, BODY_PUSH, 0, "POST"},
    {"/pyroscope/ingest", M_POST, H_INGEST, api_ingest, BODY_PUSH, 0, "POST"},
    {"/push.v1.PusherService/Push", M_POST, H_PUSH_V1, api_push_v1, BODY_PUSH, 0, "POST"},
    {"/v1development/profiles", M_POST, H_OTLP, api_otlp, BODY_PUSH, 0, "POST"},
    /* debug files by build id (debuginfo.c): /api/v1/debuginfo/<build-id> */
    {"/api/v1/debuginfo/", M_GET | M_HEAD | M_PUT | M_DELETE, H_DEBUGINFO, api_debuginfo, BODY_FILE,
     1, "GET, HEAD, PUT, DELETE"},
    /* Pyroscope's query API (querier.c), for Grafana: a method per path below these */
    {"/querier.v1.QuerierService/", M_POST, H_QUERIER, api_querier, BODY_RAW, 0, "POST"},
    {"/pyroscope/querier.v1.QuerierService/", M_POST, H_QUERIER, api_querier, BODY_RAW, 0, "POST"},
    {"/pyroscope/render", M_GET | M_HEAD, H_QUERIER, api_render, BODY_NONE, 0, "GET, HEAD"},
    {"/api/v1/admin/tsdb/delete_series", M_POST | M_PUT, H_ADMIN_DELETE_SERIES,
     api_admin_delete_series, BODY_FORM, 1, "POST, PUT"},
    {"/api/v1/admin/tsdb/clean_tombstones", M_POST | M_PUT, H_ADMIN_CLEAN_TOMBSTONES,
     api_admin_clean_tombstones, BODY_FORM, 1, "POST, PUT"},
    {"/api/v1/admin/tsdb/snapshot", M_POST | M_PUT, H_ADMIN_SNAPSHOT, api_admin_snapshot, BODY_FORM,
     1, "POST, PUT"},
    {"/-/healthy", M_GET | M_HEAD, H_HEALTHY, h_healthy, BODY_NONE, 0, "GET, HEAD"},
    {"/-/ready", M_GET | M_HEAD, H_READY, h_ready, BODY_NONE, 0, "GET, HEAD"},
    {"/-/reload", M_POST | M_PUT, H_RELOAD, h_reload, BODY_NONE, 0, "POST, PUT"},
    {"/-/quit", M_POST | M_PUT, H_QUIT, h_quit, BODY_NONE, 0, "POST, PUT"},
    {"/metrics", M_GET | M_HEAD, H_METRICS, api_metrics, BODY_NONE, 0, "GET, HEAD"},
    /* POST only for /debug/pprof/symbol (debug.c refuses it elsewhere) */
    {"/debug/pprof", M_GET | M_HEAD | M_POST, H_DEBUG_PPROF, api_debug_pprof, BODY_RAW, 0,
     "GET, HEAD, POST"},
    /* the Prometheus-compatible API (prometheus.c), with Prometheus's methods */
    {"/prometheus/api/v1/query_range", M_GET | M_HEAD | M_POST, H_PROM_QUERY_RANGE,
     api_prom_query_range, BODY_FORM, 1, "GET, HEAD, POST"},
    {"/prometheus/api/v1/query", M_GET | M_HEAD | M_POST, H_PROM_QUERY, api_prom_query, BODY_FORM,
     1, "GET, HEAD, POST"},
    {"/prometheus/api/v1/series", M_GET | M_HEAD | M_POST, H_PROM_SERIES, api_prom_series,
     BODY_FORM, 1, "GET, HEAD, POST"},
    {"/prometheus/api/v1/labels", M_GET | M_HEAD | M_POST, H_PROM_LABELS, api_prom_labels,
     BODY_FORM, 1, "GET, HEAD, POST"},
    {"/prometheus/api/v1/label/", M_GET | M_HEAD, H_PROM_LABEL_VALUES, api_prom_label_values,
     BODY_NONE, 1, "GET, HEAD"},
    {"/prometheus/api/v1/metadata", M_GET | M_HEAD, H_PROM_METADATA, api_prom_metadata, BODY_NONE,
     1, "GET, HEAD"},
    {"/prometheus/api/v1/status/buildinfo", M_GET | M_HEAD, H_PROM_BUILDINFO, api_prom_buildinfo,
     BODY_NONE, 1, "GET, HEAD"},
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static int find_route(const char *path)
{
	for (size_t i = 0; i < NROUTES; i++) {
		if (routes[i].handler == H_LABEL_VALUES ||
		    routes[i].handler == H_PROM_LABEL_VALUES) {
			/* [/prometheus]/api/v1/label/<name>/values */
			size_t n = strlen(routes[i].path);
			const char *rest = path + n;
			if (strncmp(path, routes[i].path, n) != 0)
				continue;
			const char *slash = strchr(rest, '/');
			if (slash && slash > rest && strcmp(slash, "/values") == 0)
				return (int)i;
			continue;
		}
		if (routes[i].handler == H_DEBUGINFO) {
			if (api_debuginfo_path(path))
				return (int)i;
			continue;
		}
		if (routes[i].handler == H_QUERIER) {
			/* /querier.v1.QuerierService/<Method> */
			if (strncmp(path, routes[i].path, strlen(routes[i].path)) == 0)
				return (int)i;
			continue;
		}
		if (routes[i].handler == H_DEBUG_PPROF) {
			/* /debug/pprof and anything below it */
			size_t n = strlen(routes[i].path);
			if (strncmp(path, routes[i].path, n) == 0 && (!path[n] || path[n] == '/'))
				return (int)i;
			continue;
		}
		if (strcmp(path, routes[i].path) == 0)
			return (int)i;
	}
	return -1;
}

static unsigned method_bit(const char *m)
{
	if (strcmp(m, MHD_HTTP_METHOD_GET) == 0)
		return M_GET;
	if (strcmp(m, MHD_HTTP_METHOD_HEAD) == 0)
		return M_HEAD;
	if (strcmp(m, MHD_HTTP_METHOD_POST) == 0)
		return M_POST;
	if (strcmp(m, MHD_HTTP_METHOD_PUT) == 0)
		return M_PUT;
	if (strcmp(m, MHD_HTTP_METHOD_DELETE) == 0)
		return M_DELETE;
	return 0;
}

/* ---- lifecycle ----------------------------------------------------------------- */

static void text(struct api_resp *w, unsigned status, const char *s)
{
	w->status = status;
	w->content_type = "text/plain; charset=utf-8";
	jput(w, s);
}

static void h_healthy(struct api_req *r, struct api_resp *w)
{
	text(w, 200, "profd is Healthy.\n");
}

static void h_ready(struct api_req *r, struct api_resp *w)
{
	if (__atomic_load_n(&r->srv->ready, __ATOMIC_ACQUIRE))
		text(w, 200, "profd is Ready.\n");
	else
		text(w, 503, "Service Unavailable\n");
}

/* Without --web.enable-lifecycle, /-/reload and /-/quit answer 403 with
 * Prometheus's words (no trailing newline, as Prometheus writes it). */
#define LIFECYCLE_OFF "Lifecycle API is not enabled."

static void h_reload(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct pd_err err = {0};
	if (!s->o.reload) {
		text(w, 403, LIFECYCLE_OFF);
		return;
	}
	int rc = s->o.reload(s->o.reload_ctx, &err);
	pd_api_record_reload(s, rc == 0);
	if (rc) {
		pd_log_error("api", "reload via /-/reload failed", "err=%s", err.msg);
		w->status = 500;
		w->content_type = "text/plain; charset=utf-8";
		jprintf(w, "failed to reload config: %s\n", err.msg[0] ? err.msg : pd_strerror(rc));
		return;
	}
	w->status = 200;
	w->content_type = "text/plain; charset=utf-8";
}

/* The daemon is told after the answer has been sent (on_completed), so the
 * shutdown that follows cannot cut the answer off. */
static void h_quit(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	if (!s->o.quit) {
		text(w, 403, LIFECYCLE_OFF);
		return;
	}
	w->close_conn = 1;
	if (__atomic_exchange_n(&s->quitting, 1, __ATOMIC_ACQ_REL)) {
		text(w, 200, "Termination already in progress.");
		return;
	}
	r->quit_after = 1;
	text(w, 200, "Requesting termination... Goodbye!");
}

static const char index_html[] =
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>profd</title></head>\n"
    "<body>\n<h1>profd</h1>\n<p>A continuous-profiling server. The API follows Prometheus's "
    "conventions.</p>\n<ul>\n"
    "<li><a href=\"api/v1/targets\">/api/v1/targets</a>: scrape targets</li>\n"
    "<li><a href=\"api/v1/labels\">/api/v1/labels</a>: label names</li>\n"
    "<li><a href=\"api/v1/label/__name__/values\">/api/v1/label/__name__/values</a>: profile "
    "types</li>\n"
    "<li>/api/v1/series?match[]=SELECTOR: series</li>\n"
    "<li>/api/v1/query_range?query=SELECTOR&amp;start=&amp;end=: profile timestamps</li>\n"
    "<li>/api/v1/query?query=SELECTOR&amp;time=&amp;report=meta|top|flamegraph|proto: one "
    "profile, a merge (mode=merge) or a diff (mode=diff)</li>\n"
    "<li>POST /api/v1/profiles?labels=LABELS: push a profile</li>\n"
    "<li>/prometheus/api/v1/query?query=PROMQL, /prometheus/api/v1/query_range: PromQL over "
    "the totals of the profiles, as Prometheus's API (for Grafana and promtool)</li>\n"
    "<li><a href=\"api/v1/status/config\">/api/v1/status/config</a>, "
    "<a href=\"api/v1/status/flags\">/api/v1/status/flags</a>, "
    "<a href=\"api/v1/status/tsdb\">/api/v1/status/tsdb</a>, "
    "<a href=\"api/v1/status/buildinfo\">/api/v1/status/buildinfo</a></li>\n"
    "<li><a href=\"metrics\">/metrics</a>, <a href=\"-/healthy\">/-/healthy</a>, "
    "<a href=\"-/ready\">/-/ready</a>, POST /-/reload, POST /-/quit</li>\n"
    "<li><a href=\"debug/pprof/\">/debug/pprof/</a>: profiles of profd itself</li>\n"
    "</ul>\n</body></html>\n";

/* 1 for the paths whose errors are JSON: /api/... and /prometheus/api/... */
static int json_api_path(const char *p)
{
	return strncmp(p, "/api/", 5) == 0 || strncmp(p, "/prometheus/api/", 16) == 0;
}

/* A path outside the route prefix P: / and P are redirected, the rest is 404. */
static void serve_outside(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	unsigned m = method_bit(r->method);
	if (r->outside == OUT_ELSEWHERE || !(m == M_GET || m == M_HEAD)) {
		text(w, 404, "404 page not found\n");
		return;
	}
	/* as Prometheus: / to P (its router then adds the slash: P to P/, the query kept) */
	r->handler = H_UI;
	w->status = 302;
	w->content_type = "text/html; charset=utf-8";
	if (r->outside == OUT_ROOT) {
		w->location_abs = s->prefix;
		jput(w, "<a href=\"");
		jput(w, s->prefix);
		jput(w, "\">Found</a>.\n");
		return;
	}
	size_t ql = r->raw_query ? strlen(r->raw_query) : 0;
	char *loc = malloc(s->prefix_len + ql + 3);
	if (!loc) {
		text(w, 500, "building the redirect failed: out of memory\n");
		return;
	}
	snprintf(loc, s->prefix_len + ql + 3, "%s/%s%s", s->prefix, ql ? "?" : "",
	         ql ? r->raw_query : "");
	w->location_owned = loc;
	w->location_abs = loc;
	jput(w, "<a href=\"");
	jput(w, s->prefix);
	jput(w, "/\">Found</a>.\n");
}

/* Everything outside the API: the UI hook, else the index page or 404. */
static void serve_other(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	unsigned m = method_bit(r->method);
	if (r->outside) {
		serve_outside(r, w);
		return;
	}
	/* the API's own prefixes never reach the UI: an unknown endpoint is a 404 */
	int api_path = strncmp(r->path, "/api/", 5) == 0 || strncmp(r->path, "/-/", 3) == 0 ||
		       strncmp(r->path, "/debug/", 7) == 0 || json_api_path(r->path);
	if (s->o.ui && !api_path && (m == M_GET || m == M_HEAD)) {
		struct pd_api_ui_response u = {0};
		int rc = s->o.ui(s->o.ui_ctx, r->method, r->path, &u);
		if (rc == 0) {
			r->handler = H_UI;
			w->status = u.status ? u.status : 200;
			w->content_type =
			    u.content_type ? u.content_type : "application/octet-stream";
			w->raw = u.data;
			w->raw_len = u.len;
			w->raw_free = u.must_free;
			w->cache_control = u.cache_control;
			w->location = u.location;
			return;
		}
	}
	if (strcmp(r->path, "/") == 0 && (m == M_GET || m == M_HEAD)) {
		r->handler = H_UI;
		w->status = 200;
		w->content_type = "text/html; charset=utf-8";
		jput(w, index_html);
		return;
	}
	if (json_api_path(r->path)) {
		w->json = 1;
		api_error(w, 404, "not_found", "unknown API endpoint %s", r->path);
		return;
	}
	text(w, 404, "404 page not found\n");
}

/* ---- responses ------------------------------------------------------------------- */

static const char success_prefix[] = "{\"status\":\"success\",\"data\":";

/* A response refused because the responses held for clients have filled
 * --web.max-response-memory: 503 with Retry-After, as for any overload. */
#define PD_API_RETRY_AFTER_S 5
#define BUDGET_FULL                                                                                \
	"the server holds as many bytes of responses for clients as "                              \
	"--web.max-response-memory allows; try again later"

static void resp_init(struct api_resp *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	w->status = 200;
	pd_buf_init(&w->body, max);
}

static void resp_fini(struct api_resp *w)
{
	pd_buf_fini(&w->body);
	for (size_t i = 0; i < w->nwarnings; i++)
		free(w->warnings[i]);
	free(w->warnings);
	free(w->disposition);
	free(w->location_owned);
	if (w->raw && w->raw_free)
		free((void *)w->raw);
}

/* Turns a JSON handler's output into the final envelope in w->body. */
static void finish_json(struct pd_api_server *s, struct api_resp *w)
{
	if (!w->error_set && w->berr == PD_EFULL) {
		w->retry_after = PD_API_RETRY_AFTER_S;
		api_error(w, 503, "unavailable", "%s", BUDGET_FULL);
		__atomic_fetch_add(&s->resp_refused, 1, __ATOMIC_RELAXED);
	} else if (!w->error_set && w->berr) {
		if (w->berr == PD_ETOOBIG)
			api_error(
			    w, 422, "execution",
			    "the response would be larger than the limit of %zu bytes; narrow the "
			    "query (a shorter range, a more specific selector, or limit)",
			    s->o.max_response);
		else
			api_error(w, 500, "internal", "building the response failed: %s",
			          pd_strerror(w->berr));
	}
	if (w->error_set) {
		pd_buf_fini(&w->body);
		pd_buf_init(&w->body, 0);
		w->berr = 0;
		jput(w, "{\"status\":\"error\",\"errorType\":");
		jstr(w, w->error_type);
		jput(w, ",\"error\":");
		jstr(w, w->error);
		jput(w, "}");
	} else {
		if (w->nwarnings) {
			jput(w, ",\"warnings\":[");
			for (size_t i = 0; i < w->nwarnings; i++) {
				if (i)
					jput(w, ",");
				jstr(w, w->warnings[i]);
			}
			jput(w, "]");
		}
		jput(w, "}");
		if (w->berr == PD_EFULL) {
			/* no room for the closing in the response budget */
			finish_json(s, w);
			return;
		}
		if (w->berr) {
			/* no room for the closing: fall back to the error envelope */
			api_error(w, 422, "execution",
			          "the response would be larger than the limit "
			          "of %zu bytes; narrow the query",
			          s->o.max_response);
			finish_json(s, w);
			return;
		}
	}
	w->content_type = "application/json";
}

/* 1 when the client accepts gzip (Accept-Encoding with gzip or * at q > 0). */
static int accepts_gzip(struct MHD_Connection *c)
{
	const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
	if (!ae)
		return 0;
	const char *p = ae;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *tok = p;
		while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
			p++;
		size_t tl = (size_t)(p - tok);
		double q = 1;
		while (*p == ' ' || *p == '\t')
			p++;
		while (*p == ';') {
			p++;
			while (*p == ' ')
				p++;
			if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=')
				q = strtod(p + 2, NULL);
			while (*p && *p != ',' && *p != ';')
				p++;
		}
		if (((tl == 4 && strncasecmp(tok, "gzip", 4) == 0) || (tl == 1 && *tok == '*')) &&
		    q > 0)
			return 1;
		while (*p && *p != ',')
			p++;
	}
	return 0;
}

static int compressible(const char *ct)
{
	return ct && (strncmp(ct, "text/", 5) == 0 || strncmp(ct, "application/json", 16) == 0 ||
	              strncmp(ct, "application/javascript", 22) == 0 ||
	              strncmp(ct, "image/svg+xml", 13) == 0);
}

/* A body handed to libmicrohttpd, with what it charges to the response budget:
 * both are given back when libmicrohttpd lets go of the response (read to its
 * end, or the connection closed or timed out). */
struct held_body {
	struct pd_buf_budget *budget;
	size_t charge;
	void *data;
};

static void held_body_free(void *cls)
{
	struct held_body *h = cls;
	pd_buf_budget_release(h->budget, h->charge);
	free(h->data);
	free(h);
}

/* Turns w into the answer that the budget has no room for its body. */
static void budget_refusal(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	pd_buf_fini(&w->body);
	pd_buf_init(&w->body, 0);
	free(w->disposition);
	w->disposition = NULL;
	w->berr = 0;
	w->no_gzip = 0;
	w->cache_control = NULL;
	w->retry_after = PD_API_RETRY_AFTER_S;
	__atomic_fetch_add(&s->resp_refused, 1, __ATOMIC_RELAXED);
	if (w->json) {
		w->error_set = 0;
		api_error(w, 503, "unavailable", "%s", BUDGET_FULL);
		finish_json(s, w);
	} else {
		text(w, 503, BUDGET_FULL "\n");
	}
}

static enum MHD_Result send_response(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	const uint8_t *data;
	size_t len;
	enum MHD_ResponseMemoryMode mode;
	uint8_t *owned = NULL;
	size_t charged = 0; /* what the body has charged to the budget so far */
	if (w->raw) {
		data = w->raw;
		len = w->raw_len;
		mode = w->raw_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT;
		w->raw = NULL; /* MHD owns or borrows it now */
	} else {
		charged = pd_buf_charge(&w->body);
		owned = pd_buf_steal(&w->body, &len);
		data = owned;
		mode = MHD_RESPMEM_MUST_FREE;
	}
	int gz = 0;
	if (compressible(w->content_type) && !w->no_gzip && len >= 1024 && accepts_gzip(r->conn)) {
		uint8_t *z;
		size_t zl;
		struct pd_err err = {0};
		/* level 1: five times faster than 6 for a quarter more bytes */
		if (pd_gzip(data, len, 1, &z, &zl, &err) == 0) {
			if (mode == MHD_RESPMEM_MUST_FREE)
				free((void *)data);
			data = z;
			len = zl;
			mode = MHD_RESPMEM_MUST_FREE;
			gz = 1;
		}
	}
	/* what the body held for the client charges: its bytes past the first
	 * PD_API_RESPONSE_FREE_EACH (none on the reserve, as when it was built) */
	int counted = !(r->cn && r->cn->reserve);
	size_t want = counted && mode == MHD_RESPMEM_MUST_FREE && len > PD_API_RESPONSE_FREE_EACH
	                  ? len - PD_API_RESPONSE_FREE_EACH
	                  : 0;
	if (want > charged && pd_buf_budget_take(&s->resp_budget, want - charged)) {
		pd_buf_budget_release(&s->resp_budget, charged);
		free((void *)data);
		budget_refusal(r, w);
		return send_response(r, w);
	}
	if (charged > want) {
		/* the spare capacity goes back with the charge for it */
		uint8_t *t = owned && !gz && len ? realloc((void *)data, len) : NULL;
		if (t)
			data = t;
		pd_buf_budget_release(&s->resp_budget, charged - want);
	}
	struct MHD_Response *resp = NULL;
	struct held_body *hb = NULL;
	if (len && mode == MHD_RESPMEM_MUST_FREE) {
		hb = malloc(sizeof(*hb));
		if (hb) {
			*hb = (struct held_body){&s->resp_budget, want, (void *)data};
			resp = MHD_create_response_from_buffer_with_free_callback_cls(
			    len, (void *)data, held_body_free, hb);
		}
		if (!resp) {
			free(hb);
			pd_buf_budget_release(&s->resp_budget, want);
			free((void *)data);
			return MHD_NO;
		}
	} else {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free((void *)data);
		resp = MHD_create_response_from_buffer(len, (void *)(len ? data : (const uint8_t *)""),
		                                       MHD_RESPMEM_PERSISTENT);
		if (!resp)
			return MHD_NO;
	}
	if (w->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, w->content_type);
	if (gz)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	if (compressible(w->content_type) && !w->no_gzip)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	if (w->disposition)
		MHD_add_response_header(resp, "Content-Disposition", w->disposition);
	if (w->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, w->allow);
	if (w->accept_post)
		MHD_add_response_header(resp, "Accept-Post", w->accept_post);
	if (w->location_abs) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, w->location_abs);
	} else if (w->location) {
		/* a path inside the server: under the route prefix */
		size_t ll = strlen(w->location);
		char *loc =
		    s->prefix_len && w->location[0] == '/' ? malloc(s->prefix_len + ll + 1) : NULL;
		if (loc) {
			memcpy(loc, s->prefix, s->prefix_len);
			memcpy(loc + s->prefix_len, w->location, ll + 1);
		}
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc ? loc : w->location);
		free(loc);
	}
	if (w->cache_control)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, w->cache_control);
	if (w->symbolized)
		MHD_add_response_header(resp, "X-Profd-Symbolized", w->symbolized);
	if (w->aggregation)
		MHD_add_response_header(resp, "X-Profd-Aggregation", w->aggregation);
	if (w->csp) {
		MHD_add_response_header(resp, "Content-Security-Policy", w->csp);
		MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	}
	if (w->close_conn || (r->cn && r->cn->reserve))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (w->status == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic");
	if (w->retry_after) {
		char ra[24];
		snprintf(ra, sizeof(ra), "%d", w->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (r->web) {
		/* http_server_config.headers, on every response */
		const struct pd_web_config *wc = api_web_snap_config(r->web);
		for (size_t i = 0; i < wc->nheaders; i++)
			MHD_add_response_header(resp, wc->headers[i].name, wc->headers[i].value);
	}
	enum MHD_Result ret = MHD_queue_response(r->conn, w->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- requests ----------------------------------------------------------------------- */

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
	struct api_req *r = cls;
	(void)kind;
	if (!key)
		return MHD_YES;
	return api_param_add(r, key, strlen(key), value ? value : "", value ? strlen(value) : 0)
	           ? MHD_NO
	           : MHD_YES;
}

static void query_gate_enter(struct pd_api_server *s)
{
	pthread_mutex_lock(&s->qmu);
	while (s->qrunning >= s->o.max_concurrent_queries)
		pthread_cond_wait(&s->qcv, &s->qmu);
	s->qrunning++;
	pthread_mutex_unlock(&s->qmu);
}

static void query_gate_leave(struct pd_api_server *s)
{
	pthread_mutex_lock(&s->qmu);
	s->qrunning--;
	pthread_cond_signal(&s->qcv);
	pthread_mutex_unlock(&s->qmu);
}

static int is_form(struct MHD_Connection *c)
{
	const char *ct =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	return ct && strncasecmp(ct, "application/x-www-form-urlencoded", 33) == 0;
}

static enum MHD_Result process(struct api_req *r)
{
	struct pd_api_server *s = r->srv;
	struct api_resp w;
	resp_init(&w, s->o.max_response);
	/* what the response holds counts against --web.max-response-memory as it is
	 * built, and until the client has read it; not on the reserve, whose answers
	 * (/-/healthy, /-/ready, /metrics) must get through */
	if (!(r->cn && r->cn->reserve))
		w.body.budget = &s->resp_budget;
	const struct route *rt = r->route >= 0 ? &routes[r->route] : NULL;
	if (rt && rt->json) {
		w.json = 1;
		jput(&w, success_prefix);
	}
	unsigned m = method_bit(r->method);
	if (MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, r) < 0)
		api_error(&w, 500, "internal", "reading the parameters failed");
	if (!rt) {
		serve_other(r, &w);
	} else if (!(rt->methods & m)) {
		w.allow = rt->allow;
		if (rt->json)
			api_error(&w, 405, "bad_data", "method %s not allowed; use %s", r->method,
			          rt->allow);
		else
			text(&w, 405,
			     rt->handler == H_RELOAD || rt->handler == H_QUIT
			         ? "Only POST or PUT requests allowed\n"
			         : "Method Not Allowed\n");
	} else if (r->body_too_big && r->handler == H_DEBUGINFO) {
		api_debuginfo_count(s, API_DBG_TOO_LARGE, 0);
		api_error(&w, 413, "bad_data",
		          "the debug file is larger than the limit of %zu bytes "
		          "(--web.max-debuginfo-size)",
		          r->body_max);
	} else if (r->body_too_big) {
		char msg[160];
		snprintf(msg, sizeof(msg),
		         "the request body is larger than the limit of %zu bytes "
		         "(--web.max-push-body)",
		         r->body_max);
		if (r->handler == H_PROFILES)
			api_push_refused(s, API_PUSH_BODY_SIZE);
		if (api_ingest_endpoint(r->handler) >= 0) {
			api_ingest_refused(s, r->handler, API_PUSH_BODY_SIZE);
			api_ingest_reject(r, &w, 413, msg);
		} else if (r->handler == H_QUERIER) {
			/* a Connect error, as the query API answers */
			snprintf(msg, sizeof(msg), "the request body is larger than the limit of %zu bytes",
			         r->body_max);
			api_ingest_reject(r, &w, 413, msg);
		} else {
			api_error(&w, 413, "bad_data", "%s", msg);
		}
	} else {
		int frc = 0;
		if (rt->body == BODY_FORM && (r->is_post || m == M_PUT) && r->body.len &&
		    is_form(r->conn))
			frc = api_params_parse_form(r, (const char *)r->body.data, r->body.len);
		if (frc == PD_EINVAL)
			api_error(&w, 400, "bad_data",
			          "the form body holds a NUL byte (%%00); parameters cannot contain NUL");
		else if (frc)
			api_error(&w, 500, "internal", "reading the form failed: out of memory");
		if (!w.error_set) {
			/* queries, and the /prometheus endpoints that read profile totals */
			int gated =
			    rt->handler == H_QUERY || rt->handler == H_QUERY_RANGE ||
			    rt->handler == H_PROM_QUERY || rt->handler == H_PROM_QUERY_RANGE ||
			    rt->handler == H_PROM_SERIES || rt->handler == H_PROM_LABELS ||
			    rt->handler == H_PROM_LABEL_VALUES || rt->handler == H_PROM_METADATA ||
			    rt->handler == H_QUERIER;
			if (gated)
				query_gate_enter(s);
			rt->fn(r, &w);
			if (gated)
				query_gate_leave(s);
		}
	}
	if (w.json)
		finish_json(s, &w);
	else if (w.error_set) {
		/* a plain-text endpoint that failed (out of memory, bad method) */
		pd_buf_fini(&w.body);
		pd_buf_init(&w.body, 0);
		w.berr = 0;
		w.status = w.status ? w.status : 500;
		w.content_type = "text/plain; charset=utf-8";
		jprintf(&w, "%s\n", w.error);
	} else if (w.berr == PD_EFULL) {
		pd_buf_fini(&w.body);
		pd_buf_init(&w.body, 0);
		w.berr = 0;
		w.retry_after = PD_API_RETRY_AFTER_S;
		__atomic_fetch_add(&s->resp_refused, 1, __ATOMIC_RELAXED);
		text(&w, 503, BUDGET_FULL "\n");
	} else if (w.berr) {
		pd_buf_fini(&w.body);
		pd_buf_init(&w.body, 0);
		w.berr = 0;
		w.status = 500;
		w.content_type = "text/plain; charset=utf-8";
		jput(&w, "building the response failed\n");
	}
	unsigned status = w.status;
	enum MHD_Result ret = send_response(r, &w);
	resp_fini(&w);
	double secs = (double)(mono_ns() - r->t0_ns) / 1e9;
	api_metrics_observe(s, r->handler, status, secs);
	pd_log_debug("api", "request", "method=%s path=%s status=%u duration=%.6f", r->method,
	             r->path, status, secs);
	return ret;
}

static void req_free(struct api_req *r)
{
	if (!r)
		return;
	pd_buf_fini(&r->body);
	for (size_t i = 0; i < r->nparams; i++) {
		free(r->params[i].name);
		free(r->params[i].value);
	}
	free(r->params);
	free(r->path);
	free(r->raw_query);
	api_debuginfo_free(r);
	api_web_snap_put(r->web);
	free(r);
}

/* Answers a request before its body is read (and closes the connection). */
static enum MHD_Result reject(struct api_req *r, unsigned status, const char *type,
                              const char *msg)
{
	struct api_resp w;
	resp_init(&w, 0);
	w.close_conn = 1;
	if (api_ingest_endpoint(r->handler) >= 0 || r->handler == H_QUERIER) {
		api_ingest_reject(r, &w, status, msg); /* Connect's error JSON */
	} else if (json_api_path(r->path)) {
		w.json = 1;
		api_error(&w, status, type, "%s", msg);
		finish_json(r->srv, &w);
	} else {
		text(&w, status, msg);
		jput(&w, "\n");
	}
	enum MHD_Result ret = send_response(r, &w);
	resp_fini(&w);
	api_metrics_observe(r->srv, r->handler, status, (double)(mono_ns() - r->t0_ns) / 1e9);
	pd_log_debug("api", "request refused", "method=%s path=%s status=%u err=%s", r->method,
	             r->path, status, msg);
	return ret;
}

/* A push over --web.max-concurrent-pushes: 429 with Retry-After, before its body
 * is read, so that waiting pushes hold no memory. */
static enum MHD_Result reject_busy_push(struct api_req *r)
{
	struct pd_api_server *s = r->srv;
	struct api_resp w;
	resp_init(&w, 0);
	w.close_conn = 1;
	w.retry_after = 1;
	char msg[160];
	snprintf(msg, sizeof(msg),
	         "too many pushes at once: all %u slots (--web.max-concurrent-pushes) are "
	         "taken; retry after a second",
	         s->o.max_concurrent_pushes);
	if (api_ingest_endpoint(r->handler) >= 0) {
		api_ingest_refused(s, r->handler, API_PUSH_CONCURRENCY);
		api_ingest_reject(r, &w, 429, msg);
		w.retry_after = 1;
	} else {
		w.json = 1;
		api_error(&w, 429, "unavailable", "%s", msg);
		finish_json(s, &w);
	}
	enum MHD_Result ret = send_response(r, &w);
	resp_fini(&w);
	if (r->handler == H_PROFILES)
		api_push_refused(s, API_PUSH_CONCURRENCY);
	api_metrics_observe(s, r->handler, 429, (double)(mono_ns() - r->t0_ns) / 1e9);
	pd_log_debug("api", "request refused", "method=%s path=%s status=429 err=%s", r->method,
	             r->path, "too many pushes at once");
	return ret;
}

/* Takes a push slot for r: 0, or -1 when all max_concurrent_pushes are taken. */
static int push_slot_take(struct api_req *r)
{
	struct pd_api_server *s = r->srv;
	int ok;
	pthread_mutex_lock(&s->qmu);
	ok = s->pushing < s->o.max_concurrent_pushes;
	if (ok)
		s->pushing++;
	pthread_mutex_unlock(&s->qmu);
	r->push_slot = ok;
	return ok ? 0 : -1;
}

static void push_slot_give(struct api_req *r)
{
	struct pd_api_server *s = r->srv;
	if (!r->push_slot)
		return;
	r->push_slot = 0;
	pthread_mutex_lock(&s->qmu);
	s->pushing--;
	pthread_mutex_unlock(&s->qmu);
}

/* Answers as exporter-toolkit's wrapper does, before the API sees the request:
 * plain text whatever the path (and, for 401, a Basic challenge). */
static enum MHD_Result reject_plain(struct api_req *r, unsigned status, const char *msg)
{
	struct api_resp w;
	resp_init(&w, 0);
	w.close_conn = 1;
	text(&w, status, msg);
	jput(&w, "\n");
	enum MHD_Result ret = send_response(r, &w);
	resp_fini(&w);
	api_metrics_observe(r->srv, r->handler, status, (double)(mono_ns() - r->t0_ns) / 1e9);
	pd_log_debug("api", "request refused", "method=%s path=%s status=%u err=%s", r->method,
	             r->path, status, msg);
	return ret;
}

/* A request without a tenant it may use (tenant.c): the endpoint's own error form
 * (the /api/v1 envelope, Connect's for pushes and the query API), else Pyroscope's. */
static enum MHD_Result reject_tenant(struct api_req *r, unsigned status, const char *msg)
{
	if (json_api_path(r->path) || api_ingest_endpoint(r->handler) >= 0 ||
	    r->handler == H_QUERIER)
		return reject(r, status, status == 403 ? "forbidden" : "unauthorized", msg);
	struct api_resp w;
	resp_init(&w, 0);
	w.close_conn = 1;
	api_tenant_error(&w, status, msg);
	enum MHD_Result ret = send_response(r, &w);
	resp_fini(&w);
	api_metrics_observe(r->srv, r->handler, status, (double)(mono_ns() - r->t0_ns) / 1e9);
	return ret;
}

/* ---- connections ----------------------------------------------------------------------- */

static int same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		              &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	return 1;
}

static void count_close(struct pd_api_server *s, enum api_close_reason why)
{
	pthread_mutex_lock(&s->m.mu);
	s->m.c.conn_closed[why]++;
	pthread_mutex_unlock(&s->m.mu);
}

/* Moves a connection to phase ph and sets the deadline that phase has. */
static void conn_phase(struct pd_api_server *s, struct api_conn *cn, enum api_conn_phase ph)
{
	if (!cn)
		return;
	int64_t now = mono_ns();
	pthread_mutex_lock(&s->cmu);
	cn->phase = ph;
	if (ph == PHASE_HEADERS) {
		cn->phase_start_ns = now;
		cn->deadline_ns = now + s->o.read_header_timeout_ms * 1000000;
	} else if (ph == PHASE_BODY) {
		cn->deadline_ns = cn->phase_start_ns + s->o.read_timeout_ms * 1000000;
	} else {
		cn->deadline_ns = 0;
	}
	pthread_mutex_unlock(&s->cmu);
}

/* Cuts off a connection: MHD's next read sees the end of the stream and closes it.
 * Counted first, so that a client who sees its connection end finds it counted. */
static void conn_kill(struct pd_api_server *s, struct api_conn *cn, enum api_close_reason why)
{
	count_close(s, why);
	cn->killed = 1;
	shutdown(cn->dupfd, SHUT_RDWR);
}

/* Closes connections past their deadline; returns the milliseconds until the next
 * deadline (at most 1000). Called by the acceptor. */
static int reap(struct pd_api_server *s)
{
	int64_t now = mono_ns(), next = now + 1000000000LL;
	pthread_mutex_lock(&s->cmu);
	for (size_t i = 0; i < s->nconns; i++) {
		struct api_conn *cn = &s->conns[i];
		if (!cn->in_use || cn->killed || !cn->deadline_ns)
			continue;
		if (now >= cn->deadline_ns) {
			enum api_close_reason why =
			    cn->phase == PHASE_HEADERS ? CLOSE_HEADER_TIMEOUT : CLOSE_READ_TIMEOUT;
			conn_kill(s, cn, why);
			pd_log_debug(
			    "api", "closed a connection", "reason=%s",
			    why == CLOSE_HEADER_TIMEOUT
			        ? "no complete request headers within --web.read-header-timeout"
			        : "no complete request body within --web.read-timeout");
		} else if (cn->deadline_ns < next) {
			next = cn->deadline_ns;
		}
	}
	pthread_mutex_unlock(&s->cmu);
	return (int)((next - now + 999999) / 1000000);
}

/* Accepts one connection and gives it to the main daemon or the reserve. */
static void accept_one(struct pd_api_server *s)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = accept(s->listen_fd, (struct sockaddr *)&ss, &sl);
	if (fd < 0)
		return;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (s->web && api_web_tls(s->web)) {
		/* a thread of its own makes the handshake and carries the bytes; MHD
		 * serves the plain end (tls.c) */
		int pfd;
		int64_t deadline = mono_ns() + s->o.read_header_timeout_ms * 1000000;
		if (api_tls_start(&s->tls, s->web, fd, &ss, deadline, &pfd)) {
			count_close(s, CLOSE_REFUSED);
			close(fd);
			return;
		}
		fd = pfd;
	}
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0) {
		count_close(s, CLOSE_REFUSED);
		close(fd);
		return;
	}
	int64_t now = mono_ns();
	pthread_mutex_lock(&s->cmu);
	unsigned nmain = 0, nres = 0, nip = 0;
	struct api_conn *slot = NULL, *oldest = NULL;
	for (size_t i = 0; i < s->nconns; i++) {
		struct api_conn *cn = &s->conns[i];
		if (!cn->in_use) {
			if (!slot)
				slot = cn;
			continue;
		}
		if (cn->killed)
			continue;
		if (cn->reserve) {
			nres++;
			if (cn->phase == PHASE_HEADERS && (!oldest || cn->seq < oldest->seq))
				oldest = cn;
		} else {
			nmain++;
			if (same_ip(&cn->addr, &ss))
				nip++;
		}
	}
	int reserve = nmain >= s->o.max_connections || nip >= s->o.max_connections_per_client;
	if (reserve && nres >= PD_API_RESERVE_CONNECTIONS) {
		/* the reserve is full: the oldest still waiting for its request makes room */
		if (oldest)
			conn_kill(s, oldest, CLOSE_EVICTED);
		else
			slot = NULL;
	}
	uint64_t seq = 0;
	if (slot) {
		memset(slot, 0, sizeof(*slot));
		slot->in_use = 1;
		slot->reserve = reserve;
		slot->fd = fd;
		slot->dupfd = dfd;
		slot->phase = PHASE_HEADERS;
		slot->phase_start_ns = now;
		slot->deadline_ns = now + s->o.read_header_timeout_ms * 1000000;
		slot->seq = seq = ++s->conn_seq;
		memcpy(&slot->addr, &ss, sizeof(ss));
		slot->addrlen = sl;
	}
	pthread_mutex_unlock(&s->cmu);
	if (!slot) {
		count_close(s, CLOSE_REFUSED); /* before the client can see the close */
		close(dfd);
		close(fd);
		return;
	}
	if (reserve) {
		pthread_mutex_lock(&s->m.mu);
		s->m.c.conn_reserve++;
		pthread_mutex_unlock(&s->m.mu);
	}
	/* MHD closes fd itself when it cannot take the connection. A TLS connection's
	 * plain end is a UNIX socket: MHD is told so (it then leaves TCP options
	 * alone); the client's address stays in the slot. */
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct sockaddr *ma = (struct sockaddr *)&ss;
	socklen_t ml = sl;
	if (s->web && api_web_tls(s->web)) {
		ma = (struct sockaddr *)&un;
		ml = sizeof(sa_family_t);
	}
	if (MHD_add_connection(reserve ? s->mhd_reserve : s->mhd, fd, ma, ml) !=
	    MHD_YES) {
		pthread_mutex_lock(&s->cmu);
		if (slot->in_use && slot->seq == seq) {
			close(slot->dupfd);
			slot->in_use = 0;
		}
		pthread_mutex_unlock(&s->cmu);
		count_close(s, CLOSE_REFUSED);
	}
}

static void *acceptor_main(void *arg)
{
	struct pd_api_server *s = arg;
	struct pollfd pf[2] = {{s->listen_fd, POLLIN, 0}, {s->wake_fd, POLLIN, 0}};
	int backoff = 0;
	while (!__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE)) {
		int timeout = reap(s);
		/* out of descriptors: wait before the next accept rather than spin */
		int n = poll(backoff ? pf + 1 : pf, backoff ? 1 : 2, backoff ? 100 : timeout);
		backoff = 0;
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (pf[1].revents)
			break;
		if (pf[0].revents & POLLIN) {
			errno = 0;
			accept_one(s);
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				backoff = 1;
		}
	}
	return NULL;
}

/* MHD's connection start and close: binds a connection to its slot, frees it. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct pd_api_server *s = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci)
			return;
		pthread_mutex_lock(&s->cmu);
		for (size_t i = 0; i < s->nconns; i++) {
			struct api_conn *cn = &s->conns[i];
			if (cn->in_use && !cn->bound && cn->fd == ci->connect_fd) {
				cn->bound = 1;
				*socket_context = cn;
				break;
			}
		}
		pthread_mutex_unlock(&s->cmu);
		return;
	}
	struct api_conn *cn = *socket_context;
	if (!cn)
		return;
	pthread_mutex_lock(&s->cmu);
	close(cn->dupfd);
	cn->in_use = 0;
	pthread_mutex_unlock(&s->cmu);
	*socket_context = NULL;
}

static struct api_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* The raw request target, before MHD decodes it: remembers a %00 (decoded, it
 * would silently end the path or a parameter). Its result is the request's state. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	(void)c;
	struct api_req *r = calloc(1, sizeof(*r));
	if (r && uri) {
		r->raw_nul = strstr(uri, "%00") != NULL;
		r->raw_uri = uri;
		r->raw_len = strlen(uri);
		/* kept for the redirect of the bare route prefix to P/ and for
		 * /debug/pprof/symbol's "?0xADDR+0xADDR" (MHD decodes the arguments in
		 * place later); a failed copy only drops the query there */
		const char *q = strchr(uri, '?');
		if (q)
			r->raw_query = strdup(q + 1);
	}
	return r;
}

/* 1 when the request line held a raw NUL byte inside its target. MHD hands the
 * target over as a C string, so "GET /a.js\0.html HTTP/1.1" would arrive as
 * "/a.js". MHD decodes the target in place, in the buffer that holds the request
 * line, just before the version: between the end of the raw target (as on_uri
 * saw it) and the version there is only the separating space (now a NUL) unless
 * the target went on after a NUL. Checked only when the pointers have that
 * layout; otherwise nothing is found. */
static int raw_nul_in_line(const struct api_req *r, const char *url, const char *version)
{
	if (!r->raw_uri || url != r->raw_uri || !version || version <= url + r->raw_len ||
	    version - url > 256 * 1024)
		return 0;
	for (const char *p = url + r->raw_len; p < version; p++)
		if (*p != '\0' && *p != ' ' && *p != '\t')
			return 1;
	return 0;
}

/* A reason to refuse the decoded path, or NULL: "." and ".." segments, overlong. */
static const char *bad_path(const char *p)
{
	if (strlen(p) > PD_API_MAX_PATH)
		return "the request path is longer than 4096 bytes";
	for (const char *seg = p; seg; seg = strchr(seg + 1, '/')) {
		const char *q = seg + 1;
		size_t n = strcspn(q, "/");
		if ((n == 1 && q[0] == '.') || (n == 2 && q[0] == '.' && q[1] == '.'))
			return "the request path holds a \".\" or \"..\" segment (perhaps encoded as "
			       "%2e); ask for the path without it";
	}
	return NULL;
}

/* Under a route prefix P: takes P off the front of path (in place) and returns
 * OUT_INSIDE, or says where else the path lies. Without a prefix: OUT_INSIDE. */
static int strip_prefix(const struct pd_api_server *s, char *path)
{
	size_t n = s->prefix_len;
	if (!n)
		return OUT_INSIDE;
	if (strncmp(path, s->prefix, n) == 0 && path[n] == '/') {
		memmove(path, path + n, strlen(path + n) + 1);
		return OUT_INSIDE;
	}
	if (strcmp(path, s->prefix) == 0)
		return OUT_PREFIX;
	if (strcmp(path, "/") == 0)
		return OUT_ROOT;
	return OUT_ELSEWHERE;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_len, void **state)
{
	struct pd_api_server *s = cls;
	struct api_req *r = *state;
	if (!r || !r->path) {
		if (!r && !(r = calloc(1, sizeof(*r))))
			return MHD_NO;
		*state = r;
		if (raw_nul_in_line(r, url, version))
			r->raw_nul = 1;
		if (!(r->path = strdup(url ? url : "/")))
			return MHD_NO;
		r->srv = s;
		r->conn = c;
		r->cn = conn_of(c);
		r->method = method;
		r->t0_ns = mono_ns();
		r->now_ms = api_now_ms();
		r->is_post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
		r->is_head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
		r->outside = strip_prefix(s, r->path);
		r->route = r->outside ? -1 : find_route(r->path);
		r->handler = r->route >= 0 ? routes[r->route].handler : H_OTHER;
		int body = r->route >= 0 ? routes[r->route].body : BODY_NONE;
		int is_upload = body == BODY_FILE && strcmp(method, MHD_HTTP_METHOD_PUT) == 0;
		r->body_max = body == BODY_PUSH                       ? s->o.max_push_body
		              : body == BODY_FORM || body == BODY_RAW ? s->o.max_form_body
		              : is_upload && s->debuginfo_dir         ? s->o.max_debuginfo_size
		                                                      : 0;
		/* an is_upload's body goes to its file, never to r->body */
		pd_buf_init(&r->body, is_upload ? 1 : r->body_max);
		conn_phase(s, r->cn, PHASE_BODY);
		if (s->web) {
			/* exporter-toolkit's order: the file, the rate limit, basic auth */
			if (!(r->web = api_web_get(s->web, 0)))
				return reject_plain(r, 500, "Internal Server Error");
			if (!api_web_rate_ok(s->web))
				return reject_plain(r, 429, "Too Many Requests");
			const char *au =
			    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
			if (!api_web_authorized(s->web, r->web, au))
				return reject_plain(r, 401, "Unauthorized");
			r->user = api_web_user(r->web, au);
		}
		char tmsg[PD_ERR_MSG_MAX];
		unsigned tst = api_tenant_begin(
		    r, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Scope-OrgID"), tmsg,
		    sizeof(tmsg));
		if (tst)
			return reject_tenant(r, tst, tmsg);
		if (r->cn && r->cn->reserve && r->handler != H_HEALTHY && r->handler != H_READY &&
		    r->handler != H_METRICS) {
			char msg[512];
			snprintf(msg, sizeof(msg),
			         "too many connections: this client has %u open "
			         "(--web.max-connections-per-client) or the server has %u "
			         "(--web.max-connections); close idle connections and retry",
			         s->o.max_connections_per_client, s->o.max_connections);
			return reject(r, 503, "unavailable", msg);
		}
		if (r->raw_nul)
			return reject(r, 400, "bad_data",
			              "the request target holds a NUL byte (raw or encoded as %00); "
			              "paths and parameters cannot contain NUL");
		const char *why = bad_path(r->path);
		if (why)
			return reject(r, 400, "bad_data", why);
		int pushing =
		    r->handler == H_PROFILES || api_ingest_endpoint(r->handler) >= 0 || is_upload;
		if (is_upload && s->o.push_disabled) {
			api_debuginfo_count(s, API_DBG_REFUSED, 0);
			return reject(r, 404, "not_found",
			              "debug file uploads, like pushes, need to be enabled with "
			              "--web.enable-push");
		}
		if (pushing && s->o.push_disabled) {
			if (r->handler != H_PROFILES)
				api_ingest_refused(s, r->handler, 0);
			return reject(r, 404, "not_found",
			              "push receiver needs to be enabled with --web.enable-push");
		}
		const char *cl =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (r->body_max && cl && strtoull(cl, NULL, 10) > r->body_max) {
			r->body_too_big = 1;
			if (r->handler == H_PROFILES)
				api_push_refused(s, API_PUSH_BODY_SIZE);
			else if (is_upload)
				api_debuginfo_count(s, API_DBG_TOO_LARGE, 0);
			else if (pushing)
				api_ingest_refused(s, r->handler, API_PUSH_BODY_SIZE);
			char msg[160];
			if (is_upload)
				snprintf(msg, sizeof(msg),
				         "the debug file is larger than the limit of %zu bytes "
				         "(--web.max-debuginfo-size)",
				         r->body_max);
			else
				snprintf(msg, sizeof(msg),
				         "the request body is larger than the limit of %zu bytes%s",
				         r->body_max, pushing ? " (--web.max-push-body)" : "");
			return reject(r, 413, "bad_data", msg);
		}
		if (pushing && (r->is_post || is_upload) && push_slot_take(r)) {
			if (is_upload)
				api_debuginfo_count(s, API_DBG_REFUSED, 0);
			return reject_busy_push(r);
		}
		if (is_upload && s->debuginfo_dir) {
			char msg[512];
			unsigned st = api_debuginfo_begin(r, msg, sizeof(msg));
			if (st) {
				api_debuginfo_count(s,
				                    st == 500   ? API_DBG_FAILED
				                    : st == 413 ? API_DBG_OVER_QUOTA
				                                : API_DBG_INVALID,
				                    0);
				return reject(r, st, st == 500 ? "internal" : "bad_data", msg);
			}
		}
		return MHD_YES;
	}
	if (*upload_len) {
		if (r->dbg) {
			api_debuginfo_write(r, upload, *upload_len);
		} else if (r->body_max && !r->body_too_big) {
			if (pd_buf_append(&r->body, upload, *upload_len))
				r->body_too_big = 1;
		}
		*upload_len = 0;
		return MHD_YES;
	}
	conn_phase(s, r->cn, PHASE_HANDLING);
	return process(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode why)
{
	struct pd_api_server *s = cls;
	struct api_req *r = *state;
	struct api_conn *cn = conn_of(c);
	if (why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED && cn) {
		/* MHD's inactivity timeout, which backs ours, closed it first (a loaded
		 * server can reach it before the acceptor's next reap): counted the same,
		 * once; killed keeps the reaper away while MHD closes it */
		pthread_mutex_lock(&s->cmu);
		int ours = cn->killed;
		enum api_conn_phase ph = cn->phase;
		cn->killed = 1;
		pthread_mutex_unlock(&s->cmu);
		if (!ours)
			count_close(s, ph == PHASE_HEADERS ? CLOSE_HEADER_TIMEOUT : CLOSE_READ_TIMEOUT);
	}
	/* the next request's headers are due within read_header_timeout */
	conn_phase(s, cn, PHASE_HEADERS);
	if (r && r->quit_after)
		s->o.quit(s->o.quit_ctx);
	if (r)
		push_slot_give(r);
	req_free(r);
	*state = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	/* connections profd cut off (timeouts, the reserve) look to MHD like clients that left */
	/* ... and the plain end of a TLS connection (a UNIX socket, tls.c) has no TCP
	 * options to set */
	if (strstr(buf, "closed by remote side") || strstr(buf, "Connection reset") ||
	    ((strstr(buf, "TCP_NODELAY") || strstr(buf, "TCP_CORK") ||
	      strstr(buf, "push the data from buffers")) &&
	     cls && ((struct pd_api_server *)cls)->web))
		pd_log_debug("api", "libmicrohttpd", "err=%s", buf);
	else
		pd_log_warn("api", "libmicrohttpd", "err=%s", buf);
}

/* ---- listening ------------------------------------------------------------------------ */

/* Splits "host:port", ":port", "[v6]:port" into host ("" for any) and port. */
static int split_address(const char *addr, char *host, size_t hsize, char *port, size_t psize)
{
	const char *colon;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return -1;
		if ((size_t)(close - addr - 1) >= hsize)
			return -1;
		memcpy(host, addr + 1, (size_t)(close - addr - 1));
		host[close - addr - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= hsize)
			return -1;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
		if (strchr(host, ':'))
			return -1; /* a bare IPv6 address needs brackets */
	}
	if (!colon[1] || strlen(colon + 1) >= psize)
		return -1;
	snprintf(port, psize, "%s", colon + 1);
	return 0;
}

static int try_bind(const struct addrinfo *ai, int *fd_out, int *eno)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0) {
		*eno = errno;
		return -1;
	}
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
		*eno = errno;
		close(fd);
		return -1;
	}
	*fd_out = fd;
	return 0;
}

static int open_listener(const char *addr, int *fd_out, unsigned *port_out, struct pd_err *err)
{
	char host[256], port[32];
	if (split_address(addr, host, sizeof(host), port, sizeof(port)))
		return pd_err_set(
		    err, PD_EINVAL,
		    "listen tcp %s: the address must be host:port, :port or [ipv6]:port", addr);
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	int g = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (g)
		return pd_err_set(err, PD_EINVAL, "listen tcp %s: %s", addr, gai_strerror(g));
	int fd = -1, eno = 0;
	/* for every interface, prefer one dual-stack IPv6 socket */
	for (int pass = 0; pass < 2 && fd < 0; pass++)
		for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
			if (!host[0] && (pass == 0) != (ai->ai_family == AF_INET6))
				continue;
			if (host[0] && pass == 1)
				break;
			try_bind(ai, &fd, &eno);
		}
	freeaddrinfo(res);
	if (fd < 0)
		return pd_err_set(err, PD_EIO, "listen tcp %s: bind: %s", addr, strerror(eno));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned p = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	*fd_out = fd;
	*port_out = p;
	return 0;
}

/* ---- the server ---------------------------------------------------------------------- */

void pd_api_opts_init(struct pd_api_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->listen_address = PD_API_DEFAULT_LISTEN_ADDRESS;
	o->lookback_ms = PD_API_DEFAULT_LOOKBACK_MS;
	o->max_range_ms = PD_API_DEFAULT_MAX_RANGE_MS;
	o->max_merge_profiles = PD_API_DEFAULT_MAX_MERGE_PROFILES;
	o->max_merge_bytes = PD_API_DEFAULT_MAX_MERGE_BYTES;
	o->max_push_body = PD_API_DEFAULT_MAX_PUSH_BODY;
	o->max_form_body = PD_API_DEFAULT_MAX_FORM_BODY;
	o->max_response = PD_API_DEFAULT_MAX_RESPONSE;
	o->max_response_memory = PD_API_DEFAULT_MAX_RESPONSE_MEMORY;
	o->max_connections = PD_API_DEFAULT_MAX_CONNECTIONS;
	o->max_connections_per_client = PD_API_DEFAULT_MAX_CONNECTIONS_PER_CLIENT;
	o->read_header_timeout_ms = PD_API_DEFAULT_READ_HEADER_TIMEOUT_MS;
	o->read_timeout_ms = PD_API_DEFAULT_READ_TIMEOUT_MS;
	o->max_concurrent_queries = PD_API_DEFAULT_MAX_CONCURRENT_QUERIES;
	o->max_concurrent_pushes = PD_API_DEFAULT_MAX_CONCURRENT_PUSHES;
	o->push_max_ratio = PD_PPROF_STORE_MAX_RATIO;
	o->push_max_memory = PD_PPROF_STORE_MAX_MEMORY;
	o->push_max_samples = PD_PPROF_STORE_MAX_SAMPLES;
	o->push_max_sample_labels = PD_PPROF_STORE_MAX_SAMPLE_LABELS;
	o->query_timeout_ms = PD_API_DEFAULT_QUERY_TIMEOUT_MS;
	o->query_max_samples = PD_API_DEFAULT_QUERY_MAX_SAMPLES;
	o->query_lookback_ms = PD_API_DEFAULT_QUERY_LOOKBACK_MS;
	o->callgraph_timeout_ms = PD_API_DEFAULT_CALLGRAPH_TIMEOUT_MS;
	o->callgraph_max_memory = PD_API_DEFAULT_CALLGRAPH_MAX_MEMORY;
	o->callgraph_max_concurrency = PD_API_DEFAULT_CALLGRAPH_MAX_CONCURRENCY;
	o->callgraph_layout_exe = PD_API_DEFAULT_CALLGRAPH_LAYOUT_EXE;
	o->max_debuginfo_size = PD_API_DEFAULT_MAX_DEBUGINFO_SIZE;
	o->max_debuginfo_total = PD_API_DEFAULT_MAX_DEBUGINFO_TOTAL;
}

static void server_free(struct pd_api_server *s)
{
	for (size_t i = 0; i < s->nflags; i++) {
		free(s->flag_names[i]);
		free(s->flag_values[i]);
	}
	free(s->flag_names);
	free(s->flag_values);
	free(s->listen_address);
	free(s->version);
	free(s->cg_exe);
	free(s->prefix);
	free(s->debuginfo_dir);
	free(s->conns);
	api_tls_pool_wait(&s->tls);
	api_web_close(s->web);
	pthread_mutex_destroy(&s->cmu);
	pthread_mutex_destroy(&s->qmu);
	pthread_cond_destroy(&s->qcv);
	pthread_mutex_destroy(&s->m.mu);
	free(s);
}

int pd_api_start(struct pd_api_server **out, const struct pd_api_opts *opts, struct pd_err *err)
{
	*out = NULL;
	if (!opts || !opts->db)
		return pd_err_set(err, PD_EINVAL, "the API needs a store");
	struct pd_api_server *s = calloc(1, sizeof(*s));
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	pthread_mutex_init(&s->cmu, NULL);
	s->listen_fd = s->wake_fd = -1;
	pthread_mutex_init(&s->qmu, NULL);
	pthread_cond_init(&s->qcv, NULL);
	pthread_mutex_init(&s->m.mu, NULL);
	s->o = *opts;
	struct pd_api_opts d;
	pd_api_opts_init(&d);
#define DEF(f)                                                                                     \
	if (!s->o.f)                                                                               \
		s->o.f = d.f;
	DEF(listen_address);
	DEF(lookback_ms);
	DEF(max_range_ms);
	DEF(max_merge_profiles);
	DEF(max_merge_bytes);
	DEF(max_push_body);
	DEF(max_form_body);
	DEF(max_response);
	DEF(max_response_memory);
	s->resp_budget.max = s->o.max_response_memory;
	s->resp_budget.free_each = PD_API_RESPONSE_FREE_EACH;
	DEF(max_connections);
	DEF(max_connections_per_client);
	DEF(read_header_timeout_ms);
	DEF(read_timeout_ms);
	DEF(max_concurrent_queries);
	DEF(max_concurrent_pushes);
	DEF(push_max_ratio);
	DEF(push_max_memory);
	DEF(push_max_samples);
	DEF(push_max_sample_labels);
	DEF(query_timeout_ms);
	DEF(query_max_samples);
	DEF(query_lookback_ms);
	DEF(callgraph_timeout_ms);
	DEF(callgraph_max_memory);
	DEF(callgraph_max_concurrency);
	DEF(callgraph_layout_exe);
	DEF(max_debuginfo_size);
	DEF(max_debuginfo_total);
#undef DEF
	if (s->o.lookback_ms < 0)
		s->o.lookback_ms = 0;
	s->listen_address = strdup(s->o.listen_address);
	s->version = strdup(opts->version ? opts->version : PD_VERSION);
	s->o.listen_address = s->listen_address;
	s->o.version = s->version;
	s->cg_exe = strdup(s->o.callgraph_layout_exe);
	s->o.callgraph_layout_exe = s->cg_exe;
	/* "/" and "" are no prefix; a trailing slash is not part of one */
	const char *pp = opts->route_prefix ? opts->route_prefix : "";
	size_t pn = strlen(pp);
	while (pn && pp[pn - 1] == '/')
		pn--;
	s->prefix = strndup(pp, pn);
	s->prefix_len = pn;
	s->o.route_prefix = s->prefix;
	s->debuginfo_dir = opts->debuginfo_dir ? strdup(opts->debuginfo_dir) : NULL;
	s->o.debuginfo_dir = s->debuginfo_dir;
	s->nflags = opts->nflags;
	s->flag_names = calloc(s->nflags + 1, sizeof(char *));
	s->flag_values = calloc(s->nflags + 1, sizeof(char *));
	int rc = 0;
	if (!s->listen_address || !s->version || !s->cg_exe || !s->prefix || !s->flag_names ||
	    !s->flag_values)
		rc = PD_ENOMEM;
	for (size_t i = 0; i < s->nflags && !rc; i++) {
		s->flag_names[i] = strdup(opts->flag_names[i] ? opts->flag_names[i] : "");
		s->flag_values[i] = strdup(opts->flag_values[i] ? opts->flag_values[i] : "");
		if (!s->flag_names[i] || !s->flag_values[i])
			rc = PD_ENOMEM;
	}
	s->o.flag_names = (const char *const *)s->flag_names;
	s->o.flag_values = (const char *const *)s->flag_values;
	if (rc) {
		server_free(s);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	s->ready = 1;
	s->m.c.last_reload_ok = 1;
	s->started_ms = api_now_ms();
	s->m.c.last_reload_ms = s->started_ms;
	if (s->prefix_len && s->prefix[0] != '/') {
		server_free(s);
		return pd_err_set(err, PD_EINVAL,
		                  "the route prefix %s must start with \"/\" (see "
		                  "pd_api_route_prefix)",
		                  opts->route_prefix);
	}
	if (s->o.read_header_timeout_ms < 0 || s->o.read_timeout_ms < 0) {
		server_free(s);
		return pd_err_set(err, PD_EINVAL, "the HTTP read timeouts must not be negative");
	}
	if (s->o.read_header_timeout_ms > s->o.read_timeout_ms)
		s->o.read_header_timeout_ms = s->o.read_timeout_ms;
	/* killed connections keep their slot until MHD closes them: room for a reserve's worth */
	s->nconns = (size_t)s->o.max_connections + 2 * PD_API_RESERVE_CONNECTIONS;
	s->conns = calloc(s->nconns, sizeof(*s->conns));
	if (!s->conns) {
		server_free(s);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	api_tls_pool_init(&s->tls, &s->m);
	if (opts->web_config_file && *opts->web_config_file &&
	    (rc = api_web_open(opts->web_config_file, &s->m, &s->web, err))) {
		server_free(s);
		return rc;
	}
	if ((rc = open_listener(s->listen_address, &s->listen_fd, &s->port, err))) {
		server_free(s);
		return rc;
	}
	/* a connection reset between poll and accept must not block the acceptor */
	fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK);
	/* MHD's own inactivity timeout (whole seconds) backs ours and covers clients that
	 * stop reading a response */
	intptr_t idle_s = (intptr_t)((s->o.read_timeout_ms + 999) / 1000);
	/* options as one array: the form mhd_dl.c forwards to the loaded library */
	struct MHD_OptionItem ops[] = {
		{MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s},
		{MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s},
		{MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s},
		{MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, s},
		{MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->nconns, NULL},
		{MHD_OPTION_CONNECTION_TIMEOUT, idle_s, NULL},
		{MHD_OPTION_CONNECTION_MEMORY_LIMIT, 256 * 1024, NULL},
		{MHD_OPTION_END, 0, NULL},
	};
	/* MHD_USE_POLL: with select(), a connection whose descriptor is 1024 or
	 * more is refused, and a profd scraping thousands of targets holds that
	 * many descriptors */
	const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                       MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET |
	                       MHD_USE_ITC;
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, ops,
	                          MHD_OPTION_END);
	if (s->mhd)
		s->mhd_reserve = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
		                                  MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
	if (s->mhd_reserve)
		s->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (s->wake_fd >= 0 && pthread_create(&s->acceptor, NULL, acceptor_main, s) == 0)
		s->acceptor_started = 1;
	if (!s->acceptor_started) {
		if (s->mhd_reserve)
			MHD_stop_daemon(s->mhd_reserve);
		if (s->mhd)
			MHD_stop_daemon(s->mhd);
		if (s->wake_fd >= 0)
			close(s->wake_fd);
		close(s->listen_fd);
		server_free(s);
		return pd_err_set(err, PD_EIO, "listen tcp %s: starting the HTTP server failed",
		                  opts->listen_address ? opts->listen_address
		                                       : PD_API_DEFAULT_LISTEN_ADDRESS);
	}
	pd_log_info("api", "listening", "address=%s port=%u tls=%s", s->listen_address, s->port,
	            s->web && api_web_tls(s->web) ? "on" : "off");
	*out = s;
	return 0;
}

unsigned pd_api_port(const struct pd_api_server *s)
{
	return s ? s->port : 0;
}

void pd_api_set_ready(struct pd_api_server *s, int ready)
{
	if (s)
		__atomic_store_n(&s->ready, ready ? 1 : 0, __ATOMIC_RELEASE);
}

void pd_api_stop(struct pd_api_server *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(s->wake_fd, &one, sizeof(one)) < 0)
		pd_log_warn("api", "waking the acceptor failed", "err=%s", strerror(errno));
	pthread_join(s->acceptor, NULL);
	close(s->listen_fd);
	MHD_stop_daemon(s->mhd_reserve);
	MHD_stop_daemon(s->mhd);
	close(s->wake_fd);
	for (size_t i = 0; i < s->nconns; i++)
		if (s->conns[i].in_use) /* never started by MHD */
			close(s->conns[i].dupfd);
	server_free(s);
}
