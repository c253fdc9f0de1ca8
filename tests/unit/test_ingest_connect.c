/* test_ingest_connect.c: unit tests of pkg/ingest/connect.c, Pyroscope's
 * push.v1.PusherService/Push. PushRequests are built with the generated protobuf-c
 * code around the real pprof profiles of testdata/profiles, sent as protobuf and
 * as Connect's JSON (written here by hand: proto and lowerCamelCase names, base64
 * standard and URL-safe), and the stored profile must equal the source field for
 * field (pd_pprof_compare), with the series labels and __name__ mapping.md gives.
 * Errors (malformed protobuf, a bad pprof, bad base64, deep JSON) and each limit
 * are checked too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <protobuf-c/protobuf-c.h>

#include "ingest_int.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "push.pb-c.h"

static uint8_t *read_all(const char *rel, size_t *len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/profiles/%s", PD_TESTDATA, rel);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* A PushRequest of one series (labels as name, value pairs) with one sample. */
static uint8_t *push_bin(const char *const *labels, size_t nl, const uint8_t *prof, size_t plen,
                         size_t *len)
{
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries s = PUSH__V1__RAW_PROFILE_SERIES__INIT;
	Push__V1__RawSample smp = PUSH__V1__RAW_SAMPLE__INIT;
	Types__V1__LabelPair lp[16], *lpp[16];
	assert_true(nl <= 16);
	for (size_t i = 0; i < nl; i++) {
		types__v1__label_pair__init(&lp[i]);
		lp[i].name = (char *)labels[2 * i];
		lp[i].value = (char *)labels[2 * i + 1];
		lpp[i] = &lp[i];
	}
	smp.raw_profile.data = (uint8_t *)prof;
	smp.raw_profile.len = plen;
	smp.id = "734FD599-6865-419E-9475-932762D8F469";
	Push__V1__RawSample *sp = &smp;
	s.n_labels = nl;
	s.labels = lpp;
	s.n_samples = 1;
	s.samples = &sp;
	Push__V1__RawProfileSeries *ss = &s;
	req.n_series = 1;
	req.series = &ss;
	*len = push__v1__push_request__get_packed_size(&req);
	uint8_t *b = malloc(*len ? *len : 1);
	assert_non_null(b);
	push__v1__push_request__pack(&req, b);
	return b;
}

static char *b64(const uint8_t *p, size_t n, int urlsafe)
{
	const char *t = urlsafe
	                    ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	                    : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *o = malloc(n / 3 * 4 + 8), *q = o;
	assert_non_null(o);
	for (size_t i = 0; i < n; i += 3) {
		uint32_t x = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			x |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			x |= p[i + 2];
		*q++ = t[x >> 18];
		*q++ = t[(x >> 12) & 63];
		*q++ = i + 1 < n ? t[(x >> 6) & 63] : '=';
		*q++ = i + 2 < n ? t[x & 63] : '=';
	}
	*q = 0;
	return o;
}

/* The same as Connect's JSON, in one of two spellings. */
static char *push_json(const char *const *labels, size_t nl, const uint8_t *prof, size_t plen,
                       int proto_names, size_t *len)
{
	char *data = b64(prof, plen, proto_names);
	size_t cap = strlen(data) + 4096;
	char *o = malloc(cap);
	assert_non_null(o);
	size_t n = (size_t)snprintf(o, cap, "{\"series\":[{\"labels\":[");
	for (size_t i = 0; i < nl; i++)
		n += (size_t)snprintf(o + n, cap - n, "%s{\"name\":\"%s\",\"value\":\"%s\"}",
		                      i ? "," : "", labels[2 * i], labels[2 * i + 1]);
	n += (size_t)snprintf(o + n, cap - n,
	                      "],\"samples\":[{\"%s\":\"%s\",\"ID\":\"x\",\"extra\":[1]}]}]}",
	                      proto_names ? "raw_profile" : "rawProfile", data);
	free(data);
	*len = n;
	return o;
}

static int push(int json, const char *const *labels, size_t nl, const uint8_t *prof, size_t plen,
                const struct pd_ingest_limits *lim, struct pd_ingest_batch *b, struct pd_err *err)
{
	size_t len;
	uint8_t *body = json ? (uint8_t *)push_json(labels, nl, prof, plen, json == 2, &len)
	                     : push_bin(labels, nl, prof, plen, &len);
	int rc = pd_ingest_connect_push(body, len, json != 0, lim, 1700000000000, b, err);
	free(body);
	return rc;
}

struct case_ {
	const char *file, *metric, *want;
};

static const struct case_ cases[] = {
    {"goapp/cpu.pb.gz", "process_cpu", "profile"},
    {"goapp/heap.pb.gz", "memory", "heap"},
    {"goapp/allocs.pb.gz", "memory", "allocs"},
    {"goapp/goroutine.pb.gz", "goroutine", "goroutine"},
    {"goapp/mutex.pb.gz", "mutex", "mutex"},
    {"goapp/block.pb.gz", "block", "block"},
    {"goapp/block.pb.gz", NULL, "block"},
    {"goapp/cpu.pb.gz", NULL, "profile"},
    {"goapp/cpu.pb.gz", "my.custom-metric", "my_custom_metric"},
    {"prometheus/heap.pb.gz", "memory", "heap"},
    {"labels/cpu.pb.gz", "process_cpu", "profile"},
    {"edge/multi-types.pb", NULL, "heap"},
    {"edge/default-type.pb", "mutex", "mutex"},
};

static void test_profiles(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		for (int json = 0; json < 3; json++) {
			if (!cases[c].want)
				continue;
			size_t plen;
			uint8_t *prof = read_all(cases[c].file, &plen);
			const char *labels[] = {"service_name", "shop",         "k8s.pod.name",
			                        "p-1",          "__delta__",    "false",
			                        "__name__",     cases[c].metric};
			size_t nl = cases[c].metric ? 4 : 3;
			struct pd_ingest_batch b = {0};
			struct pd_err err = {0};
			struct pd_pprof_profile *src = NULL;
			assert_int_equal(pd_pprof_decode(&src, prof, plen, NULL, &err), 0);
			int rc = push(json, labels, nl, prof, plen, NULL, &b, &err);
			if (!cases[c].want) {
				/* a profile whose types say nothing, and no name */
				assert_int_equal(rc, PD_EINVAL);
				assert_non_null(strstr(err.msg, "__name__"));
				assert_int_equal(b.n, 0);
				goto next;
			}
			if (rc)
				fail_msg("%s: %s", cases[c].file, err.msg);
			assert_int_equal(b.n, 1);
			const struct pd_ingest_profile *g = &b.v[0];
			if (strcmp(pd_labels_get(g->labels, "__name__"), cases[c].want) != 0)
				fail_msg("%s %s: __name__ %s, wanted %s", cases[c].file,
				         cases[c].metric, pd_labels_get(g->labels, "__name__"),
				         cases[c].want);
			assert_string_equal(pd_labels_get(g->labels, "service_name"), "shop");
			assert_string_equal(pd_labels_get(g->labels, "k8s_pod_name"), "p-1");
			assert_null(pd_labels_get(g->labels, "__delta__"));
			assert_int_equal(pd_labels_len(g->labels), 3);
			/* the profile as sent, stored uncompressed */
			assert_false(pd_gzip_is(g->pprof, g->len));
			struct pd_pprof_profile *got = NULL;
			assert_int_equal(pd_pprof_decode(&got, g->pprof, g->len, NULL, &err), 0);
			char why[256];
			if (pd_pprof_compare(src, got, why, sizeof why))
				fail_msg("%s: %s", cases[c].file, why);
			assert_int_equal(pd_pprof_compare(src, g->decoded, why, sizeof why), 0);
			if (pd_pprof_time_nanos(src))
				assert_true(g->t_ms == pd_pprof_time_nanos(src) / 1000000);
			else
				assert_true(g->t_ms == 1700000000000);
			pd_pprof_destroy(got);
		next:
			pd_pprof_destroy(src);
			pd_ingest_batch_fini(&b);
			free(prof);
		}
	}
}

static void test_raw_kept(void **state)
{
	(void)state;
	/* an uncompressed pprof is kept byte for byte */
	size_t plen;
	uint8_t *prof = read_all("edge/default-type.pb", &plen);
	const char *labels[] = {"service_name", "a", "__name__", "process_cpu"};
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	if (push(0, labels, 2, prof, plen, NULL, &b, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(b.v[0].len, plen);
	assert_memory_equal(b.v[0].pprof, prof, plen);
	pd_ingest_batch_fini(&b);
	free(prof);
	/* sample types that say nothing, and no name */
	struct ingest_pb *pb = ingest_pb_create(NULL);
	assert_non_null(pb);
	assert_int_equal(ingest_pb_sample_type(pb, "widgets", "count"), 0);
	uint8_t *w;
	size_t wlen;
	assert_int_equal(ingest_pb_finish(pb, &w, &wlen, NULL, &err), 0);
	ingest_pb_destroy(pb);
	assert_int_equal(push(1, labels, 1, w, wlen, NULL, &b, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "no __name__"));
	assert_non_null(strstr(err.msg, "widgets"));
	/* with a name profd does not know, the name stays */
	const char *named[] = {"service_name", "a", "__name__", "widgets.made"};
	assert_int_equal(push(0, named, 2, w, wlen, NULL, &b, &err), 0);
	assert_string_equal(pd_labels_get(b.v[0].labels, "__name__"), "widgets_made");
	pd_ingest_batch_fini(&b);
	free(w);
}

static void test_several(void **state)
{
	(void)state;
	/* two series, the second with two samples: three profiles */
	size_t l1, l2;
	uint8_t *cpu = read_all("goapp/cpu.pb.gz", &l1), *heap = read_all("goapp/heap.pb.gz", &l2);
	Push__V1__RawSample s[3] = {PUSH__V1__RAW_SAMPLE__INIT, PUSH__V1__RAW_SAMPLE__INIT,
	                            PUSH__V1__RAW_SAMPLE__INIT};
	s[0].raw_profile = (ProtobufCBinaryData){l1, cpu};
	s[1].raw_profile = (ProtobufCBinaryData){l2, heap};
	s[2].raw_profile = (ProtobufCBinaryData){l2, heap};
	Push__V1__RawSample *a[] = {&s[0]}, *bb[] = {&s[1], &s[2]};
	Types__V1__LabelPair n1 = TYPES__V1__LABEL_PAIR__INIT, n2 = TYPES__V1__LABEL_PAIR__INIT;
	n1.name = "__name__";
	n1.value = "process_cpu";
	n2.name = "service_name";
	n2.value = "x";
	Types__V1__LabelPair *ls1[] = {&n1, &n2}, *ls2[] = {&n2};
	Push__V1__RawProfileSeries r[2] = {PUSH__V1__RAW_PROFILE_SERIES__INIT,
	                                   PUSH__V1__RAW_PROFILE_SERIES__INIT};
	r[0].labels = ls1;
	r[0].n_labels = 2;
	r[0].samples = a;
	r[0].n_samples = 1;
	r[1].labels = ls2;
	r[1].n_labels = 1;
	r[1].samples = bb;
	r[1].n_samples = 2;
	Push__V1__RawProfileSeries *rp[] = {&r[0], &r[1]};
	Push__V1__PushRequest q = PUSH__V1__PUSH_REQUEST__INIT;
	q.series = rp;
	q.n_series = 2;
	size_t len = push__v1__push_request__get_packed_size(&q);
	uint8_t *body = malloc(len);
	assert_non_null(body);
	push__v1__push_request__pack(&q, body);
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	if (pd_ingest_connect_push(body, len, 0, NULL, 0, &b, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(b.n, 3);
	assert_string_equal(pd_labels_get(b.v[0].labels, "__name__"), "profile");
	assert_string_equal(pd_labels_get(b.v[1].labels, "__name__"), "heap");
	assert_string_equal(pd_labels_get(b.v[2].labels, "__name__"), "heap");
	assert_string_equal(b.format, "connect");
	pd_ingest_batch_fini(&b);
	/* the third profile is one too many */
	struct pd_ingest_limits lim = {.max_profiles = 2};
	assert_int_equal(pd_ingest_connect_push(body, len, 0, &lim, 0, &b, &err), PD_ETOOBIG);
	assert_int_equal(b.limit_hit, PD_INGEST_LIMIT_PROFILES);
	assert_int_equal(b.n, 0);
	assert_non_null(strstr(err.msg, "series[1].samples[1]"));
	pd_ingest_batch_fini(&b);
	/* no service_name: Pyroscope's default */
	r[0].n_labels = 1;
	q.n_series = 1;
	len = push__v1__push_request__pack(&q, body);
	assert_int_equal(pd_ingest_connect_push(body, len, 0, NULL, 0, &b, &err), 0);
	assert_string_equal(pd_labels_get(b.v[0].labels, "service_name"), "unknown_service");
	pd_ingest_batch_fini(&b);
	free(body);
	free(cpu);
	free(heap);
}

static void test_limits(void **state)
{
	(void)state;
	size_t plen;
	uint8_t *prof = read_all("goapp/heap.pb.gz", &plen);
	struct pd_pprof_profile *src = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_decode(&src, prof, plen, NULL, &err), 0);
	size_t ns = pd_pprof_sample_count(src), depth = 0, sym = 0;
	struct pd_pprof_parts pp;
	assert_int_equal(pd_pprof_parts_get(src, &pp, &err), 0);
	for (size_t i = 0; i < pp.nsample; i++)
		depth = pp.sample[i].nlocation > depth ? pp.sample[i].nlocation : depth;
	for (size_t i = 0; i < pp.nfunction; i++) {
		int64_t k[3] = {pp.function[i].name, pp.function[i].system_name,
		                pp.function[i].filename};
		for (int j = 0; j < 3; j++)
			sym = pp.string_len[k[j]] > sym ? pp.string_len[k[j]] : sym;
	}
	pd_pprof_parts_fini(&pp);
	pd_pprof_destroy(src);
	assert_true(depth > 3 && sym > 10);
	const char *labels[] = {"service_name", "shop", "__name__", "memory", "region", "eu"};
	struct {
		struct pd_ingest_limits lim;
		int limit;
	} cases_[] = {
	    {{.max_samples = ns - 1}, PD_INGEST_LIMIT_SAMPLES},
	    {{.max_decompressed = 100}, PD_INGEST_LIMIT_DECOMPRESSED},
	    {{.max_decoded_memory = 1000}, PD_INGEST_LIMIT_DECOMPRESSED},
	    {{.max_ratio = 1}, PD_INGEST_LIMIT_RATIO},
	    {{.max_labels = 2}, PD_INGEST_LIMIT_LABELS},
	    {{.max_label_value_len = 3}, PD_INGEST_LIMIT_LABEL_VALUE_LEN},
	    {{.max_label_name_len = 5}, PD_INGEST_LIMIT_LABEL_NAME_LEN},
	    {{.max_json_depth = 3}, PD_INGEST_LIMIT_JSON_DEPTH},
	    {{.max_stack_depth = 3}, PD_INGEST_LIMIT_STACK_DEPTH},
	    {{.max_symbol_len = 10}, PD_INGEST_LIMIT_SYMBOL_LEN},
	};
	for (size_t i = 0; i < sizeof cases_ / sizeof cases_[0]; i++) {
		for (int json = 0; json < 2; json++) {
			struct pd_ingest_batch b = {0};
			int rc = push(json, labels, 3, prof, plen, &cases_[i].lim, &b, &err);
			if (cases_[i].limit == PD_INGEST_LIMIT_JSON_DEPTH && !json) {
				assert_int_equal(rc, 0); /* protobuf has no JSON depth */
				pd_ingest_batch_fini(&b);
				continue;
			}
			if (rc != PD_ETOOBIG || b.limit_hit != cases_[i].limit)
				fail_msg("case %zu json %d: rc %d limit %d: %s", i, json, rc,
				         b.limit_hit, err.msg);
			assert_int_equal(b.n, 0);
			pd_ingest_batch_fini(&b);
		}
	}
	/* at the limit itself it is fine */
	struct pd_ingest_limits ok = {.max_samples = ns,
	                              .max_labels = 3,
	                              .max_json_depth = 6,
	                              .max_stack_depth = depth,
	                              .max_symbol_len = sym};
	struct pd_ingest_batch b = {0};
	for (int json = 0; json < 2; json++) {
		if (push(json, labels, 3, prof, plen, &ok, &b, &err))
			fail_msg("%s", err.msg);
		assert_int_equal(b.n, 1);
		pd_ingest_batch_fini(&b);
	}
	free(prof);
}

static void expect(const char *body, size_t len, int json, int code, const char *want)
{
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	int rc = pd_ingest_connect_push((const uint8_t *)body, len, json, NULL, 0, &b, &err);
	if (rc != code || !strstr(err.msg, want))
		fail_msg("rc %d, \"%s\", wanted %d \"%s\"", rc, err.msg, code, want);
	assert_int_equal(b.n, 0);
	pd_ingest_batch_fini(&b);
}

#define EXPECT_JSON(s, code, want) expect(s, strlen(s), 1, code, want)

static void test_errors(void **state)
{
	(void)state;
	size_t plen, len;
	uint8_t *prof = read_all("goapp/cpu.pb.gz", &plen);
	const char *labels[] = {"service_name", "shop", "__name__", "process_cpu"};
	uint8_t *body = push_bin(labels, 2, prof, plen, &len);
	/* truncated anywhere: refused with a byte offset, never a crash */
	for (size_t cut = 1; cut < len; cut += 97) {
		struct pd_ingest_batch b = {0};
		struct pd_err err = {0};
		int rc = pd_ingest_connect_push(body, cut, 0, NULL, 0, &b, &err);
		assert_int_equal(rc, PD_EINVAL);
		assert_non_null(strstr(err.msg, "byte"));
		pd_ingest_batch_fini(&b);
	}
	free(body);
	/* a raw_profile that is no pprof */
	body = push_bin(labels, 2, (const uint8_t *)"\x0a\x05xy", 4, &len);
	expect((const char *)body, len, 0, PD_EINVAL, "series[0].samples[0]: raw_profile");
	free(body);
	/* a label name Pyroscope refuses */
	const char *bad[] = {"service_name", "shop", "bad-name", "v"};
	body = push_bin(bad, 2, prof, plen, &len);
	expect((const char *)body, len, 0, PD_EINVAL, "invalid label name \"bad-name\"");
	free(body);
	/* wire type */
	expect("\x08\x01", 2, 0, PD_EINVAL, "in field series: wire type 0");
	expect("\x0a\x02\x12\x05", 4, 0, PD_EINVAL, "byte 2, in field series.samples");

	EXPECT_JSON("{\"series\":[{\"samples\":[{\"rawProfile\":\"a*b=\"}]}]}", PD_EINVAL,
	            "series[0].samples[0].rawProfile: base64 has an invalid character");
	EXPECT_JSON("{\"series\":[{\"samples\":[{\"rawProfile\":\"a===\"}]}]}", PD_EINVAL,
	            "base64");
	EXPECT_JSON("{\"series\":[{\"labels\":[{\"name\":1}]}]}", PD_EINVAL,
	            "series[0].labels[0].name: expected a string");
	EXPECT_JSON("{\"series\":[{\"samples\":[null]}]}", PD_EINVAL, "null");
	EXPECT_JSON("{\"series\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	            "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
	            "]]]]]]]]]]]]]]]]]]]]]]]]]}",
	            PD_ETOOBIG, "--ingest.max-json-depth");
	EXPECT_JSON("{\"series\":", PD_EINVAL, "offset");
	EXPECT_JSON("{\"series\":[]}", 0, "");
	EXPECT_JSON("{\"series\":null}", 0, "");
	free(prof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_profiles), cmocka_unit_test(test_raw_kept),
	    cmocka_unit_test(test_several),  cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
