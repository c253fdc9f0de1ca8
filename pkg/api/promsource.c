/* promsource.c: the store as PromQL series, for the Prometheus-compatible endpoints
 * under /prometheus. Every stored series and each of its profiles' sample types is
 * one metric, `<profile type>_<sample type>_<unit>` (pd_api_prom_metric_name),
 * whose samples are the profiles' totals (pd_storage_select_totals) at the profiles'
 * timestamps; profiles with a duration also give `<that name>_per_second`, the
 * total divided by the duration in seconds. Matchers on __name__ pick among these
 * names after the store has answered; the other matchers, and a prefilter on the
 * profile type for `__name__="..."`, go to the store. */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "profd/promql.h"

static int name_byte_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Appends s with every byte outside [a-zA-Z0-9_] as '_'. */
static int append_sanitized(struct pd_buf *b, const char *s)
{
	for (; *s; s++) {
		char c = name_byte_ok((unsigned char)*s) ? *s : '_';
		int rc = pd_buf_append(b, &c, 1);
		if (rc)
			return rc;
	}
	return 0;
}

int pd_api_prom_metric_name(struct pd_buf *b, const char *profile_type, const char *sample_type,
                            const char *unit, int per_second)
{
	const char *parts[3] = {profile_type, sample_type, unit};
	int any = 0, rc = 0;
	for (int i = 0; i < 3 && !rc; i++) {
		if (!parts[i] || !*parts[i])
			continue;
		if (any)
			rc = pd_buf_append(b, "_", 1);
		if (!rc)
			rc = append_sanitized(b, parts[i]);
		any = 1;
	}
	if (!rc && per_second)
		rc = pd_buf_append(b, "_per_second", 11);
	if (!rc)
		rc = pd_buf_append(b, "", 1); /* NUL-terminated, not counted */
	if (!rc)
		b->len--;
	return rc;
}

/* A store matcher for `__name__="X"`: the profile type v could name X, i.e. v
 * sanitized and followed by '_' starts X (every metric name of v has that form
 * when its sample type or unit is not empty; a metric of v alone is X itself). */
static int type_could_name(const void *ctx, const char *v)
{
	const char *x = ctx;
	size_t i = 0;
	if (!*v)
		return 0;
	for (; v[i]; i++) {
		char c = name_byte_ok((unsigned char)v[i]) ? v[i] : '_';
		if (x[i] != c)
			return 0;
	}
	return x[i] == '\0' || x[i] == '_';
}

static int labels_matcher_pred(const void *ctx, const char *v)
{
	return pd_labels_matcher_matches(ctx, v);
}

struct emit {
	struct pd_labels_builder *lb;
	struct pd_buf name;
	int64_t *t;
	double *v;
};

/* Calls fn for the metric of type k of series s (per_second: its per-second
 * twin) when its name passes the __name__ matchers and it has samples. */
static int emit_metric(struct emit *e, const struct pd_storage_totals *s, size_t k, int per_second,
                       const char *ptype, struct pd_labels_matcher *const *nms, size_t nn,
                       pd_promql_series_fn fn, void *arg, struct pd_err *err)
{
	e->name.len = 0;
	if (pd_api_prom_metric_name(&e->name, ptype, s->types[k].type, s->types[k].unit,
	                            per_second))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	const char *name = (const char *)e->name.data;
	for (size_t i = 0; i < nn; i++)
		if (!pd_labels_matcher_matches(nms[i], name))
			return 0;
	size_t n = 0;
	for (size_t i = 0; i < s->nts; i++) {
		if (!s->present[k * s->nts + i])
			continue;
		double v = (double)s->values[k * s->nts + i];
		if (per_second) {
			if (s->duration_nanos[i] <= 0)
				continue;
			v /= (double)s->duration_nanos[i] / 1e9;
		}
		e->t[n] = s->ts[i];
		e->v[n] = v;
		n++;
	}
	if (!n)
		return 0;
	struct pd_labels *ls = NULL;
	struct pd_err lerr = {0};
	int rc = pd_labels_builder_reset(e->lb, NULL);
	for (size_t i = 0; i < s->nlabels && !rc; i++)
		if (strcmp(s->labels[i].name, PD_LABELS_METRIC_NAME) != 0 &&
		    !api_tenant_hidden(s->labels[i].name))
			rc = pd_labels_builder_add(e->lb, s->labels[i].name, s->labels[i].value);
	if (!rc)
		rc = pd_labels_builder_add(e->lb, PD_LABELS_METRIC_NAME, name);
	if (rc)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((rc = pd_labels_builder_finish(e->lb, &ls, &lerr)))
		return pd_err_set(err, rc, "the labels of %s: %s", name, lerr.msg);
	rc = fn(arg, ls, e->t, e->v, n);
	pd_labels_destroy(ls);
	return rc;
}

static int prom_select_in(struct pd_storage *db, const char *tenant,
                          struct pd_labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                          pd_promql_series_fn fn, void *arg, struct pd_err *err)
{
	struct pd_storage_matcher *tm = calloc(n + 2, sizeof(*tm));
	struct pd_labels_matcher **nms = calloc(n + 1, sizeof(*nms));
	struct pd_storage_totals_result *res = NULL;
	struct emit e = {0};
	size_t ntm = 0, nn = 0;
	int rc = 0;
	pd_buf_init(&e.name, 0);
	if (!tm || !nms) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *lname = pd_labels_matcher_name(ms[i]);
		enum pd_labels_match_type ty = pd_labels_matcher_type(ms[i]);
		const char *val = pd_labels_matcher_value(ms[i]);
		if (api_tenant_hidden(lname)) {
			rc = pd_err_set(err, PD_EINVAL, "label name \"%s\" is reserved", lname);
			goto out;
		}
		if (strcmp(lname, PD_LABELS_METRIC_NAME) == 0) {
			nms[nn++] = ms[i];
			if (ty == PD_LABELS_MATCH_EQUAL && *val)
				tm[ntm++] = (struct pd_storage_matcher){PD_LABELS_METRIC_NAME,
				                                     type_could_name, val};
		} else if (ty == PD_LABELS_MATCH_EQUAL && *val) {
			/* the store reads an equality matcher's postings directly */
			tm[ntm++] = (struct pd_storage_matcher){lname, pd_storage_match_equal, val};
		} else {
			tm[ntm++] = (struct pd_storage_matcher){lname, labels_matcher_pred, ms[i]};
		}
	}
	if (tenant)
		tm[ntm++] = (struct pd_storage_matcher){PD_LABELS_TENANT, pd_storage_match_equal, tenant};
	if ((rc = pd_storage_select_totals(db, tm, ntm, mint, maxt, 0, &res, err)))
		goto out;
	size_t most = 0;
	for (size_t i = 0; i < res->nseries; i++)
		if (res->series[i].nts > most)
			most = res->series[i].nts;
	e.lb = pd_labels_builder_create(NULL);
	e.t = malloc((most + 1) * sizeof(*e.t));
	e.v = malloc((most + 1) * sizeof(*e.v));
	if (!e.lb || !e.t || !e.v) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < res->nseries && !rc; i++) {
		const struct pd_storage_totals *s = &res->series[i];
		const char *ptype = NULL;
		for (size_t j = 0; j < s->nlabels; j++)
			if (strcmp(s->labels[j].name, PD_LABELS_METRIC_NAME) == 0)
				ptype = s->labels[j].value;
		if (!ptype || !*ptype)
			continue;
		int timed = 0;
		for (size_t j = 0; j < s->nts && !timed; j++)
			timed = s->duration_nanos[j] > 0;
		for (size_t k = 0; k < s->ntypes && !rc; k++) {
			rc = emit_metric(&e, s, k, 0, ptype, nms, nn, fn, arg, err);
			if (!rc && timed)
				rc = emit_metric(&e, s, k, 1, ptype, nms, nn, fn, arg, err);
		}
	}
out:
	pd_storage_totals_result_destroy(res);
	pd_labels_builder_destroy(e.lb);
	pd_buf_fini(&e.name);
	free(e.t);
	free(e.v);
	free(tm);
	free(nms);
	return rc;
}

static int prom_select(void *ctx, struct pd_labels_matcher *const *ms, size_t n, int64_t mint,
                       int64_t maxt, pd_promql_series_fn fn, void *arg, struct pd_err *err)
{
	return prom_select_in(ctx, NULL, ms, n, mint, maxt, fn, arg, err);
}

static int prom_select_scoped(void *ctx, struct pd_labels_matcher *const *ms, size_t n,
                              int64_t mint, int64_t maxt, pd_promql_series_fn fn, void *arg,
                              struct pd_err *err)
{
	const struct api_req *r = ctx;
	return prom_select_in(r->srv->o.db, r->scoped ? r->tenant_value : NULL, ms, n, mint, maxt,
	                      fn, arg, err);
}

void pd_api_prom_source(struct pd_storage *db, struct pd_promql_source *src)
{
	src->select = prom_select;
	src->ctx = db;
}

void api_prom_source(const struct api_req *r, struct pd_promql_source *src)
{
	src->select = prom_select_scoped;
	src->ctx = (void *)r;
}
