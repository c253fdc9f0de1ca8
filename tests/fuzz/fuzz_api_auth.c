/* fuzz_api_auth.c: libFuzzer target for the reader of `Authorization: Basic`
 * headers (pkg/api/basic_auth.c), which every request of a server with
 * basic_auth_users goes through. The input is the header's value. What the reader
 * accepts must hold: the scheme is "Basic " in any case, the user holds no colon,
 * neither part holds a NUL, and encoding "user:password" in base64 gives back the
 * input's credentials exactly (strict base64 has one spelling per byte string). A
 * broken property aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const uint8_t *in, size_t n)
{
	fprintf(stderr, "fuzz_api_auth: BUG: %s\n  input: %.*s\n", what, (int)n, (const char *)in);
	abort();
}

static void b64(const unsigned char *in, size_t n, char *out)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t k = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
		             (i + 2 < n ? in[i + 2] : 0);
		out[k++] = a[v >> 18 & 63];
		out[k++] = a[v >> 12 & 63];
		out[k++] = i + 1 < n ? a[v >> 6 & 63] : '=';
		out[k++] = i + 2 < n ? a[v & 63] : '=';
	}
	out[k] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *h = malloc(size + 1);
	if (!h)
		return 0;
	memcpy(h, data, size);
	h[size] = 0;
	char buf[1024];
	const char *user, *pass;
	if (api_basic_auth_parse(h, buf, sizeof(buf), &user, &pass) == 0) {
		if (strncasecmp(h, "Basic ", 6) != 0)
			bug("accepted another scheme", data, size);
		if (strchr(user, ':'))
			bug("a colon in the user", data, size);
		size_t ul = strlen(user), pl = strlen(pass);
		unsigned char *joined = malloc(ul + pl + 2);
		char *enc = malloc((ul + pl + 3) / 3 * 4 + 8);
		if (joined && enc) {
			memcpy(joined, user, ul);
			joined[ul] = ':';
			memcpy(joined + ul + 1, pass, pl);
			b64(joined, ul + pl + 1, enc);
			if (strcmp(enc, h + 6) != 0)
				bug("the credentials do not encode back to the header", data, size);
		}
		free(joined);
		free(enc);
	}
	free(h);
	return 0;
}
