/* discovery.h: service discovery: where targets come from. Each provider turns
 * its configuration into target groups, as Prometheus's discovery does: a group is
 * a list of targets (label sets, each with at least __address__) plus labels common
 * to the group, identified by a source string. Providers: static_configs,
 * file_sd_configs (JSON and YAML files, globs, inotify and refresh_interval,
 * __meta_filepath), http_sd_configs (url, refresh_interval, __meta_url),
 * dns_sd_configs (SRV, A, AAAA, MX and NS lookups with c-ares, __meta_dns_*),
 * kubernetes_sd_configs (objects of the Kubernetes API kept current by list and
 * watch, __meta_kubernetes_*).
 *
 * A manager runs every provider of every scrape pool on one background thread (an
 * event loop over inotify descriptors, timers and a libcurl multi handle, so HTTP
 * requests never block it) and hands the latest full set of groups of a pool to a
 * callback whenever it changes. A provider that fails keeps its last good groups.
 * docs/discovery.md is the user-facing description, with the places where profd
 * differs from Prometheus. */
#ifndef PROFD_DISCOVERY_H
#define PROFD_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "profd/labels.h"
#include "profd/util.h"

/* ---- limits and defaults ------------------------------------------------------ */

#define PD_DISCOVERY_FILE_REFRESH_DEFAULT_MS (5 * 60 * 1000) /* file_sd, as Prometheus */
#define PD_DISCOVERY_HTTP_REFRESH_DEFAULT_MS (60 * 1000)     /* http_sd, as Prometheus */
#define PD_DISCOVERY_MAX_DOCUMENT_SIZE (64u << 20)           /* bytes of one file_sd file */
#define PD_DISCOVERY_HTTP_BODY_LIMIT_DEFAULT (64u << 20)     /* bytes of an http_sd body */
#define PD_DISCOVERY_MAX_TARGETS 1000000                /* groups plus targets in one document */
#define PD_DISCOVERY_UPDATE_INTERVAL_DEFAULT_MS 5000    /* Prometheus's updatert */
#define PD_DISCOVERY_DNS_REFRESH_DEFAULT_MS (30 * 1000) /* dns_sd, as Prometheus */
/* One DNS query to one server times out after this (Prometheus's DNS client waits
 * 2s); each server is asked once per name, and a whole refresh is cut off after
 * refresh_interval. */
#define PD_DISCOVERY_DNS_QUERY_TIMEOUT_MS 2000

/* ---- configuration (filled by the config package) ------------------------- */

struct pd_discovery_static_config {
	const char **targets; /* host:port strings */
	size_t ntargets;
	struct pd_labels *labels; /* owned by the config; may be NULL */
};

struct pd_discovery_file_config {
	const char **files; /* paths; the last path element may hold * ? [..] globs */
	size_t nfiles;
	int64_t refresh_interval_ms; /* <= 0: default 5m */
};

struct pd_discovery_http_config {
	const char *url;
	int64_t refresh_interval_ms; /* <= 0: default 60s */
	/* HTTP client settings (auth, TLS, proxy) as for scraping */
	const struct pd_http_client_config *client; /* may be NULL */
	/* Not in Prometheus's http_sd_config, which has no body limit and times out
	 * after refresh_interval; zero gives exactly that (and a 64 MiB body limit). */
	int64_t timeout_ms;     /* <= 0: refresh_interval */
	size_t body_size_limit; /* 0: PD_DISCOVERY_HTTP_BODY_LIMIT_DEFAULT */
};

/* The record types of dns_sd_configs. */
enum pd_discovery_dns_type {
	PD_DISCOVERY_DNS_SRV = 0, /* the default */
	PD_DISCOVERY_DNS_A,
	PD_DISCOVERY_DNS_AAAA,
	PD_DISCOVERY_DNS_MX,
	PD_DISCOVERY_DNS_NS,
};

struct pd_discovery_dns_config {
	const char **names; /* at least one */
	size_t nnames;
	const char *type;            /* "SRV", "A", "AAAA", "MX" or "NS", any case; NULL: SRV */
	int64_t port;                /* required (not 0) for all types but SRV, which ignores it */
	int64_t refresh_interval_ms; /* <= 0: default 30s */
};

/* kubernetes_sd_configs: the roles and the objects they read. */
enum pd_discovery_k8s_role {
	PD_DISCOVERY_K8S_NODE,
	PD_DISCOVERY_K8S_SERVICE,
	PD_DISCOVERY_K8S_POD,
	PD_DISCOVERY_K8S_ENDPOINTS,
	PD_DISCOVERY_K8S_ENDPOINTSLICE,
	PD_DISCOVERY_K8S_INGRESS,
};

/* One entry of `selectors`: label and field selectors (Kubernetes syntax, passed to
 * the API server as labelSelector / fieldSelector) for the objects of one role. */
struct pd_discovery_k8s_selector {
	const char *role; /* "pod", "service", "endpoints", "endpointslice", "node", "ingress" */
	const char *label; /* may be NULL */
	const char *field; /* may be NULL */
};

struct pd_discovery_kubernetes_config {
	const char *role;            /* required; as in the enum, lower case */
	const char *api_server;      /* NULL: kubeconfig_file, else in-cluster */
	const char *kubeconfig_file; /* NULL; not together with api_server */
	/* namespaces: own_namespace adds the namespace profd runs in (read from
	 * /var/run/secrets/kubernetes.io/serviceaccount/namespace); names lists more;
	 * none at all means every namespace. */
	int own_namespace;
	const char **namespaces;
	size_t nnamespaces;
	const struct pd_discovery_k8s_selector *selectors;
	size_t nselectors;
	int attach_node;      /* attach_metadata.node: pods' node labels (pod, endpoints,
	                         endpointslice roles) */
	int attach_namespace; /* attach_metadata.namespace: the namespace's labels and
	                         annotations */
	/* HTTP client settings for the API server (auth, TLS, proxy); may be NULL */
	const struct pd_http_client_config *client;
};

/* Checks a kubernetes_sd configuration with Prometheus's messages (`role missing
 * (one of: pod, service, endpoints, endpointslice, node, ingress)`, `to use custom
 * HTTP client configuration please provide the 'api_server' URL explicitly`, ...). */
int pd_discovery_kubernetes_validate(const struct pd_discovery_kubernetes_config *c,
                                     struct pd_err *err);

/* The role named s (exactly, lower case, as Prometheus compares), or -1 when s
 * (or NULL) names none. */
int pd_discovery_k8s_role_parse(const char *s);

/* The type named s, compared case-insensitively as Prometheus does; -1 when s
 * names none. NULL is SRV. */
int pd_discovery_dns_type_parse(const char *s);

/* Checks a dns_sd configuration with Prometheus's messages: `DNS-SD config must
 * contain at least one SRV record name`, `invalid DNS-SD records type PTR`, `a port
 * is required in DNS-SD configs for all record types except SRV`. */
int pd_discovery_dns_validate(const struct pd_discovery_dns_config *c, struct pd_err *err);

/* HTTP client settings shared by scraping and http_sd (the config package fills
 * them from basic_auth, authorization, bearer_token[_file], tls_config, proxy_url,
 * follow_redirects). Strings may be NULL. Credential files are read on every
 * request, their content trimmed of surrounding white space, as Prometheus does. */
struct pd_http_client_config {
	const char *basic_auth_username;
	const char *basic_auth_password;
	const char *basic_auth_password_file;
	const char *authorization_type; /* default "Bearer" when credentials set */
	const char *authorization_credentials;
	const char *authorization_credentials_file;
	const char *tls_ca_file, *tls_cert_file, *tls_key_file, *tls_server_name;
	int tls_insecure_skip_verify;
	const char *proxy_url;
	int follow_redirects; /* default 1 */
};

/* Deep-copies c into d (d's old strings are not freed). */
void pd_http_client_config_copy(struct pd_http_client_config *d,
                                const struct pd_http_client_config *c);
/* Frees the strings of a copy made by pd_http_client_config_copy and zeroes it. */
void pd_http_client_config_free(struct pd_http_client_config *c);
/* A fingerprint of every setting, to tell whether two configurations differ. */
uint64_t pd_http_client_config_hash(const struct pd_http_client_config *c);

/* ---- target groups ---------------------------------------------------------- */

/* Sources are named as Prometheus names them: "0", "1", ... for the static_configs
 * of a pool, "<path>:<i>" for the i-th group of a file, "<url>:<i>" for http_sd. */
struct pd_target_group {
	char *source;               /* e.g. "/etc/targets.json:0", "0" */
	struct pd_labels **targets; /* each with __address__, plus per-target labels */
	size_t ntargets;
	struct pd_labels *labels; /* common labels (incl. __meta_filepath / __meta_url);
	                             never NULL, possibly empty */
};

/* Frees n groups and the array g itself (as returned by pd_discovery_parse_groups);
 * NULL does nothing. */
void pd_target_group_free(struct pd_target_group *g, size_t n);

/* Parses the file_sd / http_sd document format: a JSON array (or, when yaml is set,
 * for files ending in .yml/.yaml, a YAML list) of {"targets": [...], "labels":
 * {...}}, with Prometheus's rules: each target becomes a label set
 * {__address__="<target>"}; labels is a map of valid label names to strings; any
 * other key is an error (JSON keys match case-insensitively, as Go's encoding/json
 * does; YAML keys exactly); null for targets, labels or the whole document means
 * "none"; a null group is an error. JSON is parsed strictly (RFC 8259, as Go's
 * encoding/json: \u escapes with surrogate pairs, invalid UTF-8 replaced by U+FFFD);
 * YAML with libyaml, where any scalar is a string, as Go's yaml.v2 reads it into a
 * string, and duplicate keys are errors, as yaml.UnmarshalStrict makes them.
 * source_prefix names the groups (source_prefix + ":" + index) and starts every
 * error message, followed by the 1-based line and column (in characters) of the
 * fault: `targets.json:3:17: target must be a string, got number`. Nothing is added
 * beyond __address__ (no __meta_* label). On success *out is malloc'd (NULL when
 * *n is 0); free with pd_target_group_free. PD_EINVAL on a malformed document,
 * PD_ETOOBIG past PD_DISCOVERY_MAX_TARGETS, PD_ENOMEM. */
int pd_discovery_parse_groups(const char *text, size_t len, int yaml, const char *source_prefix,
                              struct pd_target_group **out, size_t *n, struct pd_err *err);

/* Reads the first document of the YAML text (len bytes) with libyaml's event parser
 * and fails when its collections nest more than max_depth deep. libyaml's document
 * loader takes time quadratic in the nesting of flow collections (`[[[[...`: 80 KB
 * of them take seconds), so a YAML document is checked with this before it is
 * loaded. PD_EINVAL with the 1-based *line and *col of the collection that passes
 * the limit; 0 otherwise, a syntax error included (the loader then reports it in
 * its words). */
int pd_discovery_yaml_nesting(const char *text, size_t len, size_t max_depth, size_t *line,
                              size_t *col);

/* Builds the target group of one dns_sd name from a DNS response (msg, len bytes,
 * as the resolver received it), as Prometheus builds it: source and
 * __meta_dns_name are name; each SRV record gives __address__ = target:port (the
 * target's final dot removed) with __meta_dns_srv_record_target (the target as a
 * rooted name, with its dot) and __meta_dns_srv_record_port; each MX / NS record
 * gives target:port with __meta_dns_mx_record_target / __meta_dns_ns_record_target;
 * each A / AAAA record address:port (IPv6 in brackets). Records of other types
 * (CNAMEs of a chain, which c-ares follows) are skipped. A response without
 * records gives a group without targets. On success *out is filled and owned by
 * the caller (pd_discovery_dns_group_fini); on failure it is left empty. PD_EINVAL
 * when c-ares cannot read the response, PD_ENOMEM. */
int pd_discovery_dns_group(const char *name, enum pd_discovery_dns_type type, int64_t port,
                           const unsigned char *msg, size_t len, struct pd_target_group *out,
                           struct pd_err *err);

/* Frees what pd_discovery_dns_group put into g (not g itself) and zeroes it. */
void pd_discovery_dns_group_fini(struct pd_target_group *g);

/* ---- the manager ---------------------------------------------------------------- */

/* One scrape pool (a scrape_config's job_name) and its service discovery. Every
 * array may be empty. Read only during pd_discovery_manager_set_pools, which copies
 * what it keeps. */
struct pd_discovery_pool_config {
	const char *name;
	const struct pd_discovery_static_config *static_configs; /* one group each */
	size_t nstatic;
	const struct pd_discovery_file_config *file_configs;
	size_t nfile;
	const struct pd_discovery_http_config *http_configs;
	size_t nhttp;
	const struct pd_discovery_dns_config *dns_configs;
	size_t ndns;
	const struct pd_discovery_kubernetes_config *kubernetes_configs;
	size_t nkubernetes;
};

/* Receives the full current set of target groups of a pool: once when the pool
 * first has a result (every provider of the pool has finished its first refresh,
 * or 5 seconds have passed) and after every set_pools, then whenever it changes, at
 * most once per update_interval. Groups without targets are left out, as Prometheus's discovery
 * manager leaves them out. Called only from the manager's thread, one call at a
 * time, with no manager lock held; pool and groups are borrowed for the duration of
 * the call. The callback may call pd_discovery_manager_status, _stats and _set_pools,
 * but not _destroy. */
typedef void (*pd_discovery_cb)(void *ctx, const char *pool, const struct pd_target_group *groups,
                                size_t n);

struct pd_discovery_options {
	/* Minimum time between two calls for the same pool (Prometheus's updatert);
	 * <= 0: PD_DISCOVERY_UPDATE_INTERVAL_DEFAULT_MS. The first call is not delayed. */
	int64_t update_interval_ms;
	/* 1: file_sd does not use inotify and relies on refresh_interval alone. */
	int disable_inotify;
	/* "IP:PORT" (IPv6 in brackets; the port may be left out for 53): every dns_sd
	 * query goes to this server instead of those of /etc/resolv.conf (whose search
	 * domains and ndots still apply). NULL or "": /etc/resolv.conf, as Prometheus. */
	const char *dns_server;
	/* kubernetes_sd's in-cluster service account directory (token, ca.crt,
	 * namespace); NULL or "": /var/run/secrets/kubernetes.io/serviceaccount. For
	 * tests, which cannot write there. */
	const char *k8s_serviceaccount_dir;
	/* kubernetes_sd: each configuration holds the JSON of at most this many bytes of
	 * watched objects; a list or event that would go over fails (and is retried),
	 * keeping the targets found so far. 0: PD_DISCOVERY_K8S_MAX_OBJECT_BYTES. */
	size_t k8s_max_object_bytes;
};

/* The default bound of kubernetes_sd's watched objects per configuration: 2 GiB of
 * their JSON, the objects of a cluster of about 200,000 pods. */
#define PD_DISCOVERY_K8S_MAX_OBJECT_BYTES ((size_t)2 << 30)

/* What a provider did last, for the targets page. A provider is one static_configs
 * list, one file_sd_config, one http_sd_config or one dns_sd_config; identical configurations, even
 * of different pools, share one provider, as in Prometheus. */
struct pd_discovery_provider_status {
	char name[32];           /* "static/0", "file/3", "http/7", "dns/2": kind and a
	                            manager-wide counter, as Prometheus names providers */
	char *detail;            /* the files (joined by ", "), the URL, or the dns_sd type
	                            and names ("SRV: a, b"); "" for static */
	char *last_error;        /* NULL when the last refresh succeeded; for file_sd the
	                            errors of every file that failed, for dns_sd of every
	                            name that failed, joined by "; " */
	int64_t last_refresh_ms; /* Unix ms when the last refresh finished; 0 before */
	int64_t last_success_ms; /* Unix ms of the last refresh without error; 0: never */
	size_t ngroups;          /* groups currently held (the last good ones) */
	size_t ntargets;
};

/* Counters for /metrics; named after Prometheus's prometheus_sd_* metrics. */
struct pd_discovery_stats {
	uint64_t providers_started; /* providers created, over the manager's life */
	uint64_t providers_stopped;
	uint64_t providers;        /* running now */
	uint64_t updates_sent;     /* callback calls (prometheus_sd_updates_total) */
	uint64_t file_read_errors; /* prometheus_sd_file_read_errors_total */
	uint64_t http_failures;    /* prometheus_sd_http_failures_total */
	uint64_t dns_lookups;      /* one per name per refresh: prometheus_sd_dns_lookups_total */
	uint64_t dns_lookup_failures; /* prometheus_sd_dns_lookup_failures_total */
	uint64_t refreshes;           /* completed provider refreshes, failed ones too */
	/* kubernetes_sd: events per kind (node, service, pod, endpoints, endpointslice,
	 * ingress, namespace, as enum pd_discovery_k8s_role then namespace) and type
	 * (add, update, delete): prometheus_sd_kubernetes_events_total{role,event}; objects
	 * a list brings count as added, changed or (gone) deleted */
	uint64_t k8s_events[7][3];
	uint64_t k8s_failures; /* failed lists and watches: prometheus_sd_kubernetes_failures_total */
};

struct pd_discovery_manager;

/* Checks a value for opts->dns_server: `DNS server "x" is not an IP address with an
 * optional port, as 127.0.0.1:53 or [::1]:5353`. */
int pd_discovery_dns_server_check(const char *server, struct pd_err *err);

/* Starts a manager with no pools and its thread. opts may be NULL for the defaults;
 * it is copied. On success *out is owned by the caller (pd_discovery_manager_destroy).
 * Initialises libcurl (curl_global_init, reference-counted by libcurl) and c-ares.
 * PD_EINVAL when opts->dns_server is not an IP address with an optional port. */
int pd_discovery_manager_create(struct pd_discovery_manager **out, pd_discovery_cb cb, void *ctx,
                                const struct pd_discovery_options *opts, struct pd_err *err);

/* Replaces the pools, as a configuration (re)load does. Providers whose
 * configuration is unchanged keep running with their groups and timers; others are
 * stopped or started. Every pool then gets a callback with its full set, as
 * Prometheus's discovery manager sends everything after ApplyConfig (the consumer's
 * relabeling may have changed): a pool whose providers all kept running at once, a
 * new or changed pool as soon as its new providers have refreshed. Once this returns, removed pools
 * get no new updates, but one already on its way (the manager thread may have taken its snapshot
 * just before) can still arrive, so a consumer ignores groups for pools it no longer has, as
 * Prometheus's scrape manager does; for any one pool the last call is always the current set.
 * Validates
 * everything first, with Prometheus's messages (`path name "x.txt" is not valid for
 * file discovery`, `URL scheme must be 'http' or 'https'`), and on error changes
 * nothing. pools is only read. */
int pd_discovery_manager_set_pools(struct pd_discovery_manager *m,
                                   const struct pd_discovery_pool_config *pools, size_t n,
                                   struct pd_err *err);

/* The providers of pool, in configuration order (static, file, http, dns): *out is a new
 * array owned by the caller (pd_discovery_provider_status_free), *n its length.
 * PD_ENOTFOUND when there is no such pool. */
int pd_discovery_manager_status(struct pd_discovery_manager *m, const char *pool,
                                struct pd_discovery_provider_status **out, size_t *n,
                                struct pd_err *err);

/* Frees what pd_discovery_manager_status returned; NULL does nothing. */
void pd_discovery_provider_status_free(struct pd_discovery_provider_status *s, size_t n);

/* Copies the counters into *out. */
void pd_discovery_manager_stats(struct pd_discovery_manager *m, struct pd_discovery_stats *out);

/* Stops the thread (promptly: an HTTP request in flight is abandoned), waits for a
 * callback in progress to return, and frees everything; NULL does nothing. Must not
 * be called from the callback. */
void pd_discovery_manager_destroy(struct pd_discovery_manager *m);

#endif
