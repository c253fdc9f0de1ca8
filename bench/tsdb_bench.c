/* tsdb_bench.c: the figures the storage issue asks for, each beside a reference
 * computed in the same process on the same input: bytes per profile of the store
 * with value encodings 1 and 2 against gzip per file, conprof's zstd groups of 12
 * and the whole series as one zstd frame, per corpus (the Prometheus corpus and
 * optionally a second one, captured by bench/capture.sh), a sweep of the value
 * group size and zstd level (and of encoding 2's group size), the rate of listing
 * timestamps against reading profiles (head and blocks), append throughput
 * against a plain file append, head memory per series, and commits per second
 * from 1 to 16 threads committing at once with an fsync per commit promised,
 * against a plain file fsynced after every write, and values over time (profile
 * totals) against the timestamps-only listing. bench/tsdb.sh runs it;
 * bench/README.md reads the output.
 *
 * usage: tsdb_bench --corpus DIR [--corpus2 DIR] [--dir DIR] [--section N] [--series N]
 *                   [--samples N] [--read-seconds S] [--commit-seconds S] */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define HAVE_MALLINFO2 1
#endif

#include "profd/chunkenc.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "profd/util.h"

#define MAX_FILES 240 /* profiles per type read from a corpus */
#define MAX_FILE_BYTES ((size_t)64 << 20)
#define T0_MS 1700000000000LL /* start of the synthetic series */
#define SCRAPE_MS 15000
#define BATCH 100 /* series per commit, as one scrape round commits */

static const char *const all_types[] = {"allocs", "block", "cpu",         "goroutine",
                                        "heap",   "mutex", "threadcreate"};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))
/* the payloads of the many-series sections: every type but the 40 KB heap and
 * allocs profiles, so that a million samples stay within the time budget */
static const char *const small_types[] = {"cpu", "goroutine", "mutex", "block", "threadcreate"};
#define NSMALL (sizeof(small_types) / sizeof(small_types[0]))

struct prof {
	uint8_t *gz; /* the file as served */
	size_t gz_len;
	uint8_t *raw; /* gunzipped: what the store keeps */
	size_t raw_len;
	int64_t t; /* time_nanos / 1e6 */
};

struct ptype {
	const char *name;
	struct prof p[MAX_FILES];
	size_t n;
};

static struct ptype types[NTYPES];
static struct ptype types2[NTYPES]; /* the second corpus (--corpus2), sections 1 and 2 */

struct opts {
	const char *corpus;
	const char *corpus2; /* NULL: none */
	const char *dir;
	int section; /* 0: all */
	size_t series, samples;
	double read_seconds;
	double commit_seconds; /* length of each run of section 5 */
};

/* ---- small helpers ------------------------------------------------------------ */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of the calling thread (user + system, page faults included). */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

/* A new empty directory under parent; path receives its name. */
static int make_tmpdir(const char *parent, const char *tag, char *path, size_t size)
{
	snprintf(path, size, "%s/pd-bench-%s-XXXXXX", parent, tag);
	if (!mkdtemp(path)) {
		fprintf(stderr, "tsdb_bench: mkdtemp %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static struct ptype *find_type(const char *name)
{
	for (size_t i = 0; i < NTYPES; i++)
		if (strcmp(types[i].name, name) == 0 && types[i].n)
			return &types[i];
	return NULL;
}

/* Resident set size in bytes, from /proc/self/statm. */
static long long rss_bytes(void)
{
	long long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld %lld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* Gives memory freed by earlier sections back to the system, so that RSS grows
 * again from here and every run starts from the same state. */
static void trim_heap(void)
{
#ifdef HAVE_MALLINFO2
	malloc_trim(0);
#endif
}

/* Bytes malloc has handed out and not got back (-1 when unknown). */
static long long heap_bytes(void)
{
#ifdef HAVE_MALLINFO2
	struct mallinfo2 m = mallinfo2();
	return (long long)(m.uordblks + m.hblkhd);
#else
	return -1;
#endif
}

static int prof_cmp(const void *a, const void *b)
{
	const struct prof *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void print_rule(int width)
{
	for (int i = 0; i < width; i++)
		putchar('-');
	putchar('\n');
}

static int type_labels(struct pd_storage_label *l, const char *type, const char *instance)
{
	/* sorted by name */
	l[0] = (struct pd_storage_label){"__name__", type};
	l[1] = (struct pd_storage_label){"instance", instance};
	l[2] = (struct pd_storage_label){"job", "bench"};
	return 3;
}

/* ---- the corpus -------------------------------------------------------------- */

/* Loads <corpus>/<type>/1..MAX_FILES.pb.gz (from 1 up to the first missing) of
 * every type present into tys, gunzipped and sorted by time_nanos (as `profd
 * tsdb import` does). */
static int load_corpus(struct ptype *tys, const char *corpus)
{
	struct pd_err err = {0};
	size_t total = 0;
	for (size_t i = 0; i < NTYPES; i++) {
		struct ptype *ty = &tys[i];
		ty->name = all_types[i];
		for (size_t k = 0; k < MAX_FILES; k++) {
			char path[PATH_MAX];
			struct prof *p = &ty->p[ty->n];
			struct pd_pprof_profile *pp = NULL;
			snprintf(path, sizeof(path), "%s/%s/%zu.pb.gz", corpus, ty->name, k + 1);
			if (access(path, R_OK) != 0)
				break;
			if (pd_file_read(path, MAX_FILE_BYTES, &p->gz, &p->gz_len, &err) ||
			    pd_pprof_decode(&pp, p->gz, p->gz_len, NULL, &err) ||
			    pd_gunzip(p->gz, p->gz_len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED, &p->raw,
			              &p->raw_len, &err)) {
				fprintf(stderr, "tsdb_bench: %s: %s\n", path, err.msg);
				pd_pprof_destroy(pp);
				free(p->gz);
				free(p->raw);
				p->gz = p->raw = NULL;
				return -1;
			}
			p->t = pd_pprof_time_nanos(pp) / 1000000;
			pd_pprof_destroy(pp);
			ty->n++;
		}
		qsort(ty->p, ty->n, sizeof(ty->p[0]), prof_cmp);
		/* the store refuses two samples of a series in one millisecond */
		for (size_t k = 1; k < ty->n; k++)
			if (ty->p[k].t <= ty->p[k - 1].t)
				ty->p[k].t = ty->p[k - 1].t + 1;
		total += ty->n;
	}
	if (!total) {
		fprintf(stderr, "tsdb_bench: no profiles in %s/<type>/N.pb.gz\n", corpus);
		return -1;
	}
	return 0;
}

static void free_corpus(struct ptype *tys)
{
	for (size_t i = 0; i < NTYPES; i++)
		for (size_t k = 0; k < tys[i].n; k++) {
			free(tys[i].p[k].gz);
			free(tys[i].p[k].raw);
		}
}

/* ---- 1. bytes per profile ------------------------------------------------------ */

static size_t put_uvarint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* conprof's value encoding reproduced: the uncompressed profiles of a series in
 * groups of `group`, each group one zstd frame at `level`; the group is the
 * profiles back to back, each after its length as a varint. Returns the bytes of
 * all frames, 0 on failure. */
static size_t zstd_groups(const struct ptype *ty, size_t group, int level)
{
	size_t total = 0;
	for (size_t g = 0; g < ty->n; g += group) {
		size_t end = g + group < ty->n ? g + group : ty->n, raw = 0, off = 0;
		for (size_t k = g; k < end; k++)
			raw += ty->p[k].raw_len + 10;
		uint8_t *buf = malloc(raw);
		size_t bound = ZSTD_compressBound(raw);
		uint8_t *dst = malloc(bound);
		if (!buf || !dst) {
			free(buf);
			free(dst);
			return 0;
		}
		for (size_t k = g; k < end; k++) {
			off += put_uvarint(buf + off, ty->p[k].raw_len);
			memcpy(buf + off, ty->p[k].raw, ty->p[k].raw_len);
			off += ty->p[k].raw_len;
		}
		size_t n = ZSTD_compress(dst, bound, buf, off, level);
		free(buf);
		free(dst);
		if (ZSTD_isError(n))
			return 0;
		total += n;
	}
	return total;
}

struct store_size {
	uint64_t samples, ts_bytes, value_bytes, size;
	size_t blocks;
};

/* Imports a type's profiles as one series the way `profd tsdb import` does (no
 * WAL, one commit per profile, flush all) into a fresh store whose new value
 * chunks have the given encoding (0: the default), and sums its blocks. */
static int import_type(const struct opts *o, const struct ptype *ty, int encoding,
                       struct store_size *out)
{
	struct pd_err err = {0};
	struct pd_tsdb *db = NULL;
	struct pd_tsdb_opts to;
	struct pd_storage_block_info *b = NULL;
	struct pd_storage_label l[3];
	char dir[PATH_MAX];
	size_t nb = 0;
	int rc = -1;
	memset(out, 0, sizeof(*out));
	if (make_tmpdir(o->dir, "import", dir, sizeof(dir)))
		return -1;
	pd_tsdb_opts_init(&to);
	to.wal_disabled = 1;
	to.retention_ms = -1;
	to.value_encoding = encoding;
	if (pd_tsdb_open(&db, dir, &to, &err))
		goto fail;
	size_t nl = (size_t)type_labels(l, ty->name, "corpus:6060");
	for (size_t k = 0; k < ty->n; k++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		if (!a) {
			pd_err_set(&err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		if (pd_tsdb_append(a, l, nl, ty->p[k].t, ty->p[k].raw, ty->p[k].raw_len, &err)) {
			pd_tsdb_rollback(a);
			goto fail;
		}
		if (pd_tsdb_commit(a, &err))
			goto fail;
	}
	if (pd_tsdb_flush(db, 1, &err) || pd_tsdb_blocks(db, &b, &nb, &err))
		goto fail;
	for (size_t i = 0; i < nb; i++) {
		out->samples += b[i].samples;
		out->ts_bytes += b[i].ts_bytes;
		out->value_bytes += b[i].value_bytes;
		out->size += b[i].size;
	}
	out->blocks = nb;
	if (out->samples != ty->n) {
		pd_err_set(&err, PD_EINVAL, "blocks hold %llu samples, %zu were imported",
		           (unsigned long long)out->samples, ty->n);
		goto fail;
	}
	rc = 0;
fail:
	if (rc)
		fprintf(stderr, "tsdb_bench: import %s (value encoding %d): %s\n", ty->name,
		        encoding, err.msg);
	free(b);
	pd_tsdb_close(db);
	rm_rf(dir);
	return rc;
}

/* The aims of the storage issue for encoding 2, per profile type. */
#define AIM_VS_CONPROF 0.25 /* v2 <= 0.25x conprof's design */
#define AIM_VS_GZIP 0.10    /* v2 <= 0.10x the gzip files */
/* and v2 < the whole series as one zstd frame at level 3 */

/* Section 1's byte counts of one type, or summed over a corpus. */
struct size_row {
	size_t n; /* profiles */
	double raw, gz, cp, zall;
	double v1, v2;   /* value + timestamp chunk bytes */
	double v2_val;   /* value chunk bytes alone */
	double v2_block; /* whole block directories */
	size_t blocks;
};

static void size_row_add(struct size_row *sum, const struct size_row *r)
{
	sum->n += r->n;
	sum->raw += r->raw;
	sum->gz += r->gz;
	sum->cp += r->cp;
	sum->zall += r->zall;
	sum->v1 += r->v1;
	sum->v2 += r->v2;
	sum->v2_val += r->v2_val;
	sum->v2_block += r->v2_block;
}

static void print_size_row(const char *name, const struct size_row *r, int total)
{
	double n = (double)r->n;
	char blocks[16] = "";
	if (!total)
		snprintf(blocks, sizeof(blocks), "%zu", r->blocks);
	printf(
	    "%-13s %4zu %8.0f %8.0f %9.0f %10.0f %8.1f %8.1f %8.0f %6s %10.3f %8.3f %8.3f %7.3f\n",
	    name, r->n, r->raw / n, r->gz / n, r->cp / n, r->zall / n, r->v1 / n, r->v2 / n,
	    r->v2_block / n, blocks, r->v2 / r->cp, r->v2 / r->gz, r->v2 / r->zall, r->v2 / r->v1);
}

/* "yes" or "no"; a failure that holds on value bytes alone (without the
 * timestamps, which the references do not carry) says so. */
static const char *verdict(int holds, int holds_on_values)
{
	return holds ? "yes" : holds_on_values ? "no (values alone: yes)" : "no";
}

static void print_aims_row(const char *name, const struct size_row *r)
{
	double n = (double)r->n;
	char zs[48];
	snprintf(zs, sizeof(zs), "%.1f vs %.1f", r->v2 / n, r->zall / n);
	printf("%-13s %7.3f %-22s %7.3f %-22s %-16s %s\n", name, r->v2 / r->cp,
	       verdict(r->v2 <= AIM_VS_CONPROF * r->cp, r->v2_val <= AIM_VS_CONPROF * r->cp),
	       r->v2 / r->gz,
	       verdict(r->v2 <= AIM_VS_GZIP * r->gz, r->v2_val <= AIM_VS_GZIP * r->gz), zs,
	       verdict(r->v2 < r->zall, r->v2_val < r->zall));
}

/* The last component of a path, for naming a corpus. */
static const char *path_base(const char *path, char *buf, size_t size)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	snprintf(buf, size, "%.*s", (int)(len - start), path + start);
	return buf;
}

/* Section 1 for one corpus: the table, then the aims per type. */
static int sizes_of_corpus(const struct opts *o, const struct ptype *tys, const char *dir)
{
	struct size_row rows[NTYPES], sum;
	char name[PATH_MAX];
	size_t nrows = 0;
	memset(&sum, 0, sizeof(sum));
	for (size_t i = 0; i < NTYPES; i++) {
		const struct ptype *ty = &tys[i];
		struct size_row *r = &rows[i];
		struct store_size s1, s2;
		memset(r, 0, sizeof(*r));
		if (!ty->n)
			continue;
		r->n = ty->n;
		for (size_t k = 0; k < ty->n; k++) {
			r->gz += (double)ty->p[k].gz_len;
			r->raw += (double)ty->p[k].raw_len;
		}
		size_t cp = zstd_groups(ty, 12, 1), zall = zstd_groups(ty, ty->n, 3);
		if (!cp || !zall || import_type(o, ty, PD_CHUNKENC_VALUES_ZSTD_GROUPS, &s1) ||
		    import_type(o, ty, 0, &s2))
			return -1;
		r->cp = (double)cp;
		r->zall = (double)zall;
		r->v1 = (double)(s1.value_bytes + s1.ts_bytes);
		r->v2 = (double)(s2.value_bytes + s2.ts_bytes);
		r->v2_val = (double)s2.value_bytes;
		r->v2_block = (double)s2.size;
		r->blocks = s2.blocks;
		size_row_add(&sum, r);
		nrows++;
	}
	if (!nrows)
		return 0;
	printf("\ncorpus %s (%s):\n\n", path_base(dir, name, sizeof(name)), dir);
	printf("%-13s %4s %8s %8s %9s %10s %8s %8s %8s %6s %10s %8s %8s %7s\n", "type", "n",
	       "raw B", "gzip B", "conprof B", "zstd-all B", "v1 B", "v2 B", "v2 blk B", "blocks",
	       "v2/conprof", "v2/gzip", "v2/zall", "v2/v1");
	print_rule(130);
	for (size_t i = 0; i < NTYPES; i++)
		if (tys[i].n)
			print_size_row(tys[i].name, &rows[i], 0);
	print_rule(130);
	print_size_row("all", &sum, 1);
	printf("\naims for v2, per type: v2 B <= %.2fx conprof B, <= %.2fx gzip B, < zstd-all B\n"
	       "(v2 B with its timestamps; where an aim fails only because of them: 'values\n"
	       "alone: yes')\n\n",
	       AIM_VS_CONPROF, AIM_VS_GZIP);
	printf("%-13s %7s %-22s %7s %-22s %-16s %s\n", "type", "v2/cp", "<= 0.25x conprof", "v2/gz",
	       "<= 0.10x gzip", "v2 B vs zall B", "< zstd-all");
	print_rule(100);
	for (size_t i = 0; i < NTYPES; i++)
		if (tys[i].n)
			print_aims_row(tys[i].name, &rows[i]);
	print_rule(100);
	print_aims_row("all", &sum);
	return 0;
}

static int section_sizes(const struct opts *o)
{
	printf("\n1. Bytes per profile, per profile type and corpus: one series per type, its\n"
	       "   profiles in time order, imported with pd_tsdb as `profd tsdb import`\n"
	       "   does, then flushed. v1 B = the store with value_encoding 1 (raw profiles,\n"
	       "   %d to a zstd frame, level %d); v2 B = the default, encoding 2 (columnar:\n"
	       "   per-chunk symbol tables and per-profile records, %d records to a frame).\n"
	       "   Both count value + timestamp chunk bytes (timestamps: about 2 B a profile,\n"
	       "   which no reference carries). v2 blk B = v2's whole block directories\n"
	       "   (index, meta.json, chunks). References, from the same profiles: gzip = the\n"
	       "   files as served; conprof = the raw profiles in groups of 12, each one zstd\n"
	       "   frame at level 1; zstd-all = all the series' raw profiles, each after its\n"
	       "   length as a varint, as ONE zstd frame at level 3 (libzstd). Ratios: v2 B\n"
	       "   over each (below 1: v2 smaller). The total row is bytes summed over all\n"
	       "   profiles / profiles.\n",
	       PD_CHUNKENC_DEFAULT_GROUP, PD_CHUNKENC_DEFAULT_ZSTD_LEVEL,
	       PD_CHUNKENC_V2_DEFAULT_GROUP);
	if (sizes_of_corpus(o, types, o->corpus))
		return -1;
	if (o->corpus2 && sizes_of_corpus(o, types2, o->corpus2))
		return -1;
	printf("\n(bytes per profile; a series spanning two block ranges is cut at the boundary,\n"
	       " hence 'blocks')\n");
	return 0;
}

/* ---- 2. group size and zstd level ---------------------------------------------- */

static const unsigned sweep_groups[] = {1, 4, 8, 12, 16, 32, 64};
static const int sweep_levels[] = {1, 3, 6};
#define NGROUPS (sizeof(sweep_groups) / sizeof(sweep_groups[0]))
#define NLEVELS (sizeof(sweep_levels) / sizeof(sweep_levels[0]))

#define PASSES 7
#define FREE_READ_US 100.0 /* a read this fast is free next to an HTTP request */

struct cell {
	double bpp;     /* sealed value chunk bytes per profile */
	double read_us; /* one random profile: pd_chunkenc_values_read */
	double seal_us; /* append + seal, per profile */
	uint8_t *chunk; /* the sealed chunk */
	size_t len;
	double rounds[PASSES]; /* read time of each pass */
};

/* Builds the type's profiles into one value chunk of encoding enc at (group,
 * level) 3 times or for at least 30 ms, keeping the sealed chunk, its size and
 * the fastest build. */
static int sweep_build(const struct ptype *ty, int enc, unsigned group, int level, struct cell *c)
{
	struct pd_err err = {0};
	struct pd_chunkenc_values *v = NULL;
	double best = 1e300, start = now();
	for (int rep = 0; rep < 3 || now() - start < 0.03; rep++) {
		free(c->chunk);
		c->chunk = NULL;
		double t0 = now();
		if (!(v = pd_chunkenc_values_create_enc(enc, group, level))) {
			pd_err_set(&err, PD_ENOMEM, "out of memory");
			goto fail;
		}
		for (size_t k = 0; k < ty->n; k++)
			if (pd_chunkenc_values_append(v, ty->p[k].raw, ty->p[k].raw_len, &err))
				goto fail;
		if (pd_chunkenc_values_seal(v, &c->chunk, &c->len, &err))
			goto fail;
		pd_chunkenc_values_destroy(v);
		v = NULL;
		double t = now() - t0;
		if (t < best)
			best = t;
	}
	c->seal_us = best / (double)ty->n * 1e6;
	c->bpp = (double)c->len / (double)ty->n;
	return 0;
fail:
	fprintf(stderr, "tsdb_bench: sweep %s encoding %d group %u level %d: %s\n", ty->name, enc,
	        group, level, err.msg);
	pd_chunkenc_values_destroy(v);
	return -1;
}

/* One round of reading random profiles of a sealed chunk for at least 5 ms, each
 * checked against the original's bytes when check is set; the mean µs per read. */
static double sweep_read(const struct ptype *ty, const struct cell *c, int check)
{
	struct pd_err err = {0};
	size_t reads = 0;
	double el = 0, start = now();
	while (reads < 4 || el < 0.005) {
		uint8_t *p;
		size_t plen, i = (size_t)(rng() % ty->n);
		if (pd_chunkenc_values_read(c->chunk, c->len, i, PD_TSDB_DEFAULT_MAX_PROFILE, &p,
		                            &plen, &err)) {
			fprintf(stderr, "tsdb_bench: sweep %s: %s\n", ty->name, err.msg);
			return -1;
		}
		int same =
		    !check || (plen == ty->p[i].raw_len && memcmp(p, ty->p[i].raw, plen) == 0);
		free(p);
		if (!same) {
			fprintf(stderr, "tsdb_bench: sweep %s: profile %zu did not round-trip\n",
			        ty->name, i);
			return -1;
		}
		reads++;
		el = now() - start;
	}
	return el / (double)reads * 1e6;
}

/* One round of the reference reads, µs per profile over at least 5 ms cycling over
 * the type's files: what == 0: gunzip the file as served (what a store of gzip
 * files pays to hand out a profile); 1: decode the raw profile (what every reader
 * of a profile does next). */
static double reference_read(const struct ptype *ty, int what)
{
	size_t reads = 0;
	double start = now(), el = 0;
	while (reads < 4 || el < 0.005) {
		const struct prof *p = &ty->p[(reads * 7) % ty->n];
		struct pd_pprof_profile *pp;
		uint8_t *out;
		size_t len;
		if (what == 0) {
			if (pd_gunzip(p->gz, p->gz_len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED, &out,
			              &len, NULL))
				return -1;
			free(out);
		} else {
			if (pd_pprof_decode(&pp, p->raw, p->raw_len, NULL, NULL))
				return -1;
			pd_pprof_destroy(pp);
		}
		reads++;
		el = now() - start;
	}
	return el / (double)reads * 1e6;
}

static double min_of(const double *v, size_t n)
{
	double m = v[0];
	for (size_t i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static int section_sweep(void)
{
	const char *names[] = {"heap", "cpu"};
	const struct ptype *st[2];
	struct cell cells[2][NGROUPS][NLEVELS];
	double gz[2] = {0, 0}, gun[2], dec[2];
	double read_factor = 2, seal_factor = 2;
	const char *e;
	if ((e = getenv("PD_BENCH_READ_FACTOR")) && atof(e) > 0)
		read_factor = atof(e);
	if ((e = getenv("PD_BENCH_SEAL_FACTOR")) && atof(e) > 0)
		seal_factor = atof(e);
	for (int t = 0; t < 2; t++) {
		if (!(st[t] = find_type(names[t]))) {
			fprintf(stderr, "tsdb_bench: the sweep needs the %s profiles\n", names[t]);
			return -1;
		}
		for (size_t k = 0; k < st[t]->n; k++)
			gz[t] += (double)st[t]->p[k].gz_len / (double)st[t]->n;
	}
	printf("\n2. Value group size x zstd level, on the %zu heap and %zu cpu profiles as one\n"
	       "   value chunk each (pd_chunkenc_values: append, seal, read). B/prof = sealed\n"
	       "   chunk bytes per profile; read = mean time of pd_chunkenc_values_read of a\n"
	       "   random profile (decompresses its group; best of 7 passes); seal = append\n"
	       "   + seal per profile (the compression ingestion pays; best of >= 3 builds).\n"
	       "   vs default / vs conprof = B/prof relative to group %d level %d / group 12\n"
	       "   level 1, averaged over both types. '*' marks the default, 'c' conprof's\n"
	       "   setting, '~' a group larger than the %zu profiles (one frame of them all;\n"
	       "   in a chunk of %d samples it would be frames of 64 and 56).\n\n",
	       st[0]->n, st[1]->n, PD_CHUNKENC_DEFAULT_GROUP, PD_CHUNKENC_DEFAULT_ZSTD_LEVEL,
	       st[0]->n, PD_TSDB_DEFAULT_CHUNK_SAMPLES);
	memset(cells, 0, sizeof(cells));
	int rc = -1;
	for (int t = 0; t < 2; t++)
		for (size_t g = 0; g < NGROUPS; g++)
			for (size_t l = 0; l < NLEVELS; l++)
				if (sweep_build(st[t], PD_CHUNKENC_VALUES_ZSTD_GROUPS,
				                sweep_groups[g], sweep_levels[l], &cells[t][g][l]))
					goto out;
	/* passes over every setting and the references, so that a burst of load
	 * elsewhere on the machine falls on all of them alike; the best pass of each */
	double refr[2][2][PASSES];
	for (int r = 0; r < PASSES; r++)
		for (int t = 0; t < 2; t++) {
			for (int w = 0; w < 2; w++)
				if ((refr[t][w][r] = reference_read(st[t], w)) < 0)
					goto out;
			for (size_t g = 0; g < NGROUPS; g++)
				for (size_t l = 0; l < NLEVELS; l++)
					if ((cells[t][g][l].rounds[r] =
					         sweep_read(st[t], &cells[t][g][l], 1)) < 0)
						goto out;
		}
	for (int t = 0; t < 2; t++) {
		gun[t] = min_of(refr[t][0], PASSES);
		dec[t] = min_of(refr[t][1], PASSES);
		for (size_t g = 0; g < NGROUPS; g++)
			for (size_t l = 0; l < NLEVELS; l++)
				cells[t][g][l].read_us = min_of(cells[t][g][l].rounds, PASSES);
	}
	size_t dg = 0, dl = 0, cg = 0, cl = 0;
	for (size_t g = 0; g < NGROUPS; g++)
		for (size_t l = 0; l < NLEVELS; l++) {
			if (sweep_groups[g] == PD_CHUNKENC_DEFAULT_GROUP &&
			    sweep_levels[l] == PD_CHUNKENC_DEFAULT_ZSTD_LEVEL) {
				dg = g;
				dl = l;
			}
			if (sweep_groups[g] == 12 && sweep_levels[l] == 1) {
				cg = g;
				cl = l;
			}
		}
	printf("%-11s | %-28s | %-28s | %-19s\n", "", "heap", "cpu", "both");
	printf("%5s %5s | %8s %9s %9s | %8s %9s %9s | %9s %9s\n", "group", "level", "B/prof",
	       "read us", "seal us", "B/prof", "read us", "seal us", "vs default", "vs conprof");
	print_rule(96);
	double score[NGROUPS][NLEVELS];
	int fits[NGROUPS][NLEVELS];
	for (size_t g = 0; g < NGROUPS; g++)
		for (size_t l = 0; l < NLEVELS; l++) {
			const struct cell *h = &cells[0][g][l], *c = &cells[1][g][l];
			double vd =
			    (h->bpp / cells[0][dg][dl].bpp + c->bpp / cells[1][dg][dl].bpp) / 2;
			double vc =
			    (h->bpp / cells[0][cg][cl].bpp + c->bpp / cells[1][cg][cl].bpp) / 2;
			score[g][l] = vd;
			const struct cell *dh = &cells[0][dg][dl], *dc = &cells[1][dg][dl];
			fits[g][l] =
			    (h->read_us <= read_factor * gun[0] || h->read_us <= FREE_READ_US) &&
			    (c->read_us <= read_factor * gun[1] || c->read_us <= FREE_READ_US) &&
			    h->seal_us <= seal_factor * dh->seal_us &&
			    c->seal_us <= seal_factor * dc->seal_us;
			char mark = g == dg && l == dl           ? '*'
			            : g == cg && l == cl         ? 'c'
			            : sweep_groups[g] > st[0]->n ? '~'
			                                         : ' ';
			printf("%4u%c %5d | %8.0f %9.1f %9.1f | %8.0f %9.1f %9.1f | %9.2f %9.2f\n",
			       sweep_groups[g], mark, sweep_levels[l], h->bpp, h->read_us,
			       h->seal_us, c->bpp, c->read_us, c->seal_us, vd, vc);
		}
	print_rule(96);
	printf("%-11s | %8.0f %9.1f %9s | %8.0f %9.1f %9s |\n", "gzip/file", gz[0], gun[0], "",
	       gz[1], gun[1], "");
	printf("%-11s | %8s %9.1f %9s | %8s %9.1f %9s |\n", "decode", "", dec[0], "", "", dec[1],
	       "");
	printf("(references, same process and files: gzip/file = the files as served, read =\n"
	       " pd_gunzip of one; decode = pd_pprof_decode of one raw profile, which every\n"
	       " reader of a profile does after reading it)\n\n");

	/* The smallest setting whose single read costs at most read_factor times
	 * gunzipping the same profile from a file (or under FREE_READ_US) and whose
	 * compression costs at most seal_factor times the default's; of those within 2%
	 * of it, the cheapest (lowest level, then smallest group). */
	double best = 1e300;
	for (size_t g = 0; g < NGROUPS; g++)
		for (size_t l = 0; l < NLEVELS; l++)
			if (fits[g][l] && score[g][l] < best)
				best = score[g][l];
	char why[256];
	snprintf(why, sizeof(why),
	         "read <= %gx gzip/file read (heap %.0f, cpu %.0f us) or < %.0f us, seal <= %gx "
	         "the default's (PD_BENCH_READ_FACTOR, PD_BENCH_SEAL_FACTOR)",
	         read_factor, read_factor * gun[0], read_factor * gun[1], FREE_READ_US,
	         seal_factor);
	if (best == 1e300) {
		printf("recommendation: keep group %d level %d: no setting has %s\n",
		       PD_CHUNKENC_DEFAULT_GROUP, PD_CHUNKENC_DEFAULT_ZSTD_LEVEL, why);
		rc = 0;
		goto out;
	}
	size_t pg = 0, pl = 0;
	int found = 0;
	for (size_t l = 0; l < NLEVELS && !found; l++)
		for (size_t g = 0; g < NGROUPS && !found; g++)
			if (fits[g][l] && score[g][l] <= best * 1.02) {
				pg = g;
				pl = l;
				found = 1;
			}
	const struct cell *h = &cells[0][pg][pl], *c = &cells[1][pg][pl];
	printf("recommendation: group %u, level %d%s: %.0f%% of the default's bytes (heap %.0f, "
	       "cpu %.0f B/profile), read heap %.0f / cpu %.0f us; rule: the smallest with %s, "
	       "then the lowest level and smallest group within 2%% of it\n",
	       sweep_groups[pg], sweep_levels[pl], pg == dg && pl == dl ? " (the default)" : "",
	       score[pg][pl] * 100, h->bpp, c->bpp, h->read_us, c->read_us, why);
	rc = 0;
out:
	for (int t = 0; t < 2; t++)
		for (size_t g = 0; g < NGROUPS; g++)
			for (size_t l = 0; l < NLEVELS; l++)
				free(cells[t][g][l].chunk);
	return rc;
}

/* ---- 2b. encoding 2 by group size ---------------------------------------------- */

static const unsigned v2_groups[] = {8, 16, 32, 64, 120};
#define NV2GROUPS (sizeof(v2_groups) / sizeof(v2_groups[0]))
#define V2_LEVEL 3

/* Every profile of a sealed chunk reads back as the same profile, compared field
 * by field (encoding 2 rebuilds the string table, so the bytes may differ). */
static int sweep_verify(const struct ptype *ty, const struct cell *c)
{
	struct pd_err err = {0};
	for (size_t i = 0; i < ty->n; i++) {
		struct pd_pprof_profile *a = NULL, *b = NULL;
		uint8_t *p = NULL;
		size_t plen;
		char why[256] = "";
		int bad = pd_chunkenc_values_read(c->chunk, c->len, i, PD_TSDB_DEFAULT_MAX_PROFILE,
		                                  &p, &plen, &err) ||
		          pd_pprof_decode(&a, ty->p[i].raw, ty->p[i].raw_len, NULL, &err) ||
		          pd_pprof_decode(&b, p, plen, NULL, &err) ||
		          pd_pprof_compare(a, b, why, sizeof(why));
		pd_pprof_destroy(a);
		pd_pprof_destroy(b);
		free(p);
		if (bad) {
			fprintf(stderr,
			        "tsdb_bench: sweep %s: profile %zu did not round-trip: %s\n",
			        ty->name, i, why[0] ? why : err.msg);
			return -1;
		}
	}
	return 0;
}

/* Encoding 2 at groups v2_groups and level 3, beside encoding 1 at its default,
 * on the heap and cpu profiles of each corpus, read times from interleaved
 * passes as in section 2. */
static int section_sweep_v2(const struct opts *o)
{
	const char *names[] = {"heap", "cpu"};
	struct ptype *corp[2] = {types, types2};
	const char *dirs[2] = {o->corpus, o->corpus2};
	const struct ptype *st[2][2];
	/* [corpus][type][0: v1 default; 1 + g: v2 group g] */
	struct cell cells[2][2][1 + NV2GROUPS];
	double gun[2][2][PASSES];
	size_t ncorp = o->corpus2 ? 2 : 1;
	int rc = -1;
	memset(cells, 0, sizeof(cells));
	for (size_t c = 0; c < ncorp; c++)
		for (int t = 0; t < 2; t++) {
			st[c][t] = NULL;
			for (size_t i = 0; i < NTYPES; i++)
				if (strcmp(corp[c][i].name, names[t]) == 0 && corp[c][i].n)
					st[c][t] = &corp[c][i];
			if (!st[c][t]) {
				fprintf(stderr,
				        "tsdb_bench: the sweep needs the %s profiles of %s\n",
				        names[t], dirs[c]);
				return -1;
			}
		}
	printf("\n2b. Value encoding 2 (columnar) by group size at zstd level %d, on the heap\n"
	       "   and cpu profiles of each corpus as one value chunk each\n"
	       "   (pd_chunkenc_values_create_enc: append, seal, read), beside encoding 1 at\n"
	       "   its default (group %d, level %d), built and timed the same way. B/prof =\n"
	       "   sealed chunk bytes per profile; read = mean time of pd_chunkenc_values_read\n"
	       "   of a random profile (v2: decompresses the tables and the profile's group,\n"
	       "   decodes the group's records up to it; best of %d interleaved passes); seal\n"
	       "   = append + seal per profile. Every profile of every chunk was first checked\n"
	       "   to read back as the same profile (pd_pprof_compare). vs v1 = B/prof over\n"
	       "   v1's, averaged over both types. '*' marks v2's default group, '~' a group\n"
	       "   larger than the series (one frame of it all).\n\n",
	       V2_LEVEL, PD_CHUNKENC_DEFAULT_GROUP, PD_CHUNKENC_DEFAULT_ZSTD_LEVEL, PASSES);
	for (size_t c = 0; c < ncorp; c++)
		for (int t = 0; t < 2; t++)
			for (size_t g = 0; g <= NV2GROUPS; g++) {
				struct cell *cl = &cells[c][t][g];
				if (g == 0 ? sweep_build(st[c][t], PD_CHUNKENC_VALUES_ZSTD_GROUPS,
				                         PD_CHUNKENC_DEFAULT_GROUP,
				                         PD_CHUNKENC_DEFAULT_ZSTD_LEVEL, cl)
				           : sweep_build(st[c][t], PD_CHUNKENC_VALUES_COLUMNAR,
				                         v2_groups[g - 1], V2_LEVEL, cl))
					goto out;
				if (sweep_verify(st[c][t], cl))
					goto out;
			}
	for (int r = 0; r < PASSES; r++)
		for (size_t c = 0; c < ncorp; c++)
			for (int t = 0; t < 2; t++) {
				if ((gun[c][t][r] = reference_read(st[c][t], 0)) < 0)
					goto out;
				for (size_t g = 0; g <= NV2GROUPS; g++)
					if ((cells[c][t][g].rounds[r] =
					         sweep_read(st[c][t], &cells[c][t][g], 0)) < 0)
						goto out;
			}
	printf("%-11s %-10s | %-28s | %-28s |\n", "", "", "heap", "cpu");
	printf("%-11s %3s %5s  | %8s %9s %9s | %8s %9s %9s | %6s\n", "corpus", "enc", "group",
	       "B/prof", "read us", "seal us", "B/prof", "read us", "seal us", "vs v1");
	print_rule(92);
	for (size_t c = 0; c < ncorp; c++) {
		char name[PATH_MAX];
		path_base(dirs[c], name, sizeof(name));
		for (size_t g = 0; g <= NV2GROUPS; g++) {
			const struct cell *h = &cells[c][0][g], *p = &cells[c][1][g];
			unsigned group = g ? v2_groups[g - 1] : PD_CHUNKENC_DEFAULT_GROUP;
			double vs = (h->bpp / cells[c][0][0].bpp + p->bpp / cells[c][1][0].bpp) / 2;
			char mark = g && group == PD_CHUNKENC_V2_DEFAULT_GROUP   ? '*'
			            : group > st[c][0]->n || group > st[c][1]->n ? '~'
			                                                         : ' ';
			printf(
			    "%-11.11s %3s %4u%c  | %8.0f %9.1f %9.1f | %8.0f %9.1f %9.1f | %6.3f\n",
			    name, g ? "v2" : "v1", group, mark, h->bpp, min_of(h->rounds, PASSES),
			    h->seal_us, p->bpp, min_of(p->rounds, PASSES), p->seal_us, vs);
		}
		double gz[2] = {0, 0};
		for (int t = 0; t < 2; t++)
			for (size_t k = 0; k < st[c][t]->n; k++)
				gz[t] += (double)st[c][t]->p[k].gz_len / (double)st[c][t]->n;
		printf("%-11.11s %-10s | %8.0f %9.1f %9s | %8.0f %9.1f %9s |\n", name, "gzip/file",
		       gz[0], min_of(gun[c][0], PASSES), "", gz[1], min_of(gun[c][1], PASSES), "");
		if (c + 1 < ncorp)
			print_rule(92);
	}
	print_rule(92);
	char n0[PATH_MAX], n1[PATH_MAX];
	printf("(heap / cpu series: %zu / %zu profiles in %s", st[0][0]->n, st[0][1]->n,
	       path_base(dirs[0], n0, sizeof(n0)));
	if (ncorp > 1)
		printf(", %zu / %zu in %s", st[1][0]->n, st[1][1]->n,
		       path_base(dirs[1], n1, sizeof(n1)));
	printf(";\n gzip/file = the files as served, read = pd_gunzip of one)\n");
	rc = 0;
out:
	for (size_t c = 0; c < 2; c++)
		for (int t = 0; t < 2; t++)
			for (size_t g = 0; g <= NV2GROUPS; g++)
				free(cells[c][t][g].chunk);
	return rc;
}

/* ---- synthetic series (sections 3 and 4) ------------------------------------------ */

/* Series i: a small profile type (cycled), its own instance, scraped every 15 s
 * from a per-series phase, with a jitter of up to ±2 ms; sample k is the type's
 * corpus profile (i*7 + k) mod n, so neighbouring samples are neighbouring real
 * profiles. */
struct synth {
	size_t nseries;
	const struct ptype **ty;
	char (*instance)[32];
};

static int synth_init(struct synth *s, size_t nseries)
{
	const struct ptype *avail[NSMALL];
	size_t na = 0;
	for (size_t i = 0; i < NSMALL; i++)
		if ((avail[na] = find_type(small_types[i])))
			na++;
	if (!na) {
		fprintf(stderr, "tsdb_bench: none of cpu, goroutine, mutex, block, threadcreate in "
		                "the corpus\n");
		return -1;
	}
	s->nseries = nseries;
	s->ty = calloc(nseries, sizeof(*s->ty));
	s->instance = calloc(nseries, sizeof(*s->instance));
	if (!s->ty || !s->instance)
		return -1;
	for (size_t i = 0; i < nseries; i++) {
		s->ty[i] = avail[i % na];
		snprintf(s->instance[i], sizeof(s->instance[i]), "host-%05zu:6060", i / na);
	}
	return 0;
}

static void synth_fini(struct synth *s)
{
	free(s->ty);
	free(s->instance);
}

static int64_t synth_time(const struct synth *s, size_t i, size_t k)
{
	uint64_t h = (uint64_t)(i * 2654435761u) ^ ((uint64_t)k * 40503u);
	h ^= h >> 15;
	h *= 0x2c1b3c6dU;
	h ^= h >> 12;
	int64_t phase = (int64_t)(i * SCRAPE_MS / s->nseries);
	return T0_MS + phase + (int64_t)k * SCRAPE_MS + (int64_t)(h % 5) - 2;
}

static const struct prof *synth_prof(const struct synth *s, size_t i, size_t k)
{
	const struct ptype *ty = s->ty[i];
	return &ty->p[(i * 7 + k) % ty->n];
}

/* Appends samples [k0, k1) of every series, one commit per BATCH series of one
 * scrape round. */
static int synth_append(struct pd_tsdb *db, const struct synth *s, size_t k0, size_t k1,
                        double *raw_bytes, struct pd_err *err)
{
	struct pd_storage_label l[3];
	for (size_t k = k0; k < k1; k++)
		for (size_t b = 0; b < s->nseries; b += BATCH) {
			struct pd_tsdb_appender *a = pd_tsdb_appender(db);
			if (!a)
				return pd_err_set(err, PD_ENOMEM, "out of memory");
			for (size_t i = b; i < b + BATCH && i < s->nseries; i++) {
				const struct prof *p = synth_prof(s, i, k);
				size_t nl = (size_t)type_labels(l, s->ty[i]->name, s->instance[i]);
				if (pd_tsdb_append(a, l, nl, synth_time(s, i, k), p->raw,
				                   p->raw_len, err)) {
					pd_tsdb_rollback(a);
					return err ? err->code : PD_EINVAL;
				}
				*raw_bytes += (double)p->raw_len;
			}
			int rc = pd_tsdb_commit(a, err);
			if (rc)
				return rc;
		}
	return 0;
}

/* ---- 3. listing timestamps against reading profiles ------------------------------- */

/* Sections 3 and 4 compare the value encodings on the same samples: 2 (v2, the
 * default) and 1 (v1). */
#define LS_NENC 2
static const int ls_encodings[LS_NENC] = {2, 1};
#define LS_LISTS 31           /* timed listings per store, interleaved between the stores */
#define AIM_LIST_VS_V1 1.10   /* v2's listing time <= 1.10x v1's: unaffected */
#define AIM_APPEND_VS_V1 0.50 /* v2's append throughput >= half of v1's */
#define HEAP_EVERY 100        /* one series in 100 is heap (section 3 and 4) */

static const char *ls_enc_name(int enc)
{
	return enc == 1 ? "v1" : "v2";
}

/* Makes series i heap when i % every == every / 2 (the corpus's heap profiles,
 * 40 KB raw), when the corpus has them; the instance stays, so labels stay
 * unique. Returns how many series are heap. */
static size_t synth_add_heap(struct synth *s, size_t every)
{
	const struct ptype *heap = find_type("heap");
	size_t n = 0;
	for (size_t i = 0; heap && i < s->nseries; i++)
		if (i % every == every / 2) {
			s->ty[i] = heap;
			n++;
		}
	return n;
}

static int match_eq(const void *ctx, const char *value)
{
	return strcmp(ctx, value) == 0;
}

static size_t gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

struct list_rates {
	double ts_per_s;   /* pd_tsdb_select, timestamps only */
	double select_ms;  /* its median time */
	size_t timestamps; /* timestamps it returned */
	double prof_per_s; /* pd_tsdb_read of every timestamp of whole series */
	double read_s;
	size_t read, read_series;
};

/* Times pd_tsdb_select of every series in each store, LS_LISTS times, the stores
 * alternating (which goes first alternates too), so that both meet the same
 * load; medians. Then reads every profile of whole series, in an order that
 * spreads over the types, series by series from one store and then the other,
 * until both have read for read_seconds: the same series from both. */
static int list_and_read(struct pd_tsdb **db, const struct opts *o, size_t expect,
                         struct list_rates *r)
{
	struct pd_err err = {0};
	struct pd_storage_matcher m = {"job", match_eq, "bench"};
	struct pd_storage_result *res[LS_NENC] = {NULL};
	double t[LS_NENC][LS_LISTS];
	int e = 0;
	memset(r, 0, LS_NENC * sizeof(*r));
	for (int i = 0; i < LS_LISTS; i++)
		for (int x = 0; x < LS_NENC; x++) {
			e = (i & 1) ? LS_NENC - 1 - x : x;
			pd_storage_result_destroy(res[e]);
			res[e] = NULL;
			double t0 = now();
			if (pd_tsdb_select(db[e], &m, 1, INT64_MIN, INT64_MAX, 0, &res[e], &err))
				goto fail;
			t[e][i] = now() - t0;
			size_t n = 0;
			for (size_t s = 0; s < res[e]->nseries; s++)
				n += res[e]->series[s].nts;
			r[e].timestamps = n;
			if (n != expect) {
				pd_err_set(&err, PD_EINVAL,
				           "select returned %zu timestamps, %zu were appended", n,
				           expect);
				goto fail;
			}
		}
	for (e = 0; e < LS_NENC; e++) {
		qsort(t[e], LS_LISTS, sizeof(t[e][0]), double_cmp);
		r[e].select_ms = t[e][LS_LISTS / 2] * 1e3;
		r[e].ts_per_s = (double)r[e].timestamps / t[e][LS_LISTS / 2];
	}
	if (res[0]->nseries != res[1]->nseries) {
		pd_err_set(&err, PD_EINVAL, "the stores hold %zu and %zu series", res[0]->nseries,
		           res[1]->nseries);
		goto fail;
	}
	size_t ns = res[0]->nseries, stride = 389;
	while (gcd(stride, ns) != 1)
		stride++;
	for (size_t j = 0;
	     j < ns && (r[0].read_s < o->read_seconds || r[1].read_s < o->read_seconds); j++)
		for (int x = 0; x < LS_NENC; x++) {
			e = (j & 1) ? LS_NENC - 1 - x : x;
			const struct pd_storage_series *s = &res[e]->series[(j * stride) % ns];
			double t0 = now();
			for (size_t k = 0; k < s->nts; k++) {
				uint8_t *p;
				size_t len;
				if (pd_tsdb_read(db[e], s->labels, s->nlabels, s->ts[k], &p, &len,
				                 &err))
					goto fail;
				free(p);
			}
			r[e].read_s += now() - t0;
			r[e].read += s->nts;
			r[e].read_series++;
		}
	for (e = 0; e < LS_NENC; e++) {
		r[e].prof_per_s = (double)r[e].read / r[e].read_s;
		pd_storage_result_destroy(res[e]);
	}
	return 0;
fail:
	fprintf(stderr, "tsdb_bench: listing (%s): %s\n", ls_enc_name(ls_encodings[e]), err.msg);
	for (e = 0; e < LS_NENC; e++)
		pd_storage_result_destroy(res[e]);
	return -1;
}

/* v with a k, M or G suffix, 3 significant digits, into buf. */
static const char *si(double v, char *buf, size_t size)
{
	const char *suffix = "";
	if (v >= 1e9) {
		v /= 1e9;
		suffix = "G";
	} else if (v >= 1e6) {
		v /= 1e6;
		suffix = "M";
	} else if (v >= 1e3) {
		v /= 1e3;
		suffix = "k";
	}
	snprintf(buf, size, "%.3g%s", v, suffix);
	return buf;
}

static void print_list_row(const char *where, int enc, const struct list_rates *r)
{
	char a[32], b[32];
	printf("%-7s %3s %12zu %9.1f %12s %10zu %9zu %12s %8.0fx\n", where, ls_enc_name(enc),
	       r->timestamps, r->select_ms, si(r->ts_per_s, a, sizeof(a)), r->read_series, r->read,
	       si(r->prof_per_s, b, sizeof(b)), r->ts_per_s / r->prof_per_s);
}

static int section_listing(const struct opts *o)
{
	struct pd_err err = {0};
	struct pd_tsdb *db[LS_NENC] = {NULL};
	struct pd_storage_block_info *b = NULL;
	struct synth s = {0};
	struct list_rates head[LS_NENC], blocks[LS_NENC];
	char dir[LS_NENC][PATH_MAX];
	double append_s[LS_NENC] = {0}, flush_s[LS_NENC] = {0};
	double raw = 0, scratch = 0;
	int rc = -1, e = 0;
	dir[0][0] = dir[1][0] = 0;
	if (synth_init(&s, o->series))
		goto fail;
	size_t nheap = synth_add_heap(&s, HEAP_EVERY);
	for (e = 0; e < LS_NENC; e++) {
		struct pd_tsdb_opts to;
		if (make_tmpdir(o->dir, "list", dir[e], sizeof(dir[e])))
			goto fail;
		pd_tsdb_opts_init(&to);
		to.wal_disabled = 1;
		to.retention_ms = -1;
		to.value_encoding = ls_encodings[e];
		if (pd_tsdb_open(&db[e], dir[e], &to, &err))
			goto fail;
	}
	/* the same samples into both stores, round by round, the stores alternating
	 * which goes first; each store's time is its own appends */
	for (size_t k = 0; k < o->samples; k++)
		for (int x = 0; x < LS_NENC; x++) {
			e = (k & 1) ? LS_NENC - 1 - x : x;
			double t0 = now();
			if (synth_append(db[e], &s, k, k + 1, x == 0 ? &raw : &scratch, &err))
				goto fail;
			append_s[e] += now() - t0;
		}
	size_t total = o->series * o->samples;
	printf(
	    "\n3. Listing timestamps vs reading profiles: %zu series x %zu samples (15 s apart,\n"
	    "   +-2 ms jitter; profiles of cpu, goroutine, mutex, block, threadcreate and,\n"
	    "   in 1 series of %d, heap (%zu series) cycled from the corpus, %.0f B raw on\n"
	    "   average). The same samples in two stores, value encoding 2 (v2) and 1\n"
	    "   (v1), appended without WAL round by round to one and then the other: v2\n"
	    "   in %.1f s (%.0f profiles/s), v1 in %.1f s (%.0f profiles/s). list =\n"
	    "   pd_tsdb_select of every series (median of %d, the stores alternating);\n"
	    "   read = pd_tsdb_read of each timestamp of whole series, the same series\n"
	    "   from both stores in turn, until each has read for %g s (spread over the\n"
	    "   types). Ratio = timestamps/s / profiles/s.\n\n",
	    o->series, o->samples, HEAP_EVERY, nheap, raw / (double)total, append_s[0],
	    (double)total / append_s[0], append_s[1], (double)total / append_s[1], LS_LISTS,
	    o->read_seconds);
	if (list_and_read(db, o, total, head))
		goto fail;
	uint64_t tsb[LS_NENC] = {0}, vb[LS_NENC] = {0}, size[LS_NENC] = {0};
	size_t nb[LS_NENC] = {0};
	for (e = 0; e < LS_NENC; e++) {
		double t0 = now();
		size_t n = 0;
		if (pd_tsdb_flush(db[e], 1, &err) || pd_tsdb_blocks(db[e], &b, &n, &err))
			goto fail;
		flush_s[e] = now() - t0;
		nb[e] = n;
		for (size_t i = 0; i < n; i++) {
			tsb[e] += b[i].ts_bytes;
			vb[e] += b[i].value_bytes;
			size[e] += b[i].size;
		}
		free(b);
		b = NULL;
	}
	if (list_and_read(db, o, total, blocks))
		goto fail;
	printf("%-7s %3s %12s %9s %12s %10s %9s %12s %9s\n", "where", "enc", "timestamps",
	       "list ms", "list ts/s", "series rd", "profiles", "read prof/s", "ratio");
	print_rule(92);
	for (e = 0; e < LS_NENC; e++)
		print_list_row("head", ls_encodings[e], &head[e]);
	for (e = 0; e < LS_NENC; e++)
		print_list_row("blocks", ls_encodings[e], &blocks[e]);
	print_rule(92);
	for (e = 0; e < LS_NENC; e++)
		printf("%s: flush %.1f s; blocks: %zu, %.1f MB on disk; timestamps %.2f B/sample, "
		       "profiles %.0f B/sample\n",
		       ls_enc_name(ls_encodings[e]), flush_s[e], nb[e], (double)size[e] / 1e6,
		       (double)tsb[e] / (double)total, (double)vb[e] / (double)total);
	printf("\naim: timestamp-only listing unaffected by the value encoding: v2's list time\n"
	       "     <= %.2fx v1's (medians above); reading profiles, v2 / v1, for comparison\n\n",
	       AIM_LIST_VS_V1);
	printf("%-7s %10s %10s %8s %7s %14s\n", "where", "v2 list ms", "v1 list ms", "v2/v1",
	       "meets", "read v2/v1");
	print_rule(61);
	for (int w = 0; w < 2; w++) {
		const struct list_rates *r = w ? blocks : head;
		double q = r[0].select_ms / r[1].select_ms;
		printf("%-7s %10.1f %10.1f %7.2fx %7s %13.2fx\n", w ? "blocks" : "head",
		       r[0].select_ms, r[1].select_ms, q, q <= AIM_LIST_VS_V1 ? "yes" : "no",
		       r[0].prof_per_s / r[1].prof_per_s);
	}
	print_rule(61);
	/* section 4's aim on these appends too: here every series passes chunk cuts */
	double aq = append_s[1] / append_s[0];
	printf("append (above, without WAL; %zu samples a series, so the head cuts and seals\n"
	       "a chunk every %d): v2 %.0f profiles/s = %.2fx v1's; section 4's aim, >= %.2fx: "
	       "%s\n",
	       o->samples, PD_TSDB_DEFAULT_CHUNK_SAMPLES, (double)total / append_s[0], aq,
	       AIM_APPEND_VS_V1, aq >= AIM_APPEND_VS_V1 ? "yes" : "no");
	rc = 0;
fail:
	if (rc)
		fprintf(stderr, "tsdb_bench: listing (%s): %s\n", ls_enc_name(ls_encodings[e]),
		        err.msg);
	free(b);
	for (e = 0; e < LS_NENC; e++) {
		pd_tsdb_close(db[e]);
		if (dir[e][0])
			rm_rf(dir[e]);
	}
	synth_fini(&s);
	return rc;
}

/* ---- 4. append throughput and head memory ------------------------------------- */

#define APPEND_REPS 3 /* runs of each (encoding, way), interleaved; medians */
/* the ways of appending: wal_sync 0 and 1 with pd_tsdb_append (the store decodes
 * each profile: `profd tsdb import`), and wal_sync 1 with pd_tsdb_append_decoded
 * (the caller decodes, as scrapes and pushes do, untimed here) */
#define APPEND_WAYS 3
static const int way_sync[APPEND_WAYS] = {0, 1, 1};
static const int way_decoded[APPEND_WAYS] = {0, 0, 1};
static const char *const way_name[APPEND_WAYS] = {"0 (fsync each commit)", "1 (no fsync)",
                                                  "1, caller decoded"};
/* samples a series: 100 (every chunk stays open: the runs that head memory is
 * measured on), and 250, so that every series cuts and seals a chunk at its
 * 121st and 241st sample (a seal per 120 samples, as a running head has) */
#define APPEND_CASES 2
static const size_t case_samples[APPEND_CASES] = {100, 250};
static const char *const case_name[APPEND_CASES] = {"no chunk cut", "with chunk cuts"};

/* Samples [0, samples) of every series with pd_tsdb_append_decoded, one commit
 * per BATCH series of a round; each batch's profiles are decoded before its
 * appends, and only the appends and the commit are timed (*seconds). */
static int synth_append_decoded(struct pd_tsdb *db, const struct synth *s, size_t samples,
                                double *raw_bytes, double *seconds, struct pd_err *err)
{
	struct pd_storage_label l[3];
	struct pd_pprof_profile *dec[BATCH];
	*seconds = 0;
	for (size_t k = 0; k < samples; k++)
		for (size_t b = 0; b < s->nseries; b += BATCH) {
			size_t nb = b + BATCH < s->nseries ? BATCH : s->nseries - b, j = 0;
			int rc = 0;
			for (; j < nb && !rc; j++) {
				const struct prof *p = synth_prof(s, b + j, k);
				rc = pd_pprof_decode(&dec[j], p->raw, p->raw_len, NULL, err);
			}
			if (rc) {
				for (size_t q = 0; q + 1 < j; q++)
					pd_pprof_destroy(dec[q]);
				return rc;
			}
			double t0 = now();
			struct pd_tsdb_appender *a = pd_tsdb_appender(db);
			for (j = 0; j < nb && !rc; j++) {
				size_t i = b + j;
				const struct prof *p = synth_prof(s, i, k);
				size_t nl = (size_t)type_labels(l, s->ty[i]->name, s->instance[i]);
				if (!a) {
					pd_pprof_destroy(dec[j]);
					continue;
				}
				/* dec[j] belongs to the appender from here, whatever the outcome */
				rc = pd_tsdb_append_decoded(a, l, nl, synth_time(s, i, k), p->raw,
				                            p->raw_len, dec[j], err);
				*raw_bytes += (double)p->raw_len;
			}
			for (; j < nb; j++)
				pd_pprof_destroy(dec[j]);
			if (!a)
				return pd_err_set(err, PD_ENOMEM, "out of memory");
			if (rc) {
				pd_tsdb_rollback(a);
				return rc;
			}
			if ((rc = pd_tsdb_commit(a, err)))
				return rc;
			*seconds += now() - t0;
		}
	return 0;
}

struct append_run {
	double seconds, raw_bytes;
	size_t samples, commits;
	long long heap_delta, rss_delta;
	uint64_t wal_bytes, head_chunks;
};

/* 1000 x `samples` samples into a fresh store of value encoding enc with the WAL on
 * (sync 0: fsync every commit; 1: never), one commit per BATCH series of a
 * round; decoded: with pd_tsdb_append_decoded. */
static int append_run(const struct opts *o, const struct synth *s, size_t samples, int enc,
                      int sync, int decoded, struct append_run *r)
{
	struct pd_err err = {0};
	struct pd_tsdb *db = NULL;
	struct pd_tsdb_opts to;
	struct pd_storage_stats st;
	char dir[PATH_MAX];
	int rc = -1;
	memset(r, 0, sizeof(*r));
	if (make_tmpdir(o->dir, "append", dir, sizeof(dir)))
		return -1;
	trim_heap();
	pd_tsdb_opts_init(&to);
	to.retention_ms = -1;
	to.wal_sync = sync;
	to.value_encoding = enc;
	if (pd_tsdb_open(&db, dir, &to, &err))
		goto fail;
	long long h0 = heap_bytes(), r0 = rss_bytes();
	double t0 = now();
	if (decoded ? synth_append_decoded(db, s, samples, &r->raw_bytes, &r->seconds, &err)
	            : synth_append(db, s, 0, samples, &r->raw_bytes, &err))
		goto fail;
	if (!decoded)
		r->seconds = now() - t0;
	long long h1 = heap_bytes(), r1 = rss_bytes();
	r->heap_delta = h0 < 0 || h1 < 0 ? -1 : h1 - h0;
	r->rss_delta = r0 < 0 || r1 < 0 ? -1 : r1 - r0;
	r->samples = s->nseries * samples;
	r->commits = samples * ((s->nseries + BATCH - 1) / BATCH);
	pd_tsdb_stats(db, &st);
	r->wal_bytes = st.wal_bytes;
	r->head_chunks = st.head_chunks;
	if (st.head_samples != r->samples) {
		pd_err_set(&err, PD_EINVAL, "the head holds %llu samples, %zu were appended",
		           (unsigned long long)st.head_samples, r->samples);
		goto fail;
	}
	rc = 0;
fail:
	if (rc)
		fprintf(stderr, "tsdb_bench: append (%s): %s\n", ls_enc_name(enc), err.msg);
	pd_tsdb_close(db);
	rm_rf(dir);
	return rc;
}

/* The reference: the same profile bytes appended to one plain file, one write per
 * batch, fdatasync after each when sync is 0. */
static int plain_run(const struct opts *o, const struct synth *s, size_t samples, int sync,
                     double *seconds)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	uint8_t *buf = NULL;
	size_t cap = 0;
	int fd = -1, rc = -1;
	if (make_tmpdir(o->dir, "plain", dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/file", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)) < 0)
		goto fail;
	double t0 = now();
	for (size_t k = 0; k < samples; k++)
		for (size_t b = 0; b < s->nseries; b += BATCH) {
			size_t len = 0;
			for (size_t i = b; i < b + BATCH && i < s->nseries; i++) {
				const struct prof *p = synth_prof(s, i, k);
				if (len + p->raw_len > cap) {
					size_t nc = (len + p->raw_len) * 2;
					uint8_t *nb = realloc(buf, nc);
					if (!nb)
						goto fail;
					buf = nb;
					cap = nc;
				}
				memcpy(buf + len, p->raw, p->raw_len);
				len += p->raw_len;
			}
			if (write(fd, buf, len) != (ssize_t)len || (!sync && fdatasync(fd) != 0))
				goto fail;
		}
	*seconds = now() - t0;
	rc = 0;
fail:
	if (rc)
		fprintf(stderr, "tsdb_bench: plain file %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(buf);
	rm_rf(dir);
	return rc;
}

/* The least a head holding `samples` samples of every series must keep, per
 * series and chunk (chunks cut every PD_TSDB_DEFAULT_CHUNK_SAMPLES samples, as
 * in the head), with the timestamp chunk: enc 1, its full groups compressed as
 * the head compresses them (default group and level) and the open group raw;
 * enc 2, the chunk sealed with encoding 2 (its own tables and every group
 * compressed: what a block holds). */
static int head_payload(const struct synth *s, size_t samples, int enc, double *bytes)
{
	struct pd_err err = {0};
	const size_t per = PD_TSDB_DEFAULT_CHUNK_SAMPLES, g = PD_CHUNKENC_DEFAULT_GROUP;
	*bytes = 0;
	for (size_t i = 0; i < s->nseries; i++)
		for (size_t c0 = 0; c0 < samples; c0 += per) {
			size_t c1 = c0 + per < samples ? c0 + per : samples;
			size_t full = enc == 1 ? c0 + (c1 - c0) / g * g : c1;
			struct pd_chunkenc_values *v =
			    enc == 1 ? pd_chunkenc_values_create(0, 0)
			             : pd_chunkenc_values_create_enc(enc, 0, 0);
			struct pd_chunkenc_ts ts;
			uint8_t *chunk = NULL;
			size_t len = 0, tlen = 0;
			int rc = v ? 0 : pd_err_set(&err, PD_ENOMEM, "out of memory");
			pd_chunkenc_ts_init(&ts);
			for (size_t k = c0; k < c1 && !rc; k++) {
				const struct prof *p = synth_prof(s, i, k);
				rc = pd_chunkenc_ts_append(&ts, synth_time(s, i, k), &err);
				if (!rc && k < full)
					rc = pd_chunkenc_values_append(v, p->raw, p->raw_len, &err);
				else if (!rc)
					*bytes += (double)p->raw_len;
			}
			if (!rc && full > c0)
				rc = pd_chunkenc_values_seal(v, &chunk, &len, &err);
			pd_chunkenc_ts_bytes(&ts, &tlen);
			*bytes += (double)(len + tlen);
			free(chunk);
			pd_chunkenc_values_destroy(v);
			pd_chunkenc_ts_fini(&ts);
			if (rc) {
				fprintf(stderr, "tsdb_bench: payload: %s\n", err.msg);
				return -1;
			}
		}
	return 0;
}

static int ll_cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

static int section_append(const struct opts *o)
{
	const size_t nseries = 1000;
	struct synth s = {0};
	/* [case][way][enc][rep] */
	static struct append_run runs[APPEND_CASES][APPEND_WAYS][LS_NENC][APPEND_REPS];
	double plain[APPEND_CASES][2][APPEND_REPS];
	int rc = -1;
	if (synth_init(&s, nseries))
		goto out;
	size_t nheap = synth_add_heap(&s, HEAP_EVERY);
	/* every (case, way, encoding) and the plain file in turn, APPEND_REPS times,
	 * the encodings alternating which goes first */
	for (int rep = 0; rep < APPEND_REPS; rep++)
		for (int c = 0; c < APPEND_CASES; c++)
			for (int w = 0; w < APPEND_WAYS; w++) {
				for (int x = 0; x < LS_NENC; x++) {
					int e = ((rep + w + c) & 1) ? LS_NENC - 1 - x : x;
					if (append_run(o, &s, case_samples[c], ls_encodings[e], way_sync[w],
					               way_decoded[w], &runs[c][w][e][rep]))
						goto out;
				}
				if (w < 2 &&
				    plain_run(o, &s, case_samples[c], way_sync[w], &plain[c][w][rep]))
					goto out;
			}
	/* medians: time, and the memory of the runs without fsync (way 1) and
	 * without chunk cuts */
	double secs[APPEND_CASES][APPEND_WAYS][LS_NENC], plain_s[APPEND_CASES][2];
	long long heap_d[LS_NENC], rss_d[LS_NENC];
	for (int c = 0; c < APPEND_CASES; c++)
		for (int sync = 0; sync < 2; sync++) {
			qsort(plain[c][sync], APPEND_REPS, sizeof(double), double_cmp);
			plain_s[c][sync] = plain[c][sync][APPEND_REPS / 2];
		}
	for (int c = 0; c < APPEND_CASES; c++)
		for (int w = 0; w < APPEND_WAYS; w++)
			for (int e = 0; e < LS_NENC; e++) {
				double v[APPEND_REPS];
				long long h[APPEND_REPS], r[APPEND_REPS];
				for (int rep = 0; rep < APPEND_REPS; rep++) {
					v[rep] = runs[c][w][e][rep].seconds;
					h[rep] = runs[c][w][e][rep].heap_delta;
					r[rep] = runs[c][w][e][rep].rss_delta;
				}
				qsort(v, APPEND_REPS, sizeof(double), double_cmp);
				secs[c][w][e] = v[APPEND_REPS / 2];
				if (c == 0 && w == 1) {
					qsort(h, APPEND_REPS, sizeof(long long), ll_cmp);
					qsort(r, APPEND_REPS, sizeof(long long), ll_cmp);
					heap_d[e] = h[0] < 0 ? -1 : h[APPEND_REPS / 2];
					rss_d[e] = r[0] < 0 ? -1 : r[APPEND_REPS / 2];
				}
			}
	const struct append_run *r0 = &runs[0][0][0][0];
	printf("\n4. Append throughput: %zu series x %zu samples, and x %zu samples (every\n"
	       "   series cuts and seals a chunk at its sample %d and %d), the profiles of\n"
	       "   section 3 (%zu heap series), one commit per %d series of a scrape round,\n"
	       "   WAL on, into a fresh store of value encoding 2 (v2) or 1 (v1): wal_sync\n"
	       "   0 and 1 with pd_tsdb_append (the store decodes each profile, as\n"
	       "   `profd tsdb import` has it do), and wal_sync 1 with pd_tsdb_append_decoded\n"
	       "   (`caller decoded`: each batch decoded before its appends, untimed, as\n"
	       "   scrapes and pushes hand the store the profile they decoded). Reference:\n"
	       "   the same profile bytes written to one plain file, one write per commit\n"
	       "   (with fdatasync after each write when the WAL fsyncs). Every row is run\n"
	       "   %d times, all rows in turn; medians. Ratio = plain time / profd time\n"
	       "   (1.00x: as fast as writing the bytes).\n",
	       nseries, case_samples[0], case_samples[1], PD_TSDB_DEFAULT_CHUNK_SAMPLES + 1,
	       2 * PD_TSDB_DEFAULT_CHUNK_SAMPLES + 1, nheap, BATCH, APPEND_REPS);
	for (int c = 0; c < APPEND_CASES; c++) {
		const struct append_run *rc0 = &runs[c][0][0][0];
		printf("\n%zu samples a series (%s; %zu commits)\n\n", case_samples[c], case_name[c],
		       rc0->commits);
		printf("%-22s %3s %10s %12s %10s %12s %9s %10s\n", "wal_sync", "enc", "seconds",
		       "profiles/s", "commits/s", "WAL MB", "plain s", "ratio");
		print_rule(95);
		for (int w = 0; w < APPEND_WAYS; w++)
			for (int e = 0; e < LS_NENC; e++) {
				const struct append_run *r = &runs[c][w][e][0];
				double ps = plain_s[c][way_sync[w]];
				printf("%-22s %3s %10.2f %12.0f %10.0f %12.1f %9.2f %9.2fx\n", way_name[w],
				       ls_enc_name(ls_encodings[e]), secs[c][w][e],
				       (double)r->samples / secs[c][w][e], (double)r->commits / secs[c][w][e],
				       (double)r->wal_bytes / 1e6, ps, ps / secs[c][w][e]);
			}
		print_rule(95);
		printf("(raw profile bytes appended: %.1f MB per run; head chunks at the end: %llu)\n",
		       rc0->raw_bytes / 1e6, (unsigned long long)runs[c][1][0][0].head_chunks);
	}
	printf("\naim: append throughput of v2 no worse than half of v1's (v2 profiles/s >=\n"
	       "     %.2fx v1's), without and with chunk cuts\n\n",
	       AIM_APPEND_VS_V1);
	printf("%-22s %-16s %12s %12s %8s %7s\n", "wal_sync", "samples", "v2 prof/s", "v1 prof/s",
	       "v2/v1", "meets");
	print_rule(82);
	for (int w = 0; w < APPEND_WAYS; w++)
		for (int c = 0; c < APPEND_CASES; c++) {
			double q = secs[c][w][1] / secs[c][w][0];
			char what[32];
			snprintf(what, sizeof(what), "%zu%s", case_samples[c], c ? " (cuts)" : "");
			printf("%-22s %-16s %12.0f %12.0f %7.2fx %7s\n", way_name[w], what,
			       (double)runs[c][w][0][0].samples / secs[c][w][0],
			       (double)runs[c][w][0][0].samples / secs[c][w][1], q,
			       q >= AIM_APPEND_VS_V1 ? "yes" : "no");
		}
	print_rule(82);

	const size_t samples = case_samples[0];
	double pay[LS_NENC] = {0}, gz = 0;
	for (int e = 0; e < LS_NENC; e++)
		if (head_payload(&s, samples, ls_encodings[e], &pay[e]))
			goto out;
	for (size_t i = 0; i < nseries; i++)
		for (size_t k = 0; k < samples; k++)
			gz += (double)synth_prof(&s, i, k)->gz_len;
	/* pay[1] is v1's, pay[0] v2's */
	printf("\n   Head memory per series after %zu samples each (the runs without fsync,\n"
	       "   medians): malloc'd bytes (mallinfo2) and RSS after the last commit minus\n"
	       "   after open, divided by %zu series. References, computed here from the same\n"
	       "   samples: v1 payload = the least a v1 head must hold (full groups of %d\n"
	       "   compressed at level %d with pd_chunkenc_values, the open group raw,\n"
	       "   timestamps); v2 payload = each series' samples as one sealed encoding 2\n"
	       "   chunk (its own tables, every group compressed: what a block holds) and\n"
	       "   timestamps; raw and gzip = the profiles uncompressed and as served.\n"
	       "   x v1 / x v2 payload = row / that payload.\n\n",
	       samples, nseries, PD_CHUNKENC_DEFAULT_GROUP, PD_CHUNKENC_DEFAULT_ZSTD_LEVEL);
	printf("%-24s %14s %14s %14s %14s\n", "", "per series", "per sample", "x v1 payload",
	       "x v2 payload");
	print_rule(84);
	const char *what[8] = {"v2 head (malloc'd)", "v2 head (RSS)", "v1 head (malloc'd)",
	                       "v1 head (RSS)",      "v1 payload",    "v2 payload",
	                       "raw profiles",       "gzip profiles"};
	double v[8] = {(double)heap_d[0],
	               (double)rss_d[0],
	               (double)heap_d[1],
	               (double)rss_d[1],
	               pay[1],
	               pay[0],
	               r0->raw_bytes,
	               gz};
	for (int i = 0; i < 8; i++) {
		if (v[i] < 0) {
			printf("%-24s %14s\n", what[i], "-");
			continue;
		}
		double ps = v[i] / (double)nseries;
		printf("%-24s %14.0f %14.0f %13.2fx %13.2fx\n", what[i], ps, ps / (double)samples,
		       v[i] / pay[1], v[i] / pay[0]);
	}
	print_rule(84);
	printf("(head chunks: %llu: %zu samples < %d per chunk, so every chunk is open; v1:\n"
	       " %zu full groups of %d each and %zu profiles in the open group)\n",
	       (unsigned long long)runs[0][1][0][0].head_chunks, samples,
	       PD_TSDB_DEFAULT_CHUNK_SAMPLES, samples / PD_CHUNKENC_DEFAULT_GROUP,
	       PD_CHUNKENC_DEFAULT_GROUP, samples % PD_CHUNKENC_DEFAULT_GROUP);
	rc = 0;
out:
	synth_fini(&s);
	return rc;
}

/* ---- 5. concurrent commits (group commit) ---------------------------------------- */

#define GC_SERIES_PER_THREAD 64
#define GC_MAX_THREADS 16
#define GC_SLICES 5 /* each measurement is cut in slices, interleaved with the others */
static const int gc_threads[] = {1, 2, 4, 8, 16};
#define GC_RUNS (sizeof(gc_threads) / sizeof(gc_threads[0]))

/* One way of committing, measured in slices: db set: profd (wal_sync as opened);
 * else the reference: each commit is one write of the same profile bytes to one
 * shared file (O_APPEND) and one fdatasync, or, with serial, the same under one
 * lock (each commit waits for the fsyncs before it, as profd's commits did before
 * group commit, under its append lock). Each commit is one profile of section
 * 3's series (as a scrape loop commits), thread j cycling through its own
 * GC_SERIES_PER_THREAD series; a thread goes on where it stopped in the last
 * slice, so a series' timestamps keep increasing. */
struct gc_kind {
	struct pd_tsdb *db;
	int fd;
	int serial;
	pthread_mutex_t mu; /* serial's lock */
	char dir[PATH_MAX];
	size_t k[GC_MAX_THREADS], j[GC_MAX_THREADS]; /* where each thread goes on */
	size_t commits;
	double seconds;
};

struct gc_slice {
	struct gc_kind *kind;
	const struct synth *s;
	double deadline;
	pthread_barrier_t start;
	pthread_mutex_t mu;
	size_t commits;
	int failed;
	char err[PD_ERR_MSG_MAX];
};

struct gc_worker {
	struct gc_slice *sl;
	int id;
};

static int gc_commit(struct gc_kind *kd, const struct synth *s, size_t i, size_t k,
                     struct pd_err *err)
{
	const struct prof *p = synth_prof(s, i, k);
	if (!kd->db) {
		int bad;
		if (kd->serial)
			pthread_mutex_lock(&kd->mu);
		bad = write(kd->fd, p->raw, p->raw_len) != (ssize_t)p->raw_len ||
		      fdatasync(kd->fd) != 0;
		if (kd->serial)
			pthread_mutex_unlock(&kd->mu);
		if (bad)
			return pd_err_set(err, PD_EIO, "plain file: %s", strerror(errno));
		return 0;
	}
	struct pd_storage_label l[3];
	size_t nl = (size_t)type_labels(l, s->ty[i]->name, s->instance[i]);
	struct pd_tsdb_appender *a = pd_tsdb_appender(kd->db);
	if (!a)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int rc = pd_tsdb_append(a, l, nl, synth_time(s, i, k), p->raw, p->raw_len, err);
	if (rc) {
		pd_tsdb_rollback(a);
		return rc;
	}
	return pd_tsdb_commit(a, err);
}

static void *gc_work(void *arg)
{
	struct gc_worker *w = arg;
	struct gc_slice *sl = w->sl;
	struct gc_kind *kd = sl->kind;
	struct pd_err err = {0};
	size_t n = 0, base = (size_t)w->id * GC_SERIES_PER_THREAD;
	size_t *k = &kd->k[w->id], *j = &kd->j[w->id];
	int rc = 0;
	pthread_barrier_wait(&sl->start);
	while (!rc && now() < sl->deadline) {
		if ((rc = gc_commit(kd, sl->s, base + *j, *k, &err)))
			break;
		n++;
		if (++*j == GC_SERIES_PER_THREAD) {
			*j = 0;
			++*k;
		}
	}
	pthread_mutex_lock(&sl->mu);
	sl->commits += n;
	if (rc && !sl->failed++)
		snprintf(sl->err, sizeof(sl->err), "%s", err.msg);
	pthread_mutex_unlock(&sl->mu);
	return NULL;
}

/* One slice: nthreads threads commit at once for `seconds`, into kd's counts. */
static int gc_run_slice(struct gc_kind *kd, const struct synth *s, int nthreads, double seconds)
{
	pthread_t th[GC_MAX_THREADS];
	struct gc_worker w[GC_MAX_THREADS];
	struct gc_slice sl = {.kind = kd, .s = s};
	pthread_mutex_init(&sl.mu, NULL);
	pthread_barrier_init(&sl.start, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct gc_worker){&sl, i};
		if (pthread_create(&th[i], NULL, gc_work, &w[i]) != 0) {
			/* the started ones wait at the barrier for good: give up */
			fprintf(stderr, "tsdb_bench: cannot start %d threads\n", nthreads);
			exit(1);
		}
	}
	double t0 = now();
	sl.deadline = t0 + seconds;
	pthread_barrier_wait(&sl.start);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	double t1 = now();
	pthread_barrier_destroy(&sl.start);
	pthread_mutex_destroy(&sl.mu);
	if (sl.failed) {
		fprintf(stderr, "tsdb_bench: %d of %d threads failed to commit: %s\n", sl.failed,
		        nthreads, sl.err);
		return -1;
	}
	kd->commits += sl.commits;
	kd->seconds += t1 - t0;
	return 0;
}

/* Opens a kind: a fresh store with wal_sync (0 or 1), or (wal_sync < 0) the
 * reference's plain file (-2: with commits serialised). */
static int gc_open(const struct opts *o, int wal_sync, struct gc_kind *kd)
{
	struct pd_err err = {0};
	memset(kd, 0, sizeof(*kd));
	kd->fd = -1;
	kd->serial = wal_sync == -2;
	pthread_mutex_init(&kd->mu, NULL);
	if (make_tmpdir(o->dir, wal_sync < 0 ? "plainsync" : "commit", kd->dir, sizeof(kd->dir)))
		return -1;
	if (wal_sync < 0) {
		char path[PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s/file", kd->dir);
		if ((kd->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)) < 0) {
			fprintf(stderr, "tsdb_bench: %s: %s\n", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	struct pd_tsdb_opts to;
	pd_tsdb_opts_init(&to);
	to.retention_ms = -1;
	to.wal_sync = wal_sync;
	if (pd_tsdb_open(&kd->db, kd->dir, &to, &err)) {
		fprintf(stderr, "tsdb_bench: open: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* Checks that the store holds every acknowledged commit, then closes and removes
 * it; *st receives its statistics. */
static int gc_close(struct gc_kind *kd, struct pd_storage_stats *st)
{
	int rc = 0;
	if (kd->db) {
		pd_tsdb_stats(kd->db, st);
		if (st->head_samples != kd->commits || st->wal_records != kd->commits) {
			fprintf(stderr,
			        "tsdb_bench: %zu commits acknowledged, %llu in the WAL, %llu in "
			        "the head\n",
			        kd->commits, (unsigned long long)st->wal_records,
			        (unsigned long long)st->head_samples);
			rc = -1;
		}
		pd_tsdb_close(kd->db);
		kd->db = NULL;
	}
	if (kd->fd >= 0)
		close(kd->fd);
	kd->fd = -1;
	if (kd->dir[0])
		rm_rf(kd->dir);
	kd->dir[0] = 0;
	pthread_mutex_destroy(&kd->mu);
	return rc;
}

struct gc_result {
	double plain, serial, profd, nosync; /* commits per second */
	uint64_t commits, fsyncs;
};

static int section_group_commit(const struct opts *o)
{
	const int maxt = gc_threads[GC_RUNS - 1];
	const double slice = o->commit_seconds / GC_SLICES;
	struct synth s = {0};
	struct gc_result res[GC_RUNS];
	/* reference, serialised reference, profd, profd without fsync */
	struct gc_kind kinds[4];
	const int syncs[4] = {-1, -2, 0, 1};
	int rc = -1, opened = 0;
	if (synth_init(&s, (size_t)maxt * GC_SERIES_PER_THREAD))
		goto out;
	for (size_t i = 0; i < GC_RUNS; i++) {
		struct pd_storage_stats st[4];
		memset(st, 0, sizeof(st));
		for (opened = 0; opened < 4; opened++)
			if (gc_open(o, syncs[opened], &kinds[opened])) {
				opened++;
				goto out;
			}
		/* all in turn, slice by slice, so that a change of the disk's speed or of
		 * the machine's load during the run falls on each alike */
		for (int r = 0; r < GC_SLICES; r++)
			for (int k = 0; k < 4; k++)
				if (gc_run_slice(&kinds[k], &s, gc_threads[i], slice))
					goto out;
		for (int k = 0; k < 4; k++)
			if (gc_close(&kinds[k], &st[k]))
				rc = -2;
		opened = 0;
		if (rc == -2)
			goto out;
		res[i].plain = (double)kinds[0].commits / kinds[0].seconds;
		res[i].serial = (double)kinds[1].commits / kinds[1].seconds;
		res[i].profd = (double)kinds[2].commits / kinds[2].seconds;
		res[i].nosync = (double)kinds[3].commits / kinds[3].seconds;
		res[i].commits = st[2].wal_records;
		res[i].fsyncs = st[2].wal_fsyncs;
	}
	printf("\n5. Concurrent commits, fsync per commit (wal_sync=0): N threads commit at once,\n"
	       "   one profile per commit (as a scrape loop commits; the profiles of section 3),\n"
	       "   thread j cycling through %d series of its own. profd returns from a commit\n"
	       "   only after an fdatasync covering its WAL record; commits arriving together\n"
	       "   share one write and one fsync (group commit). Reference: the same N threads\n"
	       "   writing the same profile bytes to one plain file, one write + fdatasync per\n"
	       "   commit; serial: the same under one lock, so each commit waits for the fsyncs\n"
	       "   before it (as profd's commits did before group commit). Each column is\n"
	       "   measured for %.1f s in %d slices, all columns' slices interleaved. Ratio =\n"
	       "   profd / reference (above 1: profd commits more); vs serial = profd / serial.\n"
	       "   commits/fsync: profd's WAL counters. no-fsync: profd with wal_sync=1, the\n"
	       "   rate the CPU allows when no commit waits for the disk.\n\n",
	       GC_SERIES_PER_THREAD, o->commit_seconds, GC_SLICES);
	printf("%7s %10s %10s %7s %10s %9s %9s %9s %9s %10s\n", "threads", "profd c/s", "ref c/s",
	       "ratio", "serial c/s", "vs serial", "commits", "fsyncs", "c/fsync", "no-fsync");
	print_rule(101);
	for (size_t i = 0; i < GC_RUNS; i++) {
		const struct gc_result *g = &res[i];
		printf("%7d %10.0f %10.0f %6.2fx %10.0f %8.2fx %9llu %9llu %9.1f %10.0f\n",
		       gc_threads[i], g->profd, g->plain, g->plain > 0 ? g->profd / g->plain : 0,
		       g->serial, g->serial > 0 ? g->profd / g->serial : 0,
		       (unsigned long long)g->commits, (unsigned long long)g->fsyncs,
		       g->fsyncs ? (double)g->commits / (double)g->fsyncs : 0, g->nosync);
	}
	print_rule(101);
	rc = 0;
out:
	for (int k = 0; k < opened; k++) {
		struct pd_storage_stats st;
		memset(&st, 0, sizeof(st));
		gc_close(&kinds[k], &st);
	}
	synth_fini(&s);
	return rc;
}


/* ---- 6. values over time: totals beside the timestamps ------------------------------ */

#define TV_RUNS 31            /* timed calls of each, interleaved; medians */
#define AIM_TOTALS_MS 100.0   /* the aim for 1,000 series x 1,000 profiles */

struct tv_rates {
	double list_ms, totals_ms;         /* wall clock */
	double list_cpu_ms, totals_cpu_ms; /* the thread's CPU time */
	size_t timestamps, values;
};

/* Times pd_tsdb_select and pd_tsdb_select_totals of every series, TV_RUNS times
 * each, alternating which goes first; medians of the wall clock and of the
 * thread's CPU time (which a loaded machine does not inflate). Checks that totals list the same
 * timestamps, every one a profile with its types. */
static int time_totals(struct pd_tsdb *db, size_t expect, struct tv_rates *r,
                       struct pd_err *err)
{
	struct pd_storage_matcher m = {"job", match_eq, "bench"};
	double tl[TV_RUNS], tt[TV_RUNS], cl[TV_RUNS], ct[TV_RUNS];
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < TV_RUNS; i++)
		for (int x = 0; x < 2; x++) {
			int totals = (i & 1) ? !x : x;
			double t0 = now(), c0 = cpu_now();
			if (totals) {
				struct pd_storage_totals_result *res;
				if (pd_tsdb_select_totals(db, &m, 1, INT64_MIN, INT64_MAX, 0, &res, err))
					return -1;
				tt[i] = now() - t0;
				ct[i] = cpu_now() - c0;
				size_t n = 0, v = 0;
				for (size_t s = 0; s < res->nseries; s++) {
					const struct pd_storage_totals *t = &res->series[s];
					n += t->nts;
					for (size_t q = 0; q < t->ntypes * t->nts; q++)
						v += t->present[q];
				}
				pd_storage_totals_result_destroy(res);
				r->values = v;
				if (n != expect) {
					pd_err_set(err, PD_EINVAL, "totals listed %zu profiles of %zu", n, expect);
					return -1;
				}
			} else {
				struct pd_storage_result *res;
				if (pd_tsdb_select(db, &m, 1, INT64_MIN, INT64_MAX, 0, &res, err))
					return -1;
				tl[i] = now() - t0;
				cl[i] = cpu_now() - c0;
				size_t n = 0;
				for (size_t s = 0; s < res->nseries; s++)
					n += res->series[s].nts;
				pd_storage_result_destroy(res);
				r->timestamps = n;
			}
		}
	qsort(tl, TV_RUNS, sizeof(tl[0]), double_cmp);
	qsort(tt, TV_RUNS, sizeof(tt[0]), double_cmp);
	qsort(cl, TV_RUNS, sizeof(cl[0]), double_cmp);
	qsort(ct, TV_RUNS, sizeof(ct[0]), double_cmp);
	r->list_ms = tl[TV_RUNS / 2] * 1e3;
	r->totals_ms = tt[TV_RUNS / 2] * 1e3;
	r->list_cpu_ms = cl[TV_RUNS / 2] * 1e3;
	r->totals_cpu_ms = ct[TV_RUNS / 2] * 1e3;
	return 0;
}

static int section_totals(const struct opts *o)
{
	struct pd_err err = {0};
	struct pd_tsdb *db = NULL;
	struct pd_storage_block_info *b = NULL;
	struct synth s = {0};
	struct tv_rates r[2];
	char dir[PATH_MAX] = "";
	double raw = 0;
	int rc = -1;
	if (synth_init(&s, o->series))
		goto fail;
	size_t nheap = synth_add_heap(&s, HEAP_EVERY);
	struct pd_tsdb_opts to;
	if (make_tmpdir(o->dir, "totals", dir, sizeof(dir)))
		goto fail;
	pd_tsdb_opts_init(&to);
	to.wal_disabled = 1;
	to.retention_ms = -1;
	if (pd_tsdb_open(&db, dir, &to, &err))
		goto fail;
	double t0 = now();
	if (synth_append(db, &s, 0, o->samples, &raw, &err))
		goto fail;
	double append_s = now() - t0;
	size_t total = o->series * o->samples;
	printf("\n6. Values over time: %zu series x %zu profiles (section 3's samples, %zu heap\n"
	       "   series), appended without WAL into one store (default encoding) in %.1f s.\n"
	       "   totals = pd_tsdb_select_totals of every series (each profile's sum per\n"
	       "   sample type and duration, read from the totals sections beside the\n"
	       "   timestamps); list = pd_tsdb_select of the same series (timestamps only),\n"
	       "   the reference; medians of %d calls each, alternating. In the head, then\n"
	       "   after flushing everything to blocks.\n\n",
	       o->series, o->samples, nheap, append_s, TV_RUNS);
	if (time_totals(db, total, &r[0], &err))
		goto fail;
	size_t n = 0;
	if (pd_tsdb_flush(db, 1, &err) || pd_tsdb_blocks(db, &b, &n, &err))
		goto fail;
	uint64_t tsb = 0;
	for (size_t i = 0; i < n; i++)
		tsb += b[i].ts_bytes;
	if (time_totals(db, total, &r[1], &err))
		goto fail;
	printf("%-7s %10s %9s %9s %10s %9s %8s %8s %8s %8s\n", "where", "profiles", "values",
	       "list ms", "totals ms", "totals/s", "ratio", "< 100ms", "list cpu", "tot cpu");
	print_rule(96);
	for (int w = 0; w < 2; w++) {
		char a[32];
		printf("%-7s %10zu %9zu %9.1f %10.1f %9s %7.2fx %8s %8.1f %8.1f\n",
		       w ? "blocks" : "head", r[w].timestamps, r[w].values, r[w].list_ms,
		       r[w].totals_ms,
		       si((double)r[w].timestamps / (r[w].totals_ms / 1e3), a, sizeof(a)),
		       r[w].totals_ms / r[w].list_ms, r[w].totals_ms < AIM_TOTALS_MS ? "yes" : "no",
		       r[w].list_cpu_ms, r[w].totals_cpu_ms);
	}
	print_rule(96);
	printf("timestamp chunks with their totals sections: %.2f B/profile in the blocks\n",
	       (double)tsb / (double)total);
	printf("(ratio = totals ms / list ms; profiles/s of totals in 'totals/s'; 'list cpu' and\n"
	       " 'tot cpu': the same calls' CPU time in ms, medians, which a loaded machine\n"
	       " does not inflate as it does the wall clock)\n");
	rc = 0;
fail:
	if (rc)
		fprintf(stderr, "tsdb_bench: totals: %s\n", err.msg);
	free(b);
	pd_tsdb_close(db);
	if (dir[0])
		rm_rf(dir);
	synth_fini(&s);
	return rc;
}

/* ---- main ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: tsdb_bench --corpus DIR [--corpus2 DIR] [--dir DIR] [--section 1..6]\n"
	        "                  [--series N] [--samples N] [--read-seconds S]\n"
	        "                  [--commit-seconds S]\n"
	        "  --corpus DIR       per-type folders of 1.pb.gz..N.pb.gz (default $PD_CORPUS)\n"
	        "  --corpus2 DIR      a second corpus of the same layout, for sections 1 and 2\n"
	        "                     (bench/capture.sh makes one; default $PD_CORPUS2)\n"
	        "  --dir DIR          where temporary stores go (default $TMPDIR or /tmp)\n"
	        "  --series, --samples  size of sections 3 and 6 (default 1000 x 1000)\n"
	        "  --read-seconds S   time spent reading profiles in section 3 (default 3)\n"
	        "  --commit-seconds S length of each run of section 5 (default 2)\n");
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	o.corpus = getenv("PD_CORPUS");
	o.corpus2 = getenv("PD_CORPUS2");
	if (o.corpus2 && !*o.corpus2)
		o.corpus2 = NULL;
	o.dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	o.series = 1000;
	o.samples = 1000;
	o.read_seconds = 3;
	o.commit_seconds = 2;
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
			o.corpus2 = v;
		else if (strcmp(a, "--dir") == 0)
			o.dir = v;
		else if (strcmp(a, "--section") == 0)
			o.section = atoi(v);
		else if (strcmp(a, "--series") == 0)
			o.series = (size_t)strtoull(v, NULL, 10);
		else if (strcmp(a, "--samples") == 0)
			o.samples = (size_t)strtoull(v, NULL, 10);
		else if (strcmp(a, "--read-seconds") == 0)
			o.read_seconds = atof(v);
		else if (strcmp(a, "--commit-seconds") == 0)
			o.commit_seconds = atof(v);
		else {
			usage(stderr);
			return 2;
		}
	}
	if (!o.corpus || o.series == 0 || o.samples == 0 || o.read_seconds <= 0 ||
	    o.commit_seconds <= 0 || o.section < 0 || o.section > 6) {
		usage(stderr);
		return 2;
	}
	if (o.samples > (size_t)(INT64_MAX - T0_MS) / SCRAPE_MS) {
		fprintf(stderr, "tsdb_bench: --samples is too large\n");
		return 2;
	}
	struct statfs fs;
	if (statfs(o.dir, &fs) != 0) {
		fprintf(stderr, "tsdb_bench: %s: %s\n", o.dir, strerror(errno));
		return 1;
	}
	double t0 = now();
	if (load_corpus(types, o.corpus) || (o.corpus2 && load_corpus(types2, o.corpus2))) {
		free_corpus(types);
		free_corpus(types2);
		return 1;
	}
	printf("profd tsdb bench: corpus %s%s%s, stores in %s%s\n", o.corpus,
	       o.corpus2 ? " and " : "", o.corpus2 ? o.corpus2 : "", o.dir,
	       fs.f_type == 0x01021994 ? " (tmpfs: fsync costs nothing here)" : "");
	printf(
	    "defaults: value encoding %d (v2, columnar) in groups of %d (v1: %d), zstd level %d,\n"
	    "          %d samples per chunk, block range 2 h\n",
	    PD_CHUNKENC_DEFAULT_ENCODING, PD_CHUNKENC_V2_DEFAULT_GROUP, PD_CHUNKENC_DEFAULT_GROUP,
	    PD_CHUNKENC_DEFAULT_ZSTD_LEVEL, PD_TSDB_DEFAULT_CHUNK_SAMPLES);
	int rc = 0;
	if (!rc && (o.section == 0 || o.section == 1))
		rc = section_sizes(&o);
	if (!rc && (o.section == 0 || o.section == 2))
		rc = section_sweep();
	if (!rc && (o.section == 0 || o.section == 2))
		rc = section_sweep_v2(&o);
	if (!rc && (o.section == 0 || o.section == 3))
		rc = section_listing(&o);
	if (!rc && (o.section == 0 || o.section == 4))
		rc = section_append(&o);
	if (!rc && (o.section == 0 || o.section == 5))
		rc = section_group_commit(&o);
	if (!rc && (o.section == 0 || o.section == 6))
		rc = section_totals(&o);
	fflush(stdout);
	if (!rc)
		printf("\ntotal %.0f s\n", now() - t0);
	free_corpus(types);
	free_corpus(types2);
	return rc ? 1 : 0;
}
