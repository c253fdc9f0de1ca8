/* soak_clients.c: the query load of bench/soak.sh: C concurrent API clients in one
 * process, one libcurl easy handle (and so one kept-alive connection) each, all
 * driven by one multi handle, so that 50 clients do not cost 50 curl processes.
 *
 * Each client loops over a mix of what a user of the API asks, one request at a
 * time, waiting a random 0 to 2x --think-ms between requests:
 *
 *   range_series  query_range of one random series (type and target), last 5 minutes
 *   proto         query, report=proto, of that series at one of its stored timestamps
 *   top           query, report=top, the same profile
 *   merge         query, mode=merge, report=meta, that series over the minute up to it
 *   series        /api/v1/series of the random type in the job
 *   labels        /api/v1/labels
 *   range_job     query_range of the random type over the whole job since --since
 *
 * and checks every answer: HTTP 200, and the JSON well-formed (a full syntax check)
 * with status "success" and the data the request implies (one series with
 * timestamps; every target's series; profileCount >= 1; top rows; the label names),
 * or the proto a gzip stream that inflates to a well-formed protobuf with sample
 * types and samples. Anything else is an error, counted by query kind and reason
 * (http_NNN, transport, timeout, bad_json, not_success, empty, wrong_count,
 * bad_proto), the first message of each kept.
 *
 *   soak_clients --api URL --addr-file FILE --job JOB --types heap,goroutine
 *                --clients C --seconds S --since UNIX_SECONDS
 *                [--think-ms MS] [--timeout S] [--seed N] [--progress FILE]
 *
 * FILE lists the targets' host:port, one a line (the `instance` labels). After S
 * seconds no request starts; those under way finish (or time out, default 60 s).
 * --progress FILE is rewritten every second: "elapsed_s requests errors".
 * Prints a table per kind (count, errors, latency percentiles in ms, mean KB) and
 * the error reasons; exits 0 when the run completed, whatever the errors. */
#define _GNU_SOURCE /* memmem */
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define MAX_BODY (256u << 20) /* a response above this is an error */
#define MAX_TS 4096           /* timestamps kept from a range_series answer */
#define MAX_TYPES 8

enum kind { K_RANGE_SERIES, K_PROTO, K_TOP, K_MERGE, K_SERIES, K_LABELS, K_RANGE_JOB, NKINDS };
static const char *kind_names[NKINDS] = {"range_series", "proto",  "top",      "merge",
                                         "series",       "labels", "range_job"};

enum reason {
	R_HTTP,
	R_TRANSPORT,
	R_TIMEOUT,
	R_BAD_JSON,
	R_NOT_SUCCESS,
	R_EMPTY,
	R_WRONG_COUNT,
	R_BAD_PROTO,
	NREASONS
};
static const char *reason_names[NREASONS] = {"http_status", "transport",   "timeout",
                                             "bad_json",    "not_success", "empty",
                                             "wrong_count", "bad_proto"};

struct stats {
	double *lat; /* ms, every request (ok or not) */
	size_t n, cap;
	uint64_t errors, bytes;
	uint64_t by_reason[NREASONS];
	char first[NREASONS][512];
};

struct buf {
	char *p;
	size_t len, cap;
	int too_big;
};

struct client {
	CURL *h;
	int step; /* the kind to ask next */
	size_t target;
	int type;
	long long ts_ms; /* the stored timestamp chosen by range_series, or -1 */
	double next_at;  /* monotonic s: when the next request may start */
	double started;
	int busy;
	struct buf body;
	char url[4096];
	char errbuf[CURL_ERROR_SIZE];
};

static struct stats stats[NKINDS];
static char **instances;
static size_t ninstances;
static const char *types[MAX_TYPES];
static int ntypes;
static const char *api, *job;
static double since;
static uint64_t rng;

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fail(const char *what)
{
	fprintf(stderr, "soak_clients: %s\n", what);
	exit(1);
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;
	size_t len = size * n;
	if (b->len + len > MAX_BODY) {
		b->too_big = 1;
		return 0;
	}
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->len + len + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->too_big = 1;
			return 0;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = 0;
	return len;
}

/* ---- JSON syntax check ----------------------------------------------------------- */

struct js {
	const char *p, *end;
	int depth;
};

static void js_ws(struct js *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static int js_value(struct js *j);

static int js_string(struct js *j)
{
	if (j->p >= j->end || *j->p != '"')
		return -1;
	for (j->p++; j->p < j->end; j->p++) {
		unsigned char c = (unsigned char)*j->p;
		if (c == '"') {
			j->p++;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c == '\\') {
			if (++j->p >= j->end)
				return -1;
			if (*j->p == 'u') {
				for (int k = 0; k < 4; k++)
					if (++j->p >= j->end ||
					    !strchr("0123456789abcdefABCDEF", *j->p))
						return -1;
			} else if (!strchr("\"\\/bfnrt", *j->p)) {
				return -1;
			}
		}
	}
	return -1;
}

static int js_number(struct js *j)
{
	const char *s = j->p;
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return -1;
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	return j->p > s ? 0 : -1;
}

static int js_lit(struct js *j, const char *lit)
{
	size_t l = strlen(lit);
	if ((size_t)(j->end - j->p) < l || memcmp(j->p, lit, l))
		return -1;
	j->p += l;
	return 0;
}

static int js_value(struct js *j)
{
	js_ws(j);
	if (j->p >= j->end)
		return -1;
	char c = *j->p;
	if (c == '{' || c == '[') {
		if (++j->depth > 200)
			return -1;
		char close = c == '{' ? '}' : ']';
		j->p++;
		js_ws(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
			j->depth--;
			return 0;
		}
		for (;;) {
			if (c == '{') {
				js_ws(j);
				if (js_string(j))
					return -1;
				js_ws(j);
				if (j->p >= j->end || *j->p++ != ':')
					return -1;
			}
			if (js_value(j))
				return -1;
			js_ws(j);
			if (j->p >= j->end)
				return -1;
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p++ != close)
				return -1;
			j->depth--;
			return 0;
		}
	}
	if (c == '"')
		return js_string(j);
	if (c == 't')
		return js_lit(j, "true");
	if (c == 'f')
		return js_lit(j, "false");
	if (c == 'n')
		return js_lit(j, "null");
	return js_number(j);
}

static int json_ok(const char *p, size_t len)
{
	struct js j = {p, p + len, 0};
	if (js_value(&j))
		return 0;
	js_ws(&j);
	return j.p == j.end;
}

/* occurrences of needle in the body */
static size_t count(const struct buf *b, const char *needle)
{
	size_t n = 0, l = strlen(needle);
	const char *p = b->p, *end = b->p + b->len;
	while ((p = memmem(p, (size_t)(end - p), needle, l))) {
		n++;
		p += l;
	}
	return n;
}

/* ---- protobuf well-formedness ------------------------------------------------------ */

static int varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -1;
		unsigned char c = *(*p)++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/* Every top-level field parses (wire types 0, 1, 2, 5) and fields 1 (sample_type)
 * and 2 (sample) are present. */
static int proto_ok(const unsigned char *p, size_t len)
{
	const unsigned char *end = p + len;
	int seen1 = 0, seen2 = 0;
	while (p < end) {
		uint64_t key, v;
		if (varint(&p, end, &key))
			return 0;
		switch (key & 7) {
		case 0:
			if (varint(&p, end, &v))
				return 0;
			break;
		case 1:
			if (end - p < 8)
				return 0;
			p += 8;
			break;
		case 2:
			if (varint(&p, end, &v) || v > (uint64_t)(end - p))
				return 0;
			p += v;
			break;
		case 5:
			if (end - p < 4)
				return 0;
			p += 4;
			break;
		default:
			return 0;
		}
		seen1 |= key >> 3 == 1;
		seen2 |= key >> 3 == 2;
	}
	return seen1 && seen2;
}

static int gunzip_proto_ok(const struct buf *b)
{
	if (b->len < 18 || (unsigned char)b->p[0] != 0x1f || (unsigned char)b->p[1] != 0x8b)
		return 0;
	z_stream z = {0};
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return 0;
	size_t cap = b->len * 8 + 4096, len = 0;
	unsigned char *out = malloc(cap);
	int ok = 0, r = Z_OK;
	z.next_in = (unsigned char *)b->p;
	z.avail_in = (uInt)b->len;
	while (out && r == Z_OK) {
		if (len == cap) {
			if (cap >= MAX_BODY * 4u)
				break;
			unsigned char *o = realloc(out, cap * 2);
			if (!o)
				break;
			out = o;
			cap *= 2;
		}
		z.next_out = out + len;
		z.avail_out = (uInt)(cap - len);
		r = inflate(&z, Z_NO_FLUSH);
		len = cap - z.avail_out;
	}
	if (r == Z_STREAM_END && z.avail_in == 0)
		ok = proto_ok(out, len);
	inflateEnd(&z);
	free(out);
	return ok;
}

/* ---- requests ------------------------------------------------------------------------ */

static void fmt_ms(char *out, size_t n, long long ms)
{
	snprintf(out, n, "%lld.%03lld", ms / 1000, ms % 1000);
}

static void fmt_s(char *out, size_t n, double s)
{
	snprintf(out, n, "%.3f", s);
}

/* url-escaped selector of the client's series, or of its type in the job */
static char *selector(CURL *h, const struct client *c, int whole_job)
{
	char sel[512];
	if (whole_job)
		snprintf(sel, sizeof(sel), "%s{job=\"%s\"}", types[c->type], job);
	else
		snprintf(sel, sizeof(sel), "%s{job=\"%s\",instance=\"%s\"}", types[c->type], job,
		         instances[c->target]);
	return curl_easy_escape(h, sel, 0);
}

static void start_request(CURLM *m, struct client *c)
{
	char a[64], b[64];
	char *sel;
	double now = wall();
	if (c->step == K_RANGE_SERIES) {
		c->target = (size_t)(next_rand() % ninstances);
		c->type = (int)(next_rand() % (uint64_t)ntypes);
		c->ts_ms = -1;
	}
	switch (c->step) {
	case K_RANGE_SERIES:
		sel = selector(c->h, c, 0);
		fmt_s(a, sizeof(a), now - 300);
		fmt_s(b, sizeof(b), now);
		snprintf(c->url, sizeof(c->url), "%s/api/v1/query_range?query=%s&start=%s&end=%s",
		         api, sel, a, b);
		break;
	case K_PROTO:
	case K_TOP:
		sel = selector(c->h, c, 0);
		fmt_ms(a, sizeof(a), c->ts_ms);
		snprintf(c->url, sizeof(c->url), "%s/api/v1/query?query=%s&time=%s&report=%s", api,
		         sel, a, c->step == K_PROTO ? "proto" : "top");
		break;
	case K_MERGE:
		sel = selector(c->h, c, 0);
		fmt_ms(a, sizeof(a), c->ts_ms - 60000);
		fmt_ms(b, sizeof(b), c->ts_ms);
		snprintf(c->url, sizeof(c->url),
		         "%s/api/v1/query?query=%s&mode=merge&report=meta&start=%s&end=%s", api,
		         sel, a, b);
		break;
	case K_SERIES:
		sel = selector(c->h, c, 1);
		snprintf(c->url, sizeof(c->url), "%s/api/v1/series?match[]=%s", api, sel);
		break;
	case K_LABELS:
		sel = NULL;
		snprintf(c->url, sizeof(c->url), "%s/api/v1/labels", api);
		break;
	default:
		sel = selector(c->h, c, 1);
		fmt_s(a, sizeof(a), since);
		fmt_s(b, sizeof(b), now);
		snprintf(c->url, sizeof(c->url), "%s/api/v1/query_range?query=%s&start=%s&end=%s",
		         api, sel, a, b);
		break;
	}
	curl_free(sel);
	c->body.len = 0;
	c->body.too_big = 0;
	c->errbuf[0] = 0;
	curl_easy_setopt(c->h, CURLOPT_URL, c->url);
	/* JSON as a browser asks for it (gzip); a proto is gzip bytes, not an encoding */
	curl_easy_setopt(c->h, CURLOPT_ACCEPT_ENCODING, c->step == K_PROTO ? NULL : "");
	c->started = mono();
	c->busy = 1;
	if (curl_multi_add_handle(m, c->h) != CURLM_OK)
		fail("curl_multi_add_handle failed");
}

static void error(enum kind k, enum reason r, const struct client *c, const char *detail)
{
	struct stats *s = &stats[k];
	s->errors++;
	if (!s->by_reason[r]++)
		snprintf(s->first[r], sizeof(s->first[r]), "%.200s (%.300s)", detail, c->url);
}

/* the timestamps of a range_series answer: picks one at random into c->ts_ms */
static int pick_timestamp(struct client *c)
{
	const char *p = memmem(c->body.p, c->body.len, "\"timestamps\":[", 14);
	if (!p)
		return -1;
	p += 14;
	long long ts[MAX_TS];
	size_t n = 0;
	while (*p >= '0' && *p <= '9') {
		long long v = strtoll(p, (char **)&p, 10);
		if (n < MAX_TS)
			ts[n++] = v;
		if (*p == ',')
			p++;
	}
	if (!n)
		return -1;
	c->ts_ms = ts[next_rand() % n];
	return 0;
}

/* Checks a finished request; records it; moves the client on. */
static void finish(struct client *c, CURLcode res, double think_s)
{
	enum kind k = (enum kind)c->step;
	struct stats *s = &stats[k];
	double ms = (mono() - c->started) * 1000;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		s->lat = realloc(s->lat, s->cap * sizeof(*s->lat));
		if (!s->lat)
			fail("out of memory");
	}
	s->lat[s->n++] = ms;
	s->bytes += c->body.len;
	long status = 0;
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
	int ok = 0;
	char detail[160];
	if (res == CURLE_OPERATION_TIMEDOUT) {
		error(k, R_TIMEOUT, c, c->errbuf[0] ? c->errbuf : curl_easy_strerror(res));
	} else if (res != CURLE_OK) {
		snprintf(detail, sizeof(detail), "%.150s",
		         c->body.too_big ? "response too big"
		         : c->errbuf[0]  ? c->errbuf
		                         : curl_easy_strerror(res));
		error(k, R_TRANSPORT, c, detail);
	} else if (status != 200) {
		snprintf(detail, sizeof(detail), "HTTP %ld: %.120s", status,
		         c->body.len ? c->body.p : "");
		error(k, R_HTTP, c, detail);
	} else if (k == K_PROTO) {
		if (!gunzip_proto_ok(&c->body))
			error(k, R_BAD_PROTO, c,
			      "not a gzip stream of a well-formed profile.proto");
		else
			ok = 1;
	} else if (!json_ok(c->body.p, c->body.len)) {
		error(k, R_BAD_JSON, c, "the body is not well-formed JSON");
	} else if (strncmp(c->body.p, "{\"status\":\"success\",", 20) != 0) {
		snprintf(detail, sizeof(detail), "%.150s", c->body.p);
		error(k, R_NOT_SUCCESS, c, detail);
	} else {
		size_t nl;
		switch (k) {
		case K_RANGE_SERIES:
			nl = count(&c->body, "\"labels\":");
			if (nl != 1) {
				snprintf(detail, sizeof(detail), "%zu series, not 1", nl);
				error(k, nl ? R_WRONG_COUNT : R_EMPTY, c, detail);
			} else if (pick_timestamp(c)) {
				error(k, R_EMPTY, c, "no timestamps in the last 5 minutes");
			} else {
				ok = 1;
			}
			break;
		case K_TOP:
			ok = memmem(c->body.p, c->body.len, "\"rows\":[{", 9) != NULL;
			if (!ok)
				error(k, R_EMPTY, c, "no rows");
			break;
		case K_MERGE: {
			const char *p = memmem(c->body.p, c->body.len, "\"profileCount\":", 15);
			ok = p && strtol(p + 15, NULL, 10) >= 1;
			if (!ok)
				error(k, R_EMPTY, c, "no profileCount >= 1");
			break;
		}
		case K_SERIES:
		case K_RANGE_JOB:
			nl = count(&c->body, k == K_SERIES ? "\"__name__\":" : "\"labels\":");
			ok = nl == ninstances;
			if (!ok) {
				snprintf(detail, sizeof(detail), "%zu series, not %zu", nl,
				         ninstances);
				error(k, R_WRONG_COUNT, c, detail);
			}
			break;
		case K_LABELS:
			ok = strstr(c->body.p, "\"instance\"") && strstr(c->body.p, "\"job\"") &&
			     strstr(c->body.p, "\"__name__\"");
			if (!ok)
				error(k, R_WRONG_COUNT, c, "instance, job or __name__ missing");
			break;
		default:
			break;
		}
	}
	/* after range_series, the profile steps need its timestamp */
	if (k == K_RANGE_SERIES && !ok)
		c->step = K_SERIES;
	else
		c->step = (c->step + 1) % NKINDS;
	c->busy = 0;
	c->next_at = mono() + think_s * 2 * (double)(next_rand() % 1000001) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const struct stats *s, double q)
{
	if (!s->n)
		return 0;
	size_t i = (size_t)(q * (double)(s->n - 1) + 0.5);
	return s->lat[i];
}

static void write_progress(const char *path, double elapsed)
{
	uint64_t req = 0, err = 0;
	for (int k = 0; k < NKINDS; k++) {
		req += stats[k].n;
		err += stats[k].errors;
	}
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%.1f %llu %llu\n", elapsed, (unsigned long long)req, (unsigned long long)err);
	if (fclose(f) == 0)
		rename(tmp, path);
}

static void load_instances(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		fail("cannot open the --addr-file");
	char line[256];
	size_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0])
			continue;
		if (ninstances == cap) {
			cap = cap ? cap * 2 : 1024;
			instances = realloc(instances, cap * sizeof(*instances));
			if (!instances)
				fail("out of memory");
		}
		instances[ninstances++] = strdup(line);
	}
	fclose(f);
	if (!ninstances)
		fail("the --addr-file lists no targets");
}

int main(int argc, char **argv)
{
	const char *addr_file = NULL, *progress = NULL;
	char *types_arg = NULL;
	int nclients = 0;
	double seconds = 0, think_ms = 1000, timeout = 60;
	rng = 0x9e3779b97f4a7c15ull;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		if (!strcmp(a, "--api"))
			api = v;
		else if (!strcmp(a, "--addr-file"))
			addr_file = v;
		else if (!strcmp(a, "--job"))
			job = v;
		else if (!strcmp(a, "--types"))
			types_arg = strdup(v);
		else if (!strcmp(a, "--clients"))
			nclients = atoi(v);
		else if (!strcmp(a, "--seconds"))
			seconds = strtod(v, NULL);
		else if (!strcmp(a, "--since"))
			since = strtod(v, NULL);
		else if (!strcmp(a, "--think-ms"))
			think_ms = strtod(v, NULL);
		else if (!strcmp(a, "--timeout"))
			timeout = strtod(v, NULL);
		else if (!strcmp(a, "--seed"))
			rng = strtoull(v, NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
		else if (!strcmp(a, "--progress"))
			progress = v;
		else
			goto usage;
	}
	if (argc % 2 == 0 || !api || !addr_file || !job || !types_arg || nclients < 1 ||
	    seconds <= 0 || since <= 0 || think_ms < 0 || timeout <= 0)
		goto usage;
	for (char *t = strtok(types_arg, ","); t && ntypes < MAX_TYPES; t = strtok(NULL, ","))
		types[ntypes++] = t;
	if (!ntypes)
		goto usage;
	load_instances(addr_file);

	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		fail("curl_global_init failed");
	CURLM *m = curl_multi_init();
	struct client *cl = calloc((size_t)nclients, sizeof(*cl));
	if (!m || !cl)
		fail("out of memory");
	double t0 = mono(), end = t0 + seconds, think_s = think_ms / 1000;
	for (int i = 0; i < nclients; i++) {
		struct client *c = &cl[i];
		c->h = curl_easy_init();
		if (!c->h)
			fail("curl_easy_init failed");
		c->step = K_RANGE_SERIES;
		/* spread the first requests over one think time */
		c->next_at = t0 + think_s * (double)i / nclients;
		curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->body);
		curl_easy_setopt(c->h, CURLOPT_PRIVATE, c);
		curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->errbuf);
		curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
		curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
		curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	}
	double last_progress = 0;
	for (;;) {
		double now = mono();
		int busy = 0;
		double wake = now + 0.1;
		for (int i = 0; i < nclients; i++) {
			struct client *c = &cl[i];
			if (!c->busy && now < end && c->next_at <= now)
				start_request(m, c);
			if (c->busy)
				busy++;
			else if (now < end && c->next_at < wake)
				wake = c->next_at;
		}
		if (!busy && now >= end)
			break;
		int running;
		curl_multi_perform(m, &running);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct client *c;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			CURLcode res = msg->data.result;
			curl_multi_remove_handle(m, msg->easy_handle);
			finish(c, res, think_s);
			if (mono() < end && c->next_at < wake)
				wake = c->next_at;
		}
		if (progress && now - last_progress >= 1) {
			write_progress(progress, now - t0);
			last_progress = now;
		}
		int ms = (int)((wake - mono()) * 1000);
		curl_multi_poll(m, NULL, 0, ms < 1 ? 1 : ms > 100 ? 100 : ms, NULL);
	}
	double elapsed = mono() - t0;
	if (progress)
		write_progress(progress, elapsed);

	uint64_t total = 0, errors = 0;
	printf("%-13s %8s %7s %8s %8s %8s %8s %9s %7s\n", "query", "count", "errors", "p50 ms",
	       "p90 ms", "p99 ms", "max ms", "mean KB", "per s");
	for (int k = 0; k < NKINDS; k++) {
		struct stats *s = &stats[k];
		qsort(s->lat, s->n, sizeof(*s->lat), cmp_double);
		printf("%-13s %8zu %7llu %8.1f %8.1f %8.1f %8.1f %9.1f %7.2f\n", kind_names[k],
		       s->n, (unsigned long long)s->errors, pct(s, 0.5), pct(s, 0.9), pct(s, 0.99),
		       s->n ? s->lat[s->n - 1] : 0,
		       s->n ? (double)s->bytes / (double)s->n / 1024 : 0, (double)s->n / elapsed);
		total += s->n;
		errors += s->errors;
	}
	printf("%-13s %8llu %7llu   (%d clients, %.0f s, %.1f requests/s)\n", "all",
	       (unsigned long long)total, (unsigned long long)errors, nclients, elapsed,
	       (double)total / elapsed);
	for (int k = 0; k < NKINDS; k++)
		for (int r = 0; r < NREASONS; r++)
			if (stats[k].by_reason[r])
				printf("error %s %s x%llu, first: %s\n", kind_names[k],
				       reason_names[r], (unsigned long long)stats[k].by_reason[r],
				       stats[k].first[r]);
	for (int i = 0; i < nclients; i++) {
		curl_easy_cleanup(cl[i].h);
		free(cl[i].body.p);
	}
	curl_multi_cleanup(m);
	curl_global_cleanup();
	return 0;
usage:
	fprintf(stderr,
	        "usage: soak_clients --api URL --addr-file FILE --job JOB --types heap,goroutine\n"
	        "                    --clients C --seconds S --since UNIX_SECONDS\n"
	        "                    [--think-ms MS] [--timeout S] [--seed N] [--progress FILE]\n");
	return 2;
}
