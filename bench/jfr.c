/* jfr.c: how long converting a JFR recording takes (ingest_jfr, as a push to
 * /ingest?format=jfr pays it) against decoding the pprof profiles that result
 * (pd_pprof_decode, what every later read of them pays), the reference, per
 * recording. Recordings are gunzipped first, so that only conversion is timed;
 * the profiles are the converter's own, uncompressed. Times are CPU time of the
 * process, best of several passes, the two interleaved in each pass.
 *
 *   jfr_bench [--passes N] [--pass-seconds S] FILE.jfr[.gz]...
 *
 * One line per file: its size, the profiles and samples it makes, µs per
 * conversion and MB/s of recording converted, µs to decode all its profiles, and
 * the ratio convert / decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingest_int.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "jfr_bench: %s: %s\n", what, err->msg);
	exit(1);
}

int main(int argc, char **argv)
{
	int passes = 7;
	double pass_s = 0.2;
	int i = 1;
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "jfr_bench: %s needs a value\n", argv[i]);
			return 2;
		}
		if (strcmp(argv[i], "--passes") == 0)
			passes = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--pass-seconds") == 0)
			pass_s = atof(argv[i + 1]);
		else {
			fprintf(stderr, "jfr_bench: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr,
		        "usage: jfr_bench [--passes N] [--pass-seconds S] FILE.jfr[.gz]...\n");
		return 2;
	}
	struct pd_labels *ls = NULL;
	struct pd_err err = {0};
	if (pd_labels_from_strings(&ls, &err, "service_name", "bench", NULL))
		die("labels", &err);
	struct ingest_meta m = {.labels = ls,
	                        .app = "bench",
	                        .type = "cpu",
	                        .from_ms = 1700000000000,
	                        .until_ms = 1700000010000,
	                        .sample_rate = 100,
	                        .spy_name = "javaspy",
	                        .aggregation = "sum"};
	printf("%-44s %8s %5s %8s %11s %9s %10s %7s\n", "recording", "KiB", "profs", "samples",
	       "convert µs", "MB/s", "decode µs", "ratio");
	double worst = 0;
	for (; i < argc; i++) {
		uint8_t *raw = NULL, *jfr = NULL;
		size_t rl, jl;
		if (pd_file_read(argv[i], (size_t)1 << 30, &raw, &rl, &err))
			die(argv[i], &err);
		if (pd_gzip_is(raw, rl)) {
			if (pd_gunzip(raw, rl, (size_t)1 << 30, &jfr, &jl, &err))
				die(argv[i], &err);
			free(raw);
		} else {
			jfr = raw;
			jl = rl;
		}
		struct pd_ingest_batch b = {0};
		if (ingest_jfr(&m, jfr, jl, NULL, NULL, &b, &err))
			die(argv[i], &err);
		size_t samples = 0;
		for (size_t k = 0; k < b.n; k++) {
			struct pd_pprof_profile *d = NULL;
			if (pd_pprof_decode(&d, b.v[k].pprof, b.v[k].len, NULL, &err))
				die("decode", &err);
			samples += pd_pprof_sample_count(d);
			pd_pprof_destroy(d);
		}
		double best_c = 1e30, best_d = 1e30;
		for (int p = 0; p < passes; p++) {
			long n = 0;
			double t0 = cpu_now(), t;
			do {
				struct pd_ingest_batch x = {0};
				if (ingest_jfr(&m, jfr, jl, NULL, NULL, &x, &err))
					die(argv[i], &err);
				pd_ingest_batch_fini(&x);
				n++;
			} while ((t = cpu_now() - t0) < pass_s);
			if (t / (double)n < best_c)
				best_c = t / (double)n;
			n = 0;
			t0 = cpu_now();
			do {
				for (size_t k = 0; k < b.n; k++) {
					struct pd_pprof_profile *d = NULL;
					if (pd_pprof_decode(&d, b.v[k].pprof, b.v[k].len, NULL,
					                    &err))
						die("decode", &err);
					pd_pprof_destroy(d);
				}
				n++;
			} while ((t = cpu_now() - t0) < pass_s);
			if (t / (double)n < best_d)
				best_d = t / (double)n;
		}
		const char *name = strrchr(argv[i], '/');
		name = name ? name + 1 : argv[i];
		double ratio = best_c / best_d;
		if (ratio > worst)
			worst = ratio;
		printf("%-44.44s %8.1f %5zu %8zu %11.1f %9.1f %10.1f %7.2f\n", name,
		       (double)jl / 1024, b.n, samples, best_c * 1e6, (double)jl / best_c / 1e6,
		       best_d * 1e6, ratio);
		pd_ingest_batch_fini(&b);
		free(jfr);
	}
	printf("\nworst ratio convert / decode: %.2f (aim: at most 3)\n", worst);
	pd_labels_destroy(ls);
	return 0;
}
