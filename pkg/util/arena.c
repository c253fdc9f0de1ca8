/* arena.c: a bump allocator whose memory is freed in one call, with a cap on the
 * total it hands out. Decoded profiles live in one arena, so that freeing a profile
 * of a million small objects is one loop over a few large blocks.
 *
 * A thread keeps the blocks of the arenas it destroys (up to ARENA_CACHE_BYTES)
 * for its next arenas: a request that decodes a profile and throws it away again
 * would otherwise return its blocks to malloc, which hands the top of the heap
 * back to the kernel, and the next request would take a page fault on every page
 * it touches. Under AddressSanitizer a kept block is poisoned, so that a use
 * after pd_arena_destroy is still caught. */
#include "profd/util.h"

#include <pthread.h>
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

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Enough for a request that decodes and re-encodes a 40 KB heap profile (about
 * 400 KB of blocks), small beside the head even with a few dozen scrape workers. */
#define ARENA_CACHE_BYTES ((size_t)1 << 20) /* kept per thread */
#define ARENA_CACHE_BLOCK ((size_t)512 << 10) /* larger blocks are freed */

/* The blocks a thread keeps, smallest first. */
struct arena_cache {
	struct arena_block *head;
	size_t bytes;
};

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_ok;

static void cache_free(void *p)
{
	struct arena_cache *c = p;
	while (c->head) {
		struct arena_block *b = c->head;
		UNPOISON(b, BLOCK_HDR + b->size);
		c->head = b->next;
		free(b);
	}
	free(c);
}

static void cache_init(void)
{
	cache_ok = pthread_key_create(&cache_key, cache_free) == 0;
}

static struct arena_cache *cache_get(int create)
{
	pthread_once(&cache_once, cache_init);
	if (!cache_ok)
		return NULL;
	struct arena_cache *c = pthread_getspecific(cache_key);
	if (!c && create && (c = calloc(1, sizeof(*c))) && pthread_setspecific(cache_key, c)) {
		free(c);
		c = NULL;
	}
	return c;
}

/* A kept block of at least size usable bytes (and not much more), or NULL. */
static struct arena_block *cache_take(size_t size)
{
	struct arena_cache *c = cache_get(0);
	if (!c)
		return NULL;
	for (struct arena_block **pp = &c->head; *pp; pp = &(*pp)->next) {
		struct arena_block *b = *pp;
		if (b->size < size)
			continue;
		if (b->size / 4 > size)
			return NULL; /* the rest are larger still */
		UNPOISON((char *)b + BLOCK_HDR, b->size);
		*pp = b->next;
		c->bytes -= b->size;
		return b;
	}
	return NULL;
}

/* Keeps b for the thread's next arenas, or frees it. */
static void cache_put(struct arena_block *b)
{
	struct arena_cache *c = b->size <= ARENA_CACHE_BLOCK ? cache_get(1) : NULL;
	if (!c || c->bytes + b->size > ARENA_CACHE_BYTES) {
		free(b);
		return;
	}
	struct arena_block **pp = &c->head;
	while (*pp && (*pp)->size < b->size)
		pp = &(*pp)->next;
	b->next = *pp;
	*pp = b;
	c->bytes += b->size;
	POISON((char *)b + BLOCK_HDR, b->size);
}

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
		cache_put(b);
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
		/* large one-offs are rounded up to a quarter block, so that a kept block
		 * fits the next request of about the same size */
		size_t bsize = size > ARENA_BLOCK / 4
				   ? (size > SIZE_MAX - ARENA_BLOCK - BLOCK_HDR
					  ? size
					  : (size + ARENA_BLOCK / 4 - 1) & ~(size_t)(ARENA_BLOCK / 4 - 1))
				   : ARENA_BLOCK;
		struct arena_block *nb = cache_take(bsize);
		if (nb)
			bsize = nb->size;
		else if (!(nb = malloc(BLOCK_HDR + bsize)))
			return NULL;
		nb->size = bsize;
		nb->used = 0;
		if (b && size > ARENA_BLOCK / 4) {
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

int pd_arena_fits(struct pd_arena *a, size_t size)
{
	if (a->limit && (size > a->limit || a->used > a->limit - size)) {
		a->exhausted = 1;
		return -1;
	}
	return 0;
}
