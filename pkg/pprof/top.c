/* top.c: pprof's top table. Flat is the value of samples whose leaf frame is the
 * function; cum the value of samples with the function anywhere on the stack,
 * counted once per sample however often it recurs. Samples whose value is zero are
 * skipped, as are functions left with zero flat and cum. Rows come in pprof's
 * order: |flat| descending, then name, then |cum| descending. */
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

struct top_priv {
	char **names;
	size_t count;
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
	int64_t *flat = NULL, *cum = NULL;
	uint32_t *seen = NULL;
	uint8_t *inl = NULL;
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
	inl = calloc(nn, sizeof(*inl));
	t = calloc(1, sizeof(*t));
	priv = calloc(1, sizeof(*priv));
	if (!flat || !cum || !seen || !inl || !t || !priv)
		goto nomem;

	for (size_t si = 0; si < pb->n_sample; si++) {
		const pb_sample *s = pb->sample[si];
		int64_t w = s->value[idx];
		if (w == 0)
			continue;
		uint32_t stamp = (uint32_t)si + 1;
		int64_t parent = -1;
		/* root (last location, last line) to leaf (first location, first line) */
		for (size_t k = s->n_location_id; k-- > 0;) {
			int64_t li = pd_pprof_idmap_get(&p->locations, s->location_id[k]);
			uint32_t a = nodes.loc_off[li], e = nodes.loc_off[li + 1];
			for (uint32_t f = e; f-- > a;) {
				uint32_t node = nodes.loc_node[f];
				if (seen[node] != stamp) {
					seen[node] = stamp;
					cum[node] = pd_add64(cum[node], w);
				}
				if (parent >= 0 && (uint32_t)parent != node)
					inl[node] |= f != e - 1 ? 1 : 2;
				parent = node;
			}
		}
		if (parent >= 0)
			flat[parent] = pd_add64(flat[parent], w);
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
		t->rows[r].inline_kind = inl[i] == 1   ? PD_PPROF_INLINED
					 : inl[i] == 3 ? PD_PPROF_PARTIAL_INLINE
						       : PD_PPROF_NOT_INLINED;
		r++;
	}
	qsort(t->rows, nrows, sizeof(*t->rows), row_cmp);
	t->nrows = nrows;
	t->total = pd_pprof_total(p, idx);
	t->sample_index = idx;
	t->sample_type = pd_pprof_sample_type(p, (size_t)idx);
	t->unit = pd_pprof_sample_unit(p, (size_t)idx);
	/* the top owns the names now */
	priv->names = nodes.names;
	priv->count = nodes.count;
	nodes.names = NULL;
	nodes.count = 0;
	t->priv = priv;
	pd_pprof_nodes_fini(&nodes);
	free(flat);
	free(cum);
	free(seen);
	free(inl);
	*out = t;
	return 0;
nomem:
	pd_pprof_nodes_fini(&nodes);
	free(flat);
	free(cum);
	free(seen);
	free(inl);
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
		free(priv);
	}
	free(t->rows);
	free(t);
}

size_t pd_pprof_top_apply_nodefraction(struct pd_pprof_top *t, double fraction, int64_t *cutoff)
{
	/* pprof measures the cut against the report's total */
	double cd = (double)t->total * fraction;
	int64_t c = cd >= 9.2e18 || cd <= -9.2e18 ? INT64_MAX : (int64_t)(cd < 0 ? -cd : cd);
	if (cutoff)
		*cutoff = c;
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
