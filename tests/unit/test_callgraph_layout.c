/* test_callgraph_layout.c: report=svg's Graphviz layouts in child processes
 * (pkg/api/callgraph.c): a layout gives the SVG of its own graph whatever ran
 * before it, one that takes too long is killed at its deadline with a clear
 * result while other layouts keep running, one over its memory limit fails named
 * so, and what Graphviz prints comes back
 * to the server, which logs it escaped, never as lines of its own. The child is a
 * program executed afresh (the built profd, or here a probe script): it gets the
 * graph on stdin and fds 0 to 3 only, its limits before its input, no signal
 * blocked or ignored, and layouts started while other threads allocate all
 * finish. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "api_int.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct pd_api_opts opts(int64_t timeout_ms)
{
	struct pd_api_opts o;
	pd_api_opts_init(&o);
	o.callgraph_layout_exe = PD_PROFD_EXE;
	o.callgraph_timeout_ms = timeout_ms;
	return o;
}

/* A graph no layout finishes quickly: n nodes and m pseudo-random edges. */
static char *dense_dot(size_t n, size_t m)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_buf_printf(&b, "digraph \"dense\" {\n"), 0);
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < m; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		assert_int_equal(pd_buf_printf(&b, "N%llu -> N%llu [label=\"%zu\"]\n",
		                               (unsigned long long)(x % n),
		                               (unsigned long long)((x >> 20) % n), i),
		                 0);
	}
	assert_int_equal(pd_buf_append(&b, "}\n", 3), 0);
	return (char *)pd_buf_steal(&b, NULL);
}

static int layout(const struct pd_api_opts *o, const char *dot, struct pd_buf *svg, char *msgs,
                  size_t msize)
{
	char how[128];
	pd_buf_init(svg, 0);
	int r = api_callgraph_layout(o, dot, svg, msgs, msize, how, sizeof(how));
	assert_int_equal(pd_buf_append(svg, "", 1), 0); /* a NUL after the SVG, for strstr */
	svg->len--;
	if (r != API_CG_OK)
		print_message("layout: %s: %s\n", api_callgraph_results[r], how);
	return r;
}

/* Runs fn with stderr sent to a file; returns what was written (malloc'd). */
static char *stderr_of(void (*fn)(void *), void *arg)
{
	char path[] = "/tmp/pd_cg_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	fflush(stderr);
	int saved = dup(2);
	assert_true(dup2(fd, 2) >= 0);
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	off_t n = lseek(fd, 0, SEEK_END);
	char *out = calloc(1, (size_t)n + 1);
	assert_true(pread(fd, out, (size_t)n, 0) == (ssize_t)n);
	close(fd);
	unlink(path);
	return out;
}

struct slow {
	int result;
	int done; /* atomic */
	int64_t took_ms;
};

static void *slow_layout(void *arg)
{
	struct slow *s = arg;
	/* a deadline far beyond what the quick layout beside it needs, even on a
	 * loaded machine */
	struct pd_api_opts o = opts(20000);
	/* slow yet small: about 200 MiB at 10s in a release build, where 5000 edges
	 * pass the 1 GiB default within 2s and end as a memory failure */
	char *dot = dense_dot(1000, 2000);
	struct pd_buf svg;
	char msgs[512];
	int64_t t0 = now_ms();
	s->result = layout(&o, dot, &svg, msgs, sizeof(msgs));
	s->took_ms = now_ms() - t0;
	__atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
	pd_buf_fini(&svg);
	free(dot);
	return NULL;
}

/* A layout over its deadline is killed and named a timeout (this graph takes
 * minutes), and while it runs another layout is answered: nothing serialises them. */
static void test_timeout(void **state)
{
	(void)state;
	struct slow s = {0};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, slow_layout, &s), 0);
	struct pd_api_opts o = opts(60000);
	struct pd_buf svg;
	char msgs[512];
	assert_int_equal(layout(&o, "digraph { quick -> answer }", &svg, msgs, sizeof(msgs)),
	                 API_CG_OK);
	assert_non_null(strstr((const char *)svg.data, ">quick</text>"));
	assert_false(__atomic_load_n(&s.done, __ATOMIC_SEQ_CST));
	pd_buf_fini(&svg);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(s.result, API_CG_TIMEOUT);
	assert_true(s.took_ms >= 20000);

	/* the CPU-time limit is the deadline rounded up to seconds: a short deadline
	 * ends it by the clock, with the error naming it */
	o = opts(300);
	char *dot = dense_dot(1000, 5000);
	char how[128];
	pd_buf_init(&svg, 0);
	int64_t t0 = now_ms();
	assert_int_equal(api_callgraph_layout(&o, dot, &svg, msgs, sizeof(msgs), how, sizeof(how)),
	                 API_CG_TIMEOUT);
	assert_true(now_ms() - t0 >= 300);
	assert_string_equal(how, "took longer than 300 ms");
	assert_int_equal(svg.len, 0);
	pd_buf_fini(&svg);
	free(dot);
}

/* A graph that does not parse (an attacker's, cut inside a string) leaves
 * nothing for the next layout: that one draws its own graph alone. */
static void test_no_state_left(void **state)
{
	(void)state;
	struct pd_api_opts o = opts(60000);
	struct pd_buf svg;
	char msgs[512];
	static const char *const bad[] = {
	    "digraph { attacker [URL=\"javascript:alert(1)\" label=\"stolen",
	    "digraph { attacker -> x [label=<<b>stolen</b>",
	    "digraph { attacker; subgraph { \"stolen\\",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(layout(&o, bad[i], &svg, msgs, sizeof(msgs)), API_CG_FAILED);
		assert_non_null(strstr(msgs, "syntax error"));
		pd_buf_fini(&svg);
		assert_int_equal(
		    layout(&o, "digraph \"mine\" { good -> answer }", &svg, msgs, sizeof(msgs)),
		    API_CG_OK);
		const char *text = (const char *)svg.data;
		assert_non_null(strstr(text, ">good</text>"));
		assert_non_null(strstr(text, "<title>mine</title>"));
		assert_null(strstr(text, "attacker"));
		assert_null(strstr(text, "stolen"));
		assert_null(strstr(text, "javascript"));
		pd_buf_fini(&svg);
	}
}

struct warn_run {
	const char *dot;
	char msgs[1024];
	int result;
};

static void run_warn(void *arg)
{
	struct warn_run *w = arg;
	struct pd_api_opts o = opts(60000);
	struct pd_buf svg;
	w->result = layout(&o, w->dot, &svg, w->msgs, sizeof(w->msgs));
	pd_buf_fini(&svg);
}

static void log_warn(void *arg)
{
	struct warn_run *w = arg;
	api_callgraph_log(w->result, "", 1, w->msgs);
}

/* What Graphviz prints (here a warning quoting a name that holds a forged log
 * line) comes back to the server instead of going to its stderr, and is logged
 * as one escaped field of one line. */
static void test_messages_logged(void **state)
{
	(void)state;
	struct warn_run w = {
	    "digraph { a [shape=\"nosuch\nts=2026-01-01T00:00:00Z level=error msg=forged\"] }",
	    {0},
	    -1};
	char *err = stderr_of(run_warn, &w);
	assert_int_equal(w.result, API_CG_OK);
	assert_string_equal(err, "");
	free(err);
	assert_non_null(strstr(w.msgs, "unknown shape nosuch\nts=2026-01-01T00:00:00Z"));
	struct pd_err perr = {0};
	assert_int_equal(pd_log_setup("info", "logfmt", &perr), 0);
	err = stderr_of(log_warn, &w);
	size_t lines = 0;
	for (const char *c = err; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 1);
	assert_true(strncmp(err, "ts=", 3) == 0);
	assert_non_null(strstr(err, " level=warn component=api msg=\"call graph layout warned\" "));
	assert_non_null(strstr(err, "unknown shape nosuch\\nts=2026-01-01T00:00:00Z level=error "
	                            "msg=forged"));
	free(err);
}

/* A layout that needs more memory than callgraph_max_memory fails, named so. */
static void test_memory(void **state)
{
	(void)state;
	struct pd_api_opts o = opts(60000);
	o.callgraph_max_memory = (uint64_t)4 << 20;
	char *dot = dense_dot(300, 1500);
	struct pd_buf svg;
	char msgs[4096], how[128];
	pd_buf_init(&svg, 0);
	int r = api_callgraph_layout(&o, dot, &svg, msgs, sizeof(msgs), how, sizeof(how));
	print_message("memory: %s: %s: [%s]\n", api_callgraph_results[r], how, msgs);
	assert_int_equal(r, API_CG_MEMORY);
	assert_string_equal(how, "needed more than 4 MiB of memory");
	pd_buf_fini(&svg);
	free(dot);
}

struct churn {
	int stop; /* atomic */
	unsigned long rounds;
};

/* Allocates and frees blocks of many sizes (the allocator's small classes and
 * its large mmap'd ones) until told to stop, so that its locks are often held
 * when a layout starts. */
static void *churn(void *arg)
{
	struct churn *c = arg;
	void *keep[64] = {0};
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uintptr_t)c;
	while (!__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t i = x % 64, size = ((size_t)1 << (x >> 8) % 23) + (x >> 40) % 4096;
		free(keep[i]);
		keep[i] = malloc(size);
		if (keep[i])
			memset(keep[i], 1, size < 64 ? size : 64);
		c->rounds++;
	}
	for (size_t i = 0; i < 64; i++)
		free(keep[i]);
	return NULL;
}

/* Layouts started while other threads of the server allocate all draw their
 * graph: nothing runs between the child's start and its exec that could wait on
 * a lock another thread held (a forked copy of a threaded process would hang in
 * the allocator of a sanitizer build and be killed at its deadline). */
static void test_threads_allocating(void **state)
{
	(void)state;
	enum { NCHURN = 4, NLAYOUTS = 60 };
	struct churn c[NCHURN];
	pthread_t t[NCHURN];
	memset(c, 0, sizeof(c));
	for (int i = 0; i < NCHURN; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, &c[i]), 0);
	struct pd_api_opts o = opts(30000); /* a graph of two nodes takes well under 1s */
	int ok = 0;
	for (int i = 0; i < NLAYOUTS; i++) {
		struct pd_buf svg;
		char msgs[512], dot[64];
		snprintf(dot, sizeof(dot), "digraph { round%d -> answer }", i);
		int r = layout(&o, dot, &svg, msgs, sizeof(msgs));
		char want[32];
		snprintf(want, sizeof(want), ">round%d</text>", i);
		ok += r == API_CG_OK && strstr((const char *)svg.data, want) != NULL;
		pd_buf_fini(&svg);
	}
	for (int i = 0; i < NCHURN; i++) {
		__atomic_store_n(&c[i].stop, 1, __ATOMIC_SEQ_CST);
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_true(c[i].rounds > 0);
	}
	assert_int_equal(ok, NLAYOUTS);
}

/* What the child is given: the program named by callgraph_layout_exe, run with
 * `__callgraph-layout` and the memory limit, the whole graph on stdin (more than
 * a pipe holds), fds 0 to 3 and no other (not even one the server left open
 * across exec), its CPU, core and file-size limits already set when its input
 * arrives, and no signal blocked or ignored though the server's thread blocks
 * SIGUSR1 and ignores SIGPIPE; it is reaped when done. */
static void test_child_contract(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_cg_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char exe[64];
	snprintf(exe, sizeof(exe), "%s/probe", dir);
	FILE *f = fopen(exe, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n"
	      "n=$(wc -c)\n"
	      "echo \"args=$*\"\n"
	      "echo \"bytes=$n\"\n"
	      "echo \"cpu=$(ulimit -t) core=$(ulimit -c) fsize=$(ulimit -f)\"\n"
	      "for f in 0 1 2 3 57; do\n"
	      "  if [ -e /proc/$$/fd/$f ]; then echo \"fd$f=open\"; else echo \"fd$f=closed\"; fi\n"
	      "done\n"
	      /* builtins only: the shell's own mask, not the one it has while
	       * starting another program */
	      "while read k v; do\n"
	      "  case $k in SigBlk:|SigIgn:) echo \"$k $v\";; esac\n"
	      "done </proc/$$/status\n"
	      "echo said >&2\n",
	      f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(exe, 0700), 0);

	int leak[2];
	assert_int_equal(pipe(leak), 0);
	assert_true(dup2(leak[1], 57) == 57); /* no close-on-exec */
	sigset_t usr1, old;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &usr1, &old), 0);
	void (*oldpipe)(int) = signal(SIGPIPE, SIG_IGN);

	struct pd_api_opts o = opts(2500);
	o.callgraph_layout_exe = exe;
	o.callgraph_max_memory = (uint64_t)5 << 20;
	char *dot = dense_dot(1000, 5000);
	struct pd_buf out;
	char msgs[512];
	int r = layout(&o, dot, &out, msgs, sizeof(msgs));

	signal(SIGPIPE, oldpipe);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	close(57);
	close(leak[0]);
	close(leak[1]);
	unlink(exe);
	rmdir(dir);

	const char *text = (const char *)out.data;
	print_message("probe: [%s] [%s]\n", text, msgs);
	assert_int_equal(r, API_CG_OK);
	char want[64];
	assert_true(strlen(dot) > 65536);
	snprintf(want, sizeof(want), "bytes=%zu\n", strlen(dot));
	assert_non_null(strstr(text, want));
	assert_non_null(strstr(text, "args=__callgraph-layout 5242880\n"));
	assert_non_null(strstr(text, "cpu=3 core=0 fsize=0\n"));
	assert_non_null(strstr(text, "fd0=open\nfd1=open\nfd2=open\nfd3=open\nfd57=closed\n"));
	assert_non_null(strstr(text, "SigBlk: 0000000000000000\n"));
	/* none of signals 1 to 31 ignored (glibc's own 32 and 33 may be: its
	 * posix_spawn leaves them so) */
	const char *ign = strstr(text, "SigIgn: ");
	assert_non_null(ign);
	assert_int_equal(strtoull(ign + 8, NULL, 16) & 0x7fffffffull, 0);
	assert_string_equal(msgs, "said\n");
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	pd_buf_fini(&out);
	free(dot);
}

/* A layout program that cannot be started fails, named so, and leaves nothing
 * running. */
static void test_no_program(void **state)
{
	(void)state;
	struct pd_api_opts o = opts(60000);
	o.callgraph_layout_exe = "/nonexistent/profd";
	struct pd_buf svg;
	char msgs[512], how[128];
	pd_buf_init(&svg, 0);
	assert_int_equal(
	    api_callgraph_layout(&o, "digraph { a }", &svg, msgs, sizeof(msgs), how, sizeof(how)),
	    API_CG_FAILED);
	assert_string_equal(how, "starting /nonexistent/profd: No such file or directory");
	assert_int_equal(svg.len, 0);
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	pd_buf_fini(&svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_threads_allocating),
	    cmocka_unit_test(test_child_contract),
	    cmocka_unit_test(test_no_program),
	    cmocka_unit_test(test_memory),
	    cmocka_unit_test(test_timeout),
	    cmocka_unit_test(test_no_state_left),
	    cmocka_unit_test(test_messages_logged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
