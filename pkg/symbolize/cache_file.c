/* cache_file.c: the disk cache of resolved addresses, one file per build id,
 * <cache dir>/<build id>.symcache (docs/format/symbolizer-cache.md):
 *
 *   header  "PDSC" | version u8 (1) | 3 zero bytes
 *   record  len u32 | payload (len bytes) | crc u32 (CRC-32 of payload, zlib's)
 *   payload addr u64 | nframes u16 | frames
 *   frame   line u32 | start_line u32 | name, system_name, file: each len u16 | bytes
 *
 * Integers are little-endian. Records are appended; a torn or corrupt tail (a
 * crash while appending) ends the file for readers, and what came before stays;
 * the symbolizer cuts such a tail off when it reads the file. */
#include "symbolize_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define HEADER_LEN 8
#define MAX_RECORD (1u << 20)
#define MAX_FRAMES 256

static const uint8_t magic[4] = {'P', 'D', 'S', 'C'};

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint32_t clamp32(int64_t v)
{
	return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static char *cache_path(const char *dir, const char *build_id)
{
	size_t n = strlen(dir) + strlen(build_id) + 16;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s.symcache", dir, build_id);
	return p;
}

int sym_cache_append(const char *dir, const char *build_id, uint64_t addr,
                     const struct sym_result *r, struct pd_err *err)
{
	size_t n = r->n > MAX_FRAMES ? MAX_FRAMES : r->n;
	size_t len = 8 + 2;
	for (size_t i = 0; i < n; i++) {
		len += 8 + 6;
		len += strnlen(r->f[i].name, 65535) + strnlen(r->f[i].system_name, 65535) +
		       strnlen(r->f[i].file, 65535);
	}
	if (len > MAX_RECORD)
		return pd_err_set(err, PD_ETOOBIG, "cache record of %zu bytes", len);
	uint8_t *buf = malloc(4 + len + 4);
	if (!buf)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	uint8_t *p = buf + 4;
	put32(buf, (uint32_t)len);
	put32(p, (uint32_t)addr);
	put32(p + 4, (uint32_t)(addr >> 32));
	put16(p + 8, (uint32_t)n);
	p += 10;
	for (size_t i = 0; i < n; i++) {
		put32(p, clamp32(r->f[i].line));
		put32(p + 4, clamp32(r->f[i].start_line));
		p += 8;
		const char *s[3] = {r->f[i].name, r->f[i].system_name, r->f[i].file};
		for (int k = 0; k < 3; k++) {
			size_t l = strnlen(s[k], 65535);
			put16(p, (uint32_t)l);
			memcpy(p + 2, s[k], l);
			p += 2 + l;
		}
	}
	put32(p, (uint32_t)crc32(0, buf + 4, (uInt)len));
	char *path = cache_path(dir, build_id);
	int rc = 0;
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
	if (fd < 0) {
		rc = pd_err_set(err, PD_EIO, "open %s: %s", path ? path : dir, strerror(errno));
		goto out;
	}
	off_t end = lseek(fd, 0, SEEK_END);
	if (end == 0) {
		uint8_t h[HEADER_LEN] = {magic[0], magic[1], magic[2], magic[3], 1, 0, 0, 0};
		if (write(fd, h, sizeof(h)) != (ssize_t)sizeof(h))
			rc = pd_err_set(err, PD_EIO, "write %s: %s", path, strerror(errno));
	}
	if (rc == 0 && write(fd, buf, 4 + len + 4) != (ssize_t)(4 + len + 4))
		rc = pd_err_set(err, PD_EIO, "write %s: %s", path, strerror(errno));
	close(fd);
out:
	free(path);
	free(buf);
	return rc;
}

/* One record's payload; 0, or -1 when it does not parse. */
static int parse_record(const uint8_t *p, size_t len,
                        int (*fn)(void *, uint64_t, const struct pd_symbolize_frame *, size_t),
                        void *ctx, int *cb_rc)
{
	if (len < 10)
		return -1;
	uint64_t addr = get64(p);
	size_t n = get16(p + 8);
	if (n > MAX_FRAMES)
		return -1;
	struct pd_symbolize_frame fr[MAX_FRAMES];
	size_t at = 10;
	for (size_t i = 0; i < n; i++) {
		if (len - at < 8)
			return -1;
		fr[i].line = get32(p + at);
		fr[i].start_line = get32(p + at + 4);
		at += 8;
		const char **s[3] = {&fr[i].name, &fr[i].system_name, &fr[i].file};
		size_t *l[3] = {&fr[i].name_len, &fr[i].system_name_len, &fr[i].file_len};
		for (int k = 0; k < 3; k++) {
			if (len - at < 2)
				return -1;
			size_t sl = get16(p + at);
			at += 2;
			if (len - at < sl)
				return -1;
			*s[k] = (const char *)p + at;
			*l[k] = sl;
			at += sl;
		}
	}
	if (at != len)
		return -1;
	*cb_rc = fn(ctx, addr, fr, n);
	return 0;
}

/* As pd_symbolize_cache_parse; *valid is the length of the header and the
 * records that parsed. */
static int parse_valid(const uint8_t *buf, size_t len,
                       int (*fn)(void *ctx, uint64_t addr, const struct pd_symbolize_frame *frames,
                                 size_t n),
                       void *ctx, size_t *valid, struct pd_err *err)
{
	*valid = 0;
	if (len < HEADER_LEN || memcmp(buf, magic, 4) != 0)
		return pd_err_set(err, PD_ECORRUPT,
		                  "symbolizer cache: no \"PDSC\" magic at offset 0");
	if (buf[4] != 1)
		return pd_err_set(err, PD_ECORRUPT,
		                  "symbolizer cache: version %u at offset 4, this profd reads 1",
		                  buf[4]);
	size_t at = HEADER_LEN;
	while (len - at >= 8) {
		uint32_t rl = get32(buf + at);
		if (rl > MAX_RECORD || len - at - 4 < (size_t)rl + 4)
			break;
		const uint8_t *pl = buf + at + 4;
		if ((uint32_t)crc32(0, pl, rl) != get32(pl + rl))
			break;
		int cb_rc = 0;
		if (parse_record(pl, rl, fn, ctx, &cb_rc) != 0)
			break;
		if (cb_rc)
			return cb_rc;
		at += 4 + (size_t)rl + 4;
	}
	*valid = at;
	return 0;
}

int pd_symbolize_cache_parse(const uint8_t *buf, size_t len,
                             int (*fn)(void *ctx, uint64_t addr,
                                       const struct pd_symbolize_frame *frames, size_t n),
                             void *ctx, struct pd_err *err)
{
	size_t valid;
	return parse_valid(buf, len, fn, ctx, &valid, err);
}

int sym_cache_load(const char *dir, const char *build_id, size_t max,
                   int (*fn)(void *ctx, uint64_t addr, const struct pd_symbolize_frame *frames,
                             size_t n),
                   void *ctx, struct pd_err *err)
{
	char *path = cache_path(dir, build_id);
	if (!path)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	if (access(path, F_OK) != 0) {
		free(path);
		return PD_ENOTFOUND;
	}
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc = pd_file_read(path, max, &buf, &len, err);
	size_t valid = 0;
	if (rc == 0) {
		rc = parse_valid(buf, len, fn, ctx, &valid, err);
		if (rc)
			pd_err_prefix(err, "%s", path);
		/* a torn tail is cut off, so that the next record appended is read back */
		if (rc == 0 && valid < len && truncate(path, (off_t)valid) != 0)
			rc = pd_err_set(err, PD_EIO, "truncating %s to %zu bytes: %s", path, valid,
			                strerror(errno));
	}
	free(buf);
	free(path);
	return rc;
}
