/* callgraph.c: /api/v1/query's report=dot and report=svg. The profile's call graph
 * (pd_pprof_graph, the nodes and edges of `go tool pprof -dot` after the same cuts)
 * is written as DOT, every string of it escaped (pd_pprof_graph_dot); for svg it
 * is laid out and drawn by Graphviz's C library, with its dot layout and its core
 * SVG renderer linked in (no plugin is looked up at run time, and text is
 * measured by Graphviz's built-in font metrics, so the same graph always gives
 * the same picture).
 *
 * Graphviz keeps global state and is not thread-safe, and a layout's time and
 * memory grow fast with the graph, so the server itself never calls it: each
 * layout is a process of its own, profd executed afresh as `profd
 * __callgraph-layout` (posix_spawn: in a threaded server, nothing but the exec may
 * run in a forked copy), which starts from a fresh Graphviz context, runs under a
 * CPU-time and an address-space limit, is killed at a wall-clock deadline, and
 * takes none of its state back. The DOT goes in on its stdin once its limits are
 * set, the SVG comes back on its stdout, Graphviz's messages on its stderr, and
 * those go to profd's log. At most callgraph_max_concurrency layouts run at once;
 * the graph and its DOT are bounded before one starts. */
#define _GNU_SOURCE /* pipe2, prlimit, posix_spawn_file_actions_addclosefrom_np */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <graphviz/gvc.h>
#include <graphviz/gvplugin.h>

#include "api_int.h"
#include "profd/pprof.h"

/* Most edges a graph laid out for report=svg may have (nodecount bounds the nodes). */
#define MAX_SVG_EDGES 5000
/* Largest DOT text written for report=dot or handed to a layout. */
#define MAX_DOT_BYTES ((size_t)8 << 20)
/* Largest SVG accepted from a layout. */
#define MAX_SVG_BYTES ((size_t)64 << 20)
/* Bytes of a layout's messages kept for the log. */
#define MAX_MSG_BYTES 4096
/* What report=svg and report=dot responses may do when a browser opens them:
 * nothing but show themselves (no script, no request, no form, no plugin). */
#define CALLGRAPH_CSP "default-src 'none'; style-src 'unsafe-inline'; sandbox"

const char *const api_callgraph_results[6] = {"ok",      "timeout", "memory",
                                              "too_big", "failed",  "busy"};

extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;

static lt_symlist_t gv_builtins[] = {
    {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
    {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
    {0, 0},
};

/* ---- the child: `profd __callgraph-layout`, one layout, then _exit -------------- */

static void child_write(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			_exit(3);
		c += k;
		n -= (size_t)k;
	}
}

/* Graphviz's messages (agerr), onto stderr. */
static int child_errf(char *msg)
{
	child_write(2, msg, strlen(msg));
	return 0;
}

static void child_say(const char *msg)
{
	child_write(2, msg, strlen(msg));
}

/* The process's address space and resident set in bytes (/proc/self/statm), 0 if
 * unknown. */
static uint64_t vm_size(uint64_t *rss)
{
	char buf[128];
	*rss = 0;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	long page = sysconf(_SC_PAGESIZE);
	uint64_t ps = (uint64_t)(page > 0 ? page : 4096);
	char *end;
	uint64_t vm = strtoull(buf, &end, 10);
	*rss = strtoull(end, NULL, 10) * ps;
	return vm * ps;
}

void pd_api_callgraph_layout_main(int argc, char **argv)
{
	char *end = NULL;
	errno = 0;
	unsigned long long max = argc == 2 ? strtoull(argv[1], &end, 10) : 0;
	if (!end || end == argv[1] || *end || errno || !max) {
		child_say("usage: profd __callgraph-layout MAX_MEMORY_BYTES < graph.dot\n");
		_exit(2);
	}
	/* the limit counts from what this process maps before it reads the graph (its
	 * binary, its libraries, a sanitizer's shadow) */
	uint64_t rss = 0, vm = vm_size(&rss);
	struct rlimit rl = {(rlim_t)(vm + max), (rlim_t)(vm + max)};
	if (setrlimit(RLIMIT_AS, &rl)) {
		child_say("setrlimit(RLIMIT_AS) failed\n");
		_exit(3);
	}
	/* the peak resident set so far as wait4 will count it: this process's and,
	 * with a vfork'd start, the server's it was exec'd from */
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0 && (uint64_t)ru.ru_maxrss * 1024 > rss)
		rss = (uint64_t)ru.ru_maxrss * 1024;
	char num[32];
	int nl = snprintf(num, sizeof(num), "%llu", (unsigned long long)rss);
	if (write(3, num, (size_t)nl) >= 0)
		close(3);

	size_t cap = 65536, len = 0;
	char *dot = malloc(cap);
	for (;;) {
		if (!dot) {
			child_say("out of memory reading the graph\n");
			_exit(2);
		}
		ssize_t k = read(0, dot + len, cap - len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			_exit(3);
		if (k == 0)
			break;
		len += (size_t)k;
		if (len > MAX_DOT_BYTES) {
			child_say("the DOT text is larger than 8 MiB\n");
			_exit(2);
		}
		if (cap - len - 1 == 0) {
			char *d = realloc(dot, cap * 2);
			if (!d)
				free(dot);
			dot = d;
			cap *= 2;
		}
	}
	dot[len] = '\0';

	agseterr(AGWARN);
	agseterrf(child_errf);
	GVC_t *gvc = gvContextPlugins(gv_builtins, 0);
	if (!gvc) {
		child_say("no Graphviz context\n");
		_exit(2);
	}
	Agraph_t *g = agmemread(dot);
	if (!g) {
		child_say("the DOT text does not parse\n");
		_exit(2);
	}
	char *svg = NULL;
	unsigned n = 0;
	if (gvLayout(gvc, g, "dot") || gvRenderData(gvc, g, "svg", &svg, &n) || !svg)
		_exit(2);
	child_write(1, svg, n);
	_exit(0);
}

/* ---- the server's side ---------------------------------------------------------- */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Moves *fd (close-on-exec) above the descriptors the child is given (0 to 3), so
 * that no dup2 of the spawn overwrites another's source; -1 on failure. */
static int fd_above_3(int *fd)
{
	if (*fd > 3)
		return 0;
	int nfd = fcntl(*fd, F_DUPFD_CLOEXEC, 4);
	if (nfd < 0)
		return -1;
	close(*fd);
	*fd = nfd;
	return 0;
}

/* Starts exe as `__callgraph-layout max_memory` with in, out, err and st as its
 * fds 0 to 3 and no other descriptor, every signal at its default and none
 * blocked: posix_spawn (a vfork and an exec, nothing in between that is not
 * async-signal-safe), so a child of this multithreaded process runs no code of
 * ours before the exec. 0, or an errno. */
static int spawn_layout(const char *exe, uint64_t max_memory, int in, int out, int err, int st,
                        pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char mem[32];
	snprintf(mem, sizeof(mem), "%llu", (unsigned long long)max_memory);
	char *argv[] = {(char *)exe, "__callgraph-layout", mem, NULL};
	sigemptyset(&none);
	sigfillset(&all);
	int rc = posix_spawn_file_actions_init(&fa);
	if (rc)
		return rc;
	rc = posix_spawnattr_init(&at);
	if (rc) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	rc = posix_spawn_file_actions_adddup2(&fa, in, 0);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, err, 2);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, st, 3);
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	if (!rc)
		rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&at, &none);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&at, &all);
	if (!rc)
		rc = posix_spawn(pid, exe, &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

int api_callgraph_layout(const struct pd_api_opts *o, const char *dot, struct pd_buf *svg,
                         char *msgs, size_t msize, char *how, size_t hsize)
{
	/* ip: the graph in (a socket, so that a write to a child gone answers EPIPE
	 * instead of raising SIGPIPE); op: the SVG out; ep: messages; sp: the child's
	 * peak resident set at its start, as wait4 counts it */
	int ip[2] = {-1, -1}, op[2] = {-1, -1}, ep[2] = {-1, -1}, sp[2] = {-1, -1};
	const char *exe =
	    o->callgraph_layout_exe ? o->callgraph_layout_exe : PD_API_DEFAULT_CALLGRAPH_LAYOUT_EXE;
	size_t nmsg = 0, dlen = strlen(dot), doff = 0;
	pid_t pid = -1;
	int res = API_CG_FAILED;
	msgs[0] = '\0';
	snprintf(how, hsize, "it could not be started");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ip) || pipe2(op, O_CLOEXEC) ||
	    pipe2(ep, O_CLOEXEC) || pipe2(sp, O_CLOEXEC) || fd_above_3(&ip[0]) ||
	    fd_above_3(&op[1]) || fd_above_3(&ep[1]) || fd_above_3(&sp[1]) ||
	    fcntl(ip[1], F_SETFL, O_NONBLOCK)) {
		snprintf(how, hsize, "pipe: %s", strerror(errno));
		goto out;
	}
	int64_t deadline = mono_ms() + o->callgraph_timeout_ms;
	int rc = spawn_layout(exe, o->callgraph_max_memory, ip[0], op[1], ep[1], sp[1], &pid);
	close_fd(&ip[0]);
	close_fd(&op[1]);
	close_fd(&ep[1]);
	close_fd(&sp[1]);
	if (rc) {
		pid = -1;
		snprintf(how, hsize, "starting %s: %s", exe, strerror(rc));
		goto out;
	}
	/* the limits are in place before the child is given its graph */
	rlim_t cpu = (rlim_t)((o->callgraph_timeout_ms + 999) / 1000);
	struct rlimit rl = {cpu, cpu + 1}, zero = {0, 0};
	if (prlimit(pid, RLIMIT_CPU, &rl, NULL) || prlimit(pid, RLIMIT_CORE, &zero, NULL) ||
	    prlimit(pid, RLIMIT_FSIZE, &zero, NULL)) {
		snprintf(how, hsize, "prlimit: %s", strerror(errno));
		goto out;
	}
	int timed_out = 0, too_big = 0, nomem = 0, broken = 0;
	char chunk[65536];
	while (op[0] >= 0 || ep[0] >= 0) {
		int64_t left = deadline - mono_ms();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		struct pollfd pf[3];
		nfds_t n = 0;
		if (op[0] >= 0)
			pf[n++] = (struct pollfd){.fd = op[0], .events = POLLIN};
		if (ep[0] >= 0)
			pf[n++] = (struct pollfd){.fd = ep[0], .events = POLLIN};
		if (ip[1] >= 0)
			pf[n++] = (struct pollfd){.fd = ip[1], .events = POLLOUT};
		int pr = poll(pf, n, left > 1000 ? 1000 : (int)left);
		if (pr < 0 && errno != EINTR) {
			snprintf(how, hsize, "poll: %s", strerror(errno));
			broken = 1;
			break;
		}
		for (nfds_t i = 0; i < n && pr > 0; i++) {
			if (!pf[i].revents)
				continue;
			if (pf[i].fd == ip[1]) {
				size_t m =
				    dlen - doff < sizeof(chunk) ? dlen - doff : sizeof(chunk);
				ssize_t k = send(ip[1], dot + doff, m, MSG_NOSIGNAL | MSG_DONTWAIT);
				if (k > 0)
					doff += (size_t)k;
				/* a child gone: what it said tells why */
				if (doff == dlen || (k < 0 && errno != EINTR && errno != EAGAIN))
					close_fd(&ip[1]);
				continue;
			}
			int *fd = pf[i].fd == op[0] ? &op[0] : &ep[0];
			ssize_t k = read(*fd, chunk, sizeof(chunk));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				close_fd(fd);
			} else if (fd == &op[0]) {
				int arc = svg->len + (size_t)k > MAX_SVG_BYTES
				              ? PD_ETOOBIG
				              : pd_buf_append(svg, chunk, (size_t)k);
				too_big = arc == PD_ETOOBIG;
				nomem = arc == PD_ENOMEM;
			} else if (nmsg + 1 < msize) {
				size_t m =
				    (size_t)k < msize - 1 - nmsg ? (size_t)k : msize - 1 - nmsg;
				memcpy(msgs + nmsg, chunk, m);
				nmsg += m;
				msgs[nmsg] = '\0';
			}
		}
		if (too_big || nomem)
			break;
	}
	if (op[0] >= 0 || ep[0] >= 0)
		kill(pid, SIGKILL);
	close_fd(&ip[1]);
	close_fd(&op[0]);
	close_fd(&ep[0]);
	int status = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	/* a child that closed its output but runs on is killed at the deadline too */
	for (;;) {
		pid_t w = wait4(pid, &status, WNOHANG, &ru);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (w == 0 && deadline - mono_ms() <= 0) {
			kill(pid, SIGKILL);
			timed_out = 1;
			while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
				;
			break;
		}
		if (w == 0) {
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	pid = -1;
	/* the child's peak resident set at its start: it has exited, so this read does
	 * not block */
	char num[32];
	ssize_t nn = read(sp[0], num, sizeof(num) - 1);
	num[nn > 0 ? nn : 0] = '\0';
	uint64_t rss0 = strtoull(num, NULL, 10);
	/* the resident set the child grew by: near the limit, a failure is for memory
	 * whatever the allocator that failed printed */
	uint64_t rss = (uint64_t)ru.ru_maxrss * 1024;
	int near_limit = rss > rss0 && rss - rss0 >= o->callgraph_max_memory / 2;
	if (timed_out) {
		snprintf(how, hsize, "took longer than %lld ms",
		         (long long)o->callgraph_timeout_ms);
		res = API_CG_TIMEOUT;
	} else if (too_big || nomem) {
		snprintf(how, hsize, "drew an SVG larger than %zu MiB", MAX_SVG_BYTES >> 20);
		res = API_CG_TOO_BIG;
	} else if (broken) {
		res = API_CG_FAILED;
	} else if (WIFSIGNALED(status) &&
	           (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL)) {
		snprintf(how, hsize, "used more than %lld s of CPU time",
		         (long long)((o->callgraph_timeout_ms + 999) / 1000));
		res = API_CG_TIMEOUT;
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		res = API_CG_OK;
	} else if (near_limit || strstr(msgs, "out of memory") ||
	           strstr(msgs, "Cannot allocate memory") ||
	           strstr(msgs, "allocator is out of memory") ||
	           strstr(msgs, "allocation-size-too-big")) {
		snprintf(how, hsize, "needed more than %llu MiB of memory",
		         (unsigned long long)(o->callgraph_max_memory >> 20));
		res = API_CG_MEMORY;
	} else if (WIFSIGNALED(status)) {
		snprintf(how, hsize, "was killed by signal %d", WTERMSIG(status));
	} else {
		snprintf(how, hsize, "exited with status %d", WEXITSTATUS(status));
	}
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close_fd(&ip[0]);
	close_fd(&ip[1]);
	close_fd(&op[0]);
	close_fd(&op[1]);
	close_fd(&ep[0]);
	close_fd(&ep[1]);
	close_fd(&sp[0]);
	close_fd(&sp[1]);
	return res;
}

/* The title and legend lines pprof puts in its legend box. */
static void legend_of(const struct pd_pprof_profile *p, const struct pd_pprof_graph *g,
                      char *title, size_t tsize, char lines[2][512], const char **legend,
                      size_t *n)
{
	const char *bin = pd_pprof_main_binary(p);
	const char *slash = strrchr(bin, '/');
	snprintf(title, tsize, "%s", slash && slash[1] ? slash + 1 : bin);
	*n = 0;
	if (*title) {
		snprintf(lines[*n], sizeof(lines[0]), "File: %s", title);
		legend[*n] = lines[*n];
		(*n)++;
	}
	snprintf(lines[*n], sizeof(lines[0]), "Type: %s", g->sample_type);
	legend[*n] = lines[*n];
	(*n)++;
}

void api_callgraph_log(int result, const char *how, int64_t ms, char *msgs)
{
	size_t ml = strlen(msgs);
	while (ml && (msgs[ml - 1] == '\n' || msgs[ml - 1] == '\r' || msgs[ml - 1] == ' '))
		msgs[--ml] = '\0';
	if (result != API_CG_OK)
		pd_log_warn("api", "call graph layout failed",
		            "result=%s how=%s ms=%lld graphviz=%s", api_callgraph_results[result],
		            how, (long long)ms, msgs);
	else if (ml)
		pd_log_warn("api", "call graph layout warned", "ms=%lld graphviz=%s", (long long)ms,
		            msgs);
}

/* Lays dot out as SVG into *out, counting the layout in the server's gauge and
 * results and logging what Graphviz said; -1 with the error response set when it
 * could not (busy, over a limit, failed). */
static int render(struct api_req *r, struct api_resp *w, const char *dot, struct pd_buf *out)
{
	struct pd_api_server *s = r->srv;
	const struct pd_api_opts *o = &s->o;
	if (__atomic_add_fetch(&s->cg_running, 1, __ATOMIC_SEQ_CST) >
	    o->callgraph_max_concurrency) {
		__atomic_sub_fetch(&s->cg_running, 1, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&s->cg_results[API_CG_BUSY], 1, __ATOMIC_RELAXED);
		api_error(
		    w, 503, "unavailable",
		    "%u call graph layouts are running already (--callgraph.max-concurrency): "
		    "try again later",
		    o->callgraph_max_concurrency);
		return -1;
	}
	char msgs[MAX_MSG_BYTES], how[128];
	int64_t t0 = mono_ms();
	int res = api_callgraph_layout(o, dot, out, msgs, sizeof(msgs), how, sizeof(how));
	__atomic_sub_fetch(&s->cg_running, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&s->cg_results[res], 1, __ATOMIC_RELAXED);
	api_callgraph_log(res, how, mono_ms() - t0, msgs);
	switch (res) {
	case API_CG_OK:
		return 0;
	case API_CG_TIMEOUT:
		api_error(w, 503, "timeout",
		          "laying out the call graph %s (--callgraph.timeout): lower nodecount or "
		          "raise nodefraction or edgefraction",
		          how);
		return -1;
	case API_CG_MEMORY:
	case API_CG_TOO_BIG:
		api_error(
		    w, 422, "execution",
		    "laying out the call graph %s (--callgraph.max-memory): lower nodecount or "
		    "raise nodefraction or edgefraction",
		    how);
		return -1;
	default:
		api_error(w, 500, "internal", "laying out the call graph with Graphviz failed: %s",
		          how);
		return -1;
	}
}

int api_callgraph_params(const struct api_req *r, struct api_resp *w, struct pd_pprof_graph_opts *o)
{
	uint64_t nodecount;
	memset(o, 0, sizeof(*o));
	if (api_uint_param(r, w, "nodecount", PD_PPROF_DEFAULT_NODECOUNT, &nodecount) ||
	    api_double_param(r, w, "nodefraction", PD_PPROF_DEFAULT_NODEFRACTION, 0, 1,
	                     &o->nodefraction) ||
	    api_double_param(r, w, "edgefraction", PD_PPROF_DEFAULT_EDGEFRACTION, 0, 1,
	                     &o->edgefraction))
		return -1;
	if (nodecount == 0 || nodecount > PD_PPROF_MAX_NODECOUNT) {
		api_bad_param(w, "nodecount", "must be between 1 and %d", PD_PPROF_MAX_NODECOUNT);
		return -1;
	}
	o->nodecount = (int)nodecount;
	return 0;
}

void api_report_callgraph(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                          const struct pd_pprof_profile *whole, int svg)
{
	struct pd_pprof_graph_opts o = {0};
	struct pd_pprof_graph *g = NULL;
	struct pd_err err = {0};
	struct pd_buf dot, out;
	int idx;
	pd_buf_init(&dot, 0);
	pd_buf_init(&out, 0);
	if (pd_pprof_sample_index(p, api_param(r, "sample_index"), &idx, &err)) {
		api_bad_param(w, "sample_index", "%s", err.msg);
		return;
	}
	if (api_callgraph_params(r, w, &o))
		return;
	o.total = pd_pprof_total(whole, idx);
	int rc = pd_pprof_graph(p, idx, &o, &g, &err);
	if (rc) {
		api_internal(w, "computing the call graph failed", rc, &err);
		return;
	}
	if (svg && g->nedges > MAX_SVG_EDGES) {
		api_bad_param(w, "edgefraction",
		              "the graph has %zu edges, more than the %d report=svg lays out: "
		              "raise edgefraction or lower nodecount",
		              g->nedges, MAX_SVG_EDGES);
		goto out;
	}
	char title[256], lines[2][512];
	const char *legend[2];
	size_t nl;
	legend_of(p, g, title, sizeof(title), lines, legend, &nl);
	pd_buf_init(&dot, MAX_DOT_BYTES);
	rc = pd_pprof_graph_dot(g, title, legend, nl, &dot);
	rc = rc ? rc : pd_buf_append(&dot, "", 1);
	if (rc == PD_ETOOBIG) {
		api_bad_param(
		    w, "nodecount",
		    "the call graph's DOT text is larger than %zu MiB: lower nodecount or "
		    "raise nodefraction or edgefraction",
		    MAX_DOT_BYTES >> 20);
		goto out;
	}
	if (rc) {
		api_error(w, 500, "internal", "out of memory writing the call graph");
		goto out;
	}
	if (svg && render(r, w, (const char *)dot.data, &out))
		goto out;
	/* not the envelope: the document itself */
	w->json = 0;
	w->status = 200;
	w->csp = CALLGRAPH_CSP;
	pd_buf_fini(&w->body);
	if (svg) {
		w->content_type = "image/svg+xml";
		w->body = out;
		pd_buf_init(&out, 0);
	} else {
		w->content_type = "text/vnd.graphviz; charset=utf-8";
		dot.len--; /* the NUL */
		w->body = dot;
		pd_buf_init(&dot, 0);
	}
out:
	pd_buf_fini(&out);
	pd_buf_fini(&dot);
	pd_pprof_graph_destroy(g);
}
