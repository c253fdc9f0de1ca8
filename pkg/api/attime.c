/* attime.c: the time forms of Pyroscope's render API (/pyroscope/render's from
 * and until): Unix time in seconds, or in milliseconds, microseconds or
 * nanoseconds by its number of digits (13, 16, 19), a date YYYYMMDD (midnight
 * UTC), and `now` with offsets such as `now-1h`, `now-1d12h`, `-30m`, whose
 * units go by their first letters as Pyroscope reads them (s seconds, m or min
 * minutes, M or mon 30 days, h, d, w, y 365 days). Underscores, commas and
 * spaces are ignored. Where Pyroscope reads anything else as now, profd refuses
 * it, naming what was wrong. docs/grafana.md describes the forms. */
#include <stdio.h>
#include <string.h>

#include "api_int.h"

#define ATTIME_MAX_LEN 64
/* The largest offset taken, in seconds (about 3,000 years). */
#define ATTIME_MAX_OFFSET_S 100000000000LL

static int fail(char *msg, size_t msz, const char *what, const char *s)
{
	snprintf(msg, msz, "%s in \"%.64s\"", what, s);
	return -1;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* 1 when the 8 digits are a calendar date after the year 1900 (*ms its midnight). */
static int date_of(const char *s, int64_t *ms)
{
	int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
	unsigned m = (unsigned)((s[4] - '0') * 10 + (s[5] - '0'));
	unsigned d = (unsigned)((s[6] - '0') * 10 + (s[7] - '0'));
	static const unsigned mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (y <= 1900 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return 0;
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (m == 2 && d == 29 && !leap)
		return 0;
	*ms = days_from_civil(y, m, d) * 86400000LL;
	return 1;
}

/* Seconds of one unit, by its first letters as Pyroscope reads them; 0: none. */
static int64_t unit_seconds(const char *u, size_t n)
{
	if (u[0] == 's')
		return 1;
	if (u[0] == 'M' || (n >= 3 && strncmp(u, "mon", 3) == 0))
		return 3600LL * 24 * 30;
	if (u[0] == 'm')
		return 60;
	if (u[0] == 'h')
		return 3600;
	if (u[0] == 'd')
		return 3600LL * 24;
	if (u[0] == 'w')
		return 3600LL * 24 * 7;
	if (u[0] == 'y')
		return 3600LL * 24 * 365;
	return 0;
}

int api_attime_parse(const char *in, int64_t now_ms, int64_t *out_ms, char *msg, size_t msz)
{
	char s[ATTIME_MAX_LEN + 1];
	size_t n = 0, inlen = strlen(in);
	if (inlen > 4 * ATTIME_MAX_LEN)
		return fail(msg, msz, "a time longer than 256 bytes", in);
	for (size_t i = 0; i < inlen; i++) {
		char c = in[i];
		if (c == '_' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		    c == '\v' || c == '\f')
			continue;
		if (n == ATTIME_MAX_LEN)
			return fail(msg, msz, "a time longer than 64 characters", in);
		s[n++] = c;
	}
	s[n] = 0;
	if (!n)
		return fail(msg, msz, "no time", in);
	size_t digits = 0;
	while (digits < n && is_digit(s[digits]))
		digits++;
	if (digits == n) {
		if (n == 8 && date_of(s, out_ms))
			return 0;
		if (n > 19)
			return fail(msg, msz, "a Unix time of more than 19 digits", in);
		uint64_t v = 0;
		for (size_t i = 0; i < n; i++)
			v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > (uint64_t)INT64_MAX)
			return fail(msg, msz, "a Unix time too large", in);
		int64_t t = (int64_t)v;
		switch (n) {
		case 13:
			*out_ms = t;
			break;
		case 16:
			*out_ms = t / 1000;
			break;
		case 19:
			*out_ms = t / 1000000;
			break;
		default:
			if (t > INT64_MAX / 1000)
				return fail(msg, msz, "a Unix time in seconds too large", in);
			*out_ms = t * 1000;
		}
		return 0;
	}
	/* <reference><offset>: the reference is now (or left out) */
	char *sign = strchr(s, '+');
	if (!sign)
		sign = strchr(s, '-');
	size_t reflen = sign ? (size_t)(sign - s) : n;
	if (!(reflen == 0 || (reflen == 3 && strncmp(s, "now", 3) == 0)))
		return fail(msg, msz,
		            "not a time: want now, now-<offset> such as now-1h, a Unix time or "
		            "YYYYMMDD",
		            in);
	int64_t secs = 0;
	if (sign) {
		int neg = *sign == '-';
		const char *p = sign + 1;
		if (!*p)
			return fail(msg, msz, "an offset without a number", in);
		while (*p) {
			int64_t num = 0;
			size_t nd = 0;
			for (; is_digit(*p); p++, nd++) {
				if (num > ATTIME_MAX_OFFSET_S)
					return fail(msg, msz, "an offset too large", in);
				num = num * 10 + (*p - '0');
			}
			if (!nd)
				return fail(msg, msz, "an offset unit without a number before it",
				            in);
			const char *u = p;
			while (is_alpha(*p))
				p++;
			if (p == u)
				return fail(
				    msg, msz,
				    *p ? "a character that is neither a digit nor a unit letter"
				       : "an offset number without a unit (s, m, h, d, w, M, y)",
				    in);
			int64_t mult = unit_seconds(u, (size_t)(p - u));
			if (!mult)
				return fail(msg, msz,
				            "an unknown offset unit (want s, m, h, d, w, M, y)",
				            in);
			if (num > ATTIME_MAX_OFFSET_S / mult ||
			    secs > ATTIME_MAX_OFFSET_S - num * mult)
				return fail(msg, msz, "an offset too large", in);
			secs += num * mult;
		}
		if (neg)
			secs = -secs;
	}
	int64_t off = secs * 1000;
	if ((off > 0 && now_ms > INT64_MAX - off) || (off < 0 && now_ms < INT64_MIN - off))
		return fail(msg, msz, "an offset too large", in);
	*out_ms = now_ms + off;
	return 0;
}
