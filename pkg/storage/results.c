/* results.c: the memory of query results: a selection's arrays, freed one by one,
 * and a totals result's arena, from which a backend takes the arrays and strings
 * of every series so that a result of thousands of series costs a handful of
 * mappings rather than several allocations a series. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "profd/storage.h"

void pd_storage_result_destroy(struct pd_storage_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nseries; i++) {
		free(r->series[i].labels);
		free(r->series[i].ts);
	}
	free(r->series);
	free(r);
}

/* ---- a totals result's arena ------------------------------------------------------ */

/* Blocks of memory handed out front to back and freed together with the result.
 * Each block is its own mapping, twice as large as the one before (from
 * ARENA_FIRST to ARENA_MOST, or as large as one request needs); blocks of
 * ARENA_HUGE and more are aligned to it and marked for transparent huge pages,
 * so that a large result is faulted in 2 MiB at a time. */
#define ARENA_FIRST ((size_t)64 << 10)
#define ARENA_MOST ((size_t)16 << 20)
#define ARENA_HUGE ((size_t)2 << 20)

struct arena_block {
	struct arena_block *next;
	size_t size; /* of the mapping, this header included */
};

struct arena {
	struct arena_block *blocks; /* newest first */
	char *pos, *end;            /* free space left in the newest block */
	size_t next_size;
};

static void *arena_map(size_t size)
{
	if (size < ARENA_HUGE) {
		void *p =
		    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	/* map one huge page more and trim, so the block starts on a huge page */
	char *p = mmap(NULL, size + ARENA_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	               -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + ARENA_HUGE - 1) & ~(uintptr_t)(ARENA_HUGE - 1);
	size_t lead = a - (uintptr_t)p;
	if (lead)
		munmap(p, lead);
	if (ARENA_HUGE - lead)
		munmap((char *)a + size, ARENA_HUGE - lead);
#ifdef MADV_HUGEPAGE
	madvise((void *)a, size, MADV_HUGEPAGE); /* advice: failing costs only speed */
#endif
	return (void *)a;
}

/* bytes (rounded up to 16) from the arena; NULL when out of memory */
static void *arena_alloc(struct arena *a, size_t bytes)
{
	bytes = (bytes + 15) & ~(size_t)15;
	if (bytes > (size_t)(a->end - a->pos)) {
		size_t hdr = (sizeof(struct arena_block) + 15) & ~(size_t)15;
		size_t size = a->next_size ? a->next_size : ARENA_FIRST;
		while (size < bytes + hdr)
			size *= 2;
		struct arena_block *b = arena_map(size);
		if (!b)
			return NULL;
		b->size = size;
		b->next = a->blocks;
		a->blocks = b;
		a->pos = (char *)b + hdr;
		a->end = (char *)b + size;
		a->next_size = size * 2 < ARENA_MOST ? size * 2 : ARENA_MOST;
	}
	void *p = a->pos;
	a->pos += bytes;
	return p;
}

static void arena_free(struct arena *a)
{
	if (!a)
		return;
	for (struct arena_block *b = a->blocks, *n; b; b = n) {
		n = b->next;
		munmap(b, b->size);
	}
	free(a);
}

void *pd_storage_totals_alloc(struct pd_storage_totals_result *r, size_t bytes)
{
	if (!r->priv && !(r->priv = calloc(1, sizeof(struct arena))))
		return NULL;
	return arena_alloc(r->priv, bytes);
}

char *pd_storage_totals_strdup(struct pd_storage_totals_result *r, const char *s)
{
	size_t l = strlen(s) + 1;
	char *d = pd_storage_totals_alloc(r, l);
	if (d)
		memcpy(d, s, l);
	return d;
}

void pd_storage_totals_result_destroy(struct pd_storage_totals_result *r)
{
	if (!r)
		return;
	/* every series' arrays are in the arena */
	arena_free(r->priv);
	free(r->series);
	free(r);
}
