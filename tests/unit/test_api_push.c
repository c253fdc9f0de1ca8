/* test_api_push.c: what a push may cost. Hostile bodies built here (a small gzip
 * of 256 MiB of empty samples, a small gzip of a valid 60 MiB profile, the same
 * uncompressed, a sample with 150,000 empty labels) must be refused with a 4xx
 * naming the limit, counted in profd_push_refused_total, leave nothing stored, and
 * cost the process little memory (its peak RSS, VmHWM, is reset before each and
 * read after); a real profile must still be stored; pushes over
 * --web.max-concurrent-pushes, held open by slow bodies, must get 429 with
 * Retry-After. Talks raw HTTP over sockets to a server on 127.0.0.1:0. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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
#include <zlib.h>

#include "profd/api.h"
#include "profd/tsdb.h"

static char dir[] = "/tmp/profd-test-api-push-XXXXXX";
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

static struct pd_api_server *start(unsigned max_pushes, unsigned max_ratio)
{
	struct pd_err err = {0};
	struct pd_api_opts ao;
	struct pd_api_server *s = NULL;
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	if (max_pushes)
		ao.max_concurrent_pushes = max_pushes;
	if (max_ratio)
		ao.push_max_ratio = max_ratio;
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

/* Sends all of s; a server that answers early and closes may cut it short, which
 * is fine: the answer is what counts. */
static void send_all(int fd, const void *s, size_t n)
{
	const char *p = s;
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		p += k;
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
			break;
		size_t c = (size_t)k < size - 1 - n ? (size_t)k : size - 1 - n;
		memcpy(buf + n, tmp, c);
		n += c;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

static char resp[1 << 20];

static int status_of(const char *what)
{
	int status = 0;
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		fail_msg("%s: not an HTTP response: %.200s", what, resp);
	return status;
}

#define PUSH_TARGET "/api/v1/profiles?labels=heap%7Bjob%3D%22hostile%22%7D"

/* Sends the headers of a push of len bytes on a new connection. */
static int push_start(unsigned port, size_t len)
{
	int fd = dial(port);
	char req[512];
	int n = snprintf(req, sizeof(req),
	                 "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
	                 "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
	                 PUSH_TARGET, len);
	send_all(fd, req, (size_t)n);
	return fd;
}

/* Pushes body; returns the status, the response in resp. */
static int push(unsigned port, const void *body, size_t len)
{
	int fd = push_start(port, len);
	send_all(fd, body, len);
	ssize_t k = read_until_close(fd, resp, sizeof(resp), now_ms() + 120000);
	close(fd);
	if (k < 0)
		fail_msg("push: no answer within 2 minutes");
	return status_of("push");
}

static int get(unsigned port, const char *target)
{
	int fd = dial(port);
	char req[512];
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", target);
	send_all(fd, req, (size_t)n);
	ssize_t k = read_until_close(fd, resp, sizeof(resp), now_ms() + 60000);
	close(fd);
	if (k < 0)
		fail_msg("GET %s: no answer within a minute", target);
	return status_of(target);
}

/* The value of the sample `name value` in the server's /metrics. */
static double metric(unsigned port, const char *name)
{
	assert_int_equal(get(port, "/metrics"), 200);
	size_t nl = strlen(name);
	for (const char *p = resp; (p = strstr(p, name)); p += nl)
		if (p[-1] == '\n' && p[nl] == ' ')
			return strtod(p + nl + 1, NULL);
	fail_msg("no sample %s in /metrics", name);
	return 0;
}

/* The process's peak resident memory in KiB since the last reset_peak. */
static long peak_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	assert_true(kib > 0);
	return kib;
}

static void reset_peak(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "5", 1), 1);
	close(fd);
}

/* ---- profiles, as bytes ---------------------------------------------------- */

struct wbuf {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct wbuf *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2;
		w->b = realloc(w->b, w->cap);
		assert_non_null(w->b);
	}
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void varint(struct wbuf *w, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	do {
		t[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	put(w, t, n);
}

/* A profile's head: sample type (samples, count), the string table, time_nanos. */
static void head(struct wbuf *w)
{
	static const uint8_t h[] = {
	    0x0a, 0x04, 0x08, 0x01, 0x10, 0x02,                /* sample_type */
	    0x32, 0x00,                                        /* "" */
	    0x32, 0x07, 's',  'a',  'm',  'p',  'l', 'e', 's', /* "samples" */
	    0x32, 0x05, 'c',  'o',  'u',  'n',  't',           /* "count" */
	};
	put(w, h, sizeof(h));
	varint(w, 9 << 3); /* time_nanos */
	varint(w, 1700000000000000000ull);
}

/* The head then reps copies of unit, gzip-compressed as a stream (so that the
 * test never holds the inflated bytes). */
static uint8_t *gzip_repeated(const uint8_t *unit, size_t ulen, size_t reps, size_t *out_len)
{
	struct wbuf h = {0};
	head(&h);
	z_stream zs = {0};
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	size_t per = (1u << 20) / ulen;
	uint8_t *chunk = malloc(per * ulen);
	assert_non_null(chunk);
	for (size_t i = 0; i < per; i++)
		memcpy(chunk + i * ulen, unit, ulen);
	struct wbuf o = {0};
	uint8_t tmp[65536];
	size_t left = reps;
	int first = 1;
	for (;;) {
		if (first) {
			zs.next_in = h.b;
			zs.avail_in = (uInt)h.n;
			first = 0;
		} else if (left) {
			size_t k = left < per ? left : per;
			zs.next_in = chunk;
			zs.avail_in = (uInt)(k * ulen);
			left -= k;
		}
		int flush = left || zs.avail_in ? Z_NO_FLUSH : Z_FINISH;
		int z;
		do {
			zs.next_out = tmp;
			zs.avail_out = sizeof(tmp);
			z = deflate(&zs, flush);
			put(&o, tmp, sizeof(tmp) - zs.avail_out);
		} while (zs.avail_out == 0);
		if (z == Z_STREAM_END)
			break;
	}
	deflateEnd(&zs);
	free(chunk);
	free(h.b);
	*out_len = o.n;
	return o.b;
}

static const uint8_t empty_sample[] = {0x12, 0x00};
/* a sample with one value, 1: valid for the profile's one sample type */
static const uint8_t valid_sample[] = {0x12, 0x02, 0x10, 0x01};

/* ---- tests ------------------------------------------------------------------- */

/* Nothing at all was stored. */
static void assert_nothing_stored(void)
{
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_series, 0);
}

/* 261 KB of gzip holding 256 MiB of empty samples: 413 for the ratio, at the cost
 * of at most 100 times the body (an arena of 16 times the inflated size would be
 * 4 GiB). */
static void test_gzip_of_empty_samples(void **state)
{
	(void)state;
	struct pd_api_server *s = start(0, 0);
	unsigned port = pd_api_port(s);
	size_t len;
	uint8_t *gz = gzip_repeated(empty_sample, sizeof(empty_sample), (256u << 20) / 2, &len);
	assert_true(len < 400 * 1024);
	reset_peak();
	long before = peak_kib();
	assert_int_equal(push(port, gz, len), 413);
	long grew = peak_kib() - before;
	print_message("peak RSS grew by %ld KiB\n", grew);
	assert_non_null(strstr(resp, "exceeds 100 times the compressed size"));
	assert_non_null(strstr(resp, "decompression ratio limit"));
	if (grew > 128 * 1024)
		fail_msg("the refused push raised the peak RSS by %ld KiB", grew);
	assert_true(metric(port, "profd_push_refused_total{reason=\"decompression_ratio\"}") == 1);
	assert_nothing_stored();
	free(gz);
	pd_api_stop(s);
}

/* A 61 KB gzip of a valid profile of 60 MiB (15.7 million samples): refused for
 * the ratio; with the ratio limit raised, for the decoded size, without the
 * arena being taken (the decoder counts its need first). */
static void test_gzip_of_valid_60mib_profile(void **state)
{
	(void)state;
	size_t len;
	uint8_t *gz = gzip_repeated(valid_sample, sizeof(valid_sample),
	                            (60u << 20) / sizeof(valid_sample), &len);
	assert_true(len < 128 * 1024);
	struct pd_api_server *s = start(0, 0);
	unsigned port = pd_api_port(s);
	assert_int_equal(push(port, gz, len), 413);
	assert_non_null(strstr(resp, "decompression ratio limit"));
	pd_api_stop(s);

	s = start(0, 10000);
	port = pd_api_port(s);
	reset_peak();
	long before = peak_kib();
	assert_int_equal(push(port, gz, len), 413);
	long grew = peak_kib() - before;
	print_message("peak RSS grew by %ld KiB\n", grew);
	assert_non_null(
	    strstr(resp, "decoding needs more than the memory limit of 67108864 bytes"));
	/* the inflated 60 MiB (in a buffer that doubles) and no arena */
	if (grew > 256 * 1024)
		fail_msg("the refused push raised the peak RSS by %ld KiB", grew);
	assert_true(metric(port, "profd_push_refused_total{reason=\"decoded_size\"}") == 1);
	assert_nothing_stored();
	free(gz);
	pd_api_stop(s);
}

/* 32 MiB of empty samples, uncompressed: 413 for the decoded size (80 bytes an
 * empty sample, 1.3 GiB in all), refused before the arena takes any of it. */
static void test_raw_empty_samples(void **state)
{
	(void)state;
	struct pd_api_server *s = start(0, 0);
	unsigned port = pd_api_port(s);
	struct wbuf w = {0};
	head(&w);
	size_t n = (32u << 20) / sizeof(empty_sample);
	uint8_t *body = malloc(w.n + n * sizeof(empty_sample));
	assert_non_null(body);
	memcpy(body, w.b, w.n);
	for (size_t i = 0; i < n; i++)
		memcpy(body + w.n + i * sizeof(empty_sample), empty_sample, sizeof(empty_sample));
	size_t len = w.n + n * sizeof(empty_sample);
	reset_peak();
	long before = peak_kib();
	assert_int_equal(push(port, body, len), 413);
	long grew = peak_kib() - before;
	print_message("peak RSS grew by %ld KiB\n", grew);
	assert_non_null(strstr(resp, "decoding needs more than the memory limit"));
	/* the body as received (a buffer that doubles), and no arena */
	if (grew > 192 * 1024)
		fail_msg("the refused push raised the peak RSS by %ld KiB", grew);
	assert_true(metric(port, "profd_push_refused_total{reason=\"decoded_size\"}") == 1);
	assert_nothing_stored();
	free(body);
	free(w.b);
	pd_api_stop(s);
}

/* A gzip of 65 MiB that inflates only about 16 times (a 16 KiB block repeated,
 * a counter every 128 bytes): within the ratio, so the push is refused when the
 * inflated bytes pass the largest profile the store takes, 64 MiB. */
static void test_gzip_over_the_store_limit(void **state)
{
	(void)state;
	struct pd_api_server *s = start(0, 0);
	unsigned port = pd_api_port(s);
	uint8_t block[16384];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(block); i++) {
		x = x * 1103515245u + 12345u;
		block[i] = (uint8_t)(x >> 16);
	}
	z_stream zs = {0};
	assert_int_equal(deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	size_t chunk = (size_t)1 << 20, total = (size_t)65 << 20;
	uint8_t *in = malloc(chunk), tmp[65536];
	assert_non_null(in);
	struct wbuf o = {0};
	uint32_t counter = 0;
	for (size_t done = 0; done < total; done += chunk) {
		for (size_t i = 0; i < chunk; i++)
			in[i] = block[(done + i) % sizeof(block)];
		for (size_t i = 0; i + 4 <= chunk; i += 128, counter++)
			memcpy(in + i, &counter, 4);
		zs.next_in = in;
		zs.avail_in = (uInt)chunk;
		int flush = done + chunk < total ? Z_NO_FLUSH : Z_FINISH;
		do {
			zs.next_out = tmp;
			zs.avail_out = sizeof(tmp);
			deflate(&zs, flush);
			put(&o, tmp, sizeof(tmp) - zs.avail_out);
		} while (zs.avail_out == 0);
	}
	deflateEnd(&zs);
	free(in);
	assert_true(o.n > total / 100 && o.n < total / 4);
	assert_int_equal(push(port, o.b, o.n), 413);
	assert_non_null(strstr(resp, "decompressed size exceeds the limit of 67108864 bytes"));
	assert_true(metric(port, "profd_push_refused_total{reason=\"decompressed_size\"}") == 1);
	assert_nothing_stored();
	free(o.b);
	pd_api_stop(s);
}

/* One sample with 150,000 empty labels (300 KB): a 400 that says so, not a 500
 * "out of memory". */
static void test_empty_labels(void **state)
{
	(void)state;
	struct pd_api_server *s = start(0, 0);
	unsigned port = pd_api_port(s);
	struct wbuf w = {0};
	head(&w);
	size_t nlab = 150000;
	varint(&w, 2 << 3 | 2); /* a sample */
	varint(&w, 2 + 2 * nlab);
	static const uint8_t value[] = {0x10, 0x01}, label[] = {0x1a, 0x00};
	put(&w, value, sizeof(value));
	for (size_t i = 0; i < nlab; i++)
		put(&w, label, sizeof(label));
	assert_int_equal(push(port, w.b, w.n), 400);
	assert_non_null(strstr(resp, "sample 0 has 150000 labels, more than the limit of 1024 "
	                             "labels per sample"));
	assert_true(metric(port, "profd_push_refused_total{reason=\"sample_labels\"}") == 1);
	assert_nothing_stored();
	free(w.b);
	pd_api_stop(s);
}

/* A real profile passes every limit and is stored. */
static void test_real_profile_stored(void **state)
{
	(void)state;
	struct pd_api_server *s = start(0, 0);
	unsigned port = pd_api_port(s);
	FILE *f = fopen(PD_TESTDATA "/profiles/prometheus/heap.pb.gz", "rb");
	assert_non_null(f);
	static uint8_t buf[1 << 20];
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_true(len > 0);
	assert_int_equal(push(port, buf, len), 200);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_series, 1);
	for (int i = 1; i <= 7; i++) {
		char name[96];
		static const char *const reasons[] = {
		    "decompressed_size", "decompression_ratio", "decoded_size", "samples",
		    "sample_labels",     "concurrency",         "body_size"};
		snprintf(name, sizeof(name), "profd_push_refused_total{reason=\"%s\"}",
		         reasons[i - 1]);
		assert_true(metric(port, name) == 0);
	}
	pd_api_stop(s);
}

/* Waits until profd_pushes_in_progress is want. */
static void wait_pushing(unsigned port, double want)
{
	int64_t deadline = now_ms() + 60000;
	while (metric(port, "profd_pushes_in_progress") != want) {
		if (now_ms() > deadline)
			fail_msg("profd_pushes_in_progress never became %g", want);
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* Two pushes held open by slow bodies fill --web.max-concurrent-pushes=2: a third
 * gets 429 with Retry-After before its body is read; once one of the two ends, a
 * push goes through again. */
static void test_concurrency(void **state)
{
	(void)state;
	struct pd_api_server *s = start(2, 0);
	unsigned port = pd_api_port(s);
	int a = push_start(port, 100), b = push_start(port, 100);
	send_all(a, "xx", 2);
	send_all(b, "xx", 2);
	wait_pushing(port, 2);
	assert_int_equal(push(port, "not a profile", 13), 429);
	assert_non_null(strstr(resp, "Retry-After: 1\r\n"));
	assert_non_null(strstr(resp, "too many pushes at once: all 2 slots "
	                             "(--web.max-concurrent-pushes) are taken"));
	assert_true(metric(port, "profd_push_refused_total{reason=\"concurrency\"}") == 1);
	/* a ends: its body completes (not a profile: 400), and its slot is free */
	char rest[98];
	memset(rest, 'x', sizeof(rest));
	send_all(a, rest, sizeof(rest));
	assert_true(read_until_close(a, resp, sizeof(resp), now_ms() + 60000) > 0);
	close(a);
	assert_int_equal(status_of("the held push"), 400);
	wait_pushing(port, 1);
	assert_int_equal(push(port, "not a profile", 13), 400);
	assert_true(metric(port, "profd_push_refused_total{reason=\"concurrency\"}") == 1);
	close(b);
	wait_pushing(port, 0);
	pd_api_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gzip_of_empty_samples),
	    cmocka_unit_test(test_gzip_of_valid_60mib_profile),
	    cmocka_unit_test(test_raw_empty_samples),
	    cmocka_unit_test(test_gzip_over_the_store_limit),
	    cmocka_unit_test(test_empty_labels),
	    cmocka_unit_test(test_concurrency),
	    cmocka_unit_test(test_real_profile_stored),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
