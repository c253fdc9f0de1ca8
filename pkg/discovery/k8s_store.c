/* k8s_store.c: the objects of kubernetes_sd's watches and the target groups made of
 * them. A watch's objects live in its own store (a hash map by namespace/name) as
 * their JSON text, bounded in all by the provider's max_bytes; the builders see them
 * parsed, through the lookup callback. An object of the role's kind that changes is
 * rebuilt; a change of a related object marks the role's objects that may draw on
 * it (those of its namespace, every one for a node) and they are rebuilt once the
 * events at hand are handled. A relist keeps the old objects until it has finished
 * and then drops those it did not see. */
#include "k8s_watch_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- object stores ----------------------------------------------------------------- */

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

void pd_k8s_store_fini(struct k8s_store *s)
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

/* ---- adding and removing objects ------------------------------------------------- */

const char *const pd_k8s_kind_role[] = {
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
int pd_k8s_upsert(struct k8s_watch *w, const char *ns, const char *name, const char *raw,
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

void pd_k8s_delete_obj(struct k8s_watch *w, const char *ns, const char *name)
{
	struct k8s_obj **pp;
	if (ns && !*ns)
		ns = NULL;
	if ((pp = store_slot(&w->store, ns, name)) && *pp)
		remove_obj(w, pp);
}

/* After a complete list: drops what it did not see. */
void pd_k8s_sweep(struct k8s_watch *w)
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
void pd_k8s_flush(struct pd_sd_k8s *k)
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
					         pd_k8s_kind_role[w->kind], o->ns ? o->ns : "",
					         o->name, err.msg[0] ? err.msg : "not valid JSON");
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

void pd_sd_k8s_flush(struct pd_sd_provider *p, struct pd_sd_counters *c)
{
	p->k8s->ctr = c;
	pd_k8s_flush(p->k8s);
}
