/* fuzz_dns.c: libFuzzer target for dns_sd answers: DNS responses from servers profd
 * does not control, read by c-ares and turned into a target group by
 * pd_discovery_dns_group (pkg/discovery/dns.c). The first byte picks the record
 * type (SRV, A, AAAA, MX, NS), the rest is the response. A response may be
 * rejected; what is accepted gives one group named by the name, every target with
 * an __address__ and __meta_dns_name. Anything else is a bug, and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/discovery.h"
#include "profd/labels.h"
#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const struct pd_err *err)
{
	fprintf(stderr, "fuzz_dns: BUG: %s (%s)\n", what, err ? err->msg : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char name[] = "_pprof._tcp.example.com.";
	struct pd_target_group g;
	struct pd_err err = {0};
	if (size < 1 || size > 70000)
		return 0;
	enum pd_discovery_dns_type type = (enum pd_discovery_dns_type)(data[0] % 5);
	int rc = pd_discovery_dns_group(name, type, 6060, data + 1, size - 1, &g, &err);
	if (rc) {
		if (g.source || g.targets || g.labels || !err.msg[0])
			bug("a rejected response left a group behind, or gave no message", &err);
		return 0;
	}
	if (!g.source || strcmp(g.source, name) || !g.labels || pd_labels_len(g.labels))
		bug("the group is not named by the name, or has common labels", NULL);
	for (size_t i = 0; i < g.ntargets; i++) {
		const char *a = pd_labels_get(g.targets[i], "__address__");
		const char *n = pd_labels_get(g.targets[i], "__meta_dns_name");
		if (!a || !n || strcmp(n, name))
			bug("a target without __address__ or __meta_dns_name", NULL);
	}
	pd_discovery_dns_group_fini(&g);
	return 0;
}
