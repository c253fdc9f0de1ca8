/* series.c: the metadata endpoints, as Prometheus answers them:
 * /api/v1/series (label sets of the series any match[] selects),
 * /api/v1/labels (label names) and /api/v1/label/<name>/values (label values),
 * with optional match[], start, end and limit. Without start and end they cover
 * all time, as in Prometheus. */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

/* Parses every match[]; *sels is malloc'd. required: at least one. */
static int parse_matches(struct api_req *r, struct api_resp *w, int required, struct api_sel **sels,
                         size_t *n)
{
	const char **vals;
	size_t nv;
	*sels = NULL;
	*n = 0;
	if (api_params(r, "match[]", &vals, &nv)) {
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	if (required && nv == 0) {
		free(vals);
		api_bad_param(w, "match[]", "no match[] parameter provided");
		return -1;
	}
	*sels = calloc(nv + 1, sizeof(**sels));
	if (!*sels) {
		free(vals);
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	for (size_t i = 0; i < nv; i++) {
		if (api_sel_parse(w, "match[]", vals[i], &(*sels)[i])) {
			free(vals);
			return -1;
		}
		(*n)++;
		if (api_sel_scope(r, &(*sels)[i])) {
			free(vals);
			api_error(w, 500, "internal", "out of memory");
			return -1;
		}
	}
	free(vals);
	return 0;
}

static void free_matches(struct api_sel *sels, size_t n)
{
	for (size_t i = 0; sels && i < n + 1; i++)
		api_sel_fini(&sels[i]);
	free(sels);
}

/* start and end with Prometheus's defaults for metadata: all time. */
static int meta_range(struct api_req *r, struct api_resp *w, int64_t *start, int64_t *end)
{
	if (api_time_param(r, w, "start", INT64_MIN, start) ||
	    api_time_param(r, w, "end", INT64_MAX, end))
		return -1;
	if (*end < *start) {
		api_bad_param(w, "end", "end timestamp must not be before start time");
		return -1;
	}
	return 0;
}

static int labels_cmp(const struct pd_storage_series *a, const struct pd_storage_series *b)
{
	size_t n = a->nlabels < b->nlabels ? a->nlabels : b->nlabels;
	for (size_t i = 0; i < n; i++) {
		int c = strcmp(a->labels[i].name, b->labels[i].name);
		if (c)
			return c;
		if ((c = strcmp(a->labels[i].value, b->labels[i].value)))
			return c;
	}
	return a->nlabels < b->nlabels ? -1 : a->nlabels > b->nlabels;
}

static int series_ptr_cmp(const void *a, const void *b)
{
	return labels_cmp(*(const struct pd_storage_series *const *)a,
	                  *(const struct pd_storage_series *const *)b);
}

void api_series(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct api_sel *sels = NULL;
	size_t nsel = 0;
	struct pd_storage_result **res = NULL;
	const struct pd_storage_series **all = NULL;
	struct pd_err err = {0};
	int64_t start, end;
	uint64_t limit;
	if (parse_matches(r, w, 1, &sels, &nsel) || meta_range(r, w, &start, &end) ||
	    api_uint_param(r, w, "limit", 0, &limit))
		goto out;
	res = calloc(nsel, sizeof(*res));
	if (!res) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	size_t total = 0;
	for (size_t i = 0; i < nsel; i++) {
		int rc = pd_storage_select(s->o.db, sels[i].m, sels[i].nm, start, end,
		                        limit ? (size_t)limit + 1 : 0, &res[i], &err);
		if (rc) {
			api_internal(w, "listing series failed", rc, &err);
			goto out;
		}
		total += res[i]->nseries;
	}
	all = malloc((total + 1) * sizeof(*all));
	if (!all) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < nsel; i++)
		for (size_t j = 0; j < res[i]->nseries; j++)
			all[k++] = &res[i]->series[j];
	qsort(all, k, sizeof(*all), series_ptr_cmp);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || labels_cmp(all[u - 1], all[i]) != 0)
			all[u++] = all[i];
	if (limit && u > limit) {
		u = (size_t)limit;
		api_warn(w, "results truncated due to limit");
	}
	jput(w, "[");
	for (size_t i = 0; i < u && !w->berr; i++) {
		if (i)
			jput(w, ",");
		jlabels_tsdb(w, all[i]->labels, all[i]->nlabels);
	}
	jput(w, "]");
out:
	free(all);
	for (size_t i = 0; res && i < nsel; i++)
		pd_storage_result_destroy(res[i]);
	free(res);
	free_matches(sels, nsel);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Answers a sorted, de-duplicated list of strings: label names (name NULL) or
 * the values of one label, over every match[] (or all series). */
static void strings_endpoint(struct api_req *r, struct api_resp *w, const char *name)
{
	struct pd_api_server *s = r->srv;
	struct api_sel *sels = NULL;
	size_t nsel = 0;
	char **acc = NULL;
	size_t nacc = 0;
	struct pd_err err = {0};
	int64_t start, end;
	uint64_t limit;
	if (parse_matches(r, w, 0, &sels, &nsel) || meta_range(r, w, &start, &end) ||
	    api_uint_param(r, w, "limit", 0, &limit))
		goto out;
	for (size_t i = 0; i < (nsel ? nsel : 1); i++) {
		char **v = NULL;
		size_t nv = 0;
		struct pd_storage_matcher tm;
		const struct pd_storage_matcher *m = nsel ? sels[i].m : NULL;
		size_t nm = nsel ? sels[i].nm : 0;
		if (!nsel && api_tenant_matcher(r, &tm)) {
			m = &tm;
			nm = 1;
		}
		int rc = api_tenant_hidden(name) ? 0
		         : name
		             ? pd_storage_label_values(s->o.db, name, m, nm, start, end, &v, &nv, &err)
		             : pd_storage_label_names(s->o.db, m, nm, start, end, &v, &nv, &err);
		if (rc) {
			api_internal(
			    w, name ? "listing label values failed" : "listing label names failed",
			    rc, &err);
			goto out;
		}
		char **grown = realloc(acc, (nacc + nv + 1) * sizeof(*acc));
		if (!grown) {
			pd_storage_strings_free(v, nv);
			api_error(w, 500, "internal", "out of memory");
			goto out;
		}
		acc = grown;
		if (nv)
			memcpy(acc + nacc, v, nv * sizeof(*v));
		nacc += nv;
		free(v); /* the strings moved to acc */
	}
	if (nsel > 1)
		qsort(acc, nacc, sizeof(*acc), str_cmp);
	jput(w, "[");
	size_t shown = 0;
	for (size_t i = 0; i < nacc && !w->berr; i++) {
		if ((i && strcmp(acc[i - 1], acc[i]) == 0) || api_tenant_hidden(acc[i]))
			continue;
		if (limit && shown == limit) {
			api_warn(w, "results truncated due to limit");
			break;
		}
		if (shown++)
			jput(w, ",");
		jstr(w, acc[i]);
	}
	jput(w, "]");
out:
	pd_storage_strings_free(acc, nacc);
	free_matches(sels, nsel);
}

void api_labels(struct api_req *r, struct api_resp *w)
{
	strings_endpoint(r, w, NULL);
}

void api_label_values(struct api_req *r, struct api_resp *w)
{
	/* the route guarantees /api/v1/label/<name>/values */
	const char *p = r->path + strlen("/api/v1/label/");
	size_t n = strlen(p) - strlen("/values");
	char *name = strndup(p, n);
	if (!name) {
		api_error(w, 500, "internal", "out of memory");
		return;
	}
	if (!pd_labels_valid_name(name))
		api_bad_param(w, "name", "invalid label name: \"%s\"", name);
	else
		strings_endpoint(r, w, name);
	free(name);
}
