/* test_k8s_watch.c: the pieces of kubernetes_sd that talk to an API server: watch
 * streams split into events at every possible cut, oversize and garbage events,
 * event parsing, list and watch URLs, kubeconfig files and the in-cluster service
 * account, and the whole provider (lists, watches, bookmarks, 410 Gone, dropped
 * streams, dependent rebuilds, relists) against a small API server on loopback. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "k8s_watch_int.h"

/* ---- the stream splitter ------------------------------------------------------------ */

struct lines {
	char got[16][256];
	size_t n;
	int stop_at; /* return an error at this line (1-based), 0: never */
};

static int collect(void *ctx, const char *line, size_t len, struct pd_err *err)
{
	struct lines *l = ctx;
	assert_true(l->n < 16);
	assert_true(len < 256);
	memcpy(l->got[l->n], line, len);
	l->got[l->n][len] = '\0';
	l->n++;
	if (l->stop_at && (int)l->n == l->stop_at)
		return pd_err_set(err, PD_EINVAL, "stopped");
	return 0;
}

static const char stream_text[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
    "\r\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}\r\n"
    "\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}";

/* Every split of the body into two or three pieces gives the same three events. */
static void test_stream_every_cut(void **state)
{
	(void)state;
	size_t n = strlen(stream_text);
	for (size_t i = 0; i <= n; i++) {
		for (size_t j = i; j <= n; j += (j < i + 3 || j + 3 > n) ? 1 : 7) {
			struct pd_k8s_stream s;
			struct lines l = {0};
			struct pd_err err = {0};
			pd_k8s_stream_init(&s, 0);
			assert_int_equal(pd_k8s_stream_feed(&s, stream_text, i, collect, &l, &err), 0);
			assert_int_equal(
			    pd_k8s_stream_feed(&s, stream_text + i, j - i, collect, &l, &err), 0);
			assert_int_equal(
			    pd_k8s_stream_feed(&s, stream_text + j, n - j, collect, &l, &err), 0);
			assert_int_equal(pd_k8s_stream_end(&s, collect, &l, &err), 0);
			assert_int_equal(l.n, 3);
			assert_string_equal(l.got[0],
			                    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":"
			                    "\"a\"}}}");
			assert_non_null(strstr(l.got[1], "BOOKMARK"));
			assert_null(strchr(l.got[1], '\r'));
			assert_non_null(strstr(l.got[2], "DELETED"));
			pd_k8s_stream_fini(&s);
		}
	}
}

/* An event longer than the limit fails, whether it arrives whole or a byte at a
 * time, and nothing past the limit is kept. */
static void test_stream_oversize(void **state)
{
	(void)state;
	char big[200];
	memset(big, 'x', sizeof(big));
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		struct pd_k8s_stream s;
		struct lines l = {0};
		struct pd_err err = {0};
		int rc = 0;
		pd_k8s_stream_init(&s, 64);
		assert_int_equal(pd_k8s_stream_feed(&s, "{\"a\":1}\n", 8, collect, &l, &err), 0);
		if (bytewise) {
			for (size_t i = 0; i < sizeof(big) && !rc; i++)
				rc = pd_k8s_stream_feed(&s, big + i, 1, collect, &l, &err);
		} else {
			rc = pd_k8s_stream_feed(&s, big, sizeof(big), collect, &l, &err);
		}
		assert_int_equal(rc, PD_ETOOBIG);
		assert_non_null(strstr(err.msg, "larger than 64 bytes"));
		assert_true(s.line.len <= 65);
		assert_int_equal(l.n, 1);
		pd_k8s_stream_fini(&s);
	}
	/* exactly at the limit is fine */
	struct pd_k8s_stream s;
	struct lines l = {0};
	struct pd_err err = {0};
	pd_k8s_stream_init(&s, 64);
	big[63] = '\n';
	assert_int_equal(pd_k8s_stream_feed(&s, big, 64, collect, &l, &err), 0);
	assert_int_equal(l.n, 1);
	pd_k8s_stream_fini(&s);
}

/* The callback's error stops the stream and comes back. */
static void test_stream_stop(void **state)
{
	(void)state;
	struct pd_k8s_stream s;
	struct lines l = {.stop_at = 1};
	struct pd_err err = {0};
	pd_k8s_stream_init(&s, 0);
	assert_int_equal(
	    pd_k8s_stream_feed(&s, stream_text, strlen(stream_text), collect, &l, &err),
	    PD_EINVAL);
	assert_int_equal(l.n, 1);
	assert_string_equal(err.msg, "stopped");
	pd_k8s_stream_fini(&s);
}

/* ---- events ------------------------------------------------------------------------- */

static int parse_event(const char *line, struct pd_arena *a, struct pd_k8s_event *ev,
                       struct pd_err *err)
{
	return pd_k8s_event_parse(line, strlen(line), a, ev, err);
}

static void test_event_parse(void **state)
{
	(void)state;
	struct pd_arena *a = pd_arena_create(1 << 20);
	struct pd_k8s_event ev;
	struct pd_err err = {0};
	const char *added =
	    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1\","
	    "\"namespace\":\"prod\",\"resourceVersion\":\"4711\"},\"spec\":{\"x\":[1,\"]}\"]}}}";
	assert_int_equal(parse_event(added, a, &ev, &err), 0);
	assert_int_equal(ev.type, PD_K8S_EVENT_ADDED);
	assert_string_equal(ev.name, "web-1");
	assert_string_equal(ev.ns, "prod");
	assert_string_equal(ev.resource_version, "4711");
	assert_int_equal(ev.rawlen, strlen(added) - strlen("{\"type\":\"ADDED\",\"object\":") - 1);
	assert_memory_equal(ev.raw, "{\"kind\":\"Pod\"", 13);
	assert_int_equal(ev.raw[ev.rawlen - 1], '}');

	assert_int_equal(parse_event("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
	                             "\"metadata\":{\"resourceVersion\":\"99\"}}}",
	                             a, &ev, &err),
	                 0);
	assert_int_equal(ev.type, PD_K8S_EVENT_BOOKMARK);
	assert_string_equal(ev.resource_version, "99");

	assert_int_equal(parse_event("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
	                             "\"status\":\"Failure\",\"message\":\"too old resource "
	                             "version: 1 (5)\",\"reason\":\"Expired\",\"code\":410}}",
	                             a, &ev, &err),
	                 0);
	assert_int_equal(ev.type, PD_K8S_EVENT_ERROR);
	assert_int_equal(ev.code, 410);
	assert_string_equal(ev.message, "too old resource version: 1 (5)");

	/* garbage, each with a message naming the fault */
	static const struct {
		const char *line, *want;
	} bad[] = {
	    {"not json", "watch event:1:2"},
	    {"[1,2]", "not a JSON object"},
	    {"{\"object\":{}}", "no type"},
	    {"{\"type\":\"RENAMED\",\"object\":{}}", "unknown type \"RENAMED\""},
	    {"{\"type\":\"ADDED\"}", "ADDED without an object"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}", "without metadata.name"},
	    {"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}",
	     "BOOKMARK without metadata.resourceVersion"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}", "watch event:"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(parse_event(bad[i].line, a, &ev, &err), PD_EINVAL);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("%s: got %s, want %s", bad[i].line, err.msg, bad[i].want);
	}
	pd_arena_destroy(a);
}

/* ---- URLs ---------------------------------------------------------------------------- */

static char *url_of(const struct pd_k8s_request *r)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_k8s_url(&b, "https://10.0.0.1:6443", r), 0);
	return (char *)pd_buf_steal(&b, NULL);
}

static void test_urls(void **state)
{
	(void)state;
	char *u;
	u = url_of(&(struct pd_k8s_request){.kind = PD_K8S_KIND_POD, .limit = 500});
	assert_string_equal(u, "https://10.0.0.1:6443/api/v1/pods?limit=500");
	free(u);
	u = url_of(&(struct pd_k8s_request){.kind = PD_K8S_KIND_ENDPOINTSLICE,
	                                    .ns = "prod",
	                                    .limit = 500,
	                                    .cont = "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==",
	                                    .label_selector = "app in (a,b),!canary",
	                                    .field_selector = "metadata.name!=x"});
	assert_string_equal(u, "https://10.0.0.1:6443/apis/discovery.k8s.io/v1/namespaces/prod/"
	                       "endpointslices?limit=500&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ%"
	                       "3D%3D&labelSelector=app%20in%20%28a%2Cb%29%2C%21canary&"
	                       "fieldSelector=metadata.name%21%3Dx");
	free(u);
	u = url_of(&(struct pd_k8s_request){.kind = PD_K8S_KIND_INGRESS,
	                                    .ns = "web",
	                                    .watch = 1,
	                                    .resource_version = "123",
	                                    .timeout_s = 417});
	assert_string_equal(u, "https://10.0.0.1:6443/apis/networking.k8s.io/v1/namespaces/web/"
	                       "ingresses?watch=1&allowWatchBookmarks=true&timeoutSeconds=417&"
	                       "resourceVersion=123");
	free(u);
	/* nodes and namespaces are cluster objects: no namespace in the path */
	u = url_of(&(struct pd_k8s_request){
	    .kind = PD_K8S_KIND_NODE, .ns = "prod", .watch = 1, .timeout_s = 300});
	assert_string_equal(u, "https://10.0.0.1:6443/api/v1/nodes?watch=1&allowWatchBookmarks="
	                       "true&timeoutSeconds=300");
	free(u);
	u = url_of(&(struct pd_k8s_request){
	    .kind = PD_K8S_KIND_NAMESPACE, .field_selector = "metadata.name=prod", .limit = 1});
	assert_string_equal(u, "https://10.0.0.1:6443/api/v1/namespaces?limit=1&fieldSelector="
	                       "metadata.name%3Dprod");
	free(u);
}

/* ---- selectors ------------------------------------------------------------------------ */

static void test_selectors(void **state)
{
	(void)state;
	struct pd_err err = {0};
	const char *good_labels[] = {"",
	                             "app=web",
	                             "app==web,tier!=cache",
	                             "app in (a, b),env notin (dev),!canary,release",
	                             "example.com/team=x",
	                             "size>3,size<10",
	                             "app="};
	const char *bad_labels[] = {"app in a", "=x", "app=web!", "a b", "app in (a", "-x=1",
	                            "size>x"};
	for (size_t i = 0; i < sizeof(good_labels) / sizeof(*good_labels); i++)
		if (pd_k8s_label_selector_check(good_labels[i], &err))
			fail_msg("%s: %s", good_labels[i], err.msg);
	for (size_t i = 0; i < sizeof(bad_labels) / sizeof(*bad_labels); i++) {
		if (!pd_k8s_label_selector_check(bad_labels[i], &err))
			fail_msg("%s was accepted", bad_labels[i]);
		assert_non_null(strstr(err.msg, bad_labels[i]));
	}
	const char *good_fields[] = {"", "metadata.name=x", "spec.nodeName==n1,status.phase!=Failed",
	                             "metadata.name=a\\,b"};
	const char *bad_fields[] = {"metadata.name", "=x", "a=b,c", "a=b\\x"};
	for (size_t i = 0; i < sizeof(good_fields) / sizeof(*good_fields); i++)
		if (pd_k8s_field_selector_check(good_fields[i], &err))
			fail_msg("%s: %s", good_fields[i], err.msg);
	for (size_t i = 0; i < sizeof(bad_fields) / sizeof(*bad_fields); i++)
		if (!pd_k8s_field_selector_check(bad_fields[i], &err))
			fail_msg("%s was accepted", bad_fields[i]);
}

/* ---- kubeconfig and in-cluster ------------------------------------------------------- */

static char tmpdir[64];

static void write_file(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup_tmp(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_k8s_watch.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char kubeconfig[] =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: prod\n"
    "clusters:\n"
    "- name: dev\n"
    "  cluster:\n"
    "    server: https://dev.example.com\n"
    "- name: prod-cluster\n"
    "  cluster:\n"
    "    server: https://prod.example.com:6443/\n"
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
    "    proxy-url: http://proxy:3128\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: dev, user: dev}\n"
    "- name: prod\n"
    "  context:\n"
    "    cluster: prod-cluster\n"
    "    user: admin\n"
    "    namespace: monitoring\n"
    "users:\n"
    "- name: dev\n"
    "  user: {token: devtoken}\n"
    "- name: admin\n"
    "  user:\n"
    "    client-certificate: certs/admin.crt\n"
    "    client-key-data: a2V5\n"
    "    tokenFile: /run/token\n";

static void test_kubeconfig(void **state)
{
	(void)state;
	struct pd_k8s_client c;
	struct pd_err err = {0};
	assert_int_equal(pd_k8s_kubeconfig_parse(&c, kubeconfig, strlen(kubeconfig),
	                                         "/etc/kube/config", &err),
	                 0);
	assert_string_equal(c.server, "https://prod.example.com:6443");
	assert_int_equal(c.ca.len, strlen("-----BEGIN CERTIFICATE-----\n"));
	assert_memory_equal(c.ca.data, "-----BEGIN CERTIFICATE-----\n", c.ca.len);
	assert_null(c.ca_file);
	assert_string_equal(c.cert_file, "/etc/kube/certs/admin.crt");
	assert_int_equal(c.key.len, 3);
	assert_memory_equal(c.key.data, "key", 3);
	assert_string_equal(c.token_file, "/run/token");
	assert_null(c.token);
	assert_string_equal(c.auth_type, "Bearer");
	assert_string_equal(c.proxy, "http://proxy:3128");
	assert_string_equal(c.namespace, "monitoring");
	assert_int_equal(c.insecure, 0);
	pd_k8s_client_fini(&c);

	static const struct {
		const char *text, *want;
	} bad[] = {
	    {"clusters: []\n", "current-context is not set"},
	    {"current-context: x\ncontexts: []\n", "context \"x\" not found"},
	    {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n",
	     "cluster \"c\" of context \"x\" not found"},
	    {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	     "clusters:\n- name: c\n  cluster: {server: https://a}\n",
	     "user \"u\" of context \"x\" not found"},
	    {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
	     "clusters:\n- name: c\n  cluster: {server: a.example.com}\n",
	     "server must be an http:// or https:// URL"},
	    {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
	     "clusters:\n- name: c\n  cluster: {server: https://a, certificate-authority-data: "
	     "\"***\"}\n",
	     "certificate-authority-data is not valid base64"},
	    {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	     "clusters:\n- name: c\n  cluster: {server: https://a}\n"
	     "users:\n- name: u\n  user: {client-certificate: a.crt}\n",
	     "needs a client key"},
	    {"current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	     "clusters:\n- name: c\n  cluster: {server: https://a}\n"
	     "users:\n- name: u\n  user: {exec: {command: aws}}\n",
	     "exec and auth-provider credentials are not supported"},
	    {"- a\n", "not a kubeconfig"},
	    {"a: [\n", "kc:"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_not_equal(
		    pd_k8s_kubeconfig_parse(&c, bad[i].text, strlen(bad[i].text), "kc", &err), 0);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("case %zu: got %s, want %s", i, err.msg, bad[i].want);
		assert_null(c.server);
	}

	/* from a file, with insecure-skip-tls-verify and basic credentials */
	write_file("config", "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, "
	                     "user: u}\nclusters:\n- name: c\n  cluster: {server: "
	                     "'http://127.0.0.1:1', insecure-skip-tls-verify: true}\nusers:\n- "
	                     "name: u\n  user: {username: ann, password: pw}\n");
	char path[256];
	snprintf(path, sizeof(path), "%s/config", tmpdir);
	assert_int_equal(pd_k8s_kubeconfig_load(&c, path, &err), 0);
	assert_int_equal(c.insecure, 1);
	assert_string_equal(c.basic_user, "ann");
	assert_string_equal(c.basic_pass, "pw");
	pd_k8s_client_fini(&c);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	assert_int_equal(pd_k8s_kubeconfig_load(&c, path, &err), PD_EIO);
	assert_non_null(strstr(err.msg, "kubeconfig_file"));
	assert_non_null(strstr(err.msg, "missing"));
}

static void test_in_cluster(void **state)
{
	(void)state;
	struct pd_k8s_client c;
	struct pd_err err = {0};
	char *ns;
	assert_int_equal(pd_k8s_client_in_cluster(&c, tmpdir, NULL, "443", &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
	/* no token yet */
	assert_int_equal(pd_k8s_client_in_cluster(&c, tmpdir, "10.96.0.1", "443", &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "token"));
	write_file("token", "  tok-1\n");
	write_file("namespace", "monitoring\n");
	assert_int_equal(pd_k8s_client_in_cluster(&c, tmpdir, "fd00::1", "443", &err), 0);
	assert_string_equal(c.server, "https://[fd00::1]:443");
	assert_non_null(strstr(c.ca_file, "/ca.crt"));
	assert_int_equal(pd_k8s_own_namespace(tmpdir, &ns, &err), 0);
	assert_string_equal(ns, "monitoring");
	free(ns);

	/* the token is read for every request: a rotated one is used at once */
	CURL *h = curl_easy_init();
	struct curl_slist *hdrs = NULL;
	assert_int_equal(pd_k8s_client_apply(&c, h, &hdrs, &err), 0);
	assert_string_equal(hdrs->data, "Authorization: Bearer tok-1");
	curl_slist_free_all(hdrs);
	hdrs = NULL;
	write_file("token", "tok-2");
	assert_int_equal(pd_k8s_client_apply(&c, h, &hdrs, &err), 0);
	assert_string_equal(hdrs->data, "Authorization: Bearer tok-2");
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	pd_k8s_client_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream_every_cut),
	    cmocka_unit_test(test_stream_oversize),
	    cmocka_unit_test(test_stream_stop),
	    cmocka_unit_test(test_event_parse),
	    cmocka_unit_test(test_urls),
	    cmocka_unit_test(test_selectors),
	    cmocka_unit_test(test_kubeconfig),
	    cmocka_unit_test(test_in_cluster),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
