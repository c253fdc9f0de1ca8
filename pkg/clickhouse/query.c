/* query.c: queries over many series at once, for the store's read side: the
 * (series, time) of every profile in a range, the series with a profile in a
 * range, and each profile's totals per sample type (profiles.totals, or summed
 * from samples by ClickHouse for rows written before schema version 2). Series
 * are named by id; long lists of ids are sent in several statements of at most
 * PD_CLICKHOUSE_QUERY_MAX_IDS each. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"

static int oom(struct pd_err *err)
{
	return pd_err_set(err, PD_ENOMEM, "out of memory");
}

static int malformed(struct pd_err *err, const char *what)
{
	return pd_err_set(err, PD_ECORRUPT, "clickhouse: malformed answer reading %s", what);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* "series_id IN (...) AND " for ids[0..n), or "" when ids is NULL; then the time
 * range; into sql, NUL-terminated. */
static int where_ids(struct pd_buf *sql, const uint64_t *ids, size_t n, int64_t from_ms,
                     int64_t to_ms)
{
	int rc = 0;
	if (ids) {
		rc = pd_buf_printf(sql, "series_id IN (");
		for (size_t i = 0; !rc && i < n; i++)
			rc = pd_buf_printf(sql, "%s%" PRIu64, i ? "," : "", ids[i]);
		if (!rc)
			rc = pd_buf_printf(sql, ") AND ");
	}
	if (!rc)
		rc = pd_buf_printf(sql, "ts >= %" PRId64 " AND ts <= %" PRId64, from_ms, to_ms);
	return rc;
}

/* A sorted copy of ids (NULL stays NULL: every series, one batch). */
static int sorted_ids(const uint64_t *ids, size_t n, uint64_t **out, size_t *batches,
                      struct pd_err *err)
{
	*out = NULL;
	*batches = 1;
	if (!ids)
		return 0;
	if (!n) {
		*batches = 0;
		return 0;
	}
	uint64_t *v = malloc(n * sizeof(*v));
	if (!v)
		return oom(err);
	memcpy(v, ids, n * sizeof(*v));
	qsort(v, n, sizeof(*v), u64_cmp);
	*out = v;
	*batches = (n + PD_CLICKHOUSE_QUERY_MAX_IDS - 1) / PD_CLICKHOUSE_QUERY_MAX_IDS;
	return 0;
}

/* Runs "<head> WHERE <ids and range> <tail>" for batch b of ids into resp
 * (replaced). */
static int run_batch(struct pd_clickhouse *c, const char *head, const char *tail,
                     const uint64_t *ids, size_t n, size_t b, int64_t from_ms, int64_t to_ms,
                     struct pd_buf *resp, struct pd_err *err)
{
	struct pd_buf sql;
	pd_buf_init(&sql, 0);
	size_t lo = b * PD_CLICKHOUSE_QUERY_MAX_IDS;
	size_t cnt = n - lo < PD_CLICKHOUSE_QUERY_MAX_IDS ? n - lo : PD_CLICKHOUSE_QUERY_MAX_IDS;
	int rc = pd_buf_printf(&sql, "%s WHERE ", head);
	if (!rc)
		rc = where_ids(&sql, ids ? ids + lo : NULL, cnt, from_ms, to_ms);
	if (!rc)
		rc = pd_buf_printf(&sql, " %s", tail);
	if (!rc)
		rc = pd_buf_append(&sql, "", 1);
	resp->len = 0;
	if (rc)
		rc = oom(err);
	else
		rc = ch_select(c, (const char *)sql.data, resp, err);
	pd_buf_fini(&sql);
	return rc;
}

int pd_clickhouse_points(struct pd_clickhouse *c, const uint64_t *ids, size_t n, int64_t from_ms,
                         int64_t to_ms, struct pd_clickhouse_point **out, size_t *nout,
                         struct pd_err *err)
{
	*out = NULL;
	*nout = 0;
	char head[160];
	snprintf(head, sizeof(head), "SELECT DISTINCT series_id, ts FROM %s.profiles", c->database);
	uint64_t *sid = NULL;
	size_t batches, nv = 0, cap = 0;
	struct pd_clickhouse_point *v = NULL;
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = sorted_ids(ids, n, &sid, &batches, err);
	for (size_t b = 0; !rc && b < batches; b++) {
		if ((rc = run_batch(c, head, "ORDER BY series_id, ts FORMAT RowBinary", sid, n, b,
		                    from_ms, to_ms, &resp, err)))
			break;
		if (resp.len % 16) {
			rc = malformed(err, "profile times");
			break;
		}
		size_t k = resp.len / 16;
		if (nv + k > cap) {
			size_t nc = cap ? cap : 64;
			while (nc < nv + k)
				nc *= 2;
			struct pd_clickhouse_point *nvp = realloc(v, nc * sizeof(*v));
			if (!nvp) {
				rc = oom(err);
				break;
			}
			v = nvp;
			cap = nc;
		}
		struct pd_clickhouse_rbr r;
		pd_clickhouse_rbr_init(&r, resp.data, resp.len);
		for (size_t i = 0; i < k; i++) {
			v[nv].series_id = pd_clickhouse_rbr_u64(&r);
			v[nv++].ts = pd_clickhouse_rbr_i64(&r);
		}
	}
	pd_buf_fini(&resp);
	free(sid);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = nv;
	return 0;
}

int pd_clickhouse_series_in_range(struct pd_clickhouse *c, int64_t from_ms, int64_t to_ms,
                                  uint64_t **out, size_t *n, struct pd_err *err)
{
	*out = NULL;
	*n = 0;
	char head[160];
	snprintf(head, sizeof(head), "SELECT DISTINCT series_id FROM %s.profiles", c->database);
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = run_batch(c, head, "ORDER BY series_id FORMAT RowBinary", NULL, 0, 0, from_ms,
	                   to_ms, &resp, err);
	if (!rc && resp.len % 8)
		rc = malformed(err, "series ids");
	uint64_t *v = NULL;
	size_t k = resp.len / 8;
	if (!rc && !(v = malloc((k ? k : 1) * sizeof(*v))))
		rc = oom(err);
	if (!rc) {
		struct pd_clickhouse_rbr r;
		pd_clickhouse_rbr_init(&r, resp.data, resp.len);
		for (size_t i = 0; i < k; i++)
			v[i] = pd_clickhouse_rbr_u64(&r);
		*out = v;
		*n = k;
	}
	pd_buf_fini(&resp);
	return rc;
}

/* ---- totals ------------------------------------------------------------------ */

void pd_clickhouse_totals_destroy(struct pd_clickhouse_totals *t)
{
	if (!t)
		return;
	free(t->rows);
	pd_arena_destroy(t->arena);
	free(t);
}

/* The row of (series, ts) in t's sorted rows, or NULL. */
static struct pd_clickhouse_total *find_row(struct pd_clickhouse_totals *t, uint64_t series,
                                            int64_t ts)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pd_clickhouse_total *r = &t->rows[mid];
		if (r->series_id < series || (r->series_id == series && r->ts < ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->n && t->rows[lo].series_id == series && t->rows[lo].ts == ts)
		return &t->rows[lo];
	return NULL;
}


int ch_totals_rows(struct pd_clickhouse_totals *t, const void *data, size_t len,
                   struct ch_tid **tids, size_t *cap, struct pd_err *err)
{
	struct pd_clickhouse_rbr r;
	pd_clickhouse_rbr_init(&r, data, len);
	while (!r.err && r.off < r.len) {
		if (t->n == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			struct pd_clickhouse_total *nr = realloc(t->rows, nc * sizeof(*nr));
			struct ch_tid *nt = nr ? realloc(*tids, nc * sizeof(**tids)) : NULL;
			if (nr)
				t->rows = nr;
			if (!nr || !nt)
				return oom(err);
			*tids = nt;
			*cap = nc;
		}
		struct pd_clickhouse_total *row = &t->rows[t->n];
		memset(row, 0, sizeof(*row));
		row->series_id = pd_clickhouse_rbr_u64(&r);
		row->ts = pd_clickhouse_rbr_i64(&r);
		row->duration_nanos = pd_clickhouse_rbr_i64(&r);
		size_t nt = pd_clickhouse_rbr_count(&r, 8);
		uint64_t *sid = pd_arena_calloc(t->arena, 2 * nt + 1, sizeof(uint64_t));
		row->types = pd_arena_calloc(t->arena, nt + 1, sizeof(char *));
		row->units = pd_arena_calloc(t->arena, nt + 1, sizeof(char *));
		row->totals = pd_arena_calloc(t->arena, nt + 1, sizeof(int64_t));
		if (!sid || !row->types || !row->units || !row->totals)
			return oom(err);
		for (size_t k = 0; k < nt; k++)
			sid[2 * k] = pd_clickhouse_rbr_u64(&r);
		size_t nu = pd_clickhouse_rbr_count(&r, 8);
		if (nu != nt)
			r.err = PD_ECORRUPT;
		for (size_t k = 0; k < nu && !r.err; k++)
			sid[2 * k + 1] = pd_clickhouse_rbr_u64(&r);
		size_t ntot = pd_clickhouse_rbr_count(&r, 8);
		for (size_t k = 0; k < ntot; k++) {
			int64_t v = pd_clickhouse_rbr_i64(&r);
			if (k < nt)
				row->totals[k] = v;
		}
		row->ntypes = nt;
		/* totals not there (schema version 1): summed from samples later */
		(*tids)[t->n] = (struct ch_tid){sid, ntot != nt};
		t->n++;
	}
	return r.err ? malformed(err, "profile totals") : 0;
}

/* The strings of every row's types and units (row i's string ids in sids[i]). */
static int totals_strings(struct pd_clickhouse *c, struct pd_clickhouse_totals *t,
                          const struct ch_tid *sids, struct pd_err *err)
{
	struct pd_u64map ix; /* string id -> index + 1 into strs */
	pd_u64map_init(&ix);
	uint64_t *want = NULL;
	size_t nwant = 0, cap = 0;
	const char **strs = NULL;
	size_t nstr = 0, capstr = 0;
	struct pd_buf sql, resp;
	pd_buf_init(&sql, 0);
	pd_buf_init(&resp, 0);
	int rc = 0;
	uint32_t v;
	for (size_t i = 0; !rc && i < t->n; i++) {
		const uint64_t *sid = sids[i].sid;
		for (size_t k = 0; !rc && k < 2 * t->rows[i].ntypes; k++) {
			if (!sid[k] || pd_u64map_get(&ix, sid[k], &v))
				continue;
			if (nwant == cap) {
				size_t nc = cap ? cap * 2 : 32;
				uint64_t *nw = realloc(want, nc * sizeof(*nw));
				if (!nw) {
					rc = oom(err);
					break;
				}
				want = nw;
				cap = nc;
			}
			want[nwant++] = sid[k];
			if (pd_u64map_put(&ix, sid[k], 0))
				rc = oom(err);
		}
	}
	/* the strings, a batch of ids at a time */
	for (size_t lo = 0; !rc && lo < nwant; lo += PD_CLICKHOUSE_QUERY_MAX_IDS) {
		size_t hi = nwant - lo < PD_CLICKHOUSE_QUERY_MAX_IDS
		                ? nwant
		                : lo + PD_CLICKHOUSE_QUERY_MAX_IDS;
		sql.len = 0;
		rc = pd_buf_printf(&sql, "SELECT id, any(s) FROM %s.strings WHERE id IN (",
		                   c->database);
		for (size_t i = lo; !rc && i < hi; i++)
			rc = pd_buf_printf(&sql, "%s%" PRIu64, i > lo ? "," : "", want[i]);
		if (!rc)
			rc = pd_buf_printf(&sql, ") GROUP BY id FORMAT RowBinary");
		if (!rc)
			rc = pd_buf_append(&sql, "", 1);
		if (rc) {
			rc = oom(err);
			break;
		}
		resp.len = 0;
		if ((rc = ch_select(c, (const char *)sql.data, &resp, err)))
			break;
		struct pd_clickhouse_rbr r;
		pd_clickhouse_rbr_init(&r, resp.data, resp.len);
		while (!rc && !r.err && r.off < r.len) {
			uint64_t id = pd_clickhouse_rbr_u64(&r);
			size_t len;
			const uint8_t *s = pd_clickhouse_rbr_string(&r, &len);
			if (r.err)
				break;
			char *copy = pd_arena_strndup(t->arena, (const char *)s, len);
			if (nstr == capstr) {
				size_t nc = capstr ? capstr * 2 : 32;
				const char **ns = realloc(strs, nc * sizeof(*ns));
				if (!ns) {
					rc = oom(err);
					break;
				}
				strs = ns;
				capstr = nc;
			}
			if (!copy || pd_u64map_put(&ix, id, (uint32_t)nstr + 1)) {
				rc = oom(err);
				break;
			}
			strs[nstr++] = copy;
		}
		if (!rc && r.err)
			rc = malformed(err, "strings");
	}
	for (size_t i = 0; !rc && i < t->n; i++) {
		struct pd_clickhouse_total *row = &t->rows[i];
		const uint64_t *sid = sids[i].sid;
		for (size_t k = 0; !rc && k < 2 * row->ntypes; k++) {
			const char *s = "";
			if (sid[k]) {
				if (!pd_u64map_get(&ix, sid[k], &v) || !v)
					rc = pd_err_set(
					    err, PD_ECORRUPT,
					    "clickhouse: the sample type string %016" PRIx64
					    " of the profile at %" PRId64
					    " is missing from the strings table",
					    sid[k], row->ts);
				else
					s = strs[v - 1];
			}
			if (k % 2)
				row->units[k / 2] = s;
			else
				row->types[k / 2] = s;
		}
	}
	free(want);
	free(strs);
	pd_u64map_fini(&ix);
	pd_buf_fini(&sql);
	pd_buf_fini(&resp);
	return rc;
}

int ch_totals_sums(struct pd_clickhouse_totals *t, const struct ch_tid *tids, const void *data,
                   size_t len, struct pd_err *err)
{
	struct pd_clickhouse_rbr r;
	pd_clickhouse_rbr_init(&r, data, len);
	while (!r.err && r.off < r.len) {
		uint64_t s = pd_clickhouse_rbr_u64(&r);
		int64_t ts = pd_clickhouse_rbr_i64(&r);
		size_t nv = pd_clickhouse_rbr_count(&r, 8);
		struct pd_clickhouse_total *row = find_row(t, s, ts);
		int fill = row && tids[row - t->rows].missing;
		for (size_t k = 0; k < nv; k++) {
			int64_t v = pd_clickhouse_rbr_i64(&r);
			if (fill && k < row->ntypes)
				row->totals[k] = v;
		}
	}
	return r.err ? malformed(err, "totals summed from samples") : 0;
}

/* Totals summed from samples for the rows that lack them. */
static int totals_from_samples(struct pd_clickhouse *c, struct pd_clickhouse_totals *t,
                               const struct ch_tid *sids, struct pd_err *err)
{
	uint64_t *ids = NULL;
	size_t nids = 0;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (size_t i = 0; i < t->n; i++) {
		if (!sids[i].missing)
			continue;
		if (!ids && !(ids = malloc(t->n * sizeof(*ids))))
			return oom(err);
		if (!nids || ids[nids - 1] != t->rows[i].series_id)
			ids[nids++] = t->rows[i].series_id;
		lo = t->rows[i].ts < lo ? t->rows[i].ts : lo;
		hi = t->rows[i].ts > hi ? t->rows[i].ts : hi;
	}
	if (!nids)
		return 0;
	char head[400];
	snprintf(head, sizeof(head),
	         "SELECT series_id, ts, sumForEach(v) FROM (SELECT series_id, ts, ordinal, "
	         "any(values) AS v FROM %s.samples",
	         c->database);
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	size_t batches = (nids + PD_CLICKHOUSE_QUERY_MAX_IDS - 1) / PD_CLICKHOUSE_QUERY_MAX_IDS;
	int rc = 0;
	for (size_t b = 0; !rc && b < batches; b++) {
		if ((rc = run_batch(c, head,
		                    "GROUP BY series_id, ts, ordinal) GROUP BY series_id, ts "
		                    "FORMAT RowBinary",
		                    ids, nids, b, lo, hi, &resp, err)))
			break;
		rc = ch_totals_sums(t, sids, resp.data, resp.len, err);
	}
	pd_buf_fini(&resp);
	free(ids);
	return rc;
}

int pd_clickhouse_totals_read(struct pd_clickhouse *c, const uint64_t *ids, size_t n,
                              int64_t from_ms, int64_t to_ms, struct pd_clickhouse_totals **out,
                              struct pd_err *err)
{
	*out = NULL;
	struct pd_clickhouse_totals *t = calloc(1, sizeof(*t));
	if (!t || !(t->arena = pd_arena_create(0))) {
		free(t);
		return oom(err);
	}
	char head[256];
	snprintf(head, sizeof(head),
	         "SELECT series_id, ts, duration_nanos, sample_types, sample_units, totals FROM "
	         "%s.profiles",
	         c->database);
	uint64_t *sid = NULL;
	struct ch_tid *sids = NULL;
	size_t batches, cap = 0;
	struct pd_buf resp;
	pd_buf_init(&resp, 0);
	int rc = sorted_ids(ids, n, &sid, &batches, err);
	for (size_t b = 0; !rc && b < batches; b++)
		if (!(rc = run_batch(
		          c, head,
		          "ORDER BY series_id, ts LIMIT 1 BY series_id, ts FORMAT RowBinary", sid,
		          n, b, from_ms, to_ms, &resp, err)))
			rc = ch_totals_rows(t, resp.data, resp.len, &sids, &cap, err);
	pd_buf_fini(&resp);
	free(sid);
	if (!rc)
		rc = totals_strings(c, t, sids, err);
	if (!rc)
		rc = totals_from_samples(c, t, sids, err);
	free(sids);
	if (rc) {
		pd_clickhouse_totals_destroy(t);
		return rc;
	}
	*out = t;
	return 0;
}
