/* format.c: a parsed PromQL expression printed back as text, as Prometheus's
 * String() prints its syntax tree (used in messages and the API's echo of a query). */
#include <inttypes.h>

#include "promql_int.h"

/* ---- formatting -------------------------------------------------------------- */

static const char *op_string(int op)
{
	static const char *const s[] = {"",   "+", "-",  "*", "/",  "%",   "^",  "atan2", "==",
	                                "!=", "<", "<=", ">", ">=", "and", "or", "unless"};
	return s[op];
}

static int fmt_dur(struct pd_buf *b, int64_t ms)
{
	if (ms < 0) {
		int rc = pd_buf_append(b, "-", 1);
		if (rc)
			return rc;
		ms = -ms;
	}
	return ms % 1000 ? pd_buf_printf(b, "%" PRId64 "ms", ms)
	                 : pd_buf_printf(b, "%" PRId64 "s", ms / 1000);
}

static int fmt_node(const struct pd_pq_node *n, struct pd_buf *b)
{
	int rc = 0;
	switch (n->kind) {
	case PQ_NUM:
		return pd_promql_format_value(b, n->num);
	case PQ_STR:
		return pd_buf_json_string(b, n->str);
	case PQ_SEL:
		if ((rc = pd_labels_selector_format(n->sel, b)))
			return rc;
		if (n->range_ms &&
		    ((rc = pd_buf_append(b, "[", 1)) || (rc = fmt_dur(b, n->range_ms)) ||
		     (rc = pd_buf_append(b, "]", 1))))
			return rc;
		if (n->at == 1)
			rc = pd_buf_printf(b, " @ %.3f", (double)n->at_ms / 1000);
		else if (n->at)
			rc = pd_buf_printf(b, " @ %s()", n->at == 2 ? "start" : "end");
		if (!rc && n->offset_ms)
			rc = pd_buf_append(b, " offset ", 8) || fmt_dur(b, n->offset_ms);
		return rc;
	case PQ_AGG:
	case PQ_CALL:
		rc = pd_buf_printf(b, "%s",
		                   n->kind == PQ_AGG ? pd_pq_agg_names[n->op] : n->fn->name);
		if (!rc && n->kind == PQ_AGG && (n->nlabels || n->without)) {
			rc = pd_buf_printf(b, " %s (", n->without ? "without" : "by");
			for (size_t i = 0; !rc && i < n->nlabels; i++)
				rc = pd_buf_printf(b, "%s%s", i ? ", " : "", n->labels[i]);
			if (!rc)
				rc = pd_buf_append(b, ") ", 2);
		}
		if (!rc)
			rc = pd_buf_append(b, "(", 1);
		for (size_t i = 0; !rc && i < n->nargs; i++) {
			if (i)
				rc = pd_buf_append(b, ", ", 2);
			if (!rc)
				rc = fmt_node(n->args[i], b);
		}
		return rc ? rc : pd_buf_append(b, ")", 1);
	case PQ_NEG:
	case PQ_PAREN: {
		/* Parentheses the query had are printed where dropping them would change
		 * the tree read back: around a number or a negation (a negation would be
		 * folded into the number, and `(-a) ^ b` read as `-(a ^ b)`); elsewhere the
		 * parentheses of binary expressions say enough. */
		const struct pd_pq_node *in = n->lhs;
		while (in->kind == PQ_PAREN)
			in = in->lhs;
		int wrap = in->kind == PQ_NUM || in->kind == PQ_NEG;
		if (n->kind == PQ_NEG && (rc = pd_buf_append(b, "-", 1)))
			return rc;
		if ((wrap && (rc = pd_buf_append(b, "(", 1))) || (rc = fmt_node(in, b)))
			return rc;
		return wrap ? pd_buf_append(b, ")", 1) : 0;
	}
	case PQ_BIN:
		if ((rc = pd_buf_append(b, "(", 1)) || (rc = fmt_node(n->lhs, b)) ||
		    (rc = pd_buf_printf(b, " %s ", op_string(n->op))))
			return rc;
		if (n->ret_bool && (rc = pd_buf_append(b, "bool ", 5)))
			return rc;
		if (n->matching) {
			rc = pd_buf_printf(b, "%s (", n->matching == 1 ? "on" : "ignoring");
			for (size_t i = 0; !rc && i < n->nlabels; i++)
				rc = pd_buf_printf(b, "%s%s", i ? ", " : "", n->labels[i]);
			if (!rc)
				rc = pd_buf_append(b, ") ", 2);
			if (rc)
				return rc;
		}
		if ((rc = fmt_node(n->rhs, b)))
			return rc;
		return pd_buf_append(b, ")", 1);
	}
	return 0;
}

int pd_promql_expr_format(const struct pd_promql_expr *e, struct pd_buf *b)
{
	return fmt_node(e->root, b);
}
