/* run_flags.c: profd run's command line: its usage text and the parsing of its
 * flags into struct run_flags, the values as given (pd_cmd_run checks them),
 * boolean flags in Prometheus's forms (--name, --no-name, --name=true|false) and
 * the --symbolizer.* flags through run_symbolizer.c. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/clickhouse.h"
#include "run_int.h"
#include "run_symbolizer.h"

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
		"  --storage.tsdb.head-idle-timeout=DUR  write a series with no sample for this\n"
		"                                      long to a block and take it out of the head\n"
		"                                      (default 5m; 0: keep it until the head's cut)\n"
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

int run_parse_flags(int argc, char **argv, struct run_flags *f)
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
				"10GB" /* PD_API_DEFAULT_MAX_DEBUGINFO_TOTAL */, 0,
				"5m" /* PD_TSDB_DEFAULT_HEAD_IDLE_MS */};
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
		else if (IS("--storage.tsdb.head-idle-timeout"))
			f->head_idle_timeout = v;
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
