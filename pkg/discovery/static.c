/* static.c: the static_configs provider: the targets and labels written in the
 * configuration, one group per static_config, named "0", "1", ... as Prometheus
 * names them. Its groups never change; it exists so that a pool's groups all come
 * from providers alike. */
#include "discovery_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pd_sd_static_key(struct pd_buf *b, const struct pd_discovery_static_config *c, size_t n)
{
	int rc = pd_sd_key_str(b, "static");
	if (!rc)
		rc = pd_sd_key_i64(b, (int64_t)n);
	for (size_t i = 0; i < n && !rc; i++) {
		char *ls = NULL;
		rc = pd_sd_key_i64(b, (int64_t)c[i].ntargets);
		for (size_t j = 0; j < c[i].ntargets && !rc; j++)
			rc = pd_sd_key_str(b, c[i].targets[j]);
		if (!rc && c[i].labels && !(ls = pd_labels_string(c[i].labels)))
			rc = PD_ENOMEM;
		if (!rc)
			rc = pd_sd_key_str(b, ls);
		free(ls);
	}
	return rc;
}

int pd_sd_static_init(struct pd_sd_provider *p, const struct pd_discovery_static_config *c,
                      size_t n, struct pd_err *err)
{
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	struct pd_target_group *g = n ? calloc(n, sizeof(*g)) : NULL;
	int rc = 0;

	p->kind = PD_SD_STATIC;
	if (!b || (n && !g)) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		char src[24];
		snprintf(src, sizeof(src), "%zu", i);
		if (!(g[i].source = strdup(src)) ||
		    (c[i].ntargets &&
		     !(g[i].targets = calloc(c[i].ntargets, sizeof(*g[i].targets))))) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		for (size_t j = 0; j < c[i].ntargets; j++) {
			pd_labels_builder_reset(b, NULL);
			pd_labels_builder_add(b, "__address__", c[i].targets[j]);
			if ((rc = pd_labels_builder_finish(b, &g[i].targets[j], err))) {
				pd_err_prefix(err, "static_configs[%zu]: target %zu", i, j);
				goto fail;
			}
			g[i].ntargets++;
		}
		pd_labels_builder_reset(b, NULL);
		if (c[i].labels)
			g[i].labels = pd_labels_dup(c[i].labels);
		else if ((rc = pd_labels_builder_finish(b, &g[i].labels, err)))
			goto fail;
		if (!g[i].labels) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
	}
	pd_labels_builder_destroy(b);
	p->groups = g;
	p->ngroups = n;
	if (!(p->detail = strdup(""))) {
		p->groups = NULL;
		p->ngroups = 0;
		pd_target_group_free(g, n);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	return 0;
fail:
	pd_labels_builder_destroy(b);
	pd_target_group_free(g, n);
	return rc;
}
