/* debug.c: /debug/pprof/ for profd itself, as Go's net/http/pprof serves it for a
 * Go program, so that profd (or go tool pprof, or another profd) can profile it:
 * the index, profile (CPU, blocking the request for `seconds`), heap and allocs
 * (the sampled heap profile), cmdline and symbol (go tool pprof's symbolz:
 * names for code addresses). Profiles are gzip-compressed
 * profile.proto; errors are plain text, as Go answers them. The profilers are in
 * pkg/selfprof; docs/self-profiling.md says what they measure. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api_int.h"
#include "profd/selfprof.h"

static void plain(struct api_resp *w, unsigned status, const char *msg)
{
	w->status = status;
	w->content_type = "text/plain; charset=utf-8";
	jput(w, msg);
	jput(w, "\n");
}

/* Hands a gzip-compressed profile (malloc'd) to the response. */
static void send_profile(struct api_resp *w, uint8_t *data, size_t len, const char *name)
{
	w->status = 200;
	w->content_type = "application/octet-stream";
	w->raw = data;
	w->raw_len = len;
	w->raw_free = 1;
	w->no_gzip = 1;
	size_t n = strlen(name) + 40;
	if ((w->disposition = malloc(n)))
		snprintf(w->disposition, n, "attachment; filename=\"%s\"", name);
}

static void cpu_profile(struct api_req *r, struct api_resp *w)
{
	int64_t secs;
	if (api_int_param(r, w, "seconds", PD_SELFPROF_CPU_DEFAULT_SECONDS, &secs))
		return;
	if (secs < 1 || secs > PD_SELFPROF_CPU_MAX_SECONDS) {
		api_bad_param(w, "seconds", "%lld is not between 1 and %d", (long long)secs,
		              PD_SELFPROF_CPU_MAX_SECONDS);
		return;
	}
	if (r->is_head) {
		w->content_type = "application/octet-stream";
		return;
	}
	struct pd_selfprof_cpu *c;
	struct pd_err err = {0};
	if (pd_selfprof_cpu_start(&c, &err)) {
		w->status = 500;
		w->content_type = "text/plain; charset=utf-8";
		jprintf(w, "Could not enable CPU profiling: %s\n", err.msg);
		return;
	}
	/* sleep in steps, so that a server being stopped does not wait for the end */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t left = secs * 1000000000 - ((int64_t)(now.tv_sec - t0.tv_sec) * 1000000000 +
		                                    (now.tv_nsec - t0.tv_nsec));
		if (left <= 0 || __atomic_load_n(&r->srv->stopping, __ATOMIC_ACQUIRE))
			break;
		if (left > 100000000)
			left = 100000000;
		struct timespec ts = {0, (long)left};
		nanosleep(&ts, NULL); /* EINTR (our own SIGPROF) only shortens a step */
	}
	uint8_t *out;
	size_t len;
	if (pd_selfprof_cpu_stop(c, &out, &len, &err)) {
		pd_log_error("api", "writing the CPU profile failed", "err=%s", err.msg);
		w->status = 500;
		w->content_type = "text/plain; charset=utf-8";
		jprintf(w, "Could not write the CPU profile: %s\n", pd_strerror(err.code));
		return;
	}
	send_profile(w, out, len, "profile");
}

static void heap_profile(struct api_req *r, struct api_resp *w, int allocs)
{
	struct pd_err err = {0};
	const char *dbg = api_param(r, "debug");
	if (dbg && *dbg && strcmp(dbg, "0") != 0) {
		api_bad_param(w, "debug", "only debug=0, the protobuf profile, is served");
		return;
	}
	const char *secs = api_param(r, "seconds");
	if (secs && *secs) {
		api_bad_param(w, "seconds", "delta heap profiles are not served; leave it out");
		return;
	}
	/* gc=1 asks Go to collect garbage first; C has none to collect: ignored */
	if (!pd_selfprof_heap_available(&err)) {
		plain(w, 501, err.msg);
		return;
	}
	if (r->is_head) {
		w->content_type = "application/octet-stream";
		return;
	}
	uint8_t *out;
	size_t len;
	if (pd_selfprof_heap_profile(allocs, &out, &len, &err)) {
		pd_log_error("api", "writing the heap profile failed", "err=%s", err.msg);
		w->status = 500;
		w->content_type = "text/plain; charset=utf-8";
		jprintf(w, "Could not write the heap profile: %s\n", pd_strerror(err.code));
		return;
	}
	send_profile(w, out, len, allocs ? "allocs" : "heap");
}

/* The command line, arguments separated by NUL bytes, as Go writes os.Args. */
static void cmdline(struct api_req *r, struct api_resp *w)
{
	w->content_type = "text/plain; charset=utf-8";
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* the arguments, NUL-separated, up to 1 MiB */
	char *args = malloc(((size_t)1 << 20) + 1);
	if (!args) {
		close(fd);
		plain(w, 500, "out of memory");
		return;
	}
	ssize_t n;
	size_t total = 0;
	while (total < ((size_t)1 << 20) &&
	       (n = read(fd, args + total, ((size_t)1 << 20) - total)) > 0)
		total += (size_t)n;
	close(fd);
	args[total] = '\0';
	/* each argument with a URL's password shown as xxxxx (--storage.clickhouse.url) */
	for (size_t i = 0; i < total;) {
		size_t al = strlen(args + i);
		char *red = pd_redact_urls_dup(args + i);
		if (!red) {
			free(args);
			pd_buf_fini(&w->body);
			pd_buf_init(&w->body, 0);
			plain(w, 500, "out of memory");
			return;
		}
		jput(w, red);
		free(red);
		/* /proc ends every argument with a NUL; Go only separates them */
		if (i + al + 1 < total)
			jputn(w, "", 1);
		i += al + 1;
	}
	free(args);
}

/* At most this many addresses are named per request; the rest are ignored (the
 * body is bounded by max_form_body already; this bounds the answer). */
#define SYMBOL_MAX_ADDRS 100000

/* /debug/pprof/symbol, as Go's net/http/pprof serves it for go tool pprof's
 * symbolz: GET alone answers "num_symbols: 1" (symbols are available); a POST
 * body or a GET query of addresses joined by '+' ("0x4a1b20+0x4a1c40") gets one
 * "0xaddr name" line per address a symbol covers, after that first line.
 * Addresses are read as Go's strconv.ParseUint(s, 0, 64) reads them (0x hex, 0
 * octal, else decimal); words that are not numbers are skipped, as Go does. */
static void symbol(struct api_req *r, struct api_resp *w)
{
	w->content_type = "text/plain; charset=utf-8";
	jput(w, "num_symbols: 1\n");
	if (r->is_head)
		return;
	const char *in = r->is_post ? (const char *)r->body.data : r->raw_query;
	size_t inlen = r->is_post ? r->body.len : (r->raw_query ? strlen(r->raw_query) : 0);
	if (!in || !inlen)
		return;
	size_t cap = inlen / 2 + 1 < SYMBOL_MAX_ADDRS ? inlen / 2 + 1 : SYMBOL_MAX_ADDRS;
	uintptr_t *pcs = malloc(sizeof(*pcs) * cap);
	const char **names = NULL;
	size_t n = 0;
	if (!pcs)
		goto oom;
	for (size_t i = 0; i < inlen && n < cap;) {
		size_t j = i;
		while (j < inlen && in[j] != '+')
			j++;
		char word[32];
		size_t wl = j - i;
		if (wl > 0 && wl < sizeof(word)) {
			memcpy(word, in + i, wl);
			word[wl] = '\0';
			char *end;
			errno = 0;
			unsigned long long v = word[0] == '-' ? 0 : strtoull(word, &end, 0);
			if (v && !errno && *end == '\0')
				pcs[n++] = (uintptr_t)v;
		}
		i = j + 1;
	}
	if (!n)
		goto out;
	if (!(names = calloc(n, sizeof(*names))))
		goto oom;
	struct pd_err err = {0};
	if (pd_selfprof_symbolize_many(pcs, n, names, &err)) {
		pd_log_error("api", "naming addresses for /debug/pprof/symbol failed", "err=%s",
		             err.msg);
		jprintf(w, "reading request: %s\n", err.msg);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (names[i])
			jprintf(w, "%#llx %s\n", (unsigned long long)pcs[i], names[i]);
	goto out;
oom:
	jput(w, "reading request: out of memory\n");
out:
	free(pcs);
	free(names);
}

static const char index_html[] =
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>/debug/pprof/</title></head>\n"
    "<body>\n/debug/pprof/\n<p>Profiles of profd itself (docs/self-profiling.md):</p>\n"
    "<table>\n"
    "<tr><td><a href=\"allocs?debug=0\">allocs</a></td><td>A sampling of all past memory "
    "allocations (the heap profile with alloc_space as the default type)</td></tr>\n"
    "<tr><td><a href=\"cmdline\">cmdline</a></td><td>The command line of profd, arguments "
    "separated by NUL bytes</td></tr>\n"
    "<tr><td><a href=\"heap?debug=0\">heap</a></td><td>A sampling of memory allocations of "
    "live objects</td></tr>\n"
    "<tr><td><a href=\"symbol\">symbol</a></td><td>Function names for code addresses "
    "(POST 0xADDR+0xADDR), for go tool pprof</td></tr>\n"
    "<tr><td><a href=\"profile\">profile</a></td><td>CPU profile; the duration is the "
    "<code>seconds</code> parameter (default 30, at most 300)</td></tr>\n"
    "</table>\n</body></html>\n";

void api_debug_pprof(struct api_req *r, struct api_resp *w)
{
	const char *p = r->path + strlen("/debug/pprof");
	if (*p == '\0') {
		w->status = 301;
		w->location = "/debug/pprof/";
		w->content_type = "text/html; charset=utf-8";
		jput(w, "<a href=\"pprof/\">Moved Permanently</a>.\n");
		return;
	}
	p++; /* the slash */
	if (r->is_post && strcmp(p, "symbol") != 0) {
		w->allow = "GET, HEAD";
		plain(w, 405, "Method Not Allowed");
		return;
	}
	if (*p == '\0') {
		w->content_type = "text/html; charset=utf-8";
		jput(w, index_html);
	} else if (strcmp(p, "profile") == 0) {
		cpu_profile(r, w);
	} else if (strcmp(p, "heap") == 0) {
		heap_profile(r, w, 0);
	} else if (strcmp(p, "allocs") == 0) {
		heap_profile(r, w, 1);
	} else if (strcmp(p, "cmdline") == 0) {
		cmdline(r, w);
	} else if (strcmp(p, "symbol") == 0) {
		symbol(r, w);
	} else {
		plain(w, 404, "Unknown profile");
	}
}
