/* fuzz_api_push.c: libFuzzer target for the multipart/form-data bodies of
 * POST /api/v1/profiles (api_multipart, pkg/api/multipart.c). The input's first
 * line is the request's Content-Type (with its boundary), the rest the body. Any
 * body may be refused; an accepted one must hold: the profile part lies inside
 * the body, and the labels and time fields it added are parameters without a
 * NUL. The profile part is then decoded under a push's limits (scaled down): a
 * refusal for a limit must be PD_ETOOBIG, and an accepted profile must be within
 * them. A broken property aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "profd/pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const uint8_t *in, size_t n)
{
	fprintf(stderr, "fuzz_api_push: BUG: %s\n  input: %.*s\n", what, (int)n, (const char *)in);
	abort();
}

/* The profile part as a push decodes it, under its limits scaled down. */
static void decode_limited(const uint8_t *file, size_t flen, const uint8_t *in, size_t n)
{
	int hit = 0;
	struct pd_pprof_decode_opts o = {.max_decompressed = 4u << 20,
	                                 .max_memory = 1u << 20,
	                                 .max_ratio = PD_PPROF_STORE_MAX_RATIO,
	                                 .max_samples = 1000,
	                                 .max_sample_labels = 16,
	                                 .limit_hit = &hit};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	int rc = pd_pprof_decode(&p, file, flen, &o, &err);
	if (hit && rc != PD_ETOOBIG)
		bug("a refusal for a limit is not PD_ETOOBIG", in, n);
	if (rc == 0 && (hit || pd_pprof_sample_count(p) > o.max_samples))
		bug("an accepted profile is over a limit", in, n);
	pd_pprof_destroy(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	const uint8_t *nl = memchr(data, '\n', size < 512 ? size : 512);
	if (!nl)
		return 0;
	size_t ctl = (size_t)(nl - data);
	char *ct = strndup((const char *)data, ctl);
	if (!ct)
		return 0;
	struct api_req r;
	memset(&r, 0, sizeof(r));
	r.route = -1;
	pd_buf_init(&r.body, 1 << 20);
	/* the body in a buffer of its own size, so reads past it are caught */
	size_t blen = size - ctl - 1;
	if (pd_buf_append(&r.body, nl + 1, blen)) {
		free(ct);
		pd_buf_fini(&r.body);
		return 0;
	}
	const uint8_t *file = NULL;
	size_t flen = 0;
	if (api_multipart(&r, ct, &file, &flen) == 0) {
		if (!file || file < r.body.data || flen > r.body.len ||
		    (size_t)(file - r.body.data) > r.body.len - flen)
			bug("the profile part lies outside the body", data, size);
		if (flen)
			decode_limited(file, flen, data, size);
	}
	for (size_t i = 0; i < r.nparams; i++) {
		if (strcmp(r.params[i].name, "labels") != 0 && strcmp(r.params[i].name, "time") != 0)
			bug("a field other than labels or time became a parameter", data, size);
		free(r.params[i].name);
		free(r.params[i].value);
	}
	free(r.params);
	pd_buf_fini(&r.body);
	free(ct);
	return 0;
}
