/* scrape_bench.c: the figures the scrape-scaling issue asks for: thousands of
 * loopback targets scraped at a short interval by the real engine and manager —
 * scrapes per second sustained, CPU per scrape and its ratio to the bare cost of
 * gunzip + pd_pprof_decode of the same bodies in a loop, and scrape start
 * lateness (p50, p99, max). bench/scrape.sh runs it; bench/README.md reads the
 * output.
 *
 * The targets are libmicrohttpd daemons (thread-pool mode, one per port) in a
 * forked child process serving the corpus's heap, goroutine and cpu profiles as
 * Go's net/http/pprof serves them (gzip bytes, application/octet-stream), so
 * that getrusage(RUSAGE_SELF) in the parent counts profd's CPU only. Both
 * processes share the machine's cores.
 *
 * Sections: 1. the references (gunzip + decode; the gunzip alone both ways,
 * libdeflate's fast path against zlib's streaming inflater; the store's append +
 * commit);
 * 2. engine alone and manager + store at each interval; 3. start lateness;
 * 4. what the event loop's scan over all loops costs. Defaults: 2100 loops (700
 * targets x heap, goroutine, cpu) on 35 ports, intervals 2 s, 1 s and 0.5 s,
 * 10 s measured each, 2 workers: about 95 s in all.
 *
 * usage: scrape_bench --corpus DIR [--dir DIR] [--targets N] [--ports P]
 *                     [--intervals MS,MS..] [--seconds S] [--workers W]
 *                     [--server-threads T] [--decode-seconds S] [--runs engine,manager]
 *                     [--no-scan-check]
 */
#define _GNU_SOURCE /* mkdtemp, nftw */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <arpa/inet.h>
#include <libdeflate.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profd/discovery.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/scrape.h"
#include "profd/tsdb.h"
#include "profd/util.h"

/* ---- settings ------------------------------------------------------------------ */

#define NTYPES 3
static const char *const type_dirs[NTYPES] = {"heap", "goroutine", "cpu"};      /* corpus folders */
static const char *const type_names[NTYPES] = {"heap", "goroutine", "cpu"};     /* __name__ */
static const char *const type_paths[NTYPES] = {"/debug/pprof/heap", "/debug/pprof/goroutine",
					       "/debug/pprof/profile"};
#define MAX_FILES 256
#define MAX_PORTS 256

struct opts {
	const char *corpus, *dir;
	size_t targets;         /* scrape loops: (target, type) pairs */
	unsigned ports;
	int64_t intervals[8];
	size_t nintervals;
	double seconds;         /* measured window per run */
	unsigned workers;       /* engine / manager worker threads */
	unsigned server_threads;
	double decode_seconds;
	int run_engine, run_manager, scan_check;
};

/* ---- corpus ---------------------------------------------------------------------- */

struct body {
	uint8_t *gz;
	size_t len;
};

struct ptype {
	struct body b[MAX_FILES];
	size_t n;
};

static struct ptype corpus[NTYPES];

static int num_cmp(const void *a, const void *b)
{
	return atoi(*(char *const *)a) - atoi(*(char *const *)b);
}

static int load_type(const char *root, int t)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/%s", root, type_dirs[t]);
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "scrape_bench: %s: %s\n", dir, strerror(errno));
		return -1;
	}
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
		struct pd_err err = {0};
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		struct body *b = &corpus[t].b[corpus[t].n];
		if (pd_file_read(path, 64u << 20, &b->gz, &b->len, &err) == 0 && pd_gzip_is(b->gz, b->len))
			corpus[t].n++;
		else if (err.code)
			fprintf(stderr, "scrape_bench: %s\n", err.msg);
		free(names[i]);
	}
	if (!corpus[t].n) {
		fprintf(stderr, "scrape_bench: no *.pb.gz profiles in %s\n", dir);
		return -1;
	}
	return 0;
}

/* ---- time and CPU ------------------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

/* user + sys of this process (every thread), seconds */
static double proc_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

static double proc_sys_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return tv_s(ru.ru_stime);
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Threads of this process, by tid (Linux numbers them in creation order). */
static size_t list_tids(int *tids, size_t max)
{
	DIR *d = opendir("/proc/self/task");
	size_t n = 0;
	struct dirent *de;
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max)
		if (de->d_name[0] != '.')
			tids[n++] = atoi(de->d_name);
	closedir(d);
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && tids[k - 1] > tids[k]; k--) {
			int x = tids[k];
			tids[k] = tids[k - 1];
			tids[k - 1] = x;
		}
	return n;
}

/* utime + stime of one thread, seconds (clock-tick resolution) */
static double tid_cpu_s(int tid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	unsigned long ut = 0, st = 0;
	/* after ") ": state(3) ... utime is field 14, stime 15 */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The threads a scrape engine started: those not in before[]. The engine starts
 * its workers, then its event loop thread, so the newest is the loop. */
struct engine_threads {
	int loop_tid;
	int workers[64];
	size_t nworkers;
};

static void find_engine_threads(const int *before, size_t nbefore, struct engine_threads *et)
{
	int now[256];
	size_t n = list_tids(now, 256);
	memset(et, 0, sizeof(*et));
	int fresh[256];
	size_t nf = 0;
	for (size_t i = 0; i < n; i++) {
		int old = 0;
		for (size_t k = 0; k < nbefore; k++)
			old |= before[k] == now[i];
		if (!old)
			fresh[nf++] = now[i];
	}
	if (!nf)
		return;
	et->loop_tid = fresh[nf - 1];
	for (size_t i = 0; i + 1 < nf && et->nworkers < 64; i++)
		et->workers[et->nworkers++] = fresh[i];
}

static void engine_threads_cpu(const struct engine_threads *et, double *loop, double *workers)
{
	*loop = et->loop_tid ? tid_cpu_s(et->loop_tid) : 0;
	*workers = 0;
	for (size_t i = 0; i < et->nworkers; i++)
		*workers += tid_cpu_s(et->workers[i]);
}

/* ---- the target server (child process) ---------------------------------------------- */

struct srv_stats {
	uint64_t requests, conns, bytes, not_found;
	double cpu_s;
};

static struct MHD_Response *responses[NTYPES][MAX_FILES];
static struct MHD_Response *resp_404;
static _Atomic uint64_t srv_requests, srv_conns, srv_bytes, srv_not_found;
static _Atomic uint32_t *srv_seq; /* per (type, target): the next body of the series */
static size_t srv_ntargets;

static enum MHD_Result srv_handle(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	(void)cls;
	(void)method;
	(void)version;
	(void)upload;
	(void)upload_len;
	/* answer on the second call: a response queued on the first (before MHD has
	 * seen the whole request) makes libmicrohttpd close the connection after it,
	 * and Go's net/http keeps connections alive */
	static int seen;
	if (!*state) {
		*state = &seen;
		return MHD_YES;
	}
	atomic_fetch_add_explicit(&srv_requests, 1, memory_order_relaxed);
	int t = -1;
	for (int i = 0; i < NTYPES; i++)
		if (strcmp(url, type_paths[i]) == 0)
			t = i;
	const char *k = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "target");
	size_t target = k ? strtoul(k, NULL, 10) : 0;
	if (t < 0 || target >= srv_ntargets) {
		atomic_fetch_add_explicit(&srv_not_found, 1, memory_order_relaxed);
		return MHD_queue_response(c, 404, resp_404);
	}
	/* each series walks through the profiles in time order, as a process's would */
	uint32_t seq = atomic_fetch_add_explicit(&srv_seq[(size_t)t * srv_ntargets + target], 1,
						 memory_order_relaxed);
	size_t i = (target + seq) % corpus[t].n;
	atomic_fetch_add_explicit(&srv_bytes, corpus[t].b[i].len, memory_order_relaxed);
	return MHD_queue_response(c, 200, responses[t][i]);
}

static void srv_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		       enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	(void)c;
	(void)socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		atomic_fetch_add_explicit(&srv_conns, 1, memory_order_relaxed);
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t r = read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

/* The child: starts the daemons, sends their ports, answers stats requests ('s')
 * on ctl until EOF, then stops. */
static void server_main(const struct opts *o, size_t ntargets, int ctl, int out)
{
	struct MHD_Daemon *d[MAX_PORTS];
	uint16_t ports[MAX_PORTS];
	srv_ntargets = ntargets;
	srv_seq = calloc(NTYPES * ntargets, sizeof(*srv_seq));
	for (int t = 0; t < NTYPES; t++)
		for (size_t i = 0; i < corpus[t].n; i++) {
			responses[t][i] = MHD_create_response_from_buffer(
				corpus[t].b[i].len, corpus[t].b[i].gz, MHD_RESPMEM_PERSISTENT);
			MHD_add_response_header(responses[t][i], "Content-Type", "application/octet-stream");
		}
	resp_404 = MHD_create_response_from_buffer(10, (void *)"not found\n", MHD_RESPMEM_PERSISTENT);
	for (unsigned p = 0; p < o->ports; p++) {
		struct sockaddr_in addr = {0};
		addr.sin_family = AF_INET;
		addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		d[p] = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL,
					srv_handle, NULL, MHD_OPTION_SOCK_ADDR, &addr,
					MHD_OPTION_THREAD_POOL_SIZE, (unsigned)o->server_threads,
					MHD_OPTION_CONNECTION_LIMIT, (unsigned)16384,
					MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)4096,
					MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
					MHD_OPTION_NOTIFY_CONNECTION, srv_notify, NULL, MHD_OPTION_END);
		const union MHD_DaemonInfo *info =
			d[p] ? MHD_get_daemon_info(d[p], MHD_DAEMON_INFO_BIND_PORT) : NULL;
		ports[p] = info ? info->port : 0;
		if (!ports[p]) {
			fprintf(stderr, "scrape_bench: cannot start target daemon %u\n", p);
			_exit(1);
		}
	}
	if (write_all(out, ports, o->ports * sizeof(*ports)))
		_exit(1);
	char c;
	while (read_all(ctl, &c, 1) == 0) {
		struct srv_stats s = {
			atomic_load(&srv_requests), atomic_load(&srv_conns), atomic_load(&srv_bytes),
			atomic_load(&srv_not_found), proc_cpu_s()};
		if (write_all(out, &s, sizeof(s)))
			break;
	}
	for (unsigned p = 0; p < o->ports; p++)
		MHD_stop_daemon(d[p]);
	_exit(0);
}

struct server {
	pid_t pid;
	int ctl, in;
	uint16_t ports[MAX_PORTS];
};

static int server_start(struct server *s, const struct opts *o, size_t ntargets)
{
	int a[2], b[2];
	if (pipe(a) || pipe(b))
		return -1;
	fflush(NULL);
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		close(a[1]);
		close(b[0]);
		server_main(o, ntargets, a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	s->ctl = a[1];
	s->in = b[0];
	return read_all(s->in, s->ports, o->ports * sizeof(*s->ports));
}

static void server_stats(struct server *s, struct srv_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (write_all(s->ctl, "s", 1) || read_all(s->in, st, sizeof(*st)))
		fprintf(stderr, "scrape_bench: the target server does not answer\n");
}

static void server_stop(struct server *s)
{
	close(s->ctl);
	close(s->in);
	int status;
	waitpid(s->pid, &status, 0);
}

/* ---- 1. reference: gunzip + decode in a loop ----------------------------------------- */

struct ref {
	double gunzip_us[NTYPES + 1], decode_us[NTYPES + 1]; /* [NTYPES]: the served mix */
	double gz_bytes[NTYPES + 1], raw_bytes[NTYPES + 1];
	double sys_share; /* of the CPU time of the loop */
	double store_us, store_sys_share; /* append + commit of one gunzipped profile */
	/* pd_inflate of the same bodies: libdeflate's fast path (a decompressor
	 * allocated per call), zlib only (zlib_only), and libdeflate with one
	 * decompressor kept for all bodies */
	double fast_us[NTYPES + 1], zlib_us[NTYPES + 1], kept_us[NTYPES + 1];
	int fast_missed; /* bodies the fast path did not answer */
};

enum inflate_way { WAY_FAST, WAY_ZLIB, WAY_KEPT };

/* One body inflated one way; exits on an error. */
static void inflate_one(const struct body *b, enum inflate_way way, int t)
{
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	struct pd_err err = {0};
	if (way == WAY_KEPT) {
		static struct libdeflate_decompressor *d; /* the reference thread's, never freed */
		const uint8_t *p = b->gz + b->len - 4;
		size_t isize = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
		if (!d)
			d = libdeflate_alloc_decompressor();
		raw = malloc(isize ? isize : 1);
		if (!d || !raw ||
		    libdeflate_gzip_decompress_ex(d, b->gz, b->len, raw, isize, NULL, &rawlen) !=
			LIBDEFLATE_SUCCESS) {
			fprintf(stderr, "scrape_bench: %s: libdeflate cannot inflate a body\n", type_dirs[t]);
			exit(1);
		}
	} else {
		struct pd_inflate_opts io = {.format = PD_INFLATE_GZIP,
					     .max = PD_PPROF_DEFAULT_MAX_DECOMPRESSED,
					     .zlib_only = way == WAY_ZLIB};
		if (pd_inflate(b->gz, b->len, &io, &raw, &rawlen, &err)) {
			fprintf(stderr, "scrape_bench: %s: %s\n", type_dirs[t], err.msg);
			exit(1);
		}
	}
	free(raw);
}

/* CPU time of inflating a type's bodies one way, 8 times over. */
static void inflate_pass(int t, enum inflate_way way, double *cpu, size_t *n)
{
	double c0 = thread_cpu_s();
	for (int k = 0; k < 8; k++)
		for (size_t i = 0; i < corpus[t].n; i++)
			inflate_one(&corpus[t].b[i], way, t);
	*cpu += thread_cpu_s() - c0;
	*n += 8 * corpus[t].n;
}

/* The three ways interleaved for seconds, so that load falls on all alike. */
static void inflate_compare(double seconds, struct ref *r)
{
	double cpu[3][NTYPES] = {{0}};
	size_t n[3][NTYPES] = {{0}};
	uint64_t before = pd_inflate_fast_total();
	size_t fast_calls = 0;
	double end = mono_s() + seconds;
	do
		for (int t = 0; t < NTYPES; t++)
			for (int w = 0; w < 3; w++) {
				inflate_pass(t, (enum inflate_way)w, &cpu[w][t], &n[w][t]);
				if (w == WAY_FAST)
					fast_calls += 8 * corpus[t].n;
			}
	while (mono_s() < end);
	r->fast_missed = pd_inflate_fast_total() - before != fast_calls;
	for (int t = 0; t < NTYPES; t++) {
		r->fast_us[t] = cpu[WAY_FAST][t] / (double)n[WAY_FAST][t] * 1e6;
		r->zlib_us[t] = cpu[WAY_ZLIB][t] / (double)n[WAY_ZLIB][t] * 1e6;
		r->kept_us[t] = cpu[WAY_KEPT][t] / (double)n[WAY_KEPT][t] * 1e6;
		r->fast_us[NTYPES] += r->fast_us[t] / NTYPES;
		r->zlib_us[NTYPES] += r->zlib_us[t] / NTYPES;
		r->kept_us[NTYPES] += r->kept_us[t] / NTYPES;
	}
}

/* CPU time of one pass over a type's bodies: gunzip only, and gunzip + decode. */
static void ref_pass(int t, int decode, double *cpu, size_t *n)
{
	double c0 = thread_cpu_s();
	for (size_t i = 0; i < corpus[t].n; i++) {
		uint8_t *raw;
		size_t rawlen;
		struct pd_err err = {0};
		if (pd_gunzip(corpus[t].b[i].gz, corpus[t].b[i].len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED,
			      &raw, &rawlen, &err)) {
			fprintf(stderr, "scrape_bench: %s: %s\n", type_dirs[t], err.msg);
			exit(1);
		}
		if (decode) {
			struct pd_pprof_profile *p;
			if (pd_pprof_decode(&p, raw, rawlen, NULL, &err)) {
				fprintf(stderr, "scrape_bench: %s: %s\n", type_dirs[t], err.msg);
				exit(1);
			}
			pd_pprof_destroy(p);
		}
		free(raw);
	}
	*cpu += thread_cpu_s() - c0;
	*n += corpus[t].n;
}

struct ref_job {
	double seconds;
	int pin;
	struct ref *r;
};

static void *reference_main(void *arg)
{
	struct ref_job *j = arg;
	struct ref *r = j->r;
	void *pin = NULL;
	memset(r, 0, sizeof(*r));
	double gz_cpu[NTYPES] = {0}, full_cpu[NTYPES] = {0};
	size_t gz_n[NTYPES] = {0}, full_n[NTYPES] = {0};
	for (int t = 0; t < NTYPES; t++) { /* warm-up, sizes */
		double c = 0;
		size_t n = 0;
		ref_pass(t, 1, &c, &n);
		for (size_t i = 0; i < corpus[t].n; i++) {
			uint8_t *raw;
			size_t rawlen;
			pd_gunzip(corpus[t].b[i].gz, corpus[t].b[i].len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED,
				  &raw, &rawlen, NULL);
			r->raw_bytes[t] += (double)rawlen / (double)corpus[t].n;
			r->gz_bytes[t] += (double)corpus[t].b[i].len / (double)corpus[t].n;
			free(raw);
		}
	}
	if (j->pin) {
		/* a block above the biggest decode's memory: glibc can then no longer trim
		 * this thread's heap after each decode */
		const struct body *big = &corpus[0].b[0];
		for (int t = 0; t < NTYPES; t++)
			for (size_t i = 0; i < corpus[t].n; i++)
				if (corpus[t].b[i].len > big->len)
					big = &corpus[t].b[i];
		struct pd_pprof_profile *p = NULL;
		pd_pprof_decode(&p, big->gz, big->len, NULL, NULL);
		pin = malloc(100 << 10);
		if (pin)
			memset(pin, 1, 100 << 10);
		pd_pprof_destroy(p);
	}
	/* interleave the types and both kinds of pass, so that load falls on all alike */
	struct rusage ru0, ru1;
	getrusage(RUSAGE_THREAD, &ru0);
	double end = mono_s() + j->seconds;
	while (mono_s() < end)
		for (int t = 0; t < NTYPES; t++) {
			ref_pass(t, 0, &gz_cpu[t], &gz_n[t]);
			ref_pass(t, 1, &full_cpu[t], &full_n[t]);
		}
	getrusage(RUSAGE_THREAD, &ru1);
	double sys = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	double all = sys + tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
	r->sys_share = all > 0 ? sys / all : 0;
	if (j->pin)
		inflate_compare(j->seconds / 2, r);
	/* the served mix: every loop is one type, types equally many, so the mean of the
	 * per-type means */
	for (int t = 0; t < NTYPES; t++) {
		r->gunzip_us[t] = gz_cpu[t] / (double)gz_n[t] * 1e6;
		r->decode_us[t] = full_cpu[t] / (double)full_n[t] * 1e6;
		r->gunzip_us[NTYPES] += r->gunzip_us[t] / NTYPES;
		r->decode_us[NTYPES] += r->decode_us[t] / NTYPES;
		r->gz_bytes[NTYPES] += r->gz_bytes[t] / NTYPES;
		r->raw_bytes[NTYPES] += r->raw_bytes[t] / NTYPES;
	}
	free(pin);
	return NULL;
}

/* Runs on a thread of its own, as the scrape workers decode, each time on a fresh
 * malloc arena. pin: see reference_main. */
static void run_reference(double seconds, int pin, struct ref *r)
{
	struct ref_job j = {seconds, pin, r};
	pthread_t t;
	if (pthread_create(&t, NULL, reference_main, &j)) {
		fprintf(stderr, "scrape_bench: cannot start a thread\n");
		exit(1);
	}
	pthread_join(t, NULL);
}

/* The store's share: pd_tsdb_append + pd_tsdb_commit of the gunzipped profiles,
 * one commit per profile as the manager's workers commit, to the same number of
 * series with the manager's labels, round after round, into a fresh store
 * (wal_sync=1). */
struct store_job {
	const struct opts *o;
	double seconds;
	double us, sys_share;
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void *store_main(void *arg)
{
	struct store_job *j = arg;
	const struct opts *o = j->o;
	struct pd_err err = {0};
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/scrape-bench-store.XXXXXX", o->dir);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "scrape_bench: mkdtemp %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	struct pd_tsdb_opts to;
	pd_tsdb_opts_init(&to);
	to.wal_sync = 1;
	struct pd_tsdb *db;
	if (pd_tsdb_open(&db, dir, &to, &err)) {
		fprintf(stderr, "scrape_bench: %s\n", err.msg);
		exit(1);
	}
	struct body *raw[NTYPES];
	for (int t = 0; t < NTYPES; t++) {
		raw[t] = calloc(corpus[t].n, sizeof(*raw[t]));
		for (size_t i = 0; i < corpus[t].n; i++)
			pd_gunzip(corpus[t].b[i].gz, corpus[t].b[i].len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED,
				  &raw[t][i].gz, &raw[t][i].len, NULL);
	}
	struct series {
		char inst[32], id[24];
		struct pd_storage_label l[4];
	} *ser = calloc(o->targets, sizeof(*ser));
	for (size_t i = 0; i < o->targets; i++) {
		size_t set = i / NTYPES;
		snprintf(ser[i].inst, sizeof(ser[i].inst), "127.0.0.1:%u", 20000 + (unsigned)(set % o->ports));
		snprintf(ser[i].id, sizeof(ser[i].id), "%zu", set);
		ser[i].l[0] = (struct pd_storage_label){"__name__", type_names[i % NTYPES]};
		ser[i].l[1] = (struct pd_storage_label){"instance", ser[i].inst};
		ser[i].l[2] = (struct pd_storage_label){"job", "bench"};
		ser[i].l[3] = (struct pd_storage_label){"target", ser[i].id};
	}
	int64_t t0 = now_ms() - 3600 * 1000;
	size_t n = 0;
	double cpu0 = 0, end = 0;
	struct rusage ru0, ru1;
	for (size_t round = 0;; round++) {
		if (round == 1) { /* round 0 created the series */
			cpu0 = thread_cpu_s();
			getrusage(RUSAGE_THREAD, &ru0);
			end = mono_s() + j->seconds;
		}
		for (size_t i = 0; i < o->targets; i++) {
			int t = (int)(i % NTYPES);
			const struct body *b = &raw[t][(i / NTYPES + round) % corpus[t].n];
			struct pd_tsdb_appender *a = pd_tsdb_appender(db);
			if (!a || pd_tsdb_append(a, ser[i].l, 4, t0 + (int64_t)round * 1000, b->gz, b->len, &err) ||
			    pd_tsdb_commit(a, &err)) {
				fprintf(stderr, "scrape_bench: store reference: %s\n", err.msg);
				exit(1);
			}
			if (round)
				n++;
		}
		if (round && mono_s() >= end)
			break;
	}
	getrusage(RUSAGE_THREAD, &ru1);
	double cpu = thread_cpu_s() - cpu0;
	double sys = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	j->us = cpu / (double)n * 1e6;
	j->sys_share = cpu > 0 ? sys / cpu : 0;
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	for (int t = 0; t < NTYPES; t++) {
		for (size_t i = 0; i < corpus[t].n; i++)
			free(raw[t][i].gz);
		free(raw[t]);
	}
	free(ser);
	return NULL;
}

static void run_store_reference(const struct opts *o, double seconds, struct ref *r)
{
	struct store_job j = {o, seconds, 0, 0};
	pthread_t t;
	if (pthread_create(&t, NULL, store_main, &j)) {
		fprintf(stderr, "scrape_bench: cannot start a thread\n");
		exit(1);
	}
	pthread_join(t, NULL);
	r->store_us = j.us;
	r->store_sys_share = j.sys_share;
}

/* ---- targets -------------------------------------------------------------------------- */

/* Loop i scrapes type i % 3 of target set i / 3, on port (i / 3) % P. */
static size_t nsets(const struct opts *o)
{
	return (o->targets + NTYPES - 1) / NTYPES;
}

static void loop_url(const struct server *s, const struct opts *o, size_t i, char *out, size_t size)
{
	size_t set = i / NTYPES;
	/* as the manager builds it: scheme://__address__ + __metrics_path__ + ?__param_* */
	snprintf(out, size, "http://127.0.0.1:%u%s?target=%zu", (unsigned)s->ports[set % o->ports],
		 type_paths[i % NTYPES], set);
}

/* ---- a measured run ------------------------------------------------------------------- */

struct sample {
	int64_t sched, late_ms, dur_us;
};

struct collector {
	_Atomic uint64_t ok, failed;
	struct sample *s;
	size_t cap;
	_Atomic size_t n;
	pthread_mutex_t mu;
	char first_error[300];
};

static void on_engine_result(void *ectx, void *lctx, const struct pd_scrape_result *r)
{
	struct collector *c = ectx;
	(void)lctx;
	if (r->error) {
		atomic_fetch_add_explicit(&c->failed, 1, memory_order_relaxed);
		pthread_mutex_lock(&c->mu);
		if (!c->first_error[0])
			snprintf(c->first_error, sizeof(c->first_error), "%s", r->message);
		pthread_mutex_unlock(&c->mu);
	} else {
		atomic_fetch_add_explicit(&c->ok, 1, memory_order_relaxed);
	}
	size_t i = atomic_fetch_add_explicit(&c->n, 1, memory_order_relaxed);
	if (i < c->cap)
		c->s[i] = (struct sample){r->scheduled_ms, r->start_ms - r->scheduled_ms, r->duration_us};
}

struct result {
	const char *what;
	int64_t interval;
	size_t loops;
	double window;   /* seconds */
	double ok, failed; /* finished in the window */
	double cpu, sys; /* parent CPU in the window (all, system), s */
	double loop_cpu, workers_cpu;
	struct srv_stats srv; /* deltas */
	/* lateness and duration of scrapes scheduled in the window (engine runs) */
	size_t nlate;
	double late_p50, late_p99, late_max, dur_p50, dur_p99, dur_max;
	double fresh;    /* manager: share of targets scraped in the last interval + 1 s */
	double backlog;  /* requests served minus results delivered, at the window's end */
	uint64_t series, samples;
	char error[300];
};

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static double pct(const int64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return (double)v[i < n ? i : n - 1];
}

struct window {
	double t_mono, cpu, sys, loop_cpu, workers_cpu;
	int64_t t_ms;
	uint64_t ok, failed;
	struct srv_stats srv;
};

static void window_mark(struct window *w, struct server *s, const struct engine_threads *et,
			uint64_t ok, uint64_t failed)
{
	w->t_mono = mono_s();
	w->t_ms = now_ms();
	w->cpu = proc_cpu_s();
	w->sys = proc_sys_s();
	engine_threads_cpu(et, &w->loop_cpu, &w->workers_cpu);
	w->ok = ok;
	w->failed = failed;
	server_stats(s, &w->srv);
}

static void window_result(struct result *r, const struct window *a, const struct window *b)
{
	r->window = b->t_mono - a->t_mono;
	r->ok = (double)(b->ok - a->ok);
	r->failed = (double)(b->failed - a->failed);
	r->cpu = b->cpu - a->cpu;
	r->sys = b->sys - a->sys;
	r->loop_cpu = b->loop_cpu - a->loop_cpu;
	r->workers_cpu = b->workers_cpu - a->workers_cpu;
	r->srv.requests = b->srv.requests - a->srv.requests;
	r->srv.conns = b->srv.conns - a->srv.conns;
	r->srv.bytes = b->srv.bytes - a->srv.bytes;
	r->srv.not_found = b->srv.not_found - a->srv.not_found;
	r->srv.cpu_s = b->srv.cpu_s - a->srv.cpu_s;
}

/* Waits until every loop has had its first tick (one interval). */
static void warm_up(int64_t interval)
{
	sleep_s((double)interval / 1000.0 + 0.3);
}

/* The engine alone: the callback only counts, so this is the HTTP side of a scrape.
 * nactive loops at interval, plus nidle loops at a one-hour interval (for the scan
 * check: they cost the event loop a look every pass but are almost never due). */
static void run_engine(const struct opts *o, struct server *srv, int64_t interval, size_t nactive,
		       size_t nidle, double seconds, struct result *r)
{
	struct collector c = {0};
	struct pd_err err = {0};
	struct pd_scrape_engine *e;
	pthread_mutex_init(&c.mu, NULL);
	c.cap = (size_t)((double)nactive * (seconds + (double)interval / 1000.0 + 5) * 1000.0 /
			 (double)interval) + 1024;
	c.s = calloc(c.cap, sizeof(*c.s));
	int before[256];
	size_t nbefore = list_tids(before, 256);
	if (pd_scrape_engine_create(&e, o->workers, on_engine_result, &c, &err)) {
		fprintf(stderr, "scrape_bench: %s\n", err.msg);
		exit(1);
	}
	struct engine_threads et;
	find_engine_threads(before, nbefore, &et);
	struct srv_stats s0;
	server_stats(srv, &s0);
	for (size_t i = 0; i < nactive + nidle; i++) {
		char url[256];
		uint64_t id;
		loop_url(srv, o, i % o->targets, url, sizeof(url));
		int64_t iv = i < nactive ? interval : 3600 * 1000;
		struct pd_scrape_spec spec = {url, iv, interval, 0, pd_hash_bytes(url, strlen(url), 1), NULL};
		if (pd_scrape_loop_add(e, &spec, NULL, &id, &err)) {
			fprintf(stderr, "scrape_bench: %s\n", err.msg);
			exit(1);
		}
	}
	warm_up(interval);
	struct window a, b;
	window_mark(&a, srv, &et, atomic_load(&c.ok), atomic_load(&c.failed));
	sleep_s(seconds);
	window_mark(&b, srv, &et, atomic_load(&c.ok), atomic_load(&c.failed));
	/* let the scrapes scheduled in the window finish before looking at lateness */
	sleep_s((double)interval / 1000.0 < 1.0 ? (double)interval / 1000.0 : 1.0);
	pd_scrape_engine_destroy(e);
	window_result(r, &a, &b);
	r->backlog = (double)(b.srv.requests - s0.requests) - (double)(b.ok + b.failed);
	r->interval = interval;
	r->loops = nactive;
	size_t n = atomic_load(&c.n);
	if (n > c.cap)
		n = c.cap;
	int64_t *late = malloc((n + 1) * sizeof(*late)), *dur = malloc((n + 1) * sizeof(*dur));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (c.s[i].sched >= a.t_ms && c.s[i].sched < b.t_ms) {
			late[k] = c.s[i].late_ms;
			dur[k++] = c.s[i].dur_us;
		}
	qsort(late, k, sizeof(*late), i64_cmp);
	qsort(dur, k, sizeof(*dur), i64_cmp);
	r->nlate = k;
	r->late_p50 = pct(late, k, 0.5);
	r->late_p99 = pct(late, k, 0.99);
	r->late_max = k ? (double)late[k - 1] : 0;
	r->dur_p50 = pct(dur, k, 0.5) / 1000.0;
	r->dur_p99 = pct(dur, k, 0.99) / 1000.0;
	r->dur_max = k ? (double)dur[k - 1] / 1000.0 : 0;
	snprintf(r->error, sizeof(r->error), "%s", c.first_error);
	free(late);
	free(dur);
	free(c.s);
	pthread_mutex_destroy(&c.mu);
}

/* The real manager and store: one pool, one static group of every target. */
static void run_manager(const struct opts *o, struct server *srv, int64_t interval, struct result *r)
{
	struct pd_err err = {0};
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/scrape-bench.XXXXXX", o->dir);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "scrape_bench: mkdtemp %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	struct pd_tsdb_opts to;
	pd_tsdb_opts_init(&to);
	to.wal_sync = 1; /* never fsync: measure CPU, not the disk */
	struct pd_tsdb *db;
	if (pd_tsdb_open(&db, dir, &to, &err)) {
		fprintf(stderr, "scrape_bench: %s\n", err.msg);
		exit(1);
	}
	int before[256];
	size_t nbefore = list_tids(before, 256);
	struct pd_scrape_manager *m;
	struct pd_scrape_manager_opts mo = {.workers = o->workers};
	if (pd_scrape_manager_create(&m, pd_tsdb_storage(db), &mo, &err)) {
		fprintf(stderr, "scrape_bench: %s\n", err.msg);
		exit(1);
	}
	struct engine_threads et;
	find_engine_threads(before, nbefore, &et);

	struct pd_scrape_profile_type types[NTYPES];
	for (int t = 0; t < NTYPES; t++)
		types[t] = (struct pd_scrape_profile_type){type_names[t], type_paths[t], 0};
	struct pd_scrape_pool_settings pool = {
		.job_name = "bench",
		.scheme = "http",
		.metrics_path = "/metrics",
		.interval_ms = interval,
		.timeout_ms = interval,
		.types = types,
		.ntypes = NTYPES,
	};
	if (pd_scrape_manager_set_pools(m, &pool, 1, &err)) {
		fprintf(stderr, "scrape_bench: %s\n", err.msg);
		exit(1);
	}
	/* one group: target set k is {__address__, __param_target (the URL's ?target=),
	 * target (so that the sets sharing a port are distinct series)} */
	size_t ns = nsets(o);
	struct pd_target_group g = {0};
	g.source = "0";
	g.targets = calloc(ns, sizeof(*g.targets));
	g.ntargets = ns;
	pd_labels_from_strings(&g.labels, &err, NULL);
	for (size_t k = 0; k < ns; k++) {
		char addr[64], id[32];
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)srv->ports[k % o->ports]);
		snprintf(id, sizeof(id), "%zu", k);
		if (pd_labels_from_strings(&g.targets[k], &err, "__address__", addr, "__param_target", id,
					   "target", id, NULL)) {
			fprintf(stderr, "scrape_bench: %s\n", err.msg);
			exit(1);
		}
	}
	struct srv_stats s0;
	server_stats(srv, &s0);
	double t_sync = mono_s();
	pd_scrape_manager_sync(m, "bench", &g, 1);
	t_sync = mono_s() - t_sync;
	for (size_t k = 0; k < ns; k++)
		pd_labels_destroy(g.targets[k]);
	free(g.targets);
	pd_labels_destroy(g.labels);

	warm_up(interval);
	struct pd_scrape_stats st;
	struct window a, b;
	pd_scrape_manager_stats(m, &st);
	window_mark(&a, srv, &et, st.scrapes_ok, st.scrapes_failed);
	sleep_s(o->seconds);
	pd_scrape_manager_stats(m, &st);
	window_mark(&b, srv, &et, st.scrapes_ok, st.scrapes_failed);
	window_result(r, &a, &b);
	r->backlog = (double)(b.srv.requests - s0.requests) - (double)(b.ok + b.failed);
	r->interval = interval;
	r->loops = (size_t)st.active_targets;

	/* targets whose last scrape is their latest due tick (none skipped at the end) */
	struct pd_scrape_target_status *ts;
	size_t n;
	int64_t now = now_ms();
	if (pd_scrape_manager_targets(m, 0, &ts, &n, &err) == 0) {
		size_t fresh = 0;
		for (size_t i = 0; i < n; i++) {
			if (ts[i].health == PD_SCRAPE_DOWN && !r->error[0])
				snprintf(r->error, sizeof(r->error), "%s", ts[i].last_error);
			/* the tick due before now - duration slack: within the last interval + 1 s */
			if (ts[i].health == PD_SCRAPE_UP && ts[i].last_scrape_ms >= now - interval - 1000)
				fresh++;
		}
		r->fresh = n ? (double)fresh / (double)n : 0;
		pd_scrape_target_status_free(ts, n);
	}
	pd_scrape_manager_destroy(m);
	struct pd_storage_stats tst;
	pd_tsdb_stats(db, &tst);
	r->series = tst.head_series;
	r->samples = tst.head_samples;
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (t_sync > 0.5)
		fprintf(stderr, "scrape_bench: note: pd_scrape_manager_sync of %zu targets took %.2f s\n",
			ns * NTYPES, t_sync);
}

/* ---- output ---------------------------------------------------------------------------- */

static void print_reference(const struct opts *o, const struct ref *r, const struct ref *trimmed)
{
	printf("1. Reference: gunzip + pd_pprof_decode of the bodies the targets serve, in a\n"
	       "   loop on one thread (CPU time per profile; the last column includes the\n"
	       "   gunzip). mix = what the targets serve: the three types equally often.\n\n");
	printf("%-10s %6s %9s %9s %11s %16s\n", "type", "files", "gzip B", "raw B", "gunzip us",
	       "gunzip+decode us");
	printf("------------------------------------------------------------------\n");
	for (int t = 0; t <= NTYPES; t++) {
		if (t == NTYPES)
			printf("------------------------------------------------------------------\n");
		if (t < NTYPES)
			printf("%-10s %6zu", type_dirs[t], corpus[t].n);
		else
			printf("%-10s %6s", "mix", "");
		printf(" %9.0f %9.0f %11.1f %16.1f\n", r->gz_bytes[t], r->raw_bytes[t], r->gunzip_us[t],
		       r->decode_us[t]);
	}
	printf("------------------------------------------------------------------\n"
	       "(%.0f%% of it system time. The loop keeps one block allocated above the\n"
	       " largest decode's memory, as a scrape worker's heap holds the store's data;\n"
	       " without it glibc gives the decode arena's blocks back to the kernel after\n"
	       " every profile and the mix costs %.1f us, %.0f%% system time)\n\n",
	       100.0 * r->sys_share, trimmed->decode_us[NTYPES], 100.0 * trimmed->sys_share);
	printf("   gunzip alone, the same bodies, interleaved on the same thread (CPU us per\n"
	       "   profile): pd_inflate's fast path (libdeflate, a decompressor allocated\n"
	       "   per call), pd_inflate with zlib_only (zlib's streaming inflater, the\n"
	       "   fallback), their ratio, and libdeflate with one decompressor kept for\n"
	       "   all bodies (what keeping one per thread would give).\n\n");
	printf("%-10s %11s %11s %8s %13s\n", "type", "libdeflate", "zlib", "zlib/ld", "ld kept dec");
	printf("-------------------------------------------------------------\n");
	for (int t = 0; t <= NTYPES; t++) {
		if (t == NTYPES)
			printf("-------------------------------------------------------------\n");
		printf("%-10s %11.1f %11.1f %7.2fx %13.1f\n", t < NTYPES ? type_dirs[t] : "mix",
		       r->fast_us[t], r->zlib_us[t], r->zlib_us[t] / r->fast_us[t], r->kept_us[t]);
	}
	printf("-------------------------------------------------------------\n");
	if (r->fast_missed)
		printf("(warning: the fast path did not answer every body: the libdeflate column\n"
		       " is partly zlib)\n");
	printf("\n");
	printf("   store: pd_tsdb_append + pd_tsdb_commit of each gunzipped profile of the mix,\n"
	       "   one commit each (as the manager commits), %zu series with the manager's\n"
	       "   labels, wal_sync=1: %.1f us per profile (%.0f%% system time).\n"
	       "   gunzip+decode+store: %.1f us, the least a manager worker spends per scrape.\n\n",
	       o->targets, r->store_us, 100.0 * r->store_sys_share, r->decode_us[NTYPES] + r->store_us);
}

static void print_results(const struct opts *o, const struct ref *ref, struct result *res, size_t n)
{
	printf("2. Scraping: %zu loops = %zu targets x %d types (heap, goroutine, cpu) on %u\n"
	       "   ports of 127.0.0.1 (libmicrohttpd, %u threads per port, in a child process),\n"
	       "   %u worker threads; %.0f s measured after one interval of warm-up.\n"
	       "   engine = pd_scrape_engine, callback only counts (the HTTP side alone);\n"
	       "   manager = pd_scrape_manager + tsdb (wal_sync=1): gunzip, decode, validate,\n"
	       "   append. due/s = loops / interval; req/s = requests the targets answered;\n"
	       "   ok/s = results delivered that succeeded (manager: stored); ok %% = ok/s of\n"
	       "   due/s; queue = requests answered but not yet delivered at the window's end\n"
	       "   (the engine's result queue); conn/req = TCP connections the targets\n"
	       "   accepted per request. CPU us = user+sys of the profd process (getrusage)\n"
	       "   per delivered result, sys %% its system share; x ref = CPU us / the mix's\n"
	       "   gunzip+decode (section 1: %.1f us); loop, wrk = CPU us per result of the\n"
	       "   event loop thread and of the workers; cores = profd CPU s per s; srv us =\n"
	       "   the target server's CPU per request (its own process).\n\n",
	       res[0].loops ? res[0].loops : o->targets, nsets(o), NTYPES, o->ports, o->server_threads,
	       o->workers, o->seconds, ref->decode_us[NTYPES]);
	printf("%-7s %6s %5s %6s %6s %6s %6s %6s %6s %8s\n", "run", "ivl ms", "loops", "due/s",
	       "req/s", "ok/s", "fail/s", "ok %", "queue", "conn/req");
	const char *rule = "--------------------------------------------------------------------------\n";
	printf("%s", rule);
	for (size_t i = 0; i < n; i++) {
		struct result *r = &res[i];
		double due = (double)r->loops * 1000.0 / (double)r->interval;
		printf("%-7s %6lld %5zu %6.0f %6.0f %6.0f %6.1f %5.1f%% %6.0f %8.3f\n", r->what,
		       (long long)r->interval, r->loops, due, (double)r->srv.requests / r->window,
		       r->ok / r->window, r->failed / r->window,
		       due ? 100.0 * r->ok / r->window / due : 0, r->backlog,
		       r->srv.requests ? (double)r->srv.conns / (double)r->srv.requests : 0);
	}
	printf("%s\n", rule);
	printf("%-7s %6s %7s %5s %6s %7s %6s %5s %6s\n", "run", "ivl ms", "CPU us", "sys %", "x ref",
	       "loop us", "wrk us", "cores", "srv us");
	const char *rule2 = "-------------------------------------------------------------\n";
	printf("%s", rule2);
	for (size_t i = 0; i < n; i++) {
		struct result *r = &res[i];
		double fin = r->ok + r->failed;
		double cpu_us = fin ? r->cpu / fin * 1e6 : 0;
		printf("%-7s %6lld %7.1f %4.0f%% %5.2fx %7.1f %6.1f %5.2f %6.1f\n", r->what,
		       (long long)r->interval, cpu_us, r->cpu > 0 ? 100.0 * r->sys / r->cpu : 0,
		       ref->decode_us[NTYPES] ? cpu_us / ref->decode_us[NTYPES] : 0,
		       fin ? r->loop_cpu / fin * 1e6 : 0, fin ? r->workers_cpu / fin * 1e6 : 0,
		       r->cpu / r->window,
		       r->srv.requests ? r->srv.cpu_s / (double)r->srv.requests * 1e6 : 0);
	}
	printf("%s", rule2);
	for (size_t i = 0; i < n; i++) {
		struct result *r = &res[i];
		if (strcmp(r->what, "manager") == 0)
			printf("manager %lld ms: %llu series, %llu samples in the head; %.1f%% of targets up with\n"
			       "  a scrape in the last interval + 1 s at the end%s%s\n",
			       (long long)r->interval, (unsigned long long)r->series,
			       (unsigned long long)r->samples, 100.0 * r->fresh, r->error[0] ? "; an error: " : "",
			       r->error);
		else if (r->error[0])
			printf("%s %lld ms: an error: %s\n", r->what, (long long)r->interval, r->error);
		if (r->srv.not_found)
			printf("%s %lld ms: %llu requests the targets did not know (404)\n", r->what,
			       (long long)r->interval, (unsigned long long)r->srv.not_found);
	}
	printf("\n3. Scrape start lateness: start_ms - scheduled_ms of every scrape scheduled in\n"
	       "   the window (pd_scrape_result; whole ms, so 0 means under 1 ms), and the\n"
	       "   scrape's duration (start to the body's last byte). Engine runs only: the\n"
	       "   manager does not expose start times. Its event loop is the same code, but\n"
	       "   there it shares the cores with decoding and storing (section 2: cores).\n\n");
	printf("%-7s %6s %5s %8s %8s %8s %8s %8s %8s %8s\n", "run", "ivl ms", "loops", "scrapes",
	       "late p50", "late p99", "late max", "dur p50", "dur p99", "dur max");
	const char *rule3 = "------------------------------------------------------------------"
			    "-------------\n";
	printf("%s", rule3);
	for (size_t i = 0; i < n; i++) {
		struct result *r = &res[i];
		if (strcmp(r->what, "manager") == 0)
			continue;
		printf("%-7s %6lld %5zu %8zu %8.0f %8.0f %8.0f %8.2f %8.2f %8.1f\n", r->what,
		       (long long)r->interval, r->loops, r->nlate, r->late_p50, r->late_p99, r->late_max,
		       r->dur_p50, r->dur_p99, r->dur_max);
	}
	printf("%s(late and dur in ms)\n\n", rule3);
}

static void print_scan(const struct result *alone, const struct result *idle, size_t nidle)
{
	printf("4. Event loop scan: the engine looks at every loop on each pass of its event\n"
	       "   loop. The same %zu loops every %lld ms, alone and beside %zu idle loops\n"
	       "   (1 h interval: hardly any due in the window); loop us = event loop CPU\n"
	       "   per scrape.\n\n",
	       alone->loops, (long long)alone->interval, nidle);
	printf("%-7s %6s %6s %8s %8s %8s %8s\n", "run", "loops", "ok/s", "loop us", "CPU us",
	       "late p99", "late max");
	const char *rule = "-----------------------------------------------------------\n";
	printf("%s", rule);
	const struct result *rs[2] = {alone, idle};
	for (int k = 0; k < 2; k++) {
		const struct result *r = rs[k];
		double fin = r->ok + r->failed;
		printf("%-7s %6zu %6.0f %8.1f %8.1f %8.0f %8.0f\n", r->what, r->loops + (k ? nidle : 0),
		       r->ok / r->window, fin ? r->loop_cpu / fin * 1e6 : 0, fin ? r->cpu / fin * 1e6 : 0,
		       r->late_p99, r->late_max);
	}
	double fa = alone->ok + alone->failed, fi = idle->ok + idle->failed;
	if (fa && fi)
		printf("%s(%.1f us more event loop CPU per scrape for %zu more loops: %.1f ns per loop\n"
		       " per scrape)\n\n",
		       rule, (idle->loop_cpu / fi - alone->loop_cpu / fa) * 1e6, nidle,
		       (idle->loop_cpu / fi - alone->loop_cpu / fa) * 1e9 / (double)nidle);
}

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: scrape_bench --corpus DIR [--dir DIR] [--targets N] [--ports P]\n"
		"                    [--intervals MS[,MS..]] [--seconds S] [--workers W]\n"
		"                    [--server-threads T] [--decode-seconds S]\n"
		"                    [--runs engine,manager] [--no-scan-check]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {.dir = ".", .targets = 2100, .ports = 35, .intervals = {2000, 1000, 500},
			 .nintervals = 3, .seconds = 10, .workers = 2, .server_threads = 2,
			 .decode_seconds = 3, .run_engine = 1, .run_manager = 1,
			 .scan_check = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--no-scan-check") == 0) {
			o.scan_check = 0;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (strcmp(a, "--corpus") == 0)
			o.corpus = v;
		else if (strcmp(a, "--dir") == 0)
			o.dir = v;
		else if (strcmp(a, "--targets") == 0)
			o.targets = strtoul(v, NULL, 10);
		else if (strcmp(a, "--ports") == 0)
			o.ports = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--seconds") == 0)
			o.seconds = atof(v);
		else if (strcmp(a, "--workers") == 0)
			o.workers = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--server-threads") == 0)
			o.server_threads = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--decode-seconds") == 0)
			o.decode_seconds = atof(v);
		else if (strcmp(a, "--intervals") == 0) {
			o.nintervals = 0;
			for (const char *p = v; *p && o.nintervals < 8;) {
				o.intervals[o.nintervals++] = strtoll(p, NULL, 10);
				p = strchr(p, ',');
				if (!p)
					break;
				p++;
			}
		} else if (strcmp(a, "--runs") == 0) {
			o.run_engine = strstr(v, "engine") != NULL;
			o.run_manager = strstr(v, "manager") != NULL;
		} else
			usage();
	}
	if (!o.corpus || !o.targets || !o.ports || o.ports > MAX_PORTS || !o.server_threads ||
	    o.seconds <= 0)
		usage();
	for (size_t i = 0; i < o.nintervals; i++)
		if (o.intervals[i] <= 0)
			usage();
	o.targets = nsets(&o) * NTYPES;

	/* a socket per target on each side: raise the open-file limit to its hard limit
	 * (the child inherits it) */
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rlim_t soft_before = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < o.targets * 2 + 256)
		fprintf(stderr, "scrape_bench: warning: open-file limit %llu is below 2 x %zu targets\n",
			(unsigned long long)rl.rlim_cur, o.targets);
	signal(SIGPIPE, SIG_IGN);

	for (int t = 0; t < NTYPES; t++)
		if (load_type(o.corpus, t))
			return 1;
	printf("profd scrape bench: corpus %s (%zu heap, %zu goroutine, %zu cpu profiles);\n"
	       "open-file limit (RLIMIT_NOFILE): %llu, set to the hard limit %llu with setrlimit\n\n",
	       o.corpus, corpus[0].n, corpus[1].n, corpus[2].n, (unsigned long long)soft_before,
	       (unsigned long long)rl.rlim_cur);
	fflush(stdout);

	/* fork before any thread exists */
	struct server srv;
	if (server_start(&srv, &o, nsets(&o))) {
		fprintf(stderr, "scrape_bench: cannot start the target server\n");
		return 1;
	}

	struct ref ref, trimmed;
	run_reference(o.decode_seconds / 3, 0, &trimmed);
	run_reference(o.decode_seconds, 1, &ref);
	run_store_reference(&o, o.decode_seconds * 2 / 3, &ref);
	print_reference(&o, &ref, &trimmed);
	fflush(stdout);

	struct result res[32];
	size_t nres = 0;
	for (size_t i = 0; i < o.nintervals; i++) {
		if (o.run_engine) {
			memset(&res[nres], 0, sizeof(res[nres]));
			res[nres].what = "engine";
			run_engine(&o, &srv, o.intervals[i], o.targets, 0, o.seconds, &res[nres]);
			nres++;
		}
		if (o.run_manager) {
			memset(&res[nres], 0, sizeof(res[nres]));
			res[nres].what = "manager";
			run_manager(&o, &srv, o.intervals[i], &res[nres]);
			nres++;
		}
	}
	if (nres)
		print_results(&o, &ref, res, nres);

	if (o.scan_check) {
		/* as many scrapes per second as the first interval's runs, from a tenth of
		 * the loops */
		size_t active = o.targets / 10;
		int64_t iv = o.intervals[0] / 10 > 0 ? o.intervals[0] / 10 : 1;
		struct result a = {.what = "alone"}, b = {.what = "+idle"};
		run_engine(&o, &srv, iv, active, 0, 4, &a);
		size_t idle = 10 * o.targets - active;
		run_engine(&o, &srv, iv, active, idle, 4, &b);
		print_scan(&a, &b, idle);
	}
	server_stop(&srv);
	return 0;
}
