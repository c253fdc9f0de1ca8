/* churn.c: series churn in the store, in simulated time: --series series (pods)
 * get a profile every --interval; every --replace all of them are replaced by new
 * ones (a new `pod` label), for --hours of simulated time ending at the present,
 * with the store flushed every simulated minute as `profd run` flushes, and the
 * C allocator trimmed before each reading as `profd run` trims every 30 s. The
 * reference, in the same process and on the same profiles: the same run with no
 * churn (the same series all along). Each run is a process of its own (forked),
 * so that neither inherits the other's heap. Prints RSS (VmRSS) and the head's series
 * after the first --replace and at the end, for both, and the ratio the aim is
 * about (churn, end / after the first --replace). bench/churn.sh runs it.
 *
 * usage: churn --corpus DIR [--dir DIR] [--series N] [--replace MIN]
 *              [--interval SEC] [--hours H] [--block-range MIN]
 *
 * The profiles are DIR/heap/N.pb.gz, N = 1, 2, ... (bench/capture.sh's layout), served in turn
 * (series i's j-th profile is file (i + j) mod F). */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "profd/tsdb.h"
#include "profd/util.h"

#define MAX_FILES 240

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "churn: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* A line of /proc/self/status in kB (field: "VmRSS", "RssAnon"), -1 if missing. */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t fl = strlen(field);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, fl) && line[fl] == ':' && sscanf(line + fl + 1, "%ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static long rss_kb(void)
{
	return status_kb("VmRSS");
}

static void trim(void)
{
#if defined(__GLIBC__)
	malloc_trim(0);
#endif
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

struct opts {
	const char *corpus, *dir;
	int series, replace_min, interval_s, block_min;
	double hours;
};

struct reading {
	long rss_first, rss_end;
	long anon_first, anon_end; /* of them, anonymous memory (RssAnon): the heap */
	uint64_t series_first, series_end, series_max;
	double cpu_s;
};

static uint8_t *prof[MAX_FILES];
static size_t plen[MAX_FILES];
static int nprof;

/* One run: churn (new pods every replace) or not. */
static void run(const struct opts *o, int churn, struct reading *r)
{
	char tmpl[4096];
	snprintf(tmpl, sizeof(tmpl), "%s/churn-bench.XXXXXX", o->dir);
	char *dir = mkdtemp(tmpl);
	if (!dir)
		die("cannot make a directory under %s", o->dir);
	struct pd_tsdb_opts so;
	pd_tsdb_opts_init(&so);
	so.block_range_ms = (int64_t)o->block_min * 60000;
	so.wal_sync = 0; /* the bench measures memory, not fsyncs */
	struct pd_tsdb *db;
	struct pd_err err = {0};
	if (pd_tsdb_open(&db, dir, &so, &err))
		die("opening the store: %s", err.msg);
	int64_t span = (int64_t)(o->hours * 3600000.0);
	int64_t now = (int64_t)time(NULL) * 1000;
	int64_t t0 = now - span - 60000, step = (int64_t)o->interval_s * 1000;
	int64_t replace = (int64_t)o->replace_min * 60000, last_flush = t0;
	memset(r, 0, sizeof(*r));
	clock_t c0 = clock();
	int first_done = 0;
	for (int64_t t = t0, j = 0; t < t0 + span; t += step, j++) {
		int64_t gen = churn ? (t - t0) / replace : 0;
		if (!first_done && t - t0 >= replace) {
			trim();
			struct pd_storage_stats st;
			pd_tsdb_stats(db, &st);
			r->rss_first = rss_kb();
			r->anon_first = status_kb("RssAnon");
			r->series_first = st.head_series;
			first_done = 1;
		}
		struct pd_tsdb_appender *a = pd_tsdb_appender(db);
		for (int i = 0; i < o->series; i++) {
			char pod[48];
			snprintf(pod, sizeof(pod), "app-%lld-%d", (long long)gen, i);
			struct pd_storage_label l[3] = {
			    {"__name__", "heap"}, {"job", "churn"}, {"pod", pod}};
			int k = (int)((i + j) % nprof);
			if (pd_tsdb_append(a, l, 3, t, prof[k], plen[k], &err))
				die("append: %s", err.msg);
		}
		if (pd_tsdb_commit(a, &err))
			die("commit: %s", err.msg);
		if (t - last_flush >= 60000) {
			if (pd_tsdb_flush(db, 0, &err))
				die("flush: %s", err.msg);
			last_flush = t;
			struct pd_storage_stats st;
			pd_tsdb_stats(db, &st);
			if (st.head_series > r->series_max)
				r->series_max = st.head_series;
		}
	}
	if (pd_tsdb_flush(db, 0, &err))
		die("flush: %s", err.msg);
	trim();
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	r->rss_end = rss_kb();
	r->anon_end = status_kb("RssAnon");
	r->series_end = st.head_series;
	r->cpu_s = (double)(clock() - c0) / CLOCKS_PER_SEC;
	pd_tsdb_close(db);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* run() in a child process, its reading passed back through a pipe */
static void forked(const struct opts *o, int churn, struct reading *r)
{
	int fd[2];
	if (pipe(fd))
		die("%s", "pipe failed");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("%s", "fork failed");
	if (pid == 0) {
		close(fd[0]);
		run(o, churn, r);
		ssize_t w = write(fd[1], r, sizeof(*r));
		_exit(w == (ssize_t)sizeof(*r) ? 0 : 1);
	}
	close(fd[1]);
	ssize_t n = read(fd[0], r, sizeof(*r));
	close(fd[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	if (n != (ssize_t)sizeof(*r) || !WIFEXITED(status) || WEXITSTATUS(status))
		die("%s", churn ? "the churn run failed" : "the reference run failed");
}

int main(int argc, char **argv)
{
	struct opts o = {NULL, "/tmp", 1000, 5, 15, 120, 2.0};
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			die("%s needs a value", argv[i]);
		if (!strcmp(argv[i], "--corpus"))
			o.corpus = v;
		else if (!strcmp(argv[i], "--dir"))
			o.dir = v;
		else if (!strcmp(argv[i], "--series"))
			o.series = atoi(v);
		else if (!strcmp(argv[i], "--replace"))
			o.replace_min = atoi(v);
		else if (!strcmp(argv[i], "--interval"))
			o.interval_s = atoi(v);
		else if (!strcmp(argv[i], "--hours"))
			o.hours = atof(v);
		else if (!strcmp(argv[i], "--block-range"))
			o.block_min = atoi(v);
		else
			die("unknown flag %s", argv[i]);
		i++;
	}
	if (!o.corpus)
		die("%s", "usage: churn --corpus DIR [--dir DIR] [--series N] [--replace MIN] "
			  "[--interval SEC] [--hours H] [--block-range MIN]");
	if (o.series < 1 || o.replace_min < 1 || o.interval_s < 1 || o.block_min < 1 ||
	    !(o.hours > 0) || o.hours > 48)
		die("%s", "--series, --replace, --interval and --block-range must be positive, "
			  "--hours in (0, 48]");
	for (int i = 1; i <= MAX_FILES; i++) {
		char p[4096];
		snprintf(p, sizeof(p), "%s/heap/%d.pb.gz", o.corpus, i);
		if (!(prof[nprof] = slurp(p, &plen[nprof])))
			break;
		nprof++;
	}
	if (!nprof)
		die("no heap profiles in %s/heap (1.pb.gz, 2.pb.gz, ...)", o.corpus);
	printf("churn bench: %d series, a profile every %d s, all replaced every %d min, %.1f h "
	       "of simulated time ending now, block range %d min; %d heap profiles of %s\n",
	       o.series, o.interval_s, o.replace_min, o.hours, o.block_min, nprof, o.corpus);
	struct reading ch, ref;
	forked(&o, 1, &ch);
	forked(&o, 0, &ref);
	printf("%-34s %12s %12s %8s %12s %12s %12s %8s\n", "run", "RSS first MB", "RSS end MB",
	       "end/first", "series first", "series max", "series end", "CPU s");
	printf("%-34s %12.1f %12.1f %7.3fx %12llu %12llu %12llu %8.1f\n", "churn (new pods)",
	       ch.rss_first / 1024.0, ch.rss_end / 1024.0, (double)ch.rss_end / (double)ch.rss_first,
	       (unsigned long long)ch.series_first, (unsigned long long)ch.series_max,
	       (unsigned long long)ch.series_end, ch.cpu_s);
	printf("%-34s %12.1f %12.1f %7.3fx %12llu %12llu %12llu %8.1f\n",
	       "reference: no churn (same pods)", ref.rss_first / 1024.0, ref.rss_end / 1024.0,
	       (double)ref.rss_end / (double)ref.rss_first, (unsigned long long)ref.series_first,
	       (unsigned long long)ref.series_max, (unsigned long long)ref.series_end, ref.cpu_s);
	double ratio = (double)ch.rss_end / (double)ch.rss_first;
	printf("aim: churn RSS at the end within 10%% of RSS after the first %d min: %.3fx, %s\n",
	       o.replace_min, ratio, ratio <= 1.10 ? "met" : "NOT met");
	printf("churn end / no-churn end: %.3fx\n", (double)ch.rss_end / (double)ref.rss_end);
	printf("of the RSS, anonymous (heap) MB, first / end: churn %.1f / %.1f, no churn %.1f / %.1f; "
	       "the rest is mapped files (head chunk files, blocks)\n",
	       ch.anon_first / 1024.0, ch.anon_end / 1024.0, ref.anon_first / 1024.0,
	       ref.anon_end / 1024.0);
	return 0;
}
