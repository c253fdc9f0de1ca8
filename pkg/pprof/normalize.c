/* normalize.c: pprof's -normalize for diffs: the profile compared is scaled, one
 * ratio per sample type, so that each type's sum equals the base's (profile's
 * Normalize and ScaleN: each value rounded half away from zero; unless every ratio
 * is 1, a sample is dropped when its scaled values, those of ratio other than 1,
 * are all zero), so that ranges holding different numbers of profiles compare by
 * shape rather than by volume. */
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
	for (size_t j = 0; j < nt; j++)
		ratio[j] = sum[nt + j] == 0 ? 0.0 : (double)sum[j] / (double)sum[nt + j];
	struct pd_pprof_scaling sc = {.ratio = ratio, .n = nt, .merge_first = 1};
	int rc = pd_pprof_scale_core(p, &sc, out, err);
	free(ratio);
	free(sum);
	return rc;
}
