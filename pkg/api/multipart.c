/* multipart.c: the multipart/form-data bodies POST /api/v1/profiles accepts
 * (RFC 7578), split by pkg/ingest's reader: the first part with a filename (or
 * named file or profile) is the profile; `labels` and `time` fields become
 * parameters. Apart from push.c so that the fuzz target fuzz_api_push can call it
 * alone. */
#include <string.h>

#include "api_int.h"
#include "profd/ingest.h"

/* parts of a push form read at most; a push has two or three */
#define API_MULTIPART_MAX 32

int api_multipart(struct api_req *r, const char *ct, const uint8_t **file, size_t *flen)
{
	struct pd_ingest_part parts[API_MULTIPART_MAX];
	size_t n = 0;
	*file = NULL;
	if (pd_ingest_multipart(r->body.data, r->body.len, ct, parts, API_MULTIPART_MAX, &n, NULL))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct pd_ingest_part *p = &parts[i];
		if (!*file && (p->filename[0] || strcmp(p->name, "file") == 0 ||
			       strcmp(p->name, "profile") == 0)) {
			*file = p->data;
			*flen = p->len;
		} else if (strcmp(p->name, "labels") == 0 || strcmp(p->name, "time") == 0) {
			/* the URL's parameters, added first, win */
			if (api_param_add(r, p->name, strlen(p->name), (const char *)p->data,
					  strnlen((const char *)p->data, p->len)))
				return -1;
		}
	}
	return *file ? 0 : -1;
}
