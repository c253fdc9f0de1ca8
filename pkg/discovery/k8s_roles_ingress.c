/* k8s_roles_ingress.c: the target group of an Ingress (the ingress role): a target
 * per rule and path, addressed by the rule's host, with the scheme https when a TLS
 * entry of the ingress covers the host (a wildcard standing for one label) and http
 * otherwise. */
#include "k8s_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"

/* 1 when host matches pattern: equal, or pattern "*.rest" with host "x.rest" (one
 * label in place of the star). */
static int host_matches(const char *pattern, const char *host)
{
	const char *hd;
	if (!strcmp(pattern, host))
		return 1;
	if (pattern[0] != '*' || pattern[1] != '.')
		return 0;
	/* the star stands for exactly the first label of host, which has no dot */
	if (!(hd = strchr(host, '.')))
		return 0;
	return !strcmp(pattern + 1, hd);
}

int pd_k8s_build_ingress(struct pd_k8s_kb *k, const struct pd_sd_node *ing, const char *ns,
                         struct pd_labels **common)
{
	const struct pd_sd_node *rules = pd_k8s_path_node(ing, "spec.rules");
	const struct pd_sd_node *tls = pd_k8s_path_node(ing, "spec.tls");
	int rc;

	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_setm(k, "namespace", NULL, ns)) ||
	    (rc = pd_k8s_setm(k, "ingress_class_name", NULL,
	                      pd_k8s_str(ing, "spec.ingressClassName"))) ||
	    (rc = pd_k8s_set_object_meta(k, "ingress", ing)) ||
	    (rc = pd_k8s_set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return pd_k8s_with_source(k, rc);

	for (size_t r = 0; r < pd_k8s_list_len(rules); r++) {
		const struct pd_sd_node *rule = rules->kids[r];
		const char *host = pd_k8s_sz(rule, "host");
		const struct pd_sd_node *http = pd_k8s_field(rule, "http");
		const struct pd_sd_node *paths = pd_k8s_field(http, "paths");
		const char *scheme = "http";
		size_t npaths = pd_k8s_is_set(http) ? pd_k8s_list_len(paths) : 1;
		for (size_t t = 0; t < pd_k8s_list_len(tls) && !strcmp(scheme, "http"); t++) {
			const struct pd_sd_node *hosts = pd_k8s_field(tls->kids[t], "hosts");
			for (size_t h = 0; h < pd_k8s_list_len(hosts); h++)
				if (pd_k8s_str_of(hosts->kids[h]) &&
				    host_matches(hosts->kids[h]->str, host)) {
					scheme = "https";
					break;
				}
		}
		for (size_t p = 0; p < npaths; p++) {
			const char *path =
			    pd_k8s_is_set(http) ? pd_k8s_sz(paths->kids[p], "path") : "/";
			pd_labels_builder_reset(k->b, NULL);
			if ((rc = pd_k8s_setl(k, "__address__", host)) ||
			    (rc = pd_k8s_setm(k, "ingress_scheme", NULL, scheme)) ||
			    (rc = pd_k8s_setm(k, "ingress_host", NULL, host)) ||
			    (rc = pd_k8s_setm(k, "ingress_path", NULL, *path ? path : "/")) ||
			    (rc = pd_k8s_emit(k)))
				return rc;
		}
	}
	return 0;
}
