/* test_chunkenc_v2.c: unit tests of the columnar value chunk (encoding 2): every
 * test profile survives the appender and the sealed bytes with every field and id
 * intact, series whose symbols
 * change mid-chunk, sample labels, no mappings, many sample types, empty
 * profiles, duplicate locations, a profile with a million locations, bytes that
 * are not a profile, group boundaries, v1 beside v2, damaged chunks, and reads
 * that step over the records before the profile. Profiles
 * are compared with pd_pprof_compare (every field and id, strings by content). */
#include <dirent.h>
#include <pthread.h>
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

/* ---- helpers ------------------------------------------------------------------ */

/* Reads a test profile and returns it as raw (gunzipped) protobuf. */
static uint8_t *load(const char *rel, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", PD_TESTDATA, rel);
	uint8_t *buf, *raw;
	size_t n;
	struct pd_err err = {0};
	if (pd_file_read(path, (size_t)256 << 20, &buf, &n, &err))
		fail_msg("%s: %s", path, err.msg);
	if (!pd_gzip_is(buf, n)) {
		*len = n;
		return buf;
	}
	if (pd_gunzip(buf, n, (size_t)256 << 20, &raw, len, &err))
		fail_msg("%s: %s", path, err.msg);
	free(buf);
	return raw;
}

/* Fails unless the two byte strings decode to the same profile. */
static void assert_same_profile(const uint8_t *want, size_t wl, const uint8_t *got, size_t gl,
                                const char *what, size_t i)
{
	struct pd_pprof_profile *a, *b;
	struct pd_err err = {0};
	char why[512];
	if (pd_pprof_decode(&a, want, wl, NULL, &err))
		fail_msg("decode: %s", err.msg);
	if (pd_pprof_decode(&b, got, gl, NULL, &err))
		fail_msg("%s profile %zu does not decode: %s", what, i, err.msg);
	if (pd_pprof_compare(a, b, why, sizeof(why)))
		fail_msg("%s profile %zu differs after the round trip: %s", what, i, why);
	pd_pprof_destroy(a);
	pd_pprof_destroy(b);
}

struct item {
	uint8_t *raw;
	size_t len;
};

/* Fails unless got is item w: the same profile, or the same bytes when w is not
 * a profile. */
static void assert_same_item(const struct item *w, const uint8_t *got, size_t gl, const char *what,
                             size_t i)
{
	struct pd_pprof_profile *probe;
	struct pd_err derr = {0};
	int is_profile = pd_pprof_decode(&probe, w->raw, w->len, NULL, &derr) == 0;
	pd_pprof_destroy(probe);
	if (is_profile) {
		assert_same_profile(w->raw, w->len, got, gl, what, i);
	} else {
		assert_int_equal(gl, w->len);
		assert_memory_equal(got, w->raw, gl ? gl : 0);
	}
}

/* The items appended to an appender on shared symbols, which a second appender
 * fills too, always one append ahead: first with a profile of another program,
 * then with the items in another order. The shared tables then hold entries this
 * chunk does not use, in another order than its own first use. Sealing writes tables of the chunk's
 * own and moves its records onto them; every item read back from the sealed bytes (and from the
 * appender) is what was appended. Returns the sealed size. */
static size_t check_shared(unsigned group, const struct item *it, size_t n)
{
	struct pd_err err = {0};
	struct pd_chunkenc_symbols *sym = pd_chunkenc_symbols_create();
	assert_non_null(sym);
	struct pd_chunkenc_values *c = pd_chunkenc_values_create_shared(sym, group, 0);
	struct pd_chunkenc_values *other = pd_chunkenc_values_create_shared(sym, group, 0);
	assert_non_null(c);
	assert_non_null(other);
	struct item foreign;
	foreign.raw = load("profiles/prometheus/goroutine.pb.gz", &foreign.len);
	if (pd_chunkenc_values_append(other, foreign.raw, foreign.len, &err))
		fail_msg("append to the other series: %s", err.msg);
	free(foreign.raw);
	for (size_t i = 0; i < n; i++) {
		const struct item *o = &it[(i * 7 + n / 2 + 1) % n];
		if (pd_chunkenc_values_append(other, o->raw, o->len, &err))
			fail_msg("append to the other series %zu: %s", i, err.msg);
		if (pd_chunkenc_values_append(c, it[i].raw, it[i].len, &err))
			fail_msg("append on shared symbols %zu: %s", i, err.msg);
	}
	uint8_t *sealed;
	size_t slen;
	if (pd_chunkenc_values_seal(c, &sealed, &slen, &err))
		fail_msg("seal on shared symbols: %s", err.msg);
	assert_int_equal(pd_chunkenc_values_read_count(sealed, slen, &err), (int64_t)n);
	for (size_t i = 0; i < n; i++) {
		uint8_t *a, *b;
		size_t al, bl;
		if (pd_chunkenc_values_get(c, i, &a, &al, &err))
			fail_msg("get %zu on shared symbols: %s", i, err.msg);
		if (pd_chunkenc_values_read(sealed, slen, i, (size_t)256 << 20, &b, &bl, &err))
			fail_msg("read %zu sealed from shared symbols: %s", i, err.msg);
		assert_same_item(&it[i], a, al, "shared appender", i);
		assert_same_item(&it[i], b, bl, "sealed from shared symbols", i);
		free(a);
		free(b);
	}
	free(sealed);
	pd_chunkenc_values_destroy(c);
	pd_chunkenc_values_destroy(other);
	pd_chunkenc_symbols_unref(sym);
	return slen;
}

/* Appends items to a new chunk of the encoding, then checks every item read back
 * from the appender and from the sealed bytes; for encoding 2, the same on shared
 * symbols (check_shared), whose sealed chunk is about as small. Returns the
 * sealed size. */
static size_t check_chunk(int enc, unsigned group, const struct item *it, size_t n)
{
	struct pd_err err = {0};
	struct pd_chunkenc_values *c = pd_chunkenc_values_create_enc(enc, group, 0);
	assert_non_null(c);
	for (size_t i = 0; i < n; i++)
		if (pd_chunkenc_values_append(c, it[i].raw, it[i].len, &err))
			fail_msg("append %zu: %s", i, err.msg);
	assert_int_equal(pd_chunkenc_values_count(c), n);
	uint8_t *sealed;
	size_t slen;
	assert_int_equal(pd_chunkenc_values_seal(c, &sealed, &slen, &err), 0);
	assert_int_equal(pd_chunkenc_values_encoding(sealed, slen), enc ? enc : 2);
	assert_int_equal(pd_chunkenc_values_read_count(sealed, slen, &err), (int64_t)n);
	for (size_t i = 0; i < n; i++) {
		uint8_t *a, *b;
		size_t al, bl;
		if (pd_chunkenc_values_get(c, i, &a, &al, &err))
			fail_msg("get %zu: %s", i, err.msg);
		if (pd_chunkenc_values_read(sealed, slen, i, (size_t)256 << 20, &b, &bl, &err))
			fail_msg("read %zu: %s", i, err.msg);
		struct pd_pprof_profile *probe;
		struct pd_err derr = {0};
		int is_profile = pd_pprof_decode(&probe, it[i].raw, it[i].len, NULL, &derr) == 0;
		pd_pprof_destroy(probe);
		if (is_profile) {
			assert_same_profile(it[i].raw, it[i].len, a, al, "appender", i);
			assert_same_profile(it[i].raw, it[i].len, b, bl, "sealed", i);
		} else {
			assert_int_equal(al, it[i].len);
			assert_int_equal(bl, it[i].len);
			assert_memory_equal(a, it[i].raw, al ? al : 0);
			assert_memory_equal(b, it[i].raw, bl ? bl : 0);
		}
		free(a);
		free(b);
	}
	free(sealed);
	pd_chunkenc_values_destroy(c);
	if (enc != PD_CHUNKENC_VALUES_ZSTD_GROUPS) {
		size_t shared = check_shared(group, it, n);
		print_message("%zu items, group %u: sealed %zu bytes, %zu from shared symbols\n", n,
		              group, slen, shared);
		assert_true(shared <= slen + slen / 20 + 16);
	}
	return slen;
}

static const char *const all_files[] = {
    "profiles/goapp/allocs.pb.gz",
    "profiles/goapp/block.pb.gz",
    "profiles/goapp/cpu-2.pb.gz",
    "profiles/goapp/cpu-3.pb.gz",
    "profiles/goapp/cpu.pb.gz",
    "profiles/goapp/delta-allocs.pb.gz",
    "profiles/goapp/goroutine.pb.gz",
    "profiles/goapp/heap-2.pb.gz",
    "profiles/goapp/heap-3.pb.gz",
    "profiles/goapp/heap.pb.gz",
    "profiles/goapp/mutex.pb.gz",
    "profiles/goapp/threadcreate.pb.gz",
    "profiles/prometheus/allocs.pb.gz",
    "profiles/prometheus/block.pb.gz",
    "profiles/prometheus/cpu.pb.gz",
    "profiles/prometheus/goroutine.pb.gz",
    "profiles/prometheus/heap.pb.gz",
    "profiles/prometheus/mutex.pb.gz",
    "profiles/prometheus/threadcreate.pb.gz",
    "profiles/edge/empty-samples.pb",
    "profiles/edge/no-mappings.pb",
    "profiles/edge/sparse-ids.pb",
    "profiles/edge/unpacked.pb",
    "profiles/edge/multi-types.pb",
    "profiles/edge/default-type.pb",
    "profiles/edge/no-functions.pb",
    "profiles/edge/zero-and-negative.pb",
    "profiles/edge/bad-mapping-ref.pb",
    "profiles/edge/cpu-extra-type.pb",
    "profiles/edge/cpu-millis.pb",
    "profiles/edge/nul-bytes.pb",
};
#define NFILES (sizeof(all_files) / sizeof(all_files[0]))

static void free_items(struct item *it, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(it[i].raw);
}

/* ---- tests ------------------------------------------------------------------------ */

/* Each test profile alone in a chunk. */
static void test_each_profile(void **state)
{
	(void)state;
	for (size_t i = 0; i < NFILES; i++) {
		struct item it;
		it.raw = load(all_files[i], &it.len);
		check_chunk(PD_CHUNKENC_VALUES_COLUMNAR, 0, &it, 1);
		free(it.raw);
	}
}

/* All test profiles in one chunk, in several group sizes: symbols change from
 * one profile to the next (as when a target restarts mid-chunk), groups split
 * anywhere, and each profile still comes back whole. */
static void test_mixed_chunk(void **state)
{
	(void)state;
	struct item it[NFILES * 2];
	for (size_t i = 0; i < NFILES; i++) {
		it[i].raw = load(all_files[i], &it[i].len);
		it[NFILES + i].raw = load(all_files[NFILES - 1 - i], &it[NFILES + i].len);
	}
	static const unsigned groups[] = {1, 2, 3, 7, 16, 64};
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		check_chunk(PD_CHUNKENC_VALUES_COLUMNAR, groups[g], it, NFILES * 2);
	free_items(it, NFILES * 2);
}

/* A series as a scraper sees it: heap, heap-2, heap-3 of one program again and
 * again (cumulative values, the same symbols), then a restart: new program. v2 is
 * smaller than v1 on it. */
static void test_series_and_restart(void **state)
{
	(void)state;
	struct item it[40];
	static const char *const seq[] = {"profiles/goapp/heap.pb.gz",
	                                  "profiles/goapp/heap-2.pb.gz",
	                                  "profiles/goapp/heap-3.pb.gz"};
	for (size_t i = 0; i < 40; i++)
		it[i].raw =
		    load(i < 30 ? seq[i % 3] : "profiles/prometheus/heap.pb.gz", &it[i].len);
	size_t v2 = check_chunk(PD_CHUNKENC_VALUES_COLUMNAR, 0, it, 40);
	size_t v1 = check_chunk(PD_CHUNKENC_VALUES_ZSTD_GROUPS, 0, it, 40);
	print_message("v1 %zu bytes, v2 %zu bytes\n", v1, v2);
	assert_true(v2 < v1);
	free_items(it, 40);
}

/* Bytes that are not a profile are kept as they are, beside profiles. */
static void test_opaque(void **state)
{
	(void)state;
	struct item it[4];
	it[0].raw = (uint8_t *)strdup("not a profile");
	it[0].len = 13;
	it[1].raw = load("profiles/goapp/cpu.pb.gz", &it[1].len);
	it[2].raw = malloc(1);
	it[2].len = 0;
	it[3].raw = load("profiles/edge/truncated.pb", &it[3].len);
	check_chunk(PD_CHUNKENC_VALUES_COLUMNAR, 2, it, 4);
	free_items(it, 4);
}

/* Encodes parts as raw protobuf (owned by the caller). */
static struct item encode_parts(const struct pd_pprof_parts *p)
{
	struct item it;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_encode(p, &it.raw, &it.len, &err), 0);
	return it;
}

/* Two locations with the same content under different ids, two equal functions
 * and two equal mappings: each keeps its id. */
static void test_duplicate_entries(void **state)
{
	(void)state;
	static const char *strs[] = {"", "samples", "count", "main", "main.go", "/bin/x"};
	size_t lens[6];
	for (int i = 0; i < 6; i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_pmapping maps[2] = {{1, 0x1000, 0x2000, 0, 5, 0, 1, 1, 1, 0},
	                                    {2, 0x1000, 0x2000, 0, 5, 0, 1, 1, 1, 0}};
	struct pd_pprof_pfunction fns[2] = {{10, 3, 3, 4, 1}, {11, 3, 3, 4, 1}};
	struct pd_pprof_pline l1 = {10, 5, 0}, l2 = {11, 5, 0};
	struct pd_pprof_plocation locs[3] = {
	    {7, 1, 0x1100, &l1, 1, 0}, {8, 1, 0x1100, &l1, 1, 0}, {9, 2, 0x1100, &l2, 1, 0}};
	uint64_t s1[] = {7, 9}, s2[] = {8};
	int64_t v1 = 3, v2 = 4;
	struct pd_pprof_psample samples[2] = {{s1, 2, &v1, 1, NULL, 0}, {s2, 1, &v2, 1, NULL, 0}};
	struct pd_pprof_parts p = {0};
	p.strings = strs;
	p.string_len = lens;
	p.nstrings = 6;
	p.sample_type = &st;
	p.nsample_type = 1;
	p.sample = samples;
	p.nsample = 2;
	p.mapping = maps;
	p.nmapping = 2;
	p.location = locs;
	p.nlocation = 3;
	p.function = fns;
	p.nfunction = 2;
	struct item it[3];
	for (int i = 0; i < 3; i++)
		it[i] = encode_parts(&p);
	check_chunk(PD_CHUNKENC_VALUES_COLUMNAR, 0, it, 3);
	free_items(it, 3);
}

/* The first byte of the decompressed tables of sealed chunk s: 0 when its
 * strings are in the NUL-terminated form, otherwise the low byte of the string
 * count (docs/format/chunks.md). */
static int tables_first_byte(const uint8_t *s, size_t sl)
{
	struct v2_rd r = {s, sl, 1, 0};
	uint64_t count = v2_uv(&r), group = v2_uv(&r), tlen = v2_uv(&r);
	for (uint64_t g = 0; g < (count + group - 1) / group; g++)
		v2_uv(&r);
	assert_false(r.bad);
	assert_true(tlen <= sl - r.pos);
	uint8_t *raw;
	size_t rl;
	struct pd_err err = {0};
	if (v2_decompress(s + r.pos, tlen, (size_t)1 << 26, &raw, &rl, "tables", &err))
		fail_msg("tables: %s", err.msg);
	assert_true(rl > 0);
	int b = raw[0];
	free(raw);
	return b;
}

/* Both forms of the string table: a chunk whose strings hold no NUL byte writes
 * them NUL-terminated; tables with a NUL inside a string fall back to lengths
 * (profd's pprof decoder ends strings at a NUL, so only the tables coder itself
 * can be handed one); each reads back exactly. And a chunk written before the
 * NUL-terminated form existed (testdata/chunks: goapp's cpu, cpu-2 and heap
 * profiles in groups of 2) still reads back as those profiles. */
static void test_string_forms(void **state)
{
	(void)state;
	size_t rl;
	uint8_t *raw = load("profiles/goapp/cpu.pb.gz", &rl);
	struct pd_err err = {0};
	struct pd_chunkenc_values *c =
	    pd_chunkenc_values_create_enc(PD_CHUNKENC_VALUES_COLUMNAR, 0, 0);
	assert_non_null(c);
	assert_int_equal(pd_chunkenc_values_append(c, raw, rl, &err), 0);
	uint8_t *sealed, *back;
	size_t slen, bl;
	assert_int_equal(pd_chunkenc_values_seal(c, &sealed, &slen, &err), 0);
	assert_int_equal(tables_first_byte(sealed, slen), 0);
	if (pd_chunkenc_values_read(sealed, slen, 0, (size_t)256 << 20, &back, &bl, &err))
		fail_msg("read: %s", err.msg);
	assert_same_profile(raw, rl, back, bl, "NUL-terminated strings", 0);
	free(back);
	free(sealed);
	free(raw);
	pd_chunkenc_values_destroy(c);

	static const char *const strs[] = {"", "samples", "ma\0in", "main.go", "main.go2"};
	static const size_t lens[] = {0, 7, 5, 7, 8};
	for (int with_nul = 0; with_nul < 2; with_nul++) {
		struct v2_tables t, u;
		v2_tables_init(&t);
		v2_tables_init(&u);
		for (int i = 0; i < 5; i++)
			if (i != 2 || with_nul)
				assert_int_equal(v2_intern_str(&t, strs[i], lens[i]),
				                 i - (i > 2 && !with_nul));
		struct pd_buf b;
		pd_buf_init(&b, 0);
		assert_int_equal(v2_tables_write(&t, &b, NULL, 0), 0);
		assert_true(b.len > 0);
		assert_int_equal(b.data[0], with_nul ? 5 : 0);
		if (v2_tables_read(&u, b.data, b.len, &err))
			fail_msg("tables read: %s", err.msg);
		assert_int_equal(u.nstr, t.nstr);
		for (uint32_t i = 0; i < t.nstr; i++) {
			assert_int_equal(v2_str_len(&u, i), v2_str_len(&t, i));
			assert_memory_equal(v2_str(&u, i), v2_str(&t, i), v2_str_len(&t, i) + 1);
		}
		/* a string cut short: no terminating NUL before the end */
		if (!with_nul) {
			struct v2_tables w;
			v2_tables_init(&w);
			size_t cut = 2 + 1 + 8 + 4; /* marker, count, "", "samples", "mai" */
			assert_int_not_equal(v2_tables_read(&w, b.data, cut, &err), 0);
			assert_non_null(strstr(err.msg, "truncated"));
			v2_tables_fini(&w);
		}
		pd_buf_fini(&b);
		v2_tables_fini(&t);
		v2_tables_fini(&u);
	}

	size_t clen;
	uint8_t *old = load("chunks/v2-prefix-strings.chunk", &clen);
	assert_int_not_equal(tables_first_byte(old, clen), 0);
	static const char *const src[] = {"profiles/goapp/cpu.pb.gz", "profiles/goapp/cpu-2.pb.gz",
	                                  "profiles/goapp/heap.pb.gz"};
	assert_int_equal(pd_chunkenc_values_read_count(old, clen, &err), 3);
	for (size_t i = 0; i < 3; i++) {
		size_t wl;
		uint8_t *want = load(src[i], &wl);
		if (pd_chunkenc_values_read(old, clen, i, (size_t)256 << 20, &back, &bl, &err))
			fail_msg("old chunk, profile %zu: %s", i, err.msg);
		assert_same_profile(want, wl, back, bl, "old chunk", i);
		free(want);
		free(back);
	}
	free(old);
}

/* A profile with a million locations (each its own function) in one stack each
 * of a thousand samples. */
static void test_million_locations(void **state)
{
	(void)state;
	enum { NLOC = 1000000, NS = 1000 };
	static const char *strs[] = {"", "cpu", "nanoseconds", "f", "file.go"};
	size_t lens[5];
	for (int i = 0; i < 5; i++)
		lens[i] = strlen(strs[i]);
	struct pd_pprof_plocation *locs = calloc(NLOC, sizeof(*locs));
	struct pd_pprof_pline *lines = calloc(NLOC, sizeof(*lines));
	uint64_t *ids = calloc(NLOC, sizeof(*ids));
	struct pd_pprof_psample *samples = calloc(NS, sizeof(*samples));
	int64_t *vals = calloc(NS, sizeof(*vals));
	struct pd_pprof_pfunction fn = {1, 3, 3, 4, 0};
	assert_true(locs && lines && ids && samples && vals);
	for (size_t i = 0; i < NLOC; i++) {
		lines[i] = (struct pd_pprof_pline){1, (int64_t)i + 1, 0};
		locs[i] = (struct pd_pprof_plocation){i + 1, 0, 0x400000 + i * 4, &lines[i], 1, 0};
		ids[i] = i + 1;
	}
	for (size_t i = 0; i < NS; i++) {
		samples[i] = (struct pd_pprof_psample){
		    ids + i * (NLOC / NS), NLOC / NS, &vals[i], 1, NULL, 0};
		vals[i] = (int64_t)i * 10;
	}
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_parts p = {0};
	p.strings = strs;
	p.string_len = lens;
	p.nstrings = 5;
	p.sample_type = &st;
	p.nsample_type = 1;
	p.sample = samples;
	p.nsample = NS;
	p.location = locs;
	p.nlocation = NLOC;
	p.function = &fn;
	p.nfunction = 1;
	struct item it = encode_parts(&p);
	check_chunk(PD_CHUNKENC_VALUES_COLUMNAR, 0, &it, 1);
	free(it.raw);
	free(locs);
	free(lines);
	free(ids);
	free(samples);
	free(vals);
}

/* profile with every mapping id moved by shift (and the locations' references
 * to them), as raw protobuf. */
static struct item shift_mapping_ids(const struct item *in, uint64_t shift)
{
	struct pd_pprof_profile *p;
	struct pd_pprof_parts pp;
	struct pd_err err = {0};
	if (pd_pprof_decode(&p, in->raw, in->len, NULL, &err) || pd_pprof_parts_get(p, &pp, &err))
		fail_msg("decode: %s", err.msg);
	for (size_t i = 0; i < pp.nmapping; i++)
		pp.mapping[i].id += shift;
	for (size_t i = 0; i < pp.nlocation; i++)
		if (pp.location[i].mapping_id)
			pp.location[i].mapping_id += shift;
	struct item out = encode_parts(&pp);
	pd_pprof_parts_fini(&pp);
	pd_pprof_destroy(p);
	return out;
}

/* Reading one profile steps over the records before it in its group, reading
 * only what the next record's differences need: a series whose mapping list
 * changes from one scrape to the next (new ids, so the record lists it) while
 * its values stay close (so the value columns are differences), with sample
 * labels, comes back whole at every position of every group size, from the
 * sealed chunk and from the open one. */
static void test_step_over_records(void **state)
{
	(void)state;
	enum { N = 45 };
	static const char *const seq[] = {
	    "profiles/goapp/heap.pb.gz", "profiles/goapp/heap-2.pb.gz",
	    "profiles/goapp/heap-3.pb.gz", "profiles/goapp/delta-allocs.pb.gz"};
	struct item base[4], it[N];
	for (size_t i = 0; i < 4; i++)
		base[i].raw = load(seq[i], &base[i].len);
	for (size_t i = 0; i < N; i++)
		/* runs of two with the same mapping list, then a new one */
		it[i] = shift_mapping_ids(&base[i % 3 + (i % 11 == 10)], (i / 2) % 3 * 100);
	static const unsigned groups[] = {1, 2, 5, 32, 64};
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		check_chunk(PD_CHUNKENC_VALUES_COLUMNAR, groups[g], it, N);
	free_items(it, N);
	free_items(base, 4);
}

/* Damaged sealed chunks give errors, never crashes or wrong profiles that do not
 * decode. */
static void test_damaged(void **state)
{
	(void)state;
	struct item it[5];
	for (size_t i = 0; i < 5; i++)
		it[i].raw =
		    load(i % 2 ? "profiles/goapp/heap.pb.gz" : "profiles/goapp/heap-2.pb.gz",
		         &it[i].len);
	struct pd_err err = {0};
	struct pd_chunkenc_values *c = pd_chunkenc_values_create_enc(0, 2, 0);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(pd_chunkenc_values_append(c, it[i].raw, it[i].len, &err), 0);
	uint8_t *s;
	size_t sl;
	assert_int_equal(pd_chunkenc_values_seal(c, &s, &sl, &err), 0);
	/* every truncation is refused */
	for (size_t cut = 0; cut < sl; cut += 1 + sl / 200) {
		uint8_t *o;
		size_t ol;
		assert_int_not_equal(pd_chunkenc_values_read(s, cut, 4, 1 << 20, &o, &ol, &err), 0);
	}
	/* flipped bytes: an error, or bytes that are still a valid profile */
	uint64_t seed = 12345;
	for (int round = 0; round < 300; round++) {
		uint8_t *d = malloc(sl);
		memcpy(d, s, sl);
		for (int k = 0; k < 3; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			d[(seed >> 33) % sl] ^= (uint8_t)(1 + (seed >> 20) % 255);
		}
		for (size_t i = 0; i < 5; i++) {
			uint8_t *o;
			size_t ol;
			if (pd_chunkenc_values_read(d, sl, i, 1 << 20, &o, &ol, &err) == 0) {
				struct pd_pprof_profile *p;
				if (pd_pprof_decode(&p, o, ol, NULL, &err) == 0)
					pd_pprof_destroy(p);
				free(o);
			}
		}
		free(d);
	}
	/* the size limit holds */
	uint8_t *o;
	size_t ol;
	assert_int_equal(pd_chunkenc_values_read(s, sl, 0, 100, &o, &ol, &err), PD_ETOOBIG);
	free(s);
	pd_chunkenc_values_destroy(c);
	free_items(it, 5);
}

/* The open chunk holds its tables and compressed groups, not raw profiles: once
 * the tables hold a program's symbols, each further scrape of it costs the open
 * chunk a small part of the raw profile. */
static void test_lean_appender(void **state)
{
	(void)state;
	struct item it[3];
	it[0].raw = load("profiles/goapp/heap.pb.gz", &it[0].len);
	it[1].raw = load("profiles/goapp/heap-2.pb.gz", &it[1].len);
	it[2].raw = load("profiles/goapp/heap-3.pb.gz", &it[2].len);
	struct pd_err err = {0};
	struct pd_chunkenc_values *c2 =
	    pd_chunkenc_values_create_enc(PD_CHUNKENC_VALUES_COLUMNAR, 0, 0);
	struct pd_chunkenc_values *c1 =
	    pd_chunkenc_values_create_enc(PD_CHUNKENC_VALUES_ZSTD_GROUPS, 0, 0);
	size_t raw = 0, m16 = 0;
	for (size_t i = 0; i < 64; i++) {
		assert_int_equal(pd_chunkenc_values_append(c2, it[i % 3].raw, it[i % 3].len, &err),
		                 0);
		assert_int_equal(pd_chunkenc_values_append(c1, it[i % 3].raw, it[i % 3].len, &err),
		                 0);
		raw += it[i % 3].len;
		if (i == 15)
			m16 = pd_chunkenc_values_memory(c2);
	}
	size_t m2 = pd_chunkenc_values_memory(c2), m1 = pd_chunkenc_values_memory(c1);
	print_message(
	    "64 profiles, %zu raw bytes: v1 appender %zu bytes, v2 %zu bytes (%zu after 16)\n", raw,
	    m1, m2, m16);
	/* past the first profiles, a scrape costs the open chunk an eighth of its
	 * raw size or less */
	assert_true((m2 - m16) / 48 < it[0].len / 8);
	pd_chunkenc_values_destroy(c1);
	pd_chunkenc_values_destroy(c2);
	free_items(it, 3);
}

/* A record waiting for the second record of its frame is held compressed: the
 * open chunk grows by about a compressed record at every append, and does not
 * jump by a raw record at every other one (prometheus's heap profiles, in turn). */
static void test_parked_record(void **state)
{
	(void)state;
	enum { NP = 6, N = 40 };
	struct item it[NP];
	char path[64];
	for (size_t i = 0; i < NP; i++) {
		snprintf(path, sizeof(path), "profiles/prometheus-series/heap/%zu.pb.gz", i + 1);
		it[i].raw = load(path, &it[i].len);
	}
	struct pd_err err = {0};
	struct pd_chunkenc_symbols *sym = pd_chunkenc_symbols_create();
	struct pd_chunkenc_values *c = pd_chunkenc_values_create_shared(sym, 0, 0);
	size_t m[N];
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(pd_chunkenc_values_append_at(c, 1000 * (int64_t)i, it[i % NP].raw,
		                                              it[i % NP].len, NULL, &err),
		                 0);
		m[i] = pd_chunkenc_values_memory(c);
	}
	/* once the symbols are in the shared tables: an append that leaves a record
	 * waiting costs less than completing the frame (about one compressed record
	 * each), and completing it never gives memory back */
	size_t odd = 0, even = 0;
	for (size_t i = 8; i + 1 < N; i += 2) {
		assert_true(m[i + 1] >= m[i]);
		odd += m[i] - m[i - 1];
		even += m[i + 1] - m[i];
	}
	print_message("appends leaving a record waiting: %zu bytes, completing its frame: %zu\n",
	              odd, even);
	assert_true(odd < 2 * even);
	/* the last records (the waiting one too) read back from the open chunk as
	 * from the sealed one */
	uint8_t *sealed = NULL;
	size_t slen = 0;
	assert_int_equal(pd_chunkenc_values_seal(c, &sealed, &slen, &err), 0);
	for (size_t i = N - 3; i < N; i++) {
		uint8_t *out = NULL, *want = NULL;
		size_t olen = 0, wlen = 0;
		assert_int_equal(
		    pd_chunkenc_values_get_at(c, i, 1000 * (int64_t)i, &out, &olen, &err), 0);
		assert_int_equal(pd_chunkenc_values_read_at(sealed, slen, i, 1000 * (int64_t)i,
		                                            1 << 26, &want, &wlen, &err),
		                 0);
		assert_true(olen > 0);
		assert_int_equal(olen, wlen);
		assert_memory_equal(out, want, olen);
		free(out);
		free(want);
	}
	free(sealed);
	pd_chunkenc_values_destroy(c);
	pd_chunkenc_symbols_unref(sym);
	free_items(it, NP);
}

/* ---- merging by stack id ---------------------------------------------------------- */

struct collected {
	struct pd_pprof_profile *p[256];
	size_t n, profiles, next;
};

static int collect(void *ctx, struct pd_pprof_profile *p, size_t first, size_t count, size_t bytes)
{
	struct collected *c = ctx;
	(void)bytes;
	assert_int_equal(first, c->next); /* in index order, nothing skipped */
	c->next = first + count;
	c->p[c->n++] = p;
	c->profiles += count;
	return 0;
}

/* Fails unless a and b give the same top table and flame graph for every sample type. */
static void assert_same_reports(const struct pd_pprof_profile *a, const struct pd_pprof_profile *b)
{
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_sample_type_count(a), pd_pprof_sample_type_count(b));
	assert_int_equal(pd_pprof_time_nanos(a), pd_pprof_time_nanos(b));
	assert_int_equal(pd_pprof_duration_nanos(a), pd_pprof_duration_nanos(b));
	assert_int_equal(pd_pprof_period(a), pd_pprof_period(b));
	for (size_t si = 0; si < pd_pprof_sample_type_count(a); si++) {
		struct pd_pprof_top *ta, *tb;
		assert_int_equal(pd_pprof_top(a, (int)si, &ta, &err), 0);
		assert_int_equal(pd_pprof_top(b, (int)si, &tb, &err), 0);
		assert_int_equal(ta->total, tb->total);
		assert_int_equal(ta->nrows, tb->nrows);
		for (size_t r = 0; r < ta->nrows; r++) {
			assert_string_equal(ta->rows[r].name, tb->rows[r].name);
			assert_int_equal(ta->rows[r].flat, tb->rows[r].flat);
			assert_int_equal(ta->rows[r].cum, tb->rows[r].cum);
		}
		pd_pprof_top_destroy(ta);
		pd_pprof_top_destroy(tb);
		struct pd_pprof_flame *fa, *fb;
		struct pd_buf ja, jb;
		pd_buf_init(&ja, 0);
		pd_buf_init(&jb, 0);
		assert_int_equal(pd_pprof_flame(a, (int)si, &fa, &err), 0);
		assert_int_equal(pd_pprof_flame(b, (int)si, &fb, &err), 0);
		assert_int_equal(pd_pprof_flame_json(fa, 0, &ja), 0);
		assert_int_equal(pd_pprof_flame_json(fb, 0, &jb), 0);
		assert_int_equal(ja.len, jb.len);
		assert_memory_equal(ja.data, jb.data, ja.len);
		pd_buf_fini(&ja);
		pd_buf_fini(&jb);
		pd_pprof_flame_destroy(fa);
		pd_pprof_flame_destroy(fb);
	}
}

/* A merge of a chunk's range by stack id reports what merging the profiles one by
 * one reports, for ranges that start and end anywhere, across groups and across a
 * change of program; with fewer profiles handed to pprof's merge. */
static void test_merge_by_stack(void **state)
{
	(void)state;
	static const char *const seq[] = {
	    "profiles/goapp/heap.pb.gz",      "profiles/goapp/heap-2.pb.gz",
	    "profiles/goapp/heap-3.pb.gz",    "profiles/goapp/allocs.pb.gz",
	    "profiles/prometheus/heap.pb.gz", "profiles/prometheus/allocs.pb.gz",
	    "profiles/edge/multi-types.pb"};
	enum { N = 20 };
	struct item it[N];
	for (size_t i = 0; i < N; i++)
		it[i].raw = load(seq[i < 12 ? i % 4 : 4 + i % 3], &it[i].len);
	struct pd_err err = {0};
	for (int enc = 1; enc <= 2; enc++) {
		struct pd_chunkenc_values *c = pd_chunkenc_values_create_enc(enc, 3, 0);
		for (size_t i = 0; i < N; i++)
			assert_int_equal(pd_chunkenc_values_append(c, it[i].raw, it[i].len, &err),
			                 0);
		uint8_t *sealed;
		size_t slen;
		assert_int_equal(pd_chunkenc_values_seal(c, &sealed, &slen, &err), 0);
		static const size_t ranges[][2] = {{0, N},  {0, 1},   {2, 11},
		                                   {4, 17}, {12, 20}, {19, 20}};
		for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
			size_t from = ranges[r][0], to = ranges[r][1];
			/* one by one */
			struct pd_pprof_profile *ps[N];
			for (size_t i = from; i < to; i++)
				assert_int_equal(pd_pprof_decode(&ps[i - from], it[i].raw,
				                                 it[i].len, NULL, &err),
				                 0);
			struct pd_pprof_profile *want;
			assert_int_equal(pd_pprof_merge((const struct pd_pprof_profile *const *)ps,
			                                to - from, &want, &err),
			                 0);
			for (int open = 0; open < 2; open++) {
				struct collected col = {.next = from};
				int rc =
				    open ? pd_chunkenc_values_merge_open(c, from, to, 1 << 26,
				                                         collect, &col, &err)
				         : pd_chunkenc_values_merge(sealed, slen, from, to, 1 << 26,
				                                    collect, &col, &err);
				if (rc)
					fail_msg("merge [%zu, %zu): %s", from, to, err.msg);
				assert_int_equal(col.profiles, to - from);
				assert_int_equal(col.next, to);
				if (enc == 2)
					assert_true(col.n < to - from || to - from == 1);
				struct pd_pprof_profile *got;
				assert_int_equal(
				    pd_pprof_merge((const struct pd_pprof_profile *const *)col.p,
				                   col.n, &got, &err),
				    0);
				assert_same_reports(want, got);
				pd_pprof_destroy(got);
				for (size_t k = 0; k < col.n; k++)
					pd_pprof_destroy(col.p[k]);
			}
			pd_pprof_destroy(want);
			for (size_t i = from; i < to; i++)
				pd_pprof_destroy(ps[i - from]);
		}
		free(sealed);
		pd_chunkenc_values_destroy(c);
	}
	free_items(it, N);
}

/* ---- shared symbols ------------------------------------------------------------------- */

struct shared_job {
	struct pd_chunkenc_symbols *sym;
	const struct item *it;
	size_t n;
	struct pd_chunkenc_values *c[4];
};

static void *shared_worker(void *arg)
{
	struct shared_job *j = arg;
	struct pd_err err = {0};
	for (size_t i = 0; i < j->n; i++)
		for (int k = 0; k < 4; k++)
			if (pd_chunkenc_values_append(j->c[k], j->it[(i + (size_t)k) % j->n].raw,
			                              j->it[(i + (size_t)k) % j->n].len, &err))
				return (void *)1;
	return NULL;
}

/* Appenders of many series on one set of shared symbols: the profiles come back
 * whole from the open appenders and from their sealed chunks, which are as small as
 * chunks with tables of their own (they carry only their own symbols); the series
 * hold the program's symbols once between them. Appends run from four threads. */
static void test_shared_symbols(void **state)
{
	(void)state;
	enum { N = 12, THREADS = 4 };
	struct item it[N];
	static const char *const seq[] = {"profiles/goapp/heap.pb.gz",
	                                  "profiles/goapp/heap-2.pb.gz",
	                                  "profiles/goapp/heap-3.pb.gz"};
	for (size_t i = 0; i < N; i++)
		it[i].raw =
		    load(i == 7 ? "profiles/prometheus/heap.pb.gz" : seq[i % 3], &it[i].len);
	struct pd_chunkenc_symbols *sym = pd_chunkenc_symbols_create();
	assert_non_null(sym);
	struct shared_job jobs[THREADS];
	pthread_t th[THREADS];
	for (int t = 0; t < THREADS; t++) {
		jobs[t].sym = sym;
		jobs[t].it = it;
		jobs[t].n = N;
		for (int k = 0; k < 4; k++)
			assert_non_null(jobs[t].c[k] = pd_chunkenc_values_create_shared(sym, 5, 0));
		assert_int_equal(pthread_create(&th[t], NULL, shared_worker, &jobs[t]), 0);
	}
	for (int t = 0; t < THREADS; t++) {
		void *r;
		pthread_join(th[t], &r);
		assert_null(r);
	}
	struct pd_err err = {0};
	size_t shared_mem = pd_chunkenc_symbols_memory(sym), series_mem = 0;
	for (int t = 0; t < THREADS; t++)
		for (int k = 0; k < 4; k++) {
			struct pd_chunkenc_values *c = jobs[t].c[k];
			series_mem += pd_chunkenc_values_memory(c);
			uint8_t *sealed;
			size_t slen;
			assert_int_equal(pd_chunkenc_values_seal(c, &sealed, &slen, &err), 0);
			for (size_t i = 0; i < N; i++) {
				const struct item *w = &it[(i + (size_t)k) % N];
				uint8_t *a, *b;
				size_t al, bl;
				assert_int_equal(pd_chunkenc_values_get(c, i, &a, &al, &err), 0);
				assert_int_equal(pd_chunkenc_values_read(sealed, slen, i, 1 << 26,
				                                         &b, &bl, &err),
				                 0);
				assert_same_profile(w->raw, w->len, a, al, "shared appender", i);
				assert_same_profile(w->raw, w->len, b, bl, "sealed from shared", i);
				free(a);
				free(b);
			}
			if (t == 0) {
				/* the same profiles through an appender of its own seal alike */
				struct item own[N];
				for (size_t i = 0; i < N; i++)
					own[i] = it[(i + (size_t)k) % N];
				size_t olen = check_chunk(PD_CHUNKENC_VALUES_COLUMNAR, 5, own, N);
				print_message("series %d: sealed %zu bytes from shared symbols, "
				              "%zu from its own\n",
				              k, slen, olen);
				assert_true(slen <= olen + olen / 20);
			}
			free(sealed);
		}
	/* a private appender's tables alone are larger than all 16 series' share */
	struct pd_chunkenc_values *p =
	    pd_chunkenc_values_create_enc(PD_CHUNKENC_VALUES_COLUMNAR, 5, 0);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(pd_chunkenc_values_append(p, it[i].raw, it[i].len, &err), 0);
	size_t private_mem = pd_chunkenc_values_memory(p);
	print_message("16 series on shared symbols: %zu bytes of symbols + %zu of series; "
	              "one series alone: %zu\n",
	              shared_mem, series_mem, private_mem);
	assert_true(shared_mem + series_mem < 16 * private_mem / 3);
	pd_chunkenc_values_destroy(p);
	for (int t = 0; t < THREADS; t++)
		for (int k = 0; k < 4; k++)
			pd_chunkenc_values_destroy(jobs[t].c[k]);
	pd_chunkenc_symbols_unref(sym);
	free_items(it, N);
}

/* A frozen view of tables (what a record on shared symbols is first encoded
 * against, under their read lock) finds every entry they hold and adds none:
 * interning anything new, or an equal entry the profile must not reuse, fails
 * and says so, and the tables stay as they were. */
static void test_frozen_view(void **state)
{
	(void)state;
	struct v2_tables t;
	v2_tables_init(&t);
	struct v2_tables v = v2_tables_view(&t);
	assert_int_equal(v2_intern_str(&v, "", 0), -1); /* empty tables */
	assert_true(v.missed);
	assert_int_equal(v2_intern_str(&t, "", 0), 0);
	assert_int_equal(v2_intern_str(&t, "main", 4), 1);
	assert_int_equal(v2_intern_str(&t, "main.go", 7), 2);
	struct v2_mapping m = {0x1000, 0x2000, 0, 2, 0, 1};
	struct v2_function f = {1, 1, 2, 3};
	struct v2_line ln = {0, 5, 0};
	struct v2_location l = {0x1100, 1, 0, 1, 0};
	assert_int_equal(v2_intern_map(&t, &m, NULL), 0);
	assert_int_equal(v2_intern_fn(&t, &f, NULL), 0);
	assert_int_equal(v2_intern_loc(&t, &l, &ln, NULL), 0);
	assert_int_equal(v2_intern_node(&t, 0, 0), 0);
	assert_int_equal(v2_intern_node(&t, 1, 0), 1);

	v = v2_tables_view(&t);
	assert_int_equal(v2_intern_str(&v, "main.go", 7), 2);
	assert_int_equal(v2_intern_map(&v, &m, NULL), 0);
	assert_int_equal(v2_intern_fn(&v, &f, NULL), 0);
	assert_int_equal(v2_intern_loc(&v, &l, &ln, NULL), 0);
	assert_int_equal(v2_intern_node(&v, 1, 0), 1);
	assert_false(v.missed);

	uint8_t avoid[1] = {1};
	struct v2_line ln2 = {0, 6, 0};
	struct v2_function f2 = {1, 1, 2, 4};
	struct v2_mapping m2 = {0x3000, 0x4000, 0, 2, 0, 1};
	int64_t got[] = {v2_intern_str(&v, "init", 4),      v2_intern_map(&v, &m2, NULL),
	                 v2_intern_map(&v, &m, avoid),      v2_intern_fn(&v, &f2, NULL),
	                 v2_intern_fn(&v, &f, avoid),       v2_intern_loc(&v, &l, &ln2, NULL),
	                 v2_intern_loc(&v, &l, &ln, avoid), v2_intern_node(&v, 2, 0)};
	for (size_t i = 0; i < sizeof(got) / sizeof(got[0]); i++)
		assert_int_equal(got[i], -1);
	assert_true(v.missed);
	assert_int_equal(t.nstr, 3);
	assert_int_equal(t.nmap, 1);
	assert_int_equal(t.nfn, 1);
	assert_int_equal(t.nloc, 1);
	assert_int_equal(t.nline, 1);
	assert_int_equal(t.nnode, 2);
	assert_false(t.frozen);
	assert_false(t.missed);
	v2_tables_fini(&t);
}

/* Golden chunks of the store's encoding bytes (testdata/chunks/README.md): byte 3,
 * as profd wrote it before byte 4, byte 4 (the dictionary, packed build ids, a
 * run), and byte 5 (holes) with its timestamp chunk and totals section (version
 * 4); every profile reads back as its source, at the timestamps it was written
 * with (byte 5 beside its timestamp chunk, whose timestamps are those). */
static void test_golden_relative_chunks(void **state)
{
	(void)state;
	static const int jit[] = {0, 0, 0, 0, 2, 1, 2, 0, 1, 2, 0, 1};
	static const char *const files[] = {"chunks/v2-relative-times.chunk",
	                                    "chunks/v2-dictionary-runs.chunk",
	                                    "chunks/v2-holes.chunk"};
	static const uint8_t bytes[] = {PD_CHUNKENC_VALUES_COLUMNAR_REL,
	                                PD_CHUNKENC_VALUES_COLUMNAR_DICT,
	                                PD_CHUNKENC_VALUES_COLUMNAR_TOTALS};
	size_t tcl;
	uint8_t *tc = load("chunks/v2-holes.tschunk", &tcl);
	struct pd_err err = {0};
	size_t bl;
	uint8_t *block = load("profiles/prometheus/block.pb.gz", &bl);
	struct pd_pprof_profile *bp;
	assert_int_equal(pd_pprof_decode(&bp, block, bl, NULL, &err), 0);
	int64_t bt = pd_pprof_time_nanos(bp) / 1000000;
	pd_pprof_destroy(bp);
	for (int f = 0; f < 3; f++) {
		size_t clen;
		uint8_t *c = load(files[f], &clen);
		assert_int_equal(c[0], bytes[f]);
		assert_int_equal(pd_chunkenc_values_encoding(c, clen), PD_CHUNKENC_VALUES_COLUMNAR);
		assert_int_equal(pd_chunkenc_values_read_count(c, clen, &err), 12);
		int64_t ts[12];
		for (int i = 0; i < 12; i++) {
			static const char *const first[] = {"profiles/goapp/cpu.pb.gz",
			                                    "profiles/goapp/heap.pb.gz",
			                                    "profiles/goapp/mutex.pb.gz"};
			size_t rl, ol;
			uint8_t *raw = i < 3 ? load(first[i], &rl) : block, *out;
			if (i >= 3)
				rl = bl;
			/* a timestamp chunk's timestamps increase: byte 5's block profiles are
			 * 15 s apart */
			ts[i] = i < 3   ? 1700611200000LL + i * 15000LL + (i * 37) % 11
			        : f < 2 ? bt - jit[i]
			                : bt + 15000LL * (i - 3) - jit[i];
			if (f < 2 ? pd_chunkenc_values_read_at(c, clen, (size_t)i, ts[i],
			                                       (size_t)256 << 20, &out, &ol, &err)
			          : pd_chunkenc_values_read_tc(c, clen, tc, tcl, (size_t)i,
			                                       (size_t)256 << 20, &out, &ol, &err))
				fail_msg("%s profile %d: %s", files[f], i, err.msg);
			assert_same_profile(raw, rl, out, ol, files[f], (size_t)i);
			free(out);
			if (i < 3)
				free(raw);
		}
		if (f == 2) {
			/* the timestamps are the chunk's */
			struct pd_chunkenc_ts_iter it;
			pd_chunkenc_ts_iter_init(&it, tc, tcl);
			for (int i = 0; i < 12; i++) {
				assert_true(pd_chunkenc_ts_iter_next(&it));
				assert_int_equal(pd_chunkenc_ts_iter_at(&it), ts[i]);
			}
			assert_false(pd_chunkenc_ts_iter_next(&it));
		}
		free(c);
	}
	free(tc);
	free(block);
}

/* A chunk of n appends of the files (in turn, 15 s apart, in groups of 8) sealed
 * beside its totals, whose every profile reads back beside its timestamp chunk;
 * returns its group (the header's), *ngroups and its encoding byte *enc. */
static uint64_t one_group_of(const char *const *files, size_t nf, size_t n, uint64_t *ngroups,
			     uint8_t *enc)
{
	struct pd_err err = {0};
	struct pd_chunkenc_values *v = pd_chunkenc_values_create_enc(2, 8, 3);
	struct pd_chunkenc_totals *tt = pd_chunkenc_totals_create();
	struct pd_chunkenc_ts tsa;
	uint8_t *raw[4];
	size_t rl[4];
	pd_chunkenc_ts_init(&tsa);
	for (size_t f = 0; f < nf; f++)
		raw[f] = load(files[f], &rl[f]);
	for (size_t i = 0; i < n; i++) {
		struct pd_pprof_profile *p;
		int64_t t = 1700611200000LL + 15000LL * (int64_t)i;
		assert_int_equal(pd_pprof_decode(&p, raw[i % nf], rl[i % nf], NULL, &err), 0);
		assert_int_equal(
		    pd_chunkenc_values_append_at(v, t, raw[i % nf], rl[i % nf], p, &err), 0);
		assert_int_equal(pd_chunkenc_totals_append_profile(tt, p, &err), 0);
		assert_int_equal(pd_chunkenc_ts_append(&tsa, t, &err), 0);
		pd_pprof_destroy(p);
	}
	uint8_t *c, *out;
	size_t cl, a, b, ol;
	assert_int_equal(pd_chunkenc_values_seal_totals(v, &c, &cl, &err), 0);
	*enc = c[0];
	const uint8_t *x = pd_chunkenc_ts_bytes(&tsa, &a), *y = pd_chunkenc_totals_bytes(tt, &b);
	uint8_t *tc = malloc(a + b);
	memcpy(tc, x, a);
	memcpy(tc + a, y, b);
	for (size_t i = 0; i < n; i++) {
		if (pd_chunkenc_values_read_tc(c, cl, tc, a + b, i, (size_t)256 << 20, &out, &ol,
		                               &err))
			fail_msg("profile %zu: %s", i, err.msg);
		assert_same_profile(raw[i % nf], rl[i % nf], out, ol, files[i % nf], i);
		free(out);
	}
	struct v2_rd r = {c, cl, 1, 0};
	uint64_t count = v2_uv(&r), group = v2_uv(&r);
	assert_int_equal(count, n);
	*ngroups = (count + group - 1) / group;
	for (size_t f = 0; f < nf; f++)
		free(raw[f]);
	free(tc);
	free(c);
	pd_chunkenc_values_destroy(v);
	pd_chunkenc_totals_destroy(tt);
	pd_chunkenc_ts_fini(&tsa);
	return group;
}

/* A chunk whose records are small in all (the repeats of a mutex profile) is
 * sealed beside its totals with byte 5, as one group; one of large records (cpu
 * and heap profiles in turn: more than V2_ONE_GROUP_MAX bytes of records) with
 * byte 4, keeping its groups. */
static void test_one_group(void **state)
{
	(void)state;
	static const char *const small[] = {"profiles/goapp/mutex.pb.gz"};
	static const char *const large[] = {"profiles/goapp/cpu.pb.gz",
	                                    "profiles/goapp/heap.pb.gz"};
	uint64_t ng;
	uint8_t enc;
	assert_int_equal(one_group_of(small, 1, 40, &ng, &enc), 40);
	assert_int_equal(ng, 1);
	assert_int_equal(enc, PD_CHUNKENC_VALUES_COLUMNAR_TOTALS);
	assert_int_equal(one_group_of(large, 2, 40, &ng, &enc), 8);
	assert_int_equal(ng, 5);
	assert_int_equal(enc, PD_CHUNKENC_VALUES_COLUMNAR_DICT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_each_profile),
	    cmocka_unit_test(test_mixed_chunk),
	    cmocka_unit_test(test_series_and_restart),
	    cmocka_unit_test(test_opaque),
	    cmocka_unit_test(test_duplicate_entries),
	    cmocka_unit_test(test_million_locations),
	    cmocka_unit_test(test_damaged),
	    cmocka_unit_test(test_lean_appender),
	    cmocka_unit_test(test_parked_record),
	    cmocka_unit_test(test_merge_by_stack),
	    cmocka_unit_test(test_shared_symbols),
	    cmocka_unit_test(test_frozen_view),
	    cmocka_unit_test(test_string_forms),
	    cmocka_unit_test(test_golden_relative_chunks),
	    cmocka_unit_test(test_one_group),
	    cmocka_unit_test(test_step_over_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
