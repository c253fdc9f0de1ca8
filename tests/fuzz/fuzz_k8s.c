/* fuzz_k8s.c: libFuzzer target for kubernetes_sd's object builders
 * (pkg/discovery/k8s_roles*.c): Kubernetes objects as an API server sends them,
 * which profd does not control. The first byte picks the role (its value mod 6:
 * node, service, pod, endpoints, endpointslice, ingress) and attach_metadata
 * (bit 6: node, bit 7: namespace); the rest is JSON. When that is a List
 * ({"items": [...]}, as `kubectl get -o json` prints several objects), its first
 * item is the object and the others are what the lookup knows, found by kind,
 * namespace and name; otherwise the document is the object and the lookup hands
 * it back for every question. Every object must give an error with a message and
 * nothing left in the group, or a group with a source of the role's form, common
 * labels and targets. Leaks are found by the sanitizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_int.h"
#include "profd/labels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_k8s: BUG: %s (%s)\n", what, err ? err->msg : "");
	abort();
}

struct known {
	const struct pd_sd_node *items; /* a List's items, or NULL */
	const struct pd_sd_node *self;  /* the object, handed back when not a List */
};

static const char *const kinds[] = {"Node",          "Service", "Pod",      "Endpoints",
                                    "EndpointSlice", "Ingress", "Namespace"};

static const struct pd_sd_node *get(void *ctx, enum pd_k8s_kind kind, const char *ns,
                                    const char *name)
{
	const struct known *k = ctx;
	if (!name || (unsigned)kind > PD_K8S_KIND_NAMESPACE)
		bug("a lookup without a name or with an unknown kind", NULL);
	if ((kind == PD_K8S_KIND_NODE || kind == PD_K8S_KIND_NAMESPACE) != (ns == NULL))
		bug("a lookup's namespace does not fit its kind", NULL);
	if (!k->items)
		return k->self;
	for (size_t i = 1; i < k->items->n; i++) {
		const struct pd_sd_node *o = k->items->kids[i];
		const char *kd = pd_k8s_str(o, "kind"), *n = pd_k8s_str(o, "metadata.name");
		const char *ons = pd_k8s_str(o, "metadata.namespace");
		if (kd && n && !strcmp(kd, kinds[kind]) && !strcmp(n, name) &&
		    (!ns || !strcmp(ons ? ons : "", ns)))
			return o;
	}
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const prefixes[] = {"node/",      "svc/",           "pod/",
	                                       "endpoints/", "endpointslice/", "ingress/"};
	struct pd_sd_doc doc = {0};
	struct known known = {0};
	struct pd_k8s_lookup lk = {.get = get, .ctx = &known, .max_targets = 1000};
	struct pd_target_group g;
	struct pd_err err = {0};
	const struct pd_sd_node *obj, *items;
	enum pd_discovery_k8s_role role;
	int rc;

	if (size < 1 || size > 65536)
		return 0;
	role = (enum pd_discovery_k8s_role)((data[0] & 0x3f) % 6);
	lk.attach_node = (data[0] >> 6) & 1;
	lk.attach_namespace = (data[0] >> 7) & 1;
	doc.text = (const char *)data + 1;
	doc.len = size - 1;
	doc.prefix = "fuzz";
	if (!(doc.arena = pd_arena_create(32 * size + (1u << 20))))
		return 0;
	if (pd_sd_json_parse(&doc, &err) || !doc.root)
		goto out;
	obj = doc.root;
	items = pd_k8s_field(doc.root, "items");
	if (items && items->kind == PD_SD_LIST && items->n > 0) {
		known.items = items;
		obj = items->kids[0];
	} else {
		known.self = obj;
	}
	rc = pd_k8s_build(role, obj, &lk, &g, &err);
	if (rc) {
		if (g.source || g.targets || g.labels || g.ntargets || !err.msg[0])
			bug("a refused object left a group behind, or gave no message", &err);
		goto out;
	}
	if (!g.source || strncmp(g.source, prefixes[role], strlen(prefixes[role])) || !g.labels)
		bug("the group's source is not of its role's form, or it has no labels", NULL);
	if (g.ntargets > lk.max_targets)
		bug("more targets than the limit", NULL);
	for (size_t i = 0; i < g.ntargets; i++)
		if (!g.targets[i])
			bug("a missing target", NULL);
	pd_k8s_group_fini(&g);
	if (g.source || g.targets || g.labels)
		bug("pd_k8s_group_fini left something behind", NULL);
out:
	pd_arena_destroy(doc.arena);
	return 0;
}
