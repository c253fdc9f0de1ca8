/* querier_render.c: Pyroscope's HTTP render API, as grafana/pyroscope's
 * pkg/querier/http.go serves it to Profiles Drilldown and older clients:
 * GET /pyroscope/render (a flame graph as Flamebearer JSON with its timeline
 * and groups, or format=dot) and GET /pyroscope/render-diff (two flame graphs
 * side by side). Like Pyroscope's handlers, these call the query API's own
 * methods (SelectMergeStacktraces, SelectSeries, Diff; a merge for dot), so
 * series selection, limits and symbolization are theirs; an error is the same
 * Connect error JSON. `query` is a selector whose metric name is a profile type
 * id, e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="api"};
 * from and until take the forms of attime.c. docs/grafana.md describes both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "querier_int.h"

/* The nodes of format=dot when max-nodes asks for none, as Pyroscope draws. */
#define RENDER_DOT_NODES 100
/* Pyroscope's timeline resolution: about this many points over the range, at
 * least 15 s apart (pkg/querier/timeline). */
#define RENDER_RESOLUTION 1500
#define RENDER_MIN_STEP_MS 15000

/* One side of a render: the request's selector, type and range. */
struct rside {
	struct qtype t;
	char id[sizeof(((struct qtype *)0)->buf)];
	struct pd_buf sel; /* "{...}" without the profile type, NUL-terminated */
	int64_t start, end;
};

static void rside_fini(struct rside *s)
{
	pd_buf_fini(&s->sel);
}

/* The profile type and the other matchers of parameter qname's selector. */
static int parse_query(struct qcall *c, const char *qname, const char *q, struct rside *s)
{
	struct pd_labels_selector *sel = NULL;
	struct pd_err err = {0};
	int ret = -1;
	if (!q || !*q) {
		querier_fail(c, "invalid_argument", "\"%s\" is required", qname);
		return -1;
	}
	int rc = pd_labels_selector_parse(&sel, q, strlen(q), NULL, &err);
	if (rc) {
		querier_fail(c, "invalid_argument", "failed to parse \"%s\": %s", qname, err.msg);
		return -1;
	}
	const struct pd_labels_matcher *name = NULL;
	for (size_t i = 0; i < sel->nmatchers; i++)
		if (strcmp(pd_labels_matcher_name(sel->matchers[i]), "__name__") == 0)
			name = sel->matchers[i];
	if (!name) {
		querier_fail(c, "invalid_argument", "\"%s\" must contain a profile-type selection",
		             qname);
		goto out;
	}
	/* <name>:<sample type>:<unit>:<period type>:<period unit>, and Pyroscope's
	 * optional sixth part (":delta"), which changes nothing here */
	const char *id = pd_labels_matcher_value(name);
	size_t len = strlen(id), colons = 0, cut = len;
	for (size_t i = 0; i < len; i++)
		if (id[i] == ':' && ++colons == 5)
			cut = i;
	if (colons != 4 && colons != 5) {
		querier_fail(
		    c, "invalid_argument",
		    "failed to parse \"%s\": profile-type selection must be of the form "
		    "<name>:<sample-type>:<sample-unit>:<period-type>:<period-unit>(:delta), "
		    "got(%zu): \"%.200s\"",
		    qname, colons + 1, id);
		goto out;
	}
	if (cut >= sizeof(s->id)) {
		querier_fail(c, "invalid_argument",
		             "\"%s\": the profile type is longer than %zu bytes", qname,
		             sizeof(s->id) - 1);
		goto out;
	}
	memcpy(s->id, id, cut);
	s->id[cut] = 0;
	if (querier_type_parse(c, qname, s->id, &s->t))
		goto out;
	/* the other matchers as a selector of their own, as Pyroscope passes them on */
	rc = pd_buf_append(&s->sel, "{", 1);
	size_t n = 0;
	for (size_t i = 0; !rc && i < sel->nmatchers; i++) {
		if (strcmp(pd_labels_matcher_name(sel->matchers[i]), "__name__") == 0)
			continue;
		if (n++)
			rc = pd_buf_append(&s->sel, ",", 1);
		if (!rc)
			rc = pd_labels_matcher_format(sel->matchers[i], &s->sel);
	}
	if (!rc)
		rc = pd_buf_append(&s->sel, "}", 2);
	if (rc) {
		querier_fail(c, "internal", "out of memory");
		goto out;
	}
	ret = 0;
out:
	pd_labels_selector_destroy(sel);
	return ret;
}

static int parse_time(struct qcall *c, const char *name, int64_t *out)
{
	const char *v = api_param(c->r, name);
	char msg[256];
	*out = c->r->now_ms;
	if (!v || !*v)
		return 0;
	if (api_attime_parse(v, c->r->now_ms, out, msg, sizeof msg)) {
		querier_fail(c, "invalid_argument", "failed to parse \"%s\": %s", name, msg);
		return -1;
	}
	return 0;
}

/* One side's parameters: query, from, until (or their left/right names). */
static int parse_side(struct qcall *c, const char *qname, const char *fname, const char *uname,
                      struct rside *s)
{
	const char *q = api_param(c->r, qname);
	if ((!q || !*q) && strcmp(qname, "query") == 0)
		q = api_param(c->r, "name"); /* Pyroscope's older name of it */
	if (parse_query(c, qname, q, s) || parse_time(c, fname, &s->start) ||
	    parse_time(c, uname, &s->end))
		return -1;
	return 0;
}

/* max-nodes (or maxNodes, which wins): 0 when absent or 0. */
static int parse_max_nodes(struct qcall *c, int64_t *out)
{
	static const char *const names[] = {"max-nodes", "maxNodes"};
	*out = 0;
	for (size_t i = 0; i < 2; i++) {
		const char *v = api_param(c->r, names[i]);
		if (!v || !*v)
			continue;
		char *end = NULL;
		long long n = strtoll(v, &end, 10);
		if (*end || end == v || n < 0 || n > INT32_MAX) {
			querier_fail(c, "invalid_argument",
			             "\"%s\" must be a number of nodes from 0 to %d, not \"%.64s\"",
			             names[i], INT32_MAX, v);
			return -1;
		}
		if (n)
			*out = n;
	}
	return 0;
}

/* Calls method fn with req and reads its answer as a message of desc: *out is
 * the caller's (protobuf_c_message_free_unpacked). -1 when the method failed
 * (its Connect error is the answer). */
static int call(struct qcall *c, void (*fn)(struct qcall *, const ProtobufCMessage *),
                const ProtobufCMessage *req, const ProtobufCMessageDescriptor *desc,
                ProtobufCMessage **out)
{
	struct api_resp *w = c->w;
	*out = NULL;
	c->json = 0;
	fn(c, req);
	if (c->failed)
		return -1;
	if (w->berr) {
		querier_fail(c, "internal", "out of memory");
		return -1;
	}
	*out = protobuf_c_message_unpack(desc, NULL, w->body.len, w->body.data);
	/* the answer's buffer again, with its limit and budget */
	size_t max = w->body.max;
	struct pd_buf_budget *budget = w->body.budget;
	pd_buf_fini(&w->body);
	pd_buf_init(&w->body, max);
	w->body.budget = budget;
	if (!*out) {
		querier_fail(c, "internal", "out of memory reading an answer back");
		return -1;
	}
	return 0;
}

/* ---- JSON, as Go's encoding/json writes it -------------------------------------- */

/* A string with <, >, & and U+2028/U+2029 escaped as well, as Go escapes them. */
static void gostr(struct api_resp *w, const char *s)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	if (w->berr)
		return;
	if ((w->berr = pd_buf_json_string(&b, s))) {
		pd_buf_fini(&b);
		return;
	}
	size_t run = 0;
	for (size_t i = 0; i < b.len; i++) {
		const char *esc = NULL;
		size_t skip = 1;
		unsigned char ch = b.data[i];
		if (ch == '<')
			esc = "\\u003c";
		else if (ch == '>')
			esc = "\\u003e";
		else if (ch == '&')
			esc = "\\u0026";
		else if (ch == 0xe2 && i + 2 < b.len && b.data[i + 1] == 0x80 &&
		         (b.data[i + 2] == 0xa8 || b.data[i + 2] == 0xa9)) {
			esc = b.data[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
			skip = 3;
		}
		if (!esc)
			continue;
		jputn(w, (const char *)b.data + run, i - run);
		jput(w, esc);
		i += skip - 1;
		run = i + 1;
	}
	jputn(w, (const char *)b.data + run, b.len - run);
	pd_buf_fini(&b);
}

static void levels_json(struct api_resp *w, Querier__V1__Level **lv, size_t n)
{
	jput(w, "[");
	for (size_t i = 0; i < n; i++) {
		jput(w, i ? ",[" : "[");
		for (size_t j = 0; j < lv[i]->n_values; j++) {
			if (j)
				jput(w, ",");
			ji64(w, lv[i]->values[j]);
		}
		jput(w, "]");
	}
	jput(w, "]");
}

/* Pyroscope's units and sample rate of a profile type (its ExportToFlamebearer). */
static void metadata_json(struct api_resp *w, const struct qtype *t, const char *format)
{
	const char *units = t->unit;
	unsigned long rate = 100;
	if (!strcmp(t->type, "inuse_objects") || !strcmp(t->type, "alloc_objects") ||
	    !strcmp(t->type, "goroutine") || !strcmp(t->type, "samples"))
		units = "objects";
	else if (!strcmp(t->type, "cpu")) {
		units = "samples";
		rate = 1000000000UL;
	}
	jput(w, "\"metadata\":{\"format\":");
	gostr(w, format);
	jprintf(w, ",\"spyName\":\"\",\"sampleRate\":%lu,\"units\":", rate);
	gostr(w, units);
	jput(w, ",\"name\":");
	gostr(w, t->type);
	jput(w, "}");
}

static void flamebearer_json(struct api_resp *w, char **names, size_t nnames,
                             Querier__V1__Level **lv, size_t nlv, int64_t total, int64_t max_self)
{
	jput(w, "\"flamebearer\":{\"names\":[");
	for (size_t i = 0; i < nnames; i++) {
		if (i)
			jput(w, ",");
		gostr(w, names[i]);
	}
	jput(w, "],\"levels\":");
	levels_json(w, lv, nlv);
	jprintf(w, ",\"numTicks\":%lld,\"maxSelf\":%lld}", (long long)total, (long long)max_self);
}

/* A timeline of series s over [start_ms, end_ms] at step_s, as Pyroscope's
 * timeline.New makes it: both ends snapped down to a step, one sample a step
 * from the start up to (not with) the end, 0 where there is no point. */
static void timeline_json(struct api_resp *w, const Types__V1__Series *s, int64_t start_ms,
                          int64_t end_ms, int64_t step_s)
{
	int64_t step_ms = step_s * 1000;
	start_ms = start_ms / step_ms * step_ms;
	end_ms = end_ms / step_ms * step_ms;
	int64_t start_s = start_ms / 1000;
	jprintf(w, "{\"startTime\":%lld,\"samples\":[", (long long)start_s);
	int64_t n = start_ms < end_ms ? (end_ms / 1000 - start_s) / step_s : 0;
	int64_t k = 0; /* samples written */
	const Types__V1__Point *prev = NULL;
	for (size_t i = 0; s && i < s->n_points && k < n; i++) {
		const Types__V1__Point *p = s->points[i];
		if (p->timestamp < start_ms || p->timestamp >= end_ms)
			continue;
		int64_t gap = prev ? (p->timestamp / 1000 - prev->timestamp / 1000) / step_s - 1
		                   : (p->timestamp / 1000 - start_s) / step_s;
		for (; gap > 0 && k < n; gap--, k++)
			jput(w, k ? ",0" : "0");
		if (k == n)
			break;
		double v = p->value;
		unsigned long long u =
		    v > 0 && isfinite(v) && v < 1.8e19 ? (unsigned long long)v : 0;
		jprintf(w, k ? ",%llu" : "%llu", u);
		k++;
		prev = p;
	}
	for (; k < n; k++)
		jput(w, k ? ",0" : "0");
	jprintf(w, "],\"durationDelta\":%lld,\"watermarks\":null}", (long long)step_s);
}

/* Pyroscope's step of a timeline over [start, end] ms, in seconds (its
 * timeline.CalcPointInterval): the range over 1500, rounded as Grafana rounds
 * intervals, at least 15 s. */
static int64_t timeline_step(int64_t start, int64_t end)
{
	static const struct {
		int64_t upto, step; /* ms */
	} round[] = {
	    {17500, 15000},        {25000, 20000},        {45000, 30000},
	    {90000, 60000},        {210000, 120000},      {450000, 300000},
	    {750000, 600000},      {1050000, 900000},     {1500000, 1200000},
	    {2700000, 1800000},    {5400000, 3600000},    {9000000, 7200000},
	    {16200000, 10800000},  {32400000, 21600000},  {86400000, 43200000},
	    {172800000, 86400000}, {604800000, 86400000}, {1814400000, 604800000},
	};
	int64_t iv = (end - start) / RENDER_RESOLUTION;
	if (iv < RENDER_MIN_STEP_MS)
		return RENDER_MIN_STEP_MS / 1000;
	for (size_t i = 0; i < sizeof round / sizeof round[0]; i++)
		if (iv <= round[i].upto)
			return round[i].step / 1000;
	return iv < 3628800000LL ? 2592000 : 31536000;
}

/* ---- /pyroscope/render ------------------------------------------------------------ */

static int key_cmp(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	int d = strcmp(x[0], y[0]);
	return d;
}

/* format=dot: the merge's call graph as `go tool pprof -dot` draws it, with at
 * most max-nodes nodes (100 when absent). */
static void render_dot(struct qcall *c, struct rside *s, int64_t max_nodes)
{
	struct pd_pprof_profile *p = NULL;
	struct pd_pprof_graph *g = NULL;
	struct pd_err err = {0};
	struct api_resp *w = c->w;
	int64_t mint, maxt;
	if (querier_range(c, s->start, s->end, &mint, &maxt) ||
	    querier_merge(c, (const char *)s->sel.data, &s->t, mint, maxt, &p))
		goto out;
	int idx = p ? querier_type_index(p, &s->t) : -1;
	w->status = 200;
	w->content_type = "text/plain; charset=utf-8";
	if (idx < 0 || pd_pprof_total(p, idx) == 0)
		goto out; /* no data: an empty body, as Pyroscope answers */
	size_t cap = c->r->srv->o.querier_max_nodes ? c->r->srv->o.querier_max_nodes
	                                            : QUERIER_DEFAULT_MAX_NODES;
	if (cap > PD_PPROF_MAX_NODECOUNT)
		cap = PD_PPROF_MAX_NODECOUNT;
	struct pd_pprof_graph_opts o = {
	    .nodecount =
	        (int)(max_nodes > 0 ? ((uint64_t)max_nodes < cap ? max_nodes : (int64_t)cap)
	                            : RENDER_DOT_NODES),
	    .nodefraction = PD_PPROF_DEFAULT_NODEFRACTION,
	    .edgefraction = PD_PPROF_DEFAULT_EDGEFRACTION,
	};
	int rc = pd_pprof_graph(p, idx, &o, &g, &err);
	if (rc) {
		querier_fail_store(c, "computing the call graph", rc, &err);
		goto out;
	}
	char line[600];
	snprintf(line, sizeof line, "Type: %s", s->t.type);
	const char *legend[1] = {line};
	if (!w->berr)
		w->berr = pd_pprof_graph_dot(g, s->t.name, legend, 1, &w->body);
out:
	pd_pprof_graph_destroy(g);
	pd_pprof_destroy(p);
}

static void render(struct qcall *c)
{
	struct rside s;
	memset(&s, 0, sizeof s);
	pd_buf_init(&s.sel, 0);
	const char **group_by = NULL;
	size_t ngroup = 0;
	ProtobufCMessage *fm = NULL, *sm = NULL;
	const char **keys = NULL;
	int64_t max_nodes = 0;
	Types__V1__TimeSeriesAggregationType agg =
	    TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_SUM;
	if (parse_side(c, "query", "from", "until", &s) || parse_max_nodes(c, &max_nodes))
		goto out;
	const char *a = api_param(c->r, "aggregation");
	if (a && strcmp(a, "avg") == 0) {
		agg = TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE;
	} else if (a && strcmp(a, "sum") != 0) {
		querier_fail(c, "invalid_argument",
		             "\"aggregation\" must be sum or avg, not \"%.64s\"", a);
		goto out;
	}
	const char *format = api_param(c->r, "format");
	if (format && *format && strcmp(format, "dot") != 0 && strcmp(format, "json") != 0) {
		querier_fail(c, "invalid_argument", "\"format\" must be json or dot, not \"%.64s\"",
		             format);
		goto out;
	}
	if (format && strcmp(format, "dot") == 0) {
		render_dot(c, &s, max_nodes);
		goto out;
	}
	if (api_params(c->r, "groupBy", &group_by, &ngroup)) {
		querier_fail(c, "internal", "out of memory");
		goto out;
	}
	Querier__V1__SelectMergeStacktracesRequest fq =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	fq.profile_typeid = s.id;
	fq.label_selector = (char *)s.sel.data;
	fq.start = s.start;
	fq.end = s.end;
	fq.max_nodes = max_nodes;
	if (call(c, querier_select_merge_stacktraces, &fq.base,
	         &querier__v1__select_merge_stacktraces_response__descriptor, &fm))
		goto out;
	int64_t step = timeline_step(s.start, s.end);
	Querier__V1__SelectSeriesRequest sq = QUERIER__V1__SELECT_SERIES_REQUEST__INIT;
	sq.profile_typeid = s.id;
	sq.label_selector = (char *)s.sel.data;
	sq.start = s.start;
	sq.end = s.end;
	sq.step = (double)step;
	sq.group_by = (char **)group_by;
	sq.n_group_by = ngroup;
	sq.aggregation = agg;
	if (call(c, querier_select_series, &sq.base,
	         &querier__v1__select_series_response__descriptor, &sm))
		goto out;
	const Querier__V1__SelectMergeStacktracesResponse *fr = (const void *)fm;
	const Querier__V1__SelectSeriesResponse *sr = (const void *)sm;
	const Querier__V1__FlameGraph *fg = fr->flamegraph;
	struct api_resp *w = c->w;
	w->status = 200;
	w->content_type = "application/json";
	jput(w, "{\"version\":1,");
	if (fg)
		flamebearer_json(w, fg->names, fg->n_names, fg->levels, fg->n_levels, fg->total,
		                 fg->max_self);
	else
		flamebearer_json(w, NULL, 0, NULL, 0, 0, 0);
	jput(w, ",");
	metadata_json(w, &s.t, "single");
	jput(w, ",\"timeline\":");
	timeline_json(w, sr->n_series == 1 ? sr->series[0] : NULL, s.start, s.end, step);
	jput(w, ",\"groups\":");
	if (!ngroup) {
		jput(w, "null");
	} else {
		/* by the first groupBy label's value ("*" without it), keys sorted as Go
		 * writes a map; a later series of the same key wins, as in Pyroscope */
		if (!(keys = calloc(sr->n_series ? sr->n_series * 2 : 1, sizeof(*keys)))) {
			querier_fail(c, "internal", "out of memory");
			goto out;
		}
		size_t nk = 0;
		for (size_t i = 0; i < sr->n_series; i++) {
			const char *key = "*";
			for (size_t j = 0; j < sr->series[i]->n_labels; j++)
				if (strcmp(sr->series[i]->labels[j]->name, group_by[0]) == 0) {
					key = sr->series[i]->labels[j]->value;
					break;
				}
			size_t k = 0;
			while (k < nk && strcmp(keys[2 * k], key) != 0)
				k++;
			keys[2 * k] = key;
			keys[2 * k + 1] = (const char *)(uintptr_t)i;
			if (k == nk)
				nk++;
		}
		qsort(keys, nk, 2 * sizeof(*keys), key_cmp);
		jput(w, "{");
		for (size_t k = 0; k < nk; k++) {
			if (k)
				jput(w, ",");
			gostr(w, keys[2 * k]);
			jput(w, ":");
			timeline_json(w, sr->series[(uintptr_t)keys[2 * k + 1]], s.start, s.end,
			              step);
		}
		jput(w, "}");
	}
	jput(w, ",\"heatmap\":null}\n");
out:
	free(keys);
	if (fm)
		protobuf_c_message_free_unpacked(fm, NULL);
	if (sm)
		protobuf_c_message_free_unpacked(sm, NULL);
	free(group_by);
	rside_fini(&s);
}

/* ---- /pyroscope/render-diff -------------------------------------------------------- */

static void render_diff(struct qcall *c)
{
	struct rside l, r;
	memset(&l, 0, sizeof l);
	memset(&r, 0, sizeof r);
	pd_buf_init(&l.sel, 0);
	pd_buf_init(&r.sel, 0);
	ProtobufCMessage *dm = NULL;
	int64_t max_nodes = 0;
	if (parse_side(c, "leftQuery", "leftFrom", "leftUntil", &l) ||
	    parse_side(c, "rightQuery", "rightFrom", "rightUntil", &r) ||
	    parse_max_nodes(c, &max_nodes))
		goto out;
	if (strcmp(l.id, r.id) != 0) {
		querier_fail(c, "invalid_argument", "profile types must match");
		goto out;
	}
	Querier__V1__SelectMergeStacktracesRequest lq =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	Querier__V1__SelectMergeStacktracesRequest rq =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	lq.profile_typeid = l.id;
	lq.label_selector = (char *)l.sel.data;
	lq.start = l.start;
	lq.end = l.end;
	lq.max_nodes = max_nodes;
	rq.profile_typeid = r.id;
	rq.label_selector = (char *)r.sel.data;
	rq.start = r.start;
	rq.end = r.end;
	rq.max_nodes = max_nodes;
	Querier__V1__DiffRequest dq = QUERIER__V1__DIFF_REQUEST__INIT;
	dq.left = &lq;
	dq.right = &rq;
	if (call(c, querier_diff, &dq.base, &querier__v1__diff_response__descriptor, &dm))
		goto out;
	const Querier__V1__FlameGraphDiff *fg = ((const Querier__V1__DiffResponse *)dm)->flamegraph;
	struct api_resp *w = c->w;
	w->status = 200;
	w->content_type = "application/json";
	jput(w, "{\"version\":1,");
	if (fg)
		flamebearer_json(w, fg->names, fg->n_names, fg->levels, fg->n_levels, fg->total,
		                 fg->max_self);
	else
		flamebearer_json(w, NULL, 0, NULL, 0, 0, 0);
	jput(w, ",");
	metadata_json(w, &l.t, "double");
	jput(w, ",\"timeline\":null,\"groups\":null,\"heatmap\":null");
	if (fg && fg->leftticks)
		jprintf(w, ",\"leftTicks\":%lld", (long long)fg->leftticks);
	if (fg && fg->rightticks)
		jprintf(w, ",\"rightTicks\":%lld", (long long)fg->rightticks);
	jput(w, "}\n");
out:
	if (dm)
		protobuf_c_message_free_unpacked(dm, NULL);
	rside_fini(&l);
	rside_fini(&r);
}

void api_render(struct api_req *r, struct api_resp *w)
{
	struct qcall c = {.r = r, .w = w};
	const char *path = r->path;
	if (strcmp(path, "/pyroscope/render") == 0)
		render(&c);
	else if (strcmp(path, "/pyroscope/render-diff") == 0)
		render_diff(&c);
	else
		querier_fail(&c, "not_found",
		             "%.200s is not served: /pyroscope/render and "
		             "/pyroscope/render-diff are",
		             path);
	pd_log_debug("api", "render API call", "path=%s status=%u", path, w->status);
}
