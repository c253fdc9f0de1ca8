/* reader_block.c: a persisted block seen through the reader interface that the
 * head also implements. Label strings and chunk bytes come from the block's
 * mappings and stay valid while the block is open. */
#include <stdlib.h>
#include <string.h>

#include "tsdb_int.h"

static int copy_strs(const char **in, size_t n, char ***out, struct pd_err *err)
{
	*out = calloc(n ? n : 1, sizeof(char *));
	if (!*out)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (!((*out)[i] = strdup(in[i]))) {
			pd_storage_strings_free(*out, i);
			*out = NULL;
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		}
	return 0;
}

static int br_label_names(void *r, char ***out, size_t *n, struct pd_err *err)
{
	const char **v;
	int rc = pd_block_label_names(r, &v, n, err);
	if (rc)
		return rc;
	rc = copy_strs(v, *n, out, err);
	free(v);
	return rc;
}

static int br_label_values(void *r, const char *name, char ***out, size_t *n, struct pd_err *err)
{
	const char **v;
	int rc = pd_block_label_values(r, name, &v, n, err);
	if (rc)
		return rc;
	rc = copy_strs(v, *n, out, err);
	free(v);
	return rc;
}

static int br_postings(void *r, const char *name, const char *value, uint64_t **out, size_t *n,
		       struct pd_err *err)
{
	return pd_block_postings(r, name, value, out, n, err);
}

static int br_all_series(void *r, uint64_t **out, size_t *n, struct pd_err *err)
{
	return pd_block_all_series(r, out, n, err);
}

static int br_series(void *r, uint64_t ref, struct pd_lpair **labels, size_t *nl, struct rchunk **c,
		     size_t *nc, struct pd_err *err)
{
	struct pd_block_chunk_meta *m;
	int rc = pd_block_series(r, ref, labels, nl, &m, nc, err);
	if (rc)
		return rc;
	*c = malloc((*nc ? *nc : 1) * sizeof(**c));
	if (!*c) {
		free(m);
		free(*labels);
		*labels = NULL;
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < *nc; i++)
		(*c)[i] = (struct rchunk){m[i].mint, m[i].maxt, m[i].count, m[i].ts_ref, m[i].vals_ref};
	free(m);
	return 0;
}

static int br_chunk_ts(void *r, uint64_t series_ref, const struct rchunk *c, uint8_t **out,
		       size_t *len, struct pd_err *err)
{
	const uint8_t *p;
	(void)series_ref;
	int rc = pd_block_chunk_bytes(r, c->ts_ref, &p, len, err);
	if (rc)
		return rc;
	*out = malloc(*len ? *len : 1);
	if (!*out)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	memcpy(*out, p, *len);
	return 0;
}

static int br_chunk_value(void *r, uint64_t series_ref, const struct rchunk *c, size_t i,
			  int64_t t, const uint8_t *tsc, size_t tsl, size_t max_profile,
			  uint8_t **out, size_t *len, struct pd_err *err)
{
	const uint8_t *p;
	size_t n;
	(void)series_ref;
	(void)t;
	int rc = pd_block_chunk_bytes(r, c->vals_ref, &p, &n, err);
	if (rc)
		return rc;
	return pd_chunkenc_values_read_tc(p, n, tsc, tsl, i, max_profile, out, len, err);
}

static int br_chunk_merge(void *r, uint64_t series_ref, const struct rchunk *c, size_t from,
			  size_t to, const int64_t *ts, const uint8_t *tsc, size_t tsl,
			  size_t max_profile, pd_chunkenc_merge_fn emit, void *ctx,
			  struct pd_err *err)
{
	const uint8_t *p;
	size_t n;
	(void)series_ref;
	(void)ts;
	int rc = pd_block_chunk_bytes(r, c->vals_ref, &p, &n, err);
	if (rc)
		return rc;
	return pd_chunkenc_values_merge_tc(p, n, tsc, tsl, from, to, max_profile, emit, ctx, err);
}

static int br_tombstones(void *r, uint64_t ref, struct tomb_entry **out, size_t *n,
			 struct pd_err *err)
{
	const struct tomb_entry *e = tomb_find(pd_block_tombstones(r), ref, n);
	*out = NULL;
	if (!*n)
		return 0;
	if (!(*out = malloc(*n * sizeof(**out)))) {
		*n = 0;
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	memcpy(*out, e, *n * sizeof(**out));
	return 0;
}

const struct reader_ops block_reader_ops = {
	br_label_names, br_label_values, br_postings,    br_all_series, br_series,
	br_chunk_ts,    br_chunk_value,  br_chunk_merge, br_tombstones,
};
