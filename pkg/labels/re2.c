/* re2.c: checks a regex against the syntax of Go's regexp (the RE2 syntax Prometheus
 * takes) and writes the pattern RE2 compiles, anchored as Prometheus anchors matchers
 * and rules: ^(?s:RE)$.
 *
 * RE2 (C++) accepts a little more than Go does, and says what it rejects in its own
 * words. This scanner rejects, in Go's words and at the user's byte offset, what Go
 * rejects: escapes RE2 knows and Go does not (\C; any letter escape beyond Go's),
 * backreferences, lookarounds, atomic groups, possessive and nested quantifiers,
 * backtracking verbs, flags other than i m s U, repeat counts over 1000, more than
 * 1000 nested groups; it tracks parentheses itself so that an unbalanced `)` cannot
 * escape the anchoring group. The pattern it writes is the regex itself, but for a
 * literal `{` or `}` and a `[` inside a class (escaped), a named group written
 * (?<name>...) (written (?P<name>...), the only form this RE2 reads) and an empty
 * flag group (?) (left out, as Go ignores it). What it lets through, RE2 checks
 * (Unicode class names, class ranges, POSIX class names), and regex.c words RE2's
 * complaints as Go does. */
#include "labels_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Go's limit on nesting (regexp/syntax's maxHeight), counted here in groups */
#define MAX_DEPTH 1000

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

/* Writes the text of \Q...\E (start..end of re) as literals: ASCII punctuation
 * escaped, everything else as it is, so that RE2's own reading of \Q plays no part. */
static void quote_literal(struct tr *t, size_t start, size_t end)
{
	for (size_t k = start; k < end; k++) {
		unsigned char c = (unsigned char)t->re[k];
		if (c < 0x80 && !is_alnum((char)c) && c != ' ' && c >= 0x21 && c < 0x7f)
			emit(t, "\\", 1, k);
		emit(t, t->re + k, 1, k);
	}
}

/* Handles the escape at re[*i] == '\\', inside a character class or not. */
static int escape(struct tr *t, size_t *ip, int in_class)
{
	const char *re = t->re;
	size_t i = *ip, len = t->len, end = i + 2;

	if (i + 1 >= len)
		return fail(t, i, "trailing backslash at end of expression", i, i);
	char d = re[i + 1];
	if ((unsigned char)d < 0x80 && !is_alnum(d)) {
		/* escaped punctuation is the character itself */
		emit(t, re + i, 2, i);
		*ip = i + 2;
		return 0;
	}
	switch (d) {
	case 'a': /* \a \f \t \n \r \v, and the Perl classes \d \s \w (ASCII in both) */
	case 'f':
	case 't':
	case 'n':
	case 'r':
	case 'v':
	case 'd':
	case 'D':
	case 's':
	case 'S':
	case 'w':
	case 'W':
		break;
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
	case '0':
		/* up to three octal digits */
		end = i + 1;
		for (size_t k = 0; k < 3 && end < len && is_octal(re[end]); k++)
			end++;
		break;
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
			end = k + 1;
			break;
		}
		if (j + 1 < len && is_hex(re[j]) && is_hex(re[j + 1])) {
			end = i + 4;
			break;
		}
		return fail(t, i, "invalid escape sequence", i, j + 2);
	}
	case 'A':
	case 'z':
	case 'b':
	case 'B':
		if (in_class)
			return fail(t, i, "invalid escape sequence", i, i + 2);
		break;
	case 'p':
	case 'P': {
		/* \pN or \p{Name}; RE2 checks the name */
		size_t j = i + 2;
		if (j >= len)
			return fail(t, i, "invalid character class range", i, j);
		if (re[j] == '{') {
			size_t k = j + 1;
			while (k < len && re[k] != '}')
				k++;
			if (k >= len || k == j + 1)
				return fail(t, i, "invalid character class range", i, k);
			end = k + 1;
			break;
		}
		if ((unsigned char)re[j] >= 0x80)
			return fail(t, i, "invalid character class range", i, j + 1);
		end = i + 3;
		break;
	}
	case 'Q': {
		if (in_class)
			return fail(t, i, "invalid escape sequence", i, i + 2);
		size_t j = i + 2, stop = len;
		for (size_t k = j; k + 1 < len; k++) {
			if (re[k] == '\\' && re[k + 1] == 'E') {
				stop = k;
				break;
			}
		}
		quote_literal(t, j, stop);
		*ip = stop < len ? stop + 2 : len;
		return 0;
	}
	default: /* \C, \Z, \K, \h, \R, \g, \e, \8, \9, ...: not Go's */
		return fail(t, i, "invalid escape sequence", i, i + 2);
	}
	emit(t, re + i, end - i, i);
	*ip = end;
	return 0;
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
		/* as Go: the name runs to the first '>', and must be [A-Za-z0-9_]+ */
		size_t n = k + 1, gt = k + 1;
		while (gt < len && re[gt] != '>')
			gt++;
		if (gt >= len)
			return fail(t, i, "invalid named capture", i, len);
		while (n < gt && (is_alnum(re[n]) || re[n] == '_'))
			n++;
		if (n != gt || n == k + 1)
			return fail(t, i, "invalid named capture", i, gt + 1);
		emits(t, "(?P<", i);
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
		size_t at = i;
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
		if (rc == 0 && depth > MAX_DEPTH)
			rc = fail(&t, at, "expression nests too deeply", 0, len);
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
