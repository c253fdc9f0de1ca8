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

/* The code point of the valid UTF-8 sequence at s (NUL-terminated) and its length
 * in *len; *len 0 when none starts there. */
static unsigned utf8_at(const unsigned char *s, size_t *len)
{
	unsigned c = s[0], cp, min;
	size_t k;
	*len = 0;
	if (c >= 0xc2 && c <= 0xdf) {
		k = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		k = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	cp = c & (0x7fu >> k);
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*len = k;
	return cp;
}

/* Writes s quoted for logfmt or JSON: `"` and `\` escaped, newlines as \n, other
 * control bytes, DEL and the code points a reader may take for a line break
 * (U+0085, U+2028, U+2029) as \u escapes, bytes that start no valid UTF-8
 * sequence as U+FFFD. Whatever s holds, it stays inside one line. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p++);
		} else if (*p == '\n') {
			fputs("\\n", f);
			p++;
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			fputc(*p++, f);
		} else {
			size_t k;
			unsigned cp = utf8_at(p, &k);
			if (!k) {
				fputs("\xef\xbf\xbd", f);
				p++;
			} else if (cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
				fprintf(f, "\\u%04x", cp);
				p += k;
			} else {
				fwrite(p, 1, k, f);
				p += k;
			}
		}
	}
	fputc('"', f);
}

/* A logfmt value is quoted when it is empty or holds a space, '=', '"' or a
 * control byte, as go-kit's logfmt does, or anything put_quoted rewrites. */
static void put_logfmt_value(FILE *f, const char *s)
{
	int q = !*s;
	for (const unsigned char *p = (const unsigned char *)s; *p && !q; p++) {
		q = *p <= ' ' || *p == '=' || *p == '"' || *p == '\\' || *p == 0x7f;
		if (!q && *p >= 0x80) {
			size_t k;
			unsigned cp = utf8_at(p, &k);
			q = !k || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
			if (k)
				p += k - 1;
		}
	}
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
