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

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "k8s_watch_int.h"
#include "profd/labels.h"

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
			assert_int_equal(pd_k8s_stream_feed(&s, stream_text, i, collect, &l, &err),
			                 0);
			assert_int_equal(
			    pd_k8s_stream_feed(&s, stream_text + i, j - i, collect, &l, &err), 0);
			assert_int_equal(
			    pd_k8s_stream_feed(&s, stream_text + j, n - j, collect, &l, &err), 0);
			assert_int_equal(pd_k8s_stream_end(&s, collect, &l, &err), 0);
			assert_int_equal(l.n, 3);
			assert_string_equal(
			    l.got[0], "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":"
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
	    pd_k8s_stream_feed(&s, stream_text, strlen(stream_text), collect, &l, &err), PD_EINVAL);
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
	const char *bad_labels[] = {"app in a",  "=x",   "app=web!", "a b",
	                            "app in (a", "-x=1", "size>x"};
	for (size_t i = 0; i < sizeof(good_labels) / sizeof(*good_labels); i++)
		if (pd_k8s_label_selector_check(good_labels[i], &err))
			fail_msg("%s: %s", good_labels[i], err.msg);
	for (size_t i = 0; i < sizeof(bad_labels) / sizeof(*bad_labels); i++) {
		if (!pd_k8s_label_selector_check(bad_labels[i], &err))
			fail_msg("%s was accepted", bad_labels[i]);
		assert_non_null(strstr(err.msg, bad_labels[i]));
	}
	const char *good_fields[] = {
	    "", "metadata.name=x", "spec.nodeName==n1,status.phase!=Failed", "metadata.name=a\\,b"};
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
	assert_int_equal(
	    pd_k8s_kubeconfig_parse(&c, kubeconfig, strlen(kubeconfig), "/etc/kube/config", &err),
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

/* ---- a small API server on loopback ---------------------------------------------------
 * Serves the collections /api/v1/{pods,services,endpoints,nodes} (all namespaces):
 * lists in pages of two items (with continue tokens, as a server may cut pages
 * shorter than limit), watches as chunked streams to which the test pushes events,
 * and on demand a 410 Gone for the next watch, an ERROR 410 event, a dropped
 * connection or a normal end of stream. Every request line is logged. */

enum { R_PODS, R_SERVICES, R_ENDPOINTS, R_NODES, NRES };
static const char *const res_path[NRES] = {"/api/v1/pods", "/api/v1/services", "/api/v1/endpoints",
                                           "/api/v1/nodes"};

struct fsrv {
	int lfd, port, wake[2], stop;
	pthread_t th;
	pthread_mutex_t mu;
	struct {
		char *name[16], *json[16];
		int n;
	} res[NRES];
	int rv;
	struct {
		int fd, res;
	} w[32];
	int nw;
	char log[256][520];
	int nlog;
	int gone_next_watch;
};

static void send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

static void send_chunk(int fd, const char *s)
{
	char hdr[32];
	snprintf(hdr, sizeof(hdr), "%zx\r\n", strlen(s));
	send_all(fd, hdr, strlen(hdr));
	send_all(fd, s, strlen(s));
	send_all(fd, "\r\n", 2);
}

static void respond(int fd, int code, const char *body)
{
	char hdr[256];
	snprintf(hdr, sizeof(hdr),
	         "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
	         "Connection: close\r\n\r\n",
	         code,
	         code == 200   ? "OK"
	         : code == 410 ? "Gone"
	                       : "Error",
	         strlen(body));
	send_all(fd, hdr, strlen(hdr));
	send_all(fd, body, strlen(body));
	close(fd);
}

static void serve(struct fsrv *s, int fd)
{
	char req[4096], path[512];
	size_t n = 0;
	int r = -1;
	while (n < sizeof(req) - 1) {
		ssize_t k = recv(fd, req + n, sizeof(req) - 1 - n, 0);
		if (k <= 0)
			break;
		n += (size_t)k;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[n] = '\0';
	if (sscanf(req, "GET %511s", path) != 1) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (s->nlog < 256)
		snprintf(s->log[s->nlog++], sizeof(s->log[0]), "%s", path);
	for (int i = 0; i < NRES; i++)
		if (!strncmp(path, res_path[i], strlen(res_path[i])) &&
		    path[strlen(res_path[i])] == '?')
			r = i;
	if (r < 0) {
		respond(fd, 404, "{\"kind\":\"Status\",\"message\":\"not found\",\"code\":404}");
	} else if (strstr(path, "watch=1")) {
		if (s->gone_next_watch) {
			s->gone_next_watch = 0;
			respond(fd, 410,
			        "{\"kind\":\"Status\",\"message\":\"too old resource version\","
			        "\"reason\":\"Expired\",\"code\":410}");
		} else if (s->nw < 32) {
			const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			                "Transfer-Encoding: chunked\r\n\r\n";
			send_all(fd, h, strlen(h));
			s->w[s->nw].fd = fd;
			s->w[s->nw++].res = r;
		} else {
			close(fd);
		}
	} else {
		/* a page of two items from the offset in continue */
		const char *c = strstr(path, "continue=");
		int from = c ? atoi(c + 9) : 0, i;
		char *body = malloc(1 << 16);
		size_t len = 0;
		len += (size_t)snprintf(body + len, 4096, "{\"kind\":\"List\",\"metadata\":{");
		if (from + 2 < s->res[r].n)
			len += (size_t)snprintf(body + len, 4096, "\"continue\":\"%d\",", from + 2);
		len += (size_t)snprintf(body + len, 4096, "\"resourceVersion\":\"%d\"},\"items\":[",
		                        s->rv);
		for (i = from; i < s->res[r].n && i < from + 2; i++)
			len += (size_t)snprintf(body + len, 8192, "%s%s", i > from ? "," : "",
			                        s->res[r].json[i]);
		snprintf(body + len, 16, "]}");
		respond(fd, 200, body);
		free(body);
	}
	pthread_mutex_unlock(&s->mu);
}

static void *fsrv_run(void *arg)
{
	struct fsrv *s = arg;
	for (;;) {
		struct pollfd p[2] = {{s->lfd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents) {
			int fd = accept(s->lfd, NULL, NULL);
			if (fd >= 0)
				serve(s, fd);
		}
	}
	return NULL;
}

static void fsrv_start(struct fsrv *s)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	memset(s, 0, sizeof(*s));
	s->rv = 100;
	pthread_mutex_init(&s->mu, NULL);
	assert_int_equal(pipe(s->wake), 0);
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 64), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, fsrv_run, s), 0);
}

static void fsrv_stop(struct fsrv *s)
{
	assert_int_equal(write(s->wake[1], "x", 1), 1);
	pthread_join(s->th, NULL);
	for (int i = 0; i < s->nw; i++)
		close(s->w[i].fd);
	for (int r = 0; r < NRES; r++)
		for (int i = 0; i < s->res[r].n; i++) {
			free(s->res[r].name[i]);
			free(s->res[r].json[i]);
		}
	close(s->lfd);
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->mu);
}

/* Sends line to the watchers of r. */
static void fsrv_push(struct fsrv *s, int r, const char *line)
{
	for (int i = 0; i < s->nw; i++)
		if (s->w[i].res == r)
			send_chunk(s->w[i].fd, line);
}

/* Ends the watches of r: cleanly (the terminal chunk) or by dropping them. */
static void fsrv_end_watches(struct fsrv *s, int r, int clean)
{
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nw;) {
		if (s->w[i].res != r) {
			i++;
			continue;
		}
		if (clean)
			send_all(s->w[i].fd, "0\r\n\r\n", 5);
		else
			shutdown(s->w[i].fd, SHUT_RDWR);
		close(s->w[i].fd);
		s->w[i] = s->w[--s->nw];
	}
	pthread_mutex_unlock(&s->mu);
}

static int fsrv_watching(struct fsrv *s, int r)
{
	int n = 0;
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nw; i++)
		n += s->w[i].res == r;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Sets (json non-NULL) or deletes an object; json holds "%d" for its
 * resourceVersion. quiet: no event (the change is seen only by a later list). */
static void fsrv_set(struct fsrv *s, int r, const char *name, const char *json, int quiet)
{
	char *obj = NULL, *line;
	int i;
	pthread_mutex_lock(&s->mu);
	s->rv++;
	for (i = 0; i < s->res[r].n && strcmp(s->res[r].name[i], name); i++)
		;
	const char *type = json ? (i < s->res[r].n ? "MODIFIED" : "ADDED") : "DELETED";
	if (json) {
		obj = malloc(strlen(json) + 32);
		sprintf(obj, json, s->rv);
	} else if (i < s->res[r].n) {
		obj = strdup(s->res[r].json[i]);
	}
	if (!quiet && obj) {
		line = malloc(strlen(obj) + 64);
		sprintf(line, "{\"type\":\"%s\",\"object\":%s}\n", type, obj);
		fsrv_push(s, r, line);
		free(line);
	}
	if (json && i < s->res[r].n) {
		free(s->res[r].json[i]);
		s->res[r].json[i] = obj;
	} else if (json) {
		s->res[r].name[i] = strdup(name);
		s->res[r].json[i] = obj;
		s->res[r].n++;
	} else if (i < s->res[r].n) {
		free(obj);
		free(s->res[r].name[i]);
		free(s->res[r].json[i]);
		for (; i + 1 < s->res[r].n; i++) {
			s->res[r].name[i] = s->res[r].name[i + 1];
			s->res[r].json[i] = s->res[r].json[i + 1];
		}
		s->res[r].n--;
	}
	pthread_mutex_unlock(&s->mu);
}

static void fsrv_event(struct fsrv *s, int r, const char *line)
{
	pthread_mutex_lock(&s->mu);
	fsrv_push(s, r, line);
	pthread_mutex_unlock(&s->mu);
}

/* The index of the first logged request from `from` on that contains all of a and
 * b, or -1. */
static int fsrv_logged(struct fsrv *s, int from, const char *a, const char *b)
{
	int found = -1;
	pthread_mutex_lock(&s->mu);
	for (int i = from; i < s->nlog && found < 0; i++)
		if (strstr(s->log[i], a) && (!b || strstr(s->log[i], b)))
			found = i;
	pthread_mutex_unlock(&s->mu);
	return found;
}

static int fsrv_nlog(struct fsrv *s)
{
	pthread_mutex_lock(&s->mu);
	int n = s->nlog;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* ---- the provider against it --------------------------------------------------------- */

/* The last groups the manager sent, summarised: per group (sorted by source)
 * "source[ svc=<service name>][ zone=<node zone>]: address ...;". */
struct seen {
	pthread_mutex_t mu;
	char text[8192];
	int calls;
};

static void on_groups(void *ctx, const char *pool, const struct pd_target_group *g, size_t n)
{
	struct seen *s = ctx;
	char buf[8192];
	size_t len = 0;
	(void)pool;
	buf[0] = '\0';
	for (size_t i = 0; i < n && len < sizeof(buf) - 512; i++) {
		const char *svc = pd_labels_get(g[i].labels, "__meta_kubernetes_service_name");
		const char *z = pd_labels_get(g[i].labels, "__meta_kubernetes_node_label_zone");
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s%s%s%s:", g[i].source,
		                        svc ? " svc=" : "", svc ? svc : "", z ? " zone=" : "",
		                        z ? z : "");
		for (size_t j = 0; j < g[i].ntargets && len < sizeof(buf) - 256; j++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %s",
			                        pd_labels_get(g[i].targets[j], "__address__"));
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, ";");
	}
	pthread_mutex_lock(&s->mu);
	memcpy(s->text, buf, len + 1);
	s->calls++;
	pthread_mutex_unlock(&s->mu);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits (up to 60s, however loaded the machine) until the summary is want. */
static void wait_seen(struct seen *s, const char *want)
{
	int64_t deadline = mono_ms() + 60000;
	char last[8192];
	for (;;) {
		pthread_mutex_lock(&s->mu);
		snprintf(last, sizeof(last), "%s", s->text);
		pthread_mutex_unlock(&s->mu);
		if (!strcmp(last, want))
			return;
		if (mono_ms() > deadline)
			fail_msg("groups:\n  got  %s\n  want %s", last, want);
		usleep(5000);
	}
}

static void wait_until(int (*cond)(struct fsrv *, int), struct fsrv *s, int arg, const char *what)
{
	int64_t deadline = mono_ms() + 60000;
	while (!cond(s, arg)) {
		if (mono_ms() > deadline)
			fail_msg("timed out waiting for %s", what);
		usleep(5000);
	}
}

static int watching(struct fsrv *s, int r)
{
	return fsrv_watching(s, r) > 0;
}

static const char pod_fmt[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
    "\"default\",\"uid\":\"u-%s\",\"resourceVersion\":\"%%d\"},\"spec\":{\"nodeName\":\"%s\","
    "\"containers\":[{\"name\":\"c\",\"ports\":[{\"name\":\"http\",\"containerPort\":%d,"
    "\"protocol\":\"TCP\"}]}]},\"status\":{\"phase\":\"Running\",\"podIP\":\"%s\","
    "\"hostIP\":\"192.168.0.1\"}}";

static const char node_fmt[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"resourceVersion\":"
    "\"%%d\",\"labels\":{\"zone\":\"%s\"}},\"status\":{\"addresses\":[{\"type\":"
    "\"InternalIP\",\"address\":\"192.168.0.9\"}]}}";

static void set_pod(struct fsrv *s, const char *name, const char *node, int port, const char *ip,
                    int quiet)
{
	char json[1024];
	snprintf(json, sizeof(json), pod_fmt, name, name, node, port, ip);
	fsrv_set(s, R_PODS, name, json, quiet);
}

static void set_node(struct fsrv *s, const char *name, const char *zone)
{
	char json[1024];
	snprintf(json, sizeof(json), node_fmt, name, zone);
	fsrv_set(s, R_NODES, name, json, 0);
}

static struct pd_discovery_manager *start_manager_max(struct fsrv *srv, struct seen *seen,
                                                      const char *role, int attach_node,
                                                      size_t max_bytes)
{
	static char url[64];
	static struct pd_discovery_kubernetes_config kc;
	struct pd_discovery_options o = {.update_interval_ms = 1, .k8s_max_object_bytes = max_bytes};
	struct pd_discovery_manager *m;
	struct pd_err err = {0};
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv->port);
	kc = (struct pd_discovery_kubernetes_config){
	    .role = role, .api_server = url, .attach_node = attach_node};
	struct pd_discovery_pool_config pool = {
	    .name = "k8s", .kubernetes_configs = &kc, .nkubernetes = 1};
	pthread_mutex_init(&seen->mu, NULL);
	assert_int_equal(pd_discovery_manager_create(&m, on_groups, seen, &o, &err), 0);
	assert_int_equal(pd_discovery_manager_set_pools(m, &pool, 1, &err), 0);
	return m;
}

static struct pd_discovery_manager *start_manager(struct fsrv *srv, struct seen *seen,
                                                  const char *role, int attach_node)
{
	return start_manager_max(srv, seen, role, attach_node, 0);
}

/* The pod role with attach_metadata.node: a paginated list, then events; a node's
 * change rebuilds its pods; a bookmark moves the version a resumed watch starts
 * from; a dropped stream is resumed from the last version; a watch that ends is
 * resumed; 410 Gone (as a status and as an event) relists, and the relist drops
 * what went away meanwhile and keeps what stayed. */
static void test_provider_pods(void **state)
{
	(void)state;
	struct fsrv srv;
	struct seen seen = {0};
	struct pd_discovery_stats st;
	fsrv_start(&srv);
	set_node(&srv, "n1", "a");
	set_pod(&srv, "p1", "n1", 8080, "10.0.0.1", 0);
	set_pod(&srv, "p2", "n1", 8080, "10.0.0.2", 0);
	set_pod(&srv, "p3", "n2", 9090, "10.0.0.3", 0);
	struct pd_discovery_manager *m = start_manager(&srv, &seen, "pod", 1);

	/* three pods over two list pages; p3's node n2 is unknown, and Prometheus waits
	 * for a pod's node before it gives the pod targets */
	wait_seen(&seen, "pod/default/p1 zone=a: 10.0.0.1:8080;pod/default/p2 zone=a: "
	                 "10.0.0.2:8080;");
	assert_true(fsrv_logged(&srv, 0, "/api/v1/pods?limit=500&continue=2", NULL) >= 0);
	wait_until(watching, &srv, R_PODS, "the pod watch");
	wait_until(watching, &srv, R_NODES, "the node watch");
	assert_true(fsrv_logged(&srv, 0, "/api/v1/pods?watch=1&allowWatchBookmarks=true",
	                        "resourceVersion=104") >= 0);

	/* events: a new pod, a node that appears and one that changes */
	set_pod(&srv, "p4", "n2", 7070, "10.0.0.4", 0);
	set_node(&srv, "n2", "b");
	set_node(&srv, "n1", "c");
	wait_seen(&seen, "pod/default/p1 zone=c: 10.0.0.1:8080;pod/default/p2 zone=c: "
	                 "10.0.0.2:8080;pod/default/p3 zone=b: 10.0.0.3:9090;pod/default/p4 "
	                 "zone=b: 10.0.0.4:7070;");
	fsrv_set(&srv, R_PODS, "p2", NULL, 0);
	wait_seen(&seen, "pod/default/p1 zone=c: 10.0.0.1:8080;pod/default/p3 zone=b: "
	                 "10.0.0.3:9090;pod/default/p4 zone=b: 10.0.0.4:7070;");

	/* a bookmark, then a dropped stream: resumed from the bookmark's version */
	fsrv_event(&srv, R_PODS,
	           "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{"
	           "\"resourceVersion\":\"500\"}}}\n");
	/* the bookmark has arrived once a later event has */
	set_pod(&srv, "p1", "n1", 8081, "10.0.0.1", 0);
	wait_seen(&seen, "pod/default/p1 zone=c: 10.0.0.1:8081;pod/default/p3 zone=b: "
	                 "10.0.0.3:9090;pod/default/p4 zone=b: 10.0.0.4:7070;");
	int mark = fsrv_nlog(&srv);
	fsrv_end_watches(&srv, R_PODS, 0);
	wait_until(watching, &srv, R_PODS, "the pod watch after a drop");
	char rv[64];
	snprintf(rv, sizeof(rv), "resourceVersion=%d", srv.rv);
	assert_true(fsrv_logged(&srv, mark, "/api/v1/pods?watch=1", rv) >= 0);
	assert_true(fsrv_logged(&srv, mark, "/api/v1/pods?limit", NULL) < 0);

	/* a watch the server ends: resumed, no list */
	mark = fsrv_nlog(&srv);
	fsrv_end_watches(&srv, R_PODS, 1);
	wait_until(watching, &srv, R_PODS, "the pod watch after its end");
	assert_true(fsrv_logged(&srv, mark, "/api/v1/pods?limit", NULL) < 0);

	/* changes nobody hears of, then 410 Gone as an event: the relist finds them */
	set_pod(&srv, "p3", "n2", 9091, "10.0.0.3", 1);
	fsrv_set(&srv, R_PODS, "p4", NULL, 1);
	set_pod(&srv, "p5", "n1", 6060, "10.0.0.5", 1);
	mark = fsrv_nlog(&srv);
	fsrv_event(&srv, R_PODS,
	           "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\","
	           "\"message\":\"too old resource version\",\"reason\":\"Expired\","
	           "\"code\":410}}\n");
	wait_seen(&seen, "pod/default/p1 zone=c: 10.0.0.1:8081;pod/default/p3 zone=b: "
	                 "10.0.0.3:9091;pod/default/p5 zone=c: 10.0.0.5:6060;");
	assert_true(fsrv_logged(&srv, mark, "/api/v1/pods?limit=500", NULL) >= 0);

	/* 410 as the watch's status: a relist too */
	wait_until(watching, &srv, R_PODS, "the pod watch after the relist");
	fsrv_set(&srv, R_PODS, "p1", NULL, 1);
	pthread_mutex_lock(&srv.mu);
	srv.gone_next_watch = 1;
	pthread_mutex_unlock(&srv.mu);
	mark = fsrv_nlog(&srv);
	fsrv_end_watches(&srv, R_PODS, 1);
	wait_seen(&seen, "pod/default/p3 zone=b: 10.0.0.3:9091;pod/default/p5 zone=c: "
	                 "10.0.0.5:6060;");
	assert_true(fsrv_logged(&srv, mark, "/api/v1/pods?limit=500", NULL) >= 0);

	pd_discovery_manager_stats(m, &st);
	assert_true(st.k8s_events[PD_K8S_KIND_POD][0] >= 5);
	assert_true(st.k8s_events[PD_K8S_KIND_POD][1] >= 2);
	assert_true(st.k8s_events[PD_K8S_KIND_POD][2] >= 3);
	assert_true(st.k8s_events[PD_K8S_KIND_NODE][1] >= 1);
	assert_true(st.k8s_failures >= 1); /* the dropped stream */
	pd_discovery_manager_destroy(m);
	fsrv_stop(&srv);
	pthread_mutex_destroy(&seen.mu);
}

static const char ep_fmt[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"api\",\"namespace\":"
    "\"default\",\"resourceVersion\":\"%d\"},\"subsets\":[{\"addresses\":[{\"ip\":\"10.0.0.1\","
    "\"targetRef\":{\"kind\":\"Pod\",\"name\":\"p1\",\"namespace\":\"default\"}}],\"ports\":[{"
    "\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"}]}]}";

static const char svc_fmt[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"api\",\"namespace\":"
    "\"default\",\"resourceVersion\":\"%d\"},\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":"
    "\"10.96.0.10\",\"ports\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\"}]}}";

/* The endpoints role: the group gains its service's labels when the service
 * appears and loses them when it goes; an error status is a failure that is
 * retried. */
static void test_provider_endpoints(void **state)
{
	(void)state;
	struct fsrv srv;
	struct seen seen = {0};
	struct pd_discovery_provider_status *ps;
	size_t nps;
	struct pd_err err = {0};
	fsrv_start(&srv);
	fsrv_set(&srv, R_ENDPOINTS, "api", ep_fmt, 0);
	set_pod(&srv, "p1", "n1", 8080, "10.0.0.1", 0);
	struct pd_discovery_manager *m = start_manager(&srv, &seen, "endpoints", 0);
	wait_seen(&seen, "endpoints/default/api: 10.0.0.1:8080;");
	wait_until(watching, &srv, R_SERVICES, "the service watch");
	fsrv_set(&srv, R_SERVICES, "api", svc_fmt, 0);
	wait_seen(&seen, "endpoints/default/api svc=api: 10.0.0.1:8080;");
	fsrv_set(&srv, R_SERVICES, "api", NULL, 0);
	wait_seen(&seen, "endpoints/default/api: 10.0.0.1:8080;");
	fsrv_set(&srv, R_ENDPOINTS, "api", NULL, 0);
	wait_seen(&seen, "");
	assert_int_equal(pd_discovery_manager_status(m, "k8s", &ps, &nps, &err), 0);
	assert_int_equal(nps, 1);
	assert_non_null(strstr(ps[0].name, "kubernetes/"));
	assert_non_null(strstr(ps[0].detail, "endpoints: http://127.0.0.1:"));
	assert_null(ps[0].last_error);
	pd_discovery_provider_status_free(ps, nps);
	pd_discovery_manager_destroy(m);
	fsrv_stop(&srv);
	pthread_mutex_destroy(&seen.mu);
}

/* Nothing listens: the failure is reported and counted, and retried. */
static void test_provider_unreachable(void **state)
{
	(void)state;
	struct fsrv srv;
	struct seen seen = {0};
	struct pd_discovery_provider_status *ps = NULL;
	struct pd_discovery_stats st;
	size_t nps = 0;
	struct pd_err err = {0};
	fsrv_start(&srv);
	fsrv_stop(&srv); /* its port is now closed */
	struct pd_discovery_manager *m = start_manager(&srv, &seen, "service", 0);
	int64_t deadline = mono_ms() + 60000;
	for (;;) {
		pd_discovery_manager_stats(m, &st);
		if (st.k8s_failures >= 2)
			break;
		if (mono_ms() > deadline)
			fail_msg("no retried failure");
		usleep(10000);
	}
	assert_int_equal(pd_discovery_manager_status(m, "k8s", &ps, &nps, &err), 0);
	assert_non_null(ps[0].last_error);
	assert_non_null(strstr(ps[0].last_error, "list service"));
	pd_discovery_provider_status_free(ps, nps);
	pd_discovery_manager_destroy(m);
	pthread_mutex_destroy(&seen.mu);
}

/* The watched objects' bound: a list that would go over it fails, is reported and
 * retried; an event that would go over it fails the watch, keeping the targets;
 * once objects go away, what fits is taken again. */
static void test_provider_bound(void **state)
{
	(void)state;
	struct fsrv srv;
	struct seen seen = {0};
	struct pd_discovery_provider_status *ps = NULL;
	struct pd_discovery_stats st;
	size_t nps = 0;
	struct pd_err err = {0};
	char json[1024];
	fsrv_start(&srv);
	set_pod(&srv, "p1", "", 8080, "10.0.0.1", 0);
	set_pod(&srv, "p2", "", 8080, "10.0.0.2", 0);
	/* room for two pods' JSON, not three */
	size_t one = (size_t)snprintf(json, sizeof(json), pod_fmt, "p1", "p1", "", 8080, "10.0.0.1");
	struct pd_discovery_manager *m = start_manager_max(&srv, &seen, "pod", 0, 2 * one + one / 2);
	wait_seen(&seen, "pod/default/p1: 10.0.0.1:8080;pod/default/p2: 10.0.0.2:8080;");
	wait_until(watching, &srv, R_PODS, "the pod watch");
	pd_discovery_manager_stats(m, &st);
	uint64_t failures = st.k8s_failures;
	/* a third pod: the event would go over, the watch fails, the two stay */
	set_pod(&srv, "p3", "", 8080, "10.0.0.3", 0);
	int64_t deadline = mono_ms() + 60000;
	for (;;) {
		pd_discovery_manager_stats(m, &st);
		if (st.k8s_failures > failures)
			break;
		if (mono_ms() > deadline)
			fail_msg("the event over the bound did not fail the watch");
		usleep(10000);
	}
	assert_int_equal(pd_discovery_manager_status(m, "k8s", &ps, &nps, &err), 0);
	assert_non_null(ps[0].last_error);
	if (!strstr(ps[0].last_error, "would exceed") || !strstr(ps[0].last_error, "namespaces or selectors"))
		fail_msg("last error: %s", ps[0].last_error);
	pd_discovery_provider_status_free(ps, nps);
	pthread_mutex_lock(&seen.mu);
	assert_string_equal(seen.text, "pod/default/p1: 10.0.0.1:8080;pod/default/p2: 10.0.0.2:8080;");
	pthread_mutex_unlock(&seen.mu);
	/* one goes away (unheard of: the retried list finds it gone): the rest fits */
	fsrv_set(&srv, R_PODS, "p1", NULL, 1);
	wait_seen(&seen, "pod/default/p2: 10.0.0.2:8080;pod/default/p3: 10.0.0.3:8080;");
	pd_discovery_manager_destroy(m);
	fsrv_stop(&srv);
	pthread_mutex_destroy(&seen.mu);
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
	    cmocka_unit_test(test_provider_pods),
	    cmocka_unit_test(test_provider_endpoints),
	    cmocka_unit_test(test_provider_unreachable),
	    cmocka_unit_test(test_provider_bound),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
