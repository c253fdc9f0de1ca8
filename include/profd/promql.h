/* promql.h: a PromQL engine over float series: parser, evaluator and the JSON of
 * Prometheus's HTTP query API.
 *
 * The engine evaluates the subset of PromQL that docs/promql.md lists (selectors,
 * range selectors, offset and @, aggregations, functions over range vectors,
 * arithmetic and comparisons) with Prometheus's semantics, for instant queries (one
 * evaluation time) and range queries (start, end, step). It reads data through a
 * struct pd_promql_source, a callback that yields the series matching some matchers
 * with their samples in a time range, so it knows nothing of where series live;
 * struct pd_promql_memstore is an in-memory source. Errors are Prometheus's: a
 * parse error reads `1:5: parse error: unexpected ...` (line:column, 1-based, in
 * bytes), and every error carries the errorType the HTTP API reports. */
#ifndef PROFD_PROMQL_H
#define PROFD_PROMQL_H

#include <stddef.h>
#include <stdint.h>

#include "profd/labels.h"
#include "profd/util.h"

/* ---- limits and options ----------------------------------------------------- */

#define PD_PROMQL_DEFAULT_LOOKBACK_MS (5 * 60 * 1000) /* --query.lookback-delta */
#define PD_PROMQL_DEFAULT_MAX_SAMPLES 50000000        /* --query.max-samples */
#define PD_PROMQL_DEFAULT_MAX_DEPTH 200               /* nesting of expressions in a query */
#define PD_PROMQL_DEFAULT_MAX_LEN 65536               /* bytes of query text */
#define PD_PROMQL_DEFAULT_MAX_POINTS 11000            /* steps of a range query per series */

/* Options of one query. A zero field means its default above. */
struct pd_promql_opts {
	int64_t lookback_ms; /* how far an instant selector looks back for a sample */
	size_t max_samples;  /* samples a query may hold in memory at once */
	size_t max_depth;    /* height of the parsed tree: operators, calls and parentheses
	                        each count a level; bounds every recursion over it */
	size_t max_len;      /* bytes of the query text */
	size_t max_points;   /* evaluation steps of a range query */
	/* The timeout hook: called now and then during evaluation (at least once per
	 * step and per series read); a non-zero return stops the query with errorType
	 * "timeout" ("query timed out in expression evaluation"). NULL: never. */
	int (*interrupted)(void *ctx);
	void *interrupted_ctx;
};

/* ---- errors ------------------------------------------------------------------ */

/* The errorType of Prometheus's HTTP API a failure maps to. Fixed values. */
enum pd_promql_errtype {
	PD_PROMQL_ERR_NONE = 0,
	PD_PROMQL_ERR_BAD_DATA = 1,  /* "bad_data": the query does not parse or type-check */
	PD_PROMQL_ERR_EXECUTION = 2, /* "execution": evaluation failed (limits, matching) */
	PD_PROMQL_ERR_TIMEOUT = 3,   /* "timeout": the interrupted hook said stop */
	PD_PROMQL_ERR_INTERNAL = 4,  /* "internal": out of memory, the source failed */
};

/* A failure: the message as Prometheus words it and its errorType. */
struct pd_promql_err {
	enum pd_promql_errtype type;
	struct pd_err err;
};

/* "bad_data", "execution", "timeout", "internal" ("" for NONE); static. */
const char *pd_promql_errtype_string(enum pd_promql_errtype t);

/* ---- data source ------------------------------------------------------------- */

/* Called by a source once per series: ls and the n samples (timestamps in Unix
 * milliseconds, strictly increasing, with their values) are borrowed for the call;
 * the engine copies what it keeps. A non-zero return stops the source, which
 * returns that value. */
typedef int (*pd_promql_series_fn)(void *arg, const struct pd_labels *ls, const int64_t *t,
                                   const double *v, size_t n);

/* Where the engine reads series. select calls fn once for every series that
 * matches all n matchers and has samples in [mint, maxt] (Unix milliseconds, both
 * inclusive), with exactly its samples in that range, in any series order. It
 * returns 0, fn's non-zero return, or a negative PD_E... code with a message in
 * err. The engine may call select several times per query, from one thread. */
struct pd_promql_source {
	int (*select)(void *ctx, struct pd_labels_matcher *const *ms, size_t n, int64_t mint,
	              int64_t maxt, pd_promql_series_fn fn, void *arg, struct pd_err *err);
	void *ctx;
};

/* An in-memory source: series and samples added one by one, for tests and tools. */
struct pd_promql_memstore;

/* A new, empty store owned by the caller, or NULL when out of memory. */
struct pd_promql_memstore *pd_promql_memstore_create(void);
/* Frees the store; NULL does nothing. Sources taken from it become invalid. */
void pd_promql_memstore_destroy(struct pd_promql_memstore *m);
/* Adds sample (t ms, v) to the series ls (copied when new). Samples of a series may
 * come in any order; a second sample at the same timestamp replaces the first. */
int pd_promql_memstore_add(struct pd_promql_memstore *m, const struct pd_labels *ls, int64_t t,
                           double v);
/* The store as a source; it borrows m, which must outlive its use. */
struct pd_promql_source pd_promql_memstore_source(struct pd_promql_memstore *m);

/* ---- parsing ----------------------------------------------------------------- */

/* A parsed, type-checked expression. */
struct pd_promql_expr;

/* Parses query (len bytes) as Prometheus's parser.ParseExpr does, and checks the
 * types of every operand. On success *out is new and owned by the caller
 * (pd_promql_expr_destroy). On failure the message is Prometheus's, with its
 * position (`1:8: parse error: unexpected <EOF>`) and errorType bad_data; what
 * profd does not support is named (`1:4: parse error: subqueries are not supported
 * by profd`). opts may be NULL. */
int pd_promql_parse(struct pd_promql_expr **out, const char *query, size_t len,
                    const struct pd_promql_opts *opts, struct pd_promql_err *err);

/* Frees an expression; NULL does nothing. */
void pd_promql_expr_destroy(struct pd_promql_expr *e);

/* The type of an expression's value, as Prometheus names it. */
enum pd_promql_type {
	PD_PROMQL_SCALAR = 0, /* "scalar" */
	PD_PROMQL_VECTOR = 1, /* "vector" (an instant vector) */
	PD_PROMQL_MATRIX = 2, /* "matrix" (a range vector) */
	PD_PROMQL_STRING = 3, /* "string" */
};

enum pd_promql_type pd_promql_expr_type(const struct pd_promql_expr *e);
/* "scalar", "vector", "matrix", "string"; static. */
const char *pd_promql_type_string(enum pd_promql_type t);

/* Appends e as text with every operator in parentheses, e.g. `1 + 2 * 3` as
 * `(1 + (2 * 3))`: shows how the parser grouped it. */
int pd_promql_expr_format(const struct pd_promql_expr *e, struct pd_buf *b);

/* ---- evaluation -------------------------------------------------------------- */

/* The result of a query: a scalar, a string, or a list of series with their
 * points. An instant query's vector has one point per series at the evaluation
 * time; a matrix (a range query's result, or an instant query of a range vector)
 * has points in time order. Series are ordered by their labels. */
struct pd_promql_result;

/* Evaluates query at time t (Unix ms) over src. On success *out is new and owned by
 * the caller (pd_promql_result_destroy). opts may be NULL. */
int pd_promql_query_instant(struct pd_promql_result **out, const struct pd_promql_source *src,
                            const char *query, size_t len, int64_t t,
                            const struct pd_promql_opts *opts, struct pd_promql_err *err);

/* Evaluates query at start, start + step, ... up to end (Unix ms; step > 0; end >=
 * start), as Prometheus's query_range does; the result is a matrix. A query of a
 * string or range-vector type is refused, as Prometheus does. */
int pd_promql_query_range(struct pd_promql_result **out, const struct pd_promql_source *src,
                          const char *query, size_t len, int64_t start, int64_t end, int64_t step,
                          const struct pd_promql_opts *opts, struct pd_promql_err *err);

/* Frees a result; NULL does nothing. */
void pd_promql_result_destroy(struct pd_promql_result *r);

enum pd_promql_type pd_promql_result_type(const struct pd_promql_result *r);
/* A scalar's value and time; a string's time. */
double pd_promql_result_scalar(const struct pd_promql_result *r);
int64_t pd_promql_result_time(const struct pd_promql_result *r);
/* A string's value, borrowed from r; NULL for other types. */
const char *pd_promql_result_string(const struct pd_promql_result *r);
/* Series of a vector or matrix (0 for a scalar or string). */
size_t pd_promql_result_len(const struct pd_promql_result *r);
/* Series i: its labels and its n points, all borrowed from r. */
const struct pd_labels *pd_promql_result_series(const struct pd_promql_result *r, size_t i,
                                                const int64_t **t, const double **v, size_t *n);

/* Appends the `data` object of Prometheus's HTTP API for r:
 * {"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1.5,"2"]}]},
 * times as seconds with milliseconds, values as strings the way Go's
 * strconv.FormatFloat(v, 'f', -1, 64) writes them ("NaN", "+Inf", "-Inf"). */
int pd_promql_result_json(const struct pd_promql_result *r, struct pd_buf *b);

/* Appends v as Prometheus writes a sample value (see above). */
int pd_promql_format_value(struct pd_buf *b, double v);

#endif
