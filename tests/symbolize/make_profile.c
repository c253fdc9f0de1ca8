/* make_profile.c: writes a gzip'd profile.proto of bare addresses in one mapping,
 * as an eBPF agent or a C++ profiler would send it, for tests/integration/
 * symbolize.sh:
 *   make_profile OUT BUILD_ID FILE START LIMIT OFFSET ADDR...
 * (numbers in hex; BUILD_ID "" for none). Sample i has the stack ADDR_i, with
 * value i + 1 (cpu nanoseconds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/pprof.h"
#include "profd/util.h"

int main(int argc, char **argv)
{
	if (argc < 8) {
		fprintf(stderr,
		        "usage: make_profile OUT BUILD_ID FILE START LIMIT OFFSET ADDR...\n");
		return 2;
	}
	size_t n = (size_t)argc - 7;
	const char *s[] = {"", "cpu", "nanoseconds", argv[3], argv[2]};
	size_t sl[5];
	for (int i = 0; i < 5; i++)
		sl[i] = strlen(s[i]);
	struct pd_pprof_pvt st = {1, 2};
	struct pd_pprof_pmapping m = {.id = 1,
	                              .memory_start = strtoull(argv[4], NULL, 16),
	                              .memory_limit = strtoull(argv[5], NULL, 16),
	                              .file_offset = strtoull(argv[6], NULL, 16),
	                              .filename = 3,
	                              .build_id = argv[2][0] ? 4 : 0};
	struct pd_pprof_plocation *loc = calloc(n, sizeof(*loc));
	struct pd_pprof_psample *smp = calloc(n, sizeof(*smp));
	uint64_t *ids = calloc(n, sizeof(*ids));
	int64_t *vals = calloc(n, sizeof(*vals));
	if (!loc || !smp || !ids || !vals)
		return 1;
	for (size_t i = 0; i < n; i++) {
		loc[i] = (struct pd_pprof_plocation){
		    .id = i + 1, .mapping_id = 1, .address = strtoull(argv[7 + i], NULL, 16)};
		ids[i] = i + 1;
		vals[i] = (int64_t)i + 1;
		smp[i] = (struct pd_pprof_psample){
		    .location_id = &ids[i], .nlocation = 1, .value = &vals[i], .nvalue = 1};
	}
	struct pd_pprof_parts pp = {.strings = s,
	                            .string_len = sl,
	                            .nstrings = 5,
	                            .sample_type = &st,
	                            .nsample_type = 1,
	                            .sample = smp,
	                            .nsample = n,
	                            .mapping = &m,
	                            .nmapping = 1,
	                            .location = loc,
	                            .nlocation = n,
	                            .period = 1,
	                            .has_period_type = 1,
	                            .period_type = st};
	struct pd_pprof_profile *p = NULL;
	struct pd_err err = {0};
	uint8_t *out = NULL;
	size_t len = 0;
	if (pd_pprof_parts_build(&pp, &p, &err) || pd_pprof_encode(p, 1, &out, &len, &err) ||
	    pd_file_write(argv[1], out, len, &err)) {
		fprintf(stderr, "make_profile: %s\n", err.msg);
		return 1;
	}
	free(out);
	pd_pprof_destroy(p);
	free(loc);
	free(smp);
	free(ids);
	free(vals);
	return 0;
}
