/* lifecycle.c: the server's own endpoints, /-/healthy, /-/ready, /-/reload and
 * /-/quit, and everything outside the API: the UI hook, a small index page, the
 * redirects to the route prefix and the 404s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"

/* ---- lifecycle ----------------------------------------------------------------- */

void api_healthy(struct api_req *r, struct api_resp *w)
{
	api_text(w, 200, "profd is Healthy.\n");
}

void api_ready(struct api_req *r, struct api_resp *w)
{
	if (__atomic_load_n(&r->srv->ready, __ATOMIC_ACQUIRE))
		api_text(w, 200, "profd is Ready.\n");
	else
		api_text(w, 503, "Service Unavailable\n");
}

/* Without --web.enable-lifecycle, /-/reload and /-/quit answer 403 with
 * Prometheus's words (no trailing newline, as Prometheus writes it). */
#define LIFECYCLE_OFF "Lifecycle API is not enabled."

void api_reload(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct pd_err err = {0};
	if (!s->o.reload) {
		api_text(w, 403, LIFECYCLE_OFF);
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

/* The daemon is told after the answer has been sent (api_on_completed), so the
 * shutdown that follows cannot cut the answer off. */
void api_quit(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	if (!s->o.quit) {
		api_text(w, 403, LIFECYCLE_OFF);
		return;
	}
	w->close_conn = 1;
	if (__atomic_exchange_n(&s->quitting, 1, __ATOMIC_ACQ_REL)) {
		api_text(w, 200, "Termination already in progress.");
		return;
	}
	r->quit_after = 1;
	api_text(w, 200, "Requesting termination... Goodbye!");
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

/* A path outside the route prefix P: / and P are redirected, the rest is 404. */
static void serve_outside(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	unsigned m = api_method_bit(r->method);
	if (r->outside == OUT_ELSEWHERE || !(m == M_GET || m == M_HEAD)) {
		api_text(w, 404, "404 page not found\n");
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
		api_text(w, 500, "building the redirect failed: out of memory\n");
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
void api_serve_other(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	unsigned m = api_method_bit(r->method);
	if (r->outside) {
		serve_outside(r, w);
		return;
	}
	/* the API's own prefixes never reach the UI: an unknown endpoint is a 404 */
	int api_path = strncmp(r->path, "/api/", 5) == 0 || strncmp(r->path, "/-/", 3) == 0 ||
		       strncmp(r->path, "/debug/", 7) == 0 || api_json_api_path(r->path);
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
	if (api_json_api_path(r->path)) {
		w->json = 1;
		api_error(w, 404, "not_found", "unknown API endpoint %s", r->path);
		return;
	}
	api_text(w, 404, "404 page not found\n");
}
