/* run_cmd.c: `profd run`, the daemon: checks the values of its flags (run_flags.c
 * parses them), loads the configuration (run_config.c applies and reloads it),
 * opens the store, discovers targets and scrapes them, persists and compacts the
 * store on a timer, reloads the configuration on SIGHUP (a bad one is refused and
 * the old one keeps running), and shuts down cleanly on SIGTERM or SIGINT (or POST
 * /-/quit with --web.enable-lifecycle). */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "profd/api.h"
#include "profd/clickhouse.h"
#include "profd/config.h"
#include "profd/discovery.h"
#include "profd/scrape.h"
#include "profd/tsdb.h"
#include "profd/webui.h"
#include "run_int.h"
#include "run_symbolizer.h"

/* POST /-/quit, once its answer has been sent: the main thread shuts down as
 * on SIGTERM. Called from an HTTP thread: it only wakes the main thread. */
static void request_quit(void *ctx)
{
	struct daemon *d = ctx;
	__atomic_store_n(&d->quit, 1, __ATOMIC_RELEASE);
	pthread_kill(d->main_thread, SIGTERM);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A positive whole number of at most max for flag. */
static int parse_count(const char *flag, const char *v, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (!*v || *end || errno || n == 0 || n > max || v[0] == '-') {
		fprintf(stderr, "profd run: %s: %s is not a whole number from 1 to %u\n", flag, v, max);
		return -1;
	}
	*out = (unsigned)n;
	return 0;
}

/* A positive duration (10s, 1m30s) for flag. */
static int parse_timeout(const char *flag, const char *v, int64_t *ms)
{
	struct pd_err err = {0};
	if (pd_config_parse_duration(v, ms, &err)) {
		fprintf(stderr, "profd run: %s: %s\n", flag, err.msg);
		return -1;
	}
	if (*ms <= 0) {
		fprintf(stderr, "profd run: %s: %s must be longer than 0\n", flag, v);
		return -1;
	}
	return 0;
}

int pd_cmd_run(int argc, char **argv)
{
	struct run_flags f;
	struct pd_err err = {0};
	struct daemon d = {0};
	struct pd_symbolizer *symbolizer = NULL;
	int rc = 1;
	pthread_mutex_init(&d.cfg_mu, NULL);
	d.main_thread = pthread_self();
	if (run_parse_flags(argc - 1, argv + 1, &f))
		return 2;
	d.config_file = f.config_file;
	d.multitenancy = f.multitenancy;
	/* allocations of 32 KiB and more get pages of their own: the head's sealed
	 * chunks (tens of KB each, kept until their block is written) then do not
	 * sit among the scrape workers' transient buffers, and their pages go back
	 * to the system when they are freed. bench/daemon.sh, 1,000 heap series after
	 * 121 scrapes (every chunk sealed at once): 118 MB RSS instead of 135 MB.
	 * Unless MALLOC_MMAP_THRESHOLD_ says otherwise. */
	if (!getenv("MALLOC_MMAP_THRESHOLD_"))
		mallopt(M_MMAP_THRESHOLD, 32 * 1024);
	if (pd_log_setup(f.log_level, f.log_format, &err)) {
		fprintf(stderr, "profd run: %s\n", err.msg);
		return 2;
	}
	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	int64_t size = 0;
	if (pd_config_parse_duration(f.retention_time, &o.retention_ms, &err)) {
		fprintf(stderr, "profd run: --storage.tsdb.retention.time: %s\n", err.msg);
		return 2;
	}
	if (pd_config_parse_size(f.retention_size, &size, &err)) {
		fprintf(stderr, "profd run: --storage.tsdb.retention.size: %s\n", err.msg);
		return 2;
	}
	if (o.retention_ms == 0)
		o.retention_ms = -1; /* 0 means forever, as in Prometheus */
	o.retention_bytes = (uint64_t)size;
	if (pd_config_parse_duration(f.max_future_time, &o.max_future_ms, &err)) {
		fprintf(stderr, "profd run: --storage.tsdb.max-future-time: %s\n", err.msg);
		return 2;
	}
	if (o.max_future_ms == 0)
		o.max_future_ms = -1; /* 0: no limit */
	if (pd_config_parse_duration(f.head_idle_timeout, &o.head_idle_ms, &err)) {
		fprintf(stderr, "profd run: --storage.tsdb.head-idle-timeout: %s\n", err.msg);
		return 2;
	}
	if (pd_config_parse_size(f.ch_spool_max, &size, &err) || size <= 0) {
		fprintf(stderr, "profd run: --storage.clickhouse.spool.max-size: %s\n",
			size <= 0 && !err.msg[0] ? "must be more than 0" : err.msg);
		return 2;
	}
	o.spool_max = (uint64_t)size;
	if (pd_config_parse_size(f.max_response_memory, &size, &err) || size <= 0) {
		fprintf(stderr, "profd run: --web.max-response-memory: %s\n",
			size <= 0 && !err.msg[0] ? "must be more than 0" : err.msg);
		return 2;
	}
	size_t max_response_memory = (size_t)size;
	if (strcmp(f.value_encoding, "1") != 0 && strcmp(f.value_encoding, "2") != 0) {
		fprintf(stderr, "profd run: --storage.tsdb.value-encoding: %s is not 1 or 2\n",
			f.value_encoding);
		return 2;
	}
	o.value_encoding = f.value_encoding[0] - '0';
	{
		char *end;
		errno = 0;
		unsigned long long n = strtoull(f.max_series, &end, 10);
		if (!f.max_series[0] || *end || errno || f.max_series[0] == '-') {
			fprintf(stderr,
				"profd run: --storage.tsdb.max-series: %s is not a whole number "
				"(0: no limit)\n",
				f.max_series);
			return 2;
		}
		o.max_series = n;
	}
	unsigned max_conns, max_conns_client;
	int64_t header_timeout_ms, read_timeout_ms;
	if (parse_count("--web.max-connections", f.max_connections, 100000, &max_conns) ||
	    parse_count("--web.max-connections-per-client", f.max_connections_per_client, 100000,
			&max_conns_client) ||
	    parse_timeout("--web.read-header-timeout", f.read_header_timeout, &header_timeout_ms) ||
	    parse_timeout("--web.read-timeout", f.read_timeout, &read_timeout_ms))
		return 2;
	unsigned query_max_samples, query_max_nodes;
	int64_t query_timeout_ms, query_lookback_ms;
	if (parse_count("--query.max-flamegraph-nodes", f.query_max_flamegraph_nodes, 10000000u,
			&query_max_nodes) ||
	    parse_timeout("--query.timeout", f.query_timeout, &query_timeout_ms) ||
	    parse_count("--query.max-samples", f.query_max_samples, 2000000000u,
			&query_max_samples) ||
	    parse_timeout("--query.lookback-delta", f.query_lookback_delta, &query_lookback_ms))
		return 2;
	int64_t cg_timeout_ms, cg_max_memory;
	unsigned cg_max_concurrency;
	if (parse_timeout("--callgraph.timeout", f.cg_timeout, &cg_timeout_ms) ||
	    parse_count("--callgraph.max-concurrency", f.cg_max_concurrency, 1000,
			&cg_max_concurrency))
		return 2;
	if (pd_config_parse_size(f.cg_max_memory, &cg_max_memory, &err) || cg_max_memory < (1 << 20)) {
		fprintf(stderr, "profd run: --callgraph.max-memory: %s\n",
			err.msg[0] ? err.msg : "must be at least 1MB");
		return 2;
	}
	unsigned max_pushes, query_conc, gzip_ratio, max_samples, max_sample_labels;
	int64_t decoded_size = 0;
	if (parse_count("--web.max-concurrent-pushes", f.max_concurrent_pushes, 100000, &max_pushes) ||
	    parse_count("--query.max-concurrency", f.query_max_concurrency, 100000, &query_conc) ||
	    parse_count("--storage.tsdb.max-profile-gzip-ratio", f.max_profile_gzip_ratio, 1000000,
			&gzip_ratio) ||
	    parse_count("--storage.tsdb.max-profile-samples", f.max_profile_samples, 2000000000u,
			&max_samples) ||
	    parse_count("--storage.tsdb.max-profile-sample-labels", f.max_profile_sample_labels,
			2000000000u, &max_sample_labels))
		return 2;
	unsigned in_depth, in_labels, in_name_len, in_value_len, in_symbol_len, in_profiles,
		in_json_depth;
	int64_t push_body = 0;
	if (parse_count("--ingest.max-stack-depth", f.ingest_max_stack_depth, 1000000, &in_depth) ||
	    parse_count("--ingest.max-labels-per-series", f.ingest_max_labels, 64, &in_labels) ||
	    parse_count("--ingest.max-label-name-length", f.ingest_max_label_name_len, 1 << 20,
			&in_name_len) ||
	    parse_count("--ingest.max-label-value-length", f.ingest_max_label_value_len, 1 << 20,
			&in_value_len) ||
	    parse_count("--ingest.max-symbol-length", f.ingest_max_symbol_len, 1 << 24,
			&in_symbol_len) ||
	    parse_count("--ingest.max-profiles-per-request", f.ingest_max_profiles, 10000000,
			&in_profiles) ||
	    parse_count("--ingest.max-json-depth", f.ingest_max_json_depth, 10000, &in_json_depth))
		return 2;
	unsigned legacy_depth, legacy_line, legacy_maps;
	if (parse_count("--legacy-max-stack-depth", f.legacy_max_depth, 1000000, &legacy_depth) ||
	    parse_count("--legacy-max-line", f.legacy_max_line, 1u << 30, &legacy_line) ||
	    parse_count("--legacy-max-maps", f.legacy_max_maps, 10000000, &legacy_maps))
		return 2;
	int64_t json_size = 0, request_memory = 0;
	if (pd_config_parse_size(f.ingest_max_json_size, &json_size, &err) || json_size <= 0) {
		fprintf(stderr, "profd run: --ingest.max-json-size: %s\n",
			json_size <= 0 && !err.msg[0] ? "must be more than 0" : err.msg);
		return 2;
	}
	if (pd_config_parse_size(f.ingest_max_request_memory, &request_memory, &err) ||
	    request_memory < (1 << 20)) {
		fprintf(stderr, "profd run: --ingest.max-request-memory: %s\n",
			!err.msg[0] ? "must be at least 1MB" : err.msg);
		return 2;
	}
	int64_t debuginfo_size = 0;
	if (pd_config_parse_size(f.max_debuginfo_size, &debuginfo_size, &err) ||
	    debuginfo_size <= 0) {
		fprintf(stderr, "profd run: --web.max-debuginfo-size: %s\n",
			debuginfo_size <= 0 && !err.msg[0] ? "must be more than 0" : err.msg);
		return 2;
	}
	int64_t debuginfo_total = 0;
	if (pd_config_parse_size(f.max_debuginfo_total, &debuginfo_total, &err) ||
	    debuginfo_total <= 0) {
		fprintf(stderr, "profd run: --web.max-debuginfo-total-size: %s\n",
			debuginfo_total <= 0 && !err.msg[0] ? "must be more than 0" : err.msg);
		return 2;
	}
	if (pd_config_parse_size(f.max_push_body, &push_body, &err) || push_body <= 0) {
		fprintf(stderr, "profd run: --web.max-push-body: %s\n",
			push_body <= 0 && !err.msg[0] ? "must be more than 0" : err.msg);
		return 2;
	}
	if (pd_config_parse_size(f.max_profile_decoded_size, &decoded_size, &err) ||
	    decoded_size <= 0) {
		fprintf(stderr, "profd run: --storage.tsdb.max-profile-decoded-size: %s\n",
			decoded_size <= 0 && !err.msg[0] ? "must be more than 0" : err.msg);
		return 2;
	}
	if (f.dns_server[0] && pd_discovery_dns_server_check(f.dns_server, &err)) {
		fprintf(stderr, "profd run: --discovery.dns.server: %s\n", err.msg);
		return 2;
	}
	/* as Prometheus: the external URL from the hostname and port unless given; the
	 * route prefix from its path unless given */
	char *external_url = NULL, *route_prefix = NULL;
	if (pd_api_external_url(f.external_url, f.listen_address, &external_url, &err) ||
	    pd_api_route_prefix(f.route_prefix, external_url, &route_prefix, &err)) {
		fprintf(stderr, "profd run: %s\n", err.msg);
		free(external_url);
		return 2;
	}

	/* signals are taken by this thread only: block them before any thread starts */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (f.web_config_file[0]) {
		/* checked before anything starts, as Prometheus does */
		struct pd_web_config *wc;
		struct pd_err werr = {0};
		int bad = pd_web_config_load_file(f.web_config_file, &wc, &werr);
		if (!bad) {
			bad = pd_web_config_check_files(wc, &werr);
			pd_web_config_destroy(wc);
		}
		if (bad) {
			pd_log_error("main", "--web.config.file is not usable", "err=%s", werr.msg);
			free(external_url);
			free(route_prefix);
			return 1;
		}
	}
	if (pd_config_load_file(f.config_file, &d.cfg, &err)) {
		pd_log_error("main", "loading the configuration failed", "err=%s", err.msg);
		free(external_url);
		free(route_prefix);
		return 1;
	}
	for (size_t i = 0; i < d.cfg->nwarnings; i++)
		pd_log_warn("config", "configuration warning", "warning=%s", d.cfg->warnings[i]);
	if (f.ch_url[0]) {
		/* the schema is created (or migrated) before anything is scraped */
		struct pd_clickhouse_opts co = {
		    .url = f.ch_url,
		    .database = f.ch_database,
		    .credentials_file = f.ch_credentials_file[0] ? f.ch_credentials_file : NULL,
		    .cluster = f.ch_cluster[0] ? f.ch_cluster : NULL,
		    .nodes = f.ch_cluster_nodes,
		};
		if (pd_clickhouse_create(&d.ch, &co, &err)) {
			pd_log_error("clickhouse", "ClickHouse is not usable", "url=%s err=%s",
			             f.ch_url, err.msg);
			goto out;
		}
		int src = pd_clickhouse_schema_create(d.ch, &err);
		if (src == PD_EUNAVAIL) {
			/* not answering now: profiles are spooled in the WAL, and the
			 * shipper creates the schema before its first insert */
			o.sink_pending = 1;
			pd_log_warn("clickhouse",
			            "ClickHouse does not answer; profiles are spooled in the WAL "
			            "until it does",
			            "url=%s err=%s", f.ch_url, err.msg);
		} else if (src) {
			/* an answer that refuses: a newer schema, credentials, the database */
			pd_log_error("clickhouse", "ClickHouse is not usable", "url=%s err=%s",
			             f.ch_url, err.msg);
			goto out;
		}
		if (pd_clickhouse_sink_create(&d.ch_sink, d.ch, &err)) {
			pd_log_error("clickhouse", "ClickHouse is not usable", "url=%s err=%s",
			             f.ch_url, err.msg);
			goto out;
		}
		o.sink = d.ch_sink;
		if (pd_url_has_password(f.ch_url) || pd_url_has_password(f.ch_cluster_nodes))
			pd_log_warn("clickhouse",
			            "a password in a ClickHouse URL can be read from the process list "
			            "by every user of the machine; give it in "
			            "--storage.clickhouse.credentials-file instead",
			            "url=%s", f.ch_url);
		/* the client has its copy: ps and /proc/PID/cmdline show x for each of
		 * the password's bytes from now on */
		for (int i = 1; i < argc; i++)
			pd_url_passwords_blank(argv[i]);
		pd_log_info("clickhouse", "profiles are kept in ClickHouse",
		            "url=%s database=%s cluster=%s", f.ch_url,
		            pd_clickhouse_database(d.ch), f.ch_cluster);
	}
	if (pd_tsdb_open(&d.db, f.storage_path, &o, &err)) {
		pd_log_error("tsdb", "opening the store failed", "err=%s", err.msg);
		goto out;
	}
	d.st = pd_tsdb_storage(d.db);
	if (d.ch) {
		if (pd_clickhouse_storage_create(&d.chst, d.ch, d.st,
		                                 o.max_profile ? o.max_profile : PD_TSDB_DEFAULT_MAX_PROFILE,
		                                 &err)) {
			pd_log_error("clickhouse", "ClickHouse is not usable", "err=%s", err.msg);
			goto out;
		}
		d.st = d.chst;
	}
	struct pd_storage_stats st;
	pd_tsdb_stats(d.db, &st);
	if (st.wal_repaired)
		pd_log_warn("tsdb", "WAL repaired", "detail=%s", st.wal_repair);
	if (st.blocks_damaged || st.wal_damaged_records)
		pd_log_warn("tsdb", "damage found at open; the rest is served",
		            "blocks_set_aside=%llu damaged_dir=%s/%s wal_records_skipped=%llu "
		            "wal_bytes_skipped=%llu",
		            (unsigned long long)st.blocks_damaged, f.storage_path,
		            PD_TSDB_DAMAGED_DIR, (unsigned long long)st.wal_damaged_records,
		            (unsigned long long)st.wal_damaged_bytes);
	pd_log_info("tsdb", "store opened", "path=%s blocks=%llu head_series=%llu", f.storage_path,
	            (unsigned long long)st.blocks, (unsigned long long)st.head_series);
	struct pd_discovery_options dopts = {.dns_server = f.dns_server};
	struct pd_scrape_manager_opts smo = {.max_ratio = gzip_ratio,
					     .max_memory = (size_t)decoded_size,
					     .max_samples = max_samples,
					     .max_sample_labels = max_sample_labels,
					     .legacy_max_depth = legacy_depth,
					     .legacy_max_line = legacy_line,
					     .legacy_max_maps = legacy_maps};
	if (pd_scrape_manager_create(&d.scrape, d.st, &smo, &err) ||
	    pd_discovery_manager_create(&d.disc, run_on_groups, &d, &dopts, &err)) {
		pd_log_error("main", "starting failed", "err=%s", err.msg);
		goto out;
	}
	if (run_apply_config(&d, d.cfg, &err)) {
		pd_log_error("main", "applying the configuration failed", "err=%s", err.msg);
		goto out;
	}
	const char *fn[] = {"config.file",	"storage.tsdb.path", "storage.tsdb.retention.time",
			    "storage.tsdb.retention.size", "web.listen-address", "log.level",
			    "log.format", "web.ui-dir", "storage.tsdb.value-encoding",
			    "web.max-connections", "web.max-connections-per-client",
			    "web.read-header-timeout", "web.read-timeout", "web.config.file",
			    "web.enable-lifecycle", "web.enable-push", "web.external-url",
			    "web.route-prefix", "web.enable-admin-api", "query.timeout",
			    "query.max-samples", "query.lookback-delta", "discovery.dns.server",
			    "storage.clickhouse.url", "storage.clickhouse.database",
			    "storage.clickhouse.credentials-file", "storage.clickhouse.cluster",
			    "storage.clickhouse.spool.max-size", "storage.clickhouse.cluster-nodes",
			    "callgraph.timeout", "callgraph.max-memory", "callgraph.max-concurrency",
			    "storage.tsdb.max-series",
			    "web.max-concurrent-pushes", "query.max-concurrency",
			    "storage.tsdb.max-profile-gzip-ratio", "storage.tsdb.max-profile-decoded-size",
			    "storage.tsdb.max-profile-samples", "storage.tsdb.max-profile-sample-labels",
			    "web.max-response-memory",
			    "storage.tsdb.max-future-time", "web.max-push-body",
			    "storage.tsdb.head-idle-timeout",
			    "ingest.max-stack-depth", "ingest.max-labels-per-series",
			    "ingest.max-label-name-length", "ingest.max-label-value-length",
			    "ingest.max-symbol-length", "ingest.max-profiles-per-request",
			    "ingest.max-json-depth", "ingest.max-json-size",
			    "ingest.max-request-memory", "web.max-debuginfo-size",
			    "symbolizer.enabled", "symbolizer.debug-dirs", "symbolizer.debuginfod-urls",
			    "symbolizer.timeout", "symbolizer.cache-size",
			    "symbolizer.debuginfod-timeout", "symbolizer.max-download-size",
			    "symbolizer.workers", "symbolizer.mapping-files",
			    "query.max-flamegraph-nodes", "symbolizer.max-open-files",
			    "legacy-max-stack-depth", "legacy-max-line", "legacy-max-maps",
			    "web.max-debuginfo-total-size", "auth.multitenancy-enabled",
			    "symbolizer.max-build-ids"};
	const char *fv[] = {f.config_file,    f.storage_path, f.retention_time, f.retention_size,
			    f.listen_address, f.log_level,    f.log_format,     f.ui_dir,
			    f.value_encoding, f.max_connections, f.max_connections_per_client,
			    f.read_header_timeout, f.read_timeout, f.web_config_file,
			    f.enable_lifecycle ? "true" : "false", f.enable_push ? "true" : "false",
			    external_url, route_prefix, f.enable_admin_api ? "true" : "false",
			    f.query_timeout, f.query_max_samples, f.query_lookback_delta,
			    f.dns_server, f.ch_url, f.ch_database, f.ch_credentials_file,
			    f.ch_cluster, f.ch_spool_max, f.ch_cluster_nodes, f.cg_timeout,
			    f.cg_max_memory, f.cg_max_concurrency, f.max_series,
			    f.max_concurrent_pushes, f.query_max_concurrency, f.max_profile_gzip_ratio,
			    f.max_profile_decoded_size, f.max_profile_samples,
			    f.max_profile_sample_labels,
			    f.max_response_memory, f.max_future_time, f.max_push_body,
			    f.head_idle_timeout,
			    f.ingest_max_stack_depth, f.ingest_max_labels,
			    f.ingest_max_label_name_len, f.ingest_max_label_value_len,
			    f.ingest_max_symbol_len, f.ingest_max_profiles,
			    f.ingest_max_json_depth, f.ingest_max_json_size,
			    f.ingest_max_request_memory, f.max_debuginfo_size,
			    f.sym.enabled ? "true" : "false", f.sym.dirs_joined,
			    f.sym.debuginfod_urls ? f.sym.debuginfod_urls : "", f.sym.timeout,
			    f.sym.cache_size, f.sym.download_timeout, f.sym.max_download,
			    f.sym.workers, f.sym.mapping_files ? "true" : "false",
			    f.query_max_flamegraph_nodes, f.sym.max_open_files,
			    f.legacy_max_depth, f.legacy_max_line, f.legacy_max_maps,
			    f.max_debuginfo_total, f.multitenancy ? "true" : "false",
			    f.sym.max_build_ids};
	struct pd_api_opts ao;
	pd_api_opts_init(&ao);
	ao.listen_address = f.listen_address;
	ao.max_connections = max_conns;
	ao.max_connections_per_client = max_conns_client;
	ao.max_response_memory = max_response_memory;
	ao.read_header_timeout_ms = header_timeout_ms;
	ao.read_timeout_ms = read_timeout_ms;
	ao.web_config_file = f.web_config_file;
	ao.query_timeout_ms = query_timeout_ms;
	ao.query_max_samples = query_max_samples;
	ao.querier_max_nodes = query_max_nodes;
	ao.query_lookback_ms = query_lookback_ms;
	ao.callgraph_timeout_ms = cg_timeout_ms;
	ao.callgraph_max_memory = (uint64_t)cg_max_memory;
	ao.callgraph_max_concurrency = cg_max_concurrency;
	ao.max_concurrent_pushes = max_pushes;
	ao.max_concurrent_queries = query_conc;
	ao.push_max_ratio = gzip_ratio;
	ao.push_max_memory = (size_t)decoded_size;
	ao.push_max_samples = max_samples;
	ao.push_max_sample_labels = max_sample_labels;
	ao.max_push_body = (size_t)push_body;
	ao.max_debuginfo_size = (size_t)debuginfo_size;
	ao.max_debuginfo_total = (uint64_t)debuginfo_total;
	ao.ingest = (struct pd_ingest_limits){.max_stack_depth = in_depth,
					      .max_labels = in_labels,
					      .max_label_name_len = in_name_len,
					      .max_label_value_len = in_value_len,
					      .max_symbol_len = in_symbol_len,
					      .max_profiles = in_profiles,
					      .max_json_depth = in_json_depth,
					      .max_json_size = (size_t)json_size,
					      .max_request_memory = (size_t)request_memory,
					      .legacy_max_depth = legacy_depth,
					      .legacy_max_line = legacy_line,
					      .legacy_max_maps = legacy_maps};
	ao.db = d.st;
	ao.scrape = d.scrape;
	ao.discovery = d.disc;
	if (f.enable_lifecycle) {
		/* without it both answer 403; SIGHUP and SIGTERM work either way */
		ao.reload = run_reload_config;
		ao.reload_ctx = &d;
		ao.quit = request_quit;
		ao.quit_ctx = &d;
	}
	ao.push_disabled = !f.enable_push;
	ao.enable_admin_api = f.enable_admin_api;
	ao.multitenancy = f.multitenancy;
	ao.config_yaml = run_render_config;
	ao.config_ctx = &d;
	ao.flag_names = fn;
	ao.flag_values = fv;
	ao.nflags = sizeof(fn) / sizeof(fn[0]);
	ao.version = PD_VERSION;
	ao.route_prefix = route_prefix;
	if (run_sym_start(&f.sym, f.storage_path, &symbolizer, &ao.symbolize_timeout_ms))
		goto out;
	ao.symbolizer = symbolizer;
	if (pd_webui_create(f.ui_dir[0] ? f.ui_dir : NULL, &d.ui, &err) == 0) {
		ao.ui = pd_webui_serve;
		ao.ui_ctx = d.ui;
		/* the UI's absolute links go under the external URL only when one was
		 * given: without it they are built from the address in the browser, which
		 * a port-forward or a proxy makes other than http://<hostname>:<port> */
		const char *links = f.external_url && *f.external_url ? external_url : NULL;
		if (pd_webui_set_links(d.ui, route_prefix, links, &err)) {
			pd_log_error("main", "the web UI is not usable", "err=%s", err.msg);
			goto out;
		}
		if (f.ui_dir[0])
			pd_log_info("web", "serving the web UI from a directory", "dir=%s",
			            f.ui_dir);
	} else if (f.ui_dir[0]) {
		pd_log_error("main", "--web.ui-dir is not usable", "err=%s", err.msg);
		goto out;
	} else {
		pd_log_warn("web", "no web UI; / lists the API endpoints", "reason=%s", err.msg);
	}
	/* uploaded debug files, where symbolization looks first */
	size_t sp_len = strlen(f.storage_path);
	while (sp_len > 1 && f.storage_path[sp_len - 1] == '/')
		sp_len--;
	size_t dd_size = sp_len + sizeof("/" PD_API_DEBUGINFO_SUBDIR);
	char *debuginfo_dir = malloc(dd_size);
	if (debuginfo_dir)
		snprintf(debuginfo_dir, dd_size, "%.*s/%s", (int)sp_len, f.storage_path,
			 PD_API_DEBUGINFO_SUBDIR);
	ao.debuginfo_dir = debuginfo_dir;
	int api_rc = pd_api_start(&d.api, &ao, &err);
	free(debuginfo_dir); /* copied by pd_api_start */
	if (api_rc) {
		pd_log_error("main", "starting the HTTP server failed", "err=%s", err.msg);
		goto out;
	}
	pd_log_info("main", "profd started", "scrape_configs=%zu config_file=%s address=%s port=%u",
	            d.cfg->nscrape_configs, f.config_file, f.listen_address, pd_api_port(d.api));
	if (strcmp(route_prefix, "/") != 0)
		pd_log_info("main", "serving every route under the route prefix",
		            "route_prefix=%s external_url=%s", route_prefix, external_url);

	int64_t last_flush = mono_ms(), last_trim = mono_ms();
	for (;;) {
		struct timespec tick = {1, 0};
		int sig = sigtimedwait(&sigs, NULL, &tick);
		if (sig == SIGTERM && __atomic_load_n(&d.quit, __ATOMIC_ACQUIRE)) {
			pd_log_info("main",
				    "received a termination request via /-/quit, shutting down");
			break;
		}
		if (sig == SIGTERM || sig == SIGINT) {
			pd_log_info("main", "received a signal, shutting down", "signal=%s",
			            sig == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		}
		if (sig == SIGHUP)
			pd_api_record_reload(d.api, run_reload_config(&d, &err) == 0);
		run_log_discovery_errors(&d);
		if (mono_ms() - last_flush >= 60000) {
			if (pd_tsdb_flush(d.db, 0, &err))
				pd_log_error("tsdb", "persisting the head failed", "err=%s",
				             err.msg);
			last_flush = mono_ms();
		}
		if (mono_ms() - last_trim >= 30000) {
			/* hand the allocator's free pages back to the system: the scrape
			 * workers' transient buffers (bodies, decoded profiles) are freed
			 * among the head's long-lived ones and leave whole pages free that
			 * glibc would otherwise keep */
			malloc_trim(0);
			last_trim = mono_ms();
		}
	}
	rc = 0;
out:
	/* the API borrows the store and the scrape manager: it stops first; then
	 * discovery (it feeds the scrape manager), scraping, and the store */
	if (d.api) {
		pd_api_set_ready(d.api, 0);
		pd_api_stop(d.api);
	}
	pd_webui_destroy(d.ui);
	pd_symbolizer_destroy(symbolizer); /* after the API, which borrows it */
	free(d.sd_seen);
	pd_discovery_manager_destroy(d.disc);
	pd_scrape_manager_destroy(d.scrape);
	pd_clickhouse_storage_destroy(d.chst);
	pd_tsdb_close(d.db);
	pd_clickhouse_sink_destroy(d.ch_sink); /* after the store, which borrows it */
	pd_clickhouse_destroy(d.ch);           /* after the sink and the storage */
	pd_config_destroy(d.cfg);
	pthread_mutex_destroy(&d.cfg_mu);
	free(external_url);
	free(route_prefix);
	if (rc == 0)
		pd_log_info("main", "stopped");
	return rc;
}
