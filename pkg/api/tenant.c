/* tenant.c: tenants with --auth.multitenancy-enabled. A request's tenant comes
 * from its X-Scope-OrgID header, read as dskit's tenant.TenantID reads it (ids
 * split at '|', each cut at ':' metadata, checked, all the same one), or from
 * the web configuration's binding of its basic-auth user. Series of a tenant
 * carry the reserved label __tenant__ (the default tenant's carry none), which
 * every write adds, every read matches and no answer shows
 * (docs/storage.md#tenants). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "profd/config.h"

/* Endpoints that are the server's, not a tenant's: they are not scoped. */
static int unscoped(int handler)
{
	switch (handler) {
	case H_TARGETS:
	case H_STATUS_CONFIG:
	case H_STATUS_FLAGS:
	case H_STATUS_TSDB:
	case H_STATUS_BUILDINFO:
	case H_STATUS_SYMBOLIZER:
	case H_ADMIN_DELETE_SERIES:
	case H_ADMIN_CLEAN_TOMBSTONES:
	case H_ADMIN_SNAPSHOT:
	case H_HEALTHY:
	case H_READY:
	case H_RELOAD:
	case H_QUIT:
	case H_METRICS:
	case H_DEBUG_PPROF:
	case H_PROM_BUILDINFO:
	case H_DEBUGINFO:
	case H_UI:
	case H_OTHER:
		return 1;
	default:
		return 0;
	}
}

int api_tenant_parse(const char *org_id, char *out, struct pd_err *err)
{
	if (!org_id || !*org_id)
		return pd_err_set(err, PD_EINVAL, "no org id");
	const char *first = NULL;
	size_t flen = 0;
	const char *p = org_id;
	for (;;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);
		const char *colon = memchr(p, ':', n);
		size_t idn = colon ? (size_t)(colon - p) : n;
		int rc = pd_config_tenant_check(p, idn, err);
		if (rc)
			return rc;
		if (!first) {
			first = p;
			flen = idn;
		} else if (idn != flen || memcmp(p, first, idn) != 0) {
			return pd_err_set(err, PD_EINVAL, "multiple org IDs present");
		}
		if (!bar)
			break;
		p = bar + 1;
	}
	memcpy(out, first, flen);
	out[flen] = 0;
	return 0;
}

static int bound_to(const struct pd_web_user *u, const char *tenant)
{
	for (size_t i = 0; i < u->ntenants; i++)
		if (strcmp(u->tenants[i], tenant) == 0)
			return 1;
	return 0;
}

unsigned api_tenant_begin(struct api_req *r, const char *org_id, char *msg, size_t msgsize)
{
	struct pd_err err = {0};
	r->scoped = 0;
	r->tenant_value = "";
	if (!r->srv->o.multitenancy || unscoped(r->handler))
		return 0;
	const struct pd_web_user *u = r->user && r->user->ntenants ? r->user : NULL;
	if ((!org_id || !*org_id) && u && u->ntenants == 1) {
		snprintf(r->tenant, sizeof(r->tenant), "%s", u->tenants[0]);
	} else if (api_tenant_parse(org_id, r->tenant, &err)) {
		snprintf(msg, msgsize, "%s", err.msg);
		return 401;
	} else if (u && !bound_to(u, r->tenant)) {
		snprintf(msg, msgsize, "user %s may not use tenant %s", u->name, r->tenant);
		return 403;
	}
	r->scoped = 1;
	r->tenant_value = strcmp(r->tenant, PD_TENANT_DEFAULT) == 0 ? "" : r->tenant;
	return 0;
}

int api_tenant_matcher(const struct api_req *r, struct pd_storage_matcher *out)
{
	if (!r->scoped)
		return 0;
	*out = (struct pd_storage_matcher){PD_LABELS_TENANT, pd_storage_match_equal, r->tenant_value};
	return 1;
}

int api_tenant_scope(const struct api_req *r, const struct pd_storage_matcher *m, size_t nm,
                     struct pd_storage_matcher **out, size_t *nout)
{
	struct pd_storage_matcher *v = calloc(nm + 1, sizeof(*v));
	if (!v)
		return PD_ENOMEM;
	if (nm)
		memcpy(v, m, nm * sizeof(*v));
	*nout = nm + (size_t)api_tenant_matcher(r, &v[nm]);
	*out = v;
	return 0;
}

int api_sel_scope(const struct api_req *r, struct api_sel *s)
{
	struct pd_storage_matcher t;
	if (!api_tenant_matcher(r, &t))
		return 0;
	struct pd_storage_matcher *v = realloc(s->m, (s->nm + 1) * sizeof(*v));
	if (!v)
		return PD_ENOMEM;
	v[s->nm++] = t;
	s->m = v;
	return 0;
}

size_t api_tenant_label_add(const struct api_req *r, struct pd_storage_label *tl, size_t n)
{
	if (!r->scoped || !*r->tenant_value)
		return n;
	size_t at = 0;
	while (at < n && strcmp(tl[at].name, PD_LABELS_TENANT) < 0)
		at++;
	memmove(&tl[at + 1], &tl[at], (n - at) * sizeof(*tl));
	tl[at] = (struct pd_storage_label){PD_LABELS_TENANT, r->tenant_value};
	return n + 1;
}

int api_tenant_hidden(const char *name)
{
	return name && strcmp(name, PD_LABELS_TENANT) == 0;
}

void api_tenant_error(struct api_resp *w, unsigned status, const char *msg)
{
	w->status = status;
	w->content_type = "application/json";
	jput(w, "{\"code\":");
	jstr(w, status == 403 ? "permission_denied" : "unauthenticated");
	jput(w, ",\"message\":");
	jstr(w, msg);
	jput(w, "}\n");
}
