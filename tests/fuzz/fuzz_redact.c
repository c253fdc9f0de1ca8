/* fuzz_redact.c: libFuzzer target for the hiding of URL passwords
 * (pkg/util/redact.c), which every log value, ClickHouse error, flag value and
 * command-line argument goes through; the input is such a text (up to its
 * first NUL). What must hold: redacting is idempotent, a text without a
 * password comes back as it was, a short buffer gets a prefix of the whole,
 * and blanking in place keeps the length and redacts to the same text. A
 * broken property aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what, const char *in)
{
	fprintf(stderr, "fuzz_redact: BUG: %s\n  input: %s\n", what, in);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	char *in = malloc(size + 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	char *full = pd_redact_urls_dup(in);
	char *again = full ? pd_redact_urls_dup(full) : NULL;
	if (!full || !again)
		bug("out of memory", in);
	if (strcmp(full, again) != 0)
		bug("redacting twice changes the text", in);
	if (!pd_url_has_password(in) && strcmp(full, in) != 0)
		bug("a text without a password changed", in);
	size_t fl = strlen(full);
	static const size_t caps[] = {1, 2, 7, 16, 64};
	char small[64];
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		size_t n = pd_redact_urls(small, caps[i], in);
		size_t want = fl < caps[i] - 1 ? fl : caps[i] - 1;
		if (n != want || strlen(small) != n || memcmp(small, full, n) != 0)
			bug("a short buffer is not given a prefix of the whole", in);
	}
	char *blank = strdup(in);
	if (!blank)
		bug("out of memory", in);
	pd_url_passwords_blank(blank);
	if (strlen(blank) != strlen(in))
		bug("blanking changed the length", in);
	char *rb = pd_redact_urls_dup(blank);
	if (!rb || strcmp(rb, full) != 0)
		bug("the blanked text redacts differently", in);
	free(rb);
	free(blank);
	free(again);
	free(full);
	free(in);
	return 0;
}
