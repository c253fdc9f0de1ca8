/* elf.c: reads what symbolization needs from a 64-bit little-endian ELF image:
 * the function symbols of .symtab and .dynsym (sorted by address, aliases folded
 * into one name), the PT_LOAD segments that turn a file offset into a link-time
 * address, and the GNU build ID note. Every offset read from the image is
 * checked against its size, so a truncated or hostile file only loses symbols. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "selfprof_int.h"

/* 1 when [off, off + n) lies inside the image. */
static int in_img(const struct sp_elf *e, uint64_t off, uint64_t n)
{
	return off <= e->len && n <= e->len - off;
}

static void read_notes(struct sp_elf *e, uint64_t off, uint64_t size)
{
	if (!in_img(e, off, size))
		return;
	const uint8_t *p = e->img + off, *end = p + size;
	while ((size_t)(end - p) >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		memcpy(&nh, p, sizeof(nh));
		p += sizeof(nh);
		uint64_t nsz = ((uint64_t)nh.n_namesz + 3) & ~3ull;
		uint64_t dsz = ((uint64_t)nh.n_descsz + 3) & ~3ull;
		if (nsz > (uint64_t)(end - p) || dsz > (uint64_t)(end - p) - nsz)
			return;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= 32) {
			for (uint32_t i = 0; i < nh.n_descsz; i++)
				snprintf(e->build_id + 2 * i, 3, "%02x", p[nsz + i]);
			return;
		}
		p += nsz + dsz;
	}
}

static int sym_rank(const struct sp_sym *s, unsigned bind)
{
	int r = 0;
	if (s->name[0] != '_')
		r += 4;
	if (bind == STB_GLOBAL)
		r += 2;
	else if (bind == STB_WEAK)
		r += 1;
	return r;
}

/* Adds the functions of one symbol table section. ranks[i] goes with syms[i]. */
static int read_symtab(struct sp_elf *e, const Elf64_Shdr *sh, const Elf64_Shdr *shdrs, size_t nsh,
                       size_t *cap, uint8_t **ranks)
{
	if (sh->sh_entsize < sizeof(Elf64_Sym) || sh->sh_link >= nsh ||
	    !in_img(e, sh->sh_offset, sh->sh_size))
		return 0;
	const Elf64_Shdr *st = &shdrs[sh->sh_link];
	if (!in_img(e, st->sh_offset, st->sh_size))
		return 0;
	const char *strs = (const char *)e->img + st->sh_offset;
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		Elf64_Sym sym;
		memcpy(&sym, e->img + sh->sh_offset + i * sh->sh_entsize, sizeof(sym));
		unsigned type = ELF64_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_value == 0 || sym.st_name >= st->sh_size)
			continue;
		const char *name = strs + sym.st_name;
		if (!memchr(name, '\0', st->sh_size - sym.st_name) || !name[0])
			continue;
		if (e->nsyms == *cap) {
			size_t nc = *cap ? *cap * 2 : 1024;
			struct sp_sym *ns = realloc(e->syms, nc * sizeof(*ns));
			uint8_t *nr = ns ? realloc(*ranks, nc) : NULL;
			if (ns)
				e->syms = ns;
			if (!nr)
				return PD_ENOMEM;
			*ranks = nr;
			*cap = nc;
		}
		struct sp_sym *s = &e->syms[e->nsyms];
		s->value = sym.st_value;
		s->size = sym.st_size;
		s->name = name;
		(*ranks)[e->nsyms] = (uint8_t)sym_rank(s, ELF64_ST_BIND(sym.st_info));
		e->nsyms++;
	}
	return 0;
}

struct ranked {
	struct sp_sym s;
	int rank;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->s.value != y->s.value)
		return x->s.value < y->s.value ? -1 : 1;
	if (x->rank != y->rank)
		return y->rank - x->rank; /* best first */
	size_t lx = strlen(x->s.name), ly = strlen(y->s.name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->s.name, y->s.name);
}

/* Sorts by address and keeps the best-ranked name of each address. */
static int sort_syms(struct sp_elf *e, const uint8_t *ranks)
{
	if (!e->nsyms)
		return 0;
	struct ranked *r = malloc(e->nsyms * sizeof(*r));
	if (!r)
		return PD_ENOMEM;
	for (size_t i = 0; i < e->nsyms; i++) {
		r[i].s = e->syms[i];
		r[i].rank = ranks[i];
	}
	qsort(r, e->nsyms, sizeof(*r), cmp_ranked);
	size_t k = 0;
	for (size_t i = 0; i < e->nsyms; i++) {
		if (k && e->syms[k - 1].value == r[i].s.value) {
			if (e->syms[k - 1].size < r[i].s.size)
				e->syms[k - 1].size = r[i].s.size;
			continue;
		}
		e->syms[k++] = r[i].s;
	}
	e->nsyms = k;
	free(r);
	return 0;
}

static int parse(struct sp_elf *e, struct pd_err *err)
{
	Elf64_Ehdr eh;
	if (e->len < sizeof(eh) || memcmp(e->img, ELFMAG, SELFMAG) != 0)
		return pd_err_set(err, PD_ECORRUPT, "not an ELF file");
	memcpy(&eh, e->img, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return pd_err_set(err, PD_ECORRUPT, "not a 64-bit little-endian ELF file");
	if (eh.e_phentsize >= sizeof(Elf64_Phdr) &&
	    in_img(e, eh.e_phoff, (uint64_t)eh.e_phnum * eh.e_phentsize)) {
		for (size_t i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			memcpy(&ph, e->img + eh.e_phoff + i * eh.e_phentsize, sizeof(ph));
			if (ph.p_type == PT_LOAD &&
			    e->nload < sizeof(e->load) / sizeof(e->load[0])) {
				e->load[e->nload].offset = ph.p_offset;
				e->load[e->nload].vaddr = ph.p_vaddr;
				e->load[e->nload].filesz = ph.p_filesz;
				e->nload++;
			} else if (ph.p_type == PT_NOTE && !e->build_id[0]) {
				read_notes(e, ph.p_offset, ph.p_filesz);
			}
		}
	}
	if (eh.e_shentsize < sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    !in_img(e, eh.e_shoff, (uint64_t)eh.e_shnum * eh.e_shentsize))
		return 0; /* no section headers: no symbols */
	Elf64_Shdr *sh = malloc(eh.e_shnum * sizeof(*sh));
	if (!sh)
		return pd_err_set(err, PD_ENOMEM, "out of memory");
	for (size_t i = 0; i < eh.e_shnum; i++)
		memcpy(&sh[i], e->img + eh.e_shoff + i * eh.e_shentsize, sizeof(sh[i]));
	size_t cap = 0;
	uint8_t *ranks = NULL;
	int rc = 0;
	for (size_t i = 0; i < eh.e_shnum && !rc; i++)
		if (sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM)
			rc = read_symtab(e, &sh[i], sh, eh.e_shnum, &cap, &ranks);
	if (!rc)
		rc = sort_syms(e, ranks);
	free(ranks);
	free(sh);
	if (rc)
		return pd_err_set(err, rc, "out of memory reading symbols");
	return 0;
}

int sp_elf_open(struct sp_elf *e, const char *path, const void *mem, size_t len, struct pd_err *err)
{
	memset(e, 0, sizeof(*e));
	if (!path) {
		e->img = mem;
		e->len = len;
	} else {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return pd_err_set(err, PD_EIO, "%s: cannot open", path);
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
			close(fd);
			return pd_err_set(err, PD_EIO, "%s: not a regular file", path);
		}
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			return pd_err_set(err, PD_EIO, "%s: cannot map", path);
		e->img = m;
		e->len = (size_t)st.st_size;
		e->mapped = 1;
	}
	int rc = parse(e, err);
	if (rc) {
		if (path)
			pd_err_prefix(err, "%s", path);
		sp_elf_fini(e);
	}
	return rc;
}

void sp_elf_fini(struct sp_elf *e)
{
	if (e->mapped)
		munmap((void *)e->img, e->len);
	free(e->syms);
	memset(e, 0, sizeof(*e));
}

uint64_t sp_elf_vaddr(const struct sp_elf *e, uint64_t off)
{
	for (size_t i = 0; i < e->nload; i++)
		if (off >= e->load[i].offset && off - e->load[i].offset < e->load[i].filesz)
			return off - e->load[i].offset + e->load[i].vaddr;
	return 0;
}

const struct sp_sym *sp_elf_lookup(const struct sp_elf *e, uint64_t v)
{
	size_t lo = 0, hi = e->nsyms; /* first symbol above v */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->syms[mid].value <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sp_sym *s = &e->syms[lo - 1];
	if (v - s->value < s->size || v == s->value)
		return s;
	return NULL;
}
