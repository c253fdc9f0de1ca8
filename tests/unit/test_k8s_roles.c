/* test_k8s_roles.c: unit tests of the target groups of kubernetes_sd_configs
 * (pkg/discovery/k8s_roles*.c). Each case of testdata/k8s/<role>/<case>.expected.json
 * names a Kubernetes object (as `kubectl get -o json` prints it), the related
 * objects the lookup knows (services, pods, nodes, namespaces), the
 * attach_metadata settings and the whole group Prometheus gives that object:
 * source, common labels and every target's labels in order. The cases follow the
 * objects of Prometheus's discovery/kubernetes tests and add missing fields, IPv6,
 * pods not yet scheduled, unknown services and attach_metadata on and off. Further
 * tests cover the JSON helpers, label-name sanitising, sources and the errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

#include <cmocka.h>

#include "k8s_int.h"
#include "profd/labels.h"

#define MAX_FILE (1 << 20)

/* ---- documents and lookups -------------------------------------------------- */

struct doc {
	struct pd_sd_doc d;
	char *text;
};

static struct doc *doc_parse(const char *text, size_t len)
{
	struct doc *x = calloc(1, sizeof(*x));
	struct pd_err err = {0};
	assert_non_null(x);
	x->text = malloc(len + 1);
	assert_non_null(x->text);
	memcpy(x->text, text, len);
	x->text[len] = 0;
	x->d.text = x->text;
	x->d.len = len;
	x->d.prefix = "test";
	x->d.arena = pd_arena_create(0);
	assert_non_null(x->d.arena);
	if (pd_sd_json_parse(&x->d, &err))
		fail_msg("cannot parse JSON: %s", err.msg);
	return x;
}

static struct doc *doc_read(const char *rel)
{
	char path[1024];
	uint8_t *data;
	size_t len;
	struct pd_err err = {0};
	struct doc *x;
	snprintf(path, sizeof(path), "%s/k8s/%s", PD_TESTDATA, rel);
	if (pd_file_read(path, MAX_FILE, &data, &len, &err))
		fail_msg("%s: %s", path, err.msg);
	x = doc_parse((const char *)data, len);
	free(data);
	return x;
}

static void doc_free(struct doc *x)
{
	if (!x)
		return;
	pd_arena_destroy(x->d.arena);
	free(x->text);
	free(x);
}

/* The objects a lookup knows. */
struct store {
	struct doc *objs[16];
	size_t n;
	int calls;
};

static int kind_of(const char *k)
{
	static const char *const kinds[] = {"Node",          "Service", "Pod",      "Endpoints",
	                                    "EndpointSlice", "Ingress", "Namespace"};
	for (int i = 0; i < 7; i++)
		if (k && !strcmp(k, kinds[i]))
			return i;
	return -1;
}

static const struct pd_sd_node *store_get(void *ctx, enum pd_k8s_kind kind, const char *ns,
                                          const char *name)
{
	struct store *s = ctx;
	s->calls++;
	if (kind == PD_K8S_KIND_NODE || kind == PD_K8S_KIND_NAMESPACE)
		assert_null(ns);
	else
		assert_non_null(ns);
	for (size_t i = 0; i < s->n; i++) {
		const struct pd_sd_node *o = s->objs[i]->d.root;
		const char *ons = pd_k8s_str(o, "metadata.namespace");
		if (kind_of(pd_k8s_str(o, "kind")) != (int)kind ||
		    strcmp(pd_k8s_str(o, "metadata.name"), name))
			continue;
		if (ns && strcmp(ons ? ons : "", ns))
			continue;
		return o;
	}
	return NULL;
}

static void store_free(struct store *s)
{
	for (size_t i = 0; i < s->n; i++)
		doc_free(s->objs[i]);
	s->n = 0;
}

/* ---- comparing --------------------------------------------------------------- */

/* The label set a JSON map states. */
static struct pd_labels *labels_of(const struct pd_sd_node *map)
{
	struct pd_labels_limits lim = {.max_labels = 1000};
	struct pd_labels_builder *b = pd_labels_builder_create(&lim);
	struct pd_labels *ls = NULL;
	struct pd_err err = {0};
	assert_non_null(b);
	assert_non_null(map);
	assert_int_equal(map->kind, PD_SD_MAP);
	for (size_t i = 0; i < map->n; i++) {
		assert_int_equal(map->kids[2 * i + 1]->kind, PD_SD_STRING);
		assert_int_equal(
		    pd_labels_builder_set(b, map->kids[2 * i]->str, map->kids[2 * i + 1]->str), 0);
	}
	if (pd_labels_builder_finish(b, &ls, &err))
		fail_msg("expected labels: %s", err.msg);
	pd_labels_builder_destroy(b);
	return ls;
}

static void same_labels(const char *what, const struct pd_labels *got, const struct pd_labels *want)
{
	if (!pd_labels_equal(got, want)) {
		char *g = pd_labels_string(got), *w = pd_labels_string(want);
		print_error("%s:\n  got  %s\n  want %s\n", what, g, w);
		free(g);
		free(w);
		fail();
	}
}

static int bool_field(const struct pd_sd_node *o, const char *path)
{
	const struct pd_sd_node *n = pd_k8s_field(pd_k8s_field(o, "attach_metadata"), path);
	return n && n->kind == PD_SD_BOOL && !strcmp(n->str, "true");
}

static enum pd_discovery_k8s_role role_of(const char *r)
{
	static const char *const roles[] = {"node",      "service",       "pod",
	                                    "endpoints", "endpointslice", "ingress"};
	for (int i = 0; i < 6; i++)
		if (!strcmp(r, roles[i]))
			return (enum pd_discovery_k8s_role)i;
	fail_msg("unknown role %s", r);
	return PD_DISCOVERY_K8S_NODE;
}

/* Runs one case file (relative to testdata/k8s); returns 1. */
static int run_case(const char *rel)
{
	struct doc *exp = doc_read(rel), *obj;
	const struct pd_sd_node *e = exp->d.root;
	const struct pd_sd_node *related = pd_k8s_field(e, "related");
	const struct pd_sd_node *targets = pd_k8s_field(e, "targets");
	struct store s = {0};
	struct pd_k8s_lookup lk = {.get = store_get, .ctx = &s};
	struct pd_target_group g;
	struct pd_labels *want;
	struct pd_err err = {0};
	char what[1200];

	assert_non_null(pd_k8s_str(e, "object"));
	obj = doc_read(pd_k8s_str(e, "object"));
	for (size_t i = 0; related && i < related->n; i++) {
		assert_true(s.n < 16);
		s.objs[s.n++] = doc_read(related->kids[i]->str);
	}
	lk.attach_node = bool_field(e, "node");
	lk.attach_namespace = bool_field(e, "namespace");
	if (pd_k8s_build(role_of(pd_k8s_str(e, "role")), obj->d.root, &lk, &g, &err))
		fail_msg("%s: %s", rel, err.msg);
	assert_string_equal(g.source, pd_k8s_str(e, "source"));
	snprintf(what, sizeof(what), "%s: common labels", rel);
	want = labels_of(pd_k8s_field(e, "labels"));
	same_labels(what, g.labels, want);
	pd_labels_destroy(want);
	assert_non_null(targets);
	if (g.ntargets != targets->n) {
		for (size_t i = 0; i < g.ntargets; i++) {
			char *t = pd_labels_string(g.targets[i]);
			print_error("  got target %zu: %s\n", i, t);
			free(t);
		}
		fail_msg("%s: %zu targets, want %zu", rel, g.ntargets, targets->n);
	}
	for (size_t i = 0; i < g.ntargets; i++) {
		snprintf(what, sizeof(what), "%s: target %zu", rel, i);
		want = labels_of(targets->kids[i]);
		same_labels(what, g.targets[i], want);
		pd_labels_destroy(want);
	}
	pd_k8s_group_fini(&g);
	assert_null(g.source);
	store_free(&s);
	doc_free(obj);
	doc_free(exp);
	return 1;
}

/* Every case of one role's directory. */
static void run_role(const char *role, size_t at_least)
{
	char dir[1024], rel[1024];
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	snprintf(dir, sizeof(dir), "%s/k8s/%s", PD_TESTDATA, role);
	assert_non_null(d = opendir(dir));
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 14 || strcmp(de->d_name + l - 14, ".expected.json"))
			continue;
		snprintf(rel, sizeof(rel), "%s/%s", role, de->d_name);
		n += (size_t)run_case(rel);
	}
	closedir(d);
	if (n < at_least)
		fail_msg("%s: %zu cases, want at least %zu", role, n, at_least);
}

static void test_node_cases(void **state)
{
	(void)state;
	run_role("node", 4);
}

static void test_service_cases(void **state)
{
	(void)state;
	run_role("service", 7);
}

static void test_pod_cases(void **state)
{
	(void)state;
	run_role("pod", 10);
}

static void test_endpoints_cases(void **state)
{
	(void)state;
	run_role("endpoints", 5);
}

static void test_endpointslice_cases(void **state)
{
	(void)state;
	run_role("endpointslice", 5);
}

static void test_ingress_cases(void **state)
{
	(void)state;
	run_role("ingress", 6);
}

/* ---- building from inline objects ---------------------------------------------- */

static int build_text(enum pd_discovery_k8s_role role, const char *json,
                      const struct pd_k8s_lookup *lk, struct pd_target_group *g, struct pd_err *err)
{
	struct doc *x = doc_parse(json, strlen(json));
	int rc = pd_k8s_build(role, x->d.root, lk, g, err);
	doc_free(x);
	return rc;
}

static void test_errors(void **state)
{
	struct pd_target_group g;
	struct pd_err err = {0};
	(void)state;

	assert_int_equal(build_text(PD_DISCOVERY_K8S_POD, "{\"metadata\":{}}", NULL, &g, &err),
	                 PD_EINVAL);
	assert_string_equal(err.msg, "pod object without metadata.name");
	assert_null(g.source);
	assert_null(g.labels);

	assert_int_equal(build_text(PD_DISCOVERY_K8S_SERVICE, "[1]", NULL, &g, &err), PD_EINVAL);
	assert_string_equal(err.msg, "service object is not a JSON object");

	assert_int_equal(
	    build_text(PD_DISCOVERY_K8S_NODE, "{\"metadata\":{\"name\":7}}", NULL, &g, &err),
	    PD_EINVAL);
	assert_string_equal(err.msg, "node object without metadata.name");

	assert_int_equal(build_text(PD_DISCOVERY_K8S_POD,
	                            "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},"
	                            "\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":"
	                            "[{\"containerPort\":\"80\"}]}]},"
	                            "\"status\":{\"podIP\":\"10.0.0.1\"}}",
	                            NULL, &g, &err),
	                 PD_EINVAL);
	assert_string_equal(err.msg, "pod/n/p: containerPort is not a number");
	assert_null(g.targets);
	assert_null(g.labels);

	assert_int_equal(build_text(PD_DISCOVERY_K8S_SERVICE,
	                            "{\"metadata\":{\"name\":\"s\",\"namespace\":\"n\"},"
	                            "\"spec\":{\"ports\":[{\"port\":-1}]}}",
	                            NULL, &g, &err),
	                 PD_EINVAL);
	assert_string_equal(
	    err.msg, "svc/n/s: spec.ports[].port is -1, not a port number (0 to 2147483647)");

	assert_int_equal(build_text(PD_DISCOVERY_K8S_SERVICE,
	                            "{\"metadata\":{\"name\":\"s\",\"namespace\":\"n\"},"
	                            "\"spec\":{\"ports\":[{\"port\":80.5}]}}",
	                            NULL, &g, &err),
	                 PD_EINVAL);
	assert_string_equal(
	    err.msg, "svc/n/s: spec.ports[].port is 80.5, not a port number (0 to 2147483647)");

	/* an address type whose label name is over the limit: refused with a message */
	{
		char json[1600], type[1101];
		memset(type, 'T', sizeof(type) - 1);
		type[sizeof(type) - 1] = '\0';
		snprintf(json, sizeof(json),
		         "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"addresses\":["
		         "{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"},"
		         "{\"type\":\"%s\",\"address\":\"x\"}]}}",
		         type);
		assert_int_not_equal(build_text(PD_DISCOVERY_K8S_NODE, json, NULL, &g, &err), 0);
		assert_non_null(strstr(err.msg, "node/n1: "));
		assert_non_null(strstr(err.msg, "__meta_kubernetes_node_address_TTTT"));
		assert_null(g.targets);
		assert_null(g.labels);
		assert_null(g.source);
	}
}

static void test_max_targets(void **state)
{
	struct pd_k8s_lookup lk = {.max_targets = 3};
	struct pd_target_group g;
	struct pd_err err = {0};
	const char *ep = "{\"metadata\":{\"name\":\"e\",\"namespace\":\"n\"},\"subsets\":[{"
	                 "\"addresses\":[{\"ip\":\"1.1.1.1\"},{\"ip\":\"1.1.1.2\"}],"
	                 "\"ports\":[{\"port\":1},{\"port\":2}]}]}";
	(void)state;
	assert_int_equal(build_text(PD_DISCOVERY_K8S_ENDPOINTS, ep, &lk, &g, &err), PD_ETOOBIG);
	assert_string_equal(err.msg, "endpoints/n/e: more than 3 targets");
	assert_null(g.targets);
	lk.max_targets = 4;
	assert_int_equal(build_text(PD_DISCOVERY_K8S_ENDPOINTS, ep, &lk, &g, &err), 0);
	assert_int_equal(g.ntargets, 4);
	/* port by port, then address by address */
	assert_string_equal(pd_labels_get(g.targets[1], "__address__"), "1.1.1.2:1");
	assert_string_equal(pd_labels_get(g.targets[2], "__address__"), "1.1.1.1:2");
	pd_k8s_group_fini(&g);
}

static void test_sanitize(void **state)
{
	struct pd_target_group g;
	struct pd_err err = {0};
	(void)state;
	/* every character outside [a-zA-Z0-9_] is one '_', a multi-byte one too; a
	 * label key given twice (after sanitising) keeps its last value */
	assert_int_equal(build_text(PD_DISCOVERY_K8S_SERVICE,
	                            "{\"metadata\":{\"name\":\"s\",\"namespace\":\"n\","
	                            "\"labels\":{\"a.b/c-d_\\u00fc\":\"1\",\"\\u043a\\u043b\\u044e"
	                            "\\u0447\":\"2\",\"x.y\":\"3\",\"x_y\":\"4\",\"Up9\":\"5\"}}}",
	                            NULL, &g, &err),
	                 0);
	assert_string_equal(pd_labels_get(g.labels, "__meta_kubernetes_service_label_a_b_c_d__"),
	                    "1");
	assert_string_equal(pd_labels_get(g.labels, "__meta_kubernetes_service_label_____"), "2");
	assert_string_equal(pd_labels_get(g.labels, "__meta_kubernetes_service_label_x_y"), "4");
	assert_string_equal(pd_labels_get(g.labels, "__meta_kubernetes_service_label_Up9"), "5");
	assert_string_equal(pd_labels_get(g.labels, "__meta_kubernetes_service_labelpresent_____"),
	                    "true");
	assert_int_equal(g.ntargets, 0);
	pd_k8s_group_fini(&g);
}

static void test_lookups(void **state)
{
	struct store s = {0};
	struct pd_k8s_lookup lk = {.get = store_get, .ctx = &s};
	struct pd_target_group g;
	struct pd_err err = {0};
	const char *pod = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},"
	                  "\"spec\":{\"nodeName\":\"nd\"},\"status\":{\"podIP\":\"10.0.0.1\"}}";
	(void)state;
	/* without attach_metadata nothing is looked up for a pod */
	assert_int_equal(build_text(PD_DISCOVERY_K8S_POD, pod, &lk, &g, &err), 0);
	assert_int_equal(s.calls, 0);
	pd_k8s_group_fini(&g);
	/* nor with a NULL lookup, even when it would attach */
	assert_int_equal(build_text(PD_DISCOVERY_K8S_POD, pod, NULL, &g, &err), 0);
	assert_string_equal(pd_labels_get(g.labels, "__meta_kubernetes_pod_ip"), "10.0.0.1");
	pd_k8s_group_fini(&g);
	/* an endpoints asks for its service, by namespace and name */
	assert_int_equal(build_text(PD_DISCOVERY_K8S_ENDPOINTS,
	                            "{\"metadata\":{\"name\":\"e\",\"namespace\":\"n\"}}", &lk, &g,
	                            &err),
	                 0);
	assert_int_equal(s.calls, 1);
	assert_null(pd_labels_get(g.labels, "__meta_kubernetes_service_name"));
	assert_string_equal(pd_labels_get(g.labels, "__meta_kubernetes_endpoints_name"), "e");
	pd_k8s_group_fini(&g);
}

static void test_helpers(void **state)
{
	char buf[64];
	struct doc *x = doc_parse("{\"a\":{\"b\":\"c\",\"n\":5,\"b\":\"d\"},\"t\":true}", 38);
	(void)state;
	assert_string_equal(pd_k8s_str(x->d.root, "a.b"), "d"); /* the last of a repeated key */
	assert_null(pd_k8s_str(x->d.root, "a.n"));
	assert_null(pd_k8s_str(x->d.root, "a.b.c"));
	assert_null(pd_k8s_str(x->d.root, "z"));
	assert_int_equal(pd_k8s_field(pd_k8s_field(x->d.root, "a"), "n")->kind, PD_SD_NUMBER);
	assert_string_equal(pd_k8s_field(pd_k8s_field(x->d.root, "a"), "n")->str, "5");
	assert_string_equal(pd_k8s_field(x->d.root, "t")->str, "true");
	assert_null(pd_k8s_field(NULL, "a"));
	doc_free(x);

	pd_k8s_source(PD_DISCOVERY_K8S_POD, "ns", "p", buf, sizeof(buf));
	assert_string_equal(buf, "pod/ns/p");
	pd_k8s_source(PD_DISCOVERY_K8S_SERVICE, "ns", "s", buf, sizeof(buf));
	assert_string_equal(buf, "svc/ns/s");
	pd_k8s_source(PD_DISCOVERY_K8S_ENDPOINTS, "ns", "e", buf, sizeof(buf));
	assert_string_equal(buf, "endpoints/ns/e");
	pd_k8s_source(PD_DISCOVERY_K8S_ENDPOINTSLICE, "ns", "e", buf, sizeof(buf));
	assert_string_equal(buf, "endpointslice/ns/e");
	pd_k8s_source(PD_DISCOVERY_K8S_INGRESS, "ns", "i", buf, sizeof(buf));
	assert_string_equal(buf, "ingress/ns/i");
	pd_k8s_source(PD_DISCOVERY_K8S_NODE, "ignored", "nd", buf, sizeof(buf));
	assert_string_equal(buf, "node/nd");
	pd_k8s_source(PD_DISCOVERY_K8S_INGRESS, "ns", "long-name", buf, 8);
	assert_string_equal(buf, "ingress");

	struct pd_target_group g = {0};
	pd_k8s_group_fini(&g);
	pd_k8s_group_fini(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_node_cases),
	    cmocka_unit_test(test_service_cases),
	    cmocka_unit_test(test_pod_cases),
	    cmocka_unit_test(test_endpoints_cases),
	    cmocka_unit_test(test_endpointslice_cases),
	    cmocka_unit_test(test_ingress_cases),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_max_targets),
	    cmocka_unit_test(test_sanitize),
	    cmocka_unit_test(test_lookups),
	    cmocka_unit_test(test_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
