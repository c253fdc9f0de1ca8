/* pkg/webui/webui.c — serves the UI's files, embedded or from a directory, with
 * the client-side routes (/targets, /status, …) answered by index.html. */
#include "profd/webui.h"

#include <errno.h>
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
};

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

/* A path the client routes itself: its last segment has no dot. */
static int is_route(const char *path)
{
	const char *last = strrchr(path, '/');
	return !strchr(last ? last : path, '.');
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
	free(ui);
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
	int rc;
	if (ui->dir) {
		rc = from_disk(ui, file, r);
		if (rc != 0 && is_route(path)) {
			file = "/index.html";
			rc = from_disk(ui, file, r);
		}
	} else {
		const struct pd_webui_asset *a = embedded(file);
		if (!a && is_route(path))
			a = embedded(file = "/index.html");
		rc = a ? 0 : PD_ENOTFOUND;
		if (a) {
			r->data = a->data;
			r->len = a->len;
		}
	}
	if (rc != 0)
		return rc;
	r->status = 200;
	r->content_type = content_type(file);
	/* revalidate each time: the files change with the binary (or on disk) */
	r->cache_control = "no-cache";
	return 0;
}
