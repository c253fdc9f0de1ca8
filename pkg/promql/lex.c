/* lex.c: the PromQL lexer: identifiers, numbers, durations, strings with Go's
 * escapes, operators and brackets, as Prometheus's lexer reads them, with the
 * parse error positions its parser prints. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lex.h"

int pd_pq_perr(struct parser *p, size_t pos, const char *fmt, ...)
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

void pd_pq_next(struct parser *p)
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

int pd_pq_tok_is(const struct parser *p, const char *word)
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

int pd_pq_unexpected(struct parser *p, const char *context)
{
	char d[96];
	const struct tok *t = &p->tok;
	if (t->type == T_BAD) {
		if (t->op == 1)
			return pd_pq_perr(p, t->pos, "unterminated quoted string %c", p->s[t->pos]);
		if (t->op == 2)
			return pd_pq_perr(p, t->pos, "bad number or duration syntax: \"%.*s\"",
			                  (int)(t->len > 40 ? 40 : t->len), p->s + t->pos);
		if (t->op == 3)
			return pd_pq_perr(p, t->pos, "not a valid duration string: \"%.*s\"",
			                  (int)(t->len > 40 ? 40 : t->len), p->s + t->pos);
		if (t->op == 4)
			return pd_pq_perr(p, t->pos, "out of memory reading a number");
		return pd_pq_perr(p, t->pos, "unexpected character: '%c'", p->s[t->pos]);
	}
	tok_desc(p, d, sizeof d);
	if (t->type == T_EOF && context)
		return pd_pq_perr(p, t->pos, "unexpected end of input in %s", context);
	if (context)
		return pd_pq_perr(p, t->pos, "unexpected %s in %s", d, context);
	return pd_pq_perr(p, t->pos, "unexpected %s", d);
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
int pd_pq_unquote(struct parser *p, char **out)
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
	return pd_pq_perr(p, p->tok.pos, "invalid syntax in string %.*s", (int)(n > 60 ? 60 : n),
	                  s);
}
