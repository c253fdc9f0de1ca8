/* fuzz_dot.c: libFuzzer target for the call graph's DOT writer (pkg/pprof/dot.c),
 * which puts a profile's strings (function and file names, the binary's name,
 * sample types and units) into Graphviz's input. Any input that decodes as a
 * profile has its call graph built for every sample type (pprof's default cuts,
 * and every node), written as DOT with the binary's name as title and legend line
 * as report=dot writes it, and parsed back with Graphviz's own parser: the DOT
 * must parse without a complaint into exactly the graph's nodes and edges, with
 * only the writer's attributes and no HTML-like label. Anything else aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "profd/util.h"

#include "../support/dot_check.h"

#define PD_FUZZ_MAX_DECOMPRESSED ((size_t)4 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct pd_pprof_profile *p, int idx, int nodecount)
{
	struct pd_pprof_graph_opts o = {nodecount, nodecount ? PD_PPROF_DEFAULT_NODEFRACTION : 0,
	                                nodecount ? PD_PPROF_DEFAULT_EDGEFRACTION : 0, 0};
	struct pd_pprof_graph *g = NULL;
	struct pd_err err = {0};
	int rc = pd_pprof_graph(p, idx, &o, &g, &err);
	if (rc == PD_ENOMEM || rc == PD_ETOOBIG)
		return;
	if (rc) {
		fprintf(stderr, "fuzz_dot: BUG: pd_pprof_graph: %s\n", err.msg);
		abort();
	}
	const char *bin = pd_pprof_main_binary(p);
	char line[512];
	snprintf(line, sizeof(line), "File: %s", bin);
	const char *legend[] = {line, pd_pprof_sample_type(p, (size_t)idx)};
	struct pd_buf b;
	pd_buf_init(&b, 0);
	rc = pd_pprof_graph_dot(g, bin, legend, 2, &b);
	rc = rc ? rc : pd_buf_append(&b, "", 1);
	if (rc) {
		fprintf(stderr, "fuzz_dot: BUG: pd_pprof_graph_dot: %s\n", pd_strerror(rc));
		abort();
	}
	char why[1200];
	if (dot_check((const char *)b.data, g->nnodes, g->nedges, why, sizeof(why))) {
		fprintf(stderr, "fuzz_dot: BUG: %s\n%s\n", why, (const char *)b.data);
		abort();
	}
	pd_buf_fini(&b);
	pd_pprof_graph_destroy(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_pprof_decode_opts opts = {.max_decompressed = PD_FUZZ_MAX_DECOMPRESSED};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	if (pd_pprof_decode(&p, data, size, &opts, &err))
		return 0;
	size_t nt = pd_pprof_sample_type_count(p);
	for (size_t i = 0; i < nt && i < 4; i++) {
		check(p, (int)i, PD_PPROF_DEFAULT_NODECOUNT);
		check(p, (int)i, 0);
	}
	pd_pprof_destroy(p);
	return 0;
}
