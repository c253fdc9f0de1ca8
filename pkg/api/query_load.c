/* query_load.c: the sides of /api/v1/query: a side's parameters (its selector,
 * and a time or a range), and loading it: one profile (mode=single, the sample
 * at a time or the nearest before it within the lookback), or a merge of every
 * matching profile in a range (mode=merge, incremental and bounded by a count
 * and a byte budget), combined by the aggregation. A diff (mode=diff) is two
 * such sides. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_int.h"
#include "profd/config.h"

/* ---- loading profiles -------------------------------------------------------- */

static int64_t sat_sub(int64_t a, int64_t b)
{
	if (b > 0 && a < INT64_MIN + b)
		return INT64_MIN;
	return a - b;
}

/* `heap{instance="a:1", job="api"}` for messages. */
static void series_string(const struct pd_storage_label *ls, size_t n, char *out, size_t size)
{
	struct pd_buf b;
	pd_buf_init(&b, size > 1 ? size - 1 : 1);
	const char *name = "";
	for (size_t i = 0; i < n; i++)
		if (strcmp(ls[i].name, PD_LABELS_METRIC_NAME) == 0)
			name = ls[i].value;
	pd_buf_append(&b, name, strlen(name));
	pd_buf_append(&b, "{", 1);
	int first = 1;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(ls[i].name, PD_LABELS_METRIC_NAME) == 0 || api_tenant_hidden(ls[i].name))
			continue;
		if (!first)
			pd_buf_append(&b, ", ", 2);
		pd_buf_append(&b, ls[i].name, strlen(ls[i].name));
		pd_buf_append(&b, "=", 1);
		pd_labels_quote(&b, ls[i].value, strlen(ls[i].value));
		first = 0;
	}
	pd_buf_append(&b, "}", 1);
	snprintf(out, size, "%.*s", (int)b.len, b.data ? (const char *)b.data : "");
	pd_buf_fini(&b);
}

void api_side_fini(struct side *sd)
{
	api_sel_fini(&sd->sel);
	pd_storage_result_destroy(sd->res);
	free(sd->used);
	free(sd->avg);
	free(sd->raw);
	pd_pprof_destroy(sd->prof);
	memset(sd, 0, sizeof(*sd));
}

static const char *pname(const struct side *sd, const char *base, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s", sd->pfx, base);
	return buf;
}

/* Reads the side's parameters: its selector (a.query falling back to query), and
 * a time, or a range when merging. */
int api_side_params(struct api_req *r, struct api_resp *w, struct side *sd, const char *pfx,
                    int mode)
{
	char n[32];
	snprintf(sd->pfx, sizeof(sd->pfx), "%s", pfx);
	const char *q = api_param(r, pname(sd, "query", n, sizeof(n)));
	snprintf(sd->qname, sizeof(sd->qname), "%s", n);
	if (!q && *pfx) {
		q = api_param(r, "query");
		if (q)
			snprintf(sd->qname, sizeof(sd->qname), "query");
	}
	if (api_sel_parse(w, sd->qname, q, &sd->sel))
		return -1;
	if (api_sel_scope(r, &sd->sel)) {
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	if (mode == MODE_MERGE)
		sd->merge = 1;
	else if (mode == MODE_DIFF)
		sd->merge = api_param(r, pname(sd, "start", n, sizeof(n))) ||
		            api_param(r, pname(sd, "end", n, sizeof(n)));
	if (sd->merge)
		return api_range_params(r, w, pfx, &sd->start, &sd->end);
	return api_time_param(r, w, pname(sd, "time", n, sizeof(n)), r->now_ms, &sd->t);
}

static void count_read(struct pd_api_server *s, size_t len)
{
	pthread_mutex_lock(&s->m.mu);
	s->m.c.profiles_read++;
	s->m.c.profile_bytes_read += len;
	pthread_mutex_unlock(&s->m.mu);
}

static int decode_stored(struct api_resp *w, const uint8_t *raw, size_t len,
                         struct pd_pprof_profile **out)
{
	struct pd_err err = {0};
	int rc = pd_pprof_decode(out, raw, len, NULL, &err);
	if (rc)
		api_internal(w, "a stored profile could not be decoded", rc, &err);
	return rc ? -1 : 0;
}

static int load_single(struct api_req *r, struct api_resp *w, struct side *sd, int decode)
{
	struct pd_api_server *s = r->srv;
	struct pd_err err = {0};
	int64_t lo = sat_sub(sd->t, sd->lookback);
	int rc = pd_storage_select(s->o.db, sd->sel.m, sd->sel.nm, lo, sd->t, 0, &sd->res, &err);
	if (rc) {
		api_internal(w, "listing series failed", rc, &err);
		return -1;
	}
	if (sd->res->nseries == 0)
		return 0;
	if (sd->res->nseries > 1) {
		char a[512], b[512], lb[64];
		const struct pd_storage_series *s0 = &sd->res->series[0], *s1 = &sd->res->series[1];
		series_string(s0->labels, s0->nlabels, a, sizeof(a));
		series_string(s1->labels, s1->nlabels, b, sizeof(b));
		pd_config_format_duration(sd->lookback, lb, sizeof(lb));
		api_bad_param(
		    w, sd->qname,
		    "the selector matches %zu series with a profile at or up to %s before "
		    "the time (%s, %s%s); a single profile needs exactly one: narrow the "
		    "selector or use mode=merge",
		    sd->res->nseries, lb, a, b, sd->res->nseries > 2 ? ", ..." : "");
		return -1;
	}
	const struct pd_storage_series *se = &sd->res->series[0];
	int64_t at = se->ts[se->nts - 1];
	rc = pd_storage_read(s->o.db, se->labels, se->nlabels, at, &sd->raw, &sd->rawlen, &err);
	if (rc == PD_ENOTFOUND)
		return 0; /* deleted by retention in between */
	if (rc) {
		api_internal(w, "reading a profile failed", rc, &err);
		return -1;
	}
	count_read(s, sd->rawlen);
	if (decode && decode_stored(w, sd->raw, sd->rawlen, &sd->prof))
		return -1;
	sd->used = calloc(1, 1);
	if (!sd->used) {
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	sd->used[0] = 1;
	sd->found = 1;
	sd->nprofiles = sd->nseries = 1;
	sd->mint = sd->maxt = at;
	return 0;
}

struct item {
	int64_t t;
	size_t series;
};

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->series < y->series ? -1 : x->series > y->series;
}

static int merge_emit(void *ctx, struct pd_pprof_profile *p, size_t count, int64_t first_t,
                      int64_t last_t, size_t bytes)
{
	struct merge_state *m = ctx;
	struct side *sd = m->sd;
	struct group *g = m->g;
	if (m->bytes + bytes > m->s->o.max_merge_bytes) {
		pd_pprof_destroy(p);
		m->cut = "the server's limit on bytes read by a merge";
		return MERGE_STOP;
	}
	m->bytes += bytes;
	pthread_mutex_lock(&m->s->m.mu);
	m->s->m.c.profiles_read += count;
	m->s->m.c.profile_bytes_read += bytes;
	pthread_mutex_unlock(&m->s->m.mu);
	int rc = pd_pprof_merger_add(m->mg, p, &m->err);
	pd_pprof_destroy(p);
	if (rc) {
		m->bad = rc == PD_EINCOMPAT || rc == PD_EINVAL;
		m->bad_t = first_t;
		return rc;
	}
	if (!sd->nprofiles || first_t < sd->mint)
		sd->mint = first_t;
	if (!sd->nprofiles || last_t > sd->maxt)
		sd->maxt = last_t;
	sd->nprofiles += count;
	if (g) {
		if (!g->nprofiles || first_t < g->mint)
			g->mint = first_t;
		if (!g->nprofiles || last_t > g->maxt)
			g->maxt = last_t;
		g->nprofiles += count;
	}
	if (m->series != SIZE_MAX && !sd->used[m->series]) {
		sd->used[m->series] = 1;
		sd->nseries++;
		if (g)
			g->nseries++; /* a series is in one group only */
	}
	return 0;
}

/* The profiles a merge over [start, end] takes: the first max_profiles by time
 * (ties by series), chosen from the timestamps. Lists sd->res and sets
 * (*upto)[i] to the last time of series i to merge (INT64_MIN: none of it);
 * *n counts the profiles in the range, *take those chosen. -1 after an error. */
int api_merge_plan(struct api_req *r, struct api_resp *w, struct side *sd, uint64_t max_profiles,
                   int64_t **upto, size_t *n, size_t *take)
{
	struct pd_api_server *s = r->srv;
	struct pd_err err = {0};
	struct item *items = NULL;
	*upto = NULL;
	*n = *take = 0;
	int rc =
	    pd_storage_select(s->o.db, sd->sel.m, sd->sel.nm, sd->start, sd->end, 0, &sd->res, &err);
	if (rc) {
		api_internal(w, "listing series failed", rc, &err);
		return -1;
	}
	size_t all = 0;
	for (size_t i = 0; i < sd->res->nseries; i++)
		all += sd->res->series[i].nts;
	if (all == 0)
		return 0;
	items = malloc(all * sizeof(*items));
	*upto = malloc(sd->res->nseries * sizeof(**upto));
	sd->used = calloc(sd->res->nseries, 1);
	if (!items || !*upto || !sd->used) {
		free(items);
		free(*upto);
		*upto = NULL;
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	size_t k = 0;
	for (size_t i = 0; i < sd->res->nseries; i++)
		for (size_t j = 0; j < sd->res->series[i].nts; j++)
			items[k++] = (struct item){sd->res->series[i].ts[j], i};
	qsort(items, all, sizeof(*items), item_cmp);
	/* the earliest max_profiles: each series up to its last one among them */
	*n = all;
	*take = all < max_profiles ? all : (size_t)max_profiles;
	for (size_t i = 0; i < sd->res->nseries; i++)
		(*upto)[i] = INT64_MIN;
	for (size_t i = 0; i < *take; i++)
		(*upto)[items[i].series] = items[i].t;
	free(items);
	return 0;
}

/* The store merges series i of sd->res over [start, upto] into m->mg, chunk by
 * chunk (by stack id), so no profile is decoded on its own. 0, MERGE_STOP (a
 * limit: m->cut says which) or -1 after setting the error. */
static int merge_series(struct api_resp *w, struct merge_state *m, size_t i, int64_t upto)
{
	struct side *sd = m->sd;
	const struct pd_storage_series *se = &sd->res->series[i];
	m->series = i;
	m->cut = NULL;
	struct pd_storage_merge_range rg = {se->labels, se->nlabels, sd->start, upto};
	int rc = pd_storage_merge_ranges(m->s->o.db, &rg, 1, merge_emit, m, &m->err);
	if (rc == MERGE_STOP)
		return MERGE_STOP;
	if (rc && m->bad) {
		char a[512];
		series_string(se->labels, se->nlabels, a, sizeof(a));
		api_bad_param(w, sd->qname,
		              "the matching profiles cannot be merged: %s (adding %s at %lld); "
		              "select one profile type%s",
		              m->err.msg, a, (long long)m->bad_t,
		              m->g ? " or group by __name__" : "");
		return -1;
	}
	if (rc) {
		api_internal(w, "reading profiles to merge failed", rc, &m->err);
		return -1;
	}
	return 0;
}

/* Series order[first, first + count) of sd->res (order NULL: in place), each over
 * [start, upto[i]], merged into m->mg. Series by series (merge_series) when the
 * store merges range by range (the local store); else (ClickHouse) as many series
 * per call as the store sums at once (pd_storage_merge_batch), the series of a
 * call marked used once it gave profiles. Returns as
 * merge_series does. */
int api_merge_some(struct api_resp *w, struct merge_state *m, const size_t *order,
                   size_t first, size_t count, const int64_t *upto)
{
	struct side *sd = m->sd;
	size_t batch = pd_storage_merge_batch(m->s->o.db);
	if (batch == 1) {
		for (size_t k = first; k < first + count; k++) {
			size_t i = order ? order[k] : k;
			if (upto[i] == INT64_MIN)
				continue;
			int rc = merge_series(w, m, i, upto[i]);
			if (rc)
				return rc;
		}
		return 0;
	}
	struct pd_storage_merge_range rg[PD_STORAGE_MERGE_MAX_RANGES];
	size_t which[PD_STORAGE_MERGE_MAX_RANGES];
	for (size_t k = first; k < first + count;) {
		size_t n = 0;
		for (; k < first + count && n < batch; k++) {
			size_t i = order ? order[k] : k;
			const struct pd_storage_series *se = &sd->res->series[i];
			if (upto[i] == INT64_MIN)
				continue;
			rg[n] = (struct pd_storage_merge_range){se->labels, se->nlabels, sd->start, upto[i]};
			which[n++] = i;
		}
		if (!n)
			break;
		size_t before = sd->nprofiles;
		m->series = SIZE_MAX;
		m->cut = NULL;
		int rc = pd_storage_merge_ranges(m->s->o.db, rg, n, merge_emit, m, &m->err);
		if (rc == MERGE_STOP)
			return MERGE_STOP;
		if (rc && (m->bad || rc == PD_EINCOMPAT)) {
			api_bad_param(w, sd->qname,
			              "the matching profiles cannot be merged: %s; select one profile "
			              "type%s",
			              m->err.msg, m->g ? " or group by __name__" : "");
			return -1;
		}
		if (rc) {
			api_internal(w, "reading profiles to merge failed", rc, &m->err);
			return -1;
		}
		if (sd->nprofiles == before)
			continue;
		for (size_t j = 0; j < n; j++) {
			if (sd->used[which[j]])
				continue;
			sd->used[which[j]] = 1;
			sd->nseries++;
			if (m->g)
				m->g->nseries++;
		}
	}
	return 0;
}

/* Warns when a limit cut the merge short. */
void api_merge_warn_cut(struct pd_api_server *s, struct api_resp *w, const struct side *sd,
                        size_t n, const char *cut)
{
	if (!cut || !sd->nprofiles)
		return;
	char t0[40], t1[40];
	pd_time_format(sd->mint, t0, sizeof(t0));
	pd_time_format(sd->maxt, t1, sizeof(t1));
	api_warn(w,
	         "%smerge cut at %zu of %zu profiles by %s: the merged profiles span %s to %s; "
	         "narrow the range for the rest",
	         sd->pfx, sd->nprofiles, n, cut, t0, t1);
	pthread_mutex_lock(&s->m.mu);
	s->m.c.merges_truncated++;
	pthread_mutex_unlock(&s->m.mu);
}

/* Applies the aggregation to a merge of count profiles, *p replaced by its
 * average where one is taken; *avg gets, per sample type, 1 for averaged (new,
 * owned by the caller). -1 after setting the error. */
int api_aggregate(struct api_resp *w, int agg, struct pd_pprof_profile **p, size_t count,
                  unsigned char **avg, size_t *navg)
{
	size_t nt = pd_pprof_sample_type_count(*p), nav = 0;
	*avg = calloc(nt ? nt : 1, 1);
	*navg = nt;
	if (!*avg) {
		api_error(w, 500, "internal", "out of memory");
		return -1;
	}
	for (size_t i = 0; i < nt; i++) {
		(*avg)[i] = agg == AGG_AVG || (agg == AGG_DEFAULT && pd_pprof_snapshot_type(*p, i));
		nav += (*avg)[i];
	}
	w->aggregation = !nav ? "sum" : nav == nt ? "avg" : "mixed";
	if (!nav || count <= 1)
		return 0;
	struct pd_pprof_profile *a = NULL;
	struct pd_err err = {0};
	int rc = pd_pprof_average(*p, *avg, count, &a, &err);
	if (rc) {
		api_internal(w, "averaging the merge failed", rc, &err);
		return -1;
	}
	pd_pprof_destroy(*p);
	*p = a;
	return 0;
}

/* A merge over [start, end] of every matching series (api_merge_plan picks the
 * profiles, merge_series reads them). */
static int load_merge(struct api_req *r, struct api_resp *w, struct side *sd, uint64_t max_profiles)
{
	struct pd_api_server *s = r->srv;
	struct pd_err err = {0};
	int64_t *upto = NULL;
	struct merge_state m = {.s = s, .sd = sd};
	size_t n, take;
	int ret = -1;
	if (api_merge_plan(r, w, sd, max_profiles, &upto, &n, &take))
		return -1;
	if (n == 0)
		return 0;
	int rc;
	if ((rc = pd_pprof_merger_create(&m.mg, &err))) {
		api_internal(w, "merging failed", rc, &err);
		goto out;
	}
	const char *limit_cut = NULL;
	rc = api_merge_some(w, &m, NULL, 0, sd->res->nseries, upto);
	if (rc == MERGE_STOP)
		limit_cut = m.cut;
	else if (rc)
		goto out;
	api_merge_warn_cut(s, w, sd, n, limit_cut ? limit_cut : take < n ? "max_profiles" : NULL);
	if (sd->nprofiles == 0) {
		ret = 0;
		goto out;
	}
	rc = pd_pprof_merger_finish(m.mg, &sd->prof, &err);
	m.mg = NULL;
	if (rc) {
		api_internal(w, "merging failed", rc, &err);
		goto out;
	}
	if (api_aggregate(w, sd->aggregation, &sd->prof, sd->nprofiles, &sd->avg, &sd->navg))
		goto out;
	sd->found = 1;
	ret = 0;
out:
	pd_pprof_merger_destroy(m.mg);
	free(upto);
	return ret;
}

int api_side_load(struct api_req *r, struct api_resp *w, struct side *sd, int decode,
                  uint64_t max_profiles)
{
	return sd->merge ? load_merge(r, w, sd, max_profiles) : load_single(r, w, sd, decode);
}
