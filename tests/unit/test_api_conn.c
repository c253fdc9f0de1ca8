/* test_api_conn.c: the HTTP server under connections that hold it: more idle and
 * slow connections from one client than the limits allow must leave /-/healthy,
 * /-/ready and /metrics answering (through the reserve), the slow connections
 * must be closed by the server after --web.read-header-timeout and
 * --web.read-timeout, and request targets with a NUL, "." or ".." segments or an
 * overlong path must be refused with a 400. Talks raw HTTP over sockets, so the
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
	ao.db = db;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_targets),
	    cmocka_unit_test(test_reserve_and_header_timeout),
	    cmocka_unit_test(test_read_timeout),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
