/* log.c: the process's log: one line per event on stderr, in logfmt
 * (`ts=... level=warn component=scrape msg="..." key=value`) or JSON, filtered by
 * level. The message is fixed text; values go into key=value fields, each
 * formatted from its own printf conversion; the password of a URL in a value
 * is written as xxxxx. Safe to call from any thread. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "profd/util.h"

static int g_level = PD_LOG_INFO;
static int g_json;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *const names[] = {"error", "warn", "info", "debug"};

int pd_log_setup(const char *level, const char *format, struct pd_err *err)
{
	int l = -1;
	for (int i = 0; i < 4; i++)
		if (level && strcmp(level, names[i]) == 0)
			l = i;
	if (l < 0)
		return pd_err_set(err, PD_EINVAL,
				  "--log.level: unrecognized log level \"%s\" (one of debug, info, warn, error)",
				  level ? level : "");
	if (!format || (strcmp(format, "logfmt") != 0 && strcmp(format, "json") != 0))
		return pd_err_set(err, PD_EINVAL,
				  "--log.format: unrecognized log format \"%s\" (logfmt or json)",
				  format ? format : "");
	g_level = l;
	g_json = strcmp(format, "json") == 0;
	return 0;
}

int pd_log_enabled(int level)
{
	return level <= g_level;
}

/* Writes s quoted for logfmt or JSON. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* A logfmt value is quoted when it is empty or holds a space, '=', '"' or a
 * control byte, as go-kit's logfmt does. */
static void put_logfmt_value(FILE *f, const char *s)
{
	int q = !*s;
	for (const unsigned char *p = (const unsigned char *)s; *p && !q; p++)
		q = *p <= ' ' || *p == '=' || *p == '"' || *p == '\\' || *p == 0x7f;
	if (q)
		put_quoted(f, s);
	else
		fputs(s, f);
}

/* Appends to out (at *n of size) one printf conversion spec (spec[0..len), '%'
 * included), taking its argument(s) from *ap by the conversion's type. */
static void format_one(char *out, size_t *n, size_t size, const char *spec, size_t len, va_list *ap)
{
	char f[32];
	if (len >= sizeof(f))
		len = sizeof(f) - 1;
	memcpy(f, spec, len);
	f[len] = '\0';
	int stars = 0;
	for (size_t i = 0; i < len; i++)
		stars += f[i] == '*';
	int sv[2] = {0, 0};
	for (int i = 0; i < stars && i < 2; i++)
		sv[i] = va_arg(*ap, int);
	char conv = f[len - 1];
	/* the length modifier: between the flags/width/precision and the conversion */
	const char *m = f + 1;
	while (*m && strchr("-+ #0123456789.*", *m))
		m++;
	size_t ml = (size_t)(f + len - 1 - m);
	char tmp[1024];
	int r = 0;
#define FMT1(T)                                                                                    \
	do {                                                                                       \
		T v = va_arg(*ap, T);                                                              \
		r = stars == 2   ? snprintf(tmp, sizeof(tmp), f, sv[0], sv[1], v)                  \
		    : stars == 1 ? snprintf(tmp, sizeof(tmp), f, sv[0], v)                         \
		                 : snprintf(tmp, sizeof(tmp), f, v);                               \
	} while (0)
	if (strchr("di", conv)) {
		if (ml == 2 && m[0] == 'l')
			FMT1(long long);
		else if (ml == 1 && m[0] == 'l')
			FMT1(long);
		else if (ml == 1 && (m[0] == 'z' || m[0] == 't'))
			FMT1(ssize_t);
		else if (ml == 1 && m[0] == 'j')
			FMT1(intmax_t);
		else
			FMT1(int);
	} else if (strchr("uxXoc", conv)) {
		if (ml == 2 && m[0] == 'l')
			FMT1(unsigned long long);
		else if (ml == 1 && m[0] == 'l')
			FMT1(unsigned long);
		else if (ml == 1 && (m[0] == 'z' || m[0] == 't'))
			FMT1(size_t);
		else if (ml == 1 && m[0] == 'j')
			FMT1(uintmax_t);
		else
			FMT1(unsigned);
	} else if (strchr("feEgGaAF", conv)) {
		if (ml == 1 && m[0] == 'L')
			FMT1(long double);
		else
			FMT1(double);
	} else if (conv == 's') {
		FMT1(const char *);
	} else if (conv == 'p') {
		FMT1(void *);
	} else {
		r = snprintf(tmp, sizeof(tmp), "%%!%c", conv); /* not one this writer knows */
	}
#undef FMT1
	if (r < 0 || *n + 1 >= size)
		return;
	size_t k = (size_t)r < sizeof(tmp) ? (size_t)r : sizeof(tmp) - 1;
	if (*n + k >= size)
		k = size - 1 - *n;
	memcpy(out + *n, tmp, k);
	*n += k;
	out[*n] = '\0';
}

/* The length of the conversion spec at s ('%' first), its conversion included. */
static size_t spec_len(const char *s)
{
	size_t i = 1;
	while (s[i] && strchr("-+ #0123456789.*hljztL", s[i]))
		i++;
	return s[i] ? i + 1 : i;
}

void pd_log_write(int level, const char *component, const char *msg, const char *fields, ...)
{
	char ts[40];
	/* the fields, formatted: "key\0value\0key\0value\0" */
	char kv[4096];
	size_t n = 0, nkv = 0;
	va_list ap;
	va_start(ap, fields);
	for (const char *p = fields ? fields : ""; *p;) {
		while (*p == ' ')
			p++;
		const char *eq = strchr(p, '=');
		if (!*p || !eq)
			break;
		size_t kl = (size_t)(eq - p);
		if (n + kl + 2 >= sizeof(kv))
			break;
		memcpy(kv + n, p, kl);
		n += kl;
		kv[n++] = '\0';
		kv[n] = '\0';
		for (p = eq + 1; *p && *p != ' ';) {
			if (p[0] == '%' && p[1] == '%') {
				if (n + 2 < sizeof(kv))
					kv[n++] = '%';
				p += 2;
			} else if (p[0] == '%') {
				size_t sl = spec_len(p);
				format_one(kv, &n, sizeof(kv) - 1, p, sl, &ap);
				p += sl;
			} else {
				if (n + 2 < sizeof(kv))
					kv[n++] = *p;
				p++;
			}
		}
		kv[n++] = '\0';
		nkv++;
	}
	va_end(ap);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tm tm;
	gmtime_r(&now.tv_sec, &tm);
	size_t tn = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + tn, sizeof(ts) - tn, ".%03ldZ", now.tv_nsec / 1000000);
	pthread_mutex_lock(&g_mu);
	if (g_json) {
		fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":", ts, names[level]);
		put_quoted(stderr, component);
		fputs(",\"msg\":", stderr);
		put_quoted(stderr, msg);
	} else {
		fprintf(stderr, "ts=%s level=%s component=%s msg=", ts, names[level], component);
		put_quoted(stderr, msg);
	}
	const char *q = kv;
	/* a value with a URL's password in it shows xxxxx instead (redact.c) */
	char red[sizeof(kv) + 256];
	for (size_t i = 0; i < nkv; i++) {
		const char *k = q, *v = q + strlen(q) + 1;
		q = v + strlen(v) + 1;
		if (strstr(v, "://")) {
			pd_redact_urls(red, sizeof(red), v);
			v = red;
		}
		if (g_json) {
			fputc(',', stderr);
			put_quoted(stderr, k);
			fputc(':', stderr);
			put_quoted(stderr, v);
		} else {
			fprintf(stderr, " %s=", k);
			put_logfmt_value(stderr, v);
		}
	}
	fputs(g_json ? "}\n" : "\n", stderr);
	pthread_mutex_unlock(&g_mu);
}
