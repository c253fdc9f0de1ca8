/* head_chunks.c: the head's sealed chunks on disk, mapped back read-only.
 *
 * File layout (docs/format/head_chunks.md), integers big-endian:
 *   header:  magic "PDHC" <4B> | version 1 <1B> | reserved 0 <3B>
 *   chunk:   series ref <8B> | mint <8B> | maxt <8B> | count <4B> |
 *            ts len <4B> | values len <4B> | ts | values |
 *            CRC32C of everything before it in the chunk <4B>
 * Files are named by six decimal digits, numbered from 1 without gaps (the
 * oldest may have been removed). The file being written is mapped at its cut
 * size, beyond its end: only bytes already written (pwritev, coherent with the
 * shared mapping) are ever read. */
#define _GNU_SOURCE
#include "head_chunks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "block_int.h"
#include "wal.h"

struct hc_file {
	uint32_t seq;
	int fd;       /* -1 once it is no longer written */
	uint8_t *map; /* NULL when the file could not be mapped (nothing in it used) */
	size_t map_len;
	size_t size;   /* bytes in the file (written, or on disk at load) */
	uint64_t live; /* chunks referenced (__atomic) */
};

struct hc_mapper {
	char *dir;
	size_t file_size;
	pthread_mutex_t mu;     /* guards files, nfiles, active and every file's size */
	struct hc_file **files; /* oldest first */
	size_t nfiles, cap;
	struct hc_file *active; /* the file written to, or NULL: the next write cuts one */
	uint32_t next_seq;
};

static char *file_path(const struct hc_mapper *m, uint32_t seq)
{
	size_t n = strlen(m->dir) + 16;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%06u", m->dir, seq);
	return p;
}

static void file_free(struct hc_file *f)
{
	if (!f)
		return;
	if (f->map)
		munmap(f->map, f->map_len);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

int hcm_open(struct hc_mapper **out, const char *dir, size_t file_size, struct pd_err *err)
{
	struct hc_mapper *m = calloc(1, sizeof(*m));
	*out = NULL;
	if (!m)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	size_t n = strlen(dir) + sizeof(HC_DIR) + 2;
	if (!(m->dir = malloc(n))) {
		free(m);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	snprintf(m->dir, n, "%s/%s", dir, HC_DIR);
	m->file_size = file_size ? file_size : HC_DEFAULT_FILE_SIZE;
	m->next_seq = 1;
	pthread_mutex_init(&m->mu, NULL);
	*out = m;
	return 0;
}

void hcm_close(struct hc_mapper *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nfiles; i++)
		file_free(m->files[i]);
	free(m->files);
	pthread_mutex_destroy(&m->mu);
	free(m->dir);
	free(m);
}

static int files_push(struct hc_mapper *m, struct hc_file *f)
{
	if (m->nfiles == m->cap) {
		size_t c = m->cap ? m->cap * 2 : 16;
		struct hc_file **nf = realloc(m->files, c * sizeof(*nf));
		if (!nf)
			return PD_ENOMEM;
		m->files = nf;
		m->cap = c;
	}
	m->files[m->nfiles++] = f;
	return 0;
}

/* The active file is complete: synced, then no longer written. mu held. */
static void finish_active(struct hc_mapper *m)
{
	struct hc_file *f = m->active;
	if (!f)
		return;
	if (f->fd >= 0) {
		fdatasync(f->fd);
		close(f->fd);
		f->fd = -1;
	}
	m->active = NULL;
}

/* A new file for a chunk of need bytes. mu held. */
static int cut_file(struct hc_mapper *m, size_t need, struct pd_err *err)
{
	finish_active(m);
	if (m->next_seq > HC_MAX_FILES)
		return pd_err_set(err, PD_ELIMIT, "%s: too many head chunk files", m->dir);
	struct hc_file *f = calloc(1, sizeof(*f));
	char *p = file_path(m, m->next_seq);
	int rc = 0;
	if (!f || !p) {
		free(f);
		free(p);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	f->seq = m->next_seq;
	/* the folder exists while it holds files */
	if (!m->nfiles && mkdir(m->dir, 0755) == 0) {
		char *parent = strdup(m->dir);
		char *sl = parent ? strrchr(parent, '/') : NULL;
		if (sl) {
			*sl = '\0';
			pd_fsync_dir(parent, NULL);
		}
		free(parent);
	}
	f->fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (f->fd < 0) {
		rc = pd_err_set(err, PD_EIO, "creating %s: %s", p, strerror(errno));
		goto fail;
	}
	uint8_t hdr[HC_FILE_HEADER] = {0};
	pd_put_be32(hdr, HC_MAGIC);
	hdr[4] = HC_VERSION;
	if (pwrite(f->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
		rc = pd_err_set(err, PD_EIO, "writing %s: %s", p, strerror(errno ? errno : ENOSPC));
		goto fail_unlink;
	}
	f->size = HC_FILE_HEADER;
	size_t len = HC_FILE_HEADER + need > m->file_size ? HC_FILE_HEADER + need : m->file_size;
	long pg = sysconf(_SC_PAGESIZE);
	len = (len + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, f->fd, 0);
	if (map == MAP_FAILED) {
		rc = pd_err_set(err, PD_EIO, "mapping %s: %s", p, strerror(errno));
		goto fail_unlink;
	}
	f->map = map;
	f->map_len = len;
	if (files_push(m, f)) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto fail_unlink;
	}
	/* the name is durable before any chunk in it is counted on */
	pd_fsync_dir(m->dir, NULL);
	m->next_seq++;
	m->active = f;
	free(p);
	return 0;
fail_unlink:
	unlink(p);
fail:
	free(p);
	file_free(f);
	return rc;
}

int hcm_write(struct hc_mapper *m, uint64_t ref, int64_t mint, int64_t maxt, uint32_t count,
              const uint8_t *ts, size_t ts_len, const uint8_t *vals, size_t vals_len,
              struct hc_file **file, const uint8_t **ts_out, const uint8_t **vals_out,
              struct pd_err *err)
{
	if (ts_len > UINT32_MAX || vals_len > UINT32_MAX)
		return pd_err_set(err, PD_ELIMIT, "chunk of 4 GiB or more");
	size_t need = HC_CHUNK_OVERHEAD + ts_len + vals_len;
	uint8_t hdr[HC_CHUNK_HEADER], crc[4];
	pd_put_be64(hdr, ref);
	pd_put_be64(hdr + 8, (uint64_t)mint);
	pd_put_be64(hdr + 16, (uint64_t)maxt);
	pd_put_be32(hdr + 24, count);
	pd_put_be32(hdr + 28, (uint32_t)ts_len);
	pd_put_be32(hdr + 32, (uint32_t)vals_len);
	uint32_t c = pd_crc32c(0, hdr, sizeof(hdr));
	c = pd_crc32c(c, ts, ts_len);
	c = pd_crc32c(c, vals, vals_len);
	pd_put_be32(crc, c);
	struct iovec iov[4] = {
	    {hdr, sizeof(hdr)}, {(void *)ts, ts_len}, {(void *)vals, vals_len}, {crc, sizeof(crc)}};
	int rc = 0;
	pthread_mutex_lock(&m->mu);
	struct hc_file *f = m->active;
	if (!f || (f->size > HC_FILE_HEADER && f->size + need > m->file_size) ||
	    f->size + need > f->map_len) {
		if ((rc = cut_file(m, need, err)))
			goto out;
		f = m->active;
	}
	size_t done = 0;
	while (done < need) {
		struct iovec v[4];
		int nv = 0;
		size_t skip = done;
		for (int i = 0; i < 4; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			v[nv].iov_base = (uint8_t *)iov[i].iov_base + skip;
			v[nv++].iov_len = iov[i].iov_len - skip;
			skip = 0;
		}
		ssize_t w = pwritev(f->fd, v, nv, (off_t)(f->size + done));
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			int e = w < 0 ? errno : ENOSPC;
			/* a torn chunk at the end: cut it off, and write the next chunk
			 * to a new file */
			if (ftruncate(f->fd, (off_t)f->size)) {
				/* left for the next open to find */
			}
			finish_active(m);
			rc = pd_err_set(err, PD_EIO, "writing %s/%06u: %s", m->dir, f->seq,
			                strerror(e));
			goto out;
		}
		done += (size_t)w;
	}
	*file = f;
	*ts_out = f->map + f->size + HC_CHUNK_HEADER;
	*vals_out = *ts_out + ts_len;
	f->size += need;
	__atomic_add_fetch(&f->live, 1, __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void hcm_release(struct hc_file *f)
{
	if (f)
		__atomic_sub_fetch(&f->live, 1, __ATOMIC_RELEASE);
}

void hcm_truncate(struct hc_mapper *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	size_t k = 0;
	while (k < m->nfiles && __atomic_load_n(&m->files[k]->live, __ATOMIC_ACQUIRE) == 0) {
		if (m->files[k] == m->active)
			finish_active(m); /* the next chunk cuts a new file */
		char *p = file_path(m, m->files[k]->seq);
		if (!p || (unlink(p) && errno != ENOENT)) {
			free(p);
			break;
		}
		free(p);
		file_free(m->files[k]);
		k++;
	}
	if (k) {
		memmove(m->files, m->files + k, (m->nfiles - k) * sizeof(*m->files));
		m->nfiles -= k;
		if (m->nfiles || rmdir(m->dir))
			pd_fsync_dir(m->dir, NULL);
	}
	pthread_mutex_unlock(&m->mu);
}

int hcm_sync(struct hc_mapper *m, struct pd_err *err)
{
	int rc = 0;
	if (!m)
		return 0;
	pthread_mutex_lock(&m->mu);
	if (m->active && m->active->fd >= 0 && fdatasync(m->active->fd))
		rc = pd_err_set(err, PD_EIO, "syncing %s/%06u: %s", m->dir, m->active->seq,
		                strerror(errno));
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void hcm_stats(struct hc_mapper *m, uint64_t *files, uint64_t *bytes, uint64_t *chunks)
{
	*files = *bytes = *chunks = 0;
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	*files = m->nfiles;
	for (size_t i = 0; i < m->nfiles; i++) {
		*bytes += m->files[i]->size;
		*chunks += __atomic_load_n(&m->files[i]->live, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&m->mu);
}

/* ---- reading back at open ----------------------------------------------------- */

static int seq_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void damage(struct hc_damage *d, uint64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void damage(struct hc_damage *d, uint64_t bytes, const char *fmt, ...)
{
	d->files++;
	d->bytes += bytes;
	if (!d->first[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->first, sizeof(d->first), fmt, ap);
		va_end(ap);
	}
}

static int loaded_push(struct hc_loaded **v, size_t *n, size_t *cap, const struct hc_loaded *c)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct hc_loaded *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return PD_ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = *c;
	return 0;
}

/* The chunks of one file into out; what is wrong with it into dmg. last: the
 * newest file, whose tail may be torn. */
static int load_file(struct hc_mapper *m, uint32_t seq, int last, int read_only,
                     struct hc_loaded **out, size_t *n, size_t *cap, struct hc_damage *dmg,
                     struct pd_err *err)
{
	char *p = file_path(m, seq);
	struct hc_file *f = calloc(1, sizeof(*f));
	struct stat st;
	int rc = 0;
	if (!p || !f) {
		free(p);
		free(f);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	f->seq = seq;
	f->fd = open(p, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &st)) {
		damage(dmg, 0, "%s: %s", p, strerror(errno));
		goto keep;
	}
	f->size = (size_t)st.st_size;
	if (f->size < HC_FILE_HEADER) {
		damage(dmg, f->size, "%s: %zu bytes, shorter than its header", p, f->size);
		goto keep;
	}
	void *map = mmap(NULL, f->size, PROT_READ, MAP_SHARED, f->fd, 0);
	if (map == MAP_FAILED) {
		damage(dmg, f->size, "%s: mapping: %s", p, strerror(errno));
		goto keep;
	}
	f->map = map;
	f->map_len = f->size;
	const uint8_t *b = f->map;
	if (pd_get_be32(b) != HC_MAGIC || b[4] != HC_VERSION || b[5] || b[6] || b[7]) {
		damage(dmg, f->size, "%s: bad header (magic %08x, version %u)", p, pd_get_be32(b),
		       b[4]);
		goto keep;
	}
	size_t off = HC_FILE_HEADER;
	const char *why = NULL;
	int torn = 0;
	while (off < f->size) {
		size_t left = f->size - off;
		if (left < HC_CHUNK_OVERHEAD) {
			why = "chunk header past the end of the file";
			torn = 1;
			break;
		}
		const uint8_t *h = b + off;
		struct hc_loaded c = {0};
		c.ref = pd_get_be64(h);
		c.mint = (int64_t)pd_get_be64(h + 8);
		c.maxt = (int64_t)pd_get_be64(h + 16);
		c.count = pd_get_be32(h + 24);
		c.ts_len = pd_get_be32(h + 28);
		c.vals_len = pd_get_be32(h + 32);
		if (c.ts_len + c.vals_len > left - HC_CHUNK_OVERHEAD) {
			why = "chunk runs past the end of the file";
			torn = 1;
			break;
		}
		size_t body = HC_CHUNK_HEADER + c.ts_len + c.vals_len;
		if (pd_crc32c(0, h, body) != pd_get_be32(h + body)) {
			why = "CRC mismatch";
			break;
		}
		if (!c.ref || !c.count || c.mint > c.maxt) {
			why = "chunk with no series, no sample or its time range reversed";
			break;
		}
		c.ts = h + HC_CHUNK_HEADER;
		c.vals = c.ts + c.ts_len;
		c.file = f;
		if (loaded_push(out, n, cap, &c)) {
			rc = pd_err_set(err, PD_ENOMEM, "out of memory");
			goto keep;
		}
		f->live++;
		off += body + 4;
	}
	if (why && torn && last) {
		/* a write cut short by a crash: the chunks before it are whole */
		dmg->cut = 1;
		snprintf(dmg->cut_note, sizeof(dmg->cut_note), "%s cut at byte %zu: %s", p, off,
		         why);
		if (!read_only && ftruncate(f->fd, (off_t)off) == 0)
			f->size = off;
	} else if (why) {
		damage(dmg, f->size - off,
		       "%s: chunk at byte %zu: %s; %zu bytes from there on lost", p, off, why,
		       f->size - off);
	}
	/* what the chunks read here need is the mapping: pages the check read are
	 * given back until a query reads them again */
	madvise(f->map, f->map_len, MADV_DONTNEED);
keep:
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
	}
	free(p);
	/* a file is kept in the list even when nothing in it could be read, so the
	 * numbers run on and truncation removes it in its turn */
	if (!rc && files_push(m, f))
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
	if (rc) {
		/* the chunks of f already listed refer to it: drop them */
		while (*n && (*out)[*n - 1].file == f)
			(*n)--;
		file_free(f);
	}
	return rc;
}

int hcm_load(struct hc_mapper *m, int read_only, struct hc_loaded **out, size_t *n,
             struct hc_damage *dmg, struct pd_err *err)
{
	*out = NULL;
	*n = 0;
	memset(dmg, 0, sizeof(*dmg));
	DIR *d = opendir(m->dir);
	if (!d)
		return errno == ENOENT
		           ? 0
		           : pd_err_set(err, PD_EIO, "reading %s: %s", m->dir, strerror(errno));
	uint32_t *seqs = NULL;
	size_t ns = 0, scap = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = e->d_name;
		if (strlen(s) != 6 || strspn(s, "0123456789") != 6)
			continue;
		uint32_t v = (uint32_t)strtoul(s, NULL, 10);
		if (!v)
			continue;
		if (ns == scap) {
			size_t c = scap ? scap * 2 : 16;
			uint32_t *nv = realloc(seqs, c * sizeof(*nv));
			if (!nv) {
				rc = pd_err_set(err, PD_ENOMEM, "out of memory");
				break;
			}
			seqs = nv;
			scap = c;
		}
		seqs[ns++] = v;
	}
	closedir(d);
	if (ns)
		qsort(seqs, ns, sizeof(*seqs), seq_cmp);
	for (size_t i = 0; i < ns && !rc; i++) {
		if (i && seqs[i] != seqs[i - 1] + 1)
			damage(dmg, 0, "%s/%06u%s is missing", m->dir, seqs[i - 1] + 1,
			       seqs[i] > seqs[i - 1] + 2 ? " and the files after it up to the next"
			                                 : "");
		rc = load_file(m, seqs[i], i + 1 == ns, read_only, out, n, &cap, dmg, err);
	}
	if (ns)
		m->next_seq = seqs[ns - 1] + 1;
	free(seqs);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}
