/* symbolize_bench.c: what query-time symbolization (pkg/symbolize) costs.
 *
 *   symbolize_bench merge FILE BUILD_ID SYMS TEXT_VADDR TEXT_OFFSET [--debug-dir DIR]
 *                   [--profiles N] [--samples S] [--depth D] [--passes P]
 *   symbolize_bench first FILE BUILD_ID SYMS TEXT_VADDR TEXT_OFFSET [--debug-dir DIR]
 *                   [--addresses N] [--write-addresses OUT]
 *
 * SYMS lists the binary's functions, one "VADDR SIZE" (hex, as nm -S prints them)
 * a line; TEXT_VADDR and TEXT_OFFSET (hex) are its executable PT_LOAD segment's
 * address and file offset, page-aligned. Profiles get one mapping of that segment
 * (FILE, BUILD_ID, loaded at an arbitrary base) and locations with addresses
 * inside those functions, no functions and no lines: what a native agent sends.
 *
 * merge: N profiles (default 1000) of S samples (default 200) of D frames
 * (default 12) each, the functions drawn skewed towards a hot few. Each profile
 * is stored twice, encoded: as sent, and as the symbolizer made it (functions
 * and lines). Timed, the median of P passes (default 5): decoding and merging the
 * symbolized profiles with no symbolizer (the reference), and decoding and
 * merging the bare ones then symbolizing the merge with a warm memory cache
 * (what pkg/api/query.c does). Prints both, the symbolize step alone, the ratio.
 *
 * first: one profile of N addresses (default 20000) symbolized by a new
 * symbolizer (no disk cache): the first look at the debug file. Prints the wall
 * time and the process's peak RSS (getrusage); --write-addresses writes the file
 * addresses it used, one 0x... a line, for eu-addr2line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "profd/pprof.h"
#include "profd/symbolize.h"
#include "profd/util.h"

#define BASE 0x7f3a00000000ull

struct fn {
	uint64_t vaddr, size;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "symbolize_bench: %s: %s\n", what, err ? err->msg : "failed");
	exit(1);
}

static struct fn *read_syms(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "symbolize_bench: %s: cannot open\n", path);
		exit(1);
	}
	size_t cap = 1024, k = 0;
	struct fn *v = malloc(cap * sizeof(*v));
	uint64_t a, s;
	while (fscanf(f, "%" SCNx64 " %" SCNx64, &a, &s) == 2) {
		if (s < 2)
			continue;
		if (k == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		v[k++] = (struct fn){a, s};
	}
	fclose(f);
	if (k == 0) {
		fprintf(stderr, "symbolize_bench: %s: no \"VADDR SIZE\" lines\n", path);
		exit(1);
	}
	*n = k;
	return v;
}

static uint64_t rnd(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return *st;
}

struct gen {
	const char *file, *build_id;
	uint64_t start, limit, offset, text_vaddr;
};

/* A profile of the given file addresses, one location each, samples as stacks
 * of `depth` consecutive entries of addrs (leaf first). */
static struct pd_pprof_profile *make(const struct gen *g, const uint64_t *addrs, size_t nloc,
                                     const uint32_t *stacks, size_t nsample, size_t depth)
{
	const char *s[] = {"", "cpu", "nanoseconds", g->file, g->build_id};
	size_t sl[5];
	for (size_t i = 0; i < 5; i++)
		sl[i] = strlen(s[i]);
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_pmapping m = {.id = 1,
	                              .memory_start = g->start,
	                              .memory_limit = g->limit,
	                              .file_offset = g->offset,
	                              .filename = 3,
	                              .build_id = 4};
	struct pd_pprof_plocation *loc = calloc(nloc, sizeof(*loc));
	for (size_t i = 0; i < nloc; i++)
		loc[i] = (struct pd_pprof_plocation){
		    .id = i + 1, .mapping_id = 1, .address = g->start + addrs[i] - g->text_vaddr};
	struct pd_pprof_psample *smp = calloc(nsample, sizeof(*smp));
	uint64_t *ids = calloc(nsample * depth, sizeof(*ids));
	int64_t *vals = calloc(nsample, sizeof(*vals));
	for (size_t i = 0; i < nsample; i++) {
		for (size_t d = 0; d < depth; d++)
			ids[i * depth + d] = stacks[i * depth + d] + 1;
		vals[i] = 10000000;
		smp[i] = (struct pd_pprof_psample){.location_id = &ids[i * depth],
		                                   .nlocation = depth,
		                                   .value = &vals[i],
		                                   .nvalue = 1};
	}
	struct pd_pprof_parts pp = {.strings = s,
	                            .string_len = sl,
	                            .nstrings = 5,
	                            .sample_type = &st,
	                            .nsample_type = 1,
	                            .sample = smp,
	                            .nsample = nsample,
	                            .mapping = &m,
	                            .nmapping = 1,
	                            .location = loc,
	                            .nlocation = nloc,
	                            .has_period_type = 1,
	                            .period_type = st,
	                            .period = 10000000};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	if (pd_pprof_parts_build(&pp, &p, &err))
		die("building a profile", &err);
	free(loc);
	free(smp);
	free(ids);
	free(vals);
	return p;
}

static struct pd_symbolizer *start(const char *debug_dir)
{
	struct pd_symbolize_opts o;
	pd_symbolize_opts_init(&o);
	const char *dirs[1] = {debug_dir};
	if (debug_dir) {
		o.debug_dirs = dirs;
		o.ndebug_dirs = 1;
	}
	struct pd_symbolizer *s = NULL;
	struct pd_err err = {0};
	if (pd_symbolizer_create(&s, &o, &err))
		die("pd_symbolizer_create", &err);
	return s;
}

/* Symbolizes p, waiting up to a minute for the debug file; the result (or NULL
 * when nothing needed symbols) in *out. */
static void symbolize(struct pd_symbolizer *s, const struct pd_pprof_profile *p,
                      struct pd_pprof_profile **out, struct pd_symbolize_result *res)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t dl = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + 60 * 1000000LL;
	struct pd_err err = {0};
	if (pd_symbolizer_run(s, p, dl, out, res, &err))
		die("pd_symbolizer_run", &err);
	if (res->partial || res->unresolved == res->locations) {
		fprintf(stderr, "symbolize_bench: the debug information was not found (%s)\n",
		        res->missing);
		exit(1);
	}
}

struct blob {
	uint8_t *b;
	size_t n;
};

static struct pd_pprof_profile *decode_merge(const struct blob *bl, size_t n)
{
	struct pd_pprof_merger *m = NULL;
	struct pd_err err = {0};
	if (pd_pprof_merger_create(&m, &err))
		die("merger", &err);
	for (size_t i = 0; i < n; i++) {
		struct pd_pprof_profile *p = NULL;
		if (pd_pprof_decode(&p, bl[i].b, bl[i].n, NULL, &err))
			die("decode", &err);
		if (pd_pprof_merger_add(m, p, &err))
			die("merge", &err);
		pd_pprof_destroy(p);
	}
	struct pd_pprof_profile *out = NULL;
	if (pd_pprof_merger_finish(m, &out, &err))
		die("merge", &err); /* finish frees m */
	return out;
}

/* The same merge of profiles already decoded: the stricter reference, merging
 * alone. */
static struct pd_pprof_profile *merge_only(struct pd_pprof_profile *const *ps, size_t n)
{
	struct pd_pprof_profile *out = NULL;
	struct pd_err err = {0};
	if (pd_pprof_merge((const struct pd_pprof_profile *const *)ps, n, &out, &err))
		die("merge", &err);
	return out;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

static void bench_merge(const struct gen *g, const struct fn *fns, size_t nfn,
                        const char *debug_dir, size_t nprof, size_t nsample, size_t depth,
                        int passes)
{
	struct pd_symbolizer *s = start(debug_dir);
	struct blob *bare = calloc(nprof, sizeof(*bare)), *named = calloc(nprof, sizeof(*named));
	uint64_t st = 0x9e3779b97f4a7c15ull;
	uint64_t *addrs = malloc(nfn * sizeof(*addrs));
	uint32_t *slot = malloc(nfn * sizeof(*slot));
	uint32_t *stacks = malloc(nsample * depth * sizeof(*stacks));
	size_t locs_total = 0;
	for (size_t p = 0; p < nprof; p++) {
		size_t nloc = 0;
		for (size_t i = 0; i < nfn; i++)
			slot[i] = UINT32_MAX;
		for (size_t i = 0; i < nsample * depth; i++) {
			/* skewed: u^3 puts most frames on the first functions */
			double u = (double)(rnd(&st) % 1000000) / 1e6;
			size_t f = (size_t)(u * u * u * (double)nfn);
			if (slot[f] == UINT32_MAX) {
				slot[f] = (uint32_t)nloc;
				/* a return address inside the function, the same one in
				 * every profile (as a program's call sites are) */
				addrs[nloc++] = fns[f].vaddr + 1 + (fns[f].vaddr * 2654435761u) %
				                                       (fns[f].size - 1);
			}
			stacks[i] = slot[f];
		}
		locs_total += nloc;
		struct pd_pprof_profile *pr = make(g, addrs, nloc, stacks, nsample, depth);
		struct pd_pprof_profile *sy = NULL;
		struct pd_symbolize_result res;
		symbolize(s, pr, &sy, &res);
		struct pd_err err = {0};
		if (pd_pprof_encode(pr, 0, &bare[p].b, &bare[p].n, &err) ||
		    pd_pprof_encode(sy, 0, &named[p].b, &named[p].n, &err))
			die("encode", &err);
		pd_pprof_destroy(pr);
		pd_pprof_destroy(sy);
	}
	size_t bare_bytes = 0, named_bytes = 0;
	for (size_t p = 0; p < nprof; p++) {
		bare_bytes += bare[p].n;
		named_bytes += named[p].n;
	}
	/* the merge the cache is warm for */
	struct pd_pprof_profile *mg = decode_merge(bare, nprof), *warm = NULL;
	struct pd_symbolize_result res;
	symbolize(s, mg, &warm, &res);
	size_t merged_locs = pd_pprof_location_count(mg);
	pd_pprof_destroy(mg);
	pd_pprof_destroy(warm);

	struct pd_pprof_profile **dbare = calloc(nprof, sizeof(*dbare)),
				**dnamed = calloc(nprof, sizeof(*dnamed));
	for (size_t p = 0; p < nprof; p++) {
		struct pd_err err = {0};
		if (pd_pprof_decode(&dbare[p], bare[p].b, bare[p].n, NULL, &err) ||
		    pd_pprof_decode(&dnamed[p], named[p].b, named[p].n, NULL, &err))
			die("decode", &err);
	}
	double *ref = calloc((size_t)passes, sizeof(double)),
	       *sym = calloc((size_t)passes, sizeof(double)),
	       *step = calloc((size_t)passes, sizeof(double)),
	       *mref = calloc((size_t)passes, sizeof(double)),
	       *msym = calloc((size_t)passes, sizeof(double));
	for (int k = 0; k < passes; k++) {
		double t0 = now_s();
		struct pd_pprof_profile *a = decode_merge(named, nprof);
		double t1 = now_s();
		pd_pprof_destroy(a);
		double t2 = now_s();
		struct pd_pprof_profile *b = decode_merge(bare, nprof), *bs = NULL;
		double t3 = now_s();
		symbolize(s, b, &bs, &res);
		double t4 = now_s();
		pd_pprof_destroy(b);
		pd_pprof_destroy(bs);
		ref[k] = t1 - t0;
		sym[k] = t4 - t2;
		step[k] = t4 - t3;
		t0 = now_s();
		a = merge_only(dnamed, nprof);
		t1 = now_s();
		pd_pprof_destroy(a);
		t2 = now_s();
		b = merge_only(dbare, nprof);
		symbolize(s, b, &bs, &res);
		t3 = now_s();
		pd_pprof_destroy(b);
		pd_pprof_destroy(bs);
		mref[k] = t1 - t0;
		msym[k] = t3 - t2;
	}
	double mr = median(mref, passes), my = median(msym, passes);
	struct pd_symbolizer_stats ss;
	pd_symbolizer_get_stats(s, &ss);
	double r = median(ref, passes), y = median(sym, passes), z = median(step, passes);
	printf("profiles %zu x %zu samples x %zu frames, %zu functions, %.0f locations a "
	       "profile, %zu in the merge (%zu resolved)\n",
	       nprof, nsample, depth, nfn, (double)locs_total / (double)nprof, merged_locs,
	       res.resolved);
	printf("stored bytes: bare %.1f MB, symbolized %.1f MB\n", (double)bare_bytes / 1e6,
	       (double)named_bytes / 1e6);
	printf("%-44s %10s\n", "query (median of passes)", "ms");
	printf("%-44s %10.1f\n", "symbolized profiles, symbolizer off", r * 1e3);
	printf("%-44s %10.1f\n", "bare profiles + symbolize (warm cache)", y * 1e3);
	printf("%-44s %10.1f\n", "  of which the symbolize step", z * 1e3);
	printf("ratio (bare+symbolize / symbolized): %.2fx  (aim <= 1.5x)\n", y / r);
	printf("%-44s %10.1f\n", "merge alone (decoded), symbolized, off", mr * 1e3);
	printf("%-44s %10.1f\n", "merge alone (decoded), bare + symbolize", my * 1e3);
	printf("ratio, merge alone: %.2fx\n", my / mr);
	printf("symbolizer: hits %" PRIu64 " misses %" PRIu64 " cache %" PRIu64
	       " bytes, %" PRIu64 " entries\n",
	       ss.hits, ss.misses, ss.cache_bytes, ss.cache_entries);
	for (size_t p = 0; p < nprof; p++) {
		free(bare[p].b);
		free(named[p].b);
	}
	for (size_t p = 0; p < nprof; p++) {
		pd_pprof_destroy(dbare[p]);
		pd_pprof_destroy(dnamed[p]);
	}
	free(dbare);
	free(dnamed);
	free(mref);
	free(msym);
	free(bare);
	free(named);
	free(addrs);
	free(slot);
	free(stacks);
	free(ref);
	free(sym);
	free(step);
	pd_symbolizer_destroy(s);
}

static void bench_first(const struct gen *g, const struct fn *fns, size_t nfn,
                        const char *debug_dir, size_t naddr, const char *write_to)
{
	if (naddr > nfn)
		naddr = nfn;
	uint64_t *addrs = malloc(naddr * sizeof(*addrs));
	uint32_t *stacks = malloc(naddr * sizeof(*stacks));
	/* spread over the whole file: every step-th function */
	for (size_t i = 0; i < naddr; i++) {
		const struct fn *f = &fns[i * nfn / naddr];
		addrs[i] = f->vaddr + f->size / 2;
		stacks[i] = (uint32_t)i;
	}
	if (write_to) {
		FILE *o = fopen(write_to, "w");
		if (!o) {
			fprintf(stderr, "symbolize_bench: %s: cannot write\n", write_to);
			exit(1);
		}
		for (size_t i = 0; i < naddr; i++)
			fprintf(o, "0x%" PRIx64 "\n", addrs[i]);
		fclose(o);
	}
	struct pd_pprof_profile *p = make(g, addrs, naddr, stacks, naddr, 1);
	double t0 = now_s();
	struct pd_symbolizer *s = start(debug_dir);
	struct pd_pprof_profile *out = NULL;
	struct pd_symbolize_result res;
	symbolize(s, p, &out, &res);
	double t1 = now_s();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("first symbolization: %zu addresses, %zu resolved, %.1f ms, peak RSS %ld KiB\n",
	       res.locations, res.resolved, (t1 - t0) * 1e3, ru.ru_maxrss);
	pd_pprof_destroy(out);
	pd_pprof_destroy(p);
	pd_symbolizer_destroy(s);
	free(addrs);
	free(stacks);
}

int main(int argc, char **argv)
{
	if (argc < 7 || (strcmp(argv[1], "merge") && strcmp(argv[1], "first"))) {
		fprintf(stderr, "usage: symbolize_bench merge|first FILE BUILD_ID SYMS TEXT_VADDR "
		                "TEXT_OFFSET [options]\n");
		return 2;
	}
	const char *debug_dir = NULL, *write_to = NULL;
	size_t nprof = 1000, nsample = 200, depth = 12, naddr = 20000;
	int passes = 5;
	for (int i = 7; i < argc; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "symbolize_bench: %s needs a value\n", argv[i]);
			return 2;
		}
		const char *v = argv[i + 1];
		if (!strcmp(argv[i], "--debug-dir"))
			debug_dir = v;
		else if (!strcmp(argv[i], "--profiles"))
			nprof = strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--samples"))
			nsample = strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--depth"))
			depth = strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--passes"))
			passes = atoi(v);
		else if (!strcmp(argv[i], "--addresses"))
			naddr = strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "--write-addresses"))
			write_to = v;
		else {
			fprintf(stderr, "symbolize_bench: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (!nprof || !nsample || !depth || passes < 1 || !naddr) {
		fprintf(stderr, "symbolize_bench: counts must be positive\n");
		return 2;
	}
	size_t nfn = 0;
	struct fn *fns = read_syms(argv[4], &nfn);
	struct gen g = {.file = argv[2], .build_id = argv[3]};
	g.text_vaddr = strtoull(argv[5], NULL, 16);
	g.offset = strtoull(argv[6], NULL, 16);
	g.start = BASE + g.text_vaddr;
	g.limit = g.start + (1ull << 32);
	if (!strcmp(argv[1], "merge"))
		bench_merge(&g, fns, nfn, debug_dir, nprof, nsample, depth, passes);
	else
		bench_first(&g, fns, nfn, debug_dir, naddr, write_to);
	free(fns);
	return 0;
}
