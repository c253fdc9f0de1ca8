/* config.h: the configuration file: Prometheus's schema, defaults and validation
 * for `global` and `scrape_configs`, plus conprof's per-job `profiling_config`.
 *
 * The file is YAML, read as Prometheus reads it (go-yaml v2 semantics: YAML 1.1
 * booleans such as `yes`/`on`, `~` and empty values as null, anchors, aliases and
 * `<<` merge keys) and strictly: an unknown field or a key given twice is an error.
 * Every error starts with `file:line:column: ` (1-based) naming the node at fault,
 * followed by Prometheus's own words where Prometheus has a check, e.g.
 * `prometheus.yml:7:21: scrape timeout greater than scrape interval for scrape
 * config with job name "api"`.
 *
 * A loaded configuration is immutable and fully resolved: every default applied,
 * every per-job value inherited from `global`, relabel rules built, profile types
 * merged with their defaults. Readers never apply defaults themselves. It may be
 * read by several threads at once. docs/configuration.md is the user's reference
 * and lists where profd differs from Prometheus. */
#ifndef PROFD_CONFIG_H
#define PROFD_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "profd/discovery.h"
#include "profd/labels.h"
#include "profd/relabel.h"
#include "profd/util.h"

/* ---- defaults ------------------------------------------------------------- */

#define PD_CONFIG_DEFAULT_SCRAPE_INTERVAL_MS 60000  /* global.scrape_interval: 1m */
#define PD_CONFIG_DEFAULT_SCRAPE_TIMEOUT_MS 10000   /* global.scrape_timeout: 10s */
#define PD_CONFIG_DEFAULT_FILE_SD_REFRESH_MS 300000 /* file_sd refresh_interval: 5m */
#define PD_CONFIG_DEFAULT_HTTP_SD_REFRESH_MS 60000  /* http_sd refresh_interval: 1m */
#define PD_CONFIG_DEFAULT_DNS_SD_REFRESH_MS 30000   /* dns_sd refresh_interval: 30s */
#define PD_CONFIG_MAX_FILE_SIZE (16u << 20)         /* largest config file read */
/* The longest default `seconds` of a CPU or delta profile (Go's own default). */
#define PD_CONFIG_MAX_DEFAULT_SECONDS 30

/* ---- the configuration ---------------------------------------------------- */

/* `global`: defaults for every job. */
struct pd_config_global {
	int64_t scrape_interval_ms; /* default 1m */
	int64_t scrape_timeout_ms;  /* default min(10s, scrape_interval) */
	size_t body_size_limit;     /* bytes; 0 (or a negative size in the file): no limit */
	uint64_t target_limit;      /* targets a job may have; 0: no limit */
	/* external_labels after $VAR / ${VAR} expansion (Go's os.Expand over the
	 * environment, `$$` for a literal `$`); NULL when there are none. As in
	 * Prometheus they name this server to the outside (federation, remote
	 * storage). */
	struct pd_labels *external_labels;
};

/* One `params` entry: a query parameter and its values, in file order. */
struct pd_config_param {
	const char *name;
	const char **values;
	size_t nvalues;
};

/* One profile type of a job: conprof's `profiling_config.pprof_config.<name>`
 * after merging with the defaults. The scrape URL of a target is
 * scheme://address + path, plus the job's params, plus `seconds=N` when
 * seconds > 0. name becomes the series label __name__. */
struct pd_profile_config {
	const char *name; /* "heap", "profile", "fgprof", ...: a valid metric name */
	const char *path; /* starts with "/" */
	int64_t seconds;  /* 0: no seconds parameter; else < the job's scrape timeout */
	int enabled;      /* defaults on; only an explicit `enabled: false` turns off */
	int delta;        /* cumulative type scraped as a delta over `seconds` */
	int builtin;      /* one of the seven default types */
};

/* One entry of `scrape_configs`, every field resolved. */
struct pd_scrape_config {
	const char *job_name;
	int64_t scrape_interval_ms; /* inherited from global when unset */
	int64_t scrape_timeout_ms;  /* min(global timeout, interval) when unset */
	const char *scheme;         /* "http" (default) or "https" */
	const char *metrics_path;   /* Prometheus's field, default "/metrics"; profiles use
	                             * the per-type paths below */
	struct pd_config_param *params;
	size_t nparams;
	int honor_labels;       /* default 0 */
	int honor_timestamps;   /* default 1; kept for Prometheus compatibility */
	size_t body_size_limit; /* bytes, 0: no limit; inherited from global when 0 */
	uint64_t target_limit;  /* targets after relabeling; 0: no limit; inherited
				 * from global when 0 */
	/* the tenant the job's series are stored under with
	 * --auth.multitenancy-enabled; PD_TENANT_DEFAULT when unset */
	const char *tenant;

	/* basic_auth, authorization / bearer_token[_file], tls_config, proxy_url,
	 * follow_redirects. bearer_token[_file] arrive as authorization_credentials[_file]
	 * with type "Bearer", as Prometheus converts them. basic_auth_username is non-NULL
	 * exactly when basic_auth is configured, authorization_type exactly when
	 * authorization (or a bearer token) is; other unset strings are NULL. File paths
	 * are absolute or relative to the config file's directory (pd_config_load_file). */
	struct pd_http_client_config http_client;

	struct pd_discovery_static_config *static_configs;
	size_t nstatic_configs;
	struct pd_discovery_file_config *file_sd_configs;
	size_t nfile_sd_configs;
	struct pd_discovery_http_config *http_sd_configs; /* each with its own client */
	size_t nhttp_sd_configs;
	struct pd_discovery_dns_config *dns_sd_configs; /* type as written, refresh set */
	size_t ndns_sd_configs;
	struct pd_discovery_kubernetes_config *kubernetes_sd_configs;
	size_t nkubernetes_sd_configs;

	/* relabel_configs as written (unset fields NULL / -1, as pd_relabel_rules_build
	 * takes them) and the rule set built from them (never NULL, may be empty). */
	struct pd_relabel_rule_config *relabel_configs;
	size_t nrelabel_configs;
	struct pd_relabel_rules *relabel_rules;

	/* Profile types: the seven defaults (allocs, block, goroutine, heap, mutex,
	 * profile, threadcreate, in that order) with the job's overrides, then the job's
	 * custom types in file order. Disabled types are listed too. */
	struct pd_profile_config *profiles;
	size_t nprofiles;
};

/* A loaded configuration. Read the public fields; the rest is private. */
struct pd_config {
	const char *filename; /* as given to the loader; "" for pd_config_parse(NULL) */
	struct pd_config_global global;
	struct pd_scrape_config *scrape_configs;
	size_t nscrape_configs;
	/* Notes about fields that Prometheus knows and profd accepts but ignores
	 * (`metric_relabel_configs`, `sample_limit`, `rule_files`, ...), each
	 * `file:line:column: ...`. `profd check config` prints them as warnings. */
	const char **warnings;
	size_t nwarnings;

	struct pd_arena *arena; /* private: owns every string and array above */
};

/* ---- loading -------------------------------------------------------------- */

/* Reads and parses the file at path (at most PD_CONFIG_MAX_FILE_SIZE bytes).
 * Relative file names inside it (password_file, credentials_file,
 * bearer_token_file, TLS files, file_sd files) are joined to the directory of path,
 * as Prometheus does. On success *out is new and owned by the caller
 * (pd_config_destroy); on failure *out is NULL and err says why. */
int pd_config_load_file(const char *path, struct pd_config **out, struct pd_err *err);

/* Parses len bytes of YAML text. filename (may be NULL) only names the text in
 * error messages; relative paths inside are left as written. Ownership as for
 * pd_config_load_file; text is only read. */
int pd_config_parse(const char *text, size_t len, const char *filename, struct pd_config **out,
                    struct pd_err *err);

/* Frees a configuration and everything in it; NULL does nothing. */
void pd_config_destroy(struct pd_config *cfg);

/* The scrape config with this job name, borrowed from cfg, or NULL. */
const struct pd_scrape_config *pd_config_job(const struct pd_config *cfg, const char *job_name);

/* The profile type called name of a job, borrowed from sc, or NULL. */
const struct pd_profile_config *pd_scrape_config_profile(const struct pd_scrape_config *sc,
                                                         const char *name);

/* Appends the resolved configuration to b as YAML, the way Prometheus renders
 * /api/v1/status/config: every default filled in, bearer tokens shown as
 * authorization, secrets (passwords, credentials) as `<secret>`, a proxy URL's
 * password as `xxxxx`, external labels with their $VARs expanded. The output loads
 * back to an equal configuration, but for secrets and for external label values
 * that contain a `$`. PD_ENOMEM or PD_ETOOBIG when b cannot grow. */
int pd_config_render(const struct pd_config *cfg, struct pd_buf *b);

/* ---- value syntax (exposed for tests and flags) --------------------------- */

/* Parses a duration as Prometheus's model.ParseDuration: integers with units
 * y w d h m s ms (y = 365d, w = 7d), each at most once and from biggest to
 * smallest (`1h30m`, `1d`, `500ms`), or `0`. Errors in Prometheus's words:
 * `not a valid duration string: "1h1d"`, `unknown unit "x" in duration "1x"`,
 * `empty duration string`, `duration out of range`. */
int pd_config_parse_duration(const char *s, int64_t *ms, struct pd_err *err);

/* Formats ms as Prometheus prints a model.Duration: `1m30s`, `0s`, `90d` (years and
 * weeks only when they divide exactly). out gets at most size bytes, NUL included. */
void pd_config_format_duration(int64_t ms, char *out, size_t size);

/* Parses a size as Prometheus's body_size_limit (alecthomas/units Base2Bytes):
 * a number (fractions allowed) with unit B, KB, MB, GB, TB, PB, EB or KiB, MiB, GiB,
 * TiB, PiB, EiB, all powers of 1024, terms may be summed (`1MB512KB`), `0` alone
 * needs no unit, a sign is allowed. Errors as alecthomas/units words them:
 * `units: unknown unit kB in 1kB` (a bare number has the empty unit:
 * `units: unknown unit  in 1000`), `units: invalid MB`, `units: overflow parsing
 * unit`. A negative size is returned as is. */
int pd_config_parse_size(const char *s, int64_t *bytes, struct pd_err *err);

/* Formats bytes as Base2Bytes prints itself: `10MiB`, `1KiB1B`, `0B`. */
void pd_config_format_size(int64_t bytes, char *out, size_t size);

/* The `seconds` a CPU (`profile`) or delta profile gets when the file sets none:
 * the scrape timeout in whole seconds minus one second of margin, at most
 * PD_CONFIG_MAX_DEFAULT_SECONDS and at least 1. With the default 10s timeout: 9. */
int64_t pd_config_default_profile_seconds(int64_t scrape_timeout_ms);

/* ---- the web configuration (--web.config.file) ------------------------------ */

/* The file Prometheus's servers take as --web.config.file, in exporter-toolkit's
 * format: tls_server_config, http_server_config, basic_auth_users, rate_limit.
 * Read strictly, as exporter-toolkit reads it (an unknown field or a key given
 * twice is an error), with its defaults (TLS 1.2 to 1.3, http2 on,
 * prefer_server_cipher_suites on) and its checks and messages, each error
 * starting with `file:line:column: ` where a node is at fault:
 * `web.yml:3:5: HTTP header "Server" can not be configured`. */

enum pd_web_client_auth {
	PD_WEB_NO_CLIENT_CERT = 0,
	PD_WEB_REQUEST_CLIENT_CERT,      /* asked for, not required, not verified */
	PD_WEB_REQUIRE_ANY_CLIENT_CERT,  /* required, not verified */
	PD_WEB_VERIFY_CLIENT_CERT_IF_GIVEN,
	PD_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT,
};

#define PD_WEB_TLS10 0x0301
#define PD_WEB_TLS11 0x0302
#define PD_WEB_TLS12 0x0303
#define PD_WEB_TLS13 0x0304

struct pd_web_header {
	const char *name, *value;
};

struct pd_web_user {
	const char *name;
	const char *hash; /* bcrypt ($2a$, $2b$, $2y$), checked to be well formed */
	/* tenants: the tenants the user may use with --auth.multitenancy-enabled,
	 * sorted and distinct; ntenants 0: not bound (any tenant) */
	const char **tenants;
	size_t ntenants;
};

/* ---- tenants ----------------------------------------------------------------- */

/* The tenant of everything without --auth.multitenancy-enabled, and of scrape
 * jobs without a tenant field (Pyroscope's default tenant id). */
#define PD_TENANT_DEFAULT "anonymous"
/* The longest tenant id, in bytes (dskit's MaxTenantIDLength). */
#define PD_TENANT_MAX_LEN 150

/* Checks a tenant id (len bytes) as dskit's tenant.ValidTenantID does: only
 * letters, digits and ! - _ . * ' ( ), at most PD_TENANT_MAX_LEN bytes, not "."
 * or "..", and not empty. 0, or PD_EINVAL with dskit's message in err. */
int pd_config_tenant_check(const char *id, size_t len, struct pd_err *err);

struct pd_web_config {
	const char *filename;
	/* tls_server_config; file paths are joined to the file's directory */
	int tls_enabled; /* any certificate, key or client CA given (cert or file) */
	const char *cert, *cert_file, *key, *key_file, *client_ca, *client_ca_file;
	enum pd_web_client_auth client_auth;
	int min_version, max_version;    /* PD_WEB_TLS1x */
	const char **cipher_suites;      /* Go's names, e.g. TLS_AES_128_GCM_SHA256 */
	size_t ncipher_suites;
	const char **curve_preferences;  /* CurveP256, CurveP384, CurveP521, X25519 */
	size_t ncurve_preferences;
	int prefer_server_cipher_suites;
	const char **client_allowed_sans; /* NULL: any */
	size_t nclient_allowed_sans;
	/* http_server_config */
	int http2;
	struct pd_web_header *headers; /* added to every response */
	size_t nheaders;
	/* basic_auth_users, in file order */
	struct pd_web_user *users;
	size_t nusers;
	/* rate_limit: 0 interval means none */
	int64_t rate_limit_burst;
	int64_t rate_limit_interval_ms;

	struct pd_arena *arena; /* private: owns every string and array above */
};

/* Parses len bytes of YAML text; filename (may be NULL) names it in messages and
 * dir (may be NULL) is where relative paths are joined to. The certificate and
 * key files are not read here (pd_web_config_check_files does). On success *out is
 * owned by the caller (pd_web_config_destroy). */
int pd_web_config_parse(const char *text, size_t len, const char *filename, const char *dir,
                        struct pd_web_config **out, struct pd_err *err);
/* Reads and parses the file at path (at most PD_CONFIG_MAX_FILE_SIZE bytes). */
int pd_web_config_load_file(const char *path, struct pd_web_config **out, struct pd_err *err);
/* Checks that the files the TLS settings name can be read, as exporter-toolkit
 * does at start-up (`failed to read cert_file (PATH): ...`). 0 when they can or
 * when TLS is off. */
int pd_web_config_check_files(const struct pd_web_config *wc, struct pd_err *err);
void pd_web_config_destroy(struct pd_web_config *wc);

/* 1 when password is user's in wc->basic_auth_users (bcrypt, with libxcrypt),
 * 0 otherwise, also for an unknown user (which costs one bcrypt check too, so that
 * timing does not tell users apart). Slow by design: callers cache the answer. */
int pd_web_config_check_password(const struct pd_web_config *wc, const char *user,
                                 const char *password);

#endif
