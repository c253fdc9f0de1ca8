/* status.c: the server's view of itself, in Prometheus's shapes:
 * /api/v1/targets (active and dropped scrape targets, plus profileType),
 * /api/v1/status/config (the rendered configuration), /api/v1/status/flags,
 * /api/v1/status/tsdb (where profiles are kept, head statistics, blocks or
 * ClickHouse's spool, and the top cardinalities of the head's series) and
 * /api/v1/status/buildinfo. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api_int.h"
#include "profd/config.h"
#include "profd/scrape.h"

/* ---- targets ------------------------------------------------------------------ */

static const char *nz(const char *s)
{
	return s ? s : "";
}

/* Prometheus's globalUrl: the scrape URL with a loopback host replaced by this
 * machine's name, so that it works from elsewhere. */
static void global_url(struct api_resp *w, const char *url)
{
	const char *hs = strstr(url, "://");
	if (!hs) {
		jstr(w, url);
		return;
	}
	hs += 3;
	const char *he;
	if (*hs == '[') {
		he = strchr(hs, ']');
		he = he ? he + 1 : hs + strlen(hs);
	} else {
		he = hs + strcspn(hs, ":/?#");
	}
	size_t hl = (size_t)(he - hs);
	int loop = (hl == 9 && strncasecmp(hs, "localhost", 9) == 0) ||
	           (hl >= 4 && strncmp(hs, "127.", 4) == 0) ||
	           (hl == 5 && strncmp(hs, "[::1]", 5) == 0);
	char host[256];
	if (!loop || gethostname(host, sizeof(host)) != 0) {
		jstr(w, url);
		return;
	}
	host[sizeof(host) - 1] = '\0';
	size_t n = strlen(url) + strlen(host) + 1;
	char *u = malloc(n);
	if (!u) {
		w->berr = PD_ENOMEM;
		return;
	}
	snprintf(u, n, "%.*s%s%s", (int)(hs - url), url, host, he);
	jstr(w, u);
	free(u);
}

static void target_json(struct api_resp *w, const struct pd_scrape_target_status *t)
{
	char buf[64];
	jput(w, "{\"discoveredLabels\":");
	jlabels(w, t->discovered);
	jput(w, ",\"labels\":");
	jlabels(w, t->labels);
	jput(w, ",\"scrapePool\":");
	jstr(w, t->pool);
	jput(w, ",\"scrapeUrl\":");
	jstr(w, t->url);
	jput(w, ",\"globalUrl\":");
	global_url(w, t->url ? t->url : "");
	jput(w, ",\"lastError\":");
	jstr(w, t->last_error);
	jput(w, ",\"lastScrape\":");
	if (t->last_scrape_ms)
		pd_time_format(t->last_scrape_ms, buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "0001-01-01T00:00:00Z"); /* Go's zero time */
	jstr(w, buf);
	jput(w, ",\"lastScrapeDuration\":");
	jdbl(w, (double)t->last_duration_us / 1e6);
	jput(w, ",\"health\":");
	jput(w, t->health == PD_SCRAPE_UP     ? "\"up\""
	        : t->health == PD_SCRAPE_DOWN ? "\"down\""
	                                      : "\"unknown\"");
	jput(w, ",\"scrapeInterval\":");
	pd_config_format_duration(t->interval_ms, buf, sizeof(buf));
	jstr(w, buf);
	jput(w, ",\"scrapeTimeout\":");
	pd_config_format_duration(t->timeout_ms, buf, sizeof(buf));
	jstr(w, buf);
	jput(w, ",\"profileType\":");
	jstr(w, t->profile_type);
	jput(w, "}");
}

void api_targets(struct api_req *r, struct api_resp *w)
{
	struct pd_scrape_target_status *ts = NULL;
	size_t n = 0;
	struct pd_err err = {0};
	const char *state = api_param(r, "state");
	const char *pool = api_param(r, "scrapePool");
	int active = 1, dropped = 1;
	if (state && *state && strcasecmp(state, "any") != 0) {
		if (strcasecmp(state, "active") == 0)
			dropped = 0;
		else if (strcasecmp(state, "dropped") == 0)
			active = 0;
		else {
			api_bad_param(w, "state",
			              "unknown state \"%s\": use active, dropped or any", state);
			return;
		}
	}
	if (pool && !*pool)
		pool = NULL;
	if (r->srv->o.scrape) {
		int rc = pd_scrape_manager_targets(r->srv->o.scrape, dropped, &ts, &n, &err);
		if (rc) {
			api_internal(w, "listing targets failed", rc, &err);
			return;
		}
	}
	jput(w, "{\"activeTargets\":[");
	size_t k = 0;
	for (size_t i = 0; active && i < n; i++) {
		if (!ts[i].labels || (pool && strcmp(pool, nz(ts[i].pool)) != 0))
			continue;
		if (k++)
			jput(w, ",");
		target_json(w, &ts[i]);
	}
	jput(w, "],\"droppedTargets\":[");
	k = 0;
	for (size_t i = 0; dropped && i < n; i++) {
		if (ts[i].labels || (pool && strcmp(pool, nz(ts[i].pool)) != 0))
			continue;
		if (k++)
			jput(w, ",");
		jput(w, "{\"discoveredLabels\":");
		jlabels(w, ts[i].discovered);
		jput(w, ",\"scrapePool\":");
		jstr(w, ts[i].pool);
		jput(w, ",\"profileType\":");
		jstr(w, ts[i].profile_type);
		jput(w, "}");
	}
	/* droppedTargetCounts: per pool, as newer Prometheus releases add */
	jput(w, "],\"droppedTargetCounts\":{");
	k = 0;
	for (size_t i = 0; dropped && i < n; i++) {
		if (ts[i].labels || (pool && strcmp(pool, nz(ts[i].pool)) != 0))
			continue;
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !ts[j].labels && strcmp(nz(ts[j].pool), nz(ts[i].pool)) == 0;
		if (seen)
			continue;
		size_t c = 0;
		for (size_t j = i; j < n; j++)
			c += !ts[j].labels && strcmp(nz(ts[j].pool), nz(ts[i].pool)) == 0;
		if (k++)
			jput(w, ",");
		jstr(w, nz(ts[i].pool));
		jput(w, ":");
		ju64(w, c);
	}
	jput(w, "}}");
	pd_scrape_target_status_free(ts, n);
}

/* ---- status --------------------------------------------------------------------- */

void api_status_config(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	char *yaml = NULL;
	if (s->o.config_yaml) {
		yaml = s->o.config_yaml(s->o.config_ctx);
		if (!yaml) {
			api_error(w, 500, "internal", "rendering the configuration failed");
			return;
		}
	}
	jput(w, "{\"yaml\":");
	jstr(w, yaml ? yaml : "");
	jput(w, "}");
	free(yaml);
}

void api_status_flags(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	jput(w, "{");
	for (size_t i = 0; i < s->nflags; i++) {
		if (i)
			jput(w, ",");
		jstr(w, s->flag_names[i]);
		jput(w, ":");
		/* a URL's password (--storage.clickhouse.url=http://u:p@h/) shows as xxxxx */
		char *v = pd_redact_urls_dup(s->flag_values[i]);
		if (!v) {
			api_error(w, 500, "internal", "building the response failed: out of memory");
			return;
		}
		jstr(w, v);
		free(v);
	}
	jput(w, "}");
}

void api_status_buildinfo(struct api_req *r, struct api_resp *w)
{
	jput(w, "{\"version\":");
	jstr(w, r->srv->version);
	jput(w, ",\"revision\":\"\",\"branch\":\"\",\"buildUser\":\"\",\"buildDate\":");
	jstr(w, __DATE__ " " __TIME__);
	jput(w, ",\"goVersion\":\"\",\"compiler\":");
	jstr(w, API_COMPILER);
	jput(w, "}");
}

/* A name (or name=value pair) and its count, for the top-N lists. */
struct count {
	char *name;
	uint64_t n;
};

static int count_cmp(const void *a, const void *b)
{
	const struct count *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Counts equal strings of a sorted array into a struct count array. */
static struct count *count_sorted(char **v, size_t n, size_t *out_n)
{
	struct count *c = calloc(n + 1, sizeof(*c));
	size_t k = 0;
	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (k && strcmp(c[k - 1].name, v[i]) == 0)
			c[k - 1].n++;
		else
			c[k++] = (struct count){v[i], 1};
	}
	*out_n = k;
	return c;
}

static void write_top(struct api_resp *w, const char *key, struct count *c, size_t n, size_t limit)
{
	qsort(c, n, sizeof(*c), count_cmp);
	jput(w, ",\"");
	jput(w, key);
	jput(w, "\":[");
	for (size_t i = 0; i < n && i < limit; i++) {
		jput(w, i ? ",{\"name\":" : "{\"name\":");
		jstr(w, c[i].name);
		jput(w, ",\"value\":");
		ju64(w, c[i].n);
		jput(w, "}");
	}
	jput(w, "]");
}

/* "name\0value" strings: by name, then value. */
static int nv_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int c = strcmp(x, y);
	return c ? c : strcmp(x + strlen(x) + 1, y + strlen(y) + 1);
}

static int any_value(const void *ctx, const char *v)
{
	(void)ctx;
	return v[0] != '\0';
}

/* ClickHouse mode: the time the cardinality lists look back over, 2 hours (a
 * local head's usual span). */
#define API_CH_CARDINALITY_MS ((int64_t)2 * 3600 * 1000)

/* The head's series: seriesCountByMetricName, labelValueCountByLabelName and
 * seriesCountByLabelValuePair, as Prometheus computes them over its head. In
 * ClickHouse mode a listing ClickHouse does not answer leaves the lists empty
 * with a warning naming its reason, so the rest of the status (the spool) still
 * shows while ClickHouse is down. */

static void head_cardinality(struct api_req *r, struct api_resp *w, const struct pd_storage_stats *st,
                             size_t limit)
{
	struct pd_storage_result *res = NULL;
	struct pd_err err = {0};
	char **names = NULL, **pairs = NULL, **nv = NULL;
	size_t nnames = 0, npairs = 0, nnv = 0;
	struct count *c1 = NULL, *c2 = NULL, *c3 = NULL;
	size_t n1 = 0, n2 = 0, n3 = 0;
	/* ClickHouse mode: the spool's head empties as ClickHouse takes it, so the
	 * lists count the series with a profile in the last API_CH_CARDINALITY_MS */
	int64_t mint = st->head_mint, maxt = st->head_maxt;
	int have = st->head_series && mint <= maxt;
	if (st->remote) {
		maxt = api_now_ms();
		mint = maxt - API_CH_CARDINALITY_MS;
		have = 1;
	}
	if (have) {
		struct pd_storage_matcher m = {PD_LABELS_METRIC_NAME, any_value, NULL};
		int rc = pd_storage_select(r->srv->o.db, &m, 1, mint, maxt, 0, &res, &err);
		if (rc && st->remote) {
			int n = 0;
			const char *why = api_ch_reason(&err, &n);
			if (!why) {
				why = pd_strerror(rc);
				n = (int)strlen(why);
			}
			api_warn(w, "the series lists are empty: ClickHouse did not answer: %.*s",
			         n, why);
			res = NULL;
		} else if (rc) {
			api_internal(w, "listing the head's series failed", rc, &err);
			return;
		}
	}
	size_t total = 0;
	for (size_t i = 0; res && i < res->nseries; i++)
		total += res->series[i].nlabels;
	names = calloc(res ? res->nseries + 1 : 1, sizeof(char *));
	pairs = calloc(total + 1, sizeof(char *));
	nv = calloc(total + 1, sizeof(char *));
	if (!names || !pairs || !nv) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	for (size_t i = 0; res && i < res->nseries; i++) {
		const struct pd_storage_series *se = &res->series[i];
		for (size_t k = 0; k < se->nlabels; k++) {
			const struct pd_storage_label *l = &se->labels[k];
			if (strcmp(l->name, PD_LABELS_METRIC_NAME) == 0)
				names[nnames++] = (char *)l->value;
			size_t len = strlen(l->name) + strlen(l->value) + 2;
			char *p = malloc(len);
			if (!p) {
				api_error(w, 500, "internal", "out of memory");
				goto out;
			}
			snprintf(p, len, "%s=%s", l->name, l->value);
			pairs[npairs++] = p;
			/* name NUL value: sorts by name, then value */
			char *q = malloc(len);
			if (!q) {
				api_error(w, 500, "internal", "out of memory");
				goto out;
			}
			memcpy(q, l->name, strlen(l->name) + 1);
			memcpy(q + strlen(l->name) + 1, l->value, strlen(l->value) + 1);
			nv[nnv++] = q;
		}
	}
	qsort(names, nnames, sizeof(*names), str_cmp);
	qsort(pairs, npairs, sizeof(*pairs), str_cmp);
	/* distinct (name, value) pairs, then count them per name */
	qsort(nv, nnv, sizeof(*nv), nv_cmp);
	char **distinct_names = calloc(nnv + 1, sizeof(char *));
	if (!distinct_names) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	size_t nd = 0;
	for (size_t i = 0; i < nnv; i++) {
		if (i && nv_cmp(&nv[i - 1], &nv[i]) == 0)
			continue;
		distinct_names[nd++] = nv[i]; /* compares as the name only */
	}
	c1 = count_sorted(names, nnames, &n1);
	c2 = count_sorted(distinct_names, nd, &n2);
	c3 = count_sorted(pairs, npairs, &n3);
	free(distinct_names);
	if (!c1 || !c2 || !c3) {
		api_error(w, 500, "internal", "out of memory");
		goto out;
	}
	write_top(w, "seriesCountByMetricName", c1, n1, limit);
	write_top(w, "labelValueCountByLabelName", c2, n2, limit);
	write_top(w, "seriesCountByLabelValuePair", c3, n3, limit);
out:
	free(c1);
	free(c2);
	free(c3);
	free(names);
	for (size_t i = 0; i < npairs; i++)
		free(pairs[i]);
	free(pairs);
	for (size_t i = 0; i < nnv; i++)
		free(nv[i]);
	free(nv);
	pd_storage_result_destroy(res);
}

/* ClickHouse mode: the database the profiles are kept in and the spool of what
 * ClickHouse has not taken yet, as the profd_clickhouse_* metrics count it. */
static void clickhouse_json(struct api_req *r, struct api_resp *w, const struct pd_storage_stats *st)
{
	(void)r;
	jput(w, ",\"clickhouse\":{\"database\":");
	jstr(w, st->remote_database);
	jput(w, ",\"cluster\":");
	jstr(w, st->remote_cluster);
	jput(w, ",\"sentProfiles\":");
	ju64(w, st->remote_sent_profiles);
	jput(w, ",\"spoolProfiles\":");
	ju64(w, st->remote_spool_profiles);
	jput(w, ",\"spoolBytes\":");
	ju64(w, st->remote_spool_bytes);
	jput(w, ",\"spoolMaxBytes\":");
	ju64(w, st->remote_spool_max);
	jput(w, ",\"flushes\":");
	ju64(w, st->remote_flushes);
	jput(w, ",\"flushFailures\":");
	ju64(w, st->remote_flush_failures);
	jput(w, ",\"lastFlush\":");
	ji64(w, st->remote_last_flush_ms);
	jput(w, "}");
}

void api_status_tsdb(struct api_req *r, struct api_resp *w)
{
	struct pd_storage_stats st;
	struct pd_storage_block_info *b = NULL;
	size_t nb = 0;
	struct pd_err err = {0};
	uint64_t limit;
	if (api_uint_param(r, w, "limit", 10, &limit))
		return;
	if (limit == 0)
		limit = 10;
	pd_storage_stats(r->srv->o.db, &st);
	int rc = pd_storage_blocks(r->srv->o.db, &b, &nb, &err);
	if (rc) {
		api_internal(w, "listing blocks failed", rc, &err);
		return;
	}
	int empty = !st.head_series || st.head_mint > st.head_maxt;
	jput(w, "{\"storage\":");
	jstr(w, pd_storage_kind(r->srv->o.db)); /* "local", "clickhouse" */
	if (st.remote)
		clickhouse_json(r, w, &st);
	jput(w, ",\"headStats\":{\"numSeries\":");
	ju64(w, st.head_series);
	jput(w, ",\"numSamples\":");
	ju64(w, st.head_samples);
	jput(w, ",\"chunkCount\":");
	ju64(w, st.head_chunks);
	jput(w, ",\"minTime\":");
	ji64(w, empty ? 0 : st.head_mint);
	jput(w, ",\"maxTime\":");
	ji64(w, empty ? 0 : st.head_maxt);
	jput(w, "},\"walBytes\":");
	ju64(w, st.wal_bytes);
	jput(w, ",\"blockBytes\":");
	ju64(w, st.block_bytes);
	jput(w, ",\"blocks\":[");
	for (size_t i = 0; i < nb; i++) {
		jput(w, i ? ",{\"ulid\":" : "{\"ulid\":");
		jstr(w, b[i].ulid);
		jput(w, ",\"minTime\":");
		ji64(w, b[i].mint);
		jput(w, ",\"maxTime\":");
		ji64(w, b[i].maxt);
		jput(w, ",\"level\":");
		ji64(w, b[i].level);
		if (b[i].idle)
			jput(w, ",\"idleSeries\":true");
		jput(w, ",\"numSeries\":");
		ju64(w, b[i].series);
		jput(w, ",\"numSamples\":");
		ju64(w, b[i].samples);
		jput(w, ",\"numChunks\":");
		ju64(w, b[i].chunks);
		jput(w, ",\"timestampBytes\":");
		ju64(w, b[i].ts_bytes);
		jput(w, ",\"profileBytes\":");
		ju64(w, b[i].value_bytes);
		jput(w, ",\"sizeBytes\":");
		ju64(w, b[i].size);
		jput(w, "}");
	}
	free(b);
	jput(w, "]");
	head_cardinality(r, w, &st, (size_t)limit);
	jput(w, "}");
}
