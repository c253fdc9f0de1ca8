/* test_webui.c: unit tests of pkg/webui: the embedded files equal web/ on disk,
 * client routes answer index.html, content types, and paths that must not be
 * served (outside the directory, hidden files, test sources). */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/webui.h"

static char tmpdir[] = "/tmp/pd_webui_XXXXXX";

static void put(const char *rel, const char *body)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(body, f);
	fclose(f);
}

static int setup(void **state)
{
	if (!mkdtemp(tmpdir))
		return -1;
	char p[512];
	snprintf(p, sizeof p, "%s/js", tmpdir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/test", tmpdir);
	mkdir(p, 0755);
	put("index.html", "<!doctype html><title>x</title>");
	put("js/app.js", "export const x = 1;\n");
	put("test/a.test.mjs", "secret test\n");
	put(".hidden", "nope\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Serves path and returns the body as a string (caller frees), or NULL on 404. */
static char *get(struct pd_webui *ui, const char *path, const char **type)
{
	struct pd_api_ui_response r = {0};
	if (pd_webui_serve(ui, "GET", path, &r) != 0)
		return NULL;
	assert_int_equal(r.status, 200);
	assert_string_equal(r.cache_control, "no-cache");
	char *s = malloc(r.len + 1);
	assert_non_null(s);
	memcpy(s, r.data, r.len);
	s[r.len] = '\0';
	if (r.must_free)
		free((void *)r.data);
	if (type)
		*type = r.content_type;
	return s;
}

/* The status of path: 200 or 404 when the UI answers it (the page, a body of
 * index.html), -1 when it does not (PD_ENOTFOUND: the server's bare 404). */
static int status_of(struct pd_webui *ui, const char *path)
{
	struct pd_api_ui_response r = {0};
	if (pd_webui_serve(ui, "GET", path, &r) != 0)
		return -1;
	assert_string_equal(r.content_type, "text/html; charset=utf-8");
	assert_non_null(memmem(r.data, r.len, "<title>", 7));
	if (r.must_free)
		free((void *)r.data);
	return r.status;
}

static void test_dir(void **state)
{
	struct pd_webui *ui = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_webui_create(tmpdir, &ui, &err), 0);
	const char *type = NULL;
	char *s = get(ui, "/", &type);
	assert_string_equal(s, "<!doctype html><title>x</title>");
	assert_string_equal(type, "text/html; charset=utf-8");
	free(s);
	/* client-side routes get the page, files get themselves */
	s = get(ui, "/targets", &type);
	assert_string_equal(s, "<!doctype html><title>x</title>");
	free(s);
	s = get(ui, "/js/app.js", &type);
	assert_string_equal(s, "export const x = 1;\n");
	assert_string_equal(type, "text/javascript; charset=utf-8");
	free(s);
	/* a missing file is a 404, not the page */
	assert_null(get(ui, "/js/missing.js", NULL));
	/* the router's pages answer the page with 200; any other page name with 404
	 * (the router's "Page not found"), a missing file not at all */
	s = get(ui, "/targets/", NULL);
	assert_string_equal(s, "<!doctype html><title>x</title>");
	free(s);
	assert_int_equal(status_of(ui, "/targets"), 200);
	assert_int_equal(status_of(ui, "/federate"), 404);
	assert_int_equal(status_of(ui, "/ingest"), 404);
	assert_int_equal(status_of(ui, "/targets/x"), 404);
	assert_int_equal(status_of(ui, "/statusx"), 404);
	assert_int_equal(status_of(ui, "/a/b/c"), 404);
	assert_int_equal(status_of(ui, "/js/missing.js"), -1);
	assert_int_equal(status_of(ui, "/a/b.c"), -1);
	/* the side-by-side page is one of the router's pages */
	s = get(ui, "/compare", NULL);
	assert_string_equal(s, "<!doctype html><title>x</title>");
	free(s);
	assert_int_equal(status_of(ui, "/compare/x"), 404);
	/* nothing outside the directory, hidden or test files */
	assert_null(get(ui, "/../etc/passwd", NULL));
	assert_null(get(ui, "/js/../../etc/passwd", NULL));
	assert_null(get(ui, "/.hidden", NULL));
	assert_null(get(ui, "//etc/passwd", NULL));
	assert_null(get(ui, "/test/a.test.mjs", NULL));
	/* a change on disk shows at once */
	put("js/app.js", "export const x = 2;\n");
	s = get(ui, "/js/app.js", NULL);
	assert_string_equal(s, "export const x = 2;\n");
	free(s);
	pd_webui_destroy(ui);
	pd_webui_destroy(NULL);
}

/* --web.ui-dir follows a symlink only to a file inside the directory: a link to
 * elsewhere (an editor's, a build tool's, a mistake) does not serve the disk. */
static void test_dir_symlinks(void **state)
{
	char out[] = "/tmp/pd_webui_out_XXXXXX", p[512], t[512];
	assert_non_null(mkdtemp(out));
	put("js/app.js", "export const x = 1;\n");
	snprintf(p, sizeof p, "%s/secret.txt", out);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("secret\n", f);
	fclose(f);
	snprintf(t, sizeof t, "%s/leak.txt", tmpdir);
	assert_int_equal(symlink(p, t), 0);
	snprintf(t, sizeof t, "%s/outside", tmpdir);
	assert_int_equal(symlink(out, t), 0);
	snprintf(t, sizeof t, "%s/app.js", tmpdir);
	assert_int_equal(symlink("js/app.js", t), 0); /* stays inside */
	/* the directory named through a symlink of its own still works */
	char alias[600];
	snprintf(alias, sizeof alias, "%s.alias", tmpdir);
	assert_int_equal(symlink(tmpdir, alias), 0);

	struct pd_webui *ui = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_webui_create(alias, &ui, &err), 0);
	assert_null(get(ui, "/leak.txt", NULL));
	assert_null(get(ui, "/outside/secret.txt", NULL));
	char *s = get(ui, "/app.js", NULL);
	assert_non_null(s);
	assert_string_equal(s, "export const x = 1;\n");
	free(s);
	pd_webui_destroy(ui);

	unlink(alias);
	snprintf(t, sizeof t, "%s/leak.txt", tmpdir);
	unlink(t);
	snprintf(t, sizeof t, "%s/outside", tmpdir);
	unlink(t);
	snprintf(t, sizeof t, "%s/app.js", tmpdir);
	unlink(t);
	unlink(p);
	rmdir(out);
}

static void test_bad_dir(void **state)
{
	struct pd_webui *ui = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_webui_create("/nonexistent/ui", &ui, &err), PD_ENOTFOUND);
	assert_null(ui);
	assert_non_null(strstr(err.msg, "/nonexistent/ui"));
	assert_non_null(strstr(err.msg, "index.html"));
}

/* Every file of web/ (but tests and the README) is embedded byte for byte. */
static void test_embedded_equals_source(void **state)
{
	struct pd_webui *ui = NULL;
	struct pd_err err = {0};
	size_t total = 0, n = pd_webui_embedded_count(&total);
	char idx[512];
	snprintf(idx, sizeof idx, "%s/index.html", PD_WEB_DIR);
	if (access(idx, R_OK) != 0) {
		/* web/ has no page: the binary must say so rather than serve nothing */
		assert_int_equal(pd_webui_create(NULL, &ui, &err), PD_ENOTFOUND);
		return;
	}
	assert_true(n >= 2);
	assert_true(total > 0);
	assert_int_equal(pd_webui_create(NULL, &ui, &err), 0);
	const char *files[] = {"/index.html", "/js/api.js"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char p[512];
		snprintf(p, sizeof p, "%s%s", PD_WEB_DIR, files[i]);
		FILE *f = fopen(p, "rb");
		assert_non_null(f);
		char *disk = calloc(1, 1 << 20);
		assert_non_null(disk);
		size_t len = fread(disk, 1, (1 << 20) - 1, f);
		fclose(f);
		const char *type = NULL;
		char *s = get(ui, files[i], &type);
		assert_non_null(s);
		assert_int_equal(strlen(s), len);
		assert_memory_equal(s, disk, len);
		free(s);
		free(disk);
	}
	char *s = get(ui, "/status", NULL);
	assert_non_null(s);
	assert_non_null(strstr(s, "<"));
	free(s);
	assert_null(get(ui, "/README.md", NULL));
	assert_null(get(ui, "/nope.css", NULL));
	pd_webui_destroy(ui);
}

/* The keys of ROUTES in web/js/app.js: "const ROUTES = {", then one
 * "  '/path': ..." line per page up to "};". */
static size_t app_routes(char out[][64], size_t max)
{
	char p[512];
	snprintf(p, sizeof p, "%s/js/app.js", PD_WEB_DIR);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	char line[1024];
	size_t n = 0;
	int in = 0;
	while (fgets(line, sizeof line, f)) {
		if (!in) {
			in = strncmp(line, "const ROUTES = {", 16) == 0;
			continue;
		}
		if (strncmp(line, "};", 2) == 0)
			break;
		char *q = strchr(line, '\'');
		char *e = q ? strchr(q + 1, '\'') : NULL;
		if (!q || !e || (size_t)(e - q - 1) >= 64)
			continue;
		assert_true(n < max);
		memcpy(out[n], q + 1, (size_t)(e - q - 1));
		out[n][e - q - 1] = '\0';
		n++;
	}
	fclose(f);
	assert_true(in);
	return n;
}

/* The server's list of UI pages is the router's: a page added to web/js/app.js
 * and not to pkg/webui (or the other way round) fails here. Every page answers
 * index.html, embedded and from web/ on disk. */
static void test_routes_match_app(void **state)
{
	char js[32][64];
	size_t njs = app_routes(js, 32), nc;
	const char *const *c = pd_webui_routes(&nc);
	assert_true(njs >= 3);
	assert_int_equal(njs, nc);
	for (size_t i = 0; i < njs; i++) {
		size_t k = 0;
		while (k < nc && strcmp(js[i], c[k]) != 0)
			k++;
		if (k == nc)
			fail_msg("web/js/app.js routes %s; pkg/webui/webui.c's ui_routes does not",
			         js[i]);
	}
	struct pd_webui *emb = NULL, *disk = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_webui_create(NULL, &emb, &err), 0);
	assert_int_equal(pd_webui_create(PD_WEB_DIR, &disk, &err), 0);
	for (size_t i = 0; i < nc; i++) {
		char *a = get(emb, c[i], NULL), *b = get(disk, c[i], NULL);
		assert_non_null(a);
		assert_non_null(b);
		assert_non_null(strstr(a, "<base href="));
		free(a);
		free(b);
	}
	assert_int_equal(status_of(emb, "/federate"), 404);
	assert_int_equal(status_of(disk, "/federate"), 404);
	assert_int_equal(status_of(emb, "/nope.png"), -1);
	pd_webui_destroy(emb);
	pd_webui_destroy(disk);
}

/* pd_webui_set_links writes the route prefix into <base href> and the external URL
 * (escaped) into the meta tag of every index.html served, embedded or from disk,
 * and leaves the other files and a page without the marks alone. */
static void test_links(void **state)
{
	struct pd_webui *ui = NULL;
	struct pd_err err = {0};
	static const char page[] =
	    "<!doctype html><head><meta charset=\"utf-8\">\n<base href=\"/\">\n"
	    "<meta name=\"profd-external-url\" content=\"\">\n"
	    "<link rel=\"stylesheet\" href=\"css/style.css\"></head>";
	put("index.html", page);
	assert_int_equal(pd_webui_create(tmpdir, &ui, &err), 0);
	char *s = get(ui, "/", NULL);
	assert_string_equal(s, page); /* no links set: as it is */
	free(s);
	assert_int_equal(
	    pd_webui_set_links(ui, "/profd", "http://proxy.example/profd?a=\"<x>&'", &err), 0);
	static const char want[] =
	    "<!doctype html><head><meta charset=\"utf-8\">\n<base href=\"/profd/\">\n"
	    "<meta name=\"profd-external-url\" "
	    "content=\"http://proxy.example/profd?a=&#34;&lt;x&gt;&amp;&#39;\">\n"
	    "<link rel=\"stylesheet\" href=\"css/style.css\"></head>";
	s = get(ui, "/", NULL);
	assert_string_equal(s, want);
	free(s);
	s = get(ui, "/targets", NULL); /* a client route: the same page */
	assert_string_equal(s, want);
	free(s);
	s = get(ui, "/js/app.js", NULL); /* other files untouched */
	assert_string_equal(s, "export const x = 1;\n");
	free(s);
	/* "/" is no prefix; a trailing slash is not doubled */
	assert_int_equal(pd_webui_set_links(ui, "/", NULL, &err), 0);
	s = get(ui, "/", NULL);
	assert_non_null(strstr(s, "<base href=\"/\">"));
	assert_non_null(strstr(s, "content=\"\">"));
	free(s);
	assert_int_equal(pd_webui_set_links(ui, "/a/b/", "http://h/a/b", &err), 0);
	s = get(ui, "/", NULL);
	assert_non_null(strstr(s, "<base href=\"/a/b/\">"));
	free(s);
	assert_int_equal(pd_webui_set_links(ui, "profd", NULL, &err), PD_EINVAL);
	/* a page without the marks is served as it is */
	put("index.html", "<!doctype html><title>x</title>");
	s = get(ui, "/", NULL);
	assert_string_equal(s, "<!doctype html><title>x</title>");
	free(s);
	pd_webui_destroy(ui);

	/* the embedded page has both marks */
	assert_int_equal(pd_webui_create(NULL, &ui, &err), 0);
	assert_int_equal(pd_webui_set_links(ui, "/profd", "http://proxy.example/profd", &err), 0);
	s = get(ui, "/status", NULL);
	assert_non_null(strstr(s, "<base href=\"/profd/\">"));
	assert_non_null(
	    strstr(s, "<meta name=\"profd-external-url\" content=\"http://proxy.example/profd\">"));
	free(s);
	pd_webui_destroy(ui);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dir),     cmocka_unit_test(test_dir_symlinks),
	    cmocka_unit_test(test_bad_dir), cmocka_unit_test(test_embedded_equals_source),
	    cmocka_unit_test(test_links),   cmocka_unit_test(test_routes_match_app),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
