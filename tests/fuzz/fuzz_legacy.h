/* fuzz_legacy.h: what the legacy fuzz targets (fuzz_legacy_cpu.c, _text.c,
 * _java.c) check of an accepted input: the profile encodes, decodes again to the
 * same bytes, and gives a top of every sample type. A failure other than a memory
 * or size limit is a bug, and aborts. */
#ifndef PROFD_FUZZ_LEGACY_H
#define PROFD_FUZZ_LEGACY_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "legacy_int.h"
#include "profd/pprof.h"

static void pd_fuzz_legacy_bug(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_legacy: BUG: %s: %s\n", what, err ? err->msg : "");
	abort();
}

static int pd_fuzz_legacy_limit(int rc)
{
	return rc == PD_ENOMEM || rc == PD_ETOOBIG;
}

/* Checks and frees p. */
static void pd_fuzz_legacy_check(struct pd_pprof_profile *p)
{
	struct pd_err err = {0};
	uint8_t *a = NULL, *b = NULL;
	size_t an = 0, bn = 0;
	struct pd_pprof_profile *q = NULL;
	int rc = pd_pprof_encode(p, 0, &a, &an, &err);
	if (rc && !pd_fuzz_legacy_limit(rc))
		pd_fuzz_legacy_bug("encode", &err);
	if (!rc) {
		struct pd_pprof_decode_opts o = {.max_decompressed = (size_t)256 << 20};
		rc = pd_pprof_decode(&q, a, an, &o, &err);
		if (rc && !pd_fuzz_legacy_limit(rc))
			pd_fuzz_legacy_bug("decode of the encoding", &err);
		if (!rc) {
			if (pd_pprof_encode(q, 0, &b, &bn, &err))
				pd_fuzz_legacy_bug("encode again", &err);
			if (an != bn || memcmp(a, b, an))
				pd_fuzz_legacy_bug("encodings differ", NULL);
		}
	}
	for (size_t i = 0; i < pd_pprof_sample_type_count(p); i++) {
		struct pd_pprof_top *t = NULL;
		rc = pd_pprof_top(p, (int)i, &t, &err);
		if (rc && !pd_fuzz_legacy_limit(rc))
			pd_fuzz_legacy_bug("top", &err);
		pd_pprof_top_destroy(t);
	}
	free(a);
	free(b);
	pd_pprof_destroy(q);
	pd_pprof_destroy(p);
}

/* An error must say something. */
static void pd_fuzz_legacy_error(int rc, const struct pd_err *err)
{
	if (rc < 0 && !err->msg[0])
		pd_fuzz_legacy_bug("an error without a message", err);
}

#endif
