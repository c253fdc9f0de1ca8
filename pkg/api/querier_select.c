/* querier_select.c: the series a call of Pyroscope's query API picks. Its label
 * selector is PromQL's; profile type ids map profd's __name__ to Pyroscope's
 * names (docs/grafana.md); and every series has a service_name: a pushed series
 * has its own, a scraped one gets its job's value. A matcher on service_name
 * therefore runs twice against the store: once as written over series that have
 * the label, once on job over series that do not; the two sets are disjoint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "querier_int.h"

const char *querier_pyro_name(const char *name)
{
	static const struct {
		const char *profd, *pyro;
	} map[] = {
	    {"profile", "process_cpu"}, {"heap", "memory"},     {"allocs", "memory"},
	    {"goroutine", "goroutines"}, {"mutex", "mutex"},     {"block", "block"},
	    {"wall", "wall"},            {"threadcreate", "threadcreate"},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(name, map[i].profd) == 0)
			return map[i].pyro;
	return name;
}

int querier_type_parse(struct qcall *c, const char *what, const char *id, struct qtype *t)
{
	memset(t, 0, sizeof(*t));
	if (!id || !*id) {
		querier_fail(c, "invalid_argument",
			     "%s is required: a profile type id such as "
			     "process_cpu:cpu:nanoseconds:cpu:nanoseconds (ProfileTypes lists them)",
			     what);
		return -1;
	}
	size_t len = strlen(id);
	if (len >= sizeof(t->buf)) {
		querier_fail(c, "invalid_argument", "%s is %zu bytes long, more than %zu", what, len,
			     sizeof(t->buf) - 1);
		return -1;
	}
	memcpy(t->buf, id, len + 1);
	const char **parts[5] = {&t->name, &t->type, &t->unit, &t->period_type, &t->period_unit};
	char *p = t->buf;
	size_t k = 0;
	for (; k < 5; k++) {
		*parts[k] = p;
		char *colon = strchr(p, ':');
		if (!colon)
			break;
		*colon = 0;
		p = colon + 1;
	}
	if (k != 4 || strchr(p, ':')) {
		querier_fail(c, "invalid_argument",
			     "%s \"%.200s\" is not a profile type id: want 5 parts "
			     "<name>:<sample type>:<unit>:<period type>:<period unit>",
			     what, id);
		return -1;
	}
	if (!*t->name || !*t->type) {
		querier_fail(c, "invalid_argument",
			     "%s \"%.200s\": the name and sample type must not be empty", what, id);
		return -1;
	}
	return 0;
}

int querier_range(struct qcall *c, int64_t start, int64_t end, int64_t *mint, int64_t *maxt)
{
	if (end == 0)
		end = c->r->now_ms;
	if (start == 0)
		start = end > INT64_MIN + 3600 * 1000 ? end - 3600 * 1000 : INT64_MIN;
	if (end < start) {
		querier_fail(c, "invalid_argument", "end (%lld) is before start (%lld)",
			     (long long)end, (long long)start);
		return -1;
	}
	int64_t max = c->r->srv->o.max_range_ms;
	uint64_t span = (uint64_t)end - (uint64_t)start;
	if (max > 0 && span > (uint64_t)max) {
		querier_fail(c, "invalid_argument",
			     "the range from start to end is %llu ms, longer than the limit of "
			     "%lld ms (the API's longest range); narrow it",
			     (unsigned long long)span, (long long)max);
		return -1;
	}
	*mint = start;
	*maxt = end;
	return 0;
}

const char *querier_utf8(struct pd_arena *a, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i = 0;
	int ok = 1;
	while (i < len && ok) {
		unsigned char ch = p[i];
		size_t n = ch < 0x80 ? 1 : (ch & 0xe0) == 0xc0 ? 2 : (ch & 0xf0) == 0xe0 ? 3
					   : (ch & 0xf8) == 0xf0   ? 4
								   : 0;
		if (!n || i + n > len || (n == 2 && ch < 0xc2) || (n == 4 && ch > 0xf4))
			ok = 0;
		for (size_t k = 1; ok && k < n; k++)
			if ((p[i + k] & 0xc0) != 0x80)
				ok = 0;
		if (ok && n == 3) {
			unsigned v = ((ch & 0x0fu) << 12) | ((p[i + 1] & 0x3fu) << 6) | (p[i + 2] & 0x3fu);
			if (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))
				ok = 0;
		}
		if (ok && n == 4) {
			unsigned v = ((ch & 0x07u) << 18) | ((p[i + 1] & 0x3fu) << 12);
			if (v < 0x10000 || v > 0x10ffff)
				ok = 0;
		}
		if (ok)
			i += n;
	}
	if (ok)
		return s;
	char *copy = pd_arena_strndup(a, s, len);
	if (!copy)
		return "?";
	/* every byte from the first bad one that is not ASCII becomes '?' */
	for (size_t k = i; k < len; k++)
		if ((unsigned char)copy[k] >= 0x80)
			copy[k] = '?';
	return copy;
}

/* ---- matchers ----------------------------------------------------------------- */

static int match_nonempty(const void *ctx, const char *value)
{
	(void)ctx;
	return value[0] != 0;
}

static int match_empty(const void *ctx, const char *value)
{
	(void)ctx;
	return value[0] == 0;
}

/* __name__ is one of profd's names that map to Pyroscope's name ctx. */
static int match_pyro_name(const void *ctx, const char *value)
{
	return value[0] && strcmp(querier_pyro_name(value), ctx) == 0;
}

const char *querier_label(const struct qseries *s, const char *name)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return "";
}

void querier_set_fini(struct qset *set)
{
	for (int k = 0; k < 2; k++) {
		if (set->totals)
			pd_storage_totals_result_destroy(set->res[k]);
		else
			pd_storage_result_destroy(set->res[k]);
	}
	free(set->v);
	pd_arena_destroy(set->arena);
	memset(set, 0, sizeof(*set));
}

/* The series' labels with service_name=job added when it has none (add 1). */
static int add_series(struct qset *set, const struct pd_storage_label *ls, size_t n,
		      const void *src, int add, size_t *cap)
{
	if (set->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		void *nv = realloc(set->v, nc * sizeof(*set->v));
		if (!nv)
			return PD_ENOMEM;
		set->v = nv;
		*cap = nc;
	}
	struct qseries *q = &set->v[set->n];
	memset(q, 0, sizeof(*q));
	if (set->totals)
		q->t = src;
	else
		q->s = src;
	const char *job = NULL;
	int tenant = 0;
	for (size_t i = 0; i < n; i++) {
		if (add && strcmp(ls[i].name, "job") == 0)
			job = ls[i].value;
		tenant |= api_tenant_hidden(ls[i].name);
	}
	if ((!job || !*job) && !tenant) {
		q->labels = (struct pd_storage_label *)ls;
		q->nlabels = n;
		set->n++;
		return 0;
	}
	q->labels = pd_arena_calloc(set->arena, n + 1, sizeof(*q->labels));
	if (!q->labels)
		return PD_ENOMEM;
	/* shown without the tenant's label, with service_name from the job */
	size_t j = 0, i = 0;
	for (; i < n && strcmp(ls[i].name, "service_name") < 0; i++)
		if (!api_tenant_hidden(ls[i].name))
			q->labels[j++] = ls[i];
	if (job && *job)
		q->labels[j++] = (struct pd_storage_label){"service_name", job};
	for (; i < n; i++)
		if (!api_tenant_hidden(ls[i].name))
			q->labels[j++] = ls[i];
	q->nlabels = j;
	set->n++;
	return 0;
}

/* One pass against the store with matchers m; add: the series have no
 * service_name of their own. */
static int run_pass(struct qcall *c, struct qset *set, int k, const struct pd_storage_matcher *m,
		    size_t nm, int64_t mint, int64_t maxt, int add, size_t *cap)
{
	struct pd_err err = {0};
	struct pd_storage *db = c->r->srv->o.db;
	int rc;
	if (set->totals) {
		struct pd_storage_totals_result *res = NULL;
		rc = pd_storage_select_totals(db, m, nm, mint, maxt, 0, &res, &err);
		set->res[k] = res;
		for (size_t i = 0; !rc && res && i < res->nseries; i++)
			rc = add_series(set, res->series[i].labels, res->series[i].nlabels,
					&res->series[i], add, cap);
	} else {
		struct pd_storage_result *res = NULL;
		rc = pd_storage_select(db, m, nm, mint, maxt, 0, &res, &err);
		set->res[k] = res;
		for (size_t i = 0; !rc && res && i < res->nseries; i++)
			rc = add_series(set, res->series[i].labels, res->series[i].nlabels,
					&res->series[i], add, cap);
	}
	if (rc) {
		if (!err.msg[0])
			pd_err_set(&err, rc, "out of memory");
		querier_fail_store(c, "selecting series", rc, &err);
		return -1;
	}
	return 0;
}

int querier_select(struct qcall *c, const char *selector, const struct qtype *t, int64_t mint,
		   int64_t maxt, int totals, struct qset *set)
{
	struct pd_err err = {0};
	struct pd_labels_selector *sel = NULL;
	struct pd_storage_matcher *m = NULL, *sm = NULL;
	size_t nm = 0, cap = 0;
	struct qtype ptype;
	int ret = -1;
	memset(set, 0, sizeof(*set));
	set->totals = totals;
	if (!(set->arena = pd_arena_create(0))) {
		querier_fail(c, "internal", "out of memory");
		return -1;
	}
	/* "" and "{}" pick every series: PromQL refuses an empty selector */
	const char *p = selector ? selector : "";
	while (*p == ' ')
		p++;
	int all = !*p || strcmp(p, "{}") == 0;
	if (!all) {
		int rc = pd_labels_selector_parse(&sel, selector, strlen(selector), NULL, &err);
		if (rc) {
			querier_fail(c, rc == PD_ETOOBIG ? "resource_exhausted" : "invalid_argument",
				     "label selector %.200s: %s", selector, err.msg);
			goto out;
		}
		if ((rc = pd_storage_matchers_from_selector(sel, &m, &nm, &err))) {
			querier_fail_store(c, "building matchers", rc, &err);
			goto out;
		}
	}
	/* room for the matchers, a profile type's name, the tenant's, and the
	 * service_name pass's */
	if (!(sm = calloc(nm + 4, sizeof(*sm)))) {
		querier_fail(c, "internal", "out of memory");
		goto out;
	}
	size_t ns = 0;
	int has_service = 0;
	for (size_t i = 0; i < nm; i++) {
		if (strcmp(m[i].name, "__profile_type__") == 0) {
			const struct pd_labels_matcher *lm = sel->matchers[i];
			if (pd_labels_matcher_type(lm) != PD_LABELS_MATCH_EQUAL) {
				querier_fail(c, "invalid_argument",
					     "label selector %.200s: only = is served for "
					     "__profile_type__",
					     selector);
				goto out;
			}
			if (querier_type_parse(c, "__profile_type__", pd_labels_matcher_value(lm),
					       &ptype))
				goto out;
			if (!t)
				t = &ptype;
			else if (strcmp(t->name, ptype.name) != 0)
				goto done; /* two types: nothing */
			continue;
		}
		if (api_tenant_hidden(m[i].name)) {
			querier_fail(c, "invalid_argument",
			             "label selector %.200s: label name %s is reserved", selector,
			             PD_LABELS_TENANT);
			goto out;
		}
		if (strcmp(m[i].name, "service_name") == 0)
			has_service = 1;
		sm[ns++] = m[i];
	}
	if (t)
		sm[ns++] = (struct pd_storage_matcher){"__name__", match_pyro_name, t->name};
	if (ns == 0)
		sm[ns++] = (struct pd_storage_matcher){"__name__", match_nonempty, NULL};
	/* the tenant's series only: this is the one path every series selection of
	 * the query API takes */
	ns += (size_t)api_tenant_matcher(c->r, &sm[ns]);
	if (!has_service) {
		if (run_pass(c, set, 0, sm, ns, mint, maxt, 1, &cap))
			goto out;
		goto done;
	}
	/* series with a service_name of their own, then scraped ones by their job */
	sm[ns] = (struct pd_storage_matcher){"service_name", match_nonempty, NULL};
	if (run_pass(c, set, 0, sm, ns + 1, mint, maxt, 0, &cap))
		goto out;
	for (size_t i = 0; i < ns; i++)
		if (strcmp(sm[i].name, "service_name") == 0)
			sm[i].name = "job";
	sm[ns] = (struct pd_storage_matcher){"service_name", match_empty, NULL};
	if (run_pass(c, set, 1, sm, ns + 1, mint, maxt, 1, &cap))
		goto out;
done:
	ret = 0;
out:
	free(sm);
	free(m);
	pd_labels_selector_destroy(sel);
	if (ret)
		querier_set_fini(set);
	return ret;
}
