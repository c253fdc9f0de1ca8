/* response.c: the answers: a response being built and freed, Prometheus's
 * `{status, data, errorType, error, warnings}` envelope around JSON handlers'
 * output, gzip for clients that accept it, the response budget
 * (--web.max-response-memory) that the bodies held for clients count against,
 * and handing the answer with its headers to libmicrohttpd. */
#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server_int.h"

/* ---- responses ------------------------------------------------------------------- */

void api_text(struct api_resp *w, unsigned status, const char *s)
{
	w->status = status;
	w->content_type = "text/plain; charset=utf-8";
	jput(w, s);
}

void api_resp_init(struct api_resp *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	w->status = 200;
	pd_buf_init(&w->body, max);
}

void api_resp_fini(struct api_resp *w)
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
void api_finish_json(struct pd_api_server *s, struct api_resp *w)
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
			api_finish_json(s, w);
			return;
		}
		if (w->berr) {
			/* no room for the closing: fall back to the error envelope */
			api_error(w, 422, "execution",
			          "the response would be larger than the limit "
			          "of %zu bytes; narrow the query",
			          s->o.max_response);
			api_finish_json(s, w);
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
		api_finish_json(s, w);
	} else {
		api_text(w, 503, BUDGET_FULL "\n");
	}
}

enum MHD_Result api_send_response(struct api_req *r, struct api_resp *w)
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
		return api_send_response(r, w);
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
