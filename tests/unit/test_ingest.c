/* test_ingest.c: the parts of pkg/ingest that every converter shares: the
 * request's batch and its limits (profiles, memory), the series labels named as
 * Pyroscope names them, multipart bodies, the profile builder, and the memory
 * bound of a protobuf body before protobuf-c unpacks it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingest_int.h"

static struct pd_labels *labels_of(const char *metric, const char *svc)
{
	struct pd_labels *ls = NULL;
	struct pd_err err = {0};
	int limit = 0;
	struct ingest_label l = {"service_name", 12, svc, strlen(svc)};
	assert_int_equal(ingest_series(&l, 1, metric, NULL, NULL, &ls, &limit, &err), 0);
	return ls;
}

/* max_profiles and max_request_memory refuse the profile that passes them, name
 * the flag, and free what they were handed (ASan's leak check watches) */
static void test_batch_limits(void **state)
{
	(void)state;
	struct pd_ingest_limits lim = {.max_profiles = 2, .max_request_memory = 10000};
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	for (int i = 0; i < 2; i++)
		assert_int_equal(pd_ingest_batch_add(&b, &lim, labels_of("profile", "a"),
						     calloc(1, 100), 100, NULL, 1000 + i, &err),
				 0);
	assert_int_equal(pd_ingest_batch_add(&b, &lim, labels_of("profile", "a"), calloc(1, 100),
					     100, NULL, 1002, &err),
			 PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_PROFILES);
	assert_non_null(strstr(err.msg, "--ingest.max-profiles-per-request"));
	assert_int_equal(b.n, 2);
	pd_ingest_batch_fini(&b);

	lim.max_profiles = 0;
	memset(&err, 0, sizeof(err));
	/* 2 x (4000 + 256) fit in 10000; a third does not */
	for (int i = 0; i < 2; i++)
		assert_int_equal(pd_ingest_batch_add(&b, &lim, labels_of("profile", "a"),
						     calloc(1, 4000), 4000, NULL, 1000 + i, &err),
				 0);
	assert_int_equal(pd_ingest_batch_add(&b, &lim, labels_of("profile", "a"), calloc(1, 4000),
					     4000, NULL, 1002, &err),
			 PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_REQUEST_MEMORY);
	assert_non_null(strstr(err.msg, "--ingest.max-request-memory"));
	pd_ingest_batch_fini(&b);
	assert_int_equal(b.n, 0);
}

/* Pyroscope's sanitization: dots become underscores, private names are left
 * out (also those dots would make private), service_name comes from the
 * fallback, a clash after sanitizing with another value is refused */
static void test_series(void **state)
{
	(void)state;
	struct ingest_label ls[] = {
	    {"process.runtime.name", 20, "go", 2}, {"._x", 3, "private", 7},
	    {"__name__", 8, "spoof", 5},	   {"__y", 3, "private", 7},
	    {"empty", 5, "", 0},
	};
	struct pd_labels *out = NULL;
	struct pd_err err = {0};
	int limit = 0;
	assert_int_equal(ingest_series(ls, 5, "wall", "checkout", NULL, &out, &limit, &err), 0);
	assert_int_equal(pd_labels_len(out), 3);
	assert_string_equal(pd_labels_get(out, "__name__"), "wall");
	assert_string_equal(pd_labels_get(out, "process_runtime_name"), "go");
	assert_string_equal(pd_labels_get(out, "service_name"), "checkout");
	assert_null(pd_labels_get(out, "__x"));
	pd_labels_destroy(out);

	struct ingest_label clash[] = {{"a.b", 3, "1", 1}, {"a_b", 3, "2", 1}};
	assert_int_equal(ingest_series(clash, 2, "wall", "s", NULL, &out, &limit, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "a_b"));
	struct ingest_label bad[] = {{"1x", 2, "1", 1}};
	assert_int_equal(ingest_series(bad, 1, "wall", "s", NULL, &out, &limit, &err), PD_EINVAL);
	assert_int_equal(ingest_series(NULL, 0, "wall", NULL, NULL, &out, &limit, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "service"));

	struct pd_ingest_limits lim = {.max_labels = 3, .max_label_value_len = 4};
	struct ingest_label many[] = {{"a", 1, "1", 1}, {"b", 1, "2", 1}};
	assert_int_equal(ingest_series(many, 2, "wall", "s", &lim, &out, &limit, &err), PD_ETOOBIG);
	assert_int_equal(limit, PD_INGEST_LIMIT_LABELS);
	struct ingest_label longv[] = {{"a", 1, "12345", 5}};
	assert_int_equal(ingest_series(longv, 1, "wall", "s", &lim, &out, &limit, &err),
			 PD_ETOOBIG);
	assert_int_equal(limit, PD_INGEST_LIMIT_LABEL_VALUE_LEN);
}

static void test_multipart(void **state)
{
	(void)state;
	static const char body[] = "--XyZ\r\n"
				   "Content-Disposition: form-data; name=\"profile\"; filename=\"p\"\r\n"
				   "Content-Type: application/octet-stream\r\n\r\n"
				   "AB\r\nCD\r\n"
				   "--XyZ\r\n"
				   "Content-Disposition: form-data; name=\"sample_type_config\"\r\n\r\n"
				   "{}\r\n"
				   "--XyZ--\r\n";
	struct pd_ingest_part parts[4];
	size_t n = 0;
	struct pd_err err = {0};
	assert_int_equal(pd_ingest_multipart((const uint8_t *)body, sizeof(body) - 1,
					     "multipart/form-data; boundary=XyZ", parts, 4, &n, &err),
			 0);
	assert_int_equal(n, 2);
	const struct pd_ingest_part *p = pd_ingest_part_get(parts, n, "profile");
	assert_non_null(p);
	assert_int_equal(p->len, 6);
	assert_memory_equal(p->data, "AB\r\nCD", 6);
	assert_string_equal(p->filename, "p");
	p = pd_ingest_part_get(parts, n, "sample_type_config");
	assert_non_null(p);
	assert_int_equal(p->len, 2);
	assert_null(pd_ingest_part_get(parts, n, "jfr"));
	/* one part allowed: the second is refused */
	assert_int_equal(pd_ingest_multipart((const uint8_t *)body, sizeof(body) - 1,
					     "multipart/form-data; boundary=XyZ", parts, 1, &n, &err),
			 PD_ETOOBIG);
	/* every cut of the body is refused or read, never read past its end */
	for (size_t cut = 0; cut < sizeof(body) - 1; cut++) {
		uint8_t *c = malloc(cut ? cut : 1);
		memcpy(c, body, cut);
		int rc = pd_ingest_multipart(c, cut, "multipart/form-data; boundary=XyZ", parts, 4,
					     &n, &err);
		assert_true(rc == 0 || rc == PD_EINVAL);
		free(c);
	}
	/* an empty push has no body at all */
	assert_int_equal(pd_ingest_multipart(NULL, 0, "multipart/form-data; boundary=XyZ", parts, 4,
					     &n, &err),
			 PD_EINVAL);
	assert_int_equal(pd_ingest_multipart((const uint8_t *)body, sizeof(body) - 1,
					     "multipart/form-data", parts, 4, &n, &err),
			 PD_EINVAL);
	assert_non_null(strstr(err.msg, "boundary"));
}

/* the builder interns functions and locations, merges equal stacks, keeps the
 * sample types asked for, and its limits are sticky errors */
static void test_builder(void **state)
{
	(void)state;
	struct pd_ingest_limits lim = {.max_stack_depth = 3, .max_symbol_len = 8};
	struct ingest_pb *b = ingest_pb_create(&lim);
	assert_non_null(b);
	assert_int_equal(ingest_pb_sample_type(b, "objects", "count"), 0);
	assert_int_equal(ingest_pb_sample_type(b, "space", "bytes"), 0);
	uint64_t f1 = ingest_pb_function(b, "main", 4, NULL, 0, "m.go", 4, 0);
	uint64_t f2 = ingest_pb_function(b, "work", 4, NULL, 0, "m.go", 4, 0);
	assert_true(f1 && f2 && f1 != f2);
	assert_int_equal(ingest_pb_function(b, "main", 4, NULL, 0, "m.go", 4, 0), f1);
	uint64_t l1 = ingest_pb_frame(b, f1, 10), l2 = ingest_pb_frame(b, f2, 20);
	assert_int_equal(ingest_pb_frame(b, f1, 10), l1);
	uint64_t stack[] = {l2, l1};
	int64_t v[] = {1, 100};
	assert_int_equal(ingest_pb_sample(b, stack, 2, v, 2, NULL, 0, 1), 0);
	assert_int_equal(ingest_pb_sample(b, stack, 2, v, 2, NULL, 0, 1), 0);
	assert_int_equal(ingest_pb_nsamples(b), 1);
	size_t keep[] = {1};
	assert_int_equal(ingest_pb_select_types(b, keep, 1), 0);
	uint8_t *out = NULL;
	size_t len = 0;
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	assert_int_equal(ingest_pb_finish(b, &out, &len, &p, &err), 0);
	assert_int_equal(pd_pprof_sample_type_count(p), 1);
	assert_string_equal(pd_pprof_sample_type(p, 0), "space");
	assert_int_equal(pd_pprof_total(p, 0), 200);
	pd_pprof_destroy(p);
	free(out);
	ingest_pb_destroy(b);

	b = ingest_pb_create(&lim);
	ingest_pb_sample_type(b, "samples", "count");
	uint64_t deep[4] = {0};
	uint64_t f = ingest_pb_function(b, "f", 1, NULL, 0, NULL, 0, 0);
	for (int i = 0; i < 4; i++)
		deep[i] = ingest_pb_frame(b, f, i + 1);
	int64_t one = 1;
	assert_int_equal(ingest_pb_sample(b, deep, 4, &one, 1, NULL, 0, 1), PD_ETOOBIG);
	int limit = 0;
	assert_int_equal(ingest_pb_err(b, &err, &limit), PD_ETOOBIG);
	assert_int_equal(limit, PD_INGEST_LIMIT_STACK_DEPTH);
	assert_non_null(strstr(err.msg, "--ingest.max-stack-depth"));
	/* sticky: what follows fails the same way */
	assert_int_equal(ingest_pb_sample(b, deep, 1, &one, 1, NULL, 0, 1), PD_ETOOBIG);
	ingest_pb_destroy(b);

	b = ingest_pb_create(&lim);
	assert_int_equal(ingest_pb_function(b, "too_long_a_name", 15, NULL, 0, NULL, 0, 0), 0);
	assert_int_equal(ingest_pb_err(b, &err, &limit), PD_ETOOBIG);
	assert_int_equal(limit, PD_INGEST_LIMIT_SYMBOL_LEN);
	ingest_pb_destroy(b);
}

/* Many empty messages in a few bytes each: protobuf-c would allocate a struct
 * for each; the walk before it refuses the body once its estimate passes
 * max_request_memory, naming the flag, before anything is allocated */
static void test_unpack_memory(void **state)
{
	(void)state;
	size_t n = 200000;
	uint8_t *body = malloc(2 * n);
	assert_non_null(body);
	for (size_t i = 0; i < n; i++) {
		body[2 * i] = 0x0a; /* field 1, length-delimited: resource_profiles */
		body[2 * i + 1] = 0;
	}
	struct pd_ingest_limits lim = {.max_request_memory = 1 << 20};
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	assert_int_equal(pd_ingest_otlp(body, 2 * n, 0, &lim, 0, &b, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "--ingest.max-request-memory"));
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_REQUEST_MEMORY);
	assert_int_equal(b.n, 0);
	pd_ingest_batch_fini(&b);
	/* the same through push.v1 (series, field 1) */
	memset(&err, 0, sizeof(err));
	assert_int_equal(pd_ingest_connect_push(body, 2 * n, 0, &lim, 0, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_REQUEST_MEMORY);
	pd_ingest_batch_fini(&b);
	/* with the default budget the same body is read (and holds no profile) */
	memset(&err, 0, sizeof(err));
	assert_int_equal(pd_ingest_otlp(body, 2 * n, 0, NULL, 0, &b, &err), 0);
	assert_int_equal(b.n, 0);
	pd_ingest_batch_fini(&b);
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_batch_limits), cmocka_unit_test(test_series),
	    cmocka_unit_test(test_multipart),    cmocka_unit_test(test_builder),
	    cmocka_unit_test(test_unpack_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
