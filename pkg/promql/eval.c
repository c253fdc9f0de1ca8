/* eval.c: the PromQL evaluator. A query first reads, once, every series its
 * selectors need over the whole query range; then the syntax tree is evaluated at
 * each step time, as Prometheus evaluates a query step by step, with Prometheus's
 * rules for lookback, extrapolation, aggregation, vector matching and metric-name
 * dropping. A range query gathers the steps into a matrix. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_int.h"

struct outseries {
	struct pd_labels *ls;
	int64_t *t;
	double *v;
	size_t n, cap;
};

struct pd_promql_result {
	enum pd_promql_type type;
	double num;
	int64_t t;
	char *str;
	struct outseries *s;
	size_t n;
};

int pd_pq_oom(struct eval *ev)
{
	return pd_pq_fail(ev->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM, "out of memory");
}

static int too_many(struct eval *ev)
{
	return pd_pq_fail(ev->err, PD_PROMQL_ERR_EXECUTION, PD_ETOOBIG,
	                  "query processing would load too many samples into memory in query "
	                  "execution");
}

static int count_samples(struct eval *ev, size_t n)
{
	if (n > ev->max_samples - ev->samples)
		return too_many(ev);
	ev->samples += n;
	return 0;
}

static int check_interrupt(struct eval *ev)
{
	if (ev->o && ev->o->interrupted && ev->o->interrupted(ev->o->interrupted_ctx))
		return pd_pq_fail(ev->err, PD_PROMQL_ERR_TIMEOUT, PD_EINVAL,
		                  "query timed out in expression evaluation");
	return 0;
}

static void value_free(struct value *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->s[i].owned)
			pd_labels_destroy((struct pd_labels *)v->s[i].ls);
	free(v->s);
	free(v->m);
	memset(v, 0, sizeof *v);
}

int pd_pq_vec_push(struct eval *ev, struct value *v, size_t *cap, const struct pd_labels *ls,
                   int owned, double x)
{
	if (v->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct sample *ns = realloc(v->s, nc * sizeof *ns);
		if (!ns) {
			if (owned)
				pd_labels_destroy((struct pd_labels *)ls);
			return pd_pq_oom(ev);
		}
		v->s = ns;
		*cap = nc;
	}
	v->s[v->n++] = (struct sample){ls, x, owned};
	return 0;
}

/* ls without __name__ (a new set). */
static int drop_name(struct eval *ev, const struct pd_labels *ls, struct pd_labels **out)
{
	struct pd_err e;
	if (pd_labels_builder_reset(ev->lb, ls) ||
	    pd_labels_builder_del(ev->lb, PD_LABELS_METRIC_NAME))
		return pd_pq_oom(ev);
	if (pd_labels_builder_finish(ev->lb, out, &e))
		return pd_pq_oom(ev);
	return 0;
}

/* ---- reading series ------------------------------------------------------------ */

struct collect {
	struct eval *ev;
	struct pd_pq_node *n;
	size_t cap;
};

static int collect_series(void *arg, const struct pd_labels *ls, const int64_t *t, const double *v,
                          size_t n)
{
	struct collect *c = arg;
	struct pd_pq_node *nd = c->n;
	int rc;
	if (!n)
		return 0;
	if ((rc = check_interrupt(c->ev)) || (rc = count_samples(c->ev, n)))
		return rc;
	if (nd->nseries == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 16;
		struct pd_pq_series *ns = realloc(nd->series, nc * sizeof *ns);
		if (!ns)
			return pd_pq_oom(c->ev);
		nd->series = ns;
		c->cap = nc;
	}
	struct pd_pq_series *s = &nd->series[nd->nseries];
	s->ls = pd_labels_dup(ls);
	s->t = malloc(n * sizeof *s->t);
	s->v = malloc(n * sizeof *s->v);
	s->n = n;
	nd->nseries++;
	if (!s->ls || !s->t || !s->v)
		return pd_pq_oom(c->ev);
	memcpy(s->t, t, n * sizeof *t);
	memcpy(s->v, v, n * sizeof *v);
	return 0;
}

static int cmp_series(const void *a, const void *b)
{
	return pd_labels_compare(((const struct pd_pq_series *)a)->ls,
	                         ((const struct pd_pq_series *)b)->ls);
}

static int64_t sel_time(const struct eval *ev, const struct pd_pq_node *n, int64_t t)
{
	if (n->at == 1)
		t = n->at_ms;
	else if (n->at == 2)
		t = ev->start;
	else if (n->at == 3)
		t = ev->end;
	return t - n->offset_ms;
}

/* Reads the data of every selector under n. */
static int fetch(struct eval *ev, struct pd_pq_node *n)
{
	int rc;
	if (n->kind == PQ_SEL) {
		int64_t lo = sel_time(ev, n, ev->start), hi = sel_time(ev, n, ev->end);
		lo -= n->range_ms ? n->range_ms : ev->lookback;
		struct collect c = {ev, n, 0};
		struct pd_err e = {0};
		rc = ev->src->select(ev->src->ctx, n->sel->matchers, n->sel->nmatchers, lo, hi,
		                     collect_series, &c, &e);
		if (rc) {
			if (ev->err && ev->err->type != PD_PROMQL_ERR_NONE)
				return rc;
			return pd_pq_fail(ev->err, PD_PROMQL_ERR_INTERNAL, rc < 0 ? rc : PD_EIO,
			                  "reading series: %s", e.msg);
		}
		if (n->nseries)
			qsort(n->series, n->nseries, sizeof *n->series, cmp_series);
		return 0;
	}
	for (size_t i = 0; i < n->nargs; i++)
		if ((rc = fetch(ev, n->args[i])))
			return rc;
	if (n->lhs && (rc = fetch(ev, n->lhs)))
		return rc;
	if (n->rhs && (rc = fetch(ev, n->rhs)))
		return rc;
	return 0;
}

/* The index of the first sample at or after t. */
static size_t lower_bound(const int64_t *ts, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ts[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- evaluation ------------------------------------------------------------------ */

static int eval_node(struct eval *ev, const struct pd_pq_node *n, int64_t t, struct value *out);

static int eval_matrix(struct eval *ev, const struct pd_pq_node *n, int64_t t, struct value *out,
                       int64_t *rs, int64_t *re)
{
	while (n->kind == PQ_PAREN)
		n = n->lhs;
	int64_t te = sel_time(ev, n, t), lo = te - n->range_ms;
	out->type = PD_PROMQL_MATRIX;
	*rs = lo;
	*re = te;
	if (!n->nseries)
		return 0;
	if (!(out->m = calloc(n->nseries, sizeof *out->m)))
		return pd_pq_oom(ev);
	for (size_t i = 0; i < n->nseries; i++) {
		const struct pd_pq_series *s = &n->series[i];
		size_t a = lower_bound(s->t, s->n, lo), b = lower_bound(s->t, s->n, te + 1);
		if (a >= b)
			continue;
		out->m[out->nm++] = (struct rseries){s->ls, s->t + a, s->v + a, b - a};
	}
	return 0;
}

static int eval_call(struct eval *ev, const struct pd_pq_node *n, int64_t t, struct value *out)
{
	const struct pd_pq_func *fn = n->fn;
	struct value a = {0}, b = {0};
	size_t cap = 0;
	int rc = 0;

	out->type = fn->ret;
	if (fn->id == F_TIME) {
		out->num = (double)t / 1000;
		return 0;
	}
	if (fn->args[0] == PQ_ARG_MATRIX) {
		int64_t rs, re;
		if ((rc = eval_matrix(ev, n->args[0], t, &a, &rs, &re)))
			return rc;
		const struct pd_pq_node *sel = n->args[0];
		while (sel->kind == PQ_PAREN)
			sel = sel->lhs;
		for (size_t i = 0; i < a.nm; i++) {
			double x;
			if (!pd_pq_over_time(fn->id, &a.m[i], rs, re, sel->range_ms, &x))
				continue;
			struct pd_labels *ls;
			if (fn->id == F_LAST_OT)
				ls = pd_labels_dup(a.m[i].ls);
			else if ((rc = drop_name(ev, a.m[i].ls, &ls)))
				break;
			if (!ls) {
				rc = pd_pq_oom(ev);
				break;
			}
			if ((rc = pd_pq_vec_push(ev, out, &cap, ls, 1, x)))
				break;
		}
		value_free(&a);
		return rc;
	}
	if ((rc = eval_node(ev, n->args[0], t, &a)))
		return rc;
	if (fn->id == F_VECTOR) {
		struct pd_labels *ls;
		struct pd_err e;
		if (pd_labels_builder_reset(ev->lb, NULL) ||
		    pd_labels_builder_finish(ev->lb, &ls, &e))
			rc = pd_pq_oom(ev);
		else
			rc = pd_pq_vec_push(ev, out, &cap, ls, 1, a.num);
		goto out;
	}
	if (fn->id == F_SCALAR) {
		out->num = a.n == 1 ? a.s[0].v : NAN;
		goto out;
	}
	if (n->nargs > 1 && (rc = eval_node(ev, n->args[1], t, &b)))
		goto out;
	for (size_t i = 0; i < a.n; i++) {
		struct pd_labels *ls;
		if ((rc = drop_name(ev, a.s[i].ls, &ls)))
			break;
		if ((rc = pd_pq_vec_push(ev, out, &cap, ls, 1,
		                         pd_pq_instant_fn(fn->id, a.s[i].v, b.num))))
			break;
	}
out:
	value_free(&a);
	value_free(&b);
	return rc;
}

static int eval_node_in(struct eval *ev, const struct pd_pq_node *n, int64_t t, struct value *out);

/* Evaluates n at t into out; on failure out holds nothing (what the evaluation
 * had put in it so far is freed), so that no caller leaks a partial result. */
static int eval_node(struct eval *ev, const struct pd_pq_node *n, int64_t t, struct value *out)
{
	int rc = eval_node_in(ev, n, t, out);
	if (rc)
		value_free(out);
	return rc;
}

static int eval_node_in(struct eval *ev, const struct pd_pq_node *n, int64_t t, struct value *out)
{
	struct value l = {0}, r = {0};
	size_t cap = 0;
	int rc = 0;

	memset(out, 0, sizeof *out);
	out->type = n->type;
	/* Nodes whose work grows with the data ask the timeout hook, so one step of a
	 * query with thousands of them stops soon after the deadline; the others (numbers,
	 * strings, parentheses, scalar arithmetic) cost a few instructions each. */
	if (n->type != PD_PROMQL_SCALAR && n->kind != PQ_STR && n->kind != PQ_PAREN &&
	    (rc = check_interrupt(ev)))
		return rc;
	switch (n->kind) {
	case PQ_NUM:
		out->num = n->num;
		return 0;
	case PQ_STR:
		out->str = n->str;
		return 0;
	case PQ_PAREN:
		return eval_node(ev, n->lhs, t, out);
	case PQ_SEL: {
		if (n->range_ms) {
			int64_t rs, re;
			return eval_matrix(ev, n, t, out, &rs, &re);
		}
		int64_t te = sel_time(ev, n, t);
		for (size_t i = 0; i < n->nseries; i++) {
			const struct pd_pq_series *s = &n->series[i];
			size_t b = lower_bound(s->t, s->n, te + 1);
			if (!b || s->t[b - 1] < te - ev->lookback)
				continue;
			if ((rc = pd_pq_vec_push(ev, out, &cap, s->ls, 0, s->v[b - 1])))
				return rc;
		}
		return 0;
	}
	case PQ_CALL:
		return eval_call(ev, n, t, out);
	case PQ_AGG: {
		double param = 0;
		if (n->nargs == 2) {
			if ((rc = eval_node(ev, n->args[0], t, &l)))
				return rc;
			param = l.num;
			value_free(&l);
		}
		if ((rc = eval_node(ev, n->args[n->nargs - 1], t, &r)))
			return rc;
		out->type = PD_PROMQL_VECTOR;
		rc = pd_pq_aggregate(ev, n, &r, param, out);
		value_free(&r);
		return rc;
	}
	case PQ_NEG:
		if ((rc = eval_node(ev, n->lhs, t, &l)))
			return rc;
		if (l.type == PD_PROMQL_SCALAR) {
			out->num = -l.num;
		} else {
			for (size_t i = 0; i < l.n && !rc; i++) {
				struct pd_labels *ls;
				if (!(rc = drop_name(ev, l.s[i].ls, &ls)))
					rc = pd_pq_vec_push(ev, out, &cap, ls, 1, -l.s[i].v);
			}
		}
		value_free(&l);
		return rc;
	case PQ_BIN:
		if ((rc = eval_node(ev, n->lhs, t, &l)) || (rc = eval_node(ev, n->rhs, t, &r)))
			goto bin_out;
		if (l.type == PD_PROMQL_SCALAR && r.type == PD_PROMQL_SCALAR) {
			int keep;
			out->num = pd_pq_binop(n->op, l.num, r.num, &keep);
			if (pd_pq_is_cmp(n->op))
				out->num = keep ? 1 : 0;
		} else if (l.type == PD_PROMQL_VECTOR && r.type == PD_PROMQL_VECTOR) {
			rc = pd_pq_vector_binop(ev, n, &l, &r, out);
		} else {
			int swap = l.type == PD_PROMQL_SCALAR;
			struct value *vec = swap ? &r : &l;
			double sc = swap ? l.num : r.num;
			for (size_t i = 0; i < vec->n; i++) {
				int keep;
				double a = vec->s[i].v, x;
				x = swap ? pd_pq_binop(n->op, sc, a, &keep)
				         : pd_pq_binop(n->op, a, sc, &keep);
				if (pd_pq_is_cmp(n->op) && swap)
					x = a;
				if (n->ret_bool) {
					x = keep ? 1 : 0;
					keep = 1;
				}
				if (!keep)
					continue;
				if (pd_pq_drops_name(n->op) || n->ret_bool) {
					struct pd_labels *ls;
					if ((rc = drop_name(ev, vec->s[i].ls, &ls)) ||
					    (rc = pd_pq_vec_push(ev, out, &cap, ls, 1, x)))
						break;
				} else {
					vec->s[i].v = x;
					if ((rc = pd_pq_take_sample(ev, out, &cap, &vec->s[i])))
						break;
				}
			}
		}
	bin_out:
		value_free(&l);
		value_free(&r);
		return rc;
	}
	return 0;
}

/* ---- results --------------------------------------------------------------------- */

void pd_promql_result_destroy(struct pd_promql_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		pd_labels_destroy(r->s[i].ls);
		free(r->s[i].t);
		free(r->s[i].v);
	}
	free(r->s);
	free(r->str);
	free(r);
}

static int out_push(struct eval *ev, struct outseries *s, int64_t t, double v)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 4;
		int64_t *nt = realloc(s->t, nc * sizeof *nt);
		if (!nt)
			return pd_pq_oom(ev);
		s->t = nt;
		double *nv = realloc(s->v, nc * sizeof *nv);
		if (!nv)
			return pd_pq_oom(ev);
		s->v = nv;
		s->cap = nc;
	}
	s->t[s->n] = t;
	s->v[s->n++] = v;
	return count_samples(ev, 1);
}

/* Output series by label set: an open-addressing table of indexes into r->s. */
struct outmap {
	size_t *slot; /* index + 1, 0 empty */
	size_t cap, scap;
};

static int out_series(struct eval *ev, struct pd_promql_result *r, struct outmap *m,
                      const struct pd_labels *ls, struct outseries **out)
{
	if ((r->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 64;
		size_t *ns = calloc(nc, sizeof *ns);
		if (!ns)
			return pd_pq_oom(ev);
		for (size_t i = 0; i < r->n; i++) {
			size_t h = (size_t)pd_labels_hash(r->s[i].ls) & (nc - 1);
			while (ns[h])
				h = (h + 1) & (nc - 1);
			ns[h] = i + 1;
		}
		free(m->slot);
		m->slot = ns;
		m->cap = nc;
	}
	size_t h = (size_t)pd_labels_hash(ls) & (m->cap - 1);
	while (m->slot[h]) {
		if (pd_labels_equal(r->s[m->slot[h] - 1].ls, ls)) {
			*out = &r->s[m->slot[h] - 1];
			return 0;
		}
		h = (h + 1) & (m->cap - 1);
	}
	if (r->n == m->scap) {
		size_t nc = m->scap ? m->scap * 2 : 16;
		struct outseries *ns = realloc(r->s, nc * sizeof *ns);
		if (!ns)
			return pd_pq_oom(ev);
		r->s = ns;
		m->scap = nc;
	}
	struct outseries *s = &r->s[r->n];
	memset(s, 0, sizeof *s);
	if (!(s->ls = pd_labels_dup(ls)))
		return pd_pq_oom(ev);
	m->slot[h] = ++r->n;
	*out = s;
	return 0;
}

static int cmp_out(const void *a, const void *b)
{
	return pd_labels_compare(((const struct outseries *)a)->ls,
	                         ((const struct outseries *)b)->ls);
}

static int add_step(struct eval *ev, struct pd_promql_result *r, struct outmap *m,
                    const struct value *v, int64_t t)
{
	int rc;
	struct outseries *s;
	if (v->type == PD_PROMQL_SCALAR) {
		struct pd_labels *empty;
		struct pd_err e;
		if (pd_labels_builder_reset(ev->lb, NULL) ||
		    pd_labels_builder_finish(ev->lb, &empty, &e))
			return pd_pq_oom(ev);
		rc = out_series(ev, r, m, empty, &s);
		pd_labels_destroy(empty);
		return rc ? rc : out_push(ev, s, t, v->num);
	}
	for (size_t i = 0; i < v->n; i++) {
		if ((rc = out_series(ev, r, m, v->s[i].ls, &s)))
			return rc;
		if (s->n && s->t[s->n - 1] == t)
			return pd_pq_fail(ev->err, PD_PROMQL_ERR_EXECUTION, PD_EINVAL,
			                  "vector cannot contain metrics with the same labelset");
		if ((rc = out_push(ev, s, t, v->s[i].v)))
			return rc;
	}
	return 0;
}

static int run(struct pd_promql_result **out, const struct pd_promql_source *src, const char *query,
               size_t len, int64_t start, int64_t end, int64_t step, int range,
               const struct pd_promql_opts *opts, struct pd_promql_err *err)
{
	struct pd_promql_expr *e = NULL;
	struct pd_promql_result *r = NULL;
	struct outmap m = {0};
	struct value v = {0};
	struct eval ev = {.src = src, .o = opts, .start = start, .end = end, .err = err};
	int rc;

	*out = NULL;
	if (err) {
		err->type = PD_PROMQL_ERR_NONE;
		err->err.code = 0;
		err->err.msg[0] = '\0';
	}
	ev.lookback = opts && opts->lookback_ms ? opts->lookback_ms : PD_PROMQL_DEFAULT_LOOKBACK_MS;
	ev.max_samples =
	    opts && opts->max_samples ? opts->max_samples : PD_PROMQL_DEFAULT_MAX_SAMPLES;
	if ((rc = pd_promql_parse(&e, query, len, opts, err)))
		return rc;
	if (range) {
		size_t max_points =
		    opts && opts->max_points ? opts->max_points : PD_PROMQL_DEFAULT_MAX_POINTS;
		enum pd_promql_type t = e->root->type;
		if (t != PD_PROMQL_SCALAR && t != PD_PROMQL_VECTOR) {
			rc = pd_pq_fail(
			    err, PD_PROMQL_ERR_BAD_DATA, PD_EINVAL,
			    "invalid expression type \"%s\" for range query, must be Scalar "
			    "or instant Vector",
			    t == PD_PROMQL_MATRIX ? "range vector" : "string");
			goto out;
		}
		if (step <= 0) {
			rc = pd_pq_fail(
			    err, PD_PROMQL_ERR_BAD_DATA, PD_EINVAL,
			    "zero or negative query resolution step widths are not accepted. "
			    "Try a positive integer");
			goto out;
		}
		if (end < start) {
			rc = pd_pq_fail(err, PD_PROMQL_ERR_BAD_DATA, PD_EINVAL,
			                "end timestamp must not be before start time");
			goto out;
		}
		if ((uint64_t)(end - start) / (uint64_t)step >= max_points) {
			rc = pd_pq_fail(
			    err, PD_PROMQL_ERR_BAD_DATA, PD_EINVAL,
			    "exceeded maximum resolution of %zu points per timeseries. Try "
			    "decreasing the query resolution (?step=XX)",
			    max_points);
			goto out;
		}
	}
	if (!(ev.lb = pd_labels_builder_create(NULL)) || !(r = calloc(1, sizeof *r))) {
		rc = pd_pq_oom(&ev);
		goto out;
	}
	if ((rc = fetch(&ev, e->root)))
		goto out;
	if (!range) {
		if ((rc = check_interrupt(&ev)) || (rc = eval_node(&ev, e->root, start, &v)))
			goto out;
		r->type = v.type;
		r->t = start;
		if (v.type == PD_PROMQL_SCALAR) {
			r->num = v.num;
		} else if (v.type == PD_PROMQL_STRING) {
			if (!(r->str = strdup(v.str))) {
				rc = pd_pq_oom(&ev);
				goto out;
			}
		} else if (v.type == PD_PROMQL_VECTOR) {
			if ((rc = add_step(&ev, r, &m, &v, start)))
				goto out;
		} else {
			for (size_t i = 0; i < v.nm; i++) {
				struct outseries *s;
				if ((rc = out_series(&ev, r, &m, v.m[i].ls, &s)))
					goto out;
				for (size_t j = 0; j < v.m[i].n; j++)
					if ((rc = out_push(&ev, s, v.m[i].t[j], v.m[i].v[j])))
						goto out;
			}
			if (r->n)
				qsort(r->s, r->n, sizeof *r->s, cmp_out);
		}
	} else {
		r->type = PD_PROMQL_MATRIX;
		for (int64_t t = start; t <= end; t += step) {
			if ((rc = check_interrupt(&ev)) || (rc = eval_node(&ev, e->root, t, &v)))
				goto out;
			if ((rc = add_step(&ev, r, &m, &v, t)))
				goto out;
			value_free(&v);
			if (end - t < step)
				break;
		}
		if (r->n)
			qsort(r->s, r->n, sizeof *r->s, cmp_out);
	}
	*out = r;
	r = NULL;
out:
	value_free(&v);
	free(m.slot);
	pd_promql_result_destroy(r);
	pd_labels_builder_destroy(ev.lb);
	pd_promql_expr_destroy(e);
	return rc;
}

int pd_promql_query_instant(struct pd_promql_result **out, const struct pd_promql_source *src,
                            const char *query, size_t len, int64_t t,
                            const struct pd_promql_opts *opts, struct pd_promql_err *err)
{
	return run(out, src, query, len, t, t, 1, 0, opts, err);
}

int pd_promql_query_range(struct pd_promql_result **out, const struct pd_promql_source *src,
                          const char *query, size_t len, int64_t start, int64_t end, int64_t step,
                          const struct pd_promql_opts *opts, struct pd_promql_err *err)
{
	return run(out, src, query, len, start, end, step, 1, opts, err);
}

enum pd_promql_type pd_promql_result_type(const struct pd_promql_result *r)
{
	return r->type;
}

double pd_promql_result_scalar(const struct pd_promql_result *r)
{
	return r->num;
}

int64_t pd_promql_result_time(const struct pd_promql_result *r)
{
	return r->t;
}

const char *pd_promql_result_string(const struct pd_promql_result *r)
{
	return r->type == PD_PROMQL_STRING ? r->str : NULL;
}

size_t pd_promql_result_len(const struct pd_promql_result *r)
{
	return r->n;
}

const struct pd_labels *pd_promql_result_series(const struct pd_promql_result *r, size_t i,
                                                const int64_t **t, const double **v, size_t *n)
{
	if (t)
		*t = r->s[i].t;
	if (v)
		*v = r->s[i].v;
	if (n)
		*n = r->s[i].n;
	return r->s[i].ls;
}
