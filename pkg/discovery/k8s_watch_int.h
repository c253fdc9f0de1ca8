/* k8s_watch_int.h: what the kubernetes_sd provider's own files share (k8s.c sets
 * the provider up, k8s_requests.c runs the lists and watches, k8s_store.c keeps
 * their objects and builds the groups, k8s_client.c reads kubeconfig files and the
 * in-cluster service account, splits watch streams into events and builds request
 * URLs, k8s_config.c checks configurations). The builders' contract is k8s_int.h. */
#ifndef PROFD_K8S_WATCH_INT_H
#define PROFD_K8S_WATCH_INT_H

#include "k8s_int.h"

/* ---- limits and defaults ------------------------------------------------------ */

/* One watch event (one line of a watch stream) may be at most this long; a longer
 * one fails the watch, which then relists. Kubernetes objects are at most about
 * 1.5 MiB in etcd, so 16 MiB leaves room for any object with its envelope. */
#define PD_K8S_MAX_EVENT_SIZE (16u << 20)
/* A list page's body may be at most this long (limit=PD_K8S_LIST_PAGE objects). */
#define PD_K8S_MAX_LIST_BODY (256u << 20)
#define PD_K8S_LIST_PAGE 500
/* The server ends a watch after timeoutSeconds, chosen between 5 and 10 minutes as
 * client-go's reflector chooses it; the client then watches again at once. */
#define PD_K8S_WATCH_TIMEOUT_MIN_S 300
/* Backoff after a failed request or a dropped stream: 1s, doubled each time, at most
 * 30s; reset by a list that succeeds or a stream that delivers an event. */
#define PD_K8S_BACKOFF_MIN_MS 1000
#define PD_K8S_BACKOFF_MAX_MS 30000
/* The in-cluster service account directory. */
#define PD_K8S_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* ---- configuration ------------------------------------------------------------ */

const char *pd_k8s_role_name(enum pd_discovery_k8s_role r);
/* 1 when h differs from the default HTTP client settings. */
int pd_k8s_custom_client(const struct pd_http_client_config *h);
/* Syntax checks of selectors, with the selector in the message. */
int pd_k8s_label_selector_check(const char *sel, struct pd_err *err);
int pd_k8s_field_selector_check(const char *sel, struct pd_err *err);

/* A kubeconfig file may be at most this long. */
#define PD_K8S_MAX_KUBECONFIG (4u << 20)

/* ---- the API client (k8s_client.c) --------------------------------------------- */

struct pd_k8s_blob {
	uint8_t *data;
	size_t len;
};

/* Where requests go and how they authenticate. Every string is owned (NULL: not
 * set). */
struct pd_k8s_client {
	char *server;     /* "https://host:port[/prefix]" without a trailing slash */
	char *auth_type;  /* "Bearer" or authorization.type; set with token or token_file */
	char *token;      /* credentials, or */
	char *token_file; /* read on every request, so that a rotated token is used */
	char *basic_user, *basic_pass, *basic_pass_file;
	char *ca_file, *cert_file, *key_file;
	struct pd_k8s_blob ca, cert, key; /* kubeconfig's *-data fields, decoded (PEM) */
	int insecure;
	char *proxy;
	int follow;
	char *namespace; /* the kubeconfig context's namespace, for messages */
};

/* From api_server and the HTTP client settings (h may be NULL). Fills a zeroed c,
 * owned by the caller (pd_k8s_client_fini). */
int pd_k8s_client_from_config(struct pd_k8s_client *c, const char *api_server,
                              const struct pd_http_client_config *h, struct pd_err *err);
/* From a kubeconfig (text of len bytes read from path, which names it in messages and
 * anchors relative file paths): current-context, its cluster (server,
 * certificate-authority[-data], insecure-skip-tls-verify, proxy-url) and user
 * (client-certificate[-data], client-key[-data], token, tokenFile, username and
 * password). PD_EINVAL naming the file and what is wrong. */
int pd_k8s_kubeconfig_parse(struct pd_k8s_client *c, const char *text, size_t len, const char *path,
                            struct pd_err *err);
/* Reads the file (at most PD_K8S_MAX_KUBECONFIG bytes), then as above. */
int pd_k8s_kubeconfig_load(struct pd_k8s_client *c, const char *path, struct pd_err *err);
/* In-cluster: https://host:port (KUBERNETES_SERVICE_HOST / _PORT, passed in), the
 * token and CA of the service account directory sa_dir (NULL:
 * PD_K8S_SERVICEACCOUNT_DIR). The token must be readable now. */
int pd_k8s_client_in_cluster(struct pd_k8s_client *c, const char *sa_dir, const char *host,
                             const char *port, struct pd_err *err);
/* The namespace profd runs in (sa_dir/namespace, trimmed); *out is malloc'd. */
int pd_k8s_own_namespace(const char *sa_dir, char **out, struct pd_err *err);
/* A file's content trimmed of white space (malloc'd), NULL with err set. */
char *pd_k8s_read_trimmed(const char *path, struct pd_err *err);
void pd_k8s_client_fini(struct pd_k8s_client *c);
/* Sets a transfer's authentication (reading the token file now), TLS, proxy and
 * redirect options; may append to *hdrs (owned by the caller). */
int pd_k8s_client_apply(const struct pd_k8s_client *c, CURL *h, struct curl_slist **hdrs,
                        struct pd_err *err);

/* One list page or watch request. */
struct pd_k8s_request {
	enum pd_k8s_kind kind;
	const char *ns; /* NULL or "": all namespaces (and always for nodes, namespaces) */
	const char *label_selector, *field_selector; /* may be NULL */
	int watch;
	const char *resource_version; /* watch: from where */
	int timeout_s;                /* watch: timeoutSeconds */
	const char *cont;             /* list: the continue token of the previous page */
	int limit;                    /* list: limit */
};

/* Appends the request's URL (NUL-terminated) to b: server, the kind's path (/api/v1 or
 * /apis/<group>/v1, /namespaces/<ns>), then the query with every value
 * percent-encoded. */
int pd_k8s_url(struct pd_buf *b, const char *server, const struct pd_k8s_request *r);

/* ---- watch streams --------------------------------------------------------------- */

/* Receives one event line (without its newline); nonzero stops the stream. */
typedef int (*pd_k8s_event_fn)(void *ctx, const char *line, size_t len, struct pd_err *err);

/* Splits a watch body into lines as it arrives, keeping only the unfinished line
 * (at most max bytes: a longer event is an error, PD_ETOOBIG). Blank lines are
 * skipped. */
struct pd_k8s_stream {
	struct pd_buf line;
	size_t max;
};
void pd_k8s_stream_init(struct pd_k8s_stream *s, size_t max); /* 0: the default */
void pd_k8s_stream_fini(struct pd_k8s_stream *s);
/* Feeds n bytes; calls fn for each complete line; returns fn's nonzero result or
 * PD_ETOOBIG / PD_ENOMEM. */
int pd_k8s_stream_feed(struct pd_k8s_stream *s, const char *data, size_t n, pd_k8s_event_fn fn,
                       void *ctx, struct pd_err *err);
/* At the end of the body: a last line without its newline is an event too. */
int pd_k8s_stream_end(struct pd_k8s_stream *s, pd_k8s_event_fn fn, void *ctx, struct pd_err *err);

enum pd_k8s_event_type {
	PD_K8S_EVENT_ADDED,
	PD_K8S_EVENT_MODIFIED,
	PD_K8S_EVENT_DELETED,
	PD_K8S_EVENT_BOOKMARK,
	PD_K8S_EVENT_ERROR,
};

/* One parsed event; pointers into the line or the arena. */
struct pd_k8s_event {
	int type; /* enum pd_k8s_event_type */
	const struct pd_sd_node *object;
	const char *raw; /* the object's JSON text within the line */
	size_t rawlen;
	const char *resource_version; /* metadata.resourceVersion, may be NULL */
	const char *ns, *name;        /* metadata (ns NULL for cluster objects) */
	int64_t code;                 /* ERROR: the Status's code (410: Gone) */
	const char *message;          /* ERROR: its message, may be NULL */
};

/* Parses one event line into ev (nodes from a). PD_EINVAL naming the fault: not
 * JSON, no or unknown type, no object, an object without metadata.name. */
int pd_k8s_event_parse(const char *line, size_t len, struct pd_arena *a, struct pd_k8s_event *ev,
                       struct pd_err *err);

/* The end (one past) of the JSON value starting at text[pos]; -1 when cut. */
int pd_k8s_json_span(const char *text, size_t len, size_t pos, size_t *end);
/* A JSON NUMBER node's value as an integer (0 for anything else). */
int64_t pd_k8s_json_int(const struct pd_sd_node *n);

/* ---- the provider (k8s.c, k8s_store.c, k8s_requests.c) ------------------------ */

struct k8s_obj {
	struct k8s_obj *next;
	char *ns; /* NULL for cluster objects */
	char *name;
	char *raw; /* the object's JSON */
	size_t rawlen;
	uint64_t gen;
	int dirty;     /* role objects: to be rebuilt */
	int has_group; /* role objects: group is its current group */
	struct pd_target_group group;
};

struct k8s_store {
	struct k8s_obj **b;
	size_t nb, n;
};

enum wstate { W_IDLE, W_LIST, W_WATCH };

struct k8s_watch {
	struct pd_sd_k8s *k;
	enum pd_k8s_kind kind;
	char *ns; /* NULL: all namespaces (or a cluster kind) */
	const char *label, *field;
	struct k8s_store store;
	enum wstate state;
	int need_list; /* the next request is a list (else a watch) */
	int listed;    /* a list has finished */
	int64_t due;   /* W_IDLE: monotonic ms of the next request */
	int64_t backoff_ms;
	uint64_t gen;
	size_t stale; /* bytes of objects a list in progress has not seen yet */
	char *rv, *cont;
	CURL *easy;
	struct curl_slist *hdrs;
	struct pd_buf body;
	struct pd_k8s_stream stream;
	int events; /* events of this stream */
	int relist; /* the stream said 410 Gone */
	char *fail; /* the stream's error, or NULL */
	char errbuf[CURL_ERROR_SIZE];
};

struct pd_sd_k8s {
	struct pd_sd_provider *p;
	enum pd_discovery_k8s_role role;
	char *api_server, *kubeconfig, *sa_dir;
	struct pd_http_client_config http;
	int has_http;
	int own_namespace;
	char **namespaces;
	size_t nnamespaces;
	char *sel_role[8], *sel_label[8], *sel_field[8];
	size_t nsel;
	int attach_node, attach_namespace;

	int setup;         /* client and watches exist */
	int64_t setup_due; /* when to try setting up again */
	int64_t setup_backoff;
	struct pd_k8s_client client;
	struct k8s_watch *w;
	size_t nw;
	int changed;                /* a role object's group changed */
	size_t bytes;               /* the objects' JSON held by every watch */
	size_t stale;               /* of which the lists in progress have not seen */
	size_t max_bytes;           /* bytes - stale at most this (PD_K8S_MAX_OBJECT_BYTES) */
	struct pd_sd_counters *ctr; /* the manager's, from the first step on */
	struct pd_arena *scratch;   /* lookups during one build */
};

/* The role name of each kind, for messages (k8s_store.c). */
extern const char *const pd_k8s_kind_role[];

/* Sets up the client, the namespaces and the watches; on failure nothing is left
 * set up (k8s.c). */
int pd_k8s_setup(struct pd_sd_k8s *k, int64_t now, struct pd_err *err);

/* Frees the objects of a store and zeroes it (k8s_store.c). */
void pd_k8s_store_fini(struct k8s_store *s);
/* Stores (or refreshes) an object of w and marks what must be rebuilt; PD_ETOOBIG
 * when it would take the objects' JSON over the provider's bound, PD_ENOMEM. */
int pd_k8s_upsert(struct k8s_watch *w, const char *ns, const char *name, const char *raw,
                  size_t rawlen);
/* Removes an object of w, if it is there. */
void pd_k8s_delete_obj(struct k8s_watch *w, const char *ns, const char *name);
/* After a complete list: drops what it did not see. */
void pd_k8s_sweep(struct k8s_watch *w);
/* Rebuilds the marked objects' groups, then the provider's view of them. */
void pd_k8s_flush(struct pd_sd_k8s *k);

/* Ends a watch's transfer (taken out of multi unless NULL) and frees what it held
 * (k8s_requests.c). */
void pd_k8s_watch_end_transfer(struct k8s_watch *w, CURLM *multi);

#endif
