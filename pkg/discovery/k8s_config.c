/* k8s_config.c: checking a kubernetes_sd configuration as Prometheus's
 * kubernetes.SDConfig.UnmarshalYAML does (with its messages), including the syntax
 * of the label and field selectors that are passed on to the API server, and the
 * role names. */
#include "k8s_watch_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *const role_names[] = {"node",      "service",       "pod",
                                         "endpoints", "endpointslice", "ingress"};

int pd_discovery_k8s_role_parse(const char *s)
{
	if (!s)
		return -1;
	for (size_t i = 0; i < sizeof(role_names) / sizeof(role_names[0]); i++)
		if (!strcmp(s, role_names[i]))
			return (int)i;
	return -1;
}

const char *pd_k8s_role_name(enum pd_discovery_k8s_role r)
{
	return (unsigned)r < sizeof(role_names) / sizeof(role_names[0]) ? role_names[r] : "?";
}

/* 1 when c sets anything that differs from prometheus/common's default client
 * (follow_redirects on, nothing else). */
int pd_k8s_custom_client(const struct pd_http_client_config *h)
{
	if (!h)
		return 0;
	return h->basic_auth_username || h->basic_auth_password || h->basic_auth_password_file ||
	       h->authorization_type || h->authorization_credentials ||
	       h->authorization_credentials_file || h->tls_ca_file || h->tls_cert_file ||
	       h->tls_key_file || h->tls_server_name || h->tls_insecure_skip_verify ||
	       h->proxy_url || !h->follow_redirects;
}

/* ---- selector syntax (k8s.io/apimachinery labels.Parse, fields.ParseSelector) -- */

static int name_char(int c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.';
}

/* A label value: empty, or at most 63 of [A-Za-z0-9-_.] starting and ending
 * alphanumeric. */
static int valid_value(const char *s, size_t n)
{
	if (n == 0)
		return 1;
	if (n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!name_char((unsigned char)s[i]))
			return 0;
	return 1;
}

/* A label key: [prefix/]name, the prefix a DNS subdomain of at most 253 bytes. */
static int valid_key(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);
	if (slash) {
		size_t pl = (size_t)(slash - s);
		if (pl == 0 || pl > 253)
			return 0;
		for (size_t i = 0; i < pl; i++) {
			int c = (unsigned char)s[i];
			if (!(islower(c) || isdigit(c) || c == '-' || c == '.'))
				return 0;
		}
		if (!isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[pl - 1]))
			return 0;
		s = slash + 1;
		n -= pl + 1;
	}
	return n > 0 && valid_value(s, n);
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static int label_err(struct pd_err *err, const char *sel, const char *what)
{
	return pd_err_set(err, PD_EINVAL, "unable to parse label selector \"%s\": %s", sel, what);
}

int pd_k8s_label_selector_check(const char *sel, struct pd_err *err)
{
	const char *p = skip_ws(sel);
	if (!*p)
		return 0;
	for (;;) {
		const char *k, *ke;
		int neg = 0;
		p = skip_ws(p);
		if (*p == '!') {
			neg = 1;
			p = skip_ws(p + 1);
		}
		k = p;
		while (*p && (name_char((unsigned char)*p) || *p == '/'))
			p++;
		ke = p;
		if (!valid_key(k, (size_t)(ke - k)))
			return label_err(err, sel, "invalid label key");
		p = skip_ws(p);
		if (neg) {
			/* only existence may be negated */
		} else if (p[0] == '=' || (p[0] == '!' && p[1] == '=')) {
			p += p[0] == '!' ? 2 : (p[1] == '=' ? 2 : 1);
			p = skip_ws(p);
			const char *v = p;
			while (*p && name_char((unsigned char)*p))
				p++;
			if (!valid_value(v, (size_t)(p - v)))
				return label_err(err, sel, "invalid label value");
		} else if (*p == '<' || *p == '>') {
			p = skip_ws(p + 1);
			const char *v = p;
			if (*p == '-')
				p++;
			while (isdigit((unsigned char)*p))
				p++;
			if (p == v || (p == v + 1 && *v == '-'))
				return label_err(err, sel,
				                 "for 'Gt', 'Lt' operators, the value "
				                 "must be an integer");
		} else if (!strncmp(p, "in", 2) || !strncmp(p, "notin", 5)) {
			p += p[0] == 'i' ? 2 : 5;
			p = skip_ws(p);
			if (*p != '(')
				return label_err(err, sel, "expected '(' after in / notin");
			p++;
			for (;;) {
				p = skip_ws(p);
				const char *v = p;
				while (*p && name_char((unsigned char)*p))
					p++;
				if (!valid_value(v, (size_t)(p - v)))
					return label_err(err, sel, "invalid label value");
				p = skip_ws(p);
				if (*p == ',') {
					p++;
					continue;
				}
				if (*p == ')') {
					p++;
					break;
				}
				return label_err(err, sel, "expected ',' or ')' in a value set");
			}
		}
		p = skip_ws(p);
		if (!*p)
			return 0;
		if (*p != ',')
			return label_err(err, sel, "expected ',' between requirements");
		p++;
	}
}

int pd_k8s_field_selector_check(const char *sel, struct pd_err *err)
{
	const char *p = sel;
	if (!*skip_ws(p))
		return 0;
	for (;;) {
		const char *start = p;
		int op = 0;
		/* one term up to an unescaped ',' */
		for (; *p && *p != ','; p++) {
			if (*p == '\\') {
				if (!p[1] || !strchr("\\,=", p[1]))
					return pd_err_set(
					    err, PD_EINVAL,
					    "invalid field selector \"%s\": invalid escape "
					    "sequence",
					    sel);
				p++;
				continue;
			}
			if (!op && (*p == '=' || (*p == '!' && p[1] == '='))) {
				if (p == start)
					return pd_err_set(
					    err, PD_EINVAL,
					    "invalid field selector \"%s\": empty field name", sel);
				op = 1;
				if (*p == '!' || p[1] == '=')
					p++;
			}
		}
		if (!op)
			return pd_err_set(
			    err, PD_EINVAL,
			    "invalid field selector \"%s\": invalid selector: '%.*s'; can't "
			    "understand '%.*s'",
			    sel, (int)(p - start), start, (int)(p - start), start);
		if (!*p)
			return 0;
		p++;
	}
}

/* ---- the whole configuration --------------------------------------------------- */

int pd_discovery_kubernetes_validate(const struct pd_discovery_kubernetes_config *c,
                                     struct pd_err *err)
{
	/* the selector roles each role accepts, as Prometheus's allowedSelectors */
	static const char *const allowed[] = {
	    [PD_DISCOVERY_K8S_NODE] = "node",
	    [PD_DISCOVERY_K8S_SERVICE] = "service",
	    [PD_DISCOVERY_K8S_POD] = "pod, node",
	    [PD_DISCOVERY_K8S_ENDPOINTS] = "pod, service, endpoints",
	    [PD_DISCOVERY_K8S_ENDPOINTSLICE] = "pod, service, endpointslice",
	    [PD_DISCOVERY_K8S_INGRESS] = "ingress",
	};
	int role, rc;

	if (!c->role || !*c->role)
		return pd_err_set(err, PD_EINVAL,
		                  "role missing (one of: pod, service, endpoints, endpointslice, "
		                  "node, ingress)");
	if ((role = pd_discovery_k8s_role_parse(c->role)) < 0)
		return pd_err_set(err, PD_EINVAL, "unknown Kubernetes SD role \"%s\"", c->role);
	if (c->api_server && *c->api_server && c->kubeconfig_file && *c->kubeconfig_file)
		return pd_err_set(err, PD_EINVAL,
		                  "cannot use 'kubeconfig_file' and 'api_server' simultaneously");
	if (c->kubeconfig_file && *c->kubeconfig_file && pd_k8s_custom_client(c->client))
		return pd_err_set(err, PD_EINVAL,
		                  "cannot use a custom HTTP client configuration together with "
		                  "'kubeconfig_file'");
	if (!(c->api_server && *c->api_server) && pd_k8s_custom_client(c->client))
		return pd_err_set(err, PD_EINVAL,
		                  "to use custom HTTP client configuration please provide the "
		                  "'api_server' URL explicitly");
	if (c->api_server && *c->api_server && c->own_namespace)
		return pd_err_set(err, PD_EINVAL,
		                  "cannot use 'api_server' and 'namespaces.own_namespace' "
		                  "simultaneously");
	if (c->kubeconfig_file && *c->kubeconfig_file && c->own_namespace)
		return pd_err_set(err, PD_EINVAL,
		                  "cannot use 'kubeconfig_file' and 'namespaces.own_namespace' "
		                  "simultaneously");
	if (c->api_server && *c->api_server && strncmp(c->api_server, "http://", 7) &&
	    strncmp(c->api_server, "https://", 8))
		return pd_err_set(err, PD_EINVAL,
		                  "api_server %s: the URL must start with http:// or https://",
		                  c->api_server);
	if (c->client && c->client->tls_server_name && *c->client->tls_server_name)
		return pd_err_set(
		    err, PD_EINVAL,
		    "tls_config.server_name is not supported for kubernetes_sd_configs");
	for (size_t i = 0; i < c->nnamespaces; i++)
		if (!c->namespaces[i] || !*c->namespaces[i])
			return pd_err_set(err, PD_EINVAL, "namespaces.names[%zu] is empty", i);
	for (size_t i = 0; i < c->nselectors; i++) {
		const struct pd_discovery_k8s_selector *s = &c->selectors[i];
		int sr = pd_discovery_k8s_role_parse(s->role);
		if (sr < 0)
			return pd_err_set(err, PD_EINVAL, "unknown Kubernetes SD role \"%s\"",
			                  s->role ? s->role : "");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->selectors[j].role, s->role))
				return pd_err_set(err, PD_EINVAL, "duplicated selector role: %s",
				                  s->role);
		/* "pod, service, endpoints" holds whole words only */
		const char *a = allowed[role];
		int ok = 0;
		for (const char *w = a; *w && !ok;) {
			size_t n = strcspn(w, ",");
			ok = n == strlen(s->role) && !strncmp(w, s->role, n);
			w += n;
			while (*w == ',' || *w == ' ')
				w++;
		}
		if (!ok)
			return pd_err_set(err, PD_EINVAL, "%s role supports only %s selectors",
			                  c->role, a);
		if (s->field && (rc = pd_k8s_field_selector_check(s->field, err)))
			return rc;
		if (s->label && (rc = pd_k8s_label_selector_check(s->label, err)))
			return rc;
	}
	return 0;
}
