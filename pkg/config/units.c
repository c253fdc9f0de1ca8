/* units.c: the value syntaxes of a Prometheus configuration: durations
 * (model.ParseDuration and Duration.String), byte sizes (alecthomas/units
 * Base2Bytes, which body_size_limit uses), `$VAR` expansion of external labels
 * (Go's os.Expand), and the default `seconds` of CPU and delta profiles. */
#include "config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profd/labels.h"

/* s as Go's %q into out (truncated to size). */
static const char *goquote(char *out, size_t size, const char *s)
{
	struct pd_buf b;
	pd_buf_init(&b, size - 1);
	if (pd_labels_quote(&b, s, strlen(s)) == 0) {
		memcpy(out, b.data, b.len);
		out[b.len] = '\0';
	} else {
		snprintf(out, size, "\"%s\"", s);
	}
	pd_buf_fini(&b);
	return out;
}

static int isdigit_(char c)
{
	return c >= '0' && c <= '9';
}

/* ---- durations ------------------------------------------------------------ */

static const struct {
	const char *name;
	int pos;
	uint64_t mult; /* nanoseconds */
} dur_units[] = {
    {"ms", 7, 1000000ull},
    {"s", 6, 1000000000ull},
    {"m", 5, 60ull * 1000000000ull},
    {"h", 4, 3600ull * 1000000000ull},
    {"d", 3, 86400ull * 1000000000ull},
    {"w", 2, 7ull * 86400ull * 1000000000ull},
    {"y", 1, 365ull * 86400ull * 1000000000ull},
};

int pd_config_parse_duration(const char *s, int64_t *ms, struct pd_err *err)
{
	char q[256], qu[128];
	const char *orig = s;
	uint64_t dur = 0;
	int last = 0;

	*ms = 0;
	if (strcmp(s, "0") == 0)
		return 0;
	if (!*s)
		return pd_err_set(err, PD_EINVAL, "empty duration string");
	while (*s) {
		if (!isdigit_(*s))
			goto invalid;
		uint64_t v = 0;
		size_t i = 0;
		for (; isdigit_(s[i]); i++) {
			unsigned d = (unsigned)(s[i] - '0');
			if (v > (UINT64_MAX - d) / 10)
				goto invalid; /* strconv.ParseUint fails */
			v = v * 10 + d;
		}
		s += i;
		for (i = 0; s[i] && !isdigit_(s[i]); i++)
			;
		if (i == 0)
			goto invalid;
		int found = -1;
		for (size_t u = 0; u < sizeof(dur_units) / sizeof(dur_units[0]); u++)
			if (strlen(dur_units[u].name) == i && memcmp(dur_units[u].name, s, i) == 0)
				found = (int)u;
		if (found < 0) {
			char unit[64];
			snprintf(unit, sizeof(unit), "%.*s", (int)(i < 63 ? i : 63), s);
			return pd_err_set(err, PD_EINVAL, "unknown unit %s in duration %s",
			                  goquote(qu, sizeof(qu), unit),
			                  goquote(q, sizeof(q), orig));
		}
		s += i;
		if (dur_units[found].pos <= last)
			goto invalid; /* units must go from biggest to smallest, once each */
		last = dur_units[found].pos;
		if (v > ((uint64_t)1 << 63) / dur_units[found].mult)
			return pd_err_set(err, PD_EINVAL, "duration out of range");
		dur += v * dur_units[found].mult;
		if (dur > (uint64_t)INT64_MAX)
			return pd_err_set(err, PD_EINVAL, "duration out of range");
	}
	*ms = (int64_t)(dur / 1000000ull);
	return 0;
invalid:
	return pd_err_set(err, PD_EINVAL, "not a valid duration string: %s",
	                  goquote(q, sizeof(q), orig));
}

void pd_config_format_duration(int64_t ms, char *out, size_t size)
{
	static const struct {
		const char *unit;
		int64_t mult;
		int exact;
	} f[] = {
	    {"y", 1000ll * 60 * 60 * 24 * 365, 1},
	    {"w", 1000ll * 60 * 60 * 24 * 7, 1},
	    {"d", 1000ll * 60 * 60 * 24, 0},
	    {"h", 1000ll * 60 * 60, 0},
	    {"m", 1000ll * 60, 0},
	    {"s", 1000, 0},
	    {"ms", 1, 0},
	};
	size_t len = 0;
	if (!size)
		return;
	out[0] = '\0';
	if (ms == 0) {
		snprintf(out, size, "0s");
		return;
	}
	if (ms < 0) {
		len += (size_t)snprintf(out, size, "-");
		ms = ms == INT64_MIN ? INT64_MAX : -ms;
	}
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i].exact && ms % f[i].mult != 0)
			continue;
		int64_t v = ms / f[i].mult;
		if (v > 0 && len < size) {
			len += (size_t)snprintf(out + len, size - len, "%lld%s", (long long)v,
			                        f[i].unit);
			ms -= v * f[i].mult;
		}
	}
}

/* ---- sizes ---------------------------------------------------------------- */

/* alecthomas/units: MakeUnitMap("iB", "B", 1024) and MakeUnitMap("B", "B", 1024). */
static const char *const size_units_ib[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", NULL};
static const char *const size_units_b[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB", NULL};

/* leadingInt of alecthomas/units: consumes [0-9]*, fails past (2^63-10)/10.
 * Returns digits consumed, or -1 on overflow. */
static int leading_int(const char *s, int64_t *x, int *ndigits)
{
	int64_t v = 0;
	int i = 0;
	for (; isdigit_(s[i]); i++) {
		if (v >= (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*x = v;
	*ndigits = i;
	return i;
}

static const __int128 POW10_18 = (__int128)1000000000000000000ll;

/* ParseUnit over one unit map. The sum is kept exactly, in units of 10^-18 bytes,
 * and truncated toward zero at the end (fraction digits past the 18th are
 * dropped). */
static int parse_unit(const char *orig, const char *const *units, int64_t *out, struct pd_err *err)
{
	const char *s = orig;
	int neg = 0;
	__int128 total = 0;
	const __int128 max = ((__int128)1 << 63) * POW10_18;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0) {
		*out = 0;
		return 0;
	}
	if (!*s)
		return pd_err_set(err, PD_EINVAL, "units: invalid %s", orig);
	while (*s) {
		int64_t ip = 0, fp = 0;
		int nd = 0, fd = 0;
		if (!(*s == '.' || isdigit_(*s)))
			return pd_err_set(err, PD_EINVAL, "units: invalid %s", orig);
		if (leading_int(s, &ip, &nd) < 0)
			return pd_err_set(err, PD_EINVAL, "units: invalid %s", orig);
		s += nd;
		int pre = nd > 0, post = 0;
		if (*s == '.') {
			s++;
			if (leading_int(s, &fp, &fd) < 0)
				return pd_err_set(err, PD_EINVAL, "units: invalid %s", orig);
			s += fd;
			post = fd > 0;
		}
		if (!pre && !post)
			return pd_err_set(err, PD_EINVAL, "units: invalid %s", orig);
		size_t ul = 0;
		while (s[ul] && s[ul] != '.' && !isdigit_(s[ul]))
			ul++;
		int64_t mult = 0;
		for (size_t u = 0; units[u]; u++)
			if (strlen(units[u]) == ul && memcmp(units[u], s, ul) == 0)
				mult = (int64_t)1 << (10 * u);
		if (!mult)
			return pd_err_set(err, PD_EINVAL, "units: unknown unit %.*s in %s", (int)ul,
			                  s, orig);
		s += ul;
		/* the fraction in units of 10^-18, at most 18 digits kept */
		__int128 frac = fp;
		for (int k = fd; k > 18; k--)
			frac /= 10;
		for (int k = fd; k < 18; k++)
			frac *= 10;
		if ((__int128)ip * mult > ((__int128)1 << 63))
			return pd_err_set(err, PD_EINVAL, "units: overflow parsing unit");
		total += ((__int128)ip * mult) * POW10_18 + frac * mult;
		if (total > max)
			return pd_err_set(err, PD_EINVAL, "units: overflow parsing unit");
	}
	__int128 v = total / POW10_18;
	if ((!neg && v > INT64_MAX) || (neg && v > ((__int128)1 << 63)))
		return pd_err_set(err, PD_EINVAL, "units: overflow parsing unit");
	*out = neg ? (int64_t)(-v) : (int64_t)v;
	return 0;
}

int pd_config_parse_size(const char *s, int64_t *bytes, struct pd_err *err)
{
	*bytes = 0;
	if (parse_unit(s, size_units_ib, bytes, NULL) == 0)
		return 0;
	return parse_unit(s, size_units_b, bytes, err);
}

void pd_config_format_size(int64_t n, char *out, size_t size)
{
	static const char *const si[] = {"", "K", "M", "G", "T", "P", "E"};
	char parts[7][32];
	int used[7] = {0};
	if (!size)
		return;
	out[0] = '\0';
	for (int i = 0; i < 7; i++) {
		if (n % 1024 != 0 || (i == 0 && n == 0)) {
			snprintf(parts[6 - i], sizeof(parts[0]), "%lld%s%s", (long long)(n % 1024),
			         si[i], i == 0 ? "B" : "iB");
			used[6 - i] = 1;
		}
		n /= 1024;
		if (n == 0)
			break;
	}
	size_t len = 0;
	for (int i = 0; i < 7 && len < size; i++)
		if (used[i])
			len += (size_t)snprintf(out + len, size - len, "%s", parts[i]);
}

/* ---- environment expansion ------------------------------------------------ */

static int shell_special(char c)
{
	return strchr("*#$@!?-0123456789", c) != NULL && c != '\0';
}

static int alnum_(char c)
{
	return c == '_' || isdigit_(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Go's getShellName: the name after a '$' and how many bytes it took. name_len 0
 * with w > 0 is bad syntax (eaten); both 0: a lone '$'. */
static void shell_name(const char *s, size_t *name_off, size_t *name_len, size_t *w)
{
	*name_off = 0;
	*name_len = 0;
	*w = 0;
	if (s[0] == '{') {
		if (s[1] && shell_special(s[1]) && s[2] == '}') {
			*name_off = 1;
			*name_len = 1;
			*w = 3;
			return;
		}
		for (size_t i = 1; s[i]; i++) {
			if (s[i] == '}') {
				if (i == 1) {
					*w = 2; /* "${}" */
					return;
				}
				*name_off = 1;
				*name_len = i - 1;
				*w = i + 1;
				return;
			}
		}
		*w = 1; /* "${" without "}" */
		return;
	}
	if (shell_special(s[0])) {
		*name_len = 1;
		*w = 1;
		return;
	}
	size_t i = 0;
	while (alnum_(s[i]))
		i++;
	*name_len = i;
	*w = i;
}

char *cfg_expand_env(struct cfg_ctx *c, const char *s)
{
	struct pd_buf b;
	char *out = NULL;
	size_t i = 0;
	int rc = 0;

	if (!strchr(s, '$'))
		return cy_strdup(c, s);
	pd_buf_init(&b, 0);
	for (size_t j = 0; s[j] && rc == 0; j++) {
		if (s[j] != '$' || !s[j + 1])
			continue;
		rc = pd_buf_append(&b, s + i, j - i);
		size_t off, nl, w;
		shell_name(s + j + 1, &off, &nl, &w);
		if (nl == 0 && w > 0) {
			/* bad syntax: eaten */
		} else if (nl == 0) {
			if (rc == 0)
				rc = pd_buf_append(&b, "$", 1);
		} else {
			char name[256];
			snprintf(name, sizeof(name), "%.*s", (int)(nl < 255 ? nl : 255),
			         s + j + 1 + off);
			const char *v = strcmp(name, "$") == 0 ? "$" : getenv(name);
			if (v && rc == 0)
				rc = pd_buf_append(&b, v, strlen(v));
		}
		j += w;
		i = j + 1;
	}
	if (rc == 0)
		rc = pd_buf_append(&b, s + i, strlen(s + i));
	if (rc == 0)
		out = pd_arena_strndup(c->a, (const char *)b.data, b.len);
	pd_buf_fini(&b);
	if (!out)
		cy_nomem(c);
	return out;
}

/* ---- profiles ------------------------------------------------------------- */

int64_t pd_config_default_profile_seconds(int64_t scrape_timeout_ms)
{
	int64_t s = scrape_timeout_ms / 1000 - 1;
	if (s > PD_CONFIG_MAX_DEFAULT_SECONDS)
		s = PD_CONFIG_MAX_DEFAULT_SECONDS;
	if (s < 1)
		s = 1;
	return s;
}
