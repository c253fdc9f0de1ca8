/* k8s_int.h: what the files of kubernetes_sd_configs share privately. Objects
 * (pods, services, ...) are kept as parsed JSON trees (discovery_int.h's document
 * tree, as the API server sends them); k8s_roles.c turns one object of a role into
 * its target group with Prometheus's __meta_kubernetes_* labels, looking related
 * objects (an endpoints' service and pods, a pod's node, a namespace) up through a
 * callback; k8s.c runs the lists and watches that keep those objects current. */
#ifndef PROFD_K8S_INT_H
#define PROFD_K8S_INT_H

#include "discovery_int.h"

/* The kinds of objects kubernetes_sd reads. */
enum pd_k8s_kind {
	PD_K8S_KIND_NODE,
	PD_K8S_KIND_SERVICE,
	PD_K8S_KIND_POD,
	PD_K8S_KIND_ENDPOINTS,
	PD_K8S_KIND_ENDPOINTSLICE,
	PD_K8S_KIND_INGRESS,
	PD_K8S_KIND_NAMESPACE,
};

/* How the builders find related objects. get returns the current object of a kind
 * (its whole JSON tree, as listed or last watched) or NULL when none is known; the
 * tree stays valid until the builder returns. ns is NULL for nodes and namespaces. */
struct pd_k8s_lookup {
	const struct pd_sd_node *(*get)(void *ctx, enum pd_k8s_kind kind, const char *ns,
	                                const char *name);
	void *ctx;
	int attach_node;      /* attach_metadata.node */
	int attach_namespace; /* attach_metadata.namespace */
	size_t max_targets;   /* targets one group may have; 0: PD_K8S_DEFAULT_MAX_TARGETS */
};

/* Limits of one built group. An Endpoints or EndpointSlice gives a target per
 * address and port (Kubernetes keeps both at most 1000 addresses and 100 ports,
 * hence the default); a group beyond max_targets is an error naming the object.
 * Kubernetes bounds an object's labels and annotations (keys of 317 bytes, values
 * of 63 bytes for labels, 256 KiB for all annotations together); the label sets of
 * a group are built with the label limits below, which hold any valid object. */
#define PD_K8S_DEFAULT_MAX_TARGETS 100000
#define PD_K8S_MAX_LABELS 16384           /* labels in one target's or group's set */
#define PD_K8S_MAX_LABEL_NAME_LEN 1024    /* bytes of a label name */
#define PD_K8S_MAX_LABEL_VALUE_LEN 262144 /* bytes of a label value */

/* The member `key` of a JSON object (NULL when obj is not an object or has none). */
const struct pd_sd_node *pd_k8s_field(const struct pd_sd_node *obj, const char *key);

/* The string at a dotted path ("metadata.name") of obj, or NULL when any step is
 * missing or the value is not a string. */
const char *pd_k8s_str(const struct pd_sd_node *obj, const char *path);

/* The source of an object's group, as Prometheus names it: "pod/<ns>/<name>",
 * "svc/<ns>/<name>", "endpoints/<ns>/<name>", "endpointslice/<ns>/<name>",
 * "node/<name>" (ns ignored), "ingress/<ns>/<name>". Written to dst (cut to cap). */
void pd_k8s_source(enum pd_discovery_k8s_role role, const char *ns, const char *name, char *dst,
                   size_t cap);

/* Builds the target group of one object of role (a Pod for the pod role, an
 * Endpoints for endpoints, an EndpointSlice (discovery.k8s.io/v1) for
 * endpointslice, ...) with exactly the targets and labels Prometheus's discovery
 * gives it, looking up related objects through lk. On success *out is filled and
 * owned by the caller (free its parts with pd_k8s_group_fini); a group may have no
 * targets (a pod without IP or, with attach_node, whose node is unknown; a node
 * without addresses). lk may be NULL (nothing related is known, nothing attached);
 * get is called only during the build, with ns "" for objects without a namespace.
 * Fields of the wrong JSON type count as missing. PD_EINVAL when obj lacks what
 * every such object has (metadata.name) or a port number is not an integer in
 * [0, 2^31), naming the field; PD_ETOOBIG beyond lk->max_targets; PD_ENOMEM. On
 * error *out is left zeroed. */
int pd_k8s_build(enum pd_discovery_k8s_role role, const struct pd_sd_node *obj,
                 const struct pd_k8s_lookup *lk, struct pd_target_group *out, struct pd_err *err);

/* Frees what pd_k8s_build put into g (not g itself) and zeroes it. */
void pd_k8s_group_fini(struct pd_target_group *g);

#endif
