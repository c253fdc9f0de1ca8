/* eval_int.h: the values the PromQL evaluator passes between its files: eval.c
 * (reading series, evaluating the tree, results), functions.c (the function
 * table and the functions over range vectors) and ops.c (binary operators,
 * vector matching, aggregation). Private to pkg/promql. */
#ifndef PROFD_PROMQL_EVAL_INT_H
#define PROFD_PROMQL_EVAL_INT_H

#include <stddef.h>
#include <stdint.h>

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

/* Records an out-of-memory error; returns PD_ENOMEM. (eval.c) */
int pd_pq_oom(struct eval *ev);
/* Appends a sample of labels ls and value x to vector v (capacity *cap); owned:
 * the vector takes ls, which is freed on failure too. (eval.c) */
int pd_pq_vec_push(struct eval *ev, struct value *v, size_t *cap, const struct pd_labels *ls,
                   int owned, double x);
/* Function id (F_RATE .. F_RESETS) over the samples of s (those of the window
 * (rs, re], of length range) into *out; 0 when it has no value there (too few samples),
 * 1 when *out is set. (functions.c) */
int pd_pq_over_time(int id, const struct rseries *s, int64_t rs, int64_t re, int64_t range,
                    double *out);
/* Function id (F_ABS .. F_CLAMP_MAX) of x, arg the second argument. (functions.c) */
double pd_pq_instant_fn(int id, double x, double arg);
/* The result of op on a and b; *keep 0 when a comparison is false. */
double pd_pq_binop(int op, double a, double b, int *keep);
/* The result of op on a and b; *keep 0 when a comparison is false. (ops.c) */
int pd_pq_drops_name(int op);
/* 1 when op drops the metric name from its result (arithmetic). (ops.c) */
int pd_pq_is_cmp(int op);
/* 1 when op is a comparison. (ops.c) */
int pd_pq_take_sample(struct eval *ev, struct value *out, size_t *cap, struct sample *s);
/* Moves sample s into vector out (capacity *cap), with its labels. (ops.c) */
int pd_pq_vector_binop(struct eval *ev, const struct pd_pq_node *n, struct value *l,
                       struct value *r, struct value *out);
/* Node n's binary operator between vectors l and r into out, with Prometheus's
 * vector matching. (ops.c) */
int pd_pq_aggregate(struct eval *ev, const struct pd_pq_node *n, struct value *in, double param,
                    struct value *out);

#endif
