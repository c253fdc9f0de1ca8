/* schema.c: the tables profd keeps in ClickHouse (docs/format/clickhouse.md),
 * created idempotently, the schema version they are at, and retention by dropping
 * daily partitions. Only SQL that ClickHouse 18.16 and current releases both
 * accept: MergeTree-family engines with ORDER BY / PARTITION BY, Array columns, no
 * Map, LowCardinality or CODEC. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clickhouse_int.h"

#define PARTITION "PARTITION BY toYYYYMMDD(toDateTime(intDiv(ts, 1000)))"

/* %s is the database; each statement is run as it stands. */
static const char *const tables[] = {
	"CREATE TABLE IF NOT EXISTS %s.schema_version (version UInt32, applied DateTime) "
	"ENGINE = ReplacingMergeTree ORDER BY version",
	"CREATE TABLE IF NOT EXISTS %s.series (series_id UInt64, names Array(String), "
	"values Array(String)) ENGINE = ReplacingMergeTree ORDER BY series_id",
	"CREATE TABLE IF NOT EXISTS %s.strings (id UInt64, s String) "
	"ENGINE = ReplacingMergeTree ORDER BY id",
	"CREATE TABLE IF NOT EXISTS %s.functions (id UInt64, name UInt64, system_name UInt64, "
	"filename UInt64, start_line Int64) ENGINE = ReplacingMergeTree ORDER BY id",
	"CREATE TABLE IF NOT EXISTS %s.mappings (id UInt64, memory_start UInt64, "
	"memory_limit UInt64, file_offset UInt64, filename UInt64, build_id UInt64, "
	"has_functions UInt8, has_filenames UInt8, has_line_numbers UInt8, "
	"has_inline_frames UInt8) ENGINE = ReplacingMergeTree ORDER BY id",
	"CREATE TABLE IF NOT EXISTS %s.locations (id UInt64, mapping_id UInt64, address UInt64, "
	"is_folded UInt8, line_function Array(UInt64), line_line Array(Int64), "
	"line_column Array(Int64)) ENGINE = ReplacingMergeTree ORDER BY id",
	"CREATE TABLE IF NOT EXISTS %s.stacks (id UInt64, location_ids Array(UInt64)) "
	"ENGINE = ReplacingMergeTree ORDER BY id",
	"CREATE TABLE IF NOT EXISTS %s.profiles (series_id UInt64, ts Int64, time_nanos Int64, "
	"duration_nanos Int64, period Int64, has_period_type UInt8, period_type UInt64, "
	"period_unit UInt64, sample_types Array(UInt64), sample_units Array(UInt64), "
	"default_sample_type UInt64, drop_frames UInt64, keep_frames UInt64, doc_url UInt64, "
	"comments Array(UInt64), mapping_ids Array(UInt64), mapping_hashes Array(UInt64), "
	"location_ids Array(UInt64), location_hashes Array(UInt64), function_ids Array(UInt64), "
	"function_hashes Array(UInt64), string_ids Array(UInt64), totals Array(Int64)) "
	"ENGINE = ReplacingMergeTree " PARTITION " ORDER BY (series_id, ts)",
	"CREATE TABLE IF NOT EXISTS %s.samples (series_id UInt64, ts Int64, ordinal UInt32, "
	"stack_id UInt64, values Array(Int64), label_key Array(UInt64), label_str Array(UInt64), "
	"label_num Array(Int64), label_unit Array(UInt64)) "
	"ENGINE = ReplacingMergeTree " PARTITION " ORDER BY (series_id, ts, ordinal)",
};

static int run(struct pd_clickhouse *c, struct pd_buf *resp, struct pd_err *err, const char *fmt,
	       ...) __attribute__((format(printf, 4, 5)));

static int run(struct pd_clickhouse *c, struct pd_buf *resp, struct pd_err *err, const char *fmt,
	       ...)
{
	char sql[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	return pd_clickhouse_exec(c, sql, NULL, 0, resp, err);
}

/* Version 1 to 2: profiles gains totals (empty in older rows, whose totals the
 * reader sums from samples). Done when the column is missing, whatever the
 * recorded version says, so that an interrupted migration completes. */
static int migrate(struct pd_clickhouse *c, struct pd_err *err)
{
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = run(c, &resp, err,
		     "SELECT count() FROM system.columns WHERE database = '%s' AND "
		     "table = 'profiles' AND name = 'totals' FORMAT RowBinary",
		     c->database);
	struct pd_clickhouse_rbr r;
	pd_clickhouse_rbr_init(&r, resp.data, resp.len);
	uint64_t have = pd_clickhouse_rbr_u64(&r);
	if (!rc && r.err)
		rc = pd_err_set(err, PD_ECORRUPT,
				"clickhouse: unexpected answer to the profiles.totals query");
	if (!rc && !have)
		rc = run(c, NULL, err, "ALTER TABLE %s.profiles ADD COLUMN totals Array(Int64)",
			 c->database);
	pd_buf_fini(&resp);
	return rc;
}

int pd_clickhouse_schema_create(struct pd_clickhouse *c, struct pd_err *err)
{
	const char *db = c->database;
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = run(c, NULL, err, "CREATE DATABASE IF NOT EXISTS %s", db);
	for (size_t i = 0; !rc && i < sizeof(tables) / sizeof(tables[0]); i++) {
		char sql[2048];
		snprintf(sql, sizeof(sql), tables[i], db);
		rc = pd_clickhouse_exec(c, sql, NULL, 0, NULL, err);
	}
	if (!rc)
		rc = migrate(c, err);
	if (!rc)
		rc = run(c, &resp, err, "SELECT max(version) FROM %s.schema_version FORMAT RowBinary",
			 db);
	if (!rc) {
		struct pd_clickhouse_rbr r;
		pd_clickhouse_rbr_init(&r, resp.data, resp.len);
		uint32_t have = pd_clickhouse_rbr_u32(&r);
		if (r.err)
			rc = pd_err_set(err, PD_ECORRUPT,
					"clickhouse: unexpected answer to the schema version query");
		else if (have > PD_CLICKHOUSE_SCHEMA_VERSION)
			rc = pd_err_set(err, PD_EINCOMPAT,
					"clickhouse database %s has schema version %u, newer than "
					"this profd's %d: upgrade profd",
					db, have, PD_CLICKHOUSE_SCHEMA_VERSION);
		else if (have < PD_CLICKHOUSE_SCHEMA_VERSION)
			rc = run(c, NULL, err, "INSERT INTO %s.schema_version VALUES (%d, now())", db,
				 PD_CLICKHOUSE_SCHEMA_VERSION);
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
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = run(c, &resp, err,
		     "SELECT DISTINCT table, partition FROM system.parts WHERE database = '%s' "
		     "AND table IN ('samples', 'profiles') AND active FORMAT RowBinary",
		     c->database);
	struct pd_clickhouse_rbr r;
	pd_clickhouse_rbr_init(&r, resp.data, resp.len);
	while (!rc && r.off < r.len) {
		size_t tl, pl;
		const uint8_t *t = pd_clickhouse_rbr_string(&r, &tl);
		const uint8_t *p = pd_clickhouse_rbr_string(&r, &pl);
		if (r.err || pl != 8 || tl > 16) {
			rc = pd_err_set(err, PD_ECORRUPT,
					"clickhouse retention: unexpected partition \"%.*s\" of table %.*s",
					(int)pl, (const char *)p, (int)tl, (const char *)t);
			break;
		}
		char part[9];
		memcpy(part, p, 8);
		part[8] = '\0';
		if (strtol(part, NULL, 10) >= cutoff)
			continue;
		rc = run(c, NULL, err, "ALTER TABLE %s.%.*s DROP PARTITION %s", c->database, (int)tl,
			 (const char *)t, part);
		if (!rc && dropped)
			(*dropped)++;
	}
	pd_buf_fini(&resp);
	return rc;
}
