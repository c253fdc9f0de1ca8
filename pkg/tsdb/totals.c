/* totals.c: profile values over time (pd_tsdb_select_totals): for each profile of
 * the selected series, the sum of each sample type's values and its duration. This
 * version reads and decodes every profile (pd_tsdb_read); it is what any stored
 * profile can always be answered with. */
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "tsdb_int.h"

/* The index of (type, unit) in t's types, added when new; -1 when out of memory. */
static long type_index(struct pd_tsdb_totals *t, const char *type, const char *unit)
{
	for (size_t k = 0; k < t->ntypes; k++)
		if (!strcmp(t->types[k].type, type) && !strcmp(t->types[k].unit, unit))
			return (long)k;
	size_t k = t->ntypes;
	struct pd_tsdb_sample_type *nt = realloc(t->types, (k + 1) * sizeof(*nt));
	if (!nt)
		return -1;
	t->types = nt;
	int64_t *nv = realloc(t->values, (k + 1) * t->nts * sizeof(*nv) + 1);
	if (!nv)
		return -1;
	t->values = nv;
	uint8_t *np = realloc(t->present, (k + 1) * t->nts + 1);
	if (!np)
		return -1;
	t->present = np;
	nt[k].type = strdup(type);
	nt[k].unit = strdup(unit);
	if (!nt[k].type || !nt[k].unit) {
		free(nt[k].type);
		free(nt[k].unit);
		return -1;
	}
	memset(nv + k * t->nts, 0, t->nts * sizeof(*nv));
	memset(np + k * t->nts, 0, t->nts);
	t->ntypes = k + 1;
	return (long)k;
}

/* Adds profile i's totals (p decoded) to t. */
static int add_profile(struct pd_tsdb_totals *t, size_t i, const struct pd_pprof_profile *p,
		       struct pd_err *err)
{
	t->duration_nanos[i] = pd_pprof_duration_nanos(p);
	for (size_t j = 0; j < pd_pprof_sample_type_count(p); j++) {
		long k = type_index(t, pd_pprof_sample_type(p, j), pd_pprof_sample_unit(p, j));
		if (k < 0)
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		t->values[(size_t)k * t->nts + i] = pd_pprof_sum(p, (int)j);
		t->present[(size_t)k * t->nts + i] = 1;
	}
	return 0;
}

static int series_totals(struct pd_tsdb *db, struct pd_tsdb_series *s, struct pd_tsdb_totals *t,
			 struct pd_err *err)
{
	t->labels = s->labels;
	t->nlabels = s->nlabels;
	t->ts = s->ts;
	t->nts = s->nts;
	s->labels = NULL;
	s->ts = NULL;
	t->duration_nanos = calloc(t->nts + 1, sizeof(*t->duration_nanos));
	if (!t->duration_nanos)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < t->nts; i++) {
		uint8_t *buf = NULL;
		size_t len = 0;
		int rc = pd_tsdb_read(db, t->labels, t->nlabels, t->ts[i], &buf, &len, err);
		if (rc == PD_ENOTFOUND)
			continue; /* deleted or compacted away since the listing */
		if (rc)
			return rc;
		struct pd_pprof_profile *p = NULL;
		struct pd_err derr;
		if (pd_pprof_decode(&p, buf, len, NULL, &derr)) {
			free(buf);
			continue; /* kept opaque: not a profile, no types */
		}
		free(buf);
		rc = add_profile(t, i, p, err);
		pd_pprof_destroy(p);
		if (rc)
			return rc;
	}
	return 0;
}

void pd_tsdb_totals_result_destroy(struct pd_tsdb_totals_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nseries; i++) {
		struct pd_tsdb_totals *t = &r->series[i];
		free(t->labels);
		free(t->ts);
		free(t->duration_nanos);
		for (size_t k = 0; k < t->ntypes; k++) {
			free(t->types[k].type);
			free(t->types[k].unit);
		}
		free(t->types);
		free(t->values);
		free(t->present);
	}
	free(r->series);
	free(r);
}

int pd_tsdb_select_totals(struct pd_tsdb *db, const struct pd_tsdb_matcher *m, size_t nm,
			  int64_t mint, int64_t maxt, size_t limit,
			  struct pd_tsdb_totals_result **out, struct pd_err *err)
{
	struct pd_tsdb_result *sel = NULL;
	*out = NULL;
	int rc = pd_tsdb_select(db, m, nm, mint, maxt, limit, &sel, err);
	if (rc)
		return rc;
	struct pd_tsdb_totals_result *r = calloc(1, sizeof(*r));
	if (r)
		r->series = calloc(sel->nseries + 1, sizeof(*r->series));
	if (!r || !r->series) {
		free(r);
		pd_tsdb_result_destroy(sel);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < sel->nseries && !rc; i++) {
		rc = series_totals(db, &sel->series[i], &r->series[i], err);
		r->nseries = i + 1;
	}
	pd_tsdb_result_destroy(sel);
	if (rc) {
		pd_tsdb_totals_result_destroy(r);
		return rc;
	}
	*out = r;
	return 0;
}
