/* redact.c: hides the passwords of URLs (scheme://user:password@host/) in text
 * that profd shows: flag values, the command line, error messages and log
 * lines. The password becomes xxxxx, as Go's URL.Redacted (and so Prometheus)
 * shows it; the user and everything else stay. */
#include <stdlib.h>
#include <string.h>

#include "profd/util.h"

/* The password of the URL whose "://" is at p: *from..*to is the password
 * (the ':' and the '@' excluded). 0 when the URL at p has none. */
static int password_at(const char *p, const char **from, const char **to)
{
	const char *host = p + 3;
	size_t n = strcspn(host, "/?#\\ \t\r\n\"'<>");
	const char *at = NULL;
	for (size_t i = 0; i < n; i++)
		if (host[i] == '@')
			at = host + i;
	if (!at)
		return 0;
	const char *colon = memchr(host, ':', (size_t)(at - host));
	if (!colon)
		return 0;
	*from = colon + 1;
	*to = at;
	return 1;
}

int pd_url_has_password(const char *s)
{
	const char *from, *to;
	for (const char *p = s ? strstr(s, "://") : NULL; p; p = strstr(p + 3, "://"))
		if (password_at(p, &from, &to))
			return 1;
	return 0;
}

void pd_url_passwords_blank(char *s)
{
	const char *from, *to;
	for (char *p = s ? strstr(s, "://") : NULL; p; p = strstr(p + 3, "://"))
		if (password_at(p, &from, &to))
			memset(s + (from - s), 'x', (size_t)(to - from));
}

size_t pd_redact_urls(char *out, size_t cap, const char *s)
{
	size_t n = 0;
	if (!cap)
		return 0;
#define PUT(src, len)                                                                              \
	do {                                                                                       \
		size_t l_ = (len);                                                                 \
		if (l_ > cap - 1 - n)                                                              \
			l_ = cap - 1 - n;                                                          \
		memcpy(out + n, (src), l_);                                                        \
		n += l_;                                                                           \
	} while (0)
	const char *p = s ? s : "";
	const char *q;
	while ((q = strstr(p, "://"))) {
		const char *from, *to;
		if (!password_at(q, &from, &to)) {
			PUT(p, (size_t)(q + 3 - p));
			p = q + 3;
			continue;
		}
		PUT(p, (size_t)(from - p));
		PUT("xxxxx", 5);
		p = to;
	}
	PUT(p, strlen(p));
#undef PUT
	out[n] = '\0';
	return n;
}

char *pd_redact_urls_dup(const char *s)
{
	size_t cap = strlen(s ? s : "") + 1;
	for (const char *p = s ? strstr(s, "://") : NULL; p; p = strstr(p + 3, "://"))
		cap += 5;
	char *out = malloc(cap);
	if (out)
		pd_redact_urls(out, cap, s);
	return out;
}
