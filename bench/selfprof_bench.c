/* selfprof_bench.c: what profd's self-profiling costs and how right its heap
 * profile is. Built twice (bench/CMakeLists.txt): selfprof_bench links
 * pkg/selfprof/malloc.c as the profd executable does, so every allocation passes
 * through the heap sampler; selfprof_bench_glibc is the same program without it,
 * so malloc is glibc's alone. bench/selfprof.sh runs both and prints the tables;
 * bench/README.md reads them.
 *
 * usage: selfprof_bench --section 1|2|3 [--testdata DIR] [--rounds N]
 *                       [--target-ms MS] [--cpu-seconds S]
 *
 *   1  allocation path: malloc/free pairs (16 B, 256 B, 4 KiB, 64 KiB, 256 B with
 *      4096 blocks live) and a realloc growth pattern, 1 and 2 threads; for each,
 *      CPU ns per op through malloc/free and, as an in-process reference, through
 *      glibc's __libc_malloc/__libc_free directly. One raw line per measurement
 *      ("alloc<TAB>case<TAB>threads<TAB>round<TAB>ns<TAB>libc_ns"); the script
 *      puts the two executables side by side.
 *   2  CPU profiler: the same CPU-bound work (pd_pprof_decode + pd_pprof_top of
 *      testdata/profiles/goapp/cpu-large.pb.gz, and pd_hash_bytes over its raw
 *      bytes) with and without a CPU profile running, alternated; samples taken;
 *      pd_selfprof_cpu_start's and pd_selfprof_cpu_stop's time.
 *   3  heap profile accuracy: known bytes allocated in known functions, a known
 *      part kept live, against the heap profile's alloc_space and inuse_space. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profd/pprof.h"
#include "profd/selfprof.h"
#include "profd/util.h"

/* glibc's own allocator under its internal names: what malloc.c forwards to, and
 * in selfprof_bench_glibc the very functions malloc and free are. */
extern void *__libc_malloc(size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

/* keeps p (and what was written through it) alive for the compiler, so that a
 * malloc/free pair is not optimised away */
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

struct opts {
	int section;
	const char *testdata;
	int rounds;
	double target_ms;
	double cpu_seconds;
};

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, size_t n)
{
	double s[64];
	if (n == 0)
		return 0;
	if (n > 64)
		n = 64;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void die(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "selfprof_bench: %s: %s\n", what, err ? err->msg : "failed");
	exit(1);
}

/* ---- 1. the allocation path ------------------------------------------------------ */

enum { K_PAIR, K_RING, K_REALLOC };

struct acase {
	const char *name;
	int kind;
	size_t size;
};

static const struct acase acases[] = {
    {"16B", K_PAIR, 16},           {"256B", K_PAIR, 256},
    {"4KiB", K_PAIR, 4096},        {"64KiB", K_PAIR, 65536},
    {"256B-ring4096", K_RING, 256}, {"realloc16B-64KiB", K_REALLOC, 0},
};
#define NACASES (sizeof(acases) / sizeof(acases[0]))
#define RING 4096

/* The loops, once with malloc/free (the sampler in selfprof_bench) and once with
 * __libc_malloc/__libc_free. noinline so that both are compiled alike. */
#define PAIRS(name, M, F)                                                                \
	static __attribute__((noinline)) void name(size_t n, long ops)                   \
	{                                                                                \
		for (long i = 0; i < ops; i++) {                                         \
			char *p = M(n);                                                  \
			p[0] = (char)i;                                                  \
			KEEP(p);                                                         \
			F(p);                                                            \
		}                                                                        \
	}
PAIRS(pairs_std, malloc, free)
PAIRS(pairs_libc, __libc_malloc, __libc_free)

/* one op: free the block allocated RING ops ago, allocate a new one, so free()
 * sees addresses spread over the heap rather than the same one every time */
#define RINGS(name, M, F)                                                                \
	static __attribute__((noinline)) void name(size_t n, long ops)                   \
	{                                                                                \
		char **ring = M(RING * sizeof(*ring));                                   \
		for (size_t i = 0; i < RING; i++)                                        \
			ring[i] = M(n);                                                  \
		for (long i = 0; i < ops; i++) {                                         \
			size_t k = (size_t)i % RING;                                     \
			F(ring[k]);                                                      \
			char *p = M(n);                                                  \
			p[0] = (char)i;                                                  \
			KEEP(p);                                                         \
			ring[k] = p;                                                     \
		}                                                                        \
		for (size_t i = 0; i < RING; i++)                                        \
			F(ring[i]);                                                      \
		F(ring);                                                                 \
	}
RINGS(ring_std, malloc, free)
RINGS(ring_libc, __libc_malloc, __libc_free)

/* one op: malloc 16 B, realloc doubling to 64 KiB (12 reallocs), free: how a
 * growing buffer (pd_buf) allocates */
#define REALLOCS(name, M, R, F)                                                          \
	static __attribute__((noinline)) void name(size_t n, long ops)                   \
	{                                                                                \
		(void)n;                                                                 \
		for (long i = 0; i < ops; i++) {                                         \
			char *p = M(16);                                                 \
			p[0] = (char)i;                                                  \
			for (size_t s = 32; s <= 65536; s *= 2) {                        \
				p = R(p, s);                                             \
				p[s - 1] = (char)i;                                      \
				KEEP(p);                                                 \
			}                                                                \
			F(p);                                                            \
		}                                                                        \
	}
REALLOCS(realloc_std, malloc, realloc, free)
REALLOCS(realloc_libc, __libc_malloc, __libc_realloc, __libc_free)

typedef void (*loop_fn)(size_t n, long ops);

static loop_fn loop_of(const struct acase *c, int libc)
{
	switch (c->kind) {
	case K_PAIR:
		return libc ? pairs_libc : pairs_std;
	case K_RING:
		return libc ? ring_libc : ring_std;
	default:
		return libc ? realloc_libc : realloc_std;
	}
}

struct worker {
	loop_fn fn;
	size_t n;
	long ops;
	pthread_barrier_t *bar;
	int64_t cpu_ns;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	pthread_barrier_wait(w->bar);
	int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	w->fn(w->n, w->ops);
	w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

/* CPU ns per op of fn run by `threads` threads at once, ops each: the threads'
 * CPU time summed over all their ops */
static double run_loop(loop_fn fn, size_t n, long ops, int threads)
{
	if (threads == 1) {
		int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		fn(n, ops);
		return (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)ops;
	}
	pthread_t tid[8];
	struct worker w[8];
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){fn, n, ops, &bar, 0};
		if (pthread_create(&tid[i], NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "selfprof_bench: pthread_create failed\n");
			exit(1);
		}
	}
	int64_t sum = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		sum += w[i].cpu_ns;
	}
	pthread_barrier_destroy(&bar);
	return (double)sum / ((double)ops * threads);
}

static int section_alloc(const struct opts *o)
{
	struct pd_err why;
	int sampled = pd_selfprof_heap_available(&why);
	printf("# malloc: %s\n", sampled ? "pkg/selfprof/malloc.c (the heap sampler)"
	                                 : "glibc (no malloc replacement)");
	long ops[NACASES];
	for (size_t c = 0; c < NACASES; c++) {
		/* calibrate on malloc/free so that one timed run takes about target_ms
		 * of CPU; both variants then run the same ops */
		long probe = acases[c].kind == K_PAIR && acases[c].size < 65536 ? 200000 : 20000;
		loop_of(&acases[c], 0)(acases[c].size, probe / 4); /* warm up */
		double ns = run_loop(loop_of(&acases[c], 0), acases[c].size, probe, 1);
		double want = o->target_ms * 1e6 / (ns > 0.5 ? ns : 0.5);
		ops[c] = want < 1000 ? 1000 : want > 1e8 ? 100000000 : (long)want;
	}
	for (int r = 0; r < o->rounds; r++) {
		for (int threads = 1; threads <= 2; threads++) {
			for (size_t c = 0; c < NACASES; c++) {
				const struct acase *ac = &acases[c];
				double ns[2];
				/* alternate which variant goes first */
				for (int k = 0; k < 2; k++) {
					int libc = (k + r) % 2;
					ns[libc] = run_loop(loop_of(ac, libc), ac->size, ops[c], threads);
				}
				printf("alloc\t%s\t%d\t%d\t%.3f\t%.3f\n", ac->name, threads, r, ns[0],
				       ns[1]);
				fflush(stdout);
			}
		}
	}
	printf("# ops per timed run:");
	for (size_t c = 0; c < NACASES; c++)
		printf(" %s=%ld", acases[c].name, ops[c]);
	printf("\n");
	return 0;
}

/* ---- 2. the CPU profiler ------------------------------------------------------------ */

/* The workloads, each its own function so that the CPU profile can say how many
 * samples landed in it. decode: pd_pprof_decode + pd_pprof_top of a profile, as
 * profd serves a report (allocates and frees a few MB each time); hash:
 * pd_hash_bytes over the raw profile bytes (no allocation at all). */
struct wctx {
	const uint8_t *gz, *raw;
	size_t gz_len, raw_len;
};

__attribute__((noinline)) int64_t selfprof_bench_cpu_decode(const struct wctx *w, long iters)
{
	int64_t rows = 0;
	struct pd_err err;
	for (long i = 0; i < iters; i++) {
		struct pd_pprof_profile *p;
		if (pd_pprof_decode(&p, w->gz, w->gz_len, NULL, &err))
			die("decode", &err);
		struct pd_pprof_top *t;
		if (pd_pprof_top(p, pd_pprof_default_sample_index(p), &t, &err))
			die("top", &err);
		rows += (int64_t)t->nrows;
		pd_pprof_top_destroy(t);
		pd_pprof_destroy(p);
	}
	return rows;
}

__attribute__((noinline)) int64_t selfprof_bench_cpu_hash(const struct wctx *w, long iters)
{
	uint64_t h = 0;
	for (long i = 0; i < iters; i++)
		h = pd_hash_bytes(w->raw, w->raw_len, h);
	return (int64_t)(h >> 1);
}

/* value of function fn (flat, or cum when cum is set) for sample type `type` of the
 * gzip profile; the profile's total for that type in *total */
static int64_t profile_value(const struct pd_pprof_profile *p, const char *type, const char *fn,
                             int cum, int64_t *total)
{
	struct pd_err err;
	int idx;
	if (pd_pprof_sample_index(p, type, &idx, &err))
		die(type, &err);
	if (total)
		*total = pd_pprof_total(p, idx);
	if (!fn)
		return 0;
	struct pd_pprof_top *t;
	if (pd_pprof_top(p, idx, &t, &err))
		die("top", &err);
	int64_t v = 0;
	for (size_t i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i].name, fn) == 0)
			v = cum ? t->rows[i].cum : t->rows[i].flat;
	pd_pprof_top_destroy(t);
	return v;
}

#define MAX_REPS 32

struct workload {
	const char *name, *fn;
	int64_t (*work)(const struct wctx *, long);
};

struct cpu_result {
	double off_cpu[MAX_REPS], on_cpu[MAX_REPS], off_wall[MAX_REPS], on_wall[MAX_REPS];
	double stop_ms[MAX_REPS], start_ms[MAX_REPS], samples[MAX_REPS], expect[MAX_REPS];
};

static void cpu_case(const struct opts *o, const struct workload *wl, const struct wctx *w,
                     int reps, int *first_stop_done)
{
	struct pd_err err;
	/* calibrate: iterations for about cpu_seconds of CPU per repetition */
	wl->work(w, 1);
	int64_t t0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	long probe = 1;
	while (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - t0 < 50000000) {
		int64_t v = wl->work(w, probe);
		KEEP(&v);
		probe *= 2;
	}
	double per = (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - t0) / (double)(probe - 1);
	long iters = (long)(o->cpu_seconds * 1e9 / per);
	if (iters < 1)
		iters = 1;
	static struct cpu_result R;
	memset(&R, 0, sizeof(R));
	printf("%s: %s, %ld times per repetition\n\n", wl->name, wl->fn, iters);
	printf("rep   off CPU ms  off wall ms    on CPU ms   on wall ms  samples  expected"
	       "  in work   start ms    stop ms  profile B\n");
	printf("------------------------------------------------------------------------"
	       "---------------------------------------------\n");
	for (int r = 0; r < reps; r++) {
		int64_t samples = 0, in_work = 0;
		size_t plen = 0;
		for (int k = 0; k < 2; k++) {
			int on = (k + r) % 2;
			struct pd_selfprof_cpu *c = NULL;
			int64_t s0 = clock_ns(CLOCK_MONOTONIC);
			if (on && pd_selfprof_cpu_start(&c, &err))
				die("pd_selfprof_cpu_start", &err);
			int64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
			int64_t v = wl->work(w, iters);
			KEEP(&v);
			int64_t c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), w1 = clock_ns(CLOCK_MONOTONIC);
			if (!on) {
				R.off_cpu[r] = (double)(c1 - c0) / 1e6;
				R.off_wall[r] = (double)(w1 - w0) / 1e6;
				continue;
			}
			R.on_cpu[r] = (double)(c1 - c0) / 1e6;
			R.on_wall[r] = (double)(w1 - w0) / 1e6;
			R.start_ms[r] = (double)(w0 - s0) / 1e6;
			uint8_t *prof;
			int64_t t1 = clock_ns(CLOCK_MONOTONIC);
			if (pd_selfprof_cpu_stop(c, &prof, &plen, &err))
				die("pd_selfprof_cpu_stop", &err);
			R.stop_ms[r] = (double)(clock_ns(CLOCK_MONOTONIC) - t1) / 1e6;
			struct pd_pprof_profile *p;
			if (pd_pprof_decode(&p, prof, plen, NULL, &err))
				die("decoding the CPU profile", &err);
			in_work = profile_value(p, "samples", wl->fn, 1, &samples);
			pd_pprof_destroy(p);
			free(prof);
		}
		R.samples[r] = (double)samples;
		R.expect[r] = R.on_cpu[r] / 10.0;
		printf("%-3d %12.1f %12.1f %12.1f %12.1f %8lld %9.0f %7.1f%% %10.2f %10.2f %10zu%s\n",
		       r + 1, R.off_cpu[r], R.off_wall[r], R.on_cpu[r], R.on_wall[r],
		       (long long)samples, R.expect[r],
		       samples ? 100.0 * (double)in_work / (double)samples : 0.0, R.start_ms[r],
		       R.stop_ms[r], plen, !*first_stop_done && r == 0 ? "  (first stop)" : "");
		fflush(stdout);
	}
	size_t n = (size_t)reps;
	double moff = median(R.off_cpu, n), mon = median(R.on_cpu, n);
	double msamp = median(R.samples, n);
	/* the first stop of the process reads the ELF files: not in the median */
	int skip = !*first_stop_done && reps > 1;
	double mstop = median(R.stop_ms + skip, n - (size_t)skip);
	printf("------------------------------------------------------------------------"
	       "---------------------------------------------\n");
	printf("median %9.1f %12.1f %12.1f %12.1f %8.0f %9.0f %19.2f %10.2f%s\n", moff,
	       median(R.off_wall, n), mon, median(R.on_wall, n), msamp, median(R.expect, n),
	       median(R.start_ms, n), mstop, skip ? "  (without the first)" : "");
	double best_off = R.off_cpu[0], best_on = R.on_cpu[0];
	for (int r = 1; r < reps; r++) {
		best_off = R.off_cpu[r] < best_off ? R.off_cpu[r] : best_off;
		best_on = R.on_cpu[r] < best_on ? R.on_cpu[r] : best_on;
	}
	printf("%s: CPU with profile / without: %.3fx (medians), %.3fx (best of each);"
	       " %+.1f us per sample (medians)\n",
	       wl->name, mon / moff, best_on / best_off,
	       msamp > 0 ? (mon - moff) * 1000.0 / msamp : 0.0);
	if (!*first_stop_done)
		printf("pd_selfprof_cpu_stop: first %.2f ms (reads the ELF symbol tables), then "
		       "median %.2f ms\n",
		       R.stop_ms[0], mstop);
	printf("\n");
	*first_stop_done = 1;
}

static int section_cpu(const struct opts *o)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/profiles/goapp/cpu-large.pb.gz", o->testdata);
	struct wctx w;
	uint8_t *gz, *raw;
	struct pd_err err;
	if (pd_file_read(path, (size_t)64 << 20, &gz, &w.gz_len, &err))
		die(path, &err);
	if (pd_gunzip(gz, w.gz_len, (size_t)256 << 20, &raw, &w.raw_len, &err))
		die(path, &err);
	w.gz = gz;
	w.raw = raw;
	int reps = o->rounds > MAX_REPS ? MAX_REPS : o->rounds;
	static const struct workload wls[] = {
	    {"decode", "selfprof_bench_cpu_decode", selfprof_bench_cpu_decode},
	    {"hash", "selfprof_bench_cpu_hash", selfprof_bench_cpu_hash},
	};
	printf("2. CPU profiler: the same work without and with a CPU profile running\n"
	       "   (pd_selfprof_cpu_start before it, pd_selfprof_cpu_stop after it), %d\n"
	       "   repetitions of each, alternated. decode = pd_pprof_decode + pd_pprof_top of\n"
	       "   testdata/profiles/goapp/cpu-large.pb.gz (%zu B gzip), which allocates;\n"
	       "   hash = pd_hash_bytes over its %zu raw bytes, which does not. CPU =\n"
	       "   process CPU time of the work (the signal handler's included); expected\n"
	       "   = CPU / 10 ms; in work = samples whose stack holds the work's function;\n"
	       "   start / stop = pd_selfprof_cpu_start / pd_selfprof_cpu_stop (symbolize,\n"
	       "   encode, gzip).\n\n",
	       reps, w.gz_len, w.raw_len);
	int first = 0;
	for (size_t i = 0; i < sizeof(wls) / sizeof(wls[0]); i++)
		cpu_case(o, &wls[i], &w, reps, &first);
	free(gz);
	free(raw);
	return 0;
}

/* ---- 3. heap profile accuracy -------------------------------------------------------- */

/* The known stacks: each function allocates `count` blocks and keeps every
 * keep_every-th one live (in live[]), freeing the rest. noinline and external so
 * that each is its own frame under its own symbol. */
#define HEAP_FN(name)                                                                    \
	__attribute__((noinline)) size_t name(void **live, size_t count, size_t size,      \
	                                      size_t keep_every)                           \
	{                                                                                \
		size_t k = 0;                                                            \
		for (size_t i = 0; i < count; i++) {                                     \
			char *p = malloc(size);                                          \
			if (!p)                                                          \
				abort();                                                 \
			p[0] = 1;                                                        \
			KEEP(p);                                                         \
			if (i % keep_every == 0)                                         \
				live[k++] = p;                                           \
			else                                                             \
				free(p);                                                 \
		}                                                                        \
		return k;                                                                \
	}
HEAP_FN(selfprof_bench_heap_64B)
HEAP_FN(selfprof_bench_heap_4KiB)
HEAP_FN(selfprof_bench_heap_1MiB)

/* sizes spread evenly over 16 B .. 64 KiB (in 16-byte steps, a fixed sequence) */
__attribute__((noinline)) size_t selfprof_bench_heap_mixed(void **live, size_t count,
                                                           size_t *bytes, size_t keep_every,
                                                           size_t *live_bytes)
{
	size_t k = 0;
	uint64_t x = 0x9E3779B97F4A7C15ull;
	*bytes = *live_bytes = 0;
	for (size_t i = 0; i < count; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		size_t size = 16 * (1 + (size_t)((x * 0x2545F4914F6CDD1Dull) >> 52) % 4096);
		char *p = malloc(size);
		if (!p)
			abort();
		p[0] = 1;
		KEEP(p);
		*bytes += size;
		if (i % keep_every == 0) {
			live[k++] = p;
			*live_bytes += size;
		} else {
			free(p);
		}
	}
	return k;
}

struct hcase {
	const char *fn;
	size_t size; /* 0: mixed */
	size_t count;
	size_t keep_every;
	/* per round */
	double alloc_true, inuse_true, alloc_est, inuse_est;
};

static void heap_snapshot(struct hcase *hc, size_t n, double *alloc, double *inuse,
                          double *build_ms)
{
	uint8_t *buf;
	size_t len;
	struct pd_err err;
	int64_t t0 = clock_ns(CLOCK_MONOTONIC);
	if (pd_selfprof_heap_profile(1, &buf, &len, &err))
		die("pd_selfprof_heap_profile", &err);
	*build_ms = (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6;
	struct pd_pprof_profile *p;
	if (pd_pprof_decode(&p, buf, len, NULL, &err))
		die("decoding the heap profile", &err);
	for (size_t i = 0; i < n; i++) {
		alloc[i] = (double)profile_value(p, "alloc_space", hc[i].fn, 0, NULL);
		inuse[i] = (double)profile_value(p, "inuse_space", hc[i].fn, 0, NULL);
	}
	pd_pprof_destroy(p);
	free(buf);
}

static int section_heap(const struct opts *o)
{
	struct pd_err why;
	if (!pd_selfprof_heap_available(&why)) {
		printf("3. heap profile: %s\n", why.msg);
		return 0;
	}
	struct hcase hc[] = {
	    {"selfprof_bench_heap_64B", 64, 4u << 20, 4, 0, 0, 0, 0},
	    {"selfprof_bench_heap_4KiB", 4096, 1u << 16, 4, 0, 0, 0, 0},
	    {"selfprof_bench_heap_1MiB", 1u << 20, 256, 4, 0, 0, 0, 0},
	    {"selfprof_bench_heap_mixed", 0, 1u << 13, 4, 0, 0, 0, 0},
	};
	enum { NH = sizeof(hc) / sizeof(hc[0]) };
	int rounds = o->rounds > MAX_REPS ? MAX_REPS : o->rounds;
	void **live[NH];
	for (size_t i = 0; i < NH; i++)
		if (!(live[i] = malloc(hc[i].count / hc[i].keep_every * sizeof(void *) + 8)))
			abort();
	printf("3. Heap profile accuracy: per round, each function below allocates 256 MiB\n"
	       "   (mixed: 8192 blocks of 16 B-64 KiB, about 256 MiB) and keeps every 4th\n"
	       "   block live; est = that function's alloc_space / inuse_space in the heap\n"
	       "   profile (pd_selfprof_heap_profile) after the round minus before it;\n"
	       "   true = what it allocated / keeps. The live blocks are freed after each\n"
	       "   round. sd = the expected relative spread of alloc / inuse over all\n"
	       "   rounds: a block of s bytes is sampled with p = 1 - e^(-s/524288) and\n"
	       "   counted as 1/p blocks, so n blocks give sqrt((1-p)/(p n)); for small\n"
	       "   blocks that is 1/sqrt(bytes / 524288).\n\n");
	printf("function                    round   alloc true MB    est MB   est/true  "
	       "  inuse true MB    est MB   est/true\n");
	printf("--------------------------------------------------------------------------"
	       "-----------------------------------\n");
	double a0[NH], u0[NH], a1[NH], u1[NH], sum_at[NH] = {0}, sum_ae[NH] = {0},
	                                       sum_ut[NH] = {0}, sum_ue[NH] = {0};
	double build[MAX_REPS * 2 + 1];
	size_t nbuild = 0;
	heap_snapshot(hc, NH, a0, u0, &build[nbuild++]);
	for (int r = 0; r < rounds; r++) {
		size_t nlive[NH];
		double at[NH], ut[NH];
		for (size_t i = 0; i < NH; i++) {
			if (hc[i].size) {
				if (i == 0)
					nlive[i] = selfprof_bench_heap_64B(live[i], hc[i].count, 64,
					                                   hc[i].keep_every);
				else if (i == 1)
					nlive[i] = selfprof_bench_heap_4KiB(live[i], hc[i].count, 4096,
					                                    hc[i].keep_every);
				else
					nlive[i] = selfprof_bench_heap_1MiB(live[i], hc[i].count,
					                                    1u << 20, hc[i].keep_every);
				at[i] = (double)hc[i].count * (double)hc[i].size;
				ut[i] = (double)nlive[i] * (double)hc[i].size;
			} else {
				size_t b, lb;
				nlive[i] = selfprof_bench_heap_mixed(live[i], hc[i].count, &b,
				                                     hc[i].keep_every, &lb);
				at[i] = (double)b;
				ut[i] = (double)lb;
			}
		}
		heap_snapshot(hc, NH, a1, u1, &build[nbuild++]);
		for (size_t i = 0; i < NH; i++) {
			double ae = a1[i] - a0[i], ue = u1[i] - u0[i];
			sum_at[i] += at[i];
			sum_ae[i] += ae;
			sum_ut[i] += ut[i];
			sum_ue[i] += ue;
			printf("%-27s %5d %15.1f %9.1f %9.3f %16.1f %9.1f %9.3f\n", hc[i].fn, r + 1,
			       at[i] / 1048576, ae / 1048576, ae / at[i], ut[i] / 1048576,
			       ue / 1048576, ue / ut[i]);
			for (size_t k = 0; k < nlive[i]; k++)
				free(live[i][k]);
		}
		heap_snapshot(hc, NH, a0, u0, &build[nbuild++]);
		fflush(stdout);
	}
	printf("--------------------------------------------------------------------------"
	       "-----------------------------------\n");
	for (size_t i = 0; i < NH; i++) {
		/* each block is sampled on its own with p = 1 - e^(-size/rate), and the
		 * estimate is (blocks sampled) * size / p: relative sd sqrt((1-p)/(p n))
		 * for n blocks (the mixed sizes taken at their mean) */
		double nall = (double)hc[i].count * rounds, nlv = nall / (double)hc[i].keep_every;
		double s = hc[i].size ? (double)hc[i].size : sum_at[i] / nall;
		double pr = 1 - exp(-s / PD_SELFPROF_HEAP_RATE);
		printf("%-27s   all %15.1f %9.1f %9.3f %16.1f %9.1f %9.3f  sd %.1f%% / %.1f%%\n",
		       hc[i].fn, sum_at[i] / 1048576, sum_ae[i] / 1048576, sum_ae[i] / sum_at[i],
		       sum_ut[i] / 1048576, sum_ue[i] / 1048576, sum_ue[i] / sum_ut[i],
		       100 * sqrt((1 - pr) / (pr * nall)), 100 * sqrt((1 - pr) / (pr * nlv)));
	}
	printf("\npd_selfprof_heap_profile: first %.2f ms, then median %.2f ms (%zu calls)\n",
	       build[0], median(build + 1, nbuild - 1), nbuild - 1);
	for (size_t i = 0; i < NH; i++)
		free(live[i]);
	return 0;
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "usage: selfprof_bench --section 1|2|3 [--testdata DIR] [--rounds N]\n"
	           "                      [--target-ms MS] [--cpu-seconds S]\n");
}

int main(int argc, char **argv)
{
	struct opts o = {0, "testdata", 5, 25, 1.0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		if (strcmp(a, "--section") == 0)
			o.section = atoi(v);
		else if (strcmp(a, "--testdata") == 0)
			o.testdata = v;
		else if (strcmp(a, "--rounds") == 0)
			o.rounds = atoi(v);
		else if (strcmp(a, "--target-ms") == 0)
			o.target_ms = atof(v);
		else if (strcmp(a, "--cpu-seconds") == 0)
			o.cpu_seconds = atof(v);
		else {
			usage(stderr);
			return 2;
		}
		i++;
	}
	if (o.rounds < 1 || o.target_ms <= 0 || o.cpu_seconds <= 0) {
		usage(stderr);
		return 2;
	}
	switch (o.section) {
	case 1:
		return section_alloc(&o);
	case 2:
		return section_cpu(&o);
	case 3:
		return section_heap(&o);
	default:
		usage(stderr);
		return 2;
	}
}
