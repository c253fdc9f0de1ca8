/* k8s_roles.c: the target groups of kubernetes_sd_configs. One Kubernetes object
 * (a Node, Service, Pod, Endpoints, EndpointSlice or Ingress, as the API server
 * sends it in JSON) becomes the group Prometheus's kubernetes discovery gives it:
 * the same source, the same targets in the same order and every __meta_kubernetes_*
 * label with Prometheus's name and value. Objects the group depends on (an
 * endpoints' service and pods, a pod's node, a namespace) come through the caller's
 * lookup. Fields of the wrong JSON type count as missing; port numbers that are not
 * integers are errors. Labels with empty values are left out, as they are the same
 * as no label. */
#include "k8s_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"

#define META "__meta_kubernetes_"

/* ---- JSON helpers ------------------------------------------------------------- */

const struct pd_sd_node *pd_k8s_field(const struct pd_sd_node *obj, const char *key)
{
	const struct pd_sd_node *v = NULL;
	size_t klen;
	if (!obj || obj->kind != PD_SD_MAP || !key)
		return NULL;
	klen = strlen(key);
	/* a key given twice takes its last value, as Go's decoder does */
	for (size_t i = 0; i < obj->n; i++) {
		const struct pd_sd_node *k = obj->kids[2 * i];
		if (k && k->kind == PD_SD_STRING && k->len == klen && !memcmp(k->str, key, klen))
			v = obj->kids[2 * i + 1];
	}
	return v;
}

/* The member at a dotted path, or NULL. */
static const struct pd_sd_node *path_node(const struct pd_sd_node *obj, const char *path)
{
	char step[128];
	while (obj && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(step))
			return NULL;
		memcpy(step, path, n);
		step[n] = 0;
		obj = pd_k8s_field(obj, step);
		path += n + (dot ? 1 : 0);
	}
	return obj;
}

static const char *str_of(const struct pd_sd_node *n)
{
	return n && n->kind == PD_SD_STRING ? n->str : NULL;
}

const char *pd_k8s_str(const struct pd_sd_node *obj, const char *path)
{
	return str_of(path_node(obj, path));
}

/* A string field, "" when missing (Go's zero value). */
static const char *sz(const struct pd_sd_node *obj, const char *path)
{
	const char *s = pd_k8s_str(obj, path);
	return s ? s : "";
}

/* 1 when a pointer field is set (present and not null). */
static int is_set(const struct pd_sd_node *n)
{
	return n && n->kind != PD_SD_NULL;
}

static size_t list_len(const struct pd_sd_node *n)
{
	return n && n->kind == PD_SD_LIST ? n->n : 0;
}

/* ---- the building state ------------------------------------------------------- */

struct kb {
	const struct pd_k8s_lookup *lk;
	struct pd_labels_builder *b;
	struct pd_buf name; /* scratch for label names */
	struct pd_target_group *g;
	size_t cap; /* of g->targets */
	size_t max_targets;
	struct pd_err *err;
};

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

static const struct pd_sd_node *lookup(const struct kb *k, enum pd_k8s_kind kind, const char *ns,
                                       const char *name)
{
	if (!k->lk || !k->lk->get || !name)
		return NULL;
	return k->lk->get(k->lk->ctx, kind, ns, name);
}

static int oom(struct kb *k)
{
	return pd_err_set(k->err, PD_ENOMEM, "out of memory");
}

/* Prefixes the message of a failed label build with the group's source. */
static int with_source(struct kb *k, int rc)
{
	char msg[sizeof(k->err->msg)];
	snprintf(msg, sizeof(msg), "%s", k->err->msg);
	return pd_err_set(k->err, rc, "%s: %s", k->g->source, msg);
}

/* Sets name=value; a refused label (too long, too many) fails with the builder's
 * message behind the group's source. */
static int setl(struct kb *k, const char *name, const char *value)
{
	struct pd_labels *none = NULL;
	int rc = pd_labels_builder_set(k->b, name, value ? value : "");
	if (!rc)
		return 0;
	/* the builder keeps the reason; finish hands it over with the code */
	if (!pd_labels_builder_finish(k->b, &none, k->err)) {
		pd_labels_destroy(none);
		return pd_err_set(k->err, rc, "%s: label %.64s refused", k->g->source, name);
	}
	return with_source(k, rc);
}

/* Sets META <a> <b> = value (b may be NULL). */
static int setm(struct kb *k, const char *a, const char *b, const char *value)
{
	k->name.len = 0;
	if (pd_buf_printf(&k->name, META "%s%s", a, b ? b : "") || pd_buf_append(&k->name, "", 1))
		return oom(k);
	return setl(k, (const char *)k->name.data, value);
}

/* Appends s to the name with every character outside [a-zA-Z0-9_] replaced by '_'
 * (a UTF-8 sequence is one character, a byte that starts none is one), as
 * Prometheus's strutil.SanitizeLabelName. */
static int put_sanitized(struct kb *k, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned char c = *p;
		size_t w = 1;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '_') {
			if (pd_buf_append(&k->name, p, 1))
				return oom(k);
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			w = 2;
		else if (c >= 0xe0 && c <= 0xef)
			w = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			w = 4;
		for (size_t i = 1; i < w; i++)
			if ((p[i] & 0xc0) != 0x80) {
				w = 1;
				break;
			}
		if (w == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f)))
			w = 1;
		if (w == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f)))
			w = 1;
		if (pd_buf_append(&k->name, "_", 1))
			return oom(k);
		p += w;
	}
	return 0;
}

/* Sets META <prefix> sanitize(key) = value; with lower, the sanitized key is in
 * lower case (Prometheus lowers node condition types before sanitizing them; the
 * sanitized text is ASCII, so the order makes no difference). */
static int set_sanitized_case(struct kb *k, const char *prefix, const char *key, const char *value,
                              int lower)
{
	size_t from;
	int rc;
	k->name.len = 0;
	if (pd_buf_printf(&k->name, META "%s", prefix))
		return oom(k);
	from = k->name.len;
	if ((rc = put_sanitized(k, key)))
		return rc;
	if (pd_buf_append(&k->name, "", 1))
		return oom(k);
	for (size_t i = from; lower && i < k->name.len; i++)
		if (k->name.data[i] >= 'A' && k->name.data[i] <= 'Z')
			k->name.data[i] = (uint8_t)(k->name.data[i] - 'A' + 'a');
	return setl(k, (const char *)k->name.data, value);
}

static int set_sanitized(struct kb *k, const char *prefix, const char *key, const char *value)
{
	return set_sanitized_case(k, prefix, key, value, 0);
}

/* Sets META name = value in ASCII lower case (Go's strings.ToLower of the values
 * Kubernetes uses: "True", "False", "Unknown"). */
static int setm_lower(struct kb *k, const char *name, const char *value)
{
	char *low = strdup(value ? value : "");
	int rc;
	if (!low)
		return oom(k);
	for (char *c = low; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	rc = setm(k, name, NULL, low);
	free(low);
	return rc;
}

/* The labels and annotations of an object's metadata under resource ("pod",
 * "namespace", ...): _label_<k>, _labelpresent_<k>, _annotation_<k>,
 * _annotationpresent_<k>. */
static int set_labels_annotations(struct kb *k, const char *resource, const struct pd_sd_node *meta)
{
	static const char *const maps[2][3] = {
	    {"labels", "_label_", "_labelpresent_"},
	    {"annotations", "_annotation_", "_annotationpresent_"}};
	char p1[64], p2[64];
	int rc;
	for (int m = 0; m < 2; m++) {
		const struct pd_sd_node *map = pd_k8s_field(meta, maps[m][0]);
		if (!map || map->kind != PD_SD_MAP)
			continue;
		snprintf(p1, sizeof(p1), "%s%s", resource, maps[m][1]);
		snprintf(p2, sizeof(p2), "%s%s", resource, maps[m][2]);
		for (size_t i = 0; i < map->n; i++) {
			const char *key = str_of(map->kids[2 * i]);
			if (!key)
				continue;
			if ((rc = set_sanitized(k, p1, key, str_of(map->kids[2 * i + 1]))) ||
			    (rc = set_sanitized(k, p2, key, "true")))
				return rc;
		}
	}
	return 0;
}

/* Prometheus's addObjectMetaLabels: _name and the labels and annotations. */
static int set_object_meta(struct kb *k, const char *role, const struct pd_sd_node *obj)
{
	const struct pd_sd_node *meta = pd_k8s_field(obj, "metadata");
	int rc;
	if ((rc = setm(k, role, "_name", pd_k8s_str(meta, "name"))))
		return rc;
	return set_labels_annotations(k, role, meta);
}

/* The node's name, labels and annotations (attach_metadata.node), when the node is
 * known. */
static int set_node_meta(struct kb *k, const char *node_name)
{
	const struct pd_sd_node *node = lookup(k, PD_K8S_KIND_NODE, NULL, node_name);
	return node ? set_object_meta(k, "node", node) : 0;
}

/* The namespace's labels and annotations (attach_metadata.namespace). */
static int set_namespace_meta(struct kb *k, const char *ns)
{
	const struct pd_sd_node *o;
	if (!k->lk || !k->lk->attach_namespace)
		return 0;
	if (!(o = lookup(k, PD_K8S_KIND_NAMESPACE, NULL, ns)))
		return 0;
	return set_labels_annotations(k, "namespace", pd_k8s_field(o, "metadata"));
}

/* An integer field as decimal text into dst: 0 when absent (Go's zero value);
 * PD_EINVAL naming what when it is not an integer in [0, 2^31). */
static int port_text(struct kb *k, const struct pd_sd_node *n, const char *what, char *dst,
                     size_t cap, long *val)
{
	char *end;
	long v = 0;
	if (is_set(n)) {
		if (n->kind != PD_SD_NUMBER || !n->str)
			return pd_err_set(k->err, PD_EINVAL, "%s: %s is not a number", k->g->source,
			                  what);
		v = strtol(n->str, &end, 10);
		if (*end || v < 0 || v > 2147483647L)
			return pd_err_set(k->err, PD_EINVAL,
			                  "%s: %s is %s, not a port number (0 to 2147483647)",
			                  k->g->source, what, n->str);
	}
	snprintf(dst, cap, "%ld", v);
	if (val)
		*val = v;
	return 0;
}

/* Sets __address__ to host:port as Go's net.JoinHostPort writes it (brackets
 * around a host with a colon, i.e. IPv6), or to host alone when port is NULL. */
static int set_address(struct kb *k, const char *host, const char *port)
{
	int colon = port && strchr(host, ':');
	k->name.len = 0;
	if (pd_buf_printf(&k->name, "%s%s%s%s%s", colon ? "[" : "", host, colon ? "]" : "",
	                  port ? ":" : "", port ? port : "") ||
	    pd_buf_append(&k->name, "", 1))
		return oom(k);
	return setl(k, "__address__", (const char *)k->name.data);
}

/* Ends a target: the builder's labels become the group's next target. */
static int emit(struct kb *k)
{
	struct pd_target_group *g = k->g;
	int rc;
	if (g->ntargets >= k->max_targets)
		return pd_err_set(k->err, PD_ETOOBIG, "%s: more than %zu targets", g->source,
		                  k->max_targets);
	if (g->ntargets == k->cap) {
		size_t nc = k->cap ? 2 * k->cap : 4;
		struct pd_labels **t = realloc(g->targets, nc * sizeof(*t));
		if (!t)
			return oom(k);
		g->targets = t;
		k->cap = nc;
	}
	if ((rc = pd_labels_builder_finish(k->b, &g->targets[g->ntargets], k->err)))
		return with_source(k, rc);
	g->ntargets++;
	return 0;
}

/* ---- pods --------------------------------------------------------------------- */

/* Prometheus's podLabels: a pod's own labels, shared by its targets in every role. */
static int set_pod_labels(struct kb *k, const struct pd_sd_node *pod)
{
	const struct pd_sd_node *conds = path_node(pod, "status.conditions");
	const struct pd_sd_node *owners = path_node(pod, "metadata.ownerReferences");
	const char *ready = "Unknown";
	int rc;
	for (size_t i = 0; i < list_len(conds); i++)
		if (!strcmp(sz(conds->kids[i], "type"), "Ready")) {
			ready = sz(conds->kids[i], "status");
			break;
		}
	if ((rc = setm(k, "pod_ip", NULL, pd_k8s_str(pod, "status.podIP"))) ||
	    (rc = setm_lower(k, "pod_ready", ready)) ||
	    (rc = setm(k, "pod_phase", NULL, pd_k8s_str(pod, "status.phase"))) ||
	    (rc = setm(k, "pod_node_name", NULL, pd_k8s_str(pod, "spec.nodeName"))) ||
	    (rc = setm(k, "pod_host_ip", NULL, pd_k8s_str(pod, "status.hostIP"))) ||
	    (rc = setm(k, "pod_uid", NULL, pd_k8s_str(pod, "metadata.uid"))) ||
	    (rc = set_object_meta(k, "pod", pod)))
		return rc;
	for (size_t i = 0; i < list_len(owners); i++) {
		const struct pd_sd_node *c = pd_k8s_field(owners->kids[i], "controller");
		if (!c || c->kind != PD_SD_BOOL || strcmp(c->str, "true"))
			continue;
		if ((rc = setm(k, "pod_controller_kind", NULL, sz(owners->kids[i], "kind"))) ||
		    (rc = setm(k, "pod_controller_name", NULL, sz(owners->kids[i], "name"))))
			return rc;
		break;
	}
	return 0;
}

/* The i-th container of containers followed by initContainers; *init tells which. */
static const struct pd_sd_node *container_at(const struct pd_sd_node *pod, size_t i, int *init)
{
	const struct pd_sd_node *cs = path_node(pod, "spec.containers");
	const struct pd_sd_node *ics = path_node(pod, "spec.initContainers");
	size_t n = list_len(cs);
	*init = i >= n;
	if (i < n)
		return cs->kids[i];
	return i - n < list_len(ics) ? ics->kids[i - n] : NULL;
}

static size_t container_count(const struct pd_sd_node *pod)
{
	return list_len(path_node(pod, "spec.containers")) +
	       list_len(path_node(pod, "spec.initContainers"));
}

/* The containerID of the status of the container called name. */
static const char *container_id(const struct pd_sd_node *pod, int init, const char *name)
{
	const struct pd_sd_node *st =
	    path_node(pod, init ? "status.initContainerStatuses" : "status.containerStatuses");
	for (size_t i = 0; i < list_len(st); i++)
		if (!strcmp(sz(st->kids[i], "name"), name))
			return sz(st->kids[i], "containerID");
	return "";
}

/* The labels of one container port target (without the pod's labels). */
static int set_container_port(struct kb *k, const struct pd_sd_node *c, int init,
                              const char *number, const char *port_name, const char *protocol)
{
	int rc;
	if ((rc = setm(k, "pod_container_name", NULL, sz(c, "name"))) ||
	    (rc = setm(k, "pod_container_image", NULL, sz(c, "image"))) ||
	    (rc = setm(k, "pod_container_port_name", NULL, port_name)) ||
	    (rc = setm(k, "pod_container_port_number", NULL, number)) ||
	    (rc = setm(k, "pod_container_port_protocol", NULL, protocol)) ||
	    (rc = setm(k, "pod_container_init", NULL, init ? "true" : "false")))
		return rc;
	return 0;
}

static int build_pod(struct kb *k, const struct pd_sd_node *pod, const char *ns,
                     struct pd_labels **common)
{
	const char *ip = sz(pod, "status.podIP");
	const char *node_name = sz(pod, "spec.nodeName");
	char num[16];
	int rc;

	if (!*ip)
		return 0;
	if (k->lk && k->lk->attach_node && !lookup(k, PD_K8S_KIND_NODE, NULL, node_name))
		return 0; /* Prometheus waits for the node */
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = set_pod_labels(k, pod)) || (rc = setm(k, "namespace", NULL, ns)) ||
	    (k->lk && k->lk->attach_node && (rc = set_node_meta(k, node_name))) ||
	    (rc = set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return with_source(k, rc);

	for (size_t i = 0, n = container_count(pod); i < n; i++) {
		int init;
		const struct pd_sd_node *c = container_at(pod, i, &init);
		const struct pd_sd_node *ports = pd_k8s_field(c, "ports");
		const char *cid = container_id(pod, init, sz(c, "name"));
		if (!list_len(ports)) {
			pd_labels_builder_reset(k->b, NULL);
			if ((rc = setl(k, "__address__", ip)) ||
			    (rc = setm(k, "pod_container_name", NULL, sz(c, "name"))) ||
			    (rc = setm(k, "pod_container_id", NULL, cid)) ||
			    (rc = setm(k, "pod_container_image", NULL, sz(c, "image"))) ||
			    (rc = setm(k, "pod_container_init", NULL, init ? "true" : "false")) ||
			    (rc = emit(k)))
				return rc;
			continue;
		}
		for (size_t j = 0; j < ports->n; j++) {
			const struct pd_sd_node *p = ports->kids[j];
			if ((rc = port_text(k, pd_k8s_field(p, "containerPort"), "containerPort",
			                    num, sizeof(num), NULL)))
				return rc;
			pd_labels_builder_reset(k->b, NULL);
			if ((rc = set_address(k, ip, num)) ||
			    (rc = set_container_port(k, c, init, num, sz(p, "name"),
			                             sz(p, "protocol"))) ||
			    (rc = setm(k, "pod_container_id", NULL, cid)) || (rc = emit(k)))
				return rc;
		}
	}
	return 0;
}

/* ---- endpoints and endpointslices ------------------------------------------------ */

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->p[i].ports);
	free(s->p);
}

/* Records that a target for pod's port (-1: none) was made. */
static int seen_add(struct kb *k, struct seen *s, const struct pd_sd_node *pod, long port)
{
	const char *ns = sz(pod, "metadata.namespace"), *name = sz(pod, "metadata.name");
	struct seen_pod *sp = NULL;
	for (size_t i = 0; i < s->n && !sp; i++)
		if (!strcmp(sz(s->p[i].pod, "metadata.namespace"), ns) &&
		    !strcmp(sz(s->p[i].pod, "metadata.name"), name))
			sp = &s->p[i];
	if (!sp) {
		if (s->n == s->cap) {
			size_t nc = s->cap ? 2 * s->cap : 4;
			struct seen_pod *np = realloc(s->p, nc * sizeof(*np));
			if (!np)
				return oom(k);
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
			return oom(k);
		sp->ports = np;
		sp->cap = nc;
	}
	sp->ports[sp->nports++] = port;
	return 0;
}

/* The pod a targetRef names (kind Pod), when known. */
static const struct pd_sd_node *ref_pod(struct kb *k, const struct pd_sd_node *ref)
{
	if (!is_set(ref) || strcmp(sz(ref, "kind"), "Pod"))
		return NULL;
	return lookup(k, PD_K8S_KIND_POD, sz(ref, "namespace"), sz(ref, "name"));
}

/* For an endpoint address's target of pod: the pod's labels, and the container
 * port labels of the container port equal to port (the last container with one
 * wins). proto_from_endpoint: the protocol is the endpoint port's (endpoints) or
 * the container port's (endpointslice). */
static int set_pod_target(struct kb *k, const struct pd_sd_node *pod, long port, const char *num,
                          const char *ep_proto, int proto_from_endpoint)
{
	char cnum[16];
	long cv;
	int rc;
	if ((rc = set_pod_labels(k, pod)))
		return rc;
	if (port < 0)
		return 0;
	for (size_t i = 0, n = container_count(pod); i < n; i++) {
		int init;
		const struct pd_sd_node *c = container_at(pod, i, &init);
		const struct pd_sd_node *ports = pd_k8s_field(c, "ports");
		for (size_t j = 0; j < list_len(ports); j++) {
			const struct pd_sd_node *p = ports->kids[j];
			if ((rc = port_text(k, pd_k8s_field(p, "containerPort"), "containerPort",
			                    cnum, sizeof(cnum), &cv)))
				return rc;
			if (cv != port)
				continue;
			if ((rc = set_container_port(k, c, init, num, sz(p, "name"),
			                             proto_from_endpoint ? ep_proto
			                                                 : sz(p, "protocol"))))
				return rc;
			break;
		}
	}
	return 0;
}

/* The targets of the container ports of the seen pods that no endpoint port
 * covered, pod by pod in the order first seen. */
static int emit_other_ports(struct kb *k, const struct seen *s)
{
	char num[16];
	long cv;
	int rc;
	for (size_t i = 0; i < s->n; i++) {
		const struct pd_sd_node *pod = s->p[i].pod;
		const char *ip = sz(pod, "status.podIP");
		if (!*ip)
			continue;
		for (size_t ci = 0, n = container_count(pod); ci < n; ci++) {
			int init, covered;
			const struct pd_sd_node *c = container_at(pod, ci, &init);
			const struct pd_sd_node *ports = pd_k8s_field(c, "ports");
			for (size_t j = 0; j < list_len(ports); j++) {
				const struct pd_sd_node *p = ports->kids[j];
				if ((rc = port_text(k, pd_k8s_field(p, "containerPort"),
				                    "containerPort", num, sizeof(num), &cv)))
					return rc;
				covered = 0;
				for (size_t q = 0; q < s->p[i].nports && !covered; q++)
					covered = s->p[i].ports[q] == cv;
				if (covered)
					continue;
				pd_labels_builder_reset(k->b, NULL);
				if ((rc = set_address(k, ip, num)) ||
				    (rc = set_container_port(k, c, init, num, sz(p, "name"),
				                             sz(p, "protocol"))) ||
				    (rc = set_pod_labels(k, pod)) || (rc = emit(k)))
					return rc;
			}
		}
	}
	return 0;
}

/* A service's labels as the endpoints roles add them: namespace, name, labels and
 * annotations. */
static int set_service_labels(struct kb *k, const struct pd_sd_node *svc)
{
	int rc;
	if ((rc = setm(k, "namespace", NULL, sz(svc, "metadata.namespace"))))
		return rc;
	return set_object_meta(k, "service", svc);
}

static int endpoints_add(struct kb *k, struct seen *s, const struct pd_sd_node *addr,
                         const struct pd_sd_node *port, const char *ready)
{
	const struct pd_sd_node *ref = pd_k8s_field(addr, "targetRef");
	const struct pd_sd_node *node = pd_k8s_field(addr, "nodeName");
	const struct pd_sd_node *pod;
	char num[16];
	long pv = 0;
	int rc;

	if ((rc = port_text(k, pd_k8s_field(port, "port"), "subsets[].ports[].port", num,
	                    sizeof(num), &pv)))
		return rc;
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = set_address(k, sz(addr, "ip"), num)) ||
	    (rc = setm(k, "endpoint_port_name", NULL, sz(port, "name"))) ||
	    (rc = setm(k, "endpoint_port_protocol", NULL, sz(port, "protocol"))) ||
	    (rc = setm(k, "endpoint_ready", NULL, ready)))
		return rc;
	if (is_set(ref) && ((rc = setm(k, "endpoint_address_target_kind", NULL, sz(ref, "kind"))) ||
	                    (rc = setm(k, "endpoint_address_target_name", NULL, sz(ref, "name")))))
		return rc;
	if (str_of(node) && (rc = setm(k, "endpoint_node_name", NULL, str_of(node))))
		return rc;
	if ((rc = setm(k, "endpoint_hostname", NULL, sz(addr, "hostname"))))
		return rc;
	if (k->lk && k->lk->attach_node) {
		if (str_of(node))
			rc = set_node_meta(k, str_of(node));
		else if (is_set(ref) && !strcmp(sz(ref, "kind"), "Node"))
			rc = set_node_meta(k, sz(ref, "name"));
		if (rc)
			return rc;
	}
	if ((pod = ref_pod(k, ref))) {
		if ((rc = seen_add(k, s, pod, pv)) ||
		    (rc = set_pod_target(k, pod, pv, num, sz(port, "protocol"), 1)))
			return rc;
	}
	return emit(k);
}

static int build_endpoints(struct kb *k, const struct pd_sd_node *eps, const char *ns,
                           const char *name, struct pd_labels **common)
{
	const struct pd_sd_node *subsets = pd_k8s_field(eps, "subsets");
	const struct pd_sd_node *svc = lookup(k, PD_K8S_KIND_SERVICE, ns, name);
	struct seen s = {0};
	int rc;

	pd_labels_builder_reset(k->b, NULL);
	if ((rc = setm(k, "namespace", NULL, ns)) || (svc && (rc = set_service_labels(k, svc))) ||
	    (rc = set_object_meta(k, "endpoints", eps)) || (rc = set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return with_source(k, rc);

	for (size_t i = 0; i < list_len(subsets); i++) {
		const struct pd_sd_node *ss = subsets->kids[i];
		const struct pd_sd_node *ports = pd_k8s_field(ss, "ports");
		const struct pd_sd_node *ready = pd_k8s_field(ss, "addresses");
		const struct pd_sd_node *nready = pd_k8s_field(ss, "notReadyAddresses");
		for (size_t p = 0; p < list_len(ports); p++) {
			for (size_t a = 0; a < list_len(ready); a++)
				if ((rc = endpoints_add(k, &s, ready->kids[a], ports->kids[p],
				                        "true")))
					goto out;
			for (size_t a = 0; a < list_len(nready); a++)
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

static int slice_add(struct kb *k, struct seen *s, const char *addr, const struct pd_sd_node *ep,
                     const struct pd_sd_node *port)
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

	if (is_set(pn) && (rc = port_text(k, pn, "ports[].port", num, sizeof(num), &pv)))
		return rc;
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = set_address(k, addr, is_set(pn) ? num : NULL)) ||
	    (rc = setm(k, "endpointslice_port_name", NULL, pd_k8s_str(port, "name"))) ||
	    (rc = setm(k, "endpointslice_port_protocol", NULL, pd_k8s_str(port, "protocol"))) ||
	    (rc = setm(k, "endpointslice_port", NULL, num)) ||
	    (rc = setm(k, "endpointslice_port_app_protocol", NULL,
	               pd_k8s_str(port, "appProtocol"))) ||
	    (rc = setm(k, "endpointslice_endpoint_conditions_ready", NULL,
	               bool_of(pd_k8s_field(conds, "ready")))) ||
	    (rc = setm(k, "endpointslice_endpoint_conditions_serving", NULL,
	               bool_of(pd_k8s_field(conds, "serving")))) ||
	    (rc = setm(k, "endpointslice_endpoint_conditions_terminating", NULL,
	               bool_of(pd_k8s_field(conds, "terminating")))) ||
	    (rc = setm(k, "endpointslice_endpoint_hostname", NULL, pd_k8s_str(ep, "hostname"))))
		return rc;
	if (is_set(ref) &&
	    ((rc = setm(k, "endpointslice_address_target_kind", NULL, sz(ref, "kind"))) ||
	     (rc = setm(k, "endpointslice_address_target_name", NULL, sz(ref, "name")))))
		return rc;
	if ((rc = setm(k, "endpointslice_endpoint_node_name", NULL, node)) ||
	    (rc = setm(k, "endpointslice_endpoint_zone", NULL, pd_k8s_str(ep, "zone"))))
		return rc;
	if (topo && topo->kind == PD_SD_MAP)
		for (size_t i = 0; i < topo->n; i++) {
			const char *key = str_of(topo->kids[2 * i]);
			if (key &&
			    ((rc = set_sanitized(k, "endpointslice_endpoint_topology_", key,
			                         str_of(topo->kids[2 * i + 1]))) ||
			     (rc = set_sanitized(k, "endpointslice_endpoint_topology_present_", key,
			                         "true"))))
				return rc;
		}
	if (k->lk && k->lk->attach_node) {
		if (is_set(ref) && !strcmp(sz(ref, "kind"), "Node"))
			rc = set_node_meta(k, sz(ref, "name"));
		else if (node)
			rc = set_node_meta(k, node);
		if (rc)
			return rc;
	}
	if ((pod = ref_pod(k, ref))) {
		if ((rc = seen_add(k, s, pod, pv)) ||
		    (rc = set_pod_target(k, pod, pv, num, NULL, 0)))
			return rc;
	}
	return emit(k);
}

/* 1 when the slice is the second address family of a dual-stack service, whose
 * targets would repeat those of the first. */
static int secondary_family(const struct pd_sd_node *svc, const struct pd_sd_node *slice)
{
	const char *policy = pd_k8s_str(svc, "spec.ipFamilyPolicy");
	const struct pd_sd_node *fams = path_node(svc, "spec.ipFamilies");
	if (!policy || (strcmp(policy, "PreferDualStack") && strcmp(policy, "RequireDualStack")))
		return 0;
	if (!list_len(fams))
		return 0;
	return strcmp(sz(slice, "addressType"), str_of(fams->kids[0]) ? fams->kids[0]->str : "") !=
	       0;
}

static int build_endpointslice(struct kb *k, const struct pd_sd_node *eps, const char *ns,
                               struct pd_labels **common)
{
	const struct pd_sd_node *labels = path_node(eps, "metadata.labels");
	const struct pd_sd_node *svc_name = pd_k8s_field(labels, "kubernetes.io/service-name");
	const struct pd_sd_node *svc = NULL;
	const struct pd_sd_node *endpoints = pd_k8s_field(eps, "endpoints");
	const struct pd_sd_node *ports = pd_k8s_field(eps, "ports");
	struct seen s = {0};
	int rc;

	if (labels && labels->kind == PD_SD_MAP && svc_name)
		svc = lookup(k, PD_K8S_KIND_SERVICE, ns, str_of(svc_name) ? svc_name->str : "");
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = setm(k, "namespace", NULL, ns)) ||
	    (rc = setm(k, "endpointslice_address_type", NULL, pd_k8s_str(eps, "addressType"))) ||
	    (rc = set_object_meta(k, "endpointslice", eps)) ||
	    (svc && (rc = set_service_labels(k, svc))) || (rc = set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return with_source(k, rc);
	if (svc && secondary_family(svc, eps))
		return 0;

	for (size_t e = 0; e < list_len(endpoints); e++) {
		const struct pd_sd_node *ep = endpoints->kids[e];
		const struct pd_sd_node *addrs = pd_k8s_field(ep, "addresses");
		for (size_t p = 0; p < list_len(ports); p++)
			for (size_t a = 0; a < list_len(addrs); a++) {
				const char *addr = str_of(addrs->kids[a]);
				if ((rc = slice_add(k, &s, addr ? addr : "", ep, ports->kids[p])))
					goto out;
			}
	}
	rc = emit_other_ports(k, &s);
out:
	seen_free(&s);
	return rc;
}

/* ---- services, nodes, ingresses -------------------------------------------------- */

/* The target of one port of a service. */
static int service_target(struct kb *k, const struct pd_sd_node *svc, const struct pd_sd_node *p,
                          const char *host, const char *type)
{
	const struct pd_sd_node *ing = path_node(svc, "status.loadBalancer.ingress");
	struct pd_buf ips;
	char num[16];
	int rc;

	if ((rc = port_text(k, pd_k8s_field(p, "port"), "spec.ports[].port", num, sizeof(num),
	                    NULL)))
		return rc;
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = set_address(k, host, num)) ||
	    (rc = setm(k, "service_port_name", NULL, sz(p, "name"))) ||
	    (rc = setm(k, "service_port_number", NULL, num)) ||
	    (rc = setm(k, "service_port_protocol", NULL, sz(p, "protocol"))) ||
	    (rc = setm(k, "service_type", NULL, type)))
		return rc;
	if (!strcmp(type, "ExternalName"))
		rc = setm(k, "service_external_name", NULL, sz(svc, "spec.externalName"));
	else
		rc = setm(k, "service_cluster_ip", NULL, sz(svc, "spec.clusterIP"));
	if (rc || strcmp(type, "LoadBalancer"))
		return rc ? rc : emit(k);
	/* status.loadBalancer.ingress[].ip joined with commas, else the deprecated
	 * spec.loadBalancerIP */
	pd_buf_init(&ips, 0);
	for (size_t j = 0; j < list_len(ing); j++) {
		const char *ip = sz(ing->kids[j], "ip");
		if (*ip && ((ips.len && pd_buf_append(&ips, ",", 1)) ||
		            pd_buf_append(&ips, ip, strlen(ip)))) {
			pd_buf_fini(&ips);
			return oom(k);
		}
	}
	if (pd_buf_append(&ips, "", 1)) {
		pd_buf_fini(&ips);
		return oom(k);
	}
	rc = setm(k, "service_loadbalancer_ip", NULL,
	          ips.len > 1 ? (const char *)ips.data : sz(svc, "spec.loadBalancerIP"));
	pd_buf_fini(&ips);
	return rc ? rc : emit(k);
}

static int build_service(struct kb *k, const struct pd_sd_node *svc, const char *ns,
                         const char *name, struct pd_labels **common)
{
	const struct pd_sd_node *ports = path_node(svc, "spec.ports");
	const char *type = sz(svc, "spec.type");
	char *host;
	int rc;

	pd_labels_builder_reset(k->b, NULL);
	if ((rc = setm(k, "namespace", NULL, ns)) || (rc = set_object_meta(k, "service", svc)) ||
	    (rc = set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return with_source(k, rc);

	if (!(host = malloc(strlen(name) + strlen(ns) + 6)))
		return oom(k);
	sprintf(host, "%s.%s.svc", name, ns);
	for (size_t i = 0; i < list_len(ports) && !rc; i++)
		rc = service_target(k, svc, ports->kids[i], host, type);
	free(host);
	return rc;
}

static int build_node(struct kb *k, const struct pd_sd_node *node, const char *name,
                      struct pd_labels **common)
{
	static const char *const pref[] = {"InternalIP",  "InternalDNS",  "ExternalIP",
	                                   "ExternalDNS", "LegacyHostIP", "Hostname"};
	const struct pd_sd_node *conds = path_node(node, "status.conditions");
	const struct pd_sd_node *addrs = path_node(node, "status.addresses");
	const char *addr = NULL;
	char num[16];
	int rc;

	pd_labels_builder_reset(k->b, NULL);
	if ((rc = setm(k, "node_provider_id", NULL, pd_k8s_str(node, "spec.providerID"))))
		return rc;
	for (size_t i = 0; i < list_len(conds); i++) {
		char *v = strdup(sz(conds->kids[i], "status"));
		if (!v)
			return oom(k);
		for (char *c = v; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		rc = set_sanitized_case(k, "node_condition_", sz(conds->kids[i], "type"), v, 1);
		free(v);
		if (rc)
			return rc;
	}
	if ((rc = set_object_meta(k, "node", node)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return with_source(k, rc);

	for (size_t p = 0; p < sizeof(pref) / sizeof(pref[0]) && !addr; p++)
		for (size_t i = 0; i < list_len(addrs) && !addr; i++)
			if (!strcmp(sz(addrs->kids[i], "type"), pref[p]))
				addr = sz(addrs->kids[i], "address");
	if (!addr)
		return 0; /* no address known: no target */
	if ((rc = port_text(k, path_node(node, "status.daemonEndpoints.kubeletEndpoint.Port"),
	                    "status.daemonEndpoints.kubeletEndpoint.Port", num, sizeof(num), NULL)))
		return rc;
	pd_labels_builder_reset(k->b, NULL);
	if ((rc = set_address(k, addr, num)) || (rc = setl(k, "instance", name)))
		return rc;
	/* the first address of each type; a later one of a type seen is skipped */
	for (size_t i = 0; i < list_len(addrs); i++) {
		const char *type = sz(addrs->kids[i], "type");
		int first = 1;
		for (size_t j = 0; j < i && first; j++)
			first = strcmp(sz(addrs->kids[j], "type"), type) != 0;
		if (first &&
		    (rc = set_sanitized(k, "node_address_", type, sz(addrs->kids[i], "address"))))
			return rc;
	}
	return emit(k);
}

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

static int build_ingress(struct kb *k, const struct pd_sd_node *ing, const char *ns,
                         struct pd_labels **common)
{
	const struct pd_sd_node *rules = path_node(ing, "spec.rules");
	const struct pd_sd_node *tls = path_node(ing, "spec.tls");
	int rc;

	pd_labels_builder_reset(k->b, NULL);
	if ((rc = setm(k, "namespace", NULL, ns)) ||
	    (rc = setm(k, "ingress_class_name", NULL, pd_k8s_str(ing, "spec.ingressClassName"))) ||
	    (rc = set_object_meta(k, "ingress", ing)) || (rc = set_namespace_meta(k, ns)))
		return rc;
	if ((rc = pd_labels_builder_finish(k->b, common, k->err)))
		return with_source(k, rc);

	for (size_t r = 0; r < list_len(rules); r++) {
		const struct pd_sd_node *rule = rules->kids[r];
		const char *host = sz(rule, "host");
		const struct pd_sd_node *http = pd_k8s_field(rule, "http");
		const struct pd_sd_node *paths = pd_k8s_field(http, "paths");
		const char *scheme = "http";
		size_t npaths = is_set(http) ? list_len(paths) : 1;
		for (size_t t = 0; t < list_len(tls) && !strcmp(scheme, "http"); t++) {
			const struct pd_sd_node *hosts = pd_k8s_field(tls->kids[t], "hosts");
			for (size_t h = 0; h < list_len(hosts); h++)
				if (str_of(hosts->kids[h]) &&
				    host_matches(hosts->kids[h]->str, host)) {
					scheme = "https";
					break;
				}
		}
		for (size_t p = 0; p < npaths; p++) {
			const char *path = is_set(http) ? sz(paths->kids[p], "path") : "/";
			pd_labels_builder_reset(k->b, NULL);
			if ((rc = setl(k, "__address__", host)) ||
			    (rc = setm(k, "ingress_scheme", NULL, scheme)) ||
			    (rc = setm(k, "ingress_host", NULL, host)) ||
			    (rc = setm(k, "ingress_path", NULL, *path ? path : "/")) ||
			    (rc = emit(k)))
				return rc;
		}
	}
	return 0;
}

/* ---- entry points ---------------------------------------------------------------- */

void pd_k8s_source(enum pd_discovery_k8s_role role, const char *ns, const char *name, char *dst,
                   size_t cap)
{
	static const char *const kinds[] = {"node",      "svc",           "pod",
	                                    "endpoints", "endpointslice", "ingress"};
	const char *kind = (unsigned)role < sizeof(kinds) / sizeof(kinds[0]) ? kinds[role] : "?";
	if (!cap)
		return;
	if (role == PD_DISCOVERY_K8S_NODE)
		snprintf(dst, cap, "%s/%s", kind, name ? name : "");
	else
		snprintf(dst, cap, "%s/%s/%s", kind, ns ? ns : "", name ? name : "");
}

void pd_k8s_group_fini(struct pd_target_group *g)
{
	if (!g)
		return;
	free(g->source);
	for (size_t i = 0; i < g->ntargets; i++)
		pd_labels_destroy(g->targets[i]);
	free(g->targets);
	pd_labels_destroy(g->labels);
	memset(g, 0, sizeof(*g));
}

int pd_k8s_build(enum pd_discovery_k8s_role role, const struct pd_sd_node *obj,
                 const struct pd_k8s_lookup *lk, struct pd_target_group *out, struct pd_err *err)
{
	static const char *const roles[] = {"node",      "service",       "pod",
	                                    "endpoints", "endpointslice", "ingress"};
	struct pd_labels_limits lim = {.max_labels = PD_K8S_MAX_LABELS,
	                               .max_name_len = PD_K8S_MAX_LABEL_NAME_LEN,
	                               .max_value_len = PD_K8S_MAX_LABEL_VALUE_LEN};
	struct kb k = {.lk = lk, .g = out, .err = err};
	struct pd_labels *common = NULL;
	const char *name, *ns;
	size_t slen;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((unsigned)role >= sizeof(roles) / sizeof(roles[0]))
		return pd_err_set(err, PD_EINVAL, "unknown kubernetes_sd role %d", (int)role);
	if (!obj || obj->kind != PD_SD_MAP)
		return pd_err_set(err, PD_EINVAL, "%s object is not a JSON object", roles[role]);
	if (!(name = pd_k8s_str(obj, "metadata.name")) || !*name)
		return pd_err_set(err, PD_EINVAL, "%s object without metadata.name", roles[role]);
	ns = sz(obj, "metadata.namespace");
	k.max_targets = lk && lk->max_targets ? lk->max_targets : PD_K8S_DEFAULT_MAX_TARGETS;

	slen = strlen(name) + strlen(ns) + 32;
	pd_buf_init(&k.name, 0);
	if (!(out->source = malloc(slen)) || !(k.b = pd_labels_builder_create(&lim))) {
		rc = oom(&k);
		goto fail;
	}
	pd_k8s_source(role, ns, name, out->source, slen);
	switch (role) {
	case PD_DISCOVERY_K8S_NODE:
		rc = build_node(&k, obj, name, &common);
		break;
	case PD_DISCOVERY_K8S_SERVICE:
		rc = build_service(&k, obj, ns, name, &common);
		break;
	case PD_DISCOVERY_K8S_POD:
		rc = build_pod(&k, obj, ns, &common);
		break;
	case PD_DISCOVERY_K8S_ENDPOINTS:
		rc = build_endpoints(&k, obj, ns, name, &common);
		break;
	case PD_DISCOVERY_K8S_ENDPOINTSLICE:
		rc = build_endpointslice(&k, obj, ns, &common);
		break;
	default:
		rc = build_ingress(&k, obj, ns, &common);
		break;
	}
	if (rc)
		goto fail;
	if (!common) { /* a pod without IP, or waiting for its node */
		pd_labels_builder_reset(k.b, NULL);
		if ((rc = pd_labels_builder_finish(k.b, &common, err)))
			goto fail;
	}
	out->labels = common;
	common = NULL;
	pd_labels_builder_destroy(k.b);
	pd_buf_fini(&k.name);
	return 0;
fail:
	pd_labels_destroy(common);
	pd_labels_builder_destroy(k.b);
	pd_buf_fini(&k.name);
	pd_k8s_group_fini(out);
	return rc;
}
