/* test_api_web.c: the web configuration file as the HTTP server applies it,
 * without TLS (tests/integration/tls.sh covers TLS): basic auth right, wrong,
 * malformed and missing, the Basic challenge, the configured response headers on
 * every answer, bcrypt checks cached per credentials (counted in /metrics), a
 * changed file applied at the next request, a broken file answered with 500
 * until it is fixed (and nothing served meanwhile), the rate limit answered with
 * 429, and a bad file refused at start with the file and line. */
#define _GNU_SOURCE /* nftw, strcasestr */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "profd/api.h"
#include "profd/tsdb.h"

static char dir[] = "/tmp/profd-test-api-web-XXXXXX";
static char webyml[256];
static struct pd_tsdb *db;

/* bcrypt (cost 4) of "secret" */
#define ALICE "alice: $2b$04$01XTU9ZIXdOWeXZhQaBkt./oIwI8gFiHp7Kkg5UqWBHTOaEDIoeT.\n"

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static int setup(void **state)
{
	(void)state;
	struct pd_err err = {0};
	assert_non_null(mkdtemp(dir));
	snprintf(webyml, sizeof(webyml), "%s/web.yml", dir);
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	char data[300];
	snprintf(data, sizeof(data), "%s/data", dir);
	if (pd_tsdb_open(&db, data, &o, &err))
		fail_msg("open: %s", err.msg);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	curl_global_cleanup();
	return 0;
}

static void write_web(const char *text)
{
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.new", webyml);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(rename(tmp, webyml), 0);
}

static struct pd_api_server *start(void)
{
	struct pd_err err = {0};
	struct pd_api_opts ao;
	struct pd_api_server *s = NULL;
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	ao.web_config_file = webyml;
	if (pd_api_start(&s, &ao, &err))
		fail_msg("start: %s", err.msg);
	return s;
}

struct resp {
	long status;
	char body[1 << 16];
	size_t len;
	char headers[4096];
	size_t hlen;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	size_t k = sz * n;
	if (k > sizeof(r->body) - 1 - r->len)
		k = sizeof(r->body) - 1 - r->len;
	memcpy(r->body + r->len, p, k);
	r->len += k;
	r->body[r->len] = 0;
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	size_t k = sz * n;
	if (k > sizeof(r->headers) - 1 - r->hlen)
		k = sizeof(r->headers) - 1 - r->hlen;
	memcpy(r->headers + r->hlen, p, k);
	r->hlen += k;
	r->headers[r->hlen] = 0;
	return sz * n;
}

/* GET path; userpwd "user:password" or NULL; authz: a raw Authorization value. */
static void get(struct pd_api_server *s, const char *path, const char *userpwd, const char *authz,
                struct resp *r)
{
	char url[512], h[512];
	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", pd_api_port(s), path);
	CURL *c = curl_easy_init();
	assert_non_null(c);
	struct curl_slist *hl = NULL;
	if (authz) {
		snprintf(h, sizeof(h), "Authorization: %s", authz);
		hl = curl_slist_append(hl, h);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (userpwd)
		curl_easy_setopt(c, CURLOPT_USERPWD, userpwd);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s: %s", url, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
}

static int has_header(const struct resp *r, const char *line)
{
	const char *p = r->headers;
	size_t n = strlen(line);
	while ((p = strcasestr(p, line))) {
		if ((p == r->headers || p[-1] == '\n') && (p[n] == '\r' || p[n] == '\n'))
			return 1;
		p += n;
	}
	return 0;
}

/* The value of a sample line "name value" in /metrics text; -1 when absent. */
static long long metric(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return atoll(p + n + 1);
	return -1;
}

static void test_basic_auth(void **state)
{
	(void)state;
	write_web("basic_auth_users:\n  " ALICE "http_server_config:\n  headers:\n"
	          "    X-Frame-Options: deny\n    X-Content-Type-Options: nosniff\n");
	struct pd_api_server *s = start();
	struct resp r;

	get(s, "/api/v1/labels", NULL, NULL, &r);
	assert_int_equal(r.status, 401);
	assert_true(has_header(&r, "WWW-Authenticate: Basic"));
	assert_true(has_header(&r, "X-Frame-Options: deny"));
	assert_string_equal(r.body, "Unauthorized\n");
	get(s, "/-/healthy", "alice:wrong", NULL, &r);
	assert_int_equal(r.status, 401);
	get(s, "/-/healthy", "bob:secret", NULL, &r);
	assert_int_equal(r.status, 401);
	/* malformed: not base64, no colon, another scheme */
	get(s, "/-/healthy", NULL, "Basic !!!!", &r);
	assert_int_equal(r.status, 401);
	get(s, "/-/healthy", NULL, "Basic YWxpY2U=", &r); /* "alice" */
	assert_int_equal(r.status, 401);
	get(s, "/-/healthy", NULL, "Bearer YWxpY2U6c2VjcmV0", &r);
	assert_int_equal(r.status, 401);

	get(s, "/metrics", "alice:secret", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(has_header(&r, "X-Content-Type-Options: nosniff"));
	long long checks = metric(r.body, "profd_http_basic_auth_checks_total");
	assert_true(checks >= 3); /* wrong, bob, right: each checked once */
	/* the same credentials again: answered from the cache, no bcrypt */
	for (int i = 0; i < 5; i++) {
		get(s, "/-/healthy", NULL, "basic YWxpY2U6c2VjcmV0", &r); /* scheme in any case */
		assert_int_equal(r.status, 200);
		assert_string_equal(r.body, "profd is Healthy.\n");
	}
	get(s, "/metrics", "alice:secret", NULL, &r);
	assert_int_equal(metric(r.body, "profd_http_basic_auth_checks_total"), checks);
	assert_non_null(strstr(r.body, "code=\"401\"")); /* counted under its own code */

	/* a changed file applies at the next request: no users, other headers */
	write_web("http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n");
	get(s, "/api/v1/labels", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(has_header(&r, "X-Frame-Options: sameorigin"));

	/* a broken file: 500 for every request until it is fixed, counted */
	write_web("basic_auth_users:\n  alice: [\n");
	get(s, "/api/v1/labels", NULL, NULL, &r);
	assert_int_equal(r.status, 500);
	assert_string_equal(r.body, "Internal Server Error\n");
	get(s, "/-/healthy", "alice:secret", NULL, &r);
	assert_int_equal(r.status, 500);
	write_web("basic_auth_users:\n  " ALICE);
	get(s, "/metrics", "alice:secret", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(metric(r.body, "profd_web_config_failures_total") >= 2);
	get(s, "/metrics", NULL, NULL, &r);
	assert_int_equal(r.status, 401);
	pd_api_stop(s);
}

static void test_rate_limit(void **state)
{
	(void)state;
	write_web("rate_limit:\n  burst: 3\n  interval: 1h\n");
	struct pd_api_server *s = start();
	struct resp r;
	for (int i = 0; i < 3; i++) {
		get(s, "/-/healthy", NULL, NULL, &r);
		assert_int_equal(r.status, 200);
	}
	get(s, "/-/healthy", NULL, NULL, &r);
	assert_int_equal(r.status, 429);
	assert_string_equal(r.body, "Too Many Requests\n");
	pd_api_stop(s);
}

static void test_bad_file_at_start(void **state)
{
	(void)state;
	write_web("basic_auth_users:\n  alice: nothash\n");
	struct pd_err err = {0};
	struct pd_api_opts ao;
	struct pd_api_server *s = NULL;
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	ao.web_config_file = webyml;
	assert_int_not_equal(pd_api_start(&s, &ao, &err), 0);
	assert_null(s);
	assert_non_null(strstr(err.msg, "web.yml:2:"));
	write_web("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n");
	assert_int_not_equal(pd_api_start(&s, &ao, &err), 0);
	assert_non_null(strstr(err.msg, "cert_file"));
	assert_non_null(strstr(err.msg, "nope.crt"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic_auth),
	    cmocka_unit_test(test_rate_limit),
	    cmocka_unit_test(test_bad_file_at_start),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
