/* test_labels.c: unit tests of pkg/labels: label sets (builder, validation, order,
 * the persisted hash, printing and parsing), matchers with Prometheus's regex
 * semantics, and the PromQL selector parser with Prometheus's error messages.
 *
 * Expected hashes were computed independently (the system's libxxhash over the
 * name 0xff value 0xff encoding): they are the on-disk contract and must never
 * change. Expected regex results were computed with Go's regexp package, which is
 * what Prometheus matches with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <cmocka.h>

#include "profd/labels.h"

/* ---- helpers -------------------------------------------------------------- */

static struct pd_labels *mk(const char *const *kv)
{
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	struct pd_labels *ls = NULL;
	struct pd_err err = {0};
	assert_non_null(b);
	for (size_t i = 0; kv[i]; i += 2)
		assert_int_equal(pd_labels_builder_add(b, kv[i], kv[i + 1]), 0);
	assert_int_equal(pd_labels_builder_finish(b, &ls, &err), 0);
	pd_labels_builder_destroy(b);
	return ls;
}

#define LS(...) mk((const char *const[]){__VA_ARGS__, NULL})

static char *fmt_labels(const struct pd_labels *ls)
{
	char *s = pd_labels_string(ls);
	assert_non_null(s);
	return s;
}

static void assert_labels_string(const struct pd_labels *ls, const char *want)
{
	char *s = fmt_labels(ls);
	assert_string_equal(s, want);
	free(s);
}

/* The matchers of a selector, each formatted, joined by "," */
static char *fmt_matchers(const struct pd_labels_selector *s)
{
	struct pd_buf b;
	size_t len;
	pd_buf_init(&b, 0);
	for (size_t i = 0; i < s->nmatchers; i++) {
		if (i)
			assert_int_equal(pd_buf_append(&b, ",", 1), 0);
		assert_int_equal(pd_labels_matcher_format(s->matchers[i], &b), 0);
	}
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	return (char *)pd_buf_steal(&b, &len);
}

static int parse_sel(const char *in, struct pd_labels_selector **s, struct pd_err *err)
{
	return pd_labels_selector_parse(s, in, strlen(in), NULL, err);
}

/* ---- XXH64 and the label-set hash ---------------------------------------- */

static void test_xxh64_vectors(void **state)
{
	unsigned char buf[300];
	for (int i = 0; i < 300; i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	assert_int_equal(pd_labels_xxh64("", 0, 0), 0xef46db3751d8e999ULL);
	assert_int_equal(pd_labels_xxh64("a", 1, 0), 0xd24ec4f1a98c6e5bULL);
	assert_int_equal(pd_labels_xxh64("abc", 3, 0), 0x44bc2cf5ad770999ULL);
	/* one stripe, several stripes with a tail, with and without a seed */
	assert_int_equal(pd_labels_xxh64(buf, 32, 0), 0x23c3c17ef790fd97ULL);
	assert_int_equal(pd_labels_xxh64(buf, 32, 12345), 0x244c3905cf320c2dULL);
	assert_int_equal(pd_labels_xxh64(buf, 100, 0), 0xa61f8d4c170fe531ULL);
	assert_int_equal(pd_labels_xxh64(buf, 100, 12345), 0xacb8a02891fea7d2ULL);
	assert_int_equal(pd_labels_xxh64(buf, 256, 0), 0x00cfc5207dd8e201ULL);
	assert_int_equal(pd_labels_xxh64(buf, 256, 12345), 0x0af5e77bd97db601ULL);
}

static void test_hash_stable(void **state)
{
	struct pd_labels *ls;
	struct pd_labels_builder *b;
	struct pd_err err = {0};

	/* the on-disk contract: these values must never change */
	ls = LS("job", "api", "__name__", "heap", "instance", "a:1");
	assert_int_equal(pd_labels_hash(ls), 0xd08b87e68d3e96edULL);
	pd_labels_destroy(ls);

	ls = LS("__name__", "heap");
	assert_int_equal(pd_labels_hash(ls), 0xaab43ae25098e8dbULL);
	pd_labels_destroy(ls);

	ls = LS("job", "api");
	assert_int_equal(pd_labels_hash(ls), 0xbb09b45a74ce66b8ULL);
	pd_labels_destroy(ls);

	ls = LS("a", "1", "b", "2");
	assert_int_equal(pd_labels_hash(ls), 0xcc47a7b231134517ULL);
	pd_labels_destroy(ls);

	ls = LS("__name__", "heap", "instance", "10.0.0.7:8080", "job", "api");
	assert_int_equal(pd_labels_hash(ls), 0xb6768a3bf0063e3cULL);
	pd_labels_destroy(ls);

	ls = LS("path", "/d\xc3\xa9\n\"x\\", "job", "api", "__name__", "goroutine", "instance",
	        "10.0.0.7:8080");
	assert_int_equal(pd_labels_hash(ls), 0x602503a7c0f24a9fULL);
	pd_labels_destroy(ls);

	/* the empty set hashes the empty string */
	assert_int_equal(pd_labels_from_strings(&ls, &err, NULL), 0);
	assert_int_equal(pd_labels_len(ls), 0);
	assert_int_equal(pd_labels_hash(ls), 0xef46db3751d8e999ULL);
	pd_labels_destroy(ls);

	/* 40 labels, crossing many 32-byte stripes in the streaming hash */
	b = pd_labels_builder_create(NULL);
	for (int i = 39; i >= 0; i--) {
		char n[16], v[64];
		snprintf(n, sizeof(n), "l%02d", i);
		int k = snprintf(v, sizeof(v), "value-%d-", i);
		memset(v + k, 'x', (size_t)i);
		v[k + i] = '\0';
		assert_int_equal(pd_labels_builder_add(b, n, v), 0);
	}
	assert_int_equal(pd_labels_builder_finish(b, &ls, &err), 0);
	assert_int_equal(pd_labels_len(ls), 40);
	assert_int_equal(pd_labels_hash(ls), 0x4b11450b3cba3547ULL);
	pd_labels_destroy(ls);
	pd_labels_builder_destroy(b);
}

static void test_hash_distinguishes(void **state)
{
	/* the 0xff separators (never in UTF-8) keep shifted boundaries apart */
	struct pd_labels *a = LS("a", "bc"), *b = LS("ab", "c"), *c = LS("a", "b", "c", "d"),
	                 *d = LS("a", "bc", "d", "x");
	assert_int_not_equal(pd_labels_hash(a), pd_labels_hash(b));
	assert_int_not_equal(pd_labels_hash(a), pd_labels_hash(c));
	assert_int_not_equal(pd_labels_hash(a), pd_labels_hash(d));
	pd_labels_destroy(a);
	pd_labels_destroy(b);
	pd_labels_destroy(c);
	pd_labels_destroy(d);
}

/* ---- label sets and the builder ------------------------------------------ */

static void test_builder_sorts_and_gets(void **state)
{
	struct pd_labels *ls = LS("job", "api", "__name__", "heap", "instance", "a:1", "Zed", "z");
	const char *names[] = {"Zed", "__name__", "instance", "job"}; /* bytewise order */

	assert_int_equal(pd_labels_len(ls), 4);
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(pd_labels_at(ls, i)->name, names[i]);
		assert_int_equal(pd_labels_at(ls, i)->name_len, strlen(names[i]));
	}
	assert_null(pd_labels_at(ls, 4));
	assert_string_equal(pd_labels_get(ls, "job"), "api");
	assert_string_equal(pd_labels_get(ls, "__name__"), "heap");
	assert_string_equal(pd_labels_get(ls, "Zed"), "z");
	assert_null(pd_labels_get(ls, "nope"));
	assert_null(pd_labels_get(ls, ""));

	struct pd_labels *c = pd_labels_dup(ls);
	assert_non_null(c);
	assert_true(pd_labels_equal(ls, c));
	assert_int_equal(pd_labels_compare(ls, c), 0);
	assert_int_equal(pd_labels_hash(ls), pd_labels_hash(c));
	pd_labels_destroy(ls); /* the copy owns its own strings */
	assert_string_equal(pd_labels_get(c, "instance"), "a:1");
	pd_labels_destroy(c);
	pd_labels_destroy(NULL);
}

static void test_builder_set_del_reset(void **state)
{
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	struct pd_labels *ls, *ls2;
	struct pd_err err = {0};

	assert_int_equal(pd_labels_builder_set(b, "job", "api"), 0);
	assert_int_equal(pd_labels_builder_set(b, "instance", "a:1"), 0);
	assert_int_equal(pd_labels_builder_set(b, "job", "web"), 0); /* replaces */
	assert_string_equal(pd_labels_builder_get(b, "job"), "web");
	assert_int_equal(pd_labels_builder_add(b, "empty", ""), 0); /* adds nothing */
	assert_null(pd_labels_builder_get(b, "empty"));
	assert_int_equal(pd_labels_builder_finish(b, &ls, &err), 0);
	assert_labels_string(ls, "{instance=\"a:1\", job=\"web\"}");

	/* the builder keeps its labels: derive a second set */
	assert_int_equal(pd_labels_builder_set(b, "instance", ""), 0); /* "" deletes */
	assert_int_equal(pd_labels_builder_set(b, "__name__", "heap"), 0);
	assert_int_equal(pd_labels_builder_finish(b, &ls2, &err), 0);
	assert_labels_string(ls2, "heap{job=\"web\"}");
	pd_labels_destroy(ls2);

	/* reset from a base, then change it */
	assert_int_equal(pd_labels_builder_reset(b, ls), 0);
	assert_int_equal(pd_labels_builder_del(b, "job"), 0);
	assert_int_equal(pd_labels_builder_del(b, "absent"), 0);
	assert_int_equal(pd_labels_builder_add(b, "zone", "eu"), 0);
	assert_int_equal(pd_labels_builder_finish(b, &ls2, &err), 0);
	assert_labels_string(ls2, "{instance=\"a:1\", zone=\"eu\"}");
	pd_labels_destroy(ls2);

	/* set replaces every copy that add left behind */
	assert_int_equal(pd_labels_builder_reset(b, NULL), 0);
	assert_int_equal(pd_labels_builder_add(b, "a", "1"), 0);
	assert_int_equal(pd_labels_builder_add(b, "a", "2"), 0);
	assert_int_equal(pd_labels_builder_set(b, "a", "3"), 0);
	assert_int_equal(pd_labels_builder_finish(b, &ls2, &err), 0);
	assert_labels_string(ls2, "{a=\"3\"}");
	pd_labels_destroy(ls2);

	pd_labels_destroy(ls);
	pd_labels_builder_destroy(b);
	pd_labels_builder_destroy(NULL);
}

struct builder_err_case {
	const char *name, *value;
	int code;
	const char *msg;
};

static void test_builder_errors(void **state)
{
	char longname[300], longvalue[5000];
	memset(longname, 'n', 257);
	longname[257] = '\0';
	memset(longvalue, 'v', 4097);
	longvalue[4097] = '\0';
	const struct builder_err_case cases[] = {
	    {"1abc", "x", PD_EINVAL,
	     "invalid label name \"1abc\": must match [a-zA-Z_][a-zA-Z0-9_]*"},
	    {"a-b", "x", PD_EINVAL,
	     "invalid label name \"a-b\": must match [a-zA-Z_][a-zA-Z0-9_]*"},
	    {"", "x", PD_EINVAL, "invalid label name \"\": must match [a-zA-Z_][a-zA-Z0-9_]*"},
	    {"caf\xc3\xa9", "x", PD_EINVAL,
	     "invalid label name \"caf\xc3\xa9\": must match [a-zA-Z_][a-zA-Z0-9_]*"},
	    {"path", "bad \xff utf8", PD_EINVAL, "invalid UTF-8 in value of label \"path\""},
	    {"path", "\xc0\xaf", PD_EINVAL, "invalid UTF-8 in value of label \"path\""},
	    {"path", "\xed\xa0\x80", PD_EINVAL, "invalid UTF-8 in value of label \"path\""},
	    {longname, "x", PD_ETOOBIG, NULL},
	    {"big", longvalue, PD_ETOOBIG,
	     "value of label \"big\" is 4097 bytes long, more than the limit of 4096"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_builder *b = pd_labels_builder_create(NULL);
		struct pd_labels *ls = (struct pd_labels *)1;
		struct pd_err err = {0};
		assert_int_equal(pd_labels_builder_add(b, "ok", "1"), 0);
		assert_int_equal(pd_labels_builder_add(b, cases[i].name, cases[i].value),
		                 cases[i].code);
		/* sticky: later calls do nothing and finish reports the first error */
		assert_int_equal(pd_labels_builder_add(b, "fine", "1"), cases[i].code);
		assert_int_equal(pd_labels_builder_finish(b, &ls, &err), cases[i].code);
		assert_null(ls);
		assert_int_equal(err.code, cases[i].code);
		if (cases[i].msg)
			assert_string_equal(err.msg, cases[i].msg);
		else
			assert_non_null(strstr(err.msg, "more than the limit of 256"));
		/* reset clears the sticky error */
		assert_int_equal(pd_labels_builder_reset(b, NULL), 0);
		assert_int_equal(pd_labels_builder_finish(b, &ls, &err), 0);
		pd_labels_destroy(ls);
		pd_labels_builder_destroy(b);
	}
}

static void test_builder_duplicates_and_limits(void **state)
{
	struct pd_labels_builder *b = pd_labels_builder_create(NULL);
	struct pd_labels *ls;
	struct pd_err err = {0};

	assert_int_equal(pd_labels_builder_add(b, "job", "a"), 0);
	assert_int_equal(pd_labels_builder_add(b, "zone", "x"), 0);
	assert_int_equal(pd_labels_builder_add(b, "job", "b"), 0);
	assert_int_equal(pd_labels_builder_finish(b, &ls, &err), PD_EINVAL);
	assert_string_equal(err.msg, "label name \"job\" is not unique");
	pd_labels_builder_destroy(b);

	/* custom limits */
	struct pd_labels_limits lim = {.max_labels = 3, .max_name_len = 4, .max_value_len = 5};
	b = pd_labels_builder_create(&lim);
	assert_int_equal(pd_labels_builder_add(b, "a", "1"), 0);
	assert_int_equal(pd_labels_builder_add(b, "b", "12345"), 0);
	assert_int_equal(pd_labels_builder_add(b, "c", "1"), 0);
	assert_int_equal(pd_labels_builder_set(b, "c", "2"), 0); /* replacing is fine */
	assert_int_equal(pd_labels_builder_add(b, "d", "1"), PD_ETOOBIG);
	assert_int_equal(pd_labels_builder_finish(b, &ls, &err), PD_ETOOBIG);
	assert_string_equal(err.msg, "too many labels: adding \"d\" makes 4, limit is 3");
	pd_labels_builder_reset(b, NULL);
	assert_int_equal(pd_labels_builder_add(b, "abcde", "1"), PD_ETOOBIG);
	assert_int_equal(pd_labels_builder_finish(b, &ls, &err), PD_ETOOBIG);
	assert_string_equal(err.msg,
	                    "label name \"abcde\" is 5 bytes long, more than the limit of 4");
	pd_labels_builder_reset(b, NULL);
	assert_int_equal(pd_labels_builder_add(b, "v", "123456"), PD_ETOOBIG);
	pd_labels_builder_destroy(b);

	/* the default of 64 labels */
	b = pd_labels_builder_create(NULL);
	for (int i = 0; i < 64; i++) {
		char n[16];
		snprintf(n, sizeof(n), "l%d", i);
		assert_int_equal(pd_labels_builder_add(b, n, "v"), 0);
	}
	assert_int_equal(pd_labels_builder_add(b, "one_more", "v"), PD_ETOOBIG);
	assert_int_equal(pd_labels_builder_finish(b, &ls, &err), PD_ETOOBIG);
	assert_string_equal(err.msg, "too many labels: adding \"one_more\" makes 65, limit is 64");
	pd_labels_builder_destroy(b);

	/* from_strings */
	assert_int_equal(pd_labels_from_strings(&ls, &err, "b", "2", "a", "1", NULL), 0);
	assert_labels_string(ls, "{a=\"1\", b=\"2\"}");
	pd_labels_destroy(ls);
	assert_int_equal(pd_labels_from_strings(&ls, &err, "a", "1", "a", "2", NULL), PD_EINVAL);
	assert_string_equal(err.msg, "label name \"a\" is not unique");
	assert_int_equal(pd_labels_from_strings(&ls, &err, "a", NULL), PD_EINVAL);
}

static void test_valid_names(void **state)
{
	assert_true(pd_labels_valid_name("job"));
	assert_true(pd_labels_valid_name("_"));
	assert_true(pd_labels_valid_name("__name__"));
	assert_true(pd_labels_valid_name("A9_z"));
	assert_false(pd_labels_valid_name(""));
	assert_false(pd_labels_valid_name("9a"));
	assert_false(pd_labels_valid_name("a:b"));
	assert_false(pd_labels_valid_name("a.b"));
	assert_false(pd_labels_valid_name(NULL));

	assert_true(pd_labels_valid_metric_name("heap"));
	assert_true(pd_labels_valid_metric_name("a:b:c"));
	assert_true(pd_labels_valid_metric_name(":x"));
	assert_true(pd_labels_valid_metric_name("sum")); /* aggregators are fine */
	assert_true(pd_labels_valid_metric_name("offset"));
	assert_false(pd_labels_valid_metric_name("bool"));
	assert_false(pd_labels_valid_metric_name("Inf"));
	assert_false(pd_labels_valid_metric_name("NaN"));
	assert_false(pd_labels_valid_metric_name("group_left"));
	assert_false(pd_labels_valid_metric_name("my type"));
	assert_false(pd_labels_valid_metric_name("1x"));
	assert_false(pd_labels_valid_metric_name(""));
}

static void test_compare(void **state)
{
	/* Prometheus's TestLabels_Compare */
	struct pd_labels *base = LS("aaa", "111", "bbb", "222");
	struct {
		struct pd_labels *other;
		int want;
	} cases[] = {
	    {LS("aaa", "111", "bbb", "233"), -1},
	    {LS("aaa", "111", "bar", "222"), 1},
	    {LS("aaa", "111", "bbc", "222"), -1},
	    {LS("aaa", "111", "bb", "222"), 1},
	    {LS("aaa", "111"), 1},
	    {LS("aaa", "111", "bbb", "222", "ccc", "333"), -1},
	    {LS("aaa", "111", "bbb", "222"), 0},
	    {LS("bbb", "222"), -1},
	    {LS("aaa", "\xc3\xa9", "bbb", "222"), -1}, /* bytewise: 0xc3 > '1' */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int c = pd_labels_compare(base, cases[i].other);
		int sign = c < 0 ? -1 : c > 0 ? 1 : 0;
		assert_int_equal(sign, cases[i].want);
		c = pd_labels_compare(cases[i].other, base);
		sign = c < 0 ? -1 : c > 0 ? 1 : 0;
		assert_int_equal(sign, -cases[i].want);
		assert_int_equal(pd_labels_equal(base, cases[i].other), cases[i].want == 0);
		pd_labels_destroy(cases[i].other);
	}
	pd_labels_destroy(base);
}

/* ---- printing and parsing label sets ------------------------------------- */

static void test_format(void **state)
{
	struct pd_labels *ls;

	ls = LS("job", "api", "__name__", "heap", "instance", "a:1");
	assert_labels_string(ls, "heap{instance=\"a:1\", job=\"api\"}");
	pd_labels_destroy(ls);

	ls = LS("__name__", "heap");
	assert_labels_string(ls, "heap");
	pd_labels_destroy(ls);

	ls = LS("job", "api");
	assert_labels_string(ls, "{job=\"api\"}");
	pd_labels_destroy(ls);

	assert_int_equal(pd_labels_from_strings(&ls, NULL, NULL), 0);
	assert_labels_string(ls, "{}");
	pd_labels_destroy(ls);

	/* a name that cannot stand bare is printed as a label, first */
	ls = LS("__name__", "my type", "A", "1", "job", "x");
	assert_labels_string(ls, "{__name__=\"my type\", A=\"1\", job=\"x\"}");
	pd_labels_destroy(ls);
	ls = LS("__name__", "bool");
	assert_labels_string(ls, "{__name__=\"bool\"}");
	pd_labels_destroy(ls);

	/* Go's strconv.Quote */
	ls = LS("a",
	        "q\"b\\s\nt\tc\x01"
	        "d\x7f",
	        "b", "caf\xc3\xa9 \xe2\x98\xba \xf0\x9d\x84\x9e", "c",
	        "zw\xe2\x80\x8bsp\xc2\xa0nb\xef\xbb\xbf", "d", "\a\b\f\r\v", "e",
	        "pu\xee\x80\x80 \xf3\xb0\x80\x80");
	assert_labels_string(ls, "{a=\"q\\\"b\\\\s\\nt\\tc\\x01d\\x7f\", "
	                         "b=\"caf\xc3\xa9 \xe2\x98\xba \xf0\x9d\x84\x9e\", "
	                         "c=\"zw\\u200bsp\\u00a0nb\\ufeff\", "
	                         "d=\"\\a\\b\\f\\r\\v\", "
	                         "e=\"pu\\ue000 \\U000f0000\"}");
	pd_labels_destroy(ls);

	/* the buffer limit is respected */
	struct pd_buf b;
	pd_buf_init(&b, 8);
	ls = LS("job", "a-long-value");
	assert_int_equal(pd_labels_format(ls, &b), PD_ETOOBIG);
	pd_buf_fini(&b);
	pd_labels_destroy(ls);
}

static void test_quote(void **state)
{
	/* expected outputs are Go's strconv.Quote */
	static const struct {
		const char *in;
		size_t len;
		const char *want;
	} cases[] = {
	    {"", 0, "\"\""},
	    {"abc", 3, "\"abc\""},
	    {"\x00\x01\x1f\x7f", 4, "\"\\x00\\x01\\x1f\\x7f\""},
	    {"\xff", 1, "\"\\xff\""},
	    {"a\xc3", 2, "\"a\\xc3\""},
	    {"\xed\xa0\x80", 3, "\"\\xed\\xa0\\x80\""},
	    {"\xc0\xaf", 2, "\"\\xc0\\xaf\""},
	    {"\xf4\x90\x80\x80", 4, "\"\\xf4\\x90\\x80\\x80\""},
	    {"\xe2\x82", 2, "\"\\xe2\\x82\""},
	    {"\xef\xbf\xbd", 3, "\"\xef\xbf\xbd\""}, /* a real U+FFFD prints */
	    {"\xcd\xb8", 2, "\"\\u0378\""},          /* unassigned */
	    {"\xe2\x80\xa8\xe2\x80\xa9", 6, "\"\\u2028\\u2029\""},
	    {"\xc2\xad", 2, "\"\\u00ad\""},
	    {"'`", 2, "\"'`\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_buf b;
		pd_buf_init(&b, 0);
		assert_int_equal(pd_labels_quote(&b, cases[i].in, cases[i].len), 0);
		assert_int_equal(pd_buf_append(&b, "", 1), 0);
		assert_string_equal((const char *)b.data, cases[i].want);
		pd_buf_fini(&b);
	}
}

static void test_parse_labels(void **state)
{
	struct pd_labels *ls;
	struct pd_err err = {0};

	assert_int_equal(pd_labels_parse(&ls, "{job=\"x\"}", NULL, &err), 0);
	assert_labels_string(ls, "{job=\"x\"}");
	pd_labels_destroy(ls);

	assert_int_equal(pd_labels_parse(&ls, " heap { job = 'x' , instance=`a:1`, } ", NULL, &err),
	                 0);
	assert_labels_string(ls, "heap{instance=\"a:1\", job=\"x\"}");
	pd_labels_destroy(ls);

	assert_int_equal(pd_labels_parse(&ls, "heap", NULL, &err), 0);
	assert_labels_string(ls, "heap");
	pd_labels_destroy(ls);

	const char *empties[] = {"", "  ", "{}", "{a=\"\"}", "# just a comment"};
	for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		assert_int_equal(pd_labels_parse(&ls, empties[i], NULL, &err), 0);
		assert_int_equal(pd_labels_len(ls), 0);
		pd_labels_destroy(ls);
	}

	/* Prometheus 3's quoted names, if the name is one profd can store */
	assert_int_equal(pd_labels_parse(&ls, "{\"job\"=\"x\"}", NULL, &err), 0);
	assert_labels_string(ls, "{job=\"x\"}");
	pd_labels_destroy(ls);
	assert_int_equal(pd_labels_parse(&ls, "{__name__=\"a b\"}", NULL, &err), 0);
	assert_labels_string(ls, "{__name__=\"a b\"}");
	pd_labels_destroy(ls);

	static const struct {
		const char *in;
		int code;
		const char *msg;
	} bad[] = {
	    {"{a!=\"b\"}", PD_EINVAL,
	     "1:3: parse error: unexpected <op:!=> in label set, expected \"=\""},
	    {"{a=~\"b\"}", PD_EINVAL,
	     "1:3: parse error: unexpected <op:=~> in label set, expected \"=\""},
	    {"{a=b}", PD_EINVAL,
	     "1:4: parse error: unexpected identifier \"b\" in label set, expected string"},
	    {"{a=\"1\" b=\"2\"}", PD_EINVAL,
	     "1:8: parse error: unexpected identifier \"b\" in label set, expected \",\" or \"}\""},
	    {"{,}", PD_EINVAL,
	     "1:2: parse error: unexpected \",\" in label set, expected identifier or \"}\""},
	    {"{a=\"1\",a=\"2\"}", PD_EINVAL, "1:8: parse error: label name \"a\" is not unique"},
	    {"heap{__name__=\"x\"}", PD_EINVAL,
	     "1:1: parse error: metric name must not be set twice: \"heap\" or \"x\""},
	    {"{\"a.b\"=\"x\"}", PD_EINVAL,
	     "1:2: parse error: invalid label name \"a.b\": profd label names must match "
	     "[a-zA-Z_][a-zA-Z0-9_]*"},
	    {"{a=\"\\xff\"}", PD_EINVAL, "1:2: parse error: invalid UTF-8 in value of label \"a\""},
	    {"heap job", PD_EINVAL,
	     "1:6: parse error: unexpected identifier \"job\" after label set"},
	    {"{a=\"x\"} {b=\"y\"}", PD_EINVAL,
	     "1:9: parse error: unexpected \"{\" after label set"},
	    {"{a=\"x\"", PD_EINVAL, "1:7: parse error: unexpected end of input inside braces"},
	    {"bool", PD_EINVAL, "1:1: parse error: unexpected <bool>"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ls = (struct pd_labels *)1;
		assert_int_equal(pd_labels_parse(&ls, bad[i].in, NULL, &err), bad[i].code);
		assert_null(ls);
		assert_string_equal(err.msg, bad[i].msg);
	}

	struct pd_labels_limits lim = {.max_labels = 2};
	assert_int_equal(pd_labels_parse(&ls, "x{a=\"1\",b=\"2\"}", &lim, &err), PD_ETOOBIG);
	assert_string_equal(err.msg,
	                    "1:9: parse error: too many labels: adding \"b\" makes 3, limit is 2");
}

static void test_format_parse_roundtrip(void **state)
{
	static const char *const values[] = {
	    "plain",
	    "with \"quotes\" and 'single' and `back`",
	    "back\\slash\\",
	    "new\nline\r\n",
	    "tab\there\v\f\a\b",
	    "caf\xc3\xa9 \xe2\x98\xba \xf0\x9f\x98\x80 \xe4\xb8\xad\xe6\x96\x87",
	    "ctl\x01\x1f\x7f",
	    "zero\xe2\x80\x8bwidth\xc2\xa0nbsp\xef\xbb\xbf",
	    "private\xee\x80\x80 \xf4\x8f\xbf\xbf",
	    "#not a comment",
	    "{braces}=,",
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		struct pd_labels *ls = LS("__name__", "heap", "v", values[i], "job", "api"), *back;
		struct pd_err err = {0};
		char *s = fmt_labels(ls);
		assert_int_equal(pd_labels_parse(&back, s, NULL, &err), 0);
		assert_true(pd_labels_equal(ls, back));
		assert_int_equal(pd_labels_hash(ls), pd_labels_hash(back));

		/* and the printed value works as an equality matcher */
		char sel[512];
		struct pd_labels_selector *sl;
		struct pd_labels_matcher *m;
		snprintf(sel, sizeof(sel), "%s", strchr(s, '{'));
		assert_int_equal(parse_sel(sel, &sl, &err), 0);
		assert_true(pd_labels_selector_matches(sl, ls));
		pd_labels_selector_destroy(sl);
		assert_int_equal(
		    pd_labels_matcher_create(&m, PD_LABELS_MATCH_EQUAL, "v", values[i], &err), 0);
		assert_true(pd_labels_matches(ls, &m, 1));
		pd_labels_matcher_destroy(m);

		free(s);
		pd_labels_destroy(back);
		pd_labels_destroy(ls);
	}
	/* a name that is not a bare metric name round-trips too */
	struct pd_labels *ls = LS("__name__", "heap in-use", "job", "a"), *back;
	char *s = fmt_labels(ls);
	assert_int_equal(pd_labels_parse(&back, s, NULL, NULL), 0);
	assert_true(pd_labels_equal(ls, back));
	free(s);
	pd_labels_destroy(back);
	pd_labels_destroy(ls);
}

/* ---- matchers ------------------------------------------------------------- */

static struct pd_labels_matcher *mm(enum pd_labels_match_type t, const char *name,
                                    const char *value)
{
	struct pd_labels_matcher *m;
	struct pd_err err = {0};
	int rc = pd_labels_matcher_create(&m, t, name, value, &err);
	if (rc)
		fail_msg("matcher %s %s: %s", name, value, err.msg);
	return m;
}

static void test_matcher_basics(void **state)
{
	struct pd_labels_matcher *eq = mm(PD_LABELS_MATCH_EQUAL, "job", "api");
	struct pd_labels_matcher *ne = mm(PD_LABELS_MATCH_NOT_EQUAL, "job", "api");
	struct pd_labels_matcher *re = mm(PD_LABELS_MATCH_REGEXP, "job", "a.*");
	struct pd_labels_matcher *nre = mm(PD_LABELS_MATCH_NOT_REGEXP, "job", "a.*");

	assert_true(pd_labels_matcher_matches(eq, "api"));
	assert_false(pd_labels_matcher_matches(eq, "apix"));
	assert_false(pd_labels_matcher_matches(ne, "api"));
	assert_true(pd_labels_matcher_matches(ne, "web"));
	assert_true(pd_labels_matcher_matches(re, "api"));
	assert_false(pd_labels_matcher_matches(re, "xapi"));
	assert_false(pd_labels_matcher_matches(nre, "api"));
	assert_true(pd_labels_matcher_matches(nre, "web"));

	assert_int_equal(pd_labels_matcher_type(nre), PD_LABELS_MATCH_NOT_REGEXP);
	assert_string_equal(pd_labels_matcher_name(re), "job");
	assert_string_equal(pd_labels_matcher_value(re), "a.*");
	assert_string_equal(pd_labels_match_type_string(PD_LABELS_MATCH_EQUAL), "=");
	assert_string_equal(pd_labels_match_type_string(PD_LABELS_MATCH_NOT_EQUAL), "!=");
	assert_string_equal(pd_labels_match_type_string(PD_LABELS_MATCH_REGEXP), "=~");
	assert_string_equal(pd_labels_match_type_string(PD_LABELS_MATCH_NOT_REGEXP), "!~");

	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_labels_matcher_format(nre, &b), 0);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	assert_string_equal((char *)b.data, "job!~\"a.*\"");
	pd_buf_fini(&b);

	pd_labels_matcher_destroy(eq);
	pd_labels_matcher_destroy(ne);
	pd_labels_matcher_destroy(re);
	pd_labels_matcher_destroy(nre);
	pd_labels_matcher_destroy(NULL);

	struct pd_labels_matcher *m;
	struct pd_err err = {0};
	assert_int_equal(pd_labels_matcher_create(&m, PD_LABELS_MATCH_EQUAL, "a.b", "x", &err),
	                 PD_EINVAL);
	assert_string_equal(err.msg,
	                    "invalid label name \"a.b\": must match [a-zA-Z_][a-zA-Z0-9_]*");
	assert_int_equal(pd_labels_matcher_create(&m, (enum pd_labels_match_type)7, "a", "x", &err),
	                 PD_EINVAL);
}

static void test_missing_label_semantics(void **state)
{
	/* a missing label matches as "" does (Prometheus semantics) */
	static const struct {
		enum pd_labels_match_type t;
		const char *value;
		int on_missing; /* also matches_empty */
	} cases[] = {
	    {PD_LABELS_MATCH_EQUAL, "", 1},        {PD_LABELS_MATCH_EQUAL, "x", 0},
	    {PD_LABELS_MATCH_NOT_EQUAL, "", 0},    {PD_LABELS_MATCH_NOT_EQUAL, "x", 1},
	    {PD_LABELS_MATCH_REGEXP, "", 1},       {PD_LABELS_MATCH_REGEXP, ".*", 1},
	    {PD_LABELS_MATCH_REGEXP, ".+", 0},     {PD_LABELS_MATCH_REGEXP, "x|", 1},
	    {PD_LABELS_MATCH_REGEXP, "x*", 1},     {PD_LABELS_MATCH_REGEXP, "x", 0},
	    {PD_LABELS_MATCH_NOT_REGEXP, ".*", 0}, {PD_LABELS_MATCH_NOT_REGEXP, ".+", 1},
	    {PD_LABELS_MATCH_NOT_REGEXP, "", 0},   {PD_LABELS_MATCH_NOT_REGEXP, "x", 1},
	};
	struct pd_labels *without = LS("__name__", "heap", "instance", "a:1");
	struct pd_labels *with = LS("__name__", "heap", "job", "x");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_matcher *m = mm(cases[i].t, "job", cases[i].value);
		assert_int_equal(pd_labels_matcher_matches(m, NULL), cases[i].on_missing);
		assert_int_equal(pd_labels_matcher_matches(m, ""), cases[i].on_missing);
		assert_int_equal(pd_labels_matcher_matches_empty(m), cases[i].on_missing);
		assert_int_equal(pd_labels_matches(without, &m, 1), cases[i].on_missing);
		pd_labels_matcher_destroy(m);
	}

	/* job="" selects exactly the series without a job label; job!="" the others */
	struct pd_labels_selector *s;
	struct pd_err err = {0};
	assert_int_equal(parse_sel("heap{job=\"\"}", &s, &err), 0);
	assert_true(pd_labels_selector_matches(s, without));
	assert_false(pd_labels_selector_matches(s, with));
	pd_labels_selector_destroy(s);
	assert_int_equal(parse_sel("heap{job!=\"\"}", &s, &err), 0);
	assert_false(pd_labels_selector_matches(s, without));
	assert_true(pd_labels_selector_matches(s, with));
	pd_labels_selector_destroy(s);
	pd_labels_destroy(without);
	pd_labels_destroy(with);
}

/* Values each regex below is tried against; expected bits computed with Go. */
static const char *const re_values[] = {
    "",         "a",   "b",       "ab",       "abc",      "ABC",          "a\nb",
    "\n",       "aa",  "123",     "x\vy",     "x y",      "\xe2\x98\xba", "\xc3\xa9",
    "\xc3\x89", "foo", "a foo b", "\xcf\x83", "\xce\xa3", "\xcf\x82",     "\xe2\x84\xaa",
    "k",        "a-b", "1z-",     "a\n",
};

static void test_regex_semantics(void **state)
{
	static const struct {
		const char *re;
		const char *bits; /* one per re_values entry: Go's regexp, anchored as Prometheus */
	} cases[] = {
	    {"a", "0100000000000000000000000"},
	    {"a|b", "0110000000000000000000000"},
	    {"(?i)abc", "0000110000000000000000000"},
	    {"a.b", "0000001000000000000000100"},
	    {".*", "1111111111111111111111111"},
	    {".+", "0111111111111111111111111"},
	    {"", "1000000000000000000000000"},
	    {"a*", "1100000010000000000000000"},
	    {"[a-c]+", "0111100010000000000000000"},
	    {"\\d+", "0000000001000000000000000"},
	    {"\\w+", "0111110011000001000001000"},
	    {"\\s", "0000000100000000000000000"},
	    {"\\S+", "0111110011101111011111110"},
	    {"x\\vy", "0000000000100000000000000"},
	    {"x\\sy", "0000000000010000000000000"},
	    {"\\x{263a}", "0000000000001000000000000"},
	    {"(?-s).", "0110000000001110011111000"},
	    {"(?s).", "0110000100001110011111000"},
	    {"(?m)^a$", "0100000000000000000000000"},
	    {"a$", "0100000000000000000000000"},
	    {"(?U)a+", "0100000010000000000000000"},
	    {"a{2}", "0000000010000000000000000"},
	    {"a{,3}", "0000000000000000000000000"},
	    {"\\Qa.b\\E", "0000000000000000000000000"},
	    {"[[:alpha:]]+", "0111110010000001000001000"},
	    {"[[:^digit:]]+", "0111111110111111111111101"},
	    {"\\pL+", "0111110010000111011111000"},
	    {"\\PL", "0000000100001000000000000"},
	    {"[^a]", "0010000100001110011111000"},
	    {"\xc3\xa9", "0000000000000100000000000"},
	    {"(?i)\xc3\xa9", "0000000000000110000000000"},
	    {"(?i)\xcf\x83", "0000000000000000011100000"},
	    {"(?i)k", "0000000000000000000011000"},
	    {"\\bfoo\\b", "0000000000000001000000000"},
	    {"(a|b)*c", "0000100000000000000000000"},
	    {"(?P<n>a)b", "0001000000000000000000000"},
	    {"[\\d-z]+", "0000000001000000000000010"},
	    {"[\\s]+", "0000000100000000000000000"},
	    {"\\W+", "0000000100001110011110000"},
	    {"\\D+", "0111111110111111111111101"},
	    {"(?i:A)b", "0001000000000000000000000"},
	    {"(?m)a$", "0100000000000000000000000"},
	    {"(?)a", "0100000000000000000000000"},
	    {"a.*b", "0001001000000000100000100"},
	    {"[^\\n]+", "0111110011111111111111110"},
	    {"(?i)[a-c]+", "0111110010000000000000000"},
	};
	const size_t nv = sizeof(re_values) / sizeof(re_values[0]);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_matcher *m = mm(PD_LABELS_MATCH_REGEXP, "v", cases[i].re);
		struct pd_labels_matcher *n = mm(PD_LABELS_MATCH_NOT_REGEXP, "v", cases[i].re);
		assert_int_equal(strlen(cases[i].bits), nv);
		for (size_t j = 0; j < nv; j++) {
			int want = cases[i].bits[j] == '1';
			if (pd_labels_matcher_matches(m, re_values[j]) != want ||
			    pd_labels_matcher_matches(n, re_values[j]) == want)
				fail_msg("regex %s on value #%zu: want %d", cases[i].re, j, want);
		}
		pd_labels_matcher_destroy(m);
		pd_labels_matcher_destroy(n);
	}
}

static void test_regex_anchoring(void **state)
{
	struct pd_labels_matcher *m = mm(PD_LABELS_MATCH_REGEXP, "v", "a");
	assert_true(pd_labels_matcher_matches(m, "a"));
	assert_false(pd_labels_matcher_matches(m, "ab"));
	assert_false(pd_labels_matcher_matches(m, "ba"));
	assert_false(pd_labels_matcher_matches(m, "a\n")); /* $ is the very end */
	pd_labels_matcher_destroy(m);

	m = mm(PD_LABELS_MATCH_REGEXP, "v", "a|b");
	assert_true(pd_labels_matcher_matches(m, "a"));
	assert_true(pd_labels_matcher_matches(m, "b"));
	assert_false(pd_labels_matcher_matches(m, "ab"));
	pd_labels_matcher_destroy(m);

	m = mm(PD_LABELS_MATCH_REGEXP, "v", "foo.*");
	assert_true(pd_labels_matcher_matches(m, "foo\nbar")); /* . matches newline */
	assert_false(pd_labels_matcher_matches(m, "xfoo"));
	pd_labels_matcher_destroy(m);

	m = mm(PD_LABELS_MATCH_REGEXP, "v", "(?i)API|web");
	assert_true(pd_labels_matcher_matches(m, "api"));
	assert_true(pd_labels_matcher_matches(m, "WEB")); /* flag covers the whole regex */
	assert_false(pd_labels_matcher_matches(m, "apix"));
	pd_labels_matcher_destroy(m);

	/* an inner $ is still the end of the text, an inner ^ its start */
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "a$|^b.*");
	assert_true(pd_labels_matcher_matches(m, "a"));
	assert_true(pd_labels_matcher_matches(m, "bcd"));
	assert_false(pd_labels_matcher_matches(m, "ca"));
	pd_labels_matcher_destroy(m);

	/* multiline flags behave as in Go: a multiline ^ also matches after a final
	 * newline, a plain $ never matches before one */
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "a\\n(?m)^");
	assert_true(pd_labels_matcher_matches(m, "a\n"));
	pd_labels_matcher_destroy(m);
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "(?m)a$\\n");
	assert_true(pd_labels_matcher_matches(m, "a\n"));
	pd_labels_matcher_destroy(m);
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "a$\\n?");
	assert_true(pd_labels_matcher_matches(m, "a"));
	assert_false(pd_labels_matcher_matches(m, "a\n"));
	pd_labels_matcher_destroy(m);

	/* literal fast path and the general path agree */
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "10.0.0.7:8080");
	assert_true(pd_labels_matcher_matches(m, "10.0.0.7:8080"));
	assert_true(pd_labels_matcher_matches(m, "10a0b0c7:8080"));
	pd_labels_matcher_destroy(m);
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "api-server_1");
	assert_true(pd_labels_matcher_matches(m, "api-server_1"));
	assert_false(pd_labels_matcher_matches(m, "api-server_12"));
	pd_labels_matcher_destroy(m);

	/* a regex that makes a backtracking engine explore exponentially many paths is
	 * answered as Go answers it: no match here, for want of the c */
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "(a|aa)*(a|aa)*(a|aa)*(a|aa)*c");
	char s[64];
	memset(s, 'a', 40);
	s[40] = '\0';
	assert_false(pd_labels_matcher_matches(m, s));
	pd_labels_matcher_destroy(m);

	/* long values */
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "(a|b)*c");
	char *lv = malloc(4097);
	memset(lv, 'a', 4095);
	lv[4095] = 'c';
	lv[4096] = '\0';
	assert_true(pd_labels_matcher_matches(m, lv));
	lv[4095] = 'a';
	assert_false(pd_labels_matcher_matches(m, lv));
	free(lv);
	pd_labels_matcher_destroy(m);

	/* invalid UTF-8 never matches a general regex (values are UTF-8 anyway) */
	m = mm(PD_LABELS_MATCH_REGEXP, "v", "a.c");
	assert_false(pd_labels_matcher_matches(m, "a\xff"
	                                          "c"));
	pd_labels_matcher_destroy(m);
}

static void test_regex_errors(void **state)
{
	static const struct {
		const char *re;
		const char *msg;
	} cases[] = {
	    {"(", "error parsing regexp \"(\" at offset 1: missing closing ): `(`"},
	    {")", "error parsing regexp \")\" at offset 0: unexpected ): `)`"},
	    {"a)|(b", "error parsing regexp \"a)|(b\" at offset 1: unexpected ): `a)|(b`"},
	    {"[a", "error parsing regexp \"[a\" at offset 0: missing closing ]: `[a`"},
	    {"a\\", "error parsing regexp \"a\\\\\" at offset 1: trailing backslash at end of "
	            "expression: ``"},
	    {"\\1", "error parsing regexp \"\\\\1\" at offset 0: invalid escape sequence: `\\1` "
	            "(backreferences are not supported)"},
	    {"(a)\\k<x>", "error parsing regexp \"(a)\\\\k<x>\" at offset 3: invalid escape "
	                  "sequence: `\\k`"},
	    {"(?=a)", "error parsing regexp \"(?=a)\" at offset 0: invalid or unsupported Perl "
	              "syntax: `(?=` (lookaheads are not supported)"},
	    {"x(?<!a)", "error parsing regexp \"x(?<!a)\" at offset 1: invalid or unsupported "
	                "Perl syntax: `(?<!` (lookbehinds are not supported)"},
	    {"(?>a)", "error parsing regexp \"(?>a)\" at offset 0: invalid or unsupported Perl "
	              "syntax: `(?>` (atomic groups are not supported)"},
	    {"(?x)a b", "error parsing regexp \"(?x)a b\" at offset 0: invalid or unsupported "
	                "Perl syntax: `(?x` (only the flags i, m, s and U are supported)"},
	    {"a++", "error parsing regexp \"a++\" at offset 2: invalid nested repetition "
	            "operator: `++` (possessive quantifiers are not supported)"},
	    {"a**", "error parsing regexp \"a**\" at offset 2: invalid nested repetition "
	            "operator: `**`"},
	    {"a{1001}", "error parsing regexp \"a{1001}\" at offset 1: invalid repeat count: "
	                "`{1001}`"},
	    {"(*FAIL)", "error parsing regexp \"(*FAIL)\" at offset 1: missing argument to "
	                "repetition operator: `*` (backtracking verbs are not supported)"},
	    {"\\Z", "error parsing regexp \"\\\\Z\" at offset 0: invalid escape sequence: `\\Z`"},
	    {"\\v\\h", "error parsing regexp \"\\\\v\\\\h\" at offset 2: invalid escape "
	               "sequence: `\\h`"},
	    {"[\\b]", "error parsing regexp \"[\\\\b]\" at offset 1: invalid escape sequence: "
	              "`\\b`"},
	    /* errors RE2 finds are worded as Go words them, at the user's offset */
	    {"[z-a]", "error parsing regexp \"[z-a]\" at offset 1: invalid character class "
	              "range: `z-a`"},
	    {"\\p{Foo}", "error parsing regexp \"\\\\p{Foo}\" at offset 0: invalid character "
	                 "class range: `\\p{Foo}`"},
	    {"\\p{IsGreek}", "error parsing regexp \"\\\\p{IsGreek}\" at offset 0: invalid "
	                     "character class range: `\\p{IsGreek}`"},
	    {"\\pX", "error parsing regexp \"\\\\pX\" at offset 0: invalid character class "
	             "range: `\\pX`"},
	    {"x[[:foo:]]", "error parsing regexp \"x[[:foo:]]\" at offset 2: invalid character "
	                   "class range: `[:foo:]`"},
	    {"*", "error parsing regexp \"*\" at offset 0: missing argument to repetition "
	          "operator: `*`"},
	    {"a|*", "error parsing regexp \"a|*\" at offset 2: missing argument to repetition "
	            "operator: `*`"},
	    {"[a-\\d]", "error parsing regexp \"[a-\\\\d]\" at offset 3: invalid escape "
	                "sequence: `\\d`"},
	    /* found by profd's check: what RE2 would take and Go does not */
	    {"x*?*", "error parsing regexp \"x*?*\" at offset 3: invalid nested repetition "
	             "operator: `*?*`"},
	    {"a{2}*", "error parsing regexp \"a{2}*\" at offset 4: invalid nested repetition "
	              "operator: `{2}*`"},
	    {"x{2}{3}", "error parsing regexp \"x{2}{3}\" at offset 4: invalid nested "
	                "repetition operator: `{2}{3}`"},
	    {"\\s(", "error parsing regexp \"\\\\s(\" at offset 3: missing closing ): `\\s(`"},
	    {"a\\C", "error parsing regexp \"a\\\\C\" at offset 1: invalid escape sequence: "
	             "`\\C`"},
	    {"\\8", "error parsing regexp \"\\\\8\" at offset 0: invalid escape sequence: "
	            "`\\8`"},
	    {"x{1001,}", "error parsing regexp \"x{1001,}\" at offset 1: invalid repeat count: "
	                 "`{1001,}`"},
	    {"x{2,1}", "error parsing regexp \"x{2,1}\" at offset 1: invalid repeat count: "
	               "`{2,1}`"},
	    {"(?P<>a)", "error parsing regexp \"(?P<>a)\" at offset 0: invalid named capture: "
	                "`(?P<>`"},
	    {"(?P<n!>x)", "error parsing regexp \"(?P<n!>x)\" at offset 0: invalid named "
	                  "capture: `(?P<n!>`"},
	    {"(?i-)", "error parsing regexp \"(?i-)\" at offset 0: invalid or unsupported Perl "
	              "syntax: `(?i-)`"},
	    {"\\Q(a|b\\E)", "error parsing regexp \"\\\\Q(a|b\\\\E)\" at offset 8: unexpected ): "
	                   "`\\Q(a|b\\E)`"},
	    {"\\Q\\E*", "error parsing regexp \"\\\\Q\\\\E*\" at offset 4: missing argument "
	                 "to repetition operator: `*`"},
	    {"a\xff" "b", "error parsing regexp \"a\\xffb\" at offset 1: invalid UTF-8: "
	               "\"\\xffb\""},
	    /* Go's limits: 1000 nested groups, and a program that fits in memory */
	    {"((a{1000}){1000}){1000}", "error parsing regexp \"((a{1000}){1000}){1000}\" at "
	                                "offset 3: invalid repeat count: `{1000}`"},
	    /* RE2's own limit (Go 1.19 takes this one) */
	    {"\\pL{1000}", "error parsing regexp \"\\\\pL{1000}\" at offset 0: expression too "
	                   "large (over 8388608 bytes of compiled program)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_matcher *m = (struct pd_labels_matcher *)1;
		struct pd_err err = {0};
		assert_int_equal(
		    pd_labels_matcher_create(&m, PD_LABELS_MATCH_REGEXP, "v", cases[i].re, &err),
		    PD_EINVAL);
		assert_null(m);
		assert_string_equal(err.msg, cases[i].msg);
	}
}

/* ---- selectors ------------------------------------------------------------ */

static void test_selector_valid(void **state)
{
	static const struct {
		const char *in;
		const char *name; /* NULL: none */
		const char *matchers;
	} cases[] = {
	    {"heap{job=\"api\",instance=~\"a|b\"}", "heap",
	     "job=\"api\",instance=~\"a|b\",__name__=\"heap\""},
	    {"{__name__=\"heap\"}", "heap", "__name__=\"heap\""},
	    {"heap", "heap", "__name__=\"heap\""},
	    {"heap{}", "heap", "__name__=\"heap\""},
	    {"{job=\"x\",}", NULL, "job=\"x\""},
	    {" \t\n heap \n { job = \"x\" , } \r\n", "heap", "job=\"x\",__name__=\"heap\""},
	    {"{a='single',b=`raw\\n`}", NULL, "a=\"single\",b=\"raw\\\\n\""},
	    {"{a=\"\\a\\b\\f\\n\\r\\t\\v\\\\\\\"\"}", NULL, "a=\"\\a\\b\\f\\n\\r\\t\\v\\\\\\\"\""},
	    {"{a='\\''}", NULL, "a=\"'\""},
	    {"{a=\"\\x41\\101\\u00e9\\U0001F600\"}", NULL, "a=\"AA\xc3\xa9\xf0\x9f\x98\x80\""},
	    {"{a=`multi\nline`}", NULL, "a=\"multi\\nline\""},
	    {"{a!=\"\",b=~\"x\",c!~\"y\"}", NULL, "a!=\"\",b=~\"x\",c!~\"y\""},
	    {"sum{a=\"b\"}", "sum", "a=\"b\",__name__=\"sum\""},
	    {"offset", "offset", "__name__=\"offset\""},
	    {"a:b:c", "a:b:c", "__name__=\"a:b:c\""},
	    {"{\"heap\",job=\"api\"}", "heap", "__name__=\"heap\",job=\"api\""},
	    {"{job=\"api\", \"heap\"}", "heap", "job=\"api\",__name__=\"heap\""},
	    {"{\"job\"=\"api\"}", NULL, "job=\"api\""},
	    {"{__name__=~\"heap|allocs\"}", NULL, "__name__=~\"heap|allocs\""},
	    {"{__name__=\"a\",__name__=\"b\"}", "a", "__name__=\"a\",__name__=\"b\""},
	    {"heap # comment\n{job=\"x\"} # another", "heap", "job=\"x\",__name__=\"heap\""},
	    {"{job=\"a\",job=\"b\"}", NULL, "job=\"a\",job=\"b\""},
	    {"{job=\"caf\xc3\xa9 \xe2\x98\xba\"}", NULL, "job=\"caf\xc3\xa9 \xe2\x98\xba\""},
	    {"{job=~\"(?i)API\",job!=\"x\"}", NULL, "job=~\"(?i)API\",job!=\"x\""},
	    {"{job=~\".+\"}", NULL, "job=~\".+\""},
	    {"{on=\"x\",bool=\"y\"}", NULL, "on=\"x\",bool=\"y\""}, /* keywords are names inside */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_selector *s;
		struct pd_err err = {0};
		if (parse_sel(cases[i].in, &s, &err) != 0)
			fail_msg("%s: %s", cases[i].in, err.msg);
		if (cases[i].name)
			assert_string_equal(s->name, cases[i].name);
		else
			assert_null(s->name);
		char *got = fmt_matchers(s);
		assert_string_equal(got, cases[i].matchers);
		free(got);

		/* the printed selector parses back to the same matchers */
		struct pd_buf b;
		struct pd_labels_selector *s2;
		pd_buf_init(&b, 0);
		assert_int_equal(pd_labels_selector_format(s, &b), 0);
		if (pd_labels_selector_parse(&s2, (char *)b.data, b.len, NULL, &err) != 0)
			fail_msg("%.*s: %s", (int)b.len, (char *)b.data, err.msg);
		assert_int_equal(s2->nmatchers, s->nmatchers);
		for (size_t k = 0; k < s->nmatchers; k++) {
			/* the bare name moves to the end; compare as sets */
			int found = 0;
			for (size_t j = 0; j < s2->nmatchers; j++)
				found |= pd_labels_matcher_type(s->matchers[k]) ==
				             pd_labels_matcher_type(s2->matchers[j]) &&
				         !strcmp(pd_labels_matcher_name(s->matchers[k]),
				                 pd_labels_matcher_name(s2->matchers[j])) &&
				         !strcmp(pd_labels_matcher_value(s->matchers[k]),
				                 pd_labels_matcher_value(s2->matchers[j]));
			assert_true(found);
		}
		pd_buf_fini(&b);
		pd_labels_selector_destroy(s2);
		pd_labels_selector_destroy(s);
	}
}

static void test_selector_format(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"heap{job=\"api\",instance=~\"a|b\"}", "heap{job=\"api\",instance=~\"a|b\"}"},
	    {"{__name__=\"heap\", job = 'x'}", "heap{job=\"x\"}"},
	    {"heap", "heap"},
	    {"{job=\"a\\nb\"}", "{job=\"a\\nb\"}"},
	    {"{__name__=\"my type\"}", "{__name__=\"my type\"}"},
	    {"{__name__=~\"h.*\"}", "{__name__=~\"h.*\"}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_selector *s;
		struct pd_buf b;
		assert_int_equal(parse_sel(cases[i].in, &s, NULL), 0);
		pd_buf_init(&b, 0);
		assert_int_equal(pd_labels_selector_format(s, &b), 0);
		assert_int_equal(pd_buf_append(&b, "", 1), 0);
		assert_string_equal((char *)b.data, cases[i].out);
		pd_buf_fini(&b);
		pd_labels_selector_destroy(s);
	}
}

static void test_selector_invalid(void **state)
{
	static const struct {
		const char *in;
		const char *msg;
	} cases[] = {
	    /* Prometheus's own messages and positions */
	    {"", "unknown position: parse error: unexpected end of input"},
	    {"  ", "1:3: parse error: unexpected end of input"},
	    {"{}", "1:1: parse error: vector selector must contain at least one non-empty matcher"},
	    {"  {a=\"\"}",
	     "1:3: parse error: vector selector must contain at least one non-empty matcher"},
	    {"{a=~\".*\",b=\"\"}",
	     "1:1: parse error: vector selector must contain at least one non-empty matcher"},
	    {"{a!~\"x\"}",
	     "1:1: parse error: vector selector must contain at least one non-empty matcher"},
	    {"a{__name__=\"b\"}",
	     "1:1: parse error: metric name must not be set twice: \"a\" or \"b\""},
	    {"a{__name__=~\"b\"}",
	     "1:1: parse error: metric name must not be set twice: \"a\" or \"b\""},
	    {"heap{job=\"a\"", "1:13: parse error: unexpected end of input inside braces"},
	    {"{", "1:2: parse error: unexpected end of input inside braces"},
	    {"some{", "1:6: parse error: unexpected end of input inside braces"},
	    {"{a", "1:3: parse error: unexpected end of input inside braces"},
	    {"{a=\"b\",", "1:8: parse error: unexpected end of input inside braces"},
	    {"heap{job=\"a\"%}", "1:13: parse error: unexpected character inside braces: '%'"},
	    {"foo{a*\"b\"}", "1:6: parse error: unexpected character inside braces: '*'"},
	    {"foo{a>=\"b\"}", "1:6: parse error: unexpected character inside braces: '>'"},
	    {"some_metric{a:b=\"b\"}",
	     "1:14: parse error: unexpected character inside braces: ':'"},
	    {"foo{1}", "1:5: parse error: unexpected character inside braces: '1'"},
	    {"{a=\"b\"\n,\n\xc3\xa9}",
	     "3:1: parse error: unexpected character inside braces: '\xc3\xa9'"},
	    {"{a!x}", "1:3: parse error: unexpected character after '!' inside braces: 'x'"},
	    {"{{", "1:2: parse error: unexpected left brace '{'"},
	    {"}", "1:1: parse error: unexpected character: '}'"},
	    {"some}", "1:5: parse error: unexpected character: '}'"},
	    {"h\xc3\xa9"
	     "ap",
	     "1:2: parse error: unexpected character: '\xc3\xa9'"},
	    {"heap{=\"x\"}",
	     "1:6: parse error: unexpected \"=\" in label matching, expected identifier or \"}\""},
	    {"{=~\"x\"}", "1:2: parse error: unexpected <op:=~> in label matching, expected "
	                  "identifier or \"}\""},
	    {"{,}",
	     "1:2: parse error: unexpected \",\" in label matching, expected identifier or \"}\""},
	    {"{a=\"b\",,}",
	     "1:8: parse error: unexpected \",\" in label matching, expected identifier or \"}\""},
	    {"foo{gibberish}", "1:14: parse error: unexpected \"}\" in label matching, expected "
	                       "label matching operator"},
	    {"{a b}",
	     "1:4: parse error: unexpected identifier \"b\" in label matching, expected label "
	     "matching operator"},
	    {"some_metric{a=b}",
	     "1:15: parse error: unexpected identifier \"b\" in label matching, expected string"},
	    {"{a=~}", "1:5: parse error: unexpected \"}\" in label matching, expected string"},
	    {"{a=\"b\" c=\"d\"}", "1:8: parse error: unexpected identifier \"c\" in label "
	                          "matching, expected \",\" or \"}\""},
	    {"{a=\"b\" \"longerthanten\"}",
	     "1:8: parse error: unexpected string \"\\\"longertha\"... in label matching, expected "
	     "\",\" or \"}\""},
	    {"{\"x\" \"y\"}", "1:6: parse error: unexpected string \"\\\"y\\\"\" in label "
	                      "matching, expected \",\" or \"}\""},
	    /* strings */
	    {"{a=\"abc", "1:4: parse error: unterminated quoted string"},
	    {"{a=\"a\nb\"}", "1:4: parse error: unterminated quoted string"},
	    {"{a='abc}", "1:4: parse error: unterminated quoted string"},
	    {"{a=`abc", "1:4: parse error: unterminated raw string"},
	    {"{a=\"\\q\"}", "1:4: parse error: unknown escape sequence U+0071 'q'"},
	    {"{a=\"\\'\"}", "1:4: parse error: unknown escape sequence U+0027 '''"},
	    {"{a='\\\"'}", "1:4: parse error: unknown escape sequence U+0022 '\"'"},
	    {"{a=\"\\x4\"}", "1:4: parse error: illegal character U+0022 '\"' in escape sequence"},
	    {"{a=\"\\x4g\"}", "1:4: parse error: illegal character U+0067 'g' in escape sequence"},
	    {"{a=\"\\400\"}", "1:4: parse error: escape sequence is an invalid Unicode code point"},
	    {"{a=\"\\uD800\"}",
	     "1:4: parse error: escape sequence is an invalid Unicode code point"},
	    {"{a=\"\\U00110000\"}",
	     "1:4: parse error: escape sequence is an invalid Unicode code point"},
	    {"{a=\"abc\\", "1:4: parse error: escape sequence not terminated"},
	    {"{a=\"\\u12", "1:4: parse error: escape sequence not terminated"},
	    {"{a=\"\xff\"}", "1:4: parse error: invalid UTF-8 rune"},
	    {"{a=`\xc3`}", "1:4: parse error: invalid UTF-8 rune"},
	    /* not a metric name */
	    {"5", "1:1: parse error: unexpected number \"5\""},
	    {"\"heap\"", "1:1: parse error: unexpected string \"\\\"heap\\\"\""},
	    {"bool", "1:1: parse error: unexpected <bool>"},
	    {"Inf{a=\"b\"}", "1:1: parse error: unexpected number \"Inf\""},
	    {"atan2", "1:1: parse error: unexpected <op:atan2>"},
	    {"=~", "1:1: parse error: unexpected character after '=': '~'"},
	    {"(heap)", "1:1: parse error: unexpected \"(\""},
	    /* regexes are compiled while parsing; the position is the label's */
	    {"heap{job=~\"(\"}",
	     "1:6: parse error: error parsing regexp \"(\" at offset 1: missing closing ): `(`"},
	    {"{a=\"x\", job=~\"a++\"}",
	     "1:9: parse error: error parsing regexp \"a++\" at offset 2: invalid nested "
	     "repetition "
	     "operator: `++` (possessive quantifiers are not supported)"},
	    /* profd takes one selector, not an expression */
	    {"heap[5m]",
	     "1:5: parse error: unexpected \"[\" after selector: profd accepts only a series "
	     "selector, such as heap{job=\"api\"}"},
	    {"heap{a=\"b\"}[5m]",
	     "1:12: parse error: unexpected \"[\" after selector: profd accepts only a series "
	     "selector, such as heap{job=\"api\"}"},
	    {"rate(heap[5m])",
	     "1:5: parse error: unexpected \"(\" after selector: profd accepts only a series "
	     "selector, such as heap{job=\"api\"}"},
	    {"heap offset 5m",
	     "1:6: parse error: unexpected <offset> after selector: profd accepts only a series "
	     "selector, such as heap{job=\"api\"}"},
	    {"heap or goroutine",
	     "1:6: parse error: unexpected <op:or> after selector: profd accepts only a series "
	     "selector, such as heap{job=\"api\"}"},
	    {"heap @ 5",
	     "1:6: parse error: unexpected <op:@> after selector: profd accepts only a series "
	     "selector, such as heap{job=\"api\"}"},
	    {"heap 5m",
	     "1:6: parse error: unexpected duration \"5m\" after selector: profd accepts only a "
	     "series selector, such as heap{job=\"api\"}"},
	    {"heap{job=\"api\"}{x=\"y\"}",
	     "1:16: parse error: unexpected \"{\" after selector: profd accepts only a series "
	     "selector, such as heap{job=\"api\"}"},
	    {"heap ]", "1:6: parse error: unexpected right bracket ']'"},
	    /* profd's own limits on what it can store */
	    {"{\"a.b\"=\"x\"}",
	     "1:2: parse error: invalid label name \"a.b\": profd label names must match "
	     "[a-zA-Z_][a-zA-Z0-9_]*"},
	    {"{a=\"\\x00\"}",
	     "1:4: parse error: strings must not contain NUL characters: profd label values are C "
	     "strings"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_selector *s = (struct pd_labels_selector *)1;
		struct pd_err err = {0};
		int rc = parse_sel(cases[i].in, &s, &err);
		if (rc != PD_EINVAL)
			fail_msg("%s: want PD_EINVAL, got %d", cases[i].in, rc);
		assert_null(s);
		if (strcmp(err.msg, cases[i].msg) != 0)
			fail_msg("%s:\n  got  %s\n  want %s", cases[i].in, err.msg, cases[i].msg);
	}

	/* a NUL byte inside the input (the length is explicit) */
	struct pd_labels_selector *s;
	struct pd_err err = {0};
	assert_int_equal(pd_labels_selector_parse(&s, "{a=\"x\0y\"}", 9, NULL, &err), PD_EINVAL);
	assert_string_equal(err.msg, "1:4: parse error: strings must not contain NUL characters: "
	                             "profd label values are C strings");
	assert_int_equal(pd_labels_selector_parse(&s, "heap\0", 5, NULL, &err), PD_EINVAL);
	assert_string_equal(err.msg, "1:5: parse error: unexpected character: '\\x00'");
}

static void test_selector_limits(void **state)
{
	struct pd_labels_selector *s;
	struct pd_err err = {0};
	struct pd_labels_parse_opts opts = {.max_len = 16, .max_matchers = 2};

	assert_int_equal(pd_labels_selector_parse(&s, "heap{a=\"b\"}", 11, &opts, &err), 0);
	pd_labels_selector_destroy(s);
	assert_int_equal(pd_labels_selector_parse(&s, "heap{job=\"abcdef\"}", 18, &opts, &err),
	                 PD_ETOOBIG);
	assert_string_equal(err.msg, "selector is 18 bytes long, more than the limit of 16");
	assert_int_equal(pd_labels_selector_parse(&s, "{a=\"1\",b=\"2\"}", 13, &opts, &err), 0);
	pd_labels_selector_destroy(s);
	assert_int_equal(pd_labels_selector_parse(&s, "{a=\"1\",b=\"2\",c=\"\"}", 18,
	                                          &(struct pd_labels_parse_opts){.max_matchers = 2},
	                                          &err),
	                 PD_ETOOBIG);
	assert_string_equal(err.msg, "1:14: parse error: too many matchers: more than 2");
	/* the name written before the braces counts */
	assert_int_equal(pd_labels_selector_parse(&s, "x{a=\"1\",b=\"2\"}", 14, &opts, &err),
	                 PD_ETOOBIG);
	assert_string_equal(err.msg, "1:1: parse error: too many matchers: more than 2");

	/* the defaults: 64 KiB and 256 matchers */
	size_t n = PD_LABELS_DEFAULT_MAX_SELECTOR_LEN + 1;
	char *big = malloc(n + 1);
	memset(big, ' ', n);
	memcpy(big, "heap", 4);
	big[n] = '\0';
	assert_int_equal(pd_labels_selector_parse(&s, big, n, NULL, &err), PD_ETOOBIG);
	assert_string_equal(err.msg, "selector is 65537 bytes long, more than the limit of 65536");
	assert_int_equal(pd_labels_selector_parse(&s, big, n - 1, NULL, &err), 0);
	pd_labels_selector_destroy(s);
	free(big);

	struct pd_buf b;
	pd_buf_init(&b, 0);
	pd_buf_append(&b, "{", 1);
	for (int i = 0; i < 257; i++)
		pd_buf_printf(&b, "l%d=\"v\",", i);
	pd_buf_append(&b, "}", 1);
	assert_int_equal(pd_labels_selector_parse(&s, (char *)b.data, b.len, NULL, &err),
	                 PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "too many matchers: more than 256"));
	pd_buf_fini(&b);
}

static void test_selector_matches(void **state)
{
	struct pd_labels *a = LS("__name__", "heap", "job", "api", "instance", "10.0.0.7:8080");
	struct pd_labels *b = LS("__name__", "heap", "job", "web", "instance", "10.0.0.8:8080");
	struct pd_labels *c =
	    LS("__name__", "goroutine", "job", "api", "instance", "10.0.0.7:8080");
	static const struct {
		const char *sel;
		int a, b, c;
	} cases[] = {
	    {"heap", 1, 1, 0},
	    {"heap{job=\"api\"}", 1, 0, 0},
	    {"{job=\"api\"}", 1, 0, 1},
	    {"{job=~\"api|web\",instance=~\"10\\\\.0\\\\.0\\\\.7:.*\"}", 1, 0, 1},
	    {"{__name__=~\"heap|goroutine\",job!=\"web\"}", 1, 0, 1},
	    {"heap{zone=\"\"}", 1, 1, 0},
	    {"heap{zone!=\"\"}", 0, 0, 0},
	    {"{instance!~\".*:8080\",job=~\".+\"}", 0, 0, 0},
	    {"{job=~\"API\"}", 0, 0, 0},
	    {"{job=~\"(?i)API\"}", 1, 0, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_selector *s;
		struct pd_err err = {0};
		if (parse_sel(cases[i].sel, &s, &err))
			fail_msg("%s: %s", cases[i].sel, err.msg);
		assert_int_equal(pd_labels_selector_matches(s, a), cases[i].a);
		assert_int_equal(pd_labels_selector_matches(s, b), cases[i].b);
		assert_int_equal(pd_labels_selector_matches(s, c), cases[i].c);
		pd_labels_selector_destroy(s);
	}
	pd_labels_destroy(a);
	pd_labels_destroy(b);
	pd_labels_destroy(c);
	pd_labels_selector_destroy(NULL);
}

/* one matcher, shared by several threads at once */
static void *match_thread(void *arg)
{
	const struct pd_labels_matcher *m = arg;
	long ok = 0;
	for (int i = 0; i < 5000; i++) {
		ok += pd_labels_matcher_matches(m, "api-7") == 1;
		ok += pd_labels_matcher_matches(m, "web-7") == 0;
	}
	return (void *)ok;
}

/* Regexes RE2 and Go's regexp both read, and some only Go's reads the same way,
 * against values; want computed with Go's regexp (^(?s:RE)$). */
static void test_regex_go_table(void **state)
{
	static const struct {
		const char *re, *value;
		int want;
	} cases[] = {
	    {"[\\d-z]+", "1-z", 1},          /* '-' after a class escape is a literal */
	    {"[[:alpha:]-z]+", "a-z", 1},
	    {"\\Qa.b\\E", "a.b", 1},          /* \Q...\E quotes */
	    {"\\Qa.b\\E", "axb", 0},
	    {"\\Qa\\\\E", "a\\", 1},         /* \Q ends at the first \E */
	    {"\\101\\0610", "A10", 1},          /* octal escapes, up to three digits */
	    {"\\x41\\x{263a}", "A\xe2\x98\xba", 1},
	    {"\\v", "\v", 1},
	    {"\\s", "\v", 0}, /* \s is [\t\n\f\r ] */
	    {"\\pN+", "12\xd9\xa3", 1},
	    {"\\p{Greek}+", "\xce\xb1\xce\xb2\xce\xb3", 1},
	    {"\\p{^L}\\PL", "12", 1},
	    {"[\\p{Lu}]", "A", 1},
	    {"\\pZ", " ", 1},
	    {"(?i)k", "\xe2\x84\xaa", 1},       /* Kelvin sign folds to k */
	    {"(?i)stra\xc3\x9f" "e", "STRASSE", 0}, /* simple folding only */
	    {"a$", "a\n", 0},                   /* $ is the end of the text */
	    {"(?m)^b$", "a\nb", 0},             /* anchored: the whole value */
	    {"(?m)a$\\n^b", "a\nb", 1},
	    {"(?U)a+", "aaa", 1},
	    {"a{,3}", "a{,3}", 1},              /* not a repetition: literal braces */
	    {"a{1000}", "a", 0},
	    {"[]a]+", "]a", 1},
	    {"[^]a]", "b", 1},
	    {"(|a)*", "aa", 1},
	    {"(a*)+", "b", 0},
	    {"(?<name>x)", "x", 1},             /* Go 1.22's form of (?P<name>x) (1.19: error) */
	    {"(?P<a1>x)|(?P<a1>y)", "y", 1},    /* names may repeat */
	    {"(?)a", "a", 1},
	    {"(?s-i:A)", "A", 1},
	    {"a.c", "a\nc", 1},
	    /* a backtracking engine gives up on this one; Go takes the second branch */
	    {"(a|aa)*(a|aa)*(a|aa)*c|a*", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_matcher *m = mm(PD_LABELS_MATCH_REGEXP, "v", cases[i].re);
		if (pd_labels_matcher_matches(m, cases[i].value) != cases[i].want)
			fail_msg("regex %s on \"%s\": want %d", cases[i].re, cases[i].value,
			         cases[i].want);
		pd_labels_matcher_destroy(m);
	}
}

/* Pathological regexes on 100,000-byte values: RE2 answers in time linear in the
 * value, where a backtracking engine would need more steps than there are atoms. */
static void test_regex_linear_time(void **state)
{
	enum { N = 100000 };
	char *a = malloc(N + 2), *x = malloc(N + 2);
	assert_non_null(a);
	assert_non_null(x);
	memset(a, 'a', N);
	a[N] = '\0';
	memset(x, 'x', N);
	x[N] = '\0';
	static const struct {
		const char *re;
		int a, ab, x, xy; /* Go's answers on a^N, a^N b, x^N, x^N y */
	} cases[] = {
	    {"(a|aa)+", 1, 0, 0, 0},
	    {"(a|aa)+$", 1, 0, 0, 0},
	    {"(x+x+)+y", 0, 0, 0, 1},
	    {"(a*)*b", 0, 1, 0, 0},
	    {"(a|aa)*(a|aa)*(a|aa)*c|a*", 1, 0, 0, 0},
	    {"(.*a){20}", 1, 0, 0, 0},
	    {".*x.*x.*x.*y", 0, 0, 0, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_matcher *m = mm(PD_LABELS_MATCH_REGEXP, "v", cases[i].re);
		assert_int_equal(pd_labels_matcher_matches(m, a), cases[i].a);
		a[N] = 'b';
		a[N + 1] = '\0';
		assert_int_equal(pd_labels_matcher_matches(m, a), cases[i].ab);
		a[N] = '\0';
		assert_int_equal(pd_labels_matcher_matches(m, x), cases[i].x);
		x[N] = 'y';
		x[N + 1] = '\0';
		assert_int_equal(pd_labels_matcher_matches(m, x), cases[i].xy);
		x[N] = '\0';
		pd_labels_matcher_destroy(m);
	}

	/* with capture groups, as relabeling uses them: Go's FindSubmatchIndex */
	struct pd_labels_regex *rx;
	struct pd_err err = {0};
	size_t ov[6];
	assert_int_equal(pd_labels_regex_compile(&rx, "(a|aa)+", 7, PD_LABELS_REGEX_CAPTURE, 0,
	                                         &err),
	                 0);
	assert_int_equal(pd_labels_regex_groups(rx), 1);
	assert_int_equal(pd_labels_regex_match(rx, a, N, ov, 3), 1);
	assert_int_equal(ov[0], 0);
	assert_int_equal(ov[1], N);
	assert_int_equal(ov[2], N - 1); /* the last iteration took one a */
	assert_int_equal(ov[3], N);
	assert_true(ov[4] == PD_LABELS_REGEX_UNSET && ov[5] == PD_LABELS_REGEX_UNSET);
	a[N] = 'b';
	assert_int_equal(pd_labels_regex_match(rx, a, N + 1, ov, 3), 0);
	a[N] = '\0';
	pd_labels_regex_destroy(rx);
	free(a);
	free(x);
}

/* Capture groups and their names through the public regex API, leftmost-first as
 * Go's regexp; offsets computed with Go's FindStringSubmatchIndex. */
static void test_regex_groups(void **state)
{
	static const struct {
		const char *re, *value;
		size_t ngroups;
		long ov[8]; /* -1: unset */
		const char *names[3];
	} cases[] = {
	    {"(a|ab)(c|bcd)(d*)", "abcd", 3, {0, 4, 0, 1, 1, 4, 4, 4}, {NULL, NULL, NULL}},
	    {"(x|xy)(y?)", "xy", 2, {0, 2, 0, 1, 1, 2, -1, -1}, {NULL, NULL, NULL}},
	    {"(?P<a1>x)|(?P<a1>y)", "y", 2, {0, 1, -1, -1, 0, 1, -1, -1}, {"a1", "a1", NULL}},
	    {"(?<host>[^:]+):(?P<port>\\d+)", "h:80", 2, {0, 4, 0, 1, 2, 4, -1, -1},
	     {"host", "port", NULL}},
	    {"(a)|b", "b", 1, {0, 1, -1, -1, -1, -1, -1, -1}, {NULL, NULL, NULL}},
	    {"(a+?)(a*)", "aaa", 2, {0, 3, 0, 1, 1, 3, -1, -1}, {NULL, NULL, NULL}},
	    {"(?U)(a+)(a*)", "aaa", 2, {0, 3, 0, 1, 1, 3, -1, -1}, {NULL, NULL, NULL}},
	    {"(?:(a)|b)+", "ab", 1, {0, 2, 0, 1, -1, -1, -1, -1}, {NULL, NULL, NULL}},
	    {"\\Q(\\E(x)", "(x", 1, {0, 2, 1, 2, -1, -1, -1, -1}, {NULL, NULL, NULL}},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_labels_regex *rx;
		struct pd_err err = {0};
		size_t ov[8];
		const char *re = cases[i].re, *v = cases[i].value;
		if (pd_labels_regex_compile(&rx, re, strlen(re), PD_LABELS_REGEX_CAPTURE, 0, &err))
			fail_msg("%s: %s", re, err.msg);
		assert_int_equal(pd_labels_regex_groups(rx), cases[i].ngroups);
		for (size_t g = 1; g <= cases[i].ngroups; g++) {
			const char *n = pd_labels_regex_group_name(rx, g), *w = cases[i].names[g - 1];
			if (!(n == w || (n && w && strcmp(n, w) == 0)))
				fail_msg("%s: group %zu is named %s, want %s", re, g, n ? n : "(none)",
				         w ? w : "(none)");
		}
		assert_int_equal(pd_labels_regex_match(rx, v, strlen(v), ov, 4), 1);
		for (size_t k = 0; k < 8; k++) {
			size_t want = cases[i].ov[k] < 0 ? PD_LABELS_REGEX_UNSET : (size_t)cases[i].ov[k];
			if (ov[k] != want)
				fail_msg("%s on %s: offset %zu is %zu, want %ld", re, v, k, ov[k],
				         cases[i].ov[k]);
		}
		/* without room for groups, only the answer */
		assert_int_equal(pd_labels_regex_match(rx, v, strlen(v), NULL, 0), 1);
		pd_labels_regex_destroy(rx);
	}

	/* nesting: 1000 groups deep is Go's limit */
	char deep[2 * 1001 + 2];
	size_t n = 0;
	for (int k = 0; k < 1000; k++)
		deep[n++] = '(';
	deep[n++] = 'a';
	for (int k = 0; k < 1000; k++)
		deep[n++] = ')';
	deep[n] = '\0';
	struct pd_labels_regex *rx;
	struct pd_err err = {0};
	assert_int_equal(pd_labels_regex_compile(&rx, deep, n, 0, 0, &err), 0);
	assert_int_equal(pd_labels_regex_match(rx, "a", 1, NULL, 0), 1);
	pd_labels_regex_destroy(rx);
	memmove(deep + 1, deep, n + 1);
	deep[0] = '(';
	deep[n + 1] = ')';
	deep[n + 2] = '\0';
	assert_int_equal(pd_labels_regex_compile(&rx, deep, n + 2, 0, 0, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "at offset 1000: expression nests too deeply: `((("));
}

static void test_matcher_threads(void **state)
{
	struct pd_labels_matcher *m = mm(PD_LABELS_MATCH_REGEXP, "job", "api-\\d+|db");
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, match_thread, m), 0);
	for (int i = 0; i < 4; i++) {
		void *ret;
		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_int_equal((long)ret, 10000);
	}
	pd_labels_matcher_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_xxh64_vectors),
	    cmocka_unit_test(test_hash_stable),
	    cmocka_unit_test(test_hash_distinguishes),
	    cmocka_unit_test(test_builder_sorts_and_gets),
	    cmocka_unit_test(test_builder_set_del_reset),
	    cmocka_unit_test(test_builder_errors),
	    cmocka_unit_test(test_builder_duplicates_and_limits),
	    cmocka_unit_test(test_valid_names),
	    cmocka_unit_test(test_compare),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_quote),
	    cmocka_unit_test(test_parse_labels),
	    cmocka_unit_test(test_format_parse_roundtrip),
	    cmocka_unit_test(test_matcher_basics),
	    cmocka_unit_test(test_missing_label_semantics),
	    cmocka_unit_test(test_regex_semantics),
	    cmocka_unit_test(test_regex_anchoring),
	    cmocka_unit_test(test_regex_errors),
	    cmocka_unit_test(test_regex_go_table),
	    cmocka_unit_test(test_regex_linear_time),
	    cmocka_unit_test(test_regex_groups),
	    cmocka_unit_test(test_selector_valid),
	    cmocka_unit_test(test_selector_format),
	    cmocka_unit_test(test_selector_invalid),
	    cmocka_unit_test(test_selector_limits),
	    cmocka_unit_test(test_selector_matches),
	    cmocka_unit_test(test_matcher_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
