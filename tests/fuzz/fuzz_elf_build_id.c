/* fuzz_elf_build_id.c: libFuzzer target for pd_elf_build_id (pkg/elf), which
 * reads the build-id note of every uploaded debug file. What must hold: no crash
 * or overread; a success gives 4..128 lower-case hex digits that
 * pd_elf_build_id_parse takes back unchanged; a failure says why. The input is
 * also tried as a build id in hex. A broken property aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_elf_build_id: BUG: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char hex[PD_ELF_BUILD_ID_HEX], back[PD_ELF_BUILD_ID_HEX];
	struct pd_err err = {0};
	/* a copy of exactly size bytes, so an overread is caught */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	int rc = pd_elf_build_id(buf, size, hex, &err);
	if (rc == 0) {
		size_t n = strlen(hex);
		if (n < 2 * PD_ELF_BUILD_ID_MIN || n > 2 * PD_ELF_BUILD_ID_MAX || n % 2)
			bug("a build id of a bad length");
		struct pd_err e2 = {0};
		if (pd_elf_build_id_parse(hex, back, &e2) || strcmp(hex, back) != 0)
			bug("a build id that does not parse back as itself");
	} else if (!err.msg[0]) {
		bug("a failure without a message");
	}
	free(buf);
	if (size < 200) {
		char s[200];
		memcpy(s, data, size);
		s[size] = '\0';
		struct pd_err e3 = {0};
		if (pd_elf_build_id_parse(s, back, &e3) == 0 && strlen(back) != strlen(s))
			bug("a parsed build id of another length");
	}
	return 0;
}
