/* regex_bench.c: how long a regex label matcher takes per label value, for the
 * shapes selectors use (literal alternations, .*foo.*, prefixes, classes) over
 * realistic label values, and for pathological regexes over values built to make a
 * backtracking engine stall. It uses only the matcher API of include/profd/labels.h,
 * so bench/regex.sh builds it twice: against the labels package of this tree (RE2)
 * and against that of the commit before RE2 (PCRE2 with its match limit), the
 * reference. One line per case:
 *   case <TAB> regex <TAB> values <TAB> ns per match <TAB> matching values
 *   regex_bench [seconds per case, default 0.3]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profd/labels.h"

#define NVALUES 1000

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Label values as a Prometheus-style fleet has them: jobs, instances, pods,
 * environments, regions, paths; deterministic. */
static char **typical_values(void)
{
	static const char *const jobs[] = {"api", "web", "db", "cache", "worker", "ingest",
	                                   "api-server", "auth", "search", "billing"};
	static const char *const envs[] = {"prod", "staging", "dev", "canary"};
	static const char *const regions[] = {"eu-west-1", "us-east-1", "ap-south-1", "us-west-2"};
	char **v = calloc(NVALUES, sizeof(char *));
	unsigned x = 12345;
	for (size_t i = 0; i < NVALUES; i++) {
		char buf[128];
		x = x * 1103515245u + 12345u;
		unsigned r = x >> 8;
		const char *job = jobs[r % 10], *env = envs[(r / 10) % 4],
		           *reg = regions[(r / 40) % 4];
		switch (i % 5) {
		case 0:
			snprintf(buf, sizeof(buf), "%s", job);
			break;
		case 1:
			snprintf(buf, sizeof(buf), "10.%u.%u.%u:%u", r % 4, (r / 4) % 256, (r / 1024) % 256,
			         (r % 3) ? 8080u : 9090u);
			break;
		case 2:
			snprintf(buf, sizeof(buf), "%s-%s-%07x-%05x", env, job, r & 0xfffffff, x & 0xfffff);
			break;
		case 3:
			snprintf(buf, sizeof(buf), "%s-%s-node-%u", env, reg, r % 500);
			break;
		default:
			snprintf(buf, sizeof(buf), "/api/v1/%s/%s-%u", job, env, r % 64);
			break;
		}
		v[i] = strdup(buf);
	}
	return v;
}

/* Values an untrusted source could send (discovery metadata, a target's labels):
 * 40 bytes of one letter, some with a last letter that changes the answer. */
static char **hostile_values(void)
{
	char **v = calloc(NVALUES, sizeof(char *));
	for (size_t i = 0; i < NVALUES; i++) {
		char buf[64];
		char c = (i % 2) ? 'a' : 'x';
		memset(buf, c, 40);
		buf[40] = '\0';
		if (i % 4 >= 2) {
			buf[40] = c == 'a' ? 'b' : 'y';
			buf[41] = '\0';
		}
		v[i] = strdup(buf);
	}
	return v;
}

int main(int argc, char **argv)
{
	double budget = argc > 1 ? atof(argv[1]) : 0.3;
	static const struct {
		const char *name, *re;
		int hostile;
	} cases[] = {
	    {"alternation", "api|web|db", 0},
	    {"contains", ".*api.*", 0},
	    {"prefix", "prod-.*", 0},
	    {"suffix", ".*:9090", 0},
	    {"class", "[a-z]+-[a-z]+-[0-9a-f]+-[0-9a-f]+", 0},
	    {"instance", "10\\.[0-3]\\.[0-9]+\\.[0-9]+:8080", 0},
	    {"case-insensitive", "(?i)API-SERVER|(?i)prod-.*", 0},
	    {"alternation-prefix", "(api|web)-server|(prod|canary)-(eu|us)-.*", 0},
	    {"pathological (a|aa)+$", "(a|aa)+$", 1},
	    {"pathological (x+x+)+y", "(x+x+)+y", 1},
	    {"pathological 2nd branch", "(a|aa)*(a|aa)*(a|aa)*c|a*", 1},
	    {"pathological (.*a){12}", "(.*a){12}", 1},
	};
	char **typ = typical_values(), **hos = hostile_values();

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct pd_labels_matcher *m;
		struct pd_err err = {0};
		char **v = cases[c].hostile ? hos : typ;
		if (pd_labels_matcher_create(&m, PD_LABELS_MATCH_REGEXP, "v", cases[c].re, &err)) {
			fprintf(stderr, "regex_bench: %s: %s\n", cases[c].re, err.msg);
			return 1;
		}
		size_t hits = 0, n = 0;
		for (size_t i = 0; i < NVALUES; i++) /* warm-up pass, and the answers */
			hits += (size_t)pd_labels_matcher_matches(m, v[i]);
		double t0 = now(), t;
		do {
			size_t h = 0;
			for (size_t i = 0; i < NVALUES; i++)
				h += (size_t)pd_labels_matcher_matches(m, v[i]);
			n += NVALUES;
			if (h != hits)
				fprintf(stderr, "regex_bench: %s: answers changed\n", cases[c].re);
			t = now();
		} while (t - t0 < budget);
		printf("%s\t%s\t%s\t%.1f\t%zu\n", cases[c].name, cases[c].re,
		       cases[c].hostile ? "hostile" : "typical", (t - t0) * 1e9 / (double)n, hits);
		pd_labels_matcher_destroy(m);
	}
	for (size_t i = 0; i < NVALUES; i++) {
		free(typ[i]);
		free(hos[i]);
	}
	free(typ);
	free(hos);
	return 0;
}
