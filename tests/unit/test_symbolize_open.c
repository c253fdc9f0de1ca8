/* test_symbolize_open.c: the symbolizer keeps at most max_open_files debug files
 * open. Eight programs compiled here (each its own build id, its debug file in a
 * .build-id directory) are symbolized with a bound of two, one profile each and
 * then all in one profile: every address gets its function, the descriptors the
 * process holds (/proc/self/fd) stay within the bound, the evictions are
 * counted, and a debug file closed that way is opened again when needed. And a
 * mapping with neither a build id nor its file on this machine (a gperftools
 * profile from another host): named <binary>+0x<offset>, "not found". And at
 * most max_build_ids build ids kept: a thousand random ones through a bound of
 * eight leave at most eight, the rest evicted and counted; one profile with more
 * than eight leaves the extra ones "too many build ids in use"; the real ones
 * still resolve afterwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profd/pprof.h"
#include "profd/symbolize.h"
#include "profd/util.h"

#define NPROG 8
#define BOUND 2

static char tmp[256];
static char bids[NPROG][160];
static uint64_t addrs[NPROG]; /* of each program's own function, f<i> */

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	if (rc != 0)
		fail_msg("command failed (%d): %s", rc, cmd);
}

static void out_of(char *buf, size_t cap, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = 0;
	assert_int_equal(pclose(f), 0);
	buf[strcspn(buf, "\n")] = 0;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "/tmp/test_symbolize_open.XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	for (int i = 0; i < NPROG; i++) {
		sh("printf 'int f%d(int x) { return x * %d + 1; }\\n"
		   "int main(int c, char **v) { return f%d(c); }\\n' > %s/p%d.c",
		   i, i + 3, i, tmp, i);
		sh("gcc -g -O0 -Wl,--build-id -o %s/p%d %s/p%d.c", tmp, i, tmp, i);
		char o[256];
		out_of(o, sizeof(o), "readelf -n %s/p%d | awk '/Build ID/ {print $3}'", tmp, i);
		snprintf(bids[i], sizeof(bids[i]), "%.128s", o);
		assert_true(strlen(bids[i]) >= 16);
		out_of(o, sizeof(o), "nm %s/p%d | awk '$3==\"f%d\" {print $1}'", tmp, i, i);
		addrs[i] = strtoull(o, NULL, 16) + 4;
		assert_true(addrs[i] > 4);
		sh("mkdir -p %s/debug/.build-id/%.2s && objcopy --only-keep-debug %s/p%d "
		   "%s/debug/.build-id/%.2s/%s.debug",
		   tmp, bids[i], tmp, i, tmp, bids[i], bids[i] + 2);
	}
	return 0;
}

static int teardown(void **state)
{
	sh("rm -rf %s", tmp);
	return 0;
}

#define MAXMAP 16

/* A profile with one mapping (and one location) for each of n build ids, its
 * file /nonexistent/<file[i]>. */
static struct pd_pprof_profile *profile_with(size_t n, const char *const *bid,
                                             const char *const *file, const uint64_t *addr)
{
	const char *s[2 + 2 * MAXMAP + 2];
	size_t sl[sizeof(s) / sizeof(s[0])], ns = 0;
	s[ns++] = "";
	s[ns++] = "samples";
	s[ns++] = "count";
	struct pd_pprof_pmapping m[MAXMAP];
	struct pd_pprof_plocation loc[MAXMAP];
	struct pd_pprof_psample smp[MAXMAP];
	uint64_t ids[MAXMAP];
	int64_t vals[MAXMAP];
	assert_true(n <= MAXMAP);
	for (size_t i = 0; i < n; i++) {
		s[ns] = file[i];
		s[ns + 1] = bid[i];
		m[i] = (struct pd_pprof_pmapping){
		    .id = i + 1, .filename = (int64_t)ns, .build_id = (int64_t)ns + 1};
		ns += 2;
		loc[i] = (struct pd_pprof_plocation){
		    .id = i + 1, .mapping_id = i + 1, .address = addr[i]};
		ids[i] = i + 1;
		vals[i] = 1;
		smp[i] = (struct pd_pprof_psample){
		    .location_id = &ids[i], .nlocation = 1, .value = &vals[i], .nvalue = 1};
	}
	for (size_t i = 0; i < ns; i++)
		sl[i] = strlen(s[i]);
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_parts pp = {.strings = s,
	                            .string_len = sl,
	                            .nstrings = ns,
	                            .sample_type = &st,
	                            .nsample_type = 1,
	                            .sample = smp,
	                            .nsample = n,
	                            .mapping = m,
	                            .nmapping = n,
	                            .location = loc,
	                            .nlocation = n};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	if (pd_pprof_parts_build(&pp, &p, &err))
		fail_msg("building the test profile: %s", err.msg);
	return p;
}

/* A profile with one mapping (and one location) for each program in [from, to):
 * file addresses (the mappings start at 0). */
static struct pd_pprof_profile *profile_of(int from, int to)
{
	static char files[NPROG][64];
	const char *b[NPROG], *f[NPROG];
	uint64_t a[NPROG];
	size_t n = 0;
	for (int i = from; i < to; i++, n++) {
		snprintf(files[i], sizeof(files[i]), "/nonexistent/p%d", i);
		b[n] = bids[i];
		f[n] = files[i];
		a[n] = addrs[i];
	}
	return profile_with(n, b, f, a);
}

/* The name of location i's function in a symbolized profile. */
static void name_of(const struct pd_pprof_profile *p, size_t i, char *out, size_t cap)
{
	struct pd_pprof_parts pp;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_get(p, &pp, &err), 0);
	assert_true(i < pp.nlocation && pp.location[i].nline == 1);
	out[0] = 0;
	for (size_t j = 0; j < pp.nfunction; j++)
		if (pp.function[j].id == pp.location[i].line[0].function_id)
			snprintf(out, cap, "%s", pp.strings[pp.function[j].name]);
	pd_pprof_parts_fini(&pp);
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Symbolizes programs [from, to) in one call: each location named f<i>. */
static void symbolize(struct pd_symbolizer *s, int from, int to)
{
	struct pd_pprof_profile *p = profile_of(from, to), *out = NULL;
	struct pd_symbolize_result res;
	struct pd_err err = {0};
	if (pd_symbolizer_run(s, p, now_us() + 60 * 1000000LL, &out, &res, &err))
		fail_msg("pd_symbolizer_run: %s", err.msg);
	assert_non_null(out);
	if (res.resolved != (size_t)(to - from))
		fail_msg("programs %d to %d: %zu of %d resolved (%s)", from, to - 1, res.resolved,
		         to - from, res.missing);
	assert_int_equal(res.partial, 0);
	for (int i = from; i < to; i++) {
		char got[128], want[16];
		name_of(out, (size_t)(i - from), got, sizeof(got));
		snprintf(want, sizeof(want), "f%d", i);
		assert_string_equal(got, want);
	}
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
}

static void test_bounded(void **state)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/debug", tmp);
	const char *dirs[] = {dir};
	struct pd_symbolize_opts o;
	pd_symbolize_opts_init(&o);
	assert_int_equal(o.max_open_files, PD_SYMBOLIZE_DEFAULT_MAX_OPEN_FILES);
	o.debug_dirs = dirs;
	o.ndebug_dirs = 1;
	o.max_open_files = BOUND;
	struct pd_symbolizer *s = NULL;
	struct pd_err err = {0};
	int fds0 = count_fds();
	if (pd_symbolizer_create(&s, &o, &err))
		fail_msg("pd_symbolizer_create: %s", err.msg);
	struct pd_symbolizer_stats st;
	/* one build id after the other */
	for (int i = 0; i < NPROG; i++) {
		symbolize(s, i, i + 1);
		pd_symbolizer_get_stats(s, &st);
		assert_true(st.open_files <= BOUND);
		int fds = count_fds() - fds0;
		if (fds > BOUND)
			fail_msg("after %d build ids, %d more descriptors open (bound %d)", i + 1,
			         fds, BOUND);
	}
	assert_int_equal(st.fetches, NPROG);
	assert_int_equal(st.evictions, NPROG - BOUND);
	assert_int_equal(st.open_files, BOUND);
	/* all at once, new addresses (the cache holds the old ones): the first
	 * programs were closed and are opened again */
	for (int i = 0; i < NPROG; i++)
		addrs[i] += 2;
	symbolize(s, 0, NPROG);
	pd_symbolizer_get_stats(s, &st);
	assert_true(st.open_files <= BOUND);
	assert_true(count_fds() - fds0 <= BOUND);
	assert_int_equal(st.fetches, NPROG); /* not looked for again, only opened */
	assert_true(st.reopens >= NPROG - BOUND);
	assert_true(st.evictions >= 2 * NPROG - 2 * BOUND);
	pd_symbolizer_destroy(s);
	assert_int_equal(count_fds(), fds0);
}

/* No build id, and the mapped file is not here: nothing can say which debug
 * file it needs, even with a directory that holds the right one. */
static void test_no_build_id_no_file(void **state)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/debug", tmp);
	const char *dirs[] = {dir};
	struct pd_symbolize_opts o;
	pd_symbolize_opts_init(&o);
	o.debug_dirs = dirs;
	o.ndebug_dirs = 1;
	struct pd_symbolizer *s = NULL;
	struct pd_err err = {0};
	if (pd_symbolizer_create(&s, &o, &err))
		fail_msg("pd_symbolizer_create: %s", err.msg);
	char saved[160];
	snprintf(saved, sizeof(saved), "%s", bids[0]);
	bids[0][0] = 0;
	struct pd_pprof_profile *p = profile_of(0, 1), *out = NULL;
	snprintf(bids[0], sizeof(bids[0]), "%s", saved);
	struct pd_symbolize_result res;
	assert_int_equal(pd_symbolizer_run(s, p, now_us() + 60 * 1000000LL, &out, &res, &err), 0);
	assert_non_null(out);
	assert_int_equal(res.unresolved, 1);
	assert_int_equal(res.partial, 0);
	assert_non_null(strstr(res.missing, "/nonexistent/p0 (not found)"));
	char got[128], want[64];
	name_of(out, 0, got, sizeof(got));
	snprintf(want, sizeof(want), "p0+0x%llx", (unsigned long long)addrs[0]);
	assert_string_equal(got, want);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	pd_symbolizer_destroy(s);
}

/* n random build ids (40 hex digits) found nowhere, in one call that waits
 * for the workers to give up on them; returns how many stayed unresolved for
 * want_why. */
static size_t random_ids(struct pd_symbolizer *s, size_t n, const char *want_why)
{
	char bidbuf[MAXMAP][48], filebuf[MAXMAP][48];
	const char *b[MAXMAP], *f[MAXMAP];
	uint64_t a[MAXMAP];
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < 40; k++)
			bidbuf[i][k] = "0123456789abcdef"[rand() & 15];
		bidbuf[i][40] = 0;
		snprintf(filebuf[i], sizeof(filebuf[i]), "/nonexistent/r%zu", i);
		b[i] = bidbuf[i];
		f[i] = filebuf[i];
		a[i] = 0x1000 + i;
	}
	struct pd_pprof_profile *p = profile_with(n, b, f, a), *out = NULL;
	struct pd_symbolize_result res;
	struct pd_err err = {0};
	if (pd_symbolizer_run(s, p, now_us() + 60 * 1000000LL, &out, &res, &err))
		fail_msg("pd_symbolizer_run: %s", err.msg);
	assert_non_null(out);
	assert_int_equal(res.unresolved, n);
	size_t k = 0;
	for (const char *q = res.missing; (q = strstr(q, want_why)) != NULL; q++)
		k++;
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	return k;
}

static void test_many_build_ids(void **state)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/debug", tmp);
	const char *dirs[] = {dir};
	struct pd_symbolize_opts o;
	pd_symbolize_opts_init(&o);
	assert_int_equal(o.max_build_ids, PD_SYMBOLIZE_DEFAULT_MAX_BUILD_IDS);
	o.debug_dirs = dirs;
	o.ndebug_dirs = 1;
	o.max_build_ids = 8;
	o.max_open_files = BOUND;
	struct pd_symbolizer *s = NULL;
	struct pd_err err = {0};
	if (pd_symbolizer_create(&s, &o, &err))
		fail_msg("pd_symbolizer_create: %s", err.msg);
	struct pd_symbolizer_stats st;
	srand(35);
	symbolize(s, 0, 4);
	/* 1000 random build ids, five a profile */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(random_ids(s, 5, "(not found)"), 5);
		pd_symbolizer_get_stats(s, &st);
		if (st.build_ids > 8)
			fail_msg("after %d profiles, %llu build ids kept (bound 8)", i + 1,
			         (unsigned long long)st.build_ids);
	}
	assert_int_equal(st.build_ids, 8);
	assert_int_equal(st.build_id_evictions, 4 + 1000 - 8);
	assert_true(st.open_files <= BOUND);
	/* more in one profile than the bound: eight kept while the call runs,
	 * the other four have no room */
	assert_int_equal(random_ids(s, 12, "(too many build ids in use)"), 4);
	pd_symbolizer_get_stats(s, &st);
	assert_int_equal(st.build_ids, 8);
	/* the real ones come back (their debug files are looked for again) and
	 * resolve, all eight in one call */
	symbolize(s, 0, NPROG);
	pd_symbolizer_get_stats(s, &st);
	assert_int_equal(st.build_ids, 8);
	assert_true(st.open_files <= BOUND);
	pd_symbolizer_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_bounded),
	                                   cmocka_unit_test(test_no_build_id_no_file),
	                                   cmocka_unit_test(test_many_build_ids)};
	return cmocka_run_group_tests(tests, setup, teardown);
}
