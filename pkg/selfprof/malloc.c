/* malloc.c: profd's allocation functions for the heap profiler, linked into the
 * profd executable only, and only in builds without sanitizers (which replace
 * malloc themselves). A function the main executable defines takes the place of
 * the C library's for every shared library too (ELF interposition, as glibc
 * documents for replacing malloc), so every allocation in the process passes
 * here. Each forwards to glibc's allocator under its __libc_ name (never dlsym,
 * which allocates), so block layout and malloc_usable_size stay glibc's.
 *
 * The unsampled path adds a thread-local subtraction and compare to malloc and a
 * hash plus one 16-bit load to free; the rest is in heap.c. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "selfprof_int.h"

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);

/* Frames to drop from a sample's stack: sp_heap_on_alloc's and the wrapper's. */
#define SKIP 2

static inline __attribute__((always_inline)) void *account(void *p, size_t n)
{
	int64_t d = n > (size_t)INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)n;
	if ((sp_heap_countdown -= d) <= 0)
		sp_heap_on_alloc(p, n, SKIP);
	return p;
}

static inline __attribute__((always_inline)) void unaccount(void *p)
{
	if (sp_heap_maybe_sampled(p))
		sp_heap_on_free(p);
}

void *malloc(size_t n)
{
	return account(__libc_malloc(n), n);
}

void free(void *p)
{
	if (!p)
		return;
	unaccount(p);
	__libc_free(p);
}

void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);
	return p ? account(p, n * size) : NULL;
}

void *realloc(void *p, size_t n)
{
	if (!p)
		return account(__libc_malloc(n), n);
	/* forget the old block first: once glibc frees it, another thread may get the
	 * address back and sample it. A failed realloc leaves the block in place but
	 * no longer counted as in use, which only under-reports. */
	unaccount(p);
	void *q = __libc_realloc(p, n);
	if (!q)
		return NULL;
	return account(q, n);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!p)
		return account(__libc_malloc(total), total);
	unaccount(p);
	void *q = __libc_realloc(p, total);
	return q ? account(q, total) : NULL;
}

void *memalign(size_t align, size_t n)
{
	return account(__libc_memalign(align, n), n);
}

void *aligned_alloc(size_t align, size_t n)
{
	return account(__libc_memalign(align, n), n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
		return EINVAL;
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = account(p, n);
	return 0;
}

void *valloc(size_t n)
{
	return account(__libc_valloc(n), n);
}

void *pvalloc(size_t n)
{
	return account(__libc_pvalloc(n), n);
}

__attribute__((constructor)) static void selfprof_malloc_init(void)
{
	sp_heap_install();
}
