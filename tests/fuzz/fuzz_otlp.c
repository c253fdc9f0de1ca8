/* fuzz_otlp.c: libFuzzer target of pd_ingest_otlp, each input read as a protobuf
 * ExportProfilesServiceRequest and as OTLP/JSON, under small limits, and the
 * response written for what it gave. A call either fails with a message, leaving
 * the batch empty, or fills it with profiles whose pprof bytes decode, with the
 * profiles left out counted with a reason. */
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_ingest_limits lim = {
	    .max_samples = 2000, .max_profiles = 16, .max_json_depth = 32, .max_stack_depth = 64};
	for (int json = 0; json < 2; json++) {
		struct pd_ingest_batch b = {0};
		struct pd_err err = {0};
		int rc = pd_ingest_otlp(data, size, json, &lim, 1700000000000, &b, &err);
		if (rc) {
			if (!err.msg[0] || b.n)
				abort();
		} else {
			if (b.rejected && !b.rejected_msg[0])
				abort();
			for (size_t i = 0; i < b.n; i++) {
				struct pd_pprof_profile *p = NULL;
				if (!pd_labels_get(b.v[i].labels, "__name__") ||
				    pd_pprof_decode(&p, b.v[i].pprof, b.v[i].len, NULL, &err))
					abort();
				pd_pprof_destroy(p);
			}
			uint8_t *out;
			size_t len;
			if (pd_ingest_otlp_response(&b, json, &out, &len, &err))
				abort();
			free(out);
		}
		pd_ingest_batch_fini(&b);
	}
	return 0;
}
