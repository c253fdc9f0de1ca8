/* jfr_map.c: an open-addressing hash map from three 64-bit words to a 32-bit
 * value, for the JFR converter's lookups by composite keys (event sums by
 * profile, stack trace and span; locations by profile, method and line). */
#include <stdlib.h>
#include <string.h>

#include "jfr_int.h"

void jfr_map_init(struct jfr_map *m)
{
	memset(m, 0, sizeof(*m));
}

void jfr_map_fini(struct jfr_map *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

void jfr_map_clear(struct jfr_map *m)
{
	if (m->v)
		memset(m->v, 0, m->cap * sizeof(*m->v));
	m->len = 0;
}

static size_t slot_of(uint64_t a, uint64_t b, uint64_t c, size_t cap)
{
	/* multiply-xor, then a 64-bit finalizer (splitmix64's) */
	uint64_t h =
	    a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^ c * 0x165667b19e3779f9ull;
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (size_t)h & (cap - 1);
}

int jfr_map_get(const struct jfr_map *m, uint64_t a, uint64_t b, uint64_t c, uint32_t *val)
{
	if (!m->cap)
		return 0;
	for (size_t i = slot_of(a, b, c, m->cap);; i = (i + 1) & (m->cap - 1)) {
		const struct jfr_map_slot *s = &m->v[i];
		if (!s->val)
			return 0;
		if (s->a == a && s->b == b && s->c == c) {
			*val = s->val - 1;
			return 1;
		}
	}
}

static int grow(struct jfr_map *m)
{
	size_t nc = m->cap ? m->cap * 2 : 256;
	struct jfr_map_slot *v = calloc(nc, sizeof(*v));
	if (!v)
		return PD_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct jfr_map_slot *s = &m->v[i];
		if (!s->val)
			continue;
		size_t j = slot_of(s->a, s->b, s->c, nc);
		while (v[j].val)
			j = (j + 1) & (nc - 1);
		v[j] = *s;
	}
	free(m->v);
	m->v = v;
	m->cap = nc;
	return 0;
}

int jfr_map_put(struct jfr_map *m, uint64_t a, uint64_t b, uint64_t c, uint32_t val)
{
	if ((m->len + 1) * 4 >= m->cap * 3 && grow(m))
		return PD_ENOMEM;
	for (size_t i = slot_of(a, b, c, m->cap);; i = (i + 1) & (m->cap - 1)) {
		struct jfr_map_slot *s = &m->v[i];
		if (!s->val) {
			*s = (struct jfr_map_slot){.a = a, .b = b, .c = c, .val = val + 1};
			m->len++;
			return 0;
		}
		if (s->a == a && s->b == b && s->c == c) {
			s->val = val + 1;
			return 0;
		}
	}
}
