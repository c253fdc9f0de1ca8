/* test_selfprof.c: profd profiling itself (pkg/selfprof): symbols of this test
 * binary and of libc, a real CPU profile of a spinning thread read back with the
 * pprof package, one CPU profile at a time, Go's heap sample scaling, and the
 * heap sampler's bookkeeping (sampled blocks, frees, the free() filter) through
 * the profile it writes. The malloc replacement itself is not linked here (the
 * tests run under AddressSanitizer); tests/integration/selfprof.sh checks it in
 * the release binary. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/pprof.h"
#include "profd/selfprof.h"
#include "selfprof_int.h"

/* ---- functions to find in profiles ---------------------------------------- */

static volatile int spin_stop;
static volatile uint64_t spin_sink;
static int64_t spin_cpu_ns; /* the spinning thread's CPU time, __atomic */

__attribute__((noinline)) void selfprof_test_spin(void)
{
	uint64_t x = 1;
	while (!spin_stop) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		struct timespec ts;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		__atomic_store_n(&spin_cpu_ns, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
		                 __ATOMIC_RELAXED);
	}
	spin_sink = x;
}

static void *spin_thread(void *arg)
{
	(void)arg;
	selfprof_test_spin();
	return NULL;
}

__attribute__((noinline)) void selfprof_test_marker(void)
{
	spin_sink++;
}

__attribute__((noinline)) void selfprof_test_other(void)
{
	spin_sink += 2;
}

/* 1 when the top table of p (sample index idx) has a row named name with a
 * non-zero flat (flat) or cum value; the value goes to *v. */
static int top_has(const struct pd_pprof_profile *p, int idx, const char *name, int flat,
                   int64_t *v)
{
	struct pd_pprof_top *t;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_top(p, idx, &t, &err), 0);
	int found = 0;
	for (size_t i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i].name, name) == 0) {
			int64_t x = flat ? t->rows[i].flat : t->rows[i].cum;
			if (v)
				*v = x;
			found = x != 0;
		}
	pd_pprof_top_destroy(t);
	return found;
}

/* ---- symbols --------------------------------------------------------------- */

static void test_symbolize(void **state)
{
	(void)state;
	char name[256];
	struct pd_err err = {0};
	/* inside the function, as a return address would be */
	assert_int_equal(
	    pd_selfprof_symbolize((uintptr_t)selfprof_test_marker + 1, name, sizeof(name), &err),
	    0);
	assert_string_equal(name, "selfprof_test_marker");
	assert_int_equal(
	    pd_selfprof_symbolize((uintptr_t)selfprof_test_spin, name, sizeof(name), &err), 0);
	assert_string_equal(name, "selfprof_test_spin");
	/* a shared library's exported function, through its load bias; of the
	 * aliases at one address the plain name wins (getpid, not __getpid); its
	 * address from the loader, since in an executable that is not position
	 * independent &getpid is the executable's PLT entry */
	void *getpid_fn = dlsym(RTLD_DEFAULT, "getpid");
	assert_non_null(getpid_fn);
	assert_int_equal(pd_selfprof_symbolize((uintptr_t)getpid_fn + 1, name, sizeof(name), &err),
	                 0);
	assert_string_equal(name, "getpid");
	/* data is not code */
	static int data;
	assert_int_equal(pd_selfprof_symbolize((uintptr_t)&data, name, sizeof(name), &err),
	                 PD_ENOTFOUND);
}

static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	char buf[65536];
	size_t n;
	int rc = in && out ? 0 : -1;
	while (!rc && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			rc = -1;
	if (in)
		fclose(in);
	if (out && fclose(out))
		rc = -1;
	return rc;
}

/* A library replaced on disk while it is mapped (an upgrade of a running profd):
 * /proc/self/maps says "(deleted)" and the file at the path is another one, whose
 * symbols must not name the old code. The image read before the replacement
 * still does. */
static void test_symbolize_replaced_file(void **state)
{
	(void)state;
	void *zv = dlsym(RTLD_DEFAULT, "zlibVersion");
	Dl_info di;
	assert_non_null(zv);
	assert_true(dladdr(zv, &di) && di.dli_fname);
	char dir[] = "/tmp/test_selfprof.XXXXXX", lib[64], repl[64];
	assert_non_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "%s/libpdcopy.so", dir);
	snprintf(repl, sizeof(repl), "%s/new", dir);
	assert_int_equal(copy_file(di.dli_fname, lib), 0);
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	void *f = dlsym(h, "zlibVersion");
	assert_non_null(f);
	assert_ptr_not_equal(f, zv);
	char name[256];
	struct pd_err err = {0};
	assert_int_equal(pd_selfprof_symbolize((uintptr_t)f, name, sizeof(name), &err), 0);
	assert_string_equal(name, "zlibVersion");
	/* replace it as a package manager does: another ELF renamed over it */
	assert_int_equal(copy_file("/proc/self/exe", repl), 0);
	assert_int_equal(rename(repl, lib), 0);
	struct sp_maps ms;
	assert_int_equal(sp_maps_load(&ms, &err), 0);
	const struct sp_map *m = sp_maps_find(&ms, (uintptr_t)f);
	assert_non_null(m);
	assert_string_equal(m->path, lib);
	assert_true(m->deleted);
	sp_maps_fini(&ms);
	/* named from the image read while the file was there, not from the new file */
	assert_int_equal(pd_selfprof_symbolize((uintptr_t)f, name, sizeof(name), &err), 0);
	assert_string_equal(name, "zlibVersion");
	dlclose(h);
	unlink(lib);
	rmdir(dir);
}

static void test_maps(void **state)
{
	(void)state;
	struct sp_maps ms;
	struct pd_err err = {0};
	assert_int_equal(sp_maps_load(&ms, &err), 0);
	int exe = 0, libc = 0, vdso = 0;
	for (size_t i = 0; i < ms.n; i++) {
		const struct sp_map *m = &ms.m[i];
		assert_true(m->start < m->limit);
		if (i)
			assert_true(ms.m[i - 1].limit <= m->start);
		if (m->is_exe) {
			exe = 1;
			assert_non_null(m->elf);
			assert_int_equal(strlen(m->elf->build_id), 40); /* gcc's sha1 build id */
		}
		if (strstr(m->path, "libc.so"))
			libc = 1;
		if (strcmp(m->path, "[vdso]") == 0) {
			vdso = 1;
			assert_non_null(m->elf);
			assert_true(m->elf->nsyms > 0);
		}
	}
	assert_true(exe && libc && vdso);
	const struct sp_map *m = sp_maps_find(&ms, (uintptr_t)selfprof_test_other);
	assert_non_null(m);
	assert_true(m->is_exe);
	assert_string_equal(sp_maps_symbol(m, (uintptr_t)selfprof_test_other + 2),
	                    "selfprof_test_other");
	assert_null(sp_maps_find(&ms, 16));
	sp_maps_fini(&ms);
}

/* ---- CPU ------------------------------------------------------------------- */

static void test_cpu_profile(void **state)
{
	(void)state;
	struct pd_selfprof_cpu *c;
	struct pd_err err = {0};
	pthread_t th;
	spin_stop = 0;
	__atomic_store_n(&spin_cpu_ns, 0, __ATOMIC_RELAXED);
	assert_int_equal(pd_selfprof_cpu_start(&c, &err), 0);
	assert_int_equal(pthread_create(&th, NULL, spin_thread, NULL), 0);
	/* until the thread has had 1.2 s of CPU, however busy the machine is: beside
	 * make test on a loaded 2-core machine it may get a twentieth of a CPU, so
	 * the wall-clock deadline is far (the test's own timeout is 600 s) */
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL); /* our own SIGPROF may cut a step short */
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (__atomic_load_n(&spin_cpu_ns, __ATOMIC_RELAXED) < 1200000000 &&
	         t.tv_sec - t0.tv_sec < 400);
	int64_t cpu_ns = __atomic_load_n(&spin_cpu_ns, __ATOMIC_RELAXED);
	uint8_t *out;
	size_t len;
	assert_int_equal(pd_selfprof_cpu_stop(c, &out, &len, &err), 0);
	spin_stop = 1;
	pthread_join(th, NULL);
	if (cpu_ns < 1200000000)
		fail_msg("the spinning thread had %lld ms of CPU in 400 s, want 1200",
		         (long long)(cpu_ns / 1000000));

	assert_true(pd_gzip_is(out, len));
	struct pd_pprof_profile *p;
	assert_int_equal(pd_pprof_decode(&p, out, len, NULL, &err), 0);
	free(out);
	assert_int_equal(pd_pprof_sample_type_count(p), 2);
	assert_string_equal(pd_pprof_sample_type(p, 0), "samples");
	assert_string_equal(pd_pprof_sample_unit(p, 0), "count");
	assert_string_equal(pd_pprof_sample_type(p, 1), "cpu");
	assert_string_equal(pd_pprof_sample_unit(p, 1), "nanoseconds");
	assert_string_equal(pd_pprof_period_type(p), "cpu");
	assert_string_equal(pd_pprof_period_unit(p), "nanoseconds");
	assert_int_equal(pd_pprof_period(p), 10000000);
	assert_true(pd_pprof_duration_nanos(p) >= 1000000000LL);
	assert_true(pd_pprof_time_nanos(p) > 1600000000LL * 1000000000LL);
	assert_true(pd_pprof_mapping_count(p) > 1);
	/* the main binary is the first mapping */
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_string_equal(pd_pprof_main_binary(p), exe);
	/* a thread spinning for 1.2 s of CPU: about 120 samples at its own frame. The
	 * process timer loses some: one signal is sent however many periods passed
	 * since the kernel last checked, and none while another is pending; on a
	 * machine loaded beside the test suite (make test next to two CPU hogs) under
	 * 60 arrived. What must hold: a real share of them, and most at its frame. */
	int64_t flat = 0, total = pd_pprof_total(p, 0);
	assert_true(top_has(p, 0, "selfprof_test_spin", 1, &flat));
	assert_true(flat >= 24);
	assert_true(flat * 2 >= total);
	/* and its caller below it */
	assert_true(top_has(p, 0, "spin_thread", 0, NULL));
	assert_int_equal(pd_pprof_total(p, 1), total * 10000000);
	pd_pprof_destroy(p);
}

static void test_cpu_one_at_a_time(void **state)
{
	(void)state;
	struct pd_selfprof_cpu *c, *c2;
	struct pd_err err = {0};
	assert_int_equal(pd_selfprof_cpu_start(&c, &err), 0);
	assert_int_equal(pd_selfprof_cpu_start(&c2, &err), PD_EINVAL);
	assert_null(c2);
	assert_string_equal(err.msg, "cpu profiling already in use");
	uint8_t *out;
	size_t len;
	assert_int_equal(pd_selfprof_cpu_stop(c, &out, &len, &err), 0);
	free(out);
	/* free again */
	assert_int_equal(pd_selfprof_cpu_start(&c, &err), 0);
	assert_int_equal(pd_selfprof_cpu_stop(c, &out, &len, &err), 0);
	struct pd_pprof_profile *p;
	assert_int_equal(pd_pprof_decode(&p, out, len, NULL, &err), 0);
	pd_pprof_destroy(p);
	free(out);
}

/* ---- heap ------------------------------------------------------------------- */

static void test_heap_scale(void **state)
{
	(void)state;
	int64_t c, s;
	/* Go's scaleHeapSample: 1 / (1 - e^(-avg/rate)) */
	sp_heap_scale(1, 524288, 524288, &c, &s);
	assert_int_equal(c, 1); /* 1.58 truncated, as Go's int64() */
	assert_int_equal(s, (int64_t)(524288.0 / (1 - exp(-1.0))));
	sp_heap_scale(10, 1000, 524288, &c, &s);
	double scale = 1 / (1 - exp(-100.0 / 524288));
	assert_int_equal(c, (int64_t)(10 * scale));
	assert_int_equal(s, (int64_t)(1000 * scale));
	assert_true(c > 50000 && c < 53000); /* small blocks: about rate/size each */
	sp_heap_scale(0, 0, 524288, &c, &s);
	assert_int_equal(c, 0);
	assert_int_equal(s, 0);
	sp_heap_scale(3, 300, 1, &c, &s); /* rate 1: every allocation was recorded */
	assert_int_equal(c, 3);
	assert_int_equal(s, 300);
}

static void test_heap_accounting(void **state)
{
	(void)state;
	struct pd_err err = {0};
	struct pd_err why = {0};
	/* no malloc replacement in this binary (and an ASan build anyway) */
	assert_int_equal(pd_selfprof_heap_available(&why), 0);
	assert_non_null(strstr(why.msg, "heap profiling is not available"));
	uint8_t *out = NULL;
	size_t len = 0;
	assert_int_equal(pd_selfprof_heap_profile(0, &out, &len, &err), PD_ENOTFOUND);

	sp_heap_reset();
	/* stacks of return addresses, innermost first */
	uintptr_t a[2] = {(uintptr_t)selfprof_test_marker + 4, (uintptr_t)test_heap_accounting + 4};
	uintptr_t b[2] = {(uintptr_t)selfprof_test_other + 4, (uintptr_t)test_heap_accounting + 4};
	void *p1 = (void *)(uintptr_t)0x10000, *p2 = (void *)(uintptr_t)0x20000;
	void *p3 = (void *)(uintptr_t)0x30000;
	assert_int_equal(sp_heap_record(p1, 1000, a, 2), 0);
	assert_int_equal(sp_heap_record(p2, 2000, a, 2), 0);
	assert_int_equal(sp_heap_record(p3, 500, b, 2), 0);
	assert_true(sp_heap_maybe_sampled(p2));
	sp_heap_on_free(p2);
	sp_heap_on_free((void *)(uintptr_t)0x40000); /* never sampled: nothing happens */
	assert_int_equal(sp_heap_build(0, &out, &len, &err), 0);
	struct pd_pprof_profile *p;
	assert_int_equal(pd_pprof_decode(&p, out, len, NULL, &err), 0);
	free(out);
	assert_int_equal(pd_pprof_sample_type_count(p), 4);
	const char *types[] = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"};
	const char *units[] = {"count", "bytes", "count", "bytes"};
	for (int i = 0; i < 4; i++) {
		assert_string_equal(pd_pprof_sample_type(p, (size_t)i), types[i]);
		assert_string_equal(pd_pprof_sample_unit(p, (size_t)i), units[i]);
	}
	assert_int_equal(pd_pprof_default_sample_index(p), 3); /* inuse_space */
	assert_string_equal(pd_pprof_period_type(p), "space");
	assert_int_equal(pd_pprof_period(p), 524288);
	int64_t c, s, ca, sa, cb, sb, v;
	/* stack a: 2 allocations of 3000 bytes, 1 of 1000 bytes still in use */
	sp_heap_scale(2, 3000, 524288, &ca, &sa);
	sp_heap_scale(1, 500, 524288, &cb, &sb);
	assert_int_equal(pd_pprof_total(p, 0), ca + cb);
	assert_int_equal(pd_pprof_total(p, 1), sa + sb);
	assert_true(top_has(p, 1, "selfprof_test_marker", 1, &v));
	assert_int_equal(v, sa);
	sp_heap_scale(1, 1000, 524288, &c, &s);
	assert_int_equal(pd_pprof_total(p, 3), s + sb);
	assert_true(top_has(p, 3, "selfprof_test_other", 1, &v));
	assert_int_equal(v, sb);
	assert_true(top_has(p, 3, "test_heap_accounting", 0, &v));
	assert_int_equal(v, s + sb);
	pd_pprof_destroy(p);

	/* allocs: the same samples, alloc_space first */
	assert_int_equal(sp_heap_build(1, &out, &len, &err), 0);
	assert_int_equal(pd_pprof_decode(&p, out, len, NULL, &err), 0);
	free(out);
	assert_int_equal(pd_pprof_default_sample_index(p), 1);
	pd_pprof_destroy(p);
	sp_heap_reset();
}

/* Many live blocks whose addresses collide in the table: frees in any order
 * find theirs (linear probing with backward-shift deletion), and the filter
 * that free() reads drops back to zero. */
static void test_heap_live_table(void **state)
{
	(void)state;
	sp_heap_reset();
	uintptr_t st[1] = {(uintptr_t)selfprof_test_marker + 4};
	enum { N = 5000 };
	for (uintptr_t i = 1; i <= N; i++)
		assert_int_equal(sp_heap_record((void *)(i << 4), 100, st, 1), 0);
	for (uintptr_t i = 1; i <= N; i += 2)
		sp_heap_on_free((void *)(i << 4));
	for (uintptr_t i = 2; i <= N; i += 2)
		assert_true(sp_heap_maybe_sampled((void *)(i << 4))); /* no false negatives */
	uint8_t *out;
	size_t len;
	struct pd_err err = {0};
	assert_int_equal(sp_heap_build(0, &out, &len, &err), 0);
	struct pd_pprof_profile *p;
	assert_int_equal(pd_pprof_decode(&p, out, len, NULL, &err), 0);
	free(out);
	int64_t c, s;
	sp_heap_scale(N / 2, N / 2 * 100, 524288, &c, &s);
	assert_int_equal(pd_pprof_total(p, 2), c);
	assert_int_equal(pd_pprof_total(p, 3), s);
	pd_pprof_destroy(p);
	for (uintptr_t i = 2; i <= N; i += 2)
		sp_heap_on_free((void *)(i << 4));
	for (uintptr_t i = 1; i <= N; i++)
		assert_false(sp_heap_maybe_sampled((void *)(i << 4)));
	sp_heap_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symbolize),
	    cmocka_unit_test(test_symbolize_replaced_file),
	    cmocka_unit_test(test_maps),
	    cmocka_unit_test(test_cpu_profile),
	    cmocka_unit_test(test_cpu_one_at_a_time),
	    cmocka_unit_test(test_heap_scale),
	    cmocka_unit_test(test_heap_accounting),
	    cmocka_unit_test(test_heap_live_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
