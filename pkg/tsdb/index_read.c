/* index_read.c: reading a block's index. The file is mapped read-only; opening
 * it checks the header, the table of contents and every section's CRC32C, then
 * loads the symbol table (pointers into the mapping: each symbol is stored with
 * a terminating NUL) and the postings offset table. Lookups binary-search those
 * two sorted tables; series entries and postings lists are decoded on demand,
 * with every integer bounds-checked, since the file is outside input.
 * Format: docs/format/index.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block_int.h"
#include "profd/chunkenc.h"
#include "wal.h"

static const char *const section_name[4] = {"symbol table", "series", "postings",
					    "postings offset table"};

/* "<path>: <section>: <message>" */
static int corrupt(const struct pd_index *ix, struct pd_err *err, const char *section,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int corrupt(const struct pd_index *ix, struct pd_err *err, const char *section,
		   const char *fmt, ...)
{
	char msg[PD_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pd_err_set(err, PD_ECORRUPT, "%s: %s: %s", ix->path, section, msg);
}

void pd_index_close(struct pd_index *ix)
{
	if (ix->map)
		munmap((void *)ix->map, ix->size);
	free(ix->path);
	free(ix->sym);
	free(ix->pot);
	memset(ix, 0, sizeof(*ix));
}

static int load_symbols(struct pd_index *ix, uint64_t begin, uint64_t end, struct pd_err *err)
{
	const char *sec = section_name[0];
	struct pd_dec d;
	pd_dec_init(&d, ix->map + begin, (size_t)(end - begin));
	uint32_t n = pd_dec_be32(&d);
	if (d.err)
		return corrupt(ix, err, sec, "too short for the symbol count");
	if (n == 0 || n > pd_dec_left(&d) / 2)
		return corrupt(ix, err, sec, "%u symbols cannot fit in %zu bytes", n,
			       pd_dec_left(&d));
	if (!(ix->sym = malloc(n * sizeof(*ix->sym))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t len = pd_dec_uvarint(&d);
		if (len >= pd_dec_left(&d))
			d.err = 1;
		const char *s = (const char *)pd_dec_bytes(&d, len + 1);
		if (d.err)
			return corrupt(ix, err, sec, "symbol %u runs past the end of the section", i);
		if (s[len] != '\0' || memchr(s, 0, (size_t)len))
			return corrupt(ix, err, sec, "symbol %u is not a NUL-terminated string of %llu bytes",
				       i, (unsigned long long)len);
		if (i > 0 && strcmp(ix->sym[i - 1], s) >= 0)
			return corrupt(ix, err, sec, "symbol %u is out of order", i);
		ix->sym[i] = s;
	}
	if (pd_dec_left(&d))
		return corrupt(ix, err, sec, "%zu bytes after the last symbol", pd_dec_left(&d));
	ix->nsyms = n;
	return 0;
}

static int load_pot(struct pd_index *ix, uint64_t begin, uint64_t end, struct pd_err *err)
{
	const char *sec = section_name[3];
	struct pd_dec d;
	pd_dec_init(&d, ix->map + begin, (size_t)(end - begin));
	uint32_t n = pd_dec_be32(&d);
	if (d.err)
		return corrupt(ix, err, sec, "too short for the entry count");
	if (n == 0 || n > pd_dec_left(&d) / 3)
		return corrupt(ix, err, sec, "%u entries cannot fit in %zu bytes", n, pd_dec_left(&d));
	if (!(ix->pot = malloc(n * sizeof(*ix->pot))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t name = pd_dec_uvarint(&d), value = pd_dec_uvarint(&d);
		uint64_t off = pd_dec_uvarint(&d);
		if (d.err)
			return corrupt(ix, err, sec, "entry %u runs past the end of the section", i);
		if (name >= ix->nsyms || value >= ix->nsyms)
			return corrupt(ix, err, sec, "entry %u refers to a symbol past the table's %u", i,
				       ix->nsyms);
		struct pd_index_pot_entry *e = &ix->pot[i];
		*e = (struct pd_index_pot_entry){(uint32_t)name, (uint32_t)value, off};
		if (i > 0 && (e[-1].name > e->name || (e[-1].name == e->name && e[-1].value >= e->value)))
			return corrupt(ix, err, sec, "entry %u is out of order", i);
		if ((i == 0) != (ix->sym[e->name][0] == '\0') || (i == 0 && ix->sym[e->value][0]))
			return corrupt(ix, err, sec, "entry %u: %s", i,
				       i ? "empty label name" : "the all-series entry is missing");
		if (off < ix->postings_begin || off > ix->postings_end - 4 ||
		    pd_get_be32(ix->map + off) > (ix->postings_end - off - 4) / 4)
			return corrupt(ix, err, sec,
				       "entry %u points to a postings list outside the postings section",
				       i);
	}
	if (pd_dec_left(&d))
		return corrupt(ix, err, sec, "%zu bytes after the last entry", pd_dec_left(&d));
	ix->npot = n;
	ix->all_off = ix->pot[0].off;
	return 0;
}

int pd_index_open(struct pd_index *ix, const char *path, struct pd_err *err)
{
	struct stat st;
	uint64_t off[4], begin[4], end[4];
	int fd = -1, rc;

	memset(ix, 0, sizeof(*ix));
	if (!(ix->path = strdup(path)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st)) {
		rc = pd_err_set(err, errno == ENOENT ? PD_ENOTFOUND : PD_EIO, "%s: %s", path,
				strerror(errno));
		goto fail;
	}
	const uint64_t min = PD_INDEX_HEADER_SIZE + 4 * PD_SECTION_OVERHEAD + PD_INDEX_TOC_SIZE;
	if ((uint64_t)st.st_size < min) {
		rc = pd_err_set(err, PD_ECORRUPT, "%s: %lld bytes is too short for an index", path,
				(long long)st.st_size);
		goto fail;
	}
	if ((uint64_t)st.st_size > SIZE_MAX) {
		rc = pd_err_set(err, PD_ETOOBIG, "%s: too large to map", path);
		goto fail;
	}
	ix->size = (size_t)st.st_size;
	void *m = mmap(NULL, ix->size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		rc = pd_err_set(err, PD_EIO, "%s: mmap: %s", path, strerror(errno));
		goto fail;
	}
	ix->map = m;
	close(fd);
	fd = -1;

	if (pd_get_be32(ix->map) != PD_INDEX_MAGIC) {
		rc = corrupt(ix, err, "header", "bad magic %08x, not a profd index",
			     pd_get_be32(ix->map));
		goto fail;
	}
	if (ix->map[4] != PD_INDEX_VERSION || ix->map[5] || ix->map[6] || ix->map[7]) {
		rc = corrupt(ix, err, "header", "unsupported index version %u", ix->map[4]);
		goto fail;
	}
	const uint64_t toc = ix->size - PD_INDEX_TOC_SIZE;
	if (pd_crc32c(0, ix->map + toc, 32) != pd_get_be32(ix->map + toc + 32)) {
		rc = corrupt(ix, err, "table of contents", "CRC mismatch (file truncated or damaged)");
		goto fail;
	}
	uint64_t prev = PD_INDEX_HEADER_SIZE;
	for (int i = 0; i < 4; i++) {
		off[i] = pd_get_be64(ix->map + toc + 8 * i);
		if (off[i] < prev || off[i] > toc - PD_SECTION_OVERHEAD) {
			rc = corrupt(ix, err, section_name[i], "offset %llu is out of bounds",
				     (unsigned long long)off[i]);
			goto fail;
		}
		uint64_t len = pd_get_be64(ix->map + off[i]);
		if (len > toc - off[i] - PD_SECTION_OVERHEAD) {
			rc = corrupt(ix, err, section_name[i], "length %llu runs past the end of the file",
				     (unsigned long long)len);
			goto fail;
		}
		begin[i] = off[i] + 8;
		end[i] = begin[i] + len;
		if (pd_crc32c(0, ix->map + begin[i], (size_t)len) != pd_get_be32(ix->map + end[i])) {
			rc = corrupt(ix, err, section_name[i], "CRC mismatch");
			goto fail;
		}
		prev = end[i] + 4;
	}
	ix->series_begin = begin[1];
	ix->series_end = end[1];
	ix->postings_begin = begin[2];
	ix->postings_end = end[2];
	if (end[2] - begin[2] < 4) {
		rc = corrupt(ix, err, section_name[2], "no all-series list");
		goto fail;
	}
	if ((rc = load_symbols(ix, begin[0], end[0], err)) ||
	    (rc = load_pot(ix, begin[3], end[3], err)))
		goto fail;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	pd_index_close(ix);
	return rc;
}

/* ---- lookups -------------------------------------------------------------- */

/* Symbol number of s, or -1. */
static int64_t find_symbol(const struct pd_index *ix, const char *s)
{
	size_t lo = 0, hi = ix->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ix->sym[mid], s);
		if (c == 0)
			return (int64_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* First postings offset table entry not below (name, value). */
static size_t pot_lower_bound(const struct pd_index *ix, uint32_t name, uint32_t value)
{
	size_t lo = 0, hi = ix->npot;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pd_index_pot_entry *e = &ix->pot[mid];
		if (e->name < name || (e->name == name && e->value < value))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void *alloc_array(size_t n, size_t size)
{
	return malloc(n ? n * size : 1);
}

int pd_block_label_names(const struct pd_block *b, const char ***out, size_t *n, struct pd_err *err)
{
	const struct pd_index *ix = &b->idx;
	size_t k = 0;
	*out = NULL;
	*n = 0;
	for (size_t i = 1; i < ix->npot; i++)
		k += ix->pot[i].name != ix->pot[i - 1].name;
	if (!(*out = alloc_array(k, sizeof(**out))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 1; i < ix->npot; i++)
		if (ix->pot[i].name != ix->pot[i - 1].name)
			(*out)[(*n)++] = ix->sym[ix->pot[i].name];
	return 0;
}

int pd_block_label_values(const struct pd_block *b, const char *name, const char ***out, size_t *n,
			  struct pd_err *err)
{
	const struct pd_index *ix = &b->idx;
	int64_t id = name && name[0] ? find_symbol(ix, name) : -1;
	size_t lo = 0, hi = 0;
	*out = NULL;
	*n = 0;
	if (id >= 0) {
		lo = hi = pot_lower_bound(ix, (uint32_t)id, 0);
		while (hi < ix->npot && ix->pot[hi].name == (uint32_t)id)
			hi++;
	}
	if (!(*out = alloc_array(hi - lo, sizeof(**out))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = lo; i < hi; i++)
		(*out)[(*n)++] = ix->sym[ix->pot[i].value];
	return 0;
}

/* Decodes the postings list at off (already checked to lie in the section). */
static int read_postings(const struct pd_index *ix, uint64_t off, const char *name,
			 const char *value, uint64_t **out, size_t *n, struct pd_err *err)
{
	uint32_t count = pd_get_be32(ix->map + off);
	const uint8_t *p = ix->map + off + 4;
	*out = NULL;
	*n = 0;
	uint64_t *refs = alloc_array(count, sizeof(*refs));
	if (!refs)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < count; i++) {
		uint64_t r = pd_get_be32(p + 4 * (size_t)i);
		if ((i > 0 && r <= refs[i - 1]) || r * PD_INDEX_SERIES_ALIGN < ix->series_begin ||
		    r * PD_INDEX_SERIES_ALIGN >= ix->series_end) {
			free(refs);
			return corrupt(ix, err, section_name[2],
				       "list %s=\"%s\": entry %u (%llu) is out of order or not a series",
				       name, value, i, (unsigned long long)r);
		}
		refs[i] = r;
	}
	*out = refs;
	*n = count;
	return 0;
}

int pd_block_postings(const struct pd_block *b, const char *name, const char *value,
		      uint64_t **out, size_t *n, struct pd_err *err)
{
	const struct pd_index *ix = &b->idx;
	int64_t nid = name && name[0] ? find_symbol(ix, name) : -1;
	int64_t vid = nid >= 0 && value ? find_symbol(ix, value) : -1;
	if (vid >= 0) {
		size_t i = pot_lower_bound(ix, (uint32_t)nid, (uint32_t)vid);
		if (i < ix->npot && ix->pot[i].name == nid && ix->pot[i].value == vid)
			return read_postings(ix, ix->pot[i].off, name, value, out, n, err);
	}
	*n = 0;
	if (!(*out = alloc_array(0, sizeof(**out))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	return 0;
}

int pd_block_all_series(const struct pd_block *b, uint64_t **out, size_t *n, struct pd_err *err)
{
	return read_postings(&b->idx, b->idx.all_off, "", "", out, n, err);
}

int pd_block_series(const struct pd_block *b, uint64_t ref, struct pd_lpair **labels, size_t *nl,
		    struct pd_block_chunk_meta **chunks, size_t *nc, struct pd_err *err)
{
	const struct pd_index *ix = &b->idx;
	struct pd_lpair *l = NULL;
	struct pd_block_chunk_meta *c = NULL;
	struct pd_dec d, e;
	char sec[48];
	int rc;

	*labels = NULL;
	*chunks = NULL;
	*nl = *nc = 0;
	snprintf(sec, sizeof(sec), "series %llu", (unsigned long long)ref);
	if (ref > UINT64_MAX / PD_INDEX_SERIES_ALIGN ||
	    ref * PD_INDEX_SERIES_ALIGN < ix->series_begin ||
	    ref * PD_INDEX_SERIES_ALIGN >= ix->series_end)
		return pd_err_set(err, PD_ENOTFOUND, "%s: no series with ref %llu", ix->path,
				  (unsigned long long)ref);
	uint64_t off = ref * PD_INDEX_SERIES_ALIGN;
	pd_dec_init(&d, ix->map + off, (size_t)(ix->series_end - off));
	uint64_t len = pd_dec_uvarint(&d);
	const uint8_t *body = pd_dec_bytes(&d, len);
	if (d.err)
		return corrupt(ix, err, sec, "entry runs past the end of the series section");
	pd_dec_init(&e, body, (size_t)len);

	uint64_t n = pd_dec_uvarint(&e);
	if (e.err || n == 0 || n > pd_dec_left(&e) / 2)
		return corrupt(ix, err, sec, "bad label count");
	if (!(l = malloc(n * sizeof(*l))))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (uint64_t i = 0, prev = 0; i < n; i++) {
		uint64_t name = pd_dec_uvarint(&e), value = pd_dec_uvarint(&e);
		/* names ascend, and symbol 0 is the empty string */
		if (e.err || name >= ix->nsyms || value >= ix->nsyms || name <= prev) {
			rc = corrupt(ix, err, sec, "label %llu: bad symbol reference",
				     (unsigned long long)i);
			goto fail;
		}
		l[i] = (struct pd_lpair){ix->sym[name], ix->sym[value]};
		prev = name;
	}
	uint64_t m = pd_dec_uvarint(&e);
	if (e.err || m > pd_dec_left(&e) / 5) {
		rc = corrupt(ix, err, sec, "bad chunk count");
		goto fail;
	}
	if (!(c = alloc_array((size_t)m, sizeof(*c)))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	for (uint64_t i = 0; i < m; i++) {
		int64_t mint;
		if (i == 0) {
			mint = pd_dec_varint(&e);
		} else {
			uint64_t delta = pd_dec_uvarint(&e);
			if (delta == 0 || delta > (uint64_t)INT64_MAX - (uint64_t)c[i - 1].maxt) {
				rc = corrupt(ix, err, sec, "chunk %llu: bad start", (unsigned long long)i);
				goto fail;
			}
			mint = (int64_t)((uint64_t)c[i - 1].maxt + delta);
		}
		uint64_t span = pd_dec_uvarint(&e), count = pd_dec_uvarint(&e);
		c[i].ts_ref = pd_dec_uvarint(&e);
		c[i].vals_ref = pd_dec_uvarint(&e);
		if (e.err || span > (uint64_t)INT64_MAX - (uint64_t)mint || count == 0 ||
		    count > PD_CHUNKENC_MAX_SAMPLES) {
			rc = corrupt(ix, err, sec, "chunk %llu: bad meta", (unsigned long long)i);
			goto fail;
		}
		c[i].mint = mint;
		c[i].maxt = (int64_t)((uint64_t)mint + span);
		c[i].count = (uint32_t)count;
	}
	if (pd_dec_left(&e)) {
		rc = corrupt(ix, err, sec, "%zu bytes after the last chunk", pd_dec_left(&e));
		goto fail;
	}
	*labels = l;
	*nl = (size_t)n;
	*chunks = c;
	*nc = (size_t)m;
	return 0;
fail:
	free(l);
	free(c);
	return rc;
}
