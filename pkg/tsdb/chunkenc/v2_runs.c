/* v2_runs.c: when a chunk is sealed, each stretch of repeats in a row (the idle
 * block, mutex and threadcreate profiles of a program: the same record but for
 * its time) is written as one run: a kind byte, the count, and the time fields
 * packed to the bits they need, rather than a kind byte and a varint each
 * (docs/format/chunks.md, "Runs"). The open chunk keeps plain repeats, which an
 * append can write without looking ahead; the stretches are only known whole
 * when the chunk is sealed. */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

/* A repeat of the group: where its bytes are and the time field it stands for. */
struct rep {
	size_t at, len;
	int64_t field;
};

/* Appends the n repeats of reps (bytes in rec) to out: as one run when that is
 * shorter than the repeats as they are, else as they are. */
static int flush(const uint8_t *rec, const struct rep *reps, size_t n, struct pd_buf *out)
{
	if (n == 0)
		return 0;
	size_t plain = 0;
	int64_t base = reps[0].field;
	for (size_t k = 0; k < n; k++) {
		plain += reps[k].len;
		if (reps[k].field < base)
			base = reps[k].field;
	}
	uint64_t span = 0;
	for (size_t k = 0; k < n; k++) {
		uint64_t v = (uint64_t)reps[k].field - (uint64_t)base;
		if (v > span)
			span = v;
	}
	unsigned w = 0;
	while (w < 64 && span >> w)
		w++;
	size_t bytes = (size_t)(((uint64_t)n * w + 7) / 8);
	size_t run = 1 + v2_uv_len(n) + v2_sv_len(base) + 1 + bytes;
	if (run >= plain) {
		for (size_t k = 0; k < n; k++)
			if (pd_buf_append(out, rec + reps[k].at, reps[k].len))
				return -1;
		return 0;
	}
	uint8_t head[2] = {KIND_RUN, (uint8_t)w};
	if (pd_buf_append(out, head, 1) || v2_put_uv(out, n) || v2_put_sv(out, base) ||
	    pd_buf_append(out, head + 1, 1) || pd_buf_reserve(out, bytes))
		return -1;
	uint8_t *p = out->data + out->len;
	memset(p, 0, bytes);
	uint64_t bit = 0;
	for (size_t k = 0; k < n; k++) {
		uint64_t v = (uint64_t)reps[k].field - (uint64_t)base;
		for (unsigned j = 0; j < w; j++, bit++)
			p[bit / 8] |= (uint8_t)((v >> j & 1) << (bit % 8));
	}
	out->len += bytes;
	return 0;
}

int v2_runs_write(const struct v2_tables *t, int rel, const uint8_t *rec, size_t len,
                  struct pd_buf *out, struct pd_err *err)
{
	struct v2_prev prev = {0};
	struct v2_rd r = {rec, len, 0, 0};
	struct rep *reps = NULL;
	size_t nrep = 0, cap = 0;
	int rc = 0;
	v2_prev_dense(&prev, t->nnode);
	prev.rel = rel;
	prev.holes_free = 1; /* only times and extents are read here */
	while (!rc && r.pos < r.len) {
		size_t at = r.pos;
		uint8_t kind = rec[at];
		struct v2_decoded d;
		if ((rc = v2_record_decode(t, &prev, &r, V2_WANT_STATE, &d, err)))
			break;
		v2_decoded_fini(&d);
		if (kind == KIND_REPEAT) {
			if (nrep == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct rep *x = realloc(reps, nc * sizeof(*x));
				if (!x)
					goto nomem;
				reps = x;
				cap = nc;
			}
			reps[nrep++] = (struct rep){at, r.pos - at, prev.time_delta};
			continue;
		}
		if (flush(rec, reps, nrep, out) || pd_buf_append(out, rec + at, r.pos - at))
			goto nomem;
		nrep = 0;
	}
	if (!rc && flush(rec, reps, nrep, out))
		goto nomem;
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory sealing a value chunk");
out:
	free(reps);
	v2_prev_fini(&prev);
	return rc;
}
