/* k8s_roles_node.c: the target group of a Node (the node role): one target at the
 * kubelet's port of the node's first address in Prometheus's order of preference
 * (InternalIP, InternalDNS, ExternalIP, ExternalDNS, LegacyHostIP, Hostname), none
 * when it has no address, with the node's conditions, addresses, labels and
 * annotations. */
#include "k8s_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"

int pd_k8s_build_node(struct pd_k8s_kb *k, const struct pd_sd_node *node, const char *name,
                      struct pd_labels **common)
{
	static const char *const pref[] = {"InternalIP",  "InternalDNS",  "ExternalIP",
	                                   "ExternalDNS", "LegacyHostIP", "Hostname"};
	const struct pd_sd_node *conds = pd_k8s_path_node(node, "status.conditions");
	const struct pd_sd_node *addrs = pd_k8s_path_node(node, "status.addresses");
	const char *addr = NULL;
	char num[16];
	int rc;

	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_setm(k, "node_provider_id", NULL, pd_k8s_str(node, "spec.providerID"))))
		return rc;
	for (size_t i = 0; i < pd_k8s_list_len(conds); i++) {
		char *v = strdup(pd_k8s_sz(conds->kids[i], "status"));
		if (!v)
			return pd_k8s_oom(k);
		for (char *c = v; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		rc = pd_k8s_set_sanitized_case(k, "node_condition_",
		                               pd_k8s_sz(conds->kids[i], "type"), v, 1);
		free(v);
		if (rc)
			return rc;
	}
	if ((rc = pd_k8s_set_object_meta(k, "node", node)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return pd_k8s_with_source(k, rc);

	for (size_t p = 0; p < sizeof(pref) / sizeof(pref[0]) && !addr; p++)
		for (size_t i = 0; i < pd_k8s_list_len(addrs) && !addr; i++)
			if (!strcmp(pd_k8s_sz(addrs->kids[i], "type"), pref[p]))
				addr = pd_k8s_sz(addrs->kids[i], "address");
	if (!addr)
		return 0; /* no address known: no target */
	if ((rc = pd_k8s_port_text(
	         k, pd_k8s_path_node(node, "status.daemonEndpoints.kubeletEndpoint.Port"),
	         "status.daemonEndpoints.kubeletEndpoint.Port", num, sizeof(num), NULL)))
		return rc;
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_set_address(k, addr, num)) || (rc = pd_k8s_setl(k, "instance", name)))
		return rc;
	/* the first address of each type; a later one of a type seen is skipped */
	for (size_t i = 0; i < pd_k8s_list_len(addrs); i++) {
		const char *type = pd_k8s_sz(addrs->kids[i], "type");
		int first = 1;
		for (size_t j = 0; j < i && first; j++)
			first = strcmp(pd_k8s_sz(addrs->kids[j], "type"), type) != 0;
		if (first && (rc = pd_k8s_set_sanitized(k, "node_address_", type,
		                                        pd_k8s_sz(addrs->kids[i], "address"))))
			return rc;
	}
	return pd_k8s_emit(k);
}
