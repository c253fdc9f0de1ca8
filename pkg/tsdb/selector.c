/* selector.c: turns a parsed PromQL selector into the querier's matchers, and
 * tells the querier which matchers accept exactly one value. */
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"
#include "tsdb_int.h"

int tsdb_selector_matches(const void *ctx, const char *value)
{
	return pd_labels_matcher_matches(ctx, value);
}

int pd_tsdb_match_equal(const void *ctx, const char *value)
{
	return strcmp(ctx, value) == 0;
}

const char *tsdb_matcher_equal(const struct pd_tsdb_matcher *m)
{
	if (m->matches == pd_tsdb_match_equal)
		return m->ctx;
	if (m->matches == tsdb_selector_matches &&
	    pd_labels_matcher_type(m->ctx) == PD_LABELS_MATCH_EQUAL)
		return pd_labels_matcher_value(m->ctx);
	return NULL;
}

int pd_tsdb_matchers_from_selector(const struct pd_labels_selector *sel,
				   struct pd_tsdb_matcher **out, size_t *n, struct pd_err *err)
{
	*out = calloc(sel->nmatchers ? sel->nmatchers : 1, sizeof(**out));
	*n = 0;
	if (!*out)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < sel->nmatchers; i++)
		(*out)[i] = (struct pd_tsdb_matcher){pd_labels_matcher_name(sel->matchers[i]),
						     tsdb_selector_matches, sel->matchers[i]};
	*n = sel->nmatchers;
	return 0;
}
