/* query_samples.c: /api/v1/query and the labels on samples: tag_focus and
 * tag_ignore keep the samples whose labels match, as go tool pprof's
 * -tagfocus/-tagignore, and the stack filters (focus ... prune_from) those
 * whose stacks do, before any report; group_by_sample_label splits the result
 * by the values of one sample label and reports on each group. */
#include <stdlib.h>
#include <string.h>

#include "query_int.h"

/* ---- labels on samples: filters and groups ----------------------------------- */

void api_tag_filters_fini(struct tag_filters *tf)
{
	for (size_t i = 0; i < tf->nfocus; i++)
		pd_pprof_tagfilter_destroy(tf->focus[i]);
	for (size_t i = 0; i < tf->nignore; i++)
		pd_pprof_tagfilter_destroy(tf->ignore[i]);
	pd_pprof_namefilter_destroy(tf->names);
	memset(tf, 0, sizeof(*tf));
}

static int tag_filters_parse_one(struct api_req *r, struct api_resp *w, const char *name,
                                 struct pd_pprof_tagfilter **out, size_t *n)
{
	const char **vals = NULL;
	size_t nv = 0;
	if (api_params(r, name, &vals, &nv)) {
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	int ret = 0;
	if (nv > MAX_TAG_FILTERS) {
		api_bad_param(w, name, "given %zu times, over the limit of %d", nv,
		              MAX_TAG_FILTERS);
		ret = -1;
	}
	for (size_t i = 0; i < nv && !ret; i++) {
		struct pd_err err = {0};
		if (!*vals[i])
			continue; /* an empty filter is no filter, as in pprof */
		if (pd_pprof_tagfilter_parse(&out[*n], vals[i], strlen(vals[i]), &err)) {
			api_bad_param(w, name, "%s", err.msg);
			ret = -1;
			break;
		}
		(*n)++;
	}
	free(vals);
	return ret;
}

/* The stack filters focus, ignore, hide, show, show_from and prune_from (pprof's
 * -focus ... -prune_from), each checked alone first so that an error names it. */
static int name_filters_parse(struct api_req *r, struct api_resp *w, struct tag_filters *tf)
{
	static const char *const names[] = {"focus", "ignore",    "hide",
	                                    "show",  "show_from", "prune_from"};
	const char *v[6];
	for (int i = 0; i < 6; i++) {
		v[i] = api_param(r, names[i]);
		struct pd_pprof_namefilter_spec one = {0};
		const char **slot[6] = {&one.focus, &one.ignore,    &one.hide,
		                        &one.show,  &one.show_from, &one.prune_from};
		*slot[i] = v[i];
		struct pd_pprof_namefilter *f = NULL;
		struct pd_err err = {0};
		if (pd_pprof_namefilter_create(&f, &one, &err)) {
			if (err.code == PD_ENOMEM)
				api_error(w, 500, "internal", "out of memory");
			else
				api_bad_param(w, names[i], "%s", err.msg);
			return -1;
		}
		pd_pprof_namefilter_destroy(f);
	}
	struct pd_pprof_namefilter_spec spec = {v[0], v[1], v[2], v[3], v[4], v[5]};
	struct pd_err err = {0};
	if (pd_pprof_namefilter_create(&tf->names, &spec, &err)) {
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	if (tf->names && api_report_names(r, w, &tf->names_mode))
		return -1;
	enum pd_pprof_granularity g;
	if (pd_pprof_granularity_parse(api_param(r, "granularity"), &g, &err)) {
		api_bad_param(w, "granularity", "%s", err.msg);
		return -1;
	}
	return 0;
}

int api_tag_filters_parse(struct api_req *r, struct api_resp *w, struct tag_filters *tf)
{
	memset(tf, 0, sizeof(*tf));
	return tag_filters_parse_one(r, w, "tag_focus", tf->focus, &tf->nfocus) ||
	               tag_filters_parse_one(r, w, "tag_ignore", tf->ignore, &tf->nignore) ||
	               name_filters_parse(r, w, tf)
	           ? -1
	           : 0;
}

/* Applies the filters to p into *out (NULL when there are none); *kept counts
 * the samples kept. */
int api_tag_filters_apply(struct api_resp *w, const struct tag_filters *tf,
                          const struct pd_pprof_profile *p, struct pd_pprof_profile **out,
                          size_t *kept)
{
	struct pd_err err = {0};
	struct pd_pprof_profile *named = NULL;
	*out = NULL;
	*kept = 0;
	if (tf->names) {
		/* the stack filters match the names the reports will show: p is the
		 * request's own profile, so its names mode may be set here */
		pd_pprof_set_names((struct pd_pprof_profile *)p, tf->names_mode);
		int rc = pd_pprof_filter_names(p, tf->names, &named, NULL, &err);
		if (rc) {
			api_internal(w, "filtering samples by stack failed", rc, &err);
			return -1;
		}
		*kept = pd_pprof_sample_count(named);
		p = named;
	}
	if (!tf->nfocus && !tf->nignore) {
		*out = named;
		return 0;
	}
	int rc = pd_pprof_filter_tags(
	    p, (const struct pd_pprof_tagfilter *const *)tf->focus, tf->nfocus,
	    (const struct pd_pprof_tagfilter *const *)tf->ignore, tf->nignore, out, kept, &err);
	pd_pprof_destroy(named);
	if (rc) {
		api_internal(w, "filtering samples by label failed", rc, &err);
		return -1;
	}
	return 0;
}

/* group_by_sample_label: one report per value of the key, and one for the samples
 * without it: {"label","groups":[{"value","sampleCount","total","report"}],
 * "droppedGroups"}. */
void api_report_groups(struct api_req *r, struct api_resp *w, int report, const char *key,
                       uint64_t max_groups, const struct pd_pprof_profile *p,
                       const struct pd_pprof_profile *whole, const struct side *sides,
                       size_t nsides, uint64_t limit, double nodefraction, int64_t min_total)
{
	struct pd_pprof_tag_group *g = NULL;
	size_t n = 0, dropped = 0;
	struct pd_err err = {0};
	int idx;
	if (api_sample_index(r, w, p, &idx))
		return;
	int rc = pd_pprof_split_by_tag(p, key, idx, (size_t)max_groups, &g, &n, &dropped, &err);
	if (rc) {
		api_internal(w, "grouping samples by label failed", rc, &err);
		return;
	}
	if (dropped)
		api_warn(w,
		         "group_by_sample_label: %zu values of \"%s\" left out, beyond the %llu "
		         "largest (sample_group_limit)",
		         dropped, key, (unsigned long long)max_groups);
	jput(w, "{\"label\":");
	jstr(w, key);
	jput(w, ",\"sampleType\":");
	api_jtype(w, p, (size_t)idx);
	jput(w, ",\"droppedGroups\":");
	ju64(w, dropped);
	jput(w, ",\"groups\":[");
	for (size_t i = 0; i < n && !w->berr && !w->error_set; i++) {
		jput(w, i ? ",{\"value\":" : "{\"value\":");
		if (g[i].value)
			jstrn(w, g[i].value, g[i].value_len);
		else
			jput(w, "null");
		jput(w, ",\"sampleCount\":");
		ju64(w, g[i].samples);
		jput(w, ",\"total\":");
		ji64(w, pd_pprof_total(g[i].profile, idx));
		jput(w, ",\"report\":");
		api_one_report(r, w, report, g[i].profile, whole, sides, nsides, limit,
		               nodefraction, min_total);
		jput(w, "}");
	}
	jput(w, "]}");
	pd_pprof_tag_groups_free(g, n);
}
