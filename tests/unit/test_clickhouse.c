/* test_clickhouse.c: unit tests of pkg/clickhouse that need no server: RowBinary
 * encoding byte for byte as ClickHouse's documentation of the format gives it,
 * the sticky-error reader, content ids, and the client's refusals of bad options
 * and credentials files. The tests against a real server are in
 * tests/integration/clickhouse.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "profd/clickhouse.h"

static void expect_bytes(const struct pd_buf *b, const uint8_t *want, size_t n)
{
	assert_int_equal(b->len, n);
	assert_memory_equal(b->data, want, n);
}

static void test_rb_integers(void **state)
{
	(void)state;
	struct pd_buf b;
	pd_buf_init(&b, 0);
	/* UInt8 1 byte; UInt32/UInt64/Int64 little-endian, fixed width */
	assert_int_equal(pd_clickhouse_rb_u8(&b, 0xab), 0);
	assert_int_equal(pd_clickhouse_rb_u32(&b, 0x01020304), 0);
	assert_int_equal(pd_clickhouse_rb_u64(&b, 300), 0);
	assert_int_equal(pd_clickhouse_rb_i64(&b, -2), 0);
	static const uint8_t want[] = {0xab, 0x04, 0x03, 0x02, 0x01, 0x2c, 0x01, 0, 0, 0, 0, 0,
				       0,    0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	expect_bytes(&b, want, sizeof(want));
	pd_buf_fini(&b);
}

static void test_rb_varint_string_array(void **state)
{
	(void)state;
	struct pd_buf b;
	pd_buf_init(&b, 0);
	/* LEB128: 0, 127, 128, 300, 2^64-1 */
	pd_clickhouse_rb_varint(&b, 0);
	pd_clickhouse_rb_varint(&b, 127);
	pd_clickhouse_rb_varint(&b, 128);
	pd_clickhouse_rb_varint(&b, 300);
	pd_clickhouse_rb_varint(&b, UINT64_MAX);
	static const uint8_t want1[] = {0x00, 0x7f, 0x80, 0x01, 0xac, 0x02, 0xff, 0xff,
					0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	expect_bytes(&b, want1, sizeof(want1));
	b.len = 0;
	/* String 'ab', then Array(UInt64) [1, 2] as the server sends SELECT 'ab', [1, 2] */
	pd_clickhouse_rb_string(&b, "ab", 2);
	pd_clickhouse_rb_varint(&b, 2);
	pd_clickhouse_rb_u64(&b, 1);
	pd_clickhouse_rb_u64(&b, 2);
	static const uint8_t want2[] = {0x02, 'a', 'b', 0x02, 1, 0, 0, 0, 0, 0, 0, 0,
					2,    0,   0,   0,    0, 0, 0, 0};
	expect_bytes(&b, want2, sizeof(want2));
	/* a 200-byte string: its length takes two bytes */
	b.len = 0;
	char s[200];
	memset(s, 'x', sizeof(s));
	pd_clickhouse_rb_string(&b, s, sizeof(s));
	assert_int_equal(b.len, 202);
	assert_int_equal(b.data[0], 0xc8);
	assert_int_equal(b.data[1], 0x01);
	pd_buf_fini(&b);
}

static void test_rbr_round_trip_and_errors(void **state)
{
	(void)state;
	struct pd_buf b;
	pd_buf_init(&b, 0);
	pd_clickhouse_rb_u64(&b, 0x1122334455667788ull);
	pd_clickhouse_rb_string(&b, "profd", 5);
	pd_clickhouse_rb_i64(&b, INT64_MIN);
	pd_clickhouse_rb_u32(&b, 7);
	struct pd_clickhouse_rbr r;
	pd_clickhouse_rbr_init(&r, b.data, b.len);
	assert_true(pd_clickhouse_rbr_u64(&r) == 0x1122334455667788ull);
	size_t n;
	const uint8_t *s = pd_clickhouse_rbr_string(&r, &n);
	assert_int_equal(n, 5);
	assert_memory_equal(s, "profd", 5);
	assert_true(pd_clickhouse_rbr_i64(&r) == INT64_MIN);
	assert_int_equal(pd_clickhouse_rbr_u32(&r), 7);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.off, r.len);
	/* past the end: the error sticks and reads give 0 */
	assert_int_equal(pd_clickhouse_rbr_u8(&r), 0);
	assert_int_equal(r.err, PD_ECORRUPT);
	assert_true(pd_clickhouse_rbr_u64(&r) == 0);
	/* a string longer than what is left */
	static const uint8_t shortstr[] = {0x05, 'a', 'b'};
	pd_clickhouse_rbr_init(&r, shortstr, sizeof(shortstr));
	pd_clickhouse_rbr_string(&r, &n);
	assert_int_equal(r.err, PD_ECORRUPT);
	/* an array count that the bytes left cannot hold */
	static const uint8_t bigcount[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3};
	pd_clickhouse_rbr_init(&r, bigcount, sizeof(bigcount));
	assert_int_equal(pd_clickhouse_rbr_count(&r, 8), 0);
	assert_int_equal(r.err, PD_ECORRUPT);
	/* a varint of eleven bytes */
	static const uint8_t longvar[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					  0xff, 0xff, 0xff, 0xff, 0x01};
	pd_clickhouse_rbr_init(&r, longvar, sizeof(longvar));
	pd_clickhouse_rbr_varint(&r);
	assert_int_equal(r.err, PD_ECORRUPT);
	pd_buf_fini(&b);
}

static void test_string_id(void **state)
{
	(void)state;
	assert_true(pd_clickhouse_string_id("", 0) == 0);
	/* XXH64("abc", seed 0), from xxHash's reference implementation */
	assert_true(pd_clickhouse_string_id("abc", 3) == 0x44bc2cf5ad770999ull);
}

static void test_client_options(void **state)
{
	(void)state;
	struct pd_clickhouse *c = NULL;
	struct pd_err err = {0};
	struct pd_clickhouse_opts o = {.url = "localhost:8123"};
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "want http://HOST:PORT/"));
	o.url = "http://127.0.0.1:1/";
	o.database = "prof-d";
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "\"prof-d\""));
	o.database = NULL;
	/* a credentials file with one line: the password is missing */
	char path[] = "/tmp/pd_ch_credsXXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "user\n", 5), 5);
	close(fd);
	o.credentials_file = "/nonexistent/profd-credentials";
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EIO);
	assert_non_null(strstr(err.msg, "/nonexistent/profd-credentials"));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "user", 4), 4);
	close(fd);
	o.credentials_file = path;
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "password on the second"));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "user\r\nsecret\n", 13), 13);
	close(fd);
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), 0);
	assert_string_equal(pd_clickhouse_database(c), "profd");
	pd_clickhouse_destroy(c);
	unlink(path);
	/* nothing listens on port 1: the error names the URL and the statement */
	o.credentials_file = NULL;
	o.timeout_ms = 5000;
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), 0);
	assert_int_equal(pd_clickhouse_exec(c, "SELECT 1", NULL, 0, NULL, &err), PD_EUNAVAIL);
	assert_non_null(strstr(err.msg, "http://127.0.0.1:1"));
	assert_non_null(strstr(err.msg, "SELECT 1"));
	pd_clickhouse_destroy(c);
}

static void test_cluster_nodes(void **state)
{
	(void)state;
	struct pd_clickhouse *c = NULL;
	struct pd_err err = {0};
	struct pd_clickhouse_opts o = {.url = "http://127.0.0.1:1/", .nodes = "http://127.0.0.1:2/"};
	/* nodes belong to a cluster */
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "without a cluster"));
	o.cluster = "profd-cluster";
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "cluster \"profd-cluster\""));
	o.cluster = "profd_cluster";
	/* each URL is checked, the wrong one named with its place */
	o.nodes = "http://127.0.0.1:2/,ftp://127.0.0.1:3/";
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "URL 2 \"ftp://127.0.0.1:3\""));
	o.nodes = "http://127.0.0.1:2/,";
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "URL 2 \"\""));
	/* a bounded list */
	char many[300 * 20] = "";
	for (int i = 0; i <= PD_CLICKHOUSE_MAX_NODES; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%shttp://h%d:1", i ? "," : "",
			 i);
	o.nodes = many;
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "more than the 256 allowed"));
	/* the URLs kept, trailing slashes dropped; node 0 is url */
	o.nodes = "http://127.0.0.1:2/,http://127.0.0.1:3//";
	o.timeout_ms = 5000;
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), 0);
	assert_int_equal(pd_clickhouse_nnodes(c), 3);
	assert_string_equal(pd_clickhouse_node_url(c, 0), "http://127.0.0.1:1");
	assert_string_equal(pd_clickhouse_node_url(c, 1), "http://127.0.0.1:2");
	assert_string_equal(pd_clickhouse_node_url(c, 2), "http://127.0.0.1:3");
	assert_null(pd_clickhouse_node_url(c, 3));
	/* a statement on node 2 goes to its URL (nothing listens there) */
	assert_true(pd_clickhouse_exec_at(c, 2, "SELECT 2", NULL, 0, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "http://127.0.0.1:3"));
	assert_int_equal(pd_clickhouse_exec_at(c, 3, "SELECT 3", NULL, 0, NULL, &err), PD_EINVAL);
	pd_clickhouse_destroy(c);
	/* without a cluster there is one node */
	o.cluster = NULL;
	o.nodes = "";
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), 0);
	assert_int_equal(pd_clickhouse_nnodes(c), 1);
	pd_clickhouse_destroy(c);
}


/* A port nothing listens on: bound, then closed. */
static int closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* A password in a URL never shows: not in the error of a failed request, not in
 * a refused URL, not in pd_clickhouse_node_url; the request still goes to the
 * URL as given. */
static void test_url_password_hidden(void **state)
{
	struct pd_clickhouse *c = NULL;
	struct pd_err err = {0};
	char url[128], nodes[256], want[128];
	int port = closed_port();
	snprintf(url, sizeof(url), "http://profd:hunter2@127.0.0.1:%d/", port);
	snprintf(nodes, sizeof(nodes), "http://other:s3cret@127.0.0.1:%d/", port);
	struct pd_clickhouse_opts o = {
	    .url = url, .timeout_ms = 5000, .cluster = "c1", .nodes = nodes};
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), 0);
	snprintf(want, sizeof(want), "http://profd:xxxxx@127.0.0.1:%d", port);
	assert_string_equal(pd_clickhouse_node_url(c, 0), want);
	snprintf(want, sizeof(want), "http://other:xxxxx@127.0.0.1:%d", port);
	assert_string_equal(pd_clickhouse_node_url(c, 1), want);
	/* a read (SELECT) against the closed port */
	assert_int_equal(pd_clickhouse_exec(c, "SELECT 1 FORMAT RowBinary", NULL, 0, NULL, &err),
	                 PD_EUNAVAIL);
	assert_null(strstr(err.msg, "hunter2"));
	snprintf(want, sizeof(want), "clickhouse http://profd:xxxxx@127.0.0.1:%d: ", port);
	assert_non_null(strstr(err.msg, want));
	/* a write (an insert with data) on the other node */
	assert_int_equal(pd_clickhouse_exec_at(c, 1, "INSERT INTO t FORMAT RowBinary", "x", 1, NULL,
	                                       &err),
	                 PD_EUNAVAIL);
	assert_null(strstr(err.msg, "s3cret"));
	assert_non_null(strstr(err.msg, "other:xxxxx@"));
	pd_clickhouse_destroy(c);
	/* refused URLs are named without their password */
	o.url = "ftp://profd:hunter2@127.0.0.1/";
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_null(strstr(err.msg, "hunter2"));
	assert_non_null(strstr(err.msg, "ftp://profd:xxxxx@127.0.0.1/"));
	o.url = url;
	o.nodes = "http://a:b@h1/,ftp://other:s3cret@h2/";
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_null(strstr(err.msg, "s3cret"));
	assert_non_null(strstr(err.msg, "URL 2 \"ftp://other:xxxxx@h2\""));
	o.cluster = NULL;
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), PD_EINVAL);
	assert_null(strstr(err.msg, "s3cret"));
	assert_non_null(strstr(err.msg, "without a cluster"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rb_integers),
		cmocka_unit_test(test_rb_varint_string_array),
		cmocka_unit_test(test_rbr_round_trip_and_errors),
		cmocka_unit_test(test_string_id),
		cmocka_unit_test(test_client_options),
		cmocka_unit_test(test_cluster_nodes),
		cmocka_unit_test(test_url_password_hidden),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
