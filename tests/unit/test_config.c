/* test_config.c: unit tests of pkg/config: Prometheus's duration and size syntax,
 * defaults and their inheritance from `global`, profiling_config merging, $VAR
 * expansion of external labels, go-yaml v2 scalar semantics, anchors and merge
 * keys, rendering with secrets hidden, and every file in testdata/config: the good
 * ones must load, each bad one must fail with the message its first line names
 * (`# expect: <substring>`) and a file:line:column position.
 *
 * Expected durations, sizes and messages follow prometheus/common model.ParseDuration,
 * alecthomas/units ParseBase2Bytes and Prometheus's config package. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "profd/config.h"

#define GOOD PD_TESTDATA "/config/good"
#define BAD PD_TESTDATA "/config/bad"

/* ---- helpers -------------------------------------------------------------- */

static struct pd_config *load_ok(const char *path)
{
	struct pd_config *cfg = NULL;
	struct pd_err err = {0};
	int rc = pd_config_load_file(path, &cfg, &err);
	if (rc)
		fail_msg("%s: %s", path, err.msg);
	assert_non_null(cfg);
	return cfg;
}

static struct pd_config *parse_ok(const char *text)
{
	struct pd_config *cfg = NULL;
	struct pd_err err = {0};
	int rc = pd_config_parse(text, strlen(text), "t.yml", &cfg, &err);
	if (rc)
		fail_msg("%s\n--- input:\n%s", err.msg, text);
	return cfg;
}

/* Parses text that must fail; returns the message (static). */
static const char *parse_err(const char *text)
{
	static struct pd_err err;
	struct pd_config *cfg = NULL;
	memset(&err, 0, sizeof(err));
	int rc = pd_config_parse(text, strlen(text), "t.yml", &cfg, &err);
	if (rc == 0)
		fail_msg("expected an error for:\n%s", text);
	assert_null(cfg);
	return err.msg;
}

static void assert_contains(const char *s, const char *want)
{
	if (!strstr(s, want))
		fail_msg("\"%s\" does not contain \"%s\"", s, want);
}

static const struct pd_profile_config *prof(const struct pd_scrape_config *sc, const char *name)
{
	const struct pd_profile_config *p = pd_scrape_config_profile(sc, name);
	if (!p)
		fail_msg("job %s has no profile type %s", sc->job_name, name);
	return p;
}

static char *render(const struct pd_config *cfg)
{
	struct pd_buf b;
	pd_buf_init(&b, 0);
	assert_int_equal(pd_config_render(cfg, &b), 0);
	assert_int_equal(pd_buf_append(&b, "", 1), 0);
	size_t len;
	return (char *)pd_buf_steal(&b, &len);
}

/* ---- durations and sizes -------------------------------------------------- */

static void test_duration_parse(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int64_t ms;
	} ok[] = {
	    {"0", 0},
	    {"0s", 0},
	    {"1s", 1000},
	    {"500ms", 500},
	    {"1m30s", 90000},
	    {"1h30m", 5400000},
	    {"2h0m", 7200000},
	    {"1d", 86400000},
	    {"1w", 604800000},
	    {"1y", 31536000000},
	    {"1y2w3d4h5m6s7ms",
	     31536000000 + 2 * 604800000 + 3 * 86400000 + 4 * 3600000 + 5 * 60000 + 6000 + 7},
	    {"90d", 90ll * 86400000},
	    {"0001s", 1000},
	    {"292y", 292ll * 31536000000},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ms = -1;
		struct pd_err err = {0};
		if (pd_config_parse_duration(ok[i].in, &ms, &err))
			fail_msg("%s: %s", ok[i].in, err.msg);
		if (ms != ok[i].ms)
			fail_msg("%s: got %lld want %lld", ok[i].in, (long long)ms,
			         (long long)ok[i].ms);
	}
	static const struct {
		const char *in, *msg;
	} bad[] = {
	    {"", "empty duration string"},
	    {"1x", "unknown unit \"x\" in duration \"1x\""},
	    {"1h1d", "not a valid duration string: \"1h1d\""},
	    {"1m1m", "not a valid duration string: \"1m1m\""},
	    {"-1s", "not a valid duration string: \"-1s\""},
	    {"10", "not a valid duration string: \"10\""},
	    {"s", "not a valid duration string: \"s\""},
	    {"1.5s", "unknown unit \".\" in duration \"1.5s\""},
	    {"1s ", "unknown unit \"s \" in duration \"1s \""},
	    {"300y", "duration out of range"},
	    {"99999999999999999999s", "not a valid duration string: \"99999999999999999999s\""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms;
		struct pd_err err = {0};
		if (pd_config_parse_duration(bad[i].in, &ms, &err) == 0)
			fail_msg("%s: expected an error", bad[i].in);
		assert_string_equal(err.msg, bad[i].msg);
	}
}

static void test_duration_format(void **state)
{
	(void)state;
	static const struct {
		int64_t ms;
		const char *out;
	} t[] = {
	    {0, "0s"},
	    {500, "500ms"},
	    {1000, "1s"},
	    {90000, "1m30s"},
	    {3661001, "1h1m1s1ms"},
	    {86400000, "1d"},
	    {14ll * 86400000, "2w"},
	    {90ll * 86400000, "90d"},
	    {365ll * 86400000, "1y"},
	    {366ll * 86400000, "366d"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char b[64];
		pd_config_format_duration(t[i].ms, b, sizeof(b));
		assert_string_equal(b, t[i].out);
		int64_t back;
		assert_int_equal(pd_config_parse_duration(b, &back, NULL), 0);
		assert_int_equal(back, t[i].ms);
	}
}

static void test_size_parse(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int64_t bytes;
	} ok[] = {
	    {"0", 0},
	    {"0B", 0},
	    {"1B", 1},
	    {"1KB", 1024},
	    {"1KiB", 1024},
	    {"10MB", 10 << 20},
	    {"512MB", 512 << 20},
	    {"1GB", 1 << 30},
	    {"1GiB", 1 << 30},
	    {"2TB", 2ll << 40},
	    {"1EB", 1ll << 60},
	    {"1MB1KB25B", 1049625},
	    {"1MiB1KiB25B", 1049625},
	    {"1.5MB", 1572864},
	    {"1.5MiB", 1572864},
	    {".5KB", 512},
	    {"0.3KB", 307},
	    {"+1KB", 1024},
	    {"-1KB", -1024},
	    {"7EB", 7ll << 60},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t v = -7;
		struct pd_err err = {0};
		if (pd_config_parse_size(ok[i].in, &v, &err))
			fail_msg("%s: %s", ok[i].in, err.msg);
		if (v != ok[i].bytes)
			fail_msg("%s: got %lld want %lld", ok[i].in, (long long)v,
			         (long long)ok[i].bytes);
	}
	static const struct {
		const char *in, *msg;
	} bad[] = {
	    {"1kB", "units: unknown unit kB in 1kB"},
	    {"1kiB", "units: unknown unit kiB in 1kiB"},
	    {"1000", "units: unknown unit  in 1000"},
	    {"", "units: invalid "},
	    {"-", "units: invalid -"},
	    {"KB", "units: invalid KB"},
	    {"1MiB1KB", "units: unknown unit MiB in 1MiB1KB"},
	    {"1.2.3MB", "units: unknown unit  in 1.2.3MB"},
	    {"8EB", "units: overflow parsing unit"},
	    {"10000000000000000000B", "units: invalid 10000000000000000000B"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t v;
		struct pd_err err = {0};
		if (pd_config_parse_size(bad[i].in, &v, &err) == 0)
			fail_msg("%s: expected an error", bad[i].in);
		assert_string_equal(err.msg, bad[i].msg);
	}
}

static void test_size_format(void **state)
{
	(void)state;
	static const struct {
		int64_t v;
		const char *out;
	} t[] = {
	    {0, "0B"},           {1, "1B"},           {1024, "1KiB"},          {1025, "1KiB1B"},
	    {1048577, "1MiB1B"}, {10 << 20, "10MiB"}, {1572864, "1MiB512KiB"}, {1ll << 60, "1EiB"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char b[128];
		pd_config_format_size(t[i].v, b, sizeof(b));
		assert_string_equal(b, t[i].out);
		int64_t back;
		assert_int_equal(pd_config_parse_size(b, &back, NULL), 0);
		assert_int_equal(back, t[i].v);
	}
}

static void test_default_profile_seconds(void **state)
{
	(void)state;
	assert_int_equal(pd_config_default_profile_seconds(10000), 9);
	assert_int_equal(pd_config_default_profile_seconds(10500), 9);
	assert_int_equal(pd_config_default_profile_seconds(15000), 14);
	assert_int_equal(pd_config_default_profile_seconds(2000), 1);
	assert_int_equal(pd_config_default_profile_seconds(1500), 1);
	assert_int_equal(pd_config_default_profile_seconds(1000), 1);
	assert_int_equal(pd_config_default_profile_seconds(45000), 30);
	assert_int_equal(pd_config_default_profile_seconds(3600000), 30);
}

/* ---- defaults ------------------------------------------------------------- */

static void test_minimal_defaults(void **state)
{
	(void)state;
	struct pd_config *cfg = load_ok(GOOD "/minimal.yml");
	assert_int_equal(cfg->global.scrape_interval_ms, 60000);
	assert_int_equal(cfg->global.scrape_timeout_ms, 10000);
	assert_int_equal(cfg->global.body_size_limit, 0);
	assert_null(cfg->global.external_labels);
	assert_int_equal(cfg->nscrape_configs, 1);
	assert_int_equal(cfg->nwarnings, 0);

	const struct pd_scrape_config *sc = &cfg->scrape_configs[0];
	assert_string_equal(sc->job_name, "app");
	assert_int_equal(sc->scrape_interval_ms, 60000);
	assert_int_equal(sc->scrape_timeout_ms, 10000);
	assert_string_equal(sc->scheme, "http");
	assert_string_equal(sc->metrics_path, "/metrics");
	assert_int_equal(sc->honor_labels, 0);
	assert_int_equal(sc->honor_timestamps, 1);
	assert_int_equal(sc->body_size_limit, 0);
	assert_int_equal(sc->nparams, 0);
	assert_int_equal(sc->http_client.follow_redirects, 1);
	assert_null(sc->http_client.basic_auth_username);
	assert_null(sc->http_client.authorization_type);
	assert_null(sc->http_client.proxy_url);
	assert_int_equal(sc->nstatic_configs, 1);
	assert_int_equal(sc->static_configs[0].ntargets, 1);
	assert_string_equal(sc->static_configs[0].targets[0], "localhost:6060");
	assert_null(sc->static_configs[0].labels);
	assert_int_equal(sc->nfile_sd_configs + sc->nhttp_sd_configs, 0);
	assert_int_equal(sc->nrelabel_configs, 0);
	assert_non_null(sc->relabel_rules);
	assert_int_equal(pd_relabel_rules_count(sc->relabel_rules), 0);

	/* conprof's seven defaults, all on; CPU for timeout - 1s */
	static const char *const names[] = {"allocs", "block",   "goroutine",   "heap",
	                                    "mutex",  "profile", "threadcreate"};
	assert_int_equal(sc->nprofiles, 7);
	for (size_t i = 0; i < 7; i++) {
		const struct pd_profile_config *p = &sc->profiles[i];
		char path[64];
		snprintf(path, sizeof(path), "/debug/pprof/%s", names[i]);
		assert_string_equal(p->name, names[i]);
		assert_string_equal(p->path, path);
		assert_int_equal(p->enabled, 1);
		assert_int_equal(p->builtin, 1);
		assert_int_equal(p->delta, 0);
		assert_int_equal(p->seconds, strcmp(names[i], "profile") == 0 ? 9 : 0);
	}
	assert_ptr_equal(pd_config_job(cfg, "app"), sc);
	assert_null(pd_config_job(cfg, "nope"));
	assert_null(pd_scrape_config_profile(sc, "fgprof"));
	pd_config_destroy(cfg);
	pd_config_destroy(NULL);
}

static void test_empty_documents(void **state)
{
	(void)state;
	static const char *const texts[] = {"",
	                                    "# nothing\n",
	                                    "global:\n",
	                                    "global: {}\n",
	                                    "scrape_configs:\n",
	                                    "scrape_configs: []\n",
	                                    "{}\n",
	                                    "---\n",
	                                    "~\n"};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct pd_config *cfg = parse_ok(texts[i]);
		assert_int_equal(cfg->global.scrape_interval_ms, 60000);
		assert_int_equal(cfg->global.scrape_timeout_ms, 10000);
		assert_int_equal(cfg->nscrape_configs, 0);
		pd_config_destroy(cfg);
	}
	struct pd_config *cfg = load_ok(GOOD "/empty.yml");
	assert_int_equal(cfg->nscrape_configs, 0);
	pd_config_destroy(cfg);
}

static void test_inheritance(void **state)
{
	(void)state;
	struct pd_config *cfg = parse_ok("global:\n"
	                                 "  scrape_interval: 15s\n"
	                                 "  scrape_timeout: 5s\n"
	                                 "  body_size_limit: 10MB\n"
	                                 "  target_limit: 500\n"
	                                 "scrape_configs:\n"
	                                 "  - job_name: a\n"
	                                 "  - job_name: b\n"
	                                 "    scrape_interval: 3s\n"
	                                 "  - job_name: c\n"
	                                 "    scrape_interval: 30s\n"
	                                 "    scrape_timeout: 20s\n"
	                                 "    body_size_limit: 1KB\n"
	                                 "    target_limit: 7\n"
	                                 "  - job_name: d\n"
	                                 "    scrape_interval: 0\n"
	                                 "    scrape_timeout: 0s\n");
	const struct pd_scrape_config *a = pd_config_job(cfg, "a"), *b = pd_config_job(cfg, "b"),
	                              *c = pd_config_job(cfg, "c"), *d = pd_config_job(cfg, "d");
	assert_int_equal(a->scrape_interval_ms, 15000);
	assert_int_equal(a->scrape_timeout_ms, 5000);
	assert_int_equal(a->body_size_limit, 10 << 20);
	assert_int_equal(b->scrape_interval_ms, 3000);
	assert_int_equal(b->scrape_timeout_ms, 3000); /* min(global timeout, interval) */
	assert_int_equal(c->scrape_interval_ms, 30000);
	assert_int_equal(c->scrape_timeout_ms, 20000);
	assert_int_equal(c->body_size_limit, 1024);
	assert_int_equal(a->target_limit, 500);
	assert_int_equal(c->target_limit, 7);
	assert_int_equal(cfg->nwarnings, 0); /* target_limit is used, not ignored */
	assert_int_equal(d->scrape_interval_ms, 15000); /* 0 means unset */
	assert_int_equal(d->scrape_timeout_ms, 5000);
	/* the CPU profile's default seconds follows each job's timeout */
	assert_int_equal(prof(a, "profile")->seconds, 4);
	assert_int_equal(prof(b, "profile")->seconds, 2);
	assert_int_equal(prof(c, "profile")->seconds, 19);
	pd_config_destroy(cfg);

	/* global timeout defaults to min(10s, interval) */
	cfg = parse_ok("global:\n  scrape_interval: 4s\n");
	assert_int_equal(cfg->global.scrape_timeout_ms, 4000);
	pd_config_destroy(cfg);
	cfg = parse_ok("global:\n  scrape_timeout: 30s\n");
	assert_int_equal(cfg->global.scrape_interval_ms, 60000);
	assert_int_equal(cfg->global.scrape_timeout_ms, 30000);
	pd_config_destroy(cfg);
}

static void test_profiling_merge(void **state)
{
	(void)state;
	struct pd_config *cfg = load_ok(GOOD "/profiling.yml");
	const struct pd_scrape_config *sc = pd_config_job(cfg, "api");
	assert_non_null(sc);
	assert_int_equal(sc->scrape_timeout_ms, 15000);
	assert_int_equal(sc->nprofiles, 8);
	/* the defaults keep their order, the custom type follows */
	assert_string_equal(sc->profiles[0].name, "allocs");
	assert_string_equal(sc->profiles[6].name, "threadcreate");
	assert_string_equal(sc->profiles[7].name, "fgprof");

	assert_int_equal(prof(sc, "heap")->enabled, 0); /* enabled: false */
	assert_string_equal(prof(sc, "heap")->path, "/debug/pprof/heap");
	assert_int_equal(prof(sc, "block")->enabled, 1);     /* {} keeps the defaults */
	assert_int_equal(prof(sc, "goroutine")->enabled, 1); /* enabled: (null) too */
	assert_int_equal(prof(sc, "allocs")->enabled, 1);    /* not mentioned */
	assert_int_equal(prof(sc, "profile")->seconds, 5);
	assert_int_equal(prof(sc, "mutex")->delta, 1);
	assert_int_equal(prof(sc, "mutex")->seconds, 14); /* delta: default seconds */
	assert_int_equal(prof(sc, "block")->seconds, 0);
	assert_string_equal(prof(sc, "threadcreate")->path, "/internal/pprof/threadcreate");
	const struct pd_profile_config *fg = prof(sc, "fgprof");
	assert_string_equal(fg->path, "/debug/fgprof");
	assert_int_equal(fg->seconds, 3);
	assert_int_equal(fg->enabled, 1);
	assert_int_equal(fg->builtin, 0);
	assert_int_equal(fg->delta, 0);

	assert_int_equal(sc->nstatic_configs, 1);
	assert_int_equal(sc->static_configs[0].ntargets, 2);
	assert_string_equal(pd_labels_get(sc->static_configs[0].labels, "env"), "prod");

	const struct pd_scrape_config *d = pd_config_job(cfg, "defaults");
	assert_int_equal(d->scrape_timeout_ms, 45000);
	assert_int_equal(prof(d, "profile")->seconds, 30); /* capped at Go's 30s */
	assert_int_equal(d->nprofiles, 7);
	pd_config_destroy(cfg);

	/* disabling a type needs an explicit false; a custom type can be off */
	cfg = parse_ok("scrape_configs:\n"
	               "  - job_name: x\n"
	               "    profiling_config:\n"
	               "      pprof_config:\n"
	               "        profile: {enabled: no}\n"
	               "        fgprof: {enabled: false}\n"
	               "        heap: {enabled: true, delta: true, seconds: 2}\n");
	sc = &cfg->scrape_configs[0];
	assert_int_equal(prof(sc, "profile")->enabled, 0);
	assert_int_equal(prof(sc, "fgprof")->enabled, 0);
	assert_int_equal(prof(sc, "heap")->seconds, 2);
	assert_int_equal(prof(sc, "heap")->delta, 1);
	pd_config_destroy(cfg);

	/* a short timeout is fine while the CPU profile is off */
	cfg = parse_ok("scrape_configs:\n"
	               "  - job_name: x\n"
	               "    scrape_timeout: 1s\n"
	               "    profiling_config:\n"
	               "      pprof_config:\n"
	               "        profile: {enabled: false}\n");
	pd_config_destroy(cfg);
}

static void test_env_expansion(void **state)
{
	(void)state;
	setenv("PD_TEST_REGION", "eu-west", 1);
	unsetenv("PD_TEST_UNSET_VAR");
	struct pd_config *cfg = load_ok(GOOD "/env.yml");
	const struct pd_labels *ls = cfg->global.external_labels;
	assert_non_null(ls);
	assert_string_equal(pd_labels_get(ls, "region"), "eu-west");
	assert_string_equal(pd_labels_get(ls, "zone"), "eu-west-a");
	assert_string_equal(pd_labels_get(ls, "literal"), "$HOME");
	assert_string_equal(pd_labels_get(ls, "joined"), "xy");
	assert_null(pd_labels_get(ls, "gone")); /* expands to "": no label */
	assert_string_equal(pd_labels_get(ls, "plain"), "profd");
	pd_config_destroy(cfg);

	/* os.Expand corner cases */
	setenv("PD_A", "1", 1);
	cfg = parse_ok("global:\n"
	               "  external_labels:\n"
	               "    a: \"$PD_A$PD_A\"\n"
	               "    b: \"${PD_A}x\"\n"
	               "    c: \"cost $\"\n"
	               "    d: \"a${}b\"\n"
	               "    e: \"$-x\"\n"
	               "    f: \"${PD_A\"\n");
	ls = cfg->global.external_labels;
	assert_string_equal(pd_labels_get(ls, "a"), "11");
	assert_string_equal(pd_labels_get(ls, "b"), "1x");
	assert_string_equal(pd_labels_get(ls, "c"), "cost $");
	assert_string_equal(pd_labels_get(ls, "d"), "ab");
	assert_string_equal(pd_labels_get(ls, "e"), "x");
	assert_string_equal(pd_labels_get(ls, "f"), "PD_A");
	pd_config_destroy(cfg);
}

static void test_full(void **state)
{
	(void)state;
	struct pd_config *cfg = load_ok(GOOD "/full.yml");
	assert_int_equal(cfg->global.scrape_interval_ms, 15000);
	assert_int_equal(cfg->global.body_size_limit, 64 << 20);
	assert_string_equal(pd_labels_get(cfg->global.external_labels, "replica"), "0");
	assert_int_equal(cfg->nscrape_configs, 4);

	const struct pd_scrape_config *sc = pd_config_job(cfg, "api");
	assert_int_equal(sc->honor_labels, 1);
	assert_int_equal(sc->honor_timestamps, 0);
	assert_int_equal(sc->scrape_interval_ms, 90000);
	assert_int_equal(sc->scrape_timeout_ms, 20000);
	assert_string_equal(sc->metrics_path, "/custom/metrics");
	assert_string_equal(sc->scheme, "https");
	assert_int_equal(sc->body_size_limit, 1572864);
	assert_int_equal(sc->nparams, 2);
	assert_string_equal(sc->params[0].name, "debug");
	assert_int_equal(sc->params[1].nvalues, 2);
	assert_string_equal(sc->params[1].values[1], "2");

	const struct pd_http_client_config *h = &sc->http_client;
	assert_string_equal(h->basic_auth_username, "profd");
	assert_string_equal(h->basic_auth_password, "hunter2");
	assert_null(h->basic_auth_password_file);
	assert_null(h->authorization_type);
	/* relative paths are joined to the config file's directory */
	assert_string_equal(h->tls_ca_file, GOOD "/certs/ca.pem");
	assert_string_equal(h->tls_cert_file, "/etc/profd/client.pem");
	assert_string_equal(h->tls_key_file, "/etc/profd/client.key");
	assert_string_equal(h->tls_server_name, "api.internal");
	assert_int_equal(h->tls_insecure_skip_verify, 1);
	assert_string_equal(h->proxy_url, "http://proxyuser:proxypass@proxy.internal:3128");
	assert_int_equal(h->follow_redirects, 0);

	assert_int_equal(sc->nstatic_configs, 2);
	assert_string_equal(pd_labels_get(sc->static_configs[0].labels, "team"), "core");
	assert_int_equal(sc->static_configs[1].ntargets, 2);
	assert_null(sc->static_configs[1].labels);

	assert_int_equal(sc->nfile_sd_configs, 1);
	assert_int_equal(sc->file_sd_configs[0].nfiles, 2);
	assert_string_equal(sc->file_sd_configs[0].files[0], GOOD "/targets/*.json");
	assert_string_equal(sc->file_sd_configs[0].files[1], "/etc/profd/more.yml");
	assert_int_equal(sc->file_sd_configs[0].refresh_interval_ms, 60000);

	assert_int_equal(sc->nhttp_sd_configs, 1);
	const struct pd_discovery_http_config *hs = &sc->http_sd_configs[0];
	assert_string_equal(hs->url, "https://sd.internal/targets");
	assert_int_equal(hs->refresh_interval_ms, 30000);
	assert_non_null(hs->client);
	assert_string_equal(hs->client->authorization_type, "Bearer");
	assert_string_equal(hs->client->authorization_credentials_file, GOOD "/secrets/sd-token");
	assert_int_equal(hs->client->follow_redirects, 1);

	assert_int_equal(sc->nrelabel_configs, 4);
	assert_int_equal(pd_relabel_rules_count(sc->relabel_rules), 4);
	const struct pd_relabel_rule_config *r = &sc->relabel_configs[0];
	assert_int_equal(r->nsource_labels, 1);
	assert_string_equal(r->source_labels[0], "__address__");
	assert_string_equal(r->regex, "(.*):8080");
	assert_string_equal(r->target_label, "host");
	assert_null(r->separator);
	assert_int_equal(r->action, -1);
	r = &sc->relabel_configs[1];
	assert_int_equal(r->action, PD_RELABEL_HASHMOD);
	assert_int_equal(r->has_modulus, 1);
	assert_int_equal(r->modulus, 4);
	assert_string_equal(r->separator, "/");
	assert_int_equal(sc->relabel_configs[2].action, PD_RELABEL_LABELMAP);
	assert_null(sc->relabel_configs[2].source_labels);
	assert_int_equal(sc->relabel_configs[3].action, PD_RELABEL_KEEP);

	/* bearer_token_file becomes authorization, as Prometheus converts it */
	sc = pd_config_job(cfg, "bearer");
	assert_string_equal(sc->http_client.authorization_type, "Bearer");
	assert_string_equal(sc->http_client.authorization_credentials_file,
	                    "/var/run/secrets/token");
	assert_null(sc->http_client.authorization_credentials);
	assert_int_equal(sc->scrape_interval_ms, 2000);
	assert_int_equal(sc->scrape_timeout_ms, 2000);
	assert_int_equal(prof(sc, "profile")->seconds, 1);
	sc = pd_config_job(cfg, "authz");
	assert_string_equal(sc->http_client.authorization_type, "Token");
	assert_string_equal(sc->http_client.authorization_credentials, "s3cr3t");
	sc = pd_config_job(cfg, "bearer-inline");
	assert_string_equal(sc->http_client.authorization_type, "Bearer");
	assert_string_equal(sc->http_client.authorization_credentials, "inline-token");
	pd_config_destroy(cfg);
}

/* ---- YAML semantics ------------------------------------------------------- */

static void test_yaml_semantics(void **state)
{
	(void)state;
	/* YAML 1.1 booleans, as go-yaml v2 */
	static const struct {
		const char *v;
		int b;
	} bools[] = {{"yes", 1},   {"Yes", 1},   {"on", 1}, {"ON", 1},  {"y", 1},
	             {"true", 1},  {"True", 1},  {"no", 0}, {"off", 0}, {"n", 0},
	             {"false", 0}, {"FALSE", 0}, {"~", 0},  {"", 0}};
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		char text[128];
		snprintf(text, sizeof(text),
		         "scrape_configs:\n  - job_name: j\n    honor_labels: %s\n", bools[i].v);
		struct pd_config *cfg = parse_ok(text);
		assert_int_equal(cfg->scrape_configs[0].honor_labels, bools[i].b);
		pd_config_destroy(cfg);
	}
	/* a null follow_redirects is Go's zero value, false */
	struct pd_config *cfg =
	    parse_ok("scrape_configs:\n  - job_name: j\n    follow_redirects:\n");
	assert_int_equal(cfg->scrape_configs[0].http_client.follow_redirects, 0);
	pd_config_destroy(cfg);

	/* any scalar is a string; numbers keep their spelling */
	cfg = parse_ok("scrape_configs:\n"
	               "  - job_name: 0x1F\n"
	               "    static_configs:\n"
	               "      - targets: [host:80]\n"
	               "        labels: {a: 1.50, b: true, c: ~, d: '~'}\n");
	const struct pd_scrape_config *sc = &cfg->scrape_configs[0];
	assert_string_equal(sc->job_name, "0x1F");
	const struct pd_labels *ls = sc->static_configs[0].labels;
	assert_string_equal(pd_labels_get(ls, "a"), "1.50");
	assert_string_equal(pd_labels_get(ls, "b"), "true");
	assert_null(pd_labels_get(ls, "c"));
	assert_string_equal(pd_labels_get(ls, "d"), "~");
	pd_config_destroy(cfg);

	/* integers in Go syntax; a float is truncated into an integer field */
	cfg = parse_ok(
	    "scrape_configs:\n"
	    "  - job_name: j\n"
	    "    relabel_configs:\n"
	    "      - {source_labels: [a], target_label: b, action: HashMod, modulus: 0x10}\n"
	    "      - {source_labels: [a], target_label: c, action: hashmod, modulus: 1_000}\n"
	    "    profiling_config:\n"
	    "      pprof_config:\n"
	    "        profile: {seconds: 2.9}\n");
	sc = &cfg->scrape_configs[0];
	assert_int_equal(sc->relabel_configs[0].modulus, 16);
	assert_int_equal(sc->relabel_configs[0].action, PD_RELABEL_HASHMOD);
	assert_int_equal(sc->relabel_configs[1].modulus, 1000);
	assert_int_equal(prof(sc, "profile")->seconds, 2);
	pd_config_destroy(cfg);

	/* null relabel fields are Go zero values, not defaults */
	cfg = parse_ok("scrape_configs:\n"
	               "  - job_name: j\n"
	               "    relabel_configs:\n"
	               "      - source_labels: [a]\n"
	               "        separator:\n"
	               "        target_label: b\n");
	assert_string_equal(cfg->scrape_configs[0].relabel_configs[0].separator, "");
	assert_null(cfg->scrape_configs[0].relabel_configs[0].regex);
	pd_config_destroy(cfg);
}

static void test_anchors_and_merges(void **state)
{
	(void)state;
	struct pd_config *cfg = load_ok(GOOD "/prometheus_compat.yml");
	assert_int_equal(cfg->nscrape_configs, 2);
	const struct pd_scrape_config *p = pd_config_job(cfg, "prometheus");
	const struct pd_scrape_config *n = pd_config_job(cfg, "node");
	assert_non_null(p);
	assert_non_null(n);
	assert_int_equal(p->honor_labels, 1);
	assert_int_equal(n->honor_labels, 0); /* the explicit key wins */
	assert_int_equal(n->scrape_interval_ms, 15000);
	assert_string_equal(n->static_configs[0].targets[0], "localhost:9100");
	/* ignored Prometheus fields are reported as warnings, each with a position */
	assert_true(cfg->nwarnings >= 5);
	int saw_rule_files = 0, saw_metric_relabel = 0;
	for (size_t i = 0; i < cfg->nwarnings; i++) {
		assert_contains(cfg->warnings[i], "prometheus_compat.yml:");
		assert_contains(cfg->warnings[i], "ignored by profd");
		saw_rule_files |= strstr(cfg->warnings[i], ":9:1: field rule_files ") != NULL;
		saw_metric_relabel |= strstr(cfg->warnings[i], "metric_relabel_configs") != NULL;
	}
	assert_true(saw_rule_files);
	assert_true(saw_metric_relabel);
	pd_config_destroy(cfg);
}

static void test_merge_precedence(void **state)
{
	(void)state;
	struct pd_config *cfg = parse_ok("scrape_configs:\n"
	                                 "  - &one\n"
	                                 "    job_name: one\n"
	                                 "    scrape_interval: 10s\n"
	                                 "  - &two\n"
	                                 "    job_name: two\n"
	                                 "    scrape_interval: 20s\n"
	                                 "    scrape_timeout: 3s\n"
	                                 "  - <<: [*one, *two]\n"
	                                 "    job_name: three\n");
	const struct pd_scrape_config *t = pd_config_job(cfg, "three");
	assert_int_equal(t->scrape_interval_ms, 10000); /* the first map wins */
	assert_int_equal(t->scrape_timeout_ms, 3000);   /* only in the second */
	pd_config_destroy(cfg);
}

static void test_positions(void **state)
{
	(void)state;
	assert_string_equal(parse_err("scrape_configs:\n"
	                              "  - job_name: app\n"
	                              "    scrape_interval: 10s\n"
	                              "    scrape_timeout: 20s\n"),
	                    "t.yml:4:21: scrape timeout greater than scrape interval for scrape "
	                    "config with job name \"app\"");
	assert_string_equal(parse_err("scrape_configs:\n"
	                              "  - job_name: app\n"
	                              "  - job_name: app\n"),
	                    "t.yml:3:15: found multiple scrape configs with job name \"app\"");
	assert_string_equal(parse_err("scrape_configs:\n"
	                              "  - job_name: app\n"
	                              "    scrape_intervall: 10s\n"),
	                    "t.yml:3:5: field scrape_intervall not found in type "
	                    "config.ScrapeConfig");
	assert_string_equal(parse_err("scrape_configs:\n"
	                              "  - job_name: app\n"
	                              "    honor_labels: maybe\n"),
	                    "t.yml:3:19: cannot unmarshal !!str `maybe` into bool");
	assert_string_equal(parse_err("scrape_configs:\n"
	                              "  - job_name: app\n"
	                              "    honor_labels: \"a long string\"\n"),
	                    "t.yml:3:19: cannot unmarshal !!str `a long ...` into bool");
	assert_string_equal(parse_err("global:\n"
	                              "  scrape_interval: 1x\n"),
	                    "t.yml:2:20: unknown unit \"x\" in duration \"1x\"");
	assert_string_equal(parse_err("scrape_configs:\n"
	                              "  - job_name: app\n"
	                              "    job_name: b\n"),
	                    "t.yml:3:5: field job_name already set in type config.ScrapeConfig");
	assert_string_equal(parse_err("scrape_configs:\n"
	                              "  - job_name: app\n"
	                              "    static_configs:\n"
	                              "      - targets: ['a:1', 'http://b/']\n"),
	                    "t.yml:4:26: \"http://b/\" is not a valid hostname");
	/* a parse error names libyaml's problem and where it was */
	assert_contains(parse_err("a: [\n"), "t.yml:2:1: yaml: ");
	/* no filename: positions only */
	struct pd_err err = {0};
	struct pd_config *cfg;
	assert_int_not_equal(pd_config_parse("global: 3\n", 10, NULL, &cfg, &err), 0);
	assert_string_equal(err.msg, "1:9: cannot unmarshal !!int `3` into config.GlobalConfig");
}

static void test_relabel_positions(void **state)
{
	(void)state;
	const char *msg = parse_err("scrape_configs:\n"
	                            "  - job_name: app\n"
	                            "    relabel_configs:\n"
	                            "      - source_labels: [a]\n"
	                            "        target_label: b\n"
	                            "      - source_labels: [a]\n"
	                            "        target_label: c\n"
	                            "        action: hashmod\n");
	assert_contains(msg, "t.yml:6:9: ");
	assert_contains(msg, "relabel configuration for hashmod requires non-zero modulus");
}

static void test_alias_bomb(void **state)
{
	(void)state;
	/* each level merges the previous one ten times: 10^9 lookups without a budget */
	struct pd_buf b;
	pd_buf_init(&b, 0);
	pd_buf_printf(&b, "alerting:\n  m0: &m0 {k: v}\n");
	for (int i = 1; i < 10; i++) {
		pd_buf_printf(&b, "  m%d: &m%d {<<: [", i, i);
		for (int j = 0; j < 10; j++)
			pd_buf_printf(&b, "%s*m%d", j ? ", " : "", i - 1);
		pd_buf_printf(&b, "]}\n");
	}
	pd_buf_printf(&b, "global: {<<: *m9}\n");
	pd_buf_append(&b, "", 1);
	assert_contains(parse_err((const char *)b.data), "document too complex");
	pd_buf_fini(&b);

	/* a map merged into itself */
	assert_contains(parse_err("global: &g {<<: *g}\n"), "t.yml:");

	/* deep flow collections are refused before libyaml's loader, which takes time
	 * quadratic in their depth, sees them (100,000 levels took it minutes); 100
	 * levels are read (and refused for what they are) */
	size_t n = 100000;
	char *q = malloc(16 + 2 * n + 2);
	assert_non_null(q);
	memcpy(q, "scrape_configs: ", 16);
	memset(q + 16, '[', n);
	memset(q + 16 + n, ']', n);
	memcpy(q + 16 + 2 * n, "\n", 2);
	assert_string_equal(parse_err(q),
	                    "t.yml:1:116: yaml: collections nested more than 100 levels deep");
	memmove(q + 16 + 99, q + 16 + n, n + 2); /* 99 [ after the root map */
	q[16 + 99 + 99] = '\n';
	q[16 + 99 + 99 + 1] = '\0';
	assert_false(strstr(parse_err(q), "nested more than"));
	free(q);
}

/* ---- rendering ------------------------------------------------------------ */

static void test_render_secrets(void **state)
{
	(void)state;
	struct pd_config *cfg = load_ok(GOOD "/full.yml");
	char *y = render(cfg);
	assert_null(strstr(y, "hunter2"));
	assert_null(strstr(y, "s3cr3t"));
	assert_null(strstr(y, "inline-token"));
	assert_null(strstr(y, "proxypass"));
	assert_contains(y, "password: <secret>");
	assert_contains(y, "credentials: <secret>");
	assert_contains(y, "proxy_url: http://proxyuser:xxxxx@proxy.internal:3128");
	/* an http_sd_configs URL with a password, as proxy_url */
	struct pd_config *sd = parse_ok("scrape_configs:\n  - job_name: sd\n    http_sd_configs:\n"
	                                "      - url: https://sd:sdpass@sd.internal/targets\n");
	char *sy = render(sd);
	assert_null(strstr(sy, "sdpass"));
	assert_contains(sy, "url: https://sd:xxxxx@sd.internal/targets");
	free(sy);
	pd_config_destroy(sd);
	assert_contains(y, "credentials_file: /var/run/secrets/token");
	assert_contains(y, "    type: Bearer\n");
	assert_contains(y, "scrape_interval: 1m30s\n");
	assert_contains(y, "body_size_limit: 1MiB512KiB\n");
	assert_contains(y, "  body_size_limit: 64MiB\n");
	assert_contains(y, "replica: \"0\"\n");
	assert_contains(y, "- source_labels: [__address__]\n");
	assert_contains(y, "separator: ;\n");
	assert_contains(y, "action: hashmod\n");
	assert_contains(y, "modulus: 4\n");
	assert_contains(y, "        seconds: 19\n");

	/* what is rendered loads back to the same configuration, secrets aside */
	struct pd_config *back = parse_ok(y);
	char *y2 = render(back);
	assert_string_equal(y, y2);
	const struct pd_scrape_config *sc = pd_config_job(back, "api");
	assert_string_equal(sc->http_client.basic_auth_password, "<secret>");
	assert_int_equal(sc->nrelabel_configs, 4);
	assert_int_equal(back->nscrape_configs, 4);
	free(y2);
	pd_config_destroy(back);
	free(y);
	pd_config_destroy(cfg);
}

static void test_render_defaults(void **state)
{
	(void)state;
	struct pd_config *cfg = load_ok(GOOD "/minimal.yml");
	char *y = render(cfg);
	assert_string_equal(y, "global:\n"
	                       "  scrape_interval: 1m\n"
	                       "  scrape_timeout: 10s\n"
	                       "scrape_configs:\n"
	                       "- job_name: app\n"
	                       "  honor_timestamps: true\n"
	                       "  scrape_interval: 1m\n"
	                       "  scrape_timeout: 10s\n"
	                       "  metrics_path: /metrics\n"
	                       "  scheme: http\n"
	                       "  tls_config:\n"
	                       "    insecure_skip_verify: false\n"
	                       "  follow_redirects: true\n"
	                       "  static_configs:\n"
	                       "  - targets:\n"
	                       "    - localhost:6060\n"
	                       "  profiling_config:\n"
	                       "    pprof_config:\n"
	                       "      allocs:\n"
	                       "        enabled: true\n"
	                       "        path: /debug/pprof/allocs\n"
	                       "      block:\n"
	                       "        enabled: true\n"
	                       "        path: /debug/pprof/block\n"
	                       "      goroutine:\n"
	                       "        enabled: true\n"
	                       "        path: /debug/pprof/goroutine\n"
	                       "      heap:\n"
	                       "        enabled: true\n"
	                       "        path: /debug/pprof/heap\n"
	                       "      mutex:\n"
	                       "        enabled: true\n"
	                       "        path: /debug/pprof/mutex\n"
	                       "      profile:\n"
	                       "        enabled: true\n"
	                       "        path: /debug/pprof/profile\n"
	                       "        seconds: 9\n"
	                       "      threadcreate:\n"
	                       "        enabled: true\n"
	                       "        path: /debug/pprof/threadcreate\n");
	free(y);
	pd_config_destroy(cfg);
}

static void test_render_quoting(void **state)
{
	(void)state;
	/* strings that would read back as something else are quoted, as go-yaml does */
	struct pd_config *cfg =
	    parse_ok("scrape_configs:\n"
	             "  - job_name: \"yes\"\n"
	             "    params: {n: ['10', '~', '', 'on', '1:30', 'a:b', '#x']}\n"
	             "    static_configs:\n"
	             "      - targets: ['8080:10', '10.0.0.7:8080']\n"
	             "        labels: {v: '0x1F', w: \"multi\\nline\"}\n");
	char *y = render(cfg);
	assert_contains(y, "- job_name: \"yes\"\n");
	assert_contains(y, "    - \"10\"\n");
	assert_contains(y, "    - \"~\"\n");
	assert_contains(y, "    - \"\"\n");
	assert_contains(y, "    - \"on\"\n");
	assert_contains(y, "    - \"1:30\"\n");
	assert_contains(y, "    - a:b\n");
	assert_contains(y, "    - \"8080:10\"\n");
	assert_contains(y, "    - 10.0.0.7:8080\n");
	assert_contains(y, "      v: \"0x1F\"\n");
	struct pd_config *back = parse_ok(y);
	const struct pd_scrape_config *sc = &back->scrape_configs[0];
	assert_string_equal(sc->job_name, "yes");
	assert_int_equal(sc->params[0].nvalues, 7);
	assert_string_equal(sc->params[0].values[2], "");
	assert_string_equal(sc->params[0].values[6], "#x");
	assert_string_equal(pd_labels_get(sc->static_configs[0].labels, "w"), "multi\nline");
	char *y2 = render(back);
	assert_string_equal(y, y2);
	free(y);
	free(y2);
	pd_config_destroy(back);
	pd_config_destroy(cfg);
}

static void test_render_roundtrip_all_good(void **state)
{
	(void)state;
	setenv("PD_TEST_REGION", "eu-west", 1);
	DIR *d = opendir(GOOD);
	assert_non_null(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".yml") != 0)
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", GOOD, de->d_name);
		struct pd_config *cfg = load_ok(path);
		n++;
		/* external labels are shown expanded, as Prometheus shows them: a `$$` in
		 * the file is a `$` in the output, which would expand again */
		if (strcmp(de->d_name, "env.yml") == 0) {
			pd_config_destroy(cfg);
			continue;
		}
		char *y = render(cfg);
		struct pd_config *back = parse_ok(y);
		char *y2 = render(back);
		if (strcmp(y, y2) != 0)
			fail_msg("%s: rendering is not stable:\n%s\n---\n%s", path, y, y2);
		free(y);
		free(y2);
		pd_config_destroy(back);
		pd_config_destroy(cfg);
	}
	closedir(d);
	assert_true(n >= 6);
}

/* dns_sd_configs: Prometheus's examples, its defaults (SRV, 30s), the type kept as
 * written, and the rendering /api/v1/status/config shows. */
static void test_dns_sd(void **state)
{
	(void)state;
	struct pd_config *cfg = load_ok(GOOD "/dns_sd.yml");
	const struct pd_scrape_config *sc = pd_config_job(cfg, "service-y");
	assert_non_null(sc);
	assert_int_equal(sc->ndns_sd_configs, 2);
	const struct pd_discovery_dns_config *d = &sc->dns_sd_configs[0];
	assert_int_equal(d->nnames, 2);
	assert_string_equal(d->names[1], "second.dns.address.domain.com");
	assert_string_equal(d->type, "SRV");
	assert_int_equal(d->refresh_interval_ms, 15000);
	assert_int_equal(d->port, 0);
	assert_int_equal(sc->dns_sd_configs[1].refresh_interval_ms, 30000);
	sc = pd_config_job(cfg, "web");
	assert_int_equal(sc->ndns_sd_configs, 2);
	assert_string_equal(sc->dns_sd_configs[1].type, "aaaa");
	assert_int_equal(sc->dns_sd_configs[1].port, 6060);
	assert_int_equal(pd_discovery_dns_type_parse(sc->dns_sd_configs[1].type),
	                 PD_DISCOVERY_DNS_AAAA);
	char *y = render(cfg);
	assert_non_null(strstr(y, "  dns_sd_configs:\n"
	                          "  - names:\n"
	                          "    - first.dns.address.domain.com\n"
	                          "    - second.dns.address.domain.com\n"
	                          "    refresh_interval: 15s\n"
	                          "    type: SRV\n"
	                          "    port: 0\n"));
	free(y);
	pd_config_destroy(cfg);
}

/* kubernetes_sd_configs: Prometheus's examples and every field, the kubeconfig path
 * made absolute, and the rendering /api/v1/status/config shows. */
static void test_kubernetes_sd(void **state)
{
	(void)state;
	struct pd_config *cfg = load_ok(GOOD "/kubernetes_sd.yml");
	const struct pd_scrape_config *sc = pd_config_job(cfg, "kubernetes-apiservers");
	assert_non_null(sc);
	assert_int_equal(sc->nkubernetes_sd_configs, 1);
	assert_string_equal(sc->kubernetes_sd_configs[0].role, "endpoints");
	assert_null(sc->kubernetes_sd_configs[0].api_server);
	assert_null(sc->kubernetes_sd_configs[0].kubeconfig_file);
	sc = pd_config_job(cfg, "service-kubernetes");
	const struct pd_discovery_kubernetes_config *k = &sc->kubernetes_sd_configs[0];
	assert_string_equal(k->api_server, "https://localhost:1234");
	assert_string_equal(k->client->basic_auth_username, "myusername");
	assert_non_null(strstr(k->client->tls_cert_file, "valid_cert_file"));
	sc = pd_config_job(cfg, "kubernetes-pods");
	k = &sc->kubernetes_sd_configs[0];
	assert_int_equal(pd_discovery_k8s_role_parse(k->role), PD_DISCOVERY_K8S_POD);
	assert_true(k->own_namespace);
	assert_int_equal(k->nnamespaces, 1);
	assert_string_equal(k->namespaces[0], "monitoring");
	assert_int_equal(k->nselectors, 1);
	assert_string_equal(k->selectors[0].label, "app in (api, web),tier!=cache,!canary");
	assert_string_equal(k->selectors[0].field, "spec.nodeName=worker-1,status.phase!=Failed");
	assert_true(k->attach_node);
	assert_true(k->attach_namespace);
	sc = pd_config_job(cfg, "kubernetes-endpointslices");
	assert_int_equal(sc->nkubernetes_sd_configs, 4);
	k = &sc->kubernetes_sd_configs[0];
	assert_int_equal(k->nselectors, 3);
	assert_string_equal(k->kubeconfig_file, PD_TESTDATA "/config/good/kube/config");
	assert_int_equal(sc->kubernetes_sd_configs[1].client->follow_redirects, 0);
	char *y = render(cfg);
	assert_non_null(strstr(y, "  kubernetes_sd_configs:\n"
	                          "  - role: pod\n"
	                          "    kubeconfig_file: \"\"\n"));
	assert_non_null(strstr(y, "    namespaces:\n"
	                          "      own_namespace: true\n"
	                          "      names:\n"
	                          "      - monitoring\n"
	                          "    selectors:\n"
	                          "    - role: pod\n"));
	assert_non_null(strstr(y, "    attach_metadata:\n"
	                          "      node: true\n"
	                          "      namespace: true\n"));
	free(y);
	pd_config_destroy(cfg);
}

/* ---- testdata/config/bad -------------------------------------------------- */

static void test_bad_files(void **state)
{
	(void)state;
	DIR *d = opendir(BAD);
	assert_non_null(d);
	struct dirent *de;
	int n = 0, failures = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".yml") != 0)
			continue;
		char path[1024], line[1024];
		snprintf(path, sizeof(path), "%s/%s", BAD, de->d_name);
		FILE *f = fopen(path, "r");
		assert_non_null(f);
		if (!fgets(line, sizeof(line), f) || strncmp(line, "# expect: ", 10) != 0)
			fail_msg("%s: the first line must be '# expect: <message>'", path);
		fclose(f);
		line[strcspn(line, "\n")] = '\0';
		const char *want = line + 10;

		struct pd_config *cfg = NULL;
		struct pd_err err = {0};
		int rc = pd_config_load_file(path, &cfg, &err);
		n++;
		if (rc == 0) {
			print_error("%s: loaded, expected \"%s\"\n", de->d_name, want);
			pd_config_destroy(cfg);
			failures++;
			continue;
		}
		assert_null(cfg);
		/* file:line:column: message */
		size_t pl = strlen(path);
		unsigned lno, col;
		char rest[8];
		if (strncmp(err.msg, path, pl) != 0 ||
		    sscanf(err.msg + pl, ":%u:%u%7s", &lno, &col, rest) != 3 || rest[0] != ':' ||
		    lno < 2) {
			print_error("%s: no file:line:column position: %s\n", de->d_name, err.msg);
			failures++;
		}
		if (!strstr(err.msg, want)) {
			print_error("%s:\n  got  %s\n  want %s\n", de->d_name, err.msg, want);
			failures++;
		}
	}
	closedir(d);
	assert_int_equal(failures, 0);
	assert_true(n >= 60);
}

static void test_load_errors(void **state)
{
	(void)state;
	struct pd_config *cfg = (struct pd_config *)1;
	struct pd_err err = {0};
	assert_int_equal(pd_config_load_file(BAD "/no-such-file.yml", &cfg, &err), PD_EIO);
	assert_null(cfg);
	assert_contains(err.msg, "no-such-file.yml");
	/* a NUL byte in a string cannot become a C string */
	static const char nul[] = "scrape_configs:\n  - job_name: \"a\\0b\"\n";
	assert_contains(parse_err(nul), "t.yml:2:15: string contains a NUL byte");
}

/* ---- the web configuration ------------------------------------------------ */

/* "secret" at bcrypt cost 4 */
#define SECRET_HASH "$2b$04$01XTU9ZIXdOWeXZhQaBkt./oIwI8gFiHp7Kkg5UqWBHTOaEDIoeT."

static void web_bad(const char *text, const char *want)
{
	struct pd_web_config *wc = NULL;
	struct pd_err err = {0};
	if (pd_web_config_parse(text, strlen(text), "web.yml", NULL, &wc, &err) == 0)
		fail_msg("accepted:\n%s", text);
	assert_null(wc);
	if (strcmp(err.msg, want) != 0)
		fail_msg("got  %s\nwant %s", err.msg, want);
}

/* exporter-toolkit's defaults, fields and checks, with positions */
static void test_web_config(void **state)
{
	(void)state;
	struct pd_web_config *wc = NULL;
	struct pd_err err = {0};
	const char *empty = "";
	assert_int_equal(pd_web_config_parse(empty, 0, "web.yml", NULL, &wc, &err), 0);
	assert_false(wc->tls_enabled);
	assert_int_equal(wc->min_version, PD_WEB_TLS12);
	assert_int_equal(wc->max_version, PD_WEB_TLS13);
	assert_true(wc->http2);
	assert_true(wc->prefer_server_cipher_suites);
	pd_web_config_destroy(wc);

	const char *full = "tls_server_config:\n"
	                   "  cert_file: server.crt\n"
	                   "  key_file: /etc/profd/server.key\n"
	                   "  client_auth_type: RequireAndVerifyClientCert\n"
	                   "  client_ca_file: ca.crt\n"
	                   "  min_version: TLS13\n"
	                   "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"
	                   "  curve_preferences: [X25519]\n"
	                   "  prefer_server_cipher_suites: false\n"
	                   "http_server_config:\n"
	                   "  http2: false\n"
	                   "  headers:\n"
	                   "    X-Frame-Options: sameorigin\n"
	                   "    Strict-Transport-Security: max-age=31536000\n"
	                   "basic_auth_users:\n"
	                   "  alice: " SECRET_HASH "\n"
	                   "rate_limit: {burst: 5, interval: 1s}\n";
	assert_int_equal(pd_web_config_parse(full, strlen(full), "web.yml", "/etc/profd", &wc, &err), 0);
	assert_true(wc->tls_enabled);
	assert_string_equal(wc->cert_file, "/etc/profd/server.crt");
	assert_string_equal(wc->key_file, "/etc/profd/server.key");
	assert_string_equal(wc->client_ca_file, "/etc/profd/ca.crt");
	assert_int_equal(wc->client_auth, PD_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT);
	assert_int_equal(wc->min_version, PD_WEB_TLS13);
	assert_int_equal(wc->ncipher_suites, 1);
	assert_int_equal(wc->ncurve_preferences, 1);
	assert_false(wc->prefer_server_cipher_suites);
	assert_false(wc->http2);
	assert_int_equal(wc->nheaders, 2);
	assert_string_equal(wc->headers[0].name, "X-Frame-Options");
	assert_int_equal(wc->nusers, 1);
	assert_int_equal(wc->rate_limit_burst, 5);
	assert_int_equal(wc->rate_limit_interval_ms, 1000);
	/* bcrypt through libxcrypt: right, wrong, unknown user */
	assert_true(pd_web_config_check_password(wc, "alice", "secret"));
	assert_false(pd_web_config_check_password(wc, "alice", "Secret"));
	assert_false(pd_web_config_check_password(wc, "alice", ""));
	assert_false(pd_web_config_check_password(wc, "bob", "secret"));
	pd_web_config_destroy(wc);

	web_bad("tls_server_confi: {}\n", "web.yml:1:1: field tls_server_confi not found in type web.Config");
	web_bad("tls_server_config:\n  cert_file: a\n", "web.yml:2:3: missing one of key or key_file");
	web_bad("tls_server_config:\n  key_file: a\n", "web.yml:2:3: missing one of cert or cert_file");
	web_bad("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Bogus\n",
	        "web.yml:4:21: invalid ClientAuth: Bogus");
	web_bad("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n",
	        "web.yml:4:19: client CA's have been configured without a Client Auth Policy");
	web_bad("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS14\n",
	        "web.yml:4:16: unknown TLS version: TLS14");
	web_bad("tls_server_config:\n  cipher_suites: [TLS_NULL]\n", "web.yml:2:19: unknown cipher: TLS_NULL");
	web_bad("http_server_config:\n  headers:\n    Server: profd\n",
	        "web.yml:3:5: HTTP header \"Server\" can not be configured");
	web_bad("http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
	        "web.yml:3:22: invalid value for X-Frame-Options. Expected one of: [\"deny\" \"sameorigin\"], "
	        "but got: \"allow\"");
	web_bad("basic_auth_users:\n  bob: plain\n",
	        "web.yml:2:8: crypto/bcrypt: hashedSecret too short to be a bcrypted password");
	web_bad("basic_auth_users:\n  bob: $2b$99$01XTU9ZIXdOWeXZhQaBkt./oIwI8gFiHp7Kkg5UqWBHTOaEDIoeT.\n",
	        "web.yml:2:8: crypto/bcrypt: cost 99 is outside allowed range (4,31)");
	web_bad("basic_auth_users:\n  bob: x2b$04$01XTU9ZIXdOWeXZhQaBkt./oIwI8gFiHp7Kkg5UqWBHTOaEDIoeT.\n",
	        "web.yml:2:8: crypto/bcrypt: bcrypt hashes must start with '$', but hashedSecret started with 'x'");
	web_bad("basic_auth_users:\n  bob: a\n  bob: b\n", "web.yml:3:3: key \"bob\" already set in map");
}

/* A readable certificate file passes the file check; a missing one is named. */
static void test_web_config_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd_test_webcfg_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[512];
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("tls_server_config:\n  cert_file: s.crt\n  key_file: s.key\n", f);
	fclose(f);
	struct pd_web_config *wc = NULL;
	struct pd_err err = {0};
	assert_int_equal(pd_web_config_load_file(path, &wc, &err), 0);
	assert_int_not_equal(pd_web_config_check_files(wc, &err), 0);
	assert_non_null(strstr(err.msg, "failed to read cert_file ("));
	assert_non_null(strstr(err.msg, "/s.crt"));
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, i ? "s.key" : "s.crt");
		f = fopen(path, "w");
		assert_non_null(f);
		fputs("-----BEGIN X-----\n", f);
		fclose(f);
	}
	assert_int_equal(pd_web_config_check_files(wc, &err), 0);
	pd_web_config_destroy(wc);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, i == 0 ? "s.key" : i == 1 ? "s.crt" : "web.yml");
		unlink(path);
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_duration_parse),
	    cmocka_unit_test(test_duration_format),
	    cmocka_unit_test(test_size_parse),
	    cmocka_unit_test(test_size_format),
	    cmocka_unit_test(test_default_profile_seconds),
	    cmocka_unit_test(test_minimal_defaults),
	    cmocka_unit_test(test_empty_documents),
	    cmocka_unit_test(test_inheritance),
	    cmocka_unit_test(test_profiling_merge),
	    cmocka_unit_test(test_env_expansion),
	    cmocka_unit_test(test_full),
	    cmocka_unit_test(test_yaml_semantics),
	    cmocka_unit_test(test_anchors_and_merges),
	    cmocka_unit_test(test_merge_precedence),
	    cmocka_unit_test(test_positions),
	    cmocka_unit_test(test_relabel_positions),
	    cmocka_unit_test(test_alias_bomb),
	    cmocka_unit_test(test_render_secrets),
	    cmocka_unit_test(test_render_defaults),
	    cmocka_unit_test(test_render_quoting),
	    cmocka_unit_test(test_render_roundtrip_all_good),
	    cmocka_unit_test(test_dns_sd),
	    cmocka_unit_test(test_kubernetes_sd),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_load_errors),
	    cmocka_unit_test(test_web_config),
	    cmocka_unit_test(test_web_config_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
