/* test_wal.c: unit tests of the WAL (pkg/tsdb/wal*.c): CRC32C, round trips over
 * many segments, rollback, checkpoints and the states a crash during one leaves,
 * torn tails cut at every byte, bit flips, damaged and missing segments, format
 * versions and record types from the future, malformed payloads with valid CRCs,
 * the record size limit, failed writes, a crash test that SIGKILLs a child
 * process committing in a loop and checks that every acknowledged commit
 * survives, exactly once and intact, and group commit: threads committing at
 * once share writes and fsyncs, and a failed group write fails exactly the
 * commits of that group; lazy commits return once written, are synced in
 * the background and survive a crash of the process. */
#define _GNU_SOURCE /* nftw's FTW_DEPTH */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "wal.h"
#include "wal_int.h"

/* ---- helpers --------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh temporary directory; *wal is its "wal" subdirectory (not created). */
struct tdir {
	char root[64];
	char wal[96];
};

/* Directories made and not yet dropped: a failing test leaves them to teardown. */
static char made[4][64];

static void tdir_make(struct tdir *t)
{
	strcpy(t->root, "/tmp/pd_wal_test_XXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->wal, sizeof(t->wal), "%s/wal", t->root);
	for (size_t i = 0; i < 4; i++)
		if (!made[i][0]) {
			strcpy(made[i], t->root);
			break;
		}
}

static void tdir_drop(struct tdir *t)
{
	rm_rf(t->root);
	for (size_t i = 0; i < 4; i++)
		if (strcmp(made[i], t->root) == 0)
			made[i][0] = 0;
}

static int teardown(void **state)
{
	for (size_t i = 0; i < 4; i++)
		if (made[i][0]) {
			rm_rf(made[i]);
			made[i][0] = 0;
		}
	return 0;
}

static char *seg_path(const char *dir, uint32_t n)
{
	static char buf[4][320]; /* dir (< 256) + "/" + 10 digits */
	static int i;
	char *p = buf[i++ & 3];
	snprintf(p, sizeof(buf[0]), "%s/%08u", dir, n);
	return p;
}

static int64_t file_size(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return -1;
	return (int64_t)st.st_size;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static uint8_t *read_all(const char *path, size_t *len)
{
	uint8_t *p;
	assert_int_equal(pd_file_read(path, SIZE_MAX, &p, len, NULL), 0);
	return p;
}

/* Sets the file's bytes. Overwrites and then truncates, since truncating to zero
 * first makes ext4 flush the file on close, which is slow in a loop. */
static void write_file(const char *path, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, len, 0), (ssize_t)len);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	close(fd);
}

static void flip_byte(const char *path, uint64_t off, uint8_t mask)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	uint8_t b;
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= mask;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
	close(fd);
}

static uint64_t du_total;
static int du_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_F)
		du_total += (uint64_t)st->st_size;
	return 0;
}

static uint64_t du(const char *dir)
{
	du_total = 0;
	nftw(dir, du_entry, 16, FTW_PHYS);
	return du_total;
}

/* Segment numbers of dir, ascending. */
static size_t list_segs(const char *dir, uint32_t *out, size_t max)
{
	struct pd_wal_listing l;
	assert_int_equal(pd_wal_list(dir, &l, NULL), 0);
	size_t n = l.nsegs < max ? l.nsegs : max;
	if (n)
		memcpy(out, l.segs, n * sizeof(*out));
	n = l.nsegs;
	pd_wal_listing_fini(&l);
	return n;
}

/* Profile bytes derived from a number: partly random, partly repetitive, of a
 * length that varies with n; the first 8 bytes are n. */
/* The crash test makes every tenth profile this big, and random, so that some
 * kills land inside a write(). */
static size_t prof_big;

static size_t prof_len(uint64_t n)
{
	if (prof_big && n % 10 == 7)
		return prof_big;
	if (n % 97 == 13)
		return 70000;
	return 16 + (size_t)((n * 2654435761u) % 3000);
}

static void prof_fill(uint64_t n, uint8_t *p, size_t len)
{
	uint64_t x = n * 0x9E3779B97F4A7C15ull + 1;
	for (size_t j = 0; j < len; j++) {
		if (j < 8) {
			p[j] = (uint8_t)(n >> (8 * j));
			continue;
		}
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[j] = (j / 64) % 2 && len < 100000 ? (uint8_t)('a' + j % 26) : (uint8_t)x;
	}
}

static uint8_t *prof_make(uint64_t n, size_t *len)
{
	*len = prof_len(n);
	uint8_t *p = malloc(*len);
	assert_non_null(p);
	prof_fill(n, p, *len);
	return p;
}

static int prof_check(uint64_t n, const uint8_t *p, size_t len)
{
	if (len != prof_len(n))
		return 0;
	uint8_t *want = malloc(len);
	prof_fill(n, want, len);
	int ok = memcmp(want, p, len) == 0;
	free(want);
	return ok;
}

/* Labels of series n: {__name__="heap", i="<n>", job="test"} */
struct nlabels {
	char num[24];
	struct pd_lpair l[3];
};

static void labels_of(uint64_t n, struct nlabels *s)
{
	snprintf(s->num, sizeof(s->num), "%" PRIu64, n);
	s->l[0] = (struct pd_lpair){"__name__", "heap"};
	s->l[1] = (struct pd_lpair){"i", s->num};
	s->l[2] = (struct pd_lpair){"job", "test"};
}

/* Commit n: series n and one sample (ref n, t = 1000 n, prof(n)). */
static void commit_n(struct pd_wal *w, uint64_t n)
{
	struct pd_err err = {0};
	struct nlabels nl;
	size_t len;
	uint8_t *p = prof_make(n, &len);
	labels_of(n, &nl);
	assert_int_equal(pd_wal_add_series(w, n, nl.l, 3, &err), 0);
	assert_int_equal(pd_wal_add_sample(w, n, (int64_t)n * 1000, p, len, &err), 0);
	int rc = pd_wal_commit(w, &err);
	if (rc)
		print_error("commit %" PRIu64 ": %s\n", n, err.msg);
	assert_int_equal(rc, 0);
	free(p);
}

/* ---- a replay collector ---------------------------------------------------- */

struct got_series {
	uint64_t ref;
	char labels[256];
};

struct got_sample {
	uint64_t ref;
	int64_t t;
	uint8_t *p;
	size_t len;
};

struct coll {
	struct got_series *s;
	size_t ns, scap;
	struct got_sample *m;
	size_t nm, mcap;
	long stop_at; /* sample index at which to return an error, -1: never */
};

static int coll_series(void *ctx, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	struct coll *c = ctx;
	if (c->ns == c->scap) {
		c->scap = c->scap ? c->scap * 2 : 64;
		c->s = realloc(c->s, c->scap * sizeof(*c->s));
		assert_non_null(c->s);
	}
	struct got_series *g = &c->s[c->ns++];
	g->ref = ref;
	g->labels[0] = 0;
	for (size_t i = 0; i < n; i++) {
		size_t o = strlen(g->labels);
		snprintf(g->labels + o, sizeof(g->labels) - o, "%s=%s;", l[i].name, l[i].value);
	}
	return 0;
}

static int coll_sample(void *ctx, uint64_t ref, int64_t t, const uint8_t *p, size_t len)
{
	struct coll *c = ctx;
	if (c->stop_at >= 0 && (long)c->nm == c->stop_at)
		return PD_ENOMEM;
	if (c->nm == c->mcap) {
		c->mcap = c->mcap ? c->mcap * 2 : 64;
		c->m = realloc(c->m, c->mcap * sizeof(*c->m));
		assert_non_null(c->m);
	}
	struct got_sample *g = &c->m[c->nm++];
	g->ref = ref;
	g->t = t;
	g->len = len;
	g->p = malloc(len ? len : 1);
	assert_non_null(g->p);
	if (len)
		memcpy(g->p, p, len);
	return 0;
}

static void coll_init(struct coll *c)
{
	memset(c, 0, sizeof(*c));
	c->stop_at = -1;
}

static void coll_fini(struct coll *c)
{
	for (size_t i = 0; i < c->nm; i++)
		free(c->m[i].p);
	free(c->m);
	free(c->s);
	memset(c, 0, sizeof(*c));
}

static int replay(const char *dir, struct coll *c, struct pd_wal_replay_stats *st)
{
	struct pd_wal_replay_cb cb = {coll_series, coll_sample, c, NULL};
	struct pd_err err = {0};
	coll_fini(c);
	coll_init(c);
	int rc = pd_wal_replay(dir, &cb, st, &err);
	if (rc)
		print_message("replay: %s\n", err.msg);
	return rc;
}

/* Checks that the replay holds exactly commits nums[0..n) (as commit_n made them),
 * in order. */
static void expect_commits(const struct coll *c, const uint64_t *nums, size_t n)
{
	assert_int_equal(c->ns, n);
	assert_int_equal(c->nm, n);
	for (size_t i = 0; i < n; i++) {
		struct nlabels nl;
		char want[256];
		labels_of(nums[i], &nl);
		snprintf(want, sizeof(want), "__name__=heap;i=%s;job=test;", nl.num);
		assert_int_equal(c->s[i].ref, nums[i]);
		assert_string_equal(c->s[i].labels, want);
		assert_int_equal(c->m[i].ref, nums[i]);
		assert_int_equal(c->m[i].t, (int64_t)nums[i] * 1000);
		assert_true(prof_check(nums[i], c->m[i].p, c->m[i].len));
	}
}

static void expect_range(const struct coll *c, uint64_t from, uint64_t to)
{
	size_t n = to >= from ? (size_t)(to - from + 1) : 0;
	uint64_t *nums = malloc((n ? n : 1) * sizeof(*nums));
	for (size_t i = 0; i < n; i++)
		nums[i] = from + i;
	expect_commits(c, nums, n);
	free(nums);
}

static struct pd_wal *wal_open(const char *dir, size_t segsize, int sync)
{
	struct pd_wal_opts o = {.segment_size = segsize, .sync = sync};
	struct pd_err err = {0};
	struct pd_wal *w = NULL;
	int rc = pd_wal_open(&w, dir, &o, &err);
	if (rc)
		print_error("open: %s\n", err.msg);
	assert_int_equal(rc, 0);
	return w;
}

/* ---- CRC32C ---------------------------------------------------------------- */

static void test_crc32c(void **state)
{
	assert_int_equal(pd_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(pd_crc32c(0, "", 0), 0);
	/* continuing equals one pass, at every split of a longer input */
	uint8_t buf[1000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 31 + 7);
	uint32_t whole = pd_crc32c(0, buf, sizeof(buf));
	for (size_t k = 0; k <= sizeof(buf); k += 37)
		assert_int_equal(pd_crc32c(pd_crc32c(0, buf, k), buf + k, sizeof(buf) - k), whole);
	/* 32 zero bytes: the iSCSI test vector of RFC 3720 */
	uint8_t z[32] = {0};
	assert_int_equal(pd_crc32c(0, z, 32), 0x8A9136AAu);
	uint8_t f[32];
	memset(f, 0xff, 32);
	assert_int_equal(pd_crc32c(0, f, 32), 0x62A8AB43u);
}

/* ---- round trips ----------------------------------------------------------- */

static void test_roundtrip_segments(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	uint32_t segs[512];

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 8192, PD_WAL_SYNC_NONE);
	for (uint64_t n = 1; n <= 300; n++)
		commit_n(w, n);
	assert_int_equal(pd_wal_size(w), du(t.wal));
	pd_wal_close(w);
	size_t nsegs = list_segs(t.wal, segs, 512);
	assert_true(nsegs > 20);
	for (size_t i = 0; i < nsegs; i++)
		assert_int_equal(segs[i], i + 1);
	/* a record larger than a segment sits alone in its segment */
	assert_true(file_size(seg_path(t.wal, segs[0])) <= 8192);

	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 300);
	assert_int_equal(st.records, 300);
	assert_int_equal(st.series, 300);
	assert_int_equal(st.samples, 300);
	assert_int_equal(st.truncated, 0);

	/* reopening appends after the last record */
	w = wal_open(t.wal, 8192, PD_WAL_SYNC_COMMIT);
	for (uint64_t n = 301; n <= 320; n++)
		commit_n(w, n);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 320);
	assert_int_equal(st.truncated, 0);

	coll_fini(&c);
	tdir_drop(&t);
}

/* Several series and samples in one commit, odd values, empty label sets and
 * empty profiles come back as they went in. */
static void test_roundtrip_mixed(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_err err = {0};
	struct pd_wal_replay_stats st;
	const struct pd_lpair l2[] = {{"", "empty name"}, {"a", ""}, {"b", "ünïcode ✓"}};
	const uint8_t one = 0x42;

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_COMMIT);
	assert_int_equal(pd_wal_add_series(w, 0, NULL, 0, &err), 0);
	assert_int_equal(pd_wal_add_series(w, UINT64_MAX, l2, 3, &err), 0);
	assert_int_equal(pd_wal_add_sample(w, 0, INT64_MIN, NULL, 0, &err), 0);
	assert_int_equal(pd_wal_add_sample(w, UINT64_MAX, INT64_MAX, &one, 1, &err), 0);
	assert_int_equal(pd_wal_add_sample(w, 7, -1, &one, 1, &err), 0);
	assert_int_equal(pd_wal_commit(w, &err), 0);
	/* an empty commit writes nothing */
	uint64_t size = pd_wal_size(w);
	assert_int_equal(pd_wal_commit(w, &err), 0);
	assert_int_equal(pd_wal_size(w), size);
	assert_int_equal(size, du(t.wal));
	pd_wal_close(w);

	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.records, 1);
	assert_int_equal(c.ns, 2);
	assert_int_equal(c.s[0].ref, 0);
	assert_string_equal(c.s[0].labels, "");
	assert_int_equal(c.s[1].ref, UINT64_MAX);
	assert_string_equal(c.s[1].labels, "=empty name;a=;b=ünïcode ✓;");
	assert_int_equal(c.nm, 3);
	assert_int_equal(c.m[0].t, INT64_MIN);
	assert_int_equal(c.m[0].len, 0);
	assert_int_equal(c.m[1].ref, UINT64_MAX);
	assert_int_equal(c.m[1].t, INT64_MAX);
	assert_int_equal(c.m[1].len, 1);
	assert_int_equal(c.m[1].p[0], 0x42);
	assert_int_equal(c.m[2].t, -1);
	coll_fini(&c);
	tdir_drop(&t);
}

static void test_rollback(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_err err = {0};
	struct nlabels nl;

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	commit_n(w, 1);
	labels_of(2, &nl);
	assert_int_equal(pd_wal_add_series(w, 2, nl.l, 3, &err), 0);
	assert_int_equal(pd_wal_add_sample(w, 2, 2000, (const uint8_t *)"xx", 2, &err), 0);
	uint64_t size = pd_wal_size(w);
	pd_wal_rollback(w);
	assert_int_equal(pd_wal_size(w), size);
	commit_n(w, 3);
	/* pending at close is dropped too */
	assert_int_equal(pd_wal_add_series(w, 4, nl.l, 3, &err), 0);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, NULL), 0);
	expect_commits(&c, (uint64_t[]){1, 3}, 2);
	coll_fini(&c);
	tdir_drop(&t);
}

static void test_bad_input(void **state)
{
	struct tdir t;
	struct pd_err err = {0};
	const struct pd_lpair unsorted[] = {{"b", "1"}, {"a", "2"}};
	const struct pd_lpair dup[] = {{"a", "1"}, {"a", "2"}};
	const struct pd_lpair nulls[] = {{"a", NULL}};

	tdir_make(&t);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	assert_int_equal(pd_wal_add_series(w, 1, unsorted, 2, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "sorted"));
	assert_int_equal(pd_wal_add_series(w, 1, dup, 2, &err), PD_EINVAL);
	assert_int_equal(pd_wal_add_series(w, 1, nulls, 1, &err), PD_EINVAL);
	assert_int_equal(pd_wal_add_sample(w, 1, 0, NULL, 5, &err), PD_EINVAL);

	/* the record limit (lowered here through the private struct) */
	w->enc.max = 1000;
	uint8_t big[2000] = {0};
	assert_int_equal(pd_wal_add_sample(w, 1, 0, big, 500, &err), 0);
	assert_int_equal(pd_wal_add_sample(w, 1, 1, big, 600, &err), PD_ETOOBIG);
	assert_non_null(strstr(err.msg, "limit of 1000 bytes"));
	assert_int_equal(pd_wal_add_sample(w, 1, 1, big, 2000, &err), PD_ETOOBIG);
	/* the record is unchanged by the refused entries */
	assert_int_equal(w->enc.nsamples, 1);
	assert_int_equal(pd_wal_commit(w, &err), 0);
	pd_wal_close(w);

	/* an unknown sync policy */
	struct pd_wal_opts o = {.sync = 9};
	assert_int_equal(pd_wal_open(&w, t.wal, &o, &err), PD_EINVAL);
	assert_null(w);
	pd_wal_close(NULL);
	tdir_drop(&t);
}

static void test_replay_missing_and_stop(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	struct pd_err err = {0};

	tdir_make(&t);
	coll_init(&c);
	/* a missing directory is an empty WAL */
	memset(&st, 0xff, sizeof(st));
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.records, 0);
	assert_int_equal(st.truncated, 0);
	assert_int_equal(c.nm, 0);

	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	for (uint64_t n = 1; n <= 5; n++)
		commit_n(w, n);
	pd_wal_close(w);
	uint64_t size = du(t.wal);

	/* a callback's error stops the replay and is returned; nothing is cut */
	struct pd_wal_replay_cb cb = {coll_series, coll_sample, &c, NULL};
	c.stop_at = 2;
	assert_int_equal(pd_wal_replay(t.wal, &cb, &st, &err), PD_ENOMEM);
	assert_non_null(strstr(err.msg, "callback"));
	assert_int_equal(st.truncated, 0);
	assert_int_equal(c.nm, 2);
	assert_int_equal(du(t.wal), size);
	/* NULL callbacks and stats are fine */
	struct pd_wal_replay_cb none = {0};
	assert_int_equal(pd_wal_replay(t.wal, &none, NULL, &err), 0);
	assert_int_equal(pd_wal_replay(t.wal, NULL, NULL, &err), 0);
	coll_fini(&c);
	tdir_drop(&t);
}

/* ---- checkpoints ----------------------------------------------------------- */

static int keep_even(void *ctx, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	(void)l;
	(void)n;
	(*(int *)ctx)++;
	return ref % 2 == 0;
}

static int keep_all(void *ctx, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	(void)l;
	(void)n;
	return 1;
}

static int keep_none(void *ctx, uint64_t ref, const struct pd_lpair *l, size_t n)
{
	(void)l;
	(void)n;
	return 0;
}

static void test_checkpoint(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_err err = {0};
	struct pd_wal_replay_stats st;
	uint32_t segs[256];
	char path[256];
	int calls = 0;

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 8192, PD_WAL_SYNC_NONE);
	for (uint64_t n = 1; n <= 100; n++)
		commit_n(w, n);
	uint32_t cur = w->seg.num;
	assert_true(cur > 5);
	/* checkpoint everything before the current segment: series of even refs, and
	 * their samples at or after t = 40000 */
	assert_int_equal(pd_wal_checkpoint(w, 40000, keep_even, &calls, &err), 0);
	assert_true(calls > 0);
	snprintf(path, sizeof(path), "%s/checkpoint.%08u", t.wal, cur - 1);
	assert_true(exists(path));
	assert_int_equal(list_segs(t.wal, segs, 256), 1);
	assert_int_equal(segs[0], cur);
	assert_int_equal(pd_wal_size(w), du(t.wal));
	for (uint64_t n = 101; n <= 110; n++)
		commit_n(w, n);
	pd_wal_close(w);

	/* what the first segments held is filtered; the current segment is whole */
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 0);
	/* each commit n is either in the live segment (whole) or was checkpointed
	 * (kept only when even, its sample only when n >= 40) */
	size_t si = 0, mi = 0;
	uint64_t first_live = 0;
	for (size_t i = 0; i < c.nm; i++)
		if (c.m[i].ref % 2 == 1) {
			first_live = c.m[i].ref;
			break;
		}
	assert_true(first_live > 1 && first_live <= 101);
	for (uint64_t n = 1; n <= 110; n++) {
		int live = n >= first_live;
		/* the checkpoint keeps the entry of the largest ref it read, even
		 * odd, without its sample */
		int want_series = live || n % 2 == 0 || n == first_live - 1;
		int want_sample = live || (n % 2 == 0 && n >= 40);
		if (want_series) {
			assert_true(si < c.ns);
			assert_int_equal(c.s[si].ref, n);
			si++;
		}
		if (want_sample) {
			assert_true(mi < c.nm);
			assert_int_equal(c.m[mi].ref, n);
			assert_true(prof_check(n, c.m[mi].p, c.m[mi].len));
			mi++;
		}
	}
	assert_int_equal(si, c.ns);
	assert_int_equal(mi, c.nm);

	/* a second checkpoint replaces the first */
	w = wal_open(t.wal, 8192, PD_WAL_SYNC_NONE);
	for (uint64_t n = 111; n <= 150; n++)
		commit_n(w, n);
	assert_int_equal(pd_wal_cut(w, &err), 0);
	cur = w->seg.num;
	assert_int_equal(pd_wal_checkpoint(w, INT64_MIN, keep_all, NULL, &err), 0);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/checkpoint.%08u", t.wal, cur - 1);
	assert_true(exists(path));
	assert_int_equal(list_segs(t.wal, segs, 256), 1);
	assert_int_equal(segs[0], cur);
	assert_int_equal(pd_wal_size(w), du(t.wal));
	/* nothing new before the current segment: a checkpoint does nothing */
	assert_int_equal(pd_wal_checkpoint(w, INT64_MIN, keep_all, NULL, &err), 0);
	assert_true(exists(path));
	pd_wal_close(w);
	size_t before_ns = c.ns, before_nm = c.nm;
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(c.ns, before_ns + 40);
	assert_int_equal(c.nm, before_nm + 40);
	assert_int_equal(c.m[c.nm - 1].ref, 150);

	/* a checkpoint that keeps nothing */
	w = wal_open(t.wal, 8192, PD_WAL_SYNC_NONE);
	commit_n(w, 151);
	assert_int_equal(pd_wal_cut(w, &err), 0);
	assert_int_equal(pd_wal_checkpoint(w, INT64_MIN, keep_none, NULL, &err), 0);
	commit_n(w, 152);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	/* but the entry of its largest ref, which stays named; no sample of it */
	assert_int_equal(c.ns, 2);
	assert_int_equal(c.s[0].ref, 151);
	assert_int_equal(c.nm, 1);
	assert_int_equal(c.m[0].ref, 152);
	assert_int_equal(c.s[1].ref, 152);
	coll_fini(&c);
	tdir_drop(&t);
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	uint8_t *p = read_all(from, &len);
	write_file(to, p, len);
	free(p);
}

/* The states a crash during a checkpoint can leave all replay to the same data. */
static void test_checkpoint_crash_states(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_err err = {0};
	struct pd_wal_replay_stats st;
	char path[256], saved[256];
	uint32_t segs[64];

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 4096, PD_WAL_SYNC_NONE);
	for (uint64_t n = 1; n <= 30; n++)
		commit_n(w, n);
	assert_int_equal(pd_wal_cut(w, &err), 0);
	uint32_t cur = w->seg.num;
	/* keep copies of the segments the checkpoint will delete */
	size_t nsegs = list_segs(t.wal, segs, 64);
	for (size_t i = 0; i < nsegs; i++) {
		snprintf(saved, sizeof(saved), "%s/saved.%08u", t.root, segs[i]);
		copy_file(seg_path(t.wal, segs[i]), saved);
	}
	assert_int_equal(pd_wal_checkpoint(w, INT64_MIN, keep_all, NULL, &err), 0);
	commit_n(w, 31);
	pd_wal_close(w);

	/* 1. renamed, but the old segments not yet deleted: they are ignored */
	for (size_t i = 0; i < nsegs; i++) {
		if (segs[i] >= cur)
			continue;
		snprintf(saved, sizeof(saved), "%s/saved.%08u", t.root, segs[i]);
		copy_file(saved, seg_path(t.wal, segs[i]));
	}
	/* 2. an older checkpoint still there, and a half-written newer one */
	snprintf(path, sizeof(path), "%s/checkpoint.%08u", t.wal, 1u);
	assert_int_equal(mkdir(path, 0755), 0);
	write_file(seg_path(path, 1), "garbage", 7);
	snprintf(path, sizeof(path), "%s/checkpoint.%08u.tmp", t.wal, cur + 5);
	assert_int_equal(mkdir(path, 0755), 0);
	write_file(seg_path(path, 1), "PDWL\1\0\0\0garbage", 15);

	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 0);
	expect_range(&c, 1, 31);
	assert_true(exists(path)); /* replay ignores it */

	/* open removes the leftovers */
	w = wal_open(t.wal, 4096, PD_WAL_SYNC_NONE);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/checkpoint.%08u", t.wal, 1u);
	assert_false(exists(path));
	assert_int_equal(list_segs(t.wal, segs, 64), 1);
	assert_int_equal(segs[0], cur);
	assert_int_equal(pd_wal_size(w), du(t.wal));
	commit_n(w, 32);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 32);

	/* 3. a crash before the rename: only the tmp directory exists */
	w = wal_open(t.wal, 4096, PD_WAL_SYNC_NONE);
	commit_n(w, 33);
	assert_int_equal(pd_wal_cut(w, &err), 0);
	snprintf(path, sizeof(path), "%s/checkpoint.%08u.tmp", t.wal, w->seg.num - 1);
	assert_int_equal(mkdir(path, 0755), 0);
	write_file(seg_path(path, 1), "PDWL\1\0\0\0", 8);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 33);
	/* and the next checkpoint writes over it */
	w = wal_open(t.wal, 4096, PD_WAL_SYNC_NONE);
	assert_false(exists(path));
	assert_int_equal(pd_wal_checkpoint(w, INT64_MIN, NULL, NULL, &err), 0);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 33);
	coll_fini(&c);
	tdir_drop(&t);
}

/* Damage in a checkpoint cuts it, and everything after it goes. */
static void test_checkpoint_damaged(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_err err = {0};
	struct pd_wal_replay_stats st;
	char cp[256];

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	for (uint64_t n = 1; n <= 3; n++)
		commit_n(w, n);
	assert_int_equal(pd_wal_cut(w, &err), 0);
	uint32_t cur = w->seg.num;
	assert_int_equal(pd_wal_checkpoint(w, INT64_MIN, keep_all, NULL, &err), 0);
	commit_n(w, 4);
	pd_wal_close(w);
	snprintf(cp, sizeof(cp), "%s/checkpoint.%08u", t.wal, cur - 1);
	flip_byte(seg_path(cp, 1), PD_WAL_SEG_HDR + PD_WAL_REC_HDR + 3, 0x10);

	/* the damaged checkpoint record (commits 1 to 3) is skipped, the segment
	 * after the checkpoint is kept, and nothing is cut */
	uint64_t size = du(t.wal);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 0);
	assert_int_equal(st.damaged_regions, 1);
	assert_int_equal(st.damaged_records, 1);
	assert_int_equal(st.damage_segment, 1);
	assert_int_equal(st.damage_offset, PD_WAL_SEG_HDR);
	assert_non_null(strstr(st.damage_reason, "checkpoint."));
	assert_non_null(strstr(st.damage_reason, "CRC"));
	expect_commits(&c, (uint64_t[]){4}, 1);
	assert_int_equal(du(t.wal), size);

	/* a checkpoint is rewritten past the damage, which it leaves behind */
	w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	commit_n(w, 5);
	assert_int_equal(pd_wal_cut(w, &err), 0);
	assert_int_equal(pd_wal_checkpoint(w, INT64_MIN, keep_all, NULL, &err), 0);
	commit_n(w, 6);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 0);
	assert_int_equal(st.damaged_regions, 0);
	expect_commits(&c, (uint64_t[]){4, 5, 6}, 3);
	coll_fini(&c);
	tdir_drop(&t);
}

/* ---- torn tails and damage ------------------------------------------------- */

/* Writes commits 1..k into a one-segment WAL; ends[i] is the segment size after
 * commit i + 1. The last commit's profile is replaced by `last` bytes. */
static uint8_t *build_one_segment(const char *dir, int k, uint64_t *ends, const uint8_t *last,
				  size_t last_len, size_t *seg_len)
{
	struct pd_err err = {0};
	struct nlabels nl;
	struct pd_wal *w = wal_open(dir, 0, PD_WAL_SYNC_NONE);
	for (int i = 1; i <= k; i++) {
		if (i < k) {
			commit_n(w, (uint64_t)i);
		} else {
			labels_of((uint64_t)i, &nl);
			assert_int_equal(pd_wal_add_series(w, (uint64_t)i, nl.l, 3, &err), 0);
			assert_int_equal(pd_wal_add_sample(w, (uint64_t)i, i * 1000, last, last_len, &err),
					 0);
			assert_int_equal(pd_wal_commit(w, &err), 0);
		}
		ends[i - 1] = (uint64_t)file_size(seg_path(dir, 1));
	}
	pd_wal_close(w);
	return read_all(seg_path(dir, 1), seg_len);
}

static void torn_tail_every_byte(const uint8_t *last, size_t last_len, int compressible)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	uint64_t ends[5];
	size_t seg_len;

	tdir_make(&t);
	coll_init(&c);
	uint8_t *seg = build_one_segment(t.wal, 5, ends, last, last_len, &seg_len);
	uint64_t start = ends[3], end = ends[4];
	assert_int_equal(end, seg_len);
	assert_int_equal(seg[start + 1] & PD_WAL_FLAG_ZSTD, compressible ? PD_WAL_FLAG_ZSTD : 0);
	for (uint64_t cut = start; cut < end; cut++) {
		write_file(seg_path(t.wal, 1), seg, (size_t)cut);
		assert_int_equal(replay(t.wal, &c, &st), 0);
		expect_range(&c, 1, 4);
		assert_int_equal(st.records, 4);
		assert_int_equal(st.truncated, cut > start);
		if (cut > start) {
			assert_int_equal(st.segment, 1);
			assert_int_equal(st.offset, start);
			assert_non_null(strstr(st.reason, "truncated"));
		}
		assert_int_equal(file_size(seg_path(t.wal, 1)), start);
		/* the repaired WAL takes a new commit, and replays it */
		struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
		commit_n(w, 9);
		pd_wal_close(w);
		assert_int_equal(replay(t.wal, &c, &st), 0);
		assert_int_equal(st.truncated, 0);
		expect_commits(&c, (uint64_t[]){1, 2, 3, 4, 9}, 5);
	}
	free(seg);
	coll_fini(&c);
	tdir_drop(&t);
}

static void test_torn_tail(void **state)
{
	uint8_t buf[4000];
	uint64_t x = 88172645463325252ull;
	/* incompressible: stored as it is */
	for (size_t i = 0; i < 300; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)(x >> 24);
	}
	torn_tail_every_byte(buf, 300, 0);
	/* compressible: stored as a zstd frame */
	memset(buf, 'x', sizeof(buf));
	torn_tail_every_byte(buf, sizeof(buf), 1);
}

/* Without a replay first, open refuses a damaged tail. */
static void test_open_needs_repair(void **state)
{
	struct tdir t;
	struct pd_err err = {0};
	struct pd_wal *w;

	tdir_make(&t);
	w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	commit_n(w, 1);
	commit_n(w, 2);
	pd_wal_close(w);
	int64_t size = file_size(seg_path(t.wal, 1));
	assert_int_equal(truncate(seg_path(t.wal, 1), size - 5), 0);
	struct pd_wal_opts o = {0};
	assert_int_equal(pd_wal_open(&w, t.wal, &o, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "replay"));
	assert_null(w);

	/* a last segment too short for its header is given one */
	struct coll c;
	coll_init(&c);
	assert_int_equal(replay(t.wal, &c, NULL), 0);
	write_file(seg_path(t.wal, 2), "PD", 2);
	w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	assert_int_equal(w->seg.num, 2);
	commit_n(w, 3);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, NULL), 0);
	expect_commits(&c, (uint64_t[]){1, 3}, 2);
	coll_fini(&c);
	tdir_drop(&t);
}

static void test_bit_flips(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	uint64_t ends[3];
	size_t seg_len;
	uint8_t last[200];

	tdir_make(&t);
	coll_init(&c);
	prof_fill(3, last, sizeof(last));
	uint8_t *seg = build_one_segment(t.wal, 3, ends, last, sizeof(last), &seg_len);
	/* every byte of the middle record, one bit each */
	uint64_t start = ends[0], end = ends[1];
	int crc_reports = 0;
	for (uint64_t off = start; off < end; off++) {
		write_file(seg_path(t.wal, 1), seg, seg_len);
		flip_byte(seg_path(t.wal, 1), off, (uint8_t)(1u << (off % 8)));
		assert_int_equal(replay(t.wal, &c, &st), 0);
		/* only the damaged record is lost: replay resumes at the next one,
		 * and nothing is cut, since intact records follow */
		assert_int_equal(c.nm, 2);
		assert_int_equal(c.m[0].ref, 1);
		assert_int_equal(c.m[1].ref, 3);
		assert_int_equal(c.m[1].len, sizeof(last));
		assert_memory_equal(c.m[1].p, last, sizeof(last));
		assert_int_equal(st.records, 2);
		assert_int_equal(st.truncated, 0);
		assert_int_equal(st.damaged_regions, 1);
		assert_int_equal(st.damaged_bytes, end - start);
		assert_true(st.damaged_records >= 1);
		assert_int_equal(st.damage_segment, 1);
		assert_int_equal(st.damage_offset, start);
		int in_len = off >= start + 2 && off < start + 6;
		if (!in_len) {
			assert_int_equal(st.damaged_records, 1);
			assert_non_null(strstr(st.damage_reason, "CRC mismatch"));
			crc_reports++;
		}
		assert_int_equal(file_size(seg_path(t.wal, 1)), seg_len);
	}
	assert_true(crc_reports > 20);
	free(seg);
	coll_fini(&c);
	tdir_drop(&t);
}

/* 16 bytes flipped at 1% of a segment of 200 commits lose the one or two commits
 * they hit, not the ones after them; a torn tail after that damage is still cut. */
static void test_damage_resync(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	uint64_t ends[200];

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	for (uint64_t n = 1; n <= 200; n++) {
		commit_n(w, n);
		ends[n - 1] = (uint64_t)file_size(seg_path(t.wal, 1));
	}
	pd_wal_close(w);
	uint64_t size = ends[199], at = size / 100;
	for (uint64_t i = 0; i < 16; i++)
		flip_byte(seg_path(t.wal, 1), at + i, 0xff);
	/* the commits whose records hold a flipped byte */
	uint64_t hit = 0, want[200], nw = 0;
	for (uint64_t n = 1; n <= 200; n++) {
		uint64_t start = n > 1 ? ends[n - 2] : PD_WAL_SEG_HDR;
		if (start < at + 16 && ends[n - 1] > at)
			hit++;
		else
			want[nw++] = n;
	}
	assert_true(hit >= 1 && hit <= 2);
	/* and the last record torn */
	assert_int_equal(truncate(seg_path(t.wal, 1), (off_t)size - 3), 0);
	nw--;
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_commits(&c, want, nw);
	assert_int_equal(st.records, nw);
	assert_int_equal(st.damaged_regions, 2);
	assert_int_equal(st.damaged_records, hit + 1);
	assert_int_equal(st.damage_segment, 1);
	assert_true(st.damage_offset <= at);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(st.offset, ends[198]);
	assert_int_equal(file_size(seg_path(t.wal, 1)), ends[198]);
	coll_fini(&c);
	tdir_drop(&t);
}

/* Builds a WAL of small segments; seg_of[n] is the segment of commit n. */
static void build_segments(const char *dir, uint64_t ncommits, uint32_t *seg_of)
{
	struct pd_wal *w = wal_open(dir, 2048, PD_WAL_SYNC_NONE);
	for (uint64_t n = 1; n <= ncommits; n++) {
		commit_n(w, n);
		seg_of[n] = w->seg.num;
	}
	pd_wal_close(w);
}

static void test_corrupt_middle_segment(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	uint32_t seg_of[41], segs[64];

	tdir_make(&t);
	coll_init(&c);
	build_segments(t.wal, 40, seg_of);
	assert_true(seg_of[40] >= 5);
	uint64_t last_in_1 = 0;
	for (uint64_t n = 1; n <= 40; n++)
		if (seg_of[n] == 1)
			last_in_1 = n;
	assert_true(last_in_1 >= 1);
	/* damage the first record of segment 2: only that commit is lost */
	size_t nsegs = list_segs(t.wal, segs, 64);
	flip_byte(seg_path(t.wal, 2), PD_WAL_SEG_HDR + PD_WAL_REC_HDR + 5, 0x01);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	uint64_t want[40], nw = 0;
	for (uint64_t n = 1; n <= 40; n++)
		if (n != last_in_1 + 1)
			want[nw++] = n;
	expect_commits(&c, want, nw);
	assert_int_equal(st.truncated, 0);
	assert_int_equal(st.damaged_records, 1);
	assert_int_equal(st.damage_segment, 2);
	assert_int_equal(st.damage_offset, PD_WAL_SEG_HDR);
	assert_int_equal(list_segs(t.wal, segs, 64), nsegs);
	/* appending continues in the last segment */
	struct pd_wal *w = wal_open(t.wal, 2048, PD_WAL_SYNC_NONE);
	assert_int_equal(w->seg.num, segs[nsegs - 1]);
	commit_n(w, 100);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 0);
	assert_int_equal(c.nm, nw + 1);
	assert_int_equal(c.m[nw].ref, 100);
	coll_fini(&c);
	tdir_drop(&t);
}

static void test_missing_segment(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	uint32_t seg_of[41], segs[64];

	tdir_make(&t);
	coll_init(&c);
	build_segments(t.wal, 40, seg_of);
	size_t nsegs = list_segs(t.wal, segs, 64);
	assert_true(nsegs >= 5);
	assert_int_equal(unlink(seg_path(t.wal, 3)), 0);
	uint64_t last_in_2 = 0;
	for (uint64_t n = 1; n <= 40; n++)
		if (seg_of[n] <= 2)
			last_in_2 = n;
	/* what segment 3 held is lost; every later segment is read and kept */
	assert_int_equal(replay(t.wal, &c, &st), 0);
	uint64_t want[40], nw = 0;
	for (uint64_t n = 1; n <= 40; n++)
		if (seg_of[n] != 3)
			want[nw++] = n;
	assert_true(nw < 40 && nw > last_in_2);
	expect_commits(&c, want, nw);
	assert_int_equal(st.truncated, 0);
	assert_int_equal(st.damaged_regions, 1);
	assert_int_equal(st.damage_segment, 4);
	assert_non_null(strstr(st.damage_reason, "00000003 is missing"));
	assert_int_equal(list_segs(t.wal, segs, 64), nsegs - 1);
	coll_fini(&c);
	tdir_drop(&t);
}

static void test_segment_headers(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	struct pd_err err = {0};
	uint32_t seg_of[41], segs[64];

	tdir_make(&t);
	coll_init(&c);
	build_segments(t.wal, 40, seg_of);
	size_t nsegs = list_segs(t.wal, segs, 64);
	uint32_t lastseg = segs[nsegs - 1];
	uint64_t last_before = 0;
	for (uint64_t n = 1; n <= 40; n++)
		if (seg_of[n] < lastseg)
			last_before = n;

	/* a newer format version is refused, and nothing is touched */
	uint64_t size = du(t.wal);
	flip_byte(seg_path(t.wal, 2), 4, 0x03);
	assert_int_equal(pd_wal_replay(t.wal, NULL, &st, &err), PD_EINCOMPAT);
	assert_non_null(strstr(err.msg, "version"));
	assert_int_equal(du(t.wal), size);
	flip_byte(seg_path(t.wal, 2), 4, 0x03);

	/* bad magic in the last segment: its records are still read, and it is
	 * left alone; appending goes to a new segment */
	flip_byte(seg_path(t.wal, lastseg), 0, 0x20);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 40);
	assert_int_equal(st.truncated, 0);
	assert_int_equal(st.damaged_regions, 1);
	assert_int_equal(st.damaged_bytes, PD_WAL_SEG_HDR);
	assert_int_equal(st.damage_segment, lastseg);
	assert_int_equal(st.damage_offset, 0);
	assert_non_null(strstr(st.damage_reason, "magic"));
	assert_true(exists(seg_path(t.wal, lastseg)));
	struct pd_wal_opts o = {.sync = PD_WAL_SYNC_NONE};
	struct pd_wal *w;
	assert_int_equal(pd_wal_open(&w, t.wal, &o, &err), 0);
	assert_int_equal(w->seg.num, lastseg + 1);
	commit_n(w, 41);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 41);
	assert_int_equal(unlink(seg_path(t.wal, lastseg + 1)), 0);

	/* a segment cut inside its header (a crash while creating it) */
	write_file(seg_path(t.wal, lastseg), "PDW", 3);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, last_before);
	assert_int_equal(st.truncated, 1);
	assert_non_null(strstr(st.reason, "header truncated"));
	assert_false(exists(seg_path(t.wal, lastseg)));
	coll_fini(&c);
	tdir_drop(&t);
}

/* Appends a record with the given type, flags and payload, and a valid CRC. */
static void append_record(const char *path, uint8_t type, uint8_t flags, const uint8_t *p,
			  size_t len)
{
	uint8_t h[PD_WAL_REC_HDR] = {type, flags, (uint8_t)(len >> 24), (uint8_t)(len >> 16),
				     (uint8_t)(len >> 8), (uint8_t)len};
	uint32_t crc = pd_crc32c(pd_crc32c(0, h, 6), p, len);
	h[6] = (uint8_t)(crc >> 24);
	h[7] = (uint8_t)(crc >> 16);
	h[8] = (uint8_t)(crc >> 8);
	h[9] = (uint8_t)crc;
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, h, sizeof(h)), (ssize_t)sizeof(h));
	if (len)
		assert_int_equal(write(fd, p, len), (ssize_t)len);
	close(fd);
}

static void test_unknown_record_type(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	struct pd_err err = {0};
	const uint8_t payload[] = {0, 0};

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	commit_n(w, 1);
	pd_wal_close(w);
	append_record(seg_path(t.wal, 1), 9, 0, payload, 2);
	uint64_t size = du(t.wal);
	struct pd_wal_replay_cb cb = {coll_series, coll_sample, &c, NULL};
	assert_int_equal(pd_wal_replay(t.wal, &cb, &st, &err), PD_EINCOMPAT);
	assert_non_null(strstr(err.msg, "unknown record type 9"));
	assert_int_equal(du(t.wal), size);
	/* unknown flags likewise */
	write_file(seg_path(t.wal, 1), "PDWL\1\0\0\0", 8);
	append_record(seg_path(t.wal, 1), PD_WAL_REC_COMMIT, 0x80, payload, 2);
	assert_int_equal(pd_wal_replay(t.wal, &cb, &st, &err), PD_EINCOMPAT);
	/* type 0 is never written: damage */
	write_file(seg_path(t.wal, 1), "PDWL\1\0\0\0", 8);
	append_record(seg_path(t.wal, 1), 0, 0, payload, 2);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 1);
	coll_fini(&c);
	tdir_drop(&t);
}

/* Payloads with a valid CRC that are not what they claim: all are damage, none
 * is delivered, in part or whole. */
static void test_malformed_payloads(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	static const struct {
		uint8_t flags;
		size_t len;
		uint8_t p[24];
		const char *why;
	} cases[] = {
		{0, 0, {0}, "varint"},
		{0, 1, {0}, "varint"},                                 /* no sample count */
		{0, 3, {0, 0, 0}, "left after"},                       /* trailing byte */
		{0, 2, {0x7f, 0}, "series count"},                     /* count > payload */
		{0, 11, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0}, "overflows"},
		{0, 6, {1, 1, 1, 3, 'a', 0}, "past the end"},          /* label runs past */
		{0, 8, {1, 1, 1, 1, 0, 1, 'v', 0}, "NUL"},             /* name with NUL */
		{0, 13, {1, 1, 2, 1, 'b', 1, 'x', 1, 'a', 1, 'y', 0, 0}, "sorted"},
		{0, 13, {1, 1, 2, 1, 'a', 1, 'x', 1, 'a', 1, 'y', 0, 0}, "sorted"},
		{0, 6, {0, 1, 1, 2, 5, 'x'}, "past the end"},         /* profile runs past */
		{0, 5, {0, 2, 1, 2, 0}, "sample count"},
		{1, 4, {0x28, 0xb5, 0x2f, 0xfd}, "zstd"},
		{1, 5, {1, 2, 3, 4, 5}, "zstd"},
	};

	tdir_make(&t);
	coll_init(&c);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rm_rf(t.wal);
		struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
		commit_n(w, 1);
		pd_wal_close(w);
		uint64_t good = (uint64_t)file_size(seg_path(t.wal, 1));
		append_record(seg_path(t.wal, 1), PD_WAL_REC_COMMIT, cases[i].flags, cases[i].p,
			      cases[i].len);
		commit_n(w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE), 2);
		pd_wal_close(w);
		assert_int_equal(replay(t.wal, &c, &st), 0);
		/* the malformed record is skipped, the one after it read */
		expect_commits(&c, (uint64_t[]){1, 2}, 2);
		assert_int_equal(st.truncated, 0);
		assert_int_equal(st.damaged_records, 1);
		assert_int_equal(st.damage_offset, good);
		if (!strstr(st.damage_reason, cases[i].why))
			fail_msg("case %zu: reason \"%s\", want \"%s\"", i, st.damage_reason,
				 cases[i].why);
		assert_non_null(strstr(st.damage_reason, "undecodable"));
	}

	/* mutations of a real payload, checked without the repair (no fsyncs) */
	rm_rf(t.wal);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_NONE);
	struct pd_err err = {0};
	const struct pd_lpair l[] = {{"a", "b"}, {"cc", "dd"}};
	uint8_t prof[40];
	prof_fill(77, prof, sizeof(prof));
	assert_int_equal(pd_wal_add_series(w, 5, l, 2, &err), 0);
	assert_int_equal(pd_wal_add_sample(w, 5, -3, prof, 20, &err), 0);
	assert_int_equal(pd_wal_add_sample(w, 5, 300, prof + 20, 20, &err), 0);
	assert_int_equal(pd_wal_commit(w, &err), 0);
	pd_wal_close(w);
	size_t seg_len;
	uint8_t *seg = read_all(seg_path(t.wal, 1), &seg_len);
	assert_int_equal(seg[PD_WAL_SEG_HDR + 1], 0); /* stored raw */
	const uint8_t *pl = seg + PD_WAL_SEG_HDR + PD_WAL_REC_HDR;
	size_t plen = seg_len - PD_WAL_SEG_HDR - PD_WAL_REC_HDR;
	uint8_t mut[128];
	uint32_t one = 1;
	unsigned seed = 1;
	int delivered = 0, damaged = 0;
	for (int it = 0; it < 20000; it++) {
		size_t mlen = plen;
		memcpy(mut, pl, plen);
		int nmut = 1 + rand_r(&seed) % 4;
		for (int k = 0; k < nmut; k++) {
			int op = rand_r(&seed) % 4;
			size_t pos = (size_t)rand_r(&seed) % mlen;
			if (op == 0)
				mut[pos] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
			else if (op == 1)
				mut[pos] = (uint8_t)rand_r(&seed);
			else if (op == 2 && mlen > 1)
				mlen = pos ? pos : 1;
			else if (mlen < sizeof(mut))
				mut[mlen++] = (uint8_t)rand_r(&seed);
		}
		write_file(seg_path(t.wal, 1), "PDWL\1\0\0\0", 8);
		append_record(seg_path(t.wal, 1), PD_WAL_REC_COMMIT, 0, mut, mlen);
		struct pd_wal_damage dmg = {0};
		struct pd_wal_replay_cb cb = {coll_series, coll_sample, &c, NULL};
		coll_fini(&c);
		coll_init(&c);
		int rc = pd_wal_read_segments(t.wal, &one, 1, 0, &cb, NULL, &dmg, &err);
		assert_true(rc == 0 || rc == 1);
		if (rc == 1) {
			assert_int_equal(c.ns + c.nm, 0); /* nothing of it handed out */
			damaged++;
		} else {
			delivered++;
		}
	}
	print_message("malformed payloads: %d damaged, %d still valid\n", damaged, delivered);
	assert_true(damaged > 10000);
	free(seg);
	coll_fini(&c);
	tdir_drop(&t);
}

/* A write that fails part way is cut off, and the WAL goes on. */
static void test_failed_write(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_err err = {0};
	struct pd_wal_replay_stats st;
	struct rlimit old, lim;
	uint8_t junk[3000];

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_COMMIT);
	commit_n(w, 1);
	commit_n(w, 2);
	int64_t good = file_size(seg_path(t.wal, 1));
	uint64_t size = pd_wal_size(w);

	void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)good + 100;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	prof_fill(999, junk, sizeof(junk));
	for (size_t i = 8; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(junk[i] ^ (i * 131));
	assert_int_equal(pd_wal_add_sample(w, 1, 5, junk, sizeof(junk), &err), 0);
	int rc = pd_wal_commit(w, &err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, prev);
	assert_int_equal(rc, PD_EIO);
	assert_non_null(strstr(err.msg, "write"));
	assert_int_equal(file_size(seg_path(t.wal, 1)), good);
	assert_int_equal(pd_wal_size(w), size);
	/* the pending record is gone, and the next commit works */
	commit_n(w, 3);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 0);
	expect_range(&c, 1, 3);
	coll_fini(&c);
	tdir_drop(&t);
}

/* ---- crash test ------------------------------------------------------------ */

#define CRASH_ROUNDS 40
#define CRASH_SEGMENT (64 * 1024)
#define CRASH_CHECKPOINT_EVERY 25

/* The child: opens the WAL and commits n, n+1, ... until it is killed, writing
 * each number to fd once pd_wal_commit has returned. Every few commits it cuts
 * and checkpoints (keeping everything), so that kills land in checkpoints too. */
static void crash_child(const char *dir, uint64_t n, int fd)
{
	struct pd_wal_opts o = {.segment_size = CRASH_SEGMENT, .sync = PD_WAL_SYNC_COMMIT};
	struct pd_err err = {0};
	struct pd_wal *w;

	if (pd_wal_open(&w, dir, &o, &err)) {
		fprintf(stderr, "child: open: %s\n", err.msg);
		_exit(2);
	}
	for (;; n++) {
		struct nlabels nl;
		size_t len = prof_len(n);
		uint8_t *p = malloc(len);
		if (!p)
			_exit(3);
		prof_fill(n, p, len);
		labels_of(n, &nl);
		if (pd_wal_add_series(w, n, nl.l, 3, &err) ||
		    pd_wal_add_sample(w, n, (int64_t)n * 1000, p, len, &err) ||
		    pd_wal_commit(w, &err)) {
			fprintf(stderr, "child: commit %" PRIu64 ": %s\n", n, err.msg);
			_exit(4);
		}
		free(p);
		if (write(fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
			_exit(5);
		if (n % CRASH_CHECKPOINT_EVERY == 0 &&
		    (pd_wal_cut(w, &err) || pd_wal_checkpoint(w, INT64_MIN, keep_all, NULL, &err))) {
			fprintf(stderr, "child: checkpoint: %s\n", err.msg);
			_exit(6);
		}
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads acknowledged numbers from fd until the deadline (or EOF with -1). */
static void drain_acks(int fd, int64_t deadline, uint64_t *expect, uint64_t *acked)
{
	uint8_t buf[4096];
	static uint8_t part[8];
	static size_t npart;
	for (;;) {
		int timeout = -1;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
			if (left <= 0)
				return;
			timeout = (int)left;
		}
		struct pollfd pfd = {fd, POLLIN, 0};
		int r = poll(&pfd, 1, timeout);
		if (r < 0 && errno == EINTR)
			continue;
		assert_true(r >= 0);
		if (r == 0)
			return;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n >= 0);
		if (n == 0)
			return;
		for (ssize_t i = 0; i < n; i++) {
			part[npart++] = buf[i];
			if (npart == 8) {
				uint64_t v;
				memcpy(&v, part, 8);
				npart = 0;
				/* acknowledged in order, one after the other */
				assert_int_equal(v, *expect);
				(*expect)++;
				(*acked)++;
			}
		}
	}
}

static void test_crash_kill(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	uint64_t max_acked = 0, total_acked = 0, unacked_present = 0, base = 0;
	int repairs = 0, in_checkpoint = 0;
	int64_t t0 = now_ms();

	tdir_make(&t);
	coll_init(&c);
	prof_big = 256 * 1024;
	print_message("crash test: seed %u\n", seed);
	for (int round = 0; round <= CRASH_ROUNDS; round++) {
		/* every acknowledged commit is there, exactly once, intact; nothing else
		 * but possibly the one commit in flight when the child died */
		assert_int_equal(replay(t.wal, &c, &st), 0);
		if (st.truncated) {
			repairs++;
			print_message("crash test: round %d: cut segment %u at %" PRIu64 ": %s\n",
				      round, st.segment, st.offset, st.reason);
		}
		uint64_t present = c.nm;
		expect_range(&c, 1, present);
		if (present < max_acked || present < base)
			fail_msg("round %d: %" PRIu64 " commits acknowledged, %" PRIu64
				 " present before, %" PRIu64 " replayed (seed %u)",
				 round, max_acked, base, present, seed);
		/* known: what was there before the round, and what the child acknowledged */
		uint64_t known = base > max_acked ? base : max_acked;
		if (present > known + 1)
			fail_msg("round %d: %" PRIu64 " commits replayed, at most %" PRIu64
				 " expected (seed %u)",
				 round, present, known + 1, seed);
		unacked_present += present - known;
		base = present;
		if (round == CRASH_ROUNDS)
			break;
		uint64_t next = present + 1;

		int pfd[2];
		assert_int_equal(pipe(pfd), 0);
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			crash_child(t.wal, next, pfd[1]);
			_exit(7);
		}
		close(pfd[1]);
		uint64_t expect = next, acked = 0;
		/* every fourth round kills only after a first acknowledgement (waited for
		 * up to a minute), so that a slow machine still checks acknowledged
		 * commits; the others kill at a random moment, possibly before any */
		if (round % 4 == 0) {
			int64_t dl = now_ms() + 60000;
			while (acked == 0 && now_ms() < dl)
				drain_acks(pfd[0], now_ms() + 100, &expect, &acked);
		}
		drain_acks(pfd[0], now_ms() + 1 + rand_r(&seed) % 50, &expect, &acked);
		assert_int_equal(kill(pid, SIGKILL), 0);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		drain_acks(pfd[0], -1, &expect, &acked);
		close(pfd[0]);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			fail_msg("child exited by itself (status %d)", status);
		if (acked) {
			max_acked = expect - 1;
			if (max_acked % CRASH_CHECKPOINT_EVERY == 0)
				in_checkpoint++; /* killed while cutting and checkpointing */
		}
		total_acked += acked;
	}
	print_message("crash test: %d rounds, %" PRIu64 " commits acknowledged, all present; "
		      "%" PRIu64 " unacknowledged in-flight commits also present; %d tails "
		      "repaired; %d kills during a cut + checkpoint; %.1f s\n",
		      CRASH_ROUNDS, total_acked, unacked_present, repairs, in_checkpoint,
		      (double)(now_ms() - t0) / 1000);
	assert_true(total_acked > 0);
	prof_big = 0;
	coll_fini(&c);
	tdir_drop(&t);
}

/* ---- group commit ------------------------------------------------------------ */

#define GC_DEADLINE_MS 60000 /* waits for other threads fail the test after this */

/* Commits n as commit_n does, through the many-thread path: its own record,
 * sealed, queued, waited for. Returns the commit's result (err set on failure). */
static int rec_commit(struct pd_wal *w, struct pd_wal_rec *r, uint64_t n, struct pd_err *err)
{
	struct nlabels nl;
	size_t len;
	uint8_t *p = malloc(prof_len(n));
	int rc;
	if (!p)
		return PD_ENOMEM;
	len = prof_len(n);
	prof_fill(n, p, len);
	labels_of(n, &nl);
	pd_wal_rec_reset(r);
	rc = pd_wal_rec_series(r, n, nl.l, 3, err);
	if (!rc)
		rc = pd_wal_rec_sample(r, n, (int64_t)n * 1000, p, len, err);
	if (!rc)
		rc = pd_wal_rec_seal(r, err);
	free(p);
	if (rc)
		return rc;
	pd_wal_enqueue(w, r);
	return pd_wal_wait(w, r, err);
}

static uint64_t wal_queued(struct pd_wal *w)
{
	struct pd_wal_stats st;
	pd_wal_stats(w, &st);
	return st.queued;
}

/* The leader's hook: on its first call it says so, waits (up to a deadline)
 * until `want` records are queued behind the group being written, and then,
 * with fsize_extra set, limits the file size to what is written so far plus
 * that many bytes, so that the next group's write fails part way. */
struct gc_hook {
	struct pd_wal *w;
	uint64_t want;
	rlim_t fsize_extra; /* 0: no limit */
	int calls, entered, reached;
	size_t max_group;
	pthread_mutex_t mu;
};

static void gc_before_sync(void *ctx, size_t nrecords)
{
	struct gc_hook *h = ctx;
	pthread_mutex_lock(&h->mu);
	int first = h->calls++ == 0;
	if (nrecords > h->max_group)
		h->max_group = nrecords;
	if (first)
		h->entered = 1;
	pthread_mutex_unlock(&h->mu);
	if (!first)
		return;
	int64_t deadline = now_ms() + GC_DEADLINE_MS;
	while (wal_queued(h->w) < h->want && now_ms() < deadline)
		poll(NULL, 0, 1);
	int reached = wal_queued(h->w) >= h->want;
	if (h->fsize_extra) {
		/* the group is written, not yet synced: the file ends after it */
		struct stat st;
		struct rlimit lim;
		char path[320];
		snprintf(path, sizeof(path), "%s/%08u", h->w->seg.dir, h->w->seg.num);
		if (stat(path, &st) == 0 && getrlimit(RLIMIT_FSIZE, &lim) == 0) {
			lim.rlim_cur = (rlim_t)st.st_size + h->fsize_extra;
			if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
				reached = 0;
		} else {
			reached = 0;
		}
	}
	pthread_mutex_lock(&h->mu);
	h->reached = reached;
	pthread_mutex_unlock(&h->mu);
}

static int gc_hook_entered(struct gc_hook *h)
{
	pthread_mutex_lock(&h->mu);
	int e = h->entered;
	pthread_mutex_unlock(&h->mu);
	return e;
}

/* A committing thread: commits first, first + 1, ... (count of them), one at a
 * time, and keeps each result. */
struct gc_thread {
	pthread_t th;
	struct pd_wal *w;
	uint64_t first;
	size_t count;
	int rc[64];
	struct pd_err err;
	int started;
};

static void *gc_run(void *arg)
{
	struct gc_thread *g = arg;
	struct pd_wal_rec *r = pd_wal_rec_create();
	for (size_t k = 0; k < g->count; k++) {
		struct pd_err err = {0};
		g->rc[k] = r ? rec_commit(g->w, r, g->first + k, &err) : PD_ENOMEM;
		if (g->rc[k] && !g->err.code)
			g->err = err;
	}
	pd_wal_rec_destroy(r);
	return NULL;
}

static void gc_start(struct gc_thread *g, struct pd_wal *w, uint64_t first, size_t count)
{
	memset(g, 0, sizeof(*g));
	g->w = w;
	g->first = first;
	g->count = count;
	assert_true(count <= sizeof(g->rc) / sizeof(g->rc[0]));
	assert_int_equal(pthread_create(&g->th, NULL, gc_run, g), 0);
	g->started = 1;
}

static void gc_join(struct gc_thread *g)
{
	if (g->started)
		assert_int_equal(pthread_join(g->th, NULL), 0);
	g->started = 0;
}

/* The replay holds each of the wanted commits exactly once and intact; a thread's
 * commits (consecutive numbers from one base) in the order it made them. */
static void expect_set(const struct coll *c, const uint64_t *nums, size_t n)
{
	assert_int_equal(c->nm, n);
	assert_int_equal(c->ns, n);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < c->nm && c->m[k].ref != nums[i])
			k++;
		if (k == c->nm)
			fail_msg("commit %" PRIu64 " is missing from the replay", nums[i]);
		assert_int_equal(c->m[k].t, (int64_t)nums[i] * 1000);
		assert_true(prof_check(nums[i], c->m[k].p, c->m[k].len));
	}
	for (size_t i = 1; i < c->nm; i++)
		for (size_t k = 0; k < i; k++)
			if (c->m[k].ref / 1000 == c->m[i].ref / 1000 && c->m[k].ref > c->m[i].ref)
				fail_msg("commit %" PRIu64 " was replayed after %" PRIu64, c->m[k].ref,
					 c->m[i].ref);
}

#define GC_THREADS 8
#define GC_COMMITS 40

/* Threads committing at once: each commit is acknowledged only once durable,
 * groups share one write and one fsync (fewer fsyncs than commits), groups that
 * cross the segment size start new segments, and the replay holds every commit
 * exactly once, in each thread's order. The first thread starts alone and, as
 * leader of the first group, waits in its hook until the other threads have
 * queued a record each, so that a group of several records is certain, whatever
 * the speed of the machine. */
static void test_group_commit(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	struct gc_thread g[GC_THREADS];
	struct gc_hook h = {.want = GC_THREADS - 1};
	uint64_t nums[GC_THREADS * GC_COMMITS];
	size_t n = 0;

	tdir_make(&t);
	coll_init(&c);
	pthread_mutex_init(&h.mu, NULL);
	struct pd_wal *w = wal_open(t.wal, 64 * 1024, PD_WAL_SYNC_COMMIT);
	h.w = w;
	w->before_sync = gc_before_sync;
	w->hook_ctx = &h;
	/* the first thread alone, so that its first group is its own record; the
	 * others start once it is in the hook */
	gc_start(&g[0], w, 1000, GC_COMMITS);
	int64_t deadline = now_ms() + GC_DEADLINE_MS;
	while (!gc_hook_entered(&h) && now_ms() < deadline)
		poll(NULL, 0, 1);
	assert_true(gc_hook_entered(&h));
	for (size_t i = 1; i < GC_THREADS; i++)
		gc_start(&g[i], w, (i + 1) * 1000, GC_COMMITS);
	for (size_t i = 0; i < GC_THREADS; i++) {
		gc_join(&g[i]);
		for (size_t k = 0; k < GC_COMMITS; k++) {
			if (g[i].rc[k])
				fail_msg("thread %zu, commit %zu: %s", i, k, g[i].err.msg);
			nums[n++] = g[i].first + k;
		}
	}
	assert_true(h.reached);
	struct pd_wal_stats ws;
	pd_wal_stats(w, &ws);
	print_message("group commit: %" PRIu64 " records, %" PRIu64 " writes, %" PRIu64
		      " fsyncs, largest group %zu\n",
		      ws.records, ws.writes, ws.fsyncs, h.max_group);
	assert_int_equal(ws.records, GC_THREADS * GC_COMMITS);
	assert_int_equal(ws.enqueued, GC_THREADS * GC_COMMITS);
	assert_int_equal(ws.queued, 0);
	assert_int_equal(ws.failed_writes, 0);
	assert_true(ws.fsyncs < ws.records);
	assert_true(ws.writes < ws.records);
	assert_true(h.max_group >= GC_THREADS - 1);
	uint32_t segs[64];
	assert_true(list_segs(t.wal, segs, 64) > 2);
	uint64_t size = pd_wal_size(w);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 0);
	expect_set(&c, nums, n);
	/* the size the WAL reported is what is on disk */
	uint64_t du;
	assert_int_equal(pd_wal_du(t.wal, &du, NULL), 0);
	assert_int_equal(du, size);
	pthread_mutex_destroy(&h.mu);
	coll_fini(&c);
	tdir_drop(&t);
}

#define GF_THREADS 6

/* A group whose write fails part way fails every commit in it with the error, is
 * cut off, and the WAL goes on: later commits from many threads work and the
 * replay holds exactly the acknowledged ones. The group is made deterministic:
 * the first committer leads a group of its own record and, in its hook, waits
 * until the other threads have queued theirs, then limits the file size so that
 * the next write (theirs, as one group) fails after one byte. */
static void test_group_commit_failure(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_err err = {0};
	struct pd_wal_replay_stats st;
	struct rlimit old;
	struct gc_thread g[GF_THREADS];
	struct gc_hook h = {.want = GF_THREADS - 1, .fsize_extra = 1};
	uint64_t nums[1 + 1 + 4 * 5];
	size_t n = 0;

	tdir_make(&t);
	coll_init(&c);
	pthread_mutex_init(&h.mu, NULL);
	struct pd_wal *w = wal_open(t.wal, 0, PD_WAL_SYNC_COMMIT);
	commit_n(w, 1);
	nums[n++] = 1;
	h.w = w;
	w->before_sync = gc_before_sync;
	w->hook_ctx = &h;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);

	gc_start(&g[0], w, 1000, 1);
	int64_t deadline = now_ms() + GC_DEADLINE_MS;
	while (!gc_hook_entered(&h) && now_ms() < deadline)
		poll(NULL, 0, 1);
	assert_true(gc_hook_entered(&h));
	for (size_t i = 1; i < GF_THREADS; i++)
		gc_start(&g[i], w, (i + 1) * 1000, 1);
	for (size_t i = 0; i < GF_THREADS; i++)
		gc_join(&g[i]);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, prev);
	assert_true(h.reached);

	assert_int_equal(g[0].rc[0], 0);
	nums[n++] = 1000;
	for (size_t i = 1; i < GF_THREADS; i++) {
		assert_int_equal(g[i].rc[0], PD_EIO);
		assert_non_null(strstr(g[i].err.msg, "write"));
	}
	struct pd_wal_stats ws;
	pd_wal_stats(w, &ws);
	assert_int_equal(ws.failed_writes, 1);
	assert_int_equal(ws.failed_records, GF_THREADS - 1);
	assert_int_equal(ws.records, 2);
	/* the torn group is cut off: the segment ends after the acknowledged records */
	assert_int_equal(file_size(seg_path(t.wal, 1)), (int64_t)pd_wal_size(w));

	/* later commits, from several threads again, work */
	w->before_sync = NULL;
	for (size_t i = 0; i < 4; i++)
		gc_start(&g[i], w, (i + 10) * 1000, 5);
	for (size_t i = 0; i < 4; i++) {
		gc_join(&g[i]);
		for (size_t k = 0; k < 5; k++) {
			if (g[i].rc[k])
				fail_msg("after the failure, thread %zu commit %zu: %s", i, k,
					 g[i].err.msg);
			nums[n++] = g[i].first + k;
		}
	}
	assert_int_equal(pd_wal_commit(w, &err), 0); /* nothing pending: no record */
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	assert_int_equal(st.truncated, 0);
	expect_set(&c, nums, n);
	pthread_mutex_destroy(&h.mu);
	coll_fini(&c);
	tdir_drop(&t);
}

/* ---- lazy commits ------------------------------------------------------------ */

static struct pd_wal_stats wal_stats(struct pd_wal *w)
{
	struct pd_wal_stats st;
	pd_wal_stats(w, &st);
	return st;
}

/* A lazy commit returns once written, without an fsync of its own; the
 * background sync then makes it durable; a commit that is not lazy still
 * returns only after an fsync; without the commit sync policy nothing is lazy;
 * and lazy commits survive a crash of the process that made them (the page
 * cache has them), each exactly once. */
static void test_lazy_commit(void **state)
{
	struct tdir t;
	struct coll c;
	struct pd_wal_replay_stats st;
	struct pd_err err = {0};

	tdir_make(&t);
	coll_init(&c);
	struct pd_wal *w = wal_open(t.wal, 64 * 1024, PD_WAL_SYNC_COMMIT);
	struct pd_wal_rec *r = pd_wal_rec_create();
	assert_non_null(r);
	pd_wal_rec_set_lazy(r, 1);
	for (uint64_t n = 1; n <= 5; n++)
		assert_int_equal(rec_commit(w, r, n, &err), 0);
	struct pd_wal_stats ws = wal_stats(w);
	assert_int_equal(ws.records, 5);
	assert_int_equal(ws.lazy_records, 5); /* written in groups that did not sync */
	/* the background sync follows within its period (waited for with a deadline) */
	int64_t deadline = now_ms() + GC_DEADLINE_MS;
	while (wal_stats(w).lazy_syncs == 0 && now_ms() < deadline)
		poll(NULL, 0, 5);
	ws = wal_stats(w);
	assert_true(ws.lazy_syncs >= 1);
	assert_true(ws.fsyncs >= ws.lazy_syncs);
	/* with nothing written since, it does not sync again */
	uint64_t syncs = ws.lazy_syncs;
	poll(NULL, 0, 3 * PD_WAL_LAZY_SYNC_MS);
	assert_int_equal(wal_stats(w).lazy_syncs, syncs);
	/* a commit that is not lazy waits for its own fsync */
	pd_wal_rec_set_lazy(r, 0);
	uint64_t before = wal_stats(w).fsyncs;
	assert_int_equal(rec_commit(w, r, 6, &err), 0);
	ws = wal_stats(w);
	assert_true(ws.fsyncs >= before + 1);
	assert_int_equal(ws.lazy_records, 5);
	pd_wal_rec_destroy(r);
	pd_wal_close(w);
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 6);
	coll_fini(&c);
	tdir_drop(&t);

	/* without the commit sync policy there is nothing to be lazy about */
	tdir_make(&t);
	w = wal_open(t.wal, 64 * 1024, PD_WAL_SYNC_NONE);
	r = pd_wal_rec_create();
	pd_wal_rec_set_lazy(r, 1);
	assert_int_equal(rec_commit(w, r, 1, &err), 0);
	assert_int_equal(wal_stats(w).lazy_records, 0);
	assert_int_equal(wal_stats(w).fsyncs, 0);
	pd_wal_rec_destroy(r);
	pd_wal_close(w);
	tdir_drop(&t);

	/* a child commits lazily and dies by SIGKILL right after its last commit
	 * returned: every acknowledged record is in the replay */
	tdir_make(&t);
	coll_init(&c);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		struct pd_wal_opts o = {.segment_size = 64 * 1024, .sync = PD_WAL_SYNC_COMMIT};
		struct pd_wal *cw = NULL;
		struct pd_wal_rec *cr = pd_wal_rec_create();
		if (!cr || pd_wal_open(&cw, t.wal, &o, &err))
			_exit(2);
		pd_wal_rec_set_lazy(cr, 1);
		for (uint64_t n = 1; n <= 40; n++)
			if (rec_commit(cw, cr, n, &err))
				_exit(3);
		if (write(pfd[1], "k", 1) != 1)
			_exit(4);
		for (;;)
			pause(); /* killed here, the WAL never closed */
	}
	close(pfd[1]);
	char ch = 0;
	assert_int_equal(read(pfd[0], &ch, 1), 1);
	close(pfd[0]);
	kill(pid, SIGKILL);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(replay(t.wal, &c, &st), 0);
	expect_range(&c, 1, 40);
	coll_fini(&c);
	tdir_drop(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_crc32c, teardown),
		cmocka_unit_test_teardown(test_roundtrip_segments, teardown),
		cmocka_unit_test_teardown(test_roundtrip_mixed, teardown),
		cmocka_unit_test_teardown(test_rollback, teardown),
		cmocka_unit_test_teardown(test_bad_input, teardown),
		cmocka_unit_test_teardown(test_replay_missing_and_stop, teardown),
		cmocka_unit_test_teardown(test_checkpoint, teardown),
		cmocka_unit_test_teardown(test_checkpoint_crash_states, teardown),
		cmocka_unit_test_teardown(test_checkpoint_damaged, teardown),
		cmocka_unit_test_teardown(test_damage_resync, teardown),
		cmocka_unit_test_teardown(test_torn_tail, teardown),
		cmocka_unit_test_teardown(test_open_needs_repair, teardown),
		cmocka_unit_test_teardown(test_bit_flips, teardown),
		cmocka_unit_test_teardown(test_corrupt_middle_segment, teardown),
		cmocka_unit_test_teardown(test_missing_segment, teardown),
		cmocka_unit_test_teardown(test_segment_headers, teardown),
		cmocka_unit_test_teardown(test_unknown_record_type, teardown),
		cmocka_unit_test_teardown(test_malformed_payloads, teardown),
		cmocka_unit_test_teardown(test_failed_write, teardown),
		cmocka_unit_test_teardown(test_crash_kill, teardown),
		cmocka_unit_test_teardown(test_group_commit, teardown),
		cmocka_unit_test_teardown(test_group_commit_failure, teardown),
		cmocka_unit_test_teardown(test_lazy_commit, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
