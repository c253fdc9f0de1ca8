/* pyro_name.c: the `name` parameter of /ingest, `app.cpu{env=staging,region=eu}`,
 * read as Pyroscope's labelset.Parse reads it. Hand-written: the grammar is
 * Pyroscope's own (no quoting, no escapes; a value ends at ',' or '}'), which no
 * label parser of Prometheus's syntax would take. */
#include <stdlib.h>
#include <string.h>

#include "pyro.h"

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.';
}

static int service_char(char c)
{
	return label_char(c) || c == '-' || c == '/';
}

/* Trims [*s, *e) in place. */
static void trim(char **s, char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

void pyro_name_fini(struct pyro_name *nm)
{
	if (!nm)
		return;
	free(nm->buf);
	free(nm->ls);
	memset(nm, 0, sizeof(*nm));
}

int pyro_name_parse(const char *s, struct pyro_name *out, struct pd_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return pd_err_set(err, PD_EINVAL,
		                  "name is required: the application name and its labels, e.g. "
		                  "myapp.cpu{env=staging}");
	size_t len = strlen(s);
	/* the copy holds the service name, and the app name after it */
	out->buf = malloc(2 * len + 2);
	size_t neq = 0;
	for (size_t i = 0; i < len; i++)
		neq += s[i] == '=';
	out->ls = calloc(neq ? neq : 1, sizeof(*out->ls));
	if (!out->buf || !out->ls)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	memcpy(out->buf, s, len + 1);
	char *b = out->buf;
	char *brace = strchr(b, '{');
	char *ns = b, *ne = brace ? brace : b + len;
	trim(&ns, &ne);
	if (ns == ne)
		return pd_err_set(err, PD_EINVAL,
		                  "name \"%.200s\": the service name before '{' is required", s);
	for (char *p = ns; p < ne; p++)
		if (!service_char(*p))
			return pd_err_set(
			    err, PD_EINVAL,
			    "name \"%.200s\": character '%c' (byte %zu) is not allowed "
			    "in a service name (letters, digits, _ . - /)",
			    s, *p, (size_t)(p - b));
	*ne = '\0';
	out->full = ns;
	/* app and type: split at the last dot, in the second half of buf */
	char *app = b + len + 1;
	size_t fl = (size_t)(ne - ns);
	memcpy(app, ns, fl + 1);
	char *dot = strrchr(app, '.');
	if (dot) {
		*dot = '\0';
		out->type = out->full + (dot - app) + 1;
	} else {
		out->type = "cpu";
	}
	out->app = app;
	if (!brace)
		return 0;
	/* labels: key=value pairs up to '}' */
	char *p = brace + 1, *end = b + len;
	for (;;) {
		char *ks = p;
		while (p < end && *p != '=' && *p != '}')
			p++;
		if (p == end)
			return pd_err_set(err, PD_EINVAL,
			                  "name \"%.200s\": the labels have no closing '}'", s);
		if (*p == '}') {
			char *ke = p;
			trim(&ks, &ke);
			if (ks != ke)
				return pd_err_set(
				    err, PD_EINVAL,
				    "name \"%.200s\": label \"%.*s\" (byte %zu) has no "
				    "'=' and value",
				    s, (int)(ke - ks), ks, (size_t)(ks - b));
			break; /* what follows '}' is ignored, as Pyroscope does */
		}
		char *ke = p++;
		trim(&ks, &ke);
		char *vs = p;
		while (p < end && *p != ',' && *p != '}')
			p++;
		if (p == end)
			return pd_err_set(err, PD_EINVAL,
			                  "name \"%.200s\": the labels have no closing '}'", s);
		char *ve = p;
		char stop = *p++;
		trim(&vs, &ve);
		if (ks == ke)
			return pd_err_set(err, PD_EINVAL,
			                  "name \"%.200s\": a label name is required before '=' "
			                  "(byte %zu)",
			                  s, (size_t)(ke - b));
		if (!(ke - ks == 8 && memcmp(ks, "__name__", 8) == 0))
			for (char *c = ks; c < ke; c++)
				if (!label_char(*c))
					return pd_err_set(
					    err, PD_EINVAL,
					    "name \"%.200s\": character '%c' (byte %zu) is not "
					    "allowed in label name \"%.*s\" (letters, digits, _ .)",
					    s, *c, (size_t)(c - b), (int)(ke - ks), ks);
		struct ingest_label l = {ks, (size_t)(ke - ks), vs, (size_t)(ve - vs)};
		size_t i;
		for (i = 0; i < out->n; i++)
			if (out->ls[i].name_len == l.name_len &&
			    memcmp(out->ls[i].name, l.name, l.name_len) == 0)
				break;
		out->ls[i] = l; /* a repeated name: the last value wins */
		if (i == out->n)
			out->n++;
		if (stop == '}')
			break;
	}
	return 0;
}
