/* groupby.c: the series side of /api/v1/query's group_by: reading the label
 * names a merge is split by, and ordering a selection's series so that those of
 * one group (equal values of the names; a missing label counts as the empty
 * value, as PromQL's sum by groups it) lie next to each other, groups in the
 * bytewise order of their values. */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

void api_group_by_fini(struct api_group_by *gb)
{
	free(gb->buf);
	memset(gb, 0, sizeof(*gb));
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Adds the comma-separated names of text (copied into gb->buf at *at). */
static int add_names(struct api_resp *w, const char *param, const char *text,
                     struct api_group_by *gb, size_t *at)
{
	size_t len = strlen(text), pos = 0;
	char *s = gb->buf + *at;
	memcpy(s, text, len + 1);
	*at += len + 1;
	for (;;) {
		char *e = strchr(s, ',');
		if (e)
			*e = '\0';
		while (is_space(*s))
			s++;
		size_t n = strlen(s);
		while (n && is_space(s[n - 1]))
			s[--n] = '\0';
		pos++;
		if (!*s) {
			api_bad_param(w, param,
			              "label name %zu of \"%s\" is empty: give names separated by "
			              "commas, as group_by=instance,version",
			              pos, text);
			return -1;
		}
		if (!pd_labels_valid_name(s)) {
			api_bad_param(
			    w, param,
			    "\"%s\" is not a valid label name (letters, digits and _, not "
			    "starting with a digit)",
			    s);
			return -1;
		}
		if (api_tenant_hidden(s)) {
			api_bad_param(w, param, "label name \"%s\" is reserved", s);
			return -1;
		}
		for (size_t i = 0; i < gb->n; i++)
			if (strcmp(gb->names[i], s) == 0) {
				api_bad_param(w, param, "label \"%s\" is named twice", s);
				return -1;
			}
		if (gb->n == API_GROUP_BY_MAX_LABELS) {
			api_bad_param(w, param, "more than %d label names",
			              API_GROUP_BY_MAX_LABELS);
			return -1;
		}
		gb->names[gb->n++] = s;
		if (!e)
			return 0;
		s = e + 1;
	}
}

int api_group_by_parse(const struct api_req *r, struct api_resp *w, const char *param,
                       struct api_group_by *gb)
{
	const char **vals = NULL;
	size_t nv = 0, total = 0, at = 0;
	memset(gb, 0, sizeof(*gb));
	if (api_params(r, param, &vals, &nv)) {
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	for (size_t i = 0; i < nv; i++)
		total += strlen(vals[i]) + 1;
	int ret = 0;
	if (total > nv) { /* some value is not empty */
		gb->buf = malloc(total);
		if (!gb->buf) {
			api_error(w, 500, "internal", "out of memory");
			ret = -1;
		}
		for (size_t i = 0; i < nv && !ret; i++)
			if (*vals[i] && add_names(w, param, vals[i], gb, &at))
				ret = -1;
	}
	free(vals);
	if (ret)
		api_group_by_fini(gb);
	return ret;
}

const char *api_series_label(const struct pd_storage_series *s, const char *name)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return "";
}

int api_group_cmp(const struct api_group_by *gb, const struct pd_storage_series *a,
                  const struct pd_storage_series *b)
{
	for (size_t i = 0; i < gb->n; i++) {
		int c =
		    strcmp(api_series_label(a, gb->names[i]), api_series_label(b, gb->names[i]));
		if (c)
			return c < 0 ? -1 : 1;
	}
	return 0;
}

/* qsort has no context argument: the elements carry it. */
struct keyed {
	const struct api_group_by *gb;
	const struct pd_storage_series *s;
	size_t i;
};

static int keyed_cmp(const void *x, const void *y)
{
	const struct keyed *a = x, *b = y;
	int c = api_group_cmp(a->gb, a->s, b->s);
	if (c)
		return c;
	return a->i < b->i ? -1 : a->i > b->i; /* stable: label order within a group */
}

int api_group_sort(const struct api_group_by *gb, const struct pd_storage_result *res, size_t *order)
{
	struct keyed *k = malloc((res->nseries ? res->nseries : 1) * sizeof(*k));
	if (!k)
		return PD_ENOMEM;
	for (size_t i = 0; i < res->nseries; i++)
		k[i] = (struct keyed){gb, &res->series[i], i};
	qsort(k, res->nseries, sizeof(*k), keyed_cmp);
	for (size_t i = 0; i < res->nseries; i++)
		order[i] = k[i].i;
	free(k);
	return 0;
}
