/* test_symbolize.c: pkg/symbolize on real binaries compiled here: a C program
 * (gcc -g -O2, with inlined helpers) symbolized from a .build-id directory and
 * compared with what eu-addr2line -i -f prints; the same from a debuginfod
 * server only (Debian's debuginfod serving a directory), and from a server that
 * never answers (the call keeps its deadline and says partial); the disk cache
 * across a restart with no server; C++ and Rust names as go tool pprof shows
 * them; a Go binary against go tool addr2line; the backoff of a build id found
 * nowhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profd/pprof.h"
#include "profd/symbolize.h"
#include "profd/util.h"
#include "symbolize_int.h"

static char tmp[256];
static char bid[160];                 /* build id of prog */
static int64_t base = 0x555555554000; /* where the test's "process" mapped prog */

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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

/* The whole output of a command, malloc'd. */
static char *out_of(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	size_t k;
	while ((k = fread(b + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (cap - n < 2) {
			cap *= 2;
			b = realloc(b, cap);
		}
	}
	b[n] = 0;
	int rc = pclose(f);
	if (rc != 0)
		fail_msg("command failed (%d): %s", rc, cmd);
	return b;
}

/* ---- a profile of addresses in one mapping ---- */

static const char *const strs[] = {"", "samples", "count", "/nonexistent/bin/prog", NULL};

static struct pd_pprof_profile *make_profile(const char *build_id, const char *file,
                                             const uint64_t *addrs, size_t n, uint64_t start,
                                             uint64_t limit, uint64_t offset)
{
	const char *s[8];
	size_t sl[8], ns = 0;
	for (; strs[ns]; ns++)
		s[ns] = strs[ns];
	s[3] = file;
	s[ns++] = build_id;
	for (size_t i = 0; i < ns; i++)
		sl[i] = strlen(s[i]);
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_pmapping m = {.id = 1,
	                              .memory_start = start,
	                              .memory_limit = limit,
	                              .file_offset = offset,
	                              .filename = 3,
	                              .build_id = (int64_t)ns - 1};
	struct pd_pprof_plocation *loc = calloc(n, sizeof(*loc));
	struct pd_pprof_psample *smp = calloc(n, sizeof(*smp));
	uint64_t *ids = calloc(n, sizeof(*ids));
	int64_t *vals = calloc(n, sizeof(*vals));
	for (size_t i = 0; i < n; i++) {
		loc[i] =
		    (struct pd_pprof_plocation){.id = i + 1, .mapping_id = 1, .address = addrs[i]};
		ids[i] = i + 1;
		vals[i] = (int64_t)i + 1;
		smp[i] = (struct pd_pprof_psample){
		    .location_id = &ids[i], .nlocation = 1, .value = &vals[i], .nvalue = 1};
	}
	struct pd_pprof_parts pp = {.strings = s,
	                            .string_len = sl,
	                            .nstrings = ns,
	                            .sample_type = &st,
	                            .nsample_type = 1,
	                            .sample = smp,
	                            .nsample = n,
	                            .mapping = &m,
	                            .nmapping = 1,
	                            .location = loc,
	                            .nlocation = n};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	int rc = pd_pprof_parts_build(&pp, &p, &err);
	if (rc)
		fail_msg("building the test profile: %s", err.msg);
	free(loc);
	free(smp);
	free(ids);
	free(vals);
	return p;
}

/* prog's text segment as a process maps it: [base + vaddr, ...) at its offset */
static uint64_t text_vaddr, text_offset, text_size;

static struct pd_pprof_profile *prog_profile(const char *build_id, const char *file,
                                             const uint64_t *vaddrs, size_t n)
{
	uint64_t *a = calloc(n, sizeof(*a));
	for (size_t i = 0; i < n; i++)
		a[i] = (uint64_t)base + vaddrs[i];
	struct pd_pprof_profile *p =
	    make_profile(build_id, file, a, n, (uint64_t)base + text_vaddr,
	                 (uint64_t)base + text_vaddr + text_size, text_offset);
	free(a);
	return p;
}

/* ---- what a profile says about a location ---- */

struct frame {
	char name[4096], file[512];
	long line;
};

/* The frames of location i (innermost first) of a symbolized profile. */
static size_t frames_of(const struct pd_pprof_profile *p, size_t i, struct frame *fr, size_t max,
                        char *sys, size_t syscap)
{
	struct pd_pprof_parts pp;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_get(p, &pp, &err), 0);
	assert_true(i < pp.nlocation);
	const struct pd_pprof_plocation *l = &pp.location[i];
	size_t n = 0;
	for (size_t k = 0; k < l->nline && n < max; k++) {
		const struct pd_pprof_pfunction *f = NULL;
		for (size_t j = 0; j < pp.nfunction; j++)
			if (pp.function[j].id == l->line[k].function_id)
				f = &pp.function[j];
		assert_non_null(f);
		snprintf(fr[n].name, sizeof(fr[n].name), "%s", pp.strings[f->name]);
		snprintf(fr[n].file, sizeof(fr[n].file), "%s", pp.strings[f->filename]);
		if (k == 0 && sys)
			snprintf(sys, syscap, "%s", pp.strings[f->system_name]);
		fr[n].line = (long)l->line[k].line;
		n++;
	}
	pd_pprof_parts_fini(&pp);
	return n;
}

/* ---- the fixture: prog compiled, its debug file in a .build-id tree ---- */

static void read_text_segment(const char *exe)
{
	char *o =
	    out_of("readelf -lW %s | awk '$1==\"LOAD\" && /R E|RWE/ {print $2, $3, $5}'", exe);
	unsigned long long off, va, sz;
	assert_int_equal(sscanf(o, "%llx %llx %llx", &off, &va, &sz), 3);
	text_offset = off;
	text_vaddr = va;
	text_size = sz;
	free(o);
}

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "/tmp/test_symbolize.XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	sh("gcc -g -O2 -Wl,--build-id -o %s/prog %s/prog.c", tmp, PD_SYMBOLIZE_TESTS);
	sh("objcopy --only-keep-debug %s/prog %s/prog.debug", tmp, tmp);
	sh("strip -o %s/prog.stripped %s/prog", tmp, tmp);
	char *o = out_of("readelf -n %s/prog | awk '/Build ID/ {print $3}'", tmp);
	o[strcspn(o, "\n")] = 0;
	snprintf(bid, sizeof(bid), "%s", o);
	free(o);
	assert_true(strlen(bid) >= 16);
	/* our reader agrees with readelf's */
	char hex[160];
	char path[512];
	snprintf(path, sizeof(path), "%s/prog.stripped", tmp);
	assert_int_equal(sym_elf_build_id(path, hex, sizeof(hex)), 0);
	assert_string_equal(hex, bid);
	sh("mkdir -p %s/debug/.build-id/%.2s && cp %s/prog.debug %s/debug/.build-id/%.2s/%s.debug",
	   tmp, bid, tmp, tmp, bid, bid + 2);
	read_text_segment(path);
	return 0;
}

static int teardown(void **state)
{
	sh("rm -rf %s", tmp);
	return 0;
}

/* Every 3rd byte of work and other, as file addresses. */
static size_t prog_addresses(uint64_t *a, size_t max)
{
	char *o = out_of("nm -S %s/prog | awk '$4==\"work\" || $4==\"other\" {print $1, $2}'", tmp);
	size_t n = 0;
	char *line = o;
	unsigned long long st, sz;
	while (sscanf(line, "%llx %llx", &st, &sz) == 2) {
		for (uint64_t x = st; x < st + sz && n < max; x += 3)
			a[n++] = x;
		char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	free(o);
	return n;
}

struct ref {
	size_t n;
	struct frame f[8];
};

/* eu-addr2line -a -i -f for the addresses: per address, frames innermost first. */
static void reference(const uint64_t *a, size_t n, struct ref *ref)
{
	struct pd_buf cmd;
	pd_buf_init(&cmd, 0);
	pd_buf_printf(&cmd, "eu-addr2line -a -i -f -e %s/prog", tmp);
	for (size_t i = 0; i < n; i++)
		pd_buf_printf(&cmd, " 0x%llx", (unsigned long long)a[i]);
	pd_buf_append(&cmd, "", 1);
	char *o = out_of("%s", (char *)cmd.data);
	pd_buf_fini(&cmd);
	long cur = -1;
	char *save = NULL;
	char *fn = NULL;
	for (char *ln = strtok_r(o, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		if (strncmp(ln, "0x", 2) == 0) {
			cur++;
			assert_true(cur < (long)n);
			ref[cur].n = 0;
			fn = NULL;
			continue;
		}
		if (!fn) {
			fn = ln;
			continue;
		}
		/* "name inlined at file:line:col in caller", then "file:line:col" */
		struct frame *f = &ref[cur].f[ref[cur].n++];
		char *in = strstr(fn, " inlined at ");
		if (in)
			*in = 0;
		snprintf(f->name, sizeof(f->name), "%s", fn);
		char *c1 = strrchr(ln, ':');
		*c1 = 0;
		char *c2 = strrchr(ln, ':');
		*c2 = 0;
		f->line = atol(c2 + 1);
		snprintf(f->file, sizeof(f->file), "%s", ln);
		fn = NULL;
	}
	assert_int_equal(cur + 1, (long)n);
	free(o);
}

static void check_against_reference(const struct pd_pprof_profile *p, const uint64_t *a, size_t n,
                                    size_t *inlined)
{
	struct ref *ref = calloc(n, sizeof(*ref));
	reference(a, n, ref);
	*inlined = 0;
	for (size_t i = 0; i < n; i++) {
		struct frame fr[8];
		size_t k = frames_of(p, i, fr, 8, NULL, 0);
		if (k != ref[i].n)
			fail_msg("address 0x%llx: %zu frames, eu-addr2line has %zu (first %s)",
			         (unsigned long long)a[i], k, ref[i].n, ref[i].f[0].name);
		for (size_t j = 0; j < k; j++) {
			assert_string_equal(fr[j].name, ref[i].f[j].name);
			assert_string_equal(fr[j].file, ref[i].f[j].file);
			if (fr[j].line != ref[i].f[j].line)
				fail_msg(
				    "address 0x%llx frame %zu (%s): line %ld, eu-addr2line %ld",
				    (unsigned long long)a[i], j, fr[j].name, fr[j].line,
				    ref[i].f[j].line);
		}
		if (k > 1)
			(*inlined)++;
	}
	free(ref);
}

static struct pd_symbolizer *start(const char *const *dirs, size_t ndirs, const char *urls,
                                   const char *cache, int mapping_files)
{
	struct pd_symbolize_opts o;
	pd_symbolize_opts_init(&o);
	o.debug_dirs = dirs;
	o.ndebug_dirs = ndirs;
	o.debuginfod_urls = urls;
	o.cache_dir = cache;
	o.use_mapping_files = mapping_files;
	o.download_timeout_ms = 20000;
	struct pd_symbolizer *s = NULL;
	struct pd_err err = {0};
	if (pd_symbolizer_create(&s, &o, &err))
		fail_msg("pd_symbolizer_create: %s", err.msg);
	return s;
}

static struct pd_pprof_profile *run(struct pd_symbolizer *s, const struct pd_pprof_profile *p,
                                    int64_t wait_ms, struct pd_symbolize_result *res)
{
	struct pd_pprof_profile *out = NULL;
	struct pd_err err = {0};
	int64_t dl = wait_ms ? now_us() + wait_ms * 1000 : 0;
	if (pd_symbolizer_run(s, p, dl, &out, res, &err))
		fail_msg("pd_symbolizer_run: %s", err.msg);
	assert_non_null(out);
	return out;
}

/* From a .build-id directory, the binary absent: eu-addr2line's frames. */
static void test_build_id_dir(void **state)
{
	uint64_t a[512];
	size_t n = prog_addresses(a, 512);
	assert_true(n > 20);
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/debug", tmp);
	const char *dirs[] = {"/nonexistent/debug", dir};
	struct pd_symbolizer *s = start(dirs, 2, NULL, NULL, 1);
	struct pd_pprof_profile *p = prog_profile(bid, "/nonexistent/bin/prog", a, n);
	struct pd_symbolize_result res;
	struct pd_pprof_profile *out = run(s, p, 10000, &res);
	assert_int_equal(res.locations, n);
	assert_int_equal(res.resolved, n);
	assert_int_equal(res.partial, 0);
	size_t inlined;
	check_against_reference(out, a, n, &inlined);
	assert_true(inlined > 0); /* mix and step show as inlined frames */
	/* the mapping says what it has now */
	struct pd_pprof_parts pp;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_get(out, &pp, &err), 0);
	assert_true(pp.mapping[0].has_functions && pp.mapping[0].has_filenames &&
	            pp.mapping[0].has_line_numbers && pp.mapping[0].has_inline_frames);
	pd_pprof_parts_fini(&pp);
	/* a second call is answered from memory */
	struct pd_symbolizer_stats st;
	pd_symbolizer_get_stats(s, &st);
	assert_int_equal(st.misses, n);
	pd_pprof_destroy(out);
	out = run(s, p, 0, &res);
	assert_int_equal(res.resolved, n);
	pd_symbolizer_get_stats(s, &st);
	assert_int_equal(st.hits, n);
	assert_int_equal(st.fetches, 1);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	pd_symbolizer_destroy(s);
}

/* Addresses left unread at the deadline go to a worker: the call is partial,
 * and a later one finds them in the cache. */
static void test_deferred(void **state)
{
	uint64_t a[512];
	size_t n = prog_addresses(a, 512);
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/debug", tmp);
	const char *dirs[] = {dir};
	struct pd_symbolizer *s = start(dirs, 1, NULL, NULL, 1);
	struct pd_symbolize_result res;
	/* the debug file opened for one address */
	struct pd_pprof_profile *p = prog_profile(bid, "/nonexistent/bin/prog", a, 1);
	struct pd_pprof_profile *out = run(s, p, 10000, &res);
	assert_int_equal(res.resolved, 1);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	/* the rest with no time to read them */
	p = prog_profile(bid, "/nonexistent/bin/prog", a, n);
	out = run(s, p, 0, &res);
	assert_int_equal(res.resolved, 1);
	assert_int_equal(res.unresolved, n - 1);
	assert_int_equal(res.partial, 1);
	assert_non_null(strstr(res.missing, "still being resolved"));
	pd_pprof_destroy(out);
	struct pd_symbolizer_stats st;
	int64_t end = now_us() + 30 * 1000000LL;
	do {
		pd_symbolizer_get_stats(s, &st);
		if (st.cache_entries == n)
			break;
		usleep(10 * 1000);
	} while (now_us() < end);
	assert_int_equal(st.cache_entries, n);
	out = run(s, p, 0, &res);
	assert_int_equal(res.resolved, n);
	assert_int_equal(res.partial, 0);
	size_t inlined;
	check_against_reference(out, a, n, &inlined);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	pd_symbolizer_destroy(s);
}

/* The mapping's own file (unstripped, on this machine) with no build id in the
 * profile, as gperftools writes: the build id is read from the file. */
static void test_mapping_file(void **state)
{
	uint64_t a[512];
	size_t n = prog_addresses(a, 512);
	char file[300];
	snprintf(file, sizeof(file), "%s/prog", tmp);
	struct pd_symbolizer *s = start(NULL, 0, NULL, NULL, 1);
	struct pd_pprof_profile *p = prog_profile("", file, a, n);
	struct pd_symbolize_result res;
	struct pd_pprof_profile *out = run(s, p, 10000, &res);
	assert_int_equal(res.resolved, n);
	size_t inlined;
	check_against_reference(out, a, n, &inlined);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	/* a file whose build id differs is not used */
	p = prog_profile("00112233445566778899aabbccddeeff00112233", file, a, 4);
	out = run(s, p, 10000, &res);
	assert_int_equal(res.resolved, 0);
	assert_int_equal(res.unresolved, 4);
	assert_int_equal(res.partial, 0);
	struct frame fr[2];
	assert_int_equal(frames_of(out, 0, fr, 2, NULL, 0), 1);
	char want[64];
	snprintf(want, sizeof(want), "prog+0x%llx",
	         (unsigned long long)(a[0] - text_vaddr + text_offset));
	assert_string_equal(fr[0].name, want);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	pd_symbolizer_destroy(s);
}

/* A build id found nowhere: tried once, then not again before its backoff. */
static void test_backoff(void **state)
{
	struct pd_symbolizer *s = start(NULL, 0, NULL, NULL, 1);
	uint64_t a[1] = {0x1234};
	struct pd_pprof_profile *p =
	    prog_profile("ffeeddccbbaa99887766554433221100ffeeddcc", "/nonexistent/libx.so", a, 1);
	struct pd_symbolize_result res;
	struct pd_pprof_profile *out = run(s, p, 5000, &res);
	assert_int_equal(res.unresolved, 1);
	assert_non_null(strstr(res.missing, "not found"));
	pd_pprof_destroy(out);
	for (int i = 0; i < 5; i++) {
		out = run(s, p, 1000, &res);
		pd_pprof_destroy(out);
	}
	struct pd_symbolizer_stats st;
	pd_symbolizer_get_stats(s, &st);
	assert_int_equal(st.failures, 1);
	pd_pprof_destroy(p);
	pd_symbolizer_destroy(s);
}

/* ---- debuginfod ---- */

/* A loopback port nothing is bound to, below the kernel's ephemeral range: a port
 * bind(0) handed out may go at once to an outgoing connection of a test running
 * beside this one, and debuginfod would then fail to bind it (as
 * tests/support/ports.sh explains). */
static int free_port(void)
{
	int lo = 32768;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f) {
		if (fscanf(f, "%d", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	if (lo > 65536 || lo < 2048)
		lo = 32768;
	int top = lo - 1, bottom = top - 12000 < 1024 ? 1024 : top - 12000;
	srand((unsigned)(getpid() ^ now_us()));
	for (int i = 0; i < 200; i++) {
		int p = bottom + rand() % (top - bottom + 1);
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fd >= 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
		if (ok)
			return p;
	}
	fail_msg("no free loopback port below %d", lo);
	return -1;
}

static pid_t spawn(char *const argv[], int *stdin_fd, int *stdout_fd)
{
	int in[2], out[2];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*stdin_fd = in[1];
	*stdout_fd = out[0];
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGTERM);
	int st;
	waitpid(pid, &st, 0);
}

/* Starts debuginfod on dir and waits (at most 60 s) until it serves bid. */
static pid_t start_debuginfod(const char *dir, int *port, int *fds)
{
	*port = free_port();
	char p[16], db[300];
	snprintf(p, sizeof(p), "%d", *port);
	snprintf(db, sizeof(db), "%s/debuginfod-%d.sqlite", tmp, *port);
	char *argv[] = {"debuginfod", "-F", (char *)dir, "-p", p,   "-d",
	                db,           "-t", "1",         "-g", "0", NULL};
	pid_t pid = spawn(argv, &fds[0], &fds[1]);
	int64_t end = now_us() + 60 * 1000000LL;
	for (;;) {
		char cmd[512];
		snprintf(cmd, sizeof(cmd),
		         "curl -s -o /dev/null -w '%%{http_code}' "
		         "http://127.0.0.1:%d/buildid/%s/debuginfo 2>/dev/null",
		         *port, bid);
		char *o = out_of("%s || true", cmd);
		int ok = strcmp(o, "200") == 0;
		free(o);
		if (ok)
			break;
		if (now_us() > end)
			fail_msg("debuginfod on port %d did not index %s within 60 s", *port, dir);
		usleep(100 * 1000);
	}
	return pid;
}

static void test_debuginfod(void **state)
{
	char served[300], cache[300], url[64], client[300];
	snprintf(served, sizeof(served), "%s/served", tmp);
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	snprintf(client, sizeof(client), "%s/client", tmp);
	sh("mkdir -p %s && cp %s/prog %s/", served, tmp, served);
	setenv("DEBUGINFOD_CACHE_PATH", client, 1);
	int port, fds[2];
	pid_t pid = start_debuginfod(served, &port, fds);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);

	uint64_t a[512];
	size_t n = prog_addresses(a, 512);
	struct pd_pprof_profile *p = prog_profile(bid, "/nonexistent/bin/prog", a, n);
	/* no directory, the mapping's file absent: debuginfod only */
	struct pd_symbolizer *s = start(NULL, 0, url, cache, 1);
	struct pd_symbolize_result res;
	struct pd_pprof_profile *out = run(s, p, 30000, &res);
	assert_int_equal(res.resolved, n);
	size_t inlined;
	check_against_reference(out, a, n, &inlined);
	struct pd_symbolizer_stats st;
	pd_symbolizer_get_stats(s, &st);
	assert_int_equal(st.downloads, 1);
	pd_pprof_destroy(out);
	pd_symbolizer_destroy(s);
	stop(pid);
	close(fds[0]);
	close(fds[1]);

	/* a restart with the server gone (and its client cache removed): the disk
	 * cache answers, without waiting and without a fetch */
	sh("rm -rf %s %s/debuginfod", client, cache);
	s = start(NULL, 0, url, cache, 1);
	out = run(s, p, 0, &res);
	assert_int_equal(res.resolved, n);
	assert_int_equal(res.partial, 0);
	check_against_reference(out, a, n, &inlined);
	pd_symbolizer_get_stats(s, &st);
	assert_int_equal(st.fetches, 0);
	assert_int_equal(st.hits, n);
	pd_pprof_destroy(out);
	pd_symbolizer_destroy(s);
	pd_pprof_destroy(p);
}

/* A debuginfod that never answers: the call returns by its deadline, partial,
 * with <binary>+0x<offset> names. */
static void test_debuginfod_hung(void **state)
{
	char script[300], client[300];
	snprintf(script, sizeof(script), "%s/hung_server.py", PD_SYMBOLIZE_TESTS);
	snprintf(client, sizeof(client), "%s/client-hung", tmp);
	setenv("DEBUGINFOD_CACHE_PATH", client, 1);
	char *argv[] = {"python3", script, NULL};
	int fds[2];
	pid_t pid = spawn(argv, &fds[0], &fds[1]);
	char buf[32] = {0};
	ssize_t k = read(fds[1], buf, sizeof(buf) - 1);
	assert_true(k > 0);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", atoi(buf));
	uint64_t a[3] = {text_vaddr + 0x10, text_vaddr + 0x20, text_vaddr + 0x30};
	struct pd_pprof_profile *p = prog_profile(bid, "/nonexistent/bin/prog", a, 3);
	struct pd_symbolizer *s = start(NULL, 0, url, NULL, 1);
	struct pd_symbolize_result res;
	int64_t t0 = now_us();
	struct pd_pprof_profile *out = run(s, p, 1000, &res);
	int64_t took = now_us() - t0;
	assert_true(took >= 900 * 1000);
	assert_true(took < 1500 * 1000);
	assert_int_equal(res.partial, 1);
	assert_int_equal(res.unresolved, 3);
	assert_non_null(strstr(res.missing, "still being fetched"));
	struct frame fr[2];
	assert_int_equal(frames_of(out, 1, fr, 2, NULL, 0), 1);
	char want[64];
	snprintf(want, sizeof(want), "prog+0x%llx",
	         (unsigned long long)(a[1] - text_vaddr + text_offset));
	assert_string_equal(fr[0].name, want);
	/* a second query does not wait on the first one's download past its own deadline */
	pd_pprof_destroy(out);
	t0 = now_us();
	out = run(s, p, 200, &res);
	took = now_us() - t0;
	assert_true(took < 700 * 1000);
	assert_int_equal(res.partial, 1);
	struct pd_symbolizer_stats st;
	pd_symbolizer_get_stats(s, &st);
	assert_int_equal(st.in_flight, 1);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	t0 = now_us();
	pd_symbolizer_destroy(s); /* abandons the download */
	assert_true(now_us() - t0 < 5 * 1000000LL);
	close(fds[0]);
	close(fds[1]);
	stop(pid);
}

/* ---- demangling ---- */

/* Symbolizes the named functions of exe from the file itself and checks that
 * each name is what go tool pprof shows for its mangled system name. */
static void check_names(const char *exe, const char *const *want, size_t nwant,
                        size_t max_differ_percent)
{
	char *o = out_of("nm %s | awk '$2==\"T\" || $2==\"t\" || $2==\"W\" {print $1, $3}'", exe);
	uint64_t a[2048];
	size_t n = 0;
	char *save = NULL;
	for (char *ln = strtok_r(o, "\n", &save); ln && n < 2048;
	     ln = strtok_r(NULL, "\n", &save)) {
		unsigned long long x;
		char name[1024];
		if (sscanf(ln, "%llx %1023s", &x, name) == 2 &&
		    (strncmp(name, "_Z", 2) == 0 || strncmp(name, "_R", 2) == 0))
			a[n++] = x;
	}
	free(o);
	assert_true(n > 0);
	uint64_t *pa = calloc(n, sizeof(*pa));
	for (size_t i = 0; i < n; i++)
		pa[i] = a[i];
	struct pd_pprof_profile *p = make_profile("", exe, pa, n, 0, 0, 0);
	free(pa);
	struct pd_symbolizer *s = start(NULL, 0, NULL, NULL, 1);
	struct pd_symbolize_result res;
	struct pd_pprof_profile *out = run(s, p, 20000, &res);
	/* go tool pprof's names: the profile with each function's name set to its
	 * (mangled) system name, which pprof demangles */
	struct pd_pprof_parts pp;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_parts_get(out, &pp, &err), 0);
	for (size_t i = 0; i < pp.nfunction; i++)
		pp.function[i].name = pp.function[i].system_name;
	uint8_t *bytes;
	size_t len;
	assert_int_equal(pd_pprof_parts_encode(&pp, &bytes, &len, &err), 0);
	char path[300];
	snprintf(path, sizeof(path), "%s/names.pb", tmp);
	assert_int_equal(pd_file_write(path, bytes, len, &err), 0);
	free(bytes);
	char *top = out_of(
	    "go tool pprof -top -nodecount=100000 -nodefraction=0 -edgefraction=0 %s 2>/dev/null | "
	    "awk 'f {sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, \"\"); print} "
	    "/flat%%/ {f=1}'",
	    path);
	/* every outermost frame's name is among go tool pprof's, and the ones asked for are there
	 */
	size_t checked = 0, differ = 0;
	for (size_t i = 0; i < pp.nlocation; i++) {
		struct frame fr[8];
		char sys[1024];
		size_t k = frames_of(out, i, fr, 8, sys, sizeof(sys));
		assert_true(k >= 1);
		char needle[4200];
		snprintf(needle, sizeof(needle), "\n%s\n", fr[k - 1].name);
		char *hay = malloc(strlen(top) + 2);
		sprintf(hay, "\n%s", top);
		if (!strstr(hay, needle)) {
			if (!max_differ_percent)
				fail_msg(
				    "%s (system name %s) is not among go tool pprof's names:\n%s",
				    fr[k - 1].name, sys, top);
			print_message("differs from go tool pprof: %s (system name %s)\n",
			              fr[k - 1].name, sys);
			differ++;
		}
		free(hay);
		checked++;
	}
	if (differ * 100 > checked * max_differ_percent)
		fail_msg("%zu of %zu names differ from go tool pprof's", differ, checked);
	for (size_t i = 0; i < nwant; i++) {
		char needle[600];
		snprintf(needle, sizeof(needle), "%s\n", want[i]);
		if (!strstr(top, needle))
			fail_msg("%s is not shown:\n%s", want[i], top);
	}
	assert_true(checked > 0);
	free(top);
	pd_pprof_parts_fini(&pp);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	pd_symbolizer_destroy(s);
}

static void test_cplusplus_names(void **state)
{
	sh("g++ -g -O2 -Wl,--build-id -o %s/progxx %s/prog.cc", tmp, PD_SYMBOLIZE_TESTS);
	char exe[300];
	snprintf(exe, sizeof(exe), "%s/progxx", tmp);
	const char *want[] = {"shapes::total", "shapes::Circle::area", "shapes::Box::area",
	                      "shapes::Circle::operator<"};
	check_names(exe, want, 4, 0);
}

/* rustc's default mangling and v0. The program's own names are go tool pprof's;
 * of the standard library's (thousands), go tool pprof's demangler writes a
 * few differently (it drops a unit type among generic arguments): at most 2%. */
static void test_rust_names(void **state)
{
	const char *const flags[] = {"", "-C symbol-mangling-version=v0"};
	const char *want[2][2] = {{"prog::compute", "prog::geometry::Square::area"},
	                          {"prog::compute", "<prog::geometry::Square>::area"}};
	for (int i = 0; i < 2; i++) {
		sh("rustc -g -C opt-level=1 %s %s/prog.rs -o %s/progrs-%d", flags[i],
		   PD_SYMBOLIZE_TESTS, tmp, i);
		char exe[300];
		snprintf(exe, sizeof(exe), "%s/progrs-%d", tmp, i);
		check_names(exe, want[i], 2, 2);
	}
}

/* A Go binary (no .debug_aranges, compressed DWARF): the function go tool
 * addr2line names is the outermost frame, its file and line the innermost's. */
static void test_go_binary(void **state)
{
	sh("mkdir -p %s/goprog && cp %s/prog.go %s/goprog/main.go && "
	   "printf 'module prog\\ngo 1.19\\n' >%s/goprog/go.mod && cd %s/goprog && "
	   "GOCACHE=%s/gocache GOFLAGS=-mod=mod go build -o prog .",
	   tmp, PD_SYMBOLIZE_TESTS, tmp, tmp, tmp, tmp);
	char exe[300];
	snprintf(exe, sizeof(exe), "%s/goprog/prog", tmp);
	char *o =
	    out_of("nm -S %s | awk '$4==\"main.work\" || $4==\"main.main\" {print $1, $2}'", exe);
	uint64_t a[512];
	size_t n = 0;
	unsigned long long st, sz;
	for (char *line = o; sscanf(line, "%llx %llx", &st, &sz) == 2;) {
		for (uint64_t x = st; x < st + sz && n < 512; x += 3)
			a[n++] = x;
		char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	free(o);
	assert_true(n > 10);
	/* as Go's runtime records its text mapping: not position-independent */
	struct pd_pprof_profile *p = make_profile("", exe, a, n, 0x400000, 0x600000, 0);
	struct pd_symbolizer *s = start(NULL, 0, NULL, NULL, 1);
	struct pd_symbolize_result res;
	struct pd_pprof_profile *out = run(s, p, 20000, &res);
	assert_int_equal(res.resolved, n);
	struct pd_buf in;
	pd_buf_init(&in, 0);
	for (size_t i = 0; i < n; i++)
		pd_buf_printf(&in, "0x%llx\n", (unsigned long long)a[i]);
	char path[400];
	snprintf(path, sizeof(path), "%s/goprog/addrs", tmp);
	struct pd_err err = {0};
	assert_int_equal(pd_file_write(path, in.data, in.len, &err), 0);
	pd_buf_fini(&in);
	char *ref = out_of("go tool addr2line %s <%s", exe, path);
	char *save = NULL, *fn = strtok_r(ref, "\n", &save);
	size_t inlined = 0;
	for (size_t i = 0; i < n; i++) {
		char *loc = strtok_r(NULL, "\n", &save);
		assert_non_null(fn);
		assert_non_null(loc);
		struct frame fr[8];
		size_t k = frames_of(out, i, fr, 8, NULL, 0);
		assert_true(k >= 1);
		char mine[700];
		snprintf(mine, sizeof(mine), "%s:%ld", fr[0].file, fr[0].line);
		if (strcmp(fr[k - 1].name, fn) != 0 || strcmp(mine, loc) != 0)
			fail_msg("0x%llx: %s %s, go tool addr2line: %s %s",
			         (unsigned long long)a[i], fr[k - 1].name, mine, fn, loc);
		if (k > 1)
			inlined++;
		fn = strtok_r(NULL, "\n", &save);
	}
	assert_true(inlined > 0); /* main.mix, inlined into main.work */
	free(ref);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	pd_symbolizer_destroy(s);
}

/* ---- the disk cache's parser ---- */

static int count_rec(void *ctx, uint64_t addr, const struct pd_symbolize_frame *f, size_t n)
{
	(*(size_t *)ctx)++;
	return 0;
}

static void test_cache_file(void **state)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/cachefile", tmp);
	sh("mkdir -p %s", dir);
	struct sym_result r = {0};
	assert_int_equal(sym_result_add(&r, "f", "_Zf", "/a.c", 3, 1), 0);
	assert_int_equal(sym_result_add(&r, "g", "g", "/b.c", 9, 7), 0);
	struct pd_err err = {0};
	for (uint64_t a = 1; a <= 3; a++)
		assert_int_equal(sym_cache_append(dir, "abcd", a, &r, &err), 0);
	sym_result_fini(&r);
	char path[400];
	snprintf(path, sizeof(path), "%s/abcd.symcache", dir);
	uint8_t *buf;
	size_t len;
	assert_int_equal(pd_file_read(path, 1 << 20, &buf, &len, &err), 0);
	size_t n = 0;
	assert_int_equal(pd_symbolize_cache_parse(buf, len, count_rec, &n, &err), 0);
	assert_int_equal(n, 3);
	/* a torn tail drops the last record only */
	n = 0;
	assert_int_equal(pd_symbolize_cache_parse(buf, len - 3, count_rec, &n, &err), 0);
	assert_int_equal(n, 2);
	/* a flipped byte in the second record ends the file there */
	buf[len / 2] ^= 0x40;
	n = 0;
	assert_int_equal(pd_symbolize_cache_parse(buf, len, count_rec, &n, &err), 0);
	assert_int_equal(n, 1);
	buf[4] = 9;
	assert_int_equal(pd_symbolize_cache_parse(buf, len, count_rec, &n, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "version 9"));
	free(buf);
	/* a torn tail on disk is cut off when read, and later appends are read back */
	assert_int_equal(truncate(path, (off_t)(len - 3)), 0);
	n = 0;
	assert_int_equal(sym_cache_load(dir, "abcd", 1 << 20, count_rec, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(sym_result_add(&r, "h", "h", "/c.c", 1, 1), 0);
	assert_int_equal(sym_cache_append(dir, "abcd", 4, &r, &err), 0);
	sym_result_fini(&r);
	n = 0;
	assert_int_equal(sym_cache_load(dir, "abcd", 1 << 20, count_rec, &n, &err), 0);
	assert_int_equal(n, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_build_id_dir), cmocka_unit_test(test_deferred),
	    cmocka_unit_test(test_mapping_file), cmocka_unit_test(test_backoff),
	    cmocka_unit_test(test_cache_file),   cmocka_unit_test(test_cplusplus_names),
	    cmocka_unit_test(test_rust_names),   cmocka_unit_test(test_go_binary),
	    cmocka_unit_test(test_debuginfod),   cmocka_unit_test(test_debuginfod_hung),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
