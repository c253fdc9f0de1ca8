/* query_report.c: the reports of /api/v1/query on a result: meta, top,
 * flamegraph, tags (the labels on samples, as go tool pprof -tags), proto (the
 * gzip pprof file as a download), and the folded, speedscope, dot and svg
 * reports of export.c and callgraph.c, with the names, granularity and sample
 * index they are read at. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query_int.h"

/* ---- reports ----------------------------------------------------------------- */

static const char *series_name(const struct pd_storage_series *s)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, PD_LABELS_METRIC_NAME) == 0)
			return s->labels[i].value;
	return NULL;
}

/* The request's symbolize words (already checked by api_symbolize) set on the
 * profiles its reports read, each the request's own. */
void api_set_report_names(struct api_req *r, struct api_resp *w, struct pd_pprof_profile *a,
                          struct pd_pprof_profile *b, struct pd_pprof_profile *c,
                          struct pd_pprof_profile *d)
{
	enum pd_pprof_names names = PD_PPROF_NAMES_DEFAULT;
	if (api_report_names(r, w, &names))
		return;
	pd_pprof_set_names(a, names);
	pd_pprof_set_names(b, names);
	pd_pprof_set_names(c, names);
	pd_pprof_set_names(d, names);
	/* granularity: what a node of the reports is, as pprof's -lines ... */
	enum pd_pprof_granularity g = PD_PPROF_GRAN_FUNCTIONS;
	struct pd_err err = {0};
	if (pd_pprof_granularity_parse(api_param(r, "granularity"), &g, &err))
		return; /* checked with the filters, before any work */
	pd_pprof_set_granularity(a, g);
	pd_pprof_set_granularity(b, g);
	pd_pprof_set_granularity(c, g);
	pd_pprof_set_granularity(d, g);
}

static void side_summary(struct api_resp *w, const struct side *sd)
{
	jput(w, "\"profileCount\":");
	ju64(w, sd->nprofiles);
	jput(w, ",\"seriesCount\":");
	ju64(w, sd->nseries);
	jput(w, ",\"minTime\":");
	ji64(w, sd->mint);
	jput(w, ",\"maxTime\":");
	ji64(w, sd->maxt);
	if (!sd->merge) {
		jput(w, ",\"timestamp\":");
		ji64(w, sd->mint);
	}
	jput(w, ",\"series\":[");
	size_t shown = 0;
	for (size_t i = 0; sd->res && i < sd->res->nseries && shown < 100; i++) {
		if (!sd->used[i])
			continue;
		if (shown++)
			jput(w, ",");
		jlabels_tsdb(w, sd->res->series[i].labels, sd->res->series[i].nlabels);
	}
	jput(w, "]");
}

/* A sample type's or unit's name as a JSON string, all its bytes (NULs too). */
void api_jtype(struct api_resp *w, const struct pd_pprof_profile *p, size_t i)
{
	size_t len;
	const char *s = pd_pprof_sample_type_n(p, i, &len);
	jstrn(w, s, len);
}

void api_junit(struct api_resp *w, const struct pd_pprof_profile *p, size_t i)
{
	size_t len;
	const char *s = pd_pprof_sample_unit_n(p, i, &len);
	jstrn(w, s, len);
}

static void report_meta(struct api_resp *w, const struct pd_pprof_profile *p,
                        const struct side *sides, size_t nsides)
{
	int def = pd_pprof_default_sample_index(p);
	jput(w, "{\"sampleTypes\":[");
	for (size_t i = 0; i < pd_pprof_sample_type_count(p); i++) {
		jput(w, i ? ",{\"type\":" : "{\"type\":");
		api_jtype(w, p, i);
		jput(w, ",\"unit\":");
		api_junit(w, p, i);
		jput(w, ",\"total\":");
		ji64(w, pd_pprof_total(p, (int)i));
		if (nsides == 2) {
			/* a diff: each side's own total (the base's samples are negated in it) */
			int64_t bs, cs;
			pd_pprof_diff_sums(p, (int)i, &bs, &cs);
			jput(w, ",\"baseTotal\":");
			ji64(w, (int64_t)(0 - (uint64_t)bs));
			jput(w, ",\"newTotal\":");
			ji64(w, cs);
		}
		if (sides[0].merge && i < sides[0].navg)
			jput(w, sides[0].avg[i] ? ",\"aggregation\":\"avg\"" : ",\"aggregation\":\"sum\"");
		jput(w, "}");
	}
	jput(w, "],\"defaultSampleType\":");
	if (def >= 0)
		api_jtype(w, p, (size_t)def);
	else
		jput(w, "null");
	jput(w, ",\"defaultSampleIndex\":");
	ji64(w, def);
	jput(w, ",\"periodType\":{\"type\":");
	jstr(w, pd_pprof_period_type(p));
	jput(w, ",\"unit\":");
	jstr(w, pd_pprof_period_unit(p));
	jput(w, "},\"period\":");
	ji64(w, pd_pprof_period(p));
	jput(w, ",\"timeNanos\":");
	ji64(w, pd_pprof_time_nanos(p));
	jput(w, ",\"durationNanos\":");
	ji64(w, pd_pprof_duration_nanos(p));
	jput(w, ",\"sampleCount\":");
	ju64(w, pd_pprof_sample_count(p));
	jput(w, ",\"locationCount\":");
	ju64(w, pd_pprof_location_count(p));
	jput(w, ",\"functionCount\":");
	ju64(w, pd_pprof_function_count(p));
	jput(w, ",\"mappingCount\":");
	ju64(w, pd_pprof_mapping_count(p));
	if (sides[0].symbolized) {
		const struct pd_symbolize_result *y = &sides[0].sym;
		jput(w, ",\"symbolization\":{\"locations\":");
		ju64(w, y->locations);
		jput(w, ",\"resolved\":");
		ju64(w, y->resolved);
		jput(w, ",\"unresolved\":");
		ju64(w, y->unresolved);
		jput(w, y->partial ? ",\"partial\":true,\"missing\":" : ",\"partial\":false,\"missing\":");
		jstr(w, y->missing);
		jput(w, "}");
	}
	if (nsides == 1) {
		jput(w, ",");
		side_summary(w, &sides[0]);
	} else {
		size_t np = sides[0].nprofiles + sides[1].nprofiles;
		int64_t mint = sides[0].mint < sides[1].mint ? sides[0].mint : sides[1].mint;
		int64_t maxt = sides[0].maxt > sides[1].maxt ? sides[0].maxt : sides[1].maxt;
		jput(w, ",\"profileCount\":");
		ju64(w, np);
		jput(w, ",\"minTime\":");
		ji64(w, mint);
		jput(w, ",\"maxTime\":");
		ji64(w, maxt);
		jput(w, ",\"a\":{");
		side_summary(w, &sides[0]);
		jput(w, "},\"b\":{");
		side_summary(w, &sides[1]);
		jput(w, "}");
	}
	jput(w, "}");
}

int api_sample_index(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                     int *idx)
{
	struct pd_err err = {0};
	if (pd_pprof_sample_index(p, api_param(r, "sample_index"), idx, &err)) {
		api_bad_param(w, "sample_index", "%s", err.msg);
		return -1;
	}
	return 0;
}

static double pct(int64_t v, int64_t total)
{
	return total ? (double)v * 100.0 / (double)total : 0;
}

/* whole: the profile before tag filters, whose total pprof's percentages and node
 * cut are relative to (p itself when there are none). */
/* diff: p is a diff, whose rows also say each side's values (baseFlat, baseCum:
 * side a's; newFlat, newCum: side b's) and whose totals each side's. */
static void report_top(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                       const struct pd_pprof_profile *whole, uint64_t limit, double nodefraction,
                       int diff)
{
	struct pd_pprof_top *t = NULL;
	struct pd_err err = {0};
	int idx;
	if (api_sample_index(r, w, p, &idx))
		return;
	int rc = pd_pprof_top(p, idx, &t, &err);
	if (rc) {
		api_internal(w, "computing the top table failed", rc, &err);
		return;
	}
	int64_t kept_total = t->total;
	t->total = pd_pprof_total(whole, idx);
	size_t all = t->nrows;
	int64_t cutoff = 0;
	if (nodefraction > 0)
		pd_pprof_top_apply_nodefraction(t, nodefraction, &cutoff);
	size_t cut = t->nrows;
	/* pprof's inline marks come from the rows shown */
	size_t shown = pd_pprof_top_keep(t, p, limit < cut ? (size_t)limit : 0,
	                                 PD_PPROF_DEFAULT_EDGEFRACTION);
	jput(w, "{\"sampleType\":");
	api_jtype(w, p, (size_t)idx);
	jput(w, ",\"unit\":");
	api_junit(w, p, (size_t)idx);
	jput(w, ",\"sampleIndex\":");
	ji64(w, t->sample_index);
	jput(w, ",\"total\":");
	ji64(w, t->total);
	if (whole != p) {
		jput(w, ",\"focusTotal\":");
		ji64(w, kept_total);
	}
	if (diff) {
		int64_t bs, cs;
		pd_pprof_diff_sums(whole, idx, &bs, &cs);
		jput(w, ",\"baseTotal\":");
		ji64(w, (int64_t)(0 - (uint64_t)bs));
		jput(w, ",\"newTotal\":");
		ji64(w, cs);
	}
	jput(w, ",\"nodeCount\":");
	ju64(w, all);
	jput(w, ",\"dropped\":");
	ju64(w, all - cut);
	jput(w, ",\"dropCutoff\":");
	ji64(w, cutoff);
	jput(w, ",\"rows\":[");
	int64_t sum = 0;
	for (size_t i = 0; i < shown && !w->berr; i++) {
		const struct pd_pprof_top_row *row = &t->rows[i];
		sum = (int64_t)((uint64_t)sum + (uint64_t)row->flat);
		jput(w, i ? ",{\"name\":" : "{\"name\":");
		jstrn(w, row->name, row->name_len);
		jput(w, ",\"inline\":");
		jput(w, row->inline_kind == PD_PPROF_INLINED          ? "\"inline\""
		        : row->inline_kind == PD_PPROF_PARTIAL_INLINE ? "\"partial-inline\""
		                                                      : "\"\"");
		jput(w, ",\"flat\":");
		ji64(w, row->flat);
		jput(w, ",\"flatPercent\":");
		jdbl(w, pct(row->flat, t->total));
		jput(w, ",\"sumPercent\":");
		jdbl(w, pct(sum, t->total));
		jput(w, ",\"cum\":");
		ji64(w, row->cum);
		jput(w, ",\"cumPercent\":");
		jdbl(w, pct(row->cum, t->total));
		if (diff) {
			/* the base's values are negated in the diff: its own are minus them */
			jput(w, ",\"baseFlat\":");
			ji64(w, (int64_t)(0 - (uint64_t)row->base_flat));
			jput(w, ",\"newFlat\":");
			ji64(w, (int64_t)((uint64_t)row->flat - (uint64_t)row->base_flat));
			jput(w, ",\"baseCum\":");
			ji64(w, (int64_t)(0 - (uint64_t)row->base_cum));
			jput(w, ",\"newCum\":");
			ji64(w, (int64_t)((uint64_t)row->cum - (uint64_t)row->base_cum));
		}
		jput(w, "}");
	}
	jput(w, "]}");
	pd_pprof_top_destroy(t);
}

static void report_flame(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                         int64_t min_total)
{
	struct pd_pprof_flame *f = NULL;
	struct pd_err err = {0};
	int idx;
	if (api_sample_index(r, w, p, &idx))
		return;
	int rc = pd_pprof_flame(p, idx, &f, &err);
	if (rc) {
		api_internal(w, "computing the flame graph failed", rc, &err);
		return;
	}
	if (!w->berr)
		w->berr = pd_pprof_flame_json(f, min_total, &w->body);
	pd_pprof_flame_destroy(f);
}

/* `20240102T150405Z` (with .mmm when the milliseconds are not zero). */
static void compact_time(int64_t ms, char *out, size_t size)
{
	time_t secs = (time_t)(ms >= 0 ? ms / 1000 : -((-(ms + 1)) / 1000) - 1);
	int frac = (int)(ms - (int64_t)secs * 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y%m%dT%H%M%S", &tm);
	if (frac)
		snprintf(out, size, "%s.%03dZ", base, frac);
	else
		snprintf(out, size, "%sZ", base);
}

/* The profile type the side's series share, or NULL. */
static const char *side_type(const struct side *sd)
{
	const char *name = NULL;
	for (size_t i = 0; sd->res && i < sd->res->nseries; i++) {
		if (!sd->used[i])
			continue;
		const char *n = series_name(&sd->res->series[i]);
		if (!n || (name && strcmp(name, n) != 0))
			return NULL;
		name = n;
	}
	return name;
}

/* "<type>[-merge|-diff]-<time><ext>", with bytes unsafe in a file name as '_'. */
static void download_name(const struct side *sides, size_t nsides, const char *ext, char *name,
                          size_t size)
{
	char ts[40];
	const struct side *last = &sides[nsides - 1];
	const char *type = side_type(last);
	compact_time(last->maxt, ts, sizeof(ts));
	snprintf(name, size, "%s%s-%s%s", type ? type : "profile",
	         nsides == 2 ? "-diff" : sides[0].merge ? "-merge" : "", ts, ext);
	for (char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			*c = '_';
}

static void set_download(struct api_resp *w, const struct side *sides, size_t nsides)
{
	char name[200];
	download_name(sides, nsides, ".pb.gz", name, sizeof(name));
	size_t n = strlen(name) + 40;
	w->disposition = malloc(n);
	if (w->disposition)
		snprintf(w->disposition, n, "attachment; filename=\"%s\"", name);
}

static void report_proto(struct api_resp *w, const struct side *sides, size_t nsides,
                         const struct pd_pprof_profile *p)
{
	struct pd_err err = {0};
	uint8_t *out = NULL;
	size_t len = 0;
	int rc;
	if (nsides == 1 && !sides[0].merge && sides[0].raw)
		rc = pd_gzip(sides[0].raw, sides[0].rawlen, 1, &out, &len, &err);
	else
		rc = pd_pprof_encode(p, 1, &out, &len, &err);
	if (rc) {
		api_internal(w, "encoding the profile failed", rc, &err);
		return;
	}
	/* not the envelope: the file itself */
	w->json = 0;
	w->status = 200;
	w->content_type = "application/octet-stream";
	w->no_gzip = 1;
	pd_buf_fini(&w->body);
	pd_buf_init(&w->body, 0);
	w->berr = pd_buf_append(&w->body, out, len);
	free(out);
	set_download(w, sides, nsides);
}

static void report_tags(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p)
{
	struct pd_pprof_tags *t = NULL;
	struct pd_err err = {0};
	int idx;
	if (api_sample_index(r, w, p, &idx))
		return;
	const char *unit = api_param(r, "unit");
	int rc = pd_pprof_tags(p, idx, unit, &t, &err);
	if (rc) {
		api_internal(w, "listing the sample labels failed", rc, &err);
		return;
	}
	jput(w, "{\"sampleType\":");
	api_jtype(w, p, (size_t)idx);
	jput(w, ",\"unit\":");
	api_junit(w, p, (size_t)idx);
	jput(w, ",\"sampleIndex\":");
	ji64(w, idx);
	jput(w, ",\"keys\":[");
	for (size_t i = 0; i < t->nkeys && !w->berr; i++) {
		const struct pd_pprof_tag_key *k = &t->keys[i];
		jput(w, i ? ",{\"key\":" : "{\"key\":");
		jstrn(w, k->key, k->key_len);
		jput(w, ",\"total\":");
		ji64(w, k->total);
		jput(w, ",\"values\":[");
		for (size_t j = 0; j < k->nvalues; j++) {
			jput(w, j ? ",{\"value\":" : "{\"value\":");
			jstrn(w, k->values[j].name, k->values[j].name_len);
			jput(w, ",\"total\":");
			ji64(w, k->values[j].total);
			jput(w, ",\"percent\":");
			jdbl(w, pct(k->values[j].total, k->total));
			jput(w, "}");
		}
		jput(w, "]}");
	}
	jput(w, "]}");
	pd_pprof_tags_destroy(t);
}

void api_one_report(struct api_req *r, struct api_resp *w, int report,
                    const struct pd_pprof_profile *p, const struct pd_pprof_profile *whole,
                    const struct side *sides, size_t nsides, uint64_t limit, double nodefraction,
                    int64_t min_total)
{
	switch (report) {
	case REPORT_META:
		report_meta(w, p, sides, nsides);
		break;
	case REPORT_TOP:
		report_top(r, w, p, whole, limit, nodefraction, nsides == 2);
		break;
	case REPORT_FLAME:
		report_flame(r, w, p, min_total);
		break;
	case REPORT_TAGS:
		report_tags(r, w, p);
		break;
	case REPORT_PROTO:
		report_proto(w, sides, nsides, p);
		break;
	case REPORT_FOLDED:
	case REPORT_SPEEDSCOPE: {
		char name[200];
		int idx;
		if (api_sample_index(r, w, p, &idx))
			break;
		download_name(sides, nsides,
		              report == REPORT_FOLDED ? ".folded.txt" : ".speedscope.json", name,
		              sizeof(name));
		api_report_export(w, report == REPORT_SPEEDSCOPE, p, idx, name);
		break;
	}
	case REPORT_DOT:
	case REPORT_SVG:
		api_report_callgraph(r, w, p, whole, report == REPORT_SVG);
		break;
	}
}
