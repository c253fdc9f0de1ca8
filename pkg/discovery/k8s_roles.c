/* k8s_roles.c: the target groups of kubernetes_sd_configs. One Kubernetes object
 * (a Node, Service, Pod, Endpoints, EndpointSlice or Ingress, as the API server
 * sends it in JSON) becomes the group Prometheus's kubernetes discovery gives it:
 * the same source, the same targets in the same order and every __meta_kubernetes_*
 * label with Prometheus's name and value. This file holds the entry points, which
 * hand an object to its role's builder (k8s_roles_pod.c, k8s_roles_endpoints.c,
 * k8s_roles_service.c, k8s_roles_node.c, k8s_roles_ingress.c), and what the
 * builders share: reading the JSON tree, setting labels, ending targets. Objects
 * the group depends on (an endpoints' service and pods, a pod's node, a namespace)
 * come through the caller's lookup. Fields of the wrong JSON type count as missing;
 * port numbers that are not integers are errors. Labels with empty values are left
 * out, as they are the same as no label. */
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
const struct pd_sd_node *pd_k8s_path_node(const struct pd_sd_node *obj, const char *path)
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

const char *pd_k8s_str_of(const struct pd_sd_node *n)
{
	return n && n->kind == PD_SD_STRING ? n->str : NULL;
}

const char *pd_k8s_str(const struct pd_sd_node *obj, const char *path)
{
	return pd_k8s_str_of(pd_k8s_path_node(obj, path));
}

/* A string field, "" when missing (Go's zero value). */
const char *pd_k8s_sz(const struct pd_sd_node *obj, const char *path)
{
	const char *s = pd_k8s_str(obj, path);
	return s ? s : "";
}

/* 1 when a pointer field is set (present and not null). */
int pd_k8s_is_set(const struct pd_sd_node *n)
{
	return n && n->kind != PD_SD_NULL;
}

size_t pd_k8s_list_len(const struct pd_sd_node *n)
{
	return n && n->kind == PD_SD_LIST ? n->n : 0;
}

/* ---- the building state ------------------------------------------------------- */

const struct pd_sd_node *pd_k8s_lookup_obj(const struct pd_k8s_kb *k, enum pd_k8s_kind kind,
                                           const char *ns, const char *name)
{
	if (!k->lk || !k->lk->get || !name)
		return NULL;
	return k->lk->get(k->lk->ctx, kind, ns, name);
}

int pd_k8s_oom(struct pd_k8s_kb *k)
{
	return pd_err_set(k->err, PD_ENOMEM, "out of memory");
}

/* Prefixes the message of a failed label build with the group's source. */
int pd_k8s_with_source(struct pd_k8s_kb *k, int rc)
{
	char msg[sizeof(k->err->msg)];
	snprintf(msg, sizeof(msg), "%s", k->err->msg);
	return pd_err_set(k->err, rc, "%s: %s", k->g->source, msg);
}

/* Sets name=value; a refused label (too long, too many) fails with the builder's
 * message behind the group's source. */
int pd_k8s_setl(struct pd_k8s_kb *k, const char *name, const char *value)
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
	return pd_k8s_with_source(k, rc);
}

/* Sets META <a> <b> = value (b may be NULL). */
int pd_k8s_setm(struct pd_k8s_kb *k, const char *a, const char *b, const char *value)
{
	k->name.len = 0;
	if (pd_buf_printf(&k->name, META "%s%s", a, b ? b : "") || pd_buf_append(&k->name, "", 1))
		return pd_k8s_oom(k);
	return pd_k8s_setl(k, (const char *)k->name.data, value);
}

/* Appends s to the name with every character outside [a-zA-Z0-9_] replaced by '_'
 * (a UTF-8 sequence is one character, a byte that starts none is one), as
 * Prometheus's strutil.SanitizeLabelName. */
static int put_sanitized(struct pd_k8s_kb *k, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned char c = *p;
		size_t w = 1;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '_') {
			if (pd_buf_append(&k->name, p, 1))
				return pd_k8s_oom(k);
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
			return pd_k8s_oom(k);
		p += w;
	}
	return 0;
}

/* Sets META <prefix> sanitize(key) = value; with lower, the sanitized key is in
 * lower case (Prometheus lowers node condition types before sanitizing them; the
 * sanitized text is ASCII, so the order makes no difference). */
int pd_k8s_set_sanitized_case(struct pd_k8s_kb *k, const char *prefix, const char *key,
                              const char *value, int lower)
{
	size_t from;
	int rc;
	k->name.len = 0;
	if (pd_buf_printf(&k->name, META "%s", prefix))
		return pd_k8s_oom(k);
	from = k->name.len;
	if ((rc = put_sanitized(k, key)))
		return rc;
	if (pd_buf_append(&k->name, "", 1))
		return pd_k8s_oom(k);
	for (size_t i = from; lower && i < k->name.len; i++)
		if (k->name.data[i] >= 'A' && k->name.data[i] <= 'Z')
			k->name.data[i] = (uint8_t)(k->name.data[i] - 'A' + 'a');
	return pd_k8s_setl(k, (const char *)k->name.data, value);
}

int pd_k8s_set_sanitized(struct pd_k8s_kb *k, const char *prefix, const char *key,
                         const char *value)
{
	return pd_k8s_set_sanitized_case(k, prefix, key, value, 0);
}

/* The labels and annotations of an object's metadata under resource ("pod",
 * "namespace", ...): _label_<k>, _labelpresent_<k>, _annotation_<k>,
 * _annotationpresent_<k>. */
static int set_labels_annotations(struct pd_k8s_kb *k, const char *resource,
                                  const struct pd_sd_node *meta)
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
			const char *key = pd_k8s_str_of(map->kids[2 * i]);
			if (!key)
				continue;
			if ((rc = pd_k8s_set_sanitized(k, p1, key,
			                               pd_k8s_str_of(map->kids[2 * i + 1]))) ||
			    (rc = pd_k8s_set_sanitized(k, p2, key, "true")))
				return rc;
		}
	}
	return 0;
}

/* Prometheus's addObjectMetaLabels: _name and the labels and annotations. */
int pd_k8s_set_object_meta(struct pd_k8s_kb *k, const char *role, const struct pd_sd_node *obj)
{
	const struct pd_sd_node *meta = pd_k8s_field(obj, "metadata");
	int rc;
	if ((rc = pd_k8s_setm(k, role, "_name", pd_k8s_str(meta, "name"))))
		return rc;
	return set_labels_annotations(k, role, meta);
}

/* The node's name, labels and annotations (attach_metadata.node), when the node is
 * known. */
int pd_k8s_set_node_meta(struct pd_k8s_kb *k, const char *node_name)
{
	const struct pd_sd_node *node = pd_k8s_lookup_obj(k, PD_K8S_KIND_NODE, NULL, node_name);
	return node ? pd_k8s_set_object_meta(k, "node", node) : 0;
}

/* The namespace's labels and annotations (attach_metadata.namespace). */
int pd_k8s_set_namespace_meta(struct pd_k8s_kb *k, const char *ns)
{
	const struct pd_sd_node *o;
	if (!k->lk || !k->lk->attach_namespace)
		return 0;
	if (!(o = pd_k8s_lookup_obj(k, PD_K8S_KIND_NAMESPACE, NULL, ns)))
		return 0;
	return set_labels_annotations(k, "namespace", pd_k8s_field(o, "metadata"));
}

/* An integer field as decimal text into dst: 0 when absent (Go's zero value);
 * PD_EINVAL naming what when it is not an integer in [0, 2^31). */
int pd_k8s_port_text(struct pd_k8s_kb *k, const struct pd_sd_node *n, const char *what, char *dst,
                     size_t cap, long *val)
{
	char *end;
	long v = 0;
	if (pd_k8s_is_set(n)) {
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
int pd_k8s_set_address(struct pd_k8s_kb *k, const char *host, const char *port)
{
	int colon = port && strchr(host, ':');
	k->name.len = 0;
	if (pd_buf_printf(&k->name, "%s%s%s%s%s", colon ? "[" : "", host, colon ? "]" : "",
	                  port ? ":" : "", port ? port : "") ||
	    pd_buf_append(&k->name, "", 1))
		return pd_k8s_oom(k);
	return pd_k8s_setl(k, "__address__", (const char *)k->name.data);
}

/* Ends a target: the builder's labels become the group's next target. */
int pd_k8s_emit(struct pd_k8s_kb *k)
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
			return pd_k8s_oom(k);
		g->targets = t;
		k->cap = nc;
	}
	if ((rc = pd_labels_builder_finish(k->b, &g->targets[g->ntargets], k->err)))
		return pd_k8s_with_source(k, rc);
	g->ntargets++;
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
	struct pd_k8s_kb k = {.lk = lk, .g = out, .err = err};
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
	ns = pd_k8s_sz(obj, "metadata.namespace");
	k.max_targets = lk && lk->max_targets ? lk->max_targets : PD_K8S_DEFAULT_MAX_TARGETS;

	slen = strlen(name) + strlen(ns) + 32;
	pd_buf_init(&k.name, 0);
	if (!(out->source = malloc(slen)) || !(k.b = pd_labels_builder_create(&lim))) {
		rc = pd_k8s_oom(&k);
		goto fail;
	}
	pd_k8s_source(role, ns, name, out->source, slen);
	switch (role) {
	case PD_DISCOVERY_K8S_NODE:
		rc = pd_k8s_build_node(&k, obj, name, &common);
		break;
	case PD_DISCOVERY_K8S_SERVICE:
		rc = pd_k8s_build_service(&k, obj, ns, name, &common);
		break;
	case PD_DISCOVERY_K8S_POD:
		rc = pd_k8s_build_pod(&k, obj, ns, &common);
		break;
	case PD_DISCOVERY_K8S_ENDPOINTS:
		rc = pd_k8s_build_endpoints(&k, obj, ns, name, &common);
		break;
	case PD_DISCOVERY_K8S_ENDPOINTSLICE:
		rc = pd_k8s_build_endpointslice(&k, obj, ns, &common);
		break;
	default:
		rc = pd_k8s_build_ingress(&k, obj, ns, &common);
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
