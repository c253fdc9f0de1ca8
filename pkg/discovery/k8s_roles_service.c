/* k8s_roles_service.c: the target group of a Service (the service role): a target
 * per port at the service's DNS name, <name>.<namespace>.svc, with its type and its
 * cluster IP, external name or load balancer addresses. */
#include "k8s_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"

/* The target of one port of a service. */
static int service_target(struct pd_k8s_kb *k, const struct pd_sd_node *svc,
                          const struct pd_sd_node *p, const char *host, const char *type)
{
	const struct pd_sd_node *ing = pd_k8s_path_node(svc, "status.loadBalancer.ingress");
	struct pd_buf ips;
	char num[16];
	int rc;

	if ((rc = pd_k8s_port_text(k, pd_k8s_field(p, "port"), "spec.ports[].port", num,
	                           sizeof(num), NULL)))
		return rc;
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_set_address(k, host, num)) ||
	    (rc = pd_k8s_setm(k, "service_port_name", NULL, pd_k8s_sz(p, "name"))) ||
	    (rc = pd_k8s_setm(k, "service_port_number", NULL, num)) ||
	    (rc = pd_k8s_setm(k, "service_port_protocol", NULL, pd_k8s_sz(p, "protocol"))) ||
	    (rc = pd_k8s_setm(k, "service_type", NULL, type)))
		return rc;
	if (!strcmp(type, "ExternalName"))
		rc = pd_k8s_setm(k, "service_external_name", NULL,
		                 pd_k8s_sz(svc, "spec.externalName"));
	else
		rc = pd_k8s_setm(k, "service_cluster_ip", NULL, pd_k8s_sz(svc, "spec.clusterIP"));
	if (rc || strcmp(type, "LoadBalancer"))
		return rc ? rc : pd_k8s_emit(k);
	/* status.loadBalancer.ingress[].ip joined with commas, else the deprecated
	 * spec.loadBalancerIP */
	pd_buf_init(&ips, 0);
	for (size_t j = 0; j < pd_k8s_list_len(ing); j++) {
		const char *ip = pd_k8s_sz(ing->kids[j], "ip");
		if (*ip && ((ips.len && pd_buf_append(&ips, ",", 1)) ||
		            pd_buf_append(&ips, ip, strlen(ip)))) {
			pd_buf_fini(&ips);
			return pd_k8s_oom(k);
		}
	}
	if (pd_buf_append(&ips, "", 1)) {
		pd_buf_fini(&ips);
		return pd_k8s_oom(k);
	}
	rc = pd_k8s_setm(k, "service_loadbalancer_ip", NULL,
	                 ips.len > 1 ? (const char *)ips.data
	                             : pd_k8s_sz(svc, "spec.loadBalancerIP"));
	pd_buf_fini(&ips);
	return rc ? rc : pd_k8s_emit(k);
}

int pd_k8s_build_service(struct pd_k8s_kb *k, const struct pd_sd_node *svc, const char *ns,
                         const char *name, struct pd_labels **common)
{
	const struct pd_sd_node *ports = pd_k8s_path_node(svc, "spec.ports");
	const char *type = pd_k8s_sz(svc, "spec.type");
	char *host;
	int rc;

	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_setm(k, "namespace", NULL, ns)) ||
	    (rc = pd_k8s_set_object_meta(k, "service", svc)) ||
	    (rc = pd_k8s_set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return pd_k8s_with_source(k, rc);

	if (!(host = malloc(strlen(name) + strlen(ns) + 6)))
		return pd_k8s_oom(k);
	sprintf(host, "%s.%s.svc", name, ns);
	for (size_t i = 0; i < pd_k8s_list_len(ports) && !rc; i++)
		rc = service_target(k, svc, ports->kids[i], host, type);
	free(host);
	return rc;
}
