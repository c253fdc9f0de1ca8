/* curl_dl.c: libcurl, loaded when first used. profd links none of libcurl's
 * functions directly: the ones it calls are defined here and forward to
 * libcurl.so.4, opened with dlopen on the first call. A process that never scrapes
 * (`profd pprof`, `profd tsdb`) so never loads libcurl and the three dozen
 * libraries it pulls in, which would otherwise cost tens of milliseconds of start-up
 * in every command. Only the entry points profd uses are here. */
#define CURL_DISABLE_TYPECHECK /* define the functions, not the checking macros */
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;

static struct {
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_reset)(CURL *);
	void (*easy_cleanup)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_perform)(CURLM *, int *);
	CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
	CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
	CURLMcode (*multi_wakeup)(CURLM *);
	CURLMcode (*multi_timeout)(CURLM *, long *);
	CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
	CURLSH *(*share_init)(void);
	CURLSHcode (*share_setopt)(CURLSH *, CURLSHoption, ...);
	CURLSHcode (*share_cleanup)(CURLSH *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
} fn;

static void load(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "profd: cannot load libcurl: %s\n", dlerror());
		return;
	}
#define SYM(field, name) *(void **)(&fn.field) = dlsym(h, name)
	SYM(global_init, "curl_global_init");
	SYM(global_cleanup, "curl_global_cleanup");
	SYM(easy_init, "curl_easy_init");
	SYM(easy_reset, "curl_easy_reset");
	SYM(easy_cleanup, "curl_easy_cleanup");
	SYM(easy_setopt, "curl_easy_setopt");
	SYM(easy_getinfo, "curl_easy_getinfo");
	SYM(easy_strerror, "curl_easy_strerror");
	SYM(multi_init, "curl_multi_init");
	SYM(multi_cleanup, "curl_multi_cleanup");
	SYM(multi_add_handle, "curl_multi_add_handle");
	SYM(multi_remove_handle, "curl_multi_remove_handle");
	SYM(multi_perform, "curl_multi_perform");
	SYM(multi_socket_action, "curl_multi_socket_action");
	SYM(multi_poll, "curl_multi_poll");
	SYM(multi_wakeup, "curl_multi_wakeup");
	SYM(multi_timeout, "curl_multi_timeout");
	SYM(multi_setopt, "curl_multi_setopt");
	SYM(multi_info_read, "curl_multi_info_read");
	SYM(share_init, "curl_share_init");
	SYM(share_setopt, "curl_share_setopt");
	SYM(share_cleanup, "curl_share_cleanup");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
#undef SYM
}

#define LOADED(f) (pthread_once(&once, load), fn.f != NULL)

CURLcode curl_global_init(long flags)
{
	return LOADED(global_init) ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
	if (LOADED(global_cleanup))
		fn.global_cleanup();
}

CURL *curl_easy_init(void)
{
	return LOADED(easy_init) ? fn.easy_init() : NULL;
}

void curl_easy_reset(CURL *c)
{
	if (LOADED(easy_reset))
		fn.easy_reset(c);
}

void curl_easy_cleanup(CURL *c)
{
	if (LOADED(easy_cleanup))
		fn.easy_cleanup(c);
}

/* Options carry their argument's type in their number range (curl.h's
 * CURLOPTTYPE_*): long, object pointer, function pointer, curl_off_t, blob. */
CURLcode curl_easy_setopt(CURL *c, CURLoption opt, ...)
{
	va_list ap;
	CURLcode rc;
	if (!LOADED(easy_setopt))
		return CURLE_FAILED_INIT;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = fn.easy_setopt(c, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		rc = fn.easy_setopt(c, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		rc = fn.easy_setopt(c, opt, va_arg(ap, void (*)(void)));
	else if (opt < CURLOPTTYPE_BLOB)
		rc = fn.easy_setopt(c, opt, va_arg(ap, curl_off_t));
	else
		rc = fn.easy_setopt(c, opt, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *c, CURLINFO info, ...)
{
	va_list ap;
	if (!LOADED(easy_getinfo))
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	CURLcode rc = fn.easy_getinfo(c, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

const char *curl_easy_strerror(CURLcode code)
{
	return LOADED(easy_strerror) ? fn.easy_strerror(code) : "libcurl is not available";
}

CURLM *curl_multi_init(void)
{
	return LOADED(multi_init) ? fn.multi_init() : NULL;
}

CURLMcode curl_multi_cleanup(CURLM *m)
{
	return LOADED(multi_cleanup) ? fn.multi_cleanup(m) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_add_handle(CURLM *m, CURL *c)
{
	return LOADED(multi_add_handle) ? fn.multi_add_handle(m, c) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *c)
{
	return LOADED(multi_remove_handle) ? fn.multi_remove_handle(m, c) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_perform(CURLM *m, int *running)
{
	return LOADED(multi_perform) ? fn.multi_perform(m, running) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_socket_action(CURLM *m, curl_socket_t s, int mask, int *running)
{
	return LOADED(multi_socket_action) ? fn.multi_socket_action(m, s, mask, running)
					   : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned int n, int timeout_ms,
			  int *ret)
{
	return LOADED(multi_poll) ? fn.multi_poll(m, fds, n, timeout_ms, ret) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_wakeup(CURLM *m)
{
	return LOADED(multi_wakeup) ? fn.multi_wakeup(m) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_timeout(CURLM *m, long *ms)
{
	return LOADED(multi_timeout) ? fn.multi_timeout(m, ms) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
	va_list ap;
	CURLMcode rc;
	if (!LOADED(multi_setopt))
		return CURLM_INTERNAL_ERROR;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = fn.multi_setopt(m, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		rc = fn.multi_setopt(m, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		rc = fn.multi_setopt(m, opt, va_arg(ap, void (*)(void)));
	else
		rc = fn.multi_setopt(m, opt, va_arg(ap, curl_off_t));
	va_end(ap);
	return rc;
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left)
{
	return LOADED(multi_info_read) ? fn.multi_info_read(m, left) : NULL;
}

CURLSH *curl_share_init(void)
{
	return LOADED(share_init) ? fn.share_init() : NULL;
}

/* What is shared (CURLSHOPT_SHARE, _UNSHARE) is an int; the rest are pointers (the
 * lock functions, user data). */
CURLSHcode curl_share_setopt(CURLSH *sh, CURLSHoption opt, ...)
{
	va_list ap;
	CURLSHcode rc;
	if (!LOADED(share_setopt))
		return CURLSHE_NOT_BUILT_IN;
	va_start(ap, opt);
	if (opt == CURLSHOPT_SHARE || opt == CURLSHOPT_UNSHARE)
		rc = fn.share_setopt(sh, opt, va_arg(ap, int));
	else if (opt == CURLSHOPT_USERDATA)
		rc = fn.share_setopt(sh, opt, va_arg(ap, void *));
	else
		rc = fn.share_setopt(sh, opt, va_arg(ap, void (*)(void)));
	va_end(ap);
	return rc;
}

CURLSHcode curl_share_cleanup(CURLSH *sh)
{
	return LOADED(share_cleanup) ? fn.share_cleanup(sh) : CURLSHE_NOT_BUILT_IN;
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
	return LOADED(slist_append) ? fn.slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
	if (LOADED(slist_free_all))
		fn.slist_free_all(l);
}
