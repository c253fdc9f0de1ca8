/* test_tsdb_damage.c: a damaged store loses only what was damaged. Blocks whose
 * index, meta.json or chunk files are damaged or missing are set aside at open
 * and the rest is served; a corrupt chunk fails only the reads that touch it;
 * `pd_tsdb_check` reports damage without changing anything; damaged WAL records
 * cost only themselves; a store reopened with a head over its range cuts it at
 * once; and a full disk during a head cut or a compaction loses nothing and
 * recovers once space returns. */
#define _GNU_SOURCE /* mount options, nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/tsdb.h"
#include "tsdb_int.h"

#define H (3600LL * 1000)
#define STEP (5LL * 60 * 1000)
#define NSERIES 4

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/pd_test_damage_XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmdir_all(char *d)
{
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

static char *join(const char *a, const char *b)
{
	char *p = malloc(strlen(a) + strlen(b) + 2);
	sprintf(p, "%s/%s", a, b);
	return p;
}

/* The stored bytes of series s at t: any bytes do, the store keeps them as
 * they are. */
static uint8_t *value(int s, int64_t t, size_t *len)
{
	*len = 300;
	uint8_t *p = malloc(*len);
	for (size_t i = 0; i < *len; i++)
		p[i] = (uint8_t)(i * 7 + (uint64_t)s * 13 + (uint64_t)(t / STEP) * (i % 5));
	p[0] = 0x0a; /* not a gzip stream */
	return p;
}

static char job[NSERIES][8];
static void labels(int s, struct pd_storage_label l[2])
{
	snprintf(job[s], sizeof(job[s]), "j%d", s);
	l[0] = (struct pd_storage_label){"__name__", "heap"};
	l[1] = (struct pd_storage_label){"job", job[s]};
}

static struct pd_tsdb *open_store(const char *dir, int64_t retention)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = H;
	o.retention_ms = retention; /* 20 h: compaction ranges up to 2 h, so none */
	o.wal_sync = 1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open %s: %s", dir, err.msg);
	return db;
}

static void append(struct pd_tsdb *db, int64_t from, int64_t to)
{
	struct pd_err err = {0};
	for (int64_t t = from; t < to; t += STEP) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int s = 0; s < NSERIES; s++) {
			struct pd_storage_label l[2];
			size_t len;
			labels(s, l);
			uint8_t *p = value(s, t, &len);
			if (pd_tsdb_append(a, l, 2, t, p, len, &err))
				fail_msg("append: %s", err.msg);
			free(p);
		}
		if (pd_tsdb_commit(a, &err))
			fail_msg("commit at %lld: %s", (long long)t, err.msg);
	}
}

/* Timestamps of series s in [from, to], or -1 when it is not in the result. */
static long count_ts(struct pd_tsdb *db, int s, int64_t from, int64_t to)
{
	struct pd_err err = {0};
	struct pd_storage_matcher m = {"job", pd_storage_match_equal, job[s]};
	struct pd_storage_result *r;
	struct pd_storage_label l[2];
	labels(s, l);
	if (pd_tsdb_select(db, &m, 1, from, to, 0, &r, &err))
		fail_msg("select: %s", err.msg);
	long n = r->nseries ? (long)r->series[0].nts : -1;
	pd_storage_result_destroy(r);
	return n;
}

/* Reads series s at t and compares; returns the read's code. */
static int read_one(struct pd_tsdb *db, int s, int64_t t, struct pd_err *err)
{
	struct pd_storage_label l[2];
	uint8_t *got;
	size_t glen, wlen;
	labels(s, l);
	int rc = pd_tsdb_read(db, l, 2, t, &got, &glen, err);
	if (rc)
		return rc;
	uint8_t *want = value(s, t, &wlen);
	assert_int_equal(glen, wlen);
	assert_memory_equal(got, want, wlen);
	free(got);
	free(want);
	return 0;
}

/* Every series has every sample of [from, to), and they read back. */
static void expect_all(struct pd_tsdb *db, int64_t from, int64_t to)
{
	struct pd_err err = {0};
	for (int s = 0; s < NSERIES; s++) {
		assert_int_equal(count_ts(db, s, from, to - 1), (to - from) / STEP);
		for (int64_t t = from; t < to; t += STEP * 5)
			if (read_one(db, s, t, &err))
				fail_msg("read series %d at %lld: %s", s, (long long)t, err.msg);
	}
}

static size_t blocks_of(struct pd_tsdb *db, struct pd_storage_block_info **bi)
{
	size_t n;
	struct pd_err err = {0};
	assert_int_equal(pd_tsdb_blocks(db, bi, &n, &err), 0);
	return n;
}

/* Entries of a store's folder, not counting chunks_open/ (the open chunks'
 * frames, there while the head holds open chunks). */
static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *e;
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.' && strcmp(e->d_name, "chunks_open") != 0;
	closedir(d);
	return n;
}

static void flip(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	uint8_t b;
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

static off_t fsize(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

struct found {
	int n;
	char file[8][128];
	int64_t off[8];
};

static void on_damage(void *ctx, const struct pd_tsdb_damage *d)
{
	struct found *f = ctx;
	if (f->n < 8) {
		snprintf(f->file[f->n], sizeof(f->file[0]), "%s", d->file);
		f->off[f->n] = d->offset;
	}
	f->n++;
}

/* 5 blocks of 1 h; the first four damaged four ways. */
static void test_damaged_blocks_set_aside(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_store(dir, 20 * H);
	struct pd_err err = {0};
	append(db, 0, 5 * H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	struct pd_storage_block_info *bi;
	assert_int_equal(blocks_of(db, &bi), 5);
	pd_tsdb_close(db);
	char *b[5];
	for (int i = 0; i < 5; i++)
		b[i] = join(dir, bi[i].ulid);

	char *p = join(b[0], "index"); /* truncated index */
	assert_int_equal(truncate(p, fsize(p) / 2), 0);
	free(p);
	p = join(b[1], "index"); /* flipped index bytes */
	for (int i = 0; i < 8; i++)
		flip(p, fsize(p) / 3 + i);
	free(p);
	p = join(b[2], "meta.json"); /* garbage meta.json */
	FILE *f = fopen(p, "w");
	fputs("{\"ulid\": [garbage", f);
	fclose(f);
	free(p);
	p = join(b[3], "chunks/000001"); /* missing chunk file */
	assert_int_equal(unlink(p), 0);
	free(p);

	/* the check names each block and file, and changes nothing */
	struct found fd = {0};
	uint64_t found;
	assert_int_equal(pd_tsdb_check(dir, on_damage, &fd, &found, &err), 0);
	assert_int_equal(found, 4);
	assert_int_equal(fd.n, 4);
	int seen[4] = {0};
	for (int i = 0; i < 4; i++) {
		for (int k = 0; k < 4; k++)
			if (strncmp(fd.file[i], bi[k].ulid, 26) == 0)
				seen[k]++;
		if (strstr(fd.file[i], bi[0].ulid))
			assert_string_equal(fd.file[i] + 26, "/index");
		if (strstr(fd.file[i], bi[2].ulid))
			assert_string_equal(fd.file[i] + 26, "/meta.json");
		if (strstr(fd.file[i], bi[3].ulid))
			assert_string_equal(fd.file[i] + 26, "/chunks");
	}
	for (int k = 0; k < 4; k++)
		assert_int_equal(seen[k], 1);
	assert_int_equal(entries(dir), 6); /* 5 blocks and wal */

	/* the store opens, with the damaged blocks moved to damaged/ */
	db = open_store(dir, 20 * H);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.blocks_damaged, 4);
	assert_non_null(strstr(st.damage, "damaged"));
	char *dd = join(dir, PD_TSDB_DAMAGED_DIR);
	assert_int_equal(entries(dd), 4);
	for (int k = 0; k < 4; k++)
		assert_int_equal(access(b[k], F_OK), -1);
	/* the rest is served */
	expect_all(db, 4 * H, 5 * H);
	assert_int_equal(count_ts(db, 0, 0, 5 * H), 12);
	pd_tsdb_close(db);
	/* and stays so; the check finds nothing more */
	db = open_store(dir, 20 * H);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.blocks_damaged, 0);
	pd_tsdb_close(db);
	assert_int_equal(pd_tsdb_check(dir, NULL, NULL, &found, &err), 0);
	assert_int_equal(found, 0);

	for (int i = 0; i < 5; i++)
		free(b[i]);
	free(bi);
	free(dd);
	rmdir_all(dir);
}

/* A chunk whose bytes are damaged fails the reads that touch it only. */
static void test_corrupt_chunk(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_store(dir, 20 * H);
	struct pd_err err = {0};
	append(db, 0, 2 * H);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	assert_int_equal(db->nblocks, 2);

	/* series 0's timestamp chunk and series 1's value chunk in the first block */
	struct pd_block *b = db->blocks[0];
	uint64_t ts_ref = 0, vals_ref = 0;
	for (int s = 0; s < 2; s++) {
		uint64_t *refs;
		size_t n;
		struct pd_lpair *l;
		struct pd_block_chunk_meta *c;
		size_t nl, nc;
		assert_int_equal(pd_block_postings(b, "job", job[s], &refs, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_int_equal(pd_block_series(b, refs[0], &l, &nl, &c, &nc, &err), 0);
		assert_int_equal(nc, 1);
		if (s == 0)
			ts_ref = c[0].ts_ref;
		else
			vals_ref = c[0].vals_ref;
		free(refs);
		free(l);
		free(c);
	}
	char *seg = join(pd_block_dir(b), "chunks/000001");
	flip(seg, (off_t)(ts_ref & 0xffffffffu) + 3);
	flip(seg, (off_t)(vals_ref & 0xffffffffu) + 5);

	/* listing: every series answers; series 0 without the damaged chunk */
	for (int s = 0; s < NSERIES; s++)
		assert_int_equal(count_ts(db, s, 0, 2 * H), s == 0 ? 12 : 24);
	/* reading: the damaged value chunk fails with an error naming it */
	assert_int_equal(read_one(db, 1, STEP, &err), PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "chunks/000001"));
	assert_non_null(strstr(err.msg, "CRC"));
	assert_int_equal(read_one(db, 1, H + STEP, &err), 0);
	assert_int_equal(read_one(db, 0, H + STEP, &err), 0);
	for (int s = 2; s < NSERIES; s++)
		assert_int_equal(read_one(db, s, STEP, &err), 0);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.chunks_damaged >= 2);

	/* the check names both chunks by offset */
	struct found fd = {0};
	uint64_t found;
	assert_int_equal(pd_tsdb_check(dir, on_damage, &fd, &found, &err), 0);
	assert_int_equal(found, 2);
	int hit_ts = 0, hit_vals = 0;
	for (int i = 0; i < 2; i++) {
		assert_non_null(strstr(fd.file[i], "/chunks/000001"));
		hit_ts += fd.off[i] == (int64_t)(ts_ref & 0xffffffffu);
		hit_vals += fd.off[i] == (int64_t)(vals_ref & 0xffffffffu);
	}
	assert_int_equal(hit_ts, 1);
	assert_int_equal(hit_vals, 1);
	pd_tsdb_close(db);
	free(seg);
	rmdir_all(dir);
}

/* 16 flipped bytes in the WAL lose one or two commits, not the rest. (They are
 * put past the first commit, which holds every series' entry: samples whose
 * series entry is lost cannot be given their labels.) */
static void test_wal_damage(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_store(dir, 20 * H);
	append(db, 0, 100 * STEP); /* 100 commits */
	pd_tsdb_close(db);
	char *seg = join(dir, "wal/00000001");
	off_t at = fsize(seg) / 10;
	for (int i = 0; i < 16; i++)
		flip(seg, at + i);
	db = open_store(dir, 20 * H);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_true(st.wal_damaged_records >= 1 && st.wal_damaged_records <= 2);
	assert_true(st.wal_damaged_bytes >= 16);
	assert_non_null(strstr(st.damage, "WAL replay skipped"));
	/* samples of the lost commits that a sealed chunk holds come back from the
	 * head chunk files */
	long kept = count_ts(db, 0, 0, 100 * STEP);
	assert_true(kept >= 100 - (long)st.wal_damaged_records && kept <= 100);
	for (int s = 0; s < NSERIES; s++)
		assert_int_equal(count_ts(db, s, 0, 100 * STEP), kept);
	/* the store goes on, and keeps what it had */
	append(db, 100 * STEP, 110 * STEP);
	pd_tsdb_close(db);
	db = open_store(dir, 20 * H);
	for (int s = 0; s < NSERIES; s++)
		assert_int_equal(count_ts(db, s, 0, 110 * STEP), kept + 10);
	pd_tsdb_close(db);
	free(seg);
	rmdir_all(dir);
}

/* A process that never lives to its first flush still cuts and checkpoints:
 * opening a store whose head spans more than its range does it. */
static void test_open_cuts_head(void **state)
{
	(void)state;
	char *dir = tmpdir();
	struct pd_tsdb *db = open_store(dir, 20 * H);
	append(db, 0, 4 * H);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.blocks, 0);
	uint64_t wal_before = st.wal_bytes;
	pd_tsdb_close(db); /* no flush: killed */
	db = open_store(dir, 20 * H);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.blocks, 3); /* [0, 3 h); the newest half range stays */
	assert_true(st.head_mint >= 3 * H);
	assert_true(st.wal_bytes < wal_before / 2);
	expect_all(db, 0, 4 * H);
	pd_tsdb_close(db);
	db = open_store(dir, 20 * H);
	expect_all(db, 0, 4 * H);
	pd_tsdb_close(db);
	rmdir_all(dir);
}

/* ---- a full disk --------------------------------------------------------------
 *
 * The store lives on a small tmpfs that the test mounts itself (mount(2), which
 * needs root, or CAP_SYS_ADMIN in a container): a fresh Debian machine running
 * the tests as root has all it needs. A filler file takes every free byte. */

struct smallfs {
	char *mnt, *store, *filler;
};

static struct smallfs *mounted; /* unmounted by the teardown if a test fails */

static void smallfs_mount(struct smallfs *fs)
{
	fs->mnt = tmpdir();
	if (mount("pd_test", fs->mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0700"))
		fail_msg("mounting a 16 MiB tmpfs on %s for the disk-full tests failed: %s (run "
			 "the tests as root, or with CAP_SYS_ADMIN)",
			 fs->mnt, strerror(errno));
	fs->store = join(fs->mnt, "data");
	fs->filler = join(fs->mnt, "filler");
	mounted = fs;
}

/* Fills the filesystem to the last byte. */
static void smallfs_fill(struct smallfs *fs)
{
	int fd = open(fs->filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	static uint8_t buf[4096];
	assert_true(fd >= 0);
	for (size_t sz = sizeof(buf); sz;) {
		ssize_t n = write(fd, buf, sz);
		if (n < 0 && errno == ENOSPC)
			sz /= 2;
		else
			assert_true(n > 0);
	}
	close(fd);
}

static void smallfs_free(struct smallfs *fs)
{
	assert_int_equal(unlink(fs->filler), 0);
}

static void smallfs_unmount(struct smallfs *fs)
{
	mounted = NULL;
	assert_int_equal(umount2(fs->mnt, MNT_DETACH), 0);
	rmdir(fs->mnt);
	free(fs->mnt);
	free(fs->store);
	free(fs->filler);
}

static void test_disk_full_head_cut(void **state)
{
	(void)state;
	struct smallfs fs;
	struct pd_err err = {0};
	smallfs_mount(&fs);
	struct pd_tsdb *db = open_store(fs.store, 20 * H);
	append(db, 0, 4 * H);
	smallfs_fill(&fs);
	/* the head cut fails: no block, nothing lost, counted */
	assert_int_not_equal(pd_tsdb_flush(db, 0, &err), 0);
	assert_non_null(strstr(err.msg, "No space left"));
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_cut_failures, 1);
	assert_int_equal(st.blocks, 0);
	assert_int_equal(st.head_samples, 4 * H / STEP * NSERIES);
	expect_all(db, 0, 4 * H);
	/* appends fail cleanly meanwhile (the failed cut gave back the space of its
	 * unfinished block: take it again) */
	smallfs_fill(&fs);
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	struct pd_storage_label l[2];
	size_t len = 256 << 10; /* more than any page a file has left over */
	uint8_t *p = malloc(len);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 2654435761u) >> 13);
	p[0] = 0x0a;
	labels(0, l);
	assert_int_equal(pd_tsdb_append(a, l, 2, 4 * H, p, len, &err), 0);
	assert_int_not_equal(pd_tsdb_commit(a, &err), 0);
	free(p);
	/* space returns: the next flush persists the head */
	smallfs_free(&fs);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.blocks, 3);
	assert_int_equal(st.head_cut_failures, 1);
	expect_all(db, 0, 4 * H);
	append(db, 4 * H, 4 * H + STEP);
	pd_tsdb_close(db);
	db = open_store(fs.store, 20 * H);
	expect_all(db, 0, 4 * H + STEP);
	pd_tsdb_close(db);
	smallfs_unmount(&fs);
}

static void test_disk_full_compaction(void **state)
{
	(void)state;
	struct smallfs fs;
	struct pd_err err = {0};
	smallfs_mount(&fs);
	/* three blocks of [0, 3 h) that a retention of 20 h does not compact */
	struct pd_tsdb *db = open_store(fs.store, 20 * H);
	append(db, 0, 4 * H);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_close(db);
	smallfs_fill(&fs);
	/* with no retention limit they are due: the compaction at open fails, the
	 * store opens all the same */
	db = open_store(fs.store, -1);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compaction_failures, 1);
	assert_int_equal(st.compactions, 0);
	assert_int_equal(st.blocks, 3);
	expect_all(db, 0, 4 * H);
	assert_int_not_equal(pd_tsdb_flush(db, 0, &err), 0);
	assert_non_null(strstr(err.msg, "No space left"));
	/* no unfinished block is left behind to hold the space */
	smallfs_free(&fs);
	assert_int_equal(entries(fs.store), 4); /* 3 blocks and wal */
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.compactions, 1);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.compaction_failures, 2);
	expect_all(db, 0, 4 * H);
	pd_tsdb_close(db);
	db = open_store(fs.store, -1);
	expect_all(db, 0, 4 * H);
	pd_tsdb_close(db);
	smallfs_unmount(&fs);
}

static int unmount_left(void **state)
{
	(void)state;
	if (mounted) {
		umount2(mounted->mnt, MNT_DETACH);
		rmdir(mounted->mnt);
		mounted = NULL;
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_damaged_blocks_set_aside),
	    cmocka_unit_test(test_corrupt_chunk),
	    cmocka_unit_test(test_wal_damage),
	    cmocka_unit_test(test_open_cuts_head),
	    cmocka_unit_test_teardown(test_disk_full_head_cut, unmount_left),
	    cmocka_unit_test_teardown(test_disk_full_compaction, unmount_left),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
