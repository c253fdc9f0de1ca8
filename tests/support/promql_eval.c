/* promql_eval.c: the test driver that puts the promql package beside real
 * Prometheus. Subcommands:
 *   gen FILE                  writes generated series as OpenMetrics text (what
 *                             `promtool tsdb create-blocks-from openmetrics` reads)
 *   instant FILE TIME EXPR    evaluates EXPR at TIME (Unix seconds) over FILE's
 *                             samples and prints the `data` JSON of the HTTP API
 *   range FILE START END STEP EXPR   the same for a range query
 *   batch FILE QUERIES        evaluates every line of QUERIES, "instant<TAB>TIME<TAB>
 *                             EXPR" or "range<TAB>START<TAB>END<TAB>STEP<TAB>EXPR",
 *                             and prints one JSON object a line
 *   freeport                  prints a free TCP port on 127.0.0.1
 * Errors print {"errorType":"...","error":"..."} and exit 1. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "profd/labels.h"
#include "profd/promql.h"
#include "profd/util.h"

/* The data set's first timestamp (ms); the tests query around it. */
#define GEN_BASE 1700000000000LL

static uint64_t rng = 88172645463325252ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void write_sample(FILE *f, const char *series, double v, int64_t t)
{
	if (isnan(v))
		fprintf(f, "%s NaN %" PRId64 ".%03" PRId64 "\n", series, t / 1000, t % 1000);
	else
		fprintf(f, "%s %.17g %" PRId64 ".%03" PRId64 "\n", series, v, t / 1000, t % 1000);
}

/* Counters with resets and gaps, gauges with negative values and a NaN, sparse
 * series that the lookback window loses, over one hour. */
static int gen(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	static const char *const jobs[] = {"api", "db"};
	fprintf(f, "# TYPE ctr gauge\n");
	for (int j = 0; j < 2; j++)
		for (int inst = 0; inst < 3; inst++) {
			char series[128];
			snprintf(series, sizeof series, "ctr{job=\"%s\",instance=\"h%d:80\"}",
			         jobs[j], inst);
			double v = (double)(next_rand() % 100);
			for (int64_t t = GEN_BASE + inst * 1000; t < GEN_BASE + 3600000;
			     t += 15000 + (int64_t)(next_rand() % 400)) {
				/* a ten-minute gap in one series */
				if (j == 1 && inst == 2 && t > GEN_BASE + 1200000 &&
				    t < GEN_BASE + 1800000)
					continue;
				if (next_rand() % 40 == 0)
					v = (double)(next_rand() % 10); /* a reset */
				else
					v += (double)(next_rand() % 1000) / 10;
				write_sample(f, series, v, t);
			}
		}
	fprintf(f, "# TYPE gauge gauge\n");
	for (int j = 0; j < 2; j++)
		for (int inst = 0; inst < 2; inst++) {
			char series[128];
			snprintf(series, sizeof series, "gauge{job=\"%s\",instance=\"h%d:80\"}",
			         jobs[j], inst);
			int k = 0;
			for (int64_t t = GEN_BASE + 500; t < GEN_BASE + 3600000; t += 30000, k++) {
				double v = ((double)(next_rand() % 20001) - 10000) / 8;
				if (j == 1 && inst == 1 && k == 40)
					v = NAN;
				if (j == 0 && inst == 1 && k % 7 == 0)
					v = 5; /* ties for topk */
				write_sample(f, series, v, t);
			}
		}
	fprintf(f, "# TYPE sparse gauge\n");
	for (int inst = 0; inst < 2; inst++) {
		char series[128];
		snprintf(series, sizeof series, "sparse{job=\"api\",instance=\"h%d:80\"}", inst);
		for (int64_t t = GEN_BASE + 7000; t < GEN_BASE + 3600000;
		     t += 420000 + inst * 60000)
			write_sample(f, series, (double)(next_rand() % 1000), t);
	}
	fprintf(f, "# EOF\n");
	return fclose(f) ? 1 : 0;
}

static int load(struct pd_promql_memstore *m, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	struct pd_err err = {0};
	if (!f) {
		fprintf(stderr, "promql_eval: cannot open %s\n", path);
		return 1;
	}
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		double ts = strtod(sp + 1, NULL);
		char *vp = strrchr(line, ' ');
		if (!vp)
			continue;
		*vp = '\0';
		double v = strtod(vp + 1, NULL);
		struct pd_labels *ls;
		if (pd_labels_parse(&ls, line, NULL, &err)) {
			fprintf(stderr, "promql_eval: %s: %s\n", line, err.msg);
			fclose(f);
			return 1;
		}
		int rc = pd_promql_memstore_add(m, ls, (int64_t)llround(ts * 1000), v);
		pd_labels_destroy(ls);
		if (rc) {
			fclose(f);
			return 1;
		}
	}
	fclose(f);
	return 0;
}

static int64_t secs(const char *s)
{
	return (int64_t)llround(strtod(s, NULL) * 1000);
}

/* Evaluates one query and prints its JSON on one line; non-zero on an error. */
static int eval_one(const struct pd_promql_source *src, int instant, const char *t0, const char *t1,
                    const char *step, const char *q)
{
	struct pd_promql_result *r = NULL;
	struct pd_promql_err err = {0};
	int rc = instant ? pd_promql_query_instant(&r, src, q, strlen(q), secs(t0), NULL, &err)
	                 : pd_promql_query_range(&r, src, q, strlen(q), secs(t0), secs(t1),
	                                         secs(step), NULL, &err);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	if (rc) {
		pd_buf_printf(
		    &b, "{\"errorType\":\"%s\",\"error\":", pd_promql_errtype_string(err.type));
		pd_buf_json_string(&b, err.err.msg);
		pd_buf_append(&b, "}", 1);
	} else {
		pd_promql_result_json(r, &b);
	}
	printf("%.*s\n", (int)b.len, (const char *)b.data);
	pd_buf_fini(&b);
	pd_promql_result_destroy(r);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "freeport")) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t l = sizeof a;
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
		    getsockname(fd, (struct sockaddr *)&a, &l))
			return 1;
		printf("%d\n", ntohs(a.sin_port));
		close(fd);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "gen"))
		return gen(argv[2]);
	int instant = argc == 5 && !strcmp(argv[1], "instant");
	int range = argc == 7 && !strcmp(argv[1], "range");
	int batch = argc == 4 && !strcmp(argv[1], "batch");
	if (!instant && !range && !batch) {
		fprintf(stderr, "usage: promql_eval gen FILE | instant FILE TIME EXPR | "
		                "range FILE START END STEP EXPR | batch FILE QUERIES | freeport\n");
		return 2;
	}
	struct pd_promql_memstore *m = pd_promql_memstore_create();
	if (!m || load(m, argv[2]))
		return 1;
	struct pd_promql_source src = pd_promql_memstore_source(m);
	int rc = 0;
	if (instant) {
		rc = eval_one(&src, 1, argv[3], NULL, NULL, argv[4]);
	} else if (range) {
		rc = eval_one(&src, 0, argv[3], argv[4], argv[5], argv[6]);
	} else {
		FILE *f = fopen(argv[3], "r");
		char line[8192];
		if (!f) {
			fprintf(stderr, "promql_eval: cannot open %s\n", argv[3]);
			return 1;
		}
		while (fgets(line, sizeof line, f)) {
			char *fld[6];
			int nf = 0;
			line[strcspn(line, "\n")] = '\0';
			for (char *p = line; nf < 6;) {
				fld[nf++] = p;
				char *tab = strchr(p, '\t');
				if (!tab)
					break;
				*tab = '\0';
				p = tab + 1;
			}
			if (nf == 3 && !strcmp(fld[0], "instant"))
				eval_one(&src, 1, fld[1], NULL, NULL, fld[2]);
			else if (nf == 5 && !strcmp(fld[0], "range"))
				eval_one(&src, 0, fld[1], fld[2], fld[3], fld[4]);
			else
				printf("{\"errorType\":\"driver\",\"error\":\"bad line\"}\n");
		}
		fclose(f);
	}
	pd_promql_memstore_destroy(m);
	return rc ? 1 : 0;
}
