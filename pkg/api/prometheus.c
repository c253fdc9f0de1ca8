/* prometheus.c: the Prometheus-compatible HTTP API under /prometheus, so that
 * Grafana's Prometheus data source and promtool chart profile totals:
 * /prometheus/api/v1/query and query_range evaluate PromQL (pkg/promql) over the
 * store seen as metrics (promsource.c); series, labels, label/<name>/values and
 * metadata describe those metrics; status/buildinfo says which Prometheus API
 * level is served. Parameters, defaults, error messages and status codes are
 * Prometheus 2.42's, checked against Debian's Prometheus (integration_prom_api);
 * docs/api.md lists the few differences. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_int.h"
#include "profd/config.h"
#include "profd/promql.h"

/* The Prometheus API level /prometheus follows (its status/buildinfo version). */
#define PROM_API_VERSION "2.42.0"
/* Prometheus's limit on the points of one series of a range query. */
#define PROM_MAX_POINTS 11000

/* Prometheus's minTime and maxTime as its API prints them, and as Unix ms. */
#define PROM_MIN_TIME_TEXT "-292273086-05-16T16:47:06Z"
#define PROM_MAX_TIME_TEXT "292277025-08-18T07:12:54.999999999Z"
#define PROM_MIN_TIME_MS (-9223309901257974LL * 1000)
#define PROM_MAX_TIME_MS (9223309901257974LL * 1000 + 999)

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- parameters ---------------------------------------------------------------- */

/* Prometheus's parseTime: Unix seconds or RFC 3339, and its two boundary times. */
static int prom_parse_time(const char *s, int64_t *ms, struct pd_err *err)
{
	if (strcmp(s, PROM_MIN_TIME_TEXT) == 0) {
		*ms = PROM_MIN_TIME_MS;
		return 0;
	}
	if (strcmp(s, PROM_MAX_TIME_TEXT) == 0) {
		*ms = PROM_MAX_TIME_MS;
		return 0;
	}
	return pd_time_parse(s, ms, err);
}

/* A time that is required (query_range's start and end): Prometheus's parseTime. */
static int time_required(const struct api_req *r, struct api_resp *w, const char *name,
                         int64_t *out)
{
	const char *v = api_param(r, name);
	struct pd_err err = {0};
	if (prom_parse_time(v ? v : "", out, &err)) {
		api_bad_param(w, name, "%s", err.msg);
		return -1;
	}
	return 0;
}

/* A time with a default (Prometheus's parseTimeParam and its wording). */
static int time_optional(const struct api_req *r, struct api_resp *w, const char *name, int64_t def,
                         int64_t *out)
{
	const char *v = api_param(r, name);
	struct pd_err err = {0};
	if (!v || !*v) {
		*out = def;
		return 0;
	}
	if (prom_parse_time(v, out, &err)) {
		api_bad_param(w, name, "Invalid time value for '%s': %s", name, err.msg);
		return -1;
	}
	return 0;
}

/* Prometheus's parseDuration: float seconds or a duration such as 1m30s; negative
 * seconds are returned, for the caller to judge. */
static int duration_value(const struct api_req *r, struct api_resp *w, const char *name,
                          int64_t *out)
{
	const char *v = api_param(r, name);
	struct pd_err err = {0};
	if (!v)
		v = "";
	char *end;
	double d = strtod(v, &end);
	if (*v && end != v && !*end && !isspace((unsigned char)*v) && !isnan(d)) {
		if (d * 1000 > 9.2e18 || d * 1000 < -9.2e18) {
			api_bad_param(w, name,
			              "cannot parse \"%s\" to a valid duration. It overflows int64",
			              v);
			return -1;
		}
		*out = (int64_t)llround(d * 1000);
		return 0;
	}
	if (*v && pd_config_parse_duration(v, out, &err) == 0)
		return 0;
	api_bad_param(w, name, "cannot parse \"%s\" to a valid duration", v);
	return -1;
}

/* A query's deadline: the server's --query.timeout, shortened by `timeout`. */
struct deadline {
	struct pd_api_server *srv;
	int64_t at_ms; /* CLOCK_MONOTONIC */
};

static int deadline_passed(void *ctx)
{
	struct deadline *d = ctx;
	return mono_ms() >= d->at_ms || __atomic_load_n(&d->srv->stopping, __ATOMIC_ACQUIRE);
}

static int query_opts(struct api_req *r, struct api_resp *w, struct deadline *d,
                      struct pd_promql_opts *o)
{
	struct pd_api_server *s = r->srv;
	int64_t limit = s->o.query_timeout_ms;
	const char *tv = api_param(r, "timeout");
	if (tv && *tv) {
		int64_t t;
		if (duration_value(r, w, "timeout", &t))
			return -1;
		if (t < limit)
			limit = t;
	}
	d->srv = s;
	d->at_ms = mono_ms() + limit;
	memset(o, 0, sizeof(*o));
	o->lookback_ms = s->o.query_lookback_ms;
	o->max_samples = s->o.query_max_samples;
	o->max_points = PROM_MAX_POINTS + 2; /* checked here first, in Prometheus's words */
	o->interrupted = deadline_passed;
	o->interrupted_ctx = d;
	return 0;
}

/* An evaluation failure as Prometheus's API answers it. */
static void eval_error(struct api_resp *w, const struct pd_promql_err *e)
{
	switch (e->type) {
	case PD_PROMQL_ERR_BAD_DATA:
		api_error(w, 400, "bad_data", "%s", e->err.msg);
		break;
	case PD_PROMQL_ERR_EXECUTION:
		api_error(w, 422, "execution", "%s", e->err.msg);
		break;
	case PD_PROMQL_ERR_TIMEOUT:
		api_error(w, 503, "timeout", "%s", e->err.msg);
		break;
	default:
		api_internal(w, "evaluating the query failed", e->err.code, &e->err);
		break;
	}
}

/* Parses the query parameter as Prometheus's NewInstantQuery/NewRangeQuery do:
 * a parse error names the parameter. Leaves *type set. */
static int check_query(struct api_resp *w, const char *q, const struct pd_promql_opts *o,
                       enum pd_promql_type *type)
{
	struct pd_promql_expr *e = NULL;
	struct pd_promql_err perr = {0};
	if (pd_promql_parse(&e, q, strlen(q), o, &perr)) {
		if (perr.type == PD_PROMQL_ERR_BAD_DATA)
			api_bad_param(w, "query", "%s", perr.err.msg);
		else
			eval_error(w, &perr);
		return -1;
	}
	*type = pd_promql_expr_type(e);
	pd_promql_expr_destroy(e);
	return 0;
}

static void write_result(struct api_resp *w, struct pd_promql_result *res)
{
	if (!w->berr)
		w->berr = pd_promql_result_json(res, &w->body);
}

/* ---- query and query_range ------------------------------------------------------- */

void api_prom_query(struct api_req *r, struct api_resp *w)
{
	struct deadline d;
	struct pd_promql_opts o;
	enum pd_promql_type type;
	int64_t t;
	const char *q = api_param(r, "query");
	if (!q)
		q = "";
	if (time_optional(r, w, "time", r->now_ms, &t) || query_opts(r, w, &d, &o) ||
	    check_query(w, q, &o, &type))
		return;
	struct pd_promql_source src;
	struct pd_promql_result *res = NULL;
	struct pd_promql_err perr = {0};
	api_prom_source(r, &src);
	if (pd_promql_query_instant(&res, &src, q, strlen(q), t, &o, &perr)) {
		eval_error(w, &perr);
		return;
	}
	write_result(w, res);
	pd_promql_result_destroy(res);
}

void api_prom_query_range(struct api_req *r, struct api_resp *w)
{
	struct deadline d;
	struct pd_promql_opts o;
	enum pd_promql_type type;
	int64_t start, end, step;
	const char *q = api_param(r, "query");
	if (!q)
		q = "";
	if (time_required(r, w, "start", &start) || time_required(r, w, "end", &end))
		return;
	if (end < start) {
		api_bad_param(w, "end", "end timestamp must not be before start time");
		return;
	}
	if (duration_value(r, w, "step", &step))
		return;
	if (step <= 0) {
		api_bad_param(w, "step",
		              "zero or negative query resolution step widths are not "
		              "accepted. Try a positive integer");
		return;
	}
	if (((uint64_t)end - (uint64_t)start) / (uint64_t)step > PROM_MAX_POINTS) {
		api_error(w, 400, "bad_data",
		          "exceeded maximum resolution of 11,000 points per timeseries. Try "
		          "decreasing the query resolution (?step=XX)");
		return;
	}
	if (query_opts(r, w, &d, &o) || check_query(w, q, &o, &type))
		return;
	if (type != PD_PROMQL_SCALAR && type != PD_PROMQL_VECTOR) {
		api_error(w, 400, "bad_data",
		          "invalid expression type \"%s\" for range query, must be Scalar or "
		          "instant Vector",
		          type == PD_PROMQL_MATRIX ? "range vector" : "string");
		return;
	}
	struct pd_promql_source src;
	struct pd_promql_result *res = NULL;
	struct pd_promql_err perr = {0};
	api_prom_source(r, &src);
	if (pd_promql_query_range(&res, &src, q, strlen(q), start, end, step, &o, &perr)) {
		eval_error(w, &perr);
		return;
	}
	write_result(w, res);
	pd_promql_result_destroy(res);
}

/* ---- series, labels, label values ------------------------------------------------- */

/* What collect_labels returns when the query's time is up. */
#define STOP_TIMEOUT 1

/* Label sets collected from the source, each owned. */
struct lsets {
	struct pd_labels **v;
	size_t n, cap;
	const struct deadline *d;
};

static int collect_labels(void *arg, const struct pd_labels *ls, const int64_t *t, const double *v,
                          size_t n)
{
	struct lsets *c = arg;
	(void)t;
	(void)v;
	(void)n;
	if (deadline_passed((void *)c->d))
		return STOP_TIMEOUT;
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 64;
		struct pd_labels **nv = realloc(c->v, nc * sizeof(*nv));
		if (!nv)
			return PD_ENOMEM;
		c->v = nv;
		c->cap = nc;
	}
	if (!(c->v[c->n] = pd_labels_dup(ls)))
		return PD_ENOMEM;
	c->n++;
	return 0;
}

static void lsets_fini(struct lsets *c)
{
	for (size_t i = 0; i < c->n; i++)
		pd_labels_destroy(c->v[i]);
	free(c->v);
}

static int lsets_cmp(const void *a, const void *b)
{
	return pd_labels_compare(*(struct pd_labels *const *)a, *(struct pd_labels *const *)b);
}

/* Sorts and removes duplicates. */
static void lsets_sort(struct lsets *c)
{
	if (c->n)
		qsort(c->v, c->n, sizeof(*c->v), lsets_cmp);
	size_t u = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (u && pd_labels_equal(c->v[u - 1], c->v[i])) {
			pd_labels_destroy(c->v[i]);
			continue;
		}
		c->v[u++] = c->v[i];
	}
	c->n = u;
}

/* The parsed match[] selectors; *sels is malloc'd (free with free_selectors). */
static int parse_selectors(struct api_req *r, struct api_resp *w, struct pd_labels_selector ***sels,
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
	*sels = calloc(nv + 1, sizeof(**sels));
	if (!*sels) {
		free(vals);
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	for (size_t i = 0; i < nv; i++) {
		struct pd_err err = {0};
		if (pd_labels_selector_parse(&(*sels)[i], vals[i], strlen(vals[i]), NULL, &err)) {
			api_bad_param(w, "match[]", "%s", err.msg);
			free(vals);
			return -1;
		}
		(*n)++;
		const struct pd_labels_selector *sl = (*sels)[i];
		for (size_t k = 0; k < sl->nmatchers; k++)
			if (api_tenant_hidden(pd_labels_matcher_name(sl->matchers[k]))) {
				api_bad_param(w, "match[]", "label name \"%s\" is reserved",
				              PD_LABELS_TENANT);
				free(vals);
				return -1;
			}
	}
	free(vals);
	return 0;
}

static void free_selectors(struct pd_labels_selector **sels, size_t n)
{
	for (size_t i = 0; sels && i < n; i++)
		pd_labels_selector_destroy(sels[i]);
	free(sels);
}

/* The label sets of the metrics every selector chooses in [start, end]. */
static int select_metrics(struct api_req *r, struct api_resp *w,
                          struct pd_labels_selector *const *sels, size_t nsel, int64_t start,
                          int64_t end, struct lsets *out)
{
	struct deadline d = {r->srv, mono_ms() + r->srv->o.query_timeout_ms};
	struct pd_promql_source src;
	api_prom_source(r, &src);
	out->d = &d;
	for (size_t i = 0; i < nsel && start <= end; i++) {
		struct pd_err err = {0};
		int rc = src.select(src.ctx, sels[i]->matchers, sels[i]->nmatchers, start, end,
		                    collect_labels, out, &err);
		if (rc == STOP_TIMEOUT) {
			api_error(w, 503, "timeout", "query timed out in series selection");
			return -1;
		}
		if (rc) {
			api_internal(w, "selecting series failed", rc, &err);
			return -1;
		}
	}
	lsets_sort(out);
	return 0;
}

/* start and end of the metadata endpoints: all time unless given. */
static int meta_range(struct api_req *r, struct api_resp *w, int64_t *start, int64_t *end)
{
	return time_optional(r, w, "start", INT64_MIN, start) ||
	       time_optional(r, w, "end", INT64_MAX, end);
}

void api_prom_series(struct api_req *r, struct api_resp *w)
{
	struct pd_labels_selector **sels = NULL;
	struct lsets c = {0};
	size_t nsel = 0;
	int64_t start, end;
	uint64_t limit;
	if (!api_param(r, "match[]")) {
		api_error(w, 400, "bad_data", "no match[] parameter provided");
		return;
	}
	if (meta_range(r, w, &start, &end) || parse_selectors(r, w, &sels, &nsel) ||
	    api_uint_param(r, w, "limit", 0, &limit) ||
	    select_metrics(r, w, sels, nsel, start, end, &c))
		goto out;
	size_t n = c.n;
	if (limit && n > limit) {
		n = (size_t)limit;
		api_warn(w, "results truncated due to limit");
	}
	jput(w, "[");
	for (size_t i = 0; i < n && !w->berr; i++) {
		if (i)
			jput(w, ",");
		jlabels(w, c.v[i]);
	}
	jput(w, "]");
out:
	lsets_fini(&c);
	free_selectors(sels, nsel);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Writes the sorted, distinct strings v[0..n) as a JSON array, at most limit. */
static void string_list(struct api_resp *w, const char **v, size_t n, uint64_t limit)
{
	if (n)
		qsort(v, n, sizeof(*v), str_cmp);
	jput(w, "[");
	size_t shown = 0;
	for (size_t i = 0; i < n && !w->berr; i++) {
		if ((i && strcmp(v[i - 1], v[i]) == 0) || api_tenant_hidden(v[i]))
			continue;
		if (limit && shown == limit) {
			api_warn(w, "results truncated due to limit");
			break;
		}
		if (shown++)
			jput(w, ",");
		jstr(w, v[i]);
	}
	jput(w, "]");
}

/* Label names (name NULL) or the values of label name, of the metrics match[]
 * chooses, or of every metric. */
static void strings_endpoint(struct api_req *r, struct api_resp *w, const char *name)
{
	struct pd_labels_selector **sels = NULL, *all = NULL;
	struct lsets c = {0};
	size_t nsel = 0, nv = 0;
	const char **v = NULL;
	char **tv = NULL;
	size_t ntv = 0;
	int64_t start, end;
	uint64_t limit;
	if (meta_range(r, w, &start, &end) || parse_selectors(r, w, &sels, &nsel) ||
	    api_uint_param(r, w, "limit", 0, &limit))
		goto out;
	if (!nsel && (!name || strcmp(name, PD_LABELS_METRIC_NAME) != 0)) {
		/* every metric has its stored series' labels (names: with __name__) */
		struct pd_err err = {0};
		struct pd_storage_matcher tm;
		size_t ntm = (size_t)api_tenant_matcher(r, &tm);
		int rc = start > end || api_tenant_hidden(name) ? 0
		         : name ? pd_storage_label_values(r->srv->o.db, name, ntm ? &tm : NULL, ntm,
		                                       start, end, &tv, &ntv, &err)
		                : pd_storage_label_names(r->srv->o.db, ntm ? &tm : NULL, ntm, start,
		                                      end, &tv, &ntv, &err);
		if (rc) {
			api_internal(
			    w, name ? "listing label values failed" : "listing label names failed",
			    rc, &err);
			goto out;
		}
		string_list(w, (const char **)tv, ntv, limit);
		goto out;
	}
	if (!nsel) {
		struct pd_err err = {0};
		static const char every[] = "{__name__=~\".+\"}";
		if (pd_labels_selector_parse(&all, every, sizeof(every) - 1, NULL, &err)) {
			api_error(w, 500, "internal", "%s", err.msg);
			goto out;
		}
	}
	if (select_metrics(r, w, nsel ? sels : &all, nsel ? nsel : 1, start, end, &c))
		goto out;
	size_t cap = 0;
	for (size_t i = 0; i < c.n; i++)
		cap += name ? 1 : pd_labels_len(c.v[i]);
	if (!(v = malloc((cap + 1) * sizeof(*v)))) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < c.n; i++) {
		if (name) {
			const char *x = pd_labels_get(c.v[i], name);
			if (x)
				v[nv++] = x;
			continue;
		}
		for (size_t j = 0; j < pd_labels_len(c.v[i]); j++)
			v[nv++] = pd_labels_at(c.v[i], j)->name;
	}
	string_list(w, v, nv, limit);
out:
	free(v);
	pd_storage_strings_free(tv, ntv);
	lsets_fini(&c);
	free_selectors(sels, nsel);
	pd_labels_selector_destroy(all);
}

void api_prom_labels(struct api_req *r, struct api_resp *w)
{
	strings_endpoint(r, w, NULL);
}

void api_prom_label_values(struct api_req *r, struct api_resp *w)
{
	/* the route guarantees /prometheus/api/v1/label/<name>/values */
	const char *p = r->path + strlen("/prometheus/api/v1/label/");
	size_t n = strlen(p) - strlen("/values");
	char *name = strndup(p, n);
	if (!name) {
		api_error(w, 500, "internal", "out of memory");
		return;
	}
	if (!pd_labels_valid_name(name))
		api_error(w, 400, "bad_data", "invalid label name: \"%s\"", name);
	else
		strings_endpoint(r, w, name);
	free(name);
}

/* ---- metadata -------------------------------------------------------------------- */

struct meta {
	char *name, *help, *unit;
};

static int meta_cmp(const void *a, const void *b)
{
	const struct meta *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (!c)
		c = strcmp(x->help, y->help);
	if (!c)
		c = strcmp(x->unit, y->unit);
	return c;
}

static char *buf_string(struct pd_buf *b)
{
	char *s = malloc(b->len + 1);
	if (s) {
		memcpy(s, b->data, b->len);
		s[b->len] = '\0';
	}
	return s;
}

/* Adds the metadata of one metric of profile type ptype. */
static int meta_add(struct meta **m, size_t *n, size_t *cap, const char *ptype,
                    const struct pd_storage_sample_type *st, int per_second)
{
	struct pd_buf b;
	struct meta x = {0};
	int rc;
	pd_buf_init(&b, 0);
	rc = pd_api_prom_metric_name(&b, ptype, st->type, st->unit, per_second);
	if (!rc && !(x.name = buf_string(&b)))
		rc = PD_ENOMEM;
	b.len = 0;
	if (!rc)
		rc = pd_buf_printf(&b, "Sum of the %s values (%s) of each %s profile%s", st->type,
		                   *st->unit ? st->unit : "no unit", ptype,
		                   per_second ? ", divided by the profile's duration in seconds"
		                              : "");
	if (!rc && !(x.help = buf_string(&b)))
		rc = PD_ENOMEM;
	/* the unit as OpenMetrics has it: a suffix of the name */
	b.len = 0;
	if (!rc && *st->unit)
		rc = pd_api_prom_metric_name(&b, "", "", st->unit, per_second);
	if (!rc && !(x.unit = buf_string(&b)))
		rc = PD_ENOMEM;
	pd_buf_fini(&b);
	if (!rc && *n == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		struct meta *nm = realloc(*m, nc * sizeof(*nm));
		if (!nm)
			rc = PD_ENOMEM;
		else {
			*m = nm;
			*cap = nc;
		}
	}
	if (rc) {
		free(x.name);
		free(x.help);
		free(x.unit);
		return rc;
	}
	(*m)[(*n)++] = x;
	return 0;
}

void api_prom_metadata(struct api_req *r, struct api_resp *w)
{
	struct pd_storage_totals_result *res = NULL;
	struct meta *m = NULL;
	size_t n = 0, cap = 0;
	int64_t limit = -1;
	const char *ls = api_param(r, "limit");
	const char *metric = api_param(r, "metric");
	if (ls && *ls) {
		char *e;
		errno = 0;
		long long x = strtoll(ls, &e, 10);
		if (*e || errno || isspace((unsigned char)*ls)) {
			api_error(w, 400, "bad_data", "limit must be a number");
			return;
		}
		limit = x;
	}
	struct pd_err err = {0};
	struct pd_storage_matcher tm;
	size_t ntm = (size_t)api_tenant_matcher(r, &tm);
	int rc = pd_storage_select_totals(r->srv->o.db, ntm ? &tm : NULL, ntm, INT64_MIN, INT64_MAX, 0,
	                               &res, &err);
	if (rc) {
		api_internal(w, "reading the profiles' sample types failed", rc, &err);
		return;
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
			rc = meta_add(&m, &n, &cap, ptype, &s->types[k], 0);
			if (!rc && timed)
				rc = meta_add(&m, &n, &cap, ptype, &s->types[k], 1);
		}
	}
	if (rc) {
		api_error(w, 500, "internal", "listing metadata failed: out of memory");
		goto out;
	}
	if (n)
		qsort(m, n, sizeof(*m), meta_cmp);
	jput(w, "{");
	int64_t names = 0;
	for (size_t i = 0; i < n && !w->berr;) {
		size_t j = i;
		while (j < n && strcmp(m[j].name, m[i].name) == 0)
			j++;
		if (metric && *metric && strcmp(metric, m[i].name) != 0) {
			i = j;
			continue;
		}
		if (limit >= 0 && names >= limit)
			break;
		if (names++)
			jput(w, ",");
		jstr(w, m[i].name);
		jput(w, ":[");
		for (size_t k = i; k < j; k++) {
			if (k > i && meta_cmp(&m[k - 1], &m[k]) == 0)
				continue;
			if (k > i)
				jput(w, ",");
			jput(w, "{\"type\":\"gauge\",\"help\":");
			jstr(w, m[k].help);
			jput(w, ",\"unit\":");
			jstr(w, m[k].unit);
			jput(w, "}");
		}
		jput(w, "]");
		i = j;
	}
	jput(w, "}");
out:
	for (size_t i = 0; i < n; i++) {
		free(m[i].name);
		free(m[i].help);
		free(m[i].unit);
	}
	free(m);
	pd_storage_totals_result_destroy(res);
}

/* ---- status/buildinfo --------------------------------------------------------------- */

void api_prom_buildinfo(struct api_req *r, struct api_resp *w)
{
	jput(w, "{\"version\":\"" PROM_API_VERSION "\",\"revision\":\"\",\"branch\":\"\","
	        "\"buildUser\":\"\",\"buildDate\":");
	jstr(w, __DATE__ " " __TIME__);
	char app[160];
	snprintf(app, sizeof(app), "profd %s", r->srv->version);
	jput(w, ",\"goVersion\":\"\",\"application\":");
	jstr(w, app);
	jput(w, "}");
}
