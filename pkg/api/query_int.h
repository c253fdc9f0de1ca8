/* query_int.h: what the files of /api/v1/query share (query.c, query_load.c,
 * query_report.c, query_samples.c, query_groupby.c): the modes, aggregations and
 * reports, a side of a query (one profile or a merge) and what a merge
 * collects, the sample filters, the groups of group_by, and the steps that
 * load, filter, group and report on profiles. */
#ifndef PROFD_API_QUERY_INT_H
#define PROFD_API_QUERY_INT_H

#include "api_int.h"
#include "profd/symbolize.h"

enum { MODE_SINGLE, MODE_MERGE, MODE_DIFF };
/* aggregation: a merge's profiles summed, averaged, or (the default) averaged in
 * the sample types that are snapshots (pd_pprof_snapshot_type), summed in others */
enum { AGG_DEFAULT, AGG_SUM, AGG_AVG };
enum {
	REPORT_META,
	REPORT_TOP,
	REPORT_FLAME,
	REPORT_PROTO,
	REPORT_TAGS,
	REPORT_FOLDED,
	REPORT_SPEEDSCOPE,
	REPORT_DOT,
	REPORT_SVG
};

/* Reports that answer a file, not JSON: one profile only, 204 when none. */
#define FILE_REPORT(r) ((r) == REPORT_PROTO || (r) == REPORT_FOLDED || (r) == REPORT_SPEEDSCOPE)
/* Reports that answer with one document, not JSON, so cannot be grouped. */
#define ONE_DOCUMENT(r) (FILE_REPORT(r) || (r) == REPORT_DOT || (r) == REPORT_SVG)

/* One side of a query: a single profile or a merge. */
struct side {
	char pfx[4];    /* "", "a." or "b." */
	char qname[32]; /* the selector's parameter name, for errors */
	struct api_sel sel;
	int merge;
	int64_t t, start, end; /* single: t; merge: [start, end] */
	int64_t lookback;      /* single: how far before t a sample may be */
	struct pd_storage_result *res;
	unsigned char *used; /* per series of res: contributed */
	size_t nseries;      /* series that contributed */
	size_t nprofiles;
	int64_t mint, maxt; /* sample times that contributed */
	uint8_t *raw;       /* single: the stored bytes */
	size_t rawlen;
	struct pd_pprof_profile *prof;
	int found;
	int symbolized;                 /* the symbolizer ran on the result (sym says what it did) */
	struct pd_symbolize_result sym;
	int aggregation;    /* AGG_*: how a merge's profiles are combined */
	unsigned char *avg; /* merge: per sample type of prof, 1 when averaged */
	size_t navg;
};

/* What one group of group_by collected (see api_load_groups). */
struct group {
	size_t first, count; /* its series: order[first .. first + count) */
	size_t nprofiles, nseries;
	int64_t mint, maxt;
	struct pd_pprof_profile *whole;   /* the merge */
	struct pd_pprof_profile *focused; /* after tag_focus/tag_ignore, or NULL */
	int idx;                          /* sample_index in its profile */
	int64_t total;                    /* of idx over focused (else whole) */
	unsigned char *avg;               /* per sample type of whole: averaged */
	size_t navg;
};

/* What a merge collects from the store, series by series. */
struct merge_state {
	struct pd_api_server *s;
	struct side *sd;
	struct group *g; /* group_by: the group being merged, else NULL */
	struct pd_pprof_merger *mg;
	size_t series;    /* index in sd->res being merged */
	uint64_t bytes;   /* decoded bytes read so far */
	const char *cut;  /* why the merge stopped early, or NULL */
	int bad;          /* the profiles cannot be merged: err says why */
	struct pd_err err;
	int64_t bad_t;
};

#define MERGE_STOP 1 /* an emit's way to stop the store's merge; not an error */

/* Most tag_focus or tag_ignore parameters one query may give. */
#define MAX_TAG_FILTERS 16

struct tag_filters {
	struct pd_pprof_tagfilter *focus[MAX_TAG_FILTERS], *ignore[MAX_TAG_FILTERS];
	size_t nfocus, nignore;
	struct pd_pprof_namefilter *names; /* focus ... prune_from, or NULL */
	enum pd_pprof_names names_mode;    /* what the stack filters match against */
};

#define WARN_FILTERED_ALL "tag_focus and tag_ignore left no sample"
#define WARN_STACKS_ALL "the stack filters (focus, ignore, hide, show, show_from) left no sample"

/* What api_load_groups found. */
struct groups {
	size_t *order;   /* series indexes of sd->res, grouped (api_group_sort) */
	struct group *g; /* the groups kept, in label order */
	size_t n;
	size_t dropped; /* groups with profiles beyond max_groups */
};

/* ---- the sides (query_load.c) ------------------------------------------------ */

void api_side_fini(struct side *sd);
int api_side_params(struct api_req *r, struct api_resp *w, struct side *sd, const char *pfx,
                    int mode);
/* Loads the side: its one profile (decoded when decode is set) or its merge of
 * at most max_profiles. -1 after setting the error; sd->found says whether
 * there was a profile. */
int api_side_load(struct api_req *r, struct api_resp *w, struct side *sd, int decode,
                  uint64_t max_profiles);
int api_merge_plan(struct api_req *r, struct api_resp *w, struct side *sd, uint64_t max_profiles,
                   int64_t **upto, size_t *n, size_t *take);
int api_merge_some(struct api_resp *w, struct merge_state *m, const size_t *order,
                   size_t first, size_t count, const int64_t *upto);
void api_merge_warn_cut(struct pd_api_server *s, struct api_resp *w, const struct side *sd,
                        size_t n, const char *cut);
int api_aggregate(struct api_resp *w, int agg, struct pd_pprof_profile **p, size_t count,
                  unsigned char **avg, size_t *navg);

/* ---- reports (query_report.c) ------------------------------------------------- */

void api_set_report_names(struct api_req *r, struct api_resp *w, struct pd_pprof_profile *a,
                          struct pd_pprof_profile *b, struct pd_pprof_profile *c,
                          struct pd_pprof_profile *d);
/* The request's sample_index in p: 0, or -1 after a 400 naming it. */
int api_sample_index(struct api_req *r, struct api_resp *w, const struct pd_pprof_profile *p,
                     int *idx);
void api_jtype(struct api_resp *w, const struct pd_pprof_profile *p, size_t i);
void api_junit(struct api_resp *w, const struct pd_pprof_profile *p, size_t i);
/* Answers report (REPORT_*) on p; whole is p before the filters. */
void api_one_report(struct api_req *r, struct api_resp *w, int report,
                    const struct pd_pprof_profile *p, const struct pd_pprof_profile *whole,
                    const struct side *sides, size_t nsides, uint64_t limit, double nodefraction,
                    int64_t min_total);

/* ---- labels on samples (query_samples.c) ------------------------------------ */

void api_tag_filters_fini(struct tag_filters *tf);
/* tag_focus, tag_ignore and the stack filters into tf: 0, or -1 after an error
 * naming the parameter. */
int api_tag_filters_parse(struct api_req *r, struct api_resp *w, struct tag_filters *tf);
int api_tag_filters_apply(struct api_resp *w, const struct tag_filters *tf,
                          const struct pd_pprof_profile *p, struct pd_pprof_profile **out,
                          size_t *kept);
void api_report_groups(struct api_req *r, struct api_resp *w, int report, const char *key,
                       uint64_t max_groups, const struct pd_pprof_profile *p,
                       const struct pd_pprof_profile *whole, const struct side *sides,
                       size_t nsides, uint64_t limit, double nodefraction, int64_t min_total);

/* ---- group_by (query_groupby.c) ------------------------------------------------ */

void api_groups_fini(struct groups *gs);
int api_load_groups(struct api_req *r, struct api_resp *w, struct side *sd,
                    const struct api_group_by *gb, uint64_t max_profiles, size_t max_groups,
                    const struct tag_filters *tf, struct groups *gs);
void api_report_series_groups(struct api_req *r, struct api_resp *w, int report,
                              const struct api_group_by *gb, const struct groups *gs,
                              uint64_t max_groups, const struct side *sd, const char *key,
                              uint64_t max_sample_groups, uint64_t limit, double nodefraction,
                              int64_t min_total, int64_t *deadline_us);

#endif
