/* test_elf.c: unit tests of pkg/elf: the build id of small ELF files (64- and
 * 32-bit executables, a big-endian one, a debug-only file, one without section
 * headers, whose note is found through its PT_NOTE segment), the refusals (not
 * ELF, no build-id note, truncated), and build ids given as hex. The files are
 * the seeds of fuzz_elf_build_id (tests/fuzz/corpus-elf). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profd/elf.h"

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", PD_ELF_CORPUS, name);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void expect_id(const char *name, const char *want)
{
	size_t n;
	uint8_t *b = slurp(name, &n);
	char hex[PD_ELF_BUILD_ID_HEX];
	struct pd_err err = {0};
	int rc = pd_elf_build_id(b, n, hex, &err);
	if (rc)
		fail_msg("%s: %s", name, err.msg);
	assert_string_equal(hex, want);
	free(b);
}

static void test_build_ids(void **state)
{
	expect_id("exe-static", "0123456789abcdef");
	expect_id("exe-no-section-headers", "0123456789abcdef");
	expect_id("exe-elf32", "21cbec99ec53e12e6e7392c0afc3545f4584f6c4");
	expect_id("debug-only", "be704d399b1109acd7457e0e676a7209418b3d92");
	/* big-endian, headers and one PT_NOTE only */
	expect_id("exe-elf32-big-endian", "feedfacecafebeef0011223344556677");
}

static void test_refusals(void **state)
{
	char hex[PD_ELF_BUILD_ID_HEX];
	struct pd_err err = {0};
	size_t n;
	assert_int_equal(pd_elf_build_id((const uint8_t *)"#!/bin/sh\n", 10, hex, &err),
	                 PD_ECORRUPT);
	assert_non_null(strstr(err.msg, "not an ELF file"));
	uint8_t *b = slurp("object-no-build-id", &n);
	memset(&err, 0, sizeof(err));
	assert_int_equal(pd_elf_build_id(b, n, hex, &err), PD_ENOTFOUND);
	assert_non_null(strstr(err.msg, "no build-id note"));
	free(b);
	/* cut inside its headers: refused, never read past the end */
	b = slurp("exe-static", &n);
	memset(&err, 0, sizeof(err));
	assert_int_not_equal(pd_elf_build_id(b, 40, hex, &err), 0);
	assert_true(err.msg[0] != '\0');
	free(b);
}

static void test_parse(void **state)
{
	char out[PD_ELF_BUILD_ID_HEX];
	struct pd_err err = {0};
	assert_int_equal(pd_elf_build_id_parse("0123ABCDef", out, &err), 0);
	assert_string_equal(out, "0123abcdef");
	assert_int_equal(pd_elf_build_id_parse("abc", out, &err), PD_EINVAL);
	assert_int_equal(pd_elf_build_id_parse("ab", out, &err), PD_EINVAL);
	assert_int_equal(pd_elf_build_id_parse("zz00", out, &err), PD_EINVAL);
	assert_int_equal(pd_elf_build_id_parse("../../", out, &err), PD_EINVAL);
	char longest[2 * PD_ELF_BUILD_ID_MAX + 3];
	memset(longest, 'a', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	assert_int_equal(pd_elf_build_id_parse(longest, out, &err), PD_EINVAL);
	longest[2 * PD_ELF_BUILD_ID_MAX] = '\0';
	assert_int_equal(pd_elf_build_id_parse(longest, out, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_build_ids),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
