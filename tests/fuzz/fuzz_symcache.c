/* fuzz_symcache.c: the symbolizer's disk cache parser on any bytes: every record
 * it hands out lies inside the input, and a parse never fails after the header
 * (a torn or corrupt tail only ends the file). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profd/symbolize.h"

struct span {
	const uint8_t *buf;
	size_t len;
	size_t records;
};

static void inside(const struct span *s, const char *p, size_t n)
{
	if (n && ((const uint8_t *)p < s->buf || (const uint8_t *)p + n > s->buf + s->len))
		abort();
}

static int each(void *ctx, uint64_t addr, const struct pd_symbolize_frame *f, size_t n)
{
	struct span *s = ctx;
	for (size_t i = 0; i < n; i++) {
		inside(s, f[i].name, f[i].name_len);
		inside(s, f[i].system_name, f[i].system_name_len);
		inside(s, f[i].file, f[i].file_len);
		if (f[i].line < 0 || f[i].start_line < 0)
			abort();
	}
	s->records++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct span s = {data, size, 0};
	struct pd_err err = {0};
	int rc = pd_symbolize_cache_parse(data, size, each, &s, &err);
	if (rc != 0 && rc != PD_ECORRUPT)
		abort();
	if (rc == PD_ECORRUPT && (!err.msg[0] || s.records))
		abort();
	if (rc == 0 && size >= 5 && (memcmp(data, "PDSC", 4) != 0 || data[4] != 1))
		abort();
	return 0;
}
