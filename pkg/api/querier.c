/* querier.c: Pyroscope's query API, querier.v1.QuerierService, as Connect unary
 * calls over HTTP/1.1 (POST /querier.v1.QuerierService/<Method>, also under
 * /pyroscope/), so that Grafana's "Grafana Pyroscope" data source, its flame
 * graph panel and Profiles Drilldown read profd's store. This file reads the
 * call (protobuf or JSON, gzip), dispatches it by method, answers in the
 * request's encoding or with Connect's error JSON, and serves the label methods
 * and ProfileTypes; querier_select.c picks series, querier_flame.c merges
 * profiles, querier_series.c makes time series of totals. docs/grafana.md lists
 * every method and field served. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "profd/ingest.h"
#include "querier_int.h"

/* ---- answers ---------------------------------------------------------------- */

/* Connect's codes and the HTTP status of each (connectrpc.com/docs/protocol);
 * unimplemented is 404, as Connect clients read a 404. */
static unsigned code_status(const char *code)
{
	static const struct {
		const char *code;
		unsigned status;
	} t[] = {{"invalid_argument", 400}, {"unimplemented", 404}, {"resource_exhausted", 429},
		 {"internal", 500},         {"unavailable", 503},   {"not_found", 404}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(t[i].code, code) == 0)
			return t[i].status;
	return 500;
}

void querier_fail(struct qcall *c, const char *code, const char *fmt, ...)
{
	if (c->failed)
		return;
	c->failed = 1;
	char msg[PD_ERR_MSG_MAX + 512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct api_resp *w = c->w;
	pd_buf_fini(&w->body);
	pd_buf_init(&w->body, 0);
	w->berr = 0;
	w->status = code_status(code);
	w->content_type = "application/json";
	if (w->status == 429 || w->status == 503)
		w->retry_after = 5;
	jput(w, "{\"code\":");
	jstr(w, code);
	jput(w, ",\"message\":");
	jstr(w, msg);
	jput(w, "}\n");
}

void querier_fail_store(struct qcall *c, const char *what, int rc, const struct pd_err *err)
{
	if (rc == PD_EINVAL) {
		querier_fail(c, "invalid_argument", "%s: %s", what, err->msg);
		return;
	}
	if (rc == PD_ETOOBIG || rc == PD_ELIMIT) {
		querier_fail(c, "resource_exhausted", "%s: %s", what, err->msg);
		return;
	}
	pd_log_error("api", "a query API call failed", "what=%s err=%s", what, err->msg);
	int len = 0;
	const char *ch = api_ch_reason(err, &len);
	if (ch)
		querier_fail(c, "unavailable", "%s: ClickHouse: %.*s", what, len, ch);
	else
		querier_fail(c, "internal", "%s failed: %s", what, pd_strerror(rc));
}

void querier_reply(struct qcall *c, const ProtobufCMessage *m)
{
	struct api_resp *w = c->w;
	if (c->failed)
		return;
	w->status = 200;
	if (c->json) {
		w->content_type = "application/json";
		if (!w->berr)
			w->berr = pd_ingest_pb_json(m, &w->body);
		return;
	}
	w->content_type = "application/proto";
	size_t n = protobuf_c_message_get_packed_size(m);
	if (!w->berr)
		w->berr = pd_buf_reserve(&w->body, n);
	if (w->berr)
		return;
	protobuf_c_message_pack(m, w->body.data + w->body.len);
	w->body.len += n;
}

/* ---- the label methods and ProfileTypes -------------------------------------- */

/* A sorted, deduplicated set of strings borrowed from elsewhere. */
struct strset {
	const char **v;
	size_t n, cap;
};

static int strset_add(struct strset *s, const char *x)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 32;
		const char **nv = realloc(s->v, nc * sizeof(*nv));
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = nc;
	}
	s->v[s->n++] = x;
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void strset_finish(struct strset *s)
{
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), str_cmp);
	size_t j = 1;
	for (size_t i = 1; i < s->n; i++)
		if (strcmp(s->v[i], s->v[j - 1]) != 0)
			s->v[j++] = s->v[i];
	s->n = j;
}

/* The range of a label call: 0 and 0 is all time, end 0 now. */
static void label_range(const struct qcall *c, int64_t start, int64_t end, int64_t *mint,
			int64_t *maxt)
{
	if (start == 0 && end == 0) {
		*mint = INT64_MIN;
		*maxt = INT64_MAX;
		return;
	}
	*mint = start;
	*maxt = end ? end : c->r->now_ms;
}

/* Every selector of matchers (none: every series), one set each. */
static int select_each(struct qcall *c, char **matchers, size_t n, int64_t mint, int64_t maxt,
		       struct qset **sets, size_t *nsets)
{
	size_t k = n ? n : 1;
	*sets = calloc(k, sizeof(**sets));
	*nsets = 0;
	if (!*sets) {
		querier_fail(c, "internal", "out of memory");
		return -1;
	}
	for (size_t i = 0; i < k; i++) {
		if (querier_select(c, n ? matchers[i] : "", NULL, mint, maxt, 0, &(*sets)[i]))
			return -1;
		(*nsets)++;
	}
	return 0;
}

static void sets_free(struct qset *sets, size_t n)
{
	for (size_t i = 0; i < n; i++)
		querier_set_fini(&sets[i]);
	free(sets);
}

/* names or values: one string per row of a LabelNames/LabelValuesResponse. */
static void reply_names(struct qcall *c, struct strset *s, int values)
{
	struct pd_arena *a = pd_arena_create(0);
	char **names = s->n ? calloc(s->n, sizeof(char *)) : NULL;
	if (!a || (s->n && !names)) {
		querier_fail(c, "internal", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->n; i++)
		names[i] = (char *)querier_utf8(a, s->v[i]);
	if (values) {
		Types__V1__LabelValuesResponse resp = TYPES__V1__LABEL_VALUES_RESPONSE__INIT;
		resp.n_names = s->n;
		resp.names = names;
		querier_reply(c, &resp.base);
	} else {
		Types__V1__LabelNamesResponse resp = TYPES__V1__LABEL_NAMES_RESPONSE__INIT;
		resp.n_names = s->n;
		resp.names = names;
		querier_reply(c, &resp.base);
	}
out:
	free(names);
	pd_arena_destroy(a);
}

void querier_label_names(struct qcall *c, const ProtobufCMessage *req)
{
	const Types__V1__LabelNamesRequest *q = (const void *)req;
	int64_t mint, maxt;
	struct qset *sets = NULL;
	size_t nsets = 0;
	struct strset s = {0};
	label_range(c, q->start, q->end, &mint, &maxt);
	if (select_each(c, q->matchers, q->n_matchers, mint, maxt, &sets, &nsets))
		goto out;
	for (size_t k = 0; k < nsets; k++)
		for (size_t i = 0; i < sets[k].n; i++)
			for (size_t j = 0; j < sets[k].v[i].nlabels; j++)
				if (strset_add(&s, sets[k].v[i].labels[j].name)) {
					querier_fail(c, "internal", "out of memory");
					goto out;
				}
	strset_finish(&s);
	reply_names(c, &s, 0);
out:
	free(s.v);
	sets_free(sets, nsets);
}

void querier_label_values(struct qcall *c, const ProtobufCMessage *req)
{
	const Types__V1__LabelValuesRequest *q = (const void *)req;
	int64_t mint, maxt;
	struct qset *sets = NULL;
	size_t nsets = 0;
	struct strset s = {0};
	if (!q->name || !*q->name) {
		querier_fail(c, "invalid_argument", "name is required: the label whose values to list");
		return;
	}
	label_range(c, q->start, q->end, &mint, &maxt);
	if (select_each(c, q->matchers, q->n_matchers, mint, maxt, &sets, &nsets))
		goto out;
	for (size_t k = 0; k < nsets; k++)
		for (size_t i = 0; i < sets[k].n; i++) {
			const char *v = querier_label(&sets[k].v[i], q->name);
			if (*v && strset_add(&s, v)) {
				querier_fail(c, "internal", "out of memory");
				goto out;
			}
		}
	strset_finish(&s);
	reply_names(c, &s, 1);
out:
	free(s.v);
	sets_free(sets, nsets);
}

static int labels_cmp(const struct pd_storage_label *a, size_t na, const struct pd_storage_label *b,
		      size_t nb)
{
	for (size_t i = 0; i < na && i < nb; i++) {
		int d = strcmp(a[i].name, b[i].name);
		if (!d)
			d = strcmp(a[i].value, b[i].value);
		if (d)
			return d;
	}
	return na < nb ? -1 : na > nb;
}

struct lrow {
	struct pd_storage_label *ls;
	size_t n;
};

static int lrow_cmp(const void *x, const void *y)
{
	const struct lrow *a = x, *b = y;
	return labels_cmp(a->ls, a->n, b->ls, b->n);
}

void querier_series(struct qcall *c, const ProtobufCMessage *req)
{
	const Querier__V1__SeriesRequest *q = (const void *)req;
	int64_t mint, maxt;
	struct qset *sets = NULL;
	size_t nsets = 0, nrows = 0, total = 0;
	struct lrow *rows = NULL;
	struct pd_arena *a = pd_arena_create(0);
	Types__V1__Labels **out = NULL;
	if (!a) {
		querier_fail(c, "internal", "out of memory");
		return;
	}
	label_range(c, q->start, q->end, &mint, &maxt);
	if (select_each(c, q->matchers, q->n_matchers, mint, maxt, &sets, &nsets))
		goto out;
	for (size_t k = 0; k < nsets; k++)
		total += sets[k].n;
	rows = calloc(total ? total : 1, sizeof(*rows));
	if (!rows)
		goto oom;
	for (size_t k = 0; k < nsets; k++)
		for (size_t i = 0; i < sets[k].n; i++) {
			const struct qseries *s = &sets[k].v[i];
			struct lrow *r = &rows[nrows++];
			r->ls = pd_arena_calloc(a, s->nlabels ? s->nlabels : 1, sizeof(*r->ls));
			if (!r->ls)
				goto oom;
			for (size_t j = 0; j < s->nlabels; j++) {
				int keep = q->n_label_names == 0;
				for (size_t l = 0; !keep && l < q->n_label_names; l++)
					keep = strcmp(q->label_names[l], s->labels[j].name) == 0;
				if (keep)
					r->ls[r->n++] = s->labels[j];
			}
		}
	qsort(rows, nrows, sizeof(*rows), lrow_cmp);
	size_t m = 0;
	for (size_t i = 0; i < nrows; i++)
		if (!m || lrow_cmp(&rows[m - 1], &rows[i]) != 0)
			rows[m++] = rows[i];
	out = calloc(m ? m : 1, sizeof(*out));
	if (!out)
		goto oom;
	for (size_t i = 0; i < m; i++) {
		Types__V1__Labels *l = pd_arena_calloc(a, 1, sizeof(*l));
		Types__V1__LabelPair **ps = pd_arena_calloc(a, rows[i].n ? rows[i].n : 1, sizeof(*ps));
		if (!l || !ps)
			goto oom;
		types__v1__labels__init(l);
		for (size_t j = 0; j < rows[i].n; j++) {
			Types__V1__LabelPair *p = pd_arena_calloc(a, 1, sizeof(*p));
			if (!p)
				goto oom;
			types__v1__label_pair__init(p);
			p->name = (char *)querier_utf8(a, rows[i].ls[j].name);
			p->value = (char *)querier_utf8(a, rows[i].ls[j].value);
			ps[j] = p;
		}
		l->n_labels = rows[i].n;
		l->labels = ps;
		out[i] = l;
	}
	Querier__V1__SeriesResponse resp = QUERIER__V1__SERIES_RESPONSE__INIT;
	resp.n_labels_set = m;
	resp.labels_set = out;
	querier_reply(c, &resp.base);
	goto out;
oom:
	querier_fail(c, "internal", "out of memory");
out:
	free(out);
	free(rows);
	sets_free(sets, nsets);
	pd_arena_destroy(a);
}

/* Period types of profd's names, for ProfileTypes: what Go's profiles say. A
 * name not here takes its period type from its newest profile. */
static int known_period(const char *name, const char **pt, const char **pu)
{
	static const struct {
		const char *name, *pt, *pu;
	} t[] = {
	    {"profile", "cpu", "nanoseconds"},  {"heap", "space", "bytes"},
	    {"allocs", "space", "bytes"},       {"goroutine", "goroutine", "count"},
	    {"mutex", "contentions", "count"},  {"block", "contentions", "count"},
	    {"threadcreate", "threadcreate", "count"},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(t[i].name, name) == 0) {
			*pt = t[i].pt;
			*pu = t[i].pu;
			return 1;
		}
	return 0;
}

/* The period type of series s's newest profile in its totals ("" if unreadable). */
static void read_period(struct qcall *c, const struct pd_storage_totals *s, struct pd_arena *a,
			const char **pt, const char **pu)
{
	struct pd_err err = {0};
	uint8_t *raw = NULL;
	size_t len = 0;
	struct pd_pprof_profile *p = NULL;
	*pt = *pu = "";
	if (!s->nts || pd_storage_read(c->r->srv->o.db, s->labels, s->nlabels, s->ts[s->nts - 1], &raw,
				    &len, &err))
		return;
	if (!pd_pprof_decode(&p, raw, len, NULL, &err)) {
		*pt = pd_arena_strndup(a, pd_pprof_period_type(p), strlen(pd_pprof_period_type(p)));
		*pu = pd_arena_strndup(a, pd_pprof_period_unit(p), strlen(pd_pprof_period_unit(p)));
		if (!*pt || !*pu)
			*pt = *pu = "";
	}
	pd_pprof_destroy(p);
	free(raw);
}

struct ptype_row {
	char *id;
	const char *name, *type, *unit, *pt, *pu;
};

static int ptype_cmp(const void *x, const void *y)
{
	return strcmp(((const struct ptype_row *)x)->id, ((const struct ptype_row *)y)->id);
}

void querier_profile_types(struct qcall *c, const ProtobufCMessage *req)
{
	const Querier__V1__ProfileTypesRequest *q = (const void *)req;
	int64_t mint, maxt;
	struct qset set = {0};
	struct ptype_row *rows = NULL;
	size_t nrows = 0, cap = 0;
	Types__V1__ProfileType **out = NULL, *pts = NULL;
	struct pd_arena *a = pd_arena_create(0);
	/* the period types found per profd name, so that each is read once */
	struct {
		const char *name, *pt, *pu;
	} *per = NULL;
	size_t nper = 0;
	if (!a)
		goto oom;
	label_range(c, q->start, q->end, &mint, &maxt);
	if (querier_select(c, "", NULL, mint, maxt, 1, &set))
		goto out;
	if (!(per = calloc(set.n ? set.n : 1, sizeof(*per))))
		goto oom;
	for (size_t i = 0; i < set.n; i++) {
		const struct pd_storage_totals *t = set.v[i].t;
		const char *name = querier_label(&set.v[i], "__name__");
		const char *pt = NULL, *pu = NULL;
		for (size_t k = 0; k < nper && !pt; k++)
			if (strcmp(per[k].name, name) == 0) {
				pt = per[k].pt;
				pu = per[k].pu;
			}
		if (!pt) {
			if (!known_period(name, &pt, &pu))
				read_period(c, t, a, &pt, &pu);
			per[nper].name = name;
			per[nper].pt = pt;
			per[nper].pu = pu;
			nper++;
		}
		for (size_t k = 0; k < t->ntypes; k++) {
			if (nrows == cap) {
				size_t nc = cap ? cap * 2 : 32;
				void *nv = realloc(rows, nc * sizeof(*rows));
				if (!nv)
					goto oom;
				rows = nv;
				cap = nc;
			}
			struct ptype_row *r = &rows[nrows];
			r->name = querier_utf8(a, querier_pyro_name(name));
			r->type = querier_utf8(a, t->types[k].type);
			r->unit = querier_utf8(a, t->types[k].unit);
			r->pt = querier_utf8(a, pt);
			r->pu = querier_utf8(a, pu);
			size_t n = strlen(r->name) + strlen(r->type) + strlen(r->unit) +
				   strlen(r->pt) + strlen(r->pu) + 5;
			if (!(r->id = pd_arena_alloc(a, n)))
				goto oom;
			snprintf(r->id, n, "%s:%s:%s:%s:%s", r->name, r->type, r->unit, r->pt, r->pu);
			nrows++;
		}
	}
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), ptype_cmp);
	size_t m = 0;
	for (size_t i = 0; i < nrows; i++)
		if (!m || strcmp(rows[m - 1].id, rows[i].id) != 0)
			rows[m++] = rows[i];
	out = calloc(m ? m : 1, sizeof(*out));
	pts = calloc(m ? m : 1, sizeof(*pts));
	if (!out || !pts)
		goto oom;
	for (size_t i = 0; i < m; i++) {
		types__v1__profile_type__init(&pts[i]);
		pts[i].id = rows[i].id;
		pts[i].name = (char *)rows[i].name;
		pts[i].sample_type = (char *)rows[i].type;
		pts[i].sample_unit = (char *)rows[i].unit;
		pts[i].period_type = (char *)rows[i].pt;
		pts[i].period_unit = (char *)rows[i].pu;
		out[i] = &pts[i];
	}
	Querier__V1__ProfileTypesResponse resp = QUERIER__V1__PROFILE_TYPES_RESPONSE__INIT;
	resp.n_profile_types = m;
	resp.profile_types = out;
	querier_reply(c, &resp.base);
	goto out;
oom:
	querier_fail(c, "internal", "out of memory");
out:
	free(per);
	free(out);
	free(pts);
	free(rows);
	querier_set_fini(&set);
	pd_arena_destroy(a);
}

/* ---- dispatch ------------------------------------------------------------------ */

struct method {
	const char *name;
	const ProtobufCMessageDescriptor *req;
	void (*fn)(struct qcall *, const ProtobufCMessage *);
};

static const struct method methods[] = {
    {"ProfileTypes", &querier__v1__profile_types_request__descriptor, querier_profile_types},
    {"LabelNames", &types__v1__label_names_request__descriptor, querier_label_names},
    {"LabelValues", &types__v1__label_values_request__descriptor, querier_label_values},
    {"Series", &querier__v1__series_request__descriptor, querier_series},
    {"SelectMergeStacktraces", &querier__v1__select_merge_stacktraces_request__descriptor,
     querier_select_merge_stacktraces},
    {"SelectMergeProfile", &querier__v1__select_merge_profile_request__descriptor,
     querier_select_merge_profile},
    {"SelectSeries", &querier__v1__select_series_request__descriptor, querier_select_series},
    {"Diff", &querier__v1__diff_request__descriptor, querier_diff},
};

#define SERVICE "querier.v1.QuerierService/"

void api_querier(struct api_req *r, struct api_resp *w)
{
	struct qcall c = {.r = r, .w = w};
	struct pd_api_server *s = r->srv;
	const char *path = r->path;
	uint8_t *owned = NULL;
	ProtobufCMessage *msg = NULL;
	if (strncmp(path, "/pyroscope/", 11) == 0)
		path += 10;
	const char *name = path + 1 + strlen(SERVICE);
	const struct method *m = NULL;
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (strcmp(methods[i].name, name) == 0)
			m = &methods[i];
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_TYPE);
	c.json = ct && strncasecmp(ct, "application/json", 16) == 0;
	if (!m) {
		querier_fail(&c, "unimplemented",
			     "%.200s is not a method profd serves: ProfileTypes, LabelNames, "
			     "LabelValues, Series, SelectMergeStacktraces, SelectMergeProfile, "
			     "SelectSeries, Diff",
			     name);
		return;
	}
	if (!c.json && !(ct && (strncasecmp(ct, "application/proto", 17) == 0 ||
				strncasecmp(ct, "application/x-protobuf", 22) == 0))) {
		querier_fail(&c, "invalid_argument",
			     "Content-Type %.64s is not served: send application/proto or "
			     "application/json (Connect's unary protocol; gRPC is not served)",
			     ct ? ct : "(none)");
		w->status = 415;
		w->accept_post = "application/proto, application/json";
		return;
	}
	const uint8_t *body = r->body.data;
	size_t len = r->body.len;
	struct pd_err err = {0};
	const char *ce = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_ENCODING);
	if (ce && *ce && strcasecmp(ce, "identity") != 0) {
		if (strcasecmp(ce, "gzip") != 0) {
			querier_fail(&c, "unimplemented",
				     "Content-Encoding %.64s is not supported: send gzip or identity",
				     ce);
			return;
		}
		struct pd_inflate_opts io = {.format = PD_INFLATE_GZIP, .max = s->o.max_form_body};
		if (pd_inflate(body, len, &io, &owned, &len, &err)) {
			querier_fail(&c, "invalid_argument",
				     "the gzip body could not be read: %s (a body may be 8 MiB after gunzip)",
				     err.msg);
			return;
		}
		body = owned;
	}
	struct pd_ingest_limits lim = s->o.ingest;
	lim.max_decoded_memory = s->o.max_form_body * 4 + 4096;
	int rc = pd_ingest_pb_read(m->req, body, len, c.json, &lim, &msg, &err);
	if (rc) {
		querier_fail(&c, rc == PD_ENOMEM ? "internal" : "invalid_argument",
			     "the %s request could not be read: %s", m->name, err.msg);
		goto out;
	}
	m->fn(&c, msg);
	pd_log_debug("api", "query API call", "method=%s status=%u", m->name, w->status);
out:
	if (msg)
		protobuf_c_message_free_unpacked(msg, NULL);
	free(owned);
}
