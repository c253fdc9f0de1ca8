/* query.c: the query endpoints. /api/v1/query_range lists the timestamps of the
 * series a selector picks, reading timestamp chunks only. /api/v1/query opens
 * profiles: one (mode=single, the sample at a time or the nearest before it
 * within the lookback), a merge of every matching profile in a range
 * (mode=merge, incremental and bounded by a count and a byte budget), or the
 * difference of two such sides (mode=diff, b - a as pprof's -diff_base=a), and
 * reports on the result: meta, top, flamegraph, tags (the labels on samples, as
 * go tool pprof -tags), or proto (the gzip pprof file as a download). tag_focus
 * and tag_ignore keep the samples whose labels match, as go tool pprof's
 * -tagfocus/-tagignore, before any report; group_by_sample_label splits the
 * result by the values of one sample label and reports on each group; group_by
 * splits a merge by series labels (merged group by group) and reports on each
 * group, and both together nest the sample groups inside the series groups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_int.h"
#include "profd/symbolize.h"
#include "profd/clickhouse.h"
#include "profd/config.h"
#include "profd/pprof.h"

static int64_t sat_sub(int64_t a, int64_t b)
{
	if (b > 0 && a < INT64_MIN + b)
		return INT64_MIN;
	return a - b;
}

/* `heap{instance="a:1", job="api"}` for messages. */
static void series_string(const struct pd_tsdb_label *ls, size_t n, char *out, size_t size)
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

static const char *series_name(const struct pd_tsdb_series *s)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, PD_LABELS_METRIC_NAME) == 0)
			return s->labels[i].value;
	return NULL;
}

/* ---- query_range ------------------------------------------------------------ */

void api_query_range(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct api_sel sel = {0};
	struct pd_tsdb_result *res = NULL;
	struct pd_err err = {0};
	int64_t start, end;
	uint64_t limit;
	if (api_sel_parse(w, "query", api_param(r, "query"), &sel) ||
	    api_range_params(r, w, "", &start, &end) || api_uint_param(r, w, "limit", 0, &limit))
		goto out;
	if (api_sel_scope(r, &sel)) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	size_t want = limit && limit < SIZE_MAX ? (size_t)limit + 1 : 0;
	int rc = pd_tsdb_select(s->o.db, sel.m, sel.nm, start, end, want, &res, &err);
	if (rc) {
		api_internal(w, "listing series failed", rc, &err);
		goto out;
	}
	size_t n = res->nseries;
	if (limit && n > limit) {
		n = (size_t)limit;
		api_warn(w, "results truncated due to limit");
	}
	jput(w, "[");
	for (size_t i = 0; i < n && !w->berr; i++) {
		const struct pd_tsdb_series *se = &res->series[i];
		jput(w, i ? ",{\"labels\":" : "{\"labels\":");
		jlabels_tsdb(w, se->labels, se->nlabels);
		jput(w, ",\"timestamps\":[");
		for (size_t k = 0; k < se->nts; k++) {
			if (k)
				jput(w, ",");
			ji64(w, se->ts[k]);
		}
		jput(w, "]}");
	}
	jput(w, "]");
out:
	pd_tsdb_result_destroy(res);
	api_sel_fini(&sel);
}

/* ---- loading profiles -------------------------------------------------------- */

enum { MODE_SINGLE, MODE_MERGE, MODE_DIFF };
/* aggregation: a merge's profiles summed, averaged, or (the default) averaged in
 * the sample types that are snapshots (pd_pprof_snapshot_type), summed in others */
enum { AGG_DEFAULT, AGG_SUM, AGG_AVG };
enum {
	REPORT_META,
	REPORT_TOP,
	REPORT_FLAME,
	REPORT_PROTO,
	REPORT_TAGS,
	REPORT_FOLDED,
	REPORT_SPEEDSCOPE,
	REPORT_DOT,
	REPORT_SVG
};

/* Reports that answer a file, not JSON: one profile only, 204 when none. */
#define FILE_REPORT(r) ((r) == REPORT_PROTO || (r) == REPORT_FOLDED || (r) == REPORT_SPEEDSCOPE)
/* Reports that answer with one document, not JSON, so cannot be grouped. */
#define ONE_DOCUMENT(r) (FILE_REPORT(r) || (r) == REPORT_DOT || (r) == REPORT_SVG)

/* One side of a query: a single profile or a merge. */
struct side {
	char pfx[4];    /* "", "a." or "b." */
	char qname[32]; /* the selector's parameter name, for errors */
	struct api_sel sel;
	int merge;
	int64_t t, start, end; /* single: t; merge: [start, end] */
	int64_t lookback;      /* single: how far before t a sample may be */
	struct pd_tsdb_result *res;
	unsigned char *used; /* per series of res: contributed */
	size_t nseries;      /* series that contributed */
	size_t nprofiles;
	int64_t mint, maxt; /* sample times that contributed */
	uint8_t *raw;       /* single: the stored bytes */
	size_t rawlen;
	struct pd_pprof_profile *prof;
	int found;
	int symbolized;                 /* the symbolizer ran on the result (sym says what it did) */
	struct pd_symbolize_result sym;
	int aggregation;    /* AGG_*: how a merge's profiles are combined */
	unsigned char *avg; /* merge: per sample type of prof, 1 when averaged */
	size_t navg;
};

static void side_fini(struct side *sd)
{
	api_sel_fini(&sd->sel);
	pd_tsdb_result_destroy(sd->res);
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
static int side_params(struct api_req *r, struct api_resp *w, struct side *sd, const char *pfx,
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
	int rc = pd_tsdb_select(s->o.db, sd->sel.m, sd->sel.nm, lo, sd->t, 0, &sd->res, &err);
	if (rc) {
		api_internal(w, "listing series failed", rc, &err);
		return -1;
	}
	if (sd->res->nseries == 0)
		return 0;
	if (sd->res->nseries > 1) {
		char a[512], b[512], lb[64];
		const struct pd_tsdb_series *s0 = &sd->res->series[0], *s1 = &sd->res->series[1];
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
	const struct pd_tsdb_series *se = &sd->res->series[0];
	int64_t at = se->ts[se->nts - 1];
	rc = pd_tsdb_read(s->o.db, se->labels, se->nlabels, at, &sd->raw, &sd->rawlen, &err);
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

/* The request's symbolize words (already checked by api_symbolize) set on the
 * profiles its reports read, each the request's own. */
static void report_names(struct api_req *r, struct api_resp *w, struct pd_pprof_profile *a,
                         struct pd_pprof_profile *b, struct pd_pprof_profile *c,
                         struct pd_pprof_profile *d)
{
	enum pd_pprof_names names = PD_PPROF_NAMES_DEFAULT;
	if (api_report_names(r, w, &names))
		return;
	pd_pprof_set_names(a, names);
	pd_pprof_set_names(b, names);
	pd_pprof_set_names(c, names);
	pd_pprof_set_names(d, names);
	/* granularity: what a node of the reports is, as pprof's -lines ... */
	enum pd_pprof_granularity g = PD_PPROF_GRAN_FUNCTIONS;
	struct pd_err err = {0};
	if (pd_pprof_granularity_parse(api_param(r, "granularity"), &g, &err))
		return; /* checked with the filters, before any work */
	pd_pprof_set_granularity(a, g);
	pd_pprof_set_granularity(b, g);
	pd_pprof_set_granularity(c, g);
	pd_pprof_set_granularity(d, g);
}

/* What one group of group_by collected (see load_groups). */
struct group {
	size_t first, count; /* its series: order[first .. first + count) */
	size_t nprofiles, nseries;
	int64_t mint, maxt;
	struct pd_pprof_profile *whole;   /* the merge */
	struct pd_pprof_profile *focused; /* after tag_focus/tag_ignore, or NULL */
	int idx;                          /* sample_index in its profile */
	int64_t total;                    /* of idx over focused (else whole) */
	unsigned char *avg;               /* per sample type of whole: averaged */
	size_t navg;
};

/* What a merge collects from the store, series by series. */
struct merge_state {
	struct pd_api_server *s;
	struct side *sd;
	struct group *g; /* group_by: the group being merged, else NULL */
	struct pd_pprof_merger *mg;
	size_t series;    /* index in sd->res being merged */
	uint64_t bytes;   /* decoded bytes read so far */
	const char *cut;  /* why the merge stopped early, or NULL */
	int bad;          /* the profiles cannot be merged: err says why */
	struct pd_err err;
	int64_t bad_t;
};

#define MERGE_STOP 1 /* an emit's way to stop the store's merge; not an error */

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
static int merge_plan(struct api_req *r, struct api_resp *w, struct side *sd, uint64_t max_profiles,
                      int64_t **upto, size_t *n, size_t *take)
{
	struct pd_api_server *s = r->srv;
	struct pd_err err = {0};
	struct item *items = NULL;
	*upto = NULL;
	*n = *take = 0;
	int rc =
	    pd_tsdb_select(s->o.db, sd->sel.m, sd->sel.nm, sd->start, sd->end, 0, &sd->res, &err);
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
	const struct pd_tsdb_series *se = &sd->res->series[i];
	m->series = i;
	m->cut = NULL;
	int rc = pd_tsdb_merge(m->s->o.db, se->labels, se->nlabels, sd->start, upto, merge_emit, m,
	                       &m->err);
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
 * [start, upto[i]], merged into m->mg. Locally series by series (merge_series);
 * in ClickHouse up to PD_CLICKHOUSE_MERGE_MAX_RANGES series per query, summed by
 * ClickHouse, the series of a query marked used once it gave profiles. Returns as
 * merge_series does. */
static int merge_some(struct api_resp *w, struct merge_state *m, const size_t *order,
                      size_t first, size_t count, const int64_t *upto)
{
	struct side *sd = m->sd;
	if (!pd_tsdb_clickhouse(m->s->o.db)) {
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
	struct pd_tsdb_merge_range rg[PD_CLICKHOUSE_MERGE_MAX_RANGES];
	size_t which[PD_CLICKHOUSE_MERGE_MAX_RANGES];
	for (size_t k = first; k < first + count;) {
		size_t n = 0;
		for (; k < first + count && n < PD_CLICKHOUSE_MERGE_MAX_RANGES; k++) {
			size_t i = order ? order[k] : k;
			const struct pd_tsdb_series *se = &sd->res->series[i];
			if (upto[i] == INT64_MIN)
				continue;
			rg[n] = (struct pd_tsdb_merge_range){se->labels, se->nlabels, sd->start, upto[i]};
			which[n++] = i;
		}
		if (!n)
			break;
		size_t before = sd->nprofiles;
		m->series = SIZE_MAX;
		m->cut = NULL;
		int rc = pd_tsdb_merge_ranges(m->s->o.db, rg, n, merge_emit, m, &m->err);
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
static void merge_warn_cut(struct pd_api_server *s, struct api_resp *w, const struct side *sd,
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
static int aggregate(struct api_resp *w, int agg, struct pd_pprof_profile **p, size_t count,
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

/* A merge over [start, end] of every matching series (merge_plan picks the
 * profiles, merge_series reads them). */
static int load_merge(struct api_req *r, struct api_resp *w, struct side *sd, uint64_t max_profiles)
{
	struct pd_api_server *s = r->srv;
	struct pd_err err = {0};
	int64_t *upto = NULL;
	struct merge_state m = {.s = s, .sd = sd};
	size_t n, take;
	int ret = -1;
	if (merge_plan(r, w, sd, max_profiles, &upto, &n, &take))
		return -1;
	if (n == 0)
		return 0;
	int rc;
	if ((rc = pd_pprof_merger_create(&m.mg, &err))) {
		api_internal(w, "merging failed", rc, &err);
		goto out;
	}
	const char *limit_cut = NULL;
	rc = merge_some(w, &m, NULL, 0, sd->res->nseries, upto);
	if (rc == MERGE_STOP)
		limit_cut = m.cut;
	else if (rc)
		goto out;
	merge_warn_cut(s, w, sd, n, limit_cut ? limit_cut : take < n ? "max_profiles" : NULL);
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
	if (aggregate(w, sd->aggregation, &sd->prof, sd->nprofiles, &sd->avg, &sd->navg))
		goto out;
	sd->found = 1;
	ret = 0;
out:
	pd_pprof_merger_destroy(m.mg);
	free(upto);
	return ret;
}

static int side_load(struct api_req *r, struct api_resp *w, struct side *sd, int decode,
                     uint64_t max_profiles)
{
	return sd->merge ? load_merge(r, w, sd, max_profiles) : load_single(r, w, sd, decode);
}

/* ---- reports ----------------------------------------------------------------- */

static void side_summary(struct api_resp *w, const struct side *sd)
{
	jput(w, "\"profileCount\":");
	ju64(w, sd->nprofiles);
	jput(w, ",\"seriesCount\":");
	ju64(w, sd->nseries);
	jput(w, ",\"minTime\":");
	ji64(w, sd->mint);
	jput(w, ",\"maxTime\":");
	ji64(w, sd->maxt);
	if (!sd->merge) {
		jput(w, ",\"timestamp\":");
		ji64(w, sd->mint);
	}
	jput(w, ",\"series\":[");
	size_t shown = 0;
	for (size_t i = 0; sd->res && i < sd->res->nseries && shown < 100; i++) {
		if (!sd->used[i])
			continue;
		if (shown++)
			jput(w, ",");
		jlabels_tsdb(w, sd->res->series[i].labels, sd->res->series[i].nlabels);
	}
	jput(w, "]");
}

/* A sample type's or unit's name as a JSON string, all its bytes (NULs too). */
static void jtype(struct api_resp *w, const struct pd_pprof_profile *p, size_t i)
{
	size_t len;
	const char *s = pd_pprof_sample_type_n(p, i, &len);
	jstrn(w, s, len);
}

static void junit(struct api_resp *w, const struct pd_pprof_profile *p, size_t i)
{
	size_t len;
	const char *s = pd_pprof_sample_unit_n(p, i, &len);
	jstrn(w, s, len);
}

static void report_meta(struct api_resp *w, const struct pd_pprof_profile *p,
                        const struct side *sides, size_t nsides)
{
	int def = pd_pprof_default_sample_index(p);
	jput(w, "{\"sampleTypes\":[");
	for (size_t i = 0; i < pd_pprof_sample_type_count(p); i++) {
		jput(w, i ? ",{\"type\":" : "{\"type\":");
		jtype(w, p, i);
		jput(w, ",\"unit\":");
		junit(w, p, i);
		jput(w, ",\"total\":");
		ji64(w, pd_pprof_total(p, (int)i));
		if (nsides == 2) {
			/* a diff: each side's own total (the base's samples are negated in it) */
			int64_t bs, cs;
			pd_pprof_diff_sums(p, (int)i, &bs, &cs);
			jput(w, ",\"baseTotal\":");
			ji64(w, (int64_t)(0 - (uint64_t)bs));
			jput(w, ",\"newTotal\":");
			ji64(w, cs);
		}
		if (sides[0].merge && i < sides[0].navg)
			jput(w, sides[0].avg[i] ? ",\"aggregation\":\"avg\"" : ",\"aggregation\":\"sum\"");
		jput(w, "}");
	}
	jput(w, "],\"defaultSampleType\":");
	if (def >= 0)
		jtype(w, p, (size_t)def);
	else
		jput(w, "null");
	jput(w, ",\"defaultSampleIndex\":");
	ji64(w, def);
	jput(w, ",\"periodType\":{\"type\":");
	jstr(w, pd_pprof_period_type(p));
	jput(w, ",\"unit\":");
	jstr(w, pd_pprof_period_unit(p));
	jput(w, "},\"period\":");
	ji64(w, pd_pprof_period(p));
	jput(w, ",\"timeNanos\":");
	ji64(w, pd_pprof_time_nanos(p));
	jput(w, ",\"durationNanos\":");
	ji64(w, pd_pprof_duration_nanos(p));
	jput(w, ",\"sampleCount\":");
	ju64(w, pd_pprof_sample_count(p));
	jput(w, ",\"locationCount\":");
	ju64(w, pd_pprof_location_count(p));
	jput(w, ",\"functionCount\":");
	ju64(w, pd_pprof_function_count(p));
	jput(w, ",\"mappingCount\":");
	ju64(w, pd_pprof_mapping_count(p));
	if (sides[0].symbolized) {
		const struct pd_symbolize_result *y = &sides[0].sym;
		jput(w, ",\"symbolization\":{\"locations\":");
		ju64(w, y->locations);
		jput(w, ",\"resolved\":");
		ju64(w, y->resolved);
		jput(w, ",\"unresolved\":");
		ju64(w, y->unresolved);
		jput(w, y->partial ? ",\"partial\":true,\"missing\":" : ",\"partial\":false,\"missing\":");
		jstr(w, y->missing);
		jput(w, "}");
	}
	if (nsides == 1) {
		jput(w, ",");
		side_summary(w, &sides[0]);
	} else {
		size_t np = sides[0].nprofiles + sides[1].nprofiles;
		int64_t mint = sides[0].mint < sides[1].mint ? sides[0].mint : sides[1].mint;
		int64_t maxt = sides[0].maxt > sides[1].maxt ? sides[0].maxt : sides[1].maxt;
		jput(w, ",\"profileCount\":");
		ju64(w, np);
		jput(w, ",\"minTime\":");
		ji64(w, mint);
		jput(w, ",\"maxTime\":");
		ji64(w, maxt);
		jput(w, ",\"a\":{");
		side_summary(w, &sides[0]);
		jput(w, "},\"b\":{");
		side_summary(w, &sides[1]);
		jput(w, "}");
	}
	jput(w, "}");
}

static int sample_index(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                        int *idx)
{
	struct pd_err err = {0};
	if (pd_pprof_sample_index(p, api_param(r, "sample_index"), idx, &err)) {
		api_bad_param(w, "sample_index", "%s", err.msg);
		return -1;
	}
	return 0;
}

static double pct(int64_t v, int64_t total)
{
	return total ? (double)v * 100.0 / (double)total : 0;
}

/* whole: the profile before tag filters, whose total pprof's percentages and node
 * cut are relative to (p itself when there are none). */
/* diff: p is a diff, whose rows also say each side's values (baseFlat, baseCum:
 * side a's; newFlat, newCum: side b's) and whose totals each side's. */
static void report_top(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                       const struct pd_pprof_profile *whole, uint64_t limit, double nodefraction,
                       int diff)
{
	struct pd_pprof_top *t = NULL;
	struct pd_err err = {0};
	int idx;
	if (sample_index(r, w, p, &idx))
		return;
	int rc = pd_pprof_top(p, idx, &t, &err);
	if (rc) {
		api_internal(w, "computing the top table failed", rc, &err);
		return;
	}
	int64_t kept_total = t->total;
	t->total = pd_pprof_total(whole, idx);
	size_t all = t->nrows;
	int64_t cutoff = 0;
	if (nodefraction > 0)
		pd_pprof_top_apply_nodefraction(t, nodefraction, &cutoff);
	size_t cut = t->nrows;
	/* pprof's inline marks come from the rows shown */
	size_t shown = pd_pprof_top_keep(t, p, limit < cut ? (size_t)limit : 0,
	                                 PD_PPROF_DEFAULT_EDGEFRACTION);
	jput(w, "{\"sampleType\":");
	jtype(w, p, (size_t)idx);
	jput(w, ",\"unit\":");
	junit(w, p, (size_t)idx);
	jput(w, ",\"sampleIndex\":");
	ji64(w, t->sample_index);
	jput(w, ",\"total\":");
	ji64(w, t->total);
	if (whole != p) {
		jput(w, ",\"focusTotal\":");
		ji64(w, kept_total);
	}
	if (diff) {
		int64_t bs, cs;
		pd_pprof_diff_sums(whole, idx, &bs, &cs);
		jput(w, ",\"baseTotal\":");
		ji64(w, (int64_t)(0 - (uint64_t)bs));
		jput(w, ",\"newTotal\":");
		ji64(w, cs);
	}
	jput(w, ",\"nodeCount\":");
	ju64(w, all);
	jput(w, ",\"dropped\":");
	ju64(w, all - cut);
	jput(w, ",\"dropCutoff\":");
	ji64(w, cutoff);
	jput(w, ",\"rows\":[");
	int64_t sum = 0;
	for (size_t i = 0; i < shown && !w->berr; i++) {
		const struct pd_pprof_top_row *row = &t->rows[i];
		sum = (int64_t)((uint64_t)sum + (uint64_t)row->flat);
		jput(w, i ? ",{\"name\":" : "{\"name\":");
		jstrn(w, row->name, row->name_len);
		jput(w, ",\"inline\":");
		jput(w, row->inline_kind == PD_PPROF_INLINED          ? "\"inline\""
		        : row->inline_kind == PD_PPROF_PARTIAL_INLINE ? "\"partial-inline\""
		                                                      : "\"\"");
		jput(w, ",\"flat\":");
		ji64(w, row->flat);
		jput(w, ",\"flatPercent\":");
		jdbl(w, pct(row->flat, t->total));
		jput(w, ",\"sumPercent\":");
		jdbl(w, pct(sum, t->total));
		jput(w, ",\"cum\":");
		ji64(w, row->cum);
		jput(w, ",\"cumPercent\":");
		jdbl(w, pct(row->cum, t->total));
		if (diff) {
			/* the base's values are negated in the diff: its own are minus them */
			jput(w, ",\"baseFlat\":");
			ji64(w, (int64_t)(0 - (uint64_t)row->base_flat));
			jput(w, ",\"newFlat\":");
			ji64(w, (int64_t)((uint64_t)row->flat - (uint64_t)row->base_flat));
			jput(w, ",\"baseCum\":");
			ji64(w, (int64_t)(0 - (uint64_t)row->base_cum));
			jput(w, ",\"newCum\":");
			ji64(w, (int64_t)((uint64_t)row->cum - (uint64_t)row->base_cum));
		}
		jput(w, "}");
	}
	jput(w, "]}");
	pd_pprof_top_destroy(t);
}

static void report_flame(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                         int64_t min_total)
{
	struct pd_pprof_flame *f = NULL;
	struct pd_err err = {0};
	int idx;
	if (sample_index(r, w, p, &idx))
		return;
	int rc = pd_pprof_flame(p, idx, &f, &err);
	if (rc) {
		api_internal(w, "computing the flame graph failed", rc, &err);
		return;
	}
	if (!w->berr)
		w->berr = pd_pprof_flame_json(f, min_total, &w->body);
	pd_pprof_flame_destroy(f);
}

/* `20240102T150405Z` (with .mmm when the milliseconds are not zero). */
static void compact_time(int64_t ms, char *out, size_t size)
{
	time_t secs = (time_t)(ms >= 0 ? ms / 1000 : -((-(ms + 1)) / 1000) - 1);
	int frac = (int)(ms - (int64_t)secs * 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y%m%dT%H%M%S", &tm);
	if (frac)
		snprintf(out, size, "%s.%03dZ", base, frac);
	else
		snprintf(out, size, "%sZ", base);
}

/* The profile type the side's series share, or NULL. */
static const char *side_type(const struct side *sd)
{
	const char *name = NULL;
	for (size_t i = 0; sd->res && i < sd->res->nseries; i++) {
		if (!sd->used[i])
			continue;
		const char *n = series_name(&sd->res->series[i]);
		if (!n || (name && strcmp(name, n) != 0))
			return NULL;
		name = n;
	}
	return name;
}

/* "<type>[-merge|-diff]-<time><ext>", with bytes unsafe in a file name as '_'. */
static void download_name(const struct side *sides, size_t nsides, const char *ext, char *name,
                          size_t size)
{
	char ts[40];
	const struct side *last = &sides[nsides - 1];
	const char *type = side_type(last);
	compact_time(last->maxt, ts, sizeof(ts));
	snprintf(name, size, "%s%s-%s%s", type ? type : "profile",
	         nsides == 2 ? "-diff" : sides[0].merge ? "-merge" : "", ts, ext);
	for (char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			*c = '_';
}

static void set_download(struct api_resp *w, const struct side *sides, size_t nsides)
{
	char name[200];
	download_name(sides, nsides, ".pb.gz", name, sizeof(name));
	size_t n = strlen(name) + 40;
	w->disposition = malloc(n);
	if (w->disposition)
		snprintf(w->disposition, n, "attachment; filename=\"%s\"", name);
}

static void report_proto(struct api_resp *w, const struct side *sides, size_t nsides,
                         const struct pd_pprof_profile *p)
{
	struct pd_err err = {0};
	uint8_t *out = NULL;
	size_t len = 0;
	int rc;
	if (nsides == 1 && !sides[0].merge && sides[0].raw)
		rc = pd_gzip(sides[0].raw, sides[0].rawlen, 1, &out, &len, &err);
	else
		rc = pd_pprof_encode(p, 1, &out, &len, &err);
	if (rc) {
		api_internal(w, "encoding the profile failed", rc, &err);
		return;
	}
	/* not the envelope: the file itself */
	w->json = 0;
	w->status = 200;
	w->content_type = "application/octet-stream";
	w->no_gzip = 1;
	pd_buf_fini(&w->body);
	pd_buf_init(&w->body, 0);
	w->berr = pd_buf_append(&w->body, out, len);
	free(out);
	set_download(w, sides, nsides);
}

static void report_tags(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p)
{
	struct pd_pprof_tags *t = NULL;
	struct pd_err err = {0};
	int idx;
	if (sample_index(r, w, p, &idx))
		return;
	const char *unit = api_param(r, "unit");
	int rc = pd_pprof_tags(p, idx, unit, &t, &err);
	if (rc) {
		api_internal(w, "listing the sample labels failed", rc, &err);
		return;
	}
	jput(w, "{\"sampleType\":");
	jtype(w, p, (size_t)idx);
	jput(w, ",\"unit\":");
	junit(w, p, (size_t)idx);
	jput(w, ",\"sampleIndex\":");
	ji64(w, idx);
	jput(w, ",\"keys\":[");
	for (size_t i = 0; i < t->nkeys && !w->berr; i++) {
		const struct pd_pprof_tag_key *k = &t->keys[i];
		jput(w, i ? ",{\"key\":" : "{\"key\":");
		jstrn(w, k->key, k->key_len);
		jput(w, ",\"total\":");
		ji64(w, k->total);
		jput(w, ",\"values\":[");
		for (size_t j = 0; j < k->nvalues; j++) {
			jput(w, j ? ",{\"value\":" : "{\"value\":");
			jstrn(w, k->values[j].name, k->values[j].name_len);
			jput(w, ",\"total\":");
			ji64(w, k->values[j].total);
			jput(w, ",\"percent\":");
			jdbl(w, pct(k->values[j].total, k->total));
			jput(w, "}");
		}
		jput(w, "]}");
	}
	jput(w, "]}");
	pd_pprof_tags_destroy(t);
}

/* ---- labels on samples: filters and groups ----------------------------------- */

/* Most tag_focus or tag_ignore parameters one query may give. */
#define MAX_TAG_FILTERS 16
/* Default and largest number of groups group_by_sample_label returns. */
#define DEFAULT_SAMPLE_GROUPS 50
#define MAX_SAMPLE_GROUPS 1000

struct tag_filters {
	struct pd_pprof_tagfilter *focus[MAX_TAG_FILTERS], *ignore[MAX_TAG_FILTERS];
	size_t nfocus, nignore;
	struct pd_pprof_namefilter *names; /* focus ... prune_from, or NULL */
	enum pd_pprof_names names_mode;    /* what the stack filters match against */
};

static void tag_filters_fini(struct tag_filters *tf)
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

static int tag_filters_parse(struct api_req *r, struct api_resp *w, struct tag_filters *tf)
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
static int tag_filters_apply(struct api_resp *w, const struct tag_filters *tf,
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

#define WARN_FILTERED_ALL "tag_focus and tag_ignore left no sample"
#define WARN_STACKS_ALL "the stack filters (focus, ignore, hide, show, show_from) left no sample"

static void one_report(struct api_req *r, struct api_resp *w, int report,
                       const struct pd_pprof_profile *p, const struct pd_pprof_profile *whole,
                       const struct side *sides, size_t nsides, uint64_t limit, double nodefraction,
                       int64_t min_total)
{
	switch (report) {
	case REPORT_META:
		report_meta(w, p, sides, nsides);
		break;
	case REPORT_TOP:
		report_top(r, w, p, whole, limit, nodefraction, nsides == 2);
		break;
	case REPORT_FLAME:
		report_flame(r, w, p, min_total);
		break;
	case REPORT_TAGS:
		report_tags(r, w, p);
		break;
	case REPORT_PROTO:
		report_proto(w, sides, nsides, p);
		break;
	case REPORT_FOLDED:
	case REPORT_SPEEDSCOPE: {
		char name[200];
		int idx;
		if (sample_index(r, w, p, &idx))
			break;
		download_name(sides, nsides,
		              report == REPORT_FOLDED ? ".folded.txt" : ".speedscope.json", name,
		              sizeof(name));
		api_report_export(w, report == REPORT_SPEEDSCOPE, p, idx, name);
		break;
	}
	case REPORT_DOT:
	case REPORT_SVG:
		api_report_callgraph(r, w, p, whole, report == REPORT_SVG);
		break;
	}
}

/* group_by_sample_label: one report per value of the key, and one for the samples
 * without it: {"label","groups":[{"value","sampleCount","total","report"}],
 * "droppedGroups"}. */
static void report_groups(struct api_req *r, struct api_resp *w, int report, const char *key,
                          uint64_t max_groups, const struct pd_pprof_profile *p,
                          const struct pd_pprof_profile *whole, const struct side *sides,
                          size_t nsides, uint64_t limit, double nodefraction, int64_t min_total)
{
	struct pd_pprof_tag_group *g = NULL;
	size_t n = 0, dropped = 0;
	struct pd_err err = {0};
	int idx;
	if (sample_index(r, w, p, &idx))
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
	jtype(w, p, (size_t)idx);
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
		one_report(r, w, report, g[i].profile, whole, sides, nsides, limit, nodefraction,
		           min_total);
		jput(w, "}");
	}
	jput(w, "]}");
	pd_pprof_tag_groups_free(g, n);
}

/* ---- group_by: a merge split by series labels --------------------------------- */

/* Default and largest number of groups group_by returns. */
#define DEFAULT_SERIES_GROUPS 50
#define MAX_SERIES_GROUPS 1000

static void group_fini(struct group *g)
{
	free(g->avg);
	pd_pprof_destroy(g->focused);
	pd_pprof_destroy(g->whole);
	memset(g, 0, sizeof(*g));
}

/* 1 when a weighs less than b: a smaller total, or as much and later in label
 * order (so of two groups alike the first in label order stays). */
static int group_lighter(const struct group *a, const struct group *b)
{
	if (a->total != b->total)
		return a->total < b->total;
	return a->first > b->first;
}

static int group_first_cmp(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	return a->first < b->first ? -1 : a->first > b->first;
}

/* What load_groups found. */
struct groups {
	size_t *order;   /* series indexes of sd->res, grouped (api_group_sort) */
	struct group *g; /* the groups kept, in label order */
	size_t n;
	size_t dropped; /* groups with profiles beyond max_groups */
};

static void groups_fini(struct groups *gs)
{
	for (size_t i = 0; i < gs->n; i++)
		group_fini(&gs->g[i]);
	free(gs->g);
	free(gs->order);
	memset(gs, 0, sizeof(*gs));
}

/* Merges the group of order[first, first + count) into g, filters it and weighs
 * it. 0 (g->nprofiles 0: nothing of it was chosen), MERGE_STOP (a limit cut it:
 * what was merged is in g) or -1 after setting the error. */
static int load_group(struct api_req *r, struct api_resp *w, struct merge_state *m,
                      const int64_t *upto, const size_t *order, struct group *g,
                      const struct tag_filters *tf, size_t *kept)
{
	struct pd_err err = {0};
	int stop = 0, rc;
	m->g = g;
	if ((rc = pd_pprof_merger_create(&m->mg, &err))) {
		api_internal(w, "merging failed", rc, &err);
		return -1;
	}
	rc = merge_some(w, m, order, g->first, g->count, upto);
	if (rc == MERGE_STOP)
		stop = 1;
	else if (rc)
		return -1; /* load_groups destroys m->mg */
	if (g->nprofiles == 0) {
		pd_pprof_merger_destroy(m->mg);
		m->mg = NULL;
		return stop ? MERGE_STOP : 0;
	}
	rc = pd_pprof_merger_finish(m->mg, &g->whole, &err);
	m->mg = NULL;
	if (rc) {
		api_internal(w, "merging failed", rc, &err);
		return -1;
	}
	if (aggregate(w, m->sd->aggregation, &g->whole, g->nprofiles, &g->avg, &g->navg))
		return -1;
	size_t k = 0;
	if (tag_filters_apply(w, tf, g->whole, &g->focused, &k))
		return -1;
	*kept += k;
	const struct pd_pprof_profile *p = g->focused ? g->focused : g->whole;
	if (sample_index(r, w, p, &g->idx))
		return -1;
	g->total = pd_pprof_total(p, g->idx);
	return stop ? MERGE_STOP : 0;
}

/* group_by: the profiles load_merge would merge (the same first max_profiles
 * by time, the same byte limit), merged per group of series with equal values of
 * gb's labels. Groups are merged one after another and weighed by their total
 * of sample_index (after tag filters); only the max_groups heaviest are kept,
 * so memory holds at most max_groups + 1 merges. gs->n is 0 when nothing
 * matched. */
static int load_groups(struct api_req *r, struct api_resp *w, struct side *sd,
                       const struct api_group_by *gb, uint64_t max_profiles, size_t max_groups,
                       const struct tag_filters *tf, struct groups *gs)
{
	struct pd_api_server *s = r->srv;
	struct merge_state m = {.s = s, .sd = sd};
	struct group g = {0};
	int64_t *upto = NULL;
	size_t n, take, kept = 0;
	int ret = -1, rc;
	memset(gs, 0, sizeof(*gs));
	if (merge_plan(r, w, sd, max_profiles, &upto, &n, &take))
		return -1;
	if (n == 0)
		return 0;
	size_t ns = sd->res->nseries;
	gs->order = malloc(ns * sizeof(*gs->order));
	gs->g = calloc((max_groups < ns ? max_groups : ns) + 1, sizeof(*gs->g));
	if (!gs->order || !gs->g || api_group_sort(gb, sd->res, gs->order)) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	const char *limit_cut = NULL;
	for (size_t i = 0; i < ns && !limit_cut;) {
		size_t j = i + 1;
		while (j < ns && api_group_cmp(gb, &sd->res->series[gs->order[i]],
		                               &sd->res->series[gs->order[j]]) == 0)
			j++;
		g = (struct group){.first = i, .count = j - i};
		i = j;
		rc = load_group(r, w, &m, upto, gs->order, &g, tf, &kept);
		if (rc < 0)
			goto out;
		if (rc == MERGE_STOP)
			limit_cut = m.cut;
		if (g.nprofiles == 0)
			continue;
		if (gs->n < max_groups) {
			gs->g[gs->n++] = g;
		} else {
			size_t light = 0;
			for (size_t k = 1; k < gs->n; k++)
				if (group_lighter(&gs->g[k], &gs->g[light]))
					light = k;
			gs->dropped++;
			if (group_lighter(&gs->g[light], &g)) {
				group_fini(&gs->g[light]);
				gs->g[light] = g;
			} else {
				group_fini(&g);
			}
		}
		memset(&g, 0, sizeof(g));
	}
	qsort(gs->g, gs->n, sizeof(*gs->g), group_first_cmp);
	merge_warn_cut(s, w, sd, n, limit_cut ? limit_cut : take < n ? "max_profiles" : NULL);
	if ((tf->nfocus || tf->nignore || tf->names) && gs->n && kept == 0)
		api_warn(w, tf->nfocus || tf->nignore ? WARN_FILTERED_ALL : WARN_STACKS_ALL);
	if (gs->n)
		sd->found = 1;
	ret = 0;
out:
	pd_pprof_merger_destroy(m.mg);
	group_fini(&g);
	free(upto);
	if (ret)
		groups_fini(gs);
	return ret;
}

/* group_by: {"groupBy":[names],"droppedGroups","groups":[{"labels",
 * "profileCount","seriesCount","minTime","maxTime","sampleType","total",
 * "report"}]}; with group_by_sample_label (key) each group's report is split
 * again by that sample label. */
static void report_series_groups(struct api_req *r, struct api_resp *w, int report,
                                 const struct api_group_by *gb, const struct groups *gs,
                                 uint64_t max_groups, const struct side *sd, const char *key,
                                 uint64_t max_sample_groups, uint64_t limit, double nodefraction,
                                 int64_t min_total, int64_t *deadline_us)
{
	if (gs->dropped)
		api_warn(w, "group_by: %zu groups left out, beyond the %llu largest (group_limit)",
		         gs->dropped, (unsigned long long)max_groups);
	jput(w, "{\"groupBy\":[");
	for (size_t i = 0; i < gb->n; i++) {
		if (i)
			jput(w, ",");
		jstr(w, gb->names[i]);
	}
	jput(w, "],\"droppedGroups\":");
	ju64(w, gs->dropped);
	jput(w, ",\"groups\":[");
	for (size_t i = 0; i < gs->n && !w->berr && !w->error_set; i++) {
		const struct group *g = &gs->g[i];
		const struct pd_tsdb_series *se0 = &sd->res->series[gs->order[g->first]];
		jput(w, i ? ",{\"labels\":{" : "{\"labels\":{");
		for (size_t k = 0; k < gb->n; k++) {
			if (k)
				jput(w, ",");
			jstr(w, gb->names[k]);
			jput(w, ":");
			jstr(w, api_series_label(se0, gb->names[k]));
		}
		jput(w, "},\"profileCount\":");
		ju64(w, g->nprofiles);
		jput(w, ",\"seriesCount\":");
		ju64(w, g->nseries);
		jput(w, ",\"minTime\":");
		ji64(w, g->mint);
		jput(w, ",\"maxTime\":");
		ji64(w, g->maxt);
		const struct pd_pprof_profile *p = g->focused ? g->focused : g->whole;
		struct pd_pprof_profile *symbolized = NULL;
		struct side one = {0};
		if (api_symbolize(r, w, p, &symbolized, &one.sym, deadline_us))
			return;
		one.symbolized = r->srv->o.symbolizer != NULL;
		if (symbolized)
			p = symbolized;
		report_names(r, w, g->whole, g->focused, symbolized, NULL);
		jput(w, ",\"sampleType\":");
		jtype(w, p, (size_t)g->idx);
		jput(w, ",\"unit\":");
		junit(w, p, (size_t)g->idx);
		jput(w, ",\"total\":");
		ji64(w, g->total);
		jput(w, ",\"report\":");
		/* the group as a side of its own, for report=meta's summary */
		one.merge = 1;
		one.found = 1;
		one.res = sd->res;
		one.used = calloc(sd->res->nseries, 1);
		if (!one.used) {
			pd_pprof_destroy(symbolized);
			api_error(w, 500, "internal", "out of memory");
			return;
		}
		for (size_t k = g->first; k < g->first + g->count; k++)
			one.used[gs->order[k]] = sd->used[gs->order[k]];
		one.nprofiles = g->nprofiles;
		one.nseries = g->nseries;
		one.avg = g->avg;
		one.navg = g->navg;
		one.mint = g->mint;
		one.maxt = g->maxt;
		if (key)
			report_groups(r, w, report, key, max_sample_groups, p, g->whole, &one, 1,
			              limit, nodefraction, min_total);
		else
			one_report(r, w, report, p, g->whole, &one, 1, limit, nodefraction,
			           min_total);
		free(one.used);
		pd_pprof_destroy(symbolized);
		jput(w, "}");
	}
	jput(w, "]}");
}

/* ---- /api/v1/query --------------------------------------------------------------- */

static int lookup(const char *v, const char *const *names, int n, int def)
{
	if (!v || !*v)
		return def;
	for (int i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	return -1;
}

void api_query(struct api_req *r, struct api_resp *w)
{
	static const char *const modes[] = {"single", "merge", "diff"};
	static const char *const reports[] = {"meta",  "top",    "flamegraph", "proto",
	                                      "tags", "folded", "speedscope", "dot", "svg"};
	struct pd_api_server *s = r->srv;
	struct side sides[2];
	struct pd_pprof_profile *diff = NULL, *focused = NULL, *symbolized = NULL;
	int64_t sym_deadline = 0; /* one deadline for every symbolization of the query */
	struct tag_filters tf = {0};
	struct api_group_by gb = {0};
	struct groups groups = {0};
	memset(sides, 0, sizeof(sides));
	size_t nsides = 0;
	int mode = lookup(api_param(r, "mode"), modes, 3, MODE_SINGLE);
	int report = lookup(api_param(r, "report"), reports, 9, REPORT_META);
	const char *group_key = api_param(r, "group_by_sample_label");
	uint64_t limit, maxp, max_groups, max_series_groups;
	int64_t min_total;
	double nodefraction;
	if (mode < 0) {
		api_bad_param(w, "mode", "unknown mode \"%s\": use single, merge or diff",
		              api_param(r, "mode"));
		return;
	}
	if (report < 0) {
		api_bad_param(w, "report",
		              "unknown report \"%s\": use meta, top, flamegraph, tags, proto, "
		              "folded, speedscope, dot or svg",
		              api_param(r, "report"));
		return;
	}
	if (api_uint_param(r, w, "limit", 0, &limit) ||
	    api_double_param(r, w, "nodefraction", 0, 0, 1, &nodefraction) ||
	    api_int_param(r, w, "min_total", 0, &min_total) ||
	    api_uint_param(r, w, "max_profiles", s->o.max_merge_profiles, &maxp) ||
	    api_uint_param(r, w, "sample_group_limit", DEFAULT_SAMPLE_GROUPS, &max_groups) ||
	    api_uint_param(r, w, "group_limit", DEFAULT_SERIES_GROUPS, &max_series_groups))
		return;
	if (report == REPORT_DOT || report == REPORT_SVG) {
		struct pd_pprof_graph_opts go;
		if (api_callgraph_params(r, w, &go))
			return;
	}
	if (max_groups == 0 || max_groups > MAX_SAMPLE_GROUPS) {
		api_bad_param(w, "sample_group_limit", "must be between 1 and %d",
		              MAX_SAMPLE_GROUPS);
		return;
	}
	if (max_series_groups == 0 || max_series_groups > MAX_SERIES_GROUPS) {
		api_bad_param(w, "group_limit", "must be between 1 and %d", MAX_SERIES_GROUPS);
		return;
	}
	if (group_key && !*group_key)
		group_key = NULL;
	if (group_key && mode == MODE_DIFF) {
		api_bad_param(
		    w, "group_by_sample_label",
		    "groups are made of one profile or a merge: use mode=single or merge");
		return;
	}
	if ((report == REPORT_FOLDED || report == REPORT_SPEEDSCOPE) && mode == MODE_DIFF) {
		api_bad_param(w, "report",
		              "report=%s shows amounts, and a diff's values are changes: use "
		              "top, flamegraph or proto for a diff",
		              reports[report]);
		return;
	}
	if (group_key && ONE_DOCUMENT(report)) {
		api_bad_param(
		    w, "group_by_sample_label",
		    "report=%s returns one file: use meta, top, flamegraph or tags, or "
		    "tag_focus=%s=^value$ for one group's profile",
		    reports[report], group_key);
		return;
	}
	if (api_group_by_parse(r, w, "group_by", &gb))
		return;
	if (gb.n && mode != MODE_MERGE) {
		api_bad_param(w, "group_by",
		              "group_by splits a merge over a range by series labels: use "
		              "mode=merge (and narrow the selector for a single profile)");
		goto out;
	}
	if (gb.n && ONE_DOCUMENT(report)) {
		api_bad_param(w, "group_by",
		              "report=%s returns one file: use meta, top, flamegraph or tags, "
		              "or a selector on the group's labels for one group's profile",
		              reports[report]);
		goto out;
	}
	if (tag_filters_parse(r, w, &tf))
		goto out;
	static const char *const aggs[] = {"", "sum", "avg", "average"};
	int agg = lookup(api_param(r, "aggregation"), aggs, 4, AGG_DEFAULT);
	if (agg < 0) {
		api_bad_param(w, "aggregation",
		              "unknown aggregation \"%s\": use sum or avg (average), or leave it "
		              "out for averages of snapshot types and sums of the rest",
		              api_param(r, "aggregation"));
		goto out;
	}
	if (agg == 3)
		agg = AGG_AVG;
	if (maxp == 0 || maxp > s->o.max_merge_profiles)
		maxp = s->o.max_merge_profiles;
	int64_t lookback = s->o.lookback_ms;
	if (api_duration_param(r, w, "lookback", s->o.lookback_ms, &lookback))
		goto out;

	pthread_mutex_lock(&s->m.mu);
	s->m.c.queries[mode]++;
	pthread_mutex_unlock(&s->m.mu);

	int filtering = tf.nfocus || tf.nignore;
	/* symbolization reads the profile: a stored one is not answered as its bytes */
	int decode = report != REPORT_PROTO || mode != MODE_SINGLE || filtering || s->o.symbolizer;
	if (mode == MODE_DIFF) {
		if (side_params(r, w, &sides[0], "a.", mode) ||
		    side_params(r, w, &sides[1], "b.", mode))
			goto out;
		nsides = 2;
	} else {
		if (side_params(r, w, &sides[0], "", mode))
			goto out;
		nsides = 1;
	}
	sides[0].aggregation = sides[1].aggregation = agg;
	if (gb.n) {
		if (load_groups(r, w, &sides[0], &gb, maxp, (size_t)max_series_groups, &tf,
		                &groups))
			goto out;
		if (groups.n == 0)
			jput(w, "null");
		else
			report_series_groups(r, w, report, &gb, &groups, max_series_groups,
			                     &sides[0], group_key, max_groups, limit, nodefraction,
			                     min_total, &sym_deadline);
		goto out;
	}
	for (size_t i = 0; i < nsides; i++) {
		sides[i].lookback = lookback;
		if (side_load(r, w, &sides[i], decode, maxp))
			goto out;
	}
	for (size_t i = 0; i < nsides; i++) {
		if (!sides[i].found) {
			if (nsides == 2)
				api_warn(w,
				         "side %c of the diff has no profile, so there is no diff",
				         'a' + (int)i);
			if (FILE_REPORT(report)) {
				w->json = 0;
				w->status = 204;
				w->content_type = NULL;
				pd_buf_fini(&w->body);
				pd_buf_init(&w->body, 0);
			} else {
				jput(w, "null");
			}
			goto out;
		}
	}
	const struct pd_pprof_profile *p = sides[0].prof;
	if (mode == MODE_DIFF) {
		struct pd_err err = {0};
		/* normalize: B scaled to A's totals first, as pprof's -normalize */
		const char *nz = api_param(r, "normalize");
		int normalize = nz && (strcmp(nz, "true") == 0 || strcmp(nz, "1") == 0);
		if (nz && !normalize && strcmp(nz, "false") != 0 && strcmp(nz, "0") != 0 && *nz) {
			api_bad_param(w, "normalize", "\"%s\" is not true or false", nz);
			goto out;
		}
		struct pd_pprof_profile *scaled = NULL;
		if (normalize) {
			int nrc = pd_pprof_normalize(sides[1].prof, sides[0].prof, &scaled, &err);
			if (nrc == PD_EINVAL) {
				api_bad_param(w, "b.query", "the two sides cannot be compared: %s",
				              err.msg);
				goto out;
			}
			if (nrc) {
				api_internal(w, "normalizing the diff failed", nrc, &err);
				goto out;
			}
		}
		int rc = pd_pprof_diff(sides[0].prof, scaled ? scaled : sides[1].prof, &diff, &err);
		pd_pprof_destroy(scaled);
		if (rc == PD_EINCOMPAT || rc == PD_EINVAL) {
			api_bad_param(w, "b.query", "the two sides cannot be compared: %s",
			              err.msg);
			goto out;
		}
		if (rc) {
			api_internal(w, "computing the diff failed", rc, &err);
			goto out;
		}
		p = diff;
	}
	/* once per result, after merging (and the diff), before any report */
	if (api_symbolize(r, w, p, &symbolized, &sides[0].sym, &sym_deadline))
		goto out;
	sides[0].symbolized = s->o.symbolizer != NULL;
	if (symbolized) {
		p = symbolized;
		/* the stored bytes are no longer the answer */
		for (size_t i = 0; i < nsides; i++) {
			free(sides[i].raw);
			sides[i].raw = NULL;
		}
	}
	const struct pd_pprof_profile *whole = p;
	size_t kept = 0;
	if (tag_filters_apply(w, &tf, p, &focused, &kept))
		goto out;
	if (focused && kept == 0)
		api_warn(w, tf.nfocus || tf.nignore ? WARN_FILTERED_ALL : WARN_STACKS_ALL);
	report_names(r, w, sides[0].prof, diff, symbolized, focused);
	if (focused) {
		p = focused;
		/* the stored bytes are no longer the answer */
		for (size_t i = 0; i < nsides; i++) {
			free(sides[i].raw);
			sides[i].raw = NULL;
		}
	}
	if (group_key)
		report_groups(r, w, report, group_key, max_groups, p, whole, sides, nsides, limit,
		              nodefraction, min_total);
	else
		one_report(r, w, report, p, whole, sides, nsides, limit, nodefraction, min_total);
out:
	groups_fini(&groups);
	api_group_by_fini(&gb);
	tag_filters_fini(&tf);
	pd_pprof_destroy(focused);
	pd_pprof_destroy(symbolized);
	pd_pprof_destroy(diff);
	for (size_t i = 0; i < 2; i++)
		side_fini(&sides[i]);
}
