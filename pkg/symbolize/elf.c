/* elf.c: the GNU build id of an ELF file, read from its note (NT_GNU_BUILD_ID)
 * with libelf, for mappings whose profile carries no build id (gperftools) and
 * to check that a mapped file is the one a profile names; and whether a mapped
 * file has DWARF or function symbols, so that a stripped one is not taken for a
 * debug file. */
#include "symbolize_int.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

static int note_build_id(Elf_Data *data, char *hex, size_t cap)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;
	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
		    memcmp((char *)data->d_buf + name_off, "GNU", 4) != 0)
			continue;
		if (nh.n_descsz == 0 || nh.n_descsz * 2 + 1 > cap)
			return PD_ENOTFOUND;
		const unsigned char *d = (const unsigned char *)data->d_buf + desc_off;
		for (size_t i = 0; i < nh.n_descsz; i++) {
			hex[2 * i] = "0123456789abcdef"[d[i] >> 4];
			hex[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
		}
		hex[2 * nh.n_descsz] = 0;
		return 0;
	}
	return PD_ENOTFOUND;
}

int sym_elf_build_id(const char *path, char *hex, size_t cap)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PD_ENOTFOUND;
	int rc = PD_ENOTFOUND;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		Elf_Scn *scn = NULL;
		while (rc != 0 && (scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
				continue;
			Elf_Data *data = elf_getdata(scn, NULL);
			if (data)
				rc = note_build_id(data, hex, cap);
		}
		size_t n = 0;
		if (rc != 0 && elf_getphdrnum(elf, &n) == 0) {
			for (size_t i = 0; rc != 0 && i < n; i++) {
				GElf_Phdr ph;
				if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
					continue;
				Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
				                                      ph.p_filesz, ELF_T_NHDR);
				if (data)
					rc = note_build_id(data, hex, cap);
			}
		}
	}
	elf_end(elf);
	close(fd);
	return rc;
}

int sym_elf_contents(const char *path, int *has_funcs)
{
	elf_version(EV_CURRENT);
	*has_funcs = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int dwarf = 0;
	size_t shstrndx;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
				continue;
			const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (name &&
			    (strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0))
				dwarf = 1;
			if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || *has_funcs ||
			    !sh.sh_entsize)
				continue;
			Elf_Data *data = elf_getdata(scn, NULL);
			size_t n = data ? sh.sh_size / sh.sh_entsize : 0;
			for (size_t i = 0; i < n && !*has_funcs; i++) {
				GElf_Sym sym;
				if (gelf_getsym(data, (int)i, &sym) &&
				    GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
				    sym.st_shndx != SHN_UNDEF)
					*has_funcs = 1;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return dwarf;
}
