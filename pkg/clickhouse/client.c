/* client.c: ClickHouse's HTTP interface over libcurl. One request per statement:
 * a SELECT or DDL as the POST body, or an INSERT's SQL in the URL with its rows as
 * the body, gzip-compressed (Content-Encoding: gzip, which ClickHouse 18.16 and
 * later decode with enable_http_compression=1). Errors carry ClickHouse's text. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"

static int valid_ident(const char *s)
{
	if (!s || !*s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_' ||
		      (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

static int read_credentials(struct pd_clickhouse *c, const char *path, struct pd_err *err)
{
	uint8_t *d = NULL;
	size_t n = 0;
	int rc = pd_file_read(path, 64 * 1024, &d, &n, err);
	if (rc)
		return rc;
	char *s = (char *)d;
	s[n] = '\0';
	char *nl = strchr(s, '\n');
	if (!nl) {
		free(d);
		return pd_err_set(
		    err, PD_EINVAL,
		    "%s: want the user on the first line and the password on the second", path);
	}
	*nl = '\0';
	char *pw = nl + 1;
	size_t ul = strlen(s), pl = strlen(pw);
	while (ul && s[ul - 1] == '\r')
		s[--ul] = '\0';
	while (pl && (pw[pl - 1] == '\n' || pw[pl - 1] == '\r'))
		pw[--pl] = '\0';
	if (!ul) {
		free(d);
		return pd_err_set(err, PD_EINVAL, "%s: the first line (the user) is empty", path);
	}
	c->user = strdup(s);
	c->password = strdup(pw);
	free(d);
	if (!c->user || !c->password)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	return 0;
}

/* The comma-separated URLs of the cluster's other nodes into c->nodes. */
static int parse_nodes(struct pd_clickhouse *c, const char *list, struct pd_err *err)
{
	size_t n = 1;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	if (n > PD_CLICKHOUSE_MAX_NODES)
		return pd_err_set(err, PD_EINVAL,
		                  "clickhouse nodes: %zu URLs, more than the %d allowed", n,
		                  PD_CLICKHOUSE_MAX_NODES);
	if (!(c->nodes = calloc(n, sizeof(char *))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	const char *p = list;
	for (size_t i = 0; i < n; i++) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		while (len && p[len - 1] == '/')
			len--;
		if (!(c->nodes[c->nnodes] = strndup(p, len)))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		c->nnodes++;
		const char *u = c->nodes[c->nnodes - 1];
		size_t scheme = strncmp(u, "https://", 8) ? 7 : 8;
		if ((strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) || strlen(u) <= scheme) {
			char shown[256];
			pd_redact_urls(shown, sizeof(shown), u);
			return pd_err_set(
			    err, PD_EINVAL,
			    "clickhouse nodes: URL %zu \"%s\": want http://HOST:PORT/", i + 1, shown);
		}
		p = e ? e + 1 : p + len;
	}
	return 0;
}

int pd_clickhouse_create(struct pd_clickhouse **out, const struct pd_clickhouse_opts *o,
			 struct pd_err *err)
{
	*out = NULL;
	if (!o || !o->url || (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8))) {
		char shown[256];
		pd_redact_urls(shown, sizeof(shown), o && o->url ? o->url : "");
		return pd_err_set(err, PD_EINVAL, "clickhouse url %s%s%s: want http://HOST:PORT/",
				  o && o->url ? "\"" : "", o && o->url ? shown : "(none)",
				  o && o->url ? "\"" : "");
	}
	const char *db = o->database ? o->database : PD_CLICKHOUSE_DEFAULT_DATABASE;
	if (!valid_ident(db))
		return pd_err_set(err, PD_EINVAL,
		                  "clickhouse database \"%s\": want letters, digits and _, not "
		                  "starting with a digit",
				  db);
	if (o->cluster && !valid_ident(o->cluster))
		return pd_err_set(err, PD_EINVAL,
		                  "clickhouse cluster \"%s\": want letters, digits and _, not "
		                  "starting with a digit",
				  o->cluster);
	struct pd_clickhouse *c = calloc(1, sizeof(*c));
	if (!c)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	c->url = strdup(o->url);
	c->database = strdup(db);
	c->cluster = o->cluster ? strdup(o->cluster) : NULL;
	if (!c->url || !c->database || (o->cluster && !c->cluster)) {
		pd_clickhouse_destroy(c);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	size_t ul = strlen(c->url);
	while (ul && c->url[ul - 1] == '/')
		c->url[--ul] = '\0';
	if (o->nodes && *o->nodes) {
		char shown[256];
		pd_redact_urls(shown, sizeof(shown), o->nodes);
		int rc = o->cluster ? parse_nodes(c, o->nodes, err)
		                    : pd_err_set(err, PD_EINVAL,
		                                 "clickhouse nodes \"%s\" given without a cluster",
		                                 shown);
		if (rc) {
			pd_clickhouse_destroy(c);
			return rc;
		}
	}
	if (!(c->shown = calloc(1 + c->nnodes, sizeof(char *)))) {
		pd_clickhouse_destroy(c);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i <= c->nnodes; i++)
		if (!(c->shown[i] = pd_redact_urls_dup(i ? c->nodes[i - 1] : c->url))) {
			pd_clickhouse_destroy(c);
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		}
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : PD_CLICKHOUSE_DEFAULT_TIMEOUT_MS;
	c->max_response = o->max_response ? o->max_response : PD_CLICKHOUSE_DEFAULT_MAX_RESPONSE;
	c->no_compress = o->no_compress;
	if (o->credentials_file) {
		int rc = read_credentials(c, o->credentials_file, err);
		if (rc) {
			pd_err_prefix(err, "clickhouse credentials file");
			pd_clickhouse_destroy(c);
			return rc;
		}
	}
	*out = c;
	return 0;
}

void pd_clickhouse_destroy(struct pd_clickhouse *c)
{
	if (!c)
		return;
	free(c->url);
	free(c->database);
	free(c->cluster);
	for (size_t i = 0; c->shown && i <= c->nnodes; i++)
		free(c->shown[i]);
	free(c->shown);
	for (size_t i = 0; i < c->nnodes; i++)
		free(c->nodes[i]);
	free(c->nodes);
	if (c->password)
		memset(c->password, 0, strlen(c->password));
	free(c->user);
	free(c->password);
	free(c);
}

const char *pd_clickhouse_database(const struct pd_clickhouse *c)
{
	return c->database;
}

const char *pd_clickhouse_cluster(const struct pd_clickhouse *c)
{
	return c->cluster;
}

size_t pd_clickhouse_nnodes(const struct pd_clickhouse *c)
{
	return 1 + c->nnodes;
}

const char *pd_clickhouse_node_url(const struct pd_clickhouse *c, size_t i)
{
	return i <= c->nnodes ? c->shown[i] : NULL;
}

struct sink {
	struct pd_buf *b;
	int toobig;
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
	struct sink *s = ud;
	if (pd_buf_append(s->b, p, size * n)) {
		s->toobig = 1;
		return 0;
	}
	return size * n;
}

/* Percent-encodes s for a URL's query string. */
static int url_escape(struct pd_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		int plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		            (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
		            ch == '~';
		char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
		int rc = plain ? pd_buf_append(b, &ch, 1) : pd_buf_append(b, e, 3);
		if (rc)
			return rc;
	}
	return 0;
}

/* The statement as errors quote it: at most 200 bytes. */
static void stmt_excerpt(const char *sql, char *out, size_t size)
{
	size_t n = strlen(sql);
	if (n < size) {
		memcpy(out, sql, n + 1);
		return;
	}
	snprintf(out, size, "%.*s...", (int)(size - 4), sql);
}

/* Runs one transfer to its end with the multi interface (the only one profd's
 * libcurl loader provides). */
static CURLcode perform(CURL *h)
{
	CURLM *m = curl_multi_init();
	if (!m)
		return CURLE_OUT_OF_MEMORY;
	CURLcode res = CURLE_OK;
	if (curl_multi_add_handle(m, h) != CURLM_OK) {
		curl_multi_cleanup(m);
		return CURLE_FAILED_INIT;
	}
	int running = 1;
	while (running) {
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			res = CURLE_RECV_ERROR;
			break;
		}
		if (running && curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK) {
			res = CURLE_RECV_ERROR;
			break;
		}
	}
	int left;
	CURLMsg *msg;
	while ((msg = curl_multi_info_read(m, &left)))
		if (msg->msg == CURLMSG_DONE)
			res = msg->data.result;
	curl_multi_remove_handle(m, h);
	curl_multi_cleanup(m);
	return res;
}

int pd_clickhouse_exec(struct pd_clickhouse *c, const char *sql, const void *data, size_t len,
		       struct pd_buf *resp, struct pd_err *err)
{
	return pd_clickhouse_exec_at(c, 0, sql, data, len, resp, err);
}

int pd_clickhouse_exec_at(struct pd_clickhouse *c, size_t node, const char *sql, const void *data,
                          size_t len, struct pd_buf *resp, struct pd_err *err)
{
	if (node > c->nnodes)
		return pd_err_set(err, PD_EINVAL, "clickhouse: no node %zu", node);
	/* the URL itself for curl (it takes the user and password from it), the
	 * one with its password as xxxxx in messages */
	const char *base = node ? c->nodes[node - 1] : c->url;
	const char *shown = c->shown[node];
	struct pd_buf url, body, scratch;
	pd_buf_init(&url, 0);
	pd_buf_init(&body, 0);
	pd_buf_init(&scratch, c->max_response);
	struct sink sk = {resp ? resp : &scratch, 0};
	size_t resp_start = sk.b->len;
	size_t saved_max = sk.b->max;
	if (!saved_max || saved_max - resp_start > c->max_response)
		sk.b->max = resp_start + c->max_response;
	struct curl_slist *hdr = NULL;
	CURL *h = NULL;
	char stmt[208];
	stmt_excerpt(sql, stmt, sizeof(stmt));
	int rc = PD_ENOMEM;
	const void *payload = data ? data : sql;
	size_t plen = data ? len : strlen(sql);
	uint8_t *gz = NULL;
	size_t gzlen = 0;
	int compress = !c->no_compress && plen >= PD_CLICKHOUSE_COMPRESS_MIN;
	if (pd_buf_printf(&url, "%s/?enable_http_compression=1", base))
		goto fail;
	/* over Distributed tables: an IN subquery on another Distributed table runs
	 * once, on the node asked, and its result goes to the shards (GLOBAL IN); an
	 * insert returns once every row is on its shard, so that a query right after
	 * a flush sees them, and fails when a shard does not take them */
	if (c->cluster && pd_buf_printf(&url, "&distributed_product_mode=global"))
		goto fail;
	if (c->cluster && data && pd_buf_printf(&url, "&insert_distributed_sync=1"))
		goto fail;
	if (data && (pd_buf_append(&url, "&query=", 7) || url_escape(&url, sql)))
		goto fail;
	if (pd_buf_append(&url, "", 1))
		goto fail;
	if (compress) {
		struct pd_err gerr = {0};
		if ((rc = pd_gzip(payload, plen, 1, &gz, &gzlen, &gerr))) {
			pd_err_set(err, rc, "clickhouse: compressing the request: %s", gerr.msg);
			goto out;
		}
		payload = gz;
		plen = gzlen;
		if (!(hdr = curl_slist_append(hdr, "Content-Encoding: gzip")))
			goto fail;
	}
	if (!(hdr = curl_slist_append(hdr, "Content-Type: application/octet-stream")) ||
	    !(h = curl_easy_init()))
		goto fail;
	curl_easy_setopt(h, CURLOPT_URL, (const char *)url.data);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)plen);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sk);
	if (c->user) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->password);
	}
	CURLcode res = perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (sk.toobig) {
		rc = pd_err_set(
		    err, PD_ETOOBIG,
		    "clickhouse: response to \"%s\" is larger than the limit of %zu bytes", stmt,
		    c->max_response);
		goto out;
	}
	if (res != CURLE_OK) {
		/* no answer at all: the server is down or unreachable, which callers
		 * may wait out, unlike an answer that refuses */
		rc = pd_err_set(err, PD_EUNAVAIL, "clickhouse %s: %s (statement \"%s\")", shown,
				curl_easy_strerror(res), stmt);
		goto out;
	}
	if (status != 200) {
		/* ClickHouse's message is the body: "Code: 60, e.displayText() = ..." */
		size_t n = sk.b->len - resp_start;
		const char *m = (const char *)sk.b->data + resp_start;
		while (n && (m[n - 1] == '\n' || m[n - 1] == '\r'))
			n--;
		if (n > 300)
			n = 300;
		/* 502, 503, 504: a proxy without a server behind it, or a server
		 * that is overloaded or starting; worth retrying like no answer */
		rc = pd_err_set(err, status >= 502 && status <= 504 ? PD_EUNAVAIL : PD_EIO,
				"clickhouse %s answered %ld: %.*s (statement \"%s\")", shown, status,
				(int)n, n ? m : "", stmt);
		sk.b->len = resp_start;
		goto out;
	}
	rc = 0;
	goto out;
fail:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory");
out:
	sk.b->max = saved_max;
	if (h)
		curl_easy_cleanup(h);
	curl_slist_free_all(hdr);
	free(gz);
	pd_buf_fini(&url);
	pd_buf_fini(&body);
	pd_buf_fini(&scratch);
	return rc;
}

int ch_select(struct pd_clickhouse *c, const char *sql, struct pd_buf *resp, struct pd_err *err)
{
	return pd_clickhouse_exec(c, sql, NULL, 0, resp, err);
}
