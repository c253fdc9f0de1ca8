/* fuzz_selector.c: libFuzzer target for the labels package's parsers of outside
 * text: PromQL series selectors (the `query` of every API request), label sets
 * (`profd tsdb import --labels`, scrape configs) and regex matchers. Any input may
 * be rejected; what is accepted must round-trip: a selector formats to text that
 * parses again and formats identically, to matchers that select the same label
 * set; a label set formats to text that parses to an equal set. The input is also
 * split at its first NUL into (regex, value) for a =~ / !~ matcher. A failed
 * round trip is a bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"
#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void pd_fuzz_bug(const char *what, const char *in, size_t inlen, const char *out,
                        const struct pd_err *err)
{
	fprintf(stderr, "fuzz_selector: BUG: %s\n  input:  %.*s\n  output: %s\n  error:  %s\n",
	        what, (int)inlen, in, out ? out : "", err ? err->msg : "");
	abort();
}

static int pd_fuzz_limit(int rc)
{
	return rc == PD_ENOMEM || rc == PD_ETOOBIG;
}

/* The selector as text, NUL-terminated in b (PD_ETOOBIG and so on passed on). */
static int pd_fuzz_format_sel(const struct pd_labels_selector *s, struct pd_buf *b)
{
	int rc;
	b->len = 0;
	if ((rc = pd_labels_selector_format(s, b)) || (rc = pd_buf_append(b, "", 1)))
		return rc;
	b->len--;
	return 0;
}

static int pd_fuzz_format_labels(const struct pd_labels *ls, struct pd_buf *b)
{
	int rc;
	b->len = 0;
	if ((rc = pd_labels_format(ls, b)) || (rc = pd_buf_append(b, "", 1)))
		return rc;
	b->len--;
	return 0;
}

/* parse(format(parse(text))) must succeed and format to the same text, with the
 * same matchers; both selectors must agree on ls (may be NULL). */
static void pd_fuzz_selector(const char *text, size_t len, const struct pd_labels *ls)
{
	struct pd_labels_selector *s1 = NULL, *s2 = NULL;
	struct pd_buf b1, b2;
	struct pd_err err = {0};
	int rc;

	pd_buf_init(&b1, (size_t)1 << 20);
	pd_buf_init(&b2, (size_t)1 << 20);
	if (pd_labels_selector_parse(&s1, text, len, NULL, &err))
		goto out;
	if (!s1->nmatchers)
		pd_fuzz_bug("a selector without matchers was accepted", text, len, NULL, NULL);
	for (size_t i = 0; i < s1->nmatchers; i++) {
		const struct pd_labels_matcher *m = s1->matchers[i];
		if (!pd_labels_matcher_name(m) || !pd_labels_matcher_value(m))
			pd_fuzz_bug("matcher without name or value", text, len, NULL, NULL);
		(void)pd_labels_match_type_string(pd_labels_matcher_type(m));
		(void)pd_labels_matcher_matches(m, "");
		(void)pd_labels_matcher_matches(m, NULL);
		(void)pd_labels_matcher_matches(m, pd_labels_matcher_value(m));
	}
	if ((rc = pd_fuzz_format_sel(s1, &b1))) {
		if (pd_fuzz_limit(rc))
			goto out;
		pd_fuzz_bug("format of a parsed selector failed", text, len, NULL, NULL);
	}
	if ((rc = pd_labels_selector_parse(&s2, (const char *)b1.data, b1.len, NULL, &err))) {
		if (rc == PD_ETOOBIG && b1.len > len)
			goto out; /* the formatted text grew past a limit the input was under */
		pd_fuzz_bug("formatted selector does not parse", text, len, (const char *)b1.data,
		            &err);
	}
	if (s2->nmatchers != s1->nmatchers)
		pd_fuzz_bug("formatted selector has another number of matchers", text, len,
		            (const char *)b1.data, NULL);
	if ((s1->name == NULL) != (s2->name == NULL) || (s1->name && strcmp(s1->name, s2->name)))
		pd_fuzz_bug("formatted selector names another metric", text, len,
		            (const char *)b1.data, NULL);
	if ((rc = pd_fuzz_format_sel(s2, &b2))) {
		if (pd_fuzz_limit(rc))
			goto out;
		pd_fuzz_bug("format of a re-parsed selector failed", text, len,
		            (const char *)b1.data, NULL);
	}
	if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len))
		pd_fuzz_bug("format(parse(format(s))) differs from format(s)", text, len,
		            (const char *)b2.data, NULL);
	if (ls && pd_labels_selector_matches(s1, ls) != pd_labels_selector_matches(s2, ls))
		pd_fuzz_bug("the formatted selector matches differently", text, len,
		            (const char *)b1.data, NULL);
out:
	pd_labels_selector_destroy(s1);
	pd_labels_selector_destroy(s2);
	pd_buf_fini(&b1);
	pd_buf_fini(&b2);
}

/* parse(format(parse(text))) must give an equal set that formats the same. The
 * parsed set is returned (or NULL) for the selector check. */
static struct pd_labels *pd_fuzz_labels(const char *text)
{
	struct pd_labels *a = NULL, *b = NULL;
	struct pd_buf b1, b2;
	struct pd_err err = {0};
	int rc;

	pd_buf_init(&b1, (size_t)1 << 20);
	pd_buf_init(&b2, (size_t)1 << 20);
	if (pd_labels_parse(&a, text, NULL, &err))
		goto out;
	for (size_t i = 0; i < pd_labels_len(a); i++) {
		const struct pd_label *l = pd_labels_at(a, i);
		if (strlen(l->name) != l->name_len || strlen(l->value) != l->value_len)
			pd_fuzz_bug("label lengths are wrong", text, strlen(text), NULL, NULL);
		if (pd_labels_get(a, l->name) != l->value)
			pd_fuzz_bug("pd_labels_get does not find a label", text, strlen(text),
			            l->name, NULL);
	}
	(void)pd_labels_hash(a);
	if ((rc = pd_fuzz_format_labels(a, &b1))) {
		if (pd_fuzz_limit(rc))
			goto out;
		pd_fuzz_bug("format of a parsed label set failed", text, strlen(text), NULL, NULL);
	}
	if ((rc = pd_labels_parse(&b, (const char *)b1.data, NULL, &err)))
		pd_fuzz_bug("formatted label set does not parse", text, strlen(text),
		            (const char *)b1.data, &err);
	if (!pd_labels_equal(a, b) || pd_labels_compare(a, b) ||
	    pd_labels_hash(a) != pd_labels_hash(b))
		pd_fuzz_bug("formatted label set parses to another set", text, strlen(text),
		            (const char *)b1.data, NULL);
	if ((rc = pd_fuzz_format_labels(b, &b2)) && !pd_fuzz_limit(rc))
		pd_fuzz_bug("format of a re-parsed label set failed", text, strlen(text),
		            (const char *)b1.data, NULL);
	if (!rc && (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len)))
		pd_fuzz_bug("format(parse(format(ls))) differs from format(ls)", text, strlen(text),
		            (const char *)b2.data, NULL);
out:
	pd_labels_destroy(b);
	pd_buf_fini(&b1);
	pd_buf_fini(&b2);
	return a;
}

/* A =~ or !~ matcher from the bytes before the first NUL, tried on what follows
 * it (itself cut at the next NUL, as a C string is). */
static void pd_fuzz_regex(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t rlen = nul ? (size_t)(nul - data) : size;
	char *re = malloc(rlen + 1), *val = malloc(size - rlen + 1);
	struct pd_labels_matcher *m = NULL;
	struct pd_labels_selector *s = NULL;
	struct pd_err err = {0};
	struct pd_buf b;

	pd_buf_init(&b, (size_t)1 << 20);
	if (!re || !val)
		goto out;
	memcpy(re, data, rlen);
	re[rlen] = '\0';
	if (nul) {
		memcpy(val, nul + 1, size - rlen - 1);
		val[size - rlen - 1] = '\0';
	} else {
		val[0] = '\0';
	}
	enum pd_labels_match_type t =
	    rlen & 1 ? PD_LABELS_MATCH_NOT_REGEXP : PD_LABELS_MATCH_REGEXP;
	if (pd_labels_matcher_create(&m, t, "job", re, &err))
		goto out;
	int a = pd_labels_matcher_matches(m, val);
	int e = pd_labels_matcher_matches(m, "");
	if (e != pd_labels_matcher_matches_empty(m) || e != pd_labels_matcher_matches(m, NULL))
		pd_fuzz_bug("matches_empty disagrees with matching \"\"", re, rlen, NULL, NULL);
	if (a != pd_labels_matcher_matches(m, val))
		pd_fuzz_bug("a regex matcher is not deterministic", re, rlen, val, NULL);
	/* the matcher as printed, inside a selector, parses back to the same regex */
	int rc;
	if ((rc = pd_buf_append(&b, "{", 1)) || (rc = pd_labels_matcher_format(m, &b)) ||
	    (rc = pd_buf_append(&b, ",__name__=\"x\"}", 14)) || (rc = pd_buf_append(&b, "", 1))) {
		if (pd_fuzz_limit(rc))
			goto out;
		pd_fuzz_bug("format of a regex matcher failed", re, rlen, NULL, NULL);
	}
	b.len--; /* the NUL stays after the text, for printing */
	rc = pd_labels_selector_parse(&s, (const char *)b.data, b.len, NULL, &err);
	if (rc == PD_ETOOBIG)
		goto out;
	if (rc || s->nmatchers != 2 || pd_labels_matcher_type(s->matchers[0]) != t ||
	    strcmp(pd_labels_matcher_value(s->matchers[0]), re) ||
	    pd_labels_matcher_matches(s->matchers[0], val) != a)
		pd_fuzz_bug("a printed regex matcher does not parse back to itself", re, rlen,
		            rc ? err.msg : (const char *)b.data, NULL);
out:
	pd_labels_selector_destroy(s);
	pd_labels_matcher_destroy(m);
	pd_buf_fini(&b);
	free(re);
	free(val);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	/* label-set syntax on the text up to its first NUL */
	struct pd_labels *ls = pd_fuzz_labels(text);
	/* the selector parser takes all the bytes (it must reject a NUL itself); the
	 * label set, if any, is a series to compare the two selectors on */
	pd_fuzz_selector(text, size, ls);
	pd_fuzz_regex(data, size);

	pd_labels_destroy(ls);
	free(text);
	return 0;
}
