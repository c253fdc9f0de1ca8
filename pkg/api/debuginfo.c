/* debuginfo.c: /api/v1/debuginfo/<build-id>, the store of uploaded debug files
 * that symbolization looks in first. PUT streams the body (identity or gzip)
 * into a temp file next to its final name, bounded by max_debuginfo_size, then
 * checks that it is an ELF file whose build-id note is the build id of the path
 * (pkg/elf), fsyncs it, renames it over <dir>/.build-id/<xx>/<rest>.debug and
 * fsyncs the directory before answering 201 (200 when it replaced a file). The
 * stored files together stay within max_debuginfo_total: an upload that would
 * pass it is answered 413 and its temp file removed, before its body when its
 * Content-Length says so, else as soon as it is written past it, and again
 * under a lock just before the rename. GET tells its size or 404; DELETE
 * removes it (admin API). docs/format/debuginfo.md describes the layout. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "api_int.h"
#include "profd/elf.h"

#define DBG_PREFIX "/api/v1/debuginfo/"

struct api_dbg_upload {
	char id[PD_ELF_BUILD_ID_HEX];
	char *dir;   /* <dir>/.build-id/<xx> */
	char *tmp;   /* the temp file in dir; NULL once renamed */
	char *final; /* dir/<rest>.debug */
	int fd;
	int gzip;
	z_stream z;
	int z_init, z_end; /* inflateInit2 done; Z_STREAM_END seen */
	int io_err;        /* errno of a failed write, or -1 for a gzip error */
	uint64_t written;
	uint64_t room;  /* bytes the other stored files leave, at the start */
	int over_quota; /* written would pass room: no more is written */
};

/* Held from the quota's last check to the rename, so that two uploads
 * finishing at once do not both take the last room. */
static pthread_mutex_t store_mu = PTHREAD_MUTEX_INITIALIZER;

_Static_assert(sizeof(((struct pd_api_server *)0)->dbg_uploads) ==
                   API_DBG_NRESULTS * sizeof(uint64_t),
               "a counter for each result");

static const char *const result_names[API_DBG_NRESULTS] = {
    "stored", "replaced", "invalid", "too_large", "refused", "failed", "over_quota",
};

/* The bytes of the stored debug files, <root>/.build-id/<xx>/<rest>.debug (temp
 * files not counted), less those of skip (the file an upload replaces). */
static uint64_t stored_bytes(const char *root, const char *skip)
{
	uint64_t total = 0;
	size_t rl = strlen(root);
	char *top = malloc(rl + sizeof("/.build-id"));
	if (!top)
		return 0;
	snprintf(top, rl + sizeof("/.build-id"), "%s/.build-id", root);
	DIR *d = opendir(top);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		int dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY);
		DIR *sub = dfd >= 0 ? fdopendir(dfd) : NULL;
		if (!sub && dfd >= 0)
			close(dfd);
		for (struct dirent *f; sub && (f = readdir(sub)) != NULL;) {
			size_t n = strlen(f->d_name);
			struct stat st;
			if (f->d_name[0] == '.' || n < 7 ||
			    strcmp(f->d_name + n - 6, ".debug") != 0 ||
			    fstatat(dirfd(sub), f->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
				continue;
			if (skip) {
				struct stat ss;
				if (stat(skip, &ss) == 0 && ss.st_ino == st.st_ino &&
				    ss.st_dev == st.st_dev)
					continue;
			}
			total += (uint64_t)st.st_size;
		}
		if (sub)
			closedir(sub);
	}
	if (d)
		closedir(d);
	free(top);
	return total;
}

static uint64_t quota(const struct pd_api_server *s)
{
	return s->o.max_debuginfo_total ? s->o.max_debuginfo_total
	                                : PD_API_DEFAULT_MAX_DEBUGINFO_TOTAL;
}

/* more: need is what was read before the upload was stopped, not its size */
static void quota_msg(const struct pd_api_server *s, uint64_t used, uint64_t need, int more,
                      char *msg, size_t msgsize)
{
	snprintf(msg, msgsize,
	         "the debug file store is full: the stored files take %llu of %llu bytes and "
	         "this one needs %s%llu (--web.max-debuginfo-total-size); remove debug files "
	         "no longer needed (DELETE /api/v1/debuginfo/<build-id>) or raise the limit",
	         (unsigned long long)used, (unsigned long long)quota(s), more ? "more than " : "",
	         (unsigned long long)need);
}

int api_debuginfo_path(const char *path)
{
	return strncmp(path, DBG_PREFIX, sizeof(DBG_PREFIX) - 1) == 0;
}

void api_debuginfo_count(struct pd_api_server *s, int result, uint64_t bytes)
{
	__atomic_fetch_add(&s->dbg_uploads[result], 1, __ATOMIC_RELAXED);
	if (bytes)
		__atomic_fetch_add(&s->dbg_bytes, bytes, __ATOMIC_RELAXED);
}

void api_debuginfo_metrics(struct pd_api_server *s, struct api_resp *w)
{
	jput(w, "# HELP profd_debuginfo_uploads_total Debug file uploads (PUT "
	        "/api/v1/debuginfo/<build-id>) by result: stored, replaced, invalid, too_large, "
	        "refused, failed.\n# TYPE profd_debuginfo_uploads_total counter\n");
	for (int i = 0; i < API_DBG_NRESULTS; i++)
		jprintf(w, "profd_debuginfo_uploads_total{result=\"%s\"} %llu\n", result_names[i],
		        (unsigned long long)__atomic_load_n(&s->dbg_uploads[i], __ATOMIC_RELAXED));
	jput(w, "# HELP profd_debuginfo_upload_bytes_total Bytes of debug files stored by "
	        "uploads.\n# TYPE profd_debuginfo_upload_bytes_total counter\n");
	jprintf(w, "profd_debuginfo_upload_bytes_total %llu\n",
	        (unsigned long long)__atomic_load_n(&s->dbg_bytes, __ATOMIC_RELAXED));
	if (!s->debuginfo_dir)
		return;
	jput(w, "# HELP profd_debuginfo_stored_bytes Bytes of the stored debug files "
	        "(--web.max-debuginfo-total-size).\n# TYPE profd_debuginfo_stored_bytes gauge\n");
	jprintf(w, "profd_debuginfo_stored_bytes %llu\n",
	        (unsigned long long)stored_bytes(s->debuginfo_dir, NULL));
	jput(w, "# HELP profd_debuginfo_quota_bytes --web.max-debuginfo-total-size.\n"
	        "# TYPE profd_debuginfo_quota_bytes gauge\n");
	jprintf(w, "profd_debuginfo_quota_bytes %llu\n", (unsigned long long)quota(s));
}

/* The build id of r's path into id: 0, or -1 with msg set. */
static int path_id(const struct api_req *r, char *id, char *msg, size_t msgsize)
{
	struct pd_err err = {0};
	const char *s = r->path + sizeof(DBG_PREFIX) - 1;
	if (strchr(s, '/')) {
		snprintf(msg, msgsize,
		         "the path is /api/v1/debuginfo/<build-id>, with nothing after "
		         "the build id");
		return -1;
	}
	if (pd_elf_build_id_parse(s, id, &err)) {
		snprintf(msg, msgsize, "the build id in the path: %.200s", err.msg);
		return -1;
	}
	return 0;
}

/* mkdir that fsyncs the parent when it created the directory: 0 or errno. */
static int mkdir_durable(const char *path, const char *parent)
{
	if (mkdir(path, 0755) == 0) {
		int fd = open(parent, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			return errno;
		int rc = fsync(fd) ? errno : 0;
		close(fd);
		return rc;
	}
	return errno == EEXIST ? 0 : errno;
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* <root>/.build-id/<xx>, created with its parents: 0 or errno. */
static int make_dirs(const char *root, const char *xx, char **out)
{
	char *bid = join(root, ".build-id");
	char *dir = bid ? join(bid, xx) : NULL;
	int rc = ENOMEM;
	if (!dir)
		goto out;
	/* the root itself (<storage.tsdb.path>/debuginfo) */
	char *parent = strdup(root);
	if (!parent)
		goto out;
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = '\0';
	else
		strcpy(parent, slash ? "/" : ".");
	rc = mkdir_durable(root, parent);
	free(parent);
	if (!rc)
		rc = mkdir_durable(bid, root);
	if (!rc)
		rc = mkdir_durable(dir, bid);
out:
	free(bid);
	if (rc)
		free(dir);
	else
		*out = dir;
	return rc;
}

void api_debuginfo_free(struct api_req *r)
{
	struct api_dbg_upload *u = r->dbg;
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	if (u->tmp)
		unlink(u->tmp);
	if (u->z_init)
		inflateEnd(&u->z);
	free(u->tmp);
	free(u->final);
	free(u->dir);
	free(u);
	r->dbg = NULL;
}

unsigned api_debuginfo_begin(struct api_req *r, char *msg, size_t msgsize)
{
	struct pd_api_server *s = r->srv;
	char xx[3];
	struct api_dbg_upload *u = calloc(1, sizeof(*u));
	if (!u) {
		snprintf(msg, msgsize, "out of memory");
		return 500;
	}
	u->fd = -1;
	r->dbg = u;
	if (path_id(r, u->id, msg, msgsize))
		return 400;
	const char *ce =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
	if (ce && strcasecmp(ce, "gzip") == 0) {
		u->gzip = 1;
		if (inflateInit2(&u->z, 16 + MAX_WBITS) != Z_OK) {
			snprintf(msg, msgsize, "out of memory");
			return 500;
		}
		u->z_init = 1;
	} else if (ce && *ce && strcasecmp(ce, "identity") != 0) {
		snprintf(
		    msg, msgsize,
		    "Content-Encoding must be gzip or identity (none); the upload has another");
		return 415;
	}
	memcpy(xx, u->id, 2);
	xx[2] = '\0';
	int rc = make_dirs(s->debuginfo_dir, xx, &u->dir);
	if (rc) {
		pd_log_error("api", "debug file directory", "dir=%s err=%s", s->debuginfo_dir,
		             strerror(rc));
		snprintf(msg, msgsize, "creating the debug file directory failed: %s",
		         strerror(rc));
		return 500;
	}
	size_t n = strlen(u->dir) + strlen(u->id) + 32;
	u->tmp = malloc(n);
	u->final = malloc(n);
	if (!u->tmp || !u->final) {
		snprintf(msg, msgsize, "out of memory");
		return 500;
	}
	snprintf(u->final, n, "%s/%s.debug", u->dir, u->id + 2);
	snprintf(u->tmp, n, "%s/.tmp-%s.XXXXXX", u->dir, u->id + 2);
	/* the room the other files leave; a body of a known size that does not
	 * fit is refused before it is read */
	uint64_t used = stored_bytes(s->debuginfo_dir, u->final);
	u->room = used < quota(s) ? quota(s) - used : 0;
	const char *cl =
	    MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;
	if (!u->gzip && len > u->room) {
		quota_msg(s, used, len, 0, msg, msgsize);
		free(u->tmp);
		u->tmp = NULL;
		return 413;
	}
	u->fd = mkstemp(u->tmp);
	if (u->fd < 0) {
		int e = errno;
		free(u->tmp);
		u->tmp = NULL;
		pd_log_error("api", "debug file temp", "dir=%s err=%s", u->dir, strerror(e));
		snprintf(msg, msgsize, "creating the temp file failed: %s", strerror(e));
		return 500;
	}
	return 0;
}

/* Writes out to the temp file, unless that would pass the limit. */
static void put(struct api_req *r, const uint8_t *p, size_t n)
{
	struct api_dbg_upload *u = r->dbg;
	if (u->written + n > r->body_max) {
		r->body_too_big = 1;
		return;
	}
	if (u->written + n > u->room) {
		u->over_quota = 1;
		return;
	}
	while (n) {
		ssize_t k = write(u->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			u->io_err = errno;
			return;
		}
		p += k;
		n -= (size_t)k;
		u->written += (uint64_t)k;
	}
}

void api_debuginfo_write(struct api_req *r, const char *data, size_t n)
{
	struct api_dbg_upload *u = r->dbg;
	if (!u || u->fd < 0 || u->io_err || r->body_too_big || u->over_quota)
		return;
	if (!u->gzip) {
		put(r, (const uint8_t *)data, n);
		return;
	}
	uint8_t out[64 * 1024];
	u->z.next_in = (Bytef *)data;
	u->z.avail_in = (uInt)n;
	while (u->z.avail_in && !u->z_end && !u->io_err && !r->body_too_big && !u->over_quota) {
		u->z.next_out = out;
		u->z.avail_out = sizeof(out);
		int zr = inflate(&u->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
			u->io_err = -1;
			return;
		}
		put(r, out, sizeof(out) - u->z.avail_out);
		if (zr == Z_STREAM_END)
			u->z_end = 1;
		else if (zr == Z_BUF_ERROR && u->z.avail_out)
			break;
	}
}

/* Checks the temp file and moves it to its name: the status, and w set. */
static void store(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	struct api_dbg_upload *u = r->dbg;
	struct pd_err err = {0};
	char got[PD_ELF_BUILD_ID_HEX], msg[512];
	if (u->over_quota) {
		api_debuginfo_count(s, API_DBG_OVER_QUOTA, 0);
		uint64_t used = stored_bytes(s->debuginfo_dir, u->final);
		quota_msg(s, used, u->room, 1, msg, sizeof(msg));
		api_error(w, 413, "bad_data", "%s", msg);
		return;
	}
	if (u->io_err == -1 || (u->gzip && !u->z_end)) {
		api_debuginfo_count(s, API_DBG_INVALID, 0);
		api_error(w, 400, "bad_data", "the gzip body is %s",
		          u->io_err == -1 ? "corrupt" : "truncated (no end of the gzip stream)");
		return;
	}
	if (u->io_err) {
		api_debuginfo_count(s, API_DBG_FAILED, 0);
		pd_log_error("api", "writing a debug file", "path=%s err=%s", u->tmp,
		             strerror(u->io_err));
		api_error(w, 500, "internal", "writing the debug file failed: %s",
		          strerror(u->io_err));
		return;
	}
	if (!u->written) {
		api_debuginfo_count(s, API_DBG_INVALID, 0);
		api_error(w, 400, "bad_data", "the body is empty; send the ELF debug file");
		return;
	}
	void *map = mmap(NULL, u->written, PROT_READ | PROT_WRITE, MAP_PRIVATE, u->fd, 0);
	if (map == MAP_FAILED) {
		api_debuginfo_count(s, API_DBG_FAILED, 0);
		api_error(w, 500, "internal", "reading the debug file back failed: %s",
		          strerror(errno));
		return;
	}
	int rc = pd_elf_build_id(map, u->written, got, &err);
	munmap(map, u->written);
	if (rc) {
		api_debuginfo_count(s, API_DBG_INVALID, 0);
		api_error(w, 400, "bad_data", "%s", err.msg);
		return;
	}
	if (strcmp(got, u->id) != 0) {
		api_debuginfo_count(s, API_DBG_INVALID, 0);
		api_error(w, 400, "bad_data",
		          "the file's build id %s differs from the build id %s in the path", got,
		          u->id);
		return;
	}
	struct stat st;
	int dfd = -1;
	if (fsync(u->fd)) {
		int e = errno;
		api_debuginfo_count(s, API_DBG_FAILED, 0);
		api_error(w, 500, "internal", "storing the debug file failed: %s", strerror(e));
		return;
	}
	/* the quota's last check, and the rename, one upload at a time */
	pthread_mutex_lock(&store_mu);
	uint64_t used = stored_bytes(s->debuginfo_dir, u->final);
	if (used + u->written > quota(s)) {
		pthread_mutex_unlock(&store_mu);
		api_debuginfo_count(s, API_DBG_OVER_QUOTA, 0);
		quota_msg(s, used, u->written, 0, msg, sizeof(msg));
		api_error(w, 413, "bad_data", "%s", msg);
		return;
	}
	int existed = stat(u->final, &st) == 0;
	int mv = rename(u->tmp, u->final);
	pthread_mutex_unlock(&store_mu);
	if (mv || (dfd = open(u->dir, O_RDONLY | O_DIRECTORY)) < 0 || fsync(dfd)) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		api_debuginfo_count(s, API_DBG_FAILED, 0);
		pd_log_error("api", "storing a debug file", "path=%s err=%s", u->final,
		             strerror(e));
		api_error(w, 500, "internal", "storing the debug file failed: %s", strerror(e));
		return;
	}
	close(dfd);
	free(u->tmp);
	u->tmp = NULL;
	api_debuginfo_count(s, existed ? API_DBG_REPLACED : API_DBG_STORED, u->written);
	pd_log_info("api", "debug file stored", "build_id=%s bytes=%llu replaced=%d", u->id,
	            (unsigned long long)u->written, existed);
	w->status = existed ? 200 : 201;
	jput(w, "{\"buildId\":");
	jstr(w, u->id);
	jput(w, ",\"size\":");
	ju64(w, u->written);
	jprintf(w, ",\"path\":\".build-id/%.2s/%s.debug\",\"replaced\":%s}", u->id, u->id + 2,
	        existed ? "true" : "false");
}

void api_debuginfo(struct api_req *r, struct api_resp *w)
{
	struct pd_api_server *s = r->srv;
	char id[PD_ELF_BUILD_ID_HEX], msg[256];
	if (!s->debuginfo_dir) {
		api_error(w, 404, "not_found", "this server stores no debug files");
		return;
	}
	if (r->dbg) {
		store(r, w);
		return;
	}
	if (path_id(r, id, msg, sizeof(msg))) {
		api_error(w, 400, "bad_data", "%s", msg);
		return;
	}
	size_t n = strlen(s->debuginfo_dir) + strlen(id) + 32;
	char *path = malloc(n);
	if (!path) {
		api_error(w, 500, "internal", "out of memory");
		return;
	}
	snprintf(path, n, "%s/.build-id/%.2s/%s.debug", s->debuginfo_dir, id, id + 2);
	int del = strcmp(r->method, "DELETE") == 0;
	struct stat st;
	if (del && !s->o.enable_admin_api) {
		api_error(w, 503, "unavailable", "admin APIs disabled");
	} else if (stat(path, &st) != 0) {
		api_error(w, 404, "not_found", "no debug file for build id %s", id);
	} else if (del) {
		if (unlink(path))
			api_error(w, 500, "internal", "removing the debug file failed: %s",
			          strerror(errno));
		else {
			/* 204 No Content: no envelope, no body */
			w->json = 0;
			w->body.len = 0;
			w->status = 204;
			w->content_type = NULL;
		}
	} else {
		jput(w, "{\"buildId\":");
		jstr(w, id);
		jput(w, ",\"size\":");
		ju64(w, (uint64_t)st.st_size);
		jprintf(w, ",\"path\":\".build-id/%.2s/%s.debug\"}", id, id + 2);
	}
	free(path);
}
