/* schema.c: the tables profd keeps in ClickHouse (docs/format/clickhouse.md),
 * created idempotently, the schema version they are at, and retention by dropping
 * daily partitions. With a cluster, each node gets <table>_local tables and
 * Distributed tables of the plain names over them, created through every node's
 * own HTTP interface (ON CLUSTER would need ZooKeeper), and partitions are dropped
 * on every node. Only SQL that ClickHouse 18.16 and current releases both
 * accept: MergeTree-family engines with ORDER BY / PARTITION BY, Array columns, no
 * Map, LowCardinality or CODEC. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clickhouse_int.h"

#define PARTITION "PARTITION BY toYYYYMMDD(toDateTime(intDiv(ts, 1000)))"

/* Each table: its name, its columns and engine, and with a cluster the sharding
 * key of the Distributed table over its <name>_local tables ("" for a table each
 * node keeps for itself). */
struct table {
	const char *name;
	const char *def; /* "(columns) ENGINE = ..." */
	const char *shard_by;
};

static const struct table tables[] = {
	{"schema_version",
	 "(version UInt32, applied DateTime) ENGINE = ReplacingMergeTree ORDER BY version", ""},
	{"series",
	 "(series_id UInt64, names Array(String), values Array(String)) "
	 "ENGINE = ReplacingMergeTree ORDER BY series_id",
	 "series_id"},
	{"strings", "(id UInt64, s String) ENGINE = ReplacingMergeTree ORDER BY id", "id"},
	{"functions",
	 "(id UInt64, name UInt64, system_name UInt64, filename UInt64, start_line Int64) "
	 "ENGINE = ReplacingMergeTree ORDER BY id",
	 "id"},
	{"mappings",
	 "(id UInt64, memory_start UInt64, memory_limit UInt64, file_offset UInt64, "
	 "filename UInt64, build_id UInt64, has_functions UInt8, has_filenames UInt8, "
	 "has_line_numbers UInt8, has_inline_frames UInt8) "
	 "ENGINE = ReplacingMergeTree ORDER BY id",
	 "id"},
	{"locations",
	 "(id UInt64, mapping_id UInt64, address UInt64, is_folded UInt8, "
	 "line_function Array(UInt64), line_line Array(Int64), line_column Array(Int64)) "
	 "ENGINE = ReplacingMergeTree ORDER BY id",
	 "id"},
	{"stacks", "(id UInt64, location_ids Array(UInt64)) ENGINE = ReplacingMergeTree ORDER BY id",
	 "id"},
	{"profiles",
	 "(series_id UInt64, ts Int64, time_nanos Int64, duration_nanos Int64, period Int64, "
	 "has_period_type UInt8, period_type UInt64, period_unit UInt64, "
	 "sample_types Array(UInt64), sample_units Array(UInt64), default_sample_type UInt64, "
	 "drop_frames UInt64, keep_frames UInt64, doc_url UInt64, comments Array(UInt64), "
	 "mapping_ids Array(UInt64), mapping_hashes Array(UInt64), location_ids Array(UInt64), "
	 "location_hashes Array(UInt64), function_ids Array(UInt64), "
	 "function_hashes Array(UInt64), string_ids Array(UInt64), totals Array(Int64)) "
	 "ENGINE = ReplacingMergeTree " PARTITION " ORDER BY (series_id, ts)",
	 "series_id"},
	{"samples",
	 "(series_id UInt64, ts Int64, ordinal UInt32, stack_id UInt64, values Array(Int64), "
	 "label_key Array(UInt64), label_str Array(UInt64), label_num Array(Int64), "
	 "label_unit Array(UInt64)) "
	 "ENGINE = ReplacingMergeTree " PARTITION " ORDER BY (series_id, ts, ordinal)",
	 "series_id"},
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

static int run_at(struct pd_clickhouse *c, size_t node, struct pd_buf *resp, struct pd_err *err,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int run_at(struct pd_clickhouse *c, size_t node, struct pd_buf *resp, struct pd_err *err,
                  const char *fmt, ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(sql))
		return pd_err_set(err, PD_EINVAL, "clickhouse: statement too long");
	return pd_clickhouse_exec_at(c, node, sql, NULL, 0, resp, err);
}

#define run(c, resp, err, ...) run_at(c, 0, resp, err, __VA_ARGS__)

/* Creates the database and the tables on node i: the plain tables without a
 * cluster; with one, <table>_local and the Distributed table over them. */
static int create_tables(struct pd_clickhouse *c, size_t node, struct pd_err *err)
{
	const char *db = c->database;
	int rc = run_at(c, node, NULL, err, "CREATE DATABASE IF NOT EXISTS %s", db);
	for (size_t i = 0; !rc && i < NTABLES; i++) {
		const struct table *t = &tables[i];
		if (!c->cluster || !*t->shard_by) {
			rc = run_at(c, node, NULL, err, "CREATE TABLE IF NOT EXISTS %s.%s %s", db,
			            t->name, t->def);
			continue;
		}
		rc = run_at(c, node, NULL, err, "CREATE TABLE IF NOT EXISTS %s.%s_local %s", db,
		            t->name, t->def);
		if (!rc)
			rc = run_at(c, node, NULL, err,
			            "CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local ENGINE = "
			            "Distributed(%s, %s, %s_local, %s)",
			            db, t->name, db, t->name, c->cluster, db, t->name, t->shard_by);
	}
	return rc;
}

/* Version 1 to 2: profiles gains totals (empty in older rows, whose totals the
 * reader sums from samples). Done when the column is missing, whatever the
 * recorded version says, so that an interrupted migration completes. With a
 * cluster, on node i's profiles_local and then on the Distributed profiles over
 * it (an ALTER of a Distributed table changes only its own columns). */
static int migrate(struct pd_clickhouse *c, size_t node, struct pd_err *err)
{
	const char *names[2] = {c->cluster ? "profiles_local" : "profiles",
				c->cluster ? "profiles" : NULL};
	int rc = 0;
	for (int i = 0; !rc && i < 2 && names[i]; i++) {
		struct pd_buf resp;
		pd_buf_init(&resp, 0);
		rc = run_at(c, node, &resp, err,
			    "SELECT count() FROM system.columns WHERE database = '%s' AND "
			    "table = '%s' AND name = 'totals' FORMAT RowBinary",
			    c->database, names[i]);
		struct pd_clickhouse_rbr r;
		pd_clickhouse_rbr_init(&r, resp.data, resp.len);
		uint64_t have = pd_clickhouse_rbr_u64(&r);
		if (!rc && r.err)
			rc = pd_err_set(err, PD_ECORRUPT,
					"clickhouse: unexpected answer to the %s.totals query",
					names[i]);
		if (!rc && !have)
			rc = run_at(c, node, NULL, err,
				    "ALTER TABLE %s.%s ADD COLUMN totals Array(Int64)", c->database,
				    names[i]);
		pd_buf_fini(&resp);
	}
	return rc;
}

/* Checks the schema version of node i and records this build's when older. */
static int check_version(struct pd_clickhouse *c, size_t node, struct pd_err *err)
{
	const char *db = c->database;
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = run_at(c, node, &resp, err,
	                "SELECT max(version) FROM %s.schema_version FORMAT RowBinary", db);
	if (!rc) {
		struct pd_clickhouse_rbr r;
		pd_clickhouse_rbr_init(&r, resp.data, resp.len);
		uint32_t have = pd_clickhouse_rbr_u32(&r);
		if (r.err)
			rc =
			    pd_err_set(err, PD_ECORRUPT,
					"clickhouse: unexpected answer to the schema version query");
		else if (have > PD_CLICKHOUSE_SCHEMA_VERSION)
			rc = pd_err_set(err, PD_EINCOMPAT,
					"clickhouse database %s has schema version %u, newer than "
					"this profd's %d: upgrade profd",
					db, have, PD_CLICKHOUSE_SCHEMA_VERSION);
		else if (have < PD_CLICKHOUSE_SCHEMA_VERSION)
			rc = run_at(c, node, NULL, err,
			            "INSERT INTO %s.schema_version VALUES (%d, now())", db,
				 PD_CLICKHOUSE_SCHEMA_VERSION);
	}
	pd_buf_fini(&resp);
	return rc;
}

/* Which node of the cluster node i is: its row of system.clusters marked local,
 * as "host:port". */
static int node_identity(struct pd_clickhouse *c, size_t node, char *out, size_t size,
                         struct pd_err *err)
{
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = run_at(c, node, &resp, err,
	                "SELECT host_name, port FROM system.clusters WHERE cluster = '%s' AND "
	                "is_local FORMAT RowBinary",
	                c->cluster);
	struct pd_clickhouse_rbr r;
	pd_clickhouse_rbr_init(&r, resp.data, resp.len);
	size_t hl = 0;
	const uint8_t *h = rc ? NULL : pd_clickhouse_rbr_string(&r, &hl);
	uint16_t port = (uint16_t)(rc ? 0 : pd_clickhouse_rbr_u8(&r));
	port = (uint16_t)(port | (uint16_t)(rc ? 0 : pd_clickhouse_rbr_u8(&r)) << 8);
	if (!rc && (r.err || hl > 255))
		rc = pd_err_set(
		    err, PD_EINVAL,
		    "clickhouse cluster %s: the ClickHouse at %s does not know the "
		    "cluster or is not one of its nodes (no row of its system.clusters "
		    "for the cluster is local): check remote_servers in its configuration",
		    c->cluster, pd_clickhouse_node_url(c, node));
	if (!rc)
		snprintf(out, size, "%.*s:%u", (int)hl, (const char *)h, (unsigned)port);
	pd_buf_fini(&resp);
	return rc;
}

/* Every node of the cluster, as system.clusters of node 0 lists them, must be
 * one that profd was given: otherwise it has no tables from this profd and
 * retention would not reach it. */
static int check_cluster(struct pd_clickhouse *c, struct pd_err *err)
{
	size_t nn = pd_clickhouse_nnodes(c);
	char(*ids)[280] = calloc(nn, sizeof(*ids));
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = ids ? 0 : pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < nn; i++)
		rc = node_identity(c, i, ids[i], sizeof(ids[i]), err);
	if (!rc)
		rc = run(c, &resp, err,
		         "SELECT host_name, port, shard_num FROM system.clusters WHERE cluster = "
		         "'%s' FORMAT RowBinary",
		         c->cluster);
	struct pd_clickhouse_rbr r;
	pd_clickhouse_rbr_init(&r, resp.data, resp.len);
	size_t seen = 0;
	while (!rc && r.off < r.len) {
		size_t hl;
		const uint8_t *h = pd_clickhouse_rbr_string(&r, &hl);
		unsigned port = pd_clickhouse_rbr_u8(&r);
		port |= (unsigned)pd_clickhouse_rbr_u8(&r) << 8;
		uint32_t shard = pd_clickhouse_rbr_u32(&r);
		if (r.err || hl > 255) {
			rc = pd_err_set(err, PD_ECORRUPT,
			                "clickhouse: unexpected answer from system.clusters");
			break;
		}
		char id[280];
		snprintf(id, sizeof(id), "%.*s:%u", (int)hl, (const char *)h, port);
		seen++;
		size_t k = 0;
		while (k < nn && strcmp(ids[k], id))
			k++;
		if (k == nn)
			rc = pd_err_set(
			    err, PD_EINVAL,
			    "clickhouse cluster %s: node %s (shard %u) is not among the "
			    "ClickHouse URLs profd was given, so profd cannot create its "
			    "tables there nor drop old partitions: list every node's HTTP "
			    "interface in --storage.clickhouse.url and "
			    "--storage.clickhouse.cluster-nodes (docs/scale-out.md)",
			    c->cluster, id, shard);
	}
	if (!rc && !seen)
		rc =
		    pd_err_set(err, PD_EINVAL,
		               "clickhouse cluster %s: the ClickHouse at %s has no such cluster in "
		               "system.clusters (remote_servers of its configuration)",
		               c->cluster, pd_clickhouse_node_url(c, 0));
	pd_buf_fini(&resp);
	free(ids);
	return rc;
}

int pd_clickhouse_schema_create(struct pd_clickhouse *c, struct pd_err *err)
{
	/* the nodes are checked before anything is created on any of them */
	int rc = c->cluster ? check_cluster(c, err) : 0;
	for (size_t i = 0; !rc && i < pd_clickhouse_nnodes(c); i++) {
		if (!(rc = create_tables(c, i, err)) && !(rc = migrate(c, i, err)))
			rc = check_version(c, i, err);
	}
	return rc;
}

/* Drops, on node i, the partitions of samples and profiles (their _local tables
 * with a cluster) of days before cutoff (YYYYMMDD). */
static int drop_at(struct pd_clickhouse *c, size_t node, long cutoff, size_t *dropped,
                   struct pd_err *err)
{
	const char *sfx = c->cluster ? "_local" : "";
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = run_at(c, node, &resp, err,
	                "SELECT DISTINCT table, partition FROM system.parts WHERE database = '%s' "
	                "AND table IN ('samples%s', 'profiles%s') AND active FORMAT RowBinary",
	                c->database, sfx, sfx);
	struct pd_clickhouse_rbr r;
	pd_clickhouse_rbr_init(&r, resp.data, resp.len);
	while (!rc && r.off < r.len) {
		size_t tl, pl;
		const uint8_t *t = pd_clickhouse_rbr_string(&r, &tl);
		const uint8_t *p = pd_clickhouse_rbr_string(&r, &pl);
		if (r.err || pl != 8 || tl > 16) {
			rc = pd_err_set(
			    err, PD_ECORRUPT,
			    "clickhouse retention: unexpected partition \"%.*s\" of table %.*s",
			    (int)pl, (const char *)p, (int)tl, (const char *)t);
			break;
		}
		char part[9];
		memcpy(part, p, 8);
		part[8] = '\0';
		if (strtol(part, NULL, 10) >= cutoff)
			continue;
		rc = run_at(c, node, NULL, err, "ALTER TABLE %s.%.*s DROP PARTITION %s",
		            c->database, (int)tl, (const char *)t, part);
		if (!rc && dropped)
			(*dropped)++;
	}
	pd_buf_fini(&resp);
	return rc;
}

int pd_clickhouse_drop_before(struct pd_clickhouse *c, int64_t before_ms, size_t *dropped,
			      struct pd_err *err)
{
	if (dropped)
		*dropped = 0;
	/* the UTC day of before_ms as YYYYMMDD: partitions of earlier days go */
	time_t secs = (time_t)(before_ms / 1000 - (before_ms % 1000 < 0));
	struct tm tm;
	if (!gmtime_r(&secs, &tm))
		return pd_err_set(err, PD_EINVAL, "clickhouse retention: time %lld out of range",
				  (long long)before_ms);
	long cutoff = (long)(tm.tm_year + 1900) * 10000 + (tm.tm_mon + 1) * 100 + tm.tm_mday;
	int rc = 0;
	for (size_t i = 0; !rc && i < pd_clickhouse_nnodes(c); i++)
		rc = drop_at(c, i, cutoff, dropped, err);
	return rc;
}
