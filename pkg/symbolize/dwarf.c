/* dwarf.c: one debug file read with elfutils' libdwfl: an address of a process
 * turned into the file's own address (through its PT_LOAD segments), then into
 * frames: the DWARF scopes that hold it (inlined subroutines, innermost first,
 * each called from the line its caller's frame shows; the compile unit found by
 * .debug_aranges, else by each unit's ranges, as Go binaries need), or, without
 * DWARF, the ELF symbol that holds it (.symtab, else .dynsym). */
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

struct sym_dbg {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	size_t size;
};

/* Debug information is what was opened: never look elsewhere (no network, no
 * other directories) from inside a lookup. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file,
                        GElf_Word debuglink_crc, char **debuginfo_file_name)
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

static int add_frame(struct sym_result *r, const char *sys, const char *plain,
                     const char *file, int64_t line, int64_t start_line)
{
	char *dm = sys ? pd_symbolize_demangle(sys) : NULL;
	const char *name = dm ? dm : sys ? sys : plain;
	int rc = sym_result_add(r, name ? name : "", sys ? sys : name, file, line, start_line);
	free(dm);
	return rc;
}

static int is_function(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* The innermost function scope of a (dwarf_getscopes), then, for each inlined
 * one, the concrete scope it was inlined into (dwarf_getscopes_die), up to the
 * subprogram: each a frame, the outer ones at their callee's call site. */
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

static int dwarf_frames(Dwfl_Module *mod, Dwarf_Addr a, struct sym_result *r)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die cu_mem;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &bias);
	const char *file = NULL;
	int line = 0;
	if (cu) {
		Dwfl_Line *ln = dwfl_module_getsrc(mod, a);
		if (ln)
			file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);
	} else {
		Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
		if (!dw || !cu_by_ranges(dw, a - bias, &cu_mem))
			return 0;
		cu = &cu_mem;
		Dwarf_Line *dl = dwarf_getsrc_die(cu, a - bias);
		if (dl) {
			file = dwarf_linesrc(dl, NULL, NULL);
			dwarf_lineno(dl, &line);
		}
	}
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, a - bias, &scopes);
	Dwarf_Die cur;
	int found = 0;
	for (int i = 0; i < n && !found; i++)
		if (is_function(&scopes[i])) {
			cur = scopes[i];
			found = 1;
		}
	free(scopes);
	Dwarf_Files *files = NULL;
	int rc = 0;
	for (int depth = 0; found && rc == 0 && depth < 64; depth++) {
		rc = add_frame(r, die_system_name(&cur), dwarf_diename(&cur), file, line,
		               die_decl_line(&cur));
		if (rc || dwarf_tag(&cur) == DW_TAG_subprogram)
			break;
		/* the caller's frame is at the call site of this inlined copy */
		Dwarf_Attribute at;
		Dwarf_Word cf = 0, cl = 0;
		file = NULL;
		line = 0;
		if (dwarf_formudata(dwarf_attr(&cur, DW_AT_call_line, &at), &cl) == 0)
			line = (int)cl;
		if (dwarf_formudata(dwarf_attr(&cur, DW_AT_call_file, &at), &cf) == 0 &&
		    (files || dwarf_getsrcfiles(cu, &files, NULL) == 0))
			file = dwarf_filesrc(files, cf, NULL, NULL);
		Dwarf_Die *outer = NULL;
		int m = dwarf_getscopes_die(&cur, &outer);
		found = 0;
		for (int i = 1; i < m && !found; i++)
			if (is_function(&outer[i])) {
				cur = outer[i];
				found = 1;
			}
		free(outer);
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
	int rc = dwarf_frames(d->mod, a, r);
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
