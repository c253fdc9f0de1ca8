/* A small C program for test_symbolize: a function that is not inlined, with
 * two levels of always-inlined helpers in it, compiled with -g -O2. */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) long mix(long x)
{
	return x * 2654435761u ^ (x >> 7);
}

static inline __attribute__((always_inline)) long step(long acc, long i)
{
	return acc + mix(i + acc);
}

__attribute__((noinline)) long work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s = step(s, i);
	return s;
}

__attribute__((noinline)) long other(long n)
{
	return work(n) * 3 + work(n / 2);
}

int main(int argc, char **argv)
{
	printf("%ld\n", other(argc > 1 ? atol(argv[1]) : 10));
	return 0;
}
