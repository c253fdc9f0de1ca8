/* k8s.c: the kubernetes_sd provider's configuration and setup. The provider keeps
 * the objects a role needs current with Kubernetes's list-then-watch protocol
 * (k8s_requests.c), in one object store per watch, and turns those of the role's
 * kind into target groups with k8s_roles.c's builders (k8s_store.c).
 *
 * Setup (on the first step, again after a failure): the client from api_server,
 * kubeconfig_file or the in-cluster service account; the namespaces (own_namespace
 * read from the service account); then one watch per (kind, namespace): the
 * role's kind, and the kinds its groups draw on (an endpoints' services and pods,
 * a pod's node with attach_metadata.node, namespaces with
 * attach_metadata.namespace). A failed setup, and freeing the provider, tear the
 * watches down with their transfers and objects. */
#include "k8s_watch_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void teardown(struct pd_sd_k8s *k, CURLM *multi)
{
	for (size_t i = 0; i < k->nw; i++) {
		struct k8s_watch *w = &k->w[i];
		pd_k8s_watch_end_transfer(w, multi);
		pd_k8s_store_fini(&w->store);
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

int pd_k8s_setup(struct pd_sd_k8s *k, int64_t now, struct pd_err *err)
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
