/* api_bench.c: the figures the API issue asks for, measured through the real HTTP
 * server (pd_api_start on loopback) with libcurl as the client, over two stores
 * filled with the same real profiles, one per value chunk encoding (2, columnar,
 * the default; 1, raw profiles in zstd groups): query_range over every series and
 * the whole range (latency and bytes, plain and gzip), single-profile fetch
 * latency p50/p99/max from the head and from blocks, and merges of 100 and 1,000
 * profiles of one series against `go tool pprof -proto` on the same profiles as
 * files, with a check that every merge gives the same top table, and the aims
 * (merge speed against pprof, fetch p99) with yes/no. Every HTTP figure is
 * printed beside what the library calls underneath cost in this process, so that
 * the HTTP, JSON and gzip share shows. bench/api.sh runs it; bench/README.md
 * reads the output.
 *
 * usage: api_bench --corpus DIR [--corpus2 DIR] [--dir DIR] [--go CMD] [--series N]
 *                  [--samples N] [--fetches N] [--runs N] [--go-runs N]
 *                  [--block-range-min M] */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp, posix_spawn */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stddef.h>
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

#define MAX_FILES 240 /* profiles per type read from a corpus */
#define MAX_FILE_BYTES ((size_t)64 << 20)
#define T0_MS 1795370400000LL /* 2026-11-22T18:00:00Z, on a block boundary */
#define SCRAPE_MS 15000
#define BATCH 100 /* series per commit, as one scrape round commits */

/* The aims, through the API: merges against `go tool pprof -proto` (its time /
 * profd's) and the p99 of a single profile read from a block. */
#define AIM_MERGE_1000 10.0
#define AIM_MERGE_100 5.0
#define AIM_FETCH_P99_MS 2.0

/* Series i is heap when i % 100 == 0, allocs when i % 100 == 50 (1% each: the
 * 40 KB profiles that merges are about), heap of the second corpus when
 * i % 100 == 25 and one was given, else one of the small types in turn. */
static const char *const all_types[] = {"heap",  "allocs", "cpu",         "goroutine",
                                        "mutex", "block",  "threadcreate"};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))
static const char *const small_types[] = {"cpu", "goroutine", "mutex", "block", "threadcreate"};
#define NSMALL (sizeof(small_types) / sizeof(small_types[0]))

struct prof {
	uint8_t *raw; /* gunzipped: what the store keeps */
	size_t raw_len;
	struct pd_pprof_profile *decoded; /* raw decoded, made on first need */
	int64_t t;                        /* time_nanos / 1e6, for the order only */
};

struct ptype {
	const char *name; /* the profile type, the series' __name__ */
	const char *show; /* in the tables */
	struct prof p[MAX_FILES];
	size_t n;
};

static struct ptype types[NTYPES];
static struct ptype goheap; /* heap profiles of the second corpus (--corpus2) */

/* The two stores, filled with the same samples: value_encoding 2 and 1. */
#define NENC 2
static const int encodings[NENC] = {2, 1};

struct opts {
	const char *corpus, *corpus2, *dir, *go;
	size_t series, samples, fetches;
	int runs, go_runs;
	int64_t block_range_ms;
	const char *sections; /* comma-separated: range, fetch, merge; NULL: all */
};

/* 1 when section name is to run. */
static int section_on(const struct opts *o, const char *name)
{
	if (!o->sections)
		return 1;
	size_t n = strlen(name);
	for (const char *p = o->sections; *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && strncmp(p, name, n) == 0)
			return 1;
		p += l + (e ? 1 : 0);
	}
	return 0;
}

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

static const char *yes_no(int ok)
{
	return ok ? "yes" : "no";
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

/* ---- the corpus -------------------------------------------------------------- */

static int prof_cmp(const void *a, const void *b)
{
	const struct prof *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Loads <corpus>/<name>/1.pb.gz.. (up to the first missing file) into ty,
 * gunzipped (as profd stores them) and in scrape order. */
static int load_type(struct ptype *ty, const char *corpus, const char *name, const char *show)
{
	struct pd_err err = {0};
	ty->name = name;
	ty->show = show;
	for (size_t k = 0; k < MAX_FILES; k++) {
		char path[PATH_MAX];
		struct prof *p = &ty->p[ty->n];
		struct pd_pprof_profile *pp = NULL;
		uint8_t *gz = NULL;
		size_t gz_len = 0;
		snprintf(path, sizeof(path), "%s/%s/%zu.pb.gz", corpus, name, k + 1);
		if (access(path, R_OK) != 0)
			break;
		if (pd_file_read(path, MAX_FILE_BYTES, &gz, &gz_len, &err) ||
		    pd_pprof_decode(&pp, gz, gz_len, NULL, &err) ||
		    pd_gunzip(gz, gz_len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED, &p->raw, &p->raw_len,
		              &err)) {
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
		fprintf(stderr, "api_bench: no %s profiles in %s/%s/N.pb.gz\n", name, corpus, name);
		return -1;
	}
	return 0;
}

static int load_corpus(const struct opts *o)
{
	for (size_t i = 0; i < NTYPES; i++)
		if (load_type(&types[i], o->corpus, all_types[i], all_types[i]))
			return -1;
	if (o->corpus2 && load_type(&goheap, o->corpus2, "heap", "goapp heap"))
		return -1;
	return 0;
}

static void free_type(struct ptype *ty)
{
	for (size_t k = 0; k < ty->n; k++) {
		free(ty->p[k].raw);
		pd_pprof_destroy(ty->p[k].decoded);
	}
}

static void free_corpus(void)
{
	for (size_t i = 0; i < NTYPES; i++)
		free_type(&types[i]);
	free_type(&goheap);
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
		if (i % 100 == 25 && goheap.n)
			s->ty[i] = &goheap;
		else
			s->ty[i] = find_type(i % 100 == 0    ? "heap"
			                     : i % 100 == 50 ? "allocs"
			                                     : small_types[i % NSMALL]);
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

static size_t synth_labels(const struct synth *s, size_t i, struct pd_storage_label *l)
{
	/* sorted by name */
	l[0] = (struct pd_storage_label){"__name__", s->ty[i]->name};
	l[1] = (struct pd_storage_label){"instance", s->instance[i]};
	l[2] = (struct pd_storage_label){"job", "bench"};
	return 3;
}

/* The selector that names series i exactly. */
static void synth_selector(const struct synth *s, size_t i, char *out, size_t size)
{
	snprintf(out, size, "%s{instance=\"%s\",job=\"bench\"}", s->ty[i]->name, s->instance[i]);
}

/* Appends samples k of series [b, b + BATCH) in one commit: one scrape round's
 * share. */
static int synth_commit(struct pd_tsdb *db, const struct synth *s, size_t k, size_t b,
                        double *raw_bytes, struct pd_err *err)
{
	struct pd_storage_label l[3];
	struct pd_tsdb_appender *a = pd_tsdb_appender(db);
	if (!a)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = b; i < b + BATCH && i < s->nseries; i++) {
		const struct prof *p = synth_prof(s, i, k);
		size_t nl = synth_labels(s, i, l);
		if (pd_tsdb_append(a, l, nl, synth_time(s, i, k), p->raw, p->raw_len, err)) {
			pd_tsdb_rollback(a);
			return err->code ? err->code : PD_EINVAL;
		}
		if (raw_bytes)
			*raw_bytes += (double)p->raw_len;
	}
	return pd_tsdb_commit(a, err);
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

/* ---- the stores ------------------------------------------------------------------ */

struct store_info {
	double fill_s, flush_s;
	uint64_t head_samples, block_samples, block_bytes, value_bytes, wal_bytes;
	size_t nblocks;
	int64_t head_from; /* samples at or after this are in the head, before it in blocks */
};

/* One store and the server over it. */
struct bstore {
	int enc; /* value_encoding */
	char dir[PATH_MAX + 16];
	struct pd_tsdb *db;
	struct pd_api_server *srv;
	struct client c;
	struct store_info si;
};

static const char *enc_name(int enc)
{
	return enc == 1 ? "v1" : "v2";
}

/* Fills both stores with every sample: one commit per BATCH series of a round,
 * each batch committed to one store and then to the other (which goes first
 * alternates), so that load during the fill falls on both alike. Then
 * pd_tsdb_flush(db, 0) of each, and checks of where the samples went. */
static int stores_fill(const struct opts *o, struct bstore *st, const struct synth *s,
                       double *raw_bytes)
{
	struct pd_err err = {0};
	struct pd_storage_block_info *b = NULL;
	size_t nb = 0;
	*raw_bytes = 0;
	for (size_t k = 0; k < s->samples; k++)
		for (size_t bt = 0; bt < s->nseries; bt += BATCH)
			for (int x = 0; x < NENC; x++) {
				int e = ((k + bt / BATCH) & 1) ? NENC - 1 - x : x;
				double t0 = now();
				if (synth_commit(st[e].db, s, k, bt, x == 0 ? raw_bytes : NULL,
				                 &err))
					goto fail;
				st[e].si.fill_s += now() - t0;
			}
	for (int x = 0; x < NENC; x++) {
		struct store_info *si = &st[x].si;
		struct pd_storage_stats ts;
		double t0 = now();
		if (pd_tsdb_flush(st[x].db, 0, &err))
			goto fail;
		si->flush_s = now() - t0;
		if (pd_tsdb_blocks(st[x].db, &b, &nb, &err))
			goto fail;
		pd_tsdb_stats(st[x].db, &ts);
		si->nblocks = nb;
		si->head_samples = ts.head_samples;
		si->wal_bytes = ts.wal_bytes;
		si->head_from = INT64_MIN;
		for (size_t i = 0; i < nb; i++) {
			si->block_samples += b[i].samples;
			si->block_bytes += b[i].size;
			si->value_bytes += b[i].value_bytes;
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
			           "%s: blocks hold %llu samples and the head %llu; expected %llu "
			           "and %llu",
			           enc_name(st[x].enc), (unsigned long long)si->block_samples,
			           (unsigned long long)si->head_samples, (unsigned long long)before,
			           (unsigned long long)(s->nseries * s->samples - before));
			goto fail;
		}
	}
	if (st[0].si.head_from != st[1].si.head_from) {
		pd_err_set(&err, PD_EINVAL, "the stores' heads start at different times");
		goto fail;
	}
	size_t per[4] = {0, 0, 0, 0}; /* heap, allocs, goapp heap, small */
	for (size_t i = 0; i < s->nseries; i++)
		per[s->ty[i] == &goheap                     ? 2
		    : strcmp(s->ty[i]->name, "heap") == 0   ? 0
		    : strcmp(s->ty[i]->name, "allocs") == 0 ? 1
		                                            : 3]++;
	printf("\n1. The stores: %zu series x %zu samples, 15 s apart (%.1f h), real profiles\n"
	       "   from the corpus cycled, stored gunzipped as profd stores them: %zu heap and\n"
	       "   %zu allocs series (about 40 KB each),\n",
	       s->nseries, s->samples, (double)s->samples * SCRAPE_MS / 3.6e6, per[0], per[1]);
	if (per[2]) {
		double sum = 0;
		for (size_t k = 0; k < goheap.n; k++)
			sum += (double)goheap.p[k].raw_len;
		printf("   %zu heap series of the second corpus (%.0f KB on average),\n", per[2],
		       sum / (double)goheap.n / 1024);
	}
	printf("   and cpu, goroutine, mutex, block, threadcreate in the rest (0.5-7 KB).\n"
	       "   Two stores of the same samples: value_encoding 2 (v2, columnar, the\n"
	       "   default) and 1 (v1, raw profiles in zstd groups of %d), each batch\n"
	       "   committed to one and then the other (alternating which first). WAL on\n"
	       "   (wal_sync=1), one commit per %d series of a round, then\n"
	       "   pd_tsdb_flush(db, 0) with a block range of %lld min, which keeps the newest\n"
	       "   half range and more in the head. fill s = the store's own commits.\n\n",
	       PD_CHUNKENC_DEFAULT_GROUP, BATCH, (long long)(o->block_range_ms / 60000));
	printf("%-4s %8s %11s %8s %13s %13s %7s %9s %9s %8s\n", "enc", "fill s", "profiles/s",
	       "flush s", "head samples", "block samples", "blocks", "block MB", "values MB",
	       "WAL MB");
	print_rule(98);
	for (int x = 0; x < NENC; x++) {
		const struct store_info *si = &st[x].si;
		printf("%-4s %8.1f %11.0f %8.1f %13llu %13llu %7zu %9.1f %9.1f %8.0f\n",
		       enc_name(st[x].enc), si->fill_s,
		       (double)(s->nseries * s->samples) / si->fill_s, si->flush_s,
		       (unsigned long long)si->head_samples, (unsigned long long)si->block_samples,
		       si->nblocks, (double)si->block_bytes / 1e6, (double)si->value_bytes / 1e6,
		       (double)si->wal_bytes / 1e6);
	}
	print_rule(98);
	printf("raw profile bytes appended: %.0f MB per store\n", *raw_bytes / 1e6);
	return 0;
fail:
	fprintf(stderr, "api_bench: filling the stores: %s\n", err.msg);
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
	struct pd_storage_matcher m = {"job", pd_storage_match_equal, "bench"};
	for (int r = 0; r < n; r++) {
		struct pd_storage_result *res = NULL;
		double a = now();
		if (pd_tsdb_select(db, &m, 1, T0_MS, INT64_MAX, 0, &res, &err)) {
			fprintf(stderr, "api_bench: select: %s\n", err.msg);
			goto out;
		}
		sel[r] = now() - a;
		pd_storage_result_destroy(res);
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
	    "   on the v2 store (listing reads timestamp chunks only, whatever the value\n"
	    "   encoding), one reused curl handle (keep-alive), median of %d after one warm-up.\n"
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
	double p50, p99, mean, max;       /* seconds, through HTTP */
	double bytes;                     /* mean stored bytes */
	double sel, read, read_p99, gzip; /* in this process, seconds: medians, and read's p99 */
};

/* The decoded form of a corpus profile, made once. */
static const struct pd_pprof_profile *prof_decoded(const struct prof *p)
{
	struct prof *q = (struct prof *)p;
	if (!q->decoded && pd_pprof_decode(&q->decoded, q->raw, q->raw_len, NULL, NULL))
		q->decoded = NULL;
	return q->decoded;
}

/* Whether raw[0..len) is the profile that was appended as p: the same bytes, or
 * (a v2 store rebuilds the string table) the same profile field by field. */
static int same_profile(const struct prof *p, int enc, const uint8_t *raw, size_t len, char *why,
                        size_t size)
{
	if (len == p->raw_len && memcmp(raw, p->raw, len) == 0)
		return 1;
	if (enc == 1) {
		snprintf(why, size, "not the stored bytes");
		return 0;
	}
	struct pd_pprof_profile *got = NULL;
	const struct pd_pprof_profile *want = prof_decoded(p);
	int same = want && pd_pprof_decode(&got, raw, len, NULL, NULL) == 0 &&
	           pd_pprof_compare(want, got, why, size) == 0;
	if (!want || !got)
		snprintf(why, size, "does not decode");
	pd_pprof_destroy(got);
	return same;
}

/* Fetches profile k of series i from store b with report=proto and checks that
 * the body gunzips to the appended profile. */
static int fetch_one(struct bstore *b, const struct synth *s, size_t i, size_t k, struct pd_buf *q,
                     struct fetch *f)
{
	char sel[160], t[32], why[256] = "";
	struct pd_err err = {0};
	uint8_t *raw = NULL;
	size_t len = 0;
	struct client *c = &b->c;
	synth_selector(s, i, sel, sizeof(sel));
	api_time(synth_time(s, i, k), t, sizeof(t));
	const char *pq =
	    build_query(c, q, "/api/v1/query", "query", sel, "time", t, "report", "proto", NULL);
	if (!pq || client_get(c, pq, 0, 200, f))
		return -1;
	if (pd_gunzip(c->body.data, c->body.len, MAX_FILE_BYTES, &raw, &len, &err) ||
	    !same_profile(synth_prof(s, i, k), b->enc, raw, len, why, sizeof(why))) {
		fprintf(stderr,
		        "api_bench: %s store: %s at %s: the answer is not the stored profile: %s\n",
		        enc_name(b->enc), sel, t, err.msg[0] ? err.msg : why);
		free(raw);
		return -1;
	}
	free(raw);
	return 0;
}

/* Times the fetch of each (series, k) pair through both stores' APIs (one
 * after the other, alternating which first), then in this process what the
 * server does for it: pd_tsdb_select of the exact selector over the lookback
 * window, pd_tsdb_read, and pd_gzip at level 1 (the server's). */
static int fetch_pairs(struct bstore *st, const struct synth *s, const size_t *is, const size_t *ks,
                       size_t n, struct fetch_stats *out)
{
	struct pd_err err = {0};
	struct pd_buf q;
	double *v[NENC], *ref[NENC][3], sum[NENC] = {0}, bytes = 0;
	int rc = -1;
	pd_buf_init(&q, 0);
	memset(v, 0, sizeof(v));
	memset(ref, 0, sizeof(ref));
	for (int e = 0; e < NENC; e++) {
		if (!(v[e] = malloc(n * sizeof(double))))
			goto out;
		for (int r = 0; r < 3; r++)
			if (!(ref[e][r] = malloc(n * sizeof(double))))
				goto out;
	}
	for (size_t j = 0; j < n; j++) {
		for (int x = 0; x < NENC; x++) {
			int e = (j & 1) ? NENC - 1 - x : x;
			struct fetch f;
			if (fetch_one(&st[e], s, is[j], ks[j], &q, &f))
				goto out;
			v[e][j] = f.secs;
			sum[e] += f.secs;
		}
		bytes += (double)synth_prof(s, is[j], ks[j])->raw_len;
	}
	for (size_t j = 0; j < n; j++)
		for (int x = 0; x < NENC; x++) {
			int e = (j & 1) ? NENC - 1 - x : x;
			struct pd_tsdb *db = st[e].db;
			struct pd_storage_label l[3];
			struct pd_storage_matcher m[3];
			struct pd_storage_result *res = NULL;
			uint8_t *raw = NULL, *z = NULL;
			size_t len = 0, zl = 0;
			size_t nl = synth_labels(s, is[j], l);
			int64_t t = synth_time(s, is[j], ks[j]);
			for (size_t i = 0; i < nl; i++)
				m[i] = (struct pd_storage_matcher){l[i].name, pd_storage_match_equal,
				                                l[i].value};
			double a = now();
			if (pd_tsdb_select(db, m, nl, t - PD_API_DEFAULT_LOOKBACK_MS, t, 0, &res,
			                   &err))
				goto fail;
			double b = now();
			pd_storage_result_destroy(res);
			if (pd_tsdb_read(db, l, nl, t, &raw, &len, &err))
				goto fail;
			double d = now();
			if (pd_gzip(raw, len, 1, &z, &zl, &err))
				goto fail;
			double g = now();
			ref[e][0][j] = b - a;
			ref[e][1][j] = d - b;
			ref[e][2][j] = g - d;
			free(raw);
			free(z);
			continue;
		fail:
			fprintf(stderr, "api_bench: in-process fetch (%s): %s\n",
			        enc_name(st[e].enc), err.msg);
			free(raw);
			goto out;
		}
	for (int e = 0; e < NENC; e++) {
		struct fetch_stats *o = &out[e];
		o->n = n;
		o->mean = sum[e] / (double)n;
		o->bytes = bytes / (double)n;
		o->p50 = quantile(v[e], n, 0.50);
		o->p99 = quantile(v[e], n, 0.99);
		o->max = v[e][n - 1];
		o->sel = median(ref[e][0], n);
		o->read = median(ref[e][1], n);
		o->read_p99 = quantile(ref[e][1], n, 0.99);
		o->gzip = median(ref[e][2], n);
	}
	rc = 0;
out:
	for (int e = 0; e < NENC; e++) {
		free(v[e]);
		for (int r = 0; r < 3; r++)
			free(ref[e][r]);
	}
	pd_buf_fini(&q);
	return rc;
}

static void print_fetch_row(const char *what, int enc, const struct fetch_stats *st)
{
	printf("%-24s %3s %4zu %7.2f %7.2f %7.2f %7.2f %9.0f %7.0f %7.0f %8.0f %7.0f\n", what,
	       enc_name(enc), st->n, st->p50 * 1e3, st->p99 * 1e3, st->mean * 1e3, st->max * 1e3,
	       st->bytes, st->sel * 1e6, st->read * 1e6, st->read_p99 * 1e6, st->gzip * 1e6);
}

/* First sample of series i in the head. */
static size_t head_first(const struct synth *s, size_t i, int64_t head_from)
{
	size_t k = 0;
	while (k < s->samples && synth_time(s, i, k) < head_from)
		k++;
	return k;
}

/* What a row of section 3 fetches: series of one kind (NULL: any) from the head
 * or from blocks. */
struct fetch_kind {
	const char *what;
	const struct ptype *ty;
	int blocks;
	size_t n;
	struct fetch_stats st[NENC];
};

static int section_fetch(const struct opts *o, struct bstore *st, const struct synth *s)
{
	size_t n = o->fetches, nbig = n / 5 ? n / 5 : 1;
	int64_t head_from = st[0].si.head_from;
	struct fetch_kind kinds[6] = {
	    {.what = "head, all types", .ty = NULL, .blocks = 0, .n = n},
	    {.what = "blocks, all types", .ty = NULL, .blocks = 1, .n = n},
	    {.what = "head, heap series", .ty = find_type("heap"), .blocks = 0, .n = nbig},
	    {.what = "blocks, heap series", .ty = find_type("heap"), .blocks = 1, .n = nbig},
	    {.what = "head, goapp heap", .ty = &goheap, .blocks = 0, .n = nbig},
	    {.what = "blocks, goapp heap", .ty = &goheap, .blocks = 1, .n = nbig},
	};
	size_t nkinds = goheap.n ? 6 : 4;
	size_t *is = malloc(n * sizeof(*is)), *ks = malloc(n * sizeof(*ks));
	int rc = -1;
	if (!is || !ks)
		goto out;
	for (size_t w = 0; w < nkinds; w++) {
		struct fetch_kind *fk = &kinds[w];
		size_t eligible = 0;
		for (size_t i = 0; i < s->nseries; i++) {
			size_t h = head_first(s, i, head_from);
			eligible += (!fk->ty || s->ty[i] == fk->ty) &&
			            (fk->blocks ? h > 0 : h < s->samples);
		}
		if (!eligible) {
			fprintf(stderr,
			        "api_bench: no series to fetch '%s' from: more --samples or a "
			        "shorter --block-range-min\n",
			        fk->what);
			goto out;
		}
		for (size_t j = 0; j < fk->n; j++) {
			size_t i, h;
			do {
				i = rng() % s->nseries;
				h = head_first(s, i, head_from);
			} while ((fk->ty && s->ty[i] != fk->ty) ||
			         (fk->blocks ? h == 0 : h >= s->samples));
			is[j] = i;
			ks[j] = fk->blocks ? rng() % h : h + rng() % (s->samples - h);
		}
		if (fetch_pairs(st, s, is, ks, fk->n, fk->st))
			goto out;
	}
	/* the HTTP floor: a request that does nothing, on the same connection */
	double floor[200];
	for (size_t j = 0; j < 200; j++) {
		struct fetch f;
		if (client_get(&st[0].c, "/-/healthy", 0, 200, &f))
			goto out;
		floor[j] = f.secs;
	}
	printf("\n3. Single-profile fetch: /api/v1/query?query=<the series' full selector>&time=T\n"
	       "   &report=proto, random (series, T) at a sample's exact time, the same pairs\n"
	       "   from both stores (each pair from one and then the other, alternating which\n"
	       "   first), each answer checked to be the appended profile (v1: the same\n"
	       "   bytes; v2: the same profile, pd_pprof_compare, as v2 rebuilds the string\n"
	       "   table); series of every type, then heap series alone (40 KB raw)%s.\n"
	       "   Each store has its own server and connection. p50..max: through HTTP.\n"
	       "   The last four columns are in this process, for the same profiles, what\n"
	       "   the server does: pd_tsdb_select of the selector over the 5 min lookback\n"
	       "   (median), pd_tsdb_read (median and p99; v1 decompresses the profile's\n"
	       "   group, v2 the chunk's tables and the profile's group and decodes the\n"
	       "   records up to it), pd_gzip at level 1 (the server's; median).\n\n",
	       goheap.n ? ", and\n   heap series of the second corpus (goapp heap)" : "");
	printf("%-24s %3s %4s %7s %7s %7s %7s %9s %7s %7s %8s %7s\n", "from", "enc", "n", "p50 ms",
	       "p99 ms", "mean ms", "max ms", "stored B", "sel us", "read us", "read p99",
	       "gzip us");
	print_rule(107);
	for (size_t w = 0; w < nkinds; w++)
		for (int e = 0; e < NENC; e++)
			print_fetch_row(kinds[w].what, st[e].enc, &kinds[w].st[e]);
	print_rule(107);
	printf("HTTP floor: GET /-/healthy on the same connection, p50 %.3f ms, p99 %.3f ms (200 "
	       "requests)\n",
	       quantile(floor, 200, 0.5) * 1e3, quantile(floor, 200, 0.99) * 1e3);
	printf("\naim: one profile read from a persisted block through the API (report=proto,\n"
	       "     the HTTP figures above), p99 <= %.0f ms\n\n",
	       AIM_FETCH_P99_MS);
	printf("%-24s %10s %10s %10s %10s\n", "from", "v2 p99 ms", "meets", "v1 p99 ms", "meets");
	print_rule(68);
	for (size_t w = 0; w < nkinds; w++) {
		const struct fetch_kind *fk = &kinds[w];
		if (!fk->blocks)
			continue;
		printf("%-24s %10.2f %10s %10.2f %10s\n", fk->what, fk->st[0].p99 * 1e3,
		       yes_no(fk->st[0].p99 * 1e3 <= AIM_FETCH_P99_MS), fk->st[1].p99 * 1e3,
		       yes_no(fk->st[1].p99 * 1e3 <= AIM_FETCH_P99_MS));
	}
	print_rule(68);
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

/* One breakdown run's step times, seconds: the server's merge with library calls. */
struct steps {
	double sel;      /* pd_tsdb_select of the series */
	double store;    /* pd_tsdb_merge, less the time its callback spent in add */
	double add;      /* pd_pprof_merger_add of each profile pd_tsdb_merge gives */
	double finish;   /* pd_pprof_merger_finish */
	double encode;   /* pd_pprof_encode with gzip */
	double pieces;   /* profiles pd_tsdb_merge gave */
	double onebyone; /* the reference: pd_tsdb_read + decode + add of each profile */
};

struct merge_case {
	size_t series, n; /* series index, profiles merged (its first n) */
	size_t head;      /* of which in the head */
	double go_s, pprof_s, pprof_cpu;
	struct {
		double profd_s;
		size_t out_bytes;
		int agree;
		char why[PD_ERR_MSG_MAX + 256];
		size_t types, rows;
		struct steps st; /* medians */
	} e[NENC];
};

struct bd_ctx {
	struct pd_pprof_merger *mg;
	double add;
	size_t pieces, count;
};

static int bd_emit(void *ctx, struct pd_pprof_profile *p, size_t count, int64_t first_t,
                   int64_t last_t, size_t bytes)
{
	struct bd_ctx *b = ctx;
	struct pd_err err = {0};
	(void)first_t;
	(void)last_t;
	(void)bytes;
	double a = now();
	int rc = pd_pprof_merger_add(b->mg, p, &err);
	pd_pprof_destroy(p);
	b->add += now() - a;
	b->pieces++;
	b->count += count;
	if (rc)
		fprintf(stderr, "api_bench: merger_add: %s\n", err.msg);
	return rc;
}

/* The merge of case m with library calls on db, each step timed: what the server
 * does for mode=merge&report=proto, without HTTP (pd_tsdb_select, pd_tsdb_merge
 * whose profiles go to pd_pprof_merger_add, finish, encode with gzip); then the
 * reference, the same profiles merged one by one (pd_tsdb_read, pd_pprof_decode,
 * pd_pprof_merger_add of each), as the server did before pd_tsdb_merge. */
static int merge_breakdown(struct pd_tsdb *db, const struct synth *s, const struct merge_case *m,
                           struct steps *st)
{
	struct pd_err err = {0};
	struct pd_storage_label l[3];
	size_t nl = synth_labels(s, m->series, l);
	struct pd_storage_matcher mt[3];
	struct pd_storage_result *res = NULL;
	struct bd_ctx bc = {0};
	struct pd_pprof_profile *out = NULL;
	uint8_t *enc = NULL;
	size_t enc_len = 0;
	int64_t t0 = synth_time(s, m->series, 0), t1 = synth_time(s, m->series, m->n - 1);
	int rc = -1;
	for (size_t i = 0; i < nl; i++)
		mt[i] = (struct pd_storage_matcher){l[i].name, pd_storage_match_equal, l[i].value};
	double a = now();
	if (pd_tsdb_select(db, mt, nl, t0, t1, 0, &res, &err))
		goto out;
	st->sel = now() - a;
	if (res->nseries != 1 || res->series[0].nts != m->n) {
		pd_err_set(&err, PD_EINVAL, "select found %zu series", res->nseries);
		goto out;
	}
	if (pd_pprof_merger_create(&bc.mg, &err))
		goto out;
	a = now();
	if (pd_tsdb_merge(db, res->series[0].labels, res->series[0].nlabels, t0, t1, bd_emit, &bc,
	                  &err))
		goto out;
	st->store = now() - a - bc.add;
	st->add = bc.add;
	st->pieces = (double)bc.pieces;
	if (bc.count != m->n) {
		pd_err_set(&err, PD_EINVAL, "pd_tsdb_merge gave %zu profiles, not %zu", bc.count,
		           m->n);
		goto out;
	}
	a = now();
	rc = pd_pprof_merger_finish(bc.mg, &out, &err);
	bc.mg = NULL;
	if (rc)
		goto out;
	rc = -1;
	st->finish = now() - a;
	a = now();
	if (pd_pprof_encode(out, 1, &enc, &enc_len, &err))
		goto out;
	st->encode = now() - a;

	/* the reference: one profile at a time */
	if (pd_pprof_merger_create(&bc.mg, &err))
		goto out;
	a = now();
	for (size_t k = 0; k < m->n; k++) {
		uint8_t *raw = NULL;
		size_t len = 0;
		struct pd_pprof_profile *p = NULL;
		if (pd_tsdb_read(db, l, nl, res->series[0].ts[k], &raw, &len, &err))
			goto out;
		int drc = pd_pprof_decode(&p, raw, len, NULL, &err);
		free(raw);
		if (drc)
			goto out;
		drc = pd_pprof_merger_add(bc.mg, p, &err);
		pd_pprof_destroy(p);
		if (drc)
			goto out;
	}
	st->onebyone = now() - a;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "api_bench: merge breakdown: %s\n", err.msg);
	pd_pprof_merger_destroy(bc.mg);
	pd_pprof_destroy(out);
	free(enc);
	pd_storage_result_destroy(res);
	return rc;
}

/* Dumps the first n profiles of series i through store b's API as
 * dir/<k>.pb.gz (the files go tool pprof reads); names into files[k]
 * (malloc'd). */
static int dump_series(struct bstore *b, const struct synth *s, size_t i, size_t n, const char *dir,
                       char **files)
{
	struct pd_buf q;
	int rc = -1;
	pd_buf_init(&q, 0);
	for (size_t k = 0; k < n; k++) {
		struct fetch f;
		char path[PATH_MAX + 32];
		if (fetch_one(b, s, i, k, &q, &f))
			goto out;
		/* the body was checked against the stored profile: write it as served */
		snprintf(path, sizeof(path), "%s/%04zu.pb.gz", dir, k);
		FILE *fp = fopen(path, "wb");
		if (!fp) {
			fprintf(stderr, "api_bench: %s: %s\n", path, strerror(errno));
			goto out;
		}
		if (fwrite(b->c.body.data, 1, b->c.body.len, fp) != b->c.body.len) {
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

static double step_median(struct steps *v, size_t n, size_t off)
{
	double x[64];
	for (size_t i = 0; i < n; i++)
		x[i] = *(const double *)((const char *)&v[i] + off);
	return median(x, n);
}

static int run_merge_case(const struct opts *o, struct bstore *st, const struct synth *s,
                          char **files, const char *work, const char *gotool, struct merge_case *m)
{
	struct pd_err err = {0};
	struct pd_buf q;
	char sel[160], t0[32], t1[32], maxp[32], out_path[PATH_MAX], err_path[PATH_MAX];
	struct pd_pprof_profile *mine[NENC] = {NULL}, *theirs = NULL;
	char **argv_go = NULL, **argv_pprof = NULL;
	int rc = -1;
	pd_buf_init(&q, 0);
	m->head = 0;
	for (size_t k = 0; k < m->n; k++)
		m->head += synth_time(s, m->series, k) >= st[0].si.head_from;
	synth_selector(s, m->series, sel, sizeof(sel));
	api_time(synth_time(s, m->series, 0), t0, sizeof(t0));
	api_time(synth_time(s, m->series, m->n - 1), t1, sizeof(t1));
	snprintf(maxp, sizeof(maxp), "%zu", m->n);

	/* check that each merge takes exactly n profiles (report=meta says how many) */
	char want[64];
	snprintf(want, sizeof(want), "\"profileCount\":%zu,", m->n);
	struct fetch f;
	for (int e = 0; e < NENC; e++) {
		struct client *c = &st[e].c;
		const char *pq = build_query(c, &q, "/api/v1/query", "query", sel, "mode", "merge",
		                             "start", t0, "end", t1, "max_profiles", maxp, NULL);
		if (!pq || client_get(c, pq, 0, 200, &f))
			goto out;
		if (!find_bytes(c->body.data, c->body.len, want) ||
		    find_bytes(c->body.data, c->body.len, "\"warnings\"")) {
			fprintf(stderr,
			        "api_bench: %s store: the merge of %s did not take %zu "
			        "profiles: %.*s\n",
			        enc_name(st[e].enc), sel, m->n,
			        (int)(c->body.len < 600 ? c->body.len : 600),
			        (const char *)c->body.data);
			goto out;
		}
	}
	const char *pq =
	    build_query(&st[0].c, &q, "/api/v1/query", "query", sel, "mode", "merge", "start", t0,
	                "end", t1, "max_profiles", maxp, "report", "proto", NULL);
	if (!pq)
		goto out;
	for (int e = 0; e < NENC; e++)
		if (client_get(&st[e].c, pq, 0, 200, &f)) /* warm-up */
			goto out;
	/* each HTTP run followed by the same merge with library calls, the stores
	 * alternating which goes first, so that all meet the same load */
	double v[NENC][64];
	struct steps bd[NENC][64];
	for (int r = 0; r < o->runs; r++)
		for (int x = 0; x < NENC; x++) {
			int e = (r & 1) ? NENC - 1 - x : x;
			if (client_get(&st[e].c, pq, 0, 200, &f) ||
			    merge_breakdown(st[e].db, s, m, &bd[e][r]))
				goto out;
			v[e][r] = f.secs;
		}
	for (int e = 0; e < NENC; e++) {
		struct steps *md = &m->e[e].st;
		size_t n = (size_t)o->runs;
		md->sel = step_median(bd[e], n, offsetof(struct steps, sel));
		md->store = step_median(bd[e], n, offsetof(struct steps, store));
		md->add = step_median(bd[e], n, offsetof(struct steps, add));
		md->finish = step_median(bd[e], n, offsetof(struct steps, finish));
		md->encode = step_median(bd[e], n, offsetof(struct steps, encode));
		md->pieces = step_median(bd[e], n, offsetof(struct steps, pieces));
		md->onebyone = step_median(bd[e], n, offsetof(struct steps, onebyone));
		m->e[e].profd_s = median(v[e], n);
		/* the last answer of this store's client is its merge */
		struct client *c = &st[e].c;
		m->e[e].out_bytes = c->body.len;
		if (pd_pprof_decode(&mine[e], c->body.data, c->body.len, NULL, &err)) {
			fprintf(stderr, "api_bench: profd's merge (%s) does not decode: %s\n",
			        enc_name(st[e].enc), err.msg);
			goto out;
		}
	}

	/* go tool pprof -proto F... > out, and the pprof binary directly */
	char *go_pre[] = {(char *)o->go, "tool", "pprof"}, *pprof_pre[] = {(char *)gotool};
	argv_go = proto_argv(go_pre, 3, files, m->n);
	argv_pprof = proto_argv(pprof_pre, 1, files, m->n);
	if (!argv_go || !argv_pprof)
		goto out;
	if (snprintf(out_path, sizeof(out_path), "%s/go-merge.pb.gz", work) >=
	        (int)sizeof(out_path) ||
	    snprintf(err_path, sizeof(err_path), "%s/go-merge.err", work) >= (int)sizeof(err_path))
		goto out;
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
	for (int e = 0; e < NENC; e++) {
		m->e[e].why[0] = 0;
		m->e[e].agree = tops_agree(mine[e], theirs, &m->e[e].types, &m->e[e].rows,
		                           m->e[e].why, sizeof(m->e[e].why)) == 0;
	}
	rc = 0;
out:
	for (int e = 0; e < NENC; e++)
		pd_pprof_destroy(mine[e]);
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
	if (snprintf(out, size, "%s/pprof", dir) >= (int)size)
		return -1;
	return access(out, X_OK);
}

/* "merge N heap" and the like: the case's name in the tables. */
static void case_name(const struct synth *s, const struct merge_case *m, char *out, size_t size)
{
	snprintf(out, size, "merge %zu %s", m->n, s->ty[m->series]->show);
}

static int section_merge(const struct opts *o, struct bstore *st, const struct synth *s,
                         const char *work)
{
	char gotool[PATH_MAX], path[PATH_MAX], out_path[PATH_MAX], err_path[PATH_MAX];
	struct merge_case cases[6];
	size_t ncases = 0, nmax = s->samples < 1000 ? s->samples : 1000;
	size_t nsmall = nmax < 100 ? nmax : 100;
	char **files[3] = {NULL, NULL, NULL};
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
	if (snprintf(path, sizeof(path), "%s/none", work) >= (int)sizeof(path))
		return -1;
	setenv("PPROF_BINARY_PATH", path, 1);
	setenv("PPROF_TMPDIR", work, 1);

	/* one heap series, one heap series of the second corpus, one cpu series:
	 * their first nmax profiles, dumped from the v1 store (the bytes appended) */
	size_t pick[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
	for (size_t i = 0; i < s->nseries; i++) {
		int w = s->ty[i] == &goheap                  ? 1
		        : s->ty[i] == find_type("heap")      ? 0
		        : strcmp(s->ty[i]->name, "cpu") == 0 ? 2
		                                             : -1;
		if (w >= 0 && pick[w] == SIZE_MAX)
			pick[w] = i;
	}
	double dump_s = 0;
	size_t dumped = 0;
	for (int w = 0; w < 3; w++) {
		if (pick[w] == SIZE_MAX)
			continue;
		if (snprintf(path, sizeof(path), "%s/files-%d", work, w) >= (int)sizeof(path) ||
		    mkdir(path, 0755) || !(files[w] = calloc(nmax, sizeof(char *))))
			goto out;
		double a = now();
		if (dump_series(&st[1], s, pick[w], nmax, path, files[w]))
			goto out;
		dump_s += now() - a;
		dumped += nmax;
		cases[ncases++] = (struct merge_case){.series = pick[w], .n = nsmall};
		if (nmax != nsmall)
			cases[ncases++] = (struct merge_case){.series = pick[w], .n = nmax};
	}
	/* go tool pprof's start-up: the same command on one small file */
	{
		char *one = files[2] ? files[2][0] : files[0][0];
		char *a_go[] = {(char *)o->go, "tool", "pprof", "-proto", one, NULL};
		char *a_pp[] = {gotool, "-proto", one, NULL};
		double d;
		if (snprintf(out_path, sizeof(out_path), "%s/one.pb.gz", work) >=
		        (int)sizeof(out_path) ||
		    snprintf(err_path, sizeof(err_path), "%s/one.err", work) >=
		        (int)sizeof(err_path) ||
		    run_process(a_go, out_path, err_path, &d, NULL) ||
		    run_process(a_pp, out_path, err_path, &d, NULL))
			goto out;
		for (int r = 0; r < o->runs; r++)
			if (run_process(a_go, out_path, err_path, &start_go[r], NULL) ||
			    run_process(a_pp, out_path, err_path, &start_pprof[r], NULL))
				goto out;
	}
	for (size_t j = 0; j < ncases; j++) {
		int w = cases[j].series == pick[0] ? 0 : cases[j].series == pick[1] ? 1 : 2;
		if (run_merge_case(o, st, s, files[w], work, gotool, &cases[j]))
			goto out;
	}

	printf(
	    "\n4. Merge of the first N profiles of one series: profd = /api/v1/query?mode=merge\n"
	    "   &start&end&max_profiles=N&report=proto (median of %d after a warm-up), on\n"
	    "   the v2 store and on the v1 store (runs alternating between them); the\n"
	    "   server merges each series through pd_tsdb_merge: a v2 chunk's profiles\n"
	    "   added up by stack id once per chunk, a v1 chunk's profiles decoded one by\n"
	    "   one. go tool = `go tool pprof -proto F1..FN > out` as a whole process, on\n"
	    "   the same profiles dumped through the v1 store's API as .pb.gz files (the\n"
	    "   bytes appended; median of %d after a warm-up); pprof = the same with\n"
	    "   $(go env GOTOOLDIR)/pprof, without the go command's start-up. go/v2 etc. =\n"
	    "   go's time / profd's. pprof CPU = its user + system time / its wall time\n"
	    "   (100%%: one core's worth, as profd's merge on the request's thread; more:\n"
	    "   its other threads, Go's garbage collector, used a second core).\n"
	    "   head = profiles from the head, the rest from blocks. out KB = v2's merged\n"
	    "   .pb.gz. top tables = pd_pprof_top of each store's merged proto against go's\n"
	    "   output, row for row (name, flat, cum, inline) for every sample type.\n\n",
	    o->runs, o->go_runs);
	printf("%-22s %4s %8s %8s %6s %10s %6s %6s %9s %7s %6s %6s  %s\n", "case", "head", "v2 ms",
	       "v1 ms", "v1/v2", "go tool ms", "go/v2", "go/v1", "pprof ms", "pp/v2", "pp CPU",
	       "out KB", "top tables (v2, v1 vs go)");
	print_rule(140);
	for (size_t j = 0; j < ncases; j++) {
		const struct merge_case *m = &cases[j];
		char name[48], agree[96];
		case_name(s, m, name, sizeof(name));
		if (m->e[0].agree && m->e[1].agree)
			snprintf(agree, sizeof(agree), "both agree (%zu types, %zu rows)",
			         m->e[0].types, m->e[0].rows);
		else
			snprintf(agree, sizeof(agree), "v2 %s, v1 %s",
			         m->e[0].agree ? "agrees" : "DIFFERS",
			         m->e[1].agree ? "agrees" : "DIFFERS");
		double p2 = m->e[0].profd_s, p1 = m->e[1].profd_s;
		printf("%-22s %4zu %8.1f %8.1f %5.1fx %10.1f %5.1fx %5.1fx %9.1f %6.1fx %5.0f%% "
		       "%6.1f  %s\n",
		       name, m->head, p2 * 1e3, p1 * 1e3, p1 / p2, m->go_s * 1e3, m->go_s / p2,
		       m->go_s / p1, m->pprof_s * 1e3, m->pprof_s / p2,
		       100 * m->pprof_cpu / m->pprof_s, (double)m->e[0].out_bytes / 1024, agree);
	}
	print_rule(140);
	printf("go tool pprof start-up (`-proto` of one %s file): go tool %.1f ms, pprof %.1f ms;\n"
	       "dumping the %zu files through the API took %.1f s\n",
	       files[2] ? "cpu" : "heap", median(start_go, (size_t)o->runs) * 1e3,
	       median(start_pprof, (size_t)o->runs) * 1e3, dumped, dump_s);
	for (size_t j = 0; j < ncases; j++)
		for (int e = 0; e < NENC; e++)
			if (!cases[j].e[e].agree) {
				char name[48];
				case_name(s, &cases[j], name, sizeof(name));
				printf("DIFFER: %s, %s store: %s\n", name, enc_name(st[e].enc),
				       cases[j].e[e].why);
			}

	printf("\naims: a merge through the API at least %.0fx faster than `go tool pprof -proto`\n"
	       "      for 1,000 heap profiles, at least %.0fx for 100 (ratio = go tool ms /\n"
	       "      profd ms, from the table above; pp = the stricter ratio against the\n"
	       "      pprof binary run directly, for the v2 store)\n\n",
	       AIM_MERGE_1000, AIM_MERGE_100);
	printf("%-22s %5s %10s %7s %10s %7s %8s\n", "case", "aim", "v2 ratio", "meets", "v1 ratio",
	       "meets", "pp/v2");
	print_rule(75);
	for (size_t j = 0; j < ncases; j++) {
		const struct merge_case *m = &cases[j];
		if (strcmp(s->ty[m->series]->name, "heap") != 0 || (m->n != 1000 && m->n != 100))
			continue;
		char name[48];
		double aim = m->n == 1000 ? AIM_MERGE_1000 : AIM_MERGE_100;
		double r2 = m->go_s / m->e[0].profd_s, r1 = m->go_s / m->e[1].profd_s;
		case_name(s, m, name, sizeof(name));
		printf("%-22s %4.0fx %9.1fx %7s %9.1fx %7s %7.1fx\n", name, aim, r2,
		       yes_no(r2 >= aim), r1, yes_no(r1 >= aim), m->pprof_s / m->e[0].profd_s);
	}
	print_rule(75);

	printf("\n   The same merges with library calls in this process, each run right after\n"
	       "   an HTTP run on the same store, medians of each step: select =\n"
	       "   pd_tsdb_select of the series; store = pd_tsdb_merge (reading and\n"
	       "   decompressing chunks, decoding, adding up by stack id), less add =\n"
	       "   pd_pprof_merger_add of the profiles it gives (pieces: one per v2 chunk,\n"
	       "   one per profile for v1); finish = pd_pprof_merger_finish; encode =\n"
	       "   pd_pprof_encode with gzip. 1-by-1 = the reference: the same profiles read\n"
	       "   with pd_tsdb_read, decoded and added one at a time (what a merge costs\n"
	       "   without pd_tsdb_merge); x = 1-by-1 / (store + add).\n\n");
	printf("%-22s %3s %7s %8s %8s %7s %7s %8s %11s %7s %9s %6s\n", "case", "enc", "select",
	       "store", "add", "finish", "encode", "sum ms", "HTTP - sum", "pieces", "1-by-1 ms",
	       "x");
	print_rule(112);
	for (size_t j = 0; j < ncases; j++)
		for (int e = 0; e < NENC; e++) {
			const struct merge_case *m = &cases[j];
			const struct steps *t = &m->e[e].st;
			char name[48];
			double sum = t->sel + t->store + t->add + t->finish + t->encode;
			case_name(s, m, name, sizeof(name));
			printf("%-22s %3s %7.1f %8.1f %8.1f %7.1f %7.1f %8.1f %11.1f %7.0f %9.1f "
			       "%5.1fx\n",
			       name, enc_name(st[e].enc), t->sel * 1e3, t->store * 1e3,
			       t->add * 1e3, t->finish * 1e3, t->encode * 1e3, sum * 1e3,
			       (m->e[e].profd_s - sum) * 1e3, t->pieces, t->onebyone * 1e3,
			       t->onebyone / (t->store + t->add));
		}
	print_rule(112);
	printf("(all in ms; `store` and `add` split one pd_tsdb_merge call)\n");
	rc = 0;
	for (size_t j = 0; j < ncases; j++)
		for (int e = 0; e < NENC; e++)
			if (!cases[j].e[e].agree)
				rc = 1;
out:
	for (int w = 0; w < 3; w++) {
		for (size_t k = 0; files[w] && k < nmax; k++)
			free(files[w][k]);
		free(files[w]);
	}
	return rc;
}

/* ---- main ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: api_bench --corpus DIR [--corpus2 DIR] [--dir DIR] [--go CMD] [--series N]\n"
	       "                 [--samples N] [--fetches N] [--runs N] [--go-runs N]\n"
	       "                 [--block-range-min M] [--sections LIST]\n"
	       "  --corpus DIR        per-type folders of 1.pb.gz..N.pb.gz (default $PD_CORPUS)\n"
	       "  --corpus2 DIR       a second corpus of the same layout whose heap profiles\n"
	       "                      join the stores and the merges (bench/capture.sh makes\n"
	       "                      one; default $PD_CORPUS2)\n"
	       "  --dir DIR           where the temporary stores and files go (default $TMPDIR\n"
	       "                      or /tmp)\n"
	       "  --go CMD            the go command of the reference (default $GO or go)\n"
	       "  --series, --samples each store (default 1000 x 1000)\n"
	       "  --fetches N         random single fetches from the head and from blocks (500)\n"
	       "  --runs N            timed runs of query_range and profd's merges (5)\n"
	       "  --go-runs N         timed runs of go tool pprof per merge (3)\n"
	       "  --block-range-min M the stores' block range in minutes (60)\n"
	       "  --sections LIST     which of range, fetch, merge to run, comma-separated\n"
	       "                      (default all; the stores are always filled)\n");
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	o.corpus = getenv("PD_CORPUS");
	o.corpus2 = getenv("PD_CORPUS2");
	if (o.corpus2 && !*o.corpus2)
		o.corpus2 = NULL;
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
		else if (strcmp(a, "--corpus2") == 0)
			o.corpus2 = *v ? v : NULL;
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
		else if (strcmp(a, "--sections") == 0)
			o.sections = v;
		else {
			usage(stderr);
			return 2;
		}
	}
	if (o.sections) {
		/* every name one of the three */
		char *copy = strdup(o.sections), *save = NULL;
		int ok = copy != NULL && *o.sections;
		for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && ok;
		     t = strtok_r(NULL, ",", &save))
			ok = strcmp(t, "range") == 0 || strcmp(t, "fetch") == 0 ||
			     strcmp(t, "merge") == 0;
		free(copy);
		if (!ok) {
			usage(stderr);
			return 2;
		}
	}
	/* at least one heap and one cpu series */
	if (!o.corpus || o.series < 3 || o.series > 10000 || o.samples < 2 || o.samples > 100000 ||
	    o.fetches == 0 || o.runs < 1 || o.runs > 64 || o.go_runs < 1 || o.go_runs > 64 ||
	    o.block_range_ms <= 0) {
		usage(stderr);
		return 2;
	}
	double start = now();
	char work[PATH_MAX];
	struct pd_err err = {0};
	struct bstore st[NENC];
	struct synth s = {0};
	double raw_bytes = 0;
	int rc = 1;
	work[0] = 0;
	memset(st, 0, sizeof(st));
	if (load_corpus(&o) || synth_init(&s, o.series, o.samples))
		goto out;
	snprintf(work, sizeof(work), "%s/pd-api-bench-XXXXXX", o.dir);
	if (!mkdtemp(work)) {
		fprintf(stderr, "api_bench: mkdtemp %s: %s\n", work, strerror(errno));
		work[0] = 0;
		goto out;
	}
	for (int e = 0; e < NENC; e++) {
		struct pd_tsdb_opts to;
		st[e].enc = encodings[e];
		snprintf(st[e].dir, sizeof(st[e].dir), "%s/store-%s", work, enc_name(st[e].enc));
		pd_tsdb_opts_init(&to);
		to.retention_ms = -1;
		to.block_range_ms = o.block_range_ms;
		to.wal_sync = 1;
		to.value_encoding = st[e].enc;
		if (pd_tsdb_open(&st[e].db, st[e].dir, &to, &err)) {
			fprintf(stderr, "api_bench: open %s: %s\n", st[e].dir, err.msg);
			goto out;
		}
	}
	printf("profd api bench: corpus %s%s%s, work in %s\n", o.corpus, o.corpus2 ? " and " : "",
	       o.corpus2 ? o.corpus2 : "", work);
	fflush(stdout);
	if (stores_fill(&o, st, &s, &raw_bytes))
		goto out;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (int e = 0; e < NENC; e++) {
		struct pd_api_opts ao;
		pd_api_opts_init(&ao);
		ao.listen_address = "127.0.0.1:0";
		ao.db = pd_tsdb_storage(st[e].db);
		if (ao.max_merge_profiles < o.samples)
			ao.max_merge_profiles = o.samples;
		if (pd_api_start(&st[e].srv, &ao, &err)) {
			fprintf(stderr, "api_bench: starting the server: %s\n", err.msg);
			goto out;
		}
		if (client_init(&st[e].c, pd_api_port(st[e].srv))) {
			fprintf(stderr, "api_bench: curl_easy_init failed\n");
			goto out;
		}
	}
	printf("servers: pd_api_start on %s (v2) and %s\n"
	       "(v1) (libmicrohttpd, a thread per connection); client: libcurl %s, one\n"
	       "easy handle per server, so one kept-alive connection each\n",
	       st[0].c.base, st[1].c.base, curl_version_info(CURLVERSION_NOW)->version);
	fflush(stdout);
	if (section_on(&o, "range") && section_range(&o, &st[0].c, st[0].db, &s))
		goto out;
	fflush(stdout);
	if (section_on(&o, "fetch") && section_fetch(&o, st, &s))
		goto out;
	fflush(stdout);
	int mrc = section_on(&o, "merge") ? section_merge(&o, st, &s, work) : 0;
	if (mrc < 0)
		goto out;
	printf("\ntotal %.0f s\n", now() - start);
	rc = mrc ? 1 : 0;
out:
	fflush(stdout);
	for (int e = 0; e < NENC; e++) {
		client_fini(&st[e].c);
		pd_api_stop(st[e].srv);
		pd_tsdb_close(st[e].db);
	}
	if (work[0])
		rm_rf(work);
	synth_fini(&s);
	free_corpus();
	curl_global_cleanup();
	return rc;
}
