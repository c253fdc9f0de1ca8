/* querier_series.c: SelectSeries of Pyroscope's query API: a profile type's
 * values over time, from the stored totals (pd_storage_select_totals; no profile is
 * decoded). Points lie at start, start + step, ... up to end; a profile at time
 * ts counts at the first of them at or after ts, so the point at T sums the
 * profiles in (T - step, T], what /prometheus's sum_over_time(<metric>[step])
 * gives at T for profiles that do not lie on a step boundary. Series are
 * grouped by the group_by labels' values (none: one series of everything), a
 * point is the sum (or the average) of its profiles' totals, points without
 * profiles are left out, and limit keeps the groups of the largest sums. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "querier_int.h"

#define GROUP_BY_MAX 16

struct tuple {
	size_t group;
	int64_t bucket;
	double value;
};

static int tuple_cmp(const void *x, const void *y)
{
	const struct tuple *a = x, *b = y;
	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	return a->bucket < b->bucket ? -1 : a->bucket > b->bucket;
}

struct gctx {
	const struct qset *set;
	char **names;
	size_t n;
};

static const struct gctx *sort_ctx; /* qsort has no context argument */

static int group_cmp(const struct gctx *g, size_t a, size_t b)
{
	for (size_t k = 0; k < g->n; k++) {
		int d = strcmp(querier_label(&g->set->v[a], g->names[k]),
			       querier_label(&g->set->v[b], g->names[k]));
		if (d)
			return d;
	}
	return 0;
}

static int order_cmp(const void *x, const void *y)
{
	return group_cmp(sort_ctx, *(const size_t *)x, *(const size_t *)y);
}

struct gsum {
	size_t group;
	double sum;
};

static int gsum_cmp(const void *x, const void *y)
{
	const struct gsum *a = x, *b = y;
	if (a->sum != b->sum)
		return a->sum > b->sum ? -1 : 1;
	return a->group < b->group ? -1 : a->group > b->group;
}

static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;

void querier_select_series(struct qcall *c, const ProtobufCMessage *req)
{
	const Querier__V1__SelectSeriesRequest *q = (const void *)req;
	struct qtype t;
	int64_t mint, maxt;
	struct qset set = {0};
	size_t *order = NULL, *group_of = NULL, *rep = NULL;
	struct tuple *tv = NULL;
	struct gsum *gs = NULL;
	uint8_t *keep = NULL;
	Types__V1__Series **out = NULL;
	struct pd_arena *a = NULL;
	size_t ntv = 0, ngroups = 0;
	if (querier_type_parse(c, "profile_typeID", q->profile_typeid, &t) ||
	    querier_range(c, q->start, q->end, &mint, &maxt))
		return;
	if (!(q->step > 0) || !isfinite(q->step)) {
		querier_fail(c, "invalid_argument", "step must be a positive number of seconds");
		return;
	}
	double stepd = q->step * 1000.0;
	int64_t step = stepd < 1 ? 1 : stepd > 1e15 ? (int64_t)1e15 : (int64_t)stepd;
	uint64_t npoints = ((uint64_t)maxt - (uint64_t)mint) / (uint64_t)step + 1;
	if (npoints > QUERIER_MAX_POINTS) {
		querier_fail(c, "invalid_argument",
			     "the range and step make %llu points, more than the %d a series may "
			     "have: make the step larger",
			     (unsigned long long)npoints, QUERIER_MAX_POINTS);
		return;
	}
	if (q->aggregation != TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_SUM &&
	    q->aggregation !=
		TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE) {
		querier_fail(c, "invalid_argument", "aggregation %d is not a known aggregation",
			     (int)q->aggregation);
		return;
	}
	if (q->n_group_by > GROUP_BY_MAX) {
		querier_fail(c, "invalid_argument", "group_by has %zu labels, more than %d",
			     q->n_group_by, GROUP_BY_MAX);
		return;
	}
	if (querier_select(c, q->label_selector, &t, mint, maxt, 1, &set))
		return;
	if (!(a = pd_arena_create(0)))
		goto oom;
	/* groups: the series sorted by their group_by values */
	size_t total = 0;
	for (size_t i = 0; i < set.n; i++)
		total += set.v[i].t->nts;
	order = calloc(set.n ? set.n : 1, sizeof(*order));
	group_of = calloc(set.n ? set.n : 1, sizeof(*group_of));
	rep = calloc(set.n ? set.n : 1, sizeof(*rep));
	tv = calloc(total ? total : 1, sizeof(*tv));
	if (!order || !group_of || !rep || !tv)
		goto oom;
	struct gctx g = {&set, q->group_by, q->n_group_by};
	for (size_t i = 0; i < set.n; i++)
		order[i] = i;
	pthread_mutex_lock(&sort_mu);
	sort_ctx = &g;
	qsort(order, set.n, sizeof(*order), order_cmp);
	sort_ctx = NULL;
	pthread_mutex_unlock(&sort_mu);
	for (size_t i = 0; i < set.n; i++) {
		if (i == 0 || group_cmp(&g, order[i - 1], order[i]) != 0)
			rep[ngroups++] = order[i];
		group_of[order[i]] = ngroups - 1;
	}
	int avg = q->aggregation ==
		  TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE;
	for (size_t i = 0; i < set.n; i++) {
		const struct pd_storage_totals *s = set.v[i].t;
		size_t k = 0;
		for (; k < s->ntypes; k++)
			if (strcmp(s->types[k].type, t.type) == 0 &&
			    (!*t.unit || strcmp(s->types[k].unit, t.unit) == 0))
				break;
		if (k == s->ntypes)
			continue;
		for (size_t j = 0; j < s->nts; j++) {
			if (!s->present[k * s->nts + j] || s->ts[j] < mint || s->ts[j] > maxt)
				continue;
			uint64_t d = (uint64_t)s->ts[j] - (uint64_t)mint;
			int64_t b = (int64_t)((d + (uint64_t)step - 1) / (uint64_t)step);
			if ((uint64_t)b >= npoints)
				continue; /* after the last point */
			tv[ntv++] = (struct tuple){group_of[i], b, (double)s->values[k * s->nts + j]};
		}
	}
	qsort(tv, ntv, sizeof(*tv), tuple_cmp);
	/* limit: the groups of the largest sums */
	if (!(keep = calloc(ngroups ? ngroups : 1, 1)) ||
	    !(gs = calloc(ngroups ? ngroups : 1, sizeof(*gs))))
		goto oom;
	for (size_t i = 0; i < ngroups; i++)
		gs[i].group = i;
	for (size_t i = 0; i < ntv; i++)
		gs[tv[i].group].sum += tv[i].value;
	size_t nkeep = 0;
	if (q->limit > 0 && (uint64_t)q->limit < ngroups) {
		qsort(gs, ngroups, sizeof(*gs), gsum_cmp);
		for (size_t i = 0; i < (size_t)q->limit; i++)
			keep[gs[i].group] = 1;
	} else {
		memset(keep, 1, ngroups);
	}
	if (!(out = calloc(ngroups ? ngroups : 1, sizeof(*out))))
		goto oom;
	for (size_t i = 0; i < ntv;) {
		size_t gi = tv[i].group, end = i;
		while (end < ntv && tv[end].group == gi)
			end++;
		if (!keep[gi]) {
			i = end;
			continue;
		}
		Types__V1__Series *ser = pd_arena_calloc(a, 1, sizeof(*ser));
		Types__V1__Point **pts = pd_arena_calloc(a, end - i, sizeof(*pts));
		Types__V1__LabelPair **lp = pd_arena_calloc(a, g.n ? g.n : 1, sizeof(*lp));
		if (!ser || !pts || !lp)
			goto oom;
		types__v1__series__init(ser);
		for (size_t k = 0; k < g.n; k++) {
			const char *v = querier_label(&set.v[rep[gi]], g.names[k]);
			if (!*v)
				continue;
			Types__V1__LabelPair *p = pd_arena_calloc(a, 1, sizeof(*p));
			if (!p)
				goto oom;
			types__v1__label_pair__init(p);
			p->name = (char *)querier_utf8(a, g.names[k]);
			p->value = (char *)querier_utf8(a, v);
			lp[ser->n_labels++] = p;
		}
		ser->labels = lp;
		size_t np = 0;
		for (size_t j = i; j < end;) {
			int64_t b = tv[j].bucket;
			double sum = 0;
			size_t cnt = 0;
			for (; j < end && tv[j].bucket == b; j++, cnt++)
				sum += tv[j].value;
			Types__V1__Point *pt = pd_arena_calloc(a, 1, sizeof(*pt));
			if (!pt)
				goto oom;
			types__v1__point__init(pt);
			pt->value = avg ? sum / (double)cnt : sum;
			pt->timestamp = mint + b * step;
			pts[np++] = pt;
		}
		ser->n_points = np;
		ser->points = pts;
		out[nkeep++] = ser;
		i = end;
	}
	Querier__V1__SelectSeriesResponse resp = QUERIER__V1__SELECT_SERIES_RESPONSE__INIT;
	resp.n_series = nkeep;
	resp.series = out;
	querier_reply(c, &resp.base);
	goto out;
oom:
	querier_fail(c, "internal", "out of memory");
out:
	free(out);
	free(keep);
	free(gs);
	free(tv);
	free(rep);
	free(group_of);
	free(order);
	querier_set_fini(&set);
	pd_arena_destroy(a);
}
