/* fuzz_attime.c: libFuzzer target for the render API's time parser
 * (pkg/api/attime.c, from= and until= of /pyroscope/render). The input is one
 * parameter value. What it accepts must hold: `now` alone is the reference
 * time, an offset form lies within about 3,000 years of it and reads the same
 * with underscores, commas and spaces added; a refusal comes with a message
 * that quotes the value. A broken property aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW_MS 1796270000123LL

static void bug(const char *what, const char *in)
{
	fprintf(stderr, "fuzz_attime: BUG: %s\n  input: %s\n", what, in);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 300)
		return 0;
	char in[301], spaced[1000], msg[256];
	memcpy(in, data, size);
	in[size] = 0;
	int64_t t = 0, t2 = 0;
	msg[0] = 0;
	if (api_attime_parse(in, NOW_MS, &t, msg, sizeof msg)) {
		if (!msg[0] || !strchr(msg, '"'))
			bug("a refusal without a message quoting the value", in);
		return 0;
	}
	if (strcmp(in, "now") == 0 && t != NOW_MS)
		bug("now is not the reference time", in);
	int digits = 1;
	size_t n = 0, len = strlen(in); /* what the parser read: up to a NUL */
	for (size_t i = 0; i < len; i++) {
		if (in[i] == '+' || in[i] == '-' || in[i] == 'n')
			digits = 0;
		spaced[n++] = in[i];
		spaced[n++] = i % 3 ? '_' : ',';
	}
	spaced[n] = 0;
	if (!digits) {
		int64_t d = t - NOW_MS;
		if (d > 100000000000LL * 1000 || d < -100000000000LL * 1000)
			bug("an offset beyond its limit", in);
	}
	/* separators are ignored, unless they lengthen the value past the limit */
	if (len <= 20) {
		if (api_attime_parse(spaced, NOW_MS, &t2, msg, sizeof msg) || t2 != t)
			bug("separators changed the value", in);
	}
	return 0;
}
