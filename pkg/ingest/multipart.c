/* multipart.c: multipart/form-data bodies (RFC 7578) split into their parts, as
 * the Pyroscope SDKs send them to /ingest (`profile`, `prev_profile`,
 * `sample_type_config`; `jfr`, `labels`). Only the Content-Disposition header of
 * a part is read; the body is never copied. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ingest_int.h"

/* The first occurrence of needle in hay, or NULL. */
static const uint8_t *find(const uint8_t *hay, size_t hl, const void *needle, size_t nl)
{
	if (nl == 0 || hl < nl)
		return NULL;
	const uint8_t *n = needle;
	const uint8_t *end = hay + hl;
	for (const uint8_t *p = hay; p + nl <= end; p++) {
		p = memchr(p, n[0], (size_t)(end - p));
		if (!p || p + nl > end)
			return NULL;
		if (memcmp(p, n, nl) == 0)
			return p;
	}
	return NULL;
}

/* The value of attribute attr in a header value such as
 * `form-data; name="profile"; filename="cpu.pprof"`, copied into out. */
static int header_attr(const char *h, size_t hl, const char *attr, char *out, size_t size)
{
	size_t al = strlen(attr);
	for (size_t i = 0; i + al + 1 < hl; i++) {
		if ((i == 0 || h[i - 1] == ';' || h[i - 1] == ' ' || h[i - 1] == '\t') &&
		    strncasecmp(h + i, attr, al) == 0 && h[i + al] == '=') {
			const char *v = h + i + al + 1;
			const char *end = h + hl;
			size_t n = 0;
			if (v < end && *v == '"') {
				v++;
				while (v + n < end && v[n] != '"')
					n++;
			} else {
				while (v + n < end && v[n] != ';' && v[n] != ' ' && v[n] != '\r')
					n++;
			}
			if (n >= size)
				n = size - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 1;
		}
	}
	return 0;
}

int pd_ingest_multipart(const uint8_t *body, size_t len, const char *content_type,
			struct pd_ingest_part *parts, size_t max, size_t *n, struct pd_err *err)
{
	char boundary[128], delim[136], end_delim[140];
	*n = 0;
	if (!content_type ||
	    !header_attr(content_type, strlen(content_type), "boundary", boundary,
			 sizeof(boundary)) ||
	    !boundary[0])
		return pd_err_set(err, PD_EINVAL,
				  "the multipart/form-data Content-Type has no boundary");
	if (!body || len == 0)
		return pd_err_set(err, PD_EINVAL, "the multipart body is empty");
	int dl = snprintf(delim, sizeof(delim), "--%s", boundary);
	int el = snprintf(end_delim, sizeof(end_delim), "\r\n--%s", boundary);
	const uint8_t *end = body + len;
	const uint8_t *p = find(body, len, delim, (size_t)dl);
	if (!p)
		return pd_err_set(err, PD_EINVAL,
				  "the multipart body does not contain its boundary \"%s\"",
				  boundary);
	for (;;) {
		p += dl;
		size_t rest = (size_t)(end - p);
		if (rest >= 2 && p[0] == '-' && p[1] == '-')
			break;
		if (rest < 2 || p[0] != '\r' || p[1] != '\n')
			return pd_err_set(err, PD_EINVAL,
					  "multipart part %zu: no line break after the boundary "
					  "at byte %zu",
					  *n + 1, (size_t)(p - body));
		p += 2;
		rest -= 2;
		const uint8_t *hend = find(p, rest, "\r\n\r\n", 4);
		if (!hend && rest >= 2 && p[0] == '\r' && p[1] == '\n')
			hend = p - 2; /* a part without headers */
		if (!hend)
			return pd_err_set(err, PD_EINVAL,
					  "multipart part %zu: its headers do not end", *n + 1);
		const uint8_t *data = hend + 4;
		const uint8_t *next = find(data, (size_t)(end - data), end_delim, (size_t)el);
		if (!next)
			return pd_err_set(err, PD_EINVAL,
					  "multipart part %zu: no closing boundary after it",
					  *n + 1);
		if (*n == max)
			return pd_err_set(err, PD_ETOOBIG,
					  "the multipart body has more than %zu parts", max);
		struct pd_ingest_part *pt = &parts[*n];
		memset(pt, 0, sizeof(*pt));
		for (const uint8_t *h = p; h < hend;) {
			const uint8_t *eol = find(h, (size_t)(hend - h) + 2, "\r\n", 2);
			size_t hl = (size_t)((eol ? eol : hend) - h);
			if (hl > 20 && strncasecmp((const char *)h, "Content-Disposition:", 20) == 0) {
				header_attr((const char *)h + 20, hl - 20, "name", pt->name_buf,
					    sizeof(pt->name_buf));
				header_attr((const char *)h + 20, hl - 20, "filename",
					    pt->filename_buf, sizeof(pt->filename_buf));
			}
			h = eol ? eol + 2 : hend;
		}
		pt->name = pt->name_buf;
		pt->filename = pt->filename_buf;
		pt->data = data;
		pt->len = (size_t)(next - data);
		(*n)++;
		p = next + 2;
	}
	return 0;
}

const struct pd_ingest_part *pd_ingest_part_get(const struct pd_ingest_part *parts, size_t n,
						const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(parts[i].name, name) == 0)
			return &parts[i];
	return NULL;
}
