/* tombstones.c: deleted time ranges of series. A tombstone table maps a series
 * reference to closed intervals [mint, maxt] of milliseconds whose samples are
 * deleted; queries skip them, compaction and clean_tombstones leave them out of
 * the blocks they write. Each block keeps its table in a `tombstones` file:
 *
 *   header  = magic "PDTB" (4B) | version 1 (1B) | reserved, zero (3B)
 *   body    = count uvarint | (ref uvarint, mint varint, maxt varint) * count
 *   footer  = CRC32C (4B BE) of header and body
 *
 * entries ascending by (ref, mint), the intervals of one ref disjoint and not
 * adjacent. Full spec: docs/format/tombstones.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "block_int.h"
#include "tsdb_int.h"
#include "wal.h"

void tomb_init(struct tombstones *t)
{
	t->v = NULL;
	t->n = t->cap = 0;
}

void tomb_fini(struct tombstones *t)
{
	free(t->v);
	tomb_init(t);
}

int tomb_add(struct tombstones *t, uint64_t ref, int64_t mint, int64_t maxt)
{
	if (mint > maxt)
		return 0;
	if (t->n == t->cap) {
		size_t c = t->cap ? t->cap * 2 : 8;
		struct tomb_entry *nv = realloc(t->v, c * sizeof(*nv));
		if (!nv)
			return PD_ENOMEM;
		t->v = nv;
		t->cap = c;
	}
	t->v[t->n++] = (struct tomb_entry){ref, mint, maxt};
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct tomb_entry *x = a, *y = b;
	if (x->ref != y->ref)
		return x->ref < y->ref ? -1 : 1;
	return x->mint < y->mint ? -1 : x->mint > y->mint;
}

void tomb_normalize(struct tombstones *t)
{
	if (t->n < 2)
		return;
	qsort(t->v, t->n, sizeof(*t->v), entry_cmp);
	size_t k = 0;
	for (size_t i = 1; i < t->n; i++) {
		struct tomb_entry *last = &t->v[k];
		/* overlapping or adjacent (maxt + 1 == mint) intervals of one series join */
		if (t->v[i].ref == last->ref &&
		    (last->maxt == INT64_MAX || t->v[i].mint <= last->maxt + 1)) {
			if (t->v[i].maxt > last->maxt)
				last->maxt = t->v[i].maxt;
			continue;
		}
		t->v[++k] = t->v[i];
	}
	t->n = k + 1;
}

const struct tomb_entry *tomb_find(const struct tombstones *t, uint64_t ref, size_t *n)
{
	size_t lo = 0, hi = t->n;
	*n = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].ref < ref)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t e = lo;
	while (e < t->n && t->v[e].ref == ref)
		e++;
	*n = e - lo;
	return *n ? &t->v[lo] : NULL;
}

int tomb_covers(const struct tomb_entry *iv, size_t n, int64_t t)
{
	for (size_t i = 0; i < n; i++)
		if (t >= iv[i].mint && t <= iv[i].maxt)
			return 1;
	return 0;
}

int tomb_copy(const struct tombstones *from, struct tombstones *to)
{
	tomb_init(to);
	if (!from->n)
		return 0;
	if (!(to->v = malloc(from->n * sizeof(*to->v))))
		return PD_ENOMEM;
	memcpy(to->v, from->v, from->n * sizeof(*to->v));
	to->n = to->cap = from->n;
	return 0;
}

/* ---- the tombstones file ------------------------------------------------------ */

static void put_varint(struct pd_buf *b, int64_t v, int *rc)
{
	uint8_t tmp[10];
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	if (!*rc)
		*rc = pd_buf_append(b, tmp, pd_put_uvarint(tmp, u));
}

static void put_uvarint(struct pd_buf *b, uint64_t v, int *rc)
{
	uint8_t tmp[10];
	if (!*rc)
		*rc = pd_buf_append(b, tmp, pd_put_uvarint(tmp, v));
}

int tomb_encode(const struct tombstones *t, struct pd_buf *out)
{
	uint8_t hdr[PD_TOMB_HEADER_SIZE] = {0};
	int rc;
	pd_put_be32(hdr, PD_TOMB_MAGIC);
	hdr[4] = PD_TOMB_VERSION;
	out->len = 0;
	rc = pd_buf_append(out, hdr, sizeof(hdr));
	put_uvarint(out, t->n, &rc);
	for (size_t i = 0; i < t->n; i++) {
		put_uvarint(out, t->v[i].ref, &rc);
		put_varint(out, t->v[i].mint, &rc);
		put_varint(out, t->v[i].maxt, &rc);
	}
	if (!rc) {
		uint8_t crc[4];
		pd_put_be32(crc, pd_crc32c(0, out->data, out->len));
		rc = pd_buf_append(out, crc, 4);
	}
	return rc;
}

int tomb_decode(const uint8_t *p, size_t len, struct tombstones *t, const char *what,
                struct pd_err *err)
{
	struct pd_dec d;
	tomb_init(t);
	if (len < PD_TOMB_HEADER_SIZE + 1 + 4)
		return pd_err_set(err, PD_ECORRUPT,
		                  "%s: %zu bytes, too short for a tombstones file", what, len);
	if (pd_get_be32(p) != PD_TOMB_MAGIC)
		return pd_err_set(err, PD_ECORRUPT, "%s: bad magic 0x%08x (want 0x%08x, \"PDTB\")",
		                  what, pd_get_be32(p), PD_TOMB_MAGIC);
	if (p[4] != PD_TOMB_VERSION)
		return pd_err_set(err, PD_EINCOMPAT,
		                  "%s: tombstones format version %u, this profd reads version %u",
		                  what, p[4], PD_TOMB_VERSION);
	uint32_t want = pd_get_be32(p + len - 4), got = pd_crc32c(0, p, len - 4);
	if (want != got)
		return pd_err_set(err, PD_ECORRUPT,
		                  "%s: CRC32C mismatch (stored 0x%08x, computed 0x%08x)", what,
		                  want, got);
	pd_dec_init(&d, p + PD_TOMB_HEADER_SIZE, len - PD_TOMB_HEADER_SIZE - 4);
	uint64_t count = pd_dec_uvarint(&d);
	/* an entry takes at least 3 bytes: no count the file cannot hold */
	if (d.err || count > pd_dec_left(&d) / 3)
		return pd_err_set(err, PD_ECORRUPT, "%s: entry count %llu does not fit the file",
		                  what, (unsigned long long)count);
	if (count && !(t->v = malloc(count * sizeof(*t->v))))
		return pd_err_set(err, PD_ENOMEM, "out of memory reading %s", what);
	t->cap = count;
	for (uint64_t i = 0; i < count; i++) {
		size_t at = PD_TOMB_HEADER_SIZE + d.pos;
		struct tomb_entry e;
		e.ref = pd_dec_uvarint(&d);
		e.mint = pd_dec_varint(&d);
		e.maxt = pd_dec_varint(&d);
		if (d.err) {
			tomb_fini(t);
			return pd_err_set(err, PD_ECORRUPT,
			                  "%s offset %zu: entry %llu is cut short", what, at,
			                  (unsigned long long)i);
		}
		const char *bad = NULL;
		if (e.mint > e.maxt)
			bad = "mint is after maxt";
		else if (t->n &&
		         (e.ref < t->v[t->n - 1].ref ||
		          (e.ref == t->v[t->n - 1].ref && (t->v[t->n - 1].maxt == INT64_MAX ||
		                                           e.mint <= t->v[t->n - 1].maxt + 1))))
			bad = "not after the entry before it (entries ascend by series, then time, "
			      "without overlaps)";
		if (bad) {
			tomb_fini(t);
			return pd_err_set(err, PD_ECORRUPT,
			                  "%s offset %zu: entry %llu (series %llu, %lld..%lld): %s",
			                  what, at, (unsigned long long)i,
			                  (unsigned long long)e.ref, (long long)e.mint,
			                  (long long)e.maxt, bad);
		}
		t->v[t->n++] = e;
	}
	if (pd_dec_left(&d)) {
		size_t at = PD_TOMB_HEADER_SIZE + d.pos;
		tomb_fini(t);
		return pd_err_set(err, PD_ECORRUPT, "%s offset %zu: %zu bytes after the last entry",
		                  what, at, len - 4 - at);
	}
	return 0;
}

int tomb_read_file(const char *dir, struct tombstones *t, uint64_t *size, struct pd_err *err)
{
	char *path = pd_path_join(dir, PD_TOMB_FILE);
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;
	tomb_init(t);
	*size = 0;
	if (!path)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (access(path, F_OK) != 0 && errno == ENOENT) {
		free(path);
		return 0; /* nothing deleted */
	}
	if ((rc = pd_file_read(path, PD_TOMB_MAX_SIZE, &buf, &len, err)))
		goto out;
	if ((rc = tomb_decode(buf, len, t, path, err)))
		goto out;
	*size = len;
out:
	free(buf);
	free(path);
	return rc;
}

int tomb_write_file(const char *dir, const struct tombstones *t, uint64_t *size, struct pd_err *err)
{
	char *path = pd_path_join(dir, PD_TOMB_FILE);
	char *tmp = pd_path_join(dir, PD_TOMB_FILE ".tmp");
	struct pd_buf b;
	struct pd_bfile *f = NULL;
	int rc;
	pd_buf_init(&b, PD_TOMB_MAX_SIZE);
	*size = 0;
	if (!path || !tmp) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	if (!t->n) {
		if (unlink(path) != 0 && errno != ENOENT) {
			rc = pd_err_set(err, PD_EIO, "%s: unlink: %s", path, strerror(errno));
			goto out;
		}
		rc = pd_fsync_dir(dir, err);
		goto out;
	}
	if ((rc = tomb_encode(t, &b))) {
		rc = pd_err_set(err, rc, "%s: %s", path,
		                rc == PD_ETOOBIG ? "tombstones exceed the file size limit"
		                                 : "out of memory");
		goto out;
	}
	unlink(tmp); /* a write a crash interrupted */
	if ((rc = pd_bfile_create(&f, tmp, err)))
		goto out;
	rc = pd_bfile_write(f, b.data, b.len, err);
	if (rc) {
		pd_bfile_discard(f);
		unlink(tmp);
		goto out;
	}
	if ((rc = pd_bfile_close(f, err))) {
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) != 0) {
		rc = pd_err_set(err, PD_EIO, "rename %s: %s", tmp, strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (!(rc = pd_fsync_dir(dir, err)))
		*size = b.len;
out:
	pd_buf_fini(&b);
	free(path);
	free(tmp);
	return rc;
}
