/* dwarf.c: one debug file read with elfutils' libdwfl: an address of a process
 * turned into the file's own address (through its PT_LOAD segments), then into
 * frames: the subprogram that holds it (from an index of each compile unit's
 * functions by address, built once per unit) and the inlined subroutines inside
 * it, innermost first, each called from the line its caller's frame shows (the
 * compile unit found by .debug_aranges, else by each unit's ranges, as Go
 * binaries need); or, without DWARF, the ELF symbol that holds it (.symtab,
 * else .dynsym). */
#include "symbolize_int.h"

#include <dwarf.h>
#include <errno.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One compile unit's functions by address: each range of each subprogram DIE,
 * sorted by start, built the first time an address falls in the unit. */
struct fn_range {
	Dwarf_Addr start, end;
	Dwarf_Off die;
};
struct cu_index {
	Dwarf_Off cu;
	struct fn_range *r;
	size_t n;
	struct cu_index *next;
};

struct sym_dbg {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	size_t size;
	struct cu_index *cus;
};

/* Debug information is what was opened: never look elsewhere (no network, no
 * other directories) from inside a lookup. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                        char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks offline_callbacks = {
    .find_debuginfo = no_debuginfo,
    .section_address = dwfl_offline_section_address,
};

int sym_dbg_open(struct sym_dbg **out, const char *path, struct pd_err *err)
{
	*out = NULL;
	struct sym_dbg *d = calloc(1, sizeof(*d));
	if (!d)
		return pd_err_set(err, PD_ENOMEM, "out of memory opening %s", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(d);
		return pd_err_set(err, PD_EIO, "open %s: %s", path, strerror(errno));
	}
	struct stat st;
	if (fstat(fd, &st) == 0)
		d->size = (size_t)st.st_size;
	d->dwfl = dwfl_begin(&offline_callbacks);
	if (!d->dwfl) {
		close(fd);
		free(d);
		return pd_err_set(err, PD_ENOMEM, "dwfl_begin: %s", dwfl_errmsg(-1));
	}
	/* dwfl owns fd from here */
	d->mod = dwfl_report_offline(d->dwfl, "", path, fd);
	if (!d->mod || dwfl_report_end(d->dwfl, NULL, NULL) != 0) {
		pd_err_set(err, PD_ECORRUPT, "%s is not an ELF file elfutils can read: %s", path,
		           dwfl_errmsg(-1));
		dwfl_end(d->dwfl);
		free(d);
		return PD_ECORRUPT;
	}
	*out = d;
	return 0;
}

void sym_dbg_close(struct sym_dbg *d)
{
	if (!d)
		return;
	for (struct cu_index *c = d->cus, *n; c; c = n) {
		n = c->next;
		free(c->r);
		free(c);
	}
	dwfl_end(d->dwfl);
	free(d);
}

size_t sym_dbg_size(const struct sym_dbg *d)
{
	return d->size;
}

/* The file's own address of addr: its file offset (addr - start + offset) placed
 * in the PT_LOAD segment that maps that offset, as pprof adjusts addresses. A
 * debug-only file (objcopy --only-keep-debug) keeps the segments' addresses but
 * not their file offsets: then the mapping is taken to be the executable
 * segment's, whose first page the loader placed at start (p_offset and p_vaddr
 * agree modulo the page size, so the page's address is p_vaddr rounded down). */
static uint64_t file_address(Elf *elf, uint64_t start, uint64_t limit, uint64_t offset,
                             uint64_t addr)
{
	if ((start == 0 && limit == 0 && offset == 0) || addr < start)
		return addr;
	uint64_t off = addr - start + offset;
	size_t n = 0;
	if (elf_getphdrnum(elf, &n) != 0)
		return addr;
	int have_offsets = 0;
	GElf_Phdr text = {0};
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_filesz > 0)
			have_offsets = 1;
		if (text.p_type != PT_LOAD)
			text = ph;
	}
	if (!have_offsets) {
		if (text.p_type != PT_LOAD)
			return addr;
		return addr - start + (text.p_vaddr & ~(uint64_t)0xfff);
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (off >= ph.p_offset && off < ph.p_offset + ph.p_memsz)
			return off - ph.p_offset + ph.p_vaddr;
	}
	return addr;
}

/* The linkage name of a function's DIE (through its abstract origin and
 * specification), else its name. */
static const char *die_system_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!n)
		n = dwarf_diename(die);
	return n;
}

static int64_t die_decl_line(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word w = 0;
	if (dwarf_formudata(dwarf_attr_integrate(die, DW_AT_decl_line, &a), &w) != 0)
		return 0;
	return (int64_t)w;
}

static int add_frame(struct sym_result *r, const char *sys, const char *plain, const char *file,
                     int64_t line, int64_t start_line)
{
	char *dm = sys ? pd_pprof_demangle(sys, PD_PPROF_NAMES_DEFAULT) : NULL;
	const char *name = dm ? dm : sys ? sys : plain;
	int rc = sym_result_add(r, name ? name : "", sys ? sys : name, file, line, start_line);
	free(dm);
	return rc;
}

/* The compile unit holding pc when there is no .debug_aranges to say (Go's
 * linker writes none): each unit's own ranges, one after another. */
static int cu_by_ranges(Dwarf *dw, Dwarf_Addr pc, Dwarf_Die *out)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(dw, off + hsize, out) && dwarf_haspc(out, pc) == 1)
			return 1;
		off = next;
	}
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int index_add(struct cu_index *c, size_t *cap, Dwarf_Addr lo, Dwarf_Addr hi, Dwarf_Off off)
{
	if (c->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct fn_range *nr = realloc(c->r, nc * sizeof(*nr));
		if (!nr)
			return -1;
		c->r = nr;
		*cap = nc;
	}
	c->r[c->n++] = (struct fn_range){lo, hi, off};
	return 0;
}

/* Every subprogram with code under die (namespaces, classes, nested functions). */
static int index_walk(struct cu_index *c, size_t *cap, Dwarf_Die *die, int depth)
{
	Dwarf_Die child;
	if (depth > 64 || dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0)
				if (hi > lo && index_add(c, cap, lo, hi, dwarf_dieoffset(&child)))
					return -1;
		}
		if (tag == DW_TAG_subprogram || tag == DW_TAG_namespace ||
		    tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		    tag == DW_TAG_union_type || tag == DW_TAG_module || tag == DW_TAG_lexical_block)
			if (index_walk(c, cap, &child, depth + 1))
				return -1;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static struct cu_index *cu_index_get(struct sym_dbg *d, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	for (struct cu_index *c = d->cus; c; c = c->next)
		if (c->cu == off)
			return c;
	struct cu_index *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cu = off;
	size_t cap = 0;
	if (index_walk(c, &cap, cu, 0)) {
		free(c->r);
		free(c);
		return NULL;
	}
	qsort(c->r, c->n, sizeof(*c->r), range_cmp);
	c->next = d->cus;
	d->cus = c;
	return c;
}

/* The subprogram DIE whose code holds pc: the smallest range that does. */
static int find_subprogram(Dwarf *dw, const struct cu_index *c, Dwarf_Addr pc, Dwarf_Die *out)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->r[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct fn_range *best = NULL;
	for (size_t k = lo, seen = 0; k > 0 && seen < 64; k--, seen++) {
		const struct fn_range *r = &c->r[k - 1];
		if (pc < r->end && (!best || r->end - r->start < best->end - best->start))
			best = r;
	}
	return best && dwarf_offdie(dw, best->die, out) != NULL;
}

/* The functions at pc, found through the unit's index: the subprogram, then
 * each inlined subroutine holding pc inside the one before (through lexical
 * blocks), as frames innermost first, the outer ones at the call site of the
 * one inside them. */
static int dwarf_frames(struct sym_dbg *d, Dwfl_Module *mod, Dwarf_Addr a, struct sym_result *r)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die cu_mem;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &bias);
	const char *file = NULL;
	int line = 0;
	Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
	if (!dw)
		return 0;
	if (!cu) {
		if (!cu_by_ranges(dw, a - bias, &cu_mem))
			return 0;
		cu = &cu_mem;
	}
	Dwarf_Addr pc = a - bias;
	Dwarf_Line *dl = dwarf_getsrc_die(cu, pc);
	if (dl) {
		file = dwarf_linesrc(dl, NULL, NULL);
		dwarf_lineno(dl, &line);
	}
	struct cu_index *c = cu_index_get(d, cu);
	Dwarf_Die path[64];
	int depth = 0;
	if (!c || !find_subprogram(dw, c, pc, &path[0]))
		return 0;
	depth = 1;
	Dwarf_Die cur = path[0];
	for (int guard = 0; guard < 256 && depth < 64; guard++) {
		Dwarf_Die child;
		int found = 0;
		if (dwarf_child(&cur, &child) == 0) {
			do {
				int tag = dwarf_tag(&child);
				if ((tag == DW_TAG_inlined_subroutine ||
				     tag == DW_TAG_lexical_block) &&
				    dwarf_haspc(&child, pc) == 1) {
					found = 1;
					break;
				}
			} while (dwarf_siblingof(&child, &child) == 0);
		}
		if (!found)
			break;
		cur = child;
		if (dwarf_tag(&cur) == DW_TAG_inlined_subroutine)
			path[depth++] = cur;
	}
	Dwarf_Files *files = NULL;
	int rc = 0;
	for (int k = depth - 1; k >= 0 && rc == 0; k--) {
		rc = add_frame(r, die_system_name(&path[k]), dwarf_diename(&path[k]), file, line,
		               die_decl_line(&path[k]));
		if (k == 0)
			break;
		/* the caller's frame is at the call site of this inlined copy */
		Dwarf_Attribute at;
		Dwarf_Word cf = 0, cl = 0;
		file = NULL;
		line = 0;
		if (dwarf_formudata(dwarf_attr(&path[k], DW_AT_call_line, &at), &cl) == 0)
			line = (int)cl;
		if (dwarf_formudata(dwarf_attr(&path[k], DW_AT_call_file, &at), &cf) == 0 &&
		    (files || dwarf_getsrcfiles(cu, &files, NULL) == 0))
			file = dwarf_filesrc(files, cf, NULL, NULL);
	}
	return rc;
}

int sym_dbg_lookup(struct sym_dbg *d, uint64_t start, uint64_t limit, uint64_t offset,
                   uint64_t addr, struct sym_result *r)
{
	r->f = NULL;
	r->n = 0;
	GElf_Addr mbias = 0;
	Elf *elf = dwfl_module_getelf(d->mod, &mbias);
	if (!elf)
		return 0;
	Dwarf_Addr a = file_address(elf, start, limit, offset, addr) + mbias;
	int rc = dwarf_frames(d, d->mod, a, r);
	if (rc == 0 && r->n == 0) {
		GElf_Off off = 0;
		GElf_Sym sym;
		const char *name = dwfl_module_addrinfo(d->mod, a, &off, &sym, NULL, NULL, NULL);
		if (name)
			rc = add_frame(r, name, name, NULL, 0, 0);
	}
	if (rc)
		sym_result_fini(r);
	return rc;
}
