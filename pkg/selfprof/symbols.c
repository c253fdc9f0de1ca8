/* symbols.c: the process's executable mappings as /proc/self/maps lists them,
 * each with the ELF image behind it (the file, or the vDSO in memory), and the
 * lookup of a code address: mapping, file offset, link-time address through the
 * image's PT_LOAD segments (the load bias), then the covering symbol.
 *
 * Reading the symbol tables of the forty-odd libraries profd maps takes tens of
 * milliseconds, so images are read once and kept for the life of the process,
 * keyed by path and checked against the file's identity (device, inode, size,
 * modification time) each time; a changed file is read again. A mapping whose
 * file was deleted or replaced since it was mapped (/proc/self/maps says
 * "(deleted)": an upgrade of a running profd) is named only from an image read
 * before that, with the same inode; the file now at its path is another one. */
#define _GNU_SOURCE /* getline */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "selfprof_int.h"

static int parse_line(const char *line, struct sp_map *m, char **path)
{
	unsigned long long start, limit, offset, inode;
	char perms[8];
	int pos = 0;
	if (sscanf(line, "%llx-%llx %7s %llx %*s %llu%n", &start, &limit, perms, &offset, &inode,
	           &pos) < 5 ||
	    pos <= 0)
		return -1;
	if (strlen(perms) < 3 || perms[2] != 'x')
		return -1;
	const char *p = line + pos;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strcspn(p, "\n");
	static const char deleted[] = " (deleted)";
	if (n >= sizeof(deleted) - 1 &&
	    memcmp(p + n - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0) {
		n -= sizeof(deleted) - 1;
		m->deleted = 1;
	}
	if (n == 0)
		return -1; /* anonymous code (a JIT): nothing to name it by */
	if (p[0] == '[' && strncmp(p, "[vdso]", n) != 0)
		return -1; /* [vsyscall] and friends */
	m->start = (uintptr_t)start;
	m->limit = (uintptr_t)limit;
	m->offset = offset;
	m->inode = (uint64_t)inode;
	*path = strndup(p, n);
	return *path ? 0 : PD_ENOMEM;
}

struct cached_elf {
	struct cached_elf *next;
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct sp_elf elf;
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cached_elf *cache; /* entries are never freed: mappings borrow them */

/* The image of a mapping, read once per file; NULL when it cannot be read. */
static const struct sp_elf *elf_for(const struct sp_map *m)
{
	int vdso = strcmp(m->path, "[vdso]") == 0;
	struct stat st;
	memset(&st, 0, sizeof(st));
	if (!vdso && !m->deleted && stat(m->path, &st) < 0)
		return NULL;
	const struct sp_elf *found = NULL;
	pthread_mutex_lock(&cache_mu);
	for (struct cached_elf *c = cache; c && !found; c = c->next) {
		if (strcmp(c->path, m->path) != 0)
			continue;
		if (m->deleted
		        ? (uint64_t)c->ino == m->inode
		        : c->dev == st.st_dev && c->ino == st.st_ino && c->size == st.st_size &&
		              c->mtime.tv_sec == st.st_mtim.tv_sec &&
		              c->mtime.tv_nsec == st.st_mtim.tv_nsec)
			found = &c->elf;
	}
	/* the file at a deleted mapping's path is not the one mapped: not read */
	if (!found && !m->deleted) {
		struct cached_elf *c = calloc(1, sizeof(*c));
		if (c && (c->path = strdup(m->path)) &&
		    sp_elf_open(&c->elf, vdso ? NULL : m->path, (const void *)m->start,
		                m->limit - m->start, NULL) == 0) {
			c->dev = st.st_dev;
			c->ino = st.st_ino;
			c->size = st.st_size;
			c->mtime = st.st_mtim;
			c->next = cache;
			cache = c;
			found = &c->elf;
		} else if (c) {
			free(c->path);
			free(c);
		}
	}
	pthread_mutex_unlock(&cache_mu);
	return found;
}

int sp_maps_load(struct sp_maps *ms, struct pd_err *err)
{
	memset(ms, 0, sizeof(*ms));
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return pd_err_set(err, PD_EIO, "/proc/self/maps: cannot open");
	char exe[4096];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = '\0';
	/* a running binary that was replaced: "/usr/bin/profd (deleted)" */
	size_t xl = strlen(exe), dl = strlen(" (deleted)");
	if (xl > dl && strcmp(exe + xl - dl, " (deleted)") == 0)
		exe[xl - dl] = '\0';
	char *line = NULL;
	size_t lcap = 0, cap = 0;
	int rc = 0;
	while (getline(&line, &lcap, f) > 0) {
		struct sp_map m = {0};
		char *path = NULL;
		int r = parse_line(line, &m, &path);
		if (r == PD_ENOMEM) {
			rc = r;
			break;
		}
		if (r)
			continue;
		if (ms->n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct sp_map *nm = realloc(ms->m, nc * sizeof(*nm));
			if (!nm) {
				free(path);
				rc = PD_ENOMEM;
				break;
			}
			ms->m = nm;
			cap = nc;
		}
		m.path = path;
		m.is_exe = exe[0] && strcmp(path, exe) == 0;
		ms->m[ms->n++] = m;
	}
	free(line);
	fclose(f);
	for (size_t i = 0; i < ms->n && !rc; i++)
		ms->m[i].elf = elf_for(&ms->m[i]);
	if (rc) {
		sp_maps_fini(ms);
		return pd_err_set(err, rc, "reading /proc/self/maps: out of memory");
	}
	return 0;
}

void sp_maps_fini(struct sp_maps *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		free(ms->m[i].path);
	free(ms->m);
	memset(ms, 0, sizeof(*ms));
}

const struct sp_map *sp_maps_find(const struct sp_maps *ms, uintptr_t pc)
{
	size_t lo = 0, hi = ms->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ms->m[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && pc < ms->m[lo - 1].limit)
		return &ms->m[lo - 1];
	return NULL;
}

const char *sp_maps_symbol(const struct sp_map *m, uintptr_t pc)
{
	if (!m || !m->elf)
		return NULL;
	uint64_t off = (uint64_t)(pc - m->start) + m->offset;
	uint64_t v = sp_elf_vaddr(m->elf, off);
	if (!v && !m->elf->nload)
		return NULL;
	const struct sp_sym *s = sp_elf_lookup(m->elf, v);
	return s ? s->name : NULL;
}

int pd_selfprof_symbolize(uintptr_t pc, char *name, size_t size, struct pd_err *err)
{
	struct sp_maps ms;
	int rc = sp_maps_load(&ms, err);
	if (rc)
		return rc;
	const char *s = sp_maps_symbol(sp_maps_find(&ms, pc), pc);
	if (s)
		snprintf(name, size, "%s", s);
	else
		rc =
		    pd_err_set(err, PD_ENOTFOUND, "no symbol covers %#llx", (unsigned long long)pc);
	sp_maps_fini(&ms);
	return rc;
}

int pd_selfprof_symbolize_many(const uintptr_t *pcs, size_t n, const char **names,
                               struct pd_err *err)
{
	struct sp_maps ms;
	int rc = sp_maps_load(&ms, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		names[i] = sp_maps_symbol(sp_maps_find(&ms, pcs[i]), pcs[i]);
	sp_maps_fini(&ms);
	return 0;
}
