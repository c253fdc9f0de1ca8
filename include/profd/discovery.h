/* discovery.h: service discovery: where targets come from. Each provider turns
 * its configuration into target groups, as Prometheus's discovery does: a group is
 * a list of targets (label sets, each with at least __address__) plus labels common
 * to the group, identified by a source string. Providers: static_configs,
 * file_sd_configs (JSON and YAML files, globs, inotify and refresh_interval,
 * __meta_filepath), http_sd_configs (url, refresh_interval, __meta_url).
 *
 * A manager runs every provider of every scrape pool on one background thread and
 * hands the latest full set of groups of a pool to a callback whenever it changes.
 * A provider that fails keeps its last good groups. */
#ifndef PROFD_DISCOVERY_H
#define PROFD_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "profd/labels.h"
#include "profd/util.h"

/* ---- configuration (filled by the config package) ------------------------- */

struct pd_discovery_static_config {
	const char **targets; /* host:port strings */
	size_t ntargets;
	struct pd_labels *labels; /* owned by the config; may be NULL */
};

struct pd_discovery_file_config {
	const char **files; /* paths; the last path element may hold * ? [..] globs */
	size_t nfiles;
	int64_t refresh_interval_ms; /* default 5m */
};

struct pd_discovery_http_config {
	const char *url;
	int64_t refresh_interval_ms; /* default 60s */
	/* HTTP client settings (auth, TLS, proxy) as for scraping */
	const struct pd_http_client_config *client; /* may be NULL */
};

/* HTTP client settings shared by scraping and http_sd (the config package fills
 * them from basic_auth, authorization, bearer_token[_file], tls_config, proxy_url,
 * follow_redirects). Strings may be NULL. */
struct pd_http_client_config {
	const char *basic_auth_username;
	const char *basic_auth_password;
	const char *basic_auth_password_file;
	const char *authorization_type;        /* default "Bearer" when credentials set */
	const char *authorization_credentials;
	const char *authorization_credentials_file;
	const char *tls_ca_file, *tls_cert_file, *tls_key_file, *tls_server_name;
	int tls_insecure_skip_verify;
	const char *proxy_url;
	int follow_redirects; /* default 1 */
};

/* ---- target groups ---------------------------------------------------------- */

struct pd_target_group {
	char *source;               /* e.g. "file:/etc/targets.json:0", "static:0" */
	struct pd_labels **targets; /* each with __address__, plus per-target labels */
	size_t ntargets;
	struct pd_labels *labels;   /* common labels (incl. __meta_filepath / __meta_url) */
};

void pd_target_group_free(struct pd_target_group *g, size_t n);

/* Parses the file_sd / http_sd document format: a JSON array (or, for files ending
 * in .yml/.yaml, a YAML list) of {"targets": [...], "labels": {...}}. source_prefix
 * names the groups (source_prefix + ":" + index). Errors say what is wrong and where
 * (file:line for YAML, byte offset for JSON). *out is malloc'd; free with
 * pd_target_group_free. */
int pd_discovery_parse_groups(const char *text, size_t len, int yaml, const char *source_prefix,
			      struct pd_target_group **out, size_t *n, struct pd_err *err);

#endif
