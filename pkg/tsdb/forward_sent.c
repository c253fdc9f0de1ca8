/* forward_sent.c: a sink's "sent up to" file (<sink name>.sent): the WAL position
 * (segment, byte) before which every record has been accepted by the remote store. Written
 * atomically (temporary file, fsync, rename, fsync of the directory); a missing
 * or damaged file means "nothing is known to be sent", so the forwarder starts
 * again from the first record of the WAL rather than lose anything.
 *
 *   file = magic "PDCS" (4B) | version 1 (1B) | reserved, zero (3B)
 *          | segment (4B BE) | offset (8B BE) | CRC32C (4B BE) of the 20 bytes before
 *
 * docs/format/clickhouse-spool.md has the full specification. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "block_int.h"
#include "tsdb_int.h"
#include "wal.h"

#define SENT_MAGIC "PDCS"
#define SENT_VERSION 1
#define SENT_SIZE 24

static char *sent_path(const char *dir, const char *stem, const char *suffix)
{
	size_t n = strlen(dir) + strlen(stem) + strlen(PD_TSDB_SENT_SUFFIX) + strlen(suffix) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s%s%s", dir, stem, PD_TSDB_SENT_SUFFIX, suffix);
	return p;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int tsdb_sent_read(const char *dir, const char *stem, uint32_t *seg, uint64_t *off, struct pd_err *err)
{
	char *path = sent_path(dir, stem, "");
	uint8_t b[SENT_SIZE + 1];
	int rc = 0, fd;
	*seg = 0;
	*off = 0;
	if (!path)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		rc = errno == ENOENT ? pd_err_set(err, PD_ENOTFOUND, "%s: no such file", path)
		                     : pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	ssize_t n = read(fd, b, sizeof(b));
	close(fd);
	if (n < 0) {
		rc = pd_err_set(err, PD_EIO, "%s: read: %s", path, strerror(errno));
		goto out;
	}
	if (n != SENT_SIZE) {
		rc = pd_err_set(err, PD_ECORRUPT, "%s: %zd bytes, want %d", path, n, SENT_SIZE);
		goto out;
	}
	if (memcmp(b, SENT_MAGIC, 4) != 0) {
		rc = pd_err_set(err, PD_ECORRUPT, "%s: bad magic", path);
		goto out;
	}
	uint32_t crc = pd_crc32c(0, b, 20);
	if (crc != get_be32(b + 20)) {
		rc = pd_err_set(err, PD_ECORRUPT, "%s: CRC mismatch (stored %08x, computed %08x)",
		                path, get_be32(b + 20), crc);
		goto out;
	}
	if (b[4] != SENT_VERSION) {
		rc = pd_err_set(err, PD_ECORRUPT, "%s: version %u is not supported", path, b[4]);
		goto out;
	}
	*seg = get_be32(b + 8);
	*off = (uint64_t)get_be32(b + 12) << 32 | get_be32(b + 16);
out:
	free(path);
	return rc;
}

int tsdb_sent_write(const char *dir, const char *stem, uint32_t seg, uint64_t off, struct pd_err *err)
{
	char *path = sent_path(dir, stem, ""), *tmp = sent_path(dir, stem, ".tmp");
	uint8_t b[SENT_SIZE] = {0};
	int rc = 0, fd = -1;
	if (!path || !tmp) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory");
		goto out;
	}
	memcpy(b, SENT_MAGIC, 4);
	b[4] = SENT_VERSION;
	put_be32(b + 8, seg);
	put_be32(b + 12, (uint32_t)(off >> 32));
	put_be32(b + 16, (uint32_t)off);
	put_be32(b + 20, pd_crc32c(0, b, 20));
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 ||
	    write(fd, b, sizeof(b)) != (ssize_t)sizeof(b) || fdatasync(fd) != 0) {
		rc = pd_err_set(err, PD_EIO, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = pd_err_set(err, PD_EIO, "renaming %s: %s", tmp, strerror(errno));
		goto out;
	}
	rc = pd_fsync_dir(dir, err);
out:
	if (fd >= 0)
		close(fd);
	if (rc && tmp)
		unlink(tmp);
	free(path);
	free(tmp);
	return rc;
}
