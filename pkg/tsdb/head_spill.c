/* head_spill.c: the head's open-chunk frame files (see head_spill.h). One file
 * is written at a time, under the store's lock, by pwrite at its end; frames are
 * read by pread; a file other than the one being written is closed and removed
 * as soon as the last frame in it is dropped. Files are numbered from 1 up; the
 * table of open files runs from the oldest still open to the newest; the folder
 * exists while a file does. */
#define _GNU_SOURCE
#include "head_spill.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct hs_file {
	int fd;
	uint64_t size;  /* bytes written, header included */
	uint64_t live;  /* frames referenced */
	uint64_t lbytes; /* their bytes */
};

struct hs_store {
	pthread_mutex_t mu;
	char *dir; /* .../chunks_open */
	size_t file_size;
	/* files[i] is file first + i; NULL once removed */
	struct hs_file **files;
	size_t nfiles, cap;
	uint32_t first;
	uint64_t write_failures;
	struct pd_chunkenc_frame_store fs;
};

static void file_path(const struct hs_store *s, uint32_t id, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%06u", s->dir, id);
}

/* Removes the files of dir (an earlier run's). */
static int clear_dir(const char *dir, struct pd_err *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return pd_err_set(err, PD_EIO, "opening %s: %s", dir, strerror(errno));
	}
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) && errno != ENOENT) {
			rc = pd_err_set(err, PD_EIO, "removing %s/%s: %s", dir, e->d_name,
					strerror(errno));
			break;
		}
	}
	closedir(d);
	return rc;
}

/* Closes and removes file first + i. Called with the lock held. */
static void remove_file(struct hs_store *s, size_t i)
{
	char path[PATH_MAX];
	struct hs_file *f = s->files[i];
	file_path(s, s->first + (uint32_t)i, path, sizeof(path));
	close(f->fd);
	unlink(path);
	free(f);
	s->files[i] = NULL;
	/* the table starts at the oldest file still open; with none, first is the
	 * number of the next */
	size_t k = 0;
	while (k < s->nfiles && !s->files[k])
		k++;
	if (k) {
		memmove(s->files, s->files + k, (s->nfiles - k) * sizeof(*s->files));
		s->nfiles -= k;
		s->first += (uint32_t)k;
	}
	/* the folder goes with its last file, as chunks_head/ does */
	if (!s->nfiles)
		rmdir(s->dir);
}

/* Starts file number first + nfiles. Called with the lock held. */
static int new_file(struct hs_store *s)
{
	if ((uint64_t)s->first + s->nfiles > UINT32_MAX)
		return -1;
	if (s->nfiles == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct hs_file **x = realloc(s->files, cap * sizeof(*x));
		if (!x)
			return -1;
		s->files = x;
		s->cap = cap;
	}
	struct hs_file *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	char path[PATH_MAX];
	file_path(s, s->first + (uint32_t)s->nfiles, path, sizeof(path));
	if (mkdir(s->dir, 0755) && errno != EEXIST) {
		free(f);
		return -1;
	}
	f->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint8_t h[HS_FILE_HEADER] = {(uint8_t)(HS_MAGIC >> 24), (uint8_t)(HS_MAGIC >> 16),
				     (uint8_t)(HS_MAGIC >> 8), (uint8_t)HS_MAGIC, HS_VERSION,
				     0, 0, 0};
	if (f->fd < 0 || pwrite(f->fd, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		if (f->fd >= 0) {
			close(f->fd);
			unlink(path);
		}
		free(f);
		return -1;
	}
	f->size = HS_FILE_HEADER;
	s->files[s->nfiles++] = f;
	return 0;
}

static int hs_put(void *ctx, const uint8_t *p, size_t len, uint64_t *ref)
{
	struct hs_store *s = ctx;
	int rc = -1;
	pthread_mutex_lock(&s->mu);
	struct hs_file *f = s->nfiles ? s->files[s->nfiles - 1] : NULL;
	if (!f || (f->size + len > s->file_size && f->size > HS_FILE_HEADER)) {
		/* the file written so far is done: removed at once when nothing is in it */
		if (f && f->live == 0)
			remove_file(s, s->nfiles - 1);
		if (new_file(s))
			goto out;
		f = s->files[s->nfiles - 1];
	}
	if (f->size + len > UINT32_MAX)
		goto out;
	if (pwrite(f->fd, p, len, (off_t)f->size) != (ssize_t)len)
		goto out;
	*ref = (uint64_t)(s->first + (uint32_t)(s->nfiles - 1)) << 32 | f->size;
	f->size += len;
	f->live++;
	f->lbytes += len;
	rc = 0;
out:
	if (rc)
		s->write_failures++;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* The open file of ref, or NULL. Called with the lock held. */
static struct hs_file *file_of(struct hs_store *s, uint64_t ref, size_t *idx)
{
	uint32_t id = (uint32_t)(ref >> 32);
	if (id < s->first || id - s->first >= s->nfiles)
		return NULL;
	*idx = id - s->first;
	return s->files[*idx];
}

static int hs_get(void *ctx, uint64_t ref, uint8_t *out, size_t len, struct pd_err *err)
{
	struct hs_store *s = ctx;
	size_t idx;
	pthread_mutex_lock(&s->mu);
	struct hs_file *f = file_of(s, ref, &idx);
	int fd = f ? f->fd : -1;
	pthread_mutex_unlock(&s->mu);
	if (fd < 0)
		return pd_err_set(err, PD_ENOTFOUND, "open-chunk frame file %06u is not open",
				  (unsigned)(ref >> 32));
	/* the file stays open while the caller's frame is referenced */
	size_t got = 0;
	off_t at = (off_t)(uint32_t)ref;
	while (got < len) {
		ssize_t n = pread(fd, out + got, len - got, at + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return pd_err_set(err, PD_EIO, "reading %zu bytes at %lld of %s/%06u: %s", len,
					  (long long)at, s->dir, (unsigned)(ref >> 32),
					  n < 0 ? strerror(errno) : "the file is shorter");
		got += (size_t)n;
	}
	return 0;
}

static void hs_drop(void *ctx, uint64_t ref, size_t len)
{
	struct hs_store *s = ctx;
	size_t idx;
	pthread_mutex_lock(&s->mu);
	struct hs_file *f = file_of(s, ref, &idx);
	if (f && f->live) {
		f->live--;
		f->lbytes -= len <= f->lbytes ? len : f->lbytes;
		if (f->live == 0 && idx + 1 < s->nfiles)
			remove_file(s, idx);
	}
	pthread_mutex_unlock(&s->mu);
}

int hs_open(struct hs_store **out, const char *dir, size_t file_size, struct pd_err *err)
{
	*out = NULL;
	struct hs_store *s = calloc(1, sizeof(*s));
	if (!s)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	size_t n = strlen(dir) + sizeof(HS_DIR) + 2;
	if (!(s->dir = malloc(n))) {
		free(s);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	snprintf(s->dir, n, "%s/%s", dir, HS_DIR);
	int rc = clear_dir(s->dir, err);
	if (!rc && rmdir(s->dir) && errno != ENOENT)
		rc = pd_err_set(err, PD_EIO, "removing %s: %s", s->dir, strerror(errno));
	if (rc) {
		free(s->dir);
		free(s);
		return rc;
	}
	s->file_size = file_size ? file_size : HS_DEFAULT_FILE_SIZE;
	if (s->file_size > UINT32_MAX)
		s->file_size = UINT32_MAX;
	s->first = 1;
	pthread_mutex_init(&s->mu, NULL);
	s->fs = (struct pd_chunkenc_frame_store){hs_put, hs_get, hs_drop, s};
	*out = s;
	return 0;
}

void hs_close(struct hs_store *s)
{
	if (!s)
		return;
	char path[PATH_MAX];
	for (size_t i = 0; i < s->nfiles; i++) {
		if (!s->files[i])
			continue;
		close(s->files[i]->fd);
		file_path(s, s->first + (uint32_t)i, path, sizeof(path));
		unlink(path);
		free(s->files[i]);
	}
	rmdir(s->dir);
	free(s->files);
	pthread_mutex_destroy(&s->mu);
	free(s->dir);
	free(s);
}

const struct pd_chunkenc_frame_store *hs_frame_store(struct hs_store *s) { return &s->fs; }

void hs_stats(struct hs_store *s, uint64_t *files, uint64_t *bytes, uint64_t *live_bytes)
{
	*files = *bytes = *live_bytes = 0;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nfiles; i++) {
		if (!s->files[i])
			continue;
		(*files)++;
		*bytes += s->files[i]->size;
		*live_bytes += s->files[i]->lbytes;
	}
	pthread_mutex_unlock(&s->mu);
}

uint64_t hs_write_failures(struct hs_store *s)
{
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->write_failures;
	pthread_mutex_unlock(&s->mu);
	return n;
}
