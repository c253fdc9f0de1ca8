/* check_cmd.c: `profd check config FILE...`, which validates configuration files
 * the way `promtool check config` does: the whole configuration with Prometheus's
 * checks and messages, then (unless --syntax-only) the files it names: credentials
 * and client certificate files must exist, file_sd files that exist must parse.
 * And `profd check web-config FILE...`, as `promtool check web-config`: each web
 * configuration (--web.config.file) with exporter-toolkit's checks, and the TLS
 * files it names readable. */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "profd/config.h"
#include "profd/discovery.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: profd check config [--syntax-only] FILE...\n"
	           "       profd check web-config FILE...\n"
	           "\n"
	           "config: checks that each FILE is a valid profd configuration, as `promtool\n"
	           "check config` checks a Prometheus one.\n"
	           "web-config: checks that each FILE is a valid web configuration\n"
	           "(--web.config.file: TLS, basic auth users, headers), as `promtool check\n"
	           "web-config` does. Exits 1 when a file is not valid.\n"
	           "\n"
	           "flags of config:\n"
	           "  --syntax-only   only check the configuration itself, not the files it names\n"
	           "                  (credentials, client certificates, file_sd target files)\n");
}

/* promtool's checkFileExists: "" is fine, anything else must stat. */
static int file_exists(const char *what, const char *path, char *msg, size_t size)
{
	struct stat st;
	if (!path || !*path || stat(path, &st) == 0)
		return 0;
	snprintf(msg, size, "error checking %s \"%s\": stat %s: %s", what, path, path,
	         strerror(errno));
	return -1;
}

static int check_client(const struct pd_http_client_config *h, char *msg, size_t size)
{
	if (file_exists("authorization credentials or bearer token file",
	                h->authorization_credentials_file, msg, size) ||
	    file_exists("client cert file", h->tls_cert_file, msg, size) ||
	    file_exists("client key file", h->tls_key_file, msg, size))
		return -1;
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Parses every existing file a file_sd pattern matches; warns when none does. */
static int check_file_sd(const struct pd_scrape_config *sc, const char *pattern, char *msg,
                         size_t size)
{
	glob_t g;
	int rc = glob(pattern, 0, NULL, &g);
	if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
		printf("  WARNING: file \"%s\" for file_sd in scrape job \"%s\" does not exist\n",
		       pattern, sc->job_name);
		globfree(&g);
		return 0;
	}
	if (rc) {
		snprintf(msg, size, "error retrieving file_sd files for \"%s\"", pattern);
		return -1;
	}
	for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
		const char *path = g.gl_pathv[i];
		uint8_t *buf;
		size_t len, n;
		struct pd_err err = {0};
		struct pd_target_group *groups = NULL;
		int yaml = ends_with(path, ".yml") || ends_with(path, ".yaml") ||
		           ends_with(path, ".YML") || ends_with(path, ".YAML");
		if (pd_file_read(path, 64u << 20, &buf, &len, &err) == 0) {
			if (pd_discovery_parse_groups((const char *)buf, len, yaml, path, &groups,
			                              &n, &err) == 0)
				pd_target_group_free(groups, n);
			else
				rc = -1;
			free(buf);
		} else {
			rc = -1;
		}
		if (rc)
			snprintf(msg, size, "checking SD file \"%s\": %s", path, err.msg);
	}
	globfree(&g);
	return rc;
}

static int check_files(const struct pd_config *cfg, char *msg, size_t size)
{
	for (size_t i = 0; i < cfg->nscrape_configs; i++) {
		const struct pd_scrape_config *sc = &cfg->scrape_configs[i];
		if (check_client(&sc->http_client, msg, size))
			return -1;
		for (size_t j = 0; j < sc->nhttp_sd_configs; j++)
			if (sc->http_sd_configs[j].client &&
			    check_client(sc->http_sd_configs[j].client, msg, size))
				return -1;
		/* promtool looks only at a kubernetes_sd_config's client certificate */
		for (size_t j = 0; j < sc->nkubernetes_sd_configs; j++) {
			const struct pd_http_client_config *h = sc->kubernetes_sd_configs[j].client;
			if (h && (file_exists("client cert file", h->tls_cert_file, msg, size) ||
			          file_exists("client key file", h->tls_key_file, msg, size)))
				return -1;
		}
		for (size_t j = 0; j < sc->nfile_sd_configs; j++)
			for (size_t k = 0; k < sc->file_sd_configs[j].nfiles; k++)
				if (check_file_sd(sc, sc->file_sd_configs[j].files[k], msg, size))
					return -1;
	}
	return 0;
}

/* Checks one file and reports as promtool does; returns 0 when it is valid. */
static int check_config_file(const char *path, int syntax_only)
{
	struct pd_config *cfg = NULL;
	struct pd_err err = {0};
	char msg[PD_ERR_MSG_MAX + 256];

	printf("Checking %s\n", path);
	fflush(stdout);
	if (pd_config_load_file(path, &cfg, &err)) {
		fprintf(stderr, "  FAILED: %s\n\n", err.msg);
		return -1;
	}
	for (size_t i = 0; i < cfg->nwarnings; i++)
		printf("  WARNING: %s\n", cfg->warnings[i]);
	if (!syntax_only && check_files(cfg, msg, sizeof(msg))) {
		fflush(stdout);
		fprintf(stderr, "  FAILED: %s\n\n", msg);
		pd_config_destroy(cfg);
		return -1;
	}
	printf("  SUCCESS: %zu scrape configs found\n", cfg->nscrape_configs);
	printf(" SUCCESS: %s is valid profd config file syntax\n\n", path);
	pd_config_destroy(cfg);
	return 0;
}

/* promtool check web-config: "FILE SUCCESS" or "FILE FAILED: why", on stderr. */
static int check_web_configs(int n, char **files)
{
	int failed = 0, nfiles = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(files[i], "-h") == 0 || strcmp(files[i], "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (files[i][0] == '-' && files[i][1] == '-') {
			fprintf(stderr, "profd check web-config: unknown flag %s\n\n", files[i]);
			usage(stderr);
			return 2;
		}
	}
	for (int i = 0; i < n; i++) {
		struct pd_web_config *wc = NULL;
		struct pd_err err = {0};
		nfiles++;
		if (pd_web_config_load_file(files[i], &wc, &err) || pd_web_config_check_files(wc, &err)) {
			fprintf(stderr, "%s FAILED: %s\n", files[i], err.msg);
			failed = 1;
		} else {
			fprintf(stderr, "%s SUCCESS\n", files[i]);
		}
		pd_web_config_destroy(wc);
	}
	if (nfiles == 0) {
		fprintf(stderr, "profd check web-config: no file given\n\n");
		usage(stderr);
		return 2;
	}
	return failed;
}

int pd_cmd_check(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "web-config") == 0)
		return check_web_configs(argc - 2, argv + 2);
	if (strcmp(argv[1], "config") != 0) {
		fprintf(stderr, "profd check: unknown subcommand \"%s\"\n\n", argv[1]);
		usage(stderr);
		return 2;
	}
	int syntax_only = 0, nfiles = 0, failed = 0;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--syntax-only") == 0) {
			syntax_only = 1;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			fprintf(stderr, "profd check config: unknown flag %s\n\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--syntax-only") == 0)
			continue;
		nfiles++;
		if (check_config_file(argv[i], syntax_only))
			failed = 1;
	}
	if (nfiles == 0) {
		fprintf(stderr, "profd check config: no file given\n\n");
		usage(stderr);
		return 2;
	}
	return failed;
}
