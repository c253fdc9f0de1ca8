/* v2_holes.c: when the store seals a chunk whose timestamp chunk carries the
 * totals section (encoding byte 5), each value column leaves out the value that
 * costs it the most bytes, its hole: the reader takes it from the profile's
 * total less the other samples' values (docs/format/chunks.md, "Holes"). A
 * program whose profiles change in one stack from scrape to scrape (a mutex
 * profile: one lock, its count and delay growing) then writes the same record
 * every time but for its time, and that record becomes a repeat, then part of a
 * run. The open chunk keeps its records without holes: they are made here, from
 * records that are only read for their state and copied. */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

/* Appends the value columns at c (ns samples, nv columns, ending at end) to out,
 * each with a hole where that is shorter. 0; -1 out of memory; 1 when the bytes
 * are not the columns the record's read said (cannot happen). */
static int columns(const uint8_t *c, size_t end, size_t ns, size_t nv, struct pd_buf *out)
{
	struct v2_rd r = {c, end, 0, 0};
	for (size_t j = 0; j < nv; j++) {
		uint8_t mode = v2_byte(&r);
		if (r.bad || (mode != COL_RAW && mode != COL_DELTA && mode != COL_PERIOD))
			return 1;
		if (mode == COL_PERIOD || ns == 0) {
			if (pd_buf_append(out, &mode, 1))
				return -1;
			continue;
		}
		/* the longest value is the hole (the first of the longest) */
		size_t from = r.pos, hole = 0, hole_len = 0, hole_at = 0;
		for (size_t i = 0; i < ns; i++) {
			size_t at = r.pos;
			v2_sv(&r);
			if (r.pos - at > hole_len) {
				hole = i;
				hole_len = r.pos - at;
				hole_at = at;
			}
		}
		if (r.bad)
			return 1;
		if (hole_len <= v2_uv_len(hole)) {
			if (pd_buf_append(out, &mode, 1) ||
			    pd_buf_append(out, c + from, r.pos - from))
				return -1;
			continue;
		}
		uint8_t hm = mode == COL_DELTA ? COL_DELTA_HOLE : COL_RAW_HOLE;
		if (pd_buf_append(out, &hm, 1) || v2_put_uv(out, hole) ||
		    pd_buf_append(out, c + from, hole_at - from) ||
		    pd_buf_append(out, c + hole_at + hole_len, r.pos - hole_at - hole_len))
			return -1;
	}
	return r.pos == end ? 0 : 1;
}

int v2_holes_write(const struct v2_tables *t, const uint8_t *rec, size_t len, struct pd_buf *out,
                   size_t *nrep, struct pd_err *err)
{
	struct v2_prev prev = {0};
	struct v2_rd r = {rec, len, 0, 0};
	struct pd_buf nb;
	/* the body (flags and what follows the time) of the last profile record
	 * written, which the next record may repeat */
	uint8_t body[V2_REPEAT_MAX];
	size_t body_len = 0;
	int has_body = 0, rc = 0;
	pd_buf_init(&nb, 0);
	v2_prev_dense(&prev, t->nnode);
	prev.rel = 1;
	*nrep = 0;
	while (!rc && r.pos < r.len) {
		size_t at = r.pos;
		uint8_t kind = rec[at];
		int64_t before = prev.time_delta;
		struct v2_decoded d;
		if ((rc = v2_record_decode(t, &prev, &r, V2_WANT_STATE, &d, err)))
			break;
		v2_decoded_fini(&d);
		if (kind == KIND_RUN) {
			rc = pd_err_set(err, PD_EINVAL, "value chunk: holes are made before runs");
			break;
		}
		if (kind != KIND_PROFILE) {
			if (kind == KIND_REPEAT)
				++*nrep;
			if (pd_buf_append(out, rec + at, r.pos - at))
				goto nomem;
			continue;
		}
		/* kind, flags and time; the rest of the header; the columns; the rest */
		struct v2_rd h = {rec, r.pos, at + 1, 0};
		v2_uv(&h);
		size_t fend = h.pos;
		v2_sv(&h);
		size_t tend = h.pos;
		nb.len = 0;
		if (pd_buf_append(&nb, rec + at, prev.col_at - at))
			goto nomem;
		int cr = columns(rec + prev.col_at, prev.col_end - prev.col_at, prev.col_ns,
		                 prev.col_nv, &nb);
		if (cr < 0)
			goto nomem;
		if (cr) {
			rc = pd_err_set(err, PD_ECORRUPT,
			                "value chunk record: columns do not read back");
			break;
		}
		if (pd_buf_append(&nb, rec + prev.col_end, r.pos - prev.col_end))
			goto nomem;
		/* the body: without the kind byte and the time field */
		size_t flen = fend - at - 1, tlen = tend - fend, blen = nb.len - 1 - tlen;
		const uint8_t *nbody = nb.data + 1 + flen + tlen;
		if (has_body && blen == body_len && !memcmp(body, nb.data + 1, flen) &&
		    !memcmp(body + flen, nbody, blen - flen)) {
			uint8_t k = KIND_REPEAT;
			if (pd_buf_append(out, &k, 1) ||
			    v2_put_sv(out, (int64_t)((uint64_t)prev.time_delta - (uint64_t)before)))
				goto nomem;
			++*nrep;
			continue;
		}
		if (pd_buf_append(out, nb.data, nb.len))
			goto nomem;
		has_body = blen <= V2_REPEAT_MAX;
		if (has_body) {
			memcpy(body, nb.data + 1, flen);
			memcpy(body + flen, nbody, blen - flen);
			body_len = blen;
		}
	}
	goto out;
nomem:
	rc = pd_err_set(err, PD_ENOMEM, "out of memory sealing a value chunk");
out:
	pd_buf_fini(&nb);
	v2_prev_fini(&prev);
	return rc;
}
