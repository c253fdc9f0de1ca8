/* pyro_pprof.c: pprof sent to /ingest (format=pprof, or a multipart/form-data
 * body as the Go, Ruby and .NET SDKs send it: `profile`, an optional
 * `sample_type_config` JSON naming its sample types, and `prev_profile`, which
 * Pyroscope refuses as from an old client). The profile is stored as sent, all
 * its sample types in one profile: gunzipped once, decoded once within the
 * limits, and handed over with its bytes (a profile of an old .NET agent is
 * first repaired as Pyroscope repairs it, pyro_dotnet.c). Its series is named as Pyroscope's
 * metricName names it (wall first, then the first sample type, or its display
 * name, saying cpu, memory, mutex, block or goroutines), in profd's names. */
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyro.h"

#define MAX_PARTS 16

/* The display name of sample type st in cfg (a sample_type_config object), or in
 * Pyroscope's defaults when cfg is NULL; NULL when none. */
static const char *display_name(json_object *cfg, const char *st)
{
	if (!cfg) {
		static const char *const def[][2] = {{"samples", "cpu"},
		                                     {"goroutine", "goroutines"},
		                                     {"contentions", "mutex_count"},
		                                     {"delay", "mutex_duration"}};
		for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++)
			if (strcmp(def[i][0], st) == 0)
				return def[i][1];
		return NULL;
	}
	json_object *c, *d;
	if (!json_object_object_get_ex(cfg, st, &c) || !json_object_is_type(c, json_type_object) ||
	    !json_object_object_get_ex(c, "display-name", &d) ||
	    !json_object_is_type(d, json_type_string))
		return NULL;
	const char *s = json_object_get_string(d);
	return *s ? s : NULL;
}

/* profd's __name__ for p into name (size bytes). */
static void series_name(const struct pd_pprof_profile *p, json_object *cfg, char *name, size_t size)
{
	size_t n = pd_pprof_sample_type_count(p);
	const char *st = "";
	for (size_t i = 0; i < n; i++)
		if (strcmp(pd_pprof_sample_type(p, i), "wall") == 0) {
			snprintf(name, size, "wall");
			return;
		}
	for (size_t i = 0; i < n; i++) {
		st = pd_pprof_sample_type(p, i);
		const char *dn = display_name(cfg, st);
		if (dn)
			st = dn;
		if (strstr(st, "cpu")) {
			snprintf(name, size, "profile");
			return;
		}
		if (strstr(st, "alloc_") || strstr(st, "inuse_") || strcmp(st, "space") == 0 ||
		    strcmp(st, "objects") == 0) {
			/* Pyroscope's "memory": heap, unless what the profile shows by
			 * default is allocations */
			int d = pd_pprof_default_sample_index(p);
			const char *ds = d >= 0 ? pd_pprof_sample_type(p, (size_t)d) : "";
			const char *ddn = display_name(cfg, ds);
			if (ddn)
				ds = ddn;
			snprintf(name, size, strncmp(ds, "alloc_", 6) == 0 ? "allocs" : "heap");
			return;
		}
		if (strstr(st, "mutex_")) {
			snprintf(name, size, "mutex");
			return;
		}
		if (strstr(st, "block_")) {
			snprintf(name, size, "block");
			return;
		}
		if (strstr(st, "goroutines")) {
			snprintf(name, size, "goroutine");
			return;
		}
	}
	/* what Pyroscope names it (the last sample type), as a metric name */
	size_t k = 0;
	for (const char *c = st; *c && k + 2 < size; c++) {
		int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
		         *c == ':' || (*c >= '0' && *c <= '9');
		if (k == 0 && *c >= '0' && *c <= '9')
			name[k++] = '_';
		name[k++] = ok ? *c : '_';
	}
	name[k] = '\0';
	if (k == 0)
		snprintf(name, size, "unknown");
}

/* Re-encodes *p with the comment added: *raw and *p are replaced. */
static int add_comment(struct pd_pprof_profile **p, uint8_t **raw, size_t *len, const char *c,
                       struct pd_err *err)
{
	struct pd_pprof_parts parts;
	int rc = pd_pprof_parts_get(*p, &parts, err);
	if (rc)
		return rc;
	const char **strs = malloc((parts.nstrings + 1) * sizeof(*strs));
	size_t *lens = malloc((parts.nstrings + 1) * sizeof(*lens));
	int64_t *cm = malloc((parts.ncomment + 1) * sizeof(*cm));
	uint8_t *nraw = NULL;
	size_t nlen = 0;
	struct pd_pprof_profile *np = NULL;
	if (!strs || !lens || !cm) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	memcpy(strs, parts.strings, parts.nstrings * sizeof(*strs));
	memcpy(lens, parts.string_len, parts.nstrings * sizeof(*lens));
	strs[parts.nstrings] = c;
	lens[parts.nstrings] = strlen(c);
	if (parts.ncomment)
		memcpy(cm, parts.comment, parts.ncomment * sizeof(*cm));
	cm[parts.ncomment] = (int64_t)parts.nstrings;
	parts.strings = strs;
	parts.string_len = lens;
	parts.nstrings++;
	parts.comment = cm;
	parts.ncomment++;
	if ((rc = pd_pprof_parts_encode(&parts, &nraw, &nlen, err)) ||
	    (rc = pd_pprof_parts_build(&parts, &np, err)))
		goto out;
	pd_pprof_destroy(*p);
	free(*raw);
	*p = np;
	*raw = nraw;
	*len = nlen;
	nraw = NULL;
out:
	free(nraw);
	free(strs);
	free(lens);
	free(cm);
	pd_pprof_parts_fini(&parts);
	return rc;
}

static int limit_of(int pprof_limit)
{
	switch (pprof_limit) {
	case PD_PPROF_LIMIT_DECOMPRESSED:
	case PD_PPROF_LIMIT_MEMORY:
		return PD_INGEST_LIMIT_DECOMPRESSED;
	case PD_PPROF_LIMIT_RATIO:
		return PD_INGEST_LIMIT_RATIO;
	case PD_PPROF_LIMIT_SAMPLES:
		return PD_INGEST_LIMIT_SAMPLES;
	case PD_PPROF_LIMIT_SAMPLE_LABELS:
		return PD_INGEST_LIMIT_LABELS;
	default:
		return 0;
	}
}

/* Appends the flag of limit l to err's message. */
static void append_flag(struct pd_err *err, int l)
{
	if (!err)
		return;
	size_t ml = strlen(err->msg);
	snprintf(err->msg + ml, sizeof(err->msg) - ml, " (%s)", pd_ingest_limit_flag(l));
}

/* Converts one pprof (gzip or not) with its sample type configuration. */
static int one(struct pyro_req *r, const uint8_t *data, size_t len, json_object *cfg,
               struct pd_err *err)
{
	uint8_t *raw = NULL;
	size_t rlen = 0;
	struct pd_pprof_profile *p = NULL;
	struct pd_labels *labels = NULL;
	int rc;
	if (pd_gzip_is(data, len)) {
		struct pd_inflate_opts io = {.format = PD_INFLATE_GZIP,
		                             .max = r->lim.max_decompressed,
		                             .max_ratio = r->lim.max_ratio};
		if ((rc = pd_inflate(data, len, &io, &raw, &rlen, err))) {
			if (rc == PD_ETOOBIG) {
				int l = err && strstr(err->msg, "ratio")
				            ? PD_INGEST_LIMIT_RATIO
				            : PD_INGEST_LIMIT_DECOMPRESSED;
				r->out->limit_hit = l;
				pd_err_prefix(err, "profile");
				append_flag(err, l);
			} else {
				pd_err_prefix(err, "profile: not a valid gzip stream");
				rc = PD_EINVAL;
			}
			return rc;
		}
	} else {
		if (len > r->lim.max_decompressed) {
			r->out->limit_hit = PD_INGEST_LIMIT_DECOMPRESSED;
			return pd_err_set(err, PD_ETOOBIG, "profile: %zu bytes, more than %zu (%s)",
			                  len, r->lim.max_decompressed,
			                  pd_ingest_limit_flag(PD_INGEST_LIMIT_DECOMPRESSED));
		}
		raw = malloc(len ? len : 1);
		if (!raw)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		memcpy(raw, data, len);
		rlen = len;
	}
	/* Pyroscope's isDotnetspy: the spy says so, or an unknown spy's sample types
	 * are .NET's */
	json_object *dn = NULL;
	int as_sent = pd_gzip_is(data, len); /* raw is the gzip stream's content */
	if (strcmp(r->spy_name, "dotnetspy") == 0 ||
	    (strcmp(r->spy_name, "unknown") == 0 && cfg &&
	     json_object_object_get_ex(cfg, "inuse-space", &dn))) {
		as_sent = 0; /* the repair may change the bytes */
		if ((rc = pyro_dotnet_fix(&raw, &rlen))) {
			free(raw);
			return pd_err_set(err, rc, "out of memory");
		}
	}
	int hit = 0;
	struct pd_pprof_decode_opts o = {.max_decompressed = r->lim.max_decompressed,
	                                 .max_memory = r->lim.max_decoded_memory,
	                                 .max_samples = r->lim.max_samples,
	                                 .max_sample_labels = r->lim.max_sample_labels,
	                                 .legacy_max_depth = r->lim.legacy_max_depth,
	                                 .legacy_max_line = r->lim.legacy_max_line,
	                                 .legacy_max_maps = r->lim.legacy_max_maps,
	                                 .limit_hit = &hit};
	if ((rc = pd_pprof_decode(&p, raw, rlen, &o, err))) {
		if (hit) {
			r->out->limit_hit = limit_of(hit);
			rc = PD_ETOOBIG;
			append_flag(err, r->out->limit_hit);
		} else if (rc != PD_ENOMEM) {
			rc = PD_EINVAL;
		}
		pd_err_prefix(err, "profile: not a pprof profile the store takes");
		goto fail;
	}
	char name[128];
	series_name(p, cfg, name, sizeof(name));
	if (r->aggregation_given) {
		char c[128];
		snprintf(c, sizeof(c), "aggregation=%.100s", r->aggregation);
		if ((rc = add_comment(&p, &raw, &rlen, c, err)))
			goto fail;
		as_sent = 0;
	}
	/* stored at `from`; else at the profile's own time, when it has a real one
	 * (old agents sent microseconds, which land in 1970) */
	int64_t tn = pd_pprof_time_nanos(p);
	int64_t t_ms = r->from_ms;
	if (!r->from_given && tn >= 365LL * 86400 * 1000000000)
		t_ms = tn / 1000000;
	if ((rc = pyro_series(r, name, r->name.full, NULL, 0, &labels, err)))
		goto fail;
	if ((rc = pd_ingest_batch_add(r->out, &r->lim, labels, raw, rlen, p, t_ms, err)))
		return rc;
	/* the WAL keeps the gzip stream as it came, as for POST /api/v1/profiles */
	if (as_sent)
		ingest_batch_keep_gzip(r->out, &r->lim, data, len);
	return 0;
fail:
	free(raw);
	pd_pprof_destroy(p);
	return rc;
}

int pyro_pprof(struct pyro_req *r, const uint8_t *body, size_t len, struct pd_err *err)
{
	const char *ct = r->q->content_type;
	if (!ct || !strstr(ct, "multipart/form-data"))
		return len ? one(r, body, len, NULL, err) : 0; /* nothing sent: nothing stored */
	struct pd_ingest_part parts[MAX_PARTS];
	size_t n = 0;
	int rc = pd_ingest_multipart(body, len, ct, parts, MAX_PARTS, &n, err);
	if (rc)
		return rc == PD_ETOOBIG ? PD_EINVAL : rc;
	if (pd_ingest_part_get(parts, n, "prev_profile"))
		return pd_err_set(err, PD_EINVAL,
		                  "the form has a prev_profile part, which only old clients send: "
		                  "update the Pyroscope SDK (github.com/grafana/pyroscope-go) to "
		                  "its latest version");
	const struct pd_ingest_part *prof = pd_ingest_part_get(parts, n, "profile");
	const struct pd_ingest_part *stc = pd_ingest_part_get(parts, n, "sample_type_config");
	if (!prof || prof->len == 0)
		return 0; /* as Pyroscope: a form without a profile stores nothing */
	json_object *cfg = NULL;
	json_tokener *tok = NULL;
	if (stc) {
		if (stc->len > INT_MAX)
			return pd_err_set(err, PD_EINVAL, "sample_type_config is too large");
		tok = json_tokener_new_ex((int)r->lim.max_json_depth);
		if (!tok)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		cfg = json_tokener_parse_ex(tok, (const char *)stc->data, (int)stc->len);
		enum json_tokener_error je = json_tokener_get_error(tok);
		if (je == json_tokener_error_depth) {
			r->out->limit_hit = PD_INGEST_LIMIT_JSON_DEPTH;
			rc = pd_err_set(err, PD_ETOOBIG,
			                "sample_type_config nests deeper than %u (%s)",
			                r->lim.max_json_depth,
			                pd_ingest_limit_flag(PD_INGEST_LIMIT_JSON_DEPTH));
			goto out;
		}
		if (je != json_tokener_success || !json_object_is_type(cfg, json_type_object)) {
			rc = pd_err_set(err, PD_EINVAL,
			                "sample_type_config is not a JSON object of sample types "
			                "(%s at byte %zu)",
			                je == json_tokener_success ? "not an object"
			                                           : json_tokener_error_desc(je),
			                json_tokener_get_parse_end(tok));
			goto out;
		}
	}
	rc = one(r, prof->data, prof->len, cfg, err);
out:
	json_object_put(cfg);
	if (tok)
		json_tokener_free(tok);
	return rc;
}
