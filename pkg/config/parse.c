/* parse.c: the configuration schema: `global` and `scrape_configs` as Prometheus's
 * config package defines them (fields, defaults, inheritance, validation and its
 * messages), the HTTP client settings of prometheus/common, static / file / http
 * service discovery, dns_sd_configs, kubernetes_sd_configs, relabel_configs, and conprof's per-job profiling_config with
 * its seven default profile types. Fields Prometheus knows but profd does not use
 * are accepted with a warning; fields that would change what is scraped and that
 * profd cannot honour (oauth2, other service discoveries, ...) are errors. */
#include "config_int.h"

#include <string.h>
#include <strings.h>

#include "profd/labels.h"
#include "profd/relabel.h"

/* ---- field lists ---------------------------------------------------------- */

static const char *const ignored_top[] = {"rule_files",  "alerting", "remote_write",
                                          "remote_read", "storage",  "tracing",
                                          "otlp",        "runtime",  NULL};

static const char *const ignored_global[] = {"evaluation_interval",
                                             "rule_query_offset",
                                             "query_log_file",
                                             "scrape_failure_log_file",
                                             "scrape_protocols",
                                             "sample_limit",
                                             "label_limit",
                                             "label_name_length_limit",
                                             "label_value_length_limit",
                                             "keep_dropped_targets",
                                             "metric_name_validation_scheme",
                                             "metric_name_escaping_scheme",
                                             "scrape_native_histograms",
                                             "always_scrape_classic_histograms",
                                             "convert_classic_histograms_to_nhcb",
                                             "extra_scrape_metrics",
                                             NULL};

static const char *const ignored_scrape[] = {"track_timestamps_staleness",
                                             "scrape_protocols",
                                             "fallback_scrape_protocol",
                                             "scrape_native_histograms",
                                             "always_scrape_classic_histograms",
                                             "convert_classic_histograms_to_nhcb",
                                             "scrape_failure_log_file",
                                             "enable_compression",
                                             "sample_limit",
                                             "label_limit",
                                             "label_name_length_limit",
                                             "label_value_length_limit",
                                             "native_histogram_bucket_limit",
                                             "native_histogram_min_bucket_factor",
                                             "keep_dropped_targets",
                                             "metric_name_validation_scheme",
                                             "metric_name_escaping_scheme",
                                             "extra_scrape_metrics",
                                             "metric_relabel_configs",
                                             NULL};

/* HTTP client fields that change the request and that profd cannot honour. */
static const char *const unsupported_http[] = {
    "oauth2", "http_headers", "proxy_from_environment", "proxy_connect_header", "no_proxy", NULL};

/* The seven profile types every job has unless turned off, as conprof has them. */
static const struct {
	const char *name;
	const char *path;
} builtin_profiles[] = {
    {"allocs", "/debug/pprof/allocs"},
    {"block", "/debug/pprof/block"},
    {"goroutine", "/debug/pprof/goroutine"},
    {"heap", "/debug/pprof/heap"},
    {"mutex", "/debug/pprof/mutex"},
    {"profile", "/debug/pprof/profile"},
    {"threadcreate", "/debug/pprof/threadcreate"},
};
#define NBUILTIN (sizeof(builtin_profiles) / sizeof(builtin_profiles[0]))

static int is(const struct cy_entry *e, const char *name)
{
	return strcmp(e->name, name) == 0;
}

static int listed(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(name, *list) == 0)
			return 1;
	return 0;
}

static int ignored(struct cfg_ctx *c, const struct cy_entry *e)
{
	return cy_warn(c, e->key,
	               "field %s is accepted for Prometheus compatibility and ignored "
	               "by profd",
	               e->name);
}

static int unsupported(struct cfg_ctx *c, const struct cy_entry *e, const char *where)
{
	return cy_err(c, e->key, "field %s%s%s is not supported by profd", where ? where : "",
	              where ? "." : "", e->name);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Go's utf8.ValidString. */
static int valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		int n;
		unsigned min;
		if (c < 0x80) {
			p++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			min = 0x80;
			c &= 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			min = 0x800;
			c &= 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			min = 0x10000;
			c &= 0x07;
		} else {
			return 0;
		}
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			c = (c << 6) | (p[i] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
		p += n + 1;
	}
	return 1;
}

/* ---- label sets ----------------------------------------------------------- */

/* A YAML map of label name -> value as a label set (*out NULL when empty).
 * expand: apply $VAR expansion to values (external_labels). */
static int parse_labels(struct cfg_ctx *c, yaml_node_t *n, int expand, struct pd_labels **out)
{
	struct cy_map m;
	struct pd_labels_builder *b = NULL;
	struct pd_err e = {0};
	int rc;

	*out = NULL;
	if ((rc = cy_map(c, n, "model.LabelSet", 0, &m)))
		return rc;
	if (m.n == 0)
		return 0;
	b = pd_labels_builder_create(NULL);
	if (!b)
		return cy_nomem(c);
	for (size_t i = 0; i < m.n; i++) {
		const char *v;
		if (!pd_labels_valid_name(m.e[i].name)) {
			rc = cy_err(c, m.e[i].key, "%s is not a valid label name",
			            cy_quote(c, m.e[i].name));
			goto out;
		}
		if ((rc = cy_str(c, m.e[i].val, &v)))
			goto out;
		if (!valid_utf8(v)) {
			rc = cy_err(c, m.e[i].val, "%s is not a valid label value", cy_quote(c, v));
			goto out;
		}
		if (expand && !(v = cfg_expand_env(c, v))) {
			rc = PD_ENOMEM;
			goto out;
		}
		pd_labels_builder_add(b, m.e[i].name, v);
	}
	if (pd_labels_builder_finish(b, out, &e)) {
		rc = cy_err(c, n, "%s", e.msg);
		goto out;
	}
	if (pd_labels_len(*out) == 0) {
		pd_labels_destroy(*out);
		*out = NULL;
	}
out:
	pd_labels_builder_destroy(b);
	return rc;
}

/* ---- HTTP client settings (prometheus/common HTTPClientConfig) ------------ */

struct http_src {
	yaml_node_t *node; /* the mapping they are inlined in */
	/* key nodes, for positions */
	yaml_node_t *k_basic_auth, *k_authorization, *k_bearer_token, *k_bearer_token_file;
	yaml_node_t *k_password_file, *k_credentials_file, *v_auth_type;
	int has_basic_auth, has_authorization;
	const char *ba_user, *ba_pass, *ba_pass_file;
	const char *auth_type, *auth_cred, *auth_cred_file;
	const char *bearer, *bearer_file;
	const char *ca_file, *cert_file, *key_file, *server_name;
	int insecure;
	const char *proxy_url;
	int follow_redirects;
};

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
		if (is(e, "username"))
			rc = cy_str(c, e->val, &h->ba_user);
		else if (is(e, "password"))
			rc = cy_str(c, e->val, &h->ba_pass);
		else if (is(e, "password_file")) {
			rc = cy_str(c, e->val, &h->ba_pass_file);
			h->k_password_file = e->key;
		} else if (is(e, "username_file") || is(e, "username_ref") || is(e, "password_ref"))
			rc = unsupported(c, e, "basic_auth");
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
		if (is(e, "type")) {
			rc = cy_str(c, e->val, &h->auth_type);
			h->v_auth_type = e->val;
		} else if (is(e, "credentials"))
			rc = cy_str(c, e->val, &h->auth_cred);
		else if (is(e, "credentials_file")) {
			rc = cy_str(c, e->val, &h->auth_cred_file);
			h->k_credentials_file = e->key;
		} else if (is(e, "credentials_ref"))
			rc = unsupported(c, e, "authorization");
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
		if (is(e, "ca_file"))
			rc = cy_str(c, e->val, &h->ca_file);
		else if (is(e, "cert_file"))
			rc = cy_str(c, e->val, &h->cert_file);
		else if (is(e, "key_file"))
			rc = cy_str(c, e->val, &h->key_file);
		else if (is(e, "server_name"))
			rc = cy_str(c, e->val, &h->server_name);
		else if (is(e, "insecure_skip_verify"))
			rc = cy_bool(c, e->val, &h->insecure);
		else if (listed(e->name, unsupported_tls))
			rc = unsupported(c, e, "tls_config");
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

static void http_src_init(struct http_src *h, yaml_node_t *node)
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
static int http_field(struct cfg_ctx *c, const struct cy_entry *e, struct http_src *h)
{
	int rc;
	if (is(e, "basic_auth")) {
		h->k_basic_auth = e->key;
		rc = parse_basic_auth(c, e->val, h);
	} else if (is(e, "authorization")) {
		h->k_authorization = e->key;
		rc = parse_authorization(c, e->val, h);
	} else if (is(e, "bearer_token")) {
		h->k_bearer_token = e->key;
		rc = cy_str(c, e->val, &h->bearer);
	} else if (is(e, "bearer_token_file")) {
		h->k_bearer_token_file = e->key;
		rc = cy_str(c, e->val, &h->bearer_file);
	} else if (is(e, "tls_config")) {
		rc = parse_tls(c, e->val, h);
	} else if (is(e, "follow_redirects")) {
		rc = cy_bool(c, e->val, &h->follow_redirects);
	} else if (is(e, "proxy_url")) {
		rc = cy_str(c, e->val, &h->proxy_url);
	} else if (is(e, "enable_http2")) {
		int dummy;
		rc = cy_bool(c, e->val, &dummy);
		if (rc == 0)
			rc = ignored(c, e);
	} else if (listed(e->name, unsupported_http)) {
		rc = unsupported(c, e, NULL);
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
static int http_finish(struct cfg_ctx *c, struct http_src *h, struct pd_http_client_config *out)
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

/* ---- service discovery ---------------------------------------------------- */

/* Per-job positions kept for the checks that run after the whole job is read. */
struct job_src {
	yaml_node_t *node, *job_name, *interval, *timeout;
	/* static targets, flattened in order, for checkStaticTargets */
	yaml_node_t **target_nodes;
	size_t ntarget_nodes, target_cap;
	/* relabel rule nodes */
	yaml_node_t **rule_nodes;
	/* profile types: per entry of sc->profiles, where it was configured */
	struct prof_src *prof;
};

struct prof_src {
	yaml_node_t *key;  /* the type's key in pprof_config, NULL for untouched defaults */
	yaml_node_t *path; /* value nodes, NULL when not given */
	yaml_node_t *seconds;
	int seconds_set;
};

static int push_target_node(struct cfg_ctx *c, struct job_src *js, yaml_node_t *n)
{
	if (js->ntarget_nodes == js->target_cap) {
		size_t ncap = js->target_cap ? 2 * js->target_cap : 16;
		yaml_node_t **v = cy_alloc(c, ncap, sizeof(*v));
		if (!v)
			return PD_ENOMEM;
		if (js->ntarget_nodes)
			memcpy(v, js->target_nodes, js->ntarget_nodes * sizeof(*v));
		js->target_nodes = v;
		js->target_cap = ncap;
	}
	js->target_nodes[js->ntarget_nodes++] = n;
	return 0;
}

static int parse_static_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc,
                                struct job_src *js)
{
	yaml_node_t **items;
	size_t k;
	int rc = cy_seq(c, n, "discovery.StaticConfig", &items, &k);
	if (rc || k == 0)
		return rc;
	sc->static_configs = cy_alloc(c, k, sizeof(*sc->static_configs));
	if (!sc->static_configs)
		return PD_ENOMEM;
	for (size_t i = 0; i < k; i++) {
		struct pd_discovery_static_config *st = &sc->static_configs[sc->nstatic_configs];
		struct cy_map m;
		yaml_node_t *targets = NULL;
		if (cy_is_null(items[i]))
			continue; /* a null group holds nothing */
		if ((rc = cy_map(c, items[i], "targetgroup.Group", 1, &m)))
			return rc;
		sc->nstatic_configs++;
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			if (is(&m.e[j], "targets")) {
				targets = m.e[j].val;
				rc = cy_strlist(c, targets, &st->targets, &st->ntargets);
			} else if (is(&m.e[j], "labels")) {
				rc = parse_labels(c, m.e[j].val, 0, &st->labels);
			} else {
				rc = cy_unknown(c, &m.e[j], "targetgroup.Group");
			}
		}
		if (rc)
			return rc;
		if (st->ntargets) {
			yaml_node_t **tn;
			size_t nt;
			if ((rc = cy_seq(c, targets, "[]string", &tn, &nt)))
				return rc;
			for (size_t j = 0; j < nt; j++)
				if ((rc = push_target_node(c, js, tn[j])))
					return rc;
		}
	}
	return 0;
}

/* Prometheus's patFileSDName: ^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$ */
static int valid_file_sd_name(const char *s)
{
	static const char *const ext[] = {".json", ".yml", ".yaml", ".JSON", ".YML", ".YAML", NULL};
	int ok = 0;
	for (size_t i = 0; ext[i]; i++)
		if (ends_with(s, ext[i]))
			ok = 1;
	if (!ok)
		return 0;
	const char *star = strchr(s, '*');
	return !star || !strchr(star, '/');
}

static int parse_file_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc)
{
	yaml_node_t **items;
	size_t k;
	int rc = cy_seq(c, n, "[]*file.SDConfig", &items, &k);
	if (rc || k == 0)
		return rc;
	sc->file_sd_configs = cy_alloc(c, k, sizeof(*sc->file_sd_configs));
	if (!sc->file_sd_configs)
		return PD_ENOMEM;
	for (size_t i = 0; i < k; i++) {
		struct pd_discovery_file_config *f = &sc->file_sd_configs[sc->nfile_sd_configs++];
		struct cy_map m;
		yaml_node_t *files = NULL;
		if ((rc = cy_map(c, items[i], "file.SDConfig", 1, &m)))
			return rc;
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			if (is(&m.e[j], "files")) {
				files = m.e[j].val;
				rc = cy_strlist(c, files, &f->files, &f->nfiles);
			} else if (is(&m.e[j], "refresh_interval")) {
				rc = cy_duration(c, m.e[j].val, &f->refresh_interval_ms);
			} else {
				rc = cy_unknown(c, &m.e[j], "file.SDConfig");
			}
		}
		if (rc)
			return rc;
		if (f->refresh_interval_ms <= 0)
			f->refresh_interval_ms = PD_CONFIG_DEFAULT_FILE_SD_REFRESH_MS;
		if (f->nfiles == 0)
			return cy_err(c, items[i],
			              "file service discovery config must contain at "
			              "least one path name");
		yaml_node_t **fn;
		size_t nf;
		if ((rc = cy_seq(c, files, "[]string", &fn, &nf)))
			return rc;
		for (size_t j = 0; j < f->nfiles; j++) {
			if (!valid_file_sd_name(f->files[j]))
				return cy_err(c, fn[j],
				              "path name %s is not valid for file discovery",
				              cy_quote(c, f->files[j]));
			f->files[j] = cy_path(c, f->files[j]);
		}
	}
	return 0;
}

/* Go's url.Parse, as far as http_sd's checks need it: the scheme (lower-cased) and
 * whether there is a host. */
static void url_scheme_host(const char *u, char *scheme, size_t ssize, int *has_host)
{
	size_t i = 0;
	scheme[0] = '\0';
	*has_host = 0;
	if ((u[0] >= 'a' && u[0] <= 'z') || (u[0] >= 'A' && u[0] <= 'Z')) {
		while ((u[i] >= 'a' && u[i] <= 'z') || (u[i] >= 'A' && u[i] <= 'Z') ||
		       (u[i] >= '0' && u[i] <= '9') || u[i] == '+' || u[i] == '-' || u[i] == '.')
			i++;
		if (u[i] == ':') {
			size_t n = i < ssize - 1 ? i : ssize - 1;
			for (size_t j = 0; j < n; j++)
				scheme[j] = (char)(u[j] >= 'A' && u[j] <= 'Z' ? u[j] + 32 : u[j]);
			scheme[n] = '\0';
			u += i + 1;
		}
	}
	if (scheme[0] && u[0] == '/' && u[1] == '/') {
		u += 2;
		const char *end = u + strcspn(u, "/?#");
		const char *at = NULL;
		for (const char *p = u; p < end; p++)
			if (*p == '@')
				at = p;
		if (at)
			u = at + 1;
		*has_host = end > u;
	}
}

static int parse_http_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc)
{
	yaml_node_t **items;
	size_t k;
	int rc = cy_seq(c, n, "[]*http.SDConfig", &items, &k);
	if (rc || k == 0)
		return rc;
	sc->http_sd_configs = cy_alloc(c, k, sizeof(*sc->http_sd_configs));
	if (!sc->http_sd_configs)
		return PD_ENOMEM;
	for (size_t i = 0; i < k; i++) {
		struct pd_discovery_http_config *hc = &sc->http_sd_configs[sc->nhttp_sd_configs++];
		struct cy_map m;
		struct http_src h;
		yaml_node_t *url = NULL;
		http_src_init(&h, items[i]);
		hc->url = "";
		if ((rc = cy_map(c, items[i], "http.SDConfig", 1, &m)))
			return rc;
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			struct cy_entry *e = &m.e[j];
			if (is(e, "url")) {
				url = e->val;
				rc = cy_str(c, e->val, &hc->url);
			} else if (is(e, "refresh_interval")) {
				rc = cy_duration(c, e->val, &hc->refresh_interval_ms);
			} else if ((rc = http_field(c, e, &h)) != 0) {
				rc = rc > 0 ? 0 : rc;
			} else {
				rc = cy_unknown(c, e, "http.SDConfig");
			}
		}
		if (rc)
			return rc;
		if (hc->refresh_interval_ms <= 0)
			hc->refresh_interval_ms = PD_CONFIG_DEFAULT_HTTP_SD_REFRESH_MS;
		yaml_node_t *at = url ? url : items[i];
		if (!*hc->url)
			return cy_err(c, at, "URL is missing");
		char scheme[16];
		int has_host;
		url_scheme_host(hc->url, scheme, sizeof(scheme), &has_host);
		if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
			return cy_err(c, at, "URL scheme must be 'http' or 'https'");
		if (!has_host)
			return cy_err(c, at, "host is missing in URL");
		struct pd_http_client_config *client = cy_alloc(c, 1, sizeof(*client));
		if (!client)
			return PD_ENOMEM;
		if ((rc = http_finish(c, &h, client)))
			return rc;
		/* refused here too, so that check config says what run would */
		if (client->tls_server_name && *client->tls_server_name)
			return cy_err(c, items[i],
			              "tls_config.server_name is not supported for http_sd_configs");
		hc->client = client;
	}
	return 0;
}

/* dns.SDConfig: names, type, port, refresh_interval, with Prometheus's checks
 * (UnmarshalYAML) reported at the entry. */
static int parse_dns_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc)
{
	yaml_node_t **items;
	size_t k;
	int rc = cy_seq(c, n, "[]*dns.SDConfig", &items, &k);
	if (rc || k == 0)
		return rc;
	sc->dns_sd_configs = cy_alloc(c, k, sizeof(*sc->dns_sd_configs));
	if (!sc->dns_sd_configs)
		return PD_ENOMEM;
	for (size_t i = 0; i < k; i++) {
		struct pd_discovery_dns_config *d = &sc->dns_sd_configs[sc->ndns_sd_configs++];
		struct pd_err e = {0};
		struct cy_map m;
		d->type = "SRV";
		if ((rc = cy_map(c, items[i], "dns.SDConfig", 1, &m)))
			return rc;
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			struct cy_entry *f = &m.e[j];
			if (is(f, "names"))
				rc = cy_strlist(c, f->val, &d->names, &d->nnames);
			else if (is(f, "type"))
				rc = cy_str(c, f->val, &d->type);
			else if (is(f, "port"))
				rc = cy_int(c, f->val, &d->port);
			else if (is(f, "refresh_interval"))
				rc = cy_duration(c, f->val, &d->refresh_interval_ms);
			else
				rc = cy_unknown(c, f, "dns.SDConfig");
		}
		if (rc)
			return rc;
		if (d->refresh_interval_ms <= 0)
			d->refresh_interval_ms = PD_CONFIG_DEFAULT_DNS_SD_REFRESH_MS;
		if (pd_discovery_dns_validate(d, &e))
			return cy_err(c, items[i], "%s", e.msg);
	}
	return 0;
}

/* kubernetes.SDConfig: role, api_server, kubeconfig_file, namespaces, selectors,
 * attach_metadata and the inlined HTTP client settings, with Prometheus's checks
 * (UnmarshalYAML) reported at the entry and an unknown role at its value. */
static int parse_k8s_selectors(struct cfg_ctx *c, yaml_node_t *n,
                               struct pd_discovery_kubernetes_config *k)
{
	yaml_node_t **items;
	size_t cnt;
	int rc = cy_seq(c, n, "[]kubernetes.SelectorConfig", &items, &cnt);
	if (rc || cnt == 0)
		return rc;
	struct pd_discovery_k8s_selector *sel = cy_alloc(c, cnt, sizeof(*sel));
	if (!sel)
		return PD_ENOMEM;
	for (size_t i = 0; i < cnt; i++) {
		struct cy_map m;
		if ((rc = cy_map(c, items[i], "kubernetes.SelectorConfig", 1, &m)))
			return rc;
		sel[i].role = "";
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			struct cy_entry *f = &m.e[j];
			if (is(f, "role")) {
				rc = cy_str(c, f->val, &sel[i].role);
				if (!rc && pd_discovery_k8s_role_parse(sel[i].role) < 0)
					rc = cy_err(c, f->val, "unknown Kubernetes SD role %s",
					            cy_quote(c, sel[i].role));
			} else if (is(f, "label"))
				rc = cy_str(c, f->val, &sel[i].label);
			else if (is(f, "field"))
				rc = cy_str(c, f->val, &sel[i].field);
			else
				rc = cy_unknown(c, f, "kubernetes.SelectorConfig");
		}
		if (rc)
			return rc;
		if (!*sel[i].role)
			return cy_err(c, items[i], "unknown Kubernetes SD role \"\"");
	}
	k->selectors = sel;
	k->nselectors = cnt;
	return 0;
}

static int parse_k8s_namespaces(struct cfg_ctx *c, yaml_node_t *n,
                                struct pd_discovery_kubernetes_config *k)
{
	struct cy_map m;
	int rc;
	if (cy_is_null(n))
		return 0;
	if ((rc = cy_map(c, n, "kubernetes.NamespaceDiscovery", 1, &m)))
		return rc;
	for (size_t j = 0; j < m.n && rc == 0; j++) {
		struct cy_entry *f = &m.e[j];
		if (is(f, "own_namespace"))
			rc = cy_bool(c, f->val, &k->own_namespace);
		else if (is(f, "names"))
			rc = cy_strlist(c, f->val, &k->namespaces, &k->nnamespaces);
		else
			rc = cy_unknown(c, f, "kubernetes.NamespaceDiscovery");
	}
	return rc;
}

static int parse_k8s_attach(struct cfg_ctx *c, yaml_node_t *n,
                            struct pd_discovery_kubernetes_config *k)
{
	struct cy_map m;
	int rc;
	if (cy_is_null(n))
		return 0;
	if ((rc = cy_map(c, n, "kubernetes.AttachMetadataConfig", 1, &m)))
		return rc;
	for (size_t j = 0; j < m.n && rc == 0; j++) {
		struct cy_entry *f = &m.e[j];
		if (is(f, "node"))
			rc = cy_bool(c, f->val, &k->attach_node);
		else if (is(f, "namespace"))
			rc = cy_bool(c, f->val, &k->attach_namespace);
		else
			rc = cy_unknown(c, f, "kubernetes.AttachMetadataConfig");
	}
	return rc;
}

static int parse_kubernetes_sd_configs(struct cfg_ctx *c, yaml_node_t *n,
                                       struct pd_scrape_config *sc)
{
	yaml_node_t **items;
	size_t cnt;
	int rc = cy_seq(c, n, "[]*kubernetes.SDConfig", &items, &cnt);
	if (rc || cnt == 0)
		return rc;
	sc->kubernetes_sd_configs = cy_alloc(c, cnt, sizeof(*sc->kubernetes_sd_configs));
	if (!sc->kubernetes_sd_configs)
		return PD_ENOMEM;
	for (size_t i = 0; i < cnt; i++) {
		struct pd_discovery_kubernetes_config *k =
		    &sc->kubernetes_sd_configs[sc->nkubernetes_sd_configs++];
		struct pd_err e = {0};
		struct http_src h;
		struct cy_map m;
		http_src_init(&h, items[i]);
		k->role = "";
		if ((rc = cy_map(c, items[i], "kubernetes.SDConfig", 1, &m)))
			return rc;
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			struct cy_entry *f = &m.e[j];
			if (is(f, "role")) {
				rc = cy_str(c, f->val, &k->role);
				if (!rc && *k->role && pd_discovery_k8s_role_parse(k->role) < 0)
					rc = cy_err(c, f->val, "unknown Kubernetes SD role %s",
					            cy_quote(c, k->role));
			} else if (is(f, "api_server")) {
				rc = cy_str(c, f->val, &k->api_server);
			} else if (is(f, "kubeconfig_file")) {
				rc = cy_str(c, f->val, &k->kubeconfig_file);
			} else if (is(f, "namespaces")) {
				rc = parse_k8s_namespaces(c, f->val, k);
			} else if (is(f, "selectors")) {
				rc = parse_k8s_selectors(c, f->val, k);
			} else if (is(f, "attach_metadata")) {
				rc = parse_k8s_attach(c, f->val, k);
			} else if ((rc = http_field(c, f, &h)) != 0) {
				rc = rc > 0 ? 0 : rc;
			} else {
				rc = cy_unknown(c, f, "kubernetes.SDConfig");
			}
		}
		if (rc)
			return rc;
		if (k->api_server && !*k->api_server)
			k->api_server = NULL;
		if (k->kubeconfig_file && !*k->kubeconfig_file)
			k->kubeconfig_file = NULL;
		else if (k->kubeconfig_file && !(k->kubeconfig_file = cy_path(c, k->kubeconfig_file)))
			return PD_ENOMEM;
		struct pd_http_client_config *client = cy_alloc(c, 1, sizeof(*client));
		if (!client)
			return PD_ENOMEM;
		if ((rc = http_finish(c, &h, client)))
			return rc;
		k->client = client;
		if (pd_discovery_kubernetes_validate(k, &e))
			return cy_err(c, items[i], "%s", e.msg);
	}
	return 0;
}

/* ---- relabel_configs ------------------------------------------------------ */

static int parse_relabel_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc,
                                 struct job_src *js)
{
	yaml_node_t **items;
	size_t k;
	int rc = cy_seq(c, n, "[]*relabel.Config", &items, &k);
	if (rc || k == 0)
		return rc;
	sc->relabel_configs = cy_alloc(c, k, sizeof(*sc->relabel_configs));
	if (!sc->relabel_configs)
		return PD_ENOMEM;
	js->rule_nodes = items;
	for (size_t i = 0; i < k; i++) {
		struct pd_relabel_rule_config *r = &sc->relabel_configs[sc->nrelabel_configs++];
		struct cy_map m;
		r->action = -1;
		if (cy_is_null(items[i]))
			return cy_err(c, items[i],
			              "empty or null target relabeling rule in scrape config");
		if ((rc = cy_map(c, items[i], "relabel.Config", 1, &m)))
			return rc;
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			struct cy_entry *e = &m.e[j];
			if (is(e, "source_labels")) {
				rc = cy_strlist(c, e->val, &r->source_labels, &r->nsource_labels);
				yaml_node_t **ln;
				size_t nl;
				if (rc == 0 && (rc = cy_seq(c, e->val, "[]string", &ln, &nl)) == 0)
					for (size_t l = 0; l < nl && rc == 0; l++)
						if (!pd_labels_valid_name(r->source_labels[l]))
							rc = cy_err(
							    c, ln[l],
							    "%s is not a valid label name",
							    cy_quote(c, r->source_labels[l]));
			} else if (is(e, "separator")) {
				rc = cy_str(c, e->val, &r->separator);
			} else if (is(e, "target_label")) {
				rc = cy_str(c, e->val, &r->target_label);
			} else if (is(e, "regex")) {
				rc = cy_str(c, e->val, &r->regex);
			} else if (is(e, "modulus")) {
				rc = cy_uint64(c, e->val, &r->modulus);
				r->has_modulus = 1;
			} else if (is(e, "replacement")) {
				rc = cy_str(c, e->val, &r->replacement);
			} else if (is(e, "action")) {
				const char *a;
				if ((rc = cy_str(c, e->val, &a)))
					break;
				if (!*a) {
					rc = cy_err(c, e->val, "relabel action cannot be empty");
					break;
				}
				r->action = pd_relabel_action_parse(a);
				if (r->action < 0)
					rc = cy_err(c, e->val, "unknown relabel action %s",
					            cy_quote(c, a));
			} else {
				rc = cy_unknown(c, e, "relabel.Config");
			}
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* Builds the job's rule set; on failure the message is the rule set's and the
 * position that of the first rule that fails on its own. */
static int build_relabel(struct cfg_ctx *c, struct pd_scrape_config *sc, struct job_src *js)
{
	struct pd_err e = {0};
	if (pd_relabel_rules_build(&sc->relabel_rules, sc->relabel_configs, sc->nrelabel_configs,
	                           &e) == 0)
		return 0;
	sc->relabel_rules = NULL;
	yaml_node_t *at = js->node;
	for (size_t i = 0; i < sc->nrelabel_configs; i++) {
		struct pd_relabel_rules *one = NULL;
		struct pd_err e1 = {0};
		if (pd_relabel_rules_build(&one, &sc->relabel_configs[i], 1, &e1) != 0) {
			at = js->rule_nodes[i];
			break;
		}
		pd_relabel_rules_destroy(one);
	}
	if (e.code == PD_ENOMEM)
		return cy_nomem(c);
	return cy_err(c, at, "%s", e.msg);
}

/* ---- params --------------------------------------------------------------- */

static int parse_params(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc)
{
	struct cy_map m;
	int rc = cy_map(c, n, "url.Values", 0, &m);
	if (rc || m.n == 0)
		return rc;
	sc->params = cy_alloc(c, m.n, sizeof(*sc->params));
	if (!sc->params)
		return PD_ENOMEM;
	for (size_t i = 0; i < m.n; i++) {
		struct pd_config_param *p = &sc->params[sc->nparams++];
		if (!(p->name = cy_strdup(c, m.e[i].name)))
			return PD_ENOMEM;
		if ((rc = cy_strlist(c, m.e[i].val, &p->values, &p->nvalues)))
			return rc;
	}
	return 0;
}

/* ---- profiling_config ----------------------------------------------------- */

static int parse_profile_entry(struct cfg_ctx *c, struct cy_entry *e, struct pd_profile_config *p,
                               struct prof_src *ps)
{
	struct cy_map m;
	int rc = cy_map(c, e->val, "config.PprofProfilingConfig", 1, &m);
	ps->key = e->key;
	for (size_t j = 0; j < m.n && rc == 0; j++) {
		struct cy_entry *f = &m.e[j];
		if (is(f, "enabled")) {
			/* `enabled:` with no value leaves the default, as conprof's *bool */
			if (!cy_is_null(f->val))
				rc = cy_bool(c, f->val, &p->enabled);
		} else if (is(f, "path")) {
			if (!cy_is_null(f->val)) {
				rc = cy_str(c, f->val, &p->path);
				ps->path = f->val;
			}
		} else if (is(f, "seconds")) {
			if (!cy_is_null(f->val)) {
				rc = cy_int(c, f->val, &p->seconds);
				ps->seconds = f->val;
				ps->seconds_set = 1;
			}
		} else if (is(f, "delta")) {
			rc = cy_bool(c, f->val, &p->delta);
		} else {
			rc = cy_unknown(c, f, "config.PprofProfilingConfig");
		}
	}
	return rc;
}

static int parse_profiling(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc,
                           struct job_src *js)
{
	struct cy_map m, pm = {0};
	int rc = cy_map(c, n, "config.ProfilingConfig", 1, &m);
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		if (is(&m.e[i], "pprof_config"))
			rc = cy_map(c, m.e[i].val, "config.PprofConfig", 0, &pm);
		else
			rc = cy_unknown(c, &m.e[i], "config.ProfilingConfig");
	}
	if (rc)
		return rc;
	/* custom types come after the seven defaults, in file order */
	size_t ncustom = 0;
	for (size_t i = 0; i < pm.n; i++) {
		int builtin = 0;
		for (size_t b = 0; b < NBUILTIN; b++)
			builtin |= strcmp(pm.e[i].name, builtin_profiles[b].name) == 0;
		ncustom += !builtin;
	}
	sc->profiles = cy_alloc(c, NBUILTIN + ncustom, sizeof(*sc->profiles));
	js->prof = cy_alloc(c, NBUILTIN + ncustom, sizeof(*js->prof));
	if (!sc->profiles || !js->prof)
		return PD_ENOMEM;
	for (size_t b = 0; b < NBUILTIN; b++) {
		struct pd_profile_config *p = &sc->profiles[b];
		p->name = builtin_profiles[b].name;
		p->path = builtin_profiles[b].path;
		p->enabled = 1;
		p->builtin = 1;
	}
	sc->nprofiles = NBUILTIN;
	for (size_t i = 0; i < pm.n; i++) {
		struct cy_entry *e = &pm.e[i];
		size_t idx = sc->nprofiles;
		for (size_t b = 0; b < NBUILTIN; b++)
			if (strcmp(e->name, builtin_profiles[b].name) == 0)
				idx = b;
		if (idx == sc->nprofiles) {
			if (!pd_labels_valid_metric_name(e->name))
				return cy_err(
				    c, e->key,
				    "invalid profile type name %s: it becomes the series' "
				    "__name__ and must be a valid metric name",
				    cy_quote(c, e->name));
			struct pd_profile_config *p = &sc->profiles[sc->nprofiles++];
			if (!(p->name = cy_strdup(c, e->name)))
				return PD_ENOMEM;
			p->enabled = 1;
		}
		if ((rc = parse_profile_entry(c, e, &sc->profiles[idx], &js->prof[idx])))
			return rc;
	}
	return 0;
}

/* Profile types of a job without profiling_config: the seven defaults. */
static int default_profiles(struct cfg_ctx *c, struct pd_scrape_config *sc, struct job_src *js)
{
	return parse_profiling(c, NULL, sc, js);
}

/* Fills in default seconds and checks every profile type against the job. */
static int finish_profiles(struct cfg_ctx *c, struct pd_scrape_config *sc, struct job_src *js)
{
	char tbuf[64];
	pd_config_format_duration(sc->scrape_timeout_ms, tbuf, sizeof(tbuf));
	for (size_t i = 0; i < sc->nprofiles; i++) {
		struct pd_profile_config *p = &sc->profiles[i];
		struct prof_src *ps = &js->prof[i];
		int timed = strcmp(p->name, "profile") == 0 || p->delta;
		yaml_node_t *at = ps->key ? ps->key : js->node;

		if (p->path && p->path[0] != '/')
			return cy_err(c, ps->path ? ps->path : at,
			              "path %s of profile type %s must start with \"/\"",
			              cy_quote(c, p->path), cy_quote(c, p->name));
		if (!p->enabled)
			continue;
		if (!p->path)
			return cy_err(
			    c, at,
			    "profile type %s needs a path: only allocs, block, goroutine, "
			    "heap, mutex, profile and threadcreate have a default",
			    cy_quote(c, p->name));
		if (ps->seconds_set && p->seconds < 0)
			return cy_err(c, ps->seconds,
			              "seconds of profile type %s must not be negative",
			              cy_quote(c, p->name));
		if (ps->seconds_set && timed && p->seconds == 0)
			return cy_err(c, ps->seconds,
			              "seconds of profile type %s must be at least 1 (%s)",
			              cy_quote(c, p->name),
			              p->delta ? "a delta profile covers that many seconds"
			                       : "the CPU profile records that many seconds");
		if (!ps->seconds_set && timed) {
			p->seconds = pd_config_default_profile_seconds(sc->scrape_timeout_ms);
			if (p->seconds * 1000 >= sc->scrape_timeout_ms)
				return cy_err(
				    c, js->timeout ? js->timeout : js->node,
				    "scrape timeout %s of scrape config with job name %s "
				    "is too short for profile type %s, which records for "
				    "at least 1s and must finish within the timeout: raise "
				    "scrape_timeout or set enabled: false",
				    tbuf, cy_quote(c, sc->job_name), cy_quote(c, p->name));
		}
		if (p->seconds > 0 &&
		    (p->seconds > INT64_MAX / 1000 || p->seconds * 1000 >= sc->scrape_timeout_ms))
			return cy_err(c, ps->seconds ? ps->seconds : at,
			              "seconds (%lld) of profile type %s must be less than the "
			              "scrape timeout (%s) of scrape config with job name %s",
			              (long long)p->seconds, cy_quote(c, p->name), tbuf,
			              cy_quote(c, sc->job_name));
	}
	return 0;
}

/* ---- scrape_configs ------------------------------------------------------- */

static int parse_scrape(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc,
                        struct job_src *js)
{
	struct cy_map m;
	struct http_src h;
	yaml_node_t *scheme = NULL;
	int has_profiling = 0;
	int64_t body = 0;
	int rc;

	js->node = n;
	sc->job_name = "";
	sc->honor_timestamps = 1;
	http_src_init(&h, n);
	if ((rc = cy_map(c, n, "config.ScrapeConfig", 1, &m)))
		return rc;
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (is(e, "job_name")) {
			js->job_name = e->val;
			rc = cy_str(c, e->val, &sc->job_name);
		} else if (is(e, "honor_labels")) {
			rc = cy_bool(c, e->val, &sc->honor_labels);
		} else if (is(e, "honor_timestamps")) {
			rc = cy_bool(c, e->val, &sc->honor_timestamps);
		} else if (is(e, "params")) {
			rc = parse_params(c, e->val, sc);
		} else if (is(e, "scrape_interval")) {
			js->interval = e->val;
			rc = cy_duration(c, e->val, &sc->scrape_interval_ms);
		} else if (is(e, "scrape_timeout")) {
			js->timeout = e->val;
			rc = cy_duration(c, e->val, &sc->scrape_timeout_ms);
		} else if (is(e, "metrics_path")) {
			rc = cy_str(c, e->val, &sc->metrics_path);
		} else if (is(e, "scheme")) {
			scheme = e->val;
			rc = cy_str(c, e->val, &sc->scheme);
		} else if (is(e, "body_size_limit")) {
			rc = cy_size(c, e->val, &body);
		} else if (is(e, "target_limit")) {
			rc = cy_uint64(c, e->val, &sc->target_limit);
		} else if (is(e, "tenant")) {
			if ((rc = cy_str(c, e->val, &sc->tenant)) == 0) {
				struct pd_err te = {0};
				if (pd_config_tenant_check(sc->tenant, strlen(sc->tenant), &te))
					rc = cy_err(c, e->val, "tenant: %s", te.msg);
			}
		} else if (is(e, "static_configs")) {
			rc = parse_static_configs(c, e->val, sc, js);
		} else if (is(e, "file_sd_configs")) {
			rc = parse_file_sd_configs(c, e->val, sc);
		} else if (is(e, "http_sd_configs")) {
			rc = parse_http_sd_configs(c, e->val, sc);
		} else if (is(e, "dns_sd_configs")) {
			rc = parse_dns_sd_configs(c, e->val, sc);
		} else if (is(e, "kubernetes_sd_configs")) {
			rc = parse_kubernetes_sd_configs(c, e->val, sc);
		} else if (is(e, "relabel_configs")) {
			rc = parse_relabel_configs(c, e->val, sc, js);
		} else if (is(e, "profiling_config")) {
			has_profiling = 1;
			rc = parse_profiling(c, e->val, sc, js);
		} else if ((rc = http_field(c, e, &h)) != 0) {
			rc = rc > 0 ? 0 : rc;
		} else if (ends_with(e->name, "_sd_configs")) {
			rc = cy_err(c, e->key,
			            "%s is not supported by profd (service discovery: "
			            "static_configs, file_sd_configs, http_sd_configs, "
			            "dns_sd_configs, kubernetes_sd_configs)",
			            e->name);
		} else if (listed(e->name, ignored_scrape)) {
			rc = ignored(c, e);
		} else {
			rc = cy_unknown(c, e, "config.ScrapeConfig");
		}
	}
	if (rc)
		return rc;
	if (!has_profiling && (rc = default_profiles(c, sc, js)))
		return rc;
	if (!*sc->job_name)
		return cy_err(c, js->job_name ? js->job_name : n, "job_name is empty");
	if ((rc = http_finish(c, &h, &sc->http_client)))
		return rc;
	/* checkStaticTargets: URLs in static targets, unless relabeling may fix them */
	if (sc->nrelabel_configs == 0) {
		size_t t = 0;
		for (size_t i = 0; i < sc->nstatic_configs; i++)
			for (size_t j = 0; j < sc->static_configs[i].ntargets; j++, t++)
				if (strchr(sc->static_configs[i].targets[j], '/'))
					return cy_err(
					    c, t < js->ntarget_nodes ? js->target_nodes[t] : n,
					    "%s is not a valid hostname",
					    cy_quote(c, sc->static_configs[i].targets[j]));
	}
	if ((rc = build_relabel(c, sc, js)))
		return rc;
	if (!sc->scheme || !*sc->scheme)
		sc->scheme = "http";
	if (strcmp(sc->scheme, "http") != 0 && strcmp(sc->scheme, "https") != 0)
		return cy_err(c, scheme ? scheme : n,
		              "scheme %s of scrape config with job name %s is not supported: use "
		              "\"http\" or \"https\"",
		              cy_quote(c, sc->scheme), cy_quote(c, sc->job_name));
	if (!sc->metrics_path || !*sc->metrics_path)
		sc->metrics_path = "/metrics";
	sc->body_size_limit = body > 0 ? (size_t)body : 0;
	return 0;
}

/* ScrapeConfig.Validate: inherit from global, then check. */
static int validate_scrape(struct cfg_ctx *c, struct pd_scrape_config *sc, struct job_src *js)
{
	const struct pd_config_global *g = &c->cfg->global;
	if (sc->scrape_interval_ms == 0)
		sc->scrape_interval_ms = g->scrape_interval_ms;
	if (sc->scrape_timeout_ms > sc->scrape_interval_ms)
		return cy_err(
		    c, js->timeout ? js->timeout : js->node,
		    "scrape timeout greater than scrape interval for scrape config with job "
		    "name %s",
		    cy_quote(c, sc->job_name));
	if (sc->scrape_timeout_ms == 0)
		sc->scrape_timeout_ms = g->scrape_timeout_ms < sc->scrape_interval_ms
		                            ? g->scrape_timeout_ms
		                            : sc->scrape_interval_ms;
	if (sc->body_size_limit == 0)
		sc->body_size_limit = g->body_size_limit;
	if (sc->target_limit == 0)
		sc->target_limit = g->target_limit;
	if (!sc->tenant)
		sc->tenant = PD_TENANT_DEFAULT;
	return finish_profiles(c, sc, js);
}

/* ---- global --------------------------------------------------------------- */

static int parse_global(struct cfg_ctx *c, yaml_node_t *n)
{
	struct pd_config_global *g = &c->cfg->global;
	struct cy_map m;
	yaml_node_t *timeout = NULL;
	int64_t body = 0;
	int rc = cy_map(c, n, "config.GlobalConfig", 1, &m);
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (is(e, "scrape_interval")) {
			rc = cy_duration(c, e->val, &g->scrape_interval_ms);
		} else if (is(e, "scrape_timeout")) {
			timeout = e->val;
			rc = cy_duration(c, e->val, &g->scrape_timeout_ms);
		} else if (is(e, "external_labels")) {
			rc = parse_labels(c, e->val, 1, &g->external_labels);
		} else if (is(e, "body_size_limit")) {
			rc = cy_size(c, e->val, &body);
		} else if (is(e, "target_limit")) {
			rc = cy_uint64(c, e->val, &g->target_limit);
		} else if (listed(e->name, ignored_global)) {
			rc = ignored(c, e);
		} else {
			rc = cy_unknown(c, e, "config.GlobalConfig");
		}
	}
	if (rc)
		return rc;
	if (g->scrape_interval_ms == 0)
		g->scrape_interval_ms = PD_CONFIG_DEFAULT_SCRAPE_INTERVAL_MS;
	if (g->scrape_timeout_ms > g->scrape_interval_ms)
		return cy_err(c, timeout, "global scrape timeout greater than scrape interval");
	if (g->scrape_timeout_ms == 0)
		g->scrape_timeout_ms = PD_CONFIG_DEFAULT_SCRAPE_TIMEOUT_MS < g->scrape_interval_ms
		                           ? PD_CONFIG_DEFAULT_SCRAPE_TIMEOUT_MS
		                           : g->scrape_interval_ms;
	g->body_size_limit = body > 0 ? (size_t)body : 0;
	return 0;
}

/* ---- the document --------------------------------------------------------- */

int cfg_parse_root(struct cfg_ctx *c, yaml_node_t *root)
{
	struct pd_config *cfg = c->cfg;
	struct cy_map m;
	yaml_node_t *global = NULL, *scrapes = NULL;
	int rc = cy_map(c, root, "config.Config", 1, &m);

	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (is(e, "global"))
			global = e->val;
		else if (is(e, "scrape_configs"))
			scrapes = e->val;
		else if (is(e, "scrape_config_files"))
			rc = unsupported(c, e, NULL);
		else if (listed(e->name, ignored_top))
			rc = ignored(c, e);
		else
			rc = cy_unknown(c, e, "config.Config");
	}
	if (rc || (rc = parse_global(c, global)))
		return rc;

	yaml_node_t **items;
	size_t k;
	if ((rc = cy_seq(c, scrapes, "[]*config.ScrapeConfig", &items, &k)) || k == 0)
		return rc;
	cfg->scrape_configs = cy_alloc(c, k, sizeof(*cfg->scrape_configs));
	struct job_src *js = cy_alloc(c, k, sizeof(*js));
	if (!cfg->scrape_configs || !js)
		return PD_ENOMEM;
	for (size_t i = 0; i < k; i++) {
		if (cy_is_null(items[i]))
			return cy_err(c, items[i], "empty or null scrape config section");
		cfg->nscrape_configs = i + 1;
		if ((rc = parse_scrape(c, items[i], &cfg->scrape_configs[i], &js[i])))
			return rc;
	}
	for (size_t i = 0; i < k; i++) {
		struct pd_scrape_config *sc = &cfg->scrape_configs[i];
		if ((rc = validate_scrape(c, sc, &js[i])))
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(cfg->scrape_configs[j].job_name, sc->job_name) == 0)
				return cy_err(c, js[i].job_name ? js[i].job_name : js[i].node,
				              "found multiple scrape configs with job name %s",
				              cy_quote(c, sc->job_name));
	}
	return 0;
}
