/* fuzz_clickhouse.c: libFuzzer target for the readers of ClickHouse's totals
 * answers (pkg/clickhouse/query.c): the profiles rows of a totals query, then the
 * sums from samples for the rows without totals. The input's first two bytes give
 * where the first answer ends; the rest is the second. Whatever is read must hold:
 * a malformed answer is an error, never a read past the input, and every row read
 * has its arrays for as many types as it says. A broken property aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_clickhouse: BUG: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t cut = (size_t)data[0] << 8 | data[1];
	data += 2;
	size -= 2;
	if (cut > size)
		cut = size;
	struct pd_clickhouse_totals t = {0};
	if (!(t.arena = pd_arena_create(0)))
		return 0;
	struct ch_tid *tids = NULL;
	size_t cap = 0;
	struct pd_err err = {0};
	/* one answer, copied so that a read past it is caught */
	uint8_t *a = malloc(cut ? cut : 1), *b = malloc(size - cut ? size - cut : 1);
	if (!a || !b)
		goto out;
	memcpy(a, data, cut);
	memcpy(b, data + cut, size - cut);
	int rc = ch_totals_rows(&t, a, cut, &tids, &cap, &err);
	if (rc && rc != PD_ECORRUPT && rc != PD_ENOMEM)
		bug("an unexpected error code reading rows");
	if (rc && !err.msg[0])
		bug("an error without a message");
	if (t.n > cap)
		bug("more rows than room");
	/* every type's total and string ids are there to read */
	volatile uint64_t sink = 0;
	for (size_t i = 0; !rc && i < t.n; i++) {
		const struct pd_clickhouse_total *r = &t.rows[i];
		if (!r->totals || !r->types || !r->units || !tids[i].sid)
			bug("a row's arrays are missing");
		for (size_t k = 0; k < r->ntypes; k++)
			sink ^= (uint64_t)r->totals[k] ^ tids[i].sid[2 * k] ^ tids[i].sid[2 * k + 1];
	}
	(void)sink;
	if (!rc) {
		rc = ch_totals_sums(&t, tids, b, size - cut, &err);
		if (rc && rc != PD_ECORRUPT)
			bug("an unexpected error code reading sums");
	}
out:
	free(a);
	free(b);
	free(tids);
	free(t.rows);
	pd_arena_destroy(t.arena);
	return 0;
}
