/* test_discovery.c: unit tests of pkg/discovery: the file_sd / http_sd document
 * format (JSON and YAML, good documents and the exact error messages of bad ones),
 * and the manager running static, file_sd and http_sd providers against a temporary
 * directory and a small HTTP server on 127.0.0.1 started here. Waits are on a
 * condition variable (or on a status check) with a deadline; nothing sleeps in
 * place of an assertion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "profd/discovery.h"

#define WAIT_MS 10000 /* bound on every wait; they normally take milliseconds */

/* ---- helpers -------------------------------------------------------------- */

/* Renders groups one per line: `source labels [addr,addr]`. */
static char *render(const struct pd_target_group *g, size_t n)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	for (size_t i = 0; i < n; i++) {
		char *ls = pd_labels_string(g[i].labels);
		assert_non_null(ls);
		assert_int_equal(pd_buf_printf(&b, "%s %s [", g[i].source, ls), 0);
		free(ls);
		for (size_t j = 0; j < g[i].ntargets; j++) {
			const char *a = pd_labels_get(g[i].targets[j], "__address__");
			assert_int_equal(pd_labels_len(g[i].targets[j]), a ? 1 : 0);
			assert_int_equal(pd_buf_printf(&b, "%s%s", j ? "," : "", a ? a : ""), 0);
		}
		assert_int_equal(pd_buf_printf(&b, "]\n"), 0);
	}
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	return (char *)pd_buf_steal(&b, NULL);
}

static char *parse_ok(const char *text, int yaml, size_t want_n)
{
	struct pd_target_group *g = NULL;
	struct pd_err err = {0};
	size_t n = 99;
	int rc = pd_discovery_parse_groups(text, strlen(text), yaml, "f", &g, &n, &err);
	if (rc)
		fail_msg("unexpected error: %s", err.msg);
	assert_int_equal(n, want_n);
	char *s = render(g, n);
	pd_target_group_free(g, n);
	return s;
}

static void parse_bad(const char *text, size_t len, int yaml, int code, const char *want)
{
	struct pd_target_group *g = (void *)1;
	struct pd_err err = {0};
	size_t n = 99;
	int rc =
	    pd_discovery_parse_groups(text, len, yaml, yaml ? "f.yml" : "f.json", &g, &n, &err);
	if (rc == 0)
		fail_msg("parsed without error: %s", text);
	assert_int_equal(rc, code);
	assert_null(g);
	assert_int_equal(n, 0);
	assert_string_equal(err.msg, want);
}

#define BAD_JSON(text, want) parse_bad(text, strlen(text), 0, PD_EINVAL, want)
#define BAD_YAML(text, want) parse_bad(text, strlen(text), 1, PD_EINVAL, want)

static void deadline_in(struct timespec *ts, int64_t ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_file(const char *path, const char *text)
{
	struct pd_err err = {0};
	if (pd_file_write(path, text, strlen(text), &err))
		fail_msg("%s", err.msg);
}

/* Rewrites a file in place (truncate, write, close), as an editor without atomic
 * saves does. */
static void write_in_place(const char *path, const char *text)
{
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 0), 0);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

/* ---- callback recorder -------------------------------------------------------- */

#define MAX_POOLS 8

struct rec {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct {
		char name[32];
		char *last; /* rendering of the last call */
		int calls;
	} pool[MAX_POOLS];
	int total;
};

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static void rec_fini(struct rec *r)
{
	for (int i = 0; i < MAX_POOLS; i++)
		free(r->pool[i].last);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cond);
}

static int rec_slot(struct rec *r, const char *pool)
{
	for (int i = 0; i < MAX_POOLS; i++) {
		if (!strcmp(r->pool[i].name, pool))
			return i;
		if (!r->pool[i].name[0]) {
			snprintf(r->pool[i].name, sizeof(r->pool[i].name), "%s", pool);
			return i;
		}
	}
	abort();
}

static void on_groups(void *ctx, const char *pool, const struct pd_target_group *g, size_t n)
{
	struct rec *r = ctx;
	char *s = render(g, n);
	pthread_mutex_lock(&r->mu);
	int i = rec_slot(r, pool);
	free(r->pool[i].last);
	r->pool[i].last = s;
	r->pool[i].calls++;
	r->total++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
}

/* Waits until the last call for pool rendered as want; fails after WAIT_MS. */
static void rec_wait(struct rec *r, const char *pool, const char *want)
{
	struct timespec dl;
	deadline_in(&dl, WAIT_MS);
	pthread_mutex_lock(&r->mu);
	for (;;) {
		int i = rec_slot(r, pool);
		if (r->pool[i].last && !strcmp(r->pool[i].last, want))
			break;
		if (pthread_cond_timedwait(&r->cond, &r->mu, &dl) == ETIMEDOUT) {
			char *last = r->pool[i].last ? strdup(r->pool[i].last) : NULL;
			pthread_mutex_unlock(&r->mu);
			fail_msg("pool %s: timed out waiting for\n%s\nlast call:\n%s", pool, want,
			         last ? last : "(none)");
		}
	}
	pthread_mutex_unlock(&r->mu);
}

/* Waits until pool has had at least n calls. */
static void rec_wait_calls(struct rec *r, const char *pool, int n)
{
	struct timespec dl;
	deadline_in(&dl, WAIT_MS);
	pthread_mutex_lock(&r->mu);
	while (r->pool[rec_slot(r, pool)].calls < n)
		if (pthread_cond_timedwait(&r->cond, &r->mu, &dl) == ETIMEDOUT) {
			int got = r->pool[rec_slot(r, pool)].calls;
			pthread_mutex_unlock(&r->mu);
			fail_msg("pool %s: %d calls, wanted %d", pool, got, n);
		}
	pthread_mutex_unlock(&r->mu);
}

static int rec_calls(struct rec *r, const char *pool)
{
	pthread_mutex_lock(&r->mu);
	int n = r->pool[rec_slot(r, pool)].calls;
	pthread_mutex_unlock(&r->mu);
	return n;
}

static char *rec_last(struct rec *r, const char *pool)
{
	pthread_mutex_lock(&r->mu);
	const char *l = r->pool[rec_slot(r, pool)].last;
	char *s = l ? strdup(l) : NULL;
	pthread_mutex_unlock(&r->mu);
	return s;
}

/* Waits until the first provider of pool reports last_error == want (NULL: none)
 * with at least min_refresh_ms as its last refresh time. Polls the status: the
 * manager has no event for "a refresh failed" other than this. */
static void wait_error(struct pd_discovery_manager *m, const char *pool, const char *want)
{
	int64_t end = mono_ms() + WAIT_MS;
	char last[1024] = "";
	for (;;) {
		struct pd_discovery_provider_status *s;
		size_t n;
		struct pd_err err = {0};
		assert_int_equal(pd_discovery_manager_status(m, pool, &s, &n, &err), 0);
		assert_true(n >= 1);
		int ok = want ? s[0].last_error && !strcmp(s[0].last_error, want)
		              : s[0].last_refresh_ms && !s[0].last_error;
		snprintf(last, sizeof(last), "%s", s[0].last_error ? s[0].last_error : "(none)");
		pd_discovery_provider_status_free(s, n);
		if (ok)
			return;
		if (mono_ms() > end)
			fail_msg("pool %s: timed out waiting for error\n%s\nlast: %s", pool,
			         want ? want : "(none)", last);
		usleep(5000); /* polling interval, not an assertion */
	}
}

static struct pd_discovery_manager *new_manager(struct rec *r, int inotify)
{
	struct pd_discovery_manager *m = NULL;
	struct pd_err err = {0};
	struct pd_discovery_options o = {.update_interval_ms = 1, .disable_inotify = !inotify};
	rec_init(r);
	assert_int_equal(pd_discovery_manager_create(&m, on_groups, r, &o, &err), 0);
	return m;
}

static void set_pools(struct pd_discovery_manager *m, const struct pd_discovery_pool_config *p,
                      size_t n)
{
	struct pd_err err = {0};
	if (pd_discovery_manager_set_pools(m, p, n, &err))
		fail_msg("set_pools: %s", err.msg);
}

/* ---- parsing: JSON -------------------------------------------------------------- */

static void test_json_good(void **state)
{
	char *s = parse_ok("[{\"targets\": [\"a:1\", \"b:2\"], \"labels\": {\"job\": \"x\", "
	                   "\"env\": \"prod\"}},\n {\"targets\": []}, {}]",
	                   0, 3);
	assert_string_equal(s, "f:0 {env=\"prod\", job=\"x\"} [a:1,b:2]\n"
	                       "f:1 {} []\n"
	                       "f:2 {} []\n");
	free(s);

	/* null means none; null elements read as ""; keys match case-insensitively as in
	 * Go; a repeated key keeps the last value; empty values are no label */
	s = parse_ok("[{\"Targets\":[\"a\",null],\"LABELS\":{\"a\":\"1\",\"a\":\"2\",\"b\":null,"
	             "\"c\":\"\"}},{\"targets\":null,\"labels\":null}]",
	             0, 2);
	assert_string_equal(s, "f:0 {a=\"2\"} [a,]\nf:1 {} []\n");
	free(s);

	s = parse_ok("[{\"targets\":[\"a\",\"b\"],\"targets\":[\"c\"],\"labels\":{\"x\":\"1\"},"
	             "\"labels\":{\"y\":\"2\"}}]",
	             0, 1);
	assert_string_equal(s, "f:0 {y=\"2\"} [c]\n");
	free(s);

	s = parse_ok("null", 0, 0);
	assert_string_equal(s, "");
	free(s);
	s = parse_ok(" \t\r\n[ ]\n", 0, 0);
	free(s);
}

static void test_json_escapes(void **state)
{
	struct pd_target_group *g;
	struct pd_err err = {0};
	size_t n;
	/* \/, \n, \u00e9, a surrogate pair (as Python's json.dumps writes emoji), a lone
	 * surrogate and invalid UTF-8 (both U+FFFD, as in Go), raw UTF-8 */
	const char *doc =
	    "[{\"labels\":{\"v\":\"a\\/b\\n\\u00e9\\ud83d\\ude00|\\udc00|\xff|\xc3\xa9\","
	    "\"w\":\"\\\"\\\\\\b\\f\\r\\t\"}}]";
	assert_int_equal(pd_discovery_parse_groups(doc, strlen(doc), 0, "f", &g, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(pd_labels_get(g[0].labels, "v"),
	                    "a/b\n\xc3\xa9\xf0\x9f\x98\x80|\xef\xbf\xbd|\xef\xbf\xbd|\xc3\xa9");
	assert_string_equal(pd_labels_get(g[0].labels, "w"), "\"\\\b\f\r\t");
	pd_target_group_free(g, n);

	/* a high surrogate followed by another escape: U+FFFD, then that escape */
	doc = "[{\"targets\":[\"\\ud800\\u0041\"]}]";
	assert_int_equal(pd_discovery_parse_groups(doc, strlen(doc), 0, "f", &g, &n, &err), 0);
	assert_string_equal(pd_labels_get(g[0].targets[0], "__address__"), "\xef\xbf\xbd"
	                                                                   "A");
	pd_target_group_free(g, n);
}

static void test_json_errors(void **state)
{
	BAD_JSON("", "f.json:1:1: unexpected end of JSON input");
	BAD_JSON("  \n ", "f.json:2:2: unexpected end of JSON input");
	BAD_JSON("[{\"targets\":[\"a\"]}", "f.json:1:19: unexpected end of JSON input");
	BAD_JSON("[{\"targets\":[\"a", "f.json:1:16: unexpected end of JSON input");
	BAD_JSON("{}", "f.json:1:1: expected a list of target groups, got map");
	BAD_JSON("\"a\"", "f.json:1:1: expected a list of target groups, got string");
	BAD_JSON("[1]", "f.json:1:2: target group must be a map, got number");
	BAD_JSON("[null]", "f.json:1:2: nil target group item found");
	BAD_JSON("[{\"targets\":[\"a\"]}, null]", "f.json:1:21: nil target group item found");
	/* numbers are not strings in JSON */
	BAD_JSON("[{\"targets\":[8080]}]", "f.json:1:14: target must be a string, got number");
	BAD_JSON("[{\"targets\":[true]}]", "f.json:1:14: target must be a string, got boolean");
	BAD_JSON("[{\"targets\":\"a:1\"}]",
	         "f.json:1:13: \"targets\" must be a list of strings, got string");
	BAD_JSON("[{\"labels\":[]}]",
	         "f.json:1:12: \"labels\" must be a map of label names to strings, got list");
	BAD_JSON("[{\"labels\":{\"a\":1}}]",
	         "f.json:1:17: value of label \"a\" must be a string, got number");
	BAD_JSON("[{\"labels\":{\"a\":{}}}]",
	         "f.json:1:17: value of label \"a\" must be a string, got map");
	BAD_JSON("[{\"labels\":{\"1x\":\"a\"}}]", "f.json:1:13: \"1x\" is not a valid label name");
	BAD_JSON("[{\"labels\":{\"\":\"a\"}}]", "f.json:1:13: \"\" is not a valid label name");
	BAD_JSON("[{\"labels\":{\"a.b\":\"a\"}}]",
	         "f.json:1:13: \"a.b\" is not a valid label name");
	/* columns count characters: é is one */
	BAD_JSON("[{\"labels\":{\"a\":\"é\",\"bé\":\"x\"}}]",
	         "f.json:1:21: \"bé\" is not a valid label name");
	BAD_JSON("[{\"targets\":[],\"foo\":1}]",
	         "f.json:1:16: unknown field \"foo\" in target group (expected \"targets\" or "
	         "\"labels\")");
	/* a repeated key is read both times: the first may be wrong */
	BAD_JSON("[{\"targets\":[1],\"targets\":[\"a\"]}]",
	         "f.json:1:14: target must be a string, got number");
	BAD_JSON("[{\"targets\":[\"a\\u0000b\"]}]", "f.json:1:14: target contains a NUL character");
	BAD_JSON("[\n  {\"targets\": [\n    \"a\", 7]}]",
	         "f.json:3:10: target must be a string, got number");
	/* syntax, with Go's words */
	BAD_JSON("[{\"targets\":[\"a\"],}]",
	         "f.json:1:19: invalid character '}' looking for beginning of object key string");
	BAD_JSON("[{'targets':[]}]",
	         "f.json:1:3: invalid character '\\'' looking for beginning of object key string");
	BAD_JSON("[{\"targets\" []}]", "f.json:1:13: invalid character '[' after object key");
	BAD_JSON("[{\"targets\":[] \"labels\":{}}]",
	         "f.json:1:16: invalid character '\"' after object key:value pair");
	BAD_JSON("[1,]", "f.json:1:4: invalid character ']' looking for beginning of value");
	BAD_JSON("[01]", "f.json:1:3: invalid character '1' after array element");
	BAD_JSON("[] x", "f.json:1:4: invalid character 'x' after top-level value");
	BAD_JSON("[]\n---\n[]", "f.json:2:1: invalid character '-' after top-level value");
	BAD_JSON("# comment\n[]",
	         "f.json:1:1: invalid character '#' looking for beginning of value");
	BAD_JSON("[{\"targets\":[\"a\tb\"]}]",
	         "f.json:1:16: invalid character '\\t' in string literal");
	BAD_JSON("[{\"targets\":[\"a\nb\"]}]",
	         "f.json:1:16: invalid character '\\n' in string literal");
	BAD_JSON("[{\"targets\":[\"\\q\"]}]",
	         "f.json:1:16: invalid character 'q' in string escape code");
	BAD_JSON("[{\"targets\":[\"\\x41\"]}]",
	         "f.json:1:16: invalid character 'x' in string escape code");
	BAD_JSON("[{\"targets\":[\"\\u12g4\"]}]",
	         "f.json:1:19: invalid character 'g' in \\u hexadecimal character escape");
	BAD_JSON("[-]", "f.json:1:3: invalid character ']' in numeric literal");
	BAD_JSON("[1.]",
	         "f.json:1:4: invalid character ']' after decimal point in numeric literal");
	BAD_JSON("[1e+]", "f.json:1:5: invalid character ']' in exponent of numeric literal");
	BAD_JSON("[tru]", "f.json:1:5: invalid character ']' in literal true (expecting 'e')");
	BAD_JSON("[nul", "f.json:1:5: unexpected end of JSON input");
	BAD_JSON("\xef\xbb\xbf[]", "f.json:1:1: invalid character '\xef\xbb\xbf' looking for "
	                           "beginning of value");

	/* nesting is bounded */
	char deep[512];
	memset(deep, '[', 300);
	deep[300] = '\0';
	BAD_JSON(deep, "f.json:1:101: exceeded max depth");

	/* NUL bytes in the text are characters like any other */
	parse_bad("[]\0", 3, 0, PD_EINVAL,
	          "f.json:1:3: invalid character '\\x00' after top-level "
	          "value");
}

/* ---- parsing: YAML -------------------------------------------------------------- */

static void test_yaml_good(void **state)
{
	char *s = parse_ok("# comment\n"
	                   "- targets: ['a:1', b:2, 8080]\n"
	                   "  labels:\n"
	                   "    job: x\n"
	                   "    port: 9090\n"
	                   "    yes_: yes\n"
	                   "    empty: ~\n"
	                   "- targets:\n"
	                   "- labels: {}\n"
	                   "- &g {targets: [\"c\"]}\n"
	                   "- *g\n",
	                   1, 5);
	assert_string_equal(s, "f:0 {job=\"x\", port=\"9090\", yes_=\"yes\"} [a:1,b:2,8080]\n"
	                       "f:1 {} []\n"
	                       "f:2 {} []\n"
	                       "f:3 {} [c]\n"
	                       "f:4 {} [c]\n");
	free(s);

	/* JSON is YAML too */
	s = parse_ok("[{\"targets\": [\"a\"], \"labels\": {\"k\": \"v\"}}]", 1, 1);
	assert_string_equal(s, "f:0 {k=\"v\"} [a]\n");
	free(s);

	/* empty and null documents hold no groups, as yaml.v2 reads them */
	s = parse_ok("", 1, 0);
	free(s);
	s = parse_ok("# nothing\n", 1, 0);
	free(s);
	s = parse_ok("~\n", 1, 0);
	free(s);
}

static void test_yaml_errors(void **state)
{
	BAD_YAML("- targets: [a]\n  foo: 1\n",
	         "f.yml:2:3: unknown field \"foo\" in target group (expected \"targets\" or "
	         "\"labels\")");
	/* YAML keys match exactly */
	BAD_YAML("- Targets: [a]\n",
	         "f.yml:1:3: unknown field \"Targets\" in target group (expected \"targets\" or "
	         "\"labels\")");
	BAD_YAML("- targets: [a]\n  targets: [b]\n",
	         "f.yml:2:3: field \"targets\" is defined more than once");
	BAD_YAML("- labels: {a: x, a: y}\n", "f.yml:1:18: label \"a\" is defined more than once");
	BAD_YAML("- labels: {1a: x}\n", "f.yml:1:12: \"1a\" is not a valid label name");
	BAD_YAML("- labels: {~: x}\n", "f.yml:1:12: \"\" is not a valid label name");
	BAD_YAML("- labels: {[a]: x}\n", "f.yml:1:12: label name must be a string, got list");
	BAD_YAML("- labels: {a: [x]}\n",
	         "f.yml:1:15: value of label \"a\" must be a string, got list");
	BAD_YAML("- labels: x\n",
	         "f.yml:1:11: \"labels\" must be a map of label names to strings, got string");
	BAD_YAML("- targets: a:1\n",
	         "f.yml:1:12: \"targets\" must be a list of strings, got string");
	BAD_YAML("- targets: [{a: 1}]\n", "f.yml:1:13: target must be a string, got map");
	BAD_YAML("- targets: [\"a\\0b\"]\n", "f.yml:1:13: target contains a NUL character");
	BAD_YAML("- ~\n", "f.yml:1:3: nil target group item found");
	BAD_YAML("-\n", "f.yml:1:2: nil target group item found");
	BAD_YAML("targets: [a]\n", "f.yml:1:1: expected a list of target groups, got map");
	BAD_YAML("- [a]\n", "f.yml:1:3: target group must be a map, got list");
	/* libyaml's own messages, with its positions */
	BAD_YAML("- targets: [a\n",
	         "f.yml:2:1: did not find expected ',' or ']' (while parsing a flow sequence at "
	         "1:12)");
	BAD_YAML("- targets: [a]\n labels: {}\n",
	         "f.yml:2:2: did not find expected '-' indicator (while parsing a block "
	         "collection at 1:1)");
	BAD_YAML("- *nope\n", "f.yml:1:3: found undefined alias");
	BAD_YAML("- targets: [\"\xff\"]\n", "f.yml:1:14: invalid leading UTF-8 octet: #FF");
	/* aliases cannot multiply a document past the limit */
	{
		struct pd_buf b;
		pd_buf_init(&b, 0);
		assert_int_equal(pd_buf_printf(&b, "- &g {targets: [a"), 0);
		for (int i = 1; i < 1000; i++)
			assert_int_equal(pd_buf_printf(&b, ",a"), 0);
		assert_int_equal(pd_buf_printf(&b, "]}\n"), 0);
		for (int i = 1; i < 1000; i++)
			assert_int_equal(pd_buf_printf(&b, "- *g\n"), 0);
		parse_bad((const char *)b.data, b.len, 1, PD_ETOOBIG,
		          "f.yml:1:16: too many targets: the limit is 1000000 groups plus targets "
		          "per document");
		pd_buf_fini(&b);
	}
	/* an alias of its own ancestor */
	BAD_YAML("&a [*a]\n", "f.yml:1:1: exceeded max depth");
	/* deep flow collections are refused before libyaml's loader, which takes time
	 * quadratic in their depth, sees them: 100,000 levels took it minutes */
	{
		size_t n = 100000;
		char *q = malloc(2 * n + 1);
		assert_non_null(q);
		memset(q, '[', n);
		memset(q + n, ']', n);
		q[2 * n] = '\0';
		BAD_YAML(q, "f.yml:1:101: exceeded max depth");
		for (size_t i = 0; i < n / 4; i++)
			memcpy(q + 4 * i, "{a: ", 4);
		BAD_YAML(q, "f.yml:1:401: exceeded max depth");
		free(q);
	}
}

static void test_yaml_nesting(void **state)
{
	size_t line = 0, col = 0;
	assert_int_equal(pd_discovery_yaml_nesting("[[x]]", 5, 2, &line, &col), 0);
	assert_int_equal(pd_discovery_yaml_nesting("[[x]]", 5, 1, &line, &col), PD_EINVAL);
	assert_int_equal(line, 1);
	assert_int_equal(col, 2);
	/* block collections count too, at their first node */
	const char *block = "a:\n  b:\n    - c: d\n";
	assert_int_equal(pd_discovery_yaml_nesting(block, strlen(block), 4, &line, &col), 0);
	assert_int_equal(pd_discovery_yaml_nesting(block, strlen(block), 3, &line, &col),
	                 PD_EINVAL);
	assert_int_equal(line, 3);
	assert_int_equal(col, 7);
	/* only the first document is read, as the loader reads it */
	const char *two = "[x]\n---\n[[[x]]]\n";
	assert_int_equal(pd_discovery_yaml_nesting(two, strlen(two), 1, &line, &col), 0);
	/* a syntax error is left to the loader */
	assert_int_equal(pd_discovery_yaml_nesting("[x", 2, 1, &line, &col), 0);
}

/* ---- manager: static -------------------------------------------------------------- */

static struct pd_labels *mk_labels(const char *k, const char *v)
{
	struct pd_labels *ls = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_labels_from_strings(&ls, &err, k, v, NULL), 0);
	return ls;
}

static void test_static(void **state)
{
	struct rec r;
	struct pd_discovery_manager *m = new_manager(&r, 1);
	const char *t1[] = {"a:1", "b:2"}, *t3[] = {"c:3"};
	struct pd_labels *l1 = mk_labels("env", "prod");
	struct pd_discovery_static_config sc[] = {
	    {.targets = t1, .ntargets = 2, .labels = l1},
	    {.targets = NULL, .ntargets = 0},
	    {.targets = t3, .ntargets = 1},
	};
	struct pd_discovery_pool_config pools[] = {
	    {.name = "s", .static_configs = sc, .nstatic = 3},
	    {.name = "empty"},
	};
	struct pd_discovery_stats st;
	set_pools(m, pools, 2);
	/* the group without targets is left out, as Prometheus's manager leaves it out */
	rec_wait(&r, "s", "0 {env=\"prod\"} [a:1,b:2]\n2 {} [c:3]\n");
	rec_wait(&r, "empty", ""); /* a pool without discovery still hears, once */

	struct pd_discovery_provider_status *s;
	size_t n;
	struct pd_err err = {0};
	assert_int_equal(pd_discovery_manager_status(m, "s", &s, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].name, "static/0");
	assert_null(s[0].last_error);
	assert_int_equal(s[0].ngroups, 3);
	assert_int_equal(s[0].ntargets, 3);
	assert_true(s[0].last_refresh_ms > 0);
	assert_int_equal(s[0].last_success_ms, s[0].last_refresh_ms);
	pd_discovery_provider_status_free(s, n);
	assert_int_equal(pd_discovery_manager_status(m, "empty", &s, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(s);
	assert_int_equal(pd_discovery_manager_status(m, "nope", &s, &n, &err), PD_ENOTFOUND);
	assert_string_equal(err.msg, "no scrape pool \"nope\"");

	pd_discovery_manager_stats(m, &st);
	assert_int_equal(st.providers_started, 1);
	assert_int_equal(st.providers, 1);
	pd_discovery_manager_destroy(m);
	pd_labels_destroy(l1);
	assert_int_equal(rec_calls(&r, "s"), 1);
	rec_fini(&r);
}

static void test_validation(void **state)
{
	struct rec r;
	struct pd_discovery_manager *m = new_manager(&r, 1);
	struct pd_err err = {0};
	const char *bad[] = {"/etc/targets.txt"}, *bad2[] = {"/etc/*/x.json"}, *good[] = {"x.yml"};
	struct pd_discovery_file_config fc[] = {{.files = good, .nfiles = 1},
	                                        {.files = bad, .nfiles = 1}};
	struct pd_discovery_file_config fc2 = {.files = bad2, .nfiles = 1};
	struct pd_discovery_file_config fc3 = {.files = NULL, .nfiles = 0};
	struct pd_discovery_http_config hc = {.url = "ftp://x/"};
	struct pd_discovery_pool_config p = {.name = "j", .file_configs = fc, .nfile = 2};

	assert_int_equal(pd_discovery_manager_set_pools(m, &p, 1, &err), PD_EINVAL);
	assert_string_equal(err.msg, "job \"j\": file_sd_configs[1]: path name "
	                             "\"/etc/targets.txt\" is not valid for file discovery");
	p = (struct pd_discovery_pool_config){.name = "j", .file_configs = &fc2, .nfile = 1};
	assert_int_equal(pd_discovery_manager_set_pools(m, &p, 1, &err), PD_EINVAL);
	assert_string_equal(err.msg, "job \"j\": file_sd_configs[0]: path name "
	                             "\"/etc/*/x.json\" is not valid for file discovery");
	p = (struct pd_discovery_pool_config){.name = "j", .file_configs = &fc3, .nfile = 1};
	assert_int_equal(pd_discovery_manager_set_pools(m, &p, 1, &err), PD_EINVAL);
	assert_string_equal(err.msg, "job \"j\": file_sd_configs[0]: file service discovery config "
	                             "must contain at least one path name");
	p = (struct pd_discovery_pool_config){.name = "j", .http_configs = &hc, .nhttp = 1};
	assert_int_equal(pd_discovery_manager_set_pools(m, &p, 1, &err), PD_EINVAL);
	assert_string_equal(err.msg,
	                    "job \"j\": http_sd_configs[0]: URL scheme must be 'http' or 'https'");
	hc.url = "http:///sd";
	assert_int_equal(pd_discovery_manager_set_pools(m, &p, 1, &err), PD_EINVAL);
	assert_string_equal(err.msg, "job \"j\": http_sd_configs[0]: host is missing in URL");
	hc.url = "";
	assert_int_equal(pd_discovery_manager_set_pools(m, &p, 1, &err), PD_EINVAL);
	assert_string_equal(err.msg, "job \"j\": http_sd_configs[0]: URL is missing");
	struct pd_discovery_pool_config two[] = {{.name = "a"}, {.name = "a"}};
	assert_int_equal(pd_discovery_manager_set_pools(m, two, 2, &err), PD_EINVAL);
	assert_string_equal(err.msg, "found multiple scrape configs with job name \"a\"");

	/* nothing was applied */
	struct pd_discovery_stats st;
	pd_discovery_manager_stats(m, &st);
	assert_int_equal(st.providers_started, 0);
	pd_discovery_manager_destroy(m);
	assert_int_equal(r.total, 0);
	rec_fini(&r);
}

/* ---- manager: file_sd -------------------------------------------------------------- */

struct tmpdir {
	char path[256];
};

static void tmpdir_make(struct tmpdir *d)
{
	const char *base = getenv("TMPDIR");
	snprintf(d->path, sizeof(d->path), "%s/pd_discovery_XXXXXX", base ? base : "/tmp");
	assert_non_null(mkdtemp(d->path));
}

static void tmpdir_remove(struct tmpdir *d)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	assert_int_equal(system(cmd), 0);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;
	va_start(ap, f);
	int n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	assert_true(n >= 0);
	s = malloc((size_t)n + 1);
	assert_non_null(s);
	va_start(ap, f);
	vsnprintf(s, (size_t)n + 1, f, ap);
	va_end(ap);
	return s;
}

static void test_file_sd_inotify(void **state)
{
	struct tmpdir d;
	struct rec r;
	tmpdir_make(&d);
	char *a = fmt("%s/a.json", d.path), *b = fmt("%s/b.yml", d.path);
	char *pat1 = fmt("%s/*.json", d.path), *pat2 = fmt("%s/*.yml", d.path);
	const char *files[] = {pat1, pat2};
	struct pd_discovery_file_config fc = {
	    .files = files, .nfiles = 2, .refresh_interval_ms = 3600 * 1000};
	struct pd_discovery_pool_config p = {.name = "f", .file_configs = &fc, .nfile = 1};
	char *want, *want_a, *want_b;

	write_file(a, "[{\"targets\": [\"a:1\"], \"labels\": {\"job\": \"x\"}}]");
	struct pd_discovery_manager *m = new_manager(&r, 1);
	set_pools(m, &p, 1);
	want = fmt("%s:0 {__meta_filepath=\"%s\", job=\"x\"} [a:1]\n", a, a);
	rec_wait(&r, "f", want);
	free(want);
	wait_error(m, "f", NULL);

	/* an atomic rewrite (temporary file renamed into place) */
	write_file(a, "[{\"targets\": [\"a:2\"]}, {\"targets\": [\"a:3\", \"a:4\"]}]");
	want_a =
	    fmt("%s:0 {__meta_filepath=\"%s\"} [a:2]\n%s:1 {__meta_filepath=\"%s\"} [a:3,a:4]\n", a,
	        a, a, a);
	rec_wait(&r, "f", want_a);
	free(want_a);

	/* an in-place write */
	write_in_place(a, "[{\"targets\": [\"a:5\"]}]");
	want_a = fmt("%s:0 {__meta_filepath=\"%s\"} [a:5]\n", a, a);
	rec_wait(&r, "f", want_a);
	int calls = rec_calls(&r, "f");

	/* a broken file keeps its groups; the error is reported */
	write_in_place(a, "[{\"targets\": [\"a:6\"]},]");
	want = fmt("%s:1:23: invalid character ']' looking for beginning of value", a);
	wait_error(m, "f", want);
	free(want);
	char *last = rec_last(&r, "f");
	assert_string_equal(last, want_a);
	free(last);
	assert_int_equal(rec_calls(&r, "f"), calls);

	/* a new file matching the glob is picked up; the broken one still counts */
	write_file(b, "- targets: ['b:1']\n");
	want_b = fmt("%s:0 {__meta_filepath=\"%s\"} [b:1]\n", b, b);
	want = fmt("%s%s", want_a, want_b);
	rec_wait(&r, "f", want);
	free(want);
	struct pd_discovery_provider_status *s;
	size_t n;
	struct pd_err err = {0};
	assert_int_equal(pd_discovery_manager_status(m, "f", &s, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].name, "file/0");
	want = fmt("%s, %s", pat1, pat2);
	assert_string_equal(s[0].detail, want);
	free(want);
	assert_non_null(s[0].last_error);
	assert_int_equal(s[0].ngroups, 2);
	assert_int_equal(s[0].ntargets, 2);
	assert_true(s[0].last_success_ms > 0 && s[0].last_success_ms <= s[0].last_refresh_ms);
	pd_discovery_provider_status_free(s, n);

	/* files the patterns do not match are not read */
	char *other = fmt("%s/notes.txt", d.path);
	write_file(other, "hello");
	free(other);
	/* fixed again */
	write_file(a, "[{\"targets\": [\"a:7\"]}]");
	free(want_a);
	want_a = fmt("%s:0 {__meta_filepath=\"%s\"} [a:7]\n", a, a);
	want = fmt("%s%s", want_a, want_b);
	rec_wait(&r, "f", want);
	free(want);
	wait_error(m, "f", NULL);

	/* a deleted file's groups are gone */
	assert_int_equal(unlink(a), 0);
	rec_wait(&r, "f", want_b);
	assert_int_equal(unlink(b), 0);
	rec_wait(&r, "f", "");

	struct pd_discovery_stats st;
	pd_discovery_manager_stats(m, &st);
	assert_true(st.file_read_errors >= 1);
	pd_discovery_manager_destroy(m);
	rec_fini(&r);
	tmpdir_remove(&d);
	free(want_a);
	free(want_b);
	free(a);
	free(b);
	free(pat1);
	free(pat2);
}

static void test_file_sd_refresh_interval(void **state)
{
	struct tmpdir d;
	struct rec r;
	tmpdir_make(&d);
	char *a = fmt("%s/a.yaml", d.path);
	const char *files[] = {a};
	struct pd_discovery_file_config fc = {
	    .files = files, .nfiles = 1, .refresh_interval_ms = 50};
	struct pd_discovery_pool_config p = {.name = "f", .file_configs = &fc, .nfile = 1};
	char *want;

	/* without inotify, only the timer notices changes */
	struct pd_discovery_manager *m = new_manager(&r, 0);
	set_pools(m, &p, 1);
	rec_wait(&r, "f", ""); /* no file yet: no groups, and no error */
	wait_error(m, "f", NULL);
	write_file(a, "- targets: [x:1]\n");
	want = fmt("%s:0 {__meta_filepath=\"%s\"} [x:1]\n", a, a);
	rec_wait(&r, "f", want);
	free(want);
	write_in_place(a, "- targets: [x:2]\n  labels: {k: v}\n");
	want = fmt("%s:0 {__meta_filepath=\"%s\", k=\"v\"} [x:2]\n", a, a);
	rec_wait(&r, "f", want);
	free(want);
	pd_discovery_manager_destroy(m);
	rec_fini(&r);
	tmpdir_remove(&d);
	free(a);
}

static void test_file_sd_glob(void **state)
{
	struct tmpdir d;
	struct rec r;
	tmpdir_make(&d);
	char *h = fmt("%s/.h.json", d.path), *x = fmt("%s/x.JSON", d.path);
	char *pat = fmt("%s/*.json", d.path), *pat2 = fmt("%s/x.JSON", d.path);
	char *missing = fmt("%s/nope/*.yml", d.path);
	const char *files[] = {pat, pat2, missing, pat};
	struct pd_discovery_file_config fc = {.files = files, .nfiles = 4};
	struct pd_discovery_pool_config p = {.name = "g", .file_configs = &fc, .nfile = 1};

	write_file(h, "[{\"targets\":[\"h:1\"]}]");
	write_file(x, "[{\"targets\":[\"x:1\"]}]");
	struct pd_discovery_manager *m = new_manager(&r, 1);
	set_pools(m, &p, 1);
	/* a leading dot matches, as in Go; each file once; a missing directory is no error */
	char *want =
	    fmt("%s:0 {__meta_filepath=\"%s\"} [h:1]\n%s:0 {__meta_filepath=\"%s\"} [x:1]\n", h, h,
	        x, x);
	rec_wait(&r, "g", want);
	free(want);
	wait_error(m, "g", NULL);
	pd_discovery_manager_destroy(m);
	rec_fini(&r);
	tmpdir_remove(&d);
	free(h);
	free(x);
	free(pat);
	free(pat2);
	free(missing);
}

/* ---- a small HTTP server ------------------------------------------------------------ */

struct srv {
	int lfd, port;
	int wake[2];
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	/* what to answer; guarded by mu */
	int status;
	char reason[64];
	char ctype[128];
	char body[4096];
	int hang; /* accept, read, never answer */
	/* what happened */
	int accepted, answered;
	char last_req[4096];
};

static int wait_readable(int fd, int wake)
{
	struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake, .events = POLLIN}};
	if (poll(pf, 2, -1) < 0)
		return -1;
	return pf[1].revents ? -1 : 0;
}

static void *srv_run(void *arg)
{
	struct srv *s = arg;
	for (;;) {
		char req[4096], resp[8192];
		size_t len = 0;
		int c, hang;
		if (wait_readable(s->lfd, s->wake[0]))
			break;
		if ((c = accept(s->lfd, NULL, NULL)) < 0)
			continue;
		req[0] = '\0';
		while (len < sizeof(req) - 1 && !strstr(req, "\r\n\r\n")) {
			ssize_t n;
			if (wait_readable(c, s->wake[0]))
				break;
			if ((n = read(c, req + len, sizeof(req) - 1 - len)) <= 0)
				break;
			len += (size_t)n;
			req[len] = '\0';
		}
		pthread_mutex_lock(&s->mu);
		s->accepted++;
		memcpy(s->last_req, req, len + 1);
		hang = s->hang;
		int rl = snprintf(resp, sizeof(resp), "HTTP/1.1 %d %s\r\n", s->status, s->reason);
		if (s->ctype[0])
			rl += snprintf(resp + rl, sizeof(resp) - (size_t)rl, "Content-Type: %s\r\n",
			               s->ctype);
		rl += snprintf(resp + rl, sizeof(resp) - (size_t)rl,
		               "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		               strlen(s->body), s->body);
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->mu);
		if (hang) {
			wait_readable(s->wake[0], s->wake[0]);
			close(c);
			break;
		}
		ssize_t w = send(c, resp, (size_t)rl, MSG_NOSIGNAL); /* curl may have gone */
		(void)w;
		close(c);
		pthread_mutex_lock(&s->mu);
		s->answered++;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

static void srv_set(struct srv *s, int status, const char *reason, const char *ctype,
                    const char *body)
{
	pthread_mutex_lock(&s->mu);
	s->status = status;
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
	snprintf(s->ctype, sizeof(s->ctype), "%s", ctype);
	snprintf(s->body, sizeof(s->body), "%s", body);
	pthread_mutex_unlock(&s->mu);
}

static void srv_start(struct srv *s)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	srv_set(s, 200, "OK", "application/json", "[]");
	assert_true((s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0); /* port 0: free */
	assert_int_equal(listen(s->lfd, 16), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pipe(s->wake), 0);
	assert_int_equal(pthread_create(&s->th, NULL, srv_run, s), 0);
}

static void srv_stop(struct srv *s)
{
	assert_int_equal(write(s->wake[1], "x", 1), 1);
	pthread_join(s->th, NULL);
	close(s->lfd);
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cond);
}

/* Waits until the server has seen at least n requests; returns a copy of the last. */
static char *srv_wait_accepted(struct srv *s, int n)
{
	struct timespec dl;
	deadline_in(&dl, WAIT_MS);
	pthread_mutex_lock(&s->mu);
	while (s->accepted < n)
		if (pthread_cond_timedwait(&s->cond, &s->mu, &dl) == ETIMEDOUT) {
			pthread_mutex_unlock(&s->mu);
			fail_msg("the server saw %d requests, wanted %d", s->accepted, n);
		}
	char *r = strdup(s->last_req);
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* ---- manager: http_sd --------------------------------------------------------------- */

static void test_http_sd(void **state)
{
	struct srv s;
	struct rec r;
	struct tmpdir d;
	srv_start(&s);
	tmpdir_make(&d);
	char *url = fmt("http://127.0.0.1:%d/sd", s.port);
	char *cred = fmt("%s/token", d.path);
	write_file(cred, "  secret\n");
	struct pd_http_client_config cc = {.authorization_credentials_file = cred,
	                                   .follow_redirects = 1};
	/* refresh often, but let a request take longer than that on a loaded machine (by
	 * default it would time out after refresh_interval) */
	struct pd_discovery_http_config hc = {
	    .url = url, .refresh_interval_ms = 100, .timeout_ms = 5000, .client = &cc};
	struct pd_discovery_pool_config p = {.name = "h", .http_configs = &hc, .nhttp = 1};
	char *want1, *want2, *want, *req;

	srv_set(&s, 200, "OK", "application/json",
	        "[{\"targets\":[\"h:1\"],\"labels\":{\"a\":\"b\"}}]");
	struct pd_discovery_manager *m = new_manager(&r, 1);
	set_pools(m, &p, 1);
	want1 = fmt("%s:0 {__meta_url=\"%s\", a=\"b\"} [h:1]\n", url, url);
	rec_wait(&r, "h", want1);
	wait_error(m, "h", NULL);
	req = srv_wait_accepted(&s, 1);
	assert_non_null(strstr(req, "GET /sd HTTP/1.1\r\n"));
	assert_non_null(strstr(req, "\r\nAccept: application/json\r\n"));
	assert_non_null(strstr(req, "\r\nX-Prometheus-Refresh-Interval-Seconds: 0.1\r\n"));
	assert_non_null(strstr(req, "\r\nAuthorization: Bearer secret\r\n"));
	free(req);

	/* failures keep the last good groups, and say why */
	srv_set(&s, 500, "Internal Server Error", "application/json", "[]");
	wait_error(m, "h", "server returned HTTP status 500 Internal Server Error");
	srv_set(&s, 404, "", "application/json", "[]");
	wait_error(m, "h", "server returned HTTP status 404 Not Found");
	srv_set(&s, 200, "OK", "text/plain", "[]");
	wait_error(m, "h", "unsupported content type \"text/plain\"");
	srv_set(&s, 200, "OK", "", "[]");
	wait_error(m, "h", "unsupported content type \"\"");
	srv_set(&s, 200, "OK", "application/json; charset=utf-8", "[{\"targets\":[1]}]");
	want = fmt("%s:1:14: target must be a string, got number", url);
	wait_error(m, "h", want);
	free(want);
	srv_set(&s, 200, "OK", "application/json", "[{\"targets\":[\"h:1\"]}");
	want = fmt("%s:1:21: unexpected end of JSON input", url);
	wait_error(m, "h", want);
	free(want);
	char *last = rec_last(&r, "h");
	assert_string_equal(last, want1);
	free(last);
	assert_int_equal(rec_calls(&r, "h"), 1);

	struct pd_discovery_provider_status *st;
	size_t n;
	struct pd_err err = {0};
	assert_int_equal(pd_discovery_manager_status(m, "h", &st, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(st[0].name, "http/0");
	assert_string_equal(st[0].detail, url);
	assert_int_equal(st[0].ngroups, 1);
	assert_true(st[0].last_success_ms > 0 && st[0].last_success_ms <= st[0].last_refresh_ms);
	pd_discovery_provider_status_free(st, n);

	/* a good answer again; the charset form Prometheus accepts */
	srv_set(&s, 200, "OK", "Application/JSON;charset=\"utf-8\"",
	        "[{\"targets\":[\"h:2\",\"h:3\"]}, {\"targets\":[]}]");
	want2 = fmt("%s:0 {__meta_url=\"%s\"} [h:2,h:3]\n", url, url);
	rec_wait(&r, "h", want2);
	wait_error(m, "h", NULL);

	struct pd_discovery_stats stats;
	pd_discovery_manager_stats(m, &stats);
	assert_true(stats.http_failures >= 6);
	pd_discovery_manager_destroy(m);
	rec_fini(&r);
	srv_stop(&s);
	tmpdir_remove(&d);
	free(want1);
	free(want2);
	free(url);
	free(cred);
}

static void test_http_sd_client(void **state)
{
	struct srv s;
	struct rec r;
	struct tmpdir d;
	srv_start(&s);
	tmpdir_make(&d);
	char *url = fmt("http://127.0.0.1:%d/x", s.port);
	char *pass = fmt("%s/pass", d.path);
	write_file(pass, "p\n");
	struct pd_http_client_config cc = {
	    .basic_auth_username = "u", .basic_auth_password_file = pass, .follow_redirects = 1};
	struct pd_discovery_http_config hc = {
	    .url = url, .refresh_interval_ms = 1500, .client = &cc};
	struct pd_discovery_pool_config p = {.name = "b", .http_configs = &hc, .nhttp = 1};
	char *want, *req;

	srv_set(&s, 200, "OK", "application/json", "[{\"targets\":[\"x:1\"]}]");
	struct pd_discovery_manager *m = new_manager(&r, 1);
	set_pools(m, &p, 1);
	want = fmt("%s:0 {__meta_url=\"%s\"} [x:1]\n", url, url);
	rec_wait(&r, "b", want);
	free(want);
	req = srv_wait_accepted(&s, 1);
	assert_non_null(strstr(req, "\r\nAuthorization: Basic dTpw\r\n")); /* u:p */
	assert_non_null(strstr(req, "\r\nX-Prometheus-Refresh-Interval-Seconds: 1.5\r\n"));
	free(req);

	/* the body size limit */
	struct pd_discovery_http_config big = {.url = url, .body_size_limit = 16};
	p = (struct pd_discovery_pool_config){.name = "big", .http_configs = &big, .nhttp = 1};
	set_pools(m, &p, 1);
	want = fmt("Get \"%s\": body size limit of 16 bytes exceeded", url);
	wait_error(m, "big", want);
	free(want);
	rec_wait(&r, "big", ""); /* the first refresh failed: the pool has no groups */

	/* a missing credentials file */
	cc.basic_auth_password_file = "/nonexistent/pass";
	p = (struct pd_discovery_pool_config){.name = "b", .http_configs = &hc, .nhttp = 1};
	set_pools(m, &p, 1);
	wait_error(m, "b",
	           "unable to read basic auth password file /nonexistent/pass: /nonexistent/pass: "
	           "No such file or directory");

	/* nothing listening */
	int port = s.port;
	srv_stop(&s);
	free(url);
	url = fmt("http://127.0.0.1:%d/x", port);
	struct pd_discovery_http_config dead = {.url = url, .refresh_interval_ms = 100};
	p = (struct pd_discovery_pool_config){.name = "dead", .http_configs = &dead, .nhttp = 1};
	set_pools(m, &p, 1);
	rec_wait(&r, "dead", "");
	struct pd_discovery_provider_status *st;
	size_t n;
	struct pd_err err = {0};
	assert_int_equal(pd_discovery_manager_status(m, "dead", &st, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_non_null(st[0].last_error);
	want = fmt("Get \"%s\": ", url);
	assert_memory_equal(st[0].last_error, want, strlen(want));
	free(want);
	pd_discovery_provider_status_free(st, n);

	pd_discovery_manager_destroy(m);
	rec_fini(&r);
	tmpdir_remove(&d);
	free(url);
	free(pass);
}

/* destroy does not wait for a request that never ends */
static void test_destroy_prompt(void **state)
{
	struct srv s;
	struct rec r;
	srv_start(&s);
	pthread_mutex_lock(&s.mu);
	s.hang = 1;
	pthread_mutex_unlock(&s.mu);
	char *url = fmt("http://127.0.0.1:%d/slow", s.port);
	struct pd_discovery_http_config hc = {.url = url};
	struct pd_discovery_pool_config p = {.name = "slow", .http_configs = &hc, .nhttp = 1};
	struct pd_discovery_manager *m = new_manager(&r, 1);
	set_pools(m, &p, 1);
	free(srv_wait_accepted(&s, 1));
	int64_t t0 = mono_ms();
	pd_discovery_manager_destroy(m);
	assert_true(mono_ms() - t0 < 2000);
	assert_int_equal(r.total, 0); /* waiting for the first refresh: nothing was sent */
	rec_fini(&r);
	srv_stop(&s);
	free(url);
}

/* ---- manager: reloads ------------------------------------------------------------------ */

static void test_reload(void **state)
{
	struct tmpdir d;
	struct rec r;
	struct pd_discovery_stats st;
	struct pd_discovery_provider_status *ps;
	struct pd_err err = {0};
	size_t n;
	tmpdir_make(&d);
	char *x = fmt("%s/x.json", d.path);
	write_file(x, "[{\"targets\":[\"f:1\"]}]");

	const char *t1[] = {"s:1"}, *t2[] = {"s:2"};
	struct pd_discovery_static_config s1 = {.targets = t1, .ntargets = 1};
	struct pd_discovery_static_config s2 = {.targets = t2, .ntargets = 1};
	const char *files[] = {x};
	struct pd_discovery_file_config fc = {.files = files, .nfiles = 1};
	struct pd_discovery_pool_config v1[] = {
	    {.name = "A", .static_configs = &s1, .nstatic = 1},
	    {.name = "B", .file_configs = &fc, .nfile = 1},
	};
	struct pd_discovery_manager *m = new_manager(&r, 1);
	set_pools(m, v1, 2);
	char *want_b = fmt("%s:0 {__meta_filepath=\"%s\"} [f:1]\n", x, x);
	rec_wait(&r, "A", "0 {} [s:1]\n");
	rec_wait(&r, "B", want_b);
	free(want_b);
	pd_discovery_manager_stats(m, &st);
	assert_int_equal(st.providers_started, 2);

	/* equal configurations in new memory: the providers keep running (and every pool
	 * hears its unchanged set again); a new pool with the same static config shares
	 * its provider */
	char *x2 = strdup(x);
	const char *t1b[] = {"s:1"}, *files2[] = {x2};
	struct pd_discovery_static_config s1b = {.targets = t1b, .ntargets = 1};
	struct pd_discovery_file_config fc2 = {
	    .files = files2, .nfiles = 1, .refresh_interval_ms = 5 * 60 * 1000};
	struct pd_discovery_pool_config v2[] = {
	    {.name = "A", .static_configs = &s1b, .nstatic = 1},
	    {.name = "B", .file_configs = &fc2, .nfile = 1},
	    {.name = "C", .static_configs = &s1, .nstatic = 1},
	};
	int a_calls = rec_calls(&r, "A"), b_calls = rec_calls(&r, "B");
	set_pools(m, v2, 3);
	pd_discovery_manager_stats(m, &st);
	assert_int_equal(st.providers_started, 2);
	assert_int_equal(st.providers_stopped, 0);
	rec_wait(&r, "C", "0 {} [s:1]\n");
	rec_wait_calls(&r, "A", a_calls + 1);
	rec_wait_calls(&r, "B", b_calls + 1);
	rec_wait(&r, "A", "0 {} [s:1]\n");
	want_b = fmt("%s:0 {__meta_filepath=\"%s\"} [f:1]\n", x, x);
	rec_wait(&r, "B", want_b);
	free(want_b);
	assert_int_equal(pd_discovery_manager_status(m, "C", &ps, &n, &err), 0);
	assert_string_equal(ps[0].name, "static/0");
	pd_discovery_provider_status_free(ps, n);

	/* a changed static config: a new provider; the old one goes with pool C */
	struct pd_discovery_pool_config v3[] = {
	    {.name = "A", .static_configs = &s2, .nstatic = 1},
	    {.name = "B", .file_configs = &fc, .nfile = 1},
	};
	set_pools(m, v3, 2);
	pd_discovery_manager_stats(m, &st);
	assert_int_equal(st.providers_started, 3);
	assert_int_equal(st.providers_stopped, 1);
	assert_int_equal(st.providers, 2);
	rec_wait(&r, "A", "0 {} [s:2]\n");
	assert_int_equal(pd_discovery_manager_status(m, "C", &ps, &n, &err), PD_ENOTFOUND);
	assert_int_equal(pd_discovery_manager_status(m, "B", &ps, &n, &err), 0);
	assert_string_equal(ps[0].name, "file/1");
	pd_discovery_provider_status_free(ps, n);
	rec_wait_calls(&r, "B", b_calls + 2);

	/* the provider that was kept still watches its file */
	write_file(x, "[{\"targets\":[\"f:2\"]}]");
	want_b = fmt("%s:0 {__meta_filepath=\"%s\"} [f:2]\n", x, x);
	rec_wait(&r, "B", want_b);
	free(want_b);

	/* no pools at all */
	set_pools(m, NULL, 0);
	pd_discovery_manager_stats(m, &st);
	assert_int_equal(st.providers, 0);
	assert_int_equal(st.providers_stopped, 3);
	pd_discovery_manager_destroy(m);
	rec_fini(&r);
	tmpdir_remove(&d);
	free(x);
	free(x2);
}

/* The callback may reconfigure the manager. */
struct reentrant {
	struct rec r;
	struct pd_discovery_manager *m;
	int done;
};

static void on_groups_reload(void *ctx, const char *pool, const struct pd_target_group *g, size_t n)
{
	struct reentrant *re = ctx;
	static const char *t[] = {"z:1"};
	static struct pd_discovery_static_config sc = {.targets = t, .ntargets = 1};
	static struct pd_discovery_pool_config p = {
	    .name = "second", .static_configs = &sc, .nstatic = 1};
	on_groups(&re->r, pool, g, n);
	if (!strcmp(pool, "first")) {
		struct pd_err err = {0};
		struct pd_discovery_provider_status *s;
		size_t ns;
		assert_int_equal(pd_discovery_manager_status(re->m, "first", &s, &ns, &err), 0);
		pd_discovery_provider_status_free(s, ns);
		assert_int_equal(pd_discovery_manager_set_pools(re->m, &p, 1, &err), 0);
	}
}

static void test_reload_from_callback(void **state)
{
	struct reentrant re;
	struct pd_err err = {0};
	const char *t[] = {"y:1"};
	struct pd_discovery_static_config sc = {.targets = t, .ntargets = 1};
	struct pd_discovery_pool_config p = {.name = "first", .static_configs = &sc, .nstatic = 1};
	rec_init(&re.r);
	assert_int_equal(pd_discovery_manager_create(&re.m, on_groups_reload, &re, NULL, &err), 0);
	set_pools(re.m, &p, 1);
	rec_wait(&re.r, "second", "0 {} [z:1]\n");
	assert_int_equal(rec_calls(&re.r, "first"), 1);
	pd_discovery_manager_destroy(re.m);
	rec_fini(&re.r);
}

/* ---- dns_sd: groups from DNS responses ------------------------------------------- */

/* A DNS response built by hand: header, one question, answers (names written out
 * in full, no compression). */
struct msg {
	unsigned char b[2048];
	size_t n;
	unsigned ancount;
};

static void put8(struct msg *m, unsigned v)
{
	assert_true(m->n < sizeof(m->b));
	m->b[m->n++] = (unsigned char)v;
}

static void put16(struct msg *m, unsigned v)
{
	put8(m, v >> 8);
	put8(m, v & 0xff);
}

static void put_name(struct msg *m, const char *name)
{
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t len = dot ? (size_t)(dot - name) : strlen(name);
		put8(m, (unsigned)len);
		for (size_t i = 0; i < len; i++)
			put8(m, (unsigned char)name[i]);
		name += len + (dot ? 1 : 0);
	}
	put8(m, 0);
}

static void msg_start(struct msg *m, const char *qname, unsigned qtype)
{
	memset(m, 0, sizeof(*m));
	put16(m, 0x1234); /* id */
	put16(m, 0x8180); /* response, recursion desired and available, NOERROR */
	put16(m, 1);
	put16(m, 0); /* answers: patched by rr() */
	put16(m, 0);
	put16(m, 0);
	put_name(m, qname);
	put16(m, qtype);
	put16(m, 1);
}

/* Starts an answer record; returns where its rdlength goes (rr_end fills it). */
static size_t rr(struct msg *m, const char *name, unsigned type)
{
	size_t at;
	put_name(m, name);
	put16(m, type);
	put16(m, 1); /* IN */
	put16(m, 0); /* TTL */
	put16(m, 300);
	at = m->n;
	put16(m, 0);
	m->ancount++;
	m->b[6] = (unsigned char)(m->ancount >> 8);
	m->b[7] = (unsigned char)(m->ancount & 0xff);
	return at;
}

static void rr_end(struct msg *m, size_t at)
{
	size_t len = m->n - at - 2;
	m->b[at] = (unsigned char)(len >> 8);
	m->b[at + 1] = (unsigned char)(len & 0xff);
}

static void rr_srv(struct msg *m, const char *name, unsigned port, const char *target)
{
	size_t at = rr(m, name, 33);
	put16(m, 10);
	put16(m, 5);
	put16(m, port);
	put_name(m, target);
	rr_end(m, at);
}

static void rr_name(struct msg *m, const char *name, unsigned type, int mx, const char *target)
{
	size_t at = rr(m, name, type);
	if (mx)
		put16(m, 10);
	put_name(m, target);
	rr_end(m, at);
}

static void rr_addr(struct msg *m, const char *name, int v6, const char *ip)
{
	unsigned char a[16];
	size_t at = rr(m, name, v6 ? 28 : 1);
	assert_int_equal(inet_pton(v6 ? AF_INET6 : AF_INET, ip, a), 1);
	for (int i = 0; i < (v6 ? 16 : 4); i++)
		put8(m, a[i]);
	rr_end(m, at);
}

/* The group's targets, one label set a line, after "source\n". */
static char *dns_render(const char *name, enum pd_discovery_dns_type type, int64_t port,
                        const struct msg *m)
{
	struct pd_target_group g;
	struct pd_err err = {0};
	struct pd_buf b;
	int rc = pd_discovery_dns_group(name, type, port, m->b, m->n, &g, &err);
	if (rc)
		fail_msg("pd_discovery_dns_group: %s", err.msg);
	pd_buf_init(&b, 0);
	assert_int_equal(pd_labels_len(g.labels), 0);
	assert_int_equal(pd_buf_printf(&b, "%s\n", g.source), 0);
	for (size_t i = 0; i < g.ntargets; i++) {
		char *ls = pd_labels_string(g.targets[i]);
		assert_non_null(ls);
		assert_int_equal(pd_buf_printf(&b, "%s\n", ls), 0);
		free(ls);
	}
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	pd_discovery_dns_group_fini(&g);
	return (char *)pd_buf_steal(&b, NULL);
}

static void dns_expect(const char *name, enum pd_discovery_dns_type type, int64_t port,
                       const struct msg *m, const char *want)
{
	char *got = dns_render(name, type, port, m);
	assert_string_equal(got, want);
	free(got);
}

/* The label sets of Prometheus's discovery/dns tests, and what c-ares adds: CNAME
 * chains, records of other types, IPv4-mapped addresses, the root as a target. */
static void test_dns_groups(void **state)
{
	struct msg m;
	(void)state;

	msg_start(&m, "web.example.com", 1);
	rr_addr(&m, "web.example.com", 0, "192.0.2.2");
	dns_expect("web.example.com.", PD_DISCOVERY_DNS_A, 80, &m,
	           "web.example.com.\n"
	           "{__address__=\"192.0.2.2:80\", __meta_dns_name=\"web.example.com.\"}\n");

	msg_start(&m, "web.example.com", 28);
	rr_addr(&m, "web.example.com", 1, "::1");
	rr_addr(&m, "web.example.com", 1, "2001:db8::7");
	rr_addr(&m, "web.example.com", 1, "::ffff:192.0.2.3"); /* Go prints it as IPv4 */
	dns_expect("web.example.com.", PD_DISCOVERY_DNS_AAAA, 80, &m,
	           "web.example.com.\n"
	           "{__address__=\"[::1]:80\", __meta_dns_name=\"web.example.com.\"}\n"
	           "{__address__=\"[2001:db8::7]:80\", __meta_dns_name=\"web.example.com.\"}\n"
	           "{__address__=\"192.0.2.3:80\", __meta_dns_name=\"web.example.com.\"}\n");

	msg_start(&m, "_mysql._tcp.db.example.com", 33);
	rr_srv(&m, "_mysql._tcp.db.example.com", 3306, "db1.example.com");
	rr_srv(&m, "_mysql._tcp.db.example.com", 3307, "db2.example.com");
	dns_expect("_mysql._tcp.db.example.com.", PD_DISCOVERY_DNS_SRV, 0, &m,
	           "_mysql._tcp.db.example.com.\n"
	           "{__address__=\"db1.example.com:3306\", "
	           "__meta_dns_name=\"_mysql._tcp.db.example.com.\", "
	           "__meta_dns_srv_record_port=\"3306\", "
	           "__meta_dns_srv_record_target=\"db1.example.com.\"}\n"
	           "{__address__=\"db2.example.com:3307\", "
	           "__meta_dns_name=\"_mysql._tcp.db.example.com.\", "
	           "__meta_dns_srv_record_port=\"3307\", "
	           "__meta_dns_srv_record_target=\"db2.example.com.\"}\n");

	/* records of another type are left out; the port of the config is ignored */
	msg_start(&m, "_mysql._tcp.db.example.com", 33);
	rr_srv(&m, "_mysql._tcp.db.example.com", 3306, "db1.example.com");
	{
		size_t at = rr(&m, "_mysql._tcp.db.example.com", 16); /* TXT */
		put8(&m, 4);
		put8(&m, 't'), put8(&m, 'e'), put8(&m, 'x'), put8(&m, 't');
		rr_end(&m, at);
	}
	dns_expect("_mysql._tcp.db.example.com", PD_DISCOVERY_DNS_SRV, 9999, &m,
	           "_mysql._tcp.db.example.com\n"
	           "{__address__=\"db1.example.com:3306\", "
	           "__meta_dns_name=\"_mysql._tcp.db.example.com\", "
	           "__meta_dns_srv_record_port=\"3306\", "
	           "__meta_dns_srv_record_target=\"db1.example.com.\"}\n");

	/* no records (NOERROR without answers): a group without targets */
	msg_start(&m, "_mysql._tcp.db.example.com", 33);
	dns_expect("_mysql._tcp.db.example.com.", PD_DISCOVERY_DNS_SRV, 0, &m,
	           "_mysql._tcp.db.example.com.\n");

	/* the root as an SRV target ("no service here"): Prometheus's ":port" */
	msg_start(&m, "_x._tcp.example.com", 33);
	rr_srv(&m, "_x._tcp.example.com", 1, "");
	dns_expect("_x._tcp.example.com", PD_DISCOVERY_DNS_SRV, 0, &m,
	           "_x._tcp.example.com\n"
	           "{__address__=\":1\", __meta_dns_name=\"_x._tcp.example.com\", "
	           "__meta_dns_srv_record_port=\"1\", __meta_dns_srv_record_target=\".\"}\n");

	msg_start(&m, "example.com", 15);
	rr_name(&m, "example.com", 15, 1, "smtp1.example.com");
	rr_name(&m, "example.com", 15, 1, "smtp2.example.com");
	dns_expect("example.com.", PD_DISCOVERY_DNS_MX, 25, &m,
	           "example.com.\n"
	           "{__address__=\"smtp1.example.com:25\", __meta_dns_mx_record_target="
	           "\"smtp1.example.com.\", __meta_dns_name=\"example.com.\"}\n"
	           "{__address__=\"smtp2.example.com:25\", __meta_dns_mx_record_target="
	           "\"smtp2.example.com.\", __meta_dns_name=\"example.com.\"}\n");

	msg_start(&m, "example.com", 2);
	rr_name(&m, "example.com", 2, 0, "ns1.example.com");
	dns_expect("example.com", PD_DISCOVERY_DNS_NS, 53, &m,
	           "example.com\n"
	           "{__address__=\"ns1.example.com:53\", __meta_dns_name=\"example.com\", "
	           "__meta_dns_ns_record_target=\"ns1.example.com.\"}\n");

	/* a CNAME chain is followed to the addresses of its end */
	msg_start(&m, "www.example.com", 1);
	rr_name(&m, "www.example.com", 5, 0, "lb.example.com");
	rr_name(&m, "lb.example.com", 5, 0, "lb1.example.net");
	rr_addr(&m, "lb1.example.net", 0, "198.51.100.4");
	dns_expect("www.example.com", PD_DISCOVERY_DNS_A, 8080, &m,
	           "www.example.com\n"
	           "{__address__=\"198.51.100.4:8080\", __meta_dns_name=\"www.example.com\"}\n");

	/* a response c-ares cannot read is an error, and leaves nothing behind */
	{
		struct pd_target_group g;
		struct pd_err err = {0};
		msg_start(&m, "_x._tcp.example.com", 33);
		rr_srv(&m, "_x._tcp.example.com", 1, "a.example.com");
		m.n -= 5; /* cut inside the record */
		assert_int_equal(pd_discovery_dns_group("_x._tcp.example.com", PD_DISCOVERY_DNS_SRV,
		                                        0, m.b, m.n, &g, &err),
		                 PD_EINVAL);
		assert_non_null(strstr(err.msg, "cannot read the DNS response"));
		assert_null(g.source);
		assert_int_equal(g.ntargets, 0);
	}
}

static void on_groups_noop(void *ctx, const char *pool, const struct pd_target_group *g, size_t n)
{
	(void)ctx, (void)pool, (void)g, (void)n;
}

static void dns_bad(const struct pd_discovery_dns_config *c, const char *want)
{
	struct pd_err err = {0};
	assert_int_equal(pd_discovery_dns_validate(c, &err), PD_EINVAL);
	assert_string_equal(err.msg, want);
}

/* Prometheus's SDConfig.UnmarshalYAML checks and messages, and the server flag. */
static void test_dns_validation(void **state)
{
	const char *names[] = {"a.example.com", "b.example.com"};
	struct pd_err err = {0};
	(void)state;

	struct pd_discovery_dns_config c = {.names = names, .nnames = 2};
	assert_int_equal(pd_discovery_dns_validate(&c, &err), 0); /* SRV by default */
	c.type = "srv";
	assert_int_equal(pd_discovery_dns_validate(&c, &err), 0);
	c.type = "AAAA";
	c.port = 5300;
	assert_int_equal(pd_discovery_dns_validate(&c, &err), 0);
	c.type = "a";
	c.port = 0;
	dns_bad(&c, "a port is required in DNS-SD configs for all record types except SRV");
	c.type = "MX";
	dns_bad(&c, "a port is required in DNS-SD configs for all record types except SRV");
	c.type = "PTR";
	dns_bad(&c, "invalid DNS-SD records type PTR");
	c.nnames = 0;
	dns_bad(&c, "DNS-SD config must contain at least one SRV record name");

	assert_int_equal(pd_discovery_dns_type_parse("ns"), PD_DISCOVERY_DNS_NS);
	assert_int_equal(pd_discovery_dns_type_parse("Aaaa"), PD_DISCOVERY_DNS_AAAA);
	assert_int_equal(pd_discovery_dns_type_parse(""), -1);

	assert_int_equal(pd_discovery_dns_server_check("127.0.0.1:5353", &err), 0);
	assert_int_equal(pd_discovery_dns_server_check("127.0.0.1", &err), 0);
	assert_int_equal(pd_discovery_dns_server_check("[::1]:53", &err), 0);
	assert_int_equal(pd_discovery_dns_server_check("::1", &err), 0);
	const char *bad[] = {"localhost:53", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
	                     "[::1]x",       "",           "1.2.3:53",    "[127.0.0.1]:53"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[160];
		assert_int_equal(pd_discovery_dns_server_check(bad[i], &err), PD_EINVAL);
		snprintf(want, sizeof(want),
		         "DNS server \"%s\" is not an IP address with an optional port, as "
		         "127.0.0.1:53 or [::1]:5353",
		         bad[i]);
		assert_string_equal(err.msg, want);
	}
	/* and the manager refuses what the flag would */
	struct pd_discovery_manager *m = NULL;
	struct pd_discovery_options o = {.dns_server = "resolver:53"};
	assert_int_equal(pd_discovery_manager_create(&m, on_groups_noop, NULL, &o, &err),
	                 PD_EINVAL);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_good),
	    cmocka_unit_test(test_json_escapes),
	    cmocka_unit_test(test_json_errors),
	    cmocka_unit_test(test_yaml_good),
	    cmocka_unit_test(test_yaml_errors),
	    cmocka_unit_test(test_yaml_nesting),
	    cmocka_unit_test(test_static),
	    cmocka_unit_test(test_validation),
	    cmocka_unit_test(test_file_sd_inotify),
	    cmocka_unit_test(test_file_sd_refresh_interval),
	    cmocka_unit_test(test_file_sd_glob),
	    cmocka_unit_test(test_http_sd),
	    cmocka_unit_test(test_http_sd_client),
	    cmocka_unit_test(test_destroy_prompt),
	    cmocka_unit_test(test_reload),
	    cmocka_unit_test(test_reload_from_callback),
	    cmocka_unit_test(test_dns_groups),
	    cmocka_unit_test(test_dns_validation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
