/* pkg/webui/assets.h — the table of embedded UI files that the build generates
 * from web/ (gen/webui_embed.c writes it as a C file). */
#ifndef PD_WEBUI_ASSETS_H
#define PD_WEBUI_ASSETS_H

#include <stddef.h>

struct pd_webui_asset {
	const char *path; /* "/index.html", "/js/app.js": the URL path */
	const unsigned char *data;
	size_t len;
};

/* Sorted by path (strcmp), for bsearch. */
extern const struct pd_webui_asset pd_webui_assets[];
extern const size_t pd_webui_nassets;

#endif
