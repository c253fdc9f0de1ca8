/* fuzz_connect_push.c: libFuzzer target of pd_ingest_connect_push, each input
 * read as a protobuf PushRequest and as Connect's JSON, under small limits. A call
 * either fails with an error code and a message, leaving the batch empty, or
 * fills it with profiles that have labels, a __name__ and pprof bytes that decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_ingest_limits lim = {.max_samples = 2000,
	                               .max_profiles = 16,
	                               .max_json_depth = 32,
	                               .max_decompressed = 1 << 20,
	                               .max_decoded_memory = 16 << 20};
	for (int json = 0; json < 2; json++) {
		struct pd_ingest_batch b = {0};
		struct pd_err err = {0};
		int rc = pd_ingest_connect_push(data, size, json, &lim, 1700000000000, &b, &err);
		if (rc) {
			if (!err.msg[0] || b.n)
				abort();
		} else {
			for (size_t i = 0; i < b.n; i++) {
				struct pd_pprof_profile *p = NULL;
				if (!pd_labels_get(b.v[i].labels, "__name__") ||
				    !pd_labels_get(b.v[i].labels, "service_name") ||
				    pd_pprof_decode(&p, b.v[i].pprof, b.v[i].len, NULL, &err))
					abort();
				pd_pprof_destroy(p);
			}
		}
		pd_ingest_batch_fini(&b);
	}
	return 0;
}
