/* dot_check.h: parses DOT text that pd_pprof_graph_dot wrote back with Graphviz's
 * own parser (cgraph's agmemread) and checks that it is the graph that was meant
 * and nothing more: it parses, it has the expected nodes (the legend and N1..Nn)
 * and edges and one subgraph, only the attributes the writer uses, and no
 * HTML-like label. Shared by the unit test and the fuzz target; header only. */
#ifndef PD_TEST_DOT_CHECK_H
#define PD_TEST_DOT_CHECK_H

#include <stdio.h>
#include <string.h>

#include <graphviz/cgraph.h>

static char dot_check_msgs[1024];

/* cgraph's messages, kept for the failure report instead of printed. */
static int dot_check_errf(char *msg)
{
	size_t n = strlen(dot_check_msgs);
	snprintf(dot_check_msgs + n, sizeof(dot_check_msgs) - n, "%s", msg);
	return 0;
}

static int dot_check_allowed(int kind, const char *name)
{
	static const char *const graph[] = {NULL};
	static const char *const node[] = {"style",   "fillcolor", "shape", "fontsize", "label",
	                                   "tooltip", "id",        "color", NULL};
	static const char *const edge[] = {"label",   "weight",       "penwidth", "color",
	                                   "tooltip", "labeltooltip", "style",    NULL};
	const char *const *l = kind == AGRAPH ? graph : kind == AGNODE ? node : edge;
	for (; *l; l++)
		if (strcmp(*l, name) == 0)
			return 1;
	return 0;
}

/* 0 when dot (NUL-terminated) is a well-formed call graph of nnodes nodes and
 * nedges edges, as above; otherwise -1 with why filled. */
static int dot_check(const char *dot, size_t nnodes, size_t nedges, char *why, size_t size)
{
	dot_check_msgs[0] = '\0';
	agseterrf(dot_check_errf);
	agseterr(AGWARN);
	Agraph_t *g = agmemread(dot);
	int rc = -1;
	if (!g) {
		snprintf(why, size, "agmemread failed: %s", dot_check_msgs);
		return -1;
	}
	if (dot_check_msgs[0]) {
		snprintf(why, size, "Graphviz complained: %s", dot_check_msgs);
		goto out;
	}
	static const int kinds[] = {AGRAPH, AGNODE, AGEDGE};
	for (int k = 0; k < 3; k++)
		for (Agsym_t *s = agnxtattr(g, kinds[k], NULL); s; s = agnxtattr(g, kinds[k], s))
			if (!dot_check_allowed(kinds[k], s->name)) {
				snprintf(why, size, "unexpected attribute %s (kind %d)", s->name,
				         kinds[k]);
				goto out;
			}
	if ((size_t)agnnodes(g) != nnodes + 1 || (size_t)agnedges(g) != nedges) {
		snprintf(why, size, "%d nodes and %d edges, not %zu and %zu", agnnodes(g),
		         agnedges(g), nnodes + 1, nedges);
		goto out;
	}
	int nsub = 0;
	for (Agraph_t *s = agfstsubg(g); s; s = agnxtsubg(s))
		nsub++;
	if (nsub != 1) {
		snprintf(why, size, "%d subgraphs", nsub);
		goto out;
	}
	size_t legend = 0;
	for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
		const char *name = agnameof(n);
		char want[32];
		int ok = 0;
		for (size_t i = 1; i <= nnodes && !ok; i++) {
			snprintf(want, sizeof(want), "N%zu", i);
			ok = strcmp(name, want) == 0;
		}
		if (!ok)
			legend++;
		for (Agsym_t *s = agnxtattr(g, AGNODE, NULL); s; s = agnxtattr(g, AGNODE, s)) {
			const char *v = agxget(n, s);
			if (v && aghtmlstr((char *)v)) {
				snprintf(why, size, "node %s has an HTML-like %s", name, s->name);
				goto out;
			}
		}
		for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e))
			for (Agsym_t *s = agnxtattr(g, AGEDGE, NULL); s;
			     s = agnxtattr(g, AGEDGE, s)) {
				const char *v = agxget(e, s);
				if (v && aghtmlstr((char *)v)) {
					snprintf(why, size, "an edge has an HTML-like %s", s->name);
					goto out;
				}
			}
	}
	if (legend != 1) {
		snprintf(why, size, "%zu nodes besides N1..N%zu", legend, nnodes);
		goto out;
	}
	rc = 0;
out:
	agclose(g);
	return rc;
}

#endif
