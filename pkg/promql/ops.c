/* ops.c: PromQL's binary operators between scalars and vectors (one-to-one and
 * grouped vector matching with on/ignoring/group_left/group_right, comparison
 * filters and bool, set operators) and its aggregation operators (sum, avg, min,
 * max, count, stddev, stdvar, topk, bottomk, quantile, count_values, group). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_int.h"

/* ---- operators ------------------------------------------------------------------- */

/* The result of op on a and b; *keep 0 when a comparison is false. */
double pd_pq_binop(int op, double a, double b, int *keep)
{
	*keep = 1;
	switch (op) {
	case PQ_OP_ADD:
		return a + b;
	case PQ_OP_SUB:
		return a - b;
	case PQ_OP_MUL:
		return a * b;
	case PQ_OP_DIV:
		return a / b;
	case PQ_OP_MOD:
		return fmod(a, b);
	case PQ_OP_POW:
		return pow(a, b);
	case PQ_OP_ATAN2:
		return atan2(a, b);
	case PQ_OP_EQL:
		*keep = a == b;
		return a;
	case PQ_OP_NEQ:
		*keep = a != b;
		return a;
	case PQ_OP_LSS:
		*keep = a < b;
		return a;
	case PQ_OP_LTE:
		*keep = a <= b;
		return a;
	case PQ_OP_GTR:
		*keep = a > b;
		return a;
	case PQ_OP_GTE:
		*keep = a >= b;
		return a;
	}
	return 0;
}

int pd_pq_drops_name(int op)
{
	return op >= PQ_OP_ADD && op <= PQ_OP_ATAN2;
}

int pd_pq_is_cmp(int op)
{
	return op >= PQ_OP_EQL && op <= PQ_OP_GTE;
}

static int in_list(char **l, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i], name))
			return 1;
	return 0;
}

/* The labels of ls that vector matching compares: the on labels, or all but the
 * ignoring labels and __name__. */
static int signature(struct eval *ev, const struct pd_pq_node *n, const struct pd_labels *ls,
                     struct pd_labels **out)
{
	struct pd_err e;
	if (pd_labels_builder_reset(ev->lb, NULL))
		return pd_pq_oom(ev);
	for (size_t i = 0; i < pd_labels_len(ls); i++) {
		const struct pd_label *l = pd_labels_at(ls, i);
		int keep = n->matching == 1 ? in_list(n->labels, n->nlabels, l->name)
		                            : strcmp(l->name, PD_LABELS_METRIC_NAME) &&
		                                  !in_list(n->labels, n->nlabels, l->name);
		if (keep && pd_labels_builder_add(ev->lb, l->name, l->value))
			return pd_pq_oom(ev);
	}
	if (pd_labels_builder_finish(ev->lb, out, &e))
		return pd_pq_oom(ev);
	return 0;
}

struct sigent {
	struct pd_labels *sig;
	uint64_t h;
	size_t idx;
};

static int cmp_sigent(const void *a, const void *b)
{
	const struct sigent *x = a, *y = b;
	int c = pd_labels_compare(x->sig, y->sig);
	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void sigs_free(struct sigent *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		pd_labels_destroy(s[i].sig);
	free(s);
}

/* Signatures of every sample of v, sorted (by signature, then position). */
static int sigs_of(struct eval *ev, const struct pd_pq_node *n, const struct value *v,
                   struct sigent **out)
{
	struct sigent *s = calloc(v->n ? v->n : 1, sizeof *s);
	int rc;
	if (!s)
		return pd_pq_oom(ev);
	for (size_t i = 0; i < v->n; i++) {
		if ((rc = signature(ev, n, v->s[i].ls, &s[i].sig))) {
			sigs_free(s, v->n);
			return rc;
		}
		s[i].idx = i;
	}
	qsort(s, v->n, sizeof *s, cmp_sigent);
	*out = s;
	return 0;
}

static const struct sigent *sig_find(const struct sigent *s, size_t n, const struct pd_labels *sig)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = pd_labels_compare(s[mid].sig, sig);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && pd_labels_equal(s[lo].sig, sig) ? &s[lo] : NULL;
}

int pd_pq_take_sample(struct eval *ev, struct value *out, size_t *cap, struct sample *s)
{
	int rc = pd_pq_vec_push(ev, out, cap, s->ls, s->owned, s->v);
	s->owned = 0;
	return rc;
}

int pd_pq_vector_binop(struct eval *ev, const struct pd_pq_node *n, struct value *l,
                       struct value *r, struct value *out)
{
	struct sigent *ls = NULL, *rs = NULL;
	size_t cap = 0;
	int rc;

	if ((rc = sigs_of(ev, n, l, &ls)) || (rc = sigs_of(ev, n, r, &rs)))
		goto out;
	if (n->op == PQ_OP_AND || n->op == PQ_OP_UNLESS) {
		for (size_t i = 0; i < l->n; i++) {
			struct pd_labels *sig;
			if ((rc = signature(ev, n, l->s[i].ls, &sig)))
				goto out;
			int found = sig_find(rs, r->n, sig) != NULL;
			pd_labels_destroy(sig);
			if (found == (n->op == PQ_OP_AND) &&
			    (rc = pd_pq_take_sample(ev, out, &cap, &l->s[i])))
				goto out;
		}
		goto out;
	}
	if (n->op == PQ_OP_OR) {
		for (size_t i = 0; i < l->n; i++)
			if ((rc = pd_pq_take_sample(ev, out, &cap, &l->s[i])))
				goto out;
		for (size_t i = 0; i < r->n; i++) {
			struct pd_labels *sig;
			if ((rc = signature(ev, n, r->s[i].ls, &sig)))
				goto out;
			int found = sig_find(ls, l->n, sig) != NULL;
			pd_labels_destroy(sig);
			if (!found && (rc = pd_pq_take_sample(ev, out, &cap, &r->s[i])))
				goto out;
		}
		goto out;
	}
	/* one-to-one: the right side must be unique per signature */
	for (size_t i = 1; i < r->n; i++)
		if (pd_labels_equal(rs[i].sig, rs[i - 1].sig)) {
			char *a = pd_labels_string(rs[i].sig),
			     *b = pd_labels_string(r->s[rs[i].idx].ls),
			     *c = pd_labels_string(r->s[rs[i - 1].idx].ls);
			rc = pd_pq_fail(
			    ev->err, PD_PROMQL_ERR_EXECUTION, PD_EINVAL,
			    "found duplicate series for the match group %s on the right "
			    "hand-side of the operation: [%s, %s];many-to-many matching not "
			    "allowed: matching labels must be unique on one side",
			    a ? a : "", b ? b : "", c ? c : "");
			free(a);
			free(b);
			free(c);
			goto out;
		}
	char *matched = calloc(r->n ? r->n : 1, 1);
	if (!matched) {
		rc = pd_pq_oom(ev);
		goto out;
	}
	for (size_t i = 0; i < l->n; i++) {
		struct pd_labels *sig;
		if ((rc = signature(ev, n, l->s[i].ls, &sig)))
			break;
		const struct sigent *m = sig_find(rs, r->n, sig);
		pd_labels_destroy(sig);
		if (!m)
			continue;
		int keep;
		double x = pd_pq_binop(n->op, l->s[i].v, r->s[m->idx].v, &keep);
		if (matched[m->idx]) {
			rc = pd_pq_fail(ev->err, PD_PROMQL_ERR_EXECUTION, PD_EINVAL,
			                "multiple matches for labels: many-to-one matching must be "
			                "explicit (group_left/group_right)");
			break;
		}
		matched[m->idx] = 1;
		if (n->ret_bool) {
			x = keep ? 1 : 0;
			keep = 1;
		}
		if (!keep)
			continue;
		/* the result's labels */
		struct pd_labels *res;
		struct pd_err e;
		const struct pd_labels *src = l->s[i].ls;
		if (pd_labels_builder_reset(ev->lb, src)) {
			rc = pd_pq_oom(ev);
			break;
		}
		if (pd_pq_drops_name(n->op) || n->ret_bool)
			pd_labels_builder_del(ev->lb, PD_LABELS_METRIC_NAME);
		for (size_t k = 0; k < pd_labels_len(src); k++) {
			const char *nm = pd_labels_at(src, k)->name;
			int in = in_list(n->labels, n->nlabels, nm);
			if ((n->matching == 1 && !in) || (n->matching == 2 && in))
				pd_labels_builder_del(ev->lb, nm);
		}
		if (pd_labels_builder_finish(ev->lb, &res, &e)) {
			rc = pd_pq_oom(ev);
			break;
		}
		if ((rc = pd_pq_vec_push(ev, out, &cap, res, 1, x)))
			break;
	}
	free(matched);
out:
	sigs_free(ls, l->n);
	sigs_free(rs, r->n);
	return rc;
}

/* ---- aggregation ----------------------------------------------------------------- */

static int cmp_desc(double a, double b)
{
	/* larger first, NaN last */
	if (isnan(a) || isnan(b))
		return isnan(a) - isnan(b);
	return a > b ? -1 : a < b;
}

struct kent {
	size_t idx;
	double v;
	int bottom;
};

static int cmp_kent(const void *pa, const void *pb)
{
	const struct kent *a = pa, *b = pb;
	int c = a->bottom ? (isnan(a->v) || isnan(b->v) ? isnan(a->v) - isnan(b->v)
	                                                : (a->v < b->v ? -1 : a->v > b->v))
	                  : cmp_desc(a->v, b->v);
	if (c)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_first(const void *pa, const void *pb)
{
	const size_t *a = pa, *b = pb;
	return a[1] < b[1] ? -1 : a[1] > b[1];
}

int pd_pq_aggregate(struct eval *ev, const struct pd_pq_node *n, struct value *in, double param,
                    struct value *out)
{
	struct sigent *g = NULL;
	size_t cap = 0, ngroups = 0, (*groups)[2] = NULL; /* [start in g, first index] */
	struct kent *k = NULL;
	int rc = 0;
	int64_t kk = 0;
	struct pd_err e;

	if (n->op == PQ_AGG_TOPK || n->op == PQ_AGG_BOTTOMK) {
		if (isnan(param) || param >= 9.2e18 || param <= -9.2e18)
			return pd_pq_fail(ev->err, PD_PROMQL_ERR_EXECUTION, PD_EINVAL,
			                  "Scalar value %g overflows int64", param);
		kk = (int64_t)param;
		if (kk < 1)
			return 0;
	}
	if (!in->n)
		return 0;
	if (!(g = calloc(in->n, sizeof *g)) || !(groups = calloc(in->n, sizeof *groups)) ||
	    !(k = calloc(in->n, sizeof *k))) {
		rc = pd_pq_oom(ev);
		goto out;
	}
	for (size_t i = 0; i < in->n; i++) {
		const struct pd_labels *ls = in->s[i].ls;
		if (pd_labels_builder_reset(ev->lb, n->without ? ls : NULL)) {
			rc = pd_pq_oom(ev);
			goto out;
		}
		if (n->without) {
			pd_labels_builder_del(ev->lb, PD_LABELS_METRIC_NAME);
			for (size_t j = 0; j < n->nlabels; j++)
				pd_labels_builder_del(ev->lb, n->labels[j]);
		} else {
			for (size_t j = 0; j < pd_labels_len(ls); j++) {
				const struct pd_label *l = pd_labels_at(ls, j);
				if (in_list(n->labels, n->nlabels, l->name))
					pd_labels_builder_add(ev->lb, l->name, l->value);
			}
		}
		if (pd_labels_builder_finish(ev->lb, &g[i].sig, &e)) {
			rc = pd_pq_oom(ev);
			goto out;
		}
		g[i].idx = i;
	}
	qsort(g, in->n, sizeof *g, cmp_sigent);
	for (size_t i = 0; i < in->n; i++)
		if (!i || !pd_labels_equal(g[i].sig, g[i - 1].sig)) {
			groups[ngroups][0] = i;
			groups[ngroups][1] = g[i].idx;
			ngroups++;
		}
	/* groups in the order their first sample came, as Prometheus's output */
	qsort(groups, ngroups, sizeof *groups, cmp_first);
	for (size_t gi = 0; gi < ngroups; gi++) {
		size_t a = groups[gi][0], b = a;
		while (b < in->n && pd_labels_equal(g[b].sig, g[a].sig))
			b++;
		if (n->op == PQ_AGG_TOPK || n->op == PQ_AGG_BOTTOMK) {
			size_t m = b - a;
			for (size_t i = 0; i < m; i++)
				k[i] = (struct kent){g[a + i].idx, in->s[g[a + i].idx].v,
				                     n->op == PQ_AGG_BOTTOMK};
			qsort(k, m, sizeof *k, cmp_kent);
			for (size_t i = 0; i < m && (int64_t)i < kk; i++)
				if ((rc = pd_pq_take_sample(ev, out, &cap, &in->s[k[i].idx])))
					goto out;
			continue;
		}
		double v = in->s[g[a].idx].v, mean = v, cnt = 1, c = 0, m2 = 0, mn = v, cm = 0;
		(void)c;
		for (size_t i = a + 1; i < b; i++) {
			double x = in->s[g[i].idx].v;
			cnt++;
			switch (n->op) {
			case PQ_AGG_SUM:
				v += x;
				break;
			case PQ_AGG_MIN:
				if (v > x || isnan(v))
					v = x;
				break;
			case PQ_AGG_MAX:
				if (v < x || isnan(v))
					v = x;
				break;
			case PQ_AGG_AVG:
				if (isinf(mean)) {
					if (isinf(x) && (mean > 0) == (x > 0))
						break;
					if (!isinf(x) && !isnan(x))
						break;
				}
				mean += x / cnt - mean / cnt;
				break;
			default:
				break;
			}
		}
		if (n->op == PQ_AGG_STDDEV || n->op == PQ_AGG_STDVAR) {
			double count = 0;
			mn = 0;
			for (size_t i = a; i < b; i++) {
				double x = in->s[g[i].idx].v;
				count++;
				double delta = x - mn;
				mn += delta / count;
				m2 += delta * (x - mn);
			}
			v = m2 / count;
			if (n->op == PQ_AGG_STDDEV)
				v = sqrt(v);
		}
		(void)cm;
		if (n->op == PQ_AGG_AVG)
			v = mean;
		else if (n->op == PQ_AGG_COUNT)
			v = cnt;
		else if (n->op == PQ_AGG_GROUP)
			v = 1;
		struct pd_labels *key = g[a].sig;
		g[a].sig = NULL;
		if ((rc = pd_pq_vec_push(ev, out, &cap, key, 1, v)))
			goto out;
		/* the group's other entries still compare by signature: keep one */
		g[a].sig = pd_labels_dup(key);
		if (!g[a].sig) {
			rc = pd_pq_oom(ev);
			goto out;
		}
	}
out:
	sigs_free(g, in->n);
	free(groups);
	free(k);
	return rc;
}
