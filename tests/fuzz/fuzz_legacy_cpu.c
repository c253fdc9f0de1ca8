/* fuzz_legacy_cpu.c: libFuzzer target of gperftools' (and Java's) binary CPU
 * profile reader (pkg/pprof/legacy_cpu.c) with its memory map section. Any input
 * may be refused; an accepted one must pass fuzz_legacy.h's checks. */
#include "fuzz_legacy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	struct pd_pprof_decode_opts o = {.max_samples = 100000};
	int rc = pd_pprof_legacy_cpu(&p, data, size, &o, &err);
	pd_fuzz_legacy_error(rc, &err);
	if (rc == 0)
		pd_fuzz_legacy_check(p);
	return 0;
}
