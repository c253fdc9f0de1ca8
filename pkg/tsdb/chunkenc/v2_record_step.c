/* v2_record_step.c: stepping over a profile record of a columnar value chunk:
 * the records before the one a read asks for are read only for the delta state
 * they leave (time, mapping list, values by stack), with every reference and the
 * record's extent still checked, and nothing built for the profile. Also the
 * readers' helpers for a record's mapping list and for value columns with a hole
 * (a value taken from the profile's totals). Layout: docs/format/chunks.md,
 * "Records" and "Holes". */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

#define DCORRUPT(msg) \
	do { \
		rc = pd_err_set(err, PD_ECORRUPT, "value chunk record: %s", msg); \
		goto out; \
	} while (0)

/* A record's mapping list after its count: nmap indices into t's mappings into idx,
 * then their ids into id (1..nmap with F_MAP_SEQ). NULL, or what is wrong. */
const char *v2_read_map_list(const struct v2_tables *t, struct v2_rd *r, unsigned flags,
			     size_t nmap, uint32_t *idx, uint64_t *id)
{
	for (size_t i = 0; i < nmap; i++) {
		uint64_t v = v2_uv(r);
		if (v >= t->nmap)
			return "a mapping index is out of range";
		idx[i] = (uint32_t)v;
	}
	for (size_t i = 0; i < nmap; i++)
		id[i] = flags & F_MAP_SEQ ? i + 1 : v2_uv(r);
	return NULL;
}

/* After the mode byte of a column with a hole (COL_*_HOLE): reads the hole's
 * index into *hole; NULL, or what is wrong. The profile's totals (prev->tot)
 * must hold one total a column. */
const char *v2_col_hole(const struct v2_prev *prev, struct v2_rd *r, size_t ns, size_t nv,
			size_t *hole)
{
	uint64_t h = v2_uv(r);
	if (r->bad || h >= ns)
		return "a value column's hole is not one of its samples";
	if ((!prev->tot || prev->ntot != nv) && !prev->holes_free)
		return "a value column takes a value from totals that the timestamp chunk does "
		       "not give for this profile";
	*hole = (size_t)h;
	return NULL;
}

/* Sets the hole's value of column j: the column's total less the other samples'
 * values (wrapping, as the totals are summed). */
void v2_fill_hole(const struct v2_prev *prev, int64_t *vals, size_t ns, size_t nv, size_t j,
		  size_t hole)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < ns; i++)
		if (i != hole)
			sum += (uint64_t)vals[i * nv + j];
	uint64_t tot = prev->tot && prev->ntot == nv ? (uint64_t)prev->tot[j] : 0;
	vals[hole * nv + j] = (int64_t)(tot - sum);
}

/* Steps over the profile record at r (after its kind byte), only advancing the
 * delta state: the time, the mapping list, and the values by stack. Nothing is
 * built for the profile, no string is looked up and no stack is walked (unless
 * the record's id lists need the counts). Every index the state depends on, and
 * every string and table index the record holds, is still range-checked and the
 * record's extent walked exactly, so a damaged record is an error; only checks
 * that concern the profile itself (ids, duplicates in its lists) are left to the
 * read of that profile. */
int v2_record_step(const struct v2_tables *t, struct v2_prev *prev, struct v2_rd *r,
		   struct pd_err *err)
{
	int rc = 0;
	struct v2_prev_view pview = {0};
	int unpacked = 0;
	if (t->nstr == 0)
		DCORRUPT("the chunk has no strings");
	unsigned flags = (unsigned)v2_uv(r);
	if (flags & ~(unsigned)F_ALL)
		DCORRUPT("unknown flags");
	int64_t time_nanos = v2_time_of(prev, v2_sv(r));
	v2_sv(r); /* duration_nanos */
	int64_t period = v2_sv(r);
	if (flags & F_PERIOD_TYPE) {
		uint64_t a = v2_uv(r), b = v2_uv(r);
		if (a >= t->nstr || b >= t->nstr)
			DCORRUPT("period type refers to a missing string");
	}
	size_t nv = v2_count(r, 2);
	for (size_t i = 0; i < nv; i++) {
		uint64_t a = v2_uv(r), b = v2_uv(r);
		if (a >= t->nstr || b >= t->nstr)
			DCORRUPT("a sample type refers to a missing string");
	}
	for (int i = 0; i < 4; i++)
		if (v2_uv(r) >= t->nstr)
			DCORRUPT("a header field refers to a missing string");
	for (size_t i = v2_count(r, 1); i > 0; i--)
		if (v2_uv(r) >= t->nstr)
			DCORRUPT("a comment refers to a missing string");

	/* mappings: kept in prev for a later record's flag 2 */
	if (flags & F_MAP_SAME) {
		if (!prev->valid)
			DCORRUPT("mappings refer to a previous profile that is not there");
	} else {
		size_t nmap = v2_count(r, 1);
		uint32_t *mi = realloc(prev->map_idx, (nmap ? nmap : 1) * sizeof(*mi));
		if (mi)
			prev->map_idx = mi;
		uint64_t *md = realloc(prev->map_id, (nmap ? nmap : 1) * sizeof(*md));
		if (md)
			prev->map_id = md;
		if (!mi || !md ||
		    v2_scratch((void **)&prev->sflag, &prev->sflag_cap, t->nmap + 1,
			       sizeof(uint8_t)))
			goto nomem;
		prev->nmap = nmap; /* on an error below the state is invalid anyway */
		const char *why = v2_read_map_list(t, r, flags, nmap, mi, md);
		if (why)
			DCORRUPT(why);
		memset(prev->sflag, 0, t->nmap + 1);
		for (size_t i = 0; i < nmap; i++) {
			if (prev->sflag[mi[i]] || md[i] == 0)
				DCORRUPT("a mapping is listed twice or has id 0");
			prev->sflag[mi[i]] = 1;
		}
	}

	/* samples: stacks, then the value columns */
	size_t ns = v2_count(r, 1);
	if (v2_scratch((void **)&prev->sstack, &prev->sstack_cap, ns + 1, sizeof(uint32_t)) ||
	    (nv && ns > SIZE_MAX / sizeof(int64_t) / nv) ||
	    v2_scratch((void **)&prev->svals, &prev->svals_cap, ns * nv + 1, sizeof(int64_t)))
		goto nomem;
	uint32_t *stacks = prev->sstack;
	int64_t *vals = prev->svals;
	for (size_t i = 0; i < ns; i++) {
		uint64_t v = v2_uv(r);
		if (v > t->nnode)
			DCORRUPT("a stack id is out of range");
		stacks[i] = (uint32_t)v;
	}
	if (r->bad)
		DCORRUPT("truncated samples");
	int delta_ok = prev->valid && prev->nvalues == nv;
	prev->col_at = r->pos;
	prev->col_ns = ns;
	prev->col_nv = nv;
	for (size_t j = 0; j < nv; j++) {
		uint8_t mode = v2_byte(r);
		size_t hole = SIZE_MAX;
		if (mode > COL_RAW_HOLE || ((mode == COL_DELTA || mode == COL_DELTA_HOLE) && !delta_ok) ||
		    (mode == COL_PERIOD && j == 0))
			DCORRUPT("bad value column mode");
		if (mode >= COL_DELTA_HOLE) {
			const char *why = v2_col_hole(prev, r, ns, nv, &hole);
			if (why)
				DCORRUPT(why);
			mode = mode == COL_DELTA_HOLE ? COL_DELTA : COL_RAW;
		}
		if (mode == COL_PERIOD) {
			for (size_t i = 0; i < ns; i++)
				vals[i * nv + j] =
				    (int64_t)((uint64_t)vals[i * nv] * (uint64_t)period);
		} else if (mode == COL_RAW) {
			for (size_t i = 0; i < ns; i++)
				if (i != hole)
					vals[i * nv + j] = v2_sv(r);
		} else if (prev->dense) {
			for (size_t i = 0; i < ns; i++) {
				if (i == hole)
					continue;
				const int64_t *pv = v2_dense_values(prev, stacks[i]);
				vals[i * nv + j] =
				    (int64_t)((uint64_t)v2_sv(r) + (uint64_t)(pv ? pv[j] : 0));
			}
		} else {
			if (!unpacked && v2_prev_view_of(prev, &pview))
				goto nomem;
			unpacked = 1;
			for (size_t i = 0; i < ns; i++) {
				if (i == hole)
					continue;
				const int64_t *pv = v2_prev_values(&pview, stacks[i]);
				vals[i * nv + j] =
				    (int64_t)((uint64_t)v2_sv(r) + (uint64_t)(pv ? pv[j] : 0));
			}
		}
		if (hole != SIZE_MAX)
			v2_fill_hole(prev, vals, ns, nv, j, hole);
	}
	prev->col_end = r->pos;
	if (flags & F_LABELS)
		for (size_t i = 0; i < ns; i++)
			for (size_t k = v2_count(r, 4); k > 0; k--) {
				uint64_t key = v2_uv(r), str = v2_uv(r);
				v2_sv(r);
				uint64_t unit = v2_uv(r);
				if (key >= t->nstr || str >= t->nstr || unit >= t->nstr)
					DCORRUPT("a sample label refers to a missing string");
			}

	/* the location and function lists: their lengths, when the record leaves
	 * them out but lists ids, follow from the samples as in a full decode */
	int need_locs = !(flags & F_LOC_SEQ) || ((flags & F_FN_DERIVED) && !(flags & F_FN_SEQ));
	uint32_t *lo = NULL;
	uint8_t *seen = NULL;
	size_t nl = 0, nf = 0;
	if (!(flags & F_LOC_DERIVED)) {
		nl = v2_count(r, 1);
		if (!(lo = malloc((nl + 1) * sizeof(*lo))))
			goto nomem;
		for (size_t k = 0; k < nl; k++)
			if ((lo[k] = (uint32_t)v2_uv(r)) >= t->nloc) {
				free(lo);
				DCORRUPT("a location index is out of range");
			}
	} else if (need_locs) {
		seen = calloc(t->nloc + 1, 1);
		lo = malloc((t->nloc + 1) * sizeof(*lo));
		if (!seen || !lo) {
			free(seen);
			free(lo);
			goto nomem;
		}
		for (size_t i = 0; i < ns; i++)
			for (uint32_t nd = stacks[i]; nd; nd = t->node[nd - 1].parent) {
				uint32_t li = t->node[nd - 1].location;
				if (!seen[li]++)
					lo[nl++] = li;
			}
		free(seen);
	}
	if (!(flags & F_LOC_SEQ))
		for (size_t k = nl; k > 0; k--)
			v2_uv(r);
	if (!(flags & F_FN_DERIVED)) {
		nf = v2_count(r, 1);
		for (size_t k = nf; k > 0; k--)
			v2_uv(r);
	} else if (!(flags & F_FN_SEQ)) {
		if (!(seen = calloc(t->nfn + 1, 1))) {
			free(lo);
			goto nomem;
		}
		for (size_t i = 0; i < nl; i++) {
			const struct v2_location *l = &t->loc[lo[i]];
			for (uint32_t k = 0; k < l->nline; k++)
				if (!seen[t->line[l->line + k].function]++)
					nf++;
		}
		free(seen);
	}
	free(lo);
	if (!(flags & F_FN_SEQ))
		for (size_t k = nf; k > 0; k--)
			v2_uv(r);
	if (r->bad)
		DCORRUPT("truncated");
	if (v2_prev_set(prev, time_nanos, prev->map_idx, prev->map_id, prev->nmap, stacks, vals, ns, nv))
		goto nomem;
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory decoding a profile");
out:
	v2_prev_view_fini(&pview);
	if (!prev->dense) {
		/* a packed state is kept between appends: no scratch with it */
		free(prev->sstack);
		free(prev->svals);
		free(prev->sflag);
		prev->sstack = NULL;
		prev->svals = NULL;
		prev->sflag = NULL;
		prev->sstack_cap = prev->svals_cap = prev->sflag_cap = 0;
	}
	if (rc)
		prev->valid = 0;
	return rc;
}
