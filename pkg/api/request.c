/* request.c: one request through the server: the route table and how a path
 * finds its route (under a route prefix, --web.route-prefix, every route lies
 * below it and the handlers see the path without it), libmicrohttpd's
 * callbacks from the request target to the end of the request, the checks
 * before a body is read (web configuration, tenant, reserve, path, push
 * limits) and their refusals, bounded request bodies, and the gate that limits
 * how many queries run at once. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server_int.h"

/* ---- routes --------------------------------------------------------------- */

/* RAW: read, as it is, up to max_form_body; FILE: a PUT's body goes to a temp file
 * (debuginfo.c), up to max_debuginfo_size */
enum { BODY_NONE, BODY_FORM, BODY_PUSH, BODY_RAW, BODY_FILE };

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
    {"/-/healthy", M_GET | M_HEAD, H_HEALTHY, api_healthy, BODY_NONE, 0, "GET, HEAD"},
    {"/-/ready", M_GET | M_HEAD, H_READY, api_ready, BODY_NONE, 0, "GET, HEAD"},
    {"/-/reload", M_POST | M_PUT, H_RELOAD, api_reload, BODY_NONE, 0, "POST, PUT"},
    {"/-/quit", M_POST | M_PUT, H_QUIT, api_quit, BODY_NONE, 0, "POST, PUT"},
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

unsigned api_method_bit(const char *m)
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

/* 1 for the paths whose errors are JSON: /api/... and /prometheus/api/... */
int api_json_api_path(const char *p)
{
	return strncmp(p, "/api/", 5) == 0 || strncmp(p, "/prometheus/api/", 16) == 0;
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

static const char success_prefix[] = "{\"status\":\"success\",\"data\":";

static enum MHD_Result process(struct api_req *r)
{
	struct pd_api_server *s = r->srv;
	struct api_resp w;
	api_resp_init(&w, s->o.max_response);
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
	unsigned m = api_method_bit(r->method);
	if (MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, r) < 0)
		api_error(&w, 500, "internal", "reading the parameters failed");
	if (!rt) {
		api_serve_other(r, &w);
	} else if (!(rt->methods & m)) {
		w.allow = rt->allow;
		if (rt->json)
			api_error(&w, 405, "bad_data", "method %s not allowed; use %s", r->method,
			          rt->allow);
		else
			api_text(&w, 405,
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
		api_finish_json(s, &w);
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
		api_text(&w, 503, BUDGET_FULL "\n");
	} else if (w.berr) {
		pd_buf_fini(&w.body);
		pd_buf_init(&w.body, 0);
		w.berr = 0;
		w.status = 500;
		w.content_type = "text/plain; charset=utf-8";
		jput(&w, "building the response failed\n");
	}
	unsigned status = w.status;
	enum MHD_Result ret = api_send_response(r, &w);
	api_resp_fini(&w);
	double secs = (double)(api_mono_ns() - r->t0_ns) / 1e9;
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
	api_resp_init(&w, 0);
	w.close_conn = 1;
	if (api_ingest_endpoint(r->handler) >= 0 || r->handler == H_QUERIER) {
		api_ingest_reject(r, &w, status, msg); /* Connect's error JSON */
	} else if (api_json_api_path(r->path)) {
		w.json = 1;
		api_error(&w, status, type, "%s", msg);
		api_finish_json(r->srv, &w);
	} else {
		api_text(&w, status, msg);
		jput(&w, "\n");
	}
	enum MHD_Result ret = api_send_response(r, &w);
	api_resp_fini(&w);
	api_metrics_observe(r->srv, r->handler, status, (double)(api_mono_ns() - r->t0_ns) / 1e9);
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
	api_resp_init(&w, 0);
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
		api_finish_json(s, &w);
	}
	enum MHD_Result ret = api_send_response(r, &w);
	api_resp_fini(&w);
	if (r->handler == H_PROFILES)
		api_push_refused(s, API_PUSH_CONCURRENCY);
	api_metrics_observe(s, r->handler, 429, (double)(api_mono_ns() - r->t0_ns) / 1e9);
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
	api_resp_init(&w, 0);
	w.close_conn = 1;
	api_text(&w, status, msg);
	jput(&w, "\n");
	enum MHD_Result ret = api_send_response(r, &w);
	api_resp_fini(&w);
	api_metrics_observe(r->srv, r->handler, status, (double)(api_mono_ns() - r->t0_ns) / 1e9);
	pd_log_debug("api", "request refused", "method=%s path=%s status=%u err=%s", r->method,
	             r->path, status, msg);
	return ret;
}

/* A request without a tenant it may use (tenant.c): the endpoint's own error form
 * (the /api/v1 envelope, Connect's for pushes and the query API), else Pyroscope's. */
static enum MHD_Result reject_tenant(struct api_req *r, unsigned status, const char *msg)
{
	if (api_json_api_path(r->path) || api_ingest_endpoint(r->handler) >= 0 ||
	    r->handler == H_QUERIER)
		return reject(r, status, status == 403 ? "forbidden" : "unauthorized", msg);
	struct api_resp w;
	api_resp_init(&w, 0);
	w.close_conn = 1;
	api_tenant_error(&w, status, msg);
	enum MHD_Result ret = api_send_response(r, &w);
	api_resp_fini(&w);
	api_metrics_observe(r->srv, r->handler, status, (double)(api_mono_ns() - r->t0_ns) / 1e9);
	return ret;
}

/* The raw request target, before MHD decodes it: remembers a %00 (decoded, it
 * would silently end the path or a parameter). Its result is the request's state. */
void *api_on_uri(void *cls, const char *uri, struct MHD_Connection *c)
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
 * line, just before the version: between the end of the raw target (as api_on_uri
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

enum MHD_Result api_on_request(void *cls, struct MHD_Connection *c, const char *url,
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
		r->cn = api_conn_of(c);
		r->method = method;
		r->t0_ns = api_mono_ns();
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
		api_conn_set_phase(s, r->cn, PHASE_BODY);
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
	api_conn_set_phase(s, r->cn, PHASE_HANDLING);
	return process(r);
}

void api_on_completed(void *cls, struct MHD_Connection *c, void **state,
                      enum MHD_RequestTerminationCode why)
{
	struct pd_api_server *s = cls;
	struct api_req *r = *state;
	struct api_conn *cn = api_conn_of(c);
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
			api_count_close(s, ph == PHASE_HEADERS ? CLOSE_HEADER_TIMEOUT : CLOSE_READ_TIMEOUT);
	}
	/* the next request's headers are due within read_header_timeout */
	api_conn_set_phase(s, cn, PHASE_HEADERS);
	if (r && r->quit_after)
		s->o.quit(s->o.quit_ctx);
	if (r)
		push_slot_give(r);
	req_free(r);
	*state = NULL;
}
