/* eval.c: the PromQL evaluator. A query first reads, once, every series its
 * selectors need over the whole query range; then the syntax tree is evaluated at
 * each step time, as Prometheus evaluates a query step by step, with Prometheus's
 * rules for lookback, extrapolation, aggregation, vector matching and metric-name
 * dropping. A range query gathers the steps into a matrix. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "promql_int.h"

/* A sample of an instant vector; ls is freed with the vector when owned. */
struct sample {
	const struct pd_labels *ls;
	double v;
	int owned;
};

/* One series of a range vector, borrowed from a selector's data. */
struct rseries {
	const struct pd_labels *ls;
	const int64_t *t;
	const double *v;
	size_t n;
};

struct value {
	enum pd_promql_type type;
	double num;
	const char *str;
	struct sample *s;
	size_t n;
	struct rseries *m;
	size_t nm;
};

struct eval {
	const struct pd_promql_source *src;
	const struct pd_promql_opts *o;
	int64_t start, end, lookback;
	size_t max_samples, samples;
	struct pd_promql_err *err;
	struct pd_labels_builder *lb;
};

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

enum {
	F_RATE = 1,
	F_INCREASE,
	F_DELTA,
	F_IRATE,
	F_IDELTA,
	F_DERIV,
	F_SUM_OT,
	F_AVG_OT,
	F_MIN_OT,
	F_MAX_OT,
	F_COUNT_OT,
	F_LAST_OT,
	F_STDDEV_OT,
	F_STDVAR_OT,
	F_PRESENT_OT,
	F_CHANGES,
	F_RESETS,
	F_ABS,
	F_CEIL,
	F_FLOOR,
	F_EXP,
	F_LN,
	F_LOG2,
	F_LOG10,
	F_SQRT,
	F_SGN,
	F_TIME,
	F_VECTOR,
	F_SCALAR,
	F_CLAMP_MIN,
	F_CLAMP_MAX,
};

#define M PQ_ARG_MATRIX
#define V PQ_ARG_VECTOR
#define S PQ_ARG_SCALAR
static const struct pd_pq_func funcs[] = {
    {"rate", F_RATE, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"increase", F_INCREASE, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"delta", F_DELTA, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"irate", F_IRATE, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"idelta", F_IDELTA, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"deriv", F_DERIV, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"sum_over_time", F_SUM_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"avg_over_time", F_AVG_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"min_over_time", F_MIN_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"max_over_time", F_MAX_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"count_over_time", F_COUNT_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"last_over_time", F_LAST_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"stddev_over_time", F_STDDEV_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"stdvar_over_time", F_STDVAR_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"present_over_time", F_PRESENT_OT, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"changes", F_CHANGES, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"resets", F_RESETS, {M}, 1, 0, PD_PROMQL_VECTOR},
    {"abs", F_ABS, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"ceil", F_CEIL, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"floor", F_FLOOR, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"exp", F_EXP, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"ln", F_LN, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"log2", F_LOG2, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"log10", F_LOG10, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"sqrt", F_SQRT, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"sgn", F_SGN, {V}, 1, 0, PD_PROMQL_VECTOR},
    {"time", F_TIME, {S}, 0, 0, PD_PROMQL_SCALAR},
    {"vector", F_VECTOR, {S}, 1, 0, PD_PROMQL_VECTOR},
    {"scalar", F_SCALAR, {V}, 1, 0, PD_PROMQL_SCALAR},
    {"clamp_min", F_CLAMP_MIN, {V, S}, 2, 0, PD_PROMQL_VECTOR},
    {"clamp_max", F_CLAMP_MAX, {V, S}, 2, 0, PD_PROMQL_VECTOR},
};
#undef M
#undef V
#undef S

const struct pd_pq_func *pd_pq_func_lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof funcs / sizeof funcs[0]; i++)
		if (strlen(funcs[i].name) == len && !memcmp(funcs[i].name, name, len))
			return &funcs[i];
	return NULL;
}

static int oom(struct eval *ev)
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

static int vec_push(struct eval *ev, struct value *v, size_t *cap, const struct pd_labels *ls,
                    int owned, double x)
{
	if (v->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct sample *ns = realloc(v->s, nc * sizeof *ns);
		if (!ns) {
			if (owned)
				pd_labels_destroy((struct pd_labels *)ls);
			return oom(ev);
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
		return oom(ev);
	if (pd_labels_builder_finish(ev->lb, out, &e))
		return oom(ev);
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
			return oom(c->ev);
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
		return oom(c->ev);
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

/* ---- functions over range vectors ---------------------------------------------- */

static void kahan_inc(double inc, double *sum, double *c)
{
	double t = *sum + inc;
	if (fabs(*sum) >= fabs(inc))
		*c += (*sum - t) + inc;
	else
		*c += (inc - t) + *sum;
	*sum = t;
}

/* rate, increase and delta, with Prometheus's extrapolation to the range's ends. */
static int extrapolated(const struct rseries *s, int64_t range_start, int64_t range_end,
                        int64_t range_ms, int counter, int is_rate, double *out)
{
	if (s->n < 2)
		return 0;
	double result = s->v[s->n - 1] - s->v[0];
	if (counter) {
		double last = 0;
		for (size_t i = 0; i < s->n; i++) {
			if (s->v[i] < last)
				result += last;
			last = s->v[i];
		}
	}
	double to_start = (double)(s->t[0] - range_start) / 1000;
	double to_end = (double)(range_end - s->t[s->n - 1]) / 1000;
	double sampled = (double)(s->t[s->n - 1] - s->t[0]) / 1000;
	double avg = sampled / (double)(s->n - 1);
	if (counter && result > 0 && s->v[0] >= 0) {
		double to_zero = sampled * (s->v[0] / result);
		if (to_zero < to_start)
			to_start = to_zero;
	}
	double threshold = avg * 1.1, interval = sampled;
	interval += to_start < threshold ? to_start : avg / 2;
	interval += to_end < threshold ? to_end : avg / 2;
	result = result * (interval / sampled);
	if (is_rate)
		result /= (double)range_ms / 1000;
	*out = result;
	return 1;
}

static int instant_value(const struct rseries *s, int is_rate, double *out)
{
	if (s->n < 2)
		return 0;
	double last = s->v[s->n - 1], prev = s->v[s->n - 2];
	double r = is_rate && last < prev ? last : last - prev;
	int64_t iv = s->t[s->n - 1] - s->t[s->n - 2];
	if (iv == 0)
		return 0;
	if (is_rate)
		r /= (double)iv / 1000;
	*out = r;
	return 1;
}

/* deriv: the slope of the least-squares line through the samples. */
static double deriv(const struct rseries *s)
{
	double n = 0, sx = 0, cx = 0, sy = 0, cy = 0, sxy = 0, cxy = 0, sx2 = 0, cx2 = 0;
	int const_y = 1;
	for (size_t i = 0; i < s->n; i++) {
		if (const_y && i > 0 && s->v[i] != s->v[0])
			const_y = 0;
		n += 1;
		double x = (double)(s->t[i] - s->t[0]) / 1e3;
		kahan_inc(x, &sx, &cx);
		kahan_inc(s->v[i], &sy, &cy);
		kahan_inc(x * s->v[i], &sxy, &cxy);
		kahan_inc(x * x, &sx2, &cx2);
	}
	if (const_y)
		return isinf(s->v[0]) ? NAN : 0;
	sx += cx;
	sy += cy;
	sxy += cxy;
	sx2 += cx2;
	double cov = sxy - sx * sy / n, var = sx2 - sx * sx / n;
	return cov / var;
}

static int over_time(int id, const struct rseries *s, int64_t rs, int64_t re, int64_t range,
                     double *out)
{
	size_t n = s->n;
	switch (id) {
	case F_RATE:
		return extrapolated(s, rs, re, range, 1, 1, out);
	case F_INCREASE:
		return extrapolated(s, rs, re, range, 1, 0, out);
	case F_DELTA:
		return extrapolated(s, rs, re, range, 0, 0, out);
	case F_IRATE:
		return instant_value(s, 1, out);
	case F_IDELTA:
		return instant_value(s, 0, out);
	case F_DERIV:
		if (n < 2)
			return 0;
		*out = deriv(s);
		return 1;
	case F_SUM_OT: {
		double sum = 0, c = 0;
		for (size_t i = 0; i < n; i++)
			kahan_inc(s->v[i], &sum, &c);
		*out = isinf(sum) ? sum : sum + c;
		return 1;
	}
	case F_AVG_OT: {
		double mean = 0, c = 0, count = 0;
		for (size_t i = 0; i < n; i++) {
			double x = s->v[i];
			count++;
			if (isinf(mean)) {
				if (isinf(x) && (mean > 0) == (x > 0))
					continue;
				if (!isinf(x) && !isnan(x))
					continue;
			}
			kahan_inc(x / count - mean / count, &mean, &c);
		}
		*out = isinf(mean) ? mean : mean + c;
		return 1;
	}
	case F_MIN_OT:
	case F_MAX_OT: {
		double m = s->v[0];
		for (size_t i = 1; i < n; i++) {
			double x = s->v[i];
			if ((id == F_MAX_OT ? m < x : m > x) || isnan(m))
				m = x;
		}
		*out = m;
		return 1;
	}
	case F_COUNT_OT:
		*out = (double)n;
		return 1;
	case F_LAST_OT:
		*out = s->v[n - 1];
		return 1;
	case F_PRESENT_OT:
		*out = 1;
		return 1;
	case F_STDDEV_OT:
	case F_STDVAR_OT: {
		double count = 0, mean = 0, cm = 0, aux = 0, ca = 0;
		for (size_t i = 0; i < n; i++) {
			count++;
			double delta = s->v[i] - (mean + cm);
			kahan_inc(delta / count, &mean, &cm);
			kahan_inc(delta * (s->v[i] - (mean + cm)), &aux, &ca);
		}
		*out = (aux + ca) / count;
		if (id == F_STDDEV_OT)
			*out = sqrt(*out);
		return 1;
	}
	case F_CHANGES:
	case F_RESETS: {
		double c = 0;
		for (size_t i = 1; i < n; i++) {
			double prev = s->v[i - 1], cur = s->v[i];
			if (id == F_CHANGES ? !(cur == prev || (isnan(cur) && isnan(prev)))
			                    : cur < prev)
				c++;
		}
		*out = c;
		return 1;
	}
	}
	return 0;
}

static double instant_fn(int id, double x, double arg)
{
	switch (id) {
	case F_ABS:
		return fabs(x);
	case F_CEIL:
		return ceil(x);
	case F_FLOOR:
		return floor(x);
	case F_EXP:
		return exp(x);
	case F_LN:
		return log(x);
	case F_LOG2:
		return log2(x);
	case F_LOG10:
		return log10(x);
	case F_SQRT:
		return sqrt(x);
	case F_SGN:
		return x > 0 ? 1 : x < 0 ? -1 : x;
	case F_CLAMP_MIN:
		return isnan(x) || isnan(arg) ? NAN : fmax(x, arg);
	case F_CLAMP_MAX:
		return isnan(x) || isnan(arg) ? NAN : fmin(x, arg);
	}
	return x;
}

/* ---- operators ------------------------------------------------------------------- */

/* The result of op on a and b; *keep 0 when a comparison is false. */
static double binop(int op, double a, double b, int *keep)
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

static int drops_name(int op)
{
	return op >= PQ_OP_ADD && op <= PQ_OP_ATAN2;
}

static int is_cmp(int op)
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
		return oom(ev);
	for (size_t i = 0; i < pd_labels_len(ls); i++) {
		const struct pd_label *l = pd_labels_at(ls, i);
		int keep = n->matching == 1 ? in_list(n->labels, n->nlabels, l->name)
		                            : strcmp(l->name, PD_LABELS_METRIC_NAME) &&
		                                  !in_list(n->labels, n->nlabels, l->name);
		if (keep && pd_labels_builder_add(ev->lb, l->name, l->value))
			return oom(ev);
	}
	if (pd_labels_builder_finish(ev->lb, out, &e))
		return oom(ev);
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
		return oom(ev);
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

static int take_sample(struct eval *ev, struct value *out, size_t *cap, struct sample *s)
{
	int rc = vec_push(ev, out, cap, s->ls, s->owned, s->v);
	s->owned = 0;
	return rc;
}

static int vector_binop(struct eval *ev, const struct pd_pq_node *n, struct value *l,
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
			    (rc = take_sample(ev, out, &cap, &l->s[i])))
				goto out;
		}
		goto out;
	}
	if (n->op == PQ_OP_OR) {
		for (size_t i = 0; i < l->n; i++)
			if ((rc = take_sample(ev, out, &cap, &l->s[i])))
				goto out;
		for (size_t i = 0; i < r->n; i++) {
			struct pd_labels *sig;
			if ((rc = signature(ev, n, r->s[i].ls, &sig)))
				goto out;
			int found = sig_find(ls, l->n, sig) != NULL;
			pd_labels_destroy(sig);
			if (!found && (rc = take_sample(ev, out, &cap, &r->s[i])))
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
		rc = oom(ev);
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
		double x = binop(n->op, l->s[i].v, r->s[m->idx].v, &keep);
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
			rc = oom(ev);
			break;
		}
		if (drops_name(n->op) || n->ret_bool)
			pd_labels_builder_del(ev->lb, PD_LABELS_METRIC_NAME);
		for (size_t k = 0; k < pd_labels_len(src); k++) {
			const char *nm = pd_labels_at(src, k)->name;
			int in = in_list(n->labels, n->nlabels, nm);
			if ((n->matching == 1 && !in) || (n->matching == 2 && in))
				pd_labels_builder_del(ev->lb, nm);
		}
		if (pd_labels_builder_finish(ev->lb, &res, &e)) {
			rc = oom(ev);
			break;
		}
		if ((rc = vec_push(ev, out, &cap, res, 1, x)))
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

static int aggregate(struct eval *ev, const struct pd_pq_node *n, struct value *in, double param,
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
		rc = oom(ev);
		goto out;
	}
	for (size_t i = 0; i < in->n; i++) {
		const struct pd_labels *ls = in->s[i].ls;
		if (pd_labels_builder_reset(ev->lb, n->without ? ls : NULL)) {
			rc = oom(ev);
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
			rc = oom(ev);
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
				if ((rc = take_sample(ev, out, &cap, &in->s[k[i].idx])))
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
		if ((rc = vec_push(ev, out, &cap, key, 1, v)))
			goto out;
		/* the group's other entries still compare by signature: keep one */
		g[a].sig = pd_labels_dup(key);
		if (!g[a].sig) {
			rc = oom(ev);
			goto out;
		}
	}
out:
	sigs_free(g, in->n);
	free(groups);
	free(k);
	return rc;
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
		return oom(ev);
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
			if (!over_time(fn->id, &a.m[i], rs, re, sel->range_ms, &x))
				continue;
			struct pd_labels *ls;
			if (fn->id == F_LAST_OT)
				ls = pd_labels_dup(a.m[i].ls);
			else if ((rc = drop_name(ev, a.m[i].ls, &ls)))
				break;
			if (!ls) {
				rc = oom(ev);
				break;
			}
			if ((rc = vec_push(ev, out, &cap, ls, 1, x)))
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
			rc = oom(ev);
		else
			rc = vec_push(ev, out, &cap, ls, 1, a.num);
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
		if ((rc = vec_push(ev, out, &cap, ls, 1, instant_fn(fn->id, a.s[i].v, b.num))))
			break;
	}
out:
	value_free(&a);
	value_free(&b);
	return rc;
}

static int eval_node_in(struct eval *ev, const struct pd_pq_node *n, int64_t t,
                        struct value *out);

/* Evaluates n at t into out; on failure out holds nothing (what the evaluation
 * had put in it so far is freed), so that no caller leaks a partial result. */
static int eval_node(struct eval *ev, const struct pd_pq_node *n, int64_t t, struct value *out)
{
	int rc = eval_node_in(ev, n, t, out);
	if (rc)
		value_free(out);
	return rc;
}

static int eval_node_in(struct eval *ev, const struct pd_pq_node *n, int64_t t,
                        struct value *out)
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
			if ((rc = vec_push(ev, out, &cap, s->ls, 0, s->v[b - 1])))
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
		rc = aggregate(ev, n, &r, param, out);
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
					rc = vec_push(ev, out, &cap, ls, 1, -l.s[i].v);
			}
		}
		value_free(&l);
		return rc;
	case PQ_BIN:
		if ((rc = eval_node(ev, n->lhs, t, &l)) || (rc = eval_node(ev, n->rhs, t, &r)))
			goto bin_out;
		if (l.type == PD_PROMQL_SCALAR && r.type == PD_PROMQL_SCALAR) {
			int keep;
			out->num = binop(n->op, l.num, r.num, &keep);
			if (is_cmp(n->op))
				out->num = keep ? 1 : 0;
		} else if (l.type == PD_PROMQL_VECTOR && r.type == PD_PROMQL_VECTOR) {
			rc = vector_binop(ev, n, &l, &r, out);
		} else {
			int swap = l.type == PD_PROMQL_SCALAR;
			struct value *vec = swap ? &r : &l;
			double sc = swap ? l.num : r.num;
			for (size_t i = 0; i < vec->n; i++) {
				int keep;
				double a = vec->s[i].v, x;
				x = swap ? binop(n->op, sc, a, &keep) : binop(n->op, a, sc, &keep);
				if (is_cmp(n->op) && swap)
					x = a;
				if (n->ret_bool) {
					x = keep ? 1 : 0;
					keep = 1;
				}
				if (!keep)
					continue;
				if (drops_name(n->op) || n->ret_bool) {
					struct pd_labels *ls;
					if ((rc = drop_name(ev, vec->s[i].ls, &ls)) ||
					    (rc = vec_push(ev, out, &cap, ls, 1, x)))
						break;
				} else {
					vec->s[i].v = x;
					if ((rc = take_sample(ev, out, &cap, &vec->s[i])))
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
			return oom(ev);
		s->t = nt;
		double *nv = realloc(s->v, nc * sizeof *nv);
		if (!nv)
			return oom(ev);
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
			return oom(ev);
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
			return oom(ev);
		r->s = ns;
		m->scap = nc;
	}
	struct outseries *s = &r->s[r->n];
	memset(s, 0, sizeof *s);
	if (!(s->ls = pd_labels_dup(ls)))
		return oom(ev);
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
			return oom(ev);
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
		rc = oom(&ev);
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
				rc = oom(&ev);
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
