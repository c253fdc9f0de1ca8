/* parse_http.c: the HTTP client settings of prometheus/common's HTTPClientConfig
 * (basic_auth, authorization, bearer tokens, tls_config, proxy_url,
 * follow_redirects) inlined in a scrape job or an http_sd_config, with the
 * checks and messages of Prometheus; the fields profd cannot honour are errors. */
#include "config_int.h"

#include <string.h>
#include <strings.h>

static const char *const unsupported_http[] = {
    "oauth2", "http_headers", "proxy_from_environment", "proxy_connect_header", "no_proxy", NULL};

/* ---- HTTP client settings (prometheus/common HTTPClientConfig) ------------ */

static int parse_basic_auth(struct cfg_ctx *c, yaml_node_t *n, struct http_src *h)
{
	struct cy_map m;
	int rc;
	if (cy_is_null(n))
		return 0; /* a null basic_auth is no basic_auth, as a nil pointer in Go */
	if ((rc = cy_map(c, n, "config.BasicAuth", 1, &m)))
		return rc;
	h->has_basic_auth = 1;
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (cfg_is(e, "username"))
			rc = cy_str(c, e->val, &h->ba_user);
		else if (cfg_is(e, "password"))
			rc = cy_str(c, e->val, &h->ba_pass);
		else if (cfg_is(e, "password_file")) {
			rc = cy_str(c, e->val, &h->ba_pass_file);
			h->k_password_file = e->key;
		} else if (cfg_is(e, "username_file") || cfg_is(e, "username_ref") ||
		           cfg_is(e, "password_ref"))
			rc = cfg_unsupported(c, e, "basic_auth");
		else
			rc = cy_unknown(c, e, "config.BasicAuth");
	}
	return rc;
}

static int parse_authorization(struct cfg_ctx *c, yaml_node_t *n, struct http_src *h)
{
	struct cy_map m;
	int rc;
	if (cy_is_null(n))
		return 0;
	if ((rc = cy_map(c, n, "config.Authorization", 1, &m)))
		return rc;
	h->has_authorization = 1;
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (cfg_is(e, "type")) {
			rc = cy_str(c, e->val, &h->auth_type);
			h->v_auth_type = e->val;
		} else if (cfg_is(e, "credentials"))
			rc = cy_str(c, e->val, &h->auth_cred);
		else if (cfg_is(e, "credentials_file")) {
			rc = cy_str(c, e->val, &h->auth_cred_file);
			h->k_credentials_file = e->key;
		} else if (cfg_is(e, "credentials_ref"))
			rc = cfg_unsupported(c, e, "authorization");
		else
			rc = cy_unknown(c, e, "config.Authorization");
	}
	return rc;
}

static int parse_tls(struct cfg_ctx *c, yaml_node_t *n, struct http_src *h)
{
	static const char *const unsupported_tls[] = {
	    "ca",      "cert",        "key",         "ca_ref",      "cert_ref",
	    "key_ref", "min_version", "max_version", "next_protos", NULL};
	struct cy_map m;
	int rc;
	if ((rc = cy_map(c, n, "config.TLSConfig", 1, &m)))
		return rc;
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (cfg_is(e, "ca_file"))
			rc = cy_str(c, e->val, &h->ca_file);
		else if (cfg_is(e, "cert_file"))
			rc = cy_str(c, e->val, &h->cert_file);
		else if (cfg_is(e, "key_file"))
			rc = cy_str(c, e->val, &h->key_file);
		else if (cfg_is(e, "server_name"))
			rc = cy_str(c, e->val, &h->server_name);
		else if (cfg_is(e, "insecure_skip_verify"))
			rc = cy_bool(c, e->val, &h->insecure);
		else if (cfg_listed(e->name, unsupported_tls))
			rc = cfg_unsupported(c, e, "tls_config");
		else
			rc = cy_unknown(c, e, "config.TLSConfig");
	}
	if (rc)
		return rc;
	/* TLSConfig.Validate */
	if (*h->cert_file && !*h->key_file)
		return cy_err(c, n,
		              "exactly one of key or key_file must be configured when a "
		              "client certificate is configured");
	if (*h->key_file && !*h->cert_file)
		return cy_err(c, n,
		              "exactly one of cert or cert_file must be configured when a "
		              "client key is configured");
	return 0;
}

void cfg_http_src_init(struct http_src *h, yaml_node_t *node)
{
	memset(h, 0, sizeof(*h));
	h->node = node;
	h->follow_redirects = 1;
	h->ba_user = h->ba_pass = h->ba_pass_file = "";
	h->auth_type = h->auth_cred = h->auth_cred_file = "";
	h->bearer = h->bearer_file = "";
	h->ca_file = h->cert_file = h->key_file = h->server_name = "";
	h->proxy_url = "";
}

/* Handles one field of an inlined HTTPClientConfig: 1 when it was one, 0 when not,
 * or an error code. where names the enclosing section for messages. */
int cfg_http_field(struct cfg_ctx *c, const struct cy_entry *e, struct http_src *h)
{
	int rc;
	if (cfg_is(e, "basic_auth")) {
		h->k_basic_auth = e->key;
		rc = parse_basic_auth(c, e->val, h);
	} else if (cfg_is(e, "authorization")) {
		h->k_authorization = e->key;
		rc = parse_authorization(c, e->val, h);
	} else if (cfg_is(e, "bearer_token")) {
		h->k_bearer_token = e->key;
		rc = cy_str(c, e->val, &h->bearer);
	} else if (cfg_is(e, "bearer_token_file")) {
		h->k_bearer_token_file = e->key;
		rc = cy_str(c, e->val, &h->bearer_file);
	} else if (cfg_is(e, "tls_config")) {
		rc = parse_tls(c, e->val, h);
	} else if (cfg_is(e, "follow_redirects")) {
		rc = cy_bool(c, e->val, &h->follow_redirects);
	} else if (cfg_is(e, "proxy_url")) {
		rc = cy_str(c, e->val, &h->proxy_url);
	} else if (cfg_is(e, "enable_http2")) {
		int dummy;
		rc = cy_bool(c, e->val, &dummy);
		if (rc == 0)
			rc = cfg_ignored(c, e);
	} else if (cfg_listed(e->name, unsupported_http)) {
		rc = cfg_unsupported(c, e, NULL);
	} else {
		return 0;
	}
	return rc ? rc : 1;
}

static const char *opt(struct cfg_ctx *c, const char *s, int is_path)
{
	if (!s || !*s)
		return NULL;
	return is_path ? cy_path(c, s) : s;
}

/* HTTPClientConfig.Validate with its messages, then the result as discovery.h's
 * struct: basic_auth_username is non-NULL exactly when basic_auth is configured,
 * authorization_type exactly when authorization (or a bearer token) is. */
int cfg_http_finish(struct cfg_ctx *c, struct http_src *h, struct pd_http_client_config *out)
{
	int bearer = *h->bearer || *h->bearer_file;
	yaml_node_t *kb = h->k_bearer_token_file ? h->k_bearer_token_file : h->k_bearer_token;

	if (*h->bearer && *h->bearer_file)
		return cy_err(c, h->k_bearer_token_file,
		              "at most one of bearer_token & bearer_token_file must be configured");
	if (h->has_basic_auth && bearer)
		return cy_err(c, kb,
		              "at most one of basic_auth, oauth2, bearer_token & "
		              "bearer_token_file must be configured");
	if (h->has_basic_auth && *h->ba_pass && *h->ba_pass_file)
		return cy_err(c, h->k_password_file,
		              "at most one of basic_auth password, "
		              "password_file & password_ref must be configured");
	memset(out, 0, sizeof(*out));
	if (h->has_authorization) {
		if (bearer)
			return cy_err(c, h->k_authorization,
			              "authorization is not compatible with "
			              "bearer_token & bearer_token_file");
		if (*h->auth_cred && *h->auth_cred_file)
			return cy_err(c, h->k_credentials_file,
			              "at most one of authorization credentials & credentials_file "
			              "must be configured");
		/* strings.TrimSpace, then the default type */
		const char *t = h->auth_type;
		while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r' || *t == '\v' ||
		       *t == '\f')
			t++;
		size_t tl = strlen(t);
		while (tl && strchr(" \t\n\r\v\f", t[tl - 1]))
			tl--;
		char *type = tl ? pd_arena_strndup(c->a, t, tl) : cy_strdup(c, "Bearer");
		if (!type)
			return cy_nomem(c);
		if (strcasecmp(type, "basic") == 0)
			return cy_err(c, h->v_auth_type ? h->v_auth_type : h->k_authorization,
			              "authorization type cannot be set to \"basic\", use "
			              "\"basic_auth\" instead");
		if (h->has_basic_auth)
			return cy_err(c, h->k_authorization,
			              "at most one of basic_auth, oauth2 & "
			              "authorization must be configured");
		out->authorization_type = type;
		out->authorization_credentials = opt(c, h->auth_cred, 0);
		out->authorization_credentials_file = opt(c, h->auth_cred_file, 1);
	} else if (bearer) {
		out->authorization_type = "Bearer";
		out->authorization_credentials = opt(c, h->bearer, 0);
		out->authorization_credentials_file = opt(c, h->bearer_file, 1);
	}
	if (h->has_basic_auth) {
		out->basic_auth_username = h->ba_user;
		out->basic_auth_password = opt(c, h->ba_pass, 0);
		out->basic_auth_password_file = opt(c, h->ba_pass_file, 1);
	}
	out->tls_ca_file = opt(c, h->ca_file, 1);
	out->tls_cert_file = opt(c, h->cert_file, 1);
	out->tls_key_file = opt(c, h->key_file, 1);
	out->tls_server_name = opt(c, h->server_name, 0);
	out->tls_insecure_skip_verify = h->insecure;
	out->proxy_url = opt(c, h->proxy_url, 0);
	out->follow_redirects = h->follow_redirects;
	return 0;
}
