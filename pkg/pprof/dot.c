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

/* Every string that reaches the DOT text from a profile or a caller (names, file
 * names, sample types, units) goes through put_text, so that it stays inside its
 * quoted string as plain text: `"` and `\` are escaped (Graphviz's own escapes
 * \N, \G, \l... cannot be spelled), newlines become the left-justified break
 * \l, other control bytes and bytes that start no valid UTF-8 sequence become
 * U+FFFD, and at most PD_PPROF_DOT_MAX_STRING bytes of it are kept ("..." marks
 * the cut). Nothing else is written from such strings: no attribute names, no
 * URL or href, no HTML-like <...> label. */
#define REPLACEMENT "\xef\xbf\xbd"

/* The length of the valid UTF-8 sequence at s[0..n), 0 when there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t k;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		k = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		k = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < k)
		return 0;
	unsigned cp = c & (0x7fu >> k);
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

/* Appends s[0..n) escaped as above. name: a node label, where "." and "::" also
 * break the line and Go's "[...]" becomes "[\u2026]". */
static int put_text(struct pd_buf *b, const char *str, size_t n, int name)
{
	const unsigned char *s = (const unsigned char *)str;
	int cut = n > PD_PPROF_DOT_MAX_STRING;
	if (cut) {
		n = PD_PPROF_DOT_MAX_STRING;
		while (n > 0 && (s[n] & 0xc0) == 0x80)
			n--; /* a character the cut would split goes whole */
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc;) {
		unsigned char c = s[i];
		if (name && n - i >= 5 && memcmp(s + i, "[...]", 5) == 0) {
			rc = pd_buf_append(b, "[\xe2\x80\xa6]", 5);
			i += 5;
		} else if (name && c == ':' && i + 1 < n && s[i + 1] == ':') {
			rc = pd_buf_append(b, "\\n", 2);
			i += 2;
		} else if (name && c == '.') {
			rc = pd_buf_append(b, "\\n", 2);
			i++;
		} else if (c == '\\' || c == '"') {
			char e[2] = {'\\', (char)c};
			rc = pd_buf_append(b, e, 2);
			i++;
		} else if (c == '\n') {
			rc = pd_buf_append(b, "\\l", 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			rc = pd_buf_append(b, REPLACEMENT, 3);
			i++;
		} else {
			size_t k = utf8_len(s + i, n - i);
			rc = k ? pd_buf_append(b, s + i, k) : pd_buf_append(b, REPLACEMENT, 3);
			i += k ? k : 1;
		}
	}
	return rc || !cut ? rc : pd_buf_append(b, "...", 3);
}

static int put_escaped(struct pd_buf *b, const char *s)
{
	return put_text(b, s, strlen(s), 0);
}

static int is_path_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* pprof's ShortenFunctionName for Go names: "example.com/x/v2/pkg.F" loses its
 * major version element and its package path, becoming "pkg.F". Works on bytes
 * (a name may hold NUL bytes, which are no path characters); *out points into tmp
 * or name, *out_len is its length. */
#define SHORTEN_MAX (2 * PD_PPROF_DOT_MAX_STRING)
static void shorten(const char *name, size_t len, char tmp[SHORTEN_MAX], const char **out,
		    size_t *out_len)
{
	size_t n = len < SHORTEN_MAX ? len : SHORTEN_MAX;
	memcpy(tmp, name, n);
	/* "/vN" followed by '.' or '/': the first one goes */
	for (size_t i = 0; i + 2 < n; i++) {
		if (tmp[i] != '/' || tmp[i + 1] != 'v' || tmp[i + 2] < '1' || tmp[i + 2] > '9')
			continue;
		size_t d = i + 2, e = d + 1;
		while (e < n && tmp[e] >= '0' && tmp[e] <= '9')
			e++;
		if ((e - d == 1 && tmp[d] == '1') || e == n || (tmp[e] != '.' && tmp[e] != '/'))
			continue;
		memmove(tmp + i, tmp + e, n - e);
		n -= e - i;
		break;
	}
	/* a leading run of "dir/" elements goes, when something follows it */
	size_t start = 0, run = 0;
	int have_last = 0;
	size_t last = 0;
	for (size_t c = 0; c < n; c++) {
		if (tmp[c] == '/') {
			if (run == 0)
				break;
			last = c;
			have_last = 1;
			run = 0;
		} else if (is_path_char(tmp[c])) {
			run++;
		} else {
			break;
		}
	}
	if (have_last && last + 1 < n)
		start = last + 1;
	*out = tmp + start;
	*out_len = n - start;
}

/* The node's label text: the shortened name with "::" and "." as line breaks
 * ("[...]" of Go type parameters kept as "[\u2026]"), then a break. */
static int put_name(struct pd_buf *b, const char *name, size_t len)
{
	char tmp[SHORTEN_MAX];
	const char *sh;
	size_t shl;
	shorten(name, len, tmp, &sh, &shl);
	int rc = put_text(b, sh, shl, 1);
	return rc ? rc : pd_buf_append(b, "\\n", 2);
}

/* A node's name and its length (which counts NUL bytes inside it). */
static int put_node_name(struct pd_buf *b, const struct pd_pprof_graph_node *n)
{
	return put_text(b, n->name, n->name_len ? n->name_len : strlen(n->name), 0);
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
	int rc = pd_buf_append(b, "digraph \"", 9);
	rc = rc ? rc : put_escaped(b, title && *title ? title : "unnamed");
	rc = rc ? rc : pd_buf_append(b, "\" {\nnode [style=filled fillcolor=\"#f8f8f8\"]\n", 44);
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
	rc = rc ? rc : pd_buf_append(b, "Showing nodes accounting for ", 29);
	rc = rc ? rc : put_escaped(b, v1);
	rc = rc ? rc : pd_buf_printf(b, ", %s of ", p1);
	rc = rc ? rc : put_escaped(b, v2);
	rc = rc ? rc : pd_buf_append(b, " total\\l", 8);
	if (!rc && g->total != 0) {
		if (g->dropped_nodes) {
			FMT(abs_sat((int64_t)((double)g->total * g->opts.nodefraction)), v1);
			rc = pd_buf_printf(b, "Dropped %zu node%s (cum <= ", g->dropped_nodes,
			                   g->dropped_nodes == 1 ? "" : "s");
			rc = rc ? rc : put_escaped(b, v1);
			rc = rc ? rc : pd_buf_append(b, ")\\l", 3);
		}
		if (!rc && g->dropped_edges) {
			FMT(abs_sat((int64_t)((double)g->total * g->opts.edgefraction)), v1);
			rc = pd_buf_printf(b, "Dropped %zu edge%s (freq <= ", g->dropped_edges,
			                   g->dropped_edges == 1 ? "" : "s");
			rc = rc ? rc : put_escaped(b, v1);
			rc = rc ? rc : pd_buf_append(b, ")\\l", 3);
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
		rc = rc ? rc : put_name(b, n->name, n->name_len ? n->name_len : strlen(n->name));
		FMT(n->flat, v1);
		if (!rc && n->flat != 0) {
			pct(n->flat, g->total, p1, sizeof(p1));
			rc = put_escaped(b, v1);
			rc = rc ? rc : pd_buf_printf(b, " (%s)", p1);
		} else if (!rc) {
			rc = pd_buf_append(b, "0", 1);
		}
		const char *cumv = v1;
		if (!rc && n->cum != n->flat) {
			FMT(n->cum, v2);
			pct(n->cum, g->total, p2, sizeof(p2));
			rc = pd_buf_printf(b, "%sof ", n->flat != 0 ? "\\n" : " ");
			rc = rc ? rc : put_escaped(b, v2);
			rc = rc ? rc : pd_buf_printf(b, " (%s)", p2);
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
		rc = rc ? rc : put_node_name(b, n);
		rc = rc ? rc : pd_buf_append(b, " (", 2);
		rc = rc ? rc : put_escaped(b, cumv);
		rc = rc ? rc : pd_buf_printf(b, ")\" color=\"%s\" fillcolor=\"%s\"]\n", c1, c2);
	}
	for (size_t i = 0; i < g->nedges && !rc; i++) {
		const struct pd_pprof_graph_edge *e = &g->edges[i];
		FMT(e->weight, v1);
		rc = pd_buf_printf(b, "N%u -> N%u [label=\" ", e->from + 1, e->to + 1);
		rc = rc ? rc : put_escaped(b, v1);
		rc = rc ? rc : pd_buf_printf(b, "%s\"", e->inlined ? "\\n (inline)" : "");
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
			rc = rc ? rc : put_node_name(b, &g->nodes[e->from]);
			rc = rc ? rc : pd_buf_append(b, e->residual ? " ... " : " -> ", e->residual ? 5 : 4);
			rc = rc ? rc : put_node_name(b, &g->nodes[e->to]);
			rc = rc ? rc : pd_buf_append(b, " (", 2);
			rc = rc ? rc : put_escaped(b, v1);
			rc = rc ? rc : pd_buf_append(b, ")\"", 2);
		}
		if (!rc && e->residual)
			rc = pd_buf_append(b, " style=\"dotted\"", 15);
		rc = rc ? rc : pd_buf_append(b, "]\n", 2);
	}
	rc = rc ? rc : pd_buf_append(b, "}\n", 2);
#undef FMT
	return rc;
}
