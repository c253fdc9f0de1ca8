/* pyroscope.c: Pyroscope's `POST /ingest`: the query parameters read as
 * Pyroscope's ingest handler reads them (defaults sampleRate 100, spyName
 * "unknown", units "samples", aggregationType "sum"), the format chosen as it
 * chooses it, and the series labels and time every converter shares. The
 * converters are folded.c (groups, lines), speedscope.c, pyro_pprof.c and jfr.c;
 * the binary trie and tree formats of old agents are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pyro.h"

/* ---- profile types: Pyroscope's convertMetadata, with profd's names -------- */

static const struct pyro_type types[] = {
    {"cpu", "process_cpu", "profile", "samples", "count", 1},
    {"itimer", "process_cpu", "profile", "samples", "count", 1},
    {"wall", "wall", "wall", "samples", "count", 1},
    {"seconds", "wall", "wall", "samples", "count", 1},
    {"milliseconds", "wall", "wall", "samples", "count", 1},
    {"microseconds", "wall", "wall", "samples", "count", 1},
    {"nanoseconds", "wall", "wall", "samples", "count", 1},
    {"inuse_objects", "memory", "heap", "inuse_objects", "count", 0},
    {"inuse_space", "memory", "heap", "inuse_space", "bytes", 0},
    {"live", "memory", "heap", "live", "count", 0},
    {"alloc_objects", "memory", "allocs", "alloc_objects", "count", 0},
    {"alloc_space", "memory", "allocs", "alloc_space", "bytes", 0},
    {"alloc_in_new_tlab_objects", "memory", "allocs", "alloc_in_new_tlab_objects", "count", 0},
    {"alloc_in_new_tlab_bytes", "memory", "allocs", "alloc_in_new_tlab_bytes", "bytes", 0},
    {"alloc_outside_tlab_objects", "memory", "allocs", "alloc_outside_tlab_objects", "count", 0},
    {"alloc_outside_tlab_bytes", "memory", "allocs", "alloc_outside_tlab_bytes", "bytes", 0},
    {"goroutines", "goroutine", "goroutine", "goroutine", "count", 0},
    {"mutex_count", "mutex", "mutex", "contentions", "count", 0},
    {"mutex_duration", "mutex", "mutex", "delay", "nanoseconds", 0},
    {"block_count", "block", "block", "contentions", "count", 0},
    {"block_duration", "block", "block", "delay", "nanoseconds", 0},
    {"lock_count", "block", "block", "contentions", "count", 0},
    {"lock_duration", "block", "block", "delay", "nanoseconds", 0},
    {"exceptions", "exceptions", "exceptions", "samples", "count", 0},
    {"bytes", "memory", "memory", "samples", "bytes", 0},
};

const struct pyro_type *pyro_type_find(const char *suffix)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].suffix, suffix) == 0)
			return &types[i];
	return NULL;
}

const char *pyro_type_list(void)
{
	return "cpu, itimer, wall, seconds, milliseconds, microseconds, nanoseconds, "
	       "inuse_objects, inuse_space, live, alloc_objects, alloc_space, "
	       "alloc_in_new_tlab_objects, alloc_in_new_tlab_bytes, alloc_outside_tlab_objects, "
	       "alloc_outside_tlab_bytes, goroutines, mutex_count, mutex_duration, block_count, "
	       "block_duration, lock_count, lock_duration, exceptions, bytes";
}

/* ---- what every converter shares -------------------------------------------- */

int pyro_series(struct pyro_req *r, const char *metric, const char *service,
                const struct ingest_label *extra, size_t n_extra, struct pd_labels **out,
                struct pd_err *err)
{
	size_t cap = r->name.n + n_extra + 1;
	struct ingest_label *ls = calloc(cap, sizeof(*ls));
	size_t n = 0;
	if (!ls)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	struct ingest_label spy = {"pyroscope_spy", 13, r->spy_name, strlen(r->spy_name)};
	for (size_t i = 0; i < r->name.n; i++) {
		const struct ingest_label *l = &r->name.ls[i];
		int over = r->spy_given && l->name_len == 13 && memcmp(l->name, spy.name, 13) == 0;
		for (size_t j = 0; j < n_extra && !over; j++)
			over = extra[j].name_len == l->name_len &&
			       memcmp(extra[j].name, l->name, l->name_len) == 0;
		if (!over) /* what the request adds wins, as Pyroscope's Add does */
			ls[n++] = *l;
	}
	for (size_t j = 0; j < n_extra; j++)
		ls[n++] = extra[j];
	if (r->spy_given)
		ls[n++] = spy;
	int limit = 0;
	int rc = ingest_series(ls, n, metric, service, &r->lim, out, &limit, err);
	if (rc == PD_ETOOBIG)
		r->out->limit_hit = limit;
	free(ls);
	return rc;
}

struct ingest_pb *pyro_builder(const struct pyro_req *r, const struct pyro_type *t, uint32_t rate,
                               int64_t *scale)
{
	struct ingest_pb *pb = ingest_pb_create(&r->lim);
	if (!pb)
		return NULL;
	*scale = 1;
	if (t->timed && rate) {
		/* Pyroscope's Put: counts at rate Hz become nanoseconds */
		const char *st = strcmp(t->metric, "wall") == 0 ? "wall" : "cpu";
		*scale = 1000000000 / (int64_t)rate;
		ingest_pb_sample_type(pb, st, "nanoseconds");
		ingest_pb_period(pb, st, "nanoseconds", *scale);
	} else {
		ingest_pb_sample_type(pb, t->st_type, t->st_unit);
	}
	return pb;
}

int pyro_add_built(struct pyro_req *r, struct ingest_pb *pb, struct pd_labels *labels,
                   struct pd_err *err)
{
	int64_t dur = r->until_ms > r->from_ms ? r->until_ms - r->from_ms : 0;
	ingest_pb_time(pb, r->from_ms * 1000000, dur * 1000000);
	char c[128];
	int cl = snprintf(c, sizeof(c), "aggregation=%.100s", r->aggregation);
	ingest_pb_comment(pb, c, (size_t)cl);
	uint8_t *raw = NULL;
	size_t rlen = 0;
	struct pd_pprof_profile *dec = NULL;
	int limit = 0;
	int rc = ingest_pb_err(pb, err, &limit);
	if (!rc)
		rc = ingest_pb_finish(pb, &raw, &rlen, &dec, err);
	if (rc) {
		if (rc == PD_ETOOBIG)
			r->out->limit_hit = limit;
		pd_labels_destroy(labels);
		return rc;
	}
	return pd_ingest_batch_add(r->out, &r->lim, labels, raw, rlen, dec, r->from_ms, err);
}

/* ---- parameters and dispatch ------------------------------------------------ */

static int has(const char *s)
{
	return s && *s;
}

/* Pyroscope's strconv.Atoi; 0 when s is not a whole number that fits. */
static int parse_uint32(const char *s, uint32_t *v)
{
	const char *p = s;
	if (*p == '+')
		p++;
	if (!*p)
		return 0;
	uint64_t x = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		x = x * 10 + (uint64_t)(*p - '0');
		if (x > UINT32_MAX)
			return 0;
	}
	*v = (uint32_t)x;
	return 1;
}

static int read_params(struct pyro_req *r, const struct pd_ingest_params *q, struct pd_err *err)
{
	int rc = pyro_name_parse(q->name, &r->name, err);
	if (rc)
		return rc;
	r->from_ms = r->until_ms = q->now_ms;
	if (has(q->from)) {
		if ((rc = pyro_time_parse(q->from, q->now_ms, &r->from_ms, err))) {
			pd_err_prefix(err, "from");
			return rc;
		}
		r->from_given = 1;
	}
	if (has(q->until) && (rc = pyro_time_parse(q->until, q->now_ms, &r->until_ms, err))) {
		pd_err_prefix(err, "until");
		return rc;
	}
	/* profile times are nanoseconds in an int64: 1970 to 2262 */
	const int64_t max_ms = INT64_MAX / 1000000;
	if (r->from_ms < 0 || r->from_ms > max_ms || r->until_ms < 0 || r->until_ms > max_ms)
		return pd_err_set(err, PD_EINVAL,
				  "%s: the time is outside 1970-01-01 to 2262-04-11, which profile "
				  "times in nanoseconds can hold",
				  r->from_ms < 0 || r->from_ms > max_ms ? "from" : "until");
	/* an unreadable sampleRate is the default, as Pyroscope takes it */
	r->sample_rate = 100;
	if (has(q->sample_rate) && !parse_uint32(q->sample_rate, &r->sample_rate))
		r->sample_rate = 100;
	/* more than 1 GHz would make a sample worth less than a nanosecond */
	if (r->sample_rate > 1000000000)
		return pd_err_set(err, PD_EINVAL,
				  "sampleRate: %u Hz is more than 1000000000 (a sample would be "
				  "worth less than a nanosecond)",
				  r->sample_rate);
	r->spy_given = has(q->spy_name);
	r->spy_name = r->spy_given ? q->spy_name : "unknown";
	r->units = has(q->units) ? q->units : "samples";
	r->aggregation_given = has(q->aggregation_type);
	r->aggregation = r->aggregation_given ? q->aggregation_type : "sum";
	return 0;
}

static int ct_is(const char *ct, const char *what)
{
	if (!ct)
		return 0;
	while (*ct == ' ')
		ct++;
	size_t n = strlen(what);
	return strncasecmp(ct, what, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static int run_jfr(struct pyro_req *r, const uint8_t *body, size_t len, struct pd_err *err)
{
	/* the name's labels, service_name and pyroscope_spy included, without
	 * __name__ (the JFR converter names each profile) */
	struct pd_labels *ls = NULL, *base = NULL;
	int rc = pyro_series(r, "jfr", r->name.app, NULL, 0, &base, err);
	if (rc)
		return rc;
	struct pd_labels_builder *lb = pd_labels_builder_create(NULL);
	if (!lb) {
		pd_labels_destroy(base);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	pd_labels_builder_reset(lb, base);
	pd_labels_builder_del(lb, PD_LABELS_METRIC_NAME);
	rc = pd_labels_builder_finish(lb, &ls, err);
	pd_labels_builder_destroy(lb);
	pd_labels_destroy(base);
	if (rc)
		return rc;
	struct ingest_meta m = {
	    .labels = ls,
	    .app = r->name.app,
	    .type = r->name.type,
	    .from_ms = r->from_ms,
	    .until_ms = r->until_ms,
	    .sample_rate = r->sample_rate,
	    .spy_name = r->spy_name,
	    .units = r->units,
	    .aggregation = r->aggregation,
	    .now_ms = r->q->now_ms,
	};
	rc = ingest_jfr(&m, body, len, r->q->content_type, &r->lim, r->out, err);
	pd_labels_destroy(ls);
	return rc;
}

int pd_ingest_pyroscope(const struct pd_ingest_params *q, const uint8_t *body, size_t len,
			const struct pd_ingest_limits *lim, struct pd_ingest_batch *b,
			struct pd_err *err)
{
	struct pyro_req r = {.q = q, .lim = pd_ingest_limits_resolve(lim), .out = b};
	const char *fmt = q->format ? q->format : "";
	const char *ct = q->content_type;
	int rc;
	/* the format, in the order Pyroscope's handler tests them */
	enum { F_GROUPS, F_TRIE, F_TREE, F_LINES, F_JFR, F_PPROF, F_SPEEDSCOPE } f;
	if (strcmp(fmt, "trie") == 0 || ct_is(ct, "binary/octet-stream+trie"))
		f = F_TRIE;
	else if (strcmp(fmt, "tree") == 0 || ct_is(ct, "binary/octet-stream+tree"))
		f = F_TREE;
	else if (strcmp(fmt, "lines") == 0)
		f = F_LINES;
	else if (strcmp(fmt, "jfr") == 0)
		f = F_JFR;
	else if (strcmp(fmt, "pprof") == 0)
		f = F_PPROF;
	else if (strcmp(fmt, "speedscope") == 0)
		f = F_SPEEDSCOPE;
	else if (ct && strstr(ct, "multipart/form-data"))
		f = F_PPROF;
	else if (!*fmt || strcmp(fmt, "groups") == 0 || strcmp(fmt, "folded") == 0)
		f = F_GROUPS;
	else {
		b->format = NULL;
		return pd_err_set(err, PD_EINVAL,
		                  "format \"%.64s\" is not one of groups, lines, pprof, jfr, "
		                  "speedscope",
		                  fmt);
	}
	static const char *const names[] = {"folded", "trie",  "tree",      "lines",
	                                    "jfr",    "pprof", "speedscope"};
	b->format = names[f];
	if (f == F_TRIE || f == F_TREE)
		return pd_err_set(
		    err, PD_EINCOMPAT,
		    "format %s (Pyroscope's binary %s of old agents) is not read: "
		    "send pprof (format=pprof) or folded stacks (format=groups) instead",
		    names[f], names[f]);
	if ((rc = read_params(&r, q, err)))
		goto out;
	switch (f) {
	case F_LINES:
	case F_GROUPS:
		rc = pyro_folded(&r, body, len, f == F_LINES, err);
		break;
	case F_JFR:
		rc = run_jfr(&r, body, len, err);
		break;
	case F_PPROF:
		rc = pyro_pprof(&r, body, len, err);
		break;
	default:
		rc = pyro_speedscope(&r, body, len, err);
		break;
	}
out:
	pyro_name_fini(&r.name);
	if (rc) {
		const char *format = b->format;
		int limit = b->limit_hit;
		pd_ingest_batch_fini(b);
		b->format = format;
		b->limit_hit = limit;
	}
	return rc;
}
