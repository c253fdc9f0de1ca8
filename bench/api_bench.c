/* api_bench.c: the figures the API issue asks for, measured through the real HTTP
 * server (pd_api_start on loopback) with libcurl as the client, over a store
 * filled with real profiles: query_range over every series and the whole range
 * (latency and bytes, plain and gzip), single-profile fetch latency p50/p99 from
 * the head and from blocks, and merges of 100 and 1,000 profiles of one series
 * against `go tool pprof -proto` on the same profiles as files, with a check that
 * both merges give the same top table. Every HTTP figure is printed beside what
 * the library calls underneath cost in this process, so that the HTTP, JSON and
 * gzip share shows. bench/api.sh runs it; bench/README.md reads the output.
 *
 * usage: api_bench --corpus DIR [--dir DIR] [--go CMD] [--series N] [--samples N]
 *                  [--fetches N] [--runs N] [--go-runs N] [--block-range-min M] */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp, posix_spawn */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profd/api.h"
#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "profd/util.h"

extern char **environ;

#define MAX_FILES 48
#define MAX_FILE_BYTES ((size_t)64 << 20)
#define T0_MS 1795370400000LL /* 2026-11-22T18:00:00Z, on a block boundary */
#define SCRAPE_MS 15000
#define BATCH 100 /* series per commit, as one scrape round commits */

/* Series i is heap when i % 100 == 0, allocs when i % 100 == 50 (1% each: the
 * 40 KB profiles that merges are about), else one of the small types in turn. */
static const char *const all_types[] = {"heap",  "allocs", "cpu",         "goroutine",
                                        "mutex", "block",  "threadcreate"};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))
static const char *const small_types[] = {"cpu", "goroutine", "mutex", "block", "threadcreate"};
#define NSMALL (sizeof(small_types) / sizeof(small_types[0]))

struct prof {
	uint8_t *raw; /* gunzipped: what the store keeps */
	size_t raw_len;
	int64_t t; /* time_nanos / 1e6, for the order only */
};

struct ptype {
	const char *name;
	struct prof p[MAX_FILES];
	size_t n;
};

static struct ptype types[NTYPES];

struct opts {
	const char *corpus, *dir, *go;
	size_t series, samples, fetches;
	int runs, go_runs;
	int64_t block_range_ms;
};

/* ---- small helpers ------------------------------------------------------------ */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n), nearest rank; sorts v. */
static double quantile(double *v, size_t n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), double_cmp);
	size_t r = (size_t)(q * (double)n + 0.999999);
	if (r < 1)
		r = 1;
	return v[(r > n ? n : r) - 1];
}

static double median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), double_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_rule(int width)
{
	for (int i = 0; i < width; i++)
		putchar('-');
	putchar('\n');
}

/* Unix seconds with milliseconds, as the API takes times. */
static void api_time(int64_t ms, char *out, size_t size)
{
	snprintf(out, size, "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
}

/* The first occurrence of needle in hay[0..n), or NULL (memmem is a GNU extension). */
static const char *find_bytes(const void *hay, size_t n, const char *needle)
{
	size_t m = strlen(needle);
	const char *h = hay;
	for (size_t i = 0; h && m <= n && i <= n - m; i++) {
		const char *p = memchr(h + i, needle[0], n - m - i + 1);
		if (!p)
			return NULL;
		i = (size_t)(p - h);
		if (memcmp(p, needle, m) == 0)
			return p;
	}
	return NULL;
}

static int match_eq(const void *ctx, const char *value)
{
	return strcmp(ctx, value) == 0;
}

/* ---- the corpus -------------------------------------------------------------- */

static int prof_cmp(const void *a, const void *b)
{
	const struct prof *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Loads <corpus>/<type>/1..48.pb.gz of every type, gunzipped (as profd stores
 * them) and in scrape order. */
static int load_corpus(const char *corpus)
{
	struct pd_err err = {0};
	for (size_t i = 0; i < NTYPES; i++) {
		struct ptype *ty = &types[i];
		ty->name = all_types[i];
		for (size_t k = 0; k < MAX_FILES; k++) {
			char path[PATH_MAX];
			struct prof *p = &ty->p[ty->n];
			struct pd_pprof_profile *pp = NULL;
			uint8_t *gz = NULL;
			size_t gz_len = 0;
			snprintf(path, sizeof(path), "%s/%s/%zu.pb.gz", corpus, ty->name, k + 1);
			if (access(path, R_OK) != 0)
				break;
			if (pd_file_read(path, MAX_FILE_BYTES, &gz, &gz_len, &err) ||
			    pd_pprof_decode(&pp, gz, gz_len, NULL, &err) ||
			    pd_gunzip(gz, gz_len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED, &p->raw,
			              &p->raw_len, &err)) {
				fprintf(stderr, "api_bench: %s: %s\n", path, err.msg);
				pd_pprof_destroy(pp);
				free(gz);
				return -1;
			}
			p->t = pd_pprof_time_nanos(pp) / 1000000;
			pd_pprof_destroy(pp);
			free(gz);
			ty->n++;
		}
		qsort(ty->p, ty->n, sizeof(ty->p[0]), prof_cmp);
		if (!ty->n) {
			fprintf(stderr, "api_bench: no %s profiles in %s/%s/N.pb.gz\n", ty->name,
			        corpus, ty->name);
			return -1;
		}
	}
	return 0;
}

static void free_corpus(void)
{
	for (size_t i = 0; i < NTYPES; i++)
		for (size_t k = 0; k < types[i].n; k++)
			free(types[i].p[k].raw);
}

static const struct ptype *find_type(const char *name)
{
	for (size_t i = 0; i < NTYPES; i++)
		if (strcmp(types[i].name, name) == 0)
			return &types[i];
	return NULL;
}

/* ---- the synthetic store -------------------------------------------------------- */

struct synth {
	size_t nseries, samples;
	const struct ptype **ty;
	char (*instance)[32];
};

static int synth_init(struct synth *s, size_t nseries, size_t samples)
{
	s->nseries = nseries;
	s->samples = samples;
	s->ty = calloc(nseries, sizeof(*s->ty));
	s->instance = calloc(nseries, sizeof(*s->instance));
	if (!s->ty || !s->instance)
		return -1;
	for (size_t i = 0; i < nseries; i++) {
		const char *name = i % 100 == 0    ? "heap"
		                   : i % 100 == 50 ? "allocs"
		                                   : small_types[i % NSMALL];
		s->ty[i] = find_type(name);
		snprintf(s->instance[i], sizeof(s->instance[i]), "host-%04zu:6060", i);
	}
	return 0;
}

static void synth_fini(struct synth *s)
{
	free(s->ty);
	free(s->instance);
}

/* Sample k of series i: 15 s apart, the series spread over the interval as
 * Prometheus spreads its targets, and 0-4 ms of jitter. */
static int64_t synth_time(const struct synth *s, size_t i, size_t k)
{
	uint64_t h = (uint64_t)(i * 2654435761u) ^ ((uint64_t)k * 40503u);
	h ^= h >> 15;
	h *= 0x2c1b3c6dU;
	h ^= h >> 12;
	int64_t phase = (int64_t)(i * (SCRAPE_MS - 10) / s->nseries);
	return T0_MS + phase + (int64_t)k * SCRAPE_MS + (int64_t)(h % 5);
}

static const struct prof *synth_prof(const struct synth *s, size_t i, size_t k)
{
	const struct ptype *ty = s->ty[i];
	return &ty->p[(i * 7 + k) % ty->n];
}

static size_t synth_labels(const struct synth *s, size_t i, struct pd_tsdb_label *l)
{
	/* sorted by name */
	l[0] = (struct pd_tsdb_label){"__name__", s->ty[i]->name};
	l[1] = (struct pd_tsdb_label){"instance", s->instance[i]};
	l[2] = (struct pd_tsdb_label){"job", "bench"};
	return 3;
}

/* The selector that names series i exactly. */
static void synth_selector(const struct synth *s, size_t i, char *out, size_t size)
{
	snprintf(out, size, "%s{instance=\"%s\",job=\"bench\"}", s->ty[i]->name, s->instance[i]);
}

/* Appends every sample, one commit per BATCH series of one scrape round. */
static int synth_fill(struct pd_tsdb *db, const struct synth *s, double *raw_bytes,
                      struct pd_err *err)
{
	struct pd_tsdb_label l[3];
	for (size_t k = 0; k < s->samples; k++)
		for (size_t b = 0; b < s->nseries; b += BATCH) {
			struct pd_tsdb_appender *a = pd_tsdb_appender(db);
			if (!a)
				return pd_err_set(err, PD_ENOMEM, "out of memory");
			for (size_t i = b; i < b + BATCH && i < s->nseries; i++) {
				const struct prof *p = synth_prof(s, i, k);
				size_t nl = synth_labels(s, i, l);
				if (pd_tsdb_append(a, l, nl, synth_time(s, i, k), p->raw,
				                   p->raw_len, err)) {
					pd_tsdb_rollback(a);
					return err->code ? err->code : PD_EINVAL;
				}
				*raw_bytes += (double)p->raw_len;
			}
			int rc = pd_tsdb_commit(a, err);
			if (rc)
				return rc;
		}
	return 0;
}

/* ---- the HTTP client -------------------------------------------------------------- */

struct client {
	CURL *h;
	char base[64]; /* http://127.0.0.1:PORT */
	struct pd_buf body;
	char errbuf[CURL_ERROR_SIZE];
};

/* What one request took. */
struct fetch {
	double secs; /* wall clock around curl_easy_perform */
	double ttfb; /* curl's time to the first response byte */
	double wire; /* body bytes received (before curl's content decoding) */
	long status;
};

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct client *c = ctx;
	return pd_buf_append(&c->body, p, size * n) ? 0 : size * n;
}

static int client_init(struct client *c, unsigned port)
{
	memset(c, 0, sizeof(*c));
	pd_buf_init(&c->body, 0);
	snprintf(c->base, sizeof(c->base), "http://127.0.0.1:%u", port);
	if (!(c->h = curl_easy_init()))
		return -1;
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->errbuf);
	return 0;
}

static void client_fini(struct client *c)
{
	if (c->h)
		curl_easy_cleanup(c->h);
	pd_buf_fini(&c->body);
}

/* GETs base + path_and_query on the one handle (the connection is kept alive
 * between calls); gzip: send Accept-Encoding: gzip and let curl decode. The body
 * is in c->body. Fails on a transport error or a status other than `want`. */
static int client_get(struct client *c, const char *pq, int gzip, long want, struct fetch *f)
{
	char url[8192];
	curl_off_t wire = 0;
	snprintf(url, sizeof(url), "%s%s", c->base, pq);
	c->body.len = 0;
	c->errbuf[0] = 0;
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	curl_easy_setopt(c->h, CURLOPT_ACCEPT_ENCODING, gzip ? "gzip" : NULL);
	double t0 = now();
	CURLcode rc = curl_easy_perform(c->h);
	f->secs = now() - t0;
	if (rc != CURLE_OK) {
		fprintf(stderr, "api_bench: GET %s: %s\n", url,
		        c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
		return -1;
	}
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &f->status);
	curl_easy_getinfo(c->h, CURLINFO_STARTTRANSFER_TIME, &f->ttfb);
	curl_easy_getinfo(c->h, CURLINFO_SIZE_DOWNLOAD_T, &wire);
	f->wire = (double)wire;
	if (f->status != want) {
		fprintf(stderr, "api_bench: GET %s: status %ld, want %ld: %.*s\n", url, f->status,
		        want, (int)(c->body.len < 400 ? c->body.len : 400),
		        c->body.data ? (const char *)c->body.data : "");
		return -1;
	}
	return 0;
}

/* Appends "&name=value" (or "?name=value" first) with value URL-encoded. */
static int add_param(struct client *c, struct pd_buf *q, const char *name, const char *value)
{
	char *e = curl_easy_escape(c->h, value, 0);
	if (!e)
		return -1;
	int rc = pd_buf_printf(q, "%s%s=%s", q->len && memchr(q->data, '?', q->len) ? "&" : "?",
	                       name, e);
	curl_free(e);
	return rc;
}

/* NUL-terminated path and query built from a NULL-terminated name, value list. */
static const char *build_query(struct client *c, struct pd_buf *q, const char *path, ...)
{
	va_list ap;
	q->len = 0;
	if (pd_buf_printf(q, "%s", path))
		return NULL;
	va_start(ap, path);
	const char *n;
	while ((n = va_arg(ap, const char *))) {
		const char *v = va_arg(ap, const char *);
		if (add_param(c, q, n, v)) {
			va_end(ap);
			return NULL;
		}
	}
	va_end(ap);
	if (pd_buf_append(q, "", 1))
		return NULL;
	return (const char *)q->data;
}

/* ---- the store section ------------------------------------------------------------- */

struct store_info {
	double fill_s, flush_s, raw_bytes;
	uint64_t head_samples, block_samples, block_bytes, wal_bytes;
	size_t nblocks;
	int64_t head_from; /* samples at or after this are in the head, before it in blocks */
};

static int store_fill(const struct opts *o, struct pd_tsdb *db, const struct synth *s,
                      struct store_info *si)
{
	struct pd_err err = {0};
	struct pd_tsdb_block_info *b = NULL;
	struct pd_tsdb_stats st;
	size_t nb = 0;
	memset(si, 0, sizeof(*si));
	double t0 = now();
	if (synth_fill(db, s, &si->raw_bytes, &err))
		goto fail;
	si->fill_s = now() - t0;
	t0 = now();
	if (pd_tsdb_flush(db, 0, &err))
		goto fail;
	si->flush_s = now() - t0;
	if (pd_tsdb_blocks(db, &b, &nb, &err))
		goto fail;
	pd_tsdb_stats(db, &st);
	si->nblocks = nb;
	si->head_samples = st.head_samples;
	si->wal_bytes = st.wal_bytes;
	si->head_from = INT64_MIN;
	for (size_t i = 0; i < nb; i++) {
		si->block_samples += b[i].samples;
		si->block_bytes += b[i].size;
		if (b[i].maxt > si->head_from)
			si->head_from = b[i].maxt;
	}
	free(b);
	b = NULL;
	/* check the split: every sample before head_from is in a block */
	uint64_t before = 0;
	for (size_t i = 0; i < s->nseries; i++)
		for (size_t k = 0; k < s->samples; k++)
			before += synth_time(s, i, k) < si->head_from;
	if (before != si->block_samples ||
	    si->block_samples + si->head_samples != (uint64_t)(s->nseries * s->samples)) {
		pd_err_set(&err, PD_EINVAL,
		           "blocks hold %llu samples and the head %llu; expected %llu and %llu",
		           (unsigned long long)si->block_samples,
		           (unsigned long long)si->head_samples, (unsigned long long)before,
		           (unsigned long long)(s->nseries * s->samples - before));
		goto fail;
	}
	printf("\n1. The store: %zu series x %zu samples, 15 s apart (%.1f h), real profiles\n"
	       "   from the corpus cycled, stored gunzipped as profd stores them: 1%% heap\n"
	       "   and 1%% allocs series (about 40 KB each), the rest cpu, goroutine, mutex,\n"
	       "   block, threadcreate (0.5-7 KB). Appended with the WAL on (wal_sync=1),\n"
	       "   one commit per %d series of a round, then pd_tsdb_flush(db, 0) with a\n"
	       "   block range of %lld min, which keeps the newest half range and more in the "
	       "head.\n\n",
	       s->nseries, s->samples, (double)s->samples * SCRAPE_MS / 3.6e6, BATCH,
	       (long long)(o->block_range_ms / 60000));
	printf("fill: %.1f s, %.0f profiles/s, %.0f MB raw; flush: %.1f s\n", si->fill_s,
	       (double)(s->nseries * s->samples) / si->fill_s, si->raw_bytes / 1e6, si->flush_s);
	printf("head: %llu samples (%.0f%%); blocks: %llu samples (%.0f%%) in %zu block(s), "
	       "%.0f MB on disk; WAL %.0f MB\n",
	       (unsigned long long)si->head_samples,
	       100.0 * (double)si->head_samples / (double)(s->nseries * s->samples),
	       (unsigned long long)si->block_samples,
	       100.0 * (double)si->block_samples / (double)(s->nseries * s->samples), si->nblocks,
	       (double)si->block_bytes / 1e6, (double)si->wal_bytes / 1e6);
	return 0;
fail:
	fprintf(stderr, "api_bench: filling the store: %s\n", err.msg);
	free(b);
	return -1;
}

/* ---- 2. query_range ---------------------------------------------------------------- */

/* Counts the series and timestamps of a query_range answer. */
static void count_range(const struct pd_buf *b, size_t *series, size_t *ts)
{
	static const char key[] = "\"timestamps\":[";
	const char *p = (const char *)b->data, *end = p + b->len;
	*series = *ts = 0;
	while (p && p < end) {
		const char *k = find_bytes(p, (size_t)(end - p), key);
		if (!k)
			break;
		(*series)++;
		p = k + sizeof(key) - 1;
		if (p < end && *p != ']')
			(*ts)++;
		while (p < end && *p != ']')
			*ts += *p++ == ',';
	}
}

static int section_range(const struct opts *o, struct client *c, struct pd_tsdb *db,
                         const struct synth *s)
{
	struct pd_err err = {0};
	struct pd_buf q;
	char t0[32], t1[32];
	int rc = -1;
	const int n = o->runs;
	double secs[2][64], ttfb[2][64], wire[2] = {0, 0}, body[2] = {0, 0}, sel[64];
	pd_buf_init(&q, 0);
	api_time(T0_MS, t0, sizeof(t0));
	api_time(synth_time(s, s->nseries - 1, s->samples - 1) + 1, t1, sizeof(t1));
	const char *pq = build_query(c, &q, "/api/v1/query_range", "query", "{job=\"bench\"}",
	                             "start", t0, "end", t1, NULL);
	if (!pq)
		goto out;
	for (int gz = 0; gz < 2; gz++) {
		struct fetch f;
		if (client_get(c, pq, gz, 200, &f)) /* warm-up */
			goto out;
		size_t ns, nts;
		count_range(&c->body, &ns, &nts);
		if (ns != s->nseries || nts != s->nseries * s->samples) {
			fprintf(stderr,
			        "api_bench: query_range answered %zu series, %zu timestamps; "
			        "expected %zu and %zu\n",
			        ns, nts, s->nseries, s->nseries * s->samples);
			goto out;
		}
		for (int r = 0; r < n; r++) {
			if (client_get(c, pq, gz, 200, &f))
				goto out;
			secs[gz][r] = f.secs;
			ttfb[gz][r] = f.ttfb;
			wire[gz] = f.wire;
			body[gz] = (double)c->body.len;
		}
	}
	/* the reference: the listing alone, in this process */
	struct pd_tsdb_matcher m = {"job", match_eq, "bench"};
	for (int r = 0; r < n; r++) {
		struct pd_tsdb_result *res = NULL;
		double a = now();
		if (pd_tsdb_select(db, &m, 1, T0_MS, INT64_MAX, 0, &res, &err)) {
			fprintf(stderr, "api_bench: select: %s\n", err.msg);
			goto out;
		}
		sel[r] = now() - a;
		pd_tsdb_result_destroy(res);
	}
	/* and gzip of the body at the server's level 6, and at level 1 for comparison */
	double gz_s[2] = {0, 0};
	size_t gz_len[2] = {0, 0};
	for (int lv = 0; lv < 2; lv++) {
		uint8_t *z = NULL;
		double a = now();
		if (pd_gzip(c->body.data, c->body.len, lv ? 1 : 6, &z, &gz_len[lv], &err)) {
			fprintf(stderr, "api_bench: gzip: %s\n", err.msg);
			goto out;
		}
		gz_s[lv] = now() - a;
		free(z);
	}
	double sel_ms = median(sel, (size_t)n) * 1e3;
	printf(
	    "\n2. query_range {job=\"bench\"} over the whole range: %zu series, %zu timestamps,\n"
	    "   one reused curl handle (keep-alive), median of %d after one warm-up.\n"
	    "   total = the request as the client sees it; TTFB = until the first byte\n"
	    "   (the server builds the whole answer first); wire = body bytes received;\n"
	    "   JSON = the answer's bytes after curl's decoding.\n\n",
	    s->nseries, s->nseries * s->samples, n);
	printf("%-22s %10s %10s %12s %12s %12s %10s\n", "Accept-Encoding", "total ms", "TTFB ms",
	       "wire B", "JSON B", "B/timestamp", "ts/s");
	print_rule(94);
	for (int gz = 0; gz < 2; gz++) {
		double tot = median(secs[gz], (size_t)n), tt = median(ttfb[gz], (size_t)n);
		printf("%-22s %10.1f %10.1f %12.0f %12.0f %12.2f %9.1fM\n", gz ? "gzip" : "(none)",
		       tot * 1e3, tt * 1e3, wire[gz], body[gz],
		       wire[gz] / (double)(s->nseries * s->samples),
		       (double)(s->nseries * s->samples) / tot / 1e6);
	}
	print_rule(94);
	printf("in this process: pd_tsdb_select of the same series %.1f ms (median of %d);\n"
	       "pd_gzip of the %.0f-byte answer: level 6 (the server's) %.1f ms, %zu B;\n"
	       "level 1 %.1f ms, %zu B\n",
	       sel_ms, n, (double)c->body.len, gz_s[0] * 1e3, gz_len[0], gz_s[1] * 1e3, gz_len[1]);
	rc = 0;
out:
	pd_buf_fini(&q);
	return rc;
}

/* ---- 3. single-profile fetch ------------------------------------------------------- */

struct fetch_stats {
	size_t n;
	double p50, p99, mean, max; /* seconds, through HTTP */
	double bytes;               /* mean stored bytes */
	double sel, read, gzip;     /* medians in this process, seconds */
};

/* Fetches profile k of series i with report=proto and checks that the body
 * gunzips to the stored bytes. */
static int fetch_one(struct client *c, const struct synth *s, size_t i, size_t k, struct pd_buf *q,
                     struct fetch *f)
{
	char sel[160], t[32];
	struct pd_err err = {0};
	uint8_t *raw = NULL;
	size_t len = 0;
	synth_selector(s, i, sel, sizeof(sel));
	api_time(synth_time(s, i, k), t, sizeof(t));
	const char *pq =
	    build_query(c, q, "/api/v1/query", "query", sel, "time", t, "report", "proto", NULL);
	if (!pq || client_get(c, pq, 0, 200, f))
		return -1;
	const struct prof *p = synth_prof(s, i, k);
	if (pd_gunzip(c->body.data, c->body.len, MAX_FILE_BYTES, &raw, &len, &err) ||
	    len != p->raw_len || memcmp(raw, p->raw, len) != 0) {
		fprintf(stderr, "api_bench: %s at %s: the answer is not the stored profile%s%s\n",
		        sel, t, err.msg[0] ? ": " : "", err.msg);
		free(raw);
		return -1;
	}
	free(raw);
	return 0;
}

/* Times the fetch of each (series, k) pair through the API, then in this process
 * what the server does for it: pd_tsdb_select of the exact selector over the
 * lookback window, pd_tsdb_read, and pd_gzip at level 6. */
static int fetch_pairs(struct client *c, struct pd_tsdb *db, const struct synth *s,
                       const size_t *is, const size_t *ks, size_t n, struct fetch_stats *st)
{
	struct pd_err err = {0};
	struct pd_buf q;
	double *v = malloc(n * sizeof(*v)), *ref[3], sum = 0, bytes = 0;
	int rc = -1;
	pd_buf_init(&q, 0);
	for (int r = 0; r < 3; r++)
		ref[r] = malloc(n * sizeof(double));
	if (!v || !ref[0] || !ref[1] || !ref[2])
		goto out;
	for (size_t j = 0; j < n; j++) {
		struct fetch f;
		if (fetch_one(c, s, is[j], ks[j], &q, &f))
			goto out;
		v[j] = f.secs;
		sum += f.secs;
		bytes += (double)synth_prof(s, is[j], ks[j])->raw_len;
	}
	for (size_t j = 0; j < n; j++) {
		struct pd_tsdb_label l[3];
		struct pd_tsdb_matcher m[3];
		struct pd_tsdb_result *res = NULL;
		uint8_t *raw = NULL, *z = NULL;
		size_t len = 0, zl = 0;
		size_t nl = synth_labels(s, is[j], l);
		int64_t t = synth_time(s, is[j], ks[j]);
		for (size_t i = 0; i < nl; i++)
			m[i] = (struct pd_tsdb_matcher){l[i].name, match_eq, l[i].value};
		double a = now();
		if (pd_tsdb_select(db, m, nl, t - PD_API_DEFAULT_LOOKBACK_MS, t, 0, &res, &err))
			goto fail;
		double b = now();
		pd_tsdb_result_destroy(res);
		if (pd_tsdb_read(db, l, nl, t, &raw, &len, &err))
			goto fail;
		double d = now();
		if (pd_gzip(raw, len, 6, &z, &zl, &err))
			goto fail;
		double e = now();
		ref[0][j] = b - a;
		ref[1][j] = d - b;
		ref[2][j] = e - d;
		free(raw);
		free(z);
		continue;
	fail:
		fprintf(stderr, "api_bench: in-process fetch: %s\n", err.msg);
		free(raw);
		goto out;
	}
	st->n = n;
	st->mean = sum / (double)n;
	st->bytes = bytes / (double)n;
	st->p50 = quantile(v, n, 0.50);
	st->p99 = quantile(v, n, 0.99);
	st->max = v[n - 1];
	st->sel = median(ref[0], n);
	st->read = median(ref[1], n);
	st->gzip = median(ref[2], n);
	rc = 0;
out:
	free(v);
	for (int r = 0; r < 3; r++)
		free(ref[r]);
	pd_buf_fini(&q);
	return rc;
}

static void print_fetch_row(const char *what, const struct fetch_stats *st)
{
	printf("%-20s %4zu %8.2f %8.2f %8.2f %8.2f %9.0f %8.0f %8.0f %8.0f\n", what, st->n,
	       st->p50 * 1e3, st->p99 * 1e3, st->mean * 1e3, st->max * 1e3, st->bytes,
	       st->sel * 1e6, st->read * 1e6, st->gzip * 1e6);
}

/* First sample of series i in the head. */
static size_t head_first(const struct synth *s, size_t i, int64_t head_from)
{
	size_t k = 0;
	while (k < s->samples && synth_time(s, i, k) < head_from)
		k++;
	return k;
}

static int section_fetch(const struct opts *o, struct client *c, struct pd_tsdb *db,
                         const struct synth *s, const struct store_info *si)
{
	size_t n = o->fetches;
	size_t *is = malloc(n * sizeof(*is)), *ks = malloc(n * sizeof(*ks));
	struct fetch_stats st[4];
	int rc = -1;
	if (!is || !ks)
		goto out;
	for (int where = 0; where < 2; where++) { /* 0: head, 1: blocks */
		for (size_t j = 0; j < n; j++) {
			size_t i, h;
			do {
				i = rng() % s->nseries;
				h = head_first(s, i, si->head_from);
			} while (where == 0 ? h >= s->samples : h == 0);
			is[j] = i;
			ks[j] = where == 0 ? h + rng() % (s->samples - h) : rng() % h;
		}
		if (fetch_pairs(c, db, s, is, ks, n, &st[where]))
			goto out;
	}
	/* the large profiles alone: heap series only */
	size_t nheap = n / 5 ? n / 5 : 1;
	for (int where = 0; where < 2; where++) {
		for (size_t j = 0; j < nheap; j++) {
			size_t i, h;
			do {
				i = (rng() % ((s->nseries + 99) / 100)) * 100;
				h = head_first(s, i, si->head_from);
			} while (where == 0 ? h >= s->samples : h == 0);
			is[j] = i;
			ks[j] = where == 0 ? h + rng() % (s->samples - h) : rng() % h;
		}
		if (fetch_pairs(c, db, s, is, ks, nheap, &st[2 + where]))
			goto out;
	}
	/* the HTTP floor: a request that does nothing, on the same connection */
	double floor[200];
	for (size_t j = 0; j < 200; j++) {
		struct fetch f;
		if (client_get(c, "/-/healthy", 0, 200, &f))
			goto out;
		floor[j] = f.secs;
	}
	printf("\n3. Single-profile fetch: /api/v1/query?query=<the series' full selector>&time=T\n"
	       "   &report=proto, random (series, T) at a sample's exact time, each answer\n"
	       "   checked to gunzip to the stored bytes; series of every type, then heap\n"
	       "   series alone (40 KB raw). Same handle and connection throughout. The last\n"
	       "   three columns are medians, in this process, of what the server does for\n"
	       "   the same profiles: pd_tsdb_select of the selector over the 5 min lookback,\n"
	       "   pd_tsdb_read (decompresses the profile's value group), pd_gzip at level 6.\n\n");
	printf("%-20s %4s %8s %8s %8s %8s %9s %8s %8s %8s\n", "from", "n", "p50 ms", "p99 ms",
	       "mean ms", "max ms", "stored B", "sel us", "read us", "gzip us");
	print_rule(99);
	print_fetch_row("head, all types", &st[0]);
	print_fetch_row("blocks, all types", &st[1]);
	print_fetch_row("head, heap series", &st[2]);
	print_fetch_row("blocks, heap series", &st[3]);
	print_rule(99);
	printf("HTTP floor: GET /-/healthy on the same connection, p50 %.3f ms, p99 %.3f ms (200 "
	       "requests)\n",
	       quantile(floor, 200, 0.5) * 1e3, quantile(floor, 200, 0.99) * 1e3);
	rc = 0;
out:
	free(is);
	free(ks);
	return rc;
}

/* ---- 4. merges against go tool pprof -proto ---------------------------------------- */

/* Runs argv with stdout to out_path and stderr to err_path; the wall time of the
 * whole process into *secs, its CPU time (user + system, all threads) into *cpu
 * when cpu is not NULL. */
static int run_process(char *const argv[], const char *out_path, const char *err_path, double *secs,
                       double *cpu)
{
	struct rusage ru;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st = 0;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	double t0 = now();
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		fprintf(stderr, "api_bench: cannot run %s: %s\n", argv[0], strerror(rc));
		return -1;
	}
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			return -1;
	*secs = now() - t0;
	if (cpu)
		*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		uint8_t *e = NULL;
		size_t el = 0;
		pd_file_read(err_path, 4096, &e, &el, NULL);
		fprintf(stderr, "api_bench: %s failed: %.*s\n", argv[0], (int)el,
		        e ? (const char *)e : "");
		free(e);
		return -1;
	}
	return 0;
}

/* argv of `<pre...> -proto F0..F(n-1)`; the strings are malloc'd (argv_free). */
static char **proto_argv(char *const *pre, size_t npre, char **files, size_t n)
{
	char **a = calloc(npre + 2 + n, sizeof(*a));
	if (!a)
		return NULL;
	for (size_t i = 0; i < npre; i++)
		a[i] = pre[i];
	a[npre] = "-proto";
	for (size_t i = 0; i < n; i++)
		a[npre + 1 + i] = files[i];
	return a;
}

/* Compares the top tables of two profiles for every sample type of a; 0 when
 * they agree, else -1 with the first difference in why. */
static int tops_agree(const struct pd_pprof_profile *a, const struct pd_pprof_profile *b,
                      size_t *types_compared, size_t *rows, char *why, size_t size)
{
	struct pd_err err = {0};
	*types_compared = *rows = 0;
	if (pd_pprof_sample_type_count(a) != pd_pprof_sample_type_count(b)) {
		snprintf(why, size, "%zu sample types vs %zu", pd_pprof_sample_type_count(a),
		         pd_pprof_sample_type_count(b));
		return -1;
	}
	for (size_t t = 0; t < pd_pprof_sample_type_count(a); t++) {
		const char *name = pd_pprof_sample_type(a, t);
		struct pd_pprof_top *ta = NULL, *tb = NULL;
		int ib, rc = -1;
		if (pd_pprof_sample_index(b, name, &ib, &err)) {
			snprintf(why, size, "go's merge has no sample type %s", name);
			return -1;
		}
		if (pd_pprof_top(a, (int)t, &ta, &err) || pd_pprof_top(b, ib, &tb, &err)) {
			snprintf(why, size, "top %s: %s", name, err.msg);
			goto next;
		}
		if (ta->total != tb->total || ta->nrows != tb->nrows) {
			snprintf(why, size, "%s: total %lld vs %lld, %zu rows vs %zu", name,
			         (long long)ta->total, (long long)tb->total, ta->nrows, tb->nrows);
			goto next;
		}
		for (size_t r = 0; r < ta->nrows; r++) {
			const struct pd_pprof_top_row *x = &ta->rows[r], *y = &tb->rows[r];
			if (strcmp(x->name, y->name) != 0 || x->flat != y->flat ||
			    x->cum != y->cum || x->inline_kind != y->inline_kind) {
				snprintf(why, size, "%s row %zu: %s %lld/%lld vs %s %lld/%lld",
				         name, r, x->name, (long long)x->flat, (long long)x->cum,
				         y->name, (long long)y->flat, (long long)y->cum);
				goto next;
			}
		}
		*rows += ta->nrows;
		(*types_compared)++;
		rc = 0;
	next:
		pd_pprof_top_destroy(ta);
		pd_pprof_top_destroy(tb);
		if (rc)
			return -1;
	}
	return 0;
}

struct merge_case {
	size_t series, n; /* series index, profiles merged (its first n) */
	size_t head;      /* of which in the head */
	double profd_s, go_s, pprof_s, pprof_cpu;
	size_t out_bytes;
	int agree;
	char why[PD_ERR_MSG_MAX + 256];
	size_t types, rows;
	/* the same merge with library calls in this process (medians) */
	double sel_s, read_s, decode_s, add_s, finish_s, encode_s;
};

/* One breakdown run's step times, seconds. */
struct steps {
	double sel, read, decode, add, finish, encode;
};

/* The merge of case m with library calls, each step timed: what the server does
 * for mode=merge&report=proto, without HTTP. */
static int merge_breakdown(struct pd_tsdb *db, const struct synth *s, const struct merge_case *m,
                           struct steps *st)
{
	struct pd_err err = {0};
	struct pd_tsdb_label l[3];
	size_t nl = synth_labels(s, m->series, l);
	struct pd_tsdb_matcher mt[3];
	struct pd_tsdb_result *res = NULL;
	struct pd_pprof_merger *mg = NULL;
	struct pd_pprof_profile *out = NULL;
	uint8_t *enc = NULL;
	size_t enc_len = 0;
	int rc = -1;
	for (size_t i = 0; i < nl; i++)
		mt[i] = (struct pd_tsdb_matcher){l[i].name, match_eq, l[i].value};
	double a = now();
	if (pd_tsdb_select(db, mt, nl, synth_time(s, m->series, 0),
	                   synth_time(s, m->series, m->n - 1), 0, &res, &err))
		goto out;
	st->sel = now() - a;
	if (res->nseries != 1 || res->series[0].nts != m->n) {
		pd_err_set(&err, PD_EINVAL, "select found %zu series", res->nseries);
		goto out;
	}
	if (pd_pprof_merger_create(&mg, &err))
		goto out;
	st->read = st->decode = st->add = 0;
	for (size_t k = 0; k < m->n; k++) {
		uint8_t *raw = NULL;
		size_t len = 0;
		struct pd_pprof_profile *p = NULL;
		double b0 = now();
		if (pd_tsdb_read(db, l, nl, res->series[0].ts[k], &raw, &len, &err))
			goto out;
		double b1 = now();
		int drc = pd_pprof_decode(&p, raw, len, NULL, &err);
		free(raw);
		if (drc)
			goto out;
		double b2 = now();
		drc = pd_pprof_merger_add(mg, p, &err);
		pd_pprof_destroy(p);
		if (drc)
			goto out;
		double b3 = now();
		st->read += b1 - b0;
		st->decode += b2 - b1;
		st->add += b3 - b2;
	}
	a = now();
	rc = pd_pprof_merger_finish(mg, &out, &err);
	mg = NULL;
	if (rc)
		goto out;
	rc = -1;
	st->finish = now() - a;
	a = now();
	if (pd_pprof_encode(out, 1, &enc, &enc_len, &err))
		goto out;
	st->encode = now() - a;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "api_bench: merge breakdown: %s\n", err.msg);
	pd_pprof_merger_destroy(mg);
	pd_pprof_destroy(out);
	free(enc);
	pd_tsdb_result_destroy(res);
	return rc;
}

/* What reading every profile of a chunk one by one costs against reading each
 * value group once: a chunk of series i's first PD_TSDB_DEFAULT_CHUNK_SAMPLES
 * profiles, as the store builds it (default group and level), sealed; then
 * pd_chunkenc_values_read of every profile (each decompresses its group, as
 * pd_tsdb_read does) and of the first profile of each group only. Best of 3;
 * seconds per profile of the chunk. */
static int group_reread(const struct synth *s, size_t i, double *each, double *once)
{
	struct pd_err err = {0};
	const size_t n = PD_TSDB_DEFAULT_CHUNK_SAMPLES, g = PD_CHUNKENC_DEFAULT_GROUP;
	struct pd_chunkenc_values *v = pd_chunkenc_values_create(0, 0);
	uint8_t *chunk = NULL;
	size_t len = 0;
	int rc = -1;
	if (!v)
		return -1;
	for (size_t k = 0; k < n; k++)
		if (pd_chunkenc_values_append(v, synth_prof(s, i, k)->raw,
		                              synth_prof(s, i, k)->raw_len, &err))
			goto out;
	if (pd_chunkenc_values_seal(v, &chunk, &len, &err))
		goto out;
	*each = *once = 1e30;
	for (int r = 0; r < 3; r++)
		for (size_t step = 1; step <= g; step += g - 1) {
			double a = now();
			for (size_t k = 0; k < n; k += step) {
				uint8_t *p = NULL;
				size_t pl = 0;
				if (pd_chunkenc_values_read(chunk, len, k, MAX_FILE_BYTES, &p, &pl,
				                            &err))
					goto out;
				free(p);
			}
			double d = (now() - a) / (double)n;
			double *best = step == 1 ? each : once;
			if (d < *best)
				*best = d;
		}
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "api_bench: value chunk: %s\n", err.msg);
	free(chunk);
	pd_chunkenc_values_destroy(v);
	return rc;
}

/* Dumps the first n profiles of series i through the API as dir/<k>.pb.gz (the
 * files go tool pprof reads); names into files[k] (malloc'd). */
static int dump_series(struct client *c, const struct synth *s, size_t i, size_t n, const char *dir,
                       char **files)
{
	struct pd_buf q;
	int rc = -1;
	pd_buf_init(&q, 0);
	for (size_t k = 0; k < n; k++) {
		struct fetch f;
		char path[PATH_MAX + 32];
		if (fetch_one(c, s, i, k, &q, &f))
			goto out;
		/* the body was checked against the stored bytes: write it as served */
		snprintf(path, sizeof(path), "%s/%04zu.pb.gz", dir, k);
		FILE *fp = fopen(path, "wb");
		if (!fp) {
			fprintf(stderr, "api_bench: %s: %s\n", path, strerror(errno));
			goto out;
		}
		if (fwrite(c->body.data, 1, c->body.len, fp) != c->body.len) {
			fclose(fp);
			goto out;
		}
		if (fclose(fp))
			goto out;
		if (!(files[k] = strdup(path)))
			goto out;
	}
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "api_bench: dumping %zu profiles to %s failed\n", n, dir);
	pd_buf_fini(&q);
	return rc;
}

static int run_merge_case(const struct opts *o, struct client *c, struct pd_tsdb *db,
                          const struct synth *s, const struct store_info *si, char **files,
                          const char *work, const char *gotool, struct merge_case *m)
{
	struct pd_err err = {0};
	struct pd_buf q;
	char sel[160], t0[32], t1[32], maxp[32], out_path[PATH_MAX], err_path[PATH_MAX];
	double v[64];
	struct pd_pprof_profile *mine = NULL, *theirs = NULL;
	char **argv_go = NULL, **argv_pprof = NULL;
	int rc = -1;
	pd_buf_init(&q, 0);
	m->head = 0;
	for (size_t k = 0; k < m->n; k++)
		m->head += synth_time(s, m->series, k) >= si->head_from;
	synth_selector(s, m->series, sel, sizeof(sel));
	api_time(synth_time(s, m->series, 0), t0, sizeof(t0));
	api_time(synth_time(s, m->series, m->n - 1), t1, sizeof(t1));
	snprintf(maxp, sizeof(maxp), "%zu", m->n);

	/* check the merge takes exactly n profiles (report=meta says how many) */
	const char *pq = build_query(c, &q, "/api/v1/query", "query", sel, "mode", "merge", "start",
	                             t0, "end", t1, "max_profiles", maxp, NULL);
	struct fetch f;
	if (!pq || client_get(c, pq, 0, 200, &f))
		goto out;
	char want[64];
	snprintf(want, sizeof(want), "\"profileCount\":%zu,", m->n);
	if (!find_bytes(c->body.data, c->body.len, want) ||
	    find_bytes(c->body.data, c->body.len, "\"warnings\"")) {
		fprintf(stderr, "api_bench: the merge of %s did not take %zu profiles: %.*s\n", sel,
		        m->n, (int)(c->body.len < 600 ? c->body.len : 600),
		        (const char *)c->body.data);
		goto out;
	}

	pq = build_query(c, &q, "/api/v1/query", "query", sel, "mode", "merge", "start", t0, "end",
	                 t1, "max_profiles", maxp, "report", "proto", NULL);
	if (!pq || client_get(c, pq, 0, 200, &f)) /* warm-up */
		goto out;
	/* each HTTP run followed by the same merge with library calls, so that both
	 * meet the same load */
	double bd[6][64];
	for (int r = 0; r < o->runs; r++) {
		struct steps st = {0};
		if (client_get(c, pq, 0, 200, &f) || merge_breakdown(db, s, m, &st))
			goto out;
		v[r] = f.secs;
		bd[0][r] = st.sel;
		bd[1][r] = st.read;
		bd[2][r] = st.decode;
		bd[3][r] = st.add;
		bd[4][r] = st.finish;
		bd[5][r] = st.encode;
	}
	m->sel_s = median(bd[0], (size_t)o->runs);
	m->read_s = median(bd[1], (size_t)o->runs);
	m->decode_s = median(bd[2], (size_t)o->runs);
	m->add_s = median(bd[3], (size_t)o->runs);
	m->finish_s = median(bd[4], (size_t)o->runs);
	m->encode_s = median(bd[5], (size_t)o->runs);
	m->profd_s = median(v, (size_t)o->runs);
	m->out_bytes = c->body.len;
	if (pd_pprof_decode(&mine, c->body.data, c->body.len, NULL, &err)) {
		fprintf(stderr, "api_bench: profd's merge does not decode: %s\n", err.msg);
		goto out;
	}

	/* go tool pprof -proto F... > out, and the pprof binary directly */
	char *go_pre[] = {(char *)o->go, "tool", "pprof"}, *pprof_pre[] = {(char *)gotool};
	argv_go = proto_argv(go_pre, 3, files, m->n);
	argv_pprof = proto_argv(pprof_pre, 1, files, m->n);
	if (!argv_go || !argv_pprof)
		goto out;
	snprintf(out_path, sizeof(out_path), "%s/go-merge.pb.gz", work);
	snprintf(err_path, sizeof(err_path), "%s/go-merge.err", work);
	double gv[2][64], gc[64];
	for (int which = 0; which < 2; which++) {
		char **a = which ? argv_pprof : argv_go;
		double d;
		if (run_process(a, out_path, err_path, &d,
		                NULL)) /* warm-up: page cache, go's cache */
			goto out;
		for (int r = 0; r < o->go_runs; r++)
			if (run_process(a, out_path, err_path, &gv[which][r],
			                which ? &gc[r] : NULL))
				goto out;
	}
	m->go_s = median(gv[0], (size_t)o->go_runs);
	m->pprof_s = median(gv[1], (size_t)o->go_runs);
	m->pprof_cpu = median(gc, (size_t)o->go_runs);
	if (pd_pprof_read_file(&theirs, out_path, NULL, &err)) {
		fprintf(stderr, "api_bench: go's merge: %s\n", err.msg);
		goto out;
	}
	m->why[0] = 0;
	m->agree = tops_agree(mine, theirs, &m->types, &m->rows, m->why, sizeof(m->why)) == 0;
	rc = 0;
out:
	pd_pprof_destroy(mine);
	pd_pprof_destroy(theirs);
	free(argv_go);
	free(argv_pprof);
	pd_buf_fini(&q);
	return rc;
}

/* The directory of the go command's tools (`go env GOTOOLDIR`) + "/pprof". */
static int find_pprof(const char *go, char *out, size_t size)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "'%s' env GOTOOLDIR 2>/dev/null", go);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char dir[PATH_MAX] = "";
	if (!fgets(dir, sizeof(dir), p))
		dir[0] = 0;
	pclose(p);
	dir[strcspn(dir, "\n")] = 0;
	if (!dir[0])
		return -1;
	snprintf(out, size, "%s/pprof", dir);
	return access(out, X_OK);
}

static int section_merge(const struct opts *o, struct client *c, struct pd_tsdb *db,
                         const struct synth *s, const struct store_info *si, const char *work)
{
	char gotool[PATH_MAX], path[PATH_MAX], out_path[PATH_MAX], err_path[PATH_MAX];
	struct merge_case cases[4];
	size_t ncases = 0, nmax = s->samples < 1000 ? s->samples : 1000;
	size_t nsmall = nmax < 100 ? nmax : 100;
	char **files[2] = {NULL, NULL};
	double start_go[64], start_pprof[64];
	int rc = -1;
	if (find_pprof(o->go, gotool, sizeof(gotool))) {
		fprintf(stderr,
		        "api_bench: `%s env GOTOOLDIR`/pprof not found: the reference is "
		        "go tool pprof (Debian golang-go)\n",
		        o->go);
		return -1;
	}
	/* go tool pprof must not fetch symbols or binaries; it reads the files only */
	snprintf(path, sizeof(path), "%s/none", work);
	setenv("PPROF_BINARY_PATH", path, 1);
	setenv("PPROF_TMPDIR", work, 1);

	/* one heap series and one cpu series, their first nmax profiles */
	size_t cpu = SIZE_MAX;
	for (size_t i = 0; i < s->nseries && cpu == SIZE_MAX; i++)
		if (strcmp(s->ty[i]->name, "cpu") == 0)
			cpu = i;
	size_t pick[2] = {0, cpu};
	double dump_s = 0;
	for (int w = 0; w < 2; w++) {
		if (pick[w] == SIZE_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%s", work, s->ty[pick[w]]->name);
		if (mkdir(path, 0755) || !(files[w] = calloc(nmax, sizeof(char *))))
			goto out;
		double a = now();
		if (dump_series(c, s, pick[w], nmax, path, files[w]))
			goto out;
		dump_s += now() - a;
		cases[ncases++] = (struct merge_case){.series = pick[w], .n = nsmall};
		if (nmax != nsmall)
			cases[ncases++] = (struct merge_case){.series = pick[w], .n = nmax};
	}
	/* go tool pprof's start-up: the same command on one small file */
	{
		char *a_go[] = {
		    (char *)o->go, "tool", "pprof", "-proto", files[1] ? files[1][0] : files[0][0],
		    NULL};
		char *a_pp[] = {gotool, "-proto", a_go[4], NULL};
		double d;
		snprintf(out_path, sizeof(out_path), "%s/one.pb.gz", work);
		snprintf(err_path, sizeof(err_path), "%s/one.err", work);
		if (run_process(a_go, out_path, err_path, &d, NULL) ||
		    run_process(a_pp, out_path, err_path, &d, NULL))
			goto out;
		for (int r = 0; r < o->runs; r++)
			if (run_process(a_go, out_path, err_path, &start_go[r], NULL) ||
			    run_process(a_pp, out_path, err_path, &start_pprof[r], NULL))
				goto out;
	}
	for (size_t j = 0; j < ncases; j++)
		if (run_merge_case(o, c, db, s, si, files[cases[j].series == 0 ? 0 : 1], work,
		                   gotool, &cases[j]))
			goto out;

	printf(
	    "\n4. Merge of the first N profiles of one series: profd = /api/v1/query?mode=merge\n"
	    "   &start&end&max_profiles=N&report=proto (median of %d after a warm-up);\n"
	    "   go tool = `go tool pprof -proto F1..FN > out` as a whole process, on the\n"
	    "   same profiles dumped through the API as .pb.gz files (median of %d after a\n"
	    "   warm-up); pprof = the same with $(go env GOTOOLDIR)/pprof, without the go\n"
	    "   command's start-up. ratio = their time / profd's. pprof CPU = its user +\n"
	    "   system time / its wall time (about 100%%: one core's worth, as profd's merge\n"
	    "   on the request's thread). head = profiles from the head, the rest from\n"
	    "   blocks. out KB = profd's merged .pb.gz. agree = pd_pprof_top of profd's\n"
	    "   merged proto and of go's output equal row for row (name, flat, cum,\n"
	    "   inline) for every sample type.\n\n",
	    o->runs, o->go_runs);
	printf("%-16s %4s %9s %10s %7s %9s %7s %9s %7s  %s\n", "case", "head", "profd ms",
	       "go tool ms", "ratio", "pprof ms", "ratio", "pprof CPU", "out KB", "top tables");
	print_rule(114);
	for (size_t j = 0; j < ncases; j++) {
		const struct merge_case *m = &cases[j];
		char name[40], agree[80];
		snprintf(name, sizeof(name), "merge %zu %s", m->n, s->ty[m->series]->name);
		if (m->agree)
			snprintf(agree, sizeof(agree), "agree (%zu types, %zu rows)", m->types,
			         m->rows);
		else
			snprintf(agree, sizeof(agree), "DIFFER");
		printf("%-16s %4zu %9.1f %10.1f %6.1fx %9.1f %6.1fx %8.0f%% %7.1f  %s\n", name,
		       m->head, m->profd_s * 1e3, m->go_s * 1e3, m->go_s / m->profd_s,
		       m->pprof_s * 1e3, m->pprof_s / m->profd_s, 100 * m->pprof_cpu / m->pprof_s,
		       (double)m->out_bytes / 1024, agree);
	}
	print_rule(114);
	printf(
	    "go tool pprof start-up (`-proto` of one cpu file): go tool %.1f ms, pprof %.1f ms;\n"
	    "dumping the %zu + %zu files through the API took %.1f s\n",
	    median(start_go, (size_t)o->runs) * 1e3, median(start_pprof, (size_t)o->runs) * 1e3,
	    nmax, files[1] ? nmax : 0, dump_s);
	for (size_t j = 0; j < ncases; j++)
		if (!cases[j].agree)
			printf("DIFFER: merge %zu %s: %s\n", cases[j].n,
			       s->ty[cases[j].series]->name, cases[j].why);

	printf("\n   The same merges with library calls in this process, each run right after\n"
	       "   an HTTP run, medians of each step's total (what the server does without\n"
	       "   HTTP): select = pd_tsdb_select of the series; read = pd_tsdb_read of\n"
	       "   each profile (decompresses its value group); decode = pd_pprof_decode;\n"
	       "   add = pd_pprof_merger_add; finish = pd_pprof_merger_finish; encode =\n"
	       "   pd_pprof_encode with gzip.\n\n");
	printf("%-18s %9s %9s %9s %9s %9s %9s %9s %11s\n", "case", "select ms", "read ms",
	       "decode ms", "add ms", "finish ms", "encode ms", "sum ms", "HTTP - sum");
	print_rule(100);
	for (size_t j = 0; j < ncases; j++) {
		const struct merge_case *m = &cases[j];
		char name[40];
		double sum =
		    m->sel_s + m->read_s + m->decode_s + m->add_s + m->finish_s + m->encode_s;
		snprintf(name, sizeof(name), "merge %zu %s", m->n, s->ty[m->series]->name);
		printf("%-18s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %10.1f\n", name,
		       m->sel_s * 1e3, m->read_s * 1e3, m->decode_s * 1e3, m->add_s * 1e3,
		       m->finish_s * 1e3, m->encode_s * 1e3, sum * 1e3, (m->profd_s - sum) * 1e3);
	}
	print_rule(100);
	for (int w = 0; w < 2; w++) {
		double each, once;
		if (pick[w] == SIZE_MAX || group_reread(s, pick[w], &each, &once))
			continue;
		printf(
		    "%s: pd_chunkenc_values_read of all %d profiles of a sealed chunk, one by one: "
		    "%.0f us a profile;\n  of one profile per group of %d (each group once): "
		    "%.0f us a profile of the chunk (%.1fx less)\n",
		    s->ty[pick[w]]->name, PD_TSDB_DEFAULT_CHUNK_SAMPLES, each * 1e6,
		    PD_CHUNKENC_DEFAULT_GROUP, once * 1e6, each / once);
	}
	rc = 0;
	for (size_t j = 0; j < ncases; j++)
		if (!cases[j].agree)
			rc = 1;
out:
	for (int w = 0; w < 2; w++) {
		for (size_t k = 0; files[w] && k < nmax; k++)
			free(files[w][k]);
		free(files[w]);
	}
	return rc;
}

/* ---- main ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: api_bench --corpus DIR [--dir DIR] [--go CMD] [--series N] [--samples N]\n"
	        "                 [--fetches N] [--runs N] [--go-runs N] [--block-range-min M]\n"
	        "  --corpus DIR        per-type folders of 1.pb.gz..48.pb.gz (default $PD_CORPUS)\n"
	        "  --dir DIR           where the temporary store and files go (default $TMPDIR or "
	        "/tmp)\n"
	        "  --go CMD            the go command of the reference (default $GO or go)\n"
	        "  --series, --samples the store (default 1000 x 1000)\n"
	        "  --fetches N         random single fetches from the head and from blocks (500)\n"
	        "  --runs N            timed runs of query_range and profd's merges (5)\n"
	        "  --go-runs N         timed runs of go tool pprof per merge (3)\n"
	        "  --block-range-min M the store's block range in minutes (60)\n");
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	o.corpus = getenv("PD_CORPUS");
	o.dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	o.go = getenv("GO") ? getenv("GO") : "go";
	o.series = 1000;
	o.samples = 1000;
	o.fetches = 500;
	o.runs = 5;
	o.go_runs = 3;
	o.block_range_ms = 60 * 60000;
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		if (strcmp(a, "--corpus") == 0)
			o.corpus = v;
		else if (strcmp(a, "--dir") == 0)
			o.dir = v;
		else if (strcmp(a, "--go") == 0)
			o.go = v;
		else if (strcmp(a, "--series") == 0)
			o.series = (size_t)strtoull(v, NULL, 10);
		else if (strcmp(a, "--samples") == 0)
			o.samples = (size_t)strtoull(v, NULL, 10);
		else if (strcmp(a, "--fetches") == 0)
			o.fetches = (size_t)strtoull(v, NULL, 10);
		else if (strcmp(a, "--runs") == 0)
			o.runs = atoi(v);
		else if (strcmp(a, "--go-runs") == 0)
			o.go_runs = atoi(v);
		else if (strcmp(a, "--block-range-min") == 0)
			o.block_range_ms = (int64_t)atoll(v) * 60000;
		else {
			usage(stderr);
			return 2;
		}
	}
	if (!o.corpus || o.series == 0 || o.series > 10000 || o.samples < 2 || o.samples > 100000 ||
	    o.fetches == 0 || o.runs < 1 || o.runs > 64 || o.go_runs < 1 || o.go_runs > 64 ||
	    o.block_range_ms <= 0) {
		usage(stderr);
		return 2;
	}
	double start = now();
	char work[PATH_MAX], store[PATH_MAX + 8];
	struct pd_err err = {0};
	struct pd_tsdb *db = NULL;
	struct pd_api_server *srv = NULL;
	struct client c = {0};
	struct synth s = {0};
	struct store_info si;
	int rc = 1;
	work[0] = 0;
	if (load_corpus(o.corpus) || synth_init(&s, o.series, o.samples))
		goto out;
	snprintf(work, sizeof(work), "%s/pd-api-bench-XXXXXX", o.dir);
	if (!mkdtemp(work)) {
		fprintf(stderr, "api_bench: mkdtemp %s: %s\n", work, strerror(errno));
		work[0] = 0;
		goto out;
	}
	snprintf(store, sizeof(store), "%s/store", work);
	struct pd_tsdb_opts to;
	pd_tsdb_opts_init(&to);
	to.retention_ms = -1;
	to.block_range_ms = o.block_range_ms;
	to.wal_sync = 1;
	if (pd_tsdb_open(&db, store, &to, &err)) {
		fprintf(stderr, "api_bench: open %s: %s\n", store, err.msg);
		goto out;
	}
	printf("profd api bench: corpus %s, work in %s\n", o.corpus, work);
	if (store_fill(&o, db, &s, &si))
		goto out;

	struct pd_api_opts ao;
	pd_api_opts_init(&ao);
	ao.listen_address = "127.0.0.1:0";
	ao.db = db;
	if (ao.max_merge_profiles < o.samples)
		ao.max_merge_profiles = o.samples;
	if (pd_api_start(&srv, &ao, &err)) {
		fprintf(stderr, "api_bench: starting the server: %s\n", err.msg);
		goto out;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (client_init(&c, pd_api_port(srv))) {
		fprintf(stderr, "api_bench: curl_easy_init failed\n");
		goto out;
	}
	printf("server: pd_api_start on %s (libmicrohttpd, a thread per connection); client:\n"
	       "libcurl %s, one easy handle, so one kept-alive connection\n",
	       c.base, curl_version_info(CURLVERSION_NOW)->version);
	fflush(stdout);
	if (section_range(&o, &c, db, &s))
		goto out;
	fflush(stdout);
	if (section_fetch(&o, &c, db, &s, &si))
		goto out;
	fflush(stdout);
	int mrc = section_merge(&o, &c, db, &s, &si, work);
	if (mrc < 0)
		goto out;
	printf("\ntotal %.0f s\n", now() - start);
	rc = mrc ? 1 : 0;
out:
	fflush(stdout);
	client_fini(&c);
	pd_api_stop(srv);
	pd_tsdb_close(db);
	if (work[0])
		rm_rf(work);
	synth_fini(&s);
	free_corpus();
	curl_global_cleanup();
	return rc;
}
