/* k8s_roles_pod.c: the target group of a Pod (the pod role): a target per
 * container port at the pod's IP, or one per container without ports; none while
 * the pod has no IP or, with attach_metadata.node, while its node is unknown. The
 * pod's own labels (phase, readiness, controller) and a container port's labels
 * are also those of the endpoints roles' targets that point at the pod. */
#include "k8s_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"

/* Sets META name = value in ASCII lower case (Go's strings.ToLower of the values
 * Kubernetes uses: "True", "False", "Unknown"). */
static int setm_lower(struct pd_k8s_kb *k, const char *name, const char *value)
{
	char *low = strdup(value ? value : "");
	int rc;
	if (!low)
		return pd_k8s_oom(k);
	for (char *c = low; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	rc = pd_k8s_setm(k, name, NULL, low);
	free(low);
	return rc;
}
/* ---- pods --------------------------------------------------------------------- */

/* Prometheus's podLabels: a pod's own labels, shared by its targets in every role. */
int pd_k8s_set_pod_labels(struct pd_k8s_kb *k, const struct pd_sd_node *pod)
{
	const struct pd_sd_node *conds = pd_k8s_path_node(pod, "status.conditions");
	const struct pd_sd_node *owners = pd_k8s_path_node(pod, "metadata.ownerReferences");
	const char *ready = "Unknown";
	int rc;
	for (size_t i = 0; i < pd_k8s_list_len(conds); i++)
		if (!strcmp(pd_k8s_sz(conds->kids[i], "type"), "Ready")) {
			ready = pd_k8s_sz(conds->kids[i], "status");
			break;
		}
	if ((rc = pd_k8s_setm(k, "pod_ip", NULL, pd_k8s_str(pod, "status.podIP"))) ||
	    (rc = setm_lower(k, "pod_ready", ready)) ||
	    (rc = pd_k8s_setm(k, "pod_phase", NULL, pd_k8s_str(pod, "status.phase"))) ||
	    (rc = pd_k8s_setm(k, "pod_node_name", NULL, pd_k8s_str(pod, "spec.nodeName"))) ||
	    (rc = pd_k8s_setm(k, "pod_host_ip", NULL, pd_k8s_str(pod, "status.hostIP"))) ||
	    (rc = pd_k8s_setm(k, "pod_uid", NULL, pd_k8s_str(pod, "metadata.uid"))) ||
	    (rc = pd_k8s_set_object_meta(k, "pod", pod)))
		return rc;
	for (size_t i = 0; i < pd_k8s_list_len(owners); i++) {
		const struct pd_sd_node *c = pd_k8s_field(owners->kids[i], "controller");
		if (!c || c->kind != PD_SD_BOOL || strcmp(c->str, "true"))
			continue;
		if ((rc = pd_k8s_setm(k, "pod_controller_kind", NULL,
		                      pd_k8s_sz(owners->kids[i], "kind"))) ||
		    (rc = pd_k8s_setm(k, "pod_controller_name", NULL,
		                      pd_k8s_sz(owners->kids[i], "name"))))
			return rc;
		break;
	}
	return 0;
}

/* The i-th container of containers followed by initContainers; *init tells which. */
const struct pd_sd_node *pd_k8s_container_at(const struct pd_sd_node *pod, size_t i, int *init)
{
	const struct pd_sd_node *cs = pd_k8s_path_node(pod, "spec.containers");
	const struct pd_sd_node *ics = pd_k8s_path_node(pod, "spec.initContainers");
	size_t n = pd_k8s_list_len(cs);
	*init = i >= n;
	if (i < n)
		return cs->kids[i];
	return i - n < pd_k8s_list_len(ics) ? ics->kids[i - n] : NULL;
}

size_t pd_k8s_container_count(const struct pd_sd_node *pod)
{
	return pd_k8s_list_len(pd_k8s_path_node(pod, "spec.containers")) +
	       pd_k8s_list_len(pd_k8s_path_node(pod, "spec.initContainers"));
}

/* The containerID of the status of the container called name. */
static const char *container_id(const struct pd_sd_node *pod, int init, const char *name)
{
	const struct pd_sd_node *st = pd_k8s_path_node(pod, init ? "status.initContainerStatuses"
	                                                         : "status.containerStatuses");
	for (size_t i = 0; i < pd_k8s_list_len(st); i++)
		if (!strcmp(pd_k8s_sz(st->kids[i], "name"), name))
			return pd_k8s_sz(st->kids[i], "containerID");
	return "";
}

/* The labels of one container port target (without the pod's labels). */
int pd_k8s_set_container_port(struct pd_k8s_kb *k, const struct pd_sd_node *c, int init,
                              const char *number, const char *port_name, const char *protocol)
{
	int rc;
	if ((rc = pd_k8s_setm(k, "pod_container_name", NULL, pd_k8s_sz(c, "name"))) ||
	    (rc = pd_k8s_setm(k, "pod_container_image", NULL, pd_k8s_sz(c, "image"))) ||
	    (rc = pd_k8s_setm(k, "pod_container_port_name", NULL, port_name)) ||
	    (rc = pd_k8s_setm(k, "pod_container_port_number", NULL, number)) ||
	    (rc = pd_k8s_setm(k, "pod_container_port_protocol", NULL, protocol)) ||
	    (rc = pd_k8s_setm(k, "pod_container_init", NULL, init ? "true" : "false")))
		return rc;
	return 0;
}

int pd_k8s_build_pod(struct pd_k8s_kb *k, const struct pd_sd_node *pod, const char *ns,
                     struct pd_labels **common)
{
	const char *ip = pd_k8s_sz(pod, "status.podIP");
	const char *node_name = pd_k8s_sz(pod, "spec.nodeName");
	char num[16];
	int rc;

	if (!*ip)
		return 0;
	if (k->lk && k->lk->attach_node && !pd_k8s_lookup_obj(k, PD_K8S_KIND_NODE, NULL, node_name))
		return 0; /* Prometheus waits for the node */
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_set_pod_labels(k, pod)) || (rc = pd_k8s_setm(k, "namespace", NULL, ns)) ||
	    (k->lk && k->lk->attach_node && (rc = pd_k8s_set_node_meta(k, node_name))) ||
	    (rc = pd_k8s_set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return pd_k8s_with_source(k, rc);

	for (size_t i = 0, n = pd_k8s_container_count(pod); i < n; i++) {
		int init;
		const struct pd_sd_node *c = pd_k8s_container_at(pod, i, &init);
		const struct pd_sd_node *ports = pd_k8s_field(c, "ports");
		const char *cid = container_id(pod, init, pd_k8s_sz(c, "name"));
		if (!pd_k8s_list_len(ports)) {
			pd_labels_builder_reset(k->b, NULL);
			if ((rc = pd_k8s_setl(k, "__address__", ip)) ||
			    (rc = pd_k8s_setm(k, "pod_container_name", NULL,
			                      pd_k8s_sz(c, "name"))) ||
			    (rc = pd_k8s_setm(k, "pod_container_id", NULL, cid)) ||
			    (rc = pd_k8s_setm(k, "pod_container_image", NULL,
			                      pd_k8s_sz(c, "image"))) ||
			    (rc = pd_k8s_setm(k, "pod_container_init", NULL,
			                      init ? "true" : "false")) ||
			    (rc = pd_k8s_emit(k)))
				return rc;
			continue;
		}
		for (size_t j = 0; j < ports->n; j++) {
			const struct pd_sd_node *p = ports->kids[j];
			if ((rc = pd_k8s_port_text(k, pd_k8s_field(p, "containerPort"),
			                           "containerPort", num, sizeof(num), NULL)))
				return rc;
			pd_labels_builder_reset(k->b, NULL);
			if ((rc = pd_k8s_set_address(k, ip, num)) ||
			    (rc = pd_k8s_set_container_port(k, c, init, num, pd_k8s_sz(p, "name"),
			                                    pd_k8s_sz(p, "protocol"))) ||
			    (rc = pd_k8s_setm(k, "pod_container_id", NULL, cid)) ||
			    (rc = pd_k8s_emit(k)))
				return rc;
		}
	}
	return 0;
}
