/* fuzz_tagfilter.c: libFuzzer target for the parser of tag_focus/tag_ignore values
 * (pprof's -tagfocus syntax: keys, comma-separated Go regexes, numeric ranges with
 * units; pkg/pprof/tags.c). The input is one value. When it parses, it is applied
 * to test profiles with string and numeric labels on samples, as focus and as
 * ignore: the two must split every profile's samples exactly in two (focus keeps
 * what ignore drops), and the tags report of each part must build. A broken
 * property aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct pd_pprof_profile *profiles[2];

static void bug(const char *what, const uint8_t *in, size_t n)
{
	fprintf(stderr, "fuzz_tagfilter: BUG: %s\n  input: %.*s\n", what, (int)n, (const char *)in);
	abort();
}

static void load(void)
{
	static const char *const files[] = {"/profiles/labels/cpu.pb.gz",
	                                    "/profiles/labels/heap.pb.gz"};
	for (size_t i = 0; i < 2; i++) {
		char path[1024];
		struct pd_err err = {0};
		snprintf(path, sizeof(path), "%s%s", PD_FUZZ_TESTDATA, files[i]);
		if (pd_pprof_read_file(&profiles[i], path, NULL, &err)) {
			fprintf(stderr, "fuzz_tagfilter: %s\n", err.msg);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_pprof_tagfilter *f = NULL;
	struct pd_err err = {0};
	if (!profiles[0])
		load();
	if (pd_pprof_tagfilter_parse(&f, (const char *)data, size, &err)) {
		if (!err.msg[0])
			bug("refused without a message", data, size);
		return 0;
	}
	const struct pd_pprof_tagfilter *const one[] = {f};
	for (size_t i = 0; i < 2; i++) {
		struct pd_pprof_profile *in = NULL, *out = NULL;
		size_t kin = 0, kout = 0;
		if (pd_pprof_filter_tags(profiles[i], one, 1, NULL, 0, &in, &kin, &err) ||
		    pd_pprof_filter_tags(profiles[i], NULL, 0, one, 1, &out, &kout, &err))
			bug(err.msg, data, size);
		if (kin + kout != pd_pprof_sample_count(profiles[i]) ||
		    pd_pprof_sample_count(in) != kin || pd_pprof_sample_count(out) != kout)
			bug("focus and ignore do not split the samples in two", data, size);
		struct pd_pprof_tags *t = NULL;
		if (pd_pprof_tags(in, 0, NULL, &t, &err))
			bug(err.msg, data, size);
		pd_pprof_tags_destroy(t);
		pd_pprof_destroy(in);
		pd_pprof_destroy(out);
	}
	pd_pprof_tagfilter_destroy(f);
	return 0;
}
