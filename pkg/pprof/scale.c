/* scale.c: scaling a profile's values one sample type at a time, the shared work
 * of pprof's -normalize (a ratio per type, pd_pprof_normalize) and of averaged
 * merges (an exact division by the number of profiles merged, pd_pprof_average),
 * and which sample types are snapshots, whose merge over time is averaged by
 * default. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

/* round(v / d), half away from zero, in integers (d > 0) */
static int64_t div_round(int64_t v, int64_t d)
{
	int64_t q = v / d, r = v % d;
	/* |r| >= d - |r| without overflow: twice the remainder reaches the divisor */
	int64_t ar = r < 0 ? -r : r;
	if (ar >= d - ar)
		q += v < 0 ? -1 : 1;
	return q;
}

static int64_t mul_round(int64_t v, double ratio)
{
	double x = round((double)v * ratio);
	/* beyond int64 saturates, where Go's conversion is undefined */
	return x >= 9.2233720368547758e18    ? INT64_MAX
	       : x <= -9.2233720368547758e18 ? INT64_MIN
	                                     : (int64_t)x;
}

int pd_pprof_scale_core(const struct pd_pprof_profile *p, const struct pd_pprof_scaling *sc,
                        struct pd_pprof_profile **out, struct pd_err *err)
{
	*out = NULL;
	size_t nt = sc->n;
	int all_ones = 1;
	for (size_t j = 0; j < nt; j++)
		all_ones &= sc->divisor ? sc->divisor[j] <= 1 : sc->ratio[j] == 1.0;
	struct pd_pprof_parts parts = {0};
	int64_t *vals = NULL;
	struct pd_pprof_psample *samples = NULL;
	struct pd_pprof_profile *merged = NULL;
	int rc = 0;
	/* samples of the same stack and labels added up first when asked: rounding
	 * each of them alone would round differently */
	if (sc->merge_first)
		rc = pd_pprof_merge(&p, 1, &merged, err);
	if (!rc)
		rc = pd_pprof_parts_get(merged ? merged : p, &parts, err);
	if (rc)
		goto out;
	size_t nv = 0;
	for (size_t i = 0; i < parts.nsample; i++)
		nv += parts.sample[i].nvalue;
	vals = malloc((nv ? nv : 1) * sizeof(*vals));
	samples = malloc((parts.nsample ? parts.nsample : 1) * sizeof(*samples));
	if (!vals || !samples) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	size_t ns = 0, at = 0;
	for (size_t i = 0; i < parts.nsample; i++) {
		const struct pd_pprof_psample *s = &parts.sample[i];
		int64_t *v = vals + at;
		int keep = 0;
		for (size_t j = 0; j < s->nvalue; j++) {
			int scaled = !all_ones && j < nt &&
			             (sc->divisor ? sc->divisor[j] > 1 : sc->ratio[j] != 1.0);
			if (!scaled)
				v[j] = s->value[j];
			else if (sc->divisor)
				v[j] = div_round(s->value[j], sc->divisor[j]);
			else
				v[j] = mul_round(s->value[j], sc->ratio[j]);
			/* pprof's ScaleN: only the scaled values keep a sample */
			if (scaled || sc->keep_any)
				keep |= v[j] != 0;
		}
		if (!keep && !all_ones)
			continue;
		samples[ns] = *s;
		samples[ns].value = v;
		ns++;
		at += s->nvalue;
	}
	struct pd_pprof_parts o = parts;
	o.sample = samples;
	o.nsample = ns;
	o.arena = NULL;
	if (!(rc = pd_pprof_parts_copy(&o, out, err))) {
		(*out)->names = p->names;
		(*out)->granularity = p->granularity;
	}
out:
	pd_pprof_parts_fini(&parts);
	pd_pprof_destroy(merged);
	free(vals);
	free(samples);
	return rc;
}

int pd_pprof_average(const struct pd_pprof_profile *p, const unsigned char *which, uint64_t count,
                     struct pd_pprof_profile **out, struct pd_err *err)
{
	*out = NULL;
	size_t nt = p->pb->n_sample_type;
	if (count == 0 || count > INT64_MAX)
		return pd_err_set(err, PD_EINVAL, "average: %llu profiles",
		                  (unsigned long long)count);
	int64_t *div = calloc(nt ? nt : 1, sizeof(*div));
	if (!div)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t j = 0; j < nt; j++)
		div[j] = !which || which[j] ? (int64_t)count : 1;
	struct pd_pprof_scaling sc = {.divisor = div, .n = nt, .keep_any = 1};
	int rc = pd_pprof_scale_core(p, &sc, out, err);
	free(div);
	return rc;
}

/* Sample types that are a snapshot of a moment rather than a count since the
 * last profile or since the start: Go's heap in use, goroutines and threads. */
static const char *const snapshot_types[] = {"inuse_space", "inuse_objects", "goroutine",
                                             "goroutines", "threadcreate"};

int pd_pprof_snapshot_type(const struct pd_pprof_profile *p, size_t i)
{
	const pb_profile *pb = p->pb;
	/* a pushed profile whose sender asked for averages (Pyroscope's
	 * aggregationType=average, kept as a comment) is a snapshot in every type */
	for (size_t c = 0; c < pb->n_comment; c++) {
		const char *s = pd_pprof_str(p, pb->comment[c]);
		if (s && strcmp(s, "aggregation=average") == 0)
			return 1;
	}
	if (i >= pb->n_sample_type)
		return 0;
	const char *t = pd_pprof_str(p, pb->sample_type[i]->type);
	if (!t)
		return 0;
	for (size_t k = 0; k < sizeof snapshot_types / sizeof snapshot_types[0]; k++)
		if (strcmp(t, snapshot_types[k]) == 0)
			return 1;
	return 0;
}
