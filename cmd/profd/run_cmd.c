/* run_cmd.c: `profd run`, the daemon: loads the configuration, opens the store,
 * discovers targets and scrapes them, persists and compacts the store on a timer,
 * reloads the configuration on SIGHUP (a bad one is refused and the old one keeps
 * running), and shuts down cleanly on SIGTERM or SIGINT (or POST /-/quit with
 * --web.enable-lifecycle). */
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
#include "run_symbolizer.h"

struct run_flags {
	const char *config_file;
	const char *storage_path;
	const char *listen_address;
	const char *retention_time;
	const char *retention_size;
	const char *log_level;
	const char *log_format;
	const char *ui_dir; /* "": the embedded UI */
	const char *value_encoding;
	const char *max_connections;
	const char *max_connections_per_client;
	const char *read_header_timeout;
	const char *read_timeout;
	const char *web_config_file; /* "": none */
	int enable_lifecycle; /* /-/reload and /-/quit; off by default, as in Prometheus */
	int enable_push;      /* POST /api/v1/profiles; on by default */
	const char *external_url; /* "": http://<hostname>:<port>/ */
	const char *route_prefix; /* "": the external URL's path */
	int enable_admin_api; /* the admin endpoints; off by default, as in Prometheus */
	const char *query_timeout;     /* PromQL under /prometheus, as Prometheus's --query.* */
	const char *query_max_samples;
	const char *query_lookback_delta;
	const char *dns_server; /* "": the servers of /etc/resolv.conf */
	const char *ch_url;     /* "": the local store; else profiles go to ClickHouse */
	const char *ch_database;
	const char *ch_credentials_file;
	const char *ch_cluster; /* "": one server (or tables made by hand) */
	const char *ch_spool_max; /* size of the spool of profiles ClickHouse has not taken */
	const char *ch_cluster_nodes; /* the cluster's other nodes' URLs, comma-separated */
	const char *cg_timeout;         /* report=svg layouts: deadline of each */
	const char *cg_max_memory;      /* address space each may add */
	const char *cg_max_concurrency; /* running at once */
	const char *max_series; /* series the head holds at most; "0": no limit */
	const char *max_concurrent_pushes; /* POST /api/v1/profiles at once */
	const char *query_max_concurrency; /* queries at once (both APIs) */
	/* what a scraped or pushed profile may be to be stored */
	const char *max_profile_gzip_ratio;
	const char *max_profile_decoded_size;
	const char *max_profile_samples;
	const char *max_profile_sample_labels;
	const char *max_response_memory; /* responses held for clients, all connections */
	const char *max_future_time;    /* how far after the clock a sample may be dated */
	/* pushes: the request body, and what /ingest, Connect and OTLP pushes may make */
	const char *max_push_body;
	const char *ingest_max_stack_depth;
	const char *ingest_max_labels;
	const char *ingest_max_label_name_len;
	const char *ingest_max_label_value_len;
	const char *ingest_max_symbol_len;
	const char *ingest_max_profiles;
	const char *ingest_max_json_depth;
	const char *ingest_max_json_size;
	const char *ingest_max_request_memory;
	const char *max_debuginfo_size; /* an uploaded debug file, after gunzip */
	struct run_sym_flags sym; /* --symbolizer.* (run_symbolizer.c) */
	const char *query_max_flamegraph_nodes; /* the query API (docs/grafana.md) */
	/* the legacy readers' limits on scraped and pushed legacy profiles, as
	 * profd pprof's flags of the same names */
	const char *legacy_max_depth, *legacy_max_line, *legacy_max_maps;
	const char *max_debuginfo_total; /* the uploaded debug files together */
	int multitenancy; /* --auth.multitenancy-enabled: X-Scope-OrgID tenants */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: profd run [flags]\n"
		"\n"
		"Scrapes the pprof endpoints of the configured targets and stores the profiles.\n"
		"\n"
		"flags:\n"
		"  --config.file=FILE                  configuration file (default profd.yml)\n"
		"  --storage.tsdb.path=DIR             where profiles are stored (default data/)\n"
		"  --storage.tsdb.retention.time=DUR   how long to keep profiles (default 15d)\n"
		"  --storage.tsdb.retention.size=SIZE  most bytes of blocks to keep, e.g. 10GB\n"
		"                                      (default 0: no limit)\n"
		"  --storage.tsdb.max-series=N         series the head holds at most; a new series\n"
		"                                      past it is refused (default 1000000; 0: no limit)\n"
		"  --storage.tsdb.max-future-time=DUR  refuse samples dated more than this after\n"
		"                                      the clock (default 10m; 0: no limit)\n"
		"  --storage.tsdb.value-encoding=N     encoding of new value chunks: 2 (columnar,\n"
		"                                      the default) or 1 (raw profiles in zstd groups)\n"
		"  --web.listen-address=ADDR           address of the HTTP API and UI (default :10902)\n"
		"  --web.ui-dir=DIR                    serve the web UI from DIR instead of the\n"
		"                                      copy built into profd (for UI development)\n"
		"  --web.max-connections=N             HTTP connections open at once (default 256)\n"
		"  --web.max-connections-per-client=N  of those, from one IP address (default 64);\n"
		"                                      more get a small reserve that serves only\n"
		"                                      /-/healthy, /-/ready and /metrics\n"
		"  --web.max-response-memory=SIZE      bytes of responses held at once, being\n"
		"                                      built or not yet read by their clients;\n"
		"                                      past it a response is refused with 503\n"
		"                                      (default 1GB)\n"
		"  --web.read-header-timeout=DUR       time a connection has to send a request's\n"
		"                                      headers (default 10s)\n"
		"  --web.read-timeout=DUR              time it has to send headers and body\n"
		"                                      (default 1m)\n"
		"  --web.config.file=FILE              TLS, basic auth and response headers, in\n"
		"                                      Prometheus's web configuration format\n"
		"                                      (read again for every connection)\n"
		"  --web.enable-lifecycle              serve POST /-/reload and POST /-/quit\n"
		"                                      (default off: they answer 403)\n"
		"  --[no-]web.enable-push              accept pushed profiles at POST\n"
		"                                      /api/v1/profiles (default on;\n"
		"                                      --no-web.enable-push refuses them with 404)\n"
		"  --web.external-url=URL              the URL under which profd is reachable from\n"
		"                                      outside (e.g. through a reverse proxy), for\n"
		"                                      links back to profd; its path, if any, is the\n"
		"                                      default route prefix (default\n"
		"                                      http://<hostname>:<port>/)\n"
		"  --web.route-prefix=PATH             prefix of every HTTP route (default: the\n"
		"                                      path of --web.external-url)\n"
		"  --web.enable-admin-api              enable the admin endpoints under\n"
		"                                      /api/v1/admin/tsdb/ (delete series, clean\n"
		"                                      tombstones, snapshots; default off)\n"
		"  --query.timeout=DUR                 longest a PromQL query under /prometheus\n"
		"                                      may run (default 2m)\n"
		"  --query.max-samples=N               samples one such query may hold in memory\n"
		"                                      (default 50000000)\n"
		"  --query.lookback-delta=DUR          how far back an instant selector looks for\n"
		"                                      a profile's total (default 5m)\n"
		"  --callgraph.timeout=DUR             longest one report=svg layout may take, by\n"
		"                                      the clock and in CPU time (default 10s)\n"
		"  --callgraph.max-memory=SIZE         address space one layout may add (default\n"
		"                                      1GB)\n"
		"  --callgraph.max-concurrency=N       layouts running at once; more are answered\n"
		"                                      503 (default 2)\n"
		"  --discovery.dns.server=IP:PORT      send every dns_sd_configs query to this DNS\n"
		"                                      server instead of those of /etc/resolv.conf\n"
		"                                      (a profd addition; default: resolv.conf)\n"
		"  --storage.clickhouse.url=URL        keep profiles in ClickHouse, at the URL of its\n"
		"                                      HTTP interface (http://HOST:8123/), instead\n"
		"                                      of the local blocks (docs/scale-out.md)\n"
		"  --storage.clickhouse.database=NAME  ClickHouse database of profd's tables\n"
		"                                      (default profd)\n"
		"  --storage.clickhouse.credentials-file=FILE\n"
		"                                      ClickHouse user on the first line, password\n"
		"                                      on the second (default: user default, no\n"
		"                                      password)\n"
		"  --storage.clickhouse.cluster=NAME   create the tables on every node of this\n"
		"                                      ClickHouse cluster, with Distributed tables\n"
		"                                      over them\n"
		"  --storage.clickhouse.spool.max-size=SIZE\n"
		"                                      most bytes of profiles kept in the WAL\n"
		"                                      while ClickHouse has not taken them; past\n"
		"                                      it new profiles are refused (default 1GB)\n"
		"  --storage.clickhouse.cluster-nodes=URL[,URL...]\n"
		"                                      HTTP URLs of the cluster's other nodes (all\n"
		"                                      of them; profd creates its tables and drops\n"
		"                                      old partitions on each)\n"
		"  --web.max-concurrent-pushes=N       pushes received or stored at once; more\n"
		"                                      get 429 with Retry-After (default 8)\n"
		"  --query.max-concurrency=N           queries (/api/v1/query, query_range and\n"
		"                                      /prometheus/api/v1/*) run at once; more\n"
		"                                      wait their turn (default 20)\n"
		"  --storage.tsdb.max-profile-gzip-ratio=N\n"
		"                                      a gzip body or profile, scraped or pushed,\n"
		"                                      may inflate to at most N times its size\n"
		"                                      (default 100)\n"
		"  --storage.tsdb.max-profile-decoded-size=SIZE\n"
		"                                      most memory a scraped or pushed profile may\n"
		"                                      take decoded (default 64MB)\n"
		"  --storage.tsdb.max-profile-samples=N\n"
		"                                      most samples in a scraped or pushed profile\n"
		"                                      (default 1000000)\n"
		"  --storage.tsdb.max-profile-sample-labels=N\n"
		"                                      most labels on one of its samples\n"
		"                                      (default 1024)\n"
		"  --web.max-push-body=SIZE            largest body of a push, to any of the push\n"
		"                                      endpoints, as sent (default 64MB)\n"
		"  --web.max-debuginfo-size=SIZE       largest debug file uploaded to PUT\n"
		"                                      /api/v1/debuginfo/<build-id>, after gunzip\n"
		"                                      (default 512MB)\n"
		"  --web.max-debuginfo-total-size=SIZE most bytes all uploaded debug files may\n"
		"                                      take together; an upload past it is\n"
		"                                      refused with 413 (default 10GB)\n"
		"  --ingest.max-stack-depth=N          most frames in one stack of a profile\n"
		"                                      pushed to /ingest, Push or OTLP (default 2048)\n"
		"  --ingest.max-labels-per-series=N    most labels of a series such a push names,\n"
		"                                      __name__ and service_name included (default 30)\n"
		"  --ingest.max-label-name-length=N    longest label name in bytes (default 1024)\n"
		"  --ingest.max-label-value-length=N   longest label value in bytes (default 2048)\n"
		"  --ingest.max-symbol-length=N        longest function or file name in bytes\n"
		"                                      (default 65535)\n"
		"  --ingest.max-profiles-per-request=N most profiles one push may turn into\n"
		"                                      (default 10000)\n"
		"  --ingest.max-json-depth=N           deepest nesting of a JSON push (default 64)\n"
		"  --ingest.max-json-size=SIZE         largest JSON body of a push, after gunzip\n"
		"                                      (default 16MB)\n"
		"  --ingest.max-request-memory=SIZE    most memory the profiles of one push may\n"
		"                                      hold before they are stored (default 512MB)\n"
		"  --query.max-flamegraph-nodes=N      flame graph nodes of one answer of the\n"
		"                                      query API for Grafana (querier.v1) at most\n"
		"                                      (default 16384)\n"
		"  --legacy-max-stack-depth=N          frames of one sample of a scraped or pushed\n"
		"                                      legacy profile (gperftools, Java, Go text;\n"
		"                                      default 4096)\n"
		"  --legacy-max-line=N                 bytes of one line of such a text profile\n"
		"                                      (default 1048576)\n"
		"  --legacy-max-maps=N                 its memory map entries kept (default 65536)\n"
		"  --auth.multitenancy-enabled         scope every write and query to the tenant\n"
		"                                      of its X-Scope-OrgID header (default off)\n"
		"  --log.level=LEVEL                   debug, info, warn or error (default info)\n"
		"  --log.format=FORMAT                 logfmt or json (default logfmt)\n");
	run_sym_usage(f);
}

/* Boolean flags, as Prometheus's: `--web.enable-lifecycle` sets one and
 * `--no-web.enable-lifecycle` clears it; `=true` and `=false` are taken too. They
 * never take the next argument as their value. a is the argument, nl the length
 * of its name, v what follows its `=` (or NULL). Returns 1 when a was a boolean
 * flag, 0 when it was not, -1 after printing why its value is bad. */
static int bool_flag(const char *a, size_t nl, const char *v, struct run_flags *f)
{
	static const struct {
		const char *name;
		size_t off;
	} flags[] = {
	    {"web.enable-lifecycle", offsetof(struct run_flags, enable_lifecycle)},
	    {"web.enable-push", offsetof(struct run_flags, enable_push)},
	    {"web.enable-admin-api", offsetof(struct run_flags, enable_admin_api)},
	    {"auth.multitenancy-enabled", offsetof(struct run_flags, multitenancy)},
	    {"symbolizer.enabled", offsetof(struct run_flags, sym.enabled)},
	    {"symbolizer.mapping-files", offsetof(struct run_flags, sym.mapping_files)},
	};
	if (nl < 3 || strncmp(a, "--", 2) != 0)
		return 0;
	int neg = nl > 5 && strncmp(a, "--no-", 5) == 0;
	const char *name = a + (neg ? 5 : 2);
	size_t n = nl - (neg ? 5 : 2);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (strlen(flags[i].name) != n || strncmp(name, flags[i].name, n) != 0)
			continue;
		int on = !neg;
		if (v && neg) {
			fprintf(stderr, "profd run: --no-%s takes no value\n", flags[i].name);
			return -1;
		}
		if (v && strcmp(v, "true") == 0)
			on = 1;
		else if (v && strcmp(v, "false") == 0)
			on = 0;
		else if (v) {
			fprintf(stderr, "profd run: --%s: %s is not true or false\n", flags[i].name,
				v);
			return -1;
		}
		*(int *)((char *)f + flags[i].off) = on;
		return 1;
	}
	return 0;
}

static int parse_flags(int argc, char **argv, struct run_flags *f)
{
	*f = (struct run_flags){"profd.yml", "data/", ":10902", "15d", "0", "info", "logfmt", "", "2",
				"256", "64", "10s", "1m", "", 0, 1, "", "", 0, "2m", "50000000", "5m", "",
				"", PD_CLICKHOUSE_DEFAULT_DATABASE, "", "", "1GB", "", "10s", "1GB", "2",
				"1000000" /* PD_TSDB_DEFAULT_MAX_SERIES */,
				"8", "20", "100", "64MB", "1000000", "1024", "1GB", "10m", "64MB",
				"2048", "30", "1024", "2048", "65535", "10000", "64", "16MB", "512MB",
				"512MB", {0}, "16384",
				/* PD_PPROF_LEGACY_MAX_{DEPTH,LINE,MAPS} */
				"4096", "1048576", "65536",
				"10GB" /* PD_API_DEFAULT_MAX_DEBUGINFO_TOTAL */, 0};
	run_sym_flags_init(&f->sym);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		}
		const char *eq = strchr(a, '=');
		size_t nl = eq ? (size_t)(eq - a) : strlen(a);
		int b = bool_flag(a, nl, eq ? eq + 1 : NULL, f);
		if (b < 0)
			return -1;
		if (b > 0)
			continue;
		if (strncmp(a, "--", 2) != 0) {
			int tf = strcmp(a, "true") == 0 || strcmp(a, "false") == 0;
			fprintf(stderr, "profd run: %s: unexpected argument%s\n", a,
				tf ? " (a boolean flag takes its value after =, as "
				     "--web.enable-lifecycle=true)"
				   : "");
			return -1;
		}
		const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
		if (!eq && v && strncmp(v, "--", 2) == 0)
			v = NULL; /* the next flag is not this one's value */
		else if (!eq && v)
			i++;
		if (!v) {
			fprintf(stderr, "profd run: %s: needs a value\n", a);
			return -1;
		}
#define IS(x) (nl == strlen(x) && strncmp(a, x, nl) == 0)
		int sy = run_sym_flag(&f->sym, a, nl, v);
		if (sy < 0)
			return -1;
		if (sy > 0)
			continue;
		if (IS("--config.file"))
			f->config_file = v;
		else if (IS("--storage.clickhouse.url"))
			f->ch_url = v;
		else if (IS("--storage.clickhouse.database"))
			f->ch_database = v;
		else if (IS("--storage.clickhouse.credentials-file"))
			f->ch_credentials_file = v;
		else if (IS("--storage.clickhouse.cluster"))
			f->ch_cluster = v;
		else if (IS("--storage.clickhouse.spool.max-size"))
			f->ch_spool_max = v;
		else if (IS("--storage.clickhouse.cluster-nodes"))
			f->ch_cluster_nodes = v;
		else if (IS("--storage.tsdb.path"))
			f->storage_path = v;
		else if (IS("--web.listen-address"))
			f->listen_address = v;
		else if (IS("--storage.tsdb.retention.time"))
			f->retention_time = v;
		else if (IS("--storage.tsdb.retention.size"))
			f->retention_size = v;
		else if (IS("--storage.tsdb.max-series"))
			f->max_series = v;
		else if (IS("--log.level"))
			f->log_level = v;
		else if (IS("--log.format"))
			f->log_format = v;
		else if (IS("--web.ui-dir"))
			f->ui_dir = v;
		else if (IS("--storage.tsdb.value-encoding"))
			f->value_encoding = v;
		else if (IS("--web.max-connections"))
			f->max_connections = v;
		else if (IS("--web.max-response-memory"))
			f->max_response_memory = v;
		else if (IS("--web.max-connections-per-client"))
			f->max_connections_per_client = v;
		else if (IS("--web.read-header-timeout"))
			f->read_header_timeout = v;
		else if (IS("--web.read-timeout"))
			f->read_timeout = v;
		else if (IS("--web.config.file"))
			f->web_config_file = v;
		else if (IS("--web.external-url"))
			f->external_url = v;
		else if (IS("--web.route-prefix"))
			f->route_prefix = v;
		else if (IS("--query.timeout"))
			f->query_timeout = v;
		else if (IS("--query.max-samples"))
			f->query_max_samples = v;
		else if (IS("--query.lookback-delta"))
			f->query_lookback_delta = v;
		else if (IS("--discovery.dns.server"))
			f->dns_server = v;
		else if (IS("--callgraph.timeout"))
			f->cg_timeout = v;
		else if (IS("--callgraph.max-memory"))
			f->cg_max_memory = v;
		else if (IS("--callgraph.max-concurrency"))
			f->cg_max_concurrency = v;
		else if (IS("--web.max-concurrent-pushes"))
			f->max_concurrent_pushes = v;
		else if (IS("--query.max-concurrency"))
			f->query_max_concurrency = v;
		else if (IS("--storage.tsdb.max-profile-gzip-ratio"))
			f->max_profile_gzip_ratio = v;
		else if (IS("--storage.tsdb.max-profile-decoded-size"))
			f->max_profile_decoded_size = v;
		else if (IS("--storage.tsdb.max-profile-samples"))
			f->max_profile_samples = v;
		else if (IS("--storage.tsdb.max-profile-sample-labels"))
			f->max_profile_sample_labels = v;
		else if (IS("--storage.tsdb.max-future-time"))
			f->max_future_time = v;
		else if (IS("--web.max-push-body"))
			f->max_push_body = v;
		else if (IS("--web.max-debuginfo-size"))
			f->max_debuginfo_size = v;
		else if (IS("--web.max-debuginfo-total-size"))
			f->max_debuginfo_total = v;
		else if (IS("--ingest.max-stack-depth"))
			f->ingest_max_stack_depth = v;
		else if (IS("--ingest.max-labels-per-series"))
			f->ingest_max_labels = v;
		else if (IS("--ingest.max-label-name-length"))
			f->ingest_max_label_name_len = v;
		else if (IS("--ingest.max-label-value-length"))
			f->ingest_max_label_value_len = v;
		else if (IS("--ingest.max-symbol-length"))
			f->ingest_max_symbol_len = v;
		else if (IS("--ingest.max-profiles-per-request"))
			f->ingest_max_profiles = v;
		else if (IS("--ingest.max-json-depth"))
			f->ingest_max_json_depth = v;
		else if (IS("--ingest.max-json-size"))
			f->ingest_max_json_size = v;
		else if (IS("--ingest.max-request-memory"))
			f->ingest_max_request_memory = v;
		else if (IS("--query.max-flamegraph-nodes"))
			f->query_max_flamegraph_nodes = v;
		else if (IS("--legacy-max-stack-depth"))
			f->legacy_max_depth = v;
		else if (IS("--legacy-max-line"))
			f->legacy_max_line = v;
		else if (IS("--legacy-max-maps"))
			f->legacy_max_maps = v;
		else {
			fprintf(stderr, "profd run: unknown flag %.*s (see profd run --help)\n", (int)nl, a);
			return -1;
		}
#undef IS
	}
	return 0;
}

struct daemon {
	pthread_mutex_t cfg_mu; /* guards cfg: swapped by reloads, rendered by the API */
	pthread_t main_thread;  /* takes the signals */
	int quit;               /* POST /-/quit was answered (atomic) */
	const char *config_file;
	struct pd_config *cfg;
	struct pd_clickhouse *ch; /* NULL: the local store only */
	struct pd_storage_sink *ch_sink; /* with ch: what the local store forwards to */
	struct pd_tsdb *db;             /* the local store (with ch: ClickHouse's spool) */
	struct pd_storage *chst;        /* with ch: ClickHouse as a storage */
	struct pd_storage *st;          /* what the scrape manager and the API use */
	struct pd_scrape_manager *scrape;
	struct pd_discovery_manager *disc;
	int multitenancy; /* scrape jobs' series carry their tenant */
	struct pd_api_server *api;
	struct pd_webui *ui;
	/* discovery refreshes already logged: provider name → refresh time */
	struct sd_seen {
		char name[32];
		int64_t refresh_ms;
	} *sd_seen;
	size_t nsd_seen;
};

/* Logs each failed discovery refresh once (a broken file_sd file, an http_sd URL
 * that fails), as Prometheus logs them; the last good targets stay in use. */
static void log_discovery_errors(struct daemon *d)
{
	pthread_mutex_lock(&d->cfg_mu);
	for (size_t i = 0; i < d->cfg->nscrape_configs; i++) {
		const char *pool = d->cfg->scrape_configs[i].job_name;
		struct pd_discovery_provider_status *st;
		size_t n;
		if (pd_discovery_manager_status(d->disc, pool, &st, &n, NULL))
			continue;
		for (size_t k = 0; k < n; k++) {
			size_t j = 0;
			while (j < d->nsd_seen && strcmp(d->sd_seen[j].name, st[k].name) != 0)
				j++;
			if (j == d->nsd_seen) {
				struct sd_seen *ns = realloc(d->sd_seen, (j + 1) * sizeof(*ns));
				if (!ns)
					break;
				d->sd_seen = ns;
				memcpy(ns[j].name, st[k].name, sizeof(ns[j].name));
				ns[j].refresh_ms = 0;
				d->nsd_seen++;
			}
			if (st[k].last_refresh_ms == d->sd_seen[j].refresh_ms)
				continue;
			d->sd_seen[j].refresh_ms = st[k].last_refresh_ms;
			if (st[k].last_error)
				pd_log_error(
				    "discovery",
				    "refreshing targets failed, keeping the last good ones",
				    "job=%s provider=%s err=%s", pool, st[k].name,
				    st[k].last_error);
		}
		pd_discovery_provider_status_free(st, n);
	}
	pthread_mutex_unlock(&d->cfg_mu);
}

static void on_groups(void *ctx, const char *pool, const struct pd_target_group *groups, size_t n)
{
	struct daemon *d = ctx;
	pd_scrape_manager_sync(d->scrape, pool, groups, n);
}

/* Applies cfg to the scrape manager and discovery; cfg must stay alive until the
 * next apply returns (the scrape manager borrows its relabel rules). */
static int apply_config(struct daemon *d, const struct pd_config *cfg, struct pd_err *err)
{
	size_t n = cfg->nscrape_configs;
	struct pd_scrape_pool_settings *ps = calloc(n ? n : 1, sizeof(*ps));
	struct pd_discovery_pool_config *dp = calloc(n ? n : 1, sizeof(*dp));
	int rc = 0;
	if (!ps || !dp) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		const struct pd_scrape_config *sc = &cfg->scrape_configs[i];
		struct pd_scrape_pool_settings *p = &ps[i];
		p->job_name = sc->job_name;
		p->scheme = sc->scheme;
		p->metrics_path = sc->metrics_path;
		p->nparams = sc->nparams;
		const char **pn = calloc(sc->nparams + 1, sizeof(char *));
		const char **pv = calloc(sc->nparams + 1, sizeof(char *));
		struct pd_scrape_profile_type *ty = calloc(sc->nprofiles + 1, sizeof(*ty));
		if (!pn || !pv || !ty) {
			free(pn);
			free(pv);
			free(ty);
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			break;
		}
		for (size_t k = 0; k < sc->nparams; k++) {
			pn[k] = sc->params[k].name;
			pv[k] = sc->params[k].nvalues ? sc->params[k].values[0] : "";
		}
		p->param_names = pn;
		p->param_values = pv;
		size_t nt = 0;
		for (size_t k = 0; k < sc->nprofiles; k++)
			if (sc->profiles[k].enabled)
				ty[nt++] = (struct pd_scrape_profile_type){sc->profiles[k].name, sc->profiles[k].path,
									   sc->profiles[k].seconds};
		p->types = ty;
		p->ntypes = nt;
		p->interval_ms = sc->scrape_interval_ms;
		p->timeout_ms = sc->scrape_timeout_ms;
		p->body_size_limit = sc->body_size_limit;
		p->target_limit = sc->target_limit;
		p->honor_labels = sc->honor_labels;
		if (d->multitenancy && sc->tenant && strcmp(sc->tenant, PD_TENANT_DEFAULT) != 0)
			p->tenant = sc->tenant;
		p->client = &sc->http_client;
		p->relabel = sc->relabel_rules;
		dp[i] = (struct pd_discovery_pool_config){
		    .name = sc->job_name,
		    .static_configs = sc->static_configs,
		    .nstatic = sc->nstatic_configs,
		    .file_configs = sc->file_sd_configs,
		    .nfile = sc->nfile_sd_configs,
		    .http_configs = sc->http_sd_configs,
		    .nhttp = sc->nhttp_sd_configs,
		    .dns_configs = sc->dns_sd_configs,
		    .ndns = sc->ndns_sd_configs,
		    .kubernetes_configs = sc->kubernetes_sd_configs,
		    .nkubernetes = sc->nkubernetes_sd_configs,
		};
	}
	if (!rc)
		rc = pd_scrape_manager_set_pools(d->scrape, ps, n, err);
	if (!rc)
		rc = pd_discovery_manager_set_pools(d->disc, dp, n, err);
out:
	for (size_t i = 0; ps && i < n; i++) {
		free((void *)ps[i].param_names);
		free((void *)ps[i].param_values);
		free((void *)ps[i].types);
	}
	free(ps);
	free(dp);
	return rc;
}

/* opts.config_yaml of the API: the running configuration, rendered. */
static char *render_config(void *ctx)
{
	struct daemon *d = ctx;
	struct pd_buf b;
	size_t n;
	pd_buf_init(&b, 64u << 20);
	pthread_mutex_lock(&d->cfg_mu);
	int rc = pd_config_render(d->cfg, &b);
	pthread_mutex_unlock(&d->cfg_mu);
	if (rc || pd_buf_append(&b, "", 1)) {
		pd_buf_fini(&b);
		return NULL;
	}
	return (char *)pd_buf_steal(&b, &n);
}

/* SIGHUP and POST /-/reload: a configuration with an error is refused and the
 * running one stays. */
static int reload_config(void *ctx, struct pd_err *err)
{
	struct daemon *d = ctx;
	struct pd_config *ncfg;
	pthread_mutex_lock(&d->cfg_mu);
	int rc = pd_config_load_file(d->config_file, &ncfg, err);
	if (!rc && (rc = apply_config(d, ncfg, err))) {
		/* part of it may be in use already: go back to the running one first */
		struct pd_err ignored;
		apply_config(d, d->cfg, &ignored);
		pd_config_destroy(ncfg);
	} else if (!rc) {
		pd_config_destroy(d->cfg);
		d->cfg = ncfg;
	}
	size_t njobs = d->cfg->nscrape_configs;
	pthread_mutex_unlock(&d->cfg_mu);
	if (rc)
		pd_log_error("config", "reload refused, the previous configuration stays", "err=%s",
		             err->msg);
	else
		pd_log_info("config", "configuration reloaded", "scrape_configs=%zu", njobs);
	return rc;
}

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
	if (parse_flags(argc - 1, argv + 1, &f))
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
	    pd_discovery_manager_create(&d.disc, on_groups, &d, &dopts, &err)) {
		pd_log_error("main", "starting failed", "err=%s", err.msg);
		goto out;
	}
	if (apply_config(&d, d.cfg, &err)) {
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
		ao.reload = reload_config;
		ao.reload_ctx = &d;
		ao.quit = request_quit;
		ao.quit_ctx = &d;
	}
	ao.push_disabled = !f.enable_push;
	ao.enable_admin_api = f.enable_admin_api;
	ao.multitenancy = f.multitenancy;
	ao.config_yaml = render_config;
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
			pd_api_record_reload(d.api, reload_config(&d, &err) == 0);
		log_discovery_errors(&d);
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
