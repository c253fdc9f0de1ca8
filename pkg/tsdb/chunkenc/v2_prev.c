/* v2_prev.c: the state a columnar value chunk's record coder carries from one
 * profile record to the next within a group, which encoding and decoding share:
 * the previous profile's time and the time field it was written with, its body
 * for a repeat to stand for, its mapping list, and its values by stack for the
 * delta-coded value columns, packed as varints (what an open chunk keeps between
 * appends) or, for a reader, in a dense table indexed by stack id. Layout:
 * docs/format/chunks.md, "Records". */
#include <stdlib.h>
#include <string.h>

#include "v2_int.h"

void v2_prev_reset(struct v2_prev *p)
{
	p->valid = 0;
	p->nmap = p->nby = p->nvalues = 0;
	p->time_nanos = 0;
	p->has_body = 0;
	p->body_len = p->body_flen = 0;
	p->time_delta = 0;
	p->run_left = 0;
}

/* The time field of a record for time t, and the time a field stands for: the
 * difference from the base (the sample's timestamp) in a chunk of relative
 * times, else from the previous record's time (from 0 for a group's first). */
int64_t v2_time_field(const struct v2_prev *p, int64_t t)
{
	uint64_t from = p->rel ? (uint64_t)p->base : p->valid ? (uint64_t)p->time_nanos : 0;
	return (int64_t)((uint64_t)t - from);
}

int64_t v2_time_of(const struct v2_prev *p, int64_t field)
{
	uint64_t from = p->rel ? (uint64_t)p->base : p->valid ? (uint64_t)p->time_nanos : 0;
	return (int64_t)((uint64_t)field + from);
}

/* After a profile record has been coded: keeps its body (rec, len: the record
 * from its flags on; flen bytes of flags, then tlen of time) for the next record
 * to repeat, and the time difference it was written with (field; 0 when the
 * record was its group's first). */
void v2_prev_body(struct v2_prev *p, const uint8_t *rec, size_t len, size_t flen, size_t tlen,
		  int64_t field, int first)
{
	p->time_delta = first && !p->rel ? 0 : field;
	p->has_body = 0;
	if (len - tlen > V2_REPEAT_MAX)
		return;
	memcpy(p->body, rec, flen);
	memcpy(p->body + flen, rec + flen + tlen, len - flen - tlen);
	p->body_flen = flen;
	p->body_len = len - tlen;
	p->has_body = 1;
}

void v2_prev_fini(struct v2_prev *p)
{
	free(p->map_idx);
	free(p->map_id);
	free(p->packed);
	free(p->mark);
	free(p->dval);
	free(p->sstack);
	free(p->svals);
	free(p->sflag);
	memset(p, 0, sizeof(*p));
}

/* Most values a dense state holds (rows × values per row); past it, a state
 * falls back to the packed form, which grows with the samples only. */
#define DENSE_MAX_VALUES ((size_t)1 << 21)

/* Makes the dense table at least rows rows of cols values (cols 0: whatever
 * it holds, none when it grows); 0, or -1 when it would pass DENSE_MAX_VALUES or
 * memory runs out. Rows are marked current only by the v2_prev_set that follows,
 * which writes them, so values need not survive a change of layout. */
static int dense_grow(struct v2_prev *p, size_t rows, size_t cols)
{
	if (rows < p->drows)
		rows = p->drows;
	if (cols && rows > DENSE_MAX_VALUES / cols)
		return -1;
	if (rows > p->drows) {
		uint32_t *m = p->mark ? realloc(p->mark, rows * sizeof(*m)) : calloc(rows, sizeof(*m));
		if (!m)
			return -1;
		if (p->mark)
			memset(m + p->drows, 0, (rows - p->drows) * sizeof(*m));
		p->mark = m;
	}
	if (rows > p->drows || cols > p->dcols) {
		free(p->dval);
		p->dval = NULL;
		p->dcols = 0;
		p->drows = rows;
		if (cols && !(p->dval = malloc(rows * cols * sizeof(*p->dval))))
			return -1;
		p->dcols = cols;
	}
	return 0;
}

void v2_prev_dense(struct v2_prev *p, size_t nnode)
{
	/* a table too large, or no memory for it: the packed form, as appenders
	 * keep it */
	p->dense = nnode < DENSE_MAX_VALUES && dense_grow(p, nnode + 1, 0) == 0;
}

/* Scratch arrays of a dense reader, grown to at least n entries. */
int v2_scratch(void **a, size_t *cap, size_t n, size_t size)
{
	if (n <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < n)
		c = c > SIZE_MAX / 2 / size ? n : c * 2;
	void *x = realloc(*a, c * size);
	if (!x)
		return PD_ENOMEM;
	*a = x;
	*cap = c;
	return 0;
}

void v2_prev_view_fini(struct v2_prev_view *v)
{
	free(v->stack);
	free(v->values);
	memset(v, 0, sizeof(*v));
}

int v2_prev_view_of(const struct v2_prev *p, struct v2_prev_view *v)
{
	memset(v, 0, sizeof(*v));
	v->stack = malloc((p->nby + 1) * sizeof(*v->stack));
	v->values = malloc((p->nby * p->nvalues + 1) * sizeof(*v->values));
	if (!v->stack || !v->values) {
		v2_prev_view_fini(v);
		return PD_ENOMEM;
	}
	struct v2_rd r = {p->packed, p->packed_len, 0, 0};
	uint32_t st = 0;
	for (size_t i = 0; i < p->nby; i++) {
		v->stack[i] = st = (uint32_t)(st + v2_uv(&r));
		for (size_t j = 0; j < p->nvalues; j++)
			v->values[i * p->nvalues + j] = v2_sv(&r);
	}
	v->n = p->nby;
	v->nvalues = p->nvalues;
	return 0;
}

/* The previous profile's values of a stack, or NULL. */
const int64_t *v2_prev_values(const struct v2_prev_view *v, uint32_t stack)
{
	size_t lo = 0, hi = v->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->stack[mid] < stack)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->n && v->stack[lo] == stack ? v->values + lo * v->nvalues : NULL;
}

/* pvs[i]: the previous profile's values of stack stacks[i], or NULL; pview holds
 * what a packed state unpacks to (free with v2_prev_view_fini). p is valid. */
int v2_prev_lookup(const struct v2_prev *p, const uint32_t *stacks, size_t ns,
		   const int64_t **pvs, struct v2_prev_view *pview)
{
	memset(pview, 0, sizeof(*pview));
	if (p->dense) {
		for (size_t i = 0; i < ns; i++)
			pvs[i] = v2_dense_values(p, stacks[i]);
		return 0;
	}
	if (v2_prev_view_of(p, pview))
		return PD_ENOMEM;
	for (size_t i = 0; i < ns; i++)
		pvs[i] = v2_prev_values(pview, stacks[i]);
	return 0;
}

struct sidx {
	uint32_t stack, i;
};

static int sidx_cmp(const void *a, const void *b)
{
	const struct sidx *x = a, *y = b;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The mapping list of prev, as the profile's (which may be prev's own). */
static int prev_set_maps(struct v2_prev *p, const uint32_t *map_idx, const uint64_t *map_id,
			 size_t nmap)
{
	if (map_idx == p->map_idx && map_id == p->map_id && nmap == p->nmap)
		return 0;
	uint32_t *mi = realloc(p->map_idx, (nmap ? nmap : 1) * sizeof(*mi));
	if (mi)
		p->map_idx = mi;
	uint64_t *md = realloc(p->map_id, (nmap ? nmap : 1) * sizeof(*md));
	if (md)
		p->map_id = md;
	if (!mi || !md)
		return PD_ENOMEM;
	if (nmap) {
		memcpy(p->map_idx, map_idx, nmap * sizeof(*map_idx));
		memcpy(p->map_id, map_id, nmap * sizeof(*map_id));
	}
	p->nmap = nmap;
	return 0;
}

/* v2_prev_set for a dense state: the rows of the profile's stacks (its first
 * sample of each) become current, every other row stale. 1 when the table
 * would be too large: the state is then to be packed. */
static int prev_set_dense(struct v2_prev *p, const uint32_t *stacks, const int64_t *values,
			  size_t nsample, size_t nvalues)
{
	uint32_t top = 0;
	for (size_t i = 0; i < nsample; i++)
		top = stacks[i] > top ? stacks[i] : top;
	if (dense_grow(p, (size_t)top + 1, nvalues))
		return 1;
	if (++p->gen == 0) {
		memset(p->mark, 0, p->drows * sizeof(*p->mark));
		p->gen = 1;
	}
	uint32_t g = p->gen;
	for (size_t i = 0; i < nsample; i++) {
		uint32_t st = stacks[i];
		if (p->mark[st] == g)
			continue;
		p->mark[st] = g;
		if (nvalues)
			memcpy(p->dval + (size_t)st * nvalues, values + i * nvalues,
			       nvalues * sizeof(*values));
	}
	return 0;
}

/* Makes prev describe a profile: time, mappings, and values by stack. */
int v2_prev_set(struct v2_prev *p, int64_t time_nanos, const uint32_t *map_idx,
		const uint64_t *map_id, size_t nmap, const uint32_t *stacks,
		const int64_t *values, size_t nsample, size_t nvalues)
{
	p->valid = 0;
	if (prev_set_maps(p, map_idx, map_id, nmap))
		return PD_ENOMEM;
	if (p->dense) {
		if (prev_set_dense(p, stacks, values, nsample, nvalues) == 0) {
			p->nby = 0;
			p->nvalues = nvalues;
			p->time_nanos = time_nanos;
			p->valid = 1;
			return 0;
		}
		p->dense = 0; /* too large a table: packed from here on */
	}
	struct sidx *s = malloc((nsample ? nsample : 1) * sizeof(*s));
	if (!s)
		return PD_ENOMEM;
	for (size_t i = 0; i < nsample; i++)
		s[i] = (struct sidx){stacks[i], (uint32_t)i};
	qsort(s, nsample, sizeof(*s), sidx_cmp);
	struct pd_buf b;
	pd_buf_init(&b, 0);
	size_t n = 0;
	uint32_t last = 0;
	int e = 0;
	for (size_t i = 0; i < nsample; i++) {
		if (n && last == s[i].stack)
			continue;
		e |= v2_put_uv(&b, s[i].stack - last);
		last = s[i].stack;
		for (size_t j = 0; j < nvalues; j++)
			e |= v2_put_sv(&b, values[(size_t)s[i].i * nvalues + j]);
		n++;
	}
	free(s);
	if (e) {
		pd_buf_fini(&b);
		return PD_ENOMEM;
	}
	free(p->packed);
	p->packed = pd_buf_steal(&b, &p->packed_len);
	if (p->packed_len) {
		uint8_t *x = realloc(p->packed, p->packed_len); /* exact: kept between appends */
		if (x)
			p->packed = x;
	}
	p->nby = n;
	p->nvalues = nvalues;
	p->time_nanos = time_nanos;
	p->valid = 1;
	return 0;
}
