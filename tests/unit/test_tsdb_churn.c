/* test_tsdb_churn.c: series churn. Series that stop receiving samples are
 * dropped from the head at the truncation that takes their last chunk (series
 * table, refs, postings, label values), the series limit frees up, and a series
 * that comes back gets a new ref and works, across a restart too. A series quiet
 * for HEAD_IDLE_SEAL_MS has its open chunk sealed into the head chunk files at
 * the next flush, reads the same, and takes samples again in a new chunk (with
 * idle series written out, head_idle_ms, turned off). A series idle for
 * head_idle_ms is written to a block of idle series and leaves the head; its
 * samples read the same, survive a crash, are not stored twice after the
 * replay, and join their range's block once the range is persisted. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/tsdb.h"
#include "tsdb_int.h"

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static struct pd_tsdb *open_db(const char *dir, uint64_t max_series)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.block_range_ms = 1000;
	o.retention_ms = -1;
	o.max_future_ms = 0;
	o.max_series = max_series;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	return db;
}

static int push(struct pd_tsdb *db, const char *pod, int64_t t)
{
	struct pd_storage_label l[] = {{"__name__", "heap"}, {"pod", pod}};
	static const uint8_t body[] = "not a profile, kept as bytes";
	struct pd_err err = {0};
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_non_null(a);
	if (pd_tsdb_append(a, l, 2, t, body, sizeof(body), &err)) {
		pd_tsdb_rollback(a);
		return -1;
	}
	return pd_tsdb_commit(a, &err);
}

static uint64_t ref_of(struct pd_tsdb *db, const char *pod)
{
	struct pd_lpair l[] = {{"__name__", "heap"}, {"pod", pod}};
	struct head_series *s = head_get(&db->head, l, 2, labels_hash(l, 2));
	return s ? s->ref : 0;
}

static size_t head_pods(struct pd_tsdb *db)
{
	char **v = NULL;
	size_t n = 0;
	struct pd_err err = {0};
	assert_int_equal(head_reader_ops.label_values(&db->head, "pod", &v, &n, &err), 0);
	pd_storage_strings_free(v, n);
	return n;
}

static void test_churn_drops_series(void **state)
{
	(void)state;
	char *dir = strdup("/tmp/pd_test_tsdb_churn_XXXXXX");
	assert_non_null(mkdtemp(dir));
	struct pd_err err = {0};
	struct pd_storage_stats st;
	char pod[32];
	struct pd_tsdb *db = open_db(dir, 25);
	/* generation g: pods g-0 .. g-9, each with samples in range g only */
	uint64_t old_ref = 0;
	for (int g = 0; g < 6; g++) {
		for (int p = 0; p < 10; p++) {
			snprintf(pod, sizeof(pod), "%d-%d", g, p);
			assert_int_equal(push(db, pod, g * 1000 + 100 + p), 0);
			assert_int_equal(push(db, pod, g * 1000 + 600 + p), 0);
		}
		if (g == 0)
			old_ref = ref_of(db, "0-0");
		assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
		/* the head keeps at most the last two generations */
		assert_true(db->head.nseries <= 20);
		assert_true(head_pods(db) <= 20);
		assert_true(db->head.nlive <= 20);
	}
	pd_tsdb_stats(db, &st);
	assert_true(st.head_series_removed >= 40);
	assert_int_equal(ref_of(db, "0-0"), 0);
	/* a limit of 25: without the drop, generation 2 would pass it */
	assert_int_equal(st.head_series_limit_refused, 0);
	/* postings hold no ref of a dropped series */
	size_t npost = db->head.npostings;
	assert_true(npost <= 1 + 1 + 20); /* "", __name__=heap, the pods */
	/* a series coming back gets a new ref and works */
	assert_int_equal(push(db, "0-0", 6100), 0);
	uint64_t back = ref_of(db, "0-0");
	assert_true(back > old_ref);
	pd_tsdb_close(db);
	db = open_db(dir, 25);
	assert_int_equal(ref_of(db, "0-0"), back);
	assert_int_equal(push(db, "0-0", 6200), 0);
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* The series of the largest ref is dropped and the checkpoint drops its
 * entries: after a restart, a new series must still get a ref never used. */
static void test_largest_ref_not_reused(void **state)
{
	(void)state;
	char *dir = strdup("/tmp/pd_test_tsdb_churn_XXXXXX");
	assert_non_null(mkdtemp(dir));
	struct pd_err err = {0};
	struct pd_tsdb *db = open_db(dir, 0);
	assert_int_equal(push(db, "stays", 100), 0);
	assert_int_equal(push(db, "goes", 150), 0);
	uint64_t gone = ref_of(db, "goes");
	assert_true(gone > ref_of(db, "stays"));
	for (int g = 1; g < 5; g++) {
		assert_int_equal(push(db, "stays", g * 1000 + 100), 0);
		assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	}
	assert_int_equal(ref_of(db, "goes"), 0);
	pd_tsdb_close(db);

	db = open_db(dir, 0);
	/* the entry that keeps the ref named makes no series of the head */
	assert_int_equal(ref_of(db, "goes"), 0);
	assert_int_equal(head_pods(db), 1);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_series_removed, 0);
	assert_int_equal(push(db, "new", 5100), 0);
	assert_true(ref_of(db, "new") > gone);
	/* and again through a second checkpoint of the first */
	for (int g = 6; g < 9; g++) {
		assert_int_equal(push(db, "stays", g * 1000 + 100), 0);
		assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	}
	uint64_t newest = ref_of(db, "new");
	assert_int_equal(newest, 0);
	pd_tsdb_close(db);
	db = open_db(dir, 0);
	assert_int_equal(push(db, "newer", 9100), 0);
	assert_true(ref_of(db, "newer") > gone + 1);
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* The open chunk of a series that stopped taking samples is sealed at a flush
 * once the newest sample of the head is HEAD_IDLE_SEAL_MS past it; the series'
 * samples read the same and it takes more after. */
static void test_idle_chunk_sealed(void **state)
{
	(void)state;
	char *dir = strdup("/tmp/pd_test_tsdb_churn_XXXXXX");
	assert_non_null(mkdtemp(dir));
	struct pd_err err = {0};
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.max_future_ms = 0;
	o.head_idle_ms = 0; /* series stay in the head: their open chunks are sealed */
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	const int64_t t0 = 1000000, step = 15000;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(push(db, "gone", t0 + i * step), 0);
		assert_int_equal(push(db, "alive", t0 + i * step), 0);
	}
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_chunks_mapped, 0);
	/* "alive" goes on, up to just under the idle time past "gone"'s last sample */
	int64_t last_gone = t0 + 3 * step, t = t0 + 4 * step;
	for (; t < last_gone + HEAD_IDLE_SEAL_MS; t += step)
		assert_int_equal(push(db, "alive", t), 0);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_chunks_mapped, 0);
	/* past it: the flush seals "gone"'s open chunk, not "alive"'s */
	assert_int_equal(push(db, "alive", t + step), 0);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_chunks_mapped, 1);
	struct pd_lpair gl[] = {{"__name__", "heap"}, {"pod", "gone"}};
	struct head_series *g = head_get(&db->head, gl, 2, labels_hash(gl, 2));
	assert_non_null(g);
	assert_int_equal(g->nchunks, 1);
	assert_int_equal(g->open_ts.count, 0);
	struct pd_storage_label l[] = {{"__name__", "heap"}, {"pod", "gone"}};
	for (int i = 0; i < 4; i++) {
		uint8_t *got = NULL;
		size_t gl_len = 0;
		assert_int_equal(pd_tsdb_read(db, l, 2, t0 + i * step, &got, &gl_len, &err), 0);
		assert_memory_equal(got, "not a profile, kept as bytes", 28);
		free(got);
	}
	/* it comes back: a new open chunk */
	assert_int_equal(push(db, "gone", t + 2 * step), 0);
	assert_int_equal(g->open_ts.count, 1);
	pd_tsdb_close(db);
	/* and all of it is there after a restart */
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("reopen: %s", err.msg);
	for (int i = 0; i < 5; i++) {
		int64_t at = i < 4 ? t0 + i * step : t + 2 * step;
		uint8_t *got = NULL;
		size_t gl_len = 0;
		assert_int_equal(pd_tsdb_read(db, l, 2, at, &got, &gl_len, &err), 0);
		free(got);
	}
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(dir);
}


/* ---- idle series written to blocks ------------------------------------------ */

#define IDLE_T0 7200000LL /* the start of a 2 h block range */
#define IDLE_STEP 15000LL
#define IDLE_GONE 5
#define IDLE_GONE_SAMPLES 8

static struct pd_tsdb *open_idle(const char *dir)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *db;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o); /* 2 h blocks, series idle after 5 minutes */
	o.retention_ms = -1;
	if (pd_tsdb_open(&db, dir, &o, &err))
		fail_msg("open: %s", err.msg);
	return db;
}

static int in_head(struct pd_tsdb *db, const char *pod)
{
	struct pd_lpair l[] = {{"__name__", "heap"}, {"pod", pod}};
	return head_get(&db->head, l, 2, labels_hash(l, 2)) != NULL;
}

static void assert_readable(struct pd_tsdb *db, const char *pod, int64_t t)
{
	struct pd_storage_label l[] = {{"__name__", "heap"}, {"pod", pod}};
	struct pd_err err = {0};
	uint8_t *got = NULL;
	size_t len = 0;
	if (pd_tsdb_read(db, l, 2, t, &got, &len, &err))
		fail_msg("%s at %lld: %s", pod, (long long)t, err.msg);
	assert_int_equal(len, 29);
	free(got);
}

static void assert_gone_readable(struct pd_tsdb *db)
{
	char pod[32];
	for (int p = 0; p < IDLE_GONE; p++) {
		snprintf(pod, sizeof(pod), "gone-%d", p);
		for (int i = 0; i < IDLE_GONE_SAMPLES; i++)
			assert_readable(db, pod, IDLE_T0 + i * IDLE_STEP);
	}
}

/* The blocks that overlap [lo, hi): how many, and how many of them are idle. */
static size_t blocks_in(struct pd_tsdb *db, int64_t lo, int64_t hi, size_t *idle,
			uint64_t *samples)
{
	size_t n = 0;
	*idle = 0;
	*samples = 0;
	for (size_t i = 0; i < db->nblocks; i++) {
		const struct pd_block_meta *m = pd_block_meta(db->blocks[i]);
		if (m->maxt <= lo || m->mint >= hi)
			continue;
		n++;
		*idle += m->idle != 0;
		*samples += m->num_samples;
	}
	return n;
}

/* The part of the scenario that a crash ends: pods pushed for 2 minutes, then
 * only "alive"; the pods leave the head once idle; one comes back. Runs in a
 * child process that ends without closing the store, as kill -9 would. */
static void idle_until_crash(const char *dir)
{
	struct pd_tsdb *db = open_idle(dir);
	struct pd_err err = {0};
	struct pd_storage_stats st;
	char pod[32];
	for (int i = 0; i < IDLE_GONE_SAMPLES; i++) {
		for (int p = 0; p < IDLE_GONE; p++) {
			snprintf(pod, sizeof(pod), "gone-%d", p);
			assert_int_equal(push(db, pod, IDLE_T0 + i * IDLE_STEP), 0);
		}
		assert_int_equal(push(db, "alive", IDLE_T0 + i * IDLE_STEP), 0);
	}
	int64_t last_gone = IDLE_T0 + (IDLE_GONE_SAMPLES - 1) * IDLE_STEP, t = last_gone;
	/* up to exactly 5 minutes after the pods' last sample: not idle yet */
	while (t < last_gone + PD_TSDB_DEFAULT_HEAD_IDLE_MS) {
		t += IDLE_STEP;
		assert_int_equal(push(db, "alive", t), 0);
	}
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	assert_true(in_head(db, "gone-0"));
	assert_int_equal(db->nblocks, 0);
	/* past it: the pods go to a block of idle series, "alive" stays */
	t += IDLE_STEP;
	assert_int_equal(push(db, "alive", t), 0);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	for (int p = 0; p < IDLE_GONE; p++) {
		snprintf(pod, sizeof(pod), "gone-%d", p);
		assert_false(in_head(db, pod));
	}
	assert_true(in_head(db, "alive"));
	pd_tsdb_stats(db, &st);
	assert_int_equal(st.head_series_idle_written, IDLE_GONE);
	assert_int_equal(st.head_series, 1);
	assert_int_equal(db->nblocks, 1);
	const struct pd_block_meta *m = pd_block_meta(db->blocks[0]);
	assert_true(m->idle);
	assert_int_equal(m->mint, IDLE_T0);
	assert_int_equal(m->maxt, IDLE_T0 + PD_TSDB_DEFAULT_BLOCK_RANGE_MS);
	assert_int_equal(m->num_series, IDLE_GONE);
	assert_int_equal(m->num_samples, IDLE_GONE * IDLE_GONE_SAMPLES);
	assert_gone_readable(db);
	/* the range still takes samples: a block of idle series is no bound */
	assert_int_equal(push(db, "late", IDLE_T0 + 1), 0);
	/* a pod that comes back is a new series, its old samples still there */
	assert_int_equal(push(db, "gone-0", t + IDLE_STEP), 0);
	assert_true(in_head(db, "gone-0"));
	assert_gone_readable(db);
	_exit(0); /* no close: the WAL is not checkpointed */
}

static void test_idle_series_written(void **state)
{
	(void)state;
	char *dir = strdup("/tmp/pd_test_tsdb_idle_XXXXXX");
	assert_non_null(mkdtemp(dir));
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		idle_until_crash(dir); /* a failed assertion ends the child with a status */
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* after the crash: replay puts the pods' samples back from the WAL, the
	 * open's flush writes the idle ones out again and merges the two blocks:
	 * every sample once */
	struct pd_tsdb *db = open_idle(dir);
	struct pd_err err = {0};
	char pod[32];
	for (int p = 1; p < IDLE_GONE; p++) {
		snprintf(pod, sizeof(pod), "gone-%d", p);
		assert_false(in_head(db, pod));
	}
	/* the pod that came back holds only its new sample: replay left out the
	 * old ones, which the block holds */
	struct pd_lpair g0[] = {{"__name__", "heap"}, {"pod", "gone-0"}};
	struct head_series *g = head_get(&db->head, g0, 2, labels_hash(g0, 2));
	assert_non_null(g);
	assert_int_equal(g->nchunks, 0);
	assert_int_equal(g->open_ts.count, 1);
	assert_gone_readable(db);
	assert_readable(db, "late", IDLE_T0 + 1);
	const int64_t lo = IDLE_T0, hi = IDLE_T0 + PD_TSDB_DEFAULT_BLOCK_RANGE_MS;
	size_t idle;
	uint64_t samples;
	assert_int_equal(blocks_in(db, lo, hi, &idle, &samples), 1);
	assert_int_equal(idle, 1);
	/* the pods' samples once, and "late"'s, idle too by now */
	assert_int_equal(samples, IDLE_GONE * IDLE_GONE_SAMPLES + 1);
	assert_false(in_head(db, "late"));

	/* "alive" goes on until the range is persisted: its block and the block of
	 * idle series become one block, no longer idle */
	int64_t t = IDLE_T0 + 30 * 60000;
	for (; t < hi + PD_TSDB_DEFAULT_BLOCK_RANGE_MS / 2 + IDLE_STEP; t += 60000)
		assert_int_equal(push(db, "alive", t), 0);
	assert_int_equal(pd_tsdb_flush(db, 0, &err), 0);
	assert_int_equal(blocks_in(db, lo, hi, &idle, &samples), 1);
	assert_int_equal(idle, 0);
	assert_gone_readable(db);
	assert_readable(db, "late", IDLE_T0 + 1);
	assert_readable(db, "alive", IDLE_T0);
	assert_readable(db, "alive", IDLE_T0 + 30 * 60000);
	pd_tsdb_close(db);
	/* the merged block holds the range: the bound is its end */
	db = open_idle(dir);
	assert_int_not_equal(push(db, "alive", hi - 1), 0);
	assert_int_equal(push(db, "alive", t + 60000), 0);
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_churn_drops_series),
	    cmocka_unit_test(test_largest_ref_not_reused),
	    cmocka_unit_test(test_idle_chunk_sealed),
	    cmocka_unit_test(test_idle_series_written),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
