/* regex.c: regexes as Prometheus takes them (Go's syntax, anchored as ^(?s:RE)$),
 * run by RE2 in time linear in the text. re2.c checks Go's syntax and writes RE2's
 * pattern; re2_glue.cc compiles and matches it; this file ties the two together
 * and words what RE2 still rejects as Go would, at the user's byte offset. */
#include "labels_int.h"
#include "re2_glue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pd_labels_regex {
	struct pd_labels_re2 *re;
};

/* Go's regexp/syntax wording for each of RE2's error codes. */
static const char *go_words(int code)
{
	switch (code) {
	case PD_LABELS_RE2_BAD_ESCAPE:
		return "invalid escape sequence";
	case PD_LABELS_RE2_BAD_CHAR_CLASS:
		return "invalid character class";
	case PD_LABELS_RE2_BAD_CHAR_RANGE:
		return "invalid character class range";
	case PD_LABELS_RE2_MISSING_BRACKET:
		return "missing closing ]";
	case PD_LABELS_RE2_MISSING_PAREN:
		return "missing closing )";
	case PD_LABELS_RE2_UNEXPECTED_PAREN:
		return "unexpected )";
	case PD_LABELS_RE2_TRAILING_BACKSLASH:
		return "trailing backslash at end of expression";
	case PD_LABELS_RE2_REPEAT_ARGUMENT:
		return "missing argument to repetition operator";
	case PD_LABELS_RE2_REPEAT_SIZE:
		return "invalid repeat count";
	case PD_LABELS_RE2_REPEAT_OP:
		return "invalid nested repetition operator";
	case PD_LABELS_RE2_BAD_PERL_OP:
		return "invalid or unsupported Perl syntax";
	case PD_LABELS_RE2_BAD_UTF8:
		return "invalid UTF-8";
	case PD_LABELS_RE2_BAD_NAMED_CAPTURE:
		return "invalid named capture";
	case PD_LABELS_RE2_PATTERN_TOO_LARGE:
		return "expression too large";
	}
	return "internal error";
}

/* The offset of the first byte of re that is not valid UTF-8, or len. */
static size_t bad_utf8(const char *re, size_t len)
{
	size_t i = 0;
	while (i < len) {
		uint32_t r;
		size_t w = pd_labels_utf8_decode((const unsigned char *)re + i, len - i, &r);
		if (r == PD_LABELS_RUNE_ERROR && w == 1)
			return i;
		i += w;
	}
	return len;
}

int pd_labels_regex_compile(struct pd_labels_regex **out, const char *re, size_t len,
                            unsigned flags, size_t max_mem, struct pd_err *err)
{
	struct pd_labels_regex *rx = NULL;
	char msg[256], qre[300], arg[128];
	char *pat = NULL;
	size_t *map = NULL, off = 0;
	int rc, code = 0;

	*out = NULL;
	if (max_mem == 0)
		max_mem = PD_LABELS_DEFAULT_REGEX_MAX_MEM;
	pd_labels_quote_msg(qre, sizeof(qre), re, len, 200);
	off = bad_utf8(re, len);
	if (off < len) {
		char frag[64];
		pd_labels_quote_msg(frag, sizeof(frag), re + off, len - off, 16);
		return pd_err_set(err, PD_EINVAL,
		                  "error parsing regexp %s at offset %zu: invalid UTF-8: %s", qre,
		                  off, frag);
	}
	rc = pd_labels_re2_translate(re, len, &pat, &map, msg, sizeof(msg), &off);
	if (rc < 0)
		return pd_err_set(err, rc, "error parsing regexp %s at offset %zu: %s", qre, off,
		                  msg);
	rx = calloc(1, sizeof(*rx));
	if (!rx) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	rc = pd_labels_re2_new(&rx->re, pat, strlen(pat), (flags & PD_LABELS_REGEX_CAPTURE) != 0,
	                       (int64_t)max_mem, &code, arg, sizeof(arg));
	if (rc == PD_LABELS_RE2_NOMEM) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory compiling regexp %s", qre);
		goto out;
	}
	if (rc < 0) {
		/* RE2 names the fragment it stumbled on: find it in the pattern it was given
		 * and map that back to the user's regex */
		const char *at = arg[0] ? strstr(pat, arg) : NULL;
		off = at ? map[at - pat] : 0;
		if (code == PD_LABELS_RE2_PATTERN_TOO_LARGE)
			rc = pd_err_set(err, PD_EINVAL,
			                "error parsing regexp %s at offset %zu: %s (over %zu bytes "
			                "of compiled program)",
			                qre, off, go_words(code), max_mem);
		else
			rc = pd_err_set(err, PD_EINVAL, "error parsing regexp %s at offset %zu: %s: `%s`",
			                qre, off, go_words(code), arg);
		goto out;
	}
	*out = rx;
	rx = NULL;
	rc = 0;
out:
	pd_labels_regex_destroy(rx);
	free(pat);
	free(map);
	return rc;
}

void pd_labels_regex_destroy(struct pd_labels_regex *rx)
{
	if (!rx)
		return;
	pd_labels_re2_free(rx->re);
	free(rx);
}

size_t pd_labels_regex_groups(const struct pd_labels_regex *rx)
{
	return pd_labels_re2_ngroups(rx->re);
}

const char *pd_labels_regex_group_name(const struct pd_labels_regex *rx, size_t i)
{
	return pd_labels_re2_group_name(rx->re, i);
}

int pd_labels_regex_match(const struct pd_labels_regex *rx, const char *s, size_t len,
                          size_t *ov, size_t nov)
{
	int rc = pd_labels_re2_match(rx->re, s, len, ov, nov);
	return rc == PD_LABELS_RE2_NOMEM ? PD_ENOMEM : rc;
}
