/* prefix.c: --web.external-url and --web.route-prefix, read as Prometheus reads
 * them: the external URL defaults to http://<hostname>:<port>/ of the listen
 * address and loses its trailing slashes; the route prefix defaults to the
 * external URL's path and is normalised to one leading slash and no trailing one
 * ("/" when empty). profd refuses a few values Prometheus would take but could
 * never serve or show safely: schemes other than http and https, user
 * information (it would show in /api/v1/status/flags), a query or fragment,
 * and paths with "." or ".." segments or characters that need escaping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api_int.h"

/* 1 when c may appear in a path profd accepts as a prefix (RFC 3986's pchar
 * without '%', '&' and '\'' so that it needs no escaping in a URL or HTML). */
static int path_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("-._~!$()*+,;=:@/", c));
}

/* Checks a path (prefix or the external URL's); what names the flag. */
static int check_path(const char *p, size_t n, const char *what, const char *value,
                      struct pd_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (!path_char(p[i]))
			return pd_err_set(err, PD_EINVAL,
			                  "%s: %s: the path holds '%c'; use letters, digits and "
			                  "-._~!$()*+,;=:@/ only",
			                  what, value, p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '?');
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '/')
			continue;
		size_t k = i + 1;
		while (k < n && p[k] != '/')
			k++;
		size_t seg = k - i - 1;
		if ((seg == 1 && p[i + 1] == '.') ||
		    (seg == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
			return pd_err_set(
			    err, PD_EINVAL,
			    "%s: %s: the path holds a \".\" or \"..\" segment, which no "
			    "request can reach",
			    what, value);
	}
	return 0;
}

/* The port of a listen address ("host:port", ":port", "[v6]:port"). */
static const char *listen_port(const char *addr)
{
	const char *colon = strrchr(addr, ':');
	if (!colon || !colon[1] || strchr(colon + 1, ']'))
		return NULL;
	return colon + 1;
}

int pd_api_external_url(const char *value, const char *listen_address, char **out,
                        struct pd_err *err)
{
	static const char flag[] = "--web.external-url";
	char def[512];
	*out = NULL;
	if (!value || !*value) {
		char host[256];
		const char *port =
		    listen_port(listen_address ? listen_address : PD_API_DEFAULT_LISTEN_ADDRESS);
		if (gethostname(host, sizeof(host)) != 0)
			return pd_err_set(err, PD_EIO,
			                  "%s: no hostname to build the default from; set the flag",
			                  flag);
		host[sizeof(host) - 1] = '\0';
		if (!port)
			return pd_err_set(
			    err, PD_EINVAL,
			    "%s: no port in the listen address %s to build the default "
			    "from; set the flag",
			    flag, listen_address);
		snprintf(def, sizeof(def), "http://%s:%s/", host, port);
		value = def;
	}
	size_t vl = strlen(value);
	if (value[0] == '"' || value[0] == '\'' || value[vl - 1] == '"' || value[vl - 1] == '\'')
		return pd_err_set(
		    err, PD_EINVAL,
		    "%s: parse external URL %s: URL must not begin or end with quotes", flag,
		    value);
	const char *sep = strstr(value, "://");
	if (!sep || sep == value)
		return pd_err_set(err, PD_EINVAL,
		                  "%s: parse external URL %s: not an absolute URL; write it as "
		                  "http://host[:port][/path] or https://…",
		                  flag, value);
	size_t sl = (size_t)(sep - value);
	if (!((sl == 4 && strncasecmp(value, "http", 4) == 0) ||
	      (sl == 5 && strncasecmp(value, "https", 5) == 0)))
		return pd_err_set(
		    err, PD_EINVAL,
		    "%s: parse external URL %s: scheme \"%.*s\" is not supported; use "
		    "http or https",
		    flag, value, (int)sl, value);
	const char *host = sep + 3;
	size_t hl = strcspn(host, "/?#");
	const char *path = host + hl;
	size_t pl = strcspn(path, "?#");
	if (hl == 0)
		return pd_err_set(err, PD_EINVAL, "%s: parse external URL %s: no host", flag,
		                  value);
	if (memchr(host, '@', hl))
		return pd_err_set(err, PD_EINVAL,
		                  "%s: parse external URL: user information (user:password@) is "
		                  "not allowed: it would be shown in links and in "
		                  "/api/v1/status/flags (the value is not repeated here, as it "
		                  "holds a secret)",
		                  flag);
	for (size_t i = 0; i < hl; i++)
		if (!path_char(host[i]) && host[i] != '[' && host[i] != ']')
			return pd_err_set(err, PD_EINVAL,
			                  "%s: parse external URL %s: the host holds '%c'", flag,
			                  value, host[i] >= 0x20 && host[i] < 0x7f ? host[i] : '?');
	if (path[pl])
		return pd_err_set(err, PD_EINVAL,
		                  "%s: parse external URL %s: a query (?) or fragment (#) is not "
		                  "allowed",
		                  flag, value);
	int rc = check_path(path, pl, flag, value, err);
	if (rc)
		return rc;
	/* as Prometheus: the path without its trailing slashes */
	while (pl && path[pl - 1] == '/')
		pl--;
	size_t n = (size_t)(path - value) + pl;
	char *u = malloc(n + 1);
	if (!u)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	memcpy(u, value, n);
	u[n] = '\0';
	/* scheme and host are case-insensitive: lower-case the scheme only, as url.Parse does */
	for (size_t i = 0; i < sl; i++)
		u[i] = (char)(u[i] | 0x20);
	*out = u;
	return 0;
}

int pd_api_route_prefix(const char *value, const char *external_url, char **out, struct pd_err *err)
{
	const char *what = "--web.route-prefix";
	const char *p = value;
	size_t n = p ? strlen(p) : 0;
	*out = NULL;
	if (!p || !*p) {
		/* the external URL's path */
		what = "--web.external-url";
		p = "";
		n = 0;
		const char *sep = external_url ? strstr(external_url, "://") : NULL;
		if (sep) {
			p = sep + 3 + strcspn(sep + 3, "/");
			n = strcspn(p, "?#");
		}
		value = external_url ? external_url : "";
	}
	/* "/" + the value without its leading and trailing slashes */
	while (n && *p == '/')
		p++, n--;
	while (n && p[n - 1] == '/')
		n--;
	char *s = malloc(n + 2);
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	s[0] = '/';
	memcpy(s + 1, p, n);
	s[n + 1] = '\0';
	int rc = check_path(s, n + 1, what, value, err);
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}
