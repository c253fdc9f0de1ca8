/* test_relabel.c: unit tests of pkg/relabel: every action with Prometheus's own
 * test cases and documented examples, regexp.Expand's edge cases, hashmod, MD5,
 * Go's case mapping, the order in which labelmap visits labels, and validation with
 * Prometheus's messages.
 *
 * Expected values that Go computes (MD5 digests, hashmod results, expansions and
 * case mappings) were computed by a throwaway Go 1.19 program with crypto/md5,
 * regexp (compiled as ^(?s:RE)$, FindStringSubmatchIndex + ExpandString) and
 * strings.ToLower / ToUpper, using Prometheus's hashmod formula:
 * binary.BigEndian.Uint64(md5.Sum([]byte(val))[8:]) % modulus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <cmocka.h>

#include "profd/relabel.h"

#include "../../pkg/relabel/relabel_int.h"

/* ---- helpers -------------------------------------------------------------- */

#define SRC(...)                                                                                   \
	.source_labels = (const char *[]){__VA_ARGS__},                                            \
	.nsource_labels = sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)

#define MAX_RULES 8

/* One relabeling case: the input as name, value pairs, the rules, and the result
 * as pd_labels_string prints it (NULL: the set is dropped). */
struct pcase {
	const char *name;
	const char *in[40];
	struct pd_relabel_rule_config rules[MAX_RULES];
	const char *want;
};

static struct pd_labels *mk(const char *const *kv, const struct pd_labels_limits *lim)
{
	struct pd_labels_builder *b = pd_labels_builder_create(lim);
	struct pd_labels *ls = NULL;
	struct pd_err err = {0};
	assert_non_null(b);
	for (size_t i = 0; kv[i]; i += 2)
		assert_int_equal(pd_labels_builder_add(b, kv[i], kv[i + 1]), 0);
	if (pd_labels_builder_finish(b, &ls, &err) != 0)
		fail_msg("building input: %s", err.msg);
	pd_labels_builder_destroy(b);
	return ls;
}

static size_t nrules(const struct pd_relabel_rule_config *r)
{
	size_t n = 0;
	/* a rule is present when any of its fields is set */
	while (n < MAX_RULES &&
	       (r[n].source_labels || r[n].nsource_labels || r[n].separator || r[n].target_label ||
	        r[n].regex || r[n].modulus || r[n].replacement || r[n].action || r[n].has_modulus))
		n++;
	return n;
}

static struct pd_relabel_rules *build_ok(const struct pd_relabel_rule_config *cfg, size_t n)
{
	struct pd_relabel_rules *rs = NULL;
	struct pd_err err = {0};
	if (pd_relabel_rules_build(&rs, cfg, n, &err) != 0)
		fail_msg("build: %s", err.msg);
	assert_int_equal(pd_relabel_rules_count(rs), n);
	return rs;
}

static void run_cases(const struct pcase *cases, size_t ncases)
{
	for (size_t i = 0; i < ncases; i++) {
		const struct pcase *c = &cases[i];
		struct pd_labels *in = mk(c->in, NULL), *out = NULL;
		struct pd_relabel_rules *rs = build_ok(c->rules, nrules(c->rules));
		struct pd_err err = {0};
		if (pd_relabel_process(rs, in, &out, &err) != 0)
			fail_msg("%s: process: %s", c->name, err.msg);
		if (!c->want) {
			if (out) {
				char *s = pd_labels_string(out);
				fail_msg("%s: want dropped, got %s", c->name, s);
			}
		} else {
			if (!out)
				fail_msg("%s: dropped, want %s", c->name, c->want);
			char *s = pd_labels_string(out);
			if (strcmp(s, c->want) != 0)
				fail_msg("%s:\n got %s\nwant %s", c->name, s, c->want);
			free(s);
		}
		pd_labels_destroy(out);
		pd_labels_destroy(in);
		pd_relabel_rules_destroy(rs);
	}
}

#define RUN(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

/* ---- action names ---------------------------------------------------------- */

static void test_action_names(void **state)
{
	static const char *names[] = {"replace",   "keep",      "drop",     "keepequal",
	                              "dropequal", "hashmod",   "labelmap", "labeldrop",
	                              "labelkeep", "lowercase", "uppercase"};
	for (int i = 0; i < 11; i++) {
		assert_string_equal(pd_relabel_action_name((enum pd_relabel_action)i), names[i]);
		assert_int_equal(pd_relabel_action_parse(names[i]), i);
	}
	assert_int_equal(PD_RELABEL_UPPERCASE, 10);
	/* case-insensitive with Go's strings.ToLower: the Kelvin sign lowercases to k */
	assert_int_equal(pd_relabel_action_parse("REPLACE"), PD_RELABEL_REPLACE);
	assert_int_equal(pd_relabel_action_parse("hashMod"), PD_RELABEL_HASHMOD);
	assert_int_equal(pd_relabel_action_parse("LabelKeep"), PD_RELABEL_LABELKEEP);
	assert_int_equal(pd_relabel_action_parse("\xe2\x84\xaa"
	                                         "eep"),
	                 PD_RELABEL_KEEP);
	assert_int_equal(pd_relabel_action_parse("drop "), -1);
	assert_int_equal(pd_relabel_action_parse(""), -1);
	assert_int_equal(pd_relabel_action_parse("label_keep"), -1);
	assert_int_equal(pd_relabel_action_parse("keep_if_equal"), -1);
	assert_string_equal(pd_relabel_action_name((enum pd_relabel_action)99), "unknown");
}

/* ---- MD5 and hashmod ------------------------------------------------------- */

static void hex(const uint8_t *d, char *out)
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_md5_vectors(void **state)
{
	static const struct {
		const char *in;
		size_t repeat; /* when non-zero: in[0] repeated */
		const char *want;
	} v[] = {
	    /* RFC 1321, appendix A.5 */
	    {"", 0, "d41d8cd98f00b204e9800998ecf8427e"},
	    {"a", 0, "0cc175b9c0f1b6a831c399e269772661"},
	    {"abc", 0, "900150983cd24fb0d6963f7d28e17f72"},
	    {"message digest", 0, "f96b697d7cb7938d525a2f31aaf161d0"},
	    {"abcdefghijklmnopqrstuvwxyz", 0, "c3fcd3d76192e4007dfb496cca67e13b"},
	    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 0,
	     "d174ab98d277d9f5a5611c2c9f419d9f"},
	    {"1234567890123456789012345678901234567890123456789012345678901234567890123456"
	     "7890",
	     0, "57edf4a22be3c955ac49da2e2107b67a"},
	    /* padding boundaries (Go's crypto/md5) */
	    {"x", 55, "04364420e25c512fd958a70738aa8f72"},
	    {"x", 56, "668a72d5ba17f08e62dabcafad6db14b"},
	    {"x", 63, "7dc2ca208106a2f703567bdff99d8981"},
	    {"x", 64, "c1bb4f81d892b2d57947682aeb252456"},
	    {"x", 119, "ab347a5f68c8a443cfcddc633f12c24f"},
	    {"x", 120, "fb98667f98096de92620b64f46e1c5b5"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char buf[200], got[33];
		uint8_t d[16];
		const char *in = v[i].in;
		size_t len = strlen(in);
		if (v[i].repeat) {
			memset(buf, in[0], v[i].repeat);
			in = buf;
			len = v[i].repeat;
		}
		pd_relabel_md5(in, len, d);
		hex(d, got);
		assert_string_equal(got, v[i].want);
	}
}

static void test_hashmod(void **state)
{
	/* value, modulus, Go's result */
	static const struct {
		const char *a, *b; /* source labels a and b; NULL: absent */
		uint64_t mod;
		const char *want;
	} v[] = {
	    {"baz", NULL, 1000, "976"},      /* Prometheus's own test */
	    {"foo\nbar", NULL, 1000, "734"}, /* Prometheus's own test */
	    {"10.0.0.7:8080", NULL, 8, "6"},
	    {"10.0.0.8:8080", NULL, 8, "0"},
	    {"10.0.0.9:8080", NULL, 8, "5"},
	    {NULL, NULL, 10, "8"}, /* "" */
	    {NULL, NULL, 9223372036854775808ULL, "7602086723416769150"},
	    {"a", "b", 3, "2"}, /* "a;b" */
	    {"a", "b", 18446744073709551615ULL, "2420134994223480074"},
	    {"10.132.183.40:80", NULL, 3, "1"},
	    {"h\xc3\xa9llo", NULL, 1000000007, "298737810"},
	    {"x", NULL, 2, "0"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *kv[8];
		size_t k = 0;
		if (v[i].a) {
			kv[k++] = "a";
			kv[k++] = v[i].a;
		}
		if (v[i].b) {
			kv[k++] = "b";
			kv[k++] = v[i].b;
		}
		kv[k] = NULL;
		struct pd_labels *in = mk(kv, NULL), *out = NULL;
		struct pd_relabel_rule_config c = {SRC("a", "b"), .target_label = "h",
		                                   .modulus = v[i].mod, .has_modulus = 1,
		                                   .action = PD_RELABEL_HASHMOD};
		if (!v[i].b)
			c.nsource_labels = v[i].a ? 1 : 2; /* "" for both absent: ";" */
		if (!v[i].a && !v[i].b)
			c.separator = "";
		struct pd_relabel_rules *rs = build_ok(&c, 1);
		struct pd_err err = {0};
		assert_int_equal(pd_relabel_process(rs, in, &out, &err), 0);
		assert_non_null(out);
		assert_string_equal(pd_labels_get(out, "h"), v[i].want);
		pd_labels_destroy(out);
		pd_labels_destroy(in);
		pd_relabel_rules_destroy(rs);
	}

	/* the separator is hashed too: two absent labels join to ";" (Go: 3 mod 5) */
	{
		struct pd_labels *in = mk((const char *[]){"z", "1", NULL}, NULL), *out = NULL;
		struct pd_relabel_rule_config c = {SRC("x", "y"), .target_label = "h", .modulus = 5,
		                                   .action = PD_RELABEL_HASHMOD};
		struct pd_relabel_rules *rs = build_ok(&c, 1);
		assert_int_equal(pd_relabel_process(rs, in, &out, NULL), 0);
		assert_string_equal(pd_labels_get(out, "h"), "3");
		pd_labels_destroy(out);
		pd_labels_destroy(in);
		pd_relabel_rules_destroy(rs);
	}
}

/* Prometheus's documented sharding: keep one of 8 shards by address hash. */
static void test_hashmod_sharding(void **state)
{
	const struct pcase cases[] = {
	    {"shard 6 keeps 10.0.0.7",
	     {"__address__", "10.0.0.7:8080", "job", "api", NULL},
	     {{SRC("__address__"), .modulus = 8, .target_label = "__tmp_hashmod",
	       .action = PD_RELABEL_HASHMOD},
	      {SRC("__tmp_hashmod"), .regex = "6", .action = PD_RELABEL_KEEP}},
	     "{__address__=\"10.0.0.7:8080\", __tmp_hashmod=\"6\", job=\"api\"}"},
	    {"shard 6 drops 10.0.0.8",
	     {"__address__", "10.0.0.8:8080", "job", "api", NULL},
	     {{SRC("__address__"), .modulus = 8, .target_label = "__tmp_hashmod",
	       .action = PD_RELABEL_HASHMOD},
	      {SRC("__tmp_hashmod"), .regex = "6", .action = PD_RELABEL_KEEP}},
	     NULL},
	};
	RUN(cases);
}

/* ---- regexp.Expand --------------------------------------------------------- */

static void test_expand(void **state)
{
	/* regex, input, template, Go's result */
	static const struct {
		const char *re, *in, *tmpl, *want;
	} v[] = {
	    {"(a)(b)", "ab", "$1x", ""}, /* the group named "1x" */
	    {"(a)(b)", "ab", "${1}x", "ax"},
	    {"(a)(b)", "ab", "$$1", "$1"},
	    {"(a)(b)", "ab", "$$$1", "$a"},
	    {"(a)(b)", "ab", "$0", "ab"},
	    {"(a)(b)", "ab", "$2$1", "ba"},
	    {"(a)(b)", "ab", "$3", ""},
	    {"(a)(b)", "ab", "${3}", ""},
	    {"(a)(b)", "ab", "$", "$"},
	    {"(a)(b)", "ab", "x$", "x$"},
	    {"(a)(b)", "ab", "${", "${"},
	    {"(a)(b)", "ab", "${}", "${}"},
	    {"(a)(b)", "ab", "${1", "${1"},
	    {"(a)(b)", "ab", "$-1", "$-1"},
	    {"(a)(b)", "ab", "$01", ""},
	    {"(a)(b)", "ab", "${01}", ""},
	    {"(a)(b)", "ab", "$1\xc3\xa9", ""},    /* é is a letter: group "1é" */
	    {"(a)(b)", "ab", "$\xef\xbc\x91", ""}, /* fullwidth digit one */
	    {"(a)(b)", "ab", "$1\xd9\xa3", ""},    /* Arabic-Indic digit three */
	    {"(a)(b)", "ab", "$1-$2", "a-b"},
	    {"(a)(b)", "ab", "$1.$2", "a.b"},
	    {"(a)(b)", "ab", "$1_", ""},
	    {"(a)(b)", "ab", "$100000000", ""},
	    {"(a)(b)", "ab", "$999999999", ""},
	    {"(a)(b)", "ab", "$1000000000", ""},
	    {"(a)(b)", "ab", "${1}${2}${0}", "abab"},
	    {"(?P<x>a)(?P<y>b)", "ab", "$y$x", "ba"},
	    {"(?P<x>a)(?P<y>b)", "ab", "${y}_${x}", "b_a"},
	    {"(?P<x>a)(?P<y>b)", "ab", "$x_", ""},
	    {"(?P<x>a)(?P<y>b)", "ab", "${x}_", "a_"},
	    {"(?P<x>a)(?P<y>b)", "ab", "$z", ""},
	    {"(?P<x>a)(?P<y>b)", "ab", "$2", "b"},
	    {"(?<x>a)(?<y>b)", "ab", "${y}${x}", "ba"},
	    {"(a)|(b)", "b", "[$1][$2]", "[][b]"},
	    {"(a)?b", "b", "[$1]", "[]"},
	    {"(?P<n>a)|(?P<m>b)", "b", "[$n][$m]", "[][b]"},
	    /* Go allows two groups of one name: the first that took part */
	    {"(?P<n>a)|(?P<n>b)", "b", "[$n]", "[b]"},
	    {"(?P<n>a)(?P<n>b)", "ab", "[$n][${n}]", "[a][a]"},
	    {"((a)(b))", "ab", "$1|$2|$3", "ab|a|b"},
	    {"(a*)(a*)", "aaa", "$1,$2", "aaa,"},
	    {"(a*?)(a*)", "aaa", "$1,$2", ",aaa"},
	    {"(.*)-(.*)", "a-b-c", "$1|$2", "a-b|c"},
	    {"(.*?)-(.*)", "a-b-c", "$1|$2", "a|b-c"},
	    {"(?i)(A)(b)", "aB", "$1$2", "aB"},
	    {"(x|xy)(y?)", "xy", "[$1][$2]", "[x][y]"},
	    {"(a|ab)(c|bcd)(d*)", "abcd", "[$1][$2][$3]", "[a][bcd][]"},
	    {"([^:]+)(?::\\d+)?;(\\d+)", "10.0.0.7:8080;9090", "$1:$2", "10.0.0.7:9090"},
	    {"(.+?)(\\:\\d+)?;(\\d+)", "10.0.0.7:8080;9090", "$1:$3", "10.0.0.7:9090"},
	    {"line1.*line2", "line1\nline2", "match${1}", "match"},
	    {"(.*)", "a\nb", "<$1>", "<a\nb>"},
	    {NULL, "a\nb", "<$1|$0|$2>", "<a\nb|a\nb|>"}, /* the default regex */
	    {"f(.*)", "foo", "ch${1}-ch${1}", "choo-choo"},
	    {"f(.*)", "foo", "ch$1-ch$1", "choo-choo"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pd_relabel_regex rx;
		struct pd_err err = {0};
		struct pd_buf out;
		size_t ov[40];
		if (pd_relabel_regex_compile(&rx, v[i].re ? v[i].re : "(.*)", v[i].re == NULL,
		                             &err) != 0)
			fail_msg("%s: %s", v[i].re, err.msg);
		assert_true(rx.ncap < 20);
		if (!pd_relabel_regex_match(&rx, v[i].in, strlen(v[i].in), ov))
			fail_msg("%s does not match %s", v[i].re, v[i].in);
		pd_buf_init(&out, 0);
		assert_int_equal(pd_relabel_expand(&out, v[i].tmpl, &rx, v[i].in, ov), 0);
		assert_int_equal(pd_buf_append(&out, "", 1), 0);
		if (strcmp((const char *)out.data, v[i].want) != 0)
			fail_msg("%s on %s with %s: got \"%s\", want \"%s\"", v[i].re, v[i].in,
			         v[i].tmpl, (const char *)out.data, v[i].want);
		pd_buf_fini(&out);
		pd_relabel_regex_fini(&rx);
	}
}

/* ---- regexes that make a backtracking engine stall ------------------------ */

/* Go's regexp (RE2) answers these in time linear in the input; results computed
 * with Go (FindStringSubmatchIndex, ExpandString). A backtracking engine with a step
 * limit answers "no match" for the first rule set, where Go matches. */
static void test_pathological(void **state)
{
	const struct pcase cases[] = {
	    {"keep: the second branch matches after the first fails",
	     {"a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL},
	     {{SRC("a"), .regex = "(a|aa)*(a|aa)*(a|aa)*c|a*", .action = PD_RELABEL_KEEP}},
	     "{a=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}"},
	    {"replace: the group of the branch that matched",
	     {"a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL},
	     {{SRC("a"), .regex = "(a|aa)*(a|aa)*(a|aa)*c|(a*)", .target_label = "b",
	       .replacement = "<$4>"}},
	     "{a=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", "
	     "b=\"<aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa>\"}"},
	    {"drop: no match, as in Go",
	     {"a", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", NULL},
	     {{SRC("a"), .regex = "(x+x+)+y", .action = PD_RELABEL_DROP}},
	     "{a=\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}"},
	};
	RUN(cases);

	/* 100,000-byte inputs, with capture groups */
	enum { N = 100000 };
	char *in = malloc(N + 2);
	assert_non_null(in);
	static const struct {
		const char *re, *tmpl;
		char fill, last; /* the input: N of fill, then last when not NUL */
		const char *want; /* NULL: no match; "*": N of fill */
	} v[] = {
	    {"(a|aa)+", "[$1]", 'a', 0, "[a]"},
	    {"(a|aa)+$", "[$1]", 'a', 0, "[a]"},
	    {"(a|aa)+", "[$1]", 'a', 'b', NULL},
	    {"(x+x+)+y", "$1", 'x', 'y', "*"},
	    {"(x+x+)+y", "$1", 'x', 0, NULL},
	    {"(?P<w>\\w+)-?(\\d*)", "${w}", 'w', 0, "*"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pd_relabel_regex rx;
		struct pd_err err = {0};
		struct pd_buf out;
		size_t ov[6], len = N;
		memset(in, v[i].fill, N);
		if (v[i].last)
			in[len++] = v[i].last;
		in[len] = '\0';
		if (pd_relabel_regex_compile(&rx, v[i].re, 0, &err) != 0)
			fail_msg("%s: %s", v[i].re, err.msg);
		assert_true(rx.ncap <= 2);
		int m = pd_relabel_regex_match(&rx, in, len, ov);
		if (m != (v[i].want != NULL))
			fail_msg("%s on %zu bytes: match %d", v[i].re, len, m);
		if (m) {
			pd_buf_init(&out, 0);
			assert_int_equal(pd_relabel_expand(&out, v[i].tmpl, &rx, in, ov), 0);
			if (strcmp(v[i].want, "*") == 0) {
				assert_int_equal(out.len, N);
				assert_memory_equal(out.data, in, N);
			} else {
				assert_int_equal(out.len, strlen(v[i].want));
				assert_memory_equal(out.data, v[i].want, out.len);
			}
			pd_buf_fini(&out);
		}
		pd_relabel_regex_fini(&rx);
	}
	free(in);
}

/* ---- replace --------------------------------------------------------------- */

static void test_replace(void **state)
{
	const struct pcase cases[] = {
	    {"prometheus: ch${1}-ch${1}",
	     {"a", "foo", "b", "bar", "c", "baz", NULL},
	     {{SRC("a"), .regex = "f(.*)", .target_label = "d", .separator = ";",
	       .replacement = "ch${1}-ch${1}", .action = PD_RELABEL_REPLACE}},
	     "{a=\"foo\", b=\"bar\", c=\"baz\", d=\"choo-choo\"}"},
	    {"prometheus: two rules, the second sees the first's result",
	     {"a", "foo", "b", "bar", "c", "baz", NULL},
	     {{SRC("a", "b"), .regex = "f(.*);(.*)r", .target_label = "a",
	       .replacement = "b${1}${2}m"},
	      {SRC("c", "a"), .regex = "(b).*b(.*)ba(.*)", .target_label = "d",
	       .replacement = "$1$2$2$3"}},
	     "{a=\"boobam\", b=\"bar\", c=\"baz\", d=\"boooom\"}"},
	    {"prometheus: .*(b).*",
	     {"a", "abc", NULL},
	     {{SRC("a"), .regex = ".*(b).*", .target_label = "d", .replacement = "$1"}},
	     "{a=\"abc\", d=\"b\"}"},
	    {"no match: no change",
	     {"a", "boo", NULL},
	     {{SRC("a"), .regex = "f", .target_label = "b", .replacement = "bar"}},
	     "{a=\"boo\"}"},
	    {"anchored: oo does not match foo",
	     {"a", "foo", NULL},
	     {{SRC("a"), .regex = "oo", .target_label = "b", .replacement = "x"}},
	     "{a=\"foo\"}"},
	    {"blank replacement deletes the target",
	     {"a", "foo", "f", "baz", NULL},
	     {{SRC("a"), .regex = "(f).*", .target_label = "$1", .replacement = "$2"}},
	     "{a=\"foo\"}"},
	    {"target and replacement from groups",
	     {"a", "some-name-value", NULL},
	     {{SRC("a"), .regex = "some-([^-]+)-([^,]+)", .target_label = "${1}",
	       .replacement = "${2}"}},
	     "{a=\"some-name-value\", name=\"value\"}"},
	    {"replacement of a missing group deletes (nothing here)",
	     {"a", "some-name-value", NULL},
	     {{SRC("a"), .regex = "some-([^-]+)-([^,]+)", .target_label = "${1}",
	       .replacement = "${3}"}},
	     "{a=\"some-name-value\"}"},
	    {"a target that expands to an invalid name is skipped",
	     {"a", "some-name-0", NULL},
	     {{SRC("a"), .regex = "some-([^-]+)-([^,]+)", .target_label = "${3}",
	       .replacement = "${1}"},
	      {SRC("a"), .regex = "some-([^-]+)-([^,]+)", .target_label = "${2}",
	       .replacement = "${1}"},
	      {SRC("a"), .regex = "some-([^-]+)(-[^,]+)", .target_label = "${2}x",
	       .replacement = "${1}"}},
	     "{a=\"some-name-0\"}"},
	    {"prometheus: tags into __metrics_path__, job and a label",
	     {"__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar", NULL},
	     {{SRC("__meta_sd_tags"), .regex = "(?:.+,|^)path:(/[^,]+).*", .replacement = "${1}",
	       .target_label = "__metrics_path__"},
	      {SRC("__meta_sd_tags"), .regex = "(?:.+,|^)job:([^,]+).*", .replacement = "${1}",
	       .target_label = "job"},
	      {SRC("__meta_sd_tags"), .regex = "(?:.+,|^)label:([^=]+)=([^,]+).*",
	       .replacement = "${2}", .target_label = "${1}"}},
	     "{__meta_sd_tags=\"path:/secret,job:some-job,label:foo=bar\", "
	     "__metrics_path__=\"/secret\", foo=\"bar\", job=\"some-job\"}"},
	    {"dot matches newline",
	     {"a", "line1\nline2", "b", "bar", NULL},
	     {{SRC("a"), .regex = "line1.*line2", .target_label = "d", .replacement = "match${1}"}},
	     "{a=\"line1\\nline2\", b=\"bar\", d=\"match\"}"},
	    {"named groups, $name and ${name}",
	     {"a", "line1\nline2", NULL},
	     {{SRC("a"), .regex = "(line1).*(?P<second>line2)", .target_label = "label1_${1}",
	       .replacement = "val_${second}"},
	      {SRC("a"), .regex = "(line1).*(?P<second>line2)", .target_label = "label2_$1",
	       .replacement = "val_$second"}},
	     "{a=\"line1\\nline2\", label1_line1=\"val_line2\", label2_line1=\"val_line2\"}"},
	    {"__name__ as a source",
	     {"__name__", "http_requests_total", NULL},
	     {{SRC("__name__"), .regex = ".*_total$", .target_label = "__type__",
	       .replacement = "counter"}},
	     "http_requests_total{__type__=\"counter\"}"},
	    {"a static label: no source labels",
	     {"job", "api", NULL},
	     {{.target_label = "env", .replacement = "prod", .action = -1}},
	     "{env=\"prod\", job=\"api\"}"},
	    {"a static empty replacement deletes",
	     {"job", "api", "env", "dev", NULL},
	     {{.target_label = "env", .replacement = ""}},
	     "{job=\"api\"}"},
	    {"copy a label with every default",
	     {"__address__", "10.0.0.7:8080", NULL},
	     {{SRC("__address__"), .target_label = "instance", .action = -1}},
	     "{__address__=\"10.0.0.7:8080\", instance=\"10.0.0.7:8080\"}"},
	    {"copying an absent label deletes the target",
	     {"job", "api", NULL},
	     {{SRC("__meta_missing"), .target_label = "job"}},
	     "{}"},
	    {"prometheus docs: address from __address__ and a port annotation",
	     {"__address__", "10.0.0.7:8080", "__meta_kubernetes_pod_annotation_prometheus_io_port",
	      "9090", NULL},
	     {{SRC("__address__", "__meta_kubernetes_pod_annotation_prometheus_io_port"),
	       .regex = "([^:]+)(?::\\d+)?;(\\d+)", .replacement = "$1:$2",
	       .target_label = "__address__"}},
	     "{__address__=\"10.0.0.7:9090\", "
	     "__meta_kubernetes_pod_annotation_prometheus_io_port=\"9090\"}"},
	    {"separators: empty, multi-byte",
	     {"a", "x", "b", "y", NULL},
	     {{SRC("a", "b"), .separator = "", .target_label = "j1"},
	      {SRC("a", "b", "c"), .separator = "::", .target_label = "j2"},
	      {SRC("a", "b"), .separator = "/", .regex = "x/(.*)", .target_label = "j3"}},
	     "{a=\"x\", b=\"y\", j1=\"xy\", j2=\"x::y::\", j3=\"y\"}"},
	    {"$1x is the group named 1x; ${1}x is group 1 then x",
	     {"a", "v", NULL},
	     {{SRC("a"), .target_label = "t1", .replacement = "${1}x"},
	      {SRC("a"), .target_label = "t2", .replacement = "$1x"},
	      {SRC("a"), .target_label = "t3", .replacement = "$$1"},
	      {SRC("a"), .target_label = "t4", .replacement = "pre-$1-post"}},
	     "{a=\"v\", t1=\"vx\", t3=\"$1\", t4=\"pre-v-post\"}"},
	    {"case-insensitive flag",
	     {"env", "PROD", NULL},
	     {{SRC("env"), .regex = "(?i)prod", .target_label = "tier", .replacement = "1"}},
	     "{env=\"PROD\", tier=\"1\"}"},
	    {"a replace may target __name__",
	     {"__name__", "heap", "job", "api", NULL},
	     {{SRC("__name__"), .regex = "heap", .target_label = "__name__",
	       .replacement = "memory"}},
	     "memory{job=\"api\"}"},
	    {"overwriting an existing label",
	     {"job", "api", "instance", "a:1", NULL},
	     {{SRC("instance"), .regex = "([^:]+):.*", .target_label = "instance"}},
	     "{instance=\"a\", job=\"api\"}"},
	};
	RUN(cases);
}

/* ---- keep and drop --------------------------------------------------------- */

static void test_keep_drop(void **state)
{
	const struct pcase cases[] = {
	    {"prometheus: drop, then a replace that never runs",
	     {"a", "foo", NULL},
	     {{SRC("a"), .regex = ".*o.*", .action = PD_RELABEL_DROP},
	      {SRC("a"), .regex = "f(.*)", .target_label = "d", .replacement = "ch$1-ch$1"}},
	     NULL},
	    {"drop on match",
	     {"a", "foo", "b", "bar", NULL},
	     {{SRC("a"), .regex = ".*o.*", .action = PD_RELABEL_DROP}},
	     NULL},
	    {"drop: no match keeps",
	     {"a", "foo", NULL},
	     {{SRC("a"), .regex = "no-match", .action = PD_RELABEL_DROP}},
	     "{a=\"foo\"}"},
	    {"drop: f|o is anchored, so no match",
	     {"a", "foo", NULL},
	     {{SRC("a"), .regex = "f|o", .action = PD_RELABEL_DROP}},
	     "{a=\"foo\"}"},
	    {"keep: no match drops",
	     {"a", "foo", NULL},
	     {{SRC("a"), .regex = "no-match", .action = PD_RELABEL_KEEP}},
	     NULL},
	    {"keep: match keeps",
	     {"a", "foo", NULL},
	     {{SRC("a"), .regex = "f.*", .action = PD_RELABEL_KEEP}},
	     "{a=\"foo\"}"},
	    {"keep on joined values",
	     {"job", "api", "env", "prod", NULL},
	     {{SRC("job", "env"), .regex = "api;prod", .action = PD_RELABEL_KEEP}},
	     "{env=\"prod\", job=\"api\"}"},
	    {"keep with the default regex keeps everything",
	     {"job", "api", NULL},
	     {{SRC("nothing"), .action = PD_RELABEL_KEEP}},
	     "{job=\"api\"}"},
	    {"drop: an empty regex matches an absent label",
	     {"job", "api", NULL},
	     {{SRC("__meta_kubernetes_pod_label_name"), .regex = "", .action = PD_RELABEL_DROP}},
	     NULL},
	    {"drop: an empty regex does not match a present label",
	     {"job", "api", "__meta_kubernetes_pod_label_name", "x", NULL},
	     {{SRC("__meta_kubernetes_pod_label_name"), .regex = "", .action = PD_RELABEL_DROP}},
	     "{__meta_kubernetes_pod_label_name=\"x\", job=\"api\"}"},
	    {"prometheus docs: keep by annotation",
	     {"__meta_kubernetes_pod_annotation_prometheus_io_scrape", "true", "__address__",
	      "10.0.0.7:8080", NULL},
	     {{SRC("__meta_kubernetes_pod_annotation_prometheus_io_scrape"), .regex = "true",
	       .action = PD_RELABEL_KEEP}},
	     "{__address__=\"10.0.0.7:8080\", "
	     "__meta_kubernetes_pod_annotation_prometheus_io_scrape=\"true\"}"},
	    {"prometheus docs: drop by phase",
	     {"__meta_kubernetes_pod_phase", "Succeeded", NULL},
	     {{SRC("__meta_kubernetes_pod_phase"), .regex = "Succeeded|Failed",
	       .action = PD_RELABEL_DROP}},
	     NULL},
	    {"prometheus issue 12283: a replaced label is seen by keep",
	     {"__meta_kubernetes_pod_container_port_name", "foo",
	      "__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091", NULL},
	     {{.regex = "^__meta_kubernetes_pod_container_port_name$",
	       .action = PD_RELABEL_LABELDROP},
	      {SRC("__meta_kubernetes_pod_annotation_XXX_metrics_port"), .regex = "(.+)",
	       .replacement = "metrics",
	       .target_label = "__meta_kubernetes_pod_container_port_name"},
	      {SRC("__meta_kubernetes_pod_container_port_name"), .regex = "^metrics$",
	       .action = PD_RELABEL_KEEP}},
	     "{__meta_kubernetes_pod_annotation_XXX_metrics_port=\"9091\", "
	     "__meta_kubernetes_pod_container_port_name=\"metrics\"}"},
	};
	RUN(cases);
}

/* ---- keepequal and dropequal ----------------------------------------------- */

static void test_equal(void **state)
{
	const struct pcase cases[] = {
	    {"keepequal: equal keeps",
	     {"__tmp_port", "1234", "__port1", "1234", "__port2", "5678", NULL},
	     {{SRC("__tmp_port"), .action = PD_RELABEL_KEEPEQUAL, .target_label = "__port1"}},
	     "{__port1=\"1234\", __port2=\"5678\", __tmp_port=\"1234\"}"},
	    {"dropequal: equal drops",
	     {"__tmp_port", "1234", "__port1", "1234", "__port2", "5678", NULL},
	     {{SRC("__tmp_port"), .action = PD_RELABEL_DROPEQUAL, .target_label = "__port1"}},
	     NULL},
	    {"dropequal: different keeps",
	     {"__tmp_port", "1234", "__port1", "1234", "__port2", "5678", NULL},
	     {{SRC("__tmp_port"), .action = PD_RELABEL_DROPEQUAL, .target_label = "__port2"}},
	     "{__port1=\"1234\", __port2=\"5678\", __tmp_port=\"1234\"}"},
	    {"keepequal: different drops",
	     {"__tmp_port", "1234", "__port1", "1234", "__port2", "5678", NULL},
	     {{SRC("__tmp_port"), .action = PD_RELABEL_KEEPEQUAL, .target_label = "__port2"}},
	     NULL},
	    {"keepequal: both absent are equal",
	     {"job", "api", NULL},
	     {{SRC("x"), .action = PD_RELABEL_KEEPEQUAL, .target_label = "y"}},
	     "{job=\"api\"}"},
	    {"keepequal on joined values",
	     {"a", "1", "b", "2", "c", "1;2", NULL},
	     {{SRC("a", "b"), .action = PD_RELABEL_KEEPEQUAL, .target_label = "c"}},
	     "{a=\"1\", b=\"2\", c=\"1;2\"}"},
	    {"prometheus docs: keep targets whose port matches the annotation",
	     {"__meta_kubernetes_pod_container_port_number", "8080",
	      "__meta_kubernetes_pod_annotation_prometheus_io_port", "9090", NULL},
	     {{SRC("__meta_kubernetes_pod_annotation_prometheus_io_port"),
	       .action = PD_RELABEL_KEEPEQUAL,
	       .target_label = "__meta_kubernetes_pod_container_port_number"}},
	     NULL},
	};
	RUN(cases);
}

/* ---- labelmap, labeldrop, labelkeep ----------------------------------------- */

static void test_label_actions(void **state)
{
	const struct pcase cases[] = {
	    {"prometheus: labelmap bar_${1}",
	     {"a", "foo", "b1", "bar", "b2", "baz", NULL},
	     {{.regex = "(b.*)", .replacement = "bar_${1}", .action = PD_RELABEL_LABELMAP}},
	     "{a=\"foo\", b1=\"bar\", b2=\"baz\", bar_b1=\"bar\", bar_b2=\"baz\"}"},
	    {"prometheus: labelmap __meta_(my.*)",
	     {"a", "foo", "__meta_my_bar", "aaa", "__meta_my_baz", "bbb", "__meta_other", "ccc",
	      NULL},
	     {{.regex = "__meta_(my.*)", .replacement = "${1}", .action = PD_RELABEL_LABELMAP}},
	     "{__meta_my_bar=\"aaa\", __meta_my_baz=\"bbb\", __meta_other=\"ccc\", a=\"foo\", "
	     "my_bar=\"aaa\", my_baz=\"bbb\"}"},
	    {"prometheus docs: node labels with the default replacement, then drop __meta_",
	     {"__address__", "10.0.0.1:9100", "__meta_kubernetes_node_label_zone", "eu-1",
	      "__meta_kubernetes_node_label_arch", "amd64", "__meta_kubernetes_node_name", "n1",
	      NULL},
	     {{.regex = "__meta_kubernetes_node_label_(.+)", .action = PD_RELABEL_LABELMAP},
	      {.regex = "__meta_.*", .action = PD_RELABEL_LABELDROP}},
	     "{__address__=\"10.0.0.1:9100\", arch=\"amd64\", zone=\"eu-1\"}"},
	    {"labelmap visits base labels in order: the last one wins",
	     {"a", "1", "b", "2", NULL},
	     {{.regex = "(a|b)", .replacement = "x", .action = PD_RELABEL_LABELMAP}},
	     "{a=\"1\", b=\"2\", x=\"2\"}"},
	    {"labelmap visits labels set by earlier rules after the others",
	     {"a", "1", "b", "2", NULL},
	     {{.target_label = "a", .replacement = "3"},
	      {.regex = "(a|b)", .replacement = "x", .action = PD_RELABEL_LABELMAP}},
	     "{a=\"3\", b=\"2\", x=\"3\"}"},
	    {"labelmap: added labels in the order they were first set",
	     {"k", "0", NULL},
	     {{.target_label = "z", .replacement = "first"},
	      {.target_label = "m", .replacement = "second"},
	      {.regex = "(z|m)", .replacement = "x", .action = PD_RELABEL_LABELMAP}},
	     "{k=\"0\", m=\"second\", x=\"second\", z=\"first\"}"},
	    {"labelmap onto an existing label overwrites it",
	     {"__meta_job", "new", "job", "old", NULL},
	     {{.regex = "__meta_(job)", .action = PD_RELABEL_LABELMAP}},
	     "{__meta_job=\"new\", job=\"new\"}"},
	    {"labelmap does not see labels it makes",
	     {"a", "1", NULL},
	     {{.regex = "(.*)", .replacement = "${1}_x", .action = PD_RELABEL_LABELMAP}},
	     "{a=\"1\", a_x=\"1\"}"},
	    {"prometheus: labelkeep",
	     {"a", "foo", "b1", "bar", "b2", "baz", NULL},
	     {{.regex = "(b.*)", .action = PD_RELABEL_LABELKEEP}},
	     "{b1=\"bar\", b2=\"baz\"}"},
	    {"prometheus: labeldrop",
	     {"a", "foo", "b1", "bar", "b2", "baz", NULL},
	     {{.regex = "(b.*)", .action = PD_RELABEL_LABELDROP}},
	     "{a=\"foo\"}"},
	    {"labeldrop is anchored",
	     {"instance", "a", "instance_id", "b", NULL},
	     {{.regex = "instance", .action = PD_RELABEL_LABELDROP}},
	     "{instance_id=\"b\"}"},
	    {"labelkeep with the default regex keeps all",
	     {"a", "1", "b", "2", NULL},
	     {{.action = PD_RELABEL_LABELKEEP}},
	     "{a=\"1\", b=\"2\"}"},
	    {"labelkeep can drop everything",
	     {"a", "1", "b", "2", NULL},
	     {{.regex = "c", .action = PD_RELABEL_LABELKEEP}},
	     "{}"},
	    {"labeldrop sees labels set before and misses deleted ones",
	     {"a", "1", "tmp_b", "2", NULL},
	     {{.target_label = "tmp_c", .replacement = "3"},
	      {.target_label = "tmp_b", .replacement = ""},
	      {.regex = "tmp_.*", .action = PD_RELABEL_LABELDROP}},
	     "{a=\"1\"}"},
	    {"an invalid name from labelmap that a later rule drops is fine",
	     {"__meta_1x", "v", "a", "1", NULL},
	     {{.regex = "__meta_(.*)", .action = PD_RELABEL_LABELMAP},
	      {.regex = "1x", .action = PD_RELABEL_LABELDROP},
	      {.regex = "__meta_.*", .action = PD_RELABEL_LABELDROP}},
	     "{a=\"1\"}"},
	};
	RUN(cases);
}

/* ---- lowercase and uppercase ------------------------------------------------ */

static void test_case_actions(void **state)
{
	const struct pcase cases[] = {
	    {"prometheus: upper and lower",
	     {"foo", "bAr123Foo", NULL},
	     {{SRC("foo"), .action = PD_RELABEL_UPPERCASE, .target_label = "foo_uppercase"},
	      {SRC("foo"), .action = PD_RELABEL_LOWERCASE, .target_label = "foo_lowercase"}},
	     "{foo=\"bAr123Foo\", foo_lowercase=\"bar123foo\", foo_uppercase=\"BAR123FOO\"}"},
	    {"joined values, in place",
	     {"a", "Mixed", "b", "Case", NULL},
	     {{SRC("a", "b"), .action = PD_RELABEL_LOWERCASE, .target_label = "a"}},
	     "{a=\"mixed;case\", b=\"Case\"}"},
	    {"an empty value deletes the target",
	     {"a", "x", "t", "old", NULL},
	     {{SRC("missing"), .action = PD_RELABEL_UPPERCASE, .target_label = "t"}},
	     "{a=\"x\"}"},
	};
	RUN(cases);

	/* Go's strings.ToLower / ToUpper, character for character */
	static const struct {
		const char *in, *lower, *upper;
	} v[] = {
	    {"bAr123Foo", "bar123foo", "BAR123FOO"},
	    {"\xc3\x84\xc3\x96\xc3\x9c\xc3\x9f", "\xc3\xa4\xc3\xb6\xc3\xbc\xc3\x9f",
	     "\xc3\x84\xc3\x96\xc3\x9c\xc3\x9f"},                         /* ÄÖÜß */
	    {"\xc4\xb0STANBUL", "istanbul", "\xc4\xb0STANBUL"},           /* İ */
	    {"\xc7\x85", "\xc7\x86", "\xc7\x84"},                         /* ǅ */
	    {"\xc7\x86\xc7\x84", "\xc7\x86\xc7\x86", "\xc7\x84\xc7\x84"}, /* ǆǄ */
	    {"\xc5\xbf", "\xc5\xbf", "S"},                                /* ſ */
	    {"\xe2\x84\xaa", "k", "\xe2\x84\xaa"},                        /* Kelvin */
	    {"\xce\xa9mega", "\xcf\x89mega", "\xce\xa9MEGA"},             /* Ω */
	    {"\xce\xa3\xce\x91\xce\xa3", "\xcf\x83\xce\xb1\xcf\x83", "\xce\xa3\xce\x91\xce\xa3"},
	    {"\xef\xac\x81", "\xef\xac\x81", "\xef\xac\x81"}, /* ﬁ */
	    {"\xea\xad\xb0", "\xea\xad\xb0", "\xe1\x8e\xa0"}, /* Cherokee */
	    {"\xf0\x90\x90\xa8\xf0\x90\x90\x80", "\xf0\x90\x90\xa8\xf0\x90\x90\xa8",
	     "\xf0\x90\x90\x80\xf0\x90\x90\x80"}, /* Deseret */
	    {"\xc7\xb0", "\xc7\xb0", "\xc7\xb0"}, /* ǰ */
	    {"\xe2\x93\x90\xe2\x92\xb6", "\xe2\x93\x90\xe2\x93\x90", "\xe2\x92\xb6\xe2\x92\xb6"},
	    {"\xc2\xb5", "\xc2\xb5", "\xce\x9c"}, /* µ */
	    /* invalid UTF-8 becomes U+FFFD, byte by byte */
	    {"\xff\xfe"
	     "A",
	     "\xef\xbf\xbd\xef\xbf\xbd"
	     "a",
	     "\xef\xbf\xbd\xef\xbf\xbd"
	     "A"},
	    {"a\xc3\xa9\xc3", "a\xc3\xa9\xef\xbf\xbd", "A\xc3\x89\xef\xbf\xbd"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		for (int up = 0; up < 2; up++) {
			struct pd_buf b;
			pd_buf_init(&b, 0);
			assert_int_equal(pd_relabel_case_map(&b, v[i].in, strlen(v[i].in), up), 0);
			assert_int_equal(pd_buf_append(&b, "", 1), 0);
			assert_string_equal((const char *)b.data, up ? v[i].upper : v[i].lower);
			pd_buf_fini(&b);
		}
	}
	assert_true(pd_relabel_is_letter(0xE9));
	assert_false(pd_relabel_is_letter(0xD7)); /* × */
	assert_true(pd_relabel_is_digit(0x663));
	assert_false(pd_relabel_is_digit(0xB2)); /* ² is No, not Nd */
}

/* ---- a whole configuration ------------------------------------------------- */

/* The Kubernetes pod rules of Prometheus's relabel benchmark, on its pod. */
static void test_kubernetes_pipeline(void **state)
{
	const struct pcase cases[] = {
	    {"kubernetes pods",
	     {"__address__",
	      "10.132.183.40:80",
	      "__meta_kubernetes_namespace",
	      "loki-boltdb-shipper",
	      "__meta_kubernetes_pod_container_name",
	      "promtail",
	      "__meta_kubernetes_pod_container_port_name",
	      "http-metrics",
	      "__meta_kubernetes_pod_label_name",
	      "promtail-loki-boltdb-shipper",
	      "__meta_kubernetes_pod_name",
	      "promtail-loki-boltdb-shipper-jgtr7",
	      "__meta_kubernetes_pod_phase",
	      "Running",
	      "__metrics_path__",
	      "/metrics",
	      "__scheme__",
	      "http",
	      "job",
	      "kubernetes-pods",
	      NULL},
	     {{SRC("__meta_kubernetes_pod_container_port_name"), .regex = ".*-metrics",
	       .action = PD_RELABEL_KEEP},
	      {SRC("__meta_kubernetes_pod_phase"), .regex = "Succeeded|Failed",
	       .action = PD_RELABEL_DROP},
	      {SRC("__address__", "__meta_kubernetes_pod_annotation_prometheus_io_port"),
	       .target_label = "__address__", .regex = "(.+?)(\\:\\d+)?;(\\d+)",
	       .replacement = "$1:$3"},
	      {SRC("__meta_kubernetes_namespace", "__meta_kubernetes_pod_label_name"),
	       .separator = "/", .target_label = "job"},
	      {SRC("__meta_kubernetes_pod_name", "__meta_kubernetes_pod_container_name",
	           "__meta_kubernetes_pod_container_port_name"),
	       .separator = ":", .target_label = "instance"},
	      {SRC("__address__"), .target_label = "__tmp_hash", .modulus = 3,
	       .action = PD_RELABEL_HASHMOD},
	      {SRC("__tmp_hash"), .regex = "^1$", .action = PD_RELABEL_KEEP},
	      {.regex = "__tmp_hash|__meta_.*", .action = PD_RELABEL_LABELDROP}},
	     "{__address__=\"10.132.183.40:80\", __metrics_path__=\"/metrics\", "
	     "__scheme__=\"http\", "
	     "instance=\"promtail-loki-boltdb-shipper-jgtr7:promtail:http-metrics\", "
	     "job=\"loki-boltdb-shipper/promtail-loki-boltdb-shipper\"}"},
	};
	RUN(cases);
}

/* ---- validation ------------------------------------------------------------ */

static void test_validation(void **state)
{
	const struct {
		struct pd_relabel_rule_config c;
		const char *want; /* NULL: valid */
	} v[] = {
	    {{.action = PD_RELABEL_HASHMOD, .target_label = "h", SRC("a")},
	     "relabel rule 0: relabel configuration for hashmod requires non-zero modulus"},
	    {{.action = PD_RELABEL_HASHMOD, .target_label = "h", .modulus = 0, .has_modulus = 1},
	     "relabel rule 0: relabel configuration for hashmod requires non-zero modulus"},
	    {{.action = PD_RELABEL_HASHMOD, .modulus = 3},
	     "relabel rule 0: relabel configuration for hashmod action requires 'target_label' "
	     "value"},
	    {{.action = -1, SRC("a")},
	     "relabel rule 0: relabel configuration for replace action requires 'target_label' "
	     "value"},
	    {{.action = PD_RELABEL_LOWERCASE, SRC("a")},
	     "relabel rule 0: relabel configuration for lowercase action requires 'target_label' "
	     "value"},
	    {{.action = PD_RELABEL_UPPERCASE, .target_label = ""},
	     "relabel rule 0: relabel configuration for uppercase action requires 'target_label' "
	     "value"},
	    {{.action = PD_RELABEL_KEEPEQUAL},
	     "relabel rule 0: relabel configuration for keepequal action requires 'target_label' "
	     "value"},
	    {{.action = PD_RELABEL_DROPEQUAL},
	     "relabel rule 0: relabel configuration for dropequal action requires 'target_label' "
	     "value"},
	    {{.target_label = "1abc"},
	     "relabel rule 0: \"1abc\" is invalid 'target_label' for replace action"},
	    {{.target_label = "foo.bar"},
	     "relabel rule 0: \"foo.bar\" is invalid 'target_label' for replace action"},
	    {{.target_label = "-label"},
	     "relabel rule 0: \"-label\" is invalid 'target_label' for replace action"},
	    {{.target_label = "${"},
	     "relabel rule 0: \"${\" is invalid 'target_label' for replace action"},
	    {{.target_label = "$"},
	     "relabel rule 0: \"$\" is invalid 'target_label' for replace action"},
	    {{.target_label = "${}"},
	     "relabel rule 0: \"${}\" is invalid 'target_label' for replace action"},
	    {{.target_label = "foo${"},
	     "relabel rule 0: \"foo${\" is invalid 'target_label' for replace action"},
	    {{.target_label = "-foo${1}bar-"},
	     "relabel rule 0: \"-foo${1}bar-\" is invalid 'target_label' for replace action"},
	    {{.target_label = "bar.foo${1}bar"},
	     "relabel rule 0: \"bar.foo${1}bar\" is invalid 'target_label' for replace action"},
	    {{.target_label = "$$"},
	     "relabel rule 0: \"$$\" is invalid 'target_label' for replace action"},
	    {{.target_label = "label"}, NULL},
	    {{.target_label = "label${1}"}, NULL},
	    {{.target_label = "${1}label"}, NULL},
	    {{.target_label = "${1}"}, NULL},
	    {{.target_label = "$1"}, NULL},
	    {{.target_label = "asd$2asd"}, NULL},
	    {{.target_label = "_${1}_"}, NULL},
	    {{.target_label = "foo${bar}foo"}, NULL},
	    {{.target_label = "$1x"}, NULL},
	    {{.target_label = "__address__"}, NULL},
	    {{.action = PD_RELABEL_LOWERCASE, .target_label = "${3}"},
	     "relabel rule 0: \"${3}\" is invalid 'target_label' for lowercase action"},
	    {{.action = PD_RELABEL_KEEPEQUAL, .target_label = "a-b"},
	     "relabel rule 0: \"a-b\" is invalid 'target_label' for keepequal action"},
	    {{.action = PD_RELABEL_UPPERCASE, .target_label = "t", .replacement = "x"},
	     "relabel rule 0: 'replacement' can not be set for uppercase action"},
	    {{.action = PD_RELABEL_DROPEQUAL, .target_label = "t", .replacement = ""},
	     "relabel rule 0: 'replacement' can not be set for dropequal action"},
	    {{.action = PD_RELABEL_UPPERCASE, .target_label = "t", .replacement = "$1"}, NULL},
	    {{.action = PD_RELABEL_LABELMAP, .replacement = "1x"},
	     "relabel rule 0: \"1x\" is invalid 'replacement' for labelmap action"},
	    {{.action = PD_RELABEL_LABELMAP, .replacement = "$1.x"},
	     "relabel rule 0: \"$1.x\" is invalid 'replacement' for labelmap action"},
	    {{.action = PD_RELABEL_LABELMAP, .replacement = ""},
	     "relabel rule 0: \"\" is invalid 'replacement' for labelmap action"},
	    {{.action = PD_RELABEL_LABELMAP}, NULL},
	    {{.action = PD_RELABEL_LABELMAP,
	      .replacement = "__param_$1",
	      SRC("a"),
	      .target_label = "ignored"},
	     NULL},
	    {{.action = PD_RELABEL_HASHMOD, .modulus = 2, .target_label = "a-b"},
	     "relabel rule 0: \"a-b\" is invalid 'target_label' for hashmod action"},
	    {{.action = PD_RELABEL_HASHMOD, .modulus = 2, .target_label = "$1"},
	     "relabel rule 0: \"$1\" is invalid 'target_label' for hashmod action"},
	    {{.action = PD_RELABEL_KEEPEQUAL, .target_label = "t", .regex = "(.*)"},
	     "relabel rule 0: keepequal action requires only 'source_labels' and `target_label`, "
	     "and no other fields"},
	    {{.action = PD_RELABEL_DROPEQUAL, .target_label = "t", .separator = ","},
	     "relabel rule 0: dropequal action requires only 'source_labels' and `target_label`, "
	     "and no other fields"},
	    {{.action = PD_RELABEL_KEEPEQUAL, .target_label = "t", .modulus = 4},
	     "relabel rule 0: keepequal action requires only 'source_labels' and `target_label`, "
	     "and no other fields"},
	    {{.action = PD_RELABEL_KEEPEQUAL, .target_label = "t", .separator = ";", SRC("a", "b")},
	     NULL},
	    {{.action = PD_RELABEL_LABELDROP, SRC("a")},
	     "relabel rule 0: labeldrop action requires only 'regex', and no other fields"},
	    {{.action = PD_RELABEL_LABELDROP, .source_labels = (const char *[]){NULL}},
	     "relabel rule 0: labeldrop action requires only 'regex', and no other fields"},
	    {{.action = PD_RELABEL_LABELKEEP, .target_label = "t"},
	     "relabel rule 0: labelkeep action requires only 'regex', and no other fields"},
	    {{.action = PD_RELABEL_LABELKEEP, .replacement = "x"},
	     "relabel rule 0: labelkeep action requires only 'regex', and no other fields"},
	    {{.action = PD_RELABEL_LABELDROP, .separator = ","},
	     "relabel rule 0: labeldrop action requires only 'regex', and no other fields"},
	    {{.action = PD_RELABEL_LABELDROP, .modulus = 1},
	     "relabel rule 0: labeldrop action requires only 'regex', and no other fields"},
	    {{.action = PD_RELABEL_LABELDROP,
	      .regex = "x",
	      .target_label = "",
	      .separator = ";",
	      .replacement = "$1"},
	     NULL},
	    {{.action = PD_RELABEL_KEEP, .target_label = "whatever", .modulus = 7}, NULL},
	    {{.action = PD_RELABEL_KEEP, SRC("a-b")},
	     "relabel rule 0: \"a-b\" is not a valid label name"},
	    {{.action = PD_RELABEL_DROP, SRC("job", "")},
	     "relabel rule 0: \"\" is not a valid label name"},
	    {{.action = 11}, "relabel rule 0: unknown relabel action 11"},
	    {{.action = -2}, "relabel rule 0: unknown relabel action -2"},
	    {{.action = PD_RELABEL_KEEP, .regex = "(a"},
	     "relabel rule 0: error parsing regexp \"(a\" at offset 2: missing closing ): `(a`"},
	    {{.action = PD_RELABEL_KEEP, .regex = ""}, NULL},
	    {{.action = PD_RELABEL_KEEP, .regex = "(?P<n>a)(?<m>b)"}, NULL},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct pd_relabel_rules *rs = NULL;
		struct pd_err err = {0};
		int rc = pd_relabel_rules_build(&rs, &v[i].c, 1, &err);
		if (!v[i].want) {
			if (rc != 0)
				fail_msg("case %zu: unexpected error: %s", i, err.msg);
			pd_relabel_rules_destroy(rs);
			continue;
		}
		if (rc == 0)
			fail_msg("case %zu: no error, want %s", i, v[i].want);
		assert_int_equal(rc, PD_EINVAL);
		assert_null(rs);
		if (strcmp(err.msg, v[i].want) != 0)
			fail_msg("case %zu:\n got %s\nwant %s", i, err.msg, v[i].want);
	}
}

static void test_validation_regex_and_index(void **state)
{
	struct pd_relabel_rule_config c[3] = {
	    {.action = PD_RELABEL_KEEP, .regex = "a"},
	    {.target_label = "ok"},
	    {.action = PD_RELABEL_DROP, .regex = "(a)\\1"},
	};
	struct pd_relabel_rules *rs = NULL;
	struct pd_err err = {0};

	/* the failing rule is named by index, and RE2's syntax is enforced */
	assert_int_equal(pd_relabel_rules_build(&rs, c, 3, &err), PD_EINVAL);
	assert_null(rs);
	assert_non_null(strstr(err.msg, "relabel rule 2: error parsing regexp \"(a)\\\\1\""));
	assert_non_null(strstr(err.msg, "backreferences are not supported"));

	c[2].regex = "a(?=b)";
	assert_int_equal(pd_relabel_rules_build(&rs, c, 3, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "relabel rule 2: error parsing regexp"));

	c[2].regex = "[z-a]";
	assert_int_equal(pd_relabel_rules_build(&rs, c, 3, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "relabel rule 2: error parsing regexp \"[z-a]\""));

	/* zero rules: a valid, empty rule set that keeps everything */
	assert_int_equal(pd_relabel_rules_build(&rs, NULL, 0, &err), 0);
	assert_int_equal(pd_relabel_rules_count(rs), 0);
	{
		struct pd_labels *in = mk((const char *[]){"job", "api", NULL}, NULL), *out = NULL;
		assert_int_equal(pd_relabel_process(rs, in, &out, &err), 0);
		assert_true(pd_labels_equal(in, out));
		pd_labels_destroy(in);
		pd_labels_destroy(out);
	}
	pd_relabel_rules_destroy(rs);
	pd_relabel_rules_destroy(NULL);
	assert_int_equal(pd_relabel_rules_count(NULL), 0);
}

/* ---- processing errors and limits ------------------------------------------ */

static void test_process_errors(void **state)
{
	struct pd_relabel_rules *rs;
	struct pd_labels *in, *out = NULL;
	struct pd_err err = {0};

	/* labelmap makes a name Prometheus's legacy names reject: an error at the end */
	struct pd_relabel_rule_config lm = {.regex = "__meta_(.*)", .action = PD_RELABEL_LABELMAP};
	rs = build_ok(&lm, 1);
	in = mk((const char *[]){"__meta_1x", "v", NULL}, NULL);
	assert_int_equal(pd_relabel_process(rs, in, &out, &err), PD_EINVAL);
	assert_null(out);
	assert_string_equal(err.msg, "relabeling produced an invalid label set: invalid label "
	                             "name \"1x\": must match [a-zA-Z_][a-zA-Z0-9_]*");
	pd_labels_destroy(in);
	pd_relabel_rules_destroy(rs);

	/* a value past the bound on what a rule may build */
	char big[4001];
	memset(big, 'v', 4000);
	big[4000] = '\0';
	char repl[601];
	for (int i = 0; i < 300; i++)
		memcpy(repl + 2 * i, "$1", 2);
	repl[600] = '\0';
	struct pd_relabel_rule_config huge = {SRC("a"), .target_label = "b", .replacement = repl};
	rs = build_ok(&huge, 1);
	in = mk((const char *[]){"a", big, NULL}, NULL);
	assert_int_equal(pd_relabel_process(rs, in, &out, &err), PD_ETOOBIG);
	assert_null(out);
	assert_non_null(strstr(err.msg, "relabel rule 0 (replace): a value would be longer"));
	pd_labels_destroy(in);
	pd_relabel_rules_destroy(rs);
}

/* Relabeling adds no limits of its own: 100 __meta_ labels mapped to 200. */
static void test_many_labels(void **state)
{
	struct pd_labels_limits lim = {.max_labels = 1000};
	const char *kv[202];
	char names[100][32];
	for (int i = 0; i < 100; i++) {
		snprintf(names[i], sizeof(names[i]), "__meta_pod_label_l%03d", i);
		kv[2 * i] = names[i];
		kv[2 * i + 1] = "v";
	}
	kv[200] = NULL;
	struct pd_labels *in = mk(kv, &lim), *out = NULL;
	struct pd_relabel_rule_config c = {.regex = "__meta_pod_label_(.+)",
	                                   .action = PD_RELABEL_LABELMAP};
	struct pd_relabel_rules *rs = build_ok(&c, 1);
	struct pd_err err = {0};
	assert_int_equal(pd_relabel_process(rs, in, &out, &err), 0);
	assert_int_equal(pd_labels_len(out), 200);
	assert_string_equal(pd_labels_get(out, "l042"), "v");
	pd_labels_destroy(out);
	pd_labels_destroy(in);
	pd_relabel_rules_destroy(rs);
}

/* ---- threads --------------------------------------------------------------- */

struct thread_arg {
	const struct pd_relabel_rules *rs;
	int failures;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	for (int i = 0; i < 300; i++) {
		char addr[32];
		snprintf(addr, sizeof(addr), "10.0.%d.%d:8080", i / 256, i % 256);
		struct pd_labels *in = NULL, *out = NULL;
		if (pd_labels_from_strings(&in, NULL, "__address__", addr, "__meta_x_zone", "eu",
		                           NULL) != 0 ||
		    pd_relabel_process(a->rs, in, &out, NULL) != 0 || !out ||
		    strcmp(pd_labels_get(out, "instance"), addr) != 0 ||
		    strcmp(pd_labels_get(out, "zone"), "eu") != 0)
			a->failures++;
		pd_labels_destroy(in);
		pd_labels_destroy(out);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct pd_relabel_rule_config c[] = {
	    {SRC("__address__"), .regex = "([^:]+):(\\d+)", .target_label = "instance",
	     .replacement = "$1:$2"},
	    {.regex = "__meta_x_(.+)", .action = PD_RELABEL_LABELMAP},
	};
	struct pd_relabel_rules *rs = build_ok(c, 2);
	pthread_t t[4];
	struct thread_arg a[4];
	for (int i = 0; i < 4; i++) {
		a[i].rs = rs;
		a[i].failures = 0;
		assert_int_equal(pthread_create(&t[i], NULL, thread_main, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].failures, 0);
	}
	pd_relabel_rules_destroy(rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_action_names),
	    cmocka_unit_test(test_md5_vectors),
	    cmocka_unit_test(test_hashmod),
	    cmocka_unit_test(test_hashmod_sharding),
	    cmocka_unit_test(test_expand),
	    cmocka_unit_test(test_pathological),
	    cmocka_unit_test(test_replace),
	    cmocka_unit_test(test_keep_drop),
	    cmocka_unit_test(test_equal),
	    cmocka_unit_test(test_label_actions),
	    cmocka_unit_test(test_case_actions),
	    cmocka_unit_test(test_kubernetes_pipeline),
	    cmocka_unit_test(test_validation),
	    cmocka_unit_test(test_validation_regex_and_index),
	    cmocka_unit_test(test_process_errors),
	    cmocka_unit_test(test_many_labels),
	    cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
