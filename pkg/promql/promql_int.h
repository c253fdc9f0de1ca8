/* promql_int.h: what the files of pkg/promql share privately: the syntax tree the
 * parser builds and the evaluator walks, and the error helpers. */
#ifndef PROFD_PROMQL_INT_H
#define PROFD_PROMQL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "profd/labels.h"
#include "profd/promql.h"

/* Operators, by token. */
enum pd_pq_op {
	PQ_OP_NONE = 0,
	PQ_OP_ADD,
	PQ_OP_SUB,
	PQ_OP_MUL,
	PQ_OP_DIV,
	PQ_OP_MOD,
	PQ_OP_POW,
	PQ_OP_ATAN2,
	PQ_OP_EQL,
	PQ_OP_NEQ,
	PQ_OP_LSS,
	PQ_OP_LTE,
	PQ_OP_GTR,
	PQ_OP_GTE,
	PQ_OP_AND,
	PQ_OP_OR,
	PQ_OP_UNLESS,
};

enum pd_pq_agg {
	PQ_AGG_SUM = 0,
	PQ_AGG_AVG,
	PQ_AGG_MIN,
	PQ_AGG_MAX,
	PQ_AGG_COUNT,
	PQ_AGG_TOPK,
	PQ_AGG_BOTTOMK,
	PQ_AGG_GROUP,
	PQ_AGG_STDDEV,
	PQ_AGG_STDVAR,
};

/* The aggregation operators' names, by enum pd_pq_agg value (parse.c). */
extern const char *const pd_pq_agg_names[PQ_AGG_STDVAR + 1];

enum pd_pq_kind {
	PQ_NUM = 0, /* number literal */
	PQ_STR,     /* string literal */
	PQ_SEL,     /* vector selector, with or without a range */
	PQ_AGG,     /* aggregation */
	PQ_CALL,    /* function call */
	PQ_BIN,     /* binary operator */
	PQ_NEG,     /* unary minus */
	PQ_PAREN,   /* parentheses */
};

/* A series as read from the source, held for the whole query. */
struct pd_pq_series {
	struct pd_labels *ls;
	int64_t *t;
	double *v;
	size_t n;
};

struct pd_pq_func;

/* One node of the syntax tree; owned by its parent (the root by the expr). */
struct pd_pq_node {
	enum pd_pq_kind kind;
	enum pd_promql_type type;
	size_t pos;    /* byte offset of the node's first token */
	size_t height; /* nodes on the longest path down to a leaf, this one included */
	double num;
	char *str;
	/* selector */
	struct pd_labels_selector *sel;
	int64_t range_ms; /* 0: an instant selector */
	int64_t offset_ms;
	int at; /* 0: none, 1: at_ms, 2: start(), 3: end() */
	int64_t at_ms;
	struct pd_pq_series *series; /* read by the evaluator */
	size_t nseries;
	/* aggregation, call, binary, unary, parentheses */
	int op; /* enum pd_pq_agg or enum pd_pq_op */
	const struct pd_pq_func *fn;
	struct pd_pq_node **args; /* call arguments; aggregation: [param,] expr */
	size_t nargs;
	struct pd_pq_node *lhs, *rhs; /* binary; lhs also the operand of NEG and PAREN */
	char **labels;                /* by/without or on/ignoring labels */
	size_t nlabels;
	int without;  /* aggregation: without (...) */
	int matching; /* binary: 0 none, 1 on (...), 2 ignoring (...) */
	int ret_bool; /* binary: bool modifier */
};

struct pd_promql_expr {
	struct pd_pq_node *root;
};

/* Function implementations (eval.c) and their table. */
enum pd_pq_argt { PQ_ARG_SCALAR, PQ_ARG_VECTOR, PQ_ARG_MATRIX, PQ_ARG_STRING };

struct pd_pq_func {
	const char *name;
	int id;
	enum pd_pq_argt args[3];
	int nargs;    /* required arguments */
	int optional; /* extra optional arguments */
	enum pd_promql_type ret;
};

/* The function called name (len bytes), or NULL. */
const struct pd_pq_func *pd_pq_func_lookup(const char *name, size_t len);

void pd_pq_node_free(struct pd_pq_node *n);

/* Sets err to a failure of errtype t with a printf-style message; returns code. */
int pd_pq_fail(struct pd_promql_err *err, enum pd_promql_errtype t, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
