/* admin.c: the TSDB admin endpoints, as Prometheus has them under
 * /api/v1/admin/tsdb/: delete_series (tombstones for the samples of the series
 * any match[] selects in [start, end]), clean_tombstones (blocks rewritten
 * without deleted samples) and snapshot (a copy of the store under
 * <data>/snapshots/). They change or copy the store, so they answer only when the
 * daemon enables them (--web.enable-admin-api); otherwise 503 unavailable
 * "admin APIs disabled", as Prometheus answers. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_int.h"

/* 1 when the admin API may answer; else sets Prometheus's refusal. */
static int admin_enabled(struct api_req *r, struct api_resp *w)
{
	if (r->srv->o.enable_admin_api)
		return 1;
	api_error(w, 503, "unavailable", "admin APIs disabled");
	return 0;
}

/* 204 No Content: no envelope, no body. */
static void no_content(struct api_resp *w)
{
	w->json = 0;
	w->body.len = 0;
	w->status = 204;
	w->content_type = NULL;
}

/* A failed admin operation: one the store cannot do in its mode (ClickHouse)
 * answers 501 with the store's words; anything else is an internal error. */
static void admin_failed(struct api_resp *w, const char *what, int rc, const struct pd_err *err)
{
	if (rc == PD_EINCOMPAT)
		api_error(w, 501, "unavailable", "%s", err->msg);
	else
		api_internal(w, what, rc, err);
}

void api_admin_delete_series(struct api_req *r, struct api_resp *w)
{
	const char **vals = NULL;
	size_t nv = 0;
	int64_t start, end;
	if (!admin_enabled(r, w))
		return;
	if (api_params(r, "match[]", &vals, &nv)) {
		api_error(w, 500, "internal", "out of memory");
		return;
	}
	if (!nv) {
		free(vals);
		api_bad_param(w, "match[]", "no match[] parameter provided");
		return;
	}
	/* as Prometheus: without start and end, all time */
	if (api_time_param(r, w, "start", INT64_MIN, &start) ||
	    api_time_param(r, w, "end", INT64_MAX, &end)) {
		free(vals);
		return;
	}
	if (end < start) {
		free(vals);
		api_bad_param(w, "end", "end timestamp must not be before start time");
		return;
	}
	/* every selector is parsed before anything is deleted */
	struct api_sel *sels = calloc(nv, sizeof(*sels));
	size_t ns = 0;
	int failed = !sels;
	if (!sels)
		api_error(w, 500, "internal", "out of memory");
	for (size_t i = 0; i < nv && !failed; i++) {
		if (api_sel_parse(w, "match[]", vals[i], &sels[i]))
			failed = 1;
		else
			ns++;
	}
	for (size_t i = 0; i < ns && !failed; i++) {
		struct pd_err err = {0};
		int rc = pd_storage_delete(r->srv->o.db, sels[i].m, sels[i].nm, start, end, &err);
		if (rc) {
			admin_failed(w, "deleting series", rc, &err);
			failed = 1;
		}
	}
	for (size_t i = 0; i < ns; i++)
		api_sel_fini(&sels[i]);
	free(sels);
	free(vals);
	if (failed)
		return;
	pd_log_info("api", "deleted series", "selectors=%zu start=%lld end=%lld", ns,
	            (long long)start, (long long)end);
	no_content(w);
}

void api_admin_clean_tombstones(struct api_req *r, struct api_resp *w)
{
	struct pd_err err = {0};
	if (!admin_enabled(r, w))
		return;
	int rc = pd_storage_clean_tombstones(r->srv->o.db, &err);
	if (rc) {
		admin_failed(w, "cleaning tombstones", rc, &err);
		return;
	}
	no_content(w);
}

/* skip_head as Go's strconv.ParseBool reads it. */
static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
	for (size_t i = 0; i < 6; i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

void api_admin_snapshot(struct api_req *r, struct api_resp *w)
{
	struct pd_err err = {0};
	char name[PD_STORAGE_SNAPSHOT_NAME_MAX];
	int skip_head = 0;
	if (!admin_enabled(r, w))
		return;
	const char *sh = api_param(r, "skip_head");
	if (sh && *sh && parse_bool(sh, &skip_head)) {
		api_bad_param(w, "skip_head", "cannot parse \"%s\" as a boolean (true or false)",
		              sh);
		return;
	}
	int rc = pd_storage_snapshot(r->srv->o.db, skip_head, name, &err);
	if (rc) {
		admin_failed(w, "creating the snapshot", rc, &err);
		return;
	}
	pd_log_info("api", "snapshot created", "name=%s skip_head=%s", name,
	            skip_head ? "true" : "false");
	jput(w, "{\"name\":");
	jstr(w, name);
	jput(w, "}");
}
