/* file.c: whole-file reads with a size cap, and atomic whole-file writes. */
#include "profd/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pd_file_read(const char *path, size_t max, uint8_t **out, size_t *out_len,
		 struct pd_err *err)
{
	int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	size_t limit = max == SIZE_MAX ? max : max + 1;
	struct pd_buf b;
	int rc;

	*out = NULL;
	*out_len = 0;
	if (fd < 0)
		return pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
	pd_buf_init(&b, limit);
	for (;;) {
		if (b.len == b.cap) {
			size_t want = b.len < 64 * 1024 ? 64 * 1024 : b.len;
			if (want > limit - b.len)
				want = limit - b.len;
			if ((rc = pd_buf_reserve(&b, want))) {
				rc = pd_err_set(err, rc, "%s: cannot allocate %zu bytes", path, b.len + want);
				goto fail;
			}
		}
		ssize_t n = read(fd, b.data + b.len, b.cap - b.len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
		if (b.len > max) {
			rc = pd_err_set(err, PD_ETOOBIG, "%s: file is larger than the limit of %zu bytes",
					path, max);
			goto fail;
		}
	}
	if (fd > 0)
		close(fd);
	*out_len = b.len;
	*out = pd_buf_steal(&b, NULL);
	if (!*out && !(*out = malloc(1)))
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	return 0;
fail:
	if (fd > 0)
		close(fd);
	pd_buf_fini(&b);
	return rc;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pd_file_write(const char *path, const void *buf, size_t len, struct pd_err *err)
{
	if (strcmp(path, "-") == 0) {
		if (write_all(1, buf, len))
			return pd_err_set(err, PD_EIO, "stdout: %s", strerror(errno));
		return 0;
	}
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	if (!tmp)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	snprintf(tmp, plen + 16, "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int rc = pd_err_set(err, PD_EIO, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	if (write_all(fd, buf, len) || close(fd)) {
		int rc = pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return rc;
	}
	if (rename(tmp, path)) {
		int rc = pd_err_set(err, PD_EIO, "%s: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return rc;
	}
	free(tmp);
	return 0;
}
