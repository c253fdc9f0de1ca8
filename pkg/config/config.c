/* config.c: loading a configuration from a file or from text, freeing it, and
 * looking things up in it. The schema lives in parse.c, YAML handling in yaml.c,
 * rendering back to YAML in render.c. */
#include "config_int.h"

#include <stdlib.h>
#include <string.h>

void pd_config_destroy(struct pd_config *cfg)
{
	if (!cfg)
		return;
	pd_labels_destroy(cfg->global.external_labels);
	for (size_t i = 0; i < cfg->nscrape_configs; i++) {
		struct pd_scrape_config *sc = &cfg->scrape_configs[i];
		for (size_t j = 0; j < sc->nstatic_configs; j++)
			pd_labels_destroy(sc->static_configs[j].labels);
		pd_relabel_rules_destroy(sc->relabel_rules);
	}
	pd_arena_destroy(cfg->arena);
	free(cfg);
}

/* Parses text; dir (may be NULL) is where relative paths are joined to. */
static int parse(const char *text, size_t len, const char *filename, const char *dir,
                 struct pd_config **out, struct pd_err *err)
{
	struct pd_config *cfg = calloc(1, sizeof(*cfg));
	yaml_document_t doc;
	yaml_node_t *root;
	int rc;

	*out = NULL;
	if (!cfg || !(cfg->arena = pd_arena_create(CFG_ARENA_LIMIT))) {
		free(cfg);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	struct cfg_ctx c = {
	    .cfg = cfg,
	    .a = cfg->arena,
	    .doc = &doc,
	    .filename = filename,
	    .err = err,
	    .budget = CFG_NODE_BUDGET,
	};
	cfg->filename = cy_strdup(&c, filename ? filename : "");
	c.dir = dir ? cy_strdup(&c, dir) : NULL;
	if (!cfg->filename || (dir && !c.dir)) {
		rc = cy_nomem(&c);
		goto fail;
	}
	if ((rc = cy_load(&c, text, len, &doc, &root)))
		goto fail;
	rc = cfg_parse_root(&c, root);
	yaml_document_delete(&doc);
	if (rc)
		goto fail;
	*out = cfg;
	return 0;
fail:
	pd_config_destroy(cfg);
	return rc;
}

int pd_config_parse(const char *text, size_t len, const char *filename, struct pd_config **out,
                    struct pd_err *err)
{
	return parse(text, len, filename, NULL, out, err);
}

char *cfg_dir_of(const char *path)
{
	char *dir = malloc(strlen(path) + 2);
	if (!dir)
		return NULL;
	strcpy(dir, path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	return dir;
}

int pd_config_load_file(const char *path, struct pd_config **out, struct pd_err *err)
{
	uint8_t *buf;
	size_t len;
	int rc;

	*out = NULL;
	if ((rc = pd_file_read(path, PD_CONFIG_MAX_FILE_SIZE, &buf, &len, err)))
		return rc;
	char *dir = cfg_dir_of(path);
	if (!dir) {
		free(buf);
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	}
	rc = parse((const char *)buf, len, path, dir, out, err);
	free(dir);
	free(buf);
	return rc;
}

const struct pd_scrape_config *pd_config_job(const struct pd_config *cfg, const char *job_name)
{
	for (size_t i = 0; i < cfg->nscrape_configs; i++)
		if (strcmp(cfg->scrape_configs[i].job_name, job_name) == 0)
			return &cfg->scrape_configs[i];
	return NULL;
}

const struct pd_profile_config *pd_scrape_config_profile(const struct pd_scrape_config *sc,
                                                         const char *name)
{
	for (size_t i = 0; i < sc->nprofiles; i++)
		if (strcmp(sc->profiles[i].name, name) == 0)
			return &sc->profiles[i];
	return NULL;
}
