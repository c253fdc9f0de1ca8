/* render.c: the loaded configuration back as YAML, as Prometheus shows it at
 * /api/v1/status/config: defaults filled in, fields in Prometheus's order, secrets
 * as `<secret>`, strings quoted only where a plain scalar would read as something
 * else. Written with libyaml's emitter, so the output always parses. */
#include "config_int.h"

#include <stdio.h>
#include <string.h>

#include "profd/relabel.h"

struct em {
	yaml_emitter_t e;
	struct pd_buf *b;
	int rc; /* first failure; later events are skipped */
};

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	struct em *m = data;
	int rc = pd_buf_append(m->b, buffer, size);
	if (rc && !m->rc)
		m->rc = rc;
	return rc == 0;
}

static void emit(struct em *m, yaml_event_t *ev, int init_ok)
{
	if (m->rc) {
		if (init_ok)
			yaml_event_delete(ev);
		return;
	}
	if (!init_ok || !yaml_emitter_emit(&m->e, ev))
		m->rc = m->rc ? m->rc : PD_ENOMEM;
}

/* A plain scalar: keys, numbers, booleans, durations. */
static void raw(struct em *m, const char *s)
{
	yaml_event_t ev;
	int ok = yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1,
	                                      1, YAML_PLAIN_SCALAR_STYLE);
	emit(m, &ev, ok);
}

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

/* go-yaml's isBase60Float: ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
static int base60_float(const char *s)
{
	int groups = 0;
	if (*s == '+' || *s == '-')
		s++;
	if (!digit(*s))
		return 0;
	while (digit(*s) || *s == '_')
		s++;
	while (*s == ':') {
		s++;
		if (!digit(s[0]))
			return 0;
		if (digit(s[1])) {
			if (s[0] > '5')
				return 0;
			s += 2;
		} else {
			s += 1;
		}
		groups++;
	}
	if (!groups)
		return 0;
	if (*s == '.')
		for (s++; digit(*s) || *s == '_'; s++)
			;
	return *s == '\0';
}

/* A string value: plain unless it would resolve to something other than a string
 * (`true`, `10`, `~`, ``) or read as a YAML 1.1 base-60 number, as go-yaml does. */
static void str(struct em *m, const char *s)
{
	yaml_event_t ev;
	int quote = cy_resolve(s, strlen(s)) != CY_STR || base60_float(s);
	int ok = yaml_scalar_event_initialize(
	    &ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), !quote, 1,
	    quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE);
	emit(m, &ev, ok);
}

static void map_start(struct em *m)
{
	yaml_event_t ev;
	int ok = yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
	emit(m, &ev, ok);
}

static void map_end(struct em *m)
{
	yaml_event_t ev;
	emit(m, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void seq_start(struct em *m, int flow)
{
	yaml_event_t ev;
	int ok = yaml_sequence_start_event_initialize(
	    &ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
	emit(m, &ev, ok);
}

static void seq_end(struct em *m)
{
	yaml_event_t ev;
	emit(m, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void kv(struct em *m, const char *k, const char *v)
{
	raw(m, k);
	str(m, v);
}

static void kraw(struct em *m, const char *k, const char *v)
{
	raw(m, k);
	raw(m, v);
}

static void kbool(struct em *m, const char *k, int v)
{
	kraw(m, k, v ? "true" : "false");
}

static void kdur(struct em *m, const char *k, int64_t ms)
{
	char b[64];
	pd_config_format_duration(ms, b, sizeof(b));
	kraw(m, k, b);
}

static void kint(struct em *m, const char *k, long long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%lld", v);
	kraw(m, k, b);
}

static void ksize(struct em *m, const char *k, size_t v)
{
	char b[128];
	if (!v)
		return;
	pd_config_format_size((int64_t)v, b, sizeof(b));
	kraw(m, k, b);
}

static void labels(struct em *m, const char *k, const struct pd_labels *ls)
{
	if (!ls || !pd_labels_len(ls))
		return;
	raw(m, k);
	map_start(m);
	for (size_t i = 0; i < pd_labels_len(ls); i++) {
		const struct pd_label *l = pd_labels_at(ls, i);
		kv(m, l->name, l->value);
	}
	map_end(m);
}

static void strseq(struct em *m, const char *const *v, size_t n, int flow)
{
	seq_start(m, flow);
	for (size_t i = 0; i < n; i++)
		str(m, v[i]);
	seq_end(m);
}

/* URL.Redacted: a password in the URL becomes xxxxx. */
static void redacted_url(struct em *m, const char *k, const char *u)
{
	const char *p = strstr(u, "://");
	const char *host = p ? p + 3 : u;
	const char *end = host + strcspn(host, "/?#");
	const char *at = NULL;
	for (const char *q = host; q < end; q++)
		if (*q == '@')
			at = q;
	const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
	if (!colon) {
		kv(m, k, u);
		return;
	}
	struct pd_buf b;
	pd_buf_init(&b, 0);
	int rc = pd_buf_append(&b, u, (size_t)(colon - u + 1));
	if (!rc)
		rc = pd_buf_append(&b, "xxxxx", 5);
	if (!rc)
		rc = pd_buf_append(&b, at, strlen(at) + 1);
	if (rc)
		m->rc = m->rc ? m->rc : rc;
	else
		kv(m, k, (const char *)b.data);
	pd_buf_fini(&b);
}

static void http_client(struct em *m, const struct pd_http_client_config *h)
{
	if (h->basic_auth_username) {
		raw(m, "basic_auth");
		map_start(m);
		kv(m, "username", h->basic_auth_username);
		if (h->basic_auth_password)
			kraw(m, "password", "<secret>");
		if (h->basic_auth_password_file)
			kv(m, "password_file", h->basic_auth_password_file);
		map_end(m);
	}
	if (h->authorization_type) {
		raw(m, "authorization");
		map_start(m);
		kv(m, "type", h->authorization_type);
		if (h->authorization_credentials)
			kraw(m, "credentials", "<secret>");
		if (h->authorization_credentials_file)
			kv(m, "credentials_file", h->authorization_credentials_file);
		map_end(m);
	}
	raw(m, "tls_config");
	map_start(m);
	if (h->tls_ca_file)
		kv(m, "ca_file", h->tls_ca_file);
	if (h->tls_cert_file)
		kv(m, "cert_file", h->tls_cert_file);
	if (h->tls_key_file)
		kv(m, "key_file", h->tls_key_file);
	if (h->tls_server_name)
		kv(m, "server_name", h->tls_server_name);
	kbool(m, "insecure_skip_verify", h->tls_insecure_skip_verify);
	map_end(m);
	kbool(m, "follow_redirects", h->follow_redirects);
	if (h->proxy_url)
		redacted_url(m, "proxy_url", h->proxy_url);
}

static void relabel_rule(struct em *m, const struct pd_relabel_rule_config *r)
{
	map_start(m);
	if (r->source_labels) {
		raw(m, "source_labels");
		strseq(m, r->source_labels, r->nsource_labels, 1);
	}
	kv(m, "separator", r->separator ? r->separator : ";");
	kv(m, "regex", r->regex ? r->regex : "(.*)");
	if (r->modulus)
		kint(m, "modulus", (long long)r->modulus);
	if (r->target_label && *r->target_label)
		kv(m, "target_label", r->target_label);
	kv(m, "replacement", r->replacement ? r->replacement : "$1");
	kraw(m, "action",
	     pd_relabel_action_name(r->action < 0 ? PD_RELABEL_REPLACE
	                                          : (enum pd_relabel_action)r->action));
	map_end(m);
}

static void scrape_config(struct em *m, const struct pd_scrape_config *sc)
{
	map_start(m);
	kv(m, "job_name", sc->job_name);
	if (sc->honor_labels)
		kbool(m, "honor_labels", 1);
	kbool(m, "honor_timestamps", sc->honor_timestamps);
	if (sc->nparams) {
		raw(m, "params");
		map_start(m);
		for (size_t i = 0; i < sc->nparams; i++) {
			raw(m, sc->params[i].name);
			strseq(m, sc->params[i].values, sc->params[i].nvalues, 0);
		}
		map_end(m);
	}
	kdur(m, "scrape_interval", sc->scrape_interval_ms);
	kdur(m, "scrape_timeout", sc->scrape_timeout_ms);
	kv(m, "metrics_path", sc->metrics_path);
	kv(m, "scheme", sc->scheme);
	ksize(m, "body_size_limit", sc->body_size_limit);
	if (sc->target_limit)
		kint(m, "target_limit", (long long)sc->target_limit);
	if (sc->tenant && strcmp(sc->tenant, PD_TENANT_DEFAULT) != 0)
		kv(m, "tenant", sc->tenant);
	http_client(m, &sc->http_client);
	if (sc->nstatic_configs) {
		raw(m, "static_configs");
		seq_start(m, 0);
		for (size_t i = 0; i < sc->nstatic_configs; i++) {
			const struct pd_discovery_static_config *st = &sc->static_configs[i];
			map_start(m);
			raw(m, "targets");
			strseq(m, st->targets, st->ntargets, 0);
			labels(m, "labels", st->labels);
			map_end(m);
		}
		seq_end(m);
	}
	if (sc->nfile_sd_configs) {
		raw(m, "file_sd_configs");
		seq_start(m, 0);
		for (size_t i = 0; i < sc->nfile_sd_configs; i++) {
			map_start(m);
			raw(m, "files");
			strseq(m, sc->file_sd_configs[i].files, sc->file_sd_configs[i].nfiles, 0);
			kdur(m, "refresh_interval", sc->file_sd_configs[i].refresh_interval_ms);
			map_end(m);
		}
		seq_end(m);
	}
	if (sc->nhttp_sd_configs) {
		raw(m, "http_sd_configs");
		seq_start(m, 0);
		for (size_t i = 0; i < sc->nhttp_sd_configs; i++) {
			const struct pd_discovery_http_config *h = &sc->http_sd_configs[i];
			map_start(m);
			if (h->client)
				http_client(m, h->client);
			kdur(m, "refresh_interval", h->refresh_interval_ms);
			redacted_url(m, "url", h->url);
			map_end(m);
		}
		seq_end(m);
	}
	if (sc->ndns_sd_configs) {
		raw(m, "dns_sd_configs");
		seq_start(m, 0);
		for (size_t i = 0; i < sc->ndns_sd_configs; i++) {
			const struct pd_discovery_dns_config *d = &sc->dns_sd_configs[i];
			map_start(m);
			raw(m, "names");
			strseq(m, d->names, d->nnames, 0);
			kdur(m, "refresh_interval", d->refresh_interval_ms);
			kv(m, "type", d->type);
			kint(m, "port", d->port);
			map_end(m);
		}
		seq_end(m);
	}
	if (sc->nkubernetes_sd_configs) {
		raw(m, "kubernetes_sd_configs");
		seq_start(m, 0);
		for (size_t i = 0; i < sc->nkubernetes_sd_configs; i++) {
			const struct pd_discovery_kubernetes_config *k =
			    &sc->kubernetes_sd_configs[i];
			map_start(m);
			if (k->api_server)
				redacted_url(m, "api_server", k->api_server);
			kv(m, "role", k->role);
			kv(m, "kubeconfig_file", k->kubeconfig_file ? k->kubeconfig_file : "");
			if (k->client)
				http_client(m, k->client);
			raw(m, "namespaces");
			map_start(m);
			kbool(m, "own_namespace", k->own_namespace);
			if (k->nnamespaces) {
				raw(m, "names");
				strseq(m, k->namespaces, k->nnamespaces, 0);
			}
			map_end(m);
			if (k->nselectors) {
				raw(m, "selectors");
				seq_start(m, 0);
				for (size_t j = 0; j < k->nselectors; j++) {
					map_start(m);
					kv(m, "role", k->selectors[j].role);
					if (k->selectors[j].label && *k->selectors[j].label)
						kv(m, "label", k->selectors[j].label);
					if (k->selectors[j].field && *k->selectors[j].field)
						kv(m, "field", k->selectors[j].field);
					map_end(m);
				}
				seq_end(m);
			}
			raw(m, "attach_metadata");
			map_start(m);
			kbool(m, "node", k->attach_node);
			kbool(m, "namespace", k->attach_namespace);
			map_end(m);
			map_end(m);
		}
		seq_end(m);
	}
	if (sc->nrelabel_configs) {
		raw(m, "relabel_configs");
		seq_start(m, 0);
		for (size_t i = 0; i < sc->nrelabel_configs; i++)
			relabel_rule(m, &sc->relabel_configs[i]);
		seq_end(m);
	}
	raw(m, "profiling_config");
	map_start(m);
	raw(m, "pprof_config");
	map_start(m);
	for (size_t i = 0; i < sc->nprofiles; i++) {
		const struct pd_profile_config *p = &sc->profiles[i];
		raw(m, p->name);
		map_start(m);
		kbool(m, "enabled", p->enabled);
		if (p->path)
			kv(m, "path", p->path);
		if (p->seconds)
			kint(m, "seconds", (long long)p->seconds);
		if (p->delta)
			kbool(m, "delta", 1);
		map_end(m);
	}
	map_end(m);
	map_end(m);
	map_end(m);
}

int pd_config_render(const struct pd_config *cfg, struct pd_buf *b)
{
	struct em m = {.b = b};
	yaml_event_t ev;

	if (!yaml_emitter_initialize(&m.e))
		return PD_ENOMEM;
	yaml_emitter_set_output(&m.e, write_handler, &m);
	yaml_emitter_set_unicode(&m.e, 1);
	yaml_emitter_set_width(&m.e, -1);
	yaml_emitter_set_indent(&m.e, 2);

	emit(&m, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	emit(&m, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	map_start(&m);
	raw(&m, "global");
	map_start(&m);
	kdur(&m, "scrape_interval", cfg->global.scrape_interval_ms);
	kdur(&m, "scrape_timeout", cfg->global.scrape_timeout_ms);
	ksize(&m, "body_size_limit", cfg->global.body_size_limit);
	if (cfg->global.target_limit)
		kint(&m, "target_limit", (long long)cfg->global.target_limit);
	labels(&m, "external_labels", cfg->global.external_labels);
	map_end(&m);
	if (cfg->nscrape_configs) {
		raw(&m, "scrape_configs");
		seq_start(&m, 0);
		for (size_t i = 0; i < cfg->nscrape_configs; i++)
			scrape_config(&m, &cfg->scrape_configs[i]);
		seq_end(&m);
	}
	map_end(&m);
	emit(&m, &ev, yaml_document_end_event_initialize(&ev, 1));
	emit(&m, &ev, yaml_stream_end_event_initialize(&ev));
	if (!m.rc && !yaml_emitter_flush(&m.e))
		m.rc = PD_ENOMEM;
	yaml_emitter_delete(&m.e);
	return m.rc;
}
