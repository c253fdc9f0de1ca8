/* index_write.c: the index writer. Series arrive in label order; their label
 * strings are interned and kept with their chunk metas until the end, when the
 * full symbol table is known and the index is written section by section:
 *
 *   ┌────────────────────────────────────────────┐
 *   │ magic "PDIX" <4B> │ version <1B> │ 0 <3B>  │
 *   ├────────────────────────────────────────────┤
 *   │ symbol table                               │  each section:
 *   ├────────────────────────────────────────────┤  len <8B BE> │ content │ CRC32C <4B BE>
 *   │ series (entries aligned to 16 bytes)       │
 *   ├────────────────────────────────────────────┤
 *   │ postings (the all-series list first)       │
 *   ├────────────────────────────────────────────┤
 *   │ postings offset table                      │
 *   ├────────────────────────────────────────────┤
 *   │ TOC: 4 section offsets <8B BE> │ CRC32C    │
 *   └────────────────────────────────────────────┘
 *
 * A series ref is the file offset of its entry divided by 16. Symbols are
 * referred to by their number in the sorted table, so comparing two references
 * compares the strings. Full specification: docs/format/index.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_int.h"
#include "wal.h"

struct sym {
	const char *s;
	size_t len;
	uint64_t hash;
};

struct iw_series {
	size_t label_off; /* in labels[], two ids per label */
	size_t nlabels;
	size_t chunk_off;
	size_t nchunks;
};

struct pd_index_writer {
	struct pd_arena *strs;
	struct sym *syms;
	size_t nsyms, syms_cap;
	uint32_t *slots; /* open addressing: symbol id + 1, 0 when empty */
	size_t slots_cap;
	uint32_t *labels;
	size_t nlabels, labels_cap;
	struct iw_series *series;
	size_t nseries, series_cap;
	struct pd_block_chunk_meta *chunks;
	size_t nchunks, chunks_cap;
};

/* Makes room for one more element of size in *p; 0 or PD_ENOMEM. */
static int grow(void **p, size_t *cap, size_t len, size_t add, size_t size)
{
	if (add <= *cap - len)
		return 0;
	if (add > SIZE_MAX / size - len)
		return PD_ENOMEM;
	size_t c = *cap ? *cap : 64;
	while (c < len + add)
		c = c > SIZE_MAX / size / 2 ? len + add : c * 2;
	void *q = realloc(*p, c * size);
	if (!q)
		return PD_ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

struct pd_index_writer *pd_index_writer_create(void)
{
	struct pd_index_writer *iw = calloc(1, sizeof(*iw));
	if (iw && !(iw->strs = pd_arena_create(0))) {
		free(iw);
		return NULL;
	}
	return iw;
}

void pd_index_writer_destroy(struct pd_index_writer *iw)
{
	if (!iw)
		return;
	pd_arena_destroy(iw->strs);
	free(iw->syms);
	free(iw->slots);
	free(iw->labels);
	free(iw->series);
	free(iw->chunks);
	free(iw);
}

static int intern(struct pd_index_writer *iw, const char *s, uint32_t *id)
{
	size_t len = strlen(s);
	uint64_t h = pd_hash_bytes(s, len, 0);

	if (iw->nsyms + 1 > iw->slots_cap / 2) {
		size_t cap = iw->slots_cap ? iw->slots_cap * 2 : 1024;
		uint32_t *slots = calloc(cap, sizeof(*slots));
		if (!slots)
			return PD_ENOMEM;
		for (size_t i = 0; i < iw->nsyms; i++) {
			size_t k = iw->syms[i].hash & (cap - 1);
			while (slots[k])
				k = (k + 1) & (cap - 1);
			slots[k] = (uint32_t)i + 1;
		}
		free(iw->slots);
		iw->slots = slots;
		iw->slots_cap = cap;
	}
	size_t k = h & (iw->slots_cap - 1);
	for (; iw->slots[k]; k = (k + 1) & (iw->slots_cap - 1)) {
		const struct sym *y = &iw->syms[iw->slots[k] - 1];
		if (y->hash == h && y->len == len && !memcmp(y->s, s, len)) {
			*id = iw->slots[k] - 1;
			return 0;
		}
	}
	if (iw->nsyms >= UINT32_MAX - 1)
		return PD_ETOOBIG;
	if (grow((void **)&iw->syms, &iw->syms_cap, iw->nsyms, 1, sizeof(*iw->syms)))
		return PD_ENOMEM;
	char *copy = pd_arena_strndup(iw->strs, s, len);
	if (!copy)
		return PD_ENOMEM;
	iw->syms[iw->nsyms] = (struct sym){copy, len, h};
	iw->slots[k] = (uint32_t)iw->nsyms + 1;
	*id = (uint32_t)iw->nsyms++;
	return 0;
}

/* Writes {a="b", ...} into buf, cut short if it does not fit. */
static const char *fmt_labels(char *buf, size_t size, const struct pd_lpair *l, size_t n)
{
	size_t o = 0;
	int w = snprintf(buf, size, "{");
	for (size_t i = 0; i < n && w >= 0 && (o += (size_t)w) < size; i++)
		w = snprintf(buf + o, size - o, "%s%s=\"%s\"", i ? ", " : "",
			     l[i].name ? l[i].name : "(null)", l[i].value ? l[i].value : "(null)");
	if (w >= 0 && (o += (size_t)w) < size)
		snprintf(buf + o, size - o, "}");
	return buf;
}

int pd_index_writer_check(const struct pd_index_writer *iw, const struct pd_lpair *labels,
			  size_t n, struct pd_err *err)
{
	char b1[200], b2[200];

	if (n == 0)
		return pd_err_set(err, PD_EINVAL, "series has no labels");
	for (size_t i = 0; i < n; i++) {
		if (!labels[i].name || !labels[i].value)
			return pd_err_set(err, PD_EINVAL, "series label %zu is NULL", i);
		if (!labels[i].name[0])
			return pd_err_set(err, PD_EINVAL, "series %s has an empty label name",
					  fmt_labels(b1, sizeof(b1), labels, n));
		if (i > 0 && strcmp(labels[i - 1].name, labels[i].name) >= 0)
			return pd_err_set(err, PD_EINVAL,
					  "series %s: label names are not sorted and unique",
					  fmt_labels(b1, sizeof(b1), labels, n));
	}
	if (!iw->nseries)
		return 0;
	const struct iw_series *last = &iw->series[iw->nseries - 1];
	const uint32_t *ll = iw->labels + last->label_off;
	int c = 0;
	for (size_t i = 0; i < n && i < last->nlabels && !c; i++) {
		c = strcmp(labels[i].name, iw->syms[ll[2 * i]].s);
		if (!c)
			c = strcmp(labels[i].value, iw->syms[ll[2 * i + 1]].s);
	}
	if (!c)
		c = n < last->nlabels ? -1 : n > last->nlabels;
	if (c > 0)
		return 0;
	struct pd_lpair prev[64];
	size_t np = last->nlabels < 64 ? last->nlabels : 64;
	for (size_t i = 0; i < np; i++)
		prev[i] = (struct pd_lpair){iw->syms[ll[2 * i]].s, iw->syms[ll[2 * i + 1]].s};
	if (c == 0)
		return pd_err_set(err, PD_EINVAL, "series %s added twice",
				  fmt_labels(b1, sizeof(b1), labels, n));
	return pd_err_set(err, PD_EINVAL, "series %s added after %s: series must come in label order",
			  fmt_labels(b1, sizeof(b1), labels, n), fmt_labels(b2, sizeof(b2), prev, np));
}

int pd_index_writer_add(struct pd_index_writer *iw, const struct pd_lpair *labels, size_t n,
			const struct pd_block_chunk_meta *chunks, size_t nchunks, struct pd_err *err)
{
	if (grow((void **)&iw->labels, &iw->labels_cap, iw->nlabels, 2 * n, sizeof(*iw->labels)) ||
	    grow((void **)&iw->chunks, &iw->chunks_cap, iw->nchunks, nchunks, sizeof(*iw->chunks)) ||
	    grow((void **)&iw->series, &iw->series_cap, iw->nseries, 1, sizeof(*iw->series)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int rc;
		if ((rc = intern(iw, labels[i].name, &iw->labels[iw->nlabels + 2 * i])) ||
		    (rc = intern(iw, labels[i].value, &iw->labels[iw->nlabels + 2 * i + 1])))
			return pd_err_set(err, rc, "index: cannot add symbol: %s", pd_strerror(rc));
	}
	if (nchunks)
		memcpy(iw->chunks + iw->nchunks, chunks, nchunks * sizeof(*chunks));
	iw->series[iw->nseries++] = (struct iw_series){iw->nlabels, n, iw->nchunks, nchunks};
	iw->nlabels += 2 * n;
	iw->nchunks += nchunks;
	return 0;
}

/* ---- writing the file ----------------------------------------------------- */

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = *(const struct sym *const *)a, *y = *(const struct sym *const *)b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

struct posting {
	uint32_t name, value, series;
};

static int posting_cmp(const void *a, const void *b)
{
	const struct posting *x = a, *y = b;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return (x->series > y->series) - (x->series < y->series);
}

static int section_begin(struct pd_bfile *f, uint64_t *start, struct pd_err *err)
{
	static const uint8_t zero[8];
	*start = f->off;
	int rc = pd_bfile_write(f, zero, 8, err);
	f->crc = 0;
	f->crc_on = 1;
	return rc;
}

static int section_end(struct pd_bfile *f, uint64_t start, struct pd_err *err)
{
	uint8_t b[8];
	f->crc_on = 0;
	pd_put_be32(b, f->crc);
	int rc = pd_bfile_write(f, b, 4, err);
	if (rc)
		return rc;
	pd_put_be64(b, f->off - start - PD_SECTION_OVERHEAD);
	return pd_bfile_patch(f, start, b, 8, err);
}

static int put_uv(struct pd_buf *b, uint64_t v)
{
	uint8_t t[10];
	return pd_buf_append(b, t, pd_put_uvarint(t, v));
}

static int encode_series(const struct pd_index_writer *iw, const struct iw_series *s,
			 const uint32_t *ord, struct pd_buf *b)
{
	const uint32_t *l = iw->labels + s->label_off;
	const struct pd_block_chunk_meta *c = iw->chunks + s->chunk_off;
	int rc = put_uv(b, s->nlabels);
	for (size_t i = 0; i < 2 * s->nlabels && !rc; i++)
		rc = put_uv(b, ord[l[i]]);
	if (!rc)
		rc = put_uv(b, s->nchunks);
	for (size_t i = 0; i < s->nchunks && !rc; i++) {
		if (i == 0)
			rc = put_uv(b, ((uint64_t)c[i].mint << 1) ^ (uint64_t)(c[i].mint >> 63));
		else
			rc = put_uv(b, (uint64_t)c[i].mint - (uint64_t)c[i - 1].maxt);
		if (!rc)
			rc = put_uv(b, (uint64_t)c[i].maxt - (uint64_t)c[i].mint);
		if (!rc)
			rc = put_uv(b, c[i].count);
		if (!rc)
			rc = put_uv(b, c[i].ts_ref);
		if (!rc)
			rc = put_uv(b, c[i].vals_ref);
	}
	return rc;
}

static int write_postings_list(struct pd_bfile *f, const uint32_t *refs, const struct posting *p,
			       size_t n, struct pd_err *err)
{
	uint8_t b[4];
	pd_put_be32(b, (uint32_t)n);
	int rc = pd_bfile_write(f, b, 4, err);
	for (size_t i = 0; i < n && !rc; i++) {
		pd_put_be32(b, refs[p ? p[i].series : i]);
		rc = pd_bfile_write(f, b, 4, err);
	}
	return rc;
}

int pd_index_writer_write(struct pd_index_writer *iw, const char *path, struct pd_err *err)
{
	struct sym **sorted = NULL;
	uint32_t *ord = NULL, *refs = NULL, empty;
	struct posting *post = NULL;
	struct pd_index_pot_entry *pot = NULL;
	struct pd_bfile *f = NULL;
	struct pd_buf b;
	uint64_t toc[4];
	size_t npost = iw->nlabels / 2, npot = 0;
	uint8_t tmp[16];
	int rc;

	pd_buf_init(&b, 0);
	if ((rc = intern(iw, "", &empty))) { /* the all-series key ("", "") */
		rc = pd_err_set(err, rc, "%s: cannot add symbol: %s", path, pd_strerror(rc));
		goto fail;
	}
	if (!(sorted = malloc(iw->nsyms * sizeof(*sorted))) ||
	    !(ord = malloc(iw->nsyms * sizeof(*ord))) ||
	    !(refs = malloc((iw->nseries + 1) * sizeof(*refs))) ||
	    !(post = malloc((npost + 1) * sizeof(*post))) ||
	    !(pot = malloc((npost + 1) * sizeof(*pot)))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < iw->nsyms; i++)
		sorted[i] = &iw->syms[i];
	qsort(sorted, iw->nsyms, sizeof(*sorted), sym_cmp);
	for (size_t i = 0; i < iw->nsyms; i++)
		ord[sorted[i] - iw->syms] = (uint32_t)i;

	if ((rc = pd_bfile_create(&f, path, err)))
		goto fail;
	memset(tmp, 0, PD_INDEX_HEADER_SIZE);
	pd_put_be32(tmp, PD_INDEX_MAGIC);
	tmp[4] = PD_INDEX_VERSION;
	if ((rc = pd_bfile_write(f, tmp, PD_INDEX_HEADER_SIZE, err)))
		goto fail;

	/* symbols */
	if ((rc = section_begin(f, &toc[0], err)))
		goto fail;
	pd_put_be32(tmp, (uint32_t)iw->nsyms);
	if ((rc = pd_bfile_write(f, tmp, 4, err)))
		goto fail;
	for (size_t i = 0; i < iw->nsyms; i++) {
		size_t n = pd_put_uvarint(tmp, sorted[i]->len);
		if ((rc = pd_bfile_write(f, tmp, n, err)) ||
		    (rc = pd_bfile_write(f, sorted[i]->s, sorted[i]->len + 1, err))) /* with NUL */
			goto fail;
	}
	if ((rc = section_end(f, toc[0], err)))
		goto fail;

	/* series */
	if ((rc = section_begin(f, &toc[1], err)))
		goto fail;
	for (size_t i = 0; i < iw->nseries; i++) {
		static const uint8_t zero[PD_INDEX_SERIES_ALIGN];
		size_t pad = (size_t)((PD_INDEX_SERIES_ALIGN - f->off % PD_INDEX_SERIES_ALIGN) %
				      PD_INDEX_SERIES_ALIGN);
		if ((rc = pd_bfile_write(f, zero, pad, err)))
			goto fail;
		if (f->off / PD_INDEX_SERIES_ALIGN > UINT32_MAX) {
			rc = pd_err_set(err, PD_ETOOBIG, "%s: series refs past 32 bits (index > 64 GiB)",
					path);
			goto fail;
		}
		refs[i] = (uint32_t)(f->off / PD_INDEX_SERIES_ALIGN);
		b.len = 0;
		if ((rc = encode_series(iw, &iw->series[i], ord, &b))) {
			rc = pd_err_set(err, rc, "%s: %s", path, pd_strerror(rc));
			goto fail;
		}
		size_t n = pd_put_uvarint(tmp, b.len);
		if ((rc = pd_bfile_write(f, tmp, n, err)) || (rc = pd_bfile_write(f, b.data, b.len, err)))
			goto fail;
	}
	if ((rc = section_end(f, toc[1], err)))
		goto fail;

	/* postings: all series, then one list per (name, value) in order */
	for (size_t i = 0, k = 0; i < iw->nseries; i++) {
		const struct iw_series *s = &iw->series[i];
		for (size_t j = 0; j < s->nlabels; j++, k++)
			post[k] = (struct posting){ord[iw->labels[s->label_off + 2 * j]],
						   ord[iw->labels[s->label_off + 2 * j + 1]],
						   (uint32_t)i};
	}
	qsort(post, npost, sizeof(*post), posting_cmp);
	if ((rc = section_begin(f, &toc[2], err)))
		goto fail;
	pot[npot++] = (struct pd_index_pot_entry){ord[empty], ord[empty], f->off};
	if ((rc = write_postings_list(f, refs, NULL, iw->nseries, err)))
		goto fail;
	for (size_t i = 0; i < npost;) {
		size_t j = i;
		while (j < npost && post[j].name == post[i].name && post[j].value == post[i].value)
			j++;
		pot[npot++] = (struct pd_index_pot_entry){post[i].name, post[i].value, f->off};
		if ((rc = write_postings_list(f, refs, post + i, j - i, err)))
			goto fail;
		i = j;
	}
	if ((rc = section_end(f, toc[2], err)))
		goto fail;

	/* postings offset table */
	if (npot > UINT32_MAX) {
		rc = pd_err_set(err, PD_ETOOBIG, "%s: more than 2^32 label pairs", path);
		goto fail;
	}
	if ((rc = section_begin(f, &toc[3], err)))
		goto fail;
	pd_put_be32(tmp, (uint32_t)npot);
	if ((rc = pd_bfile_write(f, tmp, 4, err)))
		goto fail;
	for (size_t i = 0; i < npot; i++) {
		uint8_t e[30];
		size_t n = pd_put_uvarint(e, pot[i].name);
		n += pd_put_uvarint(e + n, pot[i].value);
		n += pd_put_uvarint(e + n, pot[i].off);
		if ((rc = pd_bfile_write(f, e, n, err)))
			goto fail;
	}
	if ((rc = section_end(f, toc[3], err)))
		goto fail;

	/* table of contents */
	uint8_t t[PD_INDEX_TOC_SIZE];
	for (int i = 0; i < 4; i++)
		pd_put_be64(t + 8 * i, toc[i]);
	pd_put_be32(t + 32, pd_crc32c(0, t, 32));
	if ((rc = pd_bfile_write(f, t, sizeof(t), err)))
		goto fail;
	rc = pd_bfile_close(f, err);
	f = NULL;
fail:
	pd_bfile_discard(f);
	pd_buf_fini(&b);
	free(sorted);
	free(ord);
	free(refs);
	free(post);
	free(pot);
	return rc;
}
