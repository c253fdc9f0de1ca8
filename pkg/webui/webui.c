/* pkg/webui/webui.c — serves the UI's files, embedded or from a directory, with
 * the client-side routes (/targets, /status) answered by index.html, into
 * which it writes where the UI lives: the route prefix as the page's
 * <base href> and the external URL as a meta tag. */
#include "profd/webui.h"

#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "assets.h"

#define WEBUI_MAX_FILE ((size_t)16 << 20)

struct pd_webui {
	char *dir;  /* NULL: embedded */
	char *root; /* dir with its symlinks resolved: what a served file must lie under */
	char *base; /* the <base href> value: the route prefix with a trailing slash */
	char *external_url; /* HTML-escaped; "" when not set */
	uint8_t *index;     /* the embedded index.html filled in (NULL: not built) */
	size_t index_len;
};

/* What index.html holds for the server to fill in: each mark is head + old
 * value + tail, and the value between head and tail is replaced. */
struct mark {
	const char *head, *old, *tail;
};
static const struct mark base_mark = {"<base href=\"", "/", "\">"};
static const struct mark url_mark = {"<meta name=\"profd-external-url\" content=\"", "", "\">"};

static const struct {
	const char *ext;
	const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
};

static const char *content_type(const char *path)
{
	const char *dot = strrchr(path, '.');
	if (dot && !strchr(dot, '/'))
		for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
			if (strcmp(dot, types[i].ext) == 0)
				return types[i].type;
	return "application/octet-stream";
}

/* The pages the UI's router knows (ROUTES in web/js/app.js; test_webui checks
 * that the two lists agree). These answer index.html with 200; any other page
 * name answers it with 404, so that a person sees the router's "Page not found"
 * and the navigation rather than a bare line of text. */
static const char *const ui_routes[] = {"/", "/targets", "/status", "/compare"};

const char *const *pd_webui_routes(size_t *n)
{
	*n = sizeof ui_routes / sizeof ui_routes[0];
	return ui_routes;
}

/* A path the client routes itself: one of ui_routes, trailing slashes aside
 * ("/targets/" is "/targets", as the router reads it). */
static int is_route(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	for (size_t i = 0; i < sizeof ui_routes / sizeof ui_routes[0]; i++)
		if (strlen(ui_routes[i]) == n && strncmp(path, ui_routes[i], n) == 0)
			return 1;
	return 0;
}

static int asset_cmp(const void *key, const void *elem)
{
	return strcmp((const char *)key, ((const struct pd_webui_asset *)elem)->path);
}

static const struct pd_webui_asset *embedded(const char *path)
{
	if (pd_webui_nassets == 0)
		return NULL;
	return bsearch(path, pd_webui_assets, pd_webui_nassets, sizeof pd_webui_assets[0],
	               asset_cmp);
}

size_t pd_webui_embedded_count(size_t *total_bytes)
{
	size_t t = 0;
	for (size_t i = 0; i < pd_webui_nassets; i++)
		t += pd_webui_assets[i].len;
	if (total_bytes)
		*total_bytes = t;
	return pd_webui_nassets;
}

int pd_webui_create(const char *dir, struct pd_webui **out, struct pd_err *err)
{
	*out = NULL;
	struct pd_webui *ui = calloc(1, sizeof *ui);
	if (!ui)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (dir) {
		char idx[PATH_MAX];
		struct stat st;
		if (strlen(dir) + sizeof "/index.html" > sizeof idx) {
			free(ui);
			return pd_err_set(err, PD_EINVAL, "web UI directory %s: path too long", dir);
		}
		snprintf(idx, sizeof idx, "%s/index.html", dir);
		errno = 0;
		if (stat(idx, &st) != 0 || !S_ISREG(st.st_mode)) {
			free(ui);
			return pd_err_set(err, PD_ENOTFOUND,
			                  "web UI directory %s: no index.html there (%s)", dir,
			                  errno ? strerror(errno) : "not a file");
		}
		ui->dir = strdup(dir);
		ui->root = realpath(dir, NULL);
		if (!ui->dir || !ui->root) {
			int rc = ui->dir ? pd_err_set(err, PD_EIO, "web UI directory %s: %s", dir,
			                              strerror(errno))
			                 : pd_err_set(err, PD_ENOMEM, "out of memory");
			pd_webui_destroy(ui);
			return rc;
		}
	} else if (!embedded("/index.html")) {
		free(ui);
		return pd_err_set(err, PD_ENOTFOUND, "this profd was built without the web UI");
	}
	*out = ui;
	return 0;
}

void pd_webui_destroy(struct pd_webui *ui)
{
	if (!ui)
		return;
	free(ui->dir);
	free(ui->root);
	free(ui->base);
	free(ui->external_url);
	free(ui->index);
	free(ui);
}

/* Where mark m starts in d[0..n), or NULL. */
static const uint8_t *find(const uint8_t *d, size_t n, const struct mark *m)
{
	size_t hl = strlen(m->head), ol = strlen(m->old), tl = strlen(m->tail);
	for (size_t i = 0; i + hl + ol + tl <= n; i++)
		if (memcmp(d + i, m->head, hl) == 0 && memcmp(d + i + hl, m->old, ol) == 0 &&
		    memcmp(d + i + hl + ol, m->tail, tl) == 0)
			return d + i;
	return NULL;
}

/* index.html with the base and the external URL written into its marks: a
 * malloc'd copy in *out, or NULL when there is nothing to change (no marks, or
 * no links set). */
static int fill_index(const struct pd_webui *ui, const uint8_t *d, size_t n, uint8_t **out,
                      size_t *out_len)
{
	*out = NULL;
	if (!ui->base)
		return 0;
	const uint8_t *b = find(d, n, &base_mark), *u = find(d, n, &url_mark);
	if (!b && !u)
		return 0;
	size_t bl = strlen(ui->base), ul = strlen(ui->external_url);
	uint8_t *o = malloc(n + bl + ul + 1);
	if (!o)
		return PD_ENOMEM;
	size_t k = 0, i = 0;
	while (i < n) {
		const struct mark *m = NULL;
		const char *val = NULL;
		if (b && d + i == b)
			m = &base_mark, val = ui->base;
		else if (u && d + i == u)
			m = &url_mark, val = ui->external_url;
		if (!m) {
			o[k++] = d[i++];
			continue;
		}
		size_t hl = strlen(m->head), vl = strlen(val), tl = strlen(m->tail);
		memcpy(o + k, m->head, hl);
		memcpy(o + k + hl, val, vl);
		memcpy(o + k + hl + vl, m->tail, tl);
		k += hl + vl + tl;
		i += hl + strlen(m->old) + tl;
	}
	*out = o;
	*out_len = k;
	return 0;
}

/* s with &, <, >, " and ' as HTML character references; malloc'd. */
static char *html_escape(const char *s)
{
	size_t n = 0;
	for (const char *p = s; *p; p++)
		n += strchr("&<>\"'", *p) ? 6 : 1;
	char *o = malloc(n + 1), *q = o;
	if (!o)
		return NULL;
	for (const char *p = s; *p; p++) {
		const char *e = *p == '&'    ? "&amp;"
		                : *p == '<'  ? "&lt;"
		                : *p == '>'  ? "&gt;"
		                : *p == '"'  ? "&#34;"
		                : *p == '\'' ? "&#39;"
		                             : NULL;
		if (e) {
			memcpy(q, e, strlen(e));
			q += strlen(e);
		} else {
			*q++ = *p;
		}
	}
	*q = '\0';
	return o;
}

int pd_webui_set_links(struct pd_webui *ui, const char *route_prefix, const char *external_url,
                       struct pd_err *err)
{
	const char *p = route_prefix && *route_prefix ? route_prefix : "/";
	size_t pl = strlen(p);
	while (pl && p[pl - 1] == '/')
		pl--;
	if (p[0] != '/')
		return pd_err_set(err, PD_EINVAL, "the route prefix %s must start with \"/\"", p);
	char *base = malloc(pl + 2);
	char *url = html_escape(external_url ? external_url : "");
	if (!base || !url) {
		free(base);
		free(url);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	/* the prefix holds no character that needs escaping (pd_api_route_prefix) */
	memcpy(base, p, pl);
	base[pl] = '/';
	base[pl + 1] = '\0';
	free(ui->base);
	free(ui->external_url);
	free(ui->index);
	ui->base = base;
	ui->external_url = url;
	ui->index = NULL;
	ui->index_len = 0;
	if (!ui->dir) {
		const struct pd_webui_asset *a = embedded("/index.html");
		if (a && fill_index(ui, a->data, a->len, &ui->index, &ui->index_len))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	return 0;
}

/* Only plain relative names: no "..", no "//", no hidden files, no backslashes. */
static int safe_path(const char *path)
{
	if (path[0] != '/' || strstr(path, "//") || strstr(path, "/.") || strchr(path, '\\'))
		return 0;
	return 1;
}

/* 1 when the resolved path real lies inside the resolved UI directory root. */
static int inside(const char *root, const char *real)
{
	size_t rl = strlen(root);
	if (rl == 1)
		return 1; /* root is "/" */
	return strncmp(real, root, rl) == 0 && real[rl] == '/';
}

/* A file under the directory; a symlink is followed only to a file that is under
 * it too, so that a link in the UI directory does not serve the rest of the disk. */
static int from_disk(const struct pd_webui *ui, const char *path, struct pd_api_ui_response *r)
{
	size_t dl = strlen(ui->dir), pl = strlen(path);
	char *full = malloc(dl + pl + 1);
	if (!full)
		return PD_ENOMEM;
	memcpy(full, ui->dir, dl);
	memcpy(full + dl, path, pl + 1);
	char *real = realpath(full, NULL);
	free(full);
	struct stat st;
	uint8_t *data = NULL;
	size_t len = 0;
	int ok = real && inside(ui->root, real) && stat(real, &st) == 0 && S_ISREG(st.st_mode) &&
	         pd_file_read(real, WEBUI_MAX_FILE, &data, &len, NULL) == 0;
	free(real);
	if (!ok)
		return PD_ENOTFOUND;
	r->data = data;
	r->len = len;
	r->must_free = 1;
	return 0;
}

int pd_webui_serve(void *ctx, const char *method, const char *path,
                   struct pd_api_ui_response *r)
{
	const struct pd_webui *ui = ctx;
	(void)method;
	if (!safe_path(path))
		return PD_ENOTFOUND;
	/* test sources and notes stay out of what is served from disk too */
	if (strncmp(path, "/test/", 6) == 0 || strcmp(path, "/README.md") == 0)
		return PD_ENOTFOUND;
	const char *file = path;
	if (strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0)
		file = "/index.html";
	/* a path that is neither a file nor a page: a page name (no dot in its last
	 * segment) gets the UI with status 404, whose router says "Page not found" with
	 * links to the pages; a missing file (a name with a dot) stays a bare 404 */
	int page = is_route(path), unknown_page = !page && !strchr(strrchr(path, '/'), '.');
	int rc;
	if (ui->dir) {
		rc = from_disk(ui, file, r);
		if (rc != 0 && (page || unknown_page)) {
			file = "/index.html";
			rc = from_disk(ui, file, r);
		} else {
			unknown_page = 0;
		}
	} else {
		const struct pd_webui_asset *a = embedded(file);
		if (!a && (page || unknown_page))
			a = embedded(file = "/index.html");
		else
			unknown_page = 0;
		rc = a ? 0 : PD_ENOTFOUND;
		if (a && ui->index && strcmp(file, "/index.html") == 0) {
			r->data = ui->index;
			r->len = ui->index_len;
		} else if (a) {
			r->data = a->data;
			r->len = a->len;
		}
	}
	if (rc != 0)
		return rc;
	if (ui->dir && strcmp(file, "/index.html") == 0) {
		uint8_t *filled;
		size_t fl;
		if (fill_index(ui, r->data, r->len, &filled, &fl)) {
			free((void *)r->data);
			return PD_ENOMEM;
		}
		if (filled) {
			free((void *)r->data);
			r->data = filled;
			r->len = fl;
		}
	}
	r->status = unknown_page ? 404 : 200;
	r->content_type = content_type(file);
	/* revalidate each time: the files change with the binary (or on disk) */
	r->cache_control = "no-cache";
	return 0;
}
