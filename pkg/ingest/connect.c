/* connect.c: Pyroscope's push.v1.PusherService/Push as Connect carries it, in
 * protobuf or JSON. Each RawProfileSeries gives its labels to every one of its
 * samples, and each sample's raw_profile is a pprof (gzip-compressed or not) that
 * becomes one stored profile, decoded and validated within the request's limits;
 * __name__ is mapped to profd's names as docs/ingest.md states, by the profile's
 * sample types (docs/ingest-otlp.md). */
#include <inttypes.h>
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_int.h"
#include "push.pb-c.h"

/* The default sample type's name of p, "" when none. */
static const char *default_type(const struct pd_pprof_profile *p)
{
	int i = pd_pprof_default_sample_index(p);
	return i < 0 ? "" : pd_pprof_sample_type(p, (size_t)i);
}

static int has_type(const struct pd_pprof_profile *p, const char *t)
{
	for (size_t i = 0; i < pd_pprof_sample_type_count(p); i++)
		if (strcmp(pd_pprof_sample_type(p, i), t) == 0)
			return 1;
	return 0;
}

static int prefix(const char *s, const char *pre)
{
	return strncmp(s, pre, strlen(pre)) == 0;
}

/* profd's name for a profile by what its sample types say, NULL when they say
 * nothing known. */
static const char *name_by_types(const struct pd_pprof_profile *p, const char *metric)
{
	const char *t = default_type(p);
	if (strcmp(t, "cpu") == 0 || strcmp(t, "samples") == 0)
		return has_type(p, "wall") && !has_type(p, "cpu") ? "wall" : "profile";
	if (strcmp(t, "wall") == 0)
		return "wall";
	if (prefix(t, "inuse_") || prefix(t, "live"))
		return "heap";
	if (prefix(t, "alloc_"))
		return "allocs";
	if (strcmp(t, "goroutine") == 0 || strcmp(t, "goroutines") == 0)
		return "goroutine";
	if (strcmp(t, "contentions") == 0 || strcmp(t, "delay") == 0) {
		if (metric && strcmp(metric, "mutex") == 0)
			return "mutex";
		if (metric && strcmp(metric, "block") == 0)
			return "block";
		return strstr(pd_pprof_period_type(p), "mutex") ? "mutex" : "block";
	}
	if (strcmp(t, "exceptions") == 0)
		return "exceptions";
	return NULL;
}

const char *ingest_profile_name(const struct pd_pprof_profile *p, const char *metric, char *buf,
                                size_t size)
{
	static const struct {
		const char *metric, *name;
	} known[] = {
	    {"process_cpu", "profile"}, {"memory", "heap"},           {"block", "block"},
	    {"mutex", "mutex"},         {"goroutine", "goroutine"},   {"goroutines", "goroutine"},
	    {"wall", "wall"},           {"exceptions", "exceptions"}, {"profile", "profile"},
	    {"heap", "heap"},           {"allocs", "allocs"},
	};
	const char *by_types = name_by_types(p, metric);
	if (!metric || !*metric)
		return by_types;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (strcmp(metric, known[i].metric) == 0)
			return by_types ? by_types : known[i].name;
	/* a name profd does not know: kept, made a legal metric name */
	size_t n = 0;
	for (const char *s = metric; *s && n + 1 < size; s++, n++) {
		char c = *s;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
		         (c >= '0' && c <= '9' && n > 0);
		buf[n] = ok ? c : '_';
	}
	buf[n] = 0;
	return buf;
}

/* The stack depth and symbol lengths of a decoded pprof, within lim as the
 * other converters' are. */
static int check_sizes(const struct pd_pprof_profile *p, const struct pd_ingest_limits *lim,
                       int *limit, struct pd_err *err)
{
	struct pd_pprof_parts pp;
	int rc = pd_pprof_parts_get(p, &pp, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < pp.nsample && !rc; i++)
		if (pp.sample[i].nlocation > lim->max_stack_depth) {
			*limit = PD_INGEST_LIMIT_STACK_DEPTH;
			rc = pd_err_set(err, PD_ETOOBIG,
			                "sample %zu has %zu frames, more than %zu (%s)", i,
			                pp.sample[i].nlocation, lim->max_stack_depth,
			                pd_ingest_limit_flag(*limit));
		}
	for (size_t i = 0; i < pp.nfunction && !rc; i++) {
		const struct pd_pprof_pfunction *f = &pp.function[i];
		int64_t s[3] = {f->name, f->system_name, f->filename};
		for (int k = 0; k < 3 && !rc; k++)
			if (s[k] > 0 && (size_t)s[k] < pp.nstrings &&
			    pp.string_len[s[k]] > lim->max_symbol_len) {
				*limit = PD_INGEST_LIMIT_SYMBOL_LEN;
				rc =
				    pd_err_set(err, PD_ETOOBIG,
				               "function %" PRIu64 " has a name of %zu bytes, more "
				               "than %zu (%s)",
				               f->id, pp.string_len[s[k]], lim->max_symbol_len,
				               pd_ingest_limit_flag(*limit));
			}
	}
	pd_pprof_parts_fini(&pp);
	return rc;
}

/* One sample of a series: its pprof decoded and added to b. */
static int push_sample(const Push__V1__RawSample *s, const struct ingest_label *ls, size_t nls,
                       const char *metric, const struct pd_ingest_limits *lim, int64_t now_ms,
                       struct pd_ingest_batch *b, struct pd_err *err)
{
	int pl = 0;
	struct pd_pprof_decode_opts o = {
	    .max_decompressed = lim->max_decompressed,
	    .max_memory =
	        lim->max_decoded_memory ? lim->max_decoded_memory : PD_PPROF_STORE_MAX_MEMORY,
	    .max_ratio = lim->max_ratio,
	    .max_samples = lim->max_samples,
	    .max_sample_labels =
	        lim->max_sample_labels ? lim->max_sample_labels : PD_PPROF_STORE_MAX_SAMPLE_LABELS,
	    .legacy_max_depth = lim->legacy_max_depth,
	    .legacy_max_line = lim->legacy_max_line,
	    .legacy_max_maps = lim->legacy_max_maps,
	    .limit_hit = &pl,
	};
	struct pd_pprof_profile *p = NULL;
	struct pd_labels *labels = NULL;
	uint8_t *raw = NULL;
	size_t rlen = 0;
	char nbuf[128];
	int rc = pd_pprof_decode(&p, s->raw_profile.data, s->raw_profile.len, &o, err);
	if (rc) {
		static const int map[] = {
		    [PD_PPROF_LIMIT_DECOMPRESSED] = PD_INGEST_LIMIT_DECOMPRESSED,
		    [PD_PPROF_LIMIT_RATIO] = PD_INGEST_LIMIT_RATIO,
		    [PD_PPROF_LIMIT_MEMORY] = PD_INGEST_LIMIT_DECOMPRESSED,
		    [PD_PPROF_LIMIT_SAMPLES] = PD_INGEST_LIMIT_SAMPLES,
		    [PD_PPROF_LIMIT_SAMPLE_LABELS] = PD_INGEST_LIMIT_LABELS,
		};
		if (pl > 0 && pl < PD_PPROF_LIMIT_COUNT)
			b->limit_hit = map[pl];
		if (rc == PD_ETOOBIG && !b->limit_hit)
			b->limit_hit = PD_INGEST_LIMIT_DECOMPRESSED;
		if (rc != PD_ETOOBIG && rc != PD_ENOMEM)
			rc = PD_EINVAL; /* the client's bytes: invalid_argument */
		pd_err_prefix(err, "raw_profile");
		return rc;
	}
	if ((rc = check_sizes(p, lim, &b->limit_hit, err))) {
		pd_pprof_destroy(p);
		return rc;
	}
	const char *name = ingest_profile_name(p, metric, nbuf, sizeof nbuf);
	if (!name) {
		rc = pd_err_set(err, PD_EINVAL,
		                "the series has no __name__ label and the profile's sample type "
		                "\"%.64s\" does not say what it is",
		                default_type(p));
		pd_pprof_destroy(p);
		return rc;
	}
	if ((rc =
	         ingest_series(ls, nls, name, "unknown_service", lim, &labels, &b->limit_hit, err)))
		goto fail;
	if (pd_gzip_is(s->raw_profile.data, s->raw_profile.len)) {
		if ((rc = pd_pprof_encode(p, 0, &raw, &rlen, err)))
			goto fail;
	} else {
		rlen = s->raw_profile.len;
		raw = malloc(rlen ? rlen : 1);
		if (!raw) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		memcpy(raw, s->raw_profile.data, rlen);
	}
	int64_t tn = pd_pprof_time_nanos(p);
	int64_t t_ms = tn > 0 ? tn / 1000000 : now_ms;
	return pd_ingest_batch_add(b, lim, labels, raw, rlen, p, t_ms, err);
fail:
	pd_labels_destroy(labels);
	pd_pprof_destroy(p);
	free(raw);
	return rc;
}

int pd_ingest_connect_push(const uint8_t *body, size_t len, int json,
                           const struct pd_ingest_limits *lim_in, int64_t now_ms,
                           struct pd_ingest_batch *b, struct pd_err *err)
{
	struct pd_ingest_limits lim = pd_ingest_limits_resolve(lim_in);
	ProtobufCMessage *m = NULL;
	struct pd_arena *ma = NULL; /* m's memory, when unpacked from protobuf */
	struct ingest_label *ls = NULL;
	int rc;
	b->format = json ? "connect_json" : "connect";
	if (json)
		rc = ingest_pbjson_parse(&push__v1__push_request__descriptor, body, len, &lim, &m,
		                         &b->limit_hit, err);
	else
		rc = ingest_pb_unpack(&push__v1__push_request__descriptor, body, len,
		                      lim.max_request_memory, &m, &ma, err);
	if (rc == PD_ETOOBIG && !b->limit_hit)
		b->limit_hit = json ? PD_INGEST_LIMIT_JSON_SIZE : PD_INGEST_LIMIT_REQUEST_MEMORY;
	if (rc) {
		pd_err_prefix(err, "PushRequest");
		return rc;
	}
	const Push__V1__PushRequest *req = (const Push__V1__PushRequest *)m;
	for (size_t i = 0; i < req->n_series && !rc; i++) {
		const Push__V1__RawProfileSeries *s = req->series[i];
		const char *metric = NULL;
		free(ls);
		ls = calloc(s->n_labels ? s->n_labels : 1, sizeof *ls);
		if (!ls) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		for (size_t k = 0; k < s->n_labels; k++) {
			const Types__V1__LabelPair *l = s->labels[k];
			ls[k] = (struct ingest_label){l->name, strlen(l->name), l->value,
			                              strlen(l->value)};
			if (strcmp(l->name, PD_LABELS_METRIC_NAME) == 0)
				metric = l->value;
		}
		for (size_t k = 0; k < s->n_samples && !rc; k++) {
			rc = push_sample(s->samples[k], ls, s->n_labels, metric, &lim, now_ms, b,
			                 err);
			if (rc) {
				char where[64];
				snprintf(where, sizeof where, "series[%zu].samples[%zu]", i, k);
				pd_err_prefix(err, "%s", where);
			}
		}
	}
	free(ls);
	if (ma)
		pd_arena_destroy(ma);
	else
		protobuf_c_message_free_unpacked(m, NULL);
	if (rc) {
		int hit = b->limit_hit;
		pd_ingest_batch_fini(b);
		b->limit_hit = hit;
		b->format = json ? "connect_json" : "connect";
	}
	return rc;
}
