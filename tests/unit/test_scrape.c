/* test_scrape.c: the scrape engine against a real HTTP target on loopback: loops
 * fire on their ticks, bodies arrive whole, every kind of failure is reported with
 * its reason (HTTP status, refused connection, timeout, endless body), a slow
 * target never delays another, credentials are sent, and a removed loop stops. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "profd/scrape.h"
#include "target_server.h"

#define MAXR 64

struct rec {
	int64_t sched[MAXR];
	int error[MAXR];
	char msg[MAXR][128];
	size_t len[MAXR];
	int body_ok[MAXR];
	int n;
};

struct ctx {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const uint8_t *profile;
	size_t plen;
	int calls_after_remove;
	int removed;
};

static void on_result(void *ectx, void *lctx, const struct pd_scrape_result *r)
{
	struct ctx *c = ectx;
	struct rec *rec = lctx;
	pthread_mutex_lock(&c->mu);
	if (c->removed && rec == NULL)
		c->calls_after_remove++;
	if (rec && rec->n < MAXR) {
		int i = rec->n++;
		rec->sched[i] = r->scheduled_ms;
		rec->error[i] = r->error;
		snprintf(rec->msg[i], sizeof(rec->msg[i]), "%s", r->message ? r->message : "");
		rec->len[i] = r->len;
		rec->body_ok[i] = r->body && r->len == c->plen && memcmp(r->body, c->profile, c->plen) == 0;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* Waits until rec has n results or ms pass; returns the count. */
static int wait_for(struct ctx *c, struct rec *rec, int n, int ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c->mu);
	while (rec->n < n && pthread_cond_timedwait(&c->cv, &c->mu, &dl) == 0)
		;
	int got = rec->n;
	pthread_mutex_unlock(&c->mu);
	return got;
}

/* Waits for at least n results in rec (deadline ms); on a shortfall stops the
 * engine first, so that no result arrives into this test's stack once it has
 * failed, and fails naming what was missing. */
#define EXPECT_RESULTS(e, c, rec, n, ms)                                                           \
	do {                                                                                       \
		int got_ = wait_for((c), (rec), (n), (ms));                                        \
		if (got_ < (n)) {                                                                  \
			pd_scrape_engine_destroy(e);                                               \
			fail_msg("%d results within %d ms, want %d (line %d)", got_, (ms), (n),    \
				 __LINE__);                                                        \
		}                                                                                  \
	} while (0)

static uint8_t *profile;
static size_t profile_len;

static struct target_server *start_server(unsigned slow_ms)
{
	struct target_server *s = target_server_start(profile, profile_len, slow_ms);
	assert_non_null(s);
	return s;
}

static void url_of(char *buf, size_t n, struct target_server *s, const char *path)
{
	snprintf(buf, n, "http://127.0.0.1:%u%s", target_server_port(s), path);
}

static void test_ticks_and_bodies(void **state)
{
	struct target_server *s = start_server(0);
	struct ctx c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, profile, profile_len, 0, 0};
	struct pd_scrape_engine *e;
	struct pd_err err = {0};
	struct rec rec = {0};
	char url[128];
	uint64_t id;
	assert_int_equal(pd_scrape_engine_create(&e, 2, on_result, &c, &err), 0);
	url_of(url, sizeof(url), s, "/ok");
	struct pd_scrape_spec spec = {url, 200, 1000, 0, 12345, NULL};
	assert_int_equal(pd_scrape_loop_add(e, &spec, &rec, &id, &err), 0);
	EXPECT_RESULTS(e, &c, &rec, 4, 5000);
	pd_scrape_engine_destroy(e);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rec.error[i], 0);
		assert_true(rec.body_ok[i]);
		/* on the loop's own tick: t mod interval == offset */
		assert_int_equal(rec.sched[i] % 200, pd_scrape_offset(12345, 200));
		if (i)
			assert_int_equal(rec.sched[i] - rec.sched[i - 1], 200);
	}
	target_server_stop(s);
}

static void expect_failure(struct target_server *s, const char *path, int64_t timeout, size_t limit,
			   const struct pd_http_client_config *client, int want_error,
			   const char *want_msg)
{
	struct ctx c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, profile, profile_len, 0, 0};
	struct pd_scrape_engine *e;
	struct pd_err err = {0};
	struct rec rec = {0};
	char url[128];
	uint64_t id;
	assert_int_equal(pd_scrape_engine_create(&e, 1, on_result, &c, &err), 0);
	if (s)
		url_of(url, sizeof(url), s, path);
	else
		snprintf(url, sizeof(url), "http://127.0.0.1:1%s", path); /* nothing listens */
	struct pd_scrape_spec spec = {url, 100, timeout, limit, 1, client};
	assert_int_equal(pd_scrape_loop_add(e, &spec, &rec, &id, &err), 0);
	EXPECT_RESULTS(e, &c, &rec, 1, 10000);
	pd_scrape_engine_destroy(e);
	if (rec.error[0] != want_error || !strstr(rec.msg[0], want_msg))
		fail_msg("%s: got error %d \"%s\", want %d \"%s\"", path, rec.error[0], rec.msg[0], want_error,
			 want_msg);
}

static void test_failures(void **state)
{
	struct target_server *s = start_server(3000);
	expect_failure(s, "/500", 1000, 0, NULL, PD_EIO, "HTTP status 500");
	expect_failure(s, "/nope", 1000, 0, NULL, PD_EIO, "HTTP status 404");
	expect_failure(s, "/endless", 5000, 1 << 20, NULL, PD_ETOOBIG, "body size limit exceeded");
	/* no limit configured: the default one */
	expect_failure(s, "/endless", 10000, 0, NULL, PD_ETOOBIG, "body size limit exceeded (limit 67108864 bytes)");
	/* a Content-Encoding is undone under the limit, whatever the limit of the raw body */
	expect_failure(s, "/encoded-bomb", 5000, 100 << 10, NULL, PD_ETOOBIG,
		       "body size limit exceeded (limit 102400 bytes) after Content-Encoding gzip");
	expect_failure(s, "/brotli", 1000, 0, NULL, PD_EINVAL, "unsupported Content-Encoding \"br\"");
	expect_failure(s, "/slow", 300, 0, NULL, PD_EIO, "imed out");
	expect_failure(s, "/empty", 1000, 0, NULL, PD_EINVAL, "empty response body");
	expect_failure(s, "/auth", 1000, 0, NULL, PD_EIO, "HTTP status 401");
	expect_failure(NULL, "/ok", 1000, 0, NULL, PD_EIO, "onnect");
	struct pd_http_client_config bearer = {0};
	bearer.authorization_credentials = "secret";
	bearer.follow_redirects = 1;
	expect_failure(s, "/auth", 1000, 0, &bearer, 0, "");
	target_server_stop(s);
}

/* A body with Content-Encoding gzip or deflate arrives decoded. */
static void test_content_encoding(void **state)
{
	struct target_server *s = start_server(0);
	const char *paths[] = {"/encoded", "/deflate"};
	for (int k = 0; k < 2; k++) {
		struct ctx c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, profile, profile_len, 0, 0};
		struct pd_scrape_engine *e;
		struct pd_err err = {0};
		struct rec rec = {0};
		char url[128];
		uint64_t id;
		assert_int_equal(pd_scrape_engine_create(&e, 1, on_result, &c, &err), 0);
		url_of(url, sizeof(url), s, paths[k]);
		struct pd_scrape_spec spec = {url, 100, 1000, profile_len, 3, NULL};
		assert_int_equal(pd_scrape_loop_add(e, &spec, &rec, &id, &err), 0);
		EXPECT_RESULTS(e, &c, &rec, 1, 10000);
		pd_scrape_engine_destroy(e);
		if (rec.error[0] || !rec.body_ok[0])
			fail_msg("%s: error %d \"%s\", %zu bytes", paths[k], rec.error[0], rec.msg[0], rec.len[0]);
	}
	assert_true(target_server_hits(s, "/encoded") >= 1);
	target_server_stop(s);
}

/* A target that hangs does not delay a healthy one: the healthy loop gets eight
 * results while the hanging scrape (2 minutes, cut short when the server stops)
 * has none. Nothing here depends on how fast the machine is. */
static void test_slow_does_not_stall(void **state)
{
	struct target_server *s = start_server(120000);
	struct ctx c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, profile, profile_len, 0, 0};
	struct pd_scrape_engine *e;
	struct pd_err err = {0};
	struct rec fast = {0}, slow = {0};
	char u1[128], u2[128];
	uint64_t id;
	assert_int_equal(pd_scrape_engine_create(&e, 2, on_result, &c, &err), 0);
	url_of(u1, sizeof(u1), s, "/ok");
	url_of(u2, sizeof(u2), s, "/slow");
	struct pd_scrape_spec a = {u1, 100, 1000, 0, 7, NULL}, b = {u2, 100, 120000, 0, 7, NULL};
	assert_int_equal(pd_scrape_loop_add(e, &b, &slow, &id, &err), 0);
	assert_int_equal(pd_scrape_loop_add(e, &a, &fast, &id, &err), 0);
	EXPECT_RESULTS(e, &c, &fast, 8, 60000);
	pthread_mutex_lock(&c.mu);
	int slow_done = slow.n;
	pthread_mutex_unlock(&c.mu);
	assert_int_equal(slow_done, 0);
	target_server_stop(s); /* the hanging request answers now */
	pd_scrape_engine_destroy(e);
	for (int i = 1; i < 8; i++) { /* on the loop's grid, in order */
		assert_int_equal(fast.sched[i] % 100, fast.sched[0] % 100);
		assert_true(fast.sched[i] > fast.sched[i - 1]);
	}
}

static void test_remove(void **state)
{
	struct target_server *s = start_server(0);
	struct ctx c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, profile, profile_len, 0, 0};
	struct pd_scrape_engine *e;
	struct pd_err err = {0};
	struct rec rec = {0};
	char url[128];
	uint64_t id;
	assert_int_equal(pd_scrape_engine_create(&e, 2, on_result, &c, &err), 0);
	url_of(url, sizeof(url), s, "/ok");
	struct pd_scrape_spec spec = {url, 50, 1000, 0, 3, NULL};
	assert_int_equal(pd_scrape_loop_add(e, &spec, &rec, &id, &err), 0);
	EXPECT_RESULTS(e, &c, &rec, 3, 5000);
	pd_scrape_loop_remove(e, id);
	pthread_mutex_lock(&c.mu);
	int n = rec.n;
	pthread_mutex_unlock(&c.mu);
	struct timespec ts = {0, 300 * 1000000L};
	nanosleep(&ts, NULL);
	pthread_mutex_lock(&c.mu);
	assert_int_equal(rec.n, n); /* nothing after remove returned */
	pthread_mutex_unlock(&c.mu);
	unsigned hits = target_server_hits(s, "/ok");
	nanosleep(&ts, NULL);
	assert_int_equal(target_server_hits(s, "/ok"), hits);
	pd_scrape_engine_destroy(e);
	target_server_stop(s);
}

/* Many loops with different intervals: each fires on its own grid (the engine keeps
 * them in a heap by next tick), and the id of a removed loop, whose slot a new loop
 * has taken, removes nothing. */
static void test_many_loops_and_stale_ids(void **state)
{
	enum { N = 48 };
	struct target_server *s = start_server(0);
	struct ctx c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, profile, profile_len, 0, 0};
	struct pd_scrape_engine *e;
	struct pd_err err = {0};
	static struct rec recs[N], fresh[N / 2];
	memset(recs, 0, sizeof(recs));
	memset(fresh, 0, sizeof(fresh));
	uint64_t ids[N], fresh_ids[N / 2];
	int64_t interval[N];
	char url[128];
	assert_int_equal(pd_scrape_engine_create(&e, 2, on_result, &c, &err), 0);
	url_of(url, sizeof(url), s, "/ok");
	for (int i = 0; i < N; i++) {
		interval[i] = 60 + 10 * (i % 7);
		struct pd_scrape_spec spec = {url, interval[i], 2000, 0, (uint64_t)i * 7919, NULL};
		assert_int_equal(pd_scrape_loop_add(e, &spec, &recs[i], &ids[i], &err), 0);
		for (int k = 0; k < i; k++)
			assert_true(ids[k] != ids[i]);
	}
	for (int i = 0; i < N; i++) {
		EXPECT_RESULTS(e, &c, &recs[i], 3, 20000);
		pthread_mutex_lock(&c.mu);
		int64_t off = pd_scrape_offset((uint64_t)i * 7919, interval[i]);
		for (int k = 0; k < recs[i].n; k++) {
			assert_int_equal(recs[i].error[k], 0);
			assert_int_equal(recs[i].sched[k] % interval[i], off);
			if (k > 0)
				assert_true(recs[i].sched[k] > recs[i].sched[k - 1]);
		}
		pthread_mutex_unlock(&c.mu);
	}
	/* remove every other loop; new loops take their slots */
	for (int i = 0; i < N; i += 2)
		pd_scrape_loop_remove(e, ids[i]);
	for (int i = 0; i < N / 2; i++) {
		struct pd_scrape_spec spec = {url, 50, 2000, 0, (uint64_t)i, NULL};
		assert_int_equal(pd_scrape_loop_add(e, &spec, &fresh[i], &fresh_ids[i], &err), 0);
		for (int k = 0; k < N; k++)
			assert_true(fresh_ids[i] != ids[k]);
	}
	/* stale ids again: they must not reach the loops now in those slots */
	for (int i = 0; i < N; i += 2)
		pd_scrape_loop_remove(e, ids[i]);
	pd_scrape_loop_remove(e, 0);
	pd_scrape_loop_remove(e, UINT64_MAX);
	for (int i = 0; i < N / 2; i++)
		EXPECT_RESULTS(e, &c, &fresh[i], 3, 20000);
	/* the loops not removed go on too */
	for (int i = 1; i < N; i += 2) {
		pthread_mutex_lock(&c.mu);
		int n = recs[i].n;
		pthread_mutex_unlock(&c.mu);
		EXPECT_RESULTS(e, &c, &recs[i], n + 1, 20000);
	}
	/* and the removed ones stopped: at most one result was in flight at removal */
	pthread_mutex_lock(&c.mu);
	int counts[N];
	for (int i = 0; i < N; i += 2)
		counts[i] = recs[i].n;
	pthread_mutex_unlock(&c.mu);
	for (int i = 1; i < N; i += 2) {
		pthread_mutex_lock(&c.mu);
		int n = recs[i].n;
		pthread_mutex_unlock(&c.mu);
		EXPECT_RESULTS(e, &c, &recs[i], n + 1, 20000);
	}
	pthread_mutex_lock(&c.mu);
	for (int i = 0; i < N; i += 2)
		assert_int_equal(recs[i].n, counts[i]);
	pthread_mutex_unlock(&c.mu);
	pd_scrape_engine_destroy(e);
	target_server_stop(s);
}

struct slow_ctx {
	pthread_mutex_t mu;
	int n;
	int64_t sched[16];
};

static void slow_result(void *ectx, void *lctx, const struct pd_scrape_result *r)
{
	struct slow_ctx *c = ectx;
	(void)lctx;
	pthread_mutex_lock(&c->mu);
	if (c->n < 16)
		c->sched[c->n++] = r->scheduled_ms;
	pthread_mutex_unlock(&c->mu);
	struct timespec ts = {0, 350 * 1000000L}; /* storage slower than the interval */
	nanosleep(&ts, NULL);
}

/* A loop waits for its previous result to be stored before it scrapes again, so a
 * slow store slows that loop down instead of piling results up. */
static void test_loop_waits_for_its_result(void **state)
{
	struct target_server *s = start_server(0);
	struct slow_ctx c = {PTHREAD_MUTEX_INITIALIZER, 0, {0}};
	struct pd_scrape_engine *e;
	struct pd_err err = {0};
	char url[128];
	uint64_t id;
	assert_int_equal(pd_scrape_engine_create(&e, 2, slow_result, &c, &err), 0);
	url_of(url, sizeof(url), s, "/ok");
	struct pd_scrape_spec spec = {url, 100, 1000, 0, 5, NULL};
	assert_int_equal(pd_scrape_loop_add(e, &spec, NULL, &id, &err), 0);
	struct timespec ts = {1, 500 * 1000000L};
	nanosleep(&ts, NULL);
	unsigned hits = target_server_hits(s, "/ok");
	pd_scrape_engine_destroy(e);
	/* ~15 ticks passed, but each scrape waited for the 350 ms store of the last */
	assert_true(hits >= 3 && hits <= 6);
	for (int i = 1; i < c.n; i++) {
		assert_true(c.sched[i] - c.sched[i - 1] >= 400);
		assert_int_equal((c.sched[i] - c.sched[i - 1]) % 100, 0);
	}
	target_server_stop(s);
}

static void test_offsets(void **state)
{
	/* offsets spread over the interval and stay inside it */
	int buckets[10] = {0};
	for (uint64_t seed = 1; seed <= 10000; seed++) {
		uint64_t h = pd_hash_u64(0, seed);
		int64_t o = pd_scrape_offset(h, 15000);
		assert_true(o >= 0 && o < 15000);
		buckets[o / 1500]++;
	}
	for (int i = 0; i < 10; i++)
		assert_true(buckets[i] > 800 && buckets[i] < 1200);
}

int main(void)
{
	struct pd_err err = {0};
	if (pd_file_read(PD_TESTDATA "/profiles/goapp/heap.pb.gz", 1 << 20, &profile, &profile_len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ticks_and_bodies),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_content_encoding),
		cmocka_unit_test(test_slow_does_not_stall),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_many_loops_and_stale_ids),
		cmocka_unit_test(test_loop_waits_for_its_result),
		cmocka_unit_test(test_offsets),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(profile);
	return rc;
}
