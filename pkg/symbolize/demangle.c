/* demangle.c: C++ (Itanium ABI) and Rust (legacy and v0) names demangled with
 * libiberty's cplus_demangle, then simplified as go tool pprof shows them by
 * default: C++ without parameters and without template arguments, Rust (whose
 * names have no parameters) with its generic arguments. */
#include "symbolize_int.h"

#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

/* Drops each outermost <...> group, except the angle brackets of operator<,
 * operator<<, operator<= and the like, and "{closure}"-style braces stay. */
static void drop_templates(char *s)
{
	char *w = s;
	int depth = 0;
	for (char *r = s; *r; r++) {
		if (depth == 0 && *r == '<' && r - s >= 8 && strncmp(r - 8, "operator", 8) == 0) {
			*w++ = *r;
			while (r[1] == '<' || r[1] == '=')
				*w++ = *++r;
			continue;
		}
		if (depth == 0 && *r == '>' && r - s >= 8 && strncmp(r - 8, "operator", 8) == 0) {
			*w++ = *r;
			continue;
		}
		if (*r == '<') {
			depth++;
			continue;
		}
		if (*r == '>' && depth > 0) {
			depth--;
			continue;
		}
		if (depth == 0)
			*w++ = *r;
	}
	*w = 0;
}

/* A legacy Rust symbol: _ZN...17h<16 hex digits>E. */
static int rust_legacy(const char *name)
{
	size_t n = strlen(name);
	if (strncmp(name, "_ZN", 3) != 0 || n < 3 + 20 || name[n - 1] != 'E')
		return 0;
	const char *h = name + n - 20;
	if (strncmp(h, "17h", 3) != 0)
		return 0;
	for (int i = 3; i < 19; i++)
		if (!strchr("0123456789abcdef", h[i]))
			return 0;
	return 1;
}

char *pd_symbolize_demangle(const char *name)
{
	if (!name || !(strncmp(name, "_Z", 2) == 0 || strncmp(name, "_R", 2) == 0))
		return NULL;
	/* no DMGL_PARAMS: without the function's parameters */
	char *d = cplus_demangle(name, DMGL_AUTO);
	if (!d)
		d = cplus_demangle(name, DMGL_RUST);
	if (!d)
		return NULL;
	/* go tool pprof shows Rust names whole */
	if (strncmp(name, "_R", 2) != 0 && !rust_legacy(name))
		drop_templates(d);
	return d;
}
