/* parse.c: the PromQL series-selector parser and the label-set parser built on the
 * same lexer.
 *
 * The lexer follows the states of Prometheus's promql/parser/lex.go (top level and
 * inside braces, PromQL's three string quotes and Go's escapes, `#` comments), and
 * the parser the vector-selector rules of its grammar, so that errors come out with
 * Prometheus's words and positions: "L:C: parse error: MSG", where C is the 1-based
 * byte column of the token that failed (of the opening quote for a bad string, of the
 * selector's start for the checks that need the whole selector). */
#include "labels_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum ttype {
	T_EOF,
	T_ERROR,
	T_IDENT,  /* [a-zA-Z_][a-zA-Z0-9_]*; at top level also with ':' */
	T_STRING, /* sval holds the unquoted value */
	T_LBRACE,
	T_RBRACE,
	T_COMMA,
	T_EQL,
	T_NEQ,
	T_EQL_REGEX,
	T_NEQ_REGEX,
	T_OTHER, /* any other token outside braces; msg holds its description */
};

#define TOK_MSG_MAX 256

struct tok {
	enum ttype type;
	size_t pos; /* byte offset where the token (or the error) starts */
	size_t len; /* raw length */
	char *sval; /* T_STRING: unquoted value (arena), NUL-terminated */
	size_t slen;
	char msg[TOK_MSG_MAX]; /* T_ERROR: message; T_OTHER: description */
};

struct lexer {
	const char *in;
	size_t len;
	size_t pos;
	int brace_open;
	struct pd_arena *arena;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_alpha(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alnum(char c)
{
	return is_alpha(c) || is_digit(c);
}

static int digit_val(uint32_t c)
{
	if (c >= '0' && c <= '9')
		return (int)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (int)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (int)(c - 'A' + 10);
	return 16;
}

static void tok_error(struct tok *t, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void tok_error(struct tok *t, size_t pos, const char *fmt, ...)
{
	va_list ap;
	t->type = T_ERROR;
	t->pos = pos;
	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
}

/* The rune at l->in[i] (RuneError for a bad byte; -1 stands for end of input). */
static uint32_t rune_at(const struct lexer *l, size_t i, size_t *w)
{
	uint32_t r;
	if (i >= l->len) {
		*w = 0;
		return PD_LABELS_RUNE_ERROR; /* Go's %q of eof (-1) prints the error rune */
	}
	*w = pd_labels_utf8_decode((const unsigned char *)l->in + i, l->len - i, &r);
	return r;
}

/* Scans a string quoted with " or ' starting at l->pos, unquoting it as PromQL does
 * (Go's escapes; only the enclosing quote may be escaped). */
static void lex_string(struct lexer *l, struct tok *t)
{
	const char *in = l->in;
	size_t start = l->pos, i = start + 1;
	char q = in[start];
	char *out;
	size_t n = 0, end = i;
	char ubuf[64];

	/* unquoting never makes a string longer than its quoted form */
	while (end < l->len && in[end] != q && in[end] != '\n')
		end += in[end] == '\\' ? 2 : 1;
	out = pd_arena_alloc(l->arena, end - start + 1);

	if (!out) {
		tok_error(t, start, "out of memory");
		return;
	}
	for (;;) {
		if (i >= l->len || in[i] == '\n') {
			tok_error(t, start, "unterminated quoted string");
			return;
		}
		char c = in[i];
		if (c == q)
			break;
		if (c == '\\') {
			size_t w;
			uint32_t e = rune_at(l, i + 1, &w);
			unsigned ndig, base;
			uint32_t maxv, x = 0;
			if (w == 0) {
				tok_error(t, start, "escape sequence not terminated");
				return;
			}
			switch (e) {
			case 'a':
				out[n++] = '\a';
				i += 2;
				continue;
			case 'b':
				out[n++] = '\b';
				i += 2;
				continue;
			case 'f':
				out[n++] = '\f';
				i += 2;
				continue;
			case 'n':
				out[n++] = '\n';
				i += 2;
				continue;
			case 'r':
				out[n++] = '\r';
				i += 2;
				continue;
			case 't':
				out[n++] = '\t';
				i += 2;
				continue;
			case 'v':
				out[n++] = '\v';
				i += 2;
				continue;
			case '\\':
				out[n++] = '\\';
				i += 2;
				continue;
			case '0':
			case '1':
			case '2':
			case '3':
			case '4':
			case '5':
			case '6':
			case '7':
				ndig = 3, base = 8, maxv = 255;
				i += 1; /* the first digit is e itself */
				break;
			case 'x':
				ndig = 2, base = 16, maxv = 255;
				i += 2;
				break;
			case 'u':
				ndig = 4, base = 16, maxv = 0x10FFFF;
				i += 2;
				break;
			case 'U':
				ndig = 8, base = 16, maxv = 0x10FFFF;
				i += 2;
				break;
			default:
				if (e == (uint32_t)(unsigned char)q) {
					out[n++] = q;
					i += 2;
					continue;
				}
				pd_labels_format_U(ubuf, sizeof(ubuf), e);
				tok_error(t, start, "unknown escape sequence %s", ubuf);
				return;
			}
			for (unsigned k = 0; k < ndig; k++) {
				uint32_t d = rune_at(l, i, &w);
				if (w == 0) {
					tok_error(t, start, "escape sequence not terminated");
					return;
				}
				if ((unsigned)digit_val(d) >= base) {
					pd_labels_format_U(ubuf, sizeof(ubuf), d);
					tok_error(t, start,
					          "illegal character %s in escape sequence", ubuf);
					return;
				}
				x = x * base + (uint32_t)digit_val(d);
				i += w;
			}
			if (x > maxv || (x >= 0xD800 && x < 0xE000)) {
				tok_error(t, start,
				          "escape sequence is an invalid Unicode code point");
				return;
			}
			if (x == 0) {
				tok_error(t, start,
				          "strings must not contain NUL characters: profd "
				          "label values are C strings");
				return;
			}
			if (base == 8 || ndig == 2)
				out[n++] = (char)x; /* \NNN and \xNN are bytes */
			else
				n += pd_labels_utf8_encode(x, out + n);
			continue;
		}
		if (c == '\0') {
			tok_error(
			    t, start,
			    "strings must not contain NUL characters: profd label values are C "
			    "strings");
			return;
		}
		size_t w;
		uint32_t r = rune_at(l, i, &w);
		if (r == PD_LABELS_RUNE_ERROR && w == 1) {
			tok_error(t, start, "invalid UTF-8 rune");
			return;
		}
		memcpy(out + n, in + i, w);
		n += w;
		i += w;
	}
	out[n] = '\0';
	t->type = T_STRING;
	t->pos = start;
	t->len = i + 1 - start;
	t->sval = out;
	t->slen = n;
	l->pos = i + 1;
}

static void lex_raw_string(struct lexer *l, struct tok *t)
{
	size_t start = l->pos, i = start + 1;
	for (;;) {
		if (i >= l->len) {
			tok_error(t, start, "unterminated raw string");
			return;
		}
		if (l->in[i] == '`')
			break;
		if (l->in[i] == '\0') {
			tok_error(
			    t, start,
			    "strings must not contain NUL characters: profd label values are C "
			    "strings");
			return;
		}
		size_t w;
		uint32_t r = rune_at(l, i, &w);
		if (r == PD_LABELS_RUNE_ERROR && w == 1) {
			tok_error(t, start, "invalid UTF-8 rune");
			return;
		}
		i += w;
	}
	t->sval = pd_arena_strndup(l->arena, l->in + start + 1, i - start - 1);
	if (!t->sval) {
		tok_error(t, start, "out of memory");
		return;
	}
	t->type = T_STRING;
	t->pos = start;
	t->len = i + 1 - start;
	t->slen = i - start - 1;
	l->pos = i + 1;
}

/* Describes a top-level identifier as Prometheus's Item.desc() would: keywords as
 * <by>, operators as <op:and>, aggregators as <aggr:sum>. */
static void describe_word(char *dst, size_t cap, const char *s, size_t n)
{
	static const char *const ops[] = {"and", "or", "unless", "atan2"};
	static const char *const aggrs[] = {
	    "sum",    "avg",  "count",   "min",          "max",      "group",  "stddev",
	    "stdvar", "topk", "bottomk", "count_values", "quantile", "limitk", "limit_ratio"};
	static const char *const kws[] = {
	    "offset", "by",       "without",  "on",   "ignoring",  "group_left", "group_right",
	    "bool",   "smoothed", "anchored", "fill", "fill_left", "fill_right"};
	char q[128]; /* identifiers are ASCII: 100 bytes quote to 105 with "..." */
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strlen(ops[i]) == n && strncasecmp(s, ops[i], n) == 0) {
			snprintf(dst, cap, "<op:%.*s>", (int)n, s);
			return;
		}
	for (i = 0; i < sizeof(aggrs) / sizeof(aggrs[0]); i++)
		if (strlen(aggrs[i]) == n && strncasecmp(s, aggrs[i], n) == 0) {
			snprintf(dst, cap, "<aggr:%.*s>", (int)n, s);
			return;
		}
	for (i = 0; i < sizeof(kws) / sizeof(kws[0]); i++)
		if (strlen(kws[i]) == n && strncasecmp(s, kws[i], n) == 0) {
			snprintf(dst, cap, "<%.*s>", (int)n, s);
			return;
		}
	pd_labels_quote_msg(q, sizeof(q), s, n, 100);
	if ((n == 3 && (strncasecmp(s, "inf", 3) == 0 || strncasecmp(s, "nan", 3) == 0)))
		snprintf(dst, cap, "number %s", q);
	else if (memchr(s, ':', n))
		snprintf(dst, cap, "metric identifier %s", q);
	else
		snprintf(dst, cap, "identifier %s", q);
}

static void lex_next(struct lexer *l, struct tok *t)
{
	const char *in = l->in;
	size_t w;
	char qr[32];

	memset(t, 0, sizeof(*t));
	for (;;) {
		if (l->pos < l->len && in[l->pos] == '#') {
			while (l->pos < l->len && in[l->pos] != '\n' && in[l->pos] != '\r')
				l->pos++;
			continue;
		}
		if (l->pos < l->len && is_space(in[l->pos])) {
			l->pos++;
			continue;
		}
		break;
	}
	size_t start = l->pos;
	t->pos = start;
	if (start >= l->len) {
		if (l->brace_open)
			tok_error(t, start, "unexpected end of input inside braces");
		else
			t->type = T_EOF;
		return;
	}
	char c = in[start];
	if (c == '"' || c == '\'') {
		lex_string(l, t);
		return;
	}
	if (c == '`') {
		lex_raw_string(l, t);
		return;
	}
	if (l->brace_open) {
		size_t i = start + 1;
		t->len = 1;
		switch (c) {
		case ',':
			t->type = T_COMMA;
			break;
		case '}':
			t->type = T_RBRACE;
			l->brace_open = 0;
			break;
		case '=':
			if (i < l->len && in[i] == '~') {
				t->type = T_EQL_REGEX;
				t->len = 2;
			} else {
				t->type = T_EQL;
			}
			break;
		case '!':
			if (i < l->len && (in[i] == '~' || in[i] == '=')) {
				t->type = in[i] == '~' ? T_NEQ_REGEX : T_NEQ;
				t->len = 2;
				break;
			}
			pd_labels_quote_rune(qr, sizeof(qr), rune_at(l, i, &w));
			tok_error(t, start, "unexpected character after '!' inside braces: %s", qr);
			return;
		case '{':
			tok_error(t, start, "unexpected left brace '{'");
			return;
		default:
			if (is_alpha(c)) {
				while (i < l->len && is_alnum(in[i]))
					i++;
				t->type = T_IDENT;
				t->len = i - start;
				break;
			}
			pd_labels_quote_rune(qr, sizeof(qr), rune_at(l, start, &w));
			tok_error(t, start, "unexpected character inside braces: %s", qr);
			return;
		}
		l->pos = start + t->len;
		return;
	}

	/* top level */
	size_t i = start + 1;
	t->len = 1;
	if (is_alpha(c) || c == ':') {
		while (i < l->len && (is_alnum(in[i]) || in[i] == ':'))
			i++;
		t->type = T_IDENT;
		t->len = i - start;
		describe_word(t->msg, sizeof(t->msg), in + start, t->len);
		l->pos = i;
		return;
	}
	if (is_digit(c) || (c == '.' && i < l->len && is_digit(in[i]))) {
		char q[128]; /* digits and letters only: 100 bytes quote to 102 */
		int dur;
		while (i < l->len && (is_alnum(in[i]) || in[i] == '.'))
			i++;
		/* 5m, 1h30m, 10ms are durations; 0x1d is a number */
		dur = memchr("smhdwy", in[i - 1], 6) != NULL &&
		      !(i - start > 1 && in[start] == '0' && (in[start + 1] | 0x20) == 'x');
		pd_labels_quote_msg(q, sizeof(q), in + start, i - start, 100);
		t->type = T_OTHER;
		t->len = i - start;
		snprintf(t->msg, sizeof(t->msg), "%s %s", dur ? "duration" : "number", q);
		l->pos = i;
		return;
	}
	t->type = T_OTHER;
	switch (c) {
	case '{':
		t->type = T_LBRACE;
		l->brace_open = 1;
		break;
	case ',':
	case '(':
	case ')':
	case '[':
		snprintf(t->msg, sizeof(t->msg), "\"%c\"", c);
		break;
	case ']':
		tok_error(t, start, "unexpected right bracket ']'");
		return;
	case '=':
		if (i < l->len && in[i] == '=') {
			snprintf(t->msg, sizeof(t->msg), "<op:==>");
			t->len = 2;
		} else if (i < l->len && in[i] == '~') {
			tok_error(t, start, "unexpected character after '=': '~'");
			return;
		} else {
			snprintf(t->msg, sizeof(t->msg), "\"=\"");
		}
		break;
	case '!':
		if (i < l->len && in[i] == '=') {
			snprintf(t->msg, sizeof(t->msg), "<op:!=>");
			t->len = 2;
			break;
		}
		pd_labels_quote_rune(qr, sizeof(qr), rune_at(l, i, &w));
		tok_error(t, start, "unexpected character after '!': %s", qr);
		return;
	case '<':
	case '>':
		if (i < l->len && in[i] == '=')
			t->len = 2;
		snprintf(t->msg, sizeof(t->msg), "<op:%.*s>", (int)t->len, in + start);
		break;
	case '+':
	case '-':
	case '*':
	case '/':
	case '%':
	case '^':
	case '@':
		snprintf(t->msg, sizeof(t->msg), "<op:%c>", c);
		break;
	default:
		pd_labels_quote_rune(qr, sizeof(qr), rune_at(l, start, &w));
		tok_error(t, start, "unexpected character: %s", qr);
		return;
	}
	l->pos = start + t->len;
}

/* ---- parser --------------------------------------------------------------- */

struct parser {
	struct lexer lx;
	struct pd_err *err;
	int failed;
};

/* Records "L:C: parse error: MSG" for the byte offset pos (first error wins). */
static int perr(struct parser *p, int code, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int perr(struct parser *p, int code, size_t pos, const char *fmt, ...)
{
	char msg[PD_ERR_MSG_MAX], where[48];
	va_list ap;

	if (p->failed)
		return code;
	p->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->lx.len == 0) {
		snprintf(where, sizeof(where), "unknown position");
	} else {
		size_t line = 1, col = pos + 1;
		for (size_t i = 0; i < pos && i < p->lx.len; i++) {
			if (p->lx.in[i] == '\n') {
				line++;
				col = pos - i;
			}
		}
		snprintf(where, sizeof(where), "%zu:%zu", line, col);
	}
	return pd_err_set(p->err, code, "%s: parse error: %s", where, msg);
}

/* Prometheus's Item.desc() of a token. */
static void tok_desc(const struct parser *p, const struct tok *t, char *dst, size_t cap)
{
	const char *raw = p->lx.in + t->pos;
	char q[200]; /* at most 10 runes or 100 ASCII bytes, quoted */

	switch (t->type) {
	case T_EOF:
		snprintf(dst, cap, "end of input");
		return;
	case T_LBRACE:
		snprintf(dst, cap, "\"{\"");
		return;
	case T_RBRACE:
		snprintf(dst, cap, "\"}\"");
		return;
	case T_COMMA:
		snprintf(dst, cap, "\",\"");
		return;
	case T_EQL:
		snprintf(dst, cap, "\"=\"");
		return;
	case T_NEQ:
		snprintf(dst, cap, "<op:!=>");
		return;
	case T_EQL_REGEX:
		snprintf(dst, cap, "<op:=~>");
		return;
	case T_NEQ_REGEX:
		snprintf(dst, cap, "<op:!~>");
		return;
	case T_IDENT:
		/* top-level words carry their description; inside braces every word is
		 * an identifier */
		if (t->msg[0]) {
			snprintf(dst, cap, "%s", t->msg);
		} else {
			pd_labels_quote_msg(q, sizeof(q), raw, t->len, 100);
			snprintf(dst, cap, "identifier %s", q);
		}
		return;
	case T_STRING: {
		/* Go's %.10q...: at most 10 runes of the raw token, then "..." */
		size_t n = 0, runes = 0;
		while (n < t->len && runes < 10) {
			uint32_t r;
			n += pd_labels_utf8_decode((const unsigned char *)raw + n, t->len - n, &r);
			runes++;
		}
		pd_labels_quote_msg(q, sizeof(q), raw, n, SIZE_MAX);
		snprintf(dst, cap, "string %s%s", q, t->len > 10 ? "..." : "");
		return;
	}
	case T_OTHER:
	case T_ERROR:
		snprintf(dst, cap, "%s", t->msg);
		return;
	}
}

/* Reports an unexpected token the way the PromQL grammar's error rules do; a lexer
 * error is reported as itself. */
static int unexpected(struct parser *p, const struct tok *t, const char *context,
                      const char *expected)
{
	char d[TOK_MSG_MAX];
	if (t->type == T_ERROR)
		return perr(p, PD_EINVAL, t->pos, "%s", t->msg);
	tok_desc(p, t, d, sizeof(d));
	return perr(p, PD_EINVAL, t->pos, "unexpected %s%s%s%s%s", d, context ? " in " : "",
	            context ? context : "", expected ? ", expected " : "",
	            expected ? expected : "");
}

/* Checks the first token of a selector or metric: returns 1 when it is a metric
 * name, 0 when it is not an identifier at all, <0 after reporting a word PromQL does
 * not take as a metric name. */
static int metric_ident(struct parser *p, const struct tok *t)
{
	static const char *const bad[] = {"bool",        "on",    "ignoring", "group_left",
	                                  "group_right", "atan2", "inf",      "nan"};
	if (t->type != T_IDENT)
		return 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (strlen(bad[i]) == t->len && strncasecmp(p->lx.in + t->pos, bad[i], t->len) == 0)
			return unexpected(p, t, NULL, NULL);
	return 1;
}

static const char after_selector_hint[] =
    "profd accepts only a series selector, such as heap{job=\"api\"}";

static int add_matcher(struct parser *p, struct pd_labels_selector *s, size_t *cap, size_t max,
                       size_t pos, enum pd_labels_match_type type, const char *name,
                       const char *value)
{
	struct pd_labels_matcher *m;
	struct pd_err e = {0};
	int rc;

	if (s->nmatchers >= max)
		return perr(p, PD_ETOOBIG, pos, "too many matchers: more than %zu", max);
	if (s->nmatchers == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct pd_labels_matcher **nm = realloc(s->matchers, ncap * sizeof(*nm));
		if (!nm)
			return perr(p, PD_ENOMEM, pos, "out of memory");
		s->matchers = nm;
		*cap = ncap;
	}
	rc = pd_labels_matcher_create(&m, type, name, value, &e);
	if (rc < 0)
		return perr(p, rc, pos, "%s", e.msg);
	s->matchers[s->nmatchers++] = m;
	return 0;
}

static int match_type(enum ttype t, enum pd_labels_match_type *out)
{
	switch (t) {
	case T_EQL:
		*out = PD_LABELS_MATCH_EQUAL;
		return 1;
	case T_NEQ:
		*out = PD_LABELS_MATCH_NOT_EQUAL;
		return 1;
	case T_EQL_REGEX:
		*out = PD_LABELS_MATCH_REGEXP;
		return 1;
	case T_NEQ_REGEX:
		*out = PD_LABELS_MATCH_NOT_REGEXP;
		return 1;
	default:
		return 0;
	}
}

/* A quoted label name (Prometheus 3 syntax) must still be a name profd can store. */
static int check_quoted_name(struct parser *p, const struct tok *t)
{
	char q[300];
	if (pd_labels_valid_name(t->sval) && strlen(t->sval) == t->slen)
		return 0;
	pd_labels_quote_msg(q, sizeof(q), t->sval, t->slen, 64);
	return perr(p, PD_EINVAL, t->pos,
	            "invalid label name %s: profd label names must match [a-zA-Z_][a-zA-Z0-9_]*",
	            q);
}

/* Parses the matchers after '{' up to and including '}'. */
static int parse_matchers(struct parser *p, struct pd_labels_selector *s, size_t *cap, size_t max)
{
	struct tok t, op, val;
	enum pd_labels_match_type mt;
	const char *name;
	int rc;

	lex_next(&p->lx, &t);
	if (t.type == T_RBRACE)
		return 0;
	for (;;) {
		int have_next = 0;
		if (t.type == T_IDENT || t.type == T_STRING) {
			size_t pos = t.pos;
			name = t.type == T_IDENT
			           ? pd_arena_strndup(p->lx.arena, p->lx.in + t.pos, t.len)
			           : t.sval;
			if (!name)
				return perr(p, PD_ENOMEM, pos, "out of memory");
			lex_next(&p->lx, &op);
			if (match_type(op.type, &mt)) {
				if (t.type == T_STRING) {
					if (check_quoted_name(p, &t) < 0)
						return PD_EINVAL;
				}
				lex_next(&p->lx, &val);
				if (val.type != T_STRING)
					return unexpected(p, &val, "label matching", "string");
				if ((rc = add_matcher(p, s, cap, max, pos, mt, name, val.sval)) < 0)
					return rc;
			} else if (t.type == T_STRING) {
				/* {"heap", ...}: a quoted metric name on its own */
				if ((rc = add_matcher(p, s, cap, max, pos, PD_LABELS_MATCH_EQUAL,
				                      PD_LABELS_METRIC_NAME, t.sval)) < 0)
					return rc;
				t = op;
				have_next = 1;
			} else {
				return unexpected(p, &op, "label matching",
				                  "label matching operator");
			}
		} else {
			return unexpected(p, &t, "label matching", "identifier or \"}\"");
		}
		if (!have_next)
			lex_next(&p->lx, &t);
		if (t.type == T_COMMA) {
			lex_next(&p->lx, &t);
			if (t.type == T_RBRACE)
				return 0;
			continue;
		}
		if (t.type == T_RBRACE)
			return 0;
		return unexpected(p, &t, "label matching", "\",\" or \"}\"");
	}
}

void pd_labels_selector_destroy(struct pd_labels_selector *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmatchers; i++)
		pd_labels_matcher_destroy(s->matchers[i]);
	free(s->matchers);
	free(s);
}

int pd_labels_selector_parse(struct pd_labels_selector **out, const char *input, size_t len,
                             const struct pd_labels_parse_opts *opts, struct pd_err *err)
{
	struct parser p = {.lx = {.in = input, .len = len}, .err = err};
	struct pd_labels_selector *s = NULL;
	size_t max_len = opts && opts->max_len ? opts->max_len : PD_LABELS_DEFAULT_MAX_SELECTOR_LEN;
	size_t max_m =
	    opts && opts->max_matchers ? opts->max_matchers : PD_LABELS_DEFAULT_MAX_MATCHERS;
	size_t cap = 0, sel_pos, name_pos = 0;
	struct tok t, name = {0};
	int rc, has_name = 0;
	char d[TOK_MSG_MAX];

	*out = NULL;
	if (len > max_len)
		return pd_err_set(err, PD_ETOOBIG,
		                  "selector is %zu bytes long, more than the limit of %zu", len,
		                  max_len);
	s = calloc(1, sizeof(*s));
	p.lx.arena = pd_arena_create(0);
	if (!s || !p.lx.arena) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}

	lex_next(&p.lx, &t);
	sel_pos = t.pos;
	if ((rc = metric_ident(&p, &t)) < 0)
		goto fail;
	if (rc == 1) {
		has_name = 1;
		name = t;
		name_pos = t.pos;
		lex_next(&p.lx, &t);
		if (t.type == T_LBRACE) {
			if ((rc = parse_matchers(&p, s, &cap, max_m)) < 0)
				goto fail;
			lex_next(&p.lx, &t);
		}
	} else if (t.type == T_LBRACE) {
		if ((rc = parse_matchers(&p, s, &cap, max_m)) < 0)
			goto fail;
		lex_next(&p.lx, &t);
	} else {
		rc = unexpected(&p, &t, NULL, NULL);
		goto fail;
	}
	if (t.type != T_EOF) {
		if (t.type == T_ERROR) {
			rc = perr(&p, PD_EINVAL, t.pos, "%s", t.msg);
		} else {
			tok_desc(&p, &t, d, sizeof(d));
			rc = perr(&p, PD_EINVAL, t.pos, "unexpected %s after selector: %s", d,
			          after_selector_hint);
		}
		goto fail;
	}

	if (has_name) {
		/* name{...}: the name becomes the last matcher, as Prometheus appends it */
		char *nm = pd_arena_strndup(p.lx.arena, input + name.pos, name.len);
		if (!nm) {
			rc = perr(&p, PD_ENOMEM, name_pos, "out of memory");
			goto fail;
		}
		for (size_t i = 0; i < s->nmatchers; i++) {
			const struct pd_labels_matcher *m = s->matchers[i];
			if (strcmp(pd_labels_matcher_name(m), PD_LABELS_METRIC_NAME) == 0) {
				char qa[300], qb[300];
				const char *v = pd_labels_matcher_value(m);
				pd_labels_quote_msg(qa, sizeof(qa), nm, strlen(nm), 100);
				pd_labels_quote_msg(qb, sizeof(qb), v, strlen(v), 100);
				rc = perr(&p, PD_EINVAL, sel_pos,
				          "metric name must not be set twice: %s or %s", qa, qb);
				goto fail;
			}
		}
		if ((rc = add_matcher(&p, s, &cap, max_m, name_pos, PD_LABELS_MATCH_EQUAL,
		                      PD_LABELS_METRIC_NAME, nm)) < 0)
			goto fail;
		s->name = pd_labels_matcher_value(s->matchers[s->nmatchers - 1]);
	} else {
		int nonempty = 0;
		for (size_t i = 0; i < s->nmatchers; i++)
			if (!pd_labels_matcher_matches_empty(s->matchers[i]))
				nonempty = 1;
		if (!nonempty) {
			rc = perr(&p, PD_EINVAL, sel_pos,
			          "vector selector must contain at least one non-empty matcher");
			goto fail;
		}
		for (size_t i = 0; i < s->nmatchers; i++) {
			const struct pd_labels_matcher *m = s->matchers[i];
			if (pd_labels_matcher_type(m) == PD_LABELS_MATCH_EQUAL &&
			    strcmp(pd_labels_matcher_name(m), PD_LABELS_METRIC_NAME) == 0) {
				s->name = pd_labels_matcher_value(m);
				break;
			}
		}
	}
	pd_arena_destroy(p.lx.arena);
	*out = s;
	return 0;
fail:
	pd_arena_destroy(p.lx.arena);
	pd_labels_selector_destroy(s);
	return rc < 0 ? rc : PD_EINVAL;
}

int pd_labels_selector_matches(const struct pd_labels_selector *s, const struct pd_labels *ls)
{
	return pd_labels_matches(ls, s->matchers, s->nmatchers);
}

int pd_labels_selector_format(const struct pd_labels_selector *s, struct pd_buf *b)
{
	const struct pd_labels_matcher *skip = NULL;
	size_t printed = 0;
	int rc;

	/* the name stands bare when it can and is the only condition on __name__ */
	if (s->name && pd_labels_valid_metric_name(s->name)) {
		size_t on_name = 0;
		for (size_t i = 0; i < s->nmatchers; i++) {
			const struct pd_labels_matcher *m = s->matchers[i];
			if (strcmp(pd_labels_matcher_name(m), PD_LABELS_METRIC_NAME) == 0)
				on_name++;
			if (pd_labels_matcher_value(m) == s->name)
				skip = m;
		}
		if (on_name != 1)
			skip = NULL;
	}
	if (skip && (rc = pd_buf_append(b, s->name, strlen(s->name))) < 0)
		return rc;
	if (skip && s->nmatchers == 1)
		return 0;
	if ((rc = pd_buf_append(b, "{", 1)) < 0)
		return rc;
	for (size_t i = 0; i < s->nmatchers; i++) {
		if (s->matchers[i] == skip)
			continue;
		if ((printed && (rc = pd_buf_append(b, ",", 1)) < 0) ||
		    (rc = pd_labels_matcher_format(s->matchers[i], b)) < 0)
			return rc;
		printed++;
	}
	return pd_buf_append(b, "}", 1);
}

/* ---- label sets ----------------------------------------------------------- */

struct set_item {
	size_t pos;
	const char *name;
	const char *value;
};

int pd_labels_parse(struct pd_labels **out, const char *s, const struct pd_labels_limits *limits,
                    struct pd_err *err)
{
	size_t len = strlen(s);
	struct parser p = {.lx = {.in = s, .len = len}, .err = err};
	struct pd_labels_limits lim = pd_labels_limits_resolve(limits);
	struct pd_labels_builder *b = NULL;
	struct set_item *items = NULL;
	size_t nitems = 0, cap = 0;
	struct tok t, name = {0}, op, val;
	int rc, has_name = 0;
	char d[TOK_MSG_MAX], msg[PD_ERR_MSG_MAX];

	*out = NULL;
	if (len > PD_LABELS_DEFAULT_MAX_SELECTOR_LEN)
		return pd_err_set(err, PD_ETOOBIG,
		                  "label set is %zu bytes long, more than the limit of %d", len,
		                  PD_LABELS_DEFAULT_MAX_SELECTOR_LEN);
	p.lx.arena = pd_arena_create(0);
	b = pd_labels_builder_create(&lim);
	if (!p.lx.arena || !b) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}

	lex_next(&p.lx, &t);
	if ((rc = metric_ident(&p, &t)) < 0)
		goto fail;
	if (rc == 1) {
		has_name = 1;
		name = t;
		lex_next(&p.lx, &t);
	}
	if (t.type == T_LBRACE) {
		lex_next(&p.lx, &t);
		while (t.type != T_RBRACE) {
			if (t.type != T_IDENT && t.type != T_STRING) {
				rc = unexpected(&p, &t, "label set", "identifier or \"}\"");
				goto fail;
			}
			if (t.type == T_STRING && check_quoted_name(&p, &t) < 0) {
				rc = PD_EINVAL;
				goto fail;
			}
			lex_next(&p.lx, &op);
			if (op.type != T_EQL) {
				rc = unexpected(&p, &op, "label set", "\"=\"");
				goto fail;
			}
			lex_next(&p.lx, &val);
			if (val.type != T_STRING) {
				rc = unexpected(&p, &val, "label set", "string");
				goto fail;
			}
			if (nitems == cap) {
				size_t ncap = cap ? cap * 2 : 8;
				struct set_item *ni = realloc(items, ncap * sizeof(*ni));
				if (!ni) {
					rc = perr(&p, PD_ENOMEM, t.pos, "out of memory");
					goto fail;
				}
				items = ni;
				cap = ncap;
			}
			items[nitems].pos = t.pos;
			items[nitems].name = t.type == T_STRING
			                         ? t.sval
			                         : pd_arena_strndup(p.lx.arena, s + t.pos, t.len);
			items[nitems].value = val.sval;
			if (!items[nitems].name) {
				rc = perr(&p, PD_ENOMEM, t.pos, "out of memory");
				goto fail;
			}
			nitems++;
			lex_next(&p.lx, &t);
			if (t.type == T_COMMA) {
				lex_next(&p.lx, &t);
				continue;
			}
			if (t.type != T_RBRACE) {
				rc = unexpected(&p, &t, "label set", "\",\" or \"}\"");
				goto fail;
			}
		}
		lex_next(&p.lx, &t);
	}
	if (t.type != T_EOF) {
		if (t.type == T_ERROR) {
			rc = perr(&p, PD_EINVAL, t.pos, "%s", t.msg);
		} else {
			tok_desc(&p, &t, d, sizeof(d));
			rc = perr(&p, PD_EINVAL, t.pos, "unexpected %s after label set", d);
		}
		goto fail;
	}

	if (has_name) {
		char *nm = pd_arena_strndup(p.lx.arena, s + name.pos, name.len);
		if (!nm) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		for (size_t i = 0; i < nitems; i++) {
			if (strcmp(items[i].name, PD_LABELS_METRIC_NAME) == 0) {
				char qa[300], qb[300];
				pd_labels_quote_msg(qa, sizeof(qa), nm, strlen(nm), 100);
				pd_labels_quote_msg(qb, sizeof(qb), items[i].value,
				                    strlen(items[i].value), 100);
				rc = perr(&p, PD_EINVAL, name.pos,
				          "metric name must not be set twice: %s or %s", qa, qb);
				goto fail;
			}
		}
		if ((rc = pd_labels_builder_add(b, PD_LABELS_METRIC_NAME, nm)) < 0) {
			rc = perr(&p, rc, name.pos, "%s", pd_labels_builder_error(b));
			goto fail;
		}
	}
	for (size_t i = 0; i < nitems; i++) {
		for (size_t k = 0; k < i; k++) {
			if (strcmp(items[k].name, items[i].name) == 0) {
				char qn[300];
				pd_labels_quote_msg(qn, sizeof(qn), items[i].name,
				                    strlen(items[i].name), 64);
				rc = perr(&p, PD_EINVAL, items[i].pos,
				          "label name %s is not unique", qn);
				goto fail;
			}
		}
		rc =
		    pd_labels_check_label(&lim, items[i].name, strlen(items[i].name),
		                          items[i].value, strlen(items[i].value), msg, sizeof(msg));
		if (rc == 0 && (rc = pd_labels_builder_add(b, items[i].name, items[i].value)) < 0)
			snprintf(msg, sizeof(msg), "%s", pd_labels_builder_error(b));
		if (rc < 0) {
			rc = perr(&p, rc, items[i].pos, "%s", msg);
			goto fail;
		}
	}
	rc = pd_labels_builder_finish(b, out, err);
fail:
	free(items);
	pd_labels_builder_destroy(b);
	pd_arena_destroy(p.lx.arena);
	return rc;
}
