/* k8s_roles_endpoints.c: the target groups of an Endpoints (the endpoints role) and
 * of an EndpointSlice (discovery.k8s.io/v1, the endpointslice role): a target per
 * address and port, with the labels of the object's service (the Endpoints' own
 * namesake; the one an EndpointSlice's kubernetes.io/service-name label names) and
 * of the pod an address points at, then a target for each container port of those
 * pods that no endpoint port covered, as Prometheus adds them. The slice of a
 * dual-stack service's second address family makes no targets. */
#include "k8s_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"

/* ---- endpoints and endpointslices ------------------------------------------------ */

/* A pod whose targets an endpoints or endpointslice has made, with the ports used. */
struct seen_pod {
	const struct pd_sd_node *pod;
	long *ports;
	size_t nports, cap;
};

struct seen {
	struct seen_pod *p;
	size_t n, cap;
};

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->p[i].ports);
	free(s->p);
}

/* Records that a target for pod's port (-1: none) was made. */
static int seen_add(struct pd_k8s_kb *k, struct seen *s, const struct pd_sd_node *pod, long port)
{
	const char *ns = pd_k8s_sz(pod, "metadata.namespace"),
	           *name = pd_k8s_sz(pod, "metadata.name");
	struct seen_pod *sp = NULL;
	for (size_t i = 0; i < s->n && !sp; i++)
		if (!strcmp(pd_k8s_sz(s->p[i].pod, "metadata.namespace"), ns) &&
		    !strcmp(pd_k8s_sz(s->p[i].pod, "metadata.name"), name))
			sp = &s->p[i];
	if (!sp) {
		if (s->n == s->cap) {
			size_t nc = s->cap ? 2 * s->cap : 4;
			struct seen_pod *np = realloc(s->p, nc * sizeof(*np));
			if (!np)
				return pd_k8s_oom(k);
			s->p = np;
			s->cap = nc;
		}
		sp = &s->p[s->n++];
		memset(sp, 0, sizeof(*sp));
		sp->pod = pod;
	}
	if (sp->nports == sp->cap) {
		size_t nc = sp->cap ? 2 * sp->cap : 4;
		long *np = realloc(sp->ports, nc * sizeof(*np));
		if (!np)
			return pd_k8s_oom(k);
		sp->ports = np;
		sp->cap = nc;
	}
	sp->ports[sp->nports++] = port;
	return 0;
}

/* The pod a targetRef names (kind Pod), when known. */
static const struct pd_sd_node *ref_pod(struct pd_k8s_kb *k, const struct pd_sd_node *ref)
{
	if (!pd_k8s_is_set(ref) || strcmp(pd_k8s_sz(ref, "kind"), "Pod"))
		return NULL;
	return pd_k8s_lookup_obj(k, PD_K8S_KIND_POD, pd_k8s_sz(ref, "namespace"),
	                         pd_k8s_sz(ref, "name"));
}

/* For an endpoint address's target of pod: the pod's labels, and the container
 * port labels of the container port equal to port (the last container with one
 * wins). proto_from_endpoint: the protocol is the endpoint port's (endpoints) or
 * the container port's (endpointslice). */
static int set_pod_target(struct pd_k8s_kb *k, const struct pd_sd_node *pod, long port,
                          const char *num, const char *ep_proto, int proto_from_endpoint)
{
	char cnum[16];
	long cv;
	int rc;
	if ((rc = pd_k8s_set_pod_labels(k, pod)))
		return rc;
	if (port < 0)
		return 0;
	for (size_t i = 0, n = pd_k8s_container_count(pod); i < n; i++) {
		int init;
		const struct pd_sd_node *c = pd_k8s_container_at(pod, i, &init);
		const struct pd_sd_node *ports = pd_k8s_field(c, "ports");
		for (size_t j = 0; j < pd_k8s_list_len(ports); j++) {
			const struct pd_sd_node *p = ports->kids[j];
			if ((rc = pd_k8s_port_text(k, pd_k8s_field(p, "containerPort"),
			                           "containerPort", cnum, sizeof(cnum), &cv)))
				return rc;
			if (cv != port)
				continue;
			if ((rc = pd_k8s_set_container_port(
			         k, c, init, num, pd_k8s_sz(p, "name"),
			         proto_from_endpoint ? ep_proto : pd_k8s_sz(p, "protocol"))))
				return rc;
			break;
		}
	}
	return 0;
}

/* The targets of the container ports of the seen pods that no endpoint port
 * covered, pod by pod in the order first seen. */
static int emit_other_ports(struct pd_k8s_kb *k, const struct seen *s)
{
	char num[16];
	long cv;
	int rc;
	for (size_t i = 0; i < s->n; i++) {
		const struct pd_sd_node *pod = s->p[i].pod;
		const char *ip = pd_k8s_sz(pod, "status.podIP");
		if (!*ip)
			continue;
		for (size_t ci = 0, n = pd_k8s_container_count(pod); ci < n; ci++) {
			int init, covered;
			const struct pd_sd_node *c = pd_k8s_container_at(pod, ci, &init);
			const struct pd_sd_node *ports = pd_k8s_field(c, "ports");
			for (size_t j = 0; j < pd_k8s_list_len(ports); j++) {
				const struct pd_sd_node *p = ports->kids[j];
				if ((rc = pd_k8s_port_text(k, pd_k8s_field(p, "containerPort"),
				                           "containerPort", num, sizeof(num), &cv)))
					return rc;
				covered = 0;
				for (size_t q = 0; q < s->p[i].nports && !covered; q++)
					covered = s->p[i].ports[q] == cv;
				if (covered)
					continue;
				pd_labels_builder_reset(k->b, NULL);
				if ((rc = pd_k8s_set_address(k, ip, num)) ||
				    (rc = pd_k8s_set_container_port(k, c, init, num,
				                                    pd_k8s_sz(p, "name"),
				                                    pd_k8s_sz(p, "protocol"))) ||
				    (rc = pd_k8s_set_pod_labels(k, pod)) || (rc = pd_k8s_emit(k)))
					return rc;
			}
		}
	}
	return 0;
}

/* A service's labels as the endpoints roles add them: namespace, name, labels and
 * annotations. */
static int set_service_labels(struct pd_k8s_kb *k, const struct pd_sd_node *svc)
{
	int rc;
	if ((rc = pd_k8s_setm(k, "namespace", NULL, pd_k8s_sz(svc, "metadata.namespace"))))
		return rc;
	return pd_k8s_set_object_meta(k, "service", svc);
}

static int endpoints_add(struct pd_k8s_kb *k, struct seen *s, const struct pd_sd_node *addr,
                         const struct pd_sd_node *port, const char *ready)
{
	const struct pd_sd_node *ref = pd_k8s_field(addr, "targetRef");
	const struct pd_sd_node *node = pd_k8s_field(addr, "nodeName");
	const struct pd_sd_node *pod;
	char num[16];
	long pv = 0;
	int rc;

	if ((rc = pd_k8s_port_text(k, pd_k8s_field(port, "port"), "subsets[].ports[].port", num,
	                           sizeof(num), &pv)))
		return rc;
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_set_address(k, pd_k8s_sz(addr, "ip"), num)) ||
	    (rc = pd_k8s_setm(k, "endpoint_port_name", NULL, pd_k8s_sz(port, "name"))) ||
	    (rc = pd_k8s_setm(k, "endpoint_port_protocol", NULL, pd_k8s_sz(port, "protocol"))) ||
	    (rc = pd_k8s_setm(k, "endpoint_ready", NULL, ready)))
		return rc;
	if (pd_k8s_is_set(ref) &&
	    ((rc = pd_k8s_setm(k, "endpoint_address_target_kind", NULL, pd_k8s_sz(ref, "kind"))) ||
	     (rc = pd_k8s_setm(k, "endpoint_address_target_name", NULL, pd_k8s_sz(ref, "name")))))
		return rc;
	if (pd_k8s_str_of(node) &&
	    (rc = pd_k8s_setm(k, "endpoint_node_name", NULL, pd_k8s_str_of(node))))
		return rc;
	if ((rc = pd_k8s_setm(k, "endpoint_hostname", NULL, pd_k8s_sz(addr, "hostname"))))
		return rc;
	if (k->lk && k->lk->attach_node) {
		if (pd_k8s_str_of(node))
			rc = pd_k8s_set_node_meta(k, pd_k8s_str_of(node));
		else if (pd_k8s_is_set(ref) && !strcmp(pd_k8s_sz(ref, "kind"), "Node"))
			rc = pd_k8s_set_node_meta(k, pd_k8s_sz(ref, "name"));
		if (rc)
			return rc;
	}
	if ((pod = ref_pod(k, ref))) {
		if ((rc = seen_add(k, s, pod, pv)) ||
		    (rc = set_pod_target(k, pod, pv, num, pd_k8s_sz(port, "protocol"), 1)))
			return rc;
	}
	return pd_k8s_emit(k);
}

int pd_k8s_build_endpoints(struct pd_k8s_kb *k, const struct pd_sd_node *eps, const char *ns,
                           const char *name, struct pd_labels **common)
{
	const struct pd_sd_node *subsets = pd_k8s_field(eps, "subsets");
	const struct pd_sd_node *svc = pd_k8s_lookup_obj(k, PD_K8S_KIND_SERVICE, ns, name);
	struct seen s = {0};
	int rc;

	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_setm(k, "namespace", NULL, ns)) ||
	    (svc && (rc = set_service_labels(k, svc))) ||
	    (rc = pd_k8s_set_object_meta(k, "endpoints", eps)) ||
	    (rc = pd_k8s_set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return pd_k8s_with_source(k, rc);

	for (size_t i = 0; i < pd_k8s_list_len(subsets); i++) {
		const struct pd_sd_node *ss = subsets->kids[i];
		const struct pd_sd_node *ports = pd_k8s_field(ss, "ports");
		const struct pd_sd_node *ready = pd_k8s_field(ss, "addresses");
		const struct pd_sd_node *nready = pd_k8s_field(ss, "notReadyAddresses");
		for (size_t p = 0; p < pd_k8s_list_len(ports); p++) {
			for (size_t a = 0; a < pd_k8s_list_len(ready); a++)
				if ((rc = endpoints_add(k, &s, ready->kids[a], ports->kids[p],
				                        "true")))
					goto out;
			for (size_t a = 0; a < pd_k8s_list_len(nready); a++)
				if ((rc = endpoints_add(k, &s, nready->kids[a], ports->kids[p],
				                        "false")))
					goto out;
		}
	}
	rc = emit_other_ports(k, &s);
out:
	seen_free(&s);
	return rc;
}

/* A bool field as "true"/"false", or NULL when unset. */
static const char *bool_of(const struct pd_sd_node *n)
{
	return n && n->kind == PD_SD_BOOL ? n->str : NULL;
}

static int slice_add(struct pd_k8s_kb *k, struct seen *s, const char *addr,
                     const struct pd_sd_node *ep, const struct pd_sd_node *port)
{
	const struct pd_sd_node *pn = pd_k8s_field(port, "port");
	const struct pd_sd_node *ref = pd_k8s_field(ep, "targetRef");
	const struct pd_sd_node *conds = pd_k8s_field(ep, "conditions");
	const struct pd_sd_node *topo = pd_k8s_field(ep, "deprecatedTopology");
	const char *node = pd_k8s_str(ep, "nodeName");
	const struct pd_sd_node *pod;
	char num[16] = "";
	long pv = -1;
	int rc;

	if (pd_k8s_is_set(pn) &&
	    (rc = pd_k8s_port_text(k, pn, "ports[].port", num, sizeof(num), &pv)))
		return rc;
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_set_address(k, addr, pd_k8s_is_set(pn) ? num : NULL)) ||
	    (rc = pd_k8s_setm(k, "endpointslice_port_name", NULL, pd_k8s_str(port, "name"))) ||
	    (rc = pd_k8s_setm(k, "endpointslice_port_protocol", NULL,
	                      pd_k8s_str(port, "protocol"))) ||
	    (rc = pd_k8s_setm(k, "endpointslice_port", NULL, num)) ||
	    (rc = pd_k8s_setm(k, "endpointslice_port_app_protocol", NULL,
	                      pd_k8s_str(port, "appProtocol"))) ||
	    (rc = pd_k8s_setm(k, "endpointslice_endpoint_conditions_ready", NULL,
	                      bool_of(pd_k8s_field(conds, "ready")))) ||
	    (rc = pd_k8s_setm(k, "endpointslice_endpoint_conditions_serving", NULL,
	                      bool_of(pd_k8s_field(conds, "serving")))) ||
	    (rc = pd_k8s_setm(k, "endpointslice_endpoint_conditions_terminating", NULL,
	                      bool_of(pd_k8s_field(conds, "terminating")))) ||
	    (rc = pd_k8s_setm(k, "endpointslice_endpoint_hostname", NULL,
	                      pd_k8s_str(ep, "hostname"))))
		return rc;
	if (pd_k8s_is_set(ref) && ((rc = pd_k8s_setm(k, "endpointslice_address_target_kind", NULL,
	                                             pd_k8s_sz(ref, "kind"))) ||
	                           (rc = pd_k8s_setm(k, "endpointslice_address_target_name", NULL,
	                                             pd_k8s_sz(ref, "name")))))
		return rc;
	if ((rc = pd_k8s_setm(k, "endpointslice_endpoint_node_name", NULL, node)) ||
	    (rc = pd_k8s_setm(k, "endpointslice_endpoint_zone", NULL, pd_k8s_str(ep, "zone"))))
		return rc;
	if (topo && topo->kind == PD_SD_MAP)
		for (size_t i = 0; i < topo->n; i++) {
			const char *key = pd_k8s_str_of(topo->kids[2 * i]);
			if (key &&
			    ((rc = pd_k8s_set_sanitized(k, "endpointslice_endpoint_topology_", key,
			                                pd_k8s_str_of(topo->kids[2 * i + 1]))) ||
			     (rc = pd_k8s_set_sanitized(
			          k, "endpointslice_endpoint_topology_present_", key, "true"))))
				return rc;
		}
	if (k->lk && k->lk->attach_node) {
		if (pd_k8s_is_set(ref) && !strcmp(pd_k8s_sz(ref, "kind"), "Node"))
			rc = pd_k8s_set_node_meta(k, pd_k8s_sz(ref, "name"));
		else if (node)
			rc = pd_k8s_set_node_meta(k, node);
		if (rc)
			return rc;
	}
	if ((pod = ref_pod(k, ref))) {
		if ((rc = seen_add(k, s, pod, pv)) ||
		    (rc = set_pod_target(k, pod, pv, num, NULL, 0)))
			return rc;
	}
	return pd_k8s_emit(k);
}

/* 1 when the slice is the second address family of a dual-stack service, whose
 * targets would repeat those of the first. */
static int secondary_family(const struct pd_sd_node *svc, const struct pd_sd_node *slice)
{
	const char *policy = pd_k8s_str(svc, "spec.ipFamilyPolicy");
	const struct pd_sd_node *fams = pd_k8s_path_node(svc, "spec.ipFamilies");
	if (!policy || (strcmp(policy, "PreferDualStack") && strcmp(policy, "RequireDualStack")))
		return 0;
	if (!pd_k8s_list_len(fams))
		return 0;
	return strcmp(pd_k8s_sz(slice, "addressType"),
	              pd_k8s_str_of(fams->kids[0]) ? fams->kids[0]->str : "") != 0;
}

int pd_k8s_build_endpointslice(struct pd_k8s_kb *k, const struct pd_sd_node *eps, const char *ns,
                               struct pd_labels **common)
{
	const struct pd_sd_node *labels = pd_k8s_path_node(eps, "metadata.labels");
	const struct pd_sd_node *svc_name = pd_k8s_field(labels, "kubernetes.io/service-name");
	const struct pd_sd_node *svc = NULL;
	const struct pd_sd_node *endpoints = pd_k8s_field(eps, "endpoints");
	const struct pd_sd_node *ports = pd_k8s_field(eps, "ports");
	struct seen s = {0};
	int rc;

	if (labels && labels->kind == PD_SD_MAP && svc_name)
		svc = pd_k8s_lookup_obj(k, PD_K8S_KIND_SERVICE, ns,
		                        pd_k8s_str_of(svc_name) ? svc_name->str : "");
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = pd_k8s_setm(k, "namespace", NULL, ns)) ||
	    (rc = pd_k8s_setm(k, "endpointslice_address_type", NULL,
	                      pd_k8s_str(eps, "addressType"))) ||
	    (rc = pd_k8s_set_object_meta(k, "endpointslice", eps)) ||
	    (svc && (rc = set_service_labels(k, svc))) || (rc = pd_k8s_set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return pd_k8s_with_source(k, rc);
	if (svc && secondary_family(svc, eps))
		return 0;

	for (size_t e = 0; e < pd_k8s_list_len(endpoints); e++) {
		const struct pd_sd_node *ep = endpoints->kids[e];
		const struct pd_sd_node *addrs = pd_k8s_field(ep, "addresses");
		for (size_t p = 0; p < pd_k8s_list_len(ports); p++)
			for (size_t a = 0; a < pd_k8s_list_len(addrs); a++) {
				const char *addr = pd_k8s_str_of(addrs->kids[a]);
				if ((rc = slice_add(k, &s, addr ? addr : "", ep, ports->kids[p])))
					goto out;
			}
	}
	rc = emit_other_ports(k, &s);
out:
	seen_free(&s);
	return rc;
}
