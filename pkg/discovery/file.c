/* file.c: the file_sd provider, as Prometheus's discovery/file: path patterns
 * whose last element may hold globs, expanded with glob(3); every matching file is
 * read as JSON (.json) or YAML (.yml, .yaml) target groups, named "<path>:<i>" and
 * labelled __meta_filepath="<path>". The files are re-read when inotify reports a
 * change in a watched directory (files created, written and closed, moved in or out,
 * deleted) and every refresh_interval regardless. A file that cannot be read or
 * parsed keeps the groups it last had and its error is reported; a file that no
 * longer matches loses its groups. Runs on the manager thread. */
#include "discovery_int.h"

#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <unistd.h>

#define WATCH_MASK                                                                                 \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF |   \
	 IN_MOVE_SELF)

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && memcmp(s + n - m, suf, m) == 0;
}

/* Prometheus's check: ^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$ */
static int valid_pattern(const char *p)
{
	static const char *const ext[] = {".json", ".yml", ".yaml", ".JSON", ".YML", ".YAML"};
	const char *star = strchr(p, '*');
	int ok = 0;
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		ok |= has_suffix(p, ext[i]);
	return ok && (!star || !strchr(star, '/'));
}

int pd_sd_file_validate(const struct pd_discovery_file_config *c, struct pd_err *err)
{
	if (c->nfiles == 0)
		return pd_err_set(err, PD_EINVAL,
		                  "file service discovery config must contain at least one path "
		                  "name");
	for (size_t i = 0; i < c->nfiles; i++) {
		char q[96];
		if (c->files[i] && valid_pattern(c->files[i]))
			continue;
		pd_sd_quote(q, sizeof(q), c->files[i] ? c->files[i] : "",
		            c->files[i] ? strlen(c->files[i]) : 0);
		return pd_err_set(err, PD_EINVAL, "path name %s is not valid for file discovery",
		                  q);
	}
	return 0;
}

int pd_sd_file_key(struct pd_buf *b, const struct pd_discovery_file_config *c)
{
	int64_t iv = c->refresh_interval_ms > 0 ? c->refresh_interval_ms
	                                        : PD_DISCOVERY_FILE_REFRESH_DEFAULT_MS;
	int rc = pd_sd_key_str(b, "file");
	if (!rc)
		rc = pd_sd_key_i64(b, iv);
	if (!rc)
		rc = pd_sd_key_i64(b, (int64_t)c->nfiles);
	for (size_t i = 0; i < c->nfiles && !rc; i++)
		rc = pd_sd_key_str(b, c->files[i]);
	return rc;
}

static int has_glob(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[')
			return 1;
	return 0;
}

int pd_sd_file_init(struct pd_sd_provider *p, const struct pd_discovery_file_config *c)
{
	struct pd_buf detail;
	p->kind = PD_SD_FILE;
	p->ifd = -1;
	p->interval_ms = c->refresh_interval_ms > 0 ? c->refresh_interval_ms
	                                            : PD_DISCOVERY_FILE_REFRESH_DEFAULT_MS;
	p->nfiles = c->nfiles;
	if (!(p->files = calloc(c->nfiles, sizeof(char *))) ||
	    !(p->dirs = calloc(c->nfiles, sizeof(char *))) ||
	    !(p->bases = calloc(c->nfiles, sizeof(char *))) ||
	    !(p->wds = malloc(c->nfiles * sizeof(int))))
		return PD_ENOMEM;
	pd_buf_init(&detail, 0);
	for (size_t i = 0; i < c->nfiles; i++) {
		const char *f = c->files[i], *slash = strrchr(f, '/');
		p->wds[i] = -1;
		if (!(p->files[i] = strdup(f)) || !(p->bases[i] = strdup(slash ? slash + 1 : f)))
			goto nomem;
		/* watch the directory part, as Prometheus does ("./" without one); a
		 * directory with globs in it cannot be watched */
		if (!slash)
			p->dirs[i] = strdup("./");
		else if (!has_glob(f, (size_t)(slash - f)))
			p->dirs[i] = slash == f ? strdup("/") : strndup(f, (size_t)(slash - f));
		if ((!slash || !has_glob(f, (size_t)(slash - f))) && !p->dirs[i])
			goto nomem;
		if (pd_buf_printf(&detail, "%s%s", i ? ", " : "", f))
			goto nomem;
	}
	if (pd_buf_append(&detail, "", 1))
		goto nomem;
	p->detail = (char *)pd_buf_steal(&detail, NULL);
	return 0;
nomem:
	pd_buf_fini(&detail);
	return PD_ENOMEM;
}

static void add_watches(struct pd_sd_provider *p)
{
	if (p->ifd < 0)
		return;
	for (size_t i = 0; i < p->nfiles; i++)
		if (p->dirs[i] && p->wds[i] < 0)
			p->wds[i] =
			    inotify_add_watch(p->ifd, p->dirs[i], WATCH_MASK); /* may fail */
}

void pd_sd_file_start(struct pd_sd_provider *p, int use_inotify)
{
	if (use_inotify)
		p->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC); /* -1: refresh_interval only */
	add_watches(p);
	p->refresh_now = 1;
}

int pd_sd_file_drain(struct pd_sd_provider *p)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int need = 0;

	if (p->ifd < 0)
		return 0;
	for (;;) {
		ssize_t n = read(p->ifd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;
			q += sizeof(*ev) + ev->len;
			if (ev->mask & IN_MOVE_SELF) {
				/* the watch would follow the directory to its new name: drop
				 * it and watch the path again on the refresh */
				inotify_rm_watch(p->ifd, ev->wd);
				for (size_t i = 0; i < p->nfiles; i++)
					if (p->wds[i] == ev->wd)
						p->wds[i] = -1;
				need = 1;
			} else if (ev->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF)) {
				need = 1;
			} else if (ev->mask & IN_IGNORED) {
				/* the directory went away: watch it again on the next refresh */
				for (size_t i = 0; i < p->nfiles; i++)
					if (p->wds[i] == ev->wd)
						p->wds[i] = -1;
				need = 1;
			} else if (ev->len == 0) {
				need = 1;
			} else {
				/* only names the patterns match (an editor's swap file, or a
				 * temporary file renamed into place later, changes nothing) */
				for (size_t i = 0; i < p->nfiles && !need; i++)
					if (p->wds[i] == ev->wd &&
					    fnmatch(p->bases[i], ev->name, 0) == 0)
						need = 1;
			}
		}
	}
	return need;
}

/* The files the patterns match now, in pattern order, each once. */
static int list_files(struct pd_sd_provider *p, char ***out, size_t *n, struct pd_buf *errs)
{
	char **v = NULL;
	size_t nv = 0, cap = 0;
	for (size_t i = 0; i < p->nfiles; i++) {
		glob_t g;
		/* as Go's filepath.Glob: a leading dot matches, unreadable directories match
		 * nothing */
		int rc = glob(p->files[i], GLOB_PERIOD, NULL, &g);
		if (rc == GLOB_NOMATCH) {
			continue;
		} else if (rc) {
			pd_buf_printf(errs, "%sglob %s: %s", errs->len ? "; " : "", p->files[i],
			              rc == GLOB_NOSPACE ? "out of memory" : "read error");
			if (rc == GLOB_NOSPACE)
				goto nomem;
			globfree(&g);
			continue;
		}
		for (size_t j = 0; j < g.gl_pathc; j++) {
			int dup = 0;
			for (size_t k = 0; k < nv && !dup; k++)
				dup = !strcmp(v[k], g.gl_pathv[j]);
			if (dup)
				continue;
			if (nv == cap) {
				size_t ncap = cap ? 2 * cap : 8;
				char **nvv = realloc(v, ncap * sizeof(*v));
				if (!nvv) {
					globfree(&g);
					goto nomem;
				}
				v = nvv;
				cap = ncap;
			}
			if (!(v[nv] = strdup(g.gl_pathv[j]))) {
				globfree(&g);
				goto nomem;
			}
			nv++;
		}
		globfree(&g);
	}
	*out = v;
	*n = nv;
	return 0;
nomem:
	for (size_t k = 0; k < nv; k++)
		free(v[k]);
	free(v);
	return PD_ENOMEM;
}

/* Reads and parses one file into *g / *ng, with __meta_filepath. */
static int read_file(const char *path, struct pd_target_group **g, size_t *ng, struct pd_err *err)
{
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
	const char *ext = dot && (!slash || dot > slash) ? dot : "";
	uint8_t *text = NULL;
	size_t len;
	int yaml, rc;

	if (!strcasecmp(ext, ".json"))
		yaml = 0;
	else if (!strcasecmp(ext, ".yml") || !strcasecmp(ext, ".yaml"))
		yaml = 1;
	else
		return pd_err_set(err, PD_EINVAL, "%s: unsupported file extension \"%s\"", path,
		                  ext);
	if ((rc = pd_file_read(path, PD_DISCOVERY_MAX_DOCUMENT_SIZE, &text, &len, err)))
		return rc;
	rc = pd_discovery_parse_groups((const char *)text, len, yaml, path, g, ng, err);
	free(text);
	if (rc)
		return rc;
	if ((rc = pd_sd_groups_set_label(*g, *ng, "__meta_filepath", path, err))) {
		pd_target_group_free(*g, *ng);
		*g = NULL;
		*ng = 0;
	}
	return rc;
}

static void fs_free(struct pd_sd_file_state *fs, size_t n)
{
	if (!fs)
		return;
	for (size_t i = 0; i < n; i++) {
		free(fs[i].path);
		pd_target_group_free(fs[i].groups, fs[i].ngroups);
		free(fs[i].error);
	}
	free(fs);
}

void pd_sd_file_refresh(struct pd_sd_provider *p, struct pd_sd_counters *c)
{
	struct pd_sd_file_state *nfs = NULL;
	struct pd_target_group *view = NULL;
	size_t *moved = NULL; /* per file: the old entry whose groups it kept, or SIZE_MAX */
	char **paths = NULL;
	size_t npaths = 0, total = 0;
	struct pd_buf errs;
	int changed;

	pd_buf_init(&errs, 0);
	add_watches(p); /* a directory that was missing may exist now */
	if (list_files(p, &paths, &npaths, &errs))
		goto nomem;
	if (npaths &&
	    (!(nfs = calloc(npaths, sizeof(*nfs))) || !(moved = malloc(npaths * sizeof(*moved)))))
		goto nomem;
	for (size_t i = 0; i < npaths; i++) {
		struct pd_sd_file_state *old = NULL, *f = &nfs[i];
		struct pd_err err = {0};
		moved[i] = SIZE_MAX;
		for (size_t k = 0; k < p->nfs && !old; k++)
			if (p->fs[k].path && !strcmp(p->fs[k].path, paths[i]))
				old = &p->fs[k];
		f->path = paths[i];
		paths[i] = NULL;
		if (read_file(f->path, &f->groups, &f->ngroups, &err)) {
			c->file_read_errors++;
			f->error = strdup(err.msg);
			if (old) { /* keep what it had */
				moved[i] = (size_t)(old - p->fs);
				f->groups = old->groups;
				f->ngroups = old->ngroups;
				old->groups = NULL;
				old->ngroups = 0;
			}
			if (errs.len < 16 * 1024)
				pd_buf_printf(&errs, "%s%s", errs.len ? "; " : "", err.msg);
		}
		total += f->ngroups;
	}
	/* files that no longer match are left out, and take their groups with them */
	if (total && !(view = calloc(total, sizeof(*view)))) {
		/* the current view still shows the groups kept: give them back */
		for (size_t i = 0; i < npaths; i++) {
			if (moved[i] == SIZE_MAX)
				continue;
			p->fs[moved[i]].groups = nfs[i].groups;
			p->fs[moved[i]].ngroups = nfs[i].ngroups;
			nfs[i].groups = NULL;
			nfs[i].ngroups = 0;
		}
		goto nomem;
	}
	total = 0;
	for (size_t i = 0; i < npaths; i++)
		for (size_t j = 0; j < nfs[i].ngroups; j++)
			view[total++] = nfs[i].groups[j];
	/* the old view still points at the old groups (or at those moved over) */
	changed = !pd_sd_groups_equal(p->groups, p->ngroups, view, total);
	fs_free(p->fs, p->nfs);
	free(p->groups);
	p->fs = nfs;
	p->nfs = npaths;
	p->groups = view;
	p->ngroups = total;
	if (changed)
		p->changed = 1;
	free(paths);
	free(moved);
	if (pd_buf_append(&errs, "", 1) == 0 && errs.len > 1)
		pd_sd_provider_set_result(p, (const char *)errs.data);
	else
		pd_sd_provider_set_result(p, NULL);
	pd_buf_fini(&errs);
	return;
nomem:
	for (size_t i = 0; i < npaths; i++)
		free(paths ? paths[i] : NULL);
	free(paths);
	free(moved);
	fs_free(nfs, npaths);
	pd_buf_fini(&errs);
	pd_sd_provider_set_result(p, "out of memory");
}
