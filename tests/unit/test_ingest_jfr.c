/* test_ingest_jfr.c: unit tests of the JFR converter (ingest_jfr). Pyroscope's own
 * converter test data (testdata/pyroscope/jfr/) is converted and compared with
 * the profiles Pyroscope returns for it, sample for sample in a canonical form
 * that does not depend on ids (per sample: the stack as function:line leaf first,
 * its labels but span_id, which Pyroscope's merge drops, and its value; equal
 * stacks summed, zero values left out, sorted), with the sample and period types;
 * the series labels and periods are checked against docs/ingest-jfr.md. A small
 * recording written here by hand covers string encodings, unknown types and
 * fields, nested values, two chunks, context labels, limits and the count a
 * wall-clock sample leaves to later events; all its prefixes and every bit flip
 * must fail with an error naming a byte offset (or, for flips, succeed), never
 * crash, and store nothing. The JDK's own recording of testdata/jfr/ converts
 * with the totals the JDK's jfr tool counts in it. With PD_JFR_DUMP set, the
 * converted profiles are written into that folder (for the go tool pprof -raw
 * check of cmake/ingest.cmake); with PD_JFR_SEED_DIR, the small recording (the
 * fuzz target's seeds). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingest_int.h"
#include "jfr_int.h"
#include "jfr_labels.pb-c.h"

#define DIR_PY PD_TESTDATA "/pyroscope/jfr"
#define BOUNDARY "profd-jfr-test-7f3a9c51e2b8"
#define EMPTY_HASH 17241709254077376921ull

/* ---- helpers ------------------------------------------------------------------ */

static uint8_t *slurp(const char *path, size_t *len)
{
	uint8_t *b = NULL;
	struct pd_err err = {0};
	if (pd_file_read(path, (size_t)1 << 30, &b, len, &err))
		fail_msg("%s: %s", path, err.msg);
	return b;
}

static void buf_add(struct pd_buf *b, const void *p, size_t n)
{
	assert_int_equal(pd_buf_append(b, p, n), 0);
}

static void buf_str(struct pd_buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* A multipart body with the jfr part and, when labels is not NULL, labels. */
static uint8_t *multipart(const uint8_t *jfr, size_t jl, const uint8_t *labels, size_t ll,
                          size_t *len)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	buf_str(&b, "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"jfr\"; "
	            "filename=\"jfr\"\r\nContent-Type: application/octet-stream\r\n\r\n");
	buf_add(&b, jfr, jl);
	if (labels) {
		buf_str(&b, "\r\n--" BOUNDARY "\r\nContent-Disposition: form-data; "
		            "name=\"labels\"; filename=\"labels\"\r\n"
		            "Content-Type: application/octet-stream\r\n\r\n");
		buf_add(&b, labels, ll);
	}
	buf_str(&b, "\r\n--" BOUNDARY "--\r\n");
	return pd_buf_steal(&b, len);
}

struct meta {
	struct ingest_meta m;
	struct pd_labels *labels;
};

static void meta_init(struct meta *x)
{
	struct pd_err err = {0};
	memset(x, 0, sizeof(*x));
	assert_int_equal(pd_labels_from_strings(&x->labels, &err, "service_name", "javaapp",
	                                        "region", "eu", NULL),
	                 0);
	x->m = (struct ingest_meta){.labels = x->labels,
	                            .app = "javaapp",
	                            .type = "cpu",
	                            .from_ms = 1700000000000,
	                            .until_ms = 1700000010000,
	                            .sample_rate = 100,
	                            .spy_name = "javaspy",
	                            .units = "samples",
	                            .aggregation = "sum",
	                            .now_ms = 1700000020000};
}

static void meta_fini(struct meta *x)
{
	pd_labels_destroy(x->labels);
}

static int convert(const struct ingest_meta *m, const uint8_t *body, size_t len, const char *ct,
                   const struct pd_ingest_limits *lim, struct pd_ingest_batch *b,
                   struct pd_err *err)
{
	memset(b, 0, sizeof(*b));
	memset(err, 0, sizeof(*err));
	int rc = ingest_jfr(m, body, len, ct, lim, b, err);
	/* the converter hands over bytes only (the store decodes them): decode them
	 * here as the store does, which also validates them */
	for (size_t i = 0; !rc && i < b->n; i++) {
		assert_null(b->v[i].decoded);
		rc = pd_pprof_decode(&b->v[i].decoded, b->v[i].pprof, b->v[i].len, NULL, err);
	}
	return rc;
}

/* ---- the canonical form ------------------------------------------------------- */

struct canon {
	char **line; /* "stack|labels" */
	int64_t *v;
	size_t n, cap;
};

static void canon_add(struct canon *c, char *line, int64_t v)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->line = realloc(c->line, c->cap * sizeof(*c->line));
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		assert_non_null(c->line);
		assert_non_null(c->v);
	}
	c->line[c->n] = line;
	c->v[c->n++] = v;
}

static void canon_free(struct canon *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->line[i]);
	free(c->line);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

static const char *pstr(const struct pd_pprof_parts *pp, int64_t i)
{
	return i >= 0 && (size_t)i < pp->nstrings ? pp->strings[i] : "?";
}

/* Adds the samples of p for its sample type named type (-1 if absent). */
static int canon_profile(struct canon *c, const struct pd_pprof_profile *p, const char *type,
                         const char *unit)
{
	struct pd_pprof_parts pp;
	struct pd_err err;
	assert_int_equal(pd_pprof_parts_get(p, &pp, &err), 0);
	int idx = -1;
	for (size_t i = 0; i < pp.nsample_type; i++)
		if (strcmp(pstr(&pp, pp.sample_type[i].type), type) == 0 &&
		    strcmp(pstr(&pp, pp.sample_type[i].unit), unit) == 0)
			idx = (int)i;
	if (idx < 0) {
		pd_pprof_parts_fini(&pp);
		return -1;
	}
	for (size_t i = 0; i < pp.nsample; i++) {
		const struct pd_pprof_psample *s = &pp.sample[i];
		struct pd_buf b;
		pd_buf_init(&b, 0);
		for (size_t j = 0; j < s->nlocation; j++) {
			const struct pd_pprof_plocation *loc = NULL;
			for (size_t k = 0; k < pp.nlocation; k++)
				if (pp.location[k].id == s->location_id[j])
					loc = &pp.location[k];
			assert_non_null(loc);
			for (size_t k = 0; k < loc->nline; k++) {
				const char *fn = "?";
				for (size_t q = 0; q < pp.nfunction; q++)
					if (pp.function[q].id == loc->line[k].function_id)
						fn = pstr(&pp, pp.function[q].name);
				assert_int_equal(
				    pd_buf_printf(&b, "%s:%lld;", fn, (long long)loc->line[k].line),
				    0);
			}
		}
		buf_str(&b, "|");
		for (size_t j = 0; j < s->nlabel; j++) {
			const char *k = pstr(&pp, s->label[j].key);
			if (strcmp(k, "span_id") == 0)
				continue;
			assert_int_equal(pd_buf_printf(&b, "%s=%s,", k, pstr(&pp, s->label[j].str)),
			                 0);
		}
		buf_add(&b, "", 1);
		size_t l;
		canon_add(c, (char *)pd_buf_steal(&b, &l), s->value[idx]);
	}
	pd_pprof_parts_fini(&pp);
	return 0;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts, sums equal lines and drops zeros: lines become "value|stack|labels". */
static void canon_finish(struct canon *c)
{
	char **tmp = malloc((c->n + 1) * sizeof(*tmp));
	assert_non_null(tmp);
	for (size_t i = 0; i < c->n; i++) {
		size_t l = strlen(c->line[i]);
		tmp[i] = malloc(l + 32);
		assert_non_null(tmp[i]);
		memcpy(tmp[i], c->line[i], l + 1);
		memcpy(tmp[i] + l + 1, &c->v[i], sizeof(int64_t));
	}
	qsort(tmp, c->n, sizeof(*tmp), cmp_line);
	struct canon out = {0};
	for (size_t i = 0; i < c->n;) {
		int64_t sum = 0;
		size_t j = i;
		for (; j < c->n && strcmp(tmp[j], tmp[i]) == 0; j++) {
			int64_t v;
			memcpy(&v, tmp[j] + strlen(tmp[j]) + 1, sizeof(v));
			sum += v;
		}
		if (sum) {
			char *s = malloc(strlen(tmp[i]) + 32);
			assert_non_null(s);
			sprintf(s, "%lld|%s", (long long)sum, tmp[i]);
			canon_add(&out, s, sum);
		}
		i = j;
	}
	for (size_t i = 0; i < c->n; i++)
		free(tmp[i]);
	free(tmp);
	canon_free(c);
	*c = out;
	qsort(c->line, c->n, sizeof(*c->line), cmp_line);
}

static void canon_compare(const char *what, struct canon *want, struct canon *got)
{
	size_t i = 0;
	for (; i < want->n && i < got->n; i++)
		if (strcmp(want->line[i], got->line[i]) != 0)
			break;
	if (i == want->n && i == got->n)
		return;
	print_error("%s: %zu samples expected, %zu converted; first difference at %zu:\n"
	            "  want %.300s\n  got  %.300s\n",
	            what, want->n, got->n, i, i < want->n ? want->line[i] : "(none)",
	            i < got->n ? got->line[i] : "(none)");
	fail();
}

/* ---- Pyroscope's test data -------------------------------------------------------- */

static const char *label_of(const struct pd_labels *ls, const char *name)
{
	const char *v = pd_labels_get(ls, name);
	return v ? v : "";
}

/* The profd series name of an expected file's metric part. */
static const char *profd_name(const char *metric)
{
	if (strncmp(metric, "process_cpu_", 12) == 0)
		return "profile";
	if (strncmp(metric, "wall_", 5) == 0)
		return "wall";
	if (strncmp(metric, "memory_live_", 12) == 0)
		return "heap";
	if (strncmp(metric, "memory_", 7) == 0)
		return "allocs";
	if (strncmp(metric, "mutex_", 6) == 0)
		return "mutex";
	if (strncmp(metric, "block_", 6) == 0)
		return "block";
	return "?";
}

/* The hash Pyroscope names a series filter by: xxhash64 of name\xffvalue\xff. */
static uint64_t filter_hash(const char *name, const char *value)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "%s\xff%s\xff", name, value);
	return pd_labels_xxh64(buf, (size_t)n, 0);
}

static void dump_batch(const char *jfr, const struct pd_ingest_batch *b)
{
	const char *dir = getenv("PD_JFR_DUMP");
	if (!dir || !*dir)
		return;
	for (size_t i = 0; i < b->n; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s.%zu.%s.pb", dir, jfr, i,
		         label_of(b->v[i].labels, "__name__"));
		struct pd_err err;
		assert_int_equal(pd_file_write(path, b->v[i].pprof, b->v[i].len, &err), 0);
	}
}

/* Converts testdata/pyroscope/jfr/<jfr> (with <labels> when not NULL) and checks
 * every expected profile of it. */
static void check_pyroscope(const char *jfr, const char *labels)
{
	char path[1024];
	size_t jl, ll = 0, bl;
	snprintf(path, sizeof(path), "%s/%s", DIR_PY, jfr);
	uint8_t *j = slurp(path, &jl), *l = NULL;
	if (labels) {
		snprintf(path, sizeof(path), "%s/%s", DIR_PY, labels);
		l = slurp(path, &ll);
	}
	uint8_t *body = multipart(j, jl, l, ll, &bl);
	struct meta x;
	meta_init(&x);
	struct pd_ingest_batch b;
	struct pd_err err;
	int rc = convert(&x.m, body, bl, "multipart/form-data; boundary=" BOUNDARY, NULL, &b, &err);
	if (rc)
		fail_msg("%s: %s", jfr, err.msg);
	assert_true(b.n > 0);
	assert_string_equal(b.format, "jfr");
	dump_batch(jfr, &b);
	/* the series labels */
	for (size_t i = 0; i < b.n; i++) {
		const struct pd_labels *ls = b.v[i].labels;
		assert_string_equal(label_of(ls, "service_name"), "javaapp");
		assert_string_equal(label_of(ls, "region"), "eu");
		assert_string_equal(label_of(ls, "pyroscope_spy"), "javaspy");
		assert_true(strlen(label_of(ls, "jfr_event")) > 0);
		assert_int_equal(b.v[i].t_ms, x.m.from_ms);
		assert_non_null(b.v[i].decoded);
		assert_int_equal(pd_pprof_time_nanos(b.v[i].decoded), x.m.from_ms * 1000000);
		assert_int_equal(pd_pprof_duration_nanos(b.v[i].decoded),
		                 (x.m.until_ms - x.m.from_ms) * 1000000);
		const char *name = label_of(ls, "__name__");
		if (strcmp(name, "profile") == 0 || strcmp(name, "wall") == 0)
			assert_int_equal(pd_pprof_period(b.v[i].decoded), 10000000);
	}
	/* every expected file */
	DIR *d = opendir(DIR_PY);
	assert_non_null(d);
	struct dirent *e;
	size_t prefix = strlen(jfr), checked = 0, unfiltered = 0;
	while ((e = readdir(d))) {
		const char *fn = e->d_name;
		size_t fl = strlen(fn);
		if (strncmp(fn, jfr, prefix) != 0 || fn[prefix] != '.' || fl < 7 ||
		    strcmp(fn + fl - 6, ".pb.gz") != 0)
			continue;
		char metric[256];
		const char *dot = strchr(fn + prefix + 1, '.');
		assert_non_null(dot);
		snprintf(metric, sizeof(metric), "%.*s", (int)(dot - fn - prefix - 1),
		         fn + prefix + 1);
		uint64_t hash = strtoull(dot + 1, NULL, 10);
		snprintf(path, sizeof(path), "%s/%s", DIR_PY, fn);
		struct pd_pprof_profile *want = NULL;
		if (pd_pprof_read_file(&want, path, NULL, &err))
			fail_msg("%s", err.msg);
		assert_int_equal(pd_pprof_sample_type_count(want), 1);
		const char *st = pd_pprof_sample_type(want, 0), *su = pd_pprof_sample_unit(want, 0);
		const char *name = profd_name(metric);
		struct canon cw = {0}, cg = {0};
		assert_int_equal(canon_profile(&cw, want, st, su), 0);
		size_t used = 0;
		for (size_t i = 0; i < b.n; i++) {
			const struct pd_labels *ls = b.v[i].labels;
			if (strcmp(label_of(ls, "__name__"), name) != 0)
				continue;
			if (hash != EMPTY_HASH &&
			    filter_hash("thread_name", label_of(ls, "thread_name")) != hash)
				continue;
			if (canon_profile(&cg, b.v[i].decoded, st, su) != 0)
				continue;
			assert_string_equal(pd_pprof_period_type(b.v[i].decoded),
			                    pd_pprof_period_type(want));
			assert_string_equal(pd_pprof_period_unit(b.v[i].decoded),
			                    pd_pprof_period_unit(want));
			used++;
		}
		if (!used)
			fail_msg("%s: no converted profile %s with %s:%s", fn, name, st, su);
		canon_finish(&cw);
		canon_finish(&cg);
		canon_compare(fn, &cw, &cg);
		canon_free(&cw);
		canon_free(&cg);
		pd_pprof_destroy(want);
		checked++;
		unfiltered += hash == EMPTY_HASH;
	}
	closedir(d);
	assert_true(checked > 0);
	/* the sample types converted are those expected, no more */
	size_t types = 0;
	for (size_t i = 0; i < b.n; i++) {
		int first = 1;
		for (size_t k = 0; k < i && first; k++)
			first = strcmp(label_of(b.v[k].labels, "__name__"),
			               label_of(b.v[i].labels, "__name__")) != 0;
		if (first)
			types += pd_pprof_sample_type_count(b.v[i].decoded);
	}
	assert_int_equal(types, unfiltered);
	pd_ingest_batch_fini(&b);
	meta_fini(&x);
	free(body);
	free(j);
	free(l);
}

static void test_cortex_cpu(void **state)
{
	(void)state;
	for (int i = 0; i < 4; i++) {
		char name[128];
		snprintf(name, sizeof(name), "cortex-dev-01__kafka-0__cpu__%d.jfr.gz", i);
		check_pyroscope(name, NULL);
	}
}

static void test_cortex_cpu_lock_alloc(void **state)
{
	(void)state;
	for (int i = 0; i < 4; i++) {
		char name[128];
		snprintf(name, sizeof(name), "cortex-dev-01__kafka-0__cpu_lock_alloc__%d.jfr.gz",
		         i);
		check_pyroscope(name, NULL);
	}
	check_pyroscope("cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz", NULL);
}

static void test_dumps_with_labels(void **state)
{
	(void)state;
	check_pyroscope("dump1.jfr.gz", "dump1.labels.pb.gz");
	check_pyroscope("dump2.jfr.gz", "dump2.labels.pb.gz");
}

/* ---- a recording written here ------------------------------------------------ */

static void w_u8(struct pd_buf *b, unsigned v)
{
	uint8_t c = (uint8_t)v;
	buf_add(b, &c, 1);
}

static void w_var(struct pd_buf *b, uint64_t v)
{
	while (v >= 0x80) {
		w_u8(b, (unsigned)(v & 0x7f) | 0x80);
		v >>= 7;
	}
	w_u8(b, (unsigned)v);
}

static void w_utf8(struct pd_buf *b, const char *s)
{
	w_u8(b, 3);
	w_var(b, strlen(s));
	buf_str(b, s);
}

/* The event body e as an event: its size first, padded to 4 bytes as the JDK
 * writes it. */
static void w_event(struct pd_buf *out, struct pd_buf *e)
{
	uint64_t n = e->len + 4;
	w_u8(out, (unsigned)(n & 0x7f) | 0x80);
	w_u8(out, (unsigned)((n >> 7) & 0x7f) | 0x80);
	w_u8(out, (unsigned)((n >> 14) & 0x7f) | 0x80);
	w_u8(out, (unsigned)((n >> 21) & 0x7f));
	buf_add(out, e->data, e->len);
	e->len = 0;
}

/* metadata strings */
static const char *const mstr[] = {
    "root", "metadata", "class", "field", "id", "name", "class", "constantPool", "true",
    "dimension", "1", "region", "annotation", "value",
    /* 14.. class names and ids */
    "long", "int", "boolean", "java.lang.String", "float", "double", "jdk.types.Symbol",
    "java.lang.Class", "jdk.types.Method", "jdk.types.StackFrame", "jdk.types.StackTrace",
    "jdk.types.ThreadState", "my.Unknown", "my.Nested", "jdk.ExecutionSample",
    "jdk.JavaMonitorEnter", "jdk.ActiveSetting", "my.UnknownEvent",
    /* 32.. ids */
    "1", "2", "3", "4", "5", "6", "20", "21", "22", "23", "24", "25", "26", "27", "100", "101",
    "102", "103",
    /* 50.. field names */
    "string", "hidden", "type", "descriptor", "method", "lineNumber", "bytecodeIndex", "truncated",
    "frames", "a", "b", "nested", "x", "s", "startTime", "stackTrace", "state", "contextId",
    "extra", "weird", "duration", "payload",
    /* 72.. */
    "profiler.WallClockSample", "104", "samples"};

static int mi(const char *s)
{
	for (size_t i = 0; i < sizeof(mstr) / sizeof(mstr[0]); i++)
		if (strcmp(mstr[i], s) == 0 && !(i == 6 && strcmp(s, "class") == 0))
			return (int)i;
	fail_msg("no metadata string %s", s);
	return -1;
}

struct fdef {
	const char *name, *type_id;
	int cp, array;
};

static void w_class(struct pd_buf *b, const char *id, const char *name, const struct fdef *f,
                    size_t nf)
{
	w_var(b, (uint64_t)mi("class"));
	w_var(b, 2);
	w_var(b, (uint64_t)mi("id"));
	w_var(b, (uint64_t)mi(id));
	w_var(b, (uint64_t)mi("name"));
	w_var(b, (uint64_t)mi(name));
	w_var(b, nf + 1);
	for (size_t i = 0; i < nf; i++) {
		w_var(b, (uint64_t)mi("field"));
		w_var(b, 2 + (unsigned)f[i].cp + (unsigned)f[i].array);
		w_var(b, (uint64_t)mi("name"));
		w_var(b, (uint64_t)mi(f[i].name));
		w_var(b, 6); /* "class" as an attribute name */
		w_var(b, (uint64_t)mi(f[i].type_id));
		if (f[i].cp) {
			w_var(b, (uint64_t)mi("constantPool"));
			w_var(b, (uint64_t)mi("true"));
		}
		if (f[i].array) {
			w_var(b, (uint64_t)mi("dimension"));
			w_var(b, (uint64_t)mi("1"));
		}
		w_var(b, 1); /* an annotation child, skipped */
		w_var(b, (uint64_t)mi("annotation"));
		w_var(b, 1);
		w_var(b, (uint64_t)mi("value"));
		w_var(b, (uint64_t)mi("x"));
		w_var(b, 0);
	}
	w_var(b, (uint64_t)mi("annotation")); /* a class annotation, skipped */
	w_var(b, 0);
	w_var(b, 0);
}

static void w_metadata(struct pd_buf *out)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	w_var(&b, 0); /* type */
	w_var(&b, 0);
	w_var(&b, 0);
	w_var(&b, 1);
	w_var(&b, sizeof(mstr) / sizeof(mstr[0]));
	for (size_t i = 0; i < sizeof(mstr) / sizeof(mstr[0]); i++)
		w_utf8(&b, mstr[i]);
	w_var(&b, (uint64_t)mi("root"));
	w_var(&b, 0);
	w_var(&b, 2);
	w_var(&b, (uint64_t)mi("metadata"));
	w_var(&b, 0);
	w_var(&b, 19);
	static const char *const prim[][2] = {{"1", "long"},    {"2", "int"},
	                                      {"3", "boolean"}, {"4", "java.lang.String"},
	                                      {"5", "float"},   {"6", "double"}};
	for (int i = 0; i < 6; i++)
		w_class(&b, prim[i][0], prim[i][1], NULL, 0);
	w_class(&b, "20", "jdk.types.Symbol", (struct fdef[]){{"string", "4", 0, 0}}, 1);
	w_class(&b, "21", "java.lang.Class",
	        (struct fdef[]){{"name", "20", 1, 0}, {"hidden", "3", 0, 0}}, 2);
	w_class(
	    &b, "22", "jdk.types.Method",
	    (struct fdef[]){{"type", "21", 1, 0}, {"name", "20", 1, 0}, {"descriptor", "20", 1, 0}},
	    3);
	w_class(&b, "23", "jdk.types.StackFrame",
	        (struct fdef[]){{"method", "22", 1, 0},
	                        {"lineNumber", "2", 0, 0},
	                        {"bytecodeIndex", "2", 0, 0}},
	        3);
	w_class(&b, "24", "jdk.types.StackTrace",
	        (struct fdef[]){{"truncated", "3", 0, 0}, {"frames", "23", 0, 1}}, 2);
	w_class(&b, "25", "jdk.types.ThreadState", (struct fdef[]){{"name", "4", 0, 0}}, 1);
	w_class(&b, "27", "my.Nested", (struct fdef[]){{"x", "1", 0, 0}, {"s", "4", 0, 0}}, 2);
	w_class(&b, "26", "my.Unknown",
	        (struct fdef[]){{"a", "6", 0, 0}, {"b", "5", 0, 0}, {"nested", "27", 0, 0}}, 3);
	w_class(&b, "100", "jdk.ExecutionSample",
	        (struct fdef[]){{"startTime", "1", 0, 0},
	                        {"stackTrace", "24", 1, 0},
	                        {"state", "25", 1, 0},
	                        {"contextId", "1", 0, 0},
	                        {"extra", "27", 0, 0},
	                        {"weird", "6", 0, 0}},
	        6);
	w_class(&b, "101", "jdk.JavaMonitorEnter",
	        (struct fdef[]){{"startTime", "1", 0, 0},
	                        {"duration", "1", 0, 0},
	                        {"stackTrace", "24", 1, 0},
	                        {"contextId", "1", 0, 0}},
	        4);
	w_class(&b, "102", "jdk.ActiveSetting",
	        (struct fdef[]){{"id", "1", 0, 0}, {"name", "4", 0, 0}, {"value", "4", 0, 0}}, 3);
	w_class(&b, "103", "my.UnknownEvent", (struct fdef[]){{"payload", "27", 0, 1}}, 1);
	w_class(&b, "104", "profiler.WallClockSample",
	        (struct fdef[]){{"startTime", "1", 0, 0},
	                        {"stackTrace", "24", 1, 0},
	                        {"state", "25", 1, 0},
	                        {"contextId", "1", 0, 0},
	                        {"samples", "2", 0, 0}},
	        5);
	/* 4 more classes nobody uses, so that the count is 18 */
	w_class(&b, "3", "boolean", NULL, 0);
	w_class(&b, "2", "int", NULL, 0);
	w_class(&b, "1", "long", NULL, 0);
	w_class(&b, "5", "float", NULL, 0);
	w_var(&b, (uint64_t)mi("region"));
	w_var(&b, 0);
	w_var(&b, 0);
	w_event(out, &b);
	pd_buf_fini(&b);
}

static void w_frame(struct pd_buf *b, uint64_t method, uint64_t line)
{
	w_var(b, method);
	w_var(b, line);
	w_var(b, 3); /* bytecodeIndex */
}

/* test_wide_units: symbol 6 gets this many more UTF-16 units, each a varint
 * past 0xffff (which a 16-bit char cannot hold) */
static size_t wide_units;

static void w_checkpoint(struct pd_buf *out)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	w_var(&b, 1); /* type */
	w_var(&b, 0);
	w_var(&b, 0);
	w_var(&b, 0); /* delta: the first */
	w_u8(&b, 1);
	w_var(&b, 7); /* pools */
	/* symbols, in four encodings */
	w_var(&b, 20);
	w_var(&b, 6);
	w_var(&b, 1);
	w_utf8(&b, "com/example/App");
	w_var(&b, 2);
	w_u8(&b, 5); /* Latin-1 */
	w_var(&b, 4);
	buf_str(&b, "w\xf6rk");
	w_var(&b, 3);
	w_u8(&b, 2); /* the String pool's 7 */
	w_var(&b, 7);
	w_var(&b, 4);
	w_u8(&b, 4); /* UTF-16 units */
	const char *lam = "Foo$$Lambda$12/0x0000000800c4d000";
	w_var(&b, strlen(lam));
	for (const char *q = lam; *q; q++)
		w_var(&b, (uint8_t)*q);
	w_var(&b, 5);
	w_utf8(&b, "run");
	w_var(&b, 6);
	w_u8(&b, 4); /* U+1F600 as a surrogate pair, then a lone surrogate */
	w_var(&b, 3 + wide_units);
	w_var(&b, 0xd83d);
	w_var(&b, 0xde00);
	w_var(&b, 0xd800);
	for (size_t i = 0; i < wide_units; i++)
		w_var(&b, 0x10000 + i % 0x100000);
	/* the String pool */
	w_var(&b, 4);
	w_var(&b, 1);
	w_var(&b, 7);
	w_utf8(&b, "main");
	/* classes */
	w_var(&b, 21);
	w_var(&b, 2);
	w_var(&b, 10);
	w_var(&b, 1);
	w_u8(&b, 0);
	w_var(&b, 11);
	w_var(&b, 4);
	w_u8(&b, 1);
	/* methods */
	w_var(&b, 22);
	w_var(&b, 5);
	static const uint64_t meth[][3] = {
	    {30, 10, 2}, {31, 10, 3}, {32, 11, 5}, {33, 99, 5}, {34, 11, 6}};
	for (int i = 0; i < 5; i++) {
		w_var(&b, meth[i][0]);
		w_var(&b, meth[i][1]);
		w_var(&b, meth[i][2]);
		w_var(&b, 1); /* descriptor */
	}
	/* stack traces */
	w_var(&b, 24);
	w_var(&b, 2);
	w_var(&b, 40);
	w_u8(&b, 0);
	w_var(&b, 2);
	w_frame(&b, 30, 12);
	w_frame(&b, 31, 5);
	w_var(&b, 41);
	w_u8(&b, 1);
	w_var(&b, 4);
	w_frame(&b, 32, 7);
	w_frame(&b, 33, 1);
	w_frame(&b, 34, 0xffffffffu); /* -1 as Java writes it */
	w_frame(&b, 31, 5);
	/* thread states */
	w_var(&b, 25);
	w_var(&b, 2);
	w_var(&b, 50);
	w_utf8(&b, "STATE_RUNNABLE");
	w_var(&b, 51);
	w_utf8(&b, "STATE_SLEEPING");
	/* a pool of a type nobody reads */
	w_var(&b, 26);
	w_var(&b, 1);
	w_var(&b, 1);
	buf_add(&b, "\x40\x09\x21\xfb\x54\x44\x2d\x18", 8); /* a double */
	buf_add(&b, "\x3f\x80\x00\x00", 4);                 /* a float */
	w_var(&b, 123456789);
	w_utf8(&b, "nested");
	w_event(out, &b);
	pd_buf_fini(&b);
}

static void w_exec(struct pd_buf *out, uint64_t stack, uint64_t state, uint64_t ctx)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	w_var(&b, 100);
	w_var(&b, 12345);
	w_var(&b, stack);
	w_var(&b, state);
	w_var(&b, ctx);
	w_var(&b, 77);
	w_u8(&b, 1); /* extra.s: "" */
	buf_add(&b, "\0\0\0\0\0\0\0\0", 8);
	w_event(out, &b);
	pd_buf_fini(&b);
}

/* A one-chunk recording: metadata, settings, samples, locks, an unknown event,
 * (with_wall: a wall-clock sample of 5, a lock, a sample), the constant pools
 * last. */
static uint8_t *small_jfr_with(size_t *len, int with_wall)
{
	struct pd_buf b, e;
	pd_buf_init(&b, 0);
	pd_buf_init(&e, 0);
	uint8_t header[68] = {'F', 'L', 'R', 0, 0, 2, 0, 1};
	buf_add(&b, header, sizeof(header));
	size_t meta = b.len;
	w_metadata(&b);
	w_var(&e, 102); /* ActiveSetting event=itimer */
	w_var(&e, 1);
	w_utf8(&e, "event");
	w_utf8(&e, "itimer");
	w_event(&b, &e);
	for (int i = 0; i < 3; i++)
		w_exec(&b, 40, 50, 1);
	w_exec(&b, 41, 50, 2);
	w_exec(&b, 40, 51, 1); /* sleeping: no cpu */
	w_exec(&b, 99, 50, 1); /* no such stack: left out */
	w_var(&e, 101);
	w_var(&e, 1);
	w_var(&e, 1000);
	w_var(&e, 40);
	w_var(&e, 1);
	w_event(&b, &e);
	w_var(&e, 101);
	w_var(&e, 1);
	w_var(&e, 500);
	w_var(&e, 41);
	w_var(&e, 0);
	w_event(&b, &e);
	w_var(&e, 103); /* unknown: skipped by its size */
	w_var(&e, 2);
	w_var(&e, 1);
	w_utf8(&e, "p");
	w_var(&e, 2);
	w_u8(&e, 0);
	w_event(&b, &e);
	if (with_wall) {
		w_var(&e, 104);
		w_var(&e, 1);
		w_var(&e, 41);
		w_var(&e, 50);
		w_var(&e, 2);
		w_var(&e, 5);
		w_event(&b, &e);
		w_var(&e, 101);
		w_var(&e, 1);
		w_var(&e, 7);
		w_var(&e, 41);
		w_var(&e, 2);
		w_event(&b, &e);
		w_exec(&b, 40, 50, 1);
	}
	size_t cp = b.len;
	w_checkpoint(&b);
	uint64_t f[3] = {b.len, cp, meta};
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 8; j++)
			b.data[8 + 8 * i + j] = (uint8_t)(f[i] >> (56 - 8 * j));
	b.data[63] = 0; /* ticks per second: 1e9 */
	uint64_t tps = 1000000000;
	for (int j = 0; j < 8; j++)
		b.data[56 + j] = (uint8_t)(tps >> (56 - 8 * j));
	pd_buf_fini(&e);
	return pd_buf_steal(&b, len);
}

static uint8_t *small_jfr(size_t *len)
{
	return small_jfr_with(len, 0);
}

/* The labels part: context 1 {thread_name=t1}, 2 {thread_name=t2, my.label=x}. */
static uint8_t *small_labels(size_t *len)
{
	Profd__Ingest__Jfr__LabelPair l1 = PROFD__INGEST__JFR__LABEL_PAIR__INIT,
	                              l2 = PROFD__INGEST__JFR__LABEL_PAIR__INIT,
	                              l3 = PROFD__INGEST__JFR__LABEL_PAIR__INIT;
	l1.key = 1;
	l1.value = 2;
	l2.key = 1;
	l2.value = 3;
	l3.key = 4;
	l3.value = 5;
	Profd__Ingest__Jfr__LabelPair *c1l[] = {&l1}, *c2l[] = {&l2, &l3};
	Profd__Ingest__Jfr__Context c1 = PROFD__INGEST__JFR__CONTEXT__INIT,
	                            c2 = PROFD__INGEST__JFR__CONTEXT__INIT;
	c1.n_labels = 1;
	c1.labels = c1l;
	c2.n_labels = 2;
	c2.labels = c2l;
	Profd__Ingest__Jfr__ContextEntry e1 = PROFD__INGEST__JFR__CONTEXT_ENTRY__INIT,
	                                 e2 = PROFD__INGEST__JFR__CONTEXT_ENTRY__INIT;
	e1.key = 1;
	e1.value = &c1;
	e2.key = 2;
	e2.value = &c2;
	Profd__Ingest__Jfr__ContextEntry *ce[] = {&e1, &e2};
	static const char *const strs[] = {"", "thread_name", "t1", "t2", "my.label", "x"};
	Profd__Ingest__Jfr__StringEntry se[6], *sp[6];
	for (int i = 0; i < 6; i++) {
		profd__ingest__jfr__string_entry__init(&se[i]);
		se[i].key = i;
		se[i].value.data = (uint8_t *)strs[i];
		se[i].value.len = strlen(strs[i]);
		sp[i] = &se[i];
	}
	Profd__Ingest__Jfr__LabelsSnapshot s = PROFD__INGEST__JFR__LABELS_SNAPSHOT__INIT;
	s.n_contexts = 2;
	s.contexts = ce;
	s.n_strings = 6;
	s.strings = sp;
	*len = profd__ingest__jfr__labels_snapshot__get_packed_size(&s);
	uint8_t *out = malloc(*len);
	assert_non_null(out);
	profd__ingest__jfr__labels_snapshot__pack(&s, out);
	return out;
}

/* The canonical lines of b's profile named name with labels having key=value
 * (key NULL: any), for sample type type. */
static void canon_of(const struct pd_ingest_batch *b, const char *name, const char *key,
                     const char *value, const char *type, const char *unit, struct canon *c)
{
	for (size_t i = 0; i < b->n; i++) {
		if (strcmp(label_of(b->v[i].labels, "__name__"), name) != 0)
			continue;
		if (key && strcmp(label_of(b->v[i].labels, key), value) != 0)
			continue;
		assert_int_equal(canon_profile(c, b->v[i].decoded, type, unit), 0);
	}
	canon_finish(c);
}

static void expect_lines(struct canon *c, const char *const *want, size_t n)
{
	struct canon w = {0};
	for (size_t i = 0; i < n; i++) {
		char *s = strdup(want[i]);
		assert_non_null(s);
		canon_add(&w, s, 0);
	}
	qsort(w.line, w.n, sizeof(*w.line), cmp_line);
	canon_compare("small recording", &w, c);
	canon_free(&w);
	canon_free(c);
}

static void check_small(const struct pd_ingest_batch *b, int times)
{
	char l1[256], l2[256], m1[256], m2[256], m3[256];
	const char *st1 = "com/example/App.w\xc3\xb6rk:12;com/example/App.main:5;";
	const char *st2 = "Foo$$Lambda_.run:7;Foo$$Lambda_.\xf0\x9f\x98\x80\xef\xbf\xbd:4294967295;"
	                  "com/example/App.main:5;";
	snprintf(l1, sizeof(l1), "%d|%s|", 30000000 * times, st1);
	snprintf(l2, sizeof(l2), "%d|%s|", 10000000 * times, st2);
	struct canon c = {0};
	canon_of(b, "profile", "thread_name", "t1", "cpu", "nanoseconds", &c);
	expect_lines(&c, (const char *const[]){l1}, 1);
	canon_of(b, "profile", "thread_name", "t2", "cpu", "nanoseconds", &c);
	expect_lines(&c, (const char *const[]){l2}, 1);
	snprintf(m1, sizeof(m1), "%d|%s|", 1 * times, st1);
	snprintf(m2, sizeof(m2), "%d|%s|", 1000 * times, st1);
	snprintf(m3, sizeof(m3), "%d|%s|", 500 * times, st2);
	canon_of(b, "mutex", "thread_name", "t1", "contentions", "count", &c);
	expect_lines(&c, (const char *const[]){m1}, 1);
	canon_of(b, "mutex", "thread_name", "t1", "delay", "nanoseconds", &c);
	expect_lines(&c, (const char *const[]){m2}, 1);
	canon_of(b, "mutex", "thread_name", "", "delay", "nanoseconds", &c);
	expect_lines(&c, (const char *const[]){m3}, 1);
	assert_int_equal(b->n, 4); /* cpu t1, t2; mutex t1, none */
}

/* UTF-16 units past 0xffff (a lone high surrogate before each, too) are read
 * as U+FFFD within the string's buffer, not written past it (ASan watches) */
static void test_wide_units(void **state)
{
	(void)state;
	wide_units = 20000;
	size_t jl;
	uint8_t *j = small_jfr(&jl);
	wide_units = 0;
	struct meta x;
	meta_init(&x);
	struct pd_ingest_batch b;
	struct pd_err err;
	int rc = convert(&x.m, j, jl, NULL, NULL, &b, &err);
	if (rc)
		fail_msg("the recording with wide UTF-16 units: %s", err.msg);
	assert_true(b.n > 0);
	pd_ingest_batch_fini(&b);
	meta_fini(&x);
	free(j);
}

static void test_small_recording(void **state)
{
	(void)state;
	size_t jl, ll, bl;
	uint8_t *j = small_jfr(&jl), *l = small_labels(&ll);
	uint8_t *body = multipart(j, jl, l, ll, &bl);
	const char *seed = getenv("PD_JFR_SEED_DIR"); /* writes the fuzz target's seeds */
	if (seed && *seed) {
		char path[1024];
		struct pd_err e;
		snprintf(path, sizeof(path), "%s/small.jfr", seed);
		assert_int_equal(pd_file_write(path, j, jl, &e), 0);
		uint8_t *lb = malloc(2 + ll + jl);
		assert_non_null(lb);
		lb[0] = 'L';
		lb[1] = (uint8_t)ll;
		memcpy(lb + 2, l, ll);
		memcpy(lb + 2 + ll, j, jl);
		snprintf(path, sizeof(path), "%s/small-with-labels", seed);
		assert_int_equal(pd_file_write(path, lb, 2 + ll + jl, &e), 0);
		free(lb);
	}
	struct meta x;
	meta_init(&x);
	struct pd_ingest_batch b;
	struct pd_err err;
	int rc = convert(&x.m, body, bl, "Multipart/Form-Data; boundary=" BOUNDARY, NULL, &b, &err);
	if (rc)
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < b.n; i++) {
		assert_string_equal(label_of(b.v[i].labels, "jfr_event"), "itimer");
		const char *t = label_of(b.v[i].labels, "thread_name");
		if (strcmp(t, "t2") == 0)
			assert_string_equal(label_of(b.v[i].labels, "my_label"), "x");
	}
	check_small(&b, 1);
	pd_ingest_batch_fini(&b);
	free(body);
	/* two chunks: the same again, each with its own pools */
	uint8_t *two = malloc(2 * jl);
	assert_non_null(two);
	memcpy(two, j, jl);
	memcpy(two + jl, j, jl);
	body = multipart(two, 2 * jl, l, ll, &bl);
	rc = convert(&x.m, body, bl, "multipart/form-data; boundary=" BOUNDARY, NULL, &b, &err);
	if (rc)
		fail_msg("%s", err.msg);
	check_small(&b, 2);
	pd_ingest_batch_fini(&b);
	free(body);
	free(two);
	/* gzip as the body itself, without labels: one profile per event type */
	uint8_t *gz;
	size_t gl;
	assert_int_equal(pd_gzip(j, jl, 6, &gz, &gl, &err), 0);
	rc = convert(&x.m, gz, gl, "application/octet-stream", NULL, &b, &err);
	if (rc)
		fail_msg("%s", err.msg);
	assert_int_equal(b.n, 2);
	pd_ingest_batch_fini(&b);
	/* limits */
	struct pd_ingest_limits lim = {.max_profiles = 1};
	body = multipart(j, jl, l, ll, &bl);
	rc = convert(&x.m, body, bl, "multipart/form-data; boundary=" BOUNDARY, &lim, &b, &err);
	assert_int_equal(rc, PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_PROFILES);
	assert_int_equal(b.n, 0);
	lim = (struct pd_ingest_limits){.max_stack_depth = 2};
	rc = convert(&x.m, body, bl, "multipart/form-data; boundary=" BOUNDARY, &lim, &b, &err);
	assert_int_equal(rc, PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_STACK_DEPTH);
	assert_int_equal(b.n, 0);
	lim = (struct pd_ingest_limits){.max_symbol_len = 10};
	rc = convert(&x.m, body, bl, "multipart/form-data; boundary=" BOUNDARY, &lim, &b, &err);
	assert_int_equal(rc, PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_SYMBOL_LEN);
	lim = (struct pd_ingest_limits){.max_decompressed = 100};
	rc = convert(&x.m, gz, gl, NULL, &lim, &b, &err);
	assert_int_equal(rc, PD_ETOOBIG);
	assert_true(b.limit_hit == PD_INGEST_LIMIT_DECOMPRESSED ||
	            b.limit_hit == PD_INGEST_LIMIT_RATIO);
	lim = (struct pd_ingest_limits){.max_ratio = 1};
	rc = convert(&x.m, gz, gl, NULL, &lim, &b, &err);
	assert_int_equal(rc, PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_RATIO);
	lim = (struct pd_ingest_limits){.max_labels = 1};
	rc = convert(&x.m, body, bl, "multipart/form-data; boundary=" BOUNDARY, &lim, &b, &err);
	assert_int_equal(rc, PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_LABELS);
	assert_int_equal(b.n, 0);
	lim = (struct pd_ingest_limits){.max_samples = 1};
	rc = convert(&x.m, body, bl, "multipart/form-data; boundary=" BOUNDARY, &lim, &b, &err);
	assert_int_equal(rc, 0); /* one sample a profile */
	pd_ingest_batch_fini(&b);
	/* a multipart body without its jfr part; a labels part that is not one */
	uint8_t *bad = multipart((const uint8_t *)"x", 1, NULL, 0, &bl);
	memcpy(strstr((char *)bad, "name=\"jfr\"") + 6, "jfx", 3);
	rc = convert(&x.m, bad, bl, "multipart/form-data; boundary=" BOUNDARY, NULL, &b, &err);
	assert_int_equal(rc, PD_EINVAL);
	assert_non_null(strstr(err.msg, "jfr"));
	free(bad);
	bad = multipart(j, jl, (const uint8_t *)"\xff\xff\xff", 3, &bl);
	rc = convert(&x.m, bad, bl, "multipart/form-data; boundary=" BOUNDARY, NULL, &b, &err);
	assert_int_equal(rc, PD_EINVAL);
	assert_non_null(strstr(err.msg, "labels"));
	assert_int_equal(b.n, 0);
	free(bad);
	free(body);
	free(gz);
	free(j);
	free(l);
	meta_fini(&x);
}

/* A wall-clock sample's count stays the count of the events after it, of any
 * type, as in Pyroscope's converter; in a recording whose event is not "wall"
 * it makes no cpu sample. */
static void test_wall_clock_count(void **state)
{
	(void)state;
	size_t jl, ll, bl;
	uint8_t *j = small_jfr_with(&jl, 1), *l = small_labels(&ll);
	uint8_t *body = multipart(j, jl, l, ll, &bl);
	struct meta x;
	meta_init(&x);
	struct pd_ingest_batch b;
	struct pd_err err;
	int rc = convert(&x.m, body, bl, "multipart/form-data; boundary=" BOUNDARY, NULL, &b, &err);
	if (rc)
		fail_msg("%s", err.msg);
	const char *st1 = "com/example/App.w\xc3\xb6rk:12;com/example/App.main:5;";
	const char *st2 = "Foo$$Lambda_.run:7;Foo$$Lambda_.\xf0\x9f\x98\x80\xef\xbf\xbd:4294967295;"
	                  "com/example/App.main:5;";
	char want[256];
	struct canon c = {0};
	snprintf(want, sizeof(want), "%d|%s|", 50000000, st2);
	canon_of(&b, "wall", "thread_name", "t2", "wall", "nanoseconds", &c);
	expect_lines(&c, (const char *const[]){want}, 1);
	snprintf(want, sizeof(want), "%d|%s|", 30000000 + 50000000, st1);
	canon_of(&b, "profile", "thread_name", "t1", "cpu", "nanoseconds", &c);
	expect_lines(&c, (const char *const[]){want}, 1);
	snprintf(want, sizeof(want), "%d|%s|", 10000000, st2);
	canon_of(&b, "profile", "thread_name", "t2", "cpu", "nanoseconds", &c);
	expect_lines(&c, (const char *const[]){want}, 1);
	snprintf(want, sizeof(want), "%d|%s|", 5, st2);
	canon_of(&b, "mutex", "thread_name", "t2", "contentions", "count", &c);
	expect_lines(&c, (const char *const[]){want}, 1);
	snprintf(want, sizeof(want), "%d|%s|", 7, st2);
	canon_of(&b, "mutex", "thread_name", "t2", "delay", "nanoseconds", &c);
	expect_lines(&c, (const char *const[]){want}, 1);
	assert_int_equal(b.n, 6);
	pd_ingest_batch_fini(&b);
	free(body);
	free(j);
	free(l);
	meta_fini(&x);
}

/* Every prefix (as it is, and with the chunk's size cut to it) and every bit
 * flip of the small recording: an error naming a byte offset, or (flips) a
 * conversion; never a crash, and nothing kept on failure. */
static void test_truncated_and_flipped(void **state)
{
	(void)state;
	size_t jl;
	uint8_t *j = small_jfr(&jl);
	uint8_t *t = malloc(jl);
	assert_non_null(t);
	struct meta x;
	meta_init(&x);
	struct pd_ingest_batch b;
	struct pd_err err;
	for (size_t n = 0; n < jl; n++) {
		for (int patched = 0; patched < 2; patched++) {
			memcpy(t, j, n);
			if (patched && n >= 16)
				for (int k = 0; k < 8; k++)
					t[8 + k] = (uint8_t)((uint64_t)n >> (56 - 8 * k));
			int rc = convert(&x.m, t, n, NULL, NULL, &b, &err);
			if (rc != PD_EINVAL || !strstr(err.msg, "at byte "))
				fail_msg("prefix %zu%s: rc %d: %s", n, patched ? " (size cut)" : "",
				         rc, err.msg);
			assert_int_equal(b.n, 0);
		}
	}
	size_t ok = 0, failed = 0;
	for (size_t i = 0; i < jl; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(t, j, jl);
			t[i] ^= (uint8_t)(1u << bit);
			int rc = convert(&x.m, t, jl, NULL, NULL, &b, &err);
			if (rc == 0) {
				ok++;
				pd_ingest_batch_fini(&b);
				continue;
			}
			failed++;
			assert_int_equal(b.n, 0);
			if (rc == PD_EINVAL && !strstr(err.msg, "at byte ") &&
			    !strstr(err.msg, "label"))
				fail_msg("flip %zu.%d: %s", i, bit, err.msg);
		}
	}
	assert_true(failed > 0);
	assert_true(ok > 0);
	free(t);
	free(j);
	meta_fini(&x);
}

/* The JDK's own recording (testdata/jfr/jdk17-busy.jfr.gz, of Busy.java with
 * busy.jfc): the totals are those of `jfr print` over the same file. */
static void test_jdk_recording(void **state)
{
	(void)state;
	size_t len;
	uint8_t *gz = slurp(PD_TESTDATA "/jfr/jdk17-busy.jfr.gz", &len);
	struct meta x;
	meta_init(&x);
	struct pd_ingest_batch b;
	struct pd_err err;
	int rc = convert(&x.m, gz, len, "application/octet-stream", NULL, &b, &err);
	if (rc)
		fail_msg("%s", err.msg);
	dump_batch("jdk17-busy.jfr.gz", &b);
	int seen = 0;
	for (size_t i = 0; i < b.n; i++) {
		const char *name = label_of(b.v[i].labels, "__name__");
		const struct pd_pprof_profile *p = b.v[i].decoded;
		assert_string_equal(label_of(b.v[i].labels, "jfr_event"), "");
		if (strcmp(name, "profile") == 0) {
			/* 170 execution samples, all runnable, at 100 Hz */
			assert_int_equal(pd_pprof_total(p, 0), 170 * 10000000ll);
			seen |= 1;
		} else if (strcmp(name, "allocs") == 0) {
			assert_int_equal(pd_pprof_sample_type_count(p), 2);
			assert_string_equal(pd_pprof_sample_type(p, 0), "alloc_sample_objects");
			assert_string_equal(pd_pprof_sample_type(p, 1), "alloc_sample_bytes");
			assert_int_equal(pd_pprof_total(p, 0), 165);
			assert_int_equal(pd_pprof_total(p, 1), 307249256);
			seen |= 2;
		} else if (strcmp(name, "mutex") == 0) {
			assert_int_equal(pd_pprof_total(p, 0), 379);
			assert_int_equal(pd_pprof_total(p, 1), 2050849593);
			seen |= 4;
		} else if (strcmp(name, "block") == 0) {
			assert_int_equal(pd_pprof_total(p, 0), 1147);
			assert_int_equal(pd_pprof_total(p, 1), 2592747525);
			seen |= 8;
		} else {
			fail_msg("unexpected profile %s", name);
		}
	}
	assert_int_equal(seen, 15);
	assert_int_equal(b.n, 4);
	/* the frames: Busy's methods by their names */
	int fib = 0;
	for (size_t i = 0; i < b.n; i++) {
		struct pd_pprof_parts pp;
		assert_int_equal(pd_pprof_parts_get(b.v[i].decoded, &pp, &err), 0);
		for (size_t k = 0; k < pp.nfunction; k++)
			fib += strcmp(pstr(&pp, pp.function[k].name), "Busy.fib") == 0;
		pd_pprof_parts_fini(&pp);
	}
	assert_true(fib > 0);
	pd_ingest_batch_fini(&b);
	free(gz);
	meta_fini(&x);
}

/* The names of JVM-generated classes, as Pyroscope's rules rename them. */
/* A name made of 4 MiB of "$$Lambda" markers is rewritten in one pass: the scan
 * for a newline before each marker is done once (a scan per marker would take
 * 10^12 steps here, past the test's timeout) */
static void test_symbols_many_markers(void **state)
{
	(void)state;
	size_t n = (size_t)4 << 20;
	char *s = malloc(n), *o = malloc(n + 16);
	assert_non_null(s);
	assert_non_null(o);
	for (size_t i = 0; i < n; i++)
		s[i] = "$$Lambda"[i % 8];
	size_t l = jfr_symbol_normalize(s, n, o);
	assert_true(l > 0 && l <= n);
	free(s);
	free(o);
}

static void test_symbols(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
	    {"jdk/internal/reflect/GeneratedMethodAccessor31",
	     "jdk/internal/reflect/GeneratedMethodAccessor_"},
	    {"jdk/internal/reflect/GeneratedMethodAccessor",
	     "jdk/internal/reflect/GeneratedMethodAccessor"},
	    {"org/example/rideshare/OrderService$$Lambda$669.0x0000000800fd7318",
	     "org/example/rideshare/OrderService$$Lambda_"},
	    {"Fib$$Lambda.0x00007ffa600c4da0", "Fib$$Lambda_"},
	    {"Fib$$Lambda$12/0x1", "Fib$$Lambda_"},
	    {"Fib$$Lambda123", "Fib$$Lambda_"},
	    {"Fib$$Lambda$12", "Fib$$Lambda$12"},
	    {"$$Lambda123", "$$Lambda123"},
	    {"A$$Lambda$1/0x1$$Lambda$2/0x2", "A$$Lambda$1/0x1$$Lambda_"},
	    {"libzstd-jni-1.5.1-16931311898282279136.so", "libzstd-jni-_.so"},
	    {"/tmp/libzstd-jni-1.5.1-1693.so (deleted)", "libzstd-jni-_.so"},
	    {"./tmp/libamazonCorrettoCryptoProvider109b39cf33c563eb.so",
	     "libamazonCorrettoCryptoProvider_.so"},
	    {"./tmp/amazonCorrettoCryptoProviderNativeLibraries.7382c2f79097f415/libcrypto.so "
	     "(deleted)",
	     "libamazonCorrettoCryptoProvider_.so"},
	    {"libasyncProfiler-linux-x64-17b9a1d8156277a98ccc871afa9a8f69215f92.so",
	     "libasyncProfiler-_.so"},
	    {"libasyncProfiler-linux-x64-27b9a1d8156277a98ccc871afa9a8f69215f92.so",
	     "libasyncProfiler-linux-x64-27b9a1d8156277a98ccc871afa9a8f69215f92.so"},
	    {"Svc$$EnhancerBySpringCGLIB$$abc123", "Svc$$EnhancerBySpringCGLIB$$_"},
	    {"Svc$$EnhancerBySpringCGLIB$$", "Svc$$EnhancerBySpringCGLIB$$_"},
	    {"Svc$$EnhancerBySpringCGLIB$$a\nb", "Svc$$EnhancerBySpringCGLIB$$a\nb"},
	    {"plain/Class", "plain/Class"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[256];
		size_t n = jfr_symbol_normalize(cases[i][0], strlen(cases[i][0]), out);
		out[n] = 0;
		assert_string_equal(out, cases[i][1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cortex_cpu),        cmocka_unit_test(test_cortex_cpu_lock_alloc),
	    cmocka_unit_test(test_dumps_with_labels), cmocka_unit_test(test_small_recording),
	    cmocka_unit_test(test_wide_units),
	    cmocka_unit_test(test_wall_clock_count),  cmocka_unit_test(test_truncated_and_flipped),
	    cmocka_unit_test(test_jdk_recording),     cmocka_unit_test(test_symbols),
	    cmocka_unit_test(test_symbols_many_markers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
