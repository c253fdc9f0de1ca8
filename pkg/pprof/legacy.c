/* legacy.c: the legacy profile formats that `go tool pprof` reads, tried in its
 * order on bytes that are not a protobuf profile: gperftools' binary CPU
 * profile (legacy_cpu.c), the text heap, count, thread and contention profiles
 * (legacy_text.c), Java's text profiles (legacy_java.c). The first reader that
 * recognises the bytes decides: its error, if any, is the answer. */
#include "legacy_int.h"

int pd_pprof_legacy_decode(struct pd_pprof_profile **out, const uint8_t *buf, size_t len,
                           const struct pd_pprof_decode_opts *opts, struct pd_err *err)
{
	int rc = pd_pprof_legacy_cpu(out, buf, len, opts, err);
	if (rc != PD_PPROF_LEGACY_NOT_MINE)
		return rc;
	const char *t = (const char *)buf;
	if ((rc = pd_pprof_legacy_heap(out, t, len, opts, err)) != PD_PPROF_LEGACY_NOT_MINE ||
	    (rc = pd_pprof_legacy_count(out, t, len, opts, err)) != PD_PPROF_LEGACY_NOT_MINE ||
	    (rc = pd_pprof_legacy_thread(out, t, len, opts, err)) != PD_PPROF_LEGACY_NOT_MINE ||
	    (rc = pd_pprof_legacy_contention(out, t, len, opts, err)) != PD_PPROF_LEGACY_NOT_MINE ||
	    (rc = pd_pprof_legacy_java(out, t, len, opts, err)) != PD_PPROF_LEGACY_NOT_MINE)
		return rc;
	return PD_PPROF_LEGACY_NOT_MINE;
}
