/* run_symbolizer.c: profd run's --symbolizer.* flags (docs/configuration.md)
 * and the symbolizer they start for the query API (docs/symbolization.md). */
#include "run_symbolizer.h"

#include <stdlib.h>
#include <string.h>

#include "profd/config.h"

void run_sym_flags_init(struct run_sym_flags *f)
{
	memset(f, 0, sizeof(*f));
	f->enabled = 1;
	f->mapping_files = 1;
	f->timeout = "2s";
	f->cache_size = "64MB";
	f->download_timeout = "1m";
	f->max_download = "1GB";
	f->workers = "2";
	f->max_open_files = "64";  /* PD_SYMBOLIZE_DEFAULT_MAX_OPEN_FILES */
	f->max_build_ids = "4096"; /* PD_SYMBOLIZE_DEFAULT_MAX_BUILD_IDS */
}

int run_sym_flag(struct run_sym_flags *f, const char *a, size_t nl, const char *v)
{
#define IS(x) (nl == strlen(x) && strncmp(a, x, nl) == 0)
	if (IS("--symbolizer.debuginfod-urls"))
		f->debuginfod_urls = v;
	else if (IS("--symbolizer.debug-dirs")) {
		if (f->ndirs == RUN_SYM_MAX_DIRS) {
			fprintf(stderr, "profd run: --symbolizer.debug-dirs: at most %d flags\n",
			        RUN_SYM_MAX_DIRS);
			return -1;
		}
		f->dirs[f->ndirs++] = v;
	} else if (IS("--symbolizer.timeout"))
		f->timeout = v;
	else if (IS("--symbolizer.cache-size"))
		f->cache_size = v;
	else if (IS("--symbolizer.debuginfod-timeout"))
		f->download_timeout = v;
	else if (IS("--symbolizer.max-download-size"))
		f->max_download = v;
	else if (IS("--symbolizer.workers"))
		f->workers = v;
	else if (IS("--symbolizer.max-open-files"))
		f->max_open_files = v;
	else if (IS("--symbolizer.max-build-ids"))
		f->max_build_ids = v;
	else
		return 0;
#undef IS
	return 1;
}

void run_sym_usage(FILE *out)
{
	fprintf(
	    out,
	    "  --[no-]symbolizer.enabled           symbolize native profiles' addresses at\n"
	    "                                      query time (default on)\n"
	    "  --symbolizer.debug-dirs=DIR[,DIR]   directories laid out as\n"
	    "                                      DIR/.build-id/xx/yyyy.debug, repeatable\n"
	    "                                      (default /usr/lib/debug; the store's\n"
	    "                                      debuginfo/ always comes first)\n"
	    "  --symbolizer.debuginfod-urls=URLS   debuginfod servers, space-separated\n"
	    "                                      (default $DEBUGINFOD_URLS; \"\": none)\n"
	    "  --symbolizer.timeout=DUR            longest a query waits for debug files\n"
	    "                                      (default 2s; then it is answered partial)\n"
	    "  --symbolizer.cache-size=SIZE        memory for resolved addresses (default 64MB)\n"
	    "  --symbolizer.debuginfod-timeout=DUR longest one download may take (default 1m)\n"
	    "  --symbolizer.max-download-size=SIZE largest debug file downloaded (default 1GB)\n"
	    "  --symbolizer.workers=N              threads finding debug files (default 2)\n"
	    "  --symbolizer.max-open-files=N       debug files kept open; the least recently\n"
	    "                                      used is closed past it (default 64)\n"
	    "  --symbolizer.max-build-ids=N        build ids kept in memory; the least\n"
	    "                                      recently used is dropped past it\n"
	    "                                      (default 4096)\n"
	    "  --[no-]symbolizer.mapping-files     use a profile's mapped files when they are\n"
	    "                                      on this machine (default on)\n");
}

static int add_dir(const char **dirs, size_t *n, size_t max, const char *d)
{
	if (*n == max) {
		fprintf(stderr, "profd run: --symbolizer.debug-dirs: more than %zu directories\n",
		        max - 1);
		return -1;
	}
	dirs[(*n)++] = d;
	return 0;
}

int run_sym_start(struct run_sym_flags *f, const char *storage_path, struct pd_symbolizer **out,
                  int64_t *timeout_ms)
{
	*out = NULL;
	struct pd_err err = {0};
	int64_t download_ms, cache, maxdl;
	if (pd_config_parse_duration(f->timeout, timeout_ms, &err)) {
		fprintf(stderr, "profd run: --symbolizer.timeout: %s\n", err.msg);
		return -1;
	}
	if (*timeout_ms == 0)
		*timeout_ms = -1; /* "0s": do not wait */
	if (pd_config_parse_duration(f->download_timeout, &download_ms, &err) || download_ms <= 0) {
		fprintf(stderr, "profd run: --symbolizer.debuginfod-timeout: %s\n",
		        err.msg[0] ? err.msg : "must be more than 0");
		return -1;
	}
	if (pd_config_parse_size(f->cache_size, &cache, &err) || cache < 4096) {
		fprintf(stderr, "profd run: --symbolizer.cache-size: %s\n",
		        err.msg[0] ? err.msg : "must be at least 4KB");
		return -1;
	}
	if (pd_config_parse_size(f->max_download, &maxdl, &err) || maxdl <= 0) {
		fprintf(stderr, "profd run: --symbolizer.max-download-size: %s\n",
		        err.msg[0] ? err.msg : "must be more than 0");
		return -1;
	}
	char *end = NULL;
	long workers = strtol(f->workers, &end, 10);
	if (!*f->workers || *end || workers < 1 || workers > 64) {
		fprintf(stderr,
		        "profd run: --symbolizer.workers: %s is not a number from 1 to 64\n",
		        f->workers);
		return -1;
	}
	long max_open = strtol(f->max_open_files, &end, 10);
	if (!*f->max_open_files || *end || max_open < 1 || max_open > 100000) {
		fprintf(stderr,
		        "profd run: --symbolizer.max-open-files: %s is not a number from 1 to "
		        "100000\n",
		        f->max_open_files);
		return -1;
	}
	long max_bids = strtol(f->max_build_ids, &end, 10);
	if (!*f->max_build_ids || *end || max_bids < 1 || max_bids > 1000000) {
		fprintf(stderr,
		        "profd run: --symbolizer.max-build-ids: %s is not a number from 1 to "
		        "1000000\n",
		        f->max_build_ids);
		return -1;
	}
	/* the list, as /api/v1/status/flags shows it */
	f->dirs_joined[0] = 0;
	for (size_t i = 0; i < f->ndirs; i++) {
		size_t used = strlen(f->dirs_joined);
		snprintf(f->dirs_joined + used, sizeof(f->dirs_joined) - used, "%s%s", i ? "," : "",
		         f->dirs[i]);
	}
	if (!f->ndirs)
		snprintf(f->dirs_joined, sizeof(f->dirs_joined), "%s",
		         PD_SYMBOLIZE_DEFAULT_DEBUG_DIR);
	if (!f->enabled)
		return 0;

	size_t sl = strlen(storage_path);
	char *upload = malloc(sl + 16), *cache_dir = malloc(sl + 16);
	char *copy = strdup(f->dirs_joined);
	const char *dirs[RUN_SYM_MAX_DIRS * 8 + 2];
	size_t nd = 0;
	int rc = -1;
	if (!upload || !cache_dir || !copy) {
		fprintf(stderr, "profd run: out of memory\n");
		goto out;
	}
	snprintf(upload, sl + 16, "%s/debuginfo", storage_path);
	snprintf(cache_dir, sl + 16, "%s/symbolizer", storage_path);
	dirs[nd++] = upload;
	char *save = NULL;
	for (char *d = strtok_r(copy, ",", &save); d; d = strtok_r(NULL, ",", &save))
		if (*d && add_dir(dirs, &nd, sizeof(dirs) / sizeof(dirs[0]), d))
			goto out;
	struct pd_symbolize_opts o;
	pd_symbolize_opts_init(&o);
	o.debug_dirs = dirs;
	o.ndebug_dirs = nd;
	o.use_mapping_files = f->mapping_files;
	o.debuginfod_urls = f->debuginfod_urls ? f->debuginfod_urls : getenv("DEBUGINFOD_URLS");
	o.download_timeout_ms = download_ms;
	o.max_download = (size_t)maxdl;
	o.cache_dir = cache_dir;
	o.cache_bytes = (size_t)cache;
	o.workers = (unsigned)workers;
	o.max_open_files = (unsigned)max_open;
	o.max_build_ids = (unsigned)max_bids;
	if (pd_symbolizer_create(out, &o, &err)) {
		fprintf(stderr, "profd run: starting the symbolizer: %s\n", err.msg);
		goto out;
	}
	pd_log_info("symbolizer", "symbolizing native profiles at query time",
	            "debug_dirs=%s debuginfod_urls=%s timeout=%s", f->dirs_joined,
	            o.debuginfod_urls ? o.debuginfod_urls : "", f->timeout);
	rc = 0;
out:
	free(upload);
	free(cache_dir);
	free(copy);
	return rc;
}
