/* re2.c: checks a regex against RE2's syntax, which Prometheus (Go's regexp) uses,
 * and rewrites it into a PCRE2 pattern of the same meaning, anchored as Prometheus
 * anchors matchers: ^(?s:RE)$.
 *
 * PCRE2 understands almost all of RE2, but not always alike. This scanner rejects
 * what Go's regexp rejects where PCRE2 would accept it with a meaning of its own
 * (backreferences, lookarounds, atomic groups, recursion, possessive and nested
 * quantifiers, backtracking verbs, flags other than i m s U, escapes such as \Z \K
 * \h \R \g), tracks parentheses itself so that an unbalanced `)` cannot escape the
 * anchoring group, and rewrites the few escapes whose meaning differs: \v (RE2: the
 * vertical tab; PCRE2: any vertical space), \s and \S (RE2: [\t\n\f\r ]; PCRE2 also
 * counts \v), and octal escapes (PCRE2 may read \12 as a backreference). Messages use
 * Go's wording, e.g. "invalid escape sequence: `\1`". */
#include "labels_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "^(?s:"
#define SUFFIX ")$"

struct tr {
	const char *re;
	size_t len;
	struct pd_buf out;
	struct pd_buf map; /* size_t per byte of out */
	int oom;
	char *msg;
	size_t cap;
	size_t *err_off;
};

static void emit(struct tr *t, const char *s, size_t n, size_t orig)
{
	if (pd_buf_append(&t->out, s, n) < 0)
		t->oom = 1;
	for (size_t i = 0; i < n; i++)
		if (pd_buf_append(&t->map, &orig, sizeof(orig)) < 0)
			t->oom = 1;
}

static void emits(struct tr *t, const char *s, size_t orig)
{
	emit(t, s, strlen(s), orig);
}

/* Reports Go's "what: `fragment`", with an explanation appended when hint is set. */
static int fail_hint(struct tr *t, size_t off, const char *what, size_t frag_start, size_t frag_end,
                     const char *hint)
{
	if (frag_end > t->len)
		frag_end = t->len;
	snprintf(t->msg, t->cap, "%s: `%.*s`%s%s%s", what, (int)(frag_end - frag_start),
	         t->re + frag_start, hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
	*t->err_off = off;
	return PD_EINVAL;
}

static int fail(struct tr *t, size_t off, const char *what, size_t frag_start, size_t frag_end)
{
	return fail_hint(t, off, what, frag_start, frag_end, NULL);
}

/* Inside a class, Go takes a '-' right after a class escape (\d, \pL, [:alpha:]) as
 * a literal; PCRE2 would call it a bad range, so it is escaped. */
static void class_dash(struct tr *t, size_t *ip)
{
	size_t i = *ip;
	if (i + 1 < t->len && t->re[i] == '-' && t->re[i + 1] != ']') {
		emit(t, "\\-", 2, i);
		*ip = i + 1;
	}
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_octal(char c)
{
	return c >= '0' && c <= '7';
}

static int is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Handles the escape at re[*i] == '\\', inside a character class or not. */
static int escape(struct tr *t, size_t *ip, int in_class)
{
	const char *re = t->re;
	size_t i = *ip, len = t->len;
	char buf[32];

	if (i + 1 >= len)
		return fail(t, i, "trailing backslash at end of expression", i, i);
	char d = re[i + 1];
	if ((unsigned char)d < 0x80 && !is_alnum(d)) {
		/* escaped punctuation is the character itself, in both */
		emit(t, re + i, 2, i);
		*ip = i + 2;
		return 0;
	}
	switch (d) {
	case 'a':
	case 'f':
	case 't':
	case 'n':
	case 'r':
		emit(t, re + i, 2, i);
		*ip = i + 2;
		return 0;
	case 'v':
		emits(t, "\\x0b", i);
		*ip = i + 2;
		return 0;
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
		/* a lone non-zero digit would be a backreference: RE2 has none */
		if (i + 2 >= len || !is_octal(re[i + 2]))
			return fail_hint(t, i, "invalid escape sequence", i, i + 2,
			                 "backreferences are not supported");
		/* fall through */
	case '0': {
		unsigned v = 0;
		size_t j = i + 1, k = 0;
		while (k < 3 && j < len && is_octal(re[j])) {
			v = v * 8 + (unsigned)(re[j] - '0');
			j++;
			k++;
		}
		snprintf(buf, sizeof(buf), "\\x{%x}", v);
		emits(t, buf, i);
		*ip = j;
		return 0;
	}
	case 'x': {
		size_t j = i + 2;
		if (j < len && re[j] == '{') {
			size_t k = j + 1;
			unsigned long v = 0;
			while (k < len && is_hex(re[k]) && v <= 0x10FFFF) {
				v = v * 16 + (unsigned long)(is_digit(re[k])
				                                 ? re[k] - '0'
				                                 : (re[k] | 0x20) - 'a' + 10);
				k++;
			}
			if (k == j + 1 || k >= len || re[k] != '}' || v > 0x10FFFF)
				return fail(t, i, "invalid escape sequence", i, k + 1);
			emit(t, re + i, k + 1 - i, i);
			*ip = k + 1;
			return 0;
		}
		if (j + 1 < len && is_hex(re[j]) && is_hex(re[j + 1])) {
			emit(t, re + i, 4, i);
			*ip = i + 4;
			return 0;
		}
		return fail(t, i, "invalid escape sequence", i, j + 2);
	}
	case 'A':
	case 'z':
	case 'b':
	case 'B':
		if (in_class)
			return fail(t, i, "invalid escape sequence", i, i + 2);
		emit(t, re + i, 2, i);
		*ip = i + 2;
		return 0;
	case 'd':
	case 'D':
	case 'w':
	case 'W':
		/* ASCII-only in both, since PCRE2 runs without PCRE2_UCP */
		emit(t, re + i, 2, i);
		*ip = i + 2;
		if (in_class)
			class_dash(t, ip);
		return 0;
	case 's':
		emits(t, in_class ? "\\t\\n\\f\\r " : "[\\t\\n\\f\\r ]", i);
		*ip = i + 2;
		if (in_class)
			class_dash(t, ip);
		return 0;
	case 'S':
		emits(t,
		      in_class ? "\\x00-\\x08\\x0b\\x0e-\\x1f\\x21-\\x{10ffff}"
		               : "[^\\t\\n\\f\\r ]",
		      i);
		*ip = i + 2;
		if (in_class)
			class_dash(t, ip);
		return 0;
	case 'p':
	case 'P': {
		size_t j = i + 2;
		if (j >= len)
			return fail(t, i, "invalid character class range", i, j);
		if (re[j] == '{') {
			size_t k = j + 1;
			while (k < len && re[k] != '}')
				k++;
			if (k >= len || k == j + 1)
				return fail(t, i, "invalid character class range", i, k);
			emit(t, re + i, k + 1 - i, i);
			*ip = k + 1;
			if (in_class)
				class_dash(t, ip);
			return 0;
		}
		if ((unsigned char)re[j] >= 0x80)
			return fail(t, i, "invalid character class range", i, j + 1);
		emit(t, re + i, 3, i);
		*ip = i + 3;
		if (in_class)
			class_dash(t, ip);
		return 0;
	}
	case 'Q': {
		if (in_class)
			return fail(t, i, "invalid escape sequence", i, i + 2);
		size_t j = i + 2, end;
		const char *e = NULL;
		for (size_t k = j; k + 1 < len; k++) {
			if (re[k] == '\\' && re[k + 1] == 'E') {
				e = re + k;
				break;
			}
		}
		end = e ? (size_t)(e - re) : len;
		emits(t, "\\Q", i);
		emit(t, re + j, end - j, j);
		emits(t, "\\E", end);
		*ip = e ? end + 2 : len;
		return 0;
	}
	default:
		return fail(t, i, "invalid escape sequence", i, i + 2);
	}
}

/* Parses {n}, {n,} or {n,m} at re[i] == '{'. Returns the index after '}' and sets
 * *min, *max (max -1 for none), or 0 when it is not a repetition (a literal '{'). */
static size_t parse_repeat(const char *re, size_t len, size_t i, long *min, long *max)
{
	size_t j = i + 1;
	long a = 0, b;
	if (j >= len || !is_digit(re[j]))
		return 0;
	while (j < len && is_digit(re[j])) {
		if (a < 100000)
			a = a * 10 + (re[j] - '0');
		j++;
	}
	if (j >= len)
		return 0;
	if (re[j] == '}') {
		*min = *max = a;
		return j + 1;
	}
	if (re[j] != ',')
		return 0;
	j++;
	if (j < len && re[j] == '}') {
		*min = a;
		*max = -1;
		return j + 1;
	}
	if (j >= len || !is_digit(re[j]))
		return 0;
	b = 0;
	while (j < len && is_digit(re[j])) {
		if (b < 100000)
			b = b * 10 + (re[j] - '0');
		j++;
	}
	if (j >= len || re[j] != '}')
		return 0;
	*min = a;
	*max = b;
	return j + 1;
}

/* Handles "(?" at re[i]. */
static int perl_group(struct tr *t, size_t *ip, int *depth)
{
	const char *re = t->re;
	size_t i = *ip, len = t->len, j = i + 2;
	static const char unsupported[] = "invalid or unsupported Perl syntax";

	if (j >= len)
		return fail(t, i, "missing argument to repetition operator", i + 1, i + 2);
	if (re[j] == ':') {
		emit(t, re + i, 3, i);
		(*depth)++;
		*ip = j + 1;
		return 0;
	}
	if (re[j] == 'P' || re[j] == '<') {
		size_t k = re[j] == 'P' ? j + 1 : j;
		if (k >= len || re[k] != '<')
			return fail_hint(t, i, unsupported, i, k + 1,
			                 "backreferences and recursion are not supported");
		if (k + 1 < len && (re[k + 1] == '=' || re[k + 1] == '!'))
			return fail_hint(t, i, unsupported, i, k + 2,
			                 "lookbehinds are not supported");
		size_t n = k + 1;
		while (n < len && (is_alnum(re[n]) || re[n] == '_'))
			n++;
		if (n >= len || re[n] != '>' || n == k + 1)
			return fail(t, i, "invalid named capture", i, n + 1);
		emits(t, "(?<", i);
		emit(t, re + k + 1, n - k - 1, k + 1);
		emits(t, ">", n);
		(*depth)++;
		*ip = n + 1;
		return 0;
	}
	/* flags: (?flags) or (?flags:re), flags from imsU, one optional '-' */
	{
		size_t k = j;
		int seen_minus = 0, flags_after_minus = 0, nflags = 0;
		for (; k < len; k++) {
			char c = re[k];
			if (c == 'i' || c == 'm' || c == 's' || c == 'U') {
				nflags++;
				if (seen_minus)
					flags_after_minus++;
				continue;
			}
			if (c == '-' && !seen_minus) {
				seen_minus = 1;
				continue;
			}
			break;
		}
		if (k >= len)
			return fail(t, i, "missing closing )", i, len);
		if (k == j && re[k] == ')') { /* (?): Go takes it as no flags at all */
			*ip = k + 1;
			return 0;
		}
		if ((re[k] != ':' && re[k] != ')') || nflags == 0 ||
		    (seen_minus && !flags_after_minus)) {
			const char *hint = NULL;
			if (k == j && (re[k] == '=' || re[k] == '!'))
				hint = "lookaheads are not supported";
			else if (k == j && re[k] == '>')
				hint = "atomic groups are not supported";
			else if (re[k] >= 'a' && re[k] <= 'z')
				hint = "only the flags i, m, s and U are supported";
			return fail_hint(t, i, unsupported, i, k + 1, hint);
		}
		emit(t, re + i, k + 1 - i, i);
		if (re[k] == ':')
			(*depth)++;
		*ip = k + 1;
		return 0;
	}
}

int pd_labels_re2_translate(const char *re, size_t len, char **out, size_t **map, char *msg,
                            size_t cap, size_t *err_off)
{
	struct tr t = {.re = re, .len = len, .msg = msg, .cap = cap, .err_off = err_off};
	size_t i = 0;
	int depth = 0, rc = 0;
	int after_repeat = 0; /* the last item was a repetition: another one is nested */
	size_t last_repeat = 0;

	*out = NULL;
	*map = NULL;
	pd_buf_init(&t.out, 0);
	pd_buf_init(&t.map, 0);
	emits(&t, PREFIX, 0);
	while (i < len && rc == 0) {
		char c = re[i];
		int repeat = 0;
		switch (c) {
		case '\\':
			rc = escape(&t, &i, 0);
			break;
		case '(':
			if (i + 1 < len && re[i + 1] == '?') {
				rc = perl_group(&t, &i, &depth);
			} else if (i + 1 < len && re[i + 1] == '*') {
				rc =
				    fail_hint(&t, i + 1, "missing argument to repetition operator",
				              i + 1, i + 2, "backtracking verbs are not supported");
			} else {
				emit(&t, "(", 1, i);
				depth++;
				i++;
			}
			break;
		case ')':
			if (depth == 0) {
				rc = fail(&t, i, "unexpected )", 0, len);
				break;
			}
			depth--;
			emit(&t, ")", 1, i);
			i++;
			break;
		case '[': {
			size_t start = i;
			emit(&t, "[", 1, i);
			i++;
			if (i < len && re[i] == '^')
				emit(&t, "^", 1, i++);
			if (i < len && re[i] == ']')
				emit(&t, "\\]", 2, i++);
			for (;;) {
				if (i >= len) {
					rc = fail(&t, start, "missing closing ]", start, len);
					break;
				}
				if (re[i] == ']') {
					emit(&t, "]", 1, i++);
					break;
				}
				if (re[i] == '[' && i + 1 < len && re[i + 1] == ':') {
					size_t k = i + 2;
					while (k < len &&
					       (re[k] == '^' || (re[k] >= 'a' && re[k] <= 'z')))
						k++;
					if (k + 1 < len && re[k] == ':' && re[k + 1] == ']') {
						emit(&t, re + i, k + 2 - i, i);
						i = k + 2;
						class_dash(&t, &i);
						continue;
					}
					emit(&t, "\\[", 2, i++);
					continue;
				}
				if (re[i] == '\\') {
					rc = escape(&t, &i, 1);
					if (rc)
						break;
					continue;
				}
				if (re[i] == '[') {
					emit(&t, "\\[", 2, i++);
					continue;
				}
				emit(&t, re + i, 1, i);
				i++;
			}
			break;
		}
		case '*':
		case '+':
		case '?':
		case '{': {
			size_t end = i + 1;
			if (c == '{') {
				long mn, mx;
				end = parse_repeat(re, len, i, &mn, &mx);
				if (end == 0) { /* not a repetition: a literal brace */
					emit(&t, "\\{", 2, i);
					i++;
					break;
				}
				if (mn > 1000 || mx > 1000 || (mx >= 0 && mx < mn)) {
					rc = fail(&t, i, "invalid repeat count", i, end);
					break;
				}
			}
			if (after_repeat) {
				rc = fail_hint(
				    &t, i, "invalid nested repetition operator", last_repeat, end,
				    c == '+' ? "possessive quantifiers are not supported" : NULL);
				break;
			}
			emit(&t, re + i, end - i, i);
			if (end < len && re[end] == '?') /* non-greedy */
				emit(&t, "?", 1, end++);
			last_repeat = i;
			i = end;
			repeat = 1;
			break;
		}
		case '}':
			emit(&t, "\\}", 2, i);
			i++;
			break;
		default:
			emit(&t, re + i, 1, i);
			i++;
			break;
		}
		after_repeat = repeat;
	}
	if (rc == 0 && depth > 0)
		rc = fail(&t, len, "missing closing )", 0, len);
	if (rc == 0) {
		emits(&t, SUFFIX, len);
		emit(&t, "", 1, len); /* NUL */
		if (t.oom)
			rc = PD_ENOMEM;
	}
	if (rc == 0) {
		size_t n;
		*out = (char *)pd_buf_steal(&t.out, &n);
		*map = (size_t *)pd_buf_steal(&t.map, &n);
	}
	if (rc == PD_ENOMEM)
		snprintf(msg, cap, "out of memory");
	pd_buf_fini(&t.out);
	pd_buf_fini(&t.map);
	return rc;
}
