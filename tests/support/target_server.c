/* target_server.c: the misbehaving scrape target of tests, on libmicrohttpd. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "target_server.h"

#define NPATHS 12
static const char *paths[NPATHS] = {"/ok",   "/slow",    "/500",    "/garbage",      "/bomb",  "/endless",
				    "/empty", "/auth", "/encoded", "/deflate", "/encoded-bomb", "/brotli"};

struct target_server {
	struct MHD_Daemon *d;
	uint8_t *profile;
	size_t len;
	uint8_t *bomb;
	size_t bomb_len;
	uint8_t *encoded, *deflated, *encoded_bomb;
	size_t encoded_len, deflated_len, encoded_bomb_len;
	unsigned slow_ms;
	int stopping; /* set by target_server_stop: /slow answers at once */
	pthread_cond_t cv;
	unsigned hits[NPATHS];
	pthread_mutex_t mu;
};

static ssize_t endless(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	(void)pos;
	memset(buf, 'x', max);
	return (ssize_t)max;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const void *p, size_t n)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)p, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_encoded(struct MHD_Connection *c, const void *p, size_t n, const char *enc)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)p, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	MHD_add_response_header(r, "Content-Encoding", enc);
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **state)
{
	struct target_server *s = cls;
	(void)method;
	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	int which = -1;
	for (int i = 0; i < NPATHS; i++)
		if (strcmp(url, paths[i]) == 0)
			which = i;
	if (which >= 0) {
		pthread_mutex_lock(&s->mu);
		s->hits[which]++;
		pthread_mutex_unlock(&s->mu);
	}
	switch (which) {
	case 0:
		return reply(c, 200, s->profile, s->len);
	case 1: {
		/* waits slow_ms, or until the server stops, so that stopping never waits */
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += s->slow_ms / 1000;
		dl.tv_nsec += (long)(s->slow_ms % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&s->mu);
		while (!s->stopping && pthread_cond_timedwait(&s->cv, &s->mu, &dl) == 0)
			;
		pthread_mutex_unlock(&s->mu);
		return reply(c, 200, s->profile, s->len);
	}
	case 2:
		return reply(c, 500, "internal error\n", 15);
	case 3:
		return reply(c, 200, "this is not a profile at all", 28);
	case 4:
		return reply(c, 200, s->bomb, s->bomb_len);
	case 5: {
		struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, endless,
									 NULL, NULL);
		enum MHD_Result ret = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	case 6:
		return reply(c, 200, "", 0);
	case 7: {
		const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
		if (!a || strcmp(a, "Bearer secret") != 0)
			return reply(c, 401, "unauthorized\n", 13);
		return reply(c, 200, s->profile, s->len);
	}
	case 8:
		return reply_encoded(c, s->encoded, s->encoded_len, "gzip");
	case 9:
		return reply_encoded(c, s->deflated, s->deflated_len, "deflate");
	case 10:
		return reply_encoded(c, s->encoded_bomb, s->encoded_bomb_len, "gzip");
	case 11:
		return reply_encoded(c, s->profile, s->len, "br");
	default:
		return reply(c, 404, "not found\n", 10);
	}
}

/* 320 MiB of zeros, gzip-compressed once per server. */
static int make_bomb(struct target_server *s)
{
	z_stream z = {0};
	size_t chunk = 1 << 20;
	uint8_t *zeros = calloc(1, chunk);
	s->bomb = malloc(1 << 20);
	if (!zeros || !s->bomb || deflateInit2(&z, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(zeros);
		return -1;
	}
	z.next_out = s->bomb;
	z.avail_out = 1 << 20;
	for (int i = 0; i < 320; i++) {
		z.next_in = zeros;
		z.avail_in = (uInt)chunk;
		deflate(&z, i == 319 ? Z_FINISH : Z_NO_FLUSH);
	}
	s->bomb_len = (1 << 20) - z.avail_out;
	deflateEnd(&z);
	free(zeros);
	return 0;
}

/* in compressed with zlib's window bits wbits (31: gzip, 15: zlib) into *out. */
static int compress_with(const uint8_t *in, size_t n, int wbits, uint8_t **out, size_t *out_len)
{
	z_stream z = {0};
	if (deflateInit2(&z, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	size_t cap = deflateBound(&z, (uLong)n);
	if (!(*out = malloc(cap))) {
		deflateEnd(&z);
		return -1;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	int rc = deflate(&z, Z_FINISH);
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
}

struct target_server *target_server_start(const uint8_t *profile, size_t len, unsigned slow_ms)
{
	struct target_server *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->profile = malloc(len ? len : 1);
	memcpy(s->profile, profile, len);
	s->len = len;
	s->slow_ms = slow_ms;
	if (make_bomb(s) || compress_with(profile, len, 31, &s->encoded, &s->encoded_len) ||
	    compress_with(profile, len, 15, &s->deflated, &s->deflated_len) ||
	    compress_with(s->bomb, s->bomb_len, 31, &s->encoded_bomb, &s->encoded_bomb_len)) {
		target_server_stop(s);
		return NULL;
	}
	struct sockaddr_in addr = {0};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = 0;
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
				NULL, handle, s, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
	if (!s->d) {
		target_server_stop(s);
		return NULL;
	}
	return s;
}

void target_server_stop(struct target_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->d)
		MHD_stop_daemon(s->d);
	free(s->profile);
	free(s->bomb);
	free(s->encoded);
	free(s->deflated);
	free(s->encoded_bomb);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

unsigned target_server_port(const struct target_server *s)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	return i ? i->port : 0;
}

unsigned target_server_hits(struct target_server *s, const char *path)
{
	unsigned n = 0;
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < NPATHS; i++)
		if (strcmp(path, paths[i]) == 0)
			n = s->hits[i];
	pthread_mutex_unlock(&s->mu);
	return n;
}
