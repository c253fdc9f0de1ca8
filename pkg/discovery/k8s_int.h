/* k8s_int.h: what the files of kubernetes_sd_configs share privately. Objects
 * (pods, services, ...) are kept as parsed JSON trees (discovery_int.h's document
 * tree, as the API server sends them); k8s_roles.c turns one object of a role into
 * its target group with Prometheus's __meta_kubernetes_* labels (the builders of
 * the roles are k8s_roles_pod.c, k8s_roles_endpoints.c for endpoints and
 * endpointslice, k8s_roles_service.c, k8s_roles_node.c and k8s_roles_ingress.c),
 * looking related objects (an endpoints' service and pods, a pod's node, a
 * namespace) up through a callback; k8s.c, k8s_requests.c and k8s_store.c run the
 * lists and watches that keep those objects current. */
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

/* ---- what the builders' files share ------------------------------------------ */

struct pd_labels;
struct pd_labels_builder;

/* The state of one build. */
struct pd_k8s_kb {
	const struct pd_k8s_lookup *lk;
	struct pd_labels_builder *b;
	struct pd_buf name; /* scratch for label names */
	struct pd_target_group *g;
	size_t cap; /* of g->targets */
	size_t max_targets;
	struct pd_err *err;
};

/* Reading the JSON tree (k8s_roles.c). path_node: the member at a dotted path, or
 * NULL; str_of: a string node's text, or NULL; sz: the string at a dotted path, ""
 * when missing (Go's zero value); is_set: 1 when a pointer field is set (present and
 * not null); list_len: a list's length, 0 for anything else. */
const struct pd_sd_node *pd_k8s_path_node(const struct pd_sd_node *obj, const char *path);
const char *pd_k8s_str_of(const struct pd_sd_node *n);
const char *pd_k8s_sz(const struct pd_sd_node *obj, const char *path);
int pd_k8s_is_set(const struct pd_sd_node *n);
size_t pd_k8s_list_len(const struct pd_sd_node *n);

/* A related object through the build's lookup, or NULL. */
const struct pd_sd_node *pd_k8s_lookup_obj(const struct pd_k8s_kb *k, enum pd_k8s_kind kind,
                                           const char *ns, const char *name);
/* PD_ENOMEM with its message. */
int pd_k8s_oom(struct pd_k8s_kb *k);
/* Prefixes the message of a failed label build with the group's source. */
int pd_k8s_with_source(struct pd_k8s_kb *k, int rc);

/* Setting labels: setl sets name=value; setm sets __meta_kubernetes_<a><b> (b may be
 * NULL); set_sanitized sets __meta_kubernetes_<prefix><key> with the key sanitized as
 * Prometheus's strutil.SanitizeLabelName (in lower case with lower). A refused label
 * fails with the builder's message behind the group's source. */
int pd_k8s_setl(struct pd_k8s_kb *k, const char *name, const char *value);
int pd_k8s_setm(struct pd_k8s_kb *k, const char *a, const char *b, const char *value);
int pd_k8s_set_sanitized_case(struct pd_k8s_kb *k, const char *prefix, const char *key,
                              const char *value, int lower);
int pd_k8s_set_sanitized(struct pd_k8s_kb *k, const char *prefix, const char *key,
                         const char *value);
/* Prometheus's addObjectMetaLabels under role: _name and the labels and annotations. */
int pd_k8s_set_object_meta(struct pd_k8s_kb *k, const char *role, const struct pd_sd_node *obj);
/* The node's name, labels and annotations when the node is known (attach_metadata.node). */
int pd_k8s_set_node_meta(struct pd_k8s_kb *k, const char *node_name);
/* The namespace's labels and annotations (attach_metadata.namespace). */
int pd_k8s_set_namespace_meta(struct pd_k8s_kb *k, const char *ns);
/* An integer field as decimal text into dst (and *val unless NULL): 0 when absent;
 * PD_EINVAL naming what when it is not an integer in [0, 2^31). */
int pd_k8s_port_text(struct pd_k8s_kb *k, const struct pd_sd_node *n, const char *what, char *dst,
                     size_t cap, long *val);
/* Sets __address__ to host:port as Go's net.JoinHostPort writes it, or to host alone
 * when port is NULL. */
int pd_k8s_set_address(struct pd_k8s_kb *k, const char *host, const char *port);
/* Ends a target: the builder's labels become the group's next target. */
int pd_k8s_emit(struct pd_k8s_kb *k);

/* Pods (k8s_roles_pod.c): a pod's own labels, shared by its targets in every role;
 * its i-th container of containers followed by initContainers (*init tells which)
 * and their count; the labels of one container port target. */
int pd_k8s_set_pod_labels(struct pd_k8s_kb *k, const struct pd_sd_node *pod);
const struct pd_sd_node *pd_k8s_container_at(const struct pd_sd_node *pod, size_t i, int *init);
size_t pd_k8s_container_count(const struct pd_sd_node *pod);
int pd_k8s_set_container_port(struct pd_k8s_kb *k, const struct pd_sd_node *c, int init,
                              const char *number, const char *port_name, const char *protocol);

/* The builders of the roles: the group's targets into k->g, and its common labels
 * into *common (the pod builder leaves it NULL for a pod without IP or waiting for
 * its node). */
int pd_k8s_build_pod(struct pd_k8s_kb *k, const struct pd_sd_node *pod, const char *ns,
                     struct pd_labels **common);
int pd_k8s_build_endpoints(struct pd_k8s_kb *k, const struct pd_sd_node *eps, const char *ns,
                           const char *name, struct pd_labels **common);
int pd_k8s_build_endpointslice(struct pd_k8s_kb *k, const struct pd_sd_node *eps, const char *ns,
                               struct pd_labels **common);
int pd_k8s_build_service(struct pd_k8s_kb *k, const struct pd_sd_node *svc, const char *ns,
                         const char *name, struct pd_labels **common);
int pd_k8s_build_node(struct pd_k8s_kb *k, const struct pd_sd_node *node, const char *name,
                      struct pd_labels **common);
int pd_k8s_build_ingress(struct pd_k8s_kb *k, const struct pd_sd_node *ing, const char *ns,
                         struct pd_labels **common);

#endif
