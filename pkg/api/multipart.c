/* multipart.c: the multipart/form-data bodies POST /api/v1/profiles accepts
 * (RFC 7578): finds the profile's part and the labels and time fields. Apart
 * from push.c so that the fuzz target fuzz_api_push can call it alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_int.h"

/* The first occurrence of needle in hay, or NULL. */
static const uint8_t *find(const uint8_t *hay, size_t hl, const void *needle, size_t nl)
{
	if (nl == 0 || hl < nl)
		return NULL;
	const uint8_t *n = needle;
	for (const uint8_t *p = hay; p + nl <= hay + hl; p++) {
		p = memchr(p, n[0], (size_t)(hay + hl - p));
		if (!p || p + nl > hay + hl)
			return NULL;
		if (memcmp(p, n, nl) == 0)
			return p;
	}
	return NULL;
}

/* Finds the value of attribute attr (e.g. `name`) in a header value such as
 * `form-data; name="file"; filename="heap.pb.gz"`; copies it into out. */
static int header_attr(const char *h, size_t hl, const char *attr, char *out, size_t size)
{
	size_t al = strlen(attr);
	for (size_t i = 0; i + al + 1 < hl; i++) {
		if ((i == 0 || h[i - 1] == ';' || h[i - 1] == ' ' || h[i - 1] == '\t') &&
		    strncasecmp(h + i, attr, al) == 0 && h[i + al] == '=') {
			const char *v = h + i + al + 1;
			const char *end = h + hl;
			size_t n = 0;
			if (*v == '"') {
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

/* Splits a multipart/form-data body: the first part with a filename (or named
 * file or profile) is the profile; `labels` and `time` fields become
 * parameters (after those of the URL, which win). */
int api_multipart(struct api_req *r, const char *ct, const uint8_t **file, size_t *flen)
{
	char boundary[128], delim[140];
	const uint8_t *b = r->body.data;
	size_t len = r->body.len;
	if (!header_attr(ct, strlen(ct), "boundary", boundary, sizeof(boundary)) || !boundary[0])
		return -1;
	int dl = snprintf(delim, sizeof(delim), "--%s", boundary);
	const uint8_t *p = find(b, len, delim, (size_t)dl);
	*file = NULL;
	while (p) {
		p += dl;
		size_t rest = len - (size_t)(p - b);
		if (rest >= 2 && p[0] == '-' && p[1] == '-')
			break;
		if (rest < 2 || p[0] != '\r' || p[1] != '\n')
			return -1;
		p += 2;
		rest -= 2;
		const uint8_t *hend = find(p, rest, "\r\n\r\n", 4);
		if (!hend)
			return -1;
		const uint8_t *data = hend + 4;
		/* the part ends at CRLF + delimiter */
		char end_delim[144];
		int el = snprintf(end_delim, sizeof(end_delim), "\r\n%s", delim);
		const uint8_t *next = find(data, len - (size_t)(data - b), end_delim, (size_t)el);
		if (!next)
			return -1;
		char name[64] = "", filename[256] = "";
		int has_filename = 0;
		for (const uint8_t *h = p; h < hend;) {
			const uint8_t *eol = find(h, (size_t)(hend - h) + 2, "\r\n", 2);
			size_t hl = (size_t)((eol ? eol : hend) - h);
			if (hl > 20 &&
			    strncasecmp((const char *)h, "Content-Disposition:", 20) == 0) {
				header_attr((const char *)h + 20, hl - 20, "name", name,
				            sizeof(name));
				has_filename = header_attr((const char *)h + 20, hl - 20,
				                           "filename", filename, sizeof(filename));
			}
			h = eol ? eol + 2 : hend;
		}
		size_t dlen = (size_t)(next - data);
		if (!*file &&
		    (has_filename || strcmp(name, "file") == 0 || strcmp(name, "profile") == 0)) {
			*file = data;
			*flen = dlen;
		} else if (strcmp(name, "labels") == 0 || strcmp(name, "time") == 0) {
			if (api_param_add(r, name, strlen(name), (const char *)data,
			                  strnlen((const char *)data, dlen)))
				return -1;
		}
		p = next + 2;
	}
	return *file ? 0 : -1;
}

