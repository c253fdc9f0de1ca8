/* test_chunkenc_v2_records.c: unit tests of two record forms of the columnar value
 * chunk (docs/format/chunks.md, "Records"): repeats (a profile record equal to the
 * one before it but for its time is written as its kind and the time's change)
 * value columns that follow from the period (a cpu profile's nanoseconds), and
 * times written relative to the samples' timestamps (encoding byte 3), and what
 * chunks of byte 4 add: runs of repeats, groups stored as they are, packed hex
 * strings and the tables dictionary; and what chunks of byte 5 add: value columns
 * that leave one value to the totals section beside them (holes).
 * Each is checked to be written where it applies, and not elsewhere, through
 * plain and shared-symbol appenders and their sealed chunks; every profile comes
 * back equal (pd_pprof_compare); and records that misuse either form are refused
 * as damage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "profd/util.h"
#include "v2_int.h"

struct item {
	uint8_t *raw;
	size_t len;
};

static void free_items(struct item *it, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(it[i].raw);
}

static struct item encode_parts(const struct pd_pprof_parts *p)
{
	struct item it;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_encode(p, &it.raw, &it.len, &err), 0);
	return it;
}

static void assert_same_profile(const struct item *want, const uint8_t *got, size_t gl,
				const char *what, size_t i)
{
	struct pd_pprof_profile *a, *b;
	struct pd_err err = {0};
	char why[512];
	if (pd_pprof_decode(&a, want->raw, want->len, NULL, &err)) {
		/* bytes that are not a profile come back as they are */
		assert_int_equal(gl, want->len);
		assert_memory_equal(got, want->raw, gl);
		return;
	}
	if (pd_pprof_decode(&b, got, gl, NULL, &err))
		fail_msg("%s profile %zu does not decode: %s", what, i, err.msg);
	if (pd_pprof_compare(a, b, why, sizeof(why)))
		fail_msg("%s profile %zu differs after the round trip: %s", what, i, why);
	pd_pprof_destroy(a);
	pd_pprof_destroy(b);
}

/* The parts of a sealed chunk: its header, raw tables and raw group frames. */
struct parsed {
	uint8_t enc;
	int raw_group[64]; /* stored as it is, not as a zstd frame (byte 4) */
	uint64_t count, group;
	uint8_t *tables;
	size_t tlen;
	uint8_t *groups[64];
	size_t glen[64];
	size_t ngroups;
};

static void parse_chunk(const uint8_t *s, size_t sl, struct parsed *p)
{
	struct v2_rd r = {s, sl, 1, 0};
	struct pd_err err = {0};
	size_t fl[64];
	memset(p, 0, sizeof(*p));
	assert_true(v2_columnar_byte(s[0]));
	p->enc = s[0];
	p->count = v2_uv(&r);
	p->group = v2_uv(&r);
	uint64_t tl = v2_uv(&r);
	p->ngroups = (size_t)((p->count + p->group - 1) / p->group);
	assert_true(p->ngroups <= 64);
	for (size_t g = 0; g < p->ngroups; g++)
		fl[g] = (size_t)v2_uv(&r);
	assert_false(r.bad);
	size_t at = r.pos;
	int dict = p->enc >= PD_CHUNKENC_VALUES_COLUMNAR_DICT;
	struct pd_buf b;
	pd_buf_init(&b, 0);
	if (v2_decompress_buf_dict(s + at, tl, 1 << 26, dict ? V2_DICT_GO : V2_DICT_NONE, &b,
				   "tables", &err))
		fail_msg("tables: %s", err.msg);
	p->tables = pd_buf_steal(&b, &p->tlen);
	at += tl;
	for (size_t g = 0; g < p->ngroups; g++) {
		p->raw_group[g] = !v2_is_zstd(s + at, fl[g]);
		assert_true(dict || !p->raw_group[g]);
		pd_buf_init(&b, 0);
		if (v2_group_bytes(s + at, fl[g], 1 << 26, dict, &b, &err))
			fail_msg("group %zu: %s", g, err.msg);
		p->groups[g] = pd_buf_steal(&b, &p->glen[g]);
		at += fl[g];
	}
	assert_int_equal(at, sl);
}

static void parsed_fini(struct parsed *p)
{
	free(p->tables);
	for (size_t g = 0; g < p->ngroups; g++)
		free(p->groups[g]);
}

/* A chunk made of p's raw parts again (some of them changed by a test). */
static uint8_t *build_chunk(const struct parsed *p, size_t *len)
{
	struct pd_buf b, frames;
	struct pd_err err = {0};
	size_t tl, fl[64];
	pd_buf_init(&b, 0);
	pd_buf_init(&frames, 0);
	int dict = p->enc >= PD_CHUNKENC_VALUES_COLUMNAR_DICT;
	assert_int_equal(v2_compress_cut_dict(p->tables, p->tlen, 3, dict ? V2_DICT_GO : V2_DICT_NONE,
					      NULL, 0, &frames, &tl, &err),
			 0);
	for (size_t g = 0; g < p->ngroups; g++)
		assert_int_equal(v2_compress(p->groups[g], p->glen[g], 3, &frames, &fl[g], &err), 0);
	uint8_t enc = p->enc;
	assert_int_equal(pd_buf_append(&b, &enc, 1), 0);
	assert_int_equal(v2_put_uv(&b, p->count) | v2_put_uv(&b, p->group) | v2_put_uv(&b, tl), 0);
	for (size_t g = 0; g < p->ngroups; g++)
		assert_int_equal(v2_put_uv(&b, fl[g]), 0);
	assert_int_equal(pd_buf_append(&b, frames.data, frames.len), 0);
	pd_buf_fini(&frames);
	return pd_buf_steal(&b, len);
}

/* Counts the records of each kind in sealed chunk s, stepping over them as a
 * read does (the repeats of a run count as repeats, and each run once as
 * KIND_RUN); *raw gets the records' bytes before compression. */
static void count_kinds(const uint8_t *s, size_t sl, size_t kinds[4], size_t *raw)
{
	struct parsed p;
	struct v2_tables t;
	struct pd_err err = {0};
	parse_chunk(s, sl, &p);
	v2_tables_init(&t);
	if (v2_tables_read(&t, p.tables, p.tlen, &err))
		fail_msg("tables: %s", err.msg);
	kinds[0] = kinds[1] = kinds[2] = kinds[3] = 0;
	*raw = 0;
	for (size_t g = 0; g < p.ngroups; g++) {
		struct v2_prev prev = {0};
		struct v2_rd r = {p.groups[g], p.glen[g], 0, 0};
		prev.holes_free = 1; /* counted, not read: no totals needed */
		*raw += p.glen[g];
		while (r.pos < r.len || prev.run_left) {
			struct v2_decoded d;
			uint8_t k = prev.run_left ? KIND_REPEAT : r.p[r.pos];
			assert_true(k <= KIND_RUN);
			if (k == KIND_RUN) {
				kinds[KIND_RUN]++;
				k = KIND_REPEAT;
			}
			kinds[k]++;
			if (v2_record_decode(&t, &prev, &r, V2_WANT_STATE, &d, &err))
				fail_msg("group %zu: %s", g, err.msg);
			v2_decoded_fini(&d);
		}
		v2_prev_fini(&prev);
	}
	v2_tables_fini(&t);
	parsed_fini(&p);
}

/* Appends the items to a v2 appender of the group (on symbols shared with
 * nothing else when shared), checks every profile read back from the appender
 * and from its sealed bytes, and returns the sealed chunk. */
static uint8_t *roundtrip(const struct item *it, size_t n, unsigned group, int shared,
			  size_t *sl)
{
	struct pd_err err = {0};
	struct pd_chunkenc_symbols *sym = shared ? pd_chunkenc_symbols_create() : NULL;
	struct pd_chunkenc_values *c = shared ? pd_chunkenc_values_create_shared(sym, group, 0)
					      : pd_chunkenc_values_create_enc(2, group, 0);
	uint8_t *s;
	assert_non_null(c);
	for (size_t i = 0; i < n; i++)
		if (pd_chunkenc_values_append(c, it[i].raw, it[i].len, &err))
			fail_msg("append %zu: %s", i, err.msg);
	assert_int_equal(pd_chunkenc_values_seal(c, &s, sl, &err), 0);
	for (size_t i = 0; i < n; i++) {
		uint8_t *a, *b;
		size_t al, bl;
		if (pd_chunkenc_values_get(c, i, &a, &al, &err))
			fail_msg("get %zu: %s", i, err.msg);
		if (pd_chunkenc_values_read(s, *sl, i, 1 << 26, &b, &bl, &err))
			fail_msg("read %zu: %s", i, err.msg);
		assert_same_profile(&it[i], a, al, "appender", i);
		assert_same_profile(&it[i], b, bl, "sealed", i);
		free(a);
		free(b);
	}
	pd_chunkenc_values_destroy(c);
	if (sym)
		pd_chunkenc_symbols_unref(sym);
	return s;
}

/* ---- idle profiles: repeats ------------------------------------------------------- */

static const char *const idle_strs[] = {"",      "contentions", "count",        "delay",
					"nanoseconds", "/usr/bin/x", "0123456789abcdef"};

/* A block profile of a program that does not block, as Go writes it: sample and
 * period types, one mapping, no samples; its time and duration as given. */
static struct item idle_profile(int64_t time_nanos, int64_t duration)
{
	size_t lens[7];
	for (int i = 0; i < 7; i++)
		lens[i] = strlen(idle_strs[i]);
	struct pd_pprof_pvt st[2] = {{1, 2}, {3, 4}};
	struct pd_pprof_pmapping map = {1, 0x400000, 0x1900000, 0, 5, 6, 1, 1, 1, 0};
	struct pd_pprof_parts p = {0};
	p.strings = idle_strs;
	p.string_len = lens;
	p.nstrings = 7;
	p.sample_type = st;
	p.nsample_type = 2;
	p.mapping = &map;
	p.nmapping = 1;
	p.has_period_type = 1;
	p.period_type = st[0];
	p.period = 1;
	p.time_nanos = time_nanos;
	p.duration_nanos = duration;
	return encode_parts(&p);
}

#define NIDLE 100

/* 100 scrapes about 15 s apart with up to 50 ms of jitter; scrapes 40 to 42 have
 * a duration (another body), so 40 and 43 cannot repeat the record before them. */
static void idle_series(struct item *it)
{
	uint64_t seed = 42;
	int64_t t = 1795342071175836600;
	for (size_t i = 0; i < NIDLE; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		t += 15000000000 + (int64_t)((seed >> 33) % 100000000) - 50000000;
		it[i] = idle_profile(t, i >= 40 && i <= 42 ? 5 : 0);
	}
}

static void test_repeats(void **state)
{
	(void)state;
	struct item it[NIDLE];
	size_t k[4], raw, sl;
	idle_series(it);
	for (int shared = 0; shared <= 1; shared++) {
		/* groups of 32: each group's first record is whole, and so are 40 and 43 */
		uint8_t *s = roundtrip(it, NIDLE, 32, shared, &sl);
		count_kinds(s, sl, k, &raw);
		assert_int_equal(k[KIND_PROFILE], 4 + 2);
		assert_int_equal(k[KIND_REPEAT], NIDLE - 6);
		assert_int_equal(k[KIND_OPAQUE], 0);
		/* a repeat is its kind and a few bytes of time */
		assert_true(raw < 6 * 40 + (NIDLE - 6) * 6);
		free(s);
		/* groups of one: nothing to repeat */
		s = roundtrip(it, 5, 1, shared, &sl);
		count_kinds(s, sl, k, &raw);
		assert_int_equal(k[KIND_PROFILE], 5);
		assert_int_equal(k[KIND_REPEAT], 0);
		free(s);
	}
	/* an opaque record between two equal profiles does not stop the repeat */
	struct item mix[4] = {it[0], {(uint8_t *)"not a profile", 13}, it[1], it[2]};
	uint8_t *s = roundtrip(mix, 4, 32, 0, &sl);
	count_kinds(s, sl, k, &raw);
	assert_int_equal(k[KIND_PROFILE], 1);
	assert_int_equal(k[KIND_OPAQUE], 1);
	assert_int_equal(k[KIND_REPEAT], 2);
	free(s);
	free_items(it, NIDLE);
}

static void expect_err_rel(int rc, const struct pd_err *err)
{
	assert_int_equal(rc, PD_EINVAL);
	if (!strstr(err->msg, "relative to their timestamps"))
		fail_msg("unexpected message: %s", err->msg);
}
/* ---- times relative to the samples' timestamps ------------------------------------ */

struct merged {
	const struct item *it;
	size_t next;
};

/* Each merged run starts where the last ended and has the time of its first
 * profile (the earliest). */
static int on_merged(void *ctx, struct pd_pprof_profile *p, size_t first, size_t count,
		     size_t bytes)
{
	struct merged *m = ctx;
	struct pd_pprof_profile *want;
	struct pd_err err = {0};
	(void)bytes;
	assert_int_equal(first, m->next);
	assert_true(count > 0);
	assert_int_equal(pd_pprof_decode(&want, m->it[first].raw, m->it[first].len, NULL, &err), 0);
	assert_int_equal(pd_pprof_time_nanos(p), pd_pprof_time_nanos(want));
	pd_pprof_destroy(want);
	pd_pprof_destroy(p);
	m->next = first + count;
	return 0;
}

static void test_relative_times(void **state)
{
	(void)state;
	struct item it[NIDLE + 1];
	int64_t ts[NIDLE + 1];
	struct pd_err err = {0};
	size_t k[4], raw, abs_raw, sl, al;
	idle_series(it);
	/* the scrape starts 3 ms before the target writes its profile */
	for (size_t i = 0; i < NIDLE; i++) {
		struct pd_pprof_profile *p;
		assert_int_equal(pd_pprof_decode(&p, it[i].raw, it[i].len, NULL, &err), 0);
		ts[i] = pd_pprof_time_nanos(p) / 1000000 - 3;
		pd_pprof_destroy(p);
	}
	/* a profile without a time: the field wraps, and 0 comes back */
	it[NIDLE] = idle_profile(0, 0);
	ts[NIDLE] = ts[NIDLE - 1] + 15000;
	uint8_t *abs = roundtrip(it, NIDLE + 1, 32, 0, &al);
	count_kinds(abs, al, k, &abs_raw);
	for (int shared = 0; shared <= 1; shared++) {
		struct pd_chunkenc_symbols *sym = shared ? pd_chunkenc_symbols_create() : NULL;
		struct pd_chunkenc_values *c = shared ? pd_chunkenc_values_create_shared(sym, 32, 0)
						      : pd_chunkenc_values_create_enc(2, 32, 0);
		uint8_t *s, *a, *b;
		size_t bl;
		for (size_t i = 0; i <= NIDLE; i++)
			if (pd_chunkenc_values_append_at(c, ts[i], it[i].raw, it[i].len, NULL, &err))
				fail_msg("append %zu: %s", i, err.msg);
		/* a chunk takes timestamps on every append or on none */
		assert_int_equal(pd_chunkenc_values_append(c, it[0].raw, it[0].len, &err), PD_EINVAL);
		assert_int_equal(pd_chunkenc_values_count(c), NIDLE + 1);
		assert_int_equal(pd_chunkenc_values_seal(c, &s, &sl, &err), 0);
		assert_int_equal(s[0], PD_CHUNKENC_VALUES_COLUMNAR_DICT);
		assert_int_equal(pd_chunkenc_values_encoding(s, sl), PD_CHUNKENC_VALUES_COLUMNAR);
		for (size_t i = 0; i <= NIDLE; i++) {
			size_t l2;
			if (pd_chunkenc_values_get_at(c, i, ts[i], &a, &l2, &err))
				fail_msg("get %zu: %s", i, err.msg);
			if (pd_chunkenc_values_read_at(s, sl, i, ts[i], 1 << 26, &b, &bl, &err))
				fail_msg("read %zu: %s", i, err.msg);
			assert_same_profile(&it[i], a, l2, "appender", i);
			assert_same_profile(&it[i], b, bl, "sealed", i);
			free(a);
			free(b);
		}
		/* the same repeats as with whole times, but written as runs where
		 * they are longer than two: 20 bits of time each (the nanoseconds
		 * past the millisecond), where a repeat of the change in the
		 * interval (up to 100 ms here) took a byte of kind and 4; group 1
		 * has two runs around the profiles with a duration, and its two
		 * repeats between them stay repeats (a run would be longer); the last
		 * group's four repeats too, the time 0 of the last making the run's
		 * fields 64 bits wide */
		count_kinds(s, sl, k, &raw);
		assert_int_equal(k[KIND_PROFILE], 4 + 2);
		assert_int_equal(k[KIND_REPEAT], NIDLE + 1 - 6);
		assert_int_equal(k[KIND_RUN], 4);
		assert_true(raw < abs_raw - 2 * (NIDLE - 6));
		/* without the timestamps nothing reads */
		expect_err_rel(pd_chunkenc_values_read(s, sl, 3, 1 << 26, &b, &bl, &err), &err);
		expect_err_rel(pd_chunkenc_values_get(c, 3, &b, &bl, &err), &err);
		struct merged m = {it, 0};
		expect_err_rel(pd_chunkenc_values_merge(s, sl, 0, NIDLE, 1 << 26, on_merged, &m, &err),
			       &err);
		/* merges: runs of equal headers, each with its earliest time */
		assert_int_equal(
		    pd_chunkenc_values_merge_at(s, sl, 0, NIDLE, ts, 1 << 26, on_merged, &m, &err), 0);
		assert_int_equal(m.next, NIDLE);
		m.next = 5;
		assert_int_equal(
		    pd_chunkenc_values_merge_open_at(c, 5, NIDLE, ts, 1 << 26, on_merged, &m, &err), 0);
		assert_int_equal(m.next, NIDLE);
		free(s);
		pd_chunkenc_values_destroy(c);
		if (sym)
			pd_chunkenc_symbols_unref(sym);
	}
	/* and a chunk begun without them takes none */
	struct pd_chunkenc_values *c = pd_chunkenc_values_create_enc(2, 32, 0);
	assert_int_equal(pd_chunkenc_values_append(c, it[0].raw, it[0].len, &err), 0);
	assert_int_equal(pd_chunkenc_values_append_at(c, ts[1], it[1].raw, it[1].len, NULL, &err),
			 PD_EINVAL);
	pd_chunkenc_values_destroy(c);
	free(abs);
	free_items(it, NIDLE + 1);
}

/* A profile whose record is longer than V2_REPEAT_MAX is never repeated: the
 * state keeps no body that long. */
static void test_no_repeat_of_long_records(void **state)
{
	(void)state;
	static const char *strs[] = {"", "samples", "count", "main", "main.go"};
	size_t lens[5];
	for (int i = 0; i < 5; i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_pfunction fn = {1, 3, 3, 4, 1};
	struct pd_pprof_pline ln = {1, 7, 0};
	struct pd_pprof_plocation loc = {1, 0, 0x1000, &ln, 1, 0};
	uint64_t stack[] = {1};
	enum { NS = 200 };
	int64_t vals[NS];
	struct pd_pprof_psample smp[NS];
	for (size_t i = 0; i < NS; i++) {
		vals[i] = (int64_t)i + 1;
		smp[i] = (struct pd_pprof_psample){stack, 1, &vals[i], 1, NULL, 0};
	}
	struct pd_pprof_parts p = {0};
	p.strings = strs;
	p.string_len = lens;
	p.nstrings = 5;
	p.sample_type = &st;
	p.nsample_type = 1;
	p.sample = smp;
	p.nsample = NS;
	p.location = &loc;
	p.nlocation = 1;
	p.function = &fn;
	p.nfunction = 1;
	struct item it[3];
	for (int i = 0; i < 3; i++) {
		p.time_nanos = 1000000000 * (int64_t)(i + 1);
		it[i] = encode_parts(&p);
	}
	size_t k[4], raw, sl;
	uint8_t *s = roundtrip(it, 3, 32, 0, &sl);
	count_kinds(s, sl, k, &raw);
	assert_int_equal(k[KIND_PROFILE], 3);
	assert_int_equal(k[KIND_REPEAT], 0);
	free(s);
	free_items(it, 3);
}

/* ---- cpu profiles: the nanoseconds column follows from the period ------------------ */

/* A profile of one function's three locations as stacks 1, 2-1 and 3-1 (ns of
 * them) with values v: strs its seven strings (1-4: two sample types' type and
 * unit; 5, 6: the function's name and file), period type sample type pt. */
static struct item three_stacks(const char *const *strs, int64_t (*v)[2], size_t ns, int pt,
				int64_t period, int64_t time_nanos, int64_t duration)
{
	size_t lens[7];
	for (int i = 0; i < 7; i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_pvt st[2] = {{1, 2}, {3, 4}};
	struct pd_pprof_pfunction fn = {1, 5, 5, 6, 1};
	struct pd_pprof_pline ln[3] = {{1, 7, 0}, {1, 8, 0}, {1, 9, 0}};
	struct pd_pprof_plocation loc[3] = {
	    {1, 0, 0x1000, &ln[0], 1, 0}, {2, 0, 0x1010, &ln[1], 1, 0}, {3, 0, 0x1020, &ln[2], 1, 0}};
	uint64_t s1[] = {1}, s2[] = {2, 1}, s3[] = {3, 1};
	struct pd_pprof_psample smp[3] = {
	    {s1, 1, v[0], 2, NULL, 0}, {s2, 2, v[1], 2, NULL, 0}, {s3, 2, v[2], 2, NULL, 0}};
	struct pd_pprof_parts p = {0};
	p.strings = strs;
	p.string_len = lens;
	p.nstrings = 7;
	p.sample_type = st;
	p.nsample_type = 2;
	p.sample = smp;
	p.nsample = ns;
	p.location = loc;
	p.nlocation = 3;
	p.function = &fn;
	p.nfunction = 1;
	p.has_period_type = 1;
	p.period_type = st[pt];
	p.period = period;
	p.time_nanos = time_nanos;
	p.duration_nanos = duration;
	return encode_parts(&p);
}

/* A cpu profile as Go writes it (samples/count, cpu/nanoseconds = count × period),
 * with one nanoseconds value off by `off`. */
static struct item cpu_profile(int64_t off, int64_t big)
{
	static const char *strs[] = {"", "samples", "count", "cpu", "nanoseconds", "main", "main.go"};
	const int64_t period = 10000000;
	int64_t v[3][2] = {{3, 0}, {1, 0}, {big, 0}};
	for (int i = 0; i < 3; i++)
		v[i][1] = (int64_t)((uint64_t)v[i][0] * (uint64_t)period);
	v[1][1] += off;
	return three_stacks(strs, v, 3, 1, period, 1795342071175836600, 10000000000);
}

static void test_period_column(void **state)
{
	(void)state;
	size_t k[4], exact, off, sl;
	/* a count whose product with the period wraps is still exact */
	struct item a = cpu_profile(0, ((int64_t)1 << 40) + 3),
		    b = cpu_profile(1, ((int64_t)1 << 40) + 3);
	uint8_t *s = roundtrip(&a, 1, 32, 0, &sl);
	count_kinds(s, sl, k, &exact);
	free(s);
	s = roundtrip(&b, 1, 32, 0, &sl);
	count_kinds(s, sl, k, &off);
	free(s);
	/* one value off the period's multiple: the column is written, three values of
	 * at least 4 bytes (and the largest of 10) more */
	assert_true(off >= exact + 4 + 4 + 10);
	free(a.raw);
	free(b.raw);
}

/* ---- damage ------------------------------------------------------------------------ */

/* Offset of the mode byte of the first value column of the lone profile record at
 * the start of group g (no period type, sample types, comments or mappings
 * beyond what cpu_profile writes). */
static size_t first_mode_at(const uint8_t *g, size_t len)
{
	struct v2_rd r = {g, len, 0, 0};
	assert_int_equal(g[r.pos++], KIND_PROFILE);
	unsigned flags = (unsigned)v2_uv(&r);
	v2_sv(&r);
	v2_sv(&r);
	v2_sv(&r);
	if (flags & F_PERIOD_TYPE) {
		v2_uv(&r);
		v2_uv(&r);
	}
	for (uint64_t n = 2 * v2_uv(&r); n > 0; n--)
		v2_uv(&r);
	for (int i = 0; i < 4; i++)
		v2_uv(&r);
	for (uint64_t n = v2_uv(&r); n > 0; n--)
		v2_uv(&r);
	if (!(flags & F_MAP_SAME)) {
		uint64_t n = v2_uv(&r);
		for (uint64_t i = 0; i < n; i++)
			v2_uv(&r);
		if (!(flags & F_MAP_SEQ))
			for (uint64_t i = 0; i < n; i++)
				v2_uv(&r);
	}
	for (uint64_t n = v2_uv(&r); n > 0; n--)
		v2_uv(&r);
	assert_false(r.bad);
	return r.pos;
}

/* A read of profile i (at timestamp ts) of the chunk of p's parts fails as
 * damage saying what. */
static void expect_damage_at(const struct parsed *p, size_t i, int64_t ts, const char *what)
{
	size_t cl, ol;
	uint8_t *c = build_chunk(p, &cl), *o;
	struct pd_err err = {0};
	assert_int_equal(pd_chunkenc_values_read_at(c, cl, i, ts, 1 << 26, &o, &ol, &err),
			 PD_ECORRUPT);
	if (!strstr(err.msg, what))
		fail_msg("\"%s\" does not say \"%s\"", err.msg, what);
	free(c);
}

static void expect_damage(const struct parsed *p, size_t i, const char *what)
{
	expect_damage_at(p, i, PD_CHUNKENC_NO_TS, what);
}

static void test_damaged_records(void **state)
{
	(void)state;
	struct item it[NIDLE];
	struct parsed p;
	size_t sl;
	idle_series(it);
	uint8_t *s = roundtrip(it, 3, 32, 0, &sl);
	parse_chunk(s, sl, &p);
	free(s);
	/* a group that starts with a repeat: nothing before it to repeat */
	uint8_t *g0 = p.groups[0];
	size_t l0 = p.glen[0];
	uint8_t rep[] = {KIND_REPEAT, 0x02, KIND_REPEAT, 0x00, KIND_REPEAT, 0x04};
	p.groups[0] = rep;
	p.glen[0] = sizeof(rep);
	expect_damage(&p, 0, "a repeat with no profile record before it");
	/* a repeat cut short */
	p.glen[0] = 1;
	p.count = 1;
	p.ngroups = 1;
	expect_damage(&p, 0, "repeat truncated");
	p.groups[0] = g0;
	p.glen[0] = l0;
	parsed_fini(&p);
	free_items(it, NIDLE);

	/* the first value column said to follow from the period */
	struct item c = cpu_profile(0, 7);
	s = roundtrip(&c, 1, 32, 0, &sl);
	parse_chunk(s, sl, &p);
	free(s);
	size_t at = first_mode_at(p.groups[0], p.glen[0]);
	assert_int_equal(p.groups[0][at], COL_RAW);
	p.groups[0][at] = COL_PERIOD;
	expect_damage(&p, 0, "bad value column mode");
	/* and an unknown mode */
	p.groups[0][at] = 3;
	expect_damage(&p, 0, "bad value column mode");
	parsed_fini(&p);
	free(c.raw);
}

/* ---- chunks of byte 4: runs, groups as they are, hex strings, the dictionary ------ */

/* Seals the items as a chunk of relative times (timestamps: each profile's time
 * in ms less 3), checks every profile read back one by one and merged, and
 * returns the chunk and the timestamps (ts: n of them). */
static uint8_t *roundtrip_at(const struct item *it, size_t n, unsigned group, int64_t *ts,
			     size_t *sl)
{
	struct pd_err err = {0};
	struct pd_chunkenc_values *c = pd_chunkenc_values_create_enc(2, group, 0);
	uint8_t *s;
	for (size_t i = 0; i < n; i++) {
		struct pd_pprof_profile *p;
		assert_int_equal(pd_pprof_decode(&p, it[i].raw, it[i].len, NULL, &err), 0);
		ts[i] = pd_pprof_time_nanos(p) / 1000000 - 3;
		pd_pprof_destroy(p);
		if (pd_chunkenc_values_append_at(c, ts[i], it[i].raw, it[i].len, NULL, &err))
			fail_msg("append %zu: %s", i, err.msg);
	}
	assert_int_equal(pd_chunkenc_values_seal(c, &s, sl, &err), 0);
	assert_int_equal(s[0], PD_CHUNKENC_VALUES_COLUMNAR_DICT);
	for (size_t i = 0; i < n; i++) {
		uint8_t *b;
		size_t bl;
		if (pd_chunkenc_values_read_at(s, *sl, i, ts[i], 1 << 26, &b, &bl, &err))
			fail_msg("read %zu: %s", i, err.msg);
		assert_same_profile(&it[i], b, bl, "sealed", i);
		free(b);
	}
	struct merged m = {it, 0};
	assert_int_equal(pd_chunkenc_values_merge_at(s, *sl, 0, n, ts, 1 << 26, on_merged, &m, &err),
			 0);
	assert_int_equal(m.next, n);
	pd_chunkenc_values_destroy(c);
	return s;
}

/* Where group 0's first record of p ends (its records stepped over from the
 * start with the chunk's tables). */
static size_t first_record_end(const struct parsed *p)
{
	struct v2_rd r = {p->groups[0], p->glen[0], 0, 0};
	struct v2_tables t;
	struct v2_prev prev = {0};
	struct v2_decoded d;
	struct pd_err err = {0};
	v2_tables_init(&t);
	assert_int_equal(v2_tables_read(&t, p->tables, p->tlen, &err), 0);
	assert_int_equal(v2_record_decode(&t, &prev, &r, V2_WANT_STATE, &d, &err), 0);
	v2_decoded_fini(&d);
	v2_prev_fini(&prev);
	v2_tables_fini(&t);
	return r.pos;
}

static void test_runs(void **state)
{
	(void)state;
	struct item it[NIDLE];
	int64_t ts[NIDLE];
	size_t k[4], raw, sl;
	struct parsed p;
	idle_series(it);
	/* 40 idle profiles in groups of 32: a whole record and a run of 31, then a
	 * whole record and a run of 7 */
	uint8_t *s = roundtrip_at(it, 40, 32, ts, &sl);
	count_kinds(s, sl, k, &raw);
	assert_int_equal(k[KIND_PROFILE], 2);
	assert_int_equal(k[KIND_REPEAT], 38);
	assert_int_equal(k[KIND_RUN], 2);
	parse_chunk(s, sl, &p);
	/* the run right after the group's first record: its count, and fields of
	 * at most 20 bits (under a millisecond of nanoseconds, plus 3 ms) */
	struct v2_rd r = {p.groups[0], p.glen[0], first_record_end(&p), 0};
	assert_int_equal(r.p[r.pos], KIND_RUN);
	r.pos++;
	assert_int_equal(v2_uv(&r), 31);
	(void)v2_sv(&r);
	unsigned w = v2_byte(&r);
	assert_true(w >= 19 && w <= 22);
	assert_int_equal(r.len - r.pos, (31 * w + 7) / 8);
	/* groups that zstd does not make smaller are stored as they are */
	assert_true(p.raw_group[0] || p.raw_group[1]);
	parsed_fini(&p);
	free(s);
	/* three profiles: two repeats stay repeats (a run of two is longer) */
	s = roundtrip_at(it, 3, 32, ts, &sl);
	count_kinds(s, sl, k, &raw);
	assert_int_equal(k[KIND_REPEAT], 2);
	assert_int_equal(k[KIND_RUN], 0);
	free(s);
	/* a chunk without timestamps is written as before: byte 2, no runs */
	s = roundtrip(it, 40, 32, 0, &sl);
	assert_int_equal(s[0], PD_CHUNKENC_VALUES_COLUMNAR);
	count_kinds(s, sl, k, &raw);
	assert_int_equal(k[KIND_REPEAT], 38);
	assert_int_equal(k[KIND_RUN], 0);
	free(s);
	free_items(it, NIDLE);
}

static void test_damaged_runs(void **state)
{
	(void)state;
	struct item it[NIDLE];
	int64_t ts[NIDLE];
	struct parsed p;
	size_t sl;
	idle_series(it);
	uint8_t *s = roundtrip_at(it, 8, 32, ts, &sl);
	parse_chunk(s, sl, &p);
	free(s);
	/* the group: its first record, then a run of 7 */
	struct pd_err err = {0};
	size_t first = first_record_end(&p);
	assert_int_equal(p.groups[0][first], KIND_RUN);
	uint8_t *g0 = p.groups[0];
	size_t l0 = p.glen[0];
	uint8_t g[256];
	assert_true(l0 < sizeof(g));
	p.groups[0] = g;
	/* a run standing for no repeats */
	memcpy(g, g0, first);
	memcpy(g + first, (uint8_t[]){KIND_RUN, 0, 0, 0}, 4);
	p.glen[0] = first + 4;
	expect_damage_at(&p, 1, ts[1], "a run of 0 repeats");
	/* fields wider than 64 bits */
	memcpy(g + first, (uint8_t[]){KIND_RUN, 1, 0, 65}, 4);
	expect_damage_at(&p, 1, ts[1], "of 65 bits");
	/* fewer bytes of fields than the run says */
	memcpy(g + first, (uint8_t[]){KIND_RUN, 7, 0, 20, 1, 2}, 6);
	p.glen[0] = first + 6;
	expect_damage_at(&p, 1, ts[1], "run truncated");
	/* padding bits that are not zero: one field of 4 bits in a byte */
	memcpy(g + first, (uint8_t[]){KIND_RUN, 1, 0, 4, 0x13}, 5);
	p.glen[0] = first + 5;
	expect_damage_at(&p, 1, ts[1], "padding bits are not zero");
	/* a run that starts a group: nothing before it to repeat */
	memcpy(g, (uint8_t[]){KIND_RUN, 1, 0, 4, 0x03}, 5);
	p.glen[0] = 5;
	expect_damage_at(&p, 0, ts[0], "a repeat with no profile record before it");
	/* the run as written reads */
	memcpy(g, g0, l0);
	p.glen[0] = l0;
	size_t cl, ol;
	uint8_t *o, *c = build_chunk(&p, &cl);
	assert_int_equal(pd_chunkenc_values_read_at(c, cl, 7, ts[7], 1 << 26, &o, &ol, &err), 0);
	assert_same_profile(&it[7], o, ol, "rebuilt", 7);
	free(o);
	free(c);
	p.groups[0] = g0;
	parsed_fini(&p);
	free_items(it, NIDLE);
}

/* Writes tables of the strings with hex packing, checks the form written and
 * that they read back the same. */
static void hex_tables(const char *const *strs, size_t n, size_t packed)
{
	struct v2_tables t, back;
	struct pd_buf b;
	struct pd_err err = {0};
	v2_tables_init(&t);
	v2_tables_init(&back);
	pd_buf_init(&b, 0);
	for (size_t i = 0; i < n; i++)
		assert_true(v2_intern_str(&t, strs[i], strlen(strs[i])) >= 0);
	assert_int_equal(v2_tables_write(&t, &b, NULL, 1), 0);
	assert_int_equal(b.data[0], 0);
	if (packed) {
		assert_int_equal(b.data[1], 0);
		assert_int_equal(b.data[3], packed);
	} else {
		assert_int_equal(b.data[1], t.nstr);
	}
	if (v2_tables_read(&back, b.data, b.len, &err))
		fail_msg("tables: %s", err.msg);
	assert_int_equal(back.nstr, t.nstr);
	for (size_t i = 0; i < t.nstr; i++) {
		assert_int_equal(v2_str_len(&back, (uint32_t)i), v2_str_len(&t, (uint32_t)i));
		assert_string_equal(v2_str(&back, (uint32_t)i), v2_str(&t, (uint32_t)i));
	}
	/* without packing: the plain NUL-terminated form, longer by half of each
	 * packed string, less the lengths written */
	struct pd_buf plain;
	pd_buf_init(&plain, 0);
	assert_int_equal(v2_tables_write(&t, &plain, NULL, 0), 0);
	if (packed)
		assert_true(plain.len > b.len);
	else
		assert_int_equal(plain.len, b.len);
	pd_buf_fini(&plain);
	pd_buf_fini(&b);
	v2_tables_fini(&t);
	v2_tables_fini(&back);
}

static void test_hex_strings(void **state)
{
	(void)state;
	/* build ids of 40 and 16 digits are packed; upper case, odd lengths, short
	 * ones, and other text are not */
	const char *const strs[] = {"",
				    "/usr/bin/prometheus",
				    "7c70e08457648609a728f201858408269834e0eb",
				    "0123456789abcdef",
				    "0123456789ABCDEF",
				    "0123456789abcdef0",
				    "0123456789abcd",
				    "deadbeefdeadbeefxx",
				    "93ac61ec5a8eb1396f9fbd350e3169a558528a40"};
	hex_tables(strs, 9, 3);
	hex_tables(strs, 2, 0);
	/* damaged forms are refused */
	struct v2_tables t;
	struct pd_err err = {0};
	const uint8_t bad_index[] = {0, 0, 2, 1, 2, 0, 1, 0xab};
	const uint8_t no_packed[] = {0, 0, 2, 0, 0, 'a', 0};
	const uint8_t cut[] = {0, 0, 2, 1, 1, 0, 4, 0xab, 0xcd};
	const uint8_t empty[] = {0, 0, 2, 1, 1, 0, 0};
	const struct {
		const uint8_t *p;
		size_t len;
		const char *what;
	} cases[] = {{bad_index, sizeof(bad_index), "out of order or range"},
		     {no_packed, sizeof(no_packed), "count is missing or too large"},
		     {cut, sizeof(cut), "packed hex string is truncated"},
		     {empty, sizeof(empty), "packed hex string is truncated"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v2_tables_init(&t);
		assert_int_equal(v2_tables_read(&t, cases[i].p, cases[i].len, &err), PD_ECORRUPT);
		if (!strstr(err.msg, cases[i].what))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.msg, cases[i].what);
		v2_tables_fini(&t);
	}
}

/* The tables frame of a chunk of byte 4 is compressed against the dictionary:
 * it reads with it, not without it, and is smaller than without it. */
static void test_dictionary(void **state)
{
	(void)state;
	struct item it[NIDLE];
	int64_t ts[NIDLE];
	struct pd_err err = {0};
	size_t sl;
	idle_series(it);
	uint8_t *s = roundtrip_at(it, 4, 32, ts, &sl);
	struct v2_rd r = {s, sl, 1, 0};
	(void)v2_uv(&r);
	(void)v2_uv(&r);
	uint64_t tl = v2_uv(&r);
	(void)v2_uv(&r);
	struct pd_buf with, without;
	pd_buf_init(&with, 0);
	pd_buf_init(&without, 0);
	assert_int_equal(
	    v2_decompress_buf_dict(s + r.pos, tl, 1 << 20, V2_DICT_GO, &with, "tables", &err), 0);
	/* the mapping path and the sample types come from the dictionary */
	int rc = v2_decompress_buf(s + r.pos, tl, 1 << 20, &without, "tables", &err);
	assert_true(rc != 0 || without.len != with.len || memcmp(without.data, with.data, with.len));
	size_t plain;
	struct pd_buf z;
	pd_buf_init(&z, 0);
	assert_int_equal(v2_compress_cut_dict(with.data, with.len, V2_TABLES_LEVEL, V2_DICT_NONE, NULL,
					      0, &z, &plain, &err),
			 0);
	assert_true(tl < plain);
	size_t dl;
	assert_non_null(v2_dict_bytes(V2_DICT_GO, &dl));
	assert_true(dl > 100000);
	assert_null(v2_dict_bytes(7, &dl));
	pd_buf_fini(&z);
	pd_buf_fini(&with);
	pd_buf_fini(&without);
	free(s);
	free_items(it, NIDLE);
}

/* ---- chunks of byte 5: holes ----------------------------------------------------- */

/* Scrape k of a program with two contended locks, as Go writes its mutex profile:
 * lock 0 more contended at every scrape, lock 1 every seventh; scrape 20 also
 * has a third stack. */
static struct item mutex_profile(size_t k, int64_t time_nanos)
{
	static const char *strs[] = {"", "contentions", "count", "delay", "nanoseconds", "main",
				     "main.go"};
	uint64_t seed = 7 + k;
	int64_t v[3][2] = {{0, 0}, {25, 25339231}, {4, 1000}};
	for (size_t j = 0; j <= k; j++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		v[0][0] += 500 + (int64_t)((seed >> 40) % 100);
		v[0][1] += 600000000 + (int64_t)((seed >> 20) % 100000000);
		if (j % 7 == 6) {
			v[1][0] += 5;
			v[1][1] += 6573045;
		}
	}
	return three_stacks(strs, v, k == 20 ? 3 : 2, 0, 1, time_nanos, 0);
}

#define NMUTEX 70

/* Adds each merged profile's delay total to *ctx. */
static int on_summed(void *ctx, struct pd_pprof_profile *p, size_t first, size_t count,
		     size_t bytes)
{
	(void)first;
	(void)count;
	(void)bytes;
	*(int64_t *)ctx += pd_pprof_sum(p, 1);
	pd_pprof_destroy(p);
	return 0;
}

/* The series' value chunk sealed with holes (*s, *sl) and without (*s4, *s4l),
 * and its timestamp chunk with the totals section (*tc, *tcl). it: NMUTEX
 * items, among them a profile without samples (30) and bytes that are not a
 * profile (31). */
static void mutex_chunks(struct item *it, int64_t *ts, uint8_t **s, size_t *sl, uint8_t **s4,
			 size_t *s4l, uint8_t **tc, size_t *tcl)
{
	struct pd_err err = {0};
	struct pd_chunkenc_values *c = pd_chunkenc_values_create_enc(2, 32, 0);
	struct pd_chunkenc_totals *tot = pd_chunkenc_totals_create();
	struct pd_chunkenc_ts tsc;
	pd_chunkenc_ts_init(&tsc);
	int64_t t = 1795342071175836600;
	for (size_t i = 0; i < NMUTEX; i++) {
		t += 15000000000 + (int64_t)(i * 7919 % 5000) * 1000;
		ts[i] = t / 1000000 - 2;
		if (i == 30) {
			it[i] = idle_profile(t, 0);
		} else if (i == 31) {
			it[i].raw = (uint8_t *)strdup("not a profile");
			it[i].len = strlen("not a profile");
		} else {
			it[i] = mutex_profile(i, t);
		}
		struct pd_pprof_profile *p = NULL;
		if (pd_pprof_decode(&p, it[i].raw, it[i].len, NULL, &err))
			p = NULL;
		assert_int_equal(pd_chunkenc_totals_append_profile(tot, p, &err), 0);
		pd_pprof_destroy(p);
		assert_int_equal(pd_chunkenc_ts_append(&tsc, ts[i], &err), 0);
		if (pd_chunkenc_values_append_at(c, ts[i], it[i].raw, it[i].len, NULL, &err))
			fail_msg("append %zu: %s", i, err.msg);
	}
	size_t a, b;
	const uint8_t *x = pd_chunkenc_ts_bytes(&tsc, &a), *y = pd_chunkenc_totals_bytes(tot, &b);
	*tc = malloc(a + b);
	memcpy(*tc, x, a);
	memcpy(*tc + a, y, b);
	*tcl = a + b;
	assert_int_equal(pd_chunkenc_values_seal_totals(c, s, sl, &err), 0);
	assert_int_equal(pd_chunkenc_values_seal(c, s4, s4l, &err), 0);
	pd_chunkenc_values_destroy(c);
	pd_chunkenc_totals_destroy(tot);
	pd_chunkenc_ts_fini(&tsc);
}

static void test_holes(void **state)
{
	(void)state;
	struct item it[NMUTEX];
	int64_t ts[NMUTEX];
	uint8_t *s, *s4, *tc, *b;
	size_t sl, s4l, tcl, bl, k[4], k4[4], raw, raw4;
	struct pd_err err = {0};
	mutex_chunks(it, ts, &s, &sl, &s4, &s4l, &tc, &tcl);
	assert_int_equal(s[0], PD_CHUNKENC_VALUES_COLUMNAR_TOTALS);
	assert_int_equal(s4[0], PD_CHUNKENC_VALUES_COLUMNAR_DICT);
	/* every profile back, one by one and merged, beside the timestamp chunk */
	for (size_t i = 0; i < NMUTEX; i++) {
		if (pd_chunkenc_values_read_tc(s, sl, tc, tcl, i, 1 << 26, &b, &bl, &err))
			fail_msg("read %zu: %s", i, err.msg);
		assert_same_profile(&it[i], b, bl, "byte 5", i);
		free(b);
		/* a chunk of byte 4 reads beside it too */
		assert_int_equal(pd_chunkenc_values_read_tc(s4, s4l, tc, tcl, i, 1 << 26, &b, &bl, &err),
				 0);
		assert_same_profile(&it[i], b, bl, "byte 4", i);
		free(b);
	}
	/* (merges stop at bytes that are not a profile: 31) */
	struct merged m = {it, 0};
	if (pd_chunkenc_values_merge_tc(s, sl, tc, tcl, 0, 31, 1 << 26, on_merged, &m, &err))
		fail_msg("merge: %s", err.msg);
	assert_int_equal(m.next, 31);
	m.next = 32;
	assert_int_equal(
	    pd_chunkenc_values_merge_tc(s, sl, tc, tcl, 32, NMUTEX, 1 << 26, on_merged, &m, &err), 0);
	assert_int_equal(m.next, NMUTEX);
	m.next = 40;
	assert_int_equal(
	    pd_chunkenc_values_merge_tc(s, sl, tc, tcl, 40, 45, 1 << 26, on_merged, &m, &err), 0);
	assert_int_equal(m.next, 45);
	/* the merged values are the profiles' summed */
	int64_t want = 0, got = 0;
	for (size_t i = 32; i < 60; i++) {
		struct pd_pprof_profile *p;
		if (pd_pprof_decode(&p, it[i].raw, it[i].len, NULL, &err) == 0) {
			want += pd_pprof_sum(p, 1);
			pd_pprof_destroy(p);
		}
	}
	assert_int_equal(
	    pd_chunkenc_values_merge_tc(s, sl, tc, tcl, 32, 60, 1 << 26, on_summed, &got, &err), 0);
	assert_int_equal(got, want);
	/* lock 0's growth left to the totals, the records of the scrapes between
	 * lock 1's are the same but for the time: repeats (38 of 70: each change of
	 * lock 1 costs two records, the group starts one each), made runs; without
	 * holes every record differs */
	count_kinds(s, sl, k, &raw);
	count_kinds(s4, s4l, k4, &raw4);
	assert_int_equal(k4[KIND_REPEAT], 0);
	assert_true(k[KIND_REPEAT] >= 35);
	assert_true(k[KIND_RUN] >= 1);
	assert_true(raw < raw4 / 2);
	assert_true(sl < s4l);

	/* without the totals it does not read */
	assert_int_equal(pd_chunkenc_values_read_at(s, sl, 0, ts[0], 1 << 26, &b, &bl, &err),
			 PD_EINVAL);
	assert_non_null(strstr(err.msg, "totals of its timestamp chunk"));
	assert_int_equal(pd_chunkenc_values_merge_at(s, sl, 0, 2, ts, 1 << 26, on_merged, &m, &err),
			 PD_EINVAL);
	size_t tl = 0;
	struct pd_chunkenc_ts_iter ti;
	pd_chunkenc_ts_iter_init(&ti, tc, tcl);
	while (pd_chunkenc_ts_iter_next(&ti))
		;
	tl = pd_chunkenc_ts_iter_end(&ti);
	assert_int_equal(pd_chunkenc_values_read_tc(s, sl, tc, tl, 3, 1 << 26, &b, &bl, &err),
			 PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "no totals section"));
	/* beside totals that say no sample is a profile */
	struct pd_chunkenc_totals *none = pd_chunkenc_totals_create();
	for (size_t i = 0; i < NMUTEX; i++)
		assert_int_equal(pd_chunkenc_totals_append_opaque(none, &err), 0);
	size_t nl;
	const uint8_t *nb = pd_chunkenc_totals_bytes(none, &nl);
	uint8_t *tc2 = malloc(tl + nl);
	memcpy(tc2, tc, tl);
	memcpy(tc2 + tl, nb, nl);
	assert_int_equal(pd_chunkenc_values_read_tc(s, sl, tc2, tl + nl, 3, 1 << 26, &b, &bl, &err),
			 PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "takes a value from totals"));
	/* or fewer timestamps than profiles */
	assert_int_equal(pd_chunkenc_values_read_tc(s, sl, tc, 3, 0, 1 << 26, &b, &bl, &err),
			 PD_ECORRUPT);
	pd_chunkenc_totals_destroy(none);
	free(tc2);

	/* a hole that is not one of the column's samples */
	struct parsed p;
	parse_chunk(s, sl, &p);
	/* 70 small records, appended in groups of 32, sealed as one group */
	assert_int_equal(p.ngroups, 1);
	assert_int_equal(p.group, NMUTEX);
	struct v2_tables t;
	v2_tables_init(&t);
	assert_int_equal(v2_tables_read(&t, p.tables, p.tlen, &err), 0);
	struct v2_prev prev = {0};
	struct v2_rd r = {p.groups[0], p.glen[0], 0, 0};
	struct v2_decoded d;
	prev.holes_free = 1;
	prev.rel = 1;
	/* record 1 has a hole in both columns (lock 0's value) */
	for (int j = 0; j < 2; j++) {
		assert_int_equal(v2_record_decode(&t, &prev, &r, V2_WANT_STATE, &d, &err), 0);
		v2_decoded_fini(&d);
	}
	size_t at = prev.col_at;
	assert_true(p.groups[0][at] == COL_DELTA_HOLE || p.groups[0][at] == COL_RAW_HOLE);
	assert_int_equal(p.groups[0][at + 1], 0); /* lock 0 */
	p.groups[0][at + 1] = 2;
	uint8_t *c2 = build_chunk(&p, &bl);
	assert_int_equal(pd_chunkenc_values_read_tc(c2, bl, tc, tcl, 1, 1 << 26, &b, &sl, &err),
			 PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "hole is not one of its samples"));
	free(c2);
	v2_prev_fini(&prev);
	v2_tables_fini(&t);
	parsed_fini(&p);
	free(s);
	free(s4);
	free(tc);
	free_items(it, NMUTEX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_repeats),
	    cmocka_unit_test(test_relative_times),
	    cmocka_unit_test(test_no_repeat_of_long_records),
	    cmocka_unit_test(test_period_column),
	    cmocka_unit_test(test_damaged_records),
	    cmocka_unit_test(test_runs),
	    cmocka_unit_test(test_damaged_runs),
	    cmocka_unit_test(test_hex_strings),
	    cmocka_unit_test(test_dictionary),
	    cmocka_unit_test(test_holes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
