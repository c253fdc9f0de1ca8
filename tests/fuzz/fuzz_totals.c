/* fuzz_totals.c: libFuzzer target for the totals section of a timestamp chunk
 * (docs/format/chunks.md, "Totals section"), which is read from disk.
 *
 * First byte, low two bits:
 *   0  the rest is a section: count (2 bytes, big-endian), then the section's
 *      bytes; every record is read, and whatever the iterator hands out must lie
 *      within what it defined (type indices, string bounds).
 *   1  the rest is a whole timestamp chunk, as a block's entry holds it: its
 *      timestamps are read, the section found after them and read as in 0.
 *   2, 3  the rest drives the encoder: each step is a byte (bit 7: not a
 *      profile; low 3 bits: how many types, picked from a pool of six by the
 *      next bytes) followed by the sums and the duration (8 bytes each); what
 *      the reader gives back must equal what went in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/chunkenc.h"
#include "profd/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_section(const uint8_t *p, size_t len, uint32_t count)
{
	struct pd_chunkenc_totals_iter it;
	if (pd_chunkenc_totals_iter_init(&it, p, len, count) == 0) {
		uint32_t n = 0;
		while (pd_chunkenc_totals_iter_next(&it)) {
			n++;
			for (size_t i = 0; i < it.n; i++) {
				if (it.type_idx[i] >= it.ntypes)
					abort();
				const struct pd_chunkenc_totals_type *t = &it.types[it.type_idx[i]];
				int in_section = t->type >= (const char *)p &&
				                 t->type + t->type_len <= (const char *)p + len &&
				                 t->unit >= (const char *)p &&
				                 t->unit + t->unit_len <= (const char *)p + len;
				/* or a well-known type of version 3, named by number */
				if (!in_section &&
				    (p[0] < 3 || pd_chunkenc_totals_well_known(t->type, t->unit) < 0 ||
				     strlen(t->type) != t->type_len || strlen(t->unit) != t->unit_len))
					abort();
			}
			if (!it.profile && (it.n || it.duration))
				abort();
		}
		if (!pd_chunkenc_totals_iter_err(&it) && n != count)
			abort();
	}
	pd_chunkenc_totals_iter_fini(&it);
}

static int64_t get64(const uint8_t **p, size_t *n)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++) {
		v = v << 8 | (*n ? **p : 0);
		if (*n) {
			(*p)++;
			(*n)--;
		}
	}
	return (int64_t)v;
}

#define MAX_STEPS 256

static void roundtrip(const uint8_t *p, size_t n)
{
	static const char *const pool_t[] = {"cpu", "samples", "alloc_space", "cpu", "", "wall"};
	static const char *const pool_u[] = {"nanoseconds",  "count", "bytes",
	                                     "milliseconds", "",      "nanoseconds"};
	struct pd_err err = {0};
	struct pd_chunkenc_totals *c = pd_chunkenc_totals_create();
	if (!c)
		return;
	/* what went in, per step */
	static int opaque[MAX_STEPS];
	static size_t ntypes[MAX_STEPS];
	static size_t pick[MAX_STEPS][7];
	static int64_t sums[MAX_STEPS][7], dur[MAX_STEPS];
	size_t steps = 0;
	while (n && steps < MAX_STEPS) {
		uint8_t b = *p++;
		n--;
		opaque[steps] = b >> 7;
		if (opaque[steps]) {
			if (pd_chunkenc_totals_append_opaque(c, &err))
				abort();
			steps++;
			continue;
		}
		size_t k = b & 7;
		const char *ty[7], *un[7];
		for (size_t i = 0; i < k; i++) {
			pick[steps][i] = n ? *p % 6 : 0;
			if (n) {
				p++;
				n--;
			}
			ty[i] = pool_t[pick[steps][i]];
			un[i] = pool_u[pick[steps][i]];
			sums[steps][i] = get64(&p, &n);
		}
		dur[steps] = get64(&p, &n);
		ntypes[steps] = k;
		if (pd_chunkenc_totals_append(c, k, ty, un, sums[steps], dur[steps], &err))
			abort();
		steps++;
	}
	size_t len;
	const uint8_t *b = pd_chunkenc_totals_bytes(c, &len);
	struct pd_chunkenc_totals_iter it;
	if (pd_chunkenc_totals_iter_init(&it, b, len, (uint32_t)steps))
		abort();
	for (size_t s = 0; s < steps; s++) {
		if (!pd_chunkenc_totals_iter_next(&it))
			abort();
		if (it.profile == opaque[s])
			abort();
		if (opaque[s])
			continue;
		if (it.n != ntypes[s] || it.duration != dur[s])
			abort();
		for (size_t i = 0; i < it.n; i++) {
			const struct pd_chunkenc_totals_type *t = &it.types[it.type_idx[i]];
			const char *want_t = pool_t[pick[s][i]], *want_u = pool_u[pick[s][i]];
			if (t->type_len != strlen(want_t) || memcmp(t->type, want_t, t->type_len) ||
			    t->unit_len != strlen(want_u) || memcmp(t->unit, want_u, t->unit_len))
				abort();
			/* a type listed again later in the same profile ends with that sum */
			size_t last = i;
			for (size_t j = i + 1; j < it.n; j++)
				if (pick[s][j] == pick[s][i])
					last = j;
			if (last == i && it.vals[i] != sums[s][i])
				abort();
		}
	}
	if (pd_chunkenc_totals_iter_next(&it) || pd_chunkenc_totals_iter_err(&it))
		abort();
	pd_chunkenc_totals_iter_fini(&it);
	pd_chunkenc_totals_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0] & 3;
	data++;
	size--;
	if (mode == 0) {
		if (size < 2)
			return 0;
		read_section(data + 2, size - 2, (uint32_t)data[0] << 8 | data[1]);
	} else if (mode == 1) {
		const uint8_t *sec;
		size_t sl;
		if (pd_chunkenc_ts_totals(data, size, &sec, &sl) == 0 && sl)
			read_section(sec, sl, pd_chunkenc_ts_count(data, size));
	} else {
		roundtrip(data, size);
	}
	return 0;
}
