/* test_api.c: the HTTP API over real HTTP: a store in a temp directory holding
 * real Go profiles (three heap profiles of one series, a CPU profile of another,
 * a series with awkward label values), a scrape manager with a live and a
 * dropped target, and the server on 127.0.0.1:0, queried with libcurl. Checks
 * response shapes against Prometheus's, and that top, merge, diff and proto
 * answers equal what the pprof package computes from the same files. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ctype.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>
#include <curl/curl.h>

#include "profd/api.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/relabel.h"
#include "profd/scrape.h"
#include "profd/tsdb.h"

/* ---- a small JSON reader, enough to check responses ----------------------- */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	int type;
	double num;
	long long inum;
	int is_int;
	char *str;
	struct jv **items; /* array items, or object values */
	char **keys;       /* object keys */
	size_t n;
};

static void jv_free(struct jv *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		jv_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

static void ws(const char **p)
{
	while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
		(*p)++;
}

static void put_utf8(char *o, size_t *k, unsigned c)
{
	if (c < 0x80) {
		o[(*k)++] = (char)c;
	} else if (c < 0x800) {
		o[(*k)++] = (char)(0xc0 | c >> 6);
		o[(*k)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		o[(*k)++] = (char)(0xe0 | c >> 12);
		o[(*k)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[(*k)++] = (char)(0x80 | (c & 0x3f));
	} else {
		o[(*k)++] = (char)(0xf0 | c >> 18);
		o[(*k)++] = (char)(0x80 | ((c >> 12) & 0x3f));
		o[(*k)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[(*k)++] = (char)(0x80 | (c & 0x3f));
	}
}

static char *jparse_str(const char **p)
{
	if (**p != '"')
		return NULL;
	(*p)++;
	char *o = malloc(strlen(*p) + 1);
	size_t k = 0;
	while (**p && **p != '"') {
		unsigned char c = (unsigned char)**p;
		if (c < 0x20) {
			free(o);
			return NULL; /* raw control characters are not JSON */
		}
		if (c != '\\') {
			o[k++] = (char)c;
			(*p)++;
			continue;
		}
		(*p)++;
		char e = **p;
		(*p)++;
		switch (e) {
		case '"':
			o[k++] = '"';
			break;
		case '\\':
			o[k++] = '\\';
			break;
		case '/':
			o[k++] = '/';
			break;
		case 'b':
			o[k++] = '\b';
			break;
		case 'f':
			o[k++] = '\f';
			break;
		case 'n':
			o[k++] = '\n';
			break;
		case 'r':
			o[k++] = '\r';
			break;
		case 't':
			o[k++] = '\t';
			break;
		case 'u': {
			unsigned cp = 0;
			for (int i = 0; i < 4; i++) {
				if (!isxdigit((unsigned char)(*p)[i])) {
					free(o);
					return NULL;
				}
				char h[2] = {(*p)[i], 0};
				cp = cp * 16 + (unsigned)strtoul(h, NULL, 16);
			}
			*p += 4;
			put_utf8(o, &k, cp);
			break;
		}
		default:
			free(o);
			return NULL;
		}
	}
	if (**p != '"') {
		free(o);
		return NULL;
	}
	(*p)++;
	o[k] = '\0';
	return o;
}

static struct jv *jparse_val(const char **p, int depth)
{
	if (depth > 200)
		return NULL;
	ws(p);
	struct jv *v = calloc(1, sizeof(*v));
	if (**p == '{' || **p == '[') {
		int obj = **p == '{';
		v->type = obj ? J_OBJ : J_ARR;
		(*p)++;
		ws(p);
		if (**p == (obj ? '}' : ']')) {
			(*p)++;
			return v;
		}
		for (;;) {
			char *key = NULL;
			ws(p);
			if (obj) {
				if (!(key = jparse_str(p)))
					goto bad;
				ws(p);
				if (**p != ':') {
					free(key);
					goto bad;
				}
				(*p)++;
			}
			struct jv *item = jparse_val(p, depth + 1);
			if (!item) {
				free(key);
				goto bad;
			}
			v->items = realloc(v->items, (v->n + 1) * sizeof(*v->items));
			if (obj)
				v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
			v->items[v->n] = item;
			if (obj)
				v->keys[v->n] = key;
			v->n++;
			ws(p);
			if (**p == ',') {
				(*p)++;
				continue;
			}
			if (**p == (obj ? '}' : ']')) {
				(*p)++;
				return v;
			}
			goto bad;
		}
	}
	if (**p == '"') {
		v->type = J_STR;
		if (!(v->str = jparse_str(p)))
			goto bad;
		return v;
	}
	if (strncmp(*p, "null", 4) == 0) {
		*p += 4;
		return v;
	}
	if (strncmp(*p, "true", 4) == 0 || strncmp(*p, "false", 5) == 0) {
		v->type = J_BOOL;
		v->num = **p == 't';
		*p += **p == 't' ? 4 : 5;
		return v;
	}
	if (**p == '-' || isdigit((unsigned char)**p)) {
		char *end;
		v->type = J_NUM;
		v->num = strtod(*p, &end);
		const char *q = *p;
		v->is_int = 1;
		for (; q < end; q++)
			if (*q == '.' || *q == 'e' || *q == 'E')
				v->is_int = 0;
		if (v->is_int)
			v->inum = strtoll(*p, NULL, 10);
		*p = end;
		return v;
	}
bad:
	jv_free(v);
	return NULL;
}

/* Parses a whole document; NULL when it is not valid JSON. */
static struct jv *jparse(const char *s)
{
	const char *p = s;
	struct jv *v = jparse_val(&p, 0);
	ws(&p);
	if (v && *p) {
		jv_free(v);
		return NULL;
	}
	return v;
}

static struct jv *jget(const struct jv *o, const char *key)
{
	if (!o || o->type != J_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0)
			return o->items[i];
	return NULL;
}

static struct jv *jat(const struct jv *a, size_t i)
{
	return a && a->type == J_ARR && i < a->n ? a->items[i] : NULL;
}

static const char *jstr_of(const struct jv *v)
{
	return v && v->type == J_STR ? v->str : NULL;
}

static long long jint(const struct jv *v)
{
	assert_non_null(v);
	assert_int_equal(v->type, J_NUM);
	return v->is_int ? v->inum : (long long)v->num;
}

/* ---- HTTP with libcurl ------------------------------------------------------ */

struct http {
	long status;
	char *body;
	size_t len;
	char ctype[128];
	char cenc[64];
	char disp[256];
	char allow[64];
	char location[512];
	char csp[256];
	char nosniff[64];
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct http *h = ud;
	h->body = realloc(h->body, h->len + sz * n + 1);
	memcpy(h->body + h->len, p, sz * n);
	h->len += sz * n;
	h->body[h->len] = '\0';
	return sz * n;
}

static void copy_header(const char *line, size_t n, const char *name, char *out, size_t size)
{
	size_t nl = strlen(name);
	if (n > nl + 1 && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
		const char *v = line + nl + 1;
		while (*v == ' ')
			v++;
		size_t vl = n - (size_t)(v - line);
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
			vl--;
		if (vl >= size)
			vl = size - 1;
		memcpy(out, v, vl);
		out[vl] = '\0';
	}
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct http *h = ud;
	copy_header(p, sz * n, "Content-Type", h->ctype, sizeof(h->ctype));
	copy_header(p, sz * n, "Content-Encoding", h->cenc, sizeof(h->cenc));
	copy_header(p, sz * n, "Content-Disposition", h->disp, sizeof(h->disp));
	copy_header(p, sz * n, "Allow", h->allow, sizeof(h->allow));
	copy_header(p, sz * n, "Location", h->location, sizeof(h->location));
	copy_header(p, sz * n, "Content-Security-Policy", h->csp, sizeof(h->csp));
	copy_header(p, sz * n, "X-Content-Type-Options", h->nosniff, sizeof(h->nosniff));
	return sz * n;
}

static unsigned port;

static void http_free(struct http *h)
{
	free(h->body);
	memset(h, 0, sizeof(*h));
}

/* One request. body NULL: GET (or method); headers: extra header lines. */
static void http_do(const char *method, const char *path, const char *const *headers,
                    const void *body, size_t blen, curl_mime *form, struct http *h)
{
	char url[8192];
	memset(h, 0, sizeof(*h));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	CURL *c = curl_easy_init();
	assert_non_null(c);
	struct curl_slist *hl = NULL;
	for (size_t i = 0; headers && headers[i]; i++)
		hl = curl_slist_append(hl, headers[i]);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (hl)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	if (form) {
		curl_easy_setopt(c, CURLOPT_MIMEPOST, form);
	} else if (body) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)blen);
	}
	if (method)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s: %s", url, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	if (!h->body)
		h->body = calloc(1, 1);
}

static void get(const char *path, struct http *h)
{
	http_do(NULL, path, NULL, NULL, 0, NULL, h);
}

/* path + "?" + name=value pairs, values URL-escaped; NULL ends the list. */
static char *build(const char *path, ...)
{
	static char out[8192];
	va_list ap;
	size_t k = (size_t)snprintf(out, sizeof(out), "%s", path);
	char sep = '?';
	va_start(ap, path);
	for (;;) {
		const char *name = va_arg(ap, const char *);
		if (!name)
			break;
		const char *value = va_arg(ap, const char *);
		char *e = curl_easy_escape(NULL, value, 0);
		k += (size_t)snprintf(out + k, sizeof(out) - k, "%c%s=%s", sep, name, e);
		curl_free(e);
		sep = '&';
	}
	va_end(ap);
	return out;
}

/* GETs a JSON endpoint, checks the status code and envelope, returns the document. */
static struct jv *get_json(const char *path, long want_status)
{
	struct http h;
	get(path, &h);
	if (h.status != want_status)
		fail_msg("%s: status %ld, want %ld: %s", path, h.status, want_status, h.body);
	assert_string_equal(h.ctype, "application/json");
	struct jv *v = jparse(h.body);
	if (!v)
		fail_msg("%s: not JSON: %.300s", path, h.body);
	assert_string_equal(jstr_of(jget(v, "status")), want_status == 200 ? "success" : "error");
	http_free(&h);
	return v;
}

/* Expects a 400 bad_data whose error names the parameter. */
static void expect_bad(const char *path, const char *param)
{
	struct jv *v = get_json(path, 400);
	char want[128];
	snprintf(want, sizeof(want), "invalid parameter \"%s\"", param);
	assert_string_equal(jstr_of(jget(v, "errorType")), "bad_data");
	const char *e = jstr_of(jget(v, "error"));
	assert_non_null(e);
	if (!strstr(e, want))
		fail_msg("%s: error \"%s\" does not name %s", path, e, param);
	assert_null(jget(v, "data"));
	jv_free(v);
}

/* ---- the fixture --------------------------------------------------------------- */

static char dir[] = "/tmp/pd_test_api_XXXXXX";
static struct pd_tsdb *db;
static struct pd_scrape_manager *mgr;
static struct pd_relabel_rules *rules;
static struct pd_api_server *srv;
static struct pd_pprof_profile *heap[3], *cpu, *gor;
static uint8_t *heap_raw[3], *gor_gz;
static size_t heap_raw_len[3], gor_gz_len;
static int64_t heap_t[3], cpu_t, gor_t;
static int reload_calls, reload_fail;

static int rm_entry(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

static void read_profile(const char *name, struct pd_pprof_profile **p, uint8_t **raw,
                         size_t *raw_len, uint8_t **gz, size_t *gz_len, int64_t *t)
{
	char path[512];
	uint8_t *buf;
	size_t len;
	struct pd_err err = {0};
	snprintf(path, sizeof(path), "%s/profiles/goapp/%s", PD_TESTDATA, name);
	assert_int_equal(pd_file_read(path, 64u << 20, &buf, &len, &err), 0);
	assert_int_equal(pd_pprof_decode(p, buf, len, NULL, &err), 0);
	*t = pd_pprof_time_nanos(*p) / 1000000;
	assert_true(*t > 0);
	assert_int_equal(pd_gunzip(buf, len, 256u << 20, raw, raw_len, &err), 0);
	if (gz) {
		*gz = buf;
		*gz_len = len;
	} else {
		free(buf);
	}
}

static void append(const char *const *kv, size_t n, int64_t t, const uint8_t *raw, size_t len)
{
	struct pd_storage_label l[8];
	struct pd_err err = {0};
	for (size_t i = 0; i < n; i++)
		l[i] = (struct pd_storage_label){kv[2 * i], kv[2 * i + 1]};
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	assert_non_null(a);
	if (pd_tsdb_append(a, l, n, t, raw, len, &err))
		fail_msg("append: %s", err.msg);
	if (pd_tsdb_commit(a, &err))
		fail_msg("commit: %s", err.msg);
}

static const char *const heap_labels[] = {"__name__", "heap", "instance", "a:1", "job", "api"};
static const char *const cpu_labels[] = {"__name__", "profile", "instance", "a:1", "job", "api"};
/* a label value JSON must escape: quote, backslash, newline, tab, a control
 * character, and non-ASCII */
static const char weird_value[] = "q\"uo\\te\nnl\ttab\x01 é€";
static const char *const weird_labels[] = {"__name__",  "goroutine", "instance",
                                           weird_value, "job",       "weird"};

static char *config_yaml(void *ctx)
{
	(void)ctx;
	return strdup("global:\n  scrape_interval: 1m\nscrape_configs: []\n");
}

static int reload(void *ctx, struct pd_err *err)
{
	(void)ctx;
	reload_calls++;
	if (reload_fail)
		return pd_err_set(err, PD_EINVAL, "profd.yml:3:5: field foo not found");
	return 0;
}

static int setup(void **state)
{
	(void)state;
	struct pd_err err = {0};
	curl_global_init(CURL_GLOBAL_ALL);
	assert_non_null(mkdtemp(dir));
	static const char *const names[3] = {"heap.pb.gz", "heap-2.pb.gz", "heap-3.pb.gz"};
	for (int i = 0; i < 3; i++)
		read_profile(names[i], &heap[i], &heap_raw[i], &heap_raw_len[i], NULL, NULL,
		             &heap_t[i]);
	uint8_t *cpu_raw, *gor_raw;
	size_t cpu_len, gor_len;
	read_profile("cpu.pb.gz", &cpu, &cpu_raw, &cpu_len, NULL, NULL, &cpu_t);
	read_profile("goroutine.pb.gz", &gor, &gor_raw, &gor_len, &gor_gz, &gor_gz_len, &gor_t);
	assert_true(heap_t[0] < heap_t[1] && heap_t[1] < heap_t[2]);

	struct pd_tsdb_opts o;
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1; /* the profiles are old */
	o.wal_sync = 1;
	assert_int_equal(pd_tsdb_open(&db, dir, &o, &err), 0);
	/* two heap profiles and the CPU profile go to blocks, the third heap stays in
	 * the head: queries must see both alike */
	append(heap_labels, 3, heap_t[0], heap_raw[0], heap_raw_len[0]);
	append(heap_labels, 3, heap_t[1], heap_raw[1], heap_raw_len[1]);
	append(cpu_labels, 3, cpu_t, cpu_raw, cpu_len);
	assert_int_equal(pd_tsdb_flush(db, 1, &err), 0);
	append(heap_labels, 3, heap_t[2], heap_raw[2], heap_raw_len[2]);
	append(weird_labels, 3, gor_t, gor_raw, gor_len);
	free(cpu_raw);
	free(gor_raw);

	/* a scrape manager with one target and one that relabeling drops; the
	 * target's port is closed, so scrapes fail and nothing is stored */
	struct pd_scrape_manager_opts mo = {.workers = 1};
	assert_int_equal(pd_scrape_manager_create(&mgr, pd_tsdb_storage(db), &mo, &err), 0);
	const char *src[] = {"drop"};
	struct pd_relabel_rule_config rc = {src, 1, NULL, NULL, "yes", 0, NULL, PD_RELABEL_DROP, 0};
	assert_int_equal(pd_relabel_rules_build(&rules, &rc, 1, &err), 0);
	struct pd_scrape_profile_type types[] = {{"heap", "/debug/pprof/heap", 0}};
	struct pd_scrape_pool_settings ps = {0};
	ps.job_name = "test";
	ps.scheme = "http";
	ps.interval_ms = 3600 * 1000;
	ps.timeout_ms = 1000;
	ps.relabel = rules;
	ps.types = types;
	ps.ntypes = 1;
	assert_int_equal(pd_scrape_manager_set_pools(mgr, &ps, 1, &err), 0);
	struct pd_labels *t1, *t2;
	assert_int_equal(pd_labels_from_strings(&t1, &err, "__address__", "127.0.0.1:1", NULL), 0);
	assert_int_equal(
	    pd_labels_from_strings(&t2, &err, "__address__", "127.0.0.1:2", "drop", "yes", NULL),
	    0);
	struct pd_labels *targets[] = {t1, t2};
	struct pd_target_group g = {"0", targets, 2, NULL};
	pd_scrape_manager_sync(mgr, "test", &g, 1);
	pd_labels_destroy(t1);
	pd_labels_destroy(t2);

	static const char *const fn[] = {"config.file", "web.listen-address"};
	static const char *const fv[] = {"profd.yml", "127.0.0.1:0"};
	struct pd_api_opts ao;
	pd_api_opts_init(&ao);
	ao.callgraph_layout_exe = PD_PROFD_EXE;
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	ao.scrape = mgr;
	ao.reload = reload;
	ao.config_yaml = config_yaml;
	ao.flag_names = fn;
	ao.flag_values = fv;
	ao.nflags = 2;
	ao.version = "9.9.9-test";
	if (pd_api_start(&srv, &ao, &err))
		fail_msg("start: %s", err.msg);
	port = pd_api_port(srv);
	assert_true(port > 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pd_api_stop(srv);
	pd_scrape_manager_destroy(mgr);
	pd_relabel_rules_destroy(rules);
	pd_tsdb_close(db);
	for (int i = 0; i < 3; i++) {
		pd_pprof_destroy(heap[i]);
		free(heap_raw[i]);
	}
	pd_pprof_destroy(cpu);
	pd_pprof_destroy(gor);
	free(gor_gz);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	curl_global_cleanup();
	return 0;
}

static char *ms(int64_t t)
{
	static char buf[8][32];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%.3f", (double)t / 1000.0);
	return buf[k];
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_query_range(void **state)
{
	(void)state;
	/* one series, timestamps in ms across a block and the head */
	struct jv *v = get_json(build("/api/v1/query_range", "query", "heap{job=\"api\"}", "start",
	                              ms(heap_t[0] - 1000), "end", ms(heap_t[2] + 1000), NULL),
	                        200);
	struct jv *d = jget(v, "data");
	assert_int_equal(d->type, J_ARR);
	assert_int_equal(d->n, 1);
	struct jv *ls = jget(jat(d, 0), "labels");
	assert_string_equal(jstr_of(jget(ls, "__name__")), "heap");
	assert_string_equal(jstr_of(jget(ls, "job")), "api");
	assert_string_equal(jstr_of(jget(ls, "instance")), "a:1");
	struct jv *ts = jget(jat(d, 0), "timestamps");
	assert_int_equal(ts->n, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(jint(jat(ts, (size_t)i)), heap_t[i]);
	assert_null(jget(v, "warnings"));
	jv_free(v);

	/* RFC 3339 times; a range holding only the second profile */
	char a[40], b[40];
	pd_time_format(heap_t[1] - 1, a, sizeof(a));
	pd_time_format(heap_t[1] + 1, b, sizeof(b));
	v = get_json(build("/api/v1/query_range", "query", "heap", "start", a, "end", b, NULL),
	             200);
	ts = jget(jat(jget(v, "data"), 0), "timestamps");
	assert_int_equal(ts->n, 1);
	assert_int_equal(jint(jat(ts, 0)), heap_t[1]);
	jv_free(v);

	/* two series, sorted by labels; limit cuts with Prometheus's warning */
	int64_t lo = heap_t[0] < cpu_t ? heap_t[0] : cpu_t;
	v = get_json(build("/api/v1/query_range", "query", "{job=\"api\"}", "start", ms(lo - 1000),
	                   "end", ms(heap_t[2] + 1000), NULL),
	             200);
	d = jget(v, "data");
	assert_int_equal(d->n, 2);
	assert_string_equal(jstr_of(jget(jget(jat(d, 0), "labels"), "__name__")), "heap");
	assert_string_equal(jstr_of(jget(jget(jat(d, 1), "labels"), "__name__")), "profile");
	jv_free(v);
	v = get_json(build("/api/v1/query_range", "query", "{job=\"api\"}", "start", ms(lo - 1000),
	                   "end", ms(heap_t[2] + 1000), "limit", "1", NULL),
	             200);
	assert_int_equal(jget(v, "data")->n, 1);
	assert_string_equal(jstr_of(jat(jget(v, "warnings"), 0)), "results truncated due to limit");
	jv_free(v);

	/* nothing in range: an empty result, not an error */
	v = get_json(build("/api/v1/query_range", "query", "heap", "start", "1", "end", "2", NULL),
	             200);
	assert_int_equal(jget(v, "data")->n, 0);
	jv_free(v);

	/* '+' in a query string is a space, as in Prometheus */
	char path[512];
	snprintf(path, sizeof(path),
	         "/api/v1/query_range?query=heap{job=+%%22api%%22}&start=%s&end=%s", ms(heap_t[0]),
	         ms(heap_t[2]));
	v = get_json(path, 200);
	assert_int_equal(jget(v, "data")->n, 1);
	jv_free(v);

	/* POST with a form body, as Prometheus clients send long queries */
	char form[512];
	snprintf(form, sizeof(form), "query=heap%%7Bjob%%3D%%22api%%22%%7D&start=%s&end=%s",
	         ms(heap_t[0]), ms(heap_t[2]));
	struct http h;
	const char *hdr[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
	http_do(NULL, "/api/v1/query_range", hdr, form, strlen(form), NULL, &h);
	assert_int_equal(h.status, 200);
	v = jparse(h.body);
	assert_non_null(v);
	assert_int_equal(jget(jat(jget(v, "data"), 0), "timestamps")->n, 3);
	jv_free(v);
	http_free(&h);
}

/* The rows of a JSON top table equal pd_pprof_top's. */
static void check_top(const struct jv *data, const struct pd_pprof_profile *p, int idx)
{
	struct pd_pprof_top *t;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_top(p, idx, &t, &err), 0);
	assert_int_equal(jint(jget(data, "total")), t->total);
	assert_string_equal(jstr_of(jget(data, "sampleType")), t->sample_type);
	assert_string_equal(jstr_of(jget(data, "unit")), t->unit);
	struct jv *rows = jget(data, "rows");
	assert_int_equal(rows->n, t->nrows);
	int64_t sum = 0;
	for (size_t i = 0; i < t->nrows; i++) {
		struct jv *r = jat(rows, i);
		assert_string_equal(jstr_of(jget(r, "name")), t->rows[i].name);
		assert_int_equal(jint(jget(r, "flat")), t->rows[i].flat);
		assert_int_equal(jint(jget(r, "cum")), t->rows[i].cum);
		sum += t->rows[i].flat;
		double want = t->total ? (double)sum * 100.0 / (double)t->total : 0;
		double got = jget(r, "sumPercent")->num;
		assert_true(got - want < 1e-3 * (want > 1 ? want : 1) &&
		            want - got < 1e-3 * (want > 1 ? want : 1));
	}
	pd_pprof_top_destroy(t);
}

static void test_query_single(void **state)
{
	(void)state;
	/* exact time: heap-2's top table, as pd_pprof_top computes it */
	struct jv *v = get_json(build("/api/v1/query", "query", "heap{job=\"api\"}", "time",
	                              ms(heap_t[1]), "report", "top", NULL),
	                        200);
	check_top(jget(v, "data"), heap[1], pd_pprof_default_sample_index(heap[1]));
	jv_free(v);

	/* a sample_index by name, and limit */
	int idx;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_sample_index(heap[1], "alloc_space", &idx, &err), 0);
	v = get_json(build("/api/v1/query", "query", "heap", "time", ms(heap_t[1]), "report", "top",
	                   "sample_index", "alloc_space", NULL),
	             200);
	check_top(jget(v, "data"), heap[1], idx);
	assert_int_equal(jint(jget(jget(v, "data"), "sampleIndex")), idx);
	jv_free(v);
	v = get_json(build("/api/v1/query", "query", "heap", "time", ms(heap_t[1]), "report", "top",
	                   "limit", "3", NULL),
	             200);
	assert_int_equal(jget(jget(v, "data"), "rows")->n, 3);
	jv_free(v);

	/* between samples: the nearest before, within the lookback */
	v = get_json(build("/api/v1/query", "query", "heap", "time", ms(heap_t[1] + 1500), "report",
	                   "meta", NULL),
	             200);
	assert_int_equal(jint(jget(jget(v, "data"), "timestamp")), heap_t[1]);
	jv_free(v);
	/* before the first sample, or past the lookback: nothing, not an error */
	v = get_json(build("/api/v1/query", "query", "heap", "time", ms(heap_t[0] - 1), NULL), 200);
	assert_int_equal(jget(v, "data")->type, J_NULL);
	jv_free(v);
	v = get_json(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2] + 600000), NULL),
	             200);
	assert_int_equal(jget(v, "data")->type, J_NULL);
	jv_free(v);
	v = get_json(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2] + 600000),
	                   "lookback", "15m", NULL),
	             200);
	assert_int_equal(jint(jget(jget(v, "data"), "timestamp")), heap_t[2]);
	jv_free(v);
}

static void test_meta_and_flamegraph(void **state)
{
	(void)state;
	struct jv *v = get_json(
	    build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report", "meta", NULL),
	    200);
	struct jv *d = jget(v, "data");
	struct jv *st = jget(d, "sampleTypes");
	assert_int_equal(st->n, pd_pprof_sample_type_count(heap[2]));
	for (size_t i = 0; i < st->n; i++) {
		assert_string_equal(jstr_of(jget(jat(st, i), "type")),
		                    pd_pprof_sample_type(heap[2], i));
		assert_string_equal(jstr_of(jget(jat(st, i), "unit")),
		                    pd_pprof_sample_unit(heap[2], i));
		assert_int_equal(jint(jget(jat(st, i), "total")), pd_pprof_total(heap[2], (int)i));
	}
	assert_string_equal(jstr_of(jget(d, "defaultSampleType")), "inuse_space");
	assert_int_equal(jint(jget(d, "profileCount")), 1);
	assert_int_equal(jint(jget(d, "minTime")), heap_t[2]);
	assert_int_equal(jint(jget(d, "maxTime")), heap_t[2]);
	assert_string_equal(jstr_of(jget(jat(jget(d, "series"), 0), "job")), "api");
	jv_free(v);

	v = get_json(build("/api/v1/query", "query", "profile", "time", ms(cpu_t), "report",
	                   "flamegraph", NULL),
	             200);
	d = jget(v, "data");
	struct jv *root = jget(d, "root");
	assert_string_equal(jstr_of(jget(root, "name")), "root");
	assert_string_equal(jstr_of(jget(d, "sampleType")), "cpu");
	assert_int_equal(jint(jget(d, "total")),
	                 pd_pprof_total(cpu, pd_pprof_default_sample_index(cpu)));
	assert_true(jget(root, "children")->n > 0);
	jv_free(v);
	/* min_total leaves nodes out */
	v = get_json(build("/api/v1/query", "query", "profile", "time", ms(cpu_t), "report",
	                   "flamegraph", "min_total", "1000000000000", NULL),
	             200);
	assert_int_equal(jget(jget(jget(v, "data"), "root"), "children")->n, 0);
	jv_free(v);
}

/* report=dot and report=svg: the call graph as DOT text, and laid out as an SVG
 * document naming every function of the DOT; bad cuts are 400s naming the parameter. */
static void test_callgraph_reports(void **state)
{
	(void)state;
	struct http d, v;
	get(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report", "dot", NULL), &d);
	assert_int_equal(d.status, 200);
	assert_string_equal(d.ctype, "text/vnd.graphviz; charset=utf-8");
	assert_non_null(strstr(d.body, "digraph \""));
	get(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report", "svg", NULL), &v);
	assert_int_equal(v.status, 200);
	assert_string_equal(v.ctype, "image/svg+xml");
	assert_non_null(strstr(v.body, "<svg"));
	assert_non_null(strstr(v.body, "</svg>"));
	/* every function box of the DOT is in the SVG, under its name */
	size_t nodes = 0;
	for (const char *l = d.body; (l = strstr(l, "\nN")) != NULL; l++) {
		const char *t = strstr(l, " tooltip=\"");
		const char *nl = strchr(l + 1, '\n');
		if (l[2] < '1' || l[2] > '9' || strstr(l, " -> ") == l + 1 + strcspn(l + 1, " ") || !t ||
		    (nl && t > nl))
			continue;
		t += 10;
		const char *end = strstr(t, " (");
		assert_non_null(end);
		char name[512];
		snprintf(name, sizeof(name), "%.*s", (int)(end - t), t);
		if (!strchr(name, '&') && !strchr(name, '<') && !strchr(name, '>') && !strchr(name, '"') &&
		    !strstr(v.body, name))
			fail_msg("the SVG does not name %s", name);
		nodes++;
	}
	assert_true(nodes > 3);
	http_free(&d);
	http_free(&v);
	expect_bad(build("/api/v1/query", "query", "heap", "report", "svg", "nodecount", "0", NULL),
	           "nodecount");
	expect_bad(build("/api/v1/query", "query", "heap", "report", "dot", "nodecount", "1001", NULL),
	           "nodecount");
	expect_bad(build("/api/v1/query", "query", "heap", "report", "dot", "edgefraction", "2", NULL),
	           "edgefraction");
	expect_bad(build("/api/v1/query", "query", "heap", "report", "svg", "nodefraction", "x", NULL),
	           "nodefraction");
	expect_bad(build("/api/v1/query", "query", "heap", "report", "svg", "mode", "merge",
	                 "group_by", "instance", NULL),
	           "group_by");
}

static void test_proto(void **state)
{
	(void)state;
	struct http h;
	const char *hdr[] = {"Accept-Encoding: gzip", NULL};
	http_do(
	    NULL,
	    build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report", "proto", NULL),
	    hdr, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(h.ctype, "application/octet-stream");
	assert_string_equal(h.cenc, ""); /* the file is gzip itself, not the transfer */
	assert_non_null(strstr(h.disp, "attachment; filename=\"heap-"));
	assert_non_null(strstr(h.disp, ".pb.gz\""));
	/* gunzipped, it is field for field the profile that was stored (the store
	 * rebuilds its string table) */
	struct pd_err err = {0};
	assert_true(pd_gzip_is((uint8_t *)h.body, h.len));
	struct pd_pprof_profile *p;
	char why[256];
	assert_int_equal(pd_pprof_decode(&p, (uint8_t *)h.body, h.len, NULL, &err), 0);
	if (pd_pprof_compare(heap[2], p, why, sizeof(why)))
		fail_msg("report=proto differs from the stored profile: %s", why);
	pd_pprof_destroy(p);
	http_free(&h);

	/* nothing there: 204 No Content */
	get(build("/api/v1/query", "query", "heap", "time", "1", "report", "proto", NULL), &h);
	assert_int_equal(h.status, 204);
	assert_int_equal(h.len, 0);
	http_free(&h);

	/* a merged profile downloads as a valid pprof file too */
	get(build("/api/v1/query", "query", "heap", "mode", "merge", "start", ms(heap_t[0]), "end",
	          ms(heap_t[2]), "report", "proto", NULL),
	    &h);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.disp, "filename=\"heap-merge-"));
	assert_int_equal(pd_pprof_decode(&p, (uint8_t *)h.body, h.len, NULL, &err), 0);
	pd_pprof_destroy(p);
	http_free(&h);
}

/* report=folded and report=speedscope: the files of pd_pprof_folded and
 * pd_pprof_speedscope for what was stored, named as downloads; refused for a diff and
 * for groups; 204 when nothing is there. */
static void test_exports(void **state)
{
	(void)state;
	struct http h;
	struct pd_err err = {0};
	struct pd_buf want;
	int idx;
	assert_int_equal(pd_pprof_sample_index(heap[2], "alloc_space", &idx, &err), 0);

	get(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report", "folded",
	          "sample_index", "alloc_space", NULL),
	    &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(h.ctype, "text/plain; charset=utf-8");
	assert_non_null(strstr(h.disp, "attachment; filename=\"heap-"));
	assert_non_null(strstr(h.disp, ".folded.txt\""));
	pd_buf_init(&want, 0);
	assert_int_equal(pd_pprof_folded(heap[2], idx, &want, &err), 0);
	assert_true(want.len > 0);
	assert_int_equal(h.len, want.len);
	assert_memory_equal(h.body, want.data, want.len);
	pd_buf_fini(&want);
	http_free(&h);

	get(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report", "speedscope",
	          "sample_index", "alloc_space", NULL),
	    &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(h.ctype, "application/json");
	assert_non_null(strstr(h.disp, ".speedscope.json\""));
	pd_buf_init(&want, 0);
	char name[200];
	const char *f = strstr(h.disp, "filename=\"") + 10;
	snprintf(name, sizeof(name), "%.*s", (int)(strchr(f, '"') - f), f);
	assert_int_equal(pd_pprof_speedscope(heap[2], idx, 1, name, &want, &err), 0);
	assert_int_equal(h.len, want.len);
	assert_memory_equal(h.body, want.data, want.len);
	assert_non_null(strstr(h.body, "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""));
	pd_buf_fini(&want);
	http_free(&h);

	/* tag_focus applies first, as for every report */
	struct pd_pprof_tagfilter *tf = NULL;
	struct pd_pprof_profile *kept = NULL;
	size_t nkept = 0;
	assert_int_equal(pd_pprof_tagfilter_parse(&tf, "bytes=:1kb", 10, &err), 0);
	assert_int_equal(pd_pprof_filter_tags(heap[2], (const struct pd_pprof_tagfilter *const *)&tf,
	                                      1, NULL, 0, &kept, &nkept, &err),
	                 0);
	assert_true(nkept > 0 && nkept < pd_pprof_sample_count(heap[2]));
	get(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report", "folded",
	          "sample_index", "alloc_space", "tag_focus", "bytes=:1kb", NULL),
	    &h);
	assert_int_equal(h.status, 200);
	pd_buf_init(&want, 0);
	assert_int_equal(pd_pprof_folded(kept, idx, &want, &err), 0);
	assert_int_equal(h.len, want.len);
	assert_memory_equal(h.body, want.data, want.len);
	pd_buf_fini(&want);
	http_free(&h);
	pd_pprof_destroy(kept);
	pd_pprof_tagfilter_destroy(tf);

	/* a merge is one file too */
	get(build("/api/v1/query", "query", "heap", "mode", "merge", "start", ms(heap_t[0]), "end",
	          ms(heap_t[2]), "report", "folded", NULL),
	    &h);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.disp, "filename=\"heap-merge-"));
	assert_true(h.len > 0 && h.body[h.len - 1] == '\n');
	http_free(&h);

	/* nothing there: 204 No Content */
	get(build("/api/v1/query", "query", "heap", "time", "1", "report", "speedscope", NULL), &h);
	assert_int_equal(h.status, 204);
	assert_int_equal(h.len, 0);
	http_free(&h);

	/* a diff's changes are not amounts; groups are not one file */
	expect_bad(build("/api/v1/query", "mode", "diff", "query", "heap", "a.time", ms(heap_t[0]),
	                 "b.time", ms(heap_t[2]), "report", "folded", NULL),
	           "report");
	expect_bad(build("/api/v1/query", "mode", "diff", "query", "heap", "a.time", ms(heap_t[0]),
	                 "b.time", ms(heap_t[2]), "report", "speedscope", NULL),
	           "report");
	expect_bad(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report",
	                 "speedscope", "group_by_sample_label", "bytes", NULL),
	           "group_by_sample_label");
	expect_bad(build("/api/v1/query", "query", "heap", "mode", "merge", "start", ms(heap_t[0]),
	                 "end", ms(heap_t[2]), "report", "folded", "group_by", "job", NULL),
	           "group_by");
	expect_bad(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report",
	                 "folded", "sample_index", "nosuchtype", NULL),
	           "sample_index");
}

/* m, a merge of count profiles, as the API gives it by default: its snapshot types
 * (inuse_*) averaged over the count, the others summed. *out is new. */
static struct pd_pprof_profile *default_aggregation(const struct pd_pprof_profile *m,
                                                    uint64_t count)
{
	unsigned char which[16] = {0};
	size_t n = pd_pprof_sample_type_count(m);
	assert_true(n <= sizeof(which));
	for (size_t i = 0; i < n; i++)
		which[i] = (unsigned char)pd_pprof_snapshot_type(m, i);
	struct pd_pprof_profile *out;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_average(m, which, count, &out, &err), 0);
	return out;
}

static void test_merge(void **state)
{
	(void)state;
	struct pd_pprof_profile *m;
	struct pd_err err = {0};
	const struct pd_pprof_profile *in[3] = {heap[0], heap[1], heap[2]};
	assert_int_equal(pd_pprof_merge(in, 3, &m, &err), 0);
	/* aggregation=sum: pprof's merge */
	struct jv *v =
	    get_json(build("/api/v1/query", "query", "heap{job=\"api\"}", "mode", "merge", "start",
	                   ms(heap_t[0]), "end", ms(heap_t[2]), "report", "top", "aggregation",
	                   "sum", NULL),
	             200);
	check_top(jget(v, "data"), m, pd_pprof_default_sample_index(m));
	assert_null(jget(v, "warnings"));
	jv_free(v);
	/* by default a heap's inuse types are the average of the three */
	struct pd_pprof_profile *avg = default_aggregation(m, 3);
	assert_true(pd_pprof_snapshot_type(m, (size_t)pd_pprof_default_sample_index(m)));
	v = get_json(build("/api/v1/query", "query", "heap{job=\"api\"}", "mode", "merge", "start",
	                   ms(heap_t[0]), "end", ms(heap_t[2]), "report", "top", NULL),
	             200);
	check_top(jget(v, "data"), avg, pd_pprof_default_sample_index(avg));
	assert_true(pd_pprof_total(avg, pd_pprof_default_sample_index(avg)) <
	            pd_pprof_total(m, pd_pprof_default_sample_index(m)));
	jv_free(v);
	pd_pprof_destroy(avg);
	pd_pprof_destroy(m);

	/* meta counts the profiles and the span */
	v = get_json(build("/api/v1/query", "query", "heap", "mode", "merge", "start",
	                   ms(heap_t[0]), "end", ms(heap_t[2]), "report", "meta", NULL),
	             200);
	assert_int_equal(jint(jget(jget(v, "data"), "profileCount")), 3);
	assert_int_equal(jint(jget(jget(v, "data"), "minTime")), heap_t[0]);
	assert_int_equal(jint(jget(jget(v, "data"), "maxTime")), heap_t[2]);
	jv_free(v);

	/* max_profiles cuts the merge, with a warning; the first two remain */
	assert_int_equal(pd_pprof_merge(in, 2, &m, &err), 0);
	v = get_json(build("/api/v1/query", "query", "heap", "mode", "merge", "start",
	                   ms(heap_t[0]), "end", ms(heap_t[2]), "report", "top", "max_profiles",
	                   "2", "aggregation", "sum", NULL),
	             200);
	check_top(jget(v, "data"), m, pd_pprof_default_sample_index(m));
	const char *wmsg = jstr_of(jat(jget(v, "warnings"), 0));
	assert_non_null(wmsg);
	assert_non_null(strstr(wmsg, "2 of 3 profiles"));
	jv_free(v);
	pd_pprof_destroy(m);

	/* heap and CPU profiles together cannot be merged: 400 naming the query */
	int64_t lo = heap_t[0] < cpu_t ? heap_t[0] : cpu_t;
	expect_bad(build("/api/v1/query", "query", "{job=\"api\"}", "mode", "merge", "start",
	                 ms(lo), "end", ms(heap_t[2]), NULL),
	           "query");
}

/* group_by: one merge per group of series, each equal to the merge of exactly
 * that group's profiles (here grouped by __name__: the heap profiles of a block
 * and the head, and the CPU profile) */
static void test_group_by(void **state)
{
	(void)state;
	struct pd_pprof_profile *m;
	struct pd_err err = {0};
	const struct pd_pprof_profile *in[3] = {heap[0], heap[1], heap[2]};
	assert_int_equal(pd_pprof_merge(in, 3, &m, &err), 0);
	int64_t lo = heap_t[0] < cpu_t ? heap_t[0] : cpu_t;
	int64_t hi = heap_t[2] > cpu_t ? heap_t[2] : cpu_t;
	struct jv *v =
	    get_json(build("/api/v1/query", "query", "{job=\"api\"}", "mode", "merge", "start",
	                   ms(lo), "end", ms(hi), "report", "top", "group_by", "__name__", NULL),
	             200);
	struct jv *d = jget(v, "data");
	assert_string_equal(jstr_of(jat(jget(d, "groupBy"), 0)), "__name__");
	assert_int_equal(jint(jget(d, "droppedGroups")), 0);
	struct jv *gs = jget(d, "groups");
	assert_int_equal(gs->n, 2);
	/* in label order: heap, then profile */
	struct jv *g0 = jat(gs, 0), *g1 = jat(gs, 1);
	assert_string_equal(jstr_of(jget(jget(g0, "labels"), "__name__")), "heap");
	assert_int_equal(jint(jget(g0, "profileCount")), 3);
	assert_int_equal(jint(jget(g0, "seriesCount")), 1);
	assert_int_equal(jint(jget(g0, "minTime")), heap_t[0]);
	assert_int_equal(jint(jget(g0, "maxTime")), heap_t[2]);
	int idx = pd_pprof_default_sample_index(m);
	/* each group aggregated over its own profiles: the heap's inuse types averaged */
	struct pd_pprof_profile *avg = default_aggregation(m, 3);
	assert_int_equal(jint(jget(g0, "total")), pd_pprof_total(avg, idx));
	check_top(jget(g0, "report"), avg, idx);
	pd_pprof_destroy(avg);
	assert_string_equal(jstr_of(jget(jget(g1, "labels"), "__name__")), "profile");
	assert_int_equal(jint(jget(g1, "profileCount")), 1);
	check_top(jget(g1, "report"), cpu, pd_pprof_default_sample_index(cpu));
	assert_null(jget(v, "warnings"));
	jv_free(v);
	pd_pprof_destroy(m);

	/* a label no series has: one group under "", the merge of everything that
	 * merges (the heap series alone) */
	v = get_json(build("/api/v1/query", "query", "heap", "mode", "merge", "start", ms(lo),
	                   "end", ms(hi), "report", "meta", "group_by", "zone", NULL),
	             200);
	gs = jget(jget(v, "data"), "groups");
	assert_int_equal(gs->n, 1);
	assert_string_equal(jstr_of(jget(jget(jat(gs, 0), "labels"), "zone")), "");
	assert_int_equal(jint(jget(jget(jat(gs, 0), "report"), "profileCount")), 3);
	jv_free(v);

	/* group_limit: one group stays, the other is counted and warned about */
	v = get_json(build("/api/v1/query", "query", "{job=\"api\"}", "mode", "merge", "start",
	                   ms(lo), "end", ms(hi), "report", "top", "group_by", "__name__",
	                   "group_limit", "1", NULL),
	             200);
	assert_int_equal(jget(jget(v, "data"), "groups")->n, 1);
	assert_int_equal(jint(jget(jget(v, "data"), "droppedGroups")), 1);
	assert_non_null(strstr(jstr_of(jat(jget(v, "warnings"), 0)), "group_limit"));
	jv_free(v);

	/* two profile types in one group cannot be merged; bad names and modes */
	expect_bad(build("/api/v1/query", "query", "{job=\"api\"}", "mode", "merge", "start",
	                 ms(lo), "end", ms(hi), "group_by", "instance", NULL),
	           "query");
	expect_bad(
	    build("/api/v1/query", "query", "heap", "mode", "merge", "group_by", "a-b", NULL),
	    "group_by");
	expect_bad(build("/api/v1/query", "query", "heap", "group_by", "instance", NULL),
	           "group_by");
	expect_bad(build("/api/v1/query", "query", "heap", "mode", "merge", "group_by", "job",
	                 "group_limit", "0", NULL),
	           "group_limit");
}

static void test_diff(void **state)
{
	(void)state;
	struct pd_pprof_profile *d;
	struct pd_err err = {0};
	assert_int_equal(pd_pprof_diff(heap[0], heap[2], &d, &err), 0);
	struct jv *v =
	    get_json(build("/api/v1/query", "mode", "diff", "query", "heap{job=\"api\"}", "a.time",
	                   ms(heap_t[0]), "b.time", ms(heap_t[2]), "report", "top", NULL),
	             200);
	check_top(jget(v, "data"), d, pd_pprof_default_sample_index(d));
	jv_free(v);
	pd_pprof_destroy(d);

	/* a merged side: b = merge(heap-2, heap-3), a = heap */
	const struct pd_pprof_profile *in[2] = {heap[1], heap[2]};
	struct pd_pprof_profile *m;
	assert_int_equal(pd_pprof_merge(in, 2, &m, &err), 0);
	/* the merged side is aggregated over its own two profiles, as a merge is */
	struct pd_pprof_profile *mavg = default_aggregation(m, 2);
	assert_int_equal(pd_pprof_diff(heap[0], mavg, &d, &err), 0);
	pd_pprof_destroy(mavg);
	v = get_json(build("/api/v1/query", "mode", "diff", "a.query", "heap", "a.time",
	                   ms(heap_t[0]), "b.query", "heap", "b.start", ms(heap_t[1]), "b.end",
	                   ms(heap_t[2]), "report", "top", NULL),
	             200);
	check_top(jget(v, "data"), d, pd_pprof_default_sample_index(d));
	jv_free(v);
	v = get_json(build("/api/v1/query", "mode", "diff", "a.query", "heap", "a.time",
	                   ms(heap_t[0]), "b.query", "heap", "b.start", ms(heap_t[1]), "b.end",
	                   ms(heap_t[2]), "report", "meta", NULL),
	             200);
	assert_int_equal(jint(jget(jget(v, "data"), "profileCount")), 3);
	assert_int_equal(jint(jget(jget(jget(v, "data"), "b"), "profileCount")), 2);
	jv_free(v);
	pd_pprof_destroy(d);
	pd_pprof_destroy(m);
}

static void test_series_and_labels(void **state)
{
	(void)state;
	struct jv *v = get_json(build("/api/v1/series", "match[]", "heap", NULL), 200);
	struct jv *d = jget(v, "data");
	assert_int_equal(d->n, 1);
	assert_string_equal(jstr_of(jget(jat(d, 0), "__name__")), "heap");
	assert_string_equal(jstr_of(jget(jat(d, 0), "instance")), "a:1");
	jv_free(v);

	/* several match[]: the union, sorted, without duplicates */
	char path[1024];
	snprintf(path, sizeof(path), "%s&match[]=%s",
	         build("/api/v1/series", "match[]", "heap", NULL),
	         "%7Bjob%3D~%22api%7Cweird%22%7D");
	v = get_json(path, 200);
	d = jget(v, "data");
	assert_int_equal(d->n, 3);
	assert_string_equal(jstr_of(jget(jat(d, 0), "__name__")), "goroutine");
	/* the awkward label value survives JSON escaping */
	assert_string_equal(jstr_of(jget(jat(d, 0), "instance")), weird_value);
	assert_string_equal(jstr_of(jget(jat(d, 1), "__name__")), "heap");
	assert_string_equal(jstr_of(jget(jat(d, 2), "__name__")), "profile");
	jv_free(v);

	/* a time range that excludes everything */
	v = get_json(build("/api/v1/series", "match[]", "heap", "start", "1", "end", "2", NULL),
	             200);
	assert_int_equal(jget(v, "data")->n, 0);
	jv_free(v);

	v = get_json("/api/v1/labels", 200);
	d = jget(v, "data");
	assert_int_equal(d->n, 3);
	assert_string_equal(jstr_of(jat(d, 0)), "__name__");
	assert_string_equal(jstr_of(jat(d, 1)), "instance");
	assert_string_equal(jstr_of(jat(d, 2)), "job");
	jv_free(v);

	v = get_json("/api/v1/label/job/values", 200);
	d = jget(v, "data");
	assert_int_equal(d->n, 2);
	assert_string_equal(jstr_of(jat(d, 0)), "api");
	assert_string_equal(jstr_of(jat(d, 1)), "weird");
	jv_free(v);
	v = get_json(build("/api/v1/label/__name__/values", "match[]", "{job=\"api\"}", NULL), 200);
	d = jget(v, "data");
	assert_int_equal(d->n, 2);
	assert_string_equal(jstr_of(jat(d, 0)), "heap");
	assert_string_equal(jstr_of(jat(d, 1)), "profile");
	jv_free(v);
	v = get_json(build("/api/v1/label/instance/values", "match[]", "goroutine", NULL), 200);
	assert_string_equal(jstr_of(jat(jget(v, "data"), 0)), weird_value);
	jv_free(v);
	v = get_json("/api/v1/label/nosuch/values", 200);
	assert_int_equal(jget(v, "data")->n, 0);
	jv_free(v);

	expect_bad("/api/v1/series", "match[]");
	expect_bad(build("/api/v1/series", "match[]", "heap{", NULL), "match[]");
	expect_bad("/api/v1/label/1bad/values", "name");
	expect_bad(build("/api/v1/labels", "start", "yesterday", NULL), "start");
}

static void test_bad_parameters(void **state)
{
	(void)state;
	expect_bad(build("/api/v1/query_range", "query", "heap{job=", NULL), "query");
	expect_bad("/api/v1/query_range", "query");
	expect_bad(build("/api/v1/query_range", "query", "heap", "start", "soon", NULL), "start");
	expect_bad(
	    build("/api/v1/query_range", "query", "heap", "end", "2024-13-01T00:00:00Z", NULL),
	    "end");
	expect_bad(
	    build("/api/v1/query_range", "query", "heap", "start", "2000", "end", "1000", NULL),
	    "end");
	/* longer than 31 days */
	expect_bad(
	    build("/api/v1/query_range", "query", "heap", "start", "0", "end", "2764800", NULL),
	    "end");
	expect_bad(build("/api/v1/query_range", "query", "heap", "limit", "-1", NULL), "limit");
	expect_bad(build("/api/v1/query", "query", "heap", "report", "pdf", NULL), "report");
	expect_bad(build("/api/v1/query", "query", "heap", "mode", "sum", NULL), "mode");
	expect_bad(build("/api/v1/query", "query", "heap", "time", "x", NULL), "time");
	expect_bad(build("/api/v1/query", "query", "heap", "lookback", "5x", NULL), "lookback");
	expect_bad(build("/api/v1/query", "query", "heap", "time", ms(heap_t[1]), "report", "top",
	                 "sample_index", "nosuch", NULL),
	           "sample_index");
	expect_bad(
	    build("/api/v1/query", "mode", "diff", "a.query", "heap", "b.query", "heap{", NULL),
	    "b.query");
	/* two series at the time: single needs exactly one, and says how many */
	struct jv *v =
	    get_json(build("/api/v1/query", "query", "{job=\"api\"}", "time",
	                   ms(heap_t[2] > cpu_t ? heap_t[2] : cpu_t), "lookback", "1h", NULL),
	             400);
	assert_non_null(strstr(jstr_of(jget(v, "error")), "matches 2 series"));
	assert_non_null(strstr(jstr_of(jget(v, "error")), "invalid parameter \"query\""));
	jv_free(v);
	/* a selector matching everything is refused, as PromQL refuses it */
	expect_bad(build("/api/v1/query_range", "query", "{job=~\".*\"}", NULL), "query");
}

static void test_push(void **state)
{
	(void)state;
	/* raw gzip body; stored at its time_nanos */
	struct http h;
	http_do(
	    NULL,
	    build("/api/v1/profiles", "labels", "goroutine{job=\"batch\",instance=\"h1\"}", NULL),
	    NULL, gor_gz, gor_gz_len, NULL, &h);
	if (h.status != 200)
		fail_msg("push: %ld %s", h.status, h.body);
	struct jv *v = jparse(h.body);
	assert_non_null(v);
	assert_int_equal(jint(jget(jget(v, "data"), "timestamp")), gor_t);
	assert_string_equal(jstr_of(jget(jget(jget(v, "data"), "labels"), "job")), "batch");
	jv_free(v);
	http_free(&h);
	v = get_json(build("/api/v1/query_range", "query", "goroutine{job=\"batch\"}", "start",
	                   ms(gor_t - 1), "end", ms(gor_t + 1), NULL),
	             200);
	assert_int_equal(jint(jat(jget(jat(jget(v, "data"), 0), "timestamps"), 0)), gor_t);
	jv_free(v);
	/* what is stored is the gunzipped protobuf: proto returns the same profile */
	get(build("/api/v1/query", "query", "goroutine{job=\"batch\"}", "time", ms(gor_t), "report",
	          "proto", NULL),
	    &h);
	assert_int_equal(h.status, 200);
	struct pd_err err = {0};
	struct pd_pprof_profile *pa, *pb;
	char why[256];
	assert_int_equal(pd_pprof_decode(&pa, (uint8_t *)h.body, h.len, NULL, &err), 0);
	assert_int_equal(pd_pprof_decode(&pb, gor_gz, gor_gz_len, NULL, &err), 0);
	if (pd_pprof_compare(pb, pa, why, sizeof(why)))
		fail_msg("report=proto differs from the pushed profile: %s", why);
	pd_pprof_destroy(pa);
	pd_pprof_destroy(pb);
	http_free(&h);
	uint8_t *want;
	size_t wlen;
	assert_int_equal(pd_gunzip(gor_gz, gor_gz_len, 64u << 20, &want, &wlen, &err), 0);

	/* the same sample again: a duplicate, 400 */
	http_do(
	    NULL,
	    build("/api/v1/profiles", "labels", "goroutine{job=\"batch\",instance=\"h1\"}", NULL),
	    NULL, gor_gz, gor_gz_len, NULL, &h);
	assert_int_equal(h.status, 400);
	assert_non_null(strstr(h.body, "duplicate"));
	http_free(&h);

	/* raw (not gzip) protobuf at an explicit time */
	http_do(NULL,
	        build("/api/v1/profiles", "labels", "goroutine{job=\"batch\",instance=\"h2\"}",
	              "time", "1700000000", NULL),
	        NULL, want, wlen, NULL, &h);
	assert_int_equal(h.status, 200);
	http_free(&h);
	free(want);
	v = get_json(build("/api/v1/query_range", "query", "goroutine{instance=\"h2\"}", "start",
	                   "1699999999", "end", "1700000001", NULL),
	             200);
	assert_int_equal(jint(jat(jget(jat(jget(v, "data"), 0), "timestamps"), 0)),
	                 1700000000000LL);
	jv_free(v);

	/* multipart/form-data with file and labels fields, as curl -F sends */
	CURL *mc = curl_easy_init();
	curl_mime *mime = curl_mime_init(mc);
	curl_mimepart *part = curl_mime_addpart(mime);
	curl_mime_name(part, "labels");
	curl_mime_data(part, "goroutine{job=\"batch\",instance=\"h3\"}", CURL_ZERO_TERMINATED);
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "file");
	curl_mime_filename(part, "goroutine.pb.gz");
	curl_mime_data(part, (const char *)gor_gz, gor_gz_len);
	http_do(NULL, "/api/v1/profiles", NULL, NULL, 0, mime, &h);
	curl_mime_free(mime);
	curl_easy_cleanup(mc);
	if (h.status != 200)
		fail_msg("multipart push: %ld %s", h.status, h.body);
	http_free(&h);
	v = get_json(build("/api/v1/series", "match[]", "goroutine{job=\"batch\"}", NULL), 200);
	assert_int_equal(jget(v, "data")->n, 3);
	jv_free(v);

	/* refused: garbage, no labels, reserved labels, GET */
	http_do(NULL, build("/api/v1/profiles", "labels", "goroutine{job=\"x\"}", NULL), NULL,
	        "not a profile", 13, NULL, &h);
	assert_int_equal(h.status, 400);
	assert_non_null(strstr(h.body, "invalid parameter \\\"file\\\""));
	http_free(&h);
	http_do(NULL, "/api/v1/profiles", NULL, gor_gz, gor_gz_len, NULL, &h);
	assert_int_equal(h.status, 400);
	assert_non_null(strstr(h.body, "invalid parameter \\\"labels\\\""));
	http_free(&h);
	http_do(NULL, build("/api/v1/profiles", "labels", "{job=\"x\"}", NULL), NULL, gor_gz,
	        gor_gz_len, NULL, &h);
	assert_int_equal(h.status, 400);
	http_free(&h);
	http_do(NULL, build("/api/v1/profiles", "labels", "goroutine{__meta_x=\"1\"}", NULL), NULL,
	        gor_gz, gor_gz_len, NULL, &h);
	assert_int_equal(h.status, 400);
	http_free(&h);
	get("/api/v1/profiles", &h);
	assert_int_equal(h.status, 405);
	assert_string_equal(h.allow, "POST");
	http_free(&h);
}

/* The head's series limit through the push API: a push creating a series past
 * it is refused with 400 naming the series and the flag, counted in /metrics;
 * pushes to existing series go on; a restart with a lower limit keeps every
 * pushed series. */
static struct pd_api_server *start_on(struct pd_tsdb *on)
{
	struct pd_api_opts ao;
	struct pd_api_server *s2;
	struct pd_err err = {0};
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(on);
	if (pd_api_start(&s2, &ao, &err))
		fail_msg("start: %s", err.msg);
	port = pd_api_port(s2);
	return s2;
}

static struct pd_tsdb *open_limited(const char *d, uint64_t max_series)
{
	struct pd_tsdb_opts o;
	struct pd_tsdb *ldb;
	struct pd_err err = {0};
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.wal_sync = 1;
	o.max_series = max_series;
	if (pd_tsdb_open(&ldb, d, &o, &err))
		fail_msg("open: %s", err.msg);
	return ldb;
}

static long push_at(const char *job, const char *t, struct http *h)
{
	char sel[64];
	snprintf(sel, sizeof(sel), "goroutine{job=\"%s\"}", job);
	http_do(NULL, build("/api/v1/profiles", "labels", sel, "time", t, NULL), NULL, gor_gz,
	        gor_gz_len, NULL, h);
	return h->status;
}

static void test_push_series_limit(void **state)
{
	(void)state;
	char d[] = "/tmp/pd_test_api_limit_XXXXXX";
	assert_non_null(mkdtemp(d));
	unsigned saved = port;
	struct http h;
	struct pd_tsdb *ldb = open_limited(d, 2);
	struct pd_api_server *s2 = start_on(ldb);
	assert_int_equal(push_at("a", "1700000000", &h), 200);
	http_free(&h);
	assert_int_equal(push_at("b", "1700000000", &h), 200);
	http_free(&h);
	assert_int_equal(push_at("c", "1700000000", &h), 400);
	struct jv *v = jparse(h.body);
	assert_non_null(v);
	assert_string_equal(jstr_of(jget(v, "errorType")), "bad_data");
	const char *e = jstr_of(jget(v, "error"));
	assert_non_null(strstr(e, "goroutine{job=\"c\"}"));
	assert_non_null(strstr(e, "series limit reached"));
	assert_non_null(strstr(e, "--storage.tsdb.max-series"));
	jv_free(v);
	http_free(&h);
	assert_int_equal(push_at("a", "1700000001", &h), 200); /* an existing series */
	http_free(&h);
	get("/metrics", &h);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.body, "\nprofd_tsdb_head_series_limit 2\n"));
	assert_non_null(strstr(h.body, "\nprofd_tsdb_head_series_limit_refused_total 1\n"));
	http_free(&h);
	pd_api_stop(s2);
	pd_tsdb_close(ldb);

	/* restart with a lower limit: both series are replayed and still append */
	ldb = open_limited(d, 1);
	s2 = start_on(ldb);
	v = get_json(build("/api/v1/series", "match[]", "goroutine", NULL), 200);
	assert_int_equal(jget(v, "data")->n, 2);
	jv_free(v);
	v = get_json(build("/api/v1/query_range", "query", "goroutine{job=\"a\"}", "start",
	                   "1699999999", "end", "1700000002", NULL),
	             200);
	assert_int_equal(jget(jat(jget(v, "data"), 0), "timestamps")->n, 2);
	jv_free(v);
	assert_int_equal(push_at("b", "1700000001", &h), 200);
	http_free(&h);
	assert_int_equal(push_at("c", "1700000001", &h), 400);
	http_free(&h);
	pd_api_stop(s2);
	pd_tsdb_close(ldb);
	port = saved;
	nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_gzip(void **state)
{
	(void)state;
	const char *path =
	    build("/api/v1/query", "query", "heap", "time", ms(heap_t[0]), "report", "top", NULL);
	struct http plain, gz;
	get(path, &plain);
	const char *hdr[] = {"Accept-Encoding: gzip, deflate", NULL};
	http_do(NULL, path, hdr, NULL, 0, NULL, &gz);
	assert_int_equal(gz.status, 200);
	assert_string_equal(gz.cenc, "gzip");
	assert_string_equal(plain.cenc, "");
	uint8_t *out;
	size_t len;
	struct pd_err err = {0};
	assert_int_equal(pd_gunzip((uint8_t *)gz.body, gz.len, 64u << 20, &out, &len, &err), 0);
	assert_int_equal(len, plain.len);
	assert_memory_equal(out, plain.body, len);
	assert_true(gz.len < plain.len);
	free(out);
	http_free(&plain);
	http_free(&gz);
	/* q=0 refuses gzip */
	const char *hdr0[] = {"Accept-Encoding: gzip;q=0", NULL};
	http_do(NULL, path, hdr0, NULL, 0, NULL, &gz);
	assert_string_equal(gz.cenc, "");
	http_free(&gz);
}

static void test_targets(void **state)
{
	(void)state;
	struct jv *v = get_json("/api/v1/targets", 200);
	struct jv *d = jget(v, "data");
	struct jv *act = jget(d, "activeTargets"), *drop = jget(d, "droppedTargets");
	assert_int_equal(act->n, 1);
	struct jv *t = jat(act, 0);
	assert_string_equal(jstr_of(jget(t, "scrapePool")), "test");
	assert_string_equal(jstr_of(jget(t, "scrapeUrl")), "http://127.0.0.1:1/debug/pprof/heap");
	assert_non_null(jstr_of(jget(t, "globalUrl")));
	assert_string_equal(jstr_of(jget(jget(t, "labels"), "job")), "test");
	assert_string_equal(jstr_of(jget(jget(t, "labels"), "instance")), "127.0.0.1:1");
	assert_string_equal(jstr_of(jget(jget(t, "discoveredLabels"), "__address__")),
	                    "127.0.0.1:1");
	const char *health = jstr_of(jget(t, "health"));
	assert_true(strcmp(health, "unknown") == 0 || strcmp(health, "down") == 0);
	assert_string_equal(jstr_of(jget(t, "scrapeInterval")), "1h");
	assert_string_equal(jstr_of(jget(t, "scrapeTimeout")), "1s");
	assert_string_equal(jstr_of(jget(t, "profileType")), "heap");
	assert_non_null(jstr_of(jget(t, "lastScrape")));
	assert_int_equal(jget(t, "lastScrapeDuration")->type, J_NUM);
	assert_non_null(jstr_of(jget(t, "lastError")));
	assert_int_equal(drop->n, 1);
	assert_string_equal(jstr_of(jget(jget(jat(drop, 0), "discoveredLabels"), "__address__")),
	                    "127.0.0.1:2");
	assert_int_equal(jint(jget(jget(d, "droppedTargetCounts"), "test")), 1);
	jv_free(v);

	v = get_json("/api/v1/targets?state=active", 200);
	assert_int_equal(jget(jget(v, "data"), "activeTargets")->n, 1);
	assert_int_equal(jget(jget(v, "data"), "droppedTargets")->n, 0);
	jv_free(v);
	v = get_json("/api/v1/targets?state=dropped", 200);
	assert_int_equal(jget(jget(v, "data"), "activeTargets")->n, 0);
	assert_int_equal(jget(jget(v, "data"), "droppedTargets")->n, 1);
	jv_free(v);
	expect_bad("/api/v1/targets?state=bogus", "state");
}

static void test_status(void **state)
{
	(void)state;
	struct jv *v = get_json("/api/v1/status/config", 200);
	assert_non_null(strstr(jstr_of(jget(jget(v, "data"), "yaml")), "scrape_interval: 1m"));
	jv_free(v);
	v = get_json("/api/v1/status/flags", 200);
	assert_string_equal(jstr_of(jget(jget(v, "data"), "config.file")), "profd.yml");
	assert_string_equal(jstr_of(jget(jget(v, "data"), "web.listen-address")), "127.0.0.1:0");
	jv_free(v);
	v = get_json("/api/v1/status/buildinfo", 200);
	assert_string_equal(jstr_of(jget(jget(v, "data"), "version")), "9.9.9-test");
	jv_free(v);
	v = get_json("/api/v1/status/tsdb", 200);
	struct jv *d = jget(v, "data");
	assert_string_equal(jstr_of(jget(d, "storage")), "local");
	assert_null(jget(d, "clickhouse"));
	struct jv *hs = jget(d, "headStats");
	assert_true(jint(jget(hs, "numSeries")) >= 2);
	assert_true(jint(jget(hs, "numSamples")) >= 2);
	assert_true(jint(jget(hs, "chunkCount")) >= 2);
	assert_true(jint(jget(hs, "minTime")) <= jint(jget(hs, "maxTime")));
	assert_true(jget(d, "blocks")->n >= 1);
	assert_true(jint(jget(jat(jget(d, "blocks"), 0), "numSamples")) >= 1);
	struct jv *lv = jget(d, "labelValueCountByLabelName");
	assert_true(lv->n >= 3);
	assert_non_null(jstr_of(jget(jat(lv, 0), "name")));
	assert_true(jget(d, "seriesCountByMetricName")->n >= 1);
	jv_free(v);
}

static void test_lifecycle_and_misc(void **state)
{
	(void)state;
	struct http h;
	get("/-/healthy", &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(h.body, "profd is Healthy.\n");
	http_free(&h);
	get("/-/ready", &h);
	assert_int_equal(h.status, 200);
	http_free(&h);
	pd_api_set_ready(srv, 0);
	get("/-/ready", &h);
	assert_int_equal(h.status, 503);
	http_free(&h);
	pd_api_set_ready(srv, 1);

	int calls = reload_calls;
	http_do("POST", "/-/reload", NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 200);
	assert_int_equal(reload_calls, calls + 1);
	http_free(&h);
	reload_fail = 1;
	http_do("POST", "/-/reload", NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 500);
	assert_non_null(
	    strstr(h.body, "failed to reload config: profd.yml:3:5: field foo not found"));
	http_free(&h);
	reload_fail = 0;
	http_do("PUT", "/-/reload", NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 200);
	http_free(&h);
	get("/-/reload", &h);
	assert_int_equal(h.status, 405);
	http_free(&h);

	get("/nope", &h);
	assert_int_equal(h.status, 404);
	http_free(&h);
	struct jv *v = get_json("/api/v1/nope", 404);
	assert_string_equal(jstr_of(jget(v, "errorType")), "not_found");
	jv_free(v);
	get("/", &h);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.ctype, "text/html"));
	assert_non_null(strstr(h.body, "/api/v1/query_range"));
	http_free(&h);
}

/* A UI hook that claims every path, as the web UI does for client routes. */
static int ui_everything(void *ctx, const char *method, const char *path,
			 struct pd_api_ui_response *r)
{
	static const char page[] = "<!doctype html><title>ui</title>";
	(void)ctx;
	(void)method;
	(void)path;
	r->content_type = "text/html; charset=utf-8";
	r->data = (const uint8_t *)page;
	r->len = sizeof(page) - 1;
	return 0;
}

/* The UI gets the paths outside the API; unknown API paths stay 404s. */
/* POST /-/quit's callback: counts calls (from an HTTP thread). */
static int quit_calls;

static void quit_cb(void *ctx)
{
	(void)ctx;
	__atomic_add_fetch(&quit_calls, 1, __ATOMIC_ACQ_REL);
}

/* Starts a second server on the fixture's store and points the helpers at it. */
static struct pd_api_server *start_other(struct pd_api_opts *ao, unsigned *saved)
{
	struct pd_api_server *s2;
	struct pd_err err = {0};
	ao->listen_address = "127.0.0.1:0";
	ao->db = pd_tsdb_storage(db);
	if (pd_api_start(&s2, ao, &err))
		fail_msg("start: %s", err.msg);
	*saved = port;
	port = pd_api_port(s2);
	return s2;
}

static void test_lifecycle_gates(void **state)
{
	(void)state;
	struct pd_api_opts ao;
	struct http h;
	unsigned saved;
	static const char *const methods[] = {"POST", "PUT"};
	static const char *const paths[] = {"/-/reload", "/-/quit"};

	/* the fixture's server has a reload hook but no quit hook: quit is refused */
	http_do("POST", "/-/quit", NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 403);
	assert_string_equal(h.body, "Lifecycle API is not enabled.");
	http_free(&h);

	/* no lifecycle hooks, pushes off: as `profd run --no-web.enable-push` */
	pd_api_opts_init(&ao);
	ao.push_disabled = 1;
	struct pd_api_server *s2 = start_other(&ao, &saved);
	int calls = reload_calls;
	for (int m = 0; m < 2; m++)
		for (int p = 0; p < 2; p++) {
			http_do(methods[m], paths[p], NULL, NULL, 0, NULL, &h);
			assert_int_equal(h.status, 403);
			assert_string_equal(h.body, "Lifecycle API is not enabled.");
			http_free(&h);
		}
	assert_int_equal(reload_calls, calls);
	get("/-/quit", &h);
	assert_int_equal(h.status, 405);
	assert_string_equal(h.body, "Only POST or PUT requests allowed\n");
	http_free(&h);
	get("/-/healthy", &h); /* still serving */
	assert_int_equal(h.status, 200);
	http_free(&h);
	/* a valid push is refused before its body is read, and nothing is stored */
	http_do(NULL, build("/api/v1/profiles", "labels", "goroutine{job=\"refused\"}", NULL), NULL,
	        gor_gz, gor_gz_len, NULL, &h);
	assert_int_equal(h.status, 404);
	struct jv *v = jparse(h.body);
	assert_non_null(v);
	assert_string_equal(jstr_of(jget(v, "status")), "error");
	assert_string_equal(jstr_of(jget(v, "errorType")), "not_found");
	assert_string_equal(jstr_of(jget(v, "error")),
	                    "push receiver needs to be enabled with --web.enable-push");
	jv_free(v);
	http_free(&h);
	v = get_json(build("/api/v1/series", "match[]", "{job=\"refused\"}", NULL), 200);
	assert_int_equal(jget(v, "data")->n, 0);
	jv_free(v);
	v = get_json("/api/v1/labels", 200); /* the rest of the API answers */
	jv_free(v);
	port = saved;
	pd_api_stop(s2);

	/* with a quit hook: the first call says goodbye and calls it once, after
	 * the answer went out; later calls only say that it is under way */
	pd_api_opts_init(&ao);
	ao.quit = quit_cb;
	s2 = start_other(&ao, &saved);
	http_do("POST", "/-/quit", NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(h.body, "Requesting termination... Goodbye!");
	http_free(&h);
	struct timespec t0, now, nap = {0, 10 * 1000 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (__atomic_load_n(&quit_calls, __ATOMIC_ACQUIRE) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > 30)
			fail_msg("the quit hook was not called within 30 s of the answer");
		nanosleep(&nap, NULL);
	}
	http_do("PUT", "/-/quit", NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(h.body, "Termination already in progress.");
	http_free(&h);
	/* pushes stay on by default */
	http_do(NULL, build("/api/v1/profiles", "labels", "goroutine{job=\"quit\"}", NULL), NULL,
	        gor_gz, gor_gz_len, NULL, &h);
	if (h.status != 200)
		fail_msg("push: %ld %s", h.status, h.body);
	http_free(&h);
	port = saved;
	pd_api_stop(s2); /* every request has completed: the count is final */
	assert_int_equal(__atomic_load_n(&quit_calls, __ATOMIC_ACQUIRE), 1);
}

static void test_ui_hook(void **state)
{
	(void)state;
	struct pd_api_opts ao;
	struct pd_api_server *s2;
	struct pd_err err = {0};
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	ao.ui = ui_everything;
	assert_int_equal(pd_api_start(&s2, &ao, &err), 0);
	unsigned saved = port;
	port = pd_api_port(s2);
	struct http h;
	get("/", &h);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.body, "<title>ui</title>"));
	http_free(&h);
	get("/targets", &h);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.body, "<title>ui</title>"));
	http_free(&h);
	struct jv *v = get_json("/api/v1/nope", 404);
	assert_string_equal(jstr_of(jget(v, "errorType")), "not_found");
	jv_free(v);
	get("/-/nope", &h);
	assert_int_equal(h.status, 404);
	http_free(&h);
	get("/debug/nope", &h);
	assert_int_equal(h.status, 404);
	http_free(&h);
	v = get_json("/api/v1/labels", 200); /* the API itself still answers */
	jv_free(v);
	port = saved;
	pd_api_stop(s2);
}

/* --web.external-url and --web.route-prefix as Prometheus reads them, and the
 * values profd refuses, each with a message naming the flag. */
static void test_prefix_flags(void **state)
{
	(void)state;
	struct pd_err err = {0};
	char *u = NULL, *p = NULL, host[256], want[400];
	/* the default: http://<hostname>:<port of the listen address> */
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_int_equal(pd_api_external_url(NULL, "127.0.0.1:9999", &u, &err), 0);
	snprintf(want, sizeof(want), "http://%s:9999", host);
	assert_string_equal(u, want);
	assert_int_equal(pd_api_route_prefix("", u, &p, &err), 0);
	assert_string_equal(p, "/");
	free(u);
	free(p);
	assert_int_equal(pd_api_external_url("", "[::1]:10902", &u, &err), 0);
	snprintf(want, sizeof(want), "http://%s:10902", host);
	assert_string_equal(u, want);
	free(u);
	/* the path loses its trailing slashes and is the default prefix */
	static const struct {
		const char *url, *prefix_flag, *want_url, *want_prefix;
	} ok[] = {
	    {"http://proxy.example/profd/", NULL, "http://proxy.example/profd", "/profd"},
	    {"HTTPS://proxy.example:8443/a/b//", "", "https://proxy.example:8443/a/b", "/a/b"},
	    {"http://proxy.example", NULL, "http://proxy.example", "/"},
	    {"http://proxy.example/", NULL, "http://proxy.example", "/"},
	    {"http://proxy.example/profd/", "/", "http://proxy.example/profd", "/"},
	    {"http://proxy.example/profd/", "other/", "http://proxy.example/profd", "/other"},
	    {"http://proxy.example/", "//x/y//", "http://proxy.example", "/x/y"},
	    {"http://[::1]:9/p", NULL, "http://[::1]:9/p", "/p"},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (pd_api_external_url(ok[i].url, NULL, &u, &err))
			fail_msg("%s: %s", ok[i].url, err.msg);
		assert_string_equal(u, ok[i].want_url);
		if (pd_api_route_prefix(ok[i].prefix_flag, u, &p, &err))
			fail_msg("%s %s: %s", ok[i].url, ok[i].prefix_flag, err.msg);
		assert_string_equal(p, ok[i].want_prefix);
		free(u);
		free(p);
	}
	static const struct {
		const char *url, *want;
	} bad_url[] = {
	    {"ftp://proxy.example/", "scheme \"ftp\" is not supported; use http or https"},
	    {"proxy.example/profd", "not an absolute URL"},
	    {"\"http://proxy.example/\"", "must not begin or end with quotes"},
	    {"http:///profd", "no host"},
	    {"http://user:hunter2@proxy.example/", "user information"},
	    {"http://proxy.example/profd?x=1", "query (?) or fragment (#)"},
	    {"http://proxy.example/profd#top", "query (?) or fragment (#)"},
	    {"http://proxy.example/a/../b", "\"..\" segment"},
	    {"http://proxy.example/my%20profd", "the path holds '%'"},
	    {"http://proxy.example/a b", "the path holds ' '"},
	};
	for (size_t i = 0; i < sizeof(bad_url) / sizeof(bad_url[0]); i++) {
		u = (char *)"unset";
		assert_int_equal(pd_api_external_url(bad_url[i].url, NULL, &u, &err), PD_EINVAL);
		assert_null(u);
		if (!strstr(err.msg, "--web.external-url") || !strstr(err.msg, bad_url[i].want))
			fail_msg("%s: error \"%s\" lacks the flag or \"%s\"", bad_url[i].url,
			         err.msg, bad_url[i].want);
		assert_null(strstr(err.msg, "hunter2")); /* a password is never repeated */
	}
	static const char *const bad_prefix[] = {"/a/./b", "../x", "/a\"b", "/a<b", "/a&b", "/a?b"};
	for (size_t i = 0; i < sizeof(bad_prefix) / sizeof(bad_prefix[0]); i++) {
		assert_int_equal(pd_api_route_prefix(bad_prefix[i], "http://h", &p, &err),
		                 PD_EINVAL);
		if (!strstr(err.msg, "--web.route-prefix"))
			fail_msg("%s: error \"%s\" does not name the flag", bad_prefix[i], err.msg);
	}
}

/* What the UI hook of the prefixed server saw last. */
static char ui_seen[256];

static int ui_record(void *ctx, const char *method, const char *path, struct pd_api_ui_response *r)
{
	static const char page[] = "<!doctype html><title>ui</title>";
	(void)ctx;
	(void)method;
	snprintf(ui_seen, sizeof(ui_seen), "%s", path);
	if (strcmp(path, "/moved") == 0) {
		r->status = 302;
		r->location = "/elsewhere";
	}
	r->content_type = "text/html; charset=utf-8";
	r->data = (const uint8_t *)page;
	r->len = sizeof(page) - 1;
	return 0;
}

/* Under --web.route-prefix=/profd every route answers below /profd: the API, the
 * lifecycle endpoints, /metrics, /debug/pprof and the UI (which sees the path
 * without the prefix); / redirects to /profd, /profd to /profd/ (keeping the
 * query), and everything outside /profd is 404. */
static void test_route_prefix(void **state)
{
	(void)state;
	struct pd_api_opts ao;
	struct pd_api_server *s2;
	struct pd_err err = {0};
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	ao.ui = ui_record;
	ao.route_prefix = "/profd";
	assert_int_equal(pd_api_start(&s2, &ao, &err), 0);
	unsigned saved = port;
	port = pd_api_port(s2);
	struct http h;

	struct jv *v = get_json("/profd/api/v1/labels", 200);
	assert_non_null(jget(v, "data"));
	jv_free(v);
	v = get_json(build("/profd/api/v1/query_range", "query", "heap{job=\"api\"}", "start",
	                   ms(heap_t[0] - 1000), "end", ms(heap_t[2] + 1000), NULL),
	             200);
	assert_int_equal(jget(jat(jget(v, "data"), 0), "timestamps")->n, 3);
	jv_free(v);
	v = get_json("/profd/api/v1/nope", 404); /* the API's own 404 inside the prefix */
	assert_string_equal(jstr_of(jget(v, "errorType")), "not_found");
	jv_free(v);
	get("/profd/-/healthy", &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(h.body, "profd is Healthy.\n");
	http_free(&h);
	get("/profd/-/ready", &h);
	assert_int_equal(h.status, 200);
	http_free(&h);
	get("/profd/metrics", &h);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.body, "profd_build_info"));
	http_free(&h);
	get("/profd/debug/pprof/", &h);
	assert_int_equal(h.status, 200);
	http_free(&h);
	/* the handler's own redirect gets the prefix */
	get("/profd/debug/pprof", &h);
	assert_int_equal(h.status, 301);
	assert_string_equal(h.location, "/profd/debug/pprof/");
	http_free(&h);

	/* the UI, with the path inside the prefix */
	get("/profd/", &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(ui_seen, "/");
	http_free(&h);
	get("/profd/targets", &h);
	assert_int_equal(h.status, 200);
	assert_string_equal(ui_seen, "/targets");
	http_free(&h);
	get("/profd/moved", &h);
	assert_int_equal(h.status, 302);
	assert_string_equal(h.location, "/profd/elsewhere");
	http_free(&h);

	/* redirects into the prefix, as Prometheus */
	get("/", &h);
	assert_int_equal(h.status, 302);
	assert_string_equal(h.location, "/profd");
	http_free(&h);
	get("/profd", &h);
	assert_int_equal(h.status, 302);
	assert_string_equal(h.location, "/profd/");
	http_free(&h);
	get("/profd?query=heap%7Bjob%3D%22api%22%7D&range=1h", &h);
	assert_int_equal(h.status, 302);
	assert_string_equal(h.location, "/profd/?query=heap%7Bjob%3D%22api%22%7D&range=1h");
	http_free(&h);
	http_do("POST", "/", NULL, "x", 1, NULL, &h);
	assert_int_equal(h.status, 404);
	http_free(&h);

	/* outside the prefix: nothing, not even the API or the lifecycle endpoints */
	static const char *const outside[] = {
	    "/api/v1/labels",        "/-/healthy", "/metrics",     "/debug/pprof/", "/targets",
	    "/profdx/api/v1/labels", "/prof",      "/profd-other/"};
	ui_seen[0] = '\0';
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		get(outside[i], &h);
		if (h.status != 404)
			fail_msg("%s: status %ld, want 404", outside[i], h.status);
		http_free(&h);
	}
	assert_string_equal(ui_seen, ""); /* the UI never saw them */
	http_do("POST", "/-/reload", NULL, "", 0, NULL, &h);
	assert_int_equal(h.status, 404);
	http_free(&h);
	pd_api_stop(s2);

	/* a trailing slash is not part of the prefix; "/" is none */
	ao.route_prefix = "/profd/";
	assert_int_equal(pd_api_start(&s2, &ao, &err), 0);
	port = pd_api_port(s2);
	get("/profd/-/healthy", &h);
	assert_int_equal(h.status, 200);
	http_free(&h);
	pd_api_stop(s2);
	ao.route_prefix = "/";
	assert_int_equal(pd_api_start(&s2, &ao, &err), 0);
	port = pd_api_port(s2);
	get("/-/healthy", &h);
	assert_int_equal(h.status, 200);
	http_free(&h);
	pd_api_stop(s2);
	ao.route_prefix = "profd";
	assert_int_equal(pd_api_start(&s2, &ao, &err), PD_EINVAL);
	port = saved;
}

/* 1 when text has "# HELP name " and "# TYPE name [type]". */
/* The admin endpoints: refused as Prometheus refuses them while disabled (the
 * fixture's server); on a second server that enables them, 400s naming the
 * parameter, a deletion through a form body that query_range then honours, a
 * snapshot holding the profiles left, clean_tombstones. Runs last: it deletes. */
static void test_admin(void **state)
{
	(void)state;
	static const char *const paths[] = {"/api/v1/admin/tsdb/delete_series",
	                                    "/api/v1/admin/tsdb/clean_tombstones",
	                                    "/api/v1/admin/tsdb/snapshot"};
	struct http h;
	for (int i = 0; i < 3; i++) {
		http_do("POST", build(paths[i], "match[]", "heap", NULL), NULL, NULL, 0, NULL, &h);
		assert_int_equal(h.status, 503);
		assert_string_equal(
		    h.body, "{\"status\":\"error\",\"errorType\":\"unavailable\",\"error\":\"admin APIs disabled\"}");
		http_free(&h);
	}

	struct pd_api_opts ao;
	struct pd_api_server *s2;
	struct pd_err err = {0};
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = pd_tsdb_storage(db);
	ao.enable_admin_api = 1;
	assert_int_equal(pd_api_start(&s2, &ao, &err), 0);
	unsigned saved = port;
	port = pd_api_port(s2);

	get(paths[0], &h);
	assert_int_equal(h.status, 405);
	http_free(&h);
	http_do("POST", paths[0], NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 400);
	assert_non_null(strstr(h.body, "invalid parameter \\\"match[]\\\": no match[] parameter provided"));
	http_free(&h);
	http_do("POST", build(paths[0], "match[]", "heap{", NULL), NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 400);
	assert_non_null(strstr(h.body, "match[]"));
	http_free(&h);
	http_do("POST", build(paths[0], "match[]", "heap", "start", "2", "end", "1", NULL), NULL, NULL,
	        0, NULL, &h);
	assert_int_equal(h.status, 400);
	assert_non_null(strstr(h.body, "\\\"end\\\""));
	http_free(&h);
	http_do("POST", build(paths[2], "skip_head", "maybe", NULL), NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 400);
	assert_non_null(strstr(h.body, "skip_head"));
	http_free(&h);

	/* delete heap profiles 0 and 2 (a block and the head) by a PUT form body */
	char body[256];
	const char *hdr[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
	snprintf(body, sizeof(body), "match%%5B%%5D=heap%%7Bjob%%3D%%22api%%22%%7D&start=%s&end=%s",
	         ms(heap_t[0]), ms(heap_t[0]));
	http_do("PUT", paths[0], hdr, body, strlen(body), NULL, &h);
	assert_int_equal(h.status, 204);
	assert_string_equal(h.body, "");
	http_free(&h);
	http_do("POST", build(paths[0], "match[]", "heap{job=\"api\"}", "start", ms(heap_t[2]), NULL),
	        NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 204);
	http_free(&h);
	struct jv *v = get_json(build("/api/v1/query_range", "query", "heap{job=\"api\"}", "start",
	                              ms(heap_t[0] - 1000), "end", ms(heap_t[2] + 1000), NULL),
	                        200);
	const struct jv *ts = jget(jat(jget(v, "data"), 0), "timestamps");
	assert_non_null(ts);
	assert_non_null(jat(ts, 0));
	assert_null(jat(ts, 1));
	assert_int_equal(jint(jat(ts, 0)), heap_t[1]);
	jv_free(v);

	http_do("POST", paths[2], NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 200);
	v = jparse(h.body);
	http_free(&h);
	const char *name = jstr_of(jget(jget(v, "data"), "name"));
	assert_non_null(name);
	assert_int_equal(strlen(name), 33);
	char snap[512];
	snprintf(snap, sizeof(snap), "%s/snapshots/%s", dir, name);
	jv_free(v);
	struct pd_tsdb *sdb;
	struct pd_tsdb_opts so;
	pd_tsdb_opts_init(&so);
	so.read_only = 1;
	so.retention_ms = -1;
	assert_int_equal(pd_tsdb_open(&sdb, snap, &so, &err), 0);
	struct pd_storage_matcher m = {"job", pd_storage_match_equal, "api"};
	struct pd_storage_result *r;
	assert_int_equal(pd_tsdb_select(sdb, &m, 1, INT64_MIN, INT64_MAX, 0, &r, &err), 0);
	assert_int_equal(r->nseries, 2); /* heap with one profile left, and profile */
	for (size_t i = 0; i < r->nseries; i++)
		assert_int_equal(r->series[i].nts, 1);
	pd_storage_result_destroy(r);
	pd_tsdb_close(sdb);

	http_do("POST", paths[1], NULL, NULL, 0, NULL, &h);
	assert_int_equal(h.status, 204);
	http_free(&h);
	port = saved;
	pd_api_stop(s2);
}

static int has_family(const char *text, const char *name, const char *type)
{
	char l[256];
	snprintf(l, sizeof(l), "# HELP %s ", name);
	if (!strstr(text, l))
		return 0;
	snprintf(l, sizeof(l), "# TYPE %s %s", name, type ? type : "");
	return strstr(text, l) != NULL;
}

static void test_metrics(void **state)
{
	(void)state;
	struct http h;
	get("/api/v1/labels", &h); /* at least one request counted */
	http_free(&h);
	get("/metrics", &h);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.ctype, "text/plain; version=0.0.4"));
	static const char *const want[] = {
	    "# HELP profd_build_info ",
	    "# TYPE profd_build_info gauge\nprofd_build_info{version=\"9.9.9-test\"",
	    "# TYPE profd_scrapes_total counter\n",
	    "profd_scrapes_total{result=\"success\"} ",
	    "# TYPE profd_scrape_bytes_total counter\n",
	    "profd_profiles_appended_total{source=\"push\"} 3\n",
	    "profd_tsdb_head_series ",
	    "# TYPE profd_tsdb_wal_storage_size_bytes gauge\n",
	    "profd_tsdb_storage_blocks_bytes ",
	    "# TYPE profd_tsdb_compactions_total counter\n",
	    "# TYPE profd_tsdb_wal_commits_total counter\n",
	    "# TYPE profd_tsdb_wal_fsyncs_total counter\n",
	    "# TYPE profd_http_requests_total counter\n",
	    "profd_http_requests_total{code=\"200\",handler=\"/api/v1/labels\"} ",
	    "# TYPE profd_http_request_duration_seconds histogram\n",
	    "profd_http_request_duration_seconds_bucket{handler=\"/api/v1/labels\",le=\"+Inf\"} ",
	    "profd_http_request_duration_seconds_count{handler=\"/api/v1/labels\"} ",
	    "profd_queries_total{mode=\"merge\"} ",
	    "# TYPE process_cpu_seconds_total counter\n",
	    "process_resident_memory_bytes ",
	    "profd_config_last_reload_successful 1\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(h.body, want[i]))
			fail_msg("/metrics lacks \"%s\"", want[i]);
	/* every sample line belongs to a family with HELP and TYPE */
	char *save, *line;
	char *copy = strdup(h.body);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		char name[128], base[128];
		size_t n = strcspn(line, "{ ");
		snprintf(name, sizeof(name), "%.*s", (int)n, line);
		if (has_family(h.body, name, NULL))
			continue;
		/* a histogram's series: name_bucket, name_sum, name_count */
		int ok = 0;
		static const char *const sufs[] = {"_bucket", "_sum", "_count"};
		for (int k = 0; k < 3 && !ok; k++) {
			size_t sl = strlen(sufs[k]);
			if (n > sl && strcmp(name + n - sl, sufs[k]) == 0) {
				snprintf(base, sizeof(base), "%.*s", (int)(n - sl), name);
				ok = has_family(h.body, base, "histogram");
			}
		}
		if (!ok)
			fail_msg("/metrics: %s has no HELP and TYPE", line);
	}
	free(copy);
	http_free(&h);
}

/* ---- call graphs from hostile profiles --------------------------------------- */

/* Appends under labels at t a profile of nf functions (names[i], or "f<i>" when
 * names is NULL) in a binary whose mapping's file is file; sample i's stack is
 * stacks[i * depth ...] (function numbers from 1, leaf first), each of value 1. */
static void append_graph(const char *const *labels, int64_t t, const char *file,
                         const char *const *names, size_t nf, const uint64_t *stacks, size_t depth,
                         size_t ns)
{
	size_t nstr = 4 + nf;
	const char **strings = calloc(nstr, sizeof(*strings));
	size_t *lens = calloc(nstr, sizeof(*lens));
	char(*gen)[24] = calloc(nf, sizeof(*gen));
	struct pd_pprof_pfunction *fn = calloc(nf, sizeof(*fn));
	struct pd_pprof_pline *ln = calloc(nf, sizeof(*ln));
	struct pd_pprof_plocation *loc = calloc(nf, sizeof(*loc));
	struct pd_pprof_psample *smp = calloc(ns, sizeof(*smp));
	int64_t *vals = calloc(ns, sizeof(*vals));
	strings[0] = "";
	strings[1] = "samples";
	strings[2] = "count";
	strings[3] = file;
	for (size_t i = 0; i < nf; i++) {
		if (!names)
			snprintf(gen[i], sizeof(gen[i]), "f%zu", i + 1);
		strings[4 + i] = names ? names[i] : gen[i];
		fn[i] = (struct pd_pprof_pfunction){.id = i + 1, .name = (int64_t)(4 + i)};
		ln[i] = (struct pd_pprof_pline){.function_id = i + 1};
		loc[i] = (struct pd_pprof_plocation){.id = i + 1,
		                                     .mapping_id = 1,
		                                     .address = 0x1000 + i,
		                                     .line = &ln[i],
		                                     .nline = 1};
	}
	for (size_t i = 0; i < nstr; i++)
		lens[i] = strlen(strings[i]);
	for (size_t i = 0; i < ns; i++) {
		vals[i] = 1;
		smp[i] = (struct pd_pprof_psample){.location_id = (uint64_t *)stacks + i * depth,
		                                   .nlocation = depth,
		                                   .value = &vals[i],
		                                   .nvalue = 1};
	}
	struct pd_pprof_pvt type = {1, 2};
	struct pd_pprof_pmapping map = {.id = 1,
	                                .memory_start = 0x1000,
	                                .memory_limit = 0x100000,
	                                .filename = 3,
	                                .has_functions = 1};
	struct pd_pprof_parts parts = {
	    .strings = strings,
	    .string_len = lens,
	    .nstrings = nstr,
	    .sample_type = &type,
	    .nsample_type = 1,
	    .sample = smp,
	    .nsample = ns,
	    .mapping = &map,
	    .nmapping = 1,
	    .location = loc,
	    .nlocation = nf,
	    .function = fn,
	    .nfunction = nf,
	};
	uint8_t *raw = NULL;
	size_t len = 0;
	struct pd_err err = {0};
	if (pd_pprof_parts_encode(&parts, &raw, &len, &err))
		fail_msg("encoding the profile: %s", err.msg);
	append(labels, 3, t, raw, len);
	free(raw);
	free(strings);
	free(lens);
	free(gen);
	free(fn);
	free(ln);
	free(loc);
	free(smp);
	free(vals);
}

static const char *const evil_labels[] = {"__name__", "evil", "instance", "a:1", "job", "evil"};
/* the main binary's file name: it ends the graph's name, sets the layout's search
 * limits and rank separations huge (a layout of minutes) and adds an HTML label */
static const char HOSTILE_FILE[] =
    "/usr/bin/x\" { graph [nslimit=1000000000 mclimit=1000000000 ranksep=1000000] "
    "N1 -> N2 [minlen=1000000] } digraph \"y\" URL=\"javascript:alert(1)\" ]; N1 "
    "[label=<<img src=x onerror=alert(1)>>] \\";
static const char *const HOSTILE_NAMES[] = {
    "main",
    "evil\" URL=\"javascript:alert(2)\" href=\"javascript:alert(2)",
    "back\\slash\\N\\G\\l\\",
    "nl\nts=2026-01-01T00:00:00Z level=error component=api msg=\"forged\"\n",
    "]; N1 -> N2 [URL=\"javascript:alert(3)\"]; x [label=<<b>x</b>>] //",
    "<script>alert(4)</script><a href=\"javascript:alert(5)\">",
};

static int in_list(const char *const *l, const char *s, size_t n)
{
	for (; *l; l++)
		if (strlen(*l) == n && strncmp(*l, s, n) == 0)
			return 1;
	return 0;
}

/* The SVG holds none of the attacker's markup: every element and attribute is one
 * Graphviz's SVG renderer writes for a call graph (no script, image or link, no
 * href, no event handler), and every attribute value is quoted plain text. */
static void assert_svg_inert(const char *svg)
{
	static const char *const tags[] = {"svg",  "g",       "title",    "polygon", "text",
	                                   "path", "ellipse", "polyline", "a",       NULL};
	static const char *const attrs[] = {"width",       "height",       "viewBox",
	                                    "xmlns",       "xmlns:xlink",  "id",
	                                    "class",       "transform",    "fill",
	                                    "stroke",      "points",       "x",
	                                    "y",           "text-anchor",  "font-family",
	                                    "font-size",   "font-weight",  "font-style",
	                                    "d",           "stroke-width", "stroke-dasharray",
	                                    "xlink:title", "cx",           "cy",
	                                    "rx",          "ry",           NULL};
	for (const char *c = strchr(svg, '<'); c; c = strchr(c + 1, '<')) {
		if (c[1] == '?' || c[1] == '!' || c[1] == '/') {
			c = strchr(c, '>');
			assert_non_null(c);
			continue;
		}
		size_t n = strcspn(c + 1, " />\n");
		if (!in_list(tags, c + 1, n))
			fail_msg("the SVG has an element %.*s", (int)n, c + 1);
		const char *a = c + 1 + n;
		for (;;) {
			a += strspn(a, " \n");
			if (*a == '>' || (a[0] == '/' && a[1] == '>'))
				break;
			size_t an = strcspn(a, "= >");
			if (!in_list(attrs, a, an) || a[an] != '=' || a[an + 1] != '"')
				fail_msg("the SVG has an attribute %.*s in <%.*s>", (int)an, a,
				         (int)n, c + 1);
			const char *q = strchr(a + an + 2, '"');
			assert_non_null(q);
			if (memchr(a + an + 2, '<', (size_t)(q - a - an - 2)))
				fail_msg("an attribute value holds '<': %.*s", (int)(q - a), a);
			a = q + 1;
		}
		c = a;
	}
}

/* A profile whose mapping file and function names hold quotes, backslashes,
 * newlines, brackets, URL attributes, HTML-like labels and a forged log line: its
 * DOT has exactly its nodes and edges and the writer's attributes, its SVG none
 * of that markup, both come with a Content-Security-Policy and nosniff, and the
 * next graph request shows its own graph. */
static void test_callgraph_hostile(void **state)
{
	(void)state;
	int64_t t = heap_t[2] + 1000;
	/* leaf first: main calls each of the others, and each calls the next */
	static const uint64_t stacks[] = {2, 1, 3, 1, 4, 1, 5, 1, 6, 1, 3, 2, 4, 3, 5, 4, 6, 5};
	append_graph(evil_labels, t, HOSTILE_FILE, HOSTILE_NAMES, 6, stacks, 2, 9);

	struct http d, v;
	get(build("/api/v1/query", "query", "evil", "time", ms(t), "report", "dot", NULL), &d);
	if (d.status != 200)
		fail_msg("report=dot: %ld %s", d.status, d.body);
	assert_string_equal(d.csp, "default-src 'none'; style-src 'unsafe-inline'; sandbox");
	assert_string_equal(d.nosniff, "nosniff");
	/* one line each: the header, the node defaults, the legend, 6 nodes, the end;
	 * and edges; no raw newline from a name, and nothing after a name's quote */
	assert_non_null(strstr(d.body, "digraph \"x\\\" { graph [nslimit=1000000000 mclimit=1000000000 "
	                               "ranksep=1000000] N1 -> N2 [minlen=1000000] } "
	                               "digraph \\\"y\\\" URL=\\\"javascript:alert(1)\\\" ]; N1 "
	                               "[label=<<img src=x onerror=alert(1)>>] \\\\\" {\n"));
	assert_null(strstr(d.body, "\nts="));
	size_t lines = 0, edges = 0;
	for (const char *c = d.body; *c; c++)
		lines += *c == '\n';
	for (const char *c = d.body; (c = strstr(c, "\nN")) != NULL; c++)
		edges += strncmp(c + 1 + strcspn(c + 1, " "), " -> ", 4) == 0;
	assert_int_equal(lines, 3 + 6 + edges + 1);
	assert_true(edges >= 5);
	/* every attribute is one the writer sets: after each closing quote of a
	 * value comes a space and a known name, or the end of the list */
	for (const char *c = strstr(d.body, "\nN"); c && *c; c++) {
		if (*c != '"' || c[-1] == '\\' || c[-1] == '=')
			continue;
		if (c[1] == ']' || c[1] == '\n' || c[1] == ' ')
			continue;
		fail_msg("a quote ends a string inside a value: %.40s", c - 20);
	}
	http_free(&d);

	get(build("/api/v1/query", "query", "evil", "time", ms(t), "report", "svg", NULL), &v);
	if (v.status != 200)
		fail_msg("report=svg: %ld %s", v.status, v.body);
	assert_string_equal(v.ctype, "image/svg+xml");
	assert_string_equal(v.csp, "default-src 'none'; style-src 'unsafe-inline'; sandbox");
	assert_string_equal(v.nosniff, "nosniff");
	assert_svg_inert(v.body);
	/* the names are there, as text */
	assert_non_null(strstr(v.body, "URL=&quot;javascript:alert(2)&quot;"));
	assert_non_null(strstr(v.body, "&lt;script&gt;alert(4)&lt;/script&gt;"));
	http_free(&v);

	/* the next request draws its own graph */
	get(build("/api/v1/query", "query", "heap", "time", ms(heap_t[2]), "report", "svg", NULL),
	    &v);
	assert_int_equal(v.status, 200);
	assert_non_null(strstr(v.body, "<title>heap</title>") ? v.body : strstr(v.body, "<svg"));
	assert_null(strstr(v.body, "alert("));
	assert_null(strstr(v.body, "evil"));
	assert_non_null(strstr(v.body, ">main</text>"));
	http_free(&v);
}

struct svg_req {
	char path[512];
	unsigned port;
	long status;
	char body[1024];
};

static size_t svg_body(char *p, size_t sz, size_t n, void *ud)
{
	struct svg_req *q = ud;
	size_t have = strlen(q->body), k = sz * n;
	if (have + k >= sizeof(q->body))
		k = sizeof(q->body) - 1 - have;
	memcpy(q->body + have, p, k);
	q->body[have + k] = '\0';
	return sz * n;
}

static void *svg_thread(void *arg)
{
	struct svg_req *q = arg;
	char url[1024];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", q->port, q->path);
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, svg_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &q->status);
	curl_easy_cleanup(c);
	return NULL;
}

/* The value of one sample line of /metrics ("name{labels}"), -1 if absent. */
static double metric(const char *line)
{
	struct http h;
	get("/metrics", &h);
	char want[256];
	snprintf(want, sizeof(want), "\n%s ", line);
	const char *at = strstr(h.body, want);
	double v = at ? strtod(at + strlen(want), NULL) : -1;
	http_free(&h);
	return v;
}

/* A graph whose layout takes minutes (1000 functions, ~5000 calls) is cut off at
 * --callgraph.timeout with a 503 naming it; layouts beyond
 * --callgraph.max-concurrency are refused at once rather than queued, so they
 * never hold every query slot, and query_range and /prometheus keep answering
 * while the layout runs. */
static void test_callgraph_timeout(void **state)
{
	(void)state;
	enum { NF = 1000, DEPTH = 9, NS = 625 };
	static uint64_t stacks[NS * DEPTH];
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < NS * DEPTH; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		stacks[i] = 1 + x % NF;
	}
	static const char *const dense_labels[] = {"__name__", "dense", "instance",
	                                           "a:1",      "job",   "dense"};
	int64_t t = heap_t[2] + 2000;
	append_graph(dense_labels, t, "/bin/dense", NULL, NF, stacks, DEPTH, NS);

	struct pd_api_opts ao;
	unsigned saved;
	pd_api_opts_init(&ao);
	ao.callgraph_layout_exe = PD_PROFD_EXE;
	ao.max_concurrent_queries = 2;
	ao.callgraph_timeout_ms = 3000;
	ao.callgraph_max_concurrency = 1;
	struct pd_api_server *s2 = start_other(&ao, &saved);
	enum { NREQ = 3 };
	struct svg_req q[NREQ];
	pthread_t th[NREQ];
	for (int i = 0; i < NREQ; i++) {
		memset(&q[i], 0, sizeof(q[i]));
		snprintf(q[i].path, sizeof(q[i].path), "%s",
		         build("/api/v1/query", "query", "dense", "time", ms(t), "report", "svg",
		               "nodecount", "1000", "nodefraction", "0", "edgefraction", "0",
		               NULL));
		q[i].port = port;
		assert_int_equal(pthread_create(&th[i], NULL, svg_thread, &q[i]), 0);
	}
	/* a layout is running (or all three have already been answered) */
	int64_t deadline = (int64_t)time(NULL) + 60;
	while (metric("profd_callgraph_layouts_running") < 1 &&
	       metric("profd_callgraph_layouts_total{result=\"timeout\"}") < 1) {
		if ((int64_t)time(NULL) > deadline)
			fail_msg("no layout started");
		usleep(10000);
	}
	struct jv *v = get_json(build("/api/v1/query_range", "query", "heap", "start",
	                              ms(heap_t[0] - 1000), "end", ms(heap_t[2] + 1000), NULL),
	                        200);
	jv_free(v);
	struct http h;
	get(build("/prometheus/api/v1/query", "query", "count(heap_inuse_space_bytes)", "time",
	          ms(heap_t[2]), NULL),
	    &h);
	if (h.status != 200)
		fail_msg("/prometheus: %ld %s", h.status, h.body);
	http_free(&h);
	int timeouts = 0;
	for (int i = 0; i < NREQ; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(q[i].status, 503);
		if (strstr(q[i].body, "\"errorType\":\"timeout\"")) {
			assert_non_null(strstr(q[i].body,
			                       "laying out the call graph took longer than "
			                       "3000 ms (--callgraph.timeout)"));
			timeouts++;
		} else {
			assert_non_null(strstr(q[i].body,
			                       "1 call graph layouts are running already "
			                       "(--callgraph.max-concurrency)"));
		}
	}
	assert_true(timeouts >= 1);
	assert_true(metric("profd_callgraph_layouts_total{result=\"timeout\"}") == timeouts);
	assert_true(metric("profd_callgraph_layouts_total{result=\"busy\"}") == NREQ - timeouts);
	assert_true(metric("profd_callgraph_layouts_running") == 0);
	pd_api_stop(s2);
	port = saved;
}

/* Where the len bytes s occur in the n bytes at h, NULL when they do not. */
static const char *find_in(const char *h, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; len <= n && i <= n - len; i++)
		if (memcmp(h + i, s, len) == 0)
			return h + i;
	return NULL;
}

/* edge/nul-bytes.pb's strings hold NUL bytes: report=proto gives them back
 * whole, and the JSON reports write each NUL as \u0000. */
static void test_nul_strings(void **state)
{
	(void)state;
	char path[512];
	uint8_t *raw;
	size_t len;
	struct pd_err err = {0};
	snprintf(path, sizeof(path), "%s/profiles/edge/nul-bytes.pb", PD_TESTDATA);
	assert_int_equal(pd_file_read(path, 1u << 20, &raw, &len, &err), 0);
	struct pd_pprof_profile *want, *got;
	assert_int_equal(pd_pprof_decode(&want, raw, len, NULL, &err), 0);
	static const char *const kv[] = {"__name__", "nulcpu", "instance", "a:1", "job", "nul"};
	int64_t t = pd_pprof_time_nanos(want) / 1000000;
	append(kv, 3, t, raw, len);

	struct http h;
	get(build("/api/v1/query", "query", "nulcpu", "time", ms(t), "report", "proto", NULL), &h);
	assert_int_equal(h.status, 200);
	char why[256];
	assert_int_equal(pd_pprof_decode(&got, (uint8_t *)h.body, h.len, NULL, &err), 0);
	if (pd_pprof_compare(want, got, why, sizeof(why)))
		fail_msg("report=proto differs from the stored profile: %s", why);
	pd_pprof_destroy(got);
	http_free(&h);

	static const char *const reports[] = {"top", "flamegraph", "tags"};
	for (size_t i = 0; i < 3; i++) {
		get(build("/api/v1/query", "query", "nulcpu", "time", ms(t), "report", reports[i],
		          NULL),
		    &h);
		assert_int_equal(h.status, 200);
		assert_null(memchr(h.body, 0, h.len));
		if (i < 2) {
			assert_non_null(find_in(h.body, h.len, "\"dup\\u0000a\"", 12));
			assert_non_null(find_in(h.body, h.len, "\"dup\\u0000b\"", 12));
			assert_non_null(find_in(h.body, h.len, "\"\\u0000\\u0001\\u0002", 19));
		} else {
			assert_non_null(find_in(h.body, h.len, "\"k\\u0000ey\"", 11));
			assert_non_null(find_in(h.body, h.len, "\"v\\u0000al\"", 11));
		}
		http_free(&h);
	}
	pd_pprof_destroy(want);
	free(raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_query_range),
	    cmocka_unit_test(test_query_single),
	    cmocka_unit_test(test_meta_and_flamegraph),
	    cmocka_unit_test(test_proto),
	    cmocka_unit_test(test_exports),
	    cmocka_unit_test(test_callgraph_reports),
	    cmocka_unit_test(test_merge),
	    cmocka_unit_test(test_group_by),
	    cmocka_unit_test(test_diff),
	    cmocka_unit_test(test_series_and_labels),
	    cmocka_unit_test(test_bad_parameters),
	    cmocka_unit_test(test_push),
	    cmocka_unit_test(test_push_series_limit),
	    cmocka_unit_test(test_gzip),
	    cmocka_unit_test(test_targets),
	    cmocka_unit_test(test_status),
	    cmocka_unit_test(test_lifecycle_and_misc),
	    cmocka_unit_test(test_lifecycle_gates),
	    cmocka_unit_test(test_ui_hook),
	    cmocka_unit_test(test_prefix_flags),
	    cmocka_unit_test(test_route_prefix),
	    cmocka_unit_test(test_metrics),
	    cmocka_unit_test(test_admin),
	    cmocka_unit_test(test_callgraph_hostile),
	    cmocka_unit_test(test_callgraph_timeout),
	    cmocka_unit_test(test_nul_strings),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
