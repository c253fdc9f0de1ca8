/* parse.c: the PromQL lexer and parser. A precedence-climbing parser over a small
 * lexer builds the syntax tree of promql_int.h and checks operand types as
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

#include "promql_int.h"

enum tt {
	T_EOF = 0,
	T_IDENT,
	T_NUMBER,
	T_DURATION,
	T_STRING,
	T_LPAREN,
	T_RPAREN,
	T_LBRACE,
	T_LBRACKET,
	T_RBRACKET,
	T_COMMA,
	T_COLON,
	T_AT,
	T_OP,
	T_BAD,
};

struct tok {
	enum tt type;
	size_t pos, len;
	int op;      /* T_OP: enum pd_pq_op */
	double num;  /* T_NUMBER */
	int64_t dur; /* T_DURATION, ms */
};

struct parser {
	const char *s;
	size_t len;
	size_t i; /* lexer position */
	struct tok tok;
	size_t depth, max_depth;
	struct pd_promql_err *err;
	int failed;
};

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

/* Records a parse error at byte offset pos, as Prometheus's ParseErr prints it. */
static int perr(struct parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int perr(struct parser *p, size_t pos, const char *fmt, ...)
{
	char msg[PD_ERR_MSG_MAX];
	va_list ap;
	size_t line = 1, last_nl = (size_t)-1;

	if (p->failed)
		return PD_EINVAL;
	p->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (pos > p->len)
		pos = p->len;
	for (size_t i = 0; i < pos; i++)
		if (p->s[i] == '\n') {
			line++;
			last_nl = i;
		}
	return pd_pq_fail(p->err, PD_PROMQL_ERR_BAD_DATA, PD_EINVAL, "%zu:%zu: parse error: %s",
	                  line, pos - last_nl, msg);
}

/* ---- lexer ------------------------------------------------------------------- */

static int is_ident_start(int c)
{
	return isalpha(c) || c == '_' || c == ':';
}

static int is_ident_char(int c)
{
	return isalnum(c) || c == '_' || c == ':';
}

static int unit_ms(const char *s, size_t n, size_t *w, int64_t *ms)
{
	static const struct {
		const char *u;
		int64_t ms;
	} units[] = {{"ms", 1},       {"s", 1000},           {"m", 60000},           {"h", 3600000},
	             {"d", 86400000}, {"w", 7 * 86400000LL}, {"y", 365 * 86400000LL}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		size_t ul = strlen(units[i].u);
		if (ul <= n && !memcmp(s, units[i].u, ul) &&
		    !(ul == 1 && units[i].u[0] == 'm' && n > 1 && s[1] == 's')) {
			*w = ul;
			*ms = units[i].ms;
			return 1;
		}
	}
	return 0;
}

/* A duration such as 1h30m (units y w d h m s ms in that order, as Prometheus's
 * model.ParseDuration). Returns the bytes read, 0 when there is none. */
static size_t lex_duration(const char *s, size_t n, int64_t *out, int *bad)
{
	size_t i = 0;
	int64_t total = 0, last_unit = INT64_MAX;
	*bad = 0;
	while (i < n && isdigit((unsigned char)s[i])) {
		size_t j = i, w;
		int64_t v = 0, ums;
		while (j < n && isdigit((unsigned char)s[j])) {
			if (v > INT64_MAX / 10 - 10)
				*bad = 1;
			else
				v = v * 10 + (s[j] - '0');
			j++;
		}
		if (!unit_ms(s + j, n - j, &w, &ums))
			return i ? (*bad = 1, j) : 0;
		if (ums >= last_unit)
			*bad = 1;
		last_unit = ums;
		if (v > INT64_MAX / ums || total > INT64_MAX - v * ums)
			*bad = 1;
		else
			total += v * ums;
		i = j + w;
	}
	*out = total;
	return i;
}

static void next(struct parser *p)
{
	struct tok *t = &p->tok;
	const char *s = p->s;
	size_t n = p->len, i = p->i;

	for (;;) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
			i++;
		if (i < n && s[i] == '#') { /* a comment runs to the end of the line */
			while (i < n && s[i] != '\n')
				i++;
			continue;
		}
		break;
	}
	memset(t, 0, sizeof *t);
	t->pos = i;
	if (i >= n) {
		t->type = T_EOF;
		p->i = i;
		return;
	}
	char c = s[i];
	size_t start = i;
	switch (c) {
	case '(':
		t->type = T_LPAREN;
		i++;
		goto done;
	case ')':
		t->type = T_RPAREN;
		i++;
		goto done;
	case '{':
		t->type = T_LBRACE;
		i++;
		goto done;
	case '[':
		t->type = T_LBRACKET;
		i++;
		goto done;
	case ']':
		t->type = T_RBRACKET;
		i++;
		goto done;
	case ',':
		t->type = T_COMMA;
		i++;
		goto done;
	case ':':
		if (!(i + 1 < n && is_ident_start((unsigned char)s[i + 1]))) {
			t->type = T_COLON;
			i++;
			goto done;
		}
		break;
	case '@':
		t->type = T_AT;
		i++;
		goto done;
	case '+':
		t->type = T_OP;
		t->op = PQ_OP_ADD;
		i++;
		goto done;
	case '-':
		t->type = T_OP;
		t->op = PQ_OP_SUB;
		i++;
		goto done;
	case '*':
		t->type = T_OP;
		t->op = PQ_OP_MUL;
		i++;
		goto done;
	case '/':
		t->type = T_OP;
		t->op = PQ_OP_DIV;
		i++;
		goto done;
	case '%':
		t->type = T_OP;
		t->op = PQ_OP_MOD;
		i++;
		goto done;
	case '^':
		t->type = T_OP;
		t->op = PQ_OP_POW;
		i++;
		goto done;
	case '=':
		if (i + 1 < n && s[i + 1] == '=') {
			t->type = T_OP;
			t->op = PQ_OP_EQL;
			i += 2;
			goto done;
		}
		t->type = T_BAD;
		i++;
		goto done;
	case '!':
		if (i + 1 < n && s[i + 1] == '=') {
			t->type = T_OP;
			t->op = PQ_OP_NEQ;
			i += 2;
			goto done;
		}
		t->type = T_BAD;
		i++;
		goto done;
	case '<':
		t->type = T_OP;
		if (i + 1 < n && s[i + 1] == '=') {
			t->op = PQ_OP_LTE;
			i += 2;
		} else {
			t->op = PQ_OP_LSS;
			i++;
		}
		goto done;
	case '>':
		t->type = T_OP;
		if (i + 1 < n && s[i + 1] == '=') {
			t->op = PQ_OP_GTE;
			i += 2;
		} else {
			t->op = PQ_OP_GTR;
			i++;
		}
		goto done;
	case '"':
	case '\'':
	case '`': {
		/* find the end; the text is unquoted later */
		i++;
		while (i < n && s[i] != c) {
			if (c != '`' && s[i] == '\\' && i + 1 < n)
				i++;
			else if (c != '`' && s[i] == '\n')
				break;
			i++;
		}
		if (i >= n || s[i] != c) {
			t->type = T_BAD;
			t->op = 1; /* unterminated string */
			i = n;
			goto done;
		}
		i++;
		t->type = T_STRING;
		goto done;
	}
	default:
		break;
	}
	if (isdigit((unsigned char)c) ||
	    (c == '.' && i + 1 < n && isdigit((unsigned char)s[i + 1]))) {
		int bad;
		int64_t d = 0;
		size_t dl = lex_duration(s + i, n - i, &d, &bad);
		if (dl && !(i + dl < n && is_ident_char((unsigned char)s[i + dl]))) {
			t->type = bad ? T_BAD : T_DURATION;
			t->op = bad ? 3 : 0; /* bad duration */
			t->dur = d;
			i += dl;
			goto done;
		}
		/* a number: decimal, hexadecimal, with a fraction and an exponent */
		size_t j = i;
		if (c == '0' && j + 1 < n && (s[j + 1] == 'x' || s[j + 1] == 'X')) {
			j += 2;
			while (j < n && isxdigit((unsigned char)s[j]))
				j++;
		} else {
			while (j < n && isdigit((unsigned char)s[j]))
				j++;
			if (j < n && s[j] == '.') {
				j++;
				while (j < n && isdigit((unsigned char)s[j]))
					j++;
			}
			if (j < n && (s[j] == 'e' || s[j] == 'E')) {
				size_t k = j + 1;
				if (k < n && (s[k] == '+' || s[k] == '-'))
					k++;
				if (k < n && isdigit((unsigned char)s[k])) {
					j = k;
					while (j < n && isdigit((unsigned char)s[j]))
						j++;
				}
			}
		}
		if (j < n && is_ident_char((unsigned char)s[j])) {
			while (j < n && is_ident_char((unsigned char)s[j]))
				j++;
			t->type = T_BAD;
			t->op = 2; /* bad number */
			i = j;
			goto done;
		}
		/* a long literal (up to the query's length limit) is read whole: cut short
		 * it would be another number */
		char small[128], *buf = small;
		size_t l = j - i;
		if (l >= sizeof small && !(buf = malloc(l + 1))) {
			t->type = T_BAD;
			t->op = 4; /* out of memory */
			i = j;
			goto done;
		}
		memcpy(buf, s + i, l);
		buf[l] = '\0';
		t->type = T_NUMBER;
		if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))
			t->num = (double)strtoull(buf, NULL, 16);
		else
			t->num = strtod(buf, NULL);
		if (buf != small)
			free(buf);
		i = j;
		goto done;
	}
	if (is_ident_start((unsigned char)c)) {
		while (i < n && is_ident_char((unsigned char)s[i]))
			i++;
		t->type = T_IDENT;
		goto done;
	}
	t->type = T_BAD;
	i++;
done:
	t->len = i - start;
	p->i = i;
}

static int tok_is(const struct parser *p, const char *word)
{
	size_t l = strlen(word);
	return p->tok.type == T_IDENT && p->tok.len == l &&
	       !strncasecmp(p->s + p->tok.pos, word, l);
}

/* Prometheus's description of a token in "unexpected ..." messages. */
static void tok_desc(const struct parser *p, char *dst, size_t cap)
{
	const struct tok *t = &p->tok;
	int l = t->len > 40 ? 40 : (int)t->len;
	const char *s = p->s + t->pos;
	switch (t->type) {
	case T_EOF:
		snprintf(dst, cap, "end of input");
		break;
	case T_IDENT:
		snprintf(dst, cap, "identifier \"%.*s\"", l, s);
		break;
	case T_NUMBER:
		snprintf(dst, cap, "number \"%.*s\"", l, s);
		break;
	case T_DURATION:
		snprintf(dst, cap, "duration \"%.*s\"", l, s);
		break;
	case T_STRING:
		snprintf(dst, cap, "string \"%.*s\"", l, s);
		break;
	case T_LPAREN:
		snprintf(dst, cap, "left parenthesis \"(\"");
		break;
	case T_RPAREN:
		snprintf(dst, cap, "right parenthesis \")\"");
		break;
	case T_LBRACE:
		snprintf(dst, cap, "left brace \"{\"");
		break;
	case T_LBRACKET:
		snprintf(dst, cap, "left bracket \"[\"");
		break;
	case T_RBRACKET:
		snprintf(dst, cap, "right bracket \"]\"");
		break;
	case T_COMMA:
		snprintf(dst, cap, "comma \",\"");
		break;
	case T_COLON:
		snprintf(dst, cap, "colon \":\"");
		break;
	case T_AT:
		snprintf(dst, cap, "@");
		break;
	case T_OP:
		snprintf(dst, cap, "<op:%.*s>", l, s);
		break;
	default:
		snprintf(dst, cap, "character %.*s", l, s);
		break;
	}
}

static int unexpected(struct parser *p, const char *context)
{
	char d[96];
	const struct tok *t = &p->tok;
	if (t->type == T_BAD) {
		if (t->op == 1)
			return perr(p, t->pos, "unterminated quoted string %c", p->s[t->pos]);
		if (t->op == 2)
			return perr(p, t->pos, "bad number or duration syntax: \"%.*s\"",
			            (int)(t->len > 40 ? 40 : t->len), p->s + t->pos);
		if (t->op == 3)
			return perr(p, t->pos, "not a valid duration string: \"%.*s\"",
			            (int)(t->len > 40 ? 40 : t->len), p->s + t->pos);
		if (t->op == 4)
			return perr(p, t->pos, "out of memory reading a number");
		return perr(p, t->pos, "unexpected character: '%c'", p->s[t->pos]);
	}
	tok_desc(p, d, sizeof d);
	if (t->type == T_EOF && context)
		return perr(p, t->pos, "unexpected end of input in %s", context);
	if (context)
		return perr(p, t->pos, "unexpected %s in %s", d, context);
	return perr(p, t->pos, "unexpected %s", d);
}

/* ---- strings ----------------------------------------------------------------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t utf8_put(char *o, uint32_t r)
{
	if (r < 0x80) {
		o[0] = (char)r;
		return 1;
	}
	if (r < 0x800) {
		o[0] = (char)(0xC0 | (r >> 6));
		o[1] = (char)(0x80 | (r & 0x3F));
		return 2;
	}
	if (r < 0x10000) {
		o[0] = (char)(0xE0 | (r >> 12));
		o[1] = (char)(0x80 | ((r >> 6) & 0x3F));
		o[2] = (char)(0x80 | (r & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (r >> 18));
	o[1] = (char)(0x80 | ((r >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((r >> 6) & 0x3F));
	o[3] = (char)(0x80 | (r & 0x3F));
	return 4;
}

/* Unquotes the string token as Go's strconv.Unquote does; *out is malloc'd. */
static int unquote(struct parser *p, char **out)
{
	const char *s = p->s + p->tok.pos;
	size_t n = p->tok.len, o = 0;
	char q = s[0];
	char *r = malloc(n + 1);
	if (!r)
		return pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM, "out of memory");
	for (size_t i = 1; i + 1 < n; i++) {
		char c = s[i];
		if (q == '`' || c != '\\') {
			if (c == '\0')
				goto bad;
			r[o++] = c;
			continue;
		}
		c = s[++i];
		uint32_t v = 0;
		int digits = 0;
		switch (c) {
		case 'a':
			r[o++] = '\a';
			continue;
		case 'b':
			r[o++] = '\b';
			continue;
		case 'f':
			r[o++] = '\f';
			continue;
		case 'n':
			r[o++] = '\n';
			continue;
		case 'r':
			r[o++] = '\r';
			continue;
		case 't':
			r[o++] = '\t';
			continue;
		case 'v':
			r[o++] = '\v';
			continue;
		case '\\':
			r[o++] = '\\';
			continue;
		case '"':
		case '\'':
			if (c != q)
				goto bad;
			r[o++] = c;
			continue;
		case 'x':
			digits = 2;
			break;
		case 'u':
			digits = 4;
			break;
		case 'U':
			digits = 8;
			break;
		default:
			if (c >= '0' && c <= '7') {
				for (int k = 0; k < 3; k++, i++) {
					if (i + 1 >= n || s[i] < '0' || s[i] > '7')
						goto bad;
					v = v * 8 + (uint32_t)(s[i] - '0');
				}
				i--;
				if (v > 255 || v == 0)
					goto bad;
				r[o++] = (char)v;
				continue;
			}
			goto bad;
		}
		for (int k = 0; k < digits; k++) {
			int h = i + 1 + (size_t)k + 1 < n ? hexval(s[i + 1 + k]) : -1;
			if (h < 0)
				goto bad;
			v = v * 16 + (uint32_t)h;
		}
		i += (size_t)digits;
		if (v == 0)
			goto bad;
		if (digits == 2) {
			r[o++] = (char)v;
		} else {
			if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
				goto bad;
			o += utf8_put(r + o, v);
		}
	}
	r[o] = '\0';
	*out = r;
	return 0;
bad:
	free(r);
	return perr(p, p->tok.pos, "invalid syntax in string %.*s", (int)(n > 60 ? 60 : n), s);
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
		return perr(p, pos, "query is nested more than %zu levels deep", p->max_depth);
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
	if (tok_is(p, "and"))
		return PQ_OP_AND;
	if (tok_is(p, "or"))
		return PQ_OP_OR;
	if (tok_is(p, "unless"))
		return PQ_OP_UNLESS;
	if (tok_is(p, "atan2"))
		return PQ_OP_ATAN2;
	return 0;
}

/* `( label, label, ... )` into n->labels. */
static int parse_label_list(struct parser *p, struct pd_pq_node *n, const char *context)
{
	if (p->tok.type != T_LPAREN)
		return unexpected(p, context);
	next(p);
	while (p->tok.type != T_RPAREN) {
		if (p->tok.type != T_IDENT || memchr(p->s + p->tok.pos, ':', p->tok.len))
			return unexpected(p, "grouping opts");
		char **nl = realloc(n->labels, (n->nlabels + 1) * sizeof *nl);
		if (!nl)
			return pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM,
			                  "out of memory");
		n->labels = nl;
		if (!(nl[n->nlabels] = strndup(p->s + p->tok.pos, p->tok.len)))
			return pd_pq_fail(p->err, PD_PROMQL_ERR_INTERNAL, PD_ENOMEM,
			                  "out of memory");
		n->nlabels++;
		next(p);
		if (p->tok.type == T_COMMA) {
			next(p);
			continue;
		}
		if (p->tok.type != T_RPAREN)
			return unexpected(p, "grouping opts");
	}
	next(p);
	return 0;
}

static const char *const agg_names[] = {"sum",  "avg",     "min",   "max",    "count",
                                        "topk", "bottomk", "group", "stddev", "stdvar"};

static int agg_lookup(struct parser *p)
{
	for (size_t i = 0; i < sizeof agg_names / sizeof agg_names[0]; i++)
		if (tok_is(p, agg_names[i]))
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
	next(p);
	if (tok_is(p, "by") || tok_is(p, "without")) {
		n->without = tok_is(p, "without");
		next(p);
		if (parse_label_list(p, n, "grouping opts"))
			goto fail;
		grouped = 1;
	}
	if (p->tok.type != T_LPAREN) {
		unexpected(p, "aggregation");
		goto fail;
	}
	size_t lpos = p->tok.pos;
	next(p);
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
			next(p);
			if (p->tok.type == T_RPAREN) {
				unexpected(p, "aggregation");
				goto fail;
			}
			continue;
		}
		if (p->tok.type != T_RPAREN) {
			unexpected(p, "aggregation");
			goto fail;
		}
	}
	next(p);
	if ((int)n->nargs != want) {
		if (n->nargs == 0)
			perr(p, lpos, "no arguments for aggregate expression provided");
		else
			perr(p, n->pos,
			     "wrong number of arguments for aggregate expression provided, "
			     "expected %d, got %zu",
			     want, n->nargs);
		goto fail;
	}
	if (!grouped && (tok_is(p, "by") || tok_is(p, "without"))) {
		n->without = tok_is(p, "without");
		next(p);
		if (parse_label_list(p, n, "grouping opts"))
			goto fail;
	}
	struct pd_pq_node *arg = n->args[n->nargs - 1];
	if (arg->type != PD_PROMQL_VECTOR) {
		perr(p, arg->pos, "expected type instant vector in aggregation expression, got %s",
		     type_doc(arg->type));
		goto fail;
	}
	if (want == 2 && n->args[0]->type != PD_PROMQL_SCALAR) {
		perr(p, n->args[0]->pos, "expected type scalar in aggregation parameter, got %s",
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
	next(p); /* name */
	next(p); /* ( */
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
			next(p);
			if (p->tok.type == T_RPAREN) {
				unexpected(p, "function call");
				goto fail;
			}
			continue;
		}
		if (p->tok.type != T_RPAREN) {
			unexpected(p, "function call");
			goto fail;
		}
	}
	next(p);
	if ((int)n->nargs < fn->nargs || (int)n->nargs > fn->nargs + fn->optional) {
		if (fn->optional)
			perr(p, n->pos,
			     "expected at most %d argument(s) in call to \"%s\", got %zu",
			     fn->nargs + fn->optional, fn->name, n->nargs);
		else
			perr(p, n->pos, "expected %d argument(s) in call to \"%s\", got %zu",
			     fn->nargs, fn->name, n->nargs);
		goto fail;
	}
	for (size_t i = 0; i < n->nargs; i++) {
		enum pd_promql_type want = argt_type(fn->args[i]);
		if (n->args[i]->type != want) {
			perr(p, n->args[i]->pos,
			     "expected type %s in call to function \"%s\", got %s", type_doc(want),
			     fn->name, type_doc(n->args[i]->type));
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
				perr(p, off, "%s", msg);
			}
		} else {
			perr(p, start, "%s", msg);
		}
		pd_pq_node_free(n);
		return NULL;
	}
	p->i = end;
	next(p);
	return n;
}

static int parse_at_offset(struct parser *p, struct pd_pq_node *n, int *seen_offset, int *seen_at)
{
	for (;;) {
		if (tok_is(p, "offset")) {
			size_t pos = p->tok.pos;
			if (n->kind != PQ_SEL)
				return perr(p, pos,
				            "offset modifier must be preceded by an instant vector "
				            "selector or range vector selector or a subquery");
			if (*seen_offset)
				return perr(p, pos, "offset may not be set multiple times");
			next(p);
			int neg = 0;
			if (p->tok.type == T_OP &&
			    (p->tok.op == PQ_OP_SUB || p->tok.op == PQ_OP_ADD)) {
				neg = p->tok.op == PQ_OP_SUB;
				next(p);
			}
			if (p->tok.type != T_DURATION)
				return unexpected(p, "offset");
			n->offset_ms = neg ? -p->tok.dur : p->tok.dur;
			*seen_offset = 1;
			next(p);
		} else if (p->tok.type == T_AT) {
			size_t pos = p->tok.pos;
			if (n->kind != PQ_SEL)
				return perr(p, pos,
				            "@ modifier must be preceded by an instant vector "
				            "selector or range vector selector or a subquery");
			if (*seen_at)
				return perr(p, pos, "@ <timestamp> may not be set multiple times");
			next(p);
			if (tok_is(p, "start") || tok_is(p, "end")) {
				n->at = tok_is(p, "start") ? 2 : 3;
				next(p);
				if (p->tok.type != T_LPAREN)
					return unexpected(p, "@");
				next(p);
				if (p->tok.type != T_RPAREN)
					return unexpected(p, "@");
				next(p);
			} else {
				int neg = 0;
				if (p->tok.type == T_OP &&
				    (p->tok.op == PQ_OP_SUB || p->tok.op == PQ_OP_ADD)) {
					neg = p->tok.op == PQ_OP_SUB;
					next(p);
				}
				if (p->tok.type != T_NUMBER)
					return unexpected(p, "@");
				double v = neg ? -p->tok.num : p->tok.num;
				if (!isfinite(v) || fabs(v * 1000) > 9.2e18)
					return perr(p, p->tok.pos,
					            "timestamp out of bounds for @ modifier: %g",
					            v);
				n->at = 1;
				n->at_ms = (int64_t)llround(v * 1000);
				next(p);
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
		next(p);
		return n;
	case T_STRING:
		if (!(n = node_new(p, PQ_STR, t.pos)))
			return NULL;
		n->type = PD_PROMQL_STRING;
		if (unquote(p, &n->str)) {
			pd_pq_node_free(n);
			p->failed = 1;
			return NULL;
		}
		next(p);
		return n;
	case T_LPAREN: {
		next(p);
		struct pd_pq_node *in = parse_expr(p, 1);
		if (!in)
			return NULL;
		if (p->tok.type != T_RPAREN) {
			unexpected(p, "paren expression");
			pd_pq_node_free(in);
			return NULL;
		}
		next(p);
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
			next(p);
			return n;
		}
		int agg = agg_lookup(p);
		if (agg >= 0)
			return parse_aggregation(p, agg);
		if (tok_is(p, "count_values") || tok_is(p, "quantile"))
			return (perr(p, t.pos, "aggregation \"%.*s\" is not supported by profd",
			             (int)t.len, w),
			        NULL);
		/* a function call when a '(' follows */
		size_t j = p->i;
		while (j < p->len && isspace((unsigned char)p->s[j]))
			j++;
		if (j < p->len && p->s[j] == '(') {
			const struct pd_pq_func *fn = pd_pq_func_lookup(w, t.len);
			if (!fn)
				return (perr(p, t.pos, "unknown function with name \"%.*s\"",
				             (int)t.len, w),
				        NULL);
			return parse_call(p, fn);
		}
		static const char *const kw[] = {"by",         "without",     "on",     "ignoring",
		                                 "group_left", "group_right", "bool",   "offset",
		                                 "and",        "or",          "unless", "atan2"};
		for (size_t k = 0; k < sizeof kw / sizeof kw[0]; k++)
			if (tok_is(p, kw[k]))
				return (unexpected(p, NULL), NULL);
		size_t end = j < p->len && p->s[j] == '{' ? brace_end(p->s, p->len, j) : p->i;
		return parse_selector(p, t.pos, end);
	}
	default:
		unexpected(p, NULL);
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
			perr(p, pos, "subqueries are not supported by profd");
			goto fail;
		}
		if (n->kind != PQ_SEL || n->range_ms || seen_offset || seen_at) {
			perr(p, n->pos, "ranges only allowed for vector selectors");
			goto fail;
		}
		next(p);
		if (p->tok.type != T_DURATION) {
			unexpected(p, "range selector");
			goto fail;
		}
		if (p->tok.dur <= 0) {
			perr(p, p->tok.pos, "range must be greater than 0");
			goto fail;
		}
		n->range_ms = p->tok.dur;
		n->type = PD_PROMQL_MATRIX;
		next(p);
		if (p->tok.type != T_RBRACKET) {
			unexpected(p, "range selector");
			goto fail;
		}
		next(p);
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
		next(p);
		struct pd_pq_node *in = parse_expr(p, op_prec(PQ_OP_POW));
		if (!in)
			return NULL;
		if (in->type != PD_PROMQL_SCALAR && in->type != PD_PROMQL_VECTOR) {
			perr(p, pos,
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
		perr(p, p->tok.pos, "query is nested more than %zu levels deep", p->max_depth);
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
					perr(p, p->tok.pos,
					     "subqueries are not supported by profd");
				else
					perr(p, lhs->pos,
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
		next(p);
		if (tok_is(p, "bool")) {
			if (!is_comparison(op)) {
				perr(p, p->tok.pos,
				     "bool modifier can only be used on comparison operators");
				goto fail;
			}
			n->ret_bool = 1;
			next(p);
		}
		if (tok_is(p, "on") || tok_is(p, "ignoring")) {
			n->matching = tok_is(p, "on") ? 1 : 2;
			next(p);
			if (parse_label_list(p, n, "grouping opts"))
				goto fail;
			if (tok_is(p, "group_left") || tok_is(p, "group_right")) {
				perr(p, p->tok.pos,
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
			perr(p, n->pos,
			     "binary expression must contain only scalar and instant vector "
			     "types");
			goto fail;
		}
		if (lt == PD_PROMQL_SCALAR && rt == PD_PROMQL_SCALAR && is_comparison(op) &&
		    !n->ret_bool) {
			perr(p, n->pos, "comparisons between scalars must use BOOL modifier");
			goto fail;
		}
		if ((lt != PD_PROMQL_VECTOR || rt != PD_PROMQL_VECTOR) && n->matching) {
			perr(p, n->pos, "vector matching only allowed between instant vectors");
			goto fail;
		}
		if (is_setop(op) && (lt == PD_PROMQL_SCALAR || rt == PD_PROMQL_SCALAR)) {
			perr(p, oppos,
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
		return perr(&p, (size_t)((const char *)memchr(query, '\0', len) - query),
		            "unexpected character: '\\x00'");
	next(&p);
	if (p.tok.type == T_EOF)
		return perr(&p, 0, "no expression found in input");
	struct pd_pq_node *root = parse_expr(&p, 1);
	if (!root)
		return err && err->err.code ? err->err.code : PD_EINVAL;
	if (p.tok.type != T_EOF) {
		unexpected(&p, NULL);
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
		rc = pd_buf_printf(b, "%s", n->kind == PQ_AGG ? agg_names[n->op] : n->fn->name);
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
