/* test_callgraph.c: the call graph's cuts (pd_pprof_graph) on small hand-made
 * profiles whose graphs can be worked out by hand: flat, cum and edge weights,
 * residual edges over dropped nodes, redundant residual edges removed, inline
 * edges, the edgefraction cut, and nodecount counting label tags as pprof does;
 * and the DOT writer's labels. go tool pprof -dot on real profiles is the golden
 * test's (tests/golden/callgraph_golden.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/pprof.h"
#include "profd/util.h"

#include "../support/dot_check.h"

#define P(f) PD_TESTDATA "/profiles/" f

/* Functions f1..fn are named names[0..n); location i (1..n) is function i alone;
 * location 100 is function `inl` inlined into function `outer`. */
struct spec {
	const char *const *names;
	size_t nnames;
	uint64_t inl, outer;
	const char *type, *unit; /* the sample type; NULL: "samples", "count" */
};

struct stack {
	uint64_t loc[8]; /* leaf first, 0 ends */
	int64_t value;
};

static struct pd_pprof_profile *make(const struct spec *sp, const struct stack *st, size_t ns)
{
	const char *strings[32] = {"", sp->type ? sp->type : "samples",
	                           sp->unit ? sp->unit : "count"};
	size_t lens[32];
	size_t nstr = 3;
	struct pd_pprof_pfunction fn[16];
	struct pd_pprof_plocation loc[17];
	struct pd_pprof_pline lines[18];
	struct pd_pprof_psample samples[16];
	int64_t values[16];
	struct pd_pprof_pvt type = {1, 2};
	for (size_t i = 0; i < sp->nnames; i++) {
		strings[nstr] = sp->names[i];
		fn[i] = (struct pd_pprof_pfunction){.id = i + 1, .name = (int64_t)nstr};
		lines[i] = (struct pd_pprof_pline){.function_id = i + 1};
		loc[i] = (struct pd_pprof_plocation){.id = i + 1, .line = &lines[i], .nline = 1};
		nstr++;
	}
	size_t nloc = sp->nnames;
	if (sp->inl) {
		lines[nloc] = (struct pd_pprof_pline){.function_id = sp->inl};
		lines[nloc + 1] = (struct pd_pprof_pline){.function_id = sp->outer};
		loc[nloc] = (struct pd_pprof_plocation){.id = 100, .line = &lines[nloc], .nline = 2};
		nloc++;
	}
	for (size_t i = 0; i < nstr; i++)
		lens[i] = strlen(strings[i]);
	for (size_t i = 0; i < ns; i++) {
		size_t n = 0;
		while (n < 8 && st[i].loc[n])
			n++;
		values[i] = st[i].value;
		samples[i] = (struct pd_pprof_psample){
		    .location_id = (uint64_t *)st[i].loc, .nlocation = n, .value = &values[i], .nvalue = 1};
	}
	struct pd_pprof_parts parts = {
	    .strings = strings, .string_len = lens, .nstrings = nstr,
	    .sample_type = &type, .nsample_type = 1,
	    .sample = samples, .nsample = ns,
	    .location = loc, .nlocation = nloc,
	    .function = fn, .nfunction = sp->nnames,
	};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	int rc = pd_pprof_parts_build(&parts, &p, &err);
	if (rc)
		fail_msg("building the profile: %s", err.msg);
	return p;
}

static const struct pd_pprof_graph_node *node(const struct pd_pprof_graph *g, const char *name)
{
	for (size_t i = 0; i < g->nnodes; i++)
		if (strcmp(g->nodes[i].name, name) == 0)
			return &g->nodes[i];
	return NULL;
}

static const struct pd_pprof_graph_edge *edge(const struct pd_pprof_graph *g, const char *from,
                                              const char *to)
{
	for (size_t i = 0; i < g->nedges; i++)
		if (strcmp(g->nodes[g->edges[i].from].name, from) == 0 &&
		    strcmp(g->nodes[g->edges[i].to].name, to) == 0)
			return &g->edges[i];
	return NULL;
}

static struct pd_pprof_graph *graph(struct pd_pprof_profile *p, int nodecount, double nf, double ef)
{
	struct pd_pprof_graph_opts o = {nodecount, nf, ef, 0};
	struct pd_pprof_graph *g = NULL;
	struct pd_err err = {0};
	if (pd_pprof_graph(p, 0, &o, &g, &err))
		fail_msg("pd_pprof_graph: %s", err.msg);
	return g;
}

static const char *const NAMES[] = {"main", "a", "b", "c", "d", "x"};
enum { MAIN = 1, A, B, C, D, X };

static void test_weights(void **state)
{
	(void)state;
	struct spec sp = {NAMES, 6, 0, 0, NULL, NULL};
	struct stack st[] = {
	    {{C, B, A, MAIN}, 100},
	    {{D, A, MAIN}, 50},
	    {{B, MAIN}, 2},
	    {{B, A, B, MAIN}, 7}, /* recursion: cum and edges counted once per sample */
	};
	struct pd_pprof_profile *p = make(&sp, st, 4);
	struct pd_pprof_graph *g = graph(p, 0, 0, 0);
	assert_int_equal(g->nnodes, 5);
	assert_int_equal(g->total, 159);
	assert_int_equal(node(g, "main")->cum, 159);
	assert_int_equal(node(g, "main")->flat, 0);
	assert_int_equal(node(g, "a")->cum, 157);
	assert_int_equal(node(g, "b")->cum, 109);
	assert_int_equal(node(g, "b")->flat, 9);
	assert_int_equal(node(g, "c")->flat, 100);
	assert_int_equal(edge(g, "main", "a")->weight, 150);
	assert_int_equal(edge(g, "main", "b")->weight, 9);
	assert_int_equal(edge(g, "a", "b")->weight, 107);
	assert_int_equal(edge(g, "b", "a")->weight, 7);
	assert_int_equal(edge(g, "b", "c")->weight, 100);
	assert_int_equal(edge(g, "a", "d")->weight, 50);
	assert_null(edge(g, "main", "c"));
	assert_int_equal(g->nedges, 6);
	for (size_t i = 0; i < g->nedges; i++) {
		assert_false(g->edges[i].residual);
		assert_false(g->edges[i].inlined);
	}
	/* edges by |weight| descending */
	for (size_t i = 1; i < g->nedges; i++)
		assert_true(g->edges[i - 1].weight >= g->edges[i].weight);
	pd_pprof_graph_destroy(g);

	/* edgefraction: 0.05 of the total flat (159) is 7; edges below it go */
	g = graph(p, 0, 0, 0.05);
	assert_int_equal(g->edge_cutoff, 7);
	assert_int_equal(g->dropped_edges, 0); /* b -> a (7) is not below 7 */
	pd_pprof_graph_destroy(g);
	g = graph(p, 0, 0, 0.06); /* cut 9: b -> a goes */
	assert_null(edge(g, "b", "a"));
	assert_non_null(edge(g, "main", "b"));
	assert_int_equal(g->dropped_edges, 1);
	pd_pprof_graph_destroy(g);
	pd_pprof_destroy(p);
}

static void test_residual(void **state)
{
	(void)state;
	struct spec sp = {NAMES, 6, 0, 0, NULL, NULL};
	/* a and b are light: cut, main -> c goes over them (dotted) */
	struct stack st[] = {{{C, B, A, MAIN}, 2}, {{C, MAIN}, 100}};
	struct pd_pprof_profile *p = make(&sp, st, 2);
	struct pd_pprof_graph *g = graph(p, 0, 0.05, 0);
	assert_int_equal(g->node_cutoff, 5);
	assert_int_equal(g->dropped_nodes, 2);
	assert_int_equal(g->nnodes, 2);
	assert_null(node(g, "a"));
	const struct pd_pprof_graph_edge *e = edge(g, "main", "c");
	assert_non_null(e);
	assert_int_equal(e->weight, 102);
	assert_true(e->residual);
	assert_int_equal(node(g, "c")->flat, 102);
	/* in DOT: dotted, with the "..." tooltip */
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_pprof_graph_dot(g, "t", NULL, 0, &b), 0);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	const char *dot = (const char *)b.data;
	assert_non_null(strstr(dot, "digraph \"t\" {\n"));
	assert_non_null(strstr(dot, "tooltip=\"main ... c (102)\""));
	assert_non_null(strstr(dot, "style=\"dotted\""));
	assert_non_null(strstr(dot, "label=\"c\\n102 (100%)\""));
	assert_non_null(strstr(dot, "label=\"main\\n0 of 102 (100%)\""));
	assert_non_null(strstr(dot, "Dropped 2 nodes (cum <= 5)"));
	pd_buf_fini(&b);
	pd_pprof_graph_destroy(g);

	/* a residual edge that another path already makes goes */
	struct stack st2[] = {{{C, X, MAIN}, 1}, {{C, B, MAIN}, 100}};
	pd_pprof_destroy(p);
	p = make(&sp, st2, 2);
	g = graph(p, 0, 0.05, 0);
	assert_null(node(g, "x"));
	assert_non_null(edge(g, "main", "b"));
	assert_non_null(edge(g, "b", "c"));
	assert_null(edge(g, "main", "c"));
	assert_int_equal(g->nedges, 2);
	pd_pprof_graph_destroy(g);
	pd_pprof_destroy(p);
}

static void test_inline(void **state)
{
	(void)state;
	/* location 100: d inlined into a */
	struct spec sp = {NAMES, 6, D, A, NULL, NULL};
	struct stack st[] = {{{100, MAIN}, 10}, {{D, B, MAIN}, 5}};
	struct pd_pprof_profile *p = make(&sp, st, 2);
	struct pd_pprof_graph *g = graph(p, 0, 0, 0);
	assert_true(edge(g, "a", "d")->inlined);
	assert_false(edge(g, "main", "a")->inlined);
	assert_false(edge(g, "b", "d")->inlined);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_pprof_graph_dot(g, "", NULL, 0, &b), 0);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	assert_non_null(strstr((const char *)b.data, "[label=\" 10\\n (inline)\""));
	assert_non_null(strstr((const char *)b.data, "digraph \"unnamed\""));
	pd_buf_fini(&b);
	pd_pprof_graph_destroy(g);
	pd_pprof_destroy(p);
}

static void test_nodecount(void **state)
{
	(void)state;
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_read_file(&p, P("goapp/heap.pb.gz"), NULL, &err), 0);
	int idx = pd_pprof_default_sample_index(p);
	struct pd_pprof_graph_opts o = {5, PD_PPROF_DEFAULT_NODEFRACTION, PD_PPROF_DEFAULT_EDGEFRACTION, 0};
	struct pd_pprof_graph *g = NULL;
	assert_int_equal(pd_pprof_graph(p, idx, &o, &g, &err), 0);
	/* main.newRecord comes first and carries four "bytes" tags: with them it counts
	 * as five nodes, so nodecount=5 keeps it alone, as go tool pprof -dot does */
	assert_int_equal(g->nnodes, 1);
	assert_string_equal(g->nodes[0].name, "main.newRecord");
	assert_int_equal(g->node_count, 11);
	pd_pprof_graph_destroy(g);
	o.nodecount = 0;
	assert_int_equal(pd_pprof_graph(p, idx, &o, &g, &err), 0);
	assert_int_equal(g->nnodes, 11);
	pd_pprof_graph_destroy(g);
	/* bad options are refused */
	o.nodefraction = 2;
	assert_int_equal(pd_pprof_graph(p, idx, &o, &g, &err), PD_EINVAL);
	assert_null(g);
	assert_int_equal(pd_pprof_graph(p, 7, NULL, &g, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "sample index 7"));
	pd_pprof_destroy(p);
}

/* Strings of a hostile profile: each tries to end its DOT string, add
 * attributes, a URL, an HTML-like label or Graphviz escapes, break the line or
 * forge a log line; one is not UTF-8 and one is longer than the writer keeps. */
static const char *const HOSTILE[] = {
    "main",
    "evil\" URL=\"javascript:alert(1)\" x=\"",
    "back\\slash\\N\\G\\l\\",
    "nl\nts=2026-01-01T00:00:00Z level=error component=api msg=\"forged\"\n",
    "]; N1 -> N2 [URL=\"javascript:alert(2)\"]; x [label=<<b>x</b>>] //",
    "<script>alert(3)</script>",
    "bad\xff\xfe\x01\r\tutf8",
};

static void test_dot_hostile(void **state)
{
	(void)state;
	static char longname[5000];
	memset(longname, 'L', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	const char *names[8];
	memcpy(names, HOSTILE, sizeof(HOSTILE));
	names[7] = longname;
	struct spec sp = {names, 8, 0, 0, "t\" URL=\"javascript:1", "u\\\" label=<<i>x</i>>"};
	struct stack st[] = {
	    {{2, 1}, 10},    {{3, 2, 1}, 20}, {{4, 3, 1}, 30}, {{5, 4, 1}, 40},
	    {{6, 5, 1}, 50}, {{7, 6, 1}, 60}, {{8, 7, 1}, 70},
	};
	struct pd_pprof_profile *p = make(&sp, st, 7);
	struct pd_pprof_graph *g = graph(p, 0, 0, 0);
	assert_int_equal(g->nnodes, 8);
	/* a mapping's file name becomes the title and the legend's first line */
	const char *title = "x\" ]; N1 [URL=\"javascript:alert(4)\"] \"\\";
	const char *legend[] = {"File: x\" ]; N1 [URL=\"javascript:alert(4)\"] \"\\",
	                        "Type: t\" URL=\"javascript:1\nlevel=error"};
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_pprof_graph_dot(g, title, legend, 2, &b), 0);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	const char *dot = (const char *)b.data;
	char why[1200];
	if (dot_check(dot, g->nnodes, g->nedges, why, sizeof(why)))
		fail_msg("%s in\n%s", why, dot);
	/* the only URL-ish text is inside strings: no URL attribute (dot_check) and
	 * one line per node and edge, the graph, its defaults, the legend, the end */
	size_t lines = 0;
	for (const char *c = dot; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 3 + g->nnodes + g->nedges + 1);
	/* no raw control byte nor invalid UTF-8 */
	for (const unsigned char *c = (const unsigned char *)dot; *c; c++)
		assert_false((*c < 0x20 && *c != '\n') || *c == 0x7f || *c == 0xff || *c == 0xfe);
	/* the long name is cut, its tooltip ends in "..." */
	assert_non_null(strstr(dot, "LLLL..."));
	assert_null(strstr(dot, longname + sizeof(longname) - 1 - PD_PPROF_DOT_MAX_STRING - 1));
	/* backslashes come doubled: Graphviz sees no \N, \G or \l of the name's */
	assert_non_null(strstr(dot, "back\\\\slash\\\\N\\\\G\\\\l\\\\ ("));
	pd_buf_fini(&b);
	pd_pprof_graph_destroy(g);
	pd_pprof_destroy(p);
}

/* Every test profile's DOT parses back as its graph. */
static void test_dot_testdata(void **state)
{
	(void)state;
	static const char *const files[] = {"goapp/heap.pb.gz", "goapp/cpu.pb.gz",
	                                    "goapp/goroutine.pb.gz"};
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct pd_pprof_profile *p = NULL;
		struct pd_err err = {0};
		char path[512];
		snprintf(path, sizeof(path), "%s/profiles/%s", PD_TESTDATA, files[f]);
		assert_int_equal(pd_pprof_read_file(&p, path, NULL, &err), 0);
		struct pd_pprof_graph *g = NULL;
		assert_int_equal(
		    pd_pprof_graph(p, pd_pprof_default_sample_index(p), NULL, &g, &err), 0);
		struct pd_buf b;
		pd_buf_init(&b, 0);
		const char *legend[] = {"File: app"};
		assert_int_equal(pd_pprof_graph_dot(g, "app", legend, 1, &b), 0);
		assert_int_equal(pd_buf_append(&b, "", 1), 0);
		char why[1200];
		if (dot_check((const char *)b.data, g->nnodes, g->nedges, why, sizeof(why)))
			fail_msg("%s: %s", files[f], why);
		pd_buf_fini(&b);
		pd_pprof_graph_destroy(g);
		pd_pprof_destroy(p);
	}
}

/* edge/nul-bytes.pb: names that differ only after a NUL byte are told apart in
 * the DOT too, each written whole (the NUL as U+FFFD, as every control byte),
 * and the DOT still parses back as its graph. */
static void test_dot_nul_names(void **state)
{
	(void)state;
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_read_file(&p, P("edge/nul-bytes.pb"), NULL, &err), 0);
	struct pd_pprof_graph *g = NULL;
	assert_int_equal(pd_pprof_graph(p, pd_pprof_default_sample_index(p), NULL, &g, &err), 0);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	const char *legend[] = {"File: nul"};
	assert_int_equal(pd_pprof_graph_dot(g, "nul", legend, 1, &b), 0);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	const char *dot = (const char *)b.data;
	char why[1200];
	if (dot_check(dot, g->nnodes, g->nedges, why, sizeof(why)))
		fail_msg("%s in\n%s", why, dot);
	assert_non_null(strstr(dot, "[label=\"dup\xef\xbf\xbd" "a\\n"));
	assert_non_null(strstr(dot, "[label=\"dup\xef\xbf\xbd" "b\\n"));
	assert_non_null(strstr(dot, "tooltip=\"dup\xef\xbf\xbd" "a ("));
	pd_buf_fini(&b);
	pd_pprof_graph_destroy(g);
	pd_pprof_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_weights),     cmocka_unit_test(test_residual),
	    cmocka_unit_test(test_inline),      cmocka_unit_test(test_nodecount),
	    cmocka_unit_test(test_dot_hostile), cmocka_unit_test(test_dot_testdata),
	    cmocka_unit_test(test_dot_nul_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
