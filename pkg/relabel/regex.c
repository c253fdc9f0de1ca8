/* regex.c: a rule's regex with capture groups, and Go's regexp.Expand.
 *
 * Prometheus compiles a rule's regex as ^(?s:RE)$ with Go's regexp (RE2 syntax) and
 * expands target_label and replacement with Regexp.ExpandString. profd checks the
 * regex against RE2's syntax and translates it with the labels package's
 * translator (the one label matchers use, so a regex means the same in a selector
 * and in a rule), compiles it with PCRE2 once per rule, and reimplements Expand. The
 * default regex (.*) skips PCRE2: it matches anything, group 1 being the input. */
#include "relabel_int.h"

#include <stdlib.h>
#include <string.h>

#include "../labels/labels_int.h"

/* PCRE2's backtracking limit per match, as for label matchers: RE2 is linear-time,
 * PCRE2 is not, so a pathological regex gives up ("no match") instead of stalling. */
#define MATCH_LIMIT 1000000u

static int read_names(struct pd_relabel_regex *rx, struct pd_err *err)
{
	uint32_t count = 0, size = 0;
	PCRE2_SPTR table = NULL;

	rx->names = calloc((size_t)rx->ncap + 1, sizeof(char *));
	if (!rx->names)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (!rx->re)
		return 0;
	pcre2_pattern_info(rx->re, PCRE2_INFO_NAMECOUNT, &count);
	if (count == 0)
		return 0;
	pcre2_pattern_info(rx->re, PCRE2_INFO_NAMEENTRYSIZE, &size);
	pcre2_pattern_info(rx->re, PCRE2_INFO_NAMETABLE, &table);
	for (uint32_t i = 0; i < count; i++) {
		/* an entry: the group number (2 bytes, big-endian), then the name */
		const unsigned char *e = (const unsigned char *)table + (size_t)i * size;
		uint32_t g = (uint32_t)e[0] << 8 | e[1];
		if (g > rx->ncap || rx->names[g])
			continue;
		rx->names[g] = strdup((const char *)e + 2);
		if (!rx->names[g])
			return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	return 0;
}

int pd_relabel_regex_compile(struct pd_relabel_regex *rx, const char *src, int is_default,
                             struct pd_err *err)
{
	char msg[256], qre[300];
	char *pat = NULL;
	size_t *map = NULL, off = 0, len = strlen(src);
	int rc, errcode;
	PCRE2_SIZE erroff;

	memset(rx, 0, sizeof(*rx));
	rx->src = strdup(src);
	if (!rx->src)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (is_default || strcmp(src, "(.*)") == 0) {
		rx->any = 1;
		rx->ncap = 1;
		return read_names(rx, err);
	}
	pd_labels_quote_msg(qre, sizeof(qre), src, len, 200);
	rc = pd_labels_re2_translate(src, len, &pat, &map, msg, sizeof(msg), &off);
	if (rc < 0)
		return pd_err_set(err, rc, "error parsing regexp %s at offset %zu: %s", qre, off,
		                  msg);
	/* the flags label matchers use (Go's $ is the end of the text, and a multiline
	 * ^ also matches after a final newline), plus DUPNAMES: Go lets two groups share
	 * a name, and $name then takes the first of them that took part in the match */
	rx->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
	                       PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_CIRCUMFLEX |
	                           PCRE2_NEVER_BACKSLASH_C | PCRE2_ANCHORED | PCRE2_DUPNAMES,
	                       &errcode, &erroff, NULL);
	if (!rx->re) {
		PCRE2_UCHAR pmsg[200];
		size_t patlen = strlen(pat);
		pcre2_get_error_message(errcode, pmsg, sizeof(pmsg));
		off = map[erroff < patlen ? erroff : patlen];
		rc = pd_err_set(err, PD_EINVAL, "error parsing regexp %s at offset %zu: %s", qre,
		                off, (const char *)pmsg);
		goto out;
	}
	/* JIT is an optimisation: without it pcre2_match interprets */
	(void)pcre2_jit_compile(rx->re, PCRE2_JIT_COMPLETE);
	rx->mctx = pcre2_match_context_create(NULL);
	if (!rx->mctx) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory compiling a regex");
		goto out;
	}
	pcre2_set_match_limit(rx->mctx, MATCH_LIMIT);
	pcre2_pattern_info(rx->re, PCRE2_INFO_CAPTURECOUNT, &rx->ncap);
	rc = read_names(rx, err);
out:
	free(pat);
	free(map);
	return rc;
}

void pd_relabel_regex_fini(struct pd_relabel_regex *rx)
{
	if (rx->names)
		for (uint32_t i = 0; i <= rx->ncap; i++)
			free(rx->names[i]);
	free(rx->names);
	pcre2_code_free(rx->re);
	pcre2_match_context_free(rx->mctx);
	free(rx->src);
	memset(rx, 0, sizeof(*rx));
}

int pd_relabel_regex_match(const struct pd_relabel_regex *rx, const char *s, size_t len,
                           pcre2_match_data *md, size_t *ov)
{
	int rc;

	if (rx->any) {
		if (ov) {
			ov[0] = ov[2] = 0;
			ov[1] = ov[3] = len;
		}
		return 1;
	}
	if (!md)
		return 0;
	rc = pcre2_match(rx->re, (PCRE2_SPTR)s, len, 0, 0, md, rx->mctx);
	/* the JIT's stack is small; the interpreter keeps its backtracking on the heap */
	if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
		rc = pcre2_match(rx->re, (PCRE2_SPTR)s, len, 0, PCRE2_NO_JIT, md, rx->mctx);
	if (rc <= 0) /* no match, a limit, invalid UTF-8, or (0) an ovector too small */
		return 0;
	if (ov) {
		const PCRE2_SIZE *v = pcre2_get_ovector_pointer(md);
		for (uint32_t i = 0; i <= rx->ncap; i++) {
			int set = i < (uint32_t)rc && v[2 * i] != PCRE2_UNSET;
			ov[2 * i] = set ? v[2 * i] : PD_RELABEL_UNSET;
			ov[2 * i + 1] = set ? v[2 * i + 1] : PD_RELABEL_UNSET;
		}
	}
	return 1;
}

/* ---- regexp.Expand --------------------------------------------------------- */

/* Go's regexp.extract: reads a name or {name} at s (the '$' already consumed).
 * Returns 1 and sets the name (*name, *nlen), its number (*num, or -1 when it is
 * not a number) and the length consumed (*used); 0 when s starts no reference. */
static int extract(const char *s, size_t len, const char **name, size_t *nlen, long *num,
                   size_t *used)
{
	size_t i = 0, start = 0;
	int brace = 0;

	if (len == 0)
		return 0;
	if (s[0] == '{') {
		brace = 1;
		start = 1;
	}
	i = start;
	while (i < len) {
		uint32_t r;
		size_t w = pd_labels_utf8_decode((const unsigned char *)s + i, len - i, &r);
		if (!pd_relabel_is_letter(r) && !pd_relabel_is_digit(r) && r != '_')
			break;
		i += w;
	}
	if (i == start)
		return 0; /* an empty name */
	*name = s + start;
	*nlen = i - start;
	if (brace) {
		if (i >= len || s[i] != '}')
			return 0; /* no closing brace */
		i++;
	}
	/* a number below 1e8 (before its last digit), without leading zeros */
	long n = 0;
	for (size_t k = 0; k < *nlen; k++) {
		char c = (*name)[k];
		if (c < '0' || c > '9' || n >= 100000000L) {
			n = -1;
			break;
		}
		n = n * 10 + (c - '0');
	}
	if ((*name)[0] == '0' && *nlen > 1)
		n = -1;
	*num = n;
	*used = i;
	return 1;
}

static int append_group(struct pd_buf *out, const char *src, const size_t *ov, size_t g)
{
	if (ov[2 * g] == PD_RELABEL_UNSET)
		return 0;
	return pd_buf_append(out, src + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
}

int pd_relabel_expand(struct pd_buf *out, const char *tmpl, const struct pd_relabel_regex *rx,
                      const char *src, const size_t *ov)
{
	size_t len = strlen(tmpl), i = 0;
	int rc;

	while (i < len) {
		const char *d = memchr(tmpl + i, '$', len - i);
		if (!d)
			break;
		size_t at = (size_t)(d - tmpl);
		if ((rc = pd_buf_append(out, tmpl + i, at - i)) < 0)
			return rc;
		i = at + 1;
		if (i < len && tmpl[i] == '$') { /* $$ is a literal $ */
			if ((rc = pd_buf_append(out, "$", 1)) < 0)
				return rc;
			i++;
			continue;
		}
		const char *name;
		size_t nlen, used;
		long num;
		if (!extract(tmpl + i, len - i, &name, &nlen, &num, &used)) {
			/* malformed: the $ is kept as text */
			if ((rc = pd_buf_append(out, "$", 1)) < 0)
				return rc;
			continue;
		}
		i += used;
		if (num >= 0) {
			if ((unsigned long)num <= rx->ncap &&
			    (rc = append_group(out, src, ov, (size_t)num)) < 0)
				return rc;
			continue;
		}
		/* the first group of that name that took part in the match */
		for (uint32_t g = 0; g <= rx->ncap; g++) {
			const char *gn = rx->names[g];
			if (gn && strlen(gn) == nlen && memcmp(gn, name, nlen) == 0 &&
			    ov[2 * g] != PD_RELABEL_UNSET) {
				if ((rc = append_group(out, src, ov, g)) < 0)
					return rc;
				break;
			}
		}
	}
	return pd_buf_append(out, tmpl + i, len - i);
}
