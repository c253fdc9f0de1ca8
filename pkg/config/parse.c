/* parse.c: the configuration schema: `global` and `scrape_configs` as Prometheus's
 * config package defines them (fields, defaults, inheritance, validation and its
 * messages), relabel_configs, and conprof's per-job profiling_config with its seven
 * default profile types. Fields Prometheus knows but profd does not use are
 * accepted with a warning; fields that would change what is scraped and that profd
 * cannot honour (oauth2, other service discoveries, ...) are errors. The HTTP
 * client settings are in parse_http.c, service discovery in parse_sd.c, the
 * helpers they share in fields.c. */
#include "config_int.h"

#include <string.h>

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
			if (cfg_is(e, "source_labels")) {
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
			} else if (cfg_is(e, "separator")) {
				rc = cy_str(c, e->val, &r->separator);
			} else if (cfg_is(e, "target_label")) {
				rc = cy_str(c, e->val, &r->target_label);
			} else if (cfg_is(e, "regex")) {
				rc = cy_str(c, e->val, &r->regex);
			} else if (cfg_is(e, "modulus")) {
				rc = cy_uint64(c, e->val, &r->modulus);
				r->has_modulus = 1;
			} else if (cfg_is(e, "replacement")) {
				rc = cy_str(c, e->val, &r->replacement);
			} else if (cfg_is(e, "action")) {
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
		if (cfg_is(f, "enabled")) {
			/* `enabled:` with no value leaves the default, as conprof's *bool */
			if (!cy_is_null(f->val))
				rc = cy_bool(c, f->val, &p->enabled);
		} else if (cfg_is(f, "path")) {
			if (!cy_is_null(f->val)) {
				rc = cy_str(c, f->val, &p->path);
				ps->path = f->val;
			}
		} else if (cfg_is(f, "seconds")) {
			if (!cy_is_null(f->val)) {
				rc = cy_int(c, f->val, &p->seconds);
				ps->seconds = f->val;
				ps->seconds_set = 1;
			}
		} else if (cfg_is(f, "delta")) {
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
		if (cfg_is(&m.e[i], "pprof_config"))
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
	cfg_http_src_init(&h, n);
	if ((rc = cy_map(c, n, "config.ScrapeConfig", 1, &m)))
		return rc;
	for (size_t i = 0; i < m.n && rc == 0; i++) {
		struct cy_entry *e = &m.e[i];
		if (cfg_is(e, "job_name")) {
			js->job_name = e->val;
			rc = cy_str(c, e->val, &sc->job_name);
		} else if (cfg_is(e, "honor_labels")) {
			rc = cy_bool(c, e->val, &sc->honor_labels);
		} else if (cfg_is(e, "honor_timestamps")) {
			rc = cy_bool(c, e->val, &sc->honor_timestamps);
		} else if (cfg_is(e, "params")) {
			rc = parse_params(c, e->val, sc);
		} else if (cfg_is(e, "scrape_interval")) {
			js->interval = e->val;
			rc = cy_duration(c, e->val, &sc->scrape_interval_ms);
		} else if (cfg_is(e, "scrape_timeout")) {
			js->timeout = e->val;
			rc = cy_duration(c, e->val, &sc->scrape_timeout_ms);
		} else if (cfg_is(e, "metrics_path")) {
			rc = cy_str(c, e->val, &sc->metrics_path);
		} else if (cfg_is(e, "scheme")) {
			scheme = e->val;
			rc = cy_str(c, e->val, &sc->scheme);
		} else if (cfg_is(e, "body_size_limit")) {
			rc = cy_size(c, e->val, &body);
		} else if (cfg_is(e, "target_limit")) {
			rc = cy_uint64(c, e->val, &sc->target_limit);
		} else if (cfg_is(e, "tenant")) {
			if ((rc = cy_str(c, e->val, &sc->tenant)) == 0) {
				struct pd_err te = {0};
				if (pd_config_tenant_check(sc->tenant, strlen(sc->tenant), &te))
					rc = cy_err(c, e->val, "tenant: %s", te.msg);
			}
		} else if (cfg_is(e, "static_configs")) {
			rc = cfg_parse_static_configs(c, e->val, sc, js);
		} else if (cfg_is(e, "file_sd_configs")) {
			rc = cfg_parse_file_sd_configs(c, e->val, sc);
		} else if (cfg_is(e, "http_sd_configs")) {
			rc = cfg_parse_http_sd_configs(c, e->val, sc);
		} else if (cfg_is(e, "dns_sd_configs")) {
			rc = cfg_parse_dns_sd_configs(c, e->val, sc);
		} else if (cfg_is(e, "kubernetes_sd_configs")) {
			rc = cfg_parse_kubernetes_sd_configs(c, e->val, sc);
		} else if (cfg_is(e, "relabel_configs")) {
			rc = parse_relabel_configs(c, e->val, sc, js);
		} else if (cfg_is(e, "profiling_config")) {
			has_profiling = 1;
			rc = parse_profiling(c, e->val, sc, js);
		} else if ((rc = cfg_http_field(c, e, &h)) != 0) {
			rc = rc > 0 ? 0 : rc;
		} else if (cfg_ends_with(e->name, "_sd_configs")) {
			rc = cy_err(c, e->key,
			            "%s is not supported by profd (service discovery: "
			            "static_configs, file_sd_configs, http_sd_configs, "
			            "dns_sd_configs, kubernetes_sd_configs)",
			            e->name);
		} else if (cfg_listed(e->name, ignored_scrape)) {
			rc = cfg_ignored(c, e);
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
	if ((rc = cfg_http_finish(c, &h, &sc->http_client)))
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
		if (cfg_is(e, "scrape_interval")) {
			rc = cy_duration(c, e->val, &g->scrape_interval_ms);
		} else if (cfg_is(e, "scrape_timeout")) {
			timeout = e->val;
			rc = cy_duration(c, e->val, &g->scrape_timeout_ms);
		} else if (cfg_is(e, "external_labels")) {
			rc = cfg_parse_labels(c, e->val, 1, &g->external_labels);
		} else if (cfg_is(e, "body_size_limit")) {
			rc = cy_size(c, e->val, &body);
		} else if (cfg_is(e, "target_limit")) {
			rc = cy_uint64(c, e->val, &g->target_limit);
		} else if (cfg_listed(e->name, ignored_global)) {
			rc = cfg_ignored(c, e);
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
		if (cfg_is(e, "global"))
			global = e->val;
		else if (cfg_is(e, "scrape_configs"))
			scrapes = e->val;
		else if (cfg_is(e, "scrape_config_files"))
			rc = cfg_unsupported(c, e, NULL);
		else if (cfg_listed(e->name, ignored_top))
			rc = cfg_ignored(c, e);
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
