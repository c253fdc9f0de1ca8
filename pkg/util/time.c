/* time.c: timestamps as Prometheus's HTTP API takes them: Unix seconds, possibly
 * fractional, or RFC 3339 with an optional fraction and a Z or ±hh:mm offset;
 * returned as Unix milliseconds. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profd/util.h"

static int digits(const char *s, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static int parse_rfc3339(const char *s, int64_t *ms)
{
	int Y, M, D, h, m, sec;
	if (strlen(s) < 20 || digits(s, 4, &Y) || s[4] != '-' || digits(s + 5, 2, &M) || s[7] != '-' ||
	    digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &m) || s[16] != ':' ||
	    digits(s + 17, 2, &sec))
		return -1;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -1;
	const char *p = s + 19;
	int64_t frac_ms = 0;
	if (*p == '.') {
		int nd = 0;
		p++;
		while (isdigit((unsigned char)*p)) {
			if (nd < 3)
				frac_ms = frac_ms * 10 + (*p - '0');
			nd++;
			p++;
		}
		if (!nd)
			return -1;
		for (; nd < 3; nd++)
			frac_ms *= 10;
	}
	int64_t off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;
		if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
			return -1;
		off = (int64_t)(oh * 60 + om) * 60 * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	struct tm tm = {0};
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	*ms = ((int64_t)t - off) * 1000 + frac_ms;
	return 0;
}

int pd_time_parse(const char *s, int64_t *ms, struct pd_err *err)
{
	char *end;
	if (!s || !*s)
		return pd_err_set(err, PD_EINVAL, "cannot parse \"\" to a valid timestamp");
	errno = 0;
	double f = strtod(s, &end);
	if (*end == '\0' && errno == 0 && !isspace((unsigned char)s[0]) && isfinite(f)) {
		double v = round(f * 1000);
		if (v > 9.2e18 || v < -9.2e18)
			return pd_err_set(err, PD_EINVAL, "cannot parse \"%s\" to a valid timestamp", s);
		*ms = (int64_t)v;
		return 0;
	}
	if (parse_rfc3339(s, ms) == 0)
		return 0;
	return pd_err_set(err, PD_EINVAL, "cannot parse \"%s\" to a valid timestamp", s);
}

void pd_time_format(int64_t ms, char *out, size_t size)
{
	time_t secs = (time_t)(ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
	int64_t frac = ms - (int64_t)secs * 1000;
	struct tm tm;
	gmtime_r(&secs, &tm);
	char base[40];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac)
		snprintf(out, size, "%s.%03dZ", base, (int)frac);
	else
		snprintf(out, size, "%sZ", base);
}
