/* query.c: the query endpoints. /api/v1/query_range lists the timestamps of the
 * series a selector picks, reading timestamp chunks only. /api/v1/query opens
 * profiles: one (mode=single), a merge of every matching profile in a range
 * (mode=merge) or the difference of two such sides (mode=diff), and reports on
 * the result; here it reads and checks its parameters and puts the steps
 * together: the sides are loaded in query_load.c, filtered and split by sample
 * labels in query_samples.c, split by series labels in query_groupby.c, and
 * reported on in query_report.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_int.h"

/* ---- query_range ------------------------------------------------------------ */

void api_query_range(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct api_sel sel = {0};
	struct pd_storage_result *res = NULL;
	struct pd_err err = {0};
	int64_t start, end;
	uint64_t limit;
	if (api_sel_parse(w, "query", api_param(r, "query"), &sel) ||
	    api_range_params(r, w, "", &start, &end) || api_uint_param(r, w, "limit", 0, &limit))
		goto out;
	if (api_sel_scope(r, &sel)) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	size_t want = limit && limit < SIZE_MAX ? (size_t)limit + 1 : 0;
	int rc = pd_storage_select(s->o.db, sel.m, sel.nm, start, end, want, &res, &err);
	if (rc) {
		api_internal(w, "listing series failed", rc, &err);
		goto out;
	}
	size_t n = res->nseries;
	if (limit && n > limit) {
		n = (size_t)limit;
		api_warn(w, "results truncated due to limit");
	}
	jput(w, "[");
	for (size_t i = 0; i < n && !w->berr; i++) {
		const struct pd_storage_series *se = &res->series[i];
		jput(w, i ? ",{\"labels\":" : "{\"labels\":");
		jlabels_tsdb(w, se->labels, se->nlabels);
		jput(w, ",\"timestamps\":[");
		for (size_t k = 0; k < se->nts; k++) {
			if (k)
				jput(w, ",");
			ji64(w, se->ts[k]);
		}
		jput(w, "]}");
	}
	jput(w, "]");
out:
	pd_storage_result_destroy(res);
	api_sel_fini(&sel);
}

/* ---- /api/v1/query --------------------------------------------------------------- */

/* Default and largest number of groups group_by_sample_label returns. */
#define DEFAULT_SAMPLE_GROUPS 50
#define MAX_SAMPLE_GROUPS 1000
/* Default and largest number of groups group_by returns. */
#define DEFAULT_SERIES_GROUPS 50
#define MAX_SERIES_GROUPS 1000

static int lookup(const char *v, const char *const *names, int n, int def)
{
	if (!v || !*v)
		return def;
	for (int i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	return -1;
}

void api_query(struct api_req *r, struct api_resp *w)
{
	static const char *const modes[] = {"single", "merge", "diff"};
	static const char *const reports[] = {"meta",  "top",    "flamegraph", "proto",
	                                      "tags", "folded", "speedscope", "dot", "svg"};
	struct pd_api_server *s = r->srv;
	struct side sides[2];
	struct pd_pprof_profile *diff = NULL, *focused = NULL, *symbolized = NULL;
	int64_t sym_deadline = 0; /* one deadline for every symbolization of the query */
	struct tag_filters tf = {0};
	struct api_group_by gb = {0};
	struct groups groups = {0};
	memset(sides, 0, sizeof(sides));
	size_t nsides = 0;
	int mode = lookup(api_param(r, "mode"), modes, 3, MODE_SINGLE);
	int report = lookup(api_param(r, "report"), reports, 9, REPORT_META);
	const char *group_key = api_param(r, "group_by_sample_label");
	uint64_t limit, maxp, max_groups, max_series_groups;
	int64_t min_total;
	double nodefraction;
	if (mode < 0) {
		api_bad_param(w, "mode", "unknown mode \"%s\": use single, merge or diff",
		              api_param(r, "mode"));
		return;
	}
	if (report < 0) {
		api_bad_param(w, "report",
		              "unknown report \"%s\": use meta, top, flamegraph, tags, proto, "
		              "folded, speedscope, dot or svg",
		              api_param(r, "report"));
		return;
	}
	if (api_uint_param(r, w, "limit", 0, &limit) ||
	    api_double_param(r, w, "nodefraction", 0, 0, 1, &nodefraction) ||
	    api_int_param(r, w, "min_total", 0, &min_total) ||
	    api_uint_param(r, w, "max_profiles", s->o.max_merge_profiles, &maxp) ||
	    api_uint_param(r, w, "sample_group_limit", DEFAULT_SAMPLE_GROUPS, &max_groups) ||
	    api_uint_param(r, w, "group_limit", DEFAULT_SERIES_GROUPS, &max_series_groups))
		return;
	if (report == REPORT_DOT || report == REPORT_SVG) {
		struct pd_pprof_graph_opts go;
		if (api_callgraph_params(r, w, &go))
			return;
	}
	if (max_groups == 0 || max_groups > MAX_SAMPLE_GROUPS) {
		api_bad_param(w, "sample_group_limit", "must be between 1 and %d",
		              MAX_SAMPLE_GROUPS);
		return;
	}
	if (max_series_groups == 0 || max_series_groups > MAX_SERIES_GROUPS) {
		api_bad_param(w, "group_limit", "must be between 1 and %d", MAX_SERIES_GROUPS);
		return;
	}
	if (group_key && !*group_key)
		group_key = NULL;
	if (group_key && mode == MODE_DIFF) {
		api_bad_param(
		    w, "group_by_sample_label",
		    "groups are made of one profile or a merge: use mode=single or merge");
		return;
	}
	if ((report == REPORT_FOLDED || report == REPORT_SPEEDSCOPE) && mode == MODE_DIFF) {
		api_bad_param(w, "report",
		              "report=%s shows amounts, and a diff's values are changes: use "
		              "top, flamegraph or proto for a diff",
		              reports[report]);
		return;
	}
	if (group_key && ONE_DOCUMENT(report)) {
		api_bad_param(
		    w, "group_by_sample_label",
		    "report=%s returns one file: use meta, top, flamegraph or tags, or "
		    "tag_focus=%s=^value$ for one group's profile",
		    reports[report], group_key);
		return;
	}
	if (api_group_by_parse(r, w, "group_by", &gb))
		return;
	if (gb.n && mode != MODE_MERGE) {
		api_bad_param(w, "group_by",
		              "group_by splits a merge over a range by series labels: use "
		              "mode=merge (and narrow the selector for a single profile)");
		goto out;
	}
	if (gb.n && ONE_DOCUMENT(report)) {
		api_bad_param(w, "group_by",
		              "report=%s returns one file: use meta, top, flamegraph or tags, "
		              "or a selector on the group's labels for one group's profile",
		              reports[report]);
		goto out;
	}
	if (api_tag_filters_parse(r, w, &tf))
		goto out;
	static const char *const aggs[] = {"", "sum", "avg", "average"};
	int agg = lookup(api_param(r, "aggregation"), aggs, 4, AGG_DEFAULT);
	if (agg < 0) {
		api_bad_param(w, "aggregation",
		              "unknown aggregation \"%s\": use sum or avg (average), or leave it "
		              "out for averages of snapshot types and sums of the rest",
		              api_param(r, "aggregation"));
		goto out;
	}
	if (agg == 3)
		agg = AGG_AVG;
	if (maxp == 0 || maxp > s->o.max_merge_profiles)
		maxp = s->o.max_merge_profiles;
	int64_t lookback = s->o.lookback_ms;
	if (api_duration_param(r, w, "lookback", s->o.lookback_ms, &lookback))
		goto out;

	pthread_mutex_lock(&s->m.mu);
	s->m.c.queries[mode]++;
	pthread_mutex_unlock(&s->m.mu);

	int filtering = tf.nfocus || tf.nignore;
	/* symbolization reads the profile: a stored one is not answered as its bytes */
	int decode = report != REPORT_PROTO || mode != MODE_SINGLE || filtering || s->o.symbolizer;
	if (mode == MODE_DIFF) {
		if (api_side_params(r, w, &sides[0], "a.", mode) ||
		    api_side_params(r, w, &sides[1], "b.", mode))
			goto out;
		nsides = 2;
	} else {
		if (api_side_params(r, w, &sides[0], "", mode))
			goto out;
		nsides = 1;
	}
	sides[0].aggregation = sides[1].aggregation = agg;
	if (gb.n) {
		if (api_load_groups(r, w, &sides[0], &gb, maxp, (size_t)max_series_groups, &tf,
		                    &groups))
			goto out;
		if (groups.n == 0)
			jput(w, "null");
		else
			api_report_series_groups(r, w, report, &gb, &groups, max_series_groups,
			                         &sides[0], group_key, max_groups, limit,
			                         nodefraction, min_total, &sym_deadline);
		goto out;
	}
	for (size_t i = 0; i < nsides; i++) {
		sides[i].lookback = lookback;
		if (api_side_load(r, w, &sides[i], decode, maxp))
			goto out;
	}
	for (size_t i = 0; i < nsides; i++) {
		if (!sides[i].found) {
			if (nsides == 2)
				api_warn(w,
				         "side %c of the diff has no profile, so there is no diff",
				         'a' + (int)i);
			if (FILE_REPORT(report)) {
				w->json = 0;
				w->status = 204;
				w->content_type = NULL;
				pd_buf_fini(&w->body);
				pd_buf_init(&w->body, 0);
			} else {
				jput(w, "null");
			}
			goto out;
		}
	}
	const struct pd_pprof_profile *p = sides[0].prof;
	if (mode == MODE_DIFF) {
		struct pd_err err = {0};
		/* normalize: B scaled to A's totals first, as pprof's -normalize */
		const char *nz = api_param(r, "normalize");
		int normalize = nz && (strcmp(nz, "true") == 0 || strcmp(nz, "1") == 0);
		if (nz && !normalize && strcmp(nz, "false") != 0 && strcmp(nz, "0") != 0 && *nz) {
			api_bad_param(w, "normalize", "\"%s\" is not true or false", nz);
			goto out;
		}
		struct pd_pprof_profile *scaled = NULL;
		if (normalize) {
			int nrc = pd_pprof_normalize(sides[1].prof, sides[0].prof, &scaled, &err);
			if (nrc == PD_EINVAL) {
				api_bad_param(w, "b.query", "the two sides cannot be compared: %s",
				              err.msg);
				goto out;
			}
			if (nrc) {
				api_internal(w, "normalizing the diff failed", nrc, &err);
				goto out;
			}
		}
		int rc = pd_pprof_diff(sides[0].prof, scaled ? scaled : sides[1].prof, &diff, &err);
		pd_pprof_destroy(scaled);
		if (rc == PD_EINCOMPAT || rc == PD_EINVAL) {
			api_bad_param(w, "b.query", "the two sides cannot be compared: %s",
			              err.msg);
			goto out;
		}
		if (rc) {
			api_internal(w, "computing the diff failed", rc, &err);
			goto out;
		}
		p = diff;
	}
	/* once per result, after merging (and the diff), before any report */
	if (api_symbolize(r, w, p, &symbolized, &sides[0].sym, &sym_deadline))
		goto out;
	sides[0].symbolized = s->o.symbolizer != NULL;
	if (symbolized) {
		p = symbolized;
		/* the stored bytes are no longer the answer */
		for (size_t i = 0; i < nsides; i++) {
			free(sides[i].raw);
			sides[i].raw = NULL;
		}
	}
	const struct pd_pprof_profile *whole = p;
	size_t kept = 0;
	if (api_tag_filters_apply(w, &tf, p, &focused, &kept))
		goto out;
	if (focused && kept == 0)
		api_warn(w, tf.nfocus || tf.nignore ? WARN_FILTERED_ALL : WARN_STACKS_ALL);
	api_set_report_names(r, w, sides[0].prof, diff, symbolized, focused);
	if (focused) {
		p = focused;
		/* the stored bytes are no longer the answer */
		for (size_t i = 0; i < nsides; i++) {
			free(sides[i].raw);
			sides[i].raw = NULL;
		}
	}
	if (group_key)
		api_report_groups(r, w, report, group_key, max_groups, p, whole, sides, nsides,
		                  limit, nodefraction, min_total);
	else
		api_one_report(r, w, report, p, whole, sides, nsides, limit, nodefraction,
		               min_total);
out:
	api_groups_fini(&groups);
	api_group_by_fini(&gb);
	api_tag_filters_fini(&tf);
	pd_pprof_destroy(focused);
	pd_pprof_destroy(symbolized);
	pd_pprof_destroy(diff);
	for (size_t i = 0; i < 2; i++)
		api_side_fini(&sides[i]);
}
