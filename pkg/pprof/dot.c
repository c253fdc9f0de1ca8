/* dot.c: writes a call graph (callgraph.c) in Graphviz's DOT language the way
 * `go tool pprof -dot` does: a legend box, one filled box per function whose label
 * is the name split into lines at package and type separators followed by flat and
 * cum with their percentages, font size growing with flat and colour with cum, and
 * one edge per call labelled with its weight, thicker and redder as it weighs more,
 * dotted when residual. All values use one unit picked for the whole graph. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pprof_int.h"

/* Appends s with `\` and `"` escaped and newlines as DOT's left-justified breaks. */
static int put_escaped(struct pd_buf *b, const char *s)
{
	int rc = 0;
	for (; *s && !rc; s++) {
		if (*s == '\\')
			rc = pd_buf_append(b, "\\\\", 2);
		else if (*s == '"')
			rc = pd_buf_append(b, "\\\"", 2);
		else if (*s == '\n')
			rc = pd_buf_append(b, "\\l", 2);
		else
			rc = pd_buf_append(b, s, 1);
	}
	return rc;
}

static int is_path_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* pprof's ShortenFunctionName for Go names: "example.com/x/v2/pkg.F" loses its
 * major version element and its package path, becoming "pkg.F". */
static void shorten(const char *name, char *out, size_t size)
{
	char tmp[1024];
	snprintf(tmp, sizeof(tmp), "%s", name);
	/* "/vN" followed by '.' or '/': the first one goes */
	for (char *s = strstr(tmp, "/v"); s; s = strstr(s + 1, "/v")) {
		char *d = s + 2;
		if (*d < '1' || *d > '9')
			continue;
		char *e = d + 1;
		while (*e >= '0' && *e <= '9')
			e++;
		if ((e - d == 1 && *d == '1') || (*e != '.' && *e != '/'))
			continue;
		memmove(s, e, strlen(e) + 1);
		break;
	}
	/* a leading run of "dir/" elements goes, when something follows it */
	const char *s = tmp, *last = NULL;
	size_t run = 0;
	for (const char *c = tmp; *c; c++) {
		if (*c == '/') {
			if (run == 0)
				break;
			last = c;
			run = 0;
		} else if (is_path_char(*c)) {
			run++;
		} else {
			break;
		}
	}
	if (last && last[1])
		s = last + 1;
	snprintf(out, size, "%s", s);
}

/* The node's label text: the shortened name with "::" and "." as line breaks
 * ("[...]" of Go type parameters kept as "[…]"), then a break. */
static int put_name(struct pd_buf *b, const char *name)
{
	char sh[1024];
	shorten(name, sh, sizeof(sh));
	int rc = 0;
	for (const char *s = sh; *s && !rc; s++) {
		if (strncmp(s, "[...]", 5) == 0) {
			rc = pd_buf_append(b, "[\xe2\x80\xa6]", 5);
			s += 4;
		} else if (s[0] == ':' && s[1] == ':') {
			rc = pd_buf_append(b, "\\n", 2);
			s++;
		} else if (*s == '.') {
			rc = pd_buf_append(b, "\\n", 2);
		} else if (*s == '\\') {
			rc = pd_buf_append(b, "\\\\", 2);
		} else if (*s == '"') {
			rc = pd_buf_append(b, "\\\"", 2);
		} else if (*s == '\n') {
			rc = pd_buf_append(b, "\\l", 2);
		} else {
			rc = pd_buf_append(b, s, 1);
		}
	}
	return rc ? rc : pd_buf_append(b, "\\n", 2);
}

/* pprof's dotColor: grey near 0, red for positive and green for negative scores. */
static void dot_color(double score, int background, char *out, size_t size)
{
	double sat = background ? 0.1 : 1.0, val = background ? 0.93 : 0.7;
	score = fmax(-1.0, fmin(1.0, score));
	if (fabs(score) < 0.2)
		sat *= fabs(score) / 0.2;
	if (score > 0.0)
		score = pow(score, 0.3);
	if (score < 0.0)
		score = -pow(-score, 0.3);
	double r, g, bl;
	if (score < 0.0) {
		g = val;
		r = val * (1 + sat * score);
	} else {
		r = val;
		g = val * (1 - sat * score);
	}
	bl = val * (1 - sat);
	snprintf(out, size, "#%02x%02x%02x", (unsigned)(uint8_t)(r * 255.0),
	         (unsigned)(uint8_t)(g * 255.0), (unsigned)(uint8_t)(bl * 255.0));
}

static void pct(int64_t v, int64_t total, char *out, size_t size)
{
	char tmp[32];
	pd_pprof_format_percent(v, total, tmp, sizeof(tmp));
	const char *s = tmp;
	while (*s == ' ')
		s++;
	snprintf(out, size, "%s", s);
}

static int64_t abs_sat(int64_t v)
{
	return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
}

int pd_pprof_graph_dot(const struct pd_pprof_graph *g, const char *title,
                       const char *const *legend, size_t nlegend, struct pd_buf *b)
{
	char v1[64], v2[64], p1[32], p2[32], c1[16], c2[16];
	const char *unit = g->unit ? g->unit : "";
	/* pprof's unit: that of the smallest node value, against the report's total */
	int64_t minv = 0;
	for (size_t i = 0; i < g->nnodes; i++) {
		int64_t lo = abs_sat(g->nodes[i].flat);
		if (!lo)
			lo = abs_sat(g->nodes[i].cum);
		if (lo && (!minv || lo < minv))
			minv = lo;
	}
	const char *ou = g->nnodes ? pd_pprof_pick_unit(minv, g->total, unit) : unit;
#define FMT(v, o) pd_pprof_format_value_in((v), unit, ou, (o), sizeof(o))
	int rc = pd_buf_printf(b, "digraph \"%s\" {\nnode [style=filled fillcolor=\"#f8f8f8\"]\n",
	                       title && *title ? title : "unnamed");
	/* the legend: the caller's lines, then what was shown and dropped */
	FMT(g->shown, v1);
	pct(g->shown, g->total, p1, sizeof(p1));
	FMT(g->total, v2);
	const char *head = nlegend ? legend[0] : "Showing nodes";
	rc = rc ? rc : pd_buf_append(b, "subgraph cluster_L { \"", 22);
	rc = rc ? rc : put_escaped(b, head);
	rc = rc ? rc : pd_buf_append(b, "\" [shape=box fontsize=16 label=\"", 32);
	for (size_t i = 0; i < nlegend && !rc; i++) {
		rc = put_escaped(b, legend[i]);
		rc = rc ? rc : pd_buf_append(b, "\\l", 2);
	}
	rc = rc ? rc
	        : pd_buf_printf(b, "Showing nodes accounting for %s, %s of %s total\\l", v1, p1, v2);
	if (!rc && g->total != 0) {
		if (g->dropped_nodes) {
			FMT(abs_sat((int64_t)((double)g->total * g->opts.nodefraction)), v1);
			rc = pd_buf_printf(b, "Dropped %zu node%s (cum <= %s)\\l", g->dropped_nodes,
			                   g->dropped_nodes == 1 ? "" : "s", v1);
		}
		if (!rc && g->dropped_edges) {
			FMT(abs_sat((int64_t)((double)g->total * g->opts.edgefraction)), v1);
			rc = pd_buf_printf(b, "Dropped %zu edge%s (freq <= %s)\\l", g->dropped_edges,
			                   g->dropped_edges == 1 ? "" : "s", v1);
		}
		if (!rc && g->nnodes && g->nnodes < g->node_count)
			rc = pd_buf_printf(b, "Showing top %zu nodes out of %zu\\l", g->nnodes,
			                   g->node_count);
	}
	rc = rc ? rc : pd_buf_append(b, "\"", 1);
	if (!rc && title && *title) {
		rc = pd_buf_append(b, " tooltip=\"", 10);
		rc = rc ? rc : put_escaped(b, title);
		rc = rc ? rc : pd_buf_append(b, "\"", 1);
	}
	rc = rc ? rc : pd_buf_append(b, "] }\n", 4);

	double max_flat = g->nnodes ? (double)abs_sat(g->nodes[0].flat) : 0;
	for (size_t i = 0; i < g->nnodes; i++)
		if ((double)abs_sat(g->nodes[i].flat) > max_flat)
			max_flat = (double)abs_sat(g->nodes[i].flat);
	double atotal = (double)abs_sat(g->total);
	for (size_t i = 0; i < g->nnodes && !rc; i++) {
		const struct pd_pprof_graph_node *n = &g->nodes[i];
		rc = pd_buf_printf(b, "N%zu [label=\"", i + 1);
		rc = rc ? rc : put_name(b, n->name);
		FMT(n->flat, v1);
		if (!rc && n->flat != 0) {
			pct(n->flat, g->total, p1, sizeof(p1));
			rc = pd_buf_printf(b, "%s (%s)", v1, p1);
		} else if (!rc) {
			rc = pd_buf_append(b, "0", 1);
		}
		const char *cumv = v1;
		if (!rc && n->cum != n->flat) {
			FMT(n->cum, v2);
			pct(n->cum, g->total, p2, sizeof(p2));
			rc = pd_buf_printf(b, "%sof %s (%s)", n->flat != 0 ? "\\n" : " ", v2, p2);
			cumv = v2;
		}
		int font = 8;
		double af = (double)abs_sat(n->flat);
		if (max_flat != 0 && n->flat != 0 && af <= max_flat)
			font += (int)ceil(16.0 * sqrt(af / max_flat));
		double score = (double)n->cum / atotal;
		dot_color(score, 0, c1, sizeof(c1));
		dot_color(score, 1, c2, sizeof(c2));
		rc = rc ? rc
		        : pd_buf_printf(b, "\" id=\"node%zu\" fontsize=%d shape=box tooltip=\"", i + 1,
		                        font);
		rc = rc ? rc : put_escaped(b, n->name);
		rc = rc ? rc
		        : pd_buf_printf(b, " (%s)\" color=\"%s\" fillcolor=\"%s\"]\n", cumv, c1, c2);
	}
	for (size_t i = 0; i < g->nedges && !rc; i++) {
		const struct pd_pprof_graph_edge *e = &g->edges[i];
		FMT(e->weight, v1);
		rc = pd_buf_printf(b, "N%u -> N%u [label=\" %s%s\"", e->from + 1, e->to + 1, v1,
		                   e->inlined ? "\\n (inline)" : "");
		if (!rc && g->total != 0) {
			int64_t aw = abs_sat(e->weight);
			/* pprof multiplies before dividing, in int64 */
			int64_t w100 = (int64_t)((uint64_t)aw * 100u) / abs_sat(g->total);
			int64_t w5 = (int64_t)((uint64_t)aw * 5u) / abs_sat(g->total);
			int64_t weight = 1 + (abs_sat(w100) < 100 ? abs_sat(w100) : 100);
			int64_t width = 1 + (abs_sat(w5) < 5 ? abs_sat(w5) : 5);
			if (weight > 1)
				rc = pd_buf_printf(b, " weight=%lld", (long long)weight);
			if (!rc && width > 1)
				rc = pd_buf_printf(b, " penwidth=%lld", (long long)width);
			dot_color((double)e->weight / atotal, 0, c1, sizeof(c1));
			rc = rc ? rc : pd_buf_printf(b, " color=\"%s\"", c1);
		}
		for (int t = 0; t < 2 && !rc; t++) {
			rc = pd_buf_append(b, t ? " labeltooltip=\"" : " tooltip=\"", t ? 15 : 10);
			rc = rc ? rc : put_escaped(b, g->nodes[e->from].name);
			rc = rc ? rc : pd_buf_append(b, e->residual ? " ... " : " -> ", e->residual ? 5 : 4);
			rc = rc ? rc : put_escaped(b, g->nodes[e->to].name);
			rc = rc ? rc : pd_buf_printf(b, " (%s)\"", v1);
		}
		if (!rc && e->residual)
			rc = pd_buf_append(b, " style=\"dotted\"", 15);
		rc = rc ? rc : pd_buf_append(b, "]\n", 2);
	}
	rc = rc ? rc : pd_buf_append(b, "}\n", 2);
#undef FMT
	return rc;
}
