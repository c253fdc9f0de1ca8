/* push.c: POST /api/v1/profiles, for jobs too short-lived to be scraped: the
 * body is a pprof file (gzip or raw protobuf), or a multipart/form-data upload
 * with a file field; the labels parameter names the series. The profile is
 * decoded and validated as a scraped one is, and stored as the uncompressed
 * protobuf at its time_nanos (or the time parameter). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "api_int.h"
#include "profd/pprof.h"

/* The first occurrence of needle in hay, or NULL. */
static const uint8_t *find(const uint8_t *hay, size_t hl, const void *needle, size_t nl)
{
	if (nl == 0 || hl < nl)
		return NULL;
	const uint8_t *n = needle;
	for (const uint8_t *p = hay; p + nl <= hay + hl; p++) {
		p = memchr(p, n[0], (size_t)(hay + hl - p));
		if (!p || p + nl > hay + hl)
			return NULL;
		if (memcmp(p, n, nl) == 0)
			return p;
	}
	return NULL;
}

/* Finds the value of attribute attr (e.g. `name`) in a header value such as
 * `form-data; name="file"; filename="heap.pb.gz"`; copies it into out. */
static int header_attr(const char *h, size_t hl, const char *attr, char *out, size_t size)
{
	size_t al = strlen(attr);
	for (size_t i = 0; i + al + 1 < hl; i++) {
		if ((i == 0 || h[i - 1] == ';' || h[i - 1] == ' ' || h[i - 1] == '\t') &&
		    strncasecmp(h + i, attr, al) == 0 && h[i + al] == '=') {
			const char *v = h + i + al + 1;
			const char *end = h + hl;
			size_t n = 0;
			if (*v == '"') {
				v++;
				while (v + n < end && v[n] != '"')
					n++;
			} else {
				while (v + n < end && v[n] != ';' && v[n] != ' ' && v[n] != '\r')
					n++;
			}
			if (n >= size)
				n = size - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 1;
		}
	}
	return 0;
}

/* Splits a multipart/form-data body: the first part with a filename (or named
 * file or profile) is the profile; `labels` and `time` fields become
 * parameters (after those of the URL, which win). */
static int multipart(struct api_req *r, const char *ct, const uint8_t **file, size_t *flen)
{
	char boundary[128], delim[140];
	const uint8_t *b = r->body.data;
	size_t len = r->body.len;
	if (!header_attr(ct, strlen(ct), "boundary", boundary, sizeof(boundary)) || !boundary[0])
		return -1;
	int dl = snprintf(delim, sizeof(delim), "--%s", boundary);
	const uint8_t *p = find(b, len, delim, (size_t)dl);
	*file = NULL;
	while (p) {
		p += dl;
		size_t rest = len - (size_t)(p - b);
		if (rest >= 2 && p[0] == '-' && p[1] == '-')
			break;
		if (rest < 2 || p[0] != '\r' || p[1] != '\n')
			return -1;
		p += 2;
		rest -= 2;
		const uint8_t *hend = find(p, rest, "\r\n\r\n", 4);
		if (!hend)
			return -1;
		const uint8_t *data = hend + 4;
		/* the part ends at CRLF + delimiter */
		char end_delim[144];
		int el = snprintf(end_delim, sizeof(end_delim), "\r\n%s", delim);
		const uint8_t *next = find(data, len - (size_t)(data - b), end_delim, (size_t)el);
		if (!next)
			return -1;
		char name[64] = "", filename[256] = "";
		int has_filename = 0;
		for (const uint8_t *h = p; h < hend;) {
			const uint8_t *eol = find(h, (size_t)(hend - h) + 2, "\r\n", 2);
			size_t hl = (size_t)((eol ? eol : hend) - h);
			if (hl > 20 &&
			    strncasecmp((const char *)h, "Content-Disposition:", 20) == 0) {
				header_attr((const char *)h + 20, hl - 20, "name", name,
				            sizeof(name));
				has_filename = header_attr((const char *)h + 20, hl - 20,
				                           "filename", filename, sizeof(filename));
			}
			h = eol ? eol + 2 : hend;
		}
		size_t dlen = (size_t)(next - data);
		if (!*file &&
		    (has_filename || strcmp(name, "file") == 0 || strcmp(name, "profile") == 0)) {
			*file = data;
			*flen = dlen;
		} else if (strcmp(name, "labels") == 0 || strcmp(name, "time") == 0) {
			if (api_param_add(r, name, strlen(name), (const char *)data,
			                  strnlen((const char *)data, dlen)))
				return -1;
		}
		p = next + 2;
	}
	return *file ? 0 : -1;
}

void api_push(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct pd_labels *ls = NULL;
	struct pd_pprof_profile *p = NULL;
	struct pd_tsdb_label *tl = NULL;
	uint8_t *raw = NULL;
	struct pd_err err = {0};
	int ok = 0;
	const uint8_t *data = r->body.data;
	size_t len = r->body.len;
	const char *ct =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
		if (multipart(r, ct, &data, &len)) {
			api_bad_param(w, "file",
			              "the multipart body has no file part (send the profile as a "
			              "field named file)");
			goto out;
		}
	}
	if (!data || len == 0) {
		api_bad_param(w, "file",
		              "the request has no profile: send the pprof file as the body");
		goto out;
	}
	const char *lt = api_param(r, "labels");
	if (!lt || !*lt) {
		api_bad_param(w, "labels",
		              "the labels of the series are required, e.g. "
		              "heap{job=\"batch\",instance=\"host-1\"}");
		goto out;
	}
	if (pd_labels_parse(&ls, lt, NULL, &err)) {
		api_bad_param(w, "labels", "%s", err.msg);
		goto out;
	}
	if (!pd_labels_get(ls, PD_LABELS_METRIC_NAME)) {
		api_bad_param(w, "labels",
		              "the labels must name the profile type, e.g. heap{job=\"x\"}");
		goto out;
	}
	size_t n = pd_labels_len(ls);
	for (size_t i = 0; i < n; i++) {
		const char *name = pd_labels_at(ls, i)->name;
		if (strncmp(name, "__", 2) == 0 && strcmp(name, PD_LABELS_METRIC_NAME) != 0) {
			api_bad_param(w, "labels",
			              "label names starting with __ are reserved: \"%s\"", name);
			goto out;
		}
	}
	struct pd_pprof_decode_opts dopts = {.max_decompressed = s->o.max_decompressed};
	int rc = pd_pprof_decode(&p, data, len, &dopts, &err);
	if (rc == PD_ETOOBIG) {
		api_error(w, 413, "bad_data", "the profile is too large: %s", err.msg);
		goto out;
	}
	if (rc == PD_ENOMEM) {
		api_internal(w, "decoding the profile failed", rc, &err);
		goto out;
	}
	if (rc) {
		api_bad_param(w, "file", "not a valid pprof profile: %s", err.msg);
		goto out;
	}
	int64_t t;
	int64_t tn = pd_pprof_time_nanos(p);
	if (api_time_param(r, w, "time", tn / 1000000, &t))
		goto out;
	if (!api_param(r, "time") && tn == 0) {
		api_bad_param(w, "time", "the profile has no time_nanos: give the time parameter");
		goto out;
	}
	/* stored as the validated, uncompressed protobuf, as a scraped profile is */
	const uint8_t *store = data;
	size_t store_len = len;
	if (pd_gzip_is(data, len)) {
		size_t max = s->o.max_decompressed ? s->o.max_decompressed
		                                   : PD_PPROF_DEFAULT_MAX_DECOMPRESSED;
		if ((rc = pd_gunzip(data, len, max, &raw, &store_len, &err))) {
			api_bad_param(w, "file", "%s", err.msg);
			goto out;
		}
		store = raw;
	}
	tl = calloc(n ? n : 1, sizeof(*tl));
	if (!tl) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		tl[i].name = pd_labels_at(ls, i)->name;
		tl[i].value = pd_labels_at(ls, i)->value;
	}
	struct pd_tsdb_appender *app = pd_tsdb_appender(s->o.db);
	if (!app) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	/* the store takes the decoded profile, so it does not decode it again, and a
	 * gzip upload as it came, which its WAL keeps instead of compressing again */
	rc = pd_tsdb_append_gzip(app, tl, n, t, store, store_len, p, raw ? data : NULL,
				 raw ? len : 0, &err);
	p = NULL;
	if (rc) {
		pd_tsdb_rollback(app);
		if (rc == PD_ETOOBIG)
			api_error(w, 413, "bad_data", "%s", err.msg);
		else if (rc == PD_EINVAL)
			api_error(w, 400, "bad_data", "%s", err.msg);
		else
			api_internal(w, "storing the profile failed", rc, &err);
		goto out;
	}
	if ((rc = pd_tsdb_commit(app, &err))) {
		if (rc == PD_EINVAL) /* out of order against a concurrent append */
			api_error(w, 400, "bad_data", "%s", err.msg);
		else
			api_internal(w, "storing the profile failed", rc, &err);
		goto out;
	}
	pd_log_debug("api", "msg=\"profile pushed\" time=%lld bytes=%zu", (long long)t, store_len);
	jput(w, "{\"labels\":");
	jlabels(w, ls);
	jput(w, ",\"timestamp\":");
	ji64(w, t);
	jput(w, ",\"bytes\":");
	ju64(w, store_len);
	jput(w, "}");
	ok = 1;
	pthread_mutex_lock(&s->m.mu);
	s->m.c.pushed++;
	s->m.c.pushed_bytes += store_len;
	pthread_mutex_unlock(&s->m.mu);
out:
	if (!ok) {
		pthread_mutex_lock(&s->m.mu);
		s->m.c.push_failed++;
		pthread_mutex_unlock(&s->m.mu);
	}
	free(tl);
	free(raw);
	pd_pprof_destroy(p);
	pd_labels_destroy(ls);
}
