/* run_int.h: what profd run's files share (run_cmd.c: start-up, the main loop and
 * shutdown; run_flags.c: the flags and their usage text; run_config.c: applying and
 * reloading the configuration): the flags as parsed and the daemon's state,
 * run_-prefixed. */
#ifndef PROFD_RUN_INT_H
#define PROFD_RUN_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "profd/config.h"
#include "profd/discovery.h"
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
	const char *head_idle_timeout;  /* a series idle this long leaves the head */
};

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

/* Parses profd run's arguments (after the command name) into f, with the defaults
 * for what they leave out; --help prints the usage and exits. 0, or -1 after
 * printing why (run_flags.c). */
int run_parse_flags(int argc, char **argv, struct run_flags *f);

/* Logs each failed discovery refresh once (run_config.c). */
void run_log_discovery_errors(struct daemon *d);
/* Discovery's groups of a pool, handed to the scrape manager. */
void run_on_groups(void *ctx, const char *pool, const struct pd_target_group *groups, size_t n);
/* Applies cfg to the scrape manager and discovery; cfg must stay alive until the
 * next apply returns. */
int run_apply_config(struct daemon *d, const struct pd_config *cfg, struct pd_err *err);
/* The running configuration, rendered (malloc'd; NULL on failure). */
char *run_render_config(void *ctx);
/* Loads the configuration file again and applies it; a configuration with an error
 * is refused and the running one stays. */
int run_reload_config(void *ctx, struct pd_err *err);

#endif
