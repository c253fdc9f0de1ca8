/* fuzz_legacy_java.c: libFuzzer target of Java's legacy text profile reader and
 * its symbol lines (pkg/pprof/legacy_java.c). Any input may be refused; an
 * accepted one must pass fuzz_legacy.h's checks. */
#include "fuzz_legacy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	struct pd_pprof_decode_opts o = {.max_samples = 100000};
	int rc = pd_pprof_legacy_java(&p, (const char *)data, size, &o, &err);
	pd_fuzz_legacy_error(rc, &err);
	if (rc == 0)
		pd_fuzz_legacy_check(p);
	return 0;
}
