/* debuginfod_dl.c: libdebuginfod, loaded when first used. libdebuginfod.so.1
 * links libcurl-gnutls and the thirty libraries it pulls in (GnuTLS, Kerberos,
 * LDAP, SSH, ...); linked directly, every profd process would map and relocate
 * them at start, a few milliseconds each time (and several times that under the
 * sanitizers), though only a symbolizer asking a debuginfod server needs them.
 * So profd links none of libdebuginfod's functions: the ones find.c calls are
 * defined here and forward to libdebuginfod.so.1, opened with dlopen on the first
 * call (pkg/util/curl_dl.c does the same for libcurl). */
#include "symbolize_int.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256];

static struct {
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
} fn;

static void load(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_error, sizeof load_error, "%s", dlerror());
		return;
	}
#define SYM(field, name) *(void **)(&fn.field) = dlsym(h, name)
	SYM(begin, "debuginfod_begin");
	SYM(end, "debuginfod_end");
	SYM(find_debuginfo, "debuginfod_find_debuginfo");
	SYM(set_progressfn, "debuginfod_set_progressfn");
	SYM(set_user_data, "debuginfod_set_user_data");
	SYM(get_user_data, "debuginfod_get_user_data");
#undef SYM
	if (!fn.begin || !fn.end || !fn.find_debuginfo || !fn.set_progressfn ||
	    !fn.set_user_data || !fn.get_user_data) {
		snprintf(load_error, sizeof load_error,
		         "libdebuginfod.so.1 lacks one of the functions profd calls");
		fn.begin = NULL;
	}
}

const char *sym_debuginfod_load(void)
{
	pthread_once(&once, load);
	return fn.begin ? NULL : load_error;
}

debuginfod_client *debuginfod_begin(void)
{
	return sym_debuginfod_load() ? NULL : fn.begin();
}

/* The functions below take a client, which only debuginfod_begin gives, and it
 * gives one only once the library is loaded. */
void debuginfod_end(debuginfod_client *c)
{
	fn.end(c);
}

int debuginfod_find_debuginfo(debuginfod_client *c, const unsigned char *build_id,
                              int build_id_len, char **path)
{
	return fn.find_debuginfo(c, build_id, build_id_len, path);
}

void debuginfod_set_progressfn(debuginfod_client *c, debuginfod_progressfn_t f)
{
	fn.set_progressfn(c, f);
}

void debuginfod_set_user_data(debuginfod_client *c, void *data)
{
	fn.set_user_data(c, data);
}

void *debuginfod_get_user_data(debuginfod_client *c)
{
	return fn.get_user_data(c);
}
