/* fuzz_api_tenant.c: libFuzzer target for the reader of `X-Scope-OrgID` headers
 * (pkg/api/tenant.c, api_tenant_parse) and the tenant id rules it applies
 * (pkg/config/tenant.c). The input is the header's value. What the reader accepts
 * must hold: a tenant of 1 to 150 bytes of dskit's set, not "." or "..", that
 * pd_config_tenant_check accepts too, and the input is that tenant, optionally
 * with ':' metadata, one or more times separated by '|'. A refusal has a message.
 * A broken property aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const uint8_t *in, size_t n)
{
	fprintf(stderr, "fuzz_api_tenant: BUG: %s\n  input: %.*s\n", what, (int)n,
	        (const char *)in);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *in = malloc(size + 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = 0; /* a header value ends at its first NUL */
	char out[PD_TENANT_MAX_LEN + 1];
	struct pd_err err = {0};
	int rc = api_tenant_parse(in, out, &err);
	if (rc) {
		if (rc != PD_EINVAL || !err.msg[0])
			bug("a refusal without PD_EINVAL and a message", data, size);
		free(in);
		return 0;
	}
	size_t len = strlen(out);
	struct pd_err e2 = {0};
	if (len == 0 || len > PD_TENANT_MAX_LEN || pd_config_tenant_check(out, len, &e2))
		bug("an accepted tenant breaks the id rules", data, size);
	if (strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
		bug("an accepted tenant is . or ..", data, size);
	/* the input is the tenant (with metadata) once or more, joined by '|' */
	const char *p = in;
	for (;;) {
		if (strncmp(p, out, len) != 0 || (p[len] && p[len] != ':' && p[len] != '|'))
			bug("a part of the input is not the accepted tenant", data, size);
		const char *bar = strchr(p, '|');
		if (!bar)
			break;
		p = bar + 1;
	}
	free(in);
	return 0;
}
