/* query_groupby.c: group_by of /api/v1/query: a merge split by series labels,
 * merged group by group with only the heaviest groups kept, and a report on
 * each group; with group_by_sample_label the sample groups nest inside the
 * series groups. */
#include <stdlib.h>
#include <string.h>

#include "query_int.h"

/* ---- group_by: a merge split by series labels --------------------------------- */

static void group_fini(struct group *g)
{
	free(g->avg);
	pd_pprof_destroy(g->focused);
	pd_pprof_destroy(g->whole);
	memset(g, 0, sizeof(*g));
}

/* 1 when a weighs less than b: a smaller total, or as much and later in label
 * order (so of two groups alike the first in label order stays). */
static int group_lighter(const struct group *a, const struct group *b)
{
	if (a->total != b->total)
		return a->total < b->total;
	return a->first > b->first;
}

static int group_first_cmp(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	return a->first < b->first ? -1 : a->first > b->first;
}

void api_groups_fini(struct groups *gs)
{
	for (size_t i = 0; i < gs->n; i++)
		group_fini(&gs->g[i]);
	free(gs->g);
	free(gs->order);
	memset(gs, 0, sizeof(*gs));
}

/* Merges the group of order[first, first + count) into g, filters it and weighs
 * it. 0 (g->nprofiles 0: nothing of it was chosen), MERGE_STOP (a limit cut it:
 * what was merged is in g) or -1 after setting the error. */
static int load_group(struct api_req *r, struct api_resp *w, struct merge_state *m,
                      const int64_t *upto, const size_t *order, struct group *g,
                      const struct tag_filters *tf, size_t *kept)
{
	struct pd_err err = {0};
	int stop = 0, rc;
	m->g = g;
	if ((rc = pd_pprof_merger_create(&m->mg, &err))) {
		api_internal(w, "merging failed", rc, &err);
		return -1;
	}
	rc = api_merge_some(w, m, order, g->first, g->count, upto);
	if (rc == MERGE_STOP)
		stop = 1;
	else if (rc)
		return -1; /* api_load_groups destroys m->mg */
	if (g->nprofiles == 0) {
		pd_pprof_merger_destroy(m->mg);
		m->mg = NULL;
		return stop ? MERGE_STOP : 0;
	}
	rc = pd_pprof_merger_finish(m->mg, &g->whole, &err);
	m->mg = NULL;
	if (rc) {
		api_internal(w, "merging failed", rc, &err);
		return -1;
	}
	if (api_aggregate(w, m->sd->aggregation, &g->whole, g->nprofiles, &g->avg, &g->navg))
		return -1;
	size_t k = 0;
	if (api_tag_filters_apply(w, tf, g->whole, &g->focused, &k))
		return -1;
	*kept += k;
	const struct pd_pprof_profile *p = g->focused ? g->focused : g->whole;
	if (api_sample_index(r, w, p, &g->idx))
		return -1;
	g->total = pd_pprof_total(p, g->idx);
	return stop ? MERGE_STOP : 0;
}

/* group_by: the profiles load_merge would merge (the same first max_profiles
 * by time, the same byte limit), merged per group of series with equal values of
 * gb's labels. Groups are merged one after another and weighed by their total
 * of sample_index (after tag filters); only the max_groups heaviest are kept,
 * so memory holds at most max_groups + 1 merges. gs->n is 0 when nothing
 * matched. */
int api_load_groups(struct api_req *r, struct api_resp *w, struct side *sd,
                    const struct api_group_by *gb, uint64_t max_profiles, size_t max_groups,
                    const struct tag_filters *tf, struct groups *gs)
{
	struct pd_api_server *s = r->srv;
	struct merge_state m = {.s = s, .sd = sd};
	struct group g = {0};
	int64_t *upto = NULL;
	size_t n, take, kept = 0;
	int ret = -1, rc;
	memset(gs, 0, sizeof(*gs));
	if (api_merge_plan(r, w, sd, max_profiles, &upto, &n, &take))
		return -1;
	if (n == 0)
		return 0;
	size_t ns = sd->res->nseries;
	gs->order = malloc(ns * sizeof(*gs->order));
	gs->g = calloc((max_groups < ns ? max_groups : ns) + 1, sizeof(*gs->g));
	if (!gs->order || !gs->g || api_group_sort(gb, sd->res, gs->order)) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	const char *limit_cut = NULL;
	for (size_t i = 0; i < ns && !limit_cut;) {
		size_t j = i + 1;
		while (j < ns && api_group_cmp(gb, &sd->res->series[gs->order[i]],
		                               &sd->res->series[gs->order[j]]) == 0)
			j++;
		g = (struct group){.first = i, .count = j - i};
		i = j;
		rc = load_group(r, w, &m, upto, gs->order, &g, tf, &kept);
		if (rc < 0)
			goto out;
		if (rc == MERGE_STOP)
			limit_cut = m.cut;
		if (g.nprofiles == 0)
			continue;
		if (gs->n < max_groups) {
			gs->g[gs->n++] = g;
		} else {
			size_t light = 0;
			for (size_t k = 1; k < gs->n; k++)
				if (group_lighter(&gs->g[k], &gs->g[light]))
					light = k;
			gs->dropped++;
			if (group_lighter(&gs->g[light], &g)) {
				group_fini(&gs->g[light]);
				gs->g[light] = g;
			} else {
				group_fini(&g);
			}
		}
		memset(&g, 0, sizeof(g));
	}
	qsort(gs->g, gs->n, sizeof(*gs->g), group_first_cmp);
	api_merge_warn_cut(s, w, sd, n, limit_cut ? limit_cut : take < n ? "max_profiles" : NULL);
	if ((tf->nfocus || tf->nignore || tf->names) && gs->n && kept == 0)
		api_warn(w, tf->nfocus || tf->nignore ? WARN_FILTERED_ALL : WARN_STACKS_ALL);
	if (gs->n)
		sd->found = 1;
	ret = 0;
out:
	pd_pprof_merger_destroy(m.mg);
	group_fini(&g);
	free(upto);
	if (ret)
		api_groups_fini(gs);
	return ret;
}

/* group_by: {"groupBy":[names],"droppedGroups","groups":[{"labels",
 * "profileCount","seriesCount","minTime","maxTime","sampleType","total",
 * "report"}]}; with group_by_sample_label (key) each group's report is split
 * again by that sample label. */
void api_report_series_groups(struct api_req *r, struct api_resp *w, int report,
                              const struct api_group_by *gb, const struct groups *gs,
                              uint64_t max_groups, const struct side *sd, const char *key,
                              uint64_t max_sample_groups, uint64_t limit, double nodefraction,
                              int64_t min_total, int64_t *deadline_us)
{
	if (gs->dropped)
		api_warn(w, "group_by: %zu groups left out, beyond the %llu largest (group_limit)",
		         gs->dropped, (unsigned long long)max_groups);
	jput(w, "{\"groupBy\":[");
	for (size_t i = 0; i < gb->n; i++) {
		if (i)
			jput(w, ",");
		jstr(w, gb->names[i]);
	}
	jput(w, "],\"droppedGroups\":");
	ju64(w, gs->dropped);
	jput(w, ",\"groups\":[");
	for (size_t i = 0; i < gs->n && !w->berr && !w->error_set; i++) {
		const struct group *g = &gs->g[i];
		const struct pd_storage_series *se0 = &sd->res->series[gs->order[g->first]];
		jput(w, i ? ",{\"labels\":{" : "{\"labels\":{");
		for (size_t k = 0; k < gb->n; k++) {
			if (k)
				jput(w, ",");
			jstr(w, gb->names[k]);
			jput(w, ":");
			jstr(w, api_series_label(se0, gb->names[k]));
		}
		jput(w, "},\"profileCount\":");
		ju64(w, g->nprofiles);
		jput(w, ",\"seriesCount\":");
		ju64(w, g->nseries);
		jput(w, ",\"minTime\":");
		ji64(w, g->mint);
		jput(w, ",\"maxTime\":");
		ji64(w, g->maxt);
		const struct pd_pprof_profile *p = g->focused ? g->focused : g->whole;
		struct pd_pprof_profile *symbolized = NULL;
		struct side one = {0};
		if (api_symbolize(r, w, p, &symbolized, &one.sym, deadline_us))
			return;
		one.symbolized = r->srv->o.symbolizer != NULL;
		if (symbolized)
			p = symbolized;
		api_set_report_names(r, w, g->whole, g->focused, symbolized, NULL);
		jput(w, ",\"sampleType\":");
		api_jtype(w, p, (size_t)g->idx);
		jput(w, ",\"unit\":");
		api_junit(w, p, (size_t)g->idx);
		jput(w, ",\"total\":");
		ji64(w, g->total);
		jput(w, ",\"report\":");
		/* the group as a side of its own, for report=meta's summary */
		one.merge = 1;
		one.found = 1;
		one.res = sd->res;
		one.used = calloc(sd->res->nseries, 1);
		if (!one.used) {
			pd_pprof_destroy(symbolized);
			api_error(w, 500, "internal", "out of memory");
			return;
		}
		for (size_t k = g->first; k < g->first + g->count; k++)
			one.used[gs->order[k]] = sd->used[gs->order[k]];
		one.nprofiles = g->nprofiles;
		one.nseries = g->nseries;
		one.avg = g->avg;
		one.navg = g->navg;
		one.mint = g->mint;
		one.maxt = g->maxt;
		if (key)
			api_report_groups(r, w, report, key, max_sample_groups, p, g->whole, &one,
			                  1, limit, nodefraction, min_total);
		else
			api_one_report(r, w, report, p, g->whole, &one, 1, limit, nodefraction,
			               min_total);
		free(one.used);
		pd_pprof_destroy(symbolized);
		jput(w, "}");
	}
	jput(w, "]}");
}
