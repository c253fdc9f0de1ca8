/* asan_busy.c: a program that spends its time in AddressSanitizer's allocator and
 * interceptors (libasan, C++ with mangled symbols), for tests/integration/asan_names.sh.
 * Built with -fsanitize=address and gperftools' -lprofiler; runs for argv[1] ms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 500;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long sum = 0;
	while (elapsed_ms(&t0) < ms) {
		for (int i = 0; i < 1000; i++) {
			size_t n = 64 + (size_t)(i % 512);
			char *p = malloc(n);
			if (!p)
				return 1;
			memset(p, i, n);
			sum += (unsigned char)p[3];
			free(p);
		}
	}
	printf("%lu\n", sum);
	return 0;
}
