/* find.c: where the debug file of a build id is, asking in order: the local
 * directories laid out as <dir>/.build-id/xx/yyyy.debug, the mapping's own file
 * when it is on this machine and its build id matches, and the debuginfod
 * servers (libdebuginfod, loaded by debuginfod_dl.c), with a size and a time
 * limit on each download. */
#include "symbolize_int.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int valid_build_id(const char *b)
{
	size_t n = strlen(b);
	if (n < 4 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((b[i] >= '0' && b[i] <= '9') || (b[i] >= 'a' && b[i] <= 'f')))
			return 0;
	return 1;
}

struct dl_ctx {
	int64_t start_ms, timeout_ms;
	size_t max;
	const volatile int *cancel;
	int why; /* 1 timeout, 2 too big, 3 cancelled */
};

/* Called by libdebuginfod as a download proceeds (a: bytes so far, b: total or 0);
 * non-zero ends it. */
static int dl_progress(debuginfod_client *c, long a, long b)
{
	struct dl_ctx *x = debuginfod_get_user_data(c);
	if (x->cancel && *x->cancel)
		x->why = 3;
	else if (now_ms() - x->start_ms > x->timeout_ms)
		x->why = 1;
	else if ((a > 0 && (size_t)a > x->max) || (b > 0 && (size_t)b > x->max))
		x->why = 2;
	return x->why;
}

static int from_debuginfod(const struct sym_find_opts *o, const char *build_id, char **path,
                           struct pd_err *err)
{
	const char *why = sym_debuginfod_load();
	if (why)
		return pd_err_set(err, PD_EUNAVAIL,
		                  "debuginfod (%s): cannot load libdebuginfod (Debian package "
		                  "libdebuginfod1): %s",
		                  o->debuginfod_urls, why);
	debuginfod_client *c = debuginfod_begin();
	if (!c)
		return pd_err_set(err, PD_ENOMEM, "starting a debuginfod client failed");
	struct dl_ctx x = {.start_ms = now_ms(),
	                   .timeout_ms = o->timeout_ms,
	                   .max = o->max_download,
	                   .cancel = o->cancel};
	debuginfod_set_user_data(c, &x);
	debuginfod_set_progressfn(c, dl_progress);
	char *p = NULL;
	int fd = debuginfod_find_debuginfo(c, (const unsigned char *)build_id, 0, &p);
	debuginfod_end(c);
	if (fd < 0) {
		free(p);
		if (x.why == 1)
			return pd_err_set(err, PD_EUNAVAIL,
			                  "debuginfod (%s): no answer within %lld ms "
			                  "(--symbolizer.debuginfod-timeout)",
			                  o->debuginfod_urls, (long long)o->timeout_ms);
		if (x.why == 2)
			return pd_err_set(
			    err, PD_ETOOBIG,
			    "debuginfod (%s): the debug file is larger than %zu bytes "
			    "(--symbolizer.max-download-size)",
			    o->debuginfod_urls, o->max_download);
		if (x.why == 3)
			return pd_err_set(err, PD_EUNAVAIL, "debuginfod: cancelled");
		return pd_err_set(err, fd == -ENOENT ? PD_ENOTFOUND : PD_EUNAVAIL,
		                  "debuginfod (%s): %s", o->debuginfod_urls, strerror(-fd));
	}
	close(fd);
	*path = p;
	return 0;
}

int sym_find(const struct sym_find_opts *o, const char *build_id, const char *mapping_file,
             char **path, const char **source, struct pd_err *err)
{
	*path = NULL;
	*source = NULL;
	int have_id = build_id && *build_id;
	/* a profile without build ids: the mapped file's note gives it, so that the
	 * directories and debuginfod can be asked for its debug file too */
	char file_id[2 * 64 + 1];
	int file_has_id = o->use_mapping_files && mapping_file && mapping_file[0] == '/' &&
	                  sym_elf_build_id(mapping_file, file_id, sizeof(file_id)) == 0;
	if (!have_id && file_has_id) {
		build_id = file_id;
		have_id = 1;
	}
	if (have_id && valid_build_id(build_id)) {
		for (size_t i = 0; i < o->ndirs; i++) {
			size_t n = strlen(o->dirs[i]) + strlen(build_id) + 32;
			char *p = malloc(n);
			if (!p)
				return pd_err_set(err, PD_ENOMEM, "out of memory");
			snprintf(p, n, "%s/.build-id/%.2s/%s.debug", o->dirs[i], build_id,
			         build_id + 2);
			if (access(p, R_OK) == 0) {
				*path = p;
				*source = "dir";
				return 0;
			}
			free(p);
		}
	}
	/* the mapped file itself: at once when it has DWARF, else (stripped, its
	 * symbol tables only) when debuginfod has no debug file for it */
	int file_ok = o->use_mapping_files && mapping_file && mapping_file[0] == '/' &&
	              ((file_has_id && strcmp(file_id, build_id) == 0) ||
	               (!file_has_id && !have_id && access(mapping_file, R_OK) == 0));
	int file_funcs = 0, file_dwarf = file_ok && sym_elf_contents(mapping_file, &file_funcs);
	file_ok =
	    file_ok && (file_dwarf || file_funcs); /* a file that names nothing is no source */
	if (file_dwarf) {
		if (!(*path = strdup(mapping_file)))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		*source = "file";
		return 0;
	}
	if (have_id && valid_build_id(build_id) && o->debuginfod_urls && *o->debuginfod_urls) {
		int rc = from_debuginfod(o, build_id, path, err);
		if (rc == 0) {
			*source = "debuginfod";
			return 0;
		}
		if (!file_ok || rc == PD_ENOMEM || (o->cancel && *o->cancel))
			return rc;
		if (err) {
			err->code = 0;
			err->msg[0] = 0;
		}
	}
	if (file_ok) {
		if (!(*path = strdup(mapping_file)))
			return pd_err_set(err, PD_ENOMEM, "out of memory");
		*source = "file";
		return 0;
	}
	if (have_id && !valid_build_id(build_id))
		return pd_err_set(err, PD_ENOTFOUND, "build id \"%.64s\" is not hex", build_id);
	return pd_err_set(err, PD_ENOTFOUND, "no debug information for %s%s in %zu director%s%s",
	                  have_id ? "build id " : "", have_id ? build_id : mapping_file, o->ndirs,
	                  o->ndirs == 1 ? "y" : "ies",
	                  o->debuginfod_urls && *o->debuginfod_urls ? " nor debuginfod" : "");
}
