/* engine_xfer.c: the scrape engine's transfers, on the engine thread: easy handles
 * lent from a pool, a scrape's request set up (the loop's share, HTTP client
 * settings, credentials read from their files on each scrape) and its end turned
 * into a result queued for the workers. One target must not be able to hold the
 * event loop: libcurl's own content decoding is off (it inflates inside the write
 * path, where a 4 MB body can become gigabytes before the loop gets control back),
 * so the event loop only copies raw bytes, at most a little over the body limit
 * per transfer, and notes the Content-Encoding that a worker undoes
 * (engine_worker.c). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine_int.h"

#ifndef PD_VERSION
#define PD_VERSION "dev"
#endif

/* ---- transfers ----------------------------------------------------------------- */

void engine_xfer_free(struct xfer *x)
{
	if (!x)
		return;
	if (x->easy)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	pd_buf_fini(&x->body);
	free(x);
}

/* Lends an easy handle with its state (engine thread). */
static struct xfer *xfer_get(struct pd_scrape_engine *e)
{
	struct xfer *x = e->pool;
	if (x) {
		e->pool = x->next;
		e->npool--;
		x->next = NULL;
		return x;
	}
	if (!(x = calloc(1, sizeof(*x))))
		return NULL;
	pd_buf_init(&x->body, 0);
	if (!(x->easy = curl_easy_init())) {
		free(x);
		return NULL;
	}
	return x;
}

/* Takes a handle back (engine thread); it is out of the multi handle. */
static void xfer_put(struct pd_scrape_engine *e, struct xfer *x)
{
	x->l = NULL;
	curl_slist_free_all(x->headers);
	x->headers = NULL;
	pd_buf_fini(&x->body);
	pd_buf_init(&x->body, 0);
	if (e->npool >= POOL_KEEP) {
		engine_xfer_free(x);
		return;
	}
	x->next = e->pool;
	e->pool = x;
	e->npool++;
}

/* Copies received bytes, as they came: no decoding here (event loop). */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	size_t limit = x->encoding == ENC_IDENTITY ? x->body_limit : x->raw_limit;
	if (x->body.len + len > limit) {
		x->too_big = 1;
		return 0; /* aborts the transfer */
	}
	if (pd_buf_append(&x->body, p, len))
		return 0;
	return len;
}

/* Notes the Content-Encoding of the response; a new status line (a redirect's
 * next response) starts afresh. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	static const char ce[] = "content-encoding:";
	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		x->encoding = ENC_IDENTITY;
		x->encoding_name[0] = '\0';
	} else if (len > sizeof(ce) - 1 && strncasecmp(p, ce, sizeof(ce) - 1) == 0) {
		size_t i = sizeof(ce) - 1, k = 0;
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		while (i < len && p[i] != '\r' && p[i] != '\n' && k + 1 < sizeof(x->encoding_name))
			x->encoding_name[k++] = p[i++];
		while (k && (x->encoding_name[k - 1] == ' ' || x->encoding_name[k - 1] == '\t'))
			k--;
		x->encoding_name[k] = '\0';
		if (k == 0 || strcasecmp(x->encoding_name, "identity") == 0)
			x->encoding = ENC_IDENTITY;
		else if (strcasecmp(x->encoding_name, "gzip") == 0 || strcasecmp(x->encoding_name, "x-gzip") == 0)
			x->encoding = ENC_GZIP;
		else if (strcasecmp(x->encoding_name, "deflate") == 0)
			x->encoding = ENC_DEFLATE;
		else
			x->encoding = ENC_OTHER;
	}
	return len;
}

/* Reads a small secret file (password, token), trailing newline dropped. */
static char *read_secret(const char *path)
{
	uint8_t *d;
	size_t n;
	if (pd_file_read(path, 64 * 1024, &d, &n, NULL))
		return NULL;
	while (n && (d[n - 1] == '\n' || d[n - 1] == '\r'))
		n--;
	d[n] = '\0';
	return (char *)d;
}

/* Starts a scrape of l (engine thread, e->mu held). */
int engine_start_transfer(struct pd_scrape_engine *e, struct loop *l, int64_t sched)
{
	const struct pd_http_client_config *c = &l->client;
	CURLSH *sh = e->shares[l->share];
	if (!sh) {
		if (!(sh = curl_share_init()))
			return -1;
		curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
		curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
		e->shares[l->share] = sh;
	}
	struct xfer *x = xfer_get(e);
	if (!x)
		return -1;
	CURL *h = x->easy;
	curl_easy_reset(h);
	x->l = l;
	x->body_limit = l->body_limit;
	/* an encoded body may be a little larger than what it decodes to (stored
	 * deflate blocks, headers): give it that much room before its decoding, on a
	 * worker, holds it to the limit exactly */
	x->raw_limit = l->body_limit + l->body_limit / 64 + 4096;
	x->too_big = 0;
	x->encoding = ENC_IDENTITY;
	x->encoding_name[0] = '\0';
	x->errbuf[0] = '\0';
	x->sched = sched;
	x->start_ms = engine_now_ms();
	x->start_mono_us = engine_mono_us();
	curl_easy_setopt(h, CURLOPT_URL, l->url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)l->timeout);
	curl_easy_setopt(h, CURLOPT_SHARE, sh);
	/* the encodings pd_inflate undoes, on a worker: libcurl only passes them on */
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip, deflate");
	curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "profd/" PD_VERSION);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, c->follow_redirects ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	if (c->basic_auth_username) {
		char *pw = c->basic_auth_password_file ? read_secret(c->basic_auth_password_file) : NULL;
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->basic_auth_username);
		curl_easy_setopt(h, CURLOPT_PASSWORD,
				 pw ? pw : c->basic_auth_password ? c->basic_auth_password : "");
		free(pw);
	}
	if (c->authorization_credentials || c->authorization_credentials_file) {
		char *cred = c->authorization_credentials_file
				     ? read_secret(c->authorization_credentials_file)
				     : strdup(c->authorization_credentials);
		if (cred) {
			const char *type = c->authorization_type ? c->authorization_type : "Bearer";
			size_t n = strlen(type) + strlen(cred) + 32;
			char *hdr = malloc(n);
			if (hdr) {
				snprintf(hdr, n, "Authorization: %s %s", type, cred);
				x->headers = curl_slist_append(x->headers, hdr);
				free(hdr);
			}
			free(cred);
		}
	}
	x->headers = curl_slist_append(x->headers, "Accept: application/octet-stream, */*;q=0.1");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->headers);
	if (c->tls_ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->tls_ca_file);
	if (c->tls_cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->tls_cert_file);
	if (c->tls_key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->tls_key_file);
	if (c->tls_insecure_skip_verify) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->proxy_url)
		curl_easy_setopt(h, CURLOPT_PROXY, c->proxy_url);
	if (curl_multi_add_handle(e->multi, h) != CURLM_OK) {
		xfer_put(e, x);
		return -1;
	}
	l->xfer = x;
	l->refs++; /* the transfer */
	return 0;
}

/* Drops the transfer of a loop and the transfer's reference, then the reference the
 * caller held (engine thread, e->mu held). */
void engine_abandon_and_unref(struct pd_scrape_engine *e, struct loop *l)
{
	struct xfer *x = l->xfer;
	if (x) {
		curl_multi_remove_handle(e->multi, x->easy);
		l->xfer = NULL;
		xfer_put(e, x);
		l->refs--; /* the transfer's; the caller's below */
	}
	engine_loop_unref(l);
}

/* Turns a finished transfer into a queued result. e->mu held. */
void engine_finish_transfer(struct pd_scrape_engine *e, struct xfer *x, CURLcode code)
{
	struct loop *l = x->l;
	curl_multi_remove_handle(e->multi, x->easy);
	l->xfer = NULL;
	struct job *j = l->removed ? NULL : calloc(1, sizeof(*j));
	if (!j) {
		xfer_put(e, x);
		engine_loop_unref(l);
		return;
	}
	long status = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	j->l = l; /* takes the transfer's reference */
	j->r.scheduled_ms = x->sched;
	j->r.start_ms = x->start_ms;
	j->r.duration_us = engine_mono_us() - x->start_mono_us;
	j->r.http_status = status;
	j->r.message = j->message;
	j->r.timeout_ms = l->timeout;
	j->r.body_limit = x->body_limit;
	j->r.cancel = &j->cancel;
	j->encoding = x->encoding;
	memcpy(j->encoding_name, x->encoding_name, sizeof(j->encoding_name));
	if (x->too_big) {
		j->r.error = PD_ETOOBIG;
		if (x->encoding == ENC_IDENTITY)
			snprintf(j->message, sizeof(j->message), "body size limit exceeded (limit %zu bytes)",
				 x->body_limit);
		else
			snprintf(j->message, sizeof(j->message),
				 "body size limit exceeded (limit %zu bytes): over %zu bytes received with "
				 "Content-Encoding %s",
				 x->body_limit, x->raw_limit, x->encoding_name);
	} else if (code == CURLE_OPERATION_TIMEDOUT) {
		char dur[32];
		pd_scrape_format_duration(l->timeout, dur, sizeof(dur));
		j->r.error = PD_EIO;
		snprintf(j->message, sizeof(j->message), "scrape_timeout of %s exceeded: %s", dur,
			 x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
	} else if (code != CURLE_OK) {
		j->r.error = PD_EIO;
		snprintf(j->message, sizeof(j->message), "%s",
			 x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
	} else if (status != 200) {
		j->r.error = PD_EIO;
		snprintf(j->message, sizeof(j->message), "server returned HTTP status %ld", status);
	} else if (x->body.len == 0) {
		j->r.error = PD_EINVAL;
		snprintf(j->message, sizeof(j->message), "empty response body");
	} else {
		j->body = pd_buf_steal(&x->body, &j->r.len);
		j->r.body = j->body;
	}
	xfer_put(e, x);
	l->pending = 1;
	struct queue *q = &e->q[j->r.len > HEAVY_BYTES];
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	pthread_cond_signal(&q->cv);
}
