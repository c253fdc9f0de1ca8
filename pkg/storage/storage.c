/* storage.c: the storage interface's calls, each handed to the backend's function
 * (storage.h). Nothing here knows a backend. */
#include <string.h>

#include "profd/storage.h"

int pd_storage_select(struct pd_storage *st, const struct pd_storage_matcher *m, size_t nm,
                      int64_t mint, int64_t maxt, size_t limit, struct pd_storage_result **out,
                      struct pd_err *err)
{
	return st->ops->select(st->impl, m, nm, mint, maxt, limit, out, err);
}

int pd_storage_read(struct pd_storage *st, const struct pd_storage_label *labels, size_t n,
                    int64_t t, uint8_t **out, size_t *len, struct pd_err *err)
{
	return st->ops->read(st->impl, labels, n, t, out, len, err);
}

int pd_storage_select_totals(struct pd_storage *st, const struct pd_storage_matcher *m,
                             size_t nm, int64_t mint, int64_t maxt, size_t limit,
                             struct pd_storage_totals_result **out, struct pd_err *err)
{
	return st->ops->select_totals(st->impl, m, nm, mint, maxt, limit, out, err);
}

int pd_storage_merge_ranges(struct pd_storage *st, const struct pd_storage_merge_range *r,
                            size_t n, pd_storage_merge_fn emit, void *ctx, struct pd_err *err)
{
	return st->ops->merge_ranges(st->impl, r, n, emit, ctx, err);
}

size_t pd_storage_merge_batch(const struct pd_storage *st)
{
	size_t b = st->ops->merge_batch;
	if (b < 1)
		return 1;
	return b < PD_STORAGE_MERGE_MAX_RANGES ? b : PD_STORAGE_MERGE_MAX_RANGES;
}

int pd_storage_label_names(struct pd_storage *st, const struct pd_storage_matcher *m, size_t nm,
                           int64_t mint, int64_t maxt, char ***out, size_t *n,
                           struct pd_err *err)
{
	return st->ops->labels(st->impl, NULL, m, nm, mint, maxt, out, n, err);
}

int pd_storage_label_values(struct pd_storage *st, const char *name,
                            const struct pd_storage_matcher *m, size_t nm, int64_t mint,
                            int64_t maxt, char ***out, size_t *n, struct pd_err *err)
{
	return st->ops->labels(st->impl, name, m, nm, mint, maxt, out, n, err);
}

struct pd_storage_appender *pd_storage_appender(struct pd_storage *st)
{
	return st->ops->appender(st->impl);
}

void pd_storage_appender_lazy(struct pd_storage_appender *a)
{
	a->ops->lazy(a);
}

int pd_storage_append(struct pd_storage_appender *a, const struct pd_storage_label *labels,
                      size_t n, int64_t t, const uint8_t *profile, size_t len,
                      struct pd_err *err)
{
	return a->ops->append(a, labels, n, t, profile, len, NULL, NULL, 0, err);
}

int pd_storage_append_decoded(struct pd_storage_appender *a,
                              const struct pd_storage_label *labels, size_t n, int64_t t,
                              const uint8_t *profile, size_t len,
                              struct pd_pprof_profile *decoded, struct pd_err *err)
{
	return a->ops->append(a, labels, n, t, profile, len, decoded, NULL, 0, err);
}

int pd_storage_append_gzip(struct pd_storage_appender *a, const struct pd_storage_label *labels,
                           size_t n, int64_t t, const uint8_t *profile, size_t len,
                           struct pd_pprof_profile *decoded, const uint8_t *gz, size_t gzlen,
                           struct pd_err *err)
{
	return a->ops->append(a, labels, n, t, profile, len, decoded, gz, gzlen, err);
}

int pd_storage_commit(struct pd_storage_appender *a, struct pd_err *err)
{
	return a->ops->commit(a, err);
}

void pd_storage_rollback(struct pd_storage_appender *a)
{
	if (a)
		a->ops->rollback(a);
}

void pd_storage_stats(struct pd_storage *st, struct pd_storage_stats *out)
{
	memset(out, 0, sizeof(*out));
	st->ops->stats(st->impl, out);
}

int pd_storage_blocks(struct pd_storage *st, struct pd_storage_block_info **out, size_t *n,
                      struct pd_err *err)
{
	return st->ops->blocks(st->impl, out, n, err);
}

int pd_storage_delete(struct pd_storage *st, const struct pd_storage_matcher *m, size_t nm,
                      int64_t mint, int64_t maxt, struct pd_err *err)
{
	return st->ops->delete_series(st->impl, m, nm, mint, maxt, err);
}

int pd_storage_clean_tombstones(struct pd_storage *st, struct pd_err *err)
{
	return st->ops->clean_tombstones(st->impl, err);
}

int pd_storage_snapshot(struct pd_storage *st, int skip_head,
                        char name[PD_STORAGE_SNAPSHOT_NAME_MAX], struct pd_err *err)
{
	return st->ops->snapshot(st->impl, skip_head, name, err);
}

const char *pd_storage_kind(const struct pd_storage *st)
{
	return st->ops->kind ? st->ops->kind : "";
}
