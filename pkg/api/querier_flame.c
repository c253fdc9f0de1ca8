/* querier_flame.c: the merging methods of Pyroscope's query API:
 * SelectMergeStacktraces (a flame graph in Pyroscope's "levels" form),
 * SelectMergeProfile (the merged pprof of one sample type) and Diff (two flame
 * graphs side by side). A merge takes every profile of the picked series in the
 * range (at most --query.max-merge-profiles, the earliest first), through
 * pd_storage_merge_ranges. The flame graph is the call tree by function name
 * (pd_pprof_flame), children in name order; past max_nodes nodes, the children
 * whose total is below the max_nodes-th largest total are summed into one
 * "other" node under their parent, and so are those of that total past the
 * first max_nodes kept (in depth-first order). Each level lists its nodes left to right, 4
 * numbers each: the gap from the end of the previous node of the level, total,
 * self, index into names (names[0] is "total", the root); a node's own self
 * comes first, its children after it. Diff's levels have 7 numbers per node:
 * gap, total and self of the left side, the same of the right, the name. */
#include <stdlib.h>
#include <string.h>

#include "google_profile.pb-c.h"
#include "profd/symbolize.h"
#include "querier_int.h"

/* ---- merging ------------------------------------------------------------------ */

struct merge_ctx {
	struct pd_pprof_merger *mg;
	size_t added;
	uint64_t bytes, max_bytes;
	struct pd_err err;
	int rc;
};

static int merge_emit(void *ctx, struct pd_pprof_profile *p, size_t count, int64_t first_t,
		      int64_t last_t, size_t bytes)
{
	struct merge_ctx *m = ctx;
	(void)count;
	(void)first_t;
	(void)last_t;
	int rc = pd_pprof_merger_add(m->mg, p, &m->err);
	pd_pprof_destroy(p);
	if (rc) {
		m->rc = rc;
		return rc;
	}
	m->added++;
	m->bytes += bytes;
	return m->max_bytes && m->bytes > m->max_bytes ? 1 : 0; /* 1: stop, keep what is in */
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

int querier_merge(struct qcall *c, const char *selector, const struct qtype *t, int64_t mint,
		  int64_t maxt, struct pd_pprof_profile **out)
{
	struct pd_api_server *s = c->r->srv;
	struct qset set;
	struct pd_storage_merge_range *rg = NULL;
	int64_t *all = NULL;
	struct merge_ctx m = {.max_bytes = s->o.max_merge_bytes};
	int ret = -1;
	*out = NULL;
	if (querier_select(c, selector, t, mint, maxt, 0, &set))
		return -1;
	size_t total = 0;
	for (size_t i = 0; i < set.n; i++)
		total += set.v[i].s->nts;
	if (!total) {
		ret = 0;
		goto out;
	}
	/* the earliest max_merge_profiles: every series up to the time of the last */
	int64_t upto = maxt;
	size_t maxp = s->o.max_merge_profiles;
	if (maxp && total > maxp) {
		if (!(all = malloc(total * sizeof(*all))))
			goto oom;
		size_t k = 0;
		for (size_t i = 0; i < set.n; i++)
			for (size_t j = 0; j < set.v[i].s->nts; j++)
				all[k++] = set.v[i].s->ts[j];
		qsort(all, total, sizeof(*all), i64_cmp);
		upto = all[maxp - 1];
		pd_log_debug("api", "a query API merge was cut at max_merge_profiles",
			     "profiles=%zu max=%zu", total, maxp);
	}
	if (!(rg = calloc(set.n, sizeof(*rg))))
		goto oom;
	for (size_t i = 0; i < set.n; i++)
		rg[i] = (struct pd_storage_merge_range){set.v[i].s->labels, set.v[i].s->nlabels, mint,
						     upto};
	int rc = pd_pprof_merger_create(&m.mg, &m.err);
	if (rc)
		goto oom;
	rc = pd_storage_merge_ranges(s->o.db, rg, set.n, merge_emit, &m, &m.err);
	if (rc < 0 || m.rc) {
		querier_fail_store(c, "merging profiles", m.rc ? m.rc : rc, &m.err);
		goto out;
	}
	if (m.added) {
		struct pd_pprof_merger *mg = m.mg;
		m.mg = NULL;
		if ((rc = pd_pprof_merger_finish(mg, out, &m.err))) {
			querier_fail_store(c, "merging profiles", rc, &m.err);
			goto out;
		}
		/* native frames get their names, as in /api/v1/query; a symbolizer that
		 * fails leaves the merge as it is (logged) */
		struct pd_pprof_profile *sym = NULL;
		struct pd_symbolize_result res;
		if (api_symbolize_merge(c->r, c->w, *out, &sym, &res, &c->sym_deadline) == 0 && sym) {
			pd_pprof_destroy(*out);
			*out = sym;
		}
	}
	ret = 0;
	goto out;
oom:
	querier_fail(c, "internal", "out of memory");
out:
	pd_pprof_merger_destroy(m.mg);
	free(rg);
	free(all);
	querier_set_fini(&set);
	return ret;
}

int querier_type_index(const struct pd_pprof_profile *p, const struct qtype *t)
{
	for (size_t i = 0; i < pd_pprof_sample_type_count(p); i++)
		if (strcmp(pd_pprof_sample_type(p, i), t->type) == 0 &&
		    (!*t->unit || strcmp(pd_pprof_sample_unit(p, i), t->unit) == 0))
			return (int)i;
	return -1;
}

/* ---- the combined call tree ---------------------------------------------------- */

/* A node of one call tree (left only) or of two side by side. */
struct cnode {
	const char *name;
	size_t name_len;
	int64_t lt, ls, rt, rs; /* total and self, left and right */
	struct cnode *kids;
	size_t nkids;
};

static int flame_kid_cmp(const void *x, const void *y)
{
	const struct pd_pprof_flame_node *a = *(const struct pd_pprof_flame_node *const *)x;
	const struct pd_pprof_flame_node *b = *(const struct pd_pprof_flame_node *const *)y;
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int d = memcmp(a->name, b->name, n);
	return d ? d : a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

struct cwork {
	struct cnode *dst;
	const struct pd_pprof_flame_node *l, *r;
};

/* The tree of l (and r, when not NULL) by function name; nodes in a. */
static struct cnode *combine(struct pd_arena *a, const struct pd_pprof_flame_node *l,
			     const struct pd_pprof_flame_node *r, size_t *count)
{
	struct cnode *root = pd_arena_calloc(a, 1, sizeof(*root));
	size_t cap = 256, n = 0;
	struct cwork *st = malloc(cap * sizeof(*st));
	const struct pd_pprof_flame_node **lk = NULL, **rk = NULL;
	size_t kcap = 0;
	if (!root || !st)
		goto fail;
	*count = 1;
	st[n++] = (struct cwork){root, l, r};
	while (n) {
		struct cwork wk = st[--n];
		struct cnode *d = wk.dst;
		size_t nl = wk.l ? wk.l->nchildren : 0, nr = wk.r ? wk.r->nchildren : 0;
		if (wk.l) {
			d->lt = wk.l->total;
			d->ls = wk.l->self;
			d->name = wk.l->name;
			d->name_len = wk.l->name_len;
		}
		if (wk.r) {
			d->rt = wk.r->total;
			d->rs = wk.r->self;
			d->name = wk.r->name;
			d->name_len = wk.r->name_len;
		}
		if (!nl && !nr)
			continue;
		if (nl + nr > kcap) {
			size_t nc = (nl + nr) * 2;
			void *a1 = realloc(lk, nc * sizeof(*lk));
			if (!a1)
				goto fail;
			lk = a1;
			void *a2 = realloc(rk, nc * sizeof(*rk));
			if (!a2)
				goto fail;
			rk = a2;
			kcap = nc;
		}
		for (size_t i = 0; i < nl; i++)
			lk[i] = &wk.l->children[i];
		for (size_t i = 0; i < nr; i++)
			rk[i] = &wk.r->children[i];
		qsort(lk, nl, sizeof(*lk), flame_kid_cmp);
		qsort(rk, nr, sizeof(*rk), flame_kid_cmp);
		if (!(d->kids = pd_arena_calloc(a, nl + nr, sizeof(*d->kids))))
			goto fail;
		size_t i = 0, j = 0, k = 0;
		while (i < nl || j < nr) {
			int cmp = i == nl ? 1 : j == nr ? -1 : flame_kid_cmp(&lk[i], &rk[j]);
			const struct pd_pprof_flame_node *x = cmp <= 0 ? lk[i] : NULL;
			const struct pd_pprof_flame_node *y = cmp >= 0 ? rk[j] : NULL;
			i += cmp <= 0;
			j += cmp >= 0;
			if (n == cap) {
				size_t nc = cap * 2;
				void *ns = realloc(st, nc * sizeof(*st));
				if (!ns)
					goto fail;
				st = ns;
				cap = nc;
			}
			st[n++] = (struct cwork){&d->kids[k++], x, y};
		}
		d->nkids = k;
		*count += k;
	}
	free(st);
	free(lk);
	free(rk);
	return root;
fail:
	free(st);
	free(lk);
	free(rk);
	return NULL;
}

/* ---- levels -------------------------------------------------------------------- */

struct level {
	int64_t *v;
	size_t n, cap;
};

struct fg {
	int diff;     /* 7 numbers a node, else 4 */
	struct level *lv;
	size_t nlv, caplv;
	const char **names;
	size_t nnames, capnames;
	/* names' indexes by hash: open addressing over slots (a power of 2) */
	size_t *slot;
	size_t nslots;
	size_t *name_len;
	int64_t max_self;
	struct pd_arena *a;
};

static size_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return (size_t)h;
}

/* The index of name in names, added if new; (size_t)-1 when out of memory. */
static size_t name_index(struct fg *g, const char *name, size_t len)
{
	size_t mask = g->nslots - 1, h = hash(name, len) & mask;
	while (g->slot[h] != (size_t)-1) {
		size_t k = g->slot[h];
		if (g->name_len[k] == len && memcmp(g->names[k], name, len) == 0)
			return k;
		h = (h + 1) & mask;
	}
	if (g->nnames == g->capnames)
		return (size_t)-1; /* sized for every node: cannot happen */
	g->names[g->nnames] = name;
	g->name_len[g->nnames] = len;
	g->slot[h] = g->nnames;
	return g->nnames++;
}

static int level_push(struct fg *g, size_t depth, const int64_t *vals, size_t n)
{
	while (depth >= g->nlv) {
		if (g->nlv == g->caplv) {
			size_t nc = g->caplv ? g->caplv * 2 : 64;
			void *nv = realloc(g->lv, nc * sizeof(*g->lv));
			if (!nv)
				return -1;
			g->lv = nv;
			g->caplv = nc;
		}
		memset(&g->lv[g->nlv++], 0, sizeof(*g->lv));
	}
	struct level *l = &g->lv[depth];
	if (l->n + n > l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		while (nc < l->n + n)
			nc *= 2;
		void *nv = realloc(l->v, nc * sizeof(*l->v));
		if (!nv)
			return -1;
		l->v = nv;
		l->cap = nc;
	}
	memcpy(l->v + l->n, vals, n * sizeof(*vals));
	l->n += n;
	return 0;
}

static void fg_fini(struct fg *g)
{
	for (size_t i = 0; i < g->nlv; i++)
		free(g->lv[i].v);
	free(g->lv);
	free(g->names);
	free(g->slot);
	free(g->name_len);
	memset(g, 0, sizeof(*g));
}

static int desc_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x > y ? -1 : x < y;
}

/* The value that v[k] would hold were v sorted in descending order (k < n); v is
 * reordered. Three-way partitions around a median of three, so runs of equal
 * values cost one pass; a range that shrinks too slowly is sorted instead. */
static int64_t kth_largest(int64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n, rounds = 0;
	while (hi - lo > 16) {
		if (++rounds > 64) {
			qsort(v + lo, hi - lo, sizeof(*v), desc_cmp);
			return v[k];
		}
		int64_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
		int64_t pv = a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
		/* [lo, lt) > pv, [lt, i) == pv, (gt, hi) < pv */
		size_t lt = lo, i = lo, gt = hi;
		while (i < gt) {
			if (v[i] > pv) {
				int64_t t = v[lt];
				v[lt++] = v[i];
				v[i++] = t;
			} else if (v[i] < pv) {
				int64_t t = v[--gt];
				v[gt] = v[i];
				v[i] = t;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pv;
	}
	qsort(v + lo, hi - lo, sizeof(*v), desc_cmp);
	return v[k];
}

/* The smallest total a node keeps when at most max_nodes are to be kept, and how
 * many of the nodes of that total may be kept (*ties; SIZE_MAX: all). */
static int min_value(const struct cnode *root, size_t count, size_t max_nodes, int64_t *out,
		     size_t *ties)
{
	*out = 0;
	*ties = SIZE_MAX;
	if (count - 1 <= max_nodes)
		return 0;
	int64_t *v = malloc((count - 1) * sizeof(*v));
	const struct cnode **st = malloc(count * sizeof(*st));
	if (!v || !st) {
		free(v);
		free(st);
		return -1;
	}
	size_t n = 0, ns = 0;
	st[ns++] = root;
	while (ns) {
		const struct cnode *x = st[--ns];
		for (size_t i = 0; i < x->nkids; i++) {
			const struct cnode *k = &x->kids[i];
			v[n++] = k->lt > k->rt ? k->lt : k->rt;
			st[ns++] = k;
		}
	}
	*out = kth_largest(v, n, max_nodes - 1);
	/* nodes of that total beyond max_nodes go to "other" too, the first kept */
	size_t above = 0;
	for (size_t i = 0; i < n; i++)
		above += v[i] > *out;
	*ties = max_nodes - above;
	free(v);
	free(st);
	return 0;
}

struct ework {
	const struct cnode *n; /* NULL: "other", with ol and or */
	int64_t ol, orr;
	size_t depth;
	int64_t xl, xr;
};

/* Fills g's levels from root, keeping nodes whose total reaches min_val. */
static int build_levels(struct fg *g, const struct cnode *root, size_t count, int64_t min_val,
			size_t ties)
{
	size_t cap = 256, n = 0;
	struct ework *st = malloc(cap * sizeof(*st));
	g->capnames = count + 2;
	g->names = calloc(g->capnames, sizeof(*g->names));
	g->name_len = calloc(g->capnames, sizeof(*g->name_len));
	for (g->nslots = 64; g->nslots < g->capnames * 2; g->nslots *= 2)
		;
	g->slot = malloc(g->nslots * sizeof(*g->slot));
	if (!st || !g->names || !g->name_len || !g->slot)
		goto fail;
	memset(g->slot, 0xff, g->nslots * sizeof(*g->slot));
	name_index(g, "total", 5);
	st[n++] = (struct ework){root, 0, 0, 0, 0, 0};
	int top = 1;
	while (n) {
		struct ework e = st[--n];
		const struct cnode *x = e.n;
		int64_t lt = x ? x->lt : e.ol, ls = x ? x->ls : e.ol;
		int64_t rt = x ? x->rt : e.orr, rs = x ? x->rs : e.orr;
		size_t ni = top ? 0 : x ? name_index(g, x->name, x->name_len) : name_index(g, "other", 5);
		top = 0;
		if (ni == (size_t)-1)
			goto fail;
		if (ls > g->max_self)
			g->max_self = ls;
		if (rs > g->max_self)
			g->max_self = rs;
		int64_t vals[7];
		size_t nv;
		if (g->diff) {
			int64_t v7[7] = {e.xl, lt, ls, e.xr, rt, rs, (int64_t)ni};
			memcpy(vals, v7, sizeof v7);
			nv = 7;
		} else {
			int64_t v4[4] = {e.xl, lt, ls, (int64_t)ni};
			memcpy(vals, v4, sizeof v4);
			nv = 4;
		}
		if (level_push(g, e.depth, vals, nv))
			goto fail;
		if (!x || !x->nkids)
			continue;
		/* the kept children left to right after the node's self, then "other" */
		int64_t xl = e.xl + ls, xr = e.xr + rs, otl = 0, otr = 0;
		size_t first = n;
		for (size_t i = 0; i < x->nkids; i++) {
			const struct cnode *k = &x->kids[i];
			int64_t kv = k->lt > k->rt ? k->lt : k->rt;
			int keep = kv > min_val || (kv == min_val && ties > 0);
			if (keep && kv == min_val && ties != SIZE_MAX)
				ties--;
			if (!keep) {
				otl += k->lt;
				otr += k->rt;
				continue;
			}
			if (n + 1 >= cap) {
				size_t nc = cap * 2;
				void *ns = realloc(st, nc * sizeof(*st));
				if (!ns)
					goto fail;
				st = ns;
				cap = nc;
			}
			st[n++] = (struct ework){k, 0, 0, e.depth + 1, xl, xr};
			xl += k->lt;
			xr += k->rt;
		}
		if (otl || otr) {
			if (n + 1 >= cap) {
				size_t nc = cap * 2;
				void *ns = realloc(st, nc * sizeof(*st));
				if (!ns)
					goto fail;
				st = ns;
				cap = nc;
			}
			st[n++] = (struct ework){NULL, otl, otr, e.depth + 1, xl, xr};
		}
		/* popped left to right: reverse what was pushed */
		for (size_t i = first, j = n - 1; i < j; i++, j--) {
			struct ework tmp = st[i];
			st[i] = st[j];
			st[j] = tmp;
		}
	}
	free(st);
	/* offsets as the gap from the end of the previous node of the level */
	size_t step = g->diff ? 7 : 4;
	for (size_t d = 0; d < g->nlv; d++) {
		struct level *l = &g->lv[d];
		for (int side = 0; side < (g->diff ? 2 : 1); side++) {
			size_t col = side ? 3 : 0;
			int64_t prev = 0;
			for (size_t i = 0; i + step <= l->n; i += step) {
				l->v[i + col] -= prev;
				prev += l->v[i + col] + l->v[i + col + 1];
			}
		}
	}
	return 0;
fail:
	free(st);
	return -1;
}

/* ---- the tree format ------------------------------------------------------------ */

static int put_uvarint(struct pd_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	return pd_buf_append(b, tmp, n);
}

static int is_other(const struct cnode *k)
{
	return k->name_len == 5 && memcmp(k->name, "other", 5) == 0;
}

/* k's name sorts before "other" (byte order, a prefix first). */
static int before_other(const struct cnode *k)
{
	size_t n = k->name_len < 5 ? k->name_len : 5;
	int d = memcmp(k->name, "other", n);
	return d ? d < 0 : k->name_len < 5;
}

/* root's tree (left side) in Pyroscope's tree format (its pkg/model tree.go),
 * appended to b: depth first from a nameless root, each node as uvarint name
 * length, the name, uvarint self, uvarint number of children, the children
 * following in reverse order (the last child first). Past max_nodes nodes,
 * children whose total is below the max_nodes-th largest total are summed into
 * an "other" child (added to one of that name). Nothing for an empty tree. */
static int tree_bytes(struct pd_arena *a, const struct cnode *root, size_t count, size_t max_nodes,
                      struct pd_buf *b)
{
	int64_t min_val = 0;
	size_t ties = 0, n = 0, cap = 256;
	if (!root->nkids)
		return 0;
	if (min_value(root, count, max_nodes, &min_val, &ties))
		return PD_ENOMEM;
	const struct cnode **st = malloc(cap * sizeof(*st));
	if (!st)
		return PD_ENOMEM;
	int rc = 0;
	st[n++] = root;
	while (n && !rc) {
		const struct cnode *x = st[--n];
		size_t len = x == root ? 0 : x->name_len;
		if ((rc = put_uvarint(b, len)) || (len && (rc = pd_buf_append(b, x->name, len))) ||
		    (rc = put_uvarint(b, (uint64_t)x->ls)))
			break;
		const struct cnode **kept = NULL;
		size_t nk = 0;
		int64_t other = 0;
		if (x->nkids && !(kept = pd_arena_calloc(a, x->nkids + 1, sizeof(*kept)))) {
			rc = PD_ENOMEM;
			break;
		}
		for (size_t i = 0; i < x->nkids; i++) {
			const struct cnode *k = &x->kids[i];
			if (k->lt >= min_val || is_other(k))
				kept[nk++] = k;
			else
				other += k->lt;
		}
		if (other > 0) {
			size_t at = 0;
			while (at < nk && !is_other(kept[at]) && before_other(kept[at]))
				at++;
			struct cnode *o = pd_arena_calloc(a, 1, sizeof(*o));
			if (!o) {
				rc = PD_ENOMEM;
				break;
			}
			if (at < nk && is_other(kept[at])) {
				*o = *kept[at];
			} else {
				memmove(kept + at + 1, kept + at, (nk - at) * sizeof(*kept));
				nk++;
				o->name = "other";
				o->name_len = 5;
			}
			o->lt += other;
			o->ls += other;
			kept[at] = o;
		}
		if ((rc = put_uvarint(b, nk)))
			break;
		if (n + nk > cap) {
			size_t nc = (n + nk) * 2;
			void *ns = realloc(st, nc * sizeof(*st));
			if (!ns) {
				rc = PD_ENOMEM;
				break;
			}
			st = ns;
			cap = nc;
		}
		for (size_t i = 0; i < nk; i++)
			st[n++] = kept[i];
	}
	free(st);
	return rc;
}

/* max_nodes of a request, defaulted and capped by --query.max-flamegraph-nodes. */
static size_t max_nodes_of(const struct qcall *c, int64_t asked)
{
	size_t cap = c->r->srv->o.querier_max_nodes ? c->r->srv->o.querier_max_nodes
						    : QUERIER_DEFAULT_MAX_NODES;
	if (asked <= 0 || (uint64_t)asked > cap)
		return cap;
	return (size_t)asked;
}

/* One side of a flame graph: its merged profile's tree of t, or none. */
struct side {
	struct pd_pprof_profile *p;
	struct pd_pprof_flame *f;
};

static void side_fini(struct side *s)
{
	pd_pprof_flame_destroy(s->f);
	pd_pprof_destroy(s->p);
}

static int side_load(struct qcall *c, const char *what,
		     const Querier__V1__SelectMergeStacktracesRequest *q, struct side *s)
{
	struct qtype t;
	int64_t mint, maxt;
	struct pd_err err = {0};
	memset(s, 0, sizeof(*s));
	if (!q) {
		querier_fail(c, "invalid_argument", "%s is required", what);
		return -1;
	}
	if (querier_type_parse(c, "profile_typeID", q->profile_typeid, &t) ||
	    querier_range(c, q->start, q->end, &mint, &maxt) ||
	    querier_merge(c, q->label_selector, &t, mint, maxt, &s->p))
		return -1;
	int idx = s->p ? querier_type_index(s->p, &t) : -1;
	if (idx < 0)
		return 0;
	int rc = pd_pprof_flame(s->p, idx, &s->f, &err);
	if (rc) {
		querier_fail_store(c, "building the flame graph", rc, &err);
		return -1;
	}
	return 0;
}

/* The levels of l (and r for a diff) into g; -1 after answering. */
static int levels_of(struct qcall *c, struct fg *g, const struct pd_pprof_flame *l,
		     const struct pd_pprof_flame *r, size_t max_nodes)
{
	size_t count = 0;
	struct pd_pprof_flame_node empty = {.name = "total", .name_len = 5};
	const struct cnode *root = combine(g->a, l ? &l->root : &empty, r ? &r->root : NULL, &count);
	int64_t min_val = 0;
	size_t ties = SIZE_MAX;
	if (!root || min_value(root, count, max_nodes, &min_val, &ties) ||
	    build_levels(g, root, count, min_val, ties)) {
		querier_fail(c, "internal", "out of memory building the flame graph");
		return -1;
	}
	return 0;
}

/* The names and levels of g as the response's fields (in g's arena). */
static int fields_of(struct fg *g, char ***names, Querier__V1__Level ***levels)
{
	*names = pd_arena_calloc(g->a, g->nnames ? g->nnames : 1, sizeof(**names));
	*levels = pd_arena_calloc(g->a, g->nlv ? g->nlv : 1, sizeof(**levels));
	Querier__V1__Level *lv = pd_arena_calloc(g->a, g->nlv ? g->nlv : 1, sizeof(*lv));
	if (!*names || !*levels || !lv)
		return -1;
	for (size_t i = 0; i < g->nnames; i++) {
		char *s = pd_arena_strndup(g->a, g->names[i], g->name_len[i]);
		if (!s)
			return -1;
		(*names)[i] = (char *)querier_utf8(g->a, s);
	}
	for (size_t i = 0; i < g->nlv; i++) {
		querier__v1__level__init(&lv[i]);
		lv[i].n_values = g->lv[i].n;
		lv[i].values = g->lv[i].v;
		(*levels)[i] = &lv[i];
	}
	return 0;
}

void querier_select_merge_stacktraces(struct qcall *c, const ProtobufCMessage *req)
{
	const Querier__V1__SelectMergeStacktracesRequest *q = (const void *)req;
	struct side s;
	struct fg g = {0};
	if (side_load(c, "the request", q, &s))
		goto out;
	if (!(g.a = pd_arena_create(0))) {
		querier_fail(c, "internal", "out of memory");
		goto out;
	}
	if (q->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE) {
		struct pd_buf tb;
		pd_buf_init(&tb, 0);
		size_t count = 0;
		const struct cnode *root = s.f ? combine(g.a, &s.f->root, NULL, &count) : NULL;
		if (s.f &&
		    (!root || tree_bytes(g.a, root, count, max_nodes_of(c, q->max_nodes), &tb))) {
			pd_buf_fini(&tb);
			querier_fail(c, "internal", "out of memory building the tree");
			goto out;
		}
		Querier__V1__SelectMergeStacktracesResponse tr =
		    QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
		tr.tree.data = tb.data;
		tr.tree.len = tb.len;
		querier_reply(c, &tr.base);
		pd_buf_fini(&tb);
		goto out;
	}
	if (levels_of(c, &g, s.f, NULL, max_nodes_of(c, q->max_nodes)))
		goto out;
	Querier__V1__FlameGraph fgm = QUERIER__V1__FLAME_GRAPH__INIT;
	if (fields_of(&g, &fgm.names, &fgm.levels)) {
		querier_fail(c, "internal", "out of memory");
		goto out;
	}
	fgm.n_names = g.nnames;
	fgm.n_levels = g.nlv;
	fgm.total = s.f ? s.f->root.total : 0;
	fgm.max_self = g.max_self;
	Querier__V1__SelectMergeStacktracesResponse resp =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	resp.flamegraph = &fgm;
	querier_reply(c, &resp.base);
out:
	pd_arena_destroy(g.a);
	fg_fini(&g);
	side_fini(&s);
}

void querier_diff(struct qcall *c, const ProtobufCMessage *req)
{
	const Querier__V1__DiffRequest *q = (const void *)req;
	struct side l = {0}, r = {0};
	struct fg g = {.diff = 1};
	if (side_load(c, "left", q->left, &l) || side_load(c, "right", q->right, &r))
		goto out;
	if (!(g.a = pd_arena_create(0))) {
		querier_fail(c, "internal", "out of memory");
		goto out;
	}
	int64_t mn = q->left->max_nodes > q->right->max_nodes ? q->left->max_nodes
							      : q->right->max_nodes;
	if (levels_of(c, &g, l.f, r.f, max_nodes_of(c, mn)))
		goto out;
	Querier__V1__FlameGraphDiff fgm = QUERIER__V1__FLAME_GRAPH_DIFF__INIT;
	if (fields_of(&g, &fgm.names, &fgm.levels)) {
		querier_fail(c, "internal", "out of memory");
		goto out;
	}
	fgm.n_names = g.nnames;
	fgm.n_levels = g.nlv;
	fgm.leftticks = l.f ? l.f->root.total : 0;
	fgm.rightticks = r.f ? r.f->root.total : 0;
	fgm.total = fgm.leftticks + fgm.rightticks;
	fgm.max_self = g.max_self;
	Querier__V1__DiffResponse resp = QUERIER__V1__DIFF_RESPONSE__INIT;
	resp.flamegraph = &fgm;
	querier_reply(c, &resp.base);
out:
	pd_arena_destroy(g.a);
	fg_fini(&g);
	side_fini(&l);
	side_fini(&r);
}

/* ---- SelectMergeProfile ---------------------------------------------------------- */

/* p with sample type idx alone (its samples of value 0 left out), encoded. */
static int one_type(const struct pd_pprof_profile *p, int idx, uint8_t **out, size_t *len,
		    struct pd_err *err)
{
	struct pd_pprof_parts parts;
	int rc = pd_pprof_parts_get(p, &parts, err);
	if (rc)
		return rc;
	struct pd_pprof_pvt st = parts.sample_type[idx];
	parts.sample_type = &st;
	parts.nsample_type = 1;
	size_t n = 0;
	for (size_t i = 0; i < parts.nsample; i++) {
		struct pd_pprof_psample s = parts.sample[i];
		if ((size_t)idx >= s.nvalue || s.value[idx] == 0)
			continue;
		s.value = &parts.sample[i].value[idx];
		s.nvalue = 1;
		parts.sample[n++] = s;
	}
	parts.nsample = n;
	parts.default_sample_type = 0;
	rc = pd_pprof_parts_encode(&parts, out, len, err);
	pd_pprof_parts_fini(&parts);
	return rc;
}

void querier_select_merge_profile(struct qcall *c, const ProtobufCMessage *req)
{
	const Querier__V1__SelectMergeProfileRequest *q = (const void *)req;
	struct qtype t;
	int64_t mint, maxt;
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	uint8_t *bytes = NULL;
	size_t len = 0;
	ProtobufCMessage *m = NULL;
	if (querier_type_parse(c, "profile_typeID", q->profile_typeid, &t) ||
	    querier_range(c, q->start, q->end, &mint, &maxt) ||
	    querier_merge(c, q->label_selector, &t, mint, maxt, &p))
		goto out;
	int idx = p ? querier_type_index(p, &t) : -1;
	if (idx >= 0) {
		int rc = one_type(p, idx, &bytes, &len, &err);
		if (rc) {
			querier_fail_store(c, "encoding the merged profile", rc, &err);
			goto out;
		}
	}
	if (!c->json) {
		c->w->status = 200;
		c->w->content_type = "application/proto";
		jputn(c->w, (const char *)bytes, len);
		goto out;
	}
	/* the JSON form of google.v1.Profile: the bytes read back as that message */
	m = protobuf_c_message_unpack(&google__v1__profile__descriptor, NULL, len, bytes);
	if (!m) {
		querier_fail(c, "internal", "the merged profile could not be read back");
		goto out;
	}
	querier_reply(c, m);
out:
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
	free(bytes);
	pd_pprof_destroy(p);
}
