/* test_scrape_manager.c: targets from discovered groups to stored profiles:
 * Prometheus's target labels (job, instance, __name__), relabeling that drops
 * targets or rewrites paths, failing profile types marked down with their reason
 * while healthy ones store, reloads that keep unchanged loops running (with the
 * new discovered labels), large target sets dropped, target_limit, and the
 * store's series limit as a target's error. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/pprof.h"
#include "profd/relabel.h"
#include "profd/scrape.h"
#include "profd/tsdb.h"
#include "target_server.h"

static uint8_t *profile;
static size_t profile_len;

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static int eq(const void *ctx, const char *v)
{
	return strcmp(ctx, v) == 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Waits until the store holds n samples of heap{job="test"}; returns the count. */
static size_t wait_samples(struct pd_tsdb *db, const char *name, size_t n, int ms)
{
	struct pd_storage_matcher m[2] = {{"__name__", eq, name}, {"job", eq, "test"}};
	size_t got = 0;
	for (int waited = 0; waited <= ms; waited += 50) {
		struct pd_storage_result *r;
		struct pd_err err = {0};
		if (pd_tsdb_select(db, m, 2, INT64_MIN, INT64_MAX, 0, &r, &err) == 0) {
			got = r->nseries ? r->series[0].nts : 0;
			pd_storage_result_destroy(r);
		}
		if (got >= n)
			break;
		sleep_ms(50);
	}
	return got;
}

static void test_targets_and_storage(void **state)
{
	char dir[] = "/tmp/pd_test_scrapemgr_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct target_server *srv = target_server_start(profile, profile_len, 0);
	assert_non_null(srv);
	struct pd_err err = {0};
	struct pd_tsdb *db;
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.wal_sync = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_scrape_manager *m;
	struct pd_scrape_manager_opts mo = {.workers = 2, .max_decompressed = 64u << 20};
	assert_int_equal(pd_scrape_manager_create(&m, pd_tsdb_storage(db), &mo, &err), 0);

	/* relabeling drops targets labelled drop=yes */
	const char *src[] = {"drop"};
	struct pd_relabel_rule_config rc = {src, 1, NULL, NULL, "yes", 0, NULL, PD_RELABEL_DROP, 0};
	struct pd_relabel_rules *rules;
	assert_int_equal(pd_relabel_rules_build(&rules, &rc, 1, &err), 0);
	struct pd_scrape_profile_type types[] = {{"heap", "/ok", 0},      {"goroutine", "/500", 0},
						 {"profile", "/ok", 5},   {"garbage", "/garbage", 0},
						 {"bomb", "/bomb", 0},    {"empty", "/empty", 0}};
	struct pd_scrape_pool_settings ps = {0};
	ps.job_name = "test";
	ps.scheme = "http";
	ps.interval_ms = 100;
	ps.timeout_ms = 1000;
	ps.relabel = rules;
	ps.types = types;
	ps.ntypes = 6;
	assert_int_equal(pd_scrape_manager_set_pools(m, &ps, 1, &err), 0);

	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", target_server_port(srv));
	struct pd_labels *t1, *t2, *gl;
	assert_int_equal(pd_labels_from_strings(&t1, &err, "__address__", addr, NULL), 0);
	assert_int_equal(pd_labels_from_strings(&t2, &err, "__address__", "127.0.0.1:1", "drop", "yes", NULL), 0);
	assert_int_equal(pd_labels_from_strings(&gl, &err, "env", "ci", "__meta_x", "y", NULL), 0);
	struct pd_labels *targets[] = {t1, t2};
	struct pd_target_group g = {"static:0", targets, 2, gl};
	pd_scrape_manager_sync(m, "test", &g, 1);

	assert_true(wait_samples(db, "heap", 3, 60000) >= 3);
	assert_true(wait_samples(db, "profile", 2, 60000) >= 2);

	/* the stored series: __name__, env from the group, instance, job; no __meta_ */
	struct pd_storage_matcher mh[1] = {{"__name__", eq, "heap"}};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(db, mh, 1, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 1);
	assert_int_equal(r->series[0].nlabels, 4);
	assert_string_equal(r->series[0].labels[0].name, "__name__");
	assert_string_equal(r->series[0].labels[1].name, "env");
	assert_string_equal(r->series[0].labels[2].name, "instance");
	assert_string_equal(r->series[0].labels[2].value, addr);
	assert_string_equal(r->series[0].labels[3].value, "test");
	/* a stored profile is, field for field, what the target served */
	uint8_t *got;
	size_t glen;
	assert_int_equal(pd_tsdb_read(db, r->series[0].labels, 4, r->series[0].ts[0], &got, &glen, &err), 0);
	struct pd_pprof_profile *pg, *pw;
	char why[256];
	assert_int_equal(pd_pprof_decode(&pg, got, glen, NULL, &err), 0);
	assert_int_equal(pd_pprof_decode(&pw, profile, profile_len, NULL, &err), 0);
	if (pd_pprof_compare(pw, pg, why, sizeof(why)))
		fail_msg("the stored profile differs from the served one: %s", why);
	pd_pprof_destroy(pg);
	pd_pprof_destroy(pw);
	free(got);
	/* scrapes land on ticks 100 ms apart (a loaded machine may skip a tick, whose
	 * scrape then waits for the next one: never off the grid) */
	int64_t gap = r->series[0].ts[1] - r->series[0].ts[0];
	assert_true(gap >= 100);
	assert_int_equal(gap % 100, 0);
	pd_storage_result_destroy(r);

	/* statuses: heap and profile up, goroutine down with its reason, one dropped */
	struct pd_scrape_target_status *st;
	size_t n;
	/* every active target has been scraped once (the bomb takes a while to inflate) */
	for (int waited = 0;; waited += 100) {
		assert_int_equal(pd_scrape_manager_targets(m, 0, &st, &n, &err), 0);
		size_t unknown = 0;
		for (size_t i = 0; i < n; i++)
			unknown += st[i].health == PD_SCRAPE_UNKNOWN;
		pd_scrape_target_status_free(st, n);
		if (!unknown || waited > 60000)
			break;
		sleep_ms(100);
	}
	assert_int_equal(pd_scrape_manager_targets(m, 1, &st, &n, &err), 0);
	assert_int_equal(n, 12);
	int up = 0, down = 0, dropped = 0, bomb_timed_out = 0;
	for (size_t i = 0; i < n; i++) {
		if (!st[i].labels) {
			dropped++;
			continue;
		}
		const char *want = strcmp(st[i].profile_type, "goroutine") == 0 ? "HTTP status 500"
				   : strcmp(st[i].profile_type, "garbage") == 0 ? "not a valid profile: malformed"
				   : strcmp(st[i].profile_type, "bomb") == 0
				       ? "profile refused for the decompression_ratio limit "
				         "(--storage.tsdb.max-profile-gzip-ratio): gzip: decompressed size "
				         "exceeds 100 times the compressed size"
				   : strcmp(st[i].profile_type, "empty") == 0   ? "empty response body"
										: NULL;
		if (want) {
			assert_int_equal(st[i].health, PD_SCRAPE_DOWN);
			/* the bomb stops at the limit, or at the timeout on a machine too
			 * busy to inflate 64 MiB within 1 s */
			int bomb_timeout = strcmp(st[i].profile_type, "bomb") == 0 &&
					   strstr(st[i].last_error, "scrape_timeout of 1s exceeded while inflating");
			if (!strstr(st[i].last_error, want) && !bomb_timeout)
				fail_msg("%s: \"%s\" lacks \"%s\"", st[i].profile_type, st[i].last_error, want);
			bomb_timed_out |= bomb_timeout;
			down++;
		} else {
			assert_int_equal(st[i].health, PD_SCRAPE_UP);
			up++;
		}
		if (strcmp(st[i].profile_type, "profile") == 0)
			assert_non_null(strstr(st[i].url, "/ok?seconds=5"));
	}
	assert_int_equal(up, 2);
	assert_int_equal(down, 4);
	assert_int_equal(dropped, 6);
	/* nothing was stored for the failing types */
	struct pd_storage_matcher mg[1] = {{"__name__", eq, "garbage"}};
	assert_int_equal(pd_tsdb_select(db, mg, 1, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 0);
	pd_storage_result_destroy(r);
	pd_scrape_target_status_free(st, n);

	/* a reload with the same settings keeps the loops: no gap in the series */
	unsigned before = target_server_hits(srv, "/ok");
	assert_int_equal(pd_scrape_manager_set_pools(m, &ps, 1, &err), 0);
	/* waited for with a deadline: a loaded machine may take seconds per scrape */
	for (int waited = 0; target_server_hits(srv, "/ok") <= before && waited < 60000; waited += 50)
		sleep_ms(50);
	assert_true(target_server_hits(srv, "/ok") > before);
	size_t cnt = wait_samples(db, "heap", 0, 0);
	assert_true(wait_samples(db, "heap", cnt + 1, 60000) > cnt);
	/* the pool goes away: scraping stops. Two requests (heap and profile, both
	 * on /ok) may have been sent already and reach the server later; 1 s is
	 * ten ticks of the loops that should be gone */
	assert_int_equal(pd_scrape_manager_set_pools(m, NULL, 0, &err), 0);
	unsigned hits = target_server_hits(srv, "/ok");
	sleep_ms(1000);
	assert_true(target_server_hits(srv, "/ok") <= hits + 2);

	struct pd_scrape_stats ss;
	pd_scrape_manager_stats(m, &ss);
	assert_true(ss.scrapes_ok >= 5);
	assert_true(ss.scrapes_failed >= 1);
	/* the bomb's refusals are counted by their limit */
	if (!bomb_timed_out)
		assert_true(ss.refused[PD_PPROF_LIMIT_RATIO] >= 1);
	assert_int_equal(ss.refused[PD_PPROF_LIMIT_MEMORY], 0);
	pd_scrape_manager_destroy(m);
	pd_relabel_rules_destroy(rules);
	pd_labels_destroy(t1);
	pd_labels_destroy(t2);
	pd_labels_destroy(gl);
	pd_tsdb_close(db);
	target_server_stop(srv);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Targets that come out the same (one address twice in a group, and again in another
 * group) are one target with one loop, as in Prometheus; a reload keeps it. */
static void test_duplicate_targets(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_test_scrapemgr_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct target_server *srv = target_server_start(profile, profile_len, 0);
	assert_non_null(srv);
	struct pd_err err = {0};
	struct pd_tsdb *db;
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.wal_sync = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_scrape_manager *m;
	struct pd_scrape_manager_opts mo = {.workers = 2, .max_decompressed = 64u << 20};
	assert_int_equal(pd_scrape_manager_create(&m, pd_tsdb_storage(db), &mo, &err), 0);
	struct pd_scrape_profile_type types[] = {{"heap", "/ok", 0}};
	struct pd_scrape_pool_settings ps = {0};
	ps.job_name = "test";
	ps.scheme = "http";
	ps.interval_ms = 60000;
	ps.timeout_ms = 1000;
	ps.types = types;
	ps.ntypes = 1;
	assert_int_equal(pd_scrape_manager_set_pools(m, &ps, 1, &err), 0);

	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", target_server_port(srv));
	struct pd_labels *t1, *t2, *t3;
	assert_int_equal(pd_labels_from_strings(&t1, &err, "__address__", addr, NULL), 0);
	assert_int_equal(pd_labels_from_strings(&t2, &err, "__address__", addr, "__meta_x", "other", NULL), 0);
	assert_int_equal(pd_labels_from_strings(&t3, &err, "__address__", "127.0.0.1:1", NULL), 0);
	struct pd_labels *a[] = {t1, t1, t3}, *b[] = {t2};
	struct pd_target_group g[] = {{"static:0", a, 3, NULL}, {"static:1", b, 1, NULL}};
	struct pd_scrape_target_status *st;
	size_t n;
	for (int round = 0; round < 2; round++) {
		pd_scrape_manager_sync(m, "test", g, 2);
		assert_int_equal(pd_scrape_manager_targets(m, 0, &st, &n, &err), 0);
		/* addr once, 127.0.0.1:1 once */
		assert_int_equal(n, 2);
		size_t mine = 0;
		for (size_t i = 0; i < n; i++)
			mine += strstr(st[i].url, addr) != NULL;
		assert_int_equal(mine, 1);
		pd_scrape_target_status_free(st, n);
	}
	struct pd_scrape_stats ss;
	pd_scrape_manager_stats(m, &ss);
	assert_int_equal(ss.active_targets, 2);

	pd_scrape_manager_destroy(m);
	pd_labels_destroy(t1);
	pd_labels_destroy(t2);
	pd_labels_destroy(t3);
	pd_tsdb_close(db);
	target_server_stop(srv);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A target whose discovered labels change in a way relabeling drops (a pod's
 * readiness) keeps its loop and status and shows the new discovered labels, as
 * Prometheus's SetDiscoveredLabels does. */
static void test_discovered_labels_refreshed(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_test_scrapemgr_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct target_server *srv = target_server_start(profile, profile_len, 0);
	assert_non_null(srv);
	struct pd_err err = {0};
	struct pd_tsdb *db;
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.wal_sync = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_scrape_manager *m;
	struct pd_scrape_manager_opts mo = {.workers = 1, .max_decompressed = 64u << 20};
	assert_int_equal(pd_scrape_manager_create(&m, pd_tsdb_storage(db), &mo, &err), 0);
	struct pd_scrape_profile_type types[] = {{"heap", "/ok", 0}};
	struct pd_scrape_pool_settings ps = {0};
	ps.job_name = "test";
	ps.scheme = "http";
	ps.interval_ms = 100;
	ps.timeout_ms = 1000;
	ps.types = types;
	ps.ntypes = 1;
	assert_int_equal(pd_scrape_manager_set_pools(m, &ps, 1, &err), 0);
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", target_server_port(srv));
	struct pd_labels *ready, *unready;
	assert_int_equal(pd_labels_from_strings(&ready, &err, "__address__", addr,
						"__meta_kubernetes_pod_ready", "true", NULL),
			 0);
	assert_int_equal(pd_labels_from_strings(&unready, &err, "__address__", addr,
						"__meta_kubernetes_pod_ready", "false", NULL),
			 0);
	struct pd_labels *a[] = {ready}, *b[] = {unready};
	struct pd_target_group g1 = {"kubernetes/pod/default/app", a, 1, NULL};
	struct pd_target_group g2 = {"kubernetes/pod/default/app", b, 1, NULL};
	pd_scrape_manager_sync(m, "test", &g1, 1);
	struct pd_scrape_target_status *st = NULL;
	size_t n = 0;
	/* waited for with a deadline: the first scrape of the loop */
	for (int waited = 0; waited < 60000; waited += 50) {
		assert_int_equal(pd_scrape_manager_targets(m, 0, &st, &n, &err), 0);
		assert_int_equal(n, 1);
		if (st[0].last_scrape_ms && st[0].health == PD_SCRAPE_UP)
			break;
		pd_scrape_target_status_free(st, n);
		st = NULL;
		sleep_ms(50);
	}
	assert_non_null(st);
	assert_string_equal(pd_labels_get(st[0].discovered, "__meta_kubernetes_pod_ready"), "true");
	pd_scrape_target_status_free(st, n);

	pd_scrape_manager_sync(m, "test", &g2, 1);
	assert_int_equal(pd_scrape_manager_targets(m, 0, &st, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(pd_labels_get(st[0].discovered, "__meta_kubernetes_pod_ready"), "false");
	/* the same loop: its status is kept (a new one would not have scraped yet) */
	assert_true(st[0].last_scrape_ms > 0);
	assert_int_equal(st[0].health, PD_SCRAPE_UP);
	pd_scrape_target_status_free(st, n);
	struct pd_scrape_stats ss;
	pd_scrape_manager_stats(m, &ss);
	assert_int_equal(ss.active_targets, 1);

	pd_scrape_manager_destroy(m);
	pd_labels_destroy(ready);
	pd_labels_destroy(unready);
	pd_tsdb_close(db);
	target_server_stop(srv);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A large target set (50,000) comes and goes within a deadline far above what
 * linear work takes even under sanitizers on a loaded machine (a loop per
 * target, removed in batches under one engine lock), and nothing of it is left. */
static void test_large_target_set_dropped(void **state)
{
	(void)state;
	enum { N = 50000, PER_GROUP = 1000 };
	char dir[] = "/tmp/pd_test_scrapemgr_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct pd_err err = {0};
	struct pd_tsdb *db;
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.wal_sync = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_scrape_manager *m;
	struct pd_scrape_manager_opts mo = {.workers = 1};
	assert_int_equal(pd_scrape_manager_create(&m, pd_tsdb_storage(db), &mo, &err), 0);
	struct pd_scrape_profile_type types[] = {{"heap", "/debug/pprof/heap", 0}};
	struct pd_scrape_pool_settings ps = {0};
	ps.job_name = "big";
	ps.scheme = "http";
	ps.interval_ms = 3600 * 1000; /* few scrapes (of a closed port) meanwhile */
	ps.timeout_ms = 1000;
	ps.types = types;
	ps.ntypes = 1;
	assert_int_equal(pd_scrape_manager_set_pools(m, &ps, 1, &err), 0);
	struct pd_labels **t = calloc(N, sizeof(*t));
	struct pd_target_group *g = calloc(N / PER_GROUP, sizeof(*g));
	assert_non_null(t);
	assert_non_null(g);
	for (int i = 0; i < N; i++) {
		char addr[64];
		snprintf(addr, sizeof(addr), "127.%d.%d.%d:1", 1 + i / 65536, (i / 256) % 256, i % 256);
		assert_int_equal(pd_labels_from_strings(&t[i], &err, "__address__", addr, NULL), 0);
	}
	for (int k = 0; k < N / PER_GROUP; k++)
		g[k] = (struct pd_target_group){"file:big.json", t + k * PER_GROUP, PER_GROUP, NULL};
	pd_scrape_manager_sync(m, "big", g, N / PER_GROUP);
	struct pd_scrape_stats ss;
	pd_scrape_manager_stats(m, &ss);
	assert_int_equal(ss.active_targets, N);

	double t0 = mono_s();
	pd_scrape_manager_sync(m, "big", NULL, 0);
	double took = mono_s() - t0;
	pd_scrape_manager_stats(m, &ss);
	assert_int_equal(ss.active_targets, 0);
	struct pd_scrape_target_status *st;
	size_t n;
	assert_int_equal(pd_scrape_manager_targets(m, 1, &st, &n, &err), 0);
	assert_int_equal(n, 0);
	pd_scrape_target_status_free(st, n);
	print_message("dropped %d targets in %.2f s\n", N, took);
	if (took > 30)
		fail_msg("dropping %d targets took %.1f s", N, took);

	/* and a reload removing the pool, with the set back, as fast */
	pd_scrape_manager_sync(m, "big", g, N / PER_GROUP);
	t0 = mono_s();
	assert_int_equal(pd_scrape_manager_set_pools(m, NULL, 0, &err), 0);
	took = mono_s() - t0;
	pd_scrape_manager_stats(m, &ss);
	assert_int_equal(ss.active_targets, 0);
	print_message("removed a pool of %d targets in %.2f s\n", N, took);
	if (took > 30)
		fail_msg("removing a pool of %d targets took %.1f s", N, took);

	pd_scrape_manager_destroy(m);
	for (int i = 0; i < N; i++)
		pd_labels_destroy(t[i]);
	free(t);
	free(g);
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* More targets than target_limit: none of the pool is scraped, each is down with
 * Prometheus's message, and the pool's exceeding is counted; a higher limit
 * brings the loops back. */
static void test_target_limit(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_test_scrapemgr_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct pd_err err = {0};
	struct pd_tsdb *db;
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.wal_sync = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_scrape_manager *m;
	struct pd_scrape_manager_opts mo = {.workers = 1};
	assert_int_equal(pd_scrape_manager_create(&m, pd_tsdb_storage(db), &mo, &err), 0);
	struct pd_scrape_profile_type types[] = {{"heap", "/debug/pprof/heap", 0}};
	struct pd_scrape_pool_settings ps = {0};
	ps.job_name = "test";
	ps.scheme = "http";
	ps.interval_ms = 3600 * 1000;
	ps.timeout_ms = 1000;
	ps.types = types;
	ps.ntypes = 1;
	ps.target_limit = 2;
	assert_int_equal(pd_scrape_manager_set_pools(m, &ps, 1, &err), 0);
	struct pd_labels *t[3];
	for (int i = 0; i < 3; i++) {
		char addr[32];
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", 1 + i);
		assert_int_equal(pd_labels_from_strings(&t[i], &err, "__address__", addr, NULL), 0);
	}
	struct pd_target_group g = {"static:0", t, 3, NULL};
	pd_scrape_manager_sync(m, "test", &g, 1);
	struct pd_scrape_target_status *st;
	size_t n;
	assert_int_equal(pd_scrape_manager_targets(m, 0, &st, &n, &err), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(st[i].health, PD_SCRAPE_DOWN);
		assert_string_equal(st[i].last_error,
				    "target_limit exceeded (number of targets: 3, limit: 2)");
	}
	pd_scrape_target_status_free(st, n);
	struct pd_scrape_stats ss;
	pd_scrape_manager_stats(m, &ss);
	assert_int_equal(ss.target_limit_exceeded, 1);
	assert_int_equal(ss.active_targets, 3);

	/* two targets fit */
	g.ntargets = 2;
	pd_scrape_manager_sync(m, "test", &g, 1);
	assert_int_equal(pd_scrape_manager_targets(m, 0, &st, &n, &err), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++)
		assert_null(strstr(st[i].last_error, "target_limit"));
	pd_scrape_target_status_free(st, n);
	/* and a higher limit lets the three in */
	g.ntargets = 3;
	ps.target_limit = 3;
	assert_int_equal(pd_scrape_manager_set_pools(m, &ps, 1, &err), 0);
	pd_scrape_manager_sync(m, "test", &g, 1);
	assert_int_equal(pd_scrape_manager_targets(m, 0, &st, &n, &err), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		assert_null(strstr(st[i].last_error, "target_limit"));
	pd_scrape_target_status_free(st, n);
	pd_scrape_manager_stats(m, &ss);
	assert_int_equal(ss.target_limit_exceeded, 1);

	pd_scrape_manager_destroy(m);
	for (int i = 0; i < 3; i++)
		pd_labels_destroy(t[i]);
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The head's series limit seen from a scrape: of two targets (two profile types
 * of one address), the one whose series the head could not take is down with
 * the store's reason, the other stores. */
static void test_series_limit_last_error(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_test_scrapemgr_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct target_server *srv = target_server_start(profile, profile_len, 0);
	assert_non_null(srv);
	struct pd_err err = {0};
	struct pd_tsdb *db;
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.wal_sync = 1;
	o.max_series = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	struct pd_scrape_manager *m;
	struct pd_scrape_manager_opts mo = {.workers = 1, .max_decompressed = 64u << 20};
	assert_int_equal(pd_scrape_manager_create(&m, pd_tsdb_storage(db), &mo, &err), 0);
	struct pd_scrape_profile_type types[] = {{"heap", "/ok", 0}, {"allocs", "/ok", 0}};
	struct pd_scrape_pool_settings ps = {0};
	ps.job_name = "test";
	ps.scheme = "http";
	ps.interval_ms = 200;
	ps.timeout_ms = 1000;
	ps.types = types;
	ps.ntypes = 2;
	assert_int_equal(pd_scrape_manager_set_pools(m, &ps, 1, &err), 0);
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", target_server_port(srv));
	struct pd_labels *t1;
	assert_int_equal(pd_labels_from_strings(&t1, &err, "__address__", addr, NULL), 0);
	struct pd_labels *a[] = {t1};
	struct pd_target_group g = {"static:0", a, 1, NULL};
	pd_scrape_manager_sync(m, "test", &g, 1);
	struct pd_scrape_target_status *st = NULL;
	size_t n = 0, up = 0, down = 0;
	/* waited for with a deadline: both targets scraped */
	for (int waited = 0; waited < 60000; waited += 50) {
		assert_int_equal(pd_scrape_manager_targets(m, 0, &st, &n, &err), 0);
		assert_int_equal(n, 2);
		up = down = 0;
		for (size_t i = 0; i < n; i++) {
			up += st[i].health == PD_SCRAPE_UP;
			down += st[i].health == PD_SCRAPE_DOWN;
		}
		if (up + down == 2)
			break;
		pd_scrape_target_status_free(st, n);
		st = NULL;
		sleep_ms(50);
	}
	assert_non_null(st);
	assert_int_equal(up, 1);
	assert_int_equal(down, 1);
	for (size_t i = 0; i < n; i++)
		if (st[i].health == PD_SCRAPE_DOWN) {
			assert_non_null(strstr(st[i].last_error, "storing the profile failed: "));
			assert_non_null(strstr(st[i].last_error, "series limit reached"));
		}
	pd_scrape_target_status_free(st, n);
	struct pd_storage_stats ts;
	pd_tsdb_stats(db, &ts);
	assert_int_equal(ts.head_series, 1);
	assert_true(ts.head_series_limit_refused >= 1);

	pd_scrape_manager_destroy(m);
	pd_labels_destroy(t1);
	pd_tsdb_close(db);
	target_server_stop(srv);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	struct pd_err err = {0};
	if (pd_file_read(PD_TESTDATA "/profiles/goapp/heap.pb.gz", 1 << 20, &profile, &profile_len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_targets_and_storage),
		cmocka_unit_test(test_duplicate_targets),
		cmocka_unit_test(test_discovered_labels_refreshed),
		cmocka_unit_test(test_large_target_set_dropped),
		cmocka_unit_test(test_target_limit),
		cmocka_unit_test(test_series_limit_last_error),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(profile);
	return rc;
}
