/* matcher.c: label matchers (=, !=, =~, !~) with Prometheus's semantics: regexes are
 * fully anchored, and a missing label matches as the empty string. Regexes are
 * checked against RE2's syntax and compiled once with PCRE2 (UTF, JIT when the
 * library has it); the common shapes `literal`, `.*` and `.+` skip PCRE2 entirely. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "labels_int.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PCRE2's match limit (backtracking steps) per match: Go's RE2 is linear-time, PCRE2
 * is not, so a pathological regex gives up instead of stalling a query. */
#define MATCH_LIMIT 1000000u

enum re_kind {
	RE_NONE = 0, /* not a regex matcher */
	RE_PCRE,     /* general case */
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
	pcre2_code *re;
	pcre2_match_context *mctx;
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

/* ---- per-thread match data ------------------------------------------------ */

/* pcre2_match needs a writable match-data block. Matchers are shared between
 * threads, so each thread keeps its own block (one ovector pair is all we need:
 * only whether the regex matched matters). */
static pthread_key_t md_key;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static int md_key_ok;

static void md_free(void *p)
{
	pcre2_match_data_free(p);
}

static void md_init(void)
{
	md_key_ok = pthread_key_create(&md_key, md_free) == 0;
}

/* Returns this thread's match data, or a fresh one that *owned says to free. */
static pcre2_match_data *md_get(int *owned)
{
	pcre2_match_data *md = NULL;
	*owned = 0;
	pthread_once(&md_once, md_init);
	if (md_key_ok) {
		md = pthread_getspecific(md_key);
		if (md)
			return md;
		md = pcre2_match_data_create(1, NULL);
		if (md && pthread_setspecific(md_key, md) == 0)
			return md;
	} else {
		md = pcre2_match_data_create(1, NULL);
	}
	*owned = md != NULL;
	return md;
}

/* Frees the calling thread's match data now (the thread-exit destructor does not
 * run for the main thread, so the process would otherwise end with it allocated). */
__attribute__((destructor)) static void md_release_main(void)
{
	if (md_key_ok) {
		pcre2_match_data *md = pthread_getspecific(md_key);
		if (md) {
			pthread_setspecific(md_key, NULL);
			pcre2_match_data_free(md);
		}
	}
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
	char msg[256], qre[300];
	char *pat = NULL;
	size_t *map = NULL, off = 0;
	int rc, errcode;
	PCRE2_SIZE erroff;

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
	pd_labels_quote_msg(qre, sizeof(qre), m->value, m->value_len, 200);
	rc = pd_labels_re2_translate(m->value, m->value_len, &pat, &map, msg, sizeof(msg), &off);
	if (rc < 0)
		return pd_err_set(err, rc, "error parsing regexp %s at offset %zu: %s", qre, off,
		                  msg);
	m->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
	                      /* not PCRE2_MATCH_INVALID_UTF: PCRE2 10.42's JIT then gets \W and
	                       * \D wrong on non-ASCII subjects; values are valid UTF-8 anyway,
	                       * and one that is not simply fails to match */
	                      /* $ is the end of the text (not before a final newline) and a
	                       * multiline ^ also matches after a final newline, as in Go */
	                      PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_CIRCUMFLEX |
	                          PCRE2_NEVER_BACKSLASH_C | PCRE2_ANCHORED,
	                      &errcode, &erroff, NULL);
	if (!m->re) {
		PCRE2_UCHAR pmsg[200];
		size_t patlen = strlen(pat);
		pcre2_get_error_message(errcode, pmsg, sizeof(pmsg));
		off = map[erroff < patlen ? erroff : patlen];
		rc = pd_err_set(err, PD_EINVAL, "error parsing regexp %s at offset %zu: %s", qre,
		                off, (const char *)pmsg);
		goto out;
	}
	/* JIT is an optimisation: without it (or when it fails) pcre2_match interprets */
	(void)pcre2_jit_compile(m->re, PCRE2_JIT_COMPLETE);
	m->mctx = pcre2_match_context_create(NULL);
	if (!m->mctx) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory compiling a regex");
		goto out;
	}
	pcre2_set_match_limit(m->mctx, MATCH_LIMIT);
	m->kind = RE_PCRE;
	rc = 0;
out:
	free(pat);
	free(map);
	return rc;
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
	case RE_PCRE:
		break;
	case RE_NONE:
		return 0;
	}
	int owned, rc;
	pcre2_match_data *md = md_get(&owned);
	if (!md)
		return 0;
	size_t len = strlen(v);
	rc = pcre2_match(m->re, (PCRE2_SPTR)v, len, 0, 0, md, m->mctx);
	/* the JIT's stack is small; the interpreter keeps its backtracking on the heap */
	if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
		rc = pcre2_match(m->re, (PCRE2_SPTR)v, len, 0, PCRE2_NO_JIT, md, m->mctx);
	if (owned)
		pcre2_match_data_free(md);
	return rc >= 0;
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
	pcre2_code_free(m->re);
	pcre2_match_context_free(m->mctx);
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
