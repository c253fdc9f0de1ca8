/* values_tc.c: reading a sealed value chunk beside the timestamp chunk cut with
 * it. The timestamps give each profile's time (chunks of relative times), and
 * the totals section gives each profile's totals, which the value columns of a
 * chunk of byte 5 leave one value each to (docs/format/chunks.md, "Holes"). */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

/* What a chunk's timestamp chunk says of its profiles: every timestamp, and the
 * totals when the section is there (sums.n 0 otherwise). */
struct tc {
	int64_t *ts;
	size_t nts;
	int64_t *val;
	uint32_t *off;
	struct v2_sums sums;
};

static void tc_fini(struct tc *c)
{
	free(c->ts);
	free(c->val);
	free(c->off);
}

/* Decodes tsc for a value chunk of count profiles; want_sums: the totals too
 * (a chunk of byte 5), PD_ECORRUPT when there are none. */
static int tc_init(struct tc *c, const uint8_t *tsc, size_t tsl, size_t count, int want_sums,
                   struct pd_err *err)
{
	memset(c, 0, sizeof(*c));
	uint16_t n = pd_chunkenc_ts_count(tsc, tsl);
	if (n < count)
		return pd_err_set(
		    err, PD_ECORRUPT,
		    "the timestamp chunk beside a value chunk of %zu profiles holds %u "
		    "timestamps",
		    count, (unsigned)n);
	if (!(c->ts = malloc(((size_t)n + 1) * sizeof(*c->ts))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	struct pd_chunkenc_ts_iter it;
	pd_chunkenc_ts_iter_init(&it, tsc, tsl);
	while (c->nts < n && pd_chunkenc_ts_iter_next(&it))
		c->ts[c->nts++] = pd_chunkenc_ts_iter_at(&it);
	if (c->nts < n)
		return pd_err_set(err, PD_ECORRUPT,
		                  "the timestamp chunk beside a value chunk is damaged");
	if (!want_sums)
		return 0;
	const uint8_t *sec;
	size_t sl;
	struct pd_chunkenc_totals_iter ti;
	int rc = pd_chunkenc_ts_totals(tsc, tsl, &sec, &sl);
	if (rc || sl == 0)
		return pd_err_set(
		    err, PD_ECORRUPT,
		    "a value chunk takes values from the totals of its timestamp chunk, "
		    "which has %s",
		    rc ? "timestamps that do not decode" : "no totals section");
	if ((rc = pd_chunkenc_totals_iter_init(&ti, sec, sl, n))) {
		pd_chunkenc_totals_iter_fini(&ti);
		return pd_err_set(
		    err, PD_ECORRUPT,
		    "a value chunk takes values from the totals of its timestamp chunk, "
		    "whose section this profd cannot read");
	}
	/* at most one total a byte of the section */
	size_t cap = sl + 1, nv = 0, k = 0;
	c->val = malloc(cap * sizeof(*c->val));
	c->off = malloc(((size_t)n + 1) * sizeof(*c->off));
	if (!c->val || !c->off) {
		pd_chunkenc_totals_iter_fini(&ti);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	while (pd_chunkenc_totals_iter_next(&ti)) {
		c->off[k++] = (uint32_t)nv;
		size_t m = ti.profile ? ti.n : 0;
		if (m > cap - nv) {
			/* a repeat stands for many records in a few bytes */
			size_t nc = cap * 2 > nv + m ? cap * 2 : nv + m;
			int64_t *x = realloc(c->val, nc * sizeof(*x));
			if (!x) {
				pd_chunkenc_totals_iter_fini(&ti);
				return pd_err_set(err, PD_ENOMEM, "out of memory");
			}
			c->val = x;
			cap = nc;
		}
		if (m)
			memcpy(c->val + nv, ti.vals, m * sizeof(*c->val));
		nv += m;
	}
	rc = pd_chunkenc_totals_iter_err(&ti);
	pd_chunkenc_totals_iter_fini(&ti);
	if (rc || k != n)
		return pd_err_set(err, rc == PD_ENOMEM ? PD_ENOMEM : PD_ECORRUPT,
		                  "the totals section beside a value chunk is damaged");
	c->off[k] = (uint32_t)nv;
	c->sums = (struct v2_sums){c->val, c->off, k};
	return 0;
}

static int byte5(const uint8_t *chunk, size_t len)
{
	return len && chunk[0] == PD_CHUNKENC_VALUES_COLUMNAR_TOTALS;
}

int pd_chunkenc_values_read_tc(const uint8_t *chunk, size_t len, const uint8_t *tsc, size_t tsl,
                               size_t i, size_t max_profile, uint8_t **out, size_t *out_len,
                               struct pd_err *err)
{
	int64_t count = pd_chunkenc_values_read_count(chunk, len, err);
	if (count < 0)
		return (int)count;
	if (i >= (size_t)count)
		return pd_err_set(err, PD_ENOTFOUND, "profile %zu of a chunk of %lld", i,
		                  (long long)count);
	struct tc c;
	int rc = tc_init(&c, tsc, tsl, (size_t)count, byte5(chunk, len), err);
	if (!rc)
		rc = len && v2_columnar_byte(chunk[0])
		         ? v2_read(chunk, len, i, c.ts[i], byte5(chunk, len) ? &c.sums : NULL,
		                   max_profile, out, out_len, err)
		         : pd_chunkenc_values_read_at(chunk, len, i, c.ts[i], max_profile, out,
		                                      out_len, err);
	tc_fini(&c);
	return rc;
}

int pd_chunkenc_values_merge_tc(const uint8_t *chunk, size_t len, const uint8_t *tsc, size_t tsl,
                                size_t from, size_t to, size_t max_profile,
                                pd_chunkenc_merge_fn emit, void *ctx, struct pd_err *err)
{
	int64_t count = pd_chunkenc_values_read_count(chunk, len, err);
	if (count < 0)
		return (int)count;
	struct tc c;
	int rc = tc_init(&c, tsc, tsl, (size_t)count, byte5(chunk, len), err);
	if (!rc)
		rc = len && v2_columnar_byte(chunk[0])
		         ? v2_merge_sealed(chunk, len, from, to, c.ts,
		                           byte5(chunk, len) ? &c.sums : NULL, max_profile, emit,
		                           ctx, err)
		         : pd_chunkenc_values_merge_at(chunk, len, from, to, c.ts, max_profile,
		                                       emit, ctx, err);
	tc_fini(&c);
	return rc;
}
