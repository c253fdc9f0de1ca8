/* target_server.h: a scrape target for tests: an HTTP server on 127.0.0.1 (a free
 * port) that serves real profiles and misbehaves on purpose. Paths:
 *   /ok          the profile given at start, as a pprof endpoint serves it
 *   /slow        the same, after a delay of slow_ms
 *   /500         an HTTP 500
 *   /garbage     200 with bytes that are not a profile
 *   /bomb        200 with a gzip stream that inflates to 320 MiB
 *   /endless     200 with a body that never ends
 *   /empty       200 with no body
 *   /auth        the profile, only with "Authorization: Bearer secret" (else 401)
 *   /encoded     the profile gzip-compressed once more, with Content-Encoding: gzip
 *   /deflate     the profile zlib-compressed, with Content-Encoding: deflate
 *   /encoded-bomb  the /bomb stream with Content-Encoding: gzip (inflates to
 *                a gzip "profile" of about 320 KiB, which inflates to 320 MiB)
 *   /brotli      the profile labelled Content-Encoding: br, which profd refuses
 * Every request is counted per path. */
#ifndef PROFD_TEST_TARGET_SERVER_H
#define PROFD_TEST_TARGET_SERVER_H

#include <stddef.h>
#include <stdint.h>

struct target_server;

/* Starts a server; profile is copied. NULL on failure. */
struct target_server *target_server_start(const uint8_t *profile, size_t len, unsigned slow_ms);
void target_server_stop(struct target_server *s);
unsigned target_server_port(const struct target_server *s);
/* Requests seen on a path so far. */
unsigned target_server_hits(struct target_server *s, const char *path);

#endif
