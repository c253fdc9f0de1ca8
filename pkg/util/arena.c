/* arena.c: a bump allocator whose memory is freed in one call, with a cap on the
 * total it hands out. Decoded profiles live in one arena, so that freeing a profile
 * of a million small objects is one loop over a few large blocks. */
#include "profd/util.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK (64 * 1024)
#define ARENA_ALIGN 16

struct arena_block {
	struct arena_block *next;
	size_t size; /* usable bytes after the header */
	size_t used;
	/* data follows, aligned */
};

struct pd_arena {
	struct arena_block *head;
	size_t limit;
	size_t used;
	int exhausted; /* an allocation was refused for the limit */
};

#define BLOCK_HDR ((sizeof(struct arena_block) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1))

struct pd_arena *pd_arena_create(size_t limit)
{
	struct pd_arena *a = calloc(1, sizeof(*a));
	if (a)
		a->limit = limit;
	return a;
}

void pd_arena_destroy(struct pd_arena *a)
{
	if (!a)
		return;
	struct arena_block *b = a->head;
	while (b) {
		struct arena_block *n = b->next;
		free(b);
		b = n;
	}
	free(a);
}

void *pd_arena_alloc(struct pd_arena *a, size_t size)
{
	if (size == 0)
		size = 1;
	if (size > SIZE_MAX - ARENA_ALIGN - BLOCK_HDR)
		return NULL;
	size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (a->limit && (size > a->limit || a->used > a->limit - size)) {
		a->exhausted = 1;
		return NULL;
	}
	struct arena_block *b = a->head;
	if (!b || b->size - b->used < size) {
		size_t bsize = size > ARENA_BLOCK / 4 ? size : ARENA_BLOCK;
		struct arena_block *nb = malloc(BLOCK_HDR + bsize);
		if (!nb)
			return NULL;
		nb->size = bsize;
		nb->used = 0;
		if (b && bsize != ARENA_BLOCK) {
			/* a large one-off: keep the current block for small allocations */
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			a->head = nb;
		}
		b = nb;
	}
	void *p = (char *)b + BLOCK_HDR + b->used;
	b->used += size;
	a->used += size;
	return p;
}

void *pd_arena_calloc(struct pd_arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	void *p = pd_arena_alloc(a, n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

char *pd_arena_strndup(struct pd_arena *a, const char *s, size_t len)
{
	if (len == SIZE_MAX)
		return NULL;
	char *p = pd_arena_alloc(a, len + 1);
	if (!p)
		return NULL;
	if (len)
		memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

size_t pd_arena_used(const struct pd_arena *a)
{
	return a->used;
}

int pd_arena_exhausted(const struct pd_arena *a)
{
	return a->exhausted;
}
