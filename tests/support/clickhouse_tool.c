/* clickhouse_tool.c: drives pkg/clickhouse from the shell, for
 * tests/integration/clickhouse.sh and bench/clickhouse.sh. Every command takes the
 * server's URL; --credentials FILE, --database NAME, --cluster NAME (Distributed
 * tables over a ClickHouse cluster) and --nodes URL,URL... (the cluster's other
 * nodes) may come first.
 *   schema URL
 *   write URL [--batch N] LABELS TS FILE [LABELS TS FILE ...]   (TS "auto": the
 *        profile's own time in ms; prints profiles/s of the writes and flush)
 *   dump URL LABELS TS OUT [...]    rebuild profiles into pprof files
 *   merge URL LABELS FROM TO OUT    merge a range, summed by ClickHouse
 *   merge-series URL FROM TO OUT LABELS...   the same range of several series in
 *        one merge (pd_clickhouse_merge_ranges)
 *   times URL LABELS FROM TO        the timestamps of a series, one a line
 *   series URL                      every series' labels, one a line
 *   drop URL BEFORE_MS              drop the partitions of days before BEFORE_MS
 *   filetime - FILE...              each file's time in ms, as "auto" takes it */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profd/clickhouse.h"

static int die(const struct pd_err *err)
{
	fprintf(stderr, "clickhouse_tool: %s\n", err->msg);
	return 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_labels(const char *s, struct pd_labels **out, struct pd_err *err)
{
	return pd_labels_parse(out, s, NULL, err);
}

int main(int argc, char **argv)
{
	struct pd_clickhouse_opts o = {0};
	struct pd_err err = {0};
	int i = 1;
	while (i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-') {
		if (!strcmp(argv[i], "--credentials"))
			o.credentials_file = argv[i + 1];
		else if (!strcmp(argv[i], "--database"))
			o.database = argv[i + 1];
		else if (!strcmp(argv[i], "--cluster"))
			o.cluster = argv[i + 1];
		else if (!strcmp(argv[i], "--nodes"))
			o.nodes = argv[i + 1];
		else
			break;
		i += 2;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: clickhouse_tool [--credentials FILE] [--database DB] "
		                "[--cluster NAME] [--nodes URL,...] "
				"schema|write|dump|merge|times|series|drop URL ...\n");
		return 2;
	}
	const char *cmd = argv[i];
	if (!strcmp(cmd, "filetime")) {
		for (int k = i + 2; k < argc; k++) {
			struct pd_pprof_profile *fp = NULL;
			if (pd_pprof_read_file(&fp, argv[k], NULL, &err))
				return die(&err);
			printf("%" PRId64 "\n", pd_pprof_time_nanos(fp) / 1000000);
			pd_pprof_destroy(fp);
		}
		return 0;
	}
	o.url = argv[i + 1];
	char **a = argv + i + 2;
	int na = argc - i - 2;
	struct pd_clickhouse *c = NULL;
	if (pd_clickhouse_create(&c, &o, &err))
		return die(&err);
	int rc = 0;
	struct pd_labels *ls = NULL;
	struct pd_pprof_profile *p = NULL;
	if (!strcmp(cmd, "schema")) {
		rc = pd_clickhouse_schema_create(c, &err);
	} else if (!strcmp(cmd, "write")) {
		struct pd_clickhouse_writer_opts wo = {0};
		if (na >= 2 && !strcmp(a[0], "--batch")) {
			wo.batch_profiles = strtoull(a[1], NULL, 10);
			a += 2;
			na -= 2;
		}
		struct pd_clickhouse_writer *w = NULL;
		if (na % 3 || (rc = pd_clickhouse_writer_create(&w, c, &wo, &err))) {
			if (!rc)
				fprintf(stderr,
				        "clickhouse_tool write: want LABELS TS FILE triples\n");
			rc = rc ? rc : 2;
		}
		/* decode first, so that the rate is the writer's */
		size_t n = (size_t)na / 3;
		struct pd_pprof_profile **ps = calloc(n + 1, sizeof(*ps));
		struct pd_labels **lss = calloc(n + 1, sizeof(*lss));
		for (size_t k = 0; !rc && k < n; k++) {
			if ((rc = parse_labels(a[3 * k], &lss[k], &err)) ||
			    (rc = pd_pprof_read_file(&ps[k], a[3 * k + 2], NULL, &err)))
				break;
		}
		double t0 = now_s();
		for (size_t k = 0; !rc && k < n; k++) {
			int64_t ts = !strcmp(a[3 * k + 1], "auto")
					     ? pd_pprof_time_nanos(ps[k]) / 1000000
					     : strtoll(a[3 * k + 1], NULL, 10);
			if ((rc = pd_clickhouse_writer_append(w, lss[k], ts, ps[k], &err)))
				pd_err_prefix(&err, "%s", a[3 * k + 2]);
		}
		if (!rc)
			rc = pd_clickhouse_writer_flush(w, &err);
		double dt = now_s() - t0;
		if (!rc)
			printf("wrote %zu profiles in %.3f s: %.1f profiles/s\n", n, dt,
			       dt > 0 ? (double)n / dt : 0.0);
		for (size_t k = 0; k < n; k++) {
			pd_pprof_destroy(ps[k]);
			pd_labels_destroy(lss[k]);
		}
		free(ps);
		free(lss);
		pd_clickhouse_writer_destroy(w);
	} else if (!strcmp(cmd, "dump") && na >= 3 && na % 3 == 0) {
		for (int k = 0; !rc && k < na; k += 3) {
			uint8_t *buf = NULL;
			size_t len = 0;
			pd_labels_destroy(ls);
			pd_pprof_destroy(p);
			ls = NULL;
			p = NULL;
			if (!(rc = parse_labels(a[k], &ls, &err)) &&
			    !(rc = pd_clickhouse_profile(c, ls, strtoll(a[k + 1], NULL, 10), &p,
			                                 &err)) &&
			    !(rc = pd_pprof_encode(p, 1, &buf, &len, &err)))
				rc = pd_file_write(a[k + 2], buf, len, &err);
			free(buf);
		}
	} else if (!strcmp(cmd, "merge") && na == 4) {
		uint8_t *buf = NULL;
		size_t len = 0;
		if (!(rc = parse_labels(a[0], &ls, &err)) &&
		    !(rc = pd_clickhouse_merge(c, ls, strtoll(a[1], NULL, 10),
					       strtoll(a[2], NULL, 10), &p, &err)) &&
		    !(rc = pd_pprof_encode(p, 1, &buf, &len, &err)))
			rc = pd_file_write(a[3], buf, len, &err);
		free(buf);
	} else if (!strcmp(cmd, "merge-series") && na >= 4 &&
	           na - 3 <= PD_CLICKHOUSE_MERGE_MAX_RANGES) {
		struct pd_clickhouse_range rg[PD_CLICKHOUSE_MERGE_MAX_RANGES];
		uint8_t *buf = NULL;
		size_t len = 0, nrg = 0;
		for (int k = 3; !rc && k < na; k++) {
			pd_labels_destroy(ls);
			ls = NULL;
			if (!(rc = parse_labels(a[k], &ls, &err)))
				rg[nrg++] = (struct pd_clickhouse_range){
				    pd_labels_hash(ls), strtoll(a[0], NULL, 10), strtoll(a[1], NULL, 10)};
		}
		if (!rc && !(rc = pd_clickhouse_merge_ranges(c, rg, nrg, &p, NULL, &err)) &&
		    !(rc = pd_pprof_encode(p, 1, &buf, &len, &err)))
			rc = pd_file_write(a[2], buf, len, &err);
		free(buf);
	} else if (!strcmp(cmd, "times") && na == 3) {
		int64_t *ts = NULL;
		size_t n = 0;
		if (!(rc = parse_labels(a[0], &ls, &err)) &&
		    !(rc = pd_clickhouse_times(c, ls, strtoll(a[1], NULL, 10),
		                               strtoll(a[2], NULL, 10), &ts, &n, &err)))
			for (size_t k = 0; k < n; k++)
				printf("%" PRId64 "\n", ts[k]);
		free(ts);
	} else if (!strcmp(cmd, "series") && na == 0) {
		struct pd_labels **v = NULL;
		size_t n = 0;
		if (!(rc = pd_clickhouse_series(c, &v, &n, &err)))
			for (size_t k = 0; k < n; k++) {
				char *s = pd_labels_string(v[k]);
				printf("%s\n", s ? s : "?");
				free(s);
			}
		pd_clickhouse_series_free(v, n);
	} else if (!strcmp(cmd, "drop") && na == 1) {
		size_t n = 0;
		if (!(rc = pd_clickhouse_drop_before(c, strtoll(a[0], NULL, 10), &n, &err)))
			printf("dropped %zu partitions\n", n);
	} else {
		fprintf(stderr, "clickhouse_tool: unknown command or wrong arguments: %s\n", cmd);
		rc = 2;
	}
	pd_pprof_destroy(p);
	pd_labels_destroy(ls);
	pd_clickhouse_destroy(c);
	if (rc < 0)
		return die(&err);
	return rc;
}
