/* k8s_client.c: the pieces of kubernetes_sd that talk to an API server, apart
 * from the provider's state: where requests go and how they authenticate (from
 * api_server and the HTTP client settings, from a kubeconfig file, or in-cluster
 * from the service account), the request URLs of lists and watches, and the
 * reading of a watch stream: newline-delimited JSON events split incrementally and
 * bounded in size, each parsed into its type, object and resource version. */
#include "k8s_watch_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *sdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The member key of a map node, or NULL (k8s_roles.c's pd_k8s_field does the same
 * for the builders; this file stands alone so that its readers can be tested and
 * fuzzed by themselves). */
static const struct pd_sd_node *mfield(const struct pd_sd_node *obj, const char *key)
{
	if (!obj || obj->kind != PD_SD_MAP)
		return NULL;
	for (size_t i = 0; i + 1 < 2 * obj->n; i += 2)
		if (obj->kids[i]->kind == PD_SD_STRING && obj->kids[i]->str &&
		    !strcmp(obj->kids[i]->str, key))
			return obj->kids[i + 1];
	return NULL;
}

/* The string at a dotted path, or NULL. */
static const char *mstr(const struct pd_sd_node *obj, const char *path)
{
	char key[64];
	while (obj) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		obj = mfield(obj, key);
		if (!path[n])
			break;
		path += n + 1;
	}
	if (!obj || obj->kind != PD_SD_STRING)
		return NULL;
	return obj->str ? obj->str : "";
}

static void blob_free(struct pd_k8s_blob *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

void pd_k8s_client_fini(struct pd_k8s_client *c)
{
	char *strs[] = {c->server,     c->token,      c->token_file,      c->auth_type,
	                c->basic_user, c->basic_pass, c->basic_pass_file, c->ca_file,
	                c->cert_file,  c->key_file,   c->proxy,           c->namespace};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		free(strs[i]);
	blob_free(&c->ca);
	blob_free(&c->cert);
	blob_free(&c->key);
	memset(c, 0, sizeof(*c));
}

/* The server URL without its trailing slashes. */
static int set_server(struct pd_k8s_client *c, const char *url, size_t n)
{
	while (n && url[n - 1] == '/')
		n--;
	free(c->server);
	if (!(c->server = malloc(n + 1)))
		return PD_ENOMEM;
	memcpy(c->server, url, n);
	c->server[n] = '\0';
	return 0;
}

int pd_k8s_client_from_config(struct pd_k8s_client *c, const char *api_server,
                              const struct pd_http_client_config *h, struct pd_err *err)
{
	memset(c, 0, sizeof(*c));
	c->follow = 1;
	if (set_server(c, api_server, strlen(api_server)))
		goto nomem;
	if (!h)
		return 0;
	c->follow = h->follow_redirects;
	c->insecure = h->tls_insecure_skip_verify;
	if (h->authorization_type) {
		if (!(c->auth_type = strdup(h->authorization_type)) ||
		    (h->authorization_credentials &&
		     !(c->token = strdup(h->authorization_credentials))) ||
		    (h->authorization_credentials_file &&
		     !(c->token_file = strdup(h->authorization_credentials_file))))
			goto nomem;
	}
	if (h->basic_auth_username) {
		if (!(c->basic_user = strdup(h->basic_auth_username)) ||
		    (h->basic_auth_password && !(c->basic_pass = strdup(h->basic_auth_password))) ||
		    (h->basic_auth_password_file &&
		     !(c->basic_pass_file = strdup(h->basic_auth_password_file))))
			goto nomem;
	}
	if ((h->tls_ca_file && !(c->ca_file = strdup(h->tls_ca_file))) ||
	    (h->tls_cert_file && !(c->cert_file = strdup(h->tls_cert_file))) ||
	    (h->tls_key_file && !(c->key_file = strdup(h->tls_key_file))) ||
	    (h->proxy_url && !(c->proxy = strdup(h->proxy_url))))
		goto nomem;
	return 0;
nomem:
	pd_k8s_client_fini(c);
	return pd_err_set(err, PD_ENOMEM, "out of memory");
}

/* ---- in-cluster ------------------------------------------------------------------ */

static int join_path(char **out, const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	if (!(*out = malloc(n)))
		return PD_ENOMEM;
	snprintf(*out, n, "%s%s%s", dir, *dir && dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	return 0;
}

/* A small file's content trimmed of surrounding white space (a token, a
 * namespace), as client-go and Prometheus trim them. */
char *pd_k8s_read_trimmed(const char *path, struct pd_err *err)
{
	uint8_t *buf;
	size_t len, start = 0;
	if (pd_file_read(path, 1 << 20, &buf, &len, err))
		return NULL;
	while (start < len && isspace(buf[start]))
		start++;
	while (len > start && isspace(buf[len - 1]))
		len--;
	memmove(buf, buf + start, len - start);
	buf[len - start] = '\0';
	return (char *)buf;
}

int pd_k8s_client_in_cluster(struct pd_k8s_client *c, const char *sa_dir, const char *host,
                             const char *port, struct pd_err *err)
{
	char *tok;
	int v6;
	memset(c, 0, sizeof(*c));
	c->follow = 1;
	if (!sa_dir || !*sa_dir)
		sa_dir = PD_K8S_SERVICEACCOUNT_DIR;
	if (!host || !*host || !port || !*port)
		return pd_err_set(
		    err, PD_EINVAL,
		    "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST "
		    "and KUBERNETES_SERVICE_PORT must be defined (or set api_server "
		    "or kubeconfig_file)");
	v6 = strchr(host, ':') != NULL;
	size_t n = strlen(host) + strlen(port) + 16;
	if (!(c->server = malloc(n)))
		goto nomem;
	snprintf(c->server, n, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
	if (join_path(&c->token_file, sa_dir, "token") ||
	    join_path(&c->ca_file, sa_dir, "ca.crt") || !(c->auth_type = strdup("Bearer")))
		goto nomem;
	/* client-go refuses to start without a readable token */
	if (!(tok = pd_k8s_read_trimmed(c->token_file, err))) {
		pd_err_prefix(err, "in-cluster configuration: service account token");
		pd_k8s_client_fini(c);
		return PD_EINVAL;
	}
	free(tok);
	return 0;
nomem:
	pd_k8s_client_fini(c);
	return pd_err_set(err, PD_ENOMEM, "out of memory");
}

int pd_k8s_own_namespace(const char *sa_dir, char **out, struct pd_err *err)
{
	char *path;
	if (!sa_dir || !*sa_dir)
		sa_dir = PD_K8S_SERVICEACCOUNT_DIR;
	if (join_path(&path, sa_dir, "namespace"))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	*out = pd_k8s_read_trimmed(path, err);
	free(path);
	if (!*out) {
		pd_err_prefix(err,
		              "namespaces.own_namespace: cannot read the namespace profd runs in");
		return PD_EINVAL;
	}
	if (!**out) {
		free(*out);
		*out = NULL;
		return pd_err_set(err, PD_EINVAL,
		                  "namespaces.own_namespace: the service account's namespace file "
		                  "is empty");
	}
	return 0;
}

/* ---- kubeconfig ------------------------------------------------------------------ */

/* Decodes kubeconfig's base64 (padding optional, white space skipped) into out;
 * -1 when malformed. */
static int b64_decode(const char *s, size_t n, struct pd_k8s_blob *out)
{
	size_t cap = n / 4 * 3 + 3, len;
	uint8_t *d = malloc(cap + 1);
	if (!d)
		return PD_ENOMEM;
	if (pd_base64_decode(s, n, 0, d, cap, &len)) {
		free(d);
		return -1;
	}
	out->data = d;
	out->len = len;
	return 0;
}

/* The map entry named key of a list of {name: ..., <field>: {...}} (kubeconfig's
 * clusters, users, contexts), or NULL. */
static const struct pd_sd_node *named(const struct pd_sd_node *list, const char *name,
                                      const char *field)
{
	if (!list || list->kind != PD_SD_LIST)
		return NULL;
	for (size_t i = 0; i < list->n; i++) {
		const char *nm = mstr(list->kids[i], "name");
		if (nm && !strcmp(nm, name))
			return mfield(list->kids[i], field);
	}
	return NULL;
}

/* A file path of the kubeconfig, relative to its directory unless absolute. */
static int kc_path(char **out, const char *dir, const char *p)
{
	if (p[0] == '/' || !dir || !*dir) {
		*out = strdup(p);
		return *out ? 0 : PD_ENOMEM;
	}
	return join_path(out, dir, p);
}

/* Either file or data (base64) of one TLS item. */
static int kc_tls(const struct pd_sd_node *n, const char *file_key, const char *data_key,
                  const char *dir, char **file, struct pd_k8s_blob *blob, const char *where,
                  struct pd_err *err)
{
	const char *d = mstr(n, data_key), *f = mstr(n, file_key);
	int rc;
	if (d && *d) {
		if ((rc = b64_decode(d, strlen(d), blob)))
			return rc == PD_ENOMEM
			           ? pd_err_set(err, rc, "out of memory")
			           : pd_err_set(err, PD_EINVAL, "%s: %s is not valid base64", where,
			                        data_key);
		return 0;
	}
	if (f && *f && kc_path(file, dir, f))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	return 0;
}

int pd_k8s_kubeconfig_parse(struct pd_k8s_client *c, const char *text, size_t len, const char *path,
                            struct pd_err *err)
{
	struct pd_sd_doc doc = {.text = text, .len = len, .prefix = path, .yaml = 1};
	const struct pd_sd_node *ctx, *cluster, *user = NULL;
	const char *cur, *cname, *uname, *server, *s;
	char *dir = NULL;
	int rc;

	memset(c, 0, sizeof(*c));
	c->follow = 1;
	if (!(doc.arena = pd_arena_create(64u << 20)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((rc = pd_sd_yaml_parse(&doc, err)))
		goto out;
	if (!doc.root || doc.root->kind != PD_SD_MAP) {
		rc = pd_err_set(err, PD_EINVAL, "%s: not a kubeconfig (a YAML map)", path);
		goto out;
	}
	/* relative paths are relative to the file's directory, as kubectl takes them */
	if ((s = strrchr(path, '/'))) {
		if (!(dir = strndup(path, (size_t)(s - path) + 1))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
	}
	cur = mstr(doc.root, "current-context");
	if (!cur || !*cur) {
		rc = pd_err_set(err, PD_EINVAL, "%s: current-context is not set", path);
		goto out;
	}
	if (!(ctx = named(mfield(doc.root, "contexts"), cur, "context"))) {
		rc = pd_err_set(err, PD_EINVAL, "%s: context \"%s\" not found", path, cur);
		goto out;
	}
	cname = mstr(ctx, "cluster");
	uname = mstr(ctx, "user");
	if (!cname || !(cluster = named(mfield(doc.root, "clusters"), cname, "cluster"))) {
		rc = pd_err_set(err, PD_EINVAL, "%s: cluster \"%s\" of context \"%s\" not found",
		                path, cname ? cname : "", cur);
		goto out;
	}
	if (uname && *uname && !(user = named(mfield(doc.root, "users"), uname, "user"))) {
		rc = pd_err_set(err, PD_EINVAL, "%s: user \"%s\" of context \"%s\" not found", path,
		                uname, cur);
		goto out;
	}
	server = mstr(cluster, "server");
	if (!server || (strncmp(server, "https://", 8) && strncmp(server, "http://", 7)) ||
	    !server[strcspn(server, ":") + 3] || server[strcspn(server, ":") + 3] == '/') {
		rc = pd_err_set(err, PD_EINVAL,
		                "%s: cluster \"%s\": server must be an http:// or https:// URL "
		                "with a host",
		                path, cname);
		goto out;
	}
	if ((rc = set_server(c, server, strlen(server)))) {
		pd_err_set(err, rc, "out of memory");
		goto out;
	}
	s = mstr(cluster, "insecure-skip-tls-verify");
	c->insecure = s && !strcmp(s, "true");
	if ((s = mstr(cluster, "proxy-url")) && *s && !(c->proxy = strdup(s))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	if ((s = mstr(ctx, "namespace")) && *s && !(c->namespace = strdup(s))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = kc_tls(cluster, "certificate-authority", "certificate-authority-data", dir,
	                 &c->ca_file, &c->ca, path, err)))
		goto out;
	if (user) {
		const char *tok = mstr(user, "token"), *tf = mstr(user, "tokenFile");
		const char *un = mstr(user, "username"), *pw = mstr(user, "password");
		if ((rc = kc_tls(user, "client-certificate", "client-certificate-data", dir,
		                 &c->cert_file, &c->cert, path, err)) ||
		    (rc = kc_tls(user, "client-key", "client-key-data", dir, &c->key_file, &c->key,
		                 path, err)))
			goto out;
		if ((c->cert_file || c->cert.data) != (c->key_file || c->key.data)) {
			rc = pd_err_set(err, PD_EINVAL,
			                "%s: user \"%s\": a client certificate needs a client key "
			                "and a key a certificate",
			                path, uname);
			goto out;
		}
		if (mfield(user, "exec") || mfield(user, "auth-provider")) {
			rc = pd_err_set(
			    err, PD_EINVAL,
			    "%s: user \"%s\": exec and auth-provider credentials are not "
			    "supported by profd (use a token, tokenFile or a client "
			    "certificate)",
			    path, uname);
			goto out;
		}
		if ((tok && *tok) || (tf && *tf)) {
			if (!(c->auth_type = strdup("Bearer")) ||
			    (tok && *tok && !(c->token = strdup(tok))) ||
			    (!(tok && *tok) && kc_path(&c->token_file, dir, tf))) {
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				goto out;
			}
		} else if (un && *un) {
			if (!(c->basic_user = strdup(un)) ||
			    !(c->basic_pass = sdup(pw ? pw : ""))) {
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				goto out;
			}
		}
	}
out:
	if (rc)
		pd_k8s_client_fini(c);
	free(dir);
	pd_arena_destroy(doc.arena);
	return rc;
}

int pd_k8s_kubeconfig_load(struct pd_k8s_client *c, const char *path, struct pd_err *err)
{
	uint8_t *buf;
	size_t len;
	int rc;
	memset(c, 0, sizeof(*c));
	if ((rc = pd_file_read(path, PD_K8S_MAX_KUBECONFIG, &buf, &len, err))) {
		pd_err_prefix(err, "kubeconfig_file");
		return rc;
	}
	rc = pd_k8s_kubeconfig_parse(c, (const char *)buf, len, path, err);
	free(buf);
	return rc;
}

/* ---- requests -------------------------------------------------------------------- */

int pd_k8s_client_apply(const struct pd_k8s_client *c, CURL *h, struct curl_slist **hdrs,
                        struct pd_err *err)
{
	char *secret = NULL, *auth = NULL;
	struct curl_slist *l;
	int rc = 0;

	if (c->token || c->token_file) {
		const char *cred = c->token;
		if (c->token_file) { /* read on every request, so a rotated token is used */
			if (!(secret = pd_k8s_read_trimmed(c->token_file, err))) {
				pd_err_prefix(err, "unable to read the bearer token file %s",
				              c->token_file);
				return PD_EIO;
			}
			cred = secret;
		}
		if (strpbrk(cred, "\r\n")) {
			rc = pd_err_set(err, PD_EINVAL, "the bearer token contains a line break");
			goto out;
		}
		size_t n = strlen(cred) + (c->auth_type ? strlen(c->auth_type) : 6) + 32;
		if (!(auth = malloc(n))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		snprintf(auth, n, "Authorization: %s %s", c->auth_type ? c->auth_type : "Bearer",
		         cred);
		if (!(l = curl_slist_append(*hdrs, auth))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto out;
		}
		*hdrs = l;
	} else if (c->basic_user) {
		const char *pass = c->basic_pass ? c->basic_pass : "";
		if (c->basic_pass_file) {
			if (!(secret = pd_k8s_read_trimmed(c->basic_pass_file, err))) {
				pd_err_prefix(err, "unable to read basic auth password file %s",
				              c->basic_pass_file);
				return PD_EIO;
			}
			pass = secret;
		}
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->basic_user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, pass); /* curl copies it */
	}
	if (c->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (c->ca.data) {
		struct curl_blob b = {c->ca.data, c->ca.len, CURL_BLOB_COPY};
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
	}
	if (c->cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
	if (c->cert.data) {
		struct curl_blob b = {c->cert.data, c->cert.len, CURL_BLOB_COPY};
		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
	}
	if (c->key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
	if (c->key.data) {
		struct curl_blob b = {c->key.data, c->key.len, CURL_BLOB_COPY};
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (c->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	curl_easy_setopt(h, CURLOPT_PROXY, c->proxy ? c->proxy : "");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, c->follow ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
out:
	free(secret);
	free(auth);
	return rc;
}

/* The path of a kind's collection: core kinds under /api/v1, the others under
 * their group's /apis/<group>/v1. */
static void kind_path(enum pd_k8s_kind kind, const char **group, const char **res)
{
	static const char *const res_names[] = {
	    [PD_K8S_KIND_NODE] = "nodes",
	    [PD_K8S_KIND_SERVICE] = "services",
	    [PD_K8S_KIND_POD] = "pods",
	    [PD_K8S_KIND_ENDPOINTS] = "endpoints",
	    [PD_K8S_KIND_ENDPOINTSLICE] = "endpointslices",
	    [PD_K8S_KIND_INGRESS] = "ingresses",
	    [PD_K8S_KIND_NAMESPACE] = "namespaces",
	};
	*res = res_names[kind];
	*group = kind == PD_K8S_KIND_ENDPOINTSLICE ? "/apis/discovery.k8s.io/v1"
	         : kind == PD_K8S_KIND_INGRESS     ? "/apis/networking.k8s.io/v1"
	                                           : "/api/v1";
}

/* Appends s percent-encoded as a query value (unreserved characters kept). */
static int query_value(struct pd_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;
	for (; *s && !rc; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
			rc = pd_buf_append(b, s, 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			rc = pd_buf_append(b, e, 3);
		}
	}
	return rc;
}

int pd_k8s_url(struct pd_buf *b, const char *server, const struct pd_k8s_request *r)
{
	const char *group, *res;
	int rc;
	char sep = '?';
	kind_path(r->kind, &group, &res);
	rc = pd_buf_printf(b, "%s%s", server, group);
	if (!rc && r->ns && *r->ns && r->kind != PD_K8S_KIND_NODE &&
	    r->kind != PD_K8S_KIND_NAMESPACE) {
		rc = pd_buf_printf(b, "/namespaces/");
		if (!rc)
			rc = query_value(b, r->ns);
	}
	if (!rc)
		rc = pd_buf_printf(b, "/%s", res);
	if (!rc && r->watch) {
		rc = pd_buf_printf(b, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d",
		                   r->timeout_s);
		sep = '&';
		if (!rc && r->resource_version && *r->resource_version) {
			rc = pd_buf_printf(b, "&resourceVersion=");
			if (!rc)
				rc = query_value(b, r->resource_version);
		}
	} else if (!rc) {
		rc = pd_buf_printf(b, "?limit=%d", r->limit);
		sep = '&';
		if (!rc && r->cont && *r->cont) {
			rc = pd_buf_printf(b, "&continue=");
			if (!rc)
				rc = query_value(b, r->cont);
		}
	}
	if (!rc && r->label_selector && *r->label_selector) {
		rc = pd_buf_printf(b, "%clabelSelector=", sep);
		if (!rc)
			rc = query_value(b, r->label_selector);
	}
	if (!rc && r->field_selector && *r->field_selector) {
		rc = pd_buf_printf(b, "%cfieldSelector=", sep);
		if (!rc)
			rc = query_value(b, r->field_selector);
	}
	if (!rc)
		rc = pd_buf_append(b, "", 1);
	return rc;
}

/* ---- watch streams --------------------------------------------------------------- */

void pd_k8s_stream_init(struct pd_k8s_stream *s, size_t max)
{
	pd_buf_init(&s->line, 0);
	s->max = max ? max : PD_K8S_MAX_EVENT_SIZE;
}

void pd_k8s_stream_fini(struct pd_k8s_stream *s)
{
	pd_buf_fini(&s->line);
}

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return 0;
	return 1;
}

static int emit_line(struct pd_k8s_stream *s, const char *line, size_t n, pd_k8s_event_fn fn,
                     void *ctx, struct pd_err *err)
{
	if (n && line[n - 1] == '\r')
		n--;
	if (n > s->max)
		return pd_err_set(err, PD_ETOOBIG, "a watch event is larger than %zu bytes",
		                  s->max);
	if (blank(line, n))
		return 0;
	return fn(ctx, line, n, err);
}

int pd_k8s_stream_feed(struct pd_k8s_stream *s, const char *data, size_t n, pd_k8s_event_fn fn,
                       void *ctx, struct pd_err *err)
{
	int rc;
	while (n) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		if (s->line.len + take > s->max + 1) /* + 1: room for a '\r' */
			return pd_err_set(err, PD_ETOOBIG, "a watch event is larger than %zu bytes",
			                  s->max);
		if (!nl) {
			if (pd_buf_append(&s->line, data, take))
				return pd_err_set(err, PD_ENOMEM, "out of memory");
			return 0;
		}
		if (s->line.len) {
			if (pd_buf_append(&s->line, data, take))
				return pd_err_set(err, PD_ENOMEM, "out of memory");
			rc = emit_line(s, (const char *)s->line.data, s->line.len, fn, ctx, err);
			s->line.len = 0;
		} else {
			rc = emit_line(s, data, take, fn, ctx, err);
		}
		if (rc)
			return rc;
		data += take + 1;
		n -= take + 1;
	}
	return 0;
}

int pd_k8s_stream_end(struct pd_k8s_stream *s, pd_k8s_event_fn fn, void *ctx, struct pd_err *err)
{
	int rc = 0;
	/* the last event of a stream may lack its newline */
	if (s->line.len)
		rc = emit_line(s, (const char *)s->line.data, s->line.len, fn, ctx, err);
	s->line.len = 0;
	return rc;
}

/* ---- events ---------------------------------------------------------------------- */

int pd_k8s_json_span(const char *text, size_t len, size_t pos, size_t *end)
{
	int depth = 0, in_str = 0;
	size_t i = pos;
	if (pos >= len)
		return -1;
	if (text[i] != '{' && text[i] != '[' && text[i] != '"') {
		while (i < len && !strchr(",}] \t\r\n", text[i]))
			i++;
		*end = i;
		return 0;
	}
	for (; i < len; i++) {
		char c = text[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"') {
				in_str = 0;
				if (depth == 0) {
					*end = i + 1;
					return 0;
				}
			}
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (--depth == 0) {
				*end = i + 1;
				return 0;
			}
		}
	}
	return -1;
}

int64_t pd_k8s_json_int(const struct pd_sd_node *n)
{
	if (!n || n->kind != PD_SD_NUMBER || !n->str)
		return 0;
	return strtoll(n->str, NULL, 10);
}

int pd_k8s_event_parse(const char *line, size_t len, struct pd_arena *a, struct pd_k8s_event *ev,
                       struct pd_err *err)
{
	static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
	struct pd_sd_doc doc = {.text = line, .len = len, .prefix = "watch event", .arena = a};
	const char *t;
	size_t end;
	int rc;

	memset(ev, 0, sizeof(*ev));
	if ((rc = pd_sd_json_parse(&doc, err)))
		return rc;
	if (!doc.root || doc.root->kind != PD_SD_MAP)
		return pd_err_set(err, PD_EINVAL, "watch event: not a JSON object");
	if (!(t = mstr(doc.root, "type")))
		return pd_err_set(err, PD_EINVAL, "watch event: no type");
	ev->type = -1;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(t, types[i]))
			ev->type = (int)i;
	if (ev->type < 0)
		return pd_err_set(err, PD_EINVAL, "watch event: unknown type \"%.32s\"", t);
	ev->object = mfield(doc.root, "object");
	if (!ev->object || ev->object->kind != PD_SD_MAP)
		return pd_err_set(err, PD_EINVAL, "watch event: %s without an object", t);
	if (pd_k8s_json_span(line, len, ev->object->pos, &end))
		return pd_err_set(err, PD_EINVAL, "watch event: cut object");
	ev->raw = line + ev->object->pos;
	ev->rawlen = end - ev->object->pos;
	if (ev->type == PD_K8S_EVENT_ERROR) {
		ev->code = pd_k8s_json_int(mfield(ev->object, "code"));
		ev->message = mstr(ev->object, "message");
		return 0;
	}
	ev->resource_version = mstr(ev->object, "metadata.resourceVersion");
	if (ev->type == PD_K8S_EVENT_BOOKMARK) {
		if (!ev->resource_version)
			return pd_err_set(err, PD_EINVAL,
			                  "watch event: BOOKMARK without metadata.resourceVersion");
		return 0;
	}
	ev->name = mstr(ev->object, "metadata.name");
	ev->ns = mstr(ev->object, "metadata.namespace");
	if (!ev->name || !*ev->name)
		return pd_err_set(err, PD_EINVAL, "watch event: %s object without metadata.name",
		                  t);
	return 0;
}
