/* log.c: the process's log: one line per event on stderr, in logfmt
 * (`ts=... level=warn component=scrape msg="..." key=value`) or JSON, filtered by
 * level. Safe to call from any thread. */
#include <pthread.h>
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

void pd_log_write(int level, const char *component, const char *fmt, ...)
{
	char msg[2048], ts[40];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tm tm;
	gmtime_r(&now.tv_sec, &tm);
	size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", now.tv_nsec / 1000000);
	pthread_mutex_lock(&g_mu);
	if (g_json) {
		fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":", ts, names[level]);
		put_quoted(stderr, component);
		fputs(",\"msg\":", stderr);
		put_quoted(stderr, msg);
		fputs("}\n", stderr);
	} else {
		fprintf(stderr, "ts=%s level=%s component=%s msg=", ts, names[level], component);
		put_quoted(stderr, msg);
		fputc('\n', stderr);
	}
	pthread_mutex_unlock(&g_mu);
}
