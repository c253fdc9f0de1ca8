/* otlp.c: OTLP profiles over HTTP (opentelemetry-proto v1.11.0,
 * profiles/v1development, with the request-wide ProfilesDictionary), protobuf or
 * OTLP/JSON. Each Profile becomes one pprof profile (the profiles of one scope that
 * are one profile split by sample type, of the same time and period, are grouped
 * here into one profile of several sample types), which otlp_profile.c builds
 * through the dictionary as Pyroscope's OTLP ingest converts one, and which is
 * stored as one series whose labels are its resource's (and scope's) attributes.
 * A profile that cannot be converted is left out and counted in the batch's
 * rejected profiles, with the first reason (ExportProfilesPartialSuccess, which
 * the response carries); the rest are kept. docs/ingest-otlp.md says what is
 * read. */
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp_int.h"

/* Whether profiles j and k have the same time, duration, period type and period. */
static int same_frame(const Profile *const *ps, const struct head *hs, size_t j, size_t k)
{
	return ps[j]->time_unix_nano == ps[k]->time_unix_nano &&
	       ps[j]->duration_nano == ps[k]->duration_nano && ps[j]->period == ps[k]->period &&
	       strcmp(hs[j].ptype, hs[k].ptype) == 0 && strcmp(hs[j].punit, hs[k].punit) == 0;
}

/* Groups the profiles of one scope that are one pprof profile split by sample type
 * (as an OTLP exporter sends a Go heap profile: four profiles of one time and
 * period), so that each group is stored as one profile and not as duplicates of one
 * series and time. Profiles join the first group with the same time, duration,
 * period type and period that lacks their sample type. grp[k] is profile k's group
 * (SIZE_MAX: left out, empty or with a bad header in hs[k]'s error, herr[k]). */
static size_t group_profiles(struct conv *c, const Profile *const *ps, size_t n,
                             struct head *hs, int *hrc, struct pd_err *herr, size_t *grp)
{
	size_t ngroups = 0;
	for (size_t k = 0; k < n; k++) {
		grp[k] = SIZE_MAX;
		struct pd_err *saved = c->err;
		c->err = &herr[k];
		hrc[k] = otlp_head_of(c, ps[k], &hs[k]);
		c->err = saved;
		if (!ps[k]->n_samples)
			continue;
		if (hrc[k])
			grp[k] = ngroups++;
	}
	/* samples:count beside a cpu:nanoseconds profile of the same time stays a count */
	for (size_t k = 0; k < n; k++) {
		if (!hs[k].to_nanos || hrc[k])
			continue;
		for (size_t j = 0; j < n && hs[k].to_nanos; j++)
			if (j != k && !hrc[j] && ps[j]->n_samples && same_frame(ps, hs, j, k) &&
			    strcmp(hs[j].type, "cpu") == 0 && strcmp(hs[j].unit, "nanoseconds") == 0)
				hs[k].to_nanos = 0;
	}
	for (size_t k = 0; k < n; k++) {
		if (!ps[k]->n_samples || hrc[k])
			continue;
		const char *type, *unit;
		otlp_stored_type(&hs[k], &type, &unit);
		for (size_t j = 0; j < k && grp[k] == SIZE_MAX; j++) {
			if (grp[j] == SIZE_MAX || hrc[j] || !same_frame(ps, hs, j, k))
				continue;
			int taken = 0;
			for (size_t i = 0; i < k && !taken; i++) {
				const char *t2, *u2;
				if (grp[i] != grp[j] || hrc[i])
					continue;
				otlp_stored_type(&hs[i], &t2, &u2);
				taken = strcmp(t2, type) == 0 && strcmp(u2, unit) == 0;
			}
			if (!taken)
				grp[k] = grp[j];
		}
		if (grp[k] == SIZE_MAX)
			grp[k] = ngroups++;
	}
	return ngroups;
}

/* A label name made legal: bytes outside [a-zA-Z0-9_.] become '_' (ingest_series
 * turns dots into underscores), and a leading digit gets a '_' before it. */
static char *sanitize(const char *s)
{
	size_t n = strlen(s);
	char *o = malloc(n + 2), *q = o;
	if (!o)
		return NULL;
	if (*s >= '0' && *s <= '9')
		*q++ = '_';
	for (; *s; s++) {
		char ch = *s;
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		         (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
		*q++ = ok ? ch : '_';
	}
	*q = 0;
	return o;
}

/* The series labels one resource and scope give (first one of a name wins). */
struct rlabels {
	struct ingest_label *v;
	char **names;
	char (*vals)[32];
	size_t n, cap;
	char service[512];
};

static void rlabels_fini(struct rlabels *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->names[i]);
	free(r->names);
	free(r->v);
	free(r->vals);
	memset(r, 0, sizeof *r);
}

static int rlabels_add(struct rlabels *r, KeyValue *const *kv, size_t n, int *limit,
                       const struct pd_ingest_limits *lim, struct pd_err *err)
{
	for (size_t i = 0; i < n; i++) {
		if (!kv[i]->key || !*kv[i]->key || strcmp(kv[i]->key, "service.name") == 0)
			continue;
		if (r->n == r->cap) {
			*limit = PD_INGEST_LIMIT_LABELS;
			return pd_err_set(
			    err, PD_ETOOBIG,
			    "the resource has more than %zu attributes to be labels (%s)",
			    lim->max_labels, pd_ingest_limit_flag(*limit));
		}
		const char *v =
		    otlp_any_string(NULL, kv[i]->value, r->vals[r->n], sizeof r->vals[r->n]);
		if (!v || !*v)
			continue;
		char *name = sanitize(kv[i]->key);
		if (!name)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		int dup = 0;
		for (size_t k = 0; k < r->n && !dup; k++)
			dup = strcmp(r->names[k], name) == 0;
		if (dup) {
			free(name);
			continue;
		}
		r->names[r->n] = name;
		r->v[r->n] = (struct ingest_label){name, strlen(name), v, strlen(v)};
		r->n++;
	}
	return 0;
}

/* service.name, else unknown_service[:process.executable.name], as Pyroscope. */
static void service_of(struct rlabels *r, KeyValue *const *kv, size_t n)
{
	char buf[32], svc[sizeof r->service] = "", exe[sizeof r->service] = "";
	for (size_t i = 0; i < n; i++) {
		const char *v = otlp_any_string(NULL, kv[i]->value, buf, sizeof buf);
		if (!kv[i]->key || !v || !*v)
			continue;
		if (!*svc && strcmp(kv[i]->key, "service.name") == 0)
			snprintf(svc, sizeof svc, "%s", v);
		if (!*exe && strcmp(kv[i]->key, "process.executable.name") == 0)
			snprintf(exe, sizeof exe, "%s", v);
	}
	if (*svc)
		snprintf(r->service, sizeof r->service, "%s", svc);
	else if (*exe)
		snprintf(r->service, sizeof r->service, "unknown_service:%.400s", exe);
	else
		snprintf(r->service, sizeof r->service, "unknown_service");
}

static void reject(struct pd_ingest_batch *b, size_t n, const char *where, const char *why)
{
	if (!b->rejected)
		snprintf(b->rejected_msg, sizeof b->rejected_msg, "%.100s: %.150s", where, why);
	b->rejected += n;
}

/* Per mapping of the dictionary: 1 when every location of it has lines that all
 * name a function. */
static uint8_t *mapping_functions(const Dict *d)
{
	uint8_t *has = malloc(d->n_mapping_table ? d->n_mapping_table : 1);
	if (!has)
		return NULL;
	memset(has, 1, d->n_mapping_table ? d->n_mapping_table : 1);
	for (size_t i = 0; i < d->n_location_table; i++) {
		const Location *l = d->location_table[i];
		int32_t mi = l->mapping_index;
		if (mi <= 0 || (size_t)mi >= d->n_mapping_table)
			continue;
		int ok = l->n_lines > 0;
		for (size_t k = 0; k < l->n_lines && ok; k++)
			ok = l->lines[k]->function_index > 0;
		if (!ok)
			has[mi] = 0;
	}
	return has;
}

/* Converts the profiles of one scope (series labels rl) into b, a profile per
 * group of group_profiles; a group that cannot be converted is counted rejected.
 * Only running out of memory fails the request. */
static int convert_scope(struct conv *c,
                         const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp,
                         const char *where, const struct rlabels *rl,
                         const struct pd_ingest_limits *lim, int64_t now_ms,
                         struct pd_ingest_batch *b, struct pd_err *err)
{
	size_t n = sp->n_profiles;
	const Profile *const *ps = (const Profile *const *)sp->profiles;
	struct head *hs = calloc(n ? n : 1, sizeof *hs);
	struct head *ghs = calloc(n ? n : 1, sizeof *ghs);
	const Profile **gps = calloc(n ? n : 1, sizeof *gps);
	int *hrc = calloc(n ? n : 1, sizeof *hrc);
	struct pd_err *herr = calloc(n ? n : 1, sizeof *herr);
	size_t *grp = calloc(n ? n : 1, sizeof *grp), *gidx = calloc(n ? n : 1, sizeof *gidx);
	int rc = 0;
	if (!hs || !ghs || !gps || !hrc || !herr || !grp || !gidx) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	size_t ngroups = group_profiles(c, ps, n, hs, hrc, herr, grp);
	for (size_t g = 0; g < ngroups && !rc; g++) {
		size_t m = 0;
		for (size_t k = 0; k < n; k++)
			if (grp[k] == g) {
				gidx[m] = k;
				gps[m] = ps[k];
				ghs[m++] = hs[k];
			}
		char pwhere[128];
		snprintf(pwhere, sizeof pwhere, "%s.profiles[%zu]", where, gidx[0]);
		if (hrc[gidx[0]]) {
			reject(b, 1, pwhere, herr[gidx[0]].msg);
			continue;
		}
		uint8_t *raw = NULL;
		size_t rlen = 0, bad = 0;
		struct pd_pprof_profile *dec = NULL;
		struct pd_labels *labels = NULL;
		const char *metric;
		char nbuf[128];
		struct pd_err perr = {0};
		int phit = 0;
		c->gen++; /* every memo of the group before is stale */
		c->err = &perr;
		int prc = otlp_convert(c, gps, ghs, m, lim, now_ms, &raw, &rlen, &dec, &metric,
		                       &bad, &phit);
		if (prc && m > 1)
			snprintf(pwhere, sizeof pwhere, "%s.profiles[%zu]", where, gidx[bad]);
		if (!prc) {
			/* what the sample types say, else Pyroscope's name */
			const char *name = ingest_profile_name(dec, NULL, nbuf, sizeof nbuf);
			if (!name)
				name = ingest_profile_name(dec, metric ? metric : "process_cpu", nbuf,
				                           sizeof nbuf);
			prc = ingest_series(rl->v, rl->n, name, rl->service, lim, &labels, &phit,
			                    &perr);
		}
		if (prc == PD_ENOMEM) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		} else if (prc) {
			reject(b, m, pwhere, perr.msg);
		} else {
			int64_t t_ms = pd_pprof_time_nanos(dec) / 1000000;
			rc = pd_ingest_batch_add(b, lim, labels, raw, rlen, dec, t_ms, err);
			raw = NULL;
			dec = NULL;
		}
		free(raw);
		pd_pprof_destroy(dec);
	}
out:
	free(hs);
	free(ghs);
	free(gps);
	free(hrc);
	free(herr);
	free(grp);
	free(gidx);
	return rc;
}

static size_t count_profiles(const Request *q, size_t r)
{
	size_t n = 0;
	for (size_t s = 0; s < q->resource_profiles[r]->n_scope_profiles; s++)
		n += q->resource_profiles[r]->scope_profiles[s]->n_profiles;
	return n;
}

int pd_ingest_otlp(const uint8_t *body, size_t len, int json, const struct pd_ingest_limits *lim_in,
                   int64_t now_ms, struct pd_ingest_batch *b, struct pd_err *err)
{
	struct pd_ingest_limits lim = pd_ingest_limits_resolve(lim_in);
	ProtobufCMessage *m = NULL;
	struct pd_arena *ma = NULL; /* m's memory, when unpacked from protobuf */
	struct conv c = {.err = err};
	struct rlabels rl = {0};
	int rc;
	b->format = json ? "otlp_json" : "otlp";
	if (json)
		rc = ingest_pbjson_parse(
		    &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
		    body, len, &lim, &m, &b->limit_hit, err);
	else
		rc = ingest_pb_unpack(
		    &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
		    body, len, lim.max_request_memory, &m, &ma, err);
	if (rc == PD_ETOOBIG && !b->limit_hit)
		b->limit_hit = json ? PD_INGEST_LIMIT_JSON_SIZE : PD_INGEST_LIMIT_REQUEST_MEMORY;
	if (rc) {
		pd_err_prefix(err, "ExportProfilesServiceRequest");
		return rc;
	}
	const Request *q = (const Request *)m;
	size_t total = 0;
	for (size_t r = 0; r < q->n_resource_profiles; r++)
		total += count_profiles(q, r);
	if (total && !q->dictionary) {
		rc = pd_err_set(err, PD_EINVAL,
		                "ExportProfilesServiceRequest: the request has profiles but no "
		                "dictionary");
		goto out;
	}
	if (total > lim.max_profiles) {
		b->limit_hit = PD_INGEST_LIMIT_PROFILES;
		rc = pd_err_set(err, PD_ETOOBIG, "the request has %zu profiles, more than %zu (%s)",
		                total, lim.max_profiles, pd_ingest_limit_flag(b->limit_hit));
		goto out;
	}
	if (!total)
		goto out;
	c.d = q->dictionary;
	uint8_t *has_fn = mapping_functions(c.d);
	c.map_has_fn = has_fn;
	c.loc_id = calloc(c.d->n_location_table + 1, sizeof *c.loc_id);
	c.fn_id = calloc(c.d->n_function_table + 1, sizeof *c.fn_id);
	c.map_id = calloc(c.d->n_mapping_table + 1, sizeof *c.map_id);
	c.sym_id = calloc(c.d->n_string_table + 1, sizeof *c.sym_id);
	rl.cap = lim.max_labels;
	rl.v = calloc(rl.cap + 1, sizeof *rl.v);
	rl.names = calloc(rl.cap + 1, sizeof *rl.names);
	rl.vals = calloc(rl.cap + 1, sizeof *rl.vals);
	if (!has_fn || !c.loc_id || !c.fn_id || !c.map_id || !c.sym_id || !rl.v || !rl.names ||
	    !rl.vals) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t r = 0; r < q->n_resource_profiles && !rc; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
		    q->resource_profiles[r];
		KeyValue *const *rkv = rp->resource ? rp->resource->attributes : NULL;
		size_t nrkv = rp->resource ? rp->resource->n_attributes : 0;
		char where[96];
		for (size_t i = 0; i < rl.n; i++)
			free(rl.names[i]);
		rl.n = 0;
		service_of(&rl, rkv, nrkv);
		int lhit = 0;
		struct pd_err lerr = {0};
		if (rlabels_add(&rl, rkv, nrkv, &lhit, &lim, &lerr)) {
			snprintf(where, sizeof where, "resourceProfiles[%zu]", r);
			reject(b, count_profiles(q, r), where, lerr.msg);
			continue;
		}
		size_t nres = rl.n;
		for (size_t s = 0; s < rp->n_scope_profiles && !rc; s++) {
			const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
			    rp->scope_profiles[s];
			for (size_t i = nres; i < rl.n; i++)
				free(rl.names[i]);
			rl.n = nres;
			snprintf(where, sizeof where, "resourceProfiles[%zu].scopeProfiles[%zu]", r,
			         s);
			if (sp->scope && rlabels_add(&rl, sp->scope->attributes,
			                             sp->scope->n_attributes, &lhit, &lim, &lerr)) {
				reject(b, sp->n_profiles, where, lerr.msg);
				continue;
			}
			rc = convert_scope(&c, sp, where, &rl, &lim, now_ms, b, err);
		}
	}
done:
	free(has_fn);
	free(c.loc_id);
	free(c.fn_id);
	free(c.map_id);
	free(c.sym_id);
	rlabels_fini(&rl);
out:
	if (ma)
		pd_arena_destroy(ma);
	else
		protobuf_c_message_free_unpacked(m, NULL);
	if (rc) {
		int hit = b->limit_hit;
		pd_ingest_batch_fini(b);
		b->limit_hit = hit;
		b->format = json ? "otlp_json" : "otlp";
	}
	return rc;
}

/* ---- the response ------------------------------------------------------------ */

int pd_ingest_otlp_response(const struct pd_ingest_batch *b, int json, uint8_t **out,
                            size_t *out_len, struct pd_err *err)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse r =
	    OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess ps =
	    OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
	*out = NULL;
	*out_len = 0;
	/* a proto3 string must be UTF-8, and the reason may quote what the client
	 * sent cut anywhere: bytes outside printable ASCII become '?' */
	char msg[sizeof b->rejected_msg];
	size_t ml = strnlen(b->rejected_msg, sizeof msg - 1);
	for (size_t i = 0; i < ml; i++) {
		unsigned char c = (unsigned char)b->rejected_msg[i];
		msg[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	msg[ml] = 0;
	if (b->rejected) {
		ps.rejected_profiles = (int64_t)b->rejected;
		ps.error_message = msg;
		r.partial_success = &ps;
	}
	if (!json) {
		size_t n =
		    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__get_packed_size(
		        &r);
		*out = malloc(n ? n : 1);
		if (!*out)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		*out_len =
		    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__pack(
		        &r, *out);
		return 0;
	}
	/* {"partialSuccess":{"rejectedProfiles":"N","errorMessage":"..."}}, the
	 * message escaped; 6 bytes per byte at most */
	size_t cap = 96 + 6 * sizeof b->rejected_msg;
	char *s = malloc(cap);
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	size_t n = 0;
	if (!b->rejected) {
		n = (size_t)snprintf(s, cap, "{}");
	} else {
		n = (size_t)snprintf(s, cap,
		                     "{\"partialSuccess\":{\"rejectedProfiles\":\"%zu\","
		                     "\"errorMessage\":\"",
		                     b->rejected);
		for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
			if (*p == '"' || *p == '\\')
				n += (size_t)snprintf(s + n, cap - n, "\\%c", *p);
			else if (*p < 0x20)
				n += (size_t)snprintf(s + n, cap - n, "\\u%04x", *p);
			else
				s[n++] = (char)*p;
		}
		n += (size_t)snprintf(s + n, cap - n, "\"}}");
	}
	*out = (uint8_t *)s;
	*out_len = n;
	return 0;
}
