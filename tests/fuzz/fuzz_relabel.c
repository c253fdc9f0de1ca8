/* fuzz_relabel.c: libFuzzer target for relabel rules (pkg/relabel): their regexes
 * (RE2 syntax, compiled), replacement templates ($1, ${1}, ${name} expansion),
 * actions and hashmod, applied to a label set. The input is lines: the action, the
 * regex, the source labels (comma-separated), the separator, the target label, the
 * replacement, the modulus (decimal; empty: unset), then a label set as
 * `{name="value", ...}` text. Missing lines are unset fields. Any rule may be
 * rejected, with a message; an accepted rule applied to the set gives a dropped set
 * or a label set whose text form parses back to an equal set (with limits wide
 * enough for what rules can build: joined source labels outgrow the parser's
 * default value limit). Anything else is a
 * bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"
#include "profd/relabel.h"
#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const char *text, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_relabel: BUG: %s\n  text: %s\n  error: %s\n", what, text ? text : "",
		err ? err->msg : "");
	abort();
}

/* Splits s (NUL-terminated, modified) at newlines into at most max fields. */
static size_t split(char *s, char **f, size_t max)
{
	size_t n = 0;
	while (n < max) {
		f[n++] = s;
		char *nl = strchr(s, '\n');
		if (!nl)
			break;
		*nl = 0;
		s = nl + 1;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	char *f[8] = {0};
	size_t nf = split(text, f, 8);
	struct pd_relabel_rule_config rc = {0};
	const char *src[8];
	rc.action = nf > 0 && f[0][0] ? pd_relabel_action_parse(f[0]) : -1;
	if (nf > 0 && f[0][0] && rc.action < 0)
		goto out; /* an unknown action is the config loader's to reject */
	rc.regex = nf > 1 && f[1][0] ? f[1] : NULL;
	if (nf > 2 && f[2][0]) {
		for (char *p = f[2]; p && rc.nsource_labels < 8;) {
			src[rc.nsource_labels++] = p;
			char *c = strchr(p, ',');
			if (c)
				*c++ = 0;
			p = c;
		}
		rc.source_labels = src;
	}
	rc.separator = nf > 3 && f[3][0] ? f[3] : NULL;
	rc.target_label = nf > 4 && f[4][0] ? f[4] : NULL;
	rc.replacement = nf > 5 && f[5][0] ? f[5] : NULL;
	if (nf > 6 && f[6][0]) {
		rc.modulus = strtoull(f[6], NULL, 10);
		rc.has_modulus = 1;
	}
	struct pd_err err = {0};
	struct pd_relabel_rules *rules = NULL;
	if (pd_relabel_rules_build(&rules, &rc, 1, &err)) {
		if (rules || !err.msg[0])
			bug("a rejected rule without a message, or with rules", NULL, &err);
		goto out;
	}
	struct pd_labels *ls = NULL, *res = NULL, *back = NULL;
	const char *set = nf > 7 ? f[7] : "{}";
	if (pd_labels_parse(&ls, set, NULL, &err) == 0) {
		if (pd_relabel_process(rules, ls, &res, &err) == 0 && res) {
			struct pd_buf b;
			pd_buf_init(&b, 0);
			if (pd_labels_format(res, &b) == 0 && pd_buf_append(&b, "", 1) == 0) {
				static const struct pd_labels_limits wide = {1 << 16, 1 << 20, 1 << 24};
				if (pd_labels_parse(&back, (const char *)b.data, &wide, &err))
					bug("the relabelled set's text does not parse", (const char *)b.data, &err);
				if (!pd_labels_equal(back, res))
					bug("the relabelled set's text parses to another set", (const char *)b.data, NULL);
			}
			pd_buf_fini(&b);
		}
	}
	pd_labels_destroy(back);
	pd_labels_destroy(res);
	pd_labels_destroy(ls);
	pd_relabel_rules_destroy(rules);
out:
	free(text);
	return 0;
}
