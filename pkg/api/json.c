/* json.c: writing the API's JSON: strings (always through pd_buf_json_string,
 * which replaces bytes that are not UTF-8), numbers, label sets, and the
 * error and warning parts of Prometheus's response envelope. Writers keep a
 * sticky error in the response, so a handler checks once at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

void jputn(struct api_resp *w, const char *s, size_t n)
{
	if (!w->berr)
		w->berr = pd_buf_append(&w->body, s, n);
}

void jput(struct api_resp *w, const char *s)
{
	jputn(w, s, strlen(s));
}

void jprintf(struct api_resp *w, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	if (w->berr)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		w->berr = PD_EINVAL;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		jputn(w, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		w->berr = PD_ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	jputn(w, big, (size_t)n);
	free(big);
}

void jstr(struct api_resp *w, const char *s)
{
	if (!w->berr)
		w->berr = pd_buf_json_string(&w->body, s ? s : "");
}

void jstrn(struct api_resp *w, const char *s, size_t len)
{
	if (!w->berr)
		w->berr = pd_buf_json_stringn(&w->body, s, len);
}

void ji64(struct api_resp *w, int64_t v)
{
	jprintf(w, "%lld", (long long)v);
}

void ju64(struct api_resp *w, uint64_t v)
{
	jprintf(w, "%llu", (unsigned long long)v);
}

void jdbl(struct api_resp *w, double v)
{
	if (!isfinite(v))
		v = 0;
	if (v == 0) {
		jput(w, "0");
		return;
	}
	jprintf(w, "%.6g", v);
}

void jlabels_tsdb(struct api_resp *w, const struct pd_storage_label *ls, size_t n)
{
	jput(w, "{");
	for (size_t i = 0, k = 0; i < n; i++) {
		if (api_tenant_hidden(ls[i].name))
			continue; /* the tenant's label is never shown */
		if (k++)
			jput(w, ",");
		jstr(w, ls[i].name);
		jput(w, ":");
		jstr(w, ls[i].value);
	}
	jput(w, "}");
}

void jlabels(struct api_resp *w, const struct pd_labels *ls)
{
	jput(w, "{");
	size_t n = ls ? pd_labels_len(ls) : 0;
	for (size_t i = 0; i < n; i++) {
		const struct pd_label *l = pd_labels_at(ls, i);
		if (i)
			jput(w, ",");
		jstr(w, l->name);
		jput(w, ":");
		jstr(w, l->value);
	}
	jput(w, "}");
}

static void verror(struct api_resp *w, unsigned status, const char *type, const char *prefix,
                   const char *fmt, va_list ap)
{
	if (w->error_set)
		return;
	w->error_set = 1;
	w->status = status;
	w->error_type = type;
	size_t n = (size_t)snprintf(w->error, sizeof(w->error), "%s", prefix);
	if (n < sizeof(w->error))
		vsnprintf(w->error + n, sizeof(w->error) - n, fmt, ap);
}

void api_error(struct api_resp *w, unsigned status, const char *type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(w, status, type, "", fmt, ap);
	va_end(ap);
}

void api_bad_param(struct api_resp *w, const char *name, const char *fmt, ...)
{
	char prefix[160];
	va_list ap;
	snprintf(prefix, sizeof(prefix), "invalid parameter \"%s\": ", name);
	va_start(ap, fmt);
	verror(w, 400, "bad_data", prefix, fmt, ap);
	va_end(ap);
}

const char *api_ch_reason(const struct pd_err *err, int *len)
{
	if (!err || strncmp(err->msg, "clickhouse", 10) != 0)
		return NULL;
	const char *m = err->msg;
	if (strncmp(m, "clickhouse: clickhouse ", 23) == 0)
		m += 12; /* pkg/tsdb's prefix before the client's own */
	const char *st = strstr(m, " (statement ");
	*len = st ? (int)(st - m) : (int)strlen(m);
	return m;
}

void api_internal(struct api_resp *w, const char *what, int rc, const struct pd_err *err)
{
	int code = rc < 0 ? rc : PD_EIO;
	pd_log_error("api", what, "err=%s", err && err->msg[0] ? err->msg : pd_strerror(code));
	/* A read of ClickHouse: the client gets ClickHouse's reason (the statement
	 * stays in the log), and 503 when ClickHouse did not answer, as
	 * Prometheus's "unavailable". */
	int n = 0;
	const char *m = api_ch_reason(err, &n);
	if (m && code == PD_EUNAVAIL) {
		api_error(w, 503, "unavailable", "%s: ClickHouse did not answer: %.*s", what, n, m);
		return;
	}
	if (m) {
		api_error(w, 500, "internal", "%s: %.*s", what, n, m);
		return;
	}
	api_error(w, 500, "internal", "%s: %s", what, pd_strerror(code));
}

void api_warn(struct api_resp *w, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < w->nwarnings; i++)
		if (strcmp(w->warnings[i], buf) == 0)
			return; /* said once (a report per group may repeat it) */
	char **nw = realloc(w->warnings, (w->nwarnings + 1) * sizeof(*nw));
	if (!nw)
		return;
	w->warnings = nw;
	if ((nw[w->nwarnings] = strdup(buf)))
		w->nwarnings++;
}
