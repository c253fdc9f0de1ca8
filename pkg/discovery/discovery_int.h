/* discovery_int.h: what the files of pkg/discovery share privately: the small
 * document tree that the JSON and YAML readers both produce and the target-group
 * reader walks, the providers the manager runs, and group helpers. */
#ifndef PROFD_DISCOVERY_INT_H
#define PROFD_DISCOVERY_INT_H

#include <stddef.h>
#include <stdint.h>

#include <ares.h>
#include <curl/curl.h>

#include "profd/discovery.h"

/* ---- document tree ------------------------------------------------------------ */

/* Nesting deeper than this is an error in both readers; a target-group document
 * needs three levels. */
#define PD_SD_MAX_DEPTH 100

enum pd_sd_kind {
	PD_SD_NULL,
	PD_SD_BOOL,
	PD_SD_NUMBER,
	PD_SD_STRING, /* every non-null YAML scalar is a string */
	PD_SD_LIST,
	PD_SD_MAP,
};

struct pd_sd_node {
	enum pd_sd_kind kind;
	uint32_t col; /* YAML: 1-based column; 0 for JSON */
	size_t pos;   /* YAML: 1-based line; JSON: byte offset (line and column on demand) */
	union {
		struct { /* STRING: the text, NUL-terminated, len bytes; NULL: "" in YAML;
			    JSON's BOOL: "true" or "false"; JSON's NUMBER: its literal
			    text ("8080", "-1.5e3") */
			const char *str;
			size_t len;
		};
		struct { /* LIST: n items kids[0..n); MAP: n pairs, key kids[2i], value
			    kids[2i+1] */
			struct pd_sd_node **kids;
			size_t n;
		};
	};
};

/* A parsed document. Nodes live in the arena. */
struct pd_sd_doc {
	const char *text;
	size_t len;
	const char *prefix; /* starts every error message */
	int yaml;
	struct pd_arena *arena;
	struct pd_sd_node *root; /* NULL for an empty YAML document */
};

/* Parse doc->text into doc->root (allocating from doc->arena). Syntax errors are
 * "prefix:line:col: message". */
int pd_sd_json_parse(struct pd_sd_doc *doc, struct pd_err *err);
int pd_sd_yaml_parse(struct pd_sd_doc *doc, struct pd_err *err);

/* Records "prefix:line:col: message" for a position: node (may be NULL) or, when
 * node is NULL, byte offset off. Returns code. A node is 32 bytes, so that the tree of
 * a document of short strings stays within a few times the document's size. */
int pd_sd_doc_err(const struct pd_sd_doc *doc, const struct pd_sd_node *node, size_t off,
                  struct pd_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* 1-based line and column (in characters) of byte offset off of text. */
void pd_sd_line_col(const char *text, size_t len, size_t off, size_t *line, size_t *col);

/* Writes s quoted as Go's %q into dst (cut to about 64 bytes). For messages. */
void pd_sd_quote(char *dst, size_t cap, const char *s, size_t len);

/* ---- group helpers ------------------------------------------------------------ */

/* 1 when both lists hold the same groups in the same order (sources, labels,
 * targets), as Prometheus's Group.Equal. */
int pd_sd_groups_equal(const struct pd_target_group *a, size_t na, const struct pd_target_group *b,
                       size_t nb);

/* Sets label name=value in the common labels of each of the n groups. */
int pd_sd_groups_set_label(struct pd_target_group *g, size_t n, const char *name, const char *value,
                           struct pd_err *err);

/* ---- providers ---------------------------------------------------------------- */

enum pd_sd_provider_kind { PD_SD_STATIC, PD_SD_FILE, PD_SD_HTTP, PD_SD_DNS, PD_SD_K8S };

struct pd_sd_k8s; /* k8s_watch_int.h */

/* One file matched by a file_sd provider's patterns. */
struct pd_sd_file_state {
	char *path;
	struct pd_target_group *groups; /* the last good groups, owned */
	size_t ngroups;
	char *error; /* the last read's error, or NULL */
};

/* A running provider. Created by set_pools under the manager's lock; everything
 * below `started` is touched only by the manager thread, except that status() reads
 * the reporting fields under the lock (which the thread holds while it writes them). */
struct pd_sd_provider {
	struct pd_sd_provider *next;
	enum pd_sd_provider_kind kind;
	char name[32];
	char *key; /* the configuration, serialised: equal keys, equal providers */
	size_t keylen;
	char *detail;
	int refs; /* pools using it; scratch of set_pools */

	int started;
	int refreshed; /* the first refresh has finished */
	int changed;   /* groups changed since the pools were marked */
	int64_t interval_ms;
	int64_t next_refresh; /* monotonic ms */

	/* The current groups. For file_sd a view of the files' groups (not owned);
	 * otherwise owned. */
	struct pd_target_group *groups;
	size_t ngroups;
	char *last_error;
	int64_t last_refresh_ms, last_success_ms;

	/* file_sd */
	char **files;
	size_t nfiles;
	char **dirs;  /* per pattern: the directory to watch, NULL when it has globs */
	char **bases; /* per pattern: its last element, for matching event names */
	int *wds;     /* per pattern: watch descriptor, -1 when not watching */
	int ifd;      /* inotify instance, -1 when not used */
	int refresh_now;
	struct pd_sd_file_state *fs;
	size_t nfs;

	/* http_sd */
	char *url;
	int64_t timeout_ms;
	size_t body_limit;
	char *basic_user, *basic_pass, *basic_pass_file;
	char *auth_type, *auth_cred, *auth_cred_file;
	char *ca_file, *cert_file, *key_file;
	int insecure;
	char *proxy;
	int follow;
	CURL *easy; /* the transfer in flight, or NULL */
	struct curl_slist *hdrs;
	struct pd_buf body;
	int body_too_big;
	char status_line[128];
	char errbuf[CURL_ERROR_SIZE];

	/* dns_sd */
	char **names;
	size_t nnames;
	enum pd_discovery_dns_type qtype;
	int64_t port;
	struct pd_sd_dns_name *dns; /* per name */
	ares_channel channel;       /* the refresh in flight, or NULL */
	size_t pending;             /* its lookups not yet answered */
	int64_t deadline;           /* monotonic ms when it is cut off */

	/* kubernetes_sd: its watches and object stores (k8s.c, k8s_store.c); groups
	 * are a view of its objects' groups */
	struct pd_sd_k8s *k8s;
};

/* One name of a dns_sd provider. */
struct pd_sd_dns_name {
	struct pd_sd_provider *p;
	size_t index;
	int has_group; /* group holds the last good answer */
	struct pd_target_group group;
	int done;                    /* this refresh's lookup has finished */
	char *error;                 /* this refresh's error, or NULL */
	struct pd_target_group next; /* this refresh's answer, when done without error */
};

/* Counters the providers bump (under the manager lock). */
struct pd_sd_counters {
	uint64_t file_read_errors;
	uint64_t http_failures;
	uint64_t refreshes;
	uint64_t dns_lookups;
	uint64_t dns_lookup_failures;
	uint64_t k8s_events[7][3]; /* per pd_k8s_kind: add, update, delete */
	uint64_t k8s_failures;     /* failed lists and watches (and setups) */
};

/* Checks a configuration with Prometheus's messages. */
int pd_sd_file_validate(const struct pd_discovery_file_config *c, struct pd_err *err);
int pd_sd_http_validate(const struct pd_discovery_http_config *c, struct pd_err *err);

/* Appends the serialised configuration (the provider's identity) to b. */
int pd_sd_static_key(struct pd_buf *b, const struct pd_discovery_static_config *c, size_t n);
int pd_sd_file_key(struct pd_buf *b, const struct pd_discovery_file_config *c);
int pd_sd_http_key(struct pd_buf *b, const struct pd_discovery_http_config *c);
int pd_sd_dns_key(struct pd_buf *b, const struct pd_discovery_dns_config *c);

/* Fill a zeroed provider from its configuration (copies everything). */
int pd_sd_static_init(struct pd_sd_provider *p, const struct pd_discovery_static_config *c,
                      size_t n, struct pd_err *err);
int pd_sd_file_init(struct pd_sd_provider *p, const struct pd_discovery_file_config *c);
int pd_sd_http_init(struct pd_sd_provider *p, const struct pd_discovery_http_config *c);
int pd_sd_dns_init(struct pd_sd_provider *p, const struct pd_discovery_dns_config *c);

/* Manager thread: file_sd. start sets up inotify (unless disabled); drain reads
 * pending events and returns 1 when one concerns a watched pattern; refresh
 * re-reads every file. */
void pd_sd_file_start(struct pd_sd_provider *p, int use_inotify);
int pd_sd_file_drain(struct pd_sd_provider *p);
void pd_sd_file_refresh(struct pd_sd_provider *p, struct pd_sd_counters *c);

/* Manager thread: http_sd. start begins a request on multi (or records why it
 * could not); done finishes it with curl's result. */
void pd_sd_http_start(struct pd_sd_provider *p, CURLM *multi, struct pd_sd_counters *c);
void pd_sd_http_done(struct pd_sd_provider *p, CURLM *multi, CURLcode rc, struct pd_sd_counters *c);

/* Manager thread: dns_sd. start begins a refresh (a c-ares channel with one search
 * per name), sending to server ("IP:PORT", NULL: /etc/resolv.conf); step handles
 * its ready sockets and timeouts and finishes it when every name has an answer
 * or the deadline has passed; wait adds the channel's sockets to w (room for
 * ARES_GETSOCK_MAXNUM more) and lowers *next to c-ares's next timeout. */
void pd_sd_dns_start(struct pd_sd_provider *p, const char *server, int64_t now,
                     struct pd_sd_counters *c);
void pd_sd_dns_step(struct pd_sd_provider *p, int64_t now, struct pd_sd_counters *c);
size_t pd_sd_dns_wait(struct pd_sd_provider *p, struct curl_waitfd *w, int64_t now, int64_t *next);
/* Checks a --discovery.dns.server value and writes it to out as c-ares takes it
 * ("IP:PORT", "[IP6]:PORT"). */
int pd_sd_dns_server_norm(const char *server, char *out, size_t cap, struct pd_err *err);
/* Frees the dns_sd parts of a provider (cancelling a refresh in flight). */
void pd_sd_dns_free(struct pd_sd_provider *p);

/* Manager thread: kubernetes_sd (k8s.c; step and done in k8s_requests.c, flush in
 * k8s_store.c). init fills a zeroed provider (sa_dir: the service account
 * directory, NULL for the standard one; max_bytes: the bound of its objects' JSON,
 * 0 for PD_DISCOVERY_K8S_MAX_OBJECT_BYTES); step sets the client and watches up on
 * its first call and starts the requests that are due, returning
 * when it next has something to do (INT64_MAX: nothing until a transfer ends);
 * done handles a finished transfer of the provider (0 when easy is not one of
 * its); flush rebuilds the groups events have touched (after curl_multi_perform
 * has run the watch streams' callbacks); free takes its transfers off multi. */
int pd_sd_k8s_key(struct pd_buf *b, const struct pd_discovery_kubernetes_config *c);
int pd_sd_k8s_init(struct pd_sd_provider *p, const struct pd_discovery_kubernetes_config *c,
                   const char *sa_dir, size_t max_bytes);
int64_t pd_sd_k8s_step(struct pd_sd_provider *p, CURLM *multi, int64_t now,
                       struct pd_sd_counters *c);
int pd_sd_k8s_done(struct pd_sd_provider *p, CURLM *multi, CURL *easy, CURLcode rc,
                   struct pd_sd_counters *c);
void pd_sd_k8s_flush(struct pd_sd_provider *p, struct pd_sd_counters *c);
void pd_sd_k8s_free(struct pd_sd_provider *p, CURLM *multi);

/* Replaces an owning provider's groups (takes ownership of g), noting whether they
 * changed. */
void pd_sd_provider_set_groups(struct pd_sd_provider *p, struct pd_target_group *g, size_t n);
/* Records the outcome of a refresh: msg NULL for success; copies msg. */
void pd_sd_provider_set_result(struct pd_sd_provider *p, const char *msg);

/* Frees a provider, first taking its transfer off multi (may be NULL) and closing
 * its inotify instance. NULL does nothing. */
void pd_sd_provider_free(struct pd_sd_provider *p, CURLM *multi);

/* Unix milliseconds and monotonic milliseconds. */
int64_t pd_sd_now_ms(void);
int64_t pd_sd_mono_ms(void);

/* Appends to b the pieces of a configuration key. */
int pd_sd_key_str(struct pd_buf *b, const char *s);
int pd_sd_key_i64(struct pd_buf *b, int64_t v);

#endif
