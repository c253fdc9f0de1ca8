/* test_ch_spool.c: the store's ClickHouse spool without a ClickHouse: the "sent
 * up to" file (round trip; missing, truncated, damaged: reported so that the
 * whole WAL is sent again), and a store whose ClickHouse does not answer:
 * commits are acknowledged into the spool and counted, flushes fail and are
 * counted, a full spool refuses commits with PD_EFULL and the spool-full message,
 * the head keeps no profiles but still refuses duplicates, and a reopened store
 * counts the same spool again (from the sent position, or from the WAL's start
 * when the position file is damaged); and against a stand-in for ClickHouse that
 * takes every insert: the spool drains, the position moves to the WAL's end,
 * segments wholly sent are deleted and a reopened store has nothing to send; and
 * while it answers 503 the spool fills and refuses, then drains once it answers. */
#define _GNU_SOURCE /* nftw, strcasestr */
#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/clickhouse.h"
#include "profd/labels.h"
#include "profd/tsdb.h"
#include "tsdb_int.h"
#include "wal_int.h"

/* the sink's spool file (pd_clickhouse_sink_create names it "clickhouse") */
#define SENT_FILE "clickhouse.sent"

/* The sink of each client the tests make (one each), freed with the client. */
static struct {
	struct pd_clickhouse *c;
	struct pd_storage_sink *s;
} sinks[16];

static const struct pd_storage_sink *sink_for(struct pd_clickhouse *c)
{
	struct pd_err err = {0};
	size_t i = 0;
	for (; i < 16 && sinks[i].c; i++)
		if (sinks[i].c == c)
			return sinks[i].s;
	assert_true(i < 16);
	assert_int_equal(pd_clickhouse_sink_create(&sinks[i].s, c, &err), 0);
	sinks[i].c = c;
	return sinks[i].s;
}

static void destroy_client(struct pd_clickhouse *c)
{
	for (size_t i = 0; i < 16; i++)
		if (sinks[i].c == c) {
			pd_clickhouse_sink_destroy(sinks[i].s);
			sinks[i].c = NULL;
			sinks[i].s = NULL;
		}
	pd_clickhouse_destroy(c);
}

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_ch_spool_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

static char *path_in(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	assert_non_null(p);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static void write_bytes(const char *path, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

static void test_sent_file(void **state)
{
	(void)state;
	char *d = tmpdir(), *f = path_in(d, SENT_FILE);
	struct pd_err err = {0};
	uint32_t seg = 7;
	uint64_t off = 7;
	/* missing: nothing is known to be sent */
	assert_int_equal(tsdb_sent_read(d, "clickhouse", &seg, &off, &err), PD_ENOTFOUND);
	assert_int_equal(seg, 0);
	assert_int_equal(off, 0);
	/* a round trip, offsets above 32 bits included */
	assert_int_equal(tsdb_sent_write(d, "clickhouse", 12, ((uint64_t)5 << 32) + 77, &err), 0);
	assert_int_equal(tsdb_sent_read(d, "clickhouse", &seg, &off, &err), 0);
	assert_int_equal(seg, 12);
	assert_true(off == ((uint64_t)5 << 32) + 77);
	assert_int_equal(tsdb_sent_write(d, "clickhouse", 13, 8, &err), 0);
	assert_int_equal(tsdb_sent_read(d, "clickhouse", &seg, &off, &err), 0);
	assert_int_equal(seg, 13);
	assert_int_equal(off, 8);
	/* no temporary file is left */
	char *tmp = path_in(d, SENT_FILE ".tmp");
	assert_int_not_equal(access(tmp, F_OK), 0);
	free(tmp);

	uint8_t b[24];
	FILE *fp = fopen(f, "rb");
	assert_non_null(fp);
	assert_int_equal(fread(b, 1, sizeof(b), fp), sizeof(b));
	fclose(fp);
	assert_memory_equal(b, "PDCS\x01\0\0\0", 8);
	/* one bit flipped in the offset: the CRC says so, the position is 0 */
	b[19] ^= 0x10;
	write_bytes(f, b, sizeof(b));
	assert_int_equal(tsdb_sent_read(d, "clickhouse", &seg, &off, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "CRC mismatch"));
	assert_non_null(strstr(err.msg, SENT_FILE));
	assert_int_equal(seg, 0);
	assert_int_equal(off, 0);
	b[19] ^= 0x10;
	/* truncated (a torn write on a file system that allows one) */
	write_bytes(f, b, 10);
	assert_int_equal(tsdb_sent_read(d, "clickhouse", &seg, &off, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "10 bytes, want 24"));
	/* empty, and another file's bytes */
	write_bytes(f, b, 0);
	assert_int_equal(tsdb_sent_read(d, "clickhouse", &seg, &off, &err), PD_ECORRUPT);
	write_bytes(f, "PDWL\x01\0\0\0xxxxxxxxxxxxxxxx", 24);
	assert_int_equal(tsdb_sent_read(d, "clickhouse", &seg, &off, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "bad magic"));
	free(f);
	rmdir_all(d);
}

/* ---- a store whose ClickHouse does not answer ----------------------------------- */

static uint8_t *heap;
static size_t heap_len;

static struct pd_clickhouse *dead_clickhouse(void)
{
	struct pd_clickhouse_opts o = {.url = "http://127.0.0.1:1/", .timeout_ms = 2000};
	struct pd_clickhouse *c;
	struct pd_err err = {0};
	assert_int_equal(pd_clickhouse_create(&c, &o, &err), 0);
	return c;
}

static int open_store(struct pd_tsdb **db, const char *dir, struct pd_clickhouse *c, uint64_t max,
                      struct pd_err *err)
{
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.sink = sink_for(c);
	o.sink_pending = 1;
	o.spool_max = max;
	o.wal_sync = 1;
	return pd_tsdb_open(db, dir, &o, err);
}

static int push(struct pd_tsdb *db, const char *inst, int64_t t, struct pd_err *err)
{
	struct pd_storage_label l[] = {{"__name__", "heap"}, {"instance", inst}, {"job", "spool"}};
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_non_null(a);
	int rc = pd_tsdb_append(a, l, 3, t, heap, heap_len, err);
	if (rc) {
		pd_tsdb_rollback(a);
		return rc;
	}
	return pd_tsdb_commit(a, err);
}

static struct pd_storage_stats stats(struct pd_tsdb *db)
{
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	return st;
}

static void wait_failures(struct pd_tsdb *db, uint64_t n)
{
	time_t deadline = time(NULL) + 120;
	while (stats(db).remote_flush_failures < n) {
		assert_true(time(NULL) < deadline);
		usleep(50 * 1000);
	}
}

static void test_spool_without_clickhouse(void **state)
{
	(void)state;
	char *d = tmpdir();
	struct pd_clickhouse *c = dead_clickhouse();
	struct pd_tsdb *db;
	struct pd_err err = {0};
	const uint64_t max = 20 * (uint64_t)heap_len;

	assert_int_equal(open_store(&db, d, c, max, &err), 0);
	struct pd_storage_stats st = stats(db);
	assert_int_equal(st.remote, 1);
	assert_int_equal(st.remote_spool_max, max);
	assert_int_equal(st.remote_spool_profiles, 0);
	/* acknowledged into the spool while ClickHouse does not answer */
	size_t acked = 0;
	int rc = 0;
	for (int64_t t = 1000; acked < 1000; t += 1000) {
		if ((rc = push(db, "a", t, &err)))
			break;
		acked++;
		if (acked == 3)
			wait_failures(db, 1); /* the schema, then the flushes, fail */
	}
	/* until the spool is full: refused, said so, counted, nothing dropped */
	assert_int_equal(rc, PD_EFULL);
	assert_non_null(strstr(err.msg, "the ClickHouse spool is full"));
	assert_true(acked >= 3);
	st = stats(db);
	assert_int_equal(st.remote_spool_full_refusals, 1);
	assert_int_equal(st.remote_spool_profiles, acked);
	assert_true(st.remote_spool_bytes <= max);
	assert_true(st.remote_spool_bytes > max - 2 * heap_len);
	assert_int_equal(st.remote_sent_profiles, 0);
	assert_int_equal(st.remote_flushes, 0);
	assert_true(st.remote_flush_failures >= 1);
	/* the head keeps no profiles, yet knows each series' newest time */
	assert_int_equal(st.head_samples, 0);
	assert_int_equal(push(db, "a", 1000, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "out of order"));
	/* a profile that does not decode is refused, not spooled */
	{
		struct pd_storage_label l[] = {{"__name__", "heap"}, {"job", "bad"}};
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		assert_int_equal(pd_tsdb_append(a, l, 2, 5, (const uint8_t *)"not pprof", 9, &err),
		                 PD_EINVAL);
		assert_non_null(strstr(err.msg, "not a pprof profile"));
		pd_tsdb_rollback(a);
	}
	uint64_t bytes = st.remote_spool_bytes;
	pd_tsdb_close(db);

	/* reopened: the same spool, counted again from the WAL (no sent position yet) */
	char *sent = path_in(d, SENT_FILE);
	assert_int_not_equal(access(sent, F_OK), 0);
	assert_int_equal(open_store(&db, d, c, max, &err), 0);
	st = stats(db);
	assert_int_equal(st.remote_spool_profiles, acked);
	assert_int_equal(st.remote_spool_bytes, bytes);
	assert_int_equal(push(db, "a", 1000, &err), PD_EINVAL); /* replayed: still a duplicate */
	pd_tsdb_close(db);

	/* a sent position at the WAL's end: nothing is left to send */
	char *wal = path_in(d, "wal");
	struct pd_wal_listing l = {0};
	assert_int_equal(pd_wal_list(wal, &l, &err), 0);
	assert_true(l.nsegs >= 1);
	uint32_t last = l.segs[l.nsegs - 1];
	char *seg = pd_wal_seg_path(wal, last);
	struct stat sb;
	assert_int_equal(stat(seg, &sb), 0);
	assert_int_equal(tsdb_sent_write(d, "clickhouse", last, (uint64_t)sb.st_size, &err), 0);
	assert_int_equal(open_store(&db, d, c, max, &err), 0);
	st = stats(db);
	assert_int_equal(st.remote_spool_profiles, 0);
	assert_int_equal(st.remote_spool_bytes, 0);
	pd_tsdb_close(db);

	/* the same file damaged: everything is sent again rather than lost */
	uint8_t b[24];
	FILE *fp = fopen(sent, "rb");
	assert_non_null(fp);
	assert_int_equal(fread(b, 1, sizeof(b), fp), sizeof(b));
	fclose(fp);
	b[10] ^= 1;
	write_bytes(sent, b, sizeof(b));
	assert_int_equal(open_store(&db, d, c, max, &err), 0);
	st = stats(db);
	assert_int_equal(st.remote_spool_profiles, acked);
	assert_int_equal(st.remote_spool_bytes, bytes);
	pd_tsdb_close(db);

	pd_wal_listing_fini(&l);
	free(seg);
	free(wal);
	free(sent);
	destroy_client(c);
	rmdir_all(d);
}

/* ---- a stand-in for ClickHouse: answers 200 to every request ------------------------ */

struct fake {
	int fd;
	int port;
	pthread_t th;
	int inserts;           /* requests whose URL carries an INSERT (__atomic) */
	int status;            /* the answer: 0 is 200 (__atomic) */
	struct pd_buf *bodies; /* when set, the bodies of INSERTs are appended here */
};

/* Reads one request (headers, then Content-Length bytes of body) and answers. */
static void serve_one(struct fake *f, int c)
{
	char buf[65536];
	size_t have = 0;
	char *end = NULL;
	while (!end && have < sizeof(buf) - 1) {
		ssize_t n = read(c, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return;
		have += (size_t)n;
		buf[have] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	if (!end)
		return;
	size_t hlen = (size_t)(end - buf) + 4, body = 0;
	char *cl = strcasestr(buf, "content-length:");
	if (cl && cl < end)
		body = strtoul(cl + 15, NULL, 10);
	int insert = strstr(buf, "INSERT") && strstr(buf, "INSERT") < end;
	if (insert)
		__atomic_fetch_add(&f->inserts, 1, __ATOMIC_RELAXED);
	if (strcasestr(buf, "expect: 100-continue"))
		assert_true(write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 25);
	size_t got = have - hlen;
	if (insert && f->bodies)
		assert_int_equal(pd_buf_append(f->bodies, buf + hlen, got), 0);
	while (got < body) {
		ssize_t n = read(c, buf, sizeof(buf));
		if (n <= 0)
			return;
		got += (size_t)n;
		if (insert && f->bodies)
			assert_int_equal(pd_buf_append(f->bodies, buf, (size_t)n), 0);
	}
	const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	const char *down = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n"
	                   "Connection: close\r\n\r\ndown\n";
	const char *a = __atomic_load_n(&f->status, __ATOMIC_RELAXED) == 503 ? down : ok;
	assert_true(write(c, a, strlen(a)) == (ssize_t)strlen(a));
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	for (;;) {
		int c = accept(f->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		serve_one(f, c);
		close(c);
	}
}

static void fake_start(struct fake *f)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	f->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(f->fd >= 0);
	assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->fd, 16), 0);
	assert_int_equal(getsockname(f->fd, (struct sockaddr *)&a, &al), 0);
	f->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
	shutdown(f->fd, SHUT_RDWR);
	close(f->fd);
	pthread_join(f->th, NULL);
}

static void test_spool_drains(void **state)
{
	(void)state;
	char *d = tmpdir();
	struct fake f = {0};
	char url[64];
	struct pd_err err = {0};
	struct pd_clickhouse *c;
	struct pd_tsdb *db;
	fake_start(&f);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f.port);
	struct pd_clickhouse_opts co = {.url = url, .timeout_ms = 10000};
	assert_int_equal(pd_clickhouse_create(&c, &co, &err), 0);
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.sink = sink_for(c);
	o.wal_sync = 1;
	o.wal_segment_size = 4 * heap_len; /* a few profiles a segment: many segments */
	assert_int_equal(pd_tsdb_open(&db, d, &o, &err), 0);
	const uint64_t n = 40;
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(push(db, i % 2 ? "a" : "b", 1000 * (int64_t)(i + 1), &err), 0);
	time_t deadline = time(NULL) + 120;
	while (stats(db).remote_sent_profiles < n || stats(db).remote_spool_profiles) {
		assert_true(time(NULL) < deadline);
		usleep(50 * 1000);
	}
	struct pd_storage_stats st = stats(db);
	assert_int_equal(st.remote_sent_profiles, n);
	assert_int_equal(st.remote_spool_bytes, 0);
	assert_true(st.remote_flushes >= 1);
	assert_int_equal(st.remote_flush_failures, 0);
	assert_true(st.remote_last_flush_ms > 0);
	assert_true(__atomic_load_n(&f.inserts, __ATOMIC_RELAXED) >= 1);
	/* segments wholly sent are gone, their series kept in a checkpoint */
	char *wal = path_in(d, "wal");
	struct pd_wal_listing l = {0};
	deadline = time(NULL) + 120;
	for (;;) {
		assert_int_equal(pd_wal_list(wal, &l, &err), 0);
		if (l.nsegs <= 2 && l.ncps == 1)
			break;
		pd_wal_listing_fini(&l);
		assert_true(time(NULL) < deadline);
		usleep(50 * 1000);
	}
	assert_true(l.segs[0] > 3);
	uint32_t seg;
	uint64_t off;
	assert_int_equal(tsdb_sent_read(d, "clickhouse", &seg, &off, &err), 0);
	assert_true(seg >= l.segs[0]);
	pd_wal_listing_fini(&l);
	/* more after the checkpoint: their series' entries are in it, not in the
	 * segments the shipper reads now */
	for (uint64_t i = n; i < n + 4; i++)
		assert_int_equal(push(db, i % 2 ? "a" : "b", 1000 * (int64_t)(i + 1), &err), 0);
	deadline = time(NULL) + 120;
	while (stats(db).remote_sent_profiles < n + 4) {
		assert_true(time(NULL) < deadline);
		usleep(50 * 1000);
	}
	assert_int_equal(stats(db).remote_skipped_profiles, 0);
	pd_tsdb_close(db);
	/* reopened: nothing to send, and the series are known from the checkpoint */
	assert_int_equal(pd_tsdb_open(&db, d, &o, &err), 0);
	st = stats(db);
	assert_int_equal(st.remote_spool_profiles, 0);
	assert_int_equal(st.remote_spool_bytes, 0);
	assert_int_equal(push(db, "a", 1000 * (int64_t)(n + 4), &err), PD_EINVAL); /* duplicate */
	assert_int_equal(push(db, "a", 1000 * (int64_t)(n + 10), &err), 0);
	deadline = time(NULL) + 120;
	while (stats(db).remote_sent_profiles < 1) {
		assert_true(time(NULL) < deadline);
		usleep(50 * 1000);
	}
	assert_int_equal(stats(db).remote_skipped_profiles, 0);
	pd_tsdb_close(db);
	free(wal);
	destroy_client(c);
	fake_stop(&f);
	rmdir_all(d);
}

/* A ClickHouse behind a proxy answering 503: the spool fills and refuses; once
 * ClickHouse answers again it drains, and commits are taken again. */
static void test_spool_full_then_drains(void **state)
{
	(void)state;
	char *d = tmpdir();
	struct fake f = {.status = 503};
	char url[64];
	struct pd_err err = {0};
	struct pd_clickhouse *c;
	struct pd_tsdb *db;
	fake_start(&f);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f.port);
	struct pd_clickhouse_opts co = {.url = url, .timeout_ms = 10000};
	assert_int_equal(pd_clickhouse_create(&c, &co, &err), 0);
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.sink = sink_for(c);
	o.wal_sync = 1;
	o.spool_max = 8 * heap_len;
	assert_int_equal(pd_tsdb_open(&db, d, &o, &err), 0);
	int64_t t = 1000;
	size_t acked = 0;
	int rc;
	while ((rc = push(db, "a", t, &err)) == 0) {
		acked++;
		t += 1000;
		if (acked == 1)
			wait_failures(db, 1); /* the first flush failed: the batch stays */
	}
	assert_int_equal(rc, PD_EFULL);
	assert_true(acked >= 2);
	assert_int_equal(stats(db).remote_spool_profiles, acked);
	assert_int_equal(stats(db).remote_sent_profiles, 0);
	assert_int_equal(push(db, "b", 1, &err), PD_EFULL); /* any series */
	/* ClickHouse answers again: everything acknowledged goes, room comes back */
	__atomic_store_n(&f.status, 0, __ATOMIC_RELAXED);
	time_t deadline = time(NULL) + 120;
	while (stats(db).remote_spool_profiles || stats(db).remote_sent_profiles < acked) {
		assert_true(time(NULL) < deadline);
		usleep(50 * 1000);
	}
	assert_int_equal(stats(db).remote_sent_profiles, acked);
	assert_int_equal(stats(db).remote_spool_full_refusals, 2);
	assert_int_equal(push(db, "a", t, &err), 0);
	pd_tsdb_close(db);
	destroy_client(c);
	fake_stop(&f);
	rmdir_all(d);
}

/* Whether the INSERT bodies hold a profiles row of the series of instance inst
 * at t: its series id (the labels' hash) and its time, as RowBinary puts them. */
static int sent_as(const struct pd_buf *b, const char *inst, int64_t t)
{
	struct pd_labels *ls;
	struct pd_err err = {0};
	assert_int_equal(pd_labels_from_strings(&ls, &err, "__name__", "heap", "instance", inst,
	                                        "job", "spool", NULL),
	                 0);
	uint64_t id = pd_labels_hash(ls);
	pd_labels_destroy(ls);
	uint8_t key[16];
	for (int i = 0; i < 8; i++) {
		key[i] = (uint8_t)(id >> (8 * i));
		key[8 + i] = (uint8_t)((uint64_t)t >> (8 * i));
	}
	for (size_t i = 0; i + sizeof(key) <= b->len; i++)
		if (memcmp(b->data + i, key, sizeof(key)) == 0)
			return 1;
	return 0;
}

static void old_series(struct pd_wal *w, uint64_t ref, const char *inst)
{
	struct pd_err err = {0};
	struct pd_lpair l[] = {{"__name__", "heap"}, {"instance", inst}, {"job", "spool"}};
	assert_int_equal(pd_wal_add_series(w, ref, l, 3, &err), 0);
}

static void old_sample(struct pd_wal *w, uint64_t ref, int64_t t)
{
	struct pd_err err = {0};
	assert_int_equal(pd_wal_add_sample(w, ref, t, heap, heap_len, &err), 0);
	assert_int_equal(pd_wal_commit(w, &err), 0);
}

static void wait_sent(struct pd_tsdb *db, uint64_t n)
{
	time_t deadline = time(NULL) + 120;
	while (stats(db).remote_sent_profiles < n || stats(db).remote_spool_profiles) {
		assert_true(time(NULL) < deadline);
		usleep(50 * 1000);
	}
}

/* A WAL of earlier versions, whose refs named several series over its life
 * (series(2,B) series(3,C), then series(2,C), series(1,B), series(3,D)): the
 * shipper files each profile under the series of the latest entry of its ref;
 * after restarts, new series and old ones are sent under their own labels. */
static void test_spool_refs(void **state)
{
	(void)state;
	char *d = tmpdir();
	char *wal = path_in(d, "wal");
	struct fake f = {0};
	struct pd_buf bodies;
	char url[64];
	struct pd_err err = {0};
	struct pd_clickhouse *c;
	struct pd_tsdb *db;
	struct pd_wal *w;
	struct pd_wal_opts wo = {.sync = 1};
	pd_buf_init(&bodies, 0);
	f.bodies = &bodies;
	assert_int_equal(mkdir(wal, 0755), 0);
	assert_int_equal(pd_wal_open(&w, wal, &wo, &err), 0);
	old_series(w, 2, "B");
	old_series(w, 3, "C");
	old_sample(w, 2, 1000);
	old_sample(w, 3, 1000);
	old_series(w, 2, "C");
	old_sample(w, 2, 2000);
	old_series(w, 1, "B");
	old_sample(w, 1, 3000);
	old_series(w, 3, "D");
	old_sample(w, 3, 4000);
	pd_wal_close(w);

	fake_start(&f);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f.port);
	struct pd_clickhouse_opts co = {.url = url, .timeout_ms = 10000, .no_compress = 1};
	assert_int_equal(pd_clickhouse_create(&c, &co, &err), 0);
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.sink = sink_for(c);
	o.wal_sync = 1;
	assert_int_equal(pd_tsdb_open(&db, d, &o, &err), 0);
	wait_sent(db, 5);
	assert_int_equal(push(db, "C", 5000, &err), 0);
	assert_int_equal(push(db, "E", 5000, &err), 0);
	assert_int_equal(push(db, "D", 5000, &err), 0);
	wait_sent(db, 8);
	pd_tsdb_close(db);
	assert_int_equal(pd_tsdb_open(&db, d, &o, &err), 0);
	assert_int_equal(push(db, "F", 6000, &err), 0);
	assert_int_equal(push(db, "C", 6000, &err), 0);
	assert_int_equal(push(db, "B", 6000, &err), 0);
	wait_sent(db, 3);
	assert_int_equal(stats(db).remote_skipped_profiles, 0);
	pd_tsdb_close(db);
	fake_stop(&f);

	static const struct {
		const char *inst;
		int64_t t;
	} want[] = {{"B", 1000}, {"C", 1000}, {"C", 2000}, {"B", 3000}, {"D", 4000}, {"C", 5000},
	            {"E", 5000}, {"D", 5000}, {"F", 6000}, {"C", 6000}, {"B", 6000}};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!sent_as(&bodies, want[i].inst, want[i].t))
			fail_msg("the profile of %s at %lld was not sent under %s's labels",
			         want[i].inst, (long long)want[i].t, want[i].inst);
	/* and not under another series' */
	assert_false(sent_as(&bodies, "B", 2000));
	assert_false(sent_as(&bodies, "C", 4000));
	assert_false(sent_as(&bodies, "C", 3000));
	pd_buf_fini(&bodies);
	free(wal);
	destroy_client(c);
	rmdir_all(d);
}

int main(void)
{
	struct pd_err err = {0};
	if (pd_file_read(PD_TESTDATA "/profiles/goapp/heap.pb.gz", (size_t)1 << 24, &heap,
	                 &heap_len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sent_file),    cmocka_unit_test(test_spool_without_clickhouse),
	    cmocka_unit_test(test_spool_drains), cmocka_unit_test(test_spool_full_then_drains),
	    cmocka_unit_test(test_spool_refs),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(heap);
	return rc;
}
