/* ingest.c: the endpoints other profilers push to, each speaking its peer's
 * protocol: Pyroscope's POST /ingest (and /pyroscope/ingest), Pyroscope's
 * push.v1.PusherService/Push as a Connect unary call over HTTP/1.1, and OTLP
 * profiles over HTTP (POST /v1development/profiles). pkg/ingest turns the body
 * into pprof profiles with their series labels; this file reads the request
 * (Content-Encoding included), stores the whole batch in one commit, so that a
 * request is stored entirely or not at all, and answers in the protocol's own
 * form: Pyroscope's and Connect's error JSON, OTLP's google.rpc.Status and
 * ExportProfilesServiceResponse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "api_int.h"
#include "profd/ingest.h"
#include "profd/pprof.h"

/* ---- metrics ------------------------------------------------------------------ */

static const char *const endpoint_names[API_INGEST_NENDPOINTS] = {"ingest", "push", "otlp"};
static const char *const format_names[API_INGEST_NFORMATS] = {
    "pprof", "folded", "lines", "jfr", "speedscope", "trie", "tree", "proto", "json", "unknown"};
static const char *const reason_names[API_INGEST_NREASONS] = {
    [API_INGEST_MALFORMED] = "malformed",     [API_INGEST_UNSUPPORTED] = "unsupported",
    [API_INGEST_BODY_SIZE] = "body_size",     [API_INGEST_CONCURRENCY] = "concurrency",
    [API_INGEST_STORE] = "store",             [API_INGEST_DISABLED] = "disabled",
    [API_INGEST_PARTIAL] = "partial_success",
};

static int format_index(const char *f)
{
	if (!f)
		return API_INGEST_NFORMATS - 1;
	for (int i = 0; i < API_INGEST_NFORMATS - 1; i++)
		if (strcmp(format_names[i], f) == 0)
			return i;
	return API_INGEST_NFORMATS - 1;
}

int api_ingest_endpoint(int handler)
{
	switch (handler) {
	case H_INGEST:
		return API_INGEST_EP_INGEST;
	case H_PUSH_V1:
		return API_INGEST_EP_PUSH;
	case H_OTLP:
		return API_INGEST_EP_OTLP;
	default:
		return -1;
	}
}

/* Counts a refusal of endpoint ep's request in format f (NULL: not known) for
 * reason (enum api_ingest_reason, or API_INGEST_LIMIT0 + a pd_ingest limit). */
static void count_refused(struct pd_api_server *s, int ep, const char *f, int reason, size_t n)
{
	if (ep < 0 || reason <= 0 || reason >= API_INGEST_NREASONS)
		return;
	pthread_mutex_lock(&s->m.mu);
	s->m.c.ingest_refused[ep][format_index(f)][reason] += n ? n : 1;
	pthread_mutex_unlock(&s->m.mu);
}

void api_ingest_refused(struct pd_api_server *s, int handler, int why)
{
	int reason = why == API_PUSH_CONCURRENCY ? API_INGEST_CONCURRENCY
		     : why == API_PUSH_BODY_SIZE ? API_INGEST_BODY_SIZE
						 : API_INGEST_DISABLED;
	count_refused(s, api_ingest_endpoint(handler), NULL, reason, 1);
}

void api_ingest_metrics(struct pd_api_server *s, struct api_resp *w)
{
	static uint64_t acc[API_INGEST_NENDPOINTS][API_INGEST_NFORMATS];
	static uint64_t bytes[API_INGEST_NENDPOINTS][API_INGEST_NFORMATS];
	static uint64_t ref[API_INGEST_NENDPOINTS][API_INGEST_NFORMATS][API_INGEST_NREASONS];
	static pthread_mutex_t snap_mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&snap_mu);
	pthread_mutex_lock(&s->m.mu);
	memcpy(acc, s->m.c.ingest_profiles, sizeof(acc));
	memcpy(bytes, s->m.c.ingest_bytes, sizeof(bytes));
	memcpy(ref, s->m.c.ingest_refused, sizeof(ref));
	pthread_mutex_unlock(&s->m.mu);
	jput(w, "# HELP profd_ingest_profiles_total Profiles stored from pushes to /ingest, "
		"push.v1.PusherService/Push and /v1development/profiles, by endpoint and format.\n"
		"# TYPE profd_ingest_profiles_total counter\n");
	for (int e = 0; e < API_INGEST_NENDPOINTS; e++)
		for (int f = 0; f < API_INGEST_NFORMATS; f++)
			if (acc[e][f])
				jprintf(w,
					"profd_ingest_profiles_total{endpoint=\"%s\",format=\"%s\"} "
					"%llu\n",
					endpoint_names[e], format_names[f],
					(unsigned long long)acc[e][f]);
	jput(w, "# HELP profd_ingest_received_bytes_total Bytes of request bodies (as sent, "
		"before decompression) of the pushes that were stored, by endpoint and format.\n"
		"# TYPE profd_ingest_received_bytes_total counter\n");
	for (int e = 0; e < API_INGEST_NENDPOINTS; e++)
		for (int f = 0; f < API_INGEST_NFORMATS; f++)
			if (bytes[e][f])
				jprintf(w,
					"profd_ingest_received_bytes_total{endpoint=\"%s\",format="
					"\"%s\"} %llu\n",
					endpoint_names[e], format_names[f],
					(unsigned long long)bytes[e][f]);
	jput(w, "# HELP profd_ingest_refused_total Pushes (for partial_success: profiles) "
		"refused, by endpoint, format and reason.\n"
		"# TYPE profd_ingest_refused_total counter\n");
	for (int e = 0; e < API_INGEST_NENDPOINTS; e++)
		for (int f = 0; f < API_INGEST_NFORMATS; f++)
			for (int r = 1; r < API_INGEST_NREASONS; r++)
				if (ref[e][f][r])
					jprintf(w,
						"profd_ingest_refused_total{endpoint=\"%s\",format="
						"\"%s\",reason=\"%s\"} %llu\n",
						endpoint_names[e], format_names[f],
						r >= API_INGEST_LIMIT0
						    ? pd_ingest_limit_reason(r - API_INGEST_LIMIT0)
						    : reason_names[r],
						(unsigned long long)ref[e][f][r]);
	pthread_mutex_unlock(&snap_mu);
}

/* ---- answers in each protocol's form ------------------------------------------- */

/* Connect's codes (connectrpc.com/docs/protocol, "Error Codes") and the HTTP
 * status each maps to. */
struct code {
	const char *name;
	unsigned http;
	int grpc; /* google.rpc.Code, for OTLP's Status */
};
static const struct code C_INVALID = {"invalid_argument", 400, 3};
static const struct code C_EXHAUSTED = {"resource_exhausted", 429, 8};
static const struct code C_UNAVAILABLE = {"unavailable", 503, 14};
static const struct code C_INTERNAL = {"internal", 500, 13};
static const struct code C_UNIMPLEMENTED = {"unimplemented", 501, 12};
static const struct code C_UNAUTHENTICATED = {"unauthenticated", 401, 16};
static const struct code C_DENIED = {"permission_denied", 403, 7};

/* Pyroscope's and Connect's error body: {"code":"…","message":"…"}. status 0:
 * the code's own. */
static void json_error(struct api_resp *w, const struct code *c, unsigned status, const char *msg)
{
	w->status = status ? status : c->http;
	w->content_type = "application/json";
	jput(w, "{\"code\":");
	jstr(w, c->name);
	jput(w, ",\"message\":");
	jstr(w, msg);
	jput(w, "}\n");
}

/* A protobuf varint into b. */
static void pb_varint(struct api_resp *w, uint64_t v)
{
	char tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (char)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= (char)0x80;
		n++;
	} while (v);
	jputn(w, tmp, n);
}

/* OTLP/HTTP's error body: a google.rpc.Status {code = 1, message = 2}, in the
 * request's encoding. */
static void otlp_error(struct api_resp *w, int json, const struct code *c, unsigned status,
		       const char *msg)
{
	w->status = status ? status : c->http;
	if (json) {
		w->content_type = "application/json";
		jprintf(w, "{\"code\":%d,\"message\":", c->grpc);
		jstr(w, msg);
		jput(w, "}");
		return;
	}
	w->content_type = "application/x-protobuf";
	/* a proto3 string must be UTF-8, and the message may quote client bytes:
	 * those outside printable ASCII become '?' */
	size_t ml = strlen(msg);
	jputn(w, "\x08", 1);
	pb_varint(w, (uint64_t)c->grpc);
	jputn(w, "\x12", 1);
	pb_varint(w, ml);
	for (size_t i = 0; i < ml; i++) {
		unsigned char ch = (unsigned char)msg[i];
		jputn(w, ch >= 0x20 && ch < 0x7f ? msg + i : "?", 1);
	}
}

/* An error in the form of r's endpoint. */
static void ingest_error(struct api_req *r, struct api_resp *w, int json, const struct code *c,
			 unsigned status, const char *msg)
{
	if (r->handler == H_OTLP)
		otlp_error(w, json, c, status, msg);
	else
		json_error(w, c, status, msg);
	if ((status ? status : c->http) == 429 || (status ? status : c->http) == 503)
		w->retry_after = 5; /* as the server's other 503s */
}

/* 1 when the request's Content-Type is JSON (OTLP and Connect). */
static int is_json_ct(const char *ct)
{
	return ct && strncasecmp(ct, "application/json", 16) == 0;
}

void api_ingest_reject(struct api_req *r, struct api_resp *w, unsigned status, const char *msg)
{
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_TYPE);
	/* as Pyroscope's HTTPToCode: 413 is invalid_argument (not retried), 404
	 * unimplemented (Connect's code for 404) */
	const struct code *c = status == 429   ? &C_EXHAUSTED
			       : status == 503 ? &C_UNAVAILABLE
			       : status == 404 ? &C_UNIMPLEMENTED
	                       : status == 401 ? &C_UNAUTHENTICATED
	                       : status == 403 ? &C_DENIED
			       : status >= 500 ? &C_INTERNAL
					       : &C_INVALID;
	ingest_error(r, w, is_json_ct(ct), c, status, msg);
}

/* ---- the request's body ------------------------------------------------------ */

/* The body with its Content-Encoding undone: *out points into the request or to
 * *owned (the caller frees). -1 after answering. */
static int body_of(struct api_req *r, struct api_resp *w, int json, const uint8_t **out,
		   size_t *len, uint8_t **owned, const char **fmt)
{
	struct pd_api_server *s = r->srv;
	const char *ce = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_ENCODING);
	*out = r->body.data;
	*len = r->body.len;
	*owned = NULL;
	if (!ce || !*ce || strcasecmp(ce, "identity") == 0)
		return 0;
	char msg[PD_ERR_MSG_MAX + 160];
	if (strcasecmp(ce, "gzip") != 0) {
		snprintf(msg, sizeof(msg),
			 "Content-Encoding %.64s is not supported: send gzip or identity", ce);
		count_refused(s, api_ingest_endpoint(r->handler), *fmt, API_INGEST_UNSUPPORTED, 1);
		ingest_error(r, w, json, r->handler == H_OTLP ? &C_INVALID : &C_UNIMPLEMENTED,
			     415, msg);
		return -1;
	}
	struct pd_err err = {0};
	size_t maxd = s->o.max_decompressed ? s->o.max_decompressed : PD_STORAGE_DEFAULT_MAX_PROFILE;
	struct pd_inflate_opts io = {
	    .format = PD_INFLATE_GZIP, .max = maxd, .max_ratio = s->o.push_max_ratio};
	int rc = pd_inflate(r->body.data, r->body.len, &io, owned, len, &err);
	if (rc) {
		int lim = rc == PD_ETOOBIG ? 1 : 0;
		snprintf(msg, sizeof(msg), "the gzip body could not be read: %.*s%s",
			 (int)(PD_ERR_MSG_MAX - 1), err.msg,
			 lim ? " (--storage.tsdb.max-profile-decoded-size, "
			       "--storage.tsdb.max-profile-gzip-ratio)"
			     : "");
		count_refused(s, api_ingest_endpoint(r->handler), *fmt,
			      lim ? API_INGEST_LIMIT0 + PD_INGEST_LIMIT_DECOMPRESSED
				  : API_INGEST_MALFORMED,
			      1);
		ingest_error(r, w, json, &C_INVALID, lim ? 413 : 400, msg);
		return -1;
	}
	*out = *owned;
	return 0;
}

/* The limits of a request, from the server's options. */
static struct pd_ingest_limits limits_of(const struct pd_api_server *s)
{
	struct pd_ingest_limits l = s->o.ingest;
	l.max_decompressed = s->o.max_decompressed ? s->o.max_decompressed
						   : PD_STORAGE_DEFAULT_MAX_PROFILE;
	l.max_ratio = s->o.push_max_ratio;
	l.max_samples = s->o.push_max_samples;
	l.max_decoded_memory = s->o.push_max_memory;
	l.max_sample_labels = s->o.push_max_sample_labels;
	return pd_ingest_limits_resolve(&l);
}

/* ---- storing a batch ------------------------------------------------------------ */

/* Stores every profile of b in one commit. 0, or an HTTP status (400, 413, 500,
 * 503) with the message in err. */
static unsigned store_batch(const struct api_req *r, struct pd_ingest_batch *b,
			    const struct pd_ingest_limits *lim, size_t *bytes, struct pd_err *err)
{
	struct pd_api_server *s = r->srv;
	struct pd_storage_label tl[64 + 3]; /* and the tenant's */
	struct pd_storage_appender *app = NULL;
	unsigned status = 0;
	*bytes = 0;
	if (b->n == 0)
		return 0;
	if (!(app = pd_storage_appender(s->o.db))) {
		pd_err_set(err, PD_ENOMEM, "out of memory");
		return 500;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct pd_ingest_profile *x = &b->v[i];
		size_t n = pd_labels_len(x->labels);
		if (n + 1 > sizeof(tl) / sizeof(tl[0])) {
			pd_err_set(err, PD_ETOOBIG, "a series has %zu labels", n);
			status = 413;
			goto fail;
		}
		for (size_t j = 0; j < n; j++) {
			tl[j].name = pd_labels_at(x->labels, j)->name;
			tl[j].value = pd_labels_at(x->labels, j)->value;
			if (api_tenant_hidden(tl[j].name)) {
				pd_err_set(err, PD_EINVAL, "label name %s is reserved",
				           PD_LABELS_TENANT);
				status = 400;
				goto fail;
			}
		}
		n = api_tenant_label_add(r, tl, n);
		if (!x->decoded) {
			struct pd_pprof_decode_opts dopts = {
			    .max_decompressed = lim->max_decompressed,
			    .max_memory = lim->max_decoded_memory,
			    .max_ratio = lim->max_ratio,
			    .max_samples = lim->max_samples,
			    .max_sample_labels = lim->max_sample_labels,
			    .legacy_max_depth = lim->legacy_max_depth,
			    .legacy_max_line = lim->legacy_max_line,
			    .legacy_max_maps = lim->legacy_max_maps};
			int rc = pd_pprof_decode(&x->decoded, x->pprof, x->len, &dopts, err);
			if (rc) {
				status = rc == PD_ENOMEM ? 500 : rc == PD_ETOOBIG ? 413 : 400;
				goto fail;
			}
		}
		struct pd_pprof_profile *p = x->decoded;
		x->decoded = NULL; /* the appender's now */
		int rc = pd_storage_append_gzip(app, tl, n, x->t_ms, x->pprof, x->len, p, x->gz,
					     x->gzlen, err);
		if (rc) {
			status = rc == PD_ETOOBIG ? 413 : rc == PD_EINVAL ? 400 : 500;
			goto fail;
		}
		*bytes += x->len;
	}
	int rc = pd_storage_commit(app, err);
	app = NULL;
	if (rc)
		return rc == PD_EINVAL || rc == PD_ELIMIT ? 400 : rc == PD_EFULL ? 503 : 500;
	return 0;
fail:
	pd_storage_rollback(app);
	return status;
}

/* Stores b for r and counts it; answers the error itself. 0 on success. */
static int store(struct api_req *r, struct api_resp *w, int json, struct pd_ingest_batch *b,
		 const struct pd_ingest_limits *lim)
{
	struct pd_api_server *s = r->srv;
	struct pd_err err = {0};
	size_t bytes = 0;
	int ep = api_ingest_endpoint(r->handler);
	unsigned st = store_batch(r, b, lim, &bytes, &err);
	if (st) {
		count_refused(s, ep, b->format, API_INGEST_STORE, 1);
		char msg[PD_ERR_MSG_MAX + 64];
		snprintf(msg, sizeof(msg), "%s%s", err.msg,
			 err.code == PD_ELIMIT ? " (--storage.tsdb.max-series)" : "");
		ingest_error(r, w, json,
			     st == 503	 ? &C_UNAVAILABLE
			     : st == 500 ? &C_INTERNAL
					 : &C_INVALID,
			     st, msg);
		pd_log_warn("api", "a push was not stored", "endpoint=%s err=%s",
			    endpoint_names[ep], err.msg);
		return -1;
	}
	int f = format_index(b->format);
	pthread_mutex_lock(&s->m.mu);
	s->m.c.ingest_profiles[ep][f] += b->n;
	s->m.c.ingest_bytes[ep][f] += r->body.len;
	if (b->rejected)
		s->m.c.ingest_refused[ep][f][API_INGEST_PARTIAL] += b->rejected;
	pthread_mutex_unlock(&s->m.mu);
	pd_log_debug("api", "profiles pushed", "endpoint=%s format=%s profiles=%zu bytes=%zu",
		     endpoint_names[ep], b->format ? b->format : "unknown", b->n, bytes);
	return 0;
}

/* A converter's failure answered: 400, 413 for a limit, 415 for a format profd
 * does not read. */
static void convert_failed(struct api_req *r, struct api_resp *w, int json, int rc,
			   const struct pd_ingest_batch *b, const struct pd_err *err)
{
	struct pd_api_server *s = r->srv;
	int ep = api_ingest_endpoint(r->handler);
	if (rc == PD_ETOOBIG) {
		count_refused(s, ep, b->format,
			      b->limit_hit ? API_INGEST_LIMIT0 + b->limit_hit
					   : API_INGEST_LIMIT0 + PD_INGEST_LIMIT_DECOMPRESSED,
			      1);
		/* a limit: Connect's invalid_argument, not resource_exhausted, so that
		 * Alloy does not send the same profile again and again */
		ingest_error(r, w, json, &C_INVALID, r->handler == H_PUSH_V1 ? 400 : 413,
			     err->msg);
	} else if (rc == PD_EINCOMPAT) {
		count_refused(s, ep, b->format, API_INGEST_UNSUPPORTED, 1);
		ingest_error(r, w, json, &C_INVALID, 415, err->msg);
	} else if (rc == PD_ENOMEM) {
		count_refused(s, ep, b->format, API_INGEST_MALFORMED, 1);
		ingest_error(r, w, json, &C_INTERNAL, 500, err->msg);
	} else {
		count_refused(s, ep, b->format, API_INGEST_MALFORMED, 1);
		ingest_error(r, w, json, &C_INVALID, 400, err->msg);
	}
}

/* ---- the endpoints ----------------------------------------------------------------- */

void api_ingest(struct api_req *r, struct api_resp *w)
{
	struct pd_ingest_limits lim = limits_of(r->srv);
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	const uint8_t *data;
	size_t len;
	uint8_t *owned = NULL;
	const char *fmt = api_param(r, "format");
	if (body_of(r, w, 0, &data, &len, &owned, &fmt))
		return;
	struct pd_ingest_params q = {
	    .name = api_param(r, "name"),
	    .from = api_param(r, "from"),
	    .until = api_param(r, "until"),
	    .sample_rate = api_param(r, "sampleRate"),
	    .spy_name = api_param(r, "spyName"),
	    .units = api_param(r, "units"),
	    .aggregation_type = api_param(r, "aggregationType"),
	    .format = fmt,
	    .content_type = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_CONTENT_TYPE),
	    .now_ms = r->now_ms,
	};
	int rc = pd_ingest_pyroscope(&q, data, len, &lim, &b, &err);
	if (rc)
		convert_failed(r, w, 0, rc, &b, &err);
	else if (!store(r, w, 0, &b, &lim))
		w->status = 200; /* Pyroscope answers an empty 200 */
	pd_ingest_batch_fini(&b);
	free(owned);
}

void api_push_v1(struct api_req *r, struct api_resp *w)
{
	struct pd_ingest_limits lim = limits_of(r->srv);
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_TYPE);
	int json = is_json_ct(ct);
	const char *fmt = json ? "json" : "proto";
	if (!json && !(ct && (strncasecmp(ct, "application/proto", 17) == 0 ||
			      strncasecmp(ct, "application/x-protobuf", 22) == 0))) {
		count_refused(r->srv, API_INGEST_EP_PUSH, NULL, API_INGEST_UNSUPPORTED, 1);
		char msg[256];
		snprintf(msg, sizeof(msg),
			 "Content-Type %.64s is not served: send application/proto or "
			 "application/json (Connect's unary protocol; gRPC is not served)",
			 ct ? ct : "(none)");
		w->accept_post = "application/proto, application/json";
		json_error(w, &C_UNIMPLEMENTED, 415, msg);
		return;
	}
	const uint8_t *data;
	size_t len;
	uint8_t *owned = NULL;
	if (body_of(r, w, json, &data, &len, &owned, &fmt))
		return;
	int rc = pd_ingest_connect_push(data, len, json, &lim, r->now_ms, &b, &err);
	b.format = fmt; /* counted by encoding: proto or json */
	if (rc)
		convert_failed(r, w, json, rc, &b, &err);
	else if (!store(r, w, json, &b, &lim)) {
		/* an empty PushResponse */
		w->status = 200;
		w->content_type = json ? "application/json" : "application/proto";
		if (json)
			jput(w, "{}");
	}
	pd_ingest_batch_fini(&b);
	free(owned);
}

void api_otlp(struct api_req *r, struct api_resp *w)
{
	struct pd_ingest_limits lim = limits_of(r->srv);
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_TYPE);
	int json = is_json_ct(ct);
	const char *fmt = json ? "json" : "proto";
	if (!json && !(ct && (strncasecmp(ct, "application/x-protobuf", 22) == 0 ||
			      strncasecmp(ct, "application/protobuf", 20) == 0))) {
		count_refused(r->srv, API_INGEST_EP_OTLP, NULL, API_INGEST_UNSUPPORTED, 1);
		char msg[256];
		snprintf(msg, sizeof(msg),
			 "Content-Type %.64s is not served: send application/x-protobuf or "
			 "application/json (OTLP/HTTP)",
			 ct ? ct : "(none)");
		otlp_error(w, 0, &C_INVALID, 415, msg);
		return;
	}
	const uint8_t *data;
	size_t len;
	uint8_t *owned = NULL;
	if (body_of(r, w, json, &data, &len, &owned, &fmt))
		return;
	int rc = pd_ingest_otlp(data, len, json, &lim, r->now_ms, &b, &err);
	b.format = fmt;
	if (rc)
		convert_failed(r, w, json, rc, &b, &err);
	else if (!store(r, w, json, &b, &lim)) {
		uint8_t *resp = NULL;
		size_t rlen = 0;
		if (pd_ingest_otlp_response(&b, json, &resp, &rlen, &err)) {
			otlp_error(w, json, &C_INTERNAL, 500, err.msg);
		} else {
			w->status = 200;
			w->content_type = json ? "application/json" : "application/x-protobuf";
			jputn(w, (const char *)resp, rlen);
		}
		free(resp);
	}
	pd_ingest_batch_fini(&b);
	free(owned);
}
