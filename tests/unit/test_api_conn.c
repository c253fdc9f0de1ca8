/* test_api_conn.c: the HTTP server under connections that hold it: more idle and
 * slow connections from one client than the limits allow must leave /-/healthy,
 * /-/ready and /metrics answering (through the reserve), the slow connections
 * must be closed by the server after --web.read-header-timeout and
 * --web.read-timeout, and request targets with a NUL, "." or ".." segments or an
 * overlong path must be refused with a 400, and clients that do not read their
 * responses must hold no more than --web.max-response-memory. Talks raw HTTP over sockets, so the
 * test controls exactly what each connection sends. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/api.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"

static char dir[] = "/tmp/profd-test-api-conn-XXXXXX";
static struct pd_tsdb *db;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static int setup(void **state)
{
	(void)state;
	struct pd_err err = {0};
	assert_non_null(mkdtemp(dir));
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static struct pd_api_server *start(unsigned max_conns, unsigned per_client, int64_t header_ms,
                                   int64_t read_ms)
{
	struct pd_err err = {0};
	struct pd_api_opts ao;
	struct pd_api_server *s = NULL;
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	ao.max_connections = max_conns;
	ao.max_connections_per_client = per_client;
	ao.read_header_timeout_ms = header_ms;
	ao.read_timeout_ms = read_ms;
	if (pd_api_start(&s, &ao, &err))
		fail_msg("start: %s", err.msg);
	return s;
}

static int dial(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
		assert_true(k > 0);
		s += k;
		n -= (size_t)k;
	}
}

/* Reads until the server closes the connection or deadline_ms passes; returns
 * the bytes read (NUL-terminated in buf), -1 when the deadline passed first. */
static ssize_t read_until_close(int fd, char *buf, size_t size, int64_t deadline_ms)
{
	size_t n = 0;
	for (;;) {
		int64_t left = deadline_ms - now_ms();
		if (left <= 0)
			return -1;
		struct pollfd pf = {fd, POLLIN, 0};
		int r = poll(&pf, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		char tmp[4096];
		ssize_t k = recv(fd, tmp, sizeof(tmp), 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break; /* closed (or reset) */
		size_t c = (size_t)k < size - 1 - n ? (size_t)k : size - 1 - n;
		memcpy(buf + n, tmp, c);
		n += c;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

/* One request on a new connection (Connection: close); returns the status and
 * leaves the whole response in buf. Fails the test past deadline_ms. */
static int request(unsigned port, const char *target, char *buf, size_t size, int64_t deadline_ms)
{
	int fd = dial(port);
	char req[8192];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
	                 target);
	assert_true(n > 0 && (size_t)n < sizeof(req));
	send_all(fd, req, (size_t)n);
	ssize_t k = read_until_close(fd, buf, size, deadline_ms);
	close(fd);
	if (k < 0)
		fail_msg("GET %.80s: no complete answer before the deadline", target);
	int status = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		fail_msg("GET %.80s: not an HTTP response: %.200s", target, buf);
	return status;
}

/* The value of a sample line `name value` in a /metrics text. */
static double metric(const char *text, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = text; (p = strstr(p, name)); p += nl)
		if ((p == text || p[-1] == '\n') && p[nl] == ' ')
			return strtod(p + nl + 1, NULL);
	fail_msg("no sample %s in /metrics", name);
	return 0;
}

static char big[1 << 20];

/* 4 idle and 8 slow connections from one client against limits of 4 per client:
 * probes and /metrics still answer, the API says why it does not, and every one
 * of them is closed by the server after the header timeout. */
static void test_reserve_and_header_timeout(void **state)
{
	(void)state;
	const int64_t header_ms = 6000;
	struct pd_api_server *s = start(16, 4, header_ms, 60000);
	unsigned port = pd_api_port(s);
	enum { NIDLE = 4, NSLOW = 8 };
	int fds[NIDLE + NSLOW];
	int64_t t_open = now_ms();
	for (int i = 0; i < NIDLE + NSLOW; i++) {
		fds[i] = dial(port);
		if (i >= NIDLE) /* a request whose headers never end */
			send_all(fds[i], "GET /-/healthy HTTP/1.1\r\nHost: x\r\nX-Slow: ", 40);
	}
	int64_t deadline = t_open + header_ms - 500;
	/* every probe answers well before the slow connections time out */
	assert_int_equal(request(port, "/-/healthy", big, sizeof(big), deadline), 200);
	assert_non_null(strstr(big, "profd is Healthy."));
	assert_int_equal(request(port, "/-/ready", big, sizeof(big), deadline), 200);
	assert_int_equal(request(port, "/metrics", big, sizeof(big), deadline), 200);
	/* the load still held: nothing was timed out yet, and the probes went to the reserve */
	assert_true(metric(big, "profd_http_connections_closed_total{reason=\"header_timeout\"}") ==
	            0);
	assert_true(metric(big, "profd_http_connections_reserve_total") >= 3);
	/* the API over the limit: a 503 that names the flags */
	assert_int_equal(request(port, "/api/v1/labels", big, sizeof(big), deadline), 503);
	assert_non_null(strstr(big, "--web.max-connections-per-client"));
	assert_true(now_ms() < t_open + header_ms);

	/* the server closes every held connection itself; none stays past the timeout */
	for (int i = 0; i < NIDLE + NSLOW; i++) {
		char tmp[256];
		ssize_t k = read_until_close(fds[i], tmp, sizeof(tmp), t_open + header_ms + 30000);
		if (k < 0)
			fail_msg("connection %d was not closed by the server", i);
		close(fds[i]);
	}
	/* the four in the main pool cannot have been evicted: they timed out, not earlier */
	assert_true(now_ms() - t_open >= header_ms - 100);
	assert_int_equal(request(port, "/metrics", big, sizeof(big), now_ms() + 30000), 200);
	assert_true(metric(big, "profd_http_connections_closed_total{reason=\"header_timeout\"}") >=
	            NIDLE);
	/* with the load gone, the API answers again */
	assert_int_equal(request(port, "/api/v1/labels", big, sizeof(big), now_ms() + 30000), 200);
	pd_api_stop(s);
}

/* A body that trickles in too slowly is cut off at the read timeout. */
static void test_read_timeout(void **state)
{
	(void)state;
	const int64_t read_ms = 2000;
	struct pd_api_server *s = start(16, 4, 1000, read_ms);
	unsigned port = pd_api_port(s);
	int fd = dial(port);
	int64_t t0 = now_ms();
	static const char head[] = "POST /api/v1/profiles?labels=%7Bjob%3D%22x%22%7D HTTP/1.1\r\n"
	                           "Host: x\r\nContent-Type: application/octet-stream\r\n"
	                           "Content-Length: 100000\r\n\r\nabc";
	send_all(fd, head, sizeof(head) - 1);
	char tmp[4096];
	ssize_t k = read_until_close(fd, tmp, sizeof(tmp), t0 + read_ms + 30000);
	if (k < 0)
		fail_msg("the slow body was not cut off");
	close(fd);
	assert_true(now_ms() - t0 >= 1000 - 100);
	/* read_timeout normally; header_timeout when a loaded server had not yet seen the
	 * headers when the (shorter) header deadline passed; counted whether profd's
	 * deadline or MHD's inactivity timeout closed it. The server's thread may count
	 * the close a moment after the client has seen it: wait for the count, then check
	 * that it is exactly one */
	double n = 0;
	for (int64_t end = now_ms() + 30000;;) {
		assert_int_equal(request(port, "/metrics", big, sizeof(big), now_ms() + 30000), 200);
		n = metric(big, "profd_http_connections_closed_total{reason=\"read_timeout\"}") +
		    metric(big, "profd_http_connections_closed_total{reason=\"header_timeout\"}");
		if (n >= 1 || now_ms() > end)
			break;
		usleep(50000);
	}
	if (n != 1)
		fail_msg("%g connections counted as closed by a timeout, not 1", n);
	pd_api_stop(s);
}

/* Request targets that decode to something else than they say are a 400. */
static void test_bad_targets(void **state)
{
	(void)state;
	struct pd_api_server *s = start(0, 0, 0, 0);
	unsigned port = pd_api_port(s);
	int64_t dl = now_ms() + 30000;
	assert_int_equal(request(port, "/js/app.js%00.html", big, sizeof(big), dl), 400);
	assert_non_null(strstr(big, "NUL"));
	assert_int_equal(request(port, "/-/healthy%00", big, sizeof(big), dl), 400);
	assert_int_equal(request(port, "/api/v1/labels?match[]=%00up", big, sizeof(big), dl), 400);
	assert_non_null(strstr(big, "\"errorType\":\"bad_data\""));
	assert_int_equal(request(port, "/js/%2e%2e/%2E%2e/etc/passwd", big, sizeof(big), dl), 400);
	assert_non_null(strstr(big, "segment"));
	assert_int_equal(request(port, "/api/v1/%2e/labels", big, sizeof(big), dl), 400);
	char path[6000] = "/";
	memset(path + 1, 'a', sizeof(path) - 2);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(request(port, path, big, sizeof(big), dl), 400);
	assert_non_null(strstr(big, "longer than"));
	/* a raw NUL in the request line is refused too (MHD or profd) */
	int fd = dial(port);
	static const char raw[] = "GET /js/app.js\0.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	send_all(fd, raw, sizeof(raw) - 1);
	assert_true(read_until_close(fd, big, sizeof(big), dl) > 0);
	close(fd);
	int status = 0;
	assert_int_equal(sscanf(big, "HTTP/1.%*d %d", &status), 1);
	assert_int_equal(status, 400);
	/* a NUL in a POSTed form is refused as in the URL */
	fd = dial(port);
	static const char form[] = "POST /api/v1/labels HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	                           "Content-Type: application/x-www-form-urlencoded\r\n"
	                           "Content-Length: 15\r\n\r\nmatch[]=up%00x1";
	send_all(fd, form, sizeof(form) - 1);
	assert_true(read_until_close(fd, big, sizeof(big), dl) > 0);
	close(fd);
	assert_int_equal(sscanf(big, "HTTP/1.%*d %d", &status), 1);
	assert_int_equal(status, 400);
	assert_non_null(strstr(big, "NUL"));
	/* what is fine stays fine */
	assert_int_equal(request(port, "/-/healthy", big, sizeof(big), dl), 200);
	assert_int_equal(request(port, "/api/v1/labels?match[]=%7Bjob%3D%22a%25b%22%7D", big,
	                         sizeof(big), dl),
	                 200);
	pd_api_stop(s);
}


/* ---- responses held for clients that do not read ------------------------ */

/* A heap profile of BIG_SAMPLES samples with stacks BIG_DEPTH deep over
 * BIG_FUNCS functions with long names, no two stacks alike from their root:
 * its flame graph (BIG_SAMPLES * BIG_DEPTH nodes) is several MB of JSON for a
 * profile of a few hundred KB. */
#define BIG_FUNCS 1000
#define BIG_SAMPLES 4000
#define BIG_DEPTH 24

static void append_big_profile(int64_t t)
{
	static char names[BIG_FUNCS][96];
	const char **strs = calloc(BIG_FUNCS + 3, sizeof(char *));
	size_t *lens = calloc(BIG_FUNCS + 3, sizeof(size_t));
	struct pd_pprof_pfunction *fn = calloc(BIG_FUNCS, sizeof(*fn));
	struct pd_pprof_pline *ln = calloc(BIG_FUNCS, sizeof(*ln));
	struct pd_pprof_plocation *loc = calloc(BIG_FUNCS, sizeof(*loc));
	struct pd_pprof_psample *smp = calloc(BIG_SAMPLES, sizeof(*smp));
	uint64_t *stacks = calloc((size_t)BIG_SAMPLES * BIG_DEPTH, sizeof(uint64_t));
	int64_t *vals = calloc(BIG_SAMPLES, sizeof(int64_t));
	assert_true(strs && lens && fn && ln && loc && smp && stacks && vals);
	strs[0] = "";
	strs[1] = "space";
	strs[2] = "bytes";
	for (size_t i = 0; i < BIG_FUNCS; i++) {
		snprintf(names[i], sizeof(names[i]),
		         "github.com/example/service/internal/handlers.(*Server).handle%04zu", i);
		strs[3 + i] = names[i];
		fn[i] = (struct pd_pprof_pfunction){i + 1, (int64_t)(3 + i), (int64_t)(3 + i), 0, 0};
		ln[i] = (struct pd_pprof_pline){i + 1, 1, 0};
		loc[i] = (struct pd_pprof_plocation){i + 1, 0, 0x1000 + i, &ln[i], 1, 0};
	}
	for (size_t i = 0; i < BIG_FUNCS + 3; i++)
		lens[i] = strlen(strs[i]);
	for (size_t i = 0; i < BIG_SAMPLES; i++) {
		uint64_t *st = stacks + i * BIG_DEPTH;
		for (size_t k = 0; k < BIG_DEPTH; k++) /* leaf first: the root is st[BIG_DEPTH-1] */
			st[k] = (i * 7 + k * 13 + k * (i / BIG_FUNCS) * 101) % BIG_FUNCS + 1;
		vals[i] = (int64_t)(i + 1) * 1024;
		smp[i] = (struct pd_pprof_psample){st, BIG_DEPTH, &vals[i], 1, NULL, 0};
	}
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_parts pp = {0};
	pp.strings = strs;
	pp.string_len = lens;
	pp.nstrings = BIG_FUNCS + 3;
	pp.sample_type = &st;
	pp.nsample_type = 1;
	pp.sample = smp;
	pp.nsample = BIG_SAMPLES;
	pp.location = loc;
	pp.nlocation = BIG_FUNCS;
	pp.function = fn;
	pp.nfunction = BIG_FUNCS;
	uint8_t *raw = NULL;
	size_t len = 0;
	struct pd_err err = {0};
	if (pd_pprof_parts_encode(&pp, &raw, &len, &err))
		fail_msg("encoding: %s", err.msg);
	struct pd_storage_label l[] = {{"__name__", "heap"}, {"job", "big"}};
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_non_null(a);
	if (pd_tsdb_append(a, l, 2, t, raw, len, &err) || pd_tsdb_commit(a, &err))
		fail_msg("append: %s", err.msg);
	free(raw);
	free(strs);
	free(lens);
	free(fn);
	free(ln);
	free(loc);
	free(smp);
	free(stacks);
	free(vals);
}

static struct pd_api_server *start_budget(size_t max_response_memory, int64_t read_ms)
{
	struct pd_err err = {0};
	struct pd_api_opts ao;
	struct pd_api_server *s = NULL;
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	ao.max_response_memory = max_response_memory;
	ao.read_timeout_ms = read_ms;
	if (pd_api_start(&s, &ao, &err))
		fail_msg("start: %s", err.msg);
	return s;
}

/* A connection that asks for target and reads nothing: its receive buffer is
 * kept small, so what the server sends stays on the server's side. */
static int slow_reader(unsigned port, const char *target)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	int rcv = 4096;
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)), 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	char req[512];
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", target);
	send_all(fd, req, (size_t)n);
	return fd;
}

/* The status of the response that has begun to arrive on fd (peeked, not
 * read); 0 before it has. */
static int peek_status(int fd)
{
	char b[16] = {0};
	ssize_t k = recv(fd, b, sizeof(b) - 1, MSG_PEEK | MSG_DONTWAIT);
	int status = 0;
	if (k >= 12 && sscanf(b, "HTTP/1.%*d %d", &status) == 1)
		return status;
	return 0;
}

static double metric_now(unsigned port, const char *name)
{
	int64_t dl = now_ms() + 30000;
	assert_int_equal(request(port, "/metrics", big, sizeof(big), dl), 200);
	return metric(big, name);
}

/* Reads a whole response (Connection: close) into a heap buffer; returns its
 * length and the status in *status. */
static size_t fetch_all(unsigned port, const char *target, int *status, int64_t deadline_ms)
{
	size_t cap = (size_t)64 << 20;
	char *buf = malloc(cap);
	assert_non_null(buf);
	int fd = dial(port);
	char req[512];
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", target);
	send_all(fd, req, (size_t)n);
	ssize_t k = read_until_close(fd, buf, cap, deadline_ms);
	close(fd);
	if (k < 0)
		fail_msg("GET %s: no complete answer before the deadline", target);
	*status = 0;
	sscanf(buf, "HTTP/1.%*d %d", status);
	if (*status != 200)
		printf("GET %s: %.300s\n", target, buf);
	free(buf);
	return (size_t)k;
}

#define FLAME "/api/v1/query?query=heap%7Bjob%3D%22big%22%7D&time=1000&report=flamegraph"
#define NSLOW 8

/* NSLOW connections ask for a flame graph of several MB and read none of it:
 * the server holds at most --web.max-response-memory for them, refuses the
 * rest with 503 and Retry-After, still answers other clients, and gives the
 * memory back when the slow connections close, or time out. */
static void test_response_budget_slow_readers(void **state)
{
	(void)state;
	append_big_profile(1000 * 1000); /* time=1000 in seconds */
	/* the flame graph's size, read by a client that reads */
	struct pd_api_server *s = start_budget(0, 0);
	unsigned port = pd_api_port(s);
	int status = 0;
	size_t flame = fetch_all(port, FLAME, &status, now_ms() + 120000);
	assert_int_equal(status, 200);
	assert_true(flame > ((size_t)4 << 20));
	assert_int_equal(metric_now(port, "profd_http_response_memory_bytes"), 0);
	assert_int_equal(metric_now(port, "profd_http_response_memory_limit_bytes"),
	                 (double)PD_API_DEFAULT_MAX_RESPONSE_MEMORY);
	pd_api_stop(s);

	/* room for two of them held at once (a buffer grows by doubling, and is
	 * charged for its capacity while it is built: the second needs 3 times
	 * the flame graph, for a moment) */
	size_t budget = flame * 3;
	s = start_budget(budget, 0);
	port = pd_api_port(s);
	int fds[NSLOW];
	int st[NSLOW] = {0};
	/* one after the other: two are held, the third is refused */
	for (int i = 0; i < 3; i++) {
		fds[i] = slow_reader(port, FLAME);
		int64_t dl = now_ms() + 120000;
		while (!(st[i] = peek_status(fds[i]))) {
			if (now_ms() > dl)
				fail_msg("slow reader %d got no answer", i);
			struct pollfd pf = {fds[i], POLLIN, 0};
			poll(&pf, 1, 100);
		}
	}
	assert_int_equal(st[0], 200);
	assert_int_equal(st[1], 200);
	assert_int_equal(st[2], 503);
	/* then the rest at once: all refused, the two still held */
	for (int i = 3; i < NSLOW; i++)
		fds[i] = slow_reader(port, FLAME);
	int64_t dl = now_ms() + 120000;
	for (int done = 0; done < NSLOW;) {
		done = 0;
		for (int i = 0; i < NSLOW; i++) {
			if (!st[i])
				st[i] = peek_status(fds[i]);
			done += st[i] != 0;
		}
		if (done < NSLOW) {
			if (now_ms() > dl)
				fail_msg("only %d of %d slow readers got an answer", done, NSLOW);
			struct pollfd pf[NSLOW];
			for (int i = 0; i < NSLOW; i++)
				pf[i] = (struct pollfd){fds[i], POLLIN, 0};
			poll(pf, NSLOW, 100);
		}
	}
	for (int i = 3; i < NSLOW; i++)
		assert_int_equal(st[i], 503);
	double bytes = metric_now(port, "profd_http_response_memory_bytes");
	printf("flame graph %zu bytes, budget %zu: 2 held (%.0f bytes), %d refused\n", flame,
	       budget, bytes, NSLOW - 2);
	assert_true(bytes <= (double)budget);
	/* flame counts the headers too */
	assert_true(bytes >= 2.0 * (double)(flame - PD_API_RESPONSE_FREE_EACH - 4096));
	assert_int_equal(metric_now(port, "profd_http_responses_refused_total"), NSLOW - 2);
	/* others are still answered: small answers are not counted, a big one is
	 * refused with Retry-After */
	assert_int_equal(request(port, "/-/healthy", big, sizeof(big), now_ms() + 30000), 200);
	assert_int_equal(request(port, "/api/v1/labels", big, sizeof(big), now_ms() + 30000), 200);
	assert_non_null(strstr(big, "\"job\""));
	assert_int_equal(request(port, FLAME, big, sizeof(big), now_ms() + 30000), 503);
	assert_non_null(strstr(big, "\r\nRetry-After: 5\r\n"));
	assert_non_null(strstr(big, "\"errorType\":\"unavailable\""));
	assert_non_null(strstr(big, "--web.max-response-memory"));
	/* the slow readers leave: the memory comes back, and the next reader is served */
	for (int i = 0; i < NSLOW; i++)
		close(fds[i]);
	dl = now_ms() + 60000;
	while (metric_now(port, "profd_http_response_memory_bytes") > 0) {
		if (now_ms() > dl)
			fail_msg("the closed connections' responses are still held");
		poll(NULL, 0, 50);
	}
	size_t again = fetch_all(port, FLAME, &status, now_ms() + 120000);
	assert_int_equal(status, 200);
	assert_int_equal(again, flame);
	pd_api_stop(s);

	/* a slow reader that stops reading is timed out (--web.read-timeout), and
	 * what it held given back */
	s = start_budget(budget, 5000);
	port = pd_api_port(s);
	int fd = slow_reader(port, FLAME);
	dl = now_ms() + 120000;
	while (!(status = peek_status(fd))) {
		if (now_ms() > dl)
			fail_msg("the slow reader got no answer");
		poll(NULL, 0, 50);
	}
	assert_int_equal(status, 200);
	assert_true(metric_now(port, "profd_http_response_memory_bytes") > 0);
	dl = now_ms() + 60000;
	while (metric_now(port, "profd_http_response_memory_bytes") > 0) {
		if (now_ms() > dl)
			fail_msg("the timed-out connection's response is still held");
		poll(NULL, 0, 100);
	}
	close(fd);
	pd_api_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_targets),
	    cmocka_unit_test(test_reserve_and_header_timeout),
	    cmocka_unit_test(test_read_timeout),
	    cmocka_unit_test(test_response_budget_slow_readers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
