/* basic_auth.c: reads the credentials of an `Authorization: Basic` header as Go's
 * Request.BasicAuth does: the scheme in any case, then standard base64 with
 * padding, strictly (no whitespace, no missing or misplaced padding), then
 * "user:password" split at the first colon (pd_base64_decode's strict form), so
 * that profd accepts exactly the headers a Go server accepts. */
#include <string.h>
#include <strings.h>

#include "api_int.h"

int api_basic_auth_parse(const char *header, char *buf, size_t cap, const char **user,
                         const char **pass)
{
	if (!header || cap == 0 || strncasecmp(header, "Basic ", 6) != 0)
		return -1;
	const char *b = header + 6;
	size_t n;
	if (pd_base64_decode(b, strlen(b), PD_BASE64_STRICT, (uint8_t *)buf, cap - 1, &n))
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
