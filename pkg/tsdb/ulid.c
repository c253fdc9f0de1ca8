/* ulid.c: block names. A ULID is 128 bits — a 48-bit Unix time in milliseconds,
 * then 80 random bits — written as 26 characters of Crockford's base32, most
 * significant first, so that names sort by creation time. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "block_int.h"

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static void random_bytes(uint8_t *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got == n)
		return;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (got < n) {
			ssize_t r = read(fd, p + got, n - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		close(fd);
	}
	if (got == n)
		return;
	/* no entropy source at all: fall back to the clock and the pid, which still
	 * keeps names distinct between processes and calls */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t h = pd_hash_u64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
				 (uint64_t)getpid());
	for (; got < n; got++) {
		h = pd_hash_u64(h, got);
		p[got] ^= (uint8_t)h;
	}
}

void pd_ulid_new(char out[27], int64_t ms)
{
	uint8_t b[16];
	uint64_t t = ms < 0 ? 0 : (uint64_t)ms;
	if (t > 0xffffffffffffull)
		t = 0xffffffffffffull;
	for (int i = 0; i < 6; i++)
		b[i] = (uint8_t)(t >> (8 * (5 - i)));
	random_bytes(b + 6, 10);
	/* 130 bits of output for 128 of input: the first character carries 3 bits */
	for (int i = 0; i < 26; i++) {
		unsigned bit = (unsigned)(i * 5) - 2; /* first bit of the character, from the top */
		unsigned v = 0;
		for (unsigned k = 0; k < 5; k++) {
			unsigned pos = bit + k; /* wraps below 0 for the two leading zero bits */
			if (pos < 128 && (b[pos / 8] >> (7 - pos % 8) & 1))
				v |= 1u << (4 - k);
		}
		out[i] = crockford[v];
	}
	out[26] = '\0';
}

int pd_ulid_valid(const char *s)
{
	if (!s || strlen(s) != 26 || s[0] > '7')
		return 0;
	for (int i = 0; i < 26; i++)
		if (!s[i] || !memchr(crockford, s[i], 32))
			return 0;
	return 1;
}
