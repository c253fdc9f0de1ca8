/* run_config.c: the configuration profd run runs: applied to the scrape manager and
 * discovery, reloaded on SIGHUP and POST /-/reload (a configuration with an error
 * is refused and the running one stays), rendered for the API, and the discovery
 * refreshes that fail under it logged once each. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/config.h"
#include "profd/discovery.h"
#include "profd/scrape.h"
#include "run_int.h"

/* Logs each failed discovery refresh once (a broken file_sd file, an http_sd URL
 * that fails), as Prometheus logs them; the last good targets stay in use. */
void run_log_discovery_errors(struct daemon *d)
{
	pthread_mutex_lock(&d->cfg_mu);
	for (size_t i = 0; i < d->cfg->nscrape_configs; i++) {
		const char *pool = d->cfg->scrape_configs[i].job_name;
		struct pd_discovery_provider_status *st;
		size_t n;
		if (pd_discovery_manager_status(d->disc, pool, &st, &n, NULL))
			continue;
		for (size_t k = 0; k < n; k++) {
			size_t j = 0;
			while (j < d->nsd_seen && strcmp(d->sd_seen[j].name, st[k].name) != 0)
				j++;
			if (j == d->nsd_seen) {
				struct sd_seen *ns = realloc(d->sd_seen, (j + 1) * sizeof(*ns));
				if (!ns)
					break;
				d->sd_seen = ns;
				memcpy(ns[j].name, st[k].name, sizeof(ns[j].name));
				ns[j].refresh_ms = 0;
				d->nsd_seen++;
			}
			if (st[k].last_refresh_ms == d->sd_seen[j].refresh_ms)
				continue;
			d->sd_seen[j].refresh_ms = st[k].last_refresh_ms;
			if (st[k].last_error)
				pd_log_error(
				    "discovery",
				    "refreshing targets failed, keeping the last good ones",
				    "job=%s provider=%s err=%s", pool, st[k].name,
				    st[k].last_error);
		}
		pd_discovery_provider_status_free(st, n);
	}
	pthread_mutex_unlock(&d->cfg_mu);
}

void run_on_groups(void *ctx, const char *pool, const struct pd_target_group *groups, size_t n)
{
	struct daemon *d = ctx;
	pd_scrape_manager_sync(d->scrape, pool, groups, n);
}

/* Applies cfg to the scrape manager and discovery; cfg must stay alive until the
 * next apply returns (the scrape manager borrows its relabel rules). */
int run_apply_config(struct daemon *d, const struct pd_config *cfg, struct pd_err *err)
{
	size_t n = cfg->nscrape_configs;
	struct pd_scrape_pool_settings *ps = calloc(n ? n : 1, sizeof(*ps));
	struct pd_discovery_pool_config *dp = calloc(n ? n : 1, sizeof(*dp));
	int rc = 0;
	if (!ps || !dp) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		const struct pd_scrape_config *sc = &cfg->scrape_configs[i];
		struct pd_scrape_pool_settings *p = &ps[i];
		p->job_name = sc->job_name;
		p->scheme = sc->scheme;
		p->metrics_path = sc->metrics_path;
		p->nparams = sc->nparams;
		const char **pn = calloc(sc->nparams + 1, sizeof(char *));
		const char **pv = calloc(sc->nparams + 1, sizeof(char *));
		struct pd_scrape_profile_type *ty = calloc(sc->nprofiles + 1, sizeof(*ty));
		if (!pn || !pv || !ty) {
			free(pn);
			free(pv);
			free(ty);
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		for (size_t k = 0; k < sc->nparams; k++) {
			pn[k] = sc->params[k].name;
			pv[k] = sc->params[k].nvalues ? sc->params[k].values[0] : "";
		}
		p->param_names = pn;
		p->param_values = pv;
		size_t nt = 0;
		for (size_t k = 0; k < sc->nprofiles; k++)
			if (sc->profiles[k].enabled)
				ty[nt++] = (struct pd_scrape_profile_type){sc->profiles[k].name, sc->profiles[k].path,
									   sc->profiles[k].seconds};
		p->types = ty;
		p->ntypes = nt;
		p->interval_ms = sc->scrape_interval_ms;
		p->timeout_ms = sc->scrape_timeout_ms;
		p->body_size_limit = sc->body_size_limit;
		p->target_limit = sc->target_limit;
		p->honor_labels = sc->honor_labels;
		if (d->multitenancy && sc->tenant && strcmp(sc->tenant, PD_TENANT_DEFAULT) != 0)
			p->tenant = sc->tenant;
		p->client = &sc->http_client;
		p->relabel = sc->relabel_rules;
		dp[i] = (struct pd_discovery_pool_config){
		    .name = sc->job_name,
		    .static_configs = sc->static_configs,
		    .nstatic = sc->nstatic_configs,
		    .file_configs = sc->file_sd_configs,
		    .nfile = sc->nfile_sd_configs,
		    .http_configs = sc->http_sd_configs,
		    .nhttp = sc->nhttp_sd_configs,
		    .dns_configs = sc->dns_sd_configs,
		    .ndns = sc->ndns_sd_configs,
		    .kubernetes_configs = sc->kubernetes_sd_configs,
		    .nkubernetes = sc->nkubernetes_sd_configs,
		};
	}
	if (!rc)
		rc = pd_scrape_manager_set_pools(d->scrape, ps, n, err);
	if (!rc)
		rc = pd_discovery_manager_set_pools(d->disc, dp, n, err);
out:
	for (size_t i = 0; ps && i < n; i++) {
		free((void *)ps[i].param_names);
		free((void *)ps[i].param_values);
		free((void *)ps[i].types);
	}
	free(ps);
	free(dp);
	return rc;
}

/* opts.config_yaml of the API: the running configuration, rendered. */
char *run_render_config(void *ctx)
{
	struct daemon *d = ctx;
	struct pd_buf b;
	size_t n;
	pd_buf_init(&b, 64u << 20);
	pthread_mutex_lock(&d->cfg_mu);
	int rc = pd_config_render(d->cfg, &b);
	pthread_mutex_unlock(&d->cfg_mu);
	if (rc || pd_buf_append(&b, "", 1)) {
		pd_buf_fini(&b);
		return NULL;
	}
	return (char *)pd_buf_steal(&b, &n);
}

/* SIGHUP and POST /-/reload: a configuration with an error is refused and the
 * running one stays. */
int run_reload_config(void *ctx, struct pd_err *err)
{
	struct daemon *d = ctx;
	struct pd_config *ncfg;
	pthread_mutex_lock(&d->cfg_mu);
	int rc = pd_config_load_file(d->config_file, &ncfg, err);
	if (!rc && (rc = run_apply_config(d, ncfg, err))) {
		/* part of it may be in use already: go back to the running one first */
		struct pd_err ignored;
		run_apply_config(d, d->cfg, &ignored);
		pd_config_destroy(ncfg);
	} else if (!rc) {
		pd_config_destroy(d->cfg);
		d->cfg = ncfg;
	}
	size_t njobs = d->cfg->nscrape_configs;
	pthread_mutex_unlock(&d->cfg_mu);
	if (rc)
		pd_log_error("config", "reload refused, the previous configuration stays", "err=%s",
		             err->msg);
	else
		pd_log_info("config", "configuration reloaded", "scrape_configs=%zu", njobs);
	return rc;
}
