/* parse_sd.c: a scrape job's service discovery: static_configs, file_sd_configs,
 * http_sd_configs, dns_sd_configs and kubernetes_sd_configs, as Prometheus's
 * discovery packages read and check them. */
#include "config_int.h"

#include <string.h>

/* ---- service discovery ---------------------------------------------------- */

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

int cfg_parse_static_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc,
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
			if (cfg_is(&m.e[j], "targets")) {
				targets = m.e[j].val;
				rc = cy_strlist(c, targets, &st->targets, &st->ntargets);
			} else if (cfg_is(&m.e[j], "labels")) {
				rc = cfg_parse_labels(c, m.e[j].val, 0, &st->labels);
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
		if (cfg_ends_with(s, ext[i]))
			ok = 1;
	if (!ok)
		return 0;
	const char *star = strchr(s, '*');
	return !star || !strchr(star, '/');
}

int cfg_parse_file_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc)
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
			if (cfg_is(&m.e[j], "files")) {
				files = m.e[j].val;
				rc = cy_strlist(c, files, &f->files, &f->nfiles);
			} else if (cfg_is(&m.e[j], "refresh_interval")) {
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

int cfg_parse_http_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc)
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
		cfg_http_src_init(&h, items[i]);
		hc->url = "";
		if ((rc = cy_map(c, items[i], "http.SDConfig", 1, &m)))
			return rc;
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			struct cy_entry *e = &m.e[j];
			if (cfg_is(e, "url")) {
				url = e->val;
				rc = cy_str(c, e->val, &hc->url);
			} else if (cfg_is(e, "refresh_interval")) {
				rc = cy_duration(c, e->val, &hc->refresh_interval_ms);
			} else if ((rc = cfg_http_field(c, e, &h)) != 0) {
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
		if ((rc = cfg_http_finish(c, &h, client)))
			return rc;
		/* refused here too, so that check config says what run would */
		if (client->tls_server_name && *client->tls_server_name)
			return cy_err(
			    c, items[i],
			    "tls_config.server_name is not supported for http_sd_configs");
		hc->client = client;
	}
	return 0;
}

/* dns.SDConfig: names, type, port, refresh_interval, with Prometheus's checks
 * (UnmarshalYAML) reported at the entry. */
int cfg_parse_dns_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc)
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
			if (cfg_is(f, "names"))
				rc = cy_strlist(c, f->val, &d->names, &d->nnames);
			else if (cfg_is(f, "type"))
				rc = cy_str(c, f->val, &d->type);
			else if (cfg_is(f, "port"))
				rc = cy_int(c, f->val, &d->port);
			else if (cfg_is(f, "refresh_interval"))
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
			if (cfg_is(f, "role")) {
				rc = cy_str(c, f->val, &sel[i].role);
				if (!rc && pd_discovery_k8s_role_parse(sel[i].role) < 0)
					rc = cy_err(c, f->val, "unknown Kubernetes SD role %s",
					            cy_quote(c, sel[i].role));
			} else if (cfg_is(f, "label"))
				rc = cy_str(c, f->val, &sel[i].label);
			else if (cfg_is(f, "field"))
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
		if (cfg_is(f, "own_namespace"))
			rc = cy_bool(c, f->val, &k->own_namespace);
		else if (cfg_is(f, "names"))
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
		if (cfg_is(f, "node"))
			rc = cy_bool(c, f->val, &k->attach_node);
		else if (cfg_is(f, "namespace"))
			rc = cy_bool(c, f->val, &k->attach_namespace);
		else
			rc = cy_unknown(c, f, "kubernetes.AttachMetadataConfig");
	}
	return rc;
}

int cfg_parse_kubernetes_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc)
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
		cfg_http_src_init(&h, items[i]);
		k->role = "";
		if ((rc = cy_map(c, items[i], "kubernetes.SDConfig", 1, &m)))
			return rc;
		for (size_t j = 0; j < m.n && rc == 0; j++) {
			struct cy_entry *f = &m.e[j];
			if (cfg_is(f, "role")) {
				rc = cy_str(c, f->val, &k->role);
				if (!rc && *k->role && pd_discovery_k8s_role_parse(k->role) < 0)
					rc = cy_err(c, f->val, "unknown Kubernetes SD role %s",
					            cy_quote(c, k->role));
			} else if (cfg_is(f, "api_server")) {
				rc = cy_str(c, f->val, &k->api_server);
			} else if (cfg_is(f, "kubeconfig_file")) {
				rc = cy_str(c, f->val, &k->kubeconfig_file);
			} else if (cfg_is(f, "namespaces")) {
				rc = parse_k8s_namespaces(c, f->val, k);
			} else if (cfg_is(f, "selectors")) {
				rc = parse_k8s_selectors(c, f->val, k);
			} else if (cfg_is(f, "attach_metadata")) {
				rc = parse_k8s_attach(c, f->val, k);
			} else if ((rc = cfg_http_field(c, f, &h)) != 0) {
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
		else if (k->kubeconfig_file &&
		         !(k->kubeconfig_file = cy_path(c, k->kubeconfig_file)))
			return PD_ENOMEM;
		struct pd_http_client_config *client = cy_alloc(c, 1, sizeof(*client));
		if (!client)
			return PD_ENOMEM;
		if ((rc = cfg_http_finish(c, &h, client)))
			return rc;
		k->client = client;
		if (pd_discovery_kubernetes_validate(k, &e))
			return cy_err(c, items[i], "%s", e.msg);
	}
	return 0;
}
