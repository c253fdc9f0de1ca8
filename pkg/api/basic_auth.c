/* basic_auth.c: reads the credentials of an `Authorization: Basic` header as Go's
 * Request.BasicAuth does: the scheme in any case, then standard base64 with
 * padding, strictly (no whitespace, no missing or misplaced padding), then
 * "user:password" split at the first colon. Hand-written rather than OpenSSL's
 * EVP_DecodeBlock, which skips whitespace and reports padding as data, so that
 * profd accepts exactly the headers a Go server accepts. */
#include <string.h>
#include <strings.h>

#include "api_int.h"

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes standard padded base64; -1 when malformed or longer than cap. */
static int b64_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *outlen)
{
	size_t k = 0;
	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		for (int j = 0; j < 4; j++) {
			unsigned char c = (unsigned char)in[i + j];
			if (c == '=' && i + 4 == n && j >= 2) {
				v[j] = 0;
				pad++;
				continue;
			}
			if (pad || (v[j] = b64_value(c)) < 0)
				return -1; /* data after padding, or not base64 */
		}
		unsigned bits = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 |
		                (unsigned)v[3];
		/* Go's decoder is strict: the bits padding drops must be zero */
		if ((pad == 1 && (bits & 0xff)) || (pad == 2 && (bits & 0xffff)))
			return -1;
		unsigned char b[3] = {(unsigned char)(bits >> 16), (unsigned char)(bits >> 8),
		                      (unsigned char)bits};
		if (k + (size_t)(3 - pad) > cap)
			return -1;
		memcpy(out + k, b, (size_t)(3 - pad));
		k += (size_t)(3 - pad);
	}
	*outlen = k;
	return 0;
}

int api_basic_auth_parse(const char *header, char *buf, size_t cap, const char **user,
                         const char **pass)
{
	if (!header || cap == 0 || strncasecmp(header, "Basic ", 6) != 0)
		return -1;
	const char *b = header + 6;
	size_t n;
	if (b64_decode(b, strlen(b), (unsigned char *)buf, cap - 1, &n))
		return -1;
	buf[n] = 0;
	char *colon = memchr(buf, ':', n);
	if (!colon || memchr(buf, 0, n))
		return -1; /* no colon; or a NUL, which C strings would cut short */
	*colon = 0;
	*user = buf;
	*pass = colon + 1;
	return 0;
}
