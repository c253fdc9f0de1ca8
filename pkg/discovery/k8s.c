/* k8s.c: the kubernetes_sd provider. It keeps the objects a role needs current
 * with Kubernetes's list-then-watch protocol and turns those of the role's kind
 * into target groups with k8s_roles.c's builders.
 *
 * Setup (on the first step, again after a failure): the client from api_server,
 * kubeconfig_file or the in-cluster service account; the namespaces (own_namespace
 * read from the service account); then one watch per (kind, namespace): the
 * role's kind, and the kinds its groups draw on (an endpoints' services and pods,
 * a pod's node with attach_metadata.node, namespaces with
 * attach_metadata.namespace). Each watch lists (paginated with limit/continue),
 * then watches from the list's resourceVersion with bookmarks; its transfers run
 * on the manager's curl multi handle and the watch body is read event by event
 * as it arrives (k8s_client.c), never buffered whole.
 *
 * A watch's objects live in its own store (a hash map by namespace/name) as their
 * JSON text; the builders see them parsed, through the lookup callback. An object
 * of the role's kind that changes is rebuilt; a change of a related object marks
 * the role's objects that may draw on it (those of its namespace, every one for a
 * node) and they are rebuilt once the events at hand are handled. A relist keeps
 * the old objects until it has finished and then drops those it did not see.
 *
 * Failures: an error response or a dropped stream is counted and retried after a
 * backoff (1s doubling to 30s); 410 Gone (as a status or an ERROR event) relists at
 * once; a watch that the server ends (timeoutSeconds) is resumed at once from the
 * last resourceVersion. */
#include "k8s_watch_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_TIMEOUT_MS (120 * 1000)
#define CONNECT_TIMEOUT_MS (10 * 1000)
#define ERROR_BODY_MAX (64u << 10)

/* What a list or watch that would take the objects over the bound says. */
#define TOO_MANY_OBJECTS                                                                     \
	"the objects watched for this configuration would exceed %zu bytes of JSON (narrow " \
	"it with namespaces or selectors)"

/* ---- object stores ----------------------------------------------------------------- */

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

static uint64_t obj_hash(const char *ns, const char *name)
{
	uint64_t h = pd_hash_bytes(ns ? ns : "", ns ? strlen(ns) : 0, 7);
	return pd_hash_bytes(name, strlen(name), h);
}

static int same_ns(const char *a, const char *b)
{
	return (!a || !*a) ? (!b || !*b) : (b && !strcmp(a, b));
}

static struct k8s_obj **store_slot(struct k8s_store *s, const char *ns, const char *name)
{
	if (!s->nb)
		return NULL;
	struct k8s_obj **pp = &s->b[obj_hash(ns, name) & (s->nb - 1)];
	for (; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->name, name) && same_ns((*pp)->ns, ns))
			return pp;
	return pp;
}

static struct k8s_obj *store_get(struct k8s_store *s, const char *ns, const char *name)
{
	struct k8s_obj **pp = store_slot(s, ns, name);
	return pp ? *pp : NULL;
}

static int store_grow(struct k8s_store *s)
{
	size_t nb = s->nb ? 2 * s->nb : 64;
	struct k8s_obj **b = calloc(nb, sizeof(*b));
	if (!b)
		return PD_ENOMEM;
	for (size_t i = 0; i < s->nb; i++) {
		struct k8s_obj *o = s->b[i], *next;
		for (; o; o = next) {
			next = o->next;
			size_t h = obj_hash(o->ns, o->name) & (nb - 1);
			o->next = b[h];
			b[h] = o;
		}
	}
	free(s->b);
	s->b = b;
	s->nb = nb;
	return 0;
}

static void obj_free(struct k8s_obj *o)
{
	if (o->has_group)
		pd_k8s_group_fini(&o->group);
	free(o->ns);
	free(o->name);
	free(o->raw);
	free(o);
}

static void store_fini(struct k8s_store *s)
{
	for (size_t i = 0; i < s->nb; i++) {
		struct k8s_obj *o = s->b[i], *next;
		for (; o; o = next) {
			next = o->next;
			obj_free(o);
		}
	}
	free(s->b);
	memset(s, 0, sizeof(*s));
}

/* ---- the provider ------------------------------------------------------------------ */

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

static const char *const kind_role[] = {
    [PD_K8S_KIND_NODE] = "node",
    [PD_K8S_KIND_SERVICE] = "service",
    [PD_K8S_KIND_POD] = "pod",
    [PD_K8S_KIND_ENDPOINTS] = "endpoints",
    [PD_K8S_KIND_ENDPOINTSLICE] = "endpointslice",
    [PD_K8S_KIND_INGRESS] = "ingress",
    [PD_K8S_KIND_NAMESPACE] = "namespace",
};

static int is_role_kind(const struct pd_sd_k8s *k, enum pd_k8s_kind kind)
{
	return (int)kind == (int)k->role;
}

static void count_event(struct pd_sd_k8s *k, enum pd_k8s_kind kind, int ev)
{
	if (k->ctr)
		k->ctr->k8s_events[kind][ev]++;
}

static void count_failure(struct pd_sd_k8s *k)
{
	if (k->ctr)
		k->ctr->k8s_failures++;
}

/* Marks the role's objects that may draw on an object of kind in ns (name: the
 * namespace's own name for namespaces). */
static void mark_dependents(struct pd_sd_k8s *k, enum pd_k8s_kind kind, const char *ns,
                            const char *name)
{
	const char *want = kind == PD_K8S_KIND_NAMESPACE ? name : ns;
	for (size_t i = 0; i < k->nw; i++) {
		struct k8s_watch *w = &k->w[i];
		if (!is_role_kind(k, w->kind))
			continue;
		for (size_t b = 0; b < w->store.nb; b++)
			for (struct k8s_obj *o = w->store.b[b]; o; o = o->next)
				if (kind == PD_K8S_KIND_NODE || same_ns(o->ns, want))
					o->dirty = 1;
	}
}

/* Stores (or refreshes) an object; ev is the event counted when it is new or
 * different. */
static int upsert(struct k8s_watch *w, const char *ns, const char *name, const char *raw,
                  size_t rawlen)
{
	struct pd_sd_k8s *k = w->k;
	struct k8s_obj **pp, *o;
	if (ns && !*ns)
		ns = NULL;
	if (w->store.n >= w->store.nb && store_grow(&w->store))
		return PD_ENOMEM;
	pp = store_slot(&w->store, ns, name);
	/* the bound holds for what is current: objects a relist has not seen yet (it
	 * drops them at its end if it never does) do not count */
	size_t old = *pp ? (*pp)->rawlen : 0;
	int was_stale = *pp && (*pp)->gen != w->gen;
	size_t live = k->bytes - k->stale, after = live - (was_stale ? 0 : old) + rawlen;
	if (after > live && after > k->max_bytes)
		return PD_ETOOBIG;
	if (was_stale) {
		w->stale -= old;
		k->stale -= old;
	}
	if ((o = *pp)) {
		o->gen = w->gen;
		if (o->rawlen == rawlen && !memcmp(o->raw, raw, rawlen))
			return 0;
		char *r = malloc(rawlen + 1);
		if (!r)
			return PD_ENOMEM;
		free(o->raw);
		o->raw = r;
		count_event(k, w->kind, 1);
	} else {
		if (!(o = calloc(1, sizeof(*o))) || !(o->name = strdup(name)) ||
		    (ns && !(o->ns = strdup(ns))) || !(o->raw = malloc(rawlen + 1))) {
			if (o) {
				free(o->name);
				free(o->ns);
				free(o);
			}
			return PD_ENOMEM;
		}
		o->gen = w->gen;
		*pp = o;
		w->store.n++;
		count_event(k, w->kind, 0);
	}
	memcpy(o->raw, raw, rawlen);
	o->raw[rawlen] = '\0';
	k->bytes = k->bytes - o->rawlen + rawlen;
	o->rawlen = rawlen;
	if (is_role_kind(k, w->kind))
		o->dirty = 1;
	else
		mark_dependents(k, w->kind, o->ns, o->name);
	return 0;
}

static void remove_obj(struct k8s_watch *w, struct k8s_obj **pp)
{
	struct k8s_obj *o = *pp;
	struct pd_sd_k8s *k = w->k;
	*pp = o->next;
	w->store.n--;
	k->bytes -= o->rawlen;
	if (o->gen != w->gen) {
		w->stale -= o->rawlen;
		k->stale -= o->rawlen;
	}
	count_event(k, w->kind, 2);
	if (is_role_kind(k, w->kind)) {
		if (o->has_group)
			k->changed = 1;
	} else {
		mark_dependents(k, w->kind, o->ns, o->name);
	}
	obj_free(o);
}

static void delete_obj(struct k8s_watch *w, const char *ns, const char *name)
{
	struct k8s_obj **pp;
	if (ns && !*ns)
		ns = NULL;
	if ((pp = store_slot(&w->store, ns, name)) && *pp)
		remove_obj(w, pp);
}

/* After a complete list: drops what it did not see. */
static void sweep(struct k8s_watch *w)
{
	for (size_t b = 0; b < w->store.nb; b++) {
		struct k8s_obj **pp = &w->store.b[b];
		while (*pp) {
			if ((*pp)->gen != w->gen)
				remove_obj(w, pp);
			else
				pp = &(*pp)->next;
		}
	}
}

/* ---- building groups ----------------------------------------------------------------- */

static const struct pd_sd_node *parse_raw(struct pd_arena *a, const struct k8s_obj *o)
{
	struct pd_sd_doc doc = {.text = o->raw, .len = o->rawlen, .prefix = o->name, .arena = a};
	struct pd_err err = {0};
	if (pd_sd_json_parse(&doc, &err))
		return NULL;
	return doc.root;
}

static const struct pd_sd_node *lookup_get(void *ctx, enum pd_k8s_kind kind, const char *ns,
                                           const char *name)
{
	struct pd_sd_k8s *k = ctx;
	if (!name)
		return NULL;
	if (kind == PD_K8S_KIND_NODE || kind == PD_K8S_KIND_NAMESPACE)
		ns = NULL;
	for (size_t i = 0; i < k->nw; i++) {
		struct k8s_obj *o;
		if (k->w[i].kind != kind || (ns && k->w[i].ns && strcmp(k->w[i].ns, ns)))
			continue;
		if ((o = store_get(&k->w[i].store, ns && *ns ? ns : NULL, name)))
			return parse_raw(k->scratch, o);
	}
	return NULL;
}

static int cmp_group(const void *a, const void *b)
{
	return strcmp(((const struct pd_target_group *)a)->source,
	              ((const struct pd_target_group *)b)->source);
}

/* Rebuilds the marked objects' groups, then the provider's view of them. */
static void flush(struct pd_sd_k8s *k)
{
	struct pd_k8s_lookup lk = {.get = lookup_get,
	                           .ctx = k,
	                           .attach_node = k->attach_node,
	                           .attach_namespace = k->attach_namespace};
	struct pd_sd_provider *p = k->p;
	struct pd_target_group *view;
	size_t total = 0, n = 0;
	char msg[PD_ERR_MSG_MAX + 640];

	msg[0] = '\0';
	for (size_t i = 0; i < k->nw; i++) {
		struct k8s_watch *w = &k->w[i];
		if (!is_role_kind(k, w->kind))
			continue;
		for (size_t b = 0; b < w->store.nb; b++)
			for (struct k8s_obj *o = w->store.b[b]; o; o = o->next) {
				struct pd_target_group g = {0};
				struct pd_err err = {0};
				const struct pd_sd_node *root;
				if (!o->dirty)
					continue;
				if (!(k->scratch = pd_arena_create(8 * o->rawlen + (1u << 20))))
					continue; /* stays dirty: tried again next time */
				o->dirty = 0;
				if (!(root = parse_raw(k->scratch, o)) ||
				    pd_k8s_build(k->role, root, &lk, &g, &err)) {
					snprintf(msg, sizeof(msg), "%s %s/%s: %s",
					         kind_role[w->kind], o->ns ? o->ns : "", o->name,
					         err.msg[0] ? err.msg : "not valid JSON");
					if (o->has_group) {
						pd_k8s_group_fini(&o->group);
						o->has_group = 0;
						k->changed = 1;
					}
				} else {
					if (!o->has_group ||
					    !pd_sd_groups_equal(&o->group, 1, &g, 1))
						k->changed = 1;
					if (o->has_group)
						pd_k8s_group_fini(&o->group);
					o->group = g;
					o->has_group = 1;
				}
				pd_arena_destroy(k->scratch);
				k->scratch = NULL;
			}
	}
	if (msg[0])
		pd_log_warn("discovery", "kubernetes_sd: cannot build a target group", "err=%s", msg);
	if (!k->changed)
		return;
	for (size_t i = 0; i < k->nw; i++)
		if (is_role_kind(k, k->w[i].kind))
			total += k->w[i].store.n;
	/* the old view points at groups that may be gone: it is replaced whole, and
	 * k->changed says whether anything differs */
	free(p->groups);
	p->groups = NULL;
	p->ngroups = 0;
	p->changed = 1;
	if (!(view = malloc((total ? total : 1) * sizeof(*view))))
		return; /* no groups until the next round tries again */
	k->changed = 0;
	for (size_t i = 0; i < k->nw; i++) {
		struct k8s_watch *w = &k->w[i];
		if (!is_role_kind(k, w->kind))
			continue;
		for (size_t b = 0; b < w->store.nb; b++)
			for (struct k8s_obj *o = w->store.b[b]; o; o = o->next)
				if (o->has_group)
					view[n++] = o->group;
	}
	qsort(view, n, sizeof(*view), cmp_group);
	p->groups = view;
	p->ngroups = n;
}

/* ---- configuration ------------------------------------------------------------------- */

static int sel_kind(const char *role)
{
	int r = pd_discovery_k8s_role_parse(role);
	return r; /* the kinds share the roles' numbers */
}

int pd_sd_k8s_key(struct pd_buf *b, const struct pd_discovery_kubernetes_config *c)
{
	int rc = pd_sd_key_str(b, "kubernetes");
	if (!rc)
		rc = pd_sd_key_str(b, c->role);
	if (!rc)
		rc = pd_sd_key_str(b, c->api_server);
	if (!rc)
		rc = pd_sd_key_str(b, c->kubeconfig_file);
	if (!rc)
		rc = pd_sd_key_i64(b,
		                   c->own_namespace * 4 + c->attach_node * 2 + c->attach_namespace);
	if (!rc)
		rc = pd_sd_key_i64(b, (int64_t)pd_http_client_config_hash(c->client));
	for (size_t i = 0; i < c->nnamespaces && !rc; i++)
		rc = pd_sd_key_str(b, c->namespaces[i]);
	if (!rc)
		rc = pd_sd_key_i64(b, -1);
	for (size_t i = 0; i < c->nselectors && !rc; i++) {
		rc = pd_sd_key_str(b, c->selectors[i].role);
		if (!rc)
			rc = pd_sd_key_str(b, c->selectors[i].label);
		if (!rc)
			rc = pd_sd_key_str(b, c->selectors[i].field);
	}
	return rc;
}

int pd_sd_k8s_init(struct pd_sd_provider *p, const struct pd_discovery_kubernetes_config *c,
                   const char *sa_dir, size_t max_bytes)
{
	struct pd_sd_k8s *k = calloc(1, sizeof(*k));
	size_t n;
	if (!k)
		return PD_ENOMEM;
	k->max_bytes = max_bytes ? max_bytes : PD_DISCOVERY_K8S_MAX_OBJECT_BYTES;
	p->kind = PD_SD_K8S;
	p->ifd = -1;
	p->k8s = k;
	k->p = p;
	k->role = (enum pd_discovery_k8s_role)pd_discovery_k8s_role_parse(c->role);
	k->own_namespace = c->own_namespace;
	k->attach_node = c->attach_node;
	k->attach_namespace = c->attach_namespace;
	if ((c->api_server && !(k->api_server = strdup(c->api_server))) ||
	    (c->kubeconfig_file && !(k->kubeconfig = strdup(c->kubeconfig_file))) ||
	    (sa_dir && !(k->sa_dir = strdup(sa_dir))))
		return PD_ENOMEM;
	if (c->client) {
		pd_http_client_config_copy(&k->http, c->client);
		k->has_http = 1;
	}
	if (c->nnamespaces && !(k->namespaces = calloc(c->nnamespaces, sizeof(char *))))
		return PD_ENOMEM;
	for (size_t i = 0; i < c->nnamespaces; i++)
		if (!(k->namespaces[k->nnamespaces++] = strdup(c->namespaces[i])))
			return PD_ENOMEM;
	for (size_t i = 0; i < c->nselectors && i < 8; i++) {
		k->nsel++;
		if (!(k->sel_role[i] = strdup(c->selectors[i].role)) ||
		    (c->selectors[i].label && !(k->sel_label[i] = strdup(c->selectors[i].label))) ||
		    (c->selectors[i].field && !(k->sel_field[i] = strdup(c->selectors[i].field))))
			return PD_ENOMEM;
	}
	n = strlen(c->role) + (c->api_server ? strlen(c->api_server) : 0) +
	    (c->kubeconfig_file ? strlen(c->kubeconfig_file) : 0) + 32;
	if (!(p->detail = malloc(n)))
		return PD_ENOMEM;
	if (c->api_server)
		snprintf(p->detail, n, "%s: %s", c->role, c->api_server);
	else if (c->kubeconfig_file)
		snprintf(p->detail, n, "%s: kubeconfig %s", c->role, c->kubeconfig_file);
	else
		snprintf(p->detail, n, "%s: in-cluster", c->role);
	return 0;
}

static void watch_end_transfer(struct k8s_watch *w, CURLM *multi)
{
	if (w->easy) {
		if (multi)
			curl_multi_remove_handle(multi, w->easy);
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
	}
	curl_slist_free_all(w->hdrs);
	w->hdrs = NULL;
	pd_buf_fini(&w->body);
	pd_k8s_stream_fini(&w->stream);
	free(w->fail);
	w->fail = NULL;
}

static void teardown(struct pd_sd_k8s *k, CURLM *multi)
{
	for (size_t i = 0; i < k->nw; i++) {
		struct k8s_watch *w = &k->w[i];
		watch_end_transfer(w, multi);
		store_fini(&w->store);
		w->stale = 0;
		free(w->ns);
		free(w->rv);
		free(w->cont);
	}
	free(k->w);
	k->w = NULL;
	k->nw = 0;
	pd_k8s_client_fini(&k->client);
	k->setup = 0;
	k->bytes = k->stale = 0;
}

void pd_sd_k8s_free(struct pd_sd_provider *p, CURLM *multi)
{
	struct pd_sd_k8s *k = p->k8s;
	if (!k)
		return;
	teardown(k, multi);
	free(k->api_server);
	free(k->kubeconfig);
	free(k->sa_dir);
	if (k->has_http)
		pd_http_client_config_free(&k->http);
	for (size_t i = 0; i < k->nnamespaces; i++)
		free(k->namespaces[i]);
	free(k->namespaces);
	for (size_t i = 0; i < k->nsel; i++) {
		free(k->sel_role[i]);
		free(k->sel_label[i]);
		free(k->sel_field[i]);
	}
	free(k);
	p->k8s = NULL;
}

/* Adds the watches of one kind: one per namespace (or for all). */
static int add_watches(struct pd_sd_k8s *k, enum pd_k8s_kind kind, char **nss, size_t nns,
                       int64_t now)
{
	int cluster = kind == PD_K8S_KIND_NODE || kind == PD_K8S_KIND_NAMESPACE;
	size_t count = cluster && kind == PD_K8S_KIND_NODE ? 1 : (nns ? nns : 1);
	for (size_t i = 0; i < count; i++) {
		struct k8s_watch *w = &k->w[k->nw++];
		memset(w, 0, sizeof(*w));
		w->k = k;
		w->kind = kind;
		w->state = W_IDLE;
		w->need_list = 1;
		w->due = now;
		w->backoff_ms = PD_K8S_BACKOFF_MIN_MS;
		if (nns && kind == PD_K8S_KIND_NAMESPACE) {
			/* only the namespaces watched, by name */
			size_t n = strlen(nss[i]) + 16;
			if (!(w->ns = malloc(n)))
				return PD_ENOMEM;
			snprintf(w->ns, n, "metadata.name=%s", nss[i]);
			w->field = w->ns; /* ns doubles as the field selector; not a namespace */
		} else if (nns && !cluster && !(w->ns = strdup(nss[i]))) {
			return PD_ENOMEM;
		}
		for (size_t j = 0; j < k->nsel; j++)
			if (sel_kind(k->sel_role[j]) == (int)kind) {
				w->label = k->sel_label[j];
				w->field = k->sel_field[j];
			}
	}
	return 0;
}

static int do_setup(struct pd_sd_k8s *k, int64_t now, struct pd_err *err)
{
	char **nss = NULL, *own = NULL;
	size_t nns = 0, cap;
	int rc;
	enum pd_k8s_kind role_kind = (enum pd_k8s_kind)k->role;
	int ep = k->role == PD_DISCOVERY_K8S_ENDPOINTS || k->role == PD_DISCOVERY_K8S_ENDPOINTSLICE;

	if (k->api_server)
		rc = pd_k8s_client_from_config(&k->client, k->api_server,
		                               k->has_http ? &k->http : NULL, err);
	else if (k->kubeconfig)
		rc = pd_k8s_kubeconfig_load(&k->client, k->kubeconfig, err);
	else
		rc = pd_k8s_client_in_cluster(&k->client, k->sa_dir,
		                              getenv("KUBERNETES_SERVICE_HOST"),
		                              getenv("KUBERNETES_SERVICE_PORT"), err);
	if (rc)
		return rc;
	if (k->own_namespace && (rc = pd_k8s_own_namespace(k->sa_dir, &own, err)))
		goto fail;
	nns = k->nnamespaces + (own ? 1 : 0);
	if (nns && !(nss = calloc(nns, sizeof(*nss)))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	nns = 0;
	if (own)
		nss[nns++] = own;
	for (size_t i = 0; i < k->nnamespaces; i++) {
		int dup = 0;
		for (size_t j = 0; j < nns; j++)
			dup |= !strcmp(nss[j], k->namespaces[i]);
		if (!dup)
			nss[nns++] = k->namespaces[i];
	}
	cap = 4 * (nns ? nns : 1) + 2;
	if (!(k->w = calloc(cap, sizeof(*k->w)))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	rc = add_watches(k, role_kind, nss, nns, now);
	if (!rc && ep)
		rc = add_watches(k, PD_K8S_KIND_SERVICE, nss, nns, now);
	if (!rc && ep)
		rc = add_watches(k, PD_K8S_KIND_POD, nss, nns, now);
	if (!rc && k->attach_node && (ep || k->role == PD_DISCOVERY_K8S_POD))
		rc = add_watches(k, PD_K8S_KIND_NODE, nss, nns, now);
	if (!rc && k->attach_namespace && k->role != PD_DISCOVERY_K8S_NODE)
		rc = add_watches(k, PD_K8S_KIND_NAMESPACE, nss, nns, now);
	if (rc) {
		pd_err_set(err, rc, "out of memory");
		goto fail;
	}
	if (k->p->detail) {
		size_t n = strlen(k->client.server) + 32;
		char *d = malloc(n);
		if (d) {
			snprintf(d, n, "%s: %s", pd_k8s_role_name(k->role), k->client.server);
			free(k->p->detail);
			k->p->detail = d;
		}
	}
	free(nss);
	free(own);
	k->setup = 1;
	return 0;
fail:
	free(nss);
	free(own);
	teardown(k, NULL);
	return rc;
}

/* ---- requests ------------------------------------------------------------------------ */

static size_t on_list_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct k8s_watch *w = ud;
	size_t n = size * nmemb;
	if (pd_buf_append(&w->body, data, n))
		return 0;
	return n;
}

static int on_event(void *ctx, const char *line, size_t len, struct pd_err *err)
{
	struct k8s_watch *w = ctx;
	struct pd_arena *a = pd_arena_create(8 * len + (64u << 10));
	struct pd_k8s_event ev;
	int rc;
	if (!a)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((rc = pd_k8s_event_parse(line, len, a, &ev, err)))
		goto out;
	w->events++;
	switch (ev.type) {
	case PD_K8S_EVENT_ERROR:
		if (ev.code == 410) {
			w->relist = 1;
			rc = PD_EINVAL; /* stop the stream */
			pd_err_set(err, rc, "410 Gone");
		} else {
			rc = pd_err_set(err, PD_EINVAL, "watch error %lld: %s", (long long)ev.code,
			                ev.message ? ev.message : "");
		}
		goto out;
	case PD_K8S_EVENT_DELETED:
		delete_obj(w, ev.ns, ev.name);
		break;
	case PD_K8S_EVENT_ADDED:
	case PD_K8S_EVENT_MODIFIED:
		if ((rc = upsert(w, ev.ns, ev.name, ev.raw, ev.rawlen))) {
			/* the watch fails and lists again after its backoff (events past
			 * this one may delete objects; a resumed watch would stop here) */
			if (rc == PD_ETOOBIG)
				pd_err_set(err, rc, TOO_MANY_OBJECTS, w->k->max_bytes);
			else
				pd_err_set(err, rc, "out of memory");
			goto out;
		}
		break;
	}
	if (ev.resource_version && *ev.resource_version) {
		char *rv = strdup(ev.resource_version);
		if (rv) {
			free(w->rv);
			w->rv = rv;
		}
	}
out:
	pd_arena_destroy(a);
	return rc;
}

static size_t on_watch_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct k8s_watch *w = ud;
	size_t n = size * nmemb;
	struct pd_err err = {0};
	long code = 0;
	if (w->fail || w->relist)
		return 0;
	curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) { /* keep the start of an error response for the message */
		size_t room = ERROR_BODY_MAX > w->body.len ? ERROR_BODY_MAX - w->body.len : 0;
		pd_buf_append(&w->body, data, n < room ? n : room);
		return n;
	}
	if (pd_k8s_stream_feed(&w->stream, data, n, on_event, w, &err)) {
		if (!w->relist)
			w->fail = strdup(err.msg);
		return 0;
	}
	return n;
}

static int start_request(struct pd_sd_k8s *k, struct k8s_watch *w, CURLM *multi, struct pd_err *err)
{
	struct pd_buf url;
	struct pd_k8s_request r = {.kind = w->kind,
	                           .ns = w->kind == PD_K8S_KIND_NAMESPACE ? NULL : w->ns,
	                           .label_selector = w->label,
	                           .field_selector = w->field,
	                           .watch = !w->need_list,
	                           .resource_version = w->rv,
	                           .cont = w->cont,
	                           .limit = PD_K8S_LIST_PAGE};
	CURL *h;
	int rc;

	r.timeout_s = PD_K8S_WATCH_TIMEOUT_MIN_S +
	              (int)(pd_hash_u64((uint64_t)pd_sd_mono_ms(), (uint64_t)(uintptr_t)w) %
	                    PD_K8S_WATCH_TIMEOUT_MIN_S);
	pd_buf_init(&url, 0);
	if (pd_k8s_url(&url, k->client.server, &r))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (!(h = curl_easy_init())) {
		pd_buf_fini(&url);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	w->easy = h;
	w->relist = 0;
	w->events = 0;
	w->errbuf[0] = '\0';
	pd_buf_init(&w->body, r.watch ? ERROR_BODY_MAX : PD_K8S_MAX_LIST_BODY);
	pd_k8s_stream_init(&w->stream, PD_K8S_MAX_EVENT_SIZE);
	if (!(w->hdrs = curl_slist_append(NULL, "Accept: application/json"))) {
		pd_buf_fini(&url);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	if ((rc = pd_k8s_client_apply(&k->client, h, &w->hdrs, err))) {
		pd_buf_fini(&url);
		return rc;
	}
	curl_easy_setopt(h, CURLOPT_URL, (const char *)url.data);
	pd_buf_fini(&url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, k->p);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, w->hdrs);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "profd");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, w->errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, r.watch ? on_watch_body : on_list_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	/* a watch's server ends it after timeoutSeconds; a minute more is a hung server */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
	                 r.watch ? (long)(r.timeout_s + 60) * 1000L : (long)LIST_TIMEOUT_MS);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
	if (curl_multi_add_handle(multi, h) != CURLM_OK)
		return pd_err_set(err, PD_ENOMEM, "cannot start the HTTP request");
	w->state = r.watch ? W_WATCH : W_LIST;
	return 0;
}

/* A failed request: counted, reported, retried after the backoff; then ... */
static void failed(struct pd_sd_k8s *k, struct k8s_watch *w, int64_t now, int relist,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void failed(struct pd_sd_k8s *k, struct k8s_watch *w, int64_t now, int relist,
                   const char *fmt, ...)
{
	char msg[PD_ERR_MSG_MAX + 64];
	va_list ap;
	int off = snprintf(msg, sizeof(msg), "%s %s: ", w->need_list ? "list" : "watch",
	                   kind_role[w->kind]);
	va_start(ap, fmt);
	vsnprintf(msg + off, sizeof(msg) - (size_t)off, fmt, ap);
	va_end(ap);
	count_failure(k);
	pd_sd_provider_set_result(k->p, msg);
	pd_log_warn("discovery", "kubernetes_sd: request failed", "err=%s", msg);
	w->state = W_IDLE;
	w->due = now + w->backoff_ms;
	w->backoff_ms =
	    w->backoff_ms * 2 > PD_K8S_BACKOFF_MAX_MS ? PD_K8S_BACKOFF_MAX_MS : w->backoff_ms * 2;
	if (relist) {
		w->need_list = 1;
		free(w->cont);
		w->cont = NULL;
	}
}

/* How an unsuccessful HTTP status reads: the code and the Status's message. */
static void status_msg(struct k8s_watch *w, long code, char *dst, size_t cap)
{
	const char *m = NULL;
	struct pd_arena *a = pd_arena_create(1u << 20);
	if (a && w->body.len) {
		struct pd_sd_doc doc = {.text = (const char *)w->body.data,
		                        .len = w->body.len,
		                        .prefix = "status",
		                        .arena = a};
		struct pd_err err = {0};
		if (!pd_sd_json_parse(&doc, &err) && doc.root && doc.root->kind == PD_SD_MAP)
			for (size_t i = 0; i + 1 < 2 * doc.root->n; i += 2)
				if (doc.root->kids[i]->str &&
				    !strcmp(doc.root->kids[i]->str, "message") &&
				    doc.root->kids[i + 1]->kind == PD_SD_STRING)
					m = doc.root->kids[i + 1]->str;
	}
	snprintf(dst, cap, "server returned HTTP status %ld%s%s", code, m ? ": " : "", m ? m : "");
	pd_arena_destroy(a);
}

static int all_listed(const struct pd_sd_k8s *k)
{
	for (size_t i = 0; i < k->nw; i++)
		if (!k->w[i].listed)
			return 0;
	return 1;
}

static void list_done(struct pd_sd_k8s *k, struct k8s_watch *w, CURLcode rc, int64_t now)
{
	struct pd_sd_doc doc = {0};
	struct pd_err err = {0};
	const struct pd_sd_node *items = NULL, *meta = NULL;
	long code = 0;
	char msg[PD_ERR_MSG_MAX + 64];

	if (rc != CURLE_OK) {
		if (rc == CURLE_WRITE_ERROR)
			failed(k, w, now, 1, "the response is larger than %u bytes",
			       (unsigned)PD_K8S_MAX_LIST_BODY);
		else
			failed(k, w, now, 1, "%s",
			       w->errbuf[0] ? w->errbuf : curl_easy_strerror(rc));
		return;
	}
	curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code == 410 && w->cont) { /* the continue token expired: list again */
		free(w->cont);
		w->cont = NULL;
		w->state = W_IDLE;
		w->due = now;
		return;
	}
	if (code != 200) {
		status_msg(w, code, msg, sizeof(msg));
		failed(k, w, now, 1, "%s", msg);
		return;
	}
	doc.text = w->body.len ? (const char *)w->body.data : "";
	doc.len = w->body.len;
	doc.prefix = "list";
	if (!(doc.arena = pd_arena_create(8 * doc.len + (1u << 20)))) {
		failed(k, w, now, 1, "out of memory");
		return;
	}
	if (pd_sd_json_parse(&doc, &err)) {
		failed(k, w, now, 1, "%s", err.msg);
		goto out;
	}
	for (size_t i = 0; doc.root && doc.root->kind == PD_SD_MAP && i < doc.root->n; i++) {
		const struct pd_sd_node *key = doc.root->kids[2 * i];
		if (key->str && !strcmp(key->str, "items"))
			items = doc.root->kids[2 * i + 1];
		else if (key->str && !strcmp(key->str, "metadata"))
			meta = doc.root->kids[2 * i + 1];
	}
	if (!meta || meta->kind != PD_SD_MAP) {
		failed(k, w, now, 1, "the response is not a list (no metadata)");
		goto out;
	}
	if (!w->cont) { /* a new list: what it does not see goes at its end */
		w->gen++;
		k->stale -= w->stale;
		w->stale = 0;
		for (size_t b = 0; b < w->store.nb; b++)
			for (struct k8s_obj *o = w->store.b[b]; o; o = o->next)
				w->stale += o->rawlen;
		k->stale += w->stale;
	}
	for (size_t i = 0; items && items->kind == PD_SD_LIST && i < items->n; i++) {
		const struct pd_sd_node *it = items->kids[i], *md = NULL;
		const char *name = NULL, *ns = NULL;
		size_t end;
		for (size_t j = 0; it->kind == PD_SD_MAP && j < it->n; j++)
			if (it->kids[2 * j]->str && !strcmp(it->kids[2 * j]->str, "metadata"))
				md = it->kids[2 * j + 1];
		for (size_t j = 0; md && md->kind == PD_SD_MAP && j < md->n; j++) {
			const struct pd_sd_node *kk = md->kids[2 * j], *v = md->kids[2 * j + 1];
			if (v->kind != PD_SD_STRING || !kk->str)
				continue;
			if (!strcmp(kk->str, "name"))
				name = v->str;
			else if (!strcmp(kk->str, "namespace"))
				ns = v->str;
		}
		if (!name || !*name || pd_k8s_json_span(doc.text, doc.len, it->pos, &end))
			continue; /* nothing can name it */
		int urc = upsert(w, ns, name, doc.text + it->pos, end - it->pos);
		if (urc == PD_ETOOBIG) {
			failed(k, w, now, 1, TOO_MANY_OBJECTS, k->max_bytes);
			goto out;
		} else if (urc) {
			failed(k, w, now, 1, "out of memory");
			goto out;
		}
	}
	free(w->cont);
	w->cont = NULL;
	free(w->rv);
	w->rv = NULL;
	for (size_t j = 0; j < meta->n; j++) {
		const struct pd_sd_node *kk = meta->kids[2 * j], *v = meta->kids[2 * j + 1];
		if (v->kind != PD_SD_STRING || !kk->str || !v->str || !*v->str)
			continue;
		if (!strcmp(kk->str, "continue"))
			w->cont = strdup(v->str);
		else if (!strcmp(kk->str, "resourceVersion"))
			w->rv = strdup(v->str);
	}
	w->state = W_IDLE;
	w->due = now;
	if (w->cont)
		goto out; /* the next page at once */
	sweep(w);
	w->listed = 1;
	w->need_list = 0;
	w->backoff_ms = PD_K8S_BACKOFF_MIN_MS;
	if (all_listed(k))
		pd_sd_provider_set_result(k->p, NULL);
out:
	pd_arena_destroy(doc.arena);
}

static void watch_done(struct pd_sd_k8s *k, struct k8s_watch *w, CURLcode rc, int64_t now)
{
	struct pd_err err = {0};
	long code = 0;
	char msg[PD_ERR_MSG_MAX + 64];

	curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &code);
	if (rc == CURLE_OK && code == 200 && !w->relist && !w->fail &&
	    pd_k8s_stream_end(&w->stream, on_event, w, &err) && !w->relist)
		w->fail = strdup(err.msg);
	if (w->events)
		w->backoff_ms = PD_K8S_BACKOFF_MIN_MS;
	if (w->relist || code == 410) { /* too old: list again, at once */
		w->state = W_IDLE;
		w->need_list = 1;
		w->due = now;
		return;
	}
	if (w->fail) {
		failed(k, w, now, 1, "%s", w->fail);
		return;
	}
	if (rc != CURLE_OK) { /* dropped: watch again from where it was */
		failed(k, w, now, !w->rv, "%s", w->errbuf[0] ? w->errbuf : curl_easy_strerror(rc));
		return;
	}
	if (code != 200) {
		status_msg(w, code, msg, sizeof(msg));
		failed(k, w, now, !w->rv, "%s", msg);
		return;
	}
	/* the server ended it (timeoutSeconds): on at once */
	w->state = W_IDLE;
	w->need_list = !w->rv;
	w->due = now;
}

int64_t pd_sd_k8s_step(struct pd_sd_provider *p, CURLM *multi, int64_t now,
                       struct pd_sd_counters *c)
{
	struct pd_sd_k8s *k = p->k8s;
	struct pd_err err = {0};
	int64_t next = INT64_MAX;

	k->ctr = c;
	if (!k->setup) {
		if (now < k->setup_due)
			return k->setup_due;
		if (do_setup(k, now, &err)) {
			k->setup_backoff =
			    k->setup_backoff ? 2 * k->setup_backoff : PD_K8S_BACKOFF_MIN_MS;
			if (k->setup_backoff > PD_K8S_BACKOFF_MAX_MS)
				k->setup_backoff = PD_K8S_BACKOFF_MAX_MS;
			k->setup_due = now + k->setup_backoff;
			count_failure(k);
			pd_sd_provider_set_result(p, err.msg);
			return k->setup_due;
		}
		k->setup_backoff = 0;
	}
	for (size_t i = 0; i < k->nw; i++) {
		struct k8s_watch *w = &k->w[i];
		if (w->state != W_IDLE)
			continue;
		if (w->due > now) {
			if (w->due < next)
				next = w->due;
			continue;
		}
		if (start_request(k, w, multi, &err)) {
			watch_end_transfer(w, multi);
			failed(k, w, now, 0, "%s", err.msg);
			if (w->due < next)
				next = w->due;
		}
	}
	flush(k);
	return next;
}

int pd_sd_k8s_done(struct pd_sd_provider *p, CURLM *multi, CURL *easy, CURLcode rc,
                   struct pd_sd_counters *c)
{
	struct pd_sd_k8s *k = p->k8s;
	int64_t now = pd_sd_mono_ms();
	for (size_t i = 0; i < k->nw; i++) {
		struct k8s_watch *w = &k->w[i];
		if (w->easy != easy)
			continue;
		k->ctr = c;
		if (w->state == W_LIST)
			list_done(k, w, rc, now);
		else
			watch_done(k, w, rc, now);
		watch_end_transfer(w, multi);
		flush(k);
		p->next_refresh = now; /* the next request may be due at once */
		return 1;
	}
	return 0;
}

void pd_sd_k8s_flush(struct pd_sd_provider *p, struct pd_sd_counters *c)
{
	p->k8s->ctr = c;
	flush(p->k8s);
}
