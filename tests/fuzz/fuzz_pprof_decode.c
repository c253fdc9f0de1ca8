/* fuzz_pprof_decode.c: libFuzzer target for the pprof decoder, the parser of the
 * bytes that scrape targets send us. Any input may be rejected; an input that is
 * accepted must then survive everything the server does with a profile: encoding
 * (raw and gzip) and decoding the result, which must succeed and encode to the
 * same bytes again, top and flame graph (and its JSON) for every sample type,
 * merging the profile with itself and diffing it against itself. A failure of
 * those steps other than a memory or size limit is a bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "profd/util.h"

/* Small, so that the fuzzer spends its time on structure rather than on size. */
#define PD_FUZZ_MAX_DECOMPRESSED ((size_t)4 << 20)
/* What re-decoding our own output may use: generous, since our encoding can be
 * smaller than a non-canonical input that decoded under the default cap. */
#define PD_FUZZ_REDECODE_MAX ((size_t)256 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void pd_fuzz_bug(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_pprof_decode: BUG: %s: %s (%s)\n", what, err ? err->msg : "",
		err ? pd_strerror(err->code) : "");
	abort();
}

/* Resource limits are a legitimate way for a step to fail; anything else is a bug. */
static int pd_fuzz_limit(int rc)
{
	return rc == PD_ENOMEM || rc == PD_ETOOBIG;
}

/* encode(p) decodes again, and the decoded profile encodes to the same bytes. */
static void pd_fuzz_roundtrip(const struct pd_pprof_profile *p, int gzip)
{
	struct pd_pprof_decode_opts opts = {
		.max_decompressed = PD_FUZZ_REDECODE_MAX,
		.max_memory = PD_FUZZ_REDECODE_MAX,
	};
	struct pd_pprof_profile *q = NULL;
	struct pd_err err = {0};
	uint8_t *enc = NULL, *enc2 = NULL;
	size_t len = 0, len2 = 0;
	int rc;

	if ((rc = pd_pprof_encode(p, gzip, &enc, &len, &err))) {
		if (pd_fuzz_limit(rc))
			goto out;
		pd_fuzz_bug(gzip ? "encode (gzip)" : "encode (raw)", &err);
	}
	if ((rc = pd_pprof_decode(&q, enc, len, &opts, &err))) {
		if (pd_fuzz_limit(rc))
			goto out;
		pd_fuzz_bug(gzip ? "decode of our gzip encoding" : "decode of our raw encoding", &err);
	}
	if (pd_pprof_sample_count(q) != pd_pprof_sample_count(p) ||
	    pd_pprof_location_count(q) != pd_pprof_location_count(p) ||
	    pd_pprof_function_count(q) != pd_pprof_function_count(p) ||
	    pd_pprof_mapping_count(q) != pd_pprof_mapping_count(p) ||
	    pd_pprof_sample_type_count(q) != pd_pprof_sample_type_count(p))
		pd_fuzz_bug("round trip changed the table sizes", NULL);
	if (!gzip) {
		if ((rc = pd_pprof_encode(q, 0, &enc2, &len2, &err))) {
			if (pd_fuzz_limit(rc))
				goto out;
			pd_fuzz_bug("encode of the re-decoded profile", &err);
		}
		if (len2 != len || memcmp(enc, enc2, len) != 0)
			pd_fuzz_bug("encode(decode(encode(p))) differs from encode(p)", NULL);
	}
out:
	free(enc);
	free(enc2);
	pd_pprof_destroy(q);
}

/* Top, node cut and flame graph (with JSON) for one sample type. */
static void pd_fuzz_reports(const struct pd_pprof_profile *p, int idx)
{
	struct pd_pprof_top *t = NULL;
	struct pd_pprof_flame *f = NULL;
	struct pd_err err = {0};
	struct pd_buf b;
	char v[64];
	int64_t cutoff;
	int rc;

	pd_buf_init(&b, (size_t)64 << 20);
	if ((rc = pd_pprof_top(p, idx, &t, &err))) {
		if (!pd_fuzz_limit(rc))
			pd_fuzz_bug("top", &err);
	} else {
		for (size_t i = 0; i < t->nrows; i++) {
			if (!t->rows[i].name)
				pd_fuzz_bug("top row without a name", NULL);
			pd_pprof_format_value(t->rows[i].flat, t->unit, v, sizeof(v));
			pd_pprof_format_percent(t->rows[i].cum, t->total, v, sizeof(v));
		}
		if (t->nrows) {
			const char *ou = pd_pprof_pick_unit(t->rows[t->nrows - 1].flat, t->total, t->unit);
			pd_pprof_format_value_in(t->rows[0].flat, t->unit, ou, v, sizeof(v));
		}
		size_t all = t->nrows;
		if (pd_pprof_top_apply_nodefraction(t, 0.005, &cutoff) > all)
			pd_fuzz_bug("node cut kept more rows than there were", NULL);
		if (pd_pprof_top_keep(t, p, 3, 0.001) > 3)
			pd_fuzz_bug("keeping 3 rows kept more", NULL);
	}
	if ((rc = pd_pprof_flame(p, idx, &f, &err))) {
		if (!pd_fuzz_limit(rc))
			pd_fuzz_bug("flame", &err);
	} else {
		rc = pd_pprof_flame_json(f, 0, &b);
		if (rc && !pd_fuzz_limit(rc))
			pd_fuzz_bug("flame_json", NULL);
		b.len = 0;
		rc = pd_pprof_flame_json(f, f->root.total / 100, &b);
		if (rc && !pd_fuzz_limit(rc))
			pd_fuzz_bug("flame_json with min_total", NULL);
	}
	pd_buf_fini(&b);
	pd_pprof_flame_destroy(f);
	pd_pprof_top_destroy(t);
}

/* merge(p, p) and diff(p, p), each with a top of its default sample type. A
 * profile without sample types (valid when it has no samples) has none in common
 * with anything, and go tool pprof refuses to merge it too. */
static void pd_fuzz_merge_diff(const struct pd_pprof_profile *p)
{
	const struct pd_pprof_profile *two[2] = {p, p};
	struct pd_pprof_profile *m = NULL, *d = NULL;
	struct pd_pprof_top *t = NULL;
	struct pd_err err = {0};
	int untyped = pd_pprof_sample_type_count(p) == 0;
	int rc;

	if ((rc = pd_pprof_merge(two, 2, &m, &err))) {
		if (!pd_fuzz_limit(rc) && !(untyped && rc == PD_EINCOMPAT))
			pd_fuzz_bug("merge of a profile with itself", &err);
	} else if (pd_pprof_default_sample_index(m) >= 0) {
		rc = pd_pprof_top(m, pd_pprof_default_sample_index(m), &t, &err);
		if (rc && !pd_fuzz_limit(rc))
			pd_fuzz_bug("top of a merged profile", &err);
		pd_pprof_top_destroy(t);
		t = NULL;
	}
	if ((rc = pd_pprof_diff(p, p, &d, &err))) {
		if (!pd_fuzz_limit(rc) && !(untyped && rc == PD_EINCOMPAT))
			pd_fuzz_bug("diff of a profile with itself", &err);
	} else if (pd_pprof_default_sample_index(d) >= 0) {
		rc = pd_pprof_top(d, pd_pprof_default_sample_index(d), &t, &err);
		if (rc && !pd_fuzz_limit(rc))
			pd_fuzz_bug("top of a diff", &err);
		pd_pprof_top_destroy(t);
	}
	pd_pprof_destroy(d);
	pd_pprof_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_pprof_decode_opts opts = {.max_decompressed = PD_FUZZ_MAX_DECOMPRESSED};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	int idx;

	if (pd_pprof_decode(&p, data, size, &opts, &err))
		return 0;

	/* the accessors a report header reads */
	(void)pd_pprof_time_nanos(p);
	(void)pd_pprof_duration_nanos(p);
	(void)pd_pprof_period(p);
	if (!pd_pprof_period_type(p) || !pd_pprof_period_unit(p) || !pd_pprof_main_binary(p))
		pd_fuzz_bug("NULL string from an accessor", NULL);
	size_t nt = pd_pprof_sample_type_count(p);
	for (size_t i = 0; i < nt; i++) {
		if (!pd_pprof_sample_type(p, i) || !pd_pprof_sample_unit(p, i))
			pd_fuzz_bug("NULL sample type or unit", NULL);
		(void)pd_pprof_total(p, (int)i);
	}
	int def = pd_pprof_default_sample_index(p);
	if (nt ? def < 0 || (size_t)def >= nt : def != -1)
		pd_fuzz_bug("default sample index out of range", NULL);
	if (nt && (pd_pprof_sample_index(p, NULL, &idx, &err) || idx != def))
		pd_fuzz_bug("sample_index(NULL) is not the default", &err);

	pd_fuzz_roundtrip(p, 0);
	pd_fuzz_roundtrip(p, 1);
	for (size_t i = 0; i < nt; i++)
		pd_fuzz_reports(p, (int)i);
	pd_fuzz_merge_diff(p);

	pd_pprof_destroy(p);
	return 0;
}
