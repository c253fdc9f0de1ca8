/* fuzz_sd.c: libFuzzer target for service discovery documents: the target groups
 * of file_sd files (JSON or YAML) and of http_sd answers (JSON), which profd reads
 * from files and servers it does not control (pkg/discovery). The first byte picks
 * the syntax (bit 0: YAML), the rest is the document. Any document may be rejected,
 * with a message naming the source; what is accepted gives target groups whose
 * every label name is valid. (A target may lack __address__: an empty or null
 * target gives "", which a label set leaves out; the scrape manager drops such a
 * target, as Prometheus drops one with "no address".) Anything else is a bug, and
 * aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/discovery.h"
#include "profd/labels.h"
#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_sd: BUG: %s (%s)\n", what, err ? err->msg : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 256 * 1024)
		return 0;
	struct pd_err err = {0};
	struct pd_target_group *g = NULL;
	size_t n = 0;
	int rc = pd_discovery_parse_groups((const char *)data + 1, size - 1, data[0] & 1, "sd.json", &g, &n,
					   &err);
	if (rc) {
		if (g || (rc == PD_EINVAL && strncmp(err.msg, "sd.json", 7) != 0))
			bug("a rejected document without groups freed, or a message not naming its source", &err);
		return 0;
	}
	if (n > PD_DISCOVERY_MAX_TARGETS)
		bug("more groups than the target limit", NULL);
	for (size_t i = 0; i < n; i++) {
		if (!g[i].source)
			bug("a group without a source", NULL);
		for (size_t k = 0; k < g[i].ntargets; k++) {
			const struct pd_labels *t = g[i].targets[k];
			for (size_t l = 0; l < pd_labels_len(t); l++)
				if (!pd_labels_valid_name(pd_labels_at(t, l)->name))
					bug("an invalid label name in a target", NULL);
		}
	}
	pd_target_group_free(g, n);
	return 0;
}
