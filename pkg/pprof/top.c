/* top.c: pprof's top table. Flat is the value of samples whose leaf frame is the
 * function; cum the value of samples with the function anywhere on the stack,
 * counted once per sample however often it recurs. Samples whose value is zero are
 * skipped, as are functions left with zero flat and cum. Rows come in pprof's
 * order: |flat| descending, then name, then |cum| descending. The node cut and the
 * inline marks follow pprof's graph: the marks come from the call edges between
 * the functions a report keeps. */
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

struct top_priv {
	char **names;
	size_t count;
	uint32_t *loc_off, *loc_node; /* the nodes' frames (struct pd_pprof_nodes) */
	uint8_t *loc_prune;
	int sample_index;
	size_t all_rows; /* rows before any cut */
	int64_t flat_sum; /* the signed sum of their flat values */
};

static int row_cmp(const void *a, const void *b)
{
	const struct pd_pprof_top_row *l = a, *r = b;
	uint64_t lf = pd_uabs64(l->flat), rf = pd_uabs64(r->flat);
	if (lf != rf)
		return lf > rf ? -1 : 1;
	int c = pd_pprof_bytes_cmp(l->name, l->name_len, r->name, r->name_len);
	if (c)
		return c;
	uint64_t lc = pd_uabs64(l->cum), rc = pd_uabs64(r->cum);
	if (lc != rc)
		return lc > rc ? -1 : 1;
	return 0;
}

int pd_pprof_top(const struct pd_pprof_profile *p, int idx, struct pd_pprof_top **out,
		 struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	struct pd_pprof_nodes nodes;
	int64_t *flat = NULL, *cum = NULL, *bflat = NULL, *bcum = NULL;
	uint32_t *seen = NULL;
	struct pd_pprof_top *t = NULL;
	struct top_priv *priv = NULL;
	int rc;

	*out = NULL;
	if (idx < 0 || (size_t)idx >= pb->n_sample_type)
		return pd_err_set(err, PD_EINVAL, "sample index %d out of range (profile has %zu sample types)",
				  idx, pb->n_sample_type);
	if ((rc = pd_pprof_nodes_build(p, &nodes, err)))
		return rc;
	size_t nn = nodes.count ? nodes.count : 1;
	flat = calloc(nn, sizeof(*flat));
	cum = calloc(nn, sizeof(*cum));
	seen = calloc(nn, sizeof(*seen));
	t = calloc(1, sizeof(*t));
	priv = calloc(1, sizeof(*priv));
	if (!flat || !cum || !seen || !t || !priv)
		goto nomem;
	/* a diff's base samples are also counted apart, for its A and B columns */
	for (size_t si = 0; si < pb->n_sample && !bflat; si++)
		if (pd_pprof_is_diff_base(p, pb->sample[si])) {
			bflat = calloc(nn, sizeof(*bflat));
			bcum = calloc(nn, sizeof(*bcum));
			if (!bflat || !bcum)
				goto nomem;
		}

	for (size_t si = 0; si < pb->n_sample; si++) {
		const pb_sample *s = pb->sample[si];
		int64_t w = s->value[idx];
		if (w == 0)
			continue;
		uint32_t stamp = (uint32_t)si + 1;
		int64_t parent = -1;
		int base = bflat && pd_pprof_is_diff_base(p, s);
		/* root (last location, last line) to leaf (first location, first line) */
		size_t lo = pd_pprof_stack_lo(nodes.loc_prune, p, s);
		for (size_t k = s->n_location_id; k-- > lo;) {
			int64_t li = pd_pprof_idmap_get(&p->locations, s->location_id[k]);
			uint32_t a = nodes.loc_off[li], e = nodes.loc_off[li + 1];
			for (uint32_t f = e; f-- > a;) {
				uint32_t node = nodes.loc_node[f];
				if (seen[node] != stamp) {
					seen[node] = stamp;
					cum[node] = pd_add64(cum[node], w);
					if (base)
						bcum[node] = pd_add64(bcum[node], w);
				}
				parent = node;
			}
		}
		if (parent >= 0) {
			flat[parent] = pd_add64(flat[parent], w);
			if (base)
				bflat[parent] = pd_add64(bflat[parent], w);
		}
	}

	size_t nrows = 0;
	for (size_t i = 0; i < nodes.count; i++)
		if (flat[i] || cum[i])
			nrows++;
	t->rows = calloc(nrows ? nrows : 1, sizeof(*t->rows));
	if (!t->rows)
		goto nomem;
	size_t r = 0;
	for (size_t i = 0; i < nodes.count; i++) {
		if (!flat[i] && !cum[i])
			continue;
		t->rows[r].name = nodes.names[i];
		t->rows[r].name_len = nodes.name_len[i];
		t->rows[r].flat = flat[i];
		t->rows[r].cum = cum[i];
		t->rows[r].base_flat = bflat ? bflat[i] : 0;
		t->rows[r].base_cum = bcum ? bcum[i] : 0;
		t->rows[r].node = i;
		r++;
	}
	qsort(t->rows, nrows, sizeof(*t->rows), row_cmp);
	t->nrows = nrows;
	t->total = pd_pprof_total(p, idx);
	t->sample_index = idx;
	t->sample_type = pd_pprof_sample_type(p, (size_t)idx);
	t->unit = pd_pprof_sample_unit(p, (size_t)idx);
	/* the top owns the names and frames now */
	priv->names = nodes.names;
	priv->count = nodes.count;
	priv->loc_off = nodes.loc_off;
	priv->loc_node = nodes.loc_node;
	priv->loc_prune = nodes.loc_prune;
	priv->sample_index = idx;
	priv->all_rows = nrows;
	for (size_t i = 0; i < nrows; i++)
		priv->flat_sum = pd_add64(priv->flat_sum, t->rows[i].flat);
	nodes.names = NULL;
	nodes.loc_off = nodes.loc_node = NULL;
	nodes.loc_prune = NULL;
	nodes.count = 0;
	t->priv = priv;
	pd_pprof_nodes_fini(&nodes);
	free(flat);
	free(cum);
	free(bflat);
	free(bcum);
	free(seen);
	pd_pprof_top_keep(t, p, 0, PD_PPROF_DEFAULT_EDGEFRACTION);
	*out = t;
	return 0;
nomem:
	pd_pprof_nodes_fini(&nodes);
	free(flat);
	free(cum);
	free(bflat);
	free(bcum);
	free(seen);
	free(priv);
	if (t)
		free(t->rows);
	free(t);
	return pd_err_set(err, PD_ENOMEM, "out of memory computing the top table");
}

void pd_pprof_top_destroy(struct pd_pprof_top *t)
{
	if (!t)
		return;
	struct top_priv *priv = t->priv;
	if (priv) {
		for (size_t i = 0; i < priv->count; i++)
			free(priv->names[i]);
		free(priv->names);
		free(priv->loc_off);
		free(priv->loc_node);
		free(priv->loc_prune);
		free(priv);
	}
	free(t->rows);
	free(t);
}

size_t pd_pprof_top_apply_nodefraction(struct pd_pprof_top *t, double fraction, int64_t *cutoff)
{
	/* pprof measures the cut against the signed sum of the nodes' flat values (its
	 * graph's Nodes.Sum), not the report's total of absolute values: for a diff or
	 * a delta profile the two differ */
	int64_t flat_sum = 0;
	for (size_t i = 0; i < t->nrows; i++)
		flat_sum = pd_add64(flat_sum, t->rows[i].flat);
	double cd = (double)flat_sum * fraction, td = (double)t->total * fraction;
	int64_t c = cd >= 9.2e18 || cd <= -9.2e18 ? INT64_MAX : (int64_t)(cd < 0 ? -cd : cd);
	if (cutoff)
		*cutoff = td >= 9.2e18 || td <= -9.2e18 ? INT64_MAX : (int64_t)(td < 0 ? -td : td);
	if (c <= 0)
		return t->nrows;
	size_t kept = 0;
	for (size_t i = 0; i < t->nrows; i++) {
		if (pd_uabs64(t->rows[i].cum) >= (uint64_t)c)
			t->rows[kept++] = t->rows[i];
	}
	t->nrows = kept;
	return kept;
}

/* ---- inline marks from the call edges between the functions kept ------------- */

/* An edge parent -> child of pprof's graph: its weight, the last sample that met it
 * (an edge counts once per sample) and whether every call it stands for is
 * inlined. */
struct edge {
	uint64_t key; /* (parent + 1) << 32 | (child + 1) */
	int64_t weight;
	uint32_t stamp;
	uint8_t inline_only;
};

size_t pd_pprof_top_keep(struct pd_pprof_top *t, const struct pd_pprof_profile *p,
			 size_t nodecount, double edgefraction)
{
	struct top_priv *priv = t->priv;
	if (nodecount && nodecount < t->nrows)
		t->nrows = nodecount;
	if (!priv || !priv->loc_off)
		return t->nrows;
	const pb_profile *pb = p->pb;
	int idx = priv->sample_index;
	size_t nn = priv->count ? priv->count : 1;
	uint8_t *kept = calloc(nn, 1), *mark = calloc(nn, 1);
	struct pd_u64map at; /* edge key -> index in es + 1 */
	struct edge *es = NULL;
	size_t nes = 0, caps = 0;
	pd_u64map_init(&at);
	if (!kept || !mark || pb->n_sample >= UINT32_MAX)
		goto out;
	/* pprof rebuilds its graph of the nodes kept only when a cut dropped some; its
	 * first graph has edges through every function, those whose values sum to
	 * 0 included */
	if (t->nrows == priv->all_rows)
		memset(kept, 1, nn);
	else
		for (size_t i = 0; i < t->nrows; i++)
			kept[t->rows[i].node] = 1;
	for (size_t si = 0; si < pb->n_sample; si++) {
		const pb_sample *s = pb->sample[si];
		if ((size_t)idx >= s->n_value || s->value[idx] == 0)
			continue;
		int64_t w = s->value[idx];
		uint32_t stamp = (uint32_t)si + 1;
		int64_t parent = -1;
		/* root (last location, outermost line) to leaf, over the kept functions:
		 * a frame is called inlined when it is not its location's outermost line */
		size_t lo = pd_pprof_stack_lo(priv->loc_prune, p, s);
		for (size_t k = s->n_location_id; k-- > lo;) {
			int64_t li = pd_pprof_idmap_get(&p->locations, s->location_id[k]);
			uint32_t a = priv->loc_off[li], e = priv->loc_off[li + 1];
			for (uint32_t f = e; f-- > a;) {
				uint32_t node = priv->loc_node[f];
				if (!kept[node])
					continue;
				if (parent >= 0 && (uint32_t)parent != node) {
					uint64_t key = ((uint64_t)parent + 1) << 32 | ((uint64_t)node + 1);
					uint32_t ei;
					if (!pd_u64map_get(&at, key, &ei)) {
						if (nes == caps) {
							size_t nc = caps ? caps * 2 : 256;
							struct edge *ne = realloc(es, nc * sizeof(*ne));
							if (!ne)
								goto out;
							es = ne;
							caps = nc;
						}
						es[nes] = (struct edge){.key = key, .inline_only = 1};
						if (pd_u64map_put(&at, key, (uint32_t)++nes))
							goto out;
						ei = (uint32_t)nes;
					}
					struct edge *ed = &es[ei - 1];
					if (ed->stamp != stamp) {
						ed->stamp = stamp;
						ed->weight = pd_add64(ed->weight, w);
						if (f == e - 1)
							ed->inline_only = 0;
					}
				}
				parent = node;
			}
		}
	}
	/* pprof then drops the edges lighter than edgefraction of its first graph's
	 * signed flat sum */
	double cd = (double)priv->flat_sum * edgefraction;
	uint64_t cut = cd >= 9.2e18 || cd <= -9.2e18 ? UINT64_MAX : (uint64_t)(cd < 0 ? -cd : cd);
	for (size_t i = 0; i < nes; i++) {
		if (pd_uabs64(es[i].weight) < cut)
			continue;
		size_t child = (size_t)(es[i].key & 0xffffffffu) - 1;
		mark[child] |= es[i].inline_only ? 1 : 2;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		uint8_t m = mark[t->rows[i].node];
		t->rows[i].inline_kind = m == 1   ? PD_PPROF_INLINED
					 : m == 3 ? PD_PPROF_PARTIAL_INLINE
						  : PD_PPROF_NOT_INLINED;
	}
out:
	free(kept);
	free(mark);
	free(es);
	pd_u64map_fini(&at);
	return t->nrows;
}
