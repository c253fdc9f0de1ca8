/* clickhouse_bench.c: the figures of the ClickHouse storage mode, each beside the
 * local store on the same profiles in the same run: ingest (profiles per second one
 * writer stores, from the gzip body as a scrape gets it: inflate, decode, store),
 * bytes per profile (ClickHouse's system.parts after OPTIMIZE TABLE ... FINAL, per
 * table, against the local store's v2 blocks), and the merge of 1,000 profiles
 * spread over 20 series (pd_clickhouse_merge_ranges against pd_tsdb_merge and go
 * tool pprof -proto on the same files, with the top tables compared; before it, the
 * statement that sums the samples in the reader's form and in the form it had
 * before, timed and compared, with every row sent twice and after OPTIMIZE).
 * bench/clickhouse.sh starts the server and runs it; bench/README.md reads the
 * output.
 *
 * usage: clickhouse_bench --url URL --corpus DIR --dir DIR [--series N[,N...]]
 *            [--runs N] [--merge-n N] [--merge-series N] [--merge-type T]
 *            [--merge-runs N] [--go-runs N]
 *            [--go GO] [--sections ingest,merge] [--server-pid PID]
 *            [--cluster NAME --cluster-url URL [--cluster-nodes URL,...]]
 *
 * With --cluster the merge is measured a third time, over the Distributed tables of
 * that ClickHouse cluster (URL one node, --cluster-nodes the others, as
 * pd_clickhouse_opts.nodes takes them). */
#define _GNU_SOURCE /* environ */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

#include "profd/clickhouse.h"
#include "profd/labels.h"
#include "profd/pprof.h"
#include "profd/tsdb.h"
#include "profd/util.h"

#define MAX_FILES 1000 /* profiles read per type */
#define MAX_FILE_BYTES ((size_t)64 << 20)
#define MAX_RAW ((size_t)64 << 20) /* inflate limit, as a scrape's body limit */
#define T0_MS 1700000000000LL      /* the first profile's time */
#define SCRAPE_MS 15000
#define MAX_RUNS 64

static const char *const tables[] = {"series",    "strings", "functions", "mappings",
                                     "locations", "stacks",  "profiles",  "samples"};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

struct opts {
	const char *url, *corpus, *dir, *go, *sections, *cluster, *cluster_url, *cluster_nodes;
	size_t series[8], nseries;
	int runs, merge_runs, go_runs;
	size_t merge_n, merge_series;
	const char *merge_type;
	long server_pid;
};

struct ptype {
	char name[64];
	uint8_t **gz;
	size_t *gz_len;
	size_t *samples; /* each profile's samples */
	char **path;
	size_t n;
};

struct corpus {
	struct ptype *ty;
	size_t nty;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds (user + system) of this process, every thread. */
static double cpu_self(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of process pid from /proc (utime + stime); -1 when unknown. */
static double cpu_of(long pid)
{
	char path[64], buf[1024];
	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the name may hold spaces */
	unsigned long ut = 0, st = 0;
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	double s[MAX_RUNS];
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static int fail(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "clickhouse_bench: %s: %s\n", what, err->msg);
	return -1;
}

/* ---- the corpus --------------------------------------------------------------------- */

static int cmp_num(const void *a, const void *b)
{
	long x = atol(*(char *const *)a), y = atol(*(char *const *)b);
	return x < y ? -1 : x > y;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* names in dir (regular files ending in .pb.gz, or directories), sorted by cmp */
static size_t list_dir(const char *dir, int want_dirs, char **out, size_t max,
                       int (*cmp)(const void *, const void *))
{
	DIR *d = opendir(dir);
	size_t n = 0;
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		char p[PATH_MAX];
		struct stat st;
		size_t l = strlen(e->d_name);
		if (e->d_name[0] == '.')
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p) ||
		    stat(p, &st))
			continue;
		if (want_dirs
		        ? !S_ISDIR(st.st_mode)
		        : !S_ISREG(st.st_mode) || l < 7 || strcmp(e->d_name + l - 6, ".pb.gz"))
			continue;
		out[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(out, n, sizeof(*out), cmp);
	return n;
}

static int load_corpus(const char *dir, struct corpus *c)
{
	char *names[64];
	size_t nt = list_dir(dir, 1, names, 64, cmp_str);
	struct pd_err err = {0};
	c->ty = calloc(nt + 1, sizeof(*c->ty));
	if (!c->ty)
		return -1;
	for (size_t i = 0; i < nt; i++) {
		char d[PATH_MAX], *files[MAX_FILES];
		snprintf(d, sizeof(d), "%s/%s", dir, names[i]);
		size_t nf = list_dir(d, 0, files, MAX_FILES, cmp_num);
		struct ptype *t = &c->ty[c->nty];
		snprintf(t->name, sizeof(t->name), "%s", names[i]);
		free(names[i]);
		if (!nf)
			continue;
		t->gz = calloc(nf, sizeof(*t->gz));
		t->gz_len = calloc(nf, sizeof(*t->gz_len));
		t->path = calloc(nf, sizeof(*t->path));
		t->samples = calloc(nf, sizeof(*t->samples));
		if (!t->gz || !t->gz_len || !t->path || !t->samples)
			return -1;
		for (size_t k = 0; k < nf; k++) {
			char p[PATH_MAX];
			int pl = snprintf(p, sizeof(p), "%s/%s", d, files[k]);
			free(files[k]);
			t->path[k] = pl < (int)sizeof(p) ? strdup(p) : NULL;
			struct pd_pprof_profile *pp = NULL;
			if (!t->path[k] ||
			    pd_file_read(p, MAX_FILE_BYTES, &t->gz[k], &t->gz_len[k], &err) ||
			    pd_pprof_decode(&pp, t->gz[k], t->gz_len[k], NULL, &err))
				return fail(p, &err);
			t->samples[k] = pd_pprof_sample_count(pp);
			pd_pprof_destroy(pp);
		}
		t->n = nf;
		c->nty++;
	}
	if (!c->nty) {
		fprintf(stderr, "clickhouse_bench: no <type>/<n>.pb.gz files under %s\n", dir);
		return -1;
	}
	return 0;
}

static struct ptype *find_type(struct corpus *c, const char *name)
{
	for (size_t i = 0; i < c->nty; i++)
		if (!strcmp(c->ty[i].name, name))
			return &c->ty[i];
	return NULL;
}

/* ---- ClickHouse helpers -------------------------------------------------------------- */

static int ch_open(struct pd_clickhouse **c, const char *url, const char *db, const char *cluster,
                   const char *nodes, int schema)
{
	/* OPTIMIZE FINAL of millions of rows and DROP DATABASE behind running merges
	 * take longer than a scrape's write should */
	struct pd_clickhouse_opts o = {
	    .url = url, .database = db, .cluster = cluster, .timeout_ms = 1800 * 1000L};
	struct pd_err err = {0};
#ifdef PD_CLICKHOUSE_MAX_NODES /* the client knows a cluster's other nodes */
	o.nodes = nodes;
#else
	if (nodes && *nodes) {
		fprintf(stderr,
		        "clickhouse_bench: --cluster-nodes: this client takes no node list\n");
		return -1;
	}
#endif
	if (pd_clickhouse_create(c, &o, &err) || (schema && pd_clickhouse_schema_create(*c, &err)))
		return fail(url, &err);
	return 0;
}

/* Runs sql; the answer (NUL-terminated, malloc'd) into *out when out is not NULL. */
static int sql(struct pd_clickhouse *c, char **out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int sql(struct pd_clickhouse *c, char **out, const char *fmt, ...)
{
	char q[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	struct pd_buf b;
	struct pd_err err = {0};
	pd_buf_init(&b, 0);
	int rc = pd_clickhouse_exec(c, q, NULL, 0, &b, &err);
	if (!rc && out) {
		rc = pd_buf_append(&b, "", 1);
		*out = (char *)b.data;
		b.data = NULL;
	}
	pd_buf_fini(&b);
	if (rc)
		return fail(q, &err);
	return 0;
}

/* ---- one series' labels, both forms ------------------------------------------------ */

struct series {
	char name[64], instance[64];
	struct pd_storage_label tl[3]; /* __name__, instance, job: sorted */
	struct pd_labels *ls;
	struct ptype *ty;
};

static int series_init(struct series *s, struct ptype *ty, const char *instance)
{
	struct pd_err err = {0};
	snprintf(s->name, sizeof(s->name), "%s", ty->name);
	snprintf(s->instance, sizeof(s->instance), "%s", instance);
	s->ty = ty;
	s->tl[0] = (struct pd_storage_label){"__name__", s->name};
	s->tl[1] = (struct pd_storage_label){"instance", s->instance};
	s->tl[2] = (struct pd_storage_label){"job", "bench"};
	if (pd_labels_from_strings(&s->ls, &err, "__name__", s->name, "instance", s->instance,
	                           "job", "bench", NULL))
		return fail("labels", &err);
	return 0;
}

/* ---- ingest -------------------------------------------------------------------------- */

enum { ING_CH, ING_LOCAL_FSYNC, ING_LOCAL_NOSYNC, NING };
static const char *const ing_name[NING] = {"ClickHouse writer", "local store, fsync each commit",
                                           "local store, no fsync"};

struct ingest_run {
	double secs, cpu, server_cpu, flush_secs;
};

/* The profile a series stores at round k: its type's files in turn, each series
 * starting at a different file so that a round is not one profile many times. */
static size_t pick(const struct series *s, size_t i, size_t k)
{
	return (k + i) % s->ty->n;
}

/* Inflates a body as a scrape does and decodes it: *raw and *p owned by the caller. */
static int take(const uint8_t *gz, size_t len, uint8_t **raw, size_t *rawlen,
                struct pd_pprof_profile **p, struct pd_err *err)
{
	struct pd_inflate_opts io = {.format = PD_INFLATE_GZIP, .max = MAX_RAW};
	struct pd_pprof_decode_opts dopts = {.max_decompressed = MAX_RAW, .max_memory = MAX_RAW};
	*raw = NULL;
	*p = NULL;
	int rc = pd_inflate(gz, len, &io, raw, rawlen, err);
	if (!rc)
		rc = pd_pprof_decode(p, *raw, *rawlen, &dopts, err);
	if (rc) {
		free(*raw);
		*raw = NULL;
	}
	return rc;
}

static int ingest_ch(const struct opts *o, const char *db, struct series *sv, size_t ns,
                     size_t rounds, struct ingest_run *r)
{
	struct pd_clickhouse *c = NULL;
	struct pd_clickhouse_writer *w = NULL;
	struct pd_err err = {0};
	int rc = -1;
	if (ch_open(&c, o->url, db, NULL, NULL, 1))
		return -1;
	if (pd_clickhouse_writer_create(&w, c, NULL, &err)) {
		fail("writer", &err);
		goto out;
	}
	double t0 = now(), c0 = cpu_self(), s0 = cpu_of(o->server_pid);
	for (size_t k = 0; k < rounds; k++)
		for (size_t i = 0; i < ns; i++) {
			struct series *s = &sv[i];
			size_t f = pick(s, i, k);
			uint8_t *raw;
			size_t rawlen;
			struct pd_pprof_profile *p;
			if (take(s->ty->gz[f], s->ty->gz_len[f], &raw, &rawlen, &p, &err)) {
				fail(s->ty->path[f], &err);
				goto out;
			}
			int arc = pd_clickhouse_writer_append(
			    w, s->ls, T0_MS + (int64_t)k * SCRAPE_MS, p, &err);
			pd_pprof_destroy(p);
			free(raw);
			if (arc) {
				fail("writer append", &err);
				goto out;
			}
		}
	if (pd_clickhouse_writer_flush(w, &err)) {
		fail("writer flush", &err);
		goto out;
	}
	r->secs = now() - t0;
	r->cpu = cpu_self() - c0;
	r->server_cpu = s0 < 0 ? -1 : cpu_of(o->server_pid) - s0;
	rc = 0;
out:
	pd_clickhouse_writer_destroy(w);
	pd_clickhouse_destroy(c);
	return rc;
}

/* Sum of the blocks' files of db, bytes. */
static uint64_t block_bytes(struct pd_tsdb *db)
{
	struct pd_storage_block_info *bi = NULL;
	size_t n = 0;
	uint64_t sum = 0;
	struct pd_err err = {0};
	if (pd_tsdb_blocks(db, &bi, &n, &err))
		return 0;
	for (size_t i = 0; i < n; i++)
		sum += bi[i].size;
	free(bi);
	return sum;
}

/* The local store as the scrape path feeds it: one appender and commit per profile,
 * the decoded profile and the gzip body handed over (pd_tsdb_append_gzip). Then,
 * timed apart, everything flushed to blocks, whose bytes go to *bytes. */
static int ingest_local(const char *dir, int wal_sync, struct series *sv, size_t ns, size_t rounds,
                        struct ingest_run *r, uint64_t *bytes)
{
	struct pd_tsdb_opts to;
	struct pd_tsdb *db = NULL;
	struct pd_err err = {0};
	int rc = -1;
	pd_tsdb_opts_init(&to);
	to.retention_ms = -1;
	to.wal_sync = wal_sync;
	if (pd_tsdb_open(&db, dir, &to, &err))
		return fail(dir, &err);
	double t0 = now(), c0 = cpu_self();
	for (size_t k = 0; k < rounds; k++)
		for (size_t i = 0; i < ns; i++) {
			struct series *s = &sv[i];
			size_t f = pick(s, i, k);
			uint8_t *raw;
			size_t rawlen;
			struct pd_pprof_profile *p;
			if (take(s->ty->gz[f], s->ty->gz_len[f], &raw, &rawlen, &p, &err)) {
				fail(s->ty->path[f], &err);
				goto out;
			}
			struct pd_tsdb_appender *a = pd_tsdb_appender(db);
			if (!a) {
				pd_pprof_destroy(p);
				free(raw);
				goto out;
			}
			if (pd_tsdb_append_gzip(a, s->tl, 3, T0_MS + (int64_t)k * SCRAPE_MS, raw,
			                        rawlen, p, s->ty->gz[f], s->ty->gz_len[f], &err)) {
				pd_tsdb_rollback(a);
				free(raw);
				fail("append", &err);
				goto out;
			}
			free(raw);
			if (pd_tsdb_commit(a, &err)) {
				fail("commit", &err);
				goto out;
			}
		}
	r->secs = now() - t0;
	r->cpu = cpu_self() - c0;
	r->server_cpu = -1;
	t0 = now();
	if (pd_tsdb_flush(db, 1, &err)) {
		fail("flush", &err);
		goto out;
	}
	r->flush_secs = now() - t0;
	if (bytes)
		*bytes = block_bytes(db);
	rc = 0;
out:
	pd_tsdb_close(db);
	return rc;
}

static void rm_rf(const char *path)
{
	char *argv[] = {"rm", "-rf", (char *)path, NULL};
	pid_t pid;
	int st;
	if (posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) == 0)
		waitpid(pid, &st, 0);
}

/* Per table: rows in the active parts, and after OPTIMIZE FINAL rows, compressed,
 * uncompressed and on-disk bytes. */
struct table_bytes {
	uint64_t rows_before, parts_before, disk_before, rows, comp, uncomp, disk;
};

static int parts_of(struct pd_clickhouse *c, const char *db, struct table_bytes *tb, int before)
{
	char *ans = NULL;
	if (sql(c, &ans,
	        "SELECT table, sum(rows), sum(data_compressed_bytes), "
	        "sum(data_uncompressed_bytes), sum(bytes_on_disk), count() FROM system.parts WHERE "
	        "database = '%s' AND active GROUP BY table FORMAT TSV",
	        db))
		return -1;
	for (char *line = strtok(ans, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64];
		unsigned long long rows, comp, uncomp, disk, parts;
		if (sscanf(line, "%63s %llu %llu %llu %llu %llu", name, &rows, &comp, &uncomp,
		           &disk, &parts) != 6)
			continue;
		for (size_t t = 0; t < NTABLES; t++)
			if (!strcmp(name, tables[t])) {
				if (before) {
					tb[t].rows_before = rows;
					tb[t].parts_before = parts;
					tb[t].disk_before = disk;
				} else {
					tb[t].rows = rows;
					tb[t].comp = comp;
					tb[t].uncomp = uncomp;
					tb[t].disk = disk;
				}
			}
	}
	free(ans);
	return 0;
}

static int ch_bytes(const struct opts *o, const char *db, struct table_bytes *tb)
{
	struct pd_clickhouse *c = NULL;
	int rc = -1;
	memset(tb, 0, NTABLES * sizeof(*tb));
	if (ch_open(&c, o->url, db, NULL, NULL, 0))
		return -1;
	if (parts_of(c, db, tb, 1))
		goto out;
	for (size_t t = 0; t < NTABLES; t++)
		if (sql(c, NULL, "OPTIMIZE TABLE %s.%s FINAL", db, tables[t]))
			goto out;
	rc = parts_of(c, db, tb, 0);
out:
	pd_clickhouse_destroy(c);
	return rc;
}

static int section_ingest(const struct opts *o, struct corpus *cp, size_t ns)
{
	struct series *sv = calloc(ns, sizeof(*sv));
	struct ingest_run run[NING][MAX_RUNS];
	uint64_t local_bytes = 0;
	size_t rounds = SIZE_MAX, total = 0, samples = 0;
	double gz = 0;
	int rc = -1;
	if (!sv)
		return -1;
	/* series i is of type i mod types; every series has as many rounds as the
	 * smallest type has files */
	for (size_t i = 0; i < ns; i++) {
		char inst[64];
		snprintf(inst, sizeof(inst), "host-%04zu:8080", i / cp->nty);
		if (series_init(&sv[i], &cp->ty[i % cp->nty], inst))
			goto out;
		if (sv[i].ty->n < rounds)
			rounds = sv[i].ty->n;
	}
	for (size_t k = 0; k < rounds; k++)
		for (size_t i = 0; i < ns; i++) {
			gz += (double)sv[i].ty->gz_len[pick(&sv[i], i, k)];
			samples += sv[i].ty->samples[pick(&sv[i], i, k)];
			total++;
		}
	printf("\n== ingest and bytes: %zu series x %zu profiles = %zu profiles (%zu types, "
	       "%.0f B gzip a profile on average, %zu samples)\n",
	       ns, rounds, total, cp->nty, gz / (double)total, samples);
	fflush(stdout);

	/* the three ways in turn, the order rotating from run to run, so that all meet
	 * the same load */
	char keep_db[64] = "";
	for (int r = 0; r < o->runs; r++)
		for (int x = 0; x < NING; x++) {
			int v = (x + r) % NING;
			char name[PATH_MAX];
			struct ingest_run *ir = &run[v][r];
			memset(ir, 0, sizeof(*ir));
			if (v == ING_CH) {
				char dbn[64];
				snprintf(dbn, sizeof(dbn), "bench_ingest_%zu_%d", ns, r);
				if (ingest_ch(o, dbn, sv, ns, rounds, ir))
					goto out;
				if (!r)
					memcpy(keep_db, dbn, sizeof(keep_db));
			} else {
				snprintf(name, sizeof(name), "%s/local-%zu-%d-%d", o->dir, ns, r,
				         v);
				if (ingest_local(name, v == ING_LOCAL_NOSYNC, sv, ns, rounds, ir,
				                 v == ING_LOCAL_FSYNC && !r ? &local_bytes : NULL))
					goto out;
				rm_rf(name);
			}
		}
	/* the databases of later runs go, the first one is measured */
	{
		struct pd_clickhouse *c = NULL;
		if (ch_open(&c, o->url, "default", NULL, NULL, 0))
			goto out;
		for (int r = 1; r < o->runs; r++)
			sql(c, NULL, "DROP DATABASE IF EXISTS bench_ingest_%zu_%d", ns, r);
		pd_clickhouse_destroy(c);
	}

	printf("\ningest: from the gzip body (inflate, decode, store), %d runs, medians\n",
	       o->runs);
	printf("%-32s %9s %11s %9s %10s %11s %9s\n", "", "seconds", "profiles/s", "bench cpu",
	       "server cpu", "+ blocks/s", "vs CH");
	double rate[NING];
	for (int v = 0; v < NING; v++) {
		double s[MAX_RUNS], cpu[MAX_RUNS], srv[MAX_RUNS], wf[MAX_RUNS];
		for (int r = 0; r < o->runs; r++) {
			s[r] = run[v][r].secs;
			cpu[r] = run[v][r].cpu;
			srv[r] = run[v][r].server_cpu;
			wf[r] = (double)total / (run[v][r].secs + run[v][r].flush_secs);
		}
		double ms = median(s, (size_t)o->runs);
		rate[v] = (double)total / ms;
		char srvs[32] = "-", wfs[32] = "-";
		if (v == ING_CH && srv[0] >= 0)
			snprintf(srvs, sizeof(srvs), "%.2f", median(srv, (size_t)o->runs));
		if (v != ING_CH)
			snprintf(wfs, sizeof(wfs), "%.0f", median(wf, (size_t)o->runs));
		char name[64];
		if (v == ING_CH)
			snprintf(name, sizeof(name), "%s (batch %d)", ing_name[v],
			         PD_CLICKHOUSE_DEFAULT_BATCH_PROFILES);
		else
			snprintf(name, sizeof(name), "%s", ing_name[v]);
		printf("%-32s %9.2f %11.0f %9.2f %10s %11s %8.2fx\n", name, ms, rate[v],
		       median(cpu, (size_t)o->runs), srvs, wfs, rate[v] / rate[ING_CH]);
	}
	printf("ratio ClickHouse / local store: %.2fx (fsync each commit), %.2fx (no fsync)\n",
	       rate[ING_CH] / rate[ING_LOCAL_FSYNC], rate[ING_CH] / rate[ING_LOCAL_NOSYNC]);

	/* bytes */
	struct table_bytes tb[NTABLES];
	if (ch_bytes(o, keep_db, tb))
		goto out;
	printf("\nbytes per profile: ClickHouse's system.parts (active parts) after OPTIMIZE TABLE "
	       "... FINAL on every table\n");
	printf("%-10s %11s %11s %12s %14s %12s %10s\n", "table", "rows before", "rows after",
	       "compressed B", "uncompressed B", "on disk B", "disk B/prof");
	struct table_bytes all = {0};
	for (size_t t = 0; t < NTABLES; t++) {
		printf("%-10s %11" PRIu64 " %11" PRIu64 " %12" PRIu64 " %14" PRIu64 " %12" PRIu64
		       " %10.1f\n",
		       tables[t], tb[t].rows_before, tb[t].rows, tb[t].comp, tb[t].uncomp,
		       tb[t].disk, (double)tb[t].disk / (double)total);
		all.rows_before += tb[t].rows_before;
		all.parts_before += tb[t].parts_before;
		all.disk_before += tb[t].disk_before;
		all.rows += tb[t].rows;
		all.comp += tb[t].comp;
		all.uncomp += tb[t].uncomp;
		all.disk += tb[t].disk;
	}
	printf("%-10s %11" PRIu64 " %11" PRIu64 " %12" PRIu64 " %14" PRIu64 " %12" PRIu64
	       " %10.1f\n",
	       "all", all.rows_before, all.rows, all.comp, all.uncomp, all.disk,
	       (double)all.disk / (double)total);
	double n = (double)total;
	printf("\n%-38s %12s %10s\n", "", "B/profile", "vs local");
	printf("%-38s %12.1f %9.2fx\n", "ClickHouse, on disk (bytes_on_disk)", (double)all.disk / n,
	       (double)all.disk / (double)local_bytes);
	printf("%-38s %12.1f %9.2fx\n", "ClickHouse, compressed columns", (double)all.comp / n,
	       (double)all.comp / (double)local_bytes);
	printf("%-38s %12.1f %9.2fx\n", "ClickHouse, uncompressed columns", (double)all.uncomp / n,
	       (double)all.uncomp / (double)local_bytes);
	printf("%-38s %12.1f %9.2fx   (%" PRIu64 " parts)\n", "ClickHouse, on disk before OPTIMIZE",
	       (double)all.disk_before / n, (double)all.disk_before / (double)local_bytes,
	       all.parts_before);
	printf("%-38s %12.1f %9.2fx\n", "local store v2 (block files)", (double)local_bytes / n,
	       1.0);
	printf("%-38s %12.1f %9.2fx\n", "gzip files (as served)", gz / n, gz / (double)local_bytes);
	rc = 0;
out:
	for (size_t i = 0; i < ns; i++)
		pd_labels_destroy(sv[i].ls);
	free(sv);
	fflush(stdout);
	return rc;
}

/* ---- merge --------------------------------------------------------------------------- */

/* Runs argv with stdout to out_path; its wall time into *secs, its CPU time (user +
 * system, every thread) into *cpu. */
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
		fprintf(stderr, "clickhouse_bench: cannot run %s: %s\n", argv[0], strerror(rc));
		return -1;
	}
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			return -1;
	*secs = now() - t0;
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		uint8_t *e = NULL;
		size_t el = 0;
		pd_file_read(err_path, 4096, &e, &el, NULL);
		fprintf(stderr, "clickhouse_bench: %s failed: %.*s\n", argv[0], (int)el,
		        e ? (const char *)e : "");
		free(e);
		return -1;
	}
	return 0;
}

/* Compares the top tables of a and b for every sample type of a: 0 when equal
 * (names, flat, cum, total, rows), else -1 with the first difference in why. */
static int tops_agree(const struct pd_pprof_profile *a, const struct pd_pprof_profile *b,
                      size_t *rows, char *why, size_t size)
{
	struct pd_err err = {0};
	*rows = 0;
	if (pd_pprof_sample_type_count(a) != pd_pprof_sample_type_count(b)) {
		snprintf(why, size, "%zu sample types against %zu", pd_pprof_sample_type_count(a),
		         pd_pprof_sample_type_count(b));
		return -1;
	}
	for (size_t t = 0; t < pd_pprof_sample_type_count(a); t++) {
		const char *name = pd_pprof_sample_type(a, t);
		struct pd_pprof_top *ta = NULL, *tb = NULL;
		int ib, rc = -1;
		if (pd_pprof_sample_index(b, name, &ib, &err)) {
			snprintf(why, size, "no sample type %s", name);
			return -1;
		}
		if (pd_pprof_top(a, (int)t, &ta, &err) || pd_pprof_top(b, ib, &tb, &err)) {
			snprintf(why, size, "top %.100s: %.300s", name, err.msg);
			goto next;
		}
		if (ta->total != tb->total || ta->nrows != tb->nrows) {
			snprintf(why, size,
			         "%s: total %" PRId64 " against %" PRId64 ", %zu rows "
			         "against %zu",
			         name, ta->total, tb->total, ta->nrows, tb->nrows);
			goto next;
		}
		for (size_t r = 0; r < ta->nrows; r++) {
			const struct pd_pprof_top_row *x = &ta->rows[r], *y = &tb->rows[r];
			if (strcmp(x->name, y->name) || x->flat != y->flat || x->cum != y->cum) {
				snprintf(why, size,
				         "%s row %zu: %s %" PRId64 "/%" PRId64
				         " against %s %" PRId64 "/%" PRId64,
				         name, r, x->name, x->flat, x->cum, y->name, y->flat,
				         y->cum);
				goto next;
			}
		}
		*rows += ta->nrows;
		rc = 0;
	next:
		pd_pprof_top_destroy(ta);
		pd_pprof_top_destroy(tb);
		if (rc)
			return -1;
	}
	return 0;
}

static int merge_emit(void *ctx, struct pd_pprof_profile *p, size_t count, int64_t first_t,
                      int64_t last_t, size_t bytes)
{
	struct pd_pprof_merger *mg = ctx;
	struct pd_err err = {0};
	(void)count;
	(void)first_t;
	(void)last_t;
	(void)bytes;
	int rc = pd_pprof_merger_add(mg, p, &err);
	pd_pprof_destroy(p);
	if (rc)
		fail("merger add", &err);
	return rc;
}

/* The local store's merge, as the API runs it: pd_tsdb_merge of each series into
 * one merger. */
static int local_merge(struct pd_tsdb *db, const struct series *ms, size_t nms, int64_t t1,
                       struct pd_pprof_profile **out)
{
	struct pd_pprof_merger *mg = NULL;
	struct pd_err err = {0};
	if (pd_pprof_merger_create(&mg, &err))
		return fail("merger", &err);
	for (size_t i = 0; i < nms; i++)
		if (pd_tsdb_merge(db, ms[i].tl, 3, T0_MS, t1, merge_emit, mg, &err)) {
			pd_pprof_merger_destroy(mg);
			return fail("pd_tsdb_merge", &err);
		}
	if (pd_pprof_merger_finish(mg, out, &err))
		return fail("merger finish", &err);
	return 0;
}

/* `go env GOTOOLDIR`/pprof */
static int find_pprof(const char *go, char *out, size_t size)
{
	char cmd[PATH_MAX + 32], dir[PATH_MAX] = "";
	snprintf(cmd, sizeof(cmd), "'%s' env GOTOOLDIR 2>/dev/null", go);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
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

/* Profile k of the merge: series k mod nseries, file k mod the type's files. */
#define MERGE_TS(k) ((int64_t)(T0_MS + (int64_t)(k)*SCRAPE_MS))

/* Runs q on every node of c (the one server, or each node of the cluster). */
static int on_nodes(struct pd_clickhouse *c, const char *q)
{
	struct pd_err err = {0};
	for (size_t i = 0; i < pd_clickhouse_nnodes(c); i++)
		if (pd_clickhouse_exec_at(c, i, q, NULL, 0, NULL, &err))
			return fail(q, &err);
	return 0;
}

/* Writes the n profiles of the merge series into ClickHouse database db (through
 * client opts cluster when not NULL) twice, by two writers, with the servers'
 * merges of parts stopped: every row is there twice, as after a spool replay or
 * two scrapers, and not yet merged away. OPTIMIZE (merge_optimize) later. */
static int merge_fill_ch(const struct opts *o, const char *url, const char *cluster,
                         const char *nodes, const char *db, const struct series *ms, size_t nms,
                         struct pd_clickhouse **out)
{
	struct pd_err err = {0};
	if (ch_open(out, url, db, cluster, nodes, 1) || on_nodes(*out, "SYSTEM STOP MERGES"))
		return -1;
	for (int copy = 0; copy < 2; copy++) {
		struct pd_clickhouse_writer *w = NULL;
		if (pd_clickhouse_writer_create(&w, *out, NULL, &err))
			return fail("writer", &err);
		for (size_t k = 0; k < o->merge_n; k++) {
			struct pd_pprof_profile *p = NULL;
			const struct series *s = &ms[k % nms];
			size_t f = k % s->ty->n;
			if (pd_pprof_decode(&p, s->ty->gz[f], s->ty->gz_len[f], NULL, &err) ||
			    pd_clickhouse_writer_append(w, s->ls, MERGE_TS(k), p, &err)) {
				pd_pprof_destroy(p);
				pd_clickhouse_writer_destroy(w);
				return fail(s->ty->path[f], &err);
			}
			pd_pprof_destroy(p);
		}
		int rc = pd_clickhouse_writer_flush(w, &err);
		pd_clickhouse_writer_destroy(w);
		if (rc)
			return fail("writer flush", &err);
	}
	return 0;
}

/* Parts merged, as a store that has been running a while; with a cluster each
 * node's local tables. */
static int merge_optimize(struct pd_clickhouse *c, const char *db, int cluster)
{
	if (on_nodes(c, "SYSTEM START MERGES"))
		return -1;
	for (size_t t = 0; t < NTABLES; t++) {
		char q[256];
		snprintf(q, sizeof(q), "OPTIMIZE TABLE %s.%s%s FINAL", db, tables[t],
		         cluster ? "_local" : "");
		if (on_nodes(c, q))
			return -1;
	}
	return 0;
}

/* The statement that sums the samples of a merge, in the form the reader used
 * before (form 0: each row once by LIMIT 1 BY in a subquery, the GROUP BY outside
 * it, so on a cluster on the node asked) or the one it uses (form 1: FROM samples
 * FINAL ... GROUP BY, which a Distributed table runs on every shard). */
static int sums_sql(struct pd_buf *q, int form, const char *db, const struct series *ms, size_t nms,
                    size_t n)
{
	struct pd_buf w;
	pd_buf_init(&w, 0);
	int rc = 0;
	for (size_t i = 0; !rc && i < nms && i < n; i++)
		rc = pd_buf_printf(
		    &w, "%s(series_id = %" PRIu64 " AND ts >= %" PRId64 " AND ts <= %" PRId64 ")",
		    i ? " OR " : "", pd_labels_hash(ms[i].ls), MERGE_TS(0), MERGE_TS(n - 1));
	if (!rc)
		rc = pd_buf_append(&w, "", 1);
	if (!rc)
		rc = pd_buf_printf(q, "SELECT stack_id, sumForEach(values), label_key, label_str, "
		                      "label_num, label_unit, min(indexOf([");
	for (size_t k = 0; !rc && k < n; k++)
		rc = pd_buf_printf(q, "%s%" PRId64, k ? "," : "", MERGE_TS(k));
	if (!rc && form == 0)
		rc = pd_buf_printf(
		    q,
		    "], ts) * 4294967296 + ordinal) AS first FROM (SELECT ts, ordinal, "
		    "stack_id, values, label_key, label_str, label_num, label_unit "
		    "FROM %s.samples WHERE %s LIMIT 1 BY series_id, ts, ordinal) ",
		    db, (const char *)w.data);
	else if (!rc)
		rc = pd_buf_printf(q,
		                   "], ts) * 4294967296 + ordinal) AS first FROM %s.samples "
		                   "FINAL WHERE %s ",
		                   db, (const char *)w.data);
	if (!rc)
		rc = pd_buf_printf(q, "GROUP BY stack_id, label_key, label_str, label_num, "
		                      "label_unit ORDER BY first FORMAT RowBinary");
	if (!rc)
		rc = pd_buf_append(q, "", 1);
	pd_buf_fini(&w);
	return rc;
}

/* Sample rows (all, and once each) on node i of c, for the rows-per-shard line. */
static int shard_rows(struct pd_clickhouse *c, size_t i, const char *table, char *out, size_t size)
{
	struct pd_buf b;
	struct pd_err err = {0};
	char q[256];
	snprintf(q, sizeof(q),
	         "SELECT count(), uniqExact(series_id, ts, ordinal), uniqExact(series_id) FROM %s",
	         table);
	pd_buf_init(&b, 0);
	int rc = pd_clickhouse_exec_at(c, i, q, NULL, 0, &b, &err);
	if (!rc)
		rc = pd_buf_append(&b, "", 1);
	if (rc) {
		pd_buf_fini(&b);
		return fail(q, &err);
	}
	unsigned long long all = 0, once = 0, ns = 0;
	sscanf((const char *)b.data, "%llu %llu %llu", &all, &once, &ns);
	snprintf(out, size, "%llu rows (%llu once each) of %llu series", all, once, ns);
	pd_buf_fini(&b);
	return 0;
}

enum { F_BEFORE, F_FINAL, NFORM };
static const char *const form_name[NFORM] = {"LIMIT 1 BY subquery, GROUP BY outside (before)",
                                             "FINAL, GROUP BY (two stages on a cluster)"};

/* Times the two forms of the sums statement on c (and cl), runs times after a
 * warm-up, and prints them; the answers of both forms must be equal byte for
 * byte. */
static int merge_forms(const struct opts *o, struct pd_clickhouse *ch, struct pd_clickhouse *cl,
                       const struct series *ms, size_t nms, const char *state)
{
	struct pd_clickhouse *cs[2] = {ch, cl};
	const char *cname[2] = {"one server", "two-shard cluster"};
	struct pd_buf q[NFORM], ans[2][NFORM];
	double v[2][NFORM][MAX_RUNS], sc[2][NFORM][MAX_RUNS];
	struct pd_err err = {0};
	int rc = 0;
	for (int f = 0; f < NFORM; f++) {
		pd_buf_init(&q[f], 0);
		for (int c = 0; c < 2; c++)
			pd_buf_init(&ans[c][f], 0);
		if (sums_sql(&q[f], f, "bench_merge", ms, nms, o->merge_n))
			rc = -1;
	}
	for (int r = -1; !rc && r < o->merge_runs; r++)
		for (int x = 0; !rc && x < 2 * NFORM; x++) {
			int c = x / NFORM, f = (x + (r < 0 ? 0 : r)) % NFORM;
			if (!cs[c])
				continue;
			ans[c][f].len = 0;
			double a = now(), s0 = cpu_of(o->server_pid);
			if (pd_clickhouse_exec(cs[c], (const char *)q[f].data, NULL, 0, &ans[c][f],
			                       &err)) {
				rc = fail(form_name[f], &err);
				break;
			}
			if (r >= 0) {
				v[c][f][r] = now() - a;
				sc[c][f][r] = !c && s0 >= 0 ? cpu_of(o->server_pid) - s0 : -1;
			}
		}
	size_t mr = (size_t)o->merge_runs;
	if (!rc) {
		printf("\nthe sums statement alone, %s (medians of %d runs after a warm-up)\n",
		       state, o->merge_runs);
		printf("%-20s %-48s %10s %10s %14s %10s\n", "", "form", "ms", "vs before",
		       "server cpu ms", "answer B");
	}
	for (int c = 0; !rc && c < 2; c++)
		for (int f = 0; cs[c] && f < NFORM; f++) {
			char srv[32] = "-";
			double m = median(v[c][f], mr), m0 = median(v[c][F_BEFORE], mr);
			if (median(sc[c][f], mr) >= 0)
				snprintf(srv, sizeof(srv), "%.1f", median(sc[c][f], mr) * 1e3);
			printf("%-20s %-48s %10.1f %9.2fx %14s %10zu\n", cname[c], form_name[f],
			       m * 1e3, m / m0, srv, ans[c][f].len);
		}
	for (int c = 0; !rc && c < 2; c++) {
		if (!cs[c])
			continue;
		int same = ans[c][0].len == ans[c][1].len &&
		           !memcmp(ans[c][0].data, ans[c][1].data, ans[c][0].len);
		int same_ch = !c || (ans[0][1].len == ans[1][1].len &&
		                     !memcmp(ans[0][1].data, ans[1][1].data, ans[1][1].len));
		printf("answers, %s: %s%s\n", cname[c],
		       same ? "both forms equal" : "the forms DIFFER",
		       c ? (same_ch ? ", and equal to the one server's"
		                    : ", DIFFER from the one server's")
		         : "");
		if (!same || !same_ch)
			rc = -1;
	}
	for (int f = 0; f < NFORM; f++) {
		pd_buf_fini(&q[f]);
		for (int c = 0; c < 2; c++)
			pd_buf_fini(&ans[c][f]);
	}
	fflush(stdout);
	return rc;
}

static int section_merge(const struct opts *o, struct corpus *cp)
{
	struct ptype *ty = find_type(cp, o->merge_type);
	struct series ms[PD_CLICKHOUSE_MERGE_MAX_RANGES];
	struct pd_clickhouse_range rg[PD_CLICKHOUSE_MERGE_MAX_RANGES];
	size_t nms = o->merge_series < o->merge_n ? o->merge_series : o->merge_n;
	struct pd_clickhouse *ch = NULL, *cl = NULL;
	struct pd_tsdb *db = NULL;
	struct pd_pprof_profile *m_ch = NULL, *m_cl = NULL, *m_local = NULL, *m_go = NULL;
	char **argv_go = NULL, **argv_pprof = NULL;
	struct pd_err err = {0};
	char gotool[PATH_MAX], path[PATH_MAX], out_path[PATH_MAX], err_path[PATH_MAX];
	int rc = -1;
	size_t n = o->merge_n;
	int64_t t1 = T0_MS + (int64_t)(n - 1) * SCRAPE_MS;
	if (!ty) {
		fprintf(stderr, "clickhouse_bench: --merge-type %s: no such folder in the corpus\n",
		        o->merge_type);
		return -1;
	}
	if (find_pprof(o->go, gotool, sizeof(gotool))) {
		fprintf(stderr,
		        "clickhouse_bench: `%s env GOTOOLDIR`/pprof not found: the reference "
		        "is go tool pprof (Debian golang-go)\n",
		        o->go);
		return -1;
	}
	memset(ms, 0, sizeof(ms));
	for (size_t i = 0; i < nms; i++) {
		char inst[64];
		snprintf(inst, sizeof(inst), "merge-%03zu:8080", i);
		if (series_init(&ms[i], ty, inst))
			goto out;
		rg[i] = (struct pd_clickhouse_range){pd_labels_hash(ms[i].ls), T0_MS, t1};
	}
	printf("\n== merge of %zu %s profiles (the corpus' %zu %s files in turn, %d s apart, "
	       "profile k in series k mod %zu)\n",
	       n, ty->name, ty->n, ty->name, SCRAPE_MS / 1000, nms);
	fflush(stdout);

	/* the same profiles in ClickHouse, in the local store (as blocks) and as files */
	if (merge_fill_ch(o, o->url, NULL, NULL, "bench_merge", ms, nms, &ch))
		goto out;
	if (o->cluster && merge_fill_ch(o, o->cluster_url, o->cluster, o->cluster_nodes,
	                                "bench_merge", ms, nms, &cl))
		goto out;
	for (size_t i = 0; cl && i < pd_clickhouse_nnodes(cl); i++) {
		char line[160];
		if (shard_rows(cl, i, "bench_merge.samples_local", line, sizeof(line)))
			goto out;
		printf("samples on shard %zu of the cluster: %s\n", i + 1, line);
	}
	if (merge_forms(o, ch, cl, ms, nms, "every row sent twice, parts not merged"))
		goto out;
	if (merge_optimize(ch, "bench_merge", 0) || (cl && merge_optimize(cl, "bench_merge", 1)))
		goto out;
	if (merge_forms(o, ch, cl, ms, nms, "after OPTIMIZE ... FINAL"))
		goto out;
	struct pd_tsdb_opts to;
	pd_tsdb_opts_init(&to);
	to.retention_ms = -1;
	to.wal_disabled = 1;
	snprintf(path, sizeof(path), "%s/merge-local", o->dir);
	if (pd_tsdb_open(&db, path, &to, &err)) {
		fail(path, &err);
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		size_t f = k % ty->n;
		uint8_t *raw = NULL;
		size_t rawlen;
		struct pd_pprof_profile *p;
		if (!a || take(ty->gz[f], ty->gz_len[f], &raw, &rawlen, &p, &err) ||
		    pd_tsdb_append_gzip(a, ms[k % nms].tl, 3, MERGE_TS(k), raw, rawlen, p,
		                        ty->gz[f], ty->gz_len[f], &err)) {
			pd_tsdb_rollback(a);
			free(raw);
			fail(ty->path[f], &err);
			goto out;
		}
		free(raw);
		if (pd_tsdb_commit(a, &err)) {
			fail("commit", &err);
			goto out;
		}
	}
	if (pd_tsdb_flush(db, 1, &err)) {
		fail("flush", &err);
		goto out;
	}

	/* the stores' merges, in turn, after one warm-up each */
	enum { M_CH, M_CL, M_LOCAL, NM };
	double v[NM][MAX_RUNS], cpu[NM][MAX_RUNS], scpu[NM][MAX_RUNS];
	for (int r = -1; r < o->merge_runs; r++)
		for (int x = 0; x < NM; x++) {
			int w = (x + (r < 0 ? 0 : r)) % NM;
			struct pd_pprof_profile *p = NULL;
			if (w == M_CL && !cl)
				continue;
			double a = now(), c0 = cpu_self(), s0 = cpu_of(o->server_pid);
			if (w == M_LOCAL ? local_merge(db, ms, nms, t1, &p)
			                 : pd_clickhouse_merge_ranges(w == M_CH ? ch : cl, rg, nms,
			                                              &p, NULL, &err)) {
				if (w != M_LOCAL)
					fail("pd_clickhouse_merge", &err);
				goto out;
			}
			if (r >= 0) {
				v[w][r] = now() - a;
				cpu[w][r] = cpu_self() - c0;
				/* the server's CPU is known for the one server */
				scpu[w][r] = w == M_CH && s0 >= 0 ? cpu_of(o->server_pid) - s0 : -1;
			}
			struct pd_pprof_profile **keep = w == M_CH   ? &m_ch
			                                 : w == M_CL ? &m_cl
			                                             : &m_local;
			pd_pprof_destroy(*keep);
			*keep = p;
		}

	/* go tool pprof -proto F... > out, and the pprof binary directly */
	snprintf(path, sizeof(path), "%s/none", o->dir);
	setenv("PPROF_BINARY_PATH", path, 1);
	setenv("PPROF_TMPDIR", o->dir, 1);
	argv_go = calloc(n + 5, sizeof(char *));
	argv_pprof = calloc(n + 3, sizeof(char *));
	if (!argv_go || !argv_pprof)
		goto out;
	argv_go[0] = (char *)o->go;
	argv_go[1] = "tool";
	argv_go[2] = "pprof";
	argv_go[3] = "-proto";
	argv_pprof[0] = gotool;
	argv_pprof[1] = "-proto";
	for (size_t k = 0; k < n; k++)
		argv_go[4 + k] = argv_pprof[2 + k] = ty->path[k % ty->n];
	snprintf(out_path, sizeof(out_path), "%s/go-merge.pb.gz", o->dir);
	snprintf(err_path, sizeof(err_path), "%s/go-merge.err", o->dir);
	double gv[2][MAX_RUNS], gc[2][MAX_RUNS];
	for (int which = 0; which < 2; which++) {
		double d, dc;
		char **argv = which ? argv_pprof : argv_go;
		if (run_process(argv, out_path, err_path, &d, &dc)) /* warm-up */
			goto out;
		for (int r = 0; r < o->go_runs; r++)
			if (run_process(argv, out_path, err_path, &gv[which][r], &gc[which][r]))
				goto out;
	}
	if (pd_pprof_read_file(&m_go, out_path, NULL, &err)) {
		fail("go's merge", &err);
		goto out;
	}

	double ms_ch = median(v[M_CH], (size_t)o->merge_runs) * 1e3;
	double ms_local = median(v[M_LOCAL], (size_t)o->merge_runs) * 1e3;
	double ms_go = median(gv[0], (size_t)o->go_runs) * 1e3;
	double ms_pprof = median(gv[1], (size_t)o->go_runs) * 1e3;
	size_t mr = (size_t)o->merge_runs;
	char srv[32] = "-";
	if (median(scpu[M_CH], mr) >= 0)
		snprintf(srv, sizeof(srv), "%.1f", median(scpu[M_CH], mr) * 1e3);
	printf("\n%-44s %10s %12s %14s %10s %14s\n", "", "ms", "go tool / it", "it / local",
	       "cpu ms", "server cpu ms");
	printf("%-44s %10.1f %11.2fx %13.2fx %10.1f %14s\n",
	       "ClickHouse, one server (merge_ranges)", ms_ch, ms_go / ms_ch, ms_ch / ms_local,
	       median(cpu[M_CH], mr) * 1e3, srv);
	if (cl) {
		double ms_cl = median(v[M_CL], mr) * 1e3;
		printf("%-44s %10.1f %11.2fx %13.2fx %10.1f %14s\n",
		       "ClickHouse, two-shard cluster", ms_cl, ms_go / ms_cl, ms_cl / ms_local,
		       median(cpu[M_CL], mr) * 1e3, "-");
	} else {
		printf("%-44s %10s   (no --cluster given)\n", "ClickHouse, two-shard cluster",
		       "not run");
	}
	printf("%-44s %10.1f %11.2fx %13.2fx %10.1f %14s\n", "local store (pd_tsdb_merge, blocks)",
	       ms_local, ms_go / ms_local, 1.0, median(cpu[M_LOCAL], mr) * 1e3, "-");
	printf("%-44s %10.1f %11.2fx %13.2fx %10.1f %14s\n", "go tool pprof -proto (the files)",
	       ms_go, 1.0, ms_go / ms_local, median(gc[0], (size_t)o->go_runs) * 1e3, "-");
	printf("%-44s %10.1f %11.2fx %13.2fx %10.1f %14s\n", "pprof binary -proto, directly",
	       ms_pprof, ms_go / ms_pprof, ms_pprof / ms_local,
	       median(gc[1], (size_t)o->go_runs) * 1e3, "-");
	printf("(medians of %d runs for the stores, %d for pprof, each after a warm-up run)\n",
	       o->merge_runs, o->go_runs);

	/* equal results */
	int bad = 0;
	struct {
		const char *what;
		struct pd_pprof_profile *p;
	} cmp[] = {{"ClickHouse, one server", m_ch},
	           {"ClickHouse, two-shard cluster", m_cl},
	           {"local store", m_local}};
	for (size_t i = 0; i < sizeof(cmp) / sizeof(cmp[0]); i++) {
		char why[512];
		size_t rows = 0;
		if (!cmp[i].p)
			continue;
		if (tops_agree(cmp[i].p, m_go, &rows, why, sizeof(why))) {
			printf("top tables, %s against go tool pprof: DIFFER: %s\n", cmp[i].what,
			       why);
			bad = 1;
		} else {
			printf("top tables, %s against go tool pprof: equal (%zu sample types, "
			       "%zu rows)\n",
			       cmp[i].what, pd_pprof_sample_type_count(m_go), rows);
		}
	}
	rc = bad ? -1 : 0;
out:
	free(argv_go);
	free(argv_pprof);
	pd_pprof_destroy(m_ch);
	pd_pprof_destroy(m_cl);
	pd_pprof_destroy(m_local);
	pd_pprof_destroy(m_go);
	pd_tsdb_close(db);
	pd_clickhouse_destroy(ch);
	pd_clickhouse_destroy(cl);
	for (size_t i = 0; i < nms; i++)
		pd_labels_destroy(ms[i].ls);
	fflush(stdout);
	return rc;
}

/* ---- main ---------------------------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr,
	        "usage: clickhouse_bench --url URL --corpus DIR --dir DIR [--series N[,N...]]\n"
	        "           [--runs N] [--merge-n N] [--merge-series N] [--merge-type TYPE]\n"
	        "           [--merge-runs N] [--go-runs N] [--go GO] [--sections ingest,merge] "
	        "[--server-pid PID]\n"
	        "           [--cluster NAME --cluster-url URL [--cluster-nodes URL,...]]\n");
	return 2;
}

static int want(const struct opts *o, const char *section)
{
	if (!o->sections)
		return 1;
	size_t l = strlen(section);
	for (const char *p = o->sections; (p = strstr(p, section)); p += l)
		if ((p == o->sections || p[-1] == ',') && (p[l] == 0 || p[l] == ','))
			return 1;
	return 0;
}

/* A whole number in [lo, hi] for flag name, or -1 with a message. */
static long number(const char *name, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "clickhouse_bench: %s: want a number from %ld to %ld, not \"%s\"\n",
		        name, lo, hi, s);
		return -1;
	}
	return v;
}

int main(int argc, char **argv)
{
	struct opts o = {.go = "go",
	                 .runs = 3,
	                 .merge_runs = 7,
	                 .go_runs = 3,
	                 .merge_n = 1000,
	                 .merge_series = 20,
	                 .merge_type = "heap"};
	o.series[0] = 7;
	o.series[1] = 280;
	o.nseries = 2;
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		long x = 0;
		if (!v)
			return usage();
		i++;
		if (!strcmp(f, "--url"))
			o.url = v;
		else if (!strcmp(f, "--corpus"))
			o.corpus = v;
		else if (!strcmp(f, "--dir"))
			o.dir = v;
		else if (!strcmp(f, "--go"))
			o.go = v;
		else if (!strcmp(f, "--sections"))
			o.sections = v;
		else if (!strcmp(f, "--cluster"))
			o.cluster = v;
		else if (!strcmp(f, "--cluster-url"))
			o.cluster_url = v;
		else if (!strcmp(f, "--cluster-nodes"))
			o.cluster_nodes = v;
		else if (!strcmp(f, "--merge-type"))
			o.merge_type = v;
		else if (!strcmp(f, "--server-pid") && (x = number(f, v, 1, LONG_MAX)) > 0)
			o.server_pid = x;
		else if (!strcmp(f, "--runs") && (x = number(f, v, 1, MAX_RUNS)) > 0)
			o.runs = (int)x;
		else if (!strcmp(f, "--merge-runs") && (x = number(f, v, 1, MAX_RUNS)) > 0)
			o.merge_runs = (int)x;
		else if (!strcmp(f, "--go-runs") && (x = number(f, v, 1, MAX_RUNS)) > 0)
			o.go_runs = (int)x;
		else if (!strcmp(f, "--merge-n") && (x = number(f, v, 1, 1000000)) > 0)
			o.merge_n = (size_t)x;
		else if (!strcmp(f, "--merge-series") &&
		         (x = number(f, v, 1, PD_CLICKHOUSE_MERGE_MAX_RANGES)) > 0)
			o.merge_series = (size_t)x;
		else if (!strcmp(f, "--series")) {
			char buf[128], *save = NULL;
			snprintf(buf, sizeof(buf), "%s", v);
			o.nseries = 0;
			for (char *t = strtok_r(buf, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				if (o.nseries == 8 || (x = number(f, t, 1, 100000)) < 0)
					return usage();
				o.series[o.nseries++] = (size_t)x;
			}
			if (!o.nseries)
				return usage();
		} else {
			if (x >= 0)
				fprintf(stderr, "clickhouse_bench: unknown flag %s\n", f);
			return usage();
		}
	}
	if (!o.url || !o.corpus || !o.dir || (!o.cluster != !o.cluster_url))
		return usage();
	struct corpus cp = {0};
	pd_log_setup("warn", "logfmt", NULL); /* not a line per block written */
	if (load_corpus(o.corpus, &cp))
		return 1;
	int rc = 0;
	if (want(&o, "ingest"))
		for (size_t i = 0; !rc && i < o.nseries; i++)
			rc = section_ingest(&o, &cp, o.series[i]);
	if (!rc && want(&o, "merge"))
		rc = section_merge(&o, &cp);
	for (size_t i = 0; i < cp.nty; i++) {
		for (size_t k = 0; k < cp.ty[i].n; k++) {
			free(cp.ty[i].gz[k]);
			free(cp.ty[i].path[k]);
		}
		free(cp.ty[i].gz);
		free(cp.ty[i].gz_len);
		free(cp.ty[i].samples);
		free(cp.ty[i].path);
	}
	free(cp.ty);
	return rc ? 1 : 0;
}
