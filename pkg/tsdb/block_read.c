/* block_read.c: opening a block. meta.json is parsed, the index is mapped and
 * checked (index_read.c), and the chunk segments chunks/000001... are mapped
 * read-only with their headers checked. A chunk entry's CRC32C is checked each
 * time its bytes are handed out. Formats: docs/format/meta.md,
 * docs/format/chunk-segments.md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block_int.h"
#include "wal.h"

/* The last path component of dir, trailing slashes ignored, into out. */
static void base_name(const char *dir, char *out, size_t cap)
{
	size_t end = strlen(dir);
	while (end > 1 && dir[end - 1] == '/')
		end--;
	size_t start = end;
	while (start > 0 && dir[start - 1] != '/')
		start--;
	size_t n = end - start < cap - 1 ? end - start : cap - 1;
	memcpy(out, dir + start, n);
	out[n] = '\0';
}

static int read_meta(struct pd_block *b, struct pd_err *err)
{
	uint8_t *buf = NULL;
	size_t len;
	char *path = pd_path_join(b->dir, "meta.json");
	int rc;

	if (!path)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((rc = pd_file_read(path, PD_META_MAX_SIZE, &buf, &len, err))) {
		if (rc == PD_EIO && access(path, F_OK))
			rc = PD_ENOTFOUND;
		if (err)
			err->code = rc;
		goto out;
	}
	if ((rc = pd_block_meta_parse((const char *)buf, len, &b->meta, err))) {
		pd_err_prefix(err, "%s", path);
		goto out;
	}
	b->size += len;
	char base[64];
	base_name(b->dir, base, sizeof(base));
	if (strcmp(base, b->meta.ulid))
		rc = pd_err_set(err, PD_ECORRUPT,
				"%s: block directory name \"%s\" is not the block's ULID %s", path,
				base, b->meta.ulid);
out:
	free(buf);
	free(path);
	return rc;
}

static int seg_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

static int map_segment(struct pd_block *b, const char *chunkdir, unsigned num,
		       struct pd_block_segment *seg, struct pd_err *err)
{
	char name[16];
	struct stat st;
	int rc = 0;

	snprintf(name, sizeof(name), "%06u", num);
	char *path = pd_path_join(chunkdir, name);
	if (!path)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		rc = pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((uint64_t)st.st_size < PD_SEGMENT_HEADER_SIZE) {
		rc = pd_err_set(err, PD_ECORRUPT, "%s: %lld bytes is too short for a chunk segment",
				path, (long long)st.st_size);
		goto out;
	}
	if ((uint64_t)st.st_size > SIZE_MAX) {
		rc = pd_err_set(err, PD_ETOOBIG, "%s: too large to map", path);
		goto out;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		rc = pd_err_set(err, PD_EIO, "%s: mmap: %s", path, strerror(errno));
		goto out;
	}
	seg->map = m;
	seg->size = (size_t)st.st_size;
	b->size += seg->size;
	if (pd_get_be32(seg->map) != PD_SEGMENT_MAGIC)
		rc = pd_err_set(err, PD_ECORRUPT, "%s: bad magic %08x, not a chunk segment", path,
				pd_get_be32(seg->map));
	else if (seg->map[4] != PD_SEGMENT_VERSION || seg->map[5] || seg->map[6] || seg->map[7])
		rc = pd_err_set(err, PD_ECORRUPT, "%s: unsupported chunk segment version %u", path,
				seg->map[4]);
out:
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

static int open_segments(struct pd_block *b, struct pd_err *err)
{
	unsigned *nums = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	char *chunkdir = pd_path_join(b->dir, "chunks");
	if (!chunkdir)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	DIR *d = opendir(chunkdir);
	if (!d) {
		rc = pd_err_set(err, errno == ENOENT ? PD_ENOTFOUND : PD_EIO, "%s: %s", chunkdir,
				strerror(errno));
		goto out;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = e->d_name;
		if (strlen(s) != 6 || strspn(s, "0123456789") != 6)
			continue; /* not a segment */
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			unsigned *q = realloc(nums, cap * sizeof(*nums));
			if (!q) {
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				goto out;
			}
			nums = q;
		}
		nums[n++] = (unsigned)atoi(s);
	}
	if (n)
		qsort(nums, n, sizeof(*nums), seg_cmp);
	for (size_t i = 0; i < n; i++) {
		if (nums[i] != i + 1) {
			rc = pd_err_set(err, PD_ECORRUPT, "%s: segment %06zu is missing", chunkdir, i + 1);
			goto out;
		}
	}
	if (n == 0 && b->meta.num_chunks) {
		rc = pd_err_set(err, PD_ECORRUPT, "%s: no chunk segments, but meta.json counts %llu chunks",
				chunkdir, (unsigned long long)b->meta.num_chunks);
		goto out;
	}
	if (n && !(b->segs = calloc(n, sizeof(*b->segs)))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	b->nsegs = n;
	for (size_t i = 0; i < n && !rc; i++)
		rc = map_segment(b, chunkdir, nums[i], &b->segs[i], err);
out:
	if (d)
		closedir(d);
	free(nums);
	free(chunkdir);
	return rc;
}

int pd_block_open(struct pd_block **out, const char *dir, struct pd_err *err)
{
	struct pd_block *b;
	char *index = NULL;
	int rc;

	*out = NULL;
	if (!(b = calloc(1, sizeof(*b))) || !(b->dir = strdup(dir)) ||
	    !(index = pd_path_join(dir, "index"))) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = read_meta(b, err)) || (rc = pd_index_open(&b->idx, index, err)) ||
	    (rc = open_segments(b, err)) || (rc = tomb_read_file(dir, &b->tomb, &b->tomb_size, err)))
		goto fail;
	b->size += b->idx.size;
	free(index);
	*out = b;
	return 0;
fail:
	free(index);
	pd_block_close(b);
	return rc;
}

void pd_block_close(struct pd_block *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nsegs; i++)
		if (b->segs[i].map)
			munmap((void *)b->segs[i].map, b->segs[i].size);
	free(b->segs);
	if (b->idx.path)
		pd_index_close(&b->idx);
	free(b->meta.sources);
	tomb_fini(&b->tomb);
	free(b->dir);
	free(b);
}

const struct tombstones *pd_block_tombstones(const struct pd_block *b)
{
	return &b->tomb;
}

void pd_block_swap_tombstones(struct pd_block *b, struct tombstones *t, uint64_t file_size)
{
	b->tomb_size = file_size;
	struct tombstones old = b->tomb;
	b->tomb = *t;
	*t = old;
}

const struct pd_block_meta *pd_block_meta(const struct pd_block *b)
{
	return &b->meta;
}

const char *pd_block_dir(const struct pd_block *b)
{
	return b->dir;
}

uint64_t pd_block_size(const struct pd_block *b)
{
	return b->size + b->tomb_size;
}

int pd_block_chunk_bytes(const struct pd_block *b, uint64_t ref, const uint8_t **p, size_t *len,
			 struct pd_err *err)
{
	uint64_t segno = ref >> 32, off = ref & 0xffffffffu;
	struct pd_dec d;

	*p = NULL;
	*len = 0;
	/* the index refers to chunk bytes that are not there: damage */
	if (segno < 1 || segno > b->nsegs)
		return pd_err_set(err, PD_ECORRUPT, "%s: chunk ref %llu: no segment %06llu", b->dir,
				  (unsigned long long)ref, (unsigned long long)segno);
	const struct pd_block_segment *s = &b->segs[segno - 1];
	if (off < PD_SEGMENT_HEADER_SIZE || off >= s->size)
		return pd_err_set(err, PD_ECORRUPT,
				  "%s/chunks/%06llu: chunk ref %llu: offset %llu is outside the segment",
				  b->dir, (unsigned long long)segno, (unsigned long long)ref,
				  (unsigned long long)off);
	pd_dec_init(&d, s->map + off, s->size - (size_t)off);
	uint64_t n = pd_dec_uvarint(&d);
	const uint8_t *kind = pd_dec_bytes(&d, 1);
	const uint8_t *data = pd_dec_bytes(&d, n);
	const uint8_t *crc = pd_dec_bytes(&d, 4);
	if (d.err)
		return pd_err_set(err, PD_ECORRUPT,
				  "%s/chunks/%06llu: entry at offset %llu runs past the end of the file",
				  b->dir, (unsigned long long)segno, (unsigned long long)off);
	if (pd_crc32c(pd_crc32c(0, kind, 1), data, (size_t)n) != pd_get_be32(crc))
		return pd_err_set(err, PD_ECORRUPT,
				  "%s/chunks/%06llu: entry at offset %llu: CRC mismatch", b->dir,
				  (unsigned long long)segno, (unsigned long long)off);
	if (*kind != PD_CHUNK_KIND_TS && *kind != PD_CHUNK_KIND_VALUES)
		return pd_err_set(err, PD_ECORRUPT,
				  "%s/chunks/%06llu: entry at offset %llu: unknown kind %u", b->dir,
				  (unsigned long long)segno, (unsigned long long)off, *kind);
	*p = data;
	*len = (size_t)n;
	return 0;
}
