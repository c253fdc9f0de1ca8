/* regex.c: a rule's regex with capture groups, and Go's regexp.Expand.
 *
 * Prometheus compiles a rule's regex as ^(?s:RE)$ with Go's regexp (RE2 syntax) and
 * expands target_label and replacement with Regexp.ExpandString. profd compiles it
 * with the labels package's regexes (pd_labels_regex: Go's syntax and messages, run
 * by RE2 in linear time, the same code label matchers use, so a regex means the same
 * in a selector and in a rule) once per rule, with capture groups, and reimplements
 * Expand. The default regex (.*) skips RE2: it matches anything, group 1 being the
 * input. */
#include "relabel_int.h"

#include <stdlib.h>
#include <string.h>

#include "../labels/labels_int.h"

int pd_relabel_regex_compile(struct pd_relabel_regex *rx, const char *src, int is_default,
                             struct pd_err *err)
{
	int rc;

	memset(rx, 0, sizeof(*rx));
	rx->src = strdup(src);
	if (!rx->src)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (is_default || strcmp(src, "(.*)") == 0) {
		rx->any = 1;
		rx->ncap = 1;
		return 0;
	}
	rc = pd_labels_regex_compile(&rx->re, src, strlen(src), PD_LABELS_REGEX_CAPTURE, 0, err);
	if (rc < 0)
		return rc;
	rx->ncap = (uint32_t)pd_labels_regex_groups(rx->re);
	return 0;
}

void pd_relabel_regex_fini(struct pd_relabel_regex *rx)
{
	pd_labels_regex_destroy(rx->re);
	free(rx->src);
	memset(rx, 0, sizeof(*rx));
}

int pd_relabel_regex_match(const struct pd_relabel_regex *rx, const char *s, size_t len,
                           size_t *ov)
{
	if (rx->any) {
		if (ov) {
			ov[0] = ov[2] = 0;
			ov[1] = ov[3] = len;
		}
		return 1;
	}
	/* PD_LABELS_REGEX_UNSET is PD_RELABEL_UNSET: both SIZE_MAX */
	return pd_labels_regex_match(rx->re, s, len, ov, ov ? (size_t)rx->ncap + 1 : 0) == 1;
}

static const char *group_name(const struct pd_relabel_regex *rx, uint32_t g)
{
	return rx->re ? pd_labels_regex_group_name(rx->re, g) : NULL;
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
			const char *gn = group_name(rx, g);
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
