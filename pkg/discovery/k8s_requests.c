/* k8s_requests.c: the lists and watches of kubernetes_sd, run on the manager's curl
 * multi handle by the provider's steps. Each watch lists (paginated with
 * limit/continue), then watches from the list's resourceVersion with bookmarks; the
 * watch body is read event by event as it arrives (k8s_client.c splits and parses
 * it), never buffered whole, and each event updates the watch's store. An error
 * response or a dropped stream is counted and retried after a backoff (1s doubling
 * to 30s); 410 Gone (as a status or an ERROR event) relists at once; a watch that
 * the server ends (timeoutSeconds) is resumed at once from the last
 * resourceVersion. */
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

/* ---- requests ------------------------------------------------------------------------ */

static void count_failure(struct pd_sd_k8s *k)
{
	if (k->ctr)
		k->ctr->k8s_failures++;
}

void pd_k8s_watch_end_transfer(struct k8s_watch *w, CURLM *multi)
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
		pd_k8s_delete_obj(w, ev.ns, ev.name);
		break;
	case PD_K8S_EVENT_ADDED:
	case PD_K8S_EVENT_MODIFIED:
		if ((rc = pd_k8s_upsert(w, ev.ns, ev.name, ev.raw, ev.rawlen))) {
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
	                   pd_k8s_kind_role[w->kind]);
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
		int urc = pd_k8s_upsert(w, ns, name, doc.text + it->pos, end - it->pos);
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
	pd_k8s_sweep(w);
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
		if (pd_k8s_setup(k, now, &err)) {
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
			pd_k8s_watch_end_transfer(w, multi);
			failed(k, w, now, 0, "%s", err.msg);
			if (w->due < next)
				next = w->due;
		}
	}
	pd_k8s_flush(k);
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
		pd_k8s_watch_end_transfer(w, multi);
		pd_k8s_flush(k);
		p->next_refresh = now; /* the next request may be due at once */
		return 1;
	}
	return 0;
}
