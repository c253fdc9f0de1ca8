/* fuzz_speedscope.c: speedscope JSON bodies of Pyroscope's /ingest through
 * pd_ingest_pyroscope, with small limits (JSON depth, stack depth, samples,
 * profiles); a converted profile must decode again. */
#include <stdint.h>
#include <stdlib.h>

#include "profd/ingest.h"
#include "profd/pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct pd_ingest_params q = {
	    .name = "foo{x=y}", .format = "speedscope", .now_ms = 1577836800000LL};
	struct pd_ingest_limits lim = {.max_samples = 256,
	                               .max_stack_depth = 32,
	                               .max_json_depth = 16,
	                               .max_profiles = 8,
	                               .max_symbol_len = 64,
	                               .max_decompressed = 1 << 20};
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	if (pd_ingest_pyroscope(&q, d, n, &lim, &b, &err) == 0) {
		for (size_t i = 0; i < b.n; i++) {
			struct pd_pprof_profile *p = NULL;
			if (pd_pprof_decode(&p, b.v[i].pprof, b.v[i].len, NULL, &err))
				abort();
			pd_pprof_destroy(p);
		}
	} else if (b.n != 0) {
		abort();
	}
	pd_ingest_batch_fini(&b);
	return 0;
}
