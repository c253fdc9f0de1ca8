/* pyro_time.c: the `from` and `until` parameters of /ingest, in every form
 * Pyroscope's attime.Parse takes (a rough port of Graphite's at-time syntax:
 * Unix times whose unit is told by their digit count, YYYYMMDD, `now` with
 * offsets), and RFC 3339, which clients also send. Hand-written: no library reads
 * this mix. Unlike attime, which takes any word for `now` and any unknown unit for
 * nothing, a time that cannot be read is refused. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pyro.h"

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The multiplier of an offset unit in seconds, as attime's prefixes say; 0 for
 * an unknown one (the empty unit is 0 too, as in attime). */
static int64_t unit_seconds(const char *u, size_t n, int *known)
{
	*known = 1;
	if (n == 0)
		return 0;
	if (u[0] == 's')
		return 1;
	if ((n >= 3 && memcmp(u, "mon", 3) == 0) || u[0] == 'M')
		return 3600 * 24 * 30;
	if (u[0] == 'm')
		return 60;
	if (u[0] == 'h')
		return 3600;
	if (u[0] == 'd')
		return 3600 * 24;
	if (u[0] == 'w')
		return 3600 * 24 * 7;
	if (u[0] == 'y')
		return 3600 * 24 * 365;
	*known = 0;
	return 0;
}

int pyro_time_parse(const char *in, int64_t now_ms, int64_t *ms, struct pd_err *err)
{
	char s[128];
	size_t n = 0;
	const char *orig = in;
	/* attime drops '_', ',' and spaces, after trimming */
	for (; *in; in++) {
		char c = *in;
		if (c == '_' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')
			continue;
		if (n + 1 >= sizeof(s))
			return pd_err_set(err, PD_EINVAL, "\"%.64s...\" is too long for a time",
			                  orig);
		s[n++] = c;
	}
	s[n] = '\0';
	if (n == 0)
		return pd_err_set(err, PD_EINVAL, "empty time");
	size_t digits = strspn(s, "0123456789");
	if (digits == n) {
		if (n == 8) {
			unsigned y = 0, m = 0, d = 0;
			sscanf(s, "%4u%2u%2u", &y, &m, &d);
			static const unsigned mdays[] = {31, 28, 31, 30, 31, 30,
			                                 31, 31, 30, 31, 30, 31};
			if (y > 1900 && m >= 1 && m <= 12 && d >= 1 &&
			    d <= mdays[m - 1] + (m == 2 && leap(y))) {
				*ms = days_from_civil(y, m, d) * 86400000;
				return 0;
			}
		}
		if (n > 19)
			return pd_err_set(err, PD_EINVAL,
			                  "\"%s\" has %zu digits, too many for a Unix time", s, n);
		int64_t v = 0;
		for (size_t i = 0; i < n; i++) {
			if (v > (INT64_MAX - (s[i] - '0')) / 10)
				return pd_err_set(err, PD_EINVAL,
				                  "\"%s\" is too large for a Unix time", s);
			v = v * 10 + (s[i] - '0');
		}
		if (n == 13)
			*ms = v;
		else if (n == 16)
			*ms = v / 1000;
		else if (n == 19)
			*ms = v / 1000000;
		else if (v > INT64_MAX / 1000)
			return pd_err_set(err, PD_EINVAL, "\"%s\" is too large for Unix seconds",
			                  s);
		else
			*ms = v * 1000;
		return 0;
	}
	/* RFC 3339: four digits and a dash, or a 'T' after a date */
	if (digits == 4 && s[4] == '-') {
		struct pd_err e2 = {0};
		if (pd_time_parse(s, ms, &e2) == 0)
			return 0;
		return pd_err_set(err, PD_EINVAL,
		                  "\"%s\" is not an RFC 3339 time (e.g. 2026-11-22T18:48:03Z)", s);
	}
	/* a reference (`now` or nothing) and an offset after the first '+', or else
	 * the first '-' */
	char *off = strchr(s, '+');
	if (!off)
		off = strchr(s, '-');
	size_t rl = off ? (size_t)(off - s) : n;
	if (!(rl == 0 || (rl == 3 && strncmp(s, "now", 3) == 0)))
		return pd_err_set(err, PD_EINVAL,
		                  "\"%s\" is not a time: give Unix seconds (or ms, us, ns), "
		                  "YYYYMMDD, RFC 3339, or now with an offset such as now-1h",
		                  s);
	int64_t total = 0;
	if (off) {
		int sign = *off == '-' ? -1 : 1;
		const char *p = off + 1;
		while (*p) {
			int64_t num = 0;
			size_t nd = 0;
			while (p[nd] >= '0' && p[nd] <= '9') {
				if (num > 1000000000000LL)
					return pd_err_set(err, PD_EINVAL,
					                  "the offset in \"%s\" is too large", s);
				num = num * 10 + (p[nd] - '0');
				nd++;
			}
			p += nd;
			size_t ul = 0;
			while (p[ul] && !(p[ul] >= '0' && p[ul] <= '9'))
				ul++;
			int known;
			int64_t mul = unit_seconds(p, ul, &known);
			if (!known)
				return pd_err_set(
				    err, PD_EINVAL,
				    "unknown unit \"%.*s\" in \"%s\" (s, min, h, d, w, "
				    "mon, y)",
				    (int)ul, p, s);
			if (nd == 0)
				return pd_err_set(
				    err, PD_EINVAL,
				    "the offset in \"%s\" has no number before its unit", s);
			p += ul;
			if (mul && num > 100LL * 366 * 86400 / mul)
				return pd_err_set(err, PD_EINVAL,
				                  "the offset in \"%s\" is more than 100 years", s);
			total += sign * num * mul;
			if (total > 100LL * 366 * 86400 || total < -100LL * 366 * 86400)
				return pd_err_set(err, PD_EINVAL,
				                  "the offset in \"%s\" is more than 100 years", s);
		}
	}
	*ms = now_ms + total * 1000;
	return 0;
}
