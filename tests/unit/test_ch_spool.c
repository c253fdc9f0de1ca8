/* test_ch_spool.c: the store's ClickHouse spool without a ClickHouse: the "sent
 * up to" file (round trip; missing, truncated, damaged: reported so that the
 * whole WAL is sent again), and a store whose ClickHouse does not answer:
 * commits are acknowledged into the spool and counted, flushes fail and are
 * counted, a full spool refuses commits with PD_EFULL and the spool-full message,
 * the head keeps no profiles but still refuses duplicates, and a reopened store
 * counts the same spool again (from the sent position, or from the WAL's start
 * when the position file is damaged). */
#define _XOPEN_SOURCE 700 /* nftw */
#include <fcntl.h>
#include <ftw.h>
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
#include "profd/tsdb.h"
#include "tsdb_int.h"
#include "wal_int.h"

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
	char *d = tmpdir(), *f = path_in(d, PD_TSDB_SENT_FILE);
	struct pd_err err = {0};
	uint32_t seg = 7;
	uint64_t off = 7;
	/* missing: nothing is known to be sent */
	assert_int_equal(tsdb_sent_read(d, &seg, &off, &err), PD_ENOTFOUND);
	assert_int_equal(seg, 0);
	assert_int_equal(off, 0);
	/* a round trip, offsets above 32 bits included */
	assert_int_equal(tsdb_sent_write(d, 12, ((uint64_t)5 << 32) + 77, &err), 0);
	assert_int_equal(tsdb_sent_read(d, &seg, &off, &err), 0);
	assert_int_equal(seg, 12);
	assert_true(off == ((uint64_t)5 << 32) + 77);
	assert_int_equal(tsdb_sent_write(d, 13, 8, &err), 0);
	assert_int_equal(tsdb_sent_read(d, &seg, &off, &err), 0);
	assert_int_equal(seg, 13);
	assert_int_equal(off, 8);
	/* no temporary file is left */
	char *tmp = path_in(d, PD_TSDB_SENT_FILE ".tmp");
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
	assert_int_equal(tsdb_sent_read(d, &seg, &off, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "CRC mismatch"));
	assert_non_null(strstr(err.msg, PD_TSDB_SENT_FILE));
	assert_int_equal(seg, 0);
	assert_int_equal(off, 0);
	b[19] ^= 0x10;
	/* truncated (a torn write on a file system that allows one) */
	write_bytes(f, b, 10);
	assert_int_equal(tsdb_sent_read(d, &seg, &off, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "10 bytes, want 24"));
	/* empty, and another file's bytes */
	write_bytes(f, b, 0);
	assert_int_equal(tsdb_sent_read(d, &seg, &off, &err), PD_ECORRUPT);
	write_bytes(f, "PDWL\x01\0\0\0xxxxxxxxxxxxxxxx", 24);
	assert_int_equal(tsdb_sent_read(d, &seg, &off, &err), PD_ECORRUPT);
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

static int open_store(struct pd_tsdb **db, const char *dir, struct pd_clickhouse *c,
		      uint64_t max, struct pd_err *err)
{
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.clickhouse = c;
	o.clickhouse_schema_pending = 1;
	o.clickhouse_spool_max = max;
	o.wal_sync = 1;
	return pd_tsdb_open(db, dir, &o, err);
}

static int push(struct pd_tsdb *db, const char *inst, int64_t t, struct pd_err *err)
{
	struct pd_tsdb_label l[] = {{"__name__", "heap"}, {"instance", inst}, {"job", "spool"}};
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_non_null(a);
	int rc = pd_tsdb_append(a, l, 3, t, heap, heap_len, err);
	if (rc) {
		pd_tsdb_rollback(a);
		return rc;
	}
	return pd_tsdb_commit(a, err);
}

static struct pd_tsdb_stats stats(struct pd_tsdb *db)
{
	struct pd_tsdb_stats st;
	pd_tsdb_stats(db, &st);
	return st;
}

static void wait_failures(struct pd_tsdb *db, uint64_t n)
{
	time_t deadline = time(NULL) + 120;
	while (stats(db).ch_flush_failures < n) {
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
	struct pd_tsdb_stats st = stats(db);
	assert_int_equal(st.clickhouse, 1);
	assert_int_equal(st.ch_spool_max, max);
	assert_int_equal(st.ch_spool_profiles, 0);
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
	assert_int_equal(st.ch_spool_full_refusals, 1);
	assert_int_equal(st.ch_spool_profiles, acked);
	assert_true(st.ch_spool_bytes <= max);
	assert_true(st.ch_spool_bytes > max - 2 * heap_len);
	assert_int_equal(st.ch_sent_profiles, 0);
	assert_int_equal(st.ch_flushes, 0);
	assert_true(st.ch_flush_failures >= 1);
	/* the head keeps no profiles, yet knows each series' newest time */
	assert_int_equal(st.head_samples, 0);
	assert_int_equal(push(db, "a", 1000, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "out of order"));
	/* a profile that does not decode is refused, not spooled */
	{
		struct pd_tsdb_label l[] = {{"__name__", "heap"}, {"job", "bad"}};
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		assert_int_equal(pd_tsdb_append(a, l, 2, 5, (const uint8_t *)"not pprof", 9, &err),
				 PD_EINVAL);
		assert_non_null(strstr(err.msg, "not a pprof profile"));
		pd_tsdb_rollback(a);
	}
	uint64_t bytes = st.ch_spool_bytes;
	pd_tsdb_close(db);

	/* reopened: the same spool, counted again from the WAL (no sent position yet) */
	char *sent = path_in(d, PD_TSDB_SENT_FILE);
	assert_int_not_equal(access(sent, F_OK), 0);
	assert_int_equal(open_store(&db, d, c, max, &err), 0);
	st = stats(db);
	assert_int_equal(st.ch_spool_profiles, acked);
	assert_int_equal(st.ch_spool_bytes, bytes);
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
	assert_int_equal(tsdb_sent_write(d, last, (uint64_t)sb.st_size, &err), 0);
	assert_int_equal(open_store(&db, d, c, max, &err), 0);
	st = stats(db);
	assert_int_equal(st.ch_spool_profiles, 0);
	assert_int_equal(st.ch_spool_bytes, 0);
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
	assert_int_equal(st.ch_spool_profiles, acked);
	assert_int_equal(st.ch_spool_bytes, bytes);
	pd_tsdb_close(db);

	pd_wal_listing_fini(&l);
	free(seg);
	free(wal);
	free(sent);
	pd_clickhouse_destroy(c);
	rmdir_all(d);
}

int main(void)
{
	struct pd_err err = {0};
	if (pd_file_read(PD_TESTDATA "/profiles/goapp/heap.pb.gz", (size_t)1 << 24, &heap, &heap_len,
			 &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sent_file),
		cmocka_unit_test(test_spool_without_clickhouse),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(heap);
	return rc;
}
