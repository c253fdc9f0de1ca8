/* decode_bench.c: how long decoding a pprof profile takes with the hand-written
 * decoder of pkg/pprof/pbdecode.c and with protobuf-c alone, the reference, per
 * profile type of one or more corpora (folders of per-type folders of .pb.gz
 * files). Profiles are gunzipped first, so that only the protobuf is timed.
 *
 * Two measures, each best of several passes, the two ways interleaved in every pass
 * over the same bytes:
 *   decode  pd_pprof_decode on the raw bytes, as a scrape does (unpack, then
 *           validation), with its internal switch protobuf_c_only off and on;
 *   unpack  the two unpackers alone into an arena: pd_pprof_pb_decode and
 *           perftools__profiles__profile__unpack.
 * One line per corpus and type: profiles, mean size, µs per profile and MB/s of
 * each, and the ratio protobuf-c / fast (above 1: the fast path is faster).
 *
 *   decode_bench [--passes N] [--pass-seconds S] CORPUS_DIR...
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "pprof_int.h"

struct prof {
	uint8_t *raw;
	size_t len;
};

struct type {
	char name[256];
	struct prof *p;
	size_t n, cap, bytes;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names of dir's entries not starting with '.'; NULL if unreadable. */
static char **list_dir(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char **v = NULL;
	size_t cap = 0;
	*n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			char **nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				abort();
			v = nv;
		}
		v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_str);
	return v;
}

static void load_type(struct type *t, const char *dir)
{
	size_t n;
	char **names = list_dir(dir, &n);
	for (size_t i = 0; names && i < n; i++) {
		size_t l = strlen(names[i]);
		char path[4096 + 512];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		int gz = l >= 6 && strcmp(names[i] + l - 6, ".pb.gz") == 0;
		free(names[i]);
		if (!gz)
			continue;
		struct pd_err err = {0};
		uint8_t *buf, *raw = NULL;
		size_t len, raw_len;
		if (pd_file_read(path, (size_t)1 << 30, &buf, &len, &err) ||
		    pd_gunzip(buf, len, PD_PPROF_DEFAULT_MAX_DECOMPRESSED, &raw, &raw_len, &err)) {
			fprintf(stderr, "decode_bench: %s: %s\n", path, err.msg);
			exit(1);
		}
		free(buf);
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 32;
			struct prof *np = realloc(t->p, t->cap * sizeof(*t->p));
			if (!np)
				abort();
			t->p = np;
		}
		t->p[t->n].raw = raw;
		t->p[t->n++].len = raw_len;
		t->bytes += raw_len;
	}
	free(names);
}

enum { DECODE_FAST, DECODE_PBC, UNPACK_FAST, UNPACK_PBC, NWAYS };

/* Runs one way over every profile of t, reps times; returns the seconds taken. */
static double run(const struct type *t, int way, size_t reps)
{
	struct pd_pprof_decode_opts fast = {0}, pbc = {.protobuf_c_only = 1};
	double t0 = now();
	for (size_t r = 0; r < reps; r++) {
		for (size_t i = 0; i < t->n; i++) {
			const struct prof *p = &t->p[i];
			struct pd_err err = {0};
			if (way == DECODE_FAST || way == DECODE_PBC) {
				struct pd_pprof_profile *out = NULL;
				if (pd_pprof_decode(&out, p->raw, p->len,
				                    way == DECODE_FAST ? &fast : &pbc, &err)) {
					fprintf(stderr, "decode_bench: %s #%zu: %s\n", t->name, i,
					        err.msg);
					exit(1);
				}
				pd_pprof_destroy(out);
				continue;
			}
			struct pd_arena *a = pd_arena_create(p->len * 16 + (1u << 20));
			void *pb;
			if (way == UNPACK_FAST) {
				pb = pd_pprof_pb_decode(a, p->raw, p->len);
			} else {
				ProtobufCAllocator alloc;
				pd_pprof_arena_allocator(&alloc, a);
				pb = perftools__profiles__profile__unpack(&alloc, p->len, p->raw);
			}
			if (!pb) {
				fprintf(stderr, "decode_bench: %s #%zu: not unpacked (way %d)\n",
				        t->name, i, way);
				exit(1);
			}
			pd_arena_destroy(a);
		}
	}
	return now() - t0;
}

int main(int argc, char **argv)
{
	int passes = 7;
	double pass_seconds = 0.05;
	int ai = 1;
	for (; ai < argc && strncmp(argv[ai], "--", 2) == 0; ai += 2) {
		if (ai + 1 >= argc)
			goto usage;
		if (strcmp(argv[ai], "--passes") == 0)
			passes = atoi(argv[ai + 1]);
		else if (strcmp(argv[ai], "--pass-seconds") == 0)
			pass_seconds = atof(argv[ai + 1]);
		else
			goto usage;
	}
	if (ai >= argc || passes < 1 || pass_seconds <= 0)
		goto usage;

	printf("%-30s %5s %9s | %9s %9s %8s %8s %7s | %9s %9s %7s | %s\n", "corpus/type", "files",
	       "mean KB", "fast µs", "pbc µs", "fast MB/s", "pbc MB/s", "ratio", "unpack f",
	       "unpack p", "ratio", "fast path");
	double tot_t[NWAYS] = {0};
	size_t tot_bytes = 0, tot_files = 0;
	for (; ai < argc; ai++) {
		const char *corpus = argv[ai];
		const char *cname = strrchr(corpus, '/') ? strrchr(corpus, '/') + 1 : corpus;
		size_t nt;
		char **types = list_dir(corpus, &nt);
		if (!types) {
			fprintf(stderr, "decode_bench: cannot read %s\n", corpus);
			return 1;
		}
		for (size_t k = 0; k < nt; k++) {
			struct type t = {0};
			char dir[4096];
			snprintf(t.name, sizeof(t.name), "%s/%s", cname, types[k]);
			snprintf(dir, sizeof(dir), "%s/%s", corpus, types[k]);
			free(types[k]);
			struct stat st;
			if (stat(dir, &st) || !S_ISDIR(st.st_mode))
				continue;
			load_type(&t, dir);
			if (!t.n)
				continue;
			/* how many of them the fast path takes */
			size_t fast_ok = 0;
			for (size_t i = 0; i < t.n; i++) {
				struct pd_arena *a = pd_arena_create(0);
				fast_ok += pd_pprof_pb_decode(a, t.p[i].raw, t.p[i].len) != NULL;
				pd_arena_destroy(a);
			}
			/* repetitions that make a pass last about pass_seconds */
			double once = run(&t, DECODE_PBC, 1);
			size_t reps = once > 0 ? (size_t)(pass_seconds / once) : 1;
			if (reps < 1)
				reps = 1;
			double best[NWAYS];
			for (int w = 0; w < NWAYS; w++)
				best[w] = 1e30;
			for (int pass = 0; pass < passes; pass++) {
				for (int w = 0; w < NWAYS; w++) {
					double s = run(&t, w, reps) / (double)reps;
					if (s < best[w])
						best[w] = s;
				}
			}
			double n = (double)t.n, mb = (double)t.bytes / 1e6;
			printf("%-30s %5zu %9.1f | %9.1f %9.1f %8.0f %8.0f %6.2fx | %9.1f %9.1f "
			       "%6.2fx | "
			       "%zu/%zu\n",
			       t.name, t.n, (double)t.bytes / n / 1024, best[DECODE_FAST] / n * 1e6,
			       best[DECODE_PBC] / n * 1e6, mb / best[DECODE_FAST],
			       mb / best[DECODE_PBC], best[DECODE_PBC] / best[DECODE_FAST],
			       best[UNPACK_FAST] / n * 1e6, best[UNPACK_PBC] / n * 1e6,
			       best[UNPACK_PBC] / best[UNPACK_FAST], fast_ok, t.n);
			fflush(stdout);
			for (int w = 0; w < NWAYS; w++)
				tot_t[w] += best[w];
			tot_bytes += t.bytes;
			tot_files += t.n;
			for (size_t i = 0; i < t.n; i++)
				free(t.p[i].raw);
			free(t.p);
		}
		free(types);
	}
	if (tot_files) {
		double n = (double)tot_files, mb = (double)tot_bytes / 1e6;
		printf("%-30s %5zu %9.1f | %9.1f %9.1f %8.0f %8.0f %6.2fx | %9.1f %9.1f %6.2fx |\n",
		       "all", tot_files, (double)tot_bytes / n / 1024, tot_t[DECODE_FAST] / n * 1e6,
		       tot_t[DECODE_PBC] / n * 1e6, mb / tot_t[DECODE_FAST], mb / tot_t[DECODE_PBC],
		       tot_t[DECODE_PBC] / tot_t[DECODE_FAST], tot_t[UNPACK_FAST] / n * 1e6,
		       tot_t[UNPACK_PBC] / n * 1e6, tot_t[UNPACK_PBC] / tot_t[UNPACK_FAST]);
	}
	return 0;
usage:
	fprintf(stderr, "usage: decode_bench [--passes N] [--pass-seconds S] CORPUS_DIR...\n");
	return 2;
}
