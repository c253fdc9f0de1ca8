/* web.c: the web configuration file (--web.config.file) in exporter-toolkit's
 * format, which Prometheus and its exporters share: TLS settings, extra response
 * headers, basic-auth users with bcrypt hashes and a rate limit. Parsed with the
 * same YAML helpers as the scrape configuration (strict, positions in every
 * error), validated with exporter-toolkit's checks and words, and the bcrypt
 * check of a password through libxcrypt's crypt_rn. */
#include "config_int.h"

#include <crypt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is(const struct cy_entry *e, const char *name)
{
	return strcmp(e->name, name) == 0;
}

/* The cipher suites Go's crypto/tls lists (tls.CipherSuites()), by name. */
static const char *const cipher_names[] = {
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    NULL,
};

static const char *const curve_names[] = {"CurveP256", "CurveP384", "CurveP521", "X25519", NULL};

static int listed(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* A list of strings each of which must be in allowed (`unknown cipher: X`). */
static int parse_names(struct cfg_ctx *c, yaml_node_t *n, const char *const *allowed,
		       const char *what, const char ***out, size_t *count)
{
	yaml_node_t **items;
	size_t k;
	int rc = cy_seq(c, n, "[]web.Cipher", &items, &k);
	if (rc)
		return rc;
	*out = cy_alloc(c, k + 1, sizeof(**out));
	if (!*out)
		return cy_nomem(c);
	for (size_t i = 0; i < k; i++) {
		if ((rc = cy_str(c, items[i], &(*out)[i])))
			return rc;
		if (!listed((*out)[i], allowed))
			return cy_err(c, items[i], "unknown %s: %s", what, (*out)[i]);
	}
	*count = k;
	return 0;
}

static int parse_version(struct cfg_ctx *c, yaml_node_t *n, int *out)
{
	static const struct {
		const char *name;
		int v;
	} versions[] = {{"TLS10", PD_WEB_TLS10}, {"TLS11", PD_WEB_TLS11}, {"TLS12", PD_WEB_TLS12}, {"TLS13", PD_WEB_TLS13}};
	const char *s;
	int rc = cy_str(c, n, &s);
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (strcmp(s, versions[i].name) == 0) {
			*out = versions[i].v;
			return 0;
		}
	return cy_err(c, n, "unknown TLS version: %s", s);
}

static int parse_tls(struct cfg_ctx *c, struct pd_web_config *w, yaml_node_t *n)
{
	struct cy_map m;
	yaml_node_t *auth = NULL, *ca = NULL;
	const char *auth_s = "";
	int rc = cy_map(c, n, "web.TLSConfig", 1, &m);
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (is(e, "cert"))
			rc = cy_str(c, e->val, &w->cert);
		else if (is(e, "key"))
			rc = cy_str(c, e->val, &w->key);
		else if (is(e, "client_ca"))
			rc = cy_str(c, e->val, &w->client_ca), ca = e->val;
		else if (is(e, "cert_file"))
			rc = cy_str(c, e->val, &w->cert_file);
		else if (is(e, "key_file"))
			rc = cy_str(c, e->val, &w->key_file);
		else if (is(e, "client_ca_file"))
			rc = cy_str(c, e->val, &w->client_ca_file), ca = e->val;
		else if (is(e, "client_auth_type"))
			rc = cy_str(c, e->val, &auth_s), auth = e->val;
		else if (is(e, "cipher_suites"))
			rc = parse_names(c, e->val, cipher_names, "cipher", &w->cipher_suites, &w->ncipher_suites);
		else if (is(e, "curve_preferences"))
			rc = parse_names(c, e->val, curve_names, "curve", &w->curve_preferences,
					 &w->ncurve_preferences);
		else if (is(e, "min_version"))
			rc = parse_version(c, e->val, &w->min_version);
		else if (is(e, "max_version"))
			rc = parse_version(c, e->val, &w->max_version);
		else if (is(e, "prefer_server_cipher_suites"))
			rc = cy_bool(c, e->val, &w->prefer_server_cipher_suites);
		else if (is(e, "client_allowed_sans"))
			rc = cy_strlist(c, e->val, &w->client_allowed_sans, &w->nclient_allowed_sans);
		else
			rc = cy_unknown(c, e, "web.TLSConfig");
	}
	if (rc)
		return rc;
	if (!*auth_s || strcmp(auth_s, "NoClientCert") == 0)
		w->client_auth = PD_WEB_NO_CLIENT_CERT;
	else if (strcmp(auth_s, "RequestClientCert") == 0)
		w->client_auth = PD_WEB_REQUEST_CLIENT_CERT;
	else if (strcmp(auth_s, "RequireAnyClientCert") == 0 || strcmp(auth_s, "RequireClientCert") == 0)
		w->client_auth = PD_WEB_REQUIRE_ANY_CLIENT_CERT;
	else if (strcmp(auth_s, "VerifyClientCertIfGiven") == 0)
		w->client_auth = PD_WEB_VERIFY_CLIENT_CERT_IF_GIVEN;
	else if (strcmp(auth_s, "RequireAndVerifyClientCert") == 0)
		w->client_auth = PD_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT;
	else
		return cy_err(c, auth, "invalid ClientAuth: %s", auth_s);
	w->cert_file = *w->cert_file ? cy_path(c, w->cert_file) : w->cert_file;
	w->key_file = *w->key_file ? cy_path(c, w->key_file) : w->key_file;
	w->client_ca_file = *w->client_ca_file ? cy_path(c, w->client_ca_file) : w->client_ca_file;
	if (!w->cert_file || !w->key_file || !w->client_ca_file)
		return cy_nomem(c);
	w->tls_enabled = *w->cert || *w->key || *w->client_ca || *w->cert_file || *w->key_file ||
			 *w->client_ca_file;
	if (!w->tls_enabled)
		return 0;
	if (!*w->cert_file && !*w->cert)
		return cy_err(c, n, "missing one of cert or cert_file");
	if (!*w->key_file && !*w->key)
		return cy_err(c, n, "missing one of key or key_file");
	if ((*w->client_ca_file || *w->client_ca) && w->client_auth == PD_WEB_NO_CLIENT_CERT)
		return cy_err(c, ca, "client CA's have been configured without a Client Auth Policy");
	return 0;
}

/* The headers an operator may add, and the values some of them must have. */
static int check_header(struct cfg_ctx *c, const struct cy_entry *e, const char *value)
{
	static const struct {
		const char *name;
		const char *values[3]; /* none: any value */
	} allowed[] = {
	    {"Strict-Transport-Security", {NULL}},
	    {"X-Content-Type-Options", {"nosniff", NULL}},
	    {"X-Frame-Options", {"deny", "sameorigin", NULL}},
	    {"X-XSS-Protection", {NULL}},
	    {"Content-Security-Policy", {NULL}},
	};
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		if (strcmp(e->name, allowed[i].name) != 0)
			continue;
		if (!allowed[i].values[0])
			return 0;
		for (size_t k = 0; allowed[i].values[k]; k++)
			if (strcmp(value, allowed[i].values[k]) == 0)
				return 0;
		char expect[64] = "";
		for (size_t k = 0; allowed[i].values[k]; k++)
			snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect), "%s\"%s\"", k ? " " : "",
				 allowed[i].values[k]);
		return cy_err(c, e->val, "invalid value for %s. Expected one of: [%s], but got: %s", e->name,
			      expect, cy_quote(c, value));
	}
	return cy_err(c, e->key, "HTTP header %s can not be configured", cy_quote(c, e->name));
}

static int parse_http(struct cfg_ctx *c, struct pd_web_config *w, yaml_node_t *n)
{
	struct cy_map m;
	int rc = cy_map(c, n, "web.HTTPConfig", 1, &m);
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (is(e, "http2")) {
			rc = cy_bool(c, e->val, &w->http2);
		} else if (is(e, "headers")) {
			struct cy_map h;
			if ((rc = cy_map(c, e->val, "map[string]string", 0, &h)))
				break;
			w->headers = cy_alloc(c, h.n + 1, sizeof(*w->headers));
			if (!w->headers)
				return cy_nomem(c);
			for (size_t k = 0; k < h.n && rc == 0; k++) {
				w->headers[k].name = cy_strdup(c, h.e[k].name);
				if (!w->headers[k].name)
					return cy_nomem(c);
				rc = cy_str(c, h.e[k].val, &w->headers[k].value);
			}
			w->nheaders = h.n;
			/* exporter-toolkit checks the headers once the whole file is read */
			for (size_t k = 0; k < h.n && rc == 0; k++)
				rc = check_header(c, &h.e[k], w->headers[k].value);
		} else {
			rc = cy_unknown(c, e, "web.HTTPConfig");
		}
	}
	return rc;
}

/* Go's bcrypt.Cost checks: length, prefix, version, cost in [4, 31]. */
static int check_bcrypt(struct cfg_ctx *c, yaml_node_t *n, const char *h)
{
	size_t len = strlen(h);
	if (len < 59)
		return cy_err(c, n, "crypto/bcrypt: hashedSecret too short to be a bcrypted password");
	if (h[0] != '$')
		return cy_err(c, n, "crypto/bcrypt: bcrypt hashes must start with '$', but hashedSecret started with '%c'",
			      h[0]);
	if (h[1] > '2')
		return cy_err(c, n,
			      "crypto/bcrypt: bcrypt algorithm version '%c' requested is newer than current version '2'",
			      h[1]);
	size_t at = h[2] != '$' ? 4 : 3;
	char cost[3] = {h[at], h[at + 1], 0};
	if (cost[0] < '0' || cost[0] > '9' || cost[1] < '0' || cost[1] > '9')
		return cy_err(c, n, "strconv.Atoi: parsing %s: invalid syntax", cy_quote(c, cost));
	int k = atoi(cost);
	if (k < 4 || k > 31)
		return cy_err(c, n, "crypto/bcrypt: cost %d is outside allowed range (4,31)", k);
	return 0;
}

static int parse_users(struct cfg_ctx *c, struct pd_web_config *w, yaml_node_t *n)
{
	struct cy_map m;
	int rc = cy_map(c, n, "map[string]config.Secret", 0, &m);
	if (rc)
		return rc;
	w->users = cy_alloc(c, m.n + 1, sizeof(*w->users));
	if (!w->users)
		return cy_nomem(c);
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		w->users[i].name = cy_strdup(c, m.e[i].name);
		if (!w->users[i].name)
			return cy_nomem(c);
		rc = cy_str(c, m.e[i].val, &w->users[i].hash);
	}
	w->nusers = m.n;
	for (size_t i = 0; i < m.n && rc == 0; i++)
		rc = check_bcrypt(c, m.e[i].val, w->users[i].hash);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* tenants (profd's own field): user -> the tenants that user may use. Every user
 * named must be one of basic_auth_users, every tenant id valid. */
static int parse_tenants(struct cfg_ctx *c, struct pd_web_config *w, yaml_node_t *n)
{
	struct cy_map m;
	int rc = cy_map(c, n, "map[string][]string", 0, &m);
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct pd_web_user *u = NULL;
		for (size_t k = 0; k < w->nusers; k++)
			if (strcmp(w->users[k].name, m.e[i].name) == 0)
				u = &w->users[k];
		if (!u)
			return cy_err(c, m.e[i].val,
			              "tenants: user %s is not one of basic_auth_users",
			              cy_quote(c, m.e[i].name));
		const char **t = NULL;
		size_t nt = 0;
		if ((rc = cy_strlist(c, m.e[i].val, &t, &nt)))
			break;
		if (nt == 0)
			return cy_err(c, m.e[i].val, "tenants: user %s has no tenants",
			              cy_quote(c, m.e[i].name));
		for (size_t k = 0; k < nt; k++) {
			struct pd_err e = {0};
			if (pd_config_tenant_check(t[k], strlen(t[k]), &e))
				return cy_err(c, m.e[i].val, "tenants: user %s: %s",
				              cy_quote(c, m.e[i].name), e.msg);
		}
		qsort(t, nt, sizeof(*t), cmp_str);
		size_t d = 0;
		for (size_t k = 0; k < nt; k++)
			if (d == 0 || strcmp(t[d - 1], t[k]) != 0)
				t[d++] = t[k];
		u->tenants = t;
		u->ntenants = d;
	}
	return rc;
}

static int parse_rate(struct cfg_ctx *c, struct pd_web_config *w, yaml_node_t *n)
{
	struct cy_map m;
	int rc = cy_map(c, n, "web.RateLimiterConfig", 1, &m);
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (is(e, "burst"))
			rc = cy_int(c, e->val, &w->rate_limit_burst);
		else if (is(e, "interval"))
			rc = cy_duration(c, e->val, &w->rate_limit_interval_ms);
		else
			rc = cy_unknown(c, e, "web.RateLimiterConfig");
	}
	return rc;
}

void pd_web_config_destroy(struct pd_web_config *wc)
{
	if (!wc)
		return;
	pd_arena_destroy(wc->arena);
	free(wc);
}

int pd_web_config_parse(const char *text, size_t len, const char *filename, const char *dir,
                        struct pd_web_config **out, struct pd_err *err)
{
	struct pd_web_config *w = calloc(1, sizeof(*w));
	yaml_document_t doc;
	yaml_node_t *root;
	int rc;

	*out = NULL;
	if (!w || !(w->arena = pd_arena_create(CFG_ARENA_LIMIT))) {
		free(w);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	struct cfg_ctx c = {
	    .a = w->arena, .doc = &doc, .filename = filename, .err = err, .budget = CFG_NODE_BUDGET};
	w->filename = cy_strdup(&c, filename ? filename : "");
	c.dir = dir ? cy_strdup(&c, dir) : NULL;
	if (!w->filename || (dir && !c.dir)) {
		rc = cy_nomem(&c);
		goto fail;
	}
	/* exporter-toolkit's defaults */
	w->min_version = PD_WEB_TLS12;
	w->max_version = PD_WEB_TLS13;
	w->prefer_server_cipher_suites = 1;
	w->http2 = 1;
	w->cert = w->key = w->client_ca = w->cert_file = w->key_file = w->client_ca_file = "";
	if ((rc = cy_load(&c, text, len, &doc, &root)))
		goto fail;
	struct cy_map m;
	yaml_node_t *tls = NULL, *http = NULL, *users = NULL, *rate = NULL, *tenants = NULL;
	rc = cy_map(&c, root, "web.Config", 1, &m);
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (is(e, "tls_server_config"))
			tls = e->val;
		else if (is(e, "http_server_config"))
			http = e->val;
		else if (is(e, "basic_auth_users"))
			users = e->val;
		else if (is(e, "rate_limit"))
			rate = e->val;
		else if (is(e, "tenants"))
			tenants = e->val;
		else
			rc = cy_unknown(&c, e, "web.Config");
	}
	if (rc == 0)
		rc = parse_tls(&c, w, tls);
	if (rc == 0)
		rc = parse_http(&c, w, http);
	if (rc == 0)
		rc = parse_users(&c, w, users);
	if (rc == 0)
		rc = parse_rate(&c, w, rate);
	if (rc == 0)
		rc = parse_tenants(&c, w, tenants);
	yaml_document_delete(&doc);
	if (rc)
		goto fail;
	*out = w;
	return 0;
fail:
	pd_web_config_destroy(w);
	return rc;
}

int pd_web_config_load_file(const char *path, struct pd_web_config **out, struct pd_err *err)
{
	uint8_t *buf;
	size_t len;
	int rc;

	*out = NULL;
	if ((rc = pd_file_read(path, PD_CONFIG_MAX_FILE_SIZE, &buf, &len, err)))
		return rc;
	char *dir = cfg_dir_of(path);
	if (!dir) {
		free(buf);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	rc = pd_web_config_parse((const char *)buf, len, path, dir, out, err);
	free(dir);
	free(buf);
	return rc;
}

static int readable(const char *what, const char *path, struct pd_err *err)
{
	if (!*path)
		return 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return pd_err_set(err, PD_EINVAL, "failed to read %s (%s): open %s: %s", what, path, path,
				  strerror(errno));
	fclose(f);
	return 0;
}

int pd_web_config_check_files(const struct pd_web_config *wc, struct pd_err *err)
{
	if (!wc->tls_enabled)
		return 0;
	int rc = readable("cert_file", wc->cert_file, err);
	if (rc == 0)
		rc = readable("key_file", wc->key_file, err);
	if (rc == 0)
		rc = readable("client_ca_file", wc->client_ca_file, err);
	return rc;
}

/* Compares two NUL-terminated strings in time that depends only on their lengths. */
static int same(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;
	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

int pd_web_config_check_password(const struct pd_web_config *wc, const char *user,
                                 const char *password)
{
	/* a well-formed hash of no known password, checked for unknown users so that
	 * they cost what known ones cost */
	static const char decoy[] = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
	const char *hash = decoy;
	int known = 0;
	for (size_t i = 0; i < wc->nusers; i++)
		if (strcmp(wc->users[i].name, user) == 0) {
			hash = wc->users[i].hash;
			known = 1;
			break;
		}
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	if (!cd)
		return 0;
	const char *got = crypt_rn(password, hash, cd, sizeof(*cd));
	int ok = got && got[0] != '*' && same(got, hash);
	free(cd);
	return known && ok;
}
