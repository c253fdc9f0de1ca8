/* test_ingest_pyroscope.c: unit tests of Pyroscope's /ingest (pkg/ingest's
 * pyroscope.c, pyro_name.c, pyro_time.c, folded.c, speedscope.c, pyro_pprof.c):
 * the name and time parameters in each form Pyroscope's tests use, folded stacks,
 * speedscope files with the results Pyroscope's speedscope_test.go expects of
 * them, pprof plain, gzip and multipart with the series Pyroscope's integration
 * test expects of its files, the refused formats, and every limit.
 * `test_ingest_pyroscope --write DIR` writes converted profiles for
 * tests/ingest_pyroscope_pprof.sh, which reads them with go tool pprof. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/ingest.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "pyro.h"

#define PY(rel) PD_TESTDATA "/pyroscope/" rel
#define NOW 1577836800000LL /* 2020-01-01T00:00:00Z, as in Pyroscope's attime test */

static uint8_t *slurp(const char *path, size_t *len)
{
	uint8_t *b = NULL;
	struct pd_err err = {0};
	if (pd_file_read(path, 64 << 20, &b, len, &err))
		fail_msg("%s: %s", path, err.msg);
	return b;
}

static uint8_t *gunzip_file(const char *path, size_t *len)
{
	size_t zl;
	uint8_t *z = slurp(path, &zl), *raw = NULL;
	struct pd_err err = {0};
	if (pd_gunzip(z, zl, 64 << 20, &raw, len, &err))
		fail_msg("%s: %s", path, err.msg);
	free(z);
	return raw;
}

/* A request: name, format, body; the rest default. */
static int run(const struct pd_ingest_params *q0, const void *body, size_t len,
               const struct pd_ingest_limits *lim, struct pd_ingest_batch *b, struct pd_err *err)
{
	struct pd_ingest_params q = *q0;
	if (!q.now_ms)
		q.now_ms = NOW;
	memset(b, 0, sizeof(*b));
	memset(err, 0, sizeof(*err));
	return pd_ingest_pyroscope(&q, body, len, lim, b, err);
}

static char *labels_of(const struct pd_ingest_profile *p)
{
	char *s = pd_labels_string(p->labels);
	assert_non_null(s);
	return s;
}

static void assert_labels(const struct pd_ingest_profile *p, const char *want)
{
	char *s = labels_of(p);
	if (strcmp(s, want) != 0)
		fail_msg("labels %s, want %s", s, want);
	free(s);
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The folded stacks of sample type i, lines sorted. Caller frees. */
static char *folded(const struct pd_pprof_profile *p, int i)
{
	struct pd_buf b;
	struct pd_err err = {0};
	pd_buf_init(&b, 0);
	if (pd_pprof_folded(p, i, &b, &err))
		fail_msg("folded: %s", err.msg);
	char *text = strndup((const char *)b.data, b.len);
	pd_buf_fini(&b);
	char *lines[4096];
	size_t n = 0, tl = strlen(text);
	for (char *s = strtok(text, "\n"); s && n < 4096; s = strtok(NULL, "\n"))
		lines[n++] = s;
	qsort(lines, n, sizeof(lines[0]), cmp_line);
	char *out = calloc(1, tl + 2);
	for (size_t k = 0; k < n; k++) {
		strcat(out, lines[k]);
		strcat(out, "\n");
	}
	free(text);
	return out;
}

static void assert_folded(const struct pd_pprof_profile *p, int i, const char *want)
{
	char *f = folded(p, i);
	if (strcmp(f, want) != 0)
		fail_msg("folded:\n%s\nwant:\n%s", f, want);
	free(f);
}

static void assert_type(const struct pd_pprof_profile *p, size_t i, const char *type,
                        const char *unit)
{
	assert_true(i < pd_pprof_sample_type_count(p));
	assert_string_equal(pd_pprof_sample_type(p, i), type);
	assert_string_equal(pd_pprof_sample_unit(p, i), unit);
}

/* The profile's comments joined by '|'. */
static void comments(const struct pd_pprof_profile *p, char *out, size_t size)
{
	struct pd_pprof_parts parts;
	struct pd_err err = {0};
	out[0] = '\0';
	assert_int_equal(pd_pprof_parts_get(p, &parts, &err), 0);
	for (size_t i = 0; i < parts.ncomment; i++) {
		if (i)
			strncat(out, "|", size - strlen(out) - 1);
		strncat(out, parts.strings[parts.comment[i]], size - strlen(out) - 1);
	}
	pd_pprof_parts_fini(&parts);
}

/* ---- name ------------------------------------------------------------------- */

static void test_name(void **state)
{
	(void)state;
	struct pyro_name nm;
	struct pd_err err = {0};
	assert_int_equal(pyro_name_parse(" app.cpu { env = staging , region=eu,"
	                                 "process.runtime.name=jvm}",
	                                 &nm, &err),
	                 0);
	assert_string_equal(nm.full, "app.cpu");
	assert_string_equal(nm.app, "app");
	assert_string_equal(nm.type, "cpu");
	assert_int_equal(nm.n, 3);
	assert_memory_equal(nm.ls[0].name, "env", 3);
	assert_int_equal(nm.ls[0].value_len, 7);
	assert_memory_equal(nm.ls[0].value, "staging", 7);
	assert_int_equal(nm.ls[2].name_len, strlen("process.runtime.name"));
	pyro_name_fini(&nm);

	/* no type: cpu, the whole name is the app; dashes and slashes allowed */
	assert_int_equal(pyro_name_parse("my-ns/my.app.server.alloc_space{}", &nm, &err), 0);
	assert_string_equal(nm.app, "my-ns/my.app.server");
	assert_string_equal(nm.type, "alloc_space");
	assert_int_equal(nm.n, 0);
	pyro_name_fini(&nm);
	assert_int_equal(pyro_name_parse("plain", &nm, &err), 0);
	assert_string_equal(nm.app, "plain");
	assert_string_equal(nm.type, "cpu");
	pyro_name_fini(&nm);
	/* a repeated label: the last wins, as in Pyroscope's map */
	assert_int_equal(pyro_name_parse("a{x=1,x=2}", &nm, &err), 0);
	assert_int_equal(nm.n, 1);
	assert_memory_equal(nm.ls[0].value, "2", 1);
	pyro_name_fini(&nm);

	static const struct {
		const char *in, *msg;
	} bad[] = {
	    {"", "name is required"},
	    {"{env=x}", "service name"},
	    {"my app", "character ' ' (byte 2)"},
	    {"app{a-b=c}", "character '-' (byte 5)"},
	    {"app{=v}", "label name is required"},
	    {"app{a=b", "no closing '}'"},
	    {"app{a}", "has no '='"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(pyro_name_parse(bad[i].in, &nm, &err), PD_EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: %s (want %s)", bad[i].in, err.msg, bad[i].msg);
		pyro_name_fini(&nm);
	}
	/* through the request: PD_EINVAL naming the parameter */
	struct pd_ingest_batch b;
	struct pd_ingest_params q = {.name = "bad name"};
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "name"));
	assert_int_equal(b.n, 0);
	assert_string_equal(b.format, "folded");
}

/* ---- from and until --------------------------------------------------------- */

static void test_time(void **state)
{
	(void)state;
	/* Pyroscope's attime_test.go, case by case, and RFC 3339 */
	static const struct {
		const char *in;
		int64_t want;
	} ok[] = {
	    {"now", NOW},
	    {"now-1s", NOW - 1000},
	    {"now+1s", NOW + 1000},
	    {"now-1min", NOW - 60000},
	    {"now-1h", NOW - 3600000},
	    {"now-1d", NOW - 86400000},
	    {"now-1w", NOW - 7 * 86400000LL},
	    {"now-1mon", NOW - 30 * 86400000LL},
	    {"now-1M", NOW - 30 * 86400000LL},
	    {"now-1y", NOW - 365 * 86400000LL},
	    {"now-1", NOW},
	    {"now-1h30min", NOW - 5400000},
	    {"-15m", NOW - 900000},
	    {" now - 2h ", NOW - 7200000},
	    {"20200101", 1577836800000LL},
	    {"20240229", 1709164800000LL},
	    {"1577836800", 1577836800000LL},
	    {"1_577_836_800", 1577836800000LL},
	    {"1577836800001", 1577836800001LL},
	    {"1577836800000001", 1577836800000LL},
	    {"1577836800000000001", 1577836800000LL},
	    {"1577836801999999999", 1577836801999LL},
	    {"2020-01-01T00:00:00Z", 1577836800000LL},
	    {"2020-01-01T01:00:00.250+01:00", 1577836800250LL},
	    {"20201301", 20201301000LL}, /* not a date: Unix seconds */
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ms = 0;
		struct pd_err err = {0};
		if (pyro_time_parse(ok[i].in, NOW, &ms, &err))
			fail_msg("%s: %s", ok[i].in, err.msg);
		if (ms != ok[i].want)
			fail_msg("%s: %lld, want %lld", ok[i].in, (long long)ms,
			         (long long)ok[i].want);
	}
	static const char *bad[] = {"yesterday",
	                            "now-1x",
	                            "2020-13-45T00:00:00Z",
	                            "now-h",
	                            "12345678901234567890",
	                            "",
	                            "9577836800800802200" /* 19 digits past 2^63 */,
	                            "now-999999999999y",
	                            "now-101y",
	                            "now-50y-51y"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms = 0;
		struct pd_err err = {0};
		if (pyro_time_parse(bad[i], NOW, &ms, &err) != PD_EINVAL)
			fail_msg("%s: accepted as %lld", bad[i], (long long)ms);
	}
	/* the request's time: time_nanos from `from`, duration until - from, stored at from */
	struct pd_ingest_batch b;
	struct pd_err err;
	struct pd_ingest_params q = {.name = "app", .from = "now-10s", .until = "now"};
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), 0);
	assert_int_equal(b.v[0].t_ms, NOW - 10000);
	assert_int_equal(pd_pprof_time_nanos(b.v[0].decoded), (NOW - 10000) * 1000000);
	assert_int_equal(pd_pprof_duration_nanos(b.v[0].decoded), 10000000000LL);
	pd_ingest_batch_fini(&b);
	q.from = "soon";
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "from: "));
	q.from = NULL;
	q.until = "later";
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "until: "));
	/* absent: now */
	q.until = NULL;
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), 0);
	assert_int_equal(b.v[0].t_ms, NOW);
	pd_ingest_batch_fini(&b);
}

/* ---- folded ----------------------------------------------------------------- */

static void test_folded_groups(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	const char *body =
	    "main;work;spin 12\r\nmain;work 3\n\nno-count-skipped\nmain;work;spin 8\n";
	struct pd_ingest_params q = {.name = "app.cpu{env=staging,process.runtime.name=jvm}"};
	assert_int_equal(run(&q, body, strlen(body), NULL, &b, &err), 0);
	assert_string_equal(b.format, "folded");
	assert_int_equal(b.n, 1);
	assert_labels(
	    &b.v[0],
	    "profile{env=\"staging\", process_runtime_name=\"jvm\", service_name=\"app\"}");
	struct pd_pprof_profile *p = b.v[0].decoded;
	assert_non_null(p);
	assert_type(p, 0, "cpu", "nanoseconds");
	assert_int_equal(pd_pprof_period(p), 10000000);
	/* 100 Hz: each count is 10 ms */
	assert_folded(p, 0, "main;work 30000000\nmain;work;spin 200000000\n");
	char c[256];
	comments(p, c, sizeof(c));
	assert_string_equal(c, "aggregation=sum");
	/* the bytes are the same profile */
	struct pd_pprof_profile *again = NULL;
	assert_int_equal(pd_pprof_decode(&again, b.v[0].pprof, b.v[0].len, NULL, &err), 0);
	assert_int_equal(pd_pprof_sum(again, 0), 230000000);
	pd_pprof_destroy(again);
	pd_ingest_batch_fini(&b);

	/* another sampleRate, a spy, the aggregation: 1000 Hz is 1 ms a count */
	q = (struct pd_ingest_params){.name = "app.wall",
	                              .sample_rate = "1000",
	                              .spy_name = "gospy",
	                              .aggregation_type = "average"};
	assert_int_equal(run(&q, "a;b 5\n", 6, NULL, &b, &err), 0);
	assert_labels(&b.v[0], "wall{pyroscope_spy=\"gospy\", service_name=\"app\"}");
	assert_type(b.v[0].decoded, 0, "wall", "nanoseconds");
	assert_folded(b.v[0].decoded, 0, "a;b 5000000\n");
	comments(b.v[0].decoded, c, sizeof(c));
	assert_string_equal(c, "aggregation=average");
	pd_ingest_batch_fini(&b);

	/* an unreadable sampleRate is 100, as Pyroscope takes it; 0 keeps counts */
	q = (struct pd_ingest_params){.name = "app", .sample_rate = "fast"};
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), 0);
	assert_folded(b.v[0].decoded, 0, "a 10000000\n");
	pd_ingest_batch_fini(&b);
	q.sample_rate = "0";
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), 0);
	assert_type(b.v[0].decoded, 0, "samples", "count");
	assert_folded(b.v[0].decoded, 0, "a 1\n");
	pd_ingest_batch_fini(&b);
}

static void test_folded_types(void **state)
{
	(void)state;
	static const struct {
		const char *name, *series, *type, *unit;
		int64_t value;
	} cases[] = {
	    {"app.itimer", "profile", "cpu", "nanoseconds", 70000000},
	    {"app.seconds", "wall", "wall", "nanoseconds", 70000000},
	    {"app.inuse_space", "heap", "inuse_space", "bytes", 7},
	    {"app.inuse_objects", "heap", "inuse_objects", "count", 7},
	    {"app.alloc_objects", "allocs", "alloc_objects", "count", 7},
	    {"app.alloc_in_new_tlab_bytes", "allocs", "alloc_in_new_tlab_bytes", "bytes", 7},
	    {"app.goroutines", "goroutine", "goroutine", "count", 7},
	    {"app.mutex_count", "mutex", "contentions", "count", 7},
	    {"app.mutex_duration", "mutex", "delay", "nanoseconds", 7},
	    {"app.block_duration", "block", "delay", "nanoseconds", 7},
	    {"app.lock_count", "block", "contentions", "count", 7},
	    {"app.exceptions", "exceptions", "samples", "count", 7},
	    {"app.live", "heap", "live", "count", 7},
	    {"app.bytes", "memory", "samples", "bytes", 7},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_ingest_batch b;
		struct pd_err err;
		struct pd_ingest_params q = {.name = cases[i].name};
		assert_int_equal(run(&q, "x;y 7", 5, NULL, &b, &err), 0);
		assert_string_equal(pd_labels_get(b.v[0].labels, "__name__"), cases[i].series);
		assert_string_equal(pd_labels_get(b.v[0].labels, "service_name"), "app");
		assert_type(b.v[0].decoded, 0, cases[i].type, cases[i].unit);
		assert_int_equal(pd_pprof_sum(b.v[0].decoded, 0), cases[i].value);
		pd_ingest_batch_fini(&b);
	}
	/* service_name given in the name wins over the app name */
	struct pd_ingest_batch b;
	struct pd_err err;
	struct pd_ingest_params q = {.name = "app.cpu{service_name=svc,__private__=x}"};
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), 0);
	assert_labels(&b.v[0], "profile{service_name=\"svc\"}");
	pd_ingest_batch_fini(&b);
	q.name = "my.app.server";
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "unknown profile type \"server\""));
}

static void test_folded_lines(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	const char *body = "a;b;c\na;b\na;b;c\n\na;b;c\n";
	struct pd_ingest_params q = {.name = "app.cpu", .format = "lines"};
	assert_int_equal(run(&q, body, strlen(body), NULL, &b, &err), 0);
	assert_string_equal(b.format, "lines");
	assert_folded(b.v[0].decoded, 0, "a;b 10000000\na;b;c 30000000\n");
	pd_ingest_batch_fini(&b);
}

static void test_folded_malformed(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	struct pd_ingest_params q = {.name = "app"};
	static const struct {
		const char *body, *msg;
	} bad[] = {
	    {"a;b 1\na;b x\n", "line 2: \"x\" is not a count"},
	    {"a 1\nb 2\nc -3\n", "line 3: the count -3 is negative"},
	    {"a 99999999999999999999\n", "line 1"},
	    {"a 999999999999999999\n", "line 1: the count 999999999999999999 overflows"},
	    {"a 900000000000\na 900000000000\n", "line 2: the values of one stack sum past"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(run(&q, bad[i].body, strlen(bad[i].body), NULL, &b, &err),
		                 PD_EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: %s", bad[i].body, err.msg);
		assert_null(strstr(err.msg, ": :"));
		assert_int_equal(b.n, 0);
		assert_string_equal(b.format, "folded");
	}
	/* empty frames are no frames; an empty body is an empty profile */
	assert_int_equal(run(&q, ";a;;b; 2", 8, NULL, &b, &err), 0);
	assert_folded(b.v[0].decoded, 0, "a;b 20000000\n");
	pd_ingest_batch_fini(&b);
	assert_int_equal(run(&q, "", 0, NULL, &b, &err), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(pd_pprof_sample_count(b.v[0].decoded), 0);
	pd_ingest_batch_fini(&b);
	q.format = "bogus";
	assert_int_equal(run(&q, "a 1", 3, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "format \"bogus\""));
}

static void test_folded_limits(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	struct pd_ingest_params q = {.name = "app"};
	struct pd_ingest_limits lim = {.max_stack_depth = 2};
	assert_int_equal(run(&q, "a;b 1\na;b;c 1\n", 14, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_STACK_DEPTH);
	assert_non_null(strstr(err.msg, "line 2"));
	assert_non_null(strstr(err.msg, "--ingest.max-stack-depth"));
	assert_int_equal(b.n, 0);
	lim = (struct pd_ingest_limits){.max_samples = 2};
	assert_int_equal(run(&q, "a 1\nb 1\na 1\n", 12, &lim, &b, &err), 0); /* merged */
	pd_ingest_batch_fini(&b);
	assert_int_equal(run(&q, "a 1\nb 1\nc 1\n", 12, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_SAMPLES);
	assert_non_null(strstr(err.msg, "line 3"));
	lim = (struct pd_ingest_limits){.max_symbol_len = 4};
	assert_int_equal(run(&q, "abcd;abcde 1\n", 13, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_SYMBOL_LEN);
	/* the builder's memory follows --storage.tsdb.max-profile-decoded-size */
	lim = (struct pd_ingest_limits){.max_decompressed = 1024};
	char big[8192];
	size_t bl = 0;
	for (int i = 0; bl + 32 < sizeof(big); i++)
		bl += (size_t)snprintf(big + bl, sizeof(big) - bl, "main;f%d;g%d 1\n", i, i);
	assert_int_equal(run(&q, big, bl, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_DECOMPRESSED);
	assert_int_equal(b.n, 0);
	assert_int_equal(run(&q, big, bl, NULL, &b, &err), 0);
	pd_ingest_batch_fini(&b);
	lim = (struct pd_ingest_limits){.max_labels = 3};
	q.name = "app{a=1,b=2}";
	assert_int_equal(run(&q, "a 1", 3, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_LABELS);
	lim = (struct pd_ingest_limits){.max_label_value_len = 3};
	q.name = "app{a=1234}";
	assert_int_equal(run(&q, "a 1", 3, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_LABEL_VALUE_LEN);
	lim = (struct pd_ingest_limits){.max_label_name_len = 3};
	q.name = "app{abcd=1}";
	assert_int_equal(run(&q, "a 1", 3, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_LABEL_NAME_LEN);
}

/* ---- speedscope ------------------------------------------------------------- */

static struct pd_ingest_profile *by_label(struct pd_ingest_batch *b, const char *name,
                                          const char *value)
{
	for (size_t i = 0; i < b->n; i++) {
		const char *v = pd_labels_get(b->v[i].labels, name);
		if (v && strcmp(v, value) == 0)
			return &b->v[i];
	}
	fail_msg("no profile with %s=%s", name, value);
	return NULL;
}

static void test_speedscope(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	size_t len;
	/* speedscope_test.go: "a;b 500, a;b;c 500, a;b;d 400" at sample rate 10000
	 * (unit none): 100 Hz samples of 10 ms each, so x 1e5 ns */
	uint8_t *f = slurp(PY("speedscope/simple.speedscope.json"), &len);
	struct pd_ingest_params q = {.name = "foo", .format = "speedscope"};
	assert_int_equal(run(&q, f, len, NULL, &b, &err), 0);
	free(f);
	assert_string_equal(b.format, "speedscope");
	assert_int_equal(b.n, 1);
	assert_labels(&b.v[0], "profile{profile_name=\"simple.txt\", service_name=\"foo\"}");
	assert_type(b.v[0].decoded, 0, "cpu", "nanoseconds");
	assert_folded(b.v[0].decoded, 0, "a;b 50000000\na;b;c 50000000\na;b;d 40000000\n");
	pd_ingest_batch_fini(&b);

	/* two profiles: named foo.seconds (wall), the same tree, rate 100: x 1e7 ns */
	f = slurp(PY("speedscope/two-sampled.speedscope.json"), &len);
	q.name = "foo{x=y}";
	assert_int_equal(run(&q, f, len, NULL, &b, &err), 0);
	free(f);
	assert_int_equal(b.n, 2);
	for (int i = 0; i < 2; i++) {
		struct pd_ingest_profile *p = by_label(&b, "profile_name", i ? "two" : "one");
		char want[128];
		snprintf(want, sizeof(want),
		         "wall{profile_name=\"%s\", service_name=\"foo\", x=\"y\"}",
		         i ? "two" : "one");
		assert_labels(p, want);
		assert_type(p->decoded, 0, "wall", "nanoseconds");
		assert_folded(p->decoded, 0,
		              "a;b 5000000000\na;b;c 5000000000\na;b;d 4000000000\n");
	}
	pd_ingest_batch_fini(&b);

	/* duplicates merged into one profile: "a;b 1500, a;b;c 1500, a;b;d 1200" */
	f = slurp(PY("speedscope/duplicates.speedscope.json"), &len);
	assert_int_equal(run(&q, f, len, NULL, &b, &err), 0);
	free(f);
	assert_int_equal(b.n, 1);
	assert_labels(&b.v[0], "profile{profile_name=\"one\", service_name=\"foo\", x=\"y\"}");
	assert_folded(b.v[0].decoded, 0, "a;b 15000000000\na;b;c 15000000000\na;b;d 12000000000\n");
	pd_ingest_batch_fini(&b);

	/* bytes: foo.bytes is Pyroscope's memory, values as given */
	f = slurp(PY("speedscope/two-sampled-bytes.speedscope.json"), &len);
	assert_int_equal(run(&q, f, len, NULL, &b, &err), 0);
	free(f);
	assert_int_equal(b.n, 2);
	struct pd_ingest_profile *p = by_label(&b, "profile_name", "two");
	assert_string_equal(pd_labels_get(p->labels, "__name__"), "memory");
	assert_type(p->decoded, 0, "samples", "bytes");
	assert_folded(p->decoded, 0, "a;b 5\na;b;c 5\na;b;d 4\n");
	pd_ingest_batch_fini(&b);
}

static void test_speedscope_errors(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	struct pd_ingest_params q = {.name = "foo", .format = "speedscope"};
#define SCH "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	static const struct {
		const char *body, *msg;
	} bad[] = {
	    /* speedscope_test.go: unknown units are errors, not panics */
	    {SCH "\"shared\":{\"frames\":[{\"name\":\"main\"}]},\"profiles\":[{\"type\":"
	         "\"sampled\",\"unit\":\"TRIGGER_PANIC_UNKNOWN_UNIT\",\"name\":\"poc\","
	         "\"startValue\":0,\"endValue\":1,\"samples\":[[0]],\"weights\":[1]}]}",
	     "unknown unit"},
	    {SCH "\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":[{\"type\":"
	         "\"evented\",\"unit\":\"TRIGGER_PANIC_UNKNOWN_UNIT\",\"name\":\"poc\","
	         "\"startValue\":0,\"endValue\":1,\"events\":[{\"type\":\"O\",\"frame\":0,"
	         "\"at\":0},{\"type\":\"C\",\"frame\":0,\"at\":1}]}]}",
	     "unknown unit"},
	    {"{\"$schema\":\"x\"}", "unknown speedscope schema"},
	    {"{\"$schema\":", "ends before"},
	    {"[1,2]", "not a JSON object"},
	    {"{} x", "more after its JSON"},
	    {SCH "\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":[{\"type\":"
	         "\"sampled\",\"unit\":\"none\",\"samples\":[[1]],\"weights\":[1]}]}",
	     "frame 1 is not one of the 1 frames"},
	    {SCH "\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":[{\"type\":"
	         "\"sampled\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[]}]}",
	     "1 samples but 0 weights"},
	    {SCH "\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":[{\"type\":"
	         "\"sampled\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[-1]}]}",
	     "negative weight"},
	    {SCH "\"shared\":{\"frames\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"profiles\":[{"
	         "\"type\":\"evented\",\"unit\":\"none\",\"events\":[{\"type\":\"O\",\"frame\":0,"
	         "\"at\":2},{\"type\":\"C\",\"frame\":0,\"at\":1}]}]}",
	     "must be in order"},
	    {SCH "\"shared\":{\"frames\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"profiles\":[{"
	         "\"type\":\"evented\",\"unit\":\"none\",\"events\":[{\"type\":\"O\",\"frame\":0,"
	         "\"at\":0},{\"type\":\"C\",\"frame\":1,\"at\":1}]}]}",
	     "not the one open"},
	    {SCH "\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":[{"
	         "\"type\":\"evented\",\"unit\":\"none\",\"events\":[{\"type\":\"C\",\"frame\":0,"
	         "\"at\":0}]}]}",
	     "no frame open"},
	    {SCH "\"profiles\":[{\"type\":\"other\",\"unit\":\"none\"}]}",
	     "not evented or sampled"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (run(&q, bad[i].body, strlen(bad[i].body), NULL, &b, &err) != PD_EINVAL)
			fail_msg("case %zu: not refused (%s)", i, err.msg);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("case %zu: %s (want %s)", i, err.msg, bad[i].msg);
		assert_int_equal(b.n, 0);
		assert_string_equal(b.format, "speedscope");
	}
	/* several profiles named by an unknown unit: "none" is not a type */
	const char *none2 =
	    SCH "\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":["
	        "{\"type\":\"sampled\",\"name\":\"x\",\"unit\":\"none\",\"samples\":[[0]],"
	        "\"weights\":[1]},{\"type\":\"sampled\",\"name\":\"y\",\"unit\":\"none\","
	        "\"samples\":[[0]],\"weights\":[1]}]}";
	assert_int_equal(run(&q, none2, strlen(none2), NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "unknown profile type \"none\""));
	/* limits: JSON depth, profiles, stack depth */
	struct pd_ingest_limits lim = {.max_json_depth = 4};
	size_t len;
	uint8_t *f = slurp(PY("speedscope/simple.speedscope.json"), &len);
	assert_int_equal(run(&q, f, len, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_JSON_DEPTH);
	lim = (struct pd_ingest_limits){.max_stack_depth = 2};
	assert_int_equal(run(&q, f, len, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_STACK_DEPTH);
	free(f);
	f = slurp(PY("speedscope/two-sampled.speedscope.json"), &len);
	lim = (struct pd_ingest_limits){.max_profiles = 1};
	assert_int_equal(run(&q, f, len, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_PROFILES);
	assert_int_equal(b.n, 0);
	lim = (struct pd_ingest_limits){.max_symbol_len = 0, .max_samples = 2};
	assert_int_equal(run(&q, f, len, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_SAMPLES);
	free(f);
}

/* ---- pprof ------------------------------------------------------------------ */

/* A multipart/form-data body of the given parts (name, data, len). */
struct mpart {
	const char *name;
	const void *data;
	size_t len;
};

static uint8_t *multipart(const struct mpart *ps, size_t n, size_t *len)
{
	size_t cap = 1024;
	for (size_t i = 0; i < n; i++)
		cap += ps[i].len + 256;
	uint8_t *b = malloc(cap);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		o += (size_t)snprintf(
		    (char *)b + o, cap - o,
		    "--BOUNDARY\r\nContent-Disposition: form-data; name=\"%s\"; "
		    "filename=\"%s\"\r\nContent-Type: application/octet-stream\r\n\r\n",
		    ps[i].name, ps[i].name);
		memcpy(b + o, ps[i].data, ps[i].len);
		o += ps[i].len;
		memcpy(b + o, "\r\n", 2);
		o += 2;
	}
	o += (size_t)snprintf((char *)b + o, cap - o, "--BOUNDARY--\r\n");
	*len = o;
	return b;
}

#define MP_CT "multipart/form-data; boundary=BOUNDARY"

static void test_pprof_plain(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	size_t zl, rl;
	uint8_t *z = slurp(PD_TESTDATA "/profiles/goapp/cpu.pb.gz", &zl);
	uint8_t *raw = gunzip_file(PD_TESTDATA "/profiles/goapp/cpu.pb.gz", &rl);
	struct pd_ingest_params q = {
	    .name = "goapp.cpu{env=prod}", .format = "pprof", .spy_name = "gospy"};
	/* gzip and raw: the same stored bytes, the decoded profile with them */
	for (int gz = 0; gz < 2; gz++) {
		assert_int_equal(run(&q, gz ? z : raw, gz ? zl : rl, NULL, &b, &err), 0);
		assert_string_equal(b.format, "pprof");
		assert_int_equal(b.n, 1);
		/* Pyroscope's pprof series keeps the whole name as service_name */
		assert_labels(&b.v[0], "profile{env=\"prod\", pyroscope_spy=\"gospy\", "
		                       "service_name=\"goapp.cpu\"}");
		assert_int_equal(b.v[0].len, rl);
		assert_memory_equal(b.v[0].pprof, raw, rl);
		assert_non_null(b.v[0].decoded);
		/* no from: stored at the profile's own time */
		assert_int_equal(b.v[0].t_ms, pd_pprof_time_nanos(b.v[0].decoded) / 1000000);
		pd_ingest_batch_fini(&b);
	}
	/* from given: stored there, the profile's own times kept */
	q.from = "1577836800";
	assert_int_equal(run(&q, z, zl, NULL, &b, &err), 0);
	assert_int_equal(b.v[0].t_ms, 1577836800000LL);
	assert_true(pd_pprof_time_nanos(b.v[0].decoded) > 1577836800000000000LL);
	pd_ingest_batch_fini(&b);
	/* aggregationType given: a comment on the stored profile */
	q.aggregation_type = "average";
	assert_int_equal(run(&q, z, zl, NULL, &b, &err), 0);
	char c[256];
	comments(b.v[0].decoded, c, sizeof(c));
	assert_non_null(strstr(c, "aggregation=average"));
	struct pd_pprof_profile *again = NULL;
	assert_int_equal(pd_pprof_decode(&again, b.v[0].pprof, b.v[0].len, NULL, &err), 0);
	comments(again, c, sizeof(c));
	assert_non_null(strstr(c, "aggregation=average"));
	assert_int_equal(pd_pprof_sample_count(again), pd_pprof_sample_count(b.v[0].decoded));
	pd_pprof_destroy(again);
	pd_ingest_batch_fini(&b);
	/* an empty body stores nothing */
	assert_int_equal(run(&q, "", 0, NULL, &b, &err), 0);
	assert_int_equal(b.n, 0);
	/* not a profile */
	assert_int_equal(run(&q, "\x1f\x8bgarbage", 9, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "profile: "));
	assert_int_equal(run(&q, "\x08\x01\x12", 3, NULL, &b, &err), PD_EINVAL);
	assert_string_equal(b.format, "pprof");
	assert_int_equal(b.n, 0);
	free(z);
	free(raw);
}

static void test_pprof_names(void **state)
{
	(void)state;
	/* the metric Pyroscope's integration test expects of each file, in profd's name */
	static const struct {
		const char *file, *config, *series;
	} cases[] = {
	    {"pprof/cpu.pb.gz", NULL, "profile"},
	    {"pprof/cpu-js.pb.gz", NULL, "wall"},
	    {"pprof/nodejs-wall.pb.gz", NULL, "wall"},
	    {"pprof/nodejs-heap.pb.gz", NULL, "heap"},
	    {"pprof/heap.pb.gz", NULL, "heap"},
	    {"pprof/req_2.pprof", "pprof/req_2.st.json", "goroutine"},
	    {"pprof/req_3.pprof", "pprof/req_3.st.json", "block"},
	    {"pprof/req_4.pprof", "pprof/req_4.st.json", "mutex"},
	    /* Pyroscope's memory: a Go heap profile (alloc_* and inuse_*, showing
	     * inuse_space by default) is profd's heap, as a scraped one is; one
	     * whose default sample type is alloc_space is allocs */
	    {"pprof/req_5.pprof", "pprof/req_5.st.json", "heap"},
	    {"../profiles/goapp/allocs.pb.gz", NULL, "allocs"},
	    {"pprof/req_3.pprof", NULL, "mutex"}, /* Pyroscope's default: contentions are mutex */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[512];
		size_t pl, cl = 0, ml;
		snprintf(path, sizeof(path), "%s/pyroscope/%s", PD_TESTDATA, cases[i].file);
		uint8_t *prof = slurp(path, &pl), *cfg = NULL;
		struct mpart ps[2] = {{"profile", prof, pl}, {"sample_type_config", NULL, 0}};
		if (cases[i].config) {
			snprintf(path, sizeof(path), "%s/pyroscope/%s", PD_TESTDATA,
			         cases[i].config);
			cfg = slurp(path, &cl);
			ps[1].data = cfg;
			ps[1].len = cl;
		}
		uint8_t *body = multipart(ps, cfg ? 2 : 1, &ml);
		struct pd_ingest_batch b;
		struct pd_err err;
		struct pd_ingest_params q = {.name = "app", .content_type = MP_CT};
		if (run(&q, body, ml, NULL, &b, &err))
			fail_msg("%s: %s", cases[i].file, err.msg);
		assert_string_equal(b.format, "pprof");
		assert_int_equal(b.n, 1);
		const char *got = pd_labels_get(b.v[0].labels, "__name__");
		if (strcmp(got, cases[i].series) != 0)
			fail_msg("%s: %s, want %s", cases[i].file, got, cases[i].series);
		/* every sample type stays in the one profile */
		struct pd_pprof_profile *orig = NULL;
		assert_int_equal(pd_pprof_decode(&orig, prof, pl, NULL, &err), 0);
		assert_int_equal(pd_pprof_sample_type_count(b.v[0].decoded),
		                 pd_pprof_sample_type_count(orig));
		pd_pprof_destroy(orig);
		pd_ingest_batch_fini(&b);
		free(body);
		free(prof);
		free(cfg);
	}
}

static void test_pprof_multipart(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	size_t pl, ml;
	uint8_t *prof = slurp(PY("pprof/cpu.pb.gz"), &pl);
	struct pd_ingest_params q = {.name = "app", .content_type = MP_CT, .format = "pprof"};
	/* prev_profile: refused as Pyroscope refuses it */
	struct mpart ps[3] = {{"profile", prof, pl}, {"prev_profile", prof, pl}};
	uint8_t *body = multipart(ps, 2, &ml);
	assert_int_equal(run(&q, body, ml, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "prev_profile"));
	assert_int_equal(b.n, 0);
	free(body);
	/* a broken sample_type_config */
	ps[1] = (struct mpart){"sample_type_config", "{\"samples\":", 11};
	body = multipart(ps, 2, &ml);
	assert_int_equal(run(&q, body, ml, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "sample_type_config"));
	free(body);
	ps[1] = (struct mpart){"sample_type_config", "[[[[[[[[[[[[1]]]]]]]]]]]]", 25};
	body = multipart(ps, 2, &ml);
	struct pd_ingest_limits lim = {.max_json_depth = 4};
	assert_int_equal(run(&q, body, ml, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_JSON_DEPTH);
	free(body);
	/* a display name changes the series: samples shown as mutex_count */
	ps[1] = (struct mpart){"sample_type_config",
	                       "{\"samples\":{\"display-name\":\"mutex_count\"}}", 42};
	body = multipart(ps, 2, &ml);
	assert_int_equal(run(&q, body, ml, NULL, &b, &err), 0);
	assert_string_equal(pd_labels_get(b.v[0].labels, "__name__"), "mutex");
	pd_ingest_batch_fini(&b);
	free(body);
	/* a form without a profile stores nothing; a broken form is refused */
	ps[0] = (struct mpart){"other", "x", 1};
	body = multipart(ps, 1, &ml);
	assert_int_equal(run(&q, body, ml, NULL, &b, &err), 0);
	assert_int_equal(b.n, 0);
	assert_int_equal(run(&q, body, ml - 10, NULL, &b, &err), PD_EINVAL);
	free(body);
	free(prof);
}

static void test_pprof_limits(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	size_t zl;
	uint8_t *z = slurp(PD_TESTDATA "/profiles/goapp/heap.pb.gz", &zl);
	struct pd_ingest_params q = {.name = "app", .format = "pprof"};
	struct pd_ingest_limits lim = {.max_samples = 3};
	assert_int_equal(run(&q, z, zl, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_SAMPLES);
	assert_non_null(strstr(err.msg, "--storage.tsdb.max-profile-samples"));
	lim = (struct pd_ingest_limits){.max_decompressed = 1000};
	assert_int_equal(run(&q, z, zl, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_DECOMPRESSED);
	lim = (struct pd_ingest_limits){.max_ratio = 1};
	assert_int_equal(run(&q, z, zl, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_RATIO);
	lim = (struct pd_ingest_limits){.max_decoded_memory = 4096};
	assert_int_equal(run(&q, z, zl, &lim, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_DECOMPRESSED);
	free(z);
	z = slurp(PD_TESTDATA "/profiles/labels/cpu.pb.gz", &zl);
	lim = (struct pd_ingest_limits){.max_sample_labels = 1};
	int rc = run(&q, z, zl, &lim, &b, &err);
	assert_int_equal(rc, PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_LABELS);
	assert_int_equal(b.n, 0);
	free(z);
}

static void test_refused_formats(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	static const struct {
		const char *format, *ct, *name;
	} cases[] = {
	    {"trie", NULL, "trie"},
	    {"tree", NULL, "tree"},
	    {NULL, "binary/octet-stream+trie", "trie"},
	    {NULL, "binary/octet-stream+tree", "tree"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_ingest_params q = {
		    .name = "app", .format = cases[i].format, .content_type = cases[i].ct};
		assert_int_equal(run(&q, "x", 1, NULL, &b, &err), PD_EINCOMPAT);
		assert_non_null(strstr(err.msg, cases[i].name));
		assert_non_null(strstr(err.msg, "send pprof"));
		assert_non_null(strstr(err.msg, "folded"));
		assert_string_equal(b.format, cases[i].name);
		assert_int_equal(b.n, 0);
	}
}

static void test_pprof_dotnet(void **state)
{
	(void)state;
	/* Pyroscope's integration test: dotnet-pprof-3 (every function id 0) is taken
	 * from dotnetspy once its function ids are repaired; its series is
	 * process_cpu, with '-' made '_' in its sample types */
	size_t pl, cl, ml;
	uint8_t *prof = slurp(PY("pprof/dotnet-pprof-3.pb.gz"), &pl);
	uint8_t *cfg = slurp(PY("pprof/dotnet-pprof-3.st.json"), &cl);
	struct mpart ps[2] = {{"profile", prof, pl}, {"sample_type_config", cfg, cl}};
	uint8_t *body = multipart(ps, 2, &ml);
	struct pd_ingest_batch b;
	struct pd_err err;
	struct pd_ingest_params q = {.name = "app", .content_type = MP_CT, .spy_name = "dotnetspy"};
	if (run(&q, body, ml, NULL, &b, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(pd_labels_get(b.v[0].labels, "__name__"), "profile");
	struct pd_pprof_profile *p = b.v[0].decoded;
	assert_true(pd_pprof_sample_count(p) > 0);
	for (size_t i = 0; i < pd_pprof_sample_type_count(p); i++)
		assert_null(strchr(pd_pprof_sample_type(p, i), '-'));
	/* the stored bytes are the repaired profile, and go tool pprof's reading of
	 * function ids (none is 0) holds for them */
	struct pd_pprof_profile *again = NULL;
	assert_int_equal(pd_pprof_decode(&again, b.v[0].pprof, b.v[0].len, NULL, &err), 0);
	assert_int_equal(pd_pprof_sample_count(again), pd_pprof_sample_count(p));
	pd_pprof_destroy(again);
	pd_ingest_batch_fini(&b);
	/* an unknown spy whose sample_type_config is .NET's is repaired too */
	q.spy_name = NULL;
	assert_int_equal(run(&q, body, ml, NULL, &b, &err), 0);
	pd_ingest_batch_fini(&b);
	free(body);
	/* cut short or flipped, the repair leaves what it cannot read and never
	 * reads past it (ASan) */
	uint8_t *raw = NULL;
	size_t rl = 0;
	if (pd_gzip_is(prof, pl))
		assert_int_equal(pd_gunzip(prof, pl, 64 << 20, &raw, &rl, &err), 0);
	else {
		raw = malloc(pl);
		memcpy(raw, prof, pl);
		rl = pl;
	}
	for (size_t cut = 0; cut < rl; cut += 97) {
		uint8_t *c = malloc(cut ? cut : 1);
		memcpy(c, raw, cut);
		if (cut > 8)
			c[cut / 2] ^= (uint8_t)(1u << (cut % 8));
		size_t cl2 = cut;
		assert_int_equal(pyro_dotnet_fix(&c, &cl2), 0);
		free(c);
	}
	free(raw);
	/* from another spy it is refused as the malformed pprof it is */
	q.spy_name = "gospy";
	body = multipart(ps, 1, &ml);
	assert_int_equal(run(&q, body, ml, NULL, &b, &err), PD_EINVAL);
	assert_int_equal(b.n, 0);
	free(body);
	free(prof);
	free(cfg);
}

static void test_jfr_dispatch(void **state)
{
	(void)state;
	struct pd_ingest_batch b;
	struct pd_err err;
	struct pd_ingest_params q = {.name = "app.cpu", .format = "jfr"};
	assert_int_not_equal(run(&q, "not a recording", 15, NULL, &b, &err), 0);
	assert_string_equal(b.format, "jfr");
	assert_int_equal(b.n, 0);
}

static void test_pprof_time(void **state)
{
	(void)state;
	/* a pprof without time_nanos, sent without from: stored at the request's time */
	struct ingest_pb *pb = ingest_pb_create(NULL);
	ingest_pb_sample_type(pb, "samples", "count");
	uint64_t fn = ingest_pb_function(pb, "main", 4, NULL, 0, NULL, 0, 0);
	uint64_t loc = ingest_pb_frame(pb, fn, 0);
	int64_t v = 3;
	assert_int_equal(ingest_pb_sample(pb, &loc, 1, &v, 1, NULL, 0, 1), 0);
	uint8_t *raw = NULL;
	size_t len = 0;
	struct pd_err err = {0};
	assert_int_equal(ingest_pb_finish(pb, &raw, &len, NULL, &err), 0);
	ingest_pb_destroy(pb);
	struct pd_ingest_batch b;
	struct pd_ingest_params q = {.name = "app", .format = "pprof", .now_ms = NOW + 5};
	assert_int_equal(run(&q, raw, len, NULL, &b, &err), 0);
	assert_int_equal(b.v[0].t_ms, NOW + 5);
	assert_int_equal(pd_pprof_time_nanos(b.v[0].decoded), 0); /* kept as sent */
	/* samples:count is Go's cpu by its default display name */
	assert_string_equal(pd_labels_get(b.v[0].labels, "__name__"), "profile");
	pd_ingest_batch_fini(&b);
	free(raw);
}

/* ---- for tests/ingest_pyroscope_pprof.sh ------------------------------------ */

static int write_out(const char *dir)
{
	static const struct {
		const char *out, *name, *format, *body;
	} cases[] = {
	    {"folded-cpu.pb", "app.cpu", NULL, "main;work;spin 12\nmain;work 3\nmain;idle 1\n"},
	    {"folded-alloc.pb", "app.alloc_space", NULL, "main;grow 4096\nmain;grow;copy 512\n"},
	};
	struct pd_err err = {0};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_ingest_params q = {
		    .name = cases[i].name, .format = cases[i].format, .now_ms = NOW};
		struct pd_ingest_batch b = {0};
		if (pd_ingest_pyroscope(&q, (const uint8_t *)cases[i].body, strlen(cases[i].body),
		                        NULL, &b, &err)) {
			fprintf(stderr, "%s: %s\n", cases[i].out, err.msg);
			return 1;
		}
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].out);
		if (pd_file_write(path, b.v[0].pprof, b.v[0].len, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		pd_ingest_batch_fini(&b);
	}
	size_t len;
	uint8_t *f = NULL;
	if (pd_file_read(PY("speedscope/simple.speedscope.json"), 1 << 20, &f, &len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	struct pd_ingest_params q = {.name = "foo", .format = "speedscope", .now_ms = NOW};
	struct pd_ingest_batch b = {0};
	char path[1024];
	snprintf(path, sizeof(path), "%s/speedscope-simple.pb", dir);
	int rc = pd_ingest_pyroscope(&q, f, len, NULL, &b, &err) ||
	         pd_file_write(path, b.v[0].pprof, b.v[0].len, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	pd_ingest_batch_fini(&b);
	free(f);
	if (rc)
		return rc;
	/* a .NET profile with every function id 0, repaired */
	if (pd_file_read(PY("pprof/dotnet-pprof-3.pb.gz"), 1 << 24, &f, &len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	q = (struct pd_ingest_params){
	    .name = "app", .format = "pprof", .spy_name = "dotnetspy", .now_ms = NOW};
	snprintf(path, sizeof(path), "%s/dotnet-repaired.pb", dir);
	rc = pd_ingest_pyroscope(&q, f, len, NULL, &b, &err) ||
	     pd_file_write(path, b.v[0].pprof, b.v[0].len, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	pd_ingest_batch_fini(&b);
	free(f);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		return write_out(argv[2]);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_name),
	    cmocka_unit_test(test_time),
	    cmocka_unit_test(test_folded_groups),
	    cmocka_unit_test(test_folded_types),
	    cmocka_unit_test(test_folded_lines),
	    cmocka_unit_test(test_folded_malformed),
	    cmocka_unit_test(test_folded_limits),
	    cmocka_unit_test(test_speedscope),
	    cmocka_unit_test(test_speedscope_errors),
	    cmocka_unit_test(test_pprof_plain),
	    cmocka_unit_test(test_pprof_names),
	    cmocka_unit_test(test_pprof_multipart),
	    cmocka_unit_test(test_pprof_limits),
	    cmocka_unit_test(test_refused_formats),
	    cmocka_unit_test(test_pprof_dotnet),
	    cmocka_unit_test(test_jfr_dispatch),
	    cmocka_unit_test(test_pprof_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
