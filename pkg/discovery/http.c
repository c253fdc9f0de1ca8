/* http.c: the http_sd provider, as Prometheus's discovery/http: every
 * refresh_interval, GET the URL (Accept: application/json,
 * X-Prometheus-Refresh-Interval-Seconds) with the HTTP client settings; a response
 * counts only with status 200 and Content-Type application/json (optionally
 * ;charset=utf-8), and its body is the JSON target-group format. Groups are named
 * "<url>:<i>" and labelled __meta_url="<url>". A failed refresh keeps the last good
 * groups. Requests run on the manager's curl multi handle, so a slow server never
 * holds up the manager thread. */
#include "discovery_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int pd_sd_http_validate(const struct pd_discovery_http_config *c, struct pd_err *err)
{
	const char *u = c->url, *colon, *host, *end;
	if (!u || !*u)
		return pd_err_set(err, PD_EINVAL, "URL is missing");
	colon = strchr(u, ':');
	if (!colon || ((size_t)(colon - u) != 4 && (size_t)(colon - u) != 5) ||
	    (strncasecmp(u, "http:", 5) && strncasecmp(u, "https:", 6)))
		return pd_err_set(err, PD_EINVAL, "URL scheme must be 'http' or 'https'");
	if (strncmp(colon + 1, "//", 2))
		return pd_err_set(err, PD_EINVAL, "host is missing in URL");
	host = colon + 3;
	end = host + strcspn(host, "/?#");
	for (const char *at = host; at < end; at++)
		if (*at == '@')
			host = at + 1;
	if (host == end)
		return pd_err_set(err, PD_EINVAL, "host is missing in URL");
	if (c->client && c->client->tls_server_name && *c->client->tls_server_name)
		return pd_err_set(err, PD_EINVAL,
		                  "tls_config.server_name is not supported for http_sd_configs");
	return 0;
}

int pd_sd_http_key(struct pd_buf *b, const struct pd_discovery_http_config *c)
{
	const struct pd_http_client_config *h = c->client;
	static const struct pd_http_client_config none = {.follow_redirects = 1};
	int rc = 0;
	if (!h)
		h = &none;
	const char *s[] = {"http",
	                   c->url,
	                   h->basic_auth_username,
	                   h->basic_auth_password,
	                   h->basic_auth_password_file,
	                   h->authorization_type,
	                   h->authorization_credentials,
	                   h->authorization_credentials_file,
	                   h->tls_ca_file,
	                   h->tls_cert_file,
	                   h->tls_key_file,
	                   h->tls_server_name,
	                   h->proxy_url};
	int64_t v[] = {c->refresh_interval_ms > 0 ? c->refresh_interval_ms
	                                          : PD_DISCOVERY_HTTP_REFRESH_DEFAULT_MS,
	               c->timeout_ms > 0 ? c->timeout_ms : 0, (int64_t)c->body_size_limit,
	               h->tls_insecure_skip_verify, h->follow_redirects};
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]) && !rc; i++)
		rc = pd_sd_key_str(b, s[i]);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]) && !rc; i++)
		rc = pd_sd_key_i64(b, v[i]);
	return rc;
}

int pd_sd_http_init(struct pd_sd_provider *p, const struct pd_discovery_http_config *c)
{
	const struct pd_http_client_config *h = c->client;
	p->kind = PD_SD_HTTP;
	p->ifd = -1;
	p->interval_ms = c->refresh_interval_ms > 0 ? c->refresh_interval_ms
	                                            : PD_DISCOVERY_HTTP_REFRESH_DEFAULT_MS;
	p->timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : p->interval_ms;
	p->body_limit =
	    c->body_size_limit ? c->body_size_limit : PD_DISCOVERY_HTTP_BODY_LIMIT_DEFAULT;
	p->follow = 1;
	if (!(p->url = strdup(c->url)) || !(p->detail = strdup(c->url)))
		return PD_ENOMEM;
	if (h) {
		p->insecure = h->tls_insecure_skip_verify;
		p->follow = h->follow_redirects;
		if ((h->basic_auth_username && !(p->basic_user = strdup(h->basic_auth_username))) ||
		    (h->basic_auth_password && !(p->basic_pass = strdup(h->basic_auth_password))) ||
		    (h->basic_auth_password_file &&
		     !(p->basic_pass_file = strdup(h->basic_auth_password_file))) ||
		    (h->authorization_type && !(p->auth_type = strdup(h->authorization_type))) ||
		    (h->authorization_credentials &&
		     !(p->auth_cred = strdup(h->authorization_credentials))) ||
		    (h->authorization_credentials_file &&
		     !(p->auth_cred_file = strdup(h->authorization_credentials_file))) ||
		    (h->tls_ca_file && !(p->ca_file = strdup(h->tls_ca_file))) ||
		    (h->tls_cert_file && !(p->cert_file = strdup(h->tls_cert_file))) ||
		    (h->tls_key_file && !(p->key_file = strdup(h->tls_key_file))) ||
		    (h->proxy_url && !(p->proxy = dup_or_null(h->proxy_url))))
			return PD_ENOMEM;
	}
	pd_buf_init(&p->body, p->body_limit);
	return 0;
}

/* ---- one request --------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct pd_sd_provider *p = ud;
	size_t n = size * nmemb;
	if (pd_buf_append(&p->body, data, n)) {
		p->body_too_big = 1;
		return 0; /* makes curl stop with CURLE_WRITE_ERROR */
	}
	return n;
}

static const char *status_text(long code)
{
	switch (code) {
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 301:
		return "Moved Permanently";
	case 302:
		return "Found";
	case 303:
		return "See Other";
	case 304:
		return "Not Modified";
	case 307:
		return "Temporary Redirect";
	case 308:
		return "Permanent Redirect";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 406:
		return "Not Acceptable";
	case 408:
		return "Request Timeout";
	case 429:
		return "Too Many Requests";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	}
	return "";
}

/* Keeps the text after the version of the last status line ("404 Not Found"). */
static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct pd_sd_provider *p = ud;
	size_t n = size * nmemb, i = 0;
	if (n < 5 || strncmp(data, "HTTP/", 5))
		return n;
	while (i < n && data[i] != ' ')
		i++;
	while (i < n && data[i] == ' ')
		i++;
	size_t j = n;
	while (j > i && (data[j - 1] == '\r' || data[j - 1] == '\n' || data[j - 1] == ' '))
		j--;
	if (j - i >= sizeof(p->status_line))
		j = i + sizeof(p->status_line) - 1;
	memcpy(p->status_line, data + i, j - i);
	p->status_line[j - i] = '\0';
	return n;
}

/* Reads a credentials file, trimmed of white space as Prometheus trims it. */
static char *read_secret(const char *path, struct pd_err *err)
{
	uint8_t *buf;
	size_t len, start = 0;
	if (pd_file_read(path, 1 << 20, &buf, &len, err))
		return NULL;
	while (start < len && isspace(buf[start]))
		start++;
	while (len > start && isspace(buf[len - 1]))
		len--;
	memmove(buf, buf + start, len - start);
	buf[len - start] = '\0';
	return (char *)buf;
}

static void fail(struct pd_sd_provider *p, struct pd_sd_counters *c, const char *msg)
{
	c->http_failures++;
	pd_sd_provider_set_result(p, msg);
}

static void end_request(struct pd_sd_provider *p, CURLM *multi)
{
	if (p->easy) {
		curl_multi_remove_handle(multi, p->easy);
		curl_easy_cleanup(p->easy);
		p->easy = NULL;
	}
	curl_slist_free_all(p->hdrs);
	p->hdrs = NULL;
	pd_buf_fini(&p->body);
	pd_buf_init(&p->body, p->body_limit);
}

void pd_sd_http_start(struct pd_sd_provider *p, CURLM *multi, struct pd_sd_counters *c)
{
	struct pd_err err = {0};
	char hdr[96], *secret = NULL, *auth = NULL;
	struct curl_slist *l;
	CURL *h;

	if (p->easy)
		return; /* the previous one is still running */
	p->body_too_big = 0;
	p->status_line[0] = '\0';
	p->errbuf[0] = '\0';
	if (!(h = curl_easy_init())) {
		fail(p, c, "out of memory");
		return;
	}
	p->easy = h;
	/* seconds as Go's FormatFloat(s, 'f', -1, 64) prints them: "60", "1.5" */
	if (p->interval_ms % 1000 == 0) {
		snprintf(hdr, sizeof(hdr), "X-Prometheus-Refresh-Interval-Seconds: %lld",
		         (long long)(p->interval_ms / 1000));
	} else {
		int len =
		    snprintf(hdr, sizeof(hdr), "X-Prometheus-Refresh-Interval-Seconds: %lld.%03d",
		             (long long)(p->interval_ms / 1000), (int)(p->interval_ms % 1000));
		while (len > 0 && hdr[len - 1] == '0')
			hdr[--len] = '\0';
	}
	if (!(l = curl_slist_append(NULL, "Accept: application/json")))
		goto nomem;
	p->hdrs = l;
	if (!(l = curl_slist_append(p->hdrs, hdr)))
		goto nomem;
	if (p->auth_cred || p->auth_cred_file) {
		const char *cred = p->auth_cred;
		if (p->auth_cred_file) {
			if (!(secret = read_secret(p->auth_cred_file, &err))) {
				pd_err_prefix(&err,
				              "unable to read authorization credentials file %s",
				              p->auth_cred_file);
				goto failed;
			}
			cred = secret;
		}
		if (strpbrk(cred, "\r\n")) { /* it would end the header; Go refuses it too */
			pd_err_set(&err, PD_EINVAL,
			           "authorization credentials contain a line break");
			goto failed;
		}
		size_t n = strlen(cred) + (p->auth_type ? strlen(p->auth_type) : 6) + 32;
		if (!(auth = malloc(n)))
			goto nomem;
		snprintf(auth, n, "Authorization: %s %s", p->auth_type ? p->auth_type : "Bearer",
		         cred);
		if (!(l = curl_slist_append(p->hdrs, auth)))
			goto nomem;
	}
	if (p->basic_user || p->basic_pass || p->basic_pass_file) {
		const char *pass = p->basic_pass ? p->basic_pass : "";
		free(secret);
		secret = NULL;
		if (p->basic_pass_file) {
			if (!(secret = read_secret(p->basic_pass_file, &err))) {
				pd_err_prefix(&err, "unable to read basic auth password file %s",
				              p->basic_pass_file);
				goto failed;
			}
			pass = secret;
		}
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, p->basic_user ? p->basic_user : "");
		curl_easy_setopt(h, CURLOPT_PASSWORD, pass); /* curl copies it */
	}
	curl_easy_setopt(h, CURLOPT_URL, p->url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, p);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, p->hdrs);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "profd");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, p->errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, p);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)p->timeout_ms);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip"); /* as Go's transport asks */
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, p->follow ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L); /* Go's client gives up after 10 */
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	/* no proxy unless configured: "" also ignores http_proxy from the environment,
	 * as Prometheus does without proxy_from_environment */
	curl_easy_setopt(h, CURLOPT_PROXY, p->proxy ? p->proxy : "");
	if (p->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, p->ca_file);
	if (p->cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, p->cert_file);
	if (p->key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, p->key_file);
	if (p->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	free(secret); /* curl copied what it needs; the header list holds auth */
	free(auth);
	if (curl_multi_add_handle(multi, h) != CURLM_OK) {
		end_request(p, multi);
		fail(p, c, "cannot start the HTTP request");
	}
	return;
nomem:
	pd_err_set(&err, PD_ENOMEM, "out of memory");
failed:
	free(secret);
	free(auth);
	curl_easy_cleanup(h);
	p->easy = NULL;
	curl_slist_free_all(p->hdrs);
	p->hdrs = NULL;
	c->refreshes++;
	fail(p, c, err.msg);
}

/* Prometheus's ^(?i:application\/json(;\s*charset=("utf-8"|utf-8))?)$ applied to
 * the trimmed header. */
static int json_content_type(const char *ct)
{
	size_t n;
	if (!ct)
		return 0;
	while (isspace((unsigned char)*ct))
		ct++;
	n = strlen(ct);
	while (n && isspace((unsigned char)ct[n - 1]))
		n--;
	if (n < 16 || strncasecmp(ct, "application/json", 16))
		return 0;
	ct += 16;
	n -= 16;
	if (n == 0)
		return 1;
	if (*ct != ';')
		return 0;
	ct++, n--;
	while (n && (*ct == ' ' || *ct == '\t' || *ct == '\n' || *ct == '\r' || *ct == '\f'))
		ct++, n--;
	if (n < 8 || strncasecmp(ct, "charset=", 8))
		return 0;
	ct += 8;
	n -= 8;
	return (n == 5 && !strncasecmp(ct, "utf-8", 5)) ||
	       (n == 7 && !strncasecmp(ct, "\"utf-8\"", 7));
}

void pd_sd_http_done(struct pd_sd_provider *p, CURLM *multi, CURLcode rc, struct pd_sd_counters *c)
{
	struct pd_err err = {0};
	char msg[PD_ERR_MSG_MAX + 64];
	struct pd_target_group *g = NULL;
	size_t ng = 0;
	long code = 0;
	char *ct = NULL;

	c->refreshes++;
	if (rc != CURLE_OK) {
		if (p->body_too_big)
			snprintf(msg, sizeof(msg),
			         "Get \"%s\": body size limit of %zu bytes exceeded", p->url,
			         p->body_limit);
		else
			snprintf(msg, sizeof(msg), "Get \"%s\": %s", p->url,
			         p->errbuf[0] ? p->errbuf : curl_easy_strerror(rc));
		goto failed;
	}
	curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(p->easy, CURLINFO_CONTENT_TYPE, &ct);
	if (code != 200) {
		/* Go's resp.Status: the status line's code and text, or the standard text */
		if (strchr(p->status_line, ' '))
			snprintf(msg, sizeof(msg), "server returned HTTP status %s",
			         p->status_line);
		else
			snprintf(msg, sizeof(msg), "server returned HTTP status %ld %s", code,
			         status_text(code));
		goto failed;
	}
	if (!json_content_type(ct)) {
		char q[96];
		pd_sd_quote(q, sizeof(q), ct ? ct : "", ct ? strlen(ct) : 0);
		snprintf(msg, sizeof(msg), "unsupported content type %s", q);
		goto failed;
	}
	if (pd_discovery_parse_groups(p->body.len ? (const char *)p->body.data : "", p->body.len, 0,
	                              p->url, &g, &ng, &err) ||
	    pd_sd_groups_set_label(g, ng, "__meta_url", p->url, &err)) {
		pd_target_group_free(g, ng);
		snprintf(msg, sizeof(msg), "%s", err.msg);
		goto failed;
	}
	end_request(p, multi);
	pd_sd_provider_set_groups(p, g, ng);
	pd_sd_provider_set_result(p, NULL);
	return;
failed:
	end_request(p, multi);
	fail(p, c, msg);
}
