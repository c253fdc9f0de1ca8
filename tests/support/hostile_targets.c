/* hostile_targets.c: scrape targets that attack the scraper, beside one that
 * behaves, for the hostile-targets integration test. An HTTP server on 127.0.0.1
 * (a free port, written to ADDR_FILE as host:port once it listens):
 *   /ok              the profile file given, as a pprof endpoint serves it
 *   /encoded-bomb    Content-Encoding: gzip, 4 MiB of body inflating to 4 GiB
 *   /gzip-bomb       a gzip "profile" (no Content-Encoding) inflating to 1 GiB
 *   /endless         a body that never ends
 *   /trickle         one byte a second, forever
 *   /garbage         bytes that are not a profile
 *   /many-locations  a valid gzip profile with 1,000,000 locations
 *   /empty-samples   60 KB of gzip inflating to 60 MiB of empty samples
 *   /raw-empty-samples  8 MiB of empty samples, uncompressed (80 bytes each decoded)
 *   /redirect-loop   a redirect to itself
 * It runs until killed, until its parent exits, or for 10 minutes at most.
 *
 *   hostile_targets ADDR_FILE PROFILE */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <zlib.h>

#include "profd/util.h"

static uint8_t *profile, *encoded_bomb, *gzip_bomb, *many, *empty_gz, *empty_raw;
static size_t profile_len, encoded_bomb_len, gzip_bomb_len, many_len, empty_gz_len, empty_raw_len;

/* A gzip stream of mib MiB of zeros, built without compressing them all: after a
 * full flush deflate's output is byte-aligned and independent of what came
 * before, so the compressed form of one MiB repeats. */
static int zero_bomb(unsigned mib, uint8_t **out, size_t *out_len)
{
	size_t chunk = 1 << 20;
	uint8_t *zeros = calloc(1, chunk), *one = malloc(chunk), *tail = malloc(64);
	z_stream z = {0};
	int rc = -1;
	if (!zeros || !one || !tail ||
	    deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		goto out;
	/* the first MiB primes nothing (the window starts empty); the second is the unit */
	for (int pass = 0; pass < 2; pass++) {
		z.next_in = zeros;
		z.avail_in = (uInt)chunk;
		z.next_out = one;
		z.avail_out = (uInt)chunk;
		deflate(&z, Z_FULL_FLUSH);
	}
	size_t unit = chunk - z.avail_out;
	z.next_in = NULL;
	z.avail_in = 0;
	z.next_out = tail;
	z.avail_out = 64;
	deflate(&z, Z_FINISH);
	size_t tail_len = 64 - z.avail_out;
	deflateEnd(&z);
	size_t n = 10 + unit * mib + tail_len + 8;
	uint8_t *b = malloc(n), *p = b;
	if (!b)
		goto out;
	static const uint8_t hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	memcpy(p, hdr, 10);
	p += 10;
	uLong crc_mib = crc32(0, zeros, (uInt)chunk), crc = 0;
	for (unsigned i = 0; i < mib; i++) {
		memcpy(p, one, unit);
		p += unit;
		crc = crc32_combine(crc, crc_mib, (z_off_t)chunk);
	}
	memcpy(p, tail, tail_len);
	p += tail_len;
	uint32_t size = (uint32_t)((uint64_t)mib << 20);
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(crc >> (8 * i));
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(size >> (8 * i));
	*out = b;
	*out_len = (size_t)(p - b);
	rc = 0;
out:
	free(zeros);
	free(one);
	free(tail);
	return rc;
}

/* ---- a profile with many locations, written as protobuf by hand ------------- */

static int put_varint(struct pd_buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	do {
		t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return pd_buf_append(b, t, n);
}

static int put_field(struct pd_buf *b, unsigned field, const struct pd_buf *msg)
{
	return put_varint(b, (uint64_t)field << 3 | 2) || put_varint(b, msg->len) ||
	       pd_buf_append(b, msg->data, msg->len);
}

static int put_string(struct pd_buf *b, const char *s)
{
	size_t n = strlen(s);
	return put_varint(b, 6 << 3 | 2) || put_varint(b, n) || pd_buf_append(b, s, n);
}

/* A profile of one sample type and mib MiB of empty samples (2 bytes each), gzip
 * compressed when gz. */
static int empty_samples(unsigned mib, int gz, uint8_t **out, size_t *out_len)
{
	static const uint8_t head[] = {0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x32, 0x00,
	                               0x32, 0x07, 's',  'a',  'm',  'p',  'l',  'e',
	                               's',  0x32, 0x05, 'c',  'o',  'u',  'n',  't'};
	size_t n = sizeof(head) + ((size_t)mib << 20);
	uint8_t *b = malloc(n);
	if (!b)
		return -1;
	memcpy(b, head, sizeof(head));
	for (size_t i = sizeof(head); i + 1 < n; i += 2) {
		b[i] = 0x12;
		b[i + 1] = 0x00;
	}
	if (!gz) {
		*out = b;
		*out_len = n - (n - sizeof(head)) % 2;
		return 0;
	}
	int rc = pd_gzip(b, n - (n - sizeof(head)) % 2, 9, out, out_len, NULL);
	free(b);
	return rc;
}

/* nloc locations in one function, the first 100,000 of them in samples of depth
 * 1000 (the rest unreferenced, as pprof allows): about 12 bytes of protobuf per
 * location, and over a hundred once decoded. */
static int many_locations(uint32_t nloc, uint8_t **out, size_t *out_len)
{
	struct pd_buf p, m, s;
	int rc = -1;
	pd_buf_init(&p, 0);
	pd_buf_init(&m, 0);
	pd_buf_init(&s, 0);
	/* sample_type {type: "samples", unit: "count"} */
	if (put_varint(&m, 1 << 3) || put_varint(&m, 1) || put_varint(&m, 2 << 3) ||
	    put_varint(&m, 2) || put_field(&p, 1, &m))
		goto out;
	for (uint32_t first = 1; first <= nloc && first <= 100000; first += 1000) {
		m.len = s.len = 0;
		for (uint32_t id = first; id < first + 1000 && id <= nloc; id++)
			if (put_varint(&s, id))
				goto out;
		if (put_varint(&m, 1 << 3 | 2) || put_varint(&m, s.len) ||
		    pd_buf_append(&m, s.data, s.len) || put_varint(&m, 2 << 3) ||
		    put_varint(&m, 1) || put_field(&p, 2, &m))
			goto out;
	}
	for (uint32_t id = 1; id <= nloc; id++) {
		/* location {id, line {function_id: 1, line: 1}} */
		m.len = s.len = 0;
		if (put_varint(&s, 1 << 3) || put_varint(&s, 1) || put_varint(&s, 2 << 3) ||
		    put_varint(&s, 1) || put_varint(&m, 1 << 3) || put_varint(&m, id) ||
		    put_field(&m, 4, &s) || put_field(&p, 4, &m))
			goto out;
	}
	/* function {id: 1, name: "f", system_name: "f", filename: "x.go"} */
	m.len = 0;
	if (put_varint(&m, 1 << 3) || put_varint(&m, 1) || put_varint(&m, 2 << 3) ||
	    put_varint(&m, 3) || put_varint(&m, 3 << 3) || put_varint(&m, 3) ||
	    put_varint(&m, 4 << 3) || put_varint(&m, 4) || put_field(&p, 5, &m))
		goto out;
	if (put_string(&p, "") || put_string(&p, "samples") || put_string(&p, "count") ||
	    put_string(&p, "f") || put_string(&p, "x.go"))
		goto out;
	rc = pd_gzip(p.data, p.len, 6, out, out_len, NULL);
out:
	pd_buf_fini(&p);
	pd_buf_fini(&m);
	pd_buf_fini(&s);
	return rc;
}

/* ---- serving ------------------------------------------------------------------ */

static ssize_t endless(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	(void)pos;
	memset(buf, 'x', max);
	return (ssize_t)max;
}

static ssize_t trickle(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	(void)max;
	if (pos > 0)
		sleep(1);
	buf[0] = 'x';
	return 1;
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
	MHD_add_response_header(r, "Content-Type", "application/octet-stream");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const void *p, size_t n)
{
	return queue(c, status,
	             MHD_create_response_from_buffer(n, (void *)p, MHD_RESPMEM_PERSISTENT));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state)
{
	static const char garbage[] = "\x08\x96\x01 this is not a profile \xff\xfe\x00\x01 at all";
	(void)cls;
	(void)method;
	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	if (!strcmp(url, "/ok"))
		return reply(c, 200, profile, profile_len);
	if (!strcmp(url, "/encoded-bomb")) {
		struct MHD_Response *r = MHD_create_response_from_buffer(
		    encoded_bomb_len, encoded_bomb, MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Content-Encoding", "gzip");
		return queue(c, 200, r);
	}
	if (!strcmp(url, "/gzip-bomb"))
		return reply(c, 200, gzip_bomb, gzip_bomb_len);
	if (!strcmp(url, "/endless"))
		return queue(c, 200,
		             MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, endless,
		                                               NULL, NULL));
	if (!strcmp(url, "/trickle"))
		return queue(
		    c, 200,
		    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16, trickle, NULL, NULL));
	if (!strcmp(url, "/garbage"))
		return reply(c, 200, garbage, sizeof(garbage) - 1);
	if (!strcmp(url, "/many-locations"))
		return reply(c, 200, many, many_len);
	if (!strcmp(url, "/empty-samples"))
		return reply(c, 200, empty_gz, empty_gz_len);
	if (!strcmp(url, "/raw-empty-samples"))
		return reply(c, 200, empty_raw, empty_raw_len);
	if (!strcmp(url, "/redirect-loop")) {
		struct MHD_Response *r =
		    MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Location", "/redirect-loop");
		return queue(c, 302, r);
	}
	return reply(c, 404, "not found\n", 10);
}

int main(int argc, char **argv)
{
	struct pd_err err = {0};
	if (argc != 3) {
		fprintf(stderr, "usage: hostile_targets ADDR_FILE PROFILE\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* stop by itself: with the test that started it, and after 10 minutes */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	alarm(600);
	if (pd_file_read(argv[2], 64 << 20, &profile, &profile_len, &err)) {
		fprintf(stderr, "hostile_targets: %s\n", err.msg);
		return 1;
	}
	if (zero_bomb(4096, &encoded_bomb, &encoded_bomb_len) ||
	    zero_bomb(1024, &gzip_bomb, &gzip_bomb_len) ||
	    many_locations(1000000, &many, &many_len) ||
	    empty_samples(60, 1, &empty_gz, &empty_gz_len) ||
	    empty_samples(8, 0, &empty_raw, &empty_raw_len)) {
		fprintf(stderr, "hostile_targets: cannot build the bodies\n");
		return 1;
	}
	struct sockaddr_in addr = {0};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct MHD_Daemon *d =
	    MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
	                     NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "hostile_targets: cannot listen on 127.0.0.1\n");
		return 1;
	}
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "127.0.0.1:%u\n", i ? i->port : 0) < 0 || fclose(f) ||
	    rename(tmp, argv[1])) {
		fprintf(stderr, "hostile_targets: cannot write %s\n", argv[1]);
		return 1;
	}
	fprintf(stderr,
	        "hostile_targets: encoded bomb %zu bytes, gzip bomb %zu bytes, %zu bytes of "
	        "many locations, %zu of gzip empty samples\n",
	        encoded_bomb_len, gzip_bomb_len, many_len, empty_gz_len);
	for (;;)
		pause();
}
