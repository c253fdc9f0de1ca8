/* flame.c: the call tree behind a flame graph. Each sample's stack is walked from
 * the outermost caller to the leaf, every frame (inlined ones included) a node
 * named as in the top table; a node's total is the value of the samples passing
 * through it and its self the value of those ending there. Recursion gives nested
 * nodes, not merged ones, as in pprof's flame graph. */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

struct tnode {
	uint32_t node;   /* function node, UINT32_MAX for the root */
	uint32_t parent; /* tree index */
	int64_t self;
	int64_t total;
};

struct flame_priv {
	char **names;
	size_t nnames;
	struct pd_pprof_flame_node *all;
};

struct sort_ctx {
	const struct tnode *tree;
	char **names;
	const size_t *name_len;
};

static int child_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *ctx = arg;
	const struct tnode *l = &ctx->tree[*(const uint32_t *)a];
	const struct tnode *r = &ctx->tree[*(const uint32_t *)b];
	uint64_t lt = pd_uabs64(l->total), rt = pd_uabs64(r->total);
	if (lt != rt)
		return lt > rt ? -1 : 1;
	return pd_pprof_bytes_cmp(ctx->names[l->node], ctx->name_len[l->node], ctx->names[r->node],
				  ctx->name_len[r->node]);
}

int pd_pprof_flame(const struct pd_pprof_profile *p, int idx, struct pd_pprof_flame **out,
		   struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	struct pd_pprof_nodes nodes;
	struct pd_u64map edges;
	struct tnode *tree = NULL;
	size_t ntree = 0, tcap = 0;
	uint32_t *count = NULL, *off = NULL, *order = NULL, *pos = NULL;
	uint32_t *pnode = NULL, *ptree = NULL; /* the previous sample's path: nodes, tree indices */
	size_t plen = 0, pcap = 0;
	struct pd_pprof_flame *f = NULL;
	struct flame_priv *priv = NULL;
	int rc;

	*out = NULL;
	if (idx < 0 || (size_t)idx >= pb->n_sample_type)
		return pd_err_set(err, PD_EINVAL, "sample index %d out of range (profile has %zu sample types)",
				  idx, pb->n_sample_type);
	if ((rc = pd_pprof_nodes_build(p, &nodes, err)))
		return rc;
	pd_u64map_init(&edges);
	tcap = 1024;
	tree = malloc(tcap * sizeof(*tree));
	if (!tree)
		goto nomem;
	tree[0] = (struct tnode){UINT32_MAX, 0, 0, 0};
	ntree = 1;

	for (size_t si = 0; si < pb->n_sample; si++) {
		const pb_sample *s = pb->sample[si];
		int64_t w = s->value[idx];
		if (w == 0)
			continue;
		uint32_t cur = 0;
		size_t depth = 0;
		int same = 1; /* the path so far is the previous sample's */
		tree[0].total = pd_add64(tree[0].total, w);
		size_t lo = pd_pprof_stack_lo(nodes.loc_prune, p, s);
		for (size_t k = s->n_location_id; k-- > lo;) {
			int64_t li = pd_pprof_idmap_get(&p->locations, s->location_id[k]);
			uint32_t a = nodes.loc_off[li], e = nodes.loc_off[li + 1];
			for (uint32_t fr = e; fr-- > a;) {
				uint32_t node = nodes.loc_node[fr];
				uint64_t key = (((uint64_t)cur << 32) | node) + 1;
				uint32_t child;
				if (depth == pcap) {
					size_t nc = pcap ? pcap * 2 : 64;
					uint32_t *n1 = realloc(pnode, nc * sizeof(*pnode));
					if (!n1)
						goto nomem;
					pnode = n1;
					uint32_t *n2 = realloc(ptree, nc * sizeof(*ptree));
					if (!n2)
						goto nomem;
					ptree = n2;
					pcap = nc;
				}
				/* samples next to each other often share their outer frames: the
				 * same path from the root is the same tree node, found without
				 * a lookup */
				same = same && depth < plen && pnode[depth] == node;
				if (same) {
					child = ptree[depth];
				} else if (!pd_u64map_get(&edges, key, &child)) {
					if (ntree == UINT32_MAX)
						goto nomem;
					if (ntree == tcap) {
						struct tnode *nt = realloc(tree, tcap * 2 * sizeof(*tree));
						if (!nt)
							goto nomem;
						tree = nt;
						tcap *= 2;
					}
					child = (uint32_t)ntree++;
					tree[child] = (struct tnode){node, cur, 0, 0};
					if (pd_u64map_put(&edges, key, child))
						goto nomem;
				}
				tree[child].total = pd_add64(tree[child].total, w);
				cur = child;
				pnode[depth] = node;
				ptree[depth++] = child;
			}
		}
		plen = depth;
		tree[cur].self = pd_add64(tree[cur].self, w);
	}
	pd_u64map_fini(&edges);
	free(pnode);
	free(ptree);
	pnode = ptree = NULL;

	/* lay the tree out as nested arrays, children sorted */
	count = calloc(ntree, sizeof(*count));
	off = calloc(ntree + 1, sizeof(*off));
	order = malloc(ntree * sizeof(*order));
	pos = malloc(ntree * sizeof(*pos));
	f = calloc(1, sizeof(*f));
	priv = calloc(1, sizeof(*priv));
	if (!count || !off || !order || !pos || !f || !priv)
		goto nomem;
	for (size_t i = 1; i < ntree; i++)
		count[tree[i].parent]++;
	for (size_t i = 0; i < ntree; i++)
		off[i + 1] = off[i] + count[i];
	memset(count, 0, ntree * sizeof(*count));
	for (size_t i = 1; i < ntree; i++) {
		uint32_t par = tree[i].parent;
		order[off[par] + count[par]++] = (uint32_t)i;
	}
	struct sort_ctx ctx = {tree, nodes.names, nodes.name_len};
	for (size_t i = 0; i < ntree; i++)
		if (count[i] > 1)
			qsort_r(order + off[i], count[i], sizeof(*order), child_cmp, &ctx);
	for (size_t k = 0; k < ntree - 1; k++)
		pos[order[k]] = (uint32_t)k;
	priv->all = calloc(ntree, sizeof(*priv->all));
	if (!priv->all)
		goto nomem;
	for (size_t i = 0; i < ntree; i++) {
		struct pd_pprof_flame_node *fn = i == 0 ? &f->root : &priv->all[pos[i]];
		fn->name = i == 0 ? "root" : nodes.names[tree[i].node];
		fn->name_len = i == 0 ? 4 : nodes.name_len[tree[i].node];
		fn->self = tree[i].self;
		fn->total = tree[i].total;
		fn->children = count[i] ? &priv->all[off[i]] : NULL;
		fn->nchildren = count[i];
	}
	f->sample_index = idx;
	f->sample_type = pd_pprof_sample_type_n(p, (size_t)idx, &f->sample_type_len);
	f->unit = pd_pprof_sample_unit_n(p, (size_t)idx, &f->unit_len);
	f->node_count = ntree;
	priv->names = nodes.names;
	priv->nnames = nodes.count;
	nodes.names = NULL;
	nodes.count = 0;
	f->priv = priv;
	pd_pprof_nodes_fini(&nodes);
	free(tree);
	free(count);
	free(off);
	free(order);
	free(pos);
	*out = f;
	return 0;
nomem:
	pd_u64map_fini(&edges);
	free(pnode);
	free(ptree);
	pd_pprof_nodes_fini(&nodes);
	free(tree);
	free(count);
	free(off);
	free(order);
	free(pos);
	if (priv)
		free(priv->all);
	free(priv);
	free(f);
	return pd_err_set(err, PD_ENOMEM, "out of memory building the flame graph");
}

void pd_pprof_flame_destroy(struct pd_pprof_flame *f)
{
	if (!f)
		return;
	struct flame_priv *priv = f->priv;
	if (priv) {
		for (size_t i = 0; i < priv->nnames; i++)
			free(priv->names[i]);
		free(priv->names);
		free(priv->all);
		free(priv);
	}
	free(f);
}

static int node_open(struct pd_buf *b, const struct pd_pprof_flame_node *n)
{
	int rc = pd_buf_append(b, "{\"name\":", 8);
	if (!rc)
		rc = pd_buf_json_stringn(b, n->name, n->name_len);
	if (!rc)
		rc = pd_buf_printf(b, ",\"self\":%lld,\"total\":%lld,\"children\":[", (long long)n->self,
				   (long long)n->total);
	return rc;
}

int pd_pprof_flame_json(const struct pd_pprof_flame *f, int64_t min_total, struct pd_buf *b)
{
	struct frame {
		const struct pd_pprof_flame_node *n;
		size_t next;
		int wrote;
	};
	size_t cap = 64, depth = 0;
	struct frame *st = malloc(cap * sizeof(*st));
	int rc;
	if (!st)
		return PD_ENOMEM;
	rc = pd_buf_append(b, "{\"sampleType\":", 14);
	if (!rc)
		rc = pd_buf_json_stringn(b, f->sample_type, f->sample_type_len);
	if (!rc)
		rc = pd_buf_append(b, ",\"unit\":", 8);
	if (!rc)
		rc = pd_buf_json_stringn(b, f->unit, f->unit_len);
	if (!rc)
		rc = pd_buf_printf(b, ",\"total\":%lld,\"root\":", (long long)f->root.total);
	if (!rc)
		rc = node_open(b, &f->root);
	st[depth++] = (struct frame){&f->root, 0, 0};
	while (!rc && depth) {
		struct frame *top = &st[depth - 1];
		if (top->next == top->n->nchildren) {
			rc = pd_buf_append(b, "]}", 2);
			depth--;
			continue;
		}
		const struct pd_pprof_flame_node *c = &top->n->children[top->next++];
		if (min_total > 0 && pd_uabs64(c->total) < (uint64_t)min_total)
			continue;
		if (top->wrote++ && (rc = pd_buf_append(b, ",", 1)))
			break;
		if ((rc = node_open(b, c)))
			break;
		if (depth == cap) {
			struct frame *ns = realloc(st, cap * 2 * sizeof(*st));
			if (!ns) {
				rc = PD_ENOMEM;
				break;
			}
			st = ns;
			cap *= 2;
		}
		st[depth++] = (struct frame){c, 0, 0};
	}
	if (!rc)
		rc = pd_buf_append(b, "}", 1);
	free(st);
	return rc;
}
