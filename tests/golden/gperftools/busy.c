/* busy.c: a small program for tests/golden/gperftools_cpu.sh to profile with
 * gperftools' CPU profiler (linked with -lprofiler, started by CPUPROFILE): it
 * burns CPU in a few functions of distinct depths until it has used the CPU time
 * given in milliseconds as its argument. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void leaf_a(void)
{
	for (int i = 0; i < 20000; i++)
		sink += (unsigned long)i * 7;
}

__attribute__((noinline)) static void leaf_b(void)
{
	for (int i = 0; i < 40000; i++)
		sink ^= (unsigned long)i * 13;
}

__attribute__((noinline)) static void middle(int k)
{
	if (k & 1)
		leaf_a();
	else
		leaf_b();
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 500;
	clock_t end = clock() + (clock_t)(ms * (CLOCKS_PER_SEC / 1000));
	for (int k = 0; clock() < end; k++)
		middle(k);
	printf("%lu\n", sink);
	return 0;
}
