/* heap.c: the heap sampler that malloc.c feeds, and the heap profile built from it.
 *
 * Sampling as Go's runtime does it: each thread counts down the bytes it
 * allocates, and when the count runs out the allocation that crossed it is
 * sampled and a new count is drawn from an exponential distribution with mean
 * PD_SELFPROF_HEAP_RATE (so samples form a Poisson process over allocated bytes
 * and an allocation of n bytes is sampled with probability 1 - e^(-n/rate)).
 * A sampled allocation's stack (backtrace) goes into a bucket table (per stack:
 * allocations, bytes, frees, freed bytes) and its address into a table of live
 * sampled blocks, so that free() can count it as freed. Both tables are fixed
 * arrays in .bss (usable before any initialisation, before main, in any thread)
 * under one mutex that only the sampled path and frees of sampled blocks take.
 * A byte per address hash (sp_heap_filter) says whether an address may be a
 * live sampled block, so that free() of anything else costs one load.
 *
 * A thread-local guard keeps the sampler's own allocations (backtrace may
 * allocate the first time) out of it. Fork handlers hold the mutex across
 * fork() so that the child never inherits it locked. */
#include <execinfo.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "selfprof_int.h"

#define B_DEPTH 32
#define NBUCKETS 8192 /* power of two; distinct allocation stacks */
#define NLIVE 65536   /* power of two; live sampled blocks (about 32 GiB of heap) */

struct bucket {
	uint64_t hash;
	uint32_t depth;
	uint32_t used;
	uint64_t allocs, alloc_bytes, frees, free_bytes;
	uintptr_t pcs[B_DEPTH];
};

struct live {
	uintptr_t p; /* 0: empty */
	uint64_t size;
	uint32_t bucket;
};

_Thread_local int64_t sp_heap_countdown;
uint16_t sp_heap_filter[1u << SP_HEAP_FILTER_BITS];

static _Thread_local int tl_busy; /* in the sampler: do not sample */
static _Thread_local int tl_init; /* this thread's countdown was drawn */
static _Thread_local uint64_t tl_rng;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct bucket buckets[NBUCKETS];
static size_t nbuckets;
static struct live live[NLIVE];
static size_t nlive;
static uint64_t dropped; /* samples not recorded: the live table was full */
static int installed;

/* ---- sampling ---------------------------------------------------------------- */

static uint64_t rng_next(void)
{
	if (!tl_rng) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		tl_rng = ((uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull) ^ (uintptr_t)&tl_rng ^
		         (uint64_t)ts.tv_sec;
		if (!tl_rng)
			tl_rng = 1;
	}
	/* xorshift64* */
	tl_rng ^= tl_rng >> 12;
	tl_rng ^= tl_rng << 25;
	tl_rng ^= tl_rng >> 27;
	return tl_rng * 0x2545F4914F6CDD1Dull;
}

/* Bytes until the next sample: exponential with mean PD_SELFPROF_HEAP_RATE. */
static int64_t next_interval(void)
{
	double u = ((double)(rng_next() >> 11) + 1.0) / 9007199254740993.0; /* (0, 1] */
	double x = -log(u) * PD_SELFPROF_HEAP_RATE;
	if (x > 1e12)
		x = 1e12;
	return (int64_t)x + 1;
}

static uint64_t stack_hash(const uintptr_t *pcs, size_t n)
{
	uint64_t h = 0x84222325cbf29ce4ull ^ n;
	for (size_t i = 0; i < n; i++) {
		h ^= (uint64_t)pcs[i];
		h *= 0x100000001b3ull;
		h ^= h >> 31;
	}
	return h ? h : 1;
}

/* The bucket of a stack, created if need be; the last bucket (depth 0) takes
 * what no longer fits. Under mu. */
static uint32_t bucket_of(const uintptr_t *pcs, size_t depth)
{
	uint64_t h = stack_hash(pcs, depth);
	size_t i = h & (NBUCKETS - 1);
	for (;;) {
		struct bucket *b = &buckets[i];
		if (!b->used) {
			if (nbuckets >= NBUCKETS * 3 / 4)
				break;
			b->used = 1;
			b->hash = h;
			b->depth = (uint32_t)depth;
			memcpy(b->pcs, pcs, depth * sizeof(*pcs));
			__atomic_store_n(&nbuckets, nbuckets + 1, __ATOMIC_RELAXED);
			return (uint32_t)i;
		}
		if (b->hash == h && b->depth == depth &&
		    memcmp(b->pcs, pcs, depth * sizeof(*pcs)) == 0)
			return (uint32_t)i;
		i = (i + 1) & (NBUCKETS - 1);
	}
	/* the table is full: one overflow bucket, with hash 0 and no stack */
	for (i = 0; i < NBUCKETS; i++)
		if (buckets[i].used && buckets[i].hash == 0)
			return (uint32_t)i;
	for (i = 0; i < NBUCKETS; i++)
		if (!buckets[i].used) {
			buckets[i].used = 1;
			buckets[i].hash = 0;
			buckets[i].depth = 0;
			__atomic_store_n(&nbuckets, nbuckets + 1, __ATOMIC_RELAXED);
			return (uint32_t)i;
		}
	return 0; /* unreachable: a quarter of the table stays free */
}

static size_t live_slot(uintptr_t p)
{
	return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> 48) & (NLIVE - 1);
}

/* Removes live[i], shifting the entries after it back (linear probing). */
static void live_delete(size_t i)
{
	size_t j = i;
	for (;;) {
		live[i].p = 0;
		for (;;) {
			j = (j + 1) & (NLIVE - 1);
			if (!live[j].p)
				return;
			size_t k = live_slot(live[j].p);
			/* may live[j] move to i? only if its home k is not in (i, j] */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		live[i] = live[j];
		i = j;
	}
}

static struct live *live_find(uintptr_t p)
{
	for (size_t i = live_slot(p);; i = (i + 1) & (NLIVE - 1)) {
		if (live[i].p == p)
			return &live[i];
		if (!live[i].p)
			return NULL;
	}
}

/* Forgets p if it is live and counts it as freed. Under mu. */
static void forget(uintptr_t p)
{
	struct live *l = live_find(p);
	if (!l)
		return;
	struct bucket *b = &buckets[l->bucket];
	b->frees++;
	b->free_bytes += l->size;
	__atomic_fetch_sub(&sp_heap_filter[sp_heap_filter_slot((void *)p)], 1, __ATOMIC_RELAXED);
	nlive--;
	live_delete((size_t)(l - live));
}

/* Records a sampled block. Under mu. */
static int remember(uintptr_t p, uint64_t size, const uintptr_t *pcs, size_t depth)
{
	forget(p); /* an address freed without us seeing it (cannot happen, but be sure) */
	if (nlive >= NLIVE * 3 / 4) {
		dropped++;
		return PD_ENOMEM;
	}
	uint32_t bi = bucket_of(pcs, depth);
	struct bucket *b = &buckets[bi];
	b->allocs++;
	b->alloc_bytes += size;
	size_t i = live_slot(p);
	while (live[i].p)
		i = (i + 1) & (NLIVE - 1);
	live[i] = (struct live){p, size, bi};
	nlive++;
	/* at most NLIVE * 3 / 4 live blocks: a 16-bit count cannot overflow */
	__atomic_fetch_add(&sp_heap_filter[sp_heap_filter_slot((void *)p)], 1, __ATOMIC_RELAXED);
	return 0;
}

void sp_heap_on_alloc(void *p, size_t n, int skip)
{
	if (tl_busy)
		return; /* the sampler's own allocation; the countdown stays run out */
	if (!tl_init) {
		/* the thread's first slow path: draw its first countdown and apply n */
		tl_init = 1;
		int64_t left = sp_heap_countdown + next_interval(); /* countdown held -n */
		sp_heap_countdown = left;
		if (left > 0)
			return;
	}
	sp_heap_countdown = next_interval();
	/* before sp_heap_install (allocations while the program loads) the unwinder
	 * is not loaded yet: loading it from inside malloc is best avoided */
	if (!p || !__atomic_load_n(&installed, __ATOMIC_RELAXED))
		return;
	tl_busy = 1;
	void *buf[B_DEPTH + 4];
	int depth = backtrace(buf, B_DEPTH + 4);
	depth = depth > skip ? depth - skip : 0;
	if (depth > B_DEPTH)
		depth = B_DEPTH;
	pthread_mutex_lock(&mu);
	remember((uintptr_t)p, n, (const uintptr_t *)(buf + skip), (size_t)depth);
	pthread_mutex_unlock(&mu);
	tl_busy = 0;
}

void sp_heap_on_free(void *p)
{
	pthread_mutex_lock(&mu);
	forget((uintptr_t)p);
	pthread_mutex_unlock(&mu);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&mu);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&mu);
}

static void fork_child(void)
{
	pthread_mutex_init(&mu, NULL);
}

void sp_heap_install(void)
{
	tl_busy = 1;
	void *warm[4];
	backtrace(warm, 4); /* loads libgcc_s now, not inside a sampled malloc */
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	tl_busy = 0;
	__atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
}

int sp_heap_record(void *p, size_t n, const uintptr_t *pcs, size_t depth)
{
	if (depth > B_DEPTH)
		depth = B_DEPTH;
	pthread_mutex_lock(&mu);
	int rc = remember((uintptr_t)p, n, pcs, depth);
	pthread_mutex_unlock(&mu);
	return rc;
}

void sp_heap_reset(void)
{
	pthread_mutex_lock(&mu);
	memset(buckets, 0, sizeof(buckets));
	memset(live, 0, sizeof(live));
	memset(sp_heap_filter, 0, sizeof(sp_heap_filter));
	__atomic_store_n(&nbuckets, 0, __ATOMIC_RELAXED);
	nlive = 0;
	dropped = 0;
	pthread_mutex_unlock(&mu);
}

/* ---- the profile --------------------------------------------------------------- */

void sp_heap_scale(int64_t count, int64_t size, int64_t rate, int64_t *out_count, int64_t *out_size)
{
	if (count == 0 || size == 0) {
		*out_count = 0;
		*out_size = 0;
		return;
	}
	if (rate <= 1) {
		*out_count = count;
		*out_size = size;
		return;
	}
	double avg = (double)size / (double)count;
	double scale = 1 / (1 - exp(-avg / (double)rate));
	*out_count = (int64_t)((double)count * scale);
	*out_size = (int64_t)((double)size * scale);
}

int pd_selfprof_heap_available(struct pd_err *why)
{
#ifdef PD_SELFPROF_SANITIZE
	pd_err_set(why, PD_ENOTFOUND,
	           "heap profiling is not available in a sanitizer build (the sanitizer "
	           "replaces malloc)");
	return 0;
#else
	if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
		return 1;
	pd_err_set(why, PD_ENOTFOUND,
	           "heap profiling is not available: this binary does not sample its allocations");
	return 0;
#endif
}

int pd_selfprof_heap_profile(int allocs, uint8_t **out, size_t *out_len, struct pd_err *err)
{
	*out = NULL;
	*out_len = 0;
	if (!pd_selfprof_heap_available(err))
		return PD_ENOTFOUND;
	return sp_heap_build(allocs, out, out_len, err);
}

int sp_heap_build(int allocs, uint8_t **out, size_t *out_len, struct pd_err *err)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* the copy is allocated before taking the lock: no malloc under it, where a
	 * sampled allocation of this thread would wait for itself */
	struct bucket *copy = NULL;
	struct sp_sample *s = NULL;
	int64_t *vals = NULL;
	struct sp_maps ms;
	int rc = 0, maps = 0;
	size_t n = 0;
	uint64_t drop;
	for (;;) {
		size_t cap = __atomic_load_n(&nbuckets, __ATOMIC_RELAXED) + 64;
		if (!(copy = malloc(cap * sizeof(*copy))))
			return pd_err_set(err, PD_ENOMEM,
			                  "out of memory building the heap profile");
		pthread_mutex_lock(&mu);
		if (nbuckets <= cap)
			break; /* with the lock held */
		pthread_mutex_unlock(&mu);
		free(copy);
	}
	for (size_t i = 0; i < NBUCKETS; i++)
		if (buckets[i].used)
			copy[n++] = buckets[i];
	drop = dropped;
	pthread_mutex_unlock(&mu);
	s = calloc(n + 1, sizeof(*s));
	vals = calloc(4 * (n + 1), sizeof(*vals));
	if (!s || !vals) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory building the heap profile");
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct bucket *b = &copy[i];
		int64_t *v = &vals[4 * k];
		sp_heap_scale((int64_t)b->allocs, (int64_t)b->alloc_bytes, PD_SELFPROF_HEAP_RATE,
		              &v[0], &v[1]);
		sp_heap_scale((int64_t)(b->allocs - b->frees),
		              (int64_t)(b->alloc_bytes - b->free_bytes), PD_SELFPROF_HEAP_RATE,
		              &v[2], &v[3]);
		if (!v[0] && !v[1] && !v[2] && !v[3])
			continue;
		const char *name = b->hash == 0    ? "[profd: heap stack table full]"
		                   : b->depth == 0 ? "[profd: unknown stack]"
		                                   : NULL;
		s[k] = (struct sp_sample){b->pcs, b->depth, v, name};
		k++;
	}
	if ((rc = sp_maps_load(&ms, err)))
		goto out;
	maps = 1;
	static const struct sp_value_type types[] = {{"alloc_objects", "count"},
	                                             {"alloc_space", "bytes"},
	                                             {"inuse_objects", "count"},
	                                             {"inuse_space", "bytes"}};
	char comment[128];
	snprintf(comment, sizeof(comment), "profd: %llu sampled allocations not recorded",
	         (unsigned long long)drop);
	struct sp_profile_desc d = {
	    .types = types,
	    .ntypes = 4,
	    .period_type = {"space", "bytes"},
	    .period = PD_SELFPROF_HEAP_RATE,
	    .time_nanos = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
	    .default_sample_type = allocs ? "alloc_space" : "inuse_space",
	    .comment = drop ? comment : NULL,
	    .leaf_exact = 0,
	};
	rc = sp_build_profile(&d, s, k, &ms, out, out_len, err);
out:
	if (maps)
		sp_maps_fini(&ms);
	free(copy);
	free(s);
	free(vals);
	return rc;
}
