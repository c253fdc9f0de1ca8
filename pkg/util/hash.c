/* hash.c: byte hashing and an open-addressing uint64 -> uint32 map. */
#include "profd/util.h"

#include <stdlib.h>

uint64_t pd_hash_u64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

uint64_t pd_hash_bytes(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = 0;
		for (int k = 0; k < 8; k++)
			w |= (uint64_t)s[i + k] << (8 * k);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ s[i]) * 0x100000001b3ULL;
	return pd_hash_u64(h, len);
}

void pd_u64map_init(struct pd_u64map *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->cap = 0;
	m->len = 0;
}

void pd_u64map_fini(struct pd_u64map *m)
{
	free(m->keys);
	free(m->vals);
	pd_u64map_init(m);
}

static int grow(struct pd_u64map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 16;
	uint64_t *nk = calloc(ncap, sizeof(*nk));
	uint32_t *nv = malloc(ncap * sizeof(*nv));
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return PD_ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = pd_hash_u64(0, m->keys[i]) & (ncap - 1);
		while (nk[j])
			j = (j + 1) & (ncap - 1);
		nk[j] = m->keys[i];
		nv[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

int pd_u64map_put(struct pd_u64map *m, uint64_t key, uint32_t val)
{
	if ((m->len + 1) * 2 > m->cap && grow(m))
		return PD_ENOMEM;
	size_t j = pd_hash_u64(0, key) & (m->cap - 1);
	while (m->keys[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->keys[j])
		m->len++;
	m->keys[j] = key;
	m->vals[j] = val;
	return 0;
}

int pd_u64map_get(const struct pd_u64map *m, uint64_t key, uint32_t *val)
{
	if (!m->cap)
		return 0;
	size_t j = pd_hash_u64(0, key) & (m->cap - 1);
	while (m->keys[j]) {
		if (m->keys[j] == key) {
			*val = m->vals[j];
			return 1;
		}
		j = (j + 1) & (m->cap - 1);
	}
	return 0;
}
