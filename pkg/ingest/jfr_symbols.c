/* jfr_symbols.c: the names of JVM-generated classes and of native libraries
 * extracted to temporary files carry numbers that change from run to run
 * (Foo$$Lambda$12/0x0000000800c4d000, GeneratedMethodAccessor31,
 * libzstd-jni-1.5.1-1693131189.so); Pyroscope's converter replaces them with "_"
 * so that a frame keeps its name across restarts, and so does profd. The rules,
 * applied in this order to every symbol of a recording (each as the anchored
 * pattern Pyroscope states it with, matched by hand here):
 *
 *   ^(jdk/internal/reflect/GeneratedMethodAccessor)\d+$          -> $1_
 *   ^(.+\$\$Lambda)(\$?\d*[./](0x)?[\da-f]+|\d+)$                -> $1_
 *   ^(\.?/tmp/)?libzstd-jni-\d+\.\d+\.\d+-\d+\.so( \(deleted\))?$ -> libzstd-jni-_.so
 *   ^(\.?/tmp/)?(lib)?amazonCorrettoCryptoProvider(NativeLibraries\.)?[0-9a-f]{16}
 *     (/libcrypto|/libamazonCorrettoCryptoProvider)?\.so( \(deleted\))?$
 *                                                  -> libamazonCorrettoCryptoProvider_.so
 *   ^(\.?/tmp/)?libasyncProfiler-(linux-arm64|linux-musl-x64|linux-x64|macos)-
 *     17b9a1d8156277a98ccc871afa9a8f69215f92\.so( \(deleted\))?$ -> libasyncProfiler-_.so
 *   ^(.+\$\$EnhancerBySpringCGLIB\$\$).*$                         -> $1_
 *
 * ('.' does not match a newline, as in Go's regexp.) */
#include <string.h>

#include "jfr_int.h"

struct cur {
	const char *s;
	size_t n, i;
};

static int lit(struct cur *c, const char *l)
{
	size_t n = strlen(l);
	if (c->n - c->i < n || memcmp(c->s + c->i, l, n) != 0)
		return 0;
	c->i += n;
	return 1;
}

static int isdig(char ch)
{
	return ch >= '0' && ch <= '9';
}

static int ishex(char ch)
{
	return isdig(ch) || (ch >= 'a' && ch <= 'f');
}

static size_t digits(struct cur *c)
{
	size_t k = 0;
	while (c->i < c->n && isdig(c->s[c->i])) {
		c->i++;
		k++;
	}
	return k;
}

static int at_end(const struct cur *c)
{
	return c->i == c->n;
}

/* (\.?/tmp/)? */
static void tmp_prefix(struct cur *c)
{
	if (!lit(c, "./tmp/"))
		lit(c, "/tmp/");
}

/* ( \(deleted\))?$ */
static int deleted_end(struct cur *c)
{
	lit(c, " (deleted)");
	return at_end(c);
}

/* \$?\d*[./](0x)?[\da-f]+ | \d+, the whole of t */
static int lambda_suffix(const char *t, size_t n)
{
	struct cur c = {t, n, 0};
	if (n > 0 && digits(&c) == n)
		return 1;
	c.i = 0;
	lit(&c, "$");
	digits(&c);
	if (c.i >= n || (t[c.i] != '.' && t[c.i] != '/'))
		return 0;
	c.i++;
	size_t rest = c.i;
	for (int with0x = 1; with0x >= 0; with0x--) {
		c.i = rest;
		if (with0x && !lit(&c, "0x"))
			continue;
		size_t k = c.i;
		while (c.i < n && ishex(t[c.i]))
			c.i++;
		if (c.i > k && at_end(&c))
			return 1;
	}
	return 0;
}

/* ^(.+<marker>)<suffix>$ with the greedy .+: the rightmost marker that has at
 * least one byte before it, no newline in what .+ covers, and a suffix that
 * matches. Returns the length of group 1, or 0. */
static size_t greedy_marker(const char *s, size_t n, const char *marker, int any_suffix)
{
	size_t ml = strlen(marker);
	if (n < ml + 1)
		return 0;
	/* the first and last newline, found once, so that the scan stays linear */
	const char *f = memchr(s, '\n', n);
	size_t first_nl = f ? (size_t)(f - s) : n, last_nl = n;
	for (size_t k = n; f && k-- > 0;)
		if (s[k] == '\n') {
			last_nl = k;
			break;
		}
	for (size_t i = n - ml + 1; i-- > 1;) {
		if (s[i] != marker[0] || memcmp(s + i, marker, ml) != 0)
			continue;
		if (first_nl < i) /* .+ would cover a newline */
			continue;
		const char *t = s + i + ml;
		size_t tl = n - i - ml;
		int suffix_nl = last_nl != n && last_nl >= i + ml;
		if (any_suffix ? !suffix_nl : lambda_suffix(t, tl))
			return i + ml;
	}
	return 0;
}

static int zstd(const char *s, size_t n)
{
	struct cur c = {s, n, 0};
	tmp_prefix(&c);
	if (!lit(&c, "libzstd-jni-") || !digits(&c) || !lit(&c, ".") || !digits(&c) ||
	    !lit(&c, ".") || !digits(&c) || !lit(&c, "-") || !digits(&c) || !lit(&c, ".so"))
		return 0;
	return deleted_end(&c);
}

static int corretto(const char *s, size_t n)
{
	struct cur c = {s, n, 0};
	tmp_prefix(&c);
	lit(&c, "lib");
	if (!lit(&c, "amazonCorrettoCryptoProvider"))
		return 0;
	lit(&c, "NativeLibraries.");
	for (int k = 0; k < 16; k++, c.i++)
		if (c.i >= n || !ishex(s[c.i]))
			return 0;
	if (!lit(&c, "/libcrypto"))
		lit(&c, "/libamazonCorrettoCryptoProvider");
	if (!lit(&c, ".so"))
		return 0;
	return deleted_end(&c);
}

static int async_profiler(const char *s, size_t n)
{
	struct cur c = {s, n, 0};
	tmp_prefix(&c);
	if (!lit(&c, "libasyncProfiler-"))
		return 0;
	if (!lit(&c, "linux-arm64") && !lit(&c, "linux-musl-x64") && !lit(&c, "linux-x64") &&
	    !lit(&c, "macos"))
		return 0;
	if (!lit(&c, "-17b9a1d8156277a98ccc871afa9a8f69215f92.so"))
		return 0;
	return deleted_end(&c);
}

size_t jfr_symbol_normalize(const char *s, size_t n, char *out)
{
	static const char gma[] = "jdk/internal/reflect/GeneratedMethodAccessor";
	const size_t gl = sizeof(gma) - 1;
	size_t l = n;
	if (n)
		memmove(out, s, n);
	/* GeneratedMethodAccessor */
	if (l > gl && memcmp(out, gma, gl) == 0) {
		struct cur c = {out, l, gl};
		if (digits(&c) == l - gl) {
			out[gl] = '_';
			l = gl + 1;
		}
	}
	/* both markers start with '$': most names have none */
	int dollar = l && memchr(out, '$', l) != NULL;
	size_t g = dollar ? greedy_marker(out, l, "$$Lambda", 0) : 0;
	if (g) {
		out[g] = '_';
		l = g + 1;
	}
	static const char zs[] = "libzstd-jni-_.so";
	static const char cs[] = "libamazonCorrettoCryptoProvider_.so";
	static const char as[] = "libasyncProfiler-_.so";
	if (zstd(out, l)) {
		memcpy(out, zs, sizeof(zs) - 1);
		l = sizeof(zs) - 1;
	}
	if (corretto(out, l)) {
		memcpy(out, cs, sizeof(cs) - 1);
		l = sizeof(cs) - 1;
	}
	if (async_profiler(out, l)) {
		memcpy(out, as, sizeof(as) - 1);
		l = sizeof(as) - 1;
	}
	g = dollar ? greedy_marker(out, l, "$$EnhancerBySpringCGLIB$$", 1) : 0;
	if (g) {
		out[g] = '_';
		l = g + 1;
	}
	return l;
}
