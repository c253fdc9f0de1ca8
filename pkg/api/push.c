/* push.c: POST /api/v1/profiles, for jobs too short-lived to be scraped: the
 * body is a pprof file (gzip or raw protobuf), or a multipart/form-data upload
 * with a file field; the labels parameter names the series. The profile is
 * decoded and validated as a scraped one is, and stored as the uncompressed
 * protobuf at its time_nanos (or the time parameter). What it may cost follows
 * from its real size: a gzip body may inflate only so many times, and the
 * decoded profile has a memory budget and limits on its samples and labels, so a
 * profile over them is refused (4xx) before anything is stored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "api_int.h"
#include "profd/pprof.h"

/* The flag that sets a limit on pushed profiles, for refusals. */
static const char *limit_flag(int limit)
{
	switch (limit) {
	case PD_PPROF_LIMIT_RATIO:
		return "--storage.tsdb.max-profile-gzip-ratio";
	case PD_PPROF_LIMIT_MEMORY:
		return "--storage.tsdb.max-profile-decoded-size";
	case PD_PPROF_LIMIT_SAMPLES:
		return "--storage.tsdb.max-profile-samples";
	default:
		return "--storage.tsdb.max-profile-sample-labels";
	}
}

void api_push(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct pd_labels *ls = NULL;
	struct pd_pprof_profile *p = NULL;
	struct pd_storage_label *tl = NULL;
	uint8_t *raw = NULL;
	struct pd_err err = {0};
	int ok = 0;
	const uint8_t *data = r->body.data;
	size_t len = r->body.len;
	const char *ct =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
		if (api_multipart(r, ct, &data, &len)) {
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
	/* no more than the store takes: it refuses a larger protobuf anyway */
	size_t maxd = s->o.max_decompressed ? s->o.max_decompressed : PD_STORAGE_DEFAULT_MAX_PROFILE;
	int hit = 0, legacy = 0;
	struct pd_pprof_decode_opts dopts = {.legacy = &legacy,
	                                     .max_decompressed = maxd,
	                                     .max_memory = s->o.push_max_memory,
	                                     .max_ratio = s->o.push_max_ratio,
	                                     .max_samples = s->o.push_max_samples,
	                                     .max_sample_labels = s->o.push_max_sample_labels,
	                                     .legacy_max_depth = s->o.ingest.legacy_max_depth,
	                                     .legacy_max_line = s->o.ingest.legacy_max_line,
	                                     .legacy_max_maps = s->o.ingest.legacy_max_maps,
	                                     .limit_hit = &hit};
	int rc = pd_pprof_decode(&p, data, len, &dopts, &err);
	if (hit)
		api_push_refused(s, hit);
	if (hit == PD_PPROF_LIMIT_SAMPLE_LABELS) {
		api_bad_param(w, "file", "the profile exceeds a limit: %s (%s)", err.msg,
		              limit_flag(hit));
		goto out;
	}
	if (hit && hit != PD_PPROF_LIMIT_DECOMPRESSED) {
		api_error(w, 413, "bad_data", "the profile is too large: %s (%s)", err.msg,
		          limit_flag(hit));
		goto out;
	}
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
		struct pd_inflate_opts io = {
		    .format = PD_INFLATE_GZIP, .max = maxd, .max_ratio = s->o.push_max_ratio};
		if ((rc = pd_inflate(data, len, &io, &raw, &store_len, &err))) {
			api_bad_param(w, "file", "%s", err.msg);
			goto out;
		}
		store = raw;
	}
	if (legacy) {
		/* a legacy format (pprof.md): stored as its conversion to profile.proto */
		free(raw);
		raw = NULL;
		if ((rc = pd_pprof_encode(p, 0, &raw, &store_len, &err))) {
			api_internal(w, "encoding the converted profile failed", rc, &err);
			goto out;
		}
		store = raw;
	}
	tl = calloc(n + 1, sizeof(*tl)); /* and the tenant's */
	if (!tl) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		tl[i].name = pd_labels_at(ls, i)->name;
		tl[i].value = pd_labels_at(ls, i)->value;
	}
	n = api_tenant_label_add(r, tl, n);
	struct pd_storage_appender *app = pd_storage_appender(s->o.db);
	if (!app) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	/* the store takes the decoded profile, so it does not decode it again, and a
	 * gzip upload as it came, which its WAL keeps instead of compressing again */
	rc = pd_storage_append_gzip(app, tl, n, t, store, store_len, p, raw && !legacy ? data : NULL,
				 raw && !legacy ? len : 0, &err);
	p = NULL;
	if (rc) {
		pd_storage_rollback(app);
		if (rc == PD_ETOOBIG)
			api_error(w, 413, "bad_data", "%s", err.msg);
		else if (rc == PD_EINVAL)
			api_error(w, 400, "bad_data", "%s", err.msg);
		else
			api_internal(w, "storing the profile failed", rc, &err);
		goto out;
	}
	if ((rc = pd_storage_commit(app, &err))) {
		if (rc == PD_EINVAL) /* out of order against a concurrent append */
			api_error(w, 400, "bad_data", "%s", err.msg);
		else if (rc == PD_EFULL) /* the ClickHouse spool: try again later */
			api_error(w, 503, "unavailable", "%s", err.msg);
		else if (rc == PD_ELIMIT) /* the head's series limit: not retried */
			api_error(w, 400, "bad_data", "%s (--storage.tsdb.max-series)", err.msg);
		else
			api_internal(w, "storing the profile failed", rc, &err);
		goto out;
	}
	pd_log_debug("api", "profile pushed", "time=%lld bytes=%zu", (long long)t, store_len);
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
