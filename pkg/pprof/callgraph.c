/* callgraph.c: the call graph of `go tool pprof -dot`. Nodes are functions (as in
 * nodes.c) with flat and cum; edges are caller -> callee with the value of the
 * samples making that call. The graph is built from the samples up to three
 * times, as pprof builds it: once whole, to find the total and the nodefraction
 * cut; once with the nodes that pass it; and once with the nodecount nodes that
 * score highest in pprof's entropy order. A frame of a dropped node makes the
 * next kept caller -> callee edge residual (drawn dotted). Edges below the
 * edgefraction cut are dropped last, then residual edges whose ends another path
 * already joins. */
#define _GNU_SOURCE /* qsort_r */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

/* Most label tags pprof counts for one node when choosing the nodes to keep. */
#define MAX_NODELETS 4

struct edge {
	uint32_t from, to;
	int64_t weight;
	uint32_t stamp; /* last sample that added to it */
	uint8_t residual, inlined, alive;
};

/* A tag of pprof's graph: a node's samples with one set of string labels (or one
 * formatted "bytes" value under it); only its flat and cum matter here. */
struct tag {
	uint32_t node;
	char *key;
	size_t klen;
	uint64_t hash;
	int64_t flat, cum;
};

struct tagtab {
	struct tag *t;
	size_t n, cap; /* cap is a power of two, or 0 */
};

struct build {
	size_t nn;
	int64_t *flat, *cum;
	uint8_t *present; /* flat or cum non-zero: the node is in the graph */
	struct edge *edges;
	size_t nedges, ecap;
	struct pd_u64map emap; /* (from << 32 | to) -> edge index */
	struct tagtab tags;
	int with_tags;
};

struct ctx {
	const struct pd_pprof_profile *p;
	int idx;
	struct pd_pprof_nodes nodes;
	uint32_t *stamp; /* per node: last sample that added to its cum */
	/* per sample, when tags are counted: its string labels joined (NULL when it has
	 * none) and its "bytes" values formatted, as pprof keys its tags */
	char **labels;
	size_t *label_len; /* labels[i]'s length: label keys and values may hold NULs */
	char ***bytes;
	size_t *nbytes;
	int has_tags;
};

static uint64_t uabs(int64_t v)
{
	return pd_uabs64(v);
}

/* Go's abs64 in pprof: wraps for INT64_MIN, and is compared signed. */
static int64_t go_abs(int64_t v)
{
	return v < 0 ? pd_neg64(v) : v;
}

/* Go's int64(float64) on amd64: NaN and out-of-range values give INT64_MIN. */
static int64_t go_int64(double v)
{
	if (!(v == v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)v;
}

static void build_fini(struct build *b)
{
	free(b->flat);
	free(b->cum);
	free(b->present);
	free(b->edges);
	pd_u64map_fini(&b->emap);
	for (size_t i = 0; i < b->tags.cap; i++)
		free(b->tags.t[i].key);
	free(b->tags.t);
	memset(b, 0, sizeof(*b));
}

static int tag_add(struct tagtab *tt, uint32_t node, const char *key, size_t klen, int64_t w,
                   int flat)
{
	if ((tt->n + 1) * 2 > tt->cap) {
		size_t ncap = tt->cap ? tt->cap * 2 : 256;
		struct tag *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return PD_ENOMEM;
		for (size_t i = 0; i < tt->cap; i++) {
			if (!tt->t[i].key)
				continue;
			size_t j = tt->t[i].hash & (ncap - 1);
			while (nt[j].key)
				j = (j + 1) & (ncap - 1);
			nt[j] = tt->t[i];
		}
		free(tt->t);
		tt->t = nt;
		tt->cap = ncap;
	}
	uint64_t h = pd_hash_bytes(key, klen, node);
	size_t j = h & (tt->cap - 1);
	while (tt->t[j].key) {
		struct tag *t = &tt->t[j];
		if (t->hash == h && t->node == node && t->klen == klen &&
		    memcmp(t->key, key, klen) == 0)
			goto found;
		j = (j + 1) & (tt->cap - 1);
	}
	char *k = malloc(klen + 1);
	if (!k)
		return PD_ENOMEM;
	memcpy(k, key, klen);
	k[klen] = '\0';
	tt->t[j] = (struct tag){.node = node, .key = k, .klen = klen, .hash = h};
	tt->n++;
found:
	if (flat)
		tt->t[j].flat = pd_add64(tt->t[j].flat, w);
	else
		tt->t[j].cum = pd_add64(tt->t[j].cum, w);
	return 0;
}

/* pprof's Node.addSample for the tags: one string-label tag, and one numeric tag
 * per "bytes" value under that label set. */
static int tags_add(const struct ctx *c, struct build *b, size_t si, uint32_t node, int64_t w,
                    int flat)
{
	const char *l = c->labels[si];
	size_t ll = l ? c->label_len[si] : 0;
	char kb[512];
	if (l && tag_add(&b->tags, node, l, ll, w, flat))
		return PD_ENOMEM;
	for (size_t i = 0; i < c->nbytes[si]; i++) {
		/* labels + "\x01" + the bytes value, cut to the buffer as before */
		size_t bl = strlen(c->bytes[si][i]), kl = 0;
		size_t n1 = ll < sizeof(kb) - 1 ? ll : sizeof(kb) - 1;
		if (n1)
			memcpy(kb, l, n1);
		kl = n1;
		if (kl < sizeof(kb) - 1)
			kb[kl++] = '\x01';
		size_t n2 = bl < sizeof(kb) - 1 - kl ? bl : sizeof(kb) - 1 - kl;
		memcpy(kb + kl, c->bytes[si][i], n2);
		kl += n2;
		if (tag_add(&b->tags, node, kb, kl, w, flat))
			return PD_ENOMEM;
	}
	return 0;
}

static int edge_add(struct build *b, uint32_t from, uint32_t to, int64_t w, int residual,
                    int inlined, uint32_t stamp)
{
	uint64_t key = (uint64_t)from << 32 | to;
	uint32_t ei;
	if (pd_u64map_get(&b->emap, key, &ei)) {
		struct edge *e = &b->edges[ei];
		if (e->stamp == stamp)
			return 0; /* counted once per sample */
		e->stamp = stamp;
		e->weight = pd_add64(e->weight, w);
		if (residual)
			e->residual = 1;
		if (!inlined)
			e->inlined = 0;
		return 0;
	}
	if (b->nedges == b->ecap) {
		size_t nc = b->ecap ? b->ecap * 2 : 256;
		struct edge *ne = realloc(b->edges, nc * sizeof(*ne));
		if (!ne)
			return PD_ENOMEM;
		b->edges = ne;
		b->ecap = nc;
	}
	if (b->nedges >= UINT32_MAX || pd_u64map_put(&b->emap, key, (uint32_t)b->nedges))
		return PD_ENOMEM;
	b->edges[b->nedges++] = (struct edge){.from = from,
	                                      .to = to,
	                                      .weight = w,
	                                      .stamp = stamp,
	                                      .residual = (uint8_t)!!residual,
	                                      .inlined = (uint8_t)!!inlined,
	                                      .alive = 1};
	return 0;
}

/* pprof's graph.New: walks every sample from root to leaf over the kept nodes
 * (kept NULL: all). */
static int build_graph(struct ctx *c, const uint8_t *kept, int with_tags, struct build *b)
{
	const pb_profile *pb = c->p->pb;
	size_t nn = c->nodes.count ? c->nodes.count : 1;
	memset(b, 0, sizeof(*b));
	pd_u64map_init(&b->emap);
	b->nn = c->nodes.count;
	b->with_tags = with_tags && c->has_tags;
	b->flat = calloc(nn, sizeof(*b->flat));
	b->cum = calloc(nn, sizeof(*b->cum));
	b->present = calloc(nn, 1);
	if (!b->flat || !b->cum || !b->present)
		return PD_ENOMEM;
	memset(c->stamp, 0, nn * sizeof(*c->stamp));
	for (size_t si = 0; si < pb->n_sample; si++) {
		const pb_sample *s = pb->sample[si];
		int64_t w = s->value[c->idx];
		if (w == 0)
			continue;
		uint32_t stamp = (uint32_t)si + 1;
		int64_t parent = -1;
		int residual = 0;
		size_t lo = pd_pprof_stack_lo(c->nodes.loc_prune, c->p, s);
		for (size_t k = s->n_location_id; k-- > lo;) {
			int64_t li = pd_pprof_idmap_get(&c->p->locations, s->location_id[k]);
			uint32_t a = c->nodes.loc_off[li], e = c->nodes.loc_off[li + 1];
			for (uint32_t f = e; f-- > a;) {
				uint32_t node = c->nodes.loc_node[f];
				if (kept && !kept[node]) {
					residual = 1;
					continue;
				}
				if (c->stamp[node] != stamp) {
					c->stamp[node] = stamp;
					b->cum[node] = pd_add64(b->cum[node], w);
					if (b->with_tags && tags_add(c, b, si, node, w, 0))
						return PD_ENOMEM;
				}
				if (parent >= 0 && (uint32_t)parent != node &&
				    edge_add(b, (uint32_t)parent, node, w, residual, f != e - 1,
				             stamp))
					return PD_ENOMEM;
				parent = node;
				residual = 0;
			}
		}
		if (parent >= 0 && !residual) {
			b->flat[parent] = pd_add64(b->flat[parent], w);
			if (b->with_tags && tags_add(c, b, si, (uint32_t)parent, w, 1))
				return PD_ENOMEM;
		}
	}
	for (size_t i = 0; i < b->nn; i++)
		b->present[i] = b->flat[i] || b->cum[i];
	return 0;
}

static size_t node_total(const struct build *b)
{
	size_t n = 0;
	for (size_t i = 0; i < b->nn; i++)
		n += b->present[i];
	return n;
}

/* The absolute cut of a fraction of v, as pprof computes it (abs(int64(f * v))). */
static int64_t cutoff_of(int64_t v, double fraction)
{
	return go_abs(go_int64((double)v * fraction));
}

/* ---- pprof's entropy order ------------------------------------------------------ */

struct sorter {
	const struct ctx *c;
	const int64_t *score;
	const struct build *b;
};

static int node_cmp(const void *pa, const void *pb, void *arg)
{
	uint32_t l = *(const uint32_t *)pa, r = *(const uint32_t *)pb;
	const struct sorter *s = arg;
	int64_t ls = go_abs(s->score[l]), rs = go_abs(s->score[r]);
	if (ls != rs)
		return ls > rs ? -1 : 1;
	const struct pd_pprof_nodes *nd = &s->c->nodes;
	int c = pd_pprof_bytes_cmp(nd->names[l], nd->name_len[l], nd->names[r], nd->name_len[r]);
	if (c)
		return c;
	int64_t lf = go_abs(s->b->flat[l]), rf = go_abs(s->b->flat[r]);
	if (lf != rf)
		return lf > rf ? -1 : 1;
	return l < r ? -1 : l > r;
}

/* -sum(f * log2 f) over the fractions of the edges' |weights| (and self) in
 * their total, which counts only positive weights, as pprof's edgeEntropyScore. */
static double entropy_term(double frac)
{
	return -frac * log2(frac); /* NaN for 0 and negatives, as in Go */
}

/* Sorts the nodes in the graph by pprof's entropy score into order (n of them). */
static int sort_nodes(const struct ctx *c, const struct build *b, uint32_t *order, size_t *n)
{
	size_t nn = b->nn ? b->nn : 1;
	int64_t *score = calloc(nn, sizeof(*score));
	int64_t *in_total = calloc(nn, sizeof(*in_total));
	int64_t *out_total = calloc(nn, sizeof(*out_total));
	uint32_t *nin = calloc(nn, sizeof(*nin));
	uint32_t *nout = calloc(nn, sizeof(*nout));
	double *in_s = calloc(nn, sizeof(*in_s));
	double *out_s = calloc(nn, sizeof(*out_s));
	int rc = PD_ENOMEM;
	if (!score || !in_total || !out_total || !nin || !nout || !in_s || !out_s)
		goto out;
	for (size_t i = 0; i < b->nn; i++)
		out_total[i] = b->flat[i];
	for (size_t i = 0; i < b->nedges; i++) {
		const struct edge *e = &b->edges[i];
		if (!e->alive)
			continue;
		nout[e->from]++;
		nin[e->to]++;
		if (e->weight > 0) {
			out_total[e->from] = pd_add64(out_total[e->from], e->weight);
			in_total[e->to] = pd_add64(in_total[e->to], e->weight);
		}
	}
	for (size_t i = 0; i < b->nedges; i++) {
		const struct edge *e = &b->edges[i];
		if (!e->alive)
			continue;
		double w = (double)uabs(e->weight);
		if (out_total[e->from] != 0)
			out_s[e->from] += entropy_term(w / (double)out_total[e->from]);
		if (in_total[e->to] != 0)
			in_s[e->to] += entropy_term(w / (double)in_total[e->to]);
	}
	size_t k = 0;
	for (size_t i = 0; i < b->nn; i++) {
		if (!b->present[i])
			continue;
		double sc = 0;
		if (nin[i] == 0)
			sc += 1;
		else
			sc += in_s[i];
		if (nout[i] == 0) {
			sc += 1;
		} else {
			double o = out_s[i];
			if (b->flat[i] > 0 && out_total[i] != 0)
				o += entropy_term((double)uabs(b->flat[i]) / (double)out_total[i]);
			sc += o;
		}
		score[i] = pd_add64(go_int64(sc * (double)b->cum[i]), b->flat[i]);
		order[k++] = (uint32_t)i;
	}
	struct sorter s = {c, score, b};
	qsort_r(order, k, sizeof(*order), node_cmp, &s);
	*n = k;
	rc = 0;
out:
	free(score);
	free(in_total);
	free(out_total);
	free(nin);
	free(nout);
	free(in_s);
	free(out_s);
	return rc;
}

/* pprof's countTags after TrimLowFrequencyTags(cutoff): tags with a non-zero flat
 * whose |flat| or |cum| reaches the cut, per node. */
static void count_tags(const struct build *b, int64_t cutoff, uint32_t *count)
{
	for (size_t i = 0; i < b->tags.cap; i++) {
		const struct tag *t = &b->tags.t[i];
		if (!t->key || t->flat == 0)
			continue;
		if (go_abs(t->flat) < cutoff && go_abs(t->cum) < cutoff)
			continue;
		count[t->node]++;
	}
}

static size_t trim_edges(struct build *b, int64_t cutoff)
{
	size_t dropped = 0;
	for (size_t i = 0; i < b->nedges; i++) {
		struct edge *e = &b->edges[i];
		if (e->alive && go_abs(e->weight) < cutoff) {
			e->alive = 0;
			dropped++;
		}
	}
	return dropped;
}

/* ---- residual edges another path already joins ------------------------------- */

struct edge_sorter {
	const struct ctx *c;
	const struct build *b;
};

/* pprof's edge order: |weight| descending, then caller's and callee's names. */
static int edge_cmp(const void *pa, const void *pb, void *arg)
{
	const struct edge_sorter *s = arg;
	const struct edge *l = &s->b->edges[*(const uint32_t *)pa];
	const struct edge *r = &s->b->edges[*(const uint32_t *)pb];
	if (l->weight != r->weight) {
		int64_t lw = go_abs(l->weight), rw = go_abs(r->weight);
		if (lw != rw)
			return lw > rw ? -1 : 1;
	}
	const struct pd_pprof_nodes *nd = &s->c->nodes;
	int c = pd_pprof_bytes_cmp(nd->names[l->from], nd->name_len[l->from], nd->names[r->from],
				   nd->name_len[r->from]);
	if (c)
		return c;
	return pd_pprof_bytes_cmp(nd->names[l->to], nd->name_len[l->to], nd->names[r->to],
				  nd->name_len[r->to]);
}

static void sort_edges(const struct ctx *c, const struct build *b, uint32_t *idx, size_t n)
{
	struct edge_sorter s = {c, b};
	qsort_r(idx, n, sizeof(*idx), edge_cmp, &s);
}

/* Whether e's caller reaches e's callee along callers of the callee without e:
 * a walk up the alive in-edges from the callee. */
static int redundant(const struct build *b, const uint32_t *in_off, const uint32_t *in_edge,
                     uint32_t ei, uint8_t *seen, uint32_t *queue)
{
	const struct edge *e = &b->edges[ei];
	size_t head = 0, tail = 0;
	int found = 0;
	memset(seen, 0, b->nn ? b->nn : 1);
	seen[e->to] = 1;
	queue[tail++] = e->to;
	while (head < tail && !found) {
		uint32_t n = queue[head++];
		for (uint32_t k = in_off[n]; k < in_off[n + 1]; k++) {
			const struct edge *ie = &b->edges[in_edge[k]];
			if (!ie->alive || in_edge[k] == ei || seen[ie->from])
				continue;
			if (ie->from == e->from) {
				found = 1;
				break;
			}
			seen[ie->from] = 1;
			queue[tail++] = ie->from;
		}
	}
	return found;
}

static int remove_redundant(const struct ctx *c, struct build *b, const uint32_t *order,
                            size_t norder)
{
	size_t nn = b->nn ? b->nn : 1;
	uint32_t *in_off = calloc(nn + 1, sizeof(*in_off));
	uint32_t *in_edge = malloc((b->nedges ? b->nedges : 1) * sizeof(*in_edge));
	uint32_t *fill = calloc(nn, sizeof(*fill));
	uint8_t *seen = malloc(nn);
	uint32_t *queue = malloc(nn * sizeof(*queue));
	int rc = PD_ENOMEM;
	if (!in_off || !in_edge || !fill || !seen || !queue)
		goto out;
	for (size_t i = 0; i < b->nedges; i++)
		if (b->edges[i].alive)
			in_off[b->edges[i].to + 1]++;
	for (size_t i = 0; i < b->nn; i++)
		in_off[i + 1] += in_off[i];
	for (size_t i = 0; i < b->nedges; i++) {
		uint32_t t = b->edges[i].to;
		if (b->edges[i].alive)
			in_edge[in_off[t] + fill[t]++] = (uint32_t)i;
	}
	for (size_t i = b->nn; i-- > 0;)
		sort_edges(c, b, in_edge + in_off[i], in_off[i + 1] - in_off[i]);
	for (size_t i = norder; i-- > 0;) {
		uint32_t n = order[i];
		for (uint32_t k = in_off[n + 1]; k-- > in_off[n];) {
			struct edge *e = &b->edges[in_edge[k]];
			if (!e->alive)
				continue;
			if (!e->residual)
				break;
			if (redundant(b, in_off, in_edge, in_edge[k], seen, queue))
				e->alive = 0;
		}
	}
	rc = 0;
out:
	free(in_off);
	free(in_edge);
	free(fill);
	free(seen);
	free(queue);
	return rc;
}

/* ---- tags of each sample ---------------------------------------------------------- */

struct lpart {
	char *s;
	size_t n;
};

static int lpart_cmp(const void *a, const void *b)
{
	const struct lpart *x = a, *y = b;
	return pd_pprof_bytes_cmp(x->s, x->n, y->s, y->n);
}

static void labels_fini(struct ctx *c)
{
	size_t n = c->p->pb->n_sample;
	for (size_t i = 0; c->labels && i < n; i++)
		free(c->labels[i]);
	for (size_t i = 0; c->bytes && i < n; i++) {
		for (size_t k = 0; c->nbytes && k < c->nbytes[i]; k++)
			free(c->bytes[i][k]);
		free(c->bytes[i]);
	}
	free(c->labels);
	free(c->label_len);
	free(c->bytes);
	free(c->nbytes);
}

/* The string labels of each sample as pprof joins them ("key:value" sorted,
 * pprof::base left out), and its "bytes" values as pprof names them. */
static int labels_build(struct ctx *c)
{
	const pb_profile *pb = c->p->pb;
	size_t n = pb->n_sample ? pb->n_sample : 1;
	c->labels = calloc(n, sizeof(*c->labels));
	c->label_len = calloc(n, sizeof(*c->label_len));
	c->bytes = calloc(n, sizeof(*c->bytes));
	c->nbytes = calloc(n, sizeof(*c->nbytes));
	if (!c->labels || !c->label_len || !c->bytes || !c->nbytes)
		return PD_ENOMEM;
	for (size_t si = 0; si < pb->n_sample; si++) {
		const pb_sample *s = pb->sample[si];
		size_t ns = 0, nb = 0;
		for (size_t k = 0; k < s->n_label; k++) {
			const pb_label *l = s->label[k];
			if (l->str && !pd_pprof_str_is(c->p, l->key, "pprof::base"))
				ns++;
			else if (!l->str && pd_pprof_str_is(c->p, l->key, "bytes"))
				nb++;
		}
		if (ns) {
			struct lpart *parts = calloc(ns, sizeof(*parts));
			size_t len = 0, j = 0;
			if (!parts)
				return PD_ENOMEM;
			for (size_t k = 0; k < s->n_label; k++) {
				const pb_label *l = s->label[k];
				if (!l->str || pd_pprof_str_is(c->p, l->key, "pprof::base"))
					continue;
				const char *key = pd_pprof_str(c->p, l->key);
				const char *v = pd_pprof_str(c->p, l->str);
				size_t kl = pd_pprof_str_len(c->p, l->key), vl = pd_pprof_str_len(c->p, l->str);
				parts[j].s = malloc(kl + vl + 2);
				if (!parts[j].s)
					break;
				memcpy(parts[j].s, key, kl);
				parts[j].s[kl] = ':';
				memcpy(parts[j].s + kl + 1, v, vl);
				parts[j].s[kl + 1 + vl] = '\0';
				parts[j].n = kl + 1 + vl;
				len += kl + vl + 3;
				j++;
			}
			char *joined = j == ns ? malloc(len + 1) : NULL;
			size_t o = 0;
			if (joined) {
				qsort(parts, ns, sizeof(*parts), lpart_cmp);
				for (size_t q = 0; q < ns; q++) {
					if (q) {
						memcpy(joined + o, "\\n", 2);
						o += 2;
					}
					memcpy(joined + o, parts[q].s, parts[q].n);
					o += parts[q].n;
				}
				joined[o] = '\0';
			}
			for (size_t q = 0; q < j; q++)
				free(parts[q].s);
			free(parts);
			if (!joined)
				return PD_ENOMEM;
			c->label_len[si] = o;
			c->labels[si] = joined;
			c->has_tags = 1;
		}
		if (nb) {
			c->bytes[si] = calloc(nb, sizeof(char *));
			if (!c->bytes[si])
				return PD_ENOMEM;
			for (size_t k = 0; k < s->n_label; k++) {
				const pb_label *l = s->label[k];
				if (l->str || !pd_pprof_str_is(c->p, l->key, "bytes"))
					continue;
				char buf[64];
				const char *unit = l->num_unit ? pd_pprof_str(c->p, l->num_unit) : "bytes";
				pd_pprof_format_value(l->num, *unit ? unit : "bytes", buf, sizeof(buf));
				c->bytes[si][c->nbytes[si]] = strdup(buf);
				if (!c->bytes[si][c->nbytes[si]])
					return PD_ENOMEM;
				c->nbytes[si]++;
			}
			c->has_tags = 1;
		}
	}
	return 0;
}

/* ---- the graph ----------------------------------------------------------------- */

struct graph_priv {
	char **names;
	size_t count;
};

static int finish(struct ctx *c, struct build *b, const uint32_t *order, size_t norder,
                  struct pd_pprof_graph *g)
{
	size_t nn = b->nn ? b->nn : 1;
	uint32_t *pos = malloc(nn * sizeof(*pos));
	uint32_t *eidx = malloc((b->nedges ? b->nedges : 1) * sizeof(*eidx));
	g->nodes = calloc(norder ? norder : 1, sizeof(*g->nodes));
	if (!pos || !eidx || !g->nodes) {
		free(pos);
		free(eidx);
		return PD_ENOMEM;
	}
	g->shown = 0;
	memset(pos, 0xff, nn * sizeof(*pos));
	for (size_t i = 0; i < norder; i++) {
		uint32_t n = order[i];
		pos[n] = (uint32_t)i;
		g->nodes[i] = (struct pd_pprof_graph_node){c->nodes.names[n], b->flat[n], b->cum[n],
							   c->nodes.name_len[n]};
		g->shown = pd_add64(g->shown, b->flat[n]);
	}
	g->nnodes = norder;
	size_t ne = 0;
	/* an edge to a function whose values cancelled out (a diff) has no box to go to:
	 * pprof draws it to a box "N0" that does not exist; it is left out here */
	for (size_t i = 0; i < b->nedges; i++)
		if (b->edges[i].alive && pos[b->edges[i].from] != UINT32_MAX &&
		    pos[b->edges[i].to] != UINT32_MAX)
			eidx[ne++] = (uint32_t)i;
	sort_edges(c, b, eidx, ne);
	g->edges = calloc(ne ? ne : 1, sizeof(*g->edges));
	if (!g->edges) {
		free(pos);
		free(eidx);
		return PD_ENOMEM;
	}
	for (size_t i = 0; i < ne; i++) {
		const struct edge *e = &b->edges[eidx[i]];
		g->edges[i] = (struct pd_pprof_graph_edge){pos[e->from], pos[e->to], e->weight,
		                                           e->residual, e->inlined};
	}
	g->nedges = ne;
	free(pos);
	free(eidx);
	return 0;
}

int pd_pprof_graph(const struct pd_pprof_profile *p, int idx, const struct pd_pprof_graph_opts *opts,
                   struct pd_pprof_graph **out, struct pd_err *err)
{
	const pb_profile *pb = p->pb;
	struct pd_pprof_graph_opts o = {PD_PPROF_DEFAULT_NODECOUNT, PD_PPROF_DEFAULT_NODEFRACTION,
	                                PD_PPROF_DEFAULT_EDGEFRACTION, 0};
	struct ctx c = {0};
	struct build b = {0}, nb = {0};
	struct pd_pprof_graph *g = NULL;
	struct graph_priv *priv = NULL;
	uint32_t *order = NULL, *ntags = NULL;
	uint8_t *kept = NULL;
	size_t norder = 0;
	int rc;

	*out = NULL;
	if (opts)
		o = *opts;
	if (idx < 0 || (size_t)idx >= pb->n_sample_type)
		return pd_err_set(err, PD_EINVAL, "sample index %d out of range (profile has %zu sample types)",
		                  idx, pb->n_sample_type);
	if (o.nodecount < 0 || !(o.nodefraction >= 0 && o.nodefraction <= 1) ||
	    !(o.edgefraction >= 0 && o.edgefraction <= 1))
		return pd_err_set(err, PD_EINVAL,
		                  "nodecount must be at least 0 and nodefraction and edgefraction "
		                  "between 0 and 1");
	c.p = p;
	c.idx = idx;
	if ((rc = pd_pprof_nodes_build(p, &c.nodes, err)))
		return rc;
	size_t nn = c.nodes.count ? c.nodes.count : 1;
	c.stamp = calloc(nn, sizeof(*c.stamp));
	order = malloc(nn * sizeof(*order));
	kept = malloc(nn);
	ntags = calloc(nn, sizeof(*ntags));
	g = calloc(1, sizeof(*g));
	priv = calloc(1, sizeof(*priv));
	if (!c.stamp || !order || !kept || !ntags || !g || !priv)
		goto nomem;
	if (o.nodecount > 0 && labels_build(&c))
		goto nomem;

	/* 1: the whole graph, for the total and the node cut */
	if (build_graph(&c, NULL, o.nodecount > 0, &b))
		goto nomem;
	int64_t total_flat = 0;
	for (size_t i = 0; i < b.nn; i++)
		total_flat = pd_add64(total_flat, b.flat[i]);
	int64_t node_cut = cutoff_of(total_flat, o.nodefraction);
	int64_t edge_cut = cutoff_of(total_flat, o.edgefraction);
	if (node_cut > 0) {
		size_t nk = 0;
		for (size_t i = 0; i < b.nn; i++) {
			kept[i] = b.present[i] && go_abs(b.cum[i]) >= node_cut;
			nk += kept[i];
		}
		size_t all = node_total(&b);
		if (nk != all) {
			g->dropped_nodes = all - nk;
			if (build_graph(&c, kept, o.nodecount > 0, &nb))
				goto nomem;
			build_fini(&b);
			b = nb;
			memset(&nb, 0, sizeof(nb));
		}
	}
	g->node_count = node_total(&b);

	/* 2: at most nodecount nodes, by entropy, each counted with its tags */
	if (sort_nodes(&c, &b, order, &norder))
		goto nomem;
	if (o.nodecount > 0) {
		trim_edges(&b, edge_cut);
		count_tags(&b, node_cut, ntags);
		size_t max = (size_t)o.nodecount, count = 0;
		for (size_t i = 0; i < norder; i++) {
			uint32_t t = ntags[order[i]] > MAX_NODELETS ? MAX_NODELETS : ntags[order[i]];
			count += t + 1;
			if (count >= max) {
				max = i + 1;
				break;
			}
		}
		if (max < norder) {
			memset(kept, 0, nn);
			for (size_t i = 0; i < max; i++)
				kept[order[i]] = 1;
			if (build_graph(&c, kept, 0, &nb))
				goto nomem;
			build_fini(&b);
			b = nb;
			memset(&nb, 0, sizeof(nb));
			if (sort_nodes(&c, &b, order, &norder))
				goto nomem;
		}
	}

	/* 3: the edge cut, then residual edges that other paths make redundant */
	g->dropped_edges = trim_edges(&b, edge_cut);
	if (remove_redundant(&c, &b, order, norder))
		goto nomem;
	if (finish(&c, &b, order, norder, g))
		goto nomem;
	g->opts = o;
	g->node_cutoff = node_cut;
	g->edge_cutoff = edge_cut;
	g->total = o.total ? o.total : pd_pprof_total(p, idx);
	g->sample_index = idx;
	g->sample_type = pd_pprof_sample_type(p, (size_t)idx);
	g->unit = pd_pprof_sample_unit(p, (size_t)idx);
	priv->names = c.nodes.names;
	priv->count = c.nodes.count;
	c.nodes.names = NULL;
	c.nodes.count = 0;
	g->priv = priv;
	*out = g;
	rc = 0;
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory building the call graph");
	if (g) {
		free(g->nodes);
		free(g->edges);
	}
	free(g);
	free(priv);
out:
	build_fini(&b);
	build_fini(&nb);
	labels_fini(&c);
	pd_pprof_nodes_fini(&c.nodes);
	free(c.stamp);
	free(order);
	free(kept);
	free(ntags);
	return rc;
}

void pd_pprof_graph_destroy(struct pd_pprof_graph *g)
{
	if (!g)
		return;
	struct graph_priv *priv = g->priv;
	if (priv) {
		for (size_t i = 0; i < priv->count; i++)
			free(priv->names[i]);
		free(priv->names);
		free(priv);
	}
	free(g->nodes);
	free(g->edges);
	free(g);
}
