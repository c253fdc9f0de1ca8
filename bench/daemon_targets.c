/* daemon_targets.c: the scrape targets of bench/daemon.sh: N loopback targets, each
 * its own listening socket on 127.0.0.1 (a port the kernel picks), so that every
 * target has a distinct host:port and so a distinct `instance` label. Past
 * TARGETS_PER_ADDR targets the next go on 127.0.0.2, and so on (the kernel picks
 * ports from its local port range, about 28,000 of them an address). Each serves
 * one path (default /debug/pprof/heap) with the *.pb.gz files of one folder, as
 * Go's net/http/pprof serves a profile (gzip bytes, application/octet-stream), and
 * cycles through them: target i's j-th answer is file (i + j) mod F, so that
 * consecutive scrapes of a target differ as a live program's do and targets are
 * at different points of the sequence. Other paths answer 404.
 *
 *   daemon_targets --files DIR --targets N --addr-file FILE [--path P]
 *                  [--also PATH=DIR]... [--arrivals DIR]
 *                  [--procs P] [--lifetime SECONDS]
 *
 * --also serves a further path from another folder (up to 7 of them, e.g.
 * /debug/pprof/goroutine=CORPUS/goroutine), cycling through its files the same way
 * with its own count per target. --arrivals DIR makes each serving process write
 * DIR/arrivals.<process> when it stops: one line per profile served,
 * "TARGET ROUTE MICROSECONDS" (target index in FILE order, 0 for --path and 1, 2,
 * ... for each --also in order, the wall-clock time at which the request was
 * complete), so that a bench can tell when each scrape really came.
 *
 * The targets are shared among P forked processes (default: as few as fit the
 * open-file limit with a listener and two connections per target, at least 2),
 * each one thread on epoll with HTTP/1.1 keep-alive. Each process binds its own
 * targets' sockets, so a run may hold more listeners than one process may open;
 * their addresses are joined into FILE (one host:port a line, target order;
 * written under FILE.tmp and renamed, so FILE appears complete). Stops on SIGTERM or SIGINT,
 * when its parent exits, or after --lifetime seconds (default 1200). */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 4096
#define REQ_MAX 8192
#define MAX_ROUTES 8
#define TARGETS_PER_ADDR 20000 /* listening sockets on one loopback address */

struct file {
	char *data;
	size_t len;
	char head[160]; /* the response's status line and headers */
	size_t head_len;
};

/* a path and the files it cycles through: route 0 is --path, the others --also */
struct route {
	const char *path;
	struct file *files;
	size_t nfiles;
};

static struct route routes[MAX_ROUTES];
static size_t nroutes;
static struct file not_found;
static FILE *arrivals; /* --arrivals: this process's log, or NULL */

struct target {
	int lfd;
	uint64_t served[MAX_ROUTES];
};

struct conn {
	int fd;
	size_t target;
	char in[REQ_MAX];
	size_t in_len;
	const struct file *out; /* the response being written, or NULL */
	size_t out_off;         /* bytes of head + body written */
	int close_after;
};

static struct target *targets;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "daemon_targets: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int num_cmp(const void *a, const void *b)
{
	return atoi(*(char *const *)a) - atoi(*(char *const *)b);
}

static void set_head(struct file *f, const char *status, const char *type)
{
	f->head_len = (size_t)snprintf(f->head, sizeof(f->head),
				       "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n", status,
				       type, f->len);
}

static void load_files(const char *dir, struct route *r)
{
	r->files = calloc(MAX_FILES, sizeof(*r->files));
	if (!r->files)
		die("calloc");
	DIR *d = opendir(dir);
	if (!d)
		die(dir);
	char *names[MAX_FILES];
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < MAX_FILES) {
		size_t l = strlen(de->d_name);
		if (l > 6 && strcmp(de->d_name + l - 6, ".pb.gz") == 0)
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), num_cmp);
	for (size_t i = 0; i < n; i++) {
		char path[8192];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		FILE *f = fopen(path, "rb");
		if (!f)
			die(path);
		struct stat st;
		if (fstat(fileno(f), &st))
			die(path);
		struct file *x = &r->files[r->nfiles++];
		x->len = (size_t)st.st_size;
		x->data = malloc(x->len ? x->len : 1);
		if (!x->data || fread(x->data, 1, x->len, f) != x->len)
			die(path);
		fclose(f);
		set_head(x, "200 OK", "application/octet-stream");
		free(names[i]);
	}
	if (!r->nfiles) {
		fprintf(stderr, "daemon_targets: no *.pb.gz files in %s\n", dir);
		exit(1);
	}
}

static void set_not_found(void)
{
	not_found.data = "404 page not found\n";
	not_found.len = strlen(not_found.data);
	set_head(&not_found, "404 Not Found", "text/plain; charset=utf-8");
}

/* A complete request at the start of c->in: set the response, drop the request
 * from the buffer. 0 when none is complete yet, -1 on a malformed one. */
static int take_request(struct conn *c)
{
	char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
	if (!end)
		return c->in_len >= REQ_MAX ? -1 : 0;
	size_t req_len = (size_t)(end - c->in) + 4;
	char *eol = memchr(c->in, '\r', req_len);
	char *sp1 = memchr(c->in, ' ', (size_t)(eol - c->in));
	if (!sp1)
		return -1;
	char *url = sp1 + 1;
	char *sp2 = memchr(url, ' ', (size_t)(eol - url));
	if (!sp2)
		return -1;
	size_t url_len = (size_t)(sp2 - url);
	char *q = memchr(url, '?', url_len);
	if (q)
		url_len = (size_t)(q - url);
	c->close_after = (eol - sp2 >= 9 && memcmp(sp2 + 1, "HTTP/1.0", 8) == 0) ||
			 memmem(c->in, req_len, "\r\nConnection: close", 19) != NULL;
	c->out = &not_found;
	for (size_t k = 0; k < nroutes; k++) {
		const struct route *r = &routes[k];
		if (url_len == strlen(r->path) && memcmp(url, r->path, url_len) == 0) {
			struct target *t = &targets[c->target];
			c->out = &r->files[(c->target + t->served[k]++) % r->nfiles];
			if (arrivals) {
				struct timespec now;
				clock_gettime(CLOCK_REALTIME, &now);
				fprintf(arrivals, "%zu %zu %lld\n", c->target, k,
					(long long)now.tv_sec * 1000000 + now.tv_nsec / 1000);
			}
			break;
		}
	}
	c->out_off = 0;
	memmove(c->in, c->in + req_len, c->in_len - req_len);
	c->in_len -= req_len;
	return 1;
}

/* Write what is left of the response: 1 done, 0 would block, -1 error. */
static int write_out(struct conn *c)
{
	const struct file *f = c->out;
	size_t total = f->head_len + f->len;
	while (c->out_off < total) {
		struct iovec iov[2];
		int n = 0;
		if (c->out_off < f->head_len)
			iov[n++] = (struct iovec){(char *)f->head + c->out_off, f->head_len - c->out_off};
		size_t boff = c->out_off > f->head_len ? c->out_off - f->head_len : 0;
		iov[n++] = (struct iovec){f->data + boff, f->len - boff};
		ssize_t w = writev(c->fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		c->out_off += (size_t)w;
	}
	c->out = NULL;
	return 1;
}

static void conn_close(int ep, struct conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

/* Read, answer every complete request, write; closes c on error or end. */
static void conn_run(int ep, struct conn *c)
{
	for (;;) {
		if (c->out) {
			int r = write_out(c);
			if (r < 0) {
				conn_close(ep, c);
				return;
			}
			if (r == 0) {
				struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = c};
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
				return;
			}
			if (c->close_after) {
				conn_close(ep, c);
				return;
			}
			struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
			epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
		}
		int r = take_request(c);
		if (r < 0) {
			conn_close(ep, c);
			return;
		}
		if (r > 0)
			continue;
		ssize_t n = read(c->fd, c->in + c->in_len, REQ_MAX - c->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			conn_close(ep, c);
			return;
		}
		c->in_len += (size_t)n;
	}
}

/* One serving process: targets [lo, hi). Listener events carry the target index
 * tagged with the top bit; connections carry their struct. */
#define LISTENER_TAG (1ull << 63)

static int serve(size_t lo, size_t hi, double lifetime, pid_t parent)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	for (size_t i = lo; i < hi; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = LISTENER_TAG | i};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, targets[i].lfd, &ev))
			die("epoll_ctl");
	}
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct epoll_event evs[256];
	while (!stop) {
		int n = epoll_wait(ep, evs, 256, 500);
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int k = 0; k < n; k++) {
			if (evs[k].data.u64 & LISTENER_TAG) {
				size_t i = (size_t)(evs[k].data.u64 & ~LISTENER_TAG);
				for (;;) {
					int fd = accept4(targets[i].lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
					if (fd < 0)
						break; /* EAGAIN, or out of descriptors: retried on the next event */
					struct conn *c = calloc(1, sizeof(*c));
					if (!c) {
						close(fd);
						break;
					}
					c->fd = fd;
					c->target = i;
					struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
					if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
						close(fd);
						free(c);
						continue;
					}
				}
			} else {
				conn_run(ep, evs[k].data.ptr);
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 > lifetime)
			break;
		if (getppid() != parent)
			break;
	}
	if (arrivals && fclose(arrivals)) {
		fprintf(stderr, "daemon_targets: writing the arrivals failed: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* Binds target i's listener on its loopback address (a port the kernel picks) and
 * writes its host:port line to f. */
static void bind_target(size_t i, FILE *f)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	unsigned host = 1 + (unsigned)(i / TARGETS_PER_ADDR);
	if (host > 254)
		die("too many targets for 127.0.0.1-254");
	struct sockaddr_in sa_in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + host)};
	socklen_t sl = sizeof(sa_in);
	if (bind(fd, (struct sockaddr *)&sa_in, sizeof(sa_in)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&sa_in, &sl))
		die("bind/listen on a loopback address");
	targets[i].lfd = fd;
	fprintf(f, "127.0.0.%u:%u\n", host, (unsigned)ntohs(sa_in.sin_port));
}

/* Waits (at most 300 s: binding 50,000 sockets takes about 30) for the parts FILE.0 … FILE.<procs-1> and joins them, in
 * order, into FILE (written under FILE.tmp and renamed); checks that there are n
 * addresses and no two alike. Returns 0, or 1 after saying why. */
static int addr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int join_parts(const char *addr_file, unsigned procs, size_t n)
{
	char tmp[4096], part[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", addr_file);
	char **lines = calloc(n, sizeof(*lines));
	if (!lines)
		die("calloc");
	size_t got = 0;
	for (unsigned p = 0; p < procs; p++) {
		snprintf(part, sizeof(part), "%s.%u", addr_file, p);
		FILE *pf;
		for (int tries = 0; !(pf = fopen(part, "r")); tries++) {
			int st;
			if (errno != ENOENT || tries >= 3000 || stop || waitpid(-1, &st, WNOHANG) > 0) {
				fprintf(stderr, "daemon_targets: %s: %s\n", part,
					errno == ENOENT ? "not written (a serving process ended, or 300 s passed)"
								: strerror(errno));
				return 1;
			}
			struct timespec ts = {0, 100 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		char line[64];
		while (fgets(line, sizeof(line), pf)) {
			if (got == n) {
				fprintf(stderr, "daemon_targets: more than %zu addresses\n", n);
				return 1;
			}
			if (!(lines[got++] = strdup(line)))
				die("strdup");
		}
		fclose(pf);
		unlink(part);
	}
	if (got != n) {
		fprintf(stderr, "daemon_targets: %zu addresses written, not %zu\n", got, n);
		return 1;
	}
	FILE *af = fopen(tmp, "w");
	if (!af)
		die(tmp);
	for (size_t i = 0; i < n; i++)
		fputs(lines[i], af);
	if (fclose(af))
		die(tmp);
	qsort(lines, n, sizeof(*lines), addr_cmp);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(lines[i - 1], lines[i])) {
			fprintf(stderr, "daemon_targets: address %.*s bound twice\n", (int)strcspn(lines[i], "\n"),
				lines[i]);
			return 1;
		}
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	if (rename(tmp, addr_file))
		die(addr_file);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *addr_file = NULL, *path = "/debug/pprof/heap", *arrivals_dir = NULL;
	const char *also[MAX_ROUTES];
	size_t nalso = 0;
	size_t ntargets = 0;
	unsigned procs = 0;
	double lifetime = 1200;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			goto usage;
		if (!strcmp(a, "--files"))
			dir = v;
		else if (!strcmp(a, "--targets"))
			ntargets = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--addr-file"))
			addr_file = v;
		else if (!strcmp(a, "--path"))
			path = v;
		else if (!strcmp(a, "--procs"))
			procs = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--lifetime"))
			lifetime = strtod(v, NULL);
		else if (!strcmp(a, "--also") && nalso < MAX_ROUTES - 1 && strchr(v, '=') && v[0] == '/')
			also[nalso++] = v;
		else if (!strcmp(a, "--arrivals"))
			arrivals_dir = v;
		else
			goto usage;
		i++;
	}
	if (!dir || !addr_file || !ntargets)
		goto usage;
	routes[nroutes].path = path;
	load_files(dir, &routes[nroutes++]);
	for (size_t k = 0; k < nalso; k++) {
		char *spec = strdup(also[k]), *eq = strchr(spec, '=');
		*eq = 0;
		routes[nroutes].path = spec;
		load_files(eq + 1, &routes[nroutes++]);
	}
	set_not_found();

	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	size_t per_proc = rl.rlim_cur == RLIM_INFINITY ? ntargets : (size_t)(rl.rlim_cur - 64) / 3;
	if (!procs)
		procs = (unsigned)((ntargets + per_proc - 1) / per_proc);
	if (procs < 2)
		procs = 2;
	if (procs > ntargets)
		procs = (unsigned)ntargets;

	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	targets = calloc(ntargets, sizeof(*targets));
	if (!targets)
		die("calloc");

	/* Each serving process binds its own share of the listeners (so that no one
	 * process holds them all: the open-file limit bounds a process, not the run) and
	 * writes their addresses to FILE.<process>; the parent joins the parts in
	 * target order once every process has renamed its part into place. */
	pid_t self = getpid();
	pid_t *kids = calloc(procs, sizeof(*kids));
	for (unsigned p = 0; p < procs; p++) {
		size_t lo = ntargets * p / procs, hi = ntargets * (p + 1) / procs;
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (getppid() != self)
				_exit(0);
			char part[4096], ptmp[4200];
			snprintf(part, sizeof(part), "%s.%u", addr_file, p);
			snprintf(ptmp, sizeof(ptmp), "%s.tmp", part);
			FILE *pf = fopen(ptmp, "w");
			if (!pf)
				die(ptmp);
			for (size_t i = lo; i < hi; i++)
				bind_target(i, pf);
			if (fclose(pf) || rename(ptmp, part))
				die(part);
			if (arrivals_dir) {
				char ap[4096];
				snprintf(ap, sizeof(ap), "%s/arrivals.%u", arrivals_dir, p);
				arrivals = fopen(ap, "w");
				if (!arrivals)
					die(ap);
			}
			_exit(serve(lo, hi, lifetime, self));
		}
		kids[p] = pid;
	}
	if (join_parts(addr_file, procs, ntargets))
		goto stop_kids;
	fprintf(stderr, "daemon_targets: %zu targets on 127.0.0.x in %u processes, %zu files of %s", ntargets,
		procs, routes[0].nfiles, dir);
	for (size_t k = 1; k < nroutes; k++)
		fprintf(stderr, ", %zu files for %s", routes[k].nfiles, also[k - 1]);
	fprintf(stderr, "\n");
	/* wait for a signal, a child's end or the lifetime, then stop the children */
	pid_t parent = getppid();
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int alive = (int)procs;
	while (!stop && alive == (int)procs) {
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
		int st;
		while (waitpid(-1, &st, WNOHANG) > 0)
			alive--;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) > lifetime + 5 || getppid() != parent)
			break;
	}
	for (unsigned p = 0; p < procs; p++)
		kill(kids[p], SIGTERM);
	while (wait(NULL) > 0)
		;
	return 0;
stop_kids:
	for (unsigned p = 0; p < procs; p++)
		kill(kids[p], SIGTERM);
	while (wait(NULL) > 0)
		;
	return 1;
usage:
	fprintf(stderr, "usage: daemon_targets --files DIR --targets N --addr-file FILE [--path P]\n"
			"                      [--also PATH=DIR]... [--arrivals DIR]\n"
			"                      [--procs P] [--lifetime SECONDS]\n");
	return 2;
}
