/* tsdb_analyze.c: `profd tsdb analyze DIR`: what a storage directory holds, per
 * block and in total: series, samples, chunks, bytes of timestamp data and of
 * profile data, bytes per profile, and label cardinalities. */
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "profd/tsdb.h"

int pd_cmd_tsdb_analyze(const char *dir)
{
	struct pd_tsdb *db;
	struct pd_tsdb_opts o;
	struct pd_err err = {0};
	struct pd_storage_block_info *b = NULL;
	size_t n = 0;
	pd_tsdb_opts_init(&o);
	o.retention_ms = -1;
	o.read_only = 1;
	if (pd_tsdb_open(&db, dir, &o, &err) || pd_tsdb_blocks(db, &b, &n, &err)) {
		fprintf(stderr, "profd tsdb analyze: %s\n", err.msg);
		return 1;
	}
	uint64_t series = 0, samples = 0, chunks = 0, tsb = 0, vb = 0, size = 0;
	printf("%-26s %-24s %-24s %5s %8s %9s %8s %12s %14s %10s\n", "block", "min time", "max time",
	       "level", "series", "samples", "chunks", "ts bytes", "profile bytes", "B/profile");
	for (size_t i = 0; i < n; i++) {
		char t0[40], t1[40];
		pd_time_format(b[i].mint, t0, sizeof(t0));
		pd_time_format(b[i].maxt, t1, sizeof(t1));
		printf("%-26s %-24s %-24s %5d %8llu %9llu %8llu %12llu %14llu %10.0f\n", b[i].ulid, t0, t1,
		       b[i].level, (unsigned long long)b[i].series, (unsigned long long)b[i].samples,
		       (unsigned long long)b[i].chunks, (unsigned long long)b[i].ts_bytes,
		       (unsigned long long)b[i].value_bytes,
		       b[i].samples ? (double)b[i].value_bytes / (double)b[i].samples : 0.0);
		series += b[i].series;
		samples += b[i].samples;
		chunks += b[i].chunks;
		tsb += b[i].ts_bytes;
		vb += b[i].value_bytes;
		size += b[i].size;
	}
	free(b);
	struct pd_storage_stats st;
	pd_tsdb_stats(db, &st);
	printf("\nblocks: %zu, %llu bytes on disk; series (summed over blocks) %llu, samples %llu, "
	       "chunks %llu\n",
	       n, (unsigned long long)size, (unsigned long long)series, (unsigned long long)samples,
	       (unsigned long long)chunks);
	printf("timestamp bytes %llu (%.2f per sample), profile bytes %llu (%.0f per profile)\n",
	       (unsigned long long)tsb, samples ? (double)tsb / (double)samples : 0.0,
	       (unsigned long long)vb, samples ? (double)vb / (double)samples : 0.0);
	printf("head: %llu series, %llu samples, %llu chunks; WAL %llu bytes\n",
	       (unsigned long long)st.head_series, (unsigned long long)st.head_samples,
	       (unsigned long long)st.head_chunks, (unsigned long long)st.wal_bytes);

	char **names;
	size_t nn;
	if (pd_tsdb_label_names(db, NULL, 0, INT64_MIN, INT64_MAX, &names, &nn, &err) == 0) {
		printf("\nlabel cardinality:\n");
		for (size_t i = 0; i < nn; i++) {
			char **vals;
			size_t nv = 0;
			if (pd_tsdb_label_values(db, names[i], NULL, 0, INT64_MIN, INT64_MAX, &vals, &nv,
						 &err) == 0)
				pd_storage_strings_free(vals, nv);
			printf("  %-30s %zu values\n", names[i], nv);
		}
		pd_storage_strings_free(names, nn);
	}
	pd_tsdb_close(db);
	return 0;
}
