/* test_tenant.c: tenant ids as dskit checks them (pd_config_tenant_check), the
 * X-Scope-OrgID header as dskit's tenant.TenantID reads it (api_tenant_parse),
 * the web configuration's tenants binding, and a scrape job's tenant field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api_int.h"
#include "profd/config.h"

static int check(const char *id, struct pd_err *err)
{
	memset(err, 0, sizeof(*err));
	return pd_config_tenant_check(id, strlen(id), err);
}

static void test_valid_ids(void **state)
{
	(void)state;
	struct pd_err err;
	const char *ok[] = {"a", "team-a", "A_b.c", "!-_.*'()", "0", "...", "x.", "anonymous"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(check(ok[i], &err), 0);
	char max[PD_TENANT_MAX_LEN + 2];
	memset(max, 'x', PD_TENANT_MAX_LEN);
	max[PD_TENANT_MAX_LEN] = 0;
	assert_int_equal(check(max, &err), 0);
	max[PD_TENANT_MAX_LEN] = 'x';
	max[PD_TENANT_MAX_LEN + 1] = 0;
	assert_int_equal(check(max, &err), PD_EINVAL);
	assert_string_equal(err.msg, "tenant ID is too long: max 150 characters");
}

static void test_invalid_ids(void **state)
{
	(void)state;
	struct pd_err err;
	assert_int_equal(check("a/b", &err), PD_EINVAL);
	assert_string_equal(err.msg, "tenant ID 'a/b' contains unsupported character '/'");
	assert_int_equal(check("a b", &err), PD_EINVAL);
	assert_string_equal(err.msg, "tenant ID 'a b' contains unsupported character ' '");
	assert_int_equal(check("a|b", &err), PD_EINVAL);
	assert_int_equal(check("t\xc3\xa9", &err), PD_EINVAL);
	assert_string_equal(err.msg,
	                    "tenant ID 't\\xc3\\xa9' contains unsupported character '\\xc3'");
	assert_int_equal(check(".", &err), PD_EINVAL);
	assert_string_equal(err.msg, "tenant ID is '.' or '..'");
	assert_int_equal(check("..", &err), PD_EINVAL);
	assert_int_equal(check("", &err), PD_EINVAL);
	assert_string_equal(err.msg, "no org id");
	/* an unsupported character is named before the length, as dskit does */
	char big[300];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	big[200] = '#';
	assert_int_equal(check(big, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "contains unsupported character '#'"));
	assert_non_null(strstr(err.msg, "...'"));
}

static void parse(const char *org, int want, const char *out_or_msg)
{
	char out[PD_TENANT_MAX_LEN + 1] = "";
	struct pd_err err = {0};
	int rc = api_tenant_parse(org, out, &err);
	assert_int_equal(rc, want);
	assert_string_equal(rc ? err.msg : out, out_or_msg);
}

static void test_header(void **state)
{
	(void)state;
	parse("team-a", 0, "team-a");
	parse("team-a|team-a", 0, "team-a");
	parse("team-a:product=k6", 0, "team-a");
	parse("team-a:p=1|team-a:p=2", 0, "team-a");
	parse(NULL, PD_EINVAL, "no org id");
	parse("", PD_EINVAL, "no org id");
	parse("team-a|team-b", PD_EINVAL, "multiple org IDs present");
	parse("team-a|", PD_EINVAL, "no org id");
	parse("team-a|b/c", PD_EINVAL, "tenant ID 'b/c' contains unsupported character '/'");
	parse("..:x=y", PD_EINVAL, "tenant ID is '.' or '..'");
}

static int web(const char *text, struct pd_web_config **wc, struct pd_err *err)
{
	memset(err, 0, sizeof(*err));
	return pd_web_config_parse(text, strlen(text), "web.yml", NULL, wc, err);
}

#define HASH "$2b$04$lTbj2cbV50JV28eWZcVK/e2YMM6bUxf/0.GRX2tBbI1jrwi21w2iK"

static void test_web_binding(void **state)
{
	(void)state;
	struct pd_web_config *wc = NULL;
	struct pd_err err;
	assert_int_equal(web("basic_auth_users:\n  alice: " HASH "\n  bob: " HASH "\n"
	                     "tenants:\n  bob: [z, a, z]\n",
	                     &wc, &err),
	                 0);
	assert_int_equal(wc->nusers, 2);
	assert_int_equal(wc->users[0].ntenants, 0); /* alice: not bound */
	assert_int_equal(wc->users[1].ntenants, 2); /* sorted, distinct */
	assert_string_equal(wc->users[1].tenants[0], "a");
	assert_string_equal(wc->users[1].tenants[1], "z");
	pd_web_config_destroy(wc);
	wc = NULL;
	assert_int_equal(
	    web("basic_auth_users:\n  alice: " HASH "\ntenants:\n  carol: [a]\n", &wc, &err),
	    PD_EINVAL);
	assert_null(wc);
	assert_non_null(strstr(err.msg, "web.yml:4:"));
	assert_non_null(strstr(err.msg, "tenants: user \"carol\" is not one of basic_auth_users"));
	assert_int_equal(
	    web("basic_auth_users:\n  alice: " HASH "\ntenants:\n  alice: []\n", &wc, &err),
	    PD_EINVAL);
	assert_non_null(strstr(err.msg, "tenants: user \"alice\" has no tenants"));
	assert_int_equal(
	    web("basic_auth_users:\n  alice: " HASH "\ntenants:\n  alice: [\"a b\"]\n", &wc, &err),
	    PD_EINVAL);
	assert_non_null(strstr(err.msg, "contains unsupported character ' '"));
	assert_int_equal(
	    web("basic_auth_users:\n  alice: " HASH "\ntenants:\n  alice: a\n", &wc, &err),
	    PD_EINVAL);
}

static void test_scrape_tenant(void **state)
{
	(void)state;
	struct pd_config *cfg = NULL;
	struct pd_err err = {0};
	const char *good = "scrape_configs:\n  - job_name: a\n    tenant: team-a\n"
	                   "  - job_name: b\n";
	assert_int_equal(pd_config_parse(good, strlen(good), "p.yml", &cfg, &err), 0);
	assert_string_equal(cfg->scrape_configs[0].tenant, "team-a");
	assert_string_equal(cfg->scrape_configs[1].tenant, PD_TENANT_DEFAULT);
	pd_config_destroy(cfg);
	cfg = NULL;
	const char *bad = "scrape_configs:\n  - job_name: a\n    tenant: \"..\"\n";
	assert_int_equal(pd_config_parse(bad, strlen(bad), "p.yml", &cfg, &err), PD_EINVAL);
	assert_non_null(strstr(err.msg, "p.yml:3:"));
	assert_non_null(strstr(err.msg, "tenant: tenant ID is '.' or '..'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_ids),     cmocka_unit_test(test_invalid_ids),
	    cmocka_unit_test(test_header),        cmocka_unit_test(test_web_binding),
	    cmocka_unit_test(test_scrape_tenant),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
