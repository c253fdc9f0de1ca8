/* hot.c: the program tests/integration/native_e2e.sh profiles with gperftools' CPU
 * profiler (linked with -lprofiler, started by CPUPROFILE): a hot loop in a
 * function of its own that calls an inlined helper, and a second, cooler
 * function, run until the CPU time given in milliseconds as the argument is used. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15UL;
	return x ^ (x >> 29);
}

__attribute__((noinline)) static void hot_loop(void)
{
	unsigned long acc = sink;
	for (int i = 0; i < 200000; i++)
		acc = mix(acc + (unsigned long)i);
	sink = acc;
}

__attribute__((noinline)) static void cool_loop(void)
{
	for (int i = 0; i < 50000; i++)
		sink += (unsigned long)i * 7;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 500;
	clock_t end = clock() + (clock_t)(ms * (CLOCKS_PER_SEC / 1000));
	while (clock() < end) {
		hot_loop();
		cool_loop();
	}
	printf("%lu\n", sink);
	return 0;
}
