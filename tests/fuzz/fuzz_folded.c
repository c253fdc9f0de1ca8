/* fuzz_folded.c: folded-stack bodies of Pyroscope's /ingest (groups and lines,
 * chosen by the first byte) through pd_ingest_pyroscope, with small limits so
 * that each limit is reached; a converted profile must decode again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profd/ingest.h"
#include "profd/pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n < 1)
		return 0;
	static const char *const names[] = {"app.cpu{env=x}", "app.wall", "app.alloc_space",
	                                    "app.mutex_duration"};
	struct pd_ingest_params q = {.name = names[d[0] & 3],
	                             .format = (d[0] & 4) ? "lines" : NULL,
	                             .sample_rate = (d[0] & 8) ? "997" : NULL,
	                             .now_ms = 1577836800000LL};
	struct pd_ingest_limits lim = {.max_samples = 64,
	                               .max_stack_depth = 16,
	                               .max_symbol_len = 32,
	                               .max_decompressed = 1 << 20};
	struct pd_ingest_batch b = {0};
	struct pd_err err = {0};
	if (pd_ingest_pyroscope(&q, d + 1, n - 1, &lim, &b, &err) == 0) {
		for (size_t i = 0; i < b.n; i++) {
			struct pd_pprof_profile *p = NULL;
			if (pd_pprof_decode(&p, b.v[i].pprof, b.v[i].len, NULL, &err))
				abort(); /* what was made must read back */
			pd_pprof_destroy(p);
		}
	} else if (b.n != 0) {
		abort(); /* a failed request keeps nothing */
	}
	pd_ingest_batch_fini(&b);
	return 0;
}
