/* params.c: request parameters as Prometheus's API reads them: from the URL's
 * query string and, for POST, from an application/x-www-form-urlencoded body;
 * the first value of a name wins, match[] may repeat. Parsers for times,
 * durations, numbers, selectors and start/end ranges answer 400 bad_data naming
 * the parameter when the value is wrong. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "profd/config.h"

const char *api_param(const struct api_req *r, const char *name)
{
	for (size_t i = 0; i < r->nparams; i++)
		if (strcmp(r->params[i].name, name) == 0)
			return r->params[i].value;
	return NULL;
}

int api_params(const struct api_req *r, const char *name, const char ***out, size_t *n)
{
	size_t k = 0;
	*out = calloc(r->nparams + 1, sizeof(char *));
	*n = 0;
	if (!*out)
		return PD_ENOMEM;
	for (size_t i = 0; i < r->nparams; i++)
		if (strcmp(r->params[i].name, name) == 0)
			(*out)[k++] = r->params[i].value;
	*n = k;
	return 0;
}

int api_param_add(struct api_req *r, const char *name, size_t nlen, const char *value, size_t vlen)
{
	if (r->nparams == r->cparams) {
		size_t nc = r->cparams ? r->cparams * 2 : 16;
		struct api_param *np = realloc(r->params, nc * sizeof(*np));
		if (!np)
			return PD_ENOMEM;
		r->params = np;
		r->cparams = nc;
	}
	char *n = strndup(name, nlen), *v = strndup(value ? value : "", value ? vlen : 0);
	if (!n || !v) {
		free(n);
		free(v);
		return PD_ENOMEM;
	}
	r->params[r->nparams].name = n;
	r->params[r->nparams].value = v;
	r->nparams++;
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes %XX and '+' in place; returns the new length. */
static size_t form_unescape(char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '+') {
			s[o++] = ' ';
		} else if (s[i] == '%' && i + 2 < len && hexval(s[i + 1]) >= 0 &&
		           hexval(s[i + 2]) >= 0) {
			s[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

int api_params_parse_form(struct api_req *r, const char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && s[j] != '&')
			j++;
		if (j > i) {
			/* all j - i bytes, even past a raw NUL (strndup would stop there) */
			char *pair = malloc(j - i + 1);
			if (!pair)
				return PD_ENOMEM;
			memcpy(pair, s + i, j - i);
			pair[j - i] = '\0';
			char *eq = memchr(pair, '=', j - i);
			size_t nlen = eq ? (size_t)(eq - pair) : j - i;
			size_t vlen = eq ? j - i - nlen - 1 : 0;
			nlen = form_unescape(pair, nlen);
			if (eq)
				vlen = form_unescape(eq + 1, vlen);
			/* a NUL would silently end the name or value: refuse it */
			int rc = strnlen(pair, nlen) < nlen || (eq && strnlen(eq + 1, vlen) < vlen)
			             ? PD_EINVAL
			             : api_param_add(r, pair, nlen, eq ? eq + 1 : "", eq ? vlen : 0);
			free(pair);
			if (rc)
				return rc;
		}
		i = j + 1;
	}
	return 0;
}

int api_time_param(const struct api_req *r, struct api_resp *w, const char *name, int64_t def,
                   int64_t *out)
{
	const char *v = api_param(r, name);
	struct pd_err err = {0};
	if (!v || !*v) {
		*out = def;
		return 0;
	}
	if (pd_time_parse(v, out, &err)) {
		api_bad_param(w, name, "%s", err.msg);
		return -1;
	}
	return 0;
}

int api_duration_param(const struct api_req *r, struct api_resp *w, const char *name, int64_t def,
                       int64_t *out)
{
	const char *v = api_param(r, name);
	struct pd_err err = {0};
	if (!v || !*v) {
		*out = def;
		return 0;
	}
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (end != v && !*end && !isspace((unsigned char)*v)) {
		if (!isfinite(d) || d * 1000 > 9.2e18 || d * 1000 < -9.2e18) {
			api_bad_param(w, name,
			              "cannot parse \"%s\" to a valid duration. It overflows int64",
			              v);
			return -1;
		}
		*out = (int64_t)llround(d * 1000);
	} else if (pd_config_parse_duration(v, out, &err)) {
		api_bad_param(w, name, "cannot parse \"%s\" to a valid duration", v);
		return -1;
	}
	if (*out < 0) {
		api_bad_param(w, name, "the duration must not be negative");
		return -1;
	}
	return 0;
}

int api_uint_param(const struct api_req *r, struct api_resp *w, const char *name, uint64_t def,
                   uint64_t *out)
{
	const char *v = api_param(r, name);
	if (!v || !*v) {
		*out = def;
		return 0;
	}
	uint64_t x = 0;
	for (const char *p = v; *p; p++) {
		if (!isdigit((unsigned char)*p) || x > (UINT64_MAX - 9) / 10) {
			api_bad_param(w, name, "cannot parse \"%s\" to a non-negative integer", v);
			return -1;
		}
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*out = x;
	return 0;
}

int api_int_param(const struct api_req *r, struct api_resp *w, const char *name, int64_t def,
                  int64_t *out)
{
	const char *v = api_param(r, name);
	if (!v || !*v) {
		*out = def;
		return 0;
	}
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (*end || errno || isspace((unsigned char)*v)) {
		api_bad_param(w, name, "cannot parse \"%s\" to an integer", v);
		return -1;
	}
	*out = x;
	return 0;
}

int api_double_param(const struct api_req *r, struct api_resp *w, const char *name, double def,
                     double lo, double hi, double *out)
{
	const char *v = api_param(r, name);
	if (!v || !*v) {
		*out = def;
		return 0;
	}
	char *end;
	double d = strtod(v, &end);
	if (*end || isspace((unsigned char)*v) || !(d >= lo && d <= hi)) {
		api_bad_param(w, name, "\"%s\" is not a number in [%g, %g]", v, lo, hi);
		return -1;
	}
	*out = d;
	return 0;
}

int api_sel_parse(struct api_resp *w, const char *name, const char *text, struct api_sel *s)
{
	struct pd_err err = {0};
	memset(s, 0, sizeof(*s));
	if (!text || !*text) {
		api_bad_param(w, name, "a series selector is required, e.g. heap{job=\"api\"}");
		return -1;
	}
	if (pd_labels_selector_parse(&s->sel, text, strlen(text), NULL, &err)) {
		api_bad_param(w, name, "%s", err.msg);
		return -1;
	}
	int rc = pd_storage_matchers_from_selector(s->sel, &s->m, &s->nm, &err);
	if (rc) {
		api_internal(w, "building matchers failed", rc, &err);
		api_sel_fini(s);
		return -1;
	}
	for (size_t i = 0; i < s->nm; i++)
		if (api_tenant_hidden(s->m[i].name)) {
			api_bad_param(w, name, "label name \"%s\" is reserved", s->m[i].name);
			api_sel_fini(s);
			return -1;
		}
	return 0;
}

void api_sel_fini(struct api_sel *s)
{
	free(s->m);
	pd_labels_selector_destroy(s->sel);
	memset(s, 0, sizeof(*s));
}

int api_range_params(const struct api_req *r, struct api_resp *w, const char *prefix,
                     int64_t *start, int64_t *end)
{
	char ns[64], ne[64];
	snprintf(ns, sizeof(ns), "%sstart", prefix);
	snprintf(ne, sizeof(ne), "%send", prefix);
	if (api_time_param(r, w, ne, r->now_ms, end))
		return -1;
	int64_t def = *end > INT64_MIN + 3600 * 1000 ? *end - 3600 * 1000 : INT64_MIN;
	if (api_time_param(r, w, ns, def, start))
		return -1;
	if (*end < *start) {
		api_bad_param(w, ne, "end timestamp must not be before start time");
		return -1;
	}
	int64_t max = r->srv->o.max_range_ms;
	uint64_t span = (uint64_t)*end - (uint64_t)*start;
	if (span > (uint64_t)max) {
		char lim[64], got[64];
		pd_config_format_duration(max, lim, sizeof(lim));
		pd_config_format_duration(span > INT64_MAX ? INT64_MAX : (int64_t)span, got,
		                          sizeof(got));
		api_bad_param(w, ne,
		              "the range from start to end is %s, longer than the limit of %s; "
		              "narrow it",
		              got, lim);
		return -1;
	}
	return 0;
}
