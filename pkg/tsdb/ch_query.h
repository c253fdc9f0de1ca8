/* ch_query.h: the store's read side when its profiles are in ClickHouse
 * (pd_tsdb_opts.clickhouse): each pd_tsdb_* read function hands over to the
 * tsdb_ch_* function of the same name when db->o.clickhouse is set. Private to
 * pkg/tsdb. */
#ifndef PROFD_TSDB_CH_QUERY_H
#define PROFD_TSDB_CH_QUERY_H

#include "profd/tsdb.h"

int tsdb_ch_select(struct pd_tsdb *db, const struct pd_tsdb_matcher *m, size_t nm, int64_t mint,
                   int64_t maxt, size_t limit, struct pd_tsdb_result **out, struct pd_err *err);
int tsdb_ch_read(struct pd_tsdb *db, const struct pd_tsdb_label *labels, size_t n, int64_t t,
                 uint8_t **out, size_t *len, struct pd_err *err);
int tsdb_ch_merge_ranges(struct pd_tsdb *db, const struct pd_tsdb_merge_range *r, size_t n,
                         pd_tsdb_merge_fn emit, void *ctx, struct pd_err *err);
int tsdb_ch_select_totals(struct pd_tsdb *db, const struct pd_tsdb_matcher *m, size_t nm,
                          int64_t mint, int64_t maxt, size_t limit,
                          struct pd_tsdb_totals_result **out, struct pd_err *err);
/* names (name NULL) or the values of name */
int tsdb_ch_labels(struct pd_tsdb *db, const char *name, const struct pd_tsdb_matcher *m, size_t nm,
                   int64_t mint, int64_t maxt, char ***out, size_t *n, struct pd_err *err);
/* One series' totals from its ClickHouse rows (nrows, all of that series, in time
 * order) into o: its labels (nl, copied), the sample types (type and unit) in order
 * of first appearance, and per profile its time, duration and, for each type it
 * has, its total (present 1); memory from r (tsdb_totals_alloc). PD_ENOMEM. */
struct pd_lpair;
struct pd_clickhouse_total;
int tsdb_ch_totals_series(struct pd_tsdb_totals_result *r, const struct pd_lpair *lp, size_t nl,
                          const struct pd_clickhouse_total *rows, size_t nrows,
                          struct pd_tsdb_totals *o);
/* PD_EINCOMPAT with a message that what cannot be done in ClickHouse mode. */
int tsdb_ch_unsupported(const char *what, struct pd_err *err);

/* totals.c: memory that r owns, freed by pd_tsdb_totals_result_destroy (rounded
 * up to 16 bytes); NULL when out of memory. */
void *tsdb_totals_alloc(struct pd_tsdb_totals_result *r, size_t bytes);

#endif
