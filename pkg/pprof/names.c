/* names.c: the names reports show for a profile's functions, made as go tool pprof
 * makes them when it reads a profile (its symbolizer's demangling step, which runs
 * on every profile, and its -symbolize=demangle=... modes): C++ (Itanium ABI) and
 * Rust (legacy and v0) system names demangled with libiberty's cplus_demangle and
 * simplified (C++ without parameters and template arguments by default, Rust
 * whole); names already demangled by a tool simplified the same way when they look
 * like C++; a function with no name named by its system name. The profile itself
 * is not changed: reports ask for a function's name through pd_pprof_report_name. */
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_int.h"

/* go tool pprof's -symbolize words for each mode, in enum order */
static const char *const mode_names[] = {"demangle=default", "demangle=templates", "demangle=full",
                                         "demangle=none", "none"};

const char *pd_pprof_names_string(enum pd_pprof_names mode)
{
	return (unsigned)mode < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[mode] : "?";
}

int pd_pprof_names_parse(const char *spec, enum pd_pprof_names *out, struct pd_err *err)
{
	*out = PD_PPROF_NAMES_DEFAULT;
	if (!spec)
		return 0;
	size_t n = strlen(spec);
	if (n > 64)
		return pd_err_set(err, PD_EINVAL, "symbolize: %zu bytes is not an option", n);
	/* pprof's colon-separated list: the last demangle= wins, but none anywhere
	 * means no demangling at all, as pprof stops there */
	const char *s = spec;
	int none = 0;
	while (*s) {
		const char *e = strchr(s, ':');
		size_t l = e ? (size_t)(e - s) : strlen(s);
#define IS(w) (l == sizeof(w) - 1 && memcmp(s, w, l) == 0)
		if (l == 0 || IS("true") || IS("1") || IS("demangle=default")) {
			if (l)
				*out = PD_PPROF_NAMES_DEFAULT;
		} else if (IS("none") || IS("no") || IS("false") || IS("0")) {
			none = 1;
		} else if (IS("demangle=templates")) {
			*out = PD_PPROF_NAMES_TEMPLATES;
		} else if (IS("demangle=full")) {
			*out = PD_PPROF_NAMES_FULL;
		} else if (IS("demangle=none")) {
			*out = PD_PPROF_NAMES_DEMANGLE_NONE;
		} else {
			return pd_err_set(err, PD_EINVAL,
			                  "symbolize: unknown option \"%.*s\" (expected none, or "
			                  "demangle=default, templates, full or none)",
			                  (int)l, s);
		}
#undef IS
		s += l;
		if (*s == ':')
			s++;
	}
	if (none)
		*out = PD_PPROF_NAMES_RAW;
	return 0;
}

void pd_pprof_set_names(struct pd_pprof_profile *p, enum pd_pprof_names mode)
{
	if (p)
		p->names = (uint8_t)mode;
}

enum pd_pprof_names pd_pprof_get_names(const struct pd_pprof_profile *p)
{
	return (enum pd_pprof_names)p->names;
}

/* Drops each outermost <...> group, except the angle brackets of operator<,
 * operator<<, operator<= and the like ("operator>" keeps its own). */
static void drop_templates(char *s)
{
	char *w = s;
	int depth = 0;
	for (char *r = s; *r; r++) {
		/* what precedes in the output (written over s, behind r) */
		int op = depth == 0 && w - s >= 8 && strncmp(w - 8, "operator", 8) == 0;
		if (op && *r == '<') {
			*w++ = *r;
			while (r[1] == '<' || r[1] == '=')
				*w++ = *++r;
			continue;
		}
		if (op && *r == '>') {
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

/* Cuts libiberty's " [clone .isra.0]" suffixes (pprof's full mode has no clones). */
static void drop_clones(char *s)
{
	char *c = strstr(s, " [clone ");
	if (c)
		*c = 0;
}

/* A legacy Rust symbol: _ZN...17h<16 hex digits>E, maybe followed by ".suffix". */
static int rust_legacy(const char *name)
{
	size_t n = strlen(name);
	const char *dot = strstr(name, "E.");
	if (dot)
		n = (size_t)(dot - name) + 1;
	if (strncmp(name, "_ZN", 3) != 0 || n < 3 + 21 || name[n - 1] != 'E')
		return 0;
	const char *h = name + n - 20;
	if (strncmp(h, "17h", 3) != 0)
		return 0;
	for (int i = 3; i < 19; i++)
		if (!strchr("0123456789abcdef", h[i]))
			return 0;
	return 1;
}

char *pd_pprof_demangle(const char *name, enum pd_pprof_names mode)
{
	if (mode == PD_PPROF_NAMES_RAW || !name ||
	    !(strncmp(name, "_Z", 2) == 0 || strncmp(name, "_R", 2) == 0) ||
	    strnlen(name, PD_PPROF_MAX_DEMANGLE + 1) > PD_PPROF_MAX_DEMANGLE)
		return NULL;
	int params = mode == PD_PPROF_NAMES_FULL || mode == PD_PPROF_NAMES_DEMANGLE_NONE;
	/* without DMGL_PARAMS: no parameters, return type or clone suffixes */
	int opts = params ? DMGL_PARAMS | DMGL_ANSI : 0;
	char *d = cplus_demangle(name, opts | DMGL_AUTO);
	if (!d)
		d = cplus_demangle(name, opts | DMGL_RUST);
	if (!d)
		return NULL;
	/* Rust names are shown whole, in every mode */
	if (strncmp(name, "_R", 2) == 0 || rust_legacy(name))
		return d;
	if (mode == PD_PPROF_NAMES_FULL)
		drop_clones(d);
	if (mode == PD_PPROF_NAMES_DEFAULT)
		drop_templates(d);
	return d;
}

/* pprof's test for a name that a tool demangled already (C++, not Java's
 * "Class.<init>" nor Go's "pkg.(*T[...]).M"). */
static int looks_demangled_cpp(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (s[i] == '.' && s[i + 1] == '<')
			return 0;
	for (size_t i = 0; i + 2 < n; i++)
		if (s[i] == ']' && s[i + 1] == ')' && s[i + 2] == '.')
			return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '<' || s[i] == '>' || s[i] == '[' || s[i] == ']')
			return 1;
		if (s[i] == ':' && i + 1 < n && s[i + 1] == ':')
			return 1;
	}
	return 0;
}

/* Removes each outermost open..close group of s in place (nested ones with it),
 * as pprof's removeMatching: an unmatched close leaves the rest as it is. */
static size_t remove_matching(char *s, size_t n, char open, char close)
{
	size_t w = 0, first = 0;
	int depth = 0;
	for (size_t r = 0; r < n; r++) {
		if (s[r] == open) {
			if (++depth == 1)
				first = w;
		} else if (s[r] == close) {
			if (--depth < 0) {
				/* pprof stops here: what it removed so far stays removed */
				memmove(s + w, s + r, n - r);
				return w + (n - r);
			}
			if (depth == 0) {
				w = first;
				continue;
			}
		}
		s[w++] = s[r];
	}
	return w;
}

int pd_pprof_name_as_is(const char *name, size_t nlen, const char *sys, size_t slen,
                        enum pd_pprof_names mode)
{
	if (mode == PD_PPROF_NAMES_RAW || (nlen == 0 && slen == 0))
		return 1;
	int force = mode != PD_PPROF_NAMES_DEFAULT;
	if (nlen && !(force && slen) && !(nlen == slen && memcmp(name, sys, nlen) == 0))
		return 1;
	if (nlen != slen || (slen >= 2 && sys[0] == '_' && (sys[1] == 'Z' || sys[1] == 'R')))
		return 0;
	/* name and system name alike, no symbol: only the heuristic may change it */
	return !((mode == PD_PPROF_NAMES_DEFAULT || mode == PD_PPROF_NAMES_TEMPLATES) &&
	         looks_demangled_cpp(sys, slen));
}

char *pd_pprof_report_name(const char *name, size_t nlen, const char *sys, size_t slen,
                           enum pd_pprof_names mode, size_t *out_len)
{
	const char *src = name;
	size_t len = nlen;
	char *d = NULL;
	if (mode == PD_PPROF_NAMES_RAW)
		goto copy;
	/* the modes other than the default start again from the system name */
	int force = mode != PD_PPROF_NAMES_DEFAULT;
	if (nlen && !(force && slen) && !(nlen == slen && memcmp(name, sys, nlen) == 0))
		goto copy; /* demangled already */
	src = sys;
	len = slen;
	/* libiberty reads C strings: a name with a NUL in it is no mangled name */
	if (slen && !memchr(sys, 0, slen) && (d = pd_pprof_demangle(sys, mode))) {
		*out_len = strlen(d);
		return d;
	}
copy:
	d = malloc(len + 1);
	if (!d)
		return NULL;
	if (len)
		memcpy(d, src, len);
	d[len] = 0;
	if (src == sys && len && looks_demangled_cpp(d, len)) {
		if (mode == PD_PPROF_NAMES_DEFAULT || mode == PD_PPROF_NAMES_TEMPLATES)
			len = remove_matching(d, len, '(', ')');
		if (mode == PD_PPROF_NAMES_DEFAULT)
			len = remove_matching(d, len, '<', '>');
		d[len] = 0;
	}
	*out_len = len;
	return d;
}
