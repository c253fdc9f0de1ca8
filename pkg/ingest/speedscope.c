/* speedscope.c: speedscope JSON files (https://www.speedscope.app/file-format-schema.json)
 * sent to /ingest?format=speedscope, each of their profiles, evented or sampled,
 * turned into a pprof profile as Pyroscope's speedscope converter does: profiles
 * with the same name, type, unit and start value merged; a `profile_name` label;
 * with several profiles the name's type becomes the unit (app.seconds: wall,
 * app.bytes: memory). Times become nanoseconds; Pyroscope's own rounding (weights
 * truncated before its x100 precision factor, and time before an opening event not
 * scaled) is not kept: values are weight x nanoseconds per unit, rounded.
 * Parsed with json-c, its nesting bounded by the limits. */
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pyro.h"

#define SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct sprof {
	json_object *first; /* the first of the merged profiles */
	json_object **parts;
	size_t nparts;
	const char *name, *type, *unit;
	double start;
	size_t order;
};

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static double jnum(json_object *o, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	return json_object_get_double(v);
}

static json_object *jarr(json_object *o, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

static int cmp_start(const void *a, const void *b)
{
	const struct sprof *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Nanoseconds per unit, 0 for bytes; -1 for an unknown unit. */
static double unit_ns(const char *u)
{
	if (strcmp(u, "nanoseconds") == 0)
		return 1;
	if (strcmp(u, "microseconds") == 0)
		return 1e3;
	if (strcmp(u, "milliseconds") == 0)
		return 1e6;
	if (strcmp(u, "seconds") == 0)
		return 1e9;
	if (strcmp(u, "none") == 0)
		return 1e7; /* a sample at 100 Hz, as Pyroscope counts it */
	if (strcmp(u, "bytes") == 0)
		return 0;
	return -1;
}

struct conv {
	struct pyro_req *r;
	struct ingest_pb *pb;
	json_object *frames;
	size_t nframes;
	uint64_t *floc; /* the location of each frame, 0 until made */
	uint64_t *stack;
	size_t *fidx; /* the frame index of each open frame */
	size_t depth;
	double mul; /* value = round(weight * mul) */
	size_t pi;  /* the profile's index, for messages */
};

static int frame_loc(struct conv *c, double f, uint64_t *loc, struct pd_err *err)
{
	if (!(f >= 0 && f < (double)c->nframes))
		return pd_err_set(err, PD_EINVAL,
		                  "speedscope profile %zu: frame %g is not one of the %zu frames",
		                  c->pi, f, c->nframes);
	size_t i = (size_t)f;
	if (!c->floc[i]) {
		json_object *fr = json_object_array_get_idx(c->frames, i);
		const char *name = fr ? jstr(fr, "name") : NULL;
		if (!name)
			name = "";
		uint64_t fn = ingest_pb_function(c->pb, name, strlen(name), NULL, 0, NULL, 0, 0);
		c->floc[i] = fn ? ingest_pb_frame(c->pb, fn, 0) : 0;
		if (!c->floc[i])
			return 1;
	}
	*loc = c->floc[i];
	return 0;
}

/* Adds weight w to the stack c->stack[0..depth) (root first). */
static int add(struct conv *c, double w, struct pd_err *err)
{
	double v = round(w * c->mul);
	if (c->depth == 0 || v == 0)
		return 0;
	if (!(v > 0 && v < 9.2e18))
		return pd_err_set(err, PD_EINVAL,
		                  "speedscope profile %zu: weight %g is out of range", c->pi, w);
	uint64_t *leaf = c->stack + c->r->lim.max_stack_depth; /* leaf-first copy */
	for (size_t i = 0; i < c->depth; i++)
		leaf[i] = c->stack[c->depth - 1 - i];
	int64_t iv = (int64_t)v;
	return ingest_pb_sample(c->pb, leaf, c->depth, &iv, 1, NULL, 0, 1) ? 1 : 0;
}

static int push(struct conv *c, double f, struct pd_err *err)
{
	if (c->depth == c->r->lim.max_stack_depth) {
		c->r->out->limit_hit = PD_INGEST_LIMIT_STACK_DEPTH;
		return pd_err_set(err, PD_ETOOBIG,
		                  "speedscope profile %zu: a stack is deeper than %zu frames (%s)",
		                  c->pi, c->r->lim.max_stack_depth,
		                  pd_ingest_limit_flag(PD_INGEST_LIMIT_STACK_DEPTH));
	}
	int rc = frame_loc(c, f, &c->stack[c->depth], err);
	if (!rc)
		c->fidx[c->depth++] = (size_t)f;
	return rc;
}

static int evented(struct conv *c, json_object *p, double start, struct pd_err *err)
{
	json_object *evs = jarr(p, "events");
	size_t n = evs ? json_object_array_length(evs) : 0;
	double last = start;
	for (size_t i = 0; i < n; i++) {
		json_object *ev = json_object_array_get_idx(evs, i);
		const char *t = jstr(ev, "type");
		double at = jnum(ev, "at"), f = jnum(ev, "frame");
		int rc;
		if (at < last)
			return pd_err_set(
			    err, PD_EINVAL,
			    "speedscope profile %zu: event %zu at %g is before the one "
			    "before it (%g): events must be in order",
			    c->pi, i, at, last);
		if (t && strcmp(t, "O") == 0) {
			if ((rc = add(c, at - last, err)) || (rc = push(c, f, err)))
				return rc;
		} else if (t && strcmp(t, "C") == 0) {
			uint64_t loc = 0;
			if (c->depth == 0)
				return pd_err_set(
				    err, PD_EINVAL,
				    "speedscope profile %zu: event %zu closes frame %g "
				    "with no frame open",
				    c->pi, i, f);
			if ((rc = frame_loc(c, f, &loc, err)))
				return rc;
			if ((size_t)f != c->fidx[c->depth - 1])
				return pd_err_set(
				    err, PD_EINVAL,
				    "speedscope profile %zu: event %zu closes frame %g, "
				    "which is not the one open",
				    c->pi, i, f);
			if ((rc = add(c, at - last, err)))
				return rc;
			c->depth--;
		} else {
			return pd_err_set(
			    err, PD_EINVAL,
			    "speedscope profile %zu: event %zu has type \"%.16s\", not "
			    "O or C",
			    c->pi, i, t ? t : "");
		}
		last = at;
	}
	c->depth = 0;
	return 0;
}

static int sampled(struct conv *c, json_object *p, struct pd_err *err)
{
	json_object *ss = jarr(p, "samples"), *ws = jarr(p, "weights");
	size_t ns = ss ? json_object_array_length(ss) : 0;
	size_t nw = ws ? json_object_array_length(ws) : 0;
	if (ns != nw)
		return pd_err_set(err, PD_EINVAL,
		                  "speedscope profile %zu: %zu samples but %zu weights", c->pi, ns,
		                  nw);
	for (size_t i = 0; i < ns; i++) {
		double w = json_object_get_double(json_object_array_get_idx(ws, i));
		if (w < 0)
			return pd_err_set(
			    err, PD_EINVAL,
			    "speedscope profile %zu: sample %zu has a negative weight", c->pi, i);
		json_object *st = json_object_array_get_idx(ss, i);
		size_t d =
		    json_object_is_type(st, json_type_array) ? json_object_array_length(st) : 0;
		c->depth = 0;
		int rc;
		for (size_t j = 0; j < d; j++)
			if ((rc = push(c, json_object_get_double(json_object_array_get_idx(st, j)),
			               err)))
				return rc;
		if ((rc = add(c, w, err)))
			return rc;
	}
	c->depth = 0;
	return 0;
}

static int convert_one(struct pyro_req *r, struct sprof *sp, size_t pi, int multi,
                       json_object *frames, struct pd_err *err)
{
	double ns = unit_ns(sp->unit);
	if (ns < 0)
		return pd_err_set(err, PD_EINVAL,
		                  "speedscope profile %zu: unknown unit \"%.32s\" (nanoseconds, "
		                  "microseconds, milliseconds, seconds, none, bytes)",
		                  pi, sp->unit);
	const char *tname = multi ? sp->unit : r->name.type;
	const char *service = multi ? r->name.full : r->name.app;
	const struct pyro_type *t = pyro_type_find(tname);
	if (!t)
		return pd_err_set(err, PD_EINVAL,
		                  "speedscope profile %zu: unknown profile type \"%.64s\" (%s; one "
		                  "of %s)",
		                  pi, tname,
		                  multi ? "a file of several profiles is named by their unit"
		                        : "the name's part after its last dot",
		                  pyro_type_list());
	/* the sample rate Pyroscope gives the unit unless the request chose one */
	uint32_t rate = r->sample_rate;
	double mul;
	int64_t scale;
	int dflt = r->sample_rate == 100;
	if (dflt)
		rate = ns == 0 ? 0 : 100; /* any rate but 0: the period is set below */
	struct ingest_pb *pb = pyro_builder(r, t, rate, &scale);
	if (!pb)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (t->timed && rate && dflt) {
		mul = ns;
		ingest_pb_period(pb, strcmp(t->metric, "wall") == 0 ? "wall" : "cpu", "nanoseconds",
		                 ns >= 100 ? (int64_t)(ns / 100) : 1);
	} else {
		mul = (ns == 0 ? 1 : 100) * (double)scale; /* Pyroscope's precision x100 */
	}
	struct conv c = {.r = r, .pb = pb, .frames = frames, .mul = mul, .pi = pi};
	c.nframes = frames ? json_object_array_length(frames) : 0;
	c.floc = calloc(c.nframes ? c.nframes : 1, sizeof(*c.floc));
	c.stack = calloc(2 * r->lim.max_stack_depth, sizeof(*c.stack));
	c.fidx = calloc(r->lim.max_stack_depth, sizeof(*c.fidx));
	struct pd_labels *labels = NULL;
	int rc = 0;
	if (!c.floc || !c.stack || !c.fidx) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < sp->nparts && !rc; k++) {
		json_object *p = sp->parts[k];
		if (strcmp(sp->type, "evented") == 0)
			rc = evented(&c, p, sp->start, err);
		else if (strcmp(sp->type, "sampled") == 0)
			rc = sampled(&c, p, err);
		else
			rc = pd_err_set(err, PD_EINVAL,
			                "speedscope profile %zu: type \"%.32s\" is not evented or "
			                "sampled",
			                pi, sp->type);
	}
	if (rc == 1) {
		int limit = 0;
		rc = ingest_pb_err(pb, err, &limit);
		if (rc == PD_ETOOBIG)
			r->out->limit_hit = limit;
		pd_err_prefix(err, "speedscope profile %zu", pi);
	}
	if (rc)
		goto out;
	struct ingest_label pn = {"profile_name", 12, sp->name, strlen(sp->name)};
	if ((rc = pyro_series(r, t->name, service, &pn, 1, &labels, err)))
		goto out;
	rc = pyro_add_built(r, pb, labels, err);
out:
	free(c.floc);
	free(c.stack);
	free(c.fidx);
	ingest_pb_destroy(pb);
	return rc;
}

int pyro_speedscope(struct pyro_req *r, const uint8_t *body, size_t len, struct pd_err *err)
{
	if (len > INT_MAX)
		return pd_err_set(err, PD_ETOOBIG, "the speedscope body is larger than 2 GiB");
	json_tokener *tok = json_tokener_new_ex((int)r->lim.max_json_depth);
	if (!tok)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	json_object *root = json_tokener_parse_ex(tok, (const char *)body, (int)len);
	enum json_tokener_error je = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	struct sprof *ps = NULL;
	size_t nps = 0;
	json_object **parts = NULL;
	int rc = 0;
	if (je == json_tokener_continue || (!root && je == json_tokener_success)) {
		rc = pd_err_set(err, PD_EINVAL, "the speedscope body ends before its JSON does");
		goto out;
	}
	if (je == json_tokener_error_depth) {
		r->out->limit_hit = PD_INGEST_LIMIT_JSON_DEPTH;
		rc = pd_err_set(
		    err, PD_ETOOBIG, "the speedscope JSON nests deeper than %u at byte %zu (%s)",
		    r->lim.max_json_depth, end, pd_ingest_limit_flag(PD_INGEST_LIMIT_JSON_DEPTH));
		goto out;
	}
	if (je != json_tokener_success) {
		rc = pd_err_set(err, PD_EINVAL, "the speedscope body is not JSON: %s at byte %zu",
		                json_tokener_error_desc(je), end);
		goto out;
	}
	for (size_t i = end; i < len; i++)
		if (!strchr(" \t\r\n", body[i])) {
			rc = pd_err_set(err, PD_EINVAL,
			                "the speedscope body has more after its JSON, at byte %zu",
			                i);
			goto out;
		}
	if (!json_object_is_type(root, json_type_object)) {
		rc = pd_err_set(err, PD_EINVAL, "the speedscope body is not a JSON object");
		goto out;
	}
	const char *schema = jstr(root, "$schema");
	if (!schema || strcmp(schema, SCHEMA) != 0) {
		rc = pd_err_set(err, PD_EINVAL, "unknown speedscope schema \"%.128s\" (not %s)",
		                schema ? schema : "", SCHEMA);
		goto out;
	}
	json_object *shared = NULL, *frames = NULL;
	if (json_object_object_get_ex(root, "shared", &shared))
		frames = jarr(shared, "frames");
	json_object *profs = jarr(root, "profiles");
	size_t np = profs ? json_object_array_length(profs) : 0;
	if (np > r->lim.max_profiles) {
		r->out->limit_hit = PD_INGEST_LIMIT_PROFILES;
		rc = pd_err_set(
		    err, PD_ETOOBIG, "the speedscope file has %zu profiles, more than %zu (%s)", np,
		    r->lim.max_profiles, pd_ingest_limit_flag(PD_INGEST_LIMIT_PROFILES));
		goto out;
	}
	ps = calloc(np ? np : 1, sizeof(*ps));
	parts = calloc(np ? np : 1, sizeof(*parts));
	if (!ps || !parts) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	/* merge profiles of the same name, type, unit and start value, as Pyroscope
	 * does; parts[] holds each merged group's members contiguously */
	size_t *group = calloc(np ? np : 1, sizeof(*group));
	if (!group) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < np; i++) {
		json_object *p = json_object_array_get_idx(profs, i);
		if (!json_object_is_type(p, json_type_object)) {
			free(group);
			rc = pd_err_set(err, PD_EINVAL, "speedscope profile %zu is not an object",
			                i);
			goto out;
		}
		const char *name = jstr(p, "name"), *type = jstr(p, "type"),
		           *unit = jstr(p, "unit");
		name = name ? name : "";
		type = type ? type : "";
		unit = unit ? unit : "";
		double start = jnum(p, "startValue");
		size_t g;
		for (g = 0; g < nps; g++)
			if (strcmp(ps[g].name, name) == 0 && strcmp(ps[g].type, type) == 0 &&
			    strcmp(ps[g].unit, unit) == 0 && ps[g].start == start)
				break;
		if (g == nps)
			ps[nps++] = (struct sprof){.first = p,
			                           .name = name,
			                           .type = type,
			                           .unit = unit,
			                           .start = start,
			                           .order = g};
		ps[g].nparts++;
		group[i] = g;
	}
	size_t off = 0;
	for (size_t g = 0; g < nps; g++) {
		ps[g].parts = parts + off;
		size_t k = 0;
		for (size_t i = 0; i < np; i++)
			if (group[i] == g)
				ps[g].parts[k++] = json_object_array_get_idx(profs, i);
		off += k;
	}
	free(group);
	qsort(ps, nps, sizeof(*ps), cmp_start);
	for (size_t g = 0; g < nps && !rc; g++)
		rc = convert_one(r, &ps[g], g, nps > 1, frames, err);
out:
	free(ps);
	free(parts);
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}
