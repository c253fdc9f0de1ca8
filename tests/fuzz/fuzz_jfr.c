/* fuzz_jfr.c: libFuzzer target for the JFR converter (ingest_jfr). The input is
 * a JFR recording sent as the body itself; when its first byte is 'L', the next
 * byte n splits the rest into a labels part of n bytes and the recording, sent
 * together as a multipart body. Whatever the bytes, the call must return an
 * error or profiles whose pprof decodes, never crash or leak, and keep nothing
 * on failure. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_int.h"

#define BOUNDARY "fuzzjfrboundary0123456789"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static uint8_t *multipart(const uint8_t *jfr, size_t jl, const uint8_t *lab, size_t ll, size_t *out)
{
	static const char h1[] = "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"jfr\"; "
	                         "filename=\"jfr\"\r\n\r\n";
	static const char h2[] = "\r\n--" BOUNDARY "\r\nContent-Disposition: form-data; "
	                         "name=\"labels\"; filename=\"labels\"\r\n\r\n";
	static const char end[] = "\r\n--" BOUNDARY "--\r\n";
	size_t n = sizeof(h1) - 1 + jl + sizeof(h2) - 1 + ll + sizeof(end) - 1;
	uint8_t *b = malloc(n), *p = b;
	if (!b)
		return NULL;
	memcpy(p, h1, sizeof(h1) - 1);
	p += sizeof(h1) - 1;
	memcpy(p, jfr, jl);
	p += jl;
	memcpy(p, h2, sizeof(h2) - 1);
	p += sizeof(h2) - 1;
	memcpy(p, lab, ll);
	p += ll;
	memcpy(p, end, sizeof(end) - 1);
	*out = n;
	return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct pd_labels *ls = NULL;
	struct pd_err err;
	if (pd_labels_from_strings(&ls, &err, "service_name", "fuzz", NULL))
		abort();
	struct ingest_meta m = {.labels = ls,
	                        .app = "fuzz",
	                        .type = "cpu",
	                        .from_ms = 1700000000000,
	                        .until_ms = 1700000010000,
	                        .sample_rate = 100,
	                        .spy_name = "javaspy",
	                        .aggregation = "sum"};
	struct pd_ingest_limits lim = {.max_decompressed = 4 << 20, .max_profiles = 64};
	struct pd_ingest_batch b = {0};
	uint8_t *body = NULL;
	size_t blen = len;
	const char *ct = "application/octet-stream";
	if (len >= 2 && data[0] == 'L') {
		size_t ll = data[1] < len - 2 ? data[1] : len - 2;
		body = multipart(data + 2 + ll, len - 2 - ll, data + 2, ll, &blen);
		if (!body)
			abort();
		ct = "multipart/form-data; boundary=" BOUNDARY;
	}
	int rc = ingest_jfr(&m, body ? body : data, blen, ct, &lim, &b, &err);
	if (rc && b.n)
		abort(); /* a failure keeps nothing */
	for (size_t i = 0; i < b.n; i++) {
		struct pd_pprof_profile *p = NULL;
		if (pd_pprof_decode(&p, b.v[i].pprof, b.v[i].len, NULL, &err))
			abort(); /* what was made must read back */
		pd_pprof_destroy(p);
	}
	pd_ingest_batch_fini(&b);
	free(body);
	pd_labels_destroy(ls);
	return 0;
}
