/* test_pprof.c: unit tests of pkg/pprof: decoding real and hand-built profiles,
 * the error for each kind of bad input, lossless re-encoding, the sample-type
 * rules, and the invariants of top, flame graph, merge and diff. Agreement with
 * go tool pprof itself is checked by the golden tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/pprof.h"

#define P(rel) PD_TESTDATA "/profiles/" rel

static const char *real_profiles[] = {
	P("goapp/heap.pb.gz"),      P("goapp/heap-2.pb.gz"),      P("goapp/allocs.pb.gz"),
	P("goapp/cpu.pb.gz"),       P("goapp/cpu-2.pb.gz"),       P("goapp/goroutine.pb.gz"),
	P("goapp/mutex.pb.gz"),     P("goapp/block.pb.gz"),       P("goapp/threadcreate.pb.gz"),
	P("goapp/delta-allocs.pb.gz"), P("goapp/cpu-large.pb.gz"), P("prometheus/heap.pb.gz"),
	P("prometheus/cpu.pb.gz"),  P("prometheus/goroutine.pb.gz"), P("prometheus/mutex.pb.gz"),
	P("prometheus/block.pb.gz"), P("prometheus/threadcreate.pb.gz"), P("prometheus/allocs.pb.gz"),
	P("edge/empty-samples.pb"), P("edge/no-mappings.pb"),     P("edge/sparse-ids.pb"),
	P("edge/unpacked.pb"),      P("edge/multi-types.pb"),     P("edge/default-type.pb"),
	P("edge/no-functions.pb"),  P("edge/zero-and-negative.pb"),
};

static struct pd_pprof_profile *load(const char *path)
{
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	int rc = pd_pprof_read_file(&p, path, NULL, &err);
	if (rc)
		fail_msg("%s: %s", path, err.msg);
	return p;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	uint8_t *d;
	struct pd_err err = {0};
	if (pd_file_read(path, 1u << 30, &d, len, &err))
		fail_msg("%s", err.msg);
	return d;
}

static void test_decode_all(void **state)
{
	for (size_t i = 0; i < sizeof(real_profiles) / sizeof(*real_profiles); i++) {
		struct pd_pprof_profile *p = load(real_profiles[i]);
		assert_true(pd_pprof_sample_type_count(p) > 0);
		pd_pprof_destroy(p);
	}
}

/* encode(decode(encode(p))) is byte-identical to encode(p), and the raw and the
 * gzip forms decode to the same thing. */
static void test_roundtrip(void **state)
{
	for (size_t i = 0; i < sizeof(real_profiles) / sizeof(*real_profiles); i++) {
		struct pd_pprof_profile *p = load(real_profiles[i]), *q = NULL, *r = NULL;
		struct pd_err err = {0};
		uint8_t *raw, *gz, *raw2;
		size_t rawlen, gzlen, raw2len;
		assert_int_equal(pd_pprof_encode(p, 0, &raw, &rawlen, &err), 0);
		assert_int_equal(pd_pprof_encode(p, 1, &gz, &gzlen, &err), 0);
		assert_int_equal(pd_pprof_decode(&q, raw, rawlen, NULL, &err), 0);
		assert_int_equal(pd_pprof_decode(&r, gz, gzlen, NULL, &err), 0);
		assert_int_equal(pd_pprof_encode(r, 0, &raw2, &raw2len, &err), 0);
		assert_int_equal(rawlen, raw2len);
		assert_memory_equal(raw, raw2, rawlen);
		assert_int_equal(pd_pprof_sample_count(p), pd_pprof_sample_count(q));
		assert_int_equal(pd_pprof_location_count(p), pd_pprof_location_count(q));
		assert_int_equal(pd_pprof_time_nanos(p), pd_pprof_time_nanos(q));
		free(raw);
		free(gz);
		free(raw2);
		pd_pprof_destroy(p);
		pd_pprof_destroy(q);
		pd_pprof_destroy(r);
	}
}

struct bad_case {
	const char *file;
	int code;
	const char *msg;
};

static void test_bad_inputs(void **state)
{
	static const struct bad_case cases[] = {
		{P("edge/bad-string0.pb"), PD_ECORRUPT, "string_table[0] must be \"\""},
		{P("edge/bad-string-index.pb"), PD_ECORRUPT, "out of range (string table has"},
		{P("edge/bad-location-ref.pb"), PD_ECORRUPT, "refers to missing location"},
		{P("edge/bad-function-ref.pb"), PD_ECORRUPT, "refers to missing function"},
		{P("edge/bad-mapping-ref.pb"), PD_ECORRUPT, "refers to missing mapping"},
		{P("edge/bad-dup-location.pb"), PD_ECORRUPT, "duplicate location id"},
		{P("edge/bad-zero-id.pb"), PD_ECORRUPT, "reserved id 0"},
		{P("edge/bad-value-count.pb"), PD_ECORRUPT, "values but the profile has 2 sample types"},
		{P("edge/truncated.pb"), PD_ECORRUPT, "malformed protobuf at byte"},
		{P("edge/huge-varint.pb"), PD_ECORRUPT, "longer than 10 bytes"},
		{P("edge/wrong-wiretype.pb"), PD_ECORRUPT, "wire type"},
		{P("edge/gzip-bomb.pb.gz"), PD_ETOOBIG, "exceeds the limit of 268435456 bytes"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct pd_pprof_profile *p = NULL;
		struct pd_err err = {0};
		int rc = pd_pprof_read_file(&p, cases[i].file, NULL, &err);
		if (rc != cases[i].code || !strstr(err.msg, cases[i].msg))
			fail_msg("%s: got %d \"%s\", want %d \"%s\"", cases[i].file, rc, err.msg,
				 cases[i].code, cases[i].msg);
		assert_null(p);
		/* the message starts with the file name */
		assert_int_equal(strncmp(err.msg, cases[i].file, strlen(cases[i].file)), 0);
	}
}

static void test_bad_bytes(void **state)
{
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_decode(&p, (const uint8_t *)"", 0, NULL, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "empty"));
	/* a gzip header and nothing else */
	const uint8_t gzhead[] = {0x1f, 0x8b, 0x08, 0x00};
	assert_int_equal(pd_pprof_decode(&p, gzhead, sizeof(gzhead), NULL, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "gzip"));
	/* a varint of eleven continuation bytes as the first field key */
	uint8_t huge[12];
	memset(huge, 0xff, 11);
	huge[11] = 0x01;
	assert_int_equal(pd_pprof_decode(&p, huge, sizeof(huge), NULL, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "longer than 10 bytes"));
	/* field 2 (sample) as a varint */
	const uint8_t wt[] = {0x10, 0x01};
	assert_int_equal(pd_pprof_decode(&p, wt, sizeof(wt), NULL, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "Profile.sample"));
	/* a length that runs past the end */
	const uint8_t len[] = {0x32, 0x7f, 'a'};
	assert_int_equal(pd_pprof_decode(&p, len, sizeof(len), NULL, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "runs past the end"));
	assert_null(p);
}

/* Every prefix and many single-byte corruptions of a real profile either decode or
 * fail cleanly (the sanitizers catch the rest). */
static void test_truncations_and_flips(void **state)
{
	size_t gzlen;
	uint8_t *gz = slurp(P("goapp/heap.pb.gz"), &gzlen);
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, NULL, &err), 0);
	uint8_t *raw;
	size_t rawlen;
	assert_int_equal(pd_pprof_encode(p, 0, &raw, &rawlen, &err), 0);
	pd_pprof_destroy(p);
	size_t fails = 0;
	for (size_t n = 1; n < rawlen; n += 7) {
		struct pd_pprof_profile *q = NULL;
		if (pd_pprof_decode(&q, raw, n, NULL, &err))
			fails++;
		else
			pd_pprof_destroy(q);
	}
	assert_true(fails > rawlen / 7 / 2);
	uint8_t *copy = malloc(rawlen);
	for (size_t i = 0; i < rawlen; i += 3) {
		memcpy(copy, raw, rawlen);
		copy[i] ^= (uint8_t)(0x80 | i);
		struct pd_pprof_profile *q = NULL;
		if (pd_pprof_decode(&q, copy, rawlen, NULL, &err) == 0) {
			struct pd_pprof_top *t = NULL;
			int idx = pd_pprof_default_sample_index(q);
			if (idx >= 0 && pd_pprof_top(q, idx, &t, &err) == 0)
				pd_pprof_top_destroy(t);
			pd_pprof_destroy(q);
		}
	}
	free(copy);
	free(raw);
	free(gz);
}

static void test_limits(void **state)
{
	size_t gzlen;
	uint8_t *gz = slurp(P("goapp/heap.pb.gz"), &gzlen);
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	struct pd_pprof_decode_opts o = {.max_decompressed = 1000};
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "1000 bytes"));
	o = (struct pd_pprof_decode_opts){.max_memory = 4096};
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "memory limit"));
	assert_null(p);
	/* the limits for profiles from outside, each reported through limit_hit */
	int hit = -1;
	/* goapp/heap.pb.gz inflates 1.74 times */
	o = (struct pd_pprof_decode_opts){.max_ratio = 1, .limit_hit = &hit};
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), PD_ETOOBIG);
	assert_int_equal(hit, PD_PPROF_LIMIT_RATIO);
	assert_string_equal(pd_pprof_limit_name(hit), "decompression_ratio");
	assert_non_null(strstr(err.msg, "exceeds 1 times the compressed size"));
	o.max_ratio = 2;
	if (pd_pprof_decode(&p, gz, gzlen, &o, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(hit, PD_PPROF_LIMIT_NONE);
	size_t n = pd_pprof_sample_count(p);
	pd_pprof_destroy(p);
	assert_true(n > 1);
	o = (struct pd_pprof_decode_opts){.max_samples = n, .limit_hit = &hit};
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), 0);
	pd_pprof_destroy(p);
	o.max_samples = n - 1;
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), PD_ETOOBIG);
	assert_int_equal(hit, PD_PPROF_LIMIT_SAMPLES);
	assert_null(p);
	o = (struct pd_pprof_decode_opts){.max_memory = 4096, .limit_hit = &hit};
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), PD_ETOOBIG);
	assert_int_equal(hit, PD_PPROF_LIMIT_MEMORY);
	o = (struct pd_pprof_decode_opts){.max_decompressed = 1000, .limit_hit = &hit};
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), PD_ETOOBIG);
	assert_int_equal(hit, PD_PPROF_LIMIT_DECOMPRESSED);
	free(gz);
	/* labels/cpu.pb.gz has samples of more than one label */
	gz = slurp(P("labels/cpu.pb.gz"), &gzlen);
	o = (struct pd_pprof_decode_opts){.max_sample_labels = 1, .limit_hit = &hit};
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), PD_ETOOBIG);
	assert_int_equal(hit, PD_PPROF_LIMIT_SAMPLE_LABELS);
	assert_non_null(strstr(err.msg, "labels, more than the limit of 1 labels per sample"));
	o.max_sample_labels = 1024;
	assert_int_equal(pd_pprof_decode(&p, gz, gzlen, &o, &err), 0);
	pd_pprof_destroy(p);
	free(gz);
}

static void test_sample_index(void **state)
{
	struct pd_pprof_profile *h = load(P("goapp/heap.pb.gz"));
	struct pd_err err = {0};
	int idx;
	/* Go heap profiles: alloc_objects alloc_space inuse_objects inuse_space */
	assert_int_equal(pd_pprof_sample_index(h, NULL, &idx, &err), 0);
	assert_string_equal(pd_pprof_sample_type(h, (size_t)idx), "inuse_space");
	assert_int_equal(pd_pprof_sample_index(h, "alloc_space", &idx, &err), 0);
	assert_int_equal(idx, 1);
	assert_int_equal(pd_pprof_sample_index(h, "0", &idx, &err), 0);
	assert_int_equal(idx, 0);
	assert_int_equal(pd_pprof_sample_index(h, "4", &idx, &err), PD_EINVAL);
	assert_string_equal(err.msg, "sample_index 4 is outside the range [0..3]");
	assert_int_equal(pd_pprof_sample_index(h, "cpu", &idx, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "must be one of: [alloc_objects alloc_space"));
	pd_pprof_destroy(h);

	struct pd_pprof_profile *d = load(P("edge/default-type.pb"));
	assert_int_equal(pd_pprof_default_sample_index(d), 1);
	pd_pprof_destroy(d);
	struct pd_pprof_profile *m = load(P("edge/multi-types.pb"));
	assert_int_equal(pd_pprof_default_sample_index(m), 3); /* no default: the last */
	pd_pprof_destroy(m);
}

static int64_t row_flat(const struct pd_pprof_top *t, const char *name, int64_t *cum)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i].name, name) == 0) {
			if (cum)
				*cum = t->rows[i].cum;
			return t->rows[i].flat;
		}
	fail_msg("no row %s", name);
	return 0;
}

/* Flat adds up to the total; cum is at least flat and at most the total, even
 * under recursion; rows are in pprof's order. */
static void test_top_invariants(void **state)
{
	for (size_t i = 0; i < sizeof(real_profiles) / sizeof(*real_profiles); i++) {
		struct pd_pprof_profile *p = load(real_profiles[i]);
		for (size_t s = 0; s < pd_pprof_sample_type_count(p); s++) {
			struct pd_pprof_top *t = NULL;
			struct pd_err err = {0};
			assert_int_equal(pd_pprof_top(p, (int)s, &t, &err), 0);
			int64_t sum = 0;
			for (size_t r = 0; r < t->nrows; r++) {
				const struct pd_pprof_top_row *row = &t->rows[r];
				sum += row->flat;
				if (row->flat >= 0 && row->cum >= 0) {
					assert_true(row->cum >= row->flat);
					assert_true(row->cum <= t->total);
				}
				if (r) {
					int64_t a = llabs(t->rows[r - 1].flat), b = llabs(row->flat);
					assert_true(a > b || (a == b && strcmp(t->rows[r - 1].name, row->name) <= 0));
				}
			}
			/* samples without locations count in the total but belong to no
			 * function, as in pprof */
			assert_true(llabs(sum) <= t->total);
			pd_pprof_top_destroy(t);
		}
		pd_pprof_destroy(p);
	}
}

/* The hand-built profile with recursion and inlining: exact values. */
static void test_top_recursion_inline(void **state)
{
	struct pd_pprof_profile *p = load(P("edge/multi-types.pb"));
	struct pd_pprof_top *t = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_top(p, 0, &t, &err), 0);
	/* cum of a function never exceeds the total however often it recurs */
	for (size_t r = 0; r < t->nrows; r++)
		assert_true(t->rows[r].cum <= t->total);
	int inlined = 0;
	for (size_t r = 0; r < t->nrows; r++)
		inlined |= t->rows[r].inline_kind != PD_PPROF_NOT_INLINED;
	assert_true(inlined);
	pd_pprof_top_destroy(t);
	pd_pprof_destroy(p);
}

static void check_flame_node(const struct pd_pprof_flame_node *n, size_t *count)
{
	int64_t sum = n->self;
	(*count)++;
	for (size_t i = 0; i < n->nchildren; i++) {
		sum += n->children[i].total;
		if (i)
			assert_true(llabs(n->children[i - 1].total) >= llabs(n->children[i].total));
		check_flame_node(&n->children[i], count);
	}
	assert_int_equal(sum, n->total);
}

static void test_flame(void **state)
{
	for (size_t i = 0; i < sizeof(real_profiles) / sizeof(*real_profiles); i++) {
		struct pd_pprof_profile *p = load(real_profiles[i]);
		int idx = pd_pprof_default_sample_index(p);
		struct pd_pprof_flame *f = NULL;
		struct pd_pprof_top *t = NULL;
		struct pd_err err = {0};
		assert_int_equal(pd_pprof_flame(p, idx, &f, &err), 0);
		assert_int_equal(pd_pprof_top(p, idx, &t, &err), 0);
		size_t count = 0;
		check_flame_node(&f->root, &count);
		assert_int_equal(count, f->node_count);
		/* the root's total is the sum of the samples: every function's flat plus
		 * samples without locations */
		int64_t flat = 0;
		int negative = 0;
		for (size_t r = 0; r < t->nrows; r++) {
			flat += t->rows[r].flat;
			negative |= t->rows[r].flat < 0 || t->rows[r].cum < 0;
		}
		if (!negative) {
			assert_true(f->root.total >= flat);
			assert_int_equal(f->root.total, t->total);
		}
		struct pd_buf b;
		pd_buf_init(&b, 0);
		assert_int_equal(pd_pprof_flame_json(f, 0, &b), 0);
		assert_int_equal(pd_buf_append(&b, "", 1), 0);
		assert_int_equal(strncmp((char *)b.data, "{\"sampleType\":", 14), 0);
		long depth = 0;
		int in_str = 0;
		for (const char *c = (char *)b.data; *c; c++) {
			if (in_str) {
				if (*c == '\\')
					c++;
				else if (*c == '"')
					in_str = 0;
			} else if (*c == '"')
				in_str = 1;
			else if (*c == '{' || *c == '[')
				depth++;
			else if (*c == '}' || *c == ']')
				assert_true(--depth >= 0);
		}
		assert_int_equal(depth, 0);
		pd_buf_fini(&b);
		pd_pprof_top_destroy(t);
		pd_pprof_flame_destroy(f);
		pd_pprof_destroy(p);
	}
}

static void test_merge(void **state)
{
	struct pd_pprof_profile *a = load(P("goapp/heap.pb.gz"));
	struct pd_pprof_profile *m = NULL;
	struct pd_err err = {0};
	const struct pd_pprof_profile *two[] = {a, a};
	assert_int_equal(pd_pprof_merge(two, 2, &m, &err), 0);
	/* the same stacks, each twice the value (samples of a with equal stacks and
	 * labels are added up too) */
	assert_true(pd_pprof_sample_count(m) <= pd_pprof_sample_count(a));
	assert_true(pd_pprof_location_count(m) <= pd_pprof_location_count(a));
	for (size_t s = 0; s < 4; s++)
		assert_int_equal(pd_pprof_total(m, (int)s), 2 * pd_pprof_total(a, (int)s));
	struct pd_pprof_top *ta = NULL, *tm = NULL;
	assert_int_equal(pd_pprof_top(a, 1, &ta, &err), 0);
	assert_int_equal(pd_pprof_top(m, 1, &tm, &err), 0);
	assert_int_equal(ta->nrows, tm->nrows);
	for (size_t r = 0; r < ta->nrows; r++) {
		int64_t cum;
		assert_int_equal(row_flat(tm, ta->rows[r].name, &cum), 2 * ta->rows[r].flat);
		assert_int_equal(cum, 2 * ta->rows[r].cum);
	}
	pd_pprof_top_destroy(ta);
	pd_pprof_top_destroy(tm);
	pd_pprof_destroy(m);

	/* heap and CPU share no sample type */
	struct pd_pprof_profile *c = load(P("goapp/cpu.pb.gz"));
	const struct pd_pprof_profile *mixed[] = {a, c};
	assert_int_equal(pd_pprof_merge(mixed, 2, &m, &err), PD_EINCOMPAT);
	assert_non_null(strstr(err.msg, "no sample type in common"));
	assert_null(m);
	assert_int_equal(pd_pprof_merge(mixed, 0, &m, &err), PD_EINVAL);
	pd_pprof_destroy(c);
	pd_pprof_destroy(a);
}

/* round(v / d) half away from zero, as pd_pprof_average divides */
static int64_t half_away(int64_t v, int64_t d)
{
	int64_t q = v / d, r = v % d;
	if ((r < 0 ? -r : r) * 2 >= d)
		q += v < 0 ? -1 : 1;
	return q;
}

static void test_average(void **state)
{
	struct pd_pprof_profile *a = load(P("goapp/heap.pb.gz"));
	struct pd_pprof_profile *m = NULL, *avg = NULL, *d = NULL;
	struct pd_err err = {0};
	/* which types are snapshots: the heap in use and goroutines, not allocations or CPU */
	assert_int_equal(pd_pprof_snapshot_type(a, 0), 0);
	assert_int_equal(pd_pprof_snapshot_type(a, 1), 0);
	assert_int_equal(pd_pprof_snapshot_type(a, 2), 1);
	assert_int_equal(pd_pprof_snapshot_type(a, 3), 1);
	struct pd_pprof_profile *c = load(P("goapp/cpu.pb.gz"));
	assert_int_equal(pd_pprof_snapshot_type(c, 0), 0);
	assert_int_equal(pd_pprof_snapshot_type(c, 1), 0);
	pd_pprof_destroy(c);
	struct pd_pprof_profile *g = load(P("goapp/goroutine.pb.gz"));
	assert_int_equal(pd_pprof_snapshot_type(g, 0), 1);
	pd_pprof_destroy(g);

	/* three of a, averaged in the inuse types: those are a's again, the others 3 times */
	const struct pd_pprof_profile *three[] = {a, a, a};
	assert_int_equal(pd_pprof_merge(three, 3, &m, &err), 0);
	const unsigned char inuse[] = {0, 0, 1, 1};
	assert_int_equal(pd_pprof_average(m, inuse, 3, &avg, &err), 0);
	for (int t = 0; t < 4; t++)
		assert_int_equal(pd_pprof_total(avg, t), (t >= 2 ? 1 : 3) * pd_pprof_total(a, t));
	pd_pprof_destroy(avg);

	/* negative values (a diff: a - 3a) round half away from zero, sample for sample */
	assert_int_equal(pd_pprof_diff(m, a, &d, &err), 0);
	assert_int_equal(pd_pprof_average(d, NULL, 4, &avg, &err), 0);
	struct pd_pprof_parts pd, pa;
	assert_int_equal(pd_pprof_parts_get(d, &pd, &err), 0);
	assert_int_equal(pd_pprof_parts_get(avg, &pa, &err), 0);
	size_t k = 0, negative = 0;
	for (size_t i = 0; i < pd.nsample; i++) {
		int zero = 1;
		for (size_t j = 0; j < pd.sample[i].nvalue; j++)
			zero &= half_away(pd.sample[i].value[j], 4) == 0;
		if (zero)
			continue; /* left out */
		assert_true(k < pa.nsample);
		for (size_t j = 0; j < pd.sample[i].nvalue; j++) {
			assert_int_equal(pa.sample[k].value[j], half_away(pd.sample[i].value[j], 4));
			negative += pd.sample[i].value[j] < 0;
		}
		k++;
	}
	assert_int_equal(k, pa.nsample);
	assert_true(negative > 0);
	pd_pprof_parts_fini(&pd);
	pd_pprof_parts_fini(&pa);
	pd_pprof_destroy(avg);
	assert_int_equal(pd_pprof_average(d, NULL, 0, &avg, &err), PD_EINVAL);
	assert_null(avg);
	pd_pprof_destroy(d);
	pd_pprof_destroy(m);
	pd_pprof_destroy(a);
	(void)state;
}

static void test_diff(void **state)
{
	struct pd_pprof_profile *a = load(P("goapp/heap.pb.gz"));
	struct pd_pprof_profile *b = load(P("goapp/heap-3.pb.gz"));
	struct pd_pprof_profile *d = NULL;
	struct pd_err err = {0};
	/* a profile minus itself: every function at zero; the base samples stay, marked
	 * pprof::base, as with go tool pprof -diff_base */
	assert_int_equal(pd_pprof_diff(a, a, &d, &err), 0);
	assert_true(pd_pprof_sample_count(d) > pd_pprof_sample_count(a));
	assert_true(pd_pprof_sample_count(d) <= 2 * pd_pprof_sample_count(a));
	for (int s = 0; s < 4; s++) {
		struct pd_pprof_top *t0 = NULL;
		assert_int_equal(pd_pprof_top(d, s, &t0, &err), 0);
		for (size_t r = 0; r < t0->nrows; r++) {
			assert_int_equal(t0->rows[r].flat, 0);
			assert_int_equal(t0->rows[r].cum, 0);
		}
		assert_int_equal(t0->total, pd_pprof_total(a, s));
		pd_pprof_top_destroy(t0);
	}
	pd_pprof_destroy(d);
	/* b - a: flat per function is b's minus a's; percentages are of a's total */
	assert_int_equal(pd_pprof_diff(a, b, &d, &err), 0);
	struct pd_pprof_top *ta = NULL, *tb = NULL, *td = NULL;
	assert_int_equal(pd_pprof_top(a, 1, &ta, &err), 0);
	assert_int_equal(pd_pprof_top(b, 1, &tb, &err), 0);
	assert_int_equal(pd_pprof_top(d, 1, &td, &err), 0);
	assert_int_equal(td->total, ta->total);
	for (size_t r = 0; r < tb->nrows; r++) {
		int64_t fa = 0;
		for (size_t k = 0; k < ta->nrows; k++)
			if (strcmp(ta->rows[k].name, tb->rows[r].name) == 0)
				fa = ta->rows[k].flat;
		if (tb->rows[r].flat != fa)
			assert_int_equal(row_flat(td, tb->rows[r].name, NULL), tb->rows[r].flat - fa);
	}
	pd_pprof_top_destroy(ta);
	pd_pprof_top_destroy(tb);
	pd_pprof_top_destroy(td);
	pd_pprof_destroy(d);
	pd_pprof_destroy(a);
	pd_pprof_destroy(b);
}

static void test_format(void **state)
{
	char s[64];
	pd_pprof_format_value(4195703, "bytes", s, sizeof(s));
	assert_string_equal(s, "4MB");
	pd_pprof_format_value(1536, "bytes", s, sizeof(s));
	assert_string_equal(s, "1.50kB");
	pd_pprof_format_value(10000000, "nanoseconds", s, sizeof(s));
	assert_string_equal(s, "10ms");
	pd_pprof_format_value(12345, "count", s, sizeof(s));
	assert_string_equal(s, "12345");
	pd_pprof_format_value(0, "bytes", s, sizeof(s));
	assert_string_equal(s, "0");
	pd_pprof_format_percent(1, 2, s, sizeof(s));
	assert_string_equal(s, "50.00%");
	pd_pprof_format_percent(1, 200, s, sizeof(s));
	assert_string_equal(s, "  0.5%");
	pd_pprof_format_percent(5, 5, s, sizeof(s));
	assert_string_equal(s, "  100%");
	assert_string_equal(pd_pprof_pick_unit(1024, 10u << 20, "bytes"), "kB");
	pd_pprof_format_value_in(1u << 20, "bytes", "kB", s, sizeof(s));
	assert_string_equal(s, "1024kB");
}

/* ---- labels on samples --------------------------------------------------- */

static size_t focus_count(struct pd_pprof_profile *p, const char *focus, const char *ignore)
{
	struct pd_pprof_tagfilter *f = NULL, *g = NULL;
	struct pd_pprof_profile *out = NULL;
	struct pd_err err = {0};
	size_t kept = 0;
	if (focus)
		assert_int_equal(pd_pprof_tagfilter_parse(&f, focus, strlen(focus), &err), 0);
	if (ignore)
		assert_int_equal(pd_pprof_tagfilter_parse(&g, ignore, strlen(ignore), &err), 0);
	const struct pd_pprof_tagfilter *const fs[] = {f}, *const gs[] = {g};
	assert_int_equal(pd_pprof_filter_tags(p, fs, f != NULL, gs, g != NULL, &out, &kept, &err),
	                 0);
	assert_int_equal(pd_pprof_sample_count(out), kept);
	pd_pprof_destroy(out);
	pd_pprof_tagfilter_destroy(f);
	pd_pprof_tagfilter_destroy(g);
	return kept;
}

static void test_tag_filters(void **state)
{
	(void)state;
	struct pd_pprof_profile *g = load(P("labels/goroutine.pb.gz"));
	struct pd_pprof_profile *h = load(P("labels/heap.pb.gz"));
	size_t n = pd_pprof_sample_count(g);
	/* the generator parks one goroutine per label set: /api shards 1-3, /health,
	 * /admin with tenant acme, and one with no labels */
	size_t api = focus_count(g, "endpoint=/api", NULL);
	assert_true(api >= 1);
	assert_int_equal(focus_count(g, NULL, "endpoint=/api"), n - api);
	assert_int_equal(focus_count(g, "endpoint=^/api$", NULL), api);
	assert_int_equal(focus_count(g, "endpoint=^/ap$", NULL), 0);
	/* bare regexes match key:value, all of them */
	assert_int_equal(focus_count(g, "endpoint:/api", NULL), api);
	assert_int_equal(focus_count(g, "endpoint:/api,tenant:acme", NULL), 0);
	assert_true(focus_count(g, "tenant:acme", NULL) >= 1);
	/* an empty key is no key; a key with an empty regex needs the key */
	assert_int_equal(focus_count(g, "=endpoint:/api", NULL), api);
	assert_int_equal(focus_count(g, "tenant=", NULL), focus_count(g, "tenant:", NULL));
	/* a range on string labels matches nothing */
	assert_int_equal(focus_count(g, "shard=1:3", NULL), 0);
	/* numeric ranges on the heap's bytes label, in bytes and in kB */
	size_t nh = pd_pprof_sample_count(h);
	size_t big = focus_count(h, "bytes=1kb:", NULL),
	       small = focus_count(h, "bytes=:1023b", NULL);
	assert_true(big >= 1 && small >= 1);
	assert_true(big + small <= nh);
	assert_int_equal(focus_count(h, "bytes=1024b:", NULL), big);
	/* as in pprof, a number without a unit never matches a label in bytes */
	assert_int_equal(focus_count(h, "bytes=1024:", NULL), 0);
	assert_int_equal(focus_count(h, "1kb:", NULL), big);
	assert_int_equal(focus_count(h, NULL, "bytes=1kb:"), nh - big);
	assert_int_equal(focus_count(h, "bytes=96b", NULL), focus_count(h, "bytes=96b:96", NULL));
	assert_true(focus_count(h, "bytes=96b", NULL) >= 1);
	/* mixed families are no range: a regex, which numeric labels never match */
	assert_int_equal(focus_count(h, "bytes=1kb:2s", NULL), 0);
	pd_pprof_destroy(g);
	pd_pprof_destroy(h);
}

static void test_tag_filter_errors(void **state)
{
	(void)state;
	static const struct {
		const char *in, *msg;
	} bad[] = {
	    {"endpoint=(", "missing closing )"},
	    {"a**", "invalid nested repetition operator"},
	    {"bytes=99999999999999999999", "out of the int64 range"},
	    {"bytes=1:99999999999999999999", "out of the int64 range"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pd_pprof_tagfilter *f = NULL;
		struct pd_err err = {0};
		assert_int_not_equal(
		    pd_pprof_tagfilter_parse(&f, bad[i].in, strlen(bad[i].in), &err), 0);
		assert_null(f);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: %s", bad[i].in, err.msg);
	}
	char many[200] = "k=a";
	for (int i = 0; i < 40; i++)
		strcat(many, ",a");
	struct pd_pprof_tagfilter *f = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_tagfilter_parse(&f, many, strlen(many), &err), PD_ETOOBIG);
}

static void test_tags_report(void **state)
{
	(void)state;
	struct pd_pprof_profile *c = load(P("labels/cpu.pb.gz"));
	struct pd_pprof_tags *t = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_tags(c, 1, NULL, &t, &err), 0);
	int64_t total = pd_pprof_total(c, 1), unlabelled = 0;
	const struct pd_pprof_tag_key *ep = NULL;
	for (size_t i = 0; i < t->nkeys; i++) {
		if (i)
			assert_true(strcmp(t->keys[i - 1].key, t->keys[i].key) < 0);
		if (strcmp(t->keys[i].key, "endpoint") == 0)
			ep = &t->keys[i];
	}
	assert_non_null(ep);
	int64_t sum = 0;
	for (size_t j = 0; j < ep->nvalues; j++) {
		sum += ep->values[j].total;
		if (j)
			assert_true(ep->values[j - 1].total >= ep->values[j].total);
	}
	assert_int_equal(sum, ep->total);
	/* endpoint plus the samples without it is the whole profile */
	struct pd_pprof_tag_group *g = NULL;
	size_t n = 0, dropped = 0;
	assert_int_equal(pd_pprof_split_by_tag(c, "endpoint", 1, 0, &g, &n, &dropped, &err), 0);
	assert_int_equal(n, ep->nvalues + 1);
	assert_null(g[n - 1].value);
	unlabelled = pd_pprof_total(g[n - 1].profile, 1);
	assert_int_equal(ep->total + unlabelled, total);
	for (size_t i = 0; i + 1 < n; i++)
		for (size_t j = 0; j < ep->nvalues; j++)
			if (strcmp(ep->values[j].name, g[i].value) == 0)
				assert_int_equal(pd_pprof_total(g[i].profile, 1),
				                 ep->values[j].total);
	pd_pprof_tag_groups_free(g, n);
	/* the limit keeps the heaviest values */
	assert_int_equal(pd_pprof_split_by_tag(c, "endpoint", 1, 1, &g, &n, &dropped, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(dropped, ep->nvalues - 1);
	assert_string_equal(g[0].value, ep->values[0].name);
	pd_pprof_tag_groups_free(g, n);
	pd_pprof_tags_destroy(t);
	/* numeric labels named as pprof names them */
	struct pd_pprof_profile *h = load(P("labels/heap.pb.gz"));
	assert_int_equal(pd_pprof_tags(h, 3, NULL, &t, &err), 0);
	assert_int_equal(t->nkeys, 1);
	assert_string_equal(t->keys[0].key, "bytes");
	int found = 0;
	for (size_t j = 0; j < t->keys[0].nvalues; j++)
		found |= strcmp(t->keys[0].values[j].name, "72kB") == 0;
	assert_true(found);
	pd_pprof_tags_destroy(t);
	assert_int_equal(pd_pprof_tags(h, 3, "bytes", &t, &err), 0);
	found = 0;
	for (size_t j = 0; j < t->keys[0].nvalues; j++)
		found |= strcmp(t->keys[0].values[j].name, "73728B") == 0;
	assert_true(found);
	pd_pprof_tags_destroy(t);
	pd_pprof_destroy(h);
	pd_pprof_destroy(c);
}

/* ---- strings holding NUL bytes (edge/nul-bytes.pb) ---------------------------- */

#define NUL_PB P("edge/nul-bytes.pb")

static char all_bytes[256];

static void fill_all_bytes(void)
{
	for (int i = 0; i < 256; i++)
		all_bytes[i] = (char)i;
}

/* The index of the len bytes s in the string table of parts, -1 when absent. */
static long find_string(const struct pd_pprof_parts *parts, const char *s, size_t len)
{
	for (size_t i = 0; i < parts->nstrings; i++)
		if (parts->string_len[i] == len && memcmp(parts->strings[i], s, len) == 0)
			return (long)i;
	return -1;
}

#define S_(lit) lit, sizeof(lit) - 1

/* Where the len bytes s first occur in the n bytes at h (memmem without
 * _GNU_SOURCE). */
static const uint8_t *find_bytes(const void *h, size_t n, const char *s, size_t len)
{
	const uint8_t *p = h;
	for (size_t i = 0; len <= n && i <= n - len; i++)
		if (memcmp(p + i, s, len) == 0)
			return p + i;
	return NULL;
}

/* Every string of the file, NULs and what follows them included. */
static void assert_nul_strings(const struct pd_pprof_profile *p)
{
	struct pd_pprof_parts parts;
	struct pd_err err = {0};
	fill_all_bytes();
	assert_int_equal(pd_pprof_parts_get(p, &parts, &err), 0);
	assert_true(find_string(&parts, all_bytes, 256) > 0);
	assert_true(find_string(&parts, S_("dup\0a")) > 0);
	assert_true(find_string(&parts, S_("dup\0b")) > 0);
	assert_true(find_string(&parts, S_("/lib/\0nul.so")) > 0);
	assert_true(find_string(&parts, S_("\0b\0id")) > 0);
	assert_true(find_string(&parts, S_("k\0ey")) > 0);
	assert_true(find_string(&parts, S_("v\0al")) > 0);
	assert_true(find_string(&parts, S_("nul/\0.go")) > 0);
	assert_true(find_string(&parts, S_("comment\0after a NUL")) > 0);
	/* the three functions are named by three different strings */
	long f[3] = {-1, -1, -1};
	for (size_t i = 0; i < parts.nfunction; i++) {
		if (parts.function[i].id >= 6 && parts.function[i].id <= 8)
			f[parts.function[i].id - 6] = parts.function[i].name;
	}
	assert_int_equal(f[0], find_string(&parts, all_bytes, 256));
	assert_int_equal(f[1], find_string(&parts, S_("dup\0a")));
	assert_int_equal(f[2], find_string(&parts, S_("dup\0b")));
	pd_pprof_parts_fini(&parts);
}

/* decode -> encode writes back the file byte for byte, by both decoders, and
 * through parts (the stores' form). */
static void test_nul_strings_roundtrip(void **state)
{
	size_t flen, rawlen, gzlen, plen;
	uint8_t *file = slurp(NUL_PB, &flen), *raw, *gz, *praw;
	struct pd_pprof_profile *p = NULL, *q = NULL, *r = NULL, *b = NULL;
	struct pd_err err = {0};
	struct pd_pprof_decode_opts only_c = {.protobuf_c_only = 1};
	assert_int_equal(pd_pprof_decode(&p, file, flen, NULL, &err), 0);
	assert_nul_strings(p);
	assert_int_equal(pd_pprof_encode(p, 0, &raw, &rawlen, &err), 0);
	assert_int_equal(rawlen, flen);
	assert_memory_equal(raw, file, flen);
	assert_int_equal(pd_pprof_decode(&q, file, flen, &only_c, &err), 0);
	assert_nul_strings(q);
	assert_int_equal(pd_pprof_compare(p, q, NULL, 0), 0);
	assert_int_equal(pd_pprof_encode(q, 1, &gz, &gzlen, &err), 0);
	assert_int_equal(pd_pprof_decode(&r, gz, gzlen, NULL, &err), 0);
	assert_int_equal(pd_pprof_compare(p, r, NULL, 0), 0);

	struct pd_pprof_parts parts;
	assert_int_equal(pd_pprof_parts_get(p, &parts, &err), 0);
	assert_int_equal(pd_pprof_parts_encode(&parts, &praw, &plen, &err), 0);
	assert_int_equal(plen, flen);
	assert_memory_equal(praw, file, flen);
	assert_int_equal(pd_pprof_parts_build(&parts, &b, &err), 0);
	assert_nul_strings(b);
	pd_pprof_parts_fini(&parts);

	/* a string that differs only after a NUL is a different string */
	struct pd_pprof_profile *x = NULL;
	uint8_t *mod = malloc(flen);
	memcpy(mod, file, flen);
	const uint8_t *at = find_bytes(mod, flen, "dup\0b", 5);
	assert_non_null(at);
	mod[(size_t)(at - mod) + 4] = 'c';
	assert_int_equal(pd_pprof_decode(&x, mod, flen, NULL, &err), 0);
	char why[256];
	assert_int_equal(pd_pprof_compare(p, x, why, sizeof(why)), 1);
	pd_pprof_destroy(x);
	free(mod);

	free(file);
	free(raw);
	free(gz);
	free(praw);
	pd_pprof_destroy(p);
	pd_pprof_destroy(q);
	pd_pprof_destroy(r);
	pd_pprof_destroy(b);
	(void)state;
}

static const struct pd_pprof_top_row *top_row_n(const struct pd_pprof_top *t, const char *name,
					       size_t len)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (t->rows[i].name_len == len && memcmp(t->rows[i].name, name, len) == 0) {
			assert_int_equal(t->rows[i].name[len], '\0');
			return &t->rows[i];
		}
	return NULL;
}

/* top keeps the names whole: the name starting with a NUL is no "<unknown>",
 * and the two "dup" names are two functions. */
static void check_nul_top(const struct pd_pprof_profile *p, int64_t times)
{
	struct pd_pprof_top *t = NULL;
	struct pd_err err = {0};
	fill_all_bytes();
	assert_int_equal(pd_pprof_top(p, 1, &t, &err), 0);
	const struct pd_pprof_top_row *all = top_row_n(t, all_bytes, 256);
	const struct pd_pprof_top_row *a = top_row_n(t, S_("dup\0a"));
	const struct pd_pprof_top_row *b = top_row_n(t, S_("dup\0b"));
	assert_non_null(all);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(all->flat, 70000000 * times);
	assert_int_equal(a->flat, 20000000 * times);
	assert_int_equal(b->flat, 40000000 * times);
	assert_null(top_row_n(t, S_("<unknown>")));
	assert_null(top_row_n(t, S_("dup")));
	assert_int_equal(t->nrows, 8);
	pd_pprof_top_destroy(t);
}

/* The names as stored (--symbolize=none); by default the 256-byte name, which
 * holds "::" and brackets, is simplified as go tool pprof simplifies it: without
 * its "()" and "<=>" groups (its NUL and what follows stay). */
static void test_nul_strings_top(void **state)
{
	struct pd_pprof_profile *p = load(NUL_PB);
	pd_pprof_set_names(p, PD_PPROF_NAMES_RAW);
	check_nul_top(p, 1);
	pd_pprof_set_names(p, PD_PPROF_NAMES_DEFAULT);
	struct pd_pprof_top *t = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_top(p, 1, &t, &err), 0);
	char simple[256];
	size_t n = 0;
	for (int c = 0; c < 256; c++)
		if (!strchr("()<=>", c) || c == 0)
			simple[n++] = (char)c;
	assert_int_equal(n, 251);
	const struct pd_pprof_top_row *all = top_row_n(t, simple, n);
	assert_non_null(all);
	assert_int_equal(all->flat, 70000000);
	assert_null(top_row_n(t, all_bytes, 256));
	pd_pprof_top_destroy(t);
	pd_pprof_destroy(p);
	(void)state;
}

/* A merge keeps "dup\0a" and "dup\0b" apart and every string whole; so does a
 * diff against a profile without them. */
static void test_nul_strings_merge(void **state)
{
	struct pd_pprof_profile *p = load(NUL_PB), *m = NULL, *d = NULL;
	struct pd_pprof_profile *base = load(P("edge/unpacked.pb"));
	const struct pd_pprof_profile *two[2] = {p, p};
	struct pd_err err = {0};
	pd_pprof_set_names(p, PD_PPROF_NAMES_RAW); /* names as stored; the diff's too */
	assert_int_equal(pd_pprof_merge(two, 2, &m, &err), 0);
	assert_int_equal(pd_pprof_function_count(m), 8);
	assert_nul_strings(m);
	pd_pprof_set_names(m, PD_PPROF_NAMES_RAW);
	check_nul_top(m, 2);
	assert_int_equal(pd_pprof_diff(base, p, &d, &err), 0);
	assert_nul_strings(d);
	struct pd_pprof_top *t = NULL;
	assert_int_equal(pd_pprof_top(d, 1, &t, &err), 0);
	const struct pd_pprof_top_row *a = top_row_n(t, S_("dup\0a"));
	const struct pd_pprof_top_row *b = top_row_n(t, S_("dup\0b"));
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->flat, 20000000);
	assert_int_equal(b->flat, 40000000);
	pd_pprof_top_destroy(t);
	pd_pprof_destroy(p);
	pd_pprof_destroy(m);
	pd_pprof_destroy(d);
	pd_pprof_destroy(base);
	(void)state;
}

static int has_bytes(const struct pd_buf *b, const char *s, size_t len)
{
	return find_bytes(b->data, b->len, s, len) != NULL;
}

/* JSON reports write a NUL as \u0000 and keep what follows it; folded stacks
 * turn it into a space; none writes a raw NUL. */
static void test_nul_strings_reports(void **state)
{
	struct pd_pprof_profile *p = load(NUL_PB);
	pd_pprof_set_names(p, PD_PPROF_NAMES_RAW); /* the names as stored */
	struct pd_pprof_flame *f = NULL;
	struct pd_err err = {0};
	struct pd_buf b;
	const char want_all[] = "\"name\":\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006"
				"\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010";
	const char want_mid[] = "\\u001e\\u001f !\\\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJ"
				"KLMNOPQRSTUVWXYZ[\\\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\x7f"
				"\xef\xbf\xbd\xef\xbf\xbd";

	assert_int_equal(pd_pprof_flame(p, 1, &f, &err), 0);
	assert_int_equal(f->sample_type_len, 3);
	assert_int_equal(f->unit_len, 11);
	pd_buf_init(&b, 0);
	assert_int_equal(pd_pprof_flame_json(f, 0, &b), 0);
	assert_true(has_bytes(&b, S_("{\"sampleType\":\"cpu\",\"unit\":\"nanoseconds\"")));
	assert_null(memchr(b.data, 0, b.len));
	assert_true(has_bytes(&b, S_("\"name\":\"dup\\u0000a\"")));
	assert_true(has_bytes(&b, S_("\"name\":\"dup\\u0000b\"")));
	assert_true(has_bytes(&b, S_(want_all)));
	assert_true(has_bytes(&b, S_(want_mid)));
	pd_buf_fini(&b);
	pd_pprof_flame_destroy(f);

	pd_buf_init(&b, 0);
	assert_int_equal(pd_pprof_speedscope(p, 1, 1, NULL, &b, &err), 0);
	assert_null(memchr(b.data, 0, b.len));
	assert_true(has_bytes(&b, S_("{\"name\":\"dup\\u0000a\"}")));
	assert_true(has_bytes(&b, S_("{\"name\":\"dup\\u0000b\"}")));
	assert_true(has_bytes(&b, S_(want_all)));
	pd_buf_fini(&b);

	pd_buf_init(&b, 0);
	assert_int_equal(pd_pprof_folded(p, 1, &b, &err), 0);
	assert_null(memchr(b.data, 0, b.len));
	assert_true(has_bytes(&b, S_("main.main;dup a 20000000\n")));
	assert_true(has_bytes(&b, S_("main.main;dup b 40000000\n")));
	pd_buf_fini(&b);

	/* the tags report: the key and value whole */
	struct pd_pprof_tags *t = NULL;
	assert_int_equal(pd_pprof_tags(p, 1, NULL, &t, &err), 0);
	assert_int_equal(t->nkeys, 1);
	assert_int_equal(t->keys[0].key_len, 4);
	assert_memory_equal(t->keys[0].key, "k\0ey", 5);
	assert_int_equal(t->keys[0].nvalues, 1);
	assert_int_equal(t->keys[0].values[0].name_len, 4);
	assert_memory_equal(t->keys[0].values[0].name, "v\0al", 5);
	assert_int_equal(t->keys[0].values[0].total, 70000000);
	pd_pprof_tags_destroy(t);
	pd_pprof_destroy(p);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_all),
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_bad_inputs),
	    cmocka_unit_test(test_bad_bytes),
	    cmocka_unit_test(test_truncations_and_flips),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_sample_index),
	    cmocka_unit_test(test_top_invariants),
	    cmocka_unit_test(test_top_recursion_inline),
	    cmocka_unit_test(test_flame),
	    cmocka_unit_test(test_merge),
	    cmocka_unit_test(test_average),
	    cmocka_unit_test(test_diff),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_tag_filters),
	    cmocka_unit_test(test_tag_filter_errors),
	    cmocka_unit_test(test_tags_report),
	    cmocka_unit_test(test_nul_strings_roundtrip),
	    cmocka_unit_test(test_nul_strings_top),
	    cmocka_unit_test(test_nul_strings_merge),
	    cmocka_unit_test(test_nul_strings_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
