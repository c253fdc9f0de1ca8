/* cpu.c: the CPU profiler. setitimer(ITIMER_PROF) counts the CPU time of the whole
 * process and, every 10 ms of it, sends SIGPROF, which the kernel delivers to the
 * thread that was running. The handler unwinds that thread's stack with
 * backtrace() (the .eh_frame unwinder of libgcc, loaded once beforehand so that
 * the handler never allocates) and counts the stack in a fixed table with
 * lock-free inserts: it takes no lock and calls nothing that does. Stopping
 * disarms the timer, waits for handlers still running, and symbolizes the table
 * into a profile.proto. One profile at a time; the handler stays installed and
 * ignores signals that arrive late. */
#define _GNU_SOURCE /* REG_RIP */
#include <errno.h>
#include <execinfo.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include "selfprof_int.h"

#define SLOT_DEPTH 64
#define NSLOTS 4096 /* power of two; distinct stacks kept per profile */
#define MAX_PROBES 64
#define PERIOD_NS (1000000000LL / PD_SELFPROF_CPU_HZ)

struct slot {
	uint32_t state; /* 0 empty, 1 being written, 2 ready */
	uint32_t depth;
	uint64_t hash;
	uint64_t count;
	uintptr_t pcs[SLOT_DEPTH];
};

struct pd_selfprof_cpu {
	int64_t start_real_ns, start_mono_ns;
	struct slot *slots;
};

/* Shared with the signal handler; read and written with __atomic builtins. */
static int g_busy;     /* a profile is running (start .. end of stop) */
static int g_active;   /* the handler records */
static int g_inflight; /* handlers running */
static struct slot *g_slots;
static uint64_t g_lost; /* samples that found no slot */
static int g_installed; /* the handler is installed (only touched while busy) */

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t stack_hash(const uintptr_t *pcs, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	for (size_t i = 0; i < n; i++) {
		h ^= (uint64_t)pcs[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

/* Async-signal-safe: atomics and plain stores into preallocated memory only. */
static void record(struct slot *slots, const uintptr_t *pcs, size_t depth)
{
	if (depth > SLOT_DEPTH)
		depth = SLOT_DEPTH;
	uint64_t h = stack_hash(pcs, depth);
	for (size_t probe = 0; probe < MAX_PROBES; probe++) {
		struct slot *s = &slots[(h + probe) & (NSLOTS - 1)];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st == 0) {
			if (__atomic_compare_exchange_n(&s->state, &st, 1, 0, __ATOMIC_ACQ_REL,
			                                __ATOMIC_ACQUIRE)) {
				s->hash = h;
				s->depth = (uint32_t)depth;
				for (size_t i = 0; i < depth; i++)
					s->pcs[i] = pcs[i];
				s->count = 1;
				__atomic_store_n(&s->state, 2, __ATOMIC_RELEASE);
				return;
			}
		}
		if (st != 2 || s->hash != h || s->depth != depth)
			continue; /* a slot being written may hold the same stack: use another */
		size_t i = 0;
		while (i < depth && s->pcs[i] == pcs[i])
			i++;
		if (i == depth) {
			__atomic_fetch_add(&s->count, 1, __ATOMIC_RELAXED);
			return;
		}
	}
	__atomic_fetch_add(&g_lost, 1, __ATOMIC_RELAXED);
}

static uintptr_t interrupted_pc(const void *ucv)
{
	const ucontext_t *uc = ucv;
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

static void on_sigprof(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	(void)sig;
	(void)si;
	__atomic_fetch_add(&g_inflight, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&g_active, __ATOMIC_SEQ_CST)) {
		struct slot *slots = __atomic_load_n(&g_slots, __ATOMIC_ACQUIRE);
		void *buf[SLOT_DEPTH + 8];
		int n = backtrace(buf, SLOT_DEPTH + 8);
		uintptr_t pc = interrupted_pc(ucv);
		/* drop this handler's frame and the signal trampoline: the stack starts at
		 * the interrupted pc */
		int start = -1;
		for (int i = 0; i < n && i < 8; i++)
			if ((uintptr_t)buf[i] == pc) {
				start = i;
				break;
			}
		if (start >= 0)
			record(slots, (const uintptr_t *)(buf + start), (size_t)(n - start));
		else if (pc)
			record(slots, &pc,
			       1); /* the unwinder could not get past the signal frame */
	}
	__atomic_fetch_sub(&g_inflight, 1, __ATOMIC_SEQ_CST);
	errno = saved;
}

/* The stack table is mapped, not taken from malloc: a 2 MiB block in the middle of
 * the brk heap made glibc trim and regrow the heap's top on every free while the
 * profiling signals arrived (bench/selfprof.sh measured decoding at 2.2x its time). */
static struct slot *slots_map(void)
{
	void *p = mmap(NULL, NSLOTS * sizeof(struct slot), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p; /* zero-filled */
}

static void slots_unmap(struct slot *s)
{
	if (s)
		munmap(s, NSLOTS * sizeof(struct slot));
}

static int install(struct pd_err *err)
{
	if (g_installed)
		return 0;
	/* the first backtrace() loads libgcc_s with dlopen and malloc: not in a handler */
	void *warm[4];
	backtrace(warm, 4);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigprof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) < 0)
		return pd_err_set(err, PD_EIO, "Could not enable CPU profiling: sigaction: %s",
		                  strerror(errno));
	g_installed = 1;
	return 0;
}

int pd_selfprof_cpu_start(struct pd_selfprof_cpu **out, struct pd_err *err)
{
	*out = NULL;
	int expected = 0;
	if (!__atomic_compare_exchange_n(&g_busy, &expected, 1, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return pd_err_set(err, PD_EINVAL, "cpu profiling already in use");
	struct itimerval cur;
	int rc = 0;
	struct pd_selfprof_cpu *c = calloc(1, sizeof(*c));
	if (!c || !(c->slots = slots_map())) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory for the CPU profile's stack table");
		goto fail;
	}
	if (getitimer(ITIMER_PROF, &cur) == 0 && (cur.it_value.tv_sec || cur.it_value.tv_usec)) {
		rc = pd_err_set(err, PD_EINVAL,
		                "cpu profiling already in use (the profiling timer is armed)");
		goto fail;
	}
	if ((rc = install(err)))
		goto fail;
	__atomic_store_n(&g_lost, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&g_slots, c->slots, __ATOMIC_RELEASE);
	__atomic_store_n(&g_active, 1, __ATOMIC_SEQ_CST);
	c->start_real_ns = now_ns(CLOCK_REALTIME);
	c->start_mono_ns = now_ns(CLOCK_MONOTONIC);
	struct itimerval it = {{0, PERIOD_NS / 1000}, {0, PERIOD_NS / 1000}};
	if (setitimer(ITIMER_PROF, &it, NULL) < 0) {
		__atomic_store_n(&g_active, 0, __ATOMIC_SEQ_CST);
		rc = pd_err_set(err, PD_EIO, "Could not enable CPU profiling: setitimer: %s",
		                strerror(errno));
		goto fail;
	}
	*out = c;
	return 0;
fail:
	if (c)
		slots_unmap(c->slots);
	free(c);
	__atomic_store_n(&g_busy, 0, __ATOMIC_RELEASE);
	return rc;
}

int pd_selfprof_cpu_stop(struct pd_selfprof_cpu *c, uint8_t **out, size_t *out_len,
                         struct pd_err *err)
{
	struct itimerval off;
	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_PROF, &off, NULL);
	__atomic_store_n(&g_active, 0, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&g_inflight, __ATOMIC_SEQ_CST))
		sched_yield();
	__atomic_store_n(&g_slots, NULL, __ATOMIC_RELEASE);
	int64_t duration = now_ns(CLOCK_MONOTONIC) - c->start_mono_ns;
	uint64_t lost = __atomic_load_n(&g_lost, __ATOMIC_RELAXED);

	size_t n = 0;
	for (size_t i = 0; i < NSLOTS; i++)
		n += c->slots[i].state == 2;
	struct sp_sample *s = calloc(n + 1, sizeof(*s));
	int64_t *vals = calloc(2 * (n + 1), sizeof(*vals));
	struct sp_maps ms;
	int rc = 0, maps = 0;
	if (!s || !vals) {
		rc = pd_err_set(err, PD_ENOMEM, "out of memory building the CPU profile");
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < NSLOTS; i++) {
		const struct slot *sl = &c->slots[i];
		if (sl->state != 2)
			continue;
		vals[2 * k] = (int64_t)sl->count;
		vals[2 * k + 1] = (int64_t)sl->count * PERIOD_NS;
		s[k] = (struct sp_sample){sl->pcs, sl->depth, &vals[2 * k], NULL};
		k++;
	}
	if (lost) {
		vals[2 * k] = (int64_t)lost;
		vals[2 * k + 1] = (int64_t)lost * PERIOD_NS;
		s[k] = (struct sp_sample){NULL, 0, &vals[2 * k], "[profd: stack table full]"};
		k++;
	}
	if ((rc = sp_maps_load(&ms, err)))
		goto out;
	maps = 1;
	static const struct sp_value_type types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
	struct sp_profile_desc d = {
	    .types = types,
	    .ntypes = 2,
	    .period_type = {"cpu", "nanoseconds"},
	    .period = PERIOD_NS,
	    .time_nanos = c->start_real_ns,
	    .duration_nanos = duration,
	    .leaf_exact = 1,
	};
	rc = sp_build_profile(&d, s, k, &ms, out, out_len, err);
out:
	if (maps)
		sp_maps_fini(&ms);
	free(s);
	free(vals);
	slots_unmap(c->slots);
	free(c);
	__atomic_store_n(&g_busy, 0, __ATOMIC_RELEASE);
	return rc;
}
