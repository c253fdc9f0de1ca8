/* storage.c: the local store behind the storage interface (storage.h): each
 * function hands over to the pd_tsdb_* function of the same job. With a sink the
 * store keeps no profiles, so what only blocks can do is refused here. */
#include "tsdb_int.h"

static int op_select(void *impl, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
		     int64_t maxt, size_t limit, struct pd_storage_result **out,
		     struct pd_err *err)
{
	return pd_tsdb_select(impl, m, nm, mint, maxt, limit, out, err);
}

static int op_read(void *impl, const struct pd_storage_label *labels, size_t n, int64_t t,
		   uint8_t **out, size_t *len, struct pd_err *err)
{
	return pd_tsdb_read(impl, labels, n, t, out, len, err);
}

static int op_select_totals(void *impl, const struct pd_storage_matcher *m, size_t nm,
			    int64_t mint, int64_t maxt, size_t limit,
			    struct pd_storage_totals_result **out, struct pd_err *err)
{
	return pd_tsdb_select_totals(impl, m, nm, mint, maxt, limit, out, err);
}

static int op_merge_ranges(void *impl, const struct pd_storage_merge_range *r, size_t n,
			   pd_storage_merge_fn emit, void *ctx, struct pd_err *err)
{
	return pd_tsdb_merge_ranges(impl, r, n, emit, ctx, err);
}

static int op_labels(void *impl, const char *name, const struct pd_storage_matcher *m,
		     size_t nm, int64_t mint, int64_t maxt, char ***out, size_t *n,
		     struct pd_err *err)
{
	if (name)
		return pd_tsdb_label_values(impl, name, m, nm, mint, maxt, out, n, err);
	return pd_tsdb_label_names(impl, m, nm, mint, maxt, out, n, err);
}

static struct pd_storage_appender *op_appender(void *impl)
{
	return tsdb_appender_base(pd_tsdb_appender(impl));
}

static void op_stats(void *impl, struct pd_storage_stats *st)
{
	pd_tsdb_stats(impl, st);
}

static int op_blocks(void *impl, struct pd_storage_block_info **out, size_t *n,
		     struct pd_err *err)
{
	return pd_tsdb_blocks(impl, out, n, err);
}

static int op_delete(void *impl, const struct pd_storage_matcher *m, size_t nm, int64_t mint,
		     int64_t maxt, struct pd_err *err)
{
	return pd_tsdb_delete(impl, m, nm, mint, maxt, err);
}

static int op_clean_tombstones(void *impl, struct pd_err *err)
{
	return pd_tsdb_clean_tombstones(impl, err);
}

static int op_snapshot(void *impl, int skip_head, char name[PD_STORAGE_SNAPSHOT_NAME_MAX],
		       struct pd_err *err)
{
	return pd_tsdb_snapshot(impl, skip_head, name, err);
}

static const struct pd_storage_ops local_ops = {
	.select = op_select,
	.read = op_read,
	.select_totals = op_select_totals,
	.merge_ranges = op_merge_ranges,
	.labels = op_labels,
	.appender = op_appender,
	.stats = op_stats,
	.blocks = op_blocks,
	.delete_series = op_delete,
	.clean_tombstones = op_clean_tombstones,
	.snapshot = op_snapshot,
	.merge_batch = 1,
	.kind = "local",
};

void tsdb_storage_init(struct pd_tsdb *db)
{
	db->storage = (struct pd_storage){&local_ops, db};
}

struct pd_storage *pd_tsdb_storage(struct pd_tsdb *db)
{
	return &db->storage;
}

int tsdb_sink_unsupported(const struct pd_tsdb *db, const char *what, struct pd_err *err)
{
	return pd_err_set(err, PD_EINCOMPAT,
			  "%s is not available when the store forwards its profiles to %s", what,
			  db->o.sink->title);
}
