/* hc_replay.c: WAL replay with the head chunk files. The chunks read back from
 * the files are grouped by series; a chunk goes back into the head when the WAL
 * replays a sample in its time range (so the WAL decides what the head holds:
 * a chunk whose samples a checkpoint dropped, persisted in a block since, is
 * never taken), and the WAL's samples it holds are then not encoded again. What
 * the files do not hold (the open chunks, chunks lost to damage) the WAL
 * re-builds as before. */
#include <stdlib.h>
#include <string.h>

#include "head_chunks.h"
#include "hc_replay.h"

struct hc_group {
	size_t next, end;           /* chunks [next, end) of the list not yet taken */
	int64_t cov_mint, cov_maxt; /* the chunk taken last */
	int64_t last_t;             /* the newest WAL sample found in it */
	int covered;
};

struct hc_replay {
	struct hc_loaded *c; /* sorted by ref, then file order */
	size_t n;
	struct hc_group *g;
	size_t ng;
	struct pd_u64map refs; /* ref -> index in g */
	uint64_t taken, taken_samples;
};

struct ordered {
	struct hc_loaded c;
	size_t ord;
};

static int ordered_cmp(const void *a, const void *b)
{
	const struct ordered *x = a, *y = b;
	if (x->c.ref != y->c.ref)
		return x->c.ref < y->c.ref ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

int hc_replay_start(struct hc_replay **out, struct hc_loaded *c, size_t n, struct pd_err *err)
{
	struct hc_replay *r = calloc(1, sizeof(*r));
	struct ordered *o = malloc((n ? n : 1) * sizeof(*o));
	*out = NULL;
	if (!r || !o)
		goto nomem;
	pd_u64map_init(&r->refs);
	for (size_t i = 0; i < n; i++)
		o[i] = (struct ordered){c[i], i};
	qsort(o, n, sizeof(*o), ordered_cmp);
	for (size_t i = 0; i < n; i++)
		c[i] = o[i].c;
	free(o);
	o = NULL;
	r->c = c;
	r->n = n;
	if (!(r->g = calloc(n ? n : 1, sizeof(*r->g))))
		goto nomem;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && c[j].ref == c[i].ref)
			j++;
		r->g[r->ng] = (struct hc_group){i, j, 0, 0, 0, 0};
		if (pd_u64map_put(&r->refs, c[i].ref, (uint32_t)r->ng))
			goto nomem;
		r->ng++;
		i = j;
	}
	*out = r;
	return 0;
nomem:
	free(o);
	if (r) {
		r->c = NULL; /* the caller keeps c on failure */
		r->n = 0;
		hc_replay_end(r, NULL, NULL);
	}
	return pd_err_set(err, PD_ENOMEM, "out of memory reading the head chunk files");
}

int hc_replay_sample(struct hc_replay *r, struct head *h, struct head_series *s, uint64_t ref,
                     int64_t t)
{
	uint32_t gi;
	if (!r || !pd_u64map_get(&r->refs, ref, &gi))
		return 0;
	struct hc_group *g = &r->g[gi];
	/* chunks that end before this sample had none of theirs in the WAL: what
	 * they held is in a block already (the WAL was checkpointed since) */
	while (g->next < g->end && r->c[g->next].maxt < t)
		hcm_release(r->c[g->next++].file);
	if (g->next < g->end && r->c[g->next].mint <= t) {
		const struct hc_loaded *c = &r->c[g->next++];
		struct head_chunk hc = {c->mint,          c->maxt,   c->count,
		                        (uint8_t *)c->ts, c->ts_len, (uint8_t *)c->vals,
		                        c->vals_len,      c->file};
		struct pd_err err;
		if (head_attach_chunk(h, s, &hc, &err)) {
			/* it overlaps what the WAL re-built before it: the WAL's wins */
			hcm_release(c->file);
			return 0;
		}
		g->cov_mint = c->mint;
		g->cov_maxt = c->maxt;
		g->last_t = t;
		g->covered = 1;
		r->taken++;
		r->taken_samples += c->count;
		return 1;
	}
	if (g->covered && t >= g->cov_mint && t <= g->cov_maxt && t > g->last_t) {
		g->last_t = t;
		return 1;
	}
	return 0; /* a duplicate, or a sample after the chunks: replayed as before */
}

void hc_replay_end(struct hc_replay *r, uint64_t *chunks, uint64_t *samples)
{
	if (!r)
		return;
	if (chunks)
		*chunks = r->taken;
	if (samples)
		*samples = r->taken_samples;
	for (size_t i = 0; i < r->ng; i++)
		while (r->g[i].next < r->g[i].end)
			hcm_release(r->c[r->g[i].next++].file);
	pd_u64map_fini(&r->refs);
	free(r->g);
	free(r->c);
	free(r);
}
