/* callgraph.c: /api/v1/query's report=dot and report=svg. The profile's call graph
 * (pd_pprof_graph, the nodes and edges of `go tool pprof -dot` after the same cuts)
 * is written as DOT; for svg it is laid out and drawn by Graphviz's C library, with
 * its dot layout and its core SVG renderer linked in (no plugin is looked up at
 * run time, and text is measured by Graphviz's built-in font metrics, so the same
 * graph always gives the same picture). Graphviz keeps global state, so one layout
 * runs at a time; the size of the graph is bounded before layout starts. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <graphviz/gvc.h>
#include <graphviz/gvplugin.h>

#include "api_int.h"
#include "profd/pprof.h"

/* Most edges a graph laid out for report=svg may have (nodecount bounds the nodes). */
#define MAX_SVG_EDGES 5000
/* Largest SVG accepted from Graphviz. */
#define MAX_SVG_BYTES ((size_t)64 << 20)

extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;

static pthread_mutex_t gv_mu = PTHREAD_MUTEX_INITIALIZER;
static GVC_t *gv_ctx; /* made on first use, kept for the life of the process */

static lt_symlist_t gv_builtins[] = {
    {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
    {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
    {0, 0},
};

#if defined(__SANITIZE_ADDRESS__)
/* Sanitizer builds (tests): Graphviz 2.42's layout keeps a few small allocations
 * (640 bytes on the first layout) that nothing frees, not even gvFreeContext; they
 * are not profd's, so LeakSanitizer is told to leave allocations made inside libgvc
 * alone. Every other leak is still reported. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libgvc.so\n";
}
#endif

/* Frees the Graphviz context when the process exits. */
static void gv_fini(void)
{
	pthread_mutex_lock(&gv_mu);
	if (gv_ctx)
		gvFreeContext(gv_ctx);
	gv_ctx = NULL;
	pthread_mutex_unlock(&gv_mu);
}

/* Lays dot out and renders it as SVG into *out (malloc'd by Graphviz, freed with
 * gvFreeRenderData). Called with gv_mu held. */
static int gv_render(const char *dot, char **out, unsigned *len)
{
	if (!gv_ctx) {
		gv_ctx = gvContextPlugins(gv_builtins, 0);
		if (gv_ctx)
			atexit(gv_fini);
	}
	if (!gv_ctx)
		return -1;
	Agraph_t *g = agmemread(dot);
	if (!g)
		return -1;
	int rc = gvLayout(gv_ctx, g, "dot");
	if (rc == 0) {
		rc = gvRenderData(gv_ctx, g, "svg", out, len);
		gvFreeLayout(gv_ctx, g);
	}
	agclose(g);
	return rc;
}

/* The title and legend lines pprof puts in its legend box. */
static void legend_of(const struct pd_pprof_profile *p, const struct pd_pprof_graph *g,
                      char *title, size_t tsize, char lines[2][512], const char **legend,
                      size_t *n)
{
	const char *bin = pd_pprof_main_binary(p);
	const char *slash = strrchr(bin, '/');
	snprintf(title, tsize, "%s", slash && slash[1] ? slash + 1 : bin);
	*n = 0;
	if (*title) {
		snprintf(lines[*n], sizeof(lines[0]), "File: %s", title);
		legend[*n] = lines[*n];
		(*n)++;
	}
	snprintf(lines[*n], sizeof(lines[0]), "Type: %s", g->sample_type);
	legend[*n] = lines[*n];
	(*n)++;
}

int api_callgraph_params(const struct api_req *r, struct api_resp *w, struct pd_pprof_graph_opts *o)
{
	uint64_t nodecount;
	memset(o, 0, sizeof(*o));
	if (api_uint_param(r, w, "nodecount", PD_PPROF_DEFAULT_NODECOUNT, &nodecount) ||
	    api_double_param(r, w, "nodefraction", PD_PPROF_DEFAULT_NODEFRACTION, 0, 1,
	                     &o->nodefraction) ||
	    api_double_param(r, w, "edgefraction", PD_PPROF_DEFAULT_EDGEFRACTION, 0, 1,
	                     &o->edgefraction))
		return -1;
	if (nodecount == 0 || nodecount > PD_PPROF_MAX_NODECOUNT) {
		api_bad_param(w, "nodecount", "must be between 1 and %d", PD_PPROF_MAX_NODECOUNT);
		return -1;
	}
	o->nodecount = (int)nodecount;
	return 0;
}

void api_report_callgraph(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                          const struct pd_pprof_profile *whole, int svg)
{
	struct pd_pprof_graph_opts o = {0};
	struct pd_pprof_graph *g = NULL;
	struct pd_err err = {0};
	struct pd_buf dot;
	int idx;
	pd_buf_init(&dot, 0);
	if (pd_pprof_sample_index(p, api_param(r, "sample_index"), &idx, &err)) {
		api_bad_param(w, "sample_index", "%s", err.msg);
		return;
	}
	if (api_callgraph_params(r, w, &o))
		return;
	o.total = pd_pprof_total(whole, idx);
	int rc = pd_pprof_graph(p, idx, &o, &g, &err);
	if (rc) {
		api_internal(w, "computing the call graph failed", rc, &err);
		return;
	}
	if (svg && g->nedges > MAX_SVG_EDGES) {
		api_bad_param(w, "edgefraction",
		              "the graph has %zu edges, more than the %d report=svg lays out: "
		              "raise edgefraction or lower nodecount",
		              g->nedges, MAX_SVG_EDGES);
		goto out;
	}
	char title[256], lines[2][512];
	const char *legend[2];
	size_t nl;
	legend_of(p, g, title, sizeof(title), lines, legend, &nl);
	if (pd_pprof_graph_dot(g, title, legend, nl, &dot) || pd_buf_append(&dot, "", 1)) {
		api_error(w, 500, "internal", "out of memory writing the call graph");
		goto out;
	}
	char *svgdata = NULL;
	unsigned len = 0;
	if (svg) {
		pthread_mutex_lock(&gv_mu);
		rc = gv_render((const char *)dot.data, &svgdata, &len);
		pthread_mutex_unlock(&gv_mu);
		if (rc || !svgdata || len > MAX_SVG_BYTES) {
			if (svgdata)
				gvFreeRenderData(svgdata);
			api_error(w, 500, "internal", "laying out the call graph with Graphviz failed");
			goto out;
		}
	}
	/* not the envelope: the document itself */
	w->json = 0;
	w->status = 200;
	pd_buf_fini(&w->body);
	pd_buf_init(&w->body, 0);
	if (svg) {
		w->content_type = "image/svg+xml";
		w->berr = pd_buf_append(&w->body, svgdata, len);
		gvFreeRenderData(svgdata);
	} else {
		w->content_type = "text/vnd.graphviz; charset=utf-8";
		w->berr = pd_buf_append(&w->body, dot.data, dot.len - 1);
	}
out:
	pd_buf_fini(&dot);
	pd_pprof_graph_destroy(g);
}
