/* fuzz_legacy_text.c: libFuzzer target of the text heap, growth, Go count, thread
 * and contention readers (pkg/pprof/legacy_text.c), each run on the input, and
 * the memory map reader behind them. Any input may be refused; an accepted one
 * must pass fuzz_legacy.h's checks. */
#include "fuzz_legacy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int (*readers[])(struct pd_pprof_profile **, const char *, size_t,
	                 const struct pd_pprof_decode_opts *,
	                 struct pd_err *) = {pd_pprof_legacy_heap, pd_pprof_legacy_count,
	                                     pd_pprof_legacy_thread, pd_pprof_legacy_contention};
	struct pd_pprof_decode_opts o = {.max_samples = 100000};
	for (size_t i = 0; i < sizeof(readers) / sizeof(*readers); i++) {
		struct pd_pprof_profile *p = NULL;
		struct pd_err err = {0};
		int rc = readers[i](&p, (const char *)data, size, &o, &err);
		pd_fuzz_legacy_error(rc, &err);
		if (rc == 0)
			pd_fuzz_legacy_check(p);
	}
	return 0;
}
