/* test_promql.c: unit tests of the promql package: how the parser groups operators
 * and words its errors, and evaluation results worked out by hand from
 * Prometheus's documented semantics (extrapolation of rate/increase/delta, counter
 * resets, deriv's least squares, lookback, aggregation, topk ties, vector
 * matching, NaN), the limits, and the JSON of the HTTP API. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/labels.h"
#include "profd/promql.h"
#include "profd/util.h"

/* ---- helpers ---------------------------------------------------------------------- */

static struct pd_promql_memstore *store;
static struct pd_promql_source src;

static void add(const char *series, int64_t t_s, double v)
{
	struct pd_labels *ls;
	struct pd_err err = {0};
	assert_int_equal(pd_labels_parse(&ls, series, NULL, &err), 0);
	assert_int_equal(pd_promql_memstore_add(store, ls, t_s * 1000, v), 0);
	pd_labels_destroy(ls);
}

static int setup(void **state)
{
	store = pd_promql_memstore_create();
	assert_non_null(store);
	src = pd_promql_memstore_source(store);
	return 0;
}

static int teardown(void **state)
{
	pd_promql_memstore_destroy(store);
	store = NULL;
	return 0;
}

static char *fmt(const char *q)
{
	static char out[1024];
	struct pd_promql_expr *e;
	struct pd_promql_err err = {0};
	struct pd_buf b;
	int rc = pd_promql_parse(&e, q, strlen(q), NULL, &err);
	if (rc) {
		snprintf(out, sizeof out, "ERR %s", err.err.msg);
		return out;
	}
	pd_buf_init(&b, 0);
	assert_int_equal(pd_promql_expr_format(e, &b), 0);
	snprintf(out, sizeof out, "%.*s", (int)b.len, (const char *)b.data);
	pd_buf_fini(&b);
	pd_promql_expr_destroy(e);
	return out;
}

static const char *parse_err(const char *q, enum pd_promql_errtype *type)
{
	static struct pd_promql_err err;
	struct pd_promql_expr *e = NULL;
	memset(&err, 0, sizeof err);
	int rc = pd_promql_parse(&e, q, strlen(q), NULL, &err);
	pd_promql_expr_destroy(e);
	if (!rc)
		return "(parsed)";
	if (type)
		*type = err.type;
	return err.err.msg;
}

/* Runs an instant query at t_ms and returns its JSON (static buffer). */
static const char *instant_opts(const char *q, int64_t t_ms, const struct pd_promql_opts *o)
{
	static char out[16384];
	struct pd_promql_result *r = NULL;
	struct pd_promql_err err = {0};
	struct pd_buf b;
	if (pd_promql_query_instant(&r, &src, q, strlen(q), t_ms, o, &err)) {
		snprintf(out, sizeof out, "%s: %s", pd_promql_errtype_string(err.type),
		         err.err.msg);
		return out;
	}
	pd_buf_init(&b, 0);
	assert_int_equal(pd_promql_result_json(r, &b), 0);
	snprintf(out, sizeof out, "%.*s", (int)b.len, (const char *)b.data);
	pd_buf_fini(&b);
	pd_promql_result_destroy(r);
	return out;
}

static const char *instant(const char *q, int64_t t_ms)
{
	return instant_opts(q, t_ms, NULL);
}

/* The single value of an instant query's one-sample vector or scalar. */
static double value_of(const char *q, int64_t t_ms)
{
	struct pd_promql_result *r = NULL;
	struct pd_promql_err err = {0};
	int rc = pd_promql_query_instant(&r, &src, q, strlen(q), t_ms, NULL, &err);
	if (rc)
		fail_msg("%s: %s", q, err.err.msg);
	double v;
	if (pd_promql_result_type(r) == PD_PROMQL_SCALAR) {
		v = pd_promql_result_scalar(r);
	} else {
		if (pd_promql_result_len(r) != 1)
			fail_msg("%s: %zu series", q, pd_promql_result_len(r));
		const double *vs;
		pd_promql_result_series(r, 0, NULL, &vs, NULL);
		v = vs[0];
	}
	pd_promql_result_destroy(r);
	return v;
}

static void assert_close_at(double a, double b, int line)
{
	if (!(fabs(a - b) <= 1e-12 * fmax(1, fabs(b))))
		fail_msg("line %d: got %.17g, want %.17g", line, a, b);
}
#define assert_close(a, b) assert_close_at((a), (b), __LINE__)

/* ---- parser ----------------------------------------------------------------------- */

static void test_precedence(void **state)
{
	assert_string_equal(fmt("1 + 2 * 3"), "(1 + (2 * 3))");
	assert_string_equal(fmt("1 * 2 + 3"), "((1 * 2) + 3)");
	assert_string_equal(fmt("2 ^ 3 ^ 2"), "(2 ^ (3 ^ 2))");
	assert_string_equal(fmt("8 - 4 - 2"), "((8 - 4) - 2)");
	assert_string_equal(fmt("8 / 4 % 3 * 2"), "(((8 / 4) % 3) * 2)");
	assert_string_equal(fmt("-2 ^ 2"), "-(2 ^ 2)");
	assert_string_equal(fmt("-a * b"), "(-a * b)");
	/* a negation kept apart from a number by parentheses stays apart when printed */
	assert_string_equal(fmt("a - --(-2)"), "(a - -(-(-2)))");
	assert_string_equal(fmt("--a"), "-(-a)");
	assert_string_equal(fmt("(-a) ^ b"), "((-a) ^ b)");
	assert_string_equal(fmt("-(a) ^ b"), "-(a ^ b)");
	assert_string_equal(fmt("a + b > bool c"), "((a + b) > bool c)");
	assert_string_equal(fmt("a or b and c unless d"), "(a or ((b and c) unless d))");
	assert_string_equal(fmt("a == b or c"), "((a == b) or c)");
	assert_string_equal(fmt("(1 + 2) * 3"), "((1 + 2) * 3)");
	assert_string_equal(fmt("a * on(x, y) b"), "(a * on (x, y) b)");
	assert_string_equal(fmt("sum without (instance) (rate(x[5m] offset 1m))"),
	                    "sum without (instance) (rate(x[300s] offset 60s))");
	assert_string_equal(fmt("sum(x) by (job)"), "sum by (job) (x)");
	assert_string_equal(fmt("topk by (job) (3, x)"), "topk by (job) (3, x)");
	assert_string_equal(fmt("x{a=\"b\"} @ 100"), "x{a=\"b\"} @ 100.000");
	assert_string_equal(fmt("x[1h30m]"), "x[5400s]");
	assert_string_equal(fmt("0x10 + 1e2 + .5"), "((16 + 100) + 0.5)");
	assert_string_equal(fmt("Inf - -NaN"), "(+Inf - NaN)");
	assert_string_equal(fmt("'a\\n' # a comment"), "\"a\\n\"");
}

static void test_parse_errors(void **state)
{
	enum pd_promql_errtype t = PD_PROMQL_ERR_NONE;
	assert_string_equal(parse_err("foo[5m:1m]", &t),
	                    "1:4: parse error: subqueries are not supported by profd");
	assert_int_equal(t, PD_PROMQL_ERR_BAD_DATA);
	assert_string_equal(parse_err("rate(foo[5m])[30m:]", NULL),
	                    "1:14: parse error: subqueries are not supported by profd");
	assert_string_equal(parse_err("rate(foo)", NULL),
	                    "1:6: parse error: expected type range vector in call to function "
	                    "\"rate\", got instant vector");
	assert_string_equal(parse_err("sum(foo[5m])", NULL),
	                    "1:5: parse error: expected type instant vector in aggregation "
	                    "expression, got range vector");
	assert_string_equal(parse_err("1 > 2", NULL),
	                    "1:1: parse error: comparisons between scalars must use BOOL modifier");
	assert_string_equal(parse_err("foo + bool bar", NULL),
	                    "1:7: parse error: bool modifier can only be used on comparison "
	                    "operators");
	assert_string_equal(parse_err("foo[5m] + 1", NULL),
	                    "1:1: parse error: binary expression must contain only scalar and "
	                    "instant vector types");
	assert_string_equal(parse_err("foo / on(a) group_left bar", NULL),
	                    "1:13: parse error: group_left is not supported by profd: only "
	                    "one-to-one vector matching is");
	assert_string_equal(parse_err("nosuch(foo)", NULL),
	                    "1:1: parse error: unknown function with name \"nosuch\"");
	assert_string_equal(parse_err("rate(foo[5m], 1)", NULL),
	                    "1:1: parse error: expected 1 argument(s) in call to \"rate\", got 2");
	assert_string_equal(parse_err("sum(foo) offset 5m", NULL),
	                    "1:10: parse error: offset modifier must be preceded by an instant "
	                    "vector selector or range vector selector or a subquery");
	assert_string_equal(parse_err("(foo)[5m]", NULL),
	                    "1:1: parse error: ranges only allowed for vector selectors");
	assert_string_equal(parse_err("", NULL), "1:1: parse error: no expression found in input");
	assert_string_equal(parse_err("foo +", NULL), "1:6: parse error: unexpected end of input");
	assert_string_equal(parse_err("foo )", NULL),
	                    "1:5: parse error: unexpected right parenthesis \")\"");
	assert_string_equal(parse_err("quantile(0.5, foo)", NULL),
	                    "1:1: parse error: aggregation \"quantile\" is not supported by profd");
	/* positions on later lines, from the selector parser too */
	assert_string_equal(parse_err("foo +\n  bar{a=~\"(\"}", NULL),
	                    "2:7: parse error: error parsing regexp \"(\" at offset 1: missing "
	                    "closing ): `(`");
	assert_string_equal(parse_err("sum(\n  rate(x[5m]) +\n  )", NULL),
	                    "3:3: parse error: unexpected right parenthesis \")\"");
	assert_string_equal(parse_err("{a=\"\"}", NULL),
	                    "1:1: parse error: vector selector must contain at least one "
	                    "non-empty matcher");
	assert_string_equal(parse_err("\"abc", NULL),
	                    "1:1: parse error: unterminated quoted string \"");
	assert_string_equal(parse_err("x[1h1d]", NULL),
	                    "1:3: parse error: not a valid duration string: \"1h1d\"");
	assert_string_equal(parse_err("1 + 5x", NULL),
	                    "1:5: parse error: bad number or duration syntax: \"5x\"");
}

static void test_parse_limits(void **state)
{
	/* nesting is bounded, so no input can exhaust the stack */
	size_t n = 100000;
	char *q = malloc(2 * n + 2);
	assert_non_null(q);
	memset(q, '(', n);
	q[n] = '1';
	memset(q + n + 1, ')', n);
	q[2 * n + 1] = '\0';
	struct pd_promql_opts o = {.max_len = 4 * n};
	struct pd_promql_expr *e = NULL;
	struct pd_promql_err err = {0};
	assert_int_equal(pd_promql_parse(&e, q, strlen(q), &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.err.msg, "nested more than 200 levels deep"));
	/* a query longer than the limit is refused */
	assert_int_equal(pd_promql_parse(&e, q, strlen(q), NULL, &err), PD_ETOOBIG);
	/* unary minus nests too */
	for (size_t i = 0; i < 600; i++)
		q[i] = i % 2 ? '-' : ' ';
	q[600] = '\0';
	strcat(q, "1");
	assert_int_equal(pd_promql_parse(&e, q, strlen(q), NULL, &err), PD_EINVAL);
	free(q);
	/* 199 levels are fine */
	char deep[600];
	memset(deep, '(', 198);
	deep[198] = '1';
	memset(deep + 199, ')', 198);
	deep[397] = '\0';
	assert_int_equal(pd_promql_parse(&e, deep, strlen(deep), NULL, &err), 0);
	pd_promql_expr_destroy(e);
}

/* head, then rep n times, then tail, as a new string (freed by the caller). */
static char *repeat(const char *head, const char *rep, size_t n, const char *tail)
{
	size_t hl = strlen(head), rl = strlen(rep), tl = strlen(tail);
	char *q = malloc(hl + rl * n + tl + 1);
	assert_non_null(q);
	memcpy(q, head, hl);
	for (size_t i = 0; i < n; i++)
		memcpy(q + hl + rl * i, rep, rl);
	memcpy(q + hl + rl * n, tail, tl + 1);
	return q;
}

/* The error of q, which must fail to parse with bad_data, as an instant query too. */
static const char *depth_err(const char *q)
{
	static char msg[PD_ERR_MSG_MAX];
	struct pd_promql_expr *e = NULL;
	struct pd_promql_err err = {0};
	assert_true(strlen(q) <= PD_PROMQL_DEFAULT_MAX_LEN);
	assert_int_equal(pd_promql_parse(&e, q, strlen(q), NULL, &err), PD_EINVAL);
	assert_null(e);
	assert_int_equal(err.type, PD_PROMQL_ERR_BAD_DATA);
	snprintf(msg, sizeof msg, "%s", err.err.msg);
	struct pd_promql_result *r = NULL;
	memset(&err, 0, sizeof err);
	assert_int_equal(pd_promql_query_instant(&r, &src, q, strlen(q), 0, NULL, &err), PD_EINVAL);
	assert_null(r);
	assert_int_equal(err.type, PD_PROMQL_ERR_BAD_DATA);
	assert_string_equal(err.err.msg, msg);
	return msg;
}

/* q is refused at column col for nesting more than the default 200 levels. */
#define assert_too_deep(q, col)                                                                    \
	assert_string_equal(depth_err(q),                                                          \
	                    "1:" #col ": parse error: query is nested more than 200 "              \
	                    "levels deep")

static void test_depth_chains(void **state)
{
	char *q;
	add("d", 10, 3);
	/* a left-deep chain of 10,000 operators (20 KB) nests 10,001 levels: refused at
	 * the operator that makes it 201 deep, the 200th */
	q = repeat("1", "+1", 10000, "");
	assert_too_deep(q, 400);
	free(q);
	q = repeat("d", " * d", 10000, "");
	assert_too_deep(q, 799);
	free(q);
	q = repeat("1", "+1", 200, "");
	assert_too_deep(q, 400);
	free(q);
	/* 199 operators nest 200 levels: evaluated, in instant and range queries, and
	 * formatted */
	q = repeat("1", "+1", 199, "");
	assert_close(value_of(q, 10000), 200);
	free(q);
	q = repeat("d", " - d", 199, "");
	assert_close(value_of(q, 10000), 3 - 199 * 3);
	struct pd_promql_result *r = NULL;
	struct pd_promql_err err = {0};
	assert_int_equal(
	    pd_promql_query_range(&r, &src, q, strlen(q), 10000, 20000, 1000, NULL, &err), 0);
	assert_int_equal(pd_promql_result_len(r), 1);
	pd_promql_result_destroy(r);
	free(q);

	/* unary minus: on a number it folds, on a series it nests */
	q = repeat("", "- ", 10000, "1");
	assert_too_deep(q, 401);
	free(q);
	q = repeat("", "-", 10000, "d");
	assert_too_deep(q, 201);
	free(q);
	q = repeat("", "+", 10000, "d");
	assert_too_deep(q, 201);
	free(q);
	q = repeat("", "-", 199, "d");
	assert_close(value_of(q, 10000), -3);
	free(q);
	q = repeat("", "- ", 199, "1");
	assert_close(value_of(q, 10000), -1);
	free(q);

	/* right-associative ^ recurses on its right operand */
	q = repeat("1", " ^ 2", 10000, "");
	assert_too_deep(q, 801);
	free(q);
	q = repeat("d", " ^ 1", 199, "");
	assert_close(value_of(q, 10000), 3);
	free(q);

	/* function calls and aggregations */
	q = repeat("", "abs(", 10000, "d");
	assert_too_deep(q, 801);
	free(q);
	q = repeat("", "sum(", 10000, "d");
	assert_too_deep(q, 801);
	free(q);
	char *in = repeat("", "abs(", 199, "d");
	q = repeat(in, ")", 199, "");
	assert_close(value_of(q, 10000), 3);
	free(q);
	free(in);

	/* parentheses: 199 pairs nest 200 levels, 200 pairs are refused */
	in = repeat("", "(", 199, "d");
	q = repeat(in, ")", 199, "");
	assert_close(value_of(q, 10000), 3);
	free(q);
	free(in);
	in = repeat("", "(", 200, "d");
	q = repeat(in, ")", 200, "");
	assert_too_deep(q, 201);
	free(q);
	free(in);
	/* a chain of 199 operators inside parentheses: 201 levels, refused at the '(' */
	in = repeat("(1", "+1", 199, "");
	q = repeat(in, ")", 1, "");
	assert_too_deep(q, 1);
	free(q);
	free(in);
	/* a chain as a function's argument, and in parentheses as an operand */
	in = repeat("abs(d", " + d", 199, "");
	q = repeat(in, ")", 1, "");
	assert_too_deep(q, 1);
	free(q);
	free(in);
	q = repeat("d + (d", " * d", 199, ")");
	assert_too_deep(q, 5);
	free(q);

	/* subqueries are refused at the first, however many follow */
	q = repeat("d", "[5m:]", 10000, "");
	assert_string_equal(depth_err(q),
	                    "1:2: parse error: subqueries are not supported by profd");
	free(q);
	q = repeat("rate(d[5m])", "[5m:]", 10000, "");
	assert_string_equal(depth_err(q), "1:12: parse error: subqueries are not supported by "
	                                  "profd");
	free(q);

	/* a lower limit applies to every shape alike */
	struct pd_promql_opts o = {.max_depth = 5};
	struct pd_promql_expr *e = NULL;
	assert_int_equal(pd_promql_parse(&e, "1+1+1+1+1", 9, &o, &err), 0);
	pd_promql_expr_destroy(e);
	assert_int_equal(pd_promql_parse(&e, "1+1+1+1+1+1", 11, &o, &err), PD_EINVAL);
	assert_string_equal(err.err.msg,
	                    "1:10: parse error: query is nested more than 5 levels deep");
	assert_int_equal(pd_promql_parse(&e, "-(-(d))", 7, &o, &err), 0); /* NEG ( NEG ( d */
	pd_promql_expr_destroy(e);
	assert_int_equal(pd_promql_parse(&e, "-(-(-d))", 8, &o, &err), PD_EINVAL);
	assert_string_equal(err.err.msg,
	                    "1:6: parse error: query is nested more than 5 levels deep");
}

/* Every shape nested just under the limit, parsed, formatted and evaluated on a
 * thread with a 1 MiB stack (an eighth of a default thread's): the limit keeps
 * every walk over the tree far from any stack's end. */
static void *deep_queries(void *arg)
{
	static const char *const shapes[][3] = {
	    {"d", " + d", ""}, {"", "-", "d"},    {"d", " ^ d", ""},         {"", "(", "d"},
	    {"", "abs(", "d"}, {"", "sum(", "d"}, {"", "sum by (a) (", "d"},
	};
	int *ok = arg;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		int open = shapes[i][0][0] == '\0' && shapes[i][1][0] != '-';
		char *in = repeat(shapes[i][0], shapes[i][1], 199, shapes[i][2]);
		char *q = open ? repeat(in, ")", 199, "") : in;
		struct pd_promql_result *r = NULL;
		struct pd_promql_err err = {0};
		struct pd_promql_expr *e = NULL;
		struct pd_buf b;
		pd_buf_init(&b, 0);
		if (pd_promql_parse(&e, q, strlen(q), NULL, &err) || pd_promql_expr_format(e, &b) ||
		    pd_promql_query_range(&r, &src, q, strlen(q), 0, 20000, 1000, NULL, &err) ||
		    pd_promql_result_len(r) != 1)
			*ok = 0;
		pd_promql_result_destroy(r);
		pd_promql_expr_destroy(e);
		pd_buf_fini(&b);
		if (open)
			free(q);
		free(in);
	}
	return NULL;
}

static void test_depth_stack(void **state)
{
	add("d{a=\"x\"}", 10, 3);
	pthread_attr_t at;
	pthread_t th;
	int ok = 1;
	assert_int_equal(pthread_attr_init(&at), 0);
	assert_int_equal(pthread_attr_setstacksize(&at, 1 << 20), 0);
	assert_int_equal(pthread_create(&th, &at, deep_queries, &ok), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_attr_destroy(&at);
	assert_true(ok);
}

/* ---- functions over range vectors -------------------------------------------------- */

static void test_rate_extrapolation(void **state)
{
	/* samples 30 s from both ends of the 5m range [0, 300]: a counter from 0 */
	for (int i = 0; i < 5; i++)
		add("c{job=\"a\"}", 30 + 60 * i, 10 * i);
	/* sampled 240 s, average step 60 s; to the start 30 s but the counter
	 * reaches zero at the first sample, so 0; to the end 30 s (< 66 s):
	 * increase = 40 * (240 + 0 + 30) / 240 = 45, rate = 45 / 300 */
	assert_close(value_of("increase(c[5m])", 300000), 45);
	assert_close(value_of("rate(c[5m])", 300000), 0.15);
	/* delta does not stop at zero: 40 * 300 / 240 */
	assert_close(value_of("delta(c[5m])", 300000), 50);
	/* the name is dropped */
	assert_string_equal(instant("rate(c[5m])", 300000),
	                    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"job\":\"a\"},"
	                    "\"value\":[300,\"0.15\"]}]}");
	/* fewer than two samples: nothing */
	assert_string_equal(instant("rate(c[1m])", 60000),
	                    "{\"resultType\":\"vector\",\"result\":[]}");
}

static void test_rate_resets(void **state)
{
	static const double v[] = {10, 20, 5, 15, 25};
	for (int i = 0; i < 5; i++)
		add("r", 30 + 60 * i, v[i]);
	/* 25 - 10 + 20 (the reset from 20 to 5) = 35; zero would be reached 240 *
	 * 10 / 35 = 68.6 s before the first sample, more than the 30 s to the
	 * start: 35 * 300 / 240 */
	assert_close(value_of("increase(r[5m])", 300000), 43.75);
	assert_close(value_of("rate(r[5m])", 300000), 43.75 / 300);
	assert_close(value_of("resets(r[5m])", 300000), 1);
	assert_close(value_of("delta(r[5m])", 300000), 15.0 * 300 / 240);
	/* irate: the last two samples; idelta as well */
	assert_close(value_of("irate(r[5m])", 300000), 10.0 / 60);
	assert_close(value_of("idelta(r[5m])", 300000), 10);
}

static void test_rate_far_from_edges(void **state)
{
	/* samples at 100, 160, 220 in [0, 300]: both gaps exceed 1.1 x 60 s, so
	 * each side extends by half an average step (30 s) */
	add("g", 100, 0);
	add("g", 160, 6);
	add("g", 220, 12);
	assert_close(value_of("delta(g[5m])", 300000), 12.0 * 180 / 120);
	/* as a counter it starts at 0 at the first sample: only the end extends */
	assert_close(value_of("increase(g[5m])", 300000), 12.0 * 150 / 120);
	/* deriv: slope of the least-squares line, 6 per minute */
	assert_close(value_of("deriv(g[5m])", 300000), 0.1);
}

static void test_over_time(void **state)
{
	static const double v[] = {4, -2, 7, 1};
	for (int i = 0; i < 4; i++)
		add("m", 10 * (i + 1), v[i]);
	assert_close(value_of("sum_over_time(m[1m])", 60000), 10);
	assert_close(value_of("avg_over_time(m[1m])", 60000), 2.5);
	assert_close(value_of("min_over_time(m[1m])", 60000), -2);
	assert_close(value_of("max_over_time(m[1m])", 60000), 7);
	assert_close(value_of("count_over_time(m[1m])", 60000), 4);
	assert_close(value_of("last_over_time(m[1m])", 60000), 1);
	assert_close(value_of("changes(m[1m])", 60000), 3);
	/* population variance: mean 2.5, squares 2.25 + 20.25 + 20.25 + 2.25 */
	assert_close(value_of("stdvar_over_time(m[1m])", 60000), 11.25);
	assert_close(value_of("stddev_over_time(m[1m])", 60000), sqrt(11.25));
	/* the range is closed: [20, 40] holds the samples at 20, 30 and 40 */
	assert_close(value_of("count_over_time(m[20s])", 40000), 3);
	/* offset moves the window back: [0, 20] */
	assert_close(value_of("sum_over_time(m[20s] offset 20s)", 40000), 2);
	/* @ fixes the time whatever the evaluation time */
	assert_close(value_of("sum_over_time(m[20s] @ 40)", 1000000), 6);
	/* last_over_time keeps the metric name, the others drop it */
	assert_non_null(strstr(instant("last_over_time(m[1m])", 60000), "\"__name__\":\"m\""));
	assert_null(strstr(instant("max_over_time(m[1m])", 60000), "__name__"));
	/* min/max skip NaN unless all are NaN */
	add("n", 10, NAN);
	add("n", 20, 3);
	add("n", 30, NAN);
	assert_close(value_of("max_over_time(n[1m])", 60000), 3);
	assert_close(value_of("min_over_time(n[1m])", 60000), 3);
	assert_true(isnan(value_of("sum_over_time(n[1m])", 60000)));
}

/* ---- selectors and lookback ------------------------------------------------------ */

static void test_lookback(void **state)
{
	add("s{a=\"1\"}", 100, 7);
	add("s{a=\"1\"}", 200, 8);
	/* the latest sample at or before t, as long as it is within 5 minutes */
	assert_close(value_of("s", 199000), 7);
	assert_close(value_of("s", 200000), 8);
	assert_close(value_of("s", 500000), 8);
	assert_string_equal(instant("s", 500001), "{\"resultType\":\"vector\",\"result\":[]}");
	assert_string_equal(instant("s", 99999), "{\"resultType\":\"vector\",\"result\":[]}");
	/* the lookback delta is configurable */
	struct pd_promql_opts o = {.lookback_ms = 60000};
	assert_string_equal(instant_opts("s", 261000, &o),
	                    "{\"resultType\":\"vector\",\"result\":[]}");
	assert_non_null(strstr(instant_opts("s", 260000, &o), "\"8\""));
	/* offset and a vector keeps the sample's name */
	assert_close(value_of("s offset 100s", 250000), 7);
	assert_string_equal(
	    instant("s", 200000),
	    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":\"s\","
	    "\"a\":\"1\"},\"value\":[200,\"8\"]}]}");
	/* a range selector at the top gives a matrix of raw samples */
	assert_string_equal(
	    instant("s[5m]", 250000),
	    "{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"__name__\":\"s\","
	    "\"a\":\"1\"},\"values\":[[100,\"7\"],[200,\"8\"]]}]}");
}

/* ---- aggregation ------------------------------------------------------------------ */

static void fill_aggr(void)
{
	add("x{job=\"a\",inst=\"1\"}", 10, 1);
	add("x{job=\"a\",inst=\"2\"}", 10, 3);
	add("x{job=\"b\",inst=\"1\"}", 10, 10);
	add("x{job=\"b\",inst=\"2\"}", 10, 20);
	add("x{job=\"b\",inst=\"3\"}", 10, 30);
}

static void test_aggregation(void **state)
{
	fill_aggr();
	assert_close(value_of("sum(x)", 10000), 64);
	assert_close(value_of("count(x)", 10000), 5);
	assert_close(value_of("avg(x)", 10000), 12.8);
	assert_close(value_of("min(x)", 10000), 1);
	assert_close(value_of("max(x)", 10000), 30);
	/* by and without, before or after the argument; __name__ goes */
	const char *by =
	    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"job\":\"a\"},"
	    "\"value\":[10,\"4\"]},{\"metric\":{\"job\":\"b\"},\"value\":[10,\"60\"]}]}";
	assert_string_equal(instant("sum by (job) (x)", 10000), by);
	assert_string_equal(instant("sum(x) by (job)", 10000), by);
	assert_string_equal(instant("sum without (inst) (x)", 10000), by);
	assert_string_equal(instant("avg by (inst) (x)", 10000),
	                    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"inst\":\"1\"},"
	                    "\"value\":[10,\"5.5\"]},{\"metric\":{\"inst\":\"2\"},\"value\":[10,"
	                    "\"11.5\"]},{\"metric\":{\"inst\":\"3\"},\"value\":[10,\"30\"]}]}");
	assert_close(value_of("stddev(x{job=\"a\"})", 10000), 1);
	assert_close(value_of("group(x)", 10000), 1);
	/* topk keeps the series' labels, largest first */
	assert_string_equal(
	    instant("topk(2, x)", 10000),
	    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":\"x\","
	    "\"inst\":\"3\",\"job\":\"b\"},\"value\":[10,\"30\"]},{\"metric\":{"
	    "\"__name__\":\"x\",\"inst\":\"2\",\"job\":\"b\"},\"value\":[10,"
	    "\"20\"]}]}");
	assert_string_equal(
	    instant("bottomk by (job) (1, x)", 10000),
	    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":\"x\","
	    "\"inst\":\"1\",\"job\":\"a\"},\"value\":[10,\"1\"]},{\"metric\":{"
	    "\"__name__\":\"x\",\"inst\":\"1\",\"job\":\"b\"},\"value\":[10,"
	    "\"10\"]}]}");
	assert_string_equal(instant("topk(0, x)", 10000),
	                    "{\"resultType\":\"vector\",\"result\":[]}");
	assert_string_equal(instant("topk(NaN, x)", 10000),
	                    "execution: Scalar value nan overflows int64");
}

static void test_topk_ties_nan(void **state)
{
	add("t{i=\"c\"}", 10, 5);
	add("t{i=\"a\"}", 10, 5);
	add("t{i=\"b\"}", 10, 5);
	add("t{i=\"d\"}", 10, NAN);
	/* equal values: the series that come first (in label order) are kept */
	assert_string_equal(
	    instant("topk(2, t)", 10000),
	    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":\"t\","
	    "\"i\":\"a\"},\"value\":[10,\"5\"]},{\"metric\":{\"__name__\":\"t\","
	    "\"i\":\"b\"},\"value\":[10,\"5\"]}]}");
	/* NaN ranks below every number, for topk and for bottomk */
	assert_null(strstr(instant("topk(3, t)", 10000), "NaN"));
	assert_null(strstr(instant("bottomk(3, t)", 10000), "NaN"));
	assert_non_null(strstr(instant("topk(4, t)", 10000), "NaN"));
	/* min and max skip a NaN; sum does not */
	assert_close(value_of("max(t)", 10000), 5);
	assert_true(isnan(value_of("sum(t)", 10000)));
	/* NaN is not equal to itself: == drops it */
	assert_close(value_of("count(t == t)", 10000), 3);
}

/* ---- operators -------------------------------------------------------------------- */

static void test_operators(void **state)
{
	fill_aggr();
	add("y{job=\"a\",inst=\"1\"}", 10, 2);
	add("y{job=\"b\",inst=\"3\"}", 10, 4);
	assert_close(value_of("2 ^ 3 ^ 2", 0), 512);
	assert_close(value_of("-2 ^ 2", 0), -4);
	assert_close(value_of("7 % 3", 0), 1);
	assert_close(value_of("-7 % 3", 0), -1);
	assert_close(value_of("1 + 2 * 3 - 4 / 8", 0), 6.5);
	assert_close(value_of("2 > bool 1", 0), 1);
	assert_true(isinf(value_of("1 / 0", 0)));
	/* one-to-one matching on all labels but the name */
	assert_string_equal(instant("x * y", 10000),
	                    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"inst\":\"1\","
	                    "\"job\":\"a\"},\"value\":[10,\"2\"]},{\"metric\":{\"inst\":\"3\","
	                    "\"job\":\"b\"},\"value\":[10,\"120\"]}]}");
	/* on() keeps only the listed labels */
	assert_string_equal(instant("y / on(inst) y", 10000),
	                    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"inst\":\"1\"},"
	                    "\"value\":[10,\"1\"]},{\"metric\":{\"inst\":\"3\"},\"value\":[10,"
	                    "\"1\"]}]}");
	/* ignoring() drops the listed ones */
	assert_string_equal(instant("y - ignoring(inst) y", 10000),
	                    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"job\":\"a\"},"
	                    "\"value\":[10,\"0\"]},{\"metric\":{\"job\":\"b\"},\"value\":[10,"
	                    "\"0\"]}]}");
	/* many on the right is refused */
	assert_string_equal(instant("y + on(job) x", 10000),
	                    "execution: found duplicate series for the match group {job=\"a\"} on "
	                    "the right hand-side of the operation: [x{inst=\"2\", job=\"a\"}, "
	                    "x{inst=\"1\", job=\"a\"}];many-to-many matching not allowed: matching "
	                    "labels must be unique on one side");
	assert_string_equal(instant("x + on(job) y", 10000),
	                    "execution: multiple matches for labels: many-to-one matching must be "
	                    "explicit (group_left/group_right)");
	/* a filter keeps the name and the vector's value, also with the scalar left */
	assert_string_equal(
	    instant("15 < x", 10000),
	    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":\"x\","
	    "\"inst\":\"2\",\"job\":\"b\"},\"value\":[10,\"20\"]},{\"metric\":{"
	    "\"__name__\":\"x\",\"inst\":\"3\",\"job\":\"b\"},\"value\":[10,"
	    "\"30\"]}]}");
	assert_close(value_of("count(x > bool 15)", 10000), 5);
	assert_close(value_of("sum(x > bool 15)", 10000), 2);
	assert_close(value_of("sum(x and y)", 10000), 31);
	assert_close(value_of("sum(x unless y)", 10000), 33);
	assert_close(value_of("count(y or x)", 10000), 5);
	assert_close(value_of("sum(-x)", 10000), -64);
	/* two series that become one label set at one step */
	add("z{job=\"a\"}", 10, 1);
	add("w{job=\"a\"}", 10, 1);
	assert_string_equal(instant("{__name__=~\"z|w\"} * 2", 10000),
	                    "execution: vector cannot contain metrics with the same labelset");
}

/* ---- range queries, limits, JSON -------------------------------------------------- */

static void test_range_query(void **state)
{
	for (int i = 0; i <= 10; i++)
		add("q", 10 * i, i);
	struct pd_promql_result *r = NULL;
	struct pd_promql_err err = {0};
	const char *q = "q * 2";
	/* steps at start + k * step up to end */
	assert_int_equal(
	    pd_promql_query_range(&r, &src, q, strlen(q), 5000, 100000, 30000, NULL, &err), 0);
	assert_int_equal(pd_promql_result_type(r), PD_PROMQL_MATRIX);
	assert_int_equal(pd_promql_result_len(r), 1);
	const int64_t *t;
	const double *v;
	size_t n;
	pd_promql_result_series(r, 0, &t, &v, &n);
	assert_int_equal(n, 4);
	assert_int_equal(t[0], 5000);
	assert_int_equal(t[3], 95000);
	assert_close(v[0], 0);
	assert_close(v[3], 18);
	pd_promql_result_destroy(r);
	/* a scalar gives one series without labels */
	q = "time()";
	assert_int_equal(pd_promql_query_range(&r, &src, q, strlen(q), 0, 2000, 1000, NULL, &err),
	                 0);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_promql_result_json(r, &b), 0);
	assert_int_equal(b.len, strlen("{\"resultType\":\"matrix\",\"result\":[{\"metric\":{},"
	                               "\"values\":[[0,\"0\"],[1,\"1\"],[2,\"2\"]]}]}"));
	assert_memory_equal(b.data,
	                    "{\"resultType\":\"matrix\",\"result\":[{\"metric\":{},"
	                    "\"values\":[[0,\"0\"],[1,\"1\"],[2,\"2\"]]}]}",
	                    b.len);
	pd_buf_fini(&b);
	pd_promql_result_destroy(r);
	/* range vectors and strings are refused; too many steps as well */
	q = "q[1m]";
	assert_int_equal(pd_promql_query_range(&r, &src, q, strlen(q), 0, 1000, 1000, NULL, &err),
	                 PD_EINVAL);
	assert_string_equal(err.err.msg, "invalid expression type \"range vector\" for range "
	                                 "query, must be Scalar or instant Vector");
	assert_int_equal(err.type, PD_PROMQL_ERR_BAD_DATA);
	q = "q";
	assert_int_equal(
	    pd_promql_query_range(&r, &src, q, strlen(q), 0, 11000000, 1000, NULL, &err),
	    PD_EINVAL);
	assert_non_null(strstr(err.err.msg, "exceeded maximum resolution of 11000 points"));
}

static int stop_now(void *ctx)
{
	int *calls = ctx;
	return ++*calls > 3;
}

struct hook {
	int calls, stop_after; /* stop_after 0: never stop */
};

static int count_calls(void *ctx)
{
	struct hook *h = ctx;
	return ++h->calls > h->stop_after && h->stop_after;
}

/* An instant query is one step, but the timeout hook is asked at every node that
 * works on vectors, so a long query stops within the step. */
static void test_timeout_within_step(void **state)
{
	add("d", 10, 3);
	char *q = repeat("sum(d)", " + sum(d)", 99, ""); /* 100 selectors, 100 sums, 99 + */
	struct hook h = {0, 0};
	struct pd_promql_opts o = {.interrupted = count_calls, .interrupted_ctx = &h};
	assert_non_null(strstr(instant_opts(q, 10000, &o), "\"value\":[10,\"300\"]"));
	/* once per series read (100), once before the step, once per vector node */
	assert_int_equal(h.calls, 100 + 1 + 299);
	h = (struct hook){0, 100 + 1 + 150};
	assert_string_equal(instant_opts(q, 10000, &o),
	                    "timeout: query timed out in expression evaluation");
	assert_int_equal(h.calls, 100 + 1 + 151);
	free(q);
}

static void test_limits(void **state)
{
	for (int i = 0; i < 20; i++)
		add("l", i, i);
	struct pd_promql_opts o = {.max_samples = 10};
	assert_string_equal(instant_opts("l[1m]", 20000, &o),
	                    "execution: query processing would load too many samples into memory "
	                    "in query execution");
	o.max_samples = 100;
	assert_non_null(strstr(instant_opts("l[1m]", 20000, &o), "matrix"));
	/* the timeout hook stops a range query between steps */
	int calls = 0;
	struct pd_promql_opts t = {.interrupted = stop_now, .interrupted_ctx = &calls};
	struct pd_promql_result *r = NULL;
	struct pd_promql_err err = {0};
	assert_int_equal(pd_promql_query_range(&r, &src, "l", 1, 0, 20000, 1000, &t, &err),
	                 PD_EINVAL);
	assert_int_equal(err.type, PD_PROMQL_ERR_TIMEOUT);
	assert_string_equal(err.err.msg, "query timed out in expression evaluation");
	assert_string_equal(pd_promql_errtype_string(err.type), "timeout");
}

static const char *fv(double v)
{
	static char out[512];
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_promql_format_value(&b, v), 0);
	snprintf(out, sizeof out, "%.*s", (int)b.len, (const char *)b.data);
	pd_buf_fini(&b);
	return out;
}

static void test_json_values(void **state)
{
	/* as Go's strconv.FormatFloat(v, 'f', -1, 64) */
	assert_string_equal(fv(0), "0");
	assert_string_equal(fv(-0.0), "-0");
	assert_string_equal(fv(1.5), "1.5");
	assert_string_equal(fv(0.1), "0.1");
	assert_string_equal(fv(1e21), "1000000000000000000000");
	assert_string_equal(fv(1.25e-7), "0.000000125");
	assert_string_equal(fv(-123456.789), "-123456.789");
	assert_string_equal(fv(1.0 / 3), "0.3333333333333333");
	assert_string_equal(fv(NAN), "NaN");
	assert_string_equal(fv(INFINITY), "+Inf");
	assert_string_equal(fv(-INFINITY), "-Inf");
	/* times in seconds with milliseconds; strings and scalars */
	assert_string_equal(instant("\"a\\\"b\"", 1500),
	                    "{\"resultType\":\"string\",\"result\":[1.500,\"a\\\"b\"]}");
	assert_string_equal(instant("-1 / 0", 1001),
	                    "{\"resultType\":\"scalar\",\"result\":[1.001,\"-Inf\"]}");
	assert_string_equal(instant("vector(1)", -2500),
	                    "{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":"
	                    "[-2.500,\"1\"]}]}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_precedence),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_parse_limits),
	    cmocka_unit_test_setup_teardown(test_depth_chains, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_depth_stack, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rate_extrapolation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rate_resets, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rate_far_from_edges, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_over_time, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lookback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_aggregation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_topk_ties_nan, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_operators, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_range_query, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeout_within_step, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_json_values, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
