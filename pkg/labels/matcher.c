/* matcher.c: label matchers (=, !=, =~, !~) with Prometheus's semantics: regexes are
 * fully anchored, and a missing label matches as the empty string. Regexes are
 * compiled once with RE2 (regex.c), without capture groups, so that a match is one
 * pass of RE2's DFA; the common shapes `literal`, `.*` and `.+` skip RE2 entirely. */
#include "labels_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum re_kind {
	RE_NONE = 0, /* not a regex matcher */
	RE_RE2,      /* general case */
	RE_LITERAL,  /* no metacharacters: plain string equality */
	RE_ANY,      /* .* */
	RE_NONEMPTY, /* .+ */
};

struct pd_labels_matcher {
	enum pd_labels_match_type type;
	enum re_kind kind;
	char *name;
	char *value;
	size_t value_len;
	struct pd_labels_regex *re;
	int matches_empty;
};

const char *pd_labels_match_type_string(enum pd_labels_match_type t)
{
	switch (t) {
	case PD_LABELS_MATCH_EQUAL:
		return "=";
	case PD_LABELS_MATCH_NOT_EQUAL:
		return "!=";
	case PD_LABELS_MATCH_REGEXP:
		return "=~";
	case PD_LABELS_MATCH_NOT_REGEXP:
		return "!~";
	}
	return "?";
}

/* ---- regexes -------------------------------------------------------------- */

static int is_literal(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
			continue;
		if (c >= 0x80)
			continue;
		if (strchr("_- :/,@=%&~<>;!\"'`#", c))
			continue;
		return 0;
	}
	return pd_labels_utf8_valid(s, n);
}

static int re_compile(struct pd_labels_matcher *m, struct pd_err *err)
{
	if (strcmp(m->value, ".*") == 0) {
		m->kind = RE_ANY;
		return 0;
	}
	if (strcmp(m->value, ".+") == 0) {
		m->kind = RE_NONEMPTY;
		return 0;
	}
	if (is_literal(m->value, m->value_len)) {
		m->kind = RE_LITERAL;
		return 0;
	}
	int rc = pd_labels_regex_compile(&m->re, m->value, m->value_len, 0, 0, err);
	if (rc < 0)
		return rc;
	m->kind = RE_RE2;
	return 0;
}

static int re_match(const struct pd_labels_matcher *m, const char *v)
{
	switch (m->kind) {
	case RE_ANY:
		return 1;
	case RE_NONEMPTY:
		return v[0] != '\0';
	case RE_LITERAL:
		return strcmp(m->value, v) == 0;
	case RE_RE2:
		/* out of memory (RE2 falls back from its DFA to its NFA long before) counts
		 * as no match */
		return pd_labels_regex_match(m->re, v, strlen(v), NULL, 0) == 1;
	case RE_NONE:
		return 0;
	}
	return 0;
}

/* ---- matchers ------------------------------------------------------------- */

int pd_labels_matcher_create(struct pd_labels_matcher **out, enum pd_labels_match_type type,
                             const char *name, const char *value, struct pd_err *err)
{
	struct pd_labels_matcher *m;
	int rc;

	*out = NULL;
	if (type < PD_LABELS_MATCH_EQUAL || type > PD_LABELS_MATCH_NOT_REGEXP)
		return pd_err_set(err, PD_EINVAL, "invalid match type %d", (int)type);
	if (!pd_labels_valid_name(name)) {
		char qn[300];
		pd_labels_quote_msg(qn, sizeof(qn), name, strlen(name), 64);
		return pd_err_set(err, PD_EINVAL,
		                  "invalid label name %s: must match [a-zA-Z_][a-zA-Z0-9_]*", qn);
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	m->type = type;
	m->name = strdup(name);
	m->value = strdup(value);
	if (!m->name || !m->value) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	m->value_len = strlen(value);
	if (type == PD_LABELS_MATCH_REGEXP || type == PD_LABELS_MATCH_NOT_REGEXP) {
		if ((rc = re_compile(m, err)) < 0)
			goto fail;
	}
	m->matches_empty = pd_labels_matcher_matches(m, NULL);
	*out = m;
	return 0;
fail:
	pd_labels_matcher_destroy(m);
	return rc;
}

void pd_labels_matcher_destroy(struct pd_labels_matcher *m)
{
	if (!m)
		return;
	pd_labels_regex_destroy(m->re);
	free(m->name);
	free(m->value);
	free(m);
}

enum pd_labels_match_type pd_labels_matcher_type(const struct pd_labels_matcher *m)
{
	return m->type;
}

const char *pd_labels_matcher_name(const struct pd_labels_matcher *m)
{
	return m->name;
}

const char *pd_labels_matcher_value(const struct pd_labels_matcher *m)
{
	return m->value;
}

int pd_labels_matcher_matches(const struct pd_labels_matcher *m, const char *value)
{
	const char *v = value ? value : "";
	switch (m->type) {
	case PD_LABELS_MATCH_EQUAL:
		return strcmp(m->value, v) == 0;
	case PD_LABELS_MATCH_NOT_EQUAL:
		return strcmp(m->value, v) != 0;
	case PD_LABELS_MATCH_REGEXP:
		return re_match(m, v);
	case PD_LABELS_MATCH_NOT_REGEXP:
		return !re_match(m, v);
	}
	return 0;
}

int pd_labels_matcher_matches_empty(const struct pd_labels_matcher *m)
{
	return m->matches_empty;
}

int pd_labels_matches(const struct pd_labels *ls, struct pd_labels_matcher *const *ms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!pd_labels_matcher_matches(ms[i], pd_labels_get(ls, ms[i]->name)))
			return 0;
	return 1;
}

int pd_labels_matcher_format(const struct pd_labels_matcher *m, struct pd_buf *b)
{
	const char *op = pd_labels_match_type_string(m->type);
	int rc;
	if ((rc = pd_buf_append(b, m->name, strlen(m->name))) < 0 ||
	    (rc = pd_buf_append(b, op, strlen(op))) < 0)
		return rc;
	return pd_labels_quote(b, m->value, m->value_len);
}
