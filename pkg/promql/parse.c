/* parse.c: the PromQL parser. A precedence-climbing parser over the lexer of
 * lex.c builds the syntax tree of promql_int.h and checks operand types as
 * Prometheus's parser does, with its error messages and line:column positions.
 * Series selectors (`name{matchers}`) are handed to the labels package's selector
 * parser, so a selector means the same in a query as in the rest of profd. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lex.h"

int pd_pq_fail(struct pd_promql_err *err, enum pd_promql_errtype t, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->type = t;
		err->err.code = code;
		va_start(ap, fmt);
		vsnprintf(err->err.msg, sizeof err->err.msg, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ---- nodes ------------------------------------------------------------------- */

void pd_pq_node_free(struct pd_pq_node *n)
{
	if (!n)
		return;
	free(n->str);
	pd_labels_selector_destroy(n->sel);
	for (size_t i = 0; i < n->nseries; i++) {
		pd_labels_destroy(n->series[i].ls);
		free(n->series[i].t);
		free(n->series[i].v);
	}
	free(n->series);
	for (size_t i = 0; i < n->nargs; i++)
		pd_pq_node_free(n->args[i]);
	free(n->args);
	pd_pq_node_free(n->lhs);
	pd_pq_node_free(n->rhs);
	for (size_t i = 0; i < n->nlabels; i++)
		free(n->labels[i]);
	free(n->labels);
	free(n);
}

static struct pd_pq_node *node_new(struct parser *p, enum pd_pq_kind k, size_t pos)
{
	struct pd_pq_node *n = calloc(1, sizeof *n);
	if (!n) {
		pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM, "out of memory");
		p->failed = 1;
		return NULL;
	}
	n->kind = k;
	n->pos = pos;
	n->height = 1;
	return n;
}

/* Makes child's subtree part of parent's height, and fails (at pos) when that
 * exceeds the nesting limit. Every node with children passes through here as they
 * are attached, so no tree the parser returns is higher than max_depth, and every
 * later walk over it (evaluation, formatting, freeing) recurses at most that deep,
 * whatever shape the query has: `1+1+...` nests as deep as `(((...)))`. */
static int add_height(struct parser *p, struct pd_pq_node *parent, const struct pd_pq_node *child,
                      size_t pos)
{
	if (child->height + 1 > parent->height)
		parent->height = child->height + 1;
	if (parent->height > p->max_depth)
		return pd_pq_perr(p, pos, "query is nested more than %zu levels deep",
		                  p->max_depth);
	return 0;
}

static const char *type_doc(enum pd_promql_type t)
{
	switch (t) {
	case PD_PROMQL_SCALAR:
		return "scalar";
	case PD_PROMQL_VECTOR:
		return "instant vector";
	case PD_PROMQL_MATRIX:
		return "range vector";
	default:
		return "string";
	}
}

/* ---- parser ------------------------------------------------------------------ */

static struct pd_pq_node *parse_expr(struct parser *p, int minprec);

static int op_prec(int op)
{
	switch (op) {
	case PQ_OP_OR:
		return 1;
	case PQ_OP_AND:
	case PQ_OP_UNLESS:
		return 2;
	case PQ_OP_EQL:
	case PQ_OP_NEQ:
	case PQ_OP_LSS:
	case PQ_OP_LTE:
	case PQ_OP_GTR:
	case PQ_OP_GTE:
		return 3;
	case PQ_OP_ADD:
	case PQ_OP_SUB:
		return 4;
	case PQ_OP_MUL:
	case PQ_OP_DIV:
	case PQ_OP_MOD:
	case PQ_OP_ATAN2:
		return 5;
	case PQ_OP_POW:
		return 6;
	default:
		return 0;
	}
}

static int is_comparison(int op)
{
	return op >= PQ_OP_EQL && op <= PQ_OP_GTE;
}

static int is_setop(int op)
{
	return op == PQ_OP_AND || op == PQ_OP_OR || op == PQ_OP_UNLESS;
}

/* The binary operator at the current token, 0 if none. */
static int cur_binop(struct parser *p)
{
	if (p->tok.type == T_OP)
		return p->tok.op;
	if (pd_pq_tok_is(p, "and"))
		return PQ_OP_AND;
	if (pd_pq_tok_is(p, "or"))
		return PQ_OP_OR;
	if (pd_pq_tok_is(p, "unless"))
		return PQ_OP_UNLESS;
	if (pd_pq_tok_is(p, "atan2"))
		return PQ_OP_ATAN2;
	return 0;
}

/* `( label, label, ... )` into n->labels. */
static int parse_label_list(struct parser *p, struct pd_pq_node *n, const char *context)
{
	if (p->tok.type != T_LPAREN)
		return pd_pq_unexpected(p, context);
	pd_pq_next(p);
	while (p->tok.type != T_RPAREN) {
		if (p->tok.type != T_IDENT || memchr(p->s + p->tok.pos, ':', p->tok.len))
			return pd_pq_unexpected(p, "grouping opts");
		char **nl = realloc(n->labels, (n->nlabels + 1) * sizeof *nl);
		if (!nl)
			return pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM,
			                  "out of memory");
		n->labels = nl;
		if (!(nl[n->nlabels] = strndup(p->s + p->tok.pos, p->tok.len)))
			return pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM,
			                  "out of memory");
		n->nlabels++;
		pd_pq_next(p);
		if (p->tok.type == T_COMMA) {
			pd_pq_next(p);
			continue;
		}
		if (p->tok.type != T_RPAREN)
			return pd_pq_unexpected(p, "grouping opts");
	}
	pd_pq_next(p);
	return 0;
}

const char *const pd_pq_agg_names[PQ_AGG_STDVAR + 1] = {
    "sum", "avg", "min", "max", "count", "topk", "bottomk", "group", "stddev", "stdvar"};

static int agg_lookup(struct parser *p)
{
	for (size_t i = 0; i < sizeof pd_pq_agg_names / sizeof pd_pq_agg_names[0]; i++)
		if (pd_pq_tok_is(p, pd_pq_agg_names[i]))
			return (int)i;
	return -1;
}

static struct pd_pq_node *parse_aggregation(struct parser *p, int op)
{
	struct pd_pq_node *n = node_new(p, PQ_AGG, p->tok.pos);
	int grouped = 0;
	if (!n)
		return NULL;
	n->op = op;
	n->type = PD_PROMQL_VECTOR;
	pd_pq_next(p);
	if (pd_pq_tok_is(p, "by") || pd_pq_tok_is(p, "without")) {
		n->without = pd_pq_tok_is(p, "without");
		pd_pq_next(p);
		if (parse_label_list(p, n, "grouping opts"))
			goto fail;
		grouped = 1;
	}
	if (p->tok.type != T_LPAREN) {
		pd_pq_unexpected(p, "aggregation");
		goto fail;
	}
	size_t lpos = p->tok.pos;
	pd_pq_next(p);
	int want = (op == PQ_AGG_TOPK || op == PQ_AGG_BOTTOMK) ? 2 : 1;
	while (p->tok.type != T_RPAREN) {
		struct pd_pq_node *a = parse_expr(p, 1);
		if (!a)
			goto fail;
		struct pd_pq_node **na = realloc(n->args, (n->nargs + 1) * sizeof *na);
		if (!na) {
			pd_pq_node_free(a);
			pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM, "out of memory");
			goto fail;
		}
		n->args = na;
		na[n->nargs++] = a;
		if (add_height(p, n, a, n->pos))
			goto fail;
		if (p->tok.type == T_COMMA) {
			pd_pq_next(p);
			if (p->tok.type == T_RPAREN) {
				pd_pq_unexpected(p, "aggregation");
				goto fail;
			}
			continue;
		}
		if (p->tok.type != T_RPAREN) {
			pd_pq_unexpected(p, "aggregation");
			goto fail;
		}
	}
	pd_pq_next(p);
	if ((int)n->nargs != want) {
		if (n->nargs == 0)
			pd_pq_perr(p, lpos, "no arguments for aggregate expression provided");
		else
			pd_pq_perr(p, n->pos,
			           "wrong number of arguments for aggregate expression provided, "
			           "expected %d, got %zu",
			           want, n->nargs);
		goto fail;
	}
	if (!grouped && (pd_pq_tok_is(p, "by") || pd_pq_tok_is(p, "without"))) {
		n->without = pd_pq_tok_is(p, "without");
		pd_pq_next(p);
		if (parse_label_list(p, n, "grouping opts"))
			goto fail;
	}
	struct pd_pq_node *arg = n->args[n->nargs - 1];
	if (arg->type != PD_PROMQL_VECTOR) {
		pd_pq_perr(p, arg->pos,
		           "expected type instant vector in aggregation expression, got %s",
		           type_doc(arg->type));
		goto fail;
	}
	if (want == 2 && n->args[0]->type != PD_PROMQL_SCALAR) {
		pd_pq_perr(p, n->args[0]->pos,
		           "expected type scalar in aggregation parameter, got %s",
		           type_doc(n->args[0]->type));
		goto fail;
	}
	return n;
fail:
	pd_pq_node_free(n);
	p->failed = 1;
	return NULL;
}

static enum pd_promql_type argt_type(enum pd_pq_argt a)
{
	switch (a) {
	case PQ_ARG_SCALAR:
		return PD_PROMQL_SCALAR;
	case PQ_ARG_VECTOR:
		return PD_PROMQL_VECTOR;
	case PQ_ARG_MATRIX:
		return PD_PROMQL_MATRIX;
	default:
		return PD_PROMQL_STRING;
	}
}

static struct pd_pq_node *parse_call(struct parser *p, const struct pd_pq_func *fn)
{
	struct pd_pq_node *n = node_new(p, PQ_CALL, p->tok.pos);
	if (!n)
		return NULL;
	n->fn = fn;
	n->type = fn->ret;
	pd_pq_next(p); /* name */
	pd_pq_next(p); /* ( */
	while (p->tok.type != T_RPAREN) {
		struct pd_pq_node *a = parse_expr(p, 1);
		if (!a)
			goto fail;
		struct pd_pq_node **na = realloc(n->args, (n->nargs + 1) * sizeof *na);
		if (!na) {
			pd_pq_node_free(a);
			pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM, "out of memory");
			goto fail;
		}
		n->args = na;
		na[n->nargs++] = a;
		if (add_height(p, n, a, n->pos))
			goto fail;
		if (p->tok.type == T_COMMA) {
			pd_pq_next(p);
			if (p->tok.type == T_RPAREN) {
				pd_pq_unexpected(p, "function call");
				goto fail;
			}
			continue;
		}
		if (p->tok.type != T_RPAREN) {
			pd_pq_unexpected(p, "function call");
			goto fail;
		}
	}
	pd_pq_next(p);
	if ((int)n->nargs < fn->nargs || (int)n->nargs > fn->nargs + fn->optional) {
		if (fn->optional)
			pd_pq_perr(p, n->pos,
			           "expected at most %d argument(s) in call to \"%s\", got %zu",
			           fn->nargs + fn->optional, fn->name, n->nargs);
		else
			pd_pq_perr(p, n->pos, "expected %d argument(s) in call to \"%s\", got %zu",
			           fn->nargs, fn->name, n->nargs);
		goto fail;
	}
	for (size_t i = 0; i < n->nargs; i++) {
		enum pd_promql_type want = argt_type(fn->args[i]);
		if (n->args[i]->type != want) {
			pd_pq_perr(p, n->args[i]->pos,
			           "expected type %s in call to function \"%s\", got %s",
			           type_doc(want), fn->name, type_doc(n->args[i]->type));
			goto fail;
		}
	}
	return n;
fail:
	pd_pq_node_free(n);
	p->failed = 1;
	return NULL;
}

/* The end of a `{...}` starting at i (just past its '}'), skipping quoted strings;
 * the end of the input when it is not closed (the selector parser reports it). */
static size_t brace_end(const char *s, size_t n, size_t i)
{
	i++;
	while (i < n && s[i] != '}') {
		char q = s[i];
		if (q == '"' || q == '\'' || q == '`') {
			i++;
			while (i < n && s[i] != q) {
				if (q != '`' && s[i] == '\\')
					i++;
				i++;
			}
		}
		i++;
	}
	return i < n ? i + 1 : n;
}

/* The selector from byte start to end, parsed by the labels package; its errors
 * are moved to their place in the whole query. */
static struct pd_pq_node *parse_selector(struct parser *p, size_t start, size_t end)
{
	struct pd_pq_node *n = node_new(p, PQ_SEL, start);
	struct pd_err e = {0};
	struct pd_labels_parse_opts o = {.max_len = p->len + 1};
	if (!n)
		return NULL;
	n->type = PD_PROMQL_VECTOR;
	int rc = pd_labels_selector_parse(&n->sel, p->s + start, end - start, &o, &e);
	if (rc) {
		unsigned long line = 0, col = 0;
		int used = 0;
		const char *msg = e.msg;
		if (sscanf(e.msg, "%lu:%lu: parse error: %n", &line, &col, &used) == 2 && used) {
			size_t off = start, l = 1;
			while (l < line && off < p->len) { /* the line-th line of the selector */
				if (p->s[off] == '\n')
					l++;
				off++;
			}
			off += col ? col - 1 : 0;
			msg += used;
			if (rc == PD_ENOMEM) {
				pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, rc, "%s", e.msg);
				p->failed = 1;
			} else {
				pd_pq_perr(p, off, "%s", msg);
			}
		} else {
			pd_pq_perr(p, start, "%s", msg);
		}
		pd_pq_node_free(n);
		return NULL;
	}
	p->i = end;
	pd_pq_next(p);
	return n;
}

static int parse_at_offset(struct parser *p, struct pd_pq_node *n, int *seen_offset, int *seen_at)
{
	for (;;) {
		if (pd_pq_tok_is(p, "offset")) {
			size_t pos = p->tok.pos;
			if (n->kind != PQ_SEL)
				return pd_pq_perr(
				    p, pos,
				    "offset modifier must be preceded by an instant vector "
				    "selector or range vector selector or a subquery");
			if (*seen_offset)
				return pd_pq_perr(p, pos, "offset may not be set multiple times");
			pd_pq_next(p);
			int neg = 0;
			if (p->tok.type == T_OP &&
			    (p->tok.op == PQ_OP_SUB || p->tok.op == PQ_OP_ADD)) {
				neg = p->tok.op == PQ_OP_SUB;
				pd_pq_next(p);
			}
			if (p->tok.type != T_DURATION)
				return pd_pq_unexpected(p, "offset");
			n->offset_ms = neg ? -p->tok.dur : p->tok.dur;
			*seen_offset = 1;
			pd_pq_next(p);
		} else if (p->tok.type == T_AT) {
			size_t pos = p->tok.pos;
			if (n->kind != PQ_SEL)
				return pd_pq_perr(
				    p, pos,
				    "@ modifier must be preceded by an instant vector "
				    "selector or range vector selector or a subquery");
			if (*seen_at)
				return pd_pq_perr(p, pos,
				                  "@ <timestamp> may not be set multiple times");
			pd_pq_next(p);
			if (pd_pq_tok_is(p, "start") || pd_pq_tok_is(p, "end")) {
				n->at = pd_pq_tok_is(p, "start") ? 2 : 3;
				pd_pq_next(p);
				if (p->tok.type != T_LPAREN)
					return pd_pq_unexpected(p, "@");
				pd_pq_next(p);
				if (p->tok.type != T_RPAREN)
					return pd_pq_unexpected(p, "@");
				pd_pq_next(p);
			} else {
				int neg = 0;
				if (p->tok.type == T_OP &&
				    (p->tok.op == PQ_OP_SUB || p->tok.op == PQ_OP_ADD)) {
					neg = p->tok.op == PQ_OP_SUB;
					pd_pq_next(p);
				}
				if (p->tok.type != T_NUMBER)
					return pd_pq_unexpected(p, "@");
				double v = neg ? -p->tok.num : p->tok.num;
				if (!isfinite(v) || fabs(v * 1000) > 9.2e18)
					return pd_pq_perr(
					    p, p->tok.pos,
					    "timestamp out of bounds for @ modifier: %g", v);
				n->at = 1;
				n->at_ms = (int64_t)llround(v * 1000);
				pd_pq_next(p);
			}
			*seen_at = 1;
		} else {
			return 0;
		}
	}
}

static struct pd_pq_node *parse_primary(struct parser *p)
{
	struct pd_pq_node *n = NULL;
	struct tok t = p->tok;

	switch (t.type) {
	case T_NUMBER:
		if (!(n = node_new(p, PQ_NUM, t.pos)))
			return NULL;
		n->type = PD_PROMQL_SCALAR;
		n->num = t.num;
		pd_pq_next(p);
		return n;
	case T_STRING:
		if (!(n = node_new(p, PQ_STR, t.pos)))
			return NULL;
		n->type = PD_PROMQL_STRING;
		if (pd_pq_unquote(p, &n->str)) {
			pd_pq_node_free(n);
			p->failed = 1;
			return NULL;
		}
		pd_pq_next(p);
		return n;
	case T_LPAREN: {
		pd_pq_next(p);
		struct pd_pq_node *in = parse_expr(p, 1);
		if (!in)
			return NULL;
		if (p->tok.type != T_RPAREN) {
			pd_pq_unexpected(p, "paren expression");
			pd_pq_node_free(in);
			return NULL;
		}
		pd_pq_next(p);
		if (!(n = node_new(p, PQ_PAREN, t.pos))) {
			pd_pq_node_free(in);
			return NULL;
		}
		n->lhs = in;
		n->type = in->type;
		if (add_height(p, n, in, t.pos)) {
			pd_pq_node_free(n);
			return NULL;
		}
		return n;
	}
	case T_LBRACE:
		return parse_selector(p, t.pos, brace_end(p->s, p->len, t.pos));
	case T_IDENT: {
		const char *w = p->s + t.pos;
		/* inf and nan are numbers */
		if ((t.len == 3 && (!strncasecmp(w, "inf", 3) || !strncasecmp(w, "nan", 3)))) {
			if (!(n = node_new(p, PQ_NUM, t.pos)))
				return NULL;
			n->type = PD_PROMQL_SCALAR;
			n->num = tolower((unsigned char)w[0]) == 'i' ? INFINITY : NAN;
			pd_pq_next(p);
			return n;
		}
		int agg = agg_lookup(p);
		if (agg >= 0)
			return parse_aggregation(p, agg);
		if (pd_pq_tok_is(p, "count_values") || pd_pq_tok_is(p, "quantile"))
			return (pd_pq_perr(p, t.pos,
			                   "aggregation \"%.*s\" is not supported by profd",
			                   (int)t.len, w),
			        NULL);
		/* a function call when a '(' follows */
		size_t j = p->i;
		while (j < p->len && isspace((unsigned char)p->s[j]))
			j++;
		if (j < p->len && p->s[j] == '(') {
			const struct pd_pq_func *fn = pd_pq_func_lookup(w, t.len);
			if (!fn)
				return (pd_pq_perr(p, t.pos, "unknown function with name \"%.*s\"",
				                   (int)t.len, w),
				        NULL);
			return parse_call(p, fn);
		}
		static const char *const kw[] = {"by",         "without",     "on",     "ignoring",
		                                 "group_left", "group_right", "bool",   "offset",
		                                 "and",        "or",          "unless", "atan2"};
		for (size_t k = 0; k < sizeof kw / sizeof kw[0]; k++)
			if (pd_pq_tok_is(p, kw[k]))
				return (pd_pq_unexpected(p, NULL), NULL);
		size_t end = j < p->len && p->s[j] == '{' ? brace_end(p->s, p->len, j) : p->i;
		return parse_selector(p, t.pos, end);
	}
	default:
		pd_pq_unexpected(p, NULL);
		return NULL;
	}
}

/* A primary with its range, offset and @ modifiers. */
static struct pd_pq_node *parse_postfix(struct parser *p)
{
	struct pd_pq_node *n = parse_primary(p);
	int seen_offset = 0, seen_at = 0;
	if (!n)
		return NULL;
	if (parse_at_offset(p, n, &seen_offset, &seen_at))
		goto fail;
	if (p->tok.type == T_LBRACKET) {
		size_t pos = p->tok.pos;
		/* a subquery has a colon inside the brackets */
		size_t j = p->i;
		while (j < p->len && p->s[j] != ']' && p->s[j] != ':')
			j++;
		if (j < p->len && p->s[j] == ':') {
			pd_pq_perr(p, pos, "subqueries are not supported by profd");
			goto fail;
		}
		if (n->kind != PQ_SEL || n->range_ms || seen_offset || seen_at) {
			pd_pq_perr(p, n->pos, "ranges only allowed for vector selectors");
			goto fail;
		}
		pd_pq_next(p);
		if (p->tok.type != T_DURATION) {
			pd_pq_unexpected(p, "range selector");
			goto fail;
		}
		if (p->tok.dur <= 0) {
			pd_pq_perr(p, p->tok.pos, "range must be greater than 0");
			goto fail;
		}
		n->range_ms = p->tok.dur;
		n->type = PD_PROMQL_MATRIX;
		pd_pq_next(p);
		if (p->tok.type != T_RBRACKET) {
			pd_pq_unexpected(p, "range selector");
			goto fail;
		}
		pd_pq_next(p);
		if (parse_at_offset(p, n, &seen_offset, &seen_at))
			goto fail;
	}
	return n;
fail:
	pd_pq_node_free(n);
	p->failed = 1;
	return NULL;
}

static struct pd_pq_node *parse_unary(struct parser *p)
{
	if (p->tok.type == T_OP && (p->tok.op == PQ_OP_SUB || p->tok.op == PQ_OP_ADD)) {
		size_t pos = p->tok.pos;
		int neg = p->tok.op == PQ_OP_SUB;
		pd_pq_next(p);
		struct pd_pq_node *in = parse_expr(p, op_prec(PQ_OP_POW));
		if (!in)
			return NULL;
		if (in->type != PD_PROMQL_SCALAR && in->type != PD_PROMQL_VECTOR) {
			pd_pq_perr(p, pos,
			           "unary expression only allowed on expressions of type scalar or "
			           "instant vector, got \"%s\"",
			           type_doc(in->type));
			pd_pq_node_free(in);
			return NULL;
		}
		if (!neg)
			return in;
		if (in->kind == PQ_NUM) { /* folded, as Prometheus does */
			in->num = -in->num;
			in->pos = pos;
			return in;
		}
		struct pd_pq_node *n = node_new(p, PQ_NEG, pos);
		if (!n) {
			pd_pq_node_free(in);
			return NULL;
		}
		n->lhs = in;
		n->type = in->type;
		if (add_height(p, n, in, pos)) {
			pd_pq_node_free(n);
			return NULL;
		}
		return n;
	}
	return parse_postfix(p);
}

static struct pd_pq_node *parse_expr(struct parser *p, int minprec)
{
	struct pd_pq_node *lhs = NULL, *rhs = NULL, *n = NULL;

	if (++p->depth > p->max_depth) {
		pd_pq_perr(p, p->tok.pos, "query is nested more than %zu levels deep",
		           p->max_depth);
		goto fail;
	}
	if (!(lhs = parse_unary(p)))
		goto fail;
	for (;;) {
		int op = cur_binop(p);
		if (!op) {
			if (p->tok.type == T_LBRACKET) {
				/* a range on something that is not a selector, or a subquery */
				size_t j = p->i;
				while (j < p->len && p->s[j] != ']' && p->s[j] != ':')
					j++;
				if (j < p->len && p->s[j] == ':')
					pd_pq_perr(p, p->tok.pos,
					           "subqueries are not supported by profd");
				else
					pd_pq_perr(p, lhs->pos,
					           "ranges only allowed for vector selectors");
				goto fail;
			}
			break;
		}
		int prec = op_prec(op);
		if (prec < minprec)
			break;
		if (!(n = node_new(p, PQ_BIN, p->tok.pos)))
			goto fail;
		n->op = op;
		size_t oppos = p->tok.pos;
		pd_pq_next(p);
		if (pd_pq_tok_is(p, "bool")) {
			if (!is_comparison(op)) {
				pd_pq_perr(
				    p, p->tok.pos,
				    "bool modifier can only be used on comparison operators");
				goto fail;
			}
			n->ret_bool = 1;
			pd_pq_next(p);
		}
		if (pd_pq_tok_is(p, "on") || pd_pq_tok_is(p, "ignoring")) {
			n->matching = pd_pq_tok_is(p, "on") ? 1 : 2;
			pd_pq_next(p);
			if (parse_label_list(p, n, "grouping opts"))
				goto fail;
			if (pd_pq_tok_is(p, "group_left") || pd_pq_tok_is(p, "group_right")) {
				pd_pq_perr(p, p->tok.pos,
				           "%.*s is not supported by profd: only one-to-one "
				           "vector matching is",
				           (int)p->tok.len, p->s + p->tok.pos);
				goto fail;
			}
		}
		if (!(rhs = parse_expr(p, op == PQ_OP_POW ? prec : prec + 1)))
			goto fail;
		n->lhs = lhs;
		n->rhs = rhs;
		n->pos = lhs->pos;
		lhs = rhs = NULL;
		if (add_height(p, n, n->lhs, oppos) || add_height(p, n, n->rhs, oppos))
			goto fail;
		/* types, as Prometheus's parser checks them */
		enum pd_promql_type lt = n->lhs->type, rt = n->rhs->type;
		if ((lt != PD_PROMQL_SCALAR && lt != PD_PROMQL_VECTOR) ||
		    (rt != PD_PROMQL_SCALAR && rt != PD_PROMQL_VECTOR)) {
			pd_pq_perr(p, n->pos,
			           "binary expression must contain only scalar and instant vector "
			           "types");
			goto fail;
		}
		if (lt == PD_PROMQL_SCALAR && rt == PD_PROMQL_SCALAR && is_comparison(op) &&
		    !n->ret_bool) {
			pd_pq_perr(p, n->pos, "comparisons between scalars must use BOOL modifier");
			goto fail;
		}
		if ((lt != PD_PROMQL_VECTOR || rt != PD_PROMQL_VECTOR) && n->matching) {
			pd_pq_perr(p, n->pos,
			           "vector matching only allowed between instant vectors");
			goto fail;
		}
		if (is_setop(op) && (lt == PD_PROMQL_SCALAR || rt == PD_PROMQL_SCALAR)) {
			pd_pq_perr(p, oppos,
			           "set operator \"%s\" not allowed in binary scalar expression",
			           op == PQ_OP_AND  ? "and"
			           : op == PQ_OP_OR ? "or"
			                            : "unless");
			goto fail;
		}
		n->type = lt == PD_PROMQL_SCALAR && rt == PD_PROMQL_SCALAR ? PD_PROMQL_SCALAR
		                                                           : PD_PROMQL_VECTOR;
		lhs = n;
		n = NULL;
	}
	p->depth--;
	return lhs;
fail:
	p->failed = 1;
	pd_pq_node_free(lhs);
	pd_pq_node_free(rhs);
	pd_pq_node_free(n);
	return NULL;
}

int pd_promql_parse(struct pd_promql_expr **out, const char *query, size_t len,
                    const struct pd_promql_opts *opts, struct pd_promql_err *err)
{
	struct parser p = {.s = query, .len = len, .err = err};
	size_t max_len = opts && opts->max_len ? opts->max_len : PD_PROMQL_DEFAULT_MAX_LEN;
	p.max_depth = opts && opts->max_depth ? opts->max_depth : PD_PROMQL_DEFAULT_MAX_DEPTH;

	*out = NULL;
	if (len > max_len)
		return pd_pq_fail(err, PD_PROMQL_ERR_BAD_DATA, PD_ETOOBIG,
		                  "query is %zu bytes long, the limit is %zu", len, max_len);
	if (memchr(query, '\0', len))
		return pd_pq_perr(&p, (size_t)((const char *)memchr(query, '\0', len) - query),
		                  "unexpected character: '\\x00'");
	pd_pq_next(&p);
	if (p.tok.type == T_EOF)
		return pd_pq_perr(&p, 0, "no expression found in input");
	struct pd_pq_node *root = parse_expr(&p, 1);
	if (!root)
		return err && err->err.code ? err->err.code : PD_EINVAL;
	if (p.tok.type != T_EOF) {
		pd_pq_unexpected(&p, NULL);
		pd_pq_node_free(root);
		return PD_EINVAL;
	}
	struct pd_promql_expr *e = malloc(sizeof *e);
	if (!e) {
		pd_pq_node_free(root);
		return pd_pq_fail(err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM, "out of memory");
	}
	e->root = root;
	*out = e;
	return 0;
}

void pd_promql_expr_destroy(struct pd_promql_expr *e)
{
	if (!e)
		return;
	pd_pq_node_free(e->root);
	free(e);
}

enum pd_promql_type pd_promql_expr_type(const struct pd_promql_expr *e)
{
	return e->root->type;
}

const char *pd_promql_type_string(enum pd_promql_type t)
{
	switch (t) {
	case PD_PROMQL_SCALAR:
		return "scalar";
	case PD_PROMQL_VECTOR:
		return "vector";
	case PD_PROMQL_MATRIX:
		return "matrix";
	default:
		return "string";
	}
}

const char *pd_promql_errtype_string(enum pd_promql_errtype t)
{
	switch (t) {
	case PD_PROMQL_ERR_BAD_DATA:
		return "bad_data";
	case PD_PROMQL_ERR_EXECUTION:
		return "execution";
	case PD_PROMQL_ERR_TIMEOUT:
		return "timeout";
	case PD_PROMQL_ERR_INTERNAL:
		return "internal";
	default:
		return "";
	}
}
