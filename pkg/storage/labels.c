/* labels.c: label sets and matchers as every backend runs them: equality matchers
 * told apart (a store reads their postings), PromQL selectors turned into
 * matchers, a label set checked against matchers, label sets ordered, and lists
 * of strings sorted, deduplicated and freed. */
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"
#include "profd/storage.h"

static int selector_matches(const void *ctx, const char *value)
{
	return pd_labels_matcher_matches(ctx, value);
}

int pd_storage_match_equal(const void *ctx, const char *value)
{
	return strcmp(ctx, value) == 0;
}

const char *pd_storage_matcher_equal(const struct pd_storage_matcher *m)
{
	if (m->matches == pd_storage_match_equal)
		return m->ctx;
	if (m->matches == selector_matches &&
	    pd_labels_matcher_type(m->ctx) == PD_LABELS_MATCH_EQUAL)
		return pd_labels_matcher_value(m->ctx);
	return NULL;
}

int pd_storage_matchers_from_selector(const struct pd_labels_selector *sel,
                                      struct pd_storage_matcher **out, size_t *n,
                                      struct pd_err *err)
{
	*out = calloc(sel->nmatchers ? sel->nmatchers : 1, sizeof(**out));
	*n = 0;
	if (!*out)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < sel->nmatchers; i++)
		(*out)[i] = (struct pd_storage_matcher){pd_labels_matcher_name(sel->matchers[i]),
		                                        selector_matches, sel->matchers[i]};
	*n = sel->nmatchers;
	return 0;
}

int pd_storage_labels_match(const struct pd_storage_label *l, size_t n,
                            const struct pd_storage_matcher *m, size_t nm)
{
	for (size_t k = 0; k < nm; k++) {
		const char *v = "";
		for (size_t i = 0; i < n; i++)
			if (strcmp(l[i].name, m[k].name) == 0) {
				v = l[i].value;
				break;
			}
		if (!m[k].matches(m[k].ctx, v))
			return 0;
	}
	return 1;
}

int pd_storage_labels_cmp(const struct pd_storage_label *a, size_t na,
                          const struct pd_storage_label *b, size_t nb)
{
	for (size_t i = 0; i < na && i < nb; i++) {
		int c = strcmp(a[i].name, b[i].name);
		if (c)
			return c;
		if ((c = strcmp(a[i].value, b[i].value)))
			return c;
	}
	return na < nb ? -1 : na > nb;
}

static int strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void pd_storage_strings_sort_unique(char **v, size_t *n)
{
	if (*n < 2)
		return;
	qsort(v, *n, sizeof(*v), strcmp_p);
	size_t k = 0;
	for (size_t i = 0; i < *n; i++) {
		if (k && strcmp(v[k - 1], v[i]) == 0) {
			free(v[i]);
			continue;
		}
		v[k++] = v[i];
	}
	*n = k;
}

void pd_storage_strings_free(char **s, size_t n)
{
	if (!s)
		return;
	for (size_t i = 0; i < n; i++)
		free(s[i]);
	free(s);
}

struct pd_storage_label *pd_storage_labels_pack(const struct pd_storage_label *l, size_t nl)
{
	size_t bytes = nl * sizeof(struct pd_storage_label);
	for (size_t i = 0; i < nl; i++)
		bytes += strlen(l[i].name) + strlen(l[i].value) + 2;
	struct pd_storage_label *lab = malloc(bytes ? bytes : 1);
	if (!lab)
		return NULL;
	char *s = (char *)(lab + nl);
	for (size_t i = 0; i < nl; i++) {
		size_t x = strlen(l[i].name) + 1, y = strlen(l[i].value) + 1;
		memcpy(s, l[i].name, x);
		lab[i].name = s;
		s += x;
		memcpy(s, l[i].value, y);
		lab[i].value = s;
		s += y;
	}
	return lab;
}
