/* fuzz_ingest_params.c: the query parameters of Pyroscope's /ingest (name, from,
 * until, sampleRate, spyName, aggregationType: the input's first six lines) and a
 * multipart/form-data body (the rest, boundary "B": profile, prev_profile and
 * sample_type_config parts) through pd_ingest_pyroscope. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profd/ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	char *field[6] = {0};
	char *p = s;
	size_t k = 0;
	for (; k < 6; k++) {
		char *nl = memchr(p, '\n', (size_t)(s + n - p));
		if (!nl)
			break;
		*nl = '\0';
		field[k] = p;
		p = nl + 1;
	}
	struct pd_ingest_params q = {.name = field[0],
	                             .from = field[1],
	                             .until = field[2],
	                             .sample_rate = field[3],
	                             .spy_name = field[4],
	                             .aggregation_type = field[5],
	                             .content_type = "multipart/form-data; boundary=B",
	                             .now_ms = 1577836800000LL};
	struct pd_ingest_limits lim = {
	    .max_samples = 4096, .max_json_depth = 8, .max_decompressed = 1 << 20, .max_labels = 8};
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	if (pd_ingest_pyroscope(&q, (const uint8_t *)p, (size_t)(s + n - p), &lim, &b, &err) &&
	    b.n != 0)
		abort();
	pd_ingest_batch_fini(&b);
	free(s);
	return 0;
}
