/* tenant.c: the rules a tenant id follows (X-Scope-OrgID, a scrape job's tenant,
 * the web configuration's tenants), those of dskit's tenant package, which
 * Pyroscope and Mimir use: a byte set, a length, and no path-like "." or "..". */
#include <stdio.h>
#include <string.h>

#include "profd/config.h"

static int tenant_char(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	return c && strchr("!-_.*'()", c) != NULL;
}

int pd_config_tenant_check(const char *id, size_t len, struct pd_err *err)
{
	if (len == 0)
		return pd_err_set(err, PD_EINVAL, "no org id");
	for (size_t i = 0; i < len; i++)
		if (!tenant_char((unsigned char)id[i])) {
			unsigned char c = (unsigned char)id[i];
			/* the id is quoted as far as 64 bytes, bytes outside ASCII as \xNN */
			char shown[64 * 4 + 1];
			size_t k = 0;
			for (size_t j = 0; j < len && j < 64; j++) {
				unsigned char b = (unsigned char)id[j];
				if (b >= 0x20 && b < 0x7f && b != '\\')
					shown[k++] = (char)b;
				else
					k += (size_t)snprintf(shown + k, sizeof(shown) - k,
					                      "\\x%02x", b);
			}
			shown[k] = 0;
			if (c >= 0x20 && c < 0x7f)
				return pd_err_set(
				    err, PD_EINVAL,
				    "tenant ID '%s%s' contains unsupported character '%c'", shown,
				    len > 64 ? "..." : "", c);
			return pd_err_set(
			    err, PD_EINVAL,
			    "tenant ID '%s%s' contains unsupported character '\\x%02x'", shown,
			    len > 64 ? "..." : "", c);
		}
	if (len > PD_TENANT_MAX_LEN)
		return pd_err_set(err, PD_EINVAL, "tenant ID is too long: max %d characters",
		                  PD_TENANT_MAX_LEN);
	if ((len == 1 && id[0] == '.') || (len == 2 && id[0] == '.' && id[1] == '.'))
		return pd_err_set(err, PD_EINVAL, "tenant ID is '.' or '..'");
	return 0;
}
