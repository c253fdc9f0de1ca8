/* normalize.c: pprof's -normalize for diffs: the profile compared is scaled, one
 * ratio per sample type, so that each type's sum equals the base's (profile's
 * Normalize and ScaleN: each value rounded half away from zero; unless every ratio
 * is 1, a sample is dropped when its scaled values, those of ratio other than 1,
 * are all zero), so that ranges holding different numbers of profiles compare by
 * shape rather than by volume. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

/* Adds each sample type's values of p into acc (nt of them, zeroed by the caller),
 * wrapping as Go's int64 sums wrap. */
static void sums_of(const struct pd_pprof_profile *p, int64_t *acc, size_t nt)
{
	const pb_profile *pb = p->pb;
	for (size_t i = 0; i < pb->n_sample; i++)
		for (size_t j = 0; j < pb->sample[i]->n_value && j < nt; j++)
			acc[j] = (int64_t)((uint64_t)acc[j] + (uint64_t)pb->sample[i]->value[j]);
}

int pd_pprof_normalize(const struct pd_pprof_profile *p, const struct pd_pprof_profile *base,
                       struct pd_pprof_profile **out, struct pd_err *err)
{
	*out = NULL;
	size_t nt = p->pb->n_sample_type;
	if (base->pb->n_sample_type != nt)
		return pd_err_set(err, PD_EINVAL,
		                  "normalize: the profile has %zu sample types and the base %zu", nt,
		                  base->pb->n_sample_type);
	double *ratio = calloc(nt ? nt : 1, sizeof(*ratio));
	int64_t *sum = calloc(nt ? nt * 2 : 1, sizeof(*sum)); /* base's, then p's */
	if (!ratio || !sum) {
		free(ratio);
		free(sum);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	sums_of(base, sum, nt);
	sums_of(p, sum + nt, nt);
	int all_ones = 1;
	for (size_t j = 0; j < nt; j++) {
		ratio[j] = sum[nt + j] == 0 ? 0.0 : (double)sum[j] / (double)sum[nt + j];
		all_ones &= ratio[j] == 1.0;
	}
	struct pd_pprof_parts parts = {0};
	int64_t *vals = NULL;
	struct pd_pprof_psample *samples = NULL;
	/* samples of the same stack and labels added up first, as pprof has them by
	 * then: rounding each of them alone would round differently */
	struct pd_pprof_profile *merged = NULL;
	int rc = pd_pprof_merge(&p, 1, &merged, err);
	if (!rc)
		rc = pd_pprof_parts_get(merged, &parts, err);
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
			if (all_ones || j >= nt || ratio[j] == 1.0) {
				v[j] = s->value[j]; /* and, as in pprof, no reason to keep the sample */
				continue;
			} else {
				double x = round((double)s->value[j] * ratio[j]);
				/* beyond int64 saturates, where Go's conversion is undefined */
				v[j] = x >= 9.2233720368547758e18    ? INT64_MAX
				       : x <= -9.2233720368547758e18 ? INT64_MIN
				                                     : (int64_t)x;
			}
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
	free(ratio);
	free(sum);
	return rc;
}
