/* sink.c: ClickHouse as the sink a local store forwards its WAL to (storage.h,
 * struct pd_storage_sink): the schema made ready, each spooled profile added to
 * one writer's batch, the batch inserted at a flush, and the days past retention
 * dropped. */
#include <stdlib.h>

#include "profd/clickhouse.h"
#include "profd/storage.h"

struct ch_sink {
	struct pd_storage_sink sink; /* handed out; ctx is this */
	struct pd_clickhouse *ch;
	struct pd_clickhouse_writer *w; /* NULL until reset */
};

static int sink_prepare(void *ctx, struct pd_err *err)
{
	struct ch_sink *s = ctx;
	return pd_clickhouse_schema_create(s->ch, err);
}

static int sink_reset(void *ctx, struct pd_err *err)
{
	struct ch_sink *s = ctx;
	/* the whole batch is the forwarder's to say: the writer never flushes by itself */
	struct pd_clickhouse_writer_opts wo = {.batch_profiles = SIZE_MAX, .batch_bytes = SIZE_MAX};
	pd_clickhouse_writer_destroy(s->w);
	s->w = NULL;
	return pd_clickhouse_writer_create(&s->w, s->ch, &wo, err);
}

static int sink_append(void *ctx, const struct pd_labels *ls, int64_t t,
                       const struct pd_pprof_profile *p, struct pd_err *err)
{
	struct ch_sink *s = ctx;
	if (!s->w)
		return pd_err_set(err, PD_ENOMEM, "the ClickHouse batch is not ready");
	return pd_clickhouse_writer_append(s->w, ls, t, p, err);
}

static int sink_flush(void *ctx, struct pd_err *err)
{
	struct ch_sink *s = ctx;
	return s->w ? pd_clickhouse_writer_flush(s->w, err) : 0;
}

static int sink_drop_before(void *ctx, int64_t t, size_t *dropped, struct pd_err *err)
{
	struct ch_sink *s = ctx;
	return pd_clickhouse_drop_before(s->ch, t, dropped, err);
}

int pd_clickhouse_sink_create(struct pd_storage_sink **out, struct pd_clickhouse *ch,
                              struct pd_err *err)
{
	struct ch_sink *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	s->ch = ch;
	s->sink = (struct pd_storage_sink){
	    .ctx = s,
	    .name = "clickhouse",
	    .title = "ClickHouse",
	    .spool_flag = "--storage.clickhouse.spool.max-size",
	    .prepare = sink_prepare,
	    .reset = sink_reset,
	    .append = sink_append,
	    .flush = sink_flush,
	    .drop_before = sink_drop_before,
	};
	*out = &s->sink;
	return 0;
}

void pd_clickhouse_sink_destroy(struct pd_storage_sink *sink)
{
	if (!sink)
		return;
	struct ch_sink *s = sink->ctx;
	pd_clickhouse_writer_destroy(s->w);
	free(s);
}
