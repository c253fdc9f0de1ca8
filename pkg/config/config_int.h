/* config_int.h: what the files of pkg/config share: the parse context, the YAML
 * node helpers (go-yaml v2 semantics over libyaml's document API, with positions
 * for every error) and the schema entry points. Not part of the public interface. */
#ifndef PROFD_CONFIG_INT_H
#define PROFD_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "profd/config.h"

/* Cap on the memory one configuration may take (strings, arrays, alias copies). */
#define CFG_ARENA_LIMIT (256u << 20)
/* Mapping entries the parser may look at, aliases and merges included: stops
 * "billion laughs" documents long before the arena limit. */
#define CFG_NODE_BUDGET 2000000
/* Nesting of `<<` merge keys. */
#define CFG_MAX_MERGE_DEPTH 32
/* Nesting of collections in a document, checked before libyaml loads it. */
#define CFG_MAX_NESTING 100

struct cfg_ctx {
	struct pd_config *cfg;
	struct pd_arena *a;
	yaml_document_t *doc;
	const char *filename; /* names the text in messages; NULL: positions only */
	const char *dir;      /* relative paths are joined to it; NULL: left alone */
	struct pd_err *err;
	size_t budget;
	size_t wcap; /* capacity of cfg->warnings */
};

/* One key/value pair of a mapping, after `<<` merges are resolved. */
struct cy_entry {
	yaml_node_t *key;
	yaml_node_t *val;
	const char *name; /* the key's text, borrowed from the document: copy to keep */
	size_t order;     /* file order; merged keys after the explicit ones */
	int merged;
};

struct cy_map {
	yaml_node_t *node; /* NULL for a null value */
	struct cy_entry *e;
	size_t n;
};

/* The go-yaml v2 resolution of a plain scalar. */
enum cy_tag { CY_NULL, CY_BOOL, CY_INT, CY_FLOAT, CY_STR, CY_MERGE };

/* ---- yaml.c --------------------------------------------------------------- */

/* Sets err to "file:line:col: message" for node n (NULL: no position) and returns
 * PD_EINVAL. */
int cy_err(struct cfg_ctx *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* As cy_err with a position given by a libyaml mark. */
int cy_err_mark(struct cfg_ctx *c, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records "file:line:col: message" as a warning of the configuration. */
int cy_warn(struct cfg_ctx *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets err to an out-of-memory message and returns PD_ENOMEM. */
int cy_nomem(struct cfg_ctx *c);

/* Arena helpers; NULL (with err set) when out of memory. */
void *cy_alloc(struct cfg_ctx *c, size_t n, size_t size);
char *cy_strdup(struct cfg_ctx *c, const char *s);
char *cy_printf(struct cfg_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s quoted as Go's %q (strconv.Quote), for messages. Never NULL. */
const char *cy_quote(struct cfg_ctx *c, const char *s);
/* p joined to the configuration's directory when relative (Prometheus's JoinDir). */
const char *cy_path(struct cfg_ctx *c, const char *p);

/* Loads the first document of the text; *root is NULL for an empty stream. */
int cy_load(struct cfg_ctx *c, const char *text, size_t len, yaml_document_t *doc,
            yaml_node_t **root);

enum cy_tag cy_resolve(const char *s, size_t len);
/* 1 when n is NULL or a null scalar (`~`, `null`, empty). */
int cy_is_null(const yaml_node_t *n);

/* Reads a mapping (null: empty) with merges resolved and duplicate keys rejected
 * (`key "x" already set in map` / `field x already set in type T`). type names the
 * expected Go-ish type in messages ("scrape_config"); struct_like picks which of the
 * two duplicate messages applies. */
int cy_map(struct cfg_ctx *c, yaml_node_t *n, const char *type, int struct_like, struct cy_map *m);
/* The error for an unknown field of a struct-like mapping. */
int cy_unknown(struct cfg_ctx *c, const struct cy_entry *e, const char *type);
/* Reads a sequence (null: empty). items are borrowed from the document. */
int cy_seq(struct cfg_ctx *c, yaml_node_t *n, const char *type, yaml_node_t ***items,
           size_t *count);

/* Scalar readers, go-yaml v2 style: null gives the zero value ("" / 0 / false);
 * a mapping or sequence, or a scalar of the wrong kind, is a type error
 * (`cannot unmarshal !!str `abc` into bool`). */
int cy_str(struct cfg_ctx *c, yaml_node_t *n, const char **out);
int cy_bool(struct cfg_ctx *c, yaml_node_t *n, int *out);
int cy_int(struct cfg_ctx *c, yaml_node_t *n, int64_t *out);
int cy_uint64(struct cfg_ctx *c, yaml_node_t *n, uint64_t *out);
int cy_duration(struct cfg_ctx *c, yaml_node_t *n, int64_t *ms);
int cy_size(struct cfg_ctx *c, yaml_node_t *n, int64_t *bytes);
/* A sequence of strings (null: none; *out non-NULL when the sequence is present). */
int cy_strlist(struct cfg_ctx *c, yaml_node_t *n, const char ***out, size_t *count);

/* ---- units.c -------------------------------------------------------------- */

/* Go's os.Expand with Prometheus's mapping ($$ -> $, unset -> ""). Arena string. */
char *cfg_expand_env(struct cfg_ctx *c, const char *s);

/* ---- config.c ------------------------------------------------------------- */

/* The directory of path as Go's filepath.Dir gives it ("." for a bare name), in
 * a new string owned by the caller (free()); NULL when out of memory. Both
 * loaders join relative paths inside a file to it. */
char *cfg_dir_of(const char *path);

/* ---- the schema files (parse.c, parse_http.c, parse_sd.c, fields.c) -------- */

struct http_src {
	yaml_node_t *node; /* the mapping they are inlined in */
	/* key nodes, for positions */
	yaml_node_t *k_basic_auth, *k_authorization, *k_bearer_token, *k_bearer_token_file;
	yaml_node_t *k_password_file, *k_credentials_file, *v_auth_type;
	int has_basic_auth, has_authorization;
	const char *ba_user, *ba_pass, *ba_pass_file;
	const char *auth_type, *auth_cred, *auth_cred_file;
	const char *bearer, *bearer_file;
	const char *ca_file, *cert_file, *key_file, *server_name;
	int insecure;
	const char *proxy_url;
	int follow_redirects;
};

/* Per-job positions kept for the checks that run after the whole job is read. */
struct job_src {
	yaml_node_t *node, *job_name, *interval, *timeout;
	/* static targets, flattened in order, for checkStaticTargets */
	yaml_node_t **target_nodes;
	size_t ntarget_nodes, target_cap;
	/* relabel rule nodes */
	yaml_node_t **rule_nodes;
	/* profile types: per entry of sc->profiles, where it was configured */
	struct prof_src *prof;
};

struct prof_src {
	yaml_node_t *key;  /* the type's key in pprof_config, NULL for untouched defaults */
	yaml_node_t *path; /* value nodes, NULL when not given */
	yaml_node_t *seconds;
	int seconds_set;
};

/* fields.c. cfg_is: the entry's key is name. cfg_listed: name is in the
 * NULL-terminated list. cfg_ignored: warns that e is accepted and ignored (0, or
 * PD_ENOMEM). cfg_unsupported: the error for a field profd cannot honour, where
 * (NULL: none) naming its parent ("tls_config"). cfg_valid_utf8: Go's
 * utf8.ValidString. cfg_ends_with: s ends with suffix. cfg_parse_labels: a YAML map of label name
 * -> value as a label set (*out NULL when empty), values $VAR-expanded when expand
 * (external_labels). */
int cfg_is(const struct cy_entry *e, const char *name);
int cfg_listed(const char *name, const char *const *list);
int cfg_ignored(struct cfg_ctx *c, const struct cy_entry *e);
int cfg_unsupported(struct cfg_ctx *c, const struct cy_entry *e, const char *where);
int cfg_ends_with(const char *s, const char *suffix);
int cfg_valid_utf8(const char *s);
int cfg_parse_labels(struct cfg_ctx *c, yaml_node_t *n, int expand, struct pd_labels **out);

/* parse_http.c: h collects the HTTP client fields of the mapping node (init),
 * field by field (cfg_http_field: 1 when e was one of them, 0 when not, else an
 * error code), then checks them and fills out (finish). */
void cfg_http_src_init(struct http_src *h, yaml_node_t *node);
int cfg_http_field(struct cfg_ctx *c, const struct cy_entry *e, struct http_src *h);
int cfg_http_finish(struct cfg_ctx *c, struct http_src *h, struct pd_http_client_config *out);

/* parse_sd.c: each reads one list of a job's service discovery into sc; js keeps
 * the positions the job's later checks name. */
int cfg_parse_static_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc,
                             struct job_src *js);
int cfg_parse_file_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc);
int cfg_parse_http_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc);
int cfg_parse_dns_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc);
int cfg_parse_kubernetes_sd_configs(struct cfg_ctx *c, yaml_node_t *n, struct pd_scrape_config *sc);

/* ---- parse.c -------------------------------------------------------------- */

/* Fills c->cfg from the document root (NULL: empty document). */
int cfg_parse_root(struct cfg_ctx *c, yaml_node_t *root);

#endif
