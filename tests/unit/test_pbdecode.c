/* test_pbdecode.c: unit tests of pkg/pprof/pbdecode.c, the hand-written protobuf
 * decoder, against protobuf-c. Every profile of testdata/ (and of the corpus beside
 * the repository when it is there) must take the fast path, into structs that pack
 * to the same bytes as protobuf-c's and decode to an equal profile; hand-built
 * inputs cover unpacked and repeated fields, the empty profile, and the inputs left
 * to protobuf-c (unknown fields, odd encodings, truncation). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "pprof_int.h"

#define ARENA_LIMIT ((size_t)1 << 30)

/* The bytes protobuf-c packs m into (malloc'd, caller frees). */
static uint8_t *pack(const pb_profile *m, size_t *len)
{
	*len = perftools__profiles__profile__get_packed_size(m);
	uint8_t *b = malloc(*len ? *len : 1);
	assert_non_null(b);
	assert_int_equal(perftools__profiles__profile__pack(m, b), *len);
	return b;
}

/* Decodes raw both ways. Returns 1 when the fast path took it (after checking that
 * protobuf-c takes it too and packs it to the same bytes), 0 when it left it to
 * protobuf-c; *pbc_ok says whether protobuf-c accepted it, and *canonical whether
 * protobuf-c's result packs to raw itself (may be NULL). */
static int both_ways_c(const char *what, const uint8_t *raw, size_t len, int *pbc_ok,
                       int *canonical)
{
	struct pd_arena *fa = pd_arena_create(ARENA_LIMIT), *pa = pd_arena_create(ARENA_LIMIT);
	assert_non_null(fa);
	assert_non_null(pa);
	ProtobufCAllocator alloc;
	pd_pprof_arena_allocator(&alloc, pa);
	pb_profile *slow = perftools__profiles__profile__unpack(&alloc, len, raw);
	pb_profile *fast = pd_pprof_pb_decode(fa, raw, len);
	*pbc_ok = slow != NULL;
	if (canonical) {
		*canonical = 0;
		if (slow) {
			size_t sl;
			uint8_t *sb = pack(slow, &sl);
			*canonical = sl == len && memcmp(sb, raw, len) == 0;
			free(sb);
		}
	}
	if (fast) {
		if (!slow)
			fail_msg("%s: the fast path accepts what protobuf-c refuses", what);
		size_t fl, sl;
		uint8_t *fb = pack(fast, &fl), *sb = pack(slow, &sl);
		if (fl != sl || memcmp(fb, sb, fl) != 0)
			fail_msg("%s: packed bytes differ (%zu fast, %zu protobuf-c)", what, fl,
			         sl);
		assert_ptr_equal(fast->base.descriptor, slow->base.descriptor);
		assert_int_equal(fast->base.n_unknown_fields, 0);
		free(fb);
		free(sb);
	}
	pd_arena_destroy(fa);
	pd_arena_destroy(pa);
	return fast != NULL;
}

static int both_ways(const char *what, const uint8_t *raw, size_t len, int *pbc_ok)
{
	return both_ways_c(what, raw, len, pbc_ok, NULL);
}

/* pd_pprof_decode with and without the fast path: the same result code, the same
 * message on failure, equal profiles on success. Returns the code. */
static int decode_both(const char *what, const uint8_t *buf, size_t len, char *msg, size_t msgsz)
{
	struct pd_pprof_decode_opts fast_opts = {0}, slow_opts = {.protobuf_c_only = 1};
	struct pd_pprof_profile *a = NULL, *b = NULL;
	struct pd_err ea = {0}, eb = {0};
	int ra = pd_pprof_decode(&a, buf, len, &fast_opts, &ea);
	int rb = pd_pprof_decode(&b, buf, len, &slow_opts, &eb);
	if (ra != rb)
		fail_msg("%s: decode gives %d, with protobuf-c alone %d (%s | %s)", what, ra, rb,
		         ea.msg, eb.msg);
	if (ra) {
		assert_string_equal(ea.msg, eb.msg);
		if (msg)
			snprintf(msg, msgsz, "%s", ea.msg);
	} else {
		char why[256];
		if (pd_pprof_compare(a, b, why, sizeof(why)))
			fail_msg("%s: the two decodings differ: %s", what, why);
	}
	pd_pprof_destroy(a);
	pd_pprof_destroy(b);
	return ra;
}

/* Files protobuf-c accepts but the fast path rightly leaves to it. */
static int expect_fallback(const char *path)
{
	static const char *const names[] = {"/huge-varint.pb"};
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		size_t n = strlen(names[i]), l = strlen(path);
		if (l >= n && strcmp(path + l - n, names[i]) == 0)
			return 1;
	}
	return 0;
}

/* The fast decoder counts its whole need before it allocates: an arena capped at
 * exactly what it uses takes the profile, one byte less refuses it with nothing
 * allocated, and protobuf-c, which needs at least as much, refuses it too (so
 * decode.c may refuse without asking protobuf-c). */
static void check_budget(const char *what, const uint8_t *raw, size_t len)
{
	struct pd_arena *a = pd_arena_create(0);
	assert_non_null(pd_pprof_pb_decode(a, raw, len));
	size_t used = pd_arena_used(a);
	pd_arena_destroy(a);
	a = pd_arena_create(used);
	if (!pd_pprof_pb_decode(a, raw, len))
		fail_msg("%s: refused within the %zu bytes it uses", what, used);
	pd_arena_destroy(a);
	a = pd_arena_create(used - 1);
	assert_null(pd_pprof_pb_decode(a, raw, len));
	assert_true(pd_arena_exhausted(a));
	assert_int_equal(pd_arena_used(a), 0);
	pd_arena_destroy(a);
	a = pd_arena_create(used - 1);
	ProtobufCAllocator alloc;
	pd_pprof_arena_allocator(&alloc, a);
	if (perftools__profiles__profile__unpack(&alloc, len, raw))
		fail_msg("%s: protobuf-c decodes it within %zu bytes, the fast decoder needs %zu",
		         what, used - 1, used);
	pd_arena_destroy(a);
}

struct walk {
	size_t files, fast;
};

static void check_file(const char *path, struct walk *w)
{
	uint8_t *buf, *raw = NULL;
	size_t len, raw_len;
	struct pd_err err = {0};
	if (pd_file_read(path, (size_t)1 << 30, &buf, &len, &err))
		fail_msg("%s", err.msg);
	const uint8_t *data = buf;
	raw_len = len;
	if (pd_gzip_is(buf, len)) {
		if (pd_gunzip(buf, len, (size_t)64 << 20, &raw, &raw_len, &err)) {
			/* the gzip bomb of edge/: nothing reaches a decoder */
			free(buf);
			return;
		}
		data = raw;
	}
	int pbc_ok, canonical;
	int fast = both_ways_c(path, data, raw_len, &pbc_ok, &canonical);
	w->files++;
	w->fast += (size_t)fast;
	/* profiles as profilers write them take the fast path; so does any input
	 * protobuf-c packs back to the same bytes (the fuzz regression inputs of
	 * testdata/fuzz are mostly neither) */
	int profiler = strstr(path, "/fuzz/") == NULL;
	if (pbc_ok && !fast && (canonical || (profiler && !expect_fallback(path))))
		fail_msg("%s: protobuf-c decodes it but the fast path does not", path);
	if (fast && expect_fallback(path))
		fail_msg("%s: expected to be left to protobuf-c", path);
	decode_both(path, buf, len, NULL, 0);
	if (fast)
		check_budget(path, data, raw_len);
	free(raw);
	free(buf);
}

static void walk_dir(const char *dir, struct walk *w)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct stat st;
		if (stat(path, &st))
			continue;
		size_t n = strlen(e->d_name);
		if (S_ISDIR(st.st_mode))
			walk_dir(path, w);
		else if ((n > 3 && strcmp(e->d_name + n - 3, ".pb") == 0) ||
		         (n > 6 && strcmp(e->d_name + n - 6, ".pb.gz") == 0))
			check_file(path, w);
	}
	closedir(d);
}

static void test_testdata(void **state)
{
	(void)state;
	struct walk w = {0};
	walk_dir(PD_TESTDATA, &w);
	/* testdata/profiles alone holds well over 60 profiles */
	assert_true(w.files > 60);
	assert_true(w.fast + 10 > w.files);
	print_message("testdata: %zu profiles, %zu on the fast path\n", w.files, w.fast);
}

static void test_corpus(void **state)
{
	(void)state;
	const char *dir = getenv("PD_CORPUS");
	if (!dir)
		dir = PD_SOURCE_DIR "/../shared/corpus";
	struct stat st;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		print_message("no corpus at %s: only testdata/ is checked\n", dir);
		return;
	}
	struct walk w = {0};
	walk_dir(dir, &w);
	print_message("%s: %zu profiles, %zu on the fast path\n", dir, w.files, w.fast);
	assert_int_equal(w.fast, w.files);
}

/* ---- hand-built inputs ---------------------------------------------------- */

struct pbw {
	uint8_t b[4096];
	size_t n;
};

static void put_byte(struct pbw *w, uint8_t c)
{
	assert_true(w->n < sizeof(w->b));
	w->b[w->n++] = c;
}

static void put_varint(struct pbw *w, uint64_t v)
{
	while (v >= 0x80) {
		put_byte(w, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	put_byte(w, (uint8_t)v);
}

static void put_key(struct pbw *w, unsigned field, unsigned wt)
{
	put_varint(w, (uint64_t)field << 3 | wt);
}

static void put_int(struct pbw *w, unsigned field, uint64_t v)
{
	put_key(w, field, 0);
	put_varint(w, v);
}

static void put_bytes(struct pbw *w, unsigned field, const void *d, size_t n)
{
	put_key(w, field, 2);
	put_varint(w, n);
	assert_true(w->n + n <= sizeof(w->b));
	if (n)
		memcpy(w->b + w->n, d, n);
	w->n += n;
}

static void put_msg(struct pbw *w, unsigned field, const struct pbw *m)
{
	put_bytes(w, field, m->b, m->n);
}

static void put_str(struct pbw *w, const char *s)
{
	put_bytes(w, 6, s, strlen(s));
}

/* A small valid profile: one sample type, two functions, locations, a sample. */
static void base_profile(struct pbw *w)
{
	struct pbw m = {.n = 0};
	put_int(&m, 1, 1);
	put_int(&m, 2, 2);
	put_msg(w, 1, &m); /* sample_type samples/count */
	for (uint64_t id = 1; id <= 2; id++) {
		m.n = 0;
		put_int(&m, 1, id);
		put_int(&m, 2, 2 + id);
		put_msg(w, 5, &m); /* function */
		struct pbw line = {.n = 0};
		put_int(&line, 1, id);
		put_int(&line, 2, 10 * id);
		m.n = 0;
		put_int(&m, 1, id);
		put_int(&m, 3, 0x1000 + id);
		put_msg(&m, 4, &line);
		put_msg(w, 4, &m); /* location */
	}
	put_str(w, "");
	put_str(w, "samples");
	put_str(w, "count");
	put_str(w, "main");
	put_str(w, "f");
}

/* protobuf-c and the fast path agree, the fast path taking the input */
static void assert_fast(const char *what, const struct pbw *w)
{
	int pbc_ok;
	if (!both_ways(what, w->b, w->n, &pbc_ok))
		fail_msg("%s: not on the fast path", what);
	assert_true(pbc_ok);
}

/* the fast path leaves the input to protobuf-c */
static void assert_fallback(const char *what, const struct pbw *w, int pbc_accepts)
{
	int pbc_ok;
	if (both_ways(what, w->b, w->n, &pbc_ok))
		fail_msg("%s: taken by the fast path", what);
	assert_int_equal(pbc_ok, pbc_accepts);
}

static void test_unpacked(void **state)
{
	(void)state;
	struct pbw w = {.n = 0}, s = {.n = 0};
	base_profile(&w);
	/* a sample with location ids and values unpacked, packed and interleaved */
	put_int(&s, 1, 1);
	put_int(&s, 2, 7);
	uint8_t packed[] = {0x02, 0x01};
	put_bytes(&s, 1, packed, sizeof(packed));
	put_bytes(&s, 2, NULL, 0); /* an empty packed run */
	struct pbw label = {.n = 0};
	put_int(&label, 1, 1);
	put_int(&label, 3, (uint64_t)-5);
	put_msg(&s, 3, &label);
	put_msg(&w, 2, &s);
	/* comments unpacked and packed */
	put_int(&w, 13, 3);
	uint8_t c[] = {0x04, 0x01};
	put_bytes(&w, 13, c, sizeof(c));
	assert_fast("unpacked repeated fields", &w);

	struct pd_arena *a = pd_arena_create(ARENA_LIMIT);
	pb_profile *pb = pd_pprof_pb_decode(a, w.b, w.n);
	assert_non_null(pb);
	assert_int_equal(pb->n_sample, 1);
	assert_int_equal(pb->sample[0]->n_location_id, 3);
	assert_int_equal(pb->sample[0]->location_id[0], 1);
	assert_int_equal(pb->sample[0]->location_id[1], 2);
	assert_int_equal(pb->sample[0]->location_id[2], 1);
	assert_int_equal(pb->sample[0]->n_value, 1);
	assert_int_equal(pb->sample[0]->value[0], 7);
	assert_int_equal(pb->sample[0]->n_label, 1);
	assert_int_equal(pb->sample[0]->label[0]->num, -5);
	assert_int_equal(pb->n_comment, 3);
	assert_int_equal(pb->comment[0], 3);
	assert_int_equal(pb->comment[2], 1);
	assert_int_equal(pb->n_string_table, 5);
	assert_string_equal(pb->string_table[4], "f");
	assert_int_equal(pb->location[1]->line[0]->line, 20);
	pd_arena_destroy(a);
	assert_int_equal(decode_both("unpacked repeated fields", w.b, w.n, NULL, 0), 0);
}

static void test_repeated_singular(void **state)
{
	(void)state;
	struct pbw w = {.n = 0}, vt = {.n = 0};
	base_profile(&w);
	put_int(&w, 9, 100);
	put_int(&w, 12, 3);
	put_int(&w, 9, 200); /* time_nanos again: the last wins */
	put_int(&vt, 1, 1);
	put_int(&vt, 2, 2);
	put_msg(&w, 11, &vt);
	vt.n = 0;
	put_int(&vt, 2, 3);
	put_int(&vt, 1, 0);
	put_msg(&w, 11, &vt); /* period_type again, its type explicitly 0 */
	struct pbw m = {.n = 0};
	put_int(&m, 1, 9);
	put_int(&m, 7, 1);
	put_int(&m, 1, 3); /* mapping id twice */
	put_int(&m, 7, 0);
	put_msg(&w, 3, &m);
	assert_fast("repeated non-repeated fields", &w);

	struct pd_arena *a = pd_arena_create(ARENA_LIMIT);
	pb_profile *pb = pd_pprof_pb_decode(a, w.b, w.n);
	assert_non_null(pb);
	assert_int_equal(pb->time_nanos, 200);
	assert_int_equal(pb->period_type->type, 0);
	assert_int_equal(pb->period_type->unit, 3);
	assert_int_equal(pb->mapping[0]->id, 3);
	assert_int_equal(pb->mapping[0]->has_functions, 0);
	pd_arena_destroy(a);
	assert_int_equal(decode_both("repeated non-repeated fields", w.b, w.n, NULL, 0), 0);
}

static void test_empty(void **state)
{
	(void)state;
	struct pbw w = {.n = 0};
	assert_fast("empty profile", &w);
	struct pd_arena *a = pd_arena_create(ARENA_LIMIT);
	pb_profile *pb = pd_pprof_pb_decode(a, w.b, 0);
	assert_non_null(pb);
	assert_int_equal(pb->n_sample, 0);
	assert_null(pb->string_table);
	assert_null(pb->period_type);
	pd_arena_destroy(a);
	/* just a string table: valid, no samples */
	put_str(&w, "");
	assert_fast("string table alone", &w);
}

static void test_fallback(void **state)
{
	(void)state;
	struct pbw w = {.n = 0};
	base_profile(&w);
	size_t good = w.n;

	put_int(&w, 16, 1); /* unknown field of Profile */
	assert_fallback("unknown field 16", &w, 1);
	struct pd_arena *a = pd_arena_create(ARENA_LIMIT);
	ProtobufCAllocator alloc;
	pd_pprof_arena_allocator(&alloc, a);
	pb_profile *pb = perftools__profiles__profile__unpack(&alloc, w.n, w.b);
	assert_non_null(pb);
	assert_int_equal(pb->base.n_unknown_fields, 1);
	pd_arena_destroy(a);
	assert_int_equal(decode_both("unknown field 16", w.b, w.n, NULL, 0), 0);

	struct pbw s = {.n = 0};
	w.n = good;
	put_int(&s, 1, 1);
	put_int(&s, 9, 1); /* unknown field of Sample */
	put_msg(&w, 2, &s);
	assert_fallback("unknown field of a sample", &w, 1);

	w.n = good;
	uint8_t key0[] = {0x80, 0x00, 0x01}; /* a key of field 0 in two bytes */
	memcpy(w.b + w.n, key0, sizeof(key0));
	w.n += sizeof(key0);
	assert_fallback("field 0", &w, 1);
	assert_int_equal(decode_both("field 0", w.b, w.n, NULL, 0), 0);

	w.n = good;
	uint8_t overlong[] = {0x48, 0x85, 0x00}; /* time_nanos 5 in two bytes */
	memcpy(w.b + w.n, overlong, sizeof(overlong));
	w.n += sizeof(overlong);
	assert_fallback("non-minimal varint", &w, 1);

	w.n = good;
	put_bytes(&w, 9, "x", 1); /* time_nanos with the wrong wire type */
	assert_fallback("wrong wire type", &w, 0);

	w.n = good;
	put_key(&w, 12, 1); /* period as a fixed64 */
	for (int i = 0; i < 8; i++)
		put_byte(&w, 0);
	assert_fallback("fixed64 wire type", &w, 0);
}

static void test_truncated(void **state)
{
	(void)state;
	struct pbw w = {.n = 0};
	base_profile(&w);
	char fast_msg[1024], slow_msg[1024];
	/* every cut of a valid profile: at a field boundary it is a valid, shorter
	 * profile; elsewhere both ways refuse it with decode.c's message */
	size_t refused = 0;
	for (size_t cut = 1; cut < w.n; cut++) {
		int pbc_ok;
		both_ways("cut profile", w.b, cut, &pbc_ok);
		if (!pbc_ok)
			refused++;
	}
	assert_true(refused > w.n / 2);
	/* a cut inside the last string */
	size_t cut = w.n - 1;
	int pbc_ok;
	assert_int_equal(both_ways("truncated", w.b, cut, &pbc_ok), 0);
	assert_false(pbc_ok);
	int rc = decode_both("truncated", w.b, cut, fast_msg, sizeof(fast_msg));
	assert_int_equal(rc, PD_ECORRUPT);
	struct pd_pprof_decode_opts slow = {.protobuf_c_only = 1};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_decode(&p, w.b, cut, &slow, &err), PD_ECORRUPT);
	snprintf(slow_msg, sizeof(slow_msg), "%s", err.msg);
	assert_string_equal(fast_msg, slow_msg);
	assert_non_null(strstr(fast_msg, "string_table"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_testdata),  cmocka_unit_test(test_corpus),
	    cmocka_unit_test(test_unpacked),  cmocka_unit_test(test_repeated_singular),
	    cmocka_unit_test(test_empty),     cmocka_unit_test(test_fallback),
	    cmocka_unit_test(test_truncated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
