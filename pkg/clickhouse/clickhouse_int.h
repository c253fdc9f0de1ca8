/* clickhouse_int.h: what the files of pkg/clickhouse share and nobody else sees. */
#ifndef PROFD_CLICKHOUSE_INT_H
#define PROFD_CLICKHOUSE_INT_H

#include "profd/clickhouse.h"

struct pd_clickhouse {
	char *url;      /* without a trailing '/' */
	char *database;
	char *cluster;  /* NULL: one server */
	char **nodes;  /* with a cluster: the other nodes' URLs, without a trailing '/' */
	size_t nnodes;
	/* url (0) and nodes (1..nnodes) as messages show them: a password as xxxxx */
	char **shown;
	char *user;     /* NULL: no credentials */
	char *password;
	long timeout_ms;
	size_t max_response;
	int no_compress;
};

/* Runs a SELECT whose result is in RowBinary (sql must end in FORMAT RowBinary). */
int ch_select(struct pd_clickhouse *c, const char *sql, struct pd_buf *resp, struct pd_err *err);

/* query.c's readers of ClickHouse's totals answers (also run by the fuzz target
 * tests/fuzz/fuzz_clickhouse.c). Per row while reading: the string ids of its types
 * and units (type k at 2k, its unit at 2k + 1, in t's arena), and whether its totals
 * are missing (schema version 1). */
struct ch_tid {
	uint64_t *sid;
	int missing;
};
/* Appends the profiles rows of one answer (series_id, ts, duration_nanos,
 * sample_types, sample_units, totals) to t->rows and *tids (both grown together,
 * *cap entries). PD_ECORRUPT for a malformed answer. */
int ch_totals_rows(struct pd_clickhouse_totals *t, const void *data, size_t len,
                   struct ch_tid **tids, size_t *cap, struct pd_err *err);
/* Reads (series_id, ts, sumForEach(values)) rows into the totals of the rows of t
 * (sorted by series, then time) that lack them. PD_ECORRUPT for a malformed answer. */
int ch_totals_sums(struct pd_clickhouse_totals *t, const struct ch_tid *tids, const void *data,
                   size_t len, struct pd_err *err);

/* storage.c: one series' totals from its ClickHouse rows (nrows, all of that
 * series, in time order) into o: its labels (nl, copied), the sample types (type
 * and unit) in order of first appearance, and per profile its time, duration and,
 * for each type it has, its total (present 1); memory from r
 * (pd_storage_totals_alloc). PD_ENOMEM. */
int ch_totals_series(struct pd_storage_totals_result *r, const struct pd_storage_label *lp,
		     size_t nl, const struct pd_clickhouse_total *rows, size_t nrows,
		     struct pd_storage_totals *o);

#endif
