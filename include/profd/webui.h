/* profd/webui.h — the web UI's files, served through the API's UI hook.
 *
 * The files of web/ are embedded into the binary at build time (the generated
 * table of pkg/webui/assets.h); for development a directory may be served from
 * disk instead, so a change shows on reload. The pages of the UI's client-side
 * router (/, /targets, /status: pd_webui_routes) answer index.html; any other
 * path that names no file is left to the server's 404. */
#ifndef PROFD_WEBUI_H
#define PROFD_WEBUI_H

#include <stddef.h>

#include "profd/api.h"
#include "profd/util.h"

struct pd_webui;

/* Creates a UI server. dir: a directory to serve from disk on every request
 * (copied; it must hold index.html; symlinks in it are followed only to files
 * inside it), or NULL for the embedded files. Fails with
 * PD_ENOTFOUND/PD_EIO and a message naming dir when it is unusable, or
 * PD_ENOTFOUND when NULL and the binary was built without a UI. *out is the
 * caller's, freed with pd_webui_destroy. */
int pd_webui_create(const char *dir, struct pd_webui **out, struct pd_err *err);

/* Frees ui; NULL does nothing. */
void pd_webui_destroy(struct pd_webui *ui);

/* Where the UI lives, written into every index.html served: route_prefix
 * ("/profd", as pd_api_route_prefix returns it; NULL or "/" for none) becomes the
 * page's <base href="/profd/">, which every link, asset and API call of the UI is
 * relative to, and external_url (pd_api_external_url's; may be NULL) the content
 * of <meta name="profd-external-url">, from which the UI builds absolute links it
 * shows. Call before serving (not concurrently with pd_webui_serve); both are
 * copied. Without this call index.html is served as it is (base "/"). */
int pd_webui_set_links(struct pd_webui *ui, const char *route_prefix, const char *external_url,
                       struct pd_err *err);

/* The pd_api_ui_fn to plug into pd_api_opts.ui with ctx = the pd_webui. Bodies
 * of embedded files are static; files read from disk are malloc'd and handed to
 * the server (must_free). A page of the UI (pd_webui_routes) is index.html with
 * status 200, any other page name (a last segment without a dot) index.html with
 * 404, a missing file PD_ENOTFOUND. Safe from several threads. */
int pd_webui_serve(void *ctx, const char *method, const char *path,
                   struct pd_api_ui_response *r);

/* The paths the UI's router shows a page for ("/", "/targets", …), *n of them;
 * static, never freed. A trailing slash after one of them is the same page. */
const char *const *pd_webui_routes(size_t *n);

/* How many files the binary embeds and their total size in bytes (for logs). */
size_t pd_webui_embedded_count(size_t *total_bytes);

#endif
