/* xxhash.c: the label-set hash, XXH64 (xxHash's 64-bit function, from libxxhash's
 * header, inlined: nothing links the library) over each label's name and value, each
 * followed by 0xff, as Prometheus's labels.Labels.Hash() computes it. The hash is
 * persisted, so its output must never change: tests/unit/test_labels.c pins known
 * values. */
#include "labels_int.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t pd_labels_xxh64(const void *p, size_t len, uint64_t seed)
{
	return (uint64_t)XXH64(p, len, (XXH64_hash_t)seed);
}

/* GCC (12, -O2) warns that xxhash.h's XXH64_update, inlined here with one-byte
 * inputs, computes `bEnd - 32` outside the separator's bounds: a pointer that is
 * compared, never read (the 32-byte loop runs only when 32 bytes are there). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif
uint64_t pd_labels_hash(const struct pd_labels *ls)
{
	static const unsigned char sep = 0xff;
	XXH64_state_t s;

	XXH64_reset(&s, 0);
	for (size_t i = 0; i < ls->n; i++) {
		XXH64_update(&s, ls->l[i].name, ls->l[i].name_len);
		XXH64_update(&s, &sep, 1);
		XXH64_update(&s, ls->l[i].value, ls->l[i].value_len);
		XXH64_update(&s, &sep, 1);
	}
	return (uint64_t)XXH64_digest(&s);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
