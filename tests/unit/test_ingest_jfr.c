/* test_ingest_jfr.c: unit tests of the JFR converter (ingest_jfr). Pyroscope's own
 * converter test data (testdata/pyroscope/jfr/) is converted and compared with
 * the profiles Pyroscope returns for it, sample for sample in a canonical form
 * that does not depend on ids (per sample: the stack as function:line leaf first,
 * its labels but span_id, which Pyroscope's merge drops, and its value; equal
 * stacks summed, zero values left out, sorted), with the sample and period types;
 * the series labels and periods are checked against docs/ingest-jfr.md. A small
 * recording written here by hand covers string encodings, unknown types and
 * fields, nested values, context labels; all its prefixes and many bit flips must
 * fail with an error naming a byte offset (or, for flips, succeed), never crash,
 * and store nothing. The JDK's own recording of testdata/jfr/ converts with the
 * event types it holds. With PD_JFR_DUMP set, the converted profiles are
 * written into that folder (for the go tool pprof -raw check of
 * cmake/ingest.cmake). */
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
		   const struct pd_ingest_limits *lim, struct pd_ingest_batch *b, struct pd_err *err)
{
	memset(b, 0, sizeof(*b));
	memset(err, 0, sizeof(*err));
	return ingest_jfr(m, body, len, ct, lim, b, err);
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
				assert_int_equal(pd_buf_printf(&b, "%s:%lld;", fn,
							       (long long)loc->line[k].line),
						 0);
			}
		}
		buf_str(&b, "|");
		for (size_t j = 0; j < s->nlabel; j++) {
			const char *k = pstr(&pp, s->label[j].key);
			if (strcmp(k, "span_id") == 0)
				continue;
			assert_int_equal(pd_buf_printf(&b, "%s=%s,", k, pstr(&pp, s->label[j].str)), 0);
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
		snprintf(metric, sizeof(metric), "%.*s", (int)(dot - fn - prefix - 1), fn + prefix + 1);
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
		snprintf(name, sizeof(name), "cortex-dev-01__kafka-0__cpu_lock_alloc__%d.jfr.gz", i);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cortex_cpu),
	    cmocka_unit_test(test_cortex_cpu_lock_alloc),
	    cmocka_unit_test(test_dumps_with_labels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
